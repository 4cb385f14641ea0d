//! Streaming: a long input whose calls are judged and handed on while it is read (so
//! memory does not grow with calls) gives the same calls and findings as one judged
//! whole, and the judge's state stays within its caps however many calls pass.

use mcpsift::batch::analyse_reader;
use mcpsift::config::{Config, SinkFactory};
use mcpsift::correlate::facts::CallFacts;
use mcpsift::correlate::judge::{Judge, COLD_GROUPS, HOT_GROUPS};
use mcpsift::correlate::{Call, CallSink, Scope, Transport};
use mcpsift::jsonrpc::Id;
use mcpsift::model::{End, Locator, Outcome, Timestamp};
use mcpsift::report::jsonl;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

const T0: i64 = 1_796_000_000;

fn ts(ms: i64) -> String {
    Timestamp((T0 * 1000 + ms) * 1_000_000).to_string()
}

fn post(ms: i64, body: Value, response: Option<(u16, Value)>) -> String {
    let req = json!({
        "method": "POST",
        "url": "http://127.0.0.1:3000/mcp",
        "headers": [["content-type", "application/json"], ["mcp-session-id", "sess-0123456789"]],
        "body": body.to_string(),
    });
    let rec = match response {
        Some((status, b)) => json!({
            "ts": ts(ms), "request": req,
            "response": {"status": status, "headers": [["content-type", "application/json"]], "body": b.to_string()},
            "end_ts": ts(ms + 40),
        }),
        None => {
            json!({"ts": ts(ms), "request": req, "response": null, "end": "closed", "end_ts": ts(ms + 40)})
        }
    };
    rec.to_string()
}

fn call(id: i64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

fn ok(id: i64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

/// A day of one agent session: 20,000 calls a second apart, re-reads of the same
/// files every few minutes, and three planted faults late in the input (after many
/// early releases): a lost response re-sent 2 s later, a double dispatch, a 503 then
/// a retry.
fn long_session() -> String {
    let mut lines = Vec::new();
    lines.push(post(
        0,
        json!({"jsonrpc":"2.0","id":0,"method":"tools/list"}),
        Some((
            200,
            json!({"jsonrpc":"2.0","id":0,"result":{"tools":[
                {"name":"read_file","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},
                {"name":"write_file","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true}}]}}),
        )),
    ));
    let mut id = 1;
    for n in 0..20_000i64 {
        let ms = 1000 + n * 1000;
        let (tool, args) = if n % 7 == 0 {
            // The same few files, re-read minutes apart: re-invocations.
            ("read_file", json!({"path": format!("f{}.rs", n % 5)}))
        } else {
            ("write_file", json!({"path": format!("out{n}.txt")}))
        };
        match n {
            15_000 => {
                lines.push(post(ms, call(id, "write_file", json!({"path":"x"})), None));
                id += 1;
                lines.push(post(
                    ms + 500,
                    call(id, "write_file", json!({"path":"x"})),
                    Some((200, ok(id, "ok"))),
                ));
            }
            16_000 => {
                lines.push(post(
                    ms,
                    call(id, "write_file", json!({"path":"y"})),
                    Some((200, ok(id, "ok"))),
                ));
                id += 1;
                lines.push(post(
                    ms + 100,
                    call(id, "write_file", json!({"path":"y"})),
                    Some((200, ok(id, "ok"))),
                ));
            }
            17_000 => {
                lines.push(post(
                    ms,
                    call(id, "read_file", json!({"path":"z"})),
                    Some((503, json!("busy"))),
                ));
                id += 1;
                lines.push(post(
                    ms + 300,
                    call(id, "read_file", json!({"path":"z"})),
                    Some((200, ok(id, "ok"))),
                ));
            }
            _ => lines.push(post(ms, call(id, tool, args), Some((200, ok(id, "done"))))),
        }
        id += 1;
    }
    lines.join("\n") + "\n"
}

struct Collect(Arc<Mutex<Vec<Call>>>);

impl CallSink for Collect {
    fn call(&mut self, call: Call) {
        self.0.lock().unwrap().push(call);
    }
    fn finish(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        Box::new(())
    }
}

#[test]
fn a_long_input_streamed_gives_the_calls_and_findings_of_one_judged_whole() {
    let input = long_session();
    // Whole: the calls kept until the end.
    let (_, whole) = analyse_reader(input.as_bytes(), &Config::default()).unwrap();
    assert!(
        whole.calls.len() > 20_000,
        "{} calls, {:?}",
        whole.calls.len(),
        whole.problems.first()
    );
    // Streamed: judged and handed on as the input is read.
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let config = Config {
        call_sinks: Some(SinkFactory(Arc::new(move |_: &str| {
            Box::new(Collect(sink.clone())) as Box<dyn CallSink>
        }))),
        ..Config::default()
    };
    let (_, streamed) = analyse_reader(input.as_bytes(), &config).unwrap();
    assert!(streamed.calls.is_empty(), "calls went to the sink");
    let got = got.lock().unwrap();
    assert_eq!(got.len(), whole.calls.len());
    assert_eq!(streamed.call_count(), whole.calls.len() as u64);
    let rec = |c: &Call| jsonl::call_record("x", c);
    for (a, b) in got.iter().zip(&whole.calls) {
        assert_eq!(rec(a), rec(b));
    }
    assert_eq!(streamed.findings, whole.findings);
    let kinds: Vec<&str> = whole
        .findings
        .iter()
        .filter(|f| f.severity > mcpsift::model::Severity::Info)
        .map(|f| f.kind.as_str())
        .collect();
    // The planted faults, and nothing from the day's re-reads.
    assert_eq!(
        kinds,
        ["NON_TERMINAL", "UNSAFE_REPLAY", "UNEXPLAINED_REPEAT"],
        "{:#?}",
        whole.findings
    );
    assert!(whole.reinvocations() > 2000, "re-reads are counted");
    assert_eq!(streamed.reinvocations(), whole.reinvocations());
}

fn facts(n: usize, ms: i64) -> CallFacts {
    CallFacts {
        input: "x".into(),
        seq: n,
        scope: Scope::session(&format!("s{}", n % 50_000)),
        endpoint: "h/mcp".into(),
        id: Id::number(n as i64),
        tool: Some("t".into()),
        arguments: n as u128,
        outcome: Outcome::ToolSuccess,
        transport: Transport::Http,
        locator: Locator::Line { line: n as u64 },
        started_at: Some(Timestamp((T0 * 1000 + ms) * 1_000_000)),
        ended_at: Some(Timestamp((T0 * 1000 + ms + 5) * 1_000_000)),
        status: Some(200),
        jsonrpc_code: None,
        end: End::Complete,
        cancelled: false,
        cancel_notified: false,
        protocol_version: None,
        retry_after_ms: None,
        sse_retry_ms: None,
        mrtr_followup: false,
        request_state: None,
        returned_state: None,
        annotations: None,
        resumed: false,
        why: None,
    }
}

#[test]
fn a_few_calls_made_again_and_again_for_hours_keep_the_judge_small() {
    // One call left counted at the front of the age order, then a handful of calls
    // re-made every 2 minutes for a week: each goes counted, comes back, goes again.
    let mut judge = Judge::default();
    let mut first = facts(0, 0);
    first.arguments = u128::MAX;
    judge.call(first);
    for n in 1..300_000usize {
        let mut f = facts(n, n as i64 * 2_000);
        f.arguments = (n % 8) as u128;
        judge.call(f);
    }
    assert!(judge.cold_order_len() <= 2 * judge.cold_groups() + 1024 + 4096);
    assert!(judge.hot_groups() <= 64, "{}", judge.hot_groups());
}

#[test]
fn the_judge_keeps_within_its_caps_at_thousands_of_distinct_calls_a_second() {
    // 400,000 distinct calls, 10,000 a second: all inside one retry window.
    let mut judge = Judge::default();
    let mut peak = 0;
    for n in 0..400_000usize {
        judge.call(facts(n, (n / 10) as i64));
        peak = peak.max(judge.hot_groups());
    }
    assert!(peak <= HOT_GROUPS + 1, "hot groups peaked at {peak}");
    assert!(
        judge.cold_groups() <= COLD_GROUPS,
        "{}",
        judge.cold_groups()
    );
    // A call repeated right away is still paired after all that.
    let j = judge.call(facts(399_999, 40_000));
    assert_eq!(j.post_count, 2);
}

/// Every record of one input (its input record, calls, findings), as printed.
fn records_of(path: &std::path::Path, config: &Config) -> Vec<String> {
    let mut report = mcpsift::batch::run(&[mcpsift::batch::Input::Path(path.to_owned())], config);
    mcpsift::report::redact::Redactor::default().report(&mut report);
    jsonl::records(&report)
        .iter()
        .map(Value::to_string)
        .collect()
}

#[test]
fn one_input_on_two_threads_gives_the_one_thread_output() {
    // Reading (and JSON-RPC decoding) on one thread, correlation on another: the
    // records must not depend on it, on every lab capture and transcript.
    let mut checked = 0;
    for dir in std::fs::read_dir("lab/captures").unwrap() {
        let dir = dir.unwrap().path();
        for f in std::fs::read_dir(&dir).into_iter().flatten() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().to_string();
            if !(name.starts_with("capture.") || name.ends_with(".jsonl")) {
                continue;
            }
            let one = records_of(&f, &Config::default());
            let two = records_of(
                &f,
                &Config {
                    pipeline: true,
                    ..Config::default()
                },
            );
            assert_eq!(one, two, "{}", f.display());
            checked += 1;
        }
    }
    assert!(checked > 150, "{checked}");
}

/// `mcpsift analyze PATHS --format jsonl` with extra arguments: its stdout.
fn cli_stdout(paths: &[&str], extra: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .arg("analyze")
        .args(paths)
        .args(["--format", "jsonl"])
        .args(extra)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn streamed_call_records_equal_the_records_of_the_whole_report() {
    // `--format jsonl` alone streams each call through a spool that redacts only what
    // a record prints; asking for an HTML file too keeps the calls and redacts the
    // whole report. Every printed byte must be the same, on every lab capture and
    // sample (errors with timelines, notes and error data included).
    let html = tempfile::NamedTempFile::new().unwrap();
    let paths = ["lab/captures", "samples"];
    let streamed = cli_stdout(&paths, &[]);
    let whole = cli_stdout(&paths, &["--html", html.path().to_str().unwrap()]);
    let calls = streamed.lines().filter(|l| l.contains(r#""type":"call""#));
    let timelines = calls
        .clone()
        .filter(|l| l.contains(r#""timeline":"#))
        .count();
    assert!(calls.count() > 1000 && timelines > 100, "{timelines}");
    assert!(streamed == whole, "streamed and whole-report jsonl differ");
}

#[test]
fn a_spool_past_its_memory_gives_the_records_of_the_whole_report() {
    // 20,000 calls print more records than a spool keeps in memory (4 MiB), so the
    // streamed output goes through the spool's file and back; it must equal the
    // output of the whole report, byte for byte.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("day.jsonl");
    std::fs::write(&input, long_session()).unwrap();
    let html = dir.path().join("r.html");
    let path = input.to_str().unwrap();
    let streamed = cli_stdout(&[path], &[]);
    let whole = cli_stdout(&[path], &["--html", html.to_str().unwrap()]);
    assert!(
        streamed.len() > mcpsift::report::jsonl::SPOOL_MEMORY,
        "{}",
        streamed.len()
    );
    assert_eq!(
        streamed
            .lines()
            .filter(|l| l.contains(r#""type":"call""#))
            .count(),
        20_003
    );
    assert!(streamed == whole, "streamed and whole-report jsonl differ");
}

/// A sink that keeps its calls' records and, at the end, says how many it saw.
struct Records(Arc<Mutex<Vec<Value>>>);

impl CallSink for Records {
    fn call(&mut self, call: Call) {
        self.0.lock().unwrap().push(jsonl::call_record("x", &call));
    }
    fn finish(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        Box::new(self.0.lock().unwrap().len())
    }
}

#[test]
fn calls_streamed_on_two_threads_reach_the_sink_as_on_one() {
    // On two threads the judged calls go back to the reading thread, where the sink
    // runs: the same calls in the same order, and the input's product is the sink's.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.jsonl");
    std::fs::write(&path, long_session()).unwrap();
    let run = |pipeline: bool| {
        let got = Arc::new(Mutex::new(Vec::new()));
        let sink = got.clone();
        let config = Config {
            pipeline,
            call_sinks: Some(SinkFactory(Arc::new(move |_: &str| {
                Box::new(Records(sink.clone())) as Box<dyn CallSink>
            }))),
            ..Config::default()
        };
        let report = mcpsift::batch::run(&[mcpsift::batch::Input::Path(path.clone())], &config);
        let streamed = report.inputs[0]
            .analysis
            .streamed
            .as_ref()
            .expect("streamed");
        let product = *streamed
            .product
            .downcast_ref::<usize>()
            .expect("the sink's product");
        let got = std::mem::take(&mut *got.lock().unwrap());
        (got, product, report.inputs[0].analysis.findings.len())
    };
    let (one, one_product, one_findings) = run(false);
    let (two, two_product, two_findings) = run(true);
    assert!(one.len() > 20_000, "{}", one.len());
    assert_eq!(one_product, one.len());
    assert_eq!(two_product, two.len());
    assert_eq!(one_findings, two_findings);
    assert!(one == two, "the records differ");
}

#[test]
fn many_inputs_written_as_they_finish_give_the_records_of_the_whole_report() {
    // A directory (and a tar.gz) of inputs of very different lengths, so that on two
    // threads later inputs finish before earlier ones: a streaming run writes each
    // input once the ones before it are written, and must print the bytes of a run
    // that keeps the whole report, inputs in path order.
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    let mut names = Vec::new();
    for i in 0..40 {
        // Every seventh input is long (hundreds of calls), the rest a few calls.
        let calls = if i % 7 == 0 { 400 } else { 1 + i % 3 };
        let mut lines = Vec::new();
        for k in 0..calls {
            let id = i64::from(k) + 1;
            let text = format!("input {i} call {k}");
            lines.push(post(
                i64::from(k) * 1000,
                call(id, "read", json!({"k": k})),
                Some((200, ok(id, &text))),
            ));
        }
        let name = format!("s{i:03}.jsonl");
        let body = lines.join("\n") + "\n";
        std::fs::write(logs.join(&name), &body).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, &name, body.as_bytes()).unwrap();
        names.push(name);
    }
    let archive = dir.path().join("logs.tar.gz");
    std::fs::write(&archive, tar.into_inner().unwrap().finish().unwrap()).unwrap();
    let html = dir.path().join("r.html");
    for input in [logs.to_str().unwrap(), archive.to_str().unwrap()] {
        let whole = cli_stdout(
            &[input],
            &["--threads", "1", "--html", html.to_str().unwrap()],
        );
        for threads in ["1", "2"] {
            let streamed = cli_stdout(&[input], &["--threads", threads]);
            assert!(
                streamed == whole,
                "{input} on {threads} threads: streamed and whole-report jsonl differ"
            );
        }
        let order: Vec<String> = whole
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["type"] == "input")
            .map(|r| {
                r["path"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(order, names, "{input}");
        assert_eq!(
            whole
                .lines()
                .filter(|l| l.contains(r#""type":"call""#))
                .count(),
            2_467,
        );
    }
}

/// A server that is down: every call of a long input fails and raises a finding,
/// more findings than a streaming judge holds (`FINDINGS_IN_MEMORY`), so they go to
/// disk in sorted runs and come back merged. Request times run out of line order and
/// some calls are re-sent (several findings on one line, in the rules' order), so the
/// merge must restore the order of the whole report; a tool name shaped like a
/// secret must be redacted on the way back.
#[test]
fn findings_moved_to_disk_come_back_in_the_order_and_redaction_of_the_whole_report() {
    use mcpsift::correlate::findings::FINDINGS_IN_MEMORY;
    let n = 2 * FINDINGS_IN_MEMORY + 5_000;
    let secret = "ghp_A1b2C3d4E5f6G7h8J9k0L1m2N3o4P5q6R7s8";
    let mut lines = Vec::with_capacity(n);
    for i in 0..n as i64 {
        // Every 9th request is logged late, a minute after its time.
        let ms = if i % 9 == 4 { i * 50 - 60_000 } else { i * 50 };
        let tool = if i % 11 == 0 { secret } else { "read_file" };
        // Every 5th call re-sends the previous call's arguments.
        let file = if i % 5 == 1 { i - 1 } else { i };
        lines.push(post(
            ms.max(0),
            call(i, tool, json!({"path": format!("src/f{file}.rs")})),
            None,
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("down.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let path = input.to_str().unwrap();
    let html = dir.path().join("r.html");
    let whole = cli_stdout(&[path], &["--html", html.to_str().unwrap()]);
    let findings: Vec<Value> = whole
        .lines()
        .filter(|l| l.contains(r#""type":"finding""#))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(findings.len() > n, "{}", findings.len());
    let kinds: std::collections::BTreeSet<&str> = findings
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.len() >= 2, "{kinds:?}");
    let line_of = |f: &Value| f["locations"][0]["line"].as_u64().unwrap();
    assert!(findings
        .windows(2)
        .all(|w| line_of(&w[0]) <= line_of(&w[1])));
    assert!(!whole.contains(secret) && whole.contains("[REDACTED] call"));
    for threads in ["1", "2"] {
        let streamed = cli_stdout(&[path], &["--threads", threads]);
        assert!(
            streamed == whole,
            "streamed ({threads} threads) and whole-report jsonl differ"
        );
    }
    // Where no temporary file can be made, the findings stay in memory: same output.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .args(["analyze", path, "--format", "jsonl"])
        .env("TMPDIR", dir.path().join("no such directory"))
        .output()
        .unwrap();
    assert!(out.stdout == whole.as_bytes());
    // `--fail-on` counts the findings that were on disk and then let go.
    let non_terminal = findings
        .iter()
        .filter(|f| f["kind"] == "NON_TERMINAL")
        .count();
    let gated = std::process::Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .args([
            "analyze",
            path,
            "--format",
            "jsonl",
            "--fail-on",
            "non-terminal",
        ])
        .output()
        .unwrap();
    assert_eq!(gated.status.code(), Some(1));
    let err = String::from_utf8(gated.stderr).unwrap();
    assert!(
        err.contains(&format!("matched: {non_terminal} findings NON_TERMINAL")),
        "{err}"
    );
}
