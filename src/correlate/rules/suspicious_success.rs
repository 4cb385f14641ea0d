//! `SUSPICIOUS_SUCCESS`: a result with `isError` false or absent whose first text
//! block reads like an error (`Error: …`, `failed …`, a traceback, `{"error": …}`).
//!
//! Fixture: `tests/fixtures/rules/suspicious_success.jsonl`.

use super::{Hooks, Judged, RuleDoc};
use crate::correlate::observe::Observation;
use crate::correlate::Finding;
use crate::model::{FindingKind, Severity};

pub const DOC: RuleDoc = RuleDoc {
    kind: FindingKind::SuspiciousSuccess,
    severity: "LOW",
    summary: "a result with isError false (or absent) whose text reads like an error",
    raised_when: "a result with `isError` false or absent whose first text block reads like an error (`Error: …`, `failed …`, a traceback, `{\"error\": …}`)",
    meaning: "A result with isError false or absent whose first text block reads like an error (Error: …, failed …, a traceback, {\"error\": …}). Clients and models take it as a success.",
    spec: "MCP 2025-11-25 Server, Tools (error handling: tool execution errors are reported in the result with isError: true)",
    causes: &[
        "a tool that reports failures as text instead of setting isError",
        "a wrapper that swallows exceptions into a text block",
    ],
    next: &[
        "read the result text in the evidence",
        "make the tool set isError: true when it fails, so clients and models can tell",
    ],
};

pub const HOOKS: Hooks = Hooks {
    observation: Some(observe),
    ..Hooks::NONE
};

fn observe(o: &Observation, _: &Judged, out: &mut Vec<Finding>) {
    let Observation::ErrorText {
        scope,
        call,
        id,
        tool,
        locator,
        text,
    } = o
    else {
        return;
    };
    out.push(Finding {
        kind: FindingKind::SuspiciousSuccess,
        severity: Severity::Low,
        scope: scope.clone(),
        ids: vec![id.clone()],
        calls: vec![*call],
        locators: vec![locator.clone()],
        detail: format!(
            "{tool} returned isError false (or absent), but its text reads like an error: {}",
            text.trim().chars().take(120).collect::<String>()
        ),
    });
}
