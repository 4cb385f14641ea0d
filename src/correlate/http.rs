//! HTTP exchanges: Streamable HTTP POSTs answered with JSON or SSE, streams resumed by
//! a GET with `Last-Event-ID` (MCP 2025-03-26 … 2025-11-25, Transports §Resumability and Redelivery), the
//! legacy HTTP+SSE transport where a POST is answered 202 and its response rides the
//! session's GET stream (MCP 2024-11-05, Transports §HTTP with SSE), cancellations, and request ids
//! reused within a scope (MCP 2025-06-18, Base Protocol §Requests).
//!
//! A call that has not reached a terminal response when its exchange ends stays *open*:
//! its legs are kept so a later resumption or the legacy stream can complete it, and it
//! is classified again with every leg. Only open calls keep bodies.

use super::observe::{Observation, Stray};
use super::{Correlator, Params, RetryOrigin, Scope, ScopeKind, Spent, Transport};
use crate::classify::{classify, Leg, Options, WaitedOut};
use crate::jsonrpc::{Id, Item, Kind, Message};
use crate::model::{Body, End, HttpExchange, Locator, Outcome, Timestamp};
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::borrow::Cow;
use std::sync::Arc;

/// Most cut streams kept waiting for a resumption at once (each keeps its events).
pub(super) const MAX_OPEN_STREAMS: usize = 4096;
/// Most bytes those streams keep (bodies and their decoded messages): a capture of
/// a server that cuts every large stream must not hold 4,096 of them whole.
const OPEN_STREAM_BYTES: u64 = 64 << 20;

/// Most cancellations kept waiting for the call they name (a capture emits the call
/// only when its stream ends); past this they are dropped, never memory.
const MAX_EARLY_CANCELS: usize = 4096;

/// A call waiting for more legs.
#[derive(Debug)]
pub(super) struct Open {
    /// Index into `Analysis::calls`.
    pub call: usize,
    pub request: Message,
    pub scope: Scope,
    /// Its legs so far: the POST, then resumption streams.
    pub legs: Vec<(HttpExchange, Vec<Item>)>,
    /// SSE event ids seen on its streams, for matching `Last-Event-ID` and dropping replays.
    pub event_ids: HashSet<String>,
    /// Roughly what its legs hold: their bodies, and as much again decoded.
    pub bytes: u64,
}

/// What a leg of an open call holds, roughly.
fn leg_bytes(x: &HttpExchange) -> u64 {
    2 * x.body_bytes()
}

/// The cut streams waiting for a resumption, oldest first, with the bytes they hold
/// kept as they change: a capture whose every stream is cut (a proxy that times SSE
/// out) adds one per call, and summing or shifting all 4,096 each time was 65% of
/// its time.
#[derive(Debug, Default)]
pub(super) struct OpenStreams {
    list: std::collections::VecDeque<Open>,
    bytes: u64,
}

impl OpenStreams {
    fn push(&mut self, open: Open) {
        self.bytes += open.bytes;
        self.list.push_back(open);
    }

    fn remove(&mut self, i: usize) -> Option<Open> {
        let open = self.list.remove(i)?;
        self.bytes -= open.bytes;
        Some(open)
    }

    /// Call `i` holds `bytes` more.
    fn grow(&mut self, i: usize, bytes: u64) {
        self.list[i].bytes += bytes;
        self.bytes += bytes;
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Open> {
        self.list.iter()
    }

    /// Every call, to renumber (`Open::bytes` is the list's to change).
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Open> {
        self.list.iter_mut()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The bytes the list says it holds.
    #[cfg(test)]
    pub fn held_bytes(&self) -> u64 {
        self.bytes
    }
}

impl std::ops::Index<usize> for OpenStreams {
    type Output = Open;
    fn index(&self, i: usize) -> &Open {
        &self.list[i]
    }
}

/// A stream resuming a cut call's stream (`Last-Event-ID`) that a capture reader
/// hands on in parts (it hands on every GET's stream so, since one may resume the
/// session's standalone stream and last as long): its parts are joined again and
/// read as one exchange when the last comes, as the same stream read whole was.
#[derive(Debug)]
struct Rejoin {
    locator: Locator,
    exchange: HttpExchange,
    items: Vec<Item>,
    /// When it began (`Analysis::exchanges`), so the oldest is read first at the end.
    began: u64,
    /// Roughly what it holds (`leg_bytes` plus its items).
    bytes: u64,
    /// Past its budget: later parts keep only the events that may answer a call,
    /// this many so far.
    lean: Option<usize>,
}

/// A stream being joined keeps every event up to these (a reader's own budget for
/// a stream read whole); past them, or past `REJOIN_BYTES` over all of them, only
/// the events that may answer a call (at most `LEAN_ITEMS`), with a `cap` problem.
const REJOIN_EVENTS: usize = 10_000;
const REJOIN_STREAM_BYTES: u64 = 16 << 20;
const REJOIN_BYTES: u64 = 64 << 20;
const LEAN_ITEMS: usize = 256;

/// The resumed streams being joined, by the reader's key for their parts.
#[derive(Debug, Default)]
pub(super) struct Rejoins {
    streams: HashMap<u64, Rejoin>,
    bytes: u64,
}

impl Rejoins {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    #[cfg(test)]
    pub fn held_bytes(&self) -> u64 {
        self.bytes
    }
}

impl Rejoin {
    /// Adds a later part: its events and items after the ones held (an item's event
    /// index counts from the stream's first event), its end and its problems.
    fn add(&mut self, x: HttpExchange, items: Vec<Item>, over_all: bool) {
        let HttpExchange {
            response,
            end,
            end_ts,
            recorder_note,
            ..
        } = x;
        self.exchange.end = end;
        self.exchange.end_ts = end_ts.or(self.exchange.end_ts);
        if recorder_note.is_some() {
            self.exchange.recorder_note = recorder_note;
        }
        let Some(Body::Sse(part)) = response.map(|r| r.body) else {
            return;
        };
        let Some(Body::Sse(body)) = self.exchange.response.as_mut().map(|r| &mut r.body) else {
            return;
        };
        body.bytes += part.bytes;
        body.problems.extend(part.problems);
        body.incomplete_tail = part.incomplete_tail;
        if self.lean.is_none()
            && (over_all
                || body.events.len() + part.events.len() > REJOIN_EVENTS
                || self.bytes > REJOIN_STREAM_BYTES)
        {
            self.lean = Some(0);
            body.problems.push(format!(
                "cap: this stream resumes a cut one and was read in parts; past {REJOIN_EVENTS} events or {} MiB (or {} MiB over all such streams) only the events that may answer a call were kept",
                REJOIN_STREAM_BYTES >> 20,
                REJOIN_BYTES >> 20
            ));
        }
        let base = body.events.len();
        let Some(lean) = self.lean.as_mut() else {
            self.bytes += 2 * part.bytes;
            body.events.extend(part.events);
            for mut it in items {
                if let crate::jsonrpc::Place::Event { index } = &mut it.place {
                    *index += base;
                }
                self.bytes += item_bytes(&it);
                self.items.push(it);
            }
            return;
        };
        // Only what may answer a call: an event's index moves with it.
        let mut events: Vec<Option<crate::model::SseEvent>> =
            part.events.into_iter().map(Some).collect();
        let mut moved: HashMap<usize, usize> = HashMap::new();
        for mut it in items {
            if *lean >= LEAN_ITEMS || !(is_reply(&it) || it.message().is_none()) {
                continue;
            }
            if let crate::jsonrpc::Place::Event { index } = &mut it.place {
                let to = match moved.get(index) {
                    Some(&to) => to,
                    None => {
                        let Some(ev) = events.get_mut(*index).and_then(Option::take) else {
                            continue;
                        };
                        self.bytes += 2 * (ev.data.len() as u64);
                        body.events.push(ev);
                        moved.insert(*index, body.events.len() - 1);
                        body.events.len() - 1
                    }
                };
                *index = to;
            }
            *lean += 1;
            self.bytes += item_bytes(&it);
            self.items.push(it);
        }
    }
}

/// A GET stream of the legacy transport, held while POSTs of its session may come.
#[derive(Debug)]
pub(super) struct LegacyStream {
    pub scope: Scope,
    pub exchange: HttpExchange,
    pub items: Vec<Item>,
    pub locator: Locator,
    /// Its responses by id (type-loose, so `1` finds `"1"` too), so that joining
    /// many POSTs to a long stream stays linear.
    index: HashMap<String, Vec<usize>>,
    /// Items that answered a call.
    used: HashSet<usize>,
    bytes: u64,
    /// Set while a capture reader hands the stream on in parts and more are to come.
    going: Option<Box<Going>>,
}

/// A legacy stream whose last part has not come. It holds only the responses that no
/// call has taken (within `HELD_REPLIES`, for a POST recorded late), and the calls of
/// its session whose responses are still to come.
#[derive(Debug)]
struct Going {
    /// The reader's key for the stream's parts (`StreamPart::stream`).
    key: u64,
    /// Calls answered 202 whose response has not come yet, by loose id.
    calls: HashMap<String, Vec<Open>>,
}

/// Responses no call took that a stream going on in parts holds for a POST recorded
/// after them (its 202 may come after the response), the newest first; past twice
/// either, the older ones are let go (strays then, if no request of theirs is known).
pub(super) const HELD_REPLIES: usize = 256;
const HELD_REPLY_BYTES: u64 = 1 << 20;

/// Most calls, and bytes of them, that wait for their responses on the legacy streams
/// that go on; past either, the oldest half are judged unanswered.
pub(super) const MAX_GOING_CALLS: usize = 8192;
const GOING_CALL_BYTES: u64 = 64 << 20;

/// Most calls of a log, and bytes of them, that wait for a stream of their session
/// not yet read; past either, the oldest half are judged unanswered. A log written
/// as exchanges end puts a legacy session's stream after all its POSTs, so this is
/// the longest such session whose every call still meets its response (a waiting
/// call costs about 3 KB with its pending record: 50 MB at the bound).
pub(super) const MAX_LOGGED_CALLS: usize = 16_384;
const LOGGED_CALL_BYTES: u64 = 64 << 20;

/// Roughly what a stream handed on in parts holds besides its responses: the head
/// of its latest part, whose events are dropped once decoded (its body's byte count
/// is what it read, not what it holds, and many sessions may go on at once).
const PART_HEAD_BYTES: u64 = 2048;

/// Roughly what holding an item costs: its text, its excerpt and their bookkeeping.
fn item_bytes(it: &Item) -> u64 {
    (it.message().map_or(0, |m| m.text().len()) + it.excerpt.len() + 256) as u64
}

/// Most legacy GET streams held at once, and the bytes they hold (bodies and their
/// decoded messages). A stream is held after it ends because, in a log ordered by
/// start time, its session's POSTs come after it; past either bound the oldest is
/// let go, and a POST of its session that comes later says so.
pub(super) const MAX_LEGACY_STREAMS: usize = 1024;
const LEGACY_STREAM_BYTES: u64 = 128 << 20;
/// Sessions whose stream was let go, remembered to say so (cleared past this).
const MAX_LEGACY_GONE: usize = 4096;

/// The legacy transport's streams and the calls waiting for them. A call is joined
/// to its session's first stream as soon as both are known, and then released like
/// any other: a day of legacy sessions holds neither all its calls nor all its
/// streams until the input ends.
#[derive(Debug, Default)]
pub(super) struct Legacy {
    streams: std::collections::VecDeque<LegacyStream>,
    /// The serial number of `streams[0]`; streams are numbered as they come.
    first_serial: u64,
    /// Each session's first stream, by serial number.
    stream_of: HashMap<Scope, u64>,
    bytes: u64,
    /// Calls answered 202 whose session's stream has not come yet.
    pub waiting: HashMap<Scope, Vec<Open>>,
    gone: HashSet<Scope>,
    /// Streams handed on in parts, more to come: the reader's key to the serial.
    parts: HashMap<u64, u64>,
    /// Calls waiting for their responses on those streams.
    going_calls: Held,
    /// Calls of a capture in `waiting`.
    unseen_calls: Held,
    /// Calls of a log in `waiting`.
    logged_calls: Held,
}

/// Calls waiting against one bound, counted as they come and go.
#[derive(Debug, Default)]
struct Held {
    calls: usize,
    bytes: u64,
}

impl Held {
    fn of<'a>(calls: impl Iterator<Item = &'a Open>) -> Held {
        let mut held = Held::default();
        calls.for_each(|o| held.add(o));
        held
    }

    fn add(&mut self, o: &Open) {
        self.calls += 1;
        self.bytes += o.bytes;
    }

    fn remove(&mut self, o: &Open) {
        self.calls -= 1;
        self.bytes -= o.bytes;
    }

    /// Past `MAX_GOING_CALLS` or `GOING_CALL_BYTES`.
    fn over(&self) -> bool {
        self.past(MAX_GOING_CALLS, GOING_CALL_BYTES)
    }

    fn past(&self, calls: usize, bytes: u64) -> bool {
        self.calls > calls || self.bytes > bytes
    }
}

/// Parts calls that waited past a bound, oldest first (calls are pending in the
/// order they came): the older half, to be judged now, and the newer half.
fn oldest_half<T>(mut all: Vec<T>, open: impl Fn(&T) -> &Open) -> (Vec<T>, Vec<T>) {
    all.sort_unstable_by_key(|t| open(t).call);
    let newer = all.split_off(all.len() / 2);
    (all, newer)
}

/// How many calls of a capture (`captured`) or of a log may wait for a stream of
/// their session not yet read, and how many bytes of them; and what a call judged
/// past it is told.
fn unwritten_bound(captured: bool) -> (usize, u64, WaitedOut) {
    if captured {
        let mib = GOING_CALL_BYTES >> 20;
        (
            MAX_GOING_CALLS,
            GOING_CALL_BYTES,
            WaitedOut::LegacyUnseen(MAX_GOING_CALLS, mib),
        )
    } else {
        let mib = LOGGED_CALL_BYTES >> 20;
        (
            MAX_LOGGED_CALLS,
            LOGGED_CALL_BYTES,
            WaitedOut::LegacyUnwritten(MAX_LOGGED_CALLS, mib),
        )
    }
}

/// The key a call waits under on a stream: its id, type-loose.
fn wait_key(open: &Open) -> String {
    loose_id(&open.request.id_or_null()).into_owned()
}

impl Legacy {
    /// The calls of a capture (`captured`) or of a log in `waiting`, counted.
    fn unwritten(&mut self, captured: bool) -> &mut Held {
        if captured {
            &mut self.unseen_calls
        } else {
            &mut self.logged_calls
        }
    }

    fn stream_index(&self, scope: &Scope) -> Option<usize> {
        self.index_of(*self.stream_of.get(scope)?)
    }

    fn index_of(&self, serial: u64) -> Option<usize> {
        usize::try_from(serial.checked_sub(self.first_serial)?).ok()
    }

    /// The held stream whose next part this is.
    pub fn part_index(&self, key: u64) -> Option<usize> {
        self.index_of(*self.parts.get(&key)?)
    }

    /// Streams held.
    #[cfg(test)]
    pub fn held_streams(&self) -> usize {
        self.streams.len()
    }

    /// Calls waiting for a stream or for their response on one (counted at each
    /// release, not per call).
    pub fn waiting_count(&self) -> usize {
        self.waiting().count()
    }

    /// Every waiting call, in no order.
    pub fn waiting(&self) -> impl Iterator<Item = &Open> {
        let going = self.streams.iter().filter_map(|s| s.going.as_ref());
        self.waiting
            .values()
            .flatten()
            .chain(going.flat_map(|g| g.calls.values().flatten()))
    }

    /// Every waiting call, in no order.
    pub fn waiting_mut(&mut self) -> impl Iterator<Item = &mut Open> {
        let going = self.streams.iter_mut().filter_map(|s| s.going.as_mut());
        self.waiting
            .values_mut()
            .flatten()
            .chain(going.flat_map(|g| g.calls.values_mut().flatten()))
    }
}

impl LegacyStream {
    /// Whether an item it holds answers `id` (type-loose, as `join_legacy` takes it).
    fn answers(&self, id: &Id) -> bool {
        self.index.get(&*loose_id(id)).is_some_and(|found| {
            found.iter().any(|&ii| {
                self.items
                    .get(ii)
                    .and_then(|it| it.message()?.id.as_ref())
                    .is_some_and(|rid| rid == id || rid.differs_only_in_type(id))
            })
        })
    }

    /// Lets go of the responses taken, and of the oldest no call took past
    /// `HELD_REPLIES` or `HELD_REPLY_BYTES`; returns those.
    fn let_go_of_old_replies(&mut self) -> Vec<Item> {
        let items = std::mem::take(&mut self.items);
        let used = std::mem::take(&mut self.used);
        self.index.clear();
        self.bytes = PART_HEAD_BYTES;
        let mut unused: Vec<Item> = items
            .into_iter()
            .enumerate()
            .filter(|(ii, _)| !used.contains(ii))
            .map(|(_, it)| it)
            .collect();
        let (mut keep, mut bytes) = (0, 0);
        for it in unused.iter().rev() {
            if keep == HELD_REPLIES || bytes + item_bytes(it) > HELD_REPLY_BYTES {
                break;
            }
            keep += 1;
            bytes += item_bytes(it);
        }
        for it in unused.split_off(unused.len() - keep) {
            self.hold(it);
        }
        unused
    }

    /// Holds and indexes a response of a stream handed on in parts.
    fn hold(&mut self, it: Item) {
        let Some(rid) = it.message().and_then(|m| m.id.as_ref()) else {
            return;
        };
        self.index
            .entry(loose_id(rid).into_owned())
            .or_default()
            .push(self.items.len());
        self.bytes += item_bytes(&it);
        self.items.push(it);
    }
}

/// Whether a call's POST was read from a capture, where a legacy stream is handed
/// on as soon as it answers a call (over HTTP/1.1 and HTTP/2 alike; a log may write
/// the stream after its POSTs).
fn from_capture(open: &Open) -> bool {
    open.legs.first().is_some_and(|(x, _)| x.tcp.is_some())
}

/// What stands in a stream's slot for a response a call took.
fn taken() -> Item {
    Item {
        decoded: crate::jsonrpc::Decoded::NotObject("taken"),
        place: crate::jsonrpc::Place::Body,
        batch_index: None,
        event_id: None,
        ts: None,
        excerpt: String::new(),
    }
}

/// Whether an item of a legacy stream may answer a call: a message with an id that
/// is neither a request nor a notification.
fn is_reply(it: &Item) -> bool {
    it.message()
        .is_some_and(|r| !matches!(r.kind(), Kind::Request | Kind::Notification) && r.id.is_some())
}

/// What the correlator remembers of each request id in a scope.
#[derive(Debug, Clone)]
pub(super) struct SeenRequest {
    /// Shared with every request of the same method (interned).
    pub method: Arc<str>,
    /// A digest of tool name + canonical arguments, for telling a repeat from a
    /// reuse: kept for every request of the input, so it must stay small.
    pub key: u64,
    pub answered: bool,
}

/// An id's value with its JSON type dropped (`1` and `"1"` give the same key).
fn loose_id(id: &Id) -> Cow<'_, str> {
    let raw = id.raw();
    if !id.is_string() {
        return Cow::Borrowed(raw);
    }
    // A string without escapes is its text between the quotes.
    match raw.get(1..raw.len().saturating_sub(1)) {
        Some(inner) if !inner.contains('\\') => Cow::Borrowed(inner),
        _ => Cow::Owned(serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_owned())),
    }
}

/// Drops the events of a legacy stream's part once its items are decoded: only its
/// head, its end and what its parser met are read after that.
fn forget_events(x: &mut HttpExchange) {
    if let Some(Body::Sse(s)) = x.response.as_mut().map(|r| &mut r.body) {
        s.events = Vec::new();
    }
}

/// `sessionId=…` or `session_id=…` in a URL's query: the legacy transport's session key.
pub(super) fn legacy_session(url: &str) -> Option<&str> {
    let query = url.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or(query);
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        matches!(k, "sessionId" | "session_id").then_some(v)
    })
}

/// A URL after its scheme, without userinfo: scopes and endpoints name a server,
/// never a credential (`https://alice:pw@host/mcp` is `host/mcp`).
fn after_userinfo(url: &str) -> &str {
    let rest = crate::text::split_scheme(url).map_or(url, |(_, r)| r);
    let authority = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    }
}

fn host_of(url: &str) -> &str {
    let rest = after_userinfo(url);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

/// `host/path` of a URL without its query: the server endpoint a call went to.
/// The legacy transport's POST endpoint differs only in its query, so it stays one.
fn endpoint_of(url: &str) -> String {
    let rest = after_userinfo(url);
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    crate::text::kept(&rest[..end], crate::text::KEPT_TEXT).into_owned()
}

/// The `Mcp-Session-Id` of an exchange: the request's, else the one the response
/// gave (an `initialize` answer).
pub(super) fn session_id(x: &HttpExchange) -> Option<&str> {
    x.request.headers.get("mcp-session-id").or_else(|| {
        x.response
            .as_ref()
            .and_then(|r| r.headers.get("mcp-session-id"))
    })
}

/// `session_id`, as the correlator keeps it for redaction: a long id by its first
/// `text::KEPT_TEXT` bytes, which redaction replaces wherever they appear, so a
/// hostile id of a megabyte costs no more than that.
pub(super) fn kept_session_id(x: &HttpExchange) -> Option<&str> {
    session_id(x).map(|s| &s[..crate::text::floor_boundary(s, crate::text::KEPT_TEXT)])
}

/// The id scope of an exchange: the session, the legacy session, or (none) the
/// client endpoint (2025 without sessions, 2026 stateless).
pub(super) fn scope_of(x: &HttpExchange) -> Scope {
    if let Some(s) = session_id(x) {
        return Scope::session(s);
    }
    if let Some(s) = legacy_session(&x.request.url) {
        return Scope::legacy(s);
    }
    Scope::http(host_of(&x.request.url), 1)
}

impl Correlator {
    /// `scope_of`, remembering the last session's scope: the exchanges of a session
    /// mostly come one after another, and its scope text need not be made again.
    fn scope_of(&mut self, x: &HttpExchange) -> Scope {
        let session = x.request.headers.get("mcp-session-id");
        if let (Some(id), Some((last, scope))) = (session, &self.last_session) {
            if **last == *id {
                return scope.clone();
            }
        }
        let scope = scope_of(x);
        if let Some(id) = session {
            self.last_session = Some((id.into(), scope.clone()));
        }
        if let Some(id) = kept_session_id(x) {
            if self.session_ids.len() < super::MAX_SESSION_IDS
                && self.session_id_bytes + id.len() <= super::MAX_SESSION_ID_BYTES
                && !self.session_ids.contains(id)
            {
                self.session_id_bytes += id.len();
                self.session_ids.insert(id.into());
            }
        }
        scope
    }
}

fn sse_event_ids(x: &HttpExchange) -> impl Iterator<Item = &str> {
    let events = match x.response.as_ref().map(|r| &r.body) {
        Some(Body::Sse(s)) => s.events.as_slice(),
        _ => &[],
    };
    events.iter().filter_map(|e| e.id.as_deref())
}

fn is_2026(version: Option<&str>) -> bool {
    version.is_some_and(|v| v >= "2026-07-28")
}

impl Correlator {
    pub(super) fn http(
        &mut self,
        locator: &Locator,
        x: HttpExchange,
        req_items: Vec<Item>,
        resp_items: Vec<Item>,
    ) -> Spent {
        // A later part of a legacy stream goes to the stream its first part began.
        // If that was let go (its calls were judged then), the part is too.
        if let Some(part) = x.part.filter(|p| p.index > 0) {
            if let Some(si) = self.legacy.part_index(part.stream) {
                let spent = self.legacy_part(si, x, resp_items);
                return Spent {
                    exchange: Some(spent),
                    request: req_items,
                    ..Spent::default()
                };
            }
            if self.rejoins.streams.contains_key(&part.stream) {
                return self.rejoin_part(part, x, req_items, resp_items);
            }
            // A later part of a standalone stream is read as its first part was.
            let first = if part.more {
                self.standalone.get(&part.stream).cloned()
            } else {
                self.standalone.remove(&part.stream)
            };
            if let Some((scope, _, context)) = first {
                self.responses_on_get(locator, &x, &resp_items, &scope, context);
            }
            return Spent {
                exchange: Some(x),
                request: req_items,
                response: resp_items,
                stdio: None,
            };
        }
        let mut scope = self.scope_of(&x);
        if scope.kind() == ScopeKind::Http {
            // Without sessions, each `initialize` starts a new client's id space (a
            // restarted client counts from 0 again; that is no id reuse).
            let initializes = req_items.iter().any(|i| {
                i.message()
                    .is_some_and(|m| m.kind() == Kind::Request && m.method_is("initialize"))
            });
            let now = self.out.exchanges;
            if self.sessionless_inits.len() > super::MAX_SCOPES {
                super::forget_older_half(&mut self.sessionless_inits, |(_, last)| *last);
            }
            // Looked up before inserting: this runs for every exchange.
            let (n, last) = match self.sessionless_inits.get_mut(&scope) {
                Some(e) => e,
                None => self
                    .sessionless_inits
                    .entry(scope.clone())
                    .or_insert((0, now)),
            };
            *last = now;
            if initializes {
                *n += 1;
            }
            if *n > 1 {
                scope = Scope::http(host_of(&x.request.url), *n);
            }
        }
        let status = x.response.as_ref().map(|r| r.status);
        if status == Some(404) && x.request.headers.get("mcp-session-id").is_some() {
            if self.expired_scopes.len() > super::MAX_SCOPES {
                super::forget_older_half(&mut self.expired_scopes, |at| *at);
            }
            self.expired_scopes
                .insert(scope.clone(), self.out.exchanges);
        }
        let header_version = x
            .request
            .headers
            .get("mcp-protocol-version")
            .map(str::to_owned);

        let mut any_request = false;
        for item in &req_items {
            let Some(m) = item.message() else { continue };
            match m.kind() {
                Kind::Notification => {
                    if m.method_is("notifications/cancelled") {
                        self.cancel(&scope, &m.params_value(), x.request.ts);
                    }
                    continue;
                }
                Kind::Request => {}
                _ => continue,
            }
            any_request = true;
            let method = m.method_text().unwrap_or_default();
            let params = Params::of(m);
            self.note_request_meta(&scope, &method, &params, header_version.as_deref());
            self.check_id_reuse(&scope, m, &method, &params, locator);
            if method == "initialize" {
                self.note_initialize_result(&scope, m, &resp_items);
            }
            if method == "tools/list" {
                self.note_tools_list(m, &resp_items);
            }
            let answered = resp_items
                .iter()
                .filter_map(Item::message)
                .any(|r| r.kind() == Kind::Response && r.id == m.id);
            if let (Some(id), Some(seen)) = (&m.id, self.requests.get_mut(&scope)) {
                if let Some(s) = seen.get_mut(id) {
                    s.answered = answered;
                }
            }
            if method == "tools/call" {
                self.http_call(
                    locator,
                    &x,
                    m,
                    &params,
                    &scope,
                    &resp_items,
                    req_items.len(),
                );
            }
        }
        // No request in the body: a GET stream (resumption, legacy, standalone).
        if !any_request && x.request.method.eq_ignore_ascii_case("GET") {
            self.get_stream(locator, x, resp_items, &scope);
            return Spent {
                request: req_items,
                ..Spent::default()
            };
        }
        Spent {
            exchange: Some(x),
            request: req_items,
            response: resp_items,
            stdio: None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn http_call(
        &mut self,
        locator: &Locator,
        x: &HttpExchange,
        m: &Message,
        params: &Params,
        scope: &Scope,
        resp_items: &[Item],
        batch_len: usize,
    ) {
        let status = x.response.as_ref().map(|r| r.status);
        let legacy = status == Some(202) && resp_items.iter().all(|i| i.message().is_none());
        let leg = Leg {
            exchange: Some(x),
            items: if legacy {
                vec![]
            } else {
                resp_items.iter().collect()
            },
            end: x.end,
        };
        let verdict = classify(m, &[leg], Options::default());
        let resp = x.response.as_ref();
        let retry_after_ms = resp
            .and_then(|r| r.headers.get("retry-after"))
            .and_then(super::parse_retry_after);
        let sse_retry_ms = resp.and_then(|r| match &r.body {
            Body::Sse(s) => s.events.iter().rev().find_map(|e| e.retry),
            _ => None,
        });
        let ended_at = verdict.evidence.responded_at.or(x.end_ts);
        let outcome = verdict.outcome;
        let call = self.pending.len();
        self.push_call(
            m,
            params,
            scope,
            locator.clone(),
            Transport::Http,
            verdict,
            x.request.ts,
            ended_at,
            retry_after_ms,
            sse_retry_ms,
        );
        let endpoint = self.intern(&endpoint_of(&x.request.url));
        if let Some(c) = self.pending.last_mut() {
            c.endpoint = endpoint;
            // The wire story is kept for calls that need a look (a success keeps none).
            if c.verdict.outcome != Outcome::ToolSuccess {
                c.timeline = Some(Box::new(super::timeline::of_http(x, resp_items)));
            }
            c.compact_if_success();
            // 2026-07-28: the client closing the response stream is the cancellation.
            if x.end == End::ClientClosed && is_2026(c.protocol_version.as_deref()) {
                c.cancelled = true;
            }
        }
        if let Some(sent) = self.early_cancels.remove(&(scope.clone(), m.id_or_null())) {
            self.apply_cancel(call, sent);
        }
        let event_ids: HashSet<String> = sse_event_ids(x).map(str::to_owned).collect();
        let resumable = outcome == Outcome::StreamIncomplete && !event_ids.is_empty();
        // A batch POST answered 202 is legacy only with one request; keep it simple.
        if (resumable || legacy) && batch_len >= 1 {
            let mut kept = x.clone();
            if legacy {
                // Only the 202's status is read again; its bodies are not needed.
                kept.request.body = Vec::new();
                if let Some(r) = kept.response.as_mut() {
                    r.body = Body::Bytes(Vec::new());
                }
            }
            let bytes = leg_bytes(&kept) + event_ids.iter().map(|e| e.len() as u64).sum::<u64>();
            let open = Open {
                call,
                request: m.clone(),
                scope: scope.clone(),
                legs: vec![(kept, if legacy { vec![] } else { resp_items.to_vec() })],
                event_ids,
                bytes,
            };
            if legacy {
                self.legacy_call(open);
            } else {
                self.open.push(open);
                self.bound_open();
            }
        }
    }

    /// `notifications/cancelled` for a request in this scope (2025 era HTTP).
    /// A capture emits an exchange when it completes, so the short cancellation POST
    /// can come before the long stream it cancels: then it waits for that call.
    fn cancel(&mut self, scope: &Scope, params: &serde_json::Value, sent: Option<Timestamp>) {
        let Some(rid) = params.get("requestId") else {
            return;
        };
        let rid = Id::from_raw(&rid.to_string());
        let found = self
            .pending
            .iter()
            .enumerate()
            .rev()
            // A cancellation follows its request closely; a bounded look back keeps
            // an input of many cancellations linear.
            .take(10_000)
            .find(|(_, c)| c.scope == *scope && c.id == rid)
            .map(|(i, _)| i);
        match found {
            Some(i) => self.apply_cancel(i, sent),
            None => {
                if self.early_cancels.len() >= MAX_EARLY_CANCELS {
                    self.early_cancels.clear();
                }
                self.early_cancels.insert((scope.clone(), rid), sent);
            }
        }
    }

    /// Marks call `i` cancelled, unless its response won the race or its stream had
    /// already ended by the server's doing when the cancellation was sent (a client
    /// timing out on a dead server: the cancel does not explain how it ended).
    fn apply_cancel(&mut self, i: usize, sent: Option<Timestamp>) {
        let c = &mut self.pending[i];
        if !c.verdict.outcome.is_non_terminal() {
            // The response won the race; the client ignores it.
            c.verdict.evidence.notes.push(
                "the client sent notifications/cancelled after this call already had its response"
                    .to_owned(),
            );
            return;
        }
        let ended_before = c.timeline.as_ref().and_then(|t| {
            let server_end = matches!(
                t.end,
                End::Closed | End::Reset | End::StreamReset | End::GoAway
            );
            (server_end && t.end_ts.is_some() && sent.is_some() && t.end_ts < sent).then_some(t.end)
        });
        if let Some(end) = ended_before {
            c.verdict.evidence.notes.push(format!(
                "the client sent notifications/cancelled for this request only after its stream had ended ({}), so the cancellation did not end it",
                end.as_str()
            ));
            return;
        }
        c.cancelled = true;
        if c.ended_at.is_none() {
            // When the client gave up: it shows how long it waits.
            c.ended_at = sent;
        }
        c.verdict
            .evidence
            .notes
            .push("the client sent notifications/cancelled for this request".to_owned());
    }

    pub(super) fn check_id_reuse(
        &mut self,
        scope: &Scope,
        m: &Message,
        method: &str,
        params: &Params,
        locator: &Locator,
    ) {
        let Some(id) = m.id.clone() else { return };
        let key = params.call_key();
        let mut reuse = None;
        if let Some(prev) = self.requests.get(scope).and_then(|s| s.get(&id)) {
            let version = self
                .scopes
                .get(scope)
                .and_then(|s| s.protocol_version.as_deref());
            let same_call = &*prev.method == method && prev.key == key;
            let mrtr = params.is_mrtr_followup();
            // Repeats of the same call are judged by the repeat rules; MRTR by its own.
            let obs = Observation::IdReuse {
                scope: scope.clone(),
                id: id.clone(),
                method: method.into(),
                earlier: (*prev.method).into(),
                same_call,
                in_flight: !prev.answered,
                modern: is_2026(version),
                mrtr,
                locator: locator.clone(),
            };
            reuse = Some(obs);
        }
        let method = self.intern(method);
        self.requests.insert(
            scope,
            id,
            SeenRequest {
                method,
                key,
                answered: false,
            },
        );
        if let Some(obs) = reuse {
            self.observe(obs);
        }
    }

    fn get_stream(&mut self, locator: &Locator, x: HttpExchange, items: Vec<Item>, scope: &Scope) {
        if let Some(last) = x.request.headers.get("last-event-id").map(str::to_owned) {
            let found = self
                .open
                .iter()
                .position(|o| o.event_ids.contains(&last) && o.scope == *scope)
                .or_else(|| self.open.iter().position(|o| o.event_ids.contains(&last)));
            if let Some(i) = found {
                // Its later parts are joined to it first (`Rejoin`).
                match x.part.filter(|p| p.more) {
                    Some(part) if self.rejoins.streams.len() < MAX_OPEN_STREAMS => {
                        self.rejoin(part.stream, locator, x, items);
                    }
                    Some(part) => {
                        self.remember_standalone(part.stream, scope, Stray::ResumedGet);
                        self.resume(i, locator, x, items);
                    }
                    None => self.resume(i, locator, x, items),
                }
                return;
            }
        }
        // The legacy transport announces where to POST in an `endpoint` event.
        let endpoint = match x.response.as_ref().map(|r| &r.body) {
            Some(Body::Sse(s)) => s
                .events
                .iter()
                .find(|e| e.event == "endpoint")
                .map(|e| e.data.clone()),
            _ => None,
        };
        if let Some(endpoint) = endpoint {
            let scope = match legacy_session(&endpoint) {
                Some(sid) => Scope::legacy(sid),
                None => scope.clone(),
            };
            let going = x.part.filter(|p| p.more).map(|p| {
                Box::new(Going {
                    key: p.stream,
                    calls: HashMap::new(),
                })
            });
            self.legacy_stream(LegacyStream {
                scope,
                bytes: leg_bytes(&x),
                exchange: x,
                items,
                locator: locator.clone(),
                index: HashMap::new(),
                used: HashSet::new(),
                going,
            });
            return;
        }
        let context = if x.request.headers.get("last-event-id").is_some() {
            Stray::ResumedGet
        } else {
            Stray::PlainGet
        };
        // A standalone stream handed on in parts (or one resuming a stream no call
        // waits for): its later parts are read the same way, in its scope (they
        // carry no headers).
        if let Some(part) = x.part.filter(|p| p.more) {
            self.remember_standalone(part.stream, scope, context);
        }
        self.responses_on_get(locator, &x, &items, scope, context);
    }

    fn remember_standalone(&mut self, key: u64, scope: &Scope, context: Stray) {
        if self.standalone.len() >= super::MAX_SCOPES {
            super::forget_older_half(&mut self.standalone, |(_, at, _)| *at);
        }
        self.standalone
            .insert(key, (scope.clone(), self.out.exchanges, context));
    }

    /// Holds the first part of a stream that resumes open call's stream, to be read
    /// with its later parts when the last comes.
    fn rejoin(&mut self, key: u64, locator: &Locator, mut x: HttpExchange, items: Vec<Item>) {
        x.part = None;
        let bytes = leg_bytes(&x) + items.iter().map(item_bytes).sum::<u64>();
        self.rejoins.bytes += bytes;
        let rejoin = Rejoin {
            locator: locator.clone(),
            exchange: x,
            items,
            began: self.out.exchanges,
            bytes,
            lean: None,
        };
        self.rejoins.streams.insert(key, rejoin);
    }

    /// A later part of a stream being joined (`rejoin`); the last reads it whole.
    fn rejoin_part(
        &mut self,
        part: crate::model::StreamPart,
        x: HttpExchange,
        req_items: Vec<Item>,
        resp_items: Vec<Item>,
    ) -> Spent {
        let over_all = self.rejoins.bytes > REJOIN_BYTES;
        if let Some(r) = self.rejoins.streams.get_mut(&part.stream) {
            let before = r.bytes;
            r.add(x, resp_items, over_all);
            self.rejoins.bytes += r.bytes - before;
        }
        if !part.more {
            if let Some(r) = self.rejoins.streams.remove(&part.stream) {
                self.rejoins.bytes -= r.bytes;
                drop(self.http(&r.locator, r.exchange, Vec::new(), r.items));
            }
        }
        Spent {
            request: req_items,
            ..Spent::default()
        }
    }

    /// At the end of the input: the streams whose last part never came (none is
    /// lost in a capture read to its end) are read as the capture left them.
    pub(super) fn finish_rejoins(&mut self) {
        let mut left: Vec<Rejoin> = std::mem::take(&mut self.rejoins.streams)
            .into_values()
            .collect();
        self.rejoins.bytes = 0;
        left.sort_by_key(|r| r.began);
        for mut r in left {
            r.exchange.end = End::CaptureEnded;
            drop(self.http(&r.locator, r.exchange, Vec::new(), r.items));
        }
    }

    /// A stream that is no resumption must not carry responses (2025-03-26+ "MUST
    /// NOT"): each is a stray, and the first whose call is still open resumes it.
    fn responses_on_get(
        &mut self,
        locator: &Locator,
        x: &HttpExchange,
        items: &[Item],
        scope: &Scope,
        context: Stray,
    ) {
        for item in items {
            let Some(r) = item.message() else { continue };
            if r.kind() != Kind::Response {
                continue;
            }
            let id = r.id_or_null();
            let open = self
                .open
                .iter()
                .position(|o| o.scope == *scope && o.request.id.as_ref() == Some(&id));
            self.observe(Observation::StrayResponse {
                scope: scope.clone(),
                id: id.clone(),
                request: None,
                call: open.map(|i| self.pending[self.open[i].call].seq),
                locator: locator.clone(),
                context,
            });
            if let Some(i) = open {
                let only: Vec<Item> = vec![item.clone()];
                self.resume(i, locator, x.clone(), only);
                return;
            }
        }
    }

    /// Adds a resumption leg to open call `i` and classifies it again.
    fn resume(&mut self, i: usize, locator: &Locator, x: HttpExchange, items: Vec<Item>) {
        self.check_reconnect_delay(i, locator, &x);
        let grown = leg_bytes(&x) + sse_event_ids(&x).map(|e| e.len() as u64).sum::<u64>();
        self.open.grow(i, grown);
        let open = &mut self.open.list[i];
        // Replayed events (same stream, same event id) are the same message: drop them.
        let fresh: Vec<Item> = items
            .into_iter()
            .filter(|it| {
                it.event_id
                    .as_ref()
                    .is_none_or(|id| !open.event_ids.contains(id))
            })
            .collect();
        let leg = super::timeline::leg_of_http(&x, &fresh, open.request.id.as_ref());
        open.event_ids.extend(sse_event_ids(&x).map(str::to_owned));
        open.legs.push((x, fresh));
        let legs: Vec<Leg> = open
            .legs
            .iter()
            .map(|(ex, its)| Leg {
                exchange: Some(ex),
                items: its.iter().collect(),
                end: ex.end,
            })
            .collect();
        let verdict = classify(&open.request, &legs, Options::default());
        let done = !verdict.outcome.is_non_terminal();
        let call = &mut self.pending[open.call];
        if verdict.evidence.terminal_leg.is_some_and(|l| l > 0) {
            call.retry_origin = RetryOrigin::Resumption;
            call.resumed = true;
        }
        if let Some(t) = call.timeline.as_mut() {
            t.resumptions.push(leg);
        }
        call.ended_at = verdict.evidence.responded_at.or(call.ended_at);
        call.sse_retry_ms = legs
            .iter()
            .rev()
            .filter_map(|l| {
                match l
                    .exchange
                    .and_then(|e| e.response.as_ref())
                    .map(|r| &r.body)
                {
                    Some(Body::Sse(s)) => s.events.iter().rev().find_map(|e| e.retry),
                    _ => None,
                }
            })
            .next()
            .or(call.sse_retry_ms);
        call.verdict = verdict;
        call.compact_if_success();
        if done {
            self.open.remove(i);
        } else {
            self.bound_open();
        }
    }

    /// Keeps the cut streams waiting for a resumption within `MAX_OPEN_STREAMS` and
    /// `OPEN_STREAM_BYTES`: the oldest go first and stay STREAM_INCOMPLETE, with a
    /// note that says why. Calls waiting for the legacy GET stream are not here
    /// (`legacy`): they hold no bodies and wait for it.
    fn bound_open(&mut self) {
        while self.open.len() > MAX_OPEN_STREAMS || self.open.bytes > OPEN_STREAM_BYTES {
            let Some(o) = self.open.remove(0) else {
                break;
            };
            if let Some(c) = self.pending.get_mut(o.call) {
                c.verdict.evidence.notes.push(format!(
                    "cap: a resumption of this stream is no longer looked for (more than {MAX_OPEN_STREAMS} cut streams, or {} MiB of them, waited at once; a fixed limit)",
                    OPEN_STREAM_BYTES >> 20
                ));
            }
        }
    }

    /// RETRY_TOO_SOON: a reconnection sooner than the stream's SSE `retry` asked for
    /// (the client "MUST" wait that long: MCP 2025-11-25, Transports §Streamable HTTP).
    fn check_reconnect_delay(&mut self, i: usize, locator: &Locator, x: &HttpExchange) {
        let open = &self.open[i];
        let Some((prev, _)) = open.legs.last() else {
            return;
        };
        let asked = match prev.response.as_ref().map(|r| &r.body) {
            Some(Body::Sse(s)) => s.events.iter().rev().find_map(|e| e.retry),
            _ => None,
        };
        let ended = prev
            .end_ts
            .or_else(|| match prev.response.as_ref().map(|r| &r.body) {
                Some(Body::Sse(s)) => s.events.iter().rev().find_map(|e| e.ts),
                _ => None,
            });
        let (Some(asked), Some(ended), Some(again)) = (asked, ended, x.request.ts) else {
            return;
        };
        let waited = ended.millis_until(again);
        if waited < asked as i64 {
            let call = &self.pending[open.call];
            let obs = Observation::Reconnect {
                scope: open.scope.clone(),
                call: call.seq,
                id: call.id.clone(),
                locators: vec![call.locator.clone(), locator.clone()],
                waited_ms: waited,
                asked_ms: asked,
            };
            self.observe(obs);
        }
    }

    /// A call answered 202: joined to its session's stream if that has come, else
    /// it waits for it.
    fn legacy_call(&mut self, open: Open) {
        if let Some(si) = self.legacy.stream_index(&open.scope) {
            self.legacy_call_on(open, si);
        } else if self.legacy.gone.contains(&open.scope) {
            let gone = WaitedOut::LegacyStreams(MAX_LEGACY_STREAMS, LEGACY_STREAM_BYTES >> 20);
            self.legacy_unjoined(&open, Some(gone));
        } else {
            let l = &mut self.legacy;
            let captured = from_capture(&open);
            l.unwritten(captured).add(&open);
            l.waiting.entry(open.scope.clone()).or_default().push(open);
            let (calls, bytes, _) = unwritten_bound(captured);
            if l.unwritten(captured).past(calls, bytes) {
                self.stop_waiting_for_unseen_streams(captured);
            }
        }
    }

    /// Too many calls of a capture (`captured`) or of a log wait for a stream of
    /// their session. A capture hands a stream on as soon as it answers a call, so
    /// theirs began before the capture did (or could not be read); a log may write
    /// it after its POSTs, but not after this many. The oldest half are judged now.
    fn stop_waiting_for_unseen_streams(&mut self, captured: bool) {
        let l = &mut self.legacy;
        let mut all: Vec<Open> = Vec::new();
        for calls in l.waiting.values_mut() {
            let (these, other): (Vec<Open>, Vec<Open>) = std::mem::take(calls)
                .into_iter()
                .partition(|o| from_capture(o) == captured);
            *calls = other;
            all.extend(these);
        }
        l.waiting.retain(|_, calls| !calls.is_empty());
        let (older, newer) = oldest_half(all, |o| o);
        *l.unwritten(captured) = Held::of(newer.iter());
        let (_, _, waited_out) = unwritten_bound(captured);
        for open in newer {
            l.waiting.entry(open.scope.clone()).or_default().push(open);
        }
        // A 202 to a request at an endpoint with no legacy session in its URL is
        // Streamable HTTP's error, judged when it came (as `finish_legacy` has it).
        for open in older.iter().filter(|o| o.scope.kind() == ScopeKind::Legacy) {
            self.legacy_unjoined(open, Some(waited_out));
        }
        // They are final now: the next exchange releases them, rather than after as
        // many more calls as were waiting.
        self.release_at = 0;
    }

    /// A call answered 202, on its session's stream `si`: joined now, unless the
    /// stream goes on in parts and its response has not come yet.
    fn legacy_call_on(&mut self, open: Open, si: usize) {
        let stream = &mut self.legacy.streams[si];
        let id = open.request.id_or_null();
        if !stream.answers(&id) {
            if let Some(g) = stream.going.as_mut() {
                self.legacy.going_calls.add(&open);
                g.calls.entry(wait_key(&open)).or_default().push(open);
                if self.legacy.going_calls.over() {
                    self.wait_less_on_legacy_streams();
                }
                return;
            }
        }
        self.join_legacy(open, si);
    }

    /// Too many calls wait for their responses on streams that go on (a server that
    /// answers few of them): the oldest half are judged unanswered now.
    fn wait_less_on_legacy_streams(&mut self) {
        let mut all: Vec<(usize, Open)> = Vec::new();
        for (si, s) in self.legacy.streams.iter_mut().enumerate() {
            if let Some(g) = s.going.as_mut() {
                all.extend(g.calls.drain().flat_map(|(_, v)| v).map(|o| (si, o)));
            }
        }
        let (older, newer) = oldest_half(all, |(_, o)| o);
        let l = &mut self.legacy;
        l.going_calls = Held::of(newer.iter().map(|(_, o)| o));
        for (si, open) in newer {
            if let Some(g) = l.streams[si].going.as_mut() {
                g.calls.entry(wait_key(&open)).or_default().push(open);
            }
        }
        let waited_out = WaitedOut::LegacyCalls(MAX_GOING_CALLS, GOING_CALL_BYTES >> 20);
        for (_, open) in older {
            self.legacy_unjoined(&open, Some(waited_out));
        }
    }

    /// Calls leave the streams that go on: `Legacy`'s counts follow.
    fn going_calls_left<'a>(&mut self, calls: impl Iterator<Item = &'a Open>) {
        calls.for_each(|o| self.legacy.going_calls.remove(o));
    }

    /// A legacy GET stream, or the first part of one: indexed, held, and joined to
    /// the calls of its session that wait for it.
    fn legacy_stream(&mut self, mut stream: LegacyStream) {
        // Responses to initialize and tools/list ride this stream too.
        for r in stream.items.iter().filter_map(Item::message) {
            if let Some(result) = r.result() {
                self.note_tools(result);
            }
        }
        if let Some(g) = &stream.going {
            // Only responses are held of a stream handed on in parts; its exchange
            // stands for the stream's head and end, its events are in its items.
            self.legacy.parts.insert(
                g.key,
                self.legacy.first_serial + self.legacy.streams.len() as u64,
            );
            let items = std::mem::take(&mut stream.items);
            forget_events(&mut stream.exchange);
            stream.bytes = PART_HEAD_BYTES;
            for it in items.into_iter().filter(is_reply) {
                stream.hold(it);
            }
        } else {
            for (ii, it) in stream.items.iter().enumerate() {
                if let Some(rid) = it
                    .message()
                    .filter(|_| is_reply(it))
                    .and_then(|r| r.id.as_ref())
                {
                    stream
                        .index
                        .entry(loose_id(rid).into_owned())
                        .or_default()
                        .push(ii);
                }
            }
        }
        let l = &mut self.legacy;
        let serial = l.first_serial + l.streams.len() as u64;
        let first = !l.stream_of.contains_key(&stream.scope);
        if first {
            l.stream_of.insert(stream.scope.clone(), serial);
        }
        l.bytes += stream.bytes;
        let scope = stream.scope.clone();
        l.streams.push_back(stream);
        if first {
            if let Some(calls) = self.legacy.waiting.remove(&scope) {
                let si = self.legacy.streams.len() - 1;
                for o in &calls {
                    self.legacy.unwritten(from_capture(o)).remove(o);
                }
                for open in calls {
                    self.legacy_call_on(open, si);
                }
            }
        }
        self.let_go_of_legacy_streams();
    }

    /// Lets the oldest streams go while too many, or too many bytes, are held. A
    /// stream still going on in parts moves to the back instead, unless every stream
    /// held is one.
    fn let_go_of_legacy_streams(&mut self) {
        let mut moved = 0;
        while self.legacy.streams.len() > 1
            && (self.legacy.streams.len() > MAX_LEGACY_STREAMS
                || self.legacy.bytes > LEGACY_STREAM_BYTES)
        {
            let Some(mut old) = self.legacy.streams.pop_front() else {
                break;
            };
            let l = &mut self.legacy;
            let serial = l.first_serial;
            l.first_serial += 1;
            if let Some(g) = old.going.as_ref().filter(|_| moved <= l.streams.len()) {
                moved += 1;
                let now = l.first_serial + l.streams.len() as u64;
                l.parts.insert(g.key, now);
                if l.stream_of.get(&old.scope) == Some(&serial) {
                    l.stream_of.insert(old.scope.clone(), now);
                }
                l.streams.push_back(old);
                continue;
            }
            if l.stream_of.get(&old.scope) == Some(&serial) {
                l.stream_of.remove(&old.scope);
                if l.gone.len() >= MAX_LEGACY_GONE {
                    l.gone.clear();
                }
                l.gone.insert(old.scope.clone());
            }
            l.bytes -= old.bytes;
            if let Some(g) = old.going.take() {
                l.parts.remove(&g.key);
                let gone = WaitedOut::LegacyStreams(MAX_LEGACY_STREAMS, LEGACY_STREAM_BYTES >> 20);
                let calls: Vec<Open> = g.calls.into_values().flatten().collect();
                self.going_calls_left(calls.iter());
                for open in calls {
                    self.legacy_unjoined(&open, Some(gone));
                }
            }
            self.legacy_strays(&old);
        }
    }

    /// The next part of a legacy stream handed on in parts (`si`): its responses are
    /// held and joined to the calls that wait for them; past `HELD_REPLIES` the
    /// oldest responses no call took are let go (strays if no request of theirs is
    /// known), and the last part ends the calls still waiting.
    pub(super) fn legacy_part(
        &mut self,
        si: usize,
        mut x: HttpExchange,
        items: Vec<Item>,
    ) -> HttpExchange {
        for r in items.iter().filter_map(Item::message) {
            if let Some(result) = r.result() {
                self.note_tools(result);
            }
        }
        let more = x.part.is_some_and(|p| p.more);
        let l = &mut self.legacy;
        let stream = &mut l.streams[si];
        let Some(mut going) = stream.going.take() else {
            return x;
        };
        // What a call's leg on the stream reads of it: how far it went, and what its
        // parser met lately.
        let held = &mut stream.exchange;
        (held.end, held.end_ts, held.tcp) = (x.end, x.end_ts, x.tcp);
        held.recorder_note = x.recorder_note.take();
        let sse = |x: &mut HttpExchange| match x.response.as_mut().map(|r| &mut r.body) {
            Some(Body::Sse(s)) => Some(std::mem::take(s)),
            _ => None,
        };
        if let (Some(Body::Sse(h)), Some(part)) =
            (held.response.as_mut().map(|r| &mut r.body), sse(&mut x))
        {
            h.problems = part.problems;
            h.incomplete_tail = part.incomplete_tail;
        }
        l.bytes -= stream.bytes;
        let mut answered = Vec::new();
        for it in items.into_iter().filter(is_reply) {
            if let Some(calls) = it
                .message()
                .and_then(|m| m.id.as_ref())
                .and_then(|rid| going.calls.remove(&*loose_id(rid)))
            {
                answered.push(calls);
            }
            stream.hold(it);
        }
        l.bytes += stream.bytes;
        let calls = if more {
            stream.going = Some(going);
            Vec::new()
        } else {
            l.parts.remove(&going.key);
            going.calls.into_values().flatten().collect()
        };
        let leaving: Vec<Open> = answered.into_iter().flatten().chain(calls).collect();
        self.going_calls_left(leaving.iter());
        for open in leaving {
            self.legacy_call_on(open, si);
        }
        // Responses no call took wait for a POST recorded after them, within bounds.
        let l = &mut self.legacy;
        let stream = &mut l.streams[si];
        if stream.items.len() > 2 * HELD_REPLIES || stream.bytes > 2 * HELD_REPLY_BYTES {
            l.bytes -= stream.bytes;
            let old = stream.let_go_of_old_replies();
            l.bytes += stream.bytes;
            let (scope, locator) = (stream.scope.clone(), stream.locator.clone());
            self.stray_responses(&scope, &locator, old.iter());
        }
        x
    }

    /// Completes a legacy call from the stream `si` of its session.
    fn join_legacy(&mut self, open: Open, si: usize) {
        let stream = &mut self.legacy.streams[si];
        let id = open.request.id_or_null();
        let mut mine: Vec<usize> = Vec::new();
        for &ii in stream
            .index
            .get(&*loose_id(&id))
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            let Some(rid) = stream
                .items
                .get(ii)
                .and_then(|it| it.message()?.id.as_ref())
            else {
                continue;
            };
            if *rid == id || rid.differs_only_in_type(&id) {
                stream.used.insert(ii);
                mine.push(ii);
            }
        }
        let stream = &self.legacy.streams[si];
        let (post, _) = &open.legs[0];
        let carried = mine.len();
        let legs = [
            Leg {
                exchange: Some(post),
                items: vec![],
                end: post.end,
            },
            Leg {
                exchange: Some(&stream.exchange),
                items: mine.iter().map(|&ii| &stream.items[ii]).collect(),
                end: stream.exchange.end,
            },
        ];
        let mut verdict = classify(
            &open.request,
            &legs,
            Options {
                legacy_sse: true,
                ..Options::default()
            },
        );
        // A stream that goes on frees a response once taken (its slot stays, so
        // the positions in its index hold).
        let s = &mut self.legacy.streams[si];
        if s.going.is_some() {
            for &ii in &mine {
                let it = std::mem::replace(&mut s.items[ii], taken());
                s.bytes -= item_bytes(&it);
                self.legacy.bytes -= item_bytes(&it);
            }
        }
        let stream = &self.legacy.streams[si];
        let Some(call) = self.pending.get_mut(open.call) else {
            return;
        };
        // The call's own story, not the shared stream's: the events that carried
        // its messages, and "complete" once its response arrived.
        let ev = &mut verdict.evidence;
        ev.sse_events = carried;
        if verdict.outcome.is_non_terminal() {
            ev.responded_at = stream.exchange.end_ts.or(ev.responded_at);
        } else {
            ev.end = End::Complete;
        }
        // A recorder without per-event times dates every event by the stream's
        // start, which came before the POST: no time is better than a wrong one.
        let answered = ev
            .responded_at
            .filter(|t| call.started_at.is_none_or(|s| *t >= s));
        if ev.responded_at.is_some() && answered.is_none() {
            ev.notes
                .push("the recorder kept no time for the stream event that answered it".to_owned());
        }
        call.ended_at = answered;
        call.verdict = verdict;
    }

    /// Responses on a legacy stream that answer no request of its session.
    fn legacy_strays(&mut self, s: &LegacyStream) {
        let unused = s
            .items
            .iter()
            .enumerate()
            .filter(|(ii, _)| !s.used.contains(ii))
            .map(|(_, it)| it);
        self.stray_responses(&s.scope, &s.locator, unused);
    }

    /// Of these responses no call took on a legacy stream of `scope`, the ones that
    /// answer no request of the session.
    fn stray_responses<'a>(
        &mut self,
        scope: &Scope,
        locator: &Locator,
        items: impl Iterator<Item = &'a Item>,
    ) {
        for it in items {
            let Some(r) = it.message() else { continue };
            if r.kind() != Kind::Response {
                continue;
            }
            let id = r.id_or_null();
            // A long session's early ids are no longer held: a response to one of
            // them is not known to be a stray (an `initialize` answered hours ago).
            let known = self
                .requests
                .get(scope)
                .is_some_and(|m| m.contains_key(&id));
            if !known && !self.requests.may_have_forgotten(scope) {
                self.observe(Observation::StrayResponse {
                    scope: scope.clone(),
                    id,
                    request: None,
                    call: None,
                    locator: locator.clone(),
                    context: Stray::Legacy,
                });
            }
        }
    }

    /// A legacy call that no stream of its session can answer: none was recorded,
    /// or it was let go (`gone`). Its 202 is no transport error on this transport.
    fn legacy_unjoined(&mut self, open: &Open, gone: Option<WaitedOut>) {
        let (post, _) = &open.legs[0];
        let leg = Leg {
            exchange: Some(post),
            items: vec![],
            end: post.end,
        };
        let verdict = classify(
            &open.request,
            &[leg],
            Options {
                legacy_sse: true,
                waited_out: gone,
            },
        );
        if let Some(call) = self.pending.get_mut(open.call) {
            call.verdict = verdict;
        }
    }

    /// At the end of the input: the calls no stream came for, and the strays of the
    /// streams still held.
    pub(super) fn finish_legacy(&mut self) {
        let waiting = std::mem::take(&mut self.legacy.waiting);
        self.legacy.unseen_calls = Held::default();
        self.legacy.logged_calls = Held::default();
        for open in waiting.into_values().flatten() {
            // A 202 to a request at an endpoint with no legacy session in its URL is
            // Streamable HTTP's error, as judged when it came, not a legacy call.
            if open.scope.kind() == ScopeKind::Legacy {
                self.legacy_unjoined(&open, None);
            }
        }
        // A stream whose last part never came (none is lost in a capture read to
        // its end) ends the calls still waiting for it as the capture did.
        for si in 0..self.legacy.streams.len() {
            let s = &mut self.legacy.streams[si];
            if let Some(g) = s.going.take() {
                s.exchange.end = End::CaptureEnded;
                let calls: Vec<Open> = g.calls.into_values().flatten().collect();
                self.going_calls_left(calls.iter());
                for open in calls {
                    self.join_legacy(open, si);
                }
            }
        }
        self.legacy.parts.clear();
        let streams = std::mem::take(&mut self.legacy.streams);
        for s in &streams {
            self.legacy_strays(s);
        }
    }
}
