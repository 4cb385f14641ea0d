//! A response body as it arrives: `Content-Encoding` undone through the shared bounded
//! decoder (`ingest::inflate`), then kept as bytes up to the body cap, or streamed into
//! the SSE parser with the stream's event budget. Every cut is remembered as a cap
//! diagnostic naming the flag that raises it.

use super::Caps;
use crate::ingest::inflate::{Coding, Inflater, Stop};
use crate::ingest::{Kind, Level};
use crate::model::{Body, SseBody, Timestamp};
use crate::sse::{Events, SseParser};

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
}

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
}

impl Content {
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
        }
    }

    /// An event stream body.
    pub(in crate::ingest::pcap) fn sse(caps: Caps) -> Kept {
        Kept::Sse(Box::new(Stream {
            parser: SseParser::new(caps.sse.event_bytes),
            events: Events::new(caps.sse),
            bytes: 0,
            resync: false,
            base: 0,
            problems: Vec::new(),
        }))
    }

    /// True when bytes after a hole can still be decoded (identity only).
    pub(in crate::ingest::pcap) fn survives_gap(&mut self) -> bool {
        self.truncated = true;
        if let Kept::Sse(s) = &mut self.kept {
            s.resync = true;
        }
        self.decoder.is_none()
    }

    /// Takes raw (still encoded) body bytes.
    pub(in crate::ingest::pcap) fn absorb(&mut self, raw: &[u8], ts: Timestamp) {
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
        } = self;
        let mut take = |slice: &[u8]| keep(kept, *caps, slice, ts, truncated, notes, cut_reported);
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
                    mut problems,
                    ..
                } = *s;
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

/// Keeps one decoded slice.
fn keep(
    kept: &mut Kept,
    caps: Caps,
    decoded: &[u8],
    ts: Timestamp,
    truncated: &mut bool,
    notes: &mut Vec<Note>,
    cut_reported: &mut bool,
) {
    match kept {
        Kept::None => {}
        Kept::Bytes(buf) => {
            let room = caps.body.saturating_sub(buf.len());
            if decoded.len() > room {
                *truncated = true;
                if !*cut_reported {
                    *cut_reported = true;
                    notes.push((
                        Level::Problem,
                        Kind::Cap,
                        format!(
                            "cap: the response body is longer than {} bytes; only the first {} were kept (raise --max-record-bytes)",
                            caps.body, caps.body
                        ),
                    ));
                }
            }
            buf.extend_from_slice(&decoded[..decoded.len().min(room)]);
        }
        Kept::Sse(s) => s.feed(decoded, ts),
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
        let base = self.base;
        let events = &mut self.events;
        self.parser.feed(data, Some(ts), &mut |mut ev| {
            ev.offset += base;
            events.push(ev);
        });
    }

    fn parser_cap(&self) -> usize {
        self.parser.cap()
    }
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
            c.absorb(piece, Timestamp(0));
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
        let mut c = Content::new(None, Content::sse(caps(1000)), caps(1000));
        for i in 0..10 {
            c.absorb(format!("data: {{\"n\":{i}}}\n\n").as_bytes(), Timestamp(i));
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
        let mut c = Content::new(None, Content::sse(budget), budget);
        for i in 0..10 {
            let ev = format!("data: {{\"id\":{i},\"result\":{{\"content\":[]}}}}\n\n");
            c.absorb(ev.as_bytes(), Timestamp(i));
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

    #[test]
    fn blank_line_after_a_hole_is_the_earliest_one() {
        assert_eq!(find_blank_line(b"a\r\n\r\nb\n\n"), Some(5));
        assert_eq!(find_blank_line(b"x\n\ny\r\n\r\n"), Some(3));
        assert_eq!(find_blank_line(b"no end"), None);
    }
}
