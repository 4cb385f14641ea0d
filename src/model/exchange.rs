//! The exchange: one HTTP request and what came back for it, or, for stdio, one
//! message without any transport. This is what every ingester produces and what
//! the later stages read; it holds bytes and events, never JSON-RPC meaning.

use super::Timestamp;
use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// Where in its input a record came from, so a person can find it again.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Locator {
    /// A 1-based line of a text input (JSONL).
    Line { line: u64 },
    /// A 1-based entry of a HAR `log.entries` array (or of a JSON-array export).
    Entry { entry: u64 },
    /// 1-based frame numbers as Wireshark shows them.
    Frames {
        request: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        response: Option<u64>,
    },
    /// 1-based frame numbers of an exchange read from a decrypted TLS connection,
    /// and that connection's Wireshark `tcp.stream`.
    TlsFrames {
        request: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        response: Option<u64>,
        tcp_stream: u64,
    },
    /// Nothing finer than the input itself is known.
    Input,
}

impl fmt::Display for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Locator::Line { line } => write!(f, "line {line}"),
            Locator::Entry { entry } => write!(f, "entry {entry}"),
            Locator::Frames {
                request,
                response: Some(r),
            } => write!(f, "frames {request}/{r}"),
            Locator::Frames { request, .. } => write!(f, "frame {request}"),
            Locator::TlsFrames {
                request,
                response: Some(r),
                tcp_stream,
            } => write!(f, "frames {request}/{r} (TLS, tcp.stream {tcp_stream})"),
            Locator::TlsFrames {
                request,
                tcp_stream,
                ..
            } => write!(f, "frame {request} (TLS, tcp.stream {tcp_stream})"),
            Locator::Input => write!(f, "input"),
        }
    }
}

/// HTTP header list in wire order; names compare case-insensitively.
///
/// Names and values are `CompactString`s: nearly every name and most values fit in
/// its 24 inline bytes, so a message's head costs no allocation per header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers(Vec<(CompactString, CompactString)>);

impl Headers {
    pub fn with_capacity(n: usize) -> Headers {
        Headers(Vec::with_capacity(n))
    }

    /// The first value of `name`, case-insensitive.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every header, as (name, value), in wire order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Bytes of the names and values held apart from the list (those past
    /// `CompactString`'s 24 inline bytes): what a hostile head adds to an exchange.
    pub fn heap_bytes(&self) -> u64 {
        self.0
            .iter()
            .map(|(n, v)| {
                [n, v]
                    .iter()
                    .filter(|s| s.is_heap_allocated())
                    .map(|s| s.len() as u64)
                    .sum::<u64>()
            })
            .sum()
    }

    /// The media type of `Content-Type`, lower-cased, without parameters.
    pub fn media_type(&self) -> Option<String> {
        self.get("content-type").map(media_type_of)
    }

    /// Whether `Content-Type` names the media type `want` (given in lower case),
    /// whatever its parameters and case: `media_type` without the allocation.
    pub fn media_type_is(&self, want: &str) -> bool {
        self.get("content-type")
            .is_some_and(|ct| bare_media_type(ct).eq_ignore_ascii_case(want))
    }

    pub fn push(&mut self, name: impl Into<CompactString>, value: impl Into<CompactString>) {
        self.0.push((name.into(), value.into()));
    }
}

/// `text/event-stream; charset=utf-8` → `text/event-stream`.
pub fn media_type_of(content_type: &str) -> String {
    bare_media_type(content_type).to_ascii_lowercase()
}

/// A Content-Type without its parameters and spaces, in its own case.
fn bare_media_type(content_type: &str) -> &str {
    let end = content_type.bytes().position(|c| c == b';');
    content_type
        .get(..end.unwrap_or(content_type.len()))
        .unwrap_or_default()
        .trim()
}

/// How a response (or the connection carrying it) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The body was delimited and arrived whole.
    #[default]
    Complete,
    /// The server closed the connection before the body ended (FIN, or a recorder's
    /// "connection closed").
    Closed,
    /// The client closed its side first: it gave up or cancelled.
    ClientClosed,
    /// A TCP reset from either side.
    Reset,
    /// The capture stopped while the response was still in flight.
    CaptureEnded,
    /// The recorder cut the body (HAR size > text, packet snap length, caps).
    Truncated,
    /// The server reset this HTTP/2 stream (RST_STREAM); the connection went on. A
    /// client's RST_STREAM is its cancellation and ends as `ClientClosed`.
    StreamReset,
    /// The server's HTTP/2 GOAWAY ended this stream: its id was above the GOAWAY's
    /// last stream id (never processed), or the GOAWAY carried an error and the
    /// connection closed with the stream open.
    GoAway,
}

impl End {
    pub fn as_str(self) -> &'static str {
        match self {
            End::Complete => "complete",
            End::Closed => "closed",
            End::ClientClosed => "client_closed",
            End::Reset => "reset",
            End::CaptureEnded => "capture_ended",
            End::Truncated => "truncated",
            End::StreamReset => "stream_reset",
            End::GoAway => "goaway",
        }
    }

    pub fn parse(s: &str) -> Option<End> {
        Some(
            match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
                "complete" | "completed" | "ok" => End::Complete,
                "closed" | "server_closed" | "eof" => End::Closed,
                "client_closed" | "cancelled" | "canceled" | "aborted" => End::ClientClosed,
                "reset" | "rst" => End::Reset,
                "capture_ended" | "capture_end" => End::CaptureEnded,
                "truncated" => End::Truncated,
                "stream_reset" | "rst_stream" => End::StreamReset,
                "goaway" | "go_away" => End::GoAway,
                _ => return None,
            },
        )
    }
}

/// One dispatched server-sent event (WHATWG event-stream).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SseEvent {
    /// The `event` field, `message` when absent.
    pub event: String,
    /// The `data` lines joined with `\n`.
    pub data: String,
    /// The last event id in force when this event was dispatched; shared by every
    /// event it applies to (one allocation per id, not per event).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Arc<str>>,
    /// A `retry` field seen in this event's block, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<u64>,
    /// Byte offset of the event's first line in the stream (after any BOM).
    pub offset: u64,
    /// When the bytes that completed this event arrived (pcap only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<Timestamp>,
}

/// A response body as the recorder kept it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Body {
    /// The recorder kept no body at all (HAR without `content.text`): unknown, not empty.
    #[default]
    NotRecorded,
    /// Raw bytes (already content-decoded).
    Bytes(Vec<u8>),
    /// A `text/event-stream` body, parsed.
    Sse(SseBody),
}

/// An event stream: dispatched events, plus what was left unterminated at the end.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseBody {
    pub events: Vec<SseEvent>,
    /// Bytes of a last event that never saw its blank line: evidence, never dispatched.
    pub incomplete_tail: Option<String>,
    /// Problems met while parsing (lossy UTF-8, caps).
    pub problems: Vec<String>,
    /// Number of body bytes the parser saw.
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpRequest {
    pub method: String,
    /// The URL or request target as recorded.
    pub url: String,
    pub headers: Headers,
    pub body: Vec<u8>,
    pub ts: Option<Timestamp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Headers,
    pub body: Body,
    /// When the response head arrived.
    pub ts: Option<Timestamp>,
}

/// One HTTP request and what came back.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpExchange {
    pub request: HttpRequest,
    /// `None`: the request went out and no response was recorded.
    pub response: Option<HttpResponse>,
    /// How the response ended (`Complete` when there is none to end).
    pub end: End,
    /// When the exchange was over (last byte, or the recorder's end time).
    pub end_ts: Option<Timestamp>,
    /// The recorder's own reason for a failure (HAR `_error`, a proxy note).
    pub recorder_note: Option<String>,
    /// Where to find it in Wireshark, for an exchange read from a capture.
    pub tcp: Option<TcpTrail>,
    /// Set when a capture reader hands a long event stream on in parts.
    pub part: Option<StreamPart>,
}

/// One part of an event stream handed on before it ended. A session's GET stream on
/// the HTTP+SSE transport of 2024-11-05 carries every response of the session and
/// may last the whole capture: read whole, it would hold a day of responses, and no
/// call could be judged before it ended. Each part carries the events since the
/// part before it; the first has the request and the response head, later ones only
/// the method and the status (they belong to the stream the first began), and the
/// last says how the stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamPart {
    /// The same for every part of one stream, and distinct from any other stream's
    /// within its input (a capture reader uses the request's frame number).
    pub stream: u64,
    /// 0 for the first part.
    pub index: u32,
    /// More parts follow; `end` and `end_ts` then say only how far this one went.
    pub more: bool,
}

impl HttpExchange {
    /// The bytes of its bodies (and of long header values: a megabyte session id),
    /// roughly what it holds in memory.
    pub fn body_bytes(&self) -> u64 {
        let resp = self.response.as_ref().map_or(0, |r| {
            r.headers.heap_bytes()
                + match &r.body {
                    Body::NotRecorded => 0,
                    Body::Bytes(b) => b.len() as u64,
                    Body::Sse(s) => s.bytes,
                }
        });
        self.request.body.len() as u64 + self.request.headers.heap_bytes() + resp
    }
}

/// A captured exchange's place in Wireshark's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpTrail {
    /// Wireshark's `tcp.stream`: TCP conversations numbered from 0 in the order of
    /// their first packet.
    pub stream: u64,
    /// The frame that ended the response: its last segment, or the FIN or RST (or
    /// the capture's last frame) that cut it.
    pub end_frame: u64,
    /// The HTTP/2 stream id, for an exchange that came over HTTP/2.
    pub h2_stream: Option<u32>,
    /// Set when the exchange was read from a decrypted TLS connection.
    pub tls: Option<TlsTrail>,
}

/// The TLS connection a captured exchange was decrypted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsTrail {
    pub version: TlsVersion,
    /// The IANA name of the negotiated cipher suite.
    pub cipher_suite: &'static str,
    /// The protocol ALPN chose (`http/1.1`, `h2`), if the server chose one.
    pub alpn: Option<&'static str>,
}

/// The TLS versions mcpsift decrypts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

impl TlsVersion {
    pub fn as_str(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLS 1.2",
            TlsVersion::Tls13 => "TLS 1.3",
        }
    }
}

/// Who sent a message on a transport without HTTP (stdio).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Direction {
    #[serde(rename = "c2s")]
    ClientToServer,
    #[serde(rename = "s2c")]
    ServerToClient,
}

/// One JSON-RPC message on a transport without HTTP, as raw JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioMessage {
    /// `None` when the recorder did not say and it must be inferred from the message.
    pub dir: Option<Direction>,
    pub json: String,
    /// Set when `json` is one JSON value its reader already checked against the
    /// grammar (a transcript line's `msg` object): decoding it skips a second check.
    /// Leave it false for text of any other origin.
    pub checked: bool,
    pub ts: Option<Timestamp>,
    /// Set when a client wrote the log (VS Code's output channel): the messages are
    /// what the client saw, so the evidence is a client log's, not a wire capture's.
    pub logged_by_client: bool,
}

/// What a client log says one tool call came to. A client log shows what the client
/// concluded, not what crossed the wire, so verdicts from it carry weaker evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientResult {
    /// A `CallToolResult` object as the client kept it (JSON text).
    Result(String),
    /// Result text and the client's error flag (Claude Code `tool_result`).
    Text { text: String, is_error: bool },
    /// An error the client reported instead of a result (Codex `Err`, a timeout).
    Error(String),
    /// The log shows the call and no result for it.
    Missing,
}

/// One MCP tool call as a client log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCall {
    /// Which log kind: `claude-code`, `codex`, `opentelemetry`, …
    pub source: &'static str,
    /// The client's own id for the call (`tool_use_id`, `call_id`, a span's request id).
    pub call_id: String,
    /// The client session or conversation, when the log names one.
    pub session: Option<String>,
    pub server: Option<String>,
    pub tool: String,
    /// Arguments as JSON text; `None` when the log does not keep them (OpenTelemetry).
    pub arguments: Option<String>,
    pub result: ClientResult,
    pub started: Option<Timestamp>,
    pub ended: Option<Timestamp>,
    /// JSON-RPC error code, when the log keeps one (OpenTelemetry `rpc.response.status_code`).
    pub jsonrpc_code: Option<i64>,
}

/// What one input record holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // exchanges are moved once into the sink, never stored in bulk
pub enum Payload {
    Http(HttpExchange),
    Stdio(StdioMessage),
    ClientLog(ClientCall),
}

/// One record from an input, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub locator: Locator,
    pub payload: Payload,
}

impl Exchange {
    /// Roughly what the exchange holds in memory: the bytes of its bodies (what the
    /// readers' windows and queues are bounded by).
    pub fn body_bytes(&self) -> u64 {
        match &self.payload {
            Payload::Http(h) => h.body_bytes(),
            Payload::Stdio(m) => m.json.len() as u64,
            Payload::ClientLog(c) => c.arguments.as_ref().map_or(0, |a| a.len() as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The allocation-free check agrees with `media_type` on every spelling a server
    /// may send, and is false when there is no Content-Type at all.
    #[test]
    fn media_type_is_matches_media_type() {
        for ct in [
            "text/event-stream",
            "Text/Event-Stream",
            " text/event-stream ; charset=utf-8",
            "text/event-stream;charset=UTF-8",
            "text/event-streams",
            "application/json",
            "text/event",
            ";text/event-stream",
            "",
        ] {
            let mut h = Headers::default();
            h.push("content-TYPE", ct);
            let want = h.media_type().as_deref() == Some("text/event-stream");
            assert_eq!(h.media_type_is("text/event-stream"), want, "{ct:?}");
        }
        assert!(!Headers::default().media_type_is("text/event-stream"));
    }
}
