//! The fast half of the HAR reader (issue #13): the input is read in large chunks into
//! one reusable buffer, and each element of `log.entries` is parsed from its bytes by
//! serde_json's slice reader instead of its byte-at-a-time `io::Read` one. An entry
//! whole in the buffer is parsed where it starts; one that is not (cut by the end of
//! the buffer, oversize, or not an entry) is found by a small scanner that tracks where
//! it begins and ends, and then parsed or reported.
//!
//! The scanner is hand-written because no crate splits a streaming JSON document at a
//! nested path. It tracks only strings, escapes and bracket depth; whether the bytes
//! are JSON is left to serde_json, asked again on the slice whenever an entry does not
//! parse, so a broken file gets serde_json's own message at its place in the document.

use memchr::{memchr2, memchr_iter, memrchr};
use serde::de::{Deserialize, IgnoredAny};
use serde_json::value::RawValue;
use std::cell::RefCell;
use std::io::{self, Read};

/// How much is asked of the reader at a time.
const CHUNK: usize = 1 << 20;

/// A place in the document as serde_json reports one: the 1-based line, and how many
/// bytes of that line come before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pos {
    pub line: usize,
    pub column: usize,
}

/// Why the entries stopped before their closing `]`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The reader failed; its message.
    Io(String),
    /// The input ended inside the list.
    Eof,
    /// Not JSON: serde_json's wording, at a document position.
    Syntax(String),
}

/// The input, read in chunks into one buffer that holds at most one record (plus a
/// chunk) at a time; consumed bytes are dropped before the buffer grows.
pub(crate) struct Source<'r> {
    inner: &'r mut dyn Read,
    buf: Vec<u8>,
    /// First byte not consumed yet.
    head: usize,
    /// End of the bytes read.
    filled: usize,
    eof: bool,
    /// Offset in the input of `buf[0]`.
    base: usize,
    /// Line of the byte at `head`, and the input offset where that line starts.
    line: usize,
    line_start: usize,
}

impl<'r> Source<'r> {
    pub(crate) fn new(inner: &'r mut dyn Read) -> Self {
        Source {
            inner,
            buf: Vec::new(),
            head: 0,
            filled: 0,
            eof: false,
            base: 0,
            line: 1,
            line_start: 0,
        }
    }

    /// The bytes read and not consumed.
    pub(crate) fn data(&self) -> &[u8] {
        &self.buf[self.head..self.filled]
    }

    /// Reads more after `data()`: false at the end of the input.
    pub(crate) fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.buf.len() - self.filled < CHUNK {
            // Consumed bytes go first, so the buffer only grows for one long record.
            self.buf.copy_within(self.head..self.filled, 0);
            self.base += self.head;
            self.filled -= self.head;
            self.head = 0;
            if self.buf.len() - self.filled < CHUNK {
                // By half rather than doubling: at most half as large again as the
                // longest entry, and a long one is still copied only a few times.
                let len = self.filled + CHUNK.max(self.filled / 2);
                self.buf.reserve_exact(len - self.buf.len());
                self.buf.resize(len, 0);
            }
        }
        loop {
            match self.inner.read(&mut self.buf[self.filled..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.filled += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Consumes the first `n` bytes of `data()`, counting lines as serde_json does.
    pub(crate) fn consume(&mut self, n: usize) {
        let gone = &self.buf[self.head..self.head + n];
        if let Some(last) = memrchr(b'\n', gone) {
            self.line += memchr_iter(b'\n', gone).count();
            self.line_start = self.base + self.head + last + 1;
        }
        self.head += n;
    }

    /// The position after the consumed bytes.
    pub(crate) fn pos(&self) -> Pos {
        self.pos_at(0)
    }

    /// The position after the consumed bytes and `at` more of `data()`.
    fn pos_at(&self, at: usize) -> Pos {
        let before = &self.buf[self.head..self.head + at];
        let (line, start) = match memrchr(b'\n', before) {
            Some(last) => (
                self.line + memchr_iter(b'\n', before).count(),
                self.base + self.head + last + 1,
            ),
            None => (self.line, self.line_start),
        };
        Pos {
            line,
            column: self.base + self.head + at - start,
        }
    }

    /// Where serde_json reports an error about the byte `at` of `data()` that it peeked.
    fn peek_pos(&self, at: usize) -> Pos {
        let p = self.pos_at(at);
        Pos {
            line: p.line,
            column: p.column + 1,
        }
    }
}

/// `Source` as an `io::Read` for serde_json, which walks the small top level of the
/// document (everything but the entries) through it.
pub(crate) struct Shared<'a, 'r>(pub &'a RefCell<Source<'r>>);

impl Read for Shared<'_, '_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut src = self.0.borrow_mut();
        if src.data().is_empty() && !src.fill()? {
            return Ok(0);
        }
        let n = out.len().min(src.data().len());
        out[..n].copy_from_slice(&src.data()[..n]);
        src.consume(n);
        Ok(n)
    }
}

/// What the entries are handed to.
pub(crate) trait Entries {
    /// One whole entry, valid UTF-8. A parse error is handed back unreported: it is
    /// the entry's own only if the entry is valid JSON.
    fn entry(&mut self, text: &str) -> Result<(), serde_json::Error>;
    /// The entry did not parse as an entry, though it is JSON.
    fn bad(&mut self, e: serde_json::Error);
    /// The entry is larger than the record cap; it is skipped.
    fn oversize(&mut self, cap: usize);
    /// Takes the entry that `bytes` start with, parsed straight from them (they may
    /// go on past it), and returns its length; `None`, having taken nothing, when it
    /// does not parse whole as an entry within `cap` bytes and as UTF-8. This spares
    /// the scan for the entry's end, a second pass over every byte, for nearly
    /// every entry; what it turns down takes the scanning path, which words errors.
    fn entry_at_start(&mut self, _bytes: &[u8], _cap: usize) -> Option<usize> {
        None
    }
}

/// Reads the elements of a JSON list whose `[` was just consumed, up to (not
/// including) its `]`, handing each to `to`. An element larger than `cap` bytes is
/// skipped by scanning, without being held.
pub(crate) fn read_entries(
    src: &mut Source,
    cap: usize,
    to: &mut dyn Entries,
) -> Result<(), Failure> {
    let mut first = true;
    loop {
        // The checks and wording of serde_json's `SeqAccess`, which read HARs before.
        let Some(b) = next_token(src)? else {
            return Err(Failure::Eof);
        };
        if b == b']' {
            return Ok(());
        }
        if !first {
            if b != b',' {
                return Err(syntax("expected `,` or `]`", src.peek_pos(0)));
            }
            src.consume(1);
            match next_token(src)? {
                None => return Err(Failure::Eof),
                Some(b']') => return Err(syntax("trailing comma", src.peek_pos(0))),
                Some(_) => {}
            }
        }
        first = false;
        element(src, cap, to)?;
    }
}

fn syntax(code: &str, at: Pos) -> Failure {
    Failure::Syntax(format!("{code} at line {} column {}", at.line, at.column))
}

fn io_failure(e: io::Error) -> Failure {
    Failure::Io(e.to_string())
}

/// Skips whitespace (JSON's four bytes); the next byte, not consumed, or `None` at
/// the end of the input.
fn next_token(src: &mut Source) -> Result<Option<u8>, Failure> {
    loop {
        let data = src.data();
        match data
            .iter()
            .position(|b| !matches!(b, b' ' | b'\n' | b'\t' | b'\r'))
        {
            Some(k) => {
                src.consume(k);
                return Ok(Some(src.data()[0]));
            }
            None => {
                src.consume(data.len());
                if !src.fill().map_err(io_failure)? {
                    return Ok(None);
                }
            }
        }
    }
}

/// One element, starting at the first byte of `src.data()`.
fn element(src: &mut Source, cap: usize, to: &mut dyn Entries) -> Result<(), Failure> {
    let at = src.pos();
    if !matches!(src.data()[0], b'{' | b'[' | b'"') {
        return scalar(src, cap, at, to);
    }
    if let Some(len) = to.entry_at_start(src.data(), cap) {
        src.consume(len);
        return Ok(());
    }
    let mut scan = Scan::default();
    let mut from = 0;
    loop {
        match scan.run(src.data(), from) {
            Step::Done(len) if len <= cap => return whole(src, len, at, to),
            Step::Done(len) => {
                check(&src.data()[..len], at)?;
                to.oversize(cap);
                src.consume(len);
                return Ok(());
            }
            Step::More(n) if n > cap => {
                // serde_json would have stopped at a syntax error within the cap.
                check(src.data(), at)?;
                to.oversize(cap);
                src.consume(n);
                return skip(src, scan);
            }
            Step::More(n) => {
                from = n;
                if !src.fill().map_err(io_failure)? {
                    // The input ends inside the element: broken there, or truncated.
                    check(src.data(), at)?;
                    return Err(Failure::Eof);
                }
            }
        }
    }
}

/// A whole element of `len` bytes: parsed, or the reason it is not an entry.
fn whole(src: &mut Source, len: usize, at: Pos, to: &mut dyn Entries) -> Result<(), Failure> {
    let bytes = &src.data()[..len];
    let bad = match std::str::from_utf8(bytes) {
        Ok(text) => to.entry(text).err().map(Ok),
        Err(e) => Some(Err(e)),
    };
    if let Some(bad) = bad {
        // The old reader checked the syntax of an entry first, then its UTF-8, then
        // its fields: the same order gives the same verdict.
        check(src.data(), at)?;
        match bad {
            Ok(e) => to.bad(e),
            Err(e) => return Err(invalid_utf8(&src.data()[..len], e, at)),
        }
    }
    src.consume(len);
    Ok(())
}

/// A syntax error serde_json finds in `bytes`, which start at `at` in the document;
/// running out of bytes is not one (they may be the start of an element). Read with
/// serde_json's `io::Read` path, as the whole document used to be: its slice path
/// places some errors a byte earlier. Only entries that fail to parse come here.
fn check(bytes: &[u8], at: Pos) -> Result<(), Failure> {
    let mut de = serde_json::Deserializer::from_reader(bytes);
    match IgnoredAny::deserialize(&mut de) {
        Err(e) if !e.is_eof() => Err(from_slice_error(&e, at)),
        _ => Ok(()),
    }
}

/// A serde_json error on a slice that starts at `at`, placed in the document.
fn from_slice_error(e: &serde_json::Error, at: Pos) -> Failure {
    if e.is_eof() {
        return Failure::Eof;
    }
    let (line, column) = if e.line() == 1 {
        (at.line, at.column + e.column())
    } else {
        (at.line + e.line() - 1, e.column())
    };
    Failure::Syntax(crate::text::describe_json_error_at(e, line, column))
}

/// serde_json's error for an entry that is JSON but not UTF-8, placed as its raw-value
/// reader placed it.
fn invalid_utf8(bytes: &[u8], e: std::str::Utf8Error, at: Pos) -> Failure {
    let prefix = &bytes[..(e.valid_up_to() + 1).min(bytes.len())];
    let p = match memrchr(b'\n', prefix) {
        Some(last) => Pos {
            line: at.line + memchr_iter(b'\n', &prefix[..last]).count() + 1,
            column: prefix.len() - last - 1,
        },
        None => Pos {
            line: at.line,
            column: at.column + prefix.len(),
        },
    };
    syntax("invalid unicode code point", p)
}

/// Bytes a number or `true`/`false`/`null` may be made of, and some more: the
/// first byte outside them ends what serde_json would read as one.
fn scalar_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

/// An element that is not an object, a list or a string (never an entry): serde_json
/// reads it, or says what is wrong, once the byte after it is in the buffer.
fn scalar(src: &mut Source, cap: usize, at: Pos, to: &mut dyn Entries) -> Result<(), Failure> {
    loop {
        let data = src.data();
        if data.iter().any(|b| !scalar_byte(*b)) {
            break;
        }
        if data.len() > cap {
            to.oversize(cap);
            loop {
                let data = src.data();
                match data.iter().position(|b| !scalar_byte(*b)) {
                    Some(k) => {
                        src.consume(k);
                        return Ok(());
                    }
                    None => {
                        src.consume(data.len());
                        if !src.fill().map_err(io_failure)? {
                            return Err(Failure::Eof);
                        }
                    }
                }
            }
        }
        if !src.fill().map_err(io_failure)? {
            break;
        }
    }
    let mut de = serde_json::Deserializer::from_reader(src.data());
    let raw = match <Box<RawValue>>::deserialize(&mut de) {
        Ok(raw) => raw,
        Err(e) => return Err(from_slice_error(&e, at)),
    };
    if let Err(e) = to.entry(raw.get()) {
        to.bad(e);
    }
    src.consume(raw.get().len());
    Ok(())
}

/// Skips the rest of an element too large to hold, by scanning.
fn skip(src: &mut Source, mut scan: Scan) -> Result<(), Failure> {
    loop {
        if !src.fill().map_err(io_failure)? {
            return Err(Failure::Eof);
        }
        match scan.run(src.data(), 0) {
            Step::Done(n) => {
                src.consume(n);
                return Ok(());
            }
            Step::More(n) => src.consume(n),
        }
    }
}

/// Where a JSON object, list or string ends, found without parsing it.
#[derive(Default, Debug)]
struct Scan {
    depth: usize,
    in_str: bool,
    /// The last byte seen was the backslash of an escape.
    escaped: bool,
}

enum Step {
    /// The value is the first this many bytes.
    Done(usize),
    /// All bytes were scanned (this many); the value goes on.
    More(usize),
}

impl Scan {
    /// Scans `bytes` from `from`: bytes before it were scanned by earlier calls, and
    /// the value starts at `bytes[0]` with `{`, `[` or `"`.
    fn run(&mut self, bytes: &[u8], mut i: usize) -> Step {
        while i < bytes.len() {
            if self.in_str {
                if self.escaped {
                    self.escaped = false;
                    i += 1;
                    continue;
                }
                // Most of a HAR is string bodies: jump to the next quote or backslash.
                let Some(k) = memchr2(b'"', b'\\', &bytes[i..]) else {
                    return Step::More(bytes.len());
                };
                i += k;
                if bytes[i] == b'"' {
                    self.in_str = false;
                    if self.depth == 0 {
                        return Step::Done(i + 1);
                    }
                } else {
                    self.escaped = true;
                }
            } else {
                match bytes[i] {
                    b'"' => self.in_str = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            return Step::Done(i + 1);
                        }
                    }
                    _ => {}
                }
            }
            i += 1;
        }
        Step::More(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Limits;
    use crate::ingest::Collect;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// A reader that hands out its bytes in reads of the given sizes, in turn.
    struct Short {
        data: Vec<u8>,
        at: usize,
        sizes: Vec<usize>,
        turn: usize,
    }

    impl Read for Short {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let size = self.sizes[self.turn % self.sizes.len()].max(1);
            self.turn += 1;
            let n = size.min(out.len()).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    /// Keeps the entries' texts.
    #[derive(Default)]
    struct Texts {
        texts: Vec<String>,
        oversize: usize,
    }

    impl Entries for Texts {
        fn entry(&mut self, text: &str) -> Result<(), serde_json::Error> {
            // Parsed, so that a broken element meets the checks a HAR entry meets.
            serde_json::from_str::<Value>(text)?;
            self.texts.push(text.to_owned());
            Ok(())
        }
        fn bad(&mut self, _: serde_json::Error) {}
        fn oversize(&mut self, _: usize) {
            self.oversize += 1;
        }
    }

    /// A tiny deterministic generator for the writer's choices.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn ws(&mut self) -> &'static str {
            ["", "", " ", "\n", "\t", "\r\n  ", "   \n\n"][(self.next() % 7) as usize]
        }
    }

    /// `v` as JSON with random whitespace between tokens and, at random, every
    /// non-ASCII character as a `\u` escape (surrogate pairs above the BMP).
    fn write(v: &Value, rng: &mut Rng, out: &mut String) {
        out.push_str(rng.ws());
        match v {
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(rng.ws());
                        out.push(',');
                    }
                    write(item, rng, out);
                }
                out.push_str(rng.ws());
                out.push(']');
            }
            Value::Object(map) => {
                out.push('{');
                for (i, (k, item)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(rng.ws());
                    string(k, rng, out);
                    out.push_str(rng.ws());
                    out.push(':');
                    write(item, rng, out);
                    out.push_str(rng.ws());
                }
                out.push('}');
            }
            Value::String(s) => string(s, rng, out),
            other => out.push_str(&other.to_string()),
        }
        out.push_str(rng.ws());
    }

    fn string(s: &str, rng: &mut Rng, out: &mut String) {
        let quoted = serde_json::to_string(s).unwrap();
        if rng.next() % 2 == 0 {
            out.push_str(&quoted);
            return;
        }
        for c in quoted.chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::string::string_regex("([a-z\"\\\\/{}\\[\\],: \n\u{1}é€😀]|\\\\u){0,12}").unwrap()
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1e6f64..1e6).prop_map(|n| json!(n)),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::vec((text(), inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Splits a JSON list (its `[` consumed first) as the HAR reader does.
    fn split(doc: &[u8], sizes: Vec<usize>, cap: usize) -> (Result<(), Failure>, Texts) {
        let mut reader = Short {
            data: doc.to_vec(),
            at: 0,
            sizes,
            turn: 0,
        };
        let mut src = Source::new(&mut reader);
        let mut texts = Texts::default();
        let first = next_token(&mut src);
        assert_eq!(first, Ok(Some(b'[')));
        src.consume(1);
        let outcome = read_entries(&mut src, cap, &mut texts);
        if outcome.is_ok() {
            assert_eq!(src.data().first(), Some(&b']'), "stops at the `]`");
        }
        (outcome, texts)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// The scanner finds the elements serde_json finds, whatever the whitespace,
        /// escapes and read sizes.
        #[test]
        fn finds_the_elements_serde_json_finds(
            items in proptest::collection::vec(value(), 0..8),
            seed in 1u64..,
            sizes in proptest::collection::vec(1usize..64, 1..6),
        ) {
            let mut rng = Rng(seed);
            let mut doc = String::new();
            write(&Value::Array(items.clone()), &mut rng, &mut doc);
            let (outcome, texts) = split(doc.as_bytes(), sizes, usize::MAX);
            prop_assert_eq!(outcome, Ok(()));
            let got: Vec<Value> = texts.texts.iter().map(|t| serde_json::from_str(t).unwrap()).collect();
            let want: Vec<Value> = serde_json::from_str(&doc).unwrap();
            prop_assert_eq!(got, want);
        }

        /// Whatever the bytes, the reader ends without a panic.
        #[test]
        fn arbitrary_bytes_do_not_panic(
            tail in proptest::collection::vec(any::<u8>(), 0..200),
            sizes in proptest::collection::vec(1usize..16, 1..4),
            cap in 1usize..64,
        ) {
            for head in [&b""[..], b"{\"log\":{\"entries\":[", b"{\"log\":{\"entries\":[{\"a\":\""] {
                let mut doc = head.to_vec();
                doc.extend_from_slice(&tail);
                let reader = Short { data: doc, at: 0, sizes: sizes.clone(), turn: 0 };
                let mut sink = Collect::default();
                let limits = Limits { max_record_bytes: cap, ..Limits::default() };
                let _ = crate::ingest::har::read(reader, &limits, &mut sink);
            }
        }
    }

    #[test]
    fn every_cut_between_two_reads_gives_the_same_elements() {
        let doc = br#"[ {"a":"x\"y\\","b":[1,{"c":"]}"}]} ,"\u00e9\\\"",
            {"d" : "\ud83d\ude00"}, [[]], 12, true ]"#;
        let want: Vec<Value> = serde_json::from_slice(doc).unwrap();
        for cut in 1..doc.len() {
            // The first read stops at `cut`; the rest comes whole.
            let (outcome, texts) = split(doc, vec![cut, usize::MAX], usize::MAX);
            assert_eq!(outcome, Ok(()), "cut at {cut}");
            let got: Vec<Value> = texts
                .texts
                .iter()
                .map(|t| serde_json::from_str(t).unwrap())
                .collect();
            assert_eq!(got, want, "cut at {cut}");
        }
    }

    #[test]
    fn an_element_over_the_cap_is_skipped_and_the_next_read() {
        let big = format!(r#"{{"x":"{}","y":["]"]}}"#, "\\\"".repeat(3000));
        let doc = format!(r#"[{{"a":1}}, {big}, {{"b":2}}]"#);
        let (outcome, texts) = split(doc.as_bytes(), vec![100], 1000);
        assert_eq!(outcome, Ok(()));
        assert_eq!(texts.texts, [r#"{"a":1}"#, r#"{"b":2}"#]);
        assert_eq!(texts.oversize, 1);
    }

    #[test]
    fn broken_lists_are_named_as_serde_json_names_them() {
        let cases: [(&[u8], Failure); 5] = [
            (
                b"[{}\n  x",
                Failure::Syntax("expected `,` or `]` at line 2 column 3".into()),
            ),
            (
                b"[{},\n]",
                Failure::Syntax("trailing comma at line 2 column 1".into()),
            ),
            (
                b"[{}, {\"a\" 1}]",
                Failure::Syntax("expected `:` at line 1 column 11".into()),
            ),
            (b"[{}, {\"a\":", Failure::Eof),
            (
                b"[{}, {\"a\":\"\xff\"}]",
                Failure::Syntax("invalid unicode code point at line 1 column 12".into()),
            ),
        ];
        for (doc, want) in cases {
            let (outcome, _) = split(doc, vec![3], usize::MAX);
            assert_eq!(outcome, Err(want), "{}", String::from_utf8_lossy(doc));
        }
    }
}
