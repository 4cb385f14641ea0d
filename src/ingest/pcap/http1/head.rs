//! HTTP/1.1 heads: what a direction's first bytes say it carries, where a head ends
//! (scanned once, remembered across segments), `httparse` for the head itself, and
//! where a plausible next message starts after a bad one.

use crate::model::Headers;
use std::mem::MaybeUninit;

pub(super) const METHODS: &[&[u8]] = &[
    b"GET ",
    b"POST ",
    b"PUT ",
    b"DELETE ",
    b"HEAD ",
    b"OPTIONS ",
    b"PATCH ",
    b"CONNECT ",
    b"TRACE ",
];

/// What the first bytes of one direction say the connection carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    Request,
    Response,
    Http2Preface,
    Tls,
    Other,
}

/// Classifies the first bytes of a direction; `None` while too few bytes decide.
pub fn classify_start(b: &[u8], all: bool) -> Option<Start> {
    if b.is_empty() {
        return if all { Some(Start::Other) } else { None };
    }
    const H2: &[u8] = b"PRI * HTTP/2.0";
    const RESP: &[u8] = b"HTTP/1.";
    if b.len() >= 3 && b.first() == Some(&0x16) && b.get(1) == Some(&0x03) {
        return Some(Start::Tls);
    }
    let could = |pat: &[u8]| {
        let n = pat.len().min(b.len());
        b.get(..n) == pat.get(..n)
    };
    let is = |pat: &[u8]| b.starts_with(pat);
    if is(H2) {
        return Some(Start::Http2Preface);
    }
    if is(RESP) {
        return Some(Start::Response);
    }
    if METHODS.iter().any(|m| is(m)) {
        return Some(Start::Request);
    }
    let undecided = could(H2) || could(RESP) || METHODS.iter().any(|m| could(m));
    let tls_maybe = b.len() < 3 && b.first() == Some(&0x16) && b.get(1).is_none_or(|&x| x == 3);
    if (undecided || tls_maybe) && !all {
        return None;
    }
    Some(Start::Other)
}

/// Where the head that starts at the front of `buf` ends (just past its blank line),
/// searching from `from`: bytes before it were scanned already and held no end.
/// Returns the end, or `None` and how far the scan got.
pub(super) fn head_end(buf: &[u8], from: usize) -> Result<usize, usize> {
    // A line feed followed by an optional CR and a line feed ends the head; back up
    // two bytes so an end split across calls is still seen.
    let mut at = from.saturating_sub(2);
    while let Some(i) = memchr::memchr(b'\n', buf.get(at..).unwrap_or(&[])) {
        let nl = at + i;
        match (buf.get(nl + 1), buf.get(nl + 2)) {
            (Some(b'\n'), _) => return Ok(nl + 2),
            (Some(b'\r'), Some(b'\n')) => return Ok(nl + 3),
            (Some(b'\r'), None) | (None, _) => return Err(nl),
            _ => at = nl + 1,
        }
    }
    Err(buf.len())
}

pub(super) enum RawHead {
    Request {
        method: String,
        target: String,
        headers: Headers,
    },
    Response {
        status: u16,
        headers: Headers,
    },
}

/// `Ok(None)`: incomplete. `Ok(Some((len, head)))`: a head of `len` bytes.
pub(super) fn parse_head(request: bool, buf: &[u8]) -> Result<Option<(usize, RawHead)>, String> {
    // Room for more headers than real clients, servers and proxies send, so one parse
    // suffices; a longer head is parsed again with four times the room. The room is
    // left uninitialised on the stack: filled and on the heap, it cost a third of
    // reading a short head.
    let mut stack = [const { MaybeUninit::<httparse::Header>::uninit() }; 32];
    let mut heap: Vec<MaybeUninit<httparse::Header>> = Vec::new();
    let mut n_headers = stack.len();
    loop {
        let storage: &mut [MaybeUninit<httparse::Header>] = if n_headers == stack.len() {
            &mut stack
        } else {
            heap.resize_with(n_headers, MaybeUninit::uninit);
            &mut heap
        };
        let mut cfg = httparse::ParserConfig::default();
        cfg.allow_spaces_after_header_name_in_responses(true)
            .allow_obsolete_multiline_headers_in_responses(true)
            .allow_multiple_spaces_in_request_line_delimiters(true)
            .allow_multiple_spaces_in_response_status_delimiters(true)
            .ignore_invalid_headers_in_responses(true)
            .ignore_invalid_headers_in_requests(true);
        let res = if request {
            let mut r = httparse::Request::new(&mut []);
            match cfg.parse_request_with_uninit_headers(&mut r, buf, storage) {
                Ok(httparse::Status::Complete(n)) => Ok(Some((
                    n,
                    RawHead::Request {
                        method: r.method.unwrap_or("").to_owned(),
                        target: r.path.unwrap_or("").to_owned(),
                        headers: owned(buf, r.headers),
                    },
                ))),
                Ok(httparse::Status::Partial) => Ok(None),
                Err(e) => Err(e),
            }
        } else {
            let mut r = httparse::Response::new(&mut []);
            match cfg.parse_response_with_uninit_headers(&mut r, buf, storage) {
                Ok(httparse::Status::Complete(n)) => Ok(Some((
                    n,
                    RawHead::Response {
                        status: r.code.unwrap_or(0),
                        headers: owned(buf, r.headers),
                    },
                ))),
                Ok(httparse::Status::Partial) => Ok(None),
                Err(e) => Err(e),
            }
        };
        match res {
            Err(httparse::Error::TooManyHeaders) if n_headers < 1024 => {
                n_headers = (n_headers * 4).min(1024);
            }
            Err(e) => return Err(e.to_string()),
            Ok(v) => return Ok(v),
        }
    }
}

/// The headers httparse found in `head`, owned. `head` is checked as UTF-8 once and
/// each value cut from it: a check per value cost more than the whole head's.
fn owned(head: &[u8], h: &[httparse::Header<'_>]) -> Headers {
    let text = std::str::from_utf8(head).ok();
    let mut headers = Headers::with_capacity(h.len());
    for h in h {
        // httparse's values are slices of `head`: where this one sits in it.
        let at = (h.value.as_ptr() as usize).wrapping_sub(head.as_ptr() as usize);
        let value = match text.and_then(|t| t.get(at..at.checked_add(h.value.len())?)) {
            Some(v) => std::borrow::Cow::Borrowed(v),
            None => crate::text::lossy(h.value),
        };
        headers.push(h.name, value.trim());
    }
    headers
}

/// Where the next message may start, while skipping to one.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// A message starts here.
    At(usize),
    /// The input ends in what may be the first bytes of one: hold them from here.
    Maybe(usize),
    /// Nothing here.
    None,
}

/// Where a request line plausibly starts: at a line start (the input's first byte
/// counts when `line_start`), with a method. A method cut by the end of the input is
/// `Maybe`, so the answer does not depend on where the segments end.
pub(super) fn find_method(input: &[u8], line_start: bool) -> Next {
    let mut at = if line_start {
        0
    } else {
        match memchr::memchr(b'\n', input) {
            Some(i) => i + 1,
            None => return Next::None,
        }
    };
    loop {
        let rest = &input[at..];
        if METHODS.iter().any(|m| rest.starts_with(m)) {
            return Next::At(at);
        }
        if METHODS.iter().any(|m| m.starts_with(rest)) {
            return Next::Maybe(at);
        }
        match memchr::memchr(b'\n', rest) {
            Some(i) => at += i + 1,
            None => return Next::None,
        }
    }
}

/// Where a status line plausibly starts (anywhere), with the same `Maybe` for one
/// cut by the end of the input.
pub(super) fn find_status(input: &[u8]) -> Next {
    const STATUS: &[u8] = b"HTTP/1.";
    if let Some(at) = memchr::memmem::find(input, STATUS) {
        return Next::At(at);
    }
    let from = input.len().saturating_sub(STATUS.len() - 1);
    (from..input.len())
        .find(|&i| STATUS.starts_with(&input[i..]))
        .map_or(Next::None, Next::Maybe)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head parses whole whatever its number of headers, up to 1,024 (the first
    /// parse has room for 32, a longer head is parsed again with more), and one with
    /// more is refused.
    #[test]
    fn heads_of_any_length_up_to_the_cap_parse_whole() {
        for n in [0usize, 1, 31, 32, 33, 127, 128, 129, 600, 1024, 1025] {
            let mut head = "POST /mcp HTTP/1.1\r\n".to_owned();
            for i in 0..n {
                head.push_str(&format!("X-H{i}: v{i}\r\n"));
            }
            head.push_str("\r\n{}");
            match parse_head(true, head.as_bytes()) {
                Ok(Some((len, RawHead::Request { headers, .. }))) => {
                    assert!(n <= 1024, "{n}");
                    assert_eq!(len, head.len() - 2, "{n}");
                    assert_eq!(headers.len(), n);
                    assert_eq!(
                        headers.get(&format!("x-h{}", n.max(1) - 1)).is_some(),
                        n > 0
                    );
                }
                Ok(_) => panic!("{n}: incomplete"),
                Err(e) => {
                    assert_eq!(n, 1025);
                    assert!(e.contains("too many headers"), "{e}");
                }
            }
        }
    }

    #[test]
    fn starts() {
        assert_eq!(classify_start(b"PO", false), None);
        assert_eq!(classify_start(b"POST /", false), Some(Start::Request));
        assert_eq!(
            classify_start(b"HTTP/1.1 200", false),
            Some(Start::Response)
        );
        assert_eq!(classify_start(b"\x16\x03\x01", false), Some(Start::Tls));
        assert_eq!(
            classify_start(b"PRI * HTTP/2.0\r\n", false),
            Some(Start::Http2Preface)
        );
        assert_eq!(classify_start(b"SSH-2.0", false), Some(Start::Other));
        assert_eq!(classify_start(b"PO", true), Some(Start::Other));
    }

    #[test]
    fn head_end_in_any_split_and_line_ending() {
        for wire in [
            &b"GET / HTTP/1.1\r\nA: b\r\n\r\nBODY"[..],
            b"GET / HTTP/1.1\nA: b\n\nBODY",
        ] {
            let end = wire.len() - 4;
            assert_eq!(head_end(wire, 0), Ok(end));
            // Scanning in steps, resuming where the last scan stopped, finds the same end.
            for step in 1..wire.len() {
                let mut from = 0;
                let mut got = None;
                for upto in (step..=wire.len()).step_by(step).chain([wire.len()]) {
                    match head_end(&wire[..upto], from) {
                        Ok(e) => {
                            got = Some(e);
                            break;
                        }
                        Err(f) => from = f,
                    }
                }
                assert_eq!(got, Some(end), "step {step}");
            }
        }
        assert!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n", 0).is_err());
    }

    #[test]
    fn heads_parse_and_many_headers_need_one_parse() {
        let mut wire = b"POST /mcp HTTP/1.1\r\n".to_vec();
        for i in 0..300 {
            wire.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
        }
        wire.extend_from_slice(b"\r\n");
        let (n, raw) = parse_head(true, &wire).unwrap().unwrap();
        assert_eq!(n, wire.len());
        assert!(matches!(raw, RawHead::Request { headers, .. } if headers.len() == 300));
        assert!(parse_head(true, b"G\x00T / HTTP/1.1\r\n\r\n").is_err());
        assert!(parse_head(false, b"HTTP/1.1 200 OK\r\n").unwrap().is_none());
    }

    /// Values are the text between the colon and the line end, trimmed; a head with
    /// a byte that is not UTF-8 still gives every value, that byte replaced in its
    /// own value only; a folded value (responses) keeps its line break.
    #[test]
    fn values_are_trimmed_text_and_bad_bytes_stay_in_their_value() {
        let values = |wire: &[u8]| -> Vec<(String, String)> {
            let (_, raw) = parse_head(false, wire).unwrap().unwrap();
            let RawHead::Response { headers, .. } = raw else {
                panic!("a response")
            };
            headers
                .iter()
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect()
        };
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(
            values(b"HTTP/1.1 200 OK\r\nA:  caf\xc3\xa9 \r\nB: 1\r\n\r\n"),
            pairs(&[("A", "café"), ("B", "1")])
        );
        assert_eq!(
            values(b"HTTP/1.1 200 OK\r\nA: caf\xe9\r\nB: \xc3\xa9t\xc3\xa9\r\n\r\n"),
            pairs(&[("A", "caf\u{fffd}"), ("B", "été")])
        );
        assert_eq!(
            values(b"HTTP/1.1 200 OK\r\nA: one\r\n two\r\nB: x\r\n\r\n"),
            pairs(&[("A", "one\r\n two"), ("B", "x")])
        );
    }

    #[test]
    fn next_message_starts_at_a_line_start_or_may_be_cut() {
        assert_eq!(find_method(b"xx\nPOST / HTTP/1.1", false), Next::At(3));
        assert_eq!(find_method(b"GET /", true), Next::At(0));
        assert_eq!(find_method(b"GET /", false), Next::None, "mid-line");
        assert_eq!(find_method(b"xxPOST /", true), Next::None);
        assert_eq!(find_method(b"xx\nPO", false), Next::Maybe(3));
        assert_eq!(
            find_method(b"xx\n", false),
            Next::Maybe(3),
            "a line starts next"
        );
        assert_eq!(find_status(b"junk HTTP/1.1 200"), Next::At(5));
        assert_eq!(find_status(b"junk HTT"), Next::Maybe(5));
        assert_eq!(find_status(b"junk"), Next::None);
    }
}
