//! `ID_REUSED`: a request id used again where the protocol forbids it: within a
//! session (or stdio process) at all before 2026-07-28, and while the earlier
//! request is still in flight from 2026-07-28 on. A re-send of the same call that
//! is a retry candidate is judged by the repeat rules instead (their detail says
//! the id was re-sent, and raises the severity); an MRTR follow-up's id is
//! `MRTR_BROKEN`'s.
//!
//! Fixture: `tests/fixtures/rules/id_reused.jsonl`.

use super::{Hooks, Judged, RuleDoc};
use crate::correlate::observe::Observation;
use crate::correlate::Finding;
use crate::model::{FindingKind, Severity};

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

pub const HOOKS: Hooks = Hooks {
    observation: Some(observe),
    ..Hooks::NONE
};

fn observe(o: &Observation, judged: &Judged, out: &mut Vec<Finding>) {
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
        return;
    };
    if *mrtr || (*modern && !*in_flight) {
        return;
    }
    // A same-id re-send the repeat rules already judged.
    if *same_call
        && judged
            .same_id_retries
            .contains(&(scope.clone(), locator.clone()))
    {
        return;
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
