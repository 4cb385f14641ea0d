//! The batch driver: expands paths (files, directories, `-`), analyses every input in
//! parallel with rayon, catches a panic in one input as an internal error for that
//! input alone, and returns the reports in a stable order (the order inputs were
//! named, directories walked in sorted order).

use crate::config::{Config, RetryWindows};
use crate::correlate::{Analysis, Call, CallSink, Correlator};
use crate::ingest::{self, Format, IngestError, Opened};
use rayon::prelude::*;
use std::fs::File;
use std::io::{self, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

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

    /// Calls that repeat an earlier call as a new intent (never a finding), counted
    /// so every format can say how much of a session was re-reads.
    pub fn reinvocations(&self) -> usize {
        self.inputs
            .iter()
            .map(|i| i.analysis.reinvocations() as usize)
            .sum()
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
/// that could not be opened, kept in place so reports follow the order given; or a
/// walked entry that is no file to read (a FIFO, a broken link), kept with its reason.
enum Planned {
    File { input: Input, walked: bool },
    Missing(PathError),
    Skipped(String, String),
}

fn plan(inputs: &[Input]) -> Vec<Planned> {
    let mut out = Vec::new();
    let mut seen = Seen::default();
    for input in inputs {
        let Input::Path(p) = input else {
            out.push(Planned::File {
                input: input.clone(),
                walked: false,
            });
            continue;
        };
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk(p, &mut seen, &mut out),
            // A named FIFO is read: `mcpsift analyze <(zcat x.gz)` names one.
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

/// Every file under `dir`, in sorted order. Symbolic links are followed (a log
/// directory often links to the latest capture), with walkdir's loop detection;
/// what cannot be read as a file is listed as skipped, with the reason, rather than
/// dropped in silence.
fn walk(dir: &std::path::Path, seen: &mut Seen, out: &mut Vec<Planned>) {
    let walker = walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name();
    for entry in walker {
        match entry {
            // The folder's own README describes it; it is no input.
            Ok(e) if e.file_type().is_file() && is_readme(e.path()) => {}
            Ok(e) if e.file_type().is_file() => {
                if let Some(first) = seen.again(&e) {
                    let why =
                        format!("the same file as {first} (linked under another name); read once");
                    out.push(Planned::Skipped(e.path().display().to_string(), why));
                    continue;
                }
                out.push(Planned::File {
                    input: Input::Path(e.into_path()),
                    walked: true,
                })
            }
            Ok(e) if e.file_type().is_dir() => {}
            Ok(e) => {
                let why = special_file(&e.file_type());
                out.push(Planned::Skipped(e.path().display().to_string(), why));
            }
            Err(e) => {
                let path = e
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| dir.display().to_string());
                if let Some(ancestor) = e.loop_ancestor() {
                    let why = format!(
                        "a symbolic link back to {}, which is being walked already (a loop); not followed",
                        ancestor.display()
                    );
                    out.push(Planned::Skipped(path, why));
                    continue;
                }
                let source = e
                    .into_io_error()
                    .unwrap_or_else(|| io::Error::other("cannot be walked"));
                let broken = source.kind() == io::ErrorKind::NotFound
                    && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
                if broken {
                    let target = std::fs::read_link(&path)
                        .map(|t| t.display().to_string())
                        .unwrap_or_default();
                    out.push(Planned::Skipped(
                        path,
                        format!("a broken symbolic link (to {target}, which does not exist)"),
                    ));
                } else {
                    out.push(Planned::Missing(PathError { path, source }));
                }
            }
        }
    }
}

/// Files already planned by walking, by device and inode: a link to a file the walk
/// also finds under its own name (`latest.pcap -> capture-12.pcap`) would otherwise
/// be analysed twice, its calls counted twice.
#[derive(Default)]
struct Seen {
    #[cfg(unix)]
    files: std::collections::HashMap<(u64, u64), String>,
}

impl Seen {
    /// The path under which this file was planned already, if it was.
    fn again(&mut self, e: &walkdir::DirEntry) -> Option<String> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let m = e.metadata().ok()?;
            let key = (m.dev(), m.ino());
            if let Some(first) = self.files.get(&key) {
                return Some(first.clone());
            }
            self.files.insert(key, e.path().display().to_string());
        }
        #[cfg(not(unix))]
        let _ = e;
        None
    }
}

/// Why a walked entry that is neither a file nor a directory is not read.
fn special_file(t: &std::fs::FileType) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe): reading it could wait forever; name it on its own to read it".to_owned();
        }
        if t.is_socket() {
            return "a socket, not a file".to_owned();
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device, not a file".to_owned();
        }
    }
    let _ = t;
    "not a regular file".to_owned()
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

/// Counters a caller may poll from another thread while `run_with_progress` works
/// (the CLI draws a bar from them); the library itself never prints progress.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes of all planned files (stdin counts as 0), set before reading starts.
    pub total_bytes: AtomicU64,
    /// Planned inputs, set before reading starts.
    pub total_inputs: AtomicU64,
    /// Bytes read so far from the files as stored (before decompression).
    pub bytes_read: AtomicU64,
    /// Inputs finished.
    pub inputs_done: AtomicU64,
}

/// Counts the bytes pulled through it; one relaxed add per read call, which reads
/// in buffer-sized steps, so the cost does not show.
struct Counted<'a, R> {
    inner: R,
    progress: &'a Progress,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.progress
            .bytes_read
            .fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Analyses every input. Path errors (a missing file) become error reports too.
pub fn run(inputs: &[Input], config: &Config) -> Report {
    run_with_progress(inputs, config, &Progress::default())
}

/// `run`, updating `progress` as bytes are read and inputs finish.
pub fn run_with_progress(inputs: &[Input], config: &Config, progress: &Progress) -> Report {
    run_inner(inputs, config, progress, None)
}

/// `run_with_progress` for a run that writes as it goes: `emit` gets each input's
/// report in input order, as soon as that input and every one before it are done,
/// and may change it (redact it); then the input's streamed calls (the spool, with
/// its memory and file), its session ids (redaction is done) and what only a
/// stage 2 run reads (observations, peers, annotations) are dropped. The report returned keeps the rest (counts, problems,
/// findings) for a summary and the exit code. Inputs are started in order, and
/// those finished while an earlier one is still read wait within `AHEAD` inputs and
/// `HELD_BYTES`, so memory does not grow with the number of inputs, however long a
/// directory or an archive.
pub fn run_emitting(
    inputs: &[Input],
    config: &Config,
    progress: &Progress,
    emit: &mut (dyn FnMut(&mut InputReport) + Send),
) -> Report {
    run_inner(inputs, config, progress, Some((emit, false)))
}

/// `run_with_progress` that hands each input's report to `visit` in input order, as
/// `run_emitting` does, and keeps all of it: for a run whose reports show a share of
/// the calls of the whole run (the HTML page's rows), which `visit` can narrow each
/// input to as inputs come, knowing the inputs before it.
pub fn run_visiting(
    inputs: &[Input],
    config: &Config,
    progress: &Progress,
    visit: &mut (dyn FnMut(&mut InputReport) + Send),
) -> Report {
    run_inner(inputs, config, progress, Some((visit, true)))
}

/// What each report goes to in input order (`run_emitting`, `run_visiting`).
type Visit<'a> = &'a mut (dyn FnMut(&mut InputReport) + Send);

fn run_inner(
    inputs: &[Input],
    config: &Config,
    progress: &Progress,
    emit: Option<(Visit<'_>, bool)>,
) -> Report {
    let planned = plan(inputs);
    // One input and spare cores: read it on one thread and correlate on another.
    let threads = threads(config);
    let config = &Config {
        pipeline: config.pipeline || (planned.len() == 1 && threads > 1),
        ..config.clone()
    };
    let sizes: Vec<u64> = planned
        .iter()
        .map(|p| match p {
            Planned::File {
                input: Input::Path(path),
                ..
            } => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .collect();
    let total: u64 = sizes.iter().sum();
    progress.total_bytes.store(total, Ordering::Relaxed);
    progress
        .total_inputs
        .store(planned.len() as u64, Ordering::Relaxed);
    let work = || -> Vec<Vec<Analysed>> {
        match emit {
            Some((emit, keep)) => in_order(&planned, &sizes, inputs, config, progress, emit, keep),
            None => planned
                .par_iter()
                .map(|p| {
                    let r = analyse_one(p, config, progress);
                    progress.inputs_done.fetch_add(1, Ordering::Relaxed);
                    r
                })
                .collect(),
        }
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

/// The threads a run uses: `--threads`, or one per core.
fn threads(config: &Config) -> usize {
    match config.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Finished inputs a writing run holds at most while an earlier input is still
/// being read, in number and in stored bytes (each counted up to `HELD_WEIGHT`: a
/// spool keeps 4 MiB of records in memory, then moves them to a file); a worker
/// waits before starting an input past either. Many small logs can be read while a
/// large capture ahead of them is, and the held spools stay within about 64 MiB and
/// 16 open files.
const AHEAD: usize = 1024;
const HELD_BYTES: u64 = 64 << 20;
const HELD_WEIGHT: u64 = 4 << 20;

/// `run_emitting`'s scheduler: every worker takes the next input in order, and
/// each report goes to `emit` once the inputs before it are written.
fn in_order(
    planned: &[Planned],
    sizes: &[u64],
    inputs: &[Input],
    config: &Config,
    progress: &Progress,
    emit: &mut (dyn FnMut(&mut InputReport) + Send),
    keep: bool,
) -> Vec<Vec<Analysed>> {
    // A spool past 4 MiB moves to a temporary file; where none can be made (no
    // writable TMPDIR) a held input keeps its records in memory, so it counts whole.
    let weight = if tempfile::tempfile().is_ok() {
        HELD_WEIGHT
    } else {
        u64::MAX
    };
    let order = Ordered {
        state: std::sync::Mutex::new(OrderState {
            next: 0,
            held: Default::default(),
            done: (0..planned.len()).map(|_| Vec::new()).collect(),
            weights: sizes.iter().map(|&n| n.min(weight)).collect(),
            held_bytes: 0,
            emit,
            keep,
            inputs,
        }),
        room: std::sync::Condvar::new(),
    };
    let taken = std::sync::atomic::AtomicUsize::new(0);
    let workers = rayon::current_num_threads().clamp(1, planned.len().max(1));
    rayon::scope(|s| {
        for _ in 0..workers {
            s.spawn(|_| loop {
                let i = taken.fetch_add(1, Ordering::Relaxed);
                let Some(p) = planned.get(i) else { break };
                order.wait_for_room(i);
                analyse_one_into(p, config, progress, &mut |a| order.put(i, a));
                order.finish(i);
                progress.inputs_done.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    order
        .state
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .done
}

struct Ordered<'e> {
    state: std::sync::Mutex<OrderState<'e>>,
    /// Signalled when the input being written moves on.
    room: std::sync::Condvar,
}

struct OrderState<'e> {
    /// The planned input being written: its reports go out as they come.
    next: usize,
    /// Reports of later inputs, and whether each of those inputs is finished.
    held: std::collections::BTreeMap<usize, (Vec<Analysed>, bool)>,
    /// Every input's reports once written (without their spools).
    done: Vec<Vec<Analysed>>,
    /// Each input's stored size, up to `HELD_WEIGHT`; and the sum of those of the
    /// finished inputs in `held`.
    weights: Vec<u64>,
    held_bytes: u64,
    emit: &'e mut (dyn FnMut(&mut InputReport) + Send),
    /// Whether a written report keeps its calls and findings (`run_visiting`).
    keep: bool,
    inputs: &'e [Input],
}

impl OrderState<'_> {
    fn write(&mut self, i: usize, mut a: Analysed) {
        if let Ok(ir) = &mut a {
            ir.stable_path = stable_path(&ir.path, self.inputs);
            (self.emit)(ir);
            if self.keep {
                self.done[i].push(a);
                return;
            }
            // Written: what is left is what a summary and the exit code read.
            let a = &mut ir.analysis;
            if let Some(streamed) = &mut a.streamed {
                streamed.product = Box::new(());
            }
            a.observations = Vec::new();
            a.scope_info = Vec::new();
            a.tools = Vec::new();
            a.session_ids = Vec::new();
            a.let_findings_go();
        }
        self.done[i].push(a);
    }
}

impl<'e> Ordered<'e> {
    fn state(&self) -> std::sync::MutexGuard<'_, OrderState<'e>> {
        // A panic while writing has been caught as that input's error already.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn put(&self, i: usize, a: Analysed) {
        let mut st = self.state();
        if i == st.next {
            st.write(i, a);
        } else {
            st.held.entry(i).or_default().0.push(a);
        }
    }

    fn finish(&self, i: usize) {
        let mut st = self.state();
        if i != st.next {
            st.held.entry(i).or_default().1 = true;
            st.held_bytes += st.weights.get(i).copied().unwrap_or(0);
            return;
        }
        loop {
            st.next += 1;
            let n = st.next;
            let Some((reports, finished)) = st.held.remove(&n) else {
                break;
            };
            for a in reports {
                st.write(n, a);
            }
            if !finished {
                break;
            }
            st.held_bytes -= st.weights.get(n).copied().unwrap_or(0);
        }
        self.room.notify_all();
    }

    fn wait_for_room(&self, i: usize) {
        let mut st = self.state();
        // Never the input being written: whoever took it must read it.
        while i > st.next && (i >= st.next + AHEAD || st.held_bytes >= HELD_BYTES) {
            st = self.room.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Most members read from one archive; past it the rest is reported, not read.
const MAX_ARCHIVE_MEMBERS: usize = 100_000;

/// What one planned input yields: one report, or one per member of an archive.
/// `Err`: a file found under a directory (or in an archive) that is not an input,
/// skipped with a reason.
pub type Analysed = Result<InputReport, (String, String)>;

fn analyse_one(p: &Planned, config: &Config, progress: &Progress) -> Vec<Analysed> {
    let mut out = Vec::new();
    analyse_one_into(p, config, progress, &mut |a| out.push(a));
    out
}

/// `analyse_one`, handing each report to `put` as it is made (an archive's members
/// one by one).
fn analyse_one_into(
    p: &Planned,
    config: &Config,
    progress: &Progress,
    put: &mut dyn FnMut(Analysed),
) {
    let (input, walked) = match p {
        Planned::File { input, walked } => (input, *walked),
        Planned::Missing(e) => {
            return put(Ok(error_report(e.path.clone(), e.source.to_string())));
        }
        Planned::Skipped(path, why) => return put(Err((path.clone(), why.clone()))),
    };
    let path = input.display();
    let (reader, size): (Box<dyn Read + '_>, _) = match input {
        Input::Path(p) => match File::open(p) {
            Ok(f) => {
                let size = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
                (Box::new(Counted { inner: f, progress }), size)
            }
            Err(e) => return put(Ok(error_report(path, e.to_string()))),
        },
        Input::Stdin => {
            let stdin = Counted {
                inner: io::stdin().lock(),
                progress,
            };
            (Box::new(stdin), None)
        }
    };
    analyse_named_into(path, reader, size, walked, config, put)
}

/// Reads one named input from `reader`: undoes compression, and for a tar archive
/// reports every member; `walked` inputs that are no input at all are skipped.
pub fn analyse_named(
    path: String,
    reader: Box<dyn Read + '_>,
    walked: bool,
    config: &Config,
) -> Vec<Analysed> {
    let mut out = Vec::new();
    analyse_named_into(path, reader, None, walked, config, &mut |a| out.push(a));
    out
}

/// `analyse_named` for an input of `size` bytes (when known), handing each report to
/// `put` as it is made.
fn analyse_named_into(
    path: String,
    reader: Box<dyn Read + '_>,
    size: Option<u64>,
    walked: bool,
    config: &Config,
    put: &mut dyn FnMut(Analysed),
) {
    // One decompression budget for the input and everything inside it.
    let budget = ingest::Expansion::new(config.limits.max_decompressed_bytes);
    let opened = guarded(|| ingest::open_within(reader, size, &config.limits, &budget));
    match opened {
        Err(bug) => put(Ok(error_report(path, bug))),
        Ok(Err(e)) => put(judged(path, Err(e), walked)),
        Ok(Ok(Opened::Stream(r))) => put(guarded(|| {
            let analysis = analyse_opened(&path, r, config, config.pipeline);
            judged(path.clone(), analysis, walked)
        })
        .unwrap_or_else(|bug| Ok(error_report(path, bug)))),
        Ok(Ok(Opened::Tar(r))) => {
            let mut nesting = Nesting {
                depth: 0,
                members: 0,
                budget,
            };
            archive_members(&path, r, config, &mut nesting, put)
        }
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
/// at all (empty, binary, unrecognised, a log with no MCP record) are skipped
/// instead of being errors. An input of which not one record could be read is an
/// error, whatever its problems were: `status: ok` would say it was read.
fn judged(path: String, result: Result<(Format, Analysis), IngestError>, walked: bool) -> Analysed {
    match result {
        Ok((format, analysis)) => {
            let nothing_read = analysis.exchanges == 0 && !analysis.problems.is_empty();
            Ok(InputReport {
                path,
                format,
                status: if nothing_read {
                    Status::Error
                } else {
                    Status::Ok
                },
                // "analysed", not "read": a Claude Desktop log of summary lines is read
                // whole and still gives nothing to judge.
                error: nothing_read.then(|| {
                    "no record could be analysed (the problems listed say why)".to_owned()
                }),
                analysis,
                stable_path: String::new(),
            })
        }
        Err(e) => {
            if walked && e.is_not_an_input() {
                return Err((path, e.to_string()));
            }
            Ok(error_report(path, e.to_string()))
        }
    }
}

/// Archives inside archives are read this deep (`a.tar!/b.tar.gz!/c.tar!/…`).
const MAX_NESTING: u32 = 4;

/// Where a walk through nested archives is: how deep, how many members were read
/// in all, and what decompression may still produce (the member cap and the
/// decompression cap hold for the whole outer archive, not per level or member).
struct Nesting {
    depth: u32,
    members: usize,
    budget: ingest::Expansion,
}

/// Every regular file of a tar archive, each as an input of its own named
/// `ARCHIVE!/member`; members that are no input are skipped, as in a directory.
/// A member that is itself an archive (`.tar`, `.tar.gz`, `.tar.zst`, …) is read
/// the same way, named `ARCHIVE!/inner.tar.gz!/member`, up to `MAX_NESTING` deep.
fn archive_members(
    path: &str,
    reader: Box<dyn io::BufRead + '_>,
    config: &Config,
    nesting: &mut Nesting,
    put: &mut dyn FnMut(Analysed),
) {
    // An archive that is the run's one input uses the spare cores for its small
    // members; nested archives and other runs read their members in turn.
    // No more helpers than queued members: more would only wait.
    let helpers = if config.pipeline && nesting.depth == 0 {
        threads(config).saturating_sub(1).min(MEMBER_QUEUE)
    } else {
        0
    };
    if helpers == 0 {
        return read_members(path, reader, config, nesting, put, None);
    }
    let done = Done::default();
    let (tx, rx) = std::sync::mpsc::sync_channel::<MemberJob>(MEMBER_QUEUE);
    let rx = std::sync::Mutex::new(rx);
    let budget = nesting.budget.clone();
    std::thread::scope(|s| {
        for _ in 0..helpers {
            s.spawn(|| loop {
                let job = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                let Ok(job) = job else { break };
                let seq = job.seq;
                done.insert(seq, job.run(config, &budget));
            });
        }
        let mut pool = MemberPool {
            tx,
            done: &done,
            next_seq: 0,
            next_out: 0,
            budget: &budget,
        };
        read_members(path, reader, config, nesting, put, Some(&mut pool));
        pool.flush(put);
        // Closing the queue ends the helpers.
        drop(pool);
    });
}

/// The members of a tar archive in order; with `pool`, small plain members are
/// analysed from memory by the pool's helpers or, when their queue is full, here.
fn read_members(
    path: &str,
    reader: Box<dyn io::BufRead + '_>,
    config: &Config,
    nesting: &mut Nesting,
    put: &mut dyn FnMut(Analysed),
    mut pool: Option<&mut MemberPool<'_>>,
) {
    // Reports put straight out must follow every member handed to the pool.
    let flushed = |pool: &mut Option<&mut MemberPool<'_>>, put: &mut dyn FnMut(Analysed)| {
        if let Some(p) = pool {
            p.flush(put);
        }
    };
    let mut archive = tar::Archive::new(reader);
    let entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => {
            return put(Ok(error_report(
                path.to_owned(),
                format!("not a readable tar archive: {e}"),
            )))
        }
    };
    for (n, entry) in entries.enumerate() {
        if nesting.members >= MAX_ARCHIVE_MEMBERS {
            flushed(&mut pool, put);
            put(Ok(error_report(
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
                flushed(&mut pool, put);
                put(Ok(error_report(path.to_owned(), why)));
                break;
            }
        };
        if !matches!(
            entry.header().entry_type(),
            tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::GNUSparse
        ) {
            continue;
        }
        nesting.members += 1;
        let name = entry
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| format!("member {n}"));
        // A PAX header may give a member a name of any length; each input's report
        // and each skipped member keep theirs, so a long one is kept short.
        let name = crate::text::kept_owned(name, crate::text::KEPT_TEXT);
        let member = format!("{path}!/{name}");
        let size = entry.size();
        let mut reader: Box<dyn Read + '_> = Box::new(entry);
        if let Some(pool) = pool.as_deref_mut().filter(|_| size < PIPELINE_MIN_MEMBER) {
            // Read whole (under 1 MiB); a read error is met again by the analysis,
            // after the same bytes, as it would be reading the member in place.
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            match (&mut reader).take(size).read_to_end(&mut bytes) {
                Ok(_) if ingest::Compression::of(&bytes).is_none() && !ingest::is_tar(&bytes) => {
                    pool.submit(member, bytes, size, config, put);
                    continue;
                }
                Ok(_) => {
                    reader = Box::new(io::Cursor::new(bytes).chain(reader));
                }
                Err(e) => {
                    let rest = ingest::FailFirst {
                        error: Some(e),
                        inner: reader,
                    };
                    reader = Box::new(io::Cursor::new(bytes).chain(rest));
                }
            }
        }
        flushed(&mut pool, put);
        guarded_member(member, reader, size, config, nesting, put);
    }
}

/// `member_reports`, a panic in it reported as the member's error.
fn guarded_member(
    member: String,
    reader: Box<dyn Read + '_>,
    size: u64,
    config: &Config,
    nesting: &mut Nesting,
    put: &mut dyn FnMut(Analysed),
) {
    // A panic inside a nested archive must not leave its depth counted.
    let depth = nesting.depth;
    let result = guarded(|| member_reports(member.clone(), reader, size, config, nesting, put));
    nesting.depth = depth;
    if let Err(bug) = result {
        put(Ok(error_report(member, bug)));
    }
}

/// Small members queued for the helpers at most: with the reports finished and not
/// yet written (`DONE_AT_MOST`), what bounds an archive's memory on several threads.
const MEMBER_QUEUE: usize = 8;
const DONE_AT_MOST: usize = 64;

/// One small archive member read into memory, to be analysed on any thread.
struct MemberJob {
    /// Its place among the members handed to the pool.
    seq: usize,
    member: String,
    bytes: Vec<u8>,
    size: u64,
}

impl MemberJob {
    fn run(self, config: &Config, budget: &ingest::Expansion) -> Vec<Analysed> {
        let mut out = Vec::new();
        // Neither compressed nor an archive (checked before it was queued): no
        // nesting to count.
        let mut nesting = Nesting {
            depth: 0,
            members: 0,
            budget: budget.clone(),
        };
        let MemberJob {
            member,
            bytes,
            size,
            ..
        } = self;
        guarded_member(
            member,
            Box::new(io::Cursor::new(bytes)),
            size,
            config,
            &mut nesting,
            &mut |a| out.push(a),
        );
        out
    }
}

/// Reports of members analysed out of turn, by their place, until written.
#[derive(Default)]
struct Done {
    reports: std::sync::Mutex<std::collections::BTreeMap<usize, Vec<Analysed>>>,
    /// Signalled on each insert.
    added: std::sync::Condvar,
}

impl Done {
    fn insert(&self, seq: usize, reports: Vec<Analysed>) {
        let mut map = self.reports.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(seq, reports);
        self.added.notify_all();
    }
}

/// The helpers of one archive, seen from the thread that reads it: it numbers the
/// members it hands out and writes their reports in that order.
struct MemberPool<'a> {
    tx: std::sync::mpsc::SyncSender<MemberJob>,
    done: &'a Done,
    next_seq: usize,
    /// The next member whose reports are to be written.
    next_out: usize,
    budget: &'a ingest::Expansion,
}

impl MemberPool<'_> {
    /// Queues a member read into `bytes` for a helper or, with the queue full,
    /// analyses it here (so this thread works too and memory stays bounded), then
    /// writes what is in turn.
    fn submit(
        &mut self,
        member: String,
        bytes: Vec<u8>,
        size: u64,
        config: &Config,
        put: &mut dyn FnMut(Analysed),
    ) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let job = MemberJob {
            seq,
            member,
            bytes,
            size,
        };
        if let Err(
            std::sync::mpsc::TrySendError::Full(job)
            | std::sync::mpsc::TrySendError::Disconnected(job),
        ) = self.tx.try_send(job)
        {
            self.done.insert(seq, job.run(config, self.budget));
        }
        self.write_ready(put, false);
    }

    /// Writes the reports in turn, then returns, unless `all` are to be written or
    /// more than `DONE_AT_MOST` wait out of turn: then it waits for the helpers.
    fn write_ready(&mut self, put: &mut dyn FnMut(Analysed), all: bool) {
        let mut map = self.done.reports.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            while let Some(reports) = map.remove(&self.next_out) {
                self.next_out += 1;
                // Written without the lock: a helper may insert meanwhile.
                drop(map);
                reports.into_iter().for_each(&mut *put);
                map = self.done.reports.lock().unwrap_or_else(|p| p.into_inner());
            }
            if self.next_out == self.next_seq || (!all && map.len() <= DONE_AT_MOST) {
                return;
            }
            map = self.done.added.wait(map).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Writes every member handed out so far, waiting for the helpers.
    fn flush(&mut self, put: &mut dyn FnMut(Analysed)) {
        self.write_ready(put, true);
    }
}

/// Archive members smaller than this (as stored) are read on one thread even when
/// the run pipelines its one input: starting and ending the correlator's thread
/// cost about 0.2 ms a member, more than a small member gains from it (an archive
/// of 4,830 session logs took 2.6 s on two threads, 1.4 s on one).
const PIPELINE_MIN_MEMBER: u64 = 1 << 20;

/// The reports of one archive member (`size` bytes as stored): one input, or the
/// members of an archive.
fn member_reports(
    member: String,
    reader: Box<dyn Read + '_>,
    size: u64,
    config: &Config,
    nesting: &mut Nesting,
    put: &mut dyn FnMut(Analysed),
) {
    match ingest::open_within(reader, Some(size), &config.limits, &nesting.budget) {
        Err(e) => put(judged(member, Err(e), true)),
        Ok(Opened::Stream(r)) => {
            let pipeline = config.pipeline && size >= PIPELINE_MIN_MEMBER;
            let analysis = analyse_opened(&member, r, config, pipeline);
            put(judged(member, analysis, true))
        }
        Ok(Opened::Tar(r)) if nesting.depth < MAX_NESTING => {
            nesting.depth += 1;
            archive_members(&member, r, config, nesting, put);
            nesting.depth -= 1;
        }
        Ok(Opened::Tar(_)) => put(Ok(error_report(
            member,
            format!("an archive nested more than {MAX_NESTING} archives deep; not read (unpack the outer ones)"),
        ))),
    }
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

/// Hands exchanges to a correlator running on a second thread, in batches, so that
/// one large input uses two cores: reading, reassembly and body decoding here;
/// pairing, classification and judging there; a streaming run's records here
/// (`Forward`); JSON-RPC parsing on whichever side is ahead. What one thread
/// allocates goes back to it to be freed (spent exchanges here, rendered calls
/// there): freed on the other thread, a block costs the allocator a cross-thread
/// free and comes back cold. The exchanges arrive in the same order, so the output is
/// the one-thread output.
struct Pipelined {
    batch: Vec<Piped>,
    /// Body bytes in `batch`.
    batch_bytes: usize,
    tx: Option<std::sync::mpsc::SyncSender<Vec<Piped>>>,
    /// What the correlator is done with, to be freed on this thread, which
    /// allocated it.
    spent: std::sync::mpsc::Receiver<Vec<crate::correlate::Spent>>,
    worker: Option<std::thread::JoinHandle<Analysis>>,
    /// Batches sent and not yet taken by the correlator.
    queued: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// `BALANCE_AT`, but for tests.
    balance_at: usize,
    /// A streaming run's call sink, run on this thread, and the judged calls the
    /// correlator hands back to it (`Forward`).
    render: Option<(Box<dyn CallSink>, Returned)>,
    /// Rendered calls going back to the correlator's thread, which made them, to be
    /// freed there.
    rendered: std::sync::mpsc::Sender<Vec<Call>>,
}

/// Judged calls handed back by the correlator's thread (`Forward`).
type Returned = std::sync::mpsc::Receiver<Vec<Call>>;

/// The correlator's call sink on a two-thread run: judged calls go back to the
/// reading thread in batches, and the real sink (redaction and the records) runs
/// there. The correlator's thread is the busier one on logs of many small calls
/// (rendering was 15% of such a run), and the reading thread has room. The channel
/// is unbounded so that neither thread ever waits on the other in both directions;
/// the reading thread empties it each time it sends a batch, and the correlator
/// releases calls in steps (`RELEASE_STEP`), so it holds a few steps at most.
struct Forward {
    batch: Vec<Call>,
    tx: std::sync::mpsc::Sender<Vec<Call>>,
}

/// Calls handed back to the reading thread at a time.
const FORWARD_BATCH: usize = 64;

impl CallSink for Forward {
    fn call(&mut self, call: Call) {
        self.batch.push(call);
        if self.batch.len() >= FORWARD_BATCH {
            let _ = self.tx.send(std::mem::take(&mut self.batch));
        }
    }

    fn finish(mut self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        if !self.batch.is_empty() {
            let _ = self.tx.send(std::mem::take(&mut self.batch));
        }
        Box::new(())
    }
}

// Exchanges unboxed: a box made here and freed on the correlator's thread cost
// more (the allocator's cross-thread free, then a cold block) than moving the
// exchange into the batch; problems are few.
#[allow(clippy::large_enum_variant)]
enum Piped {
    Exchange(crate::model::Exchange, crate::correlate::Messages),
    Problem(ingest::Problem),
    Notice(ingest::Problem),
}

/// Exchanges per batch, and batches in flight: enough to keep both threads busy,
/// few enough that the queue holds a few MB at most. A batch also ends at
/// `PIPE_BYTES` of bodies, so large tool results cannot fill the queue with
/// gigabytes (`PIPE_DEPTH` batches of 64 one-megabyte results would be 1 GB).
const PIPE_BATCH: usize = 64;
const PIPE_DEPTH: usize = 16;
const PIPE_BYTES: usize = 1 << 20;
/// Batches of spent exchanges waiting to be freed on the reading thread, which
/// takes them each time it sends a batch (so one or two wait in a steady run); a
/// few more would only add the memory of large bodies to the peak.
const SPENT_DEPTH: usize = 4;
/// Batches queued for the correlator from which the reading thread decodes the
/// exchanges it sends; with fewer, the correlator decodes them.
const BALANCE_AT: usize = 2;

impl Pipelined {
    fn new(mut correlator: Correlator) -> Pipelined {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Piped>>(PIPE_DEPTH);
        let (spent_tx, spent) = std::sync::mpsc::sync_channel(SPENT_DEPTH);
        let (rendered, to_free) = std::sync::mpsc::channel::<Vec<Call>>();
        let queued = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let taken = queued.clone();
        let worker = std::thread::spawn(move || {
            use ingest::Sink;
            for batch in rx {
                taken.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                // Calls judged here and rendered on the reading thread.
                to_free.try_iter().for_each(drop);
                let mut done = Vec::with_capacity(batch.len());
                for p in batch {
                    match p {
                        Piped::Exchange(x, m) => {
                            let here = !m.is_decoded();
                            let mut spent = correlator.exchange_spent(x, m);
                            // Messages decoded on this thread are freed on it.
                            if here {
                                spent.request = Vec::new();
                                spent.response = Vec::new();
                            }
                            done.push(spent);
                        }
                        Piped::Problem(p) => correlator.problem(p),
                        Piped::Notice(p) => correlator.notice(p),
                    }
                }
                // Full when the reading thread has not come back for it (it reads
                // a long stretch, or it has finished): then freed here.
                let _ = spent_tx.try_send(done);
            }
            correlator.finish()
        });
        Pipelined {
            batch: Vec::with_capacity(PIPE_BATCH),
            batch_bytes: 0,
            spent,
            tx: Some(tx),
            worker: Some(worker),
            queued,
            balance_at: BALANCE_AT,
            render: None,
            rendered,
        }
    }

    /// A pipeline whose judged calls go to `sink`, run on this (the reading) thread.
    fn streaming(windows: RetryWindows, sink: Box<dyn CallSink>) -> Pipelined {
        let (tx, rx) = std::sync::mpsc::channel();
        let forward = Forward {
            batch: Vec::with_capacity(FORWARD_BATCH),
            tx,
        };
        let mut p = Pipelined::new(Correlator::streaming(windows, Box::new(forward)));
        p.render = Some((sink, rx));
        p
    }

    /// Hands the judged calls that came back to the sink, in their order.
    fn render(&mut self) {
        if let Some((sink, rx)) = &mut self.render {
            while let Ok(calls) = rx.try_recv() {
                // Collected in place: the batch's own vector goes back with them.
                let done: Vec<Call> = calls
                    .into_iter()
                    .filter_map(|c| sink.call_returning(c))
                    .collect();
                // Closed once the correlator has ended: then they are freed here.
                let _ = self.rendered.send(done);
            }
        }
    }

    fn push(&mut self, p: Piped) {
        if let Piped::Exchange(x, _) = &p {
            let bytes = usize::try_from(x.body_bytes()).unwrap_or(usize::MAX);
            self.batch_bytes = self.batch_bytes.saturating_add(bytes);
        }
        self.batch.push(p);
        if self.batch.len() >= PIPE_BATCH || self.batch_bytes >= PIPE_BYTES {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        self.batch_bytes = 0;
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(PIPE_BATCH));
        // A closed channel means the worker panicked; `finish` reports it.
        if let Some(tx) = &self.tx {
            self.queued
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let _ = tx.send(batch);
        }
        while let Ok(spent) = self.spent.try_recv() {
            drop(spent);
        }
        self.render();
    }

    /// Waits for the correlator; a panic there is raised here, where the caller's
    /// guard turns it into an error for this input.
    fn finish(mut self) -> Analysis {
        self.flush();
        self.tx = None;
        let mut analysis = match self.worker.take().map(|w| w.join()) {
            Some(Ok(a)) => a,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => Analysis::default(),
        };
        // The correlator has finished, so the channel holds the last of its calls
        // and is closed: render them, then the sink's product is the input's.
        if let Some((mut sink, rx)) = self.render.take() {
            rx.into_iter()
                .for_each(|calls| calls.into_iter().for_each(|c| sink.call(c)));
            if let Some(streamed) = &mut analysis.streamed {
                streamed.product = sink.finish();
            }
        }
        analysis
    }
}

impl ingest::Sink for Pipelined {
    fn exchange(&mut self, x: crate::model::Exchange) {
        // Decoding is the one step that can run on either side: here while the
        // correlator has work queued, there when it is waiting for this thread, so
        // the two stay even whatever the input's shape.
        let messages = if self.queued.load(std::sync::atomic::Ordering::Relaxed) >= self.balance_at
        {
            crate::correlate::Messages::of(&x)
        } else {
            crate::correlate::Messages::later()
        };
        self.push(Piped::Exchange(x, messages));
    }
    fn problem(&mut self, p: ingest::Problem) {
        self.push(Piped::Problem(p));
    }
    fn notice(&mut self, p: ingest::Problem) {
        self.push(Piped::Notice(p));
    }
}

impl Drop for Pipelined {
    fn drop(&mut self) {
        // On an early return (an ingest error) the worker still ends cleanly.
        self.tx = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// The correlator of input `path`: streaming its calls when the config says so.
fn correlator(path: &str, config: &Config) -> Correlator {
    match &config.call_sinks {
        Some(make) => Correlator::streaming(config.windows, (make.0)(path)),
        None => Correlator::with_windows(config.windows),
    }
}

/// Analyses a stream `ingest::open` already decompressed (no second sniff for gzip),
/// on two threads when `pipeline` says so.
fn analyse_opened(
    path: &str,
    reader: Box<dyn io::BufRead + '_>,
    config: &Config,
    pipeline: bool,
) -> Result<(Format, Analysis), IngestError> {
    if pipeline {
        let mut sink = match &config.call_sinks {
            Some(make) => Pipelined::streaming(config.windows, (make.0)(path)),
            None => Pipelined::new(Correlator::with_windows(config.windows)),
        };
        let format =
            ingest::read_stream_with_keys(reader, &config.limits, &config.tls_keys, &mut sink)?;
        return Ok((format, sink.finish()));
    }
    let mut sink = correlator(path, config);
    let format =
        ingest::read_stream_with_keys(reader, &config.limits, &config.tls_keys, &mut sink)?;
    Ok((format, sink.finish()))
}

/// Analyses one input from any reader.
pub fn analyse_reader(
    reader: impl Read,
    config: &Config,
) -> Result<(Format, Analysis), IngestError> {
    let mut sink = correlator("", config);
    let format = ingest::ingest_with_keys(reader, &config.limits, &config.tls_keys, &mut sink)?;
    Ok((format, sink.finish()))
}

#[cfg(test)]
mod pipe_tests {
    use super::*;
    use crate::model::{Body, Exchange, HttpExchange, HttpResponse, Locator, Payload};

    fn exchange(response_bytes: usize) -> Exchange {
        Exchange {
            locator: Locator::Entry { entry: 1 },
            payload: Payload::Http(HttpExchange {
                response: Some(HttpResponse {
                    status: 200,
                    body: Body::Bytes(vec![b' '; response_bytes]),
                    ..HttpResponse::default()
                }),
                ..HttpExchange::default()
            }),
        }
    }

    #[test]
    fn a_batch_ends_at_its_bytes_as_well_as_its_count() {
        use ingest::Sink;
        let mut p = Pipelined::new(Correlator::new());
        // Large results: a batch holds about a megabyte of them, not 64.
        for i in 1..=5 {
            p.exchange(exchange(400 << 10));
            assert!(p.batch.len() < 3, "after {i}: {} waiting", p.batch.len());
            assert!(p.batch_bytes < PIPE_BYTES);
        }
        // Small ones: up to the count.
        for _ in 0..PIPE_BATCH - 1 {
            p.exchange(exchange(10));
        }
        assert!(!p.batch.is_empty() && p.batch.len() < PIPE_BATCH);
        let a = p.finish();
        assert_eq!(a.exchanges, 5 + PIPE_BATCH as u64 - 1);
    }

    fn call(id: usize, response: Body) -> Exchange {
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t{}","arguments":{{}}}}}}"#,
            id % 3
        );
        Exchange {
            locator: Locator::Entry { entry: id as u64 },
            payload: Payload::Http(HttpExchange {
                request: crate::model::HttpRequest {
                    method: "POST".to_owned(),
                    url: "http://h/mcp".to_owned(),
                    body: request.into_bytes(),
                    ..Default::default()
                },
                response: Some(HttpResponse {
                    status: 200,
                    body: response,
                    ..HttpResponse::default()
                }),
                ..HttpExchange::default()
            }),
        }
    }

    #[test]
    fn decoding_on_either_thread_gives_the_same_analysis() {
        use ingest::Sink;
        let run = |balance_at: usize| {
            let mut p = Pipelined::new(Correlator::new());
            p.balance_at = balance_at;
            for id in 0..300 {
                let body = match id % 4 {
                    0 => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#),
                    1 => format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"isError":true,"content":[]}}}}"#
                    ),
                    2 => format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32602,"message":"no"}}}}"#
                    ),
                    _ => "{not json".to_owned(),
                };
                p.exchange(call(id, Body::Bytes(body.into_bytes())));
            }
            let a = p.finish();
            a.calls
                .iter()
                .map(|c| crate::report::jsonl::call_record("x", c).to_string())
                .collect::<Vec<_>>()
        };
        // Every exchange decoded on the reading thread, then every one on the
        // correlator's: the same records, with all four outcomes among them.
        let here = run(0);
        let there = run(usize::MAX);
        assert_eq!(here.len(), 300);
        assert_eq!(here, there);
        for outcome in [
            "TOOL_SUCCESS",
            "TOOL_ERROR",
            "JSONRPC_ERROR",
            "MALFORMED_JSON",
        ] {
            assert!(here.iter().any(|r| r.contains(outcome)), "{outcome}");
        }
    }
}

#[cfg(test)]
mod order_tests {
    use super::*;

    fn ordered<'e>(n: usize, emit: &'e mut (dyn FnMut(&mut InputReport) + Send)) -> Ordered<'e> {
        sized(&vec![0; n], emit)
    }

    /// Inputs of these stored sizes.
    fn sized<'e>(sizes: &[u64], emit: &'e mut (dyn FnMut(&mut InputReport) + Send)) -> Ordered<'e> {
        Ordered {
            state: std::sync::Mutex::new(OrderState {
                next: 0,
                held: Default::default(),
                done: sizes.iter().map(|_| Vec::new()).collect(),
                weights: sizes.iter().map(|&n| n.min(HELD_WEIGHT)).collect(),
                held_bytes: 0,
                emit,
                keep: false,
                inputs: &[],
            }),
            room: std::sync::Condvar::new(),
        }
    }

    fn report(path: &str) -> Analysed {
        Ok(error_report(path.to_owned(), "x".to_owned()))
    }

    #[test]
    fn finished_inputs_held_behind_a_long_one_are_bounded_by_their_bytes() {
        // Input 0 is long; inputs 1.. of 10 MiB each (counted 4 MiB) finish first.
        let mut emit = |_: &mut InputReport| {};
        let order = sized(&[10 << 20; 40], &mut emit);
        let fit = HELD_BYTES.div_ceil(HELD_WEIGHT) as usize;
        for i in 1..=fit {
            order.wait_for_room(i);
            order.put(i, report("b"));
            order.finish(i);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                order.wait_for_room(fit + 1);
                tx.send(()).unwrap();
            });
            let wait = std::time::Duration::from_millis(200);
            assert!(
                rx.recv_timeout(wait).is_err(),
                "started past {fit} held inputs"
            );
            // The input being written is never held back.
            order.wait_for_room(0);
            order.put(0, report("a"));
            order.finish(0);
            assert!(rx.recv_timeout(std::time::Duration::from_secs(10)).is_ok());
        });
        let st = order.state.into_inner().unwrap();
        assert_eq!((st.next, st.held_bytes), (fit + 1, 0));
    }

    #[test]
    fn reports_are_written_in_input_order_whatever_finishes_first() {
        let mut written = Vec::new();
        let mut emit = |ir: &mut InputReport| written.push(ir.path.clone());
        let order = ordered(4, &mut emit);
        // Input 2 finishes first; input 1 has a member out, then another.
        order.put(2, report("c"));
        order.finish(2);
        order.put(1, report("b1"));
        order.put(0, report("a"));
        order.put(3, report("d"));
        order.finish(0);
        order.put(1, report("b2"));
        order.finish(1);
        order.finish(3);
        let done = order.state.into_inner().unwrap().done;
        let paths: Vec<Vec<String>> = done
            .iter()
            .map(|d| d.iter().map(|a| a.as_ref().unwrap().path.clone()).collect())
            .collect();
        assert_eq!(paths, [vec!["a"], vec!["b1", "b2"], vec!["c"], vec!["d"]]);
        assert_eq!(written, ["a", "b1", "b2", "c", "d"]);
    }

    #[test]
    fn a_worker_waits_rather_than_run_more_than_ahead_inputs_past_the_one_written() {
        let mut emit = |_: &mut InputReport| {};
        let order = ordered(AHEAD + 1, &mut emit);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                order.wait_for_room(AHEAD - 1);
                tx.send(AHEAD - 1).unwrap();
                order.wait_for_room(AHEAD);
                tx.send(AHEAD).unwrap();
            });
            let wait = std::time::Duration::from_millis(200);
            assert_eq!(rx.recv_timeout(wait), Ok(AHEAD - 1));
            // Input 0 is still being read: input AHEAD may not start.
            assert!(rx.recv_timeout(wait).is_err());
            order.put(0, report("a"));
            order.finish(0);
            assert_eq!(
                rx.recv_timeout(std::time::Duration::from_secs(10)),
                Ok(AHEAD)
            );
        });
    }
}
