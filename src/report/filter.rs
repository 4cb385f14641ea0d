//! Filters (`--tool`, `--outcome`, `--finding`, `--scope`): they narrow a report
//! before any emitter sees it, so every format, the baseline and `--fail-on` agree
//! on what was selected.
//!
//! - A call is kept when it matches every call filter given (tool, outcome, scope;
//!   several values of one filter are alternatives).
//! - A finding is kept when it matches `--finding` and `--scope`, and, with `--tool`,
//!   concerns a call of that tool.
//! - With `--outcome` alone, findings are narrowed to those about the kept calls;
//!   with `--finding` alone, calls are narrowed to those the kept findings name.
//!
//! A run that keeps only the calls its reports show (`kept.rs`) applies the call
//! filters as calls are judged; `unmatched` and `apply` then read what it kept.

use super::kept;
use crate::batch::Report;
use crate::correlate::{Analysis, Call, Finding};
use crate::model::{FindingKind, Outcome};
use std::collections::HashSet;

/// What to keep. Empty vectors select everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub tools: Vec<String>,
    pub outcomes: Vec<Outcome>,
    pub findings: Vec<FindingKind>,
    /// A whole scope (`session:1a2b3c4d`, `stdio:1`, `http:host:port`) or a scope
    /// kind (`session`, `http`, `stdio`).
    pub scopes: Vec<String>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
            && self.outcomes.is_empty()
            && self.findings.is_empty()
            && self.scopes.is_empty()
    }

    /// The filters in words, for report headers: `tool=charge_card, outcome=HTTP_ERROR`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        parts.extend(self.tools.iter().map(|t| format!("tool={t}")));
        parts.extend(self.outcomes.iter().map(|o| format!("outcome={o}")));
        parts.extend(self.findings.iter().map(|k| format!("finding={k}")));
        parts.extend(self.scopes.iter().map(|s| format!("scope={s}")));
        parts.join(", ")
    }

    fn scope_ok(&self, scope: &str) -> bool {
        self.scopes.is_empty() || self.scopes.iter().any(|s| Filter::scope_matches(s, scope))
    }

    /// Whether `scope` is the `--scope` value `one`, or of its kind.
    pub(crate) fn scope_matches(one: &str, scope: &str) -> bool {
        scope == one || (!one.contains(':') && scope.split(':').next() == Some(one))
    }

    fn tool_ok(&self, tool: Option<&str>) -> bool {
        self.tools.is_empty() || tool.is_some_and(|t| self.tools.iter().any(|f| f == t))
    }

    pub(crate) fn call_ok(&self, c: &Call) -> bool {
        self.tool_ok(c.tool.as_deref())
            && (self.outcomes.is_empty() || self.outcomes.contains(&c.verdict.outcome))
            && self.scope_ok(&c.scope)
    }

    fn finding_ok(&self, f: &Finding, calls: &[Call]) -> bool {
        (self.findings.is_empty() || self.findings.contains(&f.kind))
            && self.scope_ok(&f.scope)
            && (self.tools.is_empty()
                || calls
                    .iter()
                    .any(|c| f.calls.contains(&c.seq) && self.tool_ok(c.tool.as_deref())))
    }

    /// `finding_ok` for an input whose calls were filtered as they were judged
    /// (`kept.rs`): the tools of the calls let go are looked up by `seq`.
    fn finding_ok_lean(&self, f: &Finding, a: &Analysis) -> bool {
        (self.findings.is_empty() || self.findings.contains(&f.kind))
            && self.scope_ok(&f.scope)
            && (self.tools.is_empty() || f.calls.iter().any(|&s| self.tool_ok(kept::tool_of(a, s))))
    }
}

/// What a run that filtered an input's calls as they were judged kept of them.
fn lean(a: &Analysis) -> Option<&kept::Unkept> {
    kept::unkept(a).filter(|u| u.filtered.is_some())
}

/// `--tool` and `--scope` values that selected nothing in the whole report: most
/// often a typo, which would otherwise look like "no problems found".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unmatched {
    pub tools: Vec<String>,
    pub scopes: Vec<String>,
    /// The tool names the report does hold, sorted, to suggest the right one.
    pub tools_seen: Vec<String>,
}

impl Unmatched {
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.scopes.is_empty()
    }

    /// One warning per value that matched nothing, in words.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in &self.tools {
            let seen = if self.tools_seen.is_empty() {
                "no tools/call at all".to_owned()
            } else {
                let mut names = self.tools_seen.iter().take(10).cloned().collect::<Vec<_>>();
                if self.tools_seen.len() > 10 {
                    names.push(format!("{} more", self.tools_seen.len() - 10));
                }
                format!("tools seen: {}", names.join(", "))
            };
            out.push(format!("--tool {t} matches no call ({seen})"));
        }
        for s in &self.scopes {
            out.push(format!(
                "--scope {s} matches no call or finding (a scope is session:HASH, legacy:HASH, http:HOST, stdio:N, client:…, or one of those kinds alone)"
            ));
        }
        out
    }
}

/// The `--tool` and `--scope` values of `filter` that match nothing in `report`.
/// Call it before `apply`, which removes what did not match.
pub fn unmatched(report: &Report, filter: &Filter) -> Unmatched {
    let calls = report.inputs.iter().flat_map(|i| &i.analysis.calls);
    let mut seen: Vec<String> = calls
        .clone()
        .filter_map(|c| c.tool.as_deref().map(str::to_owned))
        .chain(
            report
                .inputs
                .iter()
                .filter_map(|i| lean(&i.analysis))
                .flat_map(|u| u.tools.names().map(str::to_owned)),
        )
        .collect();
    seen.sort();
    seen.dedup();
    let tools = filter
        .tools
        .iter()
        .filter(|t| !seen.contains(t))
        .cloned()
        .collect();
    let scopes = filter
        .scopes
        .iter()
        .enumerate()
        .filter(|(k, s)| {
            let one = Filter {
                scopes: vec![(*s).clone()],
                ..Filter::default()
            };
            let in_lean = report.inputs.iter().any(|i| {
                lean(&i.analysis)
                    .and_then(|u| u.filtered.as_ref()?.scope_hits.get(*k).copied())
                    .unwrap_or(false)
            });
            let mut in_finding = false;
            for i in &report.inputs {
                // Findings a lean run moved to disk are read back, at most once a value.
                let _ = i.analysis.for_each_finding(|f| {
                    in_finding |= one.scope_ok(&f.scope);
                    Ok(())
                });
            }
            !calls.clone().any(|c| one.scope_ok(&c.scope)) && !in_lean && !in_finding
        })
        .map(|(_, s)| s.clone())
        .collect();
    Unmatched {
        tools,
        scopes,
        tools_seen: seen,
    }
}

/// Narrows `report` to what `filter` selects.
pub fn apply(report: &mut Report, filter: &Filter) {
    if filter.is_empty() {
        return;
    }
    report.filters = filter.describe();
    for ir in &mut report.inputs {
        apply_input(&mut ir.analysis, filter);
    }
}

/// Narrows one input to what `filter` selects (`apply`); a streaming run narrows
/// each input so before its records are written.
pub fn apply_input(a: &mut Analysis, filter: &Filter) {
    if filter.is_empty() {
        return;
    }
    if let Some(matched) = kept::unkept(a).and_then(|u| u.filtered.as_ref()) {
        // Its calls were filtered as they were judged (and are counted so); its
        // findings are narrowed here, read back from disk where the run moved
        // them there.
        let Ok(all) = a.all_findings() else {
            return;
        };
        let by_outcome = !filter.outcomes.is_empty() && filter.findings.is_empty();
        let findings: Vec<Finding> = all
            .into_iter()
            .filter(|f| filter.finding_ok_lean(f, a))
            .filter(|f| !by_outcome || f.calls.iter().any(|s| matched.matched(*s)))
            .collect();
        let narrows = matched.narrows();
        let Some(matched) = kept::unkept_mut(a).and_then(|u| u.filtered.as_mut()) else {
            return;
        };
        if narrows {
            // `--finding`: of the calls that match, those the findings name stay.
            matched.narrow(&findings.iter().flat_map(|f| f.calls.clone()).collect());
        }
        let tally = matched.tally.clone();
        if let Some(s) = a.streamed.as_mut() {
            s.findings = None;
            s.tally = tally;
        }
        a.findings = findings;
        return;
    }
    let findings: Vec<Finding> = a
        .findings
        .iter()
        .filter(|f| filter.finding_ok(f, &a.calls))
        .cloned()
        .collect();
    let mut kept: HashSet<usize> = a
        .calls
        .iter()
        .filter(|c| filter.call_ok(c))
        .map(|c| c.seq)
        .collect();
    let findings = if !filter.outcomes.is_empty() && filter.findings.is_empty() {
        findings
            .into_iter()
            .filter(|f| f.calls.iter().any(|s| kept.contains(s)))
            .collect()
    } else {
        findings
    };
    if !filter.findings.is_empty() && filter.outcomes.is_empty() {
        let named: HashSet<usize> = findings.iter().flat_map(|f| f.calls.clone()).collect();
        kept.retain(|s| named.contains(s));
    }
    a.calls.retain(|c| kept.contains(&c.seq));
    a.findings = findings;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_kinds_and_whole_scopes() {
        let f = Filter {
            scopes: vec!["stdio".into()],
            ..Filter::default()
        };
        assert!(f.scope_ok("stdio:2"));
        assert!(!f.scope_ok("session:abcd"));
        let f = Filter {
            scopes: vec!["session:abcd".into()],
            ..Filter::default()
        };
        assert!(f.scope_ok("session:abcd"));
        assert!(!f.scope_ok("session:abce"));
    }

    #[test]
    fn describe_lists_every_filter() {
        let f = Filter {
            tools: vec!["t".into()],
            outcomes: vec![Outcome::HttpError],
            findings: vec![FindingKind::NonTerminal],
            scopes: vec!["stdio".into()],
        };
        assert_eq!(
            f.describe(),
            "tool=t, outcome=HTTP_ERROR, finding=NON_TERMINAL, scope=stdio"
        );
    }
}
