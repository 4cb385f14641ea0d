//! Verdicts for calls seen only in a client's own log (Claude Code, Codex,
//! OpenTelemetry). A client log shows what the client concluded, not what crossed
//! the wire: a result object still goes through the shared classifier; error text is
//! mapped to the closest outcome, and errors the client made up itself (its own
//! timeout, a dropped stream) are never counted as a server's JSON-RPC error.

use super::{classify, Evidence, Leg, Options, Verdict};
use crate::jsonrpc::{decode_text, Message, Place};
use crate::model::{ClientCall, ClientResult, End, Outcome};
use serde_json::{json, Value};

/// JSON-RPC codes that SDK clients synthesize locally (the TypeScript and Python SDKs' error codes: TS/PY
/// -32001 request timeout, PY -32000 connection closed).
const CLIENT_CODES: &[i64] = &[-32001, -32000];

/// `MCP error -32602: Invalid params` → (-32602, "Invalid params").
pub fn mcp_error_code(text: &str) -> Option<(i64, String)> {
    let i = text.find("MCP error ")?;
    let rest = &text[i + "MCP error ".len()..];
    let end = rest
        .find(|c: char| c != '-' && !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let code = rest[..end].parse::<i64>().ok()?;
    let msg = rest[end..].trim_start_matches(':').trim().to_owned();
    Some((code, msg))
}

/// An HTTP status named in error text (`http 503`, `status code 502`, `HTTP 429`).
fn http_status_in(text: &str) -> Option<u16> {
    let lower = text.to_ascii_lowercase();
    for marker in [
        "status code ",
        "http status ",
        "http ",
        "status: ",
        "status ",
    ] {
        if let Some(i) = lower.find(marker) {
            let digits: String = lower[i + marker.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if digits.len() == 3 {
                if let Ok(s) = digits.parse::<u16>() {
                    if (100..600).contains(&s) {
                        return Some(s);
                    }
                }
            }
        }
    }
    None
}

/// Maps error text from a client to (outcome, note).
fn from_error_text(text: &str, is_tool_result: bool, ev: &mut Evidence) -> Outcome {
    let lower = text.to_ascii_lowercase();
    if let Some((code, msg)) = mcp_error_code(text) {
        ev.jsonrpc_code = Some(code);
        ev.error_message = Some(msg);
        if CLIENT_CODES.contains(&code) {
            ev.notes.push(format!(
                "error {code} is produced by the client SDK itself (a timeout or a lost connection), not received from the server"
            ));
            return if lower.contains("timed out") || lower.contains("timeout") {
                Outcome::NoResponse
            } else {
                Outcome::StreamIncomplete
            };
        }
        ev.notes.push(format!(
            "the client relayed JSON-RPC error {code} from the server"
        ));
        return Outcome::JsonrpcError;
    }
    ev.error_message = Some(crate::jsonrpc::excerpt(text));
    let client_made = |ev: &mut Evidence, what: &str| {
        ev.notes.push(format!(
            "the client reported {what}; this error was produced by the client, not the server"
        ));
    };
    if lower.contains("timed out") || lower.contains("timeout") {
        client_made(ev, "a timeout");
        return Outcome::NoResponse;
    }
    if (lower.contains("sse") || lower.contains("stream"))
        && (lower.contains("ended") || lower.contains("closed") || lower.contains("disconnect"))
    {
        client_made(ev, "a stream that ended without a response");
        return Outcome::StreamIncomplete;
    }
    if let Some(status) = http_status_in(text) {
        ev.http_statuses.push(status);
        if !(200..300).contains(&status) {
            ev.notes.push(format!("the client reported HTTP {status}"));
            return Outcome::HttpError;
        }
    }
    if lower.contains("session terminated") || lower.contains("session not found") {
        client_made(ev, "that its session was gone");
        return Outcome::NoResponse;
    }
    for marker in [
        "econnrefused",
        "econnreset",
        "fetch failed",
        "socket hang up",
        "connection closed",
        "connection refused",
        "broken pipe",
    ] {
        if lower.contains(marker) {
            client_made(ev, "a lost connection");
            return Outcome::NoResponse;
        }
    }
    if is_tool_result {
        // An MCP tool_result flagged as an error with no sign of a transport or
        // protocol failure: the tool's own isError.
        ev.is_error = Some(true);
        return Outcome::ToolError;
    }
    ev.notes.push(
        "the client reported an error and no result; nothing says whether the server answered"
            .to_owned(),
    );
    Outcome::NoResponse
}

fn verdict(outcome: Outcome, evidence: Evidence) -> Verdict {
    Verdict {
        outcome,
        layer: outcome.layer(),
        evidence: Box::new(evidence),
    }
}

/// Classifies one call from a client log.
pub fn classify_client(c: &ClientCall) -> Verdict {
    let mut ev = Evidence {
        end: End::Complete,
        ..Evidence::default()
    };
    let source_note = format!(
        "from a {} log: what the client concluded, not what crossed the wire",
        c.source
    );
    let mut v = match &c.result {
        ClientResult::Result(json_text) => {
            let mut result: Value = serde_json::from_str(json_text).unwrap_or(Value::Null);
            // Some clients keep the result in snake_case; the MCP names are camelCase.
            if let Some(obj) = result.as_object_mut() {
                for (snake, camel) in [
                    ("is_error", "isError"),
                    ("structured_content", "structuredContent"),
                ] {
                    if !obj.contains_key(camel) {
                        if let Some(v) = obj.remove(snake) {
                            obj.insert(camel.to_owned(), v);
                        }
                    }
                }
            }
            let id = json!(c.call_id);
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": c.tool}});
            let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
            let req = Message::parse(&request.to_string()).unwrap_or_default();
            let items = decode_text(&response.to_string(), Place::Body, None, c.ended);
            let leg = Leg {
                exchange: None,
                items: items.iter().collect(),
                end: End::Complete,
            };
            classify(&req, &[leg], Options::default())
        }
        ClientResult::Text { text, is_error } => {
            ev.excerpt = Some(crate::jsonrpc::excerpt(text));
            if *is_error {
                let o = from_error_text(text, true, &mut ev);
                verdict(o, ev)
            } else {
                ev.is_error = Some(false);
                ev.result_text = Some(crate::jsonrpc::excerpt(text));
                verdict(Outcome::ToolSuccess, ev)
            }
        }
        ClientResult::Error(text) => {
            ev.excerpt = Some(crate::jsonrpc::excerpt(text));
            let o = if let Some(code) = c.jsonrpc_code {
                ev.jsonrpc_code = Some(code);
                ev.error_message = Some(crate::jsonrpc::excerpt(text));
                if CLIENT_CODES.contains(&code) {
                    ev.notes
                        .push(format!("error {code} is produced by the client SDK itself"));
                    Outcome::NoResponse
                } else {
                    Outcome::JsonrpcError
                }
            } else {
                from_error_text(text, false, &mut ev)
            };
            verdict(o, ev)
        }
        ClientResult::Missing => {
            ev.notes
                .push("the log shows the call but no result for it".to_owned());
            verdict(Outcome::NoResponse, ev)
        }
    };
    v.evidence.notes.push(source_note);
    v.evidence.responded_at = c.ended;
    v
}

/// True when result text reads like an error although the call was a success.
/// Only the first 200 characters are read; letters compare without ASCII case.
pub fn reads_like_error(text: &str) -> bool {
    const STARTS: &[&str] = &[
        "error",
        "failed",
        "failure",
        "exception",
        "fatal",
        "{\"error\"",
        "unauthorized",
        "forbidden",
        "invalid ",
    ];
    const ANYWHERE: &[&str] = &[
        "traceback (most recent call last)",
        "permission denied",
        "exception:",
        "stack trace:",
        "internal server error",
    ];
    // Built once: this runs on every successful call's text. Each pattern is looked
    // for with a vectorised substring search in a lower-cased copy of the head on
    // the stack: a case-insensitive automaton walked byte by byte cost several
    // times as much.
    static SEARCH: std::sync::LazyLock<Vec<memchr::memmem::Finder<'static>>> =
        std::sync::LazyLock::new(|| ANYWHERE.iter().map(memchr::memmem::Finder::new).collect());
    let text = text.trim_start();
    let head = match text.as_bytes().get(..200) {
        None => text,
        // 200 ASCII bytes are 200 characters; only other text is walked by character.
        Some(first) if first.is_ascii() => &text[..200],
        Some(_) => match text.char_indices().nth(200) {
            Some((end, _)) => &text[..end],
            None => text,
        },
    };
    let starts = |m: &&str| {
        head.as_bytes()
            .get(..m.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(m.as_bytes()))
    };
    if STARTS.iter().any(starts) {
        return true;
    }
    // 200 characters are at most 800 bytes.
    let mut lower = [0u8; 800];
    let lower = &mut lower[..head.len()];
    lower.copy_from_slice(head.as_bytes());
    lower.make_ascii_lowercase();
    SEARCH.iter().any(|f| f.find(lower).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(result: ClientResult) -> ClientCall {
        ClientCall {
            source: "test",
            call_id: "c1".into(),
            session: None,
            server: Some("s".into()),
            tool: "t".into(),
            arguments: Some("{}".into()),
            result,
            started: None,
            ended: None,
            jsonrpc_code: None,
        }
    }

    fn outcome(r: ClientResult) -> Outcome {
        classify_client(&call(r)).outcome
    }

    #[test]
    fn maps_what_clients_write() {
        let text = |t: &str, e: bool| ClientResult::Text {
            text: t.into(),
            is_error: e,
        };
        assert_eq!(outcome(text("ok", false)), Outcome::ToolSuccess);
        assert_eq!(outcome(text("disk full", true)), Outcome::ToolError);
        assert_eq!(
            outcome(text("MCP error -32602: Invalid params", true)),
            Outcome::JsonrpcError
        );
        assert_eq!(
            outcome(text("MCP error -32001: Request timed out", true)),
            Outcome::NoResponse
        );
        assert_eq!(
            outcome(text("SSE stream ended without a response", true)),
            Outcome::StreamIncomplete
        );
        assert_eq!(
            outcome(ClientResult::Error("tool call failed: http 503".into())),
            Outcome::HttpError
        );
        assert_eq!(
            outcome(ClientResult::Error("Session terminated".into())),
            Outcome::NoResponse
        );
        assert_eq!(outcome(ClientResult::Missing), Outcome::NoResponse);
        assert_eq!(
            outcome(ClientResult::Result(
                r#"{"content":[{"type":"text","text":"x"}],"isError":true}"#.into()
            )),
            Outcome::ToolError
        );
        assert_eq!(
            outcome(ClientResult::Result(r#"{"content":"nope"}"#.into())),
            Outcome::InvalidToolResult
        );
        let v = classify_client(&call(text("MCP error -32001: Request timed out", true)));
        assert_eq!(v.evidence.jsonrpc_code, Some(-32001));
        assert!(v
            .evidence
            .notes
            .iter()
            .any(|n| n.contains("produced by the client")));
        assert!(v
            .evidence
            .notes
            .iter()
            .any(|n| n.contains("not what crossed the wire")));
    }

    #[test]
    fn error_looking_text() {
        assert!(reads_like_error("Error: file not found"));
        assert!(reads_like_error(
            "  failed to open /etc/x: permission denied"
        ));
        assert!(reads_like_error(
            "Traceback (most recent call last):\n  File"
        ));
        assert!(reads_like_error("{\"error\": \"boom\"}"));
        assert!(!reads_like_error("3 results for mcp"));
        assert!(reads_like_error("\n  FATAL: disk full"));
        assert!(reads_like_error("Résumé — Internal Server Error"));
        // Only the first 200 characters count, however many bytes they take.
        let far = format!("{}permission denied", "é".repeat(183));
        assert!(reads_like_error(&far));
        let too_far = format!("{}permission denied", "é".repeat(184));
        assert!(!reads_like_error(&too_far));
        let ascii = format!("{}permission denied", "x".repeat(183));
        assert!(reads_like_error(&ascii) && !reads_like_error(&format!("x{ascii}")));
    }

    proptest::proptest! {
        /// Equal to the plain reading: any pattern in the lower-cased first 200
        /// characters, whatever the case, the characters around it and their width.
        #[test]
        fn error_looking_text_is_the_lower_cased_head_searched(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "Permission DENIED", "stack trace:", "internal server error", "é", "x",
                    " ", "Exception:", "traceback (most recent call last)", "ERROR", "ı",
                ]),
                0..40,
            ),
            flip in proptest::collection::vec(proptest::bool::ANY, 0..400),
        ) {
            let text: String = parts
                .concat()
                .chars()
                .zip(flip.iter().chain(std::iter::repeat(&false)))
                .map(|(c, &f)| if f { c.to_ascii_uppercase() } else { c })
                .collect();
            let trimmed = text.trim_start();
            let head: String = trimmed.chars().take(200).collect::<String>().to_ascii_lowercase();
            let starts = ["error", "failed", "failure", "exception", "fatal", "{\"error\"",
                "unauthorized", "forbidden", "invalid "];
            let anywhere = ["traceback (most recent call last)", "permission denied",
                "exception:", "stack trace:", "internal server error"];
            let expect = starts.iter().any(|p| head.starts_with(p))
                || anywhere.iter().any(|p| head.contains(p));
            proptest::prop_assert_eq!(reads_like_error(&text), expect, "{:?}", text);
        }
    }
}
