//! End-to-end tests of the `mcpsift` binary: the samples' verdicts, bad inputs,
//! exit codes, stdin, gzip and a closed stdout.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mcpsift"))
}

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn analyze(args: &[&str]) -> Output {
    bin()
        .arg("analyze")
        .args(args)
        .output()
        .expect("run mcpsift")
}

fn jsonl(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// (file, id as JSON text, outcome) for every call the samples contain, as the
/// generator (samples/make_samples.py) intends them.
const SAMPLE_VERDICTS: &[(&str, &str, &str)] = &[
    ("stateless-2026.jsonl", "1", "INPUT_REQUIRED"),
    ("stateless-2026.jsonl", "2", "TOOL_SUCCESS"),
    ("stateless-2026.jsonl", "3", "JSONRPC_ERROR"),
    ("stateless-2026.jsonl", "4", "INVALID_TOOL_RESULT"),
    ("stdio-tee.jsonl", "\"a\"", "TOOL_SUCCESS"),
    ("stdio-tee.jsonl", "\"b\"", "INVALID_TOOL_RESULT"),
    ("stdio-tee.jsonl", "\"c\"", "INVALID_ENVELOPE"),
    ("stdio-transcript.jsonl", "1", "TOOL_SUCCESS"),
    ("stdio-transcript.jsonl", "2", "TOOL_ERROR"),
    ("stdio-transcript.jsonl", "3", "NO_RESPONSE"),
    ("stdio-transcript.jsonl", "4", "NO_RESPONSE"),
    ("streamable-http.jsonl", "2", "TOOL_SUCCESS"),
    ("streamable-http.jsonl", "3", "TOOL_SUCCESS"),
    ("streamable-http.jsonl", "4", "TOOL_ERROR"),
    ("streamable-http.jsonl", "5", "JSONRPC_ERROR"),
    ("streamable-http.jsonl", "6", "HTTP_ERROR"),
    ("streamable-http.jsonl", "7", "TOOL_SUCCESS"),
    ("streamable-http.jsonl", "8", "HTTP_ERROR"),
    ("streamable-http.jsonl", "9", "MALFORMED_JSON"),
    ("streamable-http.jsonl", "10", "INVALID_ENVELOPE"),
    ("streamable-http.jsonl", "11", "INVALID_TOOL_RESULT"),
    ("streamable-http.jsonl", "12", "STREAM_INCOMPLETE"),
    ("streamable-http.jsonl", "13", "TOOL_SUCCESS"),
    ("streamable-http.jsonl", "14", "NO_RESPONSE"),
    ("streamable-http.jsonl", "15", "TOOL_SUCCESS"),
];

#[test]
fn samples_give_one_call_record_per_tools_call_with_the_intended_outcome() {
    let out = analyze(&[repo("samples").to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let records = jsonl(&out);
    let calls: Vec<(String, String, String)> = records
        .iter()
        .filter(|r| r["type"] == "call")
        .map(|r| {
            let input = r["input"].as_str().unwrap();
            let file = Path::new(input)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (
                file,
                r["id"].to_string(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = SAMPLE_VERDICTS
        .iter()
        .map(|(f, i, o)| (f.to_string(), i.to_string(), o.to_string()))
        .collect();
    assert_eq!(calls, expected);
    // Every outcome is covered by the samples.
    let summary = records.last().unwrap();
    assert_eq!(summary["type"], "summary");
    for (outcome, n) in summary["outcomes"].as_object().unwrap() {
        assert!(n.as_u64().unwrap() > 0, "samples lack {outcome}");
    }
    // The generator script is skipped, not an error.
    assert_eq!(summary["skipped"].as_array().unwrap().len(), 1);
}

#[test]
fn samples_findings_name_their_calls() {
    let out = analyze(&[
        repo("samples/streamable-http.jsonl").to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    let records = jsonl(&out);
    let findings: Vec<(String, String, Vec<Value>)> = records
        .iter()
        .filter(|r| r["type"] == "finding")
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_owned(),
                r["severity"].as_str().unwrap().to_owned(),
                r["ids"].as_array().unwrap().clone(),
            )
        })
        .collect();
    let has = |kind: &str, sev: &str, ids: &[i64]| {
        findings.iter().any(|(k, s, i)| {
            k == kind
                && s == sev
                && i.iter().map(|v| v.as_i64().unwrap()).collect::<Vec<_>>() == ids
        })
    };
    assert!(has("UNSAFE_REPLAY", "HIGH", &[12, 13]), "{findings:?}");
    assert!(has("ID_MISMATCH", "MEDIUM", &[10, 99]), "{findings:?}");
    assert!(has("NON_TERMINAL", "MEDIUM", &[12]), "{findings:?}");
    assert!(has("NON_TERMINAL", "MEDIUM", &[14]), "{findings:?}");
    assert!(has("UNEXPLAINED_REPEAT", "LOW", &[2, 15]), "{findings:?}");
    assert_eq!(findings.len(), 5, "{findings:?}");
    // The 503 retry is explained by the refusal and counted as the second POST.
    let retry = records
        .iter()
        .find(|r| r["type"] == "call" && r["id"] == 7)
        .unwrap();
    assert_eq!(retry["post_count"], 2);
    assert_eq!(retry["retry_origin"], "after_refusal");
    assert_eq!(retry["protocol_version"], "2025-06-18");
    assert_eq!(retry["client"], "sample-client@1.0.0");
    assert!(retry["scope"].as_str().unwrap().starts_with("session:"));
    assert!(
        !retry["scope"].as_str().unwrap().contains("4f1c2b7e"),
        "session ids are hashed"
    );
}

#[test]
fn bad_inputs_are_named_and_the_rest_is_analysed() {
    let dir = tempfile::tempdir().unwrap();
    let good = repo("samples/stdio-tee.jsonl");
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"").unwrap();
    let binary = dir.path().join("binary.bin");
    std::fs::write(&binary, b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00").unwrap();
    let mixed = dir.path().join("mixed.jsonl");
    let mut f = std::fs::File::create(&mixed).unwrap();
    writeln!(
        f,
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t"}}}}"#
    )
    .unwrap();
    f.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}\n")
        .unwrap();
    writeln!(f, "{}{}", "[".repeat(10_000), "]".repeat(10_000)).unwrap();
    // A 50 MB single line: over the record cap, skipped without being buffered.
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{}\"}}\n",
        "a".repeat(50 << 20)
    );
    f.write_all(big.as_bytes()).unwrap();
    writeln!(f, r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[]}}}}"#).unwrap();
    drop(f);
    let missing = dir.path().join("nope.jsonl");

    let out = analyze(&[
        good.to_str().unwrap(),
        empty.to_str().unwrap(),
        binary.to_str().unwrap(),
        mixed.to_str().unwrap(),
        missing.to_str().unwrap(),
        "--format",
        "jsonl",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    let m = mixed.display();
    assert!(
        err.contains(&format!(
            "{m}: line 2: not valid UTF-8 (bad byte 0xff at column 24)"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{m}: line 3: not JSON: JSON nested more than 128 levels deep"
        )),
        "{err}"
    );
    let big_len = big.len() - 1;
    assert!(
        err.contains(&format!(
            "{m}: line 4: line is {big_len} bytes, over the 16777216-byte record limit"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: empty input", empty.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}: binary data that is not a pcap",
            binary.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: No such file", missing.display())),
        "{err}"
    );

    let records = jsonl(&out);
    let inputs: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["type"] == "input")
        .map(|r| (r["path"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    // Reported in the order the inputs were named, whatever failed.
    let names: Vec<&str> = inputs.iter().map(|(p, _)| *p).collect();
    assert_eq!(
        names,
        [&good, &empty, &binary, &mixed, &missing].map(|p| p.to_str().unwrap())
    );
    let statuses: Vec<&str> = inputs.iter().map(|(_, s)| *s).collect();
    assert_eq!(statuses, ["ok", "error", "error", "ok", "error"]);
    // The good file and the good lines of the mixed file were still analysed.
    let outcomes: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["type"] == "call")
        .map(|r| (r["input"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(
        outcomes
            .iter()
            .filter(|(i, _)| i.ends_with("stdio-tee.jsonl"))
            .count(),
        3
    );
    assert!(
        outcomes.contains(&(mixed.to_str().unwrap(), "TOOL_SUCCESS")),
        "{outcomes:?}"
    );
}

#[test]
fn stdin_and_gzip_are_read_by_content() {
    let sample = std::fs::read(repo("samples/stdio-tee.jsonl")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&sample).unwrap();
    let gz = gz.finish().unwrap();
    for data in [sample.clone(), gz] {
        let mut child = bin()
            .args(["analyze", "-", "--format", "jsonl"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&data).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let records = jsonl(&out);
        assert_eq!(records[0]["path"], "-");
        assert_eq!(records[0]["format"], "jsonl");
        assert_eq!(records.iter().filter(|r| r["type"] == "call").count(), 3);
    }
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    let mut child = bin()
        .args([
            "analyze",
            repo("samples").to_str().unwrap(),
            "--format",
            "json",
            "--all",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
}

#[test]
fn table_and_markdown_render_the_samples() {
    let out = analyze(&[repo("samples").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("UNSAFE_REPLAY"), "{text}");
    assert!(text.contains("STREAM_INCOMPLETE"), "{text}");
    assert!(text.contains("4 inputs, 25 tools/call"), "{text}");
    let out = analyze(&[repo("samples").to_str().unwrap(), "--format", "markdown"]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.starts_with("# mcpsift report\n"), "{md}");
    assert!(md.contains("## Findings"), "{md}");
    assert!(
        md.contains("### STREAM\\_INCOMPLETE — delete\\_file id ` 12 `\n"),
        "{md}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let out = bin().args(["analyze"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = bin()
        .args(["analyze", "x", "--format", "yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
