//! Link layer: one captured frame and its pcap link type → the network-layer bytes
//! and their EtherType. Written here rather than taken from `etherparse` or
//! `pcap_parser::data` because those reject Linux "cooked" captures of the loopback
//! device, lack SLL2, and read BSD NULL headers in one byte order only; MCP
//! captures are mostly loopback.

/// Link types we decode (values from the tcpdump.org LINKTYPE registry).
pub const NULL: i32 = 0;
pub const ETHERNET: i32 = 1;
pub const RAW: i32 = 101;
pub const LOOP: i32 = 108;
pub const LINUX_SLL: i32 = 113;
pub const IPV4: i32 = 228;
pub const IPV6: i32 = 229;
pub const LINUX_SLL2: i32 = 276;
/// Some old libpcaps wrote RAW as 12 or 14.
const RAW_OLD_A: i32 = 12;
const RAW_OLD_B: i32 = 14;

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;

/// The network layer of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct L3<'a> {
    pub ethertype: u16,
    pub bytes: &'a [u8],
}

/// Why a frame yields no network layer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("link type {0} is not supported (mcpsift reads Ethernet, Linux SLL/SLL2, BSD NULL/LOOP and raw IP)")]
    UnsupportedLinkType(i32),
    #[error("frame too short for its link header ({0} bytes)")]
    Short(usize),
    /// Not IP (ARP, LLDP, …): nothing for us, not a problem.
    #[error("not IP (EtherType 0x{0:04x})")]
    NotIp(u16),
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([*s.first()?, *s.get(1)?]))
}

fn sized(data: &[u8], header: usize) -> Result<&[u8], LinkError> {
    data.get(header..).ok_or(LinkError::Short(data.len()))
}

/// Strips the link header of `data` captured with `linktype`.
pub fn decode(linktype: i32, data: &[u8]) -> Result<L3<'_>, LinkError> {
    let short = || LinkError::Short(data.len());
    let (ethertype, bytes) = match linktype {
        ETHERNET => {
            let mut et = be16(data, 12).ok_or_else(short)?;
            let mut at = 14usize;
            // 802.1Q and QinQ tags: each is 4 bytes, the inner EtherType last.
            while matches!(et, ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD) {
                et = be16(data, at + 2).ok_or_else(short)?;
                at += 4;
            }
            (et, sized(data, at)?)
        }
        LINUX_SLL => (be16(data, 14).ok_or_else(short)?, sized(data, 16)?),
        LINUX_SLL2 => (be16(data, 0).ok_or_else(short)?, sized(data, 20)?),
        NULL | LOOP => {
            let raw: [u8; 4] = data
                .get(..4)
                .and_then(|s| s.try_into().ok())
                .ok_or_else(short)?;
            // NULL is in the capturing host's byte order, LOOP in network order; a
            // family is a small number, so whichever order gives one is right.
            let le = u32::from_le_bytes(raw);
            let be = u32::from_be_bytes(raw);
            let family = if linktype == LOOP || le > 0xffff {
                be
            } else {
                le
            };
            let et = match family {
                2 => ETHERTYPE_IPV4,
                24 | 28 | 30 => ETHERTYPE_IPV6,
                other => return Err(LinkError::NotIp(other as u16)),
            };
            (et, sized(data, 4)?)
        }
        RAW | RAW_OLD_A | RAW_OLD_B | IPV4 | IPV6 => {
            let et = match data.first().map(|b| b >> 4) {
                Some(4) => ETHERTYPE_IPV4,
                Some(6) => ETHERTYPE_IPV6,
                Some(v) => return Err(LinkError::NotIp(v as u16)),
                None => return Err(short()),
            };
            (et, data)
        }
        other => return Err(LinkError::UnsupportedLinkType(other)),
    };
    if ethertype != ETHERTYPE_IPV4 && ethertype != ETHERTYPE_IPV6 {
        return Err(LinkError::NotIp(ethertype));
    }
    Ok(L3 { ethertype, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP4: &[u8] = &[0x45, 0, 0, 20];

    #[test]
    fn every_link_type() {
        let mut eth = vec![0u8; 12];
        eth.extend_from_slice(&[0x81, 0x00, 0, 5, 0x08, 0x00]);
        eth.extend_from_slice(IP4);
        assert_eq!(decode(ETHERNET, &eth).unwrap().bytes, IP4);

        let mut sll = vec![0u8; 14];
        sll[2..4].copy_from_slice(&772u16.to_be_bytes()); // ARPHRD_LOOPBACK
        sll.extend_from_slice(&[0x86, 0xdd, 0x60]);
        assert_eq!(decode(LINUX_SLL, &sll).unwrap().ethertype, ETHERTYPE_IPV6);

        let mut sll2 = vec![0x08, 0x00];
        sll2.extend_from_slice(&[0u8; 18]);
        sll2.extend_from_slice(IP4);
        assert_eq!(decode(LINUX_SLL2, &sll2).unwrap().bytes, IP4);

        for hdr in [[2, 0, 0, 0], [0, 0, 0, 2]] {
            let mut null = hdr.to_vec();
            null.extend_from_slice(IP4);
            assert_eq!(decode(NULL, &null).unwrap().bytes, IP4);
        }
        assert_eq!(
            decode(LOOP, &[0, 0, 0, 30, 0x60]).unwrap().ethertype,
            ETHERTYPE_IPV6
        );
        assert_eq!(decode(RAW, IP4).unwrap().ethertype, ETHERTYPE_IPV4);
        assert_eq!(decode(ETHERNET, &[0; 5]), Err(LinkError::Short(5)));
        assert_eq!(decode(ETHERNET, &[]), Err(LinkError::Short(0)));
        assert_eq!(decode(RAW, &[]), Err(LinkError::Short(0)));
        assert_eq!(decode(147, IP4), Err(LinkError::UnsupportedLinkType(147)));
        let mut arp = vec![0u8; 12];
        arp.extend_from_slice(&[0x08, 0x06]);
        assert_eq!(decode(ETHERNET, &arp), Err(LinkError::NotIp(0x0806)));
    }
}
