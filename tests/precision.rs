//! Findings people can trust on long, healthy traffic. The long sessions
//! (`tests/fixtures/long/`, made by `make_long_sessions.py`) are what archives are
//! mostly made of: hundreds of calls, the same read-only tools re-called with the
//! same arguments minutes apart, other calls in between, and a few planted
//! anomalies. Only the planted ones may raise anything above INFO.

use mcpsift::batch::analyse_reader;
use mcpsift::config::Config;
use mcpsift::correlate::{Analysis, RetryOrigin};
use mcpsift::model::Severity;
use proptest::prelude::*;
use std::path::Path;

fn run_file(name: &str) -> Analysis {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/long")
        .join(name);
    let file = std::fs::File::open(&path).unwrap();
    let (_, a) = analyse_reader(file, &Config::default()).unwrap();
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    a
}

/// (kind, severity, ids) of the findings above INFO.
fn alarms(a: &Analysis) -> Vec<(String, String, String)> {
    a.findings
        .iter()
        .filter(|f| f.severity > Severity::Info)
        .map(|f| {
            let ids: Vec<String> = f.ids.iter().map(|i| i.to_string()).collect();
            (f.kind.to_string(), f.severity.to_string(), ids.join(","))
        })
        .collect()
}

fn reinvocations(a: &Analysis) -> usize {
    a.calls
        .iter()
        .filter(|c| c.retry_origin == RetryOrigin::Reinvocation)
        .count()
}

fn t(kind: &str, sev: &str, ids: &str) -> (String, String, String) {
    (kind.to_owned(), sev.to_owned(), ids.to_owned())
}

#[test]
fn a_long_stdio_agent_session_reports_only_its_planted_double_dispatch_and_retry() {
    let a = run_file("stdio-agent.jsonl");
    assert_eq!(a.calls.len(), 302);
    assert_eq!(
        alarms(&a),
        [
            // write_file sent twice 40 ms apart, the second before the first's answer.
            t("UNEXPLAINED_REPEAT", "HIGH", "102,103"),
            // run_tests re-sent 600 ms after -32603: it may have run.
            t("UNSAFE_REPLAY", "HIGH", "203,204"),
        ]
    );
    assert!(reinvocations(&a) > 200, "{}", reinvocations(&a));
}

#[test]
fn a_long_http_session_reports_only_its_planted_retry_after_a_cut_stream() {
    let a = run_file("http-session.jsonl");
    assert_eq!(a.calls.len(), 302);
    assert_eq!(
        alarms(&a),
        [
            t("NON_TERMINAL", "MEDIUM", "152"),
            t("UNSAFE_REPLAY", "HIGH", "152,153"),
        ]
    );
    assert!(reinvocations(&a) > 200, "{}", reinvocations(&a));
}

#[test]
fn a_two_hour_claude_code_session_of_re_reads_reports_nothing() {
    let a = run_file("claude-code-long.jsonl");
    assert_eq!(a.calls.len(), 150);
    assert_eq!(alarms(&a), []);
    assert!(reinvocations(&a) > 100, "{}", reinvocations(&a));
}

/// A stdio transcript: `read {"p":"README"}` at 0, then `others` calls of other tools
/// or arguments (at the given offsets), then the same read again `gap_s` later.
fn session(others: &[(u8, u32)], gap_s: u32) -> String {
    let mut lines = vec![
        r#"{"ts":"2026-11-30T09:00:00.000Z","dir":"c2s","msg":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"p","version":"1"}}}}"#.to_owned(),
        r#"{"ts":"2026-11-30T09:00:00.010Z","dir":"s2c","msg":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}}"#.to_owned(),
    ];
    let ts = |ms: u64| {
        let s = ms / 1000;
        format!(
            "2026-11-30T{:02}:{:02}:{:02}.{:03}Z",
            9 + s / 3600,
            (s / 60) % 60,
            s % 60,
            ms % 1000
        )
    };
    let mut push = |id: usize, ms: u64, tool: &str, arg: String| {
        lines.push(format!(
            r#"{{"ts":"{}","dir":"c2s","msg":{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"p":"{arg}"}}}}}}}}"#,
            ts(ms)
        ));
        lines.push(format!(
            r#"{{"ts":"{}","dir":"s2c","msg":{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}}}"#,
            ts(ms + 50)
        ));
    };
    push(1, 1_000, "read", "README".into());
    let end = 1_000 + u64::from(gap_s) * 1000;
    let mut offsets: Vec<(u8, u64)> = others
        .iter()
        .map(|&(k, at)| (k, 1_200 + u64::from(at) % (end - 1_400)))
        .collect();
    offsets.sort_by_key(|o| o.1);
    for (i, (k, ms)) in offsets.iter().enumerate() {
        // Other tools, or the same tool with other arguments; each one distinct, or
        // two of them back to back would be a genuine double dispatch.
        let (tool, arg) = match k % 3 {
            0 => ("list", format!("dir{k}-{i}")),
            1 => ("search", format!("q{k}-{i}")),
            _ => ("read", format!("file{k}-{i}.md")),
        };
        push(2 + i, *ms, tool, arg);
    }
    push(2 + offsets.len(), end, "read", "README".into());
    lines.join("\n") + "\n"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Inserting unrelated successful calls between two identical successful calls
    /// minutes apart never creates a finding above INFO.
    #[test]
    fn unrelated_calls_between_two_identical_successes_minutes_apart_raise_nothing(
        others in proptest::collection::vec((any::<u8>(), any::<u32>()), 0..40),
        gap_s in 120u32..3600,
    ) {
        let text = session(&others, gap_s);
        let (_, a) = analyse_reader(text.as_bytes(), &Config::default()).unwrap();
        prop_assert!(a.problems.is_empty(), "{:?}", a.problems);
        prop_assert_eq!(a.calls.len(), others.len() + 2);
        prop_assert_eq!(alarms(&a), Vec::<(String, String, String)>::new());
        let last = a.calls.iter().max_by_key(|c| c.started_at).unwrap();
        prop_assert_eq!(last.retry_origin, RetryOrigin::Reinvocation);
    }
}
