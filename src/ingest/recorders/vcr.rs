//! mcp-vcr transcripts (Python package `mcp-vcr`, transcript `version: 1`): YAML written by a
//! stdio proxy, `meta: {version, recorded_at, session_id, server_command, …}` and
//! `messages: [{t, dir: c2s|s2c, payload: {JSON-RPC}}]`. Quirks:
//!
//! - keys are sorted (`dir`, `payload`, `t`) and the file is appended message by
//!   message, so a recording cut short ends mid-list: a YAML error names its line;
//! - `t` counts milliseconds from `meta.recorded_at`;
//! - normalized snapshots replace ids with strings such as `NORM_ID_1`, which pair
//!   as well as numbers do.
//!
//! Parsed with `serde_yaml_ng` (alias expansion and nesting are bounded by the crate)
//! after the whole-document size cap. mcp-vcr's `--format ndjson` writes the same
//! records as JSON lines, a `{"_type":"meta", …}` line first; read line by line.

use super::{offset, shallow, Kind, Tally};
use crate::ingest::IngestError;
use crate::model::{Direction, StdioMessage, Timestamp};
use serde_json::Value;

/// A top-level `messages:` key and a `dir: c2s|s2c` item in the first lines.
pub fn looks_like(head: &str) -> bool {
    let mut messages = false;
    let mut dir = false;
    for line in head.lines().take(400) {
        if line.trim_end() == "messages:" {
            messages = true;
        }
        let item = line.trim_start().trim_start_matches("- ").trim();
        if item == "dir: c2s" || item == "dir: s2c" {
            dir = true;
        }
    }
    messages && (dir || head.lines().any(|l| l.trim_end() == "meta:"))
}

/// The first line (whitespace dropped) is an NDJSON transcript's meta line.
pub fn looks_like_ndjson(line: &[u8]) -> bool {
    line.starts_with(b"{\"_type\":\"meta\"")
        && (super::contains(line, "\"server_command\":")
            || super::contains(line, "\"session_id\":"))
}

pub fn read_ndjson(
    reader: &mut dyn std::io::BufRead,
    limits: &crate::config::Limits,
    tally: &mut Tally,
) -> Result<(), IngestError> {
    let wanted = &["_type", "recorded_at", "dir", "payload", "t"];
    super::ts_cassette::read_lines(reader, limits, tally, wanted, |o, base| {
        if o.str("_type").as_deref() == Some("meta") {
            *base = o.str("recorded_at").as_deref().and_then(Timestamp::parse);
            return Ok(None);
        }
        let dir = direction(o.str("dir").as_deref())?;
        let payload = o
            .get("payload")
            .filter(|p| shallow::is_object(p))
            .ok_or("message without a \"payload\" mapping")?;
        Ok(Some(vec![StdioMessage {
            dir: Some(dir),
            json: shallow::compact(payload),
            ts: offset(*base, o.f64("t")),
            checked: false,
            logged_by_client: false,
        }]))
    })
}

/// A message's `dir`.
fn direction(dir: Option<&str>) -> Result<Direction, String> {
    match dir {
        Some("c2s") => Ok(Direction::ClientToServer),
        Some("s2c") => Ok(Direction::ServerToClient),
        _ => Err("message without \"dir\": c2s or s2c".to_owned()),
    }
}

pub fn read(doc: &[u8], tally: &mut Tally) -> Result<(), IngestError> {
    let root: Value = serde_yaml_ng::from_slice(doc)
        .map_err(|e| IngestError::Malformed(format!("{}: YAML error: {e}", Kind::Vcr.name())))?;
    let messages = match root.get("messages") {
        Some(Value::Array(a)) => a.as_slice(),
        // `messages:` written and nothing after it: a recording with no message yet.
        Some(Value::Null) => &[],
        _ => {
            return Err(IngestError::Malformed(
                "an mcp-vcr transcript whose \"messages\" is not a list".to_owned(),
            ))
        }
    };
    let base = root
        .get("meta")
        .and_then(|m| m.get("recorded_at"))
        .and_then(Value::as_str)
        .and_then(Timestamp::parse);
    tally.messages(messages, base, message);
    Ok(())
}

fn message(m: &Value, base: Option<Timestamp>) -> Result<StdioMessage, String> {
    let dir = direction(m.get("dir").and_then(Value::as_str))?;
    let payload = m
        .get("payload")
        .filter(|p| p.is_object())
        .ok_or("message without a \"payload\" mapping")?;
    Ok(StdioMessage {
        dir: Some(dir),
        json: payload.to_string(),
        ts: offset(base, m.get("t").and_then(Value::as_f64)),
        checked: false,
        logged_by_client: false,
    })
}
