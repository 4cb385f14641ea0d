//! HTTP/2 over one connection's two byte streams (RFC 9113), whatever carried them
//! (TCP in the clear, or TLS once decrypted): frames (`frame`) and header blocks
//! (`hpack`) per direction, and the streams they make, each turned into the same
//! `Exchange` HTTP/1.1 gives, with bodies decoded and event streams parsed as there.
//!
//! What it owns: the connection preface, frame and header-block boundaries, stream
//! state, and how each stream ended (END_STREAM, RST_STREAM, GOAWAY, the connection's
//! end). What it does not: how the connection was detected or reassembled (`pcap`),
//! flow control and priorities (they change no byte of a message, so they are ignored).

mod frame;
mod hpack;

pub use frame::plausible;

use super::http1::body::{Charge, Content, Note, RequestCharge};
use super::http1::{response_of, Caps, Closing, Ctx, Done, PartHead};
use crate::ingest::inflate::Coding;
use crate::ingest::{Kind, Level, Problem};
use crate::model::{End, Headers, HttpRequest, Locator, StreamPart, TcpTrail, Timestamp};
use frame::{FrameError, Head, Reader, Type};
use hpack::{Failure, Hpack};
use std::collections::BTreeMap;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Most streams open at once on one connection; later ones are not followed (a fixed
/// limit; servers commonly allow 100-250).
const STREAMS_CAP: usize = 1024;
/// Largest header block (HEADERS plus CONTINUATION frames) collected (a fixed limit).
const BLOCK_CAP: usize = 256 << 10;
/// Problems reported one by one per connection before only counting them.
const PROBLEMS_LISTED: u64 = 20;

/// Who sent the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Client,
    Server,
}

impl Dir {
    fn i(self) -> usize {
        match self {
            Dir::Client => 0,
            Dir::Server => 1,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Dir::Client => "client",
            Dir::Server => "server",
        }
    }
}

/// How the connection's HTTP/2 began, as far as the capture shows.
#[derive(Debug)]
pub enum Opening {
    /// h2c with prior knowledge, or h2 after TLS: the client preface comes first.
    Preface,
    /// After an HTTP/1.1 request with `Upgrade: h2c` and its `101`: that request is
    /// stream 1, whose response comes over HTTP/2 (RFC 7540 §3.2). The client preface
    /// follows the 101.
    Upgrade { request: HttpRequest, frame: u64 },
    /// The capture began inside the connection: no preface, HPACK state unknown.
    Joined,
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Headers,
    ts: Timestamp,
    frame: u64,
    content: Content,
}

#[derive(Debug)]
struct Stream {
    req: HttpRequest,
    /// The frame that completed the request (or its head, until then).
    req_frame: u64,
    has_req: bool,
    req_done: bool,
    resp: Option<Resp>,
    last_ts: Timestamp,
    notes: Vec<String>,
    diags: Vec<Note>,
    req_cut: bool,
    /// The request body's share of the capture's gauge, given back with the stream.
    req_charge: RequestCharge,
    /// The decoded header fields' share of the capture's partial heads.
    head_charge: Charge,
    /// A header block of this stream could not be decoded: its frames are ignored.
    lost: bool,
}

impl Stream {
    fn new(frame: u64, ts: Timestamp) -> Stream {
        Stream {
            req: HttpRequest::default(),
            req_frame: frame,
            has_req: false,
            req_done: false,
            resp: None,
            last_ts: ts,
            notes: Vec::new(),
            diags: Vec::new(),
            req_cut: false,
            req_charge: RequestCharge::default(),
            head_charge: Charge::default(),
            lost: false,
        }
    }
}

/// A header block waiting for its CONTINUATION frames.
#[derive(Debug)]
struct Block {
    stream: u32,
    end_stream: bool,
    /// PUSH_PROMISE: decoded for the table's sake, then dropped.
    promise: bool,
    bytes: Vec<u8>,
    /// Bytes beyond `BLOCK_CAP` were dropped: the block cannot be decoded.
    over: bool,
    /// Dropped because the capture's partial heads had no room left (`Gauge`).
    over_budget: bool,
    /// `bytes`' share of the capture's partial heads: a connection that never ends
    /// its block holds it, and a capture may hold thousands of them.
    charge: Charge,
}

/// Why a header block was not read.
enum Unread {
    /// Past `BLOCK_CAP`.
    Cap,
    /// Past the room the capture's partial heads had left.
    Budget,
    Hpack(Failure),
}

#[derive(Debug)]
struct Side {
    reader: Reader,
    hpack: Hpack,
    /// Bytes of the client preface still to see (client side only).
    preface: usize,
    /// Frames are being read; false while looking for a frame boundary (after joining
    /// the connection, or after a hole).
    synced: bool,
    /// Longest frame this side may send: what the other side allowed.
    max_frame: u32,
    block: Option<Block>,
    /// The partial frame's share of the capture's bodies in flight, past
    /// `DEFAULT_MAX_FRAME`: a peer may allow frames of a megabyte, and a capture of
    /// thousands of connections each stopped inside one would hold them all.
    frame_charge: Charge,
    /// Nothing more is read from this side (a fatal frame error).
    dead: bool,
    /// Bytes passed over while not synced.
    skipped: u64,
}

impl Side {
    fn new(known: bool, preface: usize, max_frame: u32) -> Side {
        Side {
            reader: Reader::default(),
            hpack: Hpack::new(known),
            preface,
            synced: known,
            max_frame,
            block: None,
            frame_charge: Charge::default(),
            dead: false,
            skipped: 0,
        }
    }
}

/// One HTTP/2 connection.
#[derive(Debug)]
pub struct Http2 {
    caps: Caps,
    /// `server-ip:port`, for requests without `:authority`.
    server: String,
    sides: [Side; 2],
    streams: BTreeMap<u32, Stream>,
    /// The last GOAWAY: who sent it, its last stream id and error code.
    goaway: Option<(Dir, u32, u32)>,
    closing: Closing,
    /// The frame the connection's first HTTP/2 bytes came in, for connection-level reports.
    first_frame: u64,
    problems: u64,
}

impl Http2 {
    /// `server` names the server for requests without `:authority`; `frame` is where
    /// the HTTP/2 bytes begin.
    pub fn new(caps: Caps, server: String, opening: Opening, frame: u64, cx: &mut Ctx) -> Http2 {
        let known = !matches!(opening, Opening::Joined);
        // Frame sizes follow SETTINGS from a preface on; an upgrade's settings travel
        // base64-encoded in HTTP2-Settings and a joined connection's were not seen, so
        // there only the protocol's own ceiling applies.
        let max = match opening {
            Opening::Preface => frame::DEFAULT_MAX_FRAME,
            _ => frame::LARGEST_FRAME,
        };
        let preface = if known { PREFACE.len() } else { 0 };
        let mut h = Http2 {
            caps,
            server,
            sides: [Side::new(known, preface, max), Side::new(known, 0, max)],
            streams: BTreeMap::new(),
            goaway: None,
            closing: Closing::default(),
            first_frame: frame,
            problems: 0,
        };
        match opening {
            Opening::Upgrade { request, frame } => {
                let mut s = Stream::new(frame, request.ts.unwrap_or(Timestamp(0)));
                s.req = request;
                s.has_req = true;
                s.req_done = true;
                h.streams.insert(1, s);
            }
            Opening::Joined => cx.diags.push(Problem::notice(
                Kind::Skipped,
                h.at(frame),
                "the capture starts inside this HTTP/2 connection: no preface and no HPACK state; \
                 streams whose header blocks refer to earlier table entries are reported and not decoded"
                    .to_owned(),
            )),
            Opening::Preface => {}
        }
        h
    }

    fn at(&self, frame: u64) -> Locator {
        Locator::Frames {
            request: frame,
            response: None,
        }
    }

    fn problem(&mut self, kind: Kind, locator: Locator, message: String, cx: &mut Ctx) {
        self.problems += 1;
        if self.problems <= PROBLEMS_LISTED {
            cx.diags
                .push(Problem::of(Level::Problem, kind, locator, message));
        }
    }

    /// Bytes from one side, in stream order; `frame` and `ts` are the packet's.
    pub fn bytes(&mut self, d: Dir, mut input: &[u8], ts: Timestamp, frame: u64, cx: &mut Ctx) {
        let side = &mut self.sides[d.i()];
        if side.dead || input.is_empty() {
            return;
        }
        if side.preface > 0 {
            let done = PREFACE.len() - side.preface;
            let n = side.preface.min(input.len());
            if input[..n] != PREFACE[done..done + n] {
                side.preface = 0;
                side.synced = false;
                self.problem(
                    Kind::Malformed,
                    self.at(frame),
                    "HTTP/2: the client's bytes do not begin with the connection preface; looking for frames"
                        .into(),
                    cx,
                );
            } else {
                side.preface -= n;
                input = &input[n..];
            }
        }
        let side = &mut self.sides[d.i()];
        if !side.synced {
            if !frame::plausible(input) {
                side.skipped += input.len() as u64;
                return;
            }
            side.synced = true;
        }
        let max = side.max_frame;
        let mut reader = std::mem::take(&mut side.reader);
        let mut stopped = false;
        let too_long = reader.push(input, max, &mut |h, p| {
            stopped = !self.frame(d, h, p, ts, frame, cx);
            !stopped
        });
        let side = &mut self.sides[d.i()];
        side.reader = reader;
        if !stopped && too_long.is_none() {
            self.hold_partial_frame(d, ts, frame, cx);
        }
        if let Some(h) = too_long {
            let (kind, msg) = if h.len <= max {
                (
                    Kind::Cap,
                    format!("cap: an HTTP/2 {:?} frame of {} bytes from the {} is longer than {} bytes; the rest of this direction is not read (a fixed limit)", h.kind, h.len, d.name(), frame::FRAME_CAP),
                )
            } else {
                (
                    Kind::Malformed,
                    format!(
                        "HTTP/2 {}: {}; the rest of this direction is not read",
                        d.name(),
                        FrameError::TooLong { len: h.len, max }
                    ),
                )
            };
            stopped = true;
            self.problem(kind, self.at(frame), msg, cx);
        }
        if stopped {
            self.kill(d, ts, cx);
        }
    }

    /// A side stops: its streams cannot go on.
    /// Ends stream `id` as truncated, saying why: what it still had to read is lost.
    fn cut(&mut self, id: u32, why: String, cx: &mut Ctx) {
        if let Some(s) = self.streams.get_mut(&id) {
            s.notes.push(why);
            if let Some(r) = s.resp.as_mut() {
                r.content.truncated = true;
            }
        }
        self.end(id, End::Truncated, cx);
    }

    fn kill(&mut self, d: Dir, ts: Timestamp, cx: &mut Ctx) {
        let side = &mut self.sides[d.i()];
        side.dead = true;
        side.reader.clear();
        side.block = None;
        let open: Vec<u32> = self.streams.keys().copied().collect();
        for id in open {
            if let Some(s) = self.streams.get_mut(&id) {
                s.last_ts = s.last_ts.max(ts);
                if d == Dir::Server || !s.req_done {
                    let why = format!(
                        "the {}'s HTTP/2 frames could not be read past a bad frame",
                        d.name()
                    );
                    self.cut(id, why, cx);
                }
            }
        }
    }

    /// One whole frame; false when this side cannot go on.
    fn frame(
        &mut self,
        d: Dir,
        h: Head,
        raw: &[u8],
        ts: Timestamp,
        frame: u64,
        cx: &mut Ctx,
    ) -> bool {
        let p = match frame::payload(&h, raw) {
            Ok(p) => p,
            Err(e) => {
                self.problem(
                    Kind::Malformed,
                    self.at(frame),
                    format!(
                        "HTTP/2 frame from the {}: {e}; the rest of this direction is not read",
                        d.name()
                    ),
                    cx,
                );
                return false;
            }
        };
        if let Some(b) = &self.sides[d.i()].block {
            if h.kind != Type::Continuation || h.stream != b.stream {
                self.problem(
                    Kind::Malformed,
                    self.at(frame),
                    format!(
                        "HTTP/2 {}: a {:?} frame where the CONTINUATION of stream {}'s header block was due; the rest of this direction is not read",
                        d.name(), h.kind, b.stream
                    ),
                    cx,
                );
                return false;
            }
        }
        match h.kind {
            Type::Data => self.data(d, h, p, ts, frame, cx),
            Type::Headers | Type::PushPromise | Type::Continuation => {
                let (stream, fragment, promise) = match h.kind {
                    Type::PushPromise => {
                        match p.get(4..) {
                            Some(f) => (h.stream, f, true),
                            None => {
                                self.problem(Kind::Malformed, self.at(frame), format!("HTTP/2 {}: PUSH_PROMISE shorter than its promised stream id", d.name()), cx);
                                return false;
                            }
                        }
                    }
                    _ => (h.stream, p, false),
                };
                let side = &mut self.sides[d.i()];
                let block = match side.block.take() {
                    Some(b) => b,
                    None if h.kind == Type::Continuation => {
                        if side.hpack.state_unknown() {
                            // The rest of a block whose start was before where reading
                            // (re)started: it may add table entries we cannot see, newer
                            // than any we hold, so the table starts over after it.
                            side.hpack.lose_state();
                            return true;
                        }
                        self.problem(Kind::Malformed, self.at(frame), format!("HTTP/2 {}: CONTINUATION on stream {} with no header block open; the rest of this direction is not read", d.name(), h.stream), cx);
                        return false;
                    }
                    None => Block {
                        stream,
                        end_stream: h.kind == Type::Headers && h.has(frame::END_STREAM),
                        promise,
                        bytes: Vec::new(),
                        over: false,
                        over_budget: false,
                        charge: Charge::default(),
                    },
                };
                let mut block = block;
                if block.bytes.len() + fragment.len() > BLOCK_CAP {
                    block.over = true;
                } else if fragment.len() > cx.gauge.head_room() {
                    if !block.over_budget {
                        // Said now: a block that never ends is never read.
                        self.block_failed(d, stream, Unread::Budget, frame, cx);
                    }
                    block.over = true;
                    block.over_budget = true;
                } else if !block.over {
                    block.bytes.extend_from_slice(fragment);
                    block.charge.head(cx.gauge, block.bytes.len());
                }
                if h.has(frame::END_HEADERS) {
                    self.block(d, block, ts, frame, cx);
                } else {
                    self.sides[d.i()].block = Some(block);
                }
            }
            Type::RstStream => {
                let code = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                if let Some(s) = self.streams.get_mut(&h.stream) {
                    s.last_ts = s.last_ts.max(ts);
                    s.notes.push(format!(
                        "RST_STREAM {} from the {} on HTTP/2 stream {}",
                        error_name(code),
                        d.name(),
                        h.stream
                    ));
                    // The client resetting its own stream is how it cancels (CANCEL, RFC 9113 §7).
                    let end = match d {
                        Dir::Client => End::ClientClosed,
                        Dir::Server => End::StreamReset,
                    };
                    self.end(h.stream, end, cx);
                }
            }
            Type::Settings if !h.has(frame::ACK) => {
                for e in p.chunks_exact(6) {
                    let id = u16::from_be_bytes([e[0], e[1]]);
                    let v = u32::from_be_bytes([e[2], e[3], e[4], e[5]]);
                    // SETTINGS_MAX_FRAME_SIZE bounds what the other side sends. The largest
                    // value ever allowed is kept: frames sent before the change was acked
                    // may still use it.
                    // SETTINGS_HEADER_TABLE_SIZE bounds the table of the blocks the
                    // other side sends.
                    if id == 1 {
                        self.sides[1 - d.i()].hpack.allow(v);
                    }
                    if id == 5 && (frame::DEFAULT_MAX_FRAME..=frame::LARGEST_FRAME).contains(&v) {
                        let other = &mut self.sides[1 - d.i()];
                        other.max_frame = other.max_frame.max(v);
                    }
                }
            }
            Type::GoAway => {
                let last = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff;
                let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
                self.goaway = Some((d, last, code));
                if d == Dir::Server {
                    // Client streams above `last` were never processed (RFC 9113 §6.8).
                    let refused: Vec<u32> = self
                        .streams
                        .range(last.saturating_add(1)..)
                        .map(|(k, _)| *k)
                        .collect();
                    for id in refused {
                        if let Some(s) = self.streams.get_mut(&id) {
                            s.last_ts = s.last_ts.max(ts);
                            s.notes.push(format!("GOAWAY {} from the server with last stream {last}: HTTP/2 stream {id} was not processed", error_name(code)));
                        }
                        self.end(id, End::GoAway, cx);
                    }
                }
            }
            // Flow control, priorities, pings, settings acks and extension frames
            // change no message.
            _ => {}
        }
        true
    }

    fn data(&mut self, d: Dir, h: Head, p: &[u8], ts: Timestamp, frame: u64, cx: &mut Ctx) {
        let cap = self.caps.body;
        let end = h.has(frame::END_STREAM);
        let Some(s) = self.streams.get_mut(&h.stream) else {
            return;
        };
        if s.lost {
            if end && d == Dir::Server {
                self.streams.remove(&h.stream);
            }
            return;
        }
        s.last_ts = ts;
        match d {
            Dir::Client => {
                if let Some((note, diag)) = s.req_charge.push(&mut s.req.body, p, cap, cx.gauge) {
                    s.req_cut = true;
                    s.notes.push(note);
                    s.diags.push(diag);
                }
                if end {
                    s.req_done = true;
                    s.req_frame = frame;
                }
            }
            Dir::Server => {
                let Some(r) = s.resp.as_mut() else {
                    return;
                };
                r.content.absorb(p, ts, cx.gauge);
                if let Some((sse, index)) = r.content.take_part() {
                    let head = PartHead {
                        req: &s.req,
                        req_frame: s.req_frame,
                        status: r.status,
                        headers: &r.headers,
                        ts: r.ts,
                        frame: r.frame,
                    };
                    let key = part_key(s.req_frame, h.stream);
                    head.part(sse, index, key, s.last_ts)
                        .push(Some(trail(h.stream)), cx);
                }
                if end {
                    self.end(h.stream, End::Complete, cx);
                }
            }
        }
    }

    /// A whole header block.
    fn block(&mut self, d: Dir, b: Block, ts: Timestamp, frame: u64, cx: &mut Ctx) {
        let id = b.stream;
        let decoded = if b.over {
            self.sides[d.i()].hpack.lose_state();
            Err(if b.over_budget {
                Unread::Budget
            } else {
                Unread::Cap
            })
        } else {
            self.sides[d.i()]
                .hpack
                .decode(&b.bytes)
                .map_err(Unread::Hpack)
        };
        // A block dropped past the budget was reported as it was dropped.
        let unreported = !b.over_budget;
        if b.promise {
            if let (Err(f), true) = (decoded, unreported) {
                self.block_failed(d, id, f, frame, cx);
            }
            return;
        }
        let fields = match decoded {
            Ok(block) => {
                if block.cut {
                    self.problem(Kind::Cap, self.at(frame), format!("cap: a header list on HTTP/2 stream {id} decodes to more than {} bytes; the fields after that were dropped (a fixed limit)", hpack::LIST_CAP), cx);
                }
                block.fields
            }
            Err(f) => {
                if unreported {
                    self.block_failed(d, id, f, frame, cx);
                }
                let why = format!("a header block from the {} could not be decoded", d.name());
                self.lose_stream(d, id, why, ts, frame, cx);
                return;
            }
        };
        // The decoded fields of open streams count against the capture's partial
        // heads: HPACK lets a few bytes name a large table entry again and again, so
        // a small capture could otherwise hold gigabytes of headers in open streams.
        let bytes: usize = fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        let held = self.streams.get(&id).map_or(0, |s| s.head_charge.bytes());
        if bytes > cx.gauge.head_room() {
            let why = format!(
                "cap: the decoded headers of open streams over all connections reached {} MiB; the {}'s header block is not read, nor the rest of that stream (a fixed limit)",
                cx.gauge.heads_budget() >> 20,
                d.name()
            );
            self.problem(
                Kind::Cap,
                self.at(frame),
                format!("HTTP/2 stream {id}: {why}"),
                cx,
            );
            self.lose_stream(d, id, why, ts, frame, cx);
            return;
        }
        match d {
            Dir::Client => self.request_block(id, fields, b.end_stream, ts, frame, cx),
            Dir::Server => self.response_block(id, fields, b.end_stream, ts, frame, cx),
        }
        if let Some(s) = self.streams.get_mut(&id) {
            s.head_charge.head(cx.gauge, held + bytes);
        }
    }

    /// Stream `id` is not read past a header block that was not: an open one is cut
    /// (`why`), and a new client stream holds a place so that its frames are ignored.
    fn lose_stream(
        &mut self,
        d: Dir,
        id: u32,
        why: String,
        ts: Timestamp,
        frame: u64,
        cx: &mut Ctx,
    ) {
        if let Some(s) = self.streams.get_mut(&id) {
            s.lost = true;
            self.cut(id, why, cx);
        } else if d == Dir::Client && self.streams.len() < STREAMS_CAP {
            let mut s = Stream::new(frame, ts);
            s.lost = true;
            self.streams.insert(id, s);
        }
    }

    /// Reports a header block that is not read.
    fn block_failed(&mut self, d: Dir, id: u32, f: Unread, frame: u64, cx: &mut Ctx) {
        let (kind, why) = match f {
            Unread::Cap => (Kind::Cap, format!("cap: it is longer than {BLOCK_CAP} bytes (a fixed limit)")),
            Unread::Budget => (Kind::Cap, format!("cap: the partial heads and header blocks held over all connections reached {} MiB (a fixed limit)", cx.gauge.heads_budget() >> 20)),
            Unread::Hpack(Failure::Unknown) => (Kind::Skipped, "it refers to an HPACK table entry from before the capture began (or before lost bytes)".to_owned()),
            Unread::Hpack(Failure::TableCap) => (Kind::Cap, format!("cap: it resizes the HPACK table past {} bytes (a fixed limit)", hpack::TABLE_CAP)),
            Unread::Hpack(Failure::Invalid(e)) => (Kind::Malformed, format!("it is not valid HPACK ({e})")),
        };
        self.problem(
            kind,
            self.at(frame),
            format!("HTTP/2 stream {id}: the {}'s header block cannot be decoded: {why}; that stream is not read, and later blocks that refer to the table's older entries will not be either", d.name()),
            cx,
        );
    }

    fn request_block(
        &mut self,
        id: u32,
        fields: Vec<(String, String)>,
        end: bool,
        ts: Timestamp,
        frame: u64,
        cx: &mut Ctx,
    ) {
        if let Some(s) = self.streams.get_mut(&id) {
            if s.lost {
                return;
            }
            if s.has_req {
                // Trailers: the request ends here.
                for (n, v) in fields {
                    if !n.starts_with(':') {
                        s.req.headers.push(n, v);
                    }
                }
                s.req_done = true;
                s.req_frame = frame;
                return;
            }
        }
        if !self.streams.contains_key(&id) && self.streams.len() >= STREAMS_CAP {
            self.problem(Kind::Cap, self.at(frame), format!("cap: more than {STREAMS_CAP} HTTP/2 streams open at once on one connection; stream {id} is not followed (a fixed limit)"), cx);
            return;
        }
        let (mut method, mut scheme, mut authority, mut path) =
            (String::new(), None, None, String::new());
        let mut headers = Headers::default();
        for (n, v) in fields {
            match n.as_str() {
                ":method" => method = v,
                ":scheme" => scheme = Some(v),
                ":authority" => authority = Some(v),
                ":path" => path = v,
                _ if n.starts_with(':') => {}
                _ => headers.push(n, v),
            }
        }
        let host = authority
            .or_else(|| headers.get("host").map(str::to_owned))
            .unwrap_or_else(|| self.server.clone());
        let url = if method == "CONNECT" {
            host
        } else {
            format!("{}://{host}{path}", scheme.as_deref().unwrap_or("http"))
        };
        let s = self
            .streams
            .entry(id)
            .or_insert_with(|| Stream::new(frame, ts));
        s.req = HttpRequest {
            method,
            url,
            headers,
            body: Vec::new(),
            ts: Some(ts),
        };
        s.has_req = true;
        s.req_frame = frame;
        s.last_ts = ts;
        s.req_done = end;
    }

    fn response_block(
        &mut self,
        id: u32,
        fields: Vec<(String, String)>,
        end: bool,
        ts: Timestamp,
        frame: u64,
        cx: &mut Ctx,
    ) {
        let caps = self.caps;
        let s = match self.streams.get_mut(&id) {
            Some(s) => s,
            None => {
                // Even ids are the server's own (pushed) streams: not followed.
                if self.streams.len() >= STREAMS_CAP || id % 2 == 0 {
                    return;
                }
                let mut s = Stream::new(frame, ts);
                s.notes
                    .push("a response whose request is not in the capture".into());
                self.streams.entry(id).or_insert(s)
            }
        };
        if s.lost {
            if end {
                self.streams.remove(&id);
            }
            return;
        }
        s.last_ts = ts;
        if let Some(r) = s.resp.as_mut() {
            // Trailers.
            for (n, v) in fields {
                if !n.starts_with(':') {
                    r.headers.push(n, v);
                }
            }
            if end {
                self.end(id, End::Complete, cx);
            }
            return;
        }
        let mut status = None;
        let mut headers = Headers::default();
        for (n, v) in fields {
            if n == ":status" {
                status = v.trim().parse::<u16>().ok();
            } else if !n.starts_with(':') {
                headers.push(n, v);
            }
        }
        let Some(status) = status else {
            s.diags.push((
                Level::Problem,
                Kind::Malformed,
                format!("HTTP/2 stream {id}: a response header block without a valid :status"),
            ));
            return;
        };
        if (100..200).contains(&status) {
            // Interim responses: the final one follows on the same stream.
            return;
        }
        let locator = Locator::Frames {
            request: s.req_frame,
            response: Some(frame),
        };
        let coding = match Coding::from_header(headers.get("content-encoding")) {
            Ok(c) => c,
            Err(other) => {
                cx.diags.push(Problem::of(Level::Problem, Kind::Skipped, locator, format!("Content-Encoding {other:?} is not decoded (gzip and deflate are); the body is kept as sent")));
                None
            }
        };
        let bodyless = end || s.req.method == "HEAD" || status == 204 || status == 304;
        let content = Content::answering(&s.req.method, &headers, coding, bodyless, caps);
        s.resp = Some(Resp {
            status,
            headers,
            ts,
            frame,
            content,
        });
        if end {
            self.end(id, End::Complete, cx);
        }
    }

    /// Emits stream `id`, if it is open and carried anything.
    fn end(&mut self, id: u32, end: End, cx: &mut Ctx) {
        let Some(s) = self.streams.remove(&id) else {
            return;
        };
        if s.lost && s.resp.is_none() {
            return;
        }
        finish(id, s, end, cx);
    }

    /// Counts a partial frame longer than `DEFAULT_MAX_FRAME` against the bodies in
    /// flight; one past their room is dropped, and the side is read again from the
    /// next frame, as after a hole.
    fn hold_partial_frame(&mut self, d: Dir, ts: Timestamp, frame: u64, cx: &mut Ctx) {
        let side = &mut self.sides[d.i()];
        let held = side.reader.held();
        if held <= frame::DEFAULT_MAX_FRAME as usize {
            side.frame_charge.release();
            return;
        }
        if held <= cx.gauge.room() + side.frame_charge.bytes() {
            side.frame_charge.in_flight(cx.gauge, held);
            return;
        }
        let budget = cx.gauge.budget();
        // `lose` drops the frame and gives its count back.
        self.lose(
            d,
            held as u64,
            ts,
            "were dropped (the bodies in flight filled their budget)",
        );
        self.problem(
            Kind::Cap,
            self.at(frame),
            format!("cap: the bodies and partial HTTP/2 frames in flight over all connections reached {} MiB; a partial frame of {held} bytes from the {} was dropped, and frames are read again from the next segment that starts with one (raise --max-record-bytes)", budget >> 20, d.name()),
            cx,
        );
    }

    /// A hole of `len` bytes in one side's stream: frame boundaries and the HPACK
    /// table are lost there until a frame boundary is found again.
    pub fn gap(&mut self, d: Dir, len: u64, ts: Timestamp, frame: u64, cx: &mut Ctx) {
        if self.sides[d.i()].dead {
            return;
        }
        self.lose(d, len, ts, "are missing from the capture");
        self.problem(
            Kind::Lost,
            self.at(frame),
            format!("HTTP/2 {}: {len} bytes are missing; frames are read again from the next segment that starts with one, with the HPACK table's older entries unknown", d.name()),
            cx,
        );
    }

    /// `len` bytes of one side are not read (`missing` says why, after "N bytes
    /// from the server"): its streams are cut there, and frames are looked for again.
    fn lose(&mut self, d: Dir, len: u64, ts: Timestamp, missing: &str) {
        let side = &mut self.sides[d.i()];
        if side.dead {
            return;
        }
        side.reader.clear();
        side.frame_charge.release();
        side.block = None;
        side.hpack.lose_state();
        side.synced = false;
        side.preface = 0;
        for s in self.streams.values_mut() {
            s.last_ts = s.last_ts.max(ts);
            match d {
                Dir::Server => {
                    if let Some(r) = s.resp.as_mut() {
                        r.content.survives_gap();
                        r.content.truncated = true;
                        s.notes.push(format!("{len} bytes from the server {missing}; which HTTP/2 stream they belonged to is not known"));
                    }
                }
                Dir::Client if !s.req_done => {
                    s.req_cut = true;
                    s.notes
                        .push(format!("{len} bytes from the client {missing}"));
                }
                Dir::Client => {}
            }
        }
    }

    /// The client closed its side (FIN delivered in order).
    pub fn client_fin(&mut self) {
        self.closing.client_fin();
    }

    /// The server closed its side: every stream still open was cut.
    pub fn server_fin(&mut self, ts: Timestamp, cx: &mut Ctx) {
        let end = self.closing.server_fin();
        self.end_all(end, ts, cx);
    }

    /// A TCP reset ends every open stream (`Closing::reset` says who it blames).
    pub fn reset(&mut self, by_client: bool, ts: Timestamp, cx: &mut Ctx) {
        self.end_all(self.closing.reset(by_client), ts, cx);
    }

    /// The capture ended with the connection open.
    pub fn capture_ended(&mut self, ts: Timestamp, cx: &mut Ctx) {
        self.end_all(self.closing.capture_ended(), ts, cx);
        if self.problems > PROBLEMS_LISTED {
            cx.diags.push(Problem::of(
                Level::Problem,
                Kind::Other,
                self.at(self.first_frame),
                format!(
                    "{} more HTTP/2 problems on this connection were not listed one by one",
                    self.problems - PROBLEMS_LISTED
                ),
            ));
        }
    }

    fn end_all(&mut self, end: End, ts: Timestamp, cx: &mut Ctx) {
        // After a GOAWAY with an error, open streams died with the connection it announced.
        let end = match self.goaway {
            Some((_, _, code)) if code != 0 && end != End::ClientClosed => End::GoAway,
            _ => end,
        };
        let ids: Vec<u32> = self.streams.keys().copied().collect();
        for id in ids {
            if let Some(s) = self.streams.get_mut(&id) {
                s.last_ts = s.last_ts.max(ts);
            }
            self.end(id, end, cx);
        }
        for side in &mut self.sides {
            side.dead = true;
        }
    }
}

/// RFC 9113 §7 error code names.
fn error_name(code: u32) -> String {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES
        .get(code as usize)
        .map_or_else(|| format!("0x{code:x}"), |n| (*n).to_owned())
}

/// The trail of an exchange of HTTP/2 stream `id`; the connection layer fills in
/// the TCP stream and end frame.
fn trail(id: u32) -> TcpTrail {
    TcpTrail {
        stream: 0,
        end_frame: 0,
        h2_stream: Some(id),
        tls: None,
    }
}

/// The key of the parts of HTTP/2 stream `id` whose request ended at `req_frame`
/// (`StreamPart::stream`): one frame may carry the requests of several streams, and
/// an HTTP/1.1 stream's key is its request's frame, far below 2^31.
fn part_key(req_frame: u64, id: u32) -> u64 {
    (req_frame << 31) | u64::from(id)
}

/// Turns a finished stream into an exchange and reports its diagnostics at its frames.
fn finish(id: u32, s: Stream, end: End, cx: &mut Ctx) {
    let Stream {
        req,
        req_frame,
        resp,
        last_ts,
        notes,
        mut diags,
        req_cut,
        has_req,
        ..
    } = s;
    let mut end = end;
    // The last part of a stream handed on in parts.
    let part = resp
        .as_ref()
        .map(|r| r.content.parts())
        .filter(|&n| n > 0)
        .map(|index| StreamPart {
            stream: part_key(req_frame, id),
            index,
            more: false,
        });
    let response = resp.map(|r| {
        response_of(
            r.status, r.headers, r.ts, r.frame, r.content, &mut end, &mut diags,
        )
    });
    if !has_req && response.is_none() {
        return;
    }
    let done = Done {
        req,
        req_frame,
        request_cut: req_cut,
        response,
        end,
        last_ts,
        notes,
        part,
    };
    let locator = done.push(Some(trail(id)), cx);
    for (level, kind, message) in diags {
        cx.diags.push(Problem::of(
            level,
            kind,
            locator.clone(),
            format!("HTTP/2 stream {id}: {message}"),
        ));
    }
}

#[cfg(test)]
mod tests;
