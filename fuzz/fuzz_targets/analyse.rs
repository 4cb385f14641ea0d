//! Any bytes through the whole pipeline (decompression, archives, sniffing, every
//! reader, correlation, redaction, every report format): nothing may panic. The
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
});
