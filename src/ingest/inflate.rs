//! The one bounded `Content-Encoding` decoder, shared by HTTP/1.1 in captures (bytes
//! pushed as they arrive) and HAR bodies a recorder left compressed (one slice).
//! Output leaves in slices of at most `SLICE` input bytes' worth and stops at the room
//! left in the body's cap, so a deflate bomb costs the cap, never its expansion.
//! `flate2` does the decoding. Written here: the cap, the slicing, and gzip's member
//! framing (RFC 1952: header, trailer CRC and length) around a raw deflate decoder
//! that is reset and reused, since setting up a fresh decoder for every small gzip
//! body cost more than decoding it.

use std::io::{self, Write};

/// Input handed to the decoder at once: bounds the output of one step (deflate
/// expands at most about 1,032 times).
const SLICE: usize = 4 << 10;

/// A compressed coding mcpsift decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coding {
    Gzip,
    /// HTTP `deflate`: zlib-wrapped as the RFC says, or raw as some servers send;
    /// the first byte decides.
    Deflate,
    /// zlib-wrapped deflate, known to be so.
    Zlib,
}

impl Coding {
    /// The coding a `Content-Encoding` value names, `None` for identity; `Err` with
    /// the name for one that is not decoded.
    pub(crate) fn from_header(value: Option<&str>) -> Result<Option<Coding>, String> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("identity") => Ok(None),
            Some("gzip") | Some("x-gzip") => Ok(Some(Coding::Gzip)),
            Some("deflate") => Ok(Some(Coding::Deflate)),
            Some(other) => Err(other.to_owned()),
        }
    }
}

/// Why decoding stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The body reached its cap; the rest was not decoded.
    Cap(u64),
    /// The data is not valid for its coding.
    Invalid(String),
}

/// Takes decoded bytes up to the room left; refuses the rest with an error, which
/// stops the decoder mid-stream.
struct Room {
    buf: Vec<u8>,
    left: u64,
}

impl Write for Room {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = data
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        if n == 0 && !data.is_empty() {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "body cap"));
        }
        self.buf.extend_from_slice(&data[..n]);
        self.left -= n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Dec {
    /// `deflate` before its first byte.
    Unknown,
    Gzip(Box<Gzip>),
    Zlib(Box<flate2::write::ZlibDecoder<Room>>),
    Raw(Box<flate2::write::DeflateDecoder<Room>>),
    Stopped,
}

/// A push decoder with a cap on its output.
pub(crate) struct Inflater {
    dec: Dec,
    coding: Coding,
    cap: u64,
    /// Bytes of output handed on.
    produced: u64,
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Inflater({:?}, {} of {})",
            self.coding, self.produced, self.cap
        )
    }
}

impl Inflater {
    /// A decoder whose output stops after `cap` bytes.
    pub(crate) fn new(coding: Coding, cap: u64) -> Inflater {
        let room = || Room {
            buf: Vec::new(),
            left: cap,
        };
        let dec = match coding {
            Coding::Gzip => Dec::Gzip(Box::new(Gzip::new())),
            Coding::Zlib => Dec::Zlib(Box::new(flate2::write::ZlibDecoder::new(room()))),
            Coding::Deflate => Dec::Unknown,
        };
        Inflater {
            dec,
            coding,
            cap,
            produced: 0,
        }
    }

    /// Bytes decoded so far.
    #[cfg(test)]
    pub(crate) fn produced(&self) -> u64 {
        self.produced
    }

    /// Decodes `input`, handing each decoded slice to `out`. After a `Stop` the
    /// decoder takes no more input (later calls do nothing).
    pub(crate) fn push(&mut self, input: &[u8], out: &mut dyn FnMut(&[u8])) -> Result<(), Stop> {
        if let (Dec::Unknown, Some(&first)) = (&self.dec, input.first()) {
            let room = Room {
                buf: Vec::new(),
                left: self.cap,
            };
            // zlib: CM = 8 in the low nibble, a window of at most 32 KiB in the high one.
            self.dec = if first & 0x0f == 8 && first >> 4 <= 7 {
                Dec::Zlib(Box::new(flate2::write::ZlibDecoder::new(room)))
            } else {
                Dec::Raw(Box::new(flate2::write::DeflateDecoder::new(room)))
            };
        }
        for piece in input.chunks(SLICE) {
            let res = match &mut self.dec {
                Dec::Unknown | Dec::Stopped => return Ok(()),
                Dec::Gzip(d) => {
                    let left = self.cap - self.produced;
                    d.push(piece, left)
                }
                Dec::Zlib(d) => step(d.as_mut(), piece, |d| d.get_mut()),
                Dec::Raw(d) => step(d.as_mut(), piece, |d| d.get_mut()),
            };
            let (slice, res) = res;
            self.produced += slice.len() as u64;
            if !slice.is_empty() {
                out(&slice);
            }
            if let Err(e) = res {
                self.dec = Dec::Stopped;
                return Err(if e.kind() == io::ErrorKind::StorageFull {
                    Stop::Cap(self.cap)
                } else {
                    Stop::Invalid(format!(
                        "{} body does not decode: {e}",
                        match self.coding {
                            Coding::Gzip => "gzip",
                            Coding::Deflate | Coding::Zlib => "deflate",
                        }
                    ))
                });
            }
        }
        Ok(())
    }
}

// Raw deflate decoders set free by finished bodies, for the next body on this
// thread: a fresh one zeroes its 32 KiB window and tables first.
thread_local! {
    static SPARE: std::cell::RefCell<Vec<flate2::Decompress>> =
        const { std::cell::RefCell::new(Vec::new()) };
}
const SPARE_MAX: usize = 8;

fn raw_decoder() -> flate2::Decompress {
    SPARE
        .with(|s| s.borrow_mut().pop())
        .unwrap_or_else(|| flate2::Decompress::new(false))
}

/// Where a gzip stream is.
enum Part {
    /// Header bytes so far (a header may come split over many pushes).
    Header(Vec<u8>),
    Body,
    /// Trailer bytes so far: CRC-32 and length, 8 bytes.
    Trailer(Vec<u8>),
}

/// Gzip members one after another (RFC 1952 §2.2), each a header, raw deflate data
/// and a trailer whose CRC and length are checked, as `flate2`'s multi-member
/// decoder does. Written here so the deflate decoder can be reused.
struct Gzip {
    part: Part,
    inflate: Option<flate2::Decompress>,
    crc: flate2::Crc,
}

/// The largest gzip header read: the fixed part, an extra field of its largest
/// size (64 KiB) and a file name and comment of a few KiB.
const MAX_HEADER: usize = 80 << 10;

impl Gzip {
    fn new() -> Gzip {
        Gzip {
            part: Part::Header(Vec::new()),
            inflate: None,
            crc: flate2::Crc::new(),
        }
    }

    /// Decodes `input`; returns its output (at most `left` bytes) and whether it
    /// stopped: at the cap (`StorageFull`, as `Room` says it) or on bad data.
    fn push(&mut self, input: &[u8], left: u64) -> (Vec<u8>, io::Result<()>) {
        let mut out = Vec::new();
        let res = self.run(input, left, &mut out);
        (out, res)
    }

    fn run(&mut self, mut input: &[u8], left: u64, out: &mut Vec<u8>) -> io::Result<()> {
        let invalid = |m: &str| io::Error::new(io::ErrorKind::InvalidInput, m.to_owned());
        // The decoder may hold output it had no room for; it is drained even when
        // the input is all taken, or the end of the member would go unseen.
        let mut more = false;
        while !input.is_empty() || more {
            more = false;
            match &mut self.part {
                Part::Header(h) => {
                    // A header is parsed again as each push adds bytes, so its size
                    // is capped: a name fed one byte per segment stays cheap.
                    let take = input.len().min(MAX_HEADER + 1 - h.len().min(MAX_HEADER));
                    h.extend_from_slice(&input[..take]);
                    match header_len(h) {
                        Header::Short if h.len() > MAX_HEADER => {
                            return Err(invalid("gzip header field too long"));
                        }
                        Header::Short => input = &input[take..],
                        Header::Invalid => return Err(invalid("invalid gzip header")),
                        Header::Len(n) => {
                            // What followed the header in this push is body.
                            let extra = h.len() - n;
                            input = &input[take - extra..];
                            self.part = Part::Body;
                            self.crc.reset();
                            match &mut self.inflate {
                                Some(d) => d.reset(false),
                                None => self.inflate = Some(raw_decoder()),
                            }
                        }
                    }
                }
                Part::Body => {
                    let Some(d) = self.inflate.as_mut() else {
                        return Err(invalid("corrupt deflate stream"));
                    };
                    let room = usize::try_from(left - out.len() as u64).unwrap_or(usize::MAX);
                    if room == 0 {
                        return Err(io::Error::new(io::ErrorKind::StorageFull, "body cap"));
                    }
                    let start = out.len();
                    let had_input = !input.is_empty();
                    // Output space for this step: bounded so a bomb costs its cap.
                    out.reserve(room.min((input.len() * 4).clamp(8 << 10, 1 << 20)));
                    let before = d.total_in();
                    let status = d
                        .decompress_vec(input, out, flate2::FlushDecompress::None)
                        .map_err(|_| invalid("corrupt deflate stream"))?;
                    let used = (d.total_in() - before) as usize;
                    input = &input[used..];
                    self.crc.update(&out[start..]);
                    if out.len() - start > room {
                        out.truncate(start + room);
                        return Err(io::Error::new(io::ErrorKind::StorageFull, "body cap"));
                    }
                    match status {
                        flate2::Status::StreamEnd => self.part = Part::Trailer(Vec::new()),
                        _ if used == 0 && out.len() == start && had_input => {
                            // No progress at all with input and room: the data is wrong.
                            return Err(invalid("corrupt deflate stream"));
                        }
                        _ => more = out.len() == out.capacity(),
                    }
                }
                Part::Trailer(t) => {
                    let take = input.len().min(8 - t.len());
                    t.extend_from_slice(&input[..take]);
                    input = &input[take..];
                    if t.len() == 8 {
                        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
                        let len = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
                        if crc != self.crc.sum() || len != self.crc.amount() {
                            return Err(invalid(
                                "corrupt gzip stream does not have a matching checksum",
                            ));
                        }
                        // Whatever follows must be another member.
                        self.part = Part::Header(Vec::new());
                    }
                }
            }
        }
        Ok(())
    }
}

impl Drop for Gzip {
    fn drop(&mut self) {
        if let Some(mut d) = self.inflate.take() {
            d.reset(false);
            SPARE.with(|s| {
                let mut s = s.borrow_mut();
                if s.len() < SPARE_MAX {
                    s.push(d);
                }
            });
        }
    }
}

enum Header {
    /// More bytes are needed.
    Short,
    Invalid,
    /// The header is this many bytes.
    Len(usize),
}

/// The length of the gzip header at the start of `h` (RFC 1952 §2.3).
fn header_len(h: &[u8]) -> Header {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    let Some(fixed) = h.get(..10) else {
        // A wrong first byte is wrong however many follow.
        let magic = [0x1f, 0x8b, 8];
        return if h.iter().zip(magic).all(|(a, b)| *a == b) {
            Header::Short
        } else {
            Header::Invalid
        };
    };
    if fixed[..3] != [0x1f, 0x8b, 8] {
        return Header::Invalid;
    }
    let flags = fixed[3];
    // The reserved flag bits must be zero (§2.3.1.2).
    if flags & 0xe0 != 0 {
        return Header::Invalid;
    }
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let Some(len) = h.get(at..at + 2) else {
            return Header::Short;
        };
        at += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let Some(rest) = h.get(at..) else {
                return Header::Short;
            };
            match memchr::memchr(0, rest) {
                Some(end) => at += end + 1,
                None => return Header::Short,
            }
        }
    }
    if flags & FHCRC != 0 {
        let Some(sum) = h.get(at..at + 2) else {
            return Header::Short;
        };
        let mut crc = flate2::Crc::new();
        crc.update(&h[..at]);
        if u16::from_le_bytes([sum[0], sum[1]]) != crc.sum() as u16 {
            return Header::Invalid;
        }
        at += 2;
    }
    if h.len() < at {
        Header::Short
    } else {
        Header::Len(at)
    }
}

/// Writes one slice of input and takes the output it produced.
fn step<D: Write>(
    d: &mut D,
    piece: &[u8],
    room: impl Fn(&mut D) -> &mut Room,
) -> (Vec<u8>, io::Result<()>) {
    let res = d.write_all(piece).and_then(|()| d.flush());
    let slice = std::mem::take(&mut room(d).buf);
    (slice, res)
}

/// Decodes a whole compressed body into at most `cap` bytes. The bytes decoded are
/// returned even when decoding stopped early.
pub(crate) fn inflate_all(raw: &[u8], coding: Coding, cap: u64) -> (Vec<u8>, Result<(), Stop>) {
    let mut out = Vec::new();
    let mut inf = Inflater::new(coding, cap);
    let res = inf.push(raw, &mut |s| out.extend_from_slice(s));
    (out, res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::Compression;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn each_coding_decodes_in_any_split() {
        let data: Vec<u8> = (0..20_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(&data).unwrap();
        let zlib = z.finish().unwrap();
        let mut r = DeflateEncoder::new(Vec::new(), Compression::default());
        r.write_all(&data).unwrap();
        let raw = r.finish().unwrap();
        for (coding, wire) in [
            (Coding::Gzip, gzip(&data)),
            (Coding::Deflate, zlib.clone()),
            (Coding::Deflate, raw),
            (Coding::Zlib, zlib),
        ] {
            for split in [1, 7, 4096, wire.len()] {
                let mut inf = Inflater::new(coding, u64::MAX);
                let mut out = Vec::new();
                for piece in wire.chunks(split) {
                    inf.push(piece, &mut |s| out.extend_from_slice(s)).unwrap();
                }
                assert_eq!(out, data, "{coding:?} split {split}");
            }
        }
    }

    #[test]
    fn a_bomb_stops_at_the_cap_in_bounded_slices() {
        let bomb = gzip(&vec![0u8; 8 << 20]);
        let mut inf = Inflater::new(Coding::Gzip, 100_000);
        let mut largest = 0;
        let mut total = 0;
        let res = inf.push(&bomb, &mut |s| {
            largest = largest.max(s.len());
            total += s.len();
        });
        assert_eq!(res, Err(Stop::Cap(100_000)));
        assert_eq!(total, 100_000);
        assert_eq!(inf.produced(), 100_000);
        assert!(largest <= 100_000);
        // Stopped: more input is ignored, not decoded.
        assert_eq!(
            inf.push(&bomb, &mut |_| panic!("decoded after the cap")),
            Ok(())
        );
        let (out, res) = inflate_all(&bomb, Coding::Gzip, 10);
        assert_eq!(out.len(), 10);
        assert_eq!(res, Err(Stop::Cap(10)));
    }

    /// flate2's own multi-member decoder, the reference, finished so that the last
    /// member's trailer is checked too. A cut stream is no error for `Inflater`
    /// (the body's framing says whether it was cut), so it is none here.
    fn reference(wire: &[u8]) -> (Vec<u8>, bool) {
        let mut d = flate2::write::MultiGzDecoder::new(Vec::new());
        let ok = d.write_all(wire).and_then(|()| d.flush()).is_ok();
        let finished = d.try_finish();
        let cut = matches!(&finished, Err(e) if e.to_string() == "incomplete deflate stream"
            || e.kind() == io::ErrorKind::UnexpectedEof);
        (d.get_ref().clone(), ok && (finished.is_ok() || cut))
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        #[test]
        fn gzip_framing_decodes_as_flate2_does(
            members in proptest::collection::vec(
                (proptest::collection::vec(0u8..4, 0..3000), 0u8..8), 1..4),
            cuts in proptest::collection::vec(1usize..600, 1..20),
            flip in proptest::option::of((0usize..4000, 1u8..=255)),
        ) {
            let mut wire = Vec::new();
            let mut data = Vec::new();
            for (i, (bytes, opts)) in members.iter().enumerate() {
                let mut b = flate2::GzBuilder::new();
                if opts & 1 != 0 { b = b.filename(format!("member-{i}.json")); }
                if opts & 2 != 0 { b = b.comment("a comment"); }
                if opts & 4 != 0 { b = b.extra(vec![7u8; 300]); }
                let mut e = b.write(Vec::new(), Compression::new(u32::from(opts % 10)));
                e.write_all(bytes).unwrap();
                wire.extend(e.finish().unwrap());
                data.extend_from_slice(bytes);
            }
            if let Some((at, x)) = flip {
                let at = at % wire.len();
                wire[at] ^= x;
            }
            let (want, want_ok) = reference(&wire);
            let mut inf = Inflater::new(Coding::Gzip, u64::MAX);
            let (mut got, mut ok, mut at, mut i) = (Vec::new(), true, 0, 0);
            while at < wire.len() && ok {
                let n = cuts[i % cuts.len()].min(wire.len() - at);
                ok = inf.push(&wire[at..at + n], &mut |s| got.extend_from_slice(s)).is_ok();
                at += n;
                i += 1;
            }
            // A stream cut inside a trailer is an error to flate2 and, like any
            // cut, none to a body decoder (the body's framing tells of the cut).
            let cut_trailer = matches!(&inf.dec, Dec::Gzip(g) if matches!(g.part, Part::Trailer(_)));
            proptest::prop_assert_eq!(ok, want_ok || cut_trailer);
            if ok {
                proptest::prop_assert_eq!(&got, &want);
                if flip.is_none() {
                    proptest::prop_assert_eq!(&got, &data);
                }
            }
        }
    }

    #[test]
    fn a_header_crc_is_checked_and_trailing_bytes_must_be_a_member() {
        // FHCRC set: the CRC-16 of the header (RFC 1952 §2.3.1).
        let body = gzip(b"hello");
        let mut header = body[..10].to_vec();
        header[3] |= 2;
        let mut crc = flate2::Crc::new();
        crc.update(&header);
        let mut wire = header.clone();
        wire.extend((crc.sum() as u16).to_le_bytes());
        wire.extend_from_slice(&body[10..]);
        assert_eq!(
            inflate_all(&wire, Coding::Gzip, 1 << 20),
            (b"hello".to_vec(), Ok(()))
        );
        let at = wire.len() - body.len() + 10 - 1;
        wire[at] ^= 1;
        assert!(matches!(
            inflate_all(&wire, Coding::Gzip, 1 << 20).1,
            Err(Stop::Invalid(_))
        ));
        // A trailer that does not match what decoded (RFC 1952 §2.3.1: CRC-32, ISIZE).
        for at in [8, 1] {
            let mut bad = gzip(b"checked");
            let n = bad.len();
            bad[n - at] ^= 0x40;
            let (out, res) = inflate_all(&bad, Coding::Gzip, 1 << 20);
            assert_eq!(out, b"checked");
            assert_eq!(
                res,
                Err(Stop::Invalid(
                    "gzip body does not decode: corrupt gzip stream does not have a matching checksum"
                        .to_owned()
                ))
            );
        }
        let mut padded = gzip(b"x");
        padded.extend([0, 0, 0]);
        let (out, res) = inflate_all(&padded, Coding::Gzip, 1 << 20);
        assert_eq!(out, b"x");
        assert_eq!(
            res,
            Err(Stop::Invalid(
                "gzip body does not decode: invalid gzip header".to_owned()
            ))
        );
    }

    #[test]
    fn a_header_fed_a_byte_at_a_time_is_capped() {
        // FNAME set and never ended: refused at the cap, however it arrives.
        let mut wire = vec![0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3];
        wire.extend(std::iter::repeat_n(b'a', 200 << 10));
        let mut inf = Inflater::new(Coding::Gzip, 1 << 20);
        let mut res = Ok(());
        for b in wire.chunks(1) {
            res = inf.push(b, &mut |_| {});
            if res.is_err() {
                break;
            }
        }
        assert_eq!(
            res,
            Err(Stop::Invalid(
                "gzip body does not decode: gzip header field too long".to_owned()
            ))
        );
        // A name of a few KiB is read.
        let mut named = Vec::new();
        let mut e = flate2::GzBuilder::new()
            .filename("n".repeat(4000))
            .write(&mut named, Compression::default());
        e.write_all(b"body").unwrap();
        e.finish().unwrap();
        assert_eq!(
            inflate_all(&named, Coding::Gzip, 100),
            (b"body".to_vec(), Ok(()))
        );
    }

    #[test]
    fn decoders_are_reused_across_bodies() {
        for _ in 0..3 * SPARE_MAX {
            assert_eq!(inflate_all(&gzip(b"abc"), Coding::Gzip, 100).0, b"abc");
        }
        let spare = SPARE.with(|s| s.borrow().len());
        assert!((1..=SPARE_MAX).contains(&spare), "{spare}");
    }

    #[test]
    fn bad_data_is_invalid_not_a_cap() {
        let (_, res) = inflate_all(b"\x1f\x8b\x08\x00garbage-garbage", Coding::Gzip, 1 << 20);
        assert!(matches!(res, Err(Stop::Invalid(m)) if m.starts_with("gzip")));
        assert_eq!(Coding::from_header(Some(" GZIP ")), Ok(Some(Coding::Gzip)));
        assert_eq!(Coding::from_header(Some("br")), Err("br".to_owned()));
        assert_eq!(Coding::from_header(None), Ok(None));
    }
}
