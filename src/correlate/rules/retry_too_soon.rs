//! `RETRY_TOO_SOON`: a retry sooner than the server asked for: a re-send (a retry
//! candidate) before the first response's `Retry-After` (or, for a cut stream, its
//! SSE `retry`) had passed, or a `Last-Event-ID` reconnection sooner than the
//! stream's SSE `retry`.
//!
//! Fixture: `tests/fixtures/rules/retry_too_soon.jsonl`.

use super::{pair_finding, Hooks, Judged, Pair, RuleDoc};
use crate::correlate::observe::Observation;
use crate::correlate::Finding;
use crate::model::{FindingKind, Severity};

pub const DOC: RuleDoc = RuleDoc {
    kind: FindingKind::RetryTooSoon,
    severity: "LOW",
    summary: "a retry sooner than the server's Retry-After or SSE retry asked for",
    raised_when: "a retry candidate sent sooner than the first response's `Retry-After` (or, for a cut stream, its SSE `retry`) asked for, or a `Last-Event-ID` reconnection sooner than the stream's SSE `retry`",
    meaning: "A retry sooner than the first response's Retry-After (or, for a cut stream, its SSE retry field) asked for, or a stream reconnection sooner than the SSE retry field.",
    spec: "MCP 2025-11-25 Transports, Streamable HTTP (resumability: the client MUST wait the retry field before reconnecting); HTML Living Standard, Server-sent events (the retry field); RFC 9110 §10.2.3 (Retry-After; no MCP revision defines it)",
    causes: &[
        "a client retry loop with a fixed short delay",
        "a client that ignores Retry-After and SSE retry",
    ],
    next: &[
        "honour Retry-After and SSE retry in the client",
        "use exponential backoff with jitter",
    ],
};

pub const HOOKS: Hooks = Hooks {
    pair: Some(pair),
    observation: Some(observe),
    ..Hooks::NONE
};

fn pair(p: &Pair<'_>, out: &mut Vec<Finding>) {
    if !p.is_retry_candidate() {
        return;
    }
    let (prev, later) = (p.prev, p.later);
    let (asked, what) = match (prev.retry_after_ms, prev.sse_retry_ms) {
        (Some(ms), _) => (ms, "Retry-After"),
        (None, Some(ms)) if prev.outcome.is_non_terminal() => (ms, "SSE retry"),
        _ => return,
    };
    let (Some(from), Some(to)) = (prev.ended_at.or(prev.started_at), later.started_at) else {
        return;
    };
    let waited = from.millis_until(to);
    if waited < asked as i64 {
        out.push(pair_finding(
            FindingKind::RetryTooSoon,
            Severity::Low,
            prev,
            later,
            format!("re-sent {waited} ms after the response, but {what} asked for {asked} ms"),
        ));
    }
}

fn observe(o: &Observation, _: &Judged, out: &mut Vec<Finding>) {
    let Observation::Reconnect {
        scope,
        call,
        id,
        locators,
        waited_ms,
        asked_ms,
    } = o
    else {
        return;
    };
    out.push(Finding {
        kind: FindingKind::RetryTooSoon,
        severity: Severity::Low,
        scope: scope.clone(),
        ids: vec![id.clone()],
        calls: vec![*call],
        locators: locators.clone(),
        detail: format!(
            "the client reconnected {waited_ms} ms after the stream closed, but its SSE retry asked for {asked_ms} ms"
        ),
    });
}
