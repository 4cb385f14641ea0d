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

use super::shallow::{self, Object};
use super::{offset, recorded, Tally};
use crate::config::Limits;
use crate::ingest::jsonl::read_line_capped;
use crate::ingest::{IngestError, Problem};
use crate::model::{Direction, Exchange, Locator, Payload, StdioMessage, Timestamp};
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
    let wanted = &["type", "startedAt", "dir", "t", "frame", "data", "chunks"];
    read_lines(
        reader,
        limits,
        tally,
        wanted,
        |entry, base| match entry_of(entry, *base)? {
            Entry::Header(t) => {
                *base = t;
                Ok(None)
            }
            Entry::Messages(ms) => Ok(Some(ms)),
        },
    )
}

/// One JSON object per line, its `wanted` members turned into messages by `entry`
/// (`None`: a header, which is no record; it may set the time the offsets count from).
pub(super) fn read_lines(
    reader: &mut dyn BufRead,
    limits: &Limits,
    tally: &mut Tally,
    wanted: &[&'static str],
    mut entry: impl FnMut(&Object, &mut Option<Timestamp>) -> Result<Option<Vec<StdioMessage>>, String>,
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
        let parsed = Object::document(&buf, wanted).map(|o| o.map(|o| entry(&o, &mut base)));
        buf.clear();
        let read = match parsed {
            Ok(Some(read)) => read,
            Ok(None) => {
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
        match read {
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

fn entry_of(o: &Object, base: Option<Timestamp>) -> Result<Entry, String> {
    let ty = o.str("type").unwrap_or_default();
    if ty == "header" {
        return Ok(Entry::Header(
            o.str("startedAt").as_deref().and_then(Timestamp::parse),
        ));
    }
    let dir = match o.str("dir").as_deref() {
        Some("c2s") => Direction::ClientToServer,
        Some("s2c") => Direction::ServerToClient,
        _ => return Err(format!("{ty:?} entry without \"dir\": \"c2s\" or \"s2c\"")),
    };
    let at = |v: &Object| offset(base, v.f64("t"));
    let msg = |json: String, ts| recorded(dir, json, ts);
    match &*ty {
        "frame" => match o.get("frame").filter(|f| shallow::is_object(f)) {
            Some(f) => Ok(Entry::Messages(vec![msg(shallow::compact(f), at(o))])),
            _ => Err("frame entry without a \"frame\" object".to_owned()),
        },
        "raw" => match o.str("data") {
            Some(s) => Ok(Entry::Messages(vec![msg(s.into_owned(), at(o))])),
            _ => Err("raw entry without a \"data\" string".to_owned()),
        },
        "chunks" => {
            let mut out = Vec::new();
            let mut bad = None;
            let walked = o.get("chunks").is_some_and(|chunks| {
                shallow::each_element(chunks, |c| {
                    let c = Object::of(c, &["frame", "t"]);
                    let frame = c.as_ref().and_then(|c| c.get("frame"));
                    match frame.filter(|f| shallow::is_object(f)) {
                        Some(f) if bad.is_none() => {
                            let ts = c.as_ref().and_then(at).or_else(|| at(o));
                            out.push(msg(shallow::compact(f), ts));
                        }
                        _ => {
                            bad.get_or_insert(out.len() + 1);
                        }
                    }
                })
            });
            if !walked {
                return Err("chunks entry without a \"chunks\" array".to_owned());
            }
            match bad {
                Some(i) => Err(format!("chunk {i} has no \"frame\" object")),
                None => Ok(Entry::Messages(out)),
            }
        }
        other => Err(format!(
            "entry of unknown type {other:?} (expected header, frame, raw or chunks)"
        )),
    }
}
