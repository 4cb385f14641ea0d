//! JSONL inputs, detected per line (`docs/input-formats.md`):
//! HTTP exchange records (`{"request": …, "response": …}`), message transcripts
//! (`{"dir": "c2s", "msg": …}`) and bare JSON-RPC lines (a stdio `tee`).
//! A line that is none of these is a problem naming its line; reading goes on.

use super::{Problem, Sink};
use crate::config::Limits;
use crate::model::{
    Body, Direction, End, Exchange, Headers, HttpExchange, HttpRequest, HttpResponse, Locator,
    Payload, SseBody, SseEvent, StdioMessage, Timestamp,
};
use crate::sse::{Budget, Events};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, BufRead};
use std::sync::Arc;

/// What a JSONL input held, by kind of line, so the caller can tell an MCP log with
/// bad lines (a problem) from a file with no MCP record at all (not an input).
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Lines read as MCP records (exchanges, messages, client-log events).
    pub records: u64,
    /// JSON objects of no MCP shape (an application's own log line).
    pub foreign: u64,
    /// Lines shaped like an MCP record that could not be read as one.
    pub broken: u64,
}

/// Reads every line of `reader`.
pub fn read(reader: &mut impl BufRead, limits: &Limits, sink: &mut dyn Sink) -> io::Result<Counts> {
    let mut buf = Vec::with_capacity(4096);
    let mut line_no: u64 = 0;
    let mut counts = Counts::default();
    let mut clients = super::clientlog::ClientLogs::default();
    loop {
        buf.clear();
        let read = read_line_capped(reader, &mut buf, limits.max_record_bytes)?;
        let (total, newline) = match read {
            None => break,
            Some(r) => r,
        };
        line_no += 1;
        let locator = Locator::Line { line: line_no };
        if total > buf.len() as u64 {
            sink.problem(Problem::cap(locator, format!(
                    "line is {total} bytes, over the {}-byte record limit; skipped (raise --max-record-bytes to read it)",
                    limits.max_record_bytes
                )));
            continue;
        }
        let _ = newline;
        let bytes = trim_line(&buf);
        if bytes.is_empty() {
            continue;
        }
        let text = match std::str::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                sink.problem(Problem::new(
                    locator,
                    format!(
                        "not valid UTF-8 (bad byte 0x{:02x} at column {})",
                        bytes.get(e.valid_up_to()).copied().unwrap_or(0),
                        e.valid_up_to() + 1
                    ),
                ));
                continue;
            }
        };
        match parse_line(text, Budget::from_limits(limits)) {
            Ok(Line::Payload(payload)) => {
                counts.records += 1;
                sink.exchange(Exchange { locator, payload })
            }
            Ok(Line::Client(kind, obj)) => {
                counts.records += 1;
                clients.line(kind, &obj, line_no, sink)
            }
            Ok(Line::Foreign) => {
                counts.foreign += 1;
                sink.problem(Problem::new(locator, FOREIGN.to_owned()))
            }
            Err(Rejected::NotJson(message)) => sink.problem(Problem::new(locator, message)),
            Err(Rejected::Broken(message)) => {
                counts.broken += 1;
                sink.problem(Problem::new(locator, message))
            }
        }
    }
    clients.finish(sink);
    Ok(counts)
}

const FOREIGN: &str = "not a recognised record: expected an HTTP exchange record (\"request\"/\"response\"), a transcript message (\"dir\" + \"msg\") or a JSON-RPC message (\"jsonrpc\")";

/// Why a line is not a record.
enum Rejected {
    /// Not a JSON object at all.
    NotJson(String),
    /// Shaped like an MCP record, but not a readable one.
    Broken(String),
}

/// Reads one line into `buf`, keeping at most `cap` bytes; returns the line's full
/// length and whether it ended in a newline. Past the cap the rest is skipped
/// without being stored, so a huge line costs no memory.
pub(super) fn read_line_capped(
    r: &mut impl BufRead,
    buf: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Option<(u64, bool)>> {
    let mut total: u64 = 0;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(if total == 0 {
                None
            } else {
                Some((total, false))
            });
        }
        let (take, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let content = if done { take - 1 } else { take };
        let room = cap.saturating_sub(buf.len());
        if total as usize <= cap {
            buf.extend_from_slice(&chunk[..content.min(room)]);
        }
        total += content as u64;
        r.consume(take);
        if done {
            return Ok(Some((total, true)));
        }
    }
}

fn trim_line(b: &[u8]) -> &[u8] {
    let b = b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b);
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &b[start..end.max(start)]
}

#[allow(clippy::large_enum_variant)] // one per line, moved straight into the sink
enum Line {
    Payload(Payload),
    /// A line of a client log (Claude Code, Codex, OpenTelemetry), read with state.
    Client(&'static str, Map<String, Value>),
    /// A JSON object of no MCP shape.
    Foreign,
}

/// A JSON object read shallowly: each member kept as its raw JSON text. Bodies (the
/// bulk of a log) are then unescaped once, never built into a `Value` tree.
type Obj<'a> = HashMap<Cow<'a, str>, &'a RawValue>;

fn shallow(text: &str) -> Option<Obj<'_>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str(text).ok()
}

fn raw_str(o: &Obj, key: &str) -> Option<String> {
    serde_json::from_str::<String>(o.get(key)?.get()).ok()
}

fn raw_value(o: &Obj, key: &str) -> Option<Value> {
    serde_json::from_str(o.get(key)?.get()).ok()
}

fn raw_timestamp(o: &Obj, keys: &[&str]) -> Option<Timestamp> {
    keys.iter().find_map(|k| {
        let raw = o.get(*k)?.get().trim();
        match raw.as_bytes().first() {
            Some(b'"') => Timestamp::parse(&serde_json::from_str::<String>(raw).ok()?),
            Some(b'-' | b'0'..=b'9') => Timestamp::parse(raw),
            _ => None,
        }
    })
}

/// A body as logged: a string (unescaped), or JSON logged as a JSON value rather
/// than as text (kept as written); `null` is no body.
fn raw_body(raw: Option<&&RawValue>) -> Option<String> {
    let text = raw?.get().trim();
    if text == "null" {
        return None;
    }
    if text.starts_with('"') {
        return serde_json::from_str::<String>(text).ok();
    }
    Some(text.to_owned())
}

fn parse_line(text: &str, budget: Budget) -> Result<Line, Rejected> {
    let Some(obj) = shallow(text) else {
        // Not a JSON object: say exactly what it is.
        let value: Value = serde_json::from_str(text).map_err(|e| {
            Rejected::NotJson(format!(
                "not JSON: {}",
                crate::text::describe_json_error(&e)
            ))
        })?;
        return Err(Rejected::NotJson(format!(
            "a JSON {} where a record object was expected",
            json_kind(&value)
        )));
    };
    if obj.contains_key("request") {
        return http_record(&obj, budget)
            .map(|x| Line::Payload(Payload::Http(x)))
            .map_err(Rejected::Broken);
    }
    let msg = obj.get("msg").or_else(|| obj.get("message"));
    // A line the process wrote that is not JSON (stdout noise, a crash trace) is
    // recorded as `"raw": text` (or as a string `msg`): it is kept as that text,
    // so the pairer can tell a garbled reply from a missing one.
    let text_of = |v: &serde_json::value::RawValue| -> Option<String> {
        let t = v.get().trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            Some(v.get().to_owned())
        } else if t.starts_with('"') {
            serde_json::from_str::<String>(v.get()).ok()
        } else {
            None
        }
    };
    let line_text = msg.and_then(|m| text_of(m)).or_else(|| {
        obj.get("raw")
            .and_then(|r| serde_json::from_str::<String>(r.get()).ok())
    });
    if let (Some(json), Some(dir)) = (line_text, obj.get("dir").or_else(|| obj.get("direction"))) {
        let dir_value: Value = serde_json::from_str(dir.get()).unwrap_or(Value::Null);
        let dir = parse_direction(&dir_value).ok_or_else(|| {
            Rejected::Broken(format!(
                "\"dir\" is {}; expected \"c2s\" or \"s2c\"",
                dir.get()
            ))
        })?;
        return Ok(Line::Payload(Payload::Stdio(StdioMessage {
            dir: Some(dir),
            json,
            ts: raw_timestamp(&obj, &["ts", "timestamp", "time"]),
            logged_by_client: false,
        })));
    }
    if is_jsonrpc(&obj) {
        return Ok(Line::Payload(Payload::Stdio(StdioMessage {
            dir: None,
            json: text.to_owned(),
            ts: None,
            logged_by_client: false,
        })));
    }
    // Client logs are read with their own (stateful) readers, from a full value.
    if let Ok(Value::Object(full)) = serde_json::from_str::<Value>(text) {
        if let Some(kind) = super::clientlog::kind_of(&full) {
            return Ok(Line::Client(kind, full));
        }
    }
    Ok(Line::Foreign)
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_jsonrpc(obj: &Obj) -> bool {
    let has = |k: &str| obj.contains_key(k);
    let method_is_string = obj
        .get("method")
        .is_some_and(|m| m.get().trim_start().starts_with('"'));
    has("jsonrpc")
        || (has("id") && (has("result") || has("error")))
        || (method_is_string && (has("params") || has("id")))
}

fn parse_direction(v: &Value) -> Option<Direction> {
    match v.as_str()?.to_ascii_lowercase().as_str() {
        "c2s" | "client" | "client_to_server" | "send" | "sent" | "out" | "outgoing"
        | "request" | ">" | "->" => Some(Direction::ClientToServer),
        "s2c" | "server" | "server_to_client" | "recv" | "received" | "in" | "incoming"
        | "response" | "<" | "<-" => Some(Direction::ServerToClient),
        _ => None,
    }
}

fn timestamp(obj: &Map<String, Value>, keys: &[&str]) -> Option<Timestamp> {
    keys.iter().find_map(|k| match obj.get(*k)? {
        Value::String(s) => Timestamp::parse(s),
        Value::Number(n) => Timestamp::parse(&n.to_string()),
        _ => None,
    })
}

fn headers(v: Option<&Value>) -> Result<Headers, String> {
    let mut h = Headers::default();
    match v {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                match value {
                    Value::Array(values) => {
                        for v in values {
                            h.push(name.clone(), scalar(v));
                        }
                    }
                    other => h.push(name.clone(), scalar(other)),
                }
            }
        }
        Some(Value::Array(list)) => {
            for entry in list {
                match entry {
                    Value::Array(pair) if pair.len() == 2 => {
                        h.push(scalar(&pair[0]), scalar(&pair[1]))
                    }
                    Value::Object(o) if o.contains_key("name") => h.push(
                        scalar(o.get("name").unwrap_or(&Value::Null)),
                        scalar(o.get("value").unwrap_or(&Value::Null)),
                    ),
                    other => {
                        return Err(format!("a header entry is {other}; expected [name, value]"))
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "headers are a JSON {}; expected an object or a list of [name, value]",
                json_kind(other)
            ))
        }
    }
    Ok(h)
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A body as logged: a string, or JSON logged as a JSON value rather than text.
fn body_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn http_record(obj: &Obj, budget: Budget) -> Result<HttpExchange, String> {
    let req = obj
        .get("request")
        .and_then(|r| shallow(r.get()))
        .ok_or("\"request\" is not an object")?;
    let ts = raw_timestamp(obj, &["ts", "timestamp", "time", "started_at"]);
    let request = HttpRequest {
        method: raw_str(&req, "method").unwrap_or_else(|| "POST".to_owned()),
        url: raw_str(&req, "url")
            .or_else(|| raw_str(&req, "path"))
            .unwrap_or_default(),
        headers: headers(raw_value(&req, "headers").as_ref())
            .map_err(|e| format!("request {e}"))?,
        body: raw_body(req.get("body")).unwrap_or_default().into_bytes(),
        ts: raw_timestamp(&req, &["ts"]).or(ts),
    };
    let end_field = raw_str(obj, "end");
    let end = match end_field.as_deref() {
        Some(s) => End::parse(s).ok_or_else(|| {
            format!("\"end\" is \"{s}\"; expected complete, closed, client_closed, reset, capture_ended or truncated")
        })?,
        None => End::Complete,
    };
    // A recorder that says who closed a stream ("closed_by": "client") says the
    // client gave up: in 2026-07-28 that is how a call is cancelled.
    let end = match (end, raw_str(obj, "closed_by").as_deref()) {
        (End::Closed | End::Reset, Some("client")) => End::ClientClosed,
        (end, _) => end,
    };
    let recorder_note = raw_str(obj, "error").or_else(|| raw_str(obj, "note"));
    let response = match obj.get("response").map(|r| r.get().trim()) {
        None | Some("null") => None,
        Some(r) if r.starts_with('{') => {
            let resp = shallow(r).ok_or("\"response\" is not a readable object")?;
            Some(http_response(&resp, obj, budget)?)
        }
        Some(other) => {
            let kind = serde_json::from_str::<Value>(other)
                .map(|v| json_kind(&v))
                .unwrap_or("value");
            return Err(format!(
                "\"response\" is a JSON {kind}; expected an object or null"
            ));
        }
    };
    // A record with no response and no stated end: the request went unanswered.
    let end = if response.is_none() && end_field.is_none() {
        End::Complete
    } else {
        end
    };
    Ok(HttpExchange {
        request,
        response,
        end,
        end_ts: raw_timestamp(obj, &["end_ts", "ended_at"]),
        recorder_note,
        tcp: None,
    })
}

fn http_response(resp: &Obj, record: &Obj, budget: Budget) -> Result<HttpResponse, String> {
    let status = match raw_value(resp, "status") {
        Some(Value::Number(n)) => n.as_u64().filter(|s| *s <= 999),
        Some(Value::String(s)) => s.trim().parse::<u64>().ok().filter(|s| *s <= 999),
        _ => None,
    }
    .ok_or("response \"status\" is missing or not an HTTP status number")? as u16;
    let headers =
        headers(raw_value(resp, "headers").as_ref()).map_err(|e| format!("response {e}"))?;
    let body = if let Some(events) = raw_value(resp, "events") {
        Body::Sse(events_body(&events, budget)?)
    } else {
        match raw_body(resp.get("body")) {
            None if resp.contains_key("body") => Body::Bytes(Vec::new()),
            None => Body::NotRecorded,
            Some(text) => super::body_from_recorded(&headers, text.into_bytes(), budget),
        }
    };
    Ok(HttpResponse {
        status,
        headers,
        body,
        ts: raw_timestamp(resp, &["ts"]).or_else(|| raw_timestamp(record, &["response_ts"])),
    })
}

/// `"events": [...]`: already-split SSE events, as objects or bare data strings.
fn events_body(events: &Value, budget: Budget) -> Result<SseBody, String> {
    let list = events
        .as_array()
        .ok_or("response \"events\" is not a list")?;
    let mut body = SseBody::default();
    let mut kept = Events::new(budget);
    for (i, e) in list.iter().enumerate() {
        let (event, data, id, retry, ts) = match e {
            Value::String(s) => ("message".to_owned(), s.clone(), None, None, None),
            Value::Object(o) => (
                o.get("event")
                    .and_then(Value::as_str)
                    .unwrap_or("message")
                    .to_owned(),
                body_text(o.get("data")).unwrap_or_default(),
                o.get("id").map(|v| Arc::from(scalar(v))),
                o.get("retry").and_then(Value::as_u64),
                timestamp(o, &["ts"]),
            ),
            other => {
                return Err(format!(
                    "event {i} is a JSON {}; expected an object or a string",
                    json_kind(other)
                ))
            }
        };
        kept.push(SseEvent {
            event,
            data,
            id,
            retry,
            offset: i as u64,
            ts,
        });
    }
    let (events, cap) = kept.finish();
    body.events = events;
    body.problems.extend(cap);
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::Collect;

    fn run(input: &str) -> Collect {
        let mut sink = Collect::default();
        read(&mut input.as_bytes(), &Limits::default(), &mut sink).unwrap();
        sink
    }

    #[test]
    fn reads_each_record_kind() {
        let c = run(concat!(
            r#"{"ts":"2026-12-02T17:00:00Z","request":{"method":"POST","url":"http://h/mcp","headers":[["Content-Type","application/json"]],"body":"{}"},"response":{"status":200,"headers":{"content-type":"text/event-stream"},"body":"data: {}\n\n"},"end":"closed"}"#,
            "\n",
            r#"{"dir":"c2s","msg":{"jsonrpc":"2.0","id":1,"method":"ping"}}"#,
            "\n\n",
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            "\n",
        ));
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(c.exchanges.len(), 3);
        let Payload::Http(x) = &c.exchanges[0].payload else {
            panic!("http")
        };
        assert_eq!(x.end, End::Closed);
        assert!(matches!(&x.response.as_ref().unwrap().body, Body::Sse(s) if s.events.len() == 1));
        assert_eq!(
            x.request.headers.get("content-type"),
            Some("application/json")
        );
        assert_eq!(c.exchanges[2].locator, Locator::Line { line: 4 });
    }

    #[test]
    fn bad_lines_are_named_and_the_rest_is_read() {
        let c = run("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nnot json\n[1]\n{\"x\":1}\n{\"request\":{},\"response\":{\"status\":\"abc\"}}\n{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{}}\n");
        assert_eq!(c.exchanges.len(), 2);
        let lines: Vec<_> = c.problems.iter().map(|p| p.locator.clone()).collect();
        assert_eq!(lines, [2, 3, 4, 5].map(|line| Locator::Line { line }));
        assert!(c.problems[0].message.starts_with("not JSON"));
        assert!(c.problems[1].message.contains("array"));
        assert!(c.problems[3].message.contains("status"));
    }

    #[test]
    fn overlong_line_is_skipped_without_buffering() {
        let limits = Limits {
            max_record_bytes: 64,
            ..Limits::default()
        };
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":\"{}\"}}\n",
            "a".repeat(1000)
        );
        let input = format!("{long}{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\n");
        let mut sink = Collect::default();
        read(&mut input.as_bytes(), &limits, &mut sink).unwrap();
        assert_eq!(sink.exchanges.len(), 1);
        assert!(sink.problems[0]
            .message
            .contains("over the 64-byte record limit"));
    }

    #[test]
    fn non_utf8_and_foreign_logs() {
        let mut sink = Collect::default();
        read(
            &mut &b"{\"a\":\"\xff\"}\n"[..],
            &Limits::default(),
            &mut sink,
        )
        .unwrap();
        assert!(sink.problems[0]
            .message
            .contains("not valid UTF-8 (bad byte 0xff at column 7)"));
        let c = run("{\"type\":\"user\",\"sessionId\":\"s\",\"message\":{}}\n");
        assert!(
            c.problems.is_empty() && c.exchanges.is_empty(),
            "a Claude Code line without MCP calls is read quietly"
        );
    }

    #[test]
    fn events_form_and_headers_as_objects_list() {
        let c = run(
            r#"{"request":{"method":"POST","url":"/mcp","headers":[{"name":"A","value":"1"}],"body":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}},"response":{"status":200,"events":[{"data":{"jsonrpc":"2.0","id":1,"result":{"content":[]}}},"x"]}}"#,
        );
        let Payload::Http(x) = &c.exchanges[0].payload else {
            panic!("http")
        };
        assert!(String::from_utf8_lossy(&x.request.body).contains("tools/call"));
        let Body::Sse(s) = &x.response.as_ref().unwrap().body else {
            panic!("sse")
        };
        assert_eq!(s.events.len(), 2);
        assert_eq!(s.events[1].data, "x");
    }
}
