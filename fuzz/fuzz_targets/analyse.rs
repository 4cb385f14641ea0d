//! Any bytes through the whole pipeline (decompression, archives, sniffing, every
//! reader, correlation, redaction, every report format, and the sinks that keep only
//! what the reports show): nothing may panic. The
//! batch turns a panic into an "internal error" report; that is a crash here too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpsift::batch::{analyse_named, Report};
use mcpsift::config::Config;
use mcpsift::report::{self, HumanOptions, OutputFormat, Redactor};

fuzz_target!(|data: &[u8]| {
    let mut config = Config::default();
    config.limits.max_decompressed_bytes = 64 << 20;
    let mut report = Report::default();
    for r in analyse_named("fuzz".into(), Box::new(data), false, &config) {
        match r {
            Ok(ir) => {
                if let Some(e) = &ir.error {
                    assert!(!e.contains("internal error"), "{e}");
                }
                report.inputs.push(ir);
            }
            Err(skip) => report.skipped.push(skip),
        }
    }
    Redactor::default().report(&mut report);
    for f in [OutputFormat::Table, OutputFormat::Markdown, OutputFormat::Jsonl, OutputFormat::Json] {
        let mut out = Vec::new();
        let _ = report::write(&report, f, &HumanOptions::default(), &mut out);
    }
    // Again as a JSONL run with --report and --html keeps it: records written as
    // they come, and only what the report and the page show kept.
    config.call_sinks = Some(report::kept::teed_sinks(Some(true), &Default::default(), Redactor::default()));
    let mut lean = Report::default();
    let mut share = report::kept::PageShare::default();
    let mut records = Vec::new();
    let mut streamer = report::jsonl::Streamer::new(&mut records, Redactor::default());
    for r in analyse_named("fuzz".into(), Box::new(data), false, &config) {
        match r {
            Ok(mut ir) => {
                let _ = streamer.input(&mut ir);
                report::kept::written(&mut ir);
                share.trim(&mut ir);
                lean.inputs.push(ir);
            }
            Err(skip) => lean.skipped.push(skip),
        }
    }
    report::take_attention(&mut lean);
    let _ = streamer.finish(&lean);
    for f in [OutputFormat::Markdown, OutputFormat::Html] {
        let mut out = Vec::new();
        let _ = report::write(&lean, f, &HumanOptions::default(), &mut out);
    }
});
