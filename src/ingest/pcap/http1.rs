//! HTTP/1.1 over one reassembled TCP connection: a push state machine per direction
//! that frames messages (RFC 9112 §6.3), pairs responses with requests in order,
//! decodes `Content-Encoding`, streams `text/event-stream` bodies into the SSE parser
//! as bytes arrive, and turns each finished pair into an `Exchange`. `httparse` parses
//! heads; framing is written here because no crate frames bodies incrementally from
//! pushed bytes.
//!
//! What it owns: message boundaries, the request↔response pairing, and how each
//! exchange ended. What it does not: TCP (see `tcp`), JSON-RPC meaning (later stages).

use crate::model::{
    Body, End, Exchange, Headers, HttpExchange, HttpRequest, HttpResponse, Locator, Payload,
    SseBody, SseEvent, Timestamp,
};
use crate::sse::SseParser;
use std::collections::VecDeque;
use std::io::Write;

/// Largest request or response head read.
const HEAD_CAP: usize = 64 << 10;
/// Longest chunk-size line (with extensions) scanned for its end.
const CHUNK_LINE_CAP: usize = 4 << 10;
/// Most requests waiting for their responses on one connection (pipelining).
const PENDING_CAP: usize = 1024;
/// Events kept per SSE stream before notifications are dropped (responses are kept).
const MAX_STREAM_EVENTS: usize = 10_000;

/// Could this event's data be a JSON-RPC response (it names a result or an error)?
fn may_be_response(data: &str) -> bool {
    data.contains("\"result\"") || data.contains("\"error\"")
}
const METHODS: &[&[u8]] = &[
    b"GET ",
    b"POST ",
    b"PUT ",
    b"DELETE ",
    b"HEAD ",
    b"OPTIONS ",
    b"PATCH ",
    b"CONNECT ",
    b"TRACE ",
];

/// Caps for one connection, from `Limits`.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Largest request or non-SSE response body kept (after decoding).
    pub body: usize,
    /// Largest SSE event.
    pub event: usize,
    /// Most bytes one body may decode to.
    pub decoded: u64,
}

/// What the first bytes of one direction say the connection carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    Request,
    Response,
    Http2Preface,
    Tls,
    Other,
}

/// Classifies the first bytes of a direction; `None` while too few bytes decide.
pub fn classify_start(b: &[u8], all: bool) -> Option<Start> {
    if b.is_empty() {
        return if all { Some(Start::Other) } else { None };
    }
    const H2: &[u8] = b"PRI * HTTP/2.0";
    const RESP: &[u8] = b"HTTP/1.";
    if b.len() >= 3 && b.first() == Some(&0x16) && b.get(1) == Some(&0x03) {
        return Some(Start::Tls);
    }
    let could = |pat: &[u8]| {
        let n = pat.len().min(b.len());
        b.get(..n) == pat.get(..n)
    };
    let is = |pat: &[u8]| b.starts_with(pat);
    if is(H2) {
        return Some(Start::Http2Preface);
    }
    if is(RESP) {
        return Some(Start::Response);
    }
    if METHODS.iter().any(|m| is(m)) {
        return Some(Start::Request);
    }
    let undecided = could(H2) || could(RESP) || METHODS.iter().any(|m| could(m));
    let tls_maybe = b.len() < 3 && b.first() == Some(&0x16) && b.get(1).is_none_or(|&x| x == 3);
    if (undecided || tls_maybe) && !all {
        return None;
    }
    Some(Start::Other)
}

/// How a message body is delimited.
#[derive(Debug)]
enum Framing {
    Length(u64),
    Chunked(Chunked),
    /// Until the server closes (responses only).
    Close,
}

#[derive(Debug, Default)]
struct Chunked {
    state: CState,
    line: Vec<u8>,
    trailers: Vec<(String, String)>,
}

#[derive(Debug, Default, PartialEq, Eq)]
enum CState {
    #[default]
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

/// Result of pushing bytes through a framing.
struct Framed {
    used: usize,
    done: bool,
}

impl Framing {
    /// Passes body bytes of `input` to `body`; says how much was used and whether
    /// the body ended. `Err` when the framing is broken (bad chunk size).
    fn push(&mut self, input: &[u8], body: &mut impl FnMut(&[u8])) -> Result<Framed, String> {
        match self {
            Framing::Length(left) => {
                let n = (*left).min(input.len() as u64) as usize;
                let (now, _) = input.split_at(n);
                if n > 0 {
                    body(now);
                }
                *left -= n as u64;
                Ok(Framed {
                    used: n,
                    done: *left == 0,
                })
            }
            Framing::Close => {
                body(input);
                Ok(Framed {
                    used: input.len(),
                    done: false,
                })
            }
            Framing::Chunked(c) => c.push(input, body),
        }
    }

    /// A gap of `len` bytes in the body: `true` when framing survives it.
    fn skip(&mut self, len: u64) -> bool {
        match self {
            Framing::Length(left) if len < *left => {
                *left -= len;
                true
            }
            Framing::Close => true,
            Framing::Chunked(c) => match &mut c.state {
                CState::Data(left) if len < *left => {
                    *left -= len;
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
}

impl Chunked {
    fn push(&mut self, input: &[u8], body: &mut impl FnMut(&[u8])) -> Result<Framed, String> {
        let mut i = 0usize;
        while i < input.len() && self.state != CState::Done {
            let rest = input.get(i..).unwrap_or(&[]);
            match self.state {
                CState::Size | CState::Trailer => {
                    let nl = memchr::memchr(b'\n', rest);
                    let take = nl.map(|p| p + 1).unwrap_or(rest.len());
                    self.line.extend_from_slice(rest.get(..take).unwrap_or(&[]));
                    i += take;
                    if self.line.len() > CHUNK_LINE_CAP {
                        return Err(format!(
                            "chunk-size or trailer line longer than {CHUNK_LINE_CAP} bytes"
                        ));
                    }
                    if nl.is_none() {
                        continue;
                    }
                    let line = std::mem::take(&mut self.line);
                    let text = trim_eol(&line);
                    if self.state == CState::Size {
                        let size = parse_chunk_size(text)?;
                        self.state = if size == 0 {
                            CState::Trailer
                        } else {
                            CState::Data(size)
                        };
                    } else if text.is_empty() {
                        self.state = CState::Done;
                    } else {
                        let s = String::from_utf8_lossy(text);
                        if let Some((n, v)) = s.split_once(':') {
                            self.trailers
                                .push((n.trim().to_owned(), v.trim().to_owned()));
                        }
                    }
                }
                CState::Data(left) => {
                    let n = left.min(rest.len() as u64) as usize;
                    if let Some(now) = rest.get(..n) {
                        body(now);
                    }
                    i += n;
                    self.state = if left == n as u64 {
                        CState::DataEnd
                    } else {
                        CState::Data(left - n as u64)
                    };
                }
                CState::DataEnd => {
                    // CRLF after the chunk data (a bare LF is tolerated).
                    match rest.first() {
                        Some(b'\r') => i += 1,
                        Some(b'\n') => {
                            i += 1;
                            self.state = CState::Size;
                        }
                        _ => return Err("chunk data not followed by CRLF".to_owned()),
                    }
                }
                CState::Done => {}
            }
        }
        Ok(Framed {
            used: i,
            done: self.state == CState::Done,
        })
    }
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn parse_chunk_size(line: &[u8]) -> Result<u64, String> {
    let hex = line
        .split(|&b| b == b';')
        .next()
        .unwrap_or(&[])
        .trim_ascii();
    let bad = || {
        format!(
            "bad chunk size line {:?}",
            String::from_utf8_lossy(line.get(..line.len().min(40)).unwrap_or(&[]))
        )
    };
    if hex.is_empty() || hex.len() > 15 {
        return Err(bad());
    }
    let s = std::str::from_utf8(hex).map_err(|_| bad())?;
    u64::from_str_radix(s, 16).map_err(|_| bad())
}

/// A streaming `Content-Encoding` decoder with a cap on its output.
enum Decoder {
    Identity,
    Gzip(Box<flate2::write::GzDecoder<Vec<u8>>>),
    Zlib(Box<flate2::write::ZlibDecoder<Vec<u8>>>),
    Deflate(Box<flate2::write::DeflateDecoder<Vec<u8>>>),
    /// `deflate` before its first byte says zlib-wrapped or raw.
    DeflateUnknown,
    Failed,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Decoder::Identity => "identity",
            Decoder::Gzip(_) => "gzip",
            Decoder::Zlib(_) | Decoder::Deflate(_) | Decoder::DeflateUnknown => "deflate",
            Decoder::Failed => "failed",
        })
    }
}

impl Decoder {
    /// Decodes `input`; `Err` with a reason once the data is not valid.
    fn write(&mut self, input: &[u8]) -> Result<Vec<u8>, String> {
        if let Decoder::DeflateUnknown = self {
            let Some(&first) = input.first() else {
                return Ok(Vec::new());
            };
            // HTTP "deflate" should be zlib-wrapped (0x78 first) but servers send raw too.
            *self = if first & 0x0f == 8 && first >> 4 <= 7 {
                Decoder::Zlib(Box::new(flate2::write::ZlibDecoder::new(Vec::new())))
            } else {
                Decoder::Deflate(Box::new(flate2::write::DeflateDecoder::new(Vec::new())))
            };
        }
        let res = match self {
            Decoder::Identity => return Ok(input.to_vec()),
            Decoder::Failed | Decoder::DeflateUnknown => return Ok(Vec::new()),
            Decoder::Gzip(d) => d
                .write_all(input)
                .and_then(|_| d.flush())
                .map(|_| std::mem::take(d.get_mut())),
            Decoder::Zlib(d) => d
                .write_all(input)
                .and_then(|_| d.flush())
                .map(|_| std::mem::take(d.get_mut())),
            Decoder::Deflate(d) => d
                .write_all(input)
                .and_then(|_| d.flush())
                .map(|_| std::mem::take(d.get_mut())),
        };
        res.map_err(|e| {
            let what = format!("{self:?}");
            *self = Decoder::Failed;
            format!("{what} body does not decode: {e}")
        })
    }
}

/// A response body being collected.
#[derive(Debug)]
enum RespBody {
    Bytes(Vec<u8>),
    Sse {
        parser: Box<SseParser>,
        events: Vec<SseEvent>,
        bytes: u64,
        /// After a gap: skip to the next blank line before parsing again.
        resync: bool,
        /// Offset of the current parser's first byte in the body.
        base: u64,
        problems: Vec<String>,
        /// `MAX_STREAM_EVENTS` was reached (said once in `problems`).
        capped: bool,
    },
    None,
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Headers,
    ts: Timestamp,
    frame: u64,
    framing: Framing,
    decoder: Decoder,
    decoded: u64,
    body: RespBody,
    truncated: bool,
}

#[derive(Debug)]
struct Pending {
    req: HttpRequest,
    req_frame: u64,
    req_framing: Option<Framing>,
    resp: Option<Resp>,
    last_ts: Timestamp,
    notes: Vec<String>,
    truncated: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body,
    /// Lost framing: skip to what looks like the next message.
    Resync,
    /// Nothing more to read in this direction (upgrade, fatal error).
    Dead,
}

#[derive(Debug)]
struct Side {
    state: State,
    head: Vec<u8>,
    head_ts: Timestamp,
    head_frame: u64,
}

impl Side {
    fn new() -> Side {
        Side {
            state: State::Head,
            head: Vec::new(),
            head_ts: Timestamp(0),
            head_frame: 0,
        }
    }
}

/// What the connection layer passes in besides bytes.
pub struct Ctx<'a> {
    pub problems: &'a mut Vec<(Locator, String)>,
    /// What a flow was, when it is no fault of the capture (TLS, a mid-connection start).
    pub notices: &'a mut Vec<(Locator, String)>,
    pub out: &'a mut Vec<Exchange>,
}

/// One HTTP/1.1 connection.
#[derive(Debug)]
pub struct Http1 {
    caps: Caps,
    /// `server-ip:port`, for request URLs without a Host header.
    server: String,
    client: Side,
    srv: Side,
    pending: VecDeque<Pending>,
    client_fin_first: bool,
    server_done: bool,
}

impl Http1 {
    pub fn new(caps: Caps, server: String) -> Http1 {
        Http1 {
            caps,
            server,
            client: Side::new(),
            srv: Side::new(),
            pending: VecDeque::new(),
            client_fin_first: false,
            server_done: false,
        }
    }

    /// Bytes from the client, in stream order.
    pub fn client_bytes(&mut self, mut input: &[u8], ts: Timestamp, frame: u64, cx: &mut Ctx) {
        if let Some(p) = self.pending.back_mut() {
            if self.client.state == State::Body {
                p.last_ts = ts;
            }
        }
        while !input.is_empty() {
            match self.client.state {
                State::Dead => return,
                State::Resync => match find_method(input) {
                    Some(at) => {
                        input = input.get(at..).unwrap_or(&[]);
                        self.client.state = State::Head;
                    }
                    None => return,
                },
                State::Head => {
                    let Some((head, used)) = self.head(true, input, ts, frame, cx) else {
                        return;
                    };
                    input = input.get(used..).unwrap_or(&[]);
                    let Head::Request(req, framing) = head else {
                        return;
                    };
                    if self.pending.len() >= PENDING_CAP {
                        cx.problems.push((
                            Locator::Frames {
                                request: self.client.head_frame,
                                response: None,
                            },
                            format!("more than {PENDING_CAP} requests wait for responses on one connection; the rest of this client stream is not read"),
                        ));
                        self.client.state = State::Dead;
                        return;
                    }
                    let done = matches!(framing, Framing::Length(0));
                    self.pending.push_back(Pending {
                        req,
                        // Until the body is whole: the frame where the head began.
                        req_frame: if done { frame } else { self.client.head_frame },
                        req_framing: (!done).then_some(framing),
                        resp: None,
                        last_ts: ts,
                        notes: Vec::new(),
                        truncated: false,
                    });
                    self.client.state = if done { State::Head } else { State::Body };
                }
                State::Body => {
                    let cap = self.caps.body;
                    let Some(p) = self.pending.back_mut() else {
                        self.client.state = State::Head;
                        continue;
                    };
                    let Some(framing) = p.req_framing.as_mut() else {
                        self.client.state = State::Head;
                        continue;
                    };
                    let body = &mut p.req.body;
                    let mut over = false;
                    let r = framing.push(input, &mut |b| {
                        let room = cap.saturating_sub(body.len());
                        over |= b.len() > room;
                        body.extend_from_slice(b.get(..b.len().min(room)).unwrap_or(&[]));
                    });
                    if over && !p.truncated {
                        p.truncated = true;
                        p.notes
                            .push(format!("request body cut at the {cap}-byte cap"));
                    }
                    match r {
                        Ok(f) => {
                            input = input.get(f.used..).unwrap_or(&[]);
                            if f.done {
                                // Wireshark shows a request at the frame that
                                // completed it; so does the locator.
                                p.req_frame = frame;
                                p.req_framing = None;
                                self.client.state = State::Head;
                            }
                        }
                        Err(e) => {
                            cx.problems.push((
                                Locator::Frames {
                                    request: p.req_frame,
                                    response: None,
                                },
                                format!("request body: {e}"),
                            ));
                            p.req_framing = None;
                            self.client.state = State::Resync;
                        }
                    }
                }
            }
        }
    }

    /// Bytes from the server, in stream order.
    pub fn server_bytes(&mut self, mut input: &[u8], ts: Timestamp, frame: u64, cx: &mut Ctx) {
        while !input.is_empty() {
            match self.srv.state {
                State::Dead => return,
                State::Resync => match memchr::memmem::find(input, b"HTTP/1.") {
                    Some(at) => {
                        input = input.get(at..).unwrap_or(&[]);
                        self.srv.state = State::Head;
                    }
                    None => return,
                },
                State::Head => {
                    let Some((head, used)) = self.head(false, input, ts, frame, cx) else {
                        return;
                    };
                    input = input.get(used..).unwrap_or(&[]);
                    let resp = match head {
                        Head::Response(resp) => resp,
                        Head::Interim => continue,
                        Head::Request(..) => return,
                    };
                    if self.pending.is_empty() {
                        self.pending.push_back(Pending {
                            req: HttpRequest::default(),
                            req_frame: resp.frame,
                            req_framing: None,
                            resp: None,
                            last_ts: ts,
                            notes: vec!["a response whose request is not in the capture".into()],
                            truncated: false,
                        });
                    }
                    let bodyless = matches!(resp.framing, Framing::Length(0));
                    if let Some(p) = self.pending.front_mut() {
                        p.resp = Some(resp);
                        p.last_ts = ts;
                    }
                    if bodyless {
                        self.emit_front(End::Complete, cx);
                    } else {
                        self.srv.state = State::Body;
                    }
                }
                State::Body => {
                    let Some(p) = self.pending.front_mut() else {
                        self.srv.state = State::Head;
                        continue;
                    };
                    p.last_ts = ts;
                    let Some(resp) = p.resp.as_mut() else {
                        self.srv.state = State::Head;
                        continue;
                    };
                    let caps = self.caps;
                    let mut raw: Vec<u8> = Vec::new();
                    let r = resp.framing.push(input, &mut |b| raw.extend_from_slice(b));
                    resp.absorb(&raw, ts, caps);
                    match r {
                        Ok(f) => {
                            input = input.get(f.used..).unwrap_or(&[]);
                            if f.done {
                                if let Framing::Chunked(c) = &mut resp.framing {
                                    for (n, v) in std::mem::take(&mut c.trailers) {
                                        resp.headers.push(n, v);
                                    }
                                }
                                self.srv.state = State::Head;
                                self.emit_front(End::Complete, cx);
                            }
                        }
                        Err(e) => {
                            cx.problems.push((
                                Locator::Frames {
                                    request: p.req_frame,
                                    response: Some(resp.frame),
                                },
                                format!("response body: {e}"),
                            ));
                            resp.truncated = true;
                            self.srv.state = State::Resync;
                            self.emit_front(End::Truncated, cx);
                        }
                    }
                }
            }
        }
    }

    /// Parses a head from `input` (joined with any partial head held). Returns the
    /// head and how many bytes of `input` it used, or `None` when more are needed
    /// or the head was bad (then the side is resyncing).
    fn head(
        &mut self,
        request: bool,
        input: &[u8],
        ts: Timestamp,
        frame: u64,
        cx: &mut Ctx,
    ) -> Option<(Head, usize)> {
        let side = if request {
            &mut self.client
        } else {
            &mut self.srv
        };
        if side.head.is_empty() {
            side.head_ts = ts;
            side.head_frame = frame;
        }
        let old = side.head.len();
        let parsed = if old == 0 {
            parse_head(request, input)
        } else {
            side.head.extend_from_slice(input);
            parse_head(request, &side.head)
        };
        match parsed {
            Ok(Some((n, raw))) => {
                side.head.clear();
                let used = n.saturating_sub(old);
                let (ts, frame) = (side.head_ts, side.head_frame);
                Some((self.build(raw, ts, frame, cx), used))
            }
            Ok(None) => {
                if old == 0 {
                    side.head.extend_from_slice(input);
                }
                if side.head.len() > HEAD_CAP {
                    let locator = Locator::Frames {
                        request: side.head_frame,
                        response: None,
                    };
                    side.head.clear();
                    side.state = State::Resync;
                    cx.problems.push((
                        locator,
                        format!("HTTP head longer than {HEAD_CAP} bytes; skipped"),
                    ));
                }
                None
            }
            Err(e) => {
                let locator = Locator::Frames {
                    request: side.head_frame,
                    response: None,
                };
                side.head.clear();
                side.state = State::Resync;
                cx.problems.push((
                    locator,
                    format!(
                        "not a valid HTTP/1.1 {}: {e}; skipping to the next message",
                        if request { "request" } else { "response" }
                    ),
                ));
                None
            }
        }
    }

    fn build(&mut self, raw: RawHead, ts: Timestamp, frame: u64, cx: &mut Ctx) -> Head {
        match raw {
            RawHead::Request {
                method,
                target,
                headers,
            } => {
                let framing = request_framing(&headers);
                let url = if target.starts_with('/') {
                    let host = headers.get("host").unwrap_or(&self.server);
                    format!("http://{host}{target}")
                } else {
                    target
                };
                Head::Request(
                    HttpRequest {
                        method,
                        url,
                        headers,
                        body: Vec::new(),
                        ts: Some(ts),
                    },
                    framing,
                )
            }
            RawHead::Response { status, headers } => {
                if (100..200).contains(&status) && status != 101 {
                    // 100 Continue and other interim responses: the final one follows.
                    return Head::Interim;
                }
                let method = self
                    .pending
                    .front()
                    .map(|p| p.req.method.as_str())
                    .unwrap_or("");
                if status == 101 || (method == "CONNECT" && (200..300).contains(&status)) {
                    cx.problems.push((
                        Locator::Frames {
                            request: self.pending.front().map(|p| p.req_frame).unwrap_or(frame),
                            response: Some(frame),
                        },
                        format!(
                            "HTTP {status}: the connection switched protocols ({}); the rest of it is not read",
                            headers.get("upgrade").unwrap_or("tunnel")
                        ),
                    ));
                    self.srv.state = State::Dead;
                    self.client.state = State::Dead;
                }
                let framing = if method == "HEAD" || status == 204 || status == 304 || status == 101
                {
                    Framing::Length(0)
                } else {
                    response_framing(&headers)
                };
                let decoder = match headers
                    .get("content-encoding")
                    .map(|v| v.trim().to_ascii_lowercase())
                    .as_deref()
                {
                    None | Some("") | Some("identity") => Decoder::Identity,
                    Some("gzip") | Some("x-gzip") => {
                        Decoder::Gzip(Box::new(flate2::write::GzDecoder::new(Vec::new())))
                    }
                    Some("deflate") => Decoder::DeflateUnknown,
                    Some(other) => {
                        cx.problems.push((
                            Locator::Frames {
                                request: self.pending.front().map(|p| p.req_frame).unwrap_or(frame),
                                response: Some(frame),
                            },
                            format!("Content-Encoding {other:?} is not decoded (gzip and deflate are); the body is kept as sent"),
                        ));
                        Decoder::Identity
                    }
                };
                let body = if framing_is_empty(&framing) {
                    RespBody::None
                } else if headers.media_type().as_deref() == Some("text/event-stream") {
                    RespBody::Sse {
                        parser: Box::new(SseParser::new(self.caps.event)),
                        events: Vec::new(),
                        bytes: 0,
                        resync: false,
                        base: 0,
                        problems: Vec::new(),
                        capped: false,
                    }
                } else {
                    RespBody::Bytes(Vec::new())
                };
                Head::Response(Resp {
                    status,
                    headers,
                    ts,
                    frame,
                    framing,
                    decoder,
                    decoded: 0,
                    body,
                    truncated: false,
                })
            }
        }
    }

    /// A hole of `len` bytes in the client stream.
    pub fn client_gap(&mut self, len: u64, cx: &mut Ctx) {
        let _ = cx;
        if self.client.state == State::Body {
            if let Some(p) = self.pending.back_mut() {
                p.truncated = true;
                p.notes
                    .push(format!("{len} request bytes are missing from the capture"));
                if let Some(f) = p.req_framing.as_mut() {
                    if f.skip(len) {
                        return;
                    }
                }
                p.req_framing = None;
            }
        }
        self.client.head.clear();
        if self.client.state != State::Dead {
            self.client.state = State::Resync;
        }
    }

    /// A hole of `len` bytes in the server stream.
    pub fn server_gap(&mut self, len: u64, cx: &mut Ctx) {
        if self.srv.state == State::Body {
            if let Some(resp) = self.pending.front_mut().and_then(|p| p.resp.as_mut()) {
                resp.truncated = true;
                if let RespBody::Sse { resync, .. } = &mut resp.body {
                    *resync = true;
                }
                // Compressed bodies cannot go on past a hole.
                let decodable = matches!(resp.decoder, Decoder::Identity);
                if decodable && resp.framing.skip(len) {
                    return;
                }
                self.emit_front(End::Truncated, cx);
            }
        }
        self.srv.head.clear();
        if self.srv.state != State::Dead {
            self.srv.state = State::Resync;
        }
    }

    /// The client closed its side (FIN delivered in order).
    pub fn client_fin(&mut self) {
        if !self.server_done {
            self.client_fin_first = true;
        }
    }

    /// The server closed its side: a close-delimited body ends here; anything else
    /// still open was cut.
    pub fn server_fin(&mut self, ts: Timestamp, cx: &mut Ctx) {
        self.server_done = true;
        let cut = if self.client_fin_first {
            End::ClientClosed
        } else {
            End::Closed
        };
        if self.srv.state == State::Body {
            if let Some(p) = self.pending.front_mut() {
                p.last_ts = ts;
                if let Some(resp) = p.resp.as_ref() {
                    let end = match (&resp.framing, &resp.body) {
                        (Framing::Close, RespBody::Sse { .. }) => cut,
                        (Framing::Close, _) => End::Complete,
                        _ => cut,
                    };
                    self.emit_front(end, cx);
                }
            }
        }
        self.srv.state = State::Dead;
        self.close_all(cut, ts, cx);
    }

    /// A reset ends everything open. One the client sent, or one that follows the
    /// client's own FIN (the server wrote to a socket the client had closed), means
    /// the client gave up: in 2026-07-28 that is how it cancels.
    pub fn reset(&mut self, by_client: bool, ts: Timestamp, cx: &mut Ctx) {
        let end = if by_client || self.client_fin_first {
            End::ClientClosed
        } else {
            End::Reset
        };
        self.end_all(end, ts, cx);
    }

    /// The capture ended with this connection still open.
    pub fn capture_ended(&mut self, ts: Timestamp, cx: &mut Ctx) {
        let end = if self.client_fin_first {
            End::ClientClosed
        } else {
            End::CaptureEnded
        };
        self.end_all(end, ts, cx);
    }

    fn end_all(&mut self, end: End, ts: Timestamp, cx: &mut Ctx) {
        if self.srv.state == State::Body {
            if let Some(p) = self.pending.front_mut() {
                p.last_ts = p.last_ts.max(ts);
                if p.resp.is_some() {
                    self.emit_front(end, cx);
                }
            }
        }
        self.srv.state = State::Dead;
        self.client.state = State::Dead;
        self.close_all(end, ts, cx);
    }

    /// Emits every request still waiting, without a response.
    fn close_all(&mut self, end: End, ts: Timestamp, cx: &mut Ctx) {
        while let Some(mut p) = self.pending.pop_front() {
            let _ = ts;
            p.resp = None;
            cx.out.push(finish(p, end));
        }
    }

    fn emit_front(&mut self, end: End, cx: &mut Ctx) {
        if let Some(p) = self.pending.pop_front() {
            cx.out.push(finish(p, end));
        }
    }
}

fn framing_is_empty(f: &Framing) -> bool {
    matches!(f, Framing::Length(0))
}

fn find_method(input: &[u8]) -> Option<usize> {
    // A request starts a line: look at the start and after each LF.
    let mut at = 0usize;
    loop {
        let rest = input.get(at..)?;
        if METHODS.iter().any(|m| rest.starts_with(m)) {
            return Some(at);
        }
        at += memchr::memchr(b'\n', rest)? + 1;
    }
}

impl Resp {
    /// Takes raw (still encoded) body bytes.
    fn absorb(&mut self, raw: &[u8], ts: Timestamp, caps: Caps) {
        if raw.is_empty() {
            return;
        }
        let decoded = match self.decoder.write(raw) {
            Ok(d) => d,
            Err(e) => {
                self.truncated = true;
                if let RespBody::Sse { problems, .. } = &mut self.body {
                    problems.push(e);
                }
                return;
            }
        };
        let room = caps.decoded.saturating_sub(self.decoded);
        let keep = (decoded.len() as u64).min(room) as usize;
        if keep < decoded.len() {
            self.truncated = true;
        }
        self.decoded += keep as u64;
        let decoded = decoded.get(..keep).unwrap_or(&[]);
        match &mut self.body {
            RespBody::None => {}
            RespBody::Bytes(buf) => {
                let room = caps.body.saturating_sub(buf.len());
                if decoded.len() > room {
                    self.truncated = true;
                }
                buf.extend_from_slice(decoded.get(..decoded.len().min(room)).unwrap_or(&[]));
            }
            RespBody::Sse {
                parser,
                events,
                bytes,
                resync,
                base,
                problems,
                capped,
            } => {
                let mut data = decoded;
                if *resync {
                    // After a hole, parse again only from the next blank line so no
                    // event is glued from bytes on both sides of the hole.
                    match find_blank_line(data) {
                        Some(after) => {
                            let (old_tail, old_problems) =
                                std::mem::replace(parser.as_mut(), SseParser::new(caps.event))
                                    .finish();
                            if let Some(t) = old_tail {
                                problems.push(format!(
                                    "event cut by bytes missing from the capture: {}",
                                    crate::text::excerpt(&t)
                                ));
                            }
                            problems.extend(old_problems);
                            *bytes += after as u64;
                            *base = *bytes;
                            data = data.get(after..).unwrap_or(&[]);
                            *resync = false;
                        }
                        None => {
                            *bytes += data.len() as u64;
                            return;
                        }
                    }
                }
                *bytes += data.len() as u64;
                let base = *base;
                parser.feed(data, Some(ts), &mut |mut ev| {
                    ev.offset += base;
                    // A stream that never ends (a hostile or a very long-lived one)
                    // must not grow without bound: past the cap only events that may
                    // be a response are kept; notifications are counted, not kept.
                    if events.len() >= MAX_STREAM_EVENTS && !may_be_response(&ev.data) {
                        if !*capped {
                            *capped = true;
                            problems.push(format!(
                                "more than {MAX_STREAM_EVENTS} events on one stream; later notifications were not kept"
                            ));
                        }
                        return;
                    }
                    events.push(ev);
                });
            }
        }
    }
}

fn find_blank_line(b: &[u8]) -> Option<usize> {
    for pat in [&b"\n\n"[..], b"\r\n\r\n", b"\r\r"] {
        if let Some(p) = memchr::memmem::find(b, pat) {
            return Some(p + pat.len());
        }
    }
    None
}

fn finish(p: Pending, end: End) -> Exchange {
    let Pending {
        req,
        req_frame,
        resp,
        last_ts,
        mut notes,
        truncated,
        ..
    } = p;
    let mut end = end;
    let response = resp.map(|r| {
        // Bytes lost from the capture say more than how the connection ended.
        if r.truncated {
            end = End::Truncated;
        }
        let body = match r.body {
            RespBody::None => Body::Bytes(Vec::new()),
            RespBody::Bytes(b) => Body::Bytes(b),
            RespBody::Sse {
                parser,
                events,
                bytes,
                mut problems,
                ..
            } => {
                let (incomplete_tail, more) = parser.finish();
                problems.extend(more);
                Body::Sse(SseBody {
                    events,
                    incomplete_tail,
                    problems,
                    bytes,
                })
            }
        };
        (
            HttpResponse {
                status: r.status,
                headers: r.headers,
                body,
                ts: Some(r.ts),
            },
            r.frame,
        )
    });
    if truncated && response.is_none() {
        notes.push("the request was cut in the capture".into());
    }
    let locator = Locator::Frames {
        request: req_frame,
        response: response.as_ref().map(|(_, f)| *f),
    };
    let end_ts = Some(last_ts.max(response.as_ref().and_then(|(r, _)| r.ts).unwrap_or(last_ts)));
    Exchange {
        locator,
        payload: Payload::Http(HttpExchange {
            request: req,
            response: response.map(|(r, _)| r),
            end,
            end_ts,
            recorder_note: (!notes.is_empty()).then(|| notes.join("; ")),
            tcp: None,
        }),
    }
}

enum Head {
    Request(HttpRequest, Framing),
    Response(Resp),
    Interim,
}

enum RawHead {
    Request {
        method: String,
        target: String,
        headers: Headers,
    },
    Response {
        status: u16,
        headers: Headers,
    },
}

/// `Ok(None)`: incomplete. `Ok(Some((len, head)))`: a head of `len` bytes.
fn parse_head(request: bool, buf: &[u8]) -> Result<Option<(usize, RawHead)>, String> {
    let mut n_headers = 64usize;
    loop {
        let mut storage = vec![httparse::EMPTY_HEADER; n_headers];
        let mut cfg = httparse::ParserConfig::default();
        cfg.allow_spaces_after_header_name_in_responses(true)
            .allow_obsolete_multiline_headers_in_responses(true)
            .allow_multiple_spaces_in_request_line_delimiters(true)
            .allow_multiple_spaces_in_response_status_delimiters(true)
            .ignore_invalid_headers_in_responses(true)
            .ignore_invalid_headers_in_requests(true);
        let res = if request {
            let mut r = httparse::Request::new(&mut storage);
            match cfg.parse_request(&mut r, buf) {
                Ok(httparse::Status::Complete(n)) => Ok(Some((
                    n,
                    RawHead::Request {
                        method: r.method.unwrap_or("").to_owned(),
                        target: r.path.unwrap_or("").to_owned(),
                        headers: owned(r.headers),
                    },
                ))),
                Ok(httparse::Status::Partial) => Ok(None),
                Err(e) => Err(e),
            }
        } else {
            let mut r = httparse::Response::new(&mut storage);
            match cfg.parse_response(&mut r, buf) {
                Ok(httparse::Status::Complete(n)) => Ok(Some((
                    n,
                    RawHead::Response {
                        status: r.code.unwrap_or(0),
                        headers: owned(r.headers),
                    },
                ))),
                Ok(httparse::Status::Partial) => Ok(None),
                Err(e) => Err(e),
            }
        };
        match res {
            Err(httparse::Error::TooManyHeaders) if n_headers < 1024 => n_headers *= 4,
            Err(e) => return Err(e.to_string()),
            Ok(v) => return Ok(v),
        }
    }
}

fn owned(h: &[httparse::Header<'_>]) -> Headers {
    Headers(
        h.iter()
            .map(|h| {
                (
                    h.name.to_owned(),
                    String::from_utf8_lossy(h.value).trim().to_owned(),
                )
            })
            .collect(),
    )
}

fn chunked_last(headers: &Headers) -> Option<bool> {
    let te = headers.get("transfer-encoding")?;
    Some(
        te.rsplit(',')
            .next()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("chunked")),
    )
}

fn content_length(headers: &Headers) -> Option<u64> {
    headers.get("content-length")?.trim().parse().ok()
}

fn request_framing(headers: &Headers) -> Framing {
    match chunked_last(headers) {
        Some(true) => Framing::Chunked(Chunked::default()),
        _ => Framing::Length(content_length(headers).unwrap_or(0)),
    }
}

fn response_framing(headers: &Headers) -> Framing {
    match chunked_last(headers) {
        Some(true) => Framing::Chunked(Chunked::default()),
        Some(false) => Framing::Close,
        None => match content_length(headers) {
            Some(n) => Framing::Length(n),
            None => Framing::Close,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts() {
        assert_eq!(classify_start(b"PO", false), None);
        assert_eq!(classify_start(b"POST /", false), Some(Start::Request));
        assert_eq!(
            classify_start(b"HTTP/1.1 200", false),
            Some(Start::Response)
        );
        assert_eq!(classify_start(b"\x16\x03\x01", false), Some(Start::Tls));
        assert_eq!(
            classify_start(b"PRI * HTTP/2.0\r\n", false),
            Some(Start::Http2Preface)
        );
        assert_eq!(classify_start(b"SSH-2.0", false), Some(Start::Other));
        assert_eq!(classify_start(b"PO", true), Some(Start::Other));
    }

    #[test]
    fn chunked_with_extensions_and_trailers_in_any_split() {
        let wire = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Sum: 7\r\n\r\nNEXT";
        for split in 1..wire.len() {
            let mut c = Chunked::default();
            let mut body = Vec::new();
            let (a, b) = wire.split_at(split);
            let f1 = c.push(a, &mut |x| body.extend_from_slice(x)).unwrap();
            let mut used = f1.used;
            if !f1.done {
                let f2 = c.push(b, &mut |x| body.extend_from_slice(x)).unwrap();
                used += f2.used;
                assert!(f2.done);
            }
            assert_eq!(body, b"Wikipedia");
            assert_eq!(used, wire.len() - 4);
            assert_eq!(c.trailers, vec![("X-Sum".to_owned(), "7".to_owned())]);
        }
        let mut c = Chunked::default();
        assert!(c.push(b"zz\r\n", &mut |_| {}).is_err());
    }
}
