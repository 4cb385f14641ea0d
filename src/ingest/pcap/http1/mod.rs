//! HTTP/1.1 over one reassembled TCP connection: a push state machine per direction
//! that finds messages, pairs responses with requests in order, and turns each
//! finished pair into an `Exchange`. The concerns live apart: heads (`head`, on
//! `httparse`), body framing (`framing`), and bodies with their decoding and SSE
//! streams (`body`, on the shared bounded decoder).
//!
//! What it owns: message boundaries, the request↔response pairing, resynchronising
//! after a bad head on the same bytes (so the result does not depend on how the stream
//! was cut into segments), and how each exchange ended. What it does not: TCP (see
//! `tcp`), JSON-RPC meaning (later stages).

pub(super) mod body;
mod framing;
mod head;

pub use head::{classify_start, Start};

use crate::ingest::inflate::Coding;
use crate::ingest::{Kind, Level, Problem};
use crate::model::{
    Body, End, Exchange, Headers, HttpExchange, HttpRequest, HttpResponse, Locator, Payload,
    SseBody, StreamPart, TcpTrail, Timestamp,
};
use crate::sse::Budget;
use body::Content;
use framing::{request_framing, response_framing, Framing};
use head::{find_method, find_status, head_end, parse_head, Next, RawHead};
use std::collections::VecDeque;
use std::net::SocketAddr;

/// Largest request or response head read.
const HEAD_CAP: usize = 64 << 10;
/// Most requests waiting for their responses on one connection (pipelining).
const PENDING_CAP: usize = 1024;

/// Caps for one connection, from `Limits`.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    /// Largest request or non-SSE response body kept (after decoding).
    pub body: usize,
    /// Most bytes one body may decode to.
    pub decoded: u64,
    /// What one event stream may keep.
    pub sse: Budget,
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Headers,
    ts: Timestamp,
    frame: u64,
    framing: Framing,
    content: Content,
}

#[derive(Debug)]
struct Pending {
    req: HttpRequest,
    req_frame: u64,
    req_framing: Option<Framing>,
    resp: Option<Resp>,
    last_ts: Timestamp,
    notes: Vec<String>,
    /// Diagnostics about the request, reported with the exchange.
    diags: Vec<body::Note>,
    truncated: bool,
    /// The request body's share of the capture's gauge, given back with the exchange.
    req_charge: body::RequestCharge,
    /// A pipelined request's head, counted with the partial heads: a client may send
    /// a thousand requests on a connection before any is answered, and a capture of
    /// thousands of such connections would hold every head.
    head_charge: body::Charge,
}

impl Pending {
    fn new(req: HttpRequest, req_frame: u64, last_ts: Timestamp) -> Pending {
        Pending {
            req,
            req_frame,
            req_framing: None,
            resp: None,
            last_ts,
            notes: Vec::new(),
            diags: Vec::new(),
            truncated: false,
            req_charge: Default::default(),
            head_charge: Default::default(),
        }
    }
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
    /// A head that began in an earlier segment.
    head: Vec<u8>,
    /// How far `head` was searched for its end: each byte is scanned once, however
    /// many segments the head comes in.
    scanned: usize,
    /// The first line was complete and valid when last looked at.
    first_line_ok: bool,
    /// While skipping to the next message: the next byte starts a line.
    line_start: bool,
    head_ts: Timestamp,
    head_frame: u64,
    /// `head`'s share of the capture's partial heads (`body::Gauge`).
    head_charge: body::Charge,
}

impl Side {
    fn new() -> Side {
        Side {
            state: State::Head,
            head: Vec::new(),
            scanned: 0,
            first_line_ok: false,
            line_start: true,
            head_ts: Timestamp(0),
            head_frame: 0,
            head_charge: body::Charge::default(),
        }
    }

    fn clear_head(&mut self) {
        if self.head.capacity() > KEPT_HEAD {
            // A long head's buffer is not kept for the next, small one.
            self.head = Vec::new();
        } else {
            self.head.clear();
        }
        self.scanned = 0;
        self.first_line_ok = false;
        self.head_charge.release();
    }

    /// Counts what `head` holds against the capture's partial heads.
    fn charge_head(&mut self, gauge: &body::Gauge) {
        self.head_charge.head(gauge, self.head.capacity());
    }
}

/// A head buffer up to this size is kept for the connection's next head.
const KEPT_HEAD: usize = 4 << 10;

/// What the connection layer passes in besides bytes.
pub struct Ctx<'a> {
    /// Problems and notices, typed.
    pub diags: &'a mut Vec<Problem>,
    pub out: &'a mut Vec<Exchange>,
    /// What the capture's bodies in flight keep, over all connections.
    pub gauge: &'a body::Gauge,
}

impl Ctx<'_> {
    fn problem(&mut self, kind: Kind, locator: Locator, message: String) {
        self.diags
            .push(Problem::of(Level::Problem, kind, locator, message));
    }
}

/// What reading a head from the front of the input gave.
#[allow(clippy::large_enum_variant)] // one per head, matched at once, never stored
enum Step {
    /// A whole head, and how many bytes of the input it used.
    Done(Head, usize),
    /// The input ends inside the head; it is held.
    More,
    /// Not a head. Reading goes on from the head's second byte, on the same bytes:
    /// `held` are its bytes from earlier segments after the first; when there are none,
    /// reading goes on at `skip` bytes into the input.
    Bad { held: Vec<u8>, skip: usize },
    /// Bytes that are no head (blank lines before one, or a head past `HEAD_CAP`,
    /// reported): reading goes on after them.
    Skip(usize),
}

#[allow(clippy::large_enum_variant)] // one per head, moved at once
enum Head {
    Request(HttpRequest, Framing),
    Response(Resp),
    Interim,
}

/// One HTTP/1.1 connection.
#[derive(Debug)]
pub struct Http1 {
    caps: Caps,
    /// `server-ip:port`, for request URLs without a Host header.
    server: SocketAddr,
    client: Side,
    srv: Side,
    pending: VecDeque<Pending>,
    closing: Closing,
    /// Head bytes examined (scanned for an end or parsed): tests check it stays
    /// linear in the bytes of the heads, however they are segmented.
    pub head_work: u64,
    /// Set by a `101` to `Upgrade: h2c`: the connection goes on as HTTP/2.
    h2c: Option<H2cUpgrade>,
}

/// A connection that switched to HTTP/2 by `Upgrade: h2c` (RFC 7540 §3.2): the
/// upgraded request (answered on HTTP/2 stream 1) and the server's bytes after the
/// `101` head in the same segment, already HTTP/2.
#[derive(Debug)]
pub struct H2cUpgrade {
    pub request: HttpRequest,
    pub req_frame: u64,
    pub rest: Vec<u8>,
}

impl Http1 {
    pub fn new(caps: Caps, server: SocketAddr) -> Http1 {
        Http1 {
            caps,
            server,
            client: Side::new(),
            srv: Side::new(),
            pending: VecDeque::new(),
            closing: Closing::default(),
            head_work: 0,
            h2c: None,
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
                State::Resync => match find_method(input, self.client.line_start) {
                    Next::At(at) => {
                        input = &input[at..];
                        self.client.state = State::Head;
                    }
                    Next::Maybe(at) => {
                        // A method cut by the segment's end: hold it as a head's start.
                        self.client.state = State::Head;
                        self.client.clear_head();
                        self.client.head.extend_from_slice(&input[at..]);
                        self.client.charge_head(cx.gauge);
                        self.client.head_ts = ts;
                        self.client.head_frame = frame;
                        return;
                    }
                    Next::None => {
                        self.client.line_start = input.last() == Some(&b'\n');
                        return;
                    }
                },
                State::Head => {
                    let (head, used) = match self.head(true, input, ts, frame, cx) {
                        Step::Done(head, used) => (head, used),
                        Step::More => return,
                        Step::Skip(used) => {
                            input = &input[used..];
                            continue;
                        }
                        Step::Bad { held, skip } if held.is_empty() => {
                            input = &input[skip..];
                            continue;
                        }
                        Step::Bad { mut held, .. } => {
                            // The bad head began in an earlier segment: look again at
                            // those bytes and this input together, as one stream.
                            held.extend_from_slice(input);
                            self.client_bytes(&held, ts, frame, cx);
                            return;
                        }
                    };
                    input = &input[used..];
                    let Head::Request(req, framing) = head else {
                        return;
                    };
                    // Only requests sent before the one ahead was answered are
                    // counted: a client that waits for each answer holds one head.
                    let held = if self.pending.is_empty() {
                        0
                    } else {
                        req.url.len() + req.headers.heap_bytes() as usize + 64
                    };
                    let why = if self.pending.len() >= PENDING_CAP {
                        Some(format!("cap: more than {PENDING_CAP} requests wait for responses on one connection; the rest of this client stream is not read (a fixed limit)"))
                    } else if held > cx.gauge.head_room() {
                        Some(format!("cap: the partial and pipelined request heads held over all connections reached {} MiB; the rest of this client stream is not read (a fixed limit)", cx.gauge.heads_budget() >> 20))
                    } else {
                        None
                    };
                    if let Some(why) = why {
                        cx.problem(
                            Kind::Cap,
                            Locator::Frames {
                                request: self.client.head_frame,
                                response: None,
                            },
                            why,
                        );
                        self.client.state = State::Dead;
                        return;
                    }
                    let done = matches!(framing, Framing::Length(0));
                    // Until the body is whole: the frame where the head began.
                    let at = if done { frame } else { self.client.head_frame };
                    let mut p = Pending::new(req, at, ts);
                    p.req_framing = (!done).then_some(framing);
                    if held > 0 {
                        p.head_charge.head(cx.gauge, held);
                    }
                    self.pending.push_back(p);
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
                    let (body, charge) = (&mut p.req.body, &mut p.req_charge);
                    let mut cut = None;
                    let gauge = cx.gauge;
                    let r = framing.push(input, &mut |b| {
                        if let Some(c) = charge.push(body, b, cap, gauge) {
                            cut = Some(c);
                        }
                    });
                    if let Some((note, diag)) = cut {
                        p.truncated = true;
                        p.notes.push(note);
                        p.diags.push(diag);
                    }
                    match r {
                        Ok(f) => {
                            input = &input[f.used..];
                            if f.done {
                                // Wireshark shows a request at the frame that
                                // completed it; so does the locator.
                                p.req_frame = frame;
                                p.req_framing = None;
                                self.client.state = State::Head;
                            }
                        }
                        Err(e) => {
                            cx.problem(
                                Kind::Malformed,
                                Locator::Frames {
                                    request: p.req_frame,
                                    response: None,
                                },
                                format!("request body: {e}"),
                            );
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
                State::Resync => match find_status(input) {
                    Next::At(at) => {
                        input = &input[at..];
                        self.srv.state = State::Head;
                    }
                    Next::Maybe(at) => {
                        self.srv.state = State::Head;
                        self.srv.clear_head();
                        self.srv.head.extend_from_slice(&input[at..]);
                        self.srv.charge_head(cx.gauge);
                        self.srv.head_ts = ts;
                        self.srv.head_frame = frame;
                        return;
                    }
                    Next::None => return,
                },
                State::Head => {
                    let (head, used) = match self.head(false, input, ts, frame, cx) {
                        Step::Done(head, used) => (head, used),
                        Step::More => return,
                        Step::Skip(used) => {
                            input = &input[used..];
                            continue;
                        }
                        Step::Bad { held, skip } if held.is_empty() => {
                            input = &input[skip..];
                            continue;
                        }
                        Step::Bad { mut held, .. } => {
                            held.extend_from_slice(input);
                            self.server_bytes(&held, ts, frame, cx);
                            return;
                        }
                    };
                    input = &input[used..];
                    if let Some(u) = self.h2c.as_mut() {
                        u.rest = input.to_vec();
                        return;
                    }
                    let resp = match head {
                        Head::Response(resp) => resp,
                        Head::Interim => continue,
                        Head::Request(..) => return,
                    };
                    if self.pending.is_empty() {
                        let mut p = Pending::new(HttpRequest::default(), resp.frame, ts);
                        p.notes
                            .push("a response whose request is not in the capture".into());
                        self.pending.push_back(p);
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
                    let req_frame = p.req_frame;
                    let Some(resp) = p.resp.as_mut() else {
                        self.srv.state = State::Head;
                        continue;
                    };
                    let Resp {
                        framing, content, ..
                    } = resp;
                    // Body bytes go straight to the decoder: no copy of the segment.
                    let gauge = cx.gauge;
                    let r = framing.push(input, &mut |b| content.absorb(b, ts, gauge));
                    match r {
                        Ok(f) if !f.done => {
                            input = &input[f.used..];
                            self.emit_part(cx);
                        }
                        Ok(f) => {
                            input = &input[f.used..];
                            if let Framing::Chunked(c) = framing {
                                for (n, v) in std::mem::take(&mut c.trailers) {
                                    resp.headers.push(n, v);
                                }
                            }
                            self.srv.state = State::Head;
                            self.emit_front(End::Complete, cx);
                        }
                        Err(e) => {
                            cx.problem(
                                Kind::Malformed,
                                Locator::Frames {
                                    request: req_frame,
                                    response: Some(resp.frame),
                                },
                                format!("response body: {e}"),
                            );
                            resp.content.truncated = true;
                            self.srv.state = State::Resync;
                            self.emit_front(End::Truncated, cx);
                        }
                    }
                }
            }
        }
    }

    /// Reads a head from the front of `input` (after any partial head held). The end
    /// of the head is searched once per byte; `httparse` runs on the first line once it
    /// is complete (to refuse a bad start early) and on the whole head when it is there.
    fn head(
        &mut self,
        request: bool,
        input: &[u8],
        ts: Timestamp,
        frame: u64,
        cx: &mut Ctx,
    ) -> Step {
        let side = if request {
            &mut self.client
        } else {
            &mut self.srv
        };
        if side.head.is_empty() {
            // Empty lines before a message are ignored (RFC 9112 §2.2); skipping them
            // here keeps the head-end scan from taking them for a head's end.
            let blank = input
                .iter()
                .take_while(|&&b| b == b'\r' || b == b'\n')
                .count();
            if blank > 0 {
                return Step::Skip(blank);
            }
            side.head_ts = ts;
            side.head_frame = frame;
            side.scanned = 0;
            side.first_line_ok = false;
        }
        let old = side.head.len();
        // Never hold more than the cap (plus the bytes that could end a head).
        let take = input.len().min((HEAD_CAP + 4).saturating_sub(old));
        let buf: &[u8] = if old == 0 {
            &input[..take]
        } else {
            side.head.extend_from_slice(&input[..take]);
            &side.head
        };
        let found = head_end(buf, side.scanned);
        self.head_work += (buf.len() - side.scanned.saturating_sub(2).min(buf.len())) as u64;
        let parsed = match found {
            Ok(end) => {
                self.head_work += end as u64;
                parse_head(request, &buf[..end])
            }
            Err(scanned) => {
                side.scanned = scanned;
                if let (false, Some(nl)) = (side.first_line_ok, memchr::memchr(b'\n', buf)) {
                    // Once, when the first line is complete: a bad start is refused now
                    // rather than after 64 KiB of junk. That line alone: the headers
                    // after it are checked when the head ends, and parsing them here
                    // too was half the cost of a connection that never sends more.
                    side.first_line_ok = true;
                    self.head_work += (nl + 1) as u64;
                    match parse_head(request, &buf[..=nl]) {
                        Err(e) => Err(e),
                        Ok(_) => Ok(None),
                    }
                } else {
                    Ok(None)
                }
            }
        };
        let locator = Locator::Frames {
            request: side.head_frame,
            response: None,
        };
        match parsed {
            Ok(Some((n, raw))) => {
                side.clear_head();
                let used = n.saturating_sub(old).min(input.len());
                let (ts, frame) = (side.head_ts, side.head_frame);
                Step::Done(self.build(raw, ts, frame, cx), used)
            }
            Ok(None)
                if buf.len() > HEAD_CAP.min(side.head_charge.bytes() + cx.gauge.head_room()) =>
            {
                // Past its own cap, or past the room the capture's partial heads
                // have left: skipped either way, and said which.
                let why = if buf.len() > HEAD_CAP {
                    format!("cap: HTTP head longer than {HEAD_CAP} bytes; skipped (a fixed limit)")
                } else {
                    format!("cap: the partial HTTP heads held over all connections reached {} MiB; this head was skipped (a fixed limit)", cx.gauge.heads_budget() >> 20)
                };
                let line_start = buf.last() == Some(&b'\n');
                side.clear_head();
                side.state = State::Resync;
                side.line_start = line_start;
                cx.problem(Kind::Cap, locator, why);
                Step::Skip(take)
            }
            Ok(None) => {
                if old == 0 {
                    if side.head.capacity() == 0 {
                        // A connection's first partial head (every flow of a capture
                        // of many short ones): one allocation of its size, no growth.
                        side.head = input[..take].to_vec();
                    } else {
                        side.head.extend_from_slice(&input[..take]);
                    }
                }
                side.charge_head(cx.gauge);
                Step::More
            }
            Err(e) => {
                let mut held = std::mem::take(&mut side.head);
                held.truncate(old);
                if !held.is_empty() {
                    held.remove(0);
                }
                side.clear_head();
                side.state = State::Resync;
                // Skipping resumes at the bad head's second byte: inside a line.
                side.line_start = false;
                cx.problem(
                    Kind::Malformed,
                    locator,
                    format!(
                        "not a valid HTTP/1.1 {}: {e}; skipping to the next message",
                        if request { "request" } else { "response" }
                    ),
                );
                // From the second byte of the bad head: in the input when it began
                // there, else in what was held (then nothing of the input is skipped).
                let skip = usize::from(old == 0);
                Step::Bad { held, skip }
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
                    match headers.get("host") {
                        Some(host) => ["http://", host, &target].concat(),
                        None => format!("http://{}{target}", self.server),
                    }
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
                let h2c = status == 101
                    && headers
                        .get("upgrade")
                        .is_some_and(|u| u.trim().eq_ignore_ascii_case("h2c"));
                if h2c {
                    if let Some(p) = self.pending.pop_front() {
                        self.srv.state = State::Dead;
                        self.client.state = State::Dead;
                        self.h2c = Some(H2cUpgrade {
                            request: p.req,
                            req_frame: p.req_frame,
                            rest: Vec::new(),
                        });
                        return Head::Interim;
                    }
                }
                let method = self
                    .pending
                    .front()
                    .map(|p| p.req.method.as_str())
                    .unwrap_or("");
                let locator = Locator::Frames {
                    request: self.pending.front().map(|p| p.req_frame).unwrap_or(frame),
                    response: Some(frame),
                };
                if status == 101 || (method == "CONNECT" && (200..300).contains(&status)) {
                    cx.problem(
                        Kind::Skipped,
                        locator.clone(),
                        format!(
                            "HTTP {status}: the connection switched protocols ({}); the rest of it is not read",
                            headers.get("upgrade").unwrap_or("tunnel")
                        ),
                    );
                    self.srv.state = State::Dead;
                    self.client.state = State::Dead;
                }
                let framing = if method == "HEAD" || status == 204 || status == 304 || status == 101
                {
                    Framing::Length(0)
                } else {
                    response_framing(&headers)
                };
                let coding = match Coding::from_header(headers.get("content-encoding")) {
                    Ok(c) => c,
                    Err(other) => {
                        cx.problem(
                            Kind::Skipped,
                            locator,
                            format!("Content-Encoding {other:?} is not decoded (gzip and deflate are); the body is kept as sent"),
                        );
                        None
                    }
                };
                let bodyless = matches!(framing, Framing::Length(0));
                let content = Content::answering(method, &headers, coding, bodyless, self.caps);
                Head::Response(Resp {
                    status,
                    headers,
                    ts,
                    frame,
                    framing,
                    content,
                })
            }
        }
    }

    /// The switch to HTTP/2, once a `101` to `Upgrade: h2c` was read.
    pub fn take_h2c(&mut self) -> Option<H2cUpgrade> {
        self.h2c.take()
    }

    /// A hole of `len` bytes in the client stream.
    pub fn client_gap(&mut self, len: u64) {
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
        self.client.clear_head();
        if self.client.state != State::Dead {
            self.client.state = State::Resync;
            // Where the hole ended is unknown: a line may start right after it.
            self.client.line_start = true;
        }
    }

    /// A hole of `len` bytes in the server stream.
    pub fn server_gap(&mut self, len: u64, cx: &mut Ctx) {
        if self.srv.state == State::Body {
            if let Some(resp) = self.pending.front_mut().and_then(|p| p.resp.as_mut()) {
                // Compressed bodies cannot go on past a hole.
                if resp.content.survives_gap() && resp.framing.skip(len) {
                    return;
                }
                self.emit_front(End::Truncated, cx);
            }
        }
        self.srv.clear_head();
        if self.srv.state != State::Dead {
            self.srv.state = State::Resync;
        }
    }

    /// The client closed its side (FIN delivered in order).
    pub fn client_fin(&mut self) {
        self.closing.client_fin();
    }

    /// The server closed its side: a close-delimited body ends here; anything else
    /// still open was cut.
    pub fn server_fin(&mut self, ts: Timestamp, cx: &mut Ctx) {
        let cut = self.closing.server_fin();
        if self.srv.state == State::Body {
            if let Some(p) = self.pending.front_mut() {
                p.last_ts = ts;
                if let Some(resp) = p.resp.as_ref() {
                    let sse = resp.headers.media_type_is("text/event-stream");
                    let end = match &resp.framing {
                        Framing::Close if sse => cut,
                        Framing::Close => End::Complete,
                        _ => cut,
                    };
                    self.emit_front(end, cx);
                }
            }
        }
        self.srv.state = State::Dead;
        self.close_all(cut, cx);
    }

    /// A reset ends everything open (`Closing::reset` says who it blames).
    pub fn reset(&mut self, by_client: bool, ts: Timestamp, cx: &mut Ctx) {
        self.end_all(self.closing.reset(by_client), ts, cx);
    }

    /// The capture ended with this connection still open.
    pub fn capture_ended(&mut self, ts: Timestamp, cx: &mut Ctx) {
        self.end_all(self.closing.capture_ended(), ts, cx);
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
        self.close_all(end, cx);
    }

    /// Emits every request still waiting, without a response.
    fn close_all(&mut self, end: End, cx: &mut Ctx) {
        while let Some(mut p) = self.pending.pop_front() {
            p.resp = None;
            finish(p, end, cx);
        }
    }

    /// Hands on the front response's event stream so far, if it is handed on in
    /// parts and its part is full (`body::Content::take_part`).
    fn emit_part(&mut self, cx: &mut Ctx) {
        let Some(p) = self.pending.front_mut() else {
            return;
        };
        let Some(resp) = p.resp.as_mut() else {
            return;
        };
        let Some((sse, index)) = resp.content.take_part() else {
            return;
        };
        let head = PartHead {
            req: &p.req,
            req_frame: p.req_frame,
            status: resp.status,
            headers: &resp.headers,
            ts: resp.ts,
            frame: resp.frame,
        };
        head.part(sse, index, p.req_frame, p.last_ts).push(None, cx);
    }

    fn emit_front(&mut self, end: End, cx: &mut Ctx) {
        if let Some(p) = self.pending.pop_front() {
            finish(p, end, cx);
        }
    }
}

/// Turns a finished request (and its response, if any) into an exchange, and reports
/// its diagnostics at its frames.
fn finish(p: Pending, end: End, cx: &mut Ctx) {
    let Pending {
        req,
        req_frame,
        resp,
        last_ts,
        notes,
        mut diags,
        truncated,
        ..
    } = p;
    let mut end = end;
    // The last part of a stream handed on in parts.
    let part = resp
        .as_ref()
        .map(|r| r.content.parts())
        .filter(|&n| n > 0)
        .map(|index| StreamPart {
            stream: req_frame,
            index,
            more: false,
        });
    let response = resp.map(|r| {
        response_of(
            r.status, r.headers, r.ts, r.frame, r.content, &mut end, &mut diags,
        )
    });
    let done = Done {
        req,
        req_frame,
        request_cut: truncated,
        response,
        end,
        last_ts,
        notes,
        part,
    };
    let locator = done.push(None, cx);
    for (level, kind, message) in diags {
        cx.diags
            .push(Problem::of(level, kind, locator.clone(), message));
    }
}

/// Who closed a connection first, which decides how its open exchanges end (HTTP/1.1
/// and HTTP/2 alike).
#[derive(Debug, Default, Clone, Copy)]
pub(in crate::ingest::pcap) struct Closing {
    client_fin_first: bool,
    server_done: bool,
}

impl Closing {
    /// The client closed its side (FIN delivered in order).
    pub fn client_fin(&mut self) {
        if !self.server_done {
            self.client_fin_first = true;
        }
    }

    /// The server closed its side: how what is still open ended.
    pub fn server_fin(&mut self) -> End {
        self.server_done = true;
        if self.client_fin_first {
            End::ClientClosed
        } else {
            End::Closed
        }
    }

    /// A reset. One the client sent, or one that follows the client's own FIN (the
    /// server wrote to a socket the client had closed), means the client gave up: in
    /// 2026-07-28 that is how it cancels.
    pub fn reset(self, by_client: bool) -> End {
        if by_client || self.client_fin_first {
            End::ClientClosed
        } else {
            End::Reset
        }
    }

    /// The capture ended with the connection still open.
    pub fn capture_ended(self) -> End {
        if self.client_fin_first {
            End::ClientClosed
        } else {
            End::CaptureEnded
        }
    }
}

/// A response as an exchange keeps it, with the frame it began in. A body cut in the
/// capture (or by a cap) says more than how the connection ended: `end` becomes
/// `Truncated`. Shared by HTTP/1.1 and HTTP/2.
pub(in crate::ingest::pcap) fn response_of(
    status: u16,
    headers: Headers,
    ts: Timestamp,
    frame: u64,
    content: Content,
    end: &mut End,
    diags: &mut Vec<body::Note>,
) -> (HttpResponse, u64) {
    if content.truncated {
        *end = End::Truncated;
    }
    let (body, more) = content.finish();
    diags.extend(more);
    (
        HttpResponse {
            status,
            headers,
            body,
            ts: Some(ts),
        },
        frame,
    )
}

/// What a part of a stream handed on in parts is made from (HTTP/1.1 and HTTP/2).
pub(in crate::ingest::pcap) struct PartHead<'a> {
    pub req: &'a HttpRequest,
    pub req_frame: u64,
    pub status: u16,
    pub headers: &'a Headers,
    pub ts: Timestamp,
    pub frame: u64,
}

impl PartHead<'_> {
    /// Part `index` (more to come) of the stream `key`, carrying `sse`. Only the first
    /// part repeats the heads: later ones go to the stream it began.
    pub(in crate::ingest::pcap) fn part(
        &self,
        sse: SseBody,
        index: u32,
        key: u64,
        last_ts: Timestamp,
    ) -> Done {
        let (req, headers) = if index == 0 {
            (self.req.clone(), self.headers.clone())
        } else {
            let req = HttpRequest {
                method: self.req.method.clone(),
                ts: self.req.ts,
                ..HttpRequest::default()
            };
            (req, Headers::default())
        };
        let response = HttpResponse {
            status: self.status,
            headers,
            body: Body::Sse(sse),
            ts: Some(self.ts),
        };
        Done {
            req,
            req_frame: self.req_frame,
            request_cut: false,
            response: Some((response, self.frame)),
            end: End::Complete,
            last_ts,
            notes: Vec::new(),
            part: Some(StreamPart {
                stream: key,
                index,
                more: true,
            }),
        }
    }
}

/// A finished request and what answered it, as HTTP/1.1 and HTTP/2 both hand it on.
pub(in crate::ingest::pcap) struct Done {
    pub req: HttpRequest,
    pub req_frame: u64,
    /// Bytes of the request were lost in the capture.
    pub request_cut: bool,
    pub response: Option<(HttpResponse, u64)>,
    pub end: End,
    pub last_ts: Timestamp,
    pub notes: Vec<String>,
    pub part: Option<StreamPart>,
}

impl Done {
    /// Hands the exchange on, located at its request's and response's frames; returns
    /// that location for its diagnostics.
    pub(in crate::ingest::pcap) fn push(self, tcp: Option<TcpTrail>, cx: &mut Ctx) -> Locator {
        let Done {
            req,
            req_frame,
            request_cut,
            response,
            end,
            last_ts,
            mut notes,
            part,
        } = self;
        if request_cut && response.is_none() {
            notes.push("the request was cut in the capture".into());
        }
        let locator = Locator::Frames {
            request: req_frame,
            response: response.as_ref().map(|(_, f)| *f),
        };
        let end_ts =
            Some(last_ts.max(response.as_ref().and_then(|(r, _)| r.ts).unwrap_or(last_ts)));
        cx.out.push(Exchange {
            locator: locator.clone(),
            payload: Payload::Http(HttpExchange {
                request: req,
                response: response.map(|(r, _)| r),
                end,
                end_ts,
                recorder_note: (!notes.is_empty()).then(|| notes.join("; ")),
                tcp,
                part,
            }),
        });
        locator
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> Caps {
        Caps {
            body: 1 << 20,
            decoded: 1 << 30,
            sse: Budget::default(),
        }
    }

    /// Feeds the client stream in the given pieces; the request targets read, the
    /// diagnostics and the head work.
    fn requests(pieces: &[&[u8]]) -> (Vec<String>, Vec<Problem>, u64) {
        let mut h = Http1::new(caps(), "10.0.0.1:80".parse().expect("an address"));
        let (mut diags, mut out) = (Vec::new(), Vec::new());
        let mut cx = Ctx {
            diags: &mut diags,
            out: &mut out,
            gauge: &Default::default(),
        };
        for (i, p) in pieces.iter().enumerate() {
            h.client_bytes(p, Timestamp(i as i64), i as u64 + 1, &mut cx);
        }
        h.capture_ended(Timestamp(0), &mut cx);
        let urls = out
            .iter()
            .map(|x| match &x.payload {
                Payload::Http(h) => h.request.url.clone(),
                _ => String::new(),
            })
            .collect();
        (urls, diags, h.head_work)
    }

    fn kinds(diags: &[Problem]) -> Vec<Kind> {
        diags.iter().map(|d| d.kind).collect()
    }

    const PIPELINED: &[u8] = b"BROKEN\x01 / HTTP/1.1\r\nHost: h\r\n\r\nPOST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}GET /b HTTP/1.1\r\nHost: h\r\n\r\n";

    #[test]
    fn a_bad_head_does_not_hide_the_requests_behind_it_in_any_segmentation() {
        let want = vec!["http://h/a".to_owned(), "http://h/b".to_owned()];
        let (urls, diags, _) = requests(&[PIPELINED]);
        assert_eq!(urls, want);
        assert_eq!(kinds(&diags), [Kind::Malformed]);
        for cut in 1..PIPELINED.len() {
            let (a, b) = PIPELINED.split_at(cut);
            assert_eq!(requests(&[a, b]).0, want, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = PIPELINED.chunks(1).collect();
        assert_eq!(requests(&bytes).0, want, "one byte per segment");
    }

    /// Partial heads count against one budget over all connections: a connection
    /// whose head would pass it has that head skipped, named as a cap; a head that
    /// ends gives its bytes back (its long buffer is not kept), so the next fits.
    #[test]
    fn partial_heads_share_one_budget_over_all_connections() {
        let gauge = body::Gauge::with_heads(usize::MAX, 12_000);
        let (mut diags, mut out) = (Vec::new(), Vec::new());
        let mut cx = Ctx {
            diags: &mut diags,
            out: &mut out,
            gauge: &gauge,
        };
        let addr = "10.0.0.1:80".parse().expect("an address");
        let pad = |n: usize| {
            format!(
                "POST /mcp HTTP/1.1\r\nHost: h\r\nX-Pad: {}\r\n",
                "p".repeat(n)
            )
        };
        let mut a = Http1::new(caps(), addr);
        a.client_bytes(pad(7000).as_bytes(), Timestamp(0), 1, &mut cx);
        assert!(cx.diags.is_empty(), "{:?}", cx.diags);
        let mut b = Http1::new(caps(), addr);
        b.client_bytes(pad(7000).as_bytes(), Timestamp(1), 2, &mut cx);
        assert_eq!(kinds(cx.diags), [Kind::Cap]);
        assert!(
            cx.diags[0].message.contains("partial HTTP heads"),
            "{:?}",
            cx.diags
        );
        a.client_bytes(b"Content-Length: 0\r\n\r\n", Timestamp(2), 3, &mut cx);
        assert_eq!(a.pending.len(), 1, "the first head ended and was read");
        assert_eq!(a.client.head.capacity(), 0, "its long buffer was let go");
        let mut c = Http1::new(caps(), addr);
        c.client_bytes(pad(7000).as_bytes(), Timestamp(3), 4, &mut cx);
        c.client_bytes(b"Content-Length: 0\r\n\r\n", Timestamp(4), 5, &mut cx);
        assert_eq!(
            c.pending.len(),
            1,
            "room again once the first was given back"
        );
        assert_eq!(cx.diags.len(), 1);
    }

    /// Requests pipelined behind one not yet answered count their heads with the
    /// partial heads: past the budget the rest of that client stream is not read,
    /// named as a cap; the first request waiting on a connection is not counted, and
    /// an answered one gives its head back.
    #[test]
    fn pipelined_request_heads_share_the_partial_heads_budget() {
        let gauge = body::Gauge::with_heads(usize::MAX, 20_000);
        let (mut diags, mut out) = (Vec::new(), Vec::new());
        let mut cx = Ctx {
            diags: &mut diags,
            out: &mut out,
            gauge: &gauge,
        };
        let addr = "10.0.0.1:80".parse().expect("an address");
        let request = format!(
            "GET /x HTTP/1.1\r\nHost: h\r\nX-Pad: {}\r\n\r\n",
            "p".repeat(4000)
        );
        let mut a = Http1::new(caps(), addr);
        let burst = request.repeat(10);
        a.client_bytes(burst.as_bytes(), Timestamp(0), 1, &mut cx);
        // 20,000 bytes hold four pipelined heads behind the first.
        assert_eq!(a.pending.len(), 5, "{:?}", cx.diags);
        assert_eq!(kinds(cx.diags), [Kind::Cap]);
        assert!(cx.diags[0].message.contains("pipelined request heads"));
        assert!(
            gauge.used() > 16_000 && gauge.used() <= 20_000,
            "{}",
            gauge.used()
        );
        // A client that waits for each answer holds no count.
        let mut b = Http1::new(caps(), addr);
        b.client_bytes(request.as_bytes(), Timestamp(1), 2, &mut cx);
        assert_eq!(b.pending.len(), 1);
        assert_eq!(cx.diags.len(), 1);
        let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".repeat(5);
        a.server_bytes(&answer, Timestamp(2), 3, &mut cx);
        assert_eq!(a.pending.len(), 0);
        assert_eq!(gauge.used(), 0, "answered heads gave their bytes back");
    }

    #[test]
    fn blank_lines_before_a_request_are_not_a_head() {
        let want = vec!["http://h/x".to_owned()];
        let wire = b"\n\r\nGET /x HTTP/1.1\r\nHost: h\r\n\r\n";
        assert_eq!(requests(&[wire]).0, want);
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(requests(&bytes).0, want);
    }

    #[test]
    fn a_bad_first_line_is_refused_before_its_head_ends() {
        // Only the first line is checked early: a good one waits for the blank line,
        // whatever follows it, and a bad one is refused at its line feed.
        let rest: Vec<u8> = b"Host: h\r\n".repeat(50);
        let bad = [b"BROKEN\x01 / HTTP/1.1\r\n".as_slice(), &rest].concat();
        let good = [b"POST /mcp HTTP/1.1\r\n".as_slice(), &rest].concat();
        let (urls, diags, _) = requests(&[&bad]);
        assert!(urls.is_empty());
        let first = diags.first().expect("a problem");
        assert_eq!(
            (first.kind, &first.locator),
            (
                Kind::Malformed,
                &Locator::Frames {
                    request: 1,
                    response: None
                }
            )
        );
        assert!(
            first.message.starts_with("not a valid HTTP/1.1 request: ")
                && first.message.ends_with("; skipping to the next message"),
            "{}",
            first.message
        );
        let (urls, diags, _) = requests(&[&good]);
        assert!(urls.is_empty());
        assert!(!kinds(&diags).contains(&Kind::Malformed), "{diags:?}");
        let whole = [good.as_slice(), b"\r\n"].concat();
        assert_eq!(requests(&[&whole]).0, ["http://h/mcp"]);
    }

    /// Head work for a request whose head has `n` headers, sent one byte per segment.
    fn head_work(n: usize) -> u64 {
        let mut wire = b"POST /mcp HTTP/1.1\r\n".to_vec();
        for i in 0..n {
            wire.extend_from_slice(format!("X-H-{i}: value\r\n").as_bytes());
        }
        wire.extend_from_slice(b"\r\n");
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        let (urls, diags, work) = requests(&bytes);
        assert_eq!(urls.len(), 1, "{diags:?}");
        work
    }

    #[test]
    fn a_head_sent_byte_by_byte_is_scanned_in_linear_work() {
        // Doubling the head doubles the work; re-parsing per segment would quadruple it.
        let (small, large) = (head_work(200), head_work(400));
        assert!(large * 4 <= small * 9, "{small} → {large}");
        let len = 400 * 16;
        assert!(large <= 8 * len, "{large} for a head of about {len} bytes");
    }
}
