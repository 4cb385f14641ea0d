//! Baselines: a file of known findings (`--write-baseline`) that a later run accepts
//! (`--baseline`), so a CI gate fails on new findings only.
//!
//! A finding's key is its kind, the input path (as given, without a leading `./`),
//! the JSON-RPC ids as on the wire, and the tools of the calls it names. Line
//! numbers, timestamps and detail wording are left out on purpose: they move when a
//! capture is re-recorded or mcpsift rewords a detail. Keys are counted, so two
//! identical findings need two baseline entries.

use crate::batch::{InputReport, Report};
use crate::correlate::{Analysis, Finding};
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};

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
        let entries: Vec<Value> = report
            .inputs
            .iter()
            .flat_map(|ir| entries(ir, redactor))
            .collect();
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
        let mut applying = self.applying();
        for ir in &mut report.inputs {
            applying.input(ir);
        }
        applying.finish()
    }

    /// `apply`, one input at a time: for a run that writes each input's records
    /// before the next input is read. Inputs are given in input order, since an
    /// entry accepts the first findings that match it.
    pub fn applying(&self) -> Applying {
        Applying {
            left: self.counts.clone(),
            accepted: 0,
        }
    }
}

/// The entries of a baseline not yet used up while it is applied input by input.
#[derive(Debug)]
pub struct Applying {
    left: HashMap<String, usize>,
    accepted: usize,
}

impl Applying {
    /// Removes the findings of the next input that the entries left accept.
    pub fn input(&mut self, ir: &mut InputReport) {
        let left = &mut self.left;
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
                    self.accepted += 1;
                    false
                }
                None => true,
            }
        });
        a.findings = findings;
    }

    /// What the baseline did over every input given.
    pub fn finish(self) -> Applied {
        let mut unmatched: Vec<String> = self
            .left
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .flat_map(|(k, n)| std::iter::repeat_n(k, n))
            .collect();
        unmatched.sort();
        Applied {
            accepted: self.accepted,
            unmatched,
        }
    }
}

/// The baseline entries of one input's findings.
fn entries<'a>(
    ir: &'a InputReport,
    redactor: &'a super::redact::Redactor,
) -> impl Iterator<Item = Value> + 'a {
    let a = &ir.analysis;
    a.findings.iter().map(move |f| {
        json!({
            "key": key(&ir.stable_path, f, a),
            "kind": f.kind,
            "severity": f.severity,
            "input": normalise_path(&ir.stable_path),
            "ids": f.ids.iter().map(|i| i.to_value()).collect::<Vec<_>>(),
            "tool": tools_of(f, a),
            "detail": redactor.text(&f.detail),
        })
    })
}

/// Writes a baseline document input by input, the bytes `document` pretty-printed
/// would give: for a run that lets each input's findings go once its records are
/// written. Strings in JSON never hold a raw newline, so each entry is indented by
/// indenting its lines.
pub struct Writer<W: Write> {
    w: W,
    entries: usize,
    /// What follows the last entry (the document's tail).
    tail: String,
}

impl<W: Write> Writer<W> {
    /// Starts the document.
    pub fn new(mut w: W) -> io::Result<Self> {
        let empty = serde_json::to_string_pretty(&json!({ SCHEMA_FIELD: 1, "findings": [] }))?;
        let at = empty
            .find("[]")
            .ok_or_else(|| io::Error::other("no findings array"))?;
        w.write_all(&empty.as_bytes()[..=at])?;
        Ok(Writer {
            w,
            entries: 0,
            tail: empty[at + 1..].to_owned(),
        })
    }

    /// Adds the findings of the next input (after filters, before a baseline).
    pub fn input(
        &mut self,
        ir: &InputReport,
        redactor: &super::redact::Redactor,
    ) -> io::Result<()> {
        for e in entries(ir, redactor) {
            let text = serde_json::to_string_pretty(&e)?;
            self.w.write_all(if self.entries == 0 {
                b"\n    "
            } else {
                b",\n    "
            })?;
            self.w.write_all(text.replace('\n', "\n    ").as_bytes())?;
            self.entries += 1;
        }
        Ok(())
    }

    /// Ends the document (and its line), and hands back the writer.
    pub fn finish(mut self) -> io::Result<W> {
        if self.entries > 0 {
            self.w.write_all(b"\n  ")?;
        }
        self.w.write_all(self.tail.as_bytes())?;
        self.w.write_all(b"\n")?;
        Ok(self.w)
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
