//! Any bytes through the whole pipeline (decompression, archives, sniffing, every
//! reader, correlation, redaction, every report format, and the sinks that keep only
//! what the reports show): nothing may panic. The
//! batch turns a panic into an "internal error" report; that is a crash here too.
//! A streaming JSONL run with `--finding` and a baseline must also write what the
//! run that kept every call writes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpsift::batch::{analyse_named, Report};
use mcpsift::config::Config;
use mcpsift::model::FindingKind;
use mcpsift::report::{self, Baseline, Filter, HumanOptions, OutputFormat, Redactor};

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
    streamed_as_whole(data, config);
});

/// Every input of `data`, each as `visit` leaves it, with the sinks of `config`.
fn analysed(data: &[u8], config: &Config, visit: &mut dyn FnMut(&mut mcpsift::batch::InputReport)) -> Report {
    let mut report = Report::default();
    for r in analyse_named("fuzz".into(), Box::new(data), false, config) {
        match r {
            Ok(mut ir) => {
                visit(&mut ir);
                report.inputs.push(ir);
            }
            Err(skip) => report.skipped.push(skip),
        }
    }
    report
}

/// A JSONL run with `--finding` (every kind but one) that writes a baseline and
/// applies every other entry of it, streamed input by input, against the same run
/// keeping every call: the same records, and the same baseline.
fn streamed_as_whole(data: &[u8], mut config: Config) {
    let redactor = Redactor::default();
    let filter = Filter {
        findings: FindingKind::ALL[1..].to_vec(),
        ..Filter::default()
    };
    config.call_sinks = None;
    let mut whole = analysed(data, &config, &mut |_| {});
    report::filter::apply(&mut whole, &filter);
    let mut doc = Vec::new();
    let mut w = report::baseline::Writer::new(&mut doc).unwrap();
    for ir in &whole.inputs {
        w.input(ir, &redactor).unwrap();
    }
    w.finish().unwrap();
    let mut entries: serde_json::Value = serde_json::from_slice(&doc).unwrap();
    let half: Vec<serde_json::Value> = entries["findings"].as_array().unwrap().iter().step_by(2).cloned().collect();
    entries["findings"] = serde_json::Value::Array(half);
    let baseline = Baseline::parse("half", &entries.to_string()).unwrap();
    let applied = baseline.apply(&mut whole);
    whole.baseline_accepted = applied.accepted;
    redactor.report(&mut whole);
    let mut want = Vec::new();
    report::jsonl::write_jsonl(&whole, &mut want).unwrap();

    config.call_sinks = Some(report::kept::teed_sinks(None, &filter, redactor));
    let (mut records, mut written_doc) = (Vec::new(), Vec::new());
    let mut streamer = report::jsonl::Streamer::new(&mut records, redactor);
    let sink: Box<dyn std::io::Write + Send + '_> = Box::new(&mut written_doc);
    let mut passes = report::InputPasses::new(&filter, redactor, Some(sink), Some(&baseline)).unwrap();
    let mut lean = analysed(data, &config, &mut |ir| {
        passes.input(ir);
        streamer.input(ir).unwrap();
        report::kept::written(ir);
    });
    let (wrote, lean_applied) = passes.finish(&mut lean);
    wrote.unwrap();
    assert_eq!(lean_applied.as_ref(), Some(&applied));
    report::take_attention(&mut lean);
    redactor.run_fields(&mut lean);
    streamer.finish(&lean).unwrap();
    assert!(written_doc == doc, "the baselines differ");
    assert!(records == want, "{}\n---\n{}", String::from_utf8_lossy(&records), String::from_utf8_lossy(&want));
}
