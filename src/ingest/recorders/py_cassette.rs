//! mcp-cassette (Python, package `mcp-cassette` 0.3, `format_version` 1 and 2) cassettes,
//! usually named `*.mcp.json`: one JSON document `{format_version, recorded_at,
//! transport, server_url?, session_id?, messages[]}`, each message `{seq, t_offset_ms,
//! sender, kind, method, msg_id, payload, redacted, exchange?, channel?}`. A proxy
//! writes them, so the evidence is the wire's. Quirks:
//!
//! - `t_offset_ms` counts from the proxy's start on a monotonic clock; added to
//!   `recorded_at` it gives each message's time;
//! - over Streamable HTTP (`transport: "http"`) the file keeps which messages shared a
//!   request (`exchange`) and which stream carried an answer (`channel`), but no status
//!   and no headers, so the messages are read as a transcript rather than as HTTP
//!   exchanges with a status the file never had;
//! - `kind: "raw"` keeps a line that was not JSON, as a string: it is passed on as is
//!   so the pairer can name it.

use super::shallow::{self, Object};
use super::{each_entry, offset, parse_document, recorded, Kind, Tally};
use crate::ingest::IngestError;
use crate::model::{Direction, StdioMessage, Timestamp};
use serde_json::value::RawValue;

pub fn looks_like(doc: &[u8]) -> bool {
    use super::contains;
    contains(doc, "\"messages\":[")
        && (contains(doc, "\"t_offset_ms\":")
            || (contains(doc, "\"format_version\":") && contains(doc, "\"recorded_at\":")))
}

pub fn read(doc: &[u8], tally: &mut Tally) -> Result<(), IngestError> {
    let root = parse_document(doc, Kind::PyCassette, &["messages", "recorded_at"])?;
    let base = root
        .str("recorded_at")
        .as_deref()
        .and_then(Timestamp::parse);
    let what = "an mcp-cassette (Python) cassette whose \"messages\"";
    each_entry(root.get("messages"), what, |entry, m| {
        tally.message(entry, message(m, base));
    })
}

fn message(m: &RawValue, base: Option<Timestamp>) -> Result<StdioMessage, String> {
    let Some(o) = Object::of(m, &["sender", "payload", "t_offset_ms"]) else {
        return Err("message is not a JSON object".to_owned());
    };
    let dir = match o.str("sender").as_deref() {
        Some("client") => Direction::ClientToServer,
        Some("server") => Direction::ServerToClient,
        other => {
            return Err(format!(
                "\"sender\" is {}, not \"client\" or \"server\"",
                other.map_or("missing".to_owned(), |s| format!("{s:?}"))
            ))
        }
    };
    let json = match (o.get("payload"), o.str("payload")) {
        (Some(p), _) if shallow::is_object(p) => shallow::compact(p),
        // `kind: "raw"`: the line as it crossed, not JSON.
        (_, Some(raw)) => raw.into_owned(),
        _ => return Err("message without a \"payload\" object".to_owned()),
    };
    Ok(recorded(dir, json, offset(base, o.f64("t_offset_ms"))))
}
