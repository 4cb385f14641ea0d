//! JSON-RPC stage: turns what an exchange carried (a JSON body, a batch, SSE events,
//! a stdio line) into decoded messages, keeping what could not be decoded as evidence.
//! It knows JSON-RPC framing, not MCP semantics; those live in `classify`.

mod message;
mod result;
mod scan;

pub use crate::json::RawText;
pub use crate::text::{describe_json_error, excerpt};
pub use message::{canonical_json, write_canonical, Id, Kind, Message};
pub use result::{Content, ResultView};

use crate::model::{Body, HttpResponse, Timestamp};

/// What one JSON text (a body, an SSE `data`, a batch element) decoded to.
#[derive(Debug, Clone)]
pub enum Decoded {
    /// A JSON object, read as a JSON-RPC message (it may still be an invalid one).
    Message(Box<Message>),
    /// Valid JSON that is not an object (a number, a string, `null`, an array element
    /// of the wrong type). The string names the JSON type.
    NotObject(&'static str),
    /// Several JSON values back to back in one body.
    Multiple(usize),
    /// Not JSON at all; the parser's message.
    NotJson(String),
}

/// Where a decoded item sat in the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The whole HTTP body (or a stdio line).
    Body,
    /// The `index`-th dispatched SSE event.
    Event { index: usize },
}

/// One decoded item with its place and an excerpt of the text it came from.
#[derive(Debug, Clone)]
pub struct Item {
    pub decoded: Decoded,
    pub place: Place,
    /// Index within a JSON-RPC batch array, if it was one.
    pub batch_index: Option<usize>,
    /// The SSE event id in force, if any.
    pub event_id: Option<String>,
    pub ts: Option<Timestamp>,
    /// The first bytes of the source text, for reports.
    pub excerpt: String,
}

impl Item {
    pub fn message(&self) -> Option<&Message> {
        match &self.decoded {
            Decoded::Message(m) => Some(m),
            _ => None,
        }
    }
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Decodes one JSON text: an object, a batch array, or something that is not a message.
/// The raw JSON of the members `names` of the object `text` (the last of a name
/// given twice), for text already checked as JSON, such as a member of a decoded
/// message. `None` when `text` is not one object or a key carries an escape: read it
/// with serde_json then, which compares keys decoded.
pub fn members_of<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
) -> Option<[Option<&'a str>; N]> {
    let slot = |k: &[u8]| names.iter().position(|n| n.as_bytes() == k);
    let (spans, _) = crate::json::members::<N>(text, slot, crate::json::skip)?;
    Some(spans.map(|s| s.and_then(|r| text.get(r))))
}

/// `write_canonical` of the JSON `text` (already checked, such as a member of a
/// decoded message) without building a `Value`; `None` when the canonical form
/// would write something other than the text (see `scan::canonical_text`): then
/// whatever was written is to be dropped and the `Value` used.
pub fn write_canonical_text(text: &str, out: &mut impl std::io::Write) -> Option<()> {
    scan::canonical_text(text, out)
}

pub fn decode_text(
    text: &str,
    place: Place,
    event_id: Option<&str>,
    ts: Option<Timestamp>,
) -> Vec<Item> {
    let mut items = Vec::with_capacity(1);
    decode_text_into(text, place, event_id, ts, &mut items, Message::parse);
    items
}

/// `decode_text` for text its reader already checked as one JSON value (a
/// transcript's `msg` object): the envelope's members are found without checking
/// them a second time.
pub fn decode_checked_text(text: &str, place: Place, ts: Option<Timestamp>) -> Vec<Item> {
    let mut items = Vec::with_capacity(1);
    decode_text_into(text, place, None, ts, &mut items, Message::parse_checked);
    items
}

/// `decode_text`, adding the items to `items`: a stream's events go into one list
/// sized once, not a list per event gathered by growing another. An object is read
/// with `parse` (`Message::parse`, or `parse_checked` for text already checked).
fn decode_text_into(
    text: &str,
    place: Place,
    event_id: Option<&str>,
    ts: Option<Timestamp>,
    items: &mut Vec<Item>,
    parse: fn(&str) -> Result<Message, serde_json::Error>,
) {
    let item = |decoded, batch_index| Item {
        decoded,
        place,
        batch_index,
        event_id: event_id.map(str::to_owned),
        ts,
        excerpt: excerpt(text),
    };
    let trimmed = text.trim_start_matches('\u{feff}').trim();
    if trimmed.starts_with('{') {
        items.push(match parse(trimmed) {
            Ok(m) => item(Decoded::Message(Box::new(m)), None),
            Err(e) => item(not_json_or_multiple(trimmed, &e), None),
        });
        return;
    }
    if trimmed.starts_with('[') {
        match serde_json::from_str::<Vec<Box<serde_json::value::RawValue>>>(trimmed) {
            Ok(elems) if elems.is_empty() => {
                items.push(item(Decoded::NotObject("an empty array"), None))
            }
            Ok(elems) => items.extend(elems.iter().enumerate().map(|(i, raw)| {
                let d = match Message::parse(raw.get()) {
                    Ok(m) => Decoded::Message(Box::new(m)),
                    Err(_) => Decoded::NotObject(
                        serde_json::from_str::<serde_json::Value>(raw.get())
                            .map(|v| json_type(&v))
                            .unwrap_or("not an object"),
                    ),
                };
                item(d, Some(i))
            })),
            Err(e) => items.push(item(not_json_or_multiple(trimmed, &e), None)),
        }
        return;
    }
    items.push(match serde_json::from_str::<serde_json::Value>(trimmed) {
        Ok(v) => item(Decoded::NotObject(json_type(&v)), None),
        Err(e) => item(not_json_or_multiple(trimmed, &e), None),
    });
}

fn not_json_or_multiple(text: &str, e: &serde_json::Error) -> Decoded {
    if e.to_string().contains("trailing characters") {
        let n = serde_json::Deserializer::from_str(text)
            .into_iter::<serde::de::IgnoredAny>()
            .take_while(Result::is_ok)
            .count();
        if n > 1 {
            return Decoded::Multiple(n);
        }
    }
    if text.is_empty() {
        return Decoded::NotJson("empty body".to_owned());
    }
    Decoded::NotJson(describe_json_error(e))
}

/// Decodes what a response carried: the JSON body, or every SSE event's `data`.
/// SSE events with empty data (priming, keep-alive) carry no message and are skipped.
pub fn decode_response(resp: &HttpResponse) -> Vec<Item> {
    match &resp.body {
        Body::NotRecorded => Vec::new(),
        Body::Bytes(bytes) => {
            if bytes.is_empty() {
                return Vec::new();
            }
            decode_text(&body_text(bytes), Place::Body, None, resp.ts)
        }
        Body::Sse(sse) => {
            let mut items = Vec::with_capacity(sse.events.len());
            for (index, e) in sse.events.iter().enumerate() {
                if !e.data.trim().is_empty() {
                    let ts = e.ts.or(resp.ts);
                    let id = e.id.as_deref();
                    decode_text_into(
                        &e.data,
                        Place::Event { index },
                        id,
                        ts,
                        &mut items,
                        Message::parse,
                    );
                }
            }
            items
        }
    }
}

/// Decodes a request body (client → server), normally one message.
pub fn decode_request(body: &[u8]) -> Vec<Item> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Vec::new();
    }
    decode_text(&body_text(body), Place::Body, None, None)
}

/// Bytes of a body past which one that is not UTF-8 is converted only in part.
const BINARY_HEAD: usize = 4096;

/// A body's text for `decode_text`: the body itself when it is UTF-8, else its bytes
/// with each bad sequence replaced. A binary body (the images and fonts a browser's
/// HAR holds) that cannot start a JSON value is turned down at its first character,
/// with an excerpt of its first 300 bytes: its first `BINARY_HEAD` bytes give the
/// same item, and converting the whole of each was half of reading such a HAR.
fn body_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    if bytes.len() <= BINARY_HEAD {
        return crate::text::lossy(bytes);
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return std::borrow::Cow::Borrowed(text);
    }
    let head = String::from_utf8_lossy(&bytes[..BINARY_HEAD]);
    let start = head.trim_start_matches('\u{feff}').trim_start();
    // The first character well inside the head (a cut sequence at its end reads
    // as a replacement the whole body may not have), and no start of a JSON value.
    let refused = head.len() - start.len() < BINARY_HEAD / 2
        && start
            .chars()
            .next()
            .is_some_and(|c| !matches!(c, '{' | '[' | '"' | '-' | '0'..='9' | 't' | 'f' | 'n'));
    if refused {
        return std::borrow::Cow::Owned(head.into_owned());
    }
    String::from_utf8_lossy(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_objects_batches_and_garbage() {
        let one = decode_text(
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            Place::Body,
            None,
            None,
        );
        assert!(matches!(one[0].decoded, Decoded::Message(_)));
        let batch = decode_text(
            r#"[{"jsonrpc":"2.0","id":1,"result":{}}, 5]"#,
            Place::Body,
            None,
            None,
        );
        assert_eq!(batch.len(), 2);
        assert!(matches!(batch[1].decoded, Decoded::NotObject("a number")));
        assert_eq!(batch[1].batch_index, Some(1));
        let bad = decode_text("{unclosed", Place::Body, None, None);
        assert!(matches!(bad[0].decoded, Decoded::NotJson(_)));
        let two = decode_text(
            "{\"id\":1,\"result\":{}}\n{\"id\":1,\"result\":{}}",
            Place::Body,
            None,
            None,
        );
        assert!(matches!(two[0].decoded, Decoded::Multiple(2)));
        let s = decode_text("\"hello\"", Place::Body, None, None);
        assert!(matches!(s[0].decoded, Decoded::NotObject("a string")));
    }
}

#[cfg(test)]
mod body_text_tests {
    use super::*;

    #[test]
    fn a_blank_cut_by_the_head_does_not_hide_the_message_after_it() {
        // U+3000 is a blank of three bytes; the head ends inside it, where it reads
        // as a replacement character, which no JSON value starts with.
        let mut bytes = " ".repeat(BINARY_HEAD - 2).into_bytes();
        bytes.extend_from_slice("\u{3000}".as_bytes());
        bytes.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"result":{"x":"\u00e9"}}"#);
        bytes.extend_from_slice(b" \xff");
        let items = decode_text(&body_text(&bytes), Place::Body, None, None);
        let whole = decode_text(&crate::text::lossy(&bytes), Place::Body, None, None);
        assert_eq!(format!("{items:?}"), format!("{whole:?}"));
    }

    proptest::proptest! {
        /// A body that is not UTF-8 decodes to the items (outcome and excerpt) of its
        /// whole text with each bad sequence replaced, whether all of it was
        /// converted or only its head: JSON or not, binary from the first byte or
        /// only past the head, with blanks or a BOM first, bad bytes next to the cut.
        /// (Turning down a body that starts a JSON value by its head alone fails
        /// this: the parse then ends at the cut.)
        #[test]
        fn a_binary_body_decodes_as_its_whole_lossy_text(
            lead in proptest::sample::select(vec![
                String::new(), "  ".into(), "\n\t".into(), "\u{feff}".into(), "\u{feff} ".into(),
                // The first character at the head's end, cut or whole.
                " ".repeat(BINARY_HEAD - 2), " ".repeat(BINARY_HEAD - 1),
            ]),
            first in proptest::sample::select(vec![
                &b"\x89PNG\r\n"[..], b"\xff\xd8\xff", b"GIF8", b"<html>", b"{\"a\":", b"[1,",
                b"\"s", b"-1", b"7", b"true", b"nul", b"\xc3", b"\xe2\x82",
                // A blank of three bytes (U+3000) before a JSON value.
                b"\xe3\x80\x80{\"a\":",
            ]),
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            noisy in proptest::bool::ANY,
            fill in 0usize..(2 * BINARY_HEAD),
            bad in proptest::sample::select(vec![&b"\xff"[..], b"\xe2\x82", b"\xf0\x9f\x98", b"\xc3\xa9"]),
        ) {
            let mut bytes = lead.as_bytes().to_vec();
            bytes.extend_from_slice(first);
            // Random bytes, or plain text that reads on as far as the fill goes.
            if noisy {
                bytes.extend_from_slice(&body);
            }
            bytes.resize(bytes.len() + fill, b'x');
            // A sequence cut by the head's end, or whole on both sides of it.
            let at = BINARY_HEAD.saturating_sub(1).min(bytes.len());
            bytes.splice(at..at, bad.iter().copied());
            let whole = decode_text(&crate::text::lossy(&bytes), Place::Body, None, None);
            let part = decode_text(&body_text(&bytes), Place::Body, None, None);
            proptest::prop_assert_eq!(format!("{whole:?}"), format!("{part:?}"));
        }
    }
}
