//! Text helpers every stage may use: excerpts of long text for reports, and plain
//! wording for JSON parse errors met on hostile input. A leaf: it uses no stage.

use std::borrow::Cow;

const EXCERPT: usize = 300;

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

/// The first `EXCERPT` bytes of `text`, cut on a character boundary.
pub fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT {
        return text.to_owned();
    }
    let mut cut = EXCERPT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
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

    proptest::proptest! {
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
