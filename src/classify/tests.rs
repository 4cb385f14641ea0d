//! The 11 cases of the article "An MCP client can receive HTTP 200 for a tool call while the agent still reports failure",
//! with the same inputs, then the cases the foundation
//! issue adds (SSE, ids, non-2xx with JSON-RPC errors, result shapes).

use super::*;
use crate::model::{End, Headers, HttpExchange, HttpRequest, HttpResponse};
use serde_json::json;

const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"synthetic","arguments":{}}}"#;

fn good() -> Value {
    json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"ok"}],"isError":false}})
}

fn exchange(status: u16, content_type: &str, body: &str, end: End) -> HttpExchange {
    let mut headers = Headers::default();
    if !content_type.is_empty() {
        headers.push("Content-Type", content_type);
    }
    let body = if content_type.starts_with("text/event-stream") {
        Body::Sse(crate::sse::parse_body(
            body.as_bytes(),
            crate::sse::Budget::default(),
        ))
    } else {
        Body::Bytes(body.as_bytes().to_vec())
    };
    HttpExchange {
        request: HttpRequest {
            method: "POST".into(),
            url: "http://127.0.0.1/mcp".into(),
            body: CALL.as_bytes().to_vec(),
            ..Default::default()
        },
        response: Some(HttpResponse {
            status,
            headers,
            body,
            ts: None,
        }),
        end,
        ..Default::default()
    }
}

fn json_reply(status: u16, body: &Value) -> Verdict {
    classify_http(&exchange(
        status,
        "application/json",
        &body.to_string(),
        End::Complete,
    ))
    .unwrap()
}

fn sse_reply(body: &str, end: End) -> Verdict {
    classify_http(&exchange(200, "text/event-stream", body, end)).unwrap()
}

fn assert_verdict(v: &Verdict, outcome: Outcome, layer: Layer) {
    assert_eq!(
        (v.outcome, v.layer),
        (outcome, layer),
        "evidence: {:#?}",
        v.evidence
    );
}

// --- The seed's 11 cases -------------------------------------------------------------

#[test]
fn seed_01_baseline_complete_is_tool_success() {
    assert_verdict(
        &json_reply(200, &good()),
        Outcome::ToolSuccess,
        Layer::Application,
    );
}

#[test]
fn seed_02_503_then_200() {
    let first = json_reply(503, &json!({"note":"synthetic outage"}));
    assert_verdict(&first, Outcome::HttpError, Layer::Transport);
    assert_eq!(first.evidence.http_statuses, [503]);
    assert_verdict(
        &json_reply(200, &good()),
        Outcome::ToolSuccess,
        Layer::Application,
    );
}

#[test]
fn seed_03_http_200_jsonrpc_error() {
    let v = json_reply(
        200,
        &json!({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"synthetic invalid params"}}),
    );
    assert_verdict(&v, Outcome::JsonrpcError, Layer::Protocol);
    assert_eq!(v.evidence.jsonrpc_code, Some(-32602));
    assert_eq!(
        v.evidence.error_message.as_deref(),
        Some("synthetic invalid params")
    );
}

#[test]
fn seed_04_http_200_tool_is_error() {
    let v = json_reply(
        200,
        &json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"failed"}],"isError":true}}),
    );
    assert_verdict(&v, Outcome::ToolError, Layer::Application);
    assert_eq!(v.evidence.is_error, Some(true));
    assert_eq!(v.evidence.error_message.as_deref(), Some("failed"));
}

#[test]
fn seed_05_http_500_with_success_body_is_http_error() {
    let v = json_reply(500, &good());
    assert_verdict(&v, Outcome::HttpError, Layer::Transport);
    assert_eq!(v.evidence.http_statuses, [500]);
}

#[test]
fn seed_06_malformed_json() {
    let v = classify_http(&exchange(
        200,
        "application/json",
        "{unclosed",
        End::Complete,
    ))
    .unwrap();
    assert_verdict(&v, Outcome::MalformedJson, Layer::Protocol);
}

#[test]
fn seed_07_result_and_error_together() {
    let mut body = good();
    body["error"] = json!({"code":-32602,"message":"synthetic invalid params"});
    assert_verdict(
        &json_reply(200, &body),
        Outcome::InvalidEnvelope,
        Layer::Protocol,
    );
}

#[test]
fn seed_08_wrong_response_id() {
    let mut body = good();
    body["id"] = json!(99);
    let v = json_reply(200, &body);
    assert_verdict(&v, Outcome::InvalidEnvelope, Layer::Protocol);
    assert_eq!(v.evidence.stray_ids, [Id::number(99)]);
}

#[test]
fn seed_09_input_required() {
    let v = json_reply(
        200,
        &json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"approval":{"method":"elicitation/create","params":{"mode":"form","message":"synthetic input"}}}}}),
    );
    assert_verdict(&v, Outcome::InputRequired, Layer::Interaction);
    assert_eq!(v.evidence.result_type.as_deref(), Some("input_required"));
}

#[test]
fn seed_10_legacy_result_without_result_type() {
    let v = json_reply(
        200,
        &json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"legacy ok"}],"isError":false}}),
    );
    assert_verdict(&v, Outcome::ToolSuccess, Layer::Application);
    assert_eq!(v.evidence.result_type, None);
}

#[test]
fn seed_11_content_not_an_array() {
    let v = json_reply(
        200,
        &json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":"not-an-array","isError":false}}),
    );
    assert_verdict(&v, Outcome::InvalidToolResult, Layer::Protocol);
}

// --- SSE -----------------------------------------------------------------------------

const PROGRESS: &str = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n";

#[test]
fn sse_progress_then_result_is_success() {
    let body = format!("{PROGRESS}{PROGRESS}event: message\ndata: {}\n\n", good());
    let v = sse_reply(&body, End::Complete);
    assert_verdict(&v, Outcome::ToolSuccess, Layer::Application);
    assert_eq!(v.evidence.sse_events, 3);
    assert_eq!(
        v.evidence.notifications,
        ["notifications/progress", "notifications/progress"]
    );
}

#[test]
fn sse_ending_before_final_response_is_stream_incomplete() {
    let v = sse_reply(PROGRESS, End::Closed);
    assert_verdict(&v, Outcome::StreamIncomplete, Layer::Transport);
    assert_eq!(v.evidence.end, End::Closed);
    // Even a clean close without the response is incomplete.
    let v = sse_reply(PROGRESS, End::Complete);
    assert_verdict(&v, Outcome::StreamIncomplete, Layer::Transport);
}

#[test]
fn sse_cut_inside_the_final_event_is_stream_incomplete() {
    let body = format!("{PROGRESS}data: {}", good());
    let v = sse_reply(&body, End::Closed);
    assert_verdict(&v, Outcome::StreamIncomplete, Layer::Transport);
    assert!(v.evidence.says("unterminated"));
}

#[test]
fn sse_final_jsonrpc_error() {
    let body = format!(
        "{PROGRESS}data: {}\n\n",
        json!({"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}})
    );
    let v = sse_reply(&body, End::Complete);
    assert_verdict(&v, Outcome::JsonrpcError, Layer::Protocol);
    assert_eq!(v.evidence.jsonrpc_code, Some(-32603));
}

#[test]
fn sse_data_not_json_is_malformed() {
    let v = sse_reply("data: {not json\n\n", End::Complete);
    assert_verdict(&v, Outcome::MalformedJson, Layer::Protocol);
}

#[test]
fn sse_response_with_another_id_is_invalid_envelope_with_stray() {
    let mut other = good();
    other["id"] = json!(2);
    let v = sse_reply(&format!("data: {other}\n\n"), End::Complete);
    assert_verdict(&v, Outcome::InvalidEnvelope, Layer::Protocol);
    assert_eq!(v.evidence.stray_ids, [Id::number(2)]);
}

#[test]
fn sse_stray_then_right_response_is_success_with_stray_kept() {
    let mut other = good();
    other["id"] = json!(2);
    let v = sse_reply(
        &format!("data: {other}\n\ndata: {}\n\n", good()),
        End::Complete,
    );
    assert_verdict(&v, Outcome::ToolSuccess, Layer::Application);
    assert_eq!(v.evidence.stray_ids, [Id::number(2)]);
}

#[test]
fn sse_priming_event_is_not_malformed() {
    let body = format!("id: abc\nretry: 1000\ndata: \n\ndata: {}\n\n", good());
    assert_verdict(
        &sse_reply(&body, End::Complete),
        Outcome::ToolSuccess,
        Layer::Application,
    );
}

#[test]
fn id_type_drift_is_invalid_envelope() {
    let mut body = good();
    body["id"] = json!("1");
    let v = json_reply(200, &body);
    assert_verdict(&v, Outcome::InvalidEnvelope, Layer::Protocol);
    assert!(v.evidence.notes[0].contains("only in type"));
}

// --- Status and body combinations ----------------------------------------------------

#[test]
fn status_400_with_jsonrpc_error_for_same_id_keeps_status() {
    let v = json_reply(
        400,
        &json!({"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"HeaderMismatch"}}),
    );
    assert_verdict(&v, Outcome::JsonrpcError, Layer::Protocol);
    assert_eq!(v.evidence.http_statuses, [400]);
    assert_eq!(v.evidence.jsonrpc_code, Some(-32020));
}

#[test]
fn status_404_with_null_id_error_is_http_error() {
    let v = json_reply(
        404,
        &json!({"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}),
    );
    assert_verdict(&v, Outcome::HttpError, Layer::Transport);
    assert_eq!(v.evidence.jsonrpc_code, Some(-32001));
}

#[test]
fn no_response_at_all() {
    let mut x = exchange(200, "application/json", "", End::Reset);
    x.response = None;
    let v = classify_http(&x).unwrap();
    assert_verdict(&v, Outcome::NoResponse, Layer::Transport);
}

#[test]
fn unknown_result_type_is_invalid_tool_result() {
    let v = json_reply(
        200,
        &json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"eventually","content":[]}}),
    );
    assert_verdict(&v, Outcome::InvalidToolResult, Layer::Protocol);
}

#[test]
fn structured_content_of_any_type_is_accepted() {
    for sc in [
        json!(42),
        json!("text"),
        json!([1, 2]),
        json!(null),
        json!({"a": 1}),
    ] {
        let v = json_reply(
            200,
            &json!({"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":sc}}),
        );
        assert_verdict(&v, Outcome::ToolSuccess, Layer::Application);
    }
}

#[test]
fn is_error_not_boolean_is_invalid_tool_result() {
    let v = json_reply(
        200,
        &json!({"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":"yes"}}),
    );
    assert_verdict(&v, Outcome::InvalidToolResult, Layer::Protocol);
}

#[test]
fn wrong_jsonrpc_version_and_bad_error_object() {
    let v = json_reply(
        200,
        &json!({"jsonrpc":"1.0","id":1,"result":{"content":[]}}),
    );
    assert_verdict(&v, Outcome::InvalidEnvelope, Layer::Protocol);
    let v = json_reply(
        200,
        &json!({"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}),
    );
    assert_verdict(&v, Outcome::InvalidEnvelope, Layer::Protocol);
    let v = json_reply(200, &json!({"id":1,"result":{}}));
    assert_verdict(&v, Outcome::InvalidEnvelope, Layer::Protocol);
}

#[test]
fn two_json_values_in_one_body() {
    let b = good().to_string();
    let v = classify_http(&exchange(
        200,
        "application/json",
        &format!("{b}\n{b}"),
        End::Complete,
    ))
    .unwrap();
    assert_verdict(&v, Outcome::InvalidEnvelope, Layer::Protocol);
}

#[test]
fn json_body_cut_short_is_stream_incomplete() {
    let b = good().to_string();
    let v = classify_http(&exchange(200, "application/json", &b[..20], End::Closed)).unwrap();
    assert_verdict(&v, Outcome::StreamIncomplete, Layer::Transport);
}

#[test]
fn empty_200_body_is_malformed_json() {
    let v = classify_http(&exchange(200, "application/json", "", End::Complete)).unwrap();
    assert_verdict(&v, Outcome::MalformedJson, Layer::Protocol);
}

#[test]
fn html_200_is_malformed_json_with_its_content_type_noted() {
    let v = classify_http(&exchange(
        200,
        "text/html",
        "<html>login</html>",
        End::Complete,
    ))
    .unwrap();
    assert_verdict(&v, Outcome::MalformedJson, Layer::Protocol);
    assert!(v.evidence.says("text/html"), "{:?}", v.evidence.notes);
    assert_eq!(v.evidence.content_type.as_deref(), Some("text/html"));
}

#[test]
fn html_200_cut_short_is_stream_incomplete() {
    let v = classify_http(&exchange(200, "text/html", "<html>lo", End::Closed)).unwrap();
    assert_verdict(&v, Outcome::StreamIncomplete, Layer::Transport);
}

#[test]
fn accepted_202_to_a_request_is_http_error() {
    let v = classify_http(&exchange(202, "", "", End::Complete)).unwrap();
    assert_verdict(&v, Outcome::HttpError, Layer::Transport);
}

#[test]
fn batch_body_finds_its_response() {
    let body = format!(
        "[{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{}}}},{}]",
        good()
    );
    let v = classify_http(&exchange(200, "application/json", &body, End::Complete)).unwrap();
    assert_verdict(&v, Outcome::ToolSuccess, Layer::Application);
    assert_eq!(v.evidence.stray_ids, [Id::number(7)]);
}

#[test]
fn notification_post_is_not_a_call() {
    let mut x = exchange(202, "", "", End::Complete);
    x.request.body = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
    assert!(classify_http(&x).is_none());
}

#[test]
fn stdio_reply_and_missing_reply() {
    let req = Message::parse(CALL).unwrap();
    let items = crate::jsonrpc::decode_text(&good().to_string(), Place::Body, None, None);
    let leg = Leg {
        exchange: None,
        items: items.iter().collect(),
        end: End::Complete,
    };
    let v = classify(&req, &[leg], Options::default());
    assert_verdict(&v, Outcome::ToolSuccess, Layer::Application);
    let empty = Leg {
        exchange: None,
        items: vec![],
        end: End::CaptureEnded,
    };
    let v = classify(&req, &[empty], Options::default());
    assert_verdict(&v, Outcome::NoResponse, Layer::Transport);
}

#[test]
fn deeply_nested_results_are_judged_without_recursion() {
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let v = classify_http(&exchange(
        200,
        "application/json",
        &format!(r#"{{"jsonrpc":"2.0","id":1,"result":{deep}}}"#),
        End::Complete,
    ))
    .unwrap();
    assert_verdict(&v, Outcome::InvalidToolResult, Layer::Protocol);
    let v = classify_http(&exchange(
        200,
        "application/json",
        &format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{deep}]}}}}"#),
        End::Complete,
    ))
    .unwrap();
    assert_verdict(&v, Outcome::ToolSuccess, Layer::Application);
}

#[test]
fn error_data_past_its_bound_is_kept_as_the_start_of_its_json() {
    let small = json!({"trace": "short", "n": 1});
    assert_eq!(kept_data(&small), small);
    assert_eq!(kept_data(&json!(7)), json!(7));
    let big = json!({"trace": "d".repeat(5000)});
    let Value::String(k) = kept_data(&big) else {
        panic!("not a string")
    };
    assert!(
        k.starts_with(r#"{"trace":"ddd"#) && k.len() <= crate::text::KEPT_TEXT,
        "{k}"
    );
    assert!(
        k.contains(&format!("…[{} bytes, #", big.to_string().len())),
        "{k}"
    );
    let Value::String(s) = kept_data(&json!("e".repeat(5000))) else {
        panic!("not a string")
    };
    assert!(s.starts_with("eee") && s.len() <= crate::text::KEPT_TEXT);
}
