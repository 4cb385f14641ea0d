//! One JSONL line read in one pass (issue #13): the members any reading of a line
//! looks at are kept as raw JSON in fixed slots, and a record's request and response
//! are read in the same pass, their headers straight into `Headers`.
//!
//! The one-pass reader takes only plain shapes. A line it does not take (a duplicate
//! member, headers that are not strings, `request` that is not an object, …) is read
//! again the old way, member by member into a map, which gives every odd shape the
//! meaning and the wording it always had; both ways end in the same `Record`.

use crate::model::Headers;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

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
    Raw,
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
        K::Raw,
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
            K::Raw => "raw",
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

    fn of(name: &str) -> Option<K> {
        Some(match name {
            "request" => K::Request,
            "response" => K::Response,
            "ts" => K::Ts,
            "timestamp" => K::Timestamp,
            "time" => K::Time,
            "started_at" => K::StartedAt,
            "end" => K::End,
            "closed_by" => K::ClosedBy,
            "error" => K::Error,
            "note" => K::Note,
            "end_ts" => K::EndTs,
            "ended_at" => K::EndedAt,
            "response_ts" => K::ResponseTs,
            "msg" => K::Msg,
            "message" => K::Message,
            "raw" => K::Raw,
            "dir" => K::Dir,
            "direction" => K::Direction,
            "jsonrpc" => K::Jsonrpc,
            "id" => K::Id,
            "result" => K::Result,
            "method" => K::Method,
            "params" => K::Params,
            "url" => K::Url,
            "path" => K::Path,
            "body" => K::Body,
            "status" => K::Status,
            "events" => K::Events,
            _ => return None,
        })
    }
}

/// An object's members named in `K`, each as its raw JSON text.
#[derive(Default, Clone, Copy)]
pub(super) struct Members<'a>([Option<&'a RawValue>; COUNT]);

impl<'a> Members<'a> {
    pub(super) fn get(&self, k: K) -> Option<&'a RawValue> {
        self.0[k as usize]
    }

    pub(super) fn has(&self, k: K) -> bool {
        self.get(k).is_some()
    }

    fn from_map(map: &HashMap<Cow<'a, str>, &'a RawValue>) -> Self {
        let mut m = Members::default();
        for k in K::ALL {
            m.0[k as usize] = map.get(k.name()).copied();
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

/// The one-pass reading; `None` for a shape it leaves to `by_map`.
pub(super) fn one_pass(text: &str) -> Option<Record<'_>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let rec = de.deserialize_map(TopVisitor).ok()?;
    de.end().ok()?;
    Some(rec)
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
/// does not unescape. Most strings in a log have no escape and are borrowed.
pub(super) fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if memchr::memchr(b'\\', inner.as_bytes()).is_none() {
        return Some(Cow::Borrowed(inner));
    }
    // Escapes other than the common ones (surrogates) are left to serde_json.
    match unescape(inner) {
        Some(s) => Some(Cow::Owned(s)),
        None => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// Unescapes the inside of a JSON string that serde_json has already checked; `None`
/// on a `\u` surrogate, which is left to serde_json's own rules.
fn unescape(inner: &str) -> Option<String> {
    let b = inner.as_bytes();
    let mut out = String::with_capacity(inner.len());
    let mut i = 0;
    while let Some(at) = next_backslash(b, i) {
        // Escapes are ASCII, so every cut here falls between characters.
        out.push_str(inner.get(i..at)?);
        i = at;
        let c = match *b.get(i + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let code = u32::from_str_radix(inner.get(i + 2..i + 6)?, 16).ok()?;
                i += 4;
                char::from_u32(code)?
            }
            _ => return None,
        };
        out.push(c);
        i += 2;
    }
    out.push_str(&inner[i..]);
    Some(out)
}

/// The first backslash at or after `from`. A body logged as a JSON string escapes
/// every quote of the JSON inside it, so backslashes come every few bytes: they are
/// looked for 8 bytes at a time in a register, and memchr takes over on a long run.
fn next_backslash(b: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    while let Some(w) = b.get(j..j + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
        let hits = crate::text::bytes_equal(u64::from_le_bytes(w), b'\\');
        if hits != 0 {
            return Some(j + (hits.trailing_zeros() / 8) as usize);
        }
        j += 8;
        if j - from >= 64 {
            return memchr::memchr(b'\\', b.get(j..)?).map(|k| j + k);
        }
    }
    b.get(j..)?.iter().position(|&c| c == b'\\').map(|k| j + k)
}

// ---- The one-pass reader ----

/// Any failure: the line is read again by `by_map`, which has the wording.
fn no<E: de::Error>() -> E {
    E::custom("not read in one pass")
}

/// A member name: one of `K`, `headers`, or one no reader looks at.
enum Name {
    Known(K),
    Headers,
    Other,
}

struct NameSeed;

impl<'de> DeserializeSeed<'de> for NameSeed {
    type Value = Name;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Name, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for NameSeed {
    type Value = Name;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Name, E> {
        Ok(match K::of(v) {
            Some(k) => Name::Known(k),
            None if v == "headers" => Name::Headers,
            None => Name::Other,
        })
    }
}

/// Puts a raw member in its slot; a second one of the same name is left to `by_map`.
fn put<'de, A: MapAccess<'de>>(
    members: &mut Members<'de>,
    k: K,
    map: &mut A,
) -> Result<(), A::Error> {
    let slot = &mut members.0[k as usize];
    if slot.is_some() {
        return Err(no());
    }
    *slot = Some(map.next_value::<&'de RawValue>()?);
    Ok(())
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Record<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Record<'de>, A::Error> {
        let mut top = Members::default();
        let mut request = None;
        let mut response = None;
        while let Some(name) = map.next_key_seed(NameSeed)? {
            match name {
                Name::Known(K::Request) => {
                    if request.is_some() {
                        return Err(no());
                    }
                    request = Some(map.next_value_seed(PartSeed)?);
                }
                Name::Known(K::Response) => {
                    if response.is_some() {
                        return Err(no());
                    }
                    response = Some(map.next_value_seed(ReplySeed)?);
                }
                Name::Known(k) => put(&mut top, k, &mut map)?,
                Name::Headers | Name::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Record {
            top,
            request: request.map(Some),
            response: response.unwrap_or(Reply::Absent),
        })
    }
}

/// A request or response object (only an object: `deserialize_map` takes no list).
struct PartSeed;

impl<'de> DeserializeSeed<'de> for PartSeed {
    type Value = Part<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Part<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PartSeed {
    type Value = Part<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part<'de>, A::Error> {
        let mut members = Members::default();
        let mut headers = None;
        while let Some(name) = map.next_key_seed(NameSeed)? {
            match name {
                Name::Known(k) => put(&mut members, k, &mut map)?,
                Name::Headers => {
                    if headers.is_some() {
                        return Err(no());
                    }
                    headers = Some(map.next_value_seed(HeadersSeed)?);
                }
                Name::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Part {
            members,
            headers: Ok(headers.unwrap_or_default()),
        })
    }
}

/// `response`: an object or `null`.
struct ReplySeed;

impl<'de> DeserializeSeed<'de> for ReplySeed {
    type Value = Reply<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Reply<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ReplySeed {
    type Value = Reply<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object or null")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Reply<'de>, E> {
        Ok(Reply::Absent)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Reply<'de>, A::Error> {
        PartSeed.visit_map(map).map(Reply::Object)
    }
}

/// Headers as a list of `[name, value]` or `{"name", "value"}`, or an object of
/// values or lists of values; names and values strings (or `null`, read as "").
struct HeadersSeed;

impl<'de> DeserializeSeed<'de> for HeadersSeed {
    type Value = Headers;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Headers, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for HeadersSeed {
    type Value = Headers;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("headers")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Headers, E> {
        Ok(Headers::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Headers, A::Error> {
        let mut h = Headers::default();
        while let Some((name, value)) = seq.next_element_seed(EntrySeed)? {
            h.push(name, value);
        }
        Ok(h)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
        let mut h = Headers::default();
        while let Some(name) = map.next_key::<String>()? {
            // serde_json's map keeps one value per name, at the first one's place.
            if h.0.iter().any(|(n, _)| *n == name) {
                return Err(no());
            }
            let values = map.next_value_seed(ValuesSeed)?;
            // A name with no value would go unseen by the check above.
            if values.is_empty() {
                return Err(no());
            }
            for v in values {
                h.push(name.clone(), v);
            }
        }
        Ok(h)
    }
}

/// One entry of a headers list.
struct EntrySeed;

impl<'de> DeserializeSeed<'de> for EntrySeed {
    type Value = (String, String);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(String, String), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EntrySeed {
    type Value = (String, String);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a header entry")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(String, String), A::Error> {
        let name = seq.next_element_seed(Text)?.ok_or_else(no)?;
        let value = seq.next_element_seed(Text)?.ok_or_else(no)?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(no());
        }
        Ok((name, value))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(String, String), A::Error> {
        let (mut name, mut value) = (None, None);
        while let Some(key) = map.next_key_seed(NameOrValue)? {
            let slot = match key {
                Some(true) => &mut name,
                Some(false) => &mut value,
                None => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if slot.is_some() {
                return Err(no());
            }
            *slot = Some(map.next_value_seed(Text)?);
        }
        Ok((name.ok_or_else(no)?, value.unwrap_or_default()))
    }
}

/// The member name of a `{"name", "value"}` entry: `name`, `value`, or another.
struct NameOrValue;

impl<'de> DeserializeSeed<'de> for NameOrValue {
    type Value = Option<bool>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<bool>, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for NameOrValue {
    type Value = Option<bool>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<bool>, E> {
        Ok(match v {
            "name" => Some(true),
            "value" => Some(false),
            _ => None,
        })
    }
}

/// A header's value or values.
struct ValuesSeed;

impl<'de> DeserializeSeed<'de> for ValuesSeed {
    type Value = Vec<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValuesSeed {
    type Value = Vec<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a header value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<String>, E> {
        Ok(vec![v.to_owned()])
    }
    fn visit_unit<E: de::Error>(self) -> Result<Vec<String>, E> {
        Ok(vec![String::new()])
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Text)? {
            out.push(v);
        }
        Ok(out)
    }
}

/// A string, or `null` read as "" (as the map reader reads both); nothing else.
struct Text;

impl<'de> DeserializeSeed<'de> for Text {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Text {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok(String::new())
    }
}
