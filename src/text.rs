//! Text helpers every stage may use: excerpts of long text for reports, and plain
//! wording for JSON parse errors met on hostile input. A leaf: it uses no stage.

use std::borrow::Cow;

/// The bytes of text an excerpt keeps.
pub const EXCERPT: usize = 300;

/// The first quote, backslash or control character of `b` at or after `from` (the
/// bytes a JSON string ends at, escapes, or must not hold), or `b.len()`. Written here
/// for speed, shared by the message scanner, the JSONL reader and the record writer:
/// most strings (keys, names, types) end within a few bytes, so the first 32 are
/// looked at 8 at a time in a register; a longer one is searched with memchr and
/// checked for control characters in bulk.
pub fn json_special(b: &[u8], from: usize) -> usize {
    let is_special = |c: &u8| matches!(c, b'"' | b'\\' | 0..=0x1f);
    let mut j = from;
    while j < from.saturating_add(32) {
        match special_in_word(b, j) {
            Some(Some(at)) => return at,
            Some(None) => j += 8,
            None => {
                // Fewer than 8 bytes left: byte by byte.
                let rest = b.get(j..).unwrap_or(&[]);
                return j + rest.iter().position(is_special).unwrap_or(rest.len());
            }
        }
    }
    let rest = b.get(j..).unwrap_or(&[]);
    let run = &rest[..memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len())];
    // No early exit in the test, so that it is vectorised; the place only if needed.
    if run.iter().fold(false, |seen, &c| seen | (c < 0x20)) {
        return j + run.iter().position(is_special).unwrap_or(run.len());
    }
    j + run.len()
}

/// The first quote, backslash or control character among the 8 bytes at `j`:
/// `Some(None)` when none of them is one, `None` when fewer than 8 are left. The step
/// `json_special` takes, for a caller that looks a few bytes on before searching.
#[inline(always)]
pub fn special_in_word(b: &[u8], j: usize) -> Option<Option<usize>> {
    let word = b.get(j..j.checked_add(8)?)?;
    let hits = special_bytes(u64::from_le_bytes(<[u8; 8]>::try_from(word).ok()?));
    Some((hits != 0).then(|| j + (hits.trailing_zeros() / 8) as usize))
}

/// The high bit of each byte of `w` that may be a quote, a backslash or a control
/// character. Exact for the lowest such byte (little-endian: the first in the
/// text), which is all `json_special` reads: a borrow can only mark bytes after it.
pub fn special_bytes(w: u64) -> u64 {
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & (ONES << 7);
    below_space | bytes_equal(w, b'"') | bytes_equal(w, b'\\')
}

/// The high bit of each byte of `w` that is a quote, a backslash or a control
/// character: exact for every byte (no borrow crosses bytes), for a caller that
/// uses all of them, not only the first. Three operations more than
/// `special_bytes`, which the searches for a first byte keep (1.4% of a run of
/// small calls when they used this one).
pub fn special_bytes_exact(w: u64) -> u64 {
    const LOW: u64 = ONES * 0x7f;
    // A byte's high bit is set below iff the byte is not `c` (its low seven bits
    // plus 0x7f carry into bit 7 unless they are zero, or bit 7 was set already).
    let not_zero = |x: u64| ((x & LOW) + LOW) | x;
    let quote = not_zero(w ^ (ONES * u64::from(b'"')));
    let backslash = not_zero(w ^ (ONES * u64::from(b'\\')));
    // Bit 7 set iff the byte is 0x20 or more.
    let not_control = ((w & LOW) + ONES * 0x60) | w;
    !(quote & backslash & not_control) & (ONES << 7)
}

/// 0x0101…01.
const ONES: u64 = u64::MAX / 255;

/// The high bit of each byte of `w` that may equal `byte`; exact for the lowest
/// such byte (a borrow only marks bytes above it), which is what searches read.
pub fn bytes_equal(w: u64, byte: u8) -> u64 {
    let x = w ^ (ONES * u64::from(byte));
    x.wrapping_sub(ONES) & !x & (ONES << 7)
}

/// `url` cut at its first `://`, as `split_once("://")` cuts it, found with memchr:
/// every exchange's URL is cut so, and building a substring searcher each time cost
/// more than the search.
pub fn split_scheme(url: &str) -> Option<(&str, &str)> {
    let b = url.as_bytes();
    let mut from = 0;
    while let Some(k) = memchr::memchr(b':', b.get(from..)?) {
        let at = from + k;
        if b.get(at + 1..at + 3) == Some(b"//") {
            return Some((url.get(..at)?, url.get(at + 3..)?));
        }
        from = at + 1;
    }
    None
}

/// `bytes` as text, invalid sequences replaced. `String::from_utf8_lossy` walks
/// every byte through `Utf8Chunks`; `str::from_utf8` checks a word at a time, and
/// bodies are nearly always valid, so it goes first (a few % of a capture's time).
pub fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// The largest character boundary of `s` at or below `max` (`str::floor_char_boundary`
/// is newer than the Rust this crate supports).
pub fn floor_boundary(s: &str, max: usize) -> usize {
    let mut cut = max.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// The first `EXCERPT` bytes of `text`, cut on a character boundary.
pub fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT {
        return text.to_owned();
    }
    // Once per message: a concatenation, not `format!`'s machinery.
    [&text[..floor_boundary(text, EXCERPT)], "…"].concat()
}

/// Bytes of a name a held call keeps whole (a request id, a tool name): the MCP
/// specification (2025-11-25, Tools) asks tool names of at most 128 characters.
pub const KEPT_NAME: usize = 256;
/// Bytes of a text a held call keeps whole (an error's message and data, a
/// `requestState`).
pub const KEPT_TEXT: usize = 1024;

/// `s` as a held call keeps it: whole up to `max` bytes; past that its first bytes,
/// `…`, its length and a hash of the whole, so two kept texts are equal when the
/// texts are. Held calls are bounded in number; this bounds their bytes, whatever
/// a hostile input puts in an id or a name.
pub fn kept(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    // Room for the tail: `…` (3 bytes) and `[<up to 20 digits> bytes, #<16 hex>]`.
    let head = &s[..floor_boundary(s, max.saturating_sub(64))];
    Cow::Owned(format!(
        "{head}…[{} bytes, #{:016x}]",
        s.len(),
        stable_hash(s)
    ))
}

/// `kept` for a text owned already: returned as it is when short enough.
pub fn kept_owned(s: String, max: usize) -> String {
    match kept(&s, max) {
        Cow::Borrowed(_) => s,
        Cow::Owned(k) => k,
    }
}

/// FNV-1a over `text`, every bit then mixed into every other: stable across runs
/// and platforms, unlike std's SipHash with random keys, and texts that differ only
/// at the end (sequential ids) do not print alike. The mix is one-to-one, adding no
/// collision.
pub fn stable_hash(text: &str) -> u64 {
    let mut h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h = (h ^ (h >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Human wording for a serde_json error on hostile input.
pub fn describe_json_error(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    if msg.contains("recursion limit") {
        format!(
            "JSON nested more than 128 levels deep (line {}, column {})",
            e.line(),
            e.column()
        )
    } else {
        msg
    }
}

/// `describe_json_error` for an error serde_json met in a slice of a larger document,
/// at the document's `line` and `column` instead of the slice's.
pub fn describe_json_error_at(e: &serde_json::Error, line: usize, column: usize) -> String {
    if e.line() == 0 {
        return describe_json_error(e);
    }
    let msg = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let code = msg.strip_suffix(&suffix).unwrap_or(&msg);
    if code.contains("recursion limit") {
        format!("JSON nested more than 128 levels deep (line {line}, column {column})")
    } else {
        format!("{code} at line {line} column {column}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_text_is_short_distinct_and_cut_on_a_character() {
        assert!(matches!(kept("short", 16), Cow::Borrowed("short")));
        let long = "é".repeat(600);
        for max in [KEPT_NAME, KEPT_TEXT] {
            let k = kept(&long, max);
            assert!(k.len() <= max, "{} > {max}", k.len());
            assert!(k.starts_with("éé") && k.contains("…[1200 bytes, #"), "{k}");
            assert_eq!(kept(&long, max), k);
        }
        // Texts that differ only past the head, even at the same length, differ.
        let a = format!("{}a", "x".repeat(2000));
        let b = format!("{}b", "x".repeat(2000));
        assert_ne!(kept(&a, KEPT_NAME), kept(&b, KEPT_NAME));
        // Never longer than `max`, even with the longest length.
        assert!(kept(&"y".repeat(100_000), KEPT_NAME).len() <= KEPT_NAME);
    }

    #[test]
    fn the_stable_hash_does_not_change() {
        // Session scopes print it: a baseline written by an earlier run must match
        // (the session `sess-00000000` of the bench's small-calls log).
        assert_eq!(
            format!("{:016x}", stable_hash("sess-00000000")),
            "5dec185e5a951543"
        );
    }

    proptest::proptest! {
        /// Every byte's mark is exact, in words of any bytes and of bytes next to
        /// the ones marked (where a borrow would mark a neighbour).
        #[test]
        fn special_bytes_are_marked_exactly(
            w in proptest::prelude::any::<u64>(),
            picks in proptest::collection::vec(proptest::sample::select(
                vec![b'"', b'\\', 0u8, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff]), 8),
        ) {
            let picked = u64::from_le_bytes(picks.try_into().unwrap());
            for w in [w, picked] {
                let want = w.to_le_bytes().iter().enumerate().fold(0u64, |m, (k, &c)| {
                    m | (u64::from(matches!(c, b'"' | b'\\' | 0..=0x1f)) << (8 * k + 7))
                });
                proptest::prop_assert_eq!(special_bytes_exact(w), want, "{:016x}", w);
            }
        }

        /// Cut where `split_once("://")` cuts, colons and slashes anywhere.
        #[test]
        fn urls_split_at_the_scheme_as_split_once_does(url in "[a-z:/é@?]{0,16}") {
            proptest::prop_assert_eq!(split_scheme(&url), url.split_once("://"));
        }
    }

    #[test]
    fn excerpts_cut_on_char_boundaries() {
        assert_eq!(excerpt("short"), "short");
        let long = "é".repeat(200);
        let e = excerpt(&long);
        assert!(e.ends_with('…'));
        assert!(e.len() <= 303);
    }
}
