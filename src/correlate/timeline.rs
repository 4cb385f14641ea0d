//! A compact timeline of one HTTP call, kept for reports: the request line, the
//! status and Content-Type, each SSE event in order (what it carried, its id and
//! time), and how the exchange ended. Built from the exchange while it is at hand,
//! so reports can show the wire story without the correlator keeping bodies.

use crate::jsonrpc::{Decoded, Item, Kind, Place};
use crate::model::{Body, End, HttpExchange, Timestamp};
use crate::text::{kept, kept_owned, KEPT_NAME, KEPT_TEXT};

/// At most this many SSE events are kept per call; the rest are counted.
const MAX_EVENTS: usize = 32;

/// One SSE event, summarised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMark {
    /// The `event` field (`message` when absent).
    pub event: String,
    /// The SSE event id in force.
    pub id: Option<String>,
    pub ts: Option<Timestamp>,
    /// What the event carried, in words: `response id 3 (result)`, `notification
    /// notifications/progress`, `empty data (priming)`, `not JSON`.
    pub what: String,
}

/// The wire story of one HTTP call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Timeline {
    /// `POST http://host/mcp?query`, as recorded (redacted on output).
    pub request_line: String,
    pub request_ts: Option<Timestamp>,
    /// `None`: no response was recorded.
    pub status: Option<u16>,
    /// The full `Content-Type` header of the response.
    pub content_type: Option<String>,
    pub response_ts: Option<Timestamp>,
    pub events: Vec<EventMark>,
    /// Events on the stream, including those not kept in `events`.
    pub events_total: usize,
    pub end: End,
    pub end_ts: Option<Timestamp>,
    /// The recorder's own reason for a failure.
    pub recorder_note: Option<String>,
    /// Wireshark's `tcp.stream` and the frame that ended the response (captures).
    pub tcp: Option<crate::model::TcpTrail>,
    /// Later streams that continued this call (GETs resuming with `Last-Event-ID`),
    /// in order. Numbers and kinds only, so they hold nothing to redact.
    pub resumptions: Vec<Leg>,
    /// The raw `Mcp-Session-Id`, never printed: redaction uses it to replace the id
    /// wherever else it appears (an error message, a URL) with its hash.
    pub session_id: Option<String>,
}

/// What an SSE event on a resumption leg carried, as far as the call is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// The response for the call's id.
    Response,
    Notification,
    /// No data: a priming event or a keep-alive.
    Empty,
    Other,
}

/// A resumption leg: a GET with `Last-Event-ID` that continued the call's stream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Leg {
    pub request_ts: Option<Timestamp>,
    pub status: Option<u16>,
    pub response_ts: Option<Timestamp>,
    /// The first `MAX_EVENTS` events: when, and what they carried.
    pub events: Vec<(Option<Timestamp>, Carried)>,
    pub events_total: usize,
    pub end: End,
    pub end_ts: Option<Timestamp>,
}

/// The leg of `x`, a resumption of the call whose request id is `id`; `items` are
/// the leg's decoded messages.
pub fn leg_of_http(x: &HttpExchange, items: &[Item], id: Option<&crate::jsonrpc::Id>) -> Leg {
    let mut leg = Leg {
        request_ts: x.request.ts,
        end: x.end,
        end_ts: x.end_ts,
        ..Leg::default()
    };
    let Some(resp) = &x.response else {
        return leg;
    };
    leg.status = Some(resp.status);
    leg.response_ts = resp.ts;
    if let Body::Sse(sse) = &resp.body {
        leg.events_total = sse.events.len();
        for (index, e) in sse.events.iter().enumerate().take(MAX_EVENTS) {
            let mut carried = if e.data.trim().is_empty() {
                Carried::Empty
            } else {
                Carried::Other
            };
            for i in items.iter().filter(|i| i.place == Place::Event { index }) {
                if let Decoded::Message(m) = &i.decoded {
                    match m.kind() {
                        Kind::Response if m.id.as_ref() == id => carried = Carried::Response,
                        Kind::Notification if carried != Carried::Response => {
                            carried = Carried::Notification
                        }
                        _ => {}
                    }
                }
            }
            leg.events.push((e.ts, carried));
        }
    }
    leg
}

fn describe(item: &Item) -> String {
    match &item.decoded {
        Decoded::Message(m) => match m.kind() {
            Kind::Response => {
                let id = m.id.as_ref().map(|i| i.to_string()).unwrap_or_default();
                let what = if m.error().is_some() && m.result().is_some() {
                    "result and error".to_owned()
                } else if m.error().is_some() {
                    match m.error_value().get("code").and_then(|c| c.as_i64()) {
                        Some(c) => format!("error {c}"),
                        None => "error".to_owned(),
                    }
                } else {
                    let r = m.result_value();
                    match r.get("resultType").and_then(|v| v.as_str()) {
                        Some(t) => format!("result, resultType {t}"),
                        None => "result".to_owned(),
                    }
                };
                format!("response id {id} ({what})")
            }
            Kind::Request => format!(
                "server request {} id {}",
                m.method().unwrap_or_default(),
                m.id.as_ref().map(|i| i.to_string()).unwrap_or_default()
            ),
            Kind::Notification => format!("notification {}", m.method().unwrap_or_default()),
            Kind::Invalid => "a JSON object that is no JSON-RPC message".to_owned(),
        },
        Decoded::NotJson(_) => "data that is not JSON".to_owned(),
        Decoded::NotObject(what) => format!("JSON {what}, not an object"),
        Decoded::Multiple(n) => format!("{n} JSON values back to back"),
    }
}

/// The timeline of `x`, whose response decoded to `items`.
pub fn of_http(x: &HttpExchange, items: &[Item]) -> Timeline {
    let mut t = Timeline {
        // A failed call keeps its timeline while it is held: what the wire put in
        // it is cut as a held call's names and texts are (`text::kept`).
        request_line: kept_owned(format!("{} {}", x.request.method, x.request.url), KEPT_TEXT),
        request_ts: x.request.ts,
        end: x.end,
        end_ts: x.end_ts,
        recorder_note: x.recorder_note.clone(),
        tcp: x.tcp,
        session_id: super::http::kept_session_id(x).map(str::to_owned),
        ..Timeline::default()
    };
    let Some(resp) = &x.response else {
        return t;
    };
    t.status = Some(resp.status);
    t.content_type = resp
        .headers
        .get("content-type")
        .map(|c| kept(c, KEPT_NAME).into_owned());
    t.response_ts = resp.ts;
    if let Body::Sse(sse) = &resp.body {
        t.events_total = sse.events.len();
        for (index, e) in sse.events.iter().enumerate().take(MAX_EVENTS) {
            let what = if e.data.trim().is_empty() {
                "empty data (priming or keep-alive)".to_owned()
            } else {
                let described: Vec<String> = items
                    .iter()
                    .filter(|i| i.place == Place::Event { index })
                    .map(describe)
                    .collect();
                if described.is_empty() {
                    "data".to_owned()
                } else {
                    described.join("; ")
                }
            };
            t.events.push(EventMark {
                event: kept(&e.event, KEPT_NAME).into_owned(),
                id: e.id.as_deref().map(|id| kept(id, KEPT_NAME).into_owned()),
                ts: e.ts,
                what: kept_owned(what, KEPT_NAME),
            });
        }
    }
    t
}
