//! A validating JSON scanner, shared by every stage that reads JSON text it does not
//! need as a tree: the message scanner of `jsonrpc` and the JSONL record reader of
//! `ingest`. It finds where values start and end, checking the text against the JSON
//! grammar as it goes. Written here, not taken from a crate, for speed: most bytes of
//! MCP traffic sit in strings (tool output, schemas, bodies logged as strings), whose
//! ends and escapes `text::json_special` finds a word at a time, while serde_json
//! walks them a byte or a call per escape.
//!
//! It accepts no more than serde_json does (strings are checked for control characters
//! and escapes; lone surrogates are refused where a string is decoded, and passed
//! where it is skipped, as serde_json does), and may accept less: a caller leaves what
//! it turns down (an escaped key, trailing text, any error) to serde_json, which
//! decides and words the error. `value` does not limit nesting; `value_within` does.

use memchr::memchr2;
use std::borrow::Cow;
use std::ops::Range;

/// A value's raw JSON text, a slice of text already checked (a member of a decoded
/// message, of a JSONL line): taken as it is, not parsed again as a serde_json
/// `RawValue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawText<'a>(pub(crate) &'a str);

impl<'a> RawText<'a> {
    pub fn get(self) -> &'a str {
        self.0
    }
}

impl<'de> serde::Deserialize<'de> for RawText<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawText<'de>, D::Error> {
        <&'de serde_json::value::RawValue>::deserialize(d).map(|r| RawText(r.get()))
    }
}

/// How a member's value is passed over: `value` checks it against the grammar,
/// `skip` trusts text already checked (a member of a message read before).
pub(crate) type Over = fn(&[u8], usize) -> Option<usize>;

/// Each named member's span (the last one of a name given twice) and how many times
/// the name came.
pub(crate) type Found<const N: usize> = ([Option<Range<usize>>; N], [u8; N]);

/// Where the members of the JSON object `text` that `slot` numbers have their values
/// (the last one of a key given twice), and how many times each came (up to 255),
/// when `text` is one object whose keys carry no escapes; `None` for anything else.
pub(crate) fn members<const N: usize>(
    text: &str,
    slot: impl Fn(&[u8]) -> Option<usize>,
    over: Over,
) -> Option<Found<N>> {
    let b = text.as_bytes();
    let mut spans: [Option<Range<usize>>; N] = std::array::from_fn(|_| None);
    let mut counts = [0u8; N];
    let end = object(b, ws(b, 0), |key, start| {
        let end = over(b, start)?;
        if let Some(n) = slot(key).filter(|&n| n < N) {
            spans[n] = Some(start..end);
            counts[n] = counts[n].saturating_add(1);
        }
        Some(end)
    })?;
    (ws(b, end) == b.len()).then_some((spans, counts))
}

/// Walks the object at `i` (no whitespace before it) whose keys carry no escapes:
/// `each` gets a key's text and where its value starts, reads the value and answers
/// where it ends. The object's end, or `None` when it is no such object or `each`
/// turns a member down.
pub(crate) fn object(
    b: &[u8],
    i: usize,
    mut each: impl FnMut(&[u8], usize) -> Option<usize>,
) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        let key_end = plain_string(b, i)?;
        let key = &b[i + 1..key_end - 1];
        i = ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let end = each(key, ws(b, i + 1))?;
        i = ws(b, end);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Walks the array at `i` (no whitespace before it): `each` gets where an element
/// starts, reads it and answers where it ends. The array's end, or `None`.
pub(crate) fn array(
    b: &[u8],
    i: usize,
    mut each: impl FnMut(usize) -> Option<usize>,
) -> Option<usize> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut i = ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return Some(i + 1);
    }
    loop {
        i = ws(b, each(i)?);
        match b.get(i) {
            Some(b',') => i = ws(b, i + 1),
            Some(b']') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The end of the value at `i` in text already checked against the grammar: a
/// string's end is found with memchr, other bytes are counted for nesting only.
pub(crate) fn skip(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match *b.get(i)? {
            b'"' => i = string_end(b, i + 1)?,
            b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            _ if depth > 0 => {
                i += 1;
                continue;
            }
            // A number or a literal.
            _ => {
                while b
                    .get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'+'))
                {
                    i += 1;
                }
                return Some(i);
            }
        }
        if depth == 0 {
            return Some(i);
        }
    }
}

/// Past the closing quote of a checked string whose text starts at `from`. In tool
/// output an escape comes every few bytes (`\n`, `\"`): a search call per escape
/// cost more than the bytes, so the next quote or backslash is looked for a word at
/// a time, each backslash passed over with the byte it escapes; after 32 bytes of
/// neither, memchr takes over until the next one (a long plain run, base64 data).
fn string_end(b: &[u8], from: usize) -> Option<usize> {
    use crate::text::bytes_equal;
    let mut i = from;
    loop {
        let mut words = 0;
        let hit = loop {
            let Some(w) = b.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) else {
                break i + memchr2(b'"', b'\\', b.get(i..)?)?;
            };
            let w = u64::from_le_bytes(w);
            let hits = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
            if hits != 0 {
                break i + (hits.trailing_zeros() / 8) as usize;
            }
            i += 8;
            words += 1;
            if words == 4 {
                break i + memchr2(b'"', b'\\', b.get(i..)?)?;
            }
        };
        if b[hit] == b'"' {
            return Some(hit + 1);
        }
        i = hit + 2;
    }
}

pub(crate) fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(i) {
        i += 1;
    }
    i
}

/// The end of a string starting at `i` that has no escape (a key with one is left
/// to serde_json, which compares it decoded; so is a canonical text with one).
pub(crate) fn plain_string(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let j = special(b, i + 1)?;
    (b[j] == b'"').then_some(j + 1)
}

/// The end of the string whose opening quote is at `i`. A word at a time, every
/// quote, backslash and control character of a word found at once (exactly, so all
/// of them can be used): tool output has an escape every few bytes, and looking
/// for the next one afresh after each cost more than the bytes.
pub(crate) fn string(b: &[u8], i: usize) -> Option<usize> {
    let mut at = i + 1;
    loop {
        let word = b.get(at..at + 8).and_then(|w| <[u8; 8]>::try_from(w).ok());
        let hits = word.map_or(0, |w| {
            crate::text::special_bytes_exact(u64::from_le_bytes(w))
        });
        if hits == 0 {
            // A clean word, or fewer than 8 bytes left: the next special byte is
            // searched for from past the word (or from here).
            let j = special(b, if word.is_some() { at + 8 } else { at })?;
            if b[j] == b'"' {
                return Some(j + 1);
            }
            at = j + escape_len(b, j)?;
            continue;
        }
        let mut hits = hits;
        loop {
            let j = at + (hits.trailing_zeros() / 8) as usize;
            if b[j] == b'"' {
                return Some(j + 1);
            }
            let next = j + escape_len(b, j)?;
            let done = next - at;
            if done >= 8 {
                at = next;
                break;
            }
            hits &= u64::MAX << (done * 8);
            if hits == 0 {
                at += 8;
                break;
            }
        }
    }
}

/// The length of the escape at `j`, a backslash or a control character inside a
/// string; `None` when it is no valid escape (a control character is none).
#[inline(always)]
fn escape_len(b: &[u8], j: usize) -> Option<usize> {
    match b[j] {
        b'\\' => match b.get(j + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(2),
            b'u' if b.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) => Some(6),
            _ => None,
        },
        _ => None,
    }
}

/// The first quote, backslash or control character at or after `at`; `None` when a
/// control character comes first (never valid in a string) or nothing does.
#[inline]
fn special(b: &[u8], at: usize) -> Option<usize> {
    // Most strings (keys, names, types) end within 8 bytes: that word is looked at
    // here, before a call.
    let j = match crate::text::special_in_word(b, at) {
        Some(Some(j)) => j,
        _ => crate::text::json_special(b, at),
    };
    b.get(j).filter(|&&c| c >= 0x20).map(|_| j)
}

/// The end of the number starting at `i`.
pub(crate) fn number(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], mut i: usize| {
        let from = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i > from).then_some(i)
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(b, i)?,
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        i = digits(b, i + 1)?;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        i = digits(b, i)?;
    }
    // A digit straight after a leading zero ("01") is no number.
    match b.get(i) {
        Some(c) if c.is_ascii_digit() => None,
        _ => Some(i),
    }
}

/// The end of the value starting at `i` (no whitespace before it), nested values
/// included; iterative, so deep nesting costs a byte of stack each, on the heap.
pub(crate) fn value(b: &[u8], i: usize) -> Option<usize> {
    value_within(b, i, usize::MAX)
}

/// `value`, turning down a value nested more than `depth` containers deep, for a
/// caller that leaves deep nesting to serde_json (which reads some of it only 128
/// deep).
pub(crate) fn value_within(b: &[u8], mut i: usize, depth: usize) -> Option<usize> {
    let mut open: Vec<u8> = Vec::new();
    loop {
        // One value at `i`, then what closes or continues the containers around it.
        i = match b.get(i)? {
            b'"' => string(b, i)?,
            b'-' | b'0'..=b'9' => number(b, i)?,
            b't' => literal(b, i, b"true")?,
            b'f' => literal(b, i, b"false")?,
            b'n' => literal(b, i, b"null")?,
            &c @ (b'[' | b'{') => {
                let j = ws(b, i + 1);
                let close = if c == b'[' { b']' } else { b'}' };
                if b.get(j) == Some(&close) {
                    j + 1
                } else {
                    if open.len() >= depth {
                        return None;
                    }
                    open.push(c);
                    i = if c == b'{' { member_value(b, j)? } else { j };
                    continue;
                }
            }
            _ => return None,
        };
        loop {
            let Some(&c) = open.last() else {
                return Some(i);
            };
            let j = ws(b, i);
            match (b.get(j)?, c) {
                (b',', b'[') => {
                    i = ws(b, j + 1);
                    break;
                }
                (b',', _) => {
                    i = member_value(b, ws(b, j + 1))?;
                    break;
                }
                (b']', b'[') | (b'}', b'{') => {
                    open.pop();
                    i = j + 1;
                }
                _ => return None,
            }
        }
    }
}

/// From a key at `i`: past the key and its colon, to where the member's value starts.
pub(crate) fn member_value(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let j = ws(b, string(b, i)?);
    (b.get(j) == Some(&b':')).then(|| ws(b, j + 1))
}

/// The end of the integer at `i` when serde_json prints its value as written: up to
/// 18 digits, no leading zero, a minus only before a non-zero one, and no fraction
/// or exponent after it. `None` for any other number (or no number).
pub(crate) fn plain_integer(b: &[u8], i: usize) -> Option<usize> {
    let start = i + usize::from(b.get(i) == Some(&b'-'));
    let digits = b
        .get(start..)?
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let end = start + digits;
    let plain = (1..=18).contains(&digits)
        && !matches!(b.get(end), Some(b'.' | b'e' | b'E'))
        && (b[start] != b'0' || (digits == 1 && start == i));
    plain.then_some(end)
}

pub(crate) fn literal(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

/// The JSON string value `raw` decoded, borrowed when it has no escape; `None`
/// when `raw` is no string or does not decode. What the scanner turns down
/// (space around it, a lone surrogate, …) is left to serde_json, so the answer is
/// serde_json's; anything that does not start with a quote is no string for either.
/// For names, methods and a log's fields, where serde_json's dispatch and a new
/// `String` cost more than the text.
pub(crate) fn string_value(raw: &str) -> Option<Cow<'_, str>> {
    match unescaped(raw, 0) {
        Some((end, s)) if end == raw.len() => Some(s),
        _ if raw.trim_start().starts_with('"') => {
            serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
        }
        _ => None,
    }
}

/// The string whose opening quote is at `i`, checked and decoded in one pass: its end
/// and its text, borrowed when it has no escape. `None` for anything serde_json would
/// not decode either: a control character, a bad escape, a lone surrogate.
pub(crate) fn unescaped(text: &str, i: usize) -> Option<(usize, Cow<'_, str>)> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = special(b, i + 1)?;
    if b[j] == b'"' {
        return Some((j + 1, Cow::Borrowed(text.get(i + 1..j)?)));
    }
    // Room for the rest of the text: a body logged as a string is most of its line,
    // and growing it step by step cost a copy per doubling. What is left over is
    // given back when it is most of the room. Bytes, not a `String`: the cuts fall
    // next to ASCII escapes and quotes, so the text stays UTF-8.
    let mut out: Vec<u8> = Vec::with_capacity(b.len() - i);
    out.extend_from_slice(b.get(i + 1..j)?);
    loop {
        // `j` is at a quote or a backslash (`special` refused control characters).
        if b[j] == b'"' {
            break;
        }
        let (c, len) = escape(b, j)?;
        match u8::try_from(c) {
            Ok(ascii) if ascii.is_ascii() => out.push(ascii),
            _ => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
        j += len;
        // A body logged as a string has an escape every few bytes: the next one is
        // looked for a word at a time, each word copied whole and the bytes from the
        // escape on taken back, and a longer run is left to `special` and one copy.
        let mut words = 0;
        while let Some(word) = b.get(j..j + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
            out.extend_from_slice(&word);
            let hits = crate::text::special_bytes(u64::from_le_bytes(word));
            if hits != 0 {
                let k = (hits.trailing_zeros() / 8) as usize;
                out.truncate(out.len() - (8 - k));
                j += k;
                break;
            }
            j += 8;
            words += 1;
            if words == 4 {
                break;
            }
        }
        if !matches!(b.get(j), Some(b'"' | b'\\')) {
            let to = special(b, j)?;
            out.extend_from_slice(&b[j..to]);
            j = to;
        }
    }
    if out.capacity() > 2 * out.len() + 64 {
        out.shrink_to_fit();
    }
    Some((j + 1, Cow::Owned(String::from_utf8(out).ok()?)))
}

/// At most the first `max` bytes (cut on a character boundary) of the string token
/// `t` (quotes included) from text already checked against the grammar, decoded;
/// `None` when serde_json would not decode the whole string (a lone surrogate, the
/// one thing the grammar check lets by). For a caller that quotes the start of a
/// text that may be megabytes of escaped tool output: the rest is checked, not
/// copied.
pub(crate) fn checked_string_head(t: &str, max: usize) -> Option<Cow<'_, str>> {
    let b = t.as_bytes();
    let end = b.len().checked_sub(1).filter(|&e| e > 0)?;
    let inner = t.get(1..end)?;
    let Some(first) = memchr::memchr(b'\\', inner.as_bytes()) else {
        return Some(Cow::Borrowed(
            inner.get(..crate::text::floor_boundary(inner, max))?,
        ));
    };
    // Decoded as bytes a word at a time: tool output has an escape every few bytes,
    // and a search call and a copy call per run between them cost more than the
    // text. Words are copied whole and cut back at a backslash; the head may run
    // past `max` (and end inside a character) before it is cut on a boundary.
    let mut out: Vec<u8> = Vec::with_capacity(max.min(inner.len()) + 8);
    let mut j = 1;
    if first > 0 {
        let to = (1 + first).min(1 + max);
        out.extend_from_slice(b.get(1..to)?);
        j = to;
    }
    while out.len() < max && j < end {
        if b[j] == b'\\' {
            let (c, len) = escape(b, j)?;
            match u8::try_from(c) {
                Ok(ascii) if ascii.is_ascii() => out.push(ascii),
                _ => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
            }
            j += len;
        } else if let Some(word) = b.get(j..end).and_then(|r| r.first_chunk::<8>()) {
            out.extend_from_slice(word);
            let hits = crate::text::bytes_equal(u64::from_le_bytes(*word), b'\\');
            let k = if hits == 0 {
                8
            } else {
                (hits.trailing_zeros() / 8) as usize
            };
            out.truncate(out.len() - (8 - k));
            j += k;
        } else {
            // Fewer than eight bytes before the closing quote.
            let k = memchr::memchr(b'\\', &b[j..end]).unwrap_or(end - j);
            out.extend_from_slice(&b[j..j + k]);
            j += k;
        }
    }
    if !surrogates_pair(b.get(j..end)?) {
        return None;
    }
    // Cut at `max`, back to the start of a character cut there: the text was UTF-8,
    // so the one error can be a character cut short at the end.
    out.truncate(max);
    let text = match String::from_utf8(out) {
        Ok(text) => text,
        Err(e) => {
            let whole = e.utf8_error().valid_up_to();
            let mut out = e.into_bytes();
            out.truncate(whole);
            String::from_utf8(out).ok()?
        }
    };
    Some(Cow::Owned(text))
}

/// Whether every `\u` escape of `s` (the rest of a checked string, from an escape's
/// start or a character's) that is a surrogate is half of a pair. A `\u` found by
/// the search is an escape only after an odd run of backslashes (`\\u` is an
/// escaped backslash and a `u`).
fn surrogates_pair(s: &[u8]) -> bool {
    let mut past = 0;
    for k in memchr::memmem::find_iter(s, b"\\u") {
        if k < past || s[..=k].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 0 {
            continue;
        }
        let Some(high) = hex4(s, k + 2) else {
            return false;
        };
        past = k + 6;
        if (0xDC00..0xE000).contains(&high) {
            return false;
        }
        if (0xD800..0xDC00).contains(&high) {
            let low = (s.get(k + 6..k + 8) == Some(b"\\u")).then(|| hex4(s, k + 8));
            if !matches!(low, Some(Some(0xDC00..=0xDFFF))) {
                return false;
            }
            past = k + 12;
        }
    }
    true
}

/// The character of the escape at `j` (a backslash) and the escape's length; a
/// surrogate pair is one escape of twelve bytes. Inlined: it is the inner step of
/// `unescaped`, where a call per escape cost more than the escape.
#[inline(always)]
fn escape(b: &[u8], j: usize) -> Option<(char, usize)> {
    let c = match *b.get(j + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let high = hex4(b, j + 2)?;
            if !(0xD800..0xDC00).contains(&high) {
                return Some((char::from_u32(high)?, 6));
            }
            if b.get(j + 6..j + 8)? != b"\\u" {
                return None;
            }
            let low = hex4(b, j + 8)?;
            if !(0xDC00..0xE000).contains(&low) {
                return None;
            }
            let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            return Some((char::from_u32(c)?, 12));
        }
        _ => return None,
    };
    Some((c, 2))
}

/// The four hex digits at `at`.
fn hex4(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)?
        .iter()
        .try_fold(0u32, |n, &c| Some(n * 16 + char::from(c).to_digit(16)?))
}

/// `text` one byte off, for tests that hold a reader to serde_json on broken text:
/// `byte` put in at `at` (`op` 0), the byte there taken out (1) or changed (2);
/// `None` when that leaves no UTF-8.
#[cfg(test)]
pub(crate) fn one_byte_off(
    text: String,
    at: proptest::sample::Index,
    op: u8,
    byte: u8,
) -> Option<String> {
    let mut b = text.into_bytes();
    let i = at.index(b.len() + 1);
    match op {
        0 => b.insert(i, byte),
        1 if i < b.len() => {
            b.remove(i);
        }
        _ if i < b.len() => b[i] = byte,
        _ => b.push(byte),
    }
    String::from_utf8(b).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A string decodes as serde_json decodes it, and ends where serde_json's
        /// reading of it ends, whatever follows it; escapes on both sides of the
        /// 32 bytes read a word at a time.
        #[test]
        fn strings_decode_and_end_as_serde_json_reads_them(
            s in "(\\PC|\"|\\\\|[\\x00-\\x1f]|[a-z ]{1,40}){0,30}",
            tail in prop::sample::select(vec!["", ",\"x\"", "]", "\"\\\\"]),
        ) {
            let quoted = serde_json::to_string(&s).unwrap();
            let text = format!("{quoted}{tail}");
            let (end, got) = unescaped(&text, 0).expect("a string");
            prop_assert_eq!(end, quoted.len());
            prop_assert_eq!(got.as_ref(), s.as_str());
            prop_assert_eq!(matches!(got, Cow::Borrowed(_)), !quoted[1..quoted.len() - 1].contains('\\'));
            prop_assert_eq!(string(text.as_bytes(), 0), Some(end));
            prop_assert_eq!(skip(text.as_bytes(), 0), Some(end));
        }

        /// Escapes as written by anyone (`\u` of every kind, surrogates alone and in
        /// pairs, bad escapes, raw control characters): decoded exactly when
        /// serde_json decodes them, to the same text.
        #[test]
        fn escapes_decode_only_as_serde_json_decodes_them(
            parts in prop::collection::vec(prop::sample::select(vec![
                "a", "é", "\\n", "\\\"", "\\/", "\\u0041", "\\u00e9", "\\ud83d", "\\ude00",
                "\\ud83d\\ude00", "\\uDBFF\\uDFFF", "\\ud800\\u0041", "\\x", "\\u12", "\t", "\\",
            ]), 0..12),
        ) {
            let text = format!("\"{}\"", parts.concat());
            let ours = unescaped(&text, 0).filter(|(end, _)| *end == text.len());
            let theirs = serde_json::from_str::<String>(&text).ok();
            prop_assert_eq!(ours.map(|(_, s)| s.into_owned()), theirs.clone(), "{}", text);
            // `string_value` answers as serde_json, with space around the string,
            // or anything else after it, too.
            for raw in [text.clone(), format!(" {text}\n"), format!("{text}x"), text.replace('"', "")] {
                prop_assert_eq!(
                    string_value(&raw).map(Cow::into_owned),
                    serde_json::from_str::<String>(&raw).ok(),
                    "{}", raw
                );
            }
        }

        /// The head of a checked string is serde_json's decoding cut to `max` bytes
        /// on a character boundary, and there is none exactly when serde_json
        /// refuses the string (a lone surrogate anywhere, past the head too).
        #[test]
        fn a_string_head_is_serde_json_s_text_cut(
            parts in prop::collection::vec(prop::sample::select(vec![
                "a", "é", "😀", "abcdefghij", "\\n", "\\\"", "\\\\", "\\\\u0041", "\\u00e9",
                "\\ud83d", "\\ude00", "\\ud83d\\ude00", "\\uDBFF\\uDFFF", "\\ud800\\u0041",
                "\\\\\\ud800", "\\u005C", "u",
            ]), 0..24),
            max in 0usize..40,
        ) {
            let text = format!("\"{}\"", parts.concat());
            let theirs = serde_json::from_str::<String>(&text).ok();
            let ours = checked_string_head(&text, max);
            prop_assert_eq!(
                ours.map(Cow::into_owned),
                theirs.map(|t| t[..crate::text::floor_boundary(&t, max)].to_owned()),
                "{} {}", text, max
            );
            prop_assert_eq!(skip(text.as_bytes(), 0), Some(text.len()));
        }
    }

    /// Every special byte of a word is used, so each must be marked exactly: a
    /// byte right after a quote or a backslash (`#` is `"` + 1, `]` is `\` + 1) is
    /// no special byte, though a borrow in a first-byte-only mask would mark it.
    #[test]
    fn bytes_next_to_escapes_are_plain_text() {
        for text in [
            r##""a\"#b""##,
            r##""\\]\\]\"#\"#x""##,
            r##""12345\"#\\]abcdefgh""##,
        ] {
            assert_eq!(string(text.as_bytes(), 0), Some(text.len()), "{text}");
            assert_eq!(skip(text.as_bytes(), 0), Some(text.len()), "{text}");
            let decoded = serde_json::from_str::<String>(text).unwrap();
            assert_eq!(
                unescaped(text, 0).map(|(_, s)| s.into_owned()),
                Some(decoded)
            );
        }
    }

    #[test]
    fn a_string_head_is_borrowed_when_the_string_has_no_escape() {
        let head = checked_string_head(r#""héllo""#, 2);
        assert!(matches!(head, Some(Cow::Borrowed("h"))));
        assert_eq!(checked_string_head(r#""""#, 8).as_deref(), Some(""));
        assert_eq!(checked_string_head("\"", 8), None);
        // Past the head: a pair is fine, a lone half is not.
        let long = format!(r#""{}\n{}""#, "x".repeat(50), r"\ud83d\ude00");
        assert_eq!(checked_string_head(&long, 4).as_deref(), Some("xxxx"));
        let lone = format!(r#""{}\n{}""#, "x".repeat(50), r"\ud83d!");
        assert_eq!(checked_string_head(&lone, 4), None);
        // A head that ends inside a character copied before the first escape, or
        // inside a word of plain text after one, is cut back to that character.
        assert_eq!(checked_string_head("\"😀\\n\"", 1).as_deref(), Some(""));
        assert_eq!(
            checked_string_head("\"\\nab😀cdefgh\"", 5).as_deref(),
            Some("\nab")
        );
        assert_eq!(
            checked_string_head("\"\\nab😀cdefgh\"", 7).as_deref(),
            Some("\nab😀")
        );
    }
}
