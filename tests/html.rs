//! The HTML report without a browser: snapshots of the page for two samples (its
//! inline CSS and JS left out, so a style change does not churn them), planted
//! secrets that must never reach the page source, markup injection through the
//! data, `--html FILE` beside another format, and the size caps on a large input.
//! `tests/html_browser.rs` runs the page's script in Chromium.

use serde_json::json;
use std::path::Path;
use std::process::{Command, Output};

/// A fixed time for every page here: 2026-12-01T00:00:00Z.
const EPOCH: &str = "1796083200";

fn mcpsift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .args(args)
        .output()
        .expect("run mcpsift")
}

fn page(args: &[&str]) -> String {
    let out = mcpsift(args);
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "mcpsift {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The page with the bodies of its inline stylesheet and script replaced by a
/// placeholder; the data block stays.
fn without_assets(html: &str) -> String {
    let mut s = html.to_owned();
    for (open, close, what) in [
        ("<style>", "</style>", "/* report.css */"),
        ("<script>", "</script>", "/* report.js */"),
    ] {
        let a = s.find(open).expect(open) + open.len();
        let b = a + s[a..].find(close).expect(close);
        s.replace_range(a..b, what);
    }
    // One element per line and the data pretty-printed, so a snapshot diff points
    // at what changed.
    let open = "<script type=\"application/json\" id=\"mcpsift-data\">";
    let a = s.find(open).expect("data") + open.len();
    let b = a + s[a..].find("</script>").expect("end of data");
    let data: serde_json::Value = serde_json::from_str(&s[a..b]).expect("the data is JSON");
    let (head, tail) = (s[..a].replace("><", ">\n<"), s[b..].replace("><", ">\n<"));
    format!(
        "{head}\n{}\n{tail}",
        serde_json::to_string_pretty(&data).unwrap()
    )
}

#[test]
fn html_snapshots() {
    for name in ["streamable-http", "stdio-transcript"] {
        let path = format!("samples/{name}.jsonl");
        let html = page(&["analyze", &path, "--format", "html"]);
        insta::assert_snapshot!(format!("html_{name}"), without_assets(&html));
    }
}

#[test]
fn the_page_is_self_contained_and_dated_by_source_date_epoch() {
    let html = page(&[
        "analyze",
        "samples/streamable-http.jsonl",
        "--format",
        "html",
    ]);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        html.contains("2026-12-01T00:00:00.000Z"),
        "SOURCE_DATE_EPOCH"
    );
    assert!(html.contains(concat!("<td>", env!("CARGO_PKG_VERSION"), "</td>")));
    assert!(html.contains("mcpsift analyze samples/streamable-http.jsonl --format html"));
    // Nothing is fetched: no external script, stylesheet, image or frame.
    for needle in [
        "<link",
        " src=",
        "http-equiv=\"refresh\"",
        "@import",
        "url(http",
    ] {
        assert!(
            !html.contains(needle),
            "the page must not load anything: {needle}"
        );
    }
    assert!(
        html.contains("default-src 'none'"),
        "a CSP forbids the network"
    );
    // Exactly one data block and one script.
    assert_eq!(html.matches("</script>").count(), 2);
}

/// A JSONL HTTP exchange record.
fn record(ts: &str, body: serde_json::Value, response: serde_json::Value) -> String {
    json!({
        "ts": ts,
        "request": {
            "method": "POST",
            "url": "https://mcp.example/mcp",
            "headers": [
                ["Content-Type", "application/json"],
                ["Authorization", "Bearer sk-live-html0123456789abcdefXYZ"],
                ["Mcp-Session-Id", "html-session-5e55-10n-cafe-f00d"],
            ],
            "body": body.to_string(),
        },
        "response": response,
    })
    .to_string()
}

fn planted(dir: &Path) -> std::path::PathBuf {
    let call = |id: i64, args: serde_json::Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "deploy", "arguments": args}});
    let lines = [
        // A token in a tool argument, echoed in an error; markup in the text.
        record(
            "2026-12-01T10:00:00.000Z",
            call(
                1,
                json!({"token": "tok-in-args-24680-html", "note": "</script><script>alert(1)</script>"}),
            ),
            json!({"status": 500, "headers": [["Content-Type", "application/json"]], "body": json!({
                "jsonrpc": "2.0", "id": 1,
                "error": {"code": -32603, "message": "bad token=tok-in-args-24680-html for Authorization: Bearer sk-live-html0123456789abcdefXYZ in session html-session-5e55-10n-cafe-f00d </script><b>x</b>"}
            }).to_string()}),
        ),
        // A cut stream whose event carries the bearer token again.
        record(
            "2026-12-01T10:00:01.000Z",
            call(2, json!({"password": "pw-html-13579"})),
            json!({"status": 200, "headers": [["Content-Type", "text/event-stream"]],
                   "body": "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"password\":\"pw-html-13579\""}),
        ),
    ];
    let path = dir.join("planted.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

const SECRETS: &[&str] = &[
    "sk-live-html0123456789abcdefXYZ",
    "tok-in-args-24680-html",
    "pw-html-13579",
    "html-session-5e55-10n-cafe-f00d",
];

#[test]
fn planted_secrets_never_reach_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let input = planted(dir.path());
    let input = input.to_str().unwrap();
    let side = dir.path().join("side.html");
    let html = page(&["analyze", input, "--format", "html"]);
    let out = mcpsift(&[
        "analyze",
        input,
        "--format",
        "json",
        "--html",
        side.to_str().unwrap(),
    ]);
    assert!(out.status.code().is_some_and(|c| c < 2));
    let side = std::fs::read_to_string(&side).unwrap();
    for text in [&html, &side] {
        assert!(text.contains("<!DOCTYPE html>") && text.contains("deploy"));
        for s in SECRETS {
            assert!(!text.contains(s), "{s} leaked into the page");
        }
        // Markup from the input is text, never elements.
        assert!(!text.contains("<script>alert"));
        assert!(!text.contains("<b>x</b>"));
        assert_eq!(text.matches("</script>").count(), 2);
    }
    // The JSON beside it is the same as without --html.
    let json = String::from_utf8(out.stdout).unwrap();
    assert!(json.contains("\"schema\": 1"));
    // Not vacuous: without redaction the plants are on the page.
    let raw = page(&["analyze", input, "--format", "html", "--no-redact"]);
    for s in SECRETS {
        assert!(
            raw.contains(s),
            "{s} was not planted where the page shows it"
        );
    }
}

#[test]
fn a_large_input_stays_small_and_says_what_it_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.jsonl");
    let mut lines = Vec::new();
    for n in 0..10_000u32 {
        let ms = n as u64 * 50;
        let ts = format!(
            "2026-12-01T10:{:02}:{:02}.{:03}Z",
            ms / 60_000,
            (ms / 1000) % 60,
            ms % 1000
        );
        let id = n as i64 + 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "lookup", "arguments": {"n": n}}});
        // Every 20th call fails with a 500; the rest succeed.
        let response = if n % 20 == 0 {
            json!({"status": 500, "headers": [["Content-Type", "text/plain"]], "body": "upstream failed"})
        } else {
            json!({"status": 200, "headers": [["Content-Type", "application/json"]],
                   "body": json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "ok"}]}}).to_string()})
        };
        lines.push(
            json!({"ts": ts, "request": {"method": "POST", "url": "http://h/mcp",
            "headers": [["Content-Type", "application/json"]], "body": body.to_string()},
            "response": response})
            .to_string(),
        );
    }
    std::fs::write(&path, lines.join("\n")).unwrap();
    let html = page(&["analyze", path.to_str().unwrap(), "--format", "html"]);
    // About 300 bytes a call, and details only for the first 300 calls.
    assert!(html.len() < 6_000_000, "{} bytes", html.len());
    assert_eq!(html.matches("<details class=\"call ").count(), 300);
    assert!(html.contains("Details of 300 calls are written out"));
    assert!(html.contains("\"calls_total\":10000"));
    assert!(html.contains("500 did not succeed"));
}

#[test]
fn past_the_row_cap_the_page_says_how_many_calls_it_lists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.jsonl");
    let mut text = String::new();
    for id in 1..=26_000u32 {
        let s = id / 10;
        let ts = format!(
            "2026-12-01T{:02}:{:02}:{:02}.000Z",
            10 + s / 3600,
            (s / 60) % 60,
            s % 60
        );
        text.push_str(&format!(
            r#"{{"ts":"{ts}","dir":"c2s","msg":{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get","arguments":{{"n":{id}}}}}}}}}"#
        ));
        text.push('\n');
        // Every 1000th call is never answered.
        if id % 1000 != 0 {
            text.push_str(&format!(
                r#"{{"ts":"{ts}","dir":"s2c","msg":{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}}}"#
            ));
            text.push('\n');
        }
    }
    std::fs::write(&path, text).unwrap();
    let html = page(&["analyze", path.to_str().unwrap(), "--format", "html"]);
    assert!(
        html.contains("This page lists 25000 of 26000"),
        "the cap is said"
    );
    assert!(html.contains("\"calls_total\":26000"));
    assert_eq!(
        html.matches("\"k\":\"c-").count(),
        25_000,
        "rows in the data"
    );
    // The calls that need attention are kept whatever their place.
    assert!(
        html.contains("id=\"c-0-25999\""),
        "the last unanswered call has its detail"
    );
    assert!(html.len() < 10_000_000, "{} bytes", html.len());
}

#[test]
fn several_inputs_start_folded_one_input_starts_open() {
    let two = page(&[
        "analyze",
        "samples/stdio-tee.jsonl",
        "samples/stdio-transcript.jsonl",
        "--format",
        "html",
    ]);
    assert_eq!(two.matches("<details class=\"input\"").count(), 2);
    assert!(!two.contains("<details class=\"input\" id=\"input-0\" open"));
    let one = page(&["analyze", "samples/stdio-tee.jsonl", "--format", "html"]);
    assert!(one.contains("<details class=\"input\" id=\"input-0\" open"));
}
