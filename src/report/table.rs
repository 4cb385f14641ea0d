//! The terminal report: a summary per input, the calls worth attention, then
//! findings by severity. Successes are folded into counts unless `--all`.

use super::{place, HumanOptions};
use crate::batch::{Report, Status};
use crate::correlate::Call;
use crate::model::{Outcome, Severity};
use comfy_table::{presets, Cell, Color, ContentArrangement, Table};
use std::io::{self, Write};

fn outcome_color(o: Outcome) -> Color {
    match o {
        Outcome::ToolSuccess => Color::Green,
        Outcome::ToolError | Outcome::InputRequired => Color::Yellow,
        _ => Color::Red,
    }
}

fn new_table(opts: &HumanOptions) -> Table {
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    match opts.width {
        Some(w) => {
            t.set_width(w);
            t.set_content_arrangement(ContentArrangement::Dynamic);
        }
        None => {
            t.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    if !opts.color {
        t.force_no_tty();
    } else {
        t.enforce_styling();
    }
    t
}

/// Why a call is worth a look, in one line.
pub(crate) fn why(c: &Call) -> String {
    let ev = &c.verdict.evidence;
    let mut parts = Vec::new();
    if let Some(code) = ev.jsonrpc_code {
        parts.push(format!("code {code}"));
    }
    if let Some(m) = &ev.error_message {
        parts.push(m.clone());
    }
    if let Some(n) = ev.notes.first() {
        parts.push(n.clone());
    }
    if c.post_count > 1 {
        parts.push(format!(
            "attempt {} ({})",
            c.post_count,
            c.retry_origin.as_str()
        ));
    }
    let s = parts.join(": ");
    if s.chars().count() > 160 {
        format!("{}…", s.chars().take(159).collect::<String>())
    } else {
        s
    }
}

pub fn write(report: &Report, opts: &HumanOptions, w: &mut dyn Write) -> io::Result<()> {
    for ir in &report.inputs {
        let a = &ir.analysis;
        // Why an input could not be read, and its bad lines, go to stderr (main.rs):
        // printed here too, a terminal would show them twice.
        if ir.status == Status::Error {
            continue;
        }
        let mut counts: Vec<String> = Vec::new();
        for o in Outcome::ALL {
            let n = a.calls.iter().filter(|c| c.verdict.outcome == *o).count();
            if n > 0 {
                counts.push(format!("{n} {o}"));
            }
        }
        writeln!(
            w,
            "{} ({}): {} exchanges, {} tools/call{}",
            ir.path,
            ir.format.as_str(),
            a.exchanges,
            a.calls.len(),
            if counts.is_empty() {
                String::new()
            } else {
                format!(": {}", counts.join(", "))
            }
        )?;
        // A capture beside busy HTTPS traffic has a note per flow: show a few.
        for p in a.notices.iter().take(5) {
            writeln!(w, "  note at {}: {}", p.locator, p.message)?;
        }
        if a.notices.len() > 5 {
            writeln!(
                w,
                "  {} more notes (all are listed with --format jsonl)",
                a.notices.len() - 5
            )?;
        }
        match a.problems.len() {
            0 => {}
            1 => writeln!(w, "  1 problem (on stderr)")?,
            n => writeln!(w, "  {n} problems (on stderr)")?,
        }
        let shown: Vec<&Call> = a
            .calls
            .iter()
            .filter(|c| opts.all || !c.verdict.outcome.is_success() || c.post_count > 1)
            .collect();
        if !shown.is_empty() {
            let mut t = new_table(opts);
            t.set_header(vec![
                "where", "tool", "id", "outcome", "layer", "http", "why",
            ]);
            for c in shown {
                let http = c
                    .verdict
                    .evidence
                    .http_statuses
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                let mut outcome = Cell::new(c.verdict.outcome.as_str());
                if opts.color {
                    outcome = outcome.fg(outcome_color(c.verdict.outcome));
                }
                t.add_row(vec![
                    Cell::new(c.locator.to_string()),
                    Cell::new(c.tool.as_deref().unwrap_or("?")),
                    Cell::new(c.id.to_string()),
                    outcome,
                    Cell::new(c.verdict.layer.as_str()),
                    Cell::new(if http.is_empty() {
                        "-".to_owned()
                    } else {
                        http
                    }),
                    Cell::new(why(c)),
                ]);
            }
            writeln!(w, "{t}")?;
        }
        let mut findings: Vec<_> = a.findings.iter().collect();
        findings.sort_by(|x, y| y.severity.cmp(&x.severity).then(x.calls.cmp(&y.calls)));
        if !findings.is_empty() {
            let mut t = new_table(opts);
            t.set_header(vec!["severity", "finding", "ids", "where", "detail"]);
            for f in findings {
                let mut sev = Cell::new(f.severity.as_str());
                if opts.color && f.severity >= Severity::Medium {
                    sev = sev.fg(if f.severity == Severity::High {
                        Color::Red
                    } else {
                        Color::Yellow
                    });
                }
                t.add_row(vec![
                    sev,
                    Cell::new(f.kind.as_str()),
                    Cell::new(
                        f.ids
                            .iter()
                            .map(|i| i.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                    Cell::new(
                        f.locators
                            .iter()
                            .map(|l| l.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                    Cell::new(&f.detail),
                ]);
            }
            writeln!(w, "{t}")?;
        }
        writeln!(w)?;
    }
    // A log directory can hold many files that are no input: name a few, count the rest.
    const SKIPPED_SHOWN: usize = 10;
    for (path, why) in report.skipped.iter().take(SKIPPED_SHOWN) {
        writeln!(
            w,
            "skipped {}: {why}",
            place(path, &crate::model::Locator::Input)
        )?;
    }
    if report.skipped.len() > SKIPPED_SHOWN {
        writeln!(
            w,
            "skipped {} more files that are no input (all are listed with --format jsonl)",
            report.skipped.len() - SKIPPED_SHOWN
        )?;
    }
    if !report.filters.is_empty() {
        writeln!(w, "filtered: {}", report.filters)?;
    }
    if report.baseline_accepted > 0 {
        writeln!(
            w,
            "{} accepted by the baseline and not shown",
            if report.baseline_accepted == 1 {
                "1 finding".to_owned()
            } else {
                format!("{} findings", report.baseline_accepted)
            }
        )?;
    }
    let calls: usize = report.inputs.iter().map(|i| i.analysis.calls.len()).sum();
    let failing = report
        .inputs
        .iter()
        .flat_map(|i| &i.analysis.calls)
        .filter(|c| !c.verdict.outcome.is_success())
        .count();
    let findings: usize = report
        .inputs
        .iter()
        .map(|i| i.analysis.findings.len())
        .sum();
    let unread = report
        .inputs
        .iter()
        .filter(|i| i.status == Status::Error)
        .count();
    writeln!(
        w,
        "{} input{}{}, {calls} tools/call, {failing} not TOOL_SUCCESS, {findings} finding{}",
        report.inputs.len(),
        if report.inputs.len() == 1 { "" } else { "s" },
        if unread > 0 {
            format!(" ({unread} could not be read, see stderr)")
        } else {
            String::new()
        },
        if findings == 1 { "" } else { "s" }
    )
}
