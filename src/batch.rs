//! The batch driver: expands paths (files, directories, `-`), analyses every input in
//! parallel with rayon, catches a panic in one input as an internal error for that
//! input alone, and returns the reports in a stable order (the order inputs were
//! named, directories walked in sorted order).

use crate::config::Config;
use crate::correlate::{Analysis, Correlator};
use crate::ingest::{self, Format, IngestError, Sniffed};
use rayon::prelude::*;
use std::fs::File;
use std::io::{self, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

/// One input to analyse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Path(PathBuf),
    Stdin,
}

impl Input {
    /// The path as the user gave it (or as found under a directory they gave).
    pub fn display(&self) -> String {
        match self {
            Input::Path(p) => p.display().to_string(),
            Input::Stdin => "-".to_owned(),
        }
    }
}

/// Whether an input was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Error,
}

/// The result of analysing one input.
#[derive(Debug)]
pub struct InputReport {
    pub path: String,
    pub format: Format,
    pub status: Status,
    /// Why the input could not be read (status `Error`).
    pub error: Option<String>,
    pub analysis: Analysis,
}

impl InputReport {
    /// True when anything in this input could not be read or parsed (exit code 2).
    pub fn has_errors(&self) -> bool {
        self.status == Status::Error || !self.analysis.problems.is_empty()
    }
}

/// What a whole run produced.
#[derive(Debug, Default)]
pub struct Report {
    pub inputs: Vec<InputReport>,
    /// Files found under directories that are not in a format mcpsift reads.
    pub skipped: Vec<(String, String)>,
    /// Findings removed because a `--baseline` accepts them.
    pub baseline_accepted: usize,
    /// The filters that narrowed this report, in words (empty: none).
    pub filters: String,
}

impl Report {
    pub fn has_errors(&self) -> bool {
        self.inputs.iter().any(InputReport::has_errors)
    }
}

/// A path the user named that does not exist or cannot be listed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct PathError {
    pub path: String,
    #[source]
    pub source: io::Error,
}

/// A file to analyse, and whether it was found by walking a directory; or a path
/// that could not be opened, kept in place so reports follow the order given.
enum Planned {
    File { input: Input, walked: bool },
    Missing(PathError),
}

fn plan(inputs: &[Input]) -> Vec<Planned> {
    let mut out = Vec::new();
    for input in inputs {
        let Input::Path(p) = input else {
            out.push(Planned::File {
                input: input.clone(),
                walked: false,
            });
            continue;
        };
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {
                let walker = walkdir::WalkDir::new(p)
                    .follow_links(false)
                    .sort_by_file_name();
                for entry in walker {
                    match entry {
                        Ok(e) if e.file_type().is_file() => out.push(Planned::File {
                            input: Input::Path(e.into_path()),
                            walked: true,
                        }),
                        Ok(_) => {}
                        Err(e) => out.push(Planned::Missing(PathError {
                            path: e
                                .path()
                                .map(|p| p.display().to_string())
                                .unwrap_or_else(|| p.display().to_string()),
                            source: e
                                .into_io_error()
                                .unwrap_or_else(|| io::Error::other("directory loop")),
                        })),
                    }
                }
            }
            Ok(_) => out.push(Planned::File {
                input: input.clone(),
                walked: false,
            }),
            Err(source) => out.push(Planned::Missing(PathError {
                path: p.display().to_string(),
                source,
            })),
        }
    }
    out
}

/// Analyses every input. Path errors (a missing file) become error reports too.
pub fn run(inputs: &[Input], config: &Config) -> Report {
    let planned = plan(inputs);
    let work = || -> Vec<Result<InputReport, (String, String)>> {
        planned.par_iter().map(|p| analyse_one(p, config)).collect()
    };
    let results = if config.threads > 0 {
        match rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads)
            .build()
        {
            Ok(pool) => pool.install(work),
            Err(_) => work(),
        }
    } else {
        work()
    };
    let mut report = Report::default();
    for r in results {
        match r {
            Ok(ir) => report.inputs.push(ir),
            Err(skip) => report.skipped.push(skip),
        }
    }
    report
}

/// `Err`: a file found under a directory that is not an input, skipped with a reason.
fn analyse_one(p: &Planned, config: &Config) -> Result<InputReport, (String, String)> {
    let (input, walked) = match p {
        Planned::File { input, walked } => (input, *walked),
        Planned::Missing(e) => {
            return Ok(InputReport {
                path: e.path.clone(),
                format: Format::Unknown,
                status: Status::Error,
                error: Some(e.source.to_string()),
                analysis: Analysis::default(),
            });
        }
    };
    let path = input.display();
    let outcome = catch_unwind(AssertUnwindSafe(|| analyse_input(input, config)));
    let report = match outcome {
        Ok(Ok((format, analysis))) => InputReport {
            path,
            format,
            status: Status::Ok,
            error: None,
            analysis,
        },
        Ok(Err(e)) => {
            if walked
                && matches!(
                    e,
                    IngestError::Empty | IngestError::Binary(_) | IngestError::Unrecognised(_)
                )
            {
                return Err((path, e.to_string()));
            }
            InputReport {
                path,
                format: Format::Unknown,
                status: Status::Error,
                error: Some(e.to_string()),
                analysis: Analysis::default(),
            }
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            InputReport {
                path,
                format: Format::Unknown,
                status: Status::Error,
                error: Some(format!(
                    "internal error while analysing this input (a bug in mcpsift; please report it with the input): {what}"
                )),
                analysis: Analysis::default(),
            }
        }
    };
    Ok(report)
}

/// Analyses one input from start to end.
pub fn analyse_input(input: &Input, config: &Config) -> Result<(Format, Analysis), IngestError> {
    let reader: Box<dyn Read> = match input {
        Input::Path(p) => Box::new(File::open(p)?),
        Input::Stdin => Box::new(io::stdin().lock()),
    };
    analyse_reader(reader, config)
}

/// Analyses one input from any reader.
pub fn analyse_reader(
    reader: impl Read,
    config: &Config,
) -> Result<(Format, Analysis), IngestError> {
    let mut sink = Correlator::new();
    let format = ingest::ingest(reader, &config.limits, &mut sink)?;
    Ok((format, sink.finish()))
}

/// Re-exported so callers can sniff without reading.
pub fn sniff(head: &[u8]) -> Sniffed {
    ingest::sniff(head)
}
