//! The `summary` record as a value that merges. Every count in it is a sum over
//! inputs, calls or findings, so the summary of a union of inputs is the merge of
//! the summaries of its parts, whichever way it was cut: a job that analyses files
//! on many machines (`crate::stage`) adds up its partitions' summaries, or builds one
//! from the `jsonl` records it kept, and gets what one CLI run over all the files
//! prints.

use crate::batch::{InputReport, Report};
use crate::correlate::RetryOrigin;
use crate::model::{FindingKind, Outcome};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The counts of a `summary` record (`docs/output.md`). `filters` and
/// `baseline_accepted` are not here: they describe how one CLI run was invoked,
/// not the inputs, so they do not add up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub inputs: u64,
    pub inputs_with_errors: u64,
    /// Files found under directories that mcpsift does not read: path, reason.
    pub skipped: Vec<(String, String)>,
    pub exchanges: u64,
    pub calls: u64,
    /// Calls per outcome name; names this build does not know are kept as given.
    pub outcomes: BTreeMap<String, u64>,
    /// Findings per kind name.
    pub findings: BTreeMap<String, u64>,
    pub reinvocations: u64,
}

impl Summary {
    /// The summary of one analysed input.
    pub fn of_input(ir: &InputReport) -> Summary {
        let a = &ir.analysis;
        let mut s = Summary {
            inputs: 1,
            inputs_with_errors: u64::from(ir.has_errors()),
            exchanges: a.exchanges,
            calls: a.call_count(),
            reinvocations: a.reinvocations(),
            ..Summary::default()
        };
        for o in Outcome::ALL {
            let n = a.outcome_count(*o);
            if n > 0 {
                s.outcomes.insert(o.as_str().to_owned(), n);
            }
        }
        let counts = a.finding_counts();
        for k in FindingKind::ALL {
            let n = counts.count(|kind, _| kind == *k);
            if n > 0 {
                s.findings.insert(k.as_str().to_owned(), n);
            }
        }
        s
    }

    /// The summary of a whole run.
    pub fn of_report(report: &Report) -> Summary {
        let mut s = Summary {
            skipped: report.skipped.clone(),
            ..Summary::default()
        };
        for ir in &report.inputs {
            s.merge(&Summary::of_input(ir));
        }
        s
    }

    /// Adds `other` in: afterwards `self` summarises both sets of inputs.
    pub fn merge(&mut self, other: &Summary) {
        self.inputs += other.inputs;
        self.inputs_with_errors += other.inputs_with_errors;
        self.skipped.extend(other.skipped.iter().cloned());
        self.exchanges += other.exchanges;
        self.calls += other.calls;
        for (k, n) in &other.outcomes {
            *self.outcomes.entry(k.clone()).or_default() += n;
        }
        for (k, n) in &other.findings {
            *self.findings.entry(k.clone()).or_default() += n;
        }
        self.reinvocations += other.reinvocations;
    }

    /// Counts one `jsonl` record in: an `input`, `call` or `finding` record adds
    /// itself, a `summary` record is merged, anything else is ignored. A stream of
    /// records therefore summarises to what the CLI printed for them, whether it
    /// holds the records themselves, earlier summaries, or both for disjoint inputs.
    pub fn add_record(&mut self, record: &Value) {
        let count = |k: &str| record.get(k).and_then(Value::as_u64).unwrap_or(0);
        match record.get("type").and_then(Value::as_str) {
            Some("input") => {
                self.inputs += 1;
                let failed = record.get("status").and_then(Value::as_str) == Some("error")
                    || record
                        .get("problems")
                        .and_then(Value::as_array)
                        .is_some_and(|p| !p.is_empty());
                self.inputs_with_errors += u64::from(failed);
                self.exchanges += count("exchanges");
            }
            Some("call") => {
                self.calls += 1;
                if let Some(o) = record.get("outcome").and_then(Value::as_str) {
                    *self.outcomes.entry(o.to_owned()).or_default() += 1;
                }
                if record.get("retry_origin").and_then(Value::as_str)
                    == Some(RetryOrigin::Reinvocation.as_str())
                {
                    self.reinvocations += 1;
                }
            }
            Some("finding") => {
                if let Some(k) = record.get("kind").and_then(Value::as_str) {
                    *self.findings.entry(k.to_owned()).or_default() += 1;
                }
            }
            Some("summary") => self.merge(&Summary::from_record(record)),
            _ => {}
        }
    }

    /// Reads a `summary` record back.
    pub fn from_record(record: &Value) -> Summary {
        let count = |k: &str| record.get(k).and_then(Value::as_u64).unwrap_or(0);
        let counts = |k: &str| -> BTreeMap<String, u64> {
            record
                .get(k)
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                        .filter(|(_, n)| *n > 0)
                        .collect()
                })
                .unwrap_or_default()
        };
        let skipped = record
            .get("skipped")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .map(|s| {
                        let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
                        (field("path").to_owned(), field("reason").to_owned())
                    })
                    .collect()
            })
            .unwrap_or_default();
        Summary {
            inputs: count("inputs"),
            inputs_with_errors: count("inputs_with_errors"),
            skipped,
            exchanges: count("exchanges"),
            calls: count("calls"),
            outcomes: counts("outcomes"),
            findings: counts("findings"),
            reinvocations: count("reinvocations"),
        }
    }

    /// The `summary` record: every outcome and finding kind this build knows is
    /// listed, zero or not, in the documented order; unknown names follow.
    pub fn to_record(&self) -> Value {
        let listed = |known: &mut dyn Iterator<Item = &'static str>,
                      counts: &BTreeMap<String, u64>| {
            let mut m = Map::new();
            for k in known {
                m.insert(k.into(), json!(counts.get(k).copied().unwrap_or(0)));
            }
            for (k, n) in counts {
                if !m.contains_key(k) {
                    m.insert(k.clone(), json!(n));
                }
            }
            Value::Object(m)
        };
        json!({
            "type": "summary",
            "inputs": self.inputs,
            "inputs_with_errors": self.inputs_with_errors,
            "skipped": self.skipped.iter().map(|(p, why)| json!({"path": p, "reason": why})).collect::<Vec<_>>(),
            "exchanges": self.exchanges,
            "calls": self.calls,
            "outcomes": listed(&mut Outcome::ALL.iter().map(|o| o.as_str()), &self.outcomes),
            "findings": listed(&mut FindingKind::ALL.iter().map(|k| k.as_str()), &self.findings),
            // The same call made again later: counted so a long session's re-reads
            // show, never a finding (docs/findings.md, "What a repeat is").
            "reinvocations": self.reinvocations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_record_reads_back_to_the_same_summary() {
        let mut s = Summary {
            inputs: 3,
            inputs_with_errors: 1,
            skipped: vec![("a/b.txt".into(), "not a capture".into())],
            exchanges: 40,
            calls: 12,
            reinvocations: 2,
            ..Summary::default()
        };
        s.outcomes.insert("TOOL_SUCCESS".into(), 10);
        s.outcomes.insert("SOMETHING_NEWER".into(), 2);
        s.findings.insert("UNSAFE_REPLAY".into(), 1);
        let back = Summary::from_record(&s.to_record());
        assert_eq!(back, s);
        assert_eq!(s.to_record()["outcomes"]["HTTP_ERROR"], 0);
    }

    #[test]
    fn records_add_up_like_their_summary() {
        let records = [
            json!({"type": "input", "status": "ok", "exchanges": 5}),
            json!({"type": "input", "status": "ok", "exchanges": 2, "problems": [{"kind": "x"}]}),
            json!({"type": "call", "outcome": "TOOL_ERROR", "retry_origin": "none"}),
            json!({"type": "call", "outcome": "TOOL_ERROR", "retry_origin": "reinvocation"}),
            json!({"type": "finding", "kind": "NON_TERMINAL"}),
        ];
        let mut s = Summary::default();
        for r in &records {
            s.add_record(r);
        }
        assert_eq!((s.inputs, s.inputs_with_errors, s.exchanges), (2, 1, 7));
        assert_eq!((s.calls, s.reinvocations), (2, 1));
        assert_eq!(s.outcomes["TOOL_ERROR"], 2);
        assert_eq!(s.findings["NON_TERMINAL"], 1);
        let mut twice = s.clone();
        twice.add_record(&s.to_record());
        assert_eq!(twice.calls, 4);
        assert_eq!(twice.findings["NON_TERMINAL"], 2);
    }
}
