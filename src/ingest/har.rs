//! HAR 1.2 inputs (browser DevTools, Playwright, Firefox, mitmproxy `hardump`, Charles,
//! Proxyman, and MCP proxies that synthesize HAR): owns reading `log.entries` one entry
//! at a time and turning each entry into an `Exchange` in `startedDateTime` order.
//! Producer quirks are listed in `docs/har.md`.
//!
//! Memory: the document is never held whole. It is read in 1 MiB slices into one
//! buffer (`harscan.rs`); the top level is walked with a `DeserializeSeed` over
//! `serde_json::Deserializer::from_reader` reading from that buffer, and the entries
//! list is split by `harscan`'s scanner, each entry parsed from its bytes on its own, so
//! a type error in one entry is a `Problem` for that entry and the next entry is still
//! read; an entry over the record cap is skipped. Entries are re-ordered through a
//! bounded window (`REORDER_WINDOW` exchanges, 64 MiB of bodies): HAR writers append entries when a
//! request finishes, so concurrent requests come out slightly out of start order, but
//! never by much. An entry that starts before one already handed on is handed on
//! anyway and reported once, rather than buffering a whole file to be sure.

use super::harscan::{read_entries, Entries, Failure, Pos, Shared, Source};
use super::inflate::{inflate_all, Coding, Stop};
use super::{IngestError, Kind, Level, Problem, Sink};
use crate::config::Limits;
use crate::model::{
    Body, Direction, End, Exchange, Headers, HttpExchange, HttpRequest, HttpResponse, Locator,
    Payload, StdioMessage, Timestamp,
};
use compact_str::CompactString;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::io::{self, Read};

/// How many exchanges may wait to be put in start order before the earliest is handed on.
pub const REORDER_WINDOW: usize = 1024;

/// How many body bytes may wait in the window: a window of large SSE bodies is emptied
/// earlier, so that memory stays bounded by bytes as well as by count.
const REORDER_WINDOW_BYTES: u64 = 64 << 20;

/// Reads a whole HAR document from `reader`.
pub fn read(reader: impl Read, limits: &Limits, sink: &mut dyn Sink) -> Result<(), IngestError> {
    read_with_window(reader, limits, sink, REORDER_WINDOW)
}

/// `read` with an explicit re-order window (tests use a small one).
pub(crate) fn read_with_window(
    mut reader: impl Read,
    limits: &Limits,
    sink: &mut dyn Sink,
    window: usize,
) -> Result<(), IngestError> {
    let mut state = State {
        limits,
        sink,
        window: window.max(1),
        // 1-based, as lines and Wireshark frames are: one numbering in every report.
        next_index: 1,
        seq: 0,
        heap: BinaryHeap::new(),
        heap_bytes: 0,
        last_emitted: None,
        last_key: i64::MIN,
        late: None,
        synthesized: None,
        saw_log: false,
        saw_entries: false,
        entries_open: false,
        failure: None,
        gap: None,
        text_window: MIN_TEXT_WINDOW,
    };
    let src = RefCell::new(Source::new(&mut reader));
    let mut de = serde_json::Deserializer::from_reader(Shared(&src));
    let outcome = RootSeed {
        state: &mut state,
        src: &src,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    let failure = match outcome {
        Ok(()) => None,
        Err(e) => Some(
            state
                .failure
                .take()
                .unwrap_or_else(|| from_walk(&e, state.gap)),
        ),
    };
    let result = match failure {
        None if !state.saw_log => Err(IngestError::Har(
            "a JSON object without a \"log\" member: not a HAR".to_owned(),
        )),
        None => {
            if !state.saw_entries {
                state.sink.problem(Problem::new(
                    Locator::Input,
                    "the HAR \"log\" has no \"entries\" list: nothing to analyse".to_owned(),
                ));
            }
            Ok(())
        }
        Some(Failure::Io(e)) => Err(IngestError::Io(io::Error::other(e))),
        // Broken after some entries: keep what was read, name where it broke.
        Some(f) if state.entries_open => {
            let what = match f {
                Failure::Syntax(e) => format!(
                    "the HAR stops being valid JSON here ({e}); the entries before it were analysed"
                ),
                _ => "the file ends in the middle of this entry (truncated HAR?); the entries before it were analysed".to_owned(),
            };
            state.sink.problem(Problem::new(
                Locator::Entry {
                    entry: state.next_index,
                },
                what,
            ));
            Ok(())
        }
        Some(Failure::Syntax(e)) => Err(IngestError::Har(e)),
        Some(_) => Err(IngestError::Har(
            "the file ends before the HAR \"log\" is complete".to_owned(),
        )),
    };
    state.flush();
    result
}

/// An error of serde_json's walk over the top level. Past the entries, which it did
/// not see, its positions are moved by what they held (`gap`: where the entries began
/// as serde_json counted, and where they ended).
fn from_walk(e: &serde_json::Error, gap: Option<(Pos, Pos)>) -> Failure {
    if e.is_io() {
        return Failure::Io(e.to_string());
    }
    if e.is_eof() {
        return Failure::Eof;
    }
    let (line, column) = match gap {
        Some((seen, real)) if e.line() == seen.line => {
            (real.line, e.column() - seen.column + real.column)
        }
        Some((seen, real)) if e.line() > seen.line => {
            (e.line() + real.line - seen.line, e.column())
        }
        _ => (e.line(), e.column()),
    };
    Failure::Syntax(crate::text::describe_json_error_at(e, line, column))
}

/// The least `State::text_window`: small, so that a HAR of small entries (a
/// recorder's synthesized one) does not check many more bytes than it parses.
const MIN_TEXT_WINDOW: usize = 1024;

/// Reading state shared by the seeds.
struct State<'a> {
    limits: &'a Limits,
    sink: &'a mut dyn Sink,
    window: usize,
    /// Index of the next entry in `log.entries`.
    next_index: u64,
    /// File order, the tie-breaker among equal start times.
    seq: u64,
    heap: BinaryHeap<Reverse<Pending>>,
    /// Body bytes of the exchanges in `heap`.
    heap_bytes: u64,
    last_emitted: Option<(i64, u64)>,
    /// Start time of the last entry that had one (entries without take it).
    last_key: i64,
    /// First entry that came later than the window could fix, and how many did.
    late: Option<(u64, u64)>,
    /// First entry that is not real HTTP, and what gave it away.
    synthesized: Option<(u64, String)>,
    saw_log: bool,
    saw_entries: bool,
    /// `log.entries` turned out to be a list and its reading began.
    entries_open: bool,
    /// Why the entries stopped, when they did not end with their `]`.
    failure: Option<Failure>,
    /// Where the entries began and ended (see `from_walk`).
    gap: Option<(Pos, Pos)>,
    /// How many bytes `entry_at_start` checks as UTF-8 first (`grow_window`).
    text_window: usize,
}

/// An exchange waiting in the re-order window.
struct Pending {
    key: (i64, u64),
    bytes: u64,
    /// Boxed: the heap moves its elements on every push and pop, and an exchange is
    /// hundreds of bytes (a tenth of the HAR read time went to those moves).
    x: Box<Exchange>,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

impl State<'_> {
    /// Twice the entry just read, or a little less than before: entries of mixed
    /// sizes (an `initialize`, then tool results) keep fitting, and a file of small
    /// entries soon checks little more than it parses.
    fn grow_window(&mut self, len: usize) {
        let decayed = self.text_window - self.text_window / 8;
        self.text_window = len.saturating_mul(2).max(decayed).max(MIN_TEXT_WINDOW);
    }

    fn queue(&mut self, start: Option<Timestamp>, entry: u64, x: Exchange) {
        let t = match start {
            Some(t) => {
                self.last_key = t.0;
                t.0
            }
            None => self.last_key,
        };
        let key = (t, self.seq);
        self.seq += 1;
        if self.last_emitted.is_some_and(|last| key < last) {
            // Too late for the window: hand it on now and say so once.
            self.late = Some(match self.late {
                None => (entry, 1),
                Some((first, n)) => (first, n + 1),
            });
            self.sink.exchange(x);
            return;
        }
        let bytes = x.body_bytes();
        self.heap_bytes += bytes;
        self.heap.push(Reverse(Pending {
            key,
            bytes,
            x: Box::new(x),
        }));
        while self.heap.len() > self.window
            || (self.heap_bytes > REORDER_WINDOW_BYTES && self.heap.len() > 1)
        {
            self.emit_one();
        }
    }

    fn emit_one(&mut self) {
        if let Some(Reverse(p)) = self.heap.pop() {
            self.heap_bytes = self.heap_bytes.saturating_sub(p.bytes);
            self.last_emitted = Some(p.key);
            self.sink.exchange(*p.x);
        }
    }

    fn flush(&mut self) {
        while !self.heap.is_empty() {
            self.emit_one();
        }
        if let Some((entry, n)) = self.late.take() {
            self.sink.notice(Problem::notice(Kind::Order, Locator::Entry { entry }, format!(
                    "{n} entr{} started before entries already analysed (more than {} entries out of startedDateTime order); they were analysed out of time order, which can mislabel repeats",
                    if n == 1 { "y" } else { "ies" },
                    self.window
                )));
        }
        if let Some((entry, why)) = self.synthesized.take() {
            self.sink.notice(Problem::notice(Kind::Other, Locator::Entry { entry }, format!(
                    "this HAR is not a recording of real HTTP ({why}); it was written by a tool that synthesizes HAR from MCP messages, so its entries were read as messages without HTTP (no status, headers or timing verdicts)"
                )));
        }
    }

    fn take(&mut self, entry: RawEntry) {
        let index = self.next_index;
        self.next_index += 1;
        let locator = Locator::Entry { entry: index };
        let mut problems = Notes::default();
        let start = entry
            .started_date_time
            .as_deref()
            .and_then(Timestamp::parse);
        if entry.started_date_time.is_some() && start.is_none() {
            problems.push(format!(
                "\"startedDateTime\" {:?} is not an ISO 8601 date-time; the entry is kept in file order",
                entry.started_date_time.as_deref().unwrap_or("")
            ));
        }
        if let Some(why) = synthesized(&entry) {
            if self.synthesized.is_none() {
                self.synthesized = Some((index, why));
            }
            for payload in messages(entry, start, self.limits, &mut problems) {
                self.queue(
                    start,
                    index,
                    Exchange {
                        locator: locator.clone(),
                        payload,
                    },
                );
            }
        } else {
            let x = exchange(entry, start, self.limits, &mut problems);
            self.queue(
                start,
                index,
                Exchange {
                    locator: locator.clone(),
                    payload: Payload::Http(x),
                },
            );
        }
        for (kind, message) in problems.0 {
            self.sink
                .problem(Problem::of(Level::Problem, kind, locator.clone(), message));
        }
    }
}

impl Entries for State<'_> {
    fn entry(&mut self, text: &str) -> Result<(), serde_json::Error> {
        self.take(serde_json::from_str::<RawEntry>(text)?);
        Ok(())
    }

    fn entry_at_start(&mut self, bytes: &[u8], cap: usize) -> Option<usize> {
        // The same parse as `entry` gives on the entry's own text: serde_json reads a
        // value the same from text that goes on past it. First from a window about
        // twice the last entry's size, checked as UTF-8 once, so that no string in
        // it is checked again on its own.
        let window = bytes.len().min(self.text_window).min(cap.saturating_add(1));
        let head = bytes.get(..window)?;
        let text = match std::str::from_utf8(head) {
            Ok(t) => Some(t),
            // Cut inside a character, or not UTF-8 further on: the valid part.
            Err(e) => std::str::from_utf8(head.get(..e.valid_up_to())?).ok(),
        };
        if let Some(text) = text {
            let mut values = serde_json::Deserializer::from_str(text).into_iter::<RawEntry>();
            match values.next()? {
                Ok(raw) => {
                    let len = values.byte_offset();
                    if len > cap {
                        return None;
                    }
                    self.grow_window(len);
                    self.take(raw);
                    return Some(len);
                }
                // Longer than the window (or cut by bad UTF-8): read from the bytes.
                Err(e) if e.is_eof() && text.len() < bytes.len() => {}
                Err(_) => return None,
            }
        }
        // From the bytes, with the UTF-8 check of the whole entry (ignored members
        // included) that `entry`'s caller makes.
        let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<RawEntry>();
        let raw = values.next()?.ok()?;
        let len = values.byte_offset();
        if len > cap || std::str::from_utf8(bytes.get(..len)?).is_err() {
            return None;
        }
        self.grow_window(len);
        self.take(raw);
        Some(len)
    }

    fn bad(&mut self, e: serde_json::Error) {
        let entry = self.next_index;
        self.next_index += 1;
        self.sink.problem(Problem::new(
            Locator::Entry { entry },
            format!(
                "not a valid HAR entry: {} (counted within this entry)",
                crate::text::describe_json_error(&e)
            ),
        ));
    }

    fn oversize(&mut self, cap: usize) {
        let entry = self.next_index;
        self.next_index += 1;
        self.sink.problem(Problem::cap(
            Locator::Entry { entry },
            format!(
                "cap: entry {entry} is larger than the {cap}-byte record cap; it was skipped without being read, and the entries after it were read (raise --max-record-bytes)"
            ),
        ));
    }
}

/// What went wrong inside one entry, typed, before it is handed to the sink.
#[derive(Default)]
struct Notes(Vec<(Kind, String)>);

impl Notes {
    /// A field that could not be read as HAR says.
    fn push(&mut self, message: String) {
        self.0.push((Kind::Malformed, message));
    }
    /// Something cut by a limit.
    fn cap(&mut self, message: String) {
        self.0.push((Kind::Cap, message));
    }
}

// ---- The streaming walk over the top level ----

struct RootSeed<'s, 'a, 'r> {
    state: &'s mut State<'a>,
    src: &'s RefCell<Source<'r>>,
}

impl<'de> DeserializeSeed<'de> for RootSeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RootSeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a HAR document (a JSON object with a \"log\" member)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "log" && !self.state.saw_log {
                self.state.saw_log = true;
                map.next_value_seed(LogSeed {
                    state: &mut *self.state,
                    src: self.src,
                })?;
            } else if key == "log" {
                // JSON leaves duplicate members undefined; the first is read, and the
                // entries of the second would be lost without a word.
                self.state.sink.problem(Problem::new(
                    Locator::Input,
                    "a second \"log\" member: only the first is read (a HAR has one); the entries of this one are not analysed",
                ));
                map.next_value::<IgnoredAny>()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct LogSeed<'s, 'a, 'r> {
    state: &'s mut State<'a>,
    src: &'s RefCell<Source<'r>>,
}

impl<'de> DeserializeSeed<'de> for LogSeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LogSeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the HAR \"log\" object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "entries" && !self.state.saw_entries {
                self.state.saw_entries = true;
                map.next_value_seed(EntriesSeed {
                    state: &mut *self.state,
                    src: self.src,
                })?;
            } else if key == "entries" {
                self.state.sink.problem(Problem::new(
                    Locator::Entry {
                        entry: self.state.next_index,
                    },
                    format!(
                        "a second \"entries\" list in \"log\": only the first ({} entries) is read; the entries of this one are not analysed",
                        self.state.next_index
                    ),
                ));
                map.next_value::<IgnoredAny>()?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct EntriesSeed<'s, 'a, 'r> {
    state: &'s mut State<'a>,
    src: &'s RefCell<Source<'r>>,
}

impl<'de> DeserializeSeed<'de> for EntriesSeed<'_, '_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EntriesSeed<'_, '_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the list of HAR entries in \"log.entries\"")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        // serde_json has just taken the `[`; the scanner reads the entries from the
        // same buffer, up to the `]`, which serde_json then takes.
        self.state.entries_open = true;
        let mut src = self.src.borrow_mut();
        let seen = src.pos();
        let outcome = read_entries(&mut src, self.state.limits.max_record_bytes, self.state);
        self.state.gap = Some((seen, src.pos()));
        outcome.map_err(|f| {
            self.state.failure = Some(f);
            de::Error::custom("the HAR entries stopped")
        })
    }
}

// ---- Lenient entry structs: every field optional, unknown fields ignored ----

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawEntry {
    started_date_time: Option<String>,
    time: Option<Value>,
    request: Option<RawRequest>,
    response: Option<RawResponse>,
    timings: Option<RawTimings>,
    // The recorder's failure fields are named one by one: a catch-all
    // (`#[serde(flatten)]`) would make serde buffer the whole entry, body included,
    // once more.
    /// Chromium DevTools (and HAR exporters built on it).
    #[serde(rename = "_error")]
    error: Option<Value>,
    /// Playwright `recordHar`.
    #[serde(rename = "_failureText")]
    failure_text: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawRequest {
    method: Option<String>,
    url: Option<String>,
    http_version: Option<String>,
    headers: Option<Vec<RawHeader>>,
    post_data: Option<RawPostData>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawResponse {
    status: Option<Value>,
    status_text: Option<String>,
    headers: Option<Vec<RawHeader>>,
    content: Option<RawContent>,
    #[serde(rename = "_error")]
    error: Option<Value>,
    #[serde(rename = "_failureText")]
    failure_text: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawHeader {
    name: Option<CompactString>,
    value: Option<HeaderValue>,
}

/// A header's value as a HAR writer gave it: a string read straight into the
/// header's own text (no `String` made and copied), anything else written as JSON.
struct HeaderValue(CompactString);

impl HeaderValue {
    /// A value that is no string: its JSON text, as a `Value` prints it.
    fn json(v: Value) -> HeaderValue {
        HeaderValue(v.to_string().into())
    }
}

impl<'de> Deserialize<'de> for HeaderValue {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<HeaderValue, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HeaderValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a header value")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<HeaderValue, E> {
                Ok(HeaderValue(v.into()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<HeaderValue, E> {
                Ok(HeaderValue(v.into()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<HeaderValue, E> {
                Ok(HeaderValue(CompactString::default()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<HeaderValue, E> {
                Ok(HeaderValue::json(v.into()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<HeaderValue, E> {
                Ok(HeaderValue::json(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<HeaderValue, E> {
                Ok(HeaderValue::json(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<HeaderValue, E> {
                Ok(HeaderValue::json(v.into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<HeaderValue, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(a)).map(HeaderValue::json)
            }
            fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<HeaderValue, A::Error> {
                Value::deserialize(de::value::MapAccessDeserializer::new(a)).map(HeaderValue::json)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawPostData {
    text: Option<String>,
    /// Not in HAR 1.2, but some writers base64 binary request bodies and say so.
    encoding: Option<String>,
    #[serde(rename = "_encoding")]
    vendor_encoding: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawContent {
    size: Option<Value>,
    mime_type: Option<String>,
    text: Option<String>,
    encoding: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawTimings {
    blocked: Option<Value>,
    dns: Option<Value>,
    connect: Option<Value>,
    send: Option<Value>,
    wait: Option<Value>,
    receive: Option<Value>,
}

/// A number written as a number or as a numeric string; `-1` and junk are "unknown".
fn num(v: Option<&Value>) -> Option<f64> {
    let n = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    n.is_finite().then_some(n)
}

fn non_negative(v: &Option<Value>) -> Option<f64> {
    num(v.as_ref()).filter(|n| *n >= 0.0)
}

/// Takes the list by value: names and values move into the exchange uncopied.
fn headers(list: Option<Vec<RawHeader>>) -> Headers {
    let mut h = Headers::default();
    for header in list.into_iter().flatten() {
        if let Some(name) = header.name {
            h.push(name, header.value.map(|v| v.0).unwrap_or_default());
        }
    }
    h
}

/// Why an entry is not real HTTP, if it is not.
fn synthesized(e: &RawEntry) -> Option<String> {
    let req = e.request.as_ref()?;
    if let Some(v) = &req.http_version {
        if v.trim().to_ascii_uppercase().starts_with("MCP") {
            return Some(format!("httpVersion {v:?}"));
        }
    }
    let url = req.url.as_deref()?.trim();
    let scheme = crate::text::split_scheme(url).map(|(s, _)| s.to_ascii_lowercase())?;
    (!matches!(scheme.as_str(), "http" | "https")).then(|| format!("{scheme}:// URLs"))
}

/// The recorder's own reason for a failure: `_error` (Chromium) or `_failureText`
/// (Playwright), on the response or on the entry.
fn recorder_reason(entry: &RawEntry, resp: Option<&RawResponse>) -> Option<String> {
    let from_resp = resp.map(|r| [&r.error, &r.failure_text]);
    from_resp
        .into_iter()
        .flatten()
        .chain([&entry.error, &entry.failure_text])
        .find_map(|v| match v.as_ref()? {
            Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            Value::Object(o) if !o.is_empty() => Some(Value::Object(o.clone()).to_string()),
            _ => None,
        })
}

/// Whether a recorder's failure text says the client gave up.
fn client_gave_up(note: &str) -> bool {
    let n = note.to_ascii_lowercase();
    // mitmproxy writes "Client disconnected." when the client closed first.
    [
        "abort",
        "cancel",
        "ns_binding_aborted",
        "user",
        "client disconnected",
    ]
    .iter()
    .any(|w| n.contains(w))
}

struct Timing {
    response: Option<Timestamp>,
    end: Option<Timestamp>,
}

/// `startedDateTime + blocked + dns + connect + send + wait` is when the response head
/// arrived; `+ time` (or `+ receive`) is when the exchange was over. `ssl` is part of
/// `connect` in HAR 1.2, so it is not added again.
fn timing(e: &RawEntry, start: Option<Timestamp>) -> Timing {
    let Some(start) = start else {
        return Timing {
            response: None,
            end: None,
        };
    };
    let t = e.timings.as_ref();
    let head = t.map(|t| {
        [&t.blocked, &t.dns, &t.connect, &t.send, &t.wait]
            .iter()
            .filter_map(|v| non_negative(v))
            .sum::<f64>()
    });
    let receive = t.and_then(|t| non_negative(&t.receive));
    let total = non_negative(&e.time);
    let response = head.map(|ms| start.plus_millis(ms));
    let end = match (total, head, receive) {
        (Some(ms), _, _) => Some(start.plus_millis(ms)),
        (None, Some(h), Some(r)) => Some(start.plus_millis(h + r)),
        _ => response,
    };
    Timing { response, end }
}

/// Takes the request by value: its body moves into the exchange without a copy.
fn request(req: Option<RawRequest>, start: Option<Timestamp>, problems: &mut Notes) -> HttpRequest {
    let Some(req) = req else {
        problems.push("the entry has no \"request\"".to_owned());
        return HttpRequest {
            ts: start,
            ..HttpRequest::default()
        };
    };
    let body = match req.post_data {
        None => Vec::new(),
        Some(p) => {
            let text = p.text.unwrap_or_default();
            let b64 = p
                .encoding
                .as_deref()
                .or(p.vendor_encoding.as_deref())
                .is_some_and(|e| e.eq_ignore_ascii_case("base64"));
            if b64 {
                base64_decode(text.into_bytes()).unwrap_or_else(|text| {
                    problems.push(
                        "request postData.text says base64 but is not valid base64; kept as text"
                            .to_owned(),
                    );
                    text
                })
            } else {
                text.into_bytes()
            }
        }
    };
    HttpRequest {
        method: req.method.unwrap_or_else(|| "POST".to_owned()),
        url: req.url.unwrap_or_default(),
        headers: headers(req.headers),
        body,
        ts: start,
    }
}

fn exchange(
    mut e: RawEntry,
    start: Option<Timestamp>,
    limits: &Limits,
    problems: &mut Notes,
) -> HttpExchange {
    let request = request(e.request.take(), start, problems);
    let timing = timing(&e, start);
    let Some(mut resp) = e.response.take() else {
        problems.push(
            "the entry has no \"response\" (HAR 1.2 requires one); analysed as a request without a response"
                .to_owned(),
        );
        let note = recorder_reason(&e, None)
            .unwrap_or_else(|| "the HAR entry has no response object".to_owned());
        return no_response(request, timing.end, note);
    };
    let reason = recorder_reason(&e, Some(&resp));
    let status = num(resp.status.as_ref());
    let status = match status {
        Some(s) if (100.0..1000.0).contains(&s) => s as u16,
        // 0 (Chromium, Firefox, mitmproxy) or -1 (Playwright): nothing came back.
        Some(s) if s <= 0.0 => {
            let note = reason.unwrap_or_else(|| {
                let text = resp.status_text.as_deref().unwrap_or("").trim();
                if text.is_empty() {
                    "status 0: no response arrived (blocked, refused, aborted, or still pending when the HAR was saved)".to_owned()
                } else {
                    format!("status 0: {text}")
                }
            });
            return no_response(request, timing.end, note);
        }
        _ => {
            problems.push(format!(
                "response \"status\" is {}; expected an HTTP status number",
                resp.status
                    .as_ref()
                    .map_or("missing".to_owned(), |v| v.to_string())
            ));
            return no_response(
                request,
                timing.end,
                "the HAR response has no usable status".to_owned(),
            );
        }
    };
    let mut headers = headers(resp.headers.take());
    let mime = resp
        .content
        .as_ref()
        .and_then(|c| c.mime_type.as_deref())
        .filter(|m| !m.trim().is_empty());
    if headers.get("content-type").is_none() {
        if let Some(m) = mime {
            // Some writers keep the type only in content.mimeType.
            headers.push("Content-Type", m.to_owned());
        }
    }
    let (bytes, mut end) = content_bytes(resp.content.take(), &headers, limits, problems);
    let body = match bytes {
        None => Body::NotRecorded,
        Some(b) => super::body_from_recorded(&headers, b, crate::sse::Budget::from_limits(limits)),
    };
    if let Some(note) = &reason {
        // A status, then an error: the head arrived and the body was cut.
        end = if client_gave_up(note) {
            End::ClientClosed
        } else {
            End::Closed
        };
    }
    HttpExchange {
        request,
        response: Some(HttpResponse {
            status,
            headers,
            body,
            ts: timing.response,
        }),
        end,
        end_ts: timing.end,
        recorder_note: reason,
        tcp: None,
        part: None,
    }
}

fn no_response(request: HttpRequest, end_ts: Option<Timestamp>, note: String) -> HttpExchange {
    // Nothing came back: the connection ended, as a capture or a JSONL log of the
    // same failure says; "complete" here made formats disagree about one call.
    let end = if client_gave_up(&note) {
        End::ClientClosed
    } else {
        End::Closed
    };
    HttpExchange {
        request,
        response: None,
        end,
        end_ts,
        recorder_note: Some(note),
        tcp: None,
        part: None,
    }
}

/// The body as the recorder kept it, decoded, and whether the recorder cut it.
/// `None`: no body was kept (unknown, not empty).
fn content_bytes(
    content: Option<RawContent>,
    headers: &Headers,
    limits: &Limits,
    problems: &mut Notes,
) -> (Option<Vec<u8>>, End) {
    let Some(c) = content else {
        return (None, End::Complete);
    };
    let size = num(c.size.as_ref()).filter(|s| *s >= 0.0);
    let Some(text) = c.text else {
        // No text: an empty body when the recorder says so, otherwise not kept.
        return match size {
            Some(s) if s <= 0.0 => (Some(Vec::new()), End::Complete),
            _ => (None, End::Complete),
        };
    };
    let b64 = c
        .encoding
        .as_deref()
        .is_some_and(|e| e.trim().eq_ignore_ascii_case("base64"));
    let raw = if b64 {
        // Decoded in the text's own buffer: no second copy of a large body.
        base64_decode(text.into_bytes()).unwrap_or_else(|text| {
            problems.push(
                "response content.text says base64 but is not valid base64; kept as text"
                    .to_owned(),
            );
            text
        })
    } else {
        text.into_bytes()
    };
    let raw_len = raw.len();
    let (bytes, capped) = inflate_if_compressed(raw, headers, limits, problems);
    let mut end = End::Complete;
    if capped {
        end = End::Truncated;
    }
    // The recorder's size is the decoded body's; a shorter text means it cut the body.
    if let Some(s) = size {
        if s > raw_len.max(bytes.len()) as f64 {
            end = End::Truncated;
        }
    }
    (Some(bytes), end)
}

/// HAR text is meant to be decoded already; some writers keep the compressed bytes
/// (base64'd). Sniff gzip and zlib magic rather than trust `Content-Encoding`. The
/// output is bounded by the record cap (and the decompression cap) through the one
/// shared decoder.
fn inflate_if_compressed(
    raw: Vec<u8>,
    headers: &Headers,
    limits: &Limits,
    problems: &mut Notes,
) -> (Vec<u8>, bool) {
    let coding = headers
        .get("content-encoding")
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let gzip = raw.starts_with(&[0x1f, 0x8b]);
    // zlib: CMF 0x78 and a header checksum that divides by 31.
    let zlib = coding == "deflate"
        && matches!(raw.as_slice(), [0x78, flg, ..] if ((0x78u16 << 8) | u16::from(*flg)) % 31 == 0);
    if !gzip && !zlib {
        if coding == "br" && std::str::from_utf8(&raw).is_err() {
            problems.push(
                "the body is still brotli-compressed (Content-Encoding: br); brotli is not decoded, so it reads as not JSON".to_owned(),
            );
        }
        return (raw, false);
    }
    let (cap, flag) = body_cap(limits);
    let (out, res) = inflate_all(&raw, if gzip { Coding::Gzip } else { Coding::Zlib }, cap);
    match res {
        Ok(()) => (out, false),
        Err(Stop::Cap(cap)) => {
            problems.cap(format!(
                "cap: the compressed body expands past {cap} bytes; only the first {cap} were analysed (raise {flag})"
            ));
            (out, true)
        }
        Err(Stop::Invalid(e)) => {
            problems.push(format!(
                "the body starts like {} data but does not decompress ({e}); kept as recorded",
                if gzip { "gzip" } else { "zlib" }
            ));
            (raw, false)
        }
    }
}

/// The most bytes one decoded body may take, and the flag that raises it.
fn body_cap(limits: &Limits) -> (u64, &'static str) {
    let record = limits.max_record_bytes as u64;
    if record <= limits.max_decompressed_bytes {
        (record, "--max-record-bytes")
    } else {
        (limits.max_decompressed_bytes, "--max-decompressed-bytes")
    }
}

/// Entries of a HAR synthesized from MCP messages: the request body is a message from
/// the client and the response body one from the server, without an HTTP layer.
fn messages(
    mut e: RawEntry,
    start: Option<Timestamp>,
    limits: &Limits,
    problems: &mut Notes,
) -> Vec<Payload> {
    let mut out = Vec::new();
    let req = request(e.request.take(), start, problems);
    let timing = timing(&e, start);
    if !req.body.iter().all(u8::is_ascii_whitespace) {
        out.push(Payload::Stdio(StdioMessage {
            dir: Some(Direction::ClientToServer),
            json: String::from_utf8_lossy(&req.body).into_owned(),
            ts: start,
            checked: false,
            logged_by_client: false,
        }));
    }
    let mut resp = e.response.take().unwrap_or_default();
    let headers = headers(resp.headers.take());
    if let (Some(body), _) = content_bytes(resp.content.take(), &headers, limits, problems) {
        let text = crate::text::lossy(&body);
        if crate::sse::looks_like_event_stream(&body) {
            for ev in crate::sse::parse_body(&body, crate::sse::Budget::from_limits(limits)).events
            {
                out.push(Payload::Stdio(StdioMessage {
                    dir: Some(Direction::ServerToClient),
                    json: ev.data,
                    ts: timing.response,
                    checked: false,
                    logged_by_client: false,
                }));
            }
        } else if !text.trim().is_empty() {
            out.push(Payload::Stdio(StdioMessage {
                dir: Some(Direction::ServerToClient),
                json: text.into_owned(),
                ts: timing.response.or(start),
                checked: false,
                logged_by_client: false,
            }));
        }
    }
    out
}

/// Standard or URL-safe base64, padding optional, whitespace ignored; on bad input
/// the text comes back untouched. What browsers write (standard, one line) goes
/// through the `base64` crate; anything it refuses is decoded by hand, in place, with
/// the leniency above (the crate had it decode a browser's images and bundles 25
/// times faster than the hand-written passes alone).
fn base64_decode(text: Vec<u8>) -> Result<Vec<u8>, Vec<u8>> {
    use base64::Engine;
    const BROWSER: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    if let Ok(bytes) = BROWSER.decode(&text) {
        return Ok(bytes);
    }
    base64_by_hand(text)
}

/// `base64_decode` for what the crate refuses: in place (output is never longer
/// than input), so a large body is never copied.
fn base64_by_hand(mut text: Vec<u8>) -> Result<Vec<u8>, Vec<u8>> {
    // A first pass only checks, so the buffer is written only when it will decode.
    if base64_pass(&mut text, false).is_none() {
        return Err(text);
    }
    let n = base64_pass(&mut text, true).unwrap_or(0);
    text.truncate(n);
    Ok(text)
}

/// One pass over base64 text: the decoded length, `None` when not valid; `write`
/// puts the decoded bytes at the front of `text` (writing never overtakes reading:
/// four characters give three bytes).
fn base64_pass(text: &mut [u8], write: bool) -> Option<usize> {
    let mut acc: u32 = 0;
    let mut bits: u32 = 0;
    let mut padding = false;
    let mut w = 0usize;
    for r in 0..text.len() {
        let c = text[r];
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => {
                padding = true;
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        if padding {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            if write {
                text[w] = (acc >> bits) as u8;
            }
            w += 1;
            acc &= (1 << bits) - 1;
        }
    }
    // A lone sixth of a byte left over is not valid base64.
    (bits < 6).then_some(w)
}

#[cfg(test)]
mod base64_tests {
    use super::*;

    proptest::proptest! {
        /// The crate's fast path decodes exactly what the hand-written decoder
        /// decodes, to the same bytes, and refuses nothing the latter takes:
        /// standard and URL-safe text, padding or none, blanks, stray characters.
        #[test]
        fn the_fast_path_decodes_as_the_lenient_decoder(
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            url_safe in proptest::bool::ANY,
            unpadded in proptest::bool::ANY,
            noise in proptest::collection::vec(
                (0usize..100, proptest::sample::select(vec![b' ', b'\n', b'=', b'-', b'_', b'+', b'/', b'*', b'A'])),
                0..3,
            ),
        ) {
            use base64::Engine;
            let engine = match (url_safe, unpadded) {
                (false, false) => base64::engine::general_purpose::STANDARD,
                (false, true) => base64::engine::general_purpose::STANDARD_NO_PAD,
                (true, false) => base64::engine::general_purpose::URL_SAFE,
                (true, true) => base64::engine::general_purpose::URL_SAFE_NO_PAD,
            };
            let mut text = engine.encode(&data).into_bytes();
            for (at, b) in noise {
                let at = at.min(text.len());
                text.insert(at, b);
            }
            let fast = base64_decode(text.clone());
            proptest::prop_assert_eq!(&fast, &base64_by_hand(text.clone()));
            if text == engine.encode(&data).into_bytes() {
                proptest::prop_assert_eq!(fast, Ok(data));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::Collect;

    fn run(input: &str, window: usize) -> Collect {
        let mut sink = Collect::default();
        read_with_window(input.as_bytes(), &Limits::default(), &mut sink, window).unwrap();
        sink
    }

    fn entry(ts: &str, id: u32) -> String {
        format!(
            r#"{{"startedDateTime":"{ts}","request":{{"method":"POST","url":"http://127.0.0.1/mcp","postData":{{"text":"{id}"}}}},"response":{{"status":200,"content":{{"text":"ok"}}}}}}"#
        )
    }

    fn bodies(c: &Collect) -> Vec<String> {
        c.exchanges
            .iter()
            .map(|x| match &x.payload {
                Payload::Http(h) => String::from_utf8_lossy(&h.request.body).into_owned(),
                Payload::Stdio(m) => m.json.clone(),
                Payload::ClientLog(c) => c.tool.clone(),
            })
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

        /// `log.entries` is found wherever `log` and `entries` sit among the other
        /// members, and each entry is read once, in order.
        #[test]
        fn entries_are_found_among_any_members(
            texts in proptest::collection::vec("[a-z\"\\\\é\\]}{]{0,8}", 0..6),
            log_at in 0usize..3,
            entries_at in 0usize..5,
            pretty in proptest::prelude::any::<bool>(),
        ) {
            let entries: Vec<Value> = texts
                .iter()
                .map(|b| serde_json::json!({
                    "request": {"method": "POST", "url": "http://h/mcp", "postData": {"text": b}},
                    "response": {"status": 200, "content": {"text": "]}"}}
                }))
                .collect();
            let mut log: Vec<(&str, Value)> = vec![
                ("version", "1.2".into()),
                ("creator", serde_json::json!({"name": "x", "entries": [1]})),
                ("pages", serde_json::json!([{"id": "p", "title": "\"]"}])),
                ("browser", serde_json::json!({"name": "b"})),
            ];
            log.insert(entries_at, ("entries", Value::Array(entries)));
            let log: serde_json::Map<String, Value> =
                log.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            let mut root: Vec<(&str, Value)> = vec![
                ("comment", serde_json::json!({"log": 1})),
                ("extra", serde_json::json!(["{"])),
            ];
            root.insert(log_at, ("log", Value::Object(log)));
            let root: serde_json::Map<String, Value> =
                root.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            let doc = if pretty {
                serde_json::to_string_pretty(&root).unwrap()
            } else {
                serde_json::to_string(&root).unwrap()
            };
            let c = run(&doc, 8);
            proptest::prop_assert!(c.problems.is_empty(), "{:?}", c.problems);
            proptest::prop_assert_eq!(bodies(&c), texts);
        }
    }

    /// Header values that are not strings are kept as their JSON text (null as ""),
    /// as a `serde_json::Value` printed them; strings, escaped or not, decoded.
    #[test]
    fn header_values_of_any_json_type() {
        let doc = r#"{"log":{"entries":[{"request":{"method":"POST","url":"http://h/mcp","headers":[
            {"name":"A","value":12},{"name":"B","value":1.50},{"name":"C","value":null},
            {"name":"D","value":true},{"name":"E","value":{"x":[1,"y"],"a":-3}},{"name":"F"},
            {"name":"G","value":"caf\u00e9 \"q\""},{"name":"H","value":[2e3,false]},
            {"name":"I","value":"a value longer than twenty-four bytes"},{"value":"no name"}]},
            "response":{"status":200,"content":{"text":"ok"}}}]}}"#;
        let c = run(doc, 8);
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        let Payload::Http(h) = &c.exchanges[0].payload else {
            panic!("not HTTP")
        };
        assert_eq!(
            h.request.headers.iter().collect::<Vec<_>>(),
            [
                ("A", "12"),
                ("B", "1.5"),
                ("C", ""),
                ("D", "true"),
                ("E", r#"{"x":[1,"y"],"a":-3}"#),
                ("F", ""),
                ("G", "café \"q\""),
                ("H", "[2000.0,false]"),
                ("I", "a value longer than twenty-four bytes"),
            ]
        );
    }

    #[test]
    fn base64_variants() {
        let b64 = |t: &str| base64_decode(t.as_bytes().to_vec());
        assert_eq!(b64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(b64("aGVsbG8").unwrap(), b"hello");
        assert_eq!(b64("aGVs\nbG8=").unwrap(), b"hello");
        assert_eq!(b64("-_8=").unwrap(), [0xfb, 0xff]);
        // Bad input comes back as it was, so it can be kept as text.
        assert_eq!(b64("a").unwrap_err(), b"a");
        assert_eq!(b64("aGVs*").unwrap_err(), b"aGVs*");
        assert_eq!(b64("aG=Vs").unwrap_err(), b"aG=Vs");
    }

    /// Gives at most `step` bytes per read, so that entries arrive cut at every
    /// place and are read by scanning for their end, not parsed where they start.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn outcome(reader: impl Read) -> String {
        let mut sink = Collect::default();
        let r = read_with_window(reader, &Limits::default(), &mut sink, 8);
        format!(
            "{r:?} {:?} {:?} {:?}",
            sink.exchanges, sink.problems, sink.notices
        )
    }

    /// An entry parsed where it starts in the buffer gives what the scanning path
    /// gives: good entries, one that is JSON but no entry, a duplicate member, an
    /// escaped and spaced one; and one whose ignored member is not UTF-8 ends the
    /// list with the same problem at the same place either way.
    #[test]
    fn entries_parsed_in_place_read_as_scanned_ones_do() {
        let doc = |list: &[Vec<u8>]| {
            let mut doc = br#"{"log":{"entries":["#.to_vec();
            doc.extend(list.join(&b","[..]));
            doc.extend(br#"]}}"#);
            doc
        };
        let mut list: Vec<Vec<u8>> = (0..40)
            .map(|i| entry("2026-01-01T00:00:01Z", i).into_bytes())
            .collect();
        list[5] = br#"{"request":5}"#.to_vec();
        list[9] = br#"{"time":1,"time":2}"#.to_vec();
        list[12] = br#" { "startedDateTime" : "2026-01-01T00:00:01Z" , "request" : { "method" : "GET" , "url" : "http://h/\u00e9" } } "#.to_vec();
        // Longer than the window the last entries set, cut there inside a character.
        list[25] = entry("2026-01-01T00:00:01Z", 25)
            .replace(
                r#""text":"25""#,
                &format!(r#""text":"{}""#, "é".repeat(7_000)),
            )
            .into_bytes();
        let good = doc(&list);
        let whole = outcome(&good[..]);
        assert!(whole.starts_with("Ok(())"), "{whole}");
        assert_eq!(whole.matches("Exchange { locator").count(), 38, "{whole}");
        assert_eq!(whole.matches("kind: Malformed").count(), 3, "{whole}");
        for step in [1, 3, 64, 1000] {
            assert_eq!(
                outcome(Trickle { bytes: &good, step }),
                whole,
                "step {step}"
            );
        }
        let mut cut = br#"{"comment":""#.to_vec();
        cut.push(0xff);
        cut.extend(br#"","request":{"method":"GET","url":"http://h/"}}"#);
        list[20] = cut;
        let bad = doc(&list);
        let broken = outcome(&bad[..]);
        assert!(
            broken.contains("entry: 21 }, message: \"the HAR stops being valid JSON here (invalid unicode code point"),
            "{broken}"
        );
        assert_eq!(broken.matches("Exchange { locator").count(), 18, "{broken}");
        for step in [1, 7, 4096] {
            assert_eq!(
                outcome(Trickle { bytes: &bad, step }),
                broken,
                "step {step}"
            );
        }
    }

    #[test]
    fn window_reorders_local_disorder() {
        let doc = format!(
            r#"{{"log":{{"entries":[{},{},{}]}}}}"#,
            entry("2026-01-01T00:00:02Z", 2),
            entry("2026-01-01T00:00:01Z", 1),
            entry("2026-01-01T00:00:03Z", 3)
        );
        let c = run(&doc, 8);
        assert_eq!(bodies(&c), ["1", "2", "3"]);
        assert!(c.problems.is_empty());
        assert_eq!(c.exchanges[0].locator, Locator::Entry { entry: 2 });
    }

    #[test]
    fn too_late_for_the_window_is_reported_once() {
        let doc = format!(
            r#"{{"log":{{"entries":[{},{},{},{}]}}}}"#,
            entry("2026-01-01T00:00:03Z", 3),
            entry("2026-01-01T00:00:04Z", 4),
            entry("2026-01-01T00:00:01Z", 1),
            entry("2026-01-01T00:00:02Z", 2)
        );
        let c = run(&doc, 1);
        assert_eq!(c.exchanges.len(), 4);
        // Out of order is how HAR writers work, not a fault: a notice, not a problem.
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(c.notices.len(), 1, "{:?}", c.notices);
        assert_eq!(c.notices[0].locator, Locator::Entry { entry: 3 });
        assert!(c.notices[0].message.starts_with("2 entries started before"));
    }
}
