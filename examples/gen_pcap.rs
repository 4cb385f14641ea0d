//! Writes a large synthetic pcap of MCP traffic for benchmarking the pcap reader
//! (`docs/performance.md`): many keep-alive connections on loopback, interleaved,
//! each with `tools/call`s answered by JSON or by SSE (progress, then the result),
//! bodies split into 1448-byte segments as on a real link.
//!
//! `cargo run --release --example gen_pcap -- OUT.pcap [MEGABYTES]`

use etherparse::PacketBuilder;
use std::fs::File;
use std::io::{BufWriter, Write};

const MSS: usize = 1448;

struct Conn {
    port: u16,
    cseq: u32,
    sseq: u32,
    calls: u64,
}

struct Writer<W: Write> {
    out: W,
    ts_us: u64,
    bytes: u64,
}

impl<W: Write> Writer<W> {
    fn segment(
        &mut self,
        c: &Conn,
        client: bool,
        flags: &str,
        payload: &[u8],
    ) -> std::io::Result<()> {
        let (sport, dport, seq, ack) = if client {
            (c.port, 8000, c.cseq, c.sseq)
        } else {
            (8000, c.port, c.sseq, c.cseq)
        };
        let mut tcp = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
            .ipv4([127, 0, 0, 1], [127, 0, 0, 1], 64)
            .tcp(sport, dport, seq, 65535);
        if flags.contains('S') {
            tcp = tcp.syn();
        }
        if flags.contains('F') {
            tcp = tcp.fin();
        }
        if !(flags.contains('S') && client) {
            tcp = tcp.ack(ack);
        }
        let mut frame = Vec::with_capacity(payload.len() + 64);
        tcp.write(&mut frame, payload)
            .map_err(std::io::Error::other)?;
        self.ts_us += 37;
        let (s, us) = (self.ts_us / 1_000_000, self.ts_us % 1_000_000);
        for v in [s as u32, us as u32, frame.len() as u32, frame.len() as u32] {
            self.out.write_all(&v.to_le_bytes())?;
        }
        self.out.write_all(&frame)?;
        self.bytes += 16 + frame.len() as u64;
        Ok(())
    }

    fn send(&mut self, c: &mut Conn, client: bool, data: &[u8]) -> std::io::Result<()> {
        for piece in data.chunks(MSS) {
            self.segment(c, client, "", piece)?;
            if client {
                c.cseq = c.cseq.wrapping_add(piece.len() as u32);
            } else {
                c.sseq = c.sseq.wrapping_add(piece.len() as u32);
            }
        }
        Ok(())
    }
}

fn request(id: u64, text: &str) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"search","arguments":{{"q":"{text}","n":{id}}}}}}}"#
    );
    format!("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: bench\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn result(id: u64, filler: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{filler}"}}]}}}}"#
    )
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "bench.pcap".into());
    let megabytes: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(256);
    let mut w = Writer {
        out: BufWriter::with_capacity(1 << 20, File::create(&path)?),
        ts_us: 1_780_000_000_000_000,
        bytes: 24,
    };
    w.out.write_all(&0xa1b2c3d4u32.to_le_bytes())?;
    w.out.write_all(&2u16.to_le_bytes())?;
    w.out.write_all(&4u16.to_le_bytes())?;
    for v in [0u32, 0, 262144, 1] {
        w.out.write_all(&v.to_le_bytes())?;
    }
    let filler: String = "lorem ipsum dolor sit amet ".repeat(150); // ~4 KiB results
    let mut conns: Vec<Conn> = (0..64)
        .map(|i| Conn {
            port: 40000 + i,
            cseq: 1000u32.wrapping_mul(u32::from(i) + 1),
            sseq: u32::MAX - 5000 * u32::from(i),
            calls: 0,
        })
        .collect();
    for c in conns.iter_mut() {
        w.segment(c, true, "S", b"")?;
        c.cseq = c.cseq.wrapping_add(1);
        w.segment(c, false, "S", b"")?;
        c.sseq = c.sseq.wrapping_add(1);
    }
    let mut id = 0u64;
    let target = megabytes << 20;
    while w.bytes < target {
        for c in conns.iter_mut() {
            id += 1;
            c.calls += 1;
            w.send(c, true, &request(id, "bench"))?;
            if id % 2 == 0 {
                let body = result(id, &filler);
                let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len());
                let mut resp = head.into_bytes();
                resp.extend_from_slice(body.as_bytes());
                w.send(c, false, &resp)?;
            } else {
                let mut resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                for p in 1..=3 {
                    let ev = format!("event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":{id},\"progress\":{p}}}}}\n\n");
                    resp.extend_from_slice(format!("{:x}\r\n{ev}\r\n", ev.len()).as_bytes());
                }
                let ev = format!("event: message\ndata: {}\n\n", result(id, &filler));
                resp.extend_from_slice(format!("{:x}\r\n{ev}\r\n0\r\n\r\n", ev.len()).as_bytes());
                w.send(c, false, &resp)?;
            }
        }
    }
    for c in conns.iter_mut() {
        w.segment(c, false, "F", b"")?;
        c.sseq = c.sseq.wrapping_add(1);
        w.segment(c, true, "F", b"")?;
    }
    w.out.flush()?;
    eprintln!("{path}: {} bytes, {id} tools/call", w.bytes);
    Ok(())
}
