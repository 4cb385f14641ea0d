//! Ingest stage: bytes of one input → `model::Exchange`s pushed into a `Sink`.
//! The format is detected from content, never from the file name. Problems inside
//! an input (a bad line) are reported to the sink and reading goes on; only a problem
//! that stops the whole input is returned as an `IngestError`.

mod clientlog;
mod diag;
mod har;
mod inflate;
mod jsonarray;
mod jsonl;
mod meter;
mod pcap;

use crate::config::Limits;
use crate::model::{Body, Exchange, Headers};
use crate::sse::Budget;
use std::io::{self, BufRead, BufReader, Read};

/// What an input turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Jsonl,
    Har,
    Pcap,
    Pcapng,
    /// A text log with one JSON-RPC message per line.
    MessageLog,
    /// A JSON array of log entries (MCP Inspector, conformance checks).
    JsonArray,
    /// Content not recognised (only ever in errors).
    Unknown,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Har => "har",
            Format::Pcap => "pcap",
            Format::Pcapng => "pcapng",
            Format::MessageLog => "message-log",
            Format::JsonArray => "json-array",
            Format::Unknown => "unknown",
        }
    }
}

pub use diag::{Diagnostic, Kind, Level, Problem};

/// Where ingesters push what they read (ripgrep's `Sink`, for exchanges).
pub trait Sink {
    fn exchange(&mut self, x: Exchange);
    /// Something in the input could not be read or parsed (exit code 2).
    fn problem(&mut self, p: Problem);
    /// Something worth knowing that is no fault of the input: a TLS flow beside the
    /// MCP traffic, a capture that starts mid-connection, a synthesized HAR. Reported,
    /// never counted as an error.
    fn notice(&mut self, p: Problem) {
        let _ = p;
    }
    /// A diagnostic, routed by its level.
    fn diagnostic(&mut self, d: Diagnostic) {
        match d.level {
            Level::Problem => self.problem(d),
            Level::Notice => self.notice(d),
        }
    }
}

/// Collects everything (tests and small tools).
#[derive(Debug, Default)]
pub struct Collect {
    pub exchanges: Vec<Exchange>,
    pub problems: Vec<Problem>,
    pub notices: Vec<Problem>,
}

impl Sink for Collect {
    fn exchange(&mut self, x: Exchange) {
        self.exchanges.push(x);
    }
    fn problem(&mut self, mut p: Problem) {
        p.level = Level::Problem;
        self.problems.push(p);
    }
    fn notice(&mut self, mut p: Problem) {
        p.level = Level::Notice;
        self.notices.push(p);
    }
}

impl Collect {
    /// Every problem and notice of `kind` (tests match on kinds, not on words).
    pub fn of_kind(&self, kind: Kind) -> impl Iterator<Item = &Problem> {
        self.problems
            .iter()
            .chain(&self.notices)
            .filter(move |p| p.kind == kind)
    }
}

/// A problem that stops one input (the run goes on with the others).
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("cannot read: {0}")]
    Io(#[from] io::Error),
    #[error("empty input: nothing to analyse")]
    Empty,
    #[error("binary data that is not a pcap, pcapng, gzip or tar file (first bytes {0}); mcpsift reads JSONL logs, HAR, pcap/pcapng, MCP Inspector and client logs, and gzip or tar archives of them")]
    Binary(String),
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("not a recognised input: {0}")]
    Unrecognised(String),
    #[error("{0} input recognised, but reading {0} is not supported by this build yet")]
    NotSupported(&'static str),
    #[error("compressed input expands past the {0}-byte cap (raise --max-decompressed-bytes to read it)")]
    DecompressCap(u64),
    #[error("not a readable HAR: {0}")]
    Har(String),
    #[error("compressed inside compressed more than {0} levels deep")]
    TooDeep(u32),
}

/// A recorded response body: parsed as SSE when its Content-Type says
/// `text/event-stream`, or, with no Content-Type at all, when it starts like one
/// (loggers often drop headers); raw bytes otherwise. Shared by every reader that
/// gets bodies as text (JSONL, HAR, JSON arrays).
pub(crate) fn body_from_recorded(headers: &Headers, bytes: Vec<u8>, budget: Budget) -> Body {
    let sse = headers.media_type().as_deref() == Some("text/event-stream")
        || (headers.get("content-type").is_none() && crate::sse::looks_like_event_stream(&bytes));
    if sse {
        Body::Sse(crate::sse::parse_body(&bytes, budget))
    } else {
        Body::Bytes(bytes)
    }
}

/// An input after its compression is undone: one stream, or a tar archive of many.
pub enum Opened<'a> {
    Stream(Box<dyn BufRead + 'a>),
    Tar(Box<dyn BufRead + 'a>),
}

/// True when `head` starts with a POSIX (ustar) or GNU tar header.
pub fn is_tar(head: &[u8]) -> bool {
    head.len() >= 262 && head.get(257..262) == Some(b"ustar".as_slice())
}

/// Undoes gzip compression (capped, at most two levels) and tells a tar archive
/// from a single stream, so the batch can read each member of an archive as an
/// input of its own.
pub fn open<'a>(reader: Box<dyn Read + 'a>, limits: &Limits) -> Result<Opened<'a>, IngestError> {
    open_inner(reader, limits).map_err(|e| cap_error(e, limits))
}

fn open_inner<'a>(reader: Box<dyn Read + 'a>, limits: &Limits) -> Result<Opened<'a>, IngestError> {
    let mut reader: Box<dyn BufRead + 'a> = Box::new(BufReader::with_capacity(256 << 10, reader));
    for _ in 0..3 {
        let head = fill_head_of(&mut reader)?;
        if head.starts_with(&[0x1f, 0x8b]) {
            let cap = limits.max_decompressed_bytes;
            let dec = CappedReader {
                inner: flate2::bufread::MultiGzDecoder::new(reader),
                left: cap,
                cap,
            };
            reader = Box::new(BufReader::with_capacity(256 << 10, dec));
            continue;
        }
        if is_tar(&head) {
            return Ok(Opened::Tar(reader));
        }
        return Ok(Opened::Stream(reader));
    }
    Err(IngestError::TooDeep(3))
}

/// Up to 8 KiB of the reader's first bytes, without consuming them; a pipe may hand
/// them over in several reads, so read until 512 bytes (a tar header) or the end.
fn fill_head_of(reader: &mut Box<dyn BufRead + '_>) -> io::Result<Vec<u8>> {
    let buf = reader.fill_buf()?;
    Ok(buf[..buf.len().min(8192)].to_vec())
}

/// Reads one whole input, detecting its format, pushing into `sink`.
pub fn ingest(
    reader: impl Read,
    limits: &Limits,
    sink: &mut dyn Sink,
) -> Result<Format, IngestError> {
    match open(Box::new(reader), limits)? {
        Opened::Stream(r) => read_stream(r, limits, sink),
        Opened::Tar(_) => Err(IngestError::Unrecognised(
            "a tar archive; name it as an input of `mcpsift analyze`, which reads every member"
                .to_owned(),
        )),
    }
}

/// The decompression cap surfaces as an I/O error deep in a reader; say what it is.
fn cap_error(e: IngestError, limits: &Limits) -> IngestError {
    match e {
        IngestError::Io(io) if io.kind() == io::ErrorKind::FileTooLarge => {
            IngestError::DecompressCap(limits.max_decompressed_bytes)
        }
        other => other,
    }
}

/// Reads one stream that `open` already decompressed, by the format its first
/// bytes show.
pub fn read_stream(
    reader: Box<dyn BufRead + '_>,
    limits: &Limits,
    sink: &mut dyn Sink,
) -> Result<Format, IngestError> {
    read_sniffed(reader, limits, sink).map_err(|e| cap_error(e, limits))
}

fn read_sniffed(
    mut reader: Box<dyn BufRead + '_>,
    limits: &Limits,
    sink: &mut dyn Sink,
) -> Result<Format, IngestError> {
    let head = fill_head_of(&mut reader)?;
    match sniff(&head) {
        Sniffed::Empty => Err(IngestError::Empty),
        // `open` undid three levels of gzip already; a fourth is refused.
        Sniffed::Gzip => Err(IngestError::TooDeep(3)),
        Sniffed::Pcap => {
            pcap::read(reader, false, limits, sink)?;
            Ok(Format::Pcap)
        }
        Sniffed::Pcapng => {
            pcap::read(reader, true, limits, sink)?;
            Ok(Format::Pcapng)
        }
        Sniffed::Har => {
            har::read(reader, limits, sink)?;
            Ok(Format::Har)
        }
        Sniffed::Jsonl => {
            jsonl::read(&mut reader, limits, sink)?;
            Ok(Format::Jsonl)
        }
        Sniffed::JsonArray => {
            jsonarray::read(&mut reader, limits, sink).map_err(IngestError::Malformed)?;
            Ok(Format::JsonArray)
        }
        Sniffed::MessageLog => {
            clientlog::read_message_log(&mut reader, limits.max_record_bytes, sink)?;
            Ok(Format::MessageLog)
        }
        Sniffed::Binary(first) => Err(IngestError::Binary(first)),
        Sniffed::Text(what) => Err(IngestError::Unrecognised(what)),
    }
}

/// What the first bytes say.
#[derive(Debug, PartialEq, Eq)]
pub enum Sniffed {
    Empty,
    Gzip,
    Pcap,
    Pcapng,
    Har,
    Jsonl,
    /// Text lines with one JSON-RPC message each after a prefix (VS Code output channel).
    MessageLog,
    /// A JSON array: MCP Inspector exports, conformance `checks.json`.
    JsonArray,
    Binary(String),
    Text(String),
}

/// Detects a format from an input's first bytes.
pub fn sniff(head: &[u8]) -> Sniffed {
    if head.is_empty() {
        return Sniffed::Empty;
    }
    if head.starts_with(&[0x1f, 0x8b]) {
        return Sniffed::Gzip;
    }
    if head.len() >= 4 {
        let m = [head[0], head[1], head[2], head[3]];
        match m {
            [0xd4, 0xc3, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0xc3, 0xd4]
            | [0x4d, 0x3c, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0x3c, 0x4d] => return Sniffed::Pcap,
            [0x0a, 0x0d, 0x0d, 0x0a] => return Sniffed::Pcapng,
            _ => {}
        }
    }
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let Some(start) = body.iter().position(|b| !b.is_ascii_whitespace()) else {
        return Sniffed::Empty;
    };
    let text = &body[start..];
    let binary = body
        .iter()
        .take(1024)
        .any(|&b| b == 0 || (b < 0x09) || (0x0e..0x20).contains(&b) && b != 0x1b);
    if text[0] == b'{' {
        // A HAR is one JSON document whose top-level object holds "log".
        let first_line = text.split(|&b| b == b'\n').next().unwrap_or(text);
        let compact = first_line
            .iter()
            .filter(|b| !b.is_ascii_whitespace())
            .count();
        if compact <= 1 || looks_like_har(text) {
            if looks_like_har(text) {
                return Sniffed::Har;
            }
            return Sniffed::Text(
                "a JSON document spread over several lines, without a HAR \"log\"; JSONL needs one JSON object per line".to_owned(),
            );
        }
        return Sniffed::Jsonl;
    }
    if binary {
        let hex: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
        return Sniffed::Binary(hex.join(" "));
    }
    if text[0] == b'[' {
        return Sniffed::JsonArray;
    }
    if clientlog::looks_like_message_log(text) {
        return Sniffed::MessageLog;
    }
    let first_line = String::from_utf8_lossy(text.split(|&b| b == b'\n').next().unwrap_or(text));
    Sniffed::Text(format!(
        "the first line is not JSON ({}); mcpsift reads JSONL logs, HAR, pcap/pcapng, MCP Inspector and client logs, and gzip or tar archives of them",
        crate::text::excerpt(first_line.trim())
            .chars()
            .take(60)
            .collect::<String>()
    ))
}

fn looks_like_har(text: &[u8]) -> bool {
    // Whitespace is dropped everywhere (inside strings too): only key shapes matter.
    let compact: Vec<u8> = text
        .iter()
        .take(8192)
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    if compact.starts_with(b"{\"log\":") {
        return true;
    }
    // Some writers put another key first (a comment, a vendor `_` key); then the
    // `log` object must show up with one of its own HAR members first.
    ["version", "creator", "browser", "pages", "entries"]
        .iter()
        .any(|k| {
            let needle = format!("\"log\":{{\"{k}\":");
            memchr::memmem::find(&compact, needle.as_bytes()).is_some()
        })
}

/// A reader that fails with `FileTooLarge` after `cap` bytes.
struct CappedReader<R> {
    inner: R,
    left: u64,
    cap: u64,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // Probe one byte: exactly `cap` bytes is fine, more is not.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::new(
                    io::ErrorKind::FileTooLarge,
                    format!("decompressed past {} bytes", self.cap),
                )),
            };
        }
        let want = buf.len().min(self.left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_by_content() {
        assert_eq!(sniff(b""), Sniffed::Empty);
        assert_eq!(sniff(b"  \n"), Sniffed::Empty);
        assert_eq!(sniff(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0]), Sniffed::Pcap);
        assert_eq!(sniff(&[0x0a, 0x0d, 0x0d, 0x0a, 0, 0]), Sniffed::Pcapng);
        assert_eq!(sniff(&[0x1f, 0x8b, 8]), Sniffed::Gzip);
        assert_eq!(sniff(b"{\n  \"log\": {\"version\":\"1.2\"}}"), Sniffed::Har);
        assert_eq!(sniff(b"{\"jsonrpc\":\"2.0\",\"id\":1}\n"), Sniffed::Jsonl);
        assert_eq!(
            sniff(b"{\n \"_comment\": \"x\",\n \"log\": {\n  \"version\": \"1.2\"}}"),
            Sniffed::Har
        );
        assert_eq!(
            sniff(b"{\"comment\":\"x\",\"log\":{\"creator\":{},\"entries\":[]}}"),
            Sniffed::Har
        );
        assert!(matches!(
            sniff(b"\x7fELF\x02\x01\x01\x00\x00"),
            Sniffed::Binary(_)
        ));
        assert!(matches!(sniff(b"hello world\n"), Sniffed::Text(_)));
        assert!(matches!(sniff(b"{\n \"a\": 1\n}"), Sniffed::Text(_)));
    }
}
