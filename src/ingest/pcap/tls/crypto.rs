//! The cipher suites read, their key schedules (TLS 1.3 HKDF-Expand-Label, TLS 1.2
//! PRF and key block) and one record's AEAD open. The primitives are RustCrypto's
//! (`aes-gcm`, `chacha20poly1305`, `hkdf`, `hmac`, `sha2`); only the glue the TLS
//! RFCs define around them is written here, since no maintained crate exposes a
//! passive decryptor.

use super::keylog::Secret;
use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha384};

/// The hash a suite's key schedule uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    Sha256,
    Sha384,
}

impl Hash {
    pub fn len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }
}

/// The record protection of a suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cipher {
    Aes128Gcm,
    Aes256Gcm,
    ChaCha20Poly1305,
}

impl Cipher {
    fn key_len(self) -> usize {
        match self {
            Cipher::Aes128Gcm => 16,
            Cipher::Aes256Gcm | Cipher::ChaCha20Poly1305 => 32,
        }
    }
}

/// A cipher suite this tool decrypts, by its IANA code point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suite {
    pub code: u16,
    pub name: &'static str,
    pub cipher: Cipher,
    pub hash: Hash,
    /// A TLS 1.3 suite (else a TLS 1.2 AEAD suite).
    pub tls13: bool,
}

const fn suite(code: u16, name: &'static str, cipher: Cipher, hash: Hash, tls13: bool) -> Suite {
    Suite {
        code,
        name,
        cipher,
        hash,
        tls13,
    }
}

/// The AEAD suites real clients negotiate (RFC 8446 §B.4, RFC 5289, RFC 7905,
/// RFC 5288). The key exchange of a TLS 1.2 suite does not matter here: the key log
/// gives the master secret.
const SUITES: &[Suite] = &[
    suite(
        0x1301,
        "TLS_AES_128_GCM_SHA256",
        Cipher::Aes128Gcm,
        Hash::Sha256,
        true,
    ),
    suite(
        0x1302,
        "TLS_AES_256_GCM_SHA384",
        Cipher::Aes256Gcm,
        Hash::Sha384,
        true,
    ),
    suite(
        0x1303,
        "TLS_CHACHA20_POLY1305_SHA256",
        Cipher::ChaCha20Poly1305,
        Hash::Sha256,
        true,
    ),
    suite(
        0xC02B,
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        Cipher::Aes128Gcm,
        Hash::Sha256,
        false,
    ),
    suite(
        0xC02C,
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        Cipher::Aes256Gcm,
        Hash::Sha384,
        false,
    ),
    suite(
        0xC02F,
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        Cipher::Aes128Gcm,
        Hash::Sha256,
        false,
    ),
    suite(
        0xC030,
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        Cipher::Aes256Gcm,
        Hash::Sha384,
        false,
    ),
    suite(
        0xCCA8,
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        Cipher::ChaCha20Poly1305,
        Hash::Sha256,
        false,
    ),
    suite(
        0xCCA9,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        Cipher::ChaCha20Poly1305,
        Hash::Sha256,
        false,
    ),
    suite(
        0xCCAA,
        "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        Cipher::ChaCha20Poly1305,
        Hash::Sha256,
        false,
    ),
    suite(
        0x009C,
        "TLS_RSA_WITH_AES_128_GCM_SHA256",
        Cipher::Aes128Gcm,
        Hash::Sha256,
        false,
    ),
    suite(
        0x009D,
        "TLS_RSA_WITH_AES_256_GCM_SHA384",
        Cipher::Aes256Gcm,
        Hash::Sha384,
        false,
    ),
    suite(
        0x009E,
        "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
        Cipher::Aes128Gcm,
        Hash::Sha256,
        false,
    ),
    suite(
        0x009F,
        "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
        Cipher::Aes256Gcm,
        Hash::Sha384,
        false,
    ),
];

impl Suite {
    pub fn by_code(code: u16) -> Option<Suite> {
        SUITES.iter().copied().find(|s| s.code == code)
    }
}

/// Bytes of the 64-bit explicit nonce a TLS 1.2 GCM record starts with (RFC 5288 §3).
pub const EXPLICIT_NONCE: usize = 8;
/// Bytes of the authentication tag every suite here appends.
pub const TAG: usize = 16;

/// One direction's record protection: the key, the IV (or, for TLS 1.2 GCM, the
/// 4-byte salt) and the next sequence number.
#[derive(Clone)]
pub struct Keys {
    suite: Suite,
    aead: Aead,
    iv: [u8; 12],
    pub seq: u64,
    /// TLS 1.3: the traffic secret these keys came from, for KeyUpdate.
    secret: Option<Secret>,
}

#[derive(Clone)]
enum Aead {
    A128(Box<Aes128Gcm>),
    A256(Box<Aes256Gcm>),
    ChaCha(Box<ChaCha20Poly1305>),
}

impl Aead {
    fn new(cipher: Cipher, key: &[u8]) -> Option<Aead> {
        Some(match cipher {
            Cipher::Aes128Gcm => Aead::A128(Box::new(Aes128Gcm::new_from_slice(key).ok()?)),
            Cipher::Aes256Gcm => Aead::A256(Box::new(Aes256Gcm::new_from_slice(key).ok()?)),
            Cipher::ChaCha20Poly1305 => {
                Aead::ChaCha(Box::new(ChaCha20Poly1305::new_from_slice(key).ok()?))
            }
        })
    }

    fn open(&self, nonce: &[u8; 12], aad: &[u8], buf: &mut Vec<u8>) -> bool {
        let nonce = aes_gcm::Nonce::from_slice(nonce);
        match self {
            Aead::A128(a) => a.decrypt_in_place(nonce, aad, buf).is_ok(),
            Aead::A256(a) => a.decrypt_in_place(nonce, aad, buf).is_ok(),
            Aead::ChaCha(a) => a.decrypt_in_place(nonce, aad, buf).is_ok(),
        }
    }
}

impl std::fmt::Debug for Keys {
    // Keys are secrets: only the suite and the sequence number are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keys({}, seq {})", self.suite.name, self.seq)
    }
}

impl Keys {
    /// TLS 1.3 keys from a traffic secret (RFC 8446 §7.3).
    pub fn tls13(suite: Suite, secret: Secret) -> Option<Keys> {
        let key = expand_label(
            suite.hash,
            secret.as_bytes(),
            b"key",
            suite.cipher.key_len(),
        )?;
        let iv = expand_label(suite.hash, secret.as_bytes(), b"iv", 12)?;
        Some(Keys {
            suite,
            aead: Aead::new(suite.cipher, &key)?,
            iv: iv.try_into().ok()?,
            seq: 0,
            secret: Some(secret),
        })
    }

    /// The keys after a KeyUpdate: the next traffic secret (RFC 8446 §7.2).
    pub fn next_generation(&self) -> Option<Keys> {
        let secret = self.secret?;
        let next = expand_label(
            self.suite.hash,
            secret.as_bytes(),
            b"traffic upd",
            self.suite.hash.len(),
        )?;
        Keys::tls13(self.suite, Secret::from_bytes(&next)?)
    }

    /// TLS 1.2 keys for both directions, `[client, server]`, from the master secret
    /// (RFC 5246 §6.3; no MAC keys for AEAD suites).
    pub fn tls12(
        suite: Suite,
        master: &Secret,
        client_random: &[u8; 32],
        server_random: &[u8; 32],
    ) -> Option<[Keys; 2]> {
        let key_len = suite.cipher.key_len();
        let iv_len = match suite.cipher {
            Cipher::ChaCha20Poly1305 => 12,
            _ => 4,
        };
        let mut seed = Vec::with_capacity(64);
        seed.extend_from_slice(server_random);
        seed.extend_from_slice(client_random);
        let block = prf(
            suite.hash,
            master.as_bytes(),
            b"key expansion",
            &seed,
            2 * (key_len + iv_len),
        )?;
        let (ck, rest) = block.split_at(key_len);
        let (sk, rest) = rest.split_at(key_len);
        let (civ, siv) = rest.split_at(iv_len);
        let make = |key: &[u8], iv: &[u8]| -> Option<Keys> {
            let mut full = [0u8; 12];
            full.get_mut(..iv.len())?.copy_from_slice(iv);
            Some(Keys {
                suite,
                aead: Aead::new(suite.cipher, key)?,
                iv: full,
                seq: 0,
                secret: None,
            })
        };
        Some([make(ck, civ)?, make(sk, siv)?])
    }

    /// Opens one record's fragment in place; `header` is the 5-byte record header.
    /// On success `buf` holds the plaintext (TLS 1.3: still with its inner type).
    pub fn open(&mut self, header: &[u8; 5], buf: &mut Vec<u8>) -> bool {
        let seq = self.seq;
        let ok = if self.suite.tls13 {
            // RFC 8446 §5.2-5.3: the header is the AAD, the nonce the IV xor seq.
            self.aead.open(&xor_seq(&self.iv, seq), header, buf)
        } else {
            let explicit = self.suite.cipher != Cipher::ChaCha20Poly1305;
            let (nonce, body_len) = if explicit {
                // RFC 5288 §3: salt (4 bytes) then the record's explicit nonce.
                let Some(ex) = buf.get(..EXPLICIT_NONCE) else {
                    return false;
                };
                let mut n = [0u8; 12];
                n[..4].copy_from_slice(&self.iv[..4]);
                n[4..].copy_from_slice(ex);
                (n, buf.len().saturating_sub(EXPLICIT_NONCE + TAG))
            } else {
                // RFC 7905 §2: the IV xor the sequence number, like TLS 1.3.
                (xor_seq(&self.iv, seq), buf.len().saturating_sub(TAG))
            };
            if buf.len() < TAG + if explicit { EXPLICIT_NONCE } else { 0 } {
                return false;
            }
            // RFC 5246 §6.2.3.3: seq, type, version, plaintext length.
            let mut aad = [0u8; 13];
            aad[..8].copy_from_slice(&seq.to_be_bytes());
            aad[8..11].copy_from_slice(&header[..3]);
            aad[11..].copy_from_slice(&(body_len as u16).to_be_bytes());
            if explicit {
                buf.drain(..EXPLICIT_NONCE);
            }
            self.aead.open(&nonce, &aad, buf)
        };
        if ok {
            self.seq = self.seq.wrapping_add(1);
        }
        ok
    }
}

fn xor_seq(iv: &[u8; 12], seq: u64) -> [u8; 12] {
    let mut n = *iv;
    for (b, s) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
        *b ^= s;
    }
    n
}

/// HKDF-Expand-Label with an empty context (RFC 8446 §7.1).
pub fn expand_label(hash: Hash, secret: &[u8], label: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut info = Vec::with_capacity(4 + 6 + label.len());
    info.extend_from_slice(&(len as u16).to_be_bytes());
    info.push((6 + label.len()) as u8);
    info.extend_from_slice(b"tls13 ");
    info.extend_from_slice(label);
    info.push(0);
    let mut out = vec![0u8; len];
    match hash {
        Hash::Sha256 => hkdf::Hkdf::<Sha256>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .ok()?,
        Hash::Sha384 => hkdf::Hkdf::<Sha384>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .ok()?,
    }
    Some(out)
}

/// The TLS 1.2 PRF, P_hash over HMAC (RFC 5246 §5).
pub fn prf(hash: Hash, secret: &[u8], label: &[u8], seed: &[u8], len: usize) -> Option<Vec<u8>> {
    match hash {
        Hash::Sha256 => p_hash::<Hmac<Sha256>>(secret, label, seed, len),
        Hash::Sha384 => p_hash::<Hmac<Sha384>>(secret, label, seed, len),
    }
}

fn p_hash<M: Mac + KeyInit + Clone>(
    secret: &[u8],
    label: &[u8],
    seed: &[u8],
    len: usize,
) -> Option<Vec<u8>> {
    let mac = <M as KeyInit>::new_from_slice(secret).ok()?;
    let mut out = Vec::with_capacity(len + 48);
    // A(1) = HMAC(secret, label + seed); A(i) = HMAC(secret, A(i-1)).
    let mut a = {
        let mut m = mac.clone();
        m.update(label);
        m.update(seed);
        m.finalize().into_bytes().to_vec()
    };
    while out.len() < len {
        let mut m = mac.clone();
        m.update(&a);
        m.update(label);
        m.update(seed);
        out.extend_from_slice(&m.finalize().into_bytes());
        let mut m = mac.clone();
        m.update(&a);
        a = m.finalize().into_bytes().to_vec();
    }
    out.truncate(len);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap_or(0))
            .collect()
    }

    #[test]
    fn expand_label_gives_rfc_8448_keys() {
        // RFC 8448 §3 (Simple 1-RTT Handshake): the server handshake traffic secret
        // and the key and IV derived from it (also checked with Python's hmac).
        let secret = hex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38");
        assert_eq!(
            expand_label(Hash::Sha256, &secret, b"key", 16),
            Some(hex("3fce516009c21727d0f2e4e86ee403bc"))
        );
        assert_eq!(
            expand_label(Hash::Sha256, &secret, b"iv", 12),
            Some(hex("5d313eb2671276ee13000b30"))
        );
    }

    #[test]
    fn prf_sha256_matches_the_published_test_vector() {
        // The TLS 1.2 PRF (SHA-256) vector published on the IETF TLS list (also
        // checked with Python's hmac).
        let secret = hex("9bbe436ba940f017b17652849a71db35");
        let seed = hex("a0ba9f936cda311827a6f796ffd5198c");
        let out = prf(Hash::Sha256, &secret, b"test label", &seed, 100).unwrap_or_default();
        assert_eq!(
            out,
            hex("e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff70187347b66")
        );
    }
}
