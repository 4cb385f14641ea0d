//! pcap and pcapng inputs: the block loop over `pcap-parser`'s streaming readers, the
//! table of live TCP connections, and protocol detection per connection. Each frame
//! goes link (`link`) → IP/TCP (`etherparse`) → reassembly (`tcp`) → decryption
//! when the connection carries TLS (`tls`) → one dispatch per connection → HTTP/1.1
//! (`http1`) or HTTP/2 (`http2`: prior knowledge, `Upgrade: h2c`, ALPN `h2` inside
//! TLS, or a connection the capture joined); exchanges go to the sink as soon as they
//! complete, so memory is bounded by the connections still open, never by the file.
//! See `docs/pcap.md`, `docs/tls.md`.

mod http1;
mod http2;
mod link;
mod table;
mod tcp;
pub mod tls;

use super::{IngestError, Kind, Level, Problem, Sink};
use crate::config::Limits;
use crate::model::{Exchange, Locator, Payload, TcpTrail, Timestamp, TlsTrail};
use foldhash::{HashMap, HashMapExt};
use http1::body::Gauge;
use http1::{Caps, Ctx, Http1, Start};
use http2::{Dir, Http2, Opening};
use pcap_parser::pcapng::Block;
use pcap_parser::traits::{PcapNGPacketBlock, PcapReaderIterator};
use pcap_parser::{LegacyPcapReader, PcapBlockOwned, PcapError, PcapNGReader};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use table::Table;
use tcp::{Chunk, HalfStream, Segment};
use tls::{KeyLog, Keyring};

/// The reader's first buffer. Its refills ask for more than the 256 KiB that
/// `ingest::open`'s `BufReader` holds, so the bytes go from the file straight
/// into it instead of being copied through that buffer (with 256 KiB here they
/// were: 2–8% more instructions on the bench shapes).
const BUFFER: usize = 1 << 20;
/// Largest single block we grow the buffer for.
const BUFFER_MAX: usize = 16 << 20;
/// Most connections tracked at once; the least recently seen is closed past this.
const MAX_CONNS: usize = 65_536;
/// Bytes held out of order, behind holes, over all connections: past it the
/// connections holding most give up their holes until half is left. Each direction
/// may hold 1 MiB (`tcp::DEFAULT_OOO_CAP`), but a capture that missed a packet of
/// each of thousands of live connections (a kernel that dropped packets under load)
/// would otherwise hold that for each of them.
const HELD_BUDGET: usize = 64 << 20;
/// Delivered bytes kept over all connections to compare retransmissions against:
/// each direction keeps up to `tcp::RECENT`, less when many connections are live.
const RECENT_BUDGET: usize = 32 << 20;
/// Most TLS handshakes whose embedded secrets are kept (about 30 MB); a block
/// is at most 16 MiB, so one past this adds a bounded amount.
const MAX_EMBEDDED_HANDSHAKES: usize = 100_000;
/// Problems of one kind reported one by one before only counting them.
const PER_KIND: u64 = 20;

/// Reads a whole pcap (`ng == false`) or pcapng capture into `sink`.
pub fn read(
    reader: impl Read,
    ng: bool,
    limits: &Limits,
    keys: &Arc<KeyLog>,
    sink: &mut dyn Sink,
) -> Result<(), IngestError> {
    // `create_reader` wants a `Send` reader; we already know the format, so the
    // two readers are built directly.
    let opened: Result<Box<dyn PcapReaderIterator + '_>, PcapError<&'static [u8]>> = if ng {
        PcapNGReader::new(BUFFER, reader).map(|r| Box::new(r) as Box<dyn PcapReaderIterator>)
    } else {
        LegacyPcapReader::new(BUFFER, reader).map(|r| Box::new(r) as Box<dyn PcapReaderIterator>)
    };
    let mut rdr = opened.map_err(|e| {
        IngestError::Unrecognised(format!(
            "{} header cannot be read: {}",
            if ng { "pcapng section" } else { "pcap file" },
            describe(&e)
        ))
    })?;
    let mut st = State::new(limits);
    st.given = Arc::clone(keys);
    let mut size = BUFFER;
    let mut stalls = 0u32;
    loop {
        match rdr.next() {
            Ok((used, block)) => {
                st.block(block);
                // Not `consume`: past half the buffer it moves what is left to the
                // front, every input byte copied once more (1.3% of the instructions
                // on keep-alive). The refill moves only the unread tail.
                rdr.consume_noshift(used);
                st.drain(sink);
            }
            Err(PcapError::Eof) => break,
            Err(PcapError::Incomplete(_)) => {
                // Refill; a slow reader (a pipe) may add only a little each time. At
                // the end of the data the next call says UnexpectedEof. Only a buffer
                // that takes no more bytes without growing counts as a stall.
                let before = rdr.data().len();
                if rdr.refill().is_err() {
                    return Err(IngestError::Io(std::io::Error::other(
                        "read error inside the capture",
                    )));
                }
                if rdr.data().len() > before || rdr.reader_exhausted() {
                    stalls = 0;
                    continue;
                }
                stalls += 1;
                if stalls > 1 {
                    if !grow(&mut *rdr, &mut size) {
                        st.note_stop(Kind::Cap, format!(
                            "cap: a block larger than {BUFFER_MAX} bytes; the rest of the file is not read (a fixed limit)"
                        ));
                        break;
                    }
                    stalls = 0;
                }
            }
            Err(PcapError::BufferTooSmall) => {
                if !grow(&mut *rdr, &mut size) {
                    st.note_stop(Kind::Cap, format!(
                        "cap: a block larger than {BUFFER_MAX} bytes; the rest of the file is not read (a fixed limit)"
                    ));
                    break;
                }
                if rdr.refill().is_err() {
                    return Err(IngestError::Io(std::io::Error::other(
                        "read error inside the capture",
                    )));
                }
            }
            Err(PcapError::UnexpectedEof) => {
                st.note_stop(
                    Kind::Lost,
                    "the file ends inside a record: the capture is truncated (was tcpdump killed?)"
                        .to_owned(),
                );
                break;
            }
            Err(PcapError::ReadError) => {
                return Err(IngestError::Io(std::io::Error::other(
                    "read error inside the capture",
                )))
            }
            Err(e) => {
                let what = describe(&e);
                st.note_stop(
                    Kind::Malformed,
                    format!(
                        "corrupt data after frame {} ({what}); the rest of the file is not read",
                        st.frame
                    ),
                );
                break;
            }
        }
    }
    st.finish();
    st.drain(sink);
    Ok(())
}

fn describe<I>(e: &PcapError<I>) -> String {
    match e {
        PcapError::Eof => "empty".into(),
        PcapError::BufferTooSmall => "block too large".into(),
        PcapError::UnexpectedEof | PcapError::Incomplete(_) => "cut short".into(),
        PcapError::ReadError => "read error".into(),
        PcapError::HeaderNotRecognized => "header not recognized".into(),
        PcapError::NomError(_, k) | PcapError::OwnedNomError(_, k) => {
            format!("bad structure: {}", k.description())
        }
    }
}

fn grow(rdr: &mut dyn PcapReaderIterator, size: &mut usize) -> bool {
    if *size >= BUFFER_MAX {
        return false;
    }
    *size = (*size * 2).min(BUFFER_MAX);
    rdr.grow(*size)
}

/// One interface of a pcapng section (or the pcap file's one).
#[derive(Debug, Clone, Copy)]
struct Iface {
    linktype: i32,
    /// Timestamp units per second.
    res: u64,
    /// Seconds added to every timestamp.
    offset: i64,
}

type Endpoint = (IpAddr, u16);
/// A connection's endpoints, lower first.
type ConnKey = (Endpoint, Endpoint);

/// What a connection carries, as far as known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proto {
    Undecided,
    Http,
    Tls,
    Http2,
    Other,
}

struct Conn {
    /// `ends[0]` sent what `half[0]` holds.
    ends: [Endpoint; 2],
    half: [HalfStream; 2],
    proto: Proto,
    /// First bytes of each direction while the protocol is undecided.
    probe: [Vec<u8>; 2],
    /// Each direction's verdict on its first bytes.
    start: [Option<Start>; 2],
    /// Index of the client's direction, once known.
    client: Option<usize>,
    // Boxed: most connections of a busy capture carry one or neither.
    http: Option<Box<Http1>>,
    h2: Option<Box<Http2>>,
    /// The TLS layer, when the connection carries TLS: what `feed` reads goes
    /// through it, and the plaintext it gives goes to `dispatch`.
    tls: Option<Box<tls::Flow>>,
    fin_done: [bool; 2],
    bytes: [u64; 2],
    skipped: [u64; 2],
    first_frame: u64,
    /// The frame being read (gaps carry none of their own).
    last_frame: u64,
    last_ts: Timestamp,
    reported: bool,
    /// Wireshark's `tcp.stream` for this connection.
    stream: u64,
}

struct State {
    caps: Caps,
    ooo_cap: usize,
    frame: u64,
    last_ts: Timestamp,
    legacy: Option<Iface>,
    ifaces: Vec<Iface>,
    /// The next connection's `tcp.stream` (Wireshark counts from 0, in order of
    /// each conversation's first packet).
    next_stream: u64,
    /// Live connections in order of their last packet: evicting the least recently
    /// active is one unlink, never a scan. Boxed: a packet takes its connection out
    /// and puts it back, 8 bytes moved, not the whole connection.
    conns: Table<ConnKey, Box<Conn>>,
    out: Vec<Exchange>,
    /// Problems and notices, typed, until the next drain.
    diags: Vec<Problem>,
    /// Connections looked at to choose one to evict (tests check it is one per eviction).
    evict_work: u64,
    /// `MAX_CONNS`, smaller in tests.
    max_conns: usize,
    counts: HashMap<&'static str, (Kind, u64)>,
    /// Connections closed early to stay under `max_conns`.
    evicted: u64,
    /// Bytes the live connections hold out of order (`HELD_BUDGET`), and the
    /// connections made to give up their holes to stay under it.
    held: usize,
    relieved: u64,
    /// `HELD_BUDGET`, smaller in tests.
    held_budget: usize,
    /// What the bodies in flight keep over all connections: 8 times
    /// `--max-record-bytes` (`http1::body::Gauge`).
    gauge: Gauge,
    stopped: Option<(Kind, String)>,
    /// Key logs from `--tls-keylog`.
    given: Arc<KeyLog>,
    /// Key logs from the capture's Decryption Secrets Blocks so far.
    embedded: KeyLog,
    /// TLS connections that stayed encrypted for want of secrets.
    opaque_tls: u64,
    /// Packets captured shorter than they were, and the longest such capture: a
    /// small snap length, told once for the file besides each stream's gap.
    cut_packets: u64,
    cut_len: usize,
}

/// What a connection's TLS layer needs from the capture: the key logs, and a count
/// of connections left encrypted (one how-to notice per input, not per connection).
struct TlsCx<'a> {
    keys: Keyring<'a>,
    opaque: u64,
}

impl State {
    fn new(limits: &Limits) -> State {
        State {
            caps: Caps {
                body: limits.max_record_bytes,
                decoded: limits.max_decompressed_bytes,
                sse: crate::sse::Budget::from_limits(limits),
            },
            ooo_cap: tcp::DEFAULT_OOO_CAP,
            frame: 0,
            last_ts: Timestamp(0),
            legacy: None,
            ifaces: Vec::new(),
            conns: Table::new(),
            next_stream: 0,
            out: Vec::new(),
            diags: Vec::new(),
            evict_work: 0,
            max_conns: MAX_CONNS,
            counts: HashMap::new(),
            evicted: 0,
            held: 0,
            relieved: 0,
            held_budget: HELD_BUDGET,
            gauge: Gauge::new(
                limits
                    .max_record_bytes
                    .saturating_mul(http1::body::IN_FLIGHT),
            ),
            stopped: None,
            given: Arc::default(),
            embedded: KeyLog::default(),
            opaque_tls: 0,
            cut_packets: 0,
            cut_len: 0,
        }
    }

    fn drain(&mut self, sink: &mut dyn Sink) {
        for x in self.out.drain(..) {
            sink.exchange(x);
        }
        for d in self.diags.drain(..) {
            sink.diagnostic(d);
        }
    }

    /// A per-frame problem, reported one by one up to a limit per kind.
    fn frame_problem(&mut self, counter: &'static str, kind: Kind, message: String) {
        let (_, n) = self.counts.entry(counter).or_insert((kind, 0));
        *n += 1;
        if *n <= PER_KIND {
            self.diags.push(Problem::of(
                Level::Problem,
                kind,
                Locator::Frames {
                    request: self.frame,
                    response: None,
                },
                message,
            ));
        }
    }

    fn note_stop(&mut self, kind: Kind, why: String) {
        self.stopped = Some((kind, why));
    }

    fn block(&mut self, block: PcapBlockOwned<'_>) {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.legacy = Some(Iface {
                    linktype: h.network.0,
                    res: if h.is_nanosecond_precision() {
                        1_000_000_000
                    } else {
                        1_000_000
                    },
                    offset: 0,
                });
            }
            PcapBlockOwned::Legacy(b) => {
                self.frame += 1;
                let Some(iface) = self.legacy else { return };
                let frac = u64::from(b.ts_usec);
                let ts = timestamp(i64::from(b.ts_sec), frac, iface.res);
                let missing = u64::from(b.origlen).saturating_sub(b.data.len() as u64);
                self.packet(iface.linktype, ts, b.data, missing);
            }
            PcapBlockOwned::NG(Block::SectionHeader(_)) => self.ifaces.clear(),
            PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                let res = idb.ts_resolution().unwrap_or(1_000_000);
                self.ifaces.push(Iface {
                    linktype: idb.linktype.0,
                    res: res.max(1),
                    offset: idb.ts_offset(),
                });
            }
            PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                self.frame += 1;
                let Some(iface) = self.ifaces.get(epb.if_id as usize).copied() else {
                    self.frame_problem(
                        "no-iface",
                        Kind::Malformed,
                        format!(
                            "packet names interface {} that no Interface Description Block described; skipped",
                            epb.if_id
                        ),
                    );
                    return;
                };
                let raw = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
                let ts = timestamp(
                    iface.offset.saturating_add((raw / iface.res) as i64),
                    raw % iface.res,
                    iface.res,
                );
                let data = epb.packet_data();
                let missing = u64::from(epb.orig_len()).saturating_sub(data.len() as u64);
                self.packet(iface.linktype, ts, data, missing);
            }
            PcapBlockOwned::NG(Block::SimplePacket(spb)) => {
                self.frame += 1;
                let Some(iface) = self.ifaces.first().copied() else {
                    self.frame_problem(
                        "no-iface",
                        Kind::Malformed,
                        "simple packet block before any Interface Description Block; skipped"
                            .to_owned(),
                    );
                    return;
                };
                // A simple packet block has no timestamp: it inherits the last one.
                let data = spb.packet_data();
                let missing = u64::from(spb.orig_len()).saturating_sub(data.len() as u64);
                let ts = self.last_ts;
                self.packet(iface.linktype, ts, data, missing);
            }
            PcapBlockOwned::NG(Block::DecryptionSecrets(dsb)) => self.secrets(&dsb),
            // Statistics, name resolution, custom and unknown blocks carry no packets.
            PcapBlockOwned::NG(_) => {}
        }
    }

    fn packet(&mut self, linktype: i32, ts: Timestamp, data: &[u8], missing: u64) {
        self.last_ts = self.last_ts.max(ts);
        if missing > 0 {
            self.cut_packets += 1;
            self.cut_len = self.cut_len.max(data.len());
        }
        let l3 = match link::decode(linktype, data) {
            Ok(l3) => l3,
            Err(link::LinkError::NotIp(_)) => return,
            Err(e @ link::LinkError::UnsupportedLinkType(_)) => {
                self.frame_problem("linktype", Kind::Skipped, e.to_string());
                return;
            }
            Err(e) => {
                self.frame_problem("short", Kind::Malformed, e.to_string());
                return;
            }
        };
        // The IP header, then TCP straight from its payload: `LaxSlicedPacket` built
        // (and moved) a struct for every layer a packet might have, 5% of a capture
        // of many small packets.
        let (ip, stop) = match etherparse::LaxIpSlice::from_slice(l3.bytes) {
            Ok(p) => p,
            Err(e) => {
                self.frame_problem("ip", Kind::Malformed, format!("not a valid IP packet: {e}"));
                return;
            }
        };
        let (src, dst) = (ip.source_addr(), ip.destination_addr());
        let payload = ip.payload();
        let (fragmented, incomplete) = (payload.fragmented, payload.incomplete);
        if fragmented {
            self.frame_problem(
                "fragment",
                Kind::Lost,
                format!("IP fragment {src} → {dst}: fragments are not reassembled, so its TCP data is lost"),
            );
            return;
        }
        // As `LaxSlicedPacket` reads a packet: no transport past an extension header
        // that does not parse, and none but a whole TCP header.
        if stop.is_some() || payload.ip_number != etherparse::IpNumber::TCP {
            return;
        }
        let Ok(t) = etherparse::TcpSlice::from_slice(payload.payload) else {
            return;
        };
        let from: Endpoint = (src, t.source_port());
        let to: Endpoint = (dst, t.destination_port());
        let seg = Segment {
            seq: t.sequence_number(),
            syn: t.syn(),
            fin: t.fin(),
            data: t.payload(),
            missing: if incomplete { missing } else { 0 },
            ts,
            frame: self.frame,
        };
        self.tcp(from, to, seg, t.rst(), t.syn() && !t.ack());
    }

    fn tcp(&mut self, from: Endpoint, to: Endpoint, seg: Segment<'_>, rst: bool, opening: bool) {
        let key = if from <= to { (from, to) } else { (to, from) };
        // One lookup per packet: a SYN's (a third of a capture of short flows) also
        // serves to open the connection.
        let mut found = self.conns.find(&key);
        if let (true, Some(slot)) = (opening, found) {
            // A new SYN on a 4-tuple already in use: the old connection is over.
            let reused = self
                .conns
                .get(slot)
                .is_some_and(|c| c.bytes.iter().any(|&b| b > 0) || c.fin_done.iter().any(|&f| f));
            if reused {
                found = None;
                if let Some(c) = self.conns.remove(slot) {
                    self.close(c, End2::CaptureEnded);
                }
            }
        }
        let slot = match found {
            Some(slot) => slot,
            None => {
                if seg.data.is_empty() && !seg.syn && !seg.fin {
                    // A bare ACK or RST of a connection we know nothing of.
                    return;
                }
                if self.conns.len() >= self.max_conns {
                    self.evict();
                }
                let slot = self.conns.insert(
                    key,
                    Box::new(Conn {
                        ends: [from, to],
                        half: [HalfStream::new(self.ooo_cap), HalfStream::new(self.ooo_cap)],
                        proto: Proto::Undecided,
                        probe: [Vec::new(), Vec::new()],
                        start: [None, None],
                        client: opening.then_some(0),
                        http: None,
                        h2: None,
                        tls: None,
                        fin_done: [false, false],
                        bytes: [0, 0],
                        skipped: [0, 0],
                        first_frame: seg.frame,
                        last_frame: seg.frame,
                        last_ts: seg.ts,
                        reported: false,
                        stream: self.next_stream,
                    }),
                );
                self.next_stream += 1;
                slot
            }
        };
        let Some(mut c) = self.conns.take(slot) else {
            return;
        };
        let held = c.held();
        let before = self.out.len();
        let d = usize::from(c.ends[0] != from);
        c.last_ts = c.last_ts.max(seg.ts);
        c.last_frame = seg.frame;
        let mut chunks = tcp::Chunks::new();
        if let Some(h) = c.half.get_mut(d) {
            h.set_window(RECENT_BUDGET / (2 * self.conns.len().max(1)));
            h.push(seg, &mut chunks);
        }
        let mut tx = TlsCx {
            keys: Keyring {
                given: &self.given,
                embedded: &self.embedded,
            },
            opaque: 0,
        };
        let mut cx = Ctx {
            diags: &mut self.diags,
            out: &mut self.out,
            gauge: &self.gauge,
        };
        c.feed(d, chunks, self.caps, &mut tx, &mut cx);
        c.check_fins(seg.ts, &mut cx);
        if rst {
            c.drain_both(|h, out| h.flush(seg.ts, out), self.caps, &mut tx, &mut cx);
            let by_client = c.client == Some(d);
            if let Some(h) = c.http.as_mut() {
                h.reset(by_client, seg.ts, &mut cx);
            }
            if let Some(h) = c.h2.as_mut() {
                h.reset(by_client, seg.ts, &mut cx);
            }
            self.opaque_tls += tx.opaque;
            self.trail(before, c.stream, c.tls_trail());
            self.held = self.held.saturating_sub(held) + c.held();
            self.conns.remove(slot);
            self.close(c, End2::Reset);
            return;
        }
        self.opaque_tls += tx.opaque;
        self.trail(before, c.stream, c.tls_trail());
        self.held = self.held.saturating_sub(held) + c.held();
        if c.fin_done[0] && c.fin_done[1] {
            self.conns.remove(slot);
            self.close(c, End2::Closed);
            return;
        }
        self.conns.put_back(slot, c);
        if self.held > self.held_budget {
            self.relieve(seg.ts);
        }
    }

    /// Past `HELD_BUDGET`, the connections holding most bytes behind holes give them
    /// up (as past a direction's own cap: the missing bytes are lost, what waited is
    /// read) until half the budget is left. One pass over the table frees at least
    /// half the budget, so its cost is spread over that many bytes.
    fn relieve(&mut self, ts: Timestamp) {
        let mut holders: Vec<(usize, u32)> = self
            .conns
            .values()
            .filter(|(_, c)| c.held() > 0)
            .map(|(slot, c)| (c.held(), slot))
            .collect();
        holders.sort_unstable_by(|a, b| b.cmp(a));
        for (_, slot) in holders {
            if self.held <= self.held_budget / 2 {
                break;
            }
            let Some(mut c) = self.conns.take(slot) else {
                continue;
            };
            self.relieved += 1;
            if self.relieved == 1 {
                self.frame_problem(
                    "relieve",
                    Kind::Cap,
                    format!("cap: more than {} MiB waited behind holes over all TCP connections; from here the connections holding most give up their holes as lost each time (a fixed limit)", self.held_budget >> 20),
                );
            }
            let held = c.held();
            let before = self.out.len();
            let mut tx = TlsCx {
                keys: Keyring {
                    given: &self.given,
                    embedded: &self.embedded,
                },
                opaque: 0,
            };
            let mut cx = Ctx {
                diags: &mut self.diags,
                out: &mut self.out,
                gauge: &self.gauge,
            };
            c.drain_both(
                |h, out| h.give_up_holes(ts, out),
                self.caps,
                &mut tx,
                &mut cx,
            );
            c.check_fins(ts, &mut cx);
            self.opaque_tls += tx.opaque;
            self.trail(before, c.stream, c.tls_trail());
            self.held = self.held.saturating_sub(held) + c.held();
            if c.fin_done[0] && c.fin_done[1] {
                self.conns.remove(slot);
                self.close(c, End2::Closed);
            } else {
                self.conns.restore(slot, c);
            }
        }
    }

    /// Marks the exchanges emitted since `before` as ended at the current frame of
    /// TCP stream `stream`: what a Wireshark user needs to find them. A request that
    /// got no response ended with this frame (the FIN or RST), not with its own
    /// last segment.
    fn trail(&mut self, before: usize, stream: u64, tls: Option<TlsTrail>) {
        let (end_frame, now) = (self.frame, self.last_ts);
        for x in self.out.iter_mut().skip(before) {
            if let Payload::Http(h) = &mut x.payload {
                // HTTP/2 leaves a trail with only its stream id (end_frame 0: frames
                // count from 1); the rest is the connection's to say.
                if h.tcp.is_some_and(|t| t.end_frame != 0) {
                    continue;
                }
                if h.response.is_none() {
                    h.end_ts = Some(now);
                }
                let h2_stream = h.tcp.and_then(|t| t.h2_stream);
                h.tcp = Some(TcpTrail {
                    stream,
                    end_frame,
                    h2_stream,
                    tls,
                });
            }
            // A decrypted exchange's location names its TLS connection.
            if let (Some(_), Locator::Frames { request, response }) = (tls, &x.locator) {
                x.locator = Locator::TlsFrames {
                    request: *request,
                    response: *response,
                    tcp_stream: stream,
                };
            }
        }
    }

    /// A Decryption Secrets Block: a TLS key log embedded in the capture.
    fn secrets(&mut self, dsb: &pcap_parser::pcapng::DecryptionSecretsBlock<'_>) {
        // The TLS key log type, 'TLSK' (pcapng §4.7).
        if dsb.secrets_type.0 != 0x544c_534b {
            self.frame_problem(
                "dsb",
                Kind::Skipped,
                format!(
                    "a Decryption Secrets Block of type {:#010x} (not a TLS key log) is not read",
                    dsb.secrets_type.0
                ),
            );
            return;
        }
        if self.embedded.len() >= MAX_EMBEDDED_HANDSHAKES {
            self.frame_problem(
                "dsb-cap",
                Kind::Cap,
                format!("cap: the capture embeds secrets for more than {MAX_EMBEDDED_HANDSHAKES} TLS handshakes; this Decryption Secrets Block is not read (a fixed limit)"),
            );
            return;
        }
        // The block pads its data to 32 bits with zero bytes.
        let len = (dsb.secrets_len as usize).min(dsb.data.len());
        let data = dsb.data.get(..len).unwrap_or_default();
        let end = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let parsed = self.embedded.parse(data.get(..end).unwrap_or_default());
        for bad in &parsed.bad {
            self.frame_problem(
                "dsb-line",
                Kind::Malformed,
                format!(
                    "the TLS key log in a Decryption Secrets Block, line {}: {}; line skipped",
                    bad.line, bad.error
                ),
            );
        }
    }

    /// Closes the least recently active connection to make room for a new one.
    fn evict(&mut self) {
        if let Some(c) = self.conns.pop_oldest() {
            self.evict_work += 1;
            // The first is listed with its frame; the rest are counted at the end, as
            // they all say the same.
            self.evicted += 1;
            if self.evicted == 1 {
                self.frame_problem(
                    "evict",
                    Kind::Cap,
                    format!("cap: more than {MAX_CONNS} TCP connections open at once; from here the least recently active one is closed early each time (its open exchanges end as capture_ended; a fixed limit)"),
                );
            }
            self.close(c, End2::CaptureEnded);
        }
    }

    /// Ends a connection: flushes its streams and reports what it carried.
    fn close(&mut self, mut c: Box<Conn>, how: End2) {
        self.held = self.held.saturating_sub(c.held());
        let ts = c.last_ts;
        let before = self.out.len();
        let mut tx = TlsCx {
            keys: Keyring {
                given: &self.given,
                embedded: &self.embedded,
            },
            opaque: 0,
        };
        let mut cx = Ctx {
            diags: &mut self.diags,
            out: &mut self.out,
            gauge: &self.gauge,
        };
        if how == End2::CaptureEnded {
            c.drain_both(|h, out| h.flush(ts, out), self.caps, &mut tx, &mut cx);
            c.check_fins(ts, &mut cx);
            if let Some(h) = c.http.as_mut() {
                h.capture_ended(ts, &mut cx);
            }
            if let Some(h) = c.h2.as_mut() {
                h.capture_ended(ts, &mut cx);
            }
        } else {
            // Both sides said FIN and every byte before it was read; bytes still held
            // came after a FIN. They are named, not dropped in silence.
            for d in 0..2 {
                let held = c.half.get_mut(d).map_or(0, HalfStream::discard_held);
                if held > 0 {
                    cx.diags.push(Problem::of(
                        Level::Problem,
                        Kind::Lost,
                        Locator::Frames {
                            request: c.first_frame,
                            response: None,
                        },
                        format!(
                            "TCP {} → {}: {held} bytes arrived after the connection's FIN and were not read",
                            c.endpoint(d),
                            c.endpoint(1 - d)
                        ),
                    ));
                }
            }
        }
        // Bytes held while undecided are judged now, with nothing more to come.
        for d in 0..2 {
            if c.start[d].is_none() && !c.probe[d].is_empty() {
                let probe = std::mem::take(&mut c.probe[d]);
                c.start[d] = http1::classify_start(&probe, true);
                c.probe[d] = probe;
            }
        }
        c.report(&mut cx);
        self.opaque_tls += tx.opaque;
        self.trail(before, c.stream, c.tls_trail());
    }

    fn finish(&mut self) {
        let mut conns: Vec<Box<Conn>> = self.conns.drain();
        conns.sort_by_key(|c| c.first_frame);
        for c in conns {
            self.close(c, End2::CaptureEnded);
        }
        if self.cut_packets > 0 {
            self.diags.push(Problem::notice(
                Kind::Lost,
                Locator::Input,
                format!(
                    "{} packet(s) were captured cut short (at most {} bytes kept of each: the capture's snap length); what they carried past that is missing. Capture whole packets with `tcpdump -s 0`",
                    self.cut_packets, self.cut_len
                ),
            ));
        }
        if self.opaque_tls > 0 {
            self.diags.push(Problem::notice(
                Kind::Skipped,
                Locator::Input,
                format!(
                    "{} TLS connection(s) stayed encrypted (each is named in a notice). {}",
                    self.opaque_tls,
                    tls::HOW_TO_KEYLOG
                ),
            ));
        }
        if self.relieved > 1 {
            self.diags.push(Problem::cap(
                Locator::Input,
                format!("cap: {} times in all a TCP connection gave up its holes to keep the bytes held behind holes over all connections under {} MiB (each connection names its lost bytes)", self.relieved, self.held_budget >> 20),
            ));
        }
        if self.evicted > 1 {
            self.diags.push(Problem::cap(
                Locator::Input,
                format!("cap: {} TCP connections in all were closed early to stay under {MAX_CONNS} open at once (their open exchanges ended as capture_ended)", self.evicted),
            ));
        }
        let mut counts: Vec<(&'static str, (Kind, u64))> = self.counts.drain().collect();
        counts.sort_by_key(|(c, _)| *c);
        for (counter, (kind, n)) in counts {
            if n > PER_KIND {
                self.diags.push(Problem::of(
                    Level::Problem,
                    kind,
                    Locator::Input,
                    format!(
                        "{} more frames with the same kind of problem ({counter}) were not listed one by one",
                        n - PER_KIND
                    ),
                ));
            }
        }
        if let Some((kind, why)) = self.stopped.take() {
            self.diags.push(Problem::of(
                Level::Problem,
                kind,
                Locator::Frames {
                    request: self.frame,
                    response: None,
                },
                format!("after frame {}: {why}", self.frame),
            ));
        }
    }
}

/// How a connection left the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End2 {
    Closed,
    Reset,
    CaptureEnded,
}

impl Conn {
    /// Runs `op` on both directions (a flush, or holes given up) and reads what
    /// it delivers.
    fn drain_both(
        &mut self,
        op: impl Fn(&mut HalfStream, &mut tcp::Chunks<'_>),
        caps: Caps,
        tx: &mut TlsCx,
        cx: &mut Ctx,
    ) {
        for side in 0..2 {
            let mut chunks = tcp::Chunks::new();
            if let Some(h) = self.half.get_mut(side) {
                op(h, &mut chunks);
            }
            self.feed(side, chunks, caps, tx, cx);
        }
    }

    /// Bytes both directions hold out of order.
    fn held(&self) -> usize {
        self.half.iter().map(HalfStream::held).sum()
    }

    /// One end of the connection; it prints as `ip:port` (`[ip]:port` for IPv6), and
    /// is only printed when needed: most connections never print theirs.
    fn endpoint(&self, d: usize) -> SocketAddr {
        let (ip, port) = self.ends.get(d).copied().unwrap_or(self.ends[0]);
        SocketAddr::new(ip, port)
    }

    fn feed(&mut self, d: usize, chunks: tcp::Chunks, caps: Caps, tx: &mut TlsCx, cx: &mut Ctx) {
        for chunk in chunks {
            match chunk {
                Chunk::Gap { len } => {
                    if let Some(t) = self.tls.as_mut() {
                        let mut events = Vec::new();
                        t.gap(d, &mut events);
                        self.tls_events(events, None, caps, tx, cx);
                    }
                    if self.proto == Proto::Http {
                        self.gap(d, len, cx);
                    } else if self.proto == Proto::Http2 {
                        let (ts, frame) = (self.last_ts, self.last_frame);
                        let dir = self.dir(d);
                        if let (Some(h), Some(dir)) = (self.h2.as_mut(), dir) {
                            h.gap(dir, len, ts, frame, cx);
                        }
                    } else if let Some(p) = self.probe.get_mut(d) {
                        // Undecided bytes before a hole cannot be joined to after it.
                        p.clear();
                        if let Some(s) = self.start.get_mut(d) {
                            s.get_or_insert(Start::Other);
                        }
                    }
                }
                Chunk::Data { bytes, ts, frame } => {
                    if let Some(b) = self.bytes.get_mut(d) {
                        *b += bytes.len() as u64;
                    }
                    if let Some(t) = self.tls.as_mut() {
                        let mut events = Vec::new();
                        t.push(d, &bytes, &tx.keys, &mut events);
                        self.tls_events(events, Some((ts, frame)), caps, tx, cx);
                        continue;
                    }
                    self.dispatch(d, &bytes, ts, frame, caps, cx);
                    if self.proto == Proto::Tls && self.tls.is_none() {
                        self.begin_tls(d, ts, frame, caps, tx, cx);
                    }
                }
            }
        }
    }

    /// Application bytes of direction `d`, from TCP or decrypted from TLS: the
    /// protocol probe, then HTTP/1.1.
    fn dispatch(
        &mut self,
        d: usize,
        bytes: &[u8],
        ts: Timestamp,
        frame: u64,
        caps: Caps,
        cx: &mut Ctx,
    ) {
        if self.proto == Proto::Http {
            self.http_bytes(d, bytes, ts, frame, caps, cx);
            return;
        }
        if self.proto == Proto::Http2 {
            self.h2_bytes(d, bytes, ts, frame, cx);
            return;
        }
        if self.start.get(d).copied().flatten().is_some() {
            // This direction was judged and the connection is not HTTP
            // (yet): its bytes are only counted.
            if let Some(s) = self.skipped.get_mut(d) {
                *s += bytes.len() as u64;
            }
            return;
        }
        let Some(probe) = self.probe.get_mut(d).filter(|_| !bytes.is_empty()) else {
            return;
        };
        // The first bytes are judged where they lie; they are copied into the probe
        // only when they must wait (no verdict yet, TLS, another protocol), since the
        // common start, one segment showing an HTTP request or response, needs none.
        let held: Cow<[u8]> = if probe.is_empty() {
            Cow::Borrowed(bytes)
        } else {
            probe.extend_from_slice(bytes);
            Cow::Owned(std::mem::take(probe))
        };
        let Some(mut v) = http1::classify_start(&held, false) else {
            self.probe[d] = held.into_owned();
            return;
        };
        // TLS inside TLS is not read; a capture that starts after the handshake
        // shows records that are not a ClientHello.
        if (v == Start::Tls && self.tls.is_some())
            || (v == Start::Other && self.tls.is_none() && tls::looks_like_record(&held))
        {
            v = if self.tls.is_some() {
                Start::Other
            } else {
                Start::Tls
            };
        }
        if let Some(s) = self.start.get_mut(d) {
            *s = Some(v);
        }
        match v {
            Start::Request | Start::Response => {
                let client = if v == Start::Request { d } else { 1 - d };
                self.begin_http(client, caps, cx);
                self.http_bytes(d, &held, ts, frame, caps, cx);
            }
            Start::Tls => {
                self.proto = Proto::Tls;
                self.client.get_or_insert(d);
                self.probe[d] = held.into_owned();
            }
            Start::Http2Preface => {
                self.client = Some(d);
                self.begin_h2(Opening::Preface, frame, caps, cx);
                self.h2_bytes(d, &held, ts, frame, cx);
            }
            Start::Other
                if matches!(self.proto, Proto::Undecided | Proto::Other)
                    && http2::plausible(&held) =>
            {
                // Whole HTTP/2 frames. From the server of a connection whose
                // SYN was seen and whose client said nothing yet: a server
                // that sent its SETTINGS first, the preface is still to come.
                // Otherwise the capture joined the connection; without a SYN
                // the ephemeral (higher) port is taken for the client's.
                // "Said nothing" at the application layer: inside TLS the client's
                // handshake bytes do not count.
                let said_nothing = |c: usize| {
                    self.start.get(c).copied().flatten().is_none()
                        && self.probe.get(c).is_some_and(Vec::is_empty)
                };
                let fresh = self.client.is_some_and(|c| c != d && said_nothing(c));
                if self.client.is_none() {
                    let other = 1 - d;
                    let client = if self.ends[d].1 > self.ends[other].1 {
                        d
                    } else {
                        other
                    };
                    self.client = Some(client);
                }
                let opening = if fresh {
                    Opening::Preface
                } else {
                    Opening::Joined
                };
                self.begin_h2(opening, frame, caps, cx);
                self.h2_bytes(d, &held, ts, frame, cx);
            }
            Start::Other => {
                if self.proto == Proto::Undecided {
                    self.proto = Proto::Other;
                }
                // Keep a few bytes to describe the flow in its report.
                if let Some(s) = self.skipped.get_mut(d) {
                    *s += held.len() as u64;
                }
                self.probe[d] = held[..held.len().min(16)].to_vec();
            }
        }
    }

    /// The connection turned out to carry TLS: from here on its bytes go through a
    /// `tls::Flow`, starting with those the probe held, and the protocol inside is
    /// probed afresh on the plaintext.
    fn begin_tls(
        &mut self,
        d: usize,
        ts: Timestamp,
        frame: u64,
        caps: Caps,
        tx: &mut TlsCx,
        cx: &mut Ctx,
    ) {
        let held = std::mem::take(&mut self.probe[d]);
        self.probe = [Vec::new(), Vec::new()];
        self.start = [None, None];
        self.proto = Proto::Undecided;
        let mut flow = Box::new(tls::Flow::new());
        let mut events = Vec::new();
        flow.push(d, &held, &tx.keys, &mut events);
        self.tls = Some(flow);
        self.tls_events(events, Some((ts, frame)), caps, tx, cx);
    }

    fn tls_events(
        &mut self,
        events: Vec<tls::Event>,
        at: Option<(Timestamp, u64)>,
        caps: Caps,
        tx: &mut TlsCx,
        cx: &mut Ctx,
    ) {
        for e in events {
            match e {
                tls::Event::Plaintext { dir, data } => {
                    let (ts, frame) = at.unwrap_or((self.last_ts, self.first_frame));
                    self.dispatch(dir, &data, ts, frame, caps, cx);
                }
                tls::Event::Note(n) => {
                    if n.leaves_encrypted() {
                        tx.opaque += 1;
                    }
                    let frame = at.map_or(self.first_frame, |(_, f)| f);
                    self.tls_note(&n, frame, cx);
                }
            }
        }
    }

    /// The TLS connection named as a Wireshark user finds it.
    fn tls_name(&self) -> String {
        let client = self
            .tls
            .as_ref()
            .and_then(|t| t.client())
            .or(self.client)
            .unwrap_or(0);
        format!(
            "TLS on TCP stream {} ({} → {})",
            self.stream,
            self.endpoint(client),
            self.endpoint(1 - client)
        )
    }

    fn tls_note(&mut self, n: &tls::Note, frame: u64, cx: &mut Ctx) {
        let client = self.tls.as_ref().and_then(|t| t.client()).or(self.client);
        let (level, kind, what) = n.describe(client);
        cx.diags.push(Problem::of(
            level,
            kind,
            Locator::Frames {
                request: frame,
                response: None,
            },
            format!("{}: {what}", self.tls_name()),
        ));
    }

    /// How a decrypted TLS connection is named on its exchanges.
    fn tls_trail(&self) -> Option<TlsTrail> {
        self.tls.as_ref().and_then(|t| t.trail())
    }

    fn begin_http(&mut self, client: usize, caps: Caps, cx: &mut Ctx) {
        self.proto = Proto::Http;
        self.client = Some(client);
        let server = self.endpoint(1 - client);
        let mut h = Http1::new(caps, server);
        // The other direction already said something that was not an HTTP start:
        // the capture began mid-connection there.
        let other = 1 - client;
        let skipped = self.skipped.get(other).copied().unwrap_or(0);
        if skipped > 0 || self.start.get(other).copied().flatten() == Some(Start::Other) {
            if other == client {
                h.client_gap(skipped);
            } else {
                h.server_gap(skipped, cx);
            }
            cx.diags.push(Problem::notice(
                Kind::Skipped,
                Locator::Frames {
                    request: self.first_frame,
                    response: None,
                },
                format!(
                    "TCP {} → {}: the capture starts inside this connection; {skipped} bytes before the first HTTP message are skipped",
                    self.endpoint(other),
                    self.endpoint(1 - other),
                ),
            ));
        }
        self.http = Some(Box::new(h));
    }

    fn http_bytes(
        &mut self,
        d: usize,
        bytes: &[u8],
        ts: Timestamp,
        frame: u64,
        caps: Caps,
        cx: &mut Ctx,
    ) {
        let Some(h) = self.http.as_mut() else { return };
        if Some(d) == self.client {
            h.client_bytes(bytes, ts, frame, cx);
        } else {
            h.server_bytes(bytes, ts, frame, cx);
        }
        if let Some(up) = h.take_h2c() {
            // 101 to `Upgrade: h2c`: the rest of the connection is HTTP/2.
            self.http = None;
            self.begin_h2(
                Opening::Upgrade {
                    request: up.request,
                    frame: up.req_frame,
                },
                frame,
                caps,
                cx,
            );
            self.h2_bytes(d, &up.rest, ts, frame, cx);
        }
    }

    /// Which side `d` is, for HTTP/2 (the client is known once HTTP/2 begins).
    fn dir(&self, d: usize) -> Option<Dir> {
        let client = self.client?;
        Some(if d == client {
            Dir::Client
        } else {
            Dir::Server
        })
    }

    fn begin_h2(&mut self, opening: Opening, frame: u64, caps: Caps, cx: &mut Ctx) {
        self.proto = Proto::Http2;
        let server = self.endpoint(1 - self.client.unwrap_or(0)).to_string();
        self.h2 = Some(Box::new(Http2::new(caps, server, opening, frame, cx)));
        // Bytes the other side sent while the connection was undecided were passed
        // over; like HTTP/1.1, that is a capture joined mid-connection on that side.
        for d in 0..2 {
            if self.start.get(d).copied().flatten() == Some(Start::Other) && self.skipped[d] > 0 {
                cx.diags.push(Problem::notice(
                    Kind::Skipped,
                    Locator::Frames {
                        request: self.first_frame,
                        response: None,
                    },
                    format!(
                        "TCP {} → {}: {} bytes before the HTTP/2 frames were found are skipped",
                        self.endpoint(d),
                        self.endpoint(1 - d),
                        self.skipped[d]
                    ),
                ));
            }
        }
    }

    fn h2_bytes(&mut self, d: usize, bytes: &[u8], ts: Timestamp, frame: u64, cx: &mut Ctx) {
        let Some(dir) = self.dir(d) else { return };
        if let Some(h) = self.h2.as_mut() {
            h.bytes(dir, bytes, ts, frame, cx);
        }
    }

    fn gap(&mut self, d: usize, len: u64, cx: &mut Ctx) {
        let Some(h) = self.http.as_mut() else { return };
        if Some(d) == self.client {
            h.client_gap(len);
        } else {
            h.server_gap(len, cx);
        }
    }

    /// Tells HTTP about each side's FIN once every byte before it was delivered.
    fn check_fins(&mut self, ts: Timestamp, cx: &mut Ctx) {
        for d in 0..2 {
            let finished = self.half.get(d).is_some_and(HalfStream::finished);
            if !finished || self.fin_done.get(d).copied().unwrap_or(true) {
                continue;
            }
            if let Some(f) = self.fin_done.get_mut(d) {
                *f = true;
            }
            if let Some(h) = self.http.as_mut() {
                if Some(d) == self.client {
                    h.client_fin();
                } else {
                    h.server_fin(ts, cx);
                }
            }
            if let Some(h) = self.h2.as_mut() {
                if Some(d) == self.client {
                    h.client_fin();
                } else {
                    h.server_fin(ts, cx);
                }
            }
        }
    }

    /// A summary problem for a connection that carried data but no HTTP/1.1.
    fn report(&mut self, cx: &mut Ctx) {
        if self.reported {
            return;
        }
        self.reported = true;
        for d in 0..2 {
            let Some(stats) = self.half.get(d).map(|h| h.stats) else {
                continue;
            };
            let mut notes = Vec::new();
            if stats.conflicting_bytes > 0 {
                notes.push(format!(
                    "{} retransmitted bytes differ from the first copy (the first copy is kept)",
                    stats.conflicting_bytes
                ));
            }
            if stats.cap_hits > 0 {
                notes.push(format!(
                    "more than {} bytes waited behind a hole {} time(s): the hole was given up as lost",
                    tcp::DEFAULT_OOO_CAP,
                    stats.cap_hits
                ));
            }
            if stats.budget_hits > 0 {
                notes.push(format!(
                    "its holes were given up as lost {} time(s), to keep the bytes held behind holes over all connections under {} MiB",
                    stats.budget_hits,
                    HELD_BUDGET >> 20
                ));
            }
            if stats.gap_bytes > 0 {
                notes.push(format!(
                    "{} bytes are missing from the capture (lost packets or snap length)",
                    stats.gap_bytes
                ));
            }
            if stats.before_start > 0 {
                notes.push(format!(
                    "{} bytes lie before the start of the stream (out of the sequence window, or sequence numbers that wrapped) and were not read",
                    stats.before_start
                ));
            }
            // Named only when there is something to say: most connections are clean,
            // and formatting two addresses per connection showed in profiles.
            if !notes.is_empty() {
                let flow = format!("TCP {} → {}", self.endpoint(d), self.endpoint(1 - d));
                cx.diags.push(Problem::of(
                    Level::Problem,
                    Kind::Lost,
                    Locator::Frames {
                        request: self.first_frame,
                        response: None,
                    },
                    format!("{flow}: {}", notes.join("; ")),
                ));
            }
        }
        let keying = self.tls.as_ref().map(|t| t.keying());
        // An opaque TLS connection's notice was given when its handshake showed it.
        if self.proto == Proto::Http || self.h2.is_some() || keying == Some(tls::Keying::Opaque) {
            return;
        }
        // A decrypted TLS connection that carried no application data (a client's
        // spare connection) is like an idle TCP one: nothing to report.
        if keying == Some(tls::Keying::Decrypting)
            && self.proto == Proto::Undecided
            && self.probe.iter().all(Vec::is_empty)
        {
            return;
        }
        let total: u64 = self.bytes.iter().sum();
        if total == 0 {
            return;
        }
        let client = self.client.unwrap_or(0);
        let server = 1 - client;
        let flow = format!(
            "TCP {} → {} ({} bytes client→server, {} bytes back)",
            self.endpoint(client),
            self.endpoint(server),
            self.bytes.get(client).copied().unwrap_or(0),
            self.bytes.get(server).copied().unwrap_or(0),
        );
        let what = if keying == Some(tls::Keying::Pending) {
            format!(
                "TLS (TCP stream {}): the handshake is not complete in the capture (no ServerHello), so nothing was decrypted",
                self.stream
            )
        } else if self.tls.is_none()
            && (self.start.contains(&Some(Start::Tls)) || self.proto == Proto::Tls)
        {
            "TLS: encrypted, so no HTTP can be read. Capture with SSLKEYLOGFILE set and decrypt (`editcap --inject-secrets tls,keys.txt`), capture before TLS, or record a HAR instead".to_owned()
        } else {
            let mut first = String::new();
            for probe in &self.probe {
                for &b in probe.iter().take(16) {
                    if b.is_ascii_graphic() || b == b' ' {
                        first.push(b as char);
                    } else {
                        let _ = write!(first, "\\x{b:02x}");
                    }
                }
                if !first.is_empty() {
                    break;
                }
            }
            if first.is_empty() {
                "not HTTP/1.1".to_owned()
            } else {
                format!("not HTTP/1.1 (starts with \"{first}\")")
            }
        };
        cx.diags.push(Problem::notice(
            Kind::Skipped,
            Locator::Frames {
                request: self.first_frame,
                response: None,
            },
            format!("{flow}: {what}"),
        ));
    }
}

/// `whole` seconds plus `frac` units of `1/res` s.
fn timestamp(whole: i64, frac: u64, res: u64) -> Timestamp {
    let res = res.max(1);
    let extra = (frac / res) as i64;
    let nanos = (u128::from(frac % res) * 1_000_000_000 / u128::from(res)) as u32;
    Timestamp::from_parts(whole.saturating_add(extra), nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn syn(frame: u64) -> Segment<'static> {
        Segment {
            seq: 1000,
            syn: true,
            fin: false,
            data: b"",
            missing: 0,
            ts: Timestamp(frame as i64),
            frame,
        }
    }

    /// A capture that missed a packet of each of many live connections: what
    /// waits behind the holes stays within the reader's budget (the connections
    /// holding most give their holes up, their bytes then read), the count of held
    /// bytes stays true, and every byte sent is read or counted lost.
    #[test]
    fn bytes_held_behind_holes_stay_within_one_budget_for_all_connections() {
        let mut st = State::new(&Limits::default());
        st.held_budget = 64 << 10;
        let server: Endpoint = (IpAddr::V4(Ipv4Addr::LOCALHOST), 80);
        let client = |port: u16| -> Endpoint { (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), port) };
        let data = |seq: u32, payload: &'static [u8], frame: u64| Segment {
            seq,
            syn: false,
            fin: false,
            data: payload,
            missing: 0,
            ts: Timestamp(frame as i64),
            frame,
        };
        const CONNS: u16 = 100;
        const ROUNDS: u32 = 40;
        let piece: &'static [u8] = &[b'x'; 1000];
        let mut frame = 0;
        for i in 0..CONNS {
            frame += 1;
            st.tcp(client(20_000 + i), server, syn(frame), false, true);
        }
        // Each connection loses its first 10 bytes, then sends 1,000 at a time.
        for r in 0..ROUNDS {
            for i in 0..CONNS {
                frame += 1;
                st.tcp(
                    client(20_000 + i),
                    server,
                    data(1011 + r * 1000, piece, frame),
                    false,
                    false,
                );
                let held: usize = st.conns.values().map(|(_, c)| c.held()).sum();
                assert_eq!(st.held, held, "the count is true");
                assert!(st.held <= st.held_budget, "{}", st.held);
            }
        }
        assert!(st.relieved > 0);
        let relieved: Vec<_> = st.diags.iter().filter(|d| d.kind == Kind::Cap).collect();
        assert_eq!(
            relieved.len(),
            1,
            "the first listed, with its frame: {relieved:?}"
        );
        assert!(
            relieved[0]
                .message
                .contains("waited behind holes over all TCP connections"),
            "{}",
            relieved[0].message
        );
        st.finish();
        let total = input_cap(&st);
        assert!(
            total.contains(&format!("{} times in all", st.relieved)),
            "{total}"
        );
        let (mut read, mut lost) = (0, 0);
        for d in &st.diags {
            if let Some(at) = d.message.find(" bytes are missing from the capture") {
                let n = d.message[..at].rsplit(' ').next().unwrap_or_default();
                lost += n.parse::<u64>().unwrap();
                read += 1;
            }
        }
        assert_eq!(read, u64::from(CONNS), "each connection names its loss");
        assert_eq!(lost, u64::from(CONNS) * 10);
    }

    #[test]
    fn eviction_takes_the_least_recent_flow_without_scanning_the_table() {
        let mut st = State::new(&Limits::default());
        st.max_conns = 64;
        let server: Endpoint = (IpAddr::V4(Ipv4Addr::LOCALHOST), 80);
        let client = |port: u16| -> Endpoint { (IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), port) };
        let key = |port| {
            let (a, b) = (client(port), server);
            if a <= b {
                (a, b)
            } else {
                (b, a)
            }
        };
        for i in 0..1000u16 {
            if i == 64 {
                // The table is full; flow 0 is active again, so flow 1 is the least
                // recent and goes first.
                st.tcp(client(10_000), server, syn(64), false, false);
                st.tcp(client(10_064), server, syn(65), false, true);
                assert!(st.conns.find(&key(10_000)).is_some());
                assert!(st.conns.find(&key(10_001)).is_none());
                continue;
            }
            st.tcp(
                client(10_000 + i),
                server,
                syn(u64::from(i) + 1),
                false,
                true,
            );
        }
        assert_eq!(st.conns.len(), 64);
        // One connection looked at per eviction, however full the table is.
        assert_eq!(st.evict_work, 1000 - 64);
        assert!(st.conns.find(&key(10_999)).is_some(), "the newest stays");
        let evicted: Vec<_> = st.diags.iter().filter(|d| d.kind == Kind::Cap).collect();
        assert_eq!(
            evicted.len(),
            1,
            "the first eviction listed, with its frame"
        );
        st.finish();
        let total = input_cap(&st);
        assert!(total.contains("936 TCP connections in all"), "{total}");
    }

    /// The one `cap` problem of the whole input, which counts what the capture's
    /// reader gave up.
    fn input_cap(st: &State) -> &str {
        let total: Vec<_> = st
            .diags
            .iter()
            .filter(|d| d.kind == Kind::Cap && d.locator == Locator::Input)
            .collect();
        assert_eq!(total.len(), 1, "{total:?}");
        &total[0].message
    }
}
