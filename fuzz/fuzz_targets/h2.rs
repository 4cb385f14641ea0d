//! HTTP/2 frames and HPACK through the whole pcap path: frames built from fuzzed
//! types, flags, streams and payloads (so header blocks reach the HPACK decoder
//! quickly), sent in one connection after the client preface (or without it: a
//! joined connection), each direction cut into segments where the input says. No
//! input may panic, every exchange must name its HTTP/2 stream, and after a preface
//! the exchanges must not depend on where the segments were cut.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mcpsift::config::Limits;
use mcpsift::ingest::{ingest, Collect};
use mcpsift::model::Payload;

#[path = "../../tests/common/mod.rs"]
mod common;

use common::{Capture, Link, Side};

#[derive(Debug, Arbitrary)]
struct Frame {
    server: bool,
    kind: u8,
    flags: u8,
    stream: u8,
    payload: Vec<u8>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    preface: bool,
    frames: Vec<Frame>,
    /// Segment sizes for the cut run (0 entries are skipped).
    cuts: Vec<u8>,
}

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn wire(f: &Frame) -> Vec<u8> {
    let mut v = (f.payload.len() as u32).to_be_bytes()[1..].to_vec();
    // Types 0-9 most of the time, an extension type now and then.
    v.extend([if f.kind < 250 { f.kind % 10 } else { f.kind }, f.flags]);
    v.extend(u32::from(f.stream).to_be_bytes());
    v.extend_from_slice(&f.payload);
    v
}

/// (method, url, status, end, h2 stream) per exchange.
fn read(input: &Input, cut: bool) -> Vec<String> {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Raw, 40_000, (1000, 5000));
    cap.handshake(&mut c);
    if input.preface {
        cap.send(&mut c, Side::Client, PREFACE);
    }
    let mut sizes = input.cuts.iter().filter(|&&n| n > 0).cycle();
    for f in &input.frames {
        let side = if f.server { Side::Server } else { Side::Client };
        let bytes = wire(f);
        if cut && !input.cuts.iter().all(|&n| n == 0) {
            let mut at = 0;
            while at < bytes.len() {
                let n = usize::from(*sizes.next().unwrap_or(&1));
                let end = (at + n).min(bytes.len());
                cap.send(&mut c, side, &bytes[at..end]);
                at = end;
            }
        } else {
            cap.send(&mut c, side, &bytes);
        }
    }
    let pcap = cap.pcap(Link::Raw, false, false);
    let mut sink = Collect::default();
    ingest(&pcap[..], &Limits::default(), &mut sink).expect("a well-formed pcap");
    sink.exchanges
        .iter()
        .map(|x| {
            let Payload::Http(h) = &x.payload else {
                panic!("not HTTP: {x:?}")
            };
            let stream = h.tcp.and_then(|t| t.h2_stream);
            assert!(stream.is_some(), "an HTTP/2 exchange without its stream: {h:?}");
            format!(
                "{} {} {:?} {:?} {:?}",
                h.request.method,
                h.request.url,
                h.response.as_ref().map(|r| r.status),
                h.end,
                stream
            )
        })
        .collect()
}

fuzz_target!(|input: Input| {
    if input.frames.len() > 64 {
        return;
    }
    let whole = read(&input, false);
    let cut = read(&input, true);
    if input.preface {
        assert_eq!(whole, cut);
    }
});
