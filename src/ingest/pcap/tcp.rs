//! TCP reassembly for one direction of one connection: segments in capture order in,
//! contiguous stream bytes out, in sequence order, with every hole reported as a gap
//! of known length. Written here because no crate combines delivery on arrival (not
//! on ACK: offline, one side may be missing), first-copy-wins overlaps with conflict
//! counting, and hard per-connection caps.
//!
//! Sequence numbers are turned into 64-bit stream offsets by their signed distance
//! from the next expected sequence number, so wrap-around at 2^32 is invisible.
//! Data after a hole is never joined to data before it: the hole is delivered as
//! `Chunk::Gap` once it is given up on (buffer cap, reset, end of capture).

use crate::model::Timestamp;
use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};

/// Default cap on out-of-order bytes held per direction.
pub const DEFAULT_OOO_CAP: usize = 1 << 20;
/// Most segments held out of order per direction: tiny or empty-but-cut segments
/// would otherwise grow the buffer without growing its byte count.
const MAX_HELD_SEGMENTS: usize = 16 << 10;
/// What holding one out-of-order piece costs besides its bytes (`HalfStream::held`).
const PIECE_COST: usize = 112;
/// Delivered bytes kept to compare retransmissions against, at most (the reader
/// narrows the window when many connections are live: `HalfStream::set_window`).
pub const RECENT: usize = 64 << 10;

/// What a direction delivers, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// Contiguous bytes; `ts` is when they became deliverable, `frame` the frame
    /// that carried their first byte. Borrowed from the packet in the common case
    /// (the next bytes in order, nothing held), so most payload is never copied here.
    Data {
        bytes: Cow<'a, [u8]>,
        ts: Timestamp,
        frame: u64,
    },
    /// `len` bytes that the capture does not hold.
    Gap { len: u64 },
}

/// What one segment delivers: nearly always one piece of data, so up to two are kept
/// without a heap allocation (a `Vec` here cost an allocation per data packet).
pub type Chunks<'a> = smallvec::SmallVec<[Chunk<'a>; 2]>;

/// Held pieces that touch are merged (the smaller into the larger, so each byte moves
/// O(log n) times), so a segment over a held range meets one piece, not thousands.
#[derive(Debug)]
enum Piece {
    Bytes(VecDeque<u8>),
    /// Bytes the packet carried but the capture cut (caplen < len).
    Lost(u64),
}

impl Piece {
    fn len(&self) -> u64 {
        match self {
            Piece::Bytes(b) => b.len() as u64,
            Piece::Lost(n) => *n,
        }
    }
}

#[derive(Debug)]
struct Seg {
    piece: Piece,
    frame: u64,
}

/// One TCP segment as the reassembler needs it.
#[derive(Debug, Clone, Copy)]
pub struct Segment<'a> {
    pub seq: u32,
    pub syn: bool,
    pub fin: bool,
    pub data: &'a [u8],
    /// Payload bytes the packet had beyond `data` (snap length).
    pub missing: u64,
    pub ts: Timestamp,
    pub frame: u64,
}

/// Counters a person may want to hear about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Bytes received again after they were already held or delivered.
    pub duplicate_bytes: u64,
    /// Of those, bytes whose second copy differed from the first (first wins).
    pub conflicting_bytes: u64,
    /// Bytes given up on: lost from the capture.
    pub gap_bytes: u64,
    /// Times the out-of-order buffer cap forced a hole to be given up on.
    pub cap_hits: u64,
    /// Times the reader's budget over all connections did (`give_up_holes`).
    pub budget_hits: u64,
    /// Bytes that arrived before the first byte this direction was synced to.
    pub before_start: u64,
    /// Held pieces looked at while inserting and merging: tests check it stays linear
    /// in the segments, however they overlap.
    pub pieces_visited: u64,
}

/// One direction of a TCP connection.
#[derive(Debug)]
pub struct HalfStream {
    /// Sequence number of the byte at offset `next`, once synced.
    next_seq: Option<u32>,
    /// Stream offset of the next byte to deliver.
    next: u64,
    pending: BTreeMap<u64, Seg>,
    pending_bytes: usize,
    cap: usize,
    /// The last `RECENT` bytes delivered, in a ring: nothing moves as it slides
    /// (a `Vec` trimmed by half each time it doubled held up to twice as much and
    /// moved the half it kept).
    recent: VecDeque<u8>,
    /// Offset of `recent[0]`.
    recent_start: u64,
    /// How many delivered bytes `recent` keeps (at most `RECENT`).
    window: usize,
    /// Offset of the FIN, once seen.
    fin_at: Option<u64>,
    pub stats: Stats,
}

impl HalfStream {
    pub fn new(cap: usize) -> HalfStream {
        HalfStream {
            next_seq: None,
            next: 0,
            pending: BTreeMap::new(),
            pending_bytes: 0,
            cap,
            recent: VecDeque::new(),
            recent_start: 0,
            window: RECENT,
            fin_at: None,
            stats: Stats::default(),
        }
    }

    /// Drops whatever is still held (bytes after a FIN on a closed connection) and
    /// says how many bytes that was.
    pub fn discard_held(&mut self) -> u64 {
        let n = self.pending.values().map(|s| s.piece.len()).sum();
        self.pending.clear();
        self.pending_bytes = 0;
        n
    }

    /// What the bytes held out of order cost, waiting behind a hole: each piece is
    /// a map entry and an allocation besides its bytes (measured: about 115 bytes for
    /// a 1-byte piece), so that pieces of a byte each count for what they hold.
    pub fn held(&self) -> usize {
        self.pending_bytes + self.pending.len() * PIECE_COST
    }

    /// How many delivered bytes to keep for retransmissions to be compared against
    /// (at most `RECENT`); a smaller window applies from the next delivery on.
    pub fn set_window(&mut self, window: usize) {
        self.window = window.min(RECENT);
    }

    /// Gives up on every hole, delivering what waited behind them with gaps in
    /// between, as the out-of-order cap does: for a reader over its budget of bytes
    /// held over all connections. The FIN's place is kept; more may still come.
    pub fn give_up_holes(&mut self, ts: Timestamp, out: &mut Chunks<'_>) {
        if self.pending.is_empty() {
            return;
        }
        self.stats.budget_hits += 1;
        while let Some((&k, _)) = self.pending.first_key_value() {
            self.skip_to(k, out);
            self.drain(ts, out);
        }
    }

    /// True once every byte up to the FIN was delivered or given up on.
    pub fn finished(&self) -> bool {
        self.fin_at.is_some_and(|f| f <= self.next)
    }

    /// Takes one segment; pushes whatever became contiguous to `out`.
    pub fn push<'a>(&mut self, seg: Segment<'a>, out: &mut Chunks<'a>) {
        let mut seq = seg.seq;
        if seg.syn {
            // The SYN takes one sequence number; data (rare) starts after it.
            seq = seq.wrapping_add(1);
            if self.next_seq.is_none() || self.next == 0 && self.pending.is_empty() {
                self.next_seq = Some(seq);
            }
        }
        let base = *self.next_seq.get_or_insert(seq);
        let delta = seq.wrapping_sub(base) as i32 as i64;
        let start = (self.next as i64).saturating_add(delta);
        let len = seg.data.len() as u64 + seg.missing;
        let end = start.saturating_add(len as i64);
        if seg.fin && self.fin_at.is_none() && end >= 0 {
            self.fin_at = Some(end as u64);
        }
        if start == self.next as i64
            && seg.missing == 0
            && !seg.data.is_empty()
            && self.pending.is_empty()
        {
            // The common case, the next bytes in order with nothing held: delivered
            // as `insert` then `drain` would, without the trip through the map.
            self.deliver(Cow::Borrowed(seg.data), seg.ts, seg.frame, out);
        } else if len > 0 {
            self.insert(start, seg.data, seg.missing, seg.frame);
            self.drain(seg.ts, out);
            self.enforce_cap(seg.ts, out);
        }
    }

    /// Gives up on every hole: delivers what is held, with gaps between, and a gap
    /// for bytes missing before the FIN. Used on reset and at end of capture.
    pub fn flush(&mut self, ts: Timestamp, out: &mut Chunks<'_>) {
        while let Some((&k, _)) = self.pending.first_key_value() {
            self.skip_to(k, out);
            self.drain(ts, out);
        }
        if let Some(f) = self.fin_at {
            self.skip_to(f, out);
        }
    }

    fn skip_to(&mut self, to: u64, out: &mut Chunks<'_>) {
        if to > self.next {
            let len = to - self.next;
            self.stats.gap_bytes += len;
            out.push(Chunk::Gap { len });
            self.advance(len);
            // What comes after the gap is not next to what came before it.
            self.forget_recent();
        }
    }

    fn advance(&mut self, len: u64) {
        self.next += len;
        if let Some(s) = self.next_seq.as_mut() {
            *s = s.wrapping_add(len as u32);
        }
    }

    fn insert(&mut self, start: i64, data: &[u8], missing: u64, frame: u64) {
        let total = data.len() as u64 + missing;
        let mut start = start;
        let mut data = data;
        let mut missing = missing;
        let mut total = total;
        if start < 0 {
            // Bytes before the point this direction was synced to (capture began
            // mid-connection and a retransmission of older data showed up).
            let skip = start.unsigned_abs().min(total);
            self.stats.before_start += skip;
            let from_data = (skip as usize).min(data.len());
            data = data.get(from_data..).unwrap_or(&[]);
            missing -= skip - from_data as u64;
            total -= skip;
            start = 0;
        }
        let mut start = start as u64;
        if start < self.next {
            // Already delivered: a retransmission. Compare with what we kept.
            let dup = (self.next - start).min(total);
            self.stats.duplicate_bytes += dup;
            let dup_data = (dup as usize).min(data.len());
            self.stats.conflicting_bytes += self.conflicts(start, &data[..dup_data]);
            data = data.get(dup_data..).unwrap_or(&[]);
            missing -= dup - dup_data as u64;
            total -= dup;
            start += dup;
        }
        if total == 0 {
            return;
        }
        let end = start + total;
        // Pieces of [start, end) not yet held; held bytes win (first copy).
        let mut gaps: Vec<(u64, u64)> = Vec::new();
        let mut cursor = start;
        let first = self
            .pending
            .range(..start)
            .next_back()
            .map(|(&k, _)| k)
            .unwrap_or(start);
        for (&k, held) in self.pending.range(first..end) {
            self.stats.pieces_visited += 1;
            let k_end = k + held.piece.len();
            if k_end <= cursor {
                continue;
            }
            if k > cursor {
                gaps.push((cursor, k));
            }
            let o_start = k.max(cursor);
            let o_end = k_end.min(end);
            self.stats.duplicate_bytes += o_end - o_start;
            if let Piece::Bytes(old) = &held.piece {
                for off in o_start..o_end {
                    let a = old.get((off - k) as usize);
                    let b = data.get((off - start) as usize);
                    if let (Some(a), Some(b)) = (a, b) {
                        if a != b {
                            self.stats.conflicting_bytes += 1;
                        }
                    }
                }
            }
            cursor = cursor.max(k_end);
        }
        if cursor < end {
            gaps.push((cursor, end));
        }
        let data_end = start + data.len() as u64;
        for (a, b) in gaps {
            // Split each new piece into its captured part and its lost part.
            if a < data_end {
                let upto = b.min(data_end);
                let bytes: VecDeque<u8> = data
                    .get((a - start) as usize..(upto - start) as usize)
                    .unwrap_or(&[])
                    .iter()
                    .copied()
                    .collect();
                self.pending_bytes += bytes.len();
                self.pending.insert(
                    a,
                    Seg {
                        piece: Piece::Bytes(bytes),
                        frame,
                    },
                );
            }
            let lost_from = a.max(data_end);
            if lost_from < b && missing > 0 {
                self.pending.insert(
                    lost_from,
                    Seg {
                        piece: Piece::Lost(b - lost_from),
                        frame,
                    },
                );
            }
        }
        self.merge(start, end);
    }

    /// Merges held pieces of the same kind that touch, around `[from, to]`.
    fn merge(&mut self, from: u64, to: u64) {
        let lo = self
            .pending
            .range(..=from)
            .next_back()
            .map_or(from, |(&k, _)| k);
        let keys: Vec<u64> = self.pending.range(lo..=to).map(|(&k, _)| k).collect();
        self.stats.pieces_visited += keys.len() as u64;
        let mut cur: Option<u64> = None;
        for k in keys {
            let Some(c) = cur else {
                cur = Some(k);
                continue;
            };
            let mergeable = match (self.pending.get(&c), self.pending.get(&k)) {
                (Some(l), Some(r)) => {
                    c + l.piece.len() == k
                        && matches!(
                            (&l.piece, &r.piece),
                            (Piece::Bytes(_), Piece::Bytes(_)) | (Piece::Lost(_), Piece::Lost(_))
                        )
                }
                _ => false,
            };
            if !mergeable {
                cur = Some(k);
                continue;
            }
            let (Some(right), Some(left)) = (self.pending.remove(&k), self.pending.get_mut(&c))
            else {
                continue;
            };
            match (&mut left.piece, right.piece) {
                (Piece::Lost(a), Piece::Lost(b)) => *a += b,
                (Piece::Bytes(a), Piece::Bytes(mut b)) => {
                    // The smaller side moves: each byte moves O(log n) times in all.
                    if a.len() >= b.len() {
                        a.extend(b);
                    } else {
                        for &x in a.iter().rev() {
                            b.push_front(x);
                        }
                        *a = b;
                    }
                }
                _ => {} // kinds were checked above
            }
        }
    }

    /// Bytes of `data`, delivered before from offset `start` on, that differ from
    /// the copy the window still keeps of them (older bytes are not compared).
    fn conflicts(&self, start: u64, data: &[u8]) -> u64 {
        let from = start.max(self.recent_start);
        let (Ok(skip), Ok(at)) = (
            usize::try_from(from - start),
            usize::try_from(from - self.recent_start),
        ) else {
            return 0;
        };
        let Some(data) = data.get(skip..) else {
            return 0;
        };
        let at = at.min(self.recent.len());
        self.recent
            .range(at..)
            .zip(data)
            .filter(|(a, b)| a != b)
            .count() as u64
    }

    fn forget_recent(&mut self) {
        self.recent.clear();
        self.recent_start = self.next;
    }

    fn drain(&mut self, ts: Timestamp, out: &mut Chunks<'_>) {
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() != self.next {
                break;
            }
            let seg = entry.remove();
            match seg.piece {
                Piece::Bytes(bytes) => {
                    let bytes = Vec::from(bytes);
                    self.pending_bytes -= bytes.len();
                    self.deliver(Cow::Owned(bytes), ts, seg.frame, out);
                }
                Piece::Lost(n) => {
                    self.stats.gap_bytes += n;
                    out.push(Chunk::Gap { len: n });
                    self.advance(n);
                    self.forget_recent();
                }
            }
        }
    }

    /// Hands on the next `bytes` of the stream.
    fn deliver<'a>(
        &mut self,
        bytes: Cow<'a, [u8]>,
        ts: Timestamp,
        frame: u64,
        out: &mut Chunks<'a>,
    ) {
        self.advance(bytes.len() as u64);
        self.remember(&bytes);
        // Join with the previous chunk when it is contiguous and in the same
        // delivery, so callers see fewer, larger pieces.
        if let Some(Chunk::Data { bytes: prev, .. }) = out.last_mut() {
            prev.to_mut().extend_from_slice(&bytes);
        } else {
            out.push(Chunk::Data { bytes, ts, frame });
        }
    }

    /// Keeps `bytes`, just delivered, in the window (`next` already counts them).
    fn remember(&mut self, bytes: &[u8]) {
        let window = self.window;
        let bytes = &bytes[bytes.len().saturating_sub(window)..];
        let over = (self.recent.len() + bytes.len()).saturating_sub(window);
        if over > 0 {
            self.recent.drain(..over);
        }
        if self.recent.capacity() > 2 * window {
            // The window narrowed (many connections went live): give back the room.
            self.recent.shrink_to(window);
        }
        // Grown by doubling, but never past the window.
        let need = self.recent.len() + bytes.len();
        if need > self.recent.capacity() {
            let want = need.max(2 * self.recent.capacity()).min(window);
            if self.recent.capacity() == 0 {
                // A stream's first bytes (once per connection): allocated at their
                // size directly, not through the growth path.
                self.recent = VecDeque::with_capacity(want);
            } else {
                self.recent.reserve_exact(want - self.recent.len());
            }
        }
        self.recent.extend(bytes);
        self.recent_start = self.next - self.recent.len() as u64;
    }

    fn enforce_cap(&mut self, ts: Timestamp, out: &mut Chunks<'_>) {
        while self.pending_bytes > self.cap || self.pending.len() > MAX_HELD_SEGMENTS {
            let Some((&k, _)) = self.pending.first_key_value() else {
                break;
            };
            self.stats.cap_hits += 1;
            self.skip_to(k, out);
            self.drain(ts, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seg(seq: u32, data: &[u8]) -> Segment<'_> {
        Segment {
            seq,
            syn: false,
            fin: false,
            data,
            missing: 0,
            ts: Timestamp(0),
            frame: 1,
        }
    }

    /// The stream as text, gaps as `<gap N>`.
    fn render(chunks: &[Chunk<'_>]) -> String {
        let mut s = String::new();
        for c in chunks {
            match c {
                Chunk::Data { bytes, .. } => s.push_str(&String::from_utf8_lossy(bytes)),
                Chunk::Gap { len } => s.push_str(&format!("<gap {len}>")),
            }
        }
        s
    }

    #[test]
    fn in_order_out_of_order_and_retransmitted() {
        let mut h = HalfStream::new(DEFAULT_OOO_CAP);
        let mut out = Chunks::new();
        h.push(
            Segment {
                syn: true,
                ..seg(99, b"")
            },
            &mut out,
        );
        h.push(seg(106, b"world"), &mut out);
        assert!(out.is_empty());
        h.push(seg(100, b"hello "), &mut out);
        h.push(seg(100, b"hello "), &mut out);
        assert_eq!(render(&out), "hello world");
        assert_eq!(h.stats.duplicate_bytes, 6);
        assert_eq!(h.stats.conflicting_bytes, 0);
    }

    #[test]
    fn overlap_first_copy_wins_and_conflicts_are_counted() {
        let mut h = HalfStream::new(DEFAULT_OOO_CAP);
        let mut out = Chunks::new();
        h.push(seg(1000, b"ab"), &mut out);
        h.push(seg(1004, b"EFGH"), &mut out); // held
        h.push(seg(1002, b"cdXY"), &mut out); // overlaps "EF" with "XY"
        h.push(seg(1000, b"aZ"), &mut out); // retransmission, one byte differs
        assert_eq!(render(&out), "abcdEFGH");
        assert_eq!(h.stats.conflicting_bytes, 3);
    }

    #[test]
    fn sequence_wraps_around() {
        let mut h = HalfStream::new(DEFAULT_OOO_CAP);
        let mut out = Chunks::new();
        h.push(seg(u32::MAX - 2, b"abc"), &mut out);
        h.push(seg(3, b"ghi"), &mut out);
        h.push(seg(0, b"def"), &mut out);
        assert_eq!(render(&out), "abcdefghi");
    }

    #[test]
    fn holes_become_gaps_on_flush_and_on_cap() {
        let mut h = HalfStream::new(DEFAULT_OOO_CAP);
        let mut out = Chunks::new();
        h.push(seg(0, b"ab"), &mut out);
        h.push(
            Segment {
                fin: true,
                ..seg(5, b"fg")
            },
            &mut out,
        );
        assert!(!h.finished());
        h.flush(Timestamp(1), &mut out);
        assert_eq!(render(&out), "ab<gap 3>fg");
        assert!(h.finished());

        let mut h = HalfStream::new(4);
        let mut out = Chunks::new();
        h.push(seg(0, b"a"), &mut out);
        h.push(seg(3, b"xyz"), &mut out);
        h.push(seg(6, b"uv"), &mut out);
        assert_eq!(render(&out), "a<gap 2>xyzuv");
        assert_eq!(h.stats.cap_hits, 1);

        // Many cut segments with no captured payload: held by count, not bytes.
        let mut h = HalfStream::new(DEFAULT_OOO_CAP);
        let mut out = Chunks::new();
        h.push(seg(0, b"a"), &mut out);
        for i in 0..(MAX_HELD_SEGMENTS as u32 + 10) {
            h.push(
                Segment {
                    missing: 1,
                    ..seg(2 + 2 * i, b"")
                },
                &mut out,
            );
        }
        assert!(h.pending.len() <= MAX_HELD_SEGMENTS);
        assert!(h.stats.cap_hits > 0);
    }

    #[test]
    fn a_retransmission_after_a_given_up_hole_is_compared_with_its_own_bytes() {
        // The hole at 1..3 is given up at the cap; "xyz" sent again is no conflict.
        let mut h = HalfStream::new(4);
        let mut out = Chunks::new();
        h.push(seg(0, b"a"), &mut out);
        h.push(seg(3, b"xyz"), &mut out);
        h.push(seg(6, b"uv"), &mut out);
        h.push(seg(3, b"xyz"), &mut out);
        h.push(seg(6, b"uW"), &mut out);
        assert_eq!(render(&out), "a<gap 2>xyzuv");
        assert_eq!(h.stats.duplicate_bytes, 5);
        assert_eq!(h.stats.conflicting_bytes, 1);
    }

    #[test]
    fn retransmissions_are_compared_within_the_last_window_delivered() {
        let stream: Vec<u8> = (0..3 * RECENT + 100).map(|i| (i % 251) as u8).collect();
        let changed: Vec<u8> = stream.iter().map(|b| b ^ 1).collect();
        let mut h = HalfStream::new(DEFAULT_OOO_CAP);
        let mut out = Chunks::new();
        // Delivered in pieces of every size around the window's.
        let mut at = 0;
        for len in [1, RECENT - 1, 7, RECENT, 3, RECENT + 5, 1000]
            .into_iter()
            .cycle()
        {
            if at == stream.len() {
                break;
            }
            let end = (at + len).min(stream.len());
            h.push(seg(at as u32, &stream[at..end]), &mut out);
            at = end;
        }
        // The last RECENT bytes, changed: every byte is a conflict; older bytes
        // sent again are duplicates, not compared.
        let from = stream.len() - RECENT;
        h.push(seg(from as u32, &changed[from..]), &mut out);
        assert_eq!(h.stats.conflicting_bytes, RECENT as u64);
        h.push(seg(0, &changed[..from]), &mut out);
        assert_eq!(h.stats.conflicting_bytes, RECENT as u64);
        assert_eq!(h.stats.duplicate_bytes, stream.len() as u64);
        assert!(h.recent.len() <= RECENT && h.recent.capacity() <= RECENT);
    }

    /// With many connections live the reader narrows each window: the room is given
    /// back, and a retransmission is compared only within the narrower window.
    #[test]
    fn a_narrowed_window_gives_back_its_room() {
        let stream: Vec<u8> = (0..2 * RECENT).map(|i| (i % 251) as u8).collect();
        let changed: Vec<u8> = stream.iter().map(|b| b ^ 1).collect();
        let mut h = HalfStream::new(DEFAULT_OOO_CAP);
        let mut out = Chunks::new();
        h.push(seg(0, &stream[..RECENT]), &mut out);
        assert_eq!(h.recent.len(), RECENT);
        h.set_window(1000);
        h.push(seg(RECENT as u32, &stream[RECENT..]), &mut out);
        assert_eq!(h.recent.len(), 1000);
        assert!(h.recent.capacity() <= 2000, "{}", h.recent.capacity());
        let end = stream.len();
        h.push(seg((end - 1500) as u32, &changed[end - 1500..]), &mut out);
        assert_eq!(h.stats.conflicting_bytes, 1000);
        assert_eq!(h.stats.duplicate_bytes, 1500);
        // No window: nothing kept, nothing compared.
        h.set_window(0);
        h.push(seg(end as u32, b"more"), &mut out);
        assert_eq!(h.recent.capacity(), 0);
        h.push(seg(end as u32, b"MORE"), &mut out);
        assert_eq!(h.stats.conflicting_bytes, 1000);
    }

    #[test]
    fn snapped_packet_leaves_a_gap_of_its_missing_bytes() {
        let mut h = HalfStream::new(DEFAULT_OOO_CAP);
        let mut out = Chunks::new();
        h.push(
            Segment {
                missing: 4,
                ..seg(0, b"abc")
            },
            &mut out,
        );
        h.push(seg(7, b"hi"), &mut out);
        assert_eq!(render(&out), "abc<gap 4>hi");
    }

    /// Pieces visited to hold `n` one-byte segments behind a hole, then `n`
    /// retransmissions of the whole held range.
    fn visits_for(n: u32) -> u64 {
        let data: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
        let mut h = HalfStream::new(DEFAULT_OOO_CAP);
        let mut out = Chunks::new();
        h.push(seg(0, b"a"), &mut out);
        // Byte 1 is the hole; bytes 2.. arrive one segment each, in reverse order
        // (the worst case for merging).
        for i in (0..n).rev() {
            h.push(seg(2 + i, &data[i as usize..i as usize + 1]), &mut out);
        }
        for _ in 0..n {
            h.push(seg(2, &data), &mut out);
        }
        assert_eq!(h.pending.len(), 1, "held pieces that touch are one piece");
        assert_eq!(render(&out), "a");
        h.push(seg(1, b"z"), &mut out);
        assert_eq!(render(&out).len(), 2 + n as usize);
        h.stats.pieces_visited
    }

    #[test]
    fn overlapping_segments_do_not_rescan_every_held_piece() {
        // Linear: doubling the segments doubles the work (a rescan per segment would
        // quadruple it).
        let (small, large) = (visits_for(1000), visits_for(2000));
        assert!(large <= small * 2 + 16, "{small} → {large}");
        assert!(
            large <= 8 * 4000,
            "{large} pieces visited for 4000 segments"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
        /// Any segmentation, order and duplication of a stream reassembles to it.
        #[test]
        fn any_segmentation_and_order(
            data in proptest::collection::vec(any::<u8>(), 1..300),
            cuts in proptest::collection::vec(1usize..40, 1..40),
            order in proptest::collection::vec(any::<u32>(), 40),
            dups in proptest::collection::vec(any::<bool>(), 40),
            isn in any::<u32>(),
        ) {
            let mut pieces = Vec::new();
            let mut at = 0usize;
            for c in cuts.iter().cycle() {
                if at >= data.len() { break; }
                let end = (at + c).min(data.len());
                pieces.push((at, end));
                at = end;
            }
            let mut shuffled: Vec<(usize, (usize, usize))> = pieces
                .iter()
                .enumerate()
                .map(|(i, p)| (order.get(i).copied().unwrap_or(0) as usize, *p))
                .collect();
            shuffled.sort();
            let mut h = HalfStream::new(DEFAULT_OOO_CAP);
            let mut out = Chunks::new();
            h.push(Segment { syn: true, ..seg(isn, b"") }, &mut out);
            for (i, (_, (a, b))) in shuffled.iter().enumerate() {
                let s = seg(isn.wrapping_add(1).wrapping_add(*a as u32), &data[*a..*b]);
                h.push(s, &mut out);
                if dups.get(i).copied().unwrap_or(false) {
                    h.push(s, &mut out);
                }
            }
            let mut got = Vec::new();
            for c in &out {
                match c {
                    Chunk::Data { bytes, .. } => got.extend_from_slice(bytes),
                    Chunk::Gap { .. } => prop_assert!(false, "unexpected gap"),
                }
            }
            prop_assert_eq!(&got, &data);
            prop_assert_eq!(h.stats.conflicting_bytes, 0);
        }
    }
}
