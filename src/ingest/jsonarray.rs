//! JSON-array inputs, read element by element with serde's streaming `SeqAccess`
//! (never a whole-file `Value`):
//!
//! - MCP Inspector network exports (`inspector-network-*.json`, `FetchRequestEntry[]`):
//!   real HTTP status, headers and bodies, so they go through the full HTTP classifier;
//! - MCP Inspector protocol exports (`inspector-protocol-*.json`, `MessageEntry[]`);
//! - the conformance suite's `checks.json`, whose INFO checks log every request and
//!   response the mock server saw.
//!
//! The kind is decided per element, so an unknown element is a problem naming its index.

use super::meter::{metered, Meter};
use super::{Problem, Sink};
use crate::config::Limits;
use crate::model::{
    Body, Direction, End, Exchange, Headers, HttpExchange, HttpRequest, HttpResponse, Locator,
    Payload, StdioMessage, Timestamp,
};
use crate::sse::Budget;
use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;
use std::io::Read;

/// Reads a JSON array from `reader`, pushing what each element holds; returns how
/// many elements were of a kind this reader knows (none: not an MCP input at all).
/// An element larger than `--max-record-bytes` stops the reading before it is
/// buffered: it and the elements after it are reported as not read.
pub fn read(reader: impl Read, limits: &Limits, sink: &mut dyn Sink) -> Result<Counts, String> {
    let meter = Meter::new(limits.max_record_bytes as u64);
    let mut de = serde_json::Deserializer::from_reader(metered(reader, meter.clone()));
    // 1-based, like lines and frames.
    let mut next = 1u64;
    let res = de.deserialize_seq(Elements {
        sink: &mut *sink,
        budget: Budget::from_limits(limits),
        meter: &meter,
        next: &mut next,
    });
    if meter.tripped() {
        sink.problem(Problem::cap(
            Locator::Entry { entry: next },
            format!(
                "cap: array element {next} is larger than the {}-byte record cap; it and the elements after it were not read (raise --max-record-bytes)",
                meter.cap()
            ),
        ));
        // What was read before the cap still counts as MCP.
        return Ok(Counts {
            known: next.saturating_sub(1).max(1),
            other: 0,
        });
    }
    let counts = res.map_err(|e| crate::text::describe_json_error(&e))?;
    de.end().map_err(|e| format!("after the array: {e}"))?;
    Ok(counts)
}

/// Elements by kind: known ones (read, perhaps with problems) and the others.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub known: u64,
    pub other: u64,
}

struct Elements<'s> {
    sink: &'s mut dyn Sink,
    budget: Budget,
    meter: &'s Meter,
    next: &'s mut u64,
}

impl<'de> Visitor<'de> for Elements<'_> {
    type Value = Counts;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of log entries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Counts, A::Error> {
        let mut counts = Counts::default();
        loop {
            self.meter.start();
            let Some(v) = seq.next_element_seed(OneValue)? else {
                break;
            };
            self.meter.stop();
            if element(*self.next, v, self.budget, self.sink) {
                counts.known += 1;
            } else {
                counts.other += 1;
            }
            *self.next += 1;
        }
        self.meter.stop();
        Ok(counts)
    }
}

struct OneValue;

impl<'de> DeserializeSeed<'de> for OneValue {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn ts(v: Option<&Value>) -> Option<Timestamp> {
    match v? {
        Value::String(s) => Timestamp::parse(s),
        Value::Number(n) => Timestamp::parse(&n.to_string()),
        _ => None,
    }
}

fn headers(v: Option<&Value>) -> Headers {
    let mut h = Headers::default();
    if let Some(Value::Object(m)) = v {
        for (k, v) in m {
            h.push(k.clone(), text(Some(v)).unwrap_or_default());
        }
    }
    h
}

/// Reads one element; false when it is of no kind this reader knows.
fn element(index: u64, v: Value, budget: Budget, sink: &mut dyn Sink) -> bool {
    let locator = Locator::Entry { entry: index };
    let Value::Object(o) = v else {
        sink.problem(Problem::new(
            locator,
            "array element is not an object".to_owned(),
        ));
        return false;
    };
    if o.contains_key("requestHeaders")
        || (o.contains_key("url") && o.contains_key("method") && o.contains_key("category"))
    {
        inspector_network(locator, &o, budget, sink);
    } else if o.contains_key("direction") && o.contains_key("message") {
        inspector_protocol(locator, &o, sink);
    } else if o.contains_key("status") && o.contains_key("name") && o.contains_key("id") {
        conformance_check(locator, &o, sink);
    } else {
        sink.problem(Problem::new(
            locator,
            "not an MCP Inspector network or protocol entry, nor a conformance check".to_owned(),
        ));
        return false;
    }
    true
}

/// `FetchRequestEntry {id, timestamp, method, url, requestHeaders, requestBody?,
/// responseStatus?, responseHeaders?, responseBody?, duration?, error?, category}`.
fn inspector_network(
    locator: Locator,
    o: &Map<String, Value>,
    budget: Budget,
    sink: &mut dyn Sink,
) {
    let start = ts(o.get("timestamp"));
    let end_ts = match (start, o.get("duration").and_then(Value::as_f64)) {
        (Some(t), Some(ms)) => Some(t.plus_millis(ms)),
        _ => None,
    };
    let response = o
        .get("responseStatus")
        .and_then(Value::as_u64)
        .filter(|s| *s > 0)
        .map(|status| {
            let headers = headers(o.get("responseHeaders"));
            let body = match text(o.get("responseBody")) {
                None => Body::NotRecorded,
                Some(b) => super::body_from_recorded(&headers, b.into_bytes(), budget),
            };
            HttpResponse {
                status: status as u16,
                headers,
                body,
                ts: end_ts,
            }
        });
    sink.exchange(Exchange {
        locator,
        payload: Payload::Http(HttpExchange {
            request: HttpRequest {
                method: text(o.get("method")).unwrap_or_else(|| "POST".into()),
                url: text(o.get("url")).unwrap_or_default(),
                headers: headers(o.get("requestHeaders")),
                body: text(o.get("requestBody")).unwrap_or_default().into_bytes(),
                ts: start,
            },
            response,
            end: End::Complete,
            end_ts,
            recorder_note: text(o.get("error")),
            tcp: None,
            part: None,
        }),
    });
}

/// `MessageEntry {id, timestamp, direction, origin: client|server, message, response?,
/// duration?, clientError?}`: what the Inspector (a client) saw.
fn inspector_protocol(locator: Locator, o: &Map<String, Value>, sink: &mut dyn Sink) {
    let t = ts(o.get("timestamp"));
    let dir = match o.get("origin").and_then(Value::as_str) {
        Some("server") => Some(Direction::ServerToClient),
        Some("client") => Some(Direction::ClientToServer),
        _ => None,
    };
    if let Some(m) = o.get("message").filter(|m| m.is_object()) {
        sink.exchange(Exchange {
            locator: locator.clone(),
            payload: Payload::Stdio(StdioMessage {
                dir,
                json: m.to_string(),
                ts: t,
                checked: false,
                logged_by_client: true,
            }),
        });
    }
    if let Some(r) = o.get("response").filter(|m| m.is_object()) {
        let rt = match (t, o.get("duration").and_then(Value::as_f64)) {
            (Some(t), Some(ms)) => Some(t.plus_millis(ms)),
            _ => t,
        };
        sink.exchange(Exchange {
            locator,
            payload: Payload::Stdio(StdioMessage {
                dir: dir.map(|d| match d {
                    Direction::ClientToServer => Direction::ServerToClient,
                    Direction::ServerToClient => Direction::ClientToServer,
                }),
                json: r.to_string(),
                ts: rt,
                checked: false,
                logged_by_client: true,
            }),
        });
    }
}

/// A conformance check `{id, name, description, status, timestamp, details?}`; the
/// mock servers' INFO checks carry each request/response body in `details.body`.
fn conformance_check(locator: Locator, o: &Map<String, Value>, sink: &mut dyn Sink) {
    let Some(body) = o.get("details").and_then(|d| d.get("body")) else {
        return;
    };
    let body = match body {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v) => v,
            Err(_) => return,
        },
        other => other.clone(),
    };
    if !body.is_object() || body.get("jsonrpc").is_none() {
        return;
    }
    let dir = if body.get("method").is_some()
        && body.get("result").is_none()
        && body.get("error").is_none()
    {
        None // requests and notifications: inferred from the method
    } else {
        Some(Direction::ServerToClient)
    };
    sink.exchange(Exchange {
        locator,
        payload: Payload::Stdio(StdioMessage {
            dir,
            json: body.to_string(),
            ts: ts(o.get("timestamp")),
            checked: false,
            logged_by_client: true,
        }),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::Collect;

    #[test]
    fn reads_each_kind_and_names_bad_entries() {
        let input = r#"[
          {"id":"1","timestamp":"2026-08-10T09:45:00.000Z","method":"POST","url":"https://h/mcp","requestHeaders":{"content-type":"application/json"},"requestBody":"{}","responseStatus":503,"responseHeaders":{},"responseBody":"","duration":38,"category":"transport"},
          {"id":"2","timestamp":"2026-08-10T09:45:01.000Z","direction":"request","origin":"client","message":{"jsonrpc":"2.0","id":1,"method":"ping"},"response":{"jsonrpc":"2.0","id":1,"result":{}},"duration":5},
          {"id":"incoming-request","name":"IncomingRequest","description":"d","status":"INFO","timestamp":"2026-08-07T12:00:00.000Z","details":{"method":"POST","path":"/mcp","body":{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t"}},"mcpMethod":"tools/call"}},
          7
        ]"#;
        let mut sink = Collect::default();
        read(input.as_bytes(), &Limits::default(), &mut sink).unwrap();
        assert_eq!(sink.exchanges.len(), 4);
        assert!(
            matches!(&sink.exchanges[0].payload, Payload::Http(x) if x.response.as_ref().unwrap().status == 503)
        );
        assert_eq!(sink.problems.len(), 1);
        assert_eq!(sink.problems[0].locator, Locator::Entry { entry: 4 });
        let mut sink = Collect::default();
        assert!(read(&b"[{\"a\":"[..], &Limits::default(), &mut sink).is_err());
    }

    #[test]
    fn an_element_over_the_record_cap_is_refused_before_it_is_buffered() {
        let small = r#"{"id":"2","timestamp":"2026-08-10T09:45:01.000Z","direction":"request","origin":"client","message":{"jsonrpc":"2.0","id":1,"method":"ping"},"duration":5}"#;
        let big = format!(
            r#"{{"direction":"request","message":"{}"}}"#,
            "x".repeat(5000)
        );
        let input = format!("[{small},{big},{small}]");
        let limits = Limits {
            max_record_bytes: 1000,
            ..Limits::default()
        };
        let mut sink = Collect::default();
        read(input.as_bytes(), &limits, &mut sink).unwrap();
        assert_eq!(
            sink.exchanges.len(),
            1,
            "the element before the cut is read"
        );
        let caps: Vec<_> = sink.of_kind(crate::ingest::Kind::Cap).collect();
        assert_eq!(caps.len(), 1);
        // Entries count from 1: the second element is entry 2.
        assert_eq!(caps[0].locator, Locator::Entry { entry: 2 });
        assert!(caps[0].message.contains("--max-record-bytes"));
    }
}
