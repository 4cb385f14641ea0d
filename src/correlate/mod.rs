//! Correlate stage: a `Sink` that receives one input's exchanges in order, assembles
//! each `tools/call` with whatever answered it (its own HTTP response, a stdio reply),
//! asks the shared classifier for the verdict, and looks across calls for findings
//! (`docs/findings.md`). It keeps compact per-call records,
//! not bodies, so memory follows the number of calls, not the input size.

pub mod attempts;
mod client_log;
pub mod execution;
pub mod facts;
pub mod findings;
mod http;
mod ids;
pub mod judge;
pub mod observe;
pub mod rules;
pub mod scope;
mod stdio;
pub mod timeline;

use crate::classify::Verdict;
use crate::config::RetryWindows;
use crate::ingest::{Kind, Level, Problem, Sink};
use crate::jsonrpc::{write_canonical, Id, Item, Message};
use crate::model::{End, Exchange, FindingKind, Locator, Outcome, Payload, Severity, Timestamp};
use crate::text::kept_owned;
use foldhash::{HashMap, HashMapExt, HashSet};
use observe::{Observation, Stray};
pub use scope::{Scope, ScopeKind};
use serde_json::Value;
use std::sync::Arc;

/// How a call came to be sent, as far as the input shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryOrigin {
    /// A first attempt.
    None,
    /// An MRTR follow-up carrying `inputResponses`/`requestState`.
    Mrtr,
    /// Completed by a `Last-Event-ID` resumption stream.
    Resumption,
    /// Re-sent after a refusal that says the first attempt did not run (429, 503, 401, …).
    AfterRefusal,
    /// Re-sent after something the protocol says to re-send on (404 session expiry,
    /// -32020, -32022, a broken 2026 stream).
    Protocol,
    /// Re-sent after a first attempt that may have run.
    AfterFailure,
    /// Re-sent with nothing to explain it.
    Unexplained,
    /// The same call made again later, after a terminal result and other activity:
    /// a new intent, not a retry (counted, never a finding).
    Reinvocation,
}

impl RetryOrigin {
    /// A few words for a table cell (the field's value is `as_str`).
    pub fn words(self) -> &'static str {
        match self {
            RetryOrigin::None => "a first attempt",
            RetryOrigin::Mrtr => "an MRTR follow-up",
            RetryOrigin::Resumption => "completed by resuming its stream",
            RetryOrigin::AfterRefusal => "after a refusal",
            RetryOrigin::Protocol => "a re-send the protocol asks for",
            RetryOrigin::AfterFailure => "after an attempt that may have run",
            RetryOrigin::Unexplained => "nothing explains it",
            RetryOrigin::Reinvocation => "called again later, not a retry",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RetryOrigin::None => "none",
            RetryOrigin::Mrtr => "mrtr",
            RetryOrigin::Resumption => "resumption",
            RetryOrigin::AfterRefusal => "after_refusal",
            RetryOrigin::Protocol => "protocol",
            RetryOrigin::AfterFailure => "after_failure",
            RetryOrigin::Unexplained => "unexplained",
            RetryOrigin::Reinvocation => "reinvocation",
        }
    }
}

/// Tool annotations seen in a `tools/list` result (MCP 2025-06-18, schema `ToolAnnotations`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Annotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
}

impl Annotations {
    /// Safe to repeat: read-only, or idempotent. MCP's defaults make an unannotated
    /// tool non-idempotent and destructive.
    pub fn safe_to_repeat(self) -> bool {
        self.read_only == Some(true) || self.idempotent == Some(true)
    }

    pub fn destructive(self) -> bool {
        self.read_only != Some(true) && self.destructive != Some(false)
    }
}

/// One `tools/call` with its verdict and context.
#[derive(Debug, Clone)]
pub struct Call {
    /// Order of the request in the input.
    pub seq: usize,
    pub scope: Scope,
    /// The server endpoint (`host/path` for HTTP, `stdio`): repeats are looked for
    /// per endpoint, across sessions, since a replay after 404 lands in a new session.
    pub endpoint: Arc<str>,
    pub id: Id,
    /// Always `tools/call` today; kept so records name their method.
    pub method: &'static str,
    pub tool: Option<Arc<str>>,
    /// A 128-bit digest of the canonical JSON of `params.arguments`: repeats only
    /// compare arguments, and a digest keeps every call record the same small size.
    pub arguments: u128,
    pub verdict: Verdict,
    /// Where the request is in the input.
    pub locator: Locator,
    pub transport: Transport,
    /// `wire` or `client-log`: how strong the evidence behind the verdict is.
    pub evidence: &'static str,
    pub started_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    /// 1 for a first attempt; n for the n-th POST of the same tool and arguments.
    pub post_count: u32,
    pub retry_origin: RetryOrigin,
    pub protocol_version: Option<Arc<str>>,
    pub client: Option<Arc<str>>,
    pub server: Option<Arc<str>>,
    /// `Retry-After` of the response, in milliseconds.
    pub retry_after_ms: Option<u64>,
    /// SSE `retry` seen on the response stream, in milliseconds.
    pub sse_retry_ms: Option<u64>,
    /// An MRTR follow-up: carries `inputResponses` or `requestState`.
    pub mrtr_followup: bool,
    pub request_state: Option<String>,
    /// `requestState` the result handed back (INPUT_REQUIRED).
    pub returned_state: Option<String>,
    /// A `notifications/cancelled` for this id was sent (or, in 2026-07-28, the
    /// client closed the response stream first).
    pub cancelled: bool,
    /// The previous attempt of the same tool and arguments, if any.
    pub previous: Option<Box<facts::Previous>>,
    /// The wire story for reports (HTTP calls). Every `String` in `Call` is listed in
    /// `report::redact`, so a new one must be added there too.
    pub timeline: Option<Box<timeline::Timeline>>,
    /// The tool's annotations from a `tools/list` of the same input, if any.
    pub annotations: Option<Annotations>,
    /// Completed by a `Last-Event-ID` resumption stream.
    pub resumed: bool,
}

impl Call {
    /// Drops the detail a successful call does not need (its timeline, notification
    /// names, the result text), keeping counts and a short excerpt (a repeat's report
    /// still shows what came back). Successes are most calls of a large capture; this
    /// keeps a call record near 1 KB, so a 1 GB capture fits in well under 200 MB.
    pub fn compact_if_success(&mut self) {
        if self.verdict.outcome != Outcome::ToolSuccess {
            return;
        }
        let ev = &mut self.verdict.evidence;
        ev.result_text = None;
        ev.notifications = Vec::new();
        if let Some(x) = &mut ev.excerpt {
            if x.len() > 160 {
                x.truncate(crate::text::floor_boundary(x, 160));
                x.push('…');
            }
            x.shrink_to_fit();
        }
        // The wire story is for calls that need a look; a success keeps its counts
        // (`sse_events`, `end`, statuses) in the evidence. One completed by a
        // resumption keeps it: the cut and the resumed leg are its story (and rare).
        if self.retry_origin != RetryOrigin::Resumption {
            self.timeline = None;
        }
    }
}

impl Call {
    /// Takes stage 2's judgement of this call. A first attempt keeps the origin its
    /// pairer gave it (completed by a resumption).
    pub fn judged(&mut self, j: facts::Judgement) {
        self.post_count = j.post_count;
        if j.previous.is_some() {
            self.retry_origin = j.retry_origin;
        }
        self.previous = j.previous;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Http,
    Stdio,
    /// Seen only in a client's own log: the client's conclusion, not the wire.
    ClientLog,
}

impl Transport {
    /// The name records print (as serde writes it).
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Stdio => "stdio",
            Transport::ClientLog => "client_log",
        }
    }

    /// How strong the evidence behind a verdict is, for every output format.
    pub fn evidence(self) -> &'static str {
        match self {
            Transport::Http | Transport::Stdio => "wire",
            Transport::ClientLog => "client-log",
        }
    }
}

/// A finding across calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    pub scope: Scope,
    pub ids: Vec<Id>,
    /// `seq` of the calls concerned.
    pub calls: Vec<usize>,
    pub locators: Vec<Locator>,
    pub detail: String,
}

/// What one input yields.
#[derive(Debug, Default)]
pub struct Analysis {
    pub exchanges: u64,
    pub calls: Vec<Call>,
    pub findings: Vec<Finding>,
    pub problems: Vec<Problem>,
    /// Things worth knowing that are no error (a TLS flow beside the MCP traffic).
    pub notices: Vec<Problem>,
    /// What the pairers observed (few: one per anomaly), for a stage 2 run elsewhere.
    pub observations: Vec<Observation>,
    /// Each scope's peers and version, and each tool's annotations, as this input
    /// told them: a stage 2 run over several files shares them across the files.
    pub scope_info: Vec<(Scope, ScopeInfo)>,
    pub tools: Vec<(String, Annotations)>,
    /// Set when the calls were streamed to a `CallSink` (then `calls` is empty).
    pub streamed: Option<Streamed>,
    /// The `Mcp-Session-Id`s of the input's exchanges, sorted, the first
    /// `MAX_SESSION_IDS`: redaction replaces them wherever they appear (a problem
    /// may quote a line), whether or not a call kept its timeline.
    pub session_ids: Vec<String>,
}

/// Session ids an input remembers for redaction (about 100 bytes each); past it an
/// id quoted outside its header is caught only if a call kept it.
pub const MAX_SESSION_IDS: usize = 1 << 16;

/// Bytes of the session ids an input keeps together (each at most
/// `text::KEPT_TEXT`): real ids are tens of bytes.
pub const MAX_SESSION_ID_BYTES: usize = 8 << 20;

impl Analysis {
    /// Calls of the input, kept or streamed.
    pub fn call_count(&self) -> u64 {
        match &self.streamed {
            Some(s) => s.tally.calls,
            None => self.calls.len() as u64,
        }
    }

    /// Calls with outcome `o`, kept or streamed.
    pub fn outcome_count(&self, o: Outcome) -> u64 {
        match &self.streamed {
            Some(s) => Outcome::ALL
                .iter()
                .position(|x| *x == o)
                .and_then(|i| s.tally.outcomes.get(i))
                .copied()
                .unwrap_or(0),
            None => self.calls.iter().filter(|c| c.verdict.outcome == o).count() as u64,
        }
    }

    /// Re-invocations (the same call made again later), kept or streamed.
    pub fn reinvocations(&self) -> u64 {
        match &self.streamed {
            Some(s) => s.tally.reinvocations,
            None => self
                .calls
                .iter()
                .filter(|c| c.retry_origin == RetryOrigin::Reinvocation)
                .count() as u64,
        }
    }

    /// Every finding counted by kind and severity: held, on disk, or written and
    /// let go (`let_findings_go`).
    pub fn finding_counts(&self) -> findings::FindingCounts {
        let mut counts = findings::FindingCounts::default();
        for f in &self.findings {
            counts.add(f);
        }
        if let Some(s) = &self.streamed {
            counts.merge(&s.findings_let_go);
            if let Some(sp) = &s.findings {
                counts.merge(sp.counts());
            }
        }
        counts
    }

    /// Every finding in report order, held or read back from disk, as copies: for
    /// a report that sorts or looks them up (a streamed input's may be on disk).
    pub fn all_findings(&self) -> std::io::Result<Vec<Finding>> {
        let mut all = Vec::new();
        self.for_each_finding(|f| {
            all.push(f.clone());
            Ok(())
        })?;
        Ok(all)
    }

    /// Calls `f` with every finding in report order, held or read back from disk.
    pub fn for_each_finding(
        &self,
        mut f: impl FnMut(&Finding) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        for x in &self.findings {
            f(x)?;
        }
        match self.streamed.as_ref().and_then(|s| s.findings.as_ref()) {
            Some(sp) => sp.for_each(|x| f(&x)),
            None => Ok(()),
        }
    }

    /// Once a streamed input's records are written: its findings are only counted
    /// from then on, so a run's memory does not grow with the findings of its inputs.
    pub fn let_findings_go(&mut self) {
        let counts = self.finding_counts();
        let Some(s) = &mut self.streamed else {
            return;
        };
        s.findings_let_go = counts;
        s.findings = None;
        self.findings = Vec::new();
    }
}

/// What a scope's `initialize` (or `_meta`) said about its peers.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScopeInfo {
    pub protocol_version: Option<String>,
    pub client: Option<String>,
    pub server: Option<String>,
    /// When the scope last sent a request (`Correlator::exchanges`), for forgetting
    /// the idlest scopes of a long capture.
    #[serde(skip)]
    last: u64,
}

/// Scopes whose peers and version are kept; past it the idlest half is forgotten (a
/// session that comes back after that long is reported without them).
pub(super) const MAX_SCOPES: usize = 1 << 14;

#[derive(Debug)]
struct PendingStdio {
    /// The message came from a client-written log.
    client_log: bool,
    msg: Message,
    locator: Locator,
    ts: Option<Timestamp>,
    method: String,
    call: bool,
    /// The request's place in the transcript: its line, then its place in a batch.
    /// Requests still waiting are judged in this order (the map holding them has
    /// no order of its own, and a batch's requests share a line).
    arrival: u64,
    /// The one reply (not JSON, or another id) that came while this call was the only
    /// request outstanding, with the problem to report if its real response follows.
    attributed: Option<(crate::jsonrpc::Item, Option<Problem>)>,
}

/// Where judged calls go when they are not kept in `Analysis::calls`: one at a
/// time, in request order, each final (see `Correlator::streaming`).
pub trait CallSink: Send {
    fn call(&mut self, call: Call);
    /// `call`, handing the call back when the sink is done with it, for a caller that
    /// has it freed on the thread that made it. The default hands nothing back.
    fn call_returning(&mut self, call: Call) -> Option<Call> {
        self.call(call);
        None
    }
    /// What the sink made of the calls (a spool of records), at the end of the input.
    fn finish(self: Box<Self>) -> Box<dyn std::any::Any + Send>;
}

/// Counts of an input's calls, kept as they are judged, for summaries of calls that
/// were streamed out rather than kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub calls: u64,
    /// By `Outcome::ALL` position.
    pub outcomes: Vec<u64>,
    pub reinvocations: u64,
}

impl Tally {
    pub fn add(&mut self, c: &Call) {
        self.add_fact(Tally::fact(c));
    }

    /// What `add` counts of `c`, in a byte: its outcome's place in `Outcome::ALL`, and
    /// `REINVOCATION` for a re-invocation. For a caller that learns only later
    /// whether a call is to be counted.
    pub fn fact(c: &Call) -> u8 {
        let outcome = Outcome::ALL
            .iter()
            .position(|o| *o == c.verdict.outcome)
            .map_or(0x7f, |i| i as u8);
        let reinvocation = c.retry_origin == RetryOrigin::Reinvocation;
        outcome | if reinvocation { Tally::REINVOCATION } else { 0 }
    }

    /// The bit of a `fact` that marks a re-invocation.
    pub const REINVOCATION: u8 = 0x80;

    /// Counts a call from its `fact`, as `add` counts the call.
    pub fn add_fact(&mut self, fact: u8) {
        self.calls += 1;
        if self.outcomes.is_empty() {
            self.outcomes = vec![0; Outcome::ALL.len()];
        }
        if let Some(n) = self
            .outcomes
            .get_mut(usize::from(fact & !Tally::REINVOCATION))
        {
            *n += 1;
        }
        if fact & Tally::REINVOCATION != 0 {
            self.reinvocations += 1;
        }
    }
}

/// The calls of an input that went to a `CallSink` instead of `Analysis::calls`.
pub struct Streamed {
    pub tally: Tally,
    /// What the sink made of them (`CallSink::finish`).
    pub product: Box<dyn std::any::Any + Send>,
    /// The input's findings when there were too many to hold (`findings.rs`);
    /// `Analysis::findings` is then empty.
    pub findings: Option<findings::SpilledFindings>,
    /// Findings written and then let go (`Analysis::let_findings_go`), counted.
    pub findings_let_go: findings::FindingCounts,
}

impl std::fmt::Debug for Streamed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streamed")
            .field("tally", &self.tally)
            .finish_non_exhaustive()
    }
}

struct Emit(Box<dyn CallSink>);

impl std::fmt::Debug for Emit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Emit")
    }
}

/// Pending calls past which the oldest are judged and released before the input
/// ends (about 2 KB each); an input with fewer is judged whole at its end.
const RELEASE_AT: usize = 8192;
/// Calls released at a time once `RELEASE_AT` are pending: small steps keep the
/// work of judging and writing them even, so that on two threads the reading
/// thread does not wait behind a burst of thousands of records.
const RELEASE_STEP: usize = 1024;

/// Observations a streaming correlator lets wait before it looks them over between
/// releases of calls (`Correlator::observe`).
const OBSERVATIONS_STEP: usize = 4096;
/// Stdio requests that wait for their responses at most; past it the oldest
/// `RELEASE_STEP` are judged unanswered (`make_room_for_a_request`).
const STDIO_WAITING_AT_MOST: usize = RELEASE_AT;
const _: () = assert!(STDIO_WAITING_AT_MOST > RELEASE_STEP);
/// Bytes of stdio requests waiting for their responses; past it the oldest are
/// judged unanswered until half is left (requests of megabytes each, unanswered).
const STDIO_WAITING_BYTES: u64 = 64 << 20;
/// A call released early must have been requested this long before the latest
/// request seen: a capture delivers a call when it ends, so a slower call that
/// started earlier can still come (it is then judged late, out of order).
const LATENESS_MS: i64 = 120_000;

/// A pending call's place in request order: when it was requested, where it lies,
/// and its arrival number, which makes the key unique.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ReleaseKey(Option<Timestamp>, Locator, usize);

/// The correlating sink for one input.
#[derive(Debug, Default)]
pub struct Correlator {
    out: Analysis,
    seq: usize,
    scopes: HashMap<Scope, ScopeInfo>,
    annotations: HashMap<String, Annotations>,
    /// The last `tools/list` result learned from, byte for byte: a server answers
    /// every session with the same list, and the same bytes again teach nothing.
    last_tools_list: Option<Box<str>>,
    /// Tools listed past `MAX_TOOLS` names, whose annotations were not kept.
    tools_unkept: u64,
    /// The last request's `Mcp-Session-Id` and its scope (`http::scope_of`).
    last_session: Option<(Box<str>, Scope)>,
    /// Every `Mcp-Session-Id` seen, up to `MAX_SESSION_IDS` (`Analysis::session_ids`).
    session_ids: foldhash::HashSet<Box<str>>,
    /// Their bytes, up to `MAX_SESSION_ID_BYTES`.
    session_id_bytes: usize,
    /// stdio: client requests waiting for a response, by id.
    stdio_pending: HashMap<Id, PendingStdio>,
    /// The bytes of the requests in `stdio_pending` (`STDIO_WAITING_BYTES`).
    stdio_pending_bytes: u64,
    /// stdio: server requests waiting for the client's response.
    stdio_server_pending: HashMap<Id, ()>,
    stdio_answered: ids::RecentIds,
    stdio_process: u32,
    /// stdio requests seen, numbering `PendingStdio::arrival`.
    stdio_arrivals: u64,
    /// HTTP calls whose stream was cut, waiting for a resumption.
    open: http::OpenStreams,
    /// The legacy transport's GET streams, and the calls answered 202 that wait for
    /// them (kept apart from `open`, which is bounded and searched per exchange).
    legacy: http::Legacy,
    /// Standalone GET streams handed on in parts, more to come (and streams resuming
    /// one no call waits for): the reader's key to the stream's scope, when it began
    /// (`Analysis::exchanges`) and whether it resumes; past `MAX_SCOPES` the older
    /// half is forgotten.
    standalone: HashMap<u64, (Scope, u64, Stray)>,
    /// Streams resuming a cut call's stream, handed on in parts, joined again.
    rejoins: http::Rejoins,
    /// Request ids seen per scope, for ID_REUSED.
    requests: ids::IdLog,
    /// Scopes whose session ended with a 404, with when (`Analysis::exchanges`);
    /// past `MAX_SCOPES` the older half is forgotten.
    expired_scopes: HashMap<Scope, u64>,
    /// Problems and notices past `MAX_LISTED`, counted.
    unlisted_problems: u64,
    unlisted_notices: u64,
    /// `initialize`s seen per session-less endpoint scope (`http:HOST`), and when
    /// the scope was last seen; past `MAX_SCOPES` the idler half is forgotten (a
    /// host that comes back after that counts its clients from the first again).
    sessionless_inits: HashMap<Scope, (u32, u64)>,
    /// One shared copy of each string many calls repeat (scopes, tools, versions).
    interned: HashSet<Arc<str>>,
    /// What the pairers saw for the rules to judge, naming calls by their order of
    /// arrival until those are released (`released_obs` names them by final `seq`).
    observations: Vec<(u64, Observation)>,
    /// Observations whose calls were released, with their order of creation.
    released_obs: Vec<(u64, Observation)>,
    /// A streaming correlator's released observations that the rules judge alone
    /// (`Observation::reads_the_calls_judged`), waiting only for an older one of
    /// the same place to be released: they are judged in the order they were made,
    /// as they would be at the end, then let go, so that a log of a million stray
    /// responses holds none of them.
    judgeable_obs: Vec<(u64, Observation)>,
    observations_made: u64,
    /// How many observations may wait before a streaming correlator looks them over
    /// without a release of calls (`observe`).
    observations_release_at: usize,
    /// Stage 2, fed as calls are released.
    judge: judge::Judge,
    /// The final `seq` of the next call released.
    next_seq: usize,
    /// Calls judged so far, in request order (unless they go to `emit`).
    done: Vec<Call>,
    emit: Option<Emit>,
    tally: Tally,
    /// Calls not yet released, in order of arrival; boxed, so that a release moves
    /// pointers, not the calls it keeps (measured: 2.5% fewer instructions on a
    /// keep-alive capture than moving the calls themselves).
    #[allow(clippy::vec_box)]
    pending: Vec<Box<Call>>,
    /// What `release` orders `pending` by, one per pending call, side by side: on a
    /// large input the boxed calls are cold, and each release read all of them to
    /// sort and date them (the sort went from 0.75% to 0.2% of a 1 GB capture's
    /// samples).
    pending_keys: Vec<ReleaseKey>,
    /// Pending calls that trigger the next early release.
    release_at: usize,
    /// HTTP cancellations that came before the call they name, with when they were sent.
    early_cancels: HashMap<(Scope, Id), Option<Timestamp>>,
}

/// An exchange's JSON-RPC messages, decoded ahead of correlation: a run on two
/// threads decodes them on the reading thread, so JSON parsing (the larger part of
/// correlating) is shared between the cores.
pub struct Messages(Decoding);

enum Decoding {
    /// The request body's messages, the response's.
    Http(Vec<Item>, Vec<Item>),
    Stdio(Vec<Item>),
    /// Client-log records are read by their own correlator.
    Later,
}

impl Messages {
    /// Decodes the messages of `x` (what `Correlator::exchange` would decode).
    pub fn of(x: &Exchange) -> Messages {
        Messages(match &x.payload {
            Payload::Http(h) => {
                let (request, response) = http_messages(h);
                Decoding::Http(request, response)
            }
            Payload::Stdio(m) => Decoding::Stdio(stdio_messages(m)),
            Payload::ClientLog(_) => Decoding::Later,
        })
    }

    /// Nothing decoded yet: the correlator decodes the exchange itself.
    pub fn later() -> Messages {
        Messages(Decoding::Later)
    }

    /// False when the correlator will decode the exchange itself.
    pub fn is_decoded(&self) -> bool {
        !matches!(self.0, Decoding::Later)
    }
}

fn http_messages(h: &crate::model::HttpExchange) -> (Vec<Item>, Vec<Item>) {
    let request = crate::jsonrpc::decode_request(&h.request.body);
    let response = h
        .response
        .as_ref()
        .map(crate::jsonrpc::decode_response)
        .unwrap_or_default();
    (request, response)
}

fn stdio_messages(m: &crate::model::StdioMessage) -> Vec<Item> {
    if m.checked {
        crate::jsonrpc::decode_checked_text(&m.json, crate::jsonrpc::Place::Body, m.ts)
    } else {
        crate::jsonrpc::decode_text(&m.json, crate::jsonrpc::Place::Body, None, m.ts)
    }
}

impl Correlator {
    /// `Sink::exchange` with the messages of `x` already decoded (`Messages::of(&x)`;
    /// messages of another kind of exchange are ignored and these decoded again).
    pub fn exchange_decoded(&mut self, x: Exchange, messages: Messages) {
        drop(self.exchange_spent(x, messages));
    }

    /// `exchange_decoded`, handing back what the correlator did not keep of the
    /// exchange, for the caller to free where it was allocated: on two threads, a
    /// block freed by the thread that did not allocate it costs the allocator
    /// several times a local free (the reading thread frees it instead).
    pub fn exchange_spent(&mut self, x: Exchange, messages: Messages) -> Spent {
        if self.pending.len() >= self.release_at.max(RELEASE_AT) {
            self.release(false);
        }
        // A stream handed on in parts is one exchange.
        if !matches!(&x.payload, Payload::Http(h) if h.part.is_some_and(|p| p.index > 0)) {
            self.out.exchanges += 1;
        }
        match x.payload {
            Payload::Http(http) => {
                let (request, response) = match messages.0 {
                    Decoding::Http(request, response) => (request, response),
                    _ => http_messages(&http),
                };
                self.http(&x.locator, http, request, response)
            }
            Payload::Stdio(m) => {
                let items = match messages.0 {
                    Decoding::Stdio(items) => items,
                    _ => stdio_messages(&m),
                };
                let items = self.stdio(&x.locator, &m, items);
                Spent {
                    request: items,
                    stdio: Some(m),
                    ..Spent::default()
                }
            }
            Payload::ClientLog(c) => {
                self.client_log(&x.locator, c);
                Spent::default()
            }
        }
    }
}

/// What the correlator did not keep of an exchange (see `exchange_spent`): the
/// exchange itself unless a stream was kept, and its decoded messages.
#[derive(Default)]
pub struct Spent {
    pub exchange: Option<crate::model::HttpExchange>,
    pub request: Vec<Item>,
    pub response: Vec<Item>,
    /// A stdio line, whose messages are in `request`.
    pub stdio: Option<crate::model::StdioMessage>,
}

impl Sink for Correlator {
    fn exchange(&mut self, x: Exchange) {
        let messages = Messages::of(&x);
        self.exchange_decoded(x, messages);
    }

    fn problem(&mut self, mut p: Problem) {
        p.level = Level::Problem;
        // Bounded: a file of garbage lines must not keep a message per line.
        if self.out.problems.len() < MAX_LISTED {
            self.out.problems.push(p);
        } else {
            self.unlisted_problems += 1;
        }
    }

    fn notice(&mut self, mut p: Problem) {
        p.level = Level::Notice;
        if self.out.notices.len() < MAX_LISTED {
            self.out.notices.push(p);
        } else {
            self.unlisted_notices += 1;
        }
    }
}

/// A request's `params`, read once: the members the rules use, and the digest of
/// its canonical arguments (the costly part of judging a call). The id-reuse check,
/// the repeat rules and the call record all read them. Read through borrowed
/// slices, not a `Value` tree of the whole `params` (with order-keeping maps, that
/// tree was the larger part of correlating a small call).
#[derive(Default)]
pub(super) struct Params {
    /// `params.name` when a string.
    name: Option<String>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]` when a string, and
    /// `params._meta["io.modelcontextprotocol/clientInfo"]` parsed.
    pub(super) meta_version: Option<String>,
    pub(super) meta_client: Option<Value>,
    /// `params.protocolVersion` and `params.clientInfo`, parsed.
    pub(super) protocol_version: Option<Value>,
    pub(super) client_info: Option<Value>,
    /// `params.inputResponses` or `params.requestState` is present.
    mrtr: bool,
    /// `params.requestState` as compact JSON.
    pub(super) request_state: Option<String>,
    /// `arguments_key` of `params.arguments` (absent reads as `null`).
    pub(super) arguments: u128,
}

impl Params {
    pub(super) fn of(m: &Message) -> Params {
        Params::of_text(m.params())
    }

    /// `params` given as raw JSON; anything but an object reads as no members, as
    /// it would through `Value`.
    pub(super) fn of_text(text: Option<&str>) -> Params {
        let [name, arguments, meta, protocol_version, client_info, input_responses, request_state] =
            named(
                text,
                [
                    "name",
                    "arguments",
                    "_meta",
                    "protocolVersion",
                    "clientInfo",
                    "inputResponses",
                    "requestState",
                ],
            );
        let parse = |r: Option<&str>| r.and_then(|r| serde_json::from_str::<Value>(r).ok());
        let string = |r: Option<&str>| {
            r.filter(|r| r.starts_with('"'))
                .and_then(crate::json::string_value)
                .map(std::borrow::Cow::into_owned)
        };
        // Most `_meta` carry a progress token only: its members are found, not built.
        let [meta_version, meta_client] = named(
            meta,
            [
                "io.modelcontextprotocol/protocolVersion",
                "io.modelcontextprotocol/clientInfo",
            ],
        );
        let request_state = parse(request_state);
        Params {
            // Cut as the names of listed tools are (`note_tools`), so both still meet.
            name: string(name).map(|n| kept_owned(n, crate::text::KEPT_NAME)),
            meta_version: string(meta_version),
            meta_client: parse(meta_client),
            protocol_version: parse(protocol_version),
            client_info: parse(client_info),
            mrtr: input_responses.is_some() || request_state.is_some(),
            request_state: request_state.map(|v| kept_owned(v.to_string(), crate::text::KEPT_TEXT)),
            arguments: arguments_key_raw(arguments)
                .unwrap_or_else(|| arguments_key(&parse(arguments).unwrap_or(Value::Null))),
        }
    }

    /// `params.name` of a `tools/call`, when a string.
    pub(super) fn tool(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Equal for two requests of the same call: the same name and arguments.
    pub(super) fn call_key(&self) -> u64 {
        let a = self.arguments;
        fnv64(self.tool().unwrap_or("")) ^ (a as u64) ^ ((a >> 64) as u64).rotate_left(17)
    }

    /// An MRTR follow-up: it carries `inputResponses` or `requestState`.
    pub(super) fn is_mrtr_followup(&self) -> bool {
        self.mrtr
    }
}

/// The members named `names` of the JSON object `text`, as borrowed raw JSON (the
/// last of a name given twice, as in a `Value` map); all absent when `text` is not
/// an object, as a `Value` reading would find them. Found by the message scanner;
/// what it does not take (an escaped key) is read with serde_json.
fn named<'a, const N: usize>(
    text: Option<&'a str>,
    names: [&'static str; N],
) -> [Option<&'a str>; N] {
    if let Some(found) = text.and_then(|t| crate::jsonrpc::members_of(t, names)) {
        return found;
    }
    named_by_serde(text, names).map(|r| r.map(|r| r.get()))
}

fn named_by_serde<'a, const N: usize>(
    text: Option<&'a str>,
    names: [&'static str; N],
) -> [Option<&'a serde_json::value::RawValue>; N] {
    struct V<const N: usize>([&'static str; N]);
    impl<'de, const N: usize> serde::de::Visitor<'de> for V<N> {
        type Value = [Option<&'de serde_json::value::RawValue>; N];
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut found = [None; N];
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                match self.0.iter().position(|n| *n == key) {
                    Some(i) => found[i] = Some(map.next_value()?),
                    None => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(found)
        }
    }
    let read = |t: &'a str| {
        let mut de = serde_json::Deserializer::from_str(t);
        let found = serde::Deserializer::deserialize_map(&mut de, V(names))?;
        de.end().map(|()| found)
    };
    text.filter(|t| t.trim_start().starts_with('{'))
        .and_then(|t| read(t).ok())
        .unwrap_or([None; N])
}

/// The members of a `tools/list` result the rules read, borrowed: input schemas are
/// skipped, never built into `Value` trees (a session's tool list can be most of the
/// bytes an agent's short sessions carry).
#[derive(serde::Deserialize)]
struct ToolsList<'a> {
    #[serde(borrow)]
    tools: Option<Vec<&'a serde_json::value::RawValue>>,
}

/// One tool of a `tools/list`: anything but what it must be is read as absent, as
/// it would be through `Value`.
#[derive(serde::Deserialize)]
struct ListedTool {
    name: Option<Value>,
    annotations: Option<Value>,
}

/// Two independent 64-bit FNV-1a runs over what is written.
struct Fnv2(u64, u64);

impl Fnv2 {
    fn new() -> Fnv2 {
        Fnv2(0xcbf2_9ce4_8422_2325, 0x8422_2325_cbf2_9ce4)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
            self.1 = (self.1 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn digest(&self) -> u128 {
        ((self.0 as u128) << 64) | self.1 as u128
    }
}

impl std::io::Write for Fnv2 {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.bytes(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A digest of a call's canonical arguments, fed as the canonical text is written.
fn arguments_key(args: &Value) -> u128 {
    let mut h = Fnv2::new();
    // Hashing cannot fail.
    let _ = write_canonical(args, &mut h);
    h.digest()
}

/// `arguments_key` of raw JSON already checked (absent reads as `null`), written
/// from the text itself: most arguments are a few short strings and small integers,
/// and a `Value` of them (an order-keeping map that hashes every key) cost more than
/// the rest of reading the request. `None` for what the canonical form would write
/// otherwise than the text: an escape, a number other than a small integer, deep
/// nesting; those are read through a `Value`.
fn arguments_key_raw(text: Option<&str>) -> Option<u128> {
    let mut h = Fnv2::new();
    let Some(text) = text else {
        h.bytes(b"null");
        return Some(h.digest());
    };
    crate::jsonrpc::write_canonical_text(text, &mut h)?;
    Some(h.digest())
}

/// FNV-1a over `text`: stable across runs, for digests that are only compared.
pub(crate) fn fnv64(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Most problems (and notices) listed per input; the rest are counted.
const MAX_LISTED: usize = 1000;
/// Distinct shared strings (scopes, endpoints, tools) kept for sharing.
const MAX_INTERNED: usize = 1 << 14;
/// Tool names whose annotations are kept: far more than any server lists, and a
/// bound on what lists from many sessions (or a hostile input) can add.
const MAX_TOOLS: usize = 1 << 14;

/// A stable 16-hex-digit hash, so a session can be followed without printing its
/// id. It is also the session scope's key, and two sessions with one hash share
/// their ids: at 32 bits, 200,000 sessions held 8 such pairs, and a 10 GB capture
/// of healthy sessions showed 8 false ID_REUSED findings.
pub fn short_hash(text: &str) -> String {
    format!("{:016x}", crate::text::stable_hash(text))
}

fn info_name(v: Option<&Value>) -> Option<String> {
    let v = v?;
    let name = v.get("name")?.as_str()?;
    let named = match v.get("version").and_then(Value::as_str) {
        Some(ver) => format!("{name}@{ver}"),
        None => name.to_owned(),
    };
    Some(kept_owned(named, crate::text::KEPT_NAME))
}

pub(crate) fn parse_retry_after(value: &str) -> Option<u64> {
    // Delta-seconds only; an HTTP-date would need the response time, kept for later.
    value
        .trim()
        .parse::<u64>()
        .ok()
        .map(|s| s.saturating_mul(1000))
}

impl Correlator {
    pub fn new() -> Correlator {
        Correlator::default()
    }

    /// A correlator that judges repeats with these windows.
    pub fn with_windows(windows: RetryWindows) -> Correlator {
        Correlator {
            judge: judge::Judge::new(windows),
            ..Correlator::default()
        }
    }

    /// A correlator that hands each call to `sink` once it is judged, instead of
    /// keeping it in `Analysis::calls`: memory then follows the calls in flight and
    /// the retry windows, not the input.
    pub fn streaming(windows: RetryWindows, sink: Box<dyn CallSink>) -> Correlator {
        let mut c = Correlator {
            emit: Some(Emit(sink)),
            ..Correlator::with_windows(windows)
        };
        // Its findings are read back when its records are written, so a capture
        // whose every call fails need not hold one finding per call.
        c.judge.spill_findings();
        c
    }

    /// Records what a pairer saw, numbered so the rules see them in this order. A
    /// streaming correlator looks over them as they pile up, not only when calls are
    /// released: a log of stray responses and no calls would hold them all.
    fn observe(&mut self, o: Observation) {
        self.observations_made += 1;
        self.observations.push((self.observations_made, o));
        if self.emit.is_some() && self.observations.len() >= self.observations_release_at {
            self.release_observations(&HashMap::default(), false);
        }
    }

    /// A shared copy of `s`: a large capture's calls repeat a handful of scopes,
    /// endpoints, tools and versions, so each is stored once.
    fn intern(&mut self, s: &str) -> Arc<str> {
        intern_in(&mut self.interned, s)
    }

    fn note_request_meta(
        &mut self,
        scope: &Scope,
        method: &str,
        params: &Params,
        header: Option<&str>,
    ) {
        if self.scopes.len() > MAX_SCOPES {
            forget_older_half(&mut self.scopes, |i| i.last);
        }
        let now = self.out.exchanges;
        let info = self.scopes.entry(scope.clone()).or_default();
        info.last = now;
        if let Some(v) = params.meta_version.as_deref().or(header) {
            info.protocol_version = Some(kept_owned(v.to_owned(), crate::text::KEPT_NAME));
        }
        if let Some(c) = info_name(params.meta_client.as_ref()) {
            info.client = Some(c);
        }
        if method == "initialize" {
            if let Some(v) = params.protocol_version.as_ref().and_then(Value::as_str) {
                info.protocol_version
                    .get_or_insert_with(|| kept_owned(v.to_owned(), crate::text::KEPT_NAME));
            }
            if let Some(c) = info_name(params.client_info.as_ref()) {
                info.client = Some(c);
            }
        }
    }

    fn note_initialize_result(&mut self, scope: &Scope, req: &Message, items: &[Item]) {
        let Some(result) = items
            .iter()
            .filter_map(Item::message)
            .find(|r| r.id == req.id && r.result().is_some())
            .map(Message::result_value)
        else {
            return;
        };
        let info = self.scopes.entry(scope.clone()).or_default();
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            // The negotiated version wins.
            info.protocol_version = Some(kept_owned(v.to_owned(), crate::text::KEPT_NAME));
        }
        if let Some(s) = info_name(result.get("serverInfo")) {
            info.server = Some(s);
        }
    }

    fn note_tools_list(&mut self, req: &Message, items: &[Item]) {
        let Some(result) = items
            .iter()
            .filter_map(Item::message)
            .find(|r| r.id == req.id && r.result().is_some())
            .and_then(Message::result)
        else {
            return;
        };
        self.note_tools(result);
    }

    /// Learns the annotations of the tools a `tools/list` result lists; returns
    /// false when `result` has no `tools` list.
    fn note_tools(&mut self, result: &str) -> bool {
        // Only a list learned from is remembered, and `annotations` changes nowhere
        // else, so the same bytes would write the same entries again.
        if self.last_tools_list.as_deref() == Some(result) {
            return true;
        }
        let Ok(ToolsList { tools: Some(tools) }) = serde_json::from_str(result) else {
            return false;
        };
        self.last_tools_list = Some(result.into());
        for t in tools {
            let Ok(t) = serde_json::from_str::<ListedTool>(t.get()) else {
                continue;
            };
            let Some(Value::String(name)) = &t.name else {
                continue;
            };
            let name = crate::text::kept(name, crate::text::KEPT_NAME);
            let a = t.annotations.as_ref();
            let flag = |k: &str| a.and_then(|a| a.get(k)).and_then(Value::as_bool);
            let learned = Annotations {
                read_only: flag("readOnlyHint"),
                destructive: flag("destructiveHint"),
                idempotent: flag("idempotentHint"),
            };
            if let Some(known) = self.annotations.get_mut(&*name) {
                *known = learned;
            } else if self.annotations.len() < MAX_TOOLS {
                self.annotations.insert(name.into_owned(), learned);
            } else {
                self.tools_unkept += 1;
            }
        }
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn push_call(
        &mut self,
        m: &Message,
        params: &Params,
        scope: &Scope,
        locator: Locator,
        transport: Transport,
        verdict: Verdict,
        started_at: Option<Timestamp>,
        ended_at: Option<Timestamp>,
        retry_after_ms: Option<u64>,
        sse_retry_ms: Option<u64>,
    ) {
        let returned_state = if verdict.outcome == Outcome::InputRequired {
            // Kept byte for byte: MRTR follow-ups must echo it exactly (MCP 2026-07-28, Patterns §MRTR).
            verdict.evidence.request_state.clone()
        } else {
            None
        };
        let mrtr_followup = params.is_mrtr_followup();
        let id = m.id_or_null();
        if verdict.outcome == Outcome::ToolSuccess {
            if let Some(text) = verdict
                .evidence
                .result_text
                .as_deref()
                .filter(|t| crate::classify::reads_like_error(t))
            {
                self.observe(Observation::ErrorText {
                    scope: scope.clone(),
                    call: self.seq,
                    id: id.clone(),
                    tool: params.tool().unwrap_or_default().to_owned(),
                    locator: locator.clone(),
                    text: text.chars().take(200).collect(),
                });
            }
        }
        for stray in &verdict.evidence.stray_ids {
            let context = if stray.differs_only_in_type(&id) {
                Stray::TypeDrift
            } else if stray.is_null() {
                Stray::NullId
            } else if transport == Transport::Stdio {
                Stray::Attributed
            } else {
                Stray::OnCallStream
            };
            self.observe(Observation::StrayResponse {
                scope: scope.clone(),
                id: stray.clone(),
                request: Some(id.clone()),
                call: Some(self.seq),
                locator: locator.clone(),
                context,
            });
        }
        let scope_arc = scope.shared(self.intern(scope));
        let endpoint = self.intern(match transport {
            Transport::Stdio => "stdio",
            // Filled in by the HTTP and client-log correlators.
            Transport::Http | Transport::ClientLog => "",
        });
        let tool = params.tool().map(|t| self.intern(t));
        // Interned from where they lie: a copy of the scope's strings for each call
        // was three allocations.
        let info = self.scopes.get(scope);
        let interned = &mut self.interned;
        let mut shared = |v: Option<&String>| v.map(|v| intern_in(interned, v));
        let protocol_version = shared(info.and_then(|i| i.protocol_version.as_ref()));
        let client = shared(info.and_then(|i| i.client.as_ref()));
        let server = shared(info.and_then(|i| i.server.as_ref()));
        self.pending_keys
            .push(ReleaseKey(started_at, locator.clone(), self.seq));
        self.pending.push(Box::new(Call {
            seq: self.seq,
            scope: scope_arc,
            endpoint,
            id,
            method: "tools/call",
            tool,
            arguments: params.arguments,
            verdict,
            locator,
            transport,
            evidence: transport.evidence(),
            started_at,
            ended_at,
            post_count: 1,
            retry_origin: RetryOrigin::None,
            protocol_version,
            client,
            server,
            retry_after_ms,
            sse_retry_ms,
            mrtr_followup,
            request_state: params.request_state.clone(),
            returned_state,
            cancelled: false,
            previous: None,
            timeline: None,
            annotations: None,
            resumed: false,
        }));
        if transport != Transport::Http {
            if let Some(c) = self.pending.last_mut() {
                c.compact_if_success();
            }
        }
        self.seq += 1;
    }

    /// Judges and hands on pending calls in the order they were requested, numbering
    /// them so: all of them at the end of the input (`all`), else those requested
    /// `LATENESS_MS` before the latest request and, past `RELEASE_AT - RELEASE_STEP`
    /// still pending, the oldest. Calls still waiting for a resumption or the legacy stream
    /// stay. A capture records a call when its stream ends, so a long stream would
    /// otherwise come after calls sent later; observations follow the numbering.
    fn release(&mut self, all: bool) {
        let pending = self.pending.len();
        debug_assert_eq!(pending, self.pending_keys.len());
        let mut held = vec![false; pending];
        for o in self.open.iter().chain(self.legacy.waiting()) {
            if let Some(h) = held.get_mut(o.call) {
                *h = true;
            }
        }
        let mut order: Vec<usize> = (0..pending).filter(|&i| all || !held[i]).collect();
        // Calls come nearly in request order, which the stable sort finds in one pass;
        // the keys are unique, so any sort gives this order.
        let keys = &self.pending_keys;
        order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        let go = if all {
            order.len()
        } else {
            let latest = keys.iter().filter_map(|k| k.0).max();
            let by_time = latest.map_or(0, |latest| {
                order
                    .iter()
                    .take_while(|&&i| {
                        keys[i]
                            .0
                            .is_some_and(|t| t.millis_until(latest) > LATENESS_MS)
                    })
                    .count()
            });
            by_time.max(order.len().saturating_sub(RELEASE_AT - RELEASE_STEP))
        };
        // Each released call's place in the release order; the others stay pending
        // in their order, and the open streams' indices follow them.
        let mut rank = vec![usize::MAX; pending];
        for (r, &i) in order[..go].iter().enumerate() {
            rank[i] = r;
        }
        let mut kept = Vec::with_capacity(pending - go);
        let mut kept_keys = Vec::with_capacity(pending - go);
        let mut new_index = vec![usize::MAX; pending];
        let mut slots: Vec<Option<Box<Call>>> = Vec::with_capacity(go);
        slots.resize_with(go, || None);
        let keys = std::mem::take(&mut self.pending_keys);
        for ((i, c), k) in std::mem::take(&mut self.pending)
            .into_iter()
            .enumerate()
            .zip(keys)
        {
            match rank[i] {
                usize::MAX => {
                    new_index[i] = kept.len();
                    kept.push(c);
                    kept_keys.push(k);
                }
                r => slots[r] = Some(c),
            }
        }
        for o in self.open.iter_mut().chain(self.legacy.waiting_mut()) {
            o.call = new_index.get(o.call).copied().unwrap_or(usize::MAX);
        }
        self.pending = kept;
        self.pending_keys = kept_keys;
        let mut renumber: HashMap<usize, usize> = HashMap::with_capacity(go);
        let input: Arc<str> = Arc::from("");
        for mut c in slots.into_iter().flatten().map(|c| *c) {
            if c.verdict.outcome.is_non_terminal() && self.expired_scopes.contains_key(&*c.scope) {
                c.verdict.evidence.notes.push(
                    "its session was later ended (404 on a request carrying the session id)"
                        .to_owned(),
                );
            }
            c.annotations = c
                .tool
                .as_ref()
                .and_then(|t| self.annotations.get(&**t))
                .copied();
            renumber.insert(c.seq, self.next_seq);
            c.seq = self.next_seq;
            self.next_seq += 1;
            c.judged(self.judge.call(c.facts(&input)));
            self.tally.add(&c);
            match &mut self.emit {
                Some(Emit(sink)) => sink.call(c),
                None => self.done.push(c),
            }
        }
        // The next release comes after RELEASE_STEP more calls, or as many more as are
        // held, so that many held streams do not make each exchange sort them again.
        self.release_at =
            self.pending.len() + RELEASE_STEP.max(self.open.len() + self.legacy.waiting_count());
        self.release_observations(&renumber, all);
    }

    /// Makes final the observations that name a released call (`renumber`: its old
    /// `seq` to its final one) or none; with `all`, every one. A streaming
    /// correlator judges those its rules judge alone at once, in the order they were
    /// made, and lets them go.
    fn release_observations(&mut self, renumber: &HashMap<usize, usize>, all: bool) {
        let pending = std::mem::take(&mut self.observations);
        for (made, mut o) in pending {
            let call = match &mut o {
                Observation::StrayResponse { call: Some(c), .. } => Some(c),
                Observation::Reconnect { call, .. } | Observation::ErrorText { call, .. } => {
                    Some(call)
                }
                _ => None,
            };
            let ready = match call {
                None => true,
                Some(c) => match renumber.get(c) {
                    Some(&n) => {
                        *c = n;
                        true
                    }
                    None => all,
                },
            };
            if !ready {
                self.observations.push((made, o));
            } else if self.emit.is_some() && !o.reads_the_calls_judged() {
                self.judgeable_obs.push((made, o));
            } else {
                self.released_obs.push((made, o));
            }
        }
        if !self.judgeable_obs.is_empty() {
            // Findings are ordered by place and kind, and only among those of one
            // place as raised: one waits only for an older observation of its place.
            let waiting: HashSet<&Locator> = self
                .observations
                .iter()
                .filter_map(|(_, o)| o.locator())
                .collect();
            self.judgeable_obs.sort_by_key(|(m, _)| *m);
            let mut later = Vec::new();
            for (made, o) in std::mem::take(&mut self.judgeable_obs) {
                if o.locator().is_some_and(|l| waiting.contains(l)) {
                    later.push((made, o));
                } else {
                    self.judge.observe(&o);
                }
            }
            self.judgeable_obs = later;
        }
        // The next pass over them comes when as many more were made: observations
        // that wait for their calls are not looked at again for each new one.
        self.observations_release_at = OBSERVATIONS_STEP.max(2 * self.observations.len());
    }

    /// Ends the input: closes what is still open and runs the cross-call rules.
    pub fn finish(mut self) -> Analysis {
        self.flush_stdio_pending(End::CaptureEnded);
        if self.tools_unkept > 0 {
            self.out.notices.push(Problem::notice(
                Kind::Cap,
                Locator::Input,
                format!(
                    "cap: {} tools listed after {MAX_TOOLS} tool names were known kept no annotations (their calls are judged without readOnlyHint, destructiveHint or idempotentHint; a fixed limit)",
                    self.tools_unkept
                ),
            ));
        }
        if self.unlisted_problems > 0 {
            self.out.problems.push(Problem::cap(
                Locator::Input,
                format!(
                    "{} more problems in this input were not listed one by one",
                    self.unlisted_problems
                ),
            ));
        }
        if self.unlisted_notices > 0 {
            self.out.notices.push(Problem::notice(
                Kind::Cap,
                Locator::Input,
                format!(
                    "{} more notes were not listed one by one",
                    self.unlisted_notices
                ),
            ));
        }
        self.finish_rejoins();
        self.finish_legacy();
        self.release(true);
        self.out.calls = std::mem::take(&mut self.done);
        self.released_obs.sort_by_key(|(n, _)| *n);
        let observations: Vec<Observation> = self.released_obs.drain(..).map(|(_, o)| o).collect();
        let judge = std::mem::take(&mut self.judge);
        let spilled = match judge.finish_spilled(&observations) {
            Ok(s) => Some(s),
            Err(kept) => {
                self.out.findings = kept;
                None
            }
        };
        self.out.observations = observations;
        self.out.scope_info = self.scopes.into_iter().collect();
        self.out.scope_info.sort_by(|a, b| a.0.cmp(&b.0));
        self.out.tools = self.annotations.into_iter().collect();
        self.out.tools.sort_by(|a, b| a.0.cmp(&b.0));
        self.out.session_ids = self.session_ids.into_iter().map(String::from).collect();
        self.out.session_ids.sort();
        if let Some(Emit(sink)) = self.emit.take() {
            self.out.streamed = Some(Streamed {
                tally: std::mem::take(&mut self.tally),
                product: sink.finish(),
                findings: spilled,
                findings_let_go: Default::default(),
            });
        }
        self.out
    }
}

/// `s` shared with an equal text seen before; a function of the set alone, so that a
/// caller can intern what it borrows from another field of the correlator.
/// Keeps the newer half of `map` by the stamp `last` reads from each entry: for what
/// a long input adds to without end and needs less the older it is.
fn forget_older_half<K, V>(map: &mut HashMap<K, V>, last: impl Fn(&V) -> u64) {
    let mut stamps: Vec<u64> = map.values().map(&last).collect();
    if stamps.is_empty() {
        return;
    }
    let half = stamps.len() / 2;
    let cut = *stamps.select_nth_unstable(half).1;
    map.retain(|_, v| last(v) >= cut);
}

fn intern_in(interned: &mut HashSet<Arc<str>>, s: &str) -> Arc<str> {
    if let Some(a) = interned.get(s) {
        return a.clone();
    }
    // Sharing only saves memory: past the cap, start over rather than grow.
    if interned.len() >= MAX_INTERNED {
        interned.clear();
    }
    let a: Arc<str> = s.into();
    interned.insert(a.clone());
    a
}

#[cfg(test)]
mod tool_list_tests {
    use super::*;

    #[test]
    fn a_tool_list_is_read_leniently_as_through_value() {
        let result = r#"{"tools":[1,{"name":5},
                {"name":"a","annotations":{"readOnlyHint":"yes","destructiveHint":true},
                 "inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}},
                {"name":"b","annotations":null}],"nextCursor":"c"}"#;
        let mut c = Correlator::new();
        assert!(c.note_tools(result));
        assert_eq!(c.annotations.len(), 2, "{:?}", c.annotations);
        let a = c.annotations["a"];
        assert_eq!(
            (a.read_only, a.destructive, a.idempotent),
            (None, Some(true), None)
        );
        assert_eq!(c.annotations["b"].destructive, None);
        for not_a_list in [r#"{"tools":{"a":1}}"#, r#"{"content":[]}"#, "null", "[1]"] {
            assert!(!Correlator::new().note_tools(not_a_list), "{not_a_list}");
        }
    }

    #[test]
    fn tool_names_past_the_cap_keep_no_annotations_and_are_counted() {
        let list = |from: usize, n: usize| {
            let tools: Vec<String> = (from..from + n)
                .map(|i| format!(r#"{{"name":"t{i}","annotations":{{"readOnlyHint":true}}}}"#))
                .collect();
            format!(r#"{{"tools":[{}]}}"#, tools.join(","))
        };
        let mut c = Correlator::new();
        assert!(c.note_tools(&list(0, MAX_TOOLS + 10)));
        assert_eq!(c.annotations.len(), MAX_TOOLS);
        assert_eq!(c.tools_unkept, 10);
        // A known name is still updated past the cap.
        let again = r#"{"tools":[{"name":"t0","annotations":{"readOnlyHint":false}}]}"#;
        assert!(c.note_tools(again));
        assert_eq!(c.annotations["t0"].read_only, Some(false));
        let a = c.finish();
        assert_eq!(a.notices.len(), 1, "{:?}", a.notices);
        assert!(a.notices[0].message.contains("10 tools listed after 16384"));
        assert!(a.problems.is_empty());
    }

    #[test]
    fn a_list_seen_again_after_another_is_learned_again() {
        let list = |hint: bool| {
            format!(r#"{{"tools":[{{"name":"a","annotations":{{"readOnlyHint":{hint}}}}}]}}"#)
        };
        let mut c = Correlator::new();
        for (hint, expect) in [(true, true), (true, true), (false, false), (true, true)] {
            assert!(c.note_tools(&list(hint)));
            assert_eq!(c.annotations["a"].read_only, Some(expect));
        }
        // A result that is no list is not remembered as one.
        assert!(!c.note_tools("{}") && !c.note_tools("{}"));
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    /// What the rules read of `params`, taken from a whole `Value` as before the
    /// borrowed view: the view must read every shape the same.
    fn through_value(text: Option<&str>) -> (Option<String>, bool, Option<String>, u128, String) {
        let v: Value = text
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null);
        (
            v.get("name").and_then(Value::as_str).map(str::to_owned),
            v.get("inputResponses").is_some() || v.get("requestState").is_some(),
            v.get("requestState").map(|r| r.to_string()),
            arguments_key(v.get("arguments").unwrap_or(&Value::Null)),
            format!(
                "{:?} {:?} {:?} {:?}",
                v.get("_meta")
                    .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
                    .and_then(Value::as_str),
                v.get("_meta")
                    .and_then(|m| m.get("io.modelcontextprotocol/clientInfo")),
                v.get("protocolVersion"),
                v.get("clientInfo")
            ),
        )
    }

    #[test]
    fn the_borrowed_view_reads_params_as_a_value_does() {
        for text in [
            None,
            Some("null"),
            Some("[1,2]"),
            Some(r#""name""#),
            Some("{}"),
            Some(r#"{"name":"t","arguments":{"b":1,"a":[true,null]}}"#),
            Some(r#"{"name":"a","name":"b","arguments":1,"arguments":{"x":"y"}}"#),
            Some(r#"{"name":7,"requestState":null}"#),
            Some(r#"{"name":"t","requestState":{ "k" : [1, 2.50] },"inputResponses":{}}"#),
            Some(r#"{"inputResponses":[],"other":{"deep":[{"x":1}]}}"#),
            Some(
                r#"{"protocolVersion":"2025-06-18","clientInfo":{"name":"c","version":"1"},"_meta":{"progressToken":3}}"#,
            ),
            Some(r#" { "name" : "\u0074" } "#),
            Some(
                r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientInfo":{"name":"x"},"progressToken":"p"}}"#,
            ),
            Some(
                r#"{"_meta":{"io.modelcontextprotocol\/protocolVersion":7,"io.modelcontextprotocol/protocolVersion":"v2"}}"#,
            ),
            Some(r#"{"_meta":["io.modelcontextprotocol/protocolVersion"]}"#),
            Some(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":{"x":1}},"name":null}"#),
        ] {
            let p = Params::of_text(text);
            let got = (
                p.tool().map(str::to_owned),
                p.is_mrtr_followup(),
                p.request_state.clone(),
                p.arguments,
                format!(
                    "{:?} {:?} {:?} {:?}",
                    p.meta_version, p.meta_client, p.protocol_version, p.client_info
                ),
            );
            assert_eq!(got, through_value(text), "{text:?}");
        }
    }
}

#[cfg(test)]
mod hash_tests {
    use super::short_hash;
    use proptest::prelude::*;

    /// JSON values as real arguments write them, and the forms the canonical text
    /// writes otherwise: escapes, fractions, exponents, `-0`, long integers,
    /// duplicate names, whitespace, nesting.
    fn json() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("false".to_owned()),
            "-?(0|[1-9][0-9]{0,20})".prop_map(|s| s),
            "-?[0-9]\\.[0-9]{1,3}([eE][+-]?[0-9])?".prop_map(|s| s),
            Just("-0".to_owned()),
            "\"([a-z/ é]|\\\\[n\"\\\\/]|\\\\u00[4-6][0-9a-f]){0,6}\"".prop_map(|s| s),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5)
                    .prop_map(|v| format!("[{}]", v.join(" , "))),
                prop::collection::vec(("[a-c]{1,2}|\"", inner), 0..5).prop_map(|m| {
                    let members: Vec<String> = m
                        .into_iter()
                        .map(|(k, v)| {
                            let k = if k == "\"" { "b\\u0061".to_owned() } else { k };
                            format!("\"{k}\":{v}")
                        })
                        .collect();
                    format!("{{ {} }}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        /// The digest written from the text is the one written from a `Value`,
        /// and the text is used for most plain arguments (checked to fail with
        /// duplicate names kept first, or with `-0` written as it is).
        #[test]
        fn arguments_digested_from_text_match_the_value(texts in prop::collection::vec(json(), 1..8)) {
            for t in &texts {
                let v: serde_json::Value = serde_json::from_str(t).unwrap();
                let want = super::arguments_key(&v);
                if let Some(got) = super::arguments_key_raw(Some(t)) {
                    prop_assert_eq!(got, want, "{}", t);
                }
            }
        }
    }

    #[test]
    fn plain_arguments_are_digested_from_their_text() {
        for t in [
            r#"{"path":"a/b","n":3,"flags":[true,null]}"#,
            "null",
            "[]",
            "{}",
            r#" { "b" : 1 , "a" : 2 , "b" : 3 } "#,
        ] {
            let v: serde_json::Value = serde_json::from_str(t).unwrap();
            assert_eq!(
                super::arguments_key_raw(Some(t)),
                Some(super::arguments_key(&v)),
                "{t}"
            );
        }
        assert_eq!(
            super::arguments_key_raw(None),
            Some(super::arguments_key(&serde_json::Value::Null))
        );
        for t in [
            r#"{"a":1.5}"#,
            r#"{"a":-0}"#,
            r#"{"a\u0062":1}"#,
            "12345678901234567890",
        ] {
            assert_eq!(super::arguments_key_raw(Some(t)), None, "{t}");
        }
    }

    #[test]
    fn the_arguments_digest_is_the_digest_of_the_canonical_text() {
        let fnv = |offset: u64, text: &str| {
            text.bytes()
                .fold(offset, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
        };
        for args in [
            r#"{"b":[1,{"z":null,"a":"\u00e9\n\"q\""}],"a":2.5e3}"#,
            r#"{"path":"d/1/2"}"#,
            r#"["x",true,{}]"#,
            "null",
        ] {
            let v: serde_json::Value = serde_json::from_str(args).unwrap();
            let canon = crate::jsonrpc::canonical_json(&v);
            let want = ((fnv(0xcbf2_9ce4_8422_2325, &canon) as u128) << 64)
                | fnv(0x8422_2325_cbf2_9ce4, &canon) as u128;
            assert_eq!(super::arguments_key(&v), want, "{args}");
        }
        // Key order does not matter; values do.
        let key = |t: &str| super::arguments_key(&serde_json::from_str(t).unwrap());
        assert_eq!(key(r#"{"a":1,"b":2}"#), key(r#"{"b":2,"a":1}"#));
        assert_ne!(key(r#"{"a":1,"b":2}"#), key(r#"{"a":2,"b":1}"#));
    }

    #[test]
    fn session_hashes_do_not_collide_at_archive_scale() {
        // At 32 bits, 200,000 ids like these give a few collisions; each merged two
        // sessions' ids into one scope.
        let mut seen = std::collections::HashSet::new();
        for i in 0..200_000u32 {
            let h = short_hash(&format!("sess-{i:08x}"));
            assert_eq!(h.len(), 16);
            assert!(seen.insert(h), "session {i}");
        }
        assert_eq!(short_hash("s1"), short_hash("s1"));
    }

    #[test]
    fn ids_alike_get_hashes_that_look_apart() {
        // A reader tells sessions apart by the first digits: ids that differ only at
        // the end must not share them (plain FNV gave 88 prefixes for these 1,000).
        let prefixes: std::collections::HashSet<String> = (0..1000)
            .map(|i| short_hash(&format!("sess-{i:08x}"))[..4].to_owned())
            .collect();
        assert!(prefixes.len() > 950, "{}", prefixes.len());
    }
}

#[cfg(test)]
mod spent_tests {
    use super::*;
    use crate::model::{Body, HttpExchange, HttpRequest, HttpResponse, Locator};

    /// A transcript line `n` carrying `json`, sent in direction `dir`.
    fn stdio_line(n: u64, dir: crate::model::Direction, json: &str) -> Exchange {
        Exchange {
            locator: Locator::Line { line: n },
            payload: Payload::Stdio(crate::model::StdioMessage {
                dir: Some(dir),
                json: json.to_owned(),
                checked: false,
                ts: None,
                logged_by_client: false,
            }),
        }
    }

    fn exchange(method: &str, request: &str, response: &str) -> Exchange {
        Exchange {
            locator: Locator::Entry { entry: 1 },
            payload: Payload::Http(HttpExchange {
                request: HttpRequest {
                    method: method.to_owned(),
                    url: "http://h/mcp".to_owned(),
                    body: request.as_bytes().to_vec(),
                    ..HttpRequest::default()
                },
                response: Some(HttpResponse {
                    status: 200,
                    body: Body::Bytes(response.as_bytes().to_vec()),
                    ..HttpResponse::default()
                }),
                ..HttpExchange::default()
            }),
        }
    }

    /// Session ids are kept for redaction as at most their first `KEPT_TEXT`
    /// bytes, and `MAX_SESSION_ID_BYTES` together: a megabyte id cannot make the
    /// input's set, or a failed call's timeline, or the queue between the threads,
    /// hold a megabyte (500 such sessions took 819 MB).
    #[test]
    fn long_session_ids_are_kept_as_their_first_bytes_and_bounded_together() {
        let with_id = |sid: &str, id: usize| {
            let mut x = exchange(
                "POST",
                &format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t","arguments":{{"i":{id}}}}}}}"#
                ),
                "not json",
            );
            if let Payload::Http(h) = &mut x.payload {
                h.request.headers.push("Mcp-Session-Id", sid);
            }
            x
        };
        let long = "s".repeat(100_000);
        let x = with_id(&long, 0);
        assert!(
            x.body_bytes() >= 100_000,
            "the queue between threads counts it"
        );
        let mut c = Correlator::new();
        c.exchange(x);
        let each = crate::text::KEPT_TEXT;
        for i in 1..=(MAX_SESSION_ID_BYTES / each + 10) {
            c.exchange(with_id(&format!("{i:0each$}"), i));
        }
        let a = c.finish();
        assert!(a.session_ids.iter().all(|s| s.len() <= each));
        let bytes: usize = a.session_ids.iter().map(|s| s.len()).sum();
        assert!(bytes <= MAX_SESSION_ID_BYTES && bytes > MAX_SESSION_ID_BYTES - 2 * each);
        let timeline = a.calls[0]
            .timeline
            .as_ref()
            .expect("a failed call keeps its timeline");
        assert_eq!(timeline.session_id.as_deref().map(str::len), Some(each));
    }

    #[test]
    fn what_is_not_kept_is_handed_back_and_a_get_stream_is_kept() {
        let mut c = Correlator::new();
        let post = exchange(
            "POST",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
        );
        let m = Messages::of(&post);
        let spent = c.exchange_spent(post, m);
        assert_eq!(
            spent.exchange.map(|x| x.request.method).as_deref(),
            Some("POST")
        );
        assert_eq!((spent.request.len(), spent.response.len()), (1, 1));
        let get = exchange("GET", "", r#"{"jsonrpc":"2.0","id":9,"result":{}}"#);
        let m = Messages::of(&get);
        // A GET stream is the correlator's to keep.
        let spent = c.exchange_spent(get, m);
        assert!(spent.exchange.is_none() && spent.response.is_empty());
        let a = c.finish();
        assert_eq!((a.exchanges, a.calls.len()), (2, 1));
    }

    /// A stdio line and its messages go back too, the call still judged from the
    /// messages the correlator keeps of its own.
    #[test]
    fn a_stdio_line_is_handed_back_with_its_messages() {
        use crate::model::Direction;
        let mut c = Correlator::new();
        let line = stdio_line;
        let lines = [
            line(
                1,
                Direction::ClientToServer,
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            ),
            line(
                2,
                Direction::ServerToClient,
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#,
            ),
        ];
        for x in lines {
            let m = Messages::of(&x);
            let spent = c.exchange_spent(x, m);
            assert!(spent.stdio.is_some_and(|m| m.json.contains(r#""id":1"#)));
            assert_eq!(spent.request.len(), 1);
        }
        let a = c.finish();
        assert_eq!(a.calls.len(), 1);
        assert_eq!(a.calls[0].verdict.outcome, Outcome::ToolError);
    }

    /// A `tools/call` POSTed to the legacy transport's session `sid`, answered 202.
    fn legacy_post(line: u64, sid: &str, id: u64) -> Exchange {
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t"}}}}"#
        );
        Exchange {
            locator: Locator::Line { line },
            payload: Payload::Http(HttpExchange {
                request: HttpRequest {
                    method: "POST".to_owned(),
                    url: format!("http://h/messages/?session_id={sid}"),
                    body: request.into_bytes(),
                    ..HttpRequest::default()
                },
                response: Some(HttpResponse {
                    status: 202,
                    body: Body::Bytes(b"Accepted".to_vec()),
                    ..HttpResponse::default()
                }),
                ..HttpExchange::default()
            }),
        }
    }

    /// A 200 whose body is the event stream `events`.
    fn sse_ok(events: &str) -> HttpResponse {
        HttpResponse {
            status: 200,
            body: Body::Sse(crate::sse::parse_body(
                events.as_bytes(),
                crate::sse::Budget::default(),
            )),
            ..HttpResponse::default()
        }
    }

    /// The legacy GET stream of session `sid`, carrying results for `ids`.
    fn legacy_get(line: u64, sid: &str, ids: impl Iterator<Item = u64>) -> Exchange {
        let mut events = format!("event: endpoint\ndata: /messages/?session_id={sid}\n\n");
        for id in ids {
            events.push_str(&format!(
                "data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[]}}}}\n\n"
            ));
        }
        Exchange {
            locator: Locator::Line { line },
            payload: Payload::Http(HttpExchange {
                request: HttpRequest {
                    method: "GET".to_owned(),
                    url: "http://h/sse".to_owned(),
                    ..HttpRequest::default()
                },
                response: Some(sse_ok(&events)),
                ..HttpExchange::default()
            }),
        }
    }

    /// Part `index` of the legacy stream `key` (the first announces session `sid`),
    /// carrying results for `ids` and a log notification.
    fn legacy_part(key: u64, index: u32, more: bool, sid: &str, ids: &[u64]) -> Exchange {
        let mut x = legacy_get(key, sid, ids.iter().copied());
        let Payload::Http(h) = &mut x.payload else {
            unreachable!()
        };
        let Some(Body::Sse(sse)) = h.response.as_mut().map(|r| &mut r.body) else {
            unreachable!()
        };
        if index > 0 {
            sse.events.remove(0);
        }
        sse.events.extend(
            crate::sse::parse_body(
                b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n",
                crate::sse::Budget::default(),
            )
            .events,
        );
        h.part = Some(crate::model::StreamPart {
            stream: key,
            index,
            more,
        });
        if !more {
            h.end = End::Closed;
        }
        x
    }

    /// Part `index` of the standalone GET stream `key` of session `sid` (its first
    /// part has the request's headers; later ones none), carrying results for `ids`
    /// and a log notification.
    fn standalone_part(key: u64, index: u32, more: bool, sid: &str, ids: &[u64]) -> Exchange {
        let mut x = legacy_part(key, index, more, "", ids);
        let Payload::Http(h) = &mut x.payload else {
            unreachable!()
        };
        let Some(Body::Sse(sse)) = h.response.as_mut().map(|r| &mut r.body) else {
            unreachable!()
        };
        if index == 0 {
            sse.events.remove(0);
            h.request.headers.push("Mcp-Session-Id", sid);
        }
        x
    }

    /// A standalone GET stream handed on in parts: a response in a later part,
    /// which carries no headers, is a stray of the session its first part named;
    /// its last part lets the stream go; and the streams remembered are bounded.
    #[test]
    fn a_standalone_stream_in_parts_is_read_in_its_first_parts_scope() {
        let strays = |c: &Correlator| -> Vec<String> {
            c.observations
                .iter()
                .chain(c.released_obs.iter())
                .filter_map(|(_, o)| match o {
                    Observation::StrayResponse { scope, id, .. } => Some(format!("{scope} {id}")),
                    _ => None,
                })
                .collect()
        };
        let mut c = Correlator::new();
        c.exchange(standalone_part(7, 0, true, "s9", &[]));
        c.exchange(standalone_part(7, 1, true, "", &[]));
        assert!(strays(&c).is_empty());
        c.exchange(standalone_part(7, 2, true, "", &[5]));
        let s9 = Scope::session("s9");
        assert_eq!(strays(&c), [format!("{s9} 5")]);
        c.exchange(standalone_part(7, 3, false, "", &[6]));
        assert_eq!(strays(&c), [format!("{s9} 5"), format!("{s9} 6")]);
        assert!(c.standalone.is_empty(), "the last part lets it go");
        // A part of a stream no longer remembered is counted, not read.
        c.exchange(standalone_part(7, 4, true, "", &[8]));
        assert_eq!(strays(&c).len(), 2);
        assert_eq!(c.out.exchanges, 1, "one stream, one exchange");
        for key in 100..100 + 3 * MAX_SCOPES as u64 {
            c.exchange(standalone_part(key, 0, true, &format!("s{key}"), &[]));
            assert!(c.standalone.len() <= MAX_SCOPES);
        }
    }

    /// A stream resuming a cut call's stream, handed on in parts, is joined again
    /// within a budget: past `REJOIN_EVENTS` its parts keep only what may answer a
    /// call, so the notifications of a stream that goes on hold nothing more, and
    /// the response that comes at last still ends the call.
    #[test]
    fn a_resumed_stream_in_parts_is_joined_within_a_budget() {
        let note = |k: usize| {
            format!("id: e{k}\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":1,\"progress\":{k}}}}}\n\n")
        };
        let part = |index: u32, more: bool, events: &str| {
            let mut request = HttpRequest {
                method: "GET".to_owned(),
                ..HttpRequest::default()
            };
            if index == 0 {
                request.url = "http://h/mcp".to_owned();
                request.headers.push("Mcp-Session-Id", "s1");
                request.headers.push("Last-Event-ID", "e1");
            }
            Exchange {
                locator: Locator::Line { line: 2 },
                payload: Payload::Http(HttpExchange {
                    request,
                    response: Some(sse_ok(events)),
                    end: if more { End::Complete } else { End::Closed },
                    part: Some(crate::model::StreamPart {
                        stream: 9,
                        index,
                        more,
                    }),
                    ..HttpExchange::default()
                }),
            }
        };
        let mut c = Correlator::new();
        // The call's stream: one event, then cut.
        let mut post = exchange(
            "POST",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
            "",
        );
        if let Payload::Http(h) = &mut post.payload {
            h.request.headers.push("Mcp-Session-Id", "s1");
            h.response = Some(sse_ok(&note(1)));
            h.end = End::Reset;
        }
        c.exchange(post);
        assert_eq!(c.open.len(), 1);
        let many = |from: usize| (from..from + 1000).map(note).collect::<String>();
        c.exchange(part(0, true, &many(2)));
        assert_eq!(c.rejoins.len(), 1);
        let mut held = Vec::new();
        for i in 1..20u32 {
            c.exchange(part(i, true, &many(2 + 1000 * i as usize)));
            held.push(c.rejoins.held_bytes());
        }
        // Past 10,000 events no notification is held.
        assert!(held[10..].windows(2).all(|w| w[0] == w[1]), "{held:?}");
        assert!(held[0] < held[8], "{held:?}");
        c.exchange(part(
            20,
            false,
            "id: eR\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n",
        ));
        assert_eq!(c.rejoins.len(), 0);
        assert_eq!(c.rejoins.held_bytes(), 0);
        assert!(c.open.is_empty(), "the response ended the call");
        assert_eq!(c.out.exchanges, 2, "one stream, one exchange");
        let a = c.finish();
        assert_eq!(a.calls[0].verdict.outcome, Outcome::ToolSuccess);
        assert!(a.calls[0].resumed);
        let told = format!("{:?}", a.calls[0]);
        assert!(
            told.contains("only the events that may answer a call"),
            "{told}"
        );
    }

    /// A legacy stream handed on in parts: a call is joined as soon as its response
    /// has come, whether its POST came before the part or just after it; a response
    /// that no call took is held, and let go once newer ones push it out, a stray
    /// then and only then; the
    /// last part ends the calls still waiting as the stream ended; a part of a
    /// stream not held is dropped; and the stream counts as one exchange.
    #[test]
    fn a_legacy_stream_in_parts_joins_calls_as_their_responses_come() {
        let mut c = Correlator::new();
        let ok = |c: &Correlator, id: u64| {
            c.pending
                .iter()
                .map(|k| &**k)
                .chain(c.done.iter())
                .find(|k| k.id.to_string() == id.to_string())
                .is_some_and(|k| k.verdict.outcome == Outcome::ToolSuccess)
        };
        c.exchange(legacy_post(1, "abc", 1));
        c.exchange(legacy_part(7, 0, true, "abc", &[1]));
        assert!(ok(&c, 1));
        c.exchange(legacy_post(2, "abc", 2));
        c.exchange(legacy_post(3, "abc", 3));
        assert_eq!(
            c.legacy.waiting_count(),
            2,
            "2 and 3 wait for their responses"
        );
        // 99 answers no one; 4's POST is recorded after the part that answers it.
        c.exchange(legacy_part(7, 1, true, "", &[3, 99, 4]));
        assert!(ok(&c, 3));
        c.exchange(legacy_post(4, "abc", 4));
        assert!(ok(&c, 4), "joined from the held response");
        c.exchange(legacy_post(5, "abc", 5));
        c.exchange(legacy_part(7, 2, true, "", &[2]));
        assert!(ok(&c, 2));
        let strays = |c: &Correlator| {
            c.observations
                .iter()
                .chain(c.released_obs.iter())
                .filter(|(_, o)| matches!(o, Observation::StrayResponse { .. }))
                .count()
        };
        assert_eq!(strays(&c), 0, "99 is held for a POST that may come late");
        // Responses to no request of the input push it out, the oldest first.
        let unknown: Vec<u64> = (10_000..10_000 + 2 * http::HELD_REPLIES as u64).collect();
        c.exchange(legacy_part(7, 3, true, "", &unknown));
        assert!(strays(&c) >= 1, "let go, a stray");
        c.exchange(legacy_part(7, 4, false, "", &[]));
        assert_eq!(c.legacy.waiting_count(), 0);
        // A part of a stream that is not held.
        c.exchange(legacy_part(8, 5, true, "", &[1, 2, 3]));
        let a = c.finish();
        let got: Vec<String> = a
            .calls
            .iter()
            .map(|k| format!("{} {}", k.id, k.verdict.outcome))
            .collect();
        assert_eq!(
            got,
            [
                "1 TOOL_SUCCESS",
                "2 TOOL_SUCCESS",
                "3 TOOL_SUCCESS",
                "4 TOOL_SUCCESS",
                "5 STREAM_INCOMPLETE"
            ]
        );
        let last = &a.calls[4].verdict.evidence;
        assert_eq!(last.end, End::Closed);
        assert!(last.says("stream ended (closed)"), "{:?}", last.notes);
        let strays = a
            .observations
            .iter()
            .filter(|o| matches!(o, Observation::StrayResponse { .. }))
            .count();
        assert_eq!(
            strays,
            1 + 2 * http::HELD_REPLIES,
            "99 and the unknown ones once each; nothing of the dropped part"
        );
        assert_eq!(a.exchanges, 6, "five POSTs and one stream");
    }

    /// Calls that wait for their responses on a legacy stream that goes on are
    /// bounded: past `MAX_GOING_CALLS` the oldest half are judged unanswered, with a
    /// note that says why, and the rest still meet their responses.
    #[test]
    fn calls_waiting_on_a_legacy_stream_that_goes_on_are_bounded() {
        let n = http::MAX_GOING_CALLS as u64 + 1;
        let mut c = Correlator::new();
        c.exchange(legacy_part(7, 0, true, "abc", &[]));
        for id in 1..=n {
            c.exchange(legacy_post(id, "abc", id));
            assert!(c.legacy.waiting_count() <= http::MAX_GOING_CALLS);
        }
        let judged = n as usize / 2;
        assert_eq!(c.legacy.waiting_count(), n as usize - judged);
        c.exchange(legacy_part(7, 1, false, "", &[n]));
        let a = c.finish();
        let first = &a.calls[0].verdict;
        assert_eq!(first.outcome, Outcome::NoResponse);
        assert!(
            first.evidence.says("waited for theirs"),
            "{:?}",
            first.evidence.notes
        );
        let unanswered = a
            .calls
            .iter()
            .filter(|k| k.verdict.outcome == Outcome::NoResponse)
            .count();
        assert_eq!(unanswered, judged);
        assert_eq!(
            a.calls.last().unwrap().verdict.outcome,
            Outcome::ToolSuccess
        );
        let incomplete = a
            .calls
            .iter()
            .filter(|k| k.verdict.outcome == Outcome::StreamIncomplete)
            .count();
        assert_eq!(incomplete, n as usize - judged - 1);
    }

    /// Calls that wait for a stream of their session not yet read are bounded: in a
    /// capture (the stream began before it did) past `MAX_GOING_CALLS`, in a log (which
    /// may write the stream after all its POSTs) past `MAX_LOGGED_CALLS`. The oldest
    /// half are then judged unanswered, with a note that says why, and let go at the
    /// next exchange; the newer ones still meet their stream.
    #[test]
    fn calls_waiting_for_an_unseen_legacy_stream_are_bounded() {
        let going = http::MAX_GOING_CALLS as u64;
        let logged = http::MAX_LOGGED_CALLS as u64;
        for (captured, n, bound, why) in [
            (true, 2 * going + 1, going, "the capture"),
            (false, going + 1, logged, ""),
            (false, 2 * logged + 1, logged, "calls of this log"),
        ] {
            let mut c = Correlator::new();
            let mut peak = 0;
            for id in 1..=n {
                let mut x = legacy_post(id, "abc", id);
                if let Payload::Http(h) = &mut x.payload {
                    h.tcp = captured.then_some(crate::model::TcpTrail {
                        stream: 1,
                        end_frame: id,
                        h2_stream: None,
                        tls: None,
                    });
                }
                c.exchange(x);
                assert!(c.legacy.waiting_count() as u64 <= bound);
                peak = peak.max(c.pending.len());
            }
            // Past the bound, the calls judged early go at the next release but the
            // newest `RELEASE_AT - RELEASE_STEP`, rather than after as many more calls
            // as wait (twice the bound).
            assert!(
                peak as u64 <= bound + RELEASE_AT as u64,
                "calls judged early are let go: {peak} pending at most"
            );
            c.exchange(legacy_get(n + 1, "abc", 1..=n));
            let a = c.finish();
            let early: Vec<&Call> = a
                .calls
                .iter()
                .filter(|k| k.verdict.outcome == Outcome::NoResponse)
                .collect();
            if why.is_empty() {
                assert!(early.is_empty(), "the stream written last answers them all");
                continue;
            }
            for k in &early {
                assert!(
                    k.verdict.evidence.says(why),
                    "{:?}",
                    k.verdict.evidence.notes
                );
            }
            let answered: Vec<u64> = a
                .calls
                .iter()
                .filter(|k| k.verdict.outcome == Outcome::ToolSuccess)
                .map(|k| k.id.to_string().parse().unwrap())
                .collect();
            assert_eq!(early.len() + answered.len(), n as usize);
            assert!(
                answered.len() as u64 > bound / 2,
                "the newer ones still met their stream ({why})"
            );
            let first_answered = answered.iter().min().copied().unwrap_or(u64::MAX);
            assert!(
                early
                    .iter()
                    .all(|k| k.id.to_string().parse::<u64>().unwrap() < first_answered),
                "the oldest are judged early"
            );
        }
    }

    /// A POST to a Streamable HTTP endpoint answered 202 waits like a legacy call (a
    /// legacy stream could still name its session), and is bounded with them; its
    /// verdict stays the one it was given when it came, however many wait.
    #[test]
    fn a_streamable_post_answered_202_keeps_its_verdict_past_the_bound() {
        let post = |id: u64| {
            let mut x = legacy_post(id, "abc", id);
            if let Payload::Http(h) = &mut x.payload {
                h.request.url = "http://h/mcp".to_owned();
            }
            x
        };
        let mut one = Correlator::new();
        one.exchange(post(1));
        let alone = one.finish().calls[0].verdict.clone();
        let n = 2 * http::MAX_LOGGED_CALLS as u64 + 1;
        let mut c = Correlator::new();
        for id in 1..=n {
            c.exchange(post(id));
        }
        let a = c.finish();
        assert_eq!(a.calls.len() as u64, n);
        for k in [&a.calls[0], &a.calls[a.calls.len() - 1]] {
            assert_eq!(k.verdict.outcome, alone.outcome);
            assert_eq!(k.verdict.evidence.notes, alone.evidence.notes);
        }
    }

    /// Per-host and per-session state a long input adds to without end stays within
    /// `MAX_SCOPES`: hosts without sessions (a log of many endpoints) and sessions
    /// ended by a 404; the recent ones are kept, so a host seen lately still numbers
    /// its restarted clients.
    #[test]
    fn hosts_and_ended_sessions_are_remembered_within_a_bound() {
        let post = |host: String, body: &str, session: Option<&str>, status: u16| {
            let mut request = HttpRequest {
                method: "POST".to_owned(),
                url: format!("http://{host}/mcp"),
                body: body.as_bytes().to_vec(),
                ..HttpRequest::default()
            };
            if let Some(s) = session {
                request.headers.push("Mcp-Session-Id", s);
            }
            Exchange {
                locator: Locator::Entry { entry: 1 },
                payload: Payload::Http(HttpExchange {
                    request,
                    response: Some(HttpResponse {
                        status,
                        body: Body::Bytes(Vec::new()),
                        ..HttpResponse::default()
                    }),
                    ..HttpExchange::default()
                }),
            }
        };
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#;
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let mut c = Correlator::new();
        let n = 3 * MAX_SCOPES;
        for i in 0..n {
            c.exchange(post(format!("h{i}"), init, None, 200));
            c.exchange(post("x".to_owned(), ping, Some(&format!("s{i}")), 404));
            assert!(c.sessionless_inits.len() <= MAX_SCOPES + 1);
            assert!(c.expired_scopes.len() <= MAX_SCOPES + 1);
        }
        let last = Scope::http(&format!("h{}", n - 1), 1);
        assert_eq!(c.sessionless_inits.get(&last).map(|e| e.0), Some(1));
        assert!(!c.sessionless_inits.contains_key(&Scope::http("h0", 1)));
        assert!(c
            .expired_scopes
            .contains_key(&Scope::session(&format!("s{}", n - 1))));
        // The latest host restarts its client: its second id space.
        c.exchange(post(format!("h{}", n - 1), init, None, 200));
        assert_eq!(c.sessionless_inits.get(&last).map(|e| e.0), Some(2));
    }

    /// Calls answered 202 wait for their legacy GET stream apart from the cut
    /// streams: `open` is bounded and searched per exchange, and a long legacy
    /// session (more calls than that bound) must neither be cut by it nor make each
    /// exchange scan every call it holds (which made 60,000 calls take 13 s).
    #[test]
    fn calls_waiting_for_the_legacy_stream_are_held_apart_from_cut_streams() {
        let n = http::MAX_OPEN_STREAMS as u64 + 100;
        let mut c = Correlator::new();
        for id in 1..=n {
            c.exchange(legacy_post(id, "abc", id));
        }
        assert!(c.open.is_empty(), "{} in the bounded list", c.open.len());
        assert_eq!(c.legacy.waiting_count() as u64, n);
        c.exchange(legacy_get(0, "abc", 1..=n));
        assert_eq!(c.legacy.waiting_count(), 0, "joined when the stream came");
        let a = c.finish();
        assert_eq!(a.calls.len() as u64, n);
        assert!(a
            .calls
            .iter()
            .all(|c| c.verdict.outcome == Outcome::ToolSuccess));
    }

    /// The cut streams' byte count is kept as streams are cut, resumed (and cut
    /// again), completed and let go, rather than summed per call: it must always be
    /// what they hold, or the bound would let go too many or too few.
    #[test]
    fn cut_streams_count_the_bytes_they_hold_as_they_change() {
        let sse = |method: &str, url: &str, body: &str, events: &str, last: Option<&str>| {
            let mut request = HttpRequest {
                method: method.to_owned(),
                url: url.to_owned(),
                body: body.as_bytes().to_vec(),
                ..HttpRequest::default()
            };
            request.headers.push("Mcp-Session-Id", "s1");
            if let Some(l) = last {
                request.headers.push("Last-Event-ID", l);
            }
            Exchange {
                locator: Locator::Entry { entry: 1 },
                payload: Payload::Http(HttpExchange {
                    request,
                    response: Some(sse_ok(events)),
                    ..HttpExchange::default()
                }),
            }
        };
        let pad = "p".repeat(1 << 16);
        let mut c = Correlator::new();
        let held = |c: &Correlator| c.open.iter().map(|o| o.bytes).sum::<u64>();
        for id in 0..(http::MAX_OPEN_STREAMS as u64 + 1200) {
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t"}}}}"#
            );
            c.exchange(sse(
                "POST",
                "http://h/mcp",
                &call,
                &format!(": {pad}\nid: e{id}-0\ndata: \n\n"),
                None,
            ));
            if id % 3 == 1 {
                // Resumed and cut again: the call holds another leg.
                let again = format!("id: e{id}-1\ndata: \n\n");
                c.exchange(sse(
                    "GET",
                    "http://h/mcp",
                    "",
                    &again,
                    Some(&format!("e{id}-0")),
                ));
            } else if id % 3 == 2 {
                // Resumed to its result: it waits no more.
                let done = format!(
                    "id: e{id}-1\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[]}}}}\n\n"
                );
                c.exchange(sse(
                    "GET",
                    "http://h/mcp",
                    "",
                    &done,
                    Some(&format!("e{id}-0")),
                ));
            }
            assert_eq!(c.open.held_bytes(), held(&c), "after call {id}");
            assert!(c.open.len() <= http::MAX_OPEN_STREAMS);
        }
        assert!(c.open.held_bytes() > 0);
        // The resumptions were joined, not read as stray streams.
        let n = http::MAX_OPEN_STREAMS as u64 + 1200;
        let a = c.finish();
        let done = a
            .calls
            .iter()
            .filter(|c| c.verdict.outcome == Outcome::ToolSuccess)
            .count() as u64;
        assert_eq!(done, (0..n).filter(|id| id % 3 == 2).count() as u64);
        let resumed = a.calls.iter().filter(|c| c.resumed).count() as u64;
        assert_eq!(resumed, done, "each result came on its resumption");
    }

    /// A POST answered 202 whose session's stream was never recorded (a capture
    /// started after the client connected) is a call whose response was not seen,
    /// on the legacy transport; a 202 to a request at a Streamable HTTP endpoint is
    /// still the server's error.
    #[test]
    fn a_legacy_call_without_its_stream_is_unseen_not_an_http_error() {
        let mut c = Correlator::new();
        c.exchange(legacy_post(1, "abc", 1));
        let mut modern = legacy_post(2, "abc", 2);
        if let Payload::Http(x) = &mut modern.payload {
            x.request.url = "http://h/mcp".to_owned();
            x.request.headers.push("Mcp-Session-Id", "s1");
        }
        c.exchange(modern);
        let a = c.finish();
        let got: Vec<(Outcome, &str)> = a
            .calls
            .iter()
            .map(|c| (c.verdict.outcome, c.verdict.evidence.notes[0].as_str()))
            .collect();
        assert_eq!(got[0].0, Outcome::NoResponse, "{got:?}");
        assert!(got[0].1.contains("no SSE stream of its session was read"));
        assert_eq!(got[1].0, Outcome::HttpError, "{got:?}");
        assert!(got[1].1.contains("202 Accepted answered a request"));
    }

    /// Many legacy sessions, one after another, in both orders a recorder writes
    /// (the stream first, as a log sorted by start time has it; the POSTs first, as
    /// a capture emits a stream when it ends): calls are joined as soon as their
    /// stream is known and released, and past `MAX_LEGACY_STREAMS` the oldest
    /// stream is let go, its strays reported then, and a late POST to it says why
    /// it has no response.
    #[test]
    fn legacy_sessions_are_joined_as_they_come_and_old_streams_let_go() {
        // More streams than are held, and more calls than wait for a release.
        let sessions = (http::MAX_LEGACY_STREAMS.max(RELEASE_AT / 2) + 76) as u64;
        let mut c = Correlator::new();
        let mut line = 0;
        let mut most_pending = 0;
        for s in 0..sessions {
            let sid = format!("s{s}");
            // Id 99 is asked by no one: a stray on each stream.
            let ids = [1, 2, 99].into_iter();
            line += 3;
            if s % 2 == 0 {
                c.exchange(legacy_get(line, &sid, ids));
                c.exchange(legacy_post(line + 1, &sid, 1));
                c.exchange(legacy_post(line + 2, &sid, 2));
            } else {
                c.exchange(legacy_post(line, &sid, 1));
                c.exchange(legacy_post(line + 1, &sid, 2));
                c.exchange(legacy_get(line + 2, &sid, ids));
            }
            assert_eq!(c.legacy.waiting_count(), 0, "session {s}");
            assert!(c.legacy.held_streams() <= http::MAX_LEGACY_STREAMS);
            most_pending = most_pending.max(c.pending.len());
        }
        // Joined calls are released like any other: were they held, all would be.
        assert!(most_pending <= RELEASE_AT, "{most_pending} calls pending");
        // Session 0's stream was let go: a call to it now cannot be answered.
        c.exchange(legacy_post(line + 1, "s0", 3));
        let a = c.finish();
        assert_eq!(a.calls.len() as u64, 2 * sessions + 1);
        let (late, rest) = a.calls.split_last().unwrap();
        assert!(rest
            .iter()
            .all(|c| c.verdict.outcome == Outcome::ToolSuccess));
        assert_eq!(late.verdict.outcome, Outcome::NoResponse);
        assert!(
            late.verdict.evidence.says("no longer held"),
            "{:?}",
            late.verdict.evidence.notes
        );
        let strays = a
            .observations
            .iter()
            .filter(|o| matches!(o, Observation::StrayResponse { .. }))
            .count() as u64;
        assert_eq!(strays, sessions, "one stray per stream, let go or held");
    }

    /// Requests of a megabyte each, unanswered, wait within `STDIO_WAITING_BYTES`:
    /// past it the oldest are judged unanswered until half is left, with a note that
    /// says why, and the newest still meets its response.
    #[test]
    fn large_stdio_requests_wait_within_a_byte_bound() {
        use crate::model::Direction;
        let big = "w".repeat(1 << 20);
        let mut c = Correlator::new();
        let n = 100;
        for id in 0..n {
            let request = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"write","arguments":{{"content":"{big}"}}}}}}"#
            );
            c.exchange(stdio_line(id + 1, Direction::ClientToServer, &request));
            assert!(c.stdio_pending_bytes <= STDIO_WAITING_BYTES + (2 << 20));
            let held: u64 = c
                .stdio_pending
                .values()
                .map(|p| p.msg.text().len() as u64)
                .sum();
            assert_eq!(held, c.stdio_pending_bytes);
        }
        let reply = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[]}}}}"#,
            n - 1
        );
        c.exchange(stdio_line(n + 1, Direction::ServerToClient, &reply));
        let a = c.finish();
        assert_eq!(a.calls.len(), n as usize);
        let early = a
            .calls
            .iter()
            .filter(|c| c.verdict.evidence.says("MiB of requests waited"))
            .count();
        assert!(early >= 32 && early < n as usize, "{early}");
        assert_eq!(
            a.calls.last().unwrap().verdict.outcome,
            Outcome::ToolSuccess
        );
    }

    /// A transcript of requests only (one side recorded, or a server that stopped
    /// answering) keeps at most `STDIO_WAITING_AT_MOST` waiting: the oldest are
    /// judged unanswered on the way, say so, and the rest still meet responses.
    #[test]
    fn stdio_requests_wait_for_responses_within_a_bound() {
        use crate::model::Direction;
        let line = |n, dir, json: String| stdio_line(n, dir, &json);
        let request = |id: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t"}}}}"#
            )
        };
        let mut c = Correlator::new();
        let n = STDIO_WAITING_AT_MOST + 100;
        for id in 0..n {
            c.exchange(line(id as u64 + 1, Direction::ClientToServer, request(id)));
            assert!(c.stdio_pending.len() <= STDIO_WAITING_AT_MOST);
        }
        // The newest is still waiting, and gets its response.
        let reply = format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[]}}}}"#,
            n - 1
        );
        c.exchange(line(n as u64 + 1, Direction::ServerToClient, reply));
        let a = c.finish();
        assert_eq!(a.calls.len(), n);
        let early: Vec<_> = a
            .calls
            .iter()
            .filter(|c| c.verdict.evidence.says("judged then"))
            .collect();
        assert_eq!(early.len(), RELEASE_STEP);
        assert!(early
            .iter()
            .all(|c| c.verdict.outcome == Outcome::NoResponse
                && c.verdict.evidence.notes.len() == 1
                && c.locator
                    < Locator::Line {
                        line: RELEASE_STEP as u64 + 1
                    }));
        assert_eq!(
            a.calls
                .iter()
                .filter(|c| c.verdict.outcome == Outcome::ToolSuccess)
                .count(),
            1
        );
        assert_eq!(
            a.calls
                .iter()
                .filter(|c| c.verdict.outcome == Outcome::NoResponse)
                .count(),
            n - 1
        );
    }

    /// Requests still waiting when a transcript ends are judged in the order they
    /// came, a batch's in its order, whatever order the map holding them has (it is
    /// seeded per process: the order once changed from run to run).
    #[test]
    fn open_stdio_requests_are_judged_in_the_order_they_came() {
        use crate::model::Direction;
        let batch: Vec<String> = (0..16)
            .map(|i| {
                format!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"t"}}}}"#
                )
            })
            .collect();
        let mut c = Correlator::new();
        for (n, json) in [
            format!("[{}]", batch.join(",")),
            batch[0].replace(":0,", ":99,"),
        ]
        .into_iter()
        .enumerate()
        {
            c.exchange(stdio_line(n as u64 + 1, Direction::ClientToServer, &json));
        }
        let ids: Vec<String> = c.finish().calls.iter().map(|c| c.id.to_string()).collect();
        let want: Vec<String> = (0..16).chain([99]).map(|i| i.to_string()).collect();
        assert_eq!(ids, want);
    }

    /// Counts the calls handed on, shared with the test.
    struct Count(std::sync::Arc<std::sync::atomic::AtomicUsize>);
    impl CallSink for Count {
        fn call(&mut self, _: Call) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        fn finish(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
            Box::new(())
        }
    }

    /// A streaming correlator judges the observations its rules judge alone as they
    /// come, in the order they were made, and lets them go: a transcript of 20,000
    /// stray responses, with a call between them whose success reads like an error,
    /// holds a few thousand at most, not all, and its findings are those of the
    /// whole input judged at its end.
    #[test]
    fn observations_judged_alone_are_judged_as_they_come_and_let_go() {
        use crate::model::Direction::{ClientToServer, ServerToClient};
        const STRAYS: u64 = 20_000;
        let lines: Vec<Exchange> = (0..STRAYS)
            .flat_map(|i| {
                let mut v = vec![stdio_line(
                    3 * i + 1,
                    ServerToClient,
                    &format!(r#"{{"jsonrpc":"2.0","id":"stray-{i}","result":{{}}}}"#),
                )];
                if i % 1000 == 0 {
                    v.push(stdio_line(3 * i + 2, ClientToServer, &format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"t","arguments":{{"i":{i}}}}}}}"#)));
                    v.push(stdio_line(3 * i + 3, ServerToClient, &format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"Error: no such file"}}]}}}}"#)));
                }
                v
            })
            .collect();
        let mut whole = Correlator::new();
        for x in &lines {
            whole.exchange(x.clone());
        }
        let whole = whole.finish();
        let n = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut c = Correlator::streaming(RetryWindows::default(), Box::new(Count(n.clone())));
        let mut most = 0;
        for x in lines {
            c.exchange(x);
            most = most.max(c.observations.len() + c.judgeable_obs.len() + c.released_obs.len());
        }
        assert!(
            most <= OBSERVATIONS_STEP,
            "{most} observations held at once"
        );
        let streamed = c.finish();
        assert!(streamed.observations.is_empty());
        let kinds = |a: &Analysis| -> Vec<(FindingKind, Vec<Locator>)> {
            a.all_findings()
                .unwrap()
                .into_iter()
                .map(|f| (f.kind, f.locators))
                .collect()
        };
        let want = kinds(&whole);
        assert_eq!(want.len() as u64, STRAYS + STRAYS / 1000);
        assert_eq!(kinds(&streamed), want);
    }

    #[test]
    fn a_long_input_releases_its_calls_in_small_steady_steps() {
        let n = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut c = Correlator::streaming(RetryWindows::default(), Box::new(Count(n.clone())));
        let total = 3 * RELEASE_AT;
        let mut largest_step = 0;
        for i in 0..total {
            let x = exchange(
                "POST",
                &format!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"t","arguments":{{"i":{i}}}}}}}"#
                ),
                &format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[]}}}}"#),
            );
            let before = n.load(std::sync::atomic::Ordering::Relaxed);
            let m = Messages::of(&x);
            drop(c.exchange_spent(x, m));
            let step = n.load(std::sync::atomic::Ordering::Relaxed) - before;
            largest_step = largest_step.max(step);
            assert!(c.pending.len() <= RELEASE_AT, "{} pending", c.pending.len());
        }
        // Released as they come, a step at a time, never in one burst of thousands
        // (which left the reading thread of a two-thread run waiting).
        assert_eq!(largest_step, RELEASE_STEP);
        assert!(n.load(std::sync::atomic::Ordering::Relaxed) >= total - RELEASE_AT);
        drop(c.finish());
        assert_eq!(n.load(std::sync::atomic::Ordering::Relaxed), total);
    }
}
