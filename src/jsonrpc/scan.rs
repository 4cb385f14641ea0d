//! The common JSON-RPC message read with the shared JSON scanner (`crate::json`):
//! one object whose keys have no escapes, each envelope member's value found as a
//! range of the text while the whole text is checked against the JSON grammar. The
//! JSON-RPC decode of a keep-alive capture took 18% of the run through serde_json
//! alone. Whatever the scanner turns down (an escaped key, trailing text, any error)
//! is read again by serde_json, which decides and words the error. Also here: the
//! canonical text of tool arguments, written straight from their text.

use crate::json::{members, plain_integer, plain_string, skip, value, ws};
use std::io::Write;
use std::ops::Range;

/// The value of each envelope member, as a range of the text: `jsonrpc`, `id`,
/// `method`, `params`, `result`, `error`. A member given twice keeps the last one.
pub(super) type Spans = [Option<Range<usize>>; 6];

/// The members' spans when `text` is one JSON object (whitespace around it allowed)
/// whose keys carry no escapes; `None` for anything else.
pub(super) fn envelope(text: &str) -> Option<Spans> {
    members(text, slot, value).map(|(spans, _)| spans)
}

/// `envelope` of text already checked as one JSON value: values are skipped over,
/// not checked again.
pub(super) fn envelope_checked(text: &str) -> Option<Spans> {
    members(text, slot, skip).map(|(spans, _)| spans)
}

/// The envelope member a key names.
fn slot(key: &[u8]) -> Option<usize> {
    match key {
        b"jsonrpc" => Some(0),
        b"id" => Some(1),
        b"method" => Some(2),
        b"params" => Some(3),
        b"result" => Some(4),
        b"error" => Some(5),
        _ => None,
    }
}

/// Writes the canonical form of the JSON `text` (already checked) to `out` straight
/// from the text, as `write_canonical` writes it from a `Value`: names sorted, the
/// last of a name given twice kept, no whitespace. `None` (with part of it written)
/// for what that form would write otherwise than the text: an escape, a number
/// other than an integer of up to 18 digits, nesting past 64. Most tool arguments
/// are a few short strings and small integers, and a `Value` of them (an
/// order-keeping map that hashes every key) cost more than reading the request.
pub(super) fn canonical_text(text: &str, out: &mut impl Write) -> Option<()> {
    let b = text.as_bytes();
    let end = canonical_at(b, ws(b, 0), out, 0)?;
    (ws(b, end) == b.len()).then_some(())
}

/// Writes the canonical form of the value at `i` (no whitespace before it) to `out`
/// as `write_canonical` would write it; its end, or `None` (see `canonical_text`).
fn canonical_at(b: &[u8], i: usize, out: &mut impl Write, depth: usize) -> Option<usize> {
    if depth > 64 {
        return None;
    }
    match *b.get(i)? {
        b'"' => {
            let end = plain_string(b, i)?;
            out.write_all(b.get(i..end)?).ok()?;
            Some(end)
        }
        b'{' => {
            // Members sorted by name; of a name given twice the last counts. Most
            // arguments objects have a few members: kept on the stack.
            let mut members: smallvec::SmallVec<[(&[u8], usize); 8]> = smallvec::SmallVec::new();
            let mut j = ws(b, i + 1);
            if b.get(j) == Some(&b'}') {
                out.write_all(b"{}").ok()?;
                return Some(j + 1);
            }
            loop {
                let key_end = plain_string(b, j)?;
                let colon = ws(b, key_end);
                (b.get(colon) == Some(&b':')).then_some(())?;
                let value = ws(b, colon + 1);
                members.push((b.get(j..key_end)?, value));
                j = ws(b, skip(b, value)?);
                match b.get(j)? {
                    b',' => j = ws(b, j + 1),
                    b'}' => break,
                    _ => return None,
                }
            }
            members.sort_by(|x, y| x.0.cmp(y.0));
            out.write_all(b"{").ok()?;
            let mut first = true;
            for (n, (key, value)) in members.iter().enumerate() {
                if members.get(n + 1).is_some_and(|next| next.0 == *key) {
                    continue;
                }
                if !first {
                    out.write_all(b",").ok()?;
                }
                first = false;
                out.write_all(key).ok()?;
                out.write_all(b":").ok()?;
                canonical_at(b, *value, out, depth + 1)?;
            }
            out.write_all(b"}").ok()?;
            Some(j + 1)
        }
        b'[' => {
            out.write_all(b"[").ok()?;
            let mut j = ws(b, i + 1);
            if b.get(j) == Some(&b']') {
                out.write_all(b"]").ok()?;
                return Some(j + 1);
            }
            loop {
                j = ws(b, canonical_at(b, j, out, depth + 1)?);
                match b.get(j)? {
                    b',' => {
                        out.write_all(b",").ok()?;
                        j = ws(b, j + 1);
                    }
                    b']' => break,
                    _ => return None,
                }
            }
            out.write_all(b"]").ok()?;
            Some(j + 1)
        }
        b't' | b'f' | b'n' => {
            let word: &[u8] = match b[i] {
                b't' => b"true",
                b'f' => b"false",
                _ => b"null",
            };
            (b.get(i..i + word.len())? == word).then_some(())?;
            out.write_all(word).ok()?;
            Some(i + word.len())
        }
        _ => {
            // An integer of up to 18 digits prints as written; anything else (a
            // fraction, an exponent, `-0`, a larger integer) as serde_json reads it.
            let end = plain_integer(b, i)?;
            out.write_all(b.get(i..end)?).ok()?;
            Some(end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use super::super::Message;

    /// The message `text` gives by the scanner, checked against serde_json: when the
    /// scanner takes a text, serde_json must take it and find the same members.
    fn agree(text: &str) {
        if let Some(spans) = envelope(text) {
            let fast = Message::parse(text).unwrap().parts();
            let serde = Message::parse_with_serde(text).map(|m| m.parts());
            assert_eq!(Some(fast), serde.ok(), "{text:?} {spans:?}");
        }
        // Text a reader checked as one JSON value is read alike without the check.
        if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
            let checked = Message::parse_checked(text).map(|m| m.parts());
            let serde = Message::parse_with_serde(text).map(|m| m.parts());
            assert_eq!(checked.ok(), serde.ok(), "checked: {text:?}");
        }
    }

    #[test]
    fn reads_messages_as_serde_json_does_or_leaves_them_to_it() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"b\\c\u00e9"}]}}"#,
            r#" { "id" : "x" , "method" : "m" , "params" : [ 1 , -2.5e+3 , 0 , true , null , {} , [] ] } "#,
            r#"{"id":1,"id":2,"result":null}"#,
            r#"{}"#,
            r#"{"x":{"y":[{"z":[[[]]]}]},"error":{"code":-32600,"message":"m"}}"#,
        ] {
            assert!(envelope(text).is_some(), "{text}");
            agree(text);
        }
        for text in [
            "",
            "[]",
            r#"{"id":1,}"#,
            r#"{"id":01}"#,
            r#"{"id":1.}"#,
            r#"{"id":-}"#,
            r#"{"id":1e}"#,
            r#"{"id":"a"} x"#,
            r#"{"id":"a
b"}"#,
            r#"{"id":"\x"}"#,
            r#"{"id":"\u12g4"}"#,
            r#"{"i\u0064":1}"#,
            r#"{"id":[1,]}"#,
            r#"{"id":{"a":1,}}"#,
            r#"{"id":{"a" 1}}"#,
            r#"{"id":{1:1}}"#,
            r#"{"id":tru}"#,
            r#"{"id":[1 2]}"#,
            r#"{"id":1"#,
            r#"{"id":"#,
        ] {
            assert!(envelope(text).is_none(), "{text}");
        }
    }

    /// Each control character, at each place of a string up to past the first 32
    /// bytes (read a word at a time) and in a long one (searched with memchr), as a
    /// key and as a value: never taken. And the same strings without it are.
    #[test]
    fn a_control_character_anywhere_in_a_string_is_never_taken() {
        for len in [1usize, 7, 8, 9, 15, 16, 17, 24, 40, 100] {
            for at in 0..len {
                for c in (0u8..0x20).chain([b'"', b'\\']) {
                    let mut s = vec![b'a'; len];
                    s[at] = c;
                    let s = String::from_utf8(s).unwrap();
                    let value = format!(r#"{{"id":"{s}","method":"m"}}"#);
                    let key = format!(r#"{{"{s}":1,"id":2}}"#);
                    if c == b'"' {
                        // A quote ends the string early: what follows is not JSON.
                        assert!(envelope(&value).is_none(), "{value:?}");
                        continue;
                    }
                    if c == b'\\' {
                        // `\a` is no escape.
                        assert!(envelope(&value).is_none(), "{value:?}");
                        continue;
                    }
                    assert!(envelope(&value).is_none(), "{value:?}");
                    assert!(envelope(&key).is_none(), "{key:?}");
                }
            }
            let plain = "a".repeat(len);
            let value = format!(r#"{{"id":"{plain}","method":"m"}}"#);
            assert_eq!(
                envelope(&value).and_then(|s| s[1].clone()),
                Some(6..8 + len)
            );
            assert!(envelope(&format!(r#"{{"{plain}":1,"id":2}}"#)).is_some());
        }
    }

    #[test]
    fn deep_nesting_is_scanned_without_recursion() {
        let deep = format!(
            r#"{{"result":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let spans = envelope(&deep).unwrap();
        assert_eq!(spans[4], Some(10..deep.len() - 1));
        assert_eq!(
            Message::parse(&deep).unwrap().result().map(str::len),
            Some(200_000)
        );
        agree(&deep);
    }

    /// JSON-ish text built from pieces that are often right and sometimes not.
    fn jsonish() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("{".to_owned()),
            Just("}".to_owned()),
            Just("[".to_owned()),
            Just("]".to_owned()),
            Just(",".to_owned()),
            Just(":".to_owned()),
            Just(" ".to_owned()),
            Just("\"id\"".to_owned()),
            Just("\"result\"".to_owned()),
            Just("\"k\\u0041\"".to_owned()),
            Just("\"s\\n\\\"t\"".to_owned()),
            Just("\"\\q\"".to_owned()),
            Just("\"a\tb\"".to_owned()),
            Just("null".to_owned()),
            Just("tru".to_owned()),
            Just("-0.5e-7".to_owned()),
            Just("01".to_owned()),
            Just("1.".to_owned()),
            "[0-9]{1,3}",
            "\"[a-z é]{0,5}\"",
        ];
        prop::collection::vec(piece, 0..24).prop_map(|p| p.concat())
    }

    /// A message made of members with arbitrary valid JSON values.
    fn message() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| format!("{f:e}")),
            any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
        ];
        let value = leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(("[a-z]{1,6}", inner), 0..4).prop_map(|m| {
                    let m: Vec<String> = m.iter().map(|(k, v)| format!("\"{k}\" : {v}")).collect();
                    format!("{{ {} }}", m.join(" , "))
                }),
            ]
        });
        let key = prop_oneof![
            Just("jsonrpc"),
            Just("id"),
            Just("method"),
            Just("params"),
            Just("result"),
            Just("error"),
            Just("other"),
        ];
        prop::collection::vec((key, value), 0..6).prop_map(|m| {
            let m: Vec<String> = m.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            format!("{{{}}}", m.join(","))
        })
    }

    proptest! {
        #[test]
        fn never_accepts_what_serde_json_refuses(text in jsonish()) {
            agree(&text);
            let wrapped = format!("{{\"result\":{text}}}");
            agree(&wrapped);
        }

        #[test]
        fn a_message_one_byte_off_is_read_as_serde_json_reads_it(
            text in message(),
            at in any::<prop::sample::Index>(),
            op in 0..3u8,
            byte in prop::sample::select(&b"{}[],:\"\\ 0-.eE+tnu\t\nax"[..]),
        ) {
            if let Some(t) = crate::json::one_byte_off(text, at, op, byte) {
                agree(&t);
            }
        }

        #[test]
        fn finds_the_members_of_valid_messages(text in message()) {
            prop_assert!(envelope(&text).is_some(), "{}", text);
            agree(&text);
        }
    }
}
