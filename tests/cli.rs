//! End-to-end tests of the `mcpsift` binary: the samples' verdicts, bad inputs,
//! exit codes, stdin, gzip and a closed stdout.

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcpsift"))
}

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn analyze(args: &[&str]) -> Output {
    bin()
        .arg("analyze")
        .args(args)
        .output()
        .expect("run mcpsift")
}

fn jsonl(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// (file, id as JSON text, outcome) for every call the samples contain, as
/// samples/README.md describes them (the lab's expected.json for the real captures,
/// scripts/make_samples.py for the synthetic ones).
const SAMPLE_VERDICTS: &[(&str, &str, &str)] = &[
    ("claude-code-session.jsonl", "\"toolu_01\"", "TOOL_SUCCESS"),
    ("claude-code-session.jsonl", "\"toolu_02\"", "TOOL_ERROR"),
    ("claude-code-session.jsonl", "\"toolu_03\"", "JSONRPC_ERROR"),
    ("claude-code-session.jsonl", "\"toolu_04\"", "NO_RESPONSE"),
    ("claude-code-session.jsonl", "\"toolu_05\"", "TOOL_SUCCESS"),
    ("claude-code-session.jsonl", "\"toolu_07\"", "NO_RESPONSE"),
    ("jsonrpc-error.har", "2", "JSONRPC_ERROR"),
    ("jsonrpc-error.har", "3", "TOOL_SUCCESS"),
    ("mrtr-round.exchanges.jsonl", "3", "TOOL_SUCCESS"),
    ("mrtr-round.exchanges.jsonl", "4", "INPUT_REQUIRED"),
    ("mrtr-round.exchanges.jsonl", "5", "TOOL_SUCCESS"),
    ("mrtr-round.exchanges.jsonl", "6", "TOOL_SUCCESS"),
    ("sse-cut.pcap", "2", "STREAM_INCOMPLETE"),
    ("sse-cut.pcap", "3", "TOOL_SUCCESS"),
    ("stateless-2026.jsonl", "1", "INPUT_REQUIRED"),
    ("stateless-2026.jsonl", "2", "TOOL_SUCCESS"),
    ("stateless-2026.jsonl", "3", "JSONRPC_ERROR"),
    ("stateless-2026.jsonl", "4", "INVALID_TOOL_RESULT"),
    ("stdio-repeat.transcript.jsonl", "2", "TOOL_SUCCESS"),
    ("stdio-repeat.transcript.jsonl", "3", "TOOL_SUCCESS"),
    ("stdio-repeat.transcript.jsonl", "4", "TOOL_ERROR"),
    ("stdio-repeat.transcript.jsonl", "5", "TOOL_SUCCESS"),
    ("stdio-repeat.transcript.jsonl", "6", "TOOL_SUCCESS"),
    ("stdio-tee.jsonl", "\"a\"", "TOOL_SUCCESS"),
    ("stdio-tee.jsonl", "\"b\"", "INVALID_TOOL_RESULT"),
    ("stdio-tee.jsonl", "\"c\"", "INVALID_ENVELOPE"),
    ("stdio-transcript.jsonl", "1", "TOOL_SUCCESS"),
    ("stdio-transcript.jsonl", "2", "TOOL_ERROR"),
    ("stdio-transcript.jsonl", "3", "NO_RESPONSE"),
    ("stdio-transcript.jsonl", "4", "NO_RESPONSE"),
    ("streamable-http.jsonl", "2", "TOOL_SUCCESS"),
    ("streamable-http.jsonl", "3", "TOOL_SUCCESS"),
    ("streamable-http.jsonl", "4", "TOOL_ERROR"),
    ("streamable-http.jsonl", "5", "JSONRPC_ERROR"),
    ("streamable-http.jsonl", "6", "HTTP_ERROR"),
    ("streamable-http.jsonl", "7", "TOOL_SUCCESS"),
    ("streamable-http.jsonl", "8", "HTTP_ERROR"),
    ("streamable-http.jsonl", "9", "MALFORMED_JSON"),
    ("streamable-http.jsonl", "10", "INVALID_ENVELOPE"),
    ("streamable-http.jsonl", "11", "INVALID_TOOL_RESULT"),
    ("streamable-http.jsonl", "12", "STREAM_INCOMPLETE"),
    ("streamable-http.jsonl", "13", "TOOL_SUCCESS"),
    ("streamable-http.jsonl", "14", "NO_RESPONSE"),
    ("streamable-http.jsonl", "15", "TOOL_SUCCESS"),
    ("unsafe-replay.pcapng", "2", "NO_RESPONSE"),
    ("unsafe-replay.pcapng", "3", "TOOL_SUCCESS"),
];

#[test]
fn samples_give_one_call_record_per_tools_call_with_the_intended_outcome() {
    let out = analyze(&[repo("samples").to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let records = jsonl(&out);
    let calls: Vec<(String, String, String)> = records
        .iter()
        .filter(|r| r["type"] == "call")
        .map(|r| {
            let input = r["input"].as_str().unwrap();
            let file = Path::new(input)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (
                file,
                r["id"].to_string(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = SAMPLE_VERDICTS
        .iter()
        .map(|(f, i, o)| (f.to_string(), i.to_string(), o.to_string()))
        .collect();
    assert_eq!(calls, expected);
    // Every outcome is covered by the samples.
    let summary = records.last().unwrap();
    assert_eq!(summary["type"], "summary");
    for (outcome, n) in summary["outcomes"].as_object().unwrap() {
        assert!(n.as_u64().unwrap() > 0, "samples lack {outcome}");
    }
    // Small enough to clone and read in the first hour.
    let bytes: u64 = std::fs::read_dir(repo("samples"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(bytes < 1 << 20, "samples/ holds {bytes} bytes");
    // samples/README.md is neither read nor listed as skipped.
    assert_eq!(summary["skipped"].as_array().unwrap().len(), 0);
    assert_eq!(summary["inputs"], 10);
    // Every input kind is there, so the first command shows them all.
    let formats: std::collections::BTreeSet<&str> = records
        .iter()
        .filter(|r| r["type"] == "input")
        .map(|r| r["format"].as_str().unwrap())
        .collect();
    for f in ["pcap", "pcapng", "har", "jsonl"] {
        assert!(formats.contains(f), "samples lack a {f} input: {formats:?}");
    }
    let transports: std::collections::BTreeSet<&str> = records
        .iter()
        .filter(|r| r["type"] == "call")
        .map(|r| r["transport"].as_str().unwrap())
        .collect();
    assert_eq!(
        transports.into_iter().collect::<Vec<_>>(),
        ["client_log", "http", "stdio"]
    );
}

#[test]
fn samples_findings_name_their_calls() {
    let out = analyze(&[
        repo("samples/streamable-http.jsonl").to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    let records = jsonl(&out);
    let findings: Vec<(String, String, Vec<Value>)> = records
        .iter()
        .filter(|r| r["type"] == "finding")
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_owned(),
                r["severity"].as_str().unwrap().to_owned(),
                r["ids"].as_array().unwrap().clone(),
            )
        })
        .collect();
    let has = |kind: &str, sev: &str, ids: &[i64]| {
        findings.iter().any(|(k, s, i)| {
            k == kind
                && s == sev
                && i.iter().map(|v| v.as_i64().unwrap()).collect::<Vec<_>>() == ids
        })
    };
    assert!(has("UNSAFE_REPLAY", "HIGH", &[12, 13]), "{findings:?}");
    assert!(has("ID_MISMATCH", "MEDIUM", &[10, 99]), "{findings:?}");
    assert!(has("NON_TERMINAL", "MEDIUM", &[12]), "{findings:?}");
    assert!(has("NON_TERMINAL", "MEDIUM", &[14]), "{findings:?}");
    assert_eq!(findings.len(), 4, "{findings:?}");
    // read_note again 15 s later, after a result and other calls: a re-invocation.
    let reread = records
        .iter()
        .find(|r| r["type"] == "call" && r["id"] == 15)
        .unwrap();
    assert_eq!(reread["retry_origin"], "reinvocation");
    assert_eq!(reread["post_count"], 2);
    let summary = records.last().unwrap();
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["reinvocations"], 1, "{summary}");
    // The 503 retry is explained by the refusal and counted as the second POST.
    let retry = records
        .iter()
        .find(|r| r["type"] == "call" && r["id"] == 7)
        .unwrap();
    assert_eq!(retry["post_count"], 2);
    assert_eq!(retry["retry_origin"], "after_refusal");
    assert_eq!(retry["protocol_version"], "2025-06-18");
    assert_eq!(retry["client"], "sample-client@1.0.0");
    assert!(retry["scope"].as_str().unwrap().starts_with("session:"));
    assert!(
        !retry["scope"].as_str().unwrap().contains("4f1c2b7e"),
        "session ids are hashed"
    );
}

#[test]
fn bad_inputs_are_named_and_the_rest_is_analysed() {
    let dir = tempfile::tempdir().unwrap();
    let good = repo("samples/stdio-tee.jsonl");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"").unwrap();
    let binary = dir.path().join("binary.bin");
    std::fs::write(&binary, b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00").unwrap();
    let mixed = dir.path().join("mixed.jsonl");
    let mut f = std::fs::File::create(&mixed).unwrap();
    writeln!(
        f,
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t"}}}}"#
    )
    .unwrap();
    f.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}\n")
        .unwrap();
    writeln!(f, "{}{}", "[".repeat(10_000), "]".repeat(10_000)).unwrap();
    // A 50 MB single line: over the record cap, skipped without being buffered.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{}\"}}\n",
        "a".repeat(50 << 20)
    );
    f.write_all(big.as_bytes()).unwrap();
    writeln!(f, r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[]}}}}"#).unwrap();
    drop(f);
    let missing = dir.path().join("nope.jsonl");

    let out = analyze(&[
        good.to_str().unwrap(),
        empty.to_str().unwrap(),
        binary.to_str().unwrap(),
        mixed.to_str().unwrap(),
        missing.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    let m = mixed.display();
    assert!(
        err.contains(&format!(
            "{m}: line 2: not valid UTF-8 (bad byte 0xff at column 24)"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{m}: line 3: not JSON: JSON nested more than 128 levels deep"
        )),
        "{err}"
    );
    let big_len = big.len() - 1;
    assert!(
        err.contains(&format!(
            "{m}: line 4: line is {big_len} bytes, over the 16777216-byte record limit"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: empty input", empty.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}: binary data that is not a pcap",
            binary.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: No such file", missing.display())),
        "{err}"
    );

    let records = jsonl(&out);
    let inputs: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["type"] == "input")
        .map(|r| (r["path"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    // Reported in the order the inputs were named, whatever failed.
    let names: Vec<&str> = inputs.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        names,
        [&good, &empty, &binary, &mixed, &missing].map(|p| p.to_str().unwrap())
    );
    let statuses: Vec<&str> = inputs.iter().map(|(_, s)| *s).collect();
    assert_eq!(statuses, ["ok", "error", "error", "ok", "error"]);
    // The good file and the good lines of the mixed file were still analysed.
    let outcomes: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["type"] == "call")
        .map(|r| (r["input"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        outcomes
            .iter()
            .filter(|(i, _)| i.ends_with("stdio-tee.jsonl"))
            .count(),
        3
    );
    assert!(
        outcomes.contains(&(mixed.to_str().unwrap(), "TOOL_SUCCESS")),
        "{outcomes:?}"
    );
}

#[test]
fn stdin_and_gzip_are_read_by_content() {
    let sample = std::fs::read(repo("samples/stdio-tee.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&sample).unwrap();
    let gz = gz.finish().unwrap();
    for data in [sample.clone(), gz] {
        let mut child = bin()
            .args(["analyze", "-", "--format", "jsonl"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&data).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let records = jsonl(&out);
        assert_eq!(records[0]["path"], "-");
        assert_eq!(records[0]["format"], "jsonl");
        assert_eq!(records.iter().filter(|r| r["type"] == "call").count(), 3);
    }
}

/// `cat capture.tar.gz | mcpsift analyze -` and a pcapng written to stdin in small
/// writes (as `tcpdump -w -` or `ssh host cat` deliver it) give the file's report.
#[test]
fn stdin_in_small_writes_gives_the_report_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let pcapng = repo("lab/captures/gzip_chunked_ts/capture.pcapng");
    let archive = dir.path().join("logs.tar.gz");
    std::fs::write(&archive, samples_tar_gz()).unwrap();
    for file in [pcapng, archive] {
        let data = std::fs::read(&file).unwrap();
        let from_file = analyze(&[file.to_str().unwrap(), "--format", "jsonl"]);
        let mut child = bin()
            .args(["analyze", "-", "--format", "jsonl"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            for chunk in data.chunks(5) {
                stdin.write_all(chunk).unwrap();
                stdin.flush().unwrap();
            }
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        assert_eq!(
            out.status.code(),
            from_file.status.code(),
            "{}",
            stderr(&out)
        );
        let name = file.to_str().unwrap();
        let from_file = String::from_utf8_lossy(&from_file.stdout).replace(name, "-");
        assert_eq!(String::from_utf8_lossy(&out.stdout), from_file);
        assert!(from_file.contains("\"type\":\"call\""), "{from_file}");
    }
}

/// A run with `args` whose stdout is closed before it writes.
fn into_closed_stdout(args: &[&str]) -> std::process::Output {
    let mut child = bin()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    let samples = repo("samples");
    let out = into_closed_stdout(&[
        "analyze",
        samples.to_str().unwrap(),
        "--format",
        "json",
        "--all",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn a_closed_stdout_ends_a_streaming_run_quietly() {
    // `--format jsonl` writes each input as it is done: a closed stdout is met in
    // the middle of the run, not at its end, and must end it the same way.
    let dir = tempfile::tempdir().unwrap();
    let sample = std::fs::read(repo("samples/streamable-http.jsonl")).unwrap();
    for i in 0..60 {
        std::fs::write(dir.path().join(format!("s{i:02}.jsonl")), &sample).unwrap();
    }
    let out = into_closed_stdout(&["analyze", dir.path().to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_json_document_is_streamed_as_it_would_be_written_whole() {
    // `--format json` streams each input's calls as `--format jsonl` does, also with
    // `--report` (keeping what the report shows besides); with `--all --report` the
    // run keeps every call and writes the document at the end. All must be the same
    // document, and it must hold the JSONL records in their order.
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("r.md");
    let md = md.to_str().unwrap();
    let samples = repo("samples");
    let samples = samples.to_str().unwrap();
    let streamed = analyze(&[samples, "--format", "json"]);
    let teed = analyze(&[samples, "--format", "json", "--report", md]);
    let kept = analyze(&[samples, "--format", "json", "--all", "--report", md]);
    let lines = analyze(&[samples, "--format", "jsonl"]);
    assert_eq!(streamed.status.code(), Some(0), "{}", stderr(&streamed));
    for other in [&teed, &kept] {
        assert_eq!(stderr(&streamed), stderr(other));
        assert!(
            streamed.stdout == other.stdout,
            "{}",
            String::from_utf8_lossy(&other.stdout)
        );
    }
    let doc: Value = serde_json::from_slice(&streamed.stdout).expect("one JSON document");
    assert_eq!(doc["schema"], 1);
    assert_eq!(doc["records"].as_array().unwrap(), &jsonl(&lines));
}

#[test]
fn all_leaves_the_page_and_the_records_as_they_are() {
    // `--all` lists every call in the table and markdown only: the page and the
    // records are the same with it (so a run writing only those keeps no more).
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("p.html");
    let samples = repo("samples");
    let samples = samples.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = bin()
            .arg("analyze")
            .arg(samples)
            .args(args)
            .env("SOURCE_DATE_EPOCH", "1800000000")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        out
    };
    // The page names the command that made it: the rest must be the same.
    let without_command = |html: &[u8]| {
        let html = String::from_utf8(html.to_vec()).unwrap();
        let at = html.find("id=\"command-line\">").unwrap();
        let end = at + html[at..].find("</code>").unwrap();
        format!("{}{}", &html[..at], &html[end..])
    };
    let plain = run(&["--format", "html"]);
    let all = run(&["--format", "html", "--all"]);
    assert_eq!(without_command(&plain.stdout), without_command(&all.stdout));
    assert!(without_command(&plain.stdout).contains("delete_file"));
    let records = run(&["--format", "jsonl"]);
    let teed = run(&[
        "--format",
        "jsonl",
        "--all",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(records.stdout == teed.stdout);
    assert_eq!(
        without_command(&plain.stdout),
        without_command(&std::fs::read(&page).unwrap())
    );
}

#[test]
fn a_session_id_quoted_by_a_problem_is_redacted_when_the_calls_stream() {
    // A streamed input's calls are not at hand when its problems are written, and a
    // filter may leave out the call that carried an id: each input remembers the
    // session ids of its exchanges, so a line that quotes one (a broken header
    // entry) is redacted in every run.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("quoted.jsonl");
    let sid = "9f3c2b7e-5d7a-4a8e-9a31-1d2c3b4a5f60";
    let exchange = |id: u32, headers: Value, status: u16, body: &str| {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {}}});
        json!({"ts": format!("2026-12-02T10:00:0{id}.000Z"),
            "request": {"method": "POST", "url": "http://127.0.0.1:3000/mcp",
                "headers": headers, "body": call.to_string()},
            "response": {"status": status, "headers": [["Content-Type", "application/json"]],
                "body": body}})
        .to_string()
    };
    let lines = [
        exchange(1, json!([["Mcp-Session-Id", sid]]), 500, "upstream failed"),
        exchange(2, json!([["Accept", "X-Trace", sid]]), 200, "{}"),
    ];
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let log = log.to_str().unwrap();
    let md = dir.path().join("r.md");
    let streamed = analyze(&[log, "--format", "jsonl"]);
    let kept = analyze(&[
        log,
        "--format",
        "jsonl",
        "--all",
        "--report",
        md.to_str().unwrap(),
    ]);
    assert_eq!(streamed.status.code(), Some(2), "{}", stderr(&streamed));
    assert!(
        stderr(&streamed).contains("header entry"),
        "{}",
        stderr(&streamed)
    );
    for out in [&streamed, &kept] {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains(sid) && !stderr(out).contains(sid), "{text}");
        assert!(text.contains("X-Trace"), "{text}");
    }
    // Nor when a filter leaves out the call that carried the id.
    let whole = analyze(&[log, "--format", "markdown", "--all", "--tool", "other"]);
    let lean = analyze(&[log, "--tool", "other"]);
    for out in [&whole, &lean] {
        assert!(stderr(out).contains("X-Trace"), "{}", stderr(out));
        assert!(!stderr(out).contains(sid), "{}", stderr(out));
        assert!(!String::from_utf8_lossy(&out.stdout).contains(sid));
    }
    assert!(streamed.stdout == kept.stdout);
    assert_eq!(stderr(&streamed), stderr(&kept));
}

#[test]
fn table_and_markdown_render_the_samples() {
    let out = analyze(&[repo("samples").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("UNSAFE_REPLAY"), "{text}");
    assert!(text.contains("STREAM_INCOMPLETE"), "{text}");
    assert!(text.contains("10 inputs, 46 tools/call"), "{text}");
    let out = analyze(&[repo("samples").to_str().unwrap(), "--format", "markdown"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("# mcpsift report\n"), "{md}");
    assert!(md.contains("## Findings"), "{md}");
    assert!(
        md.contains("### STREAM\\_INCOMPLETE — delete\\_file id ` 12 `\n"),
        "{md}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let out = bin().args(["analyze"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin()
        .args(["analyze", "x", "--format", "yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn explain(args: &[&str]) -> Output {
    bin()
        .arg("explain")
        .args(args)
        .output()
        .expect("run mcpsift")
}

#[test]
fn explain_covers_every_name_in_any_spelling() {
    let out = explain(&[]);
    assert_eq!(out.status.code(), Some(0));
    let list = String::from_utf8_lossy(&out.stdout);
    let names = [
        "TOOL_SUCCESS",
        "TOOL_ERROR",
        "INPUT_REQUIRED",
        "JSONRPC_ERROR",
        "MALFORMED_JSON",
        "INVALID_ENVELOPE",
        "INVALID_TOOL_RESULT",
        "HTTP_ERROR",
        "STREAM_INCOMPLETE",
        "NO_RESPONSE",
        "ID_MISMATCH",
        "NON_TERMINAL",
        "UNEXPLAINED_REPEAT",
        "UNSAFE_REPLAY",
        "RETRY_TOO_SOON",
        "ID_REUSED",
        "MRTR_BROKEN",
    ];
    for name in names {
        assert!(list.contains(name), "{name} missing from the list:\n{list}");
        let spelled = name.to_ascii_lowercase().replace('_', "-");
        let out = explain(&[&spelled]);
        assert_eq!(out.status.code(), Some(0), "{spelled}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with(name), "{text}");
        let rule = text.split("Rule:\n  ").nth(1).unwrap_or_default();
        assert!(
            rule.starts_with("MCP 20")
                || rule.starts_with("JSON-RPC 2.0")
                || rule.starts_with("WHATWG"),
            "the rule cites a specification: {text}"
        );
        assert!(text.contains("Typical causes:") && text.contains("What to check next:"));
    }
}

#[test]
fn explain_of_an_unknown_name_lists_the_valid_ones() {
    let out = explain(&["TIMEOUT"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(err.contains("unknown name \"TIMEOUT\""), "{err}");
    assert!(
        err.contains("TOOL_SUCCESS") && err.contains("MRTR_BROKEN"),
        "{err}"
    );
}

#[test]
fn fail_on_gates_exit_1_and_exit_2_still_wins() {
    let http = repo("samples/streamable-http.jsonl");
    let http = http.to_str().unwrap();
    // Nothing matches: 0.
    let out = analyze(&[http, "--format", "jsonl", "--fail-on", "ID_REUSED"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // An outcome, a finding kind, a severity: 1, and stderr says what matched.
    for (cond, said) in [
        ("http-error", "2 calls HTTP_ERROR"),
        ("UNSAFE_REPLAY", "1 finding UNSAFE_REPLAY"),
        ("high", "1 finding high or higher"),
        ("medium", "4 findings medium or higher"),
    ] {
        let out = analyze(&[http, "--format", "jsonl", "--fail-on", cond]);
        assert_eq!(out.status.code(), Some(1), "{cond}");
        assert!(
            stderr(&out).contains(&format!("--fail-on matched: {said}")),
            "{cond}: {}",
            stderr(&out)
        );
        // The report itself is complete.
        assert_eq!(jsonl(&out).last().unwrap()["type"], "summary");
    }
    // An unreadable input wins over the gate.
    let out = analyze(&[http, "/nonexistent/x.jsonl", "--fail-on", "high"]);
    assert_eq!(out.status.code(), Some(2));
    // A bad condition is a usage error naming the valid ones.
    let out = analyze(&[http, "--fail-on", "loud"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("UNSAFE_REPLAY"), "{}", stderr(&out));
}

#[test]
fn a_baseline_accepts_known_findings_only() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("baseline.json");
    let samples = repo("samples");
    let samples = samples.to_str().unwrap();
    let out = analyze(&[
        samples,
        "--format",
        "jsonl",
        "--write-baseline",
        base.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&base).unwrap()).unwrap();
    assert_eq!(doc["mcpsift_baseline"], 1);
    let entries = doc["findings"].as_array().unwrap();
    // Re-invocations (read_note 15 s later; the Claude Code re-read) are no findings.
    assert_eq!(entries.len(), 14);
    let key = entries
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .find(|k| k.starts_with("UNSAFE_REPLAY") && k.contains("streamable-http"))
        .unwrap();
    assert!(
        key.ends_with("samples/streamable-http.jsonl ids=12,13 tool=delete_file"),
        "{key}"
    );
    assert!(!key.contains("line"), "keys carry no line numbers: {key}");
    // Written input by input as the records stream, it is the baseline of a run that
    // kept every call (`--all` with markdown keeps them).
    let whole = dir.path().join("whole.json");
    let out = analyze(&[
        samples,
        "--format",
        "markdown",
        "--all",
        "--write-baseline",
        whole.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::read(&whole).unwrap() == std::fs::read(&base).unwrap());

    // Everything known: no finding reported, the gate stays open.
    let out = analyze(&[
        samples,
        "--format",
        "jsonl",
        "--baseline",
        base.to_str().unwrap(),
        "--fail-on",
        "low",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = jsonl(&out);
    assert_eq!(records.iter().filter(|r| r["type"] == "finding").count(), 0);
    assert_eq!(records.last().unwrap()["baseline_accepted"], 14);

    // Drop one entry: that finding is new again and trips the gate.
    let mut doc = doc;
    doc["findings"]
        .as_array_mut()
        .unwrap()
        .retain(|e| !e["key"].as_str().unwrap().starts_with("UNSAFE_REPLAY"));
    std::fs::write(&base, doc.to_string()).unwrap();
    let out = analyze(&[
        samples,
        "--format",
        "jsonl",
        "--baseline",
        base.to_str().unwrap(),
        "--fail-on",
        "high",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let kinds: Vec<String> = jsonl(&out)
        .iter()
        .filter(|r| r["type"] == "finding")
        .map(|r| r["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["UNSAFE_REPLAY", "UNSAFE_REPLAY"]);

    // A baseline that is not one: exit 2, named.
    std::fs::write(&base, "[]").unwrap();
    let out = analyze(&[samples, "--baseline", base.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("is not an mcpsift baseline"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn filters_apply_to_every_format() {
    let samples = repo("samples");
    let samples = samples.to_str().unwrap();
    let calls_of = |args: &[&str]| -> (Vec<String>, Vec<String>) {
        let mut all = vec![samples, "--format", "jsonl"];
        all.extend(args);
        let records = jsonl(&analyze(&all));
        let calls = records
            .iter()
            .filter(|r| r["type"] == "call")
            .map(|r| format!("{}:{}", r["tool"].as_str().unwrap(), r["id"]))
            .collect();
        let findings = records
            .iter()
            .filter(|r| r["type"] == "finding")
            .map(|r| r["kind"].as_str().unwrap().to_owned())
            .collect();
        (calls, findings)
    };
    let (calls, findings) = calls_of(&["--tool", "delete_file"]);
    assert_eq!(
        calls,
        [
            "delete_file:\"toolu_07\"",
            "delete_file:3",
            "delete_file:5",
            "delete_file:6",
            "delete_file:4",
            "delete_file:12",
            "delete_file:13",
            "delete_file:2",
            "delete_file:3"
        ]
    );
    assert_eq!(
        findings,
        [
            "NON_TERMINAL",
            "UNEXPLAINED_REPEAT",
            "NON_TERMINAL",
            "UNSAFE_REPLAY",
            "NON_TERMINAL",
            "UNSAFE_REPLAY"
        ]
    );
    let (calls, findings) = calls_of(&["--outcome", "no-response"]);
    assert_eq!(
        calls,
        [
            "slow:\"toolu_04\"",
            "delete_file:\"toolu_07\"",
            "slow_export:3",
            "search:4",
            "read_note:14",
            "delete_file:2"
        ]
    );
    // slow_export was cancelled by the client: still NON_TERMINAL, at INFO. The
    // pcapng's replay names the NO_RESPONSE call too.
    assert_eq!(
        findings,
        [
            "NON_TERMINAL",
            "NON_TERMINAL",
            "NON_TERMINAL",
            "NON_TERMINAL",
            "NON_TERMINAL",
            "NON_TERMINAL",
            "UNSAFE_REPLAY"
        ]
    );
    let (calls, findings) = calls_of(&["--finding", "unsafe_replay"]);
    assert_eq!(
        calls,
        [
            "delete_file:12",
            "delete_file:13",
            "delete_file:2",
            "delete_file:3"
        ]
    );
    assert_eq!(findings, ["UNSAFE_REPLAY", "UNSAFE_REPLAY"]);
    let (calls, _) = calls_of(&["--scope", "stdio"]);
    assert_eq!(calls.len(), 12, "{calls:?}");
    // The human formats say they are filtered.
    let out = analyze(&[samples, "--tool", "delete_file"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("filtered: tool=delete_file"));
    let out = analyze(&[samples, "--tool", "delete_file", "--format", "markdown"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("Filtered: tool=delete\\_file."), "{md}");
    assert!(!md.contains("read\\_note"), "{md}");
    // An unknown outcome is a usage error.
    let out = analyze(&[samples, "--outcome", "TIMEOUT"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn files_get_the_report_and_stderr_keeps_the_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("ticket.md");
    let json = dir.path().join("out.json");
    let mixed = dir.path().join("mixed.jsonl");
    std::fs::write(
        &mixed,
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}\nnot json\n",
    )
    .unwrap();
    let out = analyze(&[
        mixed.to_str().unwrap(),
        "--format",
        "json",
        "--output",
        json.to_str().unwrap(),
        "--report",
        md.to_str().unwrap(),
        "--no-redact",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = stderr(&out);
    assert!(err.starts_with("mcpsift: warning: --no-redact"), "{err}");
    assert!(err.contains("line 2: not JSON"), "{err}");
    let json_text = std::fs::read_to_string(&json).unwrap();
    let doc: Value = serde_json::from_str(&json_text).expect("the file is pure JSON");
    assert_eq!(doc["schema"], 1);
    assert!(!json_text.contains("warning"));
    let md_text = std::fs::read_to_string(&md).unwrap();
    assert!(md_text.starts_with("# mcpsift report\n"), "{md_text}");
    assert!(!md_text.contains("mcpsift: "), "{md_text}");
}

#[test]
fn a_piped_table_has_no_colour_and_no_wrapping() {
    let out = bin()
        .args(["analyze", repo("samples").to_str().unwrap()])
        .env("COLUMNS", "40")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}'), "{text}");
    // COLUMNS applies to terminals only: a pipe gets whole lines.
    assert!(text.lines().any(|l| l.chars().count() > 100), "{text}");
    // --width forces a width anywhere.
    let out = analyze(&[repo("samples").to_str().unwrap(), "--width", "70"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for line in text.lines().filter(|l| l.starts_with(['┌', '│', '└'])) {
        assert!(line.chars().count() <= 70, "{line}");
    }
}

/// A tar.gz of the samples plus a file that is no input.
fn samples_tar_gz() -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for name in ["streamable-http.jsonl", "stdio-tee.jsonl"] {
        builder
            .append_path_with_name(repo(&format!("samples/{name}")), format!("logs/{name}"))
            .unwrap();
    }
    let notes = b"just notes, not a log\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(notes.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    builder
        .append_data(&mut header, "logs/NOTES.txt", &notes[..])
        .unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

#[test]
fn archives_are_read_member_by_member() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("logs.tar.gz");
    std::fs::write(&archive, samples_tar_gz()).unwrap();
    let out = analyze(&[archive.to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = jsonl(&out);
    let inputs: Vec<String> = records
        .iter()
        .filter(|r| r["type"] == "input")
        .map(|r| {
            r["path"]
                .as_str()
                .unwrap()
                .rsplit('!')
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        inputs,
        ["/logs/streamable-http.jsonl", "/logs/stdio-tee.jsonl"]
    );
    let calls = records.iter().filter(|r| r["type"] == "call").count();
    assert_eq!(calls, 14 + 3, "the same calls as the samples themselves");
    let summary = records.last().unwrap();
    let skipped = summary["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0]["path"]
        .as_str()
        .unwrap()
        .ends_with("logs.tar.gz!/logs/NOTES.txt"));
}

#[test]
fn damaged_and_oversized_archives_are_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    // Cut inside the second member: the first is still analysed.
    let whole = {
        let gz = samples_tar_gz();
        let mut d = flate2::read::GzDecoder::new(&gz[..]);
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut d, &mut v).unwrap();
        v
    };
    let cut = dir.path().join("cut.tar");
    let second_header = 512
        + whole[124..135]
            .iter()
            .fold(0usize, |n, &b| {
                if b.is_ascii_digit() {
                    n * 8 + (b - b'0') as usize
                } else {
                    n
                }
            })
            .div_ceil(512)
            * 512;
    std::fs::write(&cut, &whole[..second_header + 700]).unwrap();
    // On two threads the small members are read whole and analysed by a helper: the
    // cut one must meet its read error after the same bytes, and be named the same.
    let mut seen = Vec::new();
    for threads in ["1", "2"] {
        let out = analyze(&[
            cut.to_str().unwrap(),
            "--format",
            "jsonl",
            "--threads",
            threads,
        ]);
        assert_eq!(out.status.code(), Some(2));
        let records = jsonl(&out);
        let first = records.iter().find(|r| r["type"] == "input").unwrap();
        assert!(
            first["path"]
                .as_str()
                .unwrap()
                .ends_with("cut.tar!/logs/streamable-http.jsonl"),
            "{first}"
        );
        assert_eq!(first["status"], "ok");
        // The cut member and the damage are reported with the archive's name.
        let err = stderr(&out);
        assert!(err.contains("cut.tar"), "{err}");
        assert!(err.contains("the rest were not read"), "{err}");
        seen.push((out.stdout, err));
    }
    assert!(
        seen[0] == seen[1],
        "one and two threads differ on a cut archive"
    );

    // Past the decompression cap: a named error, not unbounded memory.
    let big = dir.path().join("big.tar.gz");
    std::fs::write(&big, samples_tar_gz()).unwrap();
    let out = analyze(&[
        big.to_str().unwrap(),
        "--format",
        "jsonl",
        "--max-decompressed-bytes",
        "2048",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("expands past the 2048-byte cap (raise --max-decompressed-bytes to read it)"),
        "{err}"
    );
    assert!(!err.contains("damaged"), "a cap is no damage: {err}");
}

#[test]
fn a_file_of_garbage_lines_lists_a_thousand_problems_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.jsonl");
    let mut text = String::from(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}\n",
    );
    for i in 0..1_500 {
        text.push_str(&format!("garbage {i}\n"));
    }
    std::fs::write(&path, text).unwrap();
    let out = analyze(&[path.to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    let records = jsonl(&out);
    let problems = records[0]["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1_001);
    assert_eq!(problems[0]["location"]["line"], 2);
    assert_eq!(problems[0]["kind"], "malformed");
    assert_eq!(
        problems[1_000]["message"],
        "500 more problems in this input were not listed one by one"
    );
    // Not listing the rest is a cap, and says so by kind.
    assert_eq!(problems[1_000]["kind"], "cap");
    // The one call is still analysed.
    assert_eq!(records.iter().filter(|r| r["type"] == "call").count(), 1);
}

#[test]
fn completions_are_generated_for_each_shell() {
    let out = bin().args(["completions", "bash"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("_mcpsift()"), "{text}");
    assert!(text.contains("--fail-on"), "flags of analyze are completed");
    let out = bin().args(["completions", "zsh"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("#compdef mcpsift"));
    let out = bin().args(["completions", "fish"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("complete -c mcpsift"));
    // An unknown shell is a usage error naming the valid ones.
    let out = bin().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bash"), "{}", stderr(&out));
}

#[test]
fn the_man_page_is_roff_with_every_subcommand() {
    let out = bin().arg("man").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(".TH mcpsift 1"), "{text}");
    for word in ["analyze", "explain", "completions", "Exit codes"] {
        assert!(text.contains(word), "{word} missing from the man page");
    }
    // Each subcommand has its own page with all its options.
    let out = bin().args(["man", "analyze"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(".TH mcpsift-analyze 1"), "{text}");
    for flag in ["fail\\-on", "max\\-chars", "color", "quiet"] {
        assert!(text.contains(flag), "{flag} missing:\n{text}");
    }
    let out = bin().args(["man", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn help_shows_examples_and_exit_codes() {
    for args in [&["--help"][..], &["analyze", "--help"][..]] {
        let out = bin().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Examples:\n  mcpsift analyze"), "{text}");
        assert!(text.contains("Exit codes:\n  0  "), "{text}");
        assert!(text.contains("  2  a usage error"), "{text}");
    }
}

#[test]
fn analyse_is_an_alias_of_analyze() {
    let file = repo("samples/stdio-tee.jsonl");
    let a = analyze(&[file.to_str().unwrap(), "--format", "jsonl"]);
    let b = bin()
        .args(["analyse", file.to_str().unwrap(), "--format", "jsonl"])
        .output()
        .unwrap();
    assert_eq!(b.status.code(), Some(0), "{}", stderr(&b));
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn color_follows_the_flag() {
    let file = repo("samples/stdio-tee.jsonl");
    let file = file.to_str().unwrap();
    // A pipe: no colour by default, colour when asked, even with NO_COLOR set.
    let auto = analyze(&[file]);
    assert!(!String::from_utf8_lossy(&auto.stdout).contains('\u{1b}'));
    let always = bin()
        .args(["analyze", file, "--color", "always"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&always.stdout);
    assert!(text.contains("\u{1b}["), "{text}");
    let never = analyze(&[file, "--color", "never"]);
    assert!(!String::from_utf8_lossy(&never.stdout).contains('\u{1b}'));
    let bad = analyze(&[file, "--color", "sometimes"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn filters_that_match_nothing_warn_and_quiet_silences_warnings() {
    let file = repo("samples/stdio-tee.jsonl");
    let file = file.to_str().unwrap();
    let out = analyze(&[file, "--tool", "ehco", "--scope", "sesion"]);
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains("mcpsift: warning: --tool ehco matches no call (tools seen: echo)"),
        "{err}"
    );
    assert!(
        err.contains("mcpsift: warning: --scope sesion matches no call or finding"),
        "{err}"
    );
    // A value that matches is not warned about.
    let out = analyze(&[file, "--tool", "echo", "--scope", "stdio"]);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    // --quiet drops warnings, not the report.
    let out = analyze(&[file, "--tool", "ehco", "-q"]);
    assert_eq!(stderr(&out), "");
    assert!(String::from_utf8_lossy(&out.stdout).contains("filtered: tool=ehco"));
}

#[test]
fn a_directory_without_inputs_warns() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "no traffic here\n").unwrap();
    let out = analyze(&[dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "mcpsift: warning: {}: no input found in this directory",
            dir.path().display()
        )),
        "{err}"
    );
    // A directory with inputs does not warn.
    let out = analyze(&[repo("samples").to_str().unwrap()]);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    let out = analyze(&[dir.path().to_str().unwrap(), "--quiet"]);
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_missing_baseline_names_the_os_error_once() {
    let out = analyze(&[
        repo("samples/stdio-tee.jsonl").to_str().unwrap(),
        "--baseline",
        "/nonexistent/baseline.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("cannot read baseline /nonexistent/baseline.json"),
        "{err}"
    );
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}

#[test]
fn a_baseline_that_cannot_be_written_is_named() {
    // A streaming run creates the baseline before it reads (and fails before any
    // record); any run that cannot write it names it, with the OS error, exit 2.
    let log = repo("samples/streamable-http.jsonl");
    let log = log.to_str().unwrap();
    for format in ["jsonl", "table"] {
        let out = analyze(&[
            log,
            "--format",
            format,
            "--write-baseline",
            "/nonexistent/b.json",
        ]);
        assert_eq!(out.status.code(), Some(2), "{format}");
        let err = stderr(&out);
        assert!(
            err.contains("baseline /nonexistent/b.json") && err.contains("No such file"),
            "{format}: {err}"
        );
        if format == "jsonl" {
            assert!(out.stdout.is_empty(), "no record before the error");
        }
        if Path::new("/dev/full").exists() {
            let out = analyze(&[log, "--format", format, "--write-baseline", "/dev/full"]);
            assert_eq!(out.status.code(), Some(2), "{format}");
            let err = stderr(&out);
            assert!(
                err.contains("cannot write baseline /dev/full") && err.contains("No space"),
                "{format}: {err}"
            );
        }
    }
}

#[test]
fn a_missing_input_is_reported_once_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.jsonl");
    let out = analyze(&[
        missing.to_str().unwrap(),
        repo("samples/stdio-tee.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(err.matches("nope.jsonl").count(), 1, "{err}");
    assert!(!text.contains("nope.jsonl"), "{text}");
    assert!(
        text.contains("2 inputs (1 with errors, see stderr)"),
        "{text}"
    );
}

#[test]
fn the_markdown_header_names_the_run_with_secrets_redacted() {
    let file = repo("samples/stdio-tee.jsonl");
    let run = |epoch: &str| {
        bin()
            .args([
                "analyze",
                file.to_str().unwrap(),
                "--format",
                "markdown",
                "--tool",
                "Authorization: Bearer sk-live-0123456789abcdef",
            ])
            .env("SOURCE_DATE_EPOCH", epoch)
            .output()
            .unwrap()
    };
    let out = run("86400");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains(&format!(
            "- **Tool:** mcpsift {}\n",
            env!("CARGO_PKG_VERSION")
        )),
        "{md}"
    );
    assert!(md.contains("- **Command:** ` mcpsift analyze "), "{md}");
    assert!(md.contains("[REDACTED]"), "{md}");
    assert!(!md.contains("0123456789abcdef"), "{md}");
    assert!(
        md.contains("- **Generated:** 1970-01-02T00:00:00.000Z"),
        "{md}"
    );
    // The filter echoed in the report and the warning about it are redacted too.
    assert!(
        !stderr(&out).contains("0123456789abcdef"),
        "{}",
        stderr(&out)
    );
    // Empty: no time at all, for byte-identical reports.
    let md = String::from_utf8_lossy(&run("").stdout).into_owned();
    assert!(!md.contains("Generated"), "{md}");
    let out = run("yesterday");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("SOURCE_DATE_EPOCH"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn max_chars_and_the_github_preset_bound_the_markdown() {
    let samples = repo("samples");
    let samples = samples.to_str().unwrap();
    let out = analyze(&[samples, "--format", "markdown", "--max-chars", "20000"]);
    assert_eq!(out.status.code(), Some(0));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.chars().count() <= 20_000, "{}", md.chars().count());
    assert!(
        md.contains("**Left out** to stay under 20000 characters"),
        "{md}"
    );
    // --github is the same cap at GitHub's 65,536.
    let out = analyze(&[samples, "--format", "markdown", "--all", "--github"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.chars().count() <= 65_536);
    // The --report file is capped the same way.
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("ticket.md");
    analyze(&[
        samples,
        "--report",
        report.to_str().unwrap(),
        "--max-chars",
        "5000",
    ]);
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(
        md.chars().count() <= 5_000 && md.contains("Left out"),
        "{md}"
    );
    let out = analyze(&[samples, "--github", "--max-chars", "10"]);
    assert_eq!(out.status.code(), Some(2), "the two caps conflict");
}

#[test]
fn a_baseline_matches_whatever_spelling_of_the_paths_and_warns_about_stale_entries() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("baseline.json");
    // Written with the absolute path of the directory...
    let abs = repo("samples");
    let out = analyze(&[
        abs.to_str().unwrap(),
        "--format",
        "jsonl",
        "--write-baseline",
        base.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&base).unwrap();
    assert!(!text.contains(env!("CARGO_MANIFEST_DIR")), "{text}");
    // ...applied with a relative one, from another working directory.
    let out = bin()
        .current_dir(repo("tests"))
        .args([
            "analyze",
            "../samples",
            "--format",
            "jsonl",
            "--baseline",
            base.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = jsonl(&out);
    assert_eq!(records.iter().filter(|r| r["type"] == "finding").count(), 0);
    assert_eq!(records.last().unwrap()["baseline_accepted"], 14);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    // A file named directly is keyed by its name, wherever it is: written by its
    // absolute path, applied by a relative one.
    let one = dir.path().join("one.json");
    let out = analyze(&[
        repo("samples/streamable-http.jsonl").to_str().unwrap(),
        "--format",
        "jsonl",
        "--write-baseline",
        one.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let out = bin()
        .current_dir(repo("samples"))
        .args([
            "analyze",
            "./streamable-http.jsonl",
            "--baseline",
            one.to_str().unwrap(),
            "--format",
            "jsonl",
        ])
        .output()
        .unwrap();
    assert_eq!(jsonl(&out).last().unwrap()["baseline_accepted"], 4);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    // Entries that accept nothing are named: here, the other inputs' findings.
    let out = analyze(&[
        repo("samples/streamable-http.jsonl").to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert!(
        err.contains("baseline.json: 10 entries matched no finding (first: "),
        "{err}"
    );
    let out = analyze(&[
        abs.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_captured_call_gives_a_wireshark_filter_in_json_and_markdown() {
    let cap = repo("samples/sse-cut.pcap");
    let out = analyze(&[cap.to_str().unwrap(), "--format", "jsonl"]);
    let call = jsonl(&out)
        .into_iter()
        .find(|r| r["type"] == "call" && r["outcome"] == "STREAM_INCOMPLETE")
        .unwrap();
    let t = &call["timeline"];
    assert_eq!(t["tcp_stream"], 2);
    assert_eq!(t["end_frame"], 45);
    assert_eq!(t["wireshark_filter"], "tcp.stream == 2 && http");
    let out = analyze(&[cap.to_str().unwrap(), "--format", "markdown"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("- **In Wireshark:** TCP stream 2, response ended at frame 45; filter ` tcp.stream == 2 && http `"),
        "{md}"
    );
}

/// The progress bar is for a person at a terminal: with stderr piped it never shows,
/// even on a run long enough to draw it (stdin held open for over a second).
#[test]
fn piped_stderr_shows_no_progress() {
    let sample = std::fs::read(repo("samples/streamable-http.jsonl")).unwrap();
    let mut child = bin()
        .args(["analyze", "-", "--format", "jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcpsift");
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    stdin.write_all(&sample).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success() || out.status.code() == Some(1));
    assert!(!jsonl(&out).is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    for mark in ["ETA", "inputs ", "/s", "\r", "\x1b["] {
        assert!(!err.contains(mark), "progress on a piped stderr: {err:?}");
    }
}

/// The library's counters, which the CLI's bar reads, reach the planned totals.
#[test]
fn progress_counters_reach_the_totals() {
    use mcpsift::batch::{self, Input, Progress};
    use std::sync::atomic::Ordering::Relaxed;
    let inputs = [
        Input::Path(repo("samples/streamable-http.jsonl")),
        Input::Path(repo("samples/sse-cut.pcap")),
    ];
    let progress = Progress::default();
    batch::run_with_progress(&inputs, &Default::default(), &progress);
    let size = |p: &str| std::fs::metadata(repo(p)).unwrap().len();
    let total = size("samples/streamable-http.jsonl") + size("samples/sse-cut.pcap");
    assert_eq!(progress.total_bytes.load(Relaxed), total);
    assert_eq!(progress.bytes_read.load(Relaxed), total);
    assert_eq!(progress.total_inputs.load(Relaxed), 2);
    assert_eq!(progress.inputs_done.load(Relaxed), 2);
}

/// A successful re-invocation (the same call made again later, a new intent) is
/// counted, not listed among the calls worth attention: a long healthy session
/// repeats reads all day. `--all` lists it; a failed call is listed either way.
#[test]
fn successful_reinvocations_are_counted_not_listed() {
    let sample = repo("samples/streamable-http.jsonl");
    let sample = sample.to_str().unwrap();
    let table = analyze(&[sample, "--width", "200"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(!text.contains("called again later"), "{text}");
    assert!(text.contains("1 re-invocation"), "{text}");
    assert!(text.contains("TOOL_ERROR"), "{text}");
    let all = analyze(&[sample, "--all", "--width", "200"]);
    let text = String::from_utf8_lossy(&all.stdout);
    assert!(
        text.contains("attempt 2 (called again later, not a retry)"),
        "{text}"
    );
    let md = analyze(&[sample, "--format", "markdown"]);
    let text = String::from_utf8_lossy(&md.stdout);
    assert!(
        !text.contains("### TOOL\\_SUCCESS — read\\_note id ` 15 `"),
        "{text}"
    );
}

/// A streaming run spools an input's records in a temporary file past 4 MiB. With
/// no writable temporary directory the records stay in memory: the output is the
/// same, and a warning on stderr says why memory grew and how to fix it.
#[test]
fn a_streaming_run_without_a_temporary_directory_loses_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("long.jsonl");
    let mut text = String::new();
    for id in 0..14_000 {
        text.push_str(&format!(
            "{{\"dir\":\"c2s\",\"msg\":{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"read_file\",\"arguments\":{{\"path\":\"src/f{id}.rs\"}}}}}}}}\n\
             {{\"dir\":\"s2c\",\"msg\":{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"ok\"}}]}}}}}}\n"
        ));
    }
    std::fs::write(&log, text).unwrap();
    let args = ["analyze", log.to_str().unwrap(), "--format", "jsonl"];
    let usual = bin().args(args).output().unwrap();
    let without = bin()
        .args(args)
        .env("TMPDIR", dir.path().join("no such directory"))
        .output()
        .unwrap();
    assert_eq!(usual.status.code(), Some(0), "{}", stderr(&usual));
    assert!(usual.stdout.len() > 4 << 20, "{}", usual.stdout.len());
    assert_eq!(stderr(&usual), "");
    assert_eq!(without.status.code(), Some(0), "{}", stderr(&without));
    assert!(usual.stdout == without.stdout);
    let err = stderr(&without);
    assert!(
        err.starts_with("mcpsift: warning: no temporary file could be written in ")
            && err.contains("the call records of 1 input were kept in memory")
            && err.contains("set TMPDIR"),
        "{err}"
    );
}

/// An HTTP exchange log of POSTs to `url`, a second apart, each request answered by
/// its response with status 200.
fn exchange_log(url: &str, exchanges: &[(Value, Value)]) -> String {
    exchanges
        .iter()
        .enumerate()
        .map(|(n, (req, resp))| {
            let rec = json!({
                "ts": format!("2026-12-02T08:00:{n:02}.000Z"),
                "request": {"method": "POST", "url": url, "headers": [["content-type", "application/json"]], "body": req.to_string()},
                "response": {"status": 200, "headers": [["content-type", "application/json"]], "body": resp.to_string()},
            });
            format!("{rec}\n")
        })
        .collect()
}

/// Held calls are bounded in number; a hostile input must not make each one large.
/// A tool name, a request id and an error message far past any real one are kept as
/// their first bytes, their length and a hash: calls still pair, a listed tool's
/// annotations still apply to its calls, and distinct names stay distinct.
#[test]
fn names_ids_and_messages_past_their_bounds_are_kept_short_and_still_meet() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo("samples/streamable-http.jsonl")).unwrap();
    let long_tool = format!("delete_file_{}", "x".repeat(4000));
    let renamed = dir.path().join("renamed.jsonl");
    std::fs::write(&renamed, text.replace("delete_file", &long_tool)).unwrap();
    let out = analyze(&[renamed.to_str().unwrap(), "--format", "jsonl"]);
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(!text.contains(&long_tool));
    let tool = jsonl(&out)
        .into_iter()
        .find(|r| r["type"] == "call" && r["tool"].as_str().unwrap().starts_with("delete_file_x"))
        .unwrap()["tool"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(tool.len() <= 256 && tool.ends_with(']'), "{tool}");
    assert!(
        tool.contains(&format!("…[{} bytes, #", long_tool.len())),
        "{tool}"
    );
    // The same findings, down to their wording ("the tool is annotated destructive"
    // needs the listed tool to meet its calls).
    let findings = |out: &Output| -> Vec<String> {
        jsonl(out)
            .into_iter()
            .filter(|r| r["type"] == "finding")
            .map(|mut r| {
                r["input"] = Value::Null;
                r.to_string().replace(&tool, "delete_file")
            })
            .collect()
    };
    let sample = repo("samples/streamable-http.jsonl");
    let sample_out = analyze(&[sample.to_str().unwrap(), "--format", "jsonl"]);
    let before = findings(&sample_out);
    assert!(before.iter().any(|f| f.contains("annotated destructive")));
    assert_eq!(findings(&out), before);

    // Long string ids, each answered by an error with a long message; two ids that
    // differ only in their last byte stay two calls.
    let exchanges: Vec<(Value, Value)> = ["a", "b"]
        .iter()
        .map(|last| {
            let id = format!("{}{last}", "i".repeat(5000));
            (
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "t", "arguments": {}}}),
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "m".repeat(9000), "data": {"trace": "d".repeat(9000)}}}),
            )
        })
        .collect();
    let ids = dir.path().join("ids.jsonl");
    std::fs::write(&ids, exchange_log("http://127.0.0.1:3000/mcp", &exchanges)).unwrap();
    let out = analyze(&[ids.to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let calls: Vec<Value> = jsonl(&out)
        .into_iter()
        .filter(|r| r["type"] == "call")
        .collect();
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0]["id"], calls[1]["id"]);
    for c in &calls {
        assert_eq!(c["outcome"], "JSONRPC_ERROR", "{c}");
        assert!(c["id"].as_str().unwrap().len() <= 300, "{}", c["id"]);
        let message = c["error_message"].as_str().unwrap();
        assert!(
            message.len() <= 1024 && message.contains("…[9000 bytes, #"),
            "{message}"
        );
    }
    // A long Host and a long clientInfo name: the scope and client are held short.
    let url = format!("http://{}.example:3000/mcp", "h".repeat(3000));
    let exchanges = [
        (
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "agent ".repeat(500), "version": "1"}}}),
            json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}}),
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "ok"}]}}),
        ),
    ];
    let hosts = dir.path().join("host.jsonl");
    std::fs::write(&hosts, exchange_log(&url, &exchanges)).unwrap();
    let out = analyze(&[hosts.to_str().unwrap(), "--format", "jsonl"]);
    let call = jsonl(&out)
        .into_iter()
        .find(|r| r["type"] == "call")
        .unwrap();
    assert_eq!(call["outcome"], "TOOL_SUCCESS", "{call}");
    let scope = call["scope"].as_str().unwrap();
    assert!(
        scope.starts_with("http:hhh") && scope.len() <= 300,
        "{scope}"
    );
    let client = call["client"].as_str().unwrap();
    assert!(
        client.starts_with("agent agent") && client.len() <= 256,
        "{client}"
    );
}

/// `--finding` with the table keeps, until an input's end, its first 20,000 calls
/// that need attention (the findings say which of them stay only then). Narrowed to
/// NON_TERMINAL alone it keeps only calls of the outcomes that kind names, so a log
/// of 25,000 errors and then 100 calls never answered lists those 100; narrowed to
/// kinds that may name any call, the 100 are counted, not listed, and the table says
/// why and where to find them.
#[test]
fn finding_with_the_table_keeps_a_bounded_share_and_says_when_it_lists_fewer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("down-then-silent.jsonl");
    let mut text = String::new();
    let mut line = |dir: &str, msg: Value| {
        text.push_str(
            &json!({"ts": "2026-12-01T00:00:00.000Z", "dir": dir, "msg": msg}).to_string(),
        );
        text.push('\n');
    };
    for i in 0..25_100 {
        line(
            "c2s",
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t", "arguments": {"n": i}}}),
        );
        if i < 25_000 {
            line(
                "s2c",
                json!({"jsonrpc": "2.0", "id": i, "error": {"code": -32602, "message": "bad"}}),
            );
        }
    }
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap();
    let table = |kinds: &[&str]| {
        let mut args = vec![p, "--width", "200"];
        for k in kinds {
            args.extend(["--finding", k]);
        }
        let out = analyze(&args);
        String::from_utf8(out.stdout).unwrap()
    };
    let listed = table(&["non-terminal"]);
    assert_eq!(
        listed.matches("NO_RESPONSE ┆ transport").count(),
        100,
        "{listed}"
    );
    assert!(!listed.contains("cap:"), "{listed}");
    let counted = table(&["non-terminal", "id-reused"]);
    assert_eq!(
        counted.matches("NO_RESPONSE ┆ transport").count(),
        0,
        "{counted}"
    );
    assert!(
        counted.contains("among the first 20000 that need attention; 100 more")
            && counted.contains("--format jsonl"),
        "{counted}"
    );
    // Either way the findings and counts are all there.
    for out in [&listed, &counted] {
        assert!(out.contains("100 tools/call: 100 NO_RESPONSE"), "{out}");
        assert_eq!(out.matches("NON_TERMINAL ┆").count(), 100, "{out}");
    }
}

/// A server that stopped answering raises a finding per call. The table lists an
/// input's first 1,000 findings, markdown the run's first 1,000 and the page its
/// first 2,000, most severe first, and each counts the rest (the table and markdown
/// used to hold and print every one: 800 MB for 100,000 calls never answered).
#[test]
fn the_human_reports_list_the_first_findings_and_count_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("never-answered.jsonl");
    let mut text = String::new();
    for i in 0..2_100 {
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t", "arguments": {"n": i}}});
        let rec = json!({
            "ts": format!("2026-12-02T08:{:02}:{:02}.000Z", i / 60 % 60, i % 60),
            "request": {"method": "POST", "url": "http://h/mcp", "headers": [["content-type", "application/json"]], "body": body.to_string()},
        });
        text.push_str(&format!("{rec}\n"));
    }
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap();
    let run = |format: &str| {
        let out = analyze(&[p, "--format", format, "--width", "200"]);
        String::from_utf8(out.stdout).unwrap()
    };
    let table = run("table");
    assert_eq!(
        table.matches("MEDIUM   ┆ NON_TERMINAL").count(),
        1_000,
        "{table}"
    );
    assert!(table.contains("1100 more findings (all are listed with --format jsonl)"));
    // The first findings by the calls they name: call 0 is listed, call 2099 not.
    assert!(table.contains("t call 0 (NO_RESPONSE) has no terminal result"));
    assert!(table.contains("t call 999 (NO_RESPONSE) has no terminal result"));
    assert!(!table.contains("t call 1000 (NO_RESPONSE) has no terminal result"));
    let markdown = run("markdown");
    assert!(
        markdown.contains("The first 1000 of 2100 findings"),
        "{markdown}"
    );
    assert_eq!(
        markdown.matches("| MEDIUM | NON\\_TERMINAL |").count(),
        1_000
    );
    let page = run("html");
    assert!(page.contains("The first 2000 of 2100 findings"));
    assert_eq!(page.matches("data-kind=\"NON_TERMINAL\"").count(), 2_000);
    // Counts are of every finding.
    assert!(
        markdown.contains("2100 findings: 2100 MEDIUM."),
        "{markdown}"
    );
    assert!(page.contains("2100 findings; the worst is NON_TERMINAL"));
}

/// `--finding` with the page keeps an input's first 20,000 calls of each kind a
/// finding may name: past them the calls the findings name are counted, not listed,
/// and the input says so; the summary still counts every one.
#[test]
fn the_page_with_finding_says_how_many_named_calls_it_could_not_list() {
    const CALLS: usize = 20_060;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unanswered.jsonl");
    let mut text = String::new();
    for i in 0..CALLS {
        text.push_str(&format!(
            "{{\"request\":{{\"method\":\"POST\",\"url\":\"http://h/mcp\",\"body\":\"{{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":{i},\\\"method\\\":\\\"tools/call\\\",\\\"params\\\":{{\\\"name\\\":\\\"read_note\\\",\\\"arguments\\\":{{\\\"n\\\":{i}}}}}}}\"}}}}\n"
        ));
    }
    std::fs::write(&path, text).unwrap();
    let p = path.to_str().unwrap();
    let out = analyze(&[p, "--format", "html", "--finding", "NON_TERMINAL"]);
    let err = stderr(&out);
    assert!(
        err.contains(
            "cap: with --finding, the page lists the calls the findings name among the first 20000"
        ) && err.contains("60 more that they name are counted, not listed"),
        "{err}"
    );
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains("20060"), "the page counts every call");
}
