//! Repeats: the same `tools/call` (tool name + canonical arguments) sent again.
//! Each repeat is explained by the protocol, by a refusal, or not at all, and a
//! repeat of an attempt that may already have run is an UNSAFE_REPLAY unless the
//! tool says it is safe to repeat (MCP 2025-06-18, schema `ToolAnnotations`;
//! `docs/findings.md`). Also RETRY_TOO_SOON against `Retry-After` and SSE `retry`.

use super::{Analysis, Annotations, Call, Finding, RetryOrigin};
use crate::model::{FindingKind, Outcome, Severity};
use std::collections::HashMap;

/// Could the attempt have executed the tool without the client seeing a result?
fn may_have_run(c: &Call) -> bool {
    match c.verdict.outcome {
        Outcome::NoResponse | Outcome::StreamIncomplete => true,
        Outcome::HttpError => c
            .verdict
            .evidence
            .http_statuses
            .last()
            .is_some_and(|s| matches!(s, 500 | 502 | 504)),
        _ => false,
    }
}

/// Why the protocol (or a refusal) says `later` may re-send `prev`, if it does.
fn explanation(prev: &Call, later: &Call) -> Option<(RetryOrigin, String)> {
    let ev = &prev.verdict.evidence;
    let status = ev.http_statuses.last().copied();
    if later.mrtr_followup && prev.verdict.outcome == Outcome::InputRequired {
        return Some((
            RetryOrigin::Mrtr,
            "an MRTR follow-up to input_required".to_owned(),
        ));
    }
    if prev.verdict.outcome == Outcome::JsonrpcError {
        match ev.jsonrpc_code {
            Some(-32020) => {
                return Some((
                    RetryOrigin::Protocol,
                    "re-sent after -32020 HeaderMismatch".to_owned(),
                ))
            }
            Some(-32022) => {
                return Some((
                    RetryOrigin::Protocol,
                    "re-sent after -32022 UnsupportedProtocolVersion".to_owned(),
                ))
            }
            Some(-32042) => {
                return Some((
                    RetryOrigin::Protocol,
                    "re-sent after -32042 URL elicitation".to_owned(),
                ))
            }
            _ => {}
        }
    }
    match status {
        Some(401) => {
            return Some((
                RetryOrigin::AfterRefusal,
                "re-sent after 401 (re-authorization)".to_owned(),
            ))
        }
        Some(403) => {
            return Some((
                RetryOrigin::AfterRefusal,
                "re-sent after 403 (scope step-up)".to_owned(),
            ))
        }
        Some(404) if prev.scope != later.scope => {
            return Some((
                RetryOrigin::Protocol,
                "replayed after 404 session expiry and a new session".to_owned(),
            ))
        }
        Some(429) => {
            return Some((
                RetryOrigin::AfterRefusal,
                "re-sent after 429 Too Many Requests".to_owned(),
            ))
        }
        Some(503) => {
            return Some((
                RetryOrigin::AfterRefusal,
                "re-sent after 503 Service Unavailable".to_owned(),
            ))
        }
        Some(s)
            if prev.verdict.outcome == Outcome::HttpError
                && matches!(s, 400 | 404 | 405 | 406 | 409 | 413 | 415 | 421 | 425) =>
        {
            return Some((
                RetryOrigin::AfterRefusal,
                format!("re-sent after {s}, which refuses the request before it runs"),
            ));
        }
        _ => {}
    }
    if may_have_run(prev) {
        let why = if prev.cancelled {
            "re-sent after the client cancelled it"
        } else if prev.protocol_version.as_deref() >= Some("2026-07-28") && prev.id != later.id {
            "re-issued with a new id after a broken stream (2026-07-28 requires it)"
        } else {
            "re-sent after an attempt that got no terminal result"
        };
        return Some((RetryOrigin::AfterFailure, why.to_owned()));
    }
    None
}

pub fn run(out: &mut Analysis, annotations: &HashMap<String, Annotations>) {
    // Group by borrowed keys, then let the map go before the calls are updated.
    let groups: Vec<Vec<usize>> = {
        let mut map: HashMap<(&str, Option<&str>, u128), Vec<usize>> = HashMap::new();
        for (i, c) in out.calls.iter().enumerate() {
            map.entry((&*c.endpoint, c.tool.as_deref(), c.arguments))
                .or_default()
                .push(i);
        }
        let mut groups: Vec<Vec<usize>> = map.into_values().filter(|g| g.len() > 1).collect();
        groups.sort_by_key(|g| g[0]);
        groups
    };
    for members in &groups {
        for (n, pair) in members.windows(2).enumerate() {
            let (p, l) = (pair[0], pair[1]);
            out.calls[l].post_count = n as u32 + 2;
            out.calls[l].previous = Some(out.calls[p].seq);
            let (prev, later) = (&out.calls[p], &out.calls[l]);
            let ann = later
                .tool
                .as_deref()
                .and_then(|t| annotations.get(t))
                .copied()
                .unwrap_or_default();
            let tool = later.tool.as_deref().unwrap_or("?").to_owned();
            let same_id = prev.id == later.id && prev.scope == later.scope;
            let explained = explanation(prev, later);
            let mut findings = Vec::new();
            if let Some(f) = retry_too_soon(prev, later) {
                findings.push(f);
            }
            if later.mrtr_followup && prev.verdict.outcome == Outcome::InputRequired {
                findings.extend(mrtr_checks(prev, later));
            }
            let origin = if may_have_run(prev) && !ann.safe_to_repeat() && !later.mrtr_followup {
                let severity = if ann.destructive() || same_id {
                    Severity::High
                } else {
                    Severity::Medium
                };
                findings.push(finding(
                    FindingKind::UnsafeReplay,
                    severity,
                    prev,
                    later,
                    format!(
                        "{tool} was sent again after an attempt that may have run ({}{}); the tool is {} and the first attempt's effect is unknown{}",
                        prev.verdict.outcome,
                        prev.verdict.evidence.http_statuses.last().map(|s| format!(", HTTP {s}")).unwrap_or_default(),
                        describe(ann),
                        if same_id { "; the same id was re-sent" } else { "" }
                    ),
                ));
                RetryOrigin::AfterFailure
            } else if let Some((origin, _why)) = explained {
                origin
            } else {
                let severity =
                    if same_id || (ann.destructive == Some(true) && ann.read_only != Some(true)) {
                        Severity::High
                    } else if ann.safe_to_repeat() {
                        Severity::Low
                    } else {
                        Severity::Medium
                    };
                let state = if prev.verdict.outcome.is_non_terminal() {
                    "while the first was still in flight".to_owned()
                } else {
                    format!("after the first attempt ended {}", prev.verdict.outcome)
                };
                findings.push(finding(
                    FindingKind::UnexplainedRepeat,
                    severity,
                    prev,
                    later,
                    format!(
                        "{tool} with the same arguments was sent again {state}, with nothing in the protocol to explain it (tool is {}){}",
                        describe(ann),
                        if same_id { "; the same id was re-sent" } else { "" }
                    ),
                ));
                RetryOrigin::Unexplained
            };
            if later.evidence != "wire" {
                for f in &mut findings {
                    f.detail
                        .push_str(" (seen in a client log: the client's record, not the wire)");
                }
            }
            out.calls[l].retry_origin = origin;
            out.findings.extend(findings);
        }
    }
}

fn describe(a: Annotations) -> &'static str {
    if a.read_only == Some(true) {
        "annotated read-only"
    } else if a.idempotent == Some(true) {
        "annotated idempotent"
    } else if a.destructive == Some(true) {
        "annotated destructive"
    } else if a == Annotations::default() {
        "not annotated, so by MCP's defaults non-idempotent and possibly destructive"
    } else {
        "not annotated read-only or idempotent"
    }
}

fn finding(
    kind: FindingKind,
    severity: Severity,
    prev: &Call,
    later: &Call,
    detail: String,
) -> Finding {
    Finding {
        kind,
        severity,
        scope: later.scope.to_string(),
        ids: vec![prev.id.clone(), later.id.clone()],
        calls: vec![prev.seq, later.seq],
        locators: vec![prev.locator.clone(), later.locator.clone()],
        detail,
    }
}

fn retry_too_soon(prev: &Call, later: &Call) -> Option<Finding> {
    let (asked, what) = match (prev.retry_after_ms, prev.sse_retry_ms) {
        (Some(ms), _) => (ms, "Retry-After"),
        (None, Some(ms)) if prev.verdict.outcome.is_non_terminal() => (ms, "SSE retry"),
        _ => return None,
    };
    let from = prev.ended_at.or(prev.started_at)?;
    let waited = from.millis_until(later.started_at?);
    (waited < asked as i64).then(|| {
        finding(
            FindingKind::RetryTooSoon,
            Severity::Low,
            prev,
            later,
            format!("re-sent {waited} ms after the response, but {what} asked for {asked} ms"),
        )
    })
}

fn mrtr_checks(prev: &Call, later: &Call) -> Vec<Finding> {
    let mut f = Vec::new();
    if prev.id == later.id {
        f.push(finding(
            FindingKind::MrtrBroken,
            Severity::Medium,
            prev,
            later,
            format!(
                "the MRTR follow-up reuses the initial request's id {}; it MUST use a new id",
                later.id
            ),
        ));
    }
    match (&prev.returned_state, &later.request_state) {
        (Some(sent), None) => f.push(finding(
            FindingKind::MrtrBroken,
            Severity::Medium,
            prev,
            later,
            format!("the server returned requestState {sent} but the follow-up dropped it"),
        )),
        (Some(sent), Some(echoed)) if sent != echoed => f.push(finding(
            FindingKind::MrtrBroken,
            Severity::Medium,
            prev,
            later,
            format!("the follow-up altered requestState: sent {sent}, echoed {echoed}"),
        )),
        (None, Some(added)) => f.push(finding(
            FindingKind::MrtrBroken,
            Severity::Low,
            prev,
            later,
            format!("the follow-up carries requestState {added} that the server never sent"),
        )),
        _ => {}
    }
    f
}
