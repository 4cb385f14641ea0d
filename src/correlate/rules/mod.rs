//! The findings across calls, one file per rule. Each file holds the rule's
//! detection, its severity, the explanation `mcpsift explain` prints, and names its
//! fixture (`tests/fixtures/rules/<name>.jsonl`, whose expected findings are a
//! snapshot in `tests/snapshots/`). `docs/findings.md`'s table is generated from
//! these documents and a test keeps the two equal, so a rule changes in one place.

pub mod id_mismatch;
pub mod id_reused;
pub mod mrtr_broken;
pub mod non_terminal;
pub mod retry_too_soon;
pub mod suspicious_success;
pub mod unexplained_repeat;
pub mod unsafe_replay;

use super::attempts::Attempt;
use super::observe::Observation;
use super::{Call, Finding};
use crate::model::{FindingKind, Severity};

/// The user's documentation of one rule.
#[derive(Debug)]
pub struct RuleDoc {
    pub kind: FindingKind,
    /// The severities it reports, in words.
    pub severity: &'static str,
    /// One line, for reports.
    pub summary: &'static str,
    /// When it is raised, for the docs' table.
    pub raised_when: &'static str,
    /// What it means, for `explain`.
    pub meaning: &'static str,
    /// Where the MCP specification (by revision and section) says so.
    pub spec: &'static str,
    pub causes: &'static [&'static str],
    pub next: &'static [&'static str],
}

/// What the rules look at: the calls of one input (in `seq` order), how repeated
/// calls relate, and what the pairers observed.
pub struct Context<'a> {
    pub calls: &'a [Call],
    pub attempts: &'a [Attempt],
    pub observations: &'a [Observation],
}

impl Context<'_> {
    /// Each retry candidate (see `attempts.rs`) with its earlier and later call.
    pub fn retry_candidates(&self) -> impl Iterator<Item = (&Attempt, &Call, &Call)> {
        self.attempts
            .iter()
            .filter(|a| a.relation.is_retry_candidate())
            .map(|a| (a, &self.calls[a.prev], &self.calls[a.later]))
    }
}

/// One rule: its documentation and its check.
pub struct Rule {
    pub doc: &'static RuleDoc,
    check: fn(&Context<'_>, &mut Vec<Finding>),
}

/// A rule module's entry: its `DOC` and its `check`.
macro_rules! rules {
    ($($m:ident),+ $(,)?) => { &[$(Rule { doc: &$m::DOC, check: $m::check }),+] };
}

/// Every rule, in the order the docs list them (the order of `FindingKind::ALL`).
pub const RULES: &[Rule] = rules![
    id_mismatch,
    non_terminal,
    unexplained_repeat,
    unsafe_replay,
    retry_too_soon,
    id_reused,
    mrtr_broken,
    suspicious_success,
];

/// The documentation of `kind`'s rule.
pub fn doc(kind: FindingKind) -> &'static RuleDoc {
    RULES
        .iter()
        .find(|r| r.doc.kind == kind)
        .map(|r| r.doc)
        .expect("every finding kind has a rule (tested)")
}

/// Runs every rule.
pub fn run(cx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for r in RULES {
        (r.check)(cx, &mut out);
    }
    out
}

/// A finding about two attempts of one call.
pub(crate) fn pair_finding(
    kind: FindingKind,
    severity: Severity,
    prev: &Call,
    later: &Call,
    detail: String,
) -> Finding {
    let mut detail = detail;
    if later.evidence != "wire" {
        detail.push_str(" (seen in a client log: the client's record, not the wire)");
    }
    Finding {
        kind,
        severity,
        scope: later.scope.clone(),
        ids: vec![prev.id.clone(), later.id.clone()],
        calls: vec![prev.seq, later.seq],
        locators: vec![prev.locator.clone(), later.locator.clone()],
        detail,
    }
}

/// The docs' table of rules, as `docs/findings.md` holds it between its markers.
pub fn markdown_table() -> String {
    let mut s = String::from("| kind | severity | raised when |\n|---|---|---|\n");
    for r in RULES {
        s.push_str(&format!(
            "| `{}` | {} | {} |\n",
            r.doc.kind.as_str(),
            r.doc.severity,
            r.doc.raised_when.replace('|', "\\|")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_finding_kind_has_exactly_one_rule_in_order() {
        let kinds: Vec<FindingKind> = RULES.iter().map(|r| r.doc.kind).collect();
        assert_eq!(kinds, FindingKind::ALL);
    }

    #[test]
    fn every_rule_documents_itself_fully() {
        for r in RULES {
            let d = r.doc;
            for (what, text) in [
                ("severity", d.severity),
                ("summary", d.summary),
                ("raised_when", d.raised_when),
                ("meaning", d.meaning),
                ("spec", d.spec),
            ] {
                assert!(!text.trim().is_empty(), "{} has no {what}", d.kind);
            }
            assert!(d.spec.contains("MCP"), "{} cites no MCP revision", d.kind);
            assert!(!d.causes.is_empty() && !d.next.is_empty(), "{}", d.kind);
        }
    }
}
