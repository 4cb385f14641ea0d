//! The `mcpsift` command: a thin clap front end over the library.

use anyhow::{Context, Result};
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use mcpsift::batch::{self, Input};
use mcpsift::config::{Config, Limits, RetryWindows, SinkFactory};
use mcpsift::explain;
use mcpsift::ingest::tls::KeyLog;
use mcpsift::model::{FindingKind, Outcome, Timestamp};
use mcpsift::report::{
    self, gate, Baseline, Condition, Filter, HumanOptions, OutputFormat, Redactor, RunInfo,
};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// mimalloc instead of the system allocator: reading interleaves large short-lived
/// buffers (bodies, HAR entries) with small long-lived call records, and glibc's
/// allocator then holds on to the freed space (measured in docs/performance.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Shown under `--help`: a newcomer's first commands and what the exit code means.
const AFTER_HELP: &str = "\
Examples:
  mcpsift analyze samples/                        every tools/call's verdict, as a table
  mcpsift analyze capture.pcapng --format markdown -o ticket.md
  mcpsift analyze session.har --format jsonl | jq 'select(.type==\"call\")'
  mcpsift analyze logs/ --fail-on high            exit 1 when a HIGH finding appears
  mcpsift explain STREAM_INCOMPLETE               what an outcome or finding means

Exit codes:
  0  every input was read and analysed, whatever the verdicts
  1  a --fail-on condition matched
  2  a usage error, or an input (or a line of one) could not be read; wins over 1";

#[derive(Parser)]
#[command(
    name = "mcpsift",
    version,
    about = "Which layer failed, and was anything sent twice? Offline analysis of MCP traffic: pcap/pcapng captures, HAR files, JSONL logs and client logs.",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Analyse captures and logs: files, directories (recursive) or - for stdin.
    #[command(visible_alias = "analyse", after_help = AFTER_HELP)]
    Analyze(Box<AnalyzeArgs>),
    /// Explain an outcome or finding name (no name: list them all).
    Explain {
        /// An outcome or finding kind, e.g. STREAM_INCOMPLETE or unsafe-replay.
        name: Option<String>,
    },
    /// Print a shell completion script, e.g. `mcpsift completions bash > ~/.local/share/bash-completion/completions/mcpsift`.
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff), e.g. `mcpsift man > mcpsift.1`; `mcpsift man analyze`
    /// gives mcpsift-analyze(1) with every option of the subcommand.
    Man {
        /// A subcommand (analyze, explain, completions); none: the overview page.
        command: Option<String>,
    },
}

/// When the table is coloured.
#[derive(Clone, Copy, ValueEnum)]
enum ColorChoice {
    /// When stdout is a terminal and NO_COLOR is unset or empty.
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
    Jsonl,
    Markdown,
    Html,
}

#[derive(clap::Args)]
struct AnalyzeArgs {
    /// Files, directories or - (stdin). The format is detected from content.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
    /// Write the output to FILE instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Also write a Markdown report to FILE, whatever --format is.
    #[arg(long, value_name = "FILE.md")]
    report: Option<PathBuf>,
    /// Also write the HTML report (one self-contained page) to FILE, whatever --format is.
    #[arg(long, value_name = "FILE.html")]
    html: Option<PathBuf>,
    /// Show successful calls too, not only their count (table, markdown).
    #[arg(long)]
    all: bool,
    /// Only calls of this tool, and findings about them (repeatable).
    #[arg(long, value_name = "NAME")]
    tool: Vec<String>,
    /// Only calls with this outcome (repeatable; case-insensitive).
    #[arg(long, value_name = "OUTCOME", value_parser = parse_outcome)]
    outcome: Vec<Outcome>,
    /// Only findings of this kind, and the calls they name (repeatable).
    #[arg(long, value_name = "KIND", value_parser = parse_finding)]
    finding: Vec<FindingKind>,
    /// Only this scope (session:1a2b3c4d, stdio:1, http:HOST) or scope kind (session, http, stdio).
    #[arg(long, value_name = "SCOPE")]
    scope: Vec<String>,
    /// Exit 1 when an outcome, a finding kind, or a finding at or above a severity
    /// (info, low, medium, high) is reported (repeatable).
    #[arg(long, value_name = "WHAT")]
    fail_on: Vec<Condition>,
    /// Accept the findings listed in FILE (written by --write-baseline): they are
    /// neither reported nor gated on.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Write every finding reported (after filters) to FILE, as a baseline.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Print secrets (tokens, cookies, session ids) as recorded.
    #[arg(long)]
    no_redact: bool,
    /// Colour the table.
    #[arg(long, value_enum, default_value = "auto", value_name = "WHEN")]
    color: ColorChoice,
    /// Print no notes, warnings or progress bar on stderr (errors, bad lines and
    /// --fail-on matches are still printed).
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Longest Markdown report (--format markdown, --report) in characters: past it,
    /// whole sections are left out and the report says which.
    #[arg(long, value_name = "N")]
    max_chars: Option<usize>,
    /// Keep the Markdown report under a GitHub issue body's limit (--max-chars 65536).
    #[arg(long, conflicts_with = "max_chars")]
    github: bool,
    /// Table width in columns (default: the terminal's, or unlimited when not a terminal).
    #[arg(long)]
    width: Option<u16>,
    /// A TLS key log (NSS format: SSLKEYLOGFILE, node --tls-keylog) to decrypt the
    /// TLS in pcap/pcapng captures with (repeatable). pcapng files may embed their
    /// own (editcap --inject-secrets tls,FILE).
    #[arg(long, value_name = "FILE")]
    tls_keylog: Vec<PathBuf>,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Largest record read, in bytes: a JSONL line, a HAR entry, a JSON-array element,
    /// a body, the event data kept per SSE stream (and, 8 times over, what the
    /// bodies in flight of a capture keep together).
    #[arg(long, default_value_t = Limits::default().max_record_bytes)]
    max_record_bytes: usize,
    /// Largest SSE event (and SSE line), in bytes.
    #[arg(long, default_value_t = Limits::default().max_event_bytes)]
    max_event_bytes: usize,
    /// Most SSE events kept per stream or body; later ones are counted (a stream
    /// that may last a session, a legacy session's or a standalone GET stream, is
    /// handed on in parts instead when an HTTP/1.1 capture carries it).
    #[arg(long, default_value_t = Limits::default().max_stream_events)]
    max_stream_events: usize,
    /// Most bytes a compressed input may expand to (all layers and archive members together).
    #[arg(long, default_value_t = Limits::default().max_decompressed_bytes)]
    max_decompressed_bytes: u64,
    /// A re-send this soon after an attempt that failed or never ended is a retry
    /// (plus any Retry-After or SSE retry it asked for); later it is a re-invocation.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    retry_window: u64,
    /// An identical request this soon after the previous one, with no other call in
    /// between, is a double dispatch.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration)]
    double_dispatch_window: u64,
    /// How long a client is taken to wait for a call that never ended, unless a
    /// cancellation in the input shows its real timeout.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    client_timeout: u64,
    /// In client logs, a re-issue this soon after a failure is a retry; any other
    /// repeat is the agent's choice.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    client_log_retry_window: u64,
}

fn parse_duration(s: &str) -> Result<u64, String> {
    mcpsift::config::parse_duration_ms(s)
        .ok_or_else(|| format!("expected a duration such as 500ms, 30s or 2m, not {s:?}"))
}

fn parse_outcome(s: &str) -> Result<Outcome, String> {
    Outcome::parse(s).ok_or_else(|| {
        let all: Vec<_> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        format!("expected one of {}", all.join(", "))
    })
}

fn parse_finding(s: &str) -> Result<FindingKind, String> {
    FindingKind::parse(s).ok_or_else(|| {
        let all: Vec<_> = FindingKind::ALL.iter().map(|o| o.as_str()).collect();
        format!("expected one of {}", all.join(", "))
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Analyze(args) => run(*args),
        Command::Explain { name } => run_explain(name.as_deref()),
        Command::Completions { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(shell, &mut cmd, "mcpsift", &mut io::stdout().lock());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { command } => run_man(command.as_deref()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // A closed stdout (`| head`) ends the run quietly, as ripgrep does.
            if let Some(io) = e.downcast_ref::<io::Error>() {
                if io.kind() == io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("mcpsift: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The overview page, or one subcommand's page named `mcpsift-NAME` as git does.
fn run_man(sub: Option<&str>) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    cmd.build();
    let page = match sub {
        None => cmd,
        Some(name) => match cmd.find_subcommand(name) {
            Some(s) if name != "help" => {
                // clap wants a 'static name; the process ends right after printing.
                let full: &'static str = format!("mcpsift-{}", s.get_name()).leak();
                s.clone()
                    .name(full)
                    .version(env!("CARGO_PKG_VERSION"))
                    .after_help(AFTER_HELP)
            }
            _ => {
                eprintln!("mcpsift: no man page for {name:?}; try analyze, explain or completions");
                return Ok(ExitCode::from(2));
            }
        },
    };
    clap_mangen::Man::new(page).render(&mut io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

fn run_explain(name: Option<&str>) -> Result<ExitCode> {
    let text = match name {
        None => explain::render_list(),
        Some(n) => match explain::Subject::parse(n) {
            Some(s) => explain::render(&explain::explain(s)),
            None => {
                eprintln!(
                    "mcpsift: unknown name {n:?}; valid names: {}",
                    explain::names()
                );
                return Ok(ExitCode::from(2));
            }
        },
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Writes a whole file, creating or truncating it.
fn write_file(
    path: &Path,
    what: &str,
    f: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let file = std::fs::File::create(path)
        .with_context(|| format!("cannot create {what} {}", path.display()))?;
    let mut w = io::BufWriter::new(file);
    f(&mut w).with_context(|| format!("cannot write {what} {}", path.display()))?;
    w.flush()
        .with_context(|| format!("cannot write {what} {}", path.display()))?;
    Ok(())
}

/// A batch run (`run`) with a bar on stderr (bytes, inputs, MB/s, ETA) redrawn from
/// the library's counters by a second thread; cleared before the report is printed.
fn with_progress_bar(run: impl FnOnce(&batch::Progress) -> batch::Report) -> batch::Report {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use std::sync::atomic::Ordering::Relaxed;
    let progress = batch::Progress::default();
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
    bar.set_style(
        ProgressStyle::with_template(
            "{bytes}/{total_bytes} {msg} {binary_bytes_per_sec} ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let done = std::sync::atomic::AtomicBool::new(false);
    let report = std::thread::scope(|s| {
        s.spawn(|| {
            // Quiet for the first half second: a short run shows no bar at all.
            let mut ticks = 0;
            while !done.load(Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                ticks += 1;
                if ticks < 5 {
                    continue;
                }
                bar.set_message(format!(
                    "inputs {}/{}",
                    progress.inputs_done.load(Relaxed),
                    progress.total_inputs.load(Relaxed)
                ));
                bar.set_length(progress.total_bytes.load(Relaxed));
                bar.set_position(progress.bytes_read.load(Relaxed));
            }
        });
        let report = run(&progress);
        done.store(true, Relaxed);
        report
    });
    bar.finish_and_clear();
    report
}

fn run(args: AnalyzeArgs) -> Result<ExitCode> {
    let redactor = Redactor {
        enabled: !args.no_redact,
    };
    let stderr = io::stderr();
    if args.no_redact {
        // First, alone on its line, before any output: it must not be missed.
        writeln!(
            stderr.lock(),
            "mcpsift: warning: --no-redact: tokens, cookies and session ids are printed as recorded; do not paste this output into a ticket"
        )?;
    }
    // Read the baseline before the (possibly long) analysis, so a typo fails fast.
    let baseline = match &args.baseline {
        Some(p) => Some(Baseline::load(p)?),
        None => None,
    };
    // Key logs are read before the analysis too; a bad line is named (file and line,
    // never its text: it is a secret) and skipped.
    let mut keylog = KeyLog::default();
    let mut keylog_problems = false;
    for path in &args.tls_keylog {
        let parsed = keylog.load(path)?;
        for bad in &parsed.bad {
            writeln!(
                stderr.lock(),
                "mcpsift: {}: line {}: {}; line skipped",
                path.display(),
                bad.line,
                bad.error
            )?;
        }
        let unlisted = parsed.bad_total.saturating_sub(parsed.bad.len() as u64);
        if unlisted > 0 {
            writeln!(
                stderr.lock(),
                "mcpsift: {}: {unlisted} more bad lines were not listed one by one",
                path.display()
            )?;
        }
        if parsed.used == 0 {
            writeln!(
                stderr.lock(),
                "mcpsift: {}: no TLS secret in this key log (is it an NSS key log, as SSLKEYLOGFILE writes?)",
                path.display()
            )?;
        }
        keylog_problems |= parsed.bad_total > 0 || parsed.used == 0;
    }
    let filter = Filter {
        tools: args.tool.clone(),
        outcomes: args.outcome.clone(),
        findings: args.finding.clone(),
        scopes: args.scope.clone(),
    };
    // JSONL and JSON stream each input's calls to a spool as they are judged, so
    // memory stays flat on any input (with `--finding`, the spool notes each
    // record's `seq`, and those no finding kept names are left out when it is
    // written; what a report or the page besides shows is narrowed once the records
    // are out, except with `--outcome` too, where every call is kept). With
    // `--report` or `--html` (not `--all`) the calls those show are kept besides;
    // with call filters or a baseline, what those need (each input's findings are
    // narrowed and accepted before its records are written).
    let reports = args.report.is_some() || args.html.is_some();
    let baselining = baseline.is_some() || args.write_baseline.is_some();
    // `--all` makes the table and markdown list every call; the page lists what it
    // lists either way.
    let every_call = args.all
        && (matches!(args.format, Format::Table | Format::Markdown) || args.report.is_some());
    let finding_narrows = !filter.findings.is_empty() && filter.outcomes.is_empty();
    let stream = matches!(args.format, Format::Jsonl | Format::Json)
        && (filter.findings.is_empty() || !reports || finding_narrows)
        && !every_call;
    let teed = stream && (reports || !filter.is_empty() || baselining);
    // The table and markdown show only the calls that need attention, the HTML page
    // at most `html::MAX_ROWS` calls: the others are counted as they are judged
    // (report/kept.rs), so memory stays flat there too. The call filters are applied
    // there as calls are judged; `--finding` narrows calls by findings, known only at
    // an input's end: each input is narrowed as soon as it is judged (for the page,
    // before its share of the page's rows is taken). With `--outcome` besides, the
    // page keeps every call.
    let html = matches!(args.format, Format::Html) || args.html.is_some();
    let page_narrows = html && finding_narrows;
    let lean = teed
        || matches!(args.format, Format::Table | Format::Markdown | Format::Html)
            && !every_call
            && (filter.findings.is_empty() || !html || page_narrows);
    let call_sinks = if teed {
        Some(report::kept::teed_sinks(
            reports.then_some(html),
            &filter,
            redactor,
        ))
    } else if stream {
        Some(SinkFactory(std::sync::Arc::new(move |path: &str| {
            Box::new(report::jsonl::Spool::new(path, redactor))
                as Box<dyn mcpsift::correlate::CallSink>
        })))
    } else if lean {
        Some(report::attention_sinks(html, &filter))
    } else {
        None
    };
    let config = Config {
        call_sinks,
        pipeline: false,
        tls_keys: Arc::new(keylog),
        limits: Limits {
            max_record_bytes: args.max_record_bytes,
            max_decompressed_bytes: args.max_decompressed_bytes,
            max_event_bytes: args.max_event_bytes,
            max_stream_events: args.max_stream_events,
        },
        threads: args.threads,
        windows: RetryWindows {
            retry_ms: args.retry_window,
            double_dispatch_ms: args.double_dispatch_window,
            client_timeout_ms: args.client_timeout,
            client_log_ms: args.client_log_retry_window,
        },
    };
    let inputs: Vec<Input> = args
        .paths
        .iter()
        .map(|p| {
            if p.as_os_str() == "-" {
                Input::Stdin
            } else {
                Input::Path(p.clone())
            }
        })
        .collect();
    // A streaming run writes each input's records as soon as the inputs before it
    // are written, so nothing of an input is kept past its turn.
    let mut streamer = if stream {
        let w: Box<dyn Write + Send> = match &args.output {
            Some(path) => Box::new(io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("cannot create output {}", path.display()))?,
            )),
            None => Box::new(io::BufWriter::with_capacity(64 << 10, io::stdout())),
        };
        Some(match args.format {
            Format::Json => report::jsonl::Streamer::document(w, redactor),
            _ => report::jsonl::Streamer::new(w, redactor),
        })
    } else {
        None
    };
    // A streaming run narrows each input, and writes and applies the baseline, before
    // the input's records are written.
    let mut passes = if stream {
        let write_baseline = match &args.write_baseline {
            Some(path) => Some(Box::new(io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("cannot create baseline {}", path.display()))?,
            )) as Box<dyn Write + Send>),
            None => None,
        };
        Some(report::InputPasses::new(
            &filter,
            redactor,
            write_baseline,
            baseline.as_ref(),
        )?)
    } else {
        None
    };
    // A closed stdout (`| head`) ends the run at once, quietly, as it would at the
    // end: nothing more can be shown, so nothing more is read.
    let quiet_on_broken_pipe = |r: io::Result<()>| {
        if let Err(e) = r {
            if e.kind() == io::ErrorKind::BrokenPipe && args.output.is_none() {
                std::process::exit(0);
            }
        }
    };
    let mut run_batch = |progress: &batch::Progress| match (&mut streamer, &mut passes) {
        // The report and page are written at the end, from what each input kept
        // once its records were written.
        (Some(s), Some(passes)) if teed => {
            let mut share = report::kept::PageShare::default();
            batch::run_visiting(&inputs, &config, progress, &mut |ir| {
                passes.input(ir);
                quiet_on_broken_pipe(s.input(ir));
                report::kept::written(ir);
                if reports && finding_narrows {
                    report::kept::narrow_written(ir, html);
                }
                if html {
                    share.trim(ir);
                }
            })
        }
        (Some(s), _) => batch::run_emitting(&inputs, &config, progress, &mut |ir| {
            quiet_on_broken_pipe(s.input(ir))
        }),
        // The HTML page lists a share of the run's calls: each input, as it comes in
        // order, keeps only what is left of it.
        (None, _) if lean && html => {
            let mut share = report::kept::PageShare::default();
            batch::run_visiting(&inputs, &config, progress, &mut |ir| {
                if page_narrows {
                    report::kept::narrow_page_input(ir, &filter);
                }
                share.trim(ir)
            })
        }
        (None, _) if lean && !filter.findings.is_empty() => {
            batch::run_visiting(&inputs, &config, progress, &mut |ir| {
                report::kept::narrow_input(ir, &filter)
            })
        }
        (None, _) => batch::run_with_progress(&inputs, &config, progress),
    };
    let mut report = if !args.quiet && stderr.is_terminal() {
        with_progress_bar(run_batch)
    } else {
        run_batch(&batch::Progress::default())
    };

    if lean {
        report::take_attention(&mut report);
    }
    // Shared passes, in order: filters, baseline, redaction (report/mod.rs); a
    // streaming run applied the first two to each input as it went.
    let unmatched = report::filter::unmatched(&report, &filter);
    if passes.is_none() {
        report::filter::apply(&mut report, &filter);
    }
    if lean && baselining && !stream {
        // A baseline edits the findings: those a lean run moved to disk come back.
        report::kept::hold_findings(&mut report);
    }
    let applied = match passes {
        Some(p) => {
            let (written, applied) = p.finish(&mut report);
            if let Some(path) = &args.write_baseline {
                written.with_context(|| format!("cannot write baseline {}", path.display()))?;
            }
            applied
        }
        None => {
            if let Some(path) = &args.write_baseline {
                write_file(path, "baseline", |w| {
                    let mut doc = report::baseline::Writer::new(w)?;
                    for ir in &report.inputs {
                        doc.input(ir, &redactor)?;
                    }
                    doc.finish().map(drop)
                })?;
            }
            baseline.as_ref().map(|b| b.apply(&mut report))
        }
    };
    if let Some(a) = &applied {
        report.baseline_accepted = a.accepted;
    }
    if streamer.is_some() {
        // Each input was redacted as it was written.
        redactor.run_fields(&mut report);
    } else {
        redactor.report(&mut report);
    }

    let to_terminal = args.output.is_none() && io::stdout().is_terminal();
    let opts = HumanOptions {
        all: args.all,
        width: args
            .width
            .or(if to_terminal { terminal_width() } else { None }),
        color: match args.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                to_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        },
        run: Some(RunInfo {
            command: redactor.text(&command_line()).into_owned(),
            generated: generated_at()?,
        }),
        max_chars: if args.github {
            Some(report::GITHUB_MAX_CHARS)
        } else {
            args.max_chars
        },
    };
    let format = match args.format {
        Format::Table => OutputFormat::Table,
        Format::Json => OutputFormat::Json,
        Format::Jsonl => OutputFormat::Jsonl,
        Format::Markdown => OutputFormat::Markdown,
        Format::Html => OutputFormat::Html,
    };
    if let Some(path) = &args.report {
        let md = HumanOptions {
            width: None,
            color: false,
            ..opts.clone()
        };
        write_file(path, "report", |w| {
            report::write(&report, OutputFormat::Markdown, &md, w)
        })?;
    }
    if let Some(path) = &args.html {
        write_file(path, "HTML report", |w| {
            report::write(&report, OutputFormat::Html, &opts, w)
        })?;
    }
    let spool_warning = streamer.as_ref().and_then(|s| s.warning());
    match (streamer, &args.output) {
        (Some(s), Some(path)) => s
            .finish(&report)
            .with_context(|| format!("cannot write output {}", path.display()))?,
        // Not wrapped: a closed stdout (`| head`) must stay a bare BrokenPipe.
        (Some(s), None) => s.finish(&report)?,
        (None, Some(path)) => {
            write_file(path, "output", |w| report::write(&report, format, &opts, w))?
        }
        (None, None) => {
            let mut out = io::stdout().lock();
            report::write(&report, format, &opts, &mut out)?;
            out.flush()?;
        }
    }

    // Problems go to stderr after the report, so the two streams never interleave.
    let mut err = stderr.lock();
    for ir in &report.inputs {
        if let Some(e) = &ir.error {
            writeln!(err, "mcpsift: {}: {e}", ir.path)?;
        }
        for p in &ir.analysis.problems {
            writeln!(err, "mcpsift: {}: {}: {}", ir.path, p.locator, p.message)?;
        }
        if !args.quiet {
            for p in &ir.analysis.notices {
                writeln!(
                    err,
                    "mcpsift: {}: {}: note: {}",
                    ir.path, p.locator, p.message
                )?;
            }
        }
    }
    if !args.quiet {
        for dir in &report.empty_dirs {
            writeln!(
                err,
                "mcpsift: warning: {dir}: no input found in this directory (files that are no input are listed with --format jsonl)"
            )?;
        }
        if let (Some(a), Some(path)) = (&applied, &args.baseline) {
            if let Some(first) = a.unmatched.first() {
                writeln!(
                    err,
                    "mcpsift: warning: {}: {} matched no finding (first: {}); fixed, or were the inputs named differently?",
                    path.display(),
                    if a.unmatched.len() == 1 {
                        "1 entry".to_owned()
                    } else {
                        format!("{} entries", a.unmatched.len())
                    },
                    redactor.text(first)
                )?;
            }
        }
        for w in unmatched.warnings() {
            writeln!(err, "mcpsift: warning: {}", redactor.text(&w))?;
        }
        if let Some(w) = &spool_warning {
            writeln!(err, "mcpsift: warning: {w}")?;
        }
    }
    let matched = gate::evaluate(&report, &args.fail_on);
    if !matched.is_empty() {
        let what: Vec<String> = matched.iter().map(|m| m.to_string()).collect();
        writeln!(err, "mcpsift: --fail-on matched: {}", what.join("; "))?;
    }
    Ok(if report.has_errors() || keylog_problems {
        ExitCode::from(2)
    } else if !matched.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The command line as typed, with the program named `mcpsift` (not its install
/// path) and arguments quoted where a shell would need it.
fn command_line() -> String {
    let mut words = vec!["mcpsift".to_owned()];
    for a in std::env::args_os().skip(1) {
        let a = a.to_string_lossy().into_owned();
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
        words.push(if plain {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        });
    }
    words.join(" ")
}

/// When the report was made: `SOURCE_DATE_EPOCH` (seconds) when set, as for
/// reproducible builds, so a snapshot or a re-run gives the same bytes; else now.
fn generated_at() -> Result<Option<Timestamp>> {
    if let Some(v) = std::env::var_os("SOURCE_DATE_EPOCH") {
        let v = v.to_string_lossy();
        if v.is_empty() {
            return Ok(None);
        }
        let secs: i64 = v
            .trim()
            .parse()
            .with_context(|| format!("SOURCE_DATE_EPOCH={v:?} is not a number of seconds"))?;
        return Ok(Some(Timestamp::from_parts(secs, 0)));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Ok(Some(Timestamp::from_parts(
        now.as_secs() as i64,
        now.subsec_millis() * 1_000_000,
    )))
}

/// The terminal's width: `COLUMNS` when set, else what the terminal says, else 100.
fn terminal_width() -> Option<u16> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .or_else(|| comfy_table::Table::new().width())
        .or(Some(100))
}
