//! The few handshake fields decryption needs, parsed by hand from ClientHello,
//! ServerHello and EncryptedExtensions (RFC 8446 §4.1.2-4.1.3, §4.3.1; RFC 5246
//! §7.4.1): the randoms, the cipher suite, the selected version and ALPN. Every read
//! is bounds-checked; a message that does not parse is `None`.

/// ServerHello's random when it is a HelloRetryRequest (RFC 8446 §4.1.3).
pub const HRR_RANDOM: [u8; 32] = [
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
    0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
];

const EXT_ALPN: u16 = 16;
const EXT_SUPPORTED_VERSIONS: u16 = 43;

/// A cursor over a handshake message body.
struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }
    fn u16(&mut self) -> Option<u16> {
        let b = self.take(2)?;
        Some(u16::from_be_bytes([*b.first()?, *b.get(1)?]))
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }
    fn random(&mut self) -> Option<[u8; 32]> {
        self.take(32)?.try_into().ok()
    }
}

/// What a ClientHello says that decryption needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientHello {
    pub random: [u8; 32],
}

pub fn client_hello(body: &[u8]) -> Option<ClientHello> {
    let mut c = Cur(body);
    c.u16()?;
    Some(ClientHello {
        random: c.random()?,
    })
}

/// What a ServerHello says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerHello {
    pub random: [u8; 32],
    pub suite: u16,
    /// The selected version: `supported_versions` when present, else the legacy field.
    pub version: u16,
    /// TLS 1.2 carries ALPN here; TLS 1.3 in EncryptedExtensions.
    pub alpn: Option<Vec<u8>>,
}

impl ServerHello {
    pub fn is_retry_request(&self) -> bool {
        self.random == HRR_RANDOM
    }
}

pub fn server_hello(body: &[u8]) -> Option<ServerHello> {
    let mut c = Cur(body);
    let legacy = c.u16()?;
    let random = c.random()?;
    c.vec8()?;
    let suite = c.u16()?;
    c.u8()?;
    let mut hello = ServerHello {
        random,
        suite,
        version: legacy,
        alpn: None,
    };
    // Extensions are optional in a TLS 1.2 ServerHello.
    if c.0.is_empty() {
        return Some(hello);
    }
    let mut exts = Cur(c.vec16()?);
    while !exts.0.is_empty() {
        let ty = exts.u16()?;
        let mut data = Cur(exts.vec16()?);
        match ty {
            EXT_SUPPORTED_VERSIONS => hello.version = data.u16()?,
            EXT_ALPN => hello.alpn = alpn(&mut data),
            _ => {}
        }
    }
    Some(hello)
}

/// ALPN from EncryptedExtensions (TLS 1.3); `None` when the server chose none.
pub fn encrypted_extensions(body: &[u8]) -> Option<Vec<u8>> {
    let mut c = Cur(body);
    let mut exts = Cur(c.vec16()?);
    while !exts.0.is_empty() {
        let ty = exts.u16()?;
        let mut data = Cur(exts.vec16()?);
        if ty == EXT_ALPN {
            return alpn(&mut data);
        }
    }
    None
}

/// The one protocol a server's ALPN extension names (RFC 7301 §3.1).
fn alpn(data: &mut Cur<'_>) -> Option<Vec<u8>> {
    let mut list = Cur(data.vec16()?);
    Some(list.vec8()?.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(ty: u16, data: &[u8]) -> Vec<u8> {
        let mut v = ty.to_be_bytes().to_vec();
        v.extend_from_slice(&(data.len() as u16).to_be_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn server_hello_gives_version_suite_and_alpn() {
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.push(32);
        body.extend_from_slice(&[9; 32]);
        body.extend_from_slice(&0x1302u16.to_be_bytes());
        body.push(0);
        let mut exts = ext(43, &[3, 4]);
        exts.extend(ext(16, &[0, 3, 2, b'h', b'2']));
        body.extend_from_slice(&(exts.len() as u16).to_be_bytes());
        body.extend(exts);
        let sh = server_hello(&body);
        assert_eq!(
            sh,
            Some(ServerHello {
                random: [7; 32],
                suite: 0x1302,
                version: 0x0304,
                alpn: Some(b"h2".to_vec()),
            })
        );
        // Every truncation is refused, never read past the end.
        for n in 0..body.len() - 1 {
            let _ = server_hello(body.get(..n).unwrap_or(&[]));
        }
        assert_eq!(server_hello(&body[..36]), None);
    }

    #[test]
    fn encrypted_extensions_alpn() {
        let exts = ext(
            16,
            &[0, 9, 8, b'h', b't', b't', b'p', b'/', b'1', b'.', b'1'],
        );
        let mut body = (exts.len() as u16).to_be_bytes().to_vec();
        body.extend(exts);
        assert_eq!(encrypted_extensions(&body), Some(b"http/1.1".to_vec()));
        assert_eq!(encrypted_extensions(&[0, 0]), None);
    }
}
