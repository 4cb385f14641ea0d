//! An input's findings when there are too many to hold: a capture of a server that is
//! down raises one `NON_TERMINAL` per call. A streaming judge moves its findings to an
//! unlinked temporary file in sorted runs of `FINDINGS_IN_MEMORY`; they are read back
//! merged, in the order the judge would have sorted them in memory, when the input's
//! records are written. Counts per kind and severity stay in memory for the summary
//! and `--fail-on`.
//!
//! The encoding is private to this file and lives only as long as the run: no crate
//! is needed for a record this small, and none may outlive the process.

use super::{Finding, Scope};
use crate::jsonrpc::Id;
use crate::model::{FindingKind, Locator, Severity};
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::sync::Arc;

/// Findings a streaming judge holds before it sorts them and moves them to disk:
/// a few MiB, so an input whose every call fails still takes little memory.
pub const FINDINGS_IN_MEMORY: usize = 1 << 14;

/// Bytes read from a run at a time while merging.
const READ_CHUNK: usize = 8 << 10;

/// Findings counted by kind and severity, for summaries and `--fail-on` of findings
/// that are no longer held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FindingCounts(BTreeMap<(FindingKind, Severity), u64>);

impl FindingCounts {
    pub fn add(&mut self, f: &Finding) {
        *self.0.entry((f.kind, f.severity)).or_default() += 1;
    }

    pub fn merge(&mut self, other: &FindingCounts) {
        for (k, n) in &other.0 {
            *self.0.entry(*k).or_default() += n;
        }
    }

    /// Findings whose kind and severity pass `keep`.
    pub fn count(&self, keep: impl Fn(FindingKind, Severity) -> bool) -> u64 {
        self.0
            .iter()
            .filter(|((k, s), _)| keep(*k, *s))
            .map(|(_, n)| n)
            .sum()
    }
}

/// The order findings are reported in: by input, then by the place of the first call
/// they name, then in the rules' order; a stable sort keeps findings that tie as raised.
pub(crate) fn report_order(a: &(Arc<str>, Finding), b: &(Arc<str>, Finding)) -> Ordering {
    key(a).cmp(&key(b))
}

fn key(f: &(Arc<str>, Finding)) -> (&str, Option<&Locator>, Option<usize>) {
    (&f.0, f.1.locators.first(), rank(f.1.kind))
}

fn rank(kind: FindingKind) -> Option<usize> {
    super::rules::RULES.iter().position(|r| r.doc.kind == kind)
}

/// What a finding read back from disk goes through (redaction).
pub type OnRead = Box<dyn Fn(&mut Finding) + Send + Sync>;

/// Findings of one input, partly on disk: sorted runs in a temporary file and a
/// sorted tail in memory (the last run).
pub struct SpilledFindings {
    file: File,
    /// Byte ranges of the runs in `file`, in the order they were written.
    runs: Vec<(u64, u64)>,
    tail: Vec<(Arc<str>, Finding)>,
    counts: FindingCounts,
    /// Applied to each finding read back (redaction, set by the report stage).
    on_read: Option<OnRead>,
}

impl std::fmt::Debug for SpilledFindings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpilledFindings")
            .field("runs", &self.runs.len())
            .field("tail", &self.tail.len())
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl SpilledFindings {
    /// Every finding, on disk or not, counted by kind and severity.
    pub fn counts(&self) -> &FindingCounts {
        &self.counts
    }

    /// Sets what every finding read back goes through before `for_each` sees it
    /// (the report stage's redaction: the findings on disk were never redacted).
    pub fn on_read(&mut self, f: OnRead) {
        self.on_read = Some(f);
    }

    /// Calls `f` with every finding in report order (as `report_order` sorts them,
    /// ties in the order they were raised). An error reading the temporary file, or
    /// one `f` returns, stops it.
    pub fn for_each(&self, mut f: impl FnMut(Finding) -> io::Result<()>) -> io::Result<()> {
        let mut sources: Vec<Source> = self
            .runs
            .iter()
            .map(|&(start, end)| {
                Source::Disk(RunReader {
                    next: start,
                    end,
                    buf: Vec::new(),
                    at: 0,
                    last_input: None,
                    last_scope: None,
                })
            })
            .collect();
        sources.push(Source::Memory(self.tail.iter()));
        // The heap holds each source's head; ties go to the earlier run, which
        // holds the findings raised first.
        let mut heads: Vec<Option<(Arc<str>, Finding)>> = Vec::with_capacity(sources.len());
        let mut heap = BinaryHeap::with_capacity(sources.len());
        for (i, s) in sources.iter_mut().enumerate() {
            let head = s.next(&self.file)?;
            if let Some(h) = &head {
                heap.push(Reverse(HeadKey::of(h, i)));
            }
            heads.push(head);
        }
        while let Some(Reverse(top)) = heap.pop() {
            let i = top.source;
            let next = sources[i].next(&self.file)?;
            if let Some(h) = &next {
                heap.push(Reverse(HeadKey::of(h, i)));
            }
            let (_, mut finding) =
                std::mem::replace(&mut heads[i], next).expect("a source in the heap has a head");
            if let Some(r) = &self.on_read {
                r(&mut finding);
            }
            f(finding)?;
        }
        Ok(())
    }
}

/// A head's place in the merge: the report order, then the source.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct HeadKey {
    input: Arc<str>,
    locator: Option<Locator>,
    rank: Option<usize>,
    source: usize,
}

impl HeadKey {
    fn of(h: &(Arc<str>, Finding), source: usize) -> HeadKey {
        HeadKey {
            input: h.0.clone(),
            locator: h.1.locators.first().cloned(),
            rank: rank(h.1.kind),
            source,
        }
    }
}

enum Source<'a> {
    Disk(RunReader),
    Memory(std::slice::Iter<'a, (Arc<str>, Finding)>),
}

impl Source<'_> {
    fn next(&mut self, file: &File) -> io::Result<Option<(Arc<str>, Finding)>> {
        match self {
            Source::Disk(r) => r.next(file),
            Source::Memory(it) => Ok(it.next().cloned()),
        }
    }
}

/// Reads one run back a chunk at a time.
struct RunReader {
    /// Where the next chunk starts in the file, and where the run ends.
    next: u64,
    end: u64,
    buf: Vec<u8>,
    /// Where the next record starts in `buf`.
    at: usize,
    /// The last input and scope read, shared by the records that repeat them.
    last_input: Option<Arc<str>>,
    last_scope: Option<Scope>,
}

impl RunReader {
    /// Makes `n` bytes from `at` available; false at the end of the run.
    fn fill(&mut self, mut file: &File, n: usize) -> io::Result<bool> {
        while self.buf.len() - self.at < n {
            if self.next >= self.end {
                return Ok(false);
            }
            self.buf.drain(..self.at);
            self.at = 0;
            let want = (self.end - self.next).min(READ_CHUNK.max(n) as u64) as usize;
            let old = self.buf.len();
            self.buf.resize(old + want, 0);
            file.seek(SeekFrom::Start(self.next))?;
            file.read_exact(&mut self.buf[old..])?;
            self.next += want as u64;
        }
        Ok(true)
    }

    fn next(&mut self, file: &File) -> io::Result<Option<(Arc<str>, Finding)>> {
        if !self.fill(file, 4)? {
            return Ok(None);
        }
        let len = u32::from_le_bytes(self.buf[self.at..self.at + 4].try_into().unwrap()) as usize;
        if !self.fill(file, 4 + len)? {
            return Err(corrupt());
        }
        let record = &self.buf[self.at + 4..self.at + 4 + len];
        let mut d = Decoder(record);
        let input = d.str()?;
        let input = match &self.last_input {
            Some(a) if **a == *input => a.clone(),
            _ => self.last_input.insert(Arc::from(input)).clone(),
        };
        let finding = d.finding(&mut self.last_scope)?;
        self.at += 4 + len;
        Ok(Some((input, finding)))
    }
}

fn corrupt() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "a temporary file of findings was changed while the run read it",
    )
}

/// Moves a streaming judge's findings to disk, a sorted run at a time.
#[derive(Default)]
pub(crate) struct Spill {
    file: Option<File>,
    /// Byte ranges of whole runs in `file`, one after another.
    runs: Vec<(u64, u64)>,
    /// Counts of the findings in the runs.
    counts: FindingCounts,
    /// Set once a temporary file could not be made or written: findings then stay in
    /// memory, as they would without a spill.
    failed: bool,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("runs", &self.runs.len())
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl Spill {
    /// Sorts `findings` and moves them to a new run, unless no file can be written.
    pub(crate) fn run(&mut self, findings: &mut Vec<(Arc<str>, Finding)>) {
        if self.failed || findings.is_empty() {
            return;
        }
        findings.sort_by(report_order);
        let mut encoded = Vec::new();
        for f in findings.iter() {
            encode(&mut encoded, f);
        }
        // After the last whole run: a write that failed half way is written over,
        // or (once failed) never read.
        let start = self.runs.last().map_or(0, |r| r.1);
        match self.write(start, &encoded) {
            Ok(()) => {
                self.runs.push((start, start + encoded.len() as u64));
                for (_, f) in findings.iter() {
                    self.counts.add(f);
                }
                findings.clear();
            }
            Err(_) => self.failed = true,
        }
    }

    fn write(&mut self, at: u64, encoded: &[u8]) -> io::Result<()> {
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(tempfile::tempfile()?),
        };
        file.seek(SeekFrom::Start(at))?;
        file.write_all(encoded)
    }

    /// The findings, `tail` (sorted) the last run; `None` when nothing was spilled.
    pub(crate) fn finish(
        self,
        tail: Vec<(Arc<str>, Finding)>,
    ) -> Result<SpilledFindings, Vec<(Arc<str>, Finding)>> {
        let Some(file) = self.file.filter(|_| !self.runs.is_empty()) else {
            return Err(tail);
        };
        let mut counts = self.counts;
        for (_, f) in &tail {
            counts.add(f);
        }
        Ok(SpilledFindings {
            file,
            runs: self.runs,
            tail,
            counts,
            on_read: None,
        })
    }
}

// The record: a little-endian u32 length, then the input, kind, severity, scope,
// ids, calls, locators and detail.

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n.min(u32::MAX as usize) as u32).to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(&n.to_le_bytes());
}

fn put_option(out: &mut Vec<u8>, n: Option<u64>) {
    out.push(u8::from(n.is_some()));
    put_u64(out, n.unwrap_or(0));
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn encode(out: &mut Vec<u8>, (input, f): &(Arc<str>, Finding)) {
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    put_str(out, input);
    out.push(
        FindingKind::ALL
            .iter()
            .position(|k| *k == f.kind)
            .unwrap_or(0) as u8,
    );
    out.push(
        Severity::ALL
            .iter()
            .position(|s| *s == f.severity)
            .unwrap_or(0) as u8,
    );
    put_str(out, f.scope.as_str());
    put_u32(out, f.ids.len());
    for id in &f.ids {
        put_str(out, id.raw());
    }
    put_u32(out, f.calls.len());
    for c in &f.calls {
        put_u64(out, *c as u64);
    }
    put_u32(out, f.locators.len());
    for l in &f.locators {
        match l {
            Locator::Line { line } => {
                out.push(0);
                put_u64(out, *line);
            }
            Locator::Entry { entry } => {
                out.push(1);
                put_u64(out, *entry);
            }
            Locator::Frames { request, response } => {
                out.push(2);
                put_u64(out, *request);
                put_option(out, *response);
            }
            Locator::TlsFrames {
                request,
                response,
                tcp_stream,
            } => {
                out.push(3);
                put_u64(out, *request);
                put_option(out, *response);
                put_u64(out, *tcp_stream);
            }
            Locator::Input => out.push(4),
        }
    }
    put_str(out, &f.detail);
    let len = (out.len() - start - 4) as u32;
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
}

struct Decoder<'a>(&'a [u8]);

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(corrupt());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> io::Result<usize> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()) as usize)
    }

    fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }

    fn str(&mut self) -> io::Result<&'a str> {
        let n = self.u32()?;
        std::str::from_utf8(self.take(n)?).map_err(|_| corrupt())
    }

    /// A count of items that each take at least `min` bytes, checked against what is
    /// left, so a damaged count cannot reserve memory.
    fn count(&mut self, min: usize) -> io::Result<usize> {
        let n = self.u32()?;
        if n.saturating_mul(min) > self.0.len() {
            return Err(corrupt());
        }
        Ok(n)
    }

    fn option(&mut self) -> io::Result<Option<u64>> {
        let some = self.u8()? != 0;
        let n = self.u64()?;
        Ok(some.then_some(n))
    }

    fn finding(&mut self, last_scope: &mut Option<Scope>) -> io::Result<Finding> {
        let kind = *FindingKind::ALL
            .get(self.u8()? as usize)
            .ok_or_else(corrupt)?;
        let severity = *Severity::ALL.get(self.u8()? as usize).ok_or_else(corrupt)?;
        let scope = self.str()?;
        let scope = match last_scope {
            Some(s) if s.as_str() == scope => s.clone(),
            _ => last_scope.insert(Scope::reread(scope)).clone(),
        };
        let n = self.count(4)?;
        let ids = (0..n)
            .map(|_| Ok(Id::from_raw(self.str()?)))
            .collect::<io::Result<_>>()?;
        let n = self.count(8)?;
        let calls = (0..n)
            .map(|_| Ok(self.u64()? as usize))
            .collect::<io::Result<_>>()?;
        let n = self.count(1)?;
        let locators = (0..n)
            .map(|_| {
                Ok(match self.u8()? {
                    0 => Locator::Line { line: self.u64()? },
                    1 => Locator::Entry { entry: self.u64()? },
                    2 => Locator::Frames {
                        request: self.u64()?,
                        response: self.option()?,
                    },
                    3 => Locator::TlsFrames {
                        request: self.u64()?,
                        response: self.option()?,
                        tcp_stream: self.u64()?,
                    },
                    4 => Locator::Input,
                    _ => return Err(corrupt()),
                })
            })
            .collect::<io::Result<_>>()?;
        let detail = self.str()?.to_owned();
        Ok(Finding {
            kind,
            severity,
            scope,
            ids,
            calls,
            locators,
            detail,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn finding(kind: FindingKind, locators: Vec<Locator>, detail: &str) -> Finding {
        Finding {
            kind,
            severity: Severity::ALL[detail.len() % Severity::ALL.len()],
            scope: Scope::http("127.0.0.1:3000", 1),
            ids: vec![Id::number(7), Id::from_raw(r#""a\"b""#)],
            calls: vec![3, usize::MAX >> 1],
            locators,
            detail: detail.to_owned(),
        }
    }

    /// Every finding read back, in order.
    fn read_back(s: &SpilledFindings) -> Vec<Finding> {
        let mut out = Vec::new();
        s.for_each(|f| {
            out.push(f);
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn every_field_comes_back_as_written() {
        let locators = vec![
            Locator::Line { line: 1 },
            Locator::Entry { entry: u64::MAX },
            Locator::Frames {
                request: 4,
                response: None,
            },
            Locator::Frames {
                request: 4,
                response: Some(u64::MAX),
            },
            Locator::TlsFrames {
                request: 9,
                response: Some(0),
                tcp_stream: 2,
            },
            Locator::Input,
        ];
        let written = vec![
            (
                Arc::from("a.pcap"),
                finding(FindingKind::ALL[0], locators, "é ✓ \0"),
            ),
            (
                Arc::from("a.pcap"),
                Finding {
                    ids: vec![],
                    calls: vec![],
                    locators: vec![],
                    ..finding(*FindingKind::ALL.last().unwrap(), vec![], "")
                },
            ),
        ];
        let mut spill = Spill::default();
        spill.run(&mut written.clone());
        let spilled = spill.finish(Vec::new()).unwrap();
        let mut expected = written;
        expected.sort_by(report_order);
        let expected: Vec<Finding> = expected.into_iter().map(|(_, f)| f).collect();
        assert_eq!(read_back(&spilled), expected);
        assert_eq!(spilled.counts().count(|_, _| true), 2);
    }

    #[test]
    fn nothing_spilled_hands_the_findings_back() {
        let tail = vec![(Arc::from(""), finding(FindingKind::ALL[1], vec![], "x"))];
        let mut spill = Spill::default();
        spill.run(&mut Vec::new());
        assert_eq!(spill.finish(tail.clone()).unwrap_err(), tail);
    }

    #[test]
    fn a_damaged_record_is_an_error() {
        let mut encoded = Vec::new();
        encode(
            &mut encoded,
            &(
                Arc::from("in"),
                finding(FindingKind::ALL[0], vec![], "detail"),
            ),
        );
        let body = &encoded[4..];
        let decode = |b: &[u8]| {
            let mut d = Decoder(b);
            d.str()?;
            d.finding(&mut None)
        };
        assert!(decode(body).is_ok());
        for cut in 0..body.len() {
            assert!(decode(&body[..cut]).is_err(), "{cut}");
        }
        // A count far past the record's end reserves nothing.
        let mut huge = body.to_vec();
        let ids_at = 4 + 2 + 2 + 4 + Scope::http("127.0.0.1:3000", 1).len();
        huge[ids_at..ids_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut d = Decoder(&huge);
        d.str().unwrap();
        assert!(d.finding(&mut None).is_err());
    }

    proptest! {
        /// Runs of any size, sorted and merged, give the whole list sorted stably:
        /// ties (same place, same rule) stay in the order they were raised.
        #[test]
        fn runs_merged_equal_one_stable_sort(
            raised in proptest::collection::vec((0u64..6, 0usize..3, 0usize..2), 0..300),
            run in 1usize..40,
        ) {
            let all: Vec<(Arc<str>, Finding)> = raised
                .iter()
                .enumerate()
                .map(|(n, &(line, kind, input))| {
                    let input: Arc<str> = Arc::from(["", "b.jsonl"][input]);
                    (input, finding(FindingKind::ALL[kind], vec![Locator::Line { line }], &n.to_string()))
                })
                .collect();
            let mut spill = Spill::default();
            let mut held = Vec::new();
            for f in all.iter().cloned() {
                held.push(f);
                if held.len() >= run {
                    spill.run(&mut held);
                }
            }
            held.sort_by(report_order);
            let mut expected = all.clone();
            expected.sort_by(report_order);
            let expected: Vec<Finding> = expected.into_iter().map(|(_, f)| f).collect();
            let got = match spill.finish(held) {
                Ok(s) => {
                    prop_assert_eq!(s.counts().count(|_, _| true), all.len() as u64);
                    read_back(&s)
                }
                Err(kept) => kept.into_iter().map(|(_, f)| f).collect(),
            };
            prop_assert_eq!(got, expected);
        }

        /// Bytes that are no record are refused or read, never a panic.
        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut d = Decoder(&bytes);
            let _ = d.str().and_then(|_| d.finding(&mut None));
        }
    }
}
