//! A recorder's JSON read one level at a time: an object's wanted members as raw text
//! borrowed from the document, an array's elements one by one. A whole cassette parsed
//! into a `serde_json::Value` tree cost 70 times its size (a dense 30 MB document:
//! 2.3 GB); read this way it costs its own bytes and the message at hand, however it
//! is shaped. serde_json still checks every byte (a `RawValue` is validated where it
//! is skipped), so a syntax error is named with its line and column as before.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// The members of one JSON object whose keys are in `wanted`, as raw text (the last
/// of a key given twice, as a `serde_json::Map` keeps it); the others are checked
/// and passed over, so an object of millions of members holds none of them.
#[derive(Debug, Default)]
pub struct Object<'a> {
    members: Vec<(&'static str, &'a RawValue)>,
}

impl<'a> Object<'a> {
    /// `raw` read as an object; `None` when it is another kind of value.
    pub fn of(raw: &'a RawValue, wanted: &[&'static str]) -> Option<Object<'a>> {
        if !is_object(raw) {
            return None;
        }
        let mut de = serde_json::Deserializer::from_str(raw.get());
        de.deserialize_map(Members { wanted }).ok()
    }

    /// The document `doc` read as an object (whitespace around it allowed); its
    /// syntax errors are serde_json's, with line and column. `Ok(None)`: valid JSON
    /// that is not an object.
    pub fn document(
        doc: &'a [u8],
        wanted: &[&'static str],
    ) -> Result<Option<Object<'a>>, serde_json::Error> {
        // One pass: the members are read as the document is checked.
        if doc.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            serde_json::from_slice::<IgnoredAny>(doc)?;
            return Ok(None);
        }
        let mut de = serde_json::Deserializer::from_slice(doc);
        let object = de.deserialize_map(Members { wanted })?;
        de.end()?;
        Ok(Some(object))
    }

    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.members
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// A string member, decoded.
    pub fn str(&self, key: &str) -> Option<Cow<'a, str>> {
        let raw = self.get(key)?.get();
        if !raw.starts_with('"') {
            return None;
        }
        crate::json::string_value(raw)
    }

    pub fn f64(&self, key: &str) -> Option<f64> {
        serde_json::from_str::<serde_json::Number>(self.get(key)?.get())
            .ok()?
            .as_f64()
    }

    pub fn bool(&self, key: &str) -> Option<bool> {
        match self.get(key)?.get() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }

    /// An object member, read one level deep in turn.
    pub fn object(&self, key: &str, wanted: &[&'static str]) -> Option<Object<'a>> {
        Object::of(self.get(key)?, wanted)
    }
}

/// Whether `raw` is a JSON object (`RawValue` text has no space around it).
pub fn is_object(raw: &RawValue) -> bool {
    raw.get().starts_with('{')
}

/// Whether `raw` is a JSON array.
pub fn is_array(raw: &RawValue) -> bool {
    raw.get().starts_with('[')
}

/// Hands each element of the array `raw` to `each`, in order, holding none; `false`
/// when `raw` is no array.
pub fn each_element<'a>(raw: &'a RawValue, each: impl FnMut(&'a RawValue)) -> bool {
    if !is_array(raw) {
        return false;
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    de.deserialize_seq(Elements(each)).is_ok()
}

/// The JSON text `raw` without the space between its tokens: what a message's text
/// was when it crossed, whatever indentation the recorder wrote it with (an SSE
/// `data:` line must be one line). Strings, numbers and member order stay as written.
pub fn compact(raw: &RawValue) -> String {
    let text = raw.get();
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                // Already validated: the string ends at the first unescaped quote.
                i += 1;
                while b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                out.push_str(&text[from..i]);
                i += 1;
                from = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[from..]);
    out
}

struct Members<'w> {
    wanted: &'w [&'static str],
}

impl<'de> Visitor<'de> for Members<'_> {
    type Value = Object<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object<'de>, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            match self.wanted.iter().find(|w| **w == key.0) {
                Some(w) => {
                    let value = map.next_value::<&'de RawValue>()?;
                    // A key given twice: the last stands, and one is held.
                    match members.iter_mut().find(|(k, _)| k == w) {
                        Some(slot) => *slot = (*w, value),
                        None => members.push((*w, value)),
                    }
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Object { members })
    }
}

/// A key, borrowed when it has no escape.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

struct Elements<F>(F);

impl<'de, F: FnMut(&'de RawValue)> Visitor<'de> for Elements<F> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while let Some(el) = seq.next_element::<&'de RawValue>()? {
            (self.0)(el);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> &RawValue {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn an_object_keeps_only_the_wanted_members_the_last_of_a_twice_given_key() {
        let doc = br#" {"a": 1, "b": {"x": [1, 2]}, "a": "two", "c\u0041": true, "skip": [[[]]]} "#;
        let o = Object::document(doc, &["a", "b", "cA"]).unwrap().unwrap();
        assert_eq!(o.str("a").as_deref(), Some("two"));
        assert_eq!(o.get("b").unwrap().get(), r#"{"x": [1, 2]}"#);
        assert_eq!(o.bool("cA"), Some(true), "an escaped key is still matched");
        assert!(!o.has("skip"));
        assert_eq!(
            o.members.len(),
            3,
            "unwanted members and older twins are not held"
        );
        assert!(Object::document(b"[1]", &["a"]).unwrap().is_none());
        let err = Object::document(b"{\"a\":\n 1,,}", &["a"]).unwrap_err();
        assert_eq!(err.line(), 2, "{err}");
    }

    #[test]
    fn an_array_is_walked_element_by_element() {
        let mut seen = Vec::new();
        assert!(each_element(raw(r#"[1, {"a": [2]}, "x"]"#), |e| seen
            .push(e.get().to_owned())));
        assert_eq!(seen, ["1", r#"{"a": [2]}"#, r#""x""#]);
        assert!(!each_element(raw(r#"{"a": 1}"#), |_| {}));
    }

    #[test]
    fn compact_drops_the_space_between_tokens_and_none_inside_strings() {
        let r = raw("{\n  \"a\" : [ 1 ,\t2 ],\r\n  \"s\": \"x \\\" y\\\\\" , \"n\": 1.50e2 }");
        assert_eq!(compact(r), r#"{"a":[1,2],"s":"x \" y\\","n":1.50e2}"#);
        let v: serde_json::Value = serde_json::from_str(&compact(r)).unwrap();
        assert_eq!(
            v,
            serde_json::from_str::<serde_json::Value>(r.get()).unwrap()
        );
    }

    #[test]
    fn numbers_read_as_f64() {
        let doc = br#"{"t": 12.5, "n": "12", "b": false}"#;
        let o = Object::document(doc, &["t", "n", "b"]).unwrap().unwrap();
        assert_eq!(o.f64("t"), Some(12.5));
        assert_eq!(o.f64("n"), None);
        assert_eq!(o.bool("b"), Some(false));
    }
}
