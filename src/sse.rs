//! Server-sent events: an incremental, push-based parser for `text/event-stream`
//! bodies that follows the WHATWG "event stream interpretation" rules. Written here
//! because the SSE crates are async-only, keep their parsers private and stop at the
//! first error, while forensics needs every byte accounted for (MCP's Streamable HTTP
//! transport uses SSE as the WHATWG HTML standard, §Server-sent events, defines it).
//!
//! Feed bytes as they arrive (any split gives the same events), then `finish`. An
//! event that never saw its terminating blank line is reported as an incomplete tail,
//! never dispatched.

use crate::config::Limits;
use crate::model::{SseBody, SseEvent, Timestamp};
use std::sync::Arc;

/// Default cap on one event's data (and on one line) in bytes.
pub const DEFAULT_EVENT_CAP: usize = 16 << 20;
/// Default cap on the events kept per stream or body.
pub const DEFAULT_STREAM_EVENTS: usize = 10_000;
/// Longest event id kept; a longer one is cut (ids are cursors, not payloads).
pub const MAX_ID_BYTES: usize = 1024;
/// What keeping one event costs beyond its data and name, counted against the
/// reserve of possible responses so that many small events stay within its bytes.
const EVENT_COST: u64 = std::mem::size_of::<SseEvent>() as u64;
/// How much of an unterminated tail is kept as evidence.
const TAIL_EVIDENCE: usize = 4096;

/// Incremental event-stream parser.
#[derive(Debug)]
pub struct SseParser {
    cap: usize,
    /// Bytes consumed so far, after any BOM: the next byte's offset.
    pos: u64,
    /// Offset of the first byte of the line being collected.
    line_start: u64,
    bom_checked: bool,
    /// A partial BOM seen at the very start (the BOM may be split across feeds).
    bom_prefix: Vec<u8>,
    line: Vec<u8>,
    line_overflow: bool,
    /// The previous chunk ended in CR: a leading LF in the next chunk belongs to it.
    after_cr: bool,
    // Event being built. `data` holds its data lines joined by LF, without the LF
    // WHATWG appends after the last one (and takes off at dispatch), so that the
    // usual single line is the decoded string itself, with no copy or regrowth.
    data: String,
    /// A data line was kept in `data` (one empty line leaves it empty).
    data_lines: bool,
    has_data: bool,
    event_type: String,
    block_retry: Option<u64>,
    block_start: Option<u64>,
    data_overflow: bool,
    // Stream state. The id is shared by every event it applies to, never copied.
    last_event_id: Option<Arc<str>>,
    id_cut_reported: bool,
    retry: Option<u64>,
    comments: u64,
    problems: Vec<String>,
    lossy_reported: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new(DEFAULT_EVENT_CAP)
    }
}

impl SseParser {
    /// A parser whose events and lines are capped at `cap` bytes each.
    pub fn new(cap: usize) -> SseParser {
        SseParser {
            cap,
            pos: 0,
            line_start: 0,
            bom_checked: false,
            bom_prefix: Vec::new(),
            line: Vec::new(),
            line_overflow: false,
            after_cr: false,
            data: String::new(),
            data_lines: false,
            has_data: false,
            event_type: String::new(),
            block_retry: None,
            block_start: None,
            data_overflow: false,
            last_event_id: None,
            id_cut_reported: false,
            retry: None,
            comments: 0,
            problems: Vec::new(),
            lossy_reported: false,
        }
    }

    /// The cap on one event's data and on one line, in bytes.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The last event id in force (cursor for `Last-Event-ID`), empty when none.
    pub fn last_event_id(&self) -> &str {
        self.last_event_id.as_deref().unwrap_or("")
    }

    /// The reconnection time the stream asked for, in milliseconds.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Comment lines seen (keep-alives).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// Feeds the next bytes; `emit` receives each event completed by them.
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        ts: Option<Timestamp>,
        emit: &mut impl FnMut(SseEvent),
    ) {
        if !self.bom_checked {
            // The stream may begin with U+FEFF (EF BB BF), possibly split across feeds:
            // bytes are held back only while they could still be its start.
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let held = self.bom_prefix.len();
            let take = (BOM.len() - held).min(bytes.len());
            let matches = BOM[held..held + take] == bytes[..take];
            if matches && held + take < BOM.len() {
                self.bom_prefix.extend_from_slice(bytes);
                return;
            }
            self.bom_checked = true;
            if matches {
                self.bom_prefix.clear();
                bytes = &bytes[take..];
            } else if held > 0 {
                let prefix = std::mem::take(&mut self.bom_prefix);
                self.feed_lines(&prefix, ts, emit);
            }
        }
        self.feed_lines(bytes, ts, emit);
    }

    fn feed_lines(&mut self, bytes: &[u8], ts: Option<Timestamp>, emit: &mut impl FnMut(SseEvent)) {
        let mut rest = bytes;
        // An empty feed says nothing about the byte after a CR: keep waiting for it.
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if let Some((&b'\n', tail)) = rest.split_first() {
                self.pos += 1;
                self.line_start = self.pos;
                rest = tail;
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', rest) {
            // A line that arrived whole is read where it lies; only one split
            // between feeds is gathered in `line`.
            let whole = self.line.is_empty() && !self.line_overflow && i <= self.cap;
            if !whole {
                self.push_line_bytes(&rest[..i]);
            }
            let mut consumed = i + 1;
            if rest[i] == b'\r' {
                match rest.get(i + 1) {
                    Some(b'\n') => consumed += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.pos += consumed as u64;
            let start = std::mem::replace(&mut self.line_start, self.pos);
            if whole {
                self.process_line(&rest[..i], false, start, ts, emit);
            } else {
                let line = std::mem::take(&mut self.line);
                let overflow = std::mem::replace(&mut self.line_overflow, false);
                self.process_line(&line, overflow, start, ts, emit);
                self.line = line;
                self.line.clear();
            }
            rest = &rest[consumed..];
        }
        self.push_line_bytes(rest);
        self.pos += rest.len() as u64;
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) {
        let room = self.cap.saturating_sub(self.line.len());
        if bytes.len() > room {
            self.line.extend_from_slice(&bytes[..room]);
            self.line_overflow = true;
        } else {
            self.line.extend_from_slice(bytes);
        }
    }

    fn process_line(
        &mut self,
        line: &[u8],
        overflow: bool,
        start: u64,
        ts: Option<Timestamp>,
        emit: &mut impl FnMut(SseEvent),
    ) {
        if overflow {
            self.problems.push(format!(
                "cap: line at byte {start} is longer than {} bytes; the rest was dropped (raise --max-event-bytes)",
                self.cap
            ));
        }
        if line.is_empty() {
            self.dispatch(ts, emit);
            return;
        }
        if self.block_start.is_none() {
            self.block_start = Some(start);
        }
        if line[0] == b':' {
            self.comments += 1;
            return;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let text = self.lossy(value, start);
                // The separator before this line is counted, as the LF after the last
                // line was: the cap is on the data as WHATWG builds it.
                if self.data.len() + usize::from(self.data_lines) + text.len() + 1 > self.cap {
                    if !self.data_overflow {
                        self.problems.push(format!(
                            "cap: event at byte {} has more than {} bytes of data; the rest was dropped (raise --max-event-bytes)",
                            self.block_start.unwrap_or(start),
                            self.cap
                        ));
                    }
                    self.data_overflow = true;
                } else if self.data_lines {
                    self.data.push('\n');
                    self.data.push_str(&text);
                } else {
                    self.data = text;
                    self.data_lines = true;
                }
                self.has_data = true;
            }
            b"event" => self.event_type = self.lossy(value, start),
            // An id containing NUL is ignored entirely (WHATWG); an empty id resets.
            b"id" if !value.contains(&0) => self.set_id(value, start),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                if let Ok(ms) = std::str::from_utf8(value).unwrap_or("x").parse::<u64>() {
                    self.retry = Some(ms);
                    self.block_retry = Some(ms);
                }
            }
            _ => {} // unknown fields are ignored
        }
    }

    fn set_id(&mut self, value: &[u8], start: u64) {
        let mut value = value;
        if value.len() > MAX_ID_BYTES {
            value = &value[..MAX_ID_BYTES];
            if !self.id_cut_reported {
                self.id_cut_reported = true;
                self.problems.push(format!(
                    "cap: event id at byte {start} is longer than {MAX_ID_BYTES} bytes; only its first {MAX_ID_BYTES} bytes are kept (a fixed limit)"
                ));
            }
        }
        if value.is_empty() {
            self.last_event_id = None;
        } else if self.last_event_id.as_deref().map(str::as_bytes) != Some(value) {
            // A repeated id (the usual case) keeps the one allocation it already has.
            self.last_event_id = Some(Arc::from(self.lossy(value, start)));
        }
    }

    fn lossy(&mut self, bytes: &[u8], start: u64) -> String {
        match std::str::from_utf8(bytes) {
            Ok(s) => s.to_owned(),
            Err(_) => {
                if !self.lossy_reported {
                    self.lossy_reported = true;
                    self.problems.push(format!(
                        "line at byte {start} is not valid UTF-8; decoded lossily"
                    ));
                }
                String::from_utf8_lossy(bytes).into_owned()
            }
        }
    }

    fn dispatch(&mut self, ts: Option<Timestamp>, emit: &mut impl FnMut(SseEvent)) {
        let offset = self.block_start.take();
        let retry = self.block_retry.take();
        self.data_overflow = false;
        if !self.has_data {
            // No data field: nothing is dispatched (an id-only block still moves the cursor).
            self.event_type.clear();
            return;
        }
        self.has_data = false;
        self.data_lines = false;
        let data = std::mem::take(&mut self.data);
        let event = if self.event_type.is_empty() {
            "message".to_owned()
        } else {
            std::mem::take(&mut self.event_type)
        };
        emit(SseEvent {
            event,
            data,
            id: self.last_event_id.clone(),
            retry,
            offset: offset.unwrap_or(0),
            ts,
        });
    }

    /// Ends the stream. Returns the unterminated tail, if any, as evidence text.
    pub fn finish(mut self) -> (Option<String>, Vec<String>) {
        if !self.bom_checked && !self.bom_prefix.is_empty() {
            let prefix = std::mem::take(&mut self.bom_prefix);
            self.bom_checked = true;
            self.feed_lines(&prefix, None, &mut |_| {});
        }
        let mut tail = None;
        let pending_line = !self.line.is_empty();
        if pending_line || self.has_data || !self.event_type.is_empty() {
            let mut text = String::new();
            if !self.event_type.is_empty() {
                text.push_str("event: ");
                text.push_str(&self.event_type);
                text.push('\n');
            }
            // Data lines hold no CR or LF: the lines were cut at them.
            if self.data_lines {
                for l in self.data.split('\n') {
                    text.push_str("data: ");
                    text.push_str(l);
                    text.push('\n');
                }
            }
            text.push_str(&String::from_utf8_lossy(&self.line));
            if text.len() > TAIL_EVIDENCE {
                text.truncate(crate::text::floor_boundary(&text, TAIL_EVIDENCE));
                text.push('…');
            }
            tail = Some(text);
        }
        (tail, self.problems)
    }
}

/// What one stream or body may keep: events and bytes of event data. Past it,
/// events are counted, not kept, and the cut is reported naming the flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Largest event (and line), in bytes.
    pub event_bytes: usize,
    /// Most events kept.
    pub events: usize,
    /// Most bytes of event data kept.
    pub bytes: u64,
}

impl Budget {
    pub fn from_limits(limits: &Limits) -> Budget {
        Budget {
            event_bytes: limits.max_event_bytes,
            events: limits.max_stream_events,
            bytes: limits.max_record_bytes as u64,
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget::from_limits(&Limits::default())
    }
}

/// Could this event's data be a JSON-RPC response (an id, and a result or an
/// error)? A log notification of level "error" names no id, so a flood of them does
/// not fill the reserve.
fn may_be_response(data: &str) -> bool {
    data.contains("\"id\"") && (data.contains("\"result\"") || data.contains("\"error\""))
}

/// The events of one stream, kept within a `Budget`. Past the budget, events that may
/// be a response are still kept, within another budget of as many bytes (each event
/// counted with what holding it costs); everything else is counted. The reserve is
/// bounded in bytes, not events: on the HTTP+SSE transport of 2024-11-05 one GET
/// stream carries every response of a session, and a session of a few thousand calls
/// with log notifications passes any count of events.
#[derive(Debug)]
pub struct Events {
    budget: Budget,
    kept: Vec<SseEvent>,
    kept_bytes: u64,
    /// The budget was passed once: only the reserve keeps events from then on.
    over: bool,
    /// Nothing more is kept (`starve`).
    starved: bool,
    reserve_used: usize,
    reserve_bytes: u64,
    /// Events not kept that may have been responses (the reserve was full).
    responses_dropped: u64,
    dropped: u64,
    dropped_bytes: u64,
}

impl Events {
    pub fn new(budget: Budget) -> Events {
        Events {
            budget,
            kept: Vec::new(),
            kept_bytes: 0,
            over: false,
            starved: false,
            reserve_used: 0,
            reserve_bytes: 0,
            responses_dropped: 0,
            dropped: 0,
            dropped_bytes: 0,
        }
    }

    /// Keeps `ev` if the budget has room for it, or counts it.
    pub fn push(&mut self, ev: SseEvent) {
        let size = ev.data.len() as u64;
        self.over |=
            self.kept.len() >= self.budget.events || self.kept_bytes + size > self.budget.bytes;
        if !self.over {
            self.kept_bytes += size;
            self.kept.push(ev);
            return;
        }
        let cost = size + EVENT_COST + ev.event.len() as u64;
        let response = may_be_response(&ev.data);
        if response && !self.starved && self.reserve_bytes + cost <= self.budget.bytes {
            self.reserve_used += 1;
            self.reserve_bytes += cost;
            self.kept.push(ev);
        } else {
            self.responses_dropped += u64::from(response);
            self.dropped += 1;
            self.dropped_bytes += size;
        }
    }

    /// What the kept events hold: their data, and what holding each costs (a
    /// stream of tiny events holds several times its bytes).
    pub fn held_bytes(&self) -> u64 {
        let in_budget = (self.kept.len() - self.reserve_used) as u64;
        self.kept_bytes + in_budget * EVENT_COST + self.reserve_bytes
    }

    /// Keeps no more events: a reader out of room for the bodies it holds. Later
    /// events are counted, as past the budget and its reserve.
    pub fn starve(&mut self) {
        self.over = true;
        self.starved = true;
    }

    pub fn starved(&self) -> bool {
        self.starved
    }

    /// Events not kept that may have been responses: a verdict may be missing one.
    pub fn responses_dropped(&self) -> u64 {
        self.responses_dropped
    }

    /// Events kept so far.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Events counted but not kept.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The kept events, and the cap problem when some were not kept.
    pub fn finish(self) -> (Vec<SseEvent>, Option<String>) {
        let note = (self.dropped > 0).then(|| {
            format!(
                "cap: {} events ({} bytes of data) past this stream's budget of {} events or {} bytes were counted, not kept; {} later events that may be responses were kept (raise --max-stream-events or --max-record-bytes)",
                self.dropped, self.dropped_bytes, self.budget.events, self.budget.bytes, self.reserve_used
            )
        });
        (self.kept, note)
    }
}

/// Parses a whole body at once (JSONL and HAR bodies), within `budget`.
pub fn parse_body(bytes: &[u8], budget: Budget) -> SseBody {
    let mut parser = SseParser::new(budget.event_bytes);
    let mut events = Events::new(budget);
    parser.feed(bytes, None, &mut |e| events.push(e));
    let (incomplete_tail, mut problems) = parser.finish();
    let (events, cap) = events.finish();
    problems.extend(cap);
    SseBody {
        events,
        incomplete_tail,
        problems,
        bytes: bytes.len() as u64,
    }
}

/// True when a body without a Content-Type looks like an event stream.
pub fn looks_like_event_stream(bytes: &[u8]) -> bool {
    let b = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let b = match b.iter().position(|c| !c.is_ascii_whitespace()) {
        Some(i) => &b[i..],
        None => return false,
    };
    [&b"data:"[..], b"event:", b"id:", b"retry:", b":"]
        .iter()
        .any(|p| b.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(input: &[u8]) -> (Vec<SseEvent>, Option<String>) {
        let body = parse_body(input, Budget::default());
        (body.events, body.incomplete_tail)
    }

    #[test]
    fn multi_line_data_and_default_type() {
        let (ev, tail) = events(b"data: a\ndata: b\n\nevent: x\ndata:c\n\n");
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].data, "a\nb");
        assert_eq!(ev[0].event, "message");
        assert_eq!(ev[1].event, "x");
        assert_eq!(ev[1].data, "c");
        assert_eq!(ev[1].offset, 17);
        assert!(tail.is_none());
    }

    #[test]
    fn line_endings_cr_lf_crlf_and_bom() {
        let (a, _) = events(b"\xEF\xBB\xBFdata: 1\r\rdata: 2\r\n\r\ndata: 3\n\n");
        let data: Vec<_> = a.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["1", "2", "3"]);
        assert_eq!(a[0].offset, 0, "offsets count after the BOM");
        assert_eq!(a[1].offset, 9);
    }

    #[test]
    fn ids_empty_nul_and_persistence() {
        let (ev, _) = events(b"id: 7\ndata: a\n\ndata: b\n\nid: x\0y\ndata: c\n\nid\ndata: d\n\n");
        let ids: Vec<_> = ev.iter().map(|e| e.id.clone()).collect();
        assert_eq!(
            ids,
            [Some("7".into()), Some("7".into()), Some("7".into()), None]
        );
    }

    #[test]
    fn retry_comments_and_priming() {
        let mut p = SseParser::default();
        let mut ev = Vec::new();
        p.feed(
            b": keep-alive\nid: p1\nretry: 3000\ndata: \n\nretry: 1x\ndata: {}\n\n",
            None,
            &mut |e| ev.push(e),
        );
        assert_eq!(p.comments(), 1);
        assert_eq!(p.retry(), Some(3000));
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].data, "", "priming event: id and empty data");
        assert_eq!(ev[0].retry, Some(3000));
        assert_eq!(ev[1].retry, None, "non-digit retry ignored");
    }

    #[test]
    fn id_only_block_moves_cursor_without_dispatch() {
        let mut p = SseParser::default();
        let mut n = 0;
        p.feed(b"id: 42\n\n", None, &mut |_| n += 1);
        assert_eq!(n, 0);
        assert_eq!(p.last_event_id(), "42");
    }

    #[test]
    fn unterminated_last_event_is_not_dispatched() {
        let (ev, tail) = events(b"data: {\"a\":1}\n\ndata: {\"jsonrpc\":\"2.0\"");
        assert_eq!(ev.len(), 1);
        assert_eq!(tail.as_deref(), Some("data: {\"jsonrpc\":\"2.0\""));
        let (ev, tail) = events(b"data: x\n");
        assert!(ev.is_empty());
        assert_eq!(tail.as_deref(), Some("data: x\n"));
    }

    #[test]
    fn empty_data_lines_count_as_lines() {
        // Empty lines are lines: WHATWG appends an LF after each and drops the last.
        let (ev, _) = events(b"data\ndata\n\ndata: \ndata: a\ndata:\n\n");
        let data: Vec<_> = ev.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["\n", "\na\n"]);
        // An unterminated event of one empty data line is still told in the tail.
        let (ev, tail) = events(b"data:\n");
        assert!(ev.is_empty());
        assert_eq!(tail.as_deref(), Some("data: \n"));
        let (_, tail) = events(b"data: a\ndata:\ndata: b\n");
        assert_eq!(tail.as_deref(), Some("data: a\ndata: \ndata: b\n"));
    }

    #[test]
    fn the_data_cap_counts_each_line_break() {
        // Cap 9 (on lines too, so no space after the colons): "abc\nde" is 6 bytes
        // plus the last LF, 7; "fg" would make it 10, "h" makes it 9.
        let mut p = SseParser::new(9);
        let mut ev = Vec::new();
        p.feed(b"data:abc\ndata:de\ndata:fg\ndata:h\n\n", None, &mut |e| {
            ev.push(e)
        });
        assert_eq!(ev[0].data, "abc\nde\nh", "a later line that fits is kept");
        let (_, problems) = p.finish();
        assert_eq!(
            problems,
            ["cap: event at byte 0 has more than 9 bytes of data; the rest was dropped (raise --max-event-bytes)"]
        );
    }

    #[test]
    fn field_without_colon_and_unknown_fields() {
        let (ev, _) = events(b"data\nfoo: bar\n\n");
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "");
    }

    #[test]
    fn caps_and_lossy_utf8() {
        let mut p = SseParser::new(8);
        let mut ev = Vec::new();
        p.feed(
            b"data: 0123456789abcdef\n\ndata: \xff\n\n",
            None,
            &mut |e| ev.push(e),
        );
        let (_, problems) = p.finish();
        assert_eq!(ev.len(), 2);
        assert!(ev[0].data.len() <= 8);
        assert_eq!(ev[1].data, "\u{FFFD}");
        assert!(problems.iter().any(|p| p.contains("longer than 8")));
        assert!(problems.iter().any(|p| p.contains("UTF-8")));
    }

    #[test]
    fn timestamps_come_from_the_feed_that_completed_the_event() {
        let mut p = SseParser::default();
        let mut ev = Vec::new();
        p.feed(b"data: a", Some(Timestamp(1)), &mut |e| ev.push(e));
        p.feed(b"\n\n", Some(Timestamp(2)), &mut |e| ev.push(e));
        assert_eq!(ev[0].ts, Some(Timestamp(2)));
    }

    #[test]
    fn a_crlf_split_by_an_empty_feed_is_one_line_break() {
        let mut p = SseParser::default();
        let mut ev = Vec::new();
        p.feed(b"data: a\r", None, &mut |e| ev.push(e));
        p.feed(b"", None, &mut |e| ev.push(e));
        p.feed(b"\ndata: b\r\n\r\n", None, &mut |e| ev.push(e));
        assert_eq!(ev.len(), 1, "{ev:?}");
        assert_eq!(ev[0].data, "a\nb");
    }

    #[test]
    fn an_id_is_shared_by_its_events_and_capped() {
        let (ev, _) = events(b"id: 7\ndata: a\n\ndata: b\n\n");
        let (a, b) = (ev[0].id.as_ref().unwrap(), ev[1].id.as_ref().unwrap());
        assert!(Arc::ptr_eq(a, b), "one allocation for both events");
        let long = format!("id: {}\ndata: x\n\n", "i".repeat(MAX_ID_BYTES * 4));
        let body = parse_body(long.as_bytes(), Budget::default());
        assert_eq!(
            body.events[0].id.as_deref().map(str::len),
            Some(MAX_ID_BYTES)
        );
        assert!(body.problems.iter().any(|p| p.starts_with("cap: event id")));
    }

    /// The cap problem a body reports.
    fn cap_note(body: &SseBody) -> &str {
        let cap = body.problems.iter().find(|p| p.starts_with("cap:"));
        cap.expect("a cap problem")
    }

    #[test]
    fn a_body_keeps_its_budget_and_a_reserve_of_responses_bounded_in_bytes() {
        let budget = Budget {
            event_bytes: 1 << 10,
            events: 5,
            bytes: 1 << 20,
        };
        let mut wire = String::new();
        for i in 0..20 {
            wire.push_str(&format!("data: {{\"method\":\"n\",\"i\":{i}}}\n\n"));
        }
        // A log notification of level "error" is no response: it names no id.
        for i in 0..10 {
            let n = format!("{{\"method\":\"notifications/message\",\"params\":{{\"level\":\"error\",\"data\":{i}}}}}");
            wire.push_str(&format!("data: {n}\n\n"));
        }
        for i in 0..1000 {
            wire.push_str(&format!("data: {{\"id\":{i},\"result\":{{}}}}\n\n"));
        }
        let body = parse_body(wire.as_bytes(), budget);
        // Five within the budget, then every response: a count of events does not
        // stop them (one GET stream carries a whole legacy session's responses).
        assert_eq!(body.events.len(), 5 + 1000);
        assert!(body.events[5..].iter().all(|e| e.data.contains("result")));
        let cap = cap_note(&body);
        assert!(cap.contains("25 events"), "{cap}");
        assert!(
            cap.contains("1000 later events that may be responses"),
            "{cap}"
        );
        assert!(cap.contains("--max-stream-events"), "{cap}");

        // The reserve is bounded by the byte budget, each event counted with what
        // holding it costs, so that many tiny events cannot outgrow it.
        let budget = Budget {
            event_bytes: 1 << 10,
            events: 0,
            bytes: 10 * (EVENT_COST + "message".len() as u64 + 20),
        };
        let wire = "data: {\"id\":1,\"result\":7}\n\n".repeat(50);
        let body = parse_body(wire.as_bytes(), budget);
        assert_eq!(body.events.len(), 10);
        let cap = cap_note(&body);
        assert!(cap.contains("40 events"), "{cap}");
        // What was not kept is counted apart when it may have been a response.
        let mut events = Events::new(budget);
        for data in ["{\"method\":\"n\"}", "{\"id\":1,\"result\":7}"].repeat(50) {
            events.push(SseEvent {
                event: "message".to_owned(),
                data: data.to_owned(),
                id: None,
                retry: None,
                offset: 0,
                ts: None,
            });
        }
        assert_eq!((events.len(), events.responses_dropped()), (10, 40));

        // The byte budget holds too: one large event fills it.
        let budget = Budget {
            event_bytes: 1 << 10,
            events: 1000,
            bytes: 100,
        };
        let wire = "data: 0123456789\n\n".repeat(50);
        let body = parse_body(wire.as_bytes(), budget);
        assert_eq!(body.events.len(), 10);
    }

    #[test]
    fn sniffing() {
        assert!(looks_like_event_stream(b"\nevent: message\ndata: {}\n\n"));
        assert!(looks_like_event_stream(b": ping\n\n"));
        assert!(!looks_like_event_stream(b"{\"jsonrpc\":\"2.0\"}"));
    }

    /// What a parser made of `stream` fed in the pieces `cuts` makes: its events,
    /// its unfinished tail and problems, and the state it reports.
    type Reading = (
        Vec<SseEvent>,
        Option<String>,
        Vec<String>,
        u64,
        Option<u64>,
        String,
    );

    fn read_in_pieces(stream: &[u8], cuts: &[usize], cap: usize) -> Reading {
        let mut p = SseParser::new(cap);
        let mut ev = Vec::new();
        let mut at = 0;
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        points.sort_unstable();
        for &cut in points.iter().chain([&stream.len()]) {
            p.feed(&stream[at..cut], None, &mut |e| ev.push(e));
            at = cut;
        }
        let (comments, retry, last) = (p.comments(), p.retry(), p.last_event_id().to_owned());
        let (tail, problems) = p.finish();
        (ev, tail, problems, comments, retry, last)
    }

    proptest::proptest! {
        /// Any split of a stream gives what the whole stream gives: lines read where
        /// they lie and lines gathered across feeds, cut at the cap or not, after a
        /// byte order mark or not, with every line ending.
        #[test]
        fn any_split_reads_as_the_whole_stream(
            lines in proptest::collection::vec(proptest::sample::select(vec![
                "data: {\"id\":1}", "data:x", "data", "event: e", "id: 7", "id", "retry: 30",
                ": ping", "", "data: a much longer line than the cap allows", "\u{e9}t\u{e9}", "\u{fffd}",
            ]), 0..12),
            ends in proptest::collection::vec(proptest::sample::select(vec!["\n", "\r", "\r\n"]), 12),
            bom in proptest::bool::ANY,
            cuts in proptest::collection::vec(0usize..400, 0..6),
            cap in proptest::sample::select(vec![8usize, 24, 1 << 20]),
        ) {
            let mut stream = if bom { b"\xEF\xBB\xBF".to_vec() } else { Vec::new() };
            for (line, end) in lines.iter().zip(ends.iter().cycle()) {
                stream.extend_from_slice(line.as_bytes());
                stream.extend_from_slice(end.as_bytes());
            }
            let whole = read_in_pieces(&stream, &[], cap);
            proptest::prop_assert_eq!(read_in_pieces(&stream, &cuts, cap), whole);
        }
    }
}
