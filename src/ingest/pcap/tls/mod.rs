//! TLS inside a captured TCP connection: key material (`keylog`), the record layer
//! (framing across segments, one bounded buffer per direction), the handshake
//! fields that choose the keys (`hello`), and decryption (`crypto`). A `Flow` takes
//! each direction's reassembled TCP bytes and gives back plaintext application data
//! and typed notes; the connection feeds that plaintext to the same application
//! dispatch as cleartext TCP. See `docs/tls.md`.

mod crypto;
mod hello;
pub mod keylog;

use crate::ingest::{Kind, Level};
use crate::model::{TlsTrail, TlsVersion};
use crypto::Keys;
pub use crypto::Suite;
pub use keylog::{KeyLog, KeyLogError, Keyring, Secrets};

/// Longest record fragment TLS allows on the wire (RFC 8446 §5.2, RFC 5246 §6.2.3):
/// 2^14 bytes of plaintext plus 256 of expansion.
pub const MAX_RECORD: usize = (1 << 14) + 256;
/// Longest handshake message kept to read (ClientHello, ServerHello,
/// EncryptedExtensions, KeyUpdate); longer ones (certificates) are skipped by count.
const MAX_KEPT_MESSAGE: usize = 64 << 10;

const CT_CHANGE_CIPHER_SPEC: u8 = 20;
const CT_ALERT: u8 = 21;
const CT_HANDSHAKE: u8 = 22;
const CT_APPLICATION_DATA: u8 = 23;
const CT_HEARTBEAT: u8 = 24;

const HS_CLIENT_HELLO: u8 = 1;
const HS_SERVER_HELLO: u8 = 2;
const HS_ENCRYPTED_EXTENSIONS: u8 = 8;
const HS_FINISHED: u8 = 20;
const HS_KEY_UPDATE: u8 = 24;

/// The protocol version a handshake selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Tls12,
    Tls13,
    /// SSL 3.0 to TLS 1.1: no AEAD suites, not decrypted.
    Older(u16),
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Version::Tls12 => "TLS 1.2",
            Version::Tls13 => "TLS 1.3",
            Version::Older(0x0300) => "SSL 3.0",
            Version::Older(0x0301) => "TLS 1.0",
            Version::Older(0x0302) => "TLS 1.1",
            Version::Older(_) => "an unknown TLS version",
        }
    }
}

/// The application protocol ALPN chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Alpn {
    Http11,
    H2,
    Other(String),
}

impl Alpn {
    fn from_wire(b: &[u8]) -> Alpn {
        match b {
            b"http/1.1" => Alpn::Http11,
            b"h2" => Alpn::H2,
            other => Alpn::Other(String::from_utf8_lossy(other).chars().take(32).collect()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Alpn::Http11 => "http/1.1",
            Alpn::H2 => "h2",
            Alpn::Other(s) => s,
        }
    }
}

/// Something a flow reports; the connection words it and names the flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// No key log holds secrets for this handshake's client random.
    NoSecrets { random: [u8; 32], any_keys: bool },
    /// Secrets were found but not those this version needs (e.g. only TLS 1.3
    /// traffic secrets for a TLS 1.2 handshake).
    MissingSecrets { what: &'static str },
    /// Encrypted records with no handshake before them: the capture starts later.
    NoHandshake,
    /// A version or cipher suite this tool does not decrypt.
    Unsupported { version: Version, suite: u16 },
    /// A record did not open with the keys the key log gave.
    DecryptFailed { dir: usize, record: u64 },
    /// A record header that is not TLS (bad type or version).
    NotTls { dir: usize },
    /// A record longer than TLS allows.
    RecordTooLong { dir: usize, len: usize },
    /// A handshake message this tool reads was longer than it keeps.
    HandshakeTooLong { dir: usize, len: usize },
    /// Bytes of this direction are missing from the capture: records cannot be
    /// framed after the hole.
    Gap { dir: usize },
    /// An alert other than close_notify.
    Alert {
        dir: usize,
        fatal: bool,
        description: u8,
    },
    /// 0-RTT data: not decrypted (its secret is not read).
    EarlyData { dir: usize },
}

impl Note {
    /// The notice or problem this note is, in words (the connection adds its name);
    /// `client` is the direction that sent the ClientHello, if known.
    pub fn describe(&self, client: Option<usize>) -> (Level, Kind, String) {
        let side = |dir: usize| {
            if client == Some(dir) {
                "the client's"
            } else {
                "the server's"
            }
        };
        match self {
            Note::NoSecrets { random, any_keys } => {
                let short: String = random.iter().take(4).map(|b| format!("{b:02x}")).collect();
                let given = if *any_keys {
                    format!("no key log given holds secrets for this handshake (client random {short}…)")
                } else {
                    "no key log was given (--tls-keylog) and the capture embeds none".to_owned()
                };
                (Level::Notice, Kind::Skipped, format!("{given}, so it stays encrypted"))
            }
            Note::MissingSecrets { what } => (
                Level::Notice,
                Kind::Skipped,
                format!("the key logs lack {what} for this handshake, so it stays encrypted"),
            ),
            Note::NoHandshake => (
                Level::Notice,
                Kind::Skipped,
                "the capture starts after the TLS handshake: no key log secret can be matched to it (its ClientHello random is not in the capture), so it stays encrypted; start the capture before the client connects".to_owned(),
            ),
            Note::Unsupported { version, suite } => (
                Level::Notice,
                Kind::Skipped,
                format!(
                    "{} with cipher suite {suite:#06x} is not decrypted (TLS 1.2 and 1.3 AEAD suites are: AES-GCM, ChaCha20-Poly1305)",
                    version.as_str()
                ),
            ),
            // A notice, as for a connection without secrets: the capture is fine, the
            // key log does not fit it.
            Note::DecryptFailed { dir, record } => (
                Level::Notice,
                Kind::Skipped,
                format!(
                    "{} record {record} does not decrypt with the key log's secrets (wrong or stale key log?); the rest of that direction is skipped",
                    side(*dir)
                ),
            ),
            Note::NotTls { dir } => (
                Level::Problem,
                Kind::Malformed,
                format!("{} bytes stop looking like TLS records; the rest of that direction is not read", side(*dir)),
            ),
            Note::RecordTooLong { dir, len } => (
                Level::Problem,
                Kind::Malformed,
                format!(
                    "{} record says it is {len} bytes long, more than TLS allows ({MAX_RECORD}); the rest of that direction is not read",
                    side(*dir)
                ),
            ),
            Note::HandshakeTooLong { dir, len } => (
                Level::Problem,
                Kind::Cap,
                format!("cap: {} handshake message of {len} bytes is longer than the 64 KiB read (a fixed limit); it is skipped", side(*dir)),
            ),
            Note::Gap { dir } => (
                Level::Problem,
                Kind::Lost,
                format!("bytes of {} direction are missing from the capture: TLS records cannot be found past the hole, so the rest of that direction is not read", side(*dir)),
            ),
            Note::Alert { dir, fatal, description } => (
                Level::Notice,
                Kind::Other,
                format!(
                    "{} {} alert {description} ({})",
                    side(*dir),
                    if *fatal { "fatal" } else { "warning" },
                    alert_name(*description)
                ),
            ),
            Note::EarlyData { dir } => (
                Level::Notice,
                Kind::Skipped,
                format!("{} 0-RTT early data is not decrypted", side(*dir)),
            ),
        }
    }

    /// A note that leaves its connection encrypted (counted for the input's how-to).
    pub fn leaves_encrypted(&self) -> bool {
        matches!(
            self,
            Note::NoSecrets { .. } | Note::NoHandshake | Note::MissingSecrets { .. }
        )
    }
}

/// What a flow gives back for the bytes pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Decrypted application data sent by direction `dir`.
    Plaintext {
        dir: usize,
        data: Vec<u8>,
    },
    Note(Note),
}

/// Where a direction's handshake message reader is.
#[derive(Debug, Default)]
struct HsReader {
    /// Bytes of the current message kept so far (header included).
    buf: Vec<u8>,
    /// Bytes of the current message left to skip without keeping them.
    skip: usize,
    /// Type of the message being skipped (a Finished is acted on when it ends).
    skip_type: u8,
}

/// One direction of the flow.
#[derive(Debug, Default)]
struct Side {
    /// The partial record: header and fragment, at most `5 + MAX_RECORD` bytes.
    rec: Vec<u8>,
    /// The keys records of this direction open with now.
    keys: Option<Keys>,
    /// TLS 1.3: the application keys, taken after this side's Finished.
    app: Option<Keys>,
    /// Records from here on are protected.
    protected: bool,
    /// TLS 1.3: still in the handshake epoch.
    handshaking: bool,
    hs: HsReader,
    /// Nothing more is read from this direction (a hole, a bad record).
    dead: bool,
    records: u64,
    decrypted: u64,
    /// Protected records that could not be opened because no keys are known.
    opaque: u64,
    close_notify: bool,
}

/// Where the flow's key material stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keying {
    /// The handshake has not chosen its keys yet.
    Pending,
    /// Keys are known: records are decrypted.
    Decrypting,
    /// No keys (or an unsupported suite): records are counted only.
    Opaque,
}

/// One TLS connection as seen passively.
#[derive(Debug)]
pub struct Flow {
    side: [Side; 2],
    client: Option<usize>,
    client_random: Option<[u8; 32]>,
    version: Option<Version>,
    suite: Option<u16>,
    alpn: Option<Alpn>,
    keying: Keying,
    /// Notes already given once per flow (no secrets, no handshake).
    said_no_handshake: bool,
}

impl Default for Flow {
    fn default() -> Self {
        Flow::new()
    }
}

impl Flow {
    pub fn new() -> Flow {
        Flow {
            side: [Side::default(), Side::default()],
            client: None,
            client_random: None,
            version: None,
            suite: None,
            alpn: None,
            keying: Keying::Pending,
            said_no_handshake: false,
        }
    }

    pub fn version(&self) -> Option<Version> {
        self.version
    }

    /// The negotiated cipher suite's code point and, when this tool knows it, name.
    pub fn suite(&self) -> Option<(u16, Option<&'static str>)> {
        self.suite
            .map(|c| (c, crypto::Suite::by_code(c).map(|s| s.name)))
    }

    pub fn alpn(&self) -> Option<&Alpn> {
        self.alpn.as_ref()
    }

    pub fn keying(&self) -> Keying {
        self.keying
    }

    /// The direction that sent the ClientHello, once seen.
    pub fn client(&self) -> Option<usize> {
        self.client
    }

    /// Records of direction `dir` that were decrypted.
    pub fn decrypted(&self, dir: usize) -> u64 {
        self.side.get(dir).map_or(0, |s| s.decrypted)
    }

    /// Protected records of direction `dir` that stayed opaque (no keys).
    pub fn opaque(&self, dir: usize) -> u64 {
        self.side.get(dir).map_or(0, |s| s.opaque)
    }

    /// Whether direction `dir` ended with close_notify.
    pub fn closed_cleanly(&self, dir: usize) -> bool {
        self.side.get(dir).is_some_and(|s| s.close_notify)
    }

    /// How exchanges decrypted from this flow name it; `None` unless decrypting.
    pub fn trail(&self) -> Option<TlsTrail> {
        if self.keying != Keying::Decrypting {
            return None;
        }
        let version = match self.version? {
            Version::Tls12 => TlsVersion::Tls12,
            Version::Tls13 => TlsVersion::Tls13,
            Version::Older(_) => return None,
        };
        Some(TlsTrail {
            version,
            cipher_suite: self.suite()?.1?,
            alpn: self.alpn.as_ref().map(|a| match a {
                Alpn::Http11 => "http/1.1",
                Alpn::H2 => "h2",
                Alpn::Other(_) => "other",
            }),
        })
    }

    /// Bytes of direction `dir` are missing: records cannot be framed past the hole.
    pub fn gap(&mut self, dir: usize, out: &mut Vec<Event>) {
        let Some(s) = self.side.get_mut(dir) else {
            return;
        };
        if !s.dead {
            s.dead = true;
            s.rec = Vec::new();
            out.push(Event::Note(Note::Gap { dir }));
        }
    }

    /// Takes the next bytes of direction `dir` (0 or 1), in order.
    pub fn push(&mut self, dir: usize, mut bytes: &[u8], keys: &Keyring<'_>, out: &mut Vec<Event>) {
        if dir > 1 {
            return;
        }
        while !bytes.is_empty() {
            let Some(s) = self.side.get_mut(dir) else {
                return;
            };
            if s.dead {
                return;
            }
            // Fill the header, then the fragment, never past one record.
            let want = if s.rec.len() < 5 {
                5 - s.rec.len()
            } else {
                5 + record_len(&s.rec) - s.rec.len()
            };
            let n = want.min(bytes.len());
            s.rec.extend_from_slice(bytes.get(..n).unwrap_or(&[]));
            bytes = bytes.get(n..).unwrap_or(&[]);
            if s.rec.len() == 5 {
                let ty = s.rec.first().copied().unwrap_or(0);
                let major = s.rec.get(1).copied().unwrap_or(0);
                if !(CT_CHANGE_CIPHER_SPEC..=CT_HEARTBEAT).contains(&ty) || major != 3 {
                    s.dead = true;
                    out.push(Event::Note(Note::NotTls { dir }));
                    return;
                }
                let len = record_len(&s.rec);
                if len > MAX_RECORD {
                    s.dead = true;
                    out.push(Event::Note(Note::RecordTooLong { dir, len }));
                    return;
                }
            }
            if s.rec.len() >= 5 && s.rec.len() == 5 + record_len(&s.rec) {
                let rec = std::mem::take(&mut s.rec);
                self.record(dir, &rec, keys, out);
                // Keep the allocation for the next record.
                if let Some(s) = self.side.get_mut(dir) {
                    if s.rec.capacity() == 0 {
                        s.rec = rec;
                        s.rec.clear();
                    }
                }
            }
        }
    }

    fn record(&mut self, dir: usize, rec: &[u8], keys: &Keyring<'_>, out: &mut Vec<Event>) {
        let Some((head, body)) = rec.split_first_chunk::<5>() else {
            return;
        };
        let ty = head[0];
        let Some(s) = self.side.get_mut(dir) else {
            return;
        };
        s.records += 1;
        if !s.protected {
            match ty {
                CT_HANDSHAKE => self.handshake(dir, body, keys, out),
                CT_ALERT => self.alert(dir, body, out),
                CT_CHANGE_CIPHER_SPEC => self.change_cipher_spec(dir),
                CT_APPLICATION_DATA => {
                    if self.version.is_none() && self.client_random.is_some() {
                        // Application data after ClientHello but before ServerHello:
                        // TLS 1.3 0-RTT, whose secret is not read.
                        if let Some(s) = self.side.get_mut(dir) {
                            s.opaque += 1;
                        }
                        if self.side.get(dir).is_some_and(|s| s.opaque == 1) {
                            out.push(Event::Note(Note::EarlyData { dir }));
                        }
                    } else {
                        self.no_handshake(dir, out);
                    }
                }
                _ => {}
            }
            return;
        }
        // TLS 1.3 sends a dummy ChangeCipherSpec in cleartext for middleboxes.
        if ty == CT_CHANGE_CIPHER_SPEC {
            return;
        }
        if s.keys.is_none() && s.app.is_none() {
            s.opaque += 1;
            return;
        }
        let mut buf = body.to_vec();
        let opened = match s.keys.as_mut() {
            Some(k) => k.open(head, &mut buf),
            None => false,
        };
        let opened = opened || {
            // A TLS 1.3 side whose Finished was not seen (or whose handshake keys are
            // not in the key log) moves to its application keys when they open it.
            let mut b = body.to_vec();
            let ok = s.handshaking && s.app.as_mut().is_some_and(|a| a.open(head, &mut b));
            if ok {
                s.keys = s.app.take();
                s.handshaking = false;
                buf = b;
            }
            ok
        };
        if !opened {
            if s.handshaking && s.keys.is_none() {
                // Handshake records without handshake secrets: expected, counted.
                s.opaque += 1;
                return;
            }
            s.dead = true;
            let record = s.records;
            out.push(Event::Note(Note::DecryptFailed { dir, record }));
            return;
        }
        s.decrypted += 1;
        let (inner, data) = if self.version == Some(Version::Tls13) {
            // RFC 8446 §5.4: content, then the real type, then zero padding.
            let end = buf.iter().rposition(|&b| b != 0).unwrap_or(0);
            let inner = buf.get(end).copied().unwrap_or(0);
            buf.truncate(end);
            (inner, buf)
        } else {
            (ty, buf)
        };
        match inner {
            CT_APPLICATION_DATA if !data.is_empty() => out.push(Event::Plaintext { dir, data }),
            CT_HANDSHAKE => self.handshake(dir, &data, keys, out),
            CT_ALERT => self.alert(dir, &data, out),
            _ => {}
        }
    }

    fn alert(&mut self, dir: usize, body: &[u8], out: &mut Vec<Event>) {
        let (Some(&level), Some(&description)) = (body.first(), body.get(1)) else {
            // An encrypted alert with no keys lands here empty: nothing to say.
            return;
        };
        if description == 0 {
            if let Some(s) = self.side.get_mut(dir) {
                s.close_notify = true;
            }
            return;
        }
        out.push(Event::Note(Note::Alert {
            dir,
            fatal: level == 2,
            description,
        }));
    }

    fn change_cipher_spec(&mut self, dir: usize) {
        // TLS 1.2: this side's records are protected from the next one on. In TLS
        // 1.3 protection started at ServerHello already.
        if self.version == Some(Version::Tls12) {
            if let Some(s) = self.side.get_mut(dir) {
                s.protected = true;
            }
        }
    }

    fn no_handshake(&mut self, dir: usize, out: &mut Vec<Event>) {
        if let Some(s) = self.side.get_mut(dir) {
            s.opaque += 1;
        }
        if !self.said_no_handshake {
            self.said_no_handshake = true;
            self.keying = Keying::Opaque;
            out.push(Event::Note(Note::NoHandshake));
        }
    }

    /// Handshake bytes of direction `dir`: messages may span records and records
    /// may hold several messages.
    fn handshake(&mut self, dir: usize, mut data: &[u8], keys: &Keyring<'_>, out: &mut Vec<Event>) {
        while !data.is_empty() {
            let Some(s) = self.side.get_mut(dir) else {
                return;
            };
            let hs = &mut s.hs;
            if hs.skip > 0 {
                let n = hs.skip.min(data.len());
                hs.skip -= n;
                data = data.get(n..).unwrap_or(&[]);
                if hs.skip == 0 {
                    let ty = hs.skip_type;
                    self.message(dir, ty, &[], keys, out);
                }
                continue;
            }
            if hs.buf.len() < 4 {
                let n = (4 - hs.buf.len()).min(data.len());
                hs.buf.extend_from_slice(data.get(..n).unwrap_or(&[]));
                data = data.get(n..).unwrap_or(&[]);
                if hs.buf.len() < 4 {
                    return;
                }
                let ty = hs.buf.first().copied().unwrap_or(0);
                let len = hs.buf.get(1..4).map_or(0, |l| {
                    (usize::from(l[0]) << 16) | (usize::from(l[1]) << 8) | usize::from(l[2])
                });
                let kept = matches!(
                    ty,
                    HS_CLIENT_HELLO | HS_SERVER_HELLO | HS_ENCRYPTED_EXTENSIONS | HS_KEY_UPDATE
                );
                if !kept || len > MAX_KEPT_MESSAGE {
                    if kept {
                        out.push(Event::Note(Note::HandshakeTooLong { dir, len }));
                    }
                    hs.buf.clear();
                    hs.skip = len;
                    hs.skip_type = ty;
                    if len == 0 {
                        self.message(dir, ty, &[], keys, out);
                    }
                    continue;
                }
            }
            let len = hs.buf.get(1..4).map_or(0, |l| {
                (usize::from(l[0]) << 16) | (usize::from(l[1]) << 8) | usize::from(l[2])
            });
            let n = (4 + len - hs.buf.len()).min(data.len());
            hs.buf.extend_from_slice(data.get(..n).unwrap_or(&[]));
            data = data.get(n..).unwrap_or(&[]);
            if hs.buf.len() == 4 + len {
                let msg = std::mem::take(&mut hs.buf);
                let ty = msg.first().copied().unwrap_or(0);
                self.message(dir, ty, msg.get(4..).unwrap_or(&[]), keys, out);
            }
        }
    }

    /// One whole handshake message (`body` empty for those skipped by count).
    fn message(
        &mut self,
        dir: usize,
        ty: u8,
        body: &[u8],
        keys: &Keyring<'_>,
        out: &mut Vec<Event>,
    ) {
        match ty {
            HS_CLIENT_HELLO => {
                // A second ClientHello (after a HelloRetryRequest) keeps the random.
                if let Some(ch) = hello::client_hello(body) {
                    self.client.get_or_insert(dir);
                    self.client_random.get_or_insert(ch.random);
                }
            }
            HS_SERVER_HELLO => {
                if let Some(sh) = hello::server_hello(body) {
                    self.client.get_or_insert(1 - dir);
                    if !sh.is_retry_request() {
                        self.server_hello(&sh, keys, out);
                    }
                }
            }
            HS_ENCRYPTED_EXTENSIONS => {
                if let Some(a) = hello::encrypted_extensions(body) {
                    self.alpn = Some(Alpn::from_wire(&a));
                }
            }
            HS_FINISHED => {
                // TLS 1.3: this side's next record uses its application keys.
                if let Some(s) = self.side.get_mut(dir) {
                    if s.handshaking {
                        s.handshaking = false;
                        if s.app.is_some() {
                            s.keys = s.app.take();
                        }
                    }
                }
            }
            HS_KEY_UPDATE => {
                // RFC 8446 §4.6.3: the sender's next record uses the next secret.
                if let Some(s) = self.side.get_mut(dir) {
                    if !s.handshaking {
                        s.keys = s.keys.as_ref().and_then(Keys::next_generation);
                    }
                }
            }
            _ => {}
        }
    }

    fn server_hello(&mut self, sh: &hello::ServerHello, keys: &Keyring<'_>, out: &mut Vec<Event>) {
        let version = match sh.version {
            0x0304 => Version::Tls13,
            0x0303 => Version::Tls12,
            v => Version::Older(v),
        };
        self.version = Some(version);
        self.suite = Some(sh.suite);
        if let Some(a) = &sh.alpn {
            self.alpn = Some(Alpn::from_wire(a));
        }
        if version == Version::Tls13 {
            for s in &mut self.side {
                s.protected = true;
                s.handshaking = true;
            }
        }
        let suite = crypto::Suite::by_code(sh.suite).filter(|s| {
            s.tls13 == (version == Version::Tls13) && !matches!(version, Version::Older(_))
        });
        let Some(suite) = suite else {
            self.keying = Keying::Opaque;
            out.push(Event::Note(Note::Unsupported {
                version,
                suite: sh.suite,
            }));
            return;
        };
        let (Some(client), Some(random)) = (self.client, self.client_random) else {
            // A ServerHello without the ClientHello before it: the capture started
            // in between.
            self.keying = Keying::Opaque;
            self.said_no_handshake = true;
            out.push(Event::Note(Note::NoHandshake));
            return;
        };
        let Some(secrets) = keys.secrets(&random) else {
            self.keying = Keying::Opaque;
            out.push(Event::Note(Note::NoSecrets {
                random,
                any_keys: !keys.is_empty(),
            }));
            return;
        };
        let server = 1 - client;
        if version == Version::Tls13 {
            let make = |s: Option<keylog::Secret>| s.and_then(|s| Keys::tls13(suite, s));
            let (ch, sh_, ca, sa) = (
                make(secrets.client_handshake),
                make(secrets.server_handshake),
                make(secrets.client_traffic),
                make(secrets.server_traffic),
            );
            if ca.is_none() && sa.is_none() {
                self.keying = Keying::Opaque;
                out.push(Event::Note(Note::MissingSecrets {
                    what: "CLIENT_TRAFFIC_SECRET_0 / SERVER_TRAFFIC_SECRET_0",
                }));
                return;
            }
            for (d, hs, app) in [(client, ch, ca), (server, sh_, sa)] {
                if let Some(s) = self.side.get_mut(d) {
                    s.keys = hs;
                    s.app = app;
                }
            }
        } else {
            let Some(master) = secrets.master else {
                self.keying = Keying::Opaque;
                out.push(Event::Note(Note::MissingSecrets {
                    what: "CLIENT_RANDOM (the TLS 1.2 master secret)",
                }));
                return;
            };
            let Some([ck, sk]) = Keys::tls12(suite, &master, &random, &sh.random) else {
                self.keying = Keying::Opaque;
                return;
            };
            for (d, k) in [(client, ck), (server, sk)] {
                if let Some(s) = self.side.get_mut(d) {
                    s.keys = Some(k);
                }
            }
        }
        self.keying = Keying::Decrypting;
    }
}

/// How to get a key log, for the notice on a flow that stays encrypted.
pub const HOW_TO_KEYLOG: &str = "To decrypt, capture again with the client writing a key log: Node `--tls-keylog=FILE` (or `NODE_OPTIONS=--tls-keylog=FILE`); Python (httpx, requests), curl, Chrome and Firefox `SSLKEYLOGFILE=FILE`; then run `mcpsift analyze --tls-keylog FILE` or embed it with `editcap --inject-secrets tls,FILE`";

/// The name of a TLS alert description (RFC 8446 §6).
pub fn alert_name(d: u8) -> &'static str {
    match d {
        0 => "close_notify",
        10 => "unexpected_message",
        20 => "bad_record_mac",
        22 => "record_overflow",
        40 => "handshake_failure",
        42 => "bad_certificate",
        43 => "unsupported_certificate",
        44 => "certificate_revoked",
        45 => "certificate_expired",
        46 => "certificate_unknown",
        47 => "illegal_parameter",
        48 => "unknown_ca",
        49 => "access_denied",
        50 => "decode_error",
        51 => "decrypt_error",
        70 => "protocol_version",
        71 => "insufficient_security",
        80 => "internal_error",
        86 => "inappropriate_fallback",
        90 => "user_canceled",
        100 => "no_renegotiation",
        109 => "missing_extension",
        110 => "unsupported_extension",
        112 => "unrecognized_name",
        116 => "certificate_required",
        120 => "no_application_protocol",
        _ => "unknown",
    }
}

fn record_len(rec: &[u8]) -> usize {
    match (rec.get(3), rec.get(4)) {
        (Some(&a), Some(&b)) => usize::from(u16::from_be_bytes([a, b])),
        _ => 0,
    }
}

/// Whether `b` starts like a TLS record (any content type, version 3.x): a capture
/// that starts after the handshake shows application data records first.
pub fn looks_like_record(b: &[u8]) -> bool {
    matches!(
        b,
        [CT_CHANGE_CIPHER_SPEC..=CT_APPLICATION_DATA, 3, 0..=4, ..]
    )
}
