//! `ID_MISMATCH`: a response whose id answers no outstanding request in its scope,
//! rides another request's stream or body, arrives on a GET stream that resumes
//! nothing, repeats an id already answered, differs only in JSON type (`1` vs `"1"`),
//! or is `null` where the id should be echoed. Events replayed after a
//! `Last-Event-ID` resumption are de-duplicated by event id first, never flagged.
//!
//! Fixture: `tests/fixtures/rules/id_mismatch.jsonl`.

use super::{Hooks, Judged, RuleDoc};
use crate::correlate::observe::{Observation, Stray};
use crate::correlate::Finding;
use crate::model::{FindingKind, Severity};

pub const DOC: RuleDoc = RuleDoc {
    kind: FindingKind::IdMismatch,
    severity: "MEDIUM",
    summary: "a response whose id answers no outstanding request, the wrong request, or one already answered",
    raised_when: "a response whose id answers no outstanding request in its scope, rides another request's stream or body, arrives on a GET stream that resumes nothing, repeats an id already answered, differs only in type (`1` vs `\"1\"`), or is `null` where the id should be echoed. Events replayed after a `Last-Event-ID` resumption are de-duplicated by event id first and never flagged",
    meaning: "A response whose id answers no outstanding request in its scope, answers another request than the one whose stream or body it rode on, repeats an id already answered, differs only in JSON type (1 vs \"1\"), or is null where the id should be echoed.",
    spec: "MCP 2025-11-25 Basic (requests: \"Responses MUST include the same ID as the request they correspond to\"); Transports, Streamable HTTP (a GET stream \"MUST NOT\" carry responses unless it resumes a stream); JSON-RPC 2.0 §5",
    causes: &[
        "a JSON library that re-encodes ids",
        "a proxy multiplexing several clients",
        "a server sending a response on the wrong stream",
        "a duplicate delivery after a reconnect",
    ],
    next: &[
        "check the server's (or a proxy's) id handling",
        "compare the ids' JSON types",
        "check whether the duplicate came from an SSE resumption replaying an event",
    ],
};

pub const HOOKS: Hooks = Hooks {
    observation: Some(observe),
    ..Hooks::NONE
};

fn observe(o: &Observation, _: &Judged, out: &mut Vec<Finding>) {
    let Observation::StrayResponse {
        scope,
        id,
        request,
        call,
        locator,
        context,
    } = o
    else {
        return;
    };
    let req = request.as_ref();
    let detail = match (context, req) {
        (Stray::TypeDrift, Some(r)) => {
            format!("request id {r} was answered as {id}: same value, different JSON type")
        }
        (Stray::NullId, Some(r)) => {
            format!("request id {r} was answered by a response with id null")
        }
        (Stray::OnCallStream, Some(r)) => {
            format!("the response stream of request {r} carried a response for id {id}")
        }
        (Stray::Attributed, Some(r)) => format!(
            "request {r} got only a response with id {id}, the one reply while it was outstanding"
        ),
        (Stray::AlreadyAnswered, _) => {
            format!("a second response for id {id}, which was already answered")
        }
        (Stray::PlainGet, _) => format!(
            "a GET stream that resumes nothing carried a response for id {id}; responses belong on the request's own stream"
        ),
        (Stray::ResumedGet, _) => format!(
            "a resumed GET stream carried a response for id {id}, which belongs to no stream it could resume"
        ),
        (Stray::Legacy, _) => format!(
            "the legacy SSE stream carried a response for id {id}, which answers no request of its session"
        ),
        _ => format!("a response with id {id} answers no outstanding request"),
    };
    let mut ids: Vec<_> = req.cloned().into_iter().collect();
    ids.push(id.clone());
    out.push(Finding {
        kind: FindingKind::IdMismatch,
        severity: Severity::Medium,
        scope: scope.clone(),
        ids,
        calls: call.iter().copied().collect(),
        locators: vec![locator.clone()],
        detail,
    });
}
