//! Files written by dedicated MCP recorders and by Claude Desktop, each detected by
//! its content (`docs/input-formats.md`, "Recorders"): mcp-recorder cassettes,
//! mcp-cassette's Python (`*.mcp.json`) and TypeScript (JSONL) cassettes, mcp-vcr's
//! YAML transcripts and Claude Desktop's MCP logs. Each reader lives in its own file;
//! this one holds what they share: sniffing, the whole-document cap, and the rule that
//! a file of the right shape with not one usable record is one error, not an empty
//! success.

mod claude_desktop;
mod mcp_recorder;
mod py_cassette;
mod ts_cassette;
mod vcr;

use super::{IngestError, Problem, Sink};
use crate::config::Limits;
use crate::model::{Exchange, Timestamp};
use std::io::{BufRead, Read};

/// Which recorder wrote a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// mcp-recorder (Python, PyPI `mcp-recorder`): one JSON document, `interactions[]`.
    McpRecorder,
    /// mcp-cassette (Python, PyPI `mcp-cassette`): one JSON document, `messages[]`.
    PyCassette,
    /// mcp-cassette (TypeScript, npm `mcp-cassette`): JSONL, a header then frames.
    TsCassette,
    /// mcp-vcr: a YAML transcript, `meta` and `messages[]`.
    Vcr,
    /// mcp-vcr's NDJSON transcript: a `_type: meta` line, then messages.
    VcrNdjson,
    /// Claude Desktop's `mcp-server-NAME.log` and `mcp.log`.
    ClaudeDesktop,
}

impl Kind {
    /// The format as an error names it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::McpRecorder => "an mcp-recorder cassette",
            Kind::PyCassette => "an mcp-cassette (Python) cassette",
            Kind::TsCassette => "an mcp-cassette (TypeScript) cassette",
            Kind::Vcr => "an mcp-vcr transcript",
            Kind::VcrNdjson => "an mcp-vcr NDJSON transcript",
            Kind::ClaudeDesktop => "a Claude Desktop MCP log",
        }
    }
}

/// A recorder's whole-document formats (JSON, YAML) are parsed in one piece, so
/// their size is capped; a cassette is a test fixture, far below this.
const MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// Detects a recorder's file from its first bytes (`text`: after a BOM and leading
/// whitespace). Checked before the generic JSONL and message-log shapes, which
/// these files would otherwise be mistaken for.
pub fn sniff(text: &[u8]) -> Option<Kind> {
    match text.first()? {
        b'{' => {
            let first_line = text.split(|&b| b == b'\n').next().unwrap_or(text);
            let line = compact(first_line);
            if ts_cassette::looks_like(&line) {
                return Some(Kind::TsCassette);
            }
            if vcr::looks_like_ndjson(&line) {
                return Some(Kind::VcrNdjson);
            }
            let doc = compact(text);
            if mcp_recorder::looks_like(&doc) {
                return Some(Kind::McpRecorder);
            }
            if py_cassette::looks_like(&doc) {
                return Some(Kind::PyCassette);
            }
            None
        }
        b'[' => None,
        _ => {
            let head = String::from_utf8_lossy(text);
            if claude_desktop::looks_like(&head) {
                Some(Kind::ClaudeDesktop)
            } else if vcr::looks_like(&head) {
                Some(Kind::Vcr)
            } else {
                None
            }
        }
    }
}

/// Reads a file `sniff` recognised.
pub fn read(
    kind: Kind,
    reader: &mut dyn BufRead,
    limits: &Limits,
    sink: &mut dyn Sink,
) -> Result<(), IngestError> {
    let mut tally = Tally {
        sink,
        used: 0,
        held: Vec::new(),
    };
    match kind {
        Kind::McpRecorder => mcp_recorder::read(&read_document(reader, kind)?, &mut tally)?,
        Kind::PyCassette => py_cassette::read(&read_document(reader, kind)?, &mut tally)?,
        Kind::Vcr => vcr::read(&read_document(reader, kind)?, &mut tally)?,
        Kind::TsCassette => ts_cassette::read(reader, limits, &mut tally)?,
        Kind::VcrNdjson => vcr::read_ndjson(reader, limits, &mut tally)?,
        Kind::ClaudeDesktop => claude_desktop::read(reader, limits, &mut tally)?,
    }
    tally.finish(kind)
}

/// Whitespace dropped everywhere (inside strings too): only key shapes matter.
fn compact(text: &[u8]) -> Vec<u8> {
    text.iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    memchr::memmem::find(hay, needle.as_bytes()).is_some()
}

/// The whole input, up to `MAX_DOCUMENT_BYTES`.
fn read_document(reader: &mut dyn BufRead, kind: Kind) -> Result<Vec<u8>, IngestError> {
    let mut buf = Vec::new();
    reader.take(MAX_DOCUMENT_BYTES + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(IngestError::Malformed(format!(
            "{} is read whole, and this one is over the {MAX_DOCUMENT_BYTES}-byte cap",
            kind.name()
        )));
    }
    Ok(buf)
}

/// A JSON document parsed whole, its syntax errors named with line and column.
fn parse_json(doc: &[u8], kind: Kind) -> Result<serde_json::Value, IngestError> {
    serde_json::from_slice(doc).map_err(|e| {
        IngestError::Malformed(format!(
            "{}: {}",
            kind.name(),
            crate::text::describe_json_error(&e)
        ))
    })
}

/// `base + offset_ms`, when the file has both.
fn offset(base: Option<Timestamp>, ms: Option<f64>) -> Option<Timestamp> {
    Some(base?.plus_millis(ms?))
}

/// Passes exchanges on and holds problems back until the end: a file with no usable
/// record becomes one error, not an error per record.
struct Tally<'s> {
    sink: &'s mut dyn Sink,
    /// Records read (a message, an interaction, a log line with a message).
    used: u64,
    held: Vec<Problem>,
}

/// Problems kept for the final error are this many at most; the rest are counted.
const MAX_HELD: usize = 10_000;

impl Tally<'_> {
    fn exchange(&mut self, x: Exchange) {
        self.sink.exchange(x);
    }

    fn problem(&mut self, p: Problem) {
        if self.held.len() < MAX_HELD {
            self.held.push(p);
        }
    }

    fn finish(self, kind: Kind) -> Result<(), IngestError> {
        if self.used > 0 {
            for p in self.held {
                self.sink.problem(p);
            }
            return Ok(());
        }
        let detail = match self.held.first() {
            None => "it holds no MCP message".to_owned(),
            Some(first) => format!(
                "none of its records could be read ({} problem{}; first, at {}: {})",
                self.held.len(),
                if self.held.len() == 1 { "" } else { "s" },
                first.locator,
                first.message
            ),
        };
        Err(IngestError::NoUsableRecord {
            format: kind.name(),
            detail,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_each_recorder_and_nothing_else() {
        let rec = br#"{
  "version": "1.0",
  "metadata": {"recorded_at": "2026-02-17T20:25:23Z", "server_url": "http://h"},
  "interactions": [
    {"type": "jsonrpc_request", "request": {}, "response": null, "response_is_sse": true"#;
        assert_eq!(sniff(rec), Some(Kind::McpRecorder));
        let py = br#"{
  "format_version": 2,
  "recorded_at": "2026-07-18T19:22:32.454515Z",
  "transport": "http",
  "messages": [
    {"seq": 0, "t_offset_ms": 125, "sender": "client""#;
        assert_eq!(sniff(py), Some(Kind::PyCassette));
        let ts = b"{\"type\":\"header\",\"cassetteVersion\":1,\"recorder\":\"mcp-cassette@0.1.2\"}\n{\"type\":\"frame\"}\n";
        assert_eq!(sniff(ts), Some(Kind::TsCassette));
        let vcr = b"meta:\n  version: 1\nmessages:\n- dir: c2s\n  payload:\n    id: 1\n";
        assert_eq!(sniff(vcr), Some(Kind::Vcr));
        let nd = b"{\"_type\": \"meta\", \"version\": 1, \"recorded_at\": \"2026-05-18T12:00:00Z\", \"session_id\": \"a3f2b1c9\", \"server_command\": [\"python\"]}\n";
        assert_eq!(sniff(nd), Some(Kind::VcrNdjson));
        let cd = b"2025-07-23T15:09:15.405Z [weather] [info] Server started and connected successfully { metadata: undefined }\n";
        assert_eq!(sniff(cd), Some(Kind::ClaudeDesktop));
        let mcp_log = b"2025-07-19T23:47:50.682Z [info] [memory] Message from server: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n";
        assert_eq!(sniff(mcp_log), Some(Kind::ClaudeDesktop));
        // Other JSON and text stay with the generic readers.
        assert_eq!(
            sniff(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}\n"),
            None
        );
        assert_eq!(sniff(b"{\"messages\":[{\"role\":\"user\"}]}"), None);
        assert_eq!(sniff(b"messages:\n- role: user\n"), None);
        assert_eq!(
            sniff(b"2026-01-01 10:00:00.000 [info] [Client Says] {\"jsonrpc\":\"2.0\"}\n"),
            None
        );
    }
}
