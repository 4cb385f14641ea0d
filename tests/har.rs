//! HAR ingest end to end: hand-written edge cases and the mitmproxy HARs recorded by
//! the traffic lab, each asserted down to the verdict of every `tools/call`.

use mcpsift::batch::analyse_reader;
use mcpsift::config::{Config, Limits};
use mcpsift::correlate::Analysis;
use mcpsift::ingest::{Format, IngestError, Kind};
use mcpsift::model::Locator;
use serde_json::{json, Value};

fn analyse(doc: &str) -> Analysis {
    let (format, analysis) =
        analyse_reader(doc.as_bytes(), &Config::default()).expect("HAR should be read");
    assert_eq!(format, Format::Har);
    analysis
}

fn outcomes(a: &Analysis) -> Vec<String> {
    a.calls
        .iter()
        .map(|c| c.verdict.outcome.as_str().to_owned())
        .collect()
}

fn call_body(id: u32) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"echo","arguments":{"n":id}}})
        .to_string()
}

fn ok_result(id: u32) -> String {
    json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":"hi"}]}}).to_string()
}

/// One entry: a `tools/call` POST with `response` as given.
fn entry(id: u32, started: &str, response: Value) -> Value {
    json!({
        "startedDateTime": started,
        "time": 12.5,
        "request": {
            "method": "POST",
            "url": "http://127.0.0.1:8000/mcp",
            "httpVersion": "HTTP/1.1",
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "postData": {"mimeType": "application/json", "text": call_body(id)}
        },
        "response": response,
        "timings": {"blocked": -1, "dns": -1, "connect": -1, "send": 1, "wait": 10, "receive": 1.5}
    })
}

fn har(entries: Vec<Value>) -> String {
    json!({"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}})
        .to_string()
}

fn json_response(status: u16, text: &str) -> Value {
    json!({
        "status": status,
        "headers": [{"name": "Content-Type", "value": "application/json"}],
        "content": {"size": text.len(), "mimeType": "application/json", "text": text}
    })
}

fn sse_response(text: &str) -> Value {
    json!({
        "status": 200,
        "headers": [{"name": "Content-Type", "value": "text/event-stream"}],
        "content": {"size": text.len(), "mimeType": "text/event-stream", "text": text}
    })
}

fn b64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

const T0: &str = "2026-12-02T10:00:00.000Z";

#[test]
fn json_and_sse_bodies_with_timing() {
    let sse = format!(
        "event: message\ndata: {}\n\n",
        json!({"jsonrpc":"2.0","id":2,"result":{"content":[],"isError":true}})
    );
    let a = analyse(&har(vec![
        entry(1, T0, json_response(200, &ok_result(1))),
        entry(2, "2026-12-02T10:00:01.000Z", sse_response(&sse)),
    ]));
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(outcomes(&a), ["TOOL_SUCCESS", "TOOL_ERROR"]);
    let c = &a.calls[0];
    let start = c.started_at.unwrap();
    assert_eq!(start, mcpsift::model::Timestamp::parse(T0).unwrap());
    // ended_at is the response's arrival: start + send + wait (blocked/dns/connect -1).
    assert_eq!(start.millis_until(c.ended_at.unwrap()), 11);
    assert_eq!(a.calls[1].verdict.evidence.sse_events, 1);
    assert_eq!(a.calls[0].locator, Locator::Entry { entry: 1 });
}

#[test]
fn base64_and_still_gzipped_bodies() {
    let text = ok_result(1);
    let mut r1 = json_response(200, "");
    r1["content"] = json!({"size": text.len(), "mimeType": "application/json", "encoding": "base64", "text": b64(text.as_bytes())});
    let gz = gzip(ok_result(2).as_bytes());
    let mut r2 = json_response(200, "");
    r2["headers"] = json!([{"name":"Content-Type","value":"application/json"},{"name":"Content-Encoding","value":"gzip"}]);
    r2["content"] = json!({"size": gz.len(), "mimeType": "application/json", "encoding": "base64", "text": b64(&gz)});
    let mut r3 = json_response(200, "");
    r3["content"]["encoding"] = json!("base64");
    r3["content"]["text"] = json!("%%% not base64");
    let a = analyse(&har(vec![
        entry(1, T0, r1),
        entry(2, "2026-12-02T10:00:01Z", r2),
        entry(3, "2026-12-02T10:00:02Z", r3),
    ]));
    assert_eq!(
        outcomes(&a),
        ["TOOL_SUCCESS", "TOOL_SUCCESS", "MALFORMED_JSON"]
    );
    assert_eq!(a.problems.len(), 1, "{:?}", a.problems);
    assert_eq!(a.problems[0].locator, Locator::Entry { entry: 3 });
    assert!(a.problems[0].message.contains("not valid base64"));
}

#[test]
fn truncated_missing_and_empty_bodies() {
    let text = ok_result(1);
    let cut = &text[..20];
    // content.size larger than the text: the recorder cut the body.
    let mut truncated = json_response(200, cut);
    truncated["content"]["size"] = json!(text.len());
    // An SSE body cut by the recorder: never read as a whole stream.
    let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
    let mut sse_cut = sse_response(sse);
    sse_cut["content"]["size"] = json!(sse.len() + 500);
    // No text at all: the recorder kept no body.
    let mut missing = json_response(200, "");
    missing["content"] = json!({"size": 120, "mimeType": "application/json"});
    // An empty body, said to be empty.
    let mut empty = json_response(200, "");
    empty["content"] = json!({"size": 0, "mimeType": "application/json"});
    let a = analyse(&har(vec![
        entry(1, T0, truncated),
        entry(2, "2026-12-02T10:00:01Z", sse_cut),
        entry(3, "2026-12-02T10:00:02Z", missing),
        entry(4, "2026-12-02T10:00:03Z", empty),
    ]));
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(
        outcomes(&a),
        [
            "STREAM_INCOMPLETE",
            "STREAM_INCOMPLETE",
            "NO_RESPONSE",
            "MALFORMED_JSON"
        ]
    );
    assert_eq!(
        a.calls[0].verdict.evidence.end,
        mcpsift::model::End::Truncated
    );
    assert_eq!(
        a.calls[1].verdict.evidence.end,
        mcpsift::model::End::Truncated
    );
    assert!(a.calls[2]
        .verdict
        .evidence
        .notes
        .iter()
        .any(|n| n.contains("kept no response body")));
}

#[test]
fn failures_as_recorders_write_them() {
    // Chromium: status 0 with response._error.
    let chromium = json!({"status": 0, "statusText": "", "headers": [], "content": {"size": 0, "mimeType": "x-unknown"}, "_error": "net::ERR_CONNECTION_REFUSED"});
    // Playwright: status -1 with _failureText.
    let playwright = json!({"status": -1, "statusText": "", "headers": [], "content": {"size": -1, "mimeType": "x-unknown"}, "_failureText": "net::ERR_ABORTED"});
    // Firefox / mitmproxy: status 0 and nothing else.
    let bare = json!({"status": 0, "statusText": "", "headers": [], "content": {"size": 0, "mimeType": ""}});
    // A stream that started, then the client aborted: SSE body + entry-level _error.
    let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";
    let mut aborted = entry(4, "2026-12-02T10:00:03Z", sse_response(sse));
    aborted["response"]["_error"] = json!("net::ERR_ABORTED");
    // The server closed it (not the client).
    let mut closed = entry(5, "2026-12-02T10:00:04Z", sse_response(sse));
    closed["_error"] = json!("net::ERR_INCOMPLETE_CHUNKED_ENCODING");
    let a = analyse(&har(vec![
        entry(1, T0, chromium),
        entry(2, "2026-12-02T10:00:01Z", playwright),
        entry(3, "2026-12-02T10:00:02Z", bare),
        aborted,
        closed,
    ]));
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(
        outcomes(&a),
        [
            "NO_RESPONSE",
            "NO_RESPONSE",
            "NO_RESPONSE",
            "STREAM_INCOMPLETE",
            "STREAM_INCOMPLETE"
        ]
    );
    let notes = |i: usize| a.calls[i].verdict.evidence.notes.join(" | ");
    assert!(
        notes(0).contains("net::ERR_CONNECTION_REFUSED"),
        "{}",
        notes(0)
    );
    assert!(notes(1).contains("net::ERR_ABORTED"), "{}", notes(1));
    assert!(notes(2).contains("status 0"), "{}", notes(2));
    use mcpsift::model::End;
    assert_eq!(a.calls[3].verdict.evidence.end, End::ClientClosed);
    assert_eq!(a.calls[4].verdict.evidence.end, End::Closed);
}

#[test]
fn entries_are_analysed_in_start_order() {
    // The second POST of the same call was written first (finished first): the repeat
    // must still be the later one.
    let a = analyse(&har(vec![
        entry(1, "2026-12-02T10:00:05Z", json_response(200, &ok_result(1))),
        entry(1, T0, json_response(503, "")),
    ]));
    assert_eq!(outcomes(&a), ["HTTP_ERROR", "TOOL_SUCCESS"]);
    assert_eq!(a.calls[0].locator, Locator::Entry { entry: 2 });
    assert_eq!(a.calls[1].post_count, 2);
}

#[test]
fn malformed_entries_are_named_and_the_rest_is_read() {
    let doc = har(vec![
        json!("not an entry"),
        json!({"startedDateTime": T0, "request": {"method": 5}}),
        {
            let mut e = entry(3, "2026-12-02T10:00:02Z", Value::Null);
            e.as_object_mut().unwrap().remove("response");
            e
        },
        entry(
            4,
            "2026-12-02T10:00:03Z",
            json!({"status": "abc", "content": {}}),
        ),
        entry(5, "2026-12-02T10:00:04Z", json_response(200, &ok_result(5))),
    ]);
    let a = analyse(&doc);
    let located: Vec<_> = a.problems.iter().map(|p| p.locator.clone()).collect();
    assert_eq!(located, [1, 2, 3, 4].map(|entry| Locator::Entry { entry }));
    assert!(a.problems[0].message.contains("not a valid HAR entry"));
    assert!(a.problems[1].message.contains("invalid type"));
    assert!(a.problems[2].message.contains("no \"response\""));
    assert!(a.problems[3].message.contains("status"));
    assert_eq!(outcomes(&a), ["NO_RESPONSE", "NO_RESPONSE", "TOOL_SUCCESS"]);
}

#[test]
fn broken_top_levels_are_errors_naming_what_is_wrong() {
    let err = |doc: &str| analyse_reader(doc.as_bytes(), &Config::default()).unwrap_err();
    assert!(
        matches!(err("{\"log\": 5}"), IngestError::Har(m) if m.contains("the HAR \"log\" object"))
    );
    assert!(
        matches!(err("{\"log\": {\"entries\": {}}}"), IngestError::Har(m) if m.contains("list of HAR entries"))
    );
    assert!(
        matches!(err("{\"log\": {\"version\": \"1.2\""), IngestError::Har(m) if m.contains("ends before"))
    );
    // Not JSON at all, and JSON without a log, never reach the HAR reader.
    assert!(matches!(
        err("{\n\"a\": 1\n}"),
        IngestError::Unrecognised(_)
    ));
    assert!(matches!(err("not json"), IngestError::Unrecognised(_)));
}

#[test]
fn a_truncated_file_keeps_the_entries_before_the_cut() {
    let full = har(vec![
        entry(1, T0, json_response(200, &ok_result(1))),
        entry(2, "2026-12-02T10:00:01Z", json_response(200, &ok_result(2))),
    ]);
    let cut = &full[..full.len() - 40];
    let a = analyse(cut);
    assert_eq!(outcomes(&a), ["TOOL_SUCCESS"]);
    assert_eq!(a.problems.len(), 1);
    assert_eq!(a.problems[0].locator, Locator::Entry { entry: 2 });
    assert!(a.problems[0].message.contains("truncated HAR"));
}

#[test]
fn other_keys_before_log_are_still_a_har() {
    let doc = format!(
        "{{\n  \"_comment\": \"exported\",\n  \"log\": {}\n}}",
        json!({"version":"1.2","entries":[entry(1, T0, json_response(200, &ok_result(1)))]})
    );
    assert_eq!(outcomes(&analyse(&doc)), ["TOOL_SUCCESS"]);
}

#[test]
fn synthesized_mcp_har_is_named_and_still_classified() {
    let mut e1 = entry(
        1,
        T0,
        json!({"status": 0, "content": {"mimeType": "application/json", "text": ok_result(1)}}),
    );
    e1["request"]["url"] = json!("mcp://local-server/tools/call");
    e1["request"]["httpVersion"] = json!("MCP/1.0");
    let mut e2 = entry(
        2,
        "2026-12-02T10:00:01Z",
        json!({"status": 200, "content": {"mimeType": "application/json", "text": json!({"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}).to_string()}}),
    );
    e2["request"]["url"] = json!("mcp://local-server/tools/call");
    let a = analyse(&har(vec![e1, e2]));
    assert_eq!(outcomes(&a), ["TOOL_SUCCESS", "JSONRPC_ERROR"]);
    // Said once, as a notice: the file is read as what it is, nothing failed.
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(a.notices.len(), 1, "{:?}", a.notices);
    assert!(a.notices[0]
        .message
        .contains("not a recording of real HTTP"));
    assert!(a.notices[0].message.contains("MCP/1.0"));
}

/// The traffic lab's mitmproxy 11.0.2 HARs (lab/captures/*/capture.har, recorded in
/// front of real MCP SDK servers and clients): every call's verdict must be the one
/// the lab checked by hand (expected.json).
#[test]
fn mitmproxy_lab_captures_match_their_expected_verdicts() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/captures");
    let mut checked = 0;
    let mut dirs: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().collect();
    dirs.sort_by_key(|d| d.file_name());
    for dir in dirs {
        let har_path = dir.path().join("capture.har");
        let expected_path = dir.path().join("expected.json");
        if !har_path.exists() || !expected_path.exists() {
            continue;
        }
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(&expected_path).unwrap()).unwrap();
        let (format, a) =
            analyse_reader(std::fs::File::open(&har_path).unwrap(), &Config::default()).unwrap();
        assert_eq!(format, Format::Har);
        let name = dir.file_name().to_string_lossy().into_owned();
        assert!(a.problems.is_empty(), "{name}: {:?}", a.problems);
        let want: Vec<(String, String, String)> = expected["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["tool"].as_str().unwrap().to_owned(),
                    c["id"].to_string(),
                    c["outcome"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let got: Vec<(String, String, String)> = a
            .calls
            .iter()
            .map(|c| {
                (
                    c.tool.as_deref().unwrap_or_default().to_owned(),
                    c.id.raw().to_owned(),
                    c.verdict.outcome.as_str().to_owned(),
                )
            })
            .collect();
        assert_eq!(got, want, "{name}");
        // The same traffic as the lab's JSONL exchange log gives the same verdicts.
        let jsonl_path = dir.path().join("exchanges.jsonl");
        if jsonl_path.exists() {
            let (_, j) = analyse_reader(
                std::fs::File::open(&jsonl_path).unwrap(),
                &Config::default(),
            )
            .unwrap();
            let from_jsonl: Vec<(String, String, String)> = j
                .calls
                .iter()
                .map(|c| {
                    (
                        c.tool.as_deref().unwrap_or_default().to_owned(),
                        c.id.raw().to_owned(),
                        c.verdict.outcome.as_str().to_owned(),
                    )
                })
                .collect();
            assert_eq!(got, from_jsonl, "{name}: HAR and JSONL disagree");
        }
        let mut kinds: Vec<String> = a
            .findings
            .iter()
            .map(|f| f.kind.as_str().to_owned())
            .collect();
        kinds.sort();
        kinds.dedup();
        let mut want_kinds: Vec<String> = expected["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_owned())
            .collect();
        want_kinds.sort();
        want_kinds.dedup();
        assert_eq!(kinds, want_kinds, "{name}");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} lab captures found");
}

#[test]
fn gzipped_har_file_and_content_type_from_mime_type() {
    let sse = format!("data: {}\n\n", ok_result(1));
    let mut resp = sse_response(&sse);
    // The headers lost their Content-Type; content.mimeType still says SSE.
    resp["headers"] = json!([]);
    let doc = har(vec![entry(1, T0, resp)]);
    let (format, a) = analyse_reader(&gzip(doc.as_bytes())[..], &Config::default()).unwrap();
    assert_eq!(format, Format::Har);
    assert_eq!(outcomes(&a), ["TOOL_SUCCESS"]);
    assert_eq!(
        a.calls[0].verdict.evidence.content_type.as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(a.calls[0].verdict.evidence.sse_events, 1);
}

#[test]
fn zlib_deflate_and_brotli_bodies() {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(ok_result(1).as_bytes()).unwrap();
    let z = z.finish().unwrap();
    let mut deflated = json_response(200, "");
    deflated["headers"] = json!([{"name":"Content-Type","value":"application/json"},{"name":"Content-Encoding","value":"deflate"}]);
    deflated["content"] = json!({"size": z.len(), "mimeType": "application/json", "encoding": "base64", "text": b64(&z)});
    let mut brotli = deflated.clone();
    brotli["headers"][1]["value"] = json!("br");
    brotli["content"]["text"] = json!(b64(&[0x8b, 0xff, 0x00, 0x10, 0x81]));
    brotli["content"]["size"] = json!(5);
    let a = analyse(&har(vec![
        entry(1, T0, deflated),
        entry(2, "2026-12-02T10:00:01Z", brotli),
    ]));
    assert_eq!(outcomes(&a), ["TOOL_SUCCESS", "MALFORMED_JSON"]);
    assert_eq!(a.problems.len(), 1, "{:?}", a.problems);
    assert!(a.problems[0].message.contains("brotli"));
    assert_eq!(a.problems[0].locator, Locator::Entry { entry: 2 });
}

#[test]
fn base64_request_body_and_numbers_as_strings() {
    let mut e = entry(1, T0, json_response(200, &ok_result(1)));
    e["request"]["postData"] = json!({"mimeType": "application/json", "encoding": "base64", "text": b64(call_body(1).as_bytes())});
    e["response"]["status"] = json!("200");
    e["time"] = json!("20");
    let a = analyse(&har(vec![e]));
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(outcomes(&a), ["TOOL_SUCCESS"]);
    assert_eq!(a.calls[0].verdict.evidence.http_statuses, [200]);
}

/// Every prefix of a HAR (a file cut anywhere) is read without a panic: either an error
/// naming what is wrong, or the entries before the cut plus a problem naming the entry.
#[test]
fn every_prefix_of_a_har_is_handled() {
    let sse = format!("event: message\ndata: {}\n\n", ok_result(2));
    let doc = format!(
        "{{\n  \"log\": {}\n}}\n",
        serde_json::to_string_pretty(&json!({
            "version": "1.2",
            "creator": {"name": "test", "version": "1"},
            "entries": [
                entry(1, T0, json_response(200, &ok_result(1))),
                entry(2, "2026-12-02T10:00:01Z", sse_response(&sse)),
            ]
        }))
        .unwrap()
    );
    for cut in 1..doc.len() {
        let Some(prefix) = doc.get(..cut) else {
            continue;
        };
        match analyse_reader(prefix.as_bytes(), &Config::default()) {
            Ok((_, a)) => {
                assert!(a.calls.len() <= 2, "cut {cut}");
                if a.calls.len() < 2 {
                    assert!(!a.problems.is_empty(), "cut {cut}: calls lost silently");
                }
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

/// A HAR written by mitmproxy 11.0.2 `hardump` in front of the MCP Python SDK 2.3.0
/// server and client (tests/fixtures/har/record_mitmproxy.py): a success, a tool error,
/// a call the client cancelled (the server answers -32800), and a stream cut by killing
/// the server, which mitmproxy records as a 200 with an empty body. (mitmproxy wrote the
/// cancelled call, entry 7, after the later `notifications/cancelled`, entry 6.)
#[test]
fn mitmproxy_recording_of_failures() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/har/mitmproxy-failures.har");
    let (format, a) =
        analyse_reader(std::fs::File::open(path).unwrap(), &Config::default()).unwrap();
    assert_eq!(format, Format::Har);
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(
        outcomes(&a),
        [
            "TOOL_SUCCESS",
            "TOOL_ERROR",
            "JSONRPC_ERROR",
            "STREAM_INCOMPLETE"
        ]
    );
    let tools: Vec<_> = a
        .calls
        .iter()
        .map(|c| c.tool.as_deref().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        tools,
        ["read_note", "fail_tool", "slow_progress", "slow_progress"]
    );
    assert_eq!(a.calls[2].verdict.evidence.jsonrpc_code, Some(-32800));
    assert_eq!(a.calls[2].locator, Locator::Entry { entry: 7 });
    let kinds: Vec<_> = a.findings.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, ["NON_TERMINAL"]);
}

/// A `notifications/cancelled` POST as an entry, with `response` as given.
fn cancel_entry(id: u32, started: &str, response: Value) -> Value {
    let mut e = entry(id, started, response);
    e["request"]["postData"]["text"] = json!(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id,"reason":"timed out"}}).to_string());
    e
}

#[test]
fn playwright_failure_after_the_head_keeps_no_body() {
    // Playwright only fetches the body of a request that finished: one that failed after
    // its head (server killed mid-stream, client abort) has a status, `_failureText`, and
    // `content` with size -1 and no text. The stream began and broke off: STREAM_INCOMPLETE.
    let cut = |failure: &str| {
        json!({"status": 200, "statusText": "OK",
               "headers": [{"name": "content-type", "value": "text/event-stream"}],
               "content": {"size": -1, "mimeType": "text/event-stream"},
               "_transferSize": -1, "_failureText": failure})
    };
    let refused = json!({"status": -1, "statusText": "", "headers": [], "content": {"size": -1, "mimeType": "x-unknown"}, "_failureText": "net::ERR_CONNECTION_REFUSED"});
    let a = analyse(&har(vec![
        entry(1, T0, cut("net::ERR_INCOMPLETE_CHUNKED_ENCODING")),
        // The client times out two seconds later; its cancellation cannot reach the dead
        // server and did not end the stream.
        cancel_entry(1, "2026-12-02T10:00:02Z", refused),
        entry(2, "2026-12-02T10:00:03Z", cut("net::ERR_ABORTED")),
        // A body that was simply not kept, with no failure: still NO_RESPONSE.
        entry(
            3,
            "2026-12-02T10:00:04Z",
            json!({"status": 200, "headers": [], "content": {"size": -1, "mimeType": "text/event-stream"}}),
        ),
    ]));
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert_eq!(
        outcomes(&a),
        ["STREAM_INCOMPLETE", "STREAM_INCOMPLETE", "NO_RESPONSE"]
    );
    use mcpsift::model::End;
    assert_eq!(a.calls[0].verdict.evidence.end, End::Closed);
    assert_eq!(a.calls[1].verdict.evidence.end, End::ClientClosed);
    let notes = a.calls[0].verdict.evidence.notes.join(" | ");
    assert!(notes.contains("ERR_INCOMPLETE_CHUNKED_ENCODING"), "{notes}");
    assert!(notes.contains("only after its stream had ended"), "{notes}");
    assert!(!a.calls[0].cancelled);
    let kinds: Vec<_> = a
        .findings
        .iter()
        .map(|f| (f.kind.as_str(), f.severity.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("NON_TERMINAL", "MEDIUM"),
            ("NON_TERMINAL", "MEDIUM"),
            ("NON_TERMINAL", "MEDIUM")
        ]
    );
}

#[test]
fn chromium_playwright_recordings() {
    // tests/fixtures/har/chromium/record.mjs: Chromium 156 through Playwright 1.65.1
    // `recordHar`, the MCP TS SDK client in the page, three SDK servers (SSE, JSON, SSE
    // killed mid-stream). Expected verdicts read from the HARs themselves (README.md there).
    for name in ["chromium-embed.har", "chromium-minimal.har"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/har/chromium")
            .join(name);
        let (format, a) =
            analyse_reader(std::fs::File::open(path).unwrap(), &Config::default()).unwrap();
        assert_eq!(format, Format::Har, "{name}");
        assert!(a.problems.is_empty(), "{name}: {:?}", a.problems);
        assert_eq!(
            outcomes(&a),
            [
                "TOOL_SUCCESS",
                "TOOL_SUCCESS",
                "TOOL_ERROR",
                "JSONRPC_ERROR",
                "STREAM_INCOMPLETE"
            ],
            "{name}"
        );
        let tools: Vec<_> = a
            .calls
            .iter()
            .map(|c| c.tool.as_deref().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            tools,
            [
                "read_note",
                "read_note",
                "fail_tool",
                "no_such_tool",
                "slow_progress"
            ],
            "{name}"
        );
        let ev = |i: usize| &a.calls[i].verdict.evidence;
        let types: Vec<_> = (0..4).map(|i| ev(i).content_type.clone()).collect();
        assert_eq!(
            types,
            [
                Some("text/event-stream".to_owned()),
                Some("application/json".to_owned()),
                Some("text/event-stream".to_owned()),
                Some("text/event-stream".to_owned())
            ],
            "{name}"
        );
        assert_eq!(ev(3).jsonrpc_code, Some(-32602), "{name}");
        // Killed server: a 200 event stream, `_failureText`, no body kept.
        assert_eq!(a.calls[4].locator, Locator::Entry { entry: 15 }, "{name}");
        assert_eq!(ev(4).http_statuses, [200], "{name}");
        assert_eq!(ev(4).end, mcpsift::model::End::Closed, "{name}");
        assert!(!a.calls[4].cancelled, "{name}");
        let kinds: Vec<_> = a
            .findings
            .iter()
            .map(|f| (f.kind.as_str(), f.severity.as_str()))
            .collect();
        assert_eq!(kinds, [("NON_TERMINAL", "MEDIUM")], "{name}");
    }
}

/// One lab failure (the first delete_file POST answered by a closed connection) as
/// HAR, pcap and JSONL: the NO_RESPONSE call ends the same way in each, so reports of
/// one incident do not disagree.
#[test]
fn a_lost_response_ends_alike_in_every_format() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/captures/no_response_replay_py");
    let mut ends = Vec::new();
    for name in ["capture.har", "capture.pcap", "exchanges.jsonl"] {
        let (_, a) = analyse_reader(
            std::fs::File::open(dir.join(name)).unwrap(),
            &Config::default(),
        )
        .unwrap();
        let lost = a
            .calls
            .iter()
            .find(|c| c.verdict.outcome.as_str() == "NO_RESPONSE")
            .unwrap_or_else(|| panic!("{name}: no NO_RESPONSE call"));
        ends.push((name, lost.verdict.evidence.end.as_str()));
    }
    assert_eq!(
        ends,
        [
            ("capture.har", "closed"),
            ("capture.pcap", "closed"),
            ("exchanges.jsonl", "closed")
        ]
    );
}

fn analyse_with(doc: &str, limits: mcpsift::config::Limits) -> Analysis {
    let config = Config {
        limits,
        ..Config::default()
    };
    analyse_reader(doc.as_bytes(), &config)
        .expect("HAR should be read")
        .1
}

#[test]
fn a_second_log_or_entries_member_is_a_problem_not_silence() {
    let one = entry(1, T0, json_response(200, &ok_result(1)));
    let two = entry(2, T0, json_response(200, &ok_result(2)));
    let doc =
        format!(r#"{{"log":{{"entries":[{one}],"entries":[{two}]}},"log":{{"entries":[{two}]}}}}"#);
    let a = analyse(&doc);
    assert_eq!(a.calls.len(), 1, "only the first list is read");
    let dup: Vec<_> = a
        .problems
        .iter()
        .filter(|p| p.kind == Kind::Malformed && p.message.contains("a second"))
        .collect();
    assert_eq!(dup.len(), 2, "{:?}", a.problems);
    assert!(dup.iter().any(|p| p.message.contains("\"entries\"")));
    assert!(dup.iter().any(|p| p.message.contains("\"log\"")));
}

#[test]
fn an_entry_over_the_record_cap_is_skipped_before_it_is_buffered() {
    let small = entry(1, T0, json_response(200, &ok_result(1)));
    let big = entry(2, T0, json_response(200, &"x".repeat(50_000)));
    let doc = har(vec![
        small,
        big,
        entry(3, T0, json_response(200, &ok_result(3))),
    ]);
    let a = analyse_with(
        &doc,
        Limits {
            max_record_bytes: 10_000,
            ..Limits::default()
        },
    );
    // The entries before and after the oversize one are analysed.
    assert_eq!(a.calls.len(), 2, "{:?}", a.problems);
    let cap = a
        .problems
        .iter()
        .find(|p| p.kind == Kind::Cap)
        .expect("a cap");
    assert_eq!(cap.locator, Locator::Entry { entry: 2 });
    assert!(cap.message.contains("skipped"), "{}", cap.message);
    assert!(
        cap.message.contains("--max-record-bytes"),
        "{}",
        cap.message
    );
}

#[test]
fn a_gzip_bomb_body_stops_at_the_body_cap_and_says_so() {
    let bomb = gzip(&vec![b' '; 4 << 20]);
    let resp = json!({
        "status": 200,
        "headers": [{"name": "Content-Type", "value": "application/json"},
                    {"name": "Content-Encoding", "value": "gzip"}],
        "content": {"mimeType": "application/json", "encoding": "base64", "text": b64(&bomb)}
    });
    let a = analyse_with(
        &har(vec![entry(1, T0, resp)]),
        Limits {
            max_record_bytes: 100_000,
            ..Limits::default()
        },
    );
    let cap = a
        .problems
        .iter()
        .find(|p| p.kind == Kind::Cap)
        .expect("a cap");
    assert!(cap.message.contains("100000 bytes"), "{}", cap.message);
    assert!(
        cap.message.contains("--max-record-bytes"),
        "{}",
        cap.message
    );
}
