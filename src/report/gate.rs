//! CI gates (`--fail-on`): conditions on a report that turn exit code 0 into 1.
//! A condition names an outcome (`HTTP_ERROR`), a finding kind (`UNSAFE_REPLAY`) or
//! a severity (`high`: findings at or above it), case-insensitively, `-` for `_`.

use crate::batch::Report;
use crate::model::{FindingKind, Outcome, Severity};
use std::fmt;

/// One `--fail-on` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    Outcome(Outcome),
    Finding(FindingKind),
    /// Findings of this severity or higher.
    Severity(Severity),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown --fail-on value {given:?}: expected an outcome ({outcomes}), a finding kind ({findings}) or a severity ({severities})")]
pub struct UnknownCondition {
    pub given: String,
    outcomes: String,
    findings: String,
    severities: String,
}

fn names<T: Copy>(all: &[T], f: fn(T) -> &'static str) -> String {
    all.iter().map(|x| f(*x)).collect::<Vec<_>>().join(", ")
}

impl std::str::FromStr for Condition {
    type Err = UnknownCondition;

    fn from_str(s: &str) -> Result<Condition, UnknownCondition> {
        if let Some(o) = Outcome::parse(s) {
            return Ok(Condition::Outcome(o));
        }
        if let Some(k) = FindingKind::parse(s) {
            return Ok(Condition::Finding(k));
        }
        if let Some(v) = Severity::parse(s) {
            return Ok(Condition::Severity(v));
        }
        Err(UnknownCondition {
            given: s.to_owned(),
            outcomes: names(Outcome::ALL, Outcome::as_str),
            findings: names(FindingKind::ALL, FindingKind::as_str),
            severities: names(Severity::ALL, |v| v.as_str()).to_ascii_lowercase(),
        })
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Condition::Outcome(o) => write!(f, "{o}"),
            Condition::Finding(k) => write!(f, "{k}"),
            Condition::Severity(s) => write!(f, "{} or higher", s.as_str().to_ascii_lowercase()),
        }
    }
}

/// What matched one condition: `2 × UNSAFE_REPLAY`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub condition: Condition,
    pub count: usize,
}

impl fmt::Display for Match {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.condition {
            Condition::Outcome(_) => "call",
            _ => "finding",
        };
        write!(
            f,
            "{} {what}{} {}",
            self.count,
            if self.count == 1 { "" } else { "s" },
            self.condition
        )
    }
}

/// The conditions that match `report`, each with its count.
pub fn evaluate(report: &Report, conditions: &[Condition]) -> Vec<Match> {
    let findings = |keep: &dyn Fn(FindingKind, Severity) -> bool| {
        report
            .inputs
            .iter()
            .map(|i| i.analysis.finding_counts().count(keep) as usize)
            .sum()
    };
    conditions
        .iter()
        .map(|&condition| {
            let count = match condition {
                Condition::Outcome(o) => report
                    .inputs
                    .iter()
                    .map(|i| i.analysis.outcome_count(o) as usize)
                    .sum(),
                Condition::Finding(k) => findings(&|kind, _| kind == k),
                Condition::Severity(s) => findings(&|_, sev| sev >= s),
            };
            Match { condition, count }
        })
        .filter(|m| m.count > 0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses() {
        for o in Outcome::ALL {
            assert_eq!(o.as_str().parse(), Ok(Condition::Outcome(*o)));
        }
        for k in FindingKind::ALL {
            let lower = k.as_str().to_ascii_lowercase().replace('_', "-");
            assert_eq!(lower.parse(), Ok(Condition::Finding(*k)));
        }
        assert_eq!("high".parse(), Ok(Condition::Severity(Severity::High)));
        let e = "loud".parse::<Condition>().unwrap_err().to_string();
        assert!(e.contains("UNSAFE_REPLAY") && e.contains("medium"), "{e}");
    }
}
