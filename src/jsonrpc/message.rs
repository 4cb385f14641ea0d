//! The JSON-RPC envelope as it was on the wire. Members are kept as raw JSON text
//! (`RawValue`) so nothing is lost or reinterpreted: an id stays `1`, `"1"` or `null`,
//! and `result`/`error` are only parsed when a rule needs to look inside.

use compact_str::CompactString;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// A JSON-RPC id exactly as on the wire: the raw JSON text of the `id` member,
/// with strings re-encoded canonically so `"a"` and `"\u0061"` compare equal.
/// `1`, `"1"` and `null` are three different ids.
/// Serialized (in stage records) as its raw JSON text, so `1`, `"1"` and `null` survive.
/// A `CompactString`: ids are mostly small numbers or short strings, kept inline, and
/// each message's id is made once and cloned into the correlator's id log.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Id(CompactString);

impl Id {
    pub fn from_raw(raw: &str) -> Id {
        let raw = raw.trim();
        // Only a string id with an escape can differ from its canonical form: one
        // without a backslash is written back byte for byte by serde_json (or is
        // refused, and the raw text kept), so it skips the round trip.
        if raw.starts_with('"') && raw.contains('\\') {
            if let Ok(s) = serde_json::from_str::<String>(raw) {
                if let Ok(canon) = serde_json::to_string(&s) {
                    return Id::held(&canon);
                }
            }
        }
        Id::held(raw)
    }

    /// A canonical id as calls hold it: a hostile one past `text::KEPT_NAME` bytes
    /// (held by every open call and id map) becomes a string of its first bytes and
    /// a hash of the whole (`text::kept`), still equal only to itself.
    fn held(canon: &str) -> Id {
        match crate::text::kept(canon, crate::text::KEPT_NAME) {
            Cow::Borrowed(c) => Id(c.into()),
            Cow::Owned(k) => Id(serde_json::to_string(&k).unwrap_or_default().into()),
        }
    }

    /// A number id from a plain integer (tests and synthesized records).
    pub fn number(n: i64) -> Id {
        Id(n.to_string().into())
    }

    /// A string id.
    pub fn string(s: &str) -> Id {
        Id(serde_json::to_string(s).unwrap_or_default().into())
    }

    /// The id's JSON text.
    pub fn raw(&self) -> &str {
        &self.0
    }

    pub fn is_null(&self) -> bool {
        &*self.0 == "null"
    }

    pub fn is_string(&self) -> bool {
        self.0.starts_with('"')
    }

    /// True for a string or an integer: the only id types JSON-RPC 2.0 in MCP allows.
    pub fn is_valid_request_id(&self) -> bool {
        self.is_string()
            || (!self.0.is_empty() && self.0.bytes().all(|b| b.is_ascii_digit() || b == b'-'))
    }

    /// True when the two ids differ only in type: `1` versus `"1"`.
    pub fn differs_only_in_type(&self, other: &Id) -> bool {
        let unquote = |id: &Id| -> Option<String> {
            if id.is_string() {
                serde_json::from_str::<String>(id.raw()).ok()
            } else {
                None
            }
        };
        match (unquote(self), unquote(other)) {
            (Some(s), None) => s == other.raw(),
            (None, Some(s)) => s == self.raw(),
            _ => false,
        }
    }

    /// The id as a JSON value, for output.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a message is, judged from which members it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Notification,
    Response,
    /// Neither a request, a notification nor a response.
    Invalid,
}

/// Where a member's raw JSON sits in its message's text.
type Span = std::ops::Range<usize>;

/// A JSON-RPC message with its members as raw JSON: the message's text is kept once
/// and each member is a range of it (one allocation per message, not one per member).
#[derive(Debug, Clone, Default)]
pub struct Message {
    /// The text the message was decoded from, as given to `parse`.
    text: Box<str>,
    jsonrpc: Option<Span>,
    /// `None`: no `id` member. `Some(id)` may be `null`.
    pub id: Option<Id>,
    method: Option<Span>,
    params: Option<Span>,
    result: Option<Span>,
    error: Option<Span>,
}

/// The members as borrowed slices of the text being parsed.
#[derive(Default)]
struct Members<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

impl Message {
    /// Parses one JSON object as a message (leading and trailing whitespace allowed).
    /// A syntax error and a value that is not an object are told apart by the caller
    /// through `serde_json::Error::classify`.
    pub fn parse(text: &str) -> Result<Message, serde_json::Error> {
        match super::scan::envelope(text) {
            Some(spans) => Ok(Message::from_spans(text, spans)),
            // Anything the scanner does not take (an escaped key, an error) is read
            // by serde_json, which decides and words the error.
            None => Message::parse_with_serde(text),
        }
    }

    /// `parse` for text already checked against the JSON grammar as one value (by
    /// the reader that cut it from a larger document): the same message, found
    /// without a second check of every member.
    pub fn parse_checked(text: &str) -> Result<Message, serde_json::Error> {
        match super::scan::envelope_checked(text) {
            Some(spans) => Ok(Message::from_spans(text, spans)),
            None => Message::parse_with_serde(text),
        }
    }

    fn from_spans(text: &str, spans: super::scan::Spans) -> Message {
        let [jsonrpc, id, method, params, result, error] = spans;
        Message {
            jsonrpc,
            id: id.and_then(|r| text.get(r)).map(Id::from_raw),
            method,
            params,
            result,
            error,
            text: text.into(),
        }
    }

    pub(super) fn parse_with_serde(text: &str) -> Result<Message, serde_json::Error> {
        let m: Members = serde_json::from_str(text)?;
        // Each slice borrows from `text`; its offset is where it starts there.
        let base = text.as_ptr() as usize;
        let span = |r: Option<&RawValue>| {
            let start = (r?.get().as_ptr() as usize).checked_sub(base)?;
            Some(start..start + r?.get().len())
        };
        Ok(Message {
            jsonrpc: span(m.jsonrpc),
            id: m.id.map(|r| Id::from_raw(r.get())),
            method: span(m.method),
            params: span(m.params),
            result: span(m.result),
            error: span(m.error),
            text: text.into(),
        })
    }

    /// Every member as the scanner reports it, the id as its text (for tests that
    /// hold the scanner to serde_json).
    #[cfg(test)]
    pub(super) fn parts(&self) -> (super::scan::Spans, Option<String>) {
        let s = [
            self.jsonrpc.clone(),
            None,
            self.method.clone(),
            self.params.clone(),
            self.result.clone(),
            self.error.clone(),
        ];
        (s, self.id.as_ref().map(|i| i.raw().to_owned()))
    }

    /// The text the message was decoded from.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn member(&self, span: &Option<Span>) -> Option<&str> {
        span.as_ref().and_then(|s| self.text.get(s.clone()))
    }

    /// The raw JSON of `jsonrpc`, when present.
    pub fn jsonrpc(&self) -> Option<&str> {
        self.member(&self.jsonrpc)
    }

    /// The raw JSON of `method`, when present.
    pub fn method_raw(&self) -> Option<&str> {
        self.member(&self.method)
    }

    /// The raw JSON of `params`, when present.
    pub fn params(&self) -> Option<&str> {
        self.member(&self.params)
    }

    /// The raw JSON of `result`, when present (`null` is present).
    pub fn result(&self) -> Option<&str> {
        self.member(&self.result)
    }

    /// The raw JSON of `error`, when present.
    pub fn error(&self) -> Option<&str> {
        self.member(&self.error)
    }

    /// The method name when `method` is a string.
    pub fn method(&self) -> Option<String> {
        self.method_text().map(Cow::into_owned)
    }

    /// `method`, borrowed from the message when it has no escape.
    pub fn method_text(&self) -> Option<Cow<'_, str>> {
        self.method_raw().and_then(crate::json::string_value)
    }

    /// True when `method` is the string `name`: most are written without escapes and
    /// compare in place; an escaped one is decoded first.
    pub fn method_is(&self, name: &str) -> bool {
        match self.method_raw() {
            Some(raw) if !raw.contains('\\') => {
                raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) == Some(name)
            }
            Some(_) => self.method().as_deref() == Some(name),
            None => false,
        }
    }

    pub fn kind(&self) -> Kind {
        match (&self.method, &self.id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, _) if self.result.is_some() || self.error.is_some() => Kind::Response,
            _ => Kind::Invalid,
        }
    }

    /// Its id, or `null` when it has none: the id a response without one answers,
    /// and the one a request without one is matched by.
    pub fn id_or_null(&self) -> Id {
        self.id.clone().unwrap_or_else(|| Id::from_raw("null"))
    }

    /// True when `jsonrpc` is exactly the string `"2.0"`.
    pub fn has_valid_version(&self) -> bool {
        self.jsonrpc().map(str::trim) == Some("\"2.0\"")
    }

    /// `params` parsed, or `Null` when absent or not parseable.
    pub fn params_value(&self) -> Value {
        raw_value(self.params())
    }

    pub fn result_value(&self) -> Value {
        raw_value(self.result())
    }

    pub fn error_value(&self) -> Value {
        raw_value(self.error())
    }
}

fn raw_value(raw: Option<&str>) -> Value {
    raw.and_then(|r| serde_json::from_str(r).ok())
        .unwrap_or(Value::Null)
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Members<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                // Presence matters more than value: `"result": null` is a result. A
                // member given twice keeps its last value, as serde_json's maps do.
                let mut m = Members::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    let slot = match &*key {
                        "jsonrpc" => &mut m.jsonrpc,
                        "id" => &mut m.id,
                        "method" => &mut m.method,
                        "params" => &mut m.params,
                        "result" => &mut m.result,
                        "error" => &mut m.error,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value()?);
                }
                Ok(m)
            }
        }
        d.deserialize_map(V).map_err(de::Error::custom)
    }
}

/// Writes `value` as canonical JSON (object keys sorted), for comparing arguments.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail, and serde_json writes UTF-8.
    let _ = write_canonical(value, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// `canonical_json` written to `out` as it goes, so a digest of it needs no copy of
/// a large argument (an agent's file contents) in between.
pub fn write_canonical(value: &Value, out: &mut impl std::io::Write) -> std::io::Result<()> {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.write_all(b"{")?;
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, k)?;
                out.write_all(b":")?;
                write_canonical(&map[k], out)?;
            }
            out.write_all(b"}")
        }
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_canonical(item, out)?;
            }
            out.write_all(b"]")
        }
        other => Ok(serde_json::to_writer(out, other)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_id_is_held_short_and_equal_only_to_itself() {
        let long = format!("\"{}\"", "i".repeat(5000));
        let id = Id::from_raw(&long);
        assert!(id.raw().len() <= 2 * crate::text::KEPT_NAME, "{}", id.raw());
        assert!(
            serde_json::from_str::<String>(id.raw()).is_ok(),
            "{}",
            id.raw()
        );
        assert_eq!(Id::from_raw(&long), id);
        // The same id written with an escape is the same id.
        let escaped = format!("\"\\u0069{}\"", "i".repeat(4999));
        assert_eq!(Id::from_raw(&escaped), id);
        let other = format!("\"{}j\"", "i".repeat(4999));
        assert_ne!(Id::from_raw(&other), id);
        assert_eq!(Id::from_raw("12").raw(), "12");
    }

    #[test]
    fn ids_keep_their_wire_type() {
        let a = Message::parse(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap();
        let b = Message::parse(r#"{"jsonrpc":"2.0","id":"1","result":{}}"#).unwrap();
        let c = Message::parse(r#"{"jsonrpc":"2.0","id":null,"error":{}}"#).unwrap();
        let (a, b, c) = (a.id.unwrap(), b.id.unwrap(), c.id.unwrap());
        assert_ne!(a, b);
        assert!(a.differs_only_in_type(&b));
        assert!(c.is_null());
        assert_eq!(Id::from_raw("\"\\u0061\""), Id::string("a"));
    }

    #[test]
    fn presence_not_value_decides() {
        let m = Message::parse(r#"{"jsonrpc":"2.0","id":1,"result":null,"error":null}"#).unwrap();
        assert!(m.result().is_some() && m.error().is_some());
        let n = Message::parse(r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#).unwrap();
        assert_eq!(n.kind(), Kind::Notification);
        assert!(n.has_valid_version());
    }

    #[test]
    fn members_are_their_raw_text_wherever_they_sit() {
        let text = " {\"params\": {\"é\":[1, 2]} ,\"x\":{\"result\":0},\"method\":\"tools\\/call\",
            \"jsonrpc\" : \"2.0\",\"id\":\"\\u0061\",\"error\":null,\"result\":\"ü\"}\n";
        let m = Message::parse(text).unwrap();
        assert_eq!(m.text(), text);
        assert_eq!(m.params(), Some(r#"{"é":[1, 2]}"#));
        assert_eq!(m.method_raw(), Some(r#""tools\/call""#));
        assert_eq!(m.jsonrpc(), Some(r#""2.0""#));
        assert_eq!((m.result(), m.error()), (Some(r#""ü""#), Some("null")));
        assert_eq!(m.id, Some(Id::string("a")));
        // An escaped method is decoded before it is compared; a plain one is not.
        assert!(m.method_is("tools/call") && !m.method_is("tools/list"));
        let plain = Message::parse(r#"{"method":"initialize","id":1}"#).unwrap();
        assert!(plain.method_is("initialize") && !plain.method_is("initialized"));
        assert!(!Message::parse(r#"{"method":1}"#).unwrap().method_is("1"));
        // The last of a repeated member counts.
        let twice = Message::parse(r#"{"result":1,"result":[2]}"#).unwrap();
        assert_eq!(twice.result(), Some("[2]"));
    }

    /// `Id::from_raw` as it was before its fast path: a string id decoded and
    /// written again by serde_json, anything else kept as written.
    fn id_by_serde(raw: &str) -> Id {
        let raw = raw.trim();
        if raw.starts_with('"') {
            if let Ok(s) = serde_json::from_str::<String>(raw) {
                if let Ok(canon) = serde_json::to_string(&s) {
                    return Id(canon.into());
                }
            }
        }
        Id(raw.into())
    }

    proptest::proptest! {
        /// A string id is canonical as serde_json writes it, escapes or not, valid
        /// JSON or not.
        #[test]
        fn string_ids_are_canonical_as_serde_json_writes_them(
            inner in "(\\PC|\\\\[\"\\\\/bfnrtu]|\\\\u00[0-9a-f]{2}|[\\x00-\\x1f\\x7f]|\"){0,12}",
            space in proptest::sample::select(vec!["", " ", "\n"]),
            closed in proptest::bool::ANY,
        ) {
            let raw = format!("{space}\"{inner}{}{space}", if closed { "\"" } else { "" });
            proptest::prop_assert_eq!(Id::from_raw(&raw), id_by_serde(&raw), "{:?}", raw);
        }

        /// Each member's range holds exactly the JSON of that member, as a whole
        /// parse of the object sees it (the last of a repeated key), wherever it sits.
        #[test]
        fn member_ranges_hold_the_members_json(
            members in proptest::collection::vec(
                (
                    proptest::sample::select(vec![
                        "jsonrpc", "id", "method", "params", "result", "error", "x", "é",
                    ]),
                    proptest::sample::select(vec![
                        "1", "\"2.0\"", "null", "[1, {\"a\": \"\\u00e9\"}]", "{}",
                        "\"tools\\/call\"", "-0.5e3", "{\"k\":[[],{}]}", "true",
                    ]),
                    proptest::sample::select(vec!["", " ", "\n\t "]),
                ),
                0..8,
            ),
        ) {
            let body = members
                .iter()
                .map(|(k, v, ws)| format!("{ws}\"{k}\"{ws}:{ws}{v}{ws}"))
                .collect::<Vec<_>>()
                .join(",");
            let text = format!(" {{{body}}} ");
            let m = Message::parse(&text).unwrap();
            let whole: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
            let raw = |r: Option<&str>| r.map(|r| serde_json::from_str::<Value>(r).unwrap());
            for (name, got) in [
                ("jsonrpc", m.jsonrpc()),
                ("method", m.method_raw()),
                ("params", m.params()),
                ("result", m.result()),
                ("error", m.error()),
            ] {
                proptest::prop_assert_eq!(raw(got), whole.get(name).cloned(), "{} in {}", name, text);
            }
            proptest::prop_assert_eq!(m.id.map(|i| i.to_value()), whole.get("id").cloned());
        }
    }

    #[test]
    fn canonical_json_sorts_keys() {
        let v: Value = serde_json::from_str(r#"{"b":1,"a":[{"d":2,"c":3}]}"#).unwrap();
        assert_eq!(canonical_json(&v), r#"{"a":[{"c":3,"d":2}],"b":1}"#);
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!(
            "{{\"id\":1,\"result\":{}{}}}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        // The envelope skips the member without recursing; reading inside is refused.
        let m = Message::parse(&deep).expect("envelope");
        let err = serde_json::from_str::<Value>(m.result().unwrap()).unwrap_err();
        assert!(crate::text::describe_json_error(&err).contains("nested more than 128"));
    }
}
