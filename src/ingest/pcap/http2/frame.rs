//! HTTP/2 frames on one direction of a connection (RFC 9113 §4 and §6): the 9-byte
//! frame header, the payload checks that need no connection state (sizes, stream-0
//! rules, padding), a reader that cuts a byte stream into whole frames however it was
//! segmented, and the plausibility test used to find a frame boundary when the
//! capture starts, or resumes after a hole, inside a connection.
//!
//! Written by hand: the HTTP/2 crates on crates.io (`h2`, `loona`) parse frames only
//! inside their own connection state machines, which refuse what a passive reader
//! must tolerate (a missing preface, a lost SETTINGS, both directions at once).

use thiserror::Error;

/// Frame header length (RFC 9113 §4.1).
pub const HEADER: usize = 9;
/// The initial SETTINGS_MAX_FRAME_SIZE, and its lowest legal value.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;
/// The highest legal SETTINGS_MAX_FRAME_SIZE (2^24-1).
pub const LARGEST_FRAME: u32 = (1 << 24) - 1;
/// Most payload bytes held for one frame. A peer may allow frames up to 16 MiB; holding
/// that per direction per connection is too much for a passive reader, so a longer
/// frame ends decoding of its direction, reported as a cap (a fixed limit).
pub const FRAME_CAP: u32 = 1 << 20;

/// Frame types of RFC 9113 §6 (anything else is an extension and is skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Data,
    Headers,
    Priority,
    RstStream,
    Settings,
    PushPromise,
    Ping,
    GoAway,
    WindowUpdate,
    Continuation,
    Unknown(u8),
}

impl Type {
    fn from(b: u8) -> Type {
        match b {
            0 => Type::Data,
            1 => Type::Headers,
            2 => Type::Priority,
            3 => Type::RstStream,
            4 => Type::Settings,
            5 => Type::PushPromise,
            6 => Type::Ping,
            7 => Type::GoAway,
            8 => Type::WindowUpdate,
            9 => Type::Continuation,
            other => Type::Unknown(other),
        }
    }
}

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY: u8 = 0x20;

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub len: u32,
    pub kind: Type,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    pub fn parse(b: &[u8; HEADER]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: Type::from(b[3]),
            flags: b[4],
            // The reserved bit is ignored on receipt (RFC 9113 §4.1).
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// A frame that breaks a rule of RFC 9113 with no connection state needed to see it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FrameError {
    #[error("{kind:?} frame on stream 0, which it may not use")]
    NeedsStream { kind: Type },
    #[error("{kind:?} frame on stream {stream}; it belongs on stream 0")]
    NeedsZero { kind: Type, stream: u32 },
    #[error("{kind:?} frame of {len} bytes; it must be {want}")]
    Size {
        kind: Type,
        len: u32,
        want: &'static str,
    },
    #[error("padding of {pad} bytes does not fit in a {len}-byte {kind:?} frame")]
    Padding { kind: Type, pad: u8, len: u32 },
    #[error("frame of {len} bytes is longer than the peer's SETTINGS_MAX_FRAME_SIZE of {max}")]
    TooLong { len: u32, max: u32 },
}

/// Checks a whole frame's length against its type and returns the payload without
/// padding (DATA, HEADERS, PUSH_PROMISE) and without the HEADERS priority fields.
pub fn payload<'a>(h: &Head, p: &'a [u8]) -> Result<&'a [u8], FrameError> {
    let kind = h.kind;
    let zero = matches!(kind, Type::Settings | Type::Ping | Type::GoAway);
    let nonzero = matches!(
        kind,
        Type::Data
            | Type::Headers
            | Type::Priority
            | Type::RstStream
            | Type::PushPromise
            | Type::Continuation
    );
    if zero && h.stream != 0 {
        return Err(FrameError::NeedsZero {
            kind,
            stream: h.stream,
        });
    }
    if nonzero && h.stream == 0 {
        return Err(FrameError::NeedsStream { kind });
    }
    let size = |want: &'static str| FrameError::Size {
        kind,
        len: h.len,
        want,
    };
    match kind {
        Type::Priority if p.len() != 5 => return Err(size("5")),
        Type::RstStream if p.len() != 4 => return Err(size("4")),
        Type::WindowUpdate if p.len() != 4 => return Err(size("4")),
        Type::Ping if p.len() != 8 => return Err(size("8")),
        Type::Settings if p.len() % 6 != 0 || (h.has(ACK) && !p.is_empty()) => {
            return Err(size("a multiple of 6 (0 with ACK)"))
        }
        Type::GoAway if p.len() < 8 => return Err(size("at least 8")),
        _ => {}
    }
    let mut body = p;
    if matches!(kind, Type::Data | Type::Headers | Type::PushPromise) && h.has(PADDED) {
        let Some((&pad, rest)) = body.split_first() else {
            return Err(FrameError::Padding {
                kind,
                pad: 0,
                len: h.len,
            });
        };
        let Some(keep) = rest.len().checked_sub(usize::from(pad)) else {
            return Err(FrameError::Padding {
                kind,
                pad,
                len: h.len,
            });
        };
        body = &rest[..keep];
    }
    if kind == Type::Headers && h.has(PRIORITY) {
        body = body
            .get(5..)
            .ok_or_else(|| size("at least 5 with PRIORITY"))?;
    }
    Ok(body)
}

/// Cuts one direction's bytes into whole frames. Bytes are held only while a frame
/// is incomplete, so a frame is seen the same however the stream was segmented.
#[derive(Debug, Default)]
pub struct Reader {
    held: Vec<u8>,
}

/// What reading found at the front of the bytes.
pub enum Next<'a> {
    /// A whole frame: its header and its raw payload.
    Frame(Head, &'a [u8]),
    /// The bytes end inside a frame (they were held).
    More,
    /// A frame longer than allowed: the direction cannot go on.
    TooLong(Head),
}

impl Reader {
    /// Reads frames from `input` (after any bytes held), calling `each` per frame.
    /// `max` is the longest frame the receiver allows. Stops at the first frame
    /// `each` refuses (returns false) or that is too long, and says which.
    pub fn push(
        &mut self,
        mut input: &[u8],
        max: u32,
        each: &mut dyn FnMut(Head, &[u8]) -> bool,
    ) -> Option<Head> {
        let limit = max.min(FRAME_CAP);
        if !self.held.is_empty() {
            // Complete the held frame from the input, then go on in the input itself.
            if self.held.len() < HEADER {
                let take = (HEADER - self.held.len()).min(input.len());
                self.held.extend_from_slice(&input[..take]);
                input = &input[take..];
            }
            let h = head_of(&self.held)?;
            if h.len > limit {
                self.held.clear();
                return Some(h);
            }
            let need = HEADER + h.len as usize;
            let take = need.saturating_sub(self.held.len()).min(input.len());
            self.held.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.held.len() < need {
                return None;
            }
            let held = std::mem::take(&mut self.held);
            if !each(h, &held[HEADER..]) {
                return None;
            }
        }
        loop {
            match next(input, limit) {
                (Next::Frame(h, p), used) => {
                    let go = each(h, p);
                    input = &input[used..];
                    if !go {
                        return None;
                    }
                }
                (Next::More, _) => {
                    self.held.extend_from_slice(input);
                    return None;
                }
                (Next::TooLong(h), _) => return Some(h),
            }
        }
    }

    /// Forgets a partial frame (after a hole in the stream), and its buffer: a
    /// frame may be up to `FRAME_CAP` long.
    pub fn clear(&mut self) {
        self.held = Vec::new();
    }

    /// Bytes held for an incomplete frame.
    pub fn held(&self) -> usize {
        self.held.len()
    }
}

fn head_of(b: &[u8]) -> Option<Head> {
    let h: &[u8; HEADER] = b.get(..HEADER)?.try_into().ok()?;
    Some(Head::parse(h))
}

/// The frame at the front of `b`, and the bytes it uses.
fn next(b: &[u8], limit: u32) -> (Next<'_>, usize) {
    let Some(h) = head_of(b) else {
        return (Next::More, 0);
    };
    if h.len > limit {
        return (Next::TooLong(h), 0);
    }
    let end = HEADER + h.len as usize;
    match b.get(HEADER..end) {
        Some(p) => (Next::Frame(h, p), end),
        None => (Next::More, 0),
    }
}

/// True when `b` starts with what looks like whole HTTP/2 frames: at least one frame
/// that passes `payload`'s checks with a known type and a length no larger than the
/// default maximum, each following frame likewise, up to the end or to a plausible
/// partial frame. Used to pick a frame boundary where none is known; TCP segments
/// usually start with a frame, since peers write frames whole.
pub fn plausible(b: &[u8]) -> bool {
    let mut at = 0;
    let mut whole = 0;
    while let Some(h) = b.get(at..).and_then(head_of) {
        if matches!(h.kind, Type::Unknown(_)) || h.len > DEFAULT_MAX_FRAME {
            return false;
        }
        let end = at + HEADER + h.len as usize;
        let Some(p) = b.get(at + HEADER..end) else {
            return whole > 0;
        };
        if payload(&h, p).is_err() {
            return false;
        }
        whole += 1;
        at = end;
    }
    whole > 0 && b.len() - at < HEADER
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, p: &[u8]) -> Vec<u8> {
        let mut v = (p.len() as u32).to_be_bytes()[1..].to_vec();
        v.extend([kind, flags]);
        v.extend(stream.to_be_bytes());
        v.extend_from_slice(p);
        v
    }

    #[test]
    fn padding_and_priority_are_stripped_and_bad_padding_refused() {
        let mut p = vec![2u8];
        p.extend([0, 0, 0, 1, 16]);
        p.extend(b"hb");
        p.extend([0, 0]);
        let h = Head {
            len: p.len() as u32,
            kind: Type::Headers,
            flags: PADDED | PRIORITY | END_HEADERS,
            stream: 1,
        };
        assert_eq!(payload(&h, &p).unwrap(), b"hb");
        let bad = Head {
            len: 3,
            kind: Type::Data,
            flags: PADDED,
            stream: 1,
        };
        assert!(matches!(
            payload(&bad, &[9, 1, 2]),
            Err(FrameError::Padding { pad: 9, .. })
        ));
        let ping = Head {
            len: 8,
            kind: Type::Ping,
            flags: 0,
            stream: 3,
        };
        assert!(matches!(
            payload(&ping, &[0; 8]),
            Err(FrameError::NeedsZero { .. })
        ));
    }

    #[test]
    fn frames_are_the_same_whatever_the_cuts() {
        let mut wire = frame(4, 0, 0, &[0, 3, 0, 0, 0, 100]);
        wire.extend(frame(0, END_STREAM, 1, b"hello"));
        wire.extend(frame(8, 0, 0, &[0, 0, 1, 0]));
        let read = |pieces: &[&[u8]]| {
            let mut r = Reader::default();
            let mut got = Vec::new();
            for p in pieces {
                r.push(p, DEFAULT_MAX_FRAME, &mut |h, b| {
                    got.push((h, b.to_vec()));
                    true
                });
            }
            got
        };
        let whole = read(&[&wire]);
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[1].1, b"hello");
        for cut in 0..=wire.len() {
            let (a, b) = wire.split_at(cut);
            assert_eq!(read(&[a, b]), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(read(&bytes), whole);
        assert!(plausible(&wire));
        assert!(!plausible(b"data: {\"jsonrpc\":\"2.0\"}\n\n"));
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_before_it_is_held() {
        let mut r = Reader::default();
        let head = frame(0, 0, 1, &[])[..5].to_vec();
        let mut long = vec![0x01, 0x00, 0x00];
        long.extend(&head[3..]);
        long.extend([0, 0, 0, 1]);
        let hit = r.push(&long, DEFAULT_MAX_FRAME, &mut |_, _| true);
        assert_eq!(hit.map(|h| h.len), Some(65_536));
        assert_eq!(r.held(), 0);
    }
}
