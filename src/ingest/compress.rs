//! Compressed inputs: gzip, zstd, bzip2 and xz, told apart by their magic bytes and
//! undone as streams (all decoders are pure Rust). The caller caps what each one
//! may expand to (`--max-decompressed-bytes`); the decoders' own memory is bounded
//! too (zstd's window by ruzstd, xz's dictionary by `XZ_MEMORY_KIB`, bzip2's
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
        let frame = ruzstd::decoding::StreamingDecoder::new(reader)
            .map_err(|e| IngestError::Malformed(format!("zstd data that cannot be read: {e}")))?;
        Ok(ZstdFrames { frame: Some(frame) })
    }
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
            let next = ruzstd::decoding::StreamingDecoder::new(rest)
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
