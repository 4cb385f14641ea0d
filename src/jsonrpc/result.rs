//! A borrowed view of a `tools/call` result: the members the classifier checks, as
//! raw JSON slices of the body, found in one pass that skips everything else (tool
//! output can be megabytes; nothing of it is copied or built into a tree). The same
//! pass takes the text of the first content block, the only part of the content a
//! verdict reads.

use crate::json::RawText;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

/// How much of a content block's text a view keeps, cut on a character boundary: a
/// verdict keeps an excerpt of it ([`crate::text::excerpt`]), and tool output can be
/// megabytes with an escape every few bytes, which decoding whole cost more than
/// reading the message. A character more than the excerpt (at most four bytes), so
/// that a head longer than the excerpt tells a text that goes on: the excerpt of the
/// head is the excerpt of the whole text.
pub const TEXT_HEAD: usize = crate::text::EXCERPT + 4;

/// The result members that decide an outcome. Presence is kept apart from value:
/// `"isError": null` is present (and invalid), not absent. `content` is read as `C`:
/// [`Content`] on the way to a verdict, the raw JSON when a note must quote it.
#[derive(Debug)]
pub struct ResultView<'a, C = Content<'a>> {
    pub result_type: Option<RawText<'a>>,
    pub is_error: Option<RawText<'a>>,
    pub content: Option<C>,
    pub request_state: Option<RawText<'a>>,
    pub input_requests: Option<RawText<'a>>,
}

/// What a verdict needs of `content`: whether it is an array, and the text of its
/// first block that is an object with one string `text`, unescaped, up to its first
/// [`TEXT_HEAD`] bytes.
#[derive(Debug, PartialEq)]
pub enum Content<'a> {
    Array { first_text: Option<Cow<'a, str>> },
    NotArray,
}

impl<'a, C: Deserialize<'a>> ResultView<'a, C> {
    /// Reads `raw` as a result object; `None` when it is not an object.
    pub fn parse(raw: &'a str) -> Option<ResultView<'a, C>> {
        if !raw.trim_start().starts_with('{') {
            return None;
        }
        serde_json::from_str(raw).ok()
    }
}

impl<'a> ResultView<'a, Content<'a>> {
    /// `parse` for the `result` of a message already read (so valid JSON), faster:
    /// the members are found by passing over the text, not by a second parse, and
    /// what that cannot decide as serde_json would (an escaped key, `content` or a
    /// block's `text` given twice, content or a `text` that is an object or an
    /// array, a string serde_json refuses) is left to `parse`, so the view is the
    /// same either way.
    pub fn read(raw: &'a str) -> Option<ResultView<'a, Content<'a>>> {
        scanned(raw).unwrap_or_else(|| ResultView::parse(raw))
    }
}

/// `Some(view)` when `raw` could be read as serde_json would read it; `Some(None)`
/// when `raw` is no object (as `parse` answers); `None` to leave it to `parse`. One
/// pass: `content` is walked where it stands, so a megabyte of tool output is
/// passed over once, not once per level (result, content, block).
fn scanned(raw: &str) -> Option<Option<ResultView<'_, Content<'_>>>> {
    use crate::json::{object, skip, ws};
    if !raw.trim_start().starts_with('{') {
        return Some(None);
    }
    let b = raw.as_bytes();
    let mut spans: [Option<std::ops::Range<usize>>; 4] = Default::default();
    let mut content = None;
    let end = object(b, ws(b, 0), |key, i| {
        let slot = match key {
            b"resultType" => 0,
            b"isError" => 1,
            b"requestState" => 2,
            b"inputRequests" => 3,
            // A second `content` is left to serde_json (the last one counts there).
            b"content" if content.is_some() => return None,
            b"content" => {
                let (end, c) = scanned_content(raw, i)?;
                content = Some(c);
                return Some(end);
            }
            _ => return skip(b, i),
        };
        let end = skip(b, i)?;
        spans[slot] = Some(i..end);
        Some(end)
    })?;
    if ws(b, end) != b.len() {
        return None;
    }
    let [result_type, is_error, request_state, input_requests] =
        spans.map(|s| s.and_then(|s| raw.get(s)).map(RawText));
    Some(Some(ResultView {
        result_type,
        is_error,
        content,
        request_state,
        input_requests,
    }))
}

/// The `content` member's value at `i` in `raw` and its end, or `None` to leave it
/// to serde_json.
fn scanned_content(raw: &str, i: usize) -> Option<(usize, Content<'_>)> {
    use crate::json::{array, object, skip};
    let b = raw.as_bytes();
    match b.get(i)? {
        b'[' => {}
        // serde_json checks the keys of an object it skips in ways this does not.
        b'{' => return None,
        _ => return Some((skip(b, i)?, Content::NotArray)),
    }
    let mut first_text = None;
    let end = array(b, i, |at| {
        if first_text.is_some() || b.get(at) != Some(&b'{') {
            return skip(b, at);
        }
        let (mut text, mut texts) = (None, 0u8);
        let end = object(b, at, |key, v| {
            let end = skip(b, v)?;
            if key == b"text" {
                text = Some(v..end);
                texts = texts.saturating_add(1);
            }
            Some(end)
        })?;
        match (texts, text.and_then(|s| raw.get(s))) {
            (0, _) => {}
            (1, Some(t)) if t.starts_with('"') => {
                first_text = Some(crate::json::checked_string_head(t, TEXT_HEAD)?);
            }
            // A `text` that is a number, `true` or `null`: no text here, look on.
            (1, Some(t)) if !t.starts_with(['{', '[']) => {}
            // Two `text` members, or one that is an object or an array.
            _ => return None,
        }
        Some(end)
    })?;
    Some((end, Content::Array { first_text }))
}

/// The visitor methods for JSON's scalars (but strings), each answering `$v`: the
/// views below pass over any value they do not look into.
macro_rules! scalars_are {
    ($t:ty, $v:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<$t, E> {
            Ok($v)
        }
        fn visit_i64<E>(self, _: i64) -> Result<$t, E> {
            Ok($v)
        }
        fn visit_u64<E>(self, _: u64) -> Result<$t, E> {
            Ok($v)
        }
        fn visit_f64<E>(self, _: f64) -> Result<$t, E> {
            Ok($v)
        }
        fn visit_unit<E>(self) -> Result<$t, E> {
            Ok($v)
        }
    };
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Content<'a>, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Content<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content<'a>, A::Error> {
                let mut first_text = None;
                while let Some(block) = seq.next_element::<BlockText<'a>>()? {
                    if block.0.is_some() {
                        first_text = block.0;
                        break;
                    }
                }
                // The blocks after it are skipped, not read.
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Content::Array { first_text })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Content<'a>, A::Error> {
                skip_map(map).map(|()| Content::NotArray)
            }
            fn visit_str<E>(self, _: &str) -> Result<Content<'a>, E> {
                Ok(Content::NotArray)
            }
            scalars_are!(Content<'a>, Content::NotArray);
        }
        d.deserialize_any(V(PhantomData))
    }
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A content block's `text` when the block is an object whose one `text` member is
/// a string; `None` for any other value, which is skipped.
struct BlockText<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for BlockText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BlockText<'a>, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = BlockText<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BlockText<'a>, A::Error> {
                let (mut text, mut texts) = (None, 0);
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "text" {
                        texts += 1;
                        text = map.next_value::<MaybeStr<'a>>()?.0;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                // Two `text` members make no sense of either.
                Ok(BlockText(if texts == 1 { text } else { None }))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<BlockText<'a>, A::Error> {
                skip_seq(seq).map(|()| BlockText(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<BlockText<'a>, E> {
                Ok(BlockText(None))
            }
            scalars_are!(BlockText<'a>, BlockText(None));
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// The first `TEXT_HEAD` bytes of `s`, cut on a character boundary.
fn head(s: &str) -> &str {
    &s[..crate::text::floor_boundary(s, TEXT_HEAD)]
}

/// A string (its head), borrowed when it has no escapes; `None` for any other value.
struct MaybeStr<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MaybeStr<'a>, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MaybeStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<MaybeStr<'a>, E> {
                Ok(MaybeStr(Some(Cow::Borrowed(head(s)))))
            }
            fn visit_str<E>(self, s: &str) -> Result<MaybeStr<'a>, E> {
                Ok(MaybeStr(Some(Cow::Owned(head(s).to_owned()))))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MaybeStr<'a>, A::Error> {
                skip_map(map).map(|()| MaybeStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MaybeStr<'a>, A::Error> {
                skip_seq(seq).map(|()| MaybeStr(None))
            }
            scalars_are!(MaybeStr<'a>, MaybeStr(None));
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de: 'a, 'a, C: Deserialize<'de>> Deserialize<'de> for ResultView<'a, C> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ResultView<'a, C>, D::Error> {
        struct V<'a, C>(PhantomData<(&'a (), C)>);
        impl<'de: 'a, 'a, C: Deserialize<'de>> Visitor<'de> for V<'a, C> {
            type Value = ResultView<'a, C>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a result object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ResultView<'a, C>, A::Error> {
                let mut r = ResultView {
                    result_type: None,
                    is_error: None,
                    content: None,
                    request_state: None,
                    input_requests: None,
                };
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let slot = match &*key {
                        "resultType" => &mut r.result_type,
                        "isError" => &mut r.is_error,
                        "content" => {
                            r.content = Some(map.next_value::<C>()?);
                            continue;
                        }
                        "requestState" => &mut r.request_state,
                        "inputRequests" => &mut r.input_requests,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value::<RawText<'de>>()?);
                }
                Ok(r)
            }
        }
        d.deserialize_map(V(PhantomData)).map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{prop, prop_oneof, Just, Strategy};
    use serde_json::value::RawValue;

    fn raw(s: &str) -> &str {
        serde_json::from_str::<&RawValue>(s).unwrap().get()
    }

    fn content(content: &str) -> Option<Content<'static>> {
        let r = format!(r#"{{"content":{content}}}"#);
        let text = |c: Content| match c {
            Content::Array { first_text } => Content::Array {
                first_text: first_text.map(|t| Cow::Owned(t.into_owned())),
            },
            Content::NotArray => Content::NotArray,
        };
        ResultView::<Content>::parse(&r).unwrap().content.map(text)
    }

    fn first(c: &str) -> Option<String> {
        match content(c) {
            Some(Content::Array { first_text }) => first_text.map(Cow::into_owned),
            other => panic!("{c}: {other:?}"),
        }
    }

    #[test]
    fn members_by_presence_and_first_text() {
        let r = raw(
            r#"{"content":[{"type":"image"},{"type":"text","text":"a\"b"}],"isError":null,"x":[[1]]}"#,
        );
        let v = ResultView::<Content>::parse(r).unwrap();
        assert_eq!(v.is_error.map(RawText::get), Some("null"));
        assert!(v.result_type.is_none());
        assert_eq!(
            v.content,
            Some(Content::Array {
                first_text: Some(Cow::Borrowed("a\"b"))
            })
        );
        assert!(ResultView::<Content>::parse(raw("[1]")).is_none());
        let s = raw(r#"{"resultType":"input_required","requestState":"st \u00e9"}"#);
        assert_eq!(
            ResultView::<Content>::parse(s)
                .unwrap()
                .request_state
                .map(RawText::get),
            Some(r#""st \u00e9""#)
        );
    }

    #[test]
    fn the_first_text_is_of_the_first_object_with_one_string_text() {
        assert_eq!(
            first(r#"[1,"s",null,true,[{"text":"no"}],{"text":5},{"text":{"a":"no"}},{"text":"x","text":"y"},{"type":"text","text":"yes \u00e9"},{"text":"later"}]"#).as_deref(),
            Some("yes é")
        );
        assert_eq!(
            first(r#"[{"type":"text","text":"plain"}]"#).as_deref(),
            Some("plain")
        );
        assert_eq!(
            first(r#"[{"text":"a"},{"text":"b"},[[{}]]]"#).as_deref(),
            Some("a")
        );
        assert_eq!(first("[]"), None);
        assert_eq!(first(r#"[{"type":"image","data":"AAAA"}]"#), None);
    }

    #[test]
    fn content_that_is_no_array_is_told_and_quoted_from_the_raw_view() {
        for other in [r#"{"text":"not a list"}"#, r#""s""#, "1", "null", "true"] {
            assert_eq!(content(other), Some(Content::NotArray), "{other}");
            let r = format!(r#"{{"content":{other}}}"#);
            let quoted = ResultView::<&RawValue>::parse(&r).unwrap().content;
            assert_eq!(quoted.map(RawValue::get), Some(other));
        }
        // The last `content` member counts, as with every member.
        let r = raw(r#"{"content":[{"text":"a"}],"content":7}"#);
        assert_eq!(
            ResultView::<Content>::parse(r).unwrap().content,
            Some(Content::NotArray)
        );
        assert_eq!(content("[]"), Some(Content::Array { first_text: None }));
        let none = raw(r#"{"isError":false}"#);
        assert!(ResultView::<Content>::parse(none)
            .unwrap()
            .content
            .is_none());
    }

    /// `read` must give what `parse` gives, whichever of the two reads a result;
    /// `read` is only given valid JSON (a member of a message read before).
    fn same(raw: &str) {
        if serde_json::from_str::<&RawValue>(raw).is_err() {
            return;
        }
        let fast = format!("{:?}", ResultView::read(raw));
        let slow = format!("{:?}", ResultView::<Content>::parse(raw));
        assert_eq!(fast, slow, "{raw:?}");
    }

    #[test]
    fn the_scanned_view_is_the_parsed_view() {
        for raw in [
            r#"{"content":[{"type":"text","text":"plain"}],"isError":false}"#,
            r#"{"content":[{"type":"image","data":"AA"},{"text":"a\nb \u00e9"}],"structuredContent":{"k":[1,{"z":"]"}]}}"#,
            r#"{"content":[1,"s",null,[{"text":"no"}],{"text":5},{"text":"yes"},{"text":"later"}]}"#,
            r#"{"content":[{"text":"x","text":"y"},{"text":"z"}]}"#,
            r#"{"content":[{"text":{"a":"b"}},{"text":"z"}]}"#,
            r#"{"content":{"text":"not a list"}}"#,
            r#"{"content":"s","content":[{"text":"t"}]}"#,
            r#"{"content":[{"t\u0065xt":"escaped key"}]}"#,
            r#"{"content":[{"text":"\ud800 lone"}]}"#,
            r#"{"resultType":"input_required","requestState":"st","inputRequests":{"a":{}}}"#,
            r#"{"isError":null,"content":[], "n" : -1.5e+3 , "t":true}"#,
            r#"[1]"#,
            r#"  {"content":[ {"text" : "ws"} ] }  "#,
        ] {
            same(raw);
        }
        // Tool output longer than the head the view keeps, escapes throughout: the
        // same head either way, and a lone surrogate past it still refuses the text.
        let long = r#"fn main() {\n    println!(\"hi \u00e9\");\n}\n"#.repeat(200);
        for tail in ["", r"\ud83d\ude00", r"\udc00", r"\\udc00"] {
            same(&format!(
                r#"{{"content":[{{"type":"text","text":"{long}{tail}"}}]}}"#
            ));
        }
        let r = format!(r#"{{"content":[{{"text":"{long}"}}]}}"#);
        match ResultView::read(&r).unwrap().content {
            Some(Content::Array {
                first_text: Some(t),
            }) => {
                assert!(
                    t.len() <= TEXT_HEAD && t.len() > TEXT_HEAD - 4,
                    "{}",
                    t.len()
                );
                assert!(t.starts_with("fn main() {\n    println!(\"hi é\");"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            ResultView::read(r#"{"content":[{"text":"plain"}]}"#)
                .unwrap()
                .content,
            Some(Content::Array {
                first_text: Some(Cow::Borrowed("plain"))
            })
        ));
    }

    /// A verdict keeps the excerpt of the head: it must be the excerpt of the whole
    /// text, wherever a character of one to four bytes falls around the cut, with
    /// escapes before it or not.
    #[test]
    fn the_excerpt_of_the_head_is_the_excerpt_of_the_text() {
        use crate::text::{excerpt, EXCERPT};
        for lead in ["", r"\n", r"\u00e9\t"] {
            for c in ["a", "é", "€", "😀", r"\\", r"\u20ac"] {
                for n in EXCERPT - 12..EXCERPT + 12 {
                    let text = format!("{lead}{}{}", "x".repeat(n), c.repeat(3));
                    for t in [text.clone(), format!("{text}{}", "y".repeat(2000))] {
                        let r = format!(r#"{{"content":[{{"text":"{t}"}}]}}"#);
                        let whole: String = serde_json::from_str(&format!("\"{t}\"")).unwrap();
                        let Some(Content::Array {
                            first_text: Some(head),
                        }) = ResultView::read(&r).unwrap().content
                        else {
                            panic!("{r}");
                        };
                        assert_eq!(excerpt(&head), excerpt(&whole), "{t}");
                    }
                }
            }
        }
    }

    fn block() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(r#"{"type":"text","text":"a"}"#.to_owned()),
            Just(r#"{"text":"a\"b\\c\u0041]"}"#.to_owned()),
            Just(r#"{"text":"\udc00"}"#.to_owned()),
            Just(r#"{"text":7}"#.to_owned()),
            Just(r#"{"text":-0.5e-2,"type":"x"}"#.to_owned()),
            Just(r#"{"text":null,"type":"x"}"#.to_owned()),
            Just(r#"{"text":["a"]}"#.to_owned()),
            Just(r#"{"text":{"k":"v"}}"#.to_owned()),
            Just(r#"{"text":"1","text":"2"}"#.to_owned()),
            Just(r#"{"te\u0078t":"k"}"#.to_owned()),
            Just(
                r#"{"type":"image","data":"QUFB","mimeType":"image/png","_meta":{"a":[{}]}}"#
                    .to_owned()
            ),
            Just("[]".to_owned()),
            Just(r#""s""#.to_owned()),
            Just("3".to_owned()),
            Just("true".to_owned()),
            r#"\{ ?"text" ?: ?"[a-z \\\]\}]{0,6}" ?\}"#,
        ]
    }

    fn result() -> impl Strategy<Value = String> {
        let member = prop_oneof![
            prop::collection::vec(block(), 0..5)
                .prop_map(|b| format!("\"content\":[{}]", b.join(" , "))),
            block().prop_map(|b| format!("\"content\":{b}")),
            Just("\"isError\":true".to_owned()),
            Just("\"isError\":\"yes\"".to_owned()),
            Just("\"resultType\":\"complete\"".to_owned()),
            Just("\"requestState\":{\"s\":[1,2]}".to_owned()),
            Just("\"inputRequests\":[]".to_owned()),
            Just("\"_meta\":{\"x\":null}".to_owned()),
            Just("\"n\": 12".to_owned()),
        ];
        prop::collection::vec(member, 0..5).prop_map(|m| format!("{{{}}}", m.join(",")))
    }

    proptest::proptest! {
        #[test]
        fn results_read_alike(raw in result()) {
            same(&raw);
        }

        #[test]
        fn results_one_byte_off_read_alike(
            raw in result(),
            at in proptest::prelude::any::<proptest::sample::Index>(),
            byte in proptest::sample::select(&b"{}[],:\"\\ 0tu"[..]),
            insert in proptest::prelude::any::<bool>(),
        ) {
            let mut b = raw.into_bytes();
            let i = at.index(b.len());
            if insert { b.insert(i, byte) } else { b[i] = byte }
            if let Ok(t) = String::from_utf8(b) {
                same(&t);
            }
        }
    }
}
