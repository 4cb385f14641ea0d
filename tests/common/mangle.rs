//! Reassembly as a system: HTTP exchanges built from plain parts, written as a pcap
//! twice, once in order and once with each message's segments split, swapped,
//! duplicated and overlapped. Whatever the segments, the exchanges read back must be
//! equal. Shared by the stable proptest (`tests/pcap.rs`) and the `reassembly` fuzz
//! target (which includes this file by path), so CI covers what the fuzzer explores.

#![allow(dead_code)] // each harness uses part of it

use etherparse::PacketBuilder;
use mcpsift::config::Limits;
use mcpsift::ingest::{ingest, Collect};
use mcpsift::model::{Body, Payload};

/// One request and its response, in plain parts.
#[derive(Debug, Clone)]
pub struct ExSpec {
    /// Index into `METHODS`.
    pub method: u8,
    pub path: u16,
    pub body: Vec<u8>,
    pub status: u16,
    /// 0: Content-Length, 1: chunked (cut by `chunks`), 2: an event stream (chunked).
    pub framing: u8,
    pub resp_body: Vec<u8>,
    /// Chunk sizes for chunked bodies (0 entries are skipped).
    pub chunks: Vec<u8>,
}

const METHODS: &[&str] = &["POST", "GET", "PUT", "DELETE"];

impl ExSpec {
    fn request(&self) -> Vec<u8> {
        let method = METHODS[usize::from(self.method) % METHODS.len()];
        let mut out = format!(
            "{method} /p{} HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n",
            self.path,
            self.body.len()
        )
        .into_bytes();
        out.extend_from_slice(&self.body);
        out
    }

    fn response(&self) -> Vec<u8> {
        let status = 200 + self.status % 300;
        // 204 and 304 have no body whatever the headers say; keep the specs simple.
        let status = if status == 204 || status == 304 {
            200
        } else {
            status
        };
        let mut out = format!("HTTP/1.1 {status} X\r\n").into_bytes();
        match self.framing % 3 {
            0 => {
                out.extend_from_slice(
                    format!(
                        "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        self.resp_body.len()
                    )
                    .as_bytes(),
                );
                out.extend_from_slice(&self.resp_body);
            }
            framing => {
                let body = if framing == 2 {
                    out.extend_from_slice(b"Content-Type: text/event-stream\r\n");
                    let mut events = Vec::new();
                    for line in self.resp_body.split(|&b| b == b'\n' || b == b'\r') {
                        events.extend_from_slice(b"data: ");
                        events.extend_from_slice(line);
                        events.extend_from_slice(b"\n\n");
                    }
                    events
                } else {
                    out.extend_from_slice(b"Content-Type: application/json\r\n");
                    self.resp_body.clone()
                };
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                let mut rest = &body[..];
                let mut sizes = self.chunks.iter().copied().filter(|&c| c > 0).cycle();
                while !rest.is_empty() {
                    let n = usize::from(sizes.next().unwrap_or(255)).min(rest.len());
                    out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
                    out.extend_from_slice(&rest[..n]);
                    out.extend_from_slice(b"\r\n");
                    rest = &rest[n..];
                }
                out.extend_from_slice(b"0\r\n\r\n");
            }
        }
        out
    }
}

/// Reads a plan of small numbers, cycling; zeros when it is empty.
struct Plan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Plan<'_> {
    fn next(&mut self) -> u8 {
        if self.bytes.is_empty() {
            return 0;
        }
        let b = self.bytes[self.at % self.bytes.len()];
        self.at += 1;
        b
    }
}

/// One TCP segment to write: direction, sequence offset in its stream, bytes.
#[derive(Debug, Clone)]
struct Seg {
    client: bool,
    off: u32,
    data: Vec<u8>,
}

/// The segments of one message: cut at `mss`, then, with a plan, mangled.
fn segments(client: bool, base: u32, msg: &[u8], plan: Option<&mut Plan>) -> Vec<Seg> {
    const MSS: usize = 64;
    let mut segs: Vec<Seg> = msg
        .chunks(MSS)
        .enumerate()
        .map(|(i, c)| Seg {
            client,
            off: base + (i * MSS) as u32,
            data: c.to_vec(),
        })
        .collect();
    let Some(plan) = plan else { return segs };
    let mut out: Vec<Seg> = Vec::new();
    for s in segs.drain(..) {
        // Split in two at a planned point.
        let cut = usize::from(plan.next()) % (s.data.len() + 1);
        if cut > 0 && cut < s.data.len() {
            out.push(Seg {
                client,
                off: s.off,
                data: s.data[..cut].to_vec(),
            });
            out.push(Seg {
                client,
                off: s.off + cut as u32,
                data: s.data[cut..].to_vec(),
            });
        } else {
            out.push(s);
        }
    }
    // Overlap: some segments also carry the next few bytes of the message.
    for s in out.iter_mut() {
        let extra = usize::from(plan.next() % 8);
        let from = (s.off - base) as usize + s.data.len();
        let to = (from + extra).min(msg.len());
        s.data.extend_from_slice(&msg[from..to]);
    }
    // Duplicate some, then swap neighbours.
    let mut mangled = Vec::new();
    for s in out {
        let dup = plan.next() % 4 == 0;
        mangled.push(s.clone());
        if dup {
            mangled.push(s);
        }
    }
    for i in 1..mangled.len() {
        if plan.next() % 3 == 0 {
            mangled.swap(i - 1, i);
        }
    }
    mangled
}

/// The capture of one connection carrying `exchanges` one after the other (the next
/// request goes out after the previous response), mangled when `plan` is given.
pub fn capture(exchanges: &[ExSpec], plan: Option<&[u8]>) -> Vec<u8> {
    let mut plan = plan.map(|bytes| Plan { bytes, at: 0 });
    let (cisn, sisn) = (1_000u32, 4_000_000_000u32); // the server's wraps around
    let mut segs = Vec::new();
    let (mut c_off, mut s_off) = (0u32, 0u32);
    for x in exchanges {
        let req = x.request();
        segs.extend(segments(true, c_off, &req, plan.as_mut()));
        c_off += req.len() as u32;
        let resp = x.response();
        segs.extend(segments(false, s_off, &resp, plan.as_mut()));
        s_off += resp.len() as u32;
    }
    let mut w = Writer::default();
    let (c, s) = (([10, 0, 0, 1], 40_000u16), ([10, 0, 0, 2], 80u16));
    w.packet(c, s, cisn, true, false, false, &[]);
    w.packet(s, c, sisn, true, true, false, &[]);
    for seg in &segs {
        let (from, to, isn) = if seg.client {
            (c, s, cisn)
        } else {
            (s, c, sisn)
        };
        w.packet(
            from,
            to,
            isn.wrapping_add(1).wrapping_add(seg.off),
            false,
            true,
            false,
            &seg.data,
        );
    }
    w.packet(
        c,
        s,
        cisn.wrapping_add(1).wrapping_add(c_off),
        false,
        true,
        true,
        &[],
    );
    w.packet(
        s,
        c,
        sisn.wrapping_add(1).wrapping_add(s_off),
        false,
        true,
        true,
        &[],
    );
    w.out
}

/// A classic pcap (Ethernet, microseconds) being written.
struct Writer {
    out: Vec<u8>,
    n: u32,
}

impl Default for Writer {
    fn default() -> Self {
        let mut out = Vec::new();
        out.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&4u16.to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&262_144u32.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        Writer { out, n: 0 }
    }
}

impl Writer {
    #[allow(clippy::too_many_arguments)]
    fn packet(
        &mut self,
        from: ([u8; 4], u16),
        to: ([u8; 4], u16),
        seq: u32,
        syn: bool,
        ack: bool,
        fin: bool,
        payload: &[u8],
    ) {
        let mut b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4(from.0, to.0, 64)
            .tcp(from.1, to.1, seq, 65_535);
        if syn {
            b = b.syn();
        }
        if ack {
            b = b.ack(1);
        }
        if fin {
            b = b.fin();
        }
        let mut frame = Vec::with_capacity(b.size(payload.len()));
        b.write(&mut frame, payload).expect("a frame is written");
        self.n += 1;
        self.out.extend_from_slice(&self.n.to_le_bytes()); // seconds: one per packet
        self.out.extend_from_slice(&0u32.to_le_bytes());
        self.out
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.out
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.out.extend_from_slice(&frame);
    }
}

/// What a capture's exchanges say, without timestamps and frame numbers (which
/// depend on the segments): one line per exchange, then the problems' kinds.
pub fn exchanges(pcap: &[u8]) -> Vec<String> {
    let mut sink = Collect::default();
    ingest(pcap, &Limits::default(), &mut sink).expect("the capture is read");
    let mut out: Vec<String> = sink
        .exchanges
        .iter()
        .map(|x| match &x.payload {
            Payload::Http(h) => {
                let resp = h.response.as_ref().map(|r| {
                    let body = match &r.body {
                        Body::Bytes(b) => format!("{:?}", String::from_utf8_lossy(b)),
                        Body::Sse(s) => format!(
                            "{:?} tail {:?}",
                            s.events
                                .iter()
                                .map(|e| (&e.event, &e.data, e.offset))
                                .collect::<Vec<_>>(),
                            s.incomplete_tail
                        ),
                        Body::NotRecorded => "not recorded".into(),
                    };
                    format!(
                        "{} {:?} {body}",
                        r.status,
                        r.headers.iter().collect::<Vec<_>>()
                    )
                });
                format!(
                    "{} {} {:?} {:?} -> {resp:?} {:?}",
                    h.request.method,
                    h.request.url,
                    h.request.headers.iter().collect::<Vec<_>>(),
                    String::from_utf8_lossy(&h.request.body),
                    h.end
                )
            }
            other => format!("{other:?}"),
        })
        .collect();
    out.extend(
        sink.problems
            .iter()
            .map(|p| format!("problem {:?}", p.kind)),
    );
    out
}
