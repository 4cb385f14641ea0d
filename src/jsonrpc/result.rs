//! A borrowed view of a `tools/call` result: the members the classifier checks, as
//! raw JSON slices of the body, found in one pass that skips everything else (tool
//! output can be megabytes; nothing of it is copied or built into a tree).

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
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

    /// The text of the first content block that has one, unescaped.
    pub fn first_text(&self) -> Option<Cow<'a, str>> {
        #[derive(Deserialize)]
        struct Block<'b> {
            #[serde(borrow, default)]
            text: Option<Cow<'b, str>>,
        }
        let content = self.content?;
        let blocks: Vec<&'a RawValue> = serde_json::from_str(content.get()).ok()?;
        blocks.into_iter().find_map(|b| {
            serde_json::from_str::<Block<'a>>(b.get())
                .ok()
                .and_then(|b| b.text)
        })
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
