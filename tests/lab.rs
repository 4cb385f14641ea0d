//! End-to-end over the traffic lab (`lab/`): every committed capture of real SDK
//! traffic, in every format it was recorded in (pcap, pcapng, HAR, JSONL exchange
//! log, stdio transcript), must give exactly the calls and finding kinds its
//! `expected.json` lists. Those expectations were derived from what each scenario
//! did and checked against the captures themselves, never from mcpsift's output.
//! No npm, pip or network is needed: the captures are committed.
//!
//! Optional keys of `expected.json`, checked when present:
//! - `max_findings_above_info`: the exact number of findings with a severity above
//!   INFO (the planted anomalies of the long sessions, 0 for a cancellation);
//! - `cancelled_calls`: ids of calls the client cancelled; every finding that names
//!   one of them must be INFO.

mod common;

use common::run::{call_verdicts, config_with_keylog};
use mcpsift::batch::analyse_reader;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const FORMATS: &[&str] = &[
    "capture.pcap",
    "capture.pcapng",
    "capture.har",
    "exchanges.jsonl",
    "transcript.jsonl",
];

#[test]
fn every_lab_capture_in_every_format_matches_its_expected_results() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/captures");
    let mut scenarios: Vec<_> = std::fs::read_dir(&root)
        .expect("lab/captures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").exists())
        .collect();
    scenarios.sort();
    let mut checked = 0;
    let mut failures = Vec::new();
    for dir in &scenarios {
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap())
                .unwrap();
        let want_calls: Vec<(String, String, String)> = expected["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["tool"].as_str().unwrap().to_owned(),
                    c["id"].to_string(),
                    c["outcome"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let want_findings: BTreeSet<String> = expected["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_owned())
            .collect();
        let want_above_info = expected
            .get("max_findings_above_info")
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        let cancelled: BTreeSet<String> = expected
            .get("cancelled_calls")
            .and_then(Value::as_array)
            .map(|ids| ids.iter().map(Value::to_string).collect())
            .unwrap_or_default();
        // A scenario recorded over TLS keeps the client's key log beside its capture.
        let keylog = dir.join("keys.txt");
        let config = config_with_keylog(keylog.exists().then_some(keylog.as_path()));
        for format in FORMATS {
            let path = dir.join(format);
            if !path.exists() {
                continue;
            }
            let file = std::fs::File::open(&path).unwrap();
            let (_, a) =
                analyse_reader(file, &config).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let got_calls = call_verdicts(&a);
            let got_findings: BTreeSet<String> = a
                .findings
                .iter()
                .map(|f| f.kind.as_str().to_owned())
                .collect();
            if got_calls != want_calls || got_findings != want_findings || !a.problems.is_empty() {
                failures.push(format!(
                    "{}:\n  calls    want {want_calls:?}\n           got  {got_calls:?}\n  findings want {want_findings:?}\n           got  {got_findings:?}\n  problems {:?}",
                    path.display(),
                    a.problems
                ));
            }
            let above_info: Vec<String> = a
                .findings
                .iter()
                .filter(|f| f.severity.as_str() != "INFO")
                .map(|f| format!("{} {} {}", f.kind.as_str(), f.severity.as_str(), f.detail))
                .collect();
            if let Some(want) = want_above_info {
                if above_info.len() != want {
                    let shown = above_info.iter().take(8).cloned().collect::<Vec<_>>();
                    failures.push(format!(
                        "{}: {} finding(s) above INFO, expected exactly {want}; first ones: {shown:#?}",
                        path.display(),
                        above_info.len()
                    ));
                }
            }
            for f in &a.findings {
                if f.severity.as_str() != "INFO"
                    && f.ids.iter().any(|i| cancelled.contains(&i.to_string()))
                {
                    failures.push(format!(
                        "{}: {} at {} names a cancelled call: {}",
                        path.display(),
                        f.kind.as_str(),
                        f.severity.as_str(),
                        f.detail
                    ));
                }
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // 37 HTTP scenarios × 4 formats + 2 MRTR scenarios × 4 + 2 impaired-network scenarios × 3
    // (no HAR) + 2 stdio transcripts, + the long sessions (2 HTTP × 4 + 1 stdio transcript) and
    // the 3 cancellation scenarios (cancel_*, sse_cut_cancel_retry_ts) × 4, as committed.
    assert!(checked >= 185, "only {checked} captures checked");
}

#[test]
fn the_lab_covers_the_outcomes_and_findings_it_claims() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/captures");
    let mut outcomes = BTreeSet::new();
    let mut findings = BTreeSet::new();
    for e in std::fs::read_dir(&root).unwrap().filter_map(Result::ok) {
        let p = e.path().join("expected.json");
        if let Ok(text) = std::fs::read_to_string(&p) {
            let v: Value = serde_json::from_str(&text).unwrap();
            for c in v["calls"].as_array().unwrap() {
                outcomes.insert(c["outcome"].as_str().unwrap().to_owned());
            }
            for f in v["findings"].as_array().unwrap() {
                findings.insert(f.as_str().unwrap().to_owned());
            }
        }
    }
    for o in [
        "TOOL_SUCCESS",
        "TOOL_ERROR",
        "JSONRPC_ERROR",
        "MALFORMED_JSON",
        "INVALID_ENVELOPE",
        "INVALID_TOOL_RESULT",
        "HTTP_ERROR",
        "STREAM_INCOMPLETE",
        "NO_RESPONSE",
        "INPUT_REQUIRED",
    ] {
        assert!(outcomes.contains(o), "no lab scenario yields {o}");
    }
    for f in [
        "ID_MISMATCH",
        "NON_TERMINAL",
        "UNEXPLAINED_REPEAT",
        "UNSAFE_REPLAY",
        "RETRY_TOO_SOON",
    ] {
        assert!(findings.contains(f), "no lab scenario raises {f}");
    }
}
