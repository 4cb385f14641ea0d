//! Correlate stage: a `Sink` that receives one input's exchanges in order, assembles
//! each `tools/call` with whatever answered it (its own HTTP response, a stdio reply),
//! asks the shared classifier for the verdict, and looks across calls for findings
//! (`design.md` §3, `reference/mcp-wire.md` §7). It keeps compact per-call records,
//! not bodies, so memory follows the number of calls, not the input size.

mod repeats;
pub mod timeline;

use crate::classify::{classify, Leg, Options, Verdict};
use crate::ingest::{Problem, Sink};
use crate::jsonrpc::{self, canonical_json, Decoded, Id, Item, Kind, Message, Place};
use crate::model::{
    Direction, End, Exchange, FindingKind, HttpExchange, Locator, Outcome, Payload, Severity,
    StdioMessage, Timestamp,
};
use serde_json::Value;
use std::collections::HashMap;

/// How a call came to be sent, as far as the input shows (the seed's `retryOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
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
}

impl RetryOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            RetryOrigin::None => "none",
            RetryOrigin::Mrtr => "mrtr",
            RetryOrigin::Resumption => "resumption",
            RetryOrigin::AfterRefusal => "after_refusal",
            RetryOrigin::Protocol => "protocol",
            RetryOrigin::AfterFailure => "after_failure",
            RetryOrigin::Unexplained => "unexplained",
        }
    }
}

/// Tool annotations seen in a `tools/list` result (`reference/mcp-wire.md` §5.5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
    pub scope: String,
    pub id: Id,
    pub method: String,
    pub tool: Option<String>,
    /// Canonical JSON of `params.arguments`.
    pub arguments: String,
    pub verdict: Verdict,
    /// Where the request is in the input.
    pub locator: Locator,
    pub transport: Transport,
    pub started_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    /// 1 for a first attempt; n for the n-th POST of the same tool and arguments.
    pub post_count: u32,
    pub retry_origin: RetryOrigin,
    pub protocol_version: Option<String>,
    pub client: Option<String>,
    pub server: Option<String>,
    /// `Retry-After` of the response, in milliseconds.
    pub retry_after_ms: Option<u64>,
    /// SSE `retry` seen on the response stream, in milliseconds.
    pub sse_retry_ms: Option<u64>,
    /// An MRTR follow-up: carries `inputResponses` or `requestState`.
    pub mrtr_followup: bool,
    pub request_state: Option<String>,
    /// `requestState` the result handed back (INPUT_REQUIRED).
    pub returned_state: Option<String>,
    /// A `notifications/cancelled` for this id was sent.
    pub cancelled: bool,
    /// The wire story for reports (HTTP calls). Every `String` in `Call` is listed in
    /// `report::redact`, so a new one must be added there too.
    pub timeline: Option<timeline::Timeline>,
    /// The tool's annotations from a `tools/list` of the same input, if any.
    pub annotations: Option<Annotations>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Http,
    Stdio,
}

/// A finding across calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    pub scope: String,
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
}

#[derive(Debug, Clone, Default)]
struct ScopeInfo {
    protocol_version: Option<String>,
    client: Option<String>,
    server: Option<String>,
}

#[derive(Debug)]
struct PendingStdio {
    msg: Message,
    locator: Locator,
    ts: Option<Timestamp>,
    method: String,
    call: bool,
}

/// The correlating sink for one input.
#[derive(Debug, Default)]
pub struct Correlator {
    out: Analysis,
    seq: usize,
    scopes: HashMap<String, ScopeInfo>,
    annotations: HashMap<String, Annotations>,
    /// stdio: client requests waiting for a response, by id.
    stdio_pending: HashMap<Id, PendingStdio>,
    /// stdio: server requests waiting for the client's response.
    stdio_server_pending: HashMap<Id, ()>,
    stdio_answered: HashMap<Id, Locator>,
    stdio_process: u32,
    last_ts: Option<Timestamp>,
}

impl Sink for Correlator {
    fn exchange(&mut self, x: Exchange) {
        self.out.exchanges += 1;
        match x.payload {
            Payload::Http(http) => self.http(&x.locator, &http),
            Payload::Stdio(m) => self.stdio(&x.locator, m),
        }
    }

    fn problem(&mut self, p: Problem) {
        self.out.problems.push(p);
    }
}

/// A stable 8-hex-digit hash, so a session can be followed without printing its id.
pub fn short_hash(text: &str) -> String {
    // FNV-1a: stable across runs and platforms, unlike std's SipHash with random keys.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", (h >> 32) as u32 ^ h as u32)
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

fn string_at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

fn info_name(v: Option<&Value>) -> Option<String> {
    let v = v?;
    let name = v.get("name")?.as_str()?;
    Some(match v.get("version").and_then(Value::as_str) {
        Some(ver) => format!("{name}@{ver}"),
        None => name.to_owned(),
    })
}

fn parse_retry_after(value: &str) -> Option<u64> {
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

    fn http(&mut self, locator: &Locator, x: &HttpExchange) {
        if x.request.ts.is_some() {
            self.last_ts = x.request.ts;
        }
        let req_items = jsonrpc::decode_request(&x.request.body);
        let resp_items: Vec<Item> = x
            .response
            .as_ref()
            .map(jsonrpc::decode_response)
            .unwrap_or_default();
        let session = x.request.headers.get("mcp-session-id").or_else(|| {
            x.response
                .as_ref()
                .and_then(|r| r.headers.get("mcp-session-id"))
        });
        let scope = match session {
            Some(s) => format!("session:{}", short_hash(s)),
            None => format!("http:{}", host_of(&x.request.url)),
        };
        let header_version = x
            .request
            .headers
            .get("mcp-protocol-version")
            .map(str::to_owned);

        for item in &req_items {
            let Some(m) = item.message() else { continue };
            if m.kind() != Kind::Request {
                continue;
            }
            let method = m.method().unwrap_or_default();
            let params = m.params_value();
            self.note_request_meta(&scope, &method, &params, header_version.as_deref());
            if method == "initialize" {
                self.note_initialize_result(&scope, m, &resp_items);
            }
            if method == "tools/list" {
                self.note_tools_list(m, &resp_items);
            }
            if method != "tools/call" {
                continue;
            }
            let leg = Leg {
                exchange: Some(x),
                items: resp_items.iter().collect(),
                end: x.end,
            };
            let verdict = classify(m, &[leg], Options::default());
            let resp = x.response.as_ref();
            let retry_after_ms = resp
                .and_then(|r| r.headers.get("retry-after"))
                .and_then(parse_retry_after);
            let sse_retry_ms = resp.and_then(|r| match &r.body {
                crate::model::Body::Sse(s) => s.events.iter().rev().find_map(|e| e.retry),
                _ => None,
            });
            let ended_at = verdict.evidence.responded_at.or(x.end_ts);
            self.push_call(
                m,
                &scope,
                locator.clone(),
                Transport::Http,
                verdict,
                x.request.ts,
                ended_at,
                retry_after_ms,
                sse_retry_ms,
            );
            if let Some(c) = self.out.calls.last_mut() {
                c.timeline = Some(timeline::of_http(x, &resp_items));
            }
        }
        // Responses to requests we never saw in this exchange (a GET stream, a stray).
        let posted: Vec<&Id> = req_items
            .iter()
            .filter_map(|i| {
                i.message()
                    .filter(|m| m.kind() == Kind::Request)
                    .and_then(|m| m.id.as_ref())
            })
            .collect();
        if x.request.method.eq_ignore_ascii_case("POST") && !posted.is_empty() {
            return;
        }
        for item in &resp_items {
            let Some(m) = item.message() else { continue };
            if m.kind() == Kind::Response {
                let id = m.id.clone().unwrap_or_else(|| Id::from_raw("null"));
                self.out.findings.push(Finding {
                    kind: FindingKind::IdMismatch,
                    severity: Severity::Medium,
                    scope: scope.clone(),
                    ids: vec![id.clone()],
                    calls: vec![],
                    locators: vec![locator.clone()],
                    detail: format!(
                        "a response with id {id} arrived on a {} {} with no request it answers",
                        x.request.method,
                        if matches!(item.place, Place::Event { .. }) {
                            "stream"
                        } else {
                            "exchange"
                        }
                    ),
                });
            }
        }
    }

    fn note_request_meta(
        &mut self,
        scope: &str,
        method: &str,
        params: &Value,
        header: Option<&str>,
    ) {
        let info = self.scopes.entry(scope.to_owned()).or_default();
        let meta = params.get("_meta");
        let meta_version =
            meta.and_then(|m| string_at(m, &["io.modelcontextprotocol/protocolVersion"]));
        if let Some(v) = meta_version.or(header) {
            info.protocol_version = Some(v.to_owned());
        }
        if let Some(c) = info_name(meta.and_then(|m| m.get("io.modelcontextprotocol/clientInfo"))) {
            info.client = Some(c);
        }
        if method == "initialize" {
            if let Some(v) = params.get("protocolVersion").and_then(Value::as_str) {
                info.protocol_version.get_or_insert_with(|| v.to_owned());
            }
            if let Some(c) = info_name(params.get("clientInfo")) {
                info.client = Some(c);
            }
        }
    }

    fn note_initialize_result(&mut self, scope: &str, req: &Message, items: &[Item]) {
        let Some(result) = items
            .iter()
            .filter_map(Item::message)
            .find(|r| r.id == req.id && r.result.is_some())
            .map(Message::result_value)
        else {
            return;
        };
        let info = self.scopes.entry(scope.to_owned()).or_default();
        if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
            info.protocol_version = Some(v.to_owned()); // the negotiated version wins
        }
        if let Some(s) = info_name(result.get("serverInfo")) {
            info.server = Some(s);
        }
    }

    fn note_tools_list(&mut self, req: &Message, items: &[Item]) {
        let Some(result) = items
            .iter()
            .filter_map(Item::message)
            .find(|r| r.id == req.id && r.result.is_some())
            .map(Message::result_value)
        else {
            return;
        };
        self.note_tools(&result);
    }

    fn note_tools(&mut self, result: &Value) {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return;
        };
        for t in tools {
            let Some(name) = t.get("name").and_then(Value::as_str) else {
                continue;
            };
            let a = t.get("annotations");
            let flag = |k: &str| a.and_then(|a| a.get(k)).and_then(Value::as_bool);
            self.annotations.insert(
                name.to_owned(),
                Annotations {
                    read_only: flag("readOnlyHint"),
                    destructive: flag("destructiveHint"),
                    idempotent: flag("idempotentHint"),
                },
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push_call(
        &mut self,
        m: &Message,
        scope: &str,
        locator: Locator,
        transport: Transport,
        verdict: Verdict,
        started_at: Option<Timestamp>,
        ended_at: Option<Timestamp>,
        retry_after_ms: Option<u64>,
        sse_retry_ms: Option<u64>,
    ) {
        let params = m.params_value();
        let info = self.scopes.get(scope).cloned().unwrap_or_default();
        let returned_state = if verdict.outcome == Outcome::InputRequired {
            // Kept byte for byte: MRTR follow-ups must echo it exactly (mcp-wire §5.3).
            verdict.evidence.request_state.clone()
        } else {
            None
        };
        let mrtr_followup =
            params.get("inputResponses").is_some() || params.get("requestState").is_some();
        let id = m.id.clone().unwrap_or_else(|| Id::from_raw("null"));
        for stray in &verdict.evidence.stray_ids {
            self.out.findings.push(Finding {
                kind: FindingKind::IdMismatch,
                severity: Severity::Medium,
                scope: scope.to_owned(),
                ids: vec![id.clone(), stray.clone()],
                calls: vec![self.seq],
                locators: vec![locator.clone()],
                detail: if stray.differs_only_in_type(&id) {
                    format!(
                        "request id {id} was answered as {stray}: same value, different JSON type"
                    )
                } else if stray.is_null() {
                    format!("request id {id} was answered by a response with id null")
                } else {
                    format!("the response stream of request {id} carried a response for id {stray}")
                },
            });
        }
        self.out.calls.push(Call {
            seq: self.seq,
            scope: scope.to_owned(),
            id,
            method: "tools/call".to_owned(),
            tool: m.tool_name(),
            arguments: canonical_json(params.get("arguments").unwrap_or(&Value::Null)),
            verdict,
            locator,
            transport,
            started_at,
            ended_at,
            post_count: 1,
            retry_origin: RetryOrigin::None,
            protocol_version: info.protocol_version,
            client: info.client,
            server: info.server,
            retry_after_ms,
            sse_retry_ms,
            mrtr_followup,
            request_state: params.get("requestState").map(|v| v.to_string()),
            returned_state,
            cancelled: false,
            timeline: None,
            annotations: None,
        });
        self.seq += 1;
    }

    fn stdio(&mut self, locator: &Locator, m: StdioMessage) {
        if m.ts.is_some() {
            self.last_ts = m.ts;
        }
        let scope = format!("stdio:{}", self.stdio_process.max(1));
        let items = jsonrpc::decode_text(&m.json, Place::Body, None, m.ts);
        for item in items {
            let msg = match &item.decoded {
                Decoded::Message(msg) => (**msg).clone(),
                Decoded::NotJson(e) => {
                    self.out.problems.push(Problem {
                        locator: locator.clone(),
                        message: format!("message is not JSON: {e}"),
                    });
                    continue;
                }
                _ => continue,
            };
            let dir = m.dir.unwrap_or_else(|| self.infer_direction(&msg));
            match (msg.kind(), dir) {
                (Kind::Request, Direction::ClientToServer) => {
                    let method = msg.method().unwrap_or_default();
                    if method == "initialize" {
                        self.stdio_process += 1;
                        self.flush_stdio_pending(End::Closed);
                    }
                    let scope = format!("stdio:{}", self.stdio_process.max(1));
                    let params = msg.params_value();
                    self.note_request_meta(&scope, &method, &params, None);
                    let id = msg.id.clone().unwrap_or_else(|| Id::from_raw("null"));
                    if self.stdio_pending.contains_key(&id) {
                        self.out.findings.push(Finding {
                            kind: FindingKind::IdReused,
                            severity: Severity::Medium,
                            scope: scope.clone(),
                            ids: vec![id.clone()],
                            calls: vec![],
                            locators: vec![locator.clone()],
                            detail: format!("request id {id} was sent again while the earlier request with that id was still in flight"),
                        });
                        // The earlier one will never be told apart: close it as unanswered.
                        if let Some(prev) = self.stdio_pending.remove(&id) {
                            self.finish_stdio(prev, None, End::Closed);
                        }
                    }
                    self.stdio_pending.insert(
                        id,
                        PendingStdio {
                            call: method == "tools/call",
                            method,
                            msg,
                            locator: locator.clone(),
                            ts: m.ts,
                        },
                    );
                }
                (Kind::Request, Direction::ServerToClient) => {
                    if let Some(id) = &msg.id {
                        self.stdio_server_pending.insert(id.clone(), ());
                    }
                }
                (Kind::Notification, Direction::ClientToServer) => {
                    if msg.method().as_deref() == Some("notifications/cancelled") {
                        if let Some(rid) = msg.params_value().get("requestId") {
                            let rid = Id::from_raw(&rid.to_string());
                            if let Some(p) = self.stdio_pending.get(&rid) {
                                if p.call {
                                    if let Some(prev) = self.stdio_pending.remove(&rid) {
                                        self.finish_stdio(prev, None, End::ClientClosed);
                                        if let Some(c) = self.out.calls.last_mut() {
                                            c.cancelled = true;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                (Kind::Notification, _) => {}
                (Kind::Response | Kind::Invalid, Direction::ServerToClient) => {
                    let id = msg.id.clone().unwrap_or_else(|| Id::from_raw("null"));
                    let key = if self.stdio_pending.contains_key(&id) {
                        Some(id.clone())
                    } else {
                        self.stdio_pending
                            .keys()
                            .find(|k| k.differs_only_in_type(&id))
                            .cloned()
                    };
                    match key.and_then(|k| self.stdio_pending.remove(&k)) {
                        Some(p) => {
                            if p.method == "tools/list" {
                                self.note_tools(&msg.result_value());
                            }
                            let resp_item = Item {
                                decoded: Decoded::Message(Box::new(msg)),
                                ..item.clone()
                            };
                            self.stdio_answered.insert(id, locator.clone());
                            self.finish_stdio(p, Some(resp_item), End::Complete);
                        }
                        None => {
                            let detail = if self.stdio_answered.contains_key(&id) {
                                format!("a second response for id {id}, which was already answered")
                            } else {
                                format!("a response with id {id} answers no outstanding request")
                            };
                            self.out.findings.push(Finding {
                                kind: FindingKind::IdMismatch,
                                severity: Severity::Medium,
                                scope: scope.clone(),
                                ids: vec![id],
                                calls: vec![],
                                locators: vec![locator.clone()],
                                detail,
                            });
                        }
                    }
                }
                (Kind::Response | Kind::Invalid, Direction::ClientToServer) => {
                    if let Some(id) = &msg.id {
                        self.stdio_server_pending.remove(id);
                    }
                }
            }
        }
    }

    /// Who sent a message whose recorder did not say (a bare `tee` of stdio).
    fn infer_direction(&self, m: &Message) -> Direction {
        const SERVER_METHODS: &[&str] = &[
            "sampling/createMessage",
            "roots/list",
            "elicitation/create",
            "notifications/message",
            "notifications/resources/updated",
            "notifications/resources/list_changed",
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/elicitation/complete",
            "notifications/progress",
        ];
        match m.kind() {
            Kind::Request | Kind::Notification => {
                let method = m.method().unwrap_or_default();
                if SERVER_METHODS.contains(&method.as_str()) {
                    Direction::ServerToClient
                } else {
                    Direction::ClientToServer
                }
            }
            _ => match &m.id {
                Some(id)
                    if self.stdio_server_pending.contains_key(id)
                        && !self.stdio_pending.contains_key(id) =>
                {
                    Direction::ClientToServer
                }
                _ => Direction::ServerToClient,
            },
        }
    }

    fn finish_stdio(&mut self, p: PendingStdio, reply: Option<Item>, end: End) {
        if !p.call {
            return;
        }
        let scope = format!("stdio:{}", self.stdio_process.max(1));
        let ended_at = reply.as_ref().and_then(|r| r.ts);
        let leg = Leg {
            exchange: None,
            items: reply.iter().collect(),
            end,
        };
        let mut verdict = classify(&p.msg, &[leg], Options::default());
        if end == End::ClientClosed {
            verdict
                .evidence
                .notes
                .push("the client sent notifications/cancelled for this request".to_owned());
        }
        self.push_call(
            &p.msg,
            &scope,
            p.locator,
            Transport::Stdio,
            verdict,
            p.ts,
            ended_at,
            None,
            None,
        );
    }

    fn flush_stdio_pending(&mut self, end: End) {
        let mut pending: Vec<_> = self.stdio_pending.drain().map(|(_, p)| p).collect();
        pending.sort_by(|a, b| a.locator.cmp(&b.locator));
        for p in pending {
            self.finish_stdio(p, None, end);
        }
        self.stdio_server_pending.clear();
    }

    /// Ends the input: closes what is still open and runs the cross-call rules.
    pub fn finish(mut self) -> Analysis {
        self.flush_stdio_pending(End::CaptureEnded);
        self.out.calls.sort_by_key(|c| c.seq);
        for c in &mut self.out.calls {
            c.annotations = c
                .tool
                .as_ref()
                .and_then(|t| self.annotations.get(t))
                .copied();
        }
        repeats::run(&mut self.out, &self.annotations);
        non_terminal(&mut self.out);
        self.out
    }
}

/// NON_TERMINAL for every call without a terminal result (`design.md` §3).
fn non_terminal(out: &mut Analysis) {
    let followed: Vec<bool> = out
        .calls
        .iter()
        .map(|c| {
            c.verdict.outcome == Outcome::InputRequired
                && out.calls.iter().any(|later| {
                    later.seq > c.seq
                        && later.mrtr_followup
                        && later.tool == c.tool
                        && later.scope == c.scope
                })
        })
        .collect();
    for (c, followed) in out.calls.iter().zip(followed) {
        let why = match c.verdict.outcome {
            Outcome::StreamIncomplete | Outcome::NoResponse => {
                if c.cancelled {
                    continue; // a cancellation is terminal without a response, not a fault
                }
                c.verdict.evidence.notes.last().cloned().unwrap_or_default()
            }
            Outcome::InputRequired if !followed => {
                "input_required was never followed by an MRTR follow-up".to_owned()
            }
            _ => continue,
        };
        let severity = if c.verdict.outcome == Outcome::InputRequired {
            Severity::Low
        } else {
            Severity::Medium
        };
        out.findings.push(Finding {
            kind: FindingKind::NonTerminal,
            severity,
            scope: c.scope.clone(),
            ids: vec![c.id.clone()],
            calls: vec![c.seq],
            locators: vec![c.locator.clone()],
            detail: format!(
                "{} call {} ({}) has no terminal result: {}",
                c.tool.as_deref().unwrap_or("?"),
                c.id,
                c.verdict.outcome,
                why
            ),
        });
    }
}
