//! The TLS record layer on any bytes: frames of `[direction, length (2 bytes),
//! bytes]` pushed into one `tls::Flow` with the key log of a real lab run, so the
//! seeds (that run's TCP payloads, in capture order) reach real decryption. No
//! panic, and the same plaintext and notes whether each frame is pushed whole or
//! byte by byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpsift::ingest::tls::{Event, Flow, KeyLog, Keyring};
use std::sync::OnceLock;

const KEYS: &str = include_str!("../../lab/tls/tls13_baseline_ts_json/keys.txt");

fn keys() -> &'static KeyLog {
    static K: OnceLock<KeyLog> = OnceLock::new();
    K.get_or_init(|| {
        let mut k = KeyLog::default();
        k.parse(KEYS.as_bytes());
        k
    })
}

fn frames(mut data: &[u8]) -> Vec<(usize, &[u8])> {
    let mut v = Vec::new();
    while let [dir, hi, lo, rest @ ..] = data {
        let n = (usize::from(*hi) << 8 | usize::from(*lo)).min(rest.len());
        let (body, tail) = rest.split_at(n);
        v.push((usize::from(*dir & 1), body));
        data = tail;
    }
    v
}

fn run(frames: &[(usize, &[u8])], bytewise: bool) -> Vec<Event> {
    let empty = KeyLog::default();
    let ring = Keyring {
        given: keys(),
        embedded: &empty,
    };
    let mut flow = Flow::new();
    let mut out = Vec::new();
    for (dir, body) in frames {
        if body.is_empty() {
            flow.gap(*dir, &mut out);
        } else if bytewise {
            for b in body.chunks(1) {
                flow.push(*dir, b, &ring, &mut out);
            }
        } else {
            flow.push(*dir, body, &ring, &mut out);
        }
    }
    out
}

/// Plaintext per direction, concatenated, and the notes in order.
fn digest(events: Vec<Event>) -> ([Vec<u8>; 2], Vec<String>) {
    let mut plain = [Vec::new(), Vec::new()];
    let mut notes = Vec::new();
    for e in events {
        match e {
            Event::Plaintext { dir, data } => plain[dir].extend(data),
            Event::Note(n) => notes.push(format!("{n:?}")),
        }
    }
    (plain, notes)
}

fuzz_target!(|data: &[u8]| {
    let f = frames(data);
    assert_eq!(digest(run(&f, false)), digest(run(&f, true)));
});
