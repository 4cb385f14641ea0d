//! TLS in captures, end to end over the lab's HTTPS runs (`lab/tls/`, made by
//! `lab/tools/run_tls.py` with real SDK clients writing key logs): decrypted with the
//! key log, or with the key log embedded in the pcapng, every run gives exactly the
//! verdicts and findings of the plaintext run of the same scenario
//! (`lab/captures/<scenario>/`), its calls sit at the frames tshark decrypts, and
//! without a key log each TLS connection is named in a notice. Plus the record
//! layer's split invariance (a property test over a TLS 1.3 stream encrypted here)
//! and the failures a record layer must report.

mod common;

use common::run::{analyse_path, call_verdicts, config_with_keylog};
use common::{call_request, json_response, Capture, Link, Side};
use mcpsift::batch::analyse_reader;
use mcpsift::config::Config;
use mcpsift::correlate::Analysis;
use mcpsift::ingest::tls::{Event, Flow, KeyLog, Keyring, Note, Suite};
use mcpsift::model::Locator;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn runs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("lab/tls"))
        .expect("lab/tls")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").exists() && p.join("capture-dsb.pcapng").exists())
        .collect();
    v.sort();
    v
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

fn analyse(path: &Path, keylog: Option<&Path>) -> Analysis {
    analyse_path(path, &config_with_keylog(keylog))
}

type Verdicts = (Vec<(String, String, String)>, BTreeSet<String>);

fn verdicts(a: &Analysis) -> Verdicts {
    (
        call_verdicts(a),
        a.findings
            .iter()
            .map(|f| f.kind.as_str().to_owned())
            .collect(),
    )
}

fn expected_verdicts(v: &Value) -> Verdicts {
    (
        v["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .map(|c| {
                (
                    c["tool"].as_str().unwrap_or_default().to_owned(),
                    c["id"].to_string(),
                    c["outcome"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect(),
        v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter_map(|f| f.as_str().map(str::to_owned))
            .collect(),
    )
}

#[test]
fn decrypted_runs_give_the_plaintext_runs_verdicts() {
    let runs = runs();
    assert!(runs.len() >= 5, "lab/tls holds {} runs", runs.len());
    let mut versions = BTreeSet::new();
    let mut suites = BTreeSet::new();
    for dir in &runs {
        let expected = json(&dir.join("expected.json"));
        let plain = expected["plaintext"].as_str().expect("plaintext");
        let plain_dir = root().join("lab/captures").join(plain);
        // The verdicts expected here are the plaintext scenario's, and so are the
        // verdicts mcpsift gives on the plaintext capture of that scenario.
        let want = expected_verdicts(&json(&plain_dir.join("expected.json")));
        assert_eq!(expected_verdicts(&expected), want, "{}", dir.display());
        let plaintext = analyse(&plain_dir.join("capture.pcap"), None);
        assert_eq!(verdicts(&plaintext), want, "{plain} in plaintext");

        let keys = dir.join("keys.txt");
        for (file, keylog) in [
            ("capture.pcap", Some(keys.as_path())),
            ("capture-dsb.pcapng", None),
        ] {
            let path = dir.join(file);
            let a = analyse(&path, keylog);
            assert_eq!(verdicts(&a), want, "{}", path.display());
            assert!(
                a.problems.is_empty(),
                "{}: {:?}",
                path.display(),
                a.problems
            );
            assert!(a.notices.is_empty(), "{}: {:?}", path.display(), a.notices);
            // Each call is located at the frame tshark decrypts its request in, and
            // the location names the TLS connection.
            let tshark: Vec<(u64, String)> = expected["tshark"]["tools_call_requests"]
                .as_array()
                .expect("tshark calls")
                .iter()
                .map(|c| (c["frame"].as_u64().unwrap_or(0), c["id"].to_string()))
                .collect();
            let ours: Vec<(u64, String)> = a
                .calls
                .iter()
                .map(|c| match &c.locator {
                    Locator::TlsFrames { request, .. } => (*request, c.id.to_string()),
                    other => panic!("{}: call {} at {other:?}", path.display(), c.id),
                })
                .collect();
            assert_eq!(ours, tshark, "{}", path.display());
            let streams: BTreeSet<u64> = expected["tshark"]["http_messages"]
                .as_array()
                .expect("messages")
                .iter()
                .filter_map(|m| m["tcp_stream"].as_u64())
                .collect();
            for c in &a.calls {
                if let Locator::TlsFrames { tcp_stream, .. } = c.locator {
                    assert!(streams.contains(&tcp_stream), "{}", path.display());
                }
                // A call that kept its timeline names the TLS version and suite
                // tshark saw in the ServerHello.
                if let Some(tls) = c.timeline.as_ref().and_then(|t| t.tcp).and_then(|t| t.tls) {
                    assert_eq!(tls.version.as_str(), expected["tls"]["version"]);
                    let code = u16::from_str_radix(
                        expected["tls"]["cipher_suite"]
                            .as_str()
                            .unwrap_or_default()
                            .trim_start_matches("0x"),
                        16,
                    )
                    .unwrap_or(0);
                    assert_eq!(Some(tls.cipher_suite), Suite::by_code(code).map(|s| s.name));
                    assert_eq!(tls.alpn, expected["tls"]["alpn"].as_str());
                }
            }
        }
        versions.insert(expected["tls"]["version"].to_string());
        suites.insert(expected["tls"]["cipher_suite"].to_string());
    }
    assert_eq!(versions.len(), 2, "TLS 1.2 and 1.3: {versions:?}");
    assert!(suites.len() >= 5, "{suites:?}");
}

#[test]
fn without_a_key_log_every_tls_connection_is_named_in_a_notice() {
    for dir in runs() {
        let path = dir.join("capture.pcap");
        let a = analyse(&path, None);
        assert!(a.calls.is_empty(), "{}", path.display());
        assert!(
            a.problems.is_empty(),
            "{}: {:?}",
            path.display(),
            a.problems
        );
        let per_flow: Vec<&str> = a
            .notices
            .iter()
            .map(|n| n.message.as_str())
            .filter(|m| m.contains("no key log was given"))
            .collect();
        let streams: BTreeSet<u64> = json(&dir.join("expected.json"))["tshark"]["http_messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter_map(|m| m["tcp_stream"].as_u64())
            .collect();
        for s in &streams {
            let name = format!("TLS on TCP stream {s} (");
            assert!(
                per_flow.iter().any(|m| m.contains(&name)),
                "{}: no notice names stream {s}: {per_flow:?}",
                path.display()
            );
        }
        let how_to: Vec<&str> = a
            .notices
            .iter()
            .filter(|n| n.locator == Locator::Input)
            .map(|n| n.message.as_str())
            .collect();
        assert_eq!(how_to.len(), 1, "{}: {how_to:?}", path.display());
        for client in ["--tls-keylog", "SSLKEYLOGFILE", "editcap --inject-secrets"] {
            assert!(how_to[0].contains(client), "{}", how_to[0]);
        }
    }
}

#[test]
fn http2_inside_tls_is_decrypted_and_read() {
    // curl --http2 against a Node http2 server (lab/tools/run_tls_h2.py): tshark
    // decrypts HTTP/2 headers with the key log and sees no HTTP/2 without it. The
    // decrypted bytes go to the HTTP/2 reader like h2c ones: one call, located in
    // the TLS connection, its response at the frame of tshark's response headers.
    let dir = root().join("lab/tls/h2_curl");
    let expected = json(&dir.join("expected.json"));
    assert_eq!(expected["tls"]["alpn"], "h2");
    let headers: Vec<u64> = expected["tshark"]["http2_header_frames"]
        .as_array()
        .expect("frames")
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    let a = analyse(&dir.join("capture.pcap"), Some(&dir.join("keys.txt")));
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert!(a.notices.is_empty(), "{:?}", a.notices);
    let got: Vec<(String, &str)> = a
        .calls
        .iter()
        .map(|c| (c.id.to_string(), c.verdict.outcome.as_str()))
        .collect();
    assert_eq!(got, [("7".to_owned(), "TOOL_SUCCESS")]);
    match a.calls[0].locator {
        Locator::TlsFrames {
            request,
            response: Some(response),
            tcp_stream: 0,
        } => {
            assert!(request >= headers[0], "{request} {headers:?}");
            assert_eq!(Some(&response), headers.last());
        }
        ref other => panic!("{other:?}"),
    }
    // Without the key log, the same connection is named as encrypted instead.
    let a = analyse(&dir.join("capture.pcap"), None);
    assert!(a.calls.is_empty());
    assert!(a
        .notices
        .iter()
        .any(|n| n.message.contains("TLS on TCP stream 0 (")));
}

#[test]
fn a_wrong_key_log_is_a_decryption_failure_per_connection_and_no_secret_is_printed() {
    let dir = root().join("lab/tls/tls12_http_503_then_200_py");
    let text = std::fs::read_to_string(dir.join("keys.txt")).expect("keys");
    // The same handshakes, every master secret changed in its last hex digit.
    let wrong: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut l = l.to_owned();
            let last = if l.ends_with('0') { '1' } else { '0' };
            l.pop();
            l.push(last);
            l + "\n"
        })
        .collect();
    let tmp = tempfile::NamedTempFile::new().expect("tmp");
    std::fs::write(tmp.path(), &wrong).expect("write");
    let a = analyse(&dir.join("capture.pcap"), Some(tmp.path()));
    assert!(a.calls.is_empty());
    // A notice per connection (the key log does not fit; the capture is fine).
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    let failures: Vec<&str> = a
        .notices
        .iter()
        .map(|p| p.message.as_str())
        .filter(|m| m.contains("TLS on TCP stream") && m.contains("does not decrypt"))
        .collect();
    // Both directions of each TLS connection tshark found HTTP in.
    let streams: BTreeSet<u64> = json(&dir.join("expected.json"))["tshark"]["http_messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["tcp_stream"].as_u64())
        .collect();
    assert_eq!(failures.len(), 2 * streams.len(), "{:?}", a.notices);
    for m in a.problems.iter().chain(&a.notices).map(|p| &p.message) {
        for line in wrong.lines() {
            let secret = line.rsplit(' ').next().unwrap_or_default();
            assert!(!m.contains(&secret[..16]), "a secret in {m}");
        }
    }
}

#[test]
fn a_keylog_line_that_is_not_one_is_named_by_the_cli_with_its_line_and_never_echoed() {
    let tmp = tempfile::NamedTempFile::new().expect("tmp");
    let secret = "ab".repeat(48);
    std::fs::write(
        tmp.path(),
        format!(
            "# comment\nCLIENT_RANDOM {} {secret}\nCLIENT_RANDOM nothex {secret}\n",
            "00".repeat(32)
        ),
    )
    .expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .arg("analyze")
        .arg("--tls-keylog")
        .arg(tmp.path())
        .arg(root().join("lab/tls/tls13_baseline_ts_json/capture.pcap"))
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}: line 3: the client random",
            tmp.path().display()
        )),
        "{err}"
    );
    assert!(!err.contains(&secret[..20]), "{err}");
    assert_eq!(
        out.status.code(),
        Some(2),
        "a bad key log line is a problem"
    );
    let missing = std::process::Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .args(["analyze", "--tls-keylog", "/nonexistent/keys.txt"])
        .arg(root().join("lab/tls/tls13_baseline_ts_json/capture.pcap"))
        .output()
        .expect("run");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/keys.txt"));
}

// ---------------------------------------------------------------- a stream encrypted here

/// HKDF-Expand-Label (RFC 8446 §7.1), written again here so that the stream is not
/// encrypted with the code under test.
fn expand_label(secret: &[u8], label: &str, len: usize) -> Vec<u8> {
    let full = format!("tls13 {label}");
    let mut info = (len as u16).to_be_bytes().to_vec();
    info.push(full.len() as u8);
    info.extend_from_slice(full.as_bytes());
    info.push(0);
    let mut out = vec![0; len];
    hkdf::Hkdf::<sha2::Sha256>::from_prk(secret)
        .expect("prk")
        .expand(&info, &mut out)
        .expect("expand");
    out
}

struct Sealer {
    aead: aes_gcm::Aes128Gcm,
    iv: Vec<u8>,
    seq: u64,
}

impl Sealer {
    fn new(secret: &[u8]) -> Sealer {
        use aes_gcm::KeyInit;
        Sealer {
            aead: aes_gcm::Aes128Gcm::new_from_slice(&expand_label(secret, "key", 16))
                .expect("key"),
            iv: expand_label(secret, "iv", 12),
            seq: 0,
        }
    }

    /// One TLS 1.3 record: `content` of inner type `ty`, with `pad` zero bytes.
    fn seal(&mut self, ty: u8, content: &[u8], pad: usize) -> Vec<u8> {
        use aes_gcm::aead::AeadInPlace;
        let mut inner = content.to_vec();
        inner.push(ty);
        inner.resize(inner.len() + pad, 0);
        let len = inner.len() + 16;
        let header = [23, 3, 3, (len >> 8) as u8, len as u8];
        let mut nonce = self.iv.clone();
        for (b, s) in nonce[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        self.seq += 1;
        self.aead
            .encrypt_in_place(aes_gcm::Nonce::from_slice(&nonce), &header, &mut inner)
            .expect("seal");
        let mut rec = header.to_vec();
        rec.extend(inner);
        rec
    }
}

fn plain_record(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut r = vec![ty, 3, 3, (body.len() >> 8) as u8, body.len() as u8];
    r.extend_from_slice(body);
    r
}

fn handshake(ty: u8, body: &[u8]) -> Vec<u8> {
    let n = body.len();
    let mut m = vec![ty, (n >> 16) as u8, (n >> 8) as u8, n as u8];
    m.extend_from_slice(body);
    m
}

/// A TLS 1.3 connection (TLS_AES_128_GCM_SHA256) with its key log: the client's
/// and the server's byte streams and the application data each sent.
struct Sealed {
    keylog: String,
    streams: [Vec<u8>; 2],
    sent: [Vec<u8>; 2],
}

fn connection(messages: &[(usize, Vec<u8>)], key_update_at: Option<usize>) -> Sealed {
    let random = [0x42u8; 32];
    let secrets: Vec<[u8; 32]> = (1..=4u8).map(|i| [i; 32]).collect();
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let keylog = format!(
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET {r} {}\nSERVER_HANDSHAKE_TRAFFIC_SECRET {r} {}\nCLIENT_TRAFFIC_SECRET_0 {r} {}\nSERVER_TRAFFIC_SECRET_0 {r} {}\n",
        hex(&secrets[0]),
        hex(&secrets[1]),
        hex(&secrets[2]),
        hex(&secrets[3]),
        r = hex(&random)
    );
    let mut ch = vec![3, 3];
    ch.extend_from_slice(&random);
    ch.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
    let mut sh = vec![3, 3];
    sh.extend_from_slice(&[7; 32]);
    sh.extend_from_slice(&[0, 0x13, 0x01, 0]);
    let exts = [0u8, 43, 0, 2, 3, 4];
    sh.extend_from_slice(&(exts.len() as u16).to_be_bytes());
    sh.extend_from_slice(&exts);
    let alpn = [
        0u8, 16, 0, 11, 0, 9, 8, b'h', b't', b't', b'p', b'/', b'1', b'.', b'1',
    ];
    let mut ee = (alpn.len() as u16).to_be_bytes().to_vec();
    ee.extend_from_slice(&alpn);

    let mut c = plain_record(22, &handshake(1, &ch));
    let mut s = plain_record(22, &handshake(2, &sh));
    s.extend(plain_record(20, &[1]));
    let mut shs = Sealer::new(&secrets[1]);
    let mut flight = handshake(8, &ee);
    flight.extend(handshake(11, &[0; 300]));
    flight.extend(handshake(20, &[0; 32]));
    s.extend(shs.seal(22, &flight, 0));
    c.extend(plain_record(20, &[1]));
    let mut chs = Sealer::new(&secrets[0]);
    c.extend(chs.seal(22, &handshake(20, &[0; 32]), 0));
    let mut app = [Sealer::new(&secrets[2]), Sealer::new(&secrets[3])];
    let mut streams = [c, s];
    let mut sent = [Vec::new(), Vec::new()];
    for (i, (dir, data)) in messages.iter().enumerate() {
        if key_update_at == Some(i) {
            let rec = app[*dir].seal(22, &handshake(24, &[0]), 0);
            streams[*dir].extend(rec);
            let next = expand_label(
                &match *dir {
                    0 => secrets[2],
                    _ => secrets[3],
                },
                "traffic upd",
                32,
            );
            app[*dir] = Sealer::new(&next);
        }
        let rec = app[*dir].seal(23, data, i % 3);
        streams[*dir].extend(rec);
        sent[*dir].extend_from_slice(data);
    }
    let close = app[0].seal(21, &[1, 0], 0);
    streams[0].extend(close);
    Sealed {
        keylog,
        streams,
        sent,
    }
}

/// Pushes each direction cut at `cuts` (offsets into that direction), the two
/// directions taking turns, and returns the plaintext and the notes.
fn replay(conn: &Sealed, cuts: &[Vec<usize>; 2]) -> ([Vec<u8>; 2], Vec<Note>) {
    let mut log = KeyLog::default();
    log.parse(conn.keylog.as_bytes());
    let empty = KeyLog::default();
    let ring = Keyring {
        given: &log,
        embedded: &empty,
    };
    let mut flow = Flow::new();
    let mut pieces: [Vec<&[u8]>; 2] = [Vec::new(), Vec::new()];
    for d in 0..2 {
        let mut points: Vec<usize> = cuts[d]
            .iter()
            .map(|&c| c.min(conn.streams[d].len()))
            .collect();
        points.push(0);
        points.push(conn.streams[d].len());
        if d == 0 {
            points.push(CLIENT_HELLO);
        }
        points.sort_unstable();
        points.dedup();
        for w in points.windows(2) {
            pieces[d].push(&conn.streams[d][w[0]..w[1]]);
        }
    }
    let mut out = Vec::new();
    // The client's ClientHello goes first (as on the wire, it is cut after it),
    // then the server's flight, then the rest of the client's.
    let (mut i, mut j) = (0, 0);
    let mut client_sent = 0;
    while i < pieces[0].len() && client_sent < CLIENT_HELLO {
        client_sent += pieces[0][i].len();
        flow.push(0, pieces[0][i], &ring, &mut out);
        i += 1;
    }
    while i < pieces[0].len() || j < pieces[1].len() {
        if j < pieces[1].len() {
            flow.push(1, pieces[1][j], &ring, &mut out);
            j += 1;
        } else {
            flow.push(0, pieces[0][i], &ring, &mut out);
            i += 1;
        }
    }
    let mut plain = [Vec::new(), Vec::new()];
    let mut notes = Vec::new();
    for e in out {
        match e {
            Event::Plaintext { dir, data } => plain[dir].extend(data),
            Event::Note(n) => notes.push(n),
        }
    }
    (plain, notes)
}

/// The ClientHello record's length in `connection`'s client stream.
const CLIENT_HELLO: usize = 5 + 4 + 2 + 32 + 1 + 4 + 2;

fn record_boundaries(stream: &[u8]) -> Vec<usize> {
    let mut at = 0;
    let mut v = Vec::new();
    while at + 5 <= stream.len() {
        let len = usize::from(u16::from_be_bytes([stream[at + 3], stream[at + 4]]));
        at += 5 + len;
        v.push(at);
    }
    v
}

#[test]
fn a_stream_cut_at_every_record_boundary_or_inside_every_header_decrypts_the_same() {
    let messages: Vec<(usize, Vec<u8>)> = (0..6)
        .map(|i| (i % 2, format!("message {i} ").repeat(i + 1).into_bytes()))
        .collect();
    let conn = connection(&messages, Some(3));
    let whole = replay(&conn, &[vec![], vec![]]);
    assert_eq!(whole.0, conn.sent, "whole stream");
    assert!(whole.1.is_empty(), "{:?}", whole.1);
    // Every record boundary, and one and three bytes into every header.
    let cuts: [Vec<usize>; 2] = [0, 1].map(|d| {
        record_boundaries(&conn.streams[d])
            .into_iter()
            .flat_map(|b| [b, b + 1, b + 3])
            .collect()
    });
    assert_eq!(replay(&conn, &cuts), whole);
    // One byte at a time.
    let bytes: [Vec<usize>; 2] = [0, 1].map(|d| (1..conn.streams[d].len()).collect());
    assert_eq!(replay(&conn, &bytes), whole);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_cuts_give_the_same_plaintext(
        sizes in proptest::collection::vec((0usize..2, 1usize..3000), 1..8),
        update in proptest::option::of(0usize..8),
        cuts0 in proptest::collection::vec(0usize..40_000, 0..40),
        cuts1 in proptest::collection::vec(0usize..40_000, 0..40),
    ) {
        let messages: Vec<(usize, Vec<u8>)> = sizes
            .iter()
            .enumerate()
            .map(|(i, &(d, n))| (d, (0..n).map(|k| (k * 7 + i) as u8).collect()))
            .collect();
        let conn = connection(&messages, update.filter(|&u| u < messages.len()));
        let (plain, notes) = replay(&conn, &[cuts0, cuts1]);
        prop_assert_eq!(&plain, &conn.sent);
        prop_assert!(notes.is_empty(), "{:?}", notes);
    }
}

#[test]
fn record_layer_failures_are_reported_never_dropped() {
    let conn = connection(&[(0, b"hello".to_vec()), (1, b"world".to_vec())], None);
    let mut log = KeyLog::default();
    log.parse(conn.keylog.as_bytes());
    let empty = KeyLog::default();
    let ring = Keyring {
        given: &log,
        embedded: &empty,
    };
    let notes = |flow: &mut Flow, d: usize, bytes: &[u8]| {
        let mut out = Vec::new();
        flow.push(d, bytes, &ring, &mut out);
        out.into_iter()
            .filter_map(|e| match e {
                Event::Note(n) => Some(n),
                Event::Plaintext { .. } => None,
            })
            .collect::<Vec<_>>()
    };
    // A record longer than TLS allows.
    let mut flow = Flow::new();
    assert_eq!(
        notes(&mut flow, 0, &[23, 3, 3, 0x48, 0x01]),
        vec![Note::RecordTooLong {
            dir: 0,
            len: 0x4801
        }]
    );
    // Bytes that are no TLS record.
    let mut flow = Flow::new();
    assert_eq!(
        notes(&mut flow, 1, b"HTTP/1.1 200 OK\r\n"),
        vec![Note::NotTls { dir: 1 }]
    );
    // Application data with no handshake before it: the capture started later.
    let mut flow = Flow::new();
    assert_eq!(
        notes(&mut flow, 0, &[&[23u8, 3, 3, 0, 20][..], &[0; 20]].concat()),
        vec![Note::NoHandshake]
    );
    // A corrupted record: the rest of that direction is not read.
    let mut flow = Flow::new();
    let mut server = conn.streams[1].clone();
    let last = server.len() - 1;
    server[last] ^= 1;
    assert!(notes(&mut flow, 0, &conn.streams[0][..CLIENT_HELLO]).is_empty());
    let got = notes(&mut flow, 1, &server);
    assert!(
        matches!(got.as_slice(), [Note::DecryptFailed { dir: 1, .. }]),
        "{got:?}"
    );
    // A hole: reported, and nothing after it is framed.
    let mut flow = Flow::new();
    let mut out = Vec::new();
    flow.gap(0, &mut out);
    assert_eq!(out, vec![Event::Note(Note::Gap { dir: 0 })]);
    assert!(notes(&mut flow, 0, &conn.streams[0]).is_empty());
    // No secrets for the handshake.
    let mut flow = Flow::new();
    let mut out = Vec::new();
    let ring_empty = Keyring {
        given: &empty,
        embedded: &empty,
    };
    flow.push(0, &conn.streams[0][..CLIENT_HELLO], &ring_empty, &mut out);
    flow.push(1, &conn.streams[1], &ring_empty, &mut out);
    assert!(
        matches!(
            out.as_slice(),
            [Event::Note(Note::NoSecrets {
                any_keys: false,
                ..
            })]
        ),
        "{out:?}"
    );
}

#[test]
fn the_json_output_names_the_tls_connection_of_a_decrypted_call() {
    // docs/output.md: location kind `tls_frames`, and the timeline's `tls`.
    let dir = root().join("lab/tls/tls13_aes128_http_503_then_200_ts");
    let expected = json(&dir.join("expected.json"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .args(["analyze", "--format", "jsonl"])
        .arg(dir.join("capture-dsb.pcapng"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let failed: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["type"] == "call" && r["outcome"] == "HTTP_ERROR")
        .expect("the 503 call");
    let tshark_frame = &expected["tshark"]["tools_call_requests"][0]["frame"];
    assert_eq!(failed["location"]["kind"], "tls_frames");
    assert_eq!(&failed["location"]["request"], tshark_frame);
    assert_eq!(
        failed["location"]["tcp_stream"],
        failed["timeline"]["tcp_stream"]
    );
    assert_eq!(
        failed["timeline"]["tls"]["version"],
        expected["tls"]["version"]
    );
    assert_eq!(
        failed["timeline"]["tls"]["cipher_suite"],
        "TLS_AES_128_GCM_SHA256"
    );
    assert_eq!(expected["tls"]["cipher_suite"], "0x1301");
    assert_eq!(failed["timeline"]["tls"]["alpn"], expected["tls"]["alpn"]);
}

// ---------------------------------------------------------------- that stream in a capture

/// `sealed`'s records, each direction cut at its record boundaries.
fn records(sealed: &Sealed) -> [Vec<Vec<u8>>; 2] {
    [0, 1].map(|d| {
        let mut at = 0;
        record_boundaries(&sealed.streams[d])
            .into_iter()
            .map(|end| {
                let r = sealed.streams[d][at..end].to_vec();
                at = end;
                r
            })
            .collect()
    })
}

/// Two HTTP/1.1 exchanges inside the sealed stream, written as a pcap in wire order;
/// `drop_server_record` leaves one server record out (a hole in the capture).
fn tls_capture(drop_server_record: Option<usize>) -> (Vec<u8>, String) {
    let sealed = connection(
        &[
            (0, call_request(1, "")),
            (1, json_response(1)),
            (0, call_request(2, "")),
            (1, json_response(2)),
        ],
        None,
    );
    let [c, s] = records(&sealed);
    // Client: ClientHello, CCS, Finished, request 1, request 2, close_notify.
    // Server: ServerHello, CCS, encrypted flight, response 1, response 2.
    let order: [(Side, usize); 11] = [
        (Side::Client, 0),
        (Side::Server, 0),
        (Side::Server, 1),
        (Side::Server, 2),
        (Side::Client, 1),
        (Side::Client, 2),
        (Side::Client, 3),
        (Side::Server, 3),
        (Side::Client, 4),
        (Side::Server, 4),
        (Side::Client, 5),
    ];
    let mut cap = Capture::new();
    let mut conn = cap.conn(Link::Ethernet, 40200, (1, 2));
    conn.server.1 = 443;
    cap.handshake(&mut conn);
    for (side, i) in order {
        match side {
            Side::Client => cap.send(&mut conn, Side::Client, &c[i]),
            Side::Server if drop_server_record == Some(i) => {
                conn.sseq = conn.sseq.wrapping_add(s[i].len() as u32);
            }
            Side::Server => cap.send(&mut conn, Side::Server, &s[i]),
        }
    }
    cap.fin(&mut conn, Side::Client);
    cap.fin(&mut conn, Side::Server);
    (cap.pcap(Link::Ethernet, false, false), sealed.keylog)
}

fn analyse_bytes(bytes: &[u8], keylog: &str) -> Analysis {
    let mut keys = KeyLog::default();
    keys.parse(keylog.as_bytes());
    let config = Config {
        tls_keys: Arc::new(keys),
        ..Config::default()
    };
    analyse_reader(bytes, &config).expect("analyse").1
}

#[test]
fn exchanges_inside_tls_in_a_capture_are_read_and_a_hole_is_reported() {
    let (bytes, keylog) = tls_capture(None);
    let a = analyse_bytes(&bytes, &keylog);
    let got: Vec<(String, &str)> = a
        .calls
        .iter()
        .map(|c| (c.id.to_string(), c.verdict.outcome.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("1".to_owned(), "TOOL_SUCCESS"),
            ("2".to_owned(), "TOOL_SUCCESS")
        ]
    );
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    assert!(a.notices.is_empty(), "{:?}", a.notices);
    // Frames: 3 TCP handshake packets, then the records in order; request 1 is
    // the 7th record (frame 10), its response the 8th (frame 11).
    assert_eq!(
        a.calls[0].locator,
        Locator::TlsFrames {
            request: 10,
            response: Some(11),
            tcp_stream: 0
        }
    );

    // Response 1's record is missing: the hole is named, call 1 is not a success,
    // nothing after the hole is read from the server.
    let (bytes, keylog) = tls_capture(Some(3));
    let a = analyse_bytes(&bytes, &keylog);
    let hole: Vec<&str> = a
        .problems
        .iter()
        .map(|p| p.message.as_str())
        .filter(|m| m.contains("TLS on TCP stream 0") && m.contains("past the hole"))
        .collect();
    assert_eq!(hole.len(), 1, "{:?}", a.problems);
    assert!(a
        .calls
        .iter()
        .all(|c| c.verdict.outcome.as_str() != "TOOL_SUCCESS"));
}

#[test]
fn a_capture_that_starts_after_the_tls_handshake_says_so() {
    let mut cap = Capture::new();
    let mut conn = cap.conn(Link::Ethernet, 40210, (1, 2));
    conn.server.1 = 443;
    let mut record = vec![23u8, 3, 3, 0, 40];
    record.extend_from_slice(&[0x5a; 40]);
    cap.send(&mut conn, Side::Client, &record);
    cap.send(&mut conn, Side::Server, &record);
    let bytes = cap.pcap(Link::Ethernet, false, false);
    let a = analyse_bytes(&bytes, "");
    assert!(a.problems.is_empty(), "{:?}", a.problems);
    let said: Vec<&str> = a
        .notices
        .iter()
        .map(|n| n.message.as_str())
        .filter(|m| {
            m.contains("TLS on TCP stream 0") && m.contains("starts after the TLS handshake")
        })
        .collect();
    assert_eq!(said.len(), 1, "{:?}", a.notices);
}
