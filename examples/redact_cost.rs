//! How much of a run the redaction pass costs: analyses one input, then times
//! `Redactor::report` over the whole report (every call, with `--all`-like detail).
//!   cargo run --release --example redact_cost -- FILE
//! Figures (and the callgrind way to count instructions) are in docs/redaction.md.
use mcpsift::batch::{self, Input};
use mcpsift::config::Config;
use mcpsift::report::Redactor;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: redact_cost FILE");
    let t0 = Instant::now();
    let mut report = batch::run(&[Input::Path(path.into())], &Config::default());
    let analyse = t0.elapsed();
    let calls: usize = report.inputs.iter().map(|i| i.analysis.calls.len()).sum();
    let t1 = Instant::now();
    Redactor::default().report(&mut report);
    let redact = t1.elapsed();
    println!(
        "{calls} calls: analysis {:.3} s, redaction {:.3} s ({:.1}% of the analysis)",
        analyse.as_secs_f64(),
        redact.as_secs_f64(),
        100.0 * redact.as_secs_f64() / analyse.as_secs_f64()
    );
}
