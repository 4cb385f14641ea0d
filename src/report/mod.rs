//! Report stage: presentation only, never recomputes a verdict. One emitter per
//! output format (hyperfine's exporters, ruff's emitters), plus the passes every
//! format shares and that run before any emitter: filters, the baseline, and
//! redaction (in that order; `main.rs` wires them).

pub mod advice;
pub mod baseline;
pub mod filter;
pub mod gate;
pub mod html;
pub mod jsonl;
pub mod kept;
pub mod markdown;
pub mod redact;
pub mod shown;
pub mod summary;
mod table;

pub use baseline::{Applied, Baseline, BaselineError};
pub use filter::{Filter, Unmatched};
pub use gate::Condition;
pub use kept::{attention_sinks, take_attention};
pub use redact::Redactor;
pub use summary::Summary;

use crate::batch::Report;
use std::io::{self, Write};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Table,
    Json,
    Jsonl,
    Markdown,
    /// One self-contained page (`html.rs`).
    Html,
}

/// Options for human formats.
#[derive(Debug, Clone, Default)]
pub struct HumanOptions {
    /// Show successful calls too, not only their count.
    pub all: bool,
    /// Terminal width for the table; `None` = no limit.
    pub width: Option<u16>,
    pub color: bool,
    /// The run behind the Markdown report, for its header; `None`: no header.
    pub run: Option<RunInfo>,
    /// Longest Markdown report, in characters: past it whole sections are left out
    /// and the report says which (a GitHub issue body holds 65,536).
    pub max_chars: Option<usize>,
}

/// What a ticket's reader needs to know about the run that made the report.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// The command line as typed; redacted when the report is written.
    pub command: String,
    /// When the report was made; `None` leaves it out, so output is reproducible.
    pub generated: Option<crate::model::Timestamp>,
}

/// GitHub's limit on an issue or comment body, in characters (`--github`).
pub const GITHUB_MAX_CHARS: usize = 65_536;

/// Writes `report` in `format`.
pub fn write(
    report: &Report,
    format: OutputFormat,
    opts: &HumanOptions,
    w: &mut dyn Write,
) -> io::Result<()> {
    match format {
        OutputFormat::Jsonl => jsonl::write_jsonl(report, w),
        OutputFormat::Json => jsonl::write_json(report, w),
        OutputFormat::Table => table::write(report, opts, w),
        OutputFormat::Markdown => markdown::write(report, opts, w),
        OutputFormat::Html => html::write(report, w),
    }
}

/// The shared passes over one input at a time, for a run that writes each input's
/// records before the next one is read (a streaming JSONL or JSON run), in the order
/// a run that keeps every input applies them to the whole report: the call filters,
/// the baseline written (`--write-baseline`), the baseline applied (`--baseline`).
/// Inputs are given in input order: a baseline entry accepts the first finding that
/// matches it. Redaction is the writer's (`jsonl::Streamer::input`).
pub struct InputPasses<'a> {
    filter: &'a Filter,
    redactor: Redactor,
    writing: Option<baseline::Writer<Box<dyn Write + Send + 'a>>>,
    /// The first error writing the baseline; nothing more is written after it.
    error: Option<io::Error>,
    applying: Option<baseline::Applying>,
}

impl<'a> InputPasses<'a> {
    /// `write_baseline`: where the baseline of the run's findings goes (its start is
    /// written here); `apply`: the baseline to accept findings by.
    pub fn new(
        filter: &'a Filter,
        redactor: Redactor,
        write_baseline: Option<Box<dyn Write + Send + 'a>>,
        apply: Option<&Baseline>,
    ) -> io::Result<Self> {
        Ok(InputPasses {
            filter,
            redactor,
            writing: write_baseline.map(baseline::Writer::new).transpose()?,
            error: None,
            applying: apply.map(Baseline::applying),
        })
    }

    /// Narrows the next input, adds its findings to the baseline written, and takes
    /// away those the baseline applied accepts.
    pub fn input(&mut self, ir: &mut crate::batch::InputReport) {
        filter::apply_input(&mut ir.analysis, self.filter);
        if self.writing.is_none() && self.applying.is_none() {
            return;
        }
        // A baseline edits the findings: those the run moved to disk come back.
        kept::hold_input_findings(&mut ir.analysis);
        if let (Some(w), None) = (&mut self.writing, &self.error) {
            if let Err(e) = w.input(ir, &self.redactor) {
                self.error = Some(e);
            }
        }
        if let Some(b) = &mut self.applying {
            b.input(ir);
        }
    }

    /// Ends the baseline written (an error if any write failed), notes on `report`
    /// (every input given) the filters and what the baseline accepted, and says what
    /// the baseline applied did. The inputs are not filtered again: `--finding` keeps
    /// the calls the findings named before the baseline took some of them away.
    pub fn finish(self, report: &mut Report) -> (io::Result<()>, Option<Applied>) {
        let written = match (self.writing, self.error) {
            (_, Some(e)) => Err(e),
            (Some(w), None) => w.finish().and_then(|mut w| w.flush()),
            (None, None) => Ok(()),
        };
        if !self.filter.is_empty() {
            report.filters = self.filter.describe();
        }
        let applied = self.applying.map(baseline::Applying::finish);
        if let Some(a) = &applied {
            report.baseline_accepted = a.accepted;
        }
        (written, applied)
    }
}

/// Location of a call or finding in words: `file:line 12`.
pub(crate) fn place(input: &str, loc: &crate::model::Locator) -> String {
    match loc {
        crate::model::Locator::Input => input.to_owned(),
        other => format!("{input} ({other})"),
    }
}
