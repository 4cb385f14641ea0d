//! Test-only capture writer: scripted TCP conversations → pcap or pcapng bytes, so
//! the pcap tests can state exactly which segments a capture holds (reordered,
//! repeated, lost, cut) without binary fixtures.

#![allow(dead_code)]

pub mod mangle;
// Runs the built binary and reads JSON: not for the fuzz targets, which share the
// capture writer but build without the binary or serde_json (`cargo fuzz` sets
// `fuzzing`).
#[cfg(not(fuzzing))]
pub mod run;

use etherparse::PacketBuilder;
use std::net::IpAddr;

/// Link-layer framing to wrap IP packets in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    Ethernet,
    Vlan,
    Sll,
    Sll2,
    NullLe,
    NullBe,
    Loop,
    Raw,
}

impl Link {
    pub fn linktype(self) -> u32 {
        match self {
            Link::Ethernet | Link::Vlan => 1,
            Link::Sll => 113,
            Link::Sll2 => 276,
            Link::NullLe | Link::NullBe => 0,
            Link::Loop => 108,
            Link::Raw => 101,
        }
    }

    fn wrap(self, ip: &[u8], v6: bool) -> Vec<u8> {
        let et: u16 = if v6 { 0x86dd } else { 0x0800 };
        let mut f = Vec::new();
        match self {
            Link::Ethernet | Link::Vlan => {
                f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
                if self == Link::Vlan {
                    f.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a]);
                }
                f.extend_from_slice(&et.to_be_bytes());
            }
            Link::Sll => {
                f.extend_from_slice(&[0, 0]); // packet type: to us
                f.extend_from_slice(&772u16.to_be_bytes()); // ARPHRD_LOOPBACK
                f.extend_from_slice(&6u16.to_be_bytes());
                f.extend_from_slice(&[0; 8]);
                f.extend_from_slice(&et.to_be_bytes());
            }
            Link::Sll2 => {
                f.extend_from_slice(&et.to_be_bytes());
                f.extend_from_slice(&[0, 0]); // reserved
                f.extend_from_slice(&1u32.to_be_bytes()); // ifindex
                f.extend_from_slice(&772u16.to_be_bytes());
                f.extend_from_slice(&[0, 6]);
                f.extend_from_slice(&[0; 8]);
            }
            Link::NullLe => f.extend_from_slice(&(if v6 { 30u32 } else { 2 }).to_le_bytes()),
            Link::NullBe | Link::Loop => {
                f.extend_from_slice(&(if v6 { 30u32 } else { 2 }).to_be_bytes())
            }
            Link::Raw => {}
        }
        f.extend_from_slice(ip);
        f
    }
}

/// One captured frame.
#[derive(Debug, Clone)]
pub struct Frame {
    pub ts_ns: i64,
    pub data: Vec<u8>,
    pub orig_len: u32,
    pub iface: u32,
}

impl Frame {
    /// Cuts the frame to `n` captured bytes (snap length).
    pub fn snap(&mut self, n: usize) {
        self.data.truncate(n);
    }
}

/// Who sends a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// One scripted TCP connection, seq numbers tracked per side.
#[derive(Debug, Clone)]
pub struct Conn {
    pub client: (IpAddr, u16),
    pub server: (IpAddr, u16),
    pub link: Link,
    pub iface: u32,
    pub cseq: u32,
    pub sseq: u32,
}

pub const F_SYN: u8 = 1;
pub const F_FIN: u8 = 2;
pub const F_RST: u8 = 4;

/// A capture being scripted: frames in capture order and a clock.
#[derive(Debug, Default)]
pub struct Capture {
    pub frames: Vec<Frame>,
    /// Nanoseconds since the epoch of the next frame.
    pub now: i64,
}

pub const T0: i64 = 1_780_000_000_000_000_000;

impl Capture {
    pub fn new() -> Capture {
        Capture {
            frames: Vec::new(),
            now: T0,
        }
    }

    pub fn conn(&self, link: Link, client_port: u16, isn: (u32, u32)) -> Conn {
        Conn {
            client: ("127.0.0.1".parse().unwrap(), client_port),
            server: ("127.0.0.1".parse().unwrap(), 8000),
            link,
            iface: 0,
            cseq: isn.0,
            sseq: isn.1,
        }
    }

    pub fn conn6(&self, link: Link, client_port: u16) -> Conn {
        Conn {
            client: ("::1".parse().unwrap(), client_port),
            server: ("::1".parse().unwrap(), 8000),
            link,
            iface: 0,
            cseq: 1000,
            sseq: 5000,
        }
    }

    /// A raw segment at an explicit sequence number (does not move the script's seq).
    pub fn raw(&mut self, c: &Conn, side: Side, seq: u32, flags: u8, payload: &[u8]) {
        let (src, dst) = match side {
            Side::Client => (c.client, c.server),
            Side::Server => (c.server, c.client),
        };
        let ack = match side {
            Side::Client => c.sseq,
            Side::Server => c.cseq,
        };
        let v6 = src.0.is_ipv6();
        let builder = match (src.0, dst.0) {
            (IpAddr::V4(a), IpAddr::V4(b)) => PacketBuilder::ipv4(a.octets(), b.octets(), 64),
            (IpAddr::V6(a), IpAddr::V6(b)) => PacketBuilder::ipv6(a.octets(), b.octets(), 64),
            _ => panic!("mixed address families"),
        };
        let mut tcp = builder.tcp(src.1, dst.1, seq, 65535);
        if flags & F_SYN != 0 {
            tcp = tcp.syn();
        }
        if flags & F_FIN != 0 {
            tcp = tcp.fin();
        }
        if flags & F_RST != 0 {
            tcp = tcp.rst();
        }
        if !(flags & F_SYN != 0 && side == Side::Client) {
            tcp = tcp.ack(ack);
        }
        let mut ip = Vec::new();
        tcp.write(&mut ip, payload).unwrap();
        let data = c.link.wrap(&ip, v6);
        self.frames.push(Frame {
            ts_ns: self.now,
            orig_len: data.len() as u32,
            data,
            iface: c.iface,
        });
        self.now += 1_000_000;
    }

    /// Sends `payload` as one segment from `side`, advancing that side's seq.
    pub fn send(&mut self, c: &mut Conn, side: Side, payload: &[u8]) {
        self.send_flags(c, side, 0, payload);
    }

    pub fn send_flags(&mut self, c: &mut Conn, side: Side, flags: u8, payload: &[u8]) {
        let seq = match side {
            Side::Client => c.cseq,
            Side::Server => c.sseq,
        };
        self.raw(c, side, seq, flags, payload);
        let used = payload.len() as u32 + u32::from(flags & (F_SYN | F_FIN) != 0);
        match side {
            Side::Client => c.cseq = c.cseq.wrapping_add(used),
            Side::Server => c.sseq = c.sseq.wrapping_add(used),
        }
    }

    /// Sends `payload` split into segments of at most `mss` bytes.
    pub fn send_split(&mut self, c: &mut Conn, side: Side, payload: &[u8], mss: usize) {
        for piece in payload.chunks(mss.max(1)) {
            self.send(c, side, piece);
        }
    }

    pub fn handshake(&mut self, c: &mut Conn) {
        self.send_flags(c, Side::Client, F_SYN, b"");
        self.send_flags(c, Side::Server, F_SYN, b"");
        self.send(c, Side::Client, b"");
    }

    pub fn fin(&mut self, c: &mut Conn, side: Side) {
        self.send_flags(c, side, F_FIN, b"");
    }

    pub fn rst(&mut self, c: &mut Conn, side: Side) {
        self.send_flags(c, side, F_RST, b"");
    }

    /// Legacy pcap bytes: one link type for all frames.
    pub fn pcap(&self, link: Link, big_endian: bool, nanos: bool) -> Vec<u8> {
        let w32 = |v: u32, out: &mut Vec<u8>| {
            out.extend_from_slice(&if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        let w16 = |v: u16, out: &mut Vec<u8>| {
            out.extend_from_slice(&if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            })
        };
        let mut out = Vec::new();
        w32(if nanos { 0xa1b23c4d } else { 0xa1b2c3d4 }, &mut out);
        w16(2, &mut out);
        w16(4, &mut out);
        w32(0, &mut out);
        w32(0, &mut out);
        w32(262144, &mut out);
        w32(link.linktype(), &mut out);
        for f in &self.frames {
            let secs = f.ts_ns.div_euclid(1_000_000_000);
            let ns = f.ts_ns.rem_euclid(1_000_000_000);
            w32(secs as u32, &mut out);
            w32(if nanos { ns as u32 } else { (ns / 1000) as u32 }, &mut out);
            w32(f.data.len() as u32, &mut out);
            w32(f.orig_len, &mut out);
            out.extend_from_slice(&f.data);
        }
        out
    }

    /// pcapng bytes: one IDB per `(link, tsresol)`; frames name their interface.
    /// Frames on an interface whose `tsresol` is `None` are written as simple
    /// packet blocks (no timestamp) — only valid for interface 0.
    pub fn pcapng(&self, ifaces: &[(Link, u8)], big_endian: bool, spb: bool) -> Vec<u8> {
        let w32 = |v: u32| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w16 = |v: u16| {
            if big_endian {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut out = Vec::new();
        let block = |out: &mut Vec<u8>, ty: u32, body: &[u8]| {
            let pad = (4 - body.len() % 4) % 4;
            let len = 12 + body.len() + pad;
            out.extend_from_slice(&w32(ty));
            out.extend_from_slice(&w32(len as u32));
            out.extend_from_slice(body);
            out.extend(std::iter::repeat_n(0u8, pad));
            out.extend_from_slice(&w32(len as u32));
        };
        // SHB
        let mut shb = Vec::new();
        shb.extend_from_slice(&w32(0x1a2b3c4d));
        shb.extend_from_slice(&w16(1));
        shb.extend_from_slice(&w16(0));
        shb.extend_from_slice(&(-1i64).to_le_bytes());
        block(&mut out, 0x0a0d0d0a, &shb);
        // An unknown block type, to be skipped.
        block(&mut out, 0x0bad0001, b"junk");
        for (link, tsresol) in ifaces {
            let mut idb = Vec::new();
            idb.extend_from_slice(&w16(link.linktype() as u16));
            idb.extend_from_slice(&w16(0));
            idb.extend_from_slice(&w32(262144));
            // if_tsresol option (code 9, length 1), then opt_endofopt.
            idb.extend_from_slice(&w16(9));
            idb.extend_from_slice(&w16(1));
            idb.extend_from_slice(&[*tsresol, 0, 0, 0]);
            idb.extend_from_slice(&w16(0));
            idb.extend_from_slice(&w16(0));
            block(&mut out, 1, &idb);
        }
        for f in &self.frames {
            if spb {
                let mut b = Vec::new();
                b.extend_from_slice(&w32(f.orig_len));
                b.extend_from_slice(&f.data);
                block(&mut out, 3, &b);
                continue;
            }
            let tsresol = ifaces.get(f.iface as usize).map(|i| i.1).unwrap_or(6);
            let units = 10u64.pow(u32::from(tsresol));
            let ts = (f.ts_ns as u128 * units as u128 / 1_000_000_000) as u64;
            let mut b = Vec::new();
            b.extend_from_slice(&w32(f.iface));
            b.extend_from_slice(&w32((ts >> 32) as u32));
            b.extend_from_slice(&w32(ts as u32));
            b.extend_from_slice(&w32(f.data.len() as u32));
            b.extend_from_slice(&w32(f.orig_len));
            b.extend_from_slice(&f.data);
            block(&mut out, 6, &b);
        }
        out
    }
}

/// An MCP `tools/call` POST with a JSON body.
pub fn call_request(id: u64, extra_headers: &str) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"n":{id}}}}}}}"#
    );
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: s1\r\n{extra_headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The JSON-RPC success result for `id`.
pub fn result_json(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok {id}"}}]}}}}"#
    )
}

/// A `200 application/json` response carrying the result for `id`.
pub fn json_response(id: u64) -> Vec<u8> {
    let body = result_json(id);
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The head of a `200 text/event-stream` response.
pub fn sse_head(chunked: bool) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n{}\r\n",
        if chunked {
            "Transfer-Encoding: chunked\r\n"
        } else {
            ""
        }
    )
    .into_bytes()
}

/// One chunk of chunked transfer coding.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A progress notification as an SSE event.
pub fn progress_event() -> Vec<u8> {
    b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n".to_vec()
}

/// The result for `id` as an SSE event.
pub fn result_event(id: u64) -> Vec<u8> {
    format!("event: message\ndata: {}\n\n", result_json(id)).into_bytes()
}
