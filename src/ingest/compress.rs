//! Compressed inputs: gzip, zstd, bzip2 and xz, told apart by their magic bytes and
//! undone as streams (all decoders are pure Rust). The caller caps what each one
//! may expand to (`--max-decompressed-bytes`); the decoders' own memory is bounded
//! too (zstd's window by `ZSTD_WINDOW_MAX`, xz's dictionary by `XZ_MEMORY_KIB`, bzip2's
//! blocks by the format).

use super::IngestError;
use std::io::{self, BufRead, Read};

/// A compression format mcpsift undoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
    Zstd,
    Bzip2,
    Xz,
}

/// Most memory the xz decoder may use (its dictionary): `xz -9` needs 65 MiB; a
/// header asking for more is refused rather than allocated.
const XZ_MEMORY_KIB: u32 = 256 << 10;

impl Compression {
    /// The format `head` (an input's first bytes) starts with.
    pub fn of(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Some(Compression::Gzip)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if head.len() >= 4 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) {
            Some(Compression::Bzip2)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Some(Compression::Xz)
        } else {
            None
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
        }
    }

    /// A reader of the decompressed bytes. Concatenated members, frames or streams
    /// (`cat a.gz b.gz`, `pzstd`, `pbzip2`, `xz -T`) are read one after the other.
    pub fn decoder<'a>(
        self,
        reader: Box<dyn BufRead + 'a>,
    ) -> Result<Box<dyn Read + 'a>, IngestError> {
        Ok(match self {
            Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(reader)),
            Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(reader)),
            Compression::Xz => Box::new(lzma_rust2::XzReader::new_mem_limit(
                reader,
                true,
                XZ_MEMORY_KIB,
            )),
            Compression::Zstd => Box::new(ZstdFrames::new(reader)?),
        })
    }
}

type ZstdDecoder<'a> =
    ruzstd::decoding::StreamingDecoder<Box<dyn BufRead + 'a>, ruzstd::decoding::FrameDecoder>;

/// zstd frames one after the other: ruzstd's decoder reads one frame.
struct ZstdFrames<'a> {
    frame: Option<ZstdDecoder<'a>>,
}

impl<'a> ZstdFrames<'a> {
    fn new(reader: Box<dyn BufRead + 'a>) -> Result<Self, IngestError> {
        let reader = window_checked(reader).map_err(|e| IngestError::Malformed(e.to_string()))?;
        let frame = ruzstd::decoding::StreamingDecoder::new(reader)
            .map_err(|e| IngestError::Malformed(format!("zstd data that cannot be read: {e}")))?;
        Ok(ZstdFrames { frame: Some(frame) })
    }
}

/// The largest zstd window a frame may ask for: zstd's own decoder refuses more
/// unless told otherwise (`--long=31`, `--memory`). The decoder holds the window,
/// and ruzstd 0.8 checks no first frame's: a 3 MB input asking for 2 GiB took
/// 500 MB, and more as it went on.
const ZSTD_WINDOW_MAX: u64 = 128 << 20;

/// `reader` as it was, once the header of the zstd frame at its start is read and
/// its window found within `ZSTD_WINDOW_MAX` (RFC 8878 §3.1.1.1: the window
/// descriptor, or the content size of a single-segment frame). Anything else (a
/// skippable frame, a header cut short) is left to the decoder to judge.
fn window_checked<'a>(mut reader: Box<dyn BufRead + 'a>) -> io::Result<Box<dyn BufRead + 'a>> {
    let mut head = Vec::with_capacity(18);
    (&mut reader).take(18).read_to_end(&mut head)?;
    if let Some(window) = zstd_window(&head).filter(|w| *w > ZSTD_WINDOW_MAX) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "zstd: a frame asks for a {} MiB window, past the {} MiB this reader holds (written with zstd --long); decompress it first, e.g. `zstd -dc --long=31 FILE | mcpsift analyze -`",
                window >> 20,
                ZSTD_WINDOW_MAX >> 20
            ),
        ));
    }
    Ok(Box::new(io::Cursor::new(head).chain(reader)))
}

/// The window a zstd frame header asks for; `None` when `head` is no whole frame
/// header.
fn zstd_window(head: &[u8]) -> Option<u64> {
    if head.get(..4)? != [0x28, 0xb5, 0x2f, 0xfd] {
        return None;
    }
    let fhd = *head.get(4)?;
    let single = fhd & 0x20 != 0;
    let mut at = 5;
    let mut window = 0;
    if !single {
        let wd = *head.get(5)?;
        let base = 1u64 << (10 + u32::from(wd >> 3));
        window = base + base / 8 * u64::from(wd & 7);
        at = 6;
    }
    at += [0, 1, 2, 4][usize::from(fhd & 3)];
    if single {
        let size = [1, 2, 4, 8][usize::from(fhd >> 6)];
        let bytes = head.get(at..at + size)?;
        let mut le = [0u8; 8];
        le[..size].copy_from_slice(bytes);
        window = u64::from_le_bytes(le) + if size == 2 { 256 } else { 0 };
    }
    Some(window)
}

impl Read for ZstdFrames<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(frame) = &mut self.frame else {
                return Ok(0);
            };
            let n = frame.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            // This frame is over: another may follow.
            let Some(done) = self.frame.take() else {
                return Ok(0);
            };
            let mut rest = done.into_inner();
            if rest.fill_buf()?.is_empty() {
                return Ok(0);
            }
            let next = ruzstd::decoding::StreamingDecoder::new(window_checked(rest)?)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {e}")))?;
            self.frame = Some(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_magic() {
        assert_eq!(Compression::of(&[0x1f, 0x8b, 8]), Some(Compression::Gzip));
        assert_eq!(
            Compression::of(&[0x28, 0xb5, 0x2f, 0xfd, 0]),
            Some(Compression::Zstd)
        );
        assert_eq!(Compression::of(b"BZh91AY&SY"), Some(Compression::Bzip2));
        assert_eq!(Compression::of(b"BZhx"), None);
        assert_eq!(
            Compression::of(&[0xfd, b'7', b'z', b'X', b'Z', 0, 0]),
            Some(Compression::Xz)
        );
        assert_eq!(Compression::of(b"{\"jsonrpc\""), None);
    }

    fn read_all(c: Compression, data: Vec<u8>) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let reader: Box<dyn BufRead> = Box::new(io::Cursor::new(data));
        c.decoder(reader)
            .map_err(|e| io::Error::other(e.to_string()))?
            .read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn concatenated_zstd_frames_are_one_stream() {
        use ruzstd::encoding::{compress_to_vec, CompressionLevel};
        let mut data = compress_to_vec(&b"first\n"[..], CompressionLevel::Fastest);
        data.extend(compress_to_vec(&b"second\n"[..], CompressionLevel::Fastest));
        assert_eq!(
            read_all(Compression::Zstd, data).unwrap(),
            b"first\nsecond\n"
        );
    }

    /// A frame asking for a window past `ZSTD_WINDOW_MAX` is refused before the
    /// decoder holds it, first frame or later one, by its window descriptor or, for
    /// a single-segment frame, its content size; one within it reads.
    #[test]
    fn a_zstd_window_past_the_cap_is_refused_before_it_is_held() {
        use ruzstd::encoding::{compress_to_vec, CompressionLevel};
        const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
        // Window descriptor: exponent 21 (2 GiB), then 2^27 + 3/8 of it.
        assert_eq!(
            zstd_window(&[&MAGIC[..], &[0x00, 21 << 3]].concat()),
            Some(2 << 30)
        );
        assert_eq!(
            zstd_window(&[&MAGIC[..], &[0x00, (17 << 3) | 3]].concat()),
            Some((128 << 20) + (48 << 20))
        );
        // Single segment, a 4-byte content size of 300 MiB, after a 1-byte dictionary id.
        let single = [&MAGIC[..], &[0xa1, 7], &(300u32 << 20).to_le_bytes()[..]].concat();
        assert_eq!(zstd_window(&single), Some(300 << 20));
        assert_eq!(zstd_window(&MAGIC), None, "a header cut short");
        let huge = [&MAGIC[..], &[0x00, 21 << 3], &[0u8; 40][..]].concat();
        let e = read_all(Compression::Zstd, huge.clone())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("2048 MiB window") && e.contains("--long=31"),
            "{e}"
        );
        let mut two = compress_to_vec(&b"first\n"[..], CompressionLevel::Fastest);
        two.extend(&huge);
        let e = read_all(Compression::Zstd, two).unwrap_err().to_string();
        assert!(e.contains("2048 MiB window"), "{e}");
        let small = compress_to_vec(&b"fits\n"[..], CompressionLevel::Fastest);
        assert_eq!(read_all(Compression::Zstd, small).unwrap(), b"fits\n");
    }

    #[test]
    fn damaged_data_is_an_error_not_a_panic() {
        for c in [
            Compression::Gzip,
            Compression::Zstd,
            Compression::Bzip2,
            Compression::Xz,
        ] {
            let mut data = match c {
                Compression::Gzip => vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3],
                Compression::Zstd => vec![0x28, 0xb5, 0x2f, 0xfd, 0x24, 0x05],
                Compression::Bzip2 => b"BZh91AY&SY".to_vec(),
                Compression::Xz => vec![0xfd, b'7', b'z', b'X', b'Z', 0, 0, 4],
            };
            data.extend([0xff; 40]);
            assert!(read_all(c, data).is_err(), "{c:?}");
        }
    }
}
