//! Baselines: a file of known findings (`--write-baseline`) that a later run accepts
//! (`--baseline`), so a CI gate fails on new findings only.
//!
//! A finding's key is its kind, the input path (as given, without a leading `./`),
//! the JSON-RPC ids as on the wire, and the tools of the calls it names. Line
//! numbers, timestamps and detail wording are left out on purpose: they move when a
//! capture is re-recorded or mcpsift rewords a detail. Keys are counted, so two
//! identical findings need two baseline entries.

use crate::batch::Report;
use crate::correlate::{Analysis, Finding};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};

/// Marks a file as an mcpsift baseline, with its version.
const SCHEMA_FIELD: &str = "mcpsift_baseline";

#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    // The OS error is the `source`, not part of this message: a caller printing the
    // chain (anyhow's `{:#}`) would otherwise show it twice.
    #[error("cannot read baseline {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not an mcpsift baseline: {why}")]
    Format { path: String, why: String },
}

/// What applying a baseline did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Findings the baseline accepted (removed from the report).
    pub accepted: usize,
    /// Entries that accepted nothing, sorted: a fixed finding, or inputs named by
    /// another path than when the baseline was written.
    pub unmatched: Vec<String>,
}

/// Known findings, by key, with how many of each are accepted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Baseline {
    counts: HashMap<String, usize>,
}

fn normalise_path(p: &str) -> String {
    let p = p.replace('\\', "/");
    let mut s = p.as_str();
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    s.to_owned()
}

/// The tools of the calls `f` names that are among the input's calls (kept, or let
/// go by a lean run), `?` for a call without one.
fn tools_of(f: &Finding, a: &Analysis) -> String {
    let tools: BTreeSet<&str> = f
        .calls
        .iter()
        .filter_map(|&seq| super::kept::call_tool(a, seq))
        .map(|t| t.unwrap_or("?"))
        .collect();
    if tools.is_empty() {
        "-".to_owned()
    } else {
        tools.into_iter().collect::<Vec<_>>().join(",")
    }
}

/// The stable key of a finding of `input`.
pub fn key(input: &str, f: &Finding, a: &Analysis) -> String {
    let ids: Vec<String> = f.ids.iter().map(|i| i.raw().to_owned()).collect();
    format!(
        "{} {} ids={} tool={}",
        f.kind,
        normalise_path(input),
        ids.join(","),
        tools_of(f, a)
    )
}

/// Whether baseline key `entry` is finding key `ours` (for input `path`) but for an
/// input path that one of the two ends with, component by component.
fn same_but_path(entry: &str, ours: &str, path: &str) -> bool {
    let path = normalise_path(path);
    let Some(kind) = ours.split(' ').next() else {
        return false;
    };
    let rest = &ours[kind.len() + 1 + path.len()..];
    let Some(theirs) = entry
        .strip_prefix(kind)
        .and_then(|e| e.strip_prefix(' '))
        .and_then(|e| e.strip_suffix(rest))
    else {
        return false;
    };
    let suffix = |long: &str, short: &str| long == short || long.ends_with(&format!("/{short}"));
    !theirs.is_empty() && (suffix(theirs, &path) || suffix(&path, theirs))
}

impl Baseline {
    /// Every finding of `report`, as a baseline document.
    pub fn document(report: &Report, redactor: &super::redact::Redactor) -> Value {
        let mut entries = Vec::new();
        for ir in &report.inputs {
            let a = &ir.analysis;
            for f in &a.findings {
                entries.push(json!({
                    "key": key(&ir.stable_path, f, a),
                    "kind": f.kind,
                    "severity": f.severity,
                    "input": normalise_path(&ir.stable_path),
                    "ids": f.ids.iter().map(|i| i.to_value()).collect::<Vec<_>>(),
                    "tool": tools_of(f, a),
                    "detail": redactor.text(&f.detail),
                }));
            }
        }
        json!({ SCHEMA_FIELD: 1, "findings": entries })
    }

    /// Reads a baseline from its JSON text; `path` names it in errors.
    pub fn parse(path: &str, text: &str) -> Result<Baseline, BaselineError> {
        let bad = |why: String| BaselineError::Format {
            path: path.to_owned(),
            why,
        };
        let doc: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        if doc.get(SCHEMA_FIELD).and_then(Value::as_u64) != Some(1) {
            return Err(bad(format!("no \"{SCHEMA_FIELD}\": 1 member")));
        }
        let entries = doc
            .get("findings")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("no \"findings\" array".to_owned()))?;
        let mut counts = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            let k = e
                .get("key")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("finding {i} has no \"key\" string")))?;
            *counts.entry(k.to_owned()).or_insert(0) += 1;
        }
        Ok(Baseline { counts })
    }

    /// Reads a baseline file.
    pub fn load(path: &std::path::Path) -> Result<Baseline, BaselineError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Io {
            path: name.clone(),
            source,
        })?;
        Baseline::parse(&name, &text)
    }

    /// Removes the findings this baseline accepts. Keys written before they were
    /// made stable (the path as given) still match.
    pub fn apply(&self, report: &mut Report) -> Applied {
        let mut left = self.counts.clone();
        let mut accepted = 0;
        for ir in &mut report.inputs {
            let a = &mut ir.analysis;
            let mut findings = std::mem::take(&mut a.findings);
            let (stable, given) = (&ir.stable_path, &ir.path);
            findings.retain(|f| {
                let exact = [key(stable, f, a), key(given, f, a)];
                // Else the same finding in the same file reached another way: a file
                // named directly (keyed by its name) against its directory's walk.
                let near = || {
                    left.iter()
                        .filter(|(k, n)| **n > 0 && same_but_path(k, &exact[0], stable))
                        .map(|(k, _)| k.clone())
                        .min()
                };
                let hit = exact
                    .iter()
                    .find(|k| left.get(*k).is_some_and(|n| *n > 0))
                    .cloned()
                    .or_else(near);
                match hit.and_then(|k| left.get_mut(&k)) {
                    Some(n) => {
                        *n -= 1;
                        accepted += 1;
                        false
                    }
                    None => true,
                }
            });
            a.findings = findings;
        }
        let mut unmatched: Vec<String> = left
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .flat_map(|(k, n)| std::iter::repeat_n(k, n))
            .collect();
        unmatched.sort();
        Applied {
            accepted,
            unmatched,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_matches_its_component_suffix_only() {
        let ours = "NON_TERMINAL x.jsonl ids=1 tool=t";
        assert!(same_but_path(
            "NON_TERMINAL logs/x.jsonl ids=1 tool=t",
            ours,
            "x.jsonl"
        ));
        assert!(!same_but_path(
            "NON_TERMINAL logs/ax.jsonl ids=1 tool=t",
            ours,
            "x.jsonl"
        ));
        assert!(!same_but_path(
            "NON_TERMINAL logs/x.jsonl ids=2 tool=t",
            ours,
            "x.jsonl"
        ));
        assert!(!same_but_path(
            "ID_REUSED logs/x.jsonl ids=1 tool=t",
            ours,
            "x.jsonl"
        ));
        let ours = "NON_TERMINAL logs/x.jsonl ids=1 tool=t";
        assert!(same_but_path(
            "NON_TERMINAL x.jsonl ids=1 tool=t",
            ours,
            "logs/x.jsonl"
        ));
    }

    #[test]
    fn paths_are_normalised() {
        assert_eq!(normalise_path("./././a/b.jsonl"), "a/b.jsonl");
        assert_eq!(normalise_path("a\\b.jsonl"), "a/b.jsonl");
    }

    #[test]
    fn bad_files_are_named() {
        let e = Baseline::parse("b.json", "[]").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("b.json is not an mcpsift baseline"));
        let e = Baseline::parse("b.json", r#"{"mcpsift_baseline":1,"findings":[{}]}"#).unwrap_err();
        assert!(e.to_string().contains("finding 0 has no \"key\""), "{e}");
        let ok = Baseline::parse(
            "b.json",
            r#"{"mcpsift_baseline":1,"findings":[{"key":"A"},{"key":"A"}]}"#,
        )
        .unwrap();
        assert_eq!(ok.counts["A"], 2);
    }
}
