//! `MRTR_BROKEN`: an MRTR follow-up (a `tools/call` carrying `inputResponses` or
//! `requestState` after `input_required`) that reuses the initial id, drops or
//! alters the `requestState` it was given, or adds one the server never sent.
//!
//! Fixture: `tests/fixtures/rules/mrtr_broken.jsonl`.

use super::{pair_finding, Hooks, Pair, RuleDoc};
use crate::correlate::attempts::Relation;
use crate::correlate::Finding;
use crate::model::{FindingKind, Severity};

pub const DOC: RuleDoc = RuleDoc {
    kind: FindingKind::MrtrBroken,
    severity: "MEDIUM (LOW for an invented `requestState`)",
    summary: "an input_required round whose follow-up reuses the id or alters requestState",
    raised_when: "an MRTR follow-up that reuses the initial id, drops or alters the `requestState` it was given, or adds one the server never sent",
    meaning: "An MRTR round went wrong: the follow-up reuses the initial id, drops or alters the requestState it was given, or adds one the server never sent.",
    spec: "MCP 2026-07-28 Server, Tools (input_required results and follow-up requests: a new id, inputResponses, requestState echoed exactly)",
    causes: &[
        "a client that re-serialises requestState instead of echoing it",
        "a client that retries with the same id",
    ],
    next: &[
        "echo requestState byte for byte, under a new id",
        "compare the returned and the echoed requestState in the evidence",
    ],
};

pub const HOOKS: Hooks = Hooks {
    pair: Some(pair),
    ..Hooks::NONE
};

fn pair(p: &Pair<'_>, out: &mut Vec<Finding>) {
    if p.relation != Relation::Mrtr {
        return;
    }
    let (prev, later) = (p.prev, p.later);
    let mut push = |severity, detail| {
        out.push(pair_finding(
            FindingKind::MrtrBroken,
            severity,
            prev,
            later,
            detail,
        ))
    };
    if prev.id == later.id {
        push(
            Severity::Medium,
            format!(
                "the MRTR follow-up reuses the initial request's id {}; it MUST use a new id",
                later.id
            ),
        );
    }
    match (&prev.returned_state, &later.request_state) {
        (Some(sent), None) => push(
            Severity::Medium,
            format!("the server returned requestState {sent} but the follow-up dropped it"),
        ),
        (Some(sent), Some(echoed)) if sent != echoed => push(
            Severity::Medium,
            format!("the follow-up altered requestState: sent {sent}, echoed {echoed}"),
        ),
        (None, Some(added)) => push(
            Severity::Low,
            format!("the follow-up carries requestState {added} that the server never sent"),
        ),
        _ => {}
    }
}
