//! One JSONL line read in one pass: the members any reading of a line looks at are
//! kept as raw JSON in fixed slots, and a record's request and response are read in
//! the same pass, their headers straight into `Headers` and a body logged as a string
//! decoded as it is checked. Written here with the shared scanner (`crate::json`), not
//! with serde_json, for speed: a body logged as a JSON string escapes every quote of
//! the message inside it, and serde_json took a call per escape to pass over it and
//! the reader a second pass to decode it, a third of a JSONL log's time.
//!
//! The one-pass reader takes only plain shapes. A line it does not take (a duplicate
//! member, headers that are not strings, `request` that is not an object, …) is read
//! again the old way, member by member into a map, which gives every odd shape the
//! meaning and the wording it always had; both ways end in the same `Record`.

use crate::json::{self, RawText};
use crate::model::Headers;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;

/// The members a reading of a line looks at, at any level of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum K {
    Request,
    Response,
    Ts,
    Timestamp,
    Time,
    StartedAt,
    End,
    ClosedBy,
    Error,
    Note,
    EndTs,
    EndedAt,
    ResponseTs,
    Msg,
    Message,
    RawText,
    Dir,
    Direction,
    Jsonrpc,
    Id,
    Result,
    Method,
    Params,
    Url,
    Path,
    Body,
    Status,
    Events,
}

const COUNT: usize = 28;

impl K {
    pub(super) const ALL: [K; COUNT] = [
        K::Request,
        K::Response,
        K::Ts,
        K::Timestamp,
        K::Time,
        K::StartedAt,
        K::End,
        K::ClosedBy,
        K::Error,
        K::Note,
        K::EndTs,
        K::EndedAt,
        K::ResponseTs,
        K::Msg,
        K::Message,
        K::RawText,
        K::Dir,
        K::Direction,
        K::Jsonrpc,
        K::Id,
        K::Result,
        K::Method,
        K::Params,
        K::Url,
        K::Path,
        K::Body,
        K::Status,
        K::Events,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            K::Request => "request",
            K::Response => "response",
            K::Ts => "ts",
            K::Timestamp => "timestamp",
            K::Time => "time",
            K::StartedAt => "started_at",
            K::End => "end",
            K::ClosedBy => "closed_by",
            K::Error => "error",
            K::Note => "note",
            K::EndTs => "end_ts",
            K::EndedAt => "ended_at",
            K::ResponseTs => "response_ts",
            K::Msg => "msg",
            K::Message => "message",
            K::RawText => "raw",
            K::Dir => "dir",
            K::Direction => "direction",
            K::Jsonrpc => "jsonrpc",
            K::Id => "id",
            K::Result => "result",
            K::Method => "method",
            K::Params => "params",
            K::Url => "url",
            K::Path => "path",
            K::Body => "body",
            K::Status => "status",
            K::Events => "events",
        }
    }

    fn of(name: &[u8]) -> Option<K> {
        Some(match name {
            b"request" => K::Request,
            b"response" => K::Response,
            b"ts" => K::Ts,
            b"timestamp" => K::Timestamp,
            b"time" => K::Time,
            b"started_at" => K::StartedAt,
            b"end" => K::End,
            b"closed_by" => K::ClosedBy,
            b"error" => K::Error,
            b"note" => K::Note,
            b"end_ts" => K::EndTs,
            b"ended_at" => K::EndedAt,
            b"response_ts" => K::ResponseTs,
            b"msg" => K::Msg,
            b"message" => K::Message,
            b"raw" => K::RawText,
            b"dir" => K::Dir,
            b"direction" => K::Direction,
            b"jsonrpc" => K::Jsonrpc,
            b"id" => K::Id,
            b"result" => K::Result,
            b"method" => K::Method,
            b"params" => K::Params,
            b"url" => K::Url,
            b"path" => K::Path,
            b"body" => K::Body,
            b"status" => K::Status,
            b"events" => K::Events,
            _ => return None,
        })
    }
}

/// An object's members named in `K`, each as its raw JSON text.
#[derive(Default, Clone, Copy)]
pub(super) struct Members<'a>([Option<RawText<'a>>; COUNT]);

impl<'a> Members<'a> {
    pub(super) fn get(&self, k: K) -> Option<RawText<'a>> {
        self.0[k as usize]
    }

    pub(super) fn has(&self, k: K) -> bool {
        self.get(k).is_some()
    }

    fn from_map(map: &HashMap<Cow<'a, str>, &'a RawValue>) -> Self {
        let mut m = Members::default();
        for k in K::ALL {
            m.0[k as usize] = map.get(k.name()).map(|r| RawText(r.get()));
        }
        m
    }
}

/// A record's request or response.
pub(super) struct Part<'a> {
    pub(super) members: Members<'a>,
    /// Its `headers`, or why they are not headers (reported when the record reaches
    /// them, so that the first fault of a record is still the one named).
    pub(super) headers: Result<Headers, String>,
    /// Its `body` when that is a string, decoded as it was read (`None` otherwise,
    /// and for a string that does not decode: `members` has it raw).
    pub(super) body: Option<Cow<'a, str>>,
}

/// A record's `response` member.
#[allow(clippy::large_enum_variant)] // one per line, on the stack: a box would cost an allocation
pub(super) enum Reply<'a> {
    /// Absent or `null`: no response.
    Absent,
    Object(Part<'a>),
    /// An object the map reader could not read.
    Unreadable,
    /// Not an object: the JSON kind it is.
    Other(&'static str),
}

/// One line that is a JSON object.
pub(super) struct Record<'a> {
    pub(super) top: Members<'a>,
    /// `request` when present: `None` when it is not an object.
    pub(super) request: Option<Option<Part<'a>>>,
    pub(super) response: Reply<'a>,
}

type Obj<'a> = HashMap<Cow<'a, str>, &'a RawValue>;

/// Reads a line; `None` when it is not a JSON object.
pub(super) fn record(text: &str) -> Option<Record<'_>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    one_pass(text).or_else(|| by_map(text))
}

/// The old reading, member by member into a map: duplicate members keep the last.
pub(super) fn by_map(text: &str) -> Option<Record<'_>> {
    let obj: Obj = serde_json::from_str(text).ok()?;
    let top = Members::from_map(&obj);
    let request = obj
        .get("request")
        .map(|r| shallow(r.get()).map(|o| part_of(&o)));
    let response = match obj.get("response").map(|r| r.get().trim()) {
        None | Some("null") => Reply::Absent,
        Some(r) if r.starts_with('{') => match shallow(r) {
            Some(o) => Reply::Object(part_of(&o)),
            None => Reply::Unreadable,
        },
        Some(other) => Reply::Other(
            serde_json::from_str::<Value>(other)
                .map(|v| json_kind(&v))
                .unwrap_or("value"),
        ),
    };
    Some(Record {
        top,
        request,
        response,
    })
}

fn shallow(text: &str) -> Option<Obj<'_>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str(text).ok()
}

fn part_of<'a>(o: &Obj<'a>) -> Part<'a> {
    let value = o
        .get("headers")
        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
    Part {
        members: Members::from_map(o),
        headers: headers_of_value(value.as_ref()),
        body: None,
    }
}

pub(super) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Headers from a JSON value, in any logged shape; the error names what is wrong.
pub(super) fn headers_of_value(v: Option<&Value>) -> Result<Headers, String> {
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

pub(super) fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The text of a raw JSON string, unescaped; `None` when `raw` is not a string or
/// does not decode (a lone surrogate). Most strings in a log have no escape and are
/// borrowed.
pub(super) fn string(raw: RawText<'_>) -> Option<Cow<'_, str>> {
    json::string_value(raw.get())
}

// ---- The one-pass reader ----

/// How deep a member's value may nest for the one-pass reader; a deeper line is left
/// to `by_map`, whose serde_json decides (it passes over raw members at any depth,
/// but reads headers only 128 deep).
pub(super) const DEPTH: usize = 100;

/// A member name: one of `K`, `headers`, or one no reader looks at.
enum Name {
    Known(K),
    Headers,
    Other,
}

fn name(key: &[u8]) -> Name {
    match K::of(key) {
        Some(k) => Name::Known(k),
        None if key == b"headers" => Name::Headers,
        None => Name::Other,
    }
}

/// The one-pass reading; `None` for a shape it leaves to `by_map` (an escaped key, a
/// member given twice, headers that are not strings, …) and for any text that is
/// not JSON.
pub(super) fn one_pass(text: &str) -> Option<Record<'_>> {
    let b = text.as_bytes();
    let mut top = Members::default();
    let mut request = None;
    let mut response = None;
    let end = json::object(b, json::ws(b, 0), |key, i| match name(key) {
        Name::Known(K::Request) => {
            if request.is_some() {
                return None;
            }
            let (end, part) = part(text, i)?;
            request = Some(part);
            Some(end)
        }
        Name::Known(K::Response) => {
            if response.is_some() {
                return None;
            }
            if let Some(end) = json::literal(b, i, b"null") {
                response = Some(Reply::Absent);
                return Some(end);
            }
            let (end, part) = part(text, i)?;
            response = Some(Reply::Object(part));
            Some(end)
        }
        Name::Known(k) => put(&mut top, k, text, i),
        Name::Headers | Name::Other => json::value_within(b, i, DEPTH),
    })?;
    (json::ws(b, end) == b.len()).then_some(Record {
        top,
        request: request.map(Some),
        response: response.unwrap_or(Reply::Absent),
    })
}

/// Puts the raw member at `i` in its slot; its end. A second one of the same name is
/// left to `by_map`.
fn put<'a>(members: &mut Members<'a>, k: K, text: &'a str, i: usize) -> Option<usize> {
    let slot = &mut members.0[k as usize];
    if slot.is_some() {
        return None;
    }
    let end = json::value_within(text.as_bytes(), i, DEPTH)?;
    *slot = Some(RawText(text.get(i..end)?));
    Some(end)
}

/// The request or response object at `i` (only an object) and its end.
fn part(text: &str, i: usize) -> Option<(usize, Part<'_>)> {
    let b = text.as_bytes();
    let mut members = Members::default();
    let mut headers = None;
    let mut body = None;
    let end = json::object(b, i, |key, i| match name(key) {
        Name::Known(K::Body) if b.get(i) == Some(&b'"') && !members.has(K::Body) => {
            match json::unescaped(text, i) {
                Some((end, s)) => {
                    body = Some(s);
                    members.0[K::Body as usize] = Some(RawText(text.get(i..end)?));
                    Some(end)
                }
                // A lone surrogate: kept raw, as serde_json passes over it.
                None => put(&mut members, K::Body, text, i),
            }
        }
        Name::Known(k) => put(&mut members, k, text, i),
        Name::Headers => {
            if headers.is_some() {
                return None;
            }
            let (end, h) = headers_at(text, i)?;
            headers = Some(h);
            Some(end)
        }
        Name::Other => json::value_within(b, i, DEPTH),
    })?;
    Some((
        end,
        Part {
            members,
            headers: Ok(headers.unwrap_or_default()),
            body,
        },
    ))
}

/// Headers at `i` as a list of `[name, value]` or `{"name", "value"}`, or an object
/// of values or lists of values; names and values strings (or `null`, read as "").
fn headers_at(text: &str, i: usize) -> Option<(usize, Headers)> {
    let b = text.as_bytes();
    // Room for the usual few, allocated once (a push into an empty list takes the
    // growth path); `null` needs none.
    let mut h = Headers::with_capacity(if b.get(i) == Some(&b'n') { 0 } else { 4 });
    let end = match b.get(i)? {
        b'n' => json::literal(b, i, b"null")?,
        b'[' => json::array(b, i, |i| {
            let (end, name, value) = entry(text, i)?;
            h.push(name, value);
            Some(end)
        })?,
        b'{' => json::object(b, i, |key, i| {
            let name = std::str::from_utf8(key).ok()?;
            // serde_json's map keeps one value per name, at the first one's place:
            // a name given twice is left to `by_map`, and so is one with no value.
            if h.iter().any(|(n, _)| n == name) {
                return None;
            }
            let before = h.len();
            let end = values(text, i, |v| h.push(name, v))?;
            (h.len() > before).then_some(end)
        })?,
        _ => return None,
    };
    Some((end, h))
}

/// One entry of a headers list, and its end.
fn entry(text: &str, i: usize) -> Option<(usize, Cow<'_, str>, Cow<'_, str>)> {
    let b = text.as_bytes();
    match b.get(i)? {
        b'[' => {
            let mut pair: [Option<Cow<str>>; 2] = [None, None];
            let mut n = 0;
            let end = json::array(b, i, |i| {
                let (end, t) = text_at(text, i)?;
                *pair.get_mut(n)? = Some(t);
                n += 1;
                Some(end)
            })?;
            let [Some(name), Some(value)] = pair else {
                return None;
            };
            Some((end, name, value))
        }
        b'{' => {
            let (mut name, mut value) = (None, None);
            let end = json::object(b, i, |key, i| {
                let slot = match key {
                    b"name" => &mut name,
                    b"value" => &mut value,
                    _ => return json::value_within(b, i, DEPTH),
                };
                if slot.is_some() {
                    return None;
                }
                let (end, t) = text_at(text, i)?;
                *slot = Some(t);
                Some(end)
            })?;
            Some((end, name?, value.unwrap_or_default()))
        }
        _ => None,
    }
}

/// A header's value or list of values at `i`, each given to `push`; its end.
fn values<'a>(text: &'a str, i: usize, mut push: impl FnMut(Cow<'a, str>)) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(i) == Some(&b'[') {
        return json::array(b, i, |i| {
            let (end, t) = text_at(text, i)?;
            push(t);
            Some(end)
        });
    }
    let (end, t) = text_at(text, i)?;
    push(t);
    Some(end)
}

/// A string at `i`, or `null` read as "" (as the map reader reads both); nothing
/// else. Its end and its text, borrowed unless it had an escape.
fn text_at(text: &str, i: usize) -> Option<(usize, Cow<'_, str>)> {
    match text.as_bytes().get(i)? {
        b'n' => Some((
            json::literal(text.as_bytes(), i, b"null")?,
            Cow::Borrowed(""),
        )),
        _ => json::unescaped(text, i),
    }
}
