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

use super::attempts::Relation;
use super::facts::CallFacts;
use super::observe::Observation;
use super::{Finding, Scope};
use crate::model::{FindingKind, Locator, Outcome, Severity};
use foldhash::HashSet;

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

/// A call and its previous attempt (the same tool and canonical arguments at the
/// same endpoint), with how they relate (`attempts.rs`).
pub struct Pair<'a> {
    pub relation: Relation,
    pub prev: &'a CallFacts,
    pub later: &'a CallFacts,
}

impl Pair<'_> {
    /// Only a retry candidate can be a repeat finding (see `attempts.rs`).
    pub fn is_retry_candidate(&self) -> bool {
        self.relation.is_retry_candidate()
    }
}

/// What the observation hooks may ask about calls already judged.
#[derive(Debug, Default)]
pub struct Judged {
    /// Later calls of retry candidates that re-sent the earlier call's id in its scope
    /// (their ID_REUSED is the repeat rules' to report), by scope and request location.
    pub same_id_retries: HashSet<(Scope, Locator)>,
}

/// Where a rule looks. The judge (`judge.rs`) calls each hook as calls arrive in
/// request order, so a rule never needs the whole input at once.
pub struct Hooks {
    /// Each call with a previous attempt, with that attempt.
    pub pair: Option<fn(&Pair<'_>, &mut Vec<Finding>)>,
    /// Each call, once.
    pub call: Option<fn(&CallFacts, &mut Vec<Finding>)>,
    /// Each observation of the pairers, after the calls.
    pub observation: Option<fn(&Observation, &Judged, &mut Vec<Finding>)>,
    /// The outcomes of the only calls the rule's findings ever name, when it names
    /// no others: a report narrowed to its kind need keep no other call until the
    /// findings are known.
    pub names_only: Option<fn(Outcome) -> bool>,
}

impl Hooks {
    pub const NONE: Hooks = Hooks {
        pair: None,
        call: None,
        observation: None,
        names_only: None,
    };
}

/// One rule: its documentation and where it looks.
pub struct Rule {
    pub doc: &'static RuleDoc,
    pub hooks: Hooks,
}

/// A rule module's entry: its `DOC` and its `HOOKS`.
macro_rules! rules {
    ($($m:ident),+ $(,)?) => { &[$(Rule { doc: &$m::DOC, hooks: $m::HOOKS }),+] };
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

/// Whether a call of outcome `o` may be named by a finding of one of `kinds`.
pub fn may_name(kinds: &[FindingKind], o: Outcome) -> bool {
    RULES
        .iter()
        .filter(|r| kinds.contains(&r.doc.kind))
        .any(|r| r.hooks.names_only.is_none_or(|names| names(o)))
}

/// The documentation of `kind`'s rule.
pub fn doc(kind: FindingKind) -> &'static RuleDoc {
    RULES
        .iter()
        .find(|r| r.doc.kind == kind)
        .map(|r| r.doc)
        .expect("every finding kind has a rule (tested)")
}

/// A finding about two attempts of one call.
pub(crate) fn pair_finding(
    kind: FindingKind,
    severity: Severity,
    prev: &CallFacts,
    later: &CallFacts,
    detail: String,
) -> Finding {
    let mut detail = detail;
    if later.evidence() != "wire" {
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
