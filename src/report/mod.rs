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

/// Location of a call or finding in words: `file:line 12`.
pub(crate) fn place(input: &str, loc: &crate::model::Locator) -> String {
    match loc {
        crate::model::Locator::Input => input.to_owned(),
        other => format!("{input} ({other})"),
    }
}
