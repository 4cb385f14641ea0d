//! `NON_TERMINAL`: a call that never reached a terminal result (STREAM_INCOMPLETE,
//! NO_RESPONSE, or INPUT_REQUIRED with no MRTR follow-up), with the reason. A call
//! the client cancelled is reported at INFO: the client chose to stop waiting,
//! whether it said so with `notifications/cancelled` or, in 2026-07-28, by closing
//! the request's response stream.
//!
//! Fixture: `tests/fixtures/rules/non_terminal.jsonl`.

use super::{Context, RuleDoc};
use crate::correlate::Finding;
use crate::model::{End, FindingKind, Outcome, Severity};
use foldhash::{HashMap, HashMapExt};

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

pub fn check(cx: &Context<'_>, out: &mut Vec<Finding>) {
    // The last MRTR follow-up per (scope, tool): an input_required call before it was
    // followed up. One pass, so a hostile input of many rounds stays linear.
    let mut last_followup: HashMap<(&str, Option<&str>), usize> = HashMap::new();
    for c in cx.calls.iter().filter(|c| c.mrtr_followup) {
        let e = last_followup
            .entry((&*c.scope, c.tool.as_deref()))
            .or_insert(c.seq);
        *e = (*e).max(c.seq);
    }
    for c in cx.calls {
        let followed = || {
            last_followup
                .get(&(&*c.scope, c.tool.as_deref()))
                .is_some_and(|&seq| seq > c.seq)
        };
        let (why, severity) = match c.verdict.outcome {
            Outcome::StreamIncomplete | Outcome::NoResponse if c.cancelled => {
                let how = if c.verdict.evidence.end == End::ClientClosed
                    && !c
                        .verdict
                        .evidence
                        .notes
                        .iter()
                        .any(|n| n.contains("notifications/cancelled"))
                {
                    "the client closed the response stream, which cancels in 2026-07-28"
                } else {
                    "the client sent notifications/cancelled"
                };
                (
                    format!("cancelled by the client ({how}); no server fault"),
                    Severity::Info,
                )
            }
            Outcome::StreamIncomplete | Outcome::NoResponse => (
                c.verdict
                    .evidence
                    .notes
                    .first()
                    .cloned()
                    .unwrap_or_default(),
                Severity::Medium,
            ),
            Outcome::InputRequired if !followed() => (
                "input_required was never followed by an MRTR follow-up".to_owned(),
                Severity::Low,
            ),
            _ => continue,
        };
        out.push(Finding {
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
                c.verdict.outcome,
                why
            ),
        });
    }
}
