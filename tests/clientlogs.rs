//! Client logs (Claude Code, Codex, VS Code, OpenTelemetry): every MCP tool call gets a
//! verdict with `evidence: "client-log"`, errors the client made up are not counted as
//! the server's, repeats are found on the weaker evidence, and a malformed line is
//! named while the rest of the file is read.

mod common;

use serde_json::Value;
use std::path::Path;

fn analyze(path: &str) -> (Vec<Value>, String, Option<i32>) {
    common::run::cli_jsonl(&Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
}

fn calls(records: &[Value]) -> Vec<(String, String, String)> {
    records
        .iter()
        .filter(|r| r["type"] == "call")
        .map(|r| {
            assert!(
                r["evidence"] == "client-log" || r["evidence"] == "wire",
                "{r}"
            );
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

fn findings(records: &[Value]) -> Vec<(String, Vec<String>)> {
    let mut f: Vec<_> = records
        .iter()
        .filter(|r| r["type"] == "finding")
        .map(|r| {
            let ids = r["ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| i.to_string())
                })
                .collect();
            (r["kind"].as_str().unwrap().to_owned(), ids)
        })
        .collect();
    f.sort();
    f
}

fn t(a: &str, b: &str, c: &str) -> (String, String, String) {
    (a.into(), b.into(), c.into())
}

fn f(kind: &str, ids: &[&str]) -> (String, Vec<String>) {
    (kind.into(), ids.iter().map(|s| s.to_string()).collect())
}

#[test]
fn claude_code_session() {
    let (r, err, code) = analyze("tests/fixtures/clientlogs/claude-code-session.jsonl");
    assert_eq!(code, Some(2), "the malformed line makes the exit code 2");
    assert!(
        err.contains("claude-code-session.jsonl: line 14: not JSON"),
        "{err}"
    );
    assert_eq!(
        calls(&r),
        [
            t("toolu_01", "read_note", "TOOL_SUCCESS"),
            t("toolu_02", "run_configured_test_scenario", "TOOL_ERROR"),
            t("toolu_03", "run_configured_test_scenario", "JSONRPC_ERROR"),
            t("toolu_04", "slow", "NO_RESPONSE"),
            t("toolu_05", "read_note", "TOOL_SUCCESS"),
            t("toolu_07", "delete_file", "NO_RESPONSE"),
        ]
    );
    let timeout = r.iter().find(|x| x["id"] == "toolu_04").unwrap();
    assert_eq!(timeout["jsonrpc_code"], -32001);
    assert!(
        timeout["notes"]
            .to_string()
            .contains("produced by the client SDK itself"),
        "{timeout}"
    );
    assert_eq!(
        findings(&r),
        [
            f("NON_TERMINAL", &["toolu_04"]),
            f("NON_TERMINAL", &["toolu_07"]),
            f("SUSPICIOUS_SUCCESS", &["toolu_05"]),
        ]
    );
    // The agent reading the same note again later is its choice, not a retry.
    let again = r.iter().find(|x| x["id"] == "toolu_05").unwrap();
    assert_eq!(again["retry_origin"], "reinvocation");
}

#[test]
fn codex_rollout() {
    let (r, err, _) = analyze("tests/fixtures/clientlogs/codex-rollout.jsonl");
    assert!(
        err.contains("codex-rollout.jsonl: line 13: not JSON"),
        "{err}"
    );
    assert_eq!(
        calls(&r),
        [
            t("call_1", "read_note", "TOOL_SUCCESS"),
            t("call_2", "run_configured_test_scenario", "TOOL_ERROR"),
            t("call_9x", "run_configured_test_scenario", "HTTP_ERROR"),
            t("call_4", "slow", "NO_RESPONSE"),
            t("call_5", "run_configured_test_scenario", "JSONRPC_ERROR"),
        ]
    );
    let http = r.iter().find(|x| x["id"] == "call_9x").unwrap();
    assert_eq!(http["http_statuses"], serde_json::json!([503]));
    // 78 s after the 503, with another call in between: in a client log that is the
    // agent calling again, a re-invocation, not a retry.
    let again = r.iter().find(|x| x["id"] == "call_5").unwrap();
    assert_eq!(again["retry_origin"], "reinvocation");
    assert_eq!(again["post_count"], 2);
    assert_eq!(again["server"], "kitchen");
    assert_eq!(findings(&r), [f("NON_TERMINAL", &["call_4"])]);
}

#[test]
fn vscode_output_channel() {
    let (r, err, _) = analyze("tests/fixtures/clientlogs/vscode-mcp-output.log");
    assert!(
        err.contains(
            "vscode-mcp-output.log: line 13: the JSON-RPC message on this line is not valid JSON"
        ),
        "{err}"
    );
    assert_eq!(r[0]["format"], "message-log");
    assert_eq!(
        calls(&r),
        [
            t("2", "read_note", "TOOL_SUCCESS"),
            t("4", "run_configured_test_scenario", "JSONRPC_ERROR"),
            t("5", "run_configured_test_scenario", "TOOL_ERROR"),
            t("6", "read_note", "TOOL_SUCCESS"),
            t("8", "slow", "NO_RESPONSE"),
        ]
    );
    assert_eq!(findings(&r), [f("NON_TERMINAL", &["8"])]);
    let again = r.iter().find(|x| x["id"] == 6).unwrap();
    assert_eq!(again["retry_origin"], "reinvocation");
}

#[test]
fn opentelemetry_spans() {
    let (r, err, _) = analyze("tests/fixtures/clientlogs/otel-spans.jsonl");
    assert!(err.contains("otel-spans.jsonl: line 5: not JSON"), "{err}");
    assert_eq!(
        calls(&r),
        [
            t("1", "read_note", "TOOL_SUCCESS"),
            t("2", "run_configured_test_scenario", "TOOL_ERROR"),
            t("3", "run_configured_test_scenario", "JSONRPC_ERROR"),
            t("4", "slow", "NO_RESPONSE"),
            t("5", "read_note", "TOOL_SUCCESS"),
        ]
    );
    // Spans carry no arguments, so no repeat can be claimed from them.
    assert_eq!(findings(&r), [f("NON_TERMINAL", &["4"])]);
    let started = r.iter().find(|x| x["id"] == "1").unwrap();
    assert_eq!(started["started_at"], "2026-08-10T09:31:00.000Z");
}

#[test]
fn a_directory_of_one_log_of_each_kind() {
    let (r, _, code) = analyze("tests/fixtures/clientlogs");
    assert_eq!(code, Some(2));
    let n = r.iter().filter(|x| x["type"] == "call").count();
    assert_eq!(n, 6 + 5 + 5 + 5 + 2 + 4 + 4);
    let summary = r.last().unwrap();
    assert_eq!(summary["type"], "summary");
    // The generator is skipped, not an error; README.md is not even read.
    assert_eq!(summary["skipped"].as_array().unwrap().len(), 1, "{summary}");
}

fn evidence(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["type"] == "call")
        .map(|r| r["evidence"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn inspector_network_export_goes_through_the_http_classifier() {
    let (r, err, code) =
        analyze("tests/fixtures/clientlogs/inspector-network-kitchen-2026-08-10T09-46-00.json");
    assert_eq!(code, Some(2));
    assert!(
        err.contains("entry 5: array element is not an object"),
        "{err}"
    );
    assert_eq!(r[0]["format"], "json-array");
    assert_eq!(
        calls(&r),
        [
            t("1", "run_configured_test_scenario", "HTTP_ERROR"),
            t("2", "run_configured_test_scenario", "TOOL_ERROR"),
            t("3", "run_configured_test_scenario", "JSONRPC_ERROR"),
            t("4", "slow", "NO_RESPONSE"),
        ]
    );
    // Real HTTP status, headers and bodies: wire evidence, as a HAR would be.
    assert!(evidence(&r).iter().all(|e| e == "wire"));
    let aborted = r
        .iter()
        .find(|x| x["type"] == "call" && x["id"] == 4)
        .unwrap();
    assert!(
        aborted["notes"]
            .to_string()
            .contains("aborted due to timeout"),
        "{aborted}"
    );
    let retried = r
        .iter()
        .find(|x| x["type"] == "call" && x["id"] == 2)
        .unwrap();
    assert_eq!(retried["retry_origin"], "after_refusal");
    assert_eq!(findings(&r), [f("NON_TERMINAL", &["4"])]);
}

#[test]
fn inspector_protocol_export() {
    let (r, _, code) =
        analyze("tests/fixtures/clientlogs/inspector-protocol-kitchen-2026-08-10T09-51-00.json");
    assert_eq!(code, Some(0));
    assert_eq!(
        calls(&r),
        [
            t("1", "read_note", "TOOL_SUCCESS"),
            t("2", "read_note", "TOOL_SUCCESS"),
            t("3", "nope", "JSONRPC_ERROR"),
            t("4", "slow", "NO_RESPONSE"),
        ]
    );
    assert!(evidence(&r).iter().all(|e| e == "client-log"));
    assert_eq!(
        findings(&r),
        [
            f("NON_TERMINAL", &["4"]),
            f("UNEXPLAINED_REPEAT", &["1", "2"])
        ]
    );
}

#[test]
fn conformance_checks_json() {
    let (r, _, code) = analyze("tests/fixtures/clientlogs/conformance-checks.json");
    assert_eq!(code, Some(0));
    assert_eq!(
        calls(&r),
        [
            t("1", "test_simple_text", "TOOL_SUCCESS"),
            t("2", "test_error", "TOOL_ERROR")
        ]
    );
    assert_eq!(findings(&r), []);
}
