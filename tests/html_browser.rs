//! The HTML report in a real browser: headless Chromium loads the page written for
//! lab captures of real SDK traffic (a cut stream, an unsafe replay, an MRTR round,
//! a legacy HTTP+SSE session, a resumed stream) and dumps the DOM after the page's
//! script ran. The script writes its own counts into `#selftest`; they must equal
//! what `--format json` says about the same capture, with no script error, and a
//! filter in the URL must narrow the rows. Screenshots land in
//! `target/html-report-*.png` for people to look at.
//!
//! Chromium is required: Debian's `chromium` package (`.ci/run` installs it). Set
//! `MCPSIFT_SKIP_BROWSER=1` to skip this test on a machine without it, or
//! `MCPSIFT_CHROMIUM` to name another binary.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// (name, capture, what its story must show on the timeline).
const SCENARIOS: &[(&str, &str)] = &[
    ("cut-stream", "lab/captures/sse_cut_ts/capture.pcap"),
    (
        "unsafe-replay",
        "lab/captures/no_response_replay_ts/capture.pcap",
    ),
    ("mrtr", "lab/captures/mrtr_input_required_py/capture.pcap"),
    ("legacy", "lab/captures/legacy_sse_ts/capture.pcap"),
    ("resumed", "lab/captures/sse_cut_resumed_ts/capture.pcap"),
];

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MCPSIFT_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome", "chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

fn out_dir() -> PathBuf {
    // target/tmp's parent: target/, where people look for the screenshots.
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.parent().unwrap_or(tmp).to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mcpsift(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run mcpsift");
    assert!(
        out.status.code().is_some_and(|c| c < 2),
        "mcpsift {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What one Chromium run printed: stdout (the DOM), and the page's console
/// messages, which Chromium logs to stderr as `…:CONSOLE…` lines.
struct Run {
    stdout: String,
    console: Vec<String>,
}

/// Runs Chromium headless with `args` and a fresh profile.
fn run_chromium(bin: &Path, args: &[String]) -> Run {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin)
        .args([
            "--headless=new",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--disable-extensions",
            "--hide-scrollbars",
            "--virtual-time-budget=2000",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    // A guard against a hung browser, not a timing check.
    let start = Instant::now();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            pipe.read_to_string(&mut s).ok();
            s
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            child.kill().ok();
            child.wait().ok();
            panic!("{} did not finish within 120 s", bin.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let console = stderr
        .join()
        .unwrap()
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    Run {
        stdout: stdout.join().unwrap(),
        console,
    }
}

/// Loads `url`, checks the page wrote nothing to its console (no error, no CSP
/// violation, no log), and returns its self-check.
fn load(bin: &Path, name: &str, url: String) -> Value {
    let run = run_chromium(bin, &["--dump-dom".into(), url]);
    assert!(
        run.console.is_empty(),
        "{name}: console messages: {:#?}",
        run.console
    );
    selftest(&run.stdout)
}

/// The page's self-check, read from the dumped DOM.
fn selftest(dom: &str) -> Value {
    let start = dom
        .find("<pre id=\"selftest\"")
        .unwrap_or_else(|| panic!("no #selftest in the DOM:\n{dom:.2000}"));
    let text = &dom[start..];
    let text = &text[text.find('>').unwrap() + 1..];
    let text = &text[..text.find("</pre>").unwrap()];
    let json = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("selftest {json:?}: {e}"))
}

fn file_url(path: &Path, hash: &str) -> String {
    let p = path.display().to_string().replace(' ', "%20");
    format!("file://{p}{hash}")
}

/// What the JSON output says the page must show.
struct Expected {
    calls: usize,
    findings: usize,
    /// Calls not folded away by default: not a plain success.
    attention: usize,
    cuts: usize,
    links: usize,
    mrtr_links: usize,
    resumes: usize,
    scopes: usize,
    outcomes: Vec<(String, usize)>,
    /// The first finding kind, and how many calls its findings name.
    finding: Option<(String, usize)>,
}

fn expected(json: &[u8]) -> Expected {
    let doc: Value = serde_json::from_slice(json).unwrap();
    let records = doc["records"].as_array().unwrap();
    let calls: Vec<&Value> = records.iter().filter(|r| r["type"] == "call").collect();
    let findings: Vec<&Value> = records.iter().filter(|r| r["type"] == "finding").collect();
    let in_finding = |c: &Value| {
        findings.iter().any(|f| {
            f["input"] == c["input"]
                && f["locations"]
                    .as_array()
                    .is_some_and(|l| l.contains(&c["location"]))
        })
    };
    let count = |p: &dyn Fn(&Value) -> bool| calls.iter().filter(|c| p(c)).count();
    let mut outcomes: Vec<(String, usize)> = Vec::new();
    for c in &calls {
        let o = c["outcome"].as_str().unwrap().to_owned();
        match outcomes.iter_mut().find(|(x, _)| *x == o) {
            Some((_, n)) => *n += 1,
            None => outcomes.push((o, 1)),
        }
    }
    let mut scopes: Vec<(&Value, &Value)> =
        calls.iter().map(|c| (&c["input"], &c["scope"])).collect();
    scopes.dedup();
    scopes.sort_by_key(|(i, s)| (i.to_string(), s.to_string()));
    scopes.dedup();
    let finding = findings.first().map(|f| {
        let kind = f["kind"].as_str().unwrap().to_owned();
        let named = count(&|c| {
            findings.iter().any(|g| {
                g["kind"] == kind.as_str()
                    && g["input"] == c["input"]
                    && g["locations"]
                        .as_array()
                        .is_some_and(|l| l.contains(&c["location"]))
            })
        });
        (kind, named)
    });
    Expected {
        finding,
        calls: calls.len(),
        findings: findings.len(),
        attention: count(&|c| {
            c["outcome"] != "TOOL_SUCCESS" || c["post_count"].as_u64() > Some(1) || in_finding(c)
        }),
        cuts: count(&|c| {
            matches!(
                c["outcome"].as_str(),
                Some("STREAM_INCOMPLETE" | "NO_RESPONSE")
            ) && c["end"] != "complete"
        }),
        links: count(&|c| c.get("previous_attempt").is_some()),
        mrtr_links: count(&|c| c.get("previous_attempt").is_some() && c["retry_origin"] == "mrtr"),
        resumes: count(&|c| c["retry_origin"] == "resumption"),
        scopes: scopes.len(),
        outcomes,
    }
}

fn n(v: &Value, key: &str) -> usize {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("selftest has no {key}: {v}")) as usize
}

#[test]
fn the_page_tells_each_lab_story_in_chromium() {
    let Some(bin) = chromium() else {
        if std::env::var_os("MCPSIFT_SKIP_BROWSER").is_some_and(|v| v == "1") {
            eprintln!("MCPSIFT_SKIP_BROWSER=1: the browser test of the HTML report was skipped");
            return;
        }
        panic!(
            "the HTML report's browser test needs Chromium: install it with \
             `apt-get update && apt-get install -y chromium` (Debian), or name a binary in \
             MCPSIFT_CHROMIUM; set MCPSIFT_SKIP_BROWSER=1 to skip this test"
        );
    };
    let dir = out_dir();
    let mut story = Vec::new();
    for (name, capture) in SCENARIOS {
        let page = dir.join(format!("html-report-{name}.html"));
        mcpsift(&[
            "analyze",
            capture,
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ]);
        let want = expected(&mcpsift(&["analyze", capture, "--format", "json"]));
        assert!(want.calls > 0, "{name}: the capture has calls");

        // As opened: successes folded away, every mark drawn, no script error.
        let got = load(&bin, name, file_url(&page, ""));
        assert_eq!(got["errors"], Value::Array(vec![]), "{name}: script errors");
        assert_eq!(
            n(&got, "calls"),
            want.calls,
            "{name}: calls in the data\n{got}"
        );
        assert_eq!(n(&got, "calls_total"), want.calls, "{name}: calls counted");
        assert_eq!(
            n(&got, "findings"),
            want.findings,
            "{name}: finding rows\n{got}"
        );
        assert_eq!(
            n(&got, "rendered"),
            want.attention,
            "{name}: rows shown by default\n{got}"
        );
        assert_eq!(
            n(&got, "details"),
            want.calls,
            "{name}: call details\n{got}"
        );
        assert_eq!(
            n(&got, "timelines"),
            want.scopes,
            "{name}: one timeline per scope\n{got}"
        );
        assert_eq!(n(&got, "cuts"), want.cuts, "{name}: cut marks\n{got}");
        assert_eq!(n(&got, "links"), want.links, "{name}: repeat links\n{got}");
        assert_eq!(
            n(&got, "mrtr_links"),
            want.mrtr_links,
            "{name}: MRTR links\n{got}"
        );
        assert_eq!(
            n(&got, "resumes"),
            want.resumes,
            "{name}: resumption legs\n{got}"
        );
        story.push((name, got.clone()));

        // Successful calls unfolded: every call has a row.
        let all = load(&bin, name, file_url(&page, "#ok=1"));
        assert_eq!(
            n(&all, "rendered"),
            want.calls,
            "{name}: #ok=1 shows every call\n{all}"
        );

        // A filter in the URL narrows the rows to that outcome.
        let (outcome, count) = want
            .outcomes
            .iter()
            .find(|(o, _)| o != "TOOL_SUCCESS")
            .or(want.outcomes.first())
            .unwrap();
        let hash = format!("#filter=outcome:{outcome}");
        let filtered = load(&bin, name, file_url(&page, &hash));
        assert_eq!(
            n(&filtered, "rendered"),
            *count,
            "{name}: {hash}\n{filtered}"
        );
        assert_eq!(
            filtered["errors"],
            Value::Array(vec![]),
            "{name}: script errors"
        );
        if want.outcomes.len() > 1 {
            assert!(
                n(&filtered, "rendered") < want.calls,
                "{name}: {hash} hides rows"
            );
        }

        // And a finding filter to the calls its findings name.
        if let Some((kind, named)) = &want.finding {
            let hash = format!("#filter=finding:{kind}");
            let got = load(&bin, name, file_url(&page, &hash));
            assert_eq!(n(&got, "rendered"), *named, "{name}: {hash}\n{got}");
        }

        let shot = dir.join(format!("html-report-{name}.png"));
        run_chromium(
            &bin,
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1280,900".into(),
                file_url(&page, ""),
            ],
        );
        let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("{}: {e}", shot.display()));
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 10_000,
            "{name}: a real screenshot"
        );
    }
    // Each scenario shows the mark its story is about (so the counts above are not
    // all zero by accident).
    let mark = |name: &str, key: &str| {
        let (_, got) = story.iter().find(|(n, _)| **n == name).unwrap();
        n(got, key)
    };
    assert!(mark("cut-stream", "cuts") >= 1);
    assert!(mark("unsafe-replay", "links") >= 1);
    assert!(mark("mrtr", "mrtr_links") >= 1);
    assert!(mark("resumed", "resumes") >= 1);
    assert!(
        mark("resumed", "leg_cuts") >= 1,
        "the resumed stream was cut first"
    );
}
