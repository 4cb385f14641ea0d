//! End-to-end pcap/pcapng tests: scripted captures (see `common`) through the real
//! reader, asserting exchanges and the shared classifier's verdicts.

mod common;

use common::*;
use mcpsift::config::{Config, Limits};
use mcpsift::correlate::Analysis;
use mcpsift::ingest::{ingest, Collect, Format, Kind};
use mcpsift::model::{Body, End, HttpExchange, Locator, Payload, Timestamp};
use proptest::prelude::*;
use std::io::Cursor;

fn analyse(bytes: &[u8]) -> Analysis {
    let (_, a) = mcpsift::batch::analyse_reader(Cursor::new(bytes.to_vec()), &Config::default())
        .expect("capture is read");
    a
}

/// `id OUTCOME` per call, in input order.
fn outcomes(bytes: &[u8]) -> Vec<String> {
    analyse(bytes)
        .calls
        .iter()
        .map(|c| format!("{} {}", c.id, c.verdict.outcome))
        .collect()
}

fn collect(bytes: &[u8]) -> (Format, Collect) {
    let mut sink = Collect::default();
    let f = ingest(Cursor::new(bytes.to_vec()), &Limits::default(), &mut sink).expect("read");
    (f, sink)
}

fn http(c: &Collect) -> Vec<&HttpExchange> {
    c.exchanges
        .iter()
        .map(|x| match &x.payload {
            Payload::Http(h) => h,
            other => panic!("not http: {other:?}"),
        })
        .collect()
}

fn problems(c: &Collect) -> Vec<String> {
    c.problems.iter().map(|p| p.message.clone()).collect()
}

/// Notices: what a flow was, when that is no fault of the capture.
fn notices(c: &Collect) -> Vec<String> {
    c.notices.iter().map(|p| p.message.clone()).collect()
}

fn ms(n: i64) -> Option<Timestamp> {
    Some(Timestamp(T0 + n * 1_000_000))
}

/// One JSON call and its response on a fresh connection.
fn simple(cap: &mut Capture, c: &mut Conn, id: u64) {
    cap.handshake(c);
    cap.send(c, Side::Client, &call_request(id, ""));
    cap.send(c, Side::Server, &json_response(id));
    cap.fin(c, Side::Server);
    cap.fin(c, Side::Client);
}

#[test]
fn every_link_type_and_both_ip_versions() {
    for link in [
        Link::Ethernet,
        Link::Vlan,
        Link::Sll,
        Link::Sll2,
        Link::NullLe,
        Link::NullBe,
        Link::Loop,
        Link::Raw,
    ] {
        for v6 in [false, true] {
            let mut cap = Capture::new();
            let mut c = if v6 {
                cap.conn6(link, 40000)
            } else {
                cap.conn(link, 40000, (1000, 5000))
            };
            simple(&mut cap, &mut c, 7);
            let bytes = cap.pcap(link, false, false);
            assert_eq!(outcomes(&bytes), ["7 TOOL_SUCCESS"], "{link:?} v6={v6}");
            let (format, got) = collect(&bytes);
            assert_eq!(format, Format::Pcap);
            assert!(got.problems.is_empty(), "{link:?}: {:?}", problems(&got));
            let x = http(&got);
            assert_eq!(x.len(), 1);
            assert_eq!(x[0].end, End::Complete);
            assert_eq!(
                x[0].request.url, "http://127.0.0.1:8000/mcp",
                "URL is built from Host"
            );
            // Frames: SYN, SYN-ACK, ACK, request (4), response (5).
            assert_eq!(
                got.exchanges[0].locator,
                Locator::Frames {
                    request: 4,
                    response: Some(5)
                }
            );
            assert_eq!(x[0].request.ts, ms(3));
            assert_eq!(x[0].response.as_ref().unwrap().ts, ms(4));
            assert_eq!(x[0].end_ts, ms(4));
        }
    }
}

#[test]
fn pcap_byte_orders_and_nanosecond_timestamps() {
    for be in [false, true] {
        for nanos in [false, true] {
            let mut cap = Capture::new();
            cap.now += 123_456_789; // sub-microsecond part only survives in ns files
            let mut c = cap.conn(Link::Ethernet, 40001, (1, 2));
            simple(&mut cap, &mut c, 1);
            let bytes = cap.pcap(Link::Ethernet, be, nanos);
            assert_eq!(outcomes(&bytes), ["1 TOOL_SUCCESS"]);
            let (_, got) = collect(&bytes);
            let want = T0 + 123_456_789 + 3_000_000;
            let want = if nanos { want } else { want - want % 1000 };
            assert_eq!(http(&got)[0].request.ts, Some(Timestamp(want)));
        }
    }
}

#[test]
fn pcapng_two_interfaces_with_their_own_link_types_and_clocks() {
    for be in [false, true] {
        let mut cap = Capture::new();
        let mut a = cap.conn(Link::Ethernet, 40010, (10, 20));
        let mut b = cap.conn(Link::Raw, 40011, (30, 40));
        b.iface = 1;
        cap.handshake(&mut a);
        cap.handshake(&mut b);
        cap.send(&mut a, Side::Client, &call_request(1, ""));
        cap.send(&mut b, Side::Client, &call_request(2, ""));
        cap.now += 777; // ns: only the ns interface keeps it
        cap.send(&mut b, Side::Server, &json_response(2));
        cap.send(&mut a, Side::Server, &json_response(1));
        let bytes = cap.pcapng(&[(Link::Ethernet, 6), (Link::Raw, 9)], be, false);
        let (format, got) = collect(&bytes);
        assert_eq!(format, Format::Pcapng);
        assert!(got.problems.is_empty(), "{:?}", problems(&got));
        let mut seen: Vec<(String, Option<Timestamp>)> = http(&got)
            .iter()
            .map(|x| {
                (
                    String::from_utf8_lossy(&x.request.body).into_owned(),
                    x.response.as_ref().unwrap().ts,
                )
            })
            .collect();
        seen.sort();
        assert!(seen[0].0.contains("\"id\":1"));
        assert_eq!(seen[0].1, ms(9)); // µs interface: the 777 ns are gone
        assert_eq!(seen[1].1, Some(Timestamp(T0 + 8_000_000 + 777)));
        // Both connections were still open at the end of the capture.
        assert!(http(&got).iter().all(|x| x.end == End::Complete));
        let mut o = outcomes(&bytes);
        o.sort();
        assert_eq!(o, ["1 TOOL_SUCCESS", "2 TOOL_SUCCESS"]);
    }
}

#[test]
fn pcapng_simple_packet_blocks() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Sll2, 40012, (1, 1));
    simple(&mut cap, &mut c, 3);
    let bytes = cap.pcapng(&[(Link::Sll2, 6)], false, true);
    assert_eq!(outcomes(&bytes), ["3 TOOL_SUCCESS"]);
}

#[test]
fn reordered_duplicated_and_wrapped_segments() {
    let mut cap = Capture::new();
    // ISNs just below 2^32 so both streams wrap inside the exchange.
    let mut c = cap.conn(Link::Ethernet, 40020, (u32::MAX - 40, u32::MAX - 10));
    cap.handshake(&mut c);
    cap.send_split(&mut c, Side::Client, &call_request(5, ""), 50);
    let first_resp = cap.frames.len();
    cap.send_split(&mut c, Side::Server, &json_response(5), 30);
    let n = cap.frames.len();
    // Response segments in reverse, each sent twice.
    let resp: Vec<Frame> = cap.frames.drain(first_resp..n).rev().collect();
    for f in resp {
        cap.frames.push(f.clone());
        cap.frames.push(f);
    }
    cap.fin(&mut c, Side::Server);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    assert_eq!(outcomes(&bytes), ["5 TOOL_SUCCESS"]);
    let (_, got) = collect(&bytes);
    assert!(got.problems.is_empty(), "{:?}", problems(&got));
    let x = http(&got);
    assert_eq!(x[0].end, End::Complete);
    match &x[0].response.as_ref().unwrap().body {
        Body::Bytes(b) => assert_eq!(b, result_json(5).as_bytes()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn conflicting_retransmission_keeps_the_first_copy_and_says_so() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40021, (100, 200));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(6, ""));
    let resp = json_response(6);
    let start = c.sseq;
    cap.send(&mut c, Side::Server, &resp);
    let mut forged = resp.clone();
    let last = forged.len() - 3;
    forged[last] = b'X';
    cap.raw(&c, Side::Server, start, 0, &forged);
    cap.fin(&mut c, Side::Server);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    assert_eq!(outcomes(&bytes), ["6 TOOL_SUCCESS"]);
    let (_, got) = collect(&bytes);
    assert_eq!(
        problems(&got),
        ["TCP 127.0.0.1:8000 → 127.0.0.1:40021: 1 retransmitted bytes differ from the first copy (the first copy is kept)"]
    );
}

#[test]
fn lost_segment_marks_the_exchange_truncated() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40022, (100, 200));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(8, ""));
    let before = cap.frames.len();
    cap.send_split(&mut c, Side::Server, &json_response(8), 40);
    cap.frames.remove(before + 2); // a segment inside the body
                                   // A second exchange on the same connection is still read after the hole.
    cap.send(&mut c, Side::Client, &call_request(9, ""));
    cap.send(&mut c, Side::Server, &json_response(9));
    cap.fin(&mut c, Side::Server);
    cap.fin(&mut c, Side::Client);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    let (_, got) = collect(&bytes);
    let x = http(&got);
    assert_eq!(x.len(), 2);
    assert_eq!(x[0].end, End::Truncated);
    assert_eq!(x[1].end, End::Complete);
    assert_eq!(
        problems(&got),
        ["TCP 127.0.0.1:8000 → 127.0.0.1:40022: 40 bytes are missing from the capture (lost packets or snap length)"]
    );
    assert_eq!(outcomes(&bytes), ["8 STREAM_INCOMPLETE", "9 TOOL_SUCCESS"]);
}

#[test]
fn snapped_last_packet_and_truncated_file() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40023, (100, 200));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(10, ""));
    cap.send(&mut c, Side::Server, &json_response(10));
    let last = cap.frames.len() - 1;
    let keep = cap.frames[last].data.len() - 10;
    cap.frames[last].snap(keep);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    let (_, got) = collect(&bytes);
    assert_eq!(http(&got)[0].end, End::Truncated);
    assert_eq!(outcomes(&bytes), ["10 STREAM_INCOMPLETE"]);
    // Once for the file: how many packets were cut, at what length, and the fix.
    assert_eq!(
        notices(&got),
        [format!("1 packet(s) were captured cut short (at most {keep} bytes kept of each: the capture's snap length); what they carried past that is missing. Capture whole packets with `tcpdump -s 0`")]
    );

    // The file itself cut inside the last record.
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40024, (100, 200));
    simple(&mut cap, &mut c, 11);
    cap.send(&mut c, Side::Client, &call_request(12, ""));
    let bytes = cap.pcap(Link::Ethernet, false, false);
    let cut = &bytes[..bytes.len() - 20];
    let (_, got) = collect(cut);
    assert_eq!(
        problems(&got),
        ["after frame 7: the file ends inside a record: the capture is truncated (was tcpdump killed?)"]
    );
    assert_eq!(outcomes(cut), ["11 TOOL_SUCCESS"]);
}

#[test]
fn garbage_never_panics() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40025, (1, 2));
    simple(&mut cap, &mut c, 1);
    let good = cap.pcap(Link::Ethernet, false, false);
    let good_ng = cap.pcapng(&[(Link::Ethernet, 6)], false, false);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for base in [&good, &good_ng] {
        for i in 0..300 {
            let mut b = base.clone();
            for _ in 0..(1 + i % 8) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let at = 4 + (seed as usize % (b.len() - 4));
                b[at] = (seed >> 32) as u8;
            }
            b.truncate(b.len() - (seed as usize >> 40) % 64);
            let _ = mcpsift::batch::analyse_reader(Cursor::new(b), &Config::default());
        }
    }
    // A valid header followed by noise: a problem, not an error.
    let mut noise = good[..24].to_vec();
    noise.extend_from_slice(&[0xff; 100]);
    let (_, got) = collect(&noise);
    assert_eq!(got.problems.len(), 1, "{:?}", problems(&got));
}

#[test]
fn keep_alive_and_pipelining_pair_in_order() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40030, (1, 2));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    cap.send(&mut c, Side::Server, &json_response(1));
    cap.send(&mut c, Side::Client, &call_request(2, ""));
    cap.send(&mut c, Side::Server, &json_response(2));
    // Pipelined: two requests in one segment, two responses in one segment.
    let mut two = call_request(3, "");
    two.extend_from_slice(&call_request(4, ""));
    cap.send(&mut c, Side::Client, &two);
    let mut both = json_response(3);
    both.extend_from_slice(&json_response(4));
    cap.send(&mut c, Side::Server, &both);
    cap.fin(&mut c, Side::Client);
    cap.fin(&mut c, Side::Server);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    assert_eq!(
        outcomes(&bytes),
        [
            "1 TOOL_SUCCESS",
            "2 TOOL_SUCCESS",
            "3 TOOL_SUCCESS",
            "4 TOOL_SUCCESS"
        ]
    );
    let (_, got) = collect(&bytes);
    let locs: Vec<String> = got
        .exchanges
        .iter()
        .map(|x| x.locator.to_string())
        .collect();
    assert_eq!(
        locs,
        ["frames 4/5", "frames 6/7", "frames 8/9", "frames 8/9"]
    );
}

#[test]
fn chunked_with_trailers_gzip_and_100_continue() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40031, (1, 2));
    cap.handshake(&mut c);
    // 100-continue: head first, interim response, then the body.
    let req = call_request(1, "Expect: 100-continue\r\n");
    let split = req.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    cap.send(&mut c, Side::Client, &req[..split]);
    cap.send(&mut c, Side::Server, b"HTTP/1.1 100 Continue\r\n\r\n");
    cap.send(&mut c, Side::Client, &req[split..]);
    // Chunked with a trailer.
    let body = result_json(1);
    let mut resp = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n".to_vec();
    resp.extend_from_slice(&chunk(&body.as_bytes()[..10]));
    resp.extend_from_slice(&chunk(&body.as_bytes()[10..]));
    resp.extend_from_slice(b"0\r\nX-Checksum: abc\r\n\r\n");
    cap.send_split(&mut c, Side::Server, &resp, 7);
    // gzip, Content-Length framed.
    cap.send(&mut c, Side::Client, &call_request(2, ""));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, result_json(2).as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let mut resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        gz.len()
    )
    .into_bytes();
    resp.extend_from_slice(&gz);
    cap.send_split(&mut c, Side::Server, &resp, 20);
    // HEAD: Content-Length without a body; the next response is still found.
    cap.send(
        &mut c,
        Side::Client,
        b"HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n",
    );
    cap.send(
        &mut c,
        Side::Server,
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",
    );
    cap.send(&mut c, Side::Client, &call_request(3, ""));
    cap.send(&mut c, Side::Server, &json_response(3));
    let bytes = cap.pcap(Link::Ethernet, false, false);
    assert_eq!(
        outcomes(&bytes),
        ["1 TOOL_SUCCESS", "2 TOOL_SUCCESS", "3 TOOL_SUCCESS"]
    );
    let (_, got) = collect(&bytes);
    assert!(got.problems.is_empty(), "{:?}", problems(&got));
    let x = http(&got);
    let r0 = x[0].response.as_ref().unwrap();
    assert_eq!(r0.status, 200);
    assert_eq!(r0.headers.get("x-checksum"), Some("abc"));
    assert_eq!(x[2].request.method, "HEAD");
    assert_eq!(
        x[2].response.as_ref().unwrap().body,
        Body::Bytes(Vec::new())
    );
    // The capture ended with the connection open, but every body was delimited.
    assert!(x.iter().all(|x| x.end == End::Complete));
}

/// An SSE response: progress, then `tail` events, then how it ends.
fn sse_capture(finish: impl FnOnce(&mut Capture, &mut Conn)) -> Vec<u8> {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Sll, 40040, (1, 2));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    cap.send(&mut c, Side::Server, &sse_head(true));
    cap.send(&mut c, Side::Server, &chunk(&progress_event()));
    finish(&mut cap, &mut c);
    cap.pcap(Link::Sll, false, false)
}

#[test]
fn sse_progress_then_result_succeeds_with_packet_timestamps() {
    let bytes = sse_capture(|cap, c| {
        let ev = result_event(1);
        let wire = chunk(&ev);
        // The result event spans two packets: it is complete at the second one.
        cap.send(c, Side::Server, &wire[..20]);
        cap.send(c, Side::Server, &wire[20..]);
        cap.send(c, Side::Server, b"0\r\n\r\n");
    });
    assert_eq!(outcomes(&bytes), ["1 TOOL_SUCCESS"]);
    let (_, got) = collect(&bytes);
    let x = http(&got);
    assert_eq!(x[0].end, End::Complete);
    let Body::Sse(sse) = &x[0].response.as_ref().unwrap().body else {
        panic!("not sse")
    };
    let ts: Vec<Option<Timestamp>> = sse.events.iter().map(|e| e.ts).collect();
    assert_eq!(ts, [ms(5), ms(7)]);
    assert_eq!(x[0].end_ts, ms(8));
}

#[test]
fn sse_endings_server_fin_client_fin_reset_capture_end() {
    type Ending = fn(&mut Capture, &mut Conn);
    let cases: [(Ending, End); 6] = [
        (|cap, c| cap.fin(c, Side::Server), End::Closed),
        (
            |cap, c| {
                cap.fin(c, Side::Client);
                cap.fin(c, Side::Server);
            },
            End::ClientClosed,
        ),
        // A reset the client sends is the client giving up (a 2026-07-28 cancel).
        (|cap, c| cap.rst(c, Side::Client), End::ClientClosed),
        (|cap, c| cap.rst(c, Side::Server), End::Reset),
        // The server writing to a socket the client closed draws a reset: still the
        // client's doing.
        (
            |cap, c| {
                cap.fin(c, Side::Client);
                cap.rst(c, Side::Server);
            },
            End::ClientClosed,
        ),
        (|_, _| {}, End::CaptureEnded),
    ];
    for (finish, end) in cases {
        let bytes = sse_capture(finish);
        assert_eq!(outcomes(&bytes), ["1 STREAM_INCOMPLETE"], "{end:?}");
        let (_, got) = collect(&bytes);
        assert_eq!(http(&got)[0].end, end);
        assert!(got.problems.is_empty(), "{:?}", problems(&got));
    }
}

#[test]
fn request_without_response() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40050, (1, 2));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    cap.fin(&mut c, Side::Server);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    assert_eq!(outcomes(&bytes), ["1 NO_RESPONSE"]);
    let (_, got) = collect(&bytes);
    assert_eq!(http(&got)[0].response, None);
    assert_eq!(
        got.exchanges[0].locator,
        Locator::Frames {
            request: 4,
            response: None
        }
    );
}

#[test]
fn tls_and_other_protocols_are_reported_and_an_http2_preface_is_read() {
    let mut cap = Capture::new();
    let mut tls = cap.conn(Link::Ethernet, 40060, (1, 2));
    tls.server.1 = 443;
    cap.handshake(&mut tls);
    cap.send(&mut tls, Side::Client, b"\x16\x03\x01\x00\x05hello");
    cap.send(&mut tls, Side::Server, b"\x16\x03\x03\x00\x02hi");
    let mut h2 = cap.conn(Link::Ethernet, 40061, (1, 2));
    cap.handshake(&mut h2);
    cap.send(&mut h2, Side::Client, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    let mut ssh = cap.conn(Link::Ethernet, 40062, (1, 2));
    ssh.server.1 = 22;
    cap.handshake(&mut ssh);
    cap.send(&mut ssh, Side::Server, b"SSH-2.0-OpenSSH_9.6\r\n");
    let bytes = cap.pcap(Link::Ethernet, false, false);
    let (_, got) = collect(&bytes);
    assert!(got.exchanges.is_empty());
    // Unrelated TLS or SSH beside the MCP traffic is no error in the capture.
    assert!(got.problems.is_empty(), "{:?}", got.problems);
    let p = notices(&got);
    // The HTTP/2 connection is read (`tests/h2.rs`); a preface alone makes no exchange
    // and nothing to report.
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(
        p[0].starts_with(
            "TCP 127.0.0.1:40060 → 127.0.0.1:443 (10 bytes client→server, 7 bytes back): TLS"
        ),
        "{}",
        p[0]
    );
    assert!(
        p[1].contains("not HTTP/1.1 (starts with \"SSH-2.0-OpenSSH_\")"),
        "{}",
        p[1]
    );
    assert_eq!(
        got.notices[0].locator,
        Locator::Frames {
            request: 1,
            response: None
        }
    );
}

#[test]
fn ipv4_fragments_are_reported() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Raw, 40070, (1, 2));
    simple(&mut cap, &mut c, 1);
    // Mark the request packet as a first fragment (MF bit); checksums are not checked.
    let f = &mut cap.frames[3].data;
    f[6] |= 0x20;
    let bytes = cap.pcap(Link::Raw, false, false);
    let (_, got) = collect(&bytes);
    assert_eq!(
        problems(&got)[0],
        "IP fragment 127.0.0.1 → 127.0.0.1: fragments are not reassembled, so its TCP data is lost"
    );
    assert_eq!(got.problems[0].locator.to_string(), "frame 4");
}

/// What an exchange says, without frame numbers and timestamps.
fn gist(c: &Collect) -> Vec<String> {
    http(c)
        .iter()
        .map(|x| {
            let resp = x.response.as_ref().map(|r| {
                let body = match &r.body {
                    Body::Sse(s) => s
                        .events
                        .iter()
                        .map(|e| e.data.clone())
                        .collect::<Vec<_>>()
                        .join("|"),
                    Body::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                    Body::NotRecorded => "-".into(),
                };
                format!("{} {body}", r.status)
            });
            format!(
                "{} {} {} => {:?} {:?}",
                x.request.method,
                x.request.url,
                String::from_utf8_lossy(&x.request.body),
                resp,
                x.end
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    /// Any segmentation and order of the same two byte streams gives the same
    /// exchanges as sending each stream whole.
    #[test]
    fn segmentation_and_order_do_not_change_exchanges(
        cmss in 1usize..200,
        smss in 1usize..200,
        keys in proptest::collection::vec(any::<u16>(), 400),
    ) {
        let mut client = call_request(1, "");
        client.extend_from_slice(&call_request(2, ""));
        let mut server = json_response(1);
        server.extend_from_slice(&sse_head(true));
        server.extend_from_slice(&chunk(&progress_event()));
        server.extend_from_slice(&chunk(&result_event(2)));
        server.extend_from_slice(b"0\r\n\r\n");

        let whole = {
            let mut cap = Capture::new();
            let mut c = cap.conn(Link::Ethernet, 41000, (7, 9));
            cap.handshake(&mut c);
            cap.send(&mut c, Side::Client, &client);
            cap.send(&mut c, Side::Server, &server);
            cap.fin(&mut c, Side::Server);
            cap.fin(&mut c, Side::Client);
            gist(&collect(&cap.pcap(Link::Ethernet, false, false)).1)
        };
        let mut cap = Capture::new();
        let mut c = cap.conn(Link::Ethernet, 41000, (7, 9));
        cap.handshake(&mut c);
        // Each direction is shuffled on its own: a response cannot precede the
        // request it answers, but segments within a direction arrive in any order.
        let hs = cap.frames.len();
        cap.send_split(&mut c, Side::Client, &client, cmss);
        let mid = cap.frames.len();
        cap.send_split(&mut c, Side::Server, &server, smss);
        cap.fin(&mut c, Side::Server);
        let end = cap.frames.len();
        cap.fin(&mut c, Side::Client);
        let mut all: Vec<Frame> = cap.frames.drain(hs..).collect();
        let tail = all.split_off(end - hs);
        let srv = all.split_off(mid - hs);
        for mut part in [all, srv, tail] {
            let mut keyed: Vec<(u16, Frame)> = part
                .drain(..)
                .enumerate()
                .map(|(i, f)| (keys.get(i).copied().unwrap_or(0), f))
                .collect();
            keyed.sort_by_key(|(k, _)| *k);
            cap.frames.extend(keyed.into_iter().map(|(_, f)| f));
        }
        let got = collect(&cap.pcap(Link::Ethernet, false, false)).1;
        prop_assert!(got.problems.is_empty(), "{:?}", problems(&got));
        prop_assert_eq!(gist(&got), whole);
    }
}

#[test]
fn sse_hole_resyncs_at_the_next_event() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40080, (1, 2));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    cap.send(&mut c, Side::Server, &sse_head(false));
    let mut body = progress_event();
    body.extend_from_slice(&progress_event());
    body.extend_from_slice(&result_event(1));
    let lost_from = cap.frames.len() + 1;
    cap.send_split(&mut c, Side::Server, &body, 60);
    cap.frames.remove(lost_from); // inside the first two events
    cap.fin(&mut c, Side::Server);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    let (_, got) = collect(&bytes);
    let x = http(&got);
    assert_eq!(x[0].end, End::Truncated);
    let Body::Sse(sse) = &x[0].response.as_ref().unwrap().body else {
        panic!("not sse")
    };
    // Both progress events touch the hole (the first ends in it, the second is
    // skipped to find an event boundary): nothing is glued across it, and the
    // result after it is still read.
    assert_eq!(sse.events.len(), 1, "{:?}", sse.events);
    assert_eq!(sse.events[0].data, result_json(1));
    assert_eq!(
        sse.problems,
        ["event cut by bytes missing from the capture: event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notification"]
    );
    assert_eq!(outcomes(&bytes), ["1 TOOL_SUCCESS"]);
}

#[test]
fn deflate_zlib_and_raw() {
    for zlib in [true, false] {
        let mut cap = Capture::new();
        let mut c = cap.conn(Link::Ethernet, 40081, (1, 2));
        cap.handshake(&mut c);
        cap.send(&mut c, Side::Client, &call_request(1, ""));
        let body = if zlib {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut e, result_json(1).as_bytes()).unwrap();
            e.finish().unwrap()
        } else {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut e, result_json(1).as_bytes()).unwrap();
            e.finish().unwrap()
        };
        let mut resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: deflate\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        resp.extend_from_slice(&body);
        cap.send(&mut c, Side::Server, &resp);
        let bytes = cap.pcap(Link::Ethernet, false, false);
        assert_eq!(outcomes(&bytes), ["1 TOOL_SUCCESS"], "zlib={zlib}");
    }
}

#[test]
fn big_block_grows_the_buffer_and_hostile_caplen_stops_cleanly() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40082, (1, 2));
    cap.handshake(&mut c);
    // A 600 KiB non-IP frame: larger than the reader's first buffer.
    cap.frames.push(Frame {
        ts_ns: cap.now,
        data: vec![0; 600 << 10],
        orig_len: 600 << 10,
        iface: 0,
    });
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    cap.send(&mut c, Side::Server, &json_response(1));
    let bytes = cap.pcap(Link::Ethernet, false, false);
    assert_eq!(outcomes(&bytes), ["1 TOOL_SUCCESS"]);
    let (_, got) = collect(&bytes);
    assert!(got.problems.is_empty(), "{:?}", problems(&got));

    // A record header claiming 4 GiB.
    let mut hostile = bytes[..24].to_vec();
    hostile.extend_from_slice(&[
        0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    ]);
    hostile.extend_from_slice(&[0; 64]);
    let (_, got) = collect(&hostile);
    assert_eq!(got.problems.len(), 1, "{:?}", problems(&got));
}

/// Real captures of the official Python SDK (see `tests/fixtures/pcap/README.md`):
/// `-i lo` (Ethernet, µs) and `-i any` (Linux SLL2, ns).
#[test]
fn real_loopback_captures() {
    for (file, first_ts_digits) in [
        ("tests/fixtures/pcap/mcp-loopback.pcap", 6),
        ("tests/fixtures/pcap/mcp-any-nanos.pcap", 9),
    ] {
        let bytes = std::fs::read(file).unwrap();
        let a = analyse(&bytes);
        assert!(a.problems.is_empty(), "{file}: {:?}", a.problems);
        assert_eq!(a.exchanges, 16, "{file}");
        let got: Vec<String> = a
            .calls
            .iter()
            .map(|c| {
                format!(
                    "{} {} {} {}",
                    c.tool.as_deref().unwrap_or("-"),
                    c.verdict.outcome,
                    c.verdict.evidence.content_type.as_deref().unwrap_or("-"),
                    c.verdict.evidence.end.as_str()
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "echo TOOL_SUCCESS application/json complete",
                "fail TOOL_ERROR application/json complete",
                "slow TOOL_SUCCESS application/json complete",
                "echo TOOL_SUCCESS text/event-stream complete",
                "fail TOOL_ERROR text/event-stream complete",
                "slow TOOL_SUCCESS text/event-stream client_closed",
            ],
            "{file}"
        );
        let (_, got) = collect(&bytes);
        let sse_events: Vec<usize> = http(&got)
            .iter()
            .filter_map(|x| match &x.response.as_ref()?.body {
                Body::Sse(s) if x.request.method == "POST" => Some(s.events.len()),
                _ => None,
            })
            .collect();
        // initialize, tools/list, echo, fail, slow (4 progress + result).
        assert!(sse_events.ends_with(&[1, 1, 1, 5]), "{sse_events:?}");
        // Timestamp precision follows the file: µs files have no sub-µs digits.
        let subsec: Vec<i64> = http(&got)
            .iter()
            .filter_map(|x| x.request.ts)
            .map(|t| t.0 % 1000)
            .collect();
        if first_ts_digits == 6 {
            assert!(subsec.iter().all(|&n| n == 0));
        } else {
            assert!(subsec.iter().any(|&n| n != 0));
        }
    }
}

/// The same exchanges written as mcpsift's JSONL exchange records.
fn as_jsonl(c: &Collect) -> String {
    use serde_json::{json, Value};
    let hdrs = |h: &mcpsift::model::Headers| -> Value {
        Value::Array(h.iter().map(|(n, v)| json!([n, v])).collect())
    };
    let mut out = String::new();
    for x in http(c) {
        let mut rec = json!({
            "request": {
                "method": x.request.method,
                "url": x.request.url,
                "headers": hdrs(&x.request.headers),
                "body": String::from_utf8_lossy(&x.request.body),
            },
            "end": x.end.as_str(),
        });
        if let Some(r) = &x.response {
            let mut resp = json!({"status": r.status, "headers": hdrs(&r.headers)});
            match &r.body {
                Body::Sse(s) => {
                    resp["events"] = s
                        .events
                        .iter()
                        .map(|e| json!({"event": e.event, "data": e.data}))
                        .collect();
                }
                Body::Bytes(b) => resp["body"] = json!(String::from_utf8_lossy(b)),
                Body::NotRecorded => {}
            }
            rec["response"] = resp;
        }
        out.push_str(&rec.to_string());
        out.push('\n');
    }
    out
}

/// The same traffic as a capture and as JSONL gets the same verdicts.
#[test]
fn same_verdicts_as_jsonl() {
    let mut captures = vec![
        std::fs::read("tests/fixtures/pcap/mcp-loopback.pcap").unwrap(),
        std::fs::read("tests/fixtures/pcap/mcp-any-nanos.pcap").unwrap(),
    ];
    captures.push(sse_capture(|cap, c| cap.fin(c, Side::Server)));
    captures.push(sse_capture(|cap, c| cap.rst(c, Side::Server)));
    captures.push(sse_capture(|cap, c| {
        cap.send(c, Side::Server, &chunk(&result_event(1)));
    }));
    let mut nr = Capture::new();
    let mut c = nr.conn(Link::Ethernet, 40090, (1, 2));
    nr.handshake(&mut c);
    nr.send(&mut c, Side::Client, &call_request(1, ""));
    nr.send(&mut c, Side::Client, &call_request(2, ""));
    nr.send(&mut c, Side::Server, &json_response(1));
    captures.push(nr.pcap(Link::Ethernet, false, false));
    for bytes in captures {
        let from_pcap = outcomes(&bytes);
        let jsonl = as_jsonl(&collect(&bytes).1);
        let from_jsonl = outcomes(jsonl.as_bytes());
        assert!(!from_pcap.is_empty());
        assert_eq!(from_pcap, from_jsonl, "{jsonl}");
    }
}

#[test]
fn json_body_cut_by_server_close() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40100, (1, 2));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    let resp = json_response(1);
    cap.send(&mut c, Side::Server, &resp[..resp.len() - 5]);
    cap.fin(&mut c, Side::Server);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    let (_, got) = collect(&bytes);
    assert_eq!(http(&got)[0].end, End::Closed);
    assert_eq!(outcomes(&bytes), ["1 STREAM_INCOMPLETE"]);
}

#[test]
fn capture_starting_mid_connection_resyncs_and_reports() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40101, (1, 2));
    // No handshake: the capture starts inside a response body.
    cap.send(
        &mut c,
        Side::Server,
        b"\"text\":\"tail of an old body\"}]}}",
    );
    cap.send(&mut c, Side::Client, &call_request(2, ""));
    cap.send(&mut c, Side::Server, &json_response(2));
    let bytes = cap.pcap(Link::Ethernet, false, false);
    assert_eq!(outcomes(&bytes), ["2 TOOL_SUCCESS"]);
    let (_, got) = collect(&bytes);
    assert!(got.problems.is_empty(), "{:?}", got.problems);
    assert_eq!(
        notices(&got),
        ["TCP 127.0.0.1:8000 → 127.0.0.1:40101: the capture starts inside this connection; 32 bytes before the first HTTP message are skipped"]
    );
}

#[test]
fn port_reuse_starts_a_new_connection() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40102, (1, 2));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    // The old connection vanishes without FIN; a new one reuses the 4-tuple.
    let mut d = cap.conn(Link::Ethernet, 40102, (900_000, 800_000));
    simple(&mut cap, &mut d, 2);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    assert_eq!(outcomes(&bytes), ["1 NO_RESPONSE", "2 TOOL_SUCCESS"]);
    let (_, got) = collect(&bytes);
    assert_eq!(http(&got)[0].end, End::CaptureEnded);
}

#[test]
fn upgrade_stops_reading_the_connection() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40103, (1, 2));
    cap.handshake(&mut c);
    cap.send(
        &mut c,
        Side::Client,
        b"GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    );
    cap.send(
        &mut c,
        Side::Server,
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello",
    );
    cap.send(&mut c, Side::Client, b"\x81\x85abcd\x00\x00\x00\x00\x00");
    let bytes = cap.pcap(Link::Ethernet, false, false);
    let (_, got) = collect(&bytes);
    assert_eq!(http(&got).len(), 1);
    assert_eq!(http(&got)[0].response.as_ref().unwrap().status, 101);
    assert_eq!(
        problems(&got),
        ["HTTP 101: the connection switched protocols (websocket); the rest of it is not read"]
    );
}

#[derive(Debug, Clone)]
enum Op {
    Send(bool, Vec<u8>),
    Raw(bool, u32, u8, Vec<u8>),
    Snap(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let pieces = prop_oneof![
        Just(call_request(1, "")),
        Just(json_response(1)),
        Just(sse_head(true)),
        Just(chunk(&result_event(1))),
        Just(b"0\r\n\r\n".to_vec()),
        Just(b"HTTP/1.1 100 Continue\r\n\r\n".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..40),
    ];
    prop_oneof![
        (any::<bool>(), pieces.clone()).prop_map(|(s, p)| Op::Send(s, p)),
        (any::<bool>(), any::<u32>(), 0u8..8, pieces).prop_map(|(s, q, f, p)| Op::Raw(s, q, f, p)),
        (0usize..80).prop_map(Op::Snap),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// Arbitrary segments, flags, sequence numbers and cuts never panic.
    #[test]
    fn arbitrary_traffic_never_panics(ops in proptest::collection::vec(op(), 0..30)) {
        let mut cap = Capture::new();
        let mut c = cap.conn(Link::Ethernet, 42000, (u32::MAX - 3, 7));
        cap.handshake(&mut c);
        for o in ops {
            match o {
                Op::Send(client, p) => {
                    let side = if client { Side::Client } else { Side::Server };
                    cap.send(&mut c, side, &p);
                }
                Op::Raw(client, seq, flags, p) => {
                    let side = if client { Side::Client } else { Side::Server };
                    cap.raw(&c, side, seq, flags, &p);
                }
                Op::Snap(n) => {
                    if let Some(f) = cap.frames.last_mut() {
                        f.snap(n);
                    }
                }
            }
        }
        let bytes = cap.pcap(Link::Ethernet, false, false);
        let _ = mcpsift::batch::analyse_reader(Cursor::new(bytes), &Config::default());
    }
}

#[test]
fn ipv6_extension_headers_are_skipped() {
    let mut cap = Capture::new();
    let mut c = cap.conn6(Link::Raw, 40110);
    simple(&mut cap, &mut c, 4);
    for f in &mut cap.frames {
        // Insert a hop-by-hop options header (8 bytes, PadN) after the IPv6 header.
        let next = f.data[6];
        f.data[6] = 0;
        let plen = u16::from_be_bytes([f.data[4], f.data[5]]) + 8;
        f.data[4..6].copy_from_slice(&plen.to_be_bytes());
        f.data
            .splice(40..40, [next, 0, 1, 4, 0, 0, 0, 0])
            .for_each(drop);
        f.orig_len += 8;
    }
    let bytes = cap.pcap(Link::Raw, true, true);
    assert_eq!(outcomes(&bytes), ["4 TOOL_SUCCESS"]);
}

/// A reader that hands out at most 100 bytes per call, like a slow pipe.
struct Trickle(Cursor<Vec<u8>>);

impl std::io::Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(100);
        self.0.read(&mut buf[..n])
    }
}

#[test]
fn slow_reader_with_large_frames() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40120, (1, 2));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    let body = result_json(1);
    let padded = format!("{body}{}", " ".repeat(60_000));
    let mut resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        padded.len()
    )
    .into_bytes();
    resp.extend_from_slice(padded.as_bytes());
    cap.send(&mut c, Side::Server, &resp); // one 60 KB segment
    cap.fin(&mut c, Side::Server);
    for bytes in [
        cap.pcap(Link::Ethernet, false, false),
        cap.pcapng(&[(Link::Ethernet, 6)], false, false),
    ] {
        let (_, a) =
            mcpsift::batch::analyse_reader(Trickle(Cursor::new(bytes)), &Config::default())
                .expect("read");
        assert!(a.problems.is_empty(), "{:?}", a.problems);
        let o: Vec<String> = a
            .calls
            .iter()
            .map(|c| c.verdict.outcome.to_string())
            .collect();
        assert_eq!(o, ["TOOL_SUCCESS"]);
    }
}

#[test]
fn unrelated_tls_beside_mcp_traffic_is_a_note_not_an_error() {
    let mut cap = Capture::new();
    let mut mcp = cap.conn(Link::Ethernet, 40120, (1, 2));
    simple(&mut cap, &mut mcp, 1);
    let mut tls = cap.conn(Link::Ethernet, 40121, (5, 6));
    tls.server.1 = 443;
    cap.handshake(&mut tls);
    cap.send(&mut tls, Side::Client, b"\x16\x03\x01\x00\x05hello");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.pcap");
    std::fs::write(&path, cap.pcap(Link::Ethernet, false, false)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .args(["analyze", path.to_str().unwrap(), "--format", "jsonl"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("note: TCP 127.0.0.1:40121 → 127.0.0.1:443"),
        "{err}"
    );
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["status"], "ok");
    assert_eq!(first["notices"].as_array().unwrap().len(), 1);
    assert!(first.get("problems").is_none());
}

#[test]
fn an_endless_stream_keeps_its_response_but_not_every_notification() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40130, (1, 2));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    cap.send(&mut c, Side::Server, &sse_head(false));
    let mut events = Vec::new();
    for _ in 0..10_050 {
        events.extend_from_slice(&progress_event());
    }
    events.extend_from_slice(&result_event(1));
    cap.send_split(&mut c, Side::Server, &events, 60_000);
    cap.fin(&mut c, Side::Server);
    let a = analyse(&cap.pcap(Link::Ethernet, false, false));
    assert_eq!(a.calls.len(), 1);
    let v = &a.calls[0].verdict;
    assert_eq!(v.outcome.as_str(), "TOOL_SUCCESS");
    assert_eq!(
        v.evidence.sse_events, 10_001,
        "10,000 kept, then only the response"
    );
    assert!(
        v.evidence
            .notes
            .iter()
            .any(|n| n.contains("budget of 10000 events") && n.contains("--max-stream-events")),
        "{:?}",
        v.evidence.notes
    );
    // The cut is a cap the input reports, typed, not only words on the verdict: a
    // notice, since only notifications were not kept and the verdict is whole.
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    let caps: Vec<_> = a.notices.iter().filter(|p| p.kind == Kind::Cap).collect();
    assert_eq!(caps.len(), 1, "{:?}", a.notices);
    assert!(caps[0].message.contains("50 events"), "{}", caps[0].message);
}

fn ex_spec() -> impl Strategy<Value = mangle::ExSpec> {
    (
        any::<u8>(),
        any::<u16>(),
        proptest::collection::vec(any::<u8>(), 0..200),
        any::<u16>(),
        any::<u8>(),
        proptest::collection::vec(any::<u8>(), 0..300),
        proptest::collection::vec(any::<u8>(), 0..6),
    )
        .prop_map(
            |(method, path, body, status, framing, resp_body, chunks)| mangle::ExSpec {
                method,
                path,
                body,
                status,
                framing,
                resp_body,
                chunks,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// HTTP exchanges built from parts, written in order and with their segments
    /// split, swapped, duplicated and overlapped, read back as the same exchanges (the
    /// stable twin of the `reassembly` fuzz target).
    #[test]
    fn mangled_segments_give_the_same_exchanges(
        specs in proptest::collection::vec(ex_spec(), 1..5),
        plan in proptest::collection::vec(any::<u8>(), 1..64),
    ) {
        let in_order = mangle::exchanges(&mangle::capture(&specs, None));
        prop_assert_eq!(in_order.iter().filter(|l| !l.starts_with("problem")).count(), specs.len());
        let mangled = mangle::exchanges(&mangle::capture(&specs, Some(&plan)));
        prop_assert_eq!(in_order, mangled);
    }
}

#[test]
fn bytes_before_the_stream_window_are_reported_not_just_counted() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40140, (1_000, 5_000));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    // A stray segment far behind the stream (out of window, or a wrapped sequence).
    cap.raw(
        &c,
        Side::Client,
        1_000u32.wrapping_sub(100_000),
        0,
        b"stale bytes",
    );
    cap.send(&mut c, Side::Server, &json_response(1));
    cap.fin(&mut c, Side::Client);
    cap.fin(&mut c, Side::Server);
    let (_, sink) = collect(&cap.pcap(Link::Ethernet, false, false));
    assert_eq!(sink.exchanges.len(), 1);
    let lost: Vec<_> = sink.of_kind(Kind::Lost).collect();
    assert_eq!(lost.len(), 1, "{:?}", sink.problems);
    assert!(
        lost[0].message.contains("11 bytes lie before the start"),
        "{}",
        lost[0].message
    );
}

#[test]
fn bytes_held_past_a_clean_close_are_named() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40141, (1_000, 5_000));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    cap.send(&mut c, Side::Server, &json_response(1));
    // Data beyond the FIN (a hole before it): held, and never deliverable.
    let after = c.sseq.wrapping_add(10);
    cap.raw(&c, Side::Server, after, 0, b"after the end");
    cap.fin(&mut c, Side::Server);
    cap.fin(&mut c, Side::Client);
    let (_, sink) = collect(&cap.pcap(Link::Ethernet, false, false));
    assert_eq!(sink.exchanges.len(), 1);
    let lost: Vec<_> = sink
        .of_kind(Kind::Lost)
        .filter(|p| p.message.contains("after the connection's FIN"))
        .collect();
    assert_eq!(lost.len(), 1, "{:?}", sink.problems);
    assert!(lost[0].message.contains("13 bytes"), "{}", lost[0].message);
}

#[test]
fn a_deflate_bomb_in_a_capture_is_a_cap_not_a_short_body() {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(&vec![b' '; 8 << 20]).unwrap();
    let bomb = e.finish().unwrap();
    let mut resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: deflate\r\nContent-Length: {}\r\n\r\n",
        bomb.len()
    )
    .into_bytes();
    resp.extend_from_slice(&bomb);
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40142, (1_000, 5_000));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, &call_request(1, ""));
    // Out of order: the whole body waits behind its first segment, then arrives at once.
    let (first, rest) = resp.split_at(100);
    let start = c.sseq;
    cap.raw(&c, Side::Server, start.wrapping_add(100), 0, rest);
    cap.raw(&c, Side::Server, start, 0, first);
    c.sseq = start.wrapping_add(resp.len() as u32);
    cap.fin(&mut c, Side::Server);
    let mut sink = Collect::default();
    let limits = Limits {
        max_record_bytes: 1 << 20,
        ..Limits::default()
    };
    ingest(
        &cap.pcap(Link::Ethernet, false, false)[..],
        &limits,
        &mut sink,
    )
    .unwrap();
    let Payload::Http(x) = &sink.exchanges[0].payload else {
        panic!()
    };
    let Some(Body::Bytes(b)) = x.response.as_ref().map(|r| &r.body) else {
        panic!()
    };
    assert_eq!(b.len(), 1 << 20, "kept up to the body cap");
    assert_eq!(x.end, End::Truncated);
    let caps: Vec<_> = sink.of_kind(Kind::Cap).collect();
    assert_eq!(caps.len(), 1, "{:?}", sink.problems);
    assert!(
        caps[0].message.contains("--max-record-bytes"),
        "{}",
        caps[0].message
    );
}

/// The Wireshark trail of the two sample captures, as tshark 4.0 shows them
/// (`tshark -r FILE -T fields -e frame.number -e tcp.stream -e tcp.flags.str`): the
/// cut SSE stream is `tcp.stream == 2`, ended by the server's FIN in frame 45; the
/// lost response is `tcp.stream == 1`, ended by the FIN in frame 35.
#[test]
fn captured_calls_name_their_tcp_stream_and_the_frame_that_ended_them() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (file, outcome, stream, end_frame) in [
        ("samples/sse-cut.pcap", "STREAM_INCOMPLETE", 2, 45),
        ("samples/unsafe-replay.pcapng", "NO_RESPONSE", 1, 35),
    ] {
        let a = analyse(&std::fs::read(root.join(file)).unwrap());
        let c = a
            .calls
            .iter()
            .find(|c| c.verdict.outcome.as_str() == outcome)
            .unwrap_or_else(|| panic!("{file}: no {outcome}"));
        let trail = c.timeline.as_ref().and_then(|t| t.tcp).expect("a trail");
        assert_eq!(
            (trail.stream, trail.end_frame),
            (stream, end_frame),
            "{file}"
        );
    }
    // The lost response ended with the FIN (frame 35, 17:30:41.355768808), not with
    // the request's own segment (frame 34, .344023276).
    let a = analyse(&std::fs::read(root.join("samples/unsafe-replay.pcapng")).unwrap());
    let lost = a
        .calls
        .iter()
        .find(|c| c.verdict.outcome.as_str() == "NO_RESPONSE")
        .unwrap();
    let t = lost.timeline.as_ref().unwrap();
    assert_eq!(
        t.end_ts.map(|t| t.to_string()).as_deref(),
        Some("2026-12-02T17:30:41.355768Z")
    );
    // Not a capture: no trail.
    let jsonl = analyse(&std::fs::read(root.join("samples/streamable-http.jsonl")).unwrap());
    assert!(jsonl
        .calls
        .iter()
        .filter_map(|c| c.timeline.as_ref())
        .all(|t| t.tcp.is_none()));
}

/// A request split over three segments is located, as Wireshark shows it, at the
/// frame that completed it, not at the one where its head began.
#[test]
fn a_split_request_is_located_at_the_frame_that_completed_it() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Ethernet, 40100, (1000, 5000));
    cap.handshake(&mut c);
    let req = call_request(3, "");
    let mss = req.len() / 3 + 1;
    cap.send_split(&mut c, Side::Client, &req, mss); // frames 4, 5, 6
    cap.send(&mut c, Side::Server, &json_response(3)); // frame 7
    cap.fin(&mut c, Side::Server);
    cap.fin(&mut c, Side::Client);
    let (_, got) = collect(&cap.pcap(Link::Ethernet, false, false));
    assert_eq!(
        got.exchanges[0].locator,
        Locator::Frames {
            request: 6,
            response: Some(7)
        }
    );
}

/// The two connections of legacy session `sid` (client ports `port` and `port + 1`):
/// its GET stream, answered and announced by an `endpoint` event, and the keep-alive
/// connection its POSTs go on.
fn legacy_conns(cap: &mut Capture, port: u16, sid: &str) -> (Conn, Conn) {
    let n = u32::from(port);
    let mut stream = event_stream(
        cap,
        port,
        (100 + n, 200),
        b"GET /sse HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: text/event-stream\r\n\r\n",
    );
    let mut posts = cap.conn(Link::Ethernet, port + 1, (300 + n, 400));
    cap.handshake(&mut posts);
    let endpoint = format!("event: endpoint\ndata: /messages/?session_id={sid}\n\n");
    cap.send(&mut stream, Side::Server, &chunk(endpoint.as_bytes()));
    (stream, posts)
}

/// A connection on `port` (sequence numbers `seqs`) whose client sends `request`
/// and whose server answers it with a chunked event stream's head.
fn event_stream(cap: &mut Capture, port: u16, seqs: (u32, u32), request: &[u8]) -> Conn {
    let mut c = cap.conn(Link::Ethernet, port, seqs);
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Client, request);
    cap.send(&mut c, Side::Server, &sse_head(true));
    c
}

/// A POST of JSON `body` to legacy session `sid`.
fn legacy_post(sid: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /messages/?session_id={sid} HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The legacy transport's answer to every POST.
const ACCEPTED: &[u8] = b"HTTP/1.1 202 Accepted\r\nContent-Length: 8\r\n\r\nAccepted";

/// A session on the HTTP+SSE transport of 2024-11-05: `initialize`, then `calls`
/// tools/calls POSTed and answered 202, each followed on the one GET stream by two
/// log notifications and, for the first `answered`, its result. The stream then
/// ends in a chunked end and FINs, or (`reset`) a reset from the server.
fn legacy_session(calls: u64, answered: u64, reset: bool) -> Vec<u8> {
    let sid = "5f1d0c7a9e2b4c68";
    let mut cap = Capture::new();
    let (mut stream, mut posts) = legacy_conns(&mut cap, 40101, sid);
    let post = |cap: &mut Capture, posts: &mut Conn, body: &str| {
        cap.send(posts, Side::Client, &legacy_post(sid, body));
        cap.send(posts, Side::Server, ACCEPTED);
    };
    post(
        &mut cap,
        &mut posts,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
    );
    let init = r#"event: message
data: {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"s","version":"1"}}}

"#;
    cap.send(&mut stream, Side::Server, &chunk(init.as_bytes()));
    for id in 1..=calls {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"n":{id}}}}}}}"#
        );
        post(&mut cap, &mut posts, &call);
        for level in ["info", "error"] {
            let log = format!(
                "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"{level}\",\"data\":\"call {id}\"}}}}\n\n"
            );
            cap.send(&mut stream, Side::Server, &chunk(log.as_bytes()));
        }
        if id <= answered {
            cap.send(&mut stream, Side::Server, &chunk(&result_event(id)));
        }
    }
    if reset {
        cap.rst(&mut stream, Side::Server);
    } else {
        cap.send(&mut stream, Side::Server, b"0\r\n\r\n");
    }
    cap.fin(&mut posts, Side::Client);
    cap.fin(&mut posts, Side::Server);
    if !reset {
        cap.fin(&mut stream, Side::Client);
        cap.fin(&mut stream, Side::Server);
    }
    cap.pcap(Link::Ethernet, false, false)
}

/// Legacy sessions that run at once, each with calls in flight (a response comes
/// three calls after its POST) and some answered on the stream before their POST's
/// 202 was written: every call meets its response as the streams go on in parts,
/// with no finding and no problem.
#[test]
fn concurrent_legacy_sessions_with_calls_in_flight_meet_their_responses() {
    const SESSIONS: usize = 30;
    const CALLS: u64 = 60;
    const LAG: u64 = 3;
    let mut cap = Capture::new();
    let mut conns = Vec::new();
    for s in 0..SESSIONS {
        let conns_of = legacy_conns(&mut cap, 41000 + 2 * s as u16, &format!("s{s}"));
        conns.push(conns_of);
    }
    let post = |s: usize, id: u64| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"n":{id}}}}}}}"#
        );
        legacy_post(&format!("s{s}"), &body)
    };
    for id in 1..=CALLS + LAG {
        for (s, (stream, posts)) in conns.iter_mut().enumerate() {
            if id <= CALLS {
                cap.send(posts, Side::Client, &post(s, id));
                if id % 7 == 0 {
                    // Answered on the stream before the 202 was written.
                    cap.send(stream, Side::Server, &chunk(&result_event(id)));
                }
                cap.send(posts, Side::Server, ACCEPTED);
            }
            let due = id.saturating_sub(LAG);
            if due >= 1 && due % 7 != 0 && due <= CALLS {
                cap.send(stream, Side::Server, &chunk(&result_event(due)));
            }
        }
    }
    for (stream, posts) in conns.iter_mut() {
        cap.send(stream, Side::Server, b"0\r\n\r\n");
        for c in [posts, stream] {
            cap.fin(c, Side::Client);
            cap.fin(c, Side::Server);
        }
    }
    let a = analyse(&cap.pcap(Link::Ethernet, false, false));
    assert_eq!(a.calls.len(), SESSIONS * CALLS as usize);
    let not_success: Vec<String> = a
        .calls
        .iter()
        .filter(|c| c.verdict.outcome != mcpsift::model::Outcome::ToolSuccess)
        .map(|c| format!("{} {} {}", c.scope, c.id, c.verdict.outcome))
        .take(5)
        .collect();
    assert!(not_success.is_empty(), "{not_success:?}");
    assert!(
        a.findings.is_empty(),
        "{:?}",
        &a.findings[..a.findings.len().min(3)]
    );
    assert!(a.problems.is_empty(), "{:?}", a.problems);
}

/// A healthy session on the HTTP+SSE transport of 2024-11-05, longer than any count
/// of events a stream keeps, than the bytes of responses it may keep, and than the
/// ids a session remembers: one GET stream carries every response, two log
/// notifications before each, and every call still gets its response (no false
/// STREAM_INCOMPLETE), the `initialize` answered at the start is no stray (no false
/// ID_MISMATCH once its id was pushed out of the id log), and nothing was cut.
#[test]
fn a_long_legacy_session_keeps_every_response_on_its_stream() {
    const CALLS: u64 = 4_200;
    // Responses past a stream's budget were kept within another `--max-record-bytes`;
    // at 64 KiB that is about 500 of them. The stream is now handed on in parts.
    let config = Config {
        limits: Limits {
            max_record_bytes: 64 << 10,
            ..Limits::default()
        },
        ..Config::default()
    };
    let bytes = legacy_session(CALLS, CALLS, false);
    let (_, a) = mcpsift::batch::analyse_reader(Cursor::new(bytes), &config).expect("read");
    assert_eq!(a.calls.len(), CALLS as usize);
    let not_success: Vec<String> = a
        .calls
        .iter()
        .filter(|c| c.verdict.outcome != mcpsift::model::Outcome::ToolSuccess)
        .map(|c| format!("{} {}", c.id, c.verdict.outcome))
        .take(5)
        .collect();
    assert!(not_success.is_empty(), "{not_success:?}");
    assert!(
        a.findings.is_empty(),
        "{:?}",
        &a.findings[..a.findings.len().min(3)]
    );
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert!(a.notices.is_empty(), "{:?}", a.notices);
    // The stream is one exchange however many parts it came in: the GET and the
    // POSTs.
    assert_eq!(a.exchanges, CALLS + 2);
}

/// The capture reader hands a legacy session's stream on in parts while it goes on,
/// one as soon as a response came: the first has the heads, each carries at most
/// 64 events, and together they carry every event once, in order; only the last
/// says no more follow.
#[test]
fn a_legacy_stream_is_handed_on_in_parts() {
    const CALLS: u64 = 2_000;
    let (_, c) = collect(&legacy_session(CALLS, CALLS, false));
    let parts: Vec<&HttpExchange> = http(&c)
        .into_iter()
        .filter(|x| x.request.method == "GET")
        .collect();
    // One part per response (the initialize result and each call's).
    assert_eq!(
        parts.len() as u64,
        CALLS + 1 + 1,
        "and the rest after the last"
    );
    let mut offsets = Vec::new();
    for (i, x) in parts.iter().enumerate() {
        let p = x.part.expect("every exchange of the stream is a part");
        assert_eq!(p.index as usize, i);
        assert_eq!(p.more, i + 1 < parts.len());
        assert_eq!(p.stream, parts[0].part.unwrap().stream);
        let r = x.response.as_ref().expect("each part has the status");
        assert_eq!(r.status, 200);
        let last = i + 1 == parts.len();
        assert_eq!(
            r.headers.media_type_is("text/event-stream"),
            i == 0 || last,
            "the heads come with the first part and the rest, not between"
        );
        let Body::Sse(sse) = &r.body else {
            panic!("not an event stream")
        };
        assert!(sse.events.len() <= 64, "{}", sse.events.len());
        offsets.extend(sse.events.iter().map(|e| e.offset));
    }
    // endpoint, the initialize result, then three events per call.
    assert_eq!(offsets.len() as u64, 2 + 3 * CALLS);
    assert!(
        offsets.windows(2).all(|w| w[0] < w[1]),
        "in order, each once"
    );
    assert_eq!(parts.last().unwrap().end, End::Complete);
}

/// A session's standalone GET stream (MCP 2025-03-26 and later) lasts as long as
/// the session and may carry a notification per call. The capture reader hands it
/// on in parts too: the calls beside it stay whole, the stream's notifications past
/// its event budget are no cap, it is one exchange, and a response it carries late
/// (a server sending a call's response on it, which the specification forbids) is
/// still seen as a stray.
#[test]
fn a_standalone_get_stream_is_handed_on_in_parts_and_still_read() {
    const CALLS: u64 = 3;
    const NOTES: usize = 3_000;
    let mut cap = Capture::new();
    let mut get = event_stream(
        &mut cap,
        40201,
        (100, 200),
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: text/event-stream\r\nMcp-Session-Id: s1\r\n\r\n",
    );
    let mut posts = cap.conn(Link::Ethernet, 40202, (300, 400));
    cap.handshake(&mut posts);
    for k in 0..NOTES {
        let note = format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"log line {k}\"}}}}\n\n"
        );
        cap.send(&mut get, Side::Server, &chunk(note.as_bytes()));
        if k % 1_000 == 0 {
            let id = 1 + k as u64 / 1_000;
            cap.send(&mut posts, Side::Client, &call_request(id, ""));
            cap.send(&mut posts, Side::Server, &json_response(id));
        }
    }
    // A response on the plain GET stream, past its budget of events.
    cap.send(&mut get, Side::Server, &chunk(&result_event(99)));
    cap.send(&mut get, Side::Server, b"0\r\n\r\n");
    cap.fin(&mut get, Side::Server);
    cap.fin(&mut posts, Side::Server);
    let bytes = cap.pcap(Link::Ethernet, false, false);

    let (_, c) = collect(&bytes);
    let gets: Vec<&HttpExchange> = http(&c)
        .into_iter()
        .filter(|x| x.request.method == "GET")
        .collect();
    assert!(gets.len() > NOTES / 64, "{} parts", gets.len());
    let events: usize = gets
        .iter()
        .map(|x| match x.response.as_ref().map(|r| &r.body) {
            Some(Body::Sse(s)) => s.events.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(events, NOTES + 1, "every event once");

    let config = Config {
        limits: Limits {
            max_stream_events: 100,
            ..Limits::default()
        },
        ..Config::default()
    };
    let (_, a) = mcpsift::batch::analyse_reader(Cursor::new(bytes), &config).expect("read");
    assert_eq!(a.calls.len(), CALLS as usize);
    assert!(a
        .calls
        .iter()
        .all(|c| c.verdict.outcome == mcpsift::model::Outcome::ToolSuccess));
    assert_eq!(a.exchanges, CALLS + 1);
    common::run::quiet_but_one_stray(&a, "99");
}

/// A GET that resumes a stream (`Last-Event-ID`) is handed on in parts like any
/// GET's stream, since it may resume the session's standalone stream and last as
/// long. One that resumes a cut call's stream is joined again and read whole: the
/// call gets one resumption leg with every event of it, and its response. One that
/// resumes a stream no call waits for is read part by part, its response a stray.
#[test]
fn a_resumed_stream_in_parts_is_joined_to_its_call_or_read_as_it_goes() {
    const NOTES: usize = 300;
    const LONG: usize = 3_000;
    let note = |k: usize| {
        format!(
            "id: e{k}\nevent: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":1,\"progress\":{k}}}}}\n\n"
        )
    };
    let mut cap = Capture::new();
    // The call's stream: one event, then the server resets it.
    let mut post = cap.conn(Link::Ethernet, 40501, (100, 200));
    cap.handshake(&mut post);
    cap.send(&mut post, Side::Client, &call_request(1, ""));
    cap.send(&mut post, Side::Server, &sse_head(true));
    cap.send(&mut post, Side::Server, &chunk(note(1).as_bytes()));
    cap.rst(&mut post, Side::Server);
    let mut get = event_stream(
        &mut cap,
        40502,
        (300, 400),
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: text/event-stream\r\nMcp-Session-Id: s1\r\nLast-Event-ID: e1\r\n\r\n",
    );
    for k in 2..NOTES + 2 {
        cap.send(&mut get, Side::Server, &chunk(note(k).as_bytes()));
    }
    let failed = "id: eR\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"no such file\"}],\"isError\":true}}\n\n";
    cap.send(&mut get, Side::Server, &chunk(failed.as_bytes()));
    // A note after the response still belongs to the leg, and so does its end.
    cap.send(&mut get, Side::Server, &chunk(note(NOTES + 2).as_bytes()));
    cap.rst(&mut get, Side::Server);
    // A stream resuming one no call waits for (the session's own, reconnected).
    let mut other = event_stream(
        &mut cap,
        40503,
        (500, 600),
        b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: text/event-stream\r\nMcp-Session-Id: s1\r\nLast-Event-ID: s-7\r\n\r\n",
    );
    for k in 0..LONG {
        cap.send(
            &mut other,
            Side::Server,
            &chunk(note(10_000 + k).as_bytes()),
        );
    }
    cap.send(&mut other, Side::Server, &chunk(&result_event(99)));
    cap.send(&mut other, Side::Server, b"0\r\n\r\n");
    cap.fin(&mut other, Side::Server);
    let bytes = cap.pcap(Link::Ethernet, false, false);

    let (_, c) = collect(&bytes);
    let gets = http(&c)
        .into_iter()
        .filter(|x| x.request.method == "GET")
        .count();
    assert!(gets > (NOTES + LONG) / 64, "{gets} parts");

    let config = Config {
        limits: Limits {
            max_stream_events: 100,
            ..Limits::default()
        },
        ..Config::default()
    };
    let (_, a) = mcpsift::batch::analyse_reader(Cursor::new(bytes), &config).expect("read");
    assert_eq!(a.exchanges, 3, "each stream is one exchange");
    assert_eq!(a.calls.len(), 1);
    let call = &a.calls[0];
    assert_eq!(call.verdict.outcome, mcpsift::model::Outcome::ToolError);
    assert!(call.resumed);
    let t = call
        .timeline
        .as_ref()
        .expect("a failed call keeps its timeline");
    assert_eq!(t.resumptions.len(), 1, "{:?}", t.resumptions);
    let leg = &t.resumptions[0];
    assert_eq!(leg.events_total, NOTES + 2, "every event of the leg, once");
    assert_eq!(leg.end, End::Reset);
    common::run::quiet_but_one_stray(&a, "99");
}

/// The analysis of `cap` with `--max-record-bytes` at 4 KiB: the bodies in flight
/// may then hold 32 KiB together, and the requests waiting 16 KiB.
fn analyse_with_small_records(cap: &Capture) -> mcpsift::correlate::Analysis {
    let config = Config {
        limits: Limits {
            max_record_bytes: 4 << 10,
            ..Limits::default()
        },
        ..Config::default()
    };
    let bytes = cap.pcap(Link::Ethernet, false, false);
    let (_, a) = mcpsift::batch::analyse_reader(Cursor::new(bytes), &config).expect("read");
    a
}

/// The bodies in flight of a capture share one budget, 8 times
/// `--max-record-bytes`, but a stream that answers a GET is not counted: healthy
/// sessions keep such streams open by the hundred (a client that reconnects its
/// standalone stream with `Last-Event-ID` after a proxy cut it), and counting them
/// cut the responses of calls beside them (38,089 false STREAM_INCOMPLETE on 300
/// such sessions).
#[test]
fn streams_that_answer_a_get_do_not_starve_the_calls_beside_them() {
    const STREAMS: u16 = 12;
    let mut cap = Capture::new();
    let mut gets = Vec::new();
    for i in 0..STREAMS {
        let mut get = event_stream(
            &mut cap,
            40300 + i,
            (100 + u32::from(i), 200),
            b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: text/event-stream\r\nMcp-Session-Id: s1\r\nLast-Event-ID: 7\r\n\r\n",
        );
        for k in 0..60 {
            let note = format!(
                "id: {k}\nevent: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"log line {k} of a stream that a client resumed\"}}}}\n\n"
            );
            cap.send(&mut get, Side::Server, &chunk(note.as_bytes()));
        }
        gets.push(get);
    }
    let mut posts = cap.conn(Link::Ethernet, 40400, (900, 901));
    cap.handshake(&mut posts);
    for id in 1..=3 {
        cap.send(&mut posts, Side::Client, &call_request(id, ""));
        cap.send(&mut posts, Side::Server, &json_response(id));
    }
    cap.fin(&mut posts, Side::Server);
    let a = analyse_with_small_records(&cap);
    let outcomes: Vec<String> = a
        .calls
        .iter()
        .map(|c| c.verdict.outcome.to_string())
        .collect();
    assert_eq!(outcomes, ["TOOL_SUCCESS"; 3]);
    assert!(
        !a.problems
            .iter()
            .any(|p| p.message.contains("bodies in flight")),
        "{:?}",
        a.problems
    );
}

/// Request bodies that wait for their responses count against a budget of their
/// own, half the capture's: a capture of large uploads never answered held every
/// one (a 429 MB capture of 400 such uploads peaked at 480 MB). Past it a request
/// body is cut, named at its frames with the flag that raises the budget; the
/// requests kept still get their responses, and once answered give their room back.
#[test]
fn large_requests_waiting_for_answers_count_against_a_budget_of_their_own() {
    const CONNS: u16 = 10;
    let upload = |id: u64| {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"upload","arguments":{{"data":"{}"}}}}}}"#,
            "x".repeat(3000)
        );
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    let mut cap = Capture::new();
    let mut conns = Vec::new();
    for i in 0..CONNS {
        let mut c = cap.conn(Link::Ethernet, 40500 + i, (300 + u32::from(i), 400));
        cap.handshake(&mut c);
        cap.send(&mut c, Side::Client, &upload(u64::from(i) + 1));
        conns.push(c);
    }
    for (i, c) in conns.iter_mut().enumerate() {
        cap.send(c, Side::Server, &json_response(i as u64 + 1));
    }
    // Answered, the first uploads gave their room back: later ones fit again.
    for (i, c) in conns.iter_mut().enumerate().take(3) {
        let id = 100 + i as u64;
        cap.send(c, Side::Client, &upload(id));
        cap.send(c, Side::Server, &json_response(id));
    }
    let a = analyse_with_small_records(&cap);
    // 16 KiB for requests: five uploads of 3 KB fit, the other five are cut.
    let ids: Vec<String> = a.calls.iter().map(|c| c.id.raw().to_owned()).collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5", "100", "101", "102"]);
    assert!(a
        .calls
        .iter()
        .all(|c| c.verdict.outcome.to_string() == "TOOL_SUCCESS"));
    let cut: Vec<&str> = a
        .problems
        .iter()
        .filter(|p| p.message.contains("bodies in flight"))
        .map(|p| p.message.as_str())
        .collect();
    assert_eq!(cut.len(), 5, "{:?}", a.problems);
    assert!(cut
        .iter()
        .all(|m| m.contains("request body") && m.contains("--max-record-bytes")));
    assert!(!a
        .problems
        .iter()
        .any(|p| p.message.contains("response body")));
}

/// A legacy stream reset while calls wait: the calls answered before the reset are
/// TOOL_SUCCESS, the ones still waiting are STREAM_INCOMPLETE on the transport, each
/// saying the stream was reset, however many parts came before.
#[test]
fn a_legacy_stream_reset_ends_the_calls_still_waiting_on_it() {
    const CALLS: u64 = 3_000;
    const ANSWERED: u64 = 2_990;
    let a = analyse(&legacy_session(CALLS, ANSWERED, true));
    assert_eq!(a.calls.len(), CALLS as usize);
    for c in &a.calls {
        let id: u64 = c.id.to_string().parse().unwrap();
        let want = if id <= ANSWERED {
            mcpsift::model::Outcome::ToolSuccess
        } else {
            mcpsift::model::Outcome::StreamIncomplete
        };
        assert_eq!(c.verdict.outcome, want, "call {id}");
        if id > ANSWERED {
            assert_eq!(c.verdict.evidence.end, End::Reset, "call {id}");
        }
    }
}
