//! HTTP/2 in captures, end to end over the lab's real HTTP/2 runs (`lab/h2/run_h2.py`:
//! the Python SDK server under hypercorn, the Python SDK client on an HTTP/2-only
//! httpx2, curl for `Upgrade: h2c`). The verdicts must equal those of the HTTP/1.1
//! runs of the same scenarios, and each call must name the HTTP/2 stream that tshark
//! saw carry its request (`tshark.json`, written by the lab script from tshark's
//! own decoding, not from mcpsift).

mod common;

use common::run::{analyse_path, call_verdicts, quiet_but_one_stray};
use mcpsift::batch::analyse_reader;
use mcpsift::config::Config;
use mcpsift::ingest::{ingest, Problem, Sink};
use mcpsift::model::{Exchange, Payload};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn lab() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("lab/captures")
}

fn analyse(path: &Path) -> mcpsift::correlate::Analysis {
    analyse_path(path, &Config::default())
}

fn verdicts(a: &mcpsift::correlate::Analysis) -> (Vec<(String, String, String)>, Vec<String>) {
    let calls = call_verdicts(a);
    let mut findings: Vec<String> = a
        .findings
        .iter()
        .map(|f| f.kind.as_str().to_owned())
        .collect();
    findings.sort();
    (calls, findings)
}

#[test]
fn h2_runs_give_the_verdicts_of_the_same_scenarios_over_http1() {
    let mut compared = 0;
    for scenario in ["baseline_py_sse", "baseline_py_json", "tool_error_py"] {
        let http1 = verdicts(&analyse(&lab().join(scenario).join("capture.pcap")));
        assert!(!http1.0.is_empty(), "{scenario} over HTTP/1.1 has calls");
        for format in ["capture.pcap", "capture.pcapng"] {
            let path = lab().join(format!("h2c_{scenario}")).join(format);
            let a = analyse(&path);
            assert_eq!(verdicts(&a), http1, "{}", path.display());
            assert!(
                a.problems.is_empty(),
                "{}: {:?}",
                path.display(),
                a.problems
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 6);
}

#[derive(Default)]
struct Collect(Vec<Exchange>);

impl Sink for Collect {
    fn exchange(&mut self, x: Exchange) {
        self.0.push(x);
    }
    fn problem(&mut self, p: Problem) {
        panic!("{p:?}");
    }
}

fn exchanges(path: &Path) -> Vec<Exchange> {
    let mut sink = Collect::default();
    let file = std::fs::File::open(path).unwrap();
    ingest(file, &Config::default().limits, &mut sink).unwrap();
    sink.0
}

#[test]
fn each_call_names_the_http2_stream_tshark_saw_carry_it() {
    // The long session carries 209 calls on one connection: its HPACK tables fill,
    // evict and are referred to throughout.
    for scenario in [
        "baseline_py_sse",
        "baseline_py_json",
        "tool_error_py",
        "long_session_py",
    ] {
        let dir = lab().join(format!("h2c_{scenario}"));
        let facts: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("tshark.json")).unwrap())
                .unwrap();
        let want: Vec<(String, u32)> = facts["tools_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["id"].to_string(),
                    c["stream"].as_str().unwrap().parse().unwrap(),
                )
            })
            .collect();
        let got: Vec<(String, u32)> = exchanges(&dir.join("capture.pcap"))
            .iter()
            .filter_map(|x| {
                let Payload::Http(h) = &x.payload else {
                    return None;
                };
                let body: Value = serde_json::from_slice(&h.request.body).ok()?;
                (body["method"] == "tools/call").then(|| {
                    let t = h.tcp.expect("a capture's trail");
                    (
                        body["id"].to_string(),
                        t.h2_stream.expect("an HTTP/2 stream id"),
                    )
                })
            })
            .collect();
        assert_eq!(got, want, "{scenario}");
    }
}

#[test]
fn an_upgrade_to_h2c_answers_the_first_request_on_stream_1_and_goes_on_in_http2() {
    let dir = lab().join("h2c_upgrade_curl");
    let facts: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tshark.json")).unwrap()).unwrap();
    // tshark: the OPTIONS was answered on stream 1 (405), the POST on stream 3 (200).
    let statuses: Vec<(String, String)> = facts["headers_frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["status"].as_str().unwrap().is_empty())
        .map(|r| {
            (
                r["stream"].as_str().unwrap().to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [("1".into(), "405".into()), ("3".into(), "200".into())]
    );
    let a = analyse(&dir.join("capture.pcap"));
    let (calls, _) = verdicts(&a);
    assert_eq!(
        calls,
        [("read_note".into(), "7".into(), "TOOL_SUCCESS".into())]
    );
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    let got: Vec<(String, u16, Option<u32>)> = exchanges(&dir.join("capture.pcap"))
        .iter()
        .map(|x| {
            let Payload::Http(h) = &x.payload else {
                panic!("{x:?}")
            };
            (
                h.request.method.clone(),
                h.response.as_ref().map_or(0, |r| r.status),
                h.tcp.and_then(|t| t.h2_stream),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("OPTIONS".into(), 405, Some(1)),
            ("POST".into(), 200, Some(3))
        ],
        "the upgraded OPTIONS on stream 1, the tools/call on stream 3"
    );
}

/// The records of a legacy pcap after its first `skip` packets: a capture that began
/// inside the connection.
fn without_first_packets(pcap: &[u8], skip: usize) -> Vec<u8> {
    let mut out = pcap[..24].to_vec();
    let mut at = 24;
    let mut n = 0;
    while at + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let end = at + 16 + incl;
        if n >= skip {
            out.extend_from_slice(&pcap[at..end]);
        }
        n += 1;
        at = end;
    }
    out
}

#[test]
fn a_capture_that_joins_an_h2_connection_reports_it_and_reads_what_it_can() {
    let full = std::fs::read(lab().join("h2c_tool_error_py/capture.pcap")).unwrap();
    assert_eq!(&full[..4], &[0xd4, 0xc3, 0xb2, 0xa1], "little-endian pcap");
    let whole = analyse_reader(&full[..], &Config::default()).unwrap().1;
    let facts: Value = serde_json::from_str(
        &std::fs::read_to_string(lab().join("h2c_tool_error_py/tshark.json")).unwrap(),
    )
    .unwrap();
    // Join just before the last tools/call's HEADERS frame (tshark's frame number).
    let last_post = facts["headers_frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["method"] == "POST")
        .map(|r| r["frame"].as_u64().unwrap())
        .max()
        .unwrap();
    let cut = without_first_packets(&full, last_post as usize - 1);
    let a = analyse_reader(&cut[..], &Config::default()).unwrap().1;
    let joined = a
        .notices
        .iter()
        .any(|n| n.message.contains("starts inside this HTTP/2 connection"));
    assert!(
        joined,
        "the join is reported: {:?} {:?}",
        a.notices, a.problems
    );
    // What decodes has the verdict the whole capture gives; what does not is reported.
    for c in &a.calls {
        let same = whole
            .calls
            .iter()
            .find(|w| w.id == c.id)
            .expect("a call of the whole capture");
        assert_eq!(same.verdict.outcome, c.verdict.outcome);
    }
    // Each side's header block of an undecodable stream is reported: count streams.
    let undecodable: std::collections::BTreeSet<&str> = a
        .problems
        .iter()
        .filter(|p| p.message.contains("before the capture began"))
        .filter_map(|p| p.message.split(':').next())
        .collect();
    assert_eq!(
        a.calls.len() + undecodable.len(),
        1,
        "{:?} {:?}",
        a.calls,
        a.problems
    );
}

use common::{Capture, Link, Side};

fn h2_frame(kind: u8, flags: u8, stream: u32, p: &[u8]) -> Vec<u8> {
    let mut v = (p.len() as u32).to_be_bytes()[1..].to_vec();
    v.extend([kind, flags]);
    v.extend(stream.to_be_bytes());
    v.extend_from_slice(p);
    v
}

/// A POST on stream 1 whose header block uses only the static table and literals
/// (RFC 7541 Appendix A indices: 3 `:method POST`, 6 `:scheme http`, 4 `:path /`,
/// 1 `:authority` with a literal value), and its 200 JSON answer.
fn post_and_answer() -> (Vec<u8>, Vec<u8>) {
    let mut block = vec![0x83, 0x86, 0x84, 0x01, 0x08];
    block.extend(b"mcp.test");
    let mut client = h2_frame(1, 0x4, 1, &block);
    let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_note","arguments":{}}}"#;
    client.extend(h2_frame(0, 0x1, 1, call));
    // :status 200 (index 8), content-type (name index 31) application/json.
    let mut resp = vec![0x88, 0x0f, 0x10, 0x10];
    resp.extend(b"application/json");
    let mut server = h2_frame(1, 0x4, 1, &resp);
    let result = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}],"isError":false}}"#;
    server.extend(h2_frame(0, 0x1, 1, result));
    (client, server)
}

fn read_capture(pcap: &[u8]) -> mcpsift::ingest::Collect {
    let mut sink = mcpsift::ingest::Collect::default();
    ingest(pcap, &Config::default().limits, &mut sink).unwrap();
    sink
}

#[test]
fn a_server_that_sends_its_settings_before_the_client_preface_is_not_a_joined_connection() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Raw, 40_000, (1000, 5000));
    cap.handshake(&mut c);
    cap.send(&mut c, Side::Server, &h2_frame(4, 0, 0, &[]));
    let (client, server) = post_and_answer();
    let mut first = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    first.extend(h2_frame(4, 0, 0, &[]));
    cap.send(&mut c, Side::Client, &first);
    cap.send(&mut c, Side::Client, &client);
    cap.send(&mut c, Side::Server, &server);
    let got = read_capture(&cap.pcap(Link::Raw, false, false));
    assert!(
        got.problems.is_empty() && got.notices.is_empty(),
        "{:?} {:?}",
        got.problems,
        got.notices
    );
    assert_eq!(got.exchanges.len(), 1);
    let Payload::Http(h) = &got.exchanges[0].payload else {
        panic!()
    };
    assert_eq!(h.request.url, "http://mcp.test/");
    assert_eq!(h.response.as_ref().map(|r| r.status), Some(200));
}

#[test]
fn a_joined_connection_is_found_after_a_segment_from_inside_a_frame() {
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Raw, 40_000, (1000, 5000));
    // No handshake: the capture starts with the tail of a large DATA frame.
    cap.send(&mut c, Side::Server, b"tail of an earlier response body");
    let (client, server) = post_and_answer();
    cap.send(&mut c, Side::Client, &client);
    cap.send(&mut c, Side::Server, &server);
    let got = read_capture(&cap.pcap(Link::Raw, false, false));
    assert_eq!(
        got.exchanges.len(),
        1,
        "{:?} {:?}",
        got.problems,
        got.notices
    );
    let Payload::Http(h) = &got.exchanges[0].payload else {
        panic!()
    };
    assert_eq!(
        (h.request.method.as_str(), h.tcp.and_then(|t| t.h2_stream)),
        ("POST", Some(1))
    );
    assert!(got
        .notices
        .iter()
        .any(|n| n.message.contains("starts inside this HTTP/2 connection")));
    assert!(
        got.notices
            .iter()
            .any(|n| n.message.contains("32 bytes before the HTTP/2 frames")),
        "{:?}",
        got.notices
    );
}

#[test]
fn sse_events_over_http2_carry_the_time_of_the_data_frame_that_completed_them() {
    let dir = lab().join("h2c_baseline_py_sse");
    let facts: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tshark.json")).unwrap()).unwrap();
    // Packets that carried a non-empty DATA frame, per stream, as tshark decoded them.
    let data = facts["data_frames"].as_array().unwrap();
    let times = |stream: u32| -> Vec<i64> {
        data.iter()
            .filter(|d| d["stream"] == stream && d["len"].as_u64() > Some(0))
            .map(|d| d["ts_ns"].as_i64().unwrap())
            .collect()
    };
    let mut events_checked = 0;
    for x in exchanges(&dir.join("capture.pcap")) {
        let Payload::Http(h) = &x.payload else {
            continue;
        };
        let Some(mcpsift::model::Body::Sse(sse)) = h.response.as_ref().map(|r| &r.body) else {
            continue;
        };
        let stream = h.tcp.and_then(|t| t.h2_stream).unwrap();
        let allowed = times(stream);
        let mut last = i64::MIN;
        for e in &sse.events {
            let ts = e.ts.expect("a captured event's time").0;
            // tshark prints microseconds for a pcap: the same instant.
            assert!(
                allowed.contains(&ts),
                "stream {stream}: event at {ts} not in {allowed:?}"
            );
            assert!(ts >= last, "events in order");
            last = ts;
            events_checked += 1;
        }
    }
    // slow_progress: three progress notifications and its result, plus the other calls' results.
    assert!(events_checked >= 4, "{events_checked} events checked");
}

/// A session's standalone GET stream over HTTP/2 is handed on in parts, as over
/// HTTP/1.1: with `--max-stream-events 100`, 3,000 log notifications cost no cap
/// notice, the stream counts as one exchange, and a response the server sent there
/// is still a stray, while the call beside it on another stream is judged as usual.
#[test]
fn a_standalone_get_stream_over_http2_is_handed_on_in_parts() {
    const NOTES: usize = 3_000;
    let mut cap = Capture::new();
    let mut c = cap.conn(Link::Raw, 40_000, (1000, 5000));
    cap.handshake(&mut c);
    let mut first = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    first.extend(h2_frame(4, 0, 0, &[]));
    // GET on stream 1: `:method GET` (index 2), `:scheme http`, `:path /`,
    // `:authority` literal; END_STREAM and END_HEADERS.
    let mut get = vec![0x82, 0x86, 0x84, 0x01, 0x08];
    get.extend(b"mcp.test");
    first.extend(h2_frame(1, 0x5, 1, &get));
    cap.send(&mut c, Side::Client, &first);
    let mut head = h2_frame(4, 0, 0, &[]);
    let mut sse = vec![0x88, 0x0f, 0x10, 0x11];
    sse.extend(b"text/event-stream");
    head.extend(h2_frame(1, 0x4, 1, &sse));
    cap.send(&mut c, Side::Server, &head);
    for k in 0..NOTES {
        let note = format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"log line {k}\"}}}}\n\n"
        );
        cap.send(&mut c, Side::Server, &h2_frame(0, 0, 1, note.as_bytes()));
        if k == NOTES / 2 {
            // A call on stream 3 (the POST helper names stream 1).
            let (client, server) = post_and_answer();
            let restream = |frames: &[u8]| {
                let mut out = frames.to_vec();
                let mut at = 0;
                while at + 9 <= out.len() {
                    let len = u32::from_be_bytes([0, out[at], out[at + 1], out[at + 2]]) as usize;
                    out[at + 5..at + 9].copy_from_slice(&3u32.to_be_bytes());
                    at += 9 + len;
                }
                out
            };
            cap.send(&mut c, Side::Client, &restream(&client));
            cap.send(&mut c, Side::Server, &restream(&server));
        }
    }
    let stray = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n\n";
    cap.send(&mut c, Side::Server, &h2_frame(0, 0x1, 1, stray));
    let pcap = cap.pcap(Link::Raw, false, false);

    let got = read_capture(&pcap);
    let parts: Vec<&mcpsift::model::HttpExchange> = got
        .exchanges
        .iter()
        .filter_map(|x| match &x.payload {
            Payload::Http(h) if h.request.method == "GET" => Some(h),
            _ => None,
        })
        .collect();
    assert!(parts.len() > NOTES / 64, "{} parts", parts.len());
    assert!(parts
        .iter()
        .all(|h| h.tcp.and_then(|t| t.h2_stream) == Some(1) && h.part.is_some()));
    let events: usize = parts
        .iter()
        .map(|h| match h.response.as_ref().map(|r| &r.body) {
            Some(mcpsift::model::Body::Sse(s)) => s.events.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(events, NOTES + 1, "every event once");

    let mut config = Config::default();
    config.limits.max_stream_events = 100;
    let (_, a) = analyse_reader(std::io::Cursor::new(pcap), &config).expect("read");
    assert_eq!(a.exchanges, 2, "the stream is one exchange");
    assert_eq!(call_verdicts(&a).len(), 1);
    assert_eq!(
        a.calls[0].verdict.outcome,
        mcpsift::model::Outcome::ToolSuccess
    );
    quiet_but_one_stray(&a, "99");
}
