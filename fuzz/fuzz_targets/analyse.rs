//! Any bytes through the whole pipeline (sniffing, every reader, correlation,
//! every report format): nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpsift::batch::{analyse_reader, InputReport, Report, Status};
use mcpsift::config::Config;
use mcpsift::report::{self, HumanOptions, OutputFormat, Redactor};

fuzz_target!(|data: &[u8]| {
    let config = Config::default();
    if let Ok((format, analysis)) = analyse_reader(data, &config) {
        let mut report = Report {
            inputs: vec![InputReport {
                path: "fuzz".into(),
                format,
                status: Status::Ok,
                error: None,
                analysis,
            }],
            ..Report::default()
        };
        Redactor::default().report(&mut report);
        for f in [OutputFormat::Table, OutputFormat::Markdown, OutputFormat::Jsonl] {
            let mut out = Vec::new();
            let _ = report::write(&report, f, &HumanOptions::default(), &mut out);
        }
    }
});
