//! Ingest stage: bytes of one input → `model::Exchange`s pushed into a `Sink`.
//! The format is detected from content, never from the file name. Problems inside
//! an input (a bad line) are reported to the sink and reading goes on; only a problem
//! that stops the whole input is returned as an `IngestError`.

mod clientlog;
mod compress;
mod diag;
mod har;
mod harscan;
mod inflate;
mod jsonarray;
mod jsonl;
mod meter;
mod pcap;
mod recorders;

use crate::config::Limits;
use crate::model::{Body, Exchange, Headers};
use crate::sse::Budget;
pub use compress::Compression;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::Arc;

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
    /// A recorder's cassette or Claude Desktop's MCP log (`ingest/recorders/`).
    McpRecorder,
    McpCassette,
    McpVcr,
    ClaudeDesktopLog,
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
            Format::McpRecorder => "mcp-recorder",
            Format::McpCassette => "mcp-cassette",
            Format::McpVcr => "mcp-vcr",
            Format::ClaudeDesktopLog => "claude-desktop-log",
            Format::Unknown => "unknown",
        }
    }
}

pub use diag::{Diagnostic, Kind, Level, Problem};
/// TLS key logs and the record-layer decryptor captures are read with.
pub use pcap::tls;

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
    #[error("binary data that is not a pcap, pcapng, compressed (gzip, zstd, bzip2, xz) or tar file (first bytes {0}); mcpsift reads JSONL logs, HAR, pcap/pcapng, MCP Inspector exports, MCP recorders' cassettes and client logs, compressed or in tar archives")]
    Binary(String),
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("not a recognised input: {0}")]
    Unrecognised(String),
    #[error("{0} recognised, but mcpsift does not read it")]
    NotSupported(&'static str),
    #[error("compressed input expands past the {0}-byte cap (raise --max-decompressed-bytes to read it)")]
    DecompressCap(u64),
    #[error("not a readable HAR: {0}")]
    Har(String),
    #[error("compressed inside compressed more than {0} levels deep")]
    TooDeep(u32),
    /// A recorder's file (or Claude Desktop log) of which not one record could be used.
    #[error("looks like {format}, but {detail}")]
    NoUsableRecord {
        format: &'static str,
        detail: String,
    },
    /// JSON records none of which is an MCP record: another program's log or data.
    #[error("no MCP record in {records} JSON {what} (another program's log or data?): {expected}")]
    NotMcp {
        records: u64,
        /// `lines` or `array elements`.
        what: &'static str,
        /// What an MCP record would have looked like.
        expected: &'static str,
    },
}

impl IngestError {
    /// True when the input is no input of mcpsift at all (empty, binary, another
    /// program's text or log), rather than an input that could not be read: found
    /// under a directory or in an archive, such a file is skipped with its reason.
    pub fn is_not_an_input(&self) -> bool {
        matches!(
            self,
            IngestError::Empty
                | IngestError::Binary(_)
                | IngestError::Unrecognised(_)
                | IngestError::NotSupported(_)
                | IngestError::NotMcp { .. }
        )
    }
}

/// A recorded response body: parsed as SSE when its Content-Type says
/// `text/event-stream`, or, with no Content-Type at all, when it starts like one
/// (loggers often drop headers); raw bytes otherwise. Shared by every reader that
/// gets bodies as text (JSONL, HAR, JSON arrays).
pub(crate) fn body_from_recorded(headers: &Headers, bytes: Vec<u8>, budget: Budget) -> Body {
    let sse = headers.media_type_is("text/event-stream")
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

/// Undoes compression (gzip, zstd, bzip2, xz; at most `MAX_LAYERS` layers, all
/// together capped by `--max-decompressed-bytes`) and tells a tar archive
/// from a single stream, so the batch can read each member of an archive as an
/// input of its own.
pub fn open<'a>(reader: Box<dyn Read + 'a>, limits: &Limits) -> Result<Opened<'a>, IngestError> {
    let budget = Expansion::new(limits.max_decompressed_bytes);
    open_within(reader, None, limits, &budget)
}

/// `open` for a part of an input (an archive member): its decompression spends
/// the budget of the whole input. `size`, when known, is the stored length: a small
/// input gets a read buffer its size rather than `READ_BUFFER`.
pub fn open_within<'a>(
    reader: Box<dyn Read + 'a>,
    size: Option<u64>,
    limits: &Limits,
    budget: &Expansion,
) -> Result<Opened<'a>, IngestError> {
    open_inner(reader, size, budget).map_err(|e| cap_error(e, limits))
}

/// The read buffer of a stream. A new buffer is zeroed once before its first read
/// (the reader is not a plain `File`), a cost per input that showed on an archive of
/// small logs; an input of known length smaller than this gets a smaller one.
const READ_BUFFER: usize = 256 << 10;

/// Compression inside compression (`x.tar.gz.xz`) is undone this many times.
const MAX_LAYERS: u32 = 3;

fn open_inner<'a>(
    reader: Box<dyn Read + 'a>,
    size: Option<u64>,
    budget: &Expansion,
) -> Result<Opened<'a>, IngestError> {
    // One byte over the length, so that the read that finds the end is not a second
    // fill; never below the sniffed head.
    let capacity = size.map_or(READ_BUFFER, |n| {
        usize::try_from(n)
            .unwrap_or(usize::MAX)
            .saturating_add(1)
            .clamp(HEAD_BYTES, READ_BUFFER)
    });
    let mut reader: Box<dyn BufRead + 'a> = Box::new(BufReader::with_capacity(capacity, reader));
    for _ in 0..MAX_LAYERS {
        let head;
        (head, reader) = fill_head_of(reader)?;
        if let Some(compression) = Compression::of(&head) {
            let dec = CappedReader {
                inner: compression.decoder(reader)?,
                budget: budget.clone(),
            };
            reader = Box::new(BufReader::with_capacity(READ_BUFFER, dec));
            continue;
        }
        if is_tar(&head) {
            return Ok(Opened::Tar(reader));
        }
        return Ok(Opened::Stream(reader));
    }
    Err(IngestError::TooDeep(MAX_LAYERS))
}

/// How many first bytes the sniffer looks at: a tar header needs 512, a HAR's `log`
/// key may sit a few KiB in.
const HEAD_BYTES: usize = 8192;

/// The reader's first `HEAD_BYTES` (fewer only at the end of the input), and a
/// reader that still yields them. A pipe or a decoder hands bytes over in reads of
/// any size, down to one byte, so one `fill_buf` is not enough: the same bytes
/// must be sniffed the same way from a file and from any pipe.
fn fill_head_of<'a>(
    mut reader: Box<dyn BufRead + 'a>,
) -> io::Result<(Vec<u8>, Box<dyn BufRead + 'a>)> {
    let first = loop {
        match reader.fill_buf() {
            Ok(b) => break b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    };
    if first.len() >= HEAD_BYTES || first.is_empty() {
        // The common case (a file): the buffer holds the whole head, nothing to put back.
        let head = first[..first.len().min(HEAD_BYTES)].to_vec();
        return Ok((head, reader));
    }
    let mut head = Vec::with_capacity(HEAD_BYTES);
    let mut failed = None;
    while head.len() < HEAD_BYTES {
        let buf = match reader.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // An error after some bytes (a damaged gzip tail) belongs to the reader
            // that meets it, as it would from a file: hand it over after the head.
            Err(e) if !head.is_empty() => {
                failed = Some(e);
                break;
            }
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        let n = buf.len().min(HEAD_BYTES - head.len());
        head.extend_from_slice(&buf[..n]);
        reader.consume(n);
    }
    let rest: Box<dyn BufRead + 'a> = match failed {
        None => reader,
        Some(e) => Box::new(BufReader::new(FailFirst {
            error: Some(e),
            inner: reader,
        })),
    };
    Ok((head.clone(), Box::new(io::Cursor::new(head).chain(rest))))
}

/// Fails its first read with `error`, then reads `inner`.
pub(crate) struct FailFirst<R> {
    pub(crate) error: Option<io::Error>,
    pub(crate) inner: R,
}

impl<R: Read> Read for FailFirst<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.error.take() {
            Some(e) => Err(e),
            None => self.inner.read(buf),
        }
    }
}

/// Reads one whole input, detecting its format, pushing into `sink`.
pub fn ingest(
    reader: impl Read,
    limits: &Limits,
    sink: &mut dyn Sink,
) -> Result<Format, IngestError> {
    ingest_with_keys(reader, limits, &Arc::default(), sink)
}

/// `ingest`, decrypting captured TLS with the secrets of `keys`.
pub fn ingest_with_keys(
    reader: impl Read,
    limits: &Limits,
    keys: &Arc<tls::KeyLog>,
    sink: &mut dyn Sink,
) -> Result<Format, IngestError> {
    match open(Box::new(reader), limits)? {
        Opened::Stream(r) => read_stream_with_keys(r, limits, keys, sink),
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
    read_stream_with_keys(reader, limits, &Arc::default(), sink)
}

/// `read_stream`, decrypting captured TLS with the secrets of `keys`.
pub fn read_stream_with_keys(
    reader: Box<dyn BufRead + '_>,
    limits: &Limits,
    keys: &Arc<tls::KeyLog>,
    sink: &mut dyn Sink,
) -> Result<Format, IngestError> {
    read_sniffed(reader, limits, keys, sink).map_err(|e| cap_error(e, limits))
}

fn read_sniffed(
    mut reader: Box<dyn BufRead + '_>,
    limits: &Limits,
    keys: &Arc<tls::KeyLog>,
    sink: &mut dyn Sink,
) -> Result<Format, IngestError> {
    let head;
    (head, reader) = fill_head_of(reader)?;
    match sniff(&head) {
        Sniffed::Empty => Err(IngestError::Empty),
        // `open` undid `MAX_LAYERS` levels of compression already; one more is refused.
        Sniffed::Compressed(_) => Err(IngestError::TooDeep(MAX_LAYERS)),
        Sniffed::Unsupported(what) => Err(IngestError::NotSupported(what)),
        Sniffed::Pcap => {
            pcap::read(reader, false, limits, keys, sink)?;
            Ok(Format::Pcap)
        }
        Sniffed::Pcapng => {
            pcap::read(reader, true, limits, keys, sink)?;
            Ok(Format::Pcapng)
        }
        Sniffed::Har => {
            har::read(reader, limits, sink)?;
            Ok(Format::Har)
        }
        Sniffed::Jsonl => {
            let seen = jsonl::read(&mut reader, limits, sink)?;
            // Not one MCP record, only other JSON objects: another program's log. A
            // line shaped like MCP that failed makes it an MCP input with problems.
            if seen.records == 0 && seen.foreign > 0 && seen.broken == 0 {
                return Err(IngestError::NotMcp {
                    records: seen.foreign,
                    what: "lines",
                    expected: "none is an HTTP exchange record, a transcript message, a JSON-RPC message or a client-log event",
                });
            }
            Ok(Format::Jsonl)
        }
        Sniffed::JsonArray => {
            let seen =
                jsonarray::read(&mut reader, limits, sink).map_err(IngestError::Malformed)?;
            // As for JSONL: an array of nothing mcpsift knows is someone else's data.
            if seen.known == 0 && seen.other > 0 {
                return Err(IngestError::NotMcp {
                    records: seen.other,
                    what: "array elements",
                    expected:
                        "none is an MCP Inspector network or protocol entry or a conformance check",
                });
            }
            Ok(Format::JsonArray)
        }
        Sniffed::MessageLog => {
            clientlog::read_message_log(&mut reader, limits.max_record_bytes, sink)?;
            Ok(Format::MessageLog)
        }
        Sniffed::Recorder(kind) => {
            recorders::read(kind, &mut reader, limits, sink)?;
            Ok(match kind {
                recorders::Kind::McpRecorder => Format::McpRecorder,
                recorders::Kind::PyCassette | recorders::Kind::TsCassette => Format::McpCassette,
                recorders::Kind::Vcr | recorders::Kind::VcrNdjson => Format::McpVcr,
                recorders::Kind::ClaudeDesktop => Format::ClaudeDesktopLog,
            })
        }
        Sniffed::Binary(first) => Err(IngestError::Binary(first)),
        Sniffed::Text(what) => Err(IngestError::Unrecognised(what)),
    }
}

/// What the first bytes say.
#[derive(Debug, PartialEq, Eq)]
pub enum Sniffed {
    Empty,
    Compressed(Compression),
    /// A known format mcpsift does not read (zip, 7z).
    Unsupported(&'static str),
    Pcap,
    Pcapng,
    Har,
    Jsonl,
    /// Text lines with one JSON-RPC message each after a prefix (VS Code output channel).
    MessageLog,
    /// A JSON array: MCP Inspector exports, conformance `checks.json`.
    JsonArray,
    /// A recorder's cassette or a Claude Desktop MCP log.
    Recorder(recorders::Kind),
    Binary(String),
    Text(String),
}

/// Detects a format from an input's first bytes.
pub fn sniff(head: &[u8]) -> Sniffed {
    if head.is_empty() {
        return Sniffed::Empty;
    }
    if let Some(c) = Compression::of(head) {
        return Sniffed::Compressed(c);
    }
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Sniffed::Unsupported("a zip archive (unpack it, or make it a tar)");
    }
    if head.starts_with(b"7z\xbc\xaf\x27\x1c") {
        return Sniffed::Unsupported("a 7z archive (unpack it, or make it a tar)");
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
    let json = (text[0] == b'{').then(|| recorders::JsonHead::of(text));
    if let Some(kind) = recorders::sniff_with(text, json.as_ref()) {
        return Sniffed::Recorder(kind);
    }
    let binary = body
        .iter()
        .take(1024)
        .any(|&b| b == 0 || (b < 0x09) || (0x0e..0x20).contains(&b) && b != 0x1b);
    if let Some(json) = &json {
        // A HAR is one JSON document whose top-level object holds "log".
        let har = if text.len() <= HAR_HEAD {
            looks_like_har(&json.doc)
        } else {
            looks_like_har(&recorders::compact(&text[..HAR_HEAD]))
        };
        if json.line.len() <= 1 || har {
            if har {
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
        "the first line is not JSON ({}); mcpsift reads JSONL logs, HAR, pcap/pcapng, MCP Inspector exports, MCP recorders' cassettes and client logs, compressed or in tar archives",
        crate::text::excerpt(first_line.trim())
            .chars()
            .take(60)
            .collect::<String>()
    ))
}

/// How much of a head the HAR test reads (all of what `read_sniffed` sniffs).
const HAR_HEAD: usize = 8192;

/// Whether a compacted head (`JsonHead::doc`) is a HAR's.
fn looks_like_har(compact: &[u8]) -> bool {
    if compact.starts_with(b"{\"log\":") {
        return true;
    }
    // Some writers put another key first (a comment, a vendor `_` key); then the
    // `log` object must show up with one of its own HAR members first.
    ["version", "creator", "browser", "pages", "entries"]
        .iter()
        .any(|k| {
            let needle = format!("\"log\":{{\"{k}\":");
            memchr::memmem::find(compact, needle.as_bytes()).is_some()
        })
}

/// What the decompression of one input may still produce: one budget shared by
/// every compression layer and every archive member inside it, so archives nested
/// in archives cannot multiply `--max-decompressed-bytes`.
#[derive(Debug, Clone)]
pub struct Expansion {
    left: std::sync::Arc<std::sync::atomic::AtomicU64>,
    cap: u64,
}

impl Expansion {
    pub fn new(cap: u64) -> Self {
        Expansion {
            left: std::sync::Arc::new(std::sync::atomic::AtomicU64::new(cap)),
            cap,
        }
    }

    fn left(&self) -> u64 {
        self.left.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn spend(&self, n: u64) {
        // One input is read by one thread; the atomic only makes the budget `Send`.
        let _ = self.left.fetch_update(
            std::sync::atomic::Ordering::Relaxed,
            std::sync::atomic::Ordering::Relaxed,
            |l| Some(l.saturating_sub(n)),
        );
    }
}

/// A reader that fails with `FileTooLarge` once its input's `Expansion` is spent.
struct CappedReader<R> {
    inner: R,
    budget: Expansion,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.budget.left();
        if left == 0 {
            // Probe one byte: exactly `cap` bytes is fine, more is not.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::new(
                    io::ErrorKind::FileTooLarge,
                    format!("decompressed past {} bytes", self.budget.cap),
                )),
            };
        }
        let want = buf.len().min(left.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.budget.spend(n as u64);
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
        assert_eq!(
            sniff(&[0x1f, 0x8b, 8]),
            Sniffed::Compressed(Compression::Gzip)
        );
        assert_eq!(
            sniff(b"BZh91AY&SY"),
            Sniffed::Compressed(Compression::Bzip2)
        );
        assert!(matches!(
            sniff(b"PK\x03\x04\x14\x00"),
            Sniffed::Unsupported(_)
        ));
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
