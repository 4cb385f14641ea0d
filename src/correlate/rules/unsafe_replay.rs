//! `UNSAFE_REPLAY`: a retry candidate (see `attempts.rs`) whose earlier attempt
//! may have run without the client getting a usable result, for a tool not
//! annotated read-only or idempotent, whatever else explains the re-send. "May have
//! run" is the one answer of `execution.rs`, which the retry advice uses too.
//!
//! Fixture: `tests/fixtures/rules/unsafe_replay.jsonl`.

use super::{pair_finding, Hooks, Pair, RuleDoc};
use crate::correlate::execution::effect_unknown;
use crate::correlate::facts::CallFacts;
use crate::correlate::{Annotations, Finding};
use crate::model::{FindingKind, Severity};

pub const DOC: RuleDoc = RuleDoc {
    kind: FindingKind::UnsafeReplay,
    severity: "HIGH for destructive (the MCP default) tools or a re-sent id, MEDIUM otherwise",
    summary: "a retry of a call whose first attempt may have run, for a tool not known to be safe to repeat",
    raised_when: "a retry candidate (in flight, soon after a failure, or a double dispatch) whose earlier attempt may have run without the client seeing a usable result (no response, a cut stream, 5xx other than 501/503/505, JSON-RPC -32603 or another code not sent before dispatch, an unreadable answer), of a tool not annotated read-only or idempotent in a `tools/list` of the same input, whatever else explains it",
    meaning: "A retry of a call whose first attempt may have run (no response, a cut stream, a 5xx other than 501/503/505, an internal JSON-RPC error, an answer the client could not read), for a tool not annotated read-only or idempotent, whatever else explains the retry. The first attempt's effect is unknown, so the side effect may now have happened twice.",
    spec: "MCP 2025-11-25 Server, Tools (ToolAnnotations: readOnlyHint, destructiveHint default true, idempotentHint default false); Lifecycle (Timeouts); MCP 2026-07-28 Streamable HTTP (a broken stream's request MUST be re-issued with a new id)",
    causes: &[
        "an automatic retry after a timeout or a 5xx",
        "a client that treats a cut stream as 'not sent'",
    ],
    next: &[
        "check whether the side effect happened twice (two charges, two files deleted)",
        "do not auto-retry such tools; add an idempotency key",
        "annotate genuinely idempotent tools with idempotentHint: true",
    ],
};

fn annotations(c: &CallFacts) -> Annotations {
    c.annotations.unwrap_or_default()
}

/// Whether re-sending `prev` as `later` is an unsafe replay (given that `later` is
/// a retry candidate).
pub fn applies(prev: &CallFacts, later: &CallFacts) -> bool {
    effect_unknown(prev) && !annotations(later).safe_to_repeat() && !later.mrtr_followup
}

pub const HOOKS: Hooks = Hooks {
    pair: Some(pair),
    ..Hooks::NONE
};

fn pair(p: &Pair<'_>, out: &mut Vec<Finding>) {
    let (prev, later) = (p.prev, p.later);
    if !p.is_retry_candidate() || !applies(prev, later) {
        return;
    }
    let ann = annotations(later);
    let same_id = prev.id == later.id && prev.scope == later.scope;
    let severity = if ann.destructive() || same_id {
        Severity::High
    } else {
        Severity::Medium
    };
    let wire: Vec<String> = prev
        .status
        .map(|s| format!("HTTP {s}"))
        .into_iter()
        .chain(prev.jsonrpc_code.map(|c| format!("JSON-RPC {c}")))
        .collect();
    let wire = if wire.is_empty() {
        String::new()
    } else {
        format!(" ({})", wire.join(", "))
    };
    out.push(pair_finding(
        FindingKind::UnsafeReplay,
        severity,
        prev,
        later,
        format!(
            "{} was sent again {}{wire}, so the first attempt may have run; the tool is {} and its first effect is unknown{}",
            later.tool.as_deref().unwrap_or("?"),
            p.relation.describe(prev),
            super::unexplained_repeat::describe(later.annotations),
            if same_id { "; the same id was re-sent" } else { "" }
        ),
    ));
}
