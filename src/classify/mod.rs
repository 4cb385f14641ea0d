//! The one shared classifier: from a `tools/call` request and whatever came back for
//! it (an HTTP response with a JSON body or SSE events, a stdio reply, nothing) to a
//! verdict with its outcome, layer and evidence. Every input format ends here.
//!
//! Order of checks (`docs/output.md`, Outcomes, after the article "An MCP client can receive HTTP 200 for a tool call while the agent still reports failure"):
//! transport first, then the JSON-RPC envelope, then the tool result. The one
//! refinement: a non-2xx status that carries a proper JSON-RPC error for the same id
//! is a protocol verdict (2026-07-28 pairs 400/404 with JSON-RPC errors).

mod client;

pub use client::{classify_client, mcp_error_code, reads_like_error};

use crate::jsonrpc::{Content, Decoded, Id, Item, Kind, Message, Place, ResultView};
use crate::model::{Body, End, HttpExchange, Layer, Outcome, Timestamp};
use serde_json::Value;

/// One leg of a call's reply path. The first leg is where the request went (the POST,
/// or the stdio process); later legs are streams that continued it (a `Last-Event-ID`
/// resumption, the legacy GET stream).
#[derive(Debug, Clone)]
pub struct Leg<'a> {
    /// The HTTP exchange of this leg; `None` on stdio or a stream delivering by message.
    pub exchange: Option<&'a HttpExchange>,
    /// The decoded messages of this leg that matter, in order.
    pub items: Vec<&'a Item>,
    /// How the leg ended.
    pub end: End,
}

/// Options that change how a reply path reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Legacy HTTP+SSE (2024-11-05): the POST is answered 202 and the response rides a
    /// GET stream, so a 202 is not a transport error by itself.
    pub legacy_sse: bool,
    /// The correlator stopped waiting for this request's response, because too much
    /// waited at once (it is judged then, not at the input's end).
    pub waited_out: Option<WaitedOut>,
}

/// What was too much when a request stopped being waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitedOut {
    /// stdio: this many requests waited.
    Requests(usize),
    /// stdio: requests of this many MiB waited.
    MiB(u64),
    /// Legacy HTTP+SSE: the session's GET stream was read, then let go because more
    /// than this many streams, or this many MiB of them, were held at once.
    LegacyStreams(usize, u64),
    /// Legacy HTTP+SSE: more than this many calls, or this many MiB of them, waited
    /// for their responses on streams that went on.
    LegacyCalls(usize, u64),
    /// Legacy HTTP+SSE in a capture: more than this many calls, or this many MiB of
    /// them, waited for a stream of their session that the capture never showed.
    LegacyUnseen(usize, u64),
    /// Legacy HTTP+SSE in a log: more than this many calls, or this many MiB of them,
    /// waited for a stream of their session that the log had not written yet.
    LegacyUnwritten(usize, u64),
}

/// The evidence behind a verdict (`docs/output.md`, Outcomes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    pub http_statuses: Vec<u16>,
    pub content_type: Option<String>,
    pub jsonrpc_code: Option<i64>,
    pub error_message: Option<String>,
    pub error_data: Option<Value>,
    pub result_type: Option<String>,
    pub is_error: Option<bool>,
    /// Dispatched SSE events on the call's streams (including priming and notifications).
    pub sse_events: usize,
    /// How the reply ended: the end of the leg that decided the verdict.
    pub end: End,
    /// When the terminal response (or the last thing seen) arrived.
    pub responded_at: Option<Timestamp>,
    /// Which leg carried the terminal response (0 = the request's own).
    pub terminal_leg: Option<usize>,
    /// Responses seen on this call's streams that answer another id.
    pub stray_ids: Vec<Id>,
    /// A text excerpt of the response or result that decided the verdict.
    pub excerpt: Option<String>,
    /// Why, in plain words.
    pub notes: Vec<String>,
    /// Notifications seen before the terminal response (progress, log), the first 50.
    pub notifications: Vec<String>,
    /// How many notifications came before the terminal response, all counted.
    pub notification_count: usize,
    /// `requestState` of an `input_required` result, as raw JSON, byte for byte.
    pub request_state: Option<String>,
    /// The first text block of a complete result (an excerpt).
    pub result_text: Option<String>,
}

impl Evidence {
    /// Whether a note says `words`.
    pub fn says(&self, words: &str) -> bool {
        self.notes.iter().any(|n| n.contains(words))
    }
}

/// Outcome, layer and evidence for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub outcome: Outcome,
    pub layer: Layer,
    /// Boxed: a verdict sits in every `Call`, and the calls of a large capture live
    /// in one `Vec` whose spare capacity would otherwise cost the whole evidence.
    pub evidence: Box<Evidence>,
}

impl Verdict {
    fn new(outcome: Outcome, evidence: Evidence) -> Verdict {
        Verdict {
            outcome,
            layer: outcome.layer(),
            evidence: Box::new(evidence),
        }
    }
}

/// What a scan of one leg's items found.
enum Scan<'a> {
    Terminal(&'a Item, &'a Message),
    /// The item that should have been the response is not usable.
    Broken(&'a Item, Outcome, String),
    Nothing,
}

/// Classifies one call. `request` must be the `tools/call` request message.
pub fn classify(request: &Message, legs: &[Leg<'_>], opts: Options) -> Verdict {
    let req_id = request.id_or_null();
    let mut ev = Evidence::default();
    let mut malformed: Option<(String, String)> = None; // (reason, excerpt)
    let mut strays: Vec<(&Item, &Message)> = Vec::new();

    for (li, leg) in legs.iter().enumerate() {
        ev.end = leg.end;
        if let Some(x) = leg.exchange {
            let Some(resp) = &x.response else {
                if li == 0 {
                    ev.notes.push(match &x.recorder_note {
                        Some(n) => format!("no HTTP response was recorded; the recorder says: {n}"),
                        None => "no HTTP response was recorded for this request".to_owned(),
                    });
                    ev.responded_at = x.end_ts;
                    return Verdict::new(Outcome::NoResponse, ev);
                }
                ev.notes
                    .push(format!("resumption request {li} got no response"));
                continue;
            };
            ev.http_statuses.push(resp.status);
            let media = resp.headers.media_type();
            if li == 0 {
                ev.content_type = media.clone();
            }
            if ev.responded_at.is_none() {
                ev.responded_at = resp.ts;
            }
            if let Body::Sse(sse) = &resp.body {
                ev.sse_events += sse.events.len();
                // What the SSE parser met on the way (lossy UTF-8, caps) is evidence too.
                ev.notes.extend(sse.problems.iter().take(5).cloned());
                if let Some(tail) = &sse.incomplete_tail {
                    ev.notes.push(format!(
                        "the stream ended inside an unterminated event (not dispatched): {}",
                        crate::jsonrpc::excerpt(tail)
                    ));
                }
            }
            if !(200..300).contains(&resp.status) {
                if li > 0 {
                    ev.notes.push(format!(
                        "resumption request {li} answered HTTP {}",
                        resp.status
                    ));
                    continue;
                }
                return non_2xx(resp.status, &req_id, leg, ev);
            }
            if resp.status == 202 && leg.items.is_empty() && !opts.legacy_sse && legs.len() == 1 {
                ev.notes.push(
                    "202 Accepted answered a request: Streamable HTTP sends 202 only for notifications and responses, so no result can follow".to_owned(),
                );
                return Verdict::new(Outcome::HttpError, ev);
            }
            let legacy_post = opts.legacy_sse && li == 0 && resp.status == 202;
            if li == 0 && !legacy_post {
                if let Some(v) = unexpected_media(resp.status, media.as_deref(), leg, &mut ev) {
                    return v;
                }
                if matches!(resp.body, Body::NotRecorded) && legs.len() == 1 {
                    if leg.end != End::Complete {
                        // The head arrived, then the body broke off (Playwright writes
                        // `_failureText` and keeps no body for any request that failed).
                        ev.notes.push(format!(
                            "the response began (HTTP {}) and then ended early ({}{}); the recorder kept none of its body",
                            resp.status,
                            leg.end.as_str(),
                            x.recorder_note
                                .as_deref()
                                .map(|n| format!(": {n}"))
                                .unwrap_or_default()
                        ));
                        return Verdict::new(Outcome::StreamIncomplete, ev);
                    }
                    ev.notes.push(
                        "the recorder kept no response body, so no JSON-RPC response can be seen"
                            .to_owned(),
                    );
                    return Verdict::new(Outcome::NoResponse, ev);
                }
            }
        }

        match scan(&req_id, leg, &mut ev, &mut malformed, &mut strays) {
            Scan::Terminal(item, msg) => {
                ev.terminal_leg = Some(li);
                if item.ts.is_some() {
                    ev.responded_at = item.ts;
                }
                ev.stray_ids = strays.iter().filter_map(|(_, m)| m.id.clone()).collect();
                return judge_response(msg, item, &req_id, ev);
            }
            Scan::Broken(item, outcome, reason) => {
                ev.terminal_leg = Some(li);
                ev.excerpt = Some(item.excerpt.clone());
                ev.notes.push(reason);
                ev.stray_ids = strays.iter().filter_map(|(_, m)| m.id.clone()).collect();
                if outcome == Outcome::MalformedJson && leg.end != End::Complete {
                    ev.notes.push(format!(
                        "the body ended early ({}), so it was cut rather than malformed",
                        leg.end.as_str()
                    ));
                    return Verdict::new(Outcome::StreamIncomplete, ev);
                }
                return Verdict::new(outcome, ev);
            }
            Scan::Nothing => {}
        }
    }

    ev.stray_ids = strays.iter().filter_map(|(_, m)| m.id.clone()).collect();
    if let Some((reason, excerpt)) = malformed {
        ev.notes.push(reason);
        ev.excerpt = Some(excerpt);
        return Verdict::new(Outcome::MalformedJson, ev);
    }
    if let Some((item, msg)) = strays.first() {
        ev.excerpt = Some(item.excerpt.clone());
        let other = msg
            .id
            .as_ref()
            .map(Id::to_string)
            .unwrap_or_else(|| "no id".into());
        if let Some(err) = error_parts(msg) {
            ev.jsonrpc_code = err.0;
            ev.error_message = err.1;
        }
        ev.notes.push(format!(
            "the response on this stream answers id {other}, not the request's id {req_id}"
        ));
        return Verdict::new(Outcome::InvalidEnvelope, ev);
    }
    let http = legs.first().and_then(|l| l.exchange).is_some();
    if opts.legacy_sse {
        // 2024-11-05: the 202 says nothing; the response lives only on the GET stream.
        if legs.len() < 2 {
            ev.notes.push(match opts.waited_out {
                Some(WaitedOut::LegacyStreams(n, mib)) => format!(
                    "the POST was accepted (202); its session's SSE stream was read earlier but no longer held when the POST came (more than {n} streams, or {mib} MiB of them, were held at once; a fixed limit), so its response was not looked for"
                ),
                Some(WaitedOut::LegacyUnseen(n, mib)) => format!(
                    "the POST was accepted (202) but no SSE stream of its session was read while more than {n} calls (or {mib} MiB of them) waited for one: judged then, not at the end of the capture (the stream began before the capture did, or the input's problems say why it could not be read; a fixed limit)"
                ),
                Some(WaitedOut::LegacyUnwritten(n, mib)) => format!(
                    "the POST was accepted (202) but no SSE stream of its session had been read while more than {n} calls of this log (or {mib} MiB of them) waited for one: judged then, not at the end of the log (a log written as exchanges end puts a session's stream after its POSTs, but at most this many wait for it; a fixed limit, and a response on a stream read later is a stray)"
                ),
                Some(WaitedOut::LegacyCalls(n, mib)) => format!(
                    "the POST was accepted (202) and no response with id {req_id} came on its session's SSE stream while more than {n} calls (or {mib} MiB of them) waited for theirs on legacy streams: judged then, not when the stream ended (a fixed limit; a response after this is not looked for)"
                ),
                _ => "the POST was accepted (202) but no SSE stream of its session was read (none was recorded, or the input's problems say why it could not be read), so its response was never seen".to_owned(),
            });
            return Verdict::new(Outcome::NoResponse, ev);
        }
        ev.notes.push(format!(
            "the session's SSE stream ended ({}) without a response for id {req_id}",
            ev.end.as_str()
        ));
        return Verdict::new(Outcome::StreamIncomplete, ev);
    }
    if !http {
        ev.notes.push(match opts.waited_out {
            Some(WaitedOut::Requests(n)) => format!(
                "no response with id {req_id} while {n} requests waited for theirs: judged then, not at the end of the transcript (at most {n} wait; a response after this is a stray)"
            ),
            Some(WaitedOut::MiB(n)) => format!(
                "no response with id {req_id} while {n} MiB of requests waited for theirs: judged then, not at the end of the transcript (at most {n} MiB wait; a response after this is a stray)"
            ),
            Some(
                WaitedOut::LegacyStreams(..)
                | WaitedOut::LegacyCalls(..)
                | WaitedOut::LegacyUnseen(..)
                | WaitedOut::LegacyUnwritten(..),
            )
            | None => format!(
                "no response with id {req_id} before the transcript ended ({})",
                ev.end.as_str()
            ),
        });
        return Verdict::new(Outcome::NoResponse, ev);
    }
    let first = legs
        .first()
        .and_then(|l| l.exchange)
        .and_then(|x| x.response.as_ref());
    let first_is_sse = first
        .map(|r| matches!(r.body, Body::Sse(_)))
        .unwrap_or(false);
    if !first_is_sse && legs.len() == 1 {
        // A JSON (or untyped) 2xx body that carried nothing.
        if ev.end == End::Complete {
            ev.notes
                .push("2xx with an empty body where the JSON-RPC response should be".to_owned());
            return Verdict::new(Outcome::MalformedJson, ev);
        }
        ev.notes.push(format!(
            "the body ended early ({}) before any response",
            ev.end.as_str()
        ));
        return Verdict::new(Outcome::StreamIncomplete, ev);
    }
    ev.notes.push(match ev.end {
        End::Complete => format!("the stream ended normally without a response for id {req_id}"),
        End::ClientClosed => {
            format!("the client closed the stream before a response for id {req_id}")
        }
        other => format!(
            "the stream ended ({}) before a response for id {req_id}",
            other.as_str()
        ),
    });
    Verdict::new(Outcome::StreamIncomplete, ev)
}

/// A non-2xx status: a JSON-RPC error for this id makes it a protocol verdict.
fn non_2xx(status: u16, req_id: &Id, leg: &Leg<'_>, mut ev: Evidence) -> Verdict {
    for item in &leg.items {
        let Some(m) = item.message() else { continue };
        if let Some((code, message, data)) = error_parts(m) {
            ev.jsonrpc_code = code;
            ev.error_message = message;
            ev.error_data = data;
            ev.excerpt = Some(item.excerpt.clone());
            if m.id.as_ref() == Some(req_id) && code.is_some() && m.has_valid_version() {
                ev.notes.push(format!(
                    "HTTP {status} carried a JSON-RPC error for this id; the status is kept as evidence"
                ));
                return Verdict::new(Outcome::JsonrpcError, ev);
            }
            let id =
                m.id.as_ref()
                    .map(Id::to_string)
                    .unwrap_or_else(|| "absent".into());
            ev.notes.push(format!(
                "HTTP {status}; the body's JSON-RPC error has id {id}, not this request's, so it is a transport-level error"
            ));
            return Verdict::new(Outcome::HttpError, ev);
        }
        if m.result().is_some() {
            ev.excerpt = Some(item.excerpt.clone());
            ev.notes.push(format!(
                "HTTP {status} with a success-looking body: a non-2xx status is a transport failure whatever the body says"
            ));
            return Verdict::new(Outcome::HttpError, ev);
        }
    }
    if let Some(item) = leg.items.first() {
        ev.excerpt = Some(item.excerpt.clone());
    }
    ev.notes.push(format!("HTTP {status}"));
    Verdict::new(Outcome::HttpError, ev)
}

/// A 2xx whose Content-Type is neither JSON nor SSE and whose body holds no message:
/// MALFORMED_JSON, with the Content-Type in the notes.
fn unexpected_media(
    status: u16,
    media: Option<&str>,
    leg: &Leg<'_>,
    ev: &mut Evidence,
) -> Option<Verdict> {
    let media = media?;
    let known = media == "text/event-stream"
        || media == "application/json"
        || media.ends_with("+json")
        || media.is_empty();
    if known || leg.items.iter().any(|i| i.message().is_some()) {
        return None;
    }
    ev.notes.push(format!(
        "HTTP {status} with Content-Type {media}: neither application/json nor text/event-stream"
    ));
    if let Some(item) = leg.items.first() {
        ev.excerpt = Some(item.excerpt.clone());
    }
    // A 2xx whose body is not JSON is a protocol failure (the seed's rule): the
    // Content-Type stays as evidence. A body cut short is still a transport one.
    if leg.end != End::Complete {
        ev.notes.push(format!(
            "the body ended early ({}) before any response",
            leg.end.as_str()
        ));
        return Some(Verdict::new(Outcome::StreamIncomplete, ev.clone()));
    }
    Some(Verdict::new(Outcome::MalformedJson, ev.clone()))
}

fn scan<'a>(
    req_id: &Id,
    leg: &Leg<'a>,
    ev: &mut Evidence,
    malformed: &mut Option<(String, String)>,
    strays: &mut Vec<(&'a Item, &'a Message)>,
) -> Scan<'a> {
    for &item in &leg.items {
        match &item.decoded {
            Decoded::Message(m) => match m.kind() {
                Kind::Request | Kind::Notification => {
                    ev.notification_count += 1;
                    if let Some(method) = m.method() {
                        if ev.notifications.len() < 50 {
                            ev.notifications
                                .push(crate::text::kept_owned(method, crate::text::KEPT_NAME));
                        }
                    }
                }
                Kind::Response | Kind::Invalid => match &m.id {
                    Some(id) if id == req_id => return Scan::Terminal(item, m),
                    Some(id) if id.differs_only_in_type(req_id) => {
                        strays.push((item, m));
                        return Scan::Broken(
                                item,
                                Outcome::InvalidEnvelope,
                                format!("the response id {id} differs from the request id {req_id} only in type"),
                            );
                    }
                    None if m.kind() == Kind::Invalid && item.place == Place::Body => {
                        return Scan::Broken(
                            item,
                            Outcome::InvalidEnvelope,
                            "the body is a JSON object with neither method, id, result nor error"
                                .to_owned(),
                        );
                    }
                    _ => strays.push((item, m)),
                },
            },
            Decoded::NotJson(err) => {
                if item.place == Place::Body {
                    return Scan::Broken(
                        item,
                        Outcome::MalformedJson,
                        format!("the response body is not JSON: {err}"),
                    );
                }
                if malformed.is_none() {
                    *malformed = Some((
                        format!("SSE data where the response should be is not JSON: {err}"),
                        item.excerpt.clone(),
                    ));
                }
            }
            Decoded::NotObject(what) => {
                return Scan::Broken(
                    item,
                    Outcome::InvalidEnvelope,
                    format!("the response is {what}, not a JSON-RPC object"),
                );
            }
            Decoded::Multiple(n) => {
                return Scan::Broken(
                    item,
                    Outcome::InvalidEnvelope,
                    format!("{n} JSON values back to back in one body; a response is exactly one"),
                );
            }
        }
    }
    Scan::Nothing
}

/// `(code, message, data)` of an `error` member that is an object.
fn error_parts(m: &Message) -> Option<(Option<i64>, Option<String>, Option<Value>)> {
    m.error()?;
    let err = m.error_value();
    let obj = err.as_object()?;
    Some((
        obj.get("code").and_then(Value::as_i64),
        obj.get("message")
            .and_then(Value::as_str)
            .map(|m| crate::text::kept(m, crate::text::KEPT_TEXT).into_owned()),
        obj.get("data").map(kept_data),
    ))
}

/// An error's `data` as a held call keeps it: whole up to `KEPT_TEXT` bytes of JSON;
/// past that as a string, the JSON's first bytes and `text::kept`'s tail.
fn kept_data(data: &Value) -> Value {
    match data {
        Value::String(s) => {
            Value::String(crate::text::kept(s, crate::text::KEPT_TEXT).into_owned())
        }
        Value::Object(_) | Value::Array(_) => {
            let json = data.to_string();
            match crate::text::kept(&json, crate::text::KEPT_TEXT) {
                std::borrow::Cow::Borrowed(_) => data.clone(),
                std::borrow::Cow::Owned(k) => Value::String(k),
            }
        }
        _ => data.clone(),
    }
}

/// Envelope then result checks on the response that answers the request.
fn judge_response(m: &Message, item: &Item, req_id: &Id, mut ev: Evidence) -> Verdict {
    ev.excerpt = Some(item.excerpt.clone());
    if !m.has_valid_version() {
        let got = m.jsonrpc().unwrap_or("absent");
        ev.notes.push(format!("jsonrpc is {got}, not \"2.0\""));
        return Verdict::new(Outcome::InvalidEnvelope, ev);
    }
    if m.method_raw().is_some() {
        ev.notes.push(format!(
            "the message with id {req_id} is a request, not a response"
        ));
        return Verdict::new(Outcome::InvalidEnvelope, ev);
    }
    match (m.result(), m.error()) {
        (Some(_), Some(_)) => {
            ev.notes
                .push("the response has both result and error".to_owned());
            return Verdict::new(Outcome::InvalidEnvelope, ev);
        }
        (None, None) => {
            ev.notes
                .push("the response has neither result nor error".to_owned());
            return Verdict::new(Outcome::InvalidEnvelope, ev);
        }
        (None, Some(_)) => {
            let err = m.error_value();
            let code = err.get("code");
            let message = err.get("message");
            let code_ok = code.map(|c| c.is_i64() || c.is_u64()).unwrap_or(false);
            let msg_ok = message.map(Value::is_string).unwrap_or(false);
            if let Some((c, msg, data)) = error_parts(m) {
                ev.jsonrpc_code = c;
                ev.error_message = msg;
                ev.error_data = data;
            }
            if !err.is_object() || !code_ok || !msg_ok {
                ev.notes.push(
                    "the error member is not an object with an integer code and a string message"
                        .to_owned(),
                );
                return Verdict::new(Outcome::InvalidEnvelope, ev);
            }
            return Verdict::new(Outcome::JsonrpcError, ev);
        }
        (Some(_), None) => {}
    }
    let Some(raw) = m.result() else {
        ev.notes.push("result is missing".to_owned());
        return Verdict::new(Outcome::InvalidToolResult, ev);
    };
    let Some(view) = ResultView::read(raw) else {
        ev.notes
            .push(format!("result is {}, not an object", short_raw(raw)));
        return Verdict::new(Outcome::InvalidToolResult, ev);
    };
    // 2026-07-28 basic rules: an absent resultType MUST be read as "complete" (Base Protocol).
    let result_type = match view.result_type {
        None => None,
        Some(r) => match serde_json::from_str::<String>(r.get()) {
            Ok(s) => Some(s),
            Err(_) => {
                ev.notes.push(format!(
                    "resultType is {}, not a string",
                    short_raw(r.get())
                ));
                return Verdict::new(Outcome::InvalidToolResult, ev);
            }
        },
    };
    ev.result_type = result_type.clone();
    match result_type.as_deref() {
        None | Some("complete") => {}
        Some("input_required") => {
            // Kept byte for byte as it was on the wire: a follow-up must echo it exactly.
            ev.request_state = view
                .request_state
                .map(|r| crate::text::kept(r.get(), crate::text::KEPT_TEXT).into_owned());
            if view.input_requests.is_none() && view.request_state.is_none() {
                ev.notes.push(
                    "input_required without inputRequests or requestState (one of them is required)".to_owned(),
                );
            }
            return Verdict::new(Outcome::InputRequired, ev);
        }
        Some(other) => {
            ev.notes.push(format!(
                "resultType \"{other}\" is not one mcpsift knows (complete, input_required); a client MUST treat it as invalid"
            ));
            return Verdict::new(Outcome::InvalidToolResult, ev);
        }
    }
    match view.is_error.map(|r| r.get().trim()) {
        None => {}
        Some("true") => ev.is_error = Some(true),
        Some("false") => ev.is_error = Some(false),
        Some(other) => {
            ev.notes.push(format!(
                "isError is {}, not a boolean",
                crate::jsonrpc::excerpt(other)
            ));
            return Verdict::new(Outcome::InvalidToolResult, ev);
        }
    }
    let first_text = match view.content {
        Some(Content::Array { first_text }) => first_text,
        Some(Content::NotArray) => {
            // Rare: read again, keeping the member's JSON to quote it.
            let other =
                ResultView::<&serde_json::value::RawValue>::parse(raw).and_then(|v| v.content);
            let quoted = other.map_or_else(String::new, |r| short_raw(r.get()));
            ev.notes.push(format!("content is {quoted}, not an array"));
            return Verdict::new(Outcome::InvalidToolResult, ev);
        }
        None => {
            ev.notes
                .push("content is missing (it is required, an array)".to_owned());
            return Verdict::new(Outcome::InvalidToolResult, ev);
        }
    };
    ev.result_text = first_text.map(|t| crate::jsonrpc::excerpt(&t));
    if ev.is_error == Some(true) {
        ev.error_message = ev.result_text.clone();
        return Verdict::new(Outcome::ToolError, ev);
    }
    Verdict::new(Outcome::ToolSuccess, ev)
}

/// A raw JSON member for a note: compact when it is, cut when long.
fn short_raw(raw: &str) -> String {
    crate::jsonrpc::excerpt(raw.trim())
}

/// Classifies a single Streamable HTTP exchange whose request is a `tools/call`:
/// the common case, where the reply rides the POST's own response. Returns `None`
/// when the request body is not one `tools/call` request.
pub fn classify_http(x: &HttpExchange) -> Option<Verdict> {
    let req_items = crate::jsonrpc::decode_request(&x.request.body);
    let request = req_items.iter().find_map(|i| {
        i.message()
            .filter(|m| m.kind() == Kind::Request && m.method_is("tools/call"))
    })?;
    let items = x
        .response
        .as_ref()
        .map(crate::jsonrpc::decode_response)
        .unwrap_or_default();
    let leg = Leg {
        exchange: Some(x),
        items: items.iter().collect(),
        end: x.end,
    };
    Some(classify(request, &[leg], Options::default()))
}

#[cfg(test)]
mod tests;
