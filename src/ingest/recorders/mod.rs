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
mod shallow;
mod ts_cassette;
mod vcr;

use super::{IngestError, Problem, Sink};
use crate::config::Limits;
use crate::model::{Direction, Exchange, Locator, Payload, StdioMessage, Timestamp};
use std::io::{BufRead, Read};

/// Which recorder wrote a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// mcp-recorder (Python, PyPI `mcp-recorder`): one JSON document, `interactions[]`.
    McpRecorder,
    /// mcp-cassette (Python package): one JSON document, `messages[]`.
    PyCassette,
    /// mcp-cassette (Node package): JSONL, a header then frames.
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

/// A head that starts with `{`, with whitespace dropped everywhere (inside strings
/// too: only key shapes matter): its first line and the whole of it. Made once per
/// input, for the recorders' shapes and the HAR test alike; on an archive of small
/// logs each compaction is a measurable part of an input.
pub struct JsonHead {
    pub line: Vec<u8>,
    pub doc: Vec<u8>,
}

impl JsonHead {
    pub fn of(text: &[u8]) -> Self {
        let first_line = text.split(|&b| b == b'\n').next().unwrap_or(text);
        JsonHead {
            line: compact(first_line),
            doc: compact(text),
        }
    }
}

/// Detects a recorder's file from its first bytes (`text`: after a BOM and leading
/// whitespace; `json`: its `JsonHead` when it starts with `{`). Checked before the
/// generic JSONL and message-log shapes, which these files would otherwise be
/// mistaken for.
pub fn sniff_with(text: &[u8], json: Option<&JsonHead>) -> Option<Kind> {
    match text.first()? {
        b'{' => {
            let json = json?;
            if ts_cassette::looks_like(&json.line) {
                return Some(Kind::TsCassette);
            }
            if vcr::looks_like_ndjson(&json.line) {
                return Some(Kind::VcrNdjson);
            }
            if mcp_recorder::looks_like(&json.doc) {
                return Some(Kind::McpRecorder);
            }
            if py_cassette::looks_like(&json.doc) {
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
        Kind::Vcr => vcr::read(
            &read_document(reader, kind)?,
            limits.max_record_bytes,
            &mut tally,
        )?,
        Kind::TsCassette => ts_cassette::read(reader, limits, &mut tally)?,
        Kind::VcrNdjson => vcr::read_ndjson(reader, limits, &mut tally)?,
        Kind::ClaudeDesktop => claude_desktop::read(reader, limits, &mut tally)?,
    }
    tally.finish(kind)
}

/// Whitespace dropped everywhere (inside strings too): only key shapes matter.
/// Copied a run at a time: compact JSON has a blank every few bytes at most.
pub(crate) fn compact(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.iter().position(u8::is_ascii_whitespace) {
        out.extend_from_slice(&rest[..i]);
        rest = &rest[i + 1..];
    }
    out.extend_from_slice(rest);
    out
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

/// A JSON document read as an object one level deep (`shallow`), its syntax errors
/// named with line and column; a document that is no object has none of `wanted`.
fn parse_document<'a>(
    doc: &'a [u8],
    kind: Kind,
    wanted: &[&'static str],
) -> Result<shallow::Object<'a>, IngestError> {
    let object = shallow::Object::document(doc, wanted).map_err(|e| {
        IngestError::Malformed(format!(
            "{}: {}",
            kind.name(),
            crate::text::describe_json_error(&e)
        ))
    })?;
    Ok(object.unwrap_or_default())
}

/// Hands each element of a document's list (`list`: its member) to `each`, with its
/// 1-based entry, holding none; an error naming `what` (the file and the member)
/// when there is no such list.
fn each_entry<'a>(
    list: Option<&'a serde_json::value::RawValue>,
    what: &str,
    mut each: impl FnMut(u64, &'a serde_json::value::RawValue),
) -> Result<(), IngestError> {
    let mut entry = 0;
    let walked = list.is_some_and(|all| {
        shallow::each_element(all, |el| {
            entry += 1;
            each(entry, el);
        })
    });
    if walked {
        Ok(())
    } else {
        Err(IngestError::Malformed(format!("{what} is not an array")))
    }
}

/// A message a recorder wrote down as it crossed, `dir`, at `ts` if known.
fn recorded(dir: Direction, json: String, ts: Option<Timestamp>) -> StdioMessage {
    StdioMessage {
        dir: Some(dir),
        json,
        ts,
        checked: false,
        logged_by_client: false,
    }
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

    /// The message at (1-based) `entry` of a cassette's `messages[]`, or why it could
    /// not be read (a problem there).
    fn message(&mut self, entry: u64, read: Result<StdioMessage, String>) {
        let locator = Locator::Entry { entry };
        match read {
            Ok(sm) => {
                self.used += 1;
                self.exchange(Exchange {
                    locator,
                    payload: Payload::Stdio(sm),
                });
            }
            Err(message) => self.problem(Problem::new(locator, message)),
        }
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
    use crate::ingest::Collect;
    use crate::model::{Direction, End, Locator, Payload};

    fn read_text(text: &str) -> (Collect, Result<(), IngestError>) {
        let kind = sniff(text.as_bytes()).expect("sniffed as a recorder");
        let mut sink = Collect::default();
        let r = read(kind, &mut text.as_bytes(), &Limits::default(), &mut sink);
        (sink, r)
    }

    fn stdio(x: &Exchange) -> (Option<Direction>, &str, Option<Timestamp>) {
        match &x.payload {
            Payload::Stdio(m) => (m.dir, m.json.as_str(), m.ts),
            other => panic!("not a stdio message: {other:?}"),
        }
    }

    #[test]
    fn typescript_chunks_and_raw_lines_become_messages_with_their_own_times() {
        let text = concat!(
            r#"{"type":"header","cassetteVersion":2,"recorder":"mcp-cassette@0.4.0","startedAt":"2026-08-16T00:00:00Z","transport":"http","era":"legacy"}"#,
            "\n",
            r#"{"type":"frame","t":5,"dir":"c2s","frame":{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}}"#,
            "\n\n",
            r#"{"type":"chunks","t":6,"dir":"s2c","id":3,"chunks":[{"t":7,"frame":{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}},{"t":9,"frame":{"jsonrpc":"2.0","id":3,"result":{"content":[]}}}]}"#,
            "\n",
            r#"{"type":"raw","t":11,"dir":"s2c","data":"server says hello"}"#,
            "\n",
            r#"{"type":"state","t":12}"#,
            "\n",
        );
        let (sink, r) = read_text(text);
        r.unwrap();
        let got: Vec<_> = sink.exchanges.iter().map(stdio).collect();
        let t0 = Timestamp::parse("2026-08-16T00:00:00Z").unwrap();
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].0, Some(Direction::ClientToServer));
        assert_eq!(got[1].2, Some(t0.plus_millis(7.0)));
        assert!(got[2].1.contains("\"result\""));
        assert_eq!(got[2].2, Some(t0.plus_millis(9.0)));
        assert_eq!(
            got[3],
            (
                Some(Direction::ServerToClient),
                "server says hello",
                Some(t0.plus_millis(11.0))
            )
        );
        // The chunks share their entry's line; the unknown entry is a problem at its line.
        assert_eq!(sink.exchanges[2].locator, Locator::Line { line: 4 });
        assert_eq!(sink.problems.len(), 1);
        assert_eq!(sink.problems[0].locator, Locator::Line { line: 6 });
        assert!(
            sink.problems[0].message.contains("\"state\""),
            "{:?}",
            sink.problems
        );
    }

    #[test]
    fn mcp_recorder_over_stdio_is_messages_and_lifecycle_is_bare_http() {
        let stdio_doc = r#"{
  "version": "1.0",
  "metadata": {"server_url": "stdio://python server.py", "transport_type": "stdio"},
  "interactions": [
    {"type": "jsonrpc_request", "request": {"jsonrpc": "2.0", "id": 1, "method": "ping"}, "response": {"jsonrpc": "2.0", "id": 1, "result": {}}, "response_is_sse": false, "response_status": 200},
    {"type": "notification", "request": {"jsonrpc": "2.0", "method": "notifications/initialized"}, "response": null, "response_is_sse": false, "response_status": 202}
  ]
}"#;
        let (sink, r) = read_text(stdio_doc);
        r.unwrap();
        let dirs: Vec<_> = sink.exchanges.iter().map(|x| stdio(x).0).collect();
        assert_eq!(
            dirs,
            [
                Some(Direction::ClientToServer),
                Some(Direction::ServerToClient),
                Some(Direction::ClientToServer)
            ]
        );
        let http_doc = r#"{
  "version": "1.0",
  "metadata": {"server_url": "http://127.0.0.1:8000"},
  "interactions": [
    {"type": "lifecycle", "request": null, "response": null, "response_is_sse": false, "response_status": 404, "latency_ms": 1, "http_method": "DELETE", "http_path": "/mcp"},
    {"type": "jsonrpc_request", "request": {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, "response": null, "response_is_sse": false, "response_status": "oops"}
  ]
}"#;
        let (sink, r) = read_text(http_doc);
        r.unwrap();
        assert_eq!(sink.exchanges.len(), 1);
        match &sink.exchanges[0].payload {
            Payload::Http(h) => {
                assert_eq!(h.request.method, "DELETE");
                assert_eq!(h.request.url, "http://127.0.0.1:8000/mcp");
                assert_eq!(h.response.as_ref().unwrap().status, 404);
                assert_eq!(h.end, End::Complete);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(sink.problems[0].locator, Locator::Entry { entry: 2 });
        assert!(sink.problems[0].message.contains("not an HTTP status"));
    }

    #[test]
    fn python_cassette_raw_lines_pass_through_and_bad_senders_are_named() {
        let doc = r#"{
  "format_version": 1,
  "recorded_at": "2026-07-14T07:06:34.598656Z",
  "transport": "stdio",
  "messages": [
    {"seq": 0, "t_offset_ms": 10, "sender": "server", "kind": "raw", "method": null, "msg_id": null, "payload": "Traceback (most recent call last):"},
    {"seq": 1, "t_offset_ms": 11, "sender": "client", "kind": "request", "payload": 5}
  ]
}"#;
        let (sink, r) = read_text(doc);
        r.unwrap();
        assert_eq!(sink.exchanges.len(), 1);
        let (dir, json, ts) = stdio(&sink.exchanges[0]);
        assert_eq!(dir, Some(Direction::ServerToClient));
        assert_eq!(json, "Traceback (most recent call last):");
        assert_eq!(ts, Timestamp::parse("2026-07-14T07:06:34.608656Z"));
        assert_eq!(sink.problems[0].locator, Locator::Entry { entry: 2 });
    }

    #[test]
    fn claude_desktop_lines_in_both_orders_and_names_with_spaces() {
        let text = concat!(
            "2025-09-19T19:52:08.612Z [nest protect] [info] Server started and connected successfully\n",
            "2025-09-19T19:52:08.760Z [nest protect] [info] Message from client: {\"method\":\"tools/call\",\"params\":{\"name\":\"t\",\"arguments\":{}},\"jsonrpc\":\"2.0\",\"id\":\"a\"}\n",
            "2025-09-19T19:52:08.790Z [info] [nest protect] Message from server: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"content\":[]}} { metadata: undefined }\n",
            "2025-09-19 21:52:13,700 - nest_protect_mcp - INFO - Kill argument received\n",
        );
        let (sink, r) = read_text(text);
        r.unwrap();
        assert_eq!(sink.exchanges.len(), 1);
        match &sink.exchanges[0].payload {
            Payload::ClientLog(c) => {
                assert_eq!(c.server.as_deref(), Some("nest protect"));
                assert_eq!(c.call_id, "\"a\"");
                assert_eq!(c.tool, "t");
                assert_eq!(c.ended, Timestamp::parse("2025-09-19T19:52:08.790Z"));
                assert!(
                    matches!(&c.result, crate::model::ClientResult::Result(r) if r.contains("content"))
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(sink.problems.is_empty(), "{:?}", sink.problems);
    }

    fn sniff(text: &[u8]) -> Option<Kind> {
        let json = (text.first() == Some(&b'{')).then(|| JsonHead::of(text));
        sniff_with(text, json.as_ref())
    }

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
