//! Retry advice for one call, from what the capture shows: whether the first
//! attempt may have executed (by layer and status) and whether the tool is safe to
//! repeat (its `tools/list` annotations, an untrusted hint: MCP 2025-06-18, schema
//! `ToolAnnotations`). The policy is that of the article "An MCP client can receive HTTP 200 for a tool call while the agent still reports failure":
//! recovery follows the failed layer, whether a
//! final result exists and whether replay is safe, never the status number alone.

pub use crate::correlate::execution::{executed, Executed};
use crate::correlate::{Annotations, Call, RetryOrigin};
use crate::model::Outcome;

/// The annotations in words, and whether they make a repeat safe.
fn safety(a: Option<Annotations>) -> (bool, String) {
    match a {
        None => (
            false,
            "no tools/list in this input annotates the tool, and MCP's defaults make it non-idempotent and destructive".to_owned(),
        ),
        Some(a) if a.read_only == Some(true) => (true, "the tool is annotated read-only".to_owned()),
        Some(a) if a.idempotent == Some(true) => (true, "the tool is annotated idempotent".to_owned()),
        Some(a) if a.destructive == Some(true) => (
            false,
            "the tool is annotated destructive and not idempotent".to_owned(),
        ),
        Some(a) if a.destructive() => (
            false,
            "the tool is not annotated read-only, idempotent or non-destructive, so MCP's defaults make it destructive".to_owned(),
        ),
        Some(_) => (
            false,
            "the tool is not annotated read-only or idempotent".to_owned(),
        ),
    }
}

/// The advice for a call that did not succeed, in one or two sentences.
pub fn retry(c: &Call) -> String {
    let (safe, why) = safety(c.annotations);
    let ev = &c.verdict.evidence;
    let status = ev.http_statuses.last().copied();
    let mut s = match (c.verdict.outcome, executed(c)) {
        (Outcome::ToolSuccess, _) => "Nothing to retry: the call succeeded.".to_owned(),
        (Outcome::InputRequired, _) => "Not a retry: answer the inputRequests and send the MRTR follow-up with inputResponses and the exact requestState, under a new id (MCP 2026-07-28, Patterns §MRTR).".to_owned(),
        (Outcome::ToolError, _) => format!(
            "The tool ran and reported a failure: show the error to the model instead of replaying it; {}.",
            if safe {
                format!("{why}, so a corrected call is harmless")
            } else {
                format!("{why}, so a replay repeats whatever it did before failing")
            }
        ),
        (Outcome::HttpError, Executed::Unlikely) => match status {
            Some(429) => match c.retry_after_ms {
                Some(ms) => format!("Refused before it ran (429): retry after the server's Retry-After ({} s), with backoff.", ms / 1000),
                None => "Refused before it ran (429): retry with exponential backoff and jitter.".to_owned(),
            },
            Some(503) => format!(
                "HTTP 503 most likely refused the request before it ran, but that is not proof{}: {}.",
                c.retry_after_ms.map(|ms| format!(" (Retry-After {} s)", ms / 1000)).unwrap_or_default(),
                if safe {
                    format!("{why}, so retry with backoff")
                } else {
                    format!("{why}; without an idempotency key or server-side de-duplication, do not replay it just because of a 503")
                }
            ),
            Some(401) => "Not authorized: refresh or re-run the authorization flow, then retry (a few times at most; MCP 2025-06-18, Authorization).".to_owned(),
            Some(403) => "Forbidden: if the server asked for a wider scope (insufficient_scope), step up and retry; otherwise fix the permission or Origin first.".to_owned(),
            Some(404) => "HTTP 404: before 2026 this means the session expired, so re-initialize and send the call in the new session (MCP 2025-06-18, Transports §Session Management).".to_owned(),
            Some(s) => format!("HTTP {s} refused the request before it ran: fix the request (headers, Accept, Content-Type, session) before retrying."),
            None => "Fix the transport problem before retrying.".to_owned(),
        },
        (_, Executed::Rejected) => match ev.jsonrpc_code {
            Some(-32020) => "HeaderMismatch: refresh tools/list, then retry with headers that match the body (MCP 2026-07-28, Transports §Streamable HTTP).".to_owned(),
            Some(-32022) => "UnsupportedProtocolVersion: retry with a version from error.data.supported (MCP 2026-07-28, Versioning).".to_owned(),
            Some(-32042) => "URL elicitation required: complete the elicitation, then retry with a new id (MCP 2025-11-25, Client Features §Elicitation, URL mode).".to_owned(),
            _ => "Rejected at the protocol layer, so the tool most likely did not run; the same request will fail the same way: fix it first.".to_owned(),
        },
        (_, Executed::Yes) => format!(
            "The server answered, so the tool probably ran, but its result cannot be read: fix the server or proxy; {}.",
            if safe {
                format!("{why}, so a retry is harmless")
            } else {
                format!("{why}, so do not replay it to get a readable result")
            }
        ),
        (_, _) => {
            let first = match c.verdict.outcome {
                Outcome::NoResponse if c.cancelled => "The client cancelled the call; the tool may still have run".to_owned(),
                Outcome::NoResponse => "No response was recorded, so the tool may have run".to_owned(),
                Outcome::StreamIncomplete => "The stream ended before the final response, so the tool may have run".to_owned(),
                Outcome::JsonrpcError => match ev.jsonrpc_code {
                    Some(code) => format!("Error {code} is not one a server sends before running the tool, so the tool may have run"),
                    None => "The error has no integer code, so the tool may have run".to_owned(),
                },
                _ => format!("HTTP {} came after the request was delivered, so the tool may have run", status.map(|s| s.to_string()).unwrap_or_else(|| "failure".to_owned())),
            };
            if safe {
                format!("{first}; {why}, so a retry is safe: at most two, with exponential backoff and jitter.")
            } else {
                format!("{first}; {why}: do not replay it automatically. Check whether its side effect happened first, or send it with an idempotency key.")
            }
        }
    };
    if c.post_count > 1 {
        let origin = match c.retry_origin {
            RetryOrigin::None => "",
            RetryOrigin::Mrtr => " (an MRTR follow-up)",
            RetryOrigin::Resumption => " (completed by a resumption)",
            RetryOrigin::AfterRefusal => " (after a refusal)",
            RetryOrigin::Protocol => " (a re-send the protocol asks for)",
            RetryOrigin::AfterFailure => " (after an attempt that may have run)",
            RetryOrigin::Unexplained => " (nothing explains it)",
            RetryOrigin::Reinvocation => " (called again later: a new invocation, not a retry)",
        };
        s.push_str(&format!(" This call was attempt {}{origin}.", c.post_count));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// A real call from the correlator (so new `Call` fields need no change here),
    /// then given the verdict under test.
    fn call(
        outcome: Outcome,
        status: Option<u16>,
        code: Option<i64>,
        a: Option<Annotations>,
    ) -> Call {
        let input = concat!(
            r#"{"dir":"c2s","msg":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}}"#,
            "\n"
        );
        let (_, analysis) =
            crate::batch::analyse_reader(input.as_bytes(), &Config::default()).unwrap();
        let mut c = analysis.calls.into_iter().next().unwrap();
        c.verdict.outcome = outcome;
        c.verdict.layer = outcome.layer();
        c.verdict.evidence.http_statuses = status.into_iter().collect();
        c.verdict.evidence.jsonrpc_code = code;
        c.annotations = a;
        c
    }

    const READ_ONLY: Annotations = Annotations {
        read_only: Some(true),
        destructive: None,
        idempotent: None,
    };

    #[test]
    fn whether_the_tool_may_have_run() {
        use Executed::*;
        for (o, status, code, want) in [
            (Outcome::ToolError, Some(200), None, Yes),
            (Outcome::HttpError, Some(503), None, Unlikely),
            (Outcome::HttpError, Some(429), None, Unlikely),
            (Outcome::HttpError, Some(500), None, Maybe),
            (Outcome::HttpError, Some(504), None, Maybe),
            (Outcome::HttpError, Some(501), None, Unlikely),
            (Outcome::HttpError, Some(404), None, Unlikely),
            (Outcome::StreamIncomplete, Some(200), None, Maybe),
            (Outcome::NoResponse, None, None, Maybe),
            (Outcome::JsonrpcError, Some(200), Some(-32602), Rejected),
            (Outcome::JsonrpcError, Some(400), Some(-32020), Rejected),
            (Outcome::JsonrpcError, Some(200), Some(-32603), Maybe),
            (Outcome::InputRequired, Some(200), None, Pending),
        ] {
            assert_eq!(
                executed(&call(o, status, code, None)),
                want,
                "{o} {status:?} {code:?}"
            );
        }
    }

    #[test]
    fn advice_follows_layer_and_annotations() {
        let cut = retry(&call(Outcome::StreamIncomplete, Some(200), None, None));
        assert!(
            cut.contains("may have run") && cut.contains("do not replay"),
            "{cut}"
        );
        let cut = retry(&call(
            Outcome::StreamIncomplete,
            Some(200),
            None,
            Some(READ_ONLY),
        ));
        assert!(cut.contains("a retry is safe"), "{cut}");
        let busy = retry(&call(Outcome::HttpError, Some(503), None, None));
        assert!(
            busy.contains("do not replay it just because of a 503"),
            "{busy}"
        );
        let rl = retry(&call(Outcome::HttpError, Some(429), None, None));
        assert!(rl.contains("Refused before it ran (429)"), "{rl}");
        let mismatch = retry(&call(Outcome::JsonrpcError, Some(400), Some(-32020), None));
        assert!(mismatch.starts_with("HeaderMismatch"), "{mismatch}");
    }
}
