//! `ID_REUSED`: a request id used again where the protocol forbids it: within a
//! session (or stdio process) at all before 2026-07-28, and while the earlier
//! request is still in flight from 2026-07-28 on. A re-send of the same call that
//! is a retry candidate is judged by the repeat rules instead (their detail says
//! the id was re-sent, and raises the severity); an MRTR follow-up's id is
//! `MRTR_BROKEN`'s.
//!
//! Fixture: `tests/fixtures/rules/id_reused.jsonl`.

use super::{Context, RuleDoc};
use crate::correlate::observe::Observation;
use crate::correlate::Finding;
use crate::model::{FindingKind, Locator, Severity};
use foldhash::HashSet;

pub const DOC: RuleDoc = RuleDoc {
    kind: FindingKind::IdReused,
    severity: "MEDIUM",
    summary: "a request id used again where the protocol forbids it",
    raised_when: "a request id used again in the same scope where the protocol forbids it: at all within a session or stdio process before 2026-07-28, and while the earlier request is in flight from 2026-07-28 on. A re-send of the same call close enough to be a retry is judged by the repeat rules instead",
    meaning: "A request id was sent again where the protocol forbids it: before 2026-07-28, at all within a session or stdio process; from 2026-07-28 on, while the earlier request with that id was still in flight.",
    spec: "MCP 2025-11-25 Basic (requests: \"the ID MUST NOT have been previously used by the requestor within the same session\"); MCP 2026-07-28 Basic (ids unique among the requestor's in-flight requests)",
    causes: &[
        "a client id counter reset (a new client instance on the same connection)",
        "two clients sharing one stdio process or session",
        "a proxy that rewrites ids",
    ],
    next: &[
        "fix the client's id allocation",
        "check for several clients behind one connection",
    ],
};

pub fn check(cx: &Context<'_>, out: &mut Vec<Finding>) {
    // Same-id re-sends the repeat rules already judge.
    let judged: HashSet<(&str, &Locator)> = cx
        .attempts
        .iter()
        .filter(|a| a.relation.is_retry_candidate())
        .map(|a| (&cx.calls[a.prev], &cx.calls[a.later]))
        .filter(|(p, l)| p.id == l.id && p.scope == l.scope)
        .map(|(_, l)| (&*l.scope, &l.locator))
        .collect();
    for o in cx.observations {
        let Observation::IdReuse {
            scope,
            id,
            method,
            earlier,
            same_call,
            in_flight,
            modern,
            mrtr,
            locator,
        } = o
        else {
            continue;
        };
        if *mrtr || (*modern && !*in_flight) {
            continue;
        }
        if *same_call && judged.contains(&(scope.as_str(), locator)) {
            continue;
        }
        let detail = if *in_flight {
            format!("request id {id} ({method}) was sent again while the earlier {earlier} with that id was still in flight")
        } else {
            format!("request id {id} ({method}) was already used in this scope by {earlier}, which had its response; ids must not be reused within a session before 2026-07-28")
        };
        out.push(Finding {
            kind: FindingKind::IdReused,
            severity: Severity::Medium,
            scope: scope.clone(),
            ids: vec![id.clone()],
            calls: vec![],
            locators: vec![locator.clone()],
            detail,
        });
    }
}
