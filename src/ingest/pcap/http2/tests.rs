//! HTTP/2 connections built frame by frame with an independent HPACK encoder, fed in
//! pieces: what each stream became, how it ended, and what was reported.

use super::super::http1::body::Gauge;
use super::*;
use crate::model::{Body, Exchange, HttpExchange, Payload};
use crate::sse::Budget;
use loona_hpack::Encoder;
use proptest::prelude::*;

fn caps() -> Caps {
    Caps {
        body: 1 << 20,
        decoded: 1 << 30,
        sse: Budget::default(),
    }
}

fn frame(kind: u8, flags: u8, stream: u32, p: &[u8]) -> Vec<u8> {
    let mut v = (p.len() as u32).to_be_bytes()[1..].to_vec();
    v.extend([kind, flags]);
    v.extend(stream.to_be_bytes());
    v.extend_from_slice(p);
    v
}

fn block(enc: &mut Encoder, fields: &[(&str, &str)]) -> Vec<u8> {
    enc.encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())))
}

/// One packet's worth of bytes from one side.
type Piece = (Dir, Vec<u8>);

/// A client and a server with their own HPACK encoders, writing frames.
struct Wire {
    c: Encoder<'static>,
    s: Encoder<'static>,
    pieces: Vec<Piece>,
}

impl Wire {
    fn new() -> Wire {
        let mut w = Wire {
            c: Encoder::new(),
            s: Encoder::new(),
            pieces: Vec::new(),
        };
        let mut pre = PREFACE.to_vec();
        pre.extend(frame(4, 0, 0, &[0, 4, 0, 1, 0, 0]));
        w.pieces.push((Dir::Client, pre));
        w.pieces
            .push((Dir::Server, frame(4, 0, 0, &[0, 5, 0, 1, 0, 0])));
        w.pieces.push((Dir::Client, frame(4, 1, 0, &[])));
        w
    }

    fn request(&mut self, id: u32, body: &str) {
        let h = block(
            &mut self.c,
            &[
                (":method", "POST"),
                (":scheme", "http"),
                (":authority", "mcp.test"),
                (":path", "/mcp"),
                ("content-type", "application/json"),
            ],
        );
        // The block in two frames: HEADERS then CONTINUATION.
        let (a, b) = h.split_at(h.len() / 2);
        let mut v = frame(
            1,
            frame::PRIORITY,
            id,
            &[&[0u8, 0, 0, 0, 9][..], a].concat(),
        );
        v.extend(frame(9, frame::END_HEADERS, id, b));
        v.extend(frame(
            0,
            frame::END_STREAM | frame::PADDED,
            id,
            &[&[3u8][..], body.as_bytes(), b"\0\0\0"].concat(),
        ));
        self.pieces.push((Dir::Client, v));
    }

    fn response(&mut self, id: u32, ctype: &str, end: bool) {
        let h = block(&mut self.s, &[(":status", "200"), ("content-type", ctype)]);
        let flags = frame::END_HEADERS | if end { frame::END_STREAM } else { 0 };
        self.pieces.push((Dir::Server, frame(1, flags, id, &h)));
    }

    fn data(&mut self, d: Dir, id: u32, body: &str, end: bool) {
        let flags = if end { frame::END_STREAM } else { 0 };
        self.pieces.push((d, frame(0, flags, id, body.as_bytes())));
    }

    /// A `tools/call` with the id of its stream.
    fn call(&mut self, id: u32) {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t"}}}}"#
        );
        self.request(id, &body);
    }

    /// A JSON success answering the call on stream `id`.
    fn answer(&mut self, id: u32) {
        self.response(id, "application/json", false);
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#);
        self.data(Dir::Server, id, &body, true);
    }

    fn raw(&mut self, d: Dir, kind: u8, flags: u8, id: u32, p: &[u8]) {
        self.pieces.push((d, frame(kind, flags, id, p)));
    }
}

/// What came out, and the problems' kinds and messages.
struct Run {
    out: Vec<Exchange>,
    diags: Vec<Problem>,
}

/// Feeds the pieces (packet `i` is frame `i + 1`, at second `i`), cutting each piece
/// where `cuts` says, then ends the capture.
fn run(opening: Opening, pieces: &[Piece], cuts: &dyn Fn(usize, &[u8]) -> Vec<usize>) -> Run {
    run_in(&Default::default(), opening, pieces, cuts)
}

/// `run`, counting against `gauge`.
fn run_in(
    gauge: &Gauge,
    opening: Opening,
    pieces: &[Piece],
    cuts: &dyn Fn(usize, &[u8]) -> Vec<usize>,
) -> Run {
    let (mut diags, mut out) = (Vec::new(), Vec::new());
    let mut cx = Ctx {
        diags: &mut diags,
        out: &mut out,
        gauge,
    };
    let mut h = Http2::new(caps(), "10.0.0.2:80".into(), opening, 1, &mut cx);
    let mut last = 0;
    for (i, (d, bytes)) in pieces.iter().enumerate() {
        let mut at = 0;
        for cut in cuts(i, bytes).into_iter().chain([bytes.len()]) {
            let cut = cut.clamp(at, bytes.len());
            h.bytes(
                *d,
                &bytes[at..cut],
                Timestamp::from_parts(i as i64, 0),
                i as u64 + 1,
                &mut cx,
            );
            at = cut;
        }
        last = i;
    }
    h.capture_ended(Timestamp::from_parts(last as i64 + 1, 0), &mut cx);
    Run { out, diags }
}

fn whole(opening: Opening, pieces: &[Piece]) -> Run {
    run(opening, pieces, &|_, _| Vec::new())
}

fn http(x: &Exchange) -> &HttpExchange {
    match &x.payload {
        Payload::Http(h) => h,
        other => panic!("not HTTP: {other:?}"),
    }
}

/// A comparable summary of an exchange.
fn summary(x: &Exchange) -> String {
    let h = http(x);
    let body = match h.response.as_ref().map(|r| &r.body) {
        Some(Body::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
        Some(Body::Sse(s)) => s
            .events
            .iter()
            .map(|e| format!("[{} @{:?}]", e.data, e.ts))
            .collect(),
        other => format!("{other:?}"),
    };
    format!(
        "{} {} {} req={:?} status={:?} body={body} end={:?} h2={:?} note={:?} at={}",
        h.request.method,
        h.request.url,
        h.request.headers.get("content-type").unwrap_or(""),
        String::from_utf8_lossy(&h.request.body),
        h.response.as_ref().map(|r| r.status),
        h.end,
        h.tcp.and_then(|t| t.h2_stream),
        h.recorder_note,
        x.locator
    )
}

/// Two interleaved streams (an SSE one and a JSON one), a stream the server resets,
/// one the client cancels, one refused by GOAWAY, one left open at the capture's end.
fn busy() -> Vec<Piece> {
    let mut w = Wire::new();
    w.request(1, r#"{"id":1}"#);
    w.request(3, r#"{"id":2}"#);
    w.response(1, "text/event-stream", false);
    w.response(3, "application/json", false);
    w.data(Dir::Server, 1, "data: one\n\n", false);
    w.data(Dir::Server, 3, r#"{"id":2,"result":{}}"#, true);
    w.data(Dir::Server, 1, "data: two\n\n", true);
    w.request(5, r#"{"id":3}"#);
    w.raw(Dir::Server, 3, 0, 5, &2u32.to_be_bytes());
    w.request(7, r#"{"id":4}"#);
    w.raw(Dir::Client, 3, 0, 7, &8u32.to_be_bytes());
    w.raw(Dir::Client, 6, 0, 0, &[0; 8]);
    w.raw(Dir::Server, 8, 0, 0, &[0, 0, 1, 0]);
    w.request(9, r#"{"id":5}"#);
    w.request(11, r#"{"id":6}"#);
    w.raw(Dir::Server, 7, 0, 0, &[0, 0, 0, 9, 0, 0, 0, 0]);
    w.pieces
}

#[test]
fn interleaved_streams_resets_goaway_and_capture_end_become_exchanges() {
    let r = whole(Opening::Preface, &busy());
    let got: Vec<(Option<u32>, End, Option<u16>)> = r
        .out
        .iter()
        .map(|x| {
            let h = http(x);
            (
                h.tcp.and_then(|t| t.h2_stream),
                h.end,
                h.response.as_ref().map(|r| r.status),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some(3), End::Complete, Some(200)),
            (Some(1), End::Complete, Some(200)),
            (Some(5), End::StreamReset, None),
            (Some(7), End::ClientClosed, None),
            (Some(11), End::GoAway, None),
            (Some(9), End::CaptureEnded, None),
        ],
        "{:#?}",
        r.out.iter().map(summary).collect::<Vec<_>>()
    );
    let sse = http(&r.out[1]);
    assert_eq!(sse.request.url, "http://mcp.test/mcp");
    assert_eq!(sse.request.body, br#"{"id":1}"#, "padding stripped");
    let Some(Body::Sse(events)) = sse.response.as_ref().map(|r| &r.body) else {
        panic!("an event stream: {sse:?}");
    };
    // Each event carries the time of the packet that completed it.
    let times: Vec<_> = events
        .events
        .iter()
        .map(|e| (e.data.as_str(), e.ts))
        .collect();
    assert_eq!(
        times,
        [
            ("one", Some(Timestamp::from_parts(7, 0))),
            ("two", Some(Timestamp::from_parts(9, 0)))
        ]
    );
    assert!(http(&r.out[2])
        .recorder_note
        .as_deref()
        .unwrap()
        .contains("RST_STREAM INTERNAL_ERROR from the server"));
    assert!(http(&r.out[3])
        .recorder_note
        .as_deref()
        .unwrap()
        .contains("RST_STREAM CANCEL from the client"));
    assert!(r.diags.is_empty(), "{:?}", r.diags);
}

#[test]
fn an_upgraded_connection_answers_the_http1_request_on_stream_1() {
    let mut w = Wire::new();
    w.pieces.remove(0);
    w.pieces.insert(0, (Dir::Client, PREFACE.to_vec()));
    w.response(1, "application/json", false);
    w.data(Dir::Server, 1, r#"{"ok":true}"#, true);
    let req = HttpRequest {
        method: "POST".into(),
        url: "http://h/mcp".into(),
        ..HttpRequest::default()
    };
    let r = whole(
        Opening::Upgrade {
            request: req,
            frame: 4,
        },
        &w.pieces,
    );
    assert_eq!(r.out.len(), 1);
    let h = http(&r.out[0]);
    assert_eq!(
        (h.request.url.as_str(), h.end),
        ("http://h/mcp", End::Complete)
    );
    assert_eq!(
        r.out[0].locator,
        Locator::Frames {
            request: 4,
            response: Some(4)
        }
    );
}

#[test]
fn a_bad_frame_is_reported_with_its_frame_number_and_stops_its_direction() {
    let mut w = Wire::new();
    w.request(1, "{}");
    w.response(1, "application/json", false);
    // PING on stream 1: a connection error (RFC 9113 §6.7).
    w.raw(Dir::Server, 6, 0, 1, &[0; 8]);
    w.data(Dir::Server, 1, "{}", true);
    let r = whole(Opening::Preface, &w.pieces);
    let bad: Vec<_> = r
        .diags
        .iter()
        .filter(|d| d.kind == Kind::Malformed)
        .collect();
    assert_eq!(bad.len(), 1, "{:?}", r.diags);
    assert_eq!(
        bad[0].locator,
        Locator::Frames {
            request: 6,
            response: None
        }
    );
    assert!(
        bad[0].message.contains("Ping frame on stream 1"),
        "{}",
        bad[0].message
    );
    assert_eq!(http(&r.out[0]).end, End::Truncated);
}

#[test]
fn a_frame_over_the_peers_max_frame_size_is_refused() {
    let mut w = Wire::new();
    w.request(1, "{}");
    w.response(1, "application/json", false);
    // The client allowed 16384 (its SETTINGS said nothing else); this DATA frame is larger.
    w.data(Dir::Server, 1, &"x".repeat(20_000), true);
    let r = whole(Opening::Preface, &w.pieces);
    assert!(
        r.diags
            .iter()
            .any(|d| d.kind == Kind::Malformed
                && d.message.contains("SETTINGS_MAX_FRAME_SIZE of 16384")),
        "{:?}",
        r.diags
    );
    // The server allowed 65536-byte frames from the client: a 20000-byte request body passes.
    let mut w = Wire::new();
    w.request(1, &"y".repeat(20_000));
    w.response(1, "application/json", true);
    let r = whole(Opening::Preface, &w.pieces);
    assert_eq!(http(&r.out[0]).request.body.len(), 20_000, "{:?}", r.diags);
}

#[test]
fn a_joined_connection_decodes_what_needs_no_lost_table_entry() {
    let mut w = Wire::new();
    w.pieces.clear();
    let eoh = frame::END_HEADERS | frame::END_STREAM;
    // Stream 3 refers to dynamic entry 62, added before the capture began.
    w.raw(Dir::Client, 1, eoh, 3, &[0x83, 0x86, 0x84, 0xbe]);
    w.raw(Dir::Server, 1, eoh, 3, &[0x88]);
    // Stream 5: static-table and literal fields only, one of them added to the table
    // (0x41: literal with incremental indexing, name :authority).
    let mut literal = vec![0x83, 0x86, 0x84, 0x41, 0x08];
    literal.extend(b"mcp.test");
    w.raw(Dir::Client, 1, eoh, 5, &literal);
    w.raw(Dir::Server, 1, eoh, 5, &[0x88]);
    // Stream 7 refers to the entry stream 5 added: it was seen, so it decodes.
    w.raw(Dir::Client, 1, eoh, 7, &[0x83, 0x86, 0x84, 0xbe]);
    w.raw(Dir::Server, 1, eoh, 7, &[0x88]);
    let r = whole(Opening::Joined, &w.pieces);
    let got: Vec<_> = r
        .out
        .iter()
        .map(|x| {
            let h = http(x);
            (
                h.tcp.and_then(|t| t.h2_stream),
                h.request.url.clone(),
                h.response.as_ref().map(|r| r.status),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some(5), "http://mcp.test/".to_owned(), Some(200)),
            (Some(7), "http://mcp.test/".to_owned(), Some(200)),
        ],
        "{:?}",
        r.diags
    );
    let kinds: Vec<_> = r.diags.iter().map(|d| (d.level, d.kind)).collect();
    assert_eq!(
        kinds,
        [
            (Level::Notice, Kind::Skipped),
            (Level::Problem, Kind::Skipped)
        ]
    );
    assert!(
        r.diags[1].message.contains("stream 3")
            && r.diags[1].message.contains("before the capture began"),
        "{:?}",
        r.diags
    );
    assert_eq!(
        r.diags[1].locator,
        Locator::Frames {
            request: 1,
            response: None
        }
    );
}

#[test]
fn a_hole_truncates_open_responses_and_frames_are_found_again() {
    let mut w = Wire::new();
    w.request(1, "{}");
    w.response(1, "application/json", false);
    w.data(Dir::Server, 1, "{\"partial\":", false);
    let (mut diags, mut out) = (Vec::new(), Vec::new());
    let mut cx = Ctx {
        diags: &mut diags,
        out: &mut out,
        gauge: &Default::default(),
    };
    let mut h = Http2::new(caps(), "s".into(), Opening::Preface, 1, &mut cx);
    for (i, (d, b)) in w.pieces.iter().enumerate() {
        h.bytes(*d, b, Timestamp(i as i64), i as u64 + 1, &mut cx);
    }
    h.gap(Dir::Server, 100, Timestamp(9), 9, &mut cx);
    // Mid-frame junk is passed over; a segment that starts with a frame is read.
    h.bytes(Dir::Server, b"ial\": 1}", Timestamp(10), 10, &mut cx);
    h.bytes(
        Dir::Server,
        &frame(0, frame::END_STREAM, 1, b""),
        Timestamp(11),
        11,
        &mut cx,
    );
    h.capture_ended(Timestamp(12), &mut cx);
    assert_eq!(out.len(), 1);
    assert_eq!(http(&out[0]).end, End::Truncated);
    assert!(diags.iter().any(|d| d.kind == Kind::Lost
        && d.locator
            == Locator::Frames {
                request: 9,
                response: None
            }));
}

fn frame_ends(b: &[u8]) -> Vec<usize> {
    let mut at = if b.starts_with(PREFACE) {
        PREFACE.len()
    } else {
        0
    };
    let mut ends = vec![at];
    while b.len() >= at + 9 {
        at += 9 + (u32::from_be_bytes([0, b[at], b[at + 1], b[at + 2]]) as usize);
        ends.push(at.min(b.len()));
    }
    ends
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The same bytes give the same exchanges whether each packet is cut at every
    /// frame boundary or at random points.
    #[test]
    fn exchanges_do_not_depend_on_how_the_bytes_were_cut(seed in proptest::collection::vec(any::<u16>(), 1..6)) {
        let pieces = busy();
        let want: Vec<String> = whole(Opening::Preface, &pieces).out.iter().map(summary).collect();
        let by_frame: Vec<String> = run(Opening::Preface, &pieces, &|_, b| frame_ends(b)).out.iter().map(summary).collect();
        prop_assert_eq!(&by_frame, &want);
        let random: Vec<String> = run(Opening::Preface, &pieces, &|i, b| {
            let mut cuts: Vec<usize> = seed.iter().map(|s| (*s as usize + i * 7) % (b.len() + 1)).collect();
            cuts.sort_unstable();
            cuts
        }).out.iter().map(summary).collect();
        prop_assert_eq!(&random, &want);
    }
}

#[test]
fn every_single_cut_gives_the_same_exchanges() {
    let pieces = busy();
    let want: Vec<String> = whole(Opening::Preface, &pieces)
        .out
        .iter()
        .map(summary)
        .collect();
    let longest = pieces.iter().map(|(_, b)| b.len()).max().unwrap_or(0);
    for cut in 0..=longest {
        let got: Vec<String> = run(Opening::Preface, &pieces, &|_, _| vec![cut])
            .out
            .iter()
            .map(summary)
            .collect();
        assert_eq!(got, want, "cut at {cut}");
    }
}

#[test]
fn a_joined_connection_may_start_with_the_rest_of_a_header_block() {
    let mut w = Wire::new();
    w.pieces.clear();
    let eoh = frame::END_HEADERS | frame::END_STREAM;
    // The CONTINUATION of a block whose HEADERS came before the capture.
    w.raw(Dir::Client, 9, frame::END_HEADERS, 3, &[0x41, 0x01, b'x']);
    w.raw(Dir::Client, 1, eoh, 5, &[0x83, 0x86, 0x84]);
    w.raw(Dir::Server, 1, eoh, 5, &[0x88]);
    // A server push on an even stream is not followed.
    w.raw(Dir::Server, 1, eoh, 2, &[0x88]);
    let r = whole(Opening::Joined, &w.pieces);
    let ids: Vec<_> = r
        .out
        .iter()
        .map(|x| http(x).tcp.and_then(|t| t.h2_stream))
        .collect();
    assert_eq!(ids, [Some(5)], "{:?}", r.diags);
    assert!(
        r.diags.iter().all(|d| d.kind != Kind::Malformed),
        "{:?}",
        r.diags
    );
}

#[test]
fn a_header_block_past_its_cap_and_too_many_streams_are_reported() {
    let mut w = Wire::new();
    // Stream 1: a block of 300 CONTINUATION frames of 1 KiB each (past 256 KiB).
    w.raw(Dir::Client, 1, 0, 1, &[0x83]);
    for _ in 0..299 {
        w.raw(Dir::Client, 9, 0, 1, &[0x40; 1024]);
    }
    w.raw(Dir::Client, 9, frame::END_HEADERS, 1, &[0x40; 1024]);
    // Streams 3, 5, …: far more than may be open at once, none answered.
    for i in 0..(STREAMS_CAP as u32 + 5) {
        w.raw(
            Dir::Client,
            1,
            frame::END_HEADERS | frame::END_STREAM,
            3 + 2 * i,
            &[0x83, 0x86, 0x84],
        );
    }
    let r = whole(Opening::Preface, &w.pieces);
    let caps: Vec<&str> = r
        .diags
        .iter()
        .filter(|d| d.kind == Kind::Cap)
        .map(|d| d.message.as_str())
        .collect();
    assert!(caps[0].contains("longer than 262144 bytes"), "{caps:?}");
    assert!(
        caps.iter()
            .any(|m| m.contains("more than 1024 HTTP/2 streams")),
        "{caps:?}"
    );
    // The streams that were followed end with the capture; the one past the block cap
    // holds a place until then but makes no exchange.
    assert_eq!(r.out.len(), STREAMS_CAP - 1);
    assert!(r.out.iter().all(|x| http(x).end == End::CaptureEnded));
    // Cap reports are listed up to the per-connection limit, then counted.
    assert!(
        r.diags.len() <= PROBLEMS_LISTED as usize + 1,
        "{}",
        r.diags.len()
    );
}

/// An HPACK integer with an `n`-bit prefix whose high bits are `flags` (RFC 7541
/// §5.1).
fn hpack_int(flags: u8, n: u32, mut v: usize) -> Vec<u8> {
    let max = (1usize << n) - 1;
    if v < max {
        return vec![flags | v as u8];
    }
    let mut out = vec![flags | max as u8];
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
    out
}

/// The decoded fields of open streams count against the capture's partial heads:
/// a block of a few bytes that names a 30 KB table entry four times holds 120 KB
/// until its stream ends. Past the budget a stream is not followed, named as a cap;
/// streams that end give their bytes back, and a later one is followed again.
#[test]
fn decoded_headers_of_open_streams_share_the_capture_budget() {
    let mut w = Wire::new();
    // Stream 1: the table grown to 64 KiB, and a 30 KB value added to it.
    let mut first = hpack_int(0x20, 5, 65_536);
    first.extend([0x83, 0x86, 0x84, 0x40, 0x03]);
    first.extend(b"x-a");
    first.extend(hpack_int(0, 7, 30_000));
    first.extend(vec![b'v'; 30_000]);
    w.raw(
        Dir::Client,
        1,
        frame::END_HEADERS | frame::END_STREAM,
        1,
        &first,
    );
    // Streams 3 to 41: each a block of 7 bytes naming that entry (index 62) 4 times.
    let amp = [0x83, 0x86, 0x84, 0xbe, 0xbe, 0xbe, 0xbe];
    for id in (3..=41).step_by(2) {
        w.raw(
            Dir::Client,
            1,
            frame::END_HEADERS | frame::END_STREAM,
            id,
            &amp,
        );
    }
    // All answered, then one more stream that fits again.
    for id in (1..=41).step_by(2) {
        w.raw(
            Dir::Server,
            1,
            frame::END_HEADERS | frame::END_STREAM,
            id,
            &[0x88],
        );
    }
    w.raw(
        Dir::Client,
        1,
        frame::END_HEADERS | frame::END_STREAM,
        43,
        &amp,
    );
    w.raw(
        Dir::Server,
        1,
        frame::END_HEADERS | frame::END_STREAM,
        43,
        &[0x88],
    );
    let gauge = Gauge::with_heads(usize::MAX, 1 << 20);
    let r = run_in(&gauge, Opening::Preface, &w.pieces, &|_, _| Vec::new());
    let caps: Vec<&str> = r
        .diags
        .iter()
        .filter(|d| d.message.contains("decoded headers of open streams"))
        .map(|d| d.message.as_str())
        .collect();
    // 1 MiB holds the first stream and eight of 120 KB; the other 12 are cut.
    assert_eq!(caps.len(), 12, "{:?}", r.diags);
    assert!(caps[0].contains("reached 1 MiB"), "{caps:?}");
    let ids: Vec<u32> = r
        .out
        .iter()
        .filter_map(|x| http(x).tcp.and_then(|t| t.h2_stream))
        .collect();
    assert_eq!(ids, [1, 3, 5, 7, 9, 11, 13, 15, 17, 43]);
    assert_eq!(gauge.used(), 0, "every stream gave its bytes back");
}

/// A header block being read counts against the capture's partial heads: one
/// that would pass them is dropped and said so at once (a block never ended is
/// never read otherwise), once; its stream is not read, the bytes it held are
/// given back, and a later stream is read.
#[test]
fn a_header_block_past_the_capture_budget_is_dropped_and_said_once() {
    let mut w = Wire::new();
    w.raw(Dir::Client, 1, 0, 1, &[0x83, 0x86, 0x84]);
    for _ in 0..20 {
        w.raw(Dir::Client, 9, 0, 1, &[0x40; 1024]);
    }
    w.raw(Dir::Client, 9, frame::END_HEADERS, 1, &[0x40; 8]);
    w.call(3);
    w.answer(3);
    let gauge = Gauge::with_heads(usize::MAX, 10_000);
    let r = run_in(&gauge, Opening::Preface, &w.pieces, &|_, _| Vec::new());
    let caps: Vec<&Problem> = r
        .diags
        .iter()
        .filter(|d| {
            d.message
                .contains("header blocks held over all connections")
        })
        .collect();
    assert_eq!(caps.len(), 1, "{:?}", r.diags);
    assert!(caps[0].message.contains("HTTP/2 stream 1"), "{caps:?}");
    let ids: Vec<u32> = r
        .out
        .iter()
        .filter_map(|x| http(x).tcp.and_then(|t| t.h2_stream))
        .collect();
    assert_eq!(ids, [3]);
    assert_eq!(gauge.used(), 0);
}

/// A partial frame longer than the default maximum (the peer allowed 64 KiB) counts
/// against the capture's bodies in flight: past their room it is dropped, said as a
/// cap, and frames are found again (a later stream is read); within it the stream
/// reads as if uncut. Either way it gives its bytes back.
#[test]
fn a_long_partial_frame_counts_against_the_bodies_in_flight() {
    let mut w = Wire::new();
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"x":"{}"}}}}}}"#,
        "a".repeat(50_000)
    );
    w.request(1, &big);
    w.answer(1);
    w.call(3);
    w.answer(3);
    // The first request's DATA frame arrives in two segments, 10,000 bytes apart.
    let cut = |i: usize, b: &[u8]| {
        if i == 3 {
            vec![b.len() - 10_000]
        } else {
            vec![]
        }
    };
    let streams = |r: &Run| -> Vec<(u32, usize)> {
        r.out
            .iter()
            .map(|x| {
                (
                    http(x).tcp.unwrap().h2_stream.unwrap(),
                    http(x).request.body.len(),
                )
            })
            .collect()
    };
    let roomy = Gauge::new(1 << 20);
    let r = run_in(&roomy, Opening::Preface, &w.pieces, &cut);
    assert_eq!(streams(&r), streams(&whole(Opening::Preface, &w.pieces)));
    assert!(r.diags.is_empty(), "{:?}", r.diags);
    assert_eq!(roomy.used(), 0);

    let tight = Gauge::new(40_000);
    let r = run_in(&tight, Opening::Preface, &w.pieces, &cut);
    let caps: Vec<&Problem> = r
        .diags
        .iter()
        .filter(|d| d.message.contains("partial frame of"))
        .collect();
    assert_eq!(caps.len(), 1, "{:?}", r.diags);
    assert!(caps[0].message.contains("from the client"), "{caps:?}");
    let read = streams(&r);
    assert!(read.contains(&(3, 68)), "a later stream is read: {read:?}");
    assert!(
        !read.iter().any(|&(id, len)| id == 1 && len > 40_000),
        "the dropped frame's body is not read: {read:?}"
    );
    assert_eq!(tight.used(), 0);
}

#[test]
fn a_gzip_response_body_is_decoded_across_data_frames() {
    use flate2::write::GzEncoder;
    use std::io::Write;
    let json = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(json).unwrap();
    let packed = gz.finish().unwrap();
    let mut w = Wire::new();
    w.request(1, "{}");
    let h = block(
        &mut w.s,
        &[
            (":status", "200"),
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
    );
    w.pieces
        .push((Dir::Server, frame(1, frame::END_HEADERS, 1, &h)));
    let (a, b) = packed.split_at(packed.len() / 2);
    w.pieces.push((Dir::Server, frame(0, 0, 1, a)));
    w.pieces
        .push((Dir::Server, frame(0, frame::END_STREAM, 1, b)));
    let r = whole(Opening::Preface, &w.pieces);
    let got = http(&r.out[0]);
    assert_eq!(got.end, End::Complete);
    assert_eq!(
        got.response.as_ref().map(|r| &r.body),
        Some(&Body::Bytes(json.to_vec()))
    );
    assert!(r.diags.is_empty(), "{:?}", r.diags);
}
