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
//! Read as YAML events (`yaml`), a message at a time, after the whole-document size
//! cap. mcp-vcr's `--format ndjson` writes the same
//! records as JSON lines, a `{"_type":"meta", …}` line first; read line by line.

mod yaml;

use super::{offset, recorded, shallow, Kind, Tally};
use crate::ingest::{IngestError, Problem};
use crate::model::{Direction, Locator, StdioMessage, Timestamp};

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
        Ok(Some(vec![stamp(
            (dir, shallow::compact(payload), o.f64("t")),
            *base,
        )]))
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

/// A YAML transcript, read as the parser's events come: each message's payload is
/// written out as JSON text as it is read, and nothing else is held (a whole-document
/// tree cost 110 times the file: a dense 30 MB transcript held 3.2 GB). A recording
/// cut short (mcp-vcr appends message by message) keeps the messages before the cut,
/// and the cut is a problem at its line.
pub fn read(doc: &[u8], max_message: usize, tally: &mut Tally) -> Result<(), IngestError> {
    let text = std::str::from_utf8(doc).map_err(|e| {
        IngestError::Malformed(format!("{}: not UTF-8 text ({e})", Kind::Vcr.name()))
    })?;
    let mut walk = yaml::Walk::new(text, max_message);
    let mut pending = Vec::new();
    let mut base = None;
    let mut meta_read = false;
    let mut entry = 0;
    let walked = walk.transcript(|item| match item {
        yaml::Item::RecordedAt(t) => {
            base = t.as_deref().and_then(Timestamp::parse);
            meta_read = true;
            // Messages written before `meta` (keys sorted) waited for its time.
            for (entry, m) in pending.drain(..) {
                tally.message(entry, Ok(stamp(m, base)));
            }
        }
        yaml::Item::Message(m) => {
            entry += 1;
            // A message that cannot be read is said at once: only those read wait.
            match readable(m) {
                Err(why) => tally.message(entry, Err(why)),
                Ok(m) if meta_read => tally.message(entry, Ok(stamp(m, base))),
                Ok(m) => pending.push((entry, m)),
            }
        }
    });
    for (entry, m) in pending {
        tally.message(entry, Ok(stamp(m, base)));
    }
    match walked {
        Ok(()) => Ok(()),
        Err(yaml::Stop::Shape(why)) => Err(IngestError::Malformed(format!(
            "an mcp-vcr transcript whose {why}"
        ))),
        Err(yaml::Stop::Yaml(e)) if tally.used > 0 => {
            tally.problem(Problem::new(
                Locator::Line {
                    line: e.marker().line() as u64,
                },
                format!(
                    "YAML error: {} at column {}; the messages before it were read (a recording cut short?)",
                    e.info(),
                    e.marker().col() + 1
                ),
            ));
            Ok(())
        }
        Err(yaml::Stop::Yaml(e)) => Err(IngestError::Malformed(format!(
            "{}: YAML error: {e}",
            Kind::Vcr.name()
        ))),
    }
}

/// A message's direction, its payload as JSON and its `t`, or why it cannot be read.
type Readable = (Direction, String, Option<f64>);

fn readable(m: Result<yaml::Message, String>) -> Result<Readable, String> {
    let m = m?;
    let dir = direction(m.dir.as_deref())?;
    let json = m.payload.ok_or("message without a \"payload\" mapping")??;
    Ok((dir, json, m.t))
}

/// A message read, its time counted from the recording's start `base`.
fn stamp((dir, json, t): Readable, base: Option<Timestamp>) -> StdioMessage {
    recorded(dir, json, offset(base, t))
}
