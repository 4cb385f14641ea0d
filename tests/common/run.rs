//! Running mcpsift from tests: the command line's `jsonl` records, an analysis with a
//! TLS key log, and the verdicts of an analysis in the form the lab compares.

use mcpsift::batch::analyse_reader;
use mcpsift::config::Config;
use mcpsift::correlate::Analysis;
use mcpsift::ingest::tls::KeyLog;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

/// `mcpsift analyze PATH --format jsonl`: its records, its stderr, its exit code.
pub fn cli_jsonl(path: &Path) -> (Vec<Value>, String, Option<i32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .args(["analyze", path.to_str().unwrap(), "--format", "jsonl"])
        .output()
        .unwrap();
    let records = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        records,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

/// The default configuration with the secrets of `keylog`, which must all parse.
pub fn config_with_keylog(keylog: Option<&Path>) -> Config {
    let mut keys = KeyLog::default();
    if let Some(k) = keylog {
        let parsed = keys.load(k).expect("key log");
        assert!(parsed.bad.is_empty(), "{}: {:?}", k.display(), parsed.bad);
    }
    Config {
        tls_keys: Arc::new(keys),
        ..Config::default()
    }
}

/// Analyses the file at `path`.
pub fn analyse_path(path: &Path, config: &Config) -> Analysis {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    analyse_reader(file, config)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .1
}

/// Each call's tool, id and outcome, in order.
pub fn call_verdicts(a: &Analysis) -> Vec<(String, String, String)> {
    a.calls
        .iter()
        .map(|c| {
            (
                c.tool.as_deref().unwrap_or_default().to_owned(),
                c.id.to_string(),
                c.verdict.outcome.as_str().to_owned(),
            )
        })
        .collect()
}

/// `a` has no problem and no notice, and one finding of a stray response
/// (`ID_MISMATCH`), which names id `id`; it may have findings of other kinds.
pub fn quiet_but_one_stray(a: &Analysis, id: &str) {
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert!(a.notices.is_empty(), "{:?}", a.notices);
    let strays: Vec<_> = a
        .findings
        .iter()
        .filter(|f| f.kind == mcpsift::model::FindingKind::IdMismatch)
        .collect();
    assert_eq!(strays.len(), 1, "{:?}", a.findings);
    assert!(
        strays[0].ids.iter().any(|i| i.to_string() == id),
        "{:?}",
        strays[0]
    );
}
