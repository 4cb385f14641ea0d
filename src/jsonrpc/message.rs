//! The JSON-RPC envelope as it was on the wire. Members are kept as raw JSON text
//! (`RawValue`) so nothing is lost or reinterpreted: an id stays `1`, `"1"` or `null`,
//! and `result`/`error` are only parsed when a rule needs to look inside.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// A JSON-RPC id exactly as on the wire: the raw JSON text of the `id` member,
/// with strings re-encoded canonically so `"a"` and `"\u0061"` compare equal.
/// `1`, `"1"` and `null` are three different ids.
/// Serialized (in stage records) as its raw JSON text, so `1`, `"1"` and `null` survive.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Id(Box<str>);

impl Id {
    pub fn from_raw(raw: &str) -> Id {
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

/// A JSON-RPC message with its members as raw JSON.
#[derive(Debug, Clone, Default)]
pub struct Message {
    pub jsonrpc: Option<Box<RawValue>>,
    /// `None`: no `id` member. `Some(id)` may be `null`.
    pub id: Option<Id>,
    pub method: Option<Box<RawValue>>,
    pub params: Option<Box<RawValue>>,
    pub result: Option<Box<RawValue>>,
    pub error: Option<Box<RawValue>>,
}

impl Message {
    /// Parses one JSON object as a message. A syntax error and a value that is not an
    /// object are told apart by the caller through `serde_json::Error::classify`.
    pub fn parse(text: &str) -> Result<Message, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The method name when `method` is a string.
    pub fn method(&self) -> Option<String> {
        self.method
            .as_ref()
            .and_then(|m| serde_json::from_str::<String>(m.get()).ok())
    }

    pub fn kind(&self) -> Kind {
        match (&self.method, &self.id) {
            (Some(_), Some(_)) => Kind::Request,
            (Some(_), None) => Kind::Notification,
            (None, _) if self.result.is_some() || self.error.is_some() => Kind::Response,
            _ => Kind::Invalid,
        }
    }

    /// True when `jsonrpc` is exactly the string `"2.0"`.
    pub fn has_valid_version(&self) -> bool {
        self.jsonrpc.as_ref().map(|v| v.get().trim()) == Some("\"2.0\"")
    }

    /// `params` parsed, or `Null` when absent or not parseable.
    pub fn params_value(&self) -> Value {
        raw_value(self.params.as_deref())
    }

    pub fn result_value(&self) -> Value {
        raw_value(self.result.as_deref())
    }

    pub fn error_value(&self) -> Value {
        raw_value(self.error.as_deref())
    }
}

fn raw_value(raw: Option<&RawValue>) -> Value {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null)
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Message, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Message;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
                // Presence matters more than value: `"result": null` is a result.
                let mut m = Message::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*key {
                        "jsonrpc" => m.jsonrpc = Some(map.next_value()?),
                        "id" => {
                            let raw: Box<RawValue> = map.next_value()?;
                            m.id = Some(Id::from_raw(raw.get()));
                        }
                        "method" => m.method = Some(map.next_value()?),
                        "params" => m.params = Some(map.next_value()?),
                        "result" => m.result = Some(map.next_value()?),
                        "error" => m.error = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(m)
            }
        }
        d.deserialize_map(V).map_err(de::Error::custom)
    }
}

/// Writes `value` as canonical JSON (object keys sorted), for comparing arguments.
pub fn canonical_json(value: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<_> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap_or_default());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(m.result.is_some() && m.error.is_some());
        let n = Message::parse(r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#).unwrap();
        assert_eq!(n.kind(), Kind::Notification);
        assert!(n.has_valid_version());
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
        let err = serde_json::from_str::<Value>(m.result.as_ref().unwrap().get()).unwrap_err();
        assert!(crate::text::describe_json_error(&err).contains("nested more than 128"));
    }
}
