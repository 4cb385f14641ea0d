//! The one bounded `Content-Encoding` decoder, shared by HTTP/1.1 in captures (bytes
//! pushed as they arrive) and HAR bodies a recorder left compressed (one slice).
//! Output leaves in slices of at most `SLICE` input bytes' worth and stops at the room
//! left in the body's cap, so a deflate bomb costs the cap, never its expansion.
//! `flate2` does the decoding; only the cap and the slicing are written here.

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
    Gzip(Box<flate2::write::MultiGzDecoder<Room>>),
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
            Coding::Gzip => Dec::Gzip(Box::new(flate2::write::MultiGzDecoder::new(room()))),
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
                Dec::Gzip(d) => step(d.as_mut(), piece, |d| d.get_mut()),
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

    #[test]
    fn bad_data_is_invalid_not_a_cap() {
        let (_, res) = inflate_all(b"\x1f\x8b\x08\x00garbage-garbage", Coding::Gzip, 1 << 20);
        assert!(matches!(res, Err(Stop::Invalid(m)) if m.starts_with("gzip")));
        assert_eq!(Coding::from_header(Some(" GZIP ")), Ok(Some(Coding::Gzip)));
        assert_eq!(Coding::from_header(Some("br")), Err("br".to_owned()));
        assert_eq!(Coding::from_header(None), Ok(None));
    }
}
