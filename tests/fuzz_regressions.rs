//! Inputs the fuzzer (`fuzz/`, `cargo +nightly fuzz run analyse`) once crashed on,
//! replayed on stable through the whole pipeline and every report format: each must
//! now be analysed or refused with an error, never panic.

use mcpsift::batch::{analyse_reader, InputReport, Report, Status};
use mcpsift::config::Config;
use mcpsift::report::{self, HumanOptions, OutputFormat, Redactor};
use std::path::Path;

#[test]
fn fuzz_crashes_stay_fixed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let result = std::panic::catch_unwind(|| {
            if let Ok((format, analysis)) = analyse_reader(&data[..], &Config::default()) {
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
                for f in [
                    OutputFormat::Table,
                    OutputFormat::Markdown,
                    OutputFormat::Jsonl,
                    OutputFormat::Json,
                ] {
                    let mut out = Vec::new();
                    let _ = report::write(&report, f, &HumanOptions::default(), &mut out);
                }
            }
        });
        assert!(result.is_ok(), "{} panics", path.display());
        n += 1;
    }
    assert!(n >= 1);
}
