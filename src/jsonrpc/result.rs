//! A borrowed view of a `tools/call` result: the members the classifier checks, as
//! raw JSON slices of the body, found in one pass that skips everything else (tool
//! output can be megabytes; nothing of it is copied or built into a tree).

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// The result members that decide an outcome. Presence is kept apart from value:
/// `"isError": null` is present (and invalid), not absent.
#[derive(Debug, Default)]
pub struct ResultView<'a> {
    pub result_type: Option<&'a RawValue>,
    pub is_error: Option<&'a RawValue>,
    pub content: Option<&'a RawValue>,
    pub request_state: Option<&'a RawValue>,
    pub input_requests: Option<&'a RawValue>,
}

impl<'a> ResultView<'a> {
    /// Reads `raw` as a result object; `None` when it is not an object.
    pub fn parse(raw: &'a RawValue) -> Option<ResultView<'a>> {
        if !raw.get().trim_start().starts_with('{') {
            return None;
        }
        serde_json::from_str(raw.get()).ok()
    }

    /// The text of the first content block that is an object with a string `text`,
    /// unescaped. One pass that stops at that block: the blocks after it (tool output
    /// can be megabytes) are not read.
    pub fn first_text(&self) -> Option<Cow<'a, str>> {
        let content = self.content?;
        let mut found = None;
        let mut de = serde_json::Deserializer::from_str(content.get());
        // Stopping early leaves the array unfinished, which serde_json reports as an
        // error; `content` is valid JSON (it was read as a `RawValue`), so the only
        // error is that one, and what was found stands.
        let _ = de::Deserializer::deserialize_seq(&mut de, Blocks { found: &mut found });
        found
    }
}

/// Walks the content array until a block gives a text.
struct Blocks<'s, 'a> {
    found: &'s mut Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Visitor<'de> for Blocks<'_, 'a> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a content array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(text) = seq.next_element::<BlockText<'a>>()? {
            if let Some(t) = text.0 {
                *self.found = Some(t);
                return Ok(());
            }
        }
        Ok(())
    }
}

/// A content block's `text` when the block is an object and its one `text` member is
/// a string; `None` for any other value, which is skipped.
struct BlockText<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for BlockText<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BlockText<'a>, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
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
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BlockText<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(BlockText(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<BlockText<'a>, E> {
                Ok(BlockText(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<BlockText<'a>, E> {
                Ok(BlockText(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<BlockText<'a>, E> {
                Ok(BlockText(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<BlockText<'a>, E> {
                Ok(BlockText(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<BlockText<'a>, E> {
                Ok(BlockText(None))
            }
            fn visit_unit<E>(self) -> Result<BlockText<'a>, E> {
                Ok(BlockText(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A string borrowed when it has no escapes; `None` for any other JSON value.
struct MaybeStr<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for MaybeStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<MaybeStr<'a>, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MaybeStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<MaybeStr<'a>, E> {
                Ok(MaybeStr(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<MaybeStr<'a>, E> {
                Ok(MaybeStr(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MaybeStr<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MaybeStr<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(MaybeStr(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<MaybeStr<'a>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<MaybeStr<'a>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<MaybeStr<'a>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<MaybeStr<'a>, E> {
                Ok(MaybeStr(None))
            }
            fn visit_unit<E>(self) -> Result<MaybeStr<'a>, E> {
                Ok(MaybeStr(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ResultView<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ResultView<'a>, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = ResultView<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a result object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ResultView<'a>, A::Error> {
                let mut r = ResultView::default();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    let slot = match &*key {
                        "resultType" => &mut r.result_type,
                        "isError" => &mut r.is_error,
                        "content" => &mut r.content,
                        "requestState" => &mut r.request_state,
                        "inputRequests" => &mut r.input_requests,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *slot = Some(map.next_value::<&'de RawValue>()?);
                }
                Ok(r)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
            .map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> &RawValue {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn members_by_presence_and_first_text() {
        let r = raw(
            r#"{"content":[{"type":"image"},{"type":"text","text":"a\"b"}],"isError":null,"x":[[1]]}"#,
        );
        let v = ResultView::parse(r).unwrap();
        assert_eq!(v.is_error.map(RawValue::get), Some("null"));
        assert!(v.result_type.is_none());
        assert_eq!(v.first_text().as_deref(), Some("a\"b"));
        let first = |content: &str| {
            let r = RawValue::from_string(format!(r#"{{"content":{content}}}"#)).unwrap();
            ResultView::parse(&r)
                .unwrap()
                .first_text()
                .map(Cow::into_owned)
        };
        // Blocks that are not objects with one string `text` are passed over.
        assert_eq!(
            first(r#"[1,"s",null,true,[{"text":"no"}],{"text":5},{"text":{"a":"no"}},{"text":"x","text":"y"},{"type":"text","text":"yes \u00e9"},{"text":"later"}]"#).as_deref(),
            Some("yes é")
        );
        assert_eq!(
            first(r#"[{"type":"text","text":"plain"}]"#).as_deref(),
            Some("plain")
        );
        assert_eq!(first(r#"[]"#), None);
        assert_eq!(first(r#"[{"type":"image","data":"AAAA"}]"#), None);
        assert_eq!(first(r#"{"text":"not a list"}"#), None);
        // The blocks after the first text are not read (nor need to be well formed
        // for it: here the slice handed over would be, as it was a RawValue).
        assert_eq!(
            first(r#"[{"text":"a"},{"text":"b"}]"#).as_deref(),
            Some("a")
        );
        assert!(ResultView::parse(raw("[1]")).is_none());
        let s = raw(r#"{"resultType":"input_required","requestState":"st \u00e9"}"#);
        assert_eq!(
            ResultView::parse(s)
                .unwrap()
                .request_state
                .map(RawValue::get),
            Some(r#""st \u00e9""#)
        );
    }
}
