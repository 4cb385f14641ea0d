//! A response body as it arrives: `Content-Encoding` undone through the shared bounded
//! decoder (`ingest::inflate`), then kept as bytes up to the body cap, or streamed into
//! the SSE parser with the stream's event budget. Every cut is remembered as a cap
//! diagnostic naming the flag that raises it. A stream that may last as long as its
//! session (a legacy session's, or a standalone GET stream) is handed on in parts
//! instead (`Content::take_part`), so it is never cut and holds no more than a part.

use super::Caps;
use crate::ingest::inflate::{Coding, Inflater, Stop};
use crate::ingest::{Kind, Level};
use crate::model::{Body, SseBody, Timestamp};
use crate::sse::{Events, SseParser};
use std::cell::Cell;
use std::rc::Rc;

/// What the bodies in flight of one capture keep, over all its connections,
/// against one budget: each body's own cap bounds it alone, but a gzip body may
/// decode to a thousand times its size and a capture may have thousands open at
/// once. A body that would pass the budget is cut, as at its own cap. Request
/// bodies waiting for their responses count apart, against half the budget: they
/// neither starve the responses that complete them nor are starved by them.
///
/// The partial heads that connections hold (a head cut by a segment's end) count
/// against `HEADS_IN_FLIGHT`: each is within `HEAD_CAP`, but thousands of
/// connections that never end their heads would hold thousands of them.
#[derive(Debug, Clone)]
pub(in crate::ingest::pcap) struct Gauge {
    used: Rc<Cell<usize>>,
    requests: Rc<Cell<usize>>,
    heads: Rc<Cell<usize>>,
    budget: usize,
    heads_budget: usize,
}

/// Bytes of partial HTTP/1.1 heads all connections of a capture hold at once: a
/// healthy capture's are a few hundred bytes each, held for a segment or two.
pub(in crate::ingest::pcap) const HEADS_IN_FLIGHT: usize = 32 << 20;

impl Gauge {
    pub(in crate::ingest::pcap) fn new(budget: usize) -> Gauge {
        Gauge {
            used: Rc::default(),
            requests: Rc::default(),
            heads: Rc::default(),
            budget,
            heads_budget: HEADS_IN_FLIGHT,
        }
    }

    /// `new`, with a smaller budget for partial heads (tests).
    #[cfg(test)]
    pub(in crate::ingest::pcap) fn with_heads(budget: usize, heads_budget: usize) -> Gauge {
        Gauge {
            heads_budget,
            ..Gauge::new(budget)
        }
    }

    /// Bytes the partial heads may hold together.
    pub(in crate::ingest::pcap) fn heads_budget(&self) -> usize {
        self.heads_budget
    }

    /// Bytes the partial heads may still add.
    pub(in crate::ingest::pcap) fn head_room(&self) -> usize {
        self.heads_budget.saturating_sub(self.heads.get())
    }

    /// Bytes the response bodies in flight may hold together.
    pub(in crate::ingest::pcap) fn budget(&self) -> usize {
        self.budget
    }

    /// Bytes the response bodies in flight may still add.
    pub(in crate::ingest::pcap) fn room(&self) -> usize {
        self.budget.saturating_sub(self.used.get())
    }

    /// Bytes the request bodies in flight may still add.
    fn request_room(&self) -> usize {
        (self.budget / 2).saturating_sub(self.requests.get())
    }

    #[cfg(test)]
    pub(in crate::ingest::pcap) fn used(&self) -> usize {
        self.used.get() + self.requests.get() + self.heads.get()
    }
}

impl Default for Gauge {
    /// No budget beyond each body's own cap.
    fn default() -> Gauge {
        Gauge::new(usize::MAX)
    }
}

/// What one body (or partial head) counts against a counter of its capture's
/// gauge; given back when it is handed on or dropped.
#[derive(Debug, Default)]
pub(in crate::ingest::pcap) struct Charge {
    counter: Option<Rc<Cell<usize>>>,
    bytes: usize,
}

impl Charge {
    fn set(&mut self, counter: &Rc<Cell<usize>>, now: usize) {
        let c = self.counter.get_or_insert_with(|| counter.clone());
        c.set(c.get() - self.bytes + now);
        self.bytes = now;
    }

    /// Counts `now` bytes held in flight besides a body (a partial HTTP/2 frame)
    /// against the bodies' budget of `gauge`.
    pub(in crate::ingest::pcap) fn in_flight(&mut self, gauge: &Gauge, now: usize) {
        self.set(&gauge.used, now);
    }

    /// Counts `now` bytes of a partial head against `gauge`.
    pub(in crate::ingest::pcap) fn head(&mut self, gauge: &Gauge, now: usize) {
        self.set(&gauge.heads, now);
    }

    /// What is counted now.
    pub(in crate::ingest::pcap) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Gives back all that is counted.
    pub(in crate::ingest::pcap) fn release(&mut self) {
        if let Some(c) = self.counter.clone() {
            self.set(&c, 0);
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if let Some(c) = &self.counter {
            c.set(c.get() - self.bytes);
        }
    }
}

/// What a request body in flight counts against its capture's gauge (`Gauge`): a
/// request waits for its response, and a capture of large uploads never answered
/// would otherwise hold every one of them.
#[derive(Debug, Default)]
pub(in crate::ingest::pcap) struct RequestCharge {
    charge: Charge,
    cut: bool,
}

impl RequestCharge {
    /// Appends `bytes` to `body` within the body's own cap and the capture's gauge.
    /// The first cut gives the exchange's note and its diagnostic.
    pub(in crate::ingest::pcap) fn push(
        &mut self,
        body: &mut Vec<u8>,
        bytes: &[u8],
        cap: usize,
        gauge: &Gauge,
    ) -> Option<(String, Note)> {
        let own = cap.saturating_sub(body.len());
        let room = own.min(gauge.request_room());
        let keep = bytes.len().min(room);
        body.extend_from_slice(&bytes[..keep]);
        self.charge.set(&gauge.requests, body.len());
        if keep == bytes.len() || std::mem::replace(&mut self.cut, true) {
            return None;
        }
        Some(if room < own {
            let kept = body.len();
            (
                format!("request body cut after {kept} bytes: the request bodies in flight filled their budget"),
                (
                    Level::Problem,
                    Kind::Cap,
                    format!(
                        "cap: the request bodies in flight over all connections reached {} MiB ({} times --max-record-bytes); this request body was cut after {kept} bytes, so a call it carried cannot be judged (raise --max-record-bytes)",
                        (IN_FLIGHT / 2 * cap) >> 20,
                        IN_FLIGHT / 2
                    ),
                ),
            )
        } else {
            (
                format!("request body cut at the {cap}-byte cap"),
                (
                    Level::Problem,
                    Kind::Cap,
                    format!("cap: the request body is longer than {cap} bytes; only the first {cap} were kept (raise --max-record-bytes)"),
                ),
            )
        })
    }
}

/// A diagnostic of one exchange, reported at its frames once the exchange is done.
pub(in crate::ingest::pcap) type Note = (Level, Kind, String);

/// An event stream being parsed.
#[derive(Debug)]
pub(in crate::ingest::pcap) struct Stream {
    parser: SseParser,
    events: Events,
    /// Body bytes seen (after decoding).
    bytes: u64,
    /// After a gap: skip to the next blank line before parsing again.
    resync: bool,
    /// Offset of the current parser's first byte in the body.
    base: u64,
    problems: Vec<String>,
    /// Whether the stream is handed on in parts: the answer to a GET (a session's
    /// standalone stream, MCP 2025-03-26 and later, Transports §Listening for
    /// Messages from the Server, or one resuming a stream with `Last-Event-ID`, which
    /// may be that one), or one whose first event named `endpoint` (the HTTP+SSE
    /// transport of 2024-11-05, whose every response rides it); otherwise unknown
    /// until an event came.
    parted: Option<bool>,
    /// Parts handed on so far, and the body bytes they covered.
    parts: u32,
    parted_bytes: u64,
    /// Bytes of event data in the part being read.
    part_data: u64,
    /// The part being read has an event that may be a response.
    part_answers: bool,
}

/// A stream handed on in parts is handed on as soon as a segment brought an event
/// that may be a response (so that a legacy call is judged before the POSTs that
/// follow it pile up: a session may have many calls in flight, and a capture many
/// sessions), or once its part holds this many events or bytes of event data (or the
/// stream's own budget, if smaller). It holds no more than a part, however long the
/// session: a capture of many sessions holds many such streams at once.
const PART_EVENTS: usize = 64;
const PART_DATA: u64 = 64 << 10;

/// What is kept of a body.
#[derive(Debug)]
pub(in crate::ingest::pcap) enum Kept {
    Bytes(Vec<u8>),
    Sse(Box<Stream>),
    /// A body that cannot have bytes (HEAD, 204, 304, length 0).
    None,
}

/// A response body being collected.
#[derive(Debug)]
pub(in crate::ingest::pcap) struct Content {
    /// `None`: identity.
    decoder: Option<Inflater>,
    kept: Kept,
    caps: Caps,
    /// Bytes of the body are missing: lost, cut by a cap, or not decodable.
    pub(in crate::ingest::pcap) truncated: bool,
    /// Diagnostics for the exchange, reported when it is emitted.
    pub(in crate::ingest::pcap) notes: Vec<Note>,
    cut_reported: bool,
    charge: Charge,
    /// Counted against the capture's gauge (`uncounted`).
    counted: bool,
}

/// The bodies in flight of a capture keep together at most this many times
/// `--max-record-bytes` (`Gauge`).
pub(in crate::ingest::pcap) const IN_FLIGHT: usize = 8;

impl Content {
    /// The body of a response to a `method` request, with `headers`, that may have
    /// bytes (not `bodyless`), HTTP/1.1 and HTTP/2 alike. The answer to a GET may be
    /// a stream that lasts its session: it is handed on in parts (`Stream::parted`)
    /// and not counted against the capture's gauge (`counted`).
    pub(in crate::ingest::pcap) fn answering(
        method: &str,
        headers: &crate::model::Headers,
        coding: Option<Coding>,
        bodyless: bool,
        caps: Caps,
    ) -> Content {
        let get = method.eq_ignore_ascii_case("GET");
        let kept = if bodyless {
            Kept::None
        } else if headers.media_type_is("text/event-stream") {
            Content::sse(caps, get)
        } else {
            Kept::Bytes(Vec::new())
        };
        let content = Content::new(coding, kept, caps);
        if get {
            content.uncounted()
        } else {
            content
        }
    }

    pub(in crate::ingest::pcap) fn new(coding: Option<Coding>, kept: Kept, caps: Caps) -> Content {
        // A kept body never needs more decoded bytes than its cap: decoding stops there,
        // so a bomb costs the cap, not its expansion.
        let room = match kept {
            Kept::Bytes(_) => caps.decoded.min(caps.body as u64),
            Kept::Sse(_) | Kept::None => caps.decoded,
        };
        Content {
            decoder: coding.map(|c| Inflater::new(c, room)),
            kept,
            caps,
            truncated: false,
            notes: Vec::new(),
            cut_reported: false,
            charge: Charge::default(),
            counted: true,
        }
    }

    /// Not counted against the capture's gauge: the answer to a GET, an event
    /// stream that may last its session (handed on in parts over HTTP/1.1 and
    /// HTTP/2). Healthy sessions keep such streams open by the hundred, and
    /// counting them would cut the bodies of calls beside them.
    fn uncounted(mut self) -> Content {
        self.counted = false;
        self
    }

    /// An event stream body; `get` when it answers a GET, so that it is handed on
    /// in parts (see `Stream::parted`).
    fn sse(caps: Caps, get: bool) -> Kept {
        Kept::Sse(Box::new(Stream {
            parser: SseParser::new(caps.sse.event_bytes),
            events: Events::new(caps.sse),
            bytes: 0,
            resync: false,
            base: 0,
            problems: Vec::new(),
            parted: get.then_some(true),
            parts: 0,
            parted_bytes: 0,
            part_data: 0,
            part_answers: false,
        }))
    }

    /// The events read since the last part, as a part of the stream to hand on now,
    /// with its index; `None` unless this stream is handed on in parts and its part
    /// is full.
    pub(in crate::ingest::pcap) fn take_part(&mut self) -> Option<(SseBody, u32)> {
        let Kept::Sse(s) = &mut self.kept else {
            return None;
        };
        if s.parted != Some(true)
            || !(s.part_answers
                || s.events.len() >= PART_EVENTS.min(self.caps.sse.events)
                || s.part_data >= PART_DATA.min(self.caps.sse.bytes))
        {
            return None;
        }
        s.part_answers = false;
        let events = std::mem::replace(&mut s.events, Events::new(self.caps.sse));
        self.charge.release();
        let (events, _) = events.finish();
        let index = s.parts;
        s.parts += 1;
        let bytes = s.bytes - s.parted_bytes;
        s.parted_bytes = s.bytes;
        s.part_data = 0;
        Some((
            SseBody {
                events,
                incomplete_tail: None,
                problems: std::mem::take(&mut s.problems),
                bytes,
            },
            index,
        ))
    }

    /// How many parts were handed on before the rest, which `finish` keeps.
    pub(in crate::ingest::pcap) fn parts(&self) -> u32 {
        match &self.kept {
            Kept::Sse(s) => s.parts,
            _ => 0,
        }
    }

    /// True when bytes after a hole can still be decoded (identity only).
    pub(in crate::ingest::pcap) fn survives_gap(&mut self) -> bool {
        self.truncated = true;
        if let Kept::Sse(s) = &mut self.kept {
            s.resync = true;
        }
        self.decoder.is_none()
    }

    /// Takes raw (still encoded) body bytes, counting what is kept against `gauge`.
    pub(in crate::ingest::pcap) fn absorb(&mut self, raw: &[u8], ts: Timestamp, gauge: &Gauge) {
        if raw.is_empty() {
            return;
        }
        let Content {
            decoder,
            kept,
            caps,
            truncated,
            notes,
            cut_reported,
            charge,
            counted,
        } = self;
        let counted = *counted;
        let mut take = |slice: &[u8]| {
            let room = if counted { gauge.room() } else { usize::MAX };
            keep(kept, *caps, slice, ts, truncated, notes, cut_reported, room);
            if !counted {
                return;
            }
            let now = match kept {
                Kept::Bytes(b) => b.len(),
                Kept::Sse(s) => s.events.held_bytes() as usize,
                Kept::None => 0,
            };
            charge.set(&gauge.used, now);
        };
        let Some(dec) = decoder.as_mut() else {
            take(raw);
            return;
        };
        match dec.push(raw, &mut take) {
            Ok(()) => {}
            Err(Stop::Cap(cap)) => {
                *truncated = true;
                if !*cut_reported {
                    *cut_reported = true;
                    let flag = if cap < caps.decoded {
                        "--max-record-bytes"
                    } else {
                        "--max-decompressed-bytes"
                    };
                    notes.push((
                        Level::Problem,
                        Kind::Cap,
                        format!("cap: the response body decodes to more than {cap} bytes; the rest was not decoded (raise {flag})"),
                    ));
                }
            }
            Err(Stop::Invalid(e)) => {
                *truncated = true;
                notes.push((Level::Problem, Kind::Malformed, e));
            }
        }
    }

    /// The body as the exchange keeps it.
    pub(in crate::ingest::pcap) fn finish(self) -> (Body, Vec<Note>) {
        let mut notes = self.notes;
        let body = match self.kept {
            Kept::None => Body::Bytes(Vec::new()),
            Kept::Bytes(b) => Body::Bytes(b),
            Kept::Sse(s) => {
                let Stream {
                    parser,
                    events,
                    bytes,
                    parted_bytes,
                    mut problems,
                    ..
                } = *s;
                let bytes = bytes - parted_bytes;
                let (incomplete_tail, more) = parser.finish();
                problems.extend(more);
                let lost_responses = events.responses_dropped() > 0;
                let (events, cap) = events.finish();
                if let Some(cap) = cap {
                    // Only notifications and requests past the budget: every verdict
                    // is whole, and the input was read to its end.
                    let level = if lost_responses {
                        Level::Problem
                    } else {
                        Level::Notice
                    };
                    notes.push((level, Kind::Cap, cap.clone()));
                    problems.push(cap);
                }
                Body::Sse(SseBody {
                    events,
                    incomplete_tail,
                    problems,
                    bytes,
                })
            }
        };
        (body, notes)
    }
}

/// Keeps one decoded slice; `shared` is what the capture's bodies in flight may
/// still add (`Gauge`).
#[allow(clippy::too_many_arguments)]
fn keep(
    kept: &mut Kept,
    caps: Caps,
    decoded: &[u8],
    ts: Timestamp,
    truncated: &mut bool,
    notes: &mut Vec<Note>,
    cut_reported: &mut bool,
    shared: usize,
) {
    // The body is cut, by its own cap or by the capture's, and said so once.
    let mut cut = |notes: &mut Vec<Note>, why: String| {
        *truncated = true;
        if !*cut_reported {
            *cut_reported = true;
            notes.push((Level::Problem, Kind::Cap, why));
        }
    };
    let shared_cut = |kept: usize| {
        format!(
            "cap: the bodies in flight over all connections reached {} MiB ({IN_FLIGHT} times --max-record-bytes); this response body was cut after {kept} bytes (raise --max-record-bytes)",
            (IN_FLIGHT * caps.body) >> 20
        )
    };
    match kept {
        Kept::None => {}
        Kept::Bytes(buf) => {
            let own = caps.body.saturating_sub(buf.len());
            let room = own.min(shared);
            if decoded.len() > room {
                let why = if room < own {
                    shared_cut(buf.len() + room)
                } else {
                    format!(
                        "cap: the response body is longer than {} bytes; only the first {} were kept (raise --max-record-bytes)",
                        caps.body, caps.body
                    )
                };
                cut(notes, why);
            }
            buf.extend_from_slice(&decoded[..decoded.len().min(room)]);
        }
        Kept::Sse(s) => {
            if shared == 0 && !s.events.starved() {
                // No room left: later events are counted, not kept.
                s.events.starve();
                cut(notes, shared_cut(s.events.held_bytes() as usize));
            }
            s.feed(decoded, ts);
        }
    }
}

impl Stream {
    fn feed(&mut self, decoded: &[u8], ts: Timestamp) {
        let mut data = decoded;
        if self.resync {
            // After a hole, parse again only from the next blank line so no event is
            // glued from bytes on both sides of the hole.
            let Some(after) = find_blank_line(data) else {
                self.bytes += data.len() as u64;
                return;
            };
            let event_bytes = self.parser_cap();
            let (old_tail, old_problems) =
                std::mem::replace(&mut self.parser, SseParser::new(event_bytes)).finish();
            if let Some(t) = old_tail {
                self.problems.push(format!(
                    "event cut by bytes missing from the capture: {}",
                    crate::text::excerpt(&t)
                ));
            }
            self.problems.extend(old_problems);
            self.bytes += after as u64;
            self.base = self.bytes;
            data = &data[after..];
            self.resync = false;
        }
        self.bytes += data.len() as u64;
        let Stream {
            parser,
            events,
            base,
            parted,
            part_data,
            part_answers,
            ..
        } = self;
        let base = *base;
        parser.feed(data, Some(ts), &mut |mut ev| {
            ev.offset += base;
            if *parted.get_or_insert_with(|| ev.event == "endpoint") {
                *part_data += ev.data.len() as u64;
                *part_answers |= names_an_id(&ev.data);
            }
            events.push(ev);
        });
    }

    fn parser_cap(&self) -> usize {
        self.parser.cap()
    }
}

/// Whether event data has an `"id"` member, as a response (and a server's request)
/// has and a notification has not: what ends a part of a stream. One SIMD
/// search, where a parse or a plain substring search per event costs several times
/// more on a stream of log notifications.
fn names_an_id(data: &str) -> bool {
    static ID: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"id\""));
    ID.find(data.as_bytes()).is_some()
}

fn find_blank_line(b: &[u8]) -> Option<usize> {
    [&b"\n\n"[..], b"\r\n\r\n", b"\r\r"]
        .iter()
        .filter_map(|pat| memchr::memmem::find(b, pat).map(|p| p + pat.len()))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::Budget;
    use std::io::Write;

    fn caps(body: usize) -> Caps {
        Caps {
            body,
            decoded: 1 << 30,
            sse: Budget {
                event_bytes: 1 << 20,
                events: 3,
                bytes: 1 << 20,
            },
        }
    }

    #[test]
    fn a_gzip_bomb_is_a_cap_not_a_short_body() {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![b'a'; 4 << 20]).unwrap();
        let bomb = e.finish().unwrap();
        let mut c = Content::new(Some(Coding::Gzip), Kept::Bytes(Vec::new()), caps(1000));
        for piece in bomb.chunks(100) {
            c.absorb(piece, Timestamp(0), &Gauge::default());
        }
        assert!(c.truncated);
        let (body, notes) = c.finish();
        assert!(matches!(body, Body::Bytes(b) if b.len() == 1000));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!((notes[0].0, notes[0].1), (Level::Problem, Kind::Cap));
        assert!(notes[0].2.contains("--max-record-bytes"));
    }

    #[test]
    fn event_stream_keeps_its_budget_and_counts_the_rest() {
        let mut c = Content::new(None, Content::sse(caps(1000), false), caps(1000));
        for i in 0..10 {
            c.absorb(
                format!("data: {{\"n\":{i}}}\n\n").as_bytes(),
                Timestamp(i),
                &Gauge::default(),
            );
        }
        let (body, notes) = c.finish();
        let Body::Sse(s) = body else { panic!() };
        assert_eq!(s.events.len(), 3);
        // What was not kept is notifications only: a notice, not a problem.
        assert!(notes
            .iter()
            .any(|(l, k, m)| (*l, *k) == (Level::Notice, Kind::Cap) && m.contains("7 events")));
    }

    /// Responses past the budget and its reserve are lost to their calls: that cut
    /// is a problem of the input, not a notice.
    #[test]
    fn a_stream_that_loses_responses_reports_a_problem() {
        let mut budget = caps(1000);
        budget.sse.bytes = 300;
        let mut c = Content::new(None, Content::sse(budget, false), budget);
        for i in 0..10 {
            let ev = format!("data: {{\"id\":{i},\"result\":{{\"content\":[]}}}}\n\n");
            c.absorb(ev.as_bytes(), Timestamp(i), &Gauge::default());
        }
        let (body, notes) = c.finish();
        let Body::Sse(s) = body else { panic!() };
        assert!(s.events.len() < 10);
        assert!(
            notes
                .iter()
                .any(|(l, k, _)| (*l, *k) == (Level::Problem, Kind::Cap)),
            "{notes:?}"
        );
    }

    /// A stream whose first event is `endpoint` (a legacy session's), and one that
    /// answers a GET, are handed on in parts: at the end of a segment that brought
    /// an event that may be a response, or once the part reaches the stream's
    /// budget. The events of the parts and of the rest are every event once, and the
    /// bytes they cover add up. Any other stream (a POST's) is kept whole, within its
    /// budget.
    #[test]
    fn only_streams_that_may_last_a_session_are_handed_on_in_parts() {
        for (legacy, standalone) in [(true, false), (false, true), (false, false)] {
            let mut budget = caps(1000);
            budget.sse.events = 10;
            let mut c = Content::new(None, Content::sse(budget, standalone), budget);
            let mut fed = 0;
            let mut parts = Vec::new();
            let first = if legacy { "event: endpoint\n" } else { "" };
            let head = format!("{first}data: /messages/?session_id=1\n\n");
            c.absorb(head.as_bytes(), Timestamp(0), &Gauge::default());
            fed += head.len() as u64;
            // Log notifications, with a response after each 25th (and a log
            // notification of level "error", which names no id, after each 5th).
            for i in 1..=100 {
                let level = if i % 5 == 0 { "error" } else { "info" };
                let mut ev = format!("data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"{level}\",\"data\":\"x\"}}}}\n\n");
                if i % 25 == 0 {
                    ev.push_str(&format!(
                        "data: {{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":{{}}}}\n\n"
                    ));
                }
                c.absorb(ev.as_bytes(), Timestamp(i), &Gauge::default());
                fed += ev.len() as u64;
                parts.extend(c.take_part());
            }
            assert_eq!(c.parts() as usize, parts.len());
            let (body, notes) = c.finish();
            let Body::Sse(rest) = body else { panic!() };
            if !legacy && !standalone {
                assert!(parts.is_empty());
                assert_eq!(
                    rest.events.len(),
                    14,
                    "the budget, then responses in the reserve"
                );
                continue;
            }
            assert!(notes.is_empty(), "{notes:?}");
            let sizes: Vec<usize> = parts.iter().map(|(p, _)| p.events.len()).collect();
            // Ten events fill a part; a response ends one at once.
            assert_eq!(sizes, [10, 10, 7, 10, 10, 6, 10, 10, 6, 10, 10, 6]);
            for (i, (_, index)) in parts.iter().enumerate() {
                assert_eq!(*index as usize, i);
            }
            assert!(rest.events.is_empty());
            let bytes: u64 = parts.iter().map(|(p, _)| p.bytes).sum::<u64>() + rest.bytes;
            assert_eq!(bytes, fed);
            let offsets: Vec<u64> = parts
                .iter()
                .flat_map(|(p, _)| p.events.iter())
                .chain(rest.events.iter())
                .map(|e| e.offset)
                .collect();
            assert_eq!(offsets.len(), 105);
            assert!(offsets.windows(2).all(|w| w[0] < w[1]));
        }
    }

    /// Bodies in flight share one gauge: a gzip body that would pass it is cut,
    /// naming the budget; an event stream out of room keeps no more events, unless
    /// it answers a GET; and a body handed on or dropped gives its bytes back.
    #[test]
    fn bodies_in_flight_share_one_budget() {
        let gauge = Gauge::new(1000);
        let gz = |n: usize| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(&vec![b'a'; n]).unwrap();
            e.finish().unwrap()
        };
        let mut first = Content::new(Some(Coding::Gzip), Kept::Bytes(Vec::new()), caps(900));
        first.absorb(&gz(800), Timestamp(0), &gauge);
        assert_eq!(gauge.used(), 800);
        assert!(!first.truncated && first.notes.is_empty());
        let mut second = Content::new(Some(Coding::Gzip), Kept::Bytes(Vec::new()), caps(900));
        second.absorb(&gz(500), Timestamp(1), &gauge);
        assert_eq!(gauge.used(), 1000);
        assert!(second.truncated);
        assert!(
            second.notes[0].2.contains("bodies in flight")
                && second.notes[0].2.contains("after 200 bytes"),
            "{:?}",
            second.notes
        );
        // The answer to a GET (a stream that may last its session) is not counted,
        // so it neither fills the gauge nor is cut by it.
        let mut get = Content::new(None, Content::sse(caps(900), true), caps(900)).uncounted();
        get.absorb(b"data: {\"id\":1,\"result\":{}}\n\n", Timestamp(2), &gauge);
        assert_eq!(gauge.used(), 1000);
        let (Body::Sse(s), notes) = get.finish() else {
            panic!()
        };
        assert_eq!(s.events.len(), 1);
        assert!(notes.is_empty(), "{notes:?}");
        let mut stream = Content::new(None, Content::sse(caps(900), false), caps(900));
        stream.absorb(b"data: {\"id\":1,\"result\":{}}\n\n", Timestamp(2), &gauge);
        let (body, notes) = stream.finish();
        let Body::Sse(s) = body else { panic!() };
        assert!(s.events.is_empty(), "no room: counted, not kept");
        assert!(notes
            .iter()
            .any(|(l, k, _)| (*l, *k) == (Level::Problem, Kind::Cap)));
        let (Body::Bytes(b), _) = first.finish() else {
            panic!()
        };
        assert_eq!(b.len(), 800);
        assert_eq!(gauge.used(), 200, "the first body was handed on");
        drop(second);
        assert_eq!(gauge.used(), 0);
        let mut third = Content::new(Some(Coding::Gzip), Kept::Bytes(Vec::new()), caps(900));
        third.absorb(&gz(800), Timestamp(3), &gauge);
        assert!(!third.truncated);
    }

    /// Request bodies waiting for their responses count against half the budget,
    /// apart from the responses: past it they are cut, naming the budget; responses
    /// that fill their own share starve no request, nor requests a response. Each
    /// cut is said once, a body's own cap is named as its own, and a request dropped
    /// or handed on gives its bytes back.
    #[test]
    fn requests_in_flight_count_apart_against_half_the_budget() {
        let gauge = Gauge::new(1000);
        // Responses first fill all of theirs (a gzip bomb in flight).
        let mut resp = Content::new(None, Kept::Bytes(Vec::new()), caps(2000));
        resp.absorb(&[b'r'; 1000], Timestamp(0), &gauge);
        assert!(!resp.truncated);
        assert_eq!(gauge.used(), 1000);
        let (mut a, mut a_body) = (RequestCharge::default(), Vec::new());
        assert!(a.push(&mut a_body, &[b'a'; 300], 900, &gauge).is_none());
        assert_eq!(gauge.used(), 1300);
        let (mut b, mut b_body) = (RequestCharge::default(), Vec::new());
        let (note, (level, kind, why)) = b.push(&mut b_body, &[b'b'; 300], 900, &gauge).unwrap();
        assert_eq!(b_body.len(), 200);
        assert_eq!(gauge.used(), 1500);
        assert_eq!((level, kind), (Level::Problem, Kind::Cap));
        assert!(note.contains("after 200 bytes"), "{note}");
        assert!(
            why.contains("request bodies in flight") && why.contains("--max-record-bytes"),
            "{why}"
        );
        assert!(
            b.push(&mut b_body, b"more", 900, &gauge).is_none(),
            "said once"
        );
        assert_eq!(b_body.len(), 200);
        drop((resp, b));
        assert_eq!(gauge.used(), 300);
        // Its own cap, with room in the gauge.
        let (mut c, mut c_body) = (RequestCharge::default(), Vec::new());
        let (note, (_, _, why)) = c.push(&mut c_body, &[b'c'; 150], 100, &gauge).unwrap();
        assert_eq!(c_body.len(), 100);
        assert!(
            note.contains("100-byte cap") && why.contains("longer than 100 bytes"),
            "{why}"
        );
        drop((a, c));
        assert_eq!(gauge.used(), 0);
    }

    #[test]
    fn blank_line_after_a_hole_is_the_earliest_one() {
        assert_eq!(find_blank_line(b"a\r\n\r\nb\n\n"), Some(5));
        assert_eq!(find_blank_line(b"x\n\ny\r\n\r\n"), Some(3));
        assert_eq!(find_blank_line(b"no end"), None);
    }
}
