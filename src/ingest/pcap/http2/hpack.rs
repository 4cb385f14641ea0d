//! HPACK (RFC 7541) for one direction of an HTTP/2 connection, on `loona-hpack`: the
//! maintained fork of the `hpack` crate (whose last release is from 2016), a decoder
//! with no dependency on an async runtime, whose integer decoding no longer panics on
//! bad input. What this wrapper adds: caps on the dynamic table and the decoded
//! header list, and knowing when the table's state is not known (the capture began
//! inside the connection, or a block was lost), so that a block that refers to an
//! entry we never saw is refused instead of decoded wrongly.

use loona_hpack::decoder::DecoderError;
use loona_hpack::Decoder;

/// Largest dynamic table followed (SETTINGS_HEADER_TABLE_SIZE is 4096 by default; a
/// size update above this is refused as a cap hit; a fixed limit).
pub const TABLE_CAP: usize = 64 << 10;
/// Largest decoded header list kept for one block (names and values, plus 32 per field,
/// as SETTINGS_MAX_HEADER_LIST_SIZE counts them; a fixed limit).
pub const LIST_CAP: usize = 256 << 10;

/// Why a header block gave no headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// An index beyond the table, while the table's start is unknown: an entry added
    /// before the capture began (or before a hole).
    Unknown,
    /// Not valid HPACK (or an index beyond a table whose every entry was seen).
    Invalid(String),
    /// A dynamic table size update above `TABLE_CAP`.
    TableCap,
}

/// A decoded header block: fields in order, names lowercase as HTTP/2 requires.
#[derive(Debug, Default)]
pub struct Block {
    pub fields: Vec<(String, String)>,
    /// The list passed `LIST_CAP`; fields after it were dropped.
    pub cut: bool,
}

pub struct Hpack {
    dec: Decoder<'static>,
    /// True while the table may hold entries added before what we saw.
    unknown_base: bool,
    /// The largest table the decoding peer allowed (SETTINGS_HEADER_TABLE_SIZE),
    /// when it said so and it is below `TABLE_CAP`.
    allowed: Option<usize>,
}

impl std::fmt::Debug for Hpack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hpack")
            .field("unknown_base", &self.unknown_base)
            .finish()
    }
}

impl Hpack {
    /// A decoder at the start of a connection (`known`), or one joining it later.
    pub fn new(known: bool) -> Hpack {
        let mut dec = Decoder::new();
        dec.set_max_allowed_table_size(TABLE_CAP);
        Hpack {
            dec,
            unknown_base: !known,
            allowed: None,
        }
    }

    /// The peer that decodes these blocks allowed a table of `size` bytes. The largest
    /// value it ever allowed is kept: blocks sent before it was acknowledged may use it.
    pub fn allow(&mut self, size: u32) {
        let size = size as usize;
        let most = self.allowed.map_or(size, |a| a.max(size));
        self.allowed = Some(most);
        self.dec.set_max_allowed_table_size(most.min(TABLE_CAP));
    }

    /// The table's start is no longer known (a block was lost or failed midway):
    /// start again from an empty table. Entries added from now on are indexed as the
    /// peer indexes them (newest first), so they stay usable; older ones are refused.
    pub fn lose_state(&mut self) {
        let allowed = self.allowed;
        *self = Hpack::new(false);
        if let Some(a) = allowed {
            self.allow(a as u32);
        }
    }

    pub fn state_unknown(&self) -> bool {
        self.unknown_base
    }

    /// Decodes one whole header block. On failure the table is reset (its state after a
    /// half-decoded block is not known).
    pub fn decode(&mut self, block: &[u8]) -> Result<Block, Failure> {
        let mut out = Block::default();
        let mut size = 0usize;
        let r = self.dec.decode_with_cb(block, |n, v| {
            size += n.len() + v.len() + 32;
            if size > LIST_CAP {
                out.cut = true;
                return;
            }
            out.fields.push((
                String::from_utf8_lossy(&n).to_ascii_lowercase(),
                String::from_utf8_lossy(&v).into_owned(),
            ));
        });
        match r {
            Ok(()) => Ok(out),
            Err(e) => {
                let failure = match e {
                    DecoderError::HeaderIndexOutOfBounds if self.unknown_base => Failure::Unknown,
                    DecoderError::InvalidMaxDynamicSize
                        if self.allowed.is_some_and(|a| a < TABLE_CAP) =>
                    {
                        Failure::Invalid(
                            "a table size update above the peer's SETTINGS_HEADER_TABLE_SIZE"
                                .into(),
                        )
                    }
                    DecoderError::InvalidMaxDynamicSize => Failure::TableCap,
                    other => Failure::Invalid(format!("{other:?}")),
                };
                self.lose_state();
                Err(failure)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loona_hpack::Encoder;

    #[test]
    fn a_joined_connection_decodes_static_and_literal_blocks_and_refuses_old_entries() {
        // The encoder's table already holds an entry the joining decoder never saw.
        let mut enc = Encoder::new();
        let first = enc.encode([(&b"x-old"[..], &b"1"[..])]);
        let second = enc.encode([(&b":method"[..], &b"POST"[..]), (&b"x-new"[..], &b"2"[..])]);
        let third = enc.encode([(&b"x-new"[..], &b"2"[..])]);
        let old = enc.encode([(&b"x-old"[..], &b"1"[..])]);
        let mut joined = Hpack::new(false);
        drop(first);
        let b = joined.decode(&second).unwrap();
        assert_eq!(b.fields[0], (":method".into(), "POST".into()));
        // x-new was added by a block we saw: its index is the same on both sides.
        assert_eq!(joined.decode(&third).unwrap().fields[0].0, "x-new");
        assert_eq!(joined.decode(&old).unwrap_err(), Failure::Unknown);
        let mut whole = Hpack::new(true);
        assert_eq!(
            whole
                .decode(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f])
                .map(|_| ()),
            Err(Failure::Invalid(
                "IntegerDecodingError(TooManyOctets)".into()
            ))
        );
    }

    #[test]
    fn a_table_size_update_over_the_cap_is_reported() {
        // 001xxxxx: a dynamic table size update to 1 MiB (5-bit prefix integer).
        let mut b = vec![0x3f];
        let mut v = (1u32 << 20) - 31;
        while v >= 128 {
            b.push((v % 128 + 128) as u8);
            v /= 128;
        }
        b.push(v as u8);
        b.push(0x82); // :method GET
        assert_eq!(Hpack::new(true).decode(&b).unwrap_err(), Failure::TableCap);
        // Above what the peer allowed, below the cap: a protocol error, not a cap.
        let mut h = Hpack::new(true);
        h.allow(4096);
        h.allow(1024);
        let update = [0x3f, 0xe1, 0x1f, 0x82]; // size update to 4096, then :method GET
        assert!(
            h.decode(&update).is_ok(),
            "the largest size allowed is kept"
        );
        let over = [0x3f, 0xe2, 0x1f, 0x82]; // 4097
        assert!(matches!(h.decode(&over), Err(Failure::Invalid(_))));
    }
}
