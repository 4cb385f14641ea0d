//! Snapshot tests of the human formats on the bundled samples, run through the
//! library with fixed settings (width 100, no colour) so they do not depend on the
//! terminal. Review changes with `cargo insta review`; CI (CI=true) fails on any
//! difference.

use mcpsift::batch::{self, Input, Report};
use mcpsift::config::Config;
use mcpsift::model::Timestamp;
use mcpsift::report::{self, HumanOptions, OutputFormat, Redactor, RunInfo};
use std::path::PathBuf;

const SAMPLES: &[&str] = &[
    "stateless-2026",
    "stdio-tee",
    "stdio-transcript",
    "streamable-http",
];

/// The sample as the CLI would read it, with a relative path so snapshots do not
/// depend on where the repository is checked out.
fn analyse(name: &str) -> Report {
    let path = PathBuf::from(format!("samples/{name}.jsonl"));
    let mut report = batch::run(&[Input::Path(path)], &Config::default());
    Redactor::default().report(&mut report);
    report
}

fn render(report: &Report, format: OutputFormat, all: bool) -> String {
    let opts = HumanOptions {
        all,
        width: Some(100),
        color: false,
        // A fixed header, so the snapshot does not change with the clock.
        run: Some(RunInfo {
            command: "mcpsift analyze SAMPLE --format markdown".to_owned(),
            generated: Some(Timestamp(0)),
        }),
        ..HumanOptions::default()
    };
    let mut out = Vec::new();
    report::write(report, format, &opts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn table_snapshots() {
    for name in SAMPLES {
        let text = render(&analyse(name), OutputFormat::Table, false);
        insta::assert_snapshot!(format!("table_{name}"), text);
    }
}

#[test]
fn markdown_snapshots() {
    for name in SAMPLES {
        let text = render(&analyse(name), OutputFormat::Markdown, false);
        insta::assert_snapshot!(format!("markdown_{name}"), text);
    }
}

#[test]
fn table_with_all_lists_successes() {
    let text = render(&analyse("stdio-transcript"), OutputFormat::Table, true);
    insta::assert_snapshot!("table_all_stdio-transcript", text);
}

#[test]
fn table_wraps_to_the_width_given() {
    let report = analyse("streamable-http");
    for width in [60u16, 100, 160] {
        let opts = HumanOptions {
            all: false,
            width: Some(width),
            color: false,
            ..HumanOptions::default()
        };
        let mut out = Vec::new();
        report::write(&report, OutputFormat::Table, &opts, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for line in text
            .lines()
            .filter(|l| l.starts_with(['┌', '│', '╞', '├', '└']))
        {
            assert!(
                line.chars().count() <= width as usize,
                "width {width}: {line}"
            );
        }
    }
}

#[test]
fn markdown_tables_keep_their_columns() {
    // Every row of a Markdown table has as many unescaped `|` as its header.
    for name in SAMPLES {
        let md = render(&analyse(name), OutputFormat::Markdown, true);
        let mut columns = None;
        for line in md.lines() {
            if !line.starts_with('|') {
                columns = None;
                continue;
            }
            let bars = line.len() - line.replace('|', "").len() - line.matches("\\|").count();
            match columns {
                None => columns = Some(bars),
                Some(n) => assert_eq!(n, bars, "{name}: {line}"),
            }
        }
    }
}

#[test]
fn colour_only_when_asked() {
    let report = analyse("streamable-http");
    let mut opts = HumanOptions {
        all: false,
        width: Some(100),
        color: true,
        ..HumanOptions::default()
    };
    let mut out = Vec::new();
    report::write(&report, OutputFormat::Table, &opts, &mut out).unwrap();
    assert!(String::from_utf8(out).unwrap().contains("\u{1b}["));
    opts.color = false;
    let mut out = Vec::new();
    report::write(&report, OutputFormat::Table, &opts, &mut out).unwrap();
    assert!(!String::from_utf8(out).unwrap().contains('\u{1b}'));
}

fn render_at(report: &Report, width: u16) -> String {
    let opts = HumanOptions {
        all: false,
        width: Some(width),
        color: false,
        ..HumanOptions::default()
    };
    let mut out = Vec::new();
    report::write(report, OutputFormat::Table, &opts, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// A capture (frames and times) and the synthetic session with every outcome.
fn wide_and_narrow_inputs() -> Report {
    let paths = [
        "samples/unsafe-replay.pcapng",
        "samples/streamable-http.jsonl",
    ];
    let inputs: Vec<Input> = paths.iter().map(|p| Input::Path(p.into())).collect();
    let mut report = batch::run(&inputs, &Config::default());
    Redactor::default().report(&mut report);
    report
}

#[test]
fn table_at_80_and_120_columns() {
    let report = wide_and_narrow_inputs();
    insta::assert_snapshot!("table_width_80", render_at(&report, 80));
    insta::assert_snapshot!("table_width_120", render_at(&report, 120));
}

#[test]
fn a_narrow_table_never_splits_an_identifier() {
    let report = wide_and_narrow_inputs();
    for width in [60u16, 80, 100, 120] {
        let text = render_at(&report, width);
        let words: Vec<&str> = text.split_whitespace().collect();
        for ir in &report.inputs {
            for c in &ir.analysis.calls {
                if c.verdict.outcome.is_success() && c.post_count < 2 {
                    continue;
                }
                for name in [c.verdict.outcome.as_str(), c.tool.as_deref().unwrap()] {
                    assert!(
                        words.contains(&name) || text.contains(&format!("{name} ")),
                        "width {width}: {name} is split or missing:\n{text}"
                    );
                }
            }
        }
        // Every line fits, unless it is one word too long to break.
        for line in text.lines().filter(|l| !l.contains(" tools/call")) {
            assert!(
                line.chars().count() <= width as usize || !line.trim().contains(' '),
                "width {width}: {line}"
            );
        }
    }
}

#[test]
fn the_time_column_appears_only_when_the_input_has_times() {
    let timed = render_at(&wide_and_narrow_inputs(), 160);
    assert!(timed.contains("┆ time "), "{timed}");
    assert!(timed.contains("17:30:41.344"), "{timed}");
    // A bare `tee` of stdio records no times.
    let untimed = render_at(&analyse("stdio-tee"), 160);
    assert!(!untimed.contains("┆ time "), "{untimed}");
}

#[test]
fn markdown_explains_in_place_and_keeps_internal_words_out() {
    for name in SAMPLES {
        let md = render(&analyse(name), OutputFormat::Markdown, true);
        assert!(md.contains("- **Tool:** mcpsift "), "{md}");
        assert!(
            md.contains("- **Generated:** 1970-01-01T00:00:00.000Z"),
            "{md}"
        );
        // The ticket's reader has no mcpsift to run.
        assert!(!md.contains("mcpsift explain"), "{name}: {md}");
        for word in [
            "after\\_refusal",
            "after\\_failure",
            "retry origin",
            "annotated or by default",
        ] {
            assert!(!md.contains(word), "{name}: {word} in {md}");
        }
        if md.contains("### ") {
            assert!(md.contains("- **What it means:** "), "{name}: {md}");
        }
    }
}

#[test]
fn a_repeat_under_one_id_names_the_id_once() {
    // The lab's Python client re-sends delete_file under the same id 3.
    let path = PathBuf::from("lab/captures/no_response_replay_py/capture.har");
    let mut report = batch::run(&[Input::Path(path)], &Config::default());
    Redactor::default().report(&mut report);
    let md = render(&report, OutputFormat::Markdown, false);
    let row = md
        .lines()
        .find(|l| l.starts_with("| HIGH | UNSAFE\\_REPLAY"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.contains("| ` 3 ` |"), "{row}");
    // Entries count from 1, as lines and frames do.
    assert!(row.contains("| entry 3, entry 6 |"), "{row}");
}

#[test]
fn max_chars_leaves_out_whole_sections_and_says_which() {
    let report = analyse("streamable-http");
    let whole = render(&report, OutputFormat::Markdown, false);
    let sections = whole.matches("\n### ").count();
    assert!(sections > 5);
    for max in [whole.chars().count() / 2, 4_000, 100] {
        let opts = HumanOptions {
            max_chars: Some(max),
            ..HumanOptions::default()
        };
        let mut out = Vec::new();
        report::write(&report, OutputFormat::Markdown, &opts, &mut out).unwrap();
        let md = String::from_utf8(out).unwrap();
        assert!(md.contains("**Left out** to stay under"), "{md}");
        assert!(md.starts_with("# mcpsift report\n\n**Verdict:**"), "{md}");
        if max > 1_000 {
            assert!(md.chars().count() <= max, "{max}: {}", md.chars().count());
        }
        // Every call section that is there is there whole (its excerpt or evidence).
        for part in md.split("\n### ").skip(1) {
            assert!(part.contains("**Evidence:**"), "a cut section: {part}");
        }
    }
    // Under the cap: nothing is left out, nothing is said.
    let opts = HumanOptions {
        max_chars: Some(mcpsift::report::GITHUB_MAX_CHARS),
        ..HumanOptions::default()
    };
    let mut out = Vec::new();
    report::write(&report, OutputFormat::Markdown, &opts, &mut out).unwrap();
    let md = String::from_utf8(out).unwrap();
    assert!(!md.contains("Left out"));
    assert_eq!(md.matches("\n### ").count(), sections);
}
