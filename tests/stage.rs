//! The two stages run apart (`mcpsift::stage`) give what the CLI gives: the same call
//! records and findings on every lab capture, and a session split across two files,
//! grouped, judged as if the files were one.

use mcpsift::batch::{self, Input};
use mcpsift::config::Config;
use mcpsift::report::jsonl;
use mcpsift::report::Summary;
use mcpsift::stage::{self, Options, Record};
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The CLI's call and finding records for `path` (the `jsonl` writer's).
fn cli(path: &Path) -> (Vec<Value>, Vec<Value>) {
    let config = Config::default();
    let mut report = batch::run(&[Input::Path(path.to_owned())], &config);
    mcpsift::report::redact::Redactor::default().report(&mut report);
    let mut calls = Vec::new();
    let mut findings = Vec::new();
    for r in jsonl::records(&report) {
        match r["type"].as_str() {
            Some("call") => calls.push(r),
            Some("finding") => findings.push(r),
            _ => {}
        }
    }
    (calls, findings)
}

/// Stage 1 on each file (with its group), then stage 2 per partition.
fn staged(files: &[(String, Vec<u8>, Option<String>)]) -> (Vec<Value>, Vec<Value>) {
    let config = Config::default();
    let mut parts: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    for (name, data, group) in files {
        let options = Options {
            group: group.clone(),
            no_redact: false,
        };
        for one in stage::calls(name, data, &config, &options) {
            // Records cross machines as JSON: make them do so here too.
            let one: stage::StageOne =
                serde_json::from_str(&serde_json::to_string(&one).unwrap()).unwrap();
            for r in one.records {
                parts.entry(r.partition().to_owned()).or_default().push(r);
            }
        }
    }
    let mut calls = Vec::new();
    let mut findings = Vec::new();
    for (_, records) in parts {
        let out = stage::correlate(records, &config);
        calls.extend(out.calls);
        findings.extend(out.findings);
    }
    (calls, findings)
}

fn sorted(mut v: Vec<Value>) -> Vec<String> {
    let mut s: Vec<String> = v.drain(..).map(|v| v.to_string()).collect();
    s.sort();
    s
}

fn lab_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir("lab/captures").unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            if name.starts_with("capture.") || name.ends_with(".jsonl") {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn stages_apart_equal_the_cli_on_every_lab_capture() {
    let files = lab_files();
    assert!(
        files.len() > 100,
        "the lab corpus is there ({})",
        files.len()
    );
    let mut findings_seen = 0;
    for f in &files {
        let name = f.display().to_string();
        let (cli_calls, cli_findings) = cli(f);
        let data = std::fs::read(f).unwrap();
        let (calls, findings) = staged(&[(name.clone(), data, None)]);
        assert_eq!(sorted(calls), sorted(cli_calls), "calls of {name}");
        findings_seen += cli_findings.len();
        assert_eq!(sorted(findings), sorted(cli_findings), "findings of {name}");
    }
    assert!(findings_seen > 50, "the corpus has findings to compare");
}

/// What of a call or finding does not depend on which file it was read from.
fn essence(v: &Value) -> String {
    let mut v = v.clone();
    if let Value::Object(m) = &mut v {
        for k in ["input", "location", "locations"] {
            m.remove(k);
        }
        if let Some(Value::Object(p)) = m.get_mut("previous_attempt") {
            p.remove("location");
        }
    }
    v.to_string()
}

/// Splits `path` at each of `cuts` (lines) into two grouped files and compares the
/// staged result with the CLI's on the whole file; returns how many cuts compared.
fn split_and_compare(path: &Path, cuts: impl Iterator<Item = usize>) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (whole_calls, whole_findings) = cli(path);
    let ess = |v: &[Value]| {
        let mut s: Vec<String> = v.iter().map(essence).collect();
        s.sort();
        s
    };
    let mut checked = 0;
    for cut in cuts.filter(|&c| c > 0 && c < lines.len()) {
        let first = lines[..cut].join("\n") + "\n";
        let second = lines[cut..].join("\n") + "\n";
        // Compare the cuts where the first half holds a whole call (the client and
        // server names travel with call records; a half with only the initialize
        // has none to give) and no call is cut in two.
        let first_calls = staged(&[("p.jsonl".into(), first.clone().into_bytes(), None)]).0;
        let group = Some("one-session".to_owned());
        let (calls, findings) = staged(&[
            ("part-1.jsonl".into(), first.into_bytes(), group.clone()),
            ("part-2.jsonl".into(), second.into_bytes(), group),
        ]);
        if calls.len() != whole_calls.len() || first_calls.is_empty() {
            continue;
        }
        assert_eq!(
            ess(&calls),
            ess(&whole_calls),
            "{path:?} calls, cut at line {cut}"
        );
        assert_eq!(
            ess(&findings),
            ess(&whole_findings),
            "{path:?} findings, cut at line {cut}"
        );
        checked += 1;
    }
    checked
}

#[test]
fn a_session_split_across_two_grouped_files_is_judged_as_one() {
    // A retry that crosses the cut: the lab's cut-and-retry session, split just
    // before the re-sent call, so only stage 2 can pair it.
    let replay = Path::new("lab/captures/no_response_replay_ts/exchanges.jsonl");
    let (whole, _) = cli(replay);
    assert!(
        whole.iter().any(|c| c["post_count"] == 2),
        "a repeat to pair"
    );
    assert!(split_and_compare(replay, 1..10) >= 1);
    // A long agent session with its planted faults, cut at many places.
    let long = Path::new("lab/captures/long_session_ts/exchanges.jsonl");
    assert!(split_and_compare(long, (7..400).step_by(37)) >= 5);
}

#[test]
fn files_not_grouped_are_never_paired() {
    // The same capture twice under two names: alone, each is a first attempt.
    let path = Path::new("lab/captures/baseline_ts_json/exchanges.jsonl");
    let data = std::fs::read(path).unwrap();
    let (calls, _) = staged(&[
        ("a.jsonl".into(), data.clone(), None),
        ("b.jsonl".into(), data.clone(), None),
    ]);
    assert!(!calls.is_empty());
    assert!(calls.iter().all(|c| c["post_count"] == 1), "{calls:?}");
    // Grouped, the second copy repeats the first.
    let g = Some("g".to_owned());
    let (calls, _) = staged(&[
        ("a.jsonl".into(), data.clone(), g.clone()),
        ("b.jsonl".into(), data, g),
    ]);
    assert!(calls.iter().any(|c| c["post_count"] == 2), "{calls:?}");
}

/// A small, varied slice of the lab (findings, errors of every layer, stdio, pcaps,
/// HAR) and one file that cannot be read, for the summary property.
fn summary_corpus(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        "baseline_ts_json/exchanges.jsonl",
        "no_response_replay_ts/capture.pcap",
        "client_repeat_destructive_py/capture.har",
        "wrong_id_rs/exchanges.jsonl",
        "http_503_then_200_py/capture.pcapng",
        "malformed_json_ts/exchanges.jsonl",
        "sse_cut_ts/capture.pcap",
        "stdio_py/transcript.jsonl",
        "long_session_ts/exchanges.jsonl",
        "rate_limit_429_rs/exchanges.jsonl",
    ]
    .iter()
    .map(|p| Path::new("lab/captures").join(p))
    .collect();
    for f in &files {
        assert!(f.exists(), "{}", f.display());
    }
    let bad = dir.join("not-json.jsonl");
    std::fs::write(&bad, "{\"this is\": \n not json at all\n").unwrap();
    files.push(bad);
    files
}

/// The CLI's summary of a run over `files`, as it prints it.
fn cli_summary(files: &[PathBuf]) -> Summary {
    let inputs: Vec<Input> = files.iter().cloned().map(Input::Path).collect();
    let mut report = batch::run(&inputs, &Config::default());
    mcpsift::report::redact::Redactor::default().report(&mut report);
    let printed = jsonl::records(&report).pop().unwrap();
    assert_eq!(printed["type"], "summary");
    let s = Summary::of_report(&report);
    assert_eq!(s.to_record(), printed, "the printed summary is Summary's");
    s
}

/// A summary built from the two stages' records alone, as a distributed job would.
fn staged_summary(files: &[PathBuf]) -> Summary {
    let config = Config::default();
    let mut s = Summary::default();
    for f in files {
        let data = std::fs::read(f).unwrap();
        for one in stage::calls(
            &f.display().to_string(),
            &data,
            &config,
            &Options::default(),
        ) {
            s.add_record(&one.input);
            let out = stage::correlate(one.records, &config);
            for r in out.calls.iter().chain(&out.findings) {
                s.add_record(r);
            }
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// The summary of a union of inputs is the merge of their summaries, whichever
    /// way the inputs are cut into parts and in whatever order the parts merge, and
    /// whether a part's summary comes from the CLI or from the stages' records.
    #[test]
    fn the_summary_of_a_union_is_the_merge_of_the_summaries_of_its_parts(
        parts in proptest::collection::vec(0usize..4, 11),
        order in Just((0usize..4).collect::<Vec<_>>()).prop_shuffle(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let corpus = summary_corpus(dir.path());
        let whole = cli_summary(&corpus);
        prop_assert!(whole.calls > 200 && whole.inputs_with_errors == 1);
        prop_assert!(whole.findings.values().sum::<u64>() > 3);
        let mut merged = Summary::default();
        let mut from_records = Summary::default();
        for p in order {
            let mine: Vec<PathBuf> = corpus
                .iter()
                .zip(&parts)
                .filter(|(_, q)| **q == p)
                .map(|(f, _)| f.clone())
                .collect();
            if mine.is_empty() {
                continue;
            }
            merged.merge(&cli_summary(&mine));
            // A part's summary travels as its record, and merges as one.
            from_records.add_record(&staged_summary(&mine).to_record());
        }
        prop_assert_eq!(&merged, &whole);
        prop_assert_eq!(&from_records, &whole);
    }
}
