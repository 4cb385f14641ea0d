//! The `mcpsift` command: a thin clap front end over the library.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use mcpsift::batch::{self, Input};
use mcpsift::config::{Config, Limits};
use mcpsift::explain;
use mcpsift::model::{FindingKind, Outcome};
use mcpsift::report::{
    self, gate, Baseline, Condition, Filter, HumanOptions, OutputFormat, Redactor,
};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// mimalloc instead of the system allocator: reading interleaves large short-lived
/// buffers (bodies, HAR entries) with small long-lived call records, and glibc's
/// allocator then holds on to the freed space (measured in docs/performance.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "mcpsift",
    version,
    about = "Which layer failed, and was anything sent twice? Offline analysis of MCP traffic: pcap/pcapng captures, HAR files, JSONL logs and client logs."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Analyse captures and logs: files, directories (recursive) or - for stdin.
    Analyze(Box<AnalyzeArgs>),
    /// Explain an outcome or finding name (no name: list them all).
    Explain {
        /// An outcome or finding kind, e.g. STREAM_INCOMPLETE or unsafe-replay.
        name: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Json,
    Jsonl,
    Markdown,
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
    /// Table width in columns (default: the terminal's, or unlimited when not a terminal).
    #[arg(long)]
    width: Option<u16>,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Largest record read, in bytes: a JSONL line, a HAR entry, a JSON-array element,
    /// a body, the event data kept per SSE stream.
    #[arg(long, default_value_t = Limits::default().max_record_bytes)]
    max_record_bytes: usize,
    /// Largest SSE event (and SSE line), in bytes.
    #[arg(long, default_value_t = Limits::default().max_event_bytes)]
    max_event_bytes: usize,
    /// Most SSE events kept per stream or body; later ones are counted.
    #[arg(long, default_value_t = Limits::default().max_stream_events)]
    max_stream_events: usize,
    /// Most bytes a compressed input may expand to.
    #[arg(long, default_value_t = Limits::default().max_decompressed_bytes)]
    max_decompressed_bytes: u64,
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
    let config = Config {
        limits: Limits {
            max_record_bytes: args.max_record_bytes,
            max_decompressed_bytes: args.max_decompressed_bytes,
            max_event_bytes: args.max_event_bytes,
            max_stream_events: args.max_stream_events,
        },
        threads: args.threads,
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
    let mut report = batch::run(&inputs, &config);

    // Shared passes, in order: filters, baseline, redaction (report/mod.rs).
    let filter = Filter {
        tools: args.tool.clone(),
        outcomes: args.outcome.clone(),
        findings: args.finding.clone(),
        scopes: args.scope.clone(),
    };
    report::filter::apply(&mut report, &filter);
    if let Some(path) = &args.write_baseline {
        let doc = Baseline::document(&report, &redactor);
        write_file(path, "baseline", |w| {
            serde_json::to_writer_pretty(&mut *w, &doc)?;
            w.write_all(b"\n")
        })?;
    }
    if let Some(b) = &baseline {
        report.baseline_accepted = b.apply(&mut report);
    }
    redactor.report(&mut report);

    let to_terminal = args.output.is_none() && io::stdout().is_terminal();
    let opts = HumanOptions {
        all: args.all,
        width: args
            .width
            .or(if to_terminal { terminal_width() } else { None }),
        color: to_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let format = match args.format {
        Format::Table => OutputFormat::Table,
        Format::Json => OutputFormat::Json,
        Format::Jsonl => OutputFormat::Jsonl,
        Format::Markdown => OutputFormat::Markdown,
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
    match &args.output {
        Some(path) => write_file(path, "output", |w| report::write(&report, format, &opts, w))?,
        None => {
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
        for p in &ir.analysis.notices {
            writeln!(
                err,
                "mcpsift: {}: {}: note: {}",
                ir.path, p.locator, p.message
            )?;
        }
    }
    let matched = gate::evaluate(&report, &args.fail_on);
    if !matched.is_empty() {
        let what: Vec<String> = matched.iter().map(|m| m.to_string()).collect();
        writeln!(err, "mcpsift: --fail-on matched: {}", what.join("; "))?;
    }
    Ok(if report.has_errors() {
        ExitCode::from(2)
    } else if !matched.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The terminal's width: `COLUMNS` when set, else what the terminal says, else 100.
fn terminal_width() -> Option<u16> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .or_else(|| comfy_table::Table::new().width())
        .or(Some(100))
}
