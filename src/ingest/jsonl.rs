//! JSONL inputs, detected per line (`docs/input-formats.md`):
//! HTTP exchange records (`{"request": …, "response": …}`), message transcripts
//! (`{"dir": "c2s", "msg": …}`) and bare JSON-RPC lines (a stdio `tee`).
//! A line that is none of these is a problem naming its line; reading goes on.

use super::{Problem, Sink};
use crate::config::Limits;
use crate::json::RawText;
use crate::model::{
    Body, Direction, End, Exchange, HttpExchange, HttpRequest, HttpResponse, Locator, Payload,
    SseBody, SseEvent, StdioMessage, Timestamp,
};
use crate::sse::{Budget, Events};
use rec::{json_kind, scalar, Members, Part, Record, Reply, K};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::io::{self, BufRead};
use std::sync::Arc;

mod rec;

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
#[cfg_attr(test, derive(Debug, PartialEq))]
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
#[cfg_attr(test, derive(Debug, PartialEq))]
enum Line {
    Payload(Payload),
    /// A line of a client log (Claude Code, Codex, OpenTelemetry), read with state.
    Client(&'static str, Map<String, Value>),
    /// A JSON object of no MCP shape.
    Foreign,
}

/// A raw member that is a JSON string, unescaped.
fn raw_str(m: &Members, k: K) -> Option<String> {
    rec::string(m.get(k)?).map(Cow::into_owned)
}

fn raw_timestamp(m: &Members, keys: &[K]) -> Option<Timestamp> {
    keys.iter().find_map(|k| {
        let raw = m.get(*k)?;
        let text = raw.get().trim();
        match text.as_bytes().first() {
            Some(b'"') => Timestamp::parse(&rec::string(raw)?),
            Some(b'-' | b'0'..=b'9') => Timestamp::parse(text),
            _ => None,
        }
    })
}

/// A body as logged: a string (unescaped), or JSON logged as a JSON value rather
/// than as text (kept as written); `null` is no body.
fn raw_body(raw: Option<RawText>) -> Option<String> {
    let raw = raw?;
    let text = raw.get().trim();
    if text == "null" {
        return None;
    }
    if text.starts_with('"') {
        return rec::string(raw).map(Cow::into_owned);
    }
    Some(text.to_owned())
}

/// A part's body as `raw_body` reads it, taken as decoded when the reader did.
fn body_of(decoded: Option<Cow<str>>, members: &Members) -> Option<String> {
    match decoded {
        Some(text) => Some(text.into_owned()),
        None => raw_body(members.get(K::Body)),
    }
}

fn parse_line(text: &str, budget: Budget) -> Result<Line, Rejected> {
    read_record(text, rec::record(text), budget)
}

/// A line as `record` read it (`None`: not a JSON object).
fn read_record(text: &str, record: Option<Record>, budget: Budget) -> Result<Line, Rejected> {
    let Some(Record {
        top,
        request,
        response,
    }) = record
    else {
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
    if let Some(request) = request {
        return http_record(&top, request, response, budget)
            .map(|x| Line::Payload(Payload::Http(x)))
            .map_err(Rejected::Broken);
    }
    let msg = top.get(K::Msg).or_else(|| top.get(K::Message));
    // A line the process wrote that is not JSON (stdout noise, a crash trace) is
    // recorded as `"raw": text` (or as a string `msg`): it is kept as that text,
    // so the pairer can tell a garbled reply from a missing one.
    // The text, and whether it is JSON the line's reading checked (an object or an
    // array is; a string's content and `raw` text are whatever the process wrote).
    let text_of = |v: RawText| -> Option<(String, bool)> {
        let t = v.get().trim_start();
        if t.starts_with('{') || t.starts_with('[') {
            Some((v.get().to_owned(), true))
        } else if t.starts_with('"') {
            rec::string(v).map(|s| (s.into_owned(), false))
        } else {
            None
        }
    };
    let line_text = msg
        .and_then(text_of)
        .or_else(|| raw_str(&top, K::RawText).map(|s| (s, false)));
    if let (Some((json, checked)), Some(dir)) =
        (line_text, top.get(K::Dir).or_else(|| top.get(K::Direction)))
    {
        let dir = parse_direction(rec::string(dir).as_deref()).ok_or_else(|| {
            Rejected::Broken(format!(
                "\"dir\" is {}; expected \"c2s\" or \"s2c\"",
                dir.get()
            ))
        })?;
        return Ok(Line::Payload(Payload::Stdio(StdioMessage {
            dir: Some(dir),
            json,
            ts: raw_timestamp(&top, &[K::Ts, K::Timestamp, K::Time]),
            checked,
            logged_by_client: false,
        })));
    }
    if is_jsonrpc(&top) {
        return Ok(Line::Payload(Payload::Stdio(StdioMessage {
            dir: None,
            json: text.to_owned(),
            ts: None,
            // The whole line, read above as one record.
            checked: true,
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

fn is_jsonrpc(obj: &Members) -> bool {
    let method_is_string = obj
        .get(K::Method)
        .is_some_and(|m| m.get().trim_start().starts_with('"'));
    obj.has(K::Jsonrpc)
        || (obj.has(K::Id) && (obj.has(K::Result) || obj.has(K::Error)))
        || (method_is_string && (obj.has(K::Params) || obj.has(K::Id)))
}

fn parse_direction(v: Option<&str>) -> Option<Direction> {
    match v?.to_ascii_lowercase().as_str() {
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

/// A body as logged: a string, or JSON logged as a JSON value rather than text.
fn body_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn http_record(
    top: &Members,
    req: Option<Part>,
    response: Reply,
    budget: Budget,
) -> Result<HttpExchange, String> {
    let req = req.ok_or("\"request\" is not an object")?;
    let ts = raw_timestamp(top, &[K::Ts, K::Timestamp, K::Time, K::StartedAt]);
    let request = HttpRequest {
        method: raw_str(&req.members, K::Method).unwrap_or_else(|| "POST".to_owned()),
        url: raw_str(&req.members, K::Url)
            .or_else(|| raw_str(&req.members, K::Path))
            .unwrap_or_default(),
        headers: req.headers.map_err(|e| format!("request {e}"))?,
        body: body_of(req.body, &req.members)
            .unwrap_or_default()
            .into_bytes(),
        ts: raw_timestamp(&req.members, &[K::Ts]).or(ts),
    };
    let end_field = raw_str(top, K::End);
    let end = match end_field.as_deref() {
        Some(s) => End::parse(s).ok_or_else(|| {
            format!("\"end\" is \"{s}\"; expected complete, closed, client_closed, reset, capture_ended or truncated")
        })?,
        None => End::Complete,
    };
    // A recorder that says who closed a stream ("closed_by": "client") says the
    // client gave up: in 2026-07-28 that is how a call is cancelled.
    let end = match (end, raw_str(top, K::ClosedBy).as_deref()) {
        (End::Closed | End::Reset, Some("client")) => End::ClientClosed,
        (end, _) => end,
    };
    let recorder_note = raw_str(top, K::Error).or_else(|| raw_str(top, K::Note));
    let response = match response {
        Reply::Absent => None,
        Reply::Object(resp) => Some(http_response(resp, top, budget)?),
        Reply::Unreadable => return Err("\"response\" is not a readable object".to_owned()),
        Reply::Other(kind) => {
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
        end_ts: raw_timestamp(top, &[K::EndTs, K::EndedAt]),
        recorder_note,
        tcp: None,
        part: None,
    })
}

/// `status` as a number or a numeric string, at most 999.
fn status(raw: Option<RawText>) -> Option<u16> {
    let text = raw?.get();
    // The usual plain number, without building a `Value` (JSON has no leading zeros,
    // so up to three digits is at most 999).
    if (1..=3).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().ok();
    }
    match serde_json::from_str::<Value>(text).ok()? {
        Value::Number(n) => n.as_u64().filter(|s| *s <= 999),
        Value::String(s) => s.trim().parse::<u64>().ok().filter(|s| *s <= 999),
        _ => None,
    }
    .map(|s| s as u16)
}

fn http_response(resp: Part, record: &Members, budget: Budget) -> Result<HttpResponse, String> {
    let m = resp.members;
    let status = status(m.get(K::Status))
        .ok_or("response \"status\" is missing or not an HTTP status number")?;
    let headers = resp.headers.map_err(|e| format!("response {e}"))?;
    let events = m
        .get(K::Events)
        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
    let body = if let Some(events) = events {
        Body::Sse(events_body(&events, budget)?)
    } else {
        match body_of(resp.body, &m) {
            None if m.has(K::Body) => Body::Bytes(Vec::new()),
            None => Body::NotRecorded,
            Some(text) => super::body_from_recorded(&headers, text.into_bytes(), budget),
        }
    };
    Ok(HttpResponse {
        status,
        headers,
        body,
        ts: raw_timestamp(&m, &[K::Ts]).or_else(|| raw_timestamp(record, &[K::ResponseTs])),
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

    /// Only JSON the line's reading checked is marked so (decoding then skips its
    /// check): a `msg` given as a string or a `raw` line is whatever was written.
    #[test]
    fn stdio_text_is_marked_checked_only_when_read_as_json() {
        let c = run(concat!(
            r#"{"dir":"s2c","msg":{"jsonrpc":"2.0","id":1,"result":{}}}"#,
            "\n",
            r#"{"dir":"s2c","msg":"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{bad}}"}"#,
            "\n",
            r#"{"dir":"s2c","raw":"{\"id\":3,\"result\":[}"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            "\n",
        ));
        let marks: Vec<(bool, &str)> = c
            .exchanges
            .iter()
            .map(|x| match &x.payload {
                Payload::Stdio(m) => (m.checked, m.json.as_str()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            marks,
            [
                (true, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
                (false, r#"{"jsonrpc":"2.0","id":2,"result":{bad}}"#),
                (false, r#"{"id":3,"result":[}"#),
                (true, r#"{"jsonrpc":"2.0","id":4,"result":{}}"#),
            ]
        );
        // Unchecked text that only looks like a message is not taken for one.
        let items =
            crate::jsonrpc::decode_text(marks[1].1, crate::jsonrpc::Place::Body, None, None);
        assert!(items[0].message().is_none());
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

    /// A line read in one pass, and the same line read the old way (member by member
    /// into a map); `None` when the one-pass reader leaves the line to the old way.
    fn both_ways(line: &str) -> (Option<Result<Line, Rejected>>, Result<Line, Rejected>) {
        let budget = Budget::default();
        let fast = rec::one_pass(line).map(|r| read_record(line, Some(r), budget));
        (fast, read_record(line, rec::by_map(line), budget))
    }

    /// Lines the one-pass reader takes, each read as the old reader read it.
    const PLAIN: &[&str] = &[
        r#"{"ts":"2026-12-02T17:00:00Z","request":{"method":"POST","url":"http://h/mcp","headers":[["Content-Type","application/json"]],"body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"},"response":{"status":200,"headers":{"content-type":"text/event-stream"},"body":"data: {}\n\n"},"end":"closed"}"#,
        r#"{"timestamp":1764694800,"request":{"path":"/mcp","headers":{"A":["1","2"],"B":null},"body":{"jsonrpc":"2.0","id":1,"method":"x"}},"response":{"status":" 202 ","body":null}}"#,
        r#"{"time":"1764694800123","request":{"url":"/m","headers":[{"name":"A","value":"1","comment":{}},{"name":"B"}],"body":"caf\u00e9 \ud83d\ude00 \/ \b\f\t\r"},"response":{"status":500,"headers":null,"body":12.50}}"#,
        r#"{"started_at":"2026-12-02T17:00:00Z","request":{"method":7,"url":null,"ts":"2026-12-02T17:00:01Z"},"response":{"status":200,"ts":"x"},"response_ts":"2026-12-02T17:00:02Z","end_ts":"2026-12-02T17:00:03Z","error":{"a":1},"note":"cut","closed_by":"client","end":"reset"}"#,
        r#"{"request":{"body":""},"response":null,"ended_at":5}"#,
        r#"{"request":{},"response":{"status":200,"events":[{"data":{"a":1},"id":7,"ts":"2026-12-02T17:00:00Z"},"raw",{"event":"e","data":"d","retry":10}]}}"#,
        r#"{"request":{},"response":{"status":200,"events":null}}"#,
        r#"{"request":{"body":"\ud800"},"response":{"status":200,"body":"a\"b"}}"#,
        r#"{"request":{},"response":{"status":1000}}"#,
        r#"{"request":{},"response":{"status":200.0}}"#,
        r#"{"request":{},"end":"sideways"}"#,
        r#"{"dir":"c2s","msg":{"jsonrpc":"2.0","id":1,"method":"ping"},"ts":"2026-12-02T17:00:00Z"}"#,
        r#"{"direction":"RECV","message":"not json at all","time":1764694800}"#,
        r#"{"dir":"c2s","raw":"garbled \"reply\""}"#,
        r#"{"dir":"up","msg":{}}"#,
        r#"{"dir":7,"msg":"x"}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        r#"{"id":1,"error":{"code":1}}"#,
        r#"{"method":"x","params":{}}"#,
        r#"{"method":1,"id":1}"#,
        r#"{"type":"user","sessionId":"s","message":{}}"#,
        r#"{"x":1}"#,
    ];

    /// Lines left to the old reader: the one-pass reader must not take them.
    const ODD: &[&str] = &[
        r#"{"ts":"a","ts":"2026-12-02T17:00:00Z","request":{}}"#,
        r#"{"request":{"url":"/a","url":"/b"}}"#,
        r#"{"request":{"headers":{"A":"1","B":"2","A":"3"}}}"#,
        r#"{"request":{"headers":{"A":[]}}}"#,
        r#"{"request":{"headers":[{"name":"A","name":"B"}]}}"#,
        r#"{"request":{"headers":[["A",1]]}}"#,
        r#"{"request":{"headers":{"A":true}}}"#,
        r#"{"request":{"headers":[["A","1","2"]]}}"#,
        r#"{"request":{"headers":[["A"]]}}"#,
        r#"{"request":{"headers":[{"value":"1"}]}}"#,
        r#"{"request":{"headers":7}}"#,
        r#"{"request":{"headers":[["A","\ud800"]]}}"#,
        r#"{"request":["POST","/mcp"]}"#,
        r#"{"request":null}"#,
        r#"{"request":"POST /mcp"}"#,
        r#"{"request":{},"response":"200 OK"}"#,
        r#"{"request":{},"response":[200]}"#,
        r#"{"request":{},"request":{"url":"/b"}}"#,
        r#"{"request":{"headers":null,"headers":[]}}"#,
        r#"{"jsonrpc":"2.0","response":3}"#,
        r#"{"re\u0071uest":{"url":"/esc\u0061ped"},"headers":[1]}"#,
        r#"{"request":{"headers":{"\u0041":"1"}}}"#,
    ];

    #[test]
    fn one_pass_reads_as_the_map_reader_did() {
        for line in PLAIN {
            let (fast, old) = both_ways(line);
            let fast = fast.unwrap_or_else(|| panic!("not read in one pass: {line}"));
            assert_eq!(fast, old, "{line}");
        }
        for line in ODD {
            let (fast, old) = both_ways(line);
            assert!(fast.is_none(), "read in one pass: {line}");
            assert_eq!(parse_line(line, Budget::default()), old, "{line}");
        }
    }

    #[test]
    fn odd_shapes_keep_their_old_wording() {
        let said = |line: &str| match parse_line(line, Budget::default()) {
            Err(Rejected::Broken(m) | Rejected::NotJson(m)) => m,
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(said(r#"{"request":null}"#), "\"request\" is not an object");
        assert_eq!(
            said(r#"{"request":{},"response":[200]}"#),
            "\"response\" is a JSON array; expected an object or null"
        );
        assert_eq!(
            said(r#"{"request":{"headers":7}}"#),
            "request headers are a JSON number; expected an object or a list of [name, value]"
        );
        assert_eq!(
            said(r#"{"request":{"headers":[["A"]]}}"#),
            "request a header entry is [\"A\"]; expected [name, value]"
        );
        let Ok(Line::Payload(Payload::Http(x))) = parse_line(
            r#"{"request":{"headers":{"A":"1","B":"2","A":"3"}}}"#,
            Budget::default(),
        ) else {
            panic!("http")
        };
        // A repeated name keeps its first place and its last value, as a JSON map does.
        assert_eq!(
            x.request.headers.iter().collect::<Vec<_>>(),
            [("A", "3"), ("B", "2")]
        );
    }

    #[test]
    fn names_match_their_keys() {
        for k in rec::K::ALL {
            if matches!(k, rec::K::Request | rec::K::Response) {
                continue; // read as objects, not kept raw
            }
            let line = format!(r#"{{"{}":1}}"#, k.name());
            assert!(rec::one_pass(&line).expect("read").top.has(k), "{k:?}");
        }
    }

    /// Deep nesting in a member no reader looks at: the one-pass reader takes it up
    /// to `DEPTH`, leaves it to the map reader past that, and the line reads the same.
    #[test]
    fn deep_nesting_reads_as_the_map_reader_reads_it() {
        let nested = |n: usize| {
            format!(
                r#"{{"request":{{}},"x":{}1{}}}"#,
                "[".repeat(n),
                "]".repeat(n)
            )
        };
        assert!(rec::one_pass(&nested(rec::DEPTH)).is_some());
        for n in [rec::DEPTH + 1, 200, 100_000] {
            let (fast, old) = both_ways(&nested(n));
            assert!(fast.is_none());
            assert!(
                matches!(old, Ok(Line::Payload(Payload::Http(_)))),
                "{old:?}"
            );
            assert_eq!(parse_line(&nested(n), Budget::default()), old);
        }
    }

    fn member() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let values = prop::sample::select(vec![
            r#""x""#,
            r#""2026-12-02T17:00:00Z""#,
            "1764694800",
            "null",
            "{}",
            "[]",
            "true",
            "1.5",
            "200",
            r#"" 404 ""#,
            r#""a\"b\\c\u00e9\ud83d\ude00""#,
            r#""\ud800""#,
            r#""c2s""#,
            r#""closed""#,
            r#""client""#,
            r#"[["A","1"],["b",null]]"#,
            r#"{"A":"1","B":["2","3"]}"#,
            r#"{"A":"1","A":"2"}"#,
            r#"[{"name":"n","value":"v","x":1}]"#,
            r#"[["A",1]]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"[{"data":"d"},"e"]"#,
        ]);
        let keys = prop::sample::select(vec![
            "request",
            "response",
            "ts",
            "timestamp",
            "time",
            "started_at",
            "end",
            "closed_by",
            "error",
            "note",
            "end_ts",
            "ended_at",
            "response_ts",
            "msg",
            "message",
            "raw",
            "dir",
            "direction",
            "jsonrpc",
            "id",
            "result",
            "method",
            "params",
            "url",
            "path",
            "body",
            "status",
            "events",
            "headers",
            "other",
            "re\\u0071uest",
        ]);
        let object = |members: Vec<(&str, String)>| {
            let inner: Vec<String> = members
                .into_iter()
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect();
            format!("{{{}}}", inner.join(","))
        };
        let leaf = (keys.clone(), values.clone()).prop_map(|(k, v)| (k, v.to_owned()));
        let part = proptest::collection::vec(leaf.clone(), 0..6).prop_map(object);
        let nested = (keys, part).prop_map(|(k, v)| (k, v));
        let any = prop_oneof![3 => leaf, 2 => nested];
        proptest::collection::vec(any, 0..8).prop_map(object)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

        /// Whatever members a line has, in whatever order or repetition, the one-pass
        /// reader reads it as the map reader does, or leaves it to it.
        #[test]
        fn one_pass_agrees_with_the_map_reader(line in member()) {
            let (fast, old) = both_ways(&line);
            if let Some(fast) = fast {
                proptest::prop_assert_eq!(&fast, &old, "{}", line);
            }
            proptest::prop_assert_eq!(parse_line(&line, Budget::default()), old, "{}", line);
        }

        /// A line one byte off (a byte put in, taken out or changed anywhere) is read
        /// in one pass only when serde_json reads it too, and then as the map reader
        /// reads it: the one-pass reader never takes text serde_json refuses.
        #[test]
        fn a_line_one_byte_off_is_read_as_serde_json_reads_it(
            line in member(),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            op in 0..3u8,
            byte in proptest::sample::select(&b"{}[],:\"\\ 0-.eE+tnu\t\nax\x01"[..]),
        ) {
            let Some(line) = crate::json::one_byte_off(line, at, op, byte) else { return Ok(()) };
            let (fast, old) = both_ways(&line);
            if let Some(fast) = fast {
                proptest::prop_assert!(serde_json::from_str::<serde::de::IgnoredAny>(&line).is_ok(), "{}", line);
                proptest::prop_assert_eq!(&fast, &old, "{}", line);
            }
            proptest::prop_assert_eq!(parse_line(&line, Budget::default()), old, "{}", line);
        }

        /// Strings unescape as serde_json unescapes them: short and long, with
        /// escapes close together and far apart.
        #[test]
        fn strings_unescape_as_serde_json_does(text in "(\\PC|\"|\\\\|[a-z ]{1,70}){0,40}", raw in "[a-z\\\\\"/u0-9dDfF]{0,12}") {
            let quoted = serde_json::to_string(&text).unwrap();
            let v: &serde_json::value::RawValue = serde_json::from_str(&quoted).unwrap();
            let got = rec::string(RawText(v.get()));
            proptest::prop_assert_eq!(got.as_deref(), Some(text.as_str()));
            let quoted = format!("\"{raw}\"");
            if let Ok(v) = serde_json::from_str::<&serde_json::value::RawValue>(&quoted) {
                proptest::prop_assert_eq!(
                    rec::string(RawText(v.get())).map(Cow::into_owned),
                    serde_json::from_str::<String>(&quoted).ok()
                );
            }
        }
    }
}
