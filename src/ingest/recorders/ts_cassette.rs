//! mcp-cassette (TypeScript, package `mcp-cassette` 0.4, `cassetteVersion` 1 and 2): an
//! append-only JSONL file, a header line `{"type":"header", cassetteVersion, recorder,
//! startedAt, transport, …}` and then entries:
//!
//! - `{"type":"frame","t":ms,"dir":"c2s"|"s2c","frame":{JSON-RPC},"http"?:{status}}`;
//! - `{"type":"raw","t":ms,"dir":…,"data":"a line that was not JSON"}`;
//! - `{"type":"chunks","t":ms,"dir":"s2c","id"?,"via"?,"chunks":[{"t":ms,"frame":{…}}]}`,
//!   one SSE answer frame by frame.
//!
//! A recording proxy writes it (evidence: wire); `t` counts milliseconds from
//! `startedAt`. Every frame, chunk and raw line becomes a transcript message; the
//! header is counted as nothing. The header may be missing when the recording died
//! before it reached disk: the frames are still read, without times.

use super::{offset, Tally};
use crate::config::Limits;
use crate::ingest::jsonl::read_line_capped;
use crate::ingest::{IngestError, Problem};
use crate::model::{Direction, Exchange, Locator, Payload, StdioMessage, Timestamp};
use serde_json::{Map, Value};
use std::io::BufRead;

/// The first line (whitespace dropped) is this format's header or one of its entries.
pub fn looks_like(line: &[u8]) -> bool {
    use super::contains;
    (line.starts_with(b"{\"type\":\"header\"")
        && (contains(line, "\"cassetteVersion\":")
            || contains(line, "\"recorder\":\"mcp-cassette")))
        || (line.starts_with(b"{\"type\":\"frame\",\"t\":") && contains(line, "\"dir\":"))
}

pub fn read(
    reader: &mut dyn BufRead,
    limits: &Limits,
    tally: &mut Tally,
) -> Result<(), IngestError> {
    read_lines(reader, limits, tally, |entry, base| {
        match entry_of(entry, *base)? {
            Entry::Header(t) => {
                *base = t;
                Ok(None)
            }
            Entry::Messages(ms) => Ok(Some(ms)),
        }
    })
}

/// One JSON object per line, each turned into messages by `entry` (`None`: a header,
/// which is no record; it may set the time the offsets count from).
pub(super) fn read_lines(
    reader: &mut dyn BufRead,
    limits: &Limits,
    tally: &mut Tally,
    mut entry: impl FnMut(
        &Map<String, Value>,
        &mut Option<Timestamp>,
    ) -> Result<Option<Vec<StdioMessage>>, String>,
) -> Result<(), IngestError> {
    let mut reader = reader;
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let mut base: Option<Timestamp> = None;
    while let Some((total, _)) = read_line_capped(&mut reader, &mut buf, limits.max_record_bytes)? {
        line_no += 1;
        let locator = Locator::Line { line: line_no };
        if total > buf.len() as u64 {
            tally.problem(Problem::cap(
                locator,
                format!(
                    "line is {total} bytes, over the {}-byte record limit; skipped (raise --max-record-bytes to read it)",
                    limits.max_record_bytes
                ),
            ));
            buf.clear();
            continue;
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            buf.clear();
            continue;
        }
        let parsed = serde_json::from_slice::<Value>(&buf);
        buf.clear();
        let obj = match parsed {
            Ok(Value::Object(o)) => o,
            Ok(_) => {
                tally.problem(Problem::new(
                    locator,
                    "cassette line is not a JSON object".to_owned(),
                ));
                continue;
            }
            Err(e) => {
                tally.problem(Problem::new(
                    locator,
                    format!(
                        "cassette line is not JSON: {}",
                        crate::text::describe_json_error(&e)
                    ),
                ));
                continue;
            }
        };
        match entry(&obj, &mut base) {
            Ok(None) => {}
            Ok(Some(ms)) => {
                tally.used += 1;
                for m in ms {
                    tally.exchange(Exchange {
                        locator: locator.clone(),
                        payload: Payload::Stdio(m),
                    });
                }
            }
            Err(message) => tally.problem(Problem::new(locator, message)),
        }
    }
    Ok(())
}

enum Entry {
    Header(Option<Timestamp>),
    Messages(Vec<StdioMessage>),
}

fn entry_of(o: &Map<String, Value>, base: Option<Timestamp>) -> Result<Entry, String> {
    let ty = o.get("type").and_then(Value::as_str).unwrap_or_default();
    if ty == "header" {
        return Ok(Entry::Header(
            o.get("startedAt")
                .and_then(Value::as_str)
                .and_then(Timestamp::parse),
        ));
    }
    let dir = match o.get("dir").and_then(Value::as_str) {
        Some("c2s") => Direction::ClientToServer,
        Some("s2c") => Direction::ServerToClient,
        _ => return Err(format!("{ty:?} entry without \"dir\": \"c2s\" or \"s2c\"")),
    };
    let at = |v: &Map<String, Value>| offset(base, v.get("t").and_then(Value::as_f64));
    let msg = |json: String, ts| StdioMessage {
        dir: Some(dir),
        json,
        ts,
        checked: false,
        logged_by_client: false,
    };
    match ty {
        "frame" => match o.get("frame") {
            Some(f @ Value::Object(_)) => Ok(Entry::Messages(vec![msg(f.to_string(), at(o))])),
            _ => Err("frame entry without a \"frame\" object".to_owned()),
        },
        "raw" => match o.get("data") {
            Some(Value::String(s)) => Ok(Entry::Messages(vec![msg(s.clone(), at(o))])),
            _ => Err("raw entry without a \"data\" string".to_owned()),
        },
        "chunks" => {
            let chunks = o
                .get("chunks")
                .and_then(Value::as_array)
                .ok_or("chunks entry without a \"chunks\" array")?;
            let mut out = Vec::with_capacity(chunks.len());
            for (i, c) in chunks.iter().enumerate() {
                match c.get("frame") {
                    Some(f @ Value::Object(_)) => {
                        let ts = c.as_object().and_then(at).or_else(|| at(o));
                        out.push(msg(f.to_string(), ts));
                    }
                    _ => return Err(format!("chunk {} has no \"frame\" object", i + 1)),
                }
            }
            Ok(Entry::Messages(out))
        }
        other => Err(format!(
            "entry of unknown type {other:?} (expected header, frame, raw or chunks)"
        )),
    }
}
