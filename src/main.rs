//! The `mcpsift` command: a thin clap front end over the library.

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use mcpsift::batch::{self, Input};
use mcpsift::config::{Config, Limits};
use mcpsift::report::{self, HumanOptions, OutputFormat};
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "mcpsift",
    version,
    about = "Which layer failed, and was anything sent twice? Offline analysis of MCP traffic (JSONL logs and HAR files; pcap to come)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Analyse captures and logs: files, directories (recursive) or - for stdin.
    Analyze(AnalyzeArgs),
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
    /// Show successful calls too, not only their count (table, markdown).
    #[arg(long)]
    all: bool,
    /// Worker threads (0: one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Longest JSONL line read, in bytes.
    #[arg(long, default_value_t = Limits::default().max_record_bytes)]
    max_record_bytes: usize,
    /// Most bytes a compressed input may expand to.
    #[arg(long, default_value_t = Limits::default().max_decompressed_bytes)]
    max_decompressed_bytes: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
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

fn run(cli: Cli) -> Result<ExitCode> {
    let Command::Analyze(args) = cli.command;
    let config = Config {
        limits: Limits {
            max_record_bytes: args.max_record_bytes,
            max_decompressed_bytes: args.max_decompressed_bytes,
            ..Limits::default()
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
    let report = batch::run(&inputs, &config);

    let stdout = io::stdout();
    let tty = stdout.is_terminal();
    let opts = HumanOptions {
        all: args.all,
        width: if tty { terminal_width() } else { None },
        color: tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let format = match args.format {
        Format::Table => OutputFormat::Table,
        Format::Json => OutputFormat::Json,
        Format::Jsonl => OutputFormat::Jsonl,
        Format::Markdown => OutputFormat::Markdown,
    };
    // Problems go to stderr after the report, so the two streams never interleave.
    let mut out = stdout.lock();
    report::write(&report, format, &opts, &mut out)?;
    out.flush()?;
    drop(out);
    let stderr = io::stderr();
    let mut err = stderr.lock();
    for ir in &report.inputs {
        if let Some(e) = &ir.error {
            writeln!(err, "mcpsift: {}: {e}", ir.path)?;
        }
        for p in &ir.analysis.problems {
            writeln!(err, "mcpsift: {}: {}: {}", ir.path, p.locator, p.message)?;
        }
    }
    Ok(if report.has_errors() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn terminal_width() -> Option<u16> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .or(Some(120))
}
