//! Which findings the human reports list. A capture of a server that stopped
//! answering raises a finding per call; the table, markdown and the page list the
//! first of them, most severe first, and count the rest (`--format jsonl` lists
//! them all). Each input's findings are read twice, from memory or from disk where
//! a streaming run moved them: once to count them by severity, once to keep only
//! those listed (and those that name a call the report shows), so a report of a
//! million findings holds a page of them, not all.

use crate::batch::Report;
use crate::correlate::{Analysis, Finding};
use crate::model::Severity;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;

/// Findings of a run, counted by severity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// By `Severity::ALL` position.
    pub by_severity: [u64; 4],
}

impl Counts {
    fn add(&mut self, f: &Finding) {
        self.by_severity[severity_index(f.severity)] += 1;
    }

    pub fn total(&self) -> u64 {
        self.by_severity.iter().sum()
    }

    pub fn of(&self, s: Severity) -> u64 {
        self.by_severity[severity_index(s)]
    }

    /// Most severe first: the severity of the `first`-th finding, and how many of
    /// that severity come before it (all of them when every finding fits).
    fn threshold(&self, first: u64) -> (Severity, u64) {
        let mut before = 0;
        for s in Severity::ALL.iter().rev() {
            let n = self.of(*s);
            if before + n >= first {
                return (*s, first - before);
            }
            before += n;
        }
        (Severity::ALL[0], u64::MAX)
    }
}

fn severity_index(s: Severity) -> usize {
    Severity::ALL.iter().position(|x| *x == s).unwrap_or(0)
}

/// The findings of a run that markdown and the page read.
#[derive(Debug, Default)]
pub struct Selected {
    /// Per input, in its order: the findings among the run's first `first` most
    /// severe (by severity, then input order), and those that `named` says name a
    /// call the report shows. Sorted by severity and cut to `first`, they are the
    /// run's first `first`.
    pub per_input: Vec<Vec<Finding>>,
    pub counts: Counts,
    /// The kinds of all the run's findings, listed or not, each with its worst
    /// severity and its count.
    pub kinds: std::collections::BTreeMap<crate::model::FindingKind, (Severity, u64)>,
    /// Per input: how many findings it has.
    pub input_counts: Vec<u64>,
    /// The last finding of the highest severity, in input order (as `max_by_key`
    /// picks it).
    pub worst: Option<Finding>,
}

impl Selected {
    /// Every kept finding with its input's index, most severe first (input order
    /// within a severity), cut to the `first` the report lists.
    pub fn listed(&self, first: usize) -> Vec<(usize, &Finding)> {
        let mut all: Vec<(usize, &Finding)> = self
            .per_input
            .iter()
            .enumerate()
            .flat_map(|(i, fs)| fs.iter().map(move |f| (i, f)))
            .collect();
        all.sort_by_key(|(_, f)| Reverse(f.severity));
        all.truncate(first);
        all
    }
}

/// Reads the run's findings for a report that lists the first `first` of them, and
/// the findings that name a call it shows (`named(input, finding)`).
pub fn select(
    report: &Report,
    first: usize,
    named: &dyn Fn(usize, &Finding) -> bool,
) -> io::Result<Selected> {
    let mut counts = Counts::default();
    let mut kinds = std::collections::BTreeMap::new();
    let mut input_counts = Vec::with_capacity(report.inputs.len());
    let mut worst: Option<Finding> = None;
    for ir in &report.inputs {
        let mut n = 0;
        ir.analysis.for_each_finding(|f| {
            n += 1;
            counts.add(f);
            let k = kinds.entry(f.kind).or_insert((f.severity, 0));
            k.0 = k.0.max(f.severity);
            k.1 += 1;
            if worst.as_ref().is_none_or(|w| f.severity >= w.severity) {
                worst = Some(f.clone());
            }
            Ok(())
        })?;
        input_counts.push(n);
    }
    let (bar, mut at_bar) = counts.threshold(first as u64);
    let mut per_input = Vec::with_capacity(report.inputs.len());
    for (i, ir) in report.inputs.iter().enumerate() {
        let mut kept = Vec::new();
        ir.analysis.for_each_finding(|f| {
            let top = f.severity > bar || (f.severity == bar && at_bar > 0);
            if f.severity == bar && at_bar > 0 {
                at_bar -= 1;
            }
            if top || named(i, f) {
                kept.push(f.clone());
            }
            Ok(())
        })?;
        per_input.push(kept);
    }
    Ok(Selected {
        per_input,
        counts,
        kinds,
        input_counts,
        worst,
    })
}

/// The table's findings of one input: the first `first` by severity, then by the
/// calls they name (report order among equals), and how many more there are.
pub fn first_of_input(a: &Analysis, first: usize) -> io::Result<(Vec<Finding>, u64)> {
    let mut counts = Counts::default();
    a.for_each_finding(|f| {
        counts.add(f);
        Ok(())
    })?;
    let (bar, at_bar) = counts.threshold(first as u64);
    let mut above = Vec::new();
    // Of the findings at the bar, the `at_bar` that name the earliest calls: a
    // heap whose top is the one to let go first.
    let mut at: BinaryHeap<AtBar> = BinaryHeap::new();
    let mut n = 0usize;
    a.for_each_finding(|f| {
        if f.severity > bar {
            above.push((n, f.clone()));
        } else if f.severity == bar && at_bar > 0 {
            let key = (f.calls.clone(), n);
            if (at.len() as u64) < at_bar {
                at.push(AtBar(key, f.clone()));
            } else if at.peek().is_some_and(|top| key < top.0) {
                at.pop();
                at.push(AtBar(key, f.clone()));
            }
        }
        n += 1;
        Ok(())
    })?;
    let mut listed: Vec<(Reverse<Severity>, Vec<usize>, usize, Finding)> = above
        .into_iter()
        .map(|(n, f)| (Reverse(f.severity), f.calls.clone(), n, f))
        .chain(
            at.into_iter()
                .map(|AtBar((calls, n), f)| (Reverse(f.severity), calls, n, f)),
        )
        .collect();
    listed.sort_by(|x, y| (&x.0, &x.1, x.2).cmp(&(&y.0, &y.1, y.2)));
    let more = counts.total() - listed.len() as u64;
    Ok((listed.into_iter().map(|(_, _, _, f)| f).collect(), more))
}

/// A finding at the bar, ordered by the calls it names, then its place.
struct AtBar((Vec<usize>, usize), Finding);

impl PartialEq for AtBar {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for AtBar {}

impl PartialOrd for AtBar {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for AtBar {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{InputReport, Status};
    use crate::correlate::Scope;
    use crate::ingest::Format;
    use crate::model::{FindingKind, Locator};

    fn finding(severity: Severity, call: usize) -> Finding {
        Finding {
            kind: FindingKind::NonTerminal,
            severity,
            scope: Scope::session("s"),
            ids: Vec::new(),
            calls: vec![call],
            locators: vec![Locator::Line {
                line: call as u64 + 1,
            }],
            detail: format!("{severity} {call}"),
        }
    }

    fn input(findings: Vec<Finding>) -> InputReport {
        InputReport {
            path: "in".to_owned(),
            format: Format::Jsonl,
            status: Status::Ok,
            error: None,
            analysis: Analysis {
                findings,
                ..Default::default()
            },
            stable_path: "in".to_owned(),
        }
    }

    fn details<'a>(fs: impl IntoIterator<Item = &'a Finding>) -> Vec<&'a str> {
        fs.into_iter().map(|f| f.detail.as_str()).collect()
    }

    /// The first `n` are the most severe, in input order within a severity (the
    /// severity at the bar contributes only its first); a finding that names a
    /// call the report shows is kept besides, but not listed; counts and the
    /// worst are of every finding.
    #[test]
    fn a_run_keeps_its_first_findings_and_those_naming_calls_shown() {
        use Severity::*;
        let report = Report {
            inputs: vec![
                input(vec![finding(Low, 0), finding(Medium, 1), finding(High, 2)]),
                input(vec![finding(Medium, 0), finding(Info, 1), finding(High, 2)]),
            ],
            ..Report::default()
        };
        let s = select(&report, 3, &|i, f| i == 1 && f.calls == [1]).unwrap();
        assert_eq!(details(&s.per_input[0]), ["MEDIUM 1", "HIGH 2"]);
        assert_eq!(details(&s.per_input[1]), ["INFO 1", "HIGH 2"]);
        let listed: Vec<(usize, &str)> = s
            .listed(3)
            .into_iter()
            .map(|(i, f)| (i, f.detail.as_str()))
            .collect();
        assert_eq!(listed, [(0, "HIGH 2"), (1, "HIGH 2"), (0, "MEDIUM 1")]);
        assert_eq!(s.counts.total(), 6);
        assert_eq!((s.counts.of(High), s.counts.of(Medium)), (2, 2));
        assert_eq!(s.input_counts, [3, 3]);
        assert_eq!(s.worst.as_ref().map(|f| f.detail.as_str()), Some("HIGH 2"));
        assert_eq!(s.kinds.get(&FindingKind::NonTerminal), Some(&(High, 6)));
    }

    /// An input's table lists its first `n` by severity, then by the calls they
    /// name, and counts the rest.
    #[test]
    fn an_input_lists_its_first_findings_by_severity_then_calls() {
        use Severity::*;
        let a = input(vec![
            finding(Medium, 9),
            finding(High, 5),
            finding(Medium, 3),
            finding(Low, 1),
            finding(Medium, 4),
        ])
        .analysis;
        let (fs, more) = first_of_input(&a, 3).unwrap();
        assert_eq!(details(&fs), ["HIGH 5", "MEDIUM 3", "MEDIUM 4"]);
        assert_eq!(more, 2);
        let (fs, more) = first_of_input(&a, 10).unwrap();
        assert_eq!(
            details(&fs),
            ["HIGH 5", "MEDIUM 3", "MEDIUM 4", "MEDIUM 9", "LOW 1"]
        );
        assert_eq!(more, 0);
    }
}
