//! mcp-vcr's YAML walked as the parser's events (`yaml-rust2`), without a document
//! tree: the top mapping's `meta.recorded_at` and each item of `messages`, whose
//! `payload` is written out as JSON text as its events come. Written here because no
//! crate turns YAML events into JSON text; a plain scalar is typed as YAML 1.2's core
//! schema has it (null, booleans, integers in decimal, 0x, 0o or 0b, floats), as the
//! tree readers did. Anchors read in payloads may be named again by aliases (their text
//! is kept, 16 MiB at most), and a message is written out to `max` bytes at most, so
//! an alias bomb is one message too long, not a run out of memory.

use std::collections::HashMap;
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{ScanError, TScalarStyle};

/// Bytes of anchored text kept for aliases; an anchor past it is not kept, and an
/// alias to it makes its message unreadable.
const ANCHOR_BYTES: usize = 16 << 20;
/// Nesting of a payload, as serde_json allows.
const MAX_DEPTH: usize = 128;

/// What the walk hands on, in the file's order.
pub enum Item {
    /// `meta.recorded_at` (`None`: `meta` has none, or it is no string).
    RecordedAt(Option<String>),
    /// An item of `messages`, or why it could not be read.
    Message(Result<Message, String>),
}

/// One item of `messages`, its members as written.
#[derive(Debug, Default)]
pub struct Message {
    pub dir: Option<String>,
    pub t: Option<f64>,
    /// The `payload` mapping as JSON text, or why it could not be written (`None`: no
    /// `payload`, or one that is no mapping).
    pub payload: Option<Result<String, String>>,
}

/// Why the walk stopped.
pub enum Stop {
    /// The YAML is broken at this place.
    Yaml(ScanError),
    /// Valid YAML of another shape: what is wrong, after "a transcript whose".
    Shape(&'static str),
}

impl From<ScanError> for Stop {
    fn from(e: ScanError) -> Stop {
        Stop::Yaml(e)
    }
}

pub struct Walk<'a> {
    parser: Parser<std::str::Chars<'a>>,
    anchors: HashMap<usize, String>,
    anchor_bytes: usize,
    max: usize,
}

impl<'a> Walk<'a> {
    pub fn new(text: &'a str, max: usize) -> Walk<'a> {
        Walk {
            parser: Parser::new_from_str(text),
            anchors: HashMap::new(),
            anchor_bytes: 0,
            max,
        }
    }

    fn next(&mut self) -> Result<Event, ScanError> {
        self.parser.next_token().map(|(e, _)| e)
    }

    /// Walks the document, handing on `meta.recorded_at` and each message as read.
    pub fn transcript(&mut self, mut each: impl FnMut(Item)) -> Result<(), Stop> {
        let mut ev = self.next()?;
        while matches!(ev, Event::StreamStart | Event::DocumentStart) {
            ev = self.next()?;
        }
        if !matches!(ev, Event::MappingStart(..)) {
            return Err(Stop::Shape("\"messages\" is not a list"));
        }
        let mut messages = false;
        loop {
            let key = match self.next()? {
                // The parser closes every mapping before the stream ends; a stream
                // end here is taken as the mapping's, so no loop waits on it.
                Event::MappingEnd | Event::StreamEnd | Event::DocumentEnd => break,
                Event::Scalar(k, ..) => Some(k),
                other => {
                    self.skip(other)?;
                    None
                }
            };
            let value = self.next()?;
            match key.as_deref() {
                Some("meta") => {
                    let at = self.recorded_at(value)?;
                    each(Item::RecordedAt(at));
                }
                Some("messages") => {
                    messages = true;
                    match value {
                        Event::SequenceStart(..) => loop {
                            match self.next()? {
                                Event::SequenceEnd | Event::StreamEnd | Event::DocumentEnd => break,
                                ev => {
                                    let m = self.message(ev)?;
                                    each(Item::Message(m));
                                }
                            }
                        },
                        // `messages:` written and nothing after it: no message yet.
                        Event::Scalar(v, TScalarStyle::Plain, ..) if is_null(&v) => {}
                        _ => return Err(Stop::Shape("\"messages\" is not a list")),
                    }
                }
                _ => self.skip(value)?,
            }
        }
        if messages {
            Ok(())
        } else {
            Err(Stop::Shape("\"messages\" is not a list"))
        }
    }

    /// `recorded_at` of the `meta` node that starts with `first`.
    fn recorded_at(&mut self, first: Event) -> Result<Option<String>, ScanError> {
        if !matches!(first, Event::MappingStart(..)) {
            self.skip(first)?;
            return Ok(None);
        }
        let mut at = None;
        loop {
            let key = match self.next()? {
                Event::MappingEnd | Event::StreamEnd | Event::DocumentEnd => return Ok(at),
                Event::Scalar(k, ..) => Some(k),
                other => {
                    self.skip(other)?;
                    None
                }
            };
            match (key.as_deref(), self.next()?) {
                (Some("recorded_at"), Event::Scalar(v, ..)) => at = Some(v),
                (_, value) => self.skip(value)?,
            }
        }
    }

    /// The item of `messages` that starts with `first`.
    fn message(&mut self, first: Event) -> Result<Result<Message, String>, ScanError> {
        if !matches!(first, Event::MappingStart(..)) {
            self.skip(first)?;
            return Ok(Ok(Message::default()));
        }
        let mut m = Message::default();
        loop {
            let key = match self.next()? {
                Event::MappingEnd | Event::StreamEnd | Event::DocumentEnd => return Ok(Ok(m)),
                Event::Scalar(k, ..) => Some(k),
                other => {
                    self.skip(other)?;
                    None
                }
            };
            let value = self.next()?;
            match (key.as_deref(), value) {
                (Some("dir"), Event::Scalar(v, ..)) => m.dir = Some(v),
                (Some("t"), Event::Scalar(v, TScalarStyle::Plain, ..)) => {
                    m.t = plain_json(&v).parse::<f64>().ok();
                }
                (Some("payload"), value @ Event::MappingStart(..)) => {
                    m.payload = Some(self.json(value)?);
                }
                (_, value) => self.skip(value)?,
            }
        }
    }

    /// Passes over the node that starts with `first`.
    fn skip(&mut self, first: Event) -> Result<(), ScanError> {
        let mut depth = 0usize;
        let mut ev = first;
        loop {
            match ev {
                Event::SequenceStart(..) | Event::MappingStart(..) => depth += 1,
                Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
                Event::StreamEnd | Event::DocumentEnd => return Ok(()),
                _ => {}
            }
            if depth == 0 {
                return Ok(());
            }
            ev = self.next()?;
        }
    }

    /// The node that starts with `first` as JSON text, or why it cannot be one (its
    /// events are read to its end either way).
    fn json(&mut self, first: Event) -> Result<Result<String, String>, ScanError> {
        let mut out = String::new();
        let mut failed: Option<String> = None;
        let mut open: Vec<Open> = Vec::new();
        let mut ev = first;
        loop {
            let writing = failed.is_none();
            // Whether the value just read was a mapping's key.
            let key = match ev {
                Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                    let map = matches!(ev, Event::MappingStart(..));
                    let key = next_value(&mut out, open.last(), writing);
                    if key {
                        failed.get_or_insert_with(|| {
                            "a mapping key is a list or a mapping, which JSON has not".to_owned()
                        });
                    }
                    if open.len() >= MAX_DEPTH {
                        failed.get_or_insert_with(|| {
                            format!("the payload is nested more than {MAX_DEPTH} deep")
                        });
                    }
                    open.push(Open {
                        map,
                        items: 0,
                        anchor,
                        at: out.len(),
                        key,
                    });
                    if writing {
                        out.push(if map { '{' } else { '[' });
                    }
                    ev = self.next()?;
                    continue;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some(o) = open.pop() else {
                        break;
                    };
                    if writing {
                        out.push(if o.map { '}' } else { ']' });
                        self.keep(o.anchor, &out[o.at..]);
                    }
                    o.key
                }
                Event::Scalar(v, style, anchor, tag) => {
                    let key = next_value(&mut out, open.last(), writing);
                    if v.len() > self.max {
                        failed.get_or_insert_with(|| self.too_long());
                    } else if writing {
                        let at = out.len();
                        if key {
                            push_string(&mut out, &v);
                        } else {
                            push_scalar(&mut out, &v, style, tag.as_ref());
                        }
                        self.keep(anchor, &out[at..]);
                    }
                    key
                }
                Event::Alias(id) => {
                    let key = next_value(&mut out, open.last(), writing);
                    match self.anchors.get(&id) {
                        Some(text) if !key => {
                            if writing {
                                out.push_str(text);
                            }
                        }
                        Some(_) => {
                            failed.get_or_insert_with(|| "a mapping key is an alias".to_owned());
                        }
                        None => {
                            failed.get_or_insert_with(|| {
                                "an alias names an anchor that was not read".to_owned()
                            });
                        }
                    }
                    key
                }
                // A stream or document end inside a node, which the parser refuses first.
                _ => return Ok(Err("the payload ends early".to_owned())),
            };
            if key && failed.is_none() {
                out.push(':');
            }
            match open.last_mut() {
                Some(o) => o.items += 1,
                None => break,
            }
            if failed.is_none() && out.len() > self.max {
                failed = Some(self.too_long());
            }
            if failed.is_some() {
                out = String::new();
            }
            ev = self.next()?;
        }
        Ok(match failed {
            Some(why) => Err(why),
            None => Ok(out),
        })
    }

    fn too_long(&self) -> String {
        format!(
            "the payload is more than {} bytes as JSON, over the record limit; not read (raise --max-record-bytes to read it)",
            self.max
        )
    }

    /// Keeps the text of an anchored node for the aliases that name it (each counted
    /// with what holding it costs besides its text).
    fn keep(&mut self, anchor: usize, text: &str) {
        let cost = text.len() + 64;
        if anchor > 0 && self.anchor_bytes + cost <= ANCHOR_BYTES {
            self.anchor_bytes += cost;
            self.anchors.insert(anchor, text.to_owned());
        }
    }
}

/// A list or mapping being written out.
struct Open {
    map: bool,
    /// Keys and values so far.
    items: usize,
    anchor: usize,
    /// Where its text begins in the output.
    at: usize,
    /// It is a mapping's key (which JSON cannot have).
    key: bool,
}

/// Writes what comes before the next value in `parent` (a comma after an item, none
/// after a key); whether that value is a key.
fn next_value(out: &mut String, parent: Option<&Open>, writing: bool) -> bool {
    let Some(p) = parent else {
        return false;
    };
    let key = p.map && p.items % 2 == 0;
    if writing && p.items > 0 && (key || !p.map) {
        out.push(',');
    }
    key
}

fn is_null(v: &str) -> bool {
    matches!(v, "" | "~" | "null" | "Null" | "NULL")
}

/// A JSON string of `v`.
fn push_string(out: &mut String, v: &str) {
    // Writing a str as JSON cannot fail.
    out.push_str(&serde_json::to_string(v).unwrap_or_default());
}

/// A scalar as JSON: quoted and block scalars and `!!str` are strings; a plain one (or
/// one tagged with a core type) is typed by YAML 1.2's core schema.
fn push_scalar(out: &mut String, v: &str, style: TScalarStyle, tag: Option<&Tag>) {
    let core =
        tag.is_some_and(|t| matches!(&*t.handle, "tag:yaml.org,2002:" | "!!") && t.suffix != "str");
    let plain = style == TScalarStyle::Plain && tag.is_none_or(|t| t.suffix != "str");
    if plain || core {
        let typed = plain_json(v);
        if !typed.starts_with('"') {
            out.push_str(&typed);
            return;
        }
    }
    push_string(out, v);
}

/// A plain scalar as JSON text: `null`, `true`, `false`, a number, or a string.
/// Infinities and NaN have no JSON number, so they are `null` (as a JSON tree has them).
fn plain_json(v: &str) -> String {
    if is_null(v) {
        return "null".to_owned();
    }
    match v {
        "true" | "True" | "TRUE" => return "true".to_owned(),
        "false" | "False" | "FALSE" => return "false".to_owned(),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => return "null".to_owned(),
        _ => {}
    }
    if let Some(i) = integer(v) {
        return i;
    }
    if is_float(v) {
        if let Some(n) = v.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
            return n.to_string();
        }
    }
    serde_json::to_string(v).unwrap_or_default()
}

/// An integer in decimal, `0x`, `0o` or `0b`, signed or not, as decimal JSON text.
fn integer(v: &str) -> Option<String> {
    let (neg, digits) = match v.as_bytes().first()? {
        b'-' => (true, &v[1..]),
        b'+' => (false, &v[1..]),
        _ => (false, v),
    };
    let (radix, digits) = match digits.get(..2) {
        Some("0x") => (16, &digits[2..]),
        Some("0o") => (8, &digits[2..]),
        Some("0b") => (2, &digits[2..]),
        _ => (10, digits),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let n = i128::from_str_radix(digits, radix).ok()?;
    let n = if neg { -n } else { n };
    (i64::try_from(n).is_ok() || u64::try_from(n).is_ok()).then(|| n.to_string())
}

/// YAML 1.2's float: `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
fn is_float(v: &str) -> bool {
    let b = v.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let from = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - from
    };
    let whole = digits(&mut i);
    let mut frac = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac = digits(&mut i);
    }
    if whole == 0 && frac == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads(text: &str) -> Vec<Result<String, String>> {
        let mut out = Vec::new();
        let mut w = Walk::new(text, 1 << 20);
        let walked = w.transcript(|item| {
            if let Item::Message(Ok(m)) = item {
                out.push(m.payload.unwrap_or(Err("none".to_owned())));
            }
        });
        assert!(walked.is_ok());
        out
    }

    #[test]
    fn scalars_are_typed_as_yaml_core_schema_has_them() {
        let got = payloads(
            "messages:\n- payload:\n    a: [~, null, true, False, 12, -0x1f, 0o17, 0b101, +3, 1.5, .5, 1e3, .inf, .NaN]\n    b: ['1', \"true\", 0.1.2, 1_000, !!str 5, yes, 12345678901234567890]\n    c: |\n      two\n      lines\n    5: {x: y}\n",
        );
        assert_eq!(
            got,
            [Ok(r#"{"a":[null,null,true,false,12,-31,15,5,3,1.5,0.5,1000.0,null,null],"b":["1","true","0.1.2","1_000","5","yes",12345678901234567890],"c":"two\nlines\n","5":{"x":"y"}}"#.to_owned())]
        );
        let v: serde_json::Value = serde_json::from_str(got[0].as_ref().unwrap()).unwrap();
        assert_eq!(v["c"], "two\nlines\n");
    }

    #[test]
    fn anchors_are_named_again_and_an_alias_bomb_is_one_message_too_long() {
        let got = payloads("messages:\n- payload: &p {a: &x [1, 2], b: *x}\n- payload: {c: *p}\n");
        assert_eq!(
            got,
            [
                Ok(r#"{"a":[1,2],"b":[1,2]}"#.to_owned()),
                Ok(r#"{"c":{"a":[1,2],"b":[1,2]}}"#.to_owned())
            ]
        );
        let mut bomb =
            String::from("messages:\n- payload:\n    a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for k in b'b'..=b'k' {
            let prev = (k - 1) as char;
            let k = k as char;
            bomb.push_str(&format!(
                "    {k}: &{k} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        bomb.push_str("- payload: {ok: 1}\n");
        let got = payloads(&bomb);
        assert!(
            got[0]
                .as_ref()
                .is_err_and(|e| e.contains("more than 1048576 bytes as JSON")
                    && e.contains("raise --max-record-bytes")),
            "{got:?}"
        );
        assert_eq!(
            got[1],
            Ok(r#"{"ok":1}"#.to_owned()),
            "the next message is read"
        );
    }

    #[test]
    fn keys_that_json_cannot_have_make_the_payload_unreadable() {
        let got = payloads("messages:\n- payload:\n    ? [a]\n    : 1\n- payload: {a: 1}\n");
        assert!(
            got[0].as_ref().is_err_and(|e| e.contains("mapping key")),
            "{got:?}"
        );
        assert_eq!(got[1], Ok(r#"{"a":1}"#.to_owned()));
    }

    #[test]
    fn a_payload_too_deep_or_naming_an_unread_anchor_is_unreadable_alone() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        // An anchor outside the messages is passed over, not kept.
        let got = payloads(&format!(
            "meta:\n  note: &m {{a: 1}}\nmessages:\n- payload: {{x: {deep}}}\n- payload: {{y: *m}}\n- payload: {{z: 1}}\n"
        ));
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(
            got[0],
            Err("the payload is nested more than 128 deep".to_owned())
        );
        assert_eq!(
            got[1],
            Err("an alias names an anchor that was not read".to_owned())
        );
        assert_eq!(got[2], Ok(r#"{"z":1}"#.to_owned()));
    }

    #[test]
    fn meta_and_shape() {
        let mut items = Vec::new();
        let mut w = Walk::new(
            "messages: []\nmeta:\n  recorded_at: \"2026-01-01T00:00:00Z\"\n",
            100,
        );
        assert!(w
            .transcript(|i| items.push(matches!(i, Item::RecordedAt(Some(_)))))
            .is_ok());
        assert_eq!(items, [true]);
        let mut w = Walk::new("messages: 3\n", 100);
        assert!(matches!(w.transcript(|_| {}), Err(Stop::Shape(_))));
        let mut w = Walk::new("- 1\n", 100);
        assert!(matches!(w.transcript(|_| {}), Err(Stop::Shape(_))));
        let mut w = Walk::new("messages:\n- payload: {a: [1\n", 100);
        assert!(matches!(w.transcript(|_| {}), Err(Stop::Yaml(_))));
    }
}
