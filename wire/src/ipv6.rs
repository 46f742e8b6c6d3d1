//! IPv6 (no extension headers: next header must be UDP).

use crate::field::{get_be, set_be};
use crate::Error;

/// A 128-bit IPv6 address (also a RoCEv2 GID).
pub type Ipv6Addr = [u8; 16];

/// Fixed header length.
pub const HEADER_LEN: usize = 40;

/// Why `Ipv6Repr::parse` rejects a header, in the order it checks (the RTL reports the same reasons).
pub mod reject {
    pub const VERSION: &str = "version is not 6";
    pub const NEXT_HEADER: &str = "next header is not UDP";
    pub const PAYLOAD_LEN: &str = "payload length beyond the frame";
}

/// Byte offsets of the fields (the RTL generator reads them too).
pub mod field {
    use core::ops::Range;
    pub const VER_TC_FL: Range<usize> = 0..4;
    pub const PAYLOAD_LEN: Range<usize> = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: Range<usize> = 8..24;
    pub const DST: Range<usize> = 24..40;
}
pub use field::{HOP_LIMIT as HOP_LIMIT_FIELD, VER_TC_FL as VER_TC_FL_FIELD};

/// Zero-copy IPv6 header view.
#[derive(Debug, Clone, Copy)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let have = buffer.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::Truncated { layer: "IPv6", need: HEADER_LEN, have });
        }
        Ok(Self { buffer })
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    fn word0(&self) -> u32 {
        get_be(&self.b()[field::VER_TC_FL]) as u32
    }
    pub fn version(&self) -> u8 {
        (self.word0() >> 28) as u8
    }
    pub fn traffic_class(&self) -> u8 {
        (self.word0() >> 20) as u8
    }
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0xF_FFFF
    }
    pub fn payload_len(&self) -> u16 {
        get_be(&self.b()[field::PAYLOAD_LEN]) as u16
    }
    pub fn next_header(&self) -> u8 {
        self.b()[field::NEXT_HEADER]
    }
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::HOP_LIMIT]
    }
    pub fn src(&self) -> Ipv6Addr {
        self.b()[field::SRC].try_into().unwrap_or_default()
    }
    pub fn dst(&self) -> Ipv6Addr {
        self.b()[field::DST].try_into().unwrap_or_default()
    }
}

/// Owned, validated IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Ipv6Repr {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    /// Traffic class: DSCP (upper 6 bits) and ECN (lower 2 bits).
    pub traffic_class: u8,
    pub flow_label: u32,
    pub hop_limit: u8,
    pub payload_len: u16,
}

impl Ipv6Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv6Packet<T>) -> Result<Self, Error> {
        if p.version() != 6 {
            return Err(Error::malformed("IPv6", reject::VERSION));
        }
        if p.next_header() != crate::ipv4::PROTO_UDP {
            return Err(Error::malformed("IPv6", reject::NEXT_HEADER));
        }
        if usize::from(p.payload_len()) + HEADER_LEN > p.b().len() {
            return Err(Error::malformed("IPv6", reject::PAYLOAD_LEN));
        }
        Ok(Self {
            src: p.src(),
            dst: p.dst(),
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
            hop_limit: p.hop_limit(),
            payload_len: p.payload_len(),
        })
    }

    pub fn ecn(&self) -> u8 {
        self.traffic_class & crate::ipv4::ECN_MASK
    }

    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        let w0 = (6u32 << 28) | (u32::from(self.traffic_class) << 20) | (self.flow_label & 0xF_FFFF);
        set_be(&mut b[field::VER_TC_FL], u64::from(w0));
        set_be(&mut b[field::PAYLOAD_LEN], u64::from(self.payload_len));
        b[field::NEXT_HEADER] = crate::ipv4::PROTO_UDP;
        b[field::HOP_LIMIT] = self.hop_limit;
        b[field::SRC].copy_from_slice(&self.src);
        b[field::DST].copy_from_slice(&self.dst);
    }
}

/// The IPv4-mapped GID `::ffff:a.b.c.d`, and back.
pub fn gid_from_ipv4(a: crate::ipv4::Ipv4Addr) -> Ipv6Addr {
    let mut g = [0u8; 16];
    g[10] = 0xFF;
    g[11] = 0xFF;
    g[12..].copy_from_slice(&a);
    g
}

/// The IPv4 address of an IPv4-mapped GID, or `None` for a real IPv6 GID.
pub fn gid_to_ipv4(g: &Ipv6Addr) -> Option<crate::ipv4::Ipv4Addr> {
    (g[..10].iter().all(|&b| b == 0) && g[10] == 0xFF && g[11] == 0xFF).then(|| [g[12], g[13], g[14], g[15]])
}

/// ECN Congestion Experienced (RFC 3168) on an ECN-capable header: both ECN bits of the traffic class, bits
/// 21:20 of the first word. False, and nothing changed, when the header is too short or not ECN-capable.
pub fn mark_ce(hdr: &mut [u8]) -> bool {
    if hdr.len() < HEADER_LEN {
        return false;
    }
    let w = get_be(&hdr[field::VER_TC_FL]) as u32;
    let ecn = (crate::ipv4::ECN_MASK as u32) << 20;
    if w & ecn == 0 {
        return false;
    }
    set_be(&mut hdr[field::VER_TC_FL], u64::from(w | ecn));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only ::ffff:a.b.c.d is an IPv4 address; the ECN bits are the traffic class's low two.
    #[test]
    fn ipv4_mapped_gids_and_ecn() {
        let g = gid_from_ipv4([10, 0, 0, 7]);
        assert_eq!(gid_to_ipv4(&g), Some([10, 0, 0, 7]));
        for (i, v) in [(0, 0xFE), (9, 1), (10, 0), (11, 0xFE)] {
            let mut h = g;
            h[i] = v;
            assert_eq!(gid_to_ipv4(&h), None, "byte {i} = {v:#x}");
        }
        let r = Ipv6Repr { traffic_class: 0b1010_1101, ..Default::default() };
        assert_eq!(r.ecn(), 1);
    }

    // The IPv6 header of ICRC vector V5 (payload length 0x20).
    const V5: [u8; 40] = [
        0x66, 0xa1, 0x23, 0x45, 0x00, 0x20, 0x11, 0x40, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xfe,
        0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02,
    ];

    fn repr() -> Ipv6Repr {
        let mut src = [0u8; 16];
        src[0] = 0xfe;
        src[1] = 0x80;
        let mut dst = src;
        src[15] = 1;
        dst[15] = 2;
        Ipv6Repr { src, dst, traffic_class: 0x6A, flow_label: 0x12345, hop_limit: 64, payload_len: 0x20 }
    }

    #[test]
    fn parse_and_emit_v5() {
        let mut buf = V5.to_vec();
        buf.resize(40 + 0x20, 0);
        assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&buf[..]).unwrap()).unwrap(), repr());
        let mut out = [0u8; 40];
        repr().emit(&mut out);
        assert_eq!(out, V5);
    }

    #[test]
    fn rejects_short_payload_and_wrong_version() {
        assert!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&V5[..]).unwrap()).is_err());
        let mut bad = V5.to_vec();
        bad.resize(80, 0);
        bad[0] = 0x46;
        assert!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&bad[..]).unwrap()).is_err());
    }

    #[test]
    fn ipv4_mapped_gid() {
        let g = gid_from_ipv4([10, 0, 0, 1]);
        assert_eq!(gid_to_ipv4(&g), Some([10, 0, 0, 1]));
        assert_eq!(gid_to_ipv4(&repr().src), None);
    }
}
