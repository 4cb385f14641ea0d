//! `NON_TERMINAL`: a call that never reached a terminal result (STREAM_INCOMPLETE,
//! NO_RESPONSE, or INPUT_REQUIRED with no MRTR follow-up), with the reason. A call
//! the client cancelled is reported at INFO: the client chose to stop waiting,
//! whether it said so with `notifications/cancelled` or, in 2026-07-28, by closing
//! the request's response stream.
//!
//! Fixture: `tests/fixtures/rules/non_terminal.jsonl`.

use super::{Hooks, RuleDoc};
use crate::correlate::facts::CallFacts;
use crate::correlate::Finding;
use crate::model::{End, FindingKind, Outcome, Severity};

pub const DOC: RuleDoc = RuleDoc {
    kind: FindingKind::NonTerminal,
    severity: "MEDIUM; LOW for an unanswered `input_required`; INFO for a call the client cancelled",
    summary: "a call that never reached a terminal result",
    raised_when: "a call that never reached a terminal result: STREAM_INCOMPLETE, NO_RESPONSE, or INPUT_REQUIRED with no MRTR follow-up. The detail says why: the stream closed (by the server or the client), a reset, the session ended (a later 404), the capture ended while in flight, or a cancellation (`notifications/cancelled`, or in 2026-07-28 the client closing the stream), which is no server fault and is INFO; a `notifications/cancelled` sent only after the server had closed or reset the call's stream does not count as one",
    meaning: "A call that never reached a terminal result: STREAM_INCOMPLETE, NO_RESPONSE, or INPUT_REQUIRED without an MRTR follow-up. A cancellation (notifications/cancelled, or in 2026-07-28 the client closing the stream) is recorded as such at INFO, not as a server fault.",
    spec: "MCP 2025-11-25 Basic, Lifecycle (Timeouts) and Utilities, Cancellation; Transports, Streamable HTTP (a disconnect is not a cancellation before 2026-07-28); MCP 2026-07-28 Streamable HTTP, Cancellation (closing the response stream cancels)",
    causes: &[
        "timeouts and proxies that cut or buffer SSE",
        "server crashes",
        "a client that gave up waiting (then it is a cancellation, at INFO)",
        "a client that does not implement MRTR",
    ],
    next: &[
        "find out whether the tool ran before replaying it",
        "look at timeouts and proxies between client and server",
        "for input_required, check the client's MRTR support",
    ],
};

pub const HOOKS: Hooks = Hooks {
    call: Some(call),
    names_only: Some(may_name),
    ..Hooks::NONE
};

/// STREAM_INCOMPLETE and NO_RESPONSE, as each call is judged. INPUT_REQUIRED waits
/// for a follow-up; the judge calls `unfollowed` for those that never got one.
fn call(c: &CallFacts, out: &mut Vec<Finding>) {
    let (why, severity) = match c.outcome {
        Outcome::StreamIncomplete | Outcome::NoResponse if c.cancelled => {
            let how = if c.end == End::ClientClosed && !c.cancel_notified {
                "the client closed the response stream, which cancels in 2026-07-28"
            } else {
                "the client sent notifications/cancelled"
            };
            (
                format!("cancelled by the client ({how}); no server fault"),
                Severity::Info,
            )
        }
        Outcome::StreamIncomplete | Outcome::NoResponse => {
            (c.why.clone().unwrap_or_default(), Severity::Medium)
        }
        _ => return,
    };
    out.push(finding(c, why, severity));
}

/// The outcomes of the calls this rule names (`Hooks::names_only`).
fn may_name(outcome: Outcome) -> bool {
    outcome.is_non_terminal() || outcome == Outcome::InputRequired
}

/// An INPUT_REQUIRED call no MRTR follow-up of its scope and tool came after.
pub fn unfollowed(c: &CallFacts, out: &mut Vec<Finding>) {
    out.push(finding(
        c,
        "input_required was never followed by an MRTR follow-up".to_owned(),
        Severity::Low,
    ));
}

fn finding(c: &CallFacts, why: String, severity: Severity) -> Finding {
    Finding {
        kind: FindingKind::NonTerminal,
        severity,
        scope: c.scope.clone(),
        ids: vec![c.id.clone()],
        calls: vec![c.seq],
        locators: vec![c.locator.clone()],
        detail: format!(
            "{} call {} ({}) has no terminal result: {}",
            c.tool.as_deref().unwrap_or("?"),
            c.id,
            c.outcome,
            why
        ),
    }
}
