//! The terminal report: a summary per input, the calls worth attention, then
//! findings by severity. Successes are folded into counts unless `--all`.

use super::{place, HumanOptions};
use crate::batch::{Report, Status};
use crate::correlate::Call;
use crate::model::{Outcome, Severity};
use comfy_table::{presets, Cell, Color, ColumnConstraint, ContentArrangement, Table, Width};
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

/// Findings an input's table lists, most severe first; past it they are counted.
const SHOWN_FINDINGS: usize = 1_000;

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
            c.retry_origin.words()
        ));
    }
    let s = parts.join(": ");
    if s.chars().count() > 160 {
        format!("{}…", s.chars().take(159).collect::<String>())
    } else {
        s
    }
}

/// One line of a table: short identifier cells, then one free-text cell (why,
/// detail) that is the only one ever wrapped.
struct Row {
    cells: Vec<String>,
    /// The cells as the narrow layout shows them, the coloured one first; empty:
    /// `cells` as they are.
    block: Vec<String>,
    text: String,
    /// The colour of cell `colored`, when colour is on.
    color: Option<Color>,
    colored: usize,
}

/// The free-text column needs this much room; with less, a table would wrap it into
/// a ribbon or split identifiers, so the rows are written as blocks instead.
const MIN_TEXT_COLUMN: usize = 24;

/// Time of day of a timestamp, `HH:MM:SS.mmm` (UTC): the date is in the JSON output.
fn clock(ts: crate::model::Timestamp) -> String {
    let full = ts.to_string();
    full.get(11..23).unwrap_or(&full).to_owned()
}

fn write_rows(
    w: &mut dyn Write,
    opts: &HumanOptions,
    header: &[&str],
    rows: &[Row],
) -> io::Result<()> {
    // Each identifier column is as wide as its widest cell (or header), plus
    // borders and padding (3 per column, 1 for the table's edge).
    let fixed: usize = (0..header.len() - 1)
        .map(|i| {
            rows.iter()
                .map(|r| r.cells[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
                + 3
        })
        .sum::<usize>()
        + 4;
    if let Some(width) = opts.width {
        if (width as usize) < fixed + MIN_TEXT_COLUMN {
            return write_blocks(w, opts, rows, width as usize);
        }
    }
    let mut t = new_table(opts);
    t.set_header(header.to_vec());
    // Identifiers keep their whole width: only the free text wraps.
    let mut constraints = vec![ColumnConstraint::ContentWidth; header.len() - 1];
    constraints.push(ColumnConstraint::LowerBoundary(Width::Fixed(
        MIN_TEXT_COLUMN as u16,
    )));
    t.set_constraints(constraints);
    for r in rows {
        let mut cells: Vec<Cell> = r.cells.iter().map(Cell::new).collect();
        if let Some(c) = r.color {
            cells[r.colored] = Cell::new(&r.cells[r.colored]).fg(c);
        }
        cells.push(Cell::new(&r.text));
        t.add_row(cells);
    }
    writeln!(w, "{t}")
}

/// The narrow layout: per row, its identifiers on one line (wrapped between cells,
/// never inside one), then the free text wrapped between words behind a gutter.
fn write_blocks(
    w: &mut dyn Write,
    opts: &HumanOptions,
    rows: &[Row],
    width: usize,
) -> io::Result<()> {
    for r in rows {
        let cells = if r.block.is_empty() {
            &r.cells
        } else {
            &r.block
        };
        let first = if r.block.is_empty() { r.colored } else { 0 };
        let mut line = String::from("•");
        let mut len = 1;
        for (i, cell) in cells.iter().enumerate() {
            if cell.is_empty() {
                continue;
            }
            let cell_len = cell.chars().count();
            if len + 2 + cell_len > width && len > 2 {
                writeln!(w, "{line}")?;
                // Continued items line up under the first one.
                line = String::from(" ");
                len = 1;
            }
            line.push_str("  ");
            match r.color {
                Some(c) if i == first && opts.color => {
                    line.push_str(&format!("\u{1b}[{}m{cell}\u{1b}[0m", ansi(c)))
                }
                _ => line.push_str(cell),
            }
            len += 2 + cell_len;
        }
        writeln!(w, "{line}")?;
        if !r.text.is_empty() {
            // The reason hangs off a gutter, so it never reads as one more item.
            w.write_all(wrap_words(&r.text, "   │ ", width).as_bytes())?;
        }
    }
    Ok(())
}

fn ansi(c: Color) -> u8 {
    match c {
        Color::Red => 31,
        Color::Green => 32,
        Color::Yellow => 33,
        _ => 39,
    }
}

/// `text` wrapped at `width` between words, each line starting with `indent`; a word
/// longer than a line stays whole.
fn wrap_words(text: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = indent.to_owned();
    let mut len = indent.chars().count();
    let mut empty = true;
    for word in text.split_whitespace() {
        let n = word.chars().count();
        if !empty && len + 1 + n > width {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_owned();
            len = indent.chars().count();
            empty = true;
        }
        if !empty {
            line.push(' ');
            len += 1;
        }
        line.push_str(word);
        len += n;
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
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
            let n = a.outcome_count(*o);
            if n > 0 {
                counts.push(format!("{n} {o}"));
            }
        }
        let summary = format!(
            "{} ({}): {} exchanges, {} tools/call{}",
            ir.path,
            ir.format.as_str(),
            a.exchanges,
            a.call_count(),
            if counts.is_empty() {
                String::new()
            } else {
                format!(": {}", counts.join(", "))
            }
        );
        match opts.width {
            // Wrapped between words, later lines indented, like the blocks.
            Some(width) => {
                let wrapped = wrap_words(&summary, "  ", width as usize);
                w.write_all(wrapped.trim_start().as_bytes())?;
            }
            None => writeln!(w, "{summary}")?,
        }
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
        let (shown, unlisted) = if opts.all {
            (a.calls.iter().collect(), 0)
        } else {
            super::kept::attention(a)
        };
        if !shown.is_empty() {
            // A time column only when the input recorded times (a bare `tee` has none).
            let timed = shown.iter().any(|c| c.started_at.is_some());
            // No http column for stdio and client logs, where it would only say "-".
            let has_http = shown
                .iter()
                .any(|c| !c.verdict.evidence.http_statuses.is_empty());
            let mut header = vec!["where", "tool", "id", "outcome", "layer", "http"];
            if !has_http {
                header.pop();
            }
            if timed {
                header.insert(1, "time");
            }
            header.push("why");
            let rows: Vec<Row> = shown
                .iter()
                .map(|c| {
                    let http = c
                        .verdict
                        .evidence
                        .http_statuses
                        .iter()
                        .map(u16::to_string)
                        .collect::<Vec<_>>()
                        .join(",");
                    let mut cells = vec![
                        c.locator.to_string(),
                        c.tool.as_deref().unwrap_or("?").to_owned(),
                        c.id.to_string(),
                        c.verdict.outcome.as_str().to_owned(),
                        c.verdict.layer.as_str().to_owned(),
                        if http.is_empty() {
                            "-".to_owned()
                        } else {
                            http
                        },
                    ];
                    let time = c.started_at.map(clock);
                    // The narrow layout leads with the outcome and labels bare numbers.
                    // The verdict first, as one item that is never split.
                    let verdict = if cells[5] == "-" {
                        format!("{} ({})", cells[3], cells[4])
                    } else {
                        format!("{} ({}, HTTP {})", cells[3], cells[4], cells[5])
                    };
                    let mut block = vec![
                        verdict,
                        format!("{} id {}", cells[1], cells[2]),
                        cells[0].clone(),
                    ];
                    block.extend(time.clone());
                    if !has_http {
                        cells.pop();
                    }
                    if timed {
                        cells.insert(1, time.unwrap_or_default());
                    }
                    Row {
                        block,
                        cells,
                        text: why(c),
                        color: opts.color.then(|| outcome_color(c.verdict.outcome)),
                        colored: if timed { 4 } else { 3 },
                    }
                })
                .collect();
            write_rows(w, opts, &header, &rows)?;
        }
        if unlisted > 0 {
            writeln!(
                w,
                "  {unlisted} more calls that need attention (all are listed with --format jsonl)"
            )?;
        }
        let (findings, more_findings) = super::shown::first_of_input(a, SHOWN_FINDINGS)?;
        if !findings.is_empty() {
            let rows: Vec<Row> = findings
                .iter()
                .map(|f| Row {
                    block: Vec::new(),
                    cells: vec![
                        f.severity.as_str().to_owned(),
                        f.kind.as_str().to_owned(),
                        super::markdown::ids_once(f),
                        f.locators
                            .iter()
                            .map(|l| l.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                    ],
                    text: f.detail.clone(),
                    color: (opts.color && f.severity >= Severity::Medium).then(|| {
                        if f.severity == Severity::High {
                            Color::Red
                        } else {
                            Color::Yellow
                        }
                    }),
                    colored: 0,
                })
                .collect();
            write_rows(
                w,
                opts,
                &["severity", "finding", "ids", "where", "detail"],
                &rows,
            )?;
        }
        if more_findings > 0 {
            writeln!(
                w,
                "  {more_findings} more findings (all are listed with --format jsonl)"
            )?;
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
    let calls: u64 = report.inputs.iter().map(|i| i.analysis.call_count()).sum();
    let failing: u64 = report
        .inputs
        .iter()
        .flat_map(|i| {
            Outcome::ALL
                .iter()
                .filter(|o| !o.is_success())
                .map(|o| i.analysis.outcome_count(*o))
        })
        .sum();
    let findings: u64 = report
        .inputs
        .iter()
        .map(|i| i.analysis.finding_counts().count(|_, _| true))
        .sum();
    let again = match report.reinvocations() {
        0 => String::new(),
        1 => ", 1 re-invocation (a call made again later; not a retry)".to_owned(),
        n => format!(", {n} re-invocations (calls made again later; not retries)"),
    };
    // Errors are counted here too: a run that read nothing must not look clean.
    let errors = report.inputs.iter().filter(|i| i.has_errors()).count();
    writeln!(
        w,
        "{} input{}{}, {calls} tools/call, {failing} not TOOL_SUCCESS, {findings} finding{}{again}",
        report.inputs.len(),
        if report.inputs.len() == 1 { "" } else { "s" },
        if errors > 0 {
            format!(" ({errors} with errors, see stderr)")
        } else {
            String::new()
        },
        if findings == 1 { "" } else { "s" }
    )
}
