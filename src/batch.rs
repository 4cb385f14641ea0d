//! The batch driver: expands paths (files, directories, `-`), analyses every input in
//! parallel with rayon, catches a panic in one input as an internal error for that
//! input alone, and returns the reports in a stable order (the order inputs were
//! named, directories walked in sorted order).

use crate::config::Config;
use crate::correlate::{Analysis, Correlator};
use crate::ingest::{self, Format, IngestError, Opened};
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
    /// The path as it would be under any spelling of the command line: relative to
    /// the directory given (prefixed with that directory's name), or the file name
    /// of a file given directly; `ARCHIVE!/member` for archive members. Baselines
    /// key findings by it, so absolute and relative invocations agree.
    pub stable_path: String,
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
    /// Directories named as inputs in which no input was found (every file was
    /// skipped, or there were none): worth a warning, as a wrong path looks alike.
    pub empty_dirs: Vec<String>,
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
                        Ok(e) if e.file_type().is_file() && !is_readme(e.path()) => {
                            out.push(Planned::File {
                                input: Input::Path(e.into_path()),
                                walked: true,
                            })
                        }
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

/// A README found while walking a directory: it describes the folder (as
/// `samples/README.md` does), so it is neither read nor listed as skipped. Named
/// on the command line, it is read like any other file.
fn is_readme(path: &std::path::Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
        let n = n.to_ascii_lowercase();
        n == "readme" || n == "readme.md" || n == "readme.txt"
    })
}

/// `path` (as reported) without what depends on how the command line spelled it:
/// see `InputReport::stable_path`.
fn stable_path(path: &str, inputs: &[Input]) -> String {
    let (outer, member) = match path.split_once("!/") {
        Some((o, m)) => (o, Some(m)),
        None => (path, None),
    };
    let p = std::path::Path::new(outer);
    let mut stable = None;
    for input in inputs {
        let Input::Path(root) = input else { continue };
        if root.is_dir() {
            if let Ok(rel) = p.strip_prefix(root) {
                let name = root
                    .canonicalize()
                    .ok()
                    .and_then(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_default();
                let rel = rel.to_string_lossy().replace('\\', "/");
                stable = Some(if name.is_empty() {
                    rel
                } else {
                    format!("{name}/{rel}")
                });
                break;
            }
        }
    }
    let stable = stable.unwrap_or_else(|| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| outer.to_owned())
    });
    match member {
        Some(m) => format!("{stable}!/{m}"),
        None => stable,
    }
}

/// Analyses every input. Path errors (a missing file) become error reports too.
pub fn run(inputs: &[Input], config: &Config) -> Report {
    let planned = plan(inputs);
    let work =
        || -> Vec<Vec<Analysed>> { planned.par_iter().map(|p| analyse_one(p, config)).collect() };
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
    for r in results.into_iter().flatten() {
        match r {
            Ok(ir) => report.inputs.push(ir),
            Err(skip) => report.skipped.push(skip),
        }
    }
    for ir in &mut report.inputs {
        ir.stable_path = stable_path(&ir.path, inputs);
    }
    for input in inputs {
        if let Input::Path(p) = input {
            if p.is_dir() {
                let found = report
                    .inputs
                    .iter()
                    .any(|ir| std::path::Path::new(&ir.path).starts_with(p));
                if !found {
                    report.empty_dirs.push(p.display().to_string());
                }
            }
        }
    }
    report
}

/// Most members read from one archive; past it the rest is reported, not read.
const MAX_ARCHIVE_MEMBERS: usize = 100_000;

/// What one planned input yields: one report, or one per member of an archive.
/// `Err`: a file found under a directory (or in an archive) that is not an input,
/// skipped with a reason.
pub type Analysed = Result<InputReport, (String, String)>;

fn analyse_one(p: &Planned, config: &Config) -> Vec<Analysed> {
    let (input, walked) = match p {
        Planned::File { input, walked } => (input, *walked),
        Planned::Missing(e) => {
            return vec![Ok(error_report(e.path.clone(), e.source.to_string()))];
        }
    };
    let path = input.display();
    let reader: Box<dyn Read> = match input {
        Input::Path(p) => match File::open(p) {
            Ok(f) => Box::new(f),
            Err(e) => return vec![Ok(error_report(path, e.to_string()))],
        },
        Input::Stdin => Box::new(io::stdin().lock()),
    };
    analyse_named(path, reader, walked, config)
}

/// Reads one named input from `reader`: undoes compression, and for a tar archive
/// reports every member; `walked` inputs that are no input at all are skipped.
pub fn analyse_named(
    path: String,
    reader: Box<dyn Read + '_>,
    walked: bool,
    config: &Config,
) -> Vec<Analysed> {
    let opened = guarded(|| ingest::open(reader, &config.limits));
    match opened {
        Err(bug) => vec![Ok(error_report(path, bug))],
        Ok(Err(e)) => vec![judged(path, Err(e), walked)],
        Ok(Ok(Opened::Stream(r))) => {
            vec![
                guarded(|| judged(path.clone(), analyse_opened(r, config), walked))
                    .unwrap_or_else(|bug| Ok(error_report(path, bug))),
            ]
        }
        Ok(Ok(Opened::Tar(r))) => archive_members(&path, r, config),
    }
}

/// Runs `f`, turning a panic (a bug in mcpsift) into the error text for its input.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        format!(
            "internal error while analysing this input (a bug in mcpsift; please report it with the input): {what}"
        )
    })
}

fn error_report(path: String, error: String) -> InputReport {
    InputReport {
        path,
        format: Format::Unknown,
        status: Status::Error,
        error: Some(error),
        analysis: Analysis::default(),
        stable_path: String::new(),
    }
}

/// A report from what reading one input gave; `walked` inputs that are no input
/// at all (empty, binary, unrecognised) are skipped instead of being errors.
fn judged(path: String, result: Result<(Format, Analysis), IngestError>, walked: bool) -> Analysed {
    match result {
        Ok((format, analysis)) => Ok(InputReport {
            path,
            format,
            status: Status::Ok,
            error: None,
            analysis,
            stable_path: String::new(),
        }),
        Err(e) => {
            if walked
                && matches!(
                    e,
                    IngestError::Empty | IngestError::Binary(_) | IngestError::Unrecognised(_)
                )
            {
                return Err((path, e.to_string()));
            }
            Ok(error_report(path, e.to_string()))
        }
    }
}

/// Every regular file of a tar archive, each as an input of its own named
/// `ARCHIVE!/member`; members that are no input are skipped, as in a directory.
fn archive_members(
    path: &str,
    reader: Box<dyn io::BufRead + '_>,
    config: &Config,
) -> Vec<Analysed> {
    let mut out = Vec::new();
    let mut archive = tar::Archive::new(reader);
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => {
            return vec![Ok(error_report(
                path.to_owned(),
                format!("not a readable tar archive: {e}"),
            ))]
        }
    };
    for (n, entry) in entries.enumerate() {
        if n >= MAX_ARCHIVE_MEMBERS {
            out.push(Ok(error_report(
                path.to_owned(),
                format!("the archive has more than {MAX_ARCHIVE_MEMBERS} members; the rest were not read"),
            )));
            break;
        }
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let why = match e.kind() {
                    io::ErrorKind::FileTooLarge => format!(
                        "{} after {n} members; the rest were not read",
                        IngestError::DecompressCap(config.limits.max_decompressed_bytes)
                    ),
                    _ => format!(
                        "the archive is damaged after {n} members ({e}); the rest were not read"
                    ),
                };
                out.push(Ok(error_report(path.to_owned(), why)));
                break;
            }
        };
        if !matches!(
            entry.header().entry_type(),
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse
        ) {
            continue;
        }
        let name = entry
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| format!("member {n}"));
        let member = format!("{path}!/{name}");
        let result = guarded(|| judged(member.clone(), analyse_reader(entry, config), true));
        out.push(result.unwrap_or_else(|bug| Ok(error_report(member, bug))));
    }
    out
}

/// Analyses one input from start to end (a single stream; archives are read by
/// `run`, which reports each member).
pub fn analyse_input(input: &Input, config: &Config) -> Result<(Format, Analysis), IngestError> {
    let reader: Box<dyn Read> = match input {
        Input::Path(p) => Box::new(File::open(p)?),
        Input::Stdin => Box::new(io::stdin().lock()),
    };
    analyse_reader(reader, config)
}

/// Analyses a stream `ingest::open` already decompressed (no second sniff for gzip).
fn analyse_opened(
    reader: Box<dyn io::BufRead + '_>,
    config: &Config,
) -> Result<(Format, Analysis), IngestError> {
    let mut sink = Correlator::new();
    let format = ingest::read_stream(reader, &config.limits, &mut sink)?;
    Ok((format, sink.finish()))
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
