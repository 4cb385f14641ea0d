//! One fixture per correlation rule, plus Cakewalk MCP Test Kitchen scenario
//! signatures, each asserting the exact verdicts and findings. The fixtures are made
//! by tests/fixtures/correlate/make_fixtures.py.

use mcpsift::batch::analyse_reader;
use mcpsift::config::Config;
use mcpsift::correlate::Analysis;
use std::path::Path;

fn run(name: &str) -> Analysis {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/correlate/{name}.jsonl"));
    let file = std::fs::File::open(&path).expect("fixture");
    let (_, analysis) = analyse_reader(file, &Config::default()).expect("readable");
    assert!(analysis.problems.is_empty(), "{:?}", analysis.problems);
    analysis
}

/// (id, outcome, retry_origin, post_count) of every call, in order.
fn calls(a: &Analysis) -> Vec<(String, &'static str, &'static str, u32)> {
    a.calls
        .iter()
        .map(|c| {
            (
                c.id.to_string(),
                c.verdict.outcome.as_str(),
                c.retry_origin.as_str(),
                c.post_count,
            )
        })
        .collect()
}

/// (kind, severity, ids) of every finding, sorted for a stable comparison.
fn findings(a: &Analysis) -> Vec<(&'static str, &'static str, String)> {
    let mut f: Vec<_> = a
        .findings
        .iter()
        .map(|f| {
            let ids: Vec<String> = f.ids.iter().map(|i| i.to_string()).collect();
            (f.kind.as_str(), f.severity.as_str(), ids.join(","))
        })
        .collect();
    f.sort();
    f
}

fn c(
    id: &str,
    outcome: &'static str,
    origin: &'static str,
    n: u32,
) -> (String, &'static str, &'static str, u32) {
    (id.to_owned(), outcome, origin, n)
}

fn f(kind: &'static str, sev: &'static str, ids: &str) -> (&'static str, &'static str, String) {
    (kind, sev, ids.to_owned())
}

#[test]
fn resumption_completes_a_cut_stream_and_drops_replayed_events() {
    let a = run("resumption");
    assert_eq!(
        calls(&a),
        [
            c("9", "TOOL_SUCCESS", "resumption", 1),
            c("10", "STREAM_INCOMPLETE", "none", 1)
        ]
    );
    assert_eq!(a.calls[0].verdict.evidence.http_statuses, [200, 200]);
    assert_eq!(a.calls[0].verdict.evidence.terminal_leg, Some(1));
    // The replayed S-9-1 progress event is not counted as a second message.
    assert_eq!(a.calls[0].verdict.evidence.notification_count, 1);
    assert_eq!(
        findings(&a),
        [
            f("NON_TERMINAL", "MEDIUM", "10"),
            f("RETRY_TOO_SOON", "LOW", "10")
        ]
    );
    let too_soon = a
        .findings
        .iter()
        .find(|x| x.kind.as_str() == "RETRY_TOO_SOON")
        .unwrap();
    assert!(
        too_soon.detail.contains("100 ms") && too_soon.detail.contains("500 ms"),
        "{}",
        too_soon.detail
    );
}

#[test]
fn legacy_sse_joins_posts_to_their_session_stream() {
    let a = run("legacy_sse");
    assert_eq!(
        calls(&a),
        [
            c("1", "TOOL_SUCCESS", "none", 1),
            c("2", "JSONRPC_ERROR", "none", 1),
            c("3", "STREAM_INCOMPLETE", "none", 1)
        ]
    );
    assert_eq!(a.calls[0].verdict.evidence.http_statuses, [202, 200]);
    assert!(a.calls[0].scope.starts_with("legacy:"));
    assert_eq!(a.calls[0].protocol_version.as_deref(), Some("2024-11-05"));
    assert_eq!(
        findings(&a),
        [
            f("ID_MISMATCH", "MEDIUM", "42"),
            f("NON_TERMINAL", "MEDIUM", "3")
        ]
    );
}

#[test]
fn mrtr_chains_are_linked_and_their_breaks_found() {
    let a = run("mrtr");
    assert_eq!(
        calls(&a),
        [
            c("1", "INPUT_REQUIRED", "none", 1),
            c("2", "TOOL_SUCCESS", "mrtr", 2),
            c("3", "INPUT_REQUIRED", "none", 1),
            c("4", "TOOL_SUCCESS", "mrtr", 2),
            c("5", "INPUT_REQUIRED", "none", 1),
            c("5", "TOOL_SUCCESS", "mrtr", 2),
            c("6", "INPUT_REQUIRED", "none", 1),
        ]
    );
    assert_eq!(
        a.calls[1].previous.as_ref().map(|p| p.seq),
        Some(a.calls[0].seq)
    );
    assert_eq!(
        findings(&a),
        [
            f("MRTR_BROKEN", "MEDIUM", "3,4"),
            f("MRTR_BROKEN", "MEDIUM", "5,5"),
            f("NON_TERMINAL", "LOW", "6")
        ]
    );
}

#[test]
fn id_mismatches_over_http() {
    let a = run("id_mismatch");
    assert_eq!(
        calls(&a),
        [
            c("1", "INVALID_ENVELOPE", "none", 1),
            c("2", "INVALID_ENVELOPE", "none", 1)
        ]
    );
    assert_eq!(
        findings(&a),
        [
            f("ID_MISMATCH", "MEDIUM", "1,\"1\""),
            f("ID_MISMATCH", "MEDIUM", "2,null"),
            f("ID_MISMATCH", "MEDIUM", "77")
        ]
    );
}

#[test]
fn id_mismatches_and_reuse_over_stdio() {
    let a = run("stdio_ids");
    assert_eq!(
        calls(&a),
        [
            c("1", "TOOL_SUCCESS", "none", 1),
            c("2", "NO_RESPONSE", "none", 1),
            c("2", "TOOL_SUCCESS", "none", 1)
        ]
    );
    assert_eq!(
        findings(&a),
        [
            f("ID_MISMATCH", "MEDIUM", "1"),
            f("ID_MISMATCH", "MEDIUM", "9"),
            f("ID_REUSED", "MEDIUM", "2"),
            f("NON_TERMINAL", "MEDIUM", "2")
        ]
    );
}

#[test]
fn id_reuse_is_a_violation_in_2025_sessions_only() {
    let a = run("id_reuse");
    assert_eq!(
        calls(&a),
        [
            c("5", "TOOL_SUCCESS", "none", 1),
            c("7", "TOOL_SUCCESS", "none", 1)
        ]
    );
    assert_eq!(findings(&a), [f("ID_REUSED", "MEDIUM", "5")]);
}

#[test]
fn without_sessions_each_initialize_starts_a_new_id_space() {
    let a = run("id_reuse_sessionless");
    assert_eq!(
        calls(&a),
        [
            c("1", "TOOL_SUCCESS", "none", 1),
            c("1", "TOOL_SUCCESS", "none", 1)
        ]
    );
    assert_eq!(&*a.calls[0].scope, "http:127.0.0.1:8080");
    assert_eq!(&*a.calls[1].scope, "http:127.0.0.1:8080#2");
    // Only the same client's second use of id 1 is a reuse.
    assert_eq!(findings(&a), [f("ID_REUSED", "MEDIUM", "1")]);
}

#[test]
fn cancellations_are_recorded_not_blamed_on_the_server() {
    let a = run("cancel");
    assert_eq!(
        calls(&a),
        [
            c("1", "STREAM_INCOMPLETE", "none", 1),
            c("2", "STREAM_INCOMPLETE", "none", 1)
        ]
    );
    assert!(a.calls.iter().all(|c| c.cancelled));
    assert_eq!(
        findings(&a),
        [
            f("NON_TERMINAL", "INFO", "1"),
            f("NON_TERMINAL", "INFO", "2")
        ]
    );
}

#[test]
fn replay_after_session_expiry_is_explained() {
    let a = run("session_expiry");
    assert_eq!(
        calls(&a),
        [
            c("2", "HTTP_ERROR", "none", 1),
            c("2", "TOOL_SUCCESS", "protocol", 2)
        ]
    );
    assert_ne!(a.calls[0].scope, a.calls[1].scope);
    assert_eq!(findings(&a), []);
}

#[test]
fn repeats_are_explained_unsafe_or_unexplained() {
    let a = run("repeats");
    assert_eq!(
        calls(&a),
        [
            c("2", "HTTP_ERROR", "none", 1),
            c("3", "TOOL_SUCCESS", "after_refusal", 2),
            c("4", "HTTP_ERROR", "none", 1),
            c("5", "TOOL_SUCCESS", "after_failure", 2),
            c("6", "HTTP_ERROR", "none", 1),
            c("7", "TOOL_SUCCESS", "after_failure", 2),
            c("8", "HTTP_ERROR", "none", 1),
            c("9", "TOOL_SUCCESS", "after_refusal", 2),
            c("10", "TOOL_SUCCESS", "none", 1),
            c("10", "TOOL_SUCCESS", "unexplained", 2),
        ]
    );
    assert_eq!(
        findings(&a),
        [
            f("RETRY_TOO_SOON", "LOW", "8,9"),
            f("UNEXPLAINED_REPEAT", "HIGH", "10,10"),
            f("UNSAFE_REPLAY", "HIGH", "4,5"),
        ]
    );
}

// --- Cakewalk MCP Test Kitchen scenario signatures (ecosystem.md §1.3) ---------------

#[test]
fn cakewalk_http_status_sequence_on_tools_call() {
    let a = run("cakewalk_status_sequence_call");
    assert_eq!(
        calls(&a),
        [
            c("1", "HTTP_ERROR", "none", 1),
            c("2", "TOOL_SUCCESS", "after_refusal", 2)
        ]
    );
    assert_eq!(a.calls[0].verdict.evidence.content_type, None);
    assert_eq!(findings(&a), []);
}

#[test]
fn cakewalk_http_status_sequence_on_tools_list_makes_no_call() {
    let a = run("cakewalk_status_sequence_list");
    assert_eq!(a.exchanges, 1);
    assert!(a.calls.is_empty());
    assert_eq!(findings(&a), []);
}

#[test]
fn cakewalk_jsonrpc_error() {
    let a = run("cakewalk_jsonrpc_error");
    assert_eq!(calls(&a), [c("1", "JSONRPC_ERROR", "none", 1)]);
    assert_eq!(a.calls[0].verdict.evidence.jsonrpc_code, Some(-32602));
    assert_eq!(
        a.calls[0].verdict.evidence.content_type.as_deref(),
        Some("application/json")
    );
}

#[test]
fn cakewalk_tool_error() {
    let a = run("cakewalk_tool_error");
    assert_eq!(calls(&a), [c("1", "TOOL_ERROR", "none", 1)]);
    assert!(a.calls[0]
        .verdict
        .evidence
        .error_message
        .as_deref()
        .unwrap()
        .contains("Tool-side failure"));
}

#[test]
fn cakewalk_elicitation_approval() {
    let a = run("cakewalk_elicitation_approval");
    assert_eq!(
        calls(&a),
        [
            c("1", "INPUT_REQUIRED", "none", 1),
            c("2", "TOOL_SUCCESS", "mrtr", 2)
        ]
    );
    assert_eq!(
        a.calls[0].returned_state.as_deref(),
        Some("\"awaiting-elicitation\"")
    );
    assert_eq!(findings(&a), []);
}

#[test]
fn cakewalk_connection_close() {
    let a = run("cakewalk_connection_close");
    assert_eq!(
        calls(&a),
        [
            c("1", "NO_RESPONSE", "none", 1),
            c("2", "TOOL_SUCCESS", "after_failure", 2)
        ]
    );
    assert_eq!(
        findings(&a),
        [
            f("NON_TERMINAL", "MEDIUM", "1"),
            f("UNSAFE_REPLAY", "HIGH", "1,2")
        ]
    );
}

#[test]
fn cakewalk_late_response_is_a_client_cancellation() {
    let a = run("cakewalk_late_response");
    assert_eq!(calls(&a), [c("1", "STREAM_INCOMPLETE", "none", 1)]);
    assert!(a.calls[0].cancelled);
    assert_eq!(findings(&a), [f("NON_TERMINAL", "INFO", "1")]);
}

/// Cut streams wait for a resumption with their bodies, so they are bounded in bytes
/// as well as in number: of 40 cut streams of 1 MiB each, the oldest stop waiting
/// (with a note that says why), and the newest still join their resumption.
#[test]
fn cut_streams_past_their_byte_bound_stop_waiting_oldest_first() {
    let post = |id: u32, pad: &str| {
        serde_json::json!({
            "ts": format!("2026-11-30T00:53:{:02}.000Z", id),
            "request": {"method": "POST", "url": "http://127.0.0.1:8080/mcp",
                "headers": [["Content-Type", "application/json"], ["Mcp-Session-Id", "sess-A"]],
                "body": format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"work","arguments":{{"n":{id}}}}}}}"#)},
            "response": {"status": 200, "headers": [["Content-Type", "text/event-stream"]],
                "body": format!(": {pad}\nid: S-{id}-0\ndata: \n\n")},
            "end": "closed",
        })
    };
    let resume = |id: u32| {
        serde_json::json!({
            "ts": "2026-11-30T00:54:00.000Z",
            "request": {"method": "GET", "url": "http://127.0.0.1:8080/mcp",
                "headers": [["Accept", "text/event-stream"], ["Mcp-Session-Id", "sess-A"], ["Last-Event-ID", format!("S-{id}-0")]],
                "body": ""},
            "response": {"status": 200, "headers": [["Content-Type", "text/event-stream"]],
                "body": format!("id: S-{id}-1\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"done\"}}]}}}}\n\n")},
        })
    };
    let pad = "p".repeat(1 << 20);
    let mut log = String::new();
    for id in 1..=40 {
        log.push_str(&format!("{}\n", post(id, &pad)));
    }
    log.push_str(&format!("{}\n{}\n", resume(1), resume(40)));
    let (_, a) = analyse_reader(std::io::Cursor::new(log), &Config::default()).unwrap();
    let call = |id: &str| a.calls.iter().find(|c| c.id.raw() == id).unwrap();
    let first = &call("1").verdict;
    assert_eq!(first.outcome.as_str(), "STREAM_INCOMPLETE");
    assert!(
        first.evidence.says("no longer looked for"),
        "{:?}",
        first.evidence.notes
    );
    assert_eq!(call("40").verdict.outcome.as_str(), "TOOL_SUCCESS");
    let waited_out = a
        .calls
        .iter()
        .filter(|c| c.verdict.evidence.says("no longer looked for"))
        .count();
    assert!((1..40).contains(&waited_out), "{waited_out}");
}
