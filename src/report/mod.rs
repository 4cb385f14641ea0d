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
pub mod markdown;
pub mod redact;
mod table;

pub use baseline::{Baseline, BaselineError};
pub use filter::Filter;
pub use gate::Condition;
pub use redact::Redactor;

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
}

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
