//! HTTP/1.1 message framing (RFC 9112 §6.3): how long a body is (length, chunked,
//! until close), pushed through as bytes arrive in any split, with holes skipped where
//! the framing allows. No crate frames bodies incrementally from pushed bytes.

use crate::model::Headers;

/// Longest chunk-size line (with extensions) scanned for its end.
const CHUNK_LINE_CAP: usize = 4 << 10;

/// How a message body is delimited.
#[derive(Debug)]
pub(super) enum Framing {
    Length(u64),
    Chunked(Chunked),
    /// Until the server closes (responses only).
    Close,
}

#[derive(Debug, Default)]
pub(super) struct Chunked {
    state: CState,
    line: Vec<u8>,
    pub(super) trailers: Vec<(String, String)>,
}

#[derive(Debug, Default, PartialEq, Eq)]
enum CState {
    #[default]
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

/// Result of pushing bytes through a framing.
pub(super) struct Framed {
    pub(super) used: usize,
    pub(super) done: bool,
}

impl Framing {
    /// Passes body bytes of `input` to `body`; says how much was used and whether
    /// the body ended. `Err` when the framing is broken (bad chunk size).
    pub(super) fn push(
        &mut self,
        input: &[u8],
        body: &mut impl FnMut(&[u8]),
    ) -> Result<Framed, String> {
        match self {
            Framing::Length(left) => {
                let n = (*left).min(input.len() as u64) as usize;
                let (now, _) = input.split_at(n);
                if n > 0 {
                    body(now);
                }
                *left -= n as u64;
                Ok(Framed {
                    used: n,
                    done: *left == 0,
                })
            }
            Framing::Close => {
                body(input);
                Ok(Framed {
                    used: input.len(),
                    done: false,
                })
            }
            Framing::Chunked(c) => c.push(input, body),
        }
    }

    /// A gap of `len` bytes in the body: `true` when framing survives it.
    pub(super) fn skip(&mut self, len: u64) -> bool {
        match self {
            Framing::Length(left) if len < *left => {
                *left -= len;
                true
            }
            Framing::Close => true,
            Framing::Chunked(c) => match &mut c.state {
                CState::Data(left) if len < *left => {
                    *left -= len;
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
}

impl Chunked {
    fn push(&mut self, input: &[u8], body: &mut impl FnMut(&[u8])) -> Result<Framed, String> {
        let mut i = 0usize;
        while i < input.len() && self.state != CState::Done {
            let rest = input.get(i..).unwrap_or(&[]);
            match self.state {
                CState::Size | CState::Trailer => {
                    let nl = memchr::memchr(b'\n', rest);
                    let take = nl.map(|p| p + 1).unwrap_or(rest.len());
                    self.line.extend_from_slice(rest.get(..take).unwrap_or(&[]));
                    i += take;
                    if self.line.len() > CHUNK_LINE_CAP {
                        return Err(format!(
                            "chunk-size or trailer line longer than {CHUNK_LINE_CAP} bytes"
                        ));
                    }
                    if nl.is_none() {
                        continue;
                    }
                    let line = std::mem::take(&mut self.line);
                    let text = trim_eol(&line);
                    if self.state == CState::Size {
                        let size = parse_chunk_size(text)?;
                        self.state = if size == 0 {
                            CState::Trailer
                        } else {
                            CState::Data(size)
                        };
                    } else if text.is_empty() {
                        self.state = CState::Done;
                    } else {
                        let s = String::from_utf8_lossy(text);
                        if let Some((n, v)) = s.split_once(':') {
                            self.trailers
                                .push((n.trim().to_owned(), v.trim().to_owned()));
                        }
                    }
                }
                CState::Data(left) => {
                    let n = left.min(rest.len() as u64) as usize;
                    if let Some(now) = rest.get(..n) {
                        body(now);
                    }
                    i += n;
                    self.state = if left == n as u64 {
                        CState::DataEnd
                    } else {
                        CState::Data(left - n as u64)
                    };
                }
                CState::DataEnd => {
                    // CRLF after the chunk data (a bare LF is tolerated).
                    match rest.first() {
                        Some(b'\r') => i += 1,
                        Some(b'\n') => {
                            i += 1;
                            self.state = CState::Size;
                        }
                        _ => return Err("chunk data not followed by CRLF".to_owned()),
                    }
                }
                CState::Done => {}
            }
        }
        Ok(Framed {
            used: i,
            done: self.state == CState::Done,
        })
    }
}

fn trim_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn parse_chunk_size(line: &[u8]) -> Result<u64, String> {
    let hex = line
        .split(|&b| b == b';')
        .next()
        .unwrap_or(&[])
        .trim_ascii();
    let bad = || {
        format!(
            "bad chunk size line {:?}",
            String::from_utf8_lossy(line.get(..line.len().min(40)).unwrap_or(&[]))
        )
    };
    if hex.is_empty() || hex.len() > 15 {
        return Err(bad());
    }
    let s = std::str::from_utf8(hex).map_err(|_| bad())?;
    u64::from_str_radix(s, 16).map_err(|_| bad())
}

fn chunked_last(headers: &Headers) -> Option<bool> {
    let te = headers.get("transfer-encoding")?;
    Some(
        te.rsplit(',')
            .next()
            .is_some_and(|t| t.trim().eq_ignore_ascii_case("chunked")),
    )
}

fn content_length(headers: &Headers) -> Option<u64> {
    headers.get("content-length")?.trim().parse().ok()
}

pub(super) fn request_framing(headers: &Headers) -> Framing {
    match chunked_last(headers) {
        Some(true) => Framing::Chunked(Chunked::default()),
        _ => Framing::Length(content_length(headers).unwrap_or(0)),
    }
}

pub(super) fn response_framing(headers: &Headers) -> Framing {
    match chunked_last(headers) {
        Some(true) => Framing::Chunked(Chunked::default()),
        Some(false) => Framing::Close,
        None => match content_length(headers) {
            Some(n) => Framing::Length(n),
            None => Framing::Close,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(list: &[(&str, &str)]) -> Headers {
        let mut h = Headers::default();
        for (n, v) in list {
            h.push(*n, *v);
        }
        h
    }

    /// Pushes `wire` in pieces of `split` bytes; the body and the bytes used.
    fn run(f: &mut Framing, wire: &[u8], split: usize) -> (Vec<u8>, usize, bool) {
        let mut body = Vec::new();
        let mut used = 0;
        for piece in wire.chunks(split) {
            let r = f.push(piece, &mut |b| body.extend_from_slice(b)).unwrap();
            used += r.used;
            if r.done {
                return (body, used, true);
            }
        }
        (body, used, false)
    }

    #[test]
    fn length_and_close_framing() {
        for split in [1, 3, 100] {
            let mut f = Framing::Length(5);
            assert_eq!(
                run(&mut f, b"helloNEXT", split),
                (b"hello".to_vec(), 5, true)
            );
            let mut f = Framing::Close;
            assert_eq!(
                run(&mut f, b"all of it", split),
                (b"all of it".to_vec(), 9, false)
            );
        }
    }

    #[test]
    fn which_framing_the_headers_choose() {
        let chunked = headers(&[
            ("Transfer-Encoding", "gzip, chunked"),
            ("Content-Length", "3"),
        ]);
        assert!(matches!(request_framing(&chunked), Framing::Chunked(_)));
        assert!(matches!(response_framing(&chunked), Framing::Chunked(_)));
        let len = headers(&[("content-length", " 12 ")]);
        assert!(matches!(request_framing(&len), Framing::Length(12)));
        assert!(matches!(response_framing(&len), Framing::Length(12)));
        // No length: a request has no body, a response runs until close.
        assert!(matches!(
            request_framing(&Headers::default()),
            Framing::Length(0)
        ));
        assert!(matches!(
            response_framing(&Headers::default()),
            Framing::Close
        ));
        // Transfer-Encoding whose last coding is not chunked: until close.
        let te = headers(&[("Transfer-Encoding", "gzip")]);
        assert!(matches!(response_framing(&te), Framing::Close));
    }

    #[test]
    fn holes_are_skipped_only_where_framing_survives() {
        let mut f = Framing::Length(10);
        assert!(f.skip(4));
        assert!(matches!(f, Framing::Length(6)));
        assert!(!f.skip(6), "a hole up to the end loses the end");
        let mut c = Framing::Chunked(Chunked::default());
        let r = c.push(b"a\r\n01", &mut |_| {}).unwrap();
        assert_eq!(r.used, 5);
        assert!(c.skip(3), "inside chunk data");
        assert!(!c.skip(100), "past the chunk: sizes lost");
        assert!(Framing::Close.skip(1 << 40));
    }

    #[test]
    fn bad_chunk_sizes_are_errors() {
        for bad in [&b"zz\r\n"[..], b"\r\n", b"1234567890abcdef0\r\n", b"-1\r\n"] {
            let mut c = Chunked::default();
            assert!(c.push(bad, &mut |_| {}).is_err(), "{bad:?}");
        }
        let mut c = Chunked::default();
        let long = vec![b'1'; CHUNK_LINE_CAP + 10];
        assert!(
            c.push(&long, &mut |_| {}).is_err(),
            "an endless size line is cut"
        );
        let mut c = Chunked::default();
        assert!(
            c.push(b"1\r\nxy", &mut |_| {}).is_err(),
            "data not followed by CRLF"
        );
    }

    #[test]
    fn chunked_with_extensions_and_trailers_in_any_split() {
        let wire = b"4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nX-Sum: 7\r\n\r\nNEXT";
        for split in 1..wire.len() {
            let mut c = Chunked::default();
            let mut body = Vec::new();
            let (a, b) = wire.split_at(split);
            let f1 = c.push(a, &mut |x| body.extend_from_slice(x)).unwrap();
            let mut used = f1.used;
            if !f1.done {
                let f2 = c.push(b, &mut |x| body.extend_from_slice(x)).unwrap();
                used += f2.used;
                assert!(f2.done);
            }
            assert_eq!(body, b"Wikipedia");
            assert_eq!(used, wire.len() - 4);
            assert_eq!(c.trailers, vec![("X-Sum".to_owned(), "7".to_owned())]);
        }
        let mut c = Chunked::default();
        assert!(c.push(b"zz\r\n", &mut |_| {}).is_err());
    }
}
