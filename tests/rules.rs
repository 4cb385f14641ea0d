//! One fixture per finding rule (`tests/fixtures/rules/<name>.jsonl`, made by
//! `make_rule_fixtures.py`), its expected calls and findings a snapshot beside the
//! others in `tests/snapshots/`; and the rules' documentation checked against
//! `docs/findings.md` and `mcpsift explain` in both directions.

use mcpsift::batch::analyse_reader;
use mcpsift::config::Config;
use mcpsift::correlate::rules::{self, RULES};
use mcpsift::correlate::Analysis;
use mcpsift::explain::{explain, render, Subject};
use mcpsift::model::{FindingKind, Severity};
use std::fmt::Write as _;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(name: &str) -> Analysis {
    let path = root().join(format!("tests/fixtures/rules/{name}.jsonl"));
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    analyse_reader(file, &Config::default())
        .expect("readable")
        .1
}

/// Calls and findings as a reader would check them by hand.
fn render_analysis(a: &Analysis) -> String {
    let mut s = String::from("calls:\n");
    for c in &a.calls {
        let _ = writeln!(
            s,
            "  {} {} {} attempt {} ({})",
            c.id,
            c.tool.as_deref().unwrap_or("?"),
            c.verdict.outcome,
            c.post_count,
            c.retry_origin.as_str()
        );
    }
    s.push_str("findings:\n");
    for f in &a.findings {
        let ids: Vec<String> = f.ids.iter().map(|i| i.to_string()).collect();
        let _ = writeln!(
            s,
            "  {} {} [{}] {}",
            f.severity,
            f.kind,
            ids.join(", "),
            f.detail
        );
    }
    for p in &a.problems {
        let _ = writeln!(s, "problem: {:?}: {}", p.locator, p.message);
    }
    s
}

fn fixture_name(kind: FindingKind) -> String {
    kind.as_str().to_ascii_lowercase()
}

#[test]
fn every_rule_has_a_fixture_that_raises_it_and_matches_its_snapshot() {
    for rule in RULES {
        let name = fixture_name(rule.doc.kind);
        let a = run(&name);
        assert!(
            a.findings
                .iter()
                .any(|f| f.kind == rule.doc.kind && f.severity > Severity::Info),
            "{name}: the fixture does not raise {}",
            rule.doc.kind
        );
        insta::assert_snapshot!(name.clone(), render_analysis(&a));
    }
}

#[test]
fn a_lone_outstanding_stdio_call_takes_the_only_reply_it_got() {
    let a = run("stdio_attribution");
    let outcomes: Vec<&str> = a.calls.iter().map(|c| c.verdict.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        ["MALFORMED_JSON", "INVALID_ENVELOPE", "TOOL_SUCCESS"]
    );
    for c in &a.calls[..2] {
        assert!(
            c.verdict
                .evidence
                .notes
                .iter()
                .any(|n| n.starts_with("attributed")),
            "{:?}",
            c.verdict.evidence.notes
        );
    }
    let kinds: Vec<&str> = a.findings.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, ["ID_MISMATCH"]);
    // Noise before a real response is the input's problem, not the call's verdict.
    assert_eq!(a.problems.len(), 1, "{:?}", a.problems);
    insta::assert_snapshot!("stdio_attribution", render_analysis(&a));
}

#[test]
fn id_reuse_is_reported_in_a_2024_stdio_session_after_the_response_too() {
    let a = run("id_reused");
    let reused: Vec<String> = a
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::IdReused)
        .map(|f| f.ids[0].to_string())
        .collect();
    // 11: other arguments; 12: the same call later; 13: while in flight. 21 is a
    // 2026-07-28 process, where an answered id may be used again.
    assert_eq!(reused, ["11", "12", "13"]);
}

/// `docs/findings.md` holds the rules' table between two markers; the test keeps it
/// generated from the rules (run with `UPDATE_DOCS=1` to rewrite it).
#[test]
fn the_findings_doc_table_is_generated_from_the_rules() {
    let path = root().join("docs/findings.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (start, end) = ("<!-- rules:start -->\n", "<!-- rules:end -->");
    let a = doc.find(start).expect("start marker") + start.len();
    let b = doc.find(end).expect("end marker");
    let want = rules::markdown_table();
    if doc[a..b] != want {
        if std::env::var_os("UPDATE_DOCS").is_some() {
            let new = format!("{}{}{}", &doc[..a], want, &doc[b..]);
            std::fs::write(&path, new).unwrap();
        } else {
            panic!(
                "docs/findings.md's table differs from the rules; run with UPDATE_DOCS=1\n{want}"
            );
        }
    }
    // Both directions: every kind the docs name in backticks is a rule.
    for word in doc.split('`') {
        if word.len() > 3
            && word.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            && word.contains('_')
        {
            let known = FindingKind::parse(word).is_some()
                || mcpsift::model::Outcome::parse(word).is_some();
            assert!(
                known,
                "docs/findings.md names {word}, which is no finding or outcome"
            );
        }
    }
}

#[test]
fn explain_prints_each_rules_own_documentation() {
    for rule in RULES {
        let e = explain(Subject::Finding(rule.doc.kind));
        assert_eq!(e.meaning, rule.doc.meaning);
        assert_eq!(e.rule, rule.doc.spec);
        // Wrapped for a terminal: compare with the line breaks taken out.
        let text = render(&e).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains(rule.doc.kind.as_str()), "{text}");
        let severity = rule.doc.severity.replace('`', "");
        assert!(
            text.contains(severity.split(';').next().unwrap().trim()),
            "{text}"
        );
    }
}
