//! TLS key logs in the NSS format (`SSLKEYLOGFILE`, Node `--tls-keylog`, the text
//! inside a pcapng Decryption Secrets Block): parsing, and the secrets of each
//! handshake found by its ClientHello random. Secrets never appear in a message.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Longest secret kept: SHA-384's 48 bytes (the TLS 1.2 master secret is 48 too).
pub const MAX_SECRET: usize = 48;
/// Longest key log line read; NSS lines are under 250 characters.
const MAX_LINE: usize = 1024;
/// Most bad lines listed one by one per key log.
const MAX_LISTED: usize = 20;

/// One secret, 32 or 48 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Secret {
    len: u8,
    bytes: [u8; MAX_SECRET],
}

impl Secret {
    fn from_hex(hex: &str) -> Option<Secret> {
        let hex = hex.as_bytes();
        let n = hex.len() / 2;
        if hex.len() % 2 != 0 || !(n == 32 || n == 48) {
            return None;
        }
        let mut bytes = [0u8; MAX_SECRET];
        for (i, pair) in hex.chunks_exact(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            *bytes.get_mut(i)? = (hi * 16 + lo) as u8;
        }
        Some(Secret {
            len: n as u8,
            bytes,
        })
    }

    /// A secret from raw bytes (32 or 48 of them), as the key schedule derives them.
    pub fn from_bytes(b: &[u8]) -> Option<Secret> {
        if !(b.len() == 32 || b.len() == 48) {
            return None;
        }
        let mut bytes = [0u8; MAX_SECRET];
        bytes.get_mut(..b.len())?.copy_from_slice(b);
        Some(Secret {
            len: b.len() as u8,
            bytes,
        })
    }

    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }
}

impl std::fmt::Debug for Secret {
    // A key log is a secret: a debug print shows only its length.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.len)
    }
}

/// What a key log holds for one handshake (one ClientHello random).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Secrets {
    /// TLS 1.2 and earlier: `CLIENT_RANDOM`, the master secret.
    pub master: Option<Secret>,
    /// TLS 1.3 handshake traffic secrets.
    pub client_handshake: Option<Secret>,
    pub server_handshake: Option<Secret>,
    /// TLS 1.3 first application traffic secrets; later ones follow by KeyUpdate.
    pub client_traffic: Option<Secret>,
    pub server_traffic: Option<Secret>,
}

impl Secrets {
    fn merge(&mut self, other: &Secrets) {
        let pick = |a: &mut Option<Secret>, b: Option<Secret>| {
            if a.is_none() {
                *a = b;
            }
        };
        pick(&mut self.master, other.master);
        pick(&mut self.client_handshake, other.client_handshake);
        pick(&mut self.server_handshake, other.server_handshake);
        pick(&mut self.client_traffic, other.client_traffic);
        pick(&mut self.server_traffic, other.server_traffic);
    }
}

/// Why a key log line was not used. The line itself is never kept (it is a secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("expected three fields (LABEL CLIENT_RANDOM SECRET), found {0}")]
    Fields(usize),
    #[error("the client random is not 64 hex digits")]
    Random,
    #[error("the secret is not 64 or 96 hex digits")]
    Secret,
    #[error("longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("not UTF-8 text")]
    NotText,
}

/// A bad line of a key log: where it is and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    pub line: u64,
    pub error: LineError,
}

/// Errors that stop reading a key log file.
#[derive(Debug, thiserror::Error)]
pub enum KeyLogError {
    #[error("{}: cannot be read: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: larger than {max} bytes (a key log of that size is not one)", path.display())]
    TooLarge { path: PathBuf, max: u64 },
}

/// Largest key log file read: about 200,000 lines.
pub const MAX_FILE: u64 = 64 << 20;

/// Secrets by ClientHello random, from any number of key logs.
#[derive(Debug, Clone, Default)]
pub struct KeyLog {
    by_random: HashMap<[u8; 32], Secrets>,
    /// Lines with a label this tool does not use (`EXPORTER_SECRET`,
    /// `EARLY_TRAFFIC_SECRET`, `CLIENT_RANDOM` of other protocols…), counted.
    pub unused_lines: u64,
}

/// What parsing one key log text found wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// The first bad lines, in order (at most 20).
    pub bad: Vec<BadLine>,
    /// Every bad line, including those not listed.
    pub bad_total: u64,
    /// Lines that gave a secret.
    pub used: u64,
}

impl KeyLog {
    pub fn is_empty(&self) -> bool {
        self.by_random.is_empty()
    }

    /// Handshakes with at least one secret.
    pub fn len(&self) -> usize {
        self.by_random.len()
    }

    pub fn get(&self, random: &[u8; 32]) -> Option<&Secrets> {
        self.by_random.get(random)
    }

    /// Reads a key log file (at most `MAX_FILE` bytes) into this one.
    pub fn load(&mut self, path: &Path) -> Result<Parsed, KeyLogError> {
        use std::io::Read;
        let file = std::fs::File::open(path).map_err(|source| KeyLogError::Io {
            path: path.to_owned(),
            source,
        })?;
        let mut text = Vec::new();
        file.take(MAX_FILE + 1)
            .read_to_end(&mut text)
            .map_err(|source| KeyLogError::Io {
                path: path.to_owned(),
                source,
            })?;
        if text.len() as u64 > MAX_FILE {
            return Err(KeyLogError::TooLarge {
                path: path.to_owned(),
                max: MAX_FILE,
            });
        }
        Ok(self.parse(&text))
    }

    /// Adds the secrets of a key log text (a file's bytes or a DSB's).
    pub fn parse(&mut self, text: &[u8]) -> Parsed {
        let mut parsed = Parsed::default();
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            match self.line(line) {
                Ok(true) => parsed.used += 1,
                Ok(false) => {}
                Err(error) => {
                    parsed.bad_total += 1;
                    if parsed.bad.len() < MAX_LISTED {
                        parsed.bad.push(BadLine {
                            line: i as u64 + 1,
                            error,
                        });
                    }
                }
            }
        }
        parsed
    }

    /// One line: `Ok(true)` when it gave a secret, `Ok(false)` for a comment, a
    /// blank line or a label this tool does not use.
    fn line(&mut self, line: &[u8]) -> Result<bool, LineError> {
        if line.len() > MAX_LINE {
            return Err(LineError::TooLong);
        }
        let line = std::str::from_utf8(line).map_err(|_| LineError::NotText)?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(false);
        }
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        let [label, random, secret] = fields.as_slice() else {
            return Err(LineError::Fields(fields.len()));
        };
        let slot: fn(&mut Secrets) -> &mut Option<Secret> = match *label {
            "CLIENT_RANDOM" => |s| &mut s.master,
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => |s| &mut s.client_handshake,
            "SERVER_HANDSHAKE_TRAFFIC_SECRET" => |s| &mut s.server_handshake,
            "CLIENT_TRAFFIC_SECRET_0" => |s| &mut s.client_traffic,
            "SERVER_TRAFFIC_SECRET_0" => |s| &mut s.server_traffic,
            _ => {
                self.unused_lines += 1;
                return Ok(false);
            }
        };
        let random = Secret::from_hex(random)
            .filter(|r| r.len == 32)
            .and_then(|r| <[u8; 32]>::try_from(r.as_bytes()).ok())
            .ok_or(LineError::Random)?;
        let secret = Secret::from_hex(secret).ok_or(LineError::Secret)?;
        if *label == "CLIENT_RANDOM" && secret.len != 48 {
            return Err(LineError::Secret);
        }
        *slot(self.by_random.entry(random).or_default()) = Some(secret);
        Ok(true)
    }
}

/// The key logs a capture is read with: those given on the command line and those
/// embedded in the capture (Decryption Secrets Blocks) so far.
#[derive(Debug, Clone, Copy)]
pub struct Keyring<'a> {
    pub given: &'a KeyLog,
    pub embedded: &'a KeyLog,
}

impl Keyring<'_> {
    /// Every secret known for the handshake with this ClientHello random.
    pub fn secrets(&self, random: &[u8; 32]) -> Option<Secrets> {
        match (self.given.get(random), self.embedded.get(random)) {
            (None, None) => None,
            (Some(a), None) | (None, Some(a)) => Some(*a),
            (Some(a), Some(b)) => {
                let mut s = *a;
                s.merge(b);
                Some(s)
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.given.is_empty() && self.embedded.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: &str = "0a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20212223242526272829";

    #[test]
    fn every_label_lands_in_its_slot_and_bad_lines_are_named() {
        let s32 = "11".repeat(32);
        let s48 = "22".repeat(48);
        let text = format!(
            "# a comment\n\
             CLIENT_HANDSHAKE_TRAFFIC_SECRET {R} {s32}\r\n\
             SERVER_HANDSHAKE_TRAFFIC_SECRET {R} {s32}\n\
             CLIENT_TRAFFIC_SECRET_0 {R} {s48}\n\
             SERVER_TRAFFIC_SECRET_0 {R} {s32}\n\
             EXPORTER_SECRET {R} {s32}\n\
             CLIENT_RANDOM {R} {s48}\n\
             CLIENT_RANDOM {R}\n\
             CLIENT_RANDOM abcd {s48}\n\
             CLIENT_RANDOM {R} {s32}\n\
             CLIENT_TRAFFIC_SECRET_0 {R} zz{}\n\
             \n",
            &s32[2..]
        );
        let mut log = KeyLog::default();
        let p = log.parse(text.as_bytes());
        assert_eq!(p.used, 5);
        assert_eq!(log.unused_lines, 1);
        let lines: Vec<(u64, LineError)> =
            p.bad.iter().map(|b| (b.line, b.error.clone())).collect();
        assert_eq!(
            lines,
            vec![
                (8, LineError::Fields(2)),
                (9, LineError::Random),
                (10, LineError::Secret),
                (11, LineError::Secret),
            ]
        );
        let random: [u8; 32] = core::array::from_fn(|i| (i + 10) as u8);
        let s = log.get(&random).copied().unwrap_or_default();
        assert_eq!(s.master.map(|m| m.as_bytes().len()), Some(48));
        assert_eq!(s.client_traffic.map(|m| m.as_bytes().len()), Some(48));
        assert_eq!(s.server_traffic.map(|m| m.as_bytes()[0]), Some(0x11));
        assert!(s.client_handshake.is_some() && s.server_handshake.is_some());
    }

    #[test]
    fn a_debug_print_shows_no_secret() {
        let mut log = KeyLog::default();
        log.parse(format!("CLIENT_RANDOM {R} {}\n", "ab".repeat(48)).as_bytes());
        let shown = format!("{log:?}");
        assert!(!shown.contains("abab"), "{shown}");
        assert!(
            !shown.to_lowercase().contains("171"),
            "no bytes as numbers: {shown}"
        );
    }

    #[test]
    fn a_keyring_merges_given_and_embedded_secrets() {
        let mut given = KeyLog::default();
        let mut embedded = KeyLog::default();
        given.parse(format!("CLIENT_TRAFFIC_SECRET_0 {R} {}\n", "01".repeat(32)).as_bytes());
        embedded.parse(format!("SERVER_TRAFFIC_SECRET_0 {R} {}\n", "02".repeat(32)).as_bytes());
        let ring = Keyring {
            given: &given,
            embedded: &embedded,
        };
        let random: [u8; 32] = core::array::from_fn(|i| (i + 10) as u8);
        let s = ring.secrets(&random).unwrap_or_default();
        assert!(s.client_traffic.is_some() && s.server_traffic.is_some());
        assert_eq!(ring.secrets(&[0; 32]), None);
    }
}
