//! Inputs the fuzzer (`fuzz/`, `cargo +nightly fuzz run analyse`) once crashed on,
//! replayed on stable through the whole pipeline and every report format: each must
//! now be analysed or refused with an error, never panic.

use mcpsift::batch::{analyse_named, Report};
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
        let mut report = Report::default();
        for r in analyse_named(
            "fuzz".into(),
            Box::new(&data[..]),
            false,
            &Config::default(),
        ) {
            match r {
                Ok(ir) => {
                    let e = ir.error.clone().unwrap_or_default();
                    assert!(!e.contains("internal error"), "{}: {e}", path.display());
                    report.inputs.push(ir);
                }
                Err(skip) => report.skipped.push(skip),
            }
        }
        Redactor::default().report(&mut report);
        for f in [
            OutputFormat::Table,
            OutputFormat::Markdown,
            OutputFormat::Jsonl,
            OutputFormat::Json,
        ] {
            let mut out = Vec::new();
            let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                report::write(&report, f, &HumanOptions::default(), &mut out)
            }));
            assert!(rendered.is_ok(), "{} panics in {f:?}", path.display());
        }
        n += 1;
    }
    assert!(n >= 1);
}
