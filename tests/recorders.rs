//! Files written by MCP recorders (mcp-recorder, mcp-cassette in Python and
//! TypeScript, mcp-vcr) and Claude Desktop's MCP logs: each is detected by content,
//! every call gets its verdict with the right evidence and times, and a file of a
//! recorder's shape with nothing usable is one error naming that format.

mod common;

use serde_json::Value;
use std::path::Path;

fn run(path: &Path) -> (Vec<Value>, String, Option<i32>) {
    common::run::cli_jsonl(path)
}

fn fixture(name: &str) -> (Vec<Value>, String, Option<i32>) {
    run(&Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/recorders")
        .join(name))
}

fn input(records: &[Value]) -> &Value {
    records.iter().find(|r| r["type"] == "input").unwrap()
}

/// (id, tool, outcome) per call, in the report's order.
fn calls(records: &[Value], evidence: &str) -> Vec<(String, String, String)> {
    records
        .iter()
        .filter(|r| r["type"] == "call")
        .map(|r| {
            assert_eq!(r["evidence"], evidence, "{r}");
            (
                r["id"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| r["id"].to_string()),
                r["tool"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn c(id: &str, tool: &str, outcome: &str) -> (String, String, String) {
    (id.into(), tool.into(), outcome.into())
}

fn call<'a>(records: &'a [Value], tool: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["type"] == "call" && r["tool"] == tool)
        .unwrap()
}

#[test]
fn mcp_recorder_cassette_is_read_as_http_exchanges() {
    let (r, err, code) = fixture("mcp-recorder/mock_session.json");
    assert_eq!(code, Some(0), "{err}");
    let i = input(&r);
    assert_eq!(i["format"], "mcp-recorder");
    // initialize, initialized, tools/list, four calls, DELETE and GET.
    assert_eq!(i["exchanges"], 9);
    assert_eq!(
        calls(&r, "wire"),
        vec![
            c("2", "add", "TOOL_SUCCESS"),
            c("3", "multiply", "TOOL_SUCCESS"),
            c("4", "echo", "TOOL_SUCCESS"),
            c("5", "get_weather", "TOOL_SUCCESS"),
        ]
    );
    let add = call(&r, "add");
    assert_eq!(add["transport"], "http", "{add}");
    assert_eq!(add["http_statuses"], serde_json::json!([200]), "{add}");
    assert_eq!(add["content_type"], "text/event-stream", "{add}");
    assert_eq!(add["sse_events"], 1, "{add}");
    assert_eq!(add["location"]["entry"], 4, "{add}");
}

/// Re-recorded with mcp-recorder 0.5.0 itself (record.sh) against the lab's TypeScript
/// SDK server: slow_progress's kept event is its first progress notification.
#[test]
fn mcp_recorder_lab_recording() {
    let (r, err, code) = fixture("mcp-recorder/lab-session.json");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        calls(&r, "wire"),
        vec![
            c("2", "read_note", "TOOL_SUCCESS"),
            c("3", "fail_tool", "TOOL_ERROR"),
            c("4", "no_such_tool", "TOOL_ERROR"),
            c("5", "slow_progress", "STREAM_INCOMPLETE"),
        ]
    );
    assert_eq!(call(&r, "slow_progress")["end"], "truncated");
}

/// mcp-recorder keeps the first SSE event only: when that is a progress
/// notification, the answer is missing from the file, and the call says so.
#[test]
fn mcp_recorder_first_event_not_the_answer_is_a_cut_stream() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("progress.json");
    std::fs::write(
        &path,
        r#"{
  "version": "1.0",
  "metadata": {"server_url": "http://127.0.0.1:8000/mcp"},
  "interactions": [
    {"type": "jsonrpc_request",
     "request": {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow", "arguments": {}}},
     "response": {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 7, "progress": 1}},
     "response_is_sse": true, "response_status": 200, "latency_ms": 5, "http_method": null, "http_path": null},
    {"type": "jsonrpc_request",
     "request": {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "fails", "arguments": {}}},
     "response": null, "response_is_sse": false, "response_status": 500, "latency_ms": 2, "http_method": null, "http_path": null}
  ]
}"#,
    )
    .unwrap();
    let (r, err, code) = run(&path);
    assert_eq!(code, Some(0), "{err}");
    let slow = call(&r, "slow");
    assert_eq!(slow["outcome"], "STREAM_INCOMPLETE", "{slow}");
    assert_eq!(slow["end"], "truncated", "{slow}");
    let fails = call(&r, "fails");
    assert_eq!(fails["outcome"], "HTTP_ERROR", "{fails}");
    assert_eq!(fails["http_statuses"], serde_json::json!([500]), "{fails}");
}

#[test]
fn python_mcp_cassettes_carry_times_from_t_offset_ms() {
    let (r, err, code) = fixture("mcp-cassette-py/http_echo_and_add.mcp.json");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(input(&r)["format"], "mcp-cassette");
    assert_eq!(
        calls(&r, "wire"),
        vec![
            c("2", "echo", "TOOL_SUCCESS"),
            c("3", "add", "TOOL_SUCCESS")
        ]
    );
    // recorded_at 19:22:32.454515 + t_offset_ms 188 (request) and 203 (add).
    assert_eq!(
        call(&r, "echo")["started_at"],
        "2026-07-18T19:22:32.642515Z"
    );
    assert_eq!(call(&r, "add")["started_at"], "2026-07-18T19:22:32.657515Z");

    let (r, err, code) = fixture("mcp-cassette-py/echo_and_add.mcp.json");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        calls(&r, "wire"),
        vec![
            c("2", "echo", "TOOL_SUCCESS"),
            c("3", "add", "TOOL_SUCCESS")
        ]
    );
    assert_eq!(call(&r, "echo")["transport"], "stdio");
}

#[test]
fn typescript_mcp_cassettes_are_transcripts_not_rejected_lines() {
    let (r, err, code) = fixture("mcp-cassette-ts/tape.http.jsonl");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(input(&r)["format"], "mcp-cassette");
    assert!(input(&r).get("problems").is_none(), "{}", input(&r));
    assert_eq!(calls(&r, "wire"), vec![c("1", "echo", "TOOL_SUCCESS")]);
    // startedAt 2026-08-16T00:00:00Z + t = 1 ms.
    assert_eq!(call(&r, "echo")["started_at"], "2026-08-16T00:00:00.001Z");

    let (r, err, code) = fixture("mcp-cassette-ts/tiny-server.golden.cassette.jsonl");
    assert_eq!(code, Some(0), "{err}");
    // The header is no record; five frames are.
    assert_eq!(input(&r)["exchanges"], 5);
    assert!(input(&r).get("problems").is_none(), "{}", input(&r));
}

#[test]
fn mcp_vcr_yaml_transcripts() {
    let (r, err, code) = fixture("mcp-vcr/tool_call_get_current_time.yaml");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(input(&r)["format"], "mcp-vcr");
    assert_eq!(
        calls(&r, "wire"),
        vec![c("2", "get_current_time", "TOOL_SUCCESS")]
    );
    assert_eq!(
        call(&r, "get_current_time")["started_at"],
        "2026-08-16T12:00:00.040Z"
    );
    let (r, _, _) = fixture("mcp-vcr/tool_call_read_file.yaml");
    assert_eq!(calls(&r, "wire"), vec![c("2", "read_file", "TOOL_ERROR")]);
    // Sorted keys and normalized string ids: still one transcript, no problem.
    let (r, err, code) = fixture("mcp-vcr/test_session_golden.yaml");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(input(&r)["exchanges"], 4);
    assert!(input(&r).get("problems").is_none(), "{}", input(&r));
}

/// mcp-vcr's `--format ndjson`: written here as its recorder writes it (`json.dumps`
/// of a `_type: meta` line, then `{t, dir, payload}` per message); no public file.
#[test]
fn mcp_vcr_ndjson_transcripts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.ndjson");
    std::fs::write(
        &path,
        concat!(
            r#"{"_type": "meta", "version": 1, "recorded_at": "2026-05-18T12:00:00.500000Z", "session_id": "a3f2b1c9", "server_command": ["python", "server.py"], "schema_version": "1.0", "protocol_version": "2024-11-05"}"#,
            "\n",
            r#"{"t": 0, "dir": "c2s", "payload": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}}}"#,
            "\n",
            r#"{"t": 12, "dir": "s2c", "payload": {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}}}"#,
            "\n",
            r#"{"t": 13, "dir": "sideways", "payload": {}}"#,
            "\n",
        ),
    )
    .unwrap();
    let (r, err, code) = run(&path);
    // The line with no direction is a problem naming its line; the rest is read.
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("line 4"), "{err}");
    assert_eq!(input(&r)["format"], "mcp-vcr");
    assert_eq!(calls(&r, "wire"), vec![c("1", "echo", "JSONRPC_ERROR")]);
    assert_eq!(call(&r, "echo")["started_at"], "2026-05-18T12:00:00.500Z");
}

#[test]
fn claude_desktop_server_log() {
    let (r, err, code) = fixture("claude-desktop/mcp-server-weather.log");
    // A line cut short is a problem (exit 2), and the rest is read.
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(input(&r)["format"], "claude-desktop-log");
    assert!(err.contains("line 24"), "{err}");
    assert_eq!(
        calls(&r, "client-log"),
        vec![
            c("2", "get_alerts", "TOOL_SUCCESS"),
            c("3", "get_forecast", "TOOL_ERROR"),
            c("4", "get_alert", "JSONRPC_ERROR"),
            // Cancelled by the client after its own timeout, before the late answer.
            c("5", "get_forecast", "NO_RESPONSE"),
            // After the restart: ids start again, in a scope of their own.
            c("2", "get_alerts", "TOOL_SUCCESS"),
            c("3", "get_forecast", "NO_RESPONSE"),
        ]
    );
    let first = call(&r, "get_alerts");
    assert_eq!(first["started_at"], "2026-03-10T09:15:40.002Z");
    assert_eq!(first["ended_at"], "2026-03-10T09:15:40.630Z");
    let scopes: std::collections::BTreeSet<_> = r
        .iter()
        .filter(|x| x["type"] == "call")
        .map(|x| x["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes.len(), 2, "one scope per connection: {scopes:?}");
}

#[test]
fn claude_desktop_mcp_log_keeps_servers_apart() {
    let (r, err, code) = fixture("claude-desktop/mcp.log");
    assert_eq!(code, Some(0), "{err}");
    // Both servers use id 2 at the same moment; each answer finds its own call.
    assert_eq!(
        calls(&r, "client-log"),
        vec![
            c("2", "list_channels", "TOOL_ERROR"),
            c("2", "read_graph", "TOOL_SUCCESS"),
        ]
    );
}

/// Real logs pasted into public issue threads (tests/fixtures/recorders/claude-desktop/public):
/// two calls answered `isError: true`, from a July 2025 server log whose calls lack
/// `arguments` (the client bug the thread reports).
#[test]
fn claude_desktop_public_log_with_tool_errors() {
    let (r, err, code) = fixture("claude-desktop/public/filesystem-4188.log");
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(input(&r)["format"], "claude-desktop-log");
    assert_eq!(
        calls(&r, "client-log"),
        vec![
            c("17", "list_directory", "TOOL_ERROR"),
            c("18", "list_directory", "TOOL_ERROR"),
        ]
    );
    let second = r
        .iter()
        .find(|x| x["type"] == "call" && x["id"] == "18")
        .unwrap();
    assert_eq!(second["started_at"], "2025-07-23T04:20:58.401Z");
    assert_eq!(second["ended_at"], "2025-07-23T04:20:58.402Z");
}

/// Every public excerpt with MCP messages is read as a Claude Desktop log without a
/// single problem: server stderr between messages (npx, uv, mcp-remote), `%o` and
/// plain multi-line blocks, `[error]` lines, both line orders, with and without the
/// metadata suffix. None of them holds a `tools/call`, and a cancelled `initialize`
/// is not one.
#[test]
fn claude_desktop_public_logs_without_calls_read_cleanly() {
    for name in [
        "desktopcommander-19.log",
        "chatlog-166.log",
        "airflow-20.log",
        "kafka-1-mcp.log",
        "rebe-go-sdk-395-mcp.log",
        "obsidian-32.log",
        "weather-mcp-remote-3.log",
        "filesystem-summary-664.log",
    ] {
        let (r, err, code) = fixture(&format!("claude-desktop/public/{name}"));
        assert_eq!(code, Some(0), "{name}: {err}");
        let i = input(&r);
        assert_eq!(i["format"], "claude-desktop-log", "{name}: {i}");
        assert_eq!(i["status"], "ok", "{name}: {i}");
        assert!(err.trim().is_empty(), "{name}: {err}");
        assert!(calls(&r, "client-log").is_empty(), "{name}");
    }
}

/// Logs of servers that never got to say anything are one error naming the format.
#[test]
fn claude_desktop_public_logs_without_messages_are_one_error() {
    for name in ["apple-mail-70.log", "control-your-mac-70405.log"] {
        let (r, err, code) = fixture(&format!("claude-desktop/public/{name}"));
        assert_eq!(code, Some(2), "{name}: {err}");
        assert_eq!(input(&r)["status"], "error", "{name}");
        assert!(
            err.contains("looks like a Claude Desktop MCP log, but it holds no MCP message"),
            "{name}: {err}"
        );
    }
}

/// The summary form of mid-2026 (`method="tools/call" id=4 params`, no JSON): such a
/// call cannot be judged, and the file says so once, at the first such line, instead of
/// one "not JSON" problem per line. The first lines are the public excerpt's own.
#[test]
fn claude_desktop_summary_lines_name_the_calls_they_hide() {
    let public = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/recorders/claude-desktop/public/filesystem-summary-664.log"),
    )
    .unwrap();
    let text = format!(
        "{public}2026-07-22T08:00:52.100Z [Filesystem] [info] Message from client: method=\"tools/call\" id=2 params {{ metadata: undefined }}\n\
         2026-07-22T08:00:52.180Z [Filesystem] [info] Message from server: id=2 result {{ metadata: undefined }}\n\
         2026-07-22T08:00:53.000Z [Filesystem] [info] Message from client: method=\"tools/call\" id=3 params {{ metadata: undefined }}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp-server-Filesystem.log");
    std::fs::write(&path, text).unwrap();
    let (r, err, code) = run(&path);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(input(&r)["format"], "claude-desktop-log");
    assert!(calls(&r, "client-log").is_empty());
    // Nothing in it can be judged, so the input is an error, with the one problem.
    assert_eq!(input(&r)["status"], "error");
    assert!(
        err.contains("line 8: 2 tools/call message(s) are logged as a summary"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("summary")).count(),
        1,
        "one problem, not one per line: {err}"
    );
    assert!(!err.contains("not a JSON object"), "{err}");
}

/// A file of each recorder's shape whose records are all unusable: one error that
/// names the format, exit code 2, never "0 exchanges, status ok".
#[test]
fn right_shape_nothing_usable_is_one_error_naming_the_format() {
    let cases: [(&str, &str, &str); 6] = [
        (
            "cassette.json",
            "{\n  \"version\": \"1.0\",\n  \"metadata\": {},\n  \"interactions\": [\n    {\"type\": \"jsonrpc_request\", \"request\": null, \"response\": null, \"response_is_sse\": false, \"response_status\": 200},\n    7\n  ]\n}\n",
            "looks like an mcp-recorder cassette, but none of its records could be read (2 problems; first, at entry 1",
        ),
        (
            "x.mcp.json",
            "{\n  \"format_version\": 2,\n  \"recorded_at\": \"2026-07-18T19:22:32Z\",\n  \"messages\": [\n    {\"seq\": 0, \"t_offset_ms\": 1, \"sender\": \"proxy\", \"payload\": {}}\n  ]\n}\n",
            "looks like an mcp-cassette (Python) cassette, but none of its records could be read (1 problem; first, at entry 1: \"sender\" is \"proxy\"",
        ),
        (
            "tape.jsonl",
            "{\"type\":\"header\",\"cassetteVersion\":2,\"recorder\":\"mcp-cassette@0.4.0\",\"startedAt\":\"2026-08-16T00:00:00Z\",\"transport\":\"stdio\"}\n{\"type\":\"frame\",\"t\":1,\"dir\":\"sideways\",\"frame\":{}}\n",
            "looks like an mcp-cassette (TypeScript) cassette, but none of its records could be read (1 problem; first, at line 2",
        ),
        (
            "tape.yaml",
            "meta:\n  version: 1\nmessages:\n- dir: c2s\n  t: 0\n",
            "looks like an mcp-vcr transcript, but none of its records could be read (1 problem; first, at entry 1: message without a \"payload\" mapping",
        ),
        (
            "mcp-server-x.log",
            "2026-03-10T09:14:02.101Z [x] [info] Initializing server... { metadata: undefined }\n2026-03-10T09:14:02.412Z [x] [error] Server disconnected.\n",
            "looks like a Claude Desktop MCP log, but it holds no MCP message",
        ),
        (
            "empty.json",
            "{\n  \"version\": \"1.0\",\n  \"metadata\": {},\n  \"interactions\": []\n}\n",
            "looks like an mcp-recorder cassette, but it holds no MCP message",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, body, want) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let (r, err, code) = run(&path);
        assert_eq!(code, Some(2), "{name}: {err}");
        let i = input(&r);
        assert_eq!(i["status"], "error", "{name}: {i}");
        assert!(err.contains(want), "{name}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.contains(name)).count(),
            1,
            "{name}: one message, not one per record: {err}"
        );
    }
}

/// A cut YAML file (mcp-vcr appends message by message) names its line.
#[test]
fn broken_yaml_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.yaml");
    std::fs::write(
        &path,
        "meta:\n  version: 1\nmessages:\n- dir: c2s\n  payload:\n    id: 1\n    method: [tools/call\n",
    )
    .unwrap();
    let (_, err, code) = run(&path);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("mcp-vcr transcript: YAML error"), "{err}");
    assert!(err.contains("line "), "{err}");
}

/// A recording cut short after some messages keeps them: mcp-vcr appends message by
/// message, and what came before the cut is still the session's evidence. The cut is
/// a problem at its line, and the exit code says the input was not read whole.
#[test]
fn a_cut_yaml_recording_keeps_the_messages_before_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.yaml");
    std::fs::write(
        &path,
        "messages:\n- dir: c2s\n  payload:\n    id: 1\n    jsonrpc: '2.0'\n    method: tools/call\n    params: {name: echo, arguments: {x: 1}}\n  t: 0\n- dir: s2c\n  payload:\n    id: 1\n    jsonrpc: '2.0'\n    result: {content: [{type: text, text: done}]}\n  t: 5\n- dir: c2s\n  payload:\n    id: 2\n    method: [tools/call\nmeta:\n  recorded_at: '2026-05-18T12:00:00Z'\n",
    )
    .unwrap();
    let (r, err, code) = run(&path);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(
        calls(&r, "wire"),
        [("1".into(), "echo".into(), "TOOL_SUCCESS".into())]
    );
    assert!(err.contains("line 20: YAML error"), "{err}");
    assert!(err.contains("messages before it were read"), "{err}");
}

/// A file of a recorder's shape whose list of records is missing, or no list, is
/// one error naming the format and the member.
#[test]
fn a_recorder_file_whose_records_are_no_list_is_one_error() {
    let cases = [
        (
            "cassette.json",
            r#"{"version":"1.0","metadata":{"note":{"interactions":[],"response_is_sse":false}},"interactions":{"a":1}}"#,
            "an mcp-recorder cassette whose \"interactions\" is not an array",
        ),
        (
            "x.mcp.json",
            r#"{"format_version":1,"recorded_at":"2026-07-14T07:06:34Z","note":{"messages":[],"t_offset_ms":1}}"#,
            "an mcp-cassette (Python) cassette whose \"messages\" is not an array",
        ),
        (
            "tape.yaml",
            "meta:\n  version: 1\nmessages:\n  3\n",
            "an mcp-vcr transcript whose \"messages\" is not a list",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, body, want) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let (r, err, code) = run(&path);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert_eq!(input(&r)["status"], "error", "{name}");
        assert!(err.contains(name) && err.contains(want), "{name}: {err}");
    }
}

/// A YAML transcript that is not UTF-8 text is one error naming the format.
#[test]
fn a_yaml_transcript_that_is_not_utf8_is_one_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latin1.yaml");
    let mut body =
        b"meta:\n  version: 1\nmessages:\n- dir: c2s\n  payload: {id: 1, note: caf".to_vec();
    body.extend([0xE9, b'}', b'\n']);
    std::fs::write(&path, body).unwrap();
    let (r, err, code) = run(&path);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(input(&r)["status"], "error");
    assert!(
        err.contains("latin1.yaml") && err.contains("an mcp-vcr transcript: not UTF-8 text"),
        "{err}"
    );
}
