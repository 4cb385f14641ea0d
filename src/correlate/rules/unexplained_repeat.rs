//! `UNEXPLAINED_REPEAT`: a retry candidate that nothing explains. A retry candidate
//! is the same `tools/call` (endpoint, tool, canonical arguments) sent again while
//! the earlier attempt was in flight, within the retry window after it failed, or as
//! a double dispatch (moments later, no other call of the scope in between). The
//! same call made later after a terminal result, with other activity in between, is
//! a re-invocation: counted in the summary, never a finding. Explanations: an MRTR
//! follow-up, a re-send the protocol asks for (-32020, -32022, -32042, 401, 403, a
//! 404 that ended the session), a refusal that says the request did not run (429,
//! 503, 4xx without a JSON-RPC error, 501, 505), and a retry of a safe tool after an
//! attempt whose effect is unknown. An unsafe one of those is `UNSAFE_REPLAY`.
//!
//! Fixture: `tests/fixtures/rules/unexplained_repeat.jsonl`.

use super::{pair_finding, Hooks, Pair, RuleDoc};
use crate::correlate::attempts::origin;
use crate::correlate::{Annotations, Finding, RetryOrigin};
use crate::model::{FindingKind, Severity};

pub const DOC: RuleDoc = RuleDoc {
    kind: FindingKind::UnexplainedRepeat,
    severity: "LOW for read-only or idempotent tools, MEDIUM by default, HIGH for destructive tools or a re-sent id",
    summary: "the same tools/call sent again soon, with nothing in the protocol to explain it",
    raised_when: "a retry candidate (the same tool and canonical arguments sent again while the first was in flight, within the retry window after it failed, or as a double dispatch with no other call in between) that no protocol mechanism or refusal explains. A later call after a terminal result, with other activity in between, is a re-invocation: counted, never a finding",
    meaning: "The same tools/call (tool name and canonical arguments) was sent again soon after the first, with nothing in the protocol to explain it: while the first was still in flight, soon after it failed, or twice in a row moments apart (a double dispatch). Calling the same tool again later, after a result and other activity, is a re-invocation and is not reported.",
    spec: "MCP 2025-11-25 Basic (request ids); Lifecycle (Timeouts); Transports, Streamable HTTP (resumption is a GET with Last-Event-ID, never a re-POST); MCP 2026-07-28 Streamable HTTP (re-issue after a broken stream, MRTR follow-ups)",
    causes: &[
        "an SDK or HTTP library retry",
        "a proxy retransmitting a request",
        "a UI or agent loop that dispatched the same call twice",
        "a user pressing retry",
    ],
    next: &[
        "find who re-sent it: compare the two requests' headers and timing",
        "add idempotency keys or server-side de-duplication for writes",
        "check the retry_origin and post_count of the calls",
    ],
};

/// The tool's annotations in words.
pub fn describe(a: Option<Annotations>) -> &'static str {
    let Some(a) = a else {
        return "not annotated in any tools/list of this input, so by MCP's defaults not idempotent and possibly destructive";
    };
    if a.read_only == Some(true) {
        "annotated read-only"
    } else if a.idempotent == Some(true) {
        "annotated idempotent"
    } else if a.destructive == Some(true) {
        "annotated destructive"
    } else if a == Annotations::default() {
        "listed without annotations, so by MCP's defaults not idempotent and possibly destructive"
    } else {
        "not annotated read-only or idempotent"
    }
}

pub const HOOKS: Hooks = Hooks {
    pair: Some(pair),
    ..Hooks::NONE
};

fn pair(p: &Pair<'_>, out: &mut Vec<Finding>) {
    let (prev, later) = (p.prev, p.later);
    if !p.is_retry_candidate() || origin(p) != RetryOrigin::Unexplained {
        return;
    }
    let ann = later.annotations.unwrap_or_default();
    let same_id = prev.id == later.id && prev.scope == later.scope;
    let severity = if same_id || (ann.destructive == Some(true) && ann.read_only != Some(true)) {
        Severity::High
    } else if ann.safe_to_repeat() {
        Severity::Low
    } else {
        Severity::Medium
    };
    out.push(pair_finding(
        FindingKind::UnexplainedRepeat,
        severity,
        prev,
        later,
        format!(
            "{} with the same arguments was sent again {}, with nothing in the protocol to explain it (the tool is {}){}",
            later.tool.as_deref().unwrap_or("?"),
            p.relation.describe(prev),
            describe(later.annotations),
            if same_id { "; the same id was re-sent" } else { "" }
        ),
    ));
}
