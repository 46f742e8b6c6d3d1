//! IPv4 (no options: RoCEv2 never sends them; a header with options is rejected).

use crate::field::{get_be, set_be};
use crate::Error;

/// A 32-bit IPv4 address.
pub type Ipv4Addr = [u8; 4];

/// Header length without options.
pub const HEADER_LEN: usize = 20;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// IP protocol number of ICMP.
pub const PROTO_ICMP: u8 = 1;

/// Why `Ipv4Repr::parse` rejects a header, in the order it checks (the RTL reports the same reasons).
pub mod reject {
    pub const VERSION: &str = "version is not 4";
    pub const IHL: &str = "IHL is not 5 (options are not supported)";
    pub const TOTAL_LEN: &str = "total length out of range";
    pub const FRAGMENT: &str = "fragmented";
    pub const CHECKSUM: &str = "bad header checksum";
}

/// Byte offsets of the fields (the RTL generator reads them too).
pub mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const TOTAL_LEN: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLAGS_FRAG: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
}
pub use field::{CHECKSUM as CHECKSUM_FIELD, TOS as TOS_FIELD, TTL as TTL_FIELD};

/// Zero-copy IPv4 header view.
#[derive(Debug, Clone, Copy)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let have = buffer.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::Truncated { layer: "IPv4", need: HEADER_LEN, have });
        }
        Ok(Self { buffer })
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn version(&self) -> u8 {
        self.b()[field::VER_IHL] >> 4
    }
    /// Header length in bytes (IHL x 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.b()[field::VER_IHL] & 0xF) * 4
    }
    pub fn tos(&self) -> u8 {
        self.b()[field::TOS]
    }
    pub fn total_len(&self) -> u16 {
        get_be(&self.b()[field::TOTAL_LEN]) as u16
    }
    pub fn ident(&self) -> u16 {
        get_be(&self.b()[field::IDENT]) as u16
    }
    pub fn dont_frag(&self) -> bool {
        self.b()[field::FLAGS_FRAG.start] & 0x40 != 0
    }
    /// More-fragments flag or a non-zero offset: this is a fragment.
    pub fn is_fragment(&self) -> bool {
        get_be(&self.b()[field::FLAGS_FRAG]) & 0x3FFF != 0
    }
    pub fn ttl(&self) -> u8 {
        self.b()[field::TTL]
    }
    pub fn protocol(&self) -> u8 {
        self.b()[field::PROTOCOL]
    }
    pub fn checksum(&self) -> u16 {
        get_be(&self.b()[field::CHECKSUM]) as u16
    }
    pub fn src(&self) -> Ipv4Addr {
        self.b()[field::SRC].try_into().unwrap_or_default()
    }
    pub fn dst(&self) -> Ipv4Addr {
        self.b()[field::DST].try_into().unwrap_or_default()
    }
    /// True when the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum(&self.b()[..HEADER_LEN]) == 0
    }
}

/// ECN Congestion Experienced (RFC 3168) on an ECN-capable header: sets both ECN bits of the TOS byte and
/// rewrites the header checksum. False, and nothing changed, when the header is too short or not ECN-capable.
pub fn mark_ce(hdr: &mut [u8]) -> bool {
    if hdr.len() < HEADER_LEN || hdr[field::TOS] & ECN_MASK == 0 {
        return false;
    }
    hdr[field::TOS] |= ECN_MASK;
    hdr[field::CHECKSUM].fill(0);
    let c = checksum(&hdr[..HEADER_LEN]);
    hdr[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    true
}

/// The ECN bits of the TOS byte (and of IPv6's traffic class).
pub const ECN_MASK: u8 = 3;

/// The Internet checksum (RFC 1071) of `data`, already complemented.
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum = 0u32;
    for chunk in data.chunks(2) {
        let word = if chunk.len() == 2 { u16::from_be_bytes([chunk[0], chunk[1]]) } else { u16::from(chunk[0]) << 8 };
        sum += u32::from(word);
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Owned, validated IPv4 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    /// DSCP (upper 6 bits) and ECN (lower 2 bits).
    pub tos: u8,
    pub ttl: u8,
    pub ident: u16,
    /// Length of what follows the IP header.
    pub payload_len: u16,
}

impl Ipv4Repr {
    /// Validates version, IHL, protocol UDP, fragment bits, total length against `avail` and the checksum.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Self, Error> {
        if p.version() != 4 {
            return Err(Error::malformed("IPv4", reject::VERSION));
        }
        if p.header_len() != HEADER_LEN {
            return Err(Error::malformed("IPv4", reject::IHL));
        }
        let total = usize::from(p.total_len());
        if total < HEADER_LEN || total > p.b().len() {
            return Err(Error::malformed("IPv4", reject::TOTAL_LEN));
        }
        if p.is_fragment() {
            return Err(Error::malformed("IPv4", reject::FRAGMENT));
        }
        if !p.verify_checksum() {
            return Err(Error::malformed("IPv4", reject::CHECKSUM));
        }
        Ok(Self {
            src: p.src(),
            dst: p.dst(),
            tos: p.tos(),
            ttl: p.ttl(),
            ident: p.ident(),
            payload_len: (total - HEADER_LEN) as u16,
        })
    }

    pub fn ecn(&self) -> u8 {
        self.tos & ECN_MASK
    }

    /// Writes a 20-byte header with DF set, protocol UDP and a correct checksum.
    pub fn emit(&self, buf: &mut [u8]) {
        self.emit_protocol(buf, PROTO_UDP);
    }

    /// Writes a 20-byte header with DF set, protocol `protocol` and a correct checksum.
    pub fn emit_protocol(&self, buf: &mut [u8], protocol: u8) {
        let b = &mut buf[..HEADER_LEN];
        b[field::VER_IHL] = 0x45;
        b[field::TOS] = self.tos;
        set_be(&mut b[field::TOTAL_LEN], u64::from(self.payload_len) + HEADER_LEN as u64);
        set_be(&mut b[field::IDENT], u64::from(self.ident));
        set_be(&mut b[field::FLAGS_FRAG], 0x4000);
        b[field::TTL] = self.ttl;
        b[field::PROTOCOL] = protocol;
        set_be(&mut b[field::CHECKSUM], 0);
        b[field::SRC].copy_from_slice(&self.src);
        b[field::DST].copy_from_slice(&self.dst);
        let c = checksum(b);
        set_be(&mut b[field::CHECKSUM], u64::from(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags and fragment offset, the checksum field, and the ECN bits.
    #[test]
    fn flags_checksum_and_ecn() {
        let mut h = [0u8; HEADER_LEN];
        h[0] = 0x45;
        h[field::FLAGS_FRAG.start] = 0x40; // DF
        h[field::CHECKSUM.start..field::CHECKSUM.end].copy_from_slice(&[0xAB, 0xCD]);
        let p = Ipv4Packet::new_checked(&h[..]).unwrap();
        assert!(p.dont_frag() && !p.is_fragment());
        assert_eq!(p.checksum(), 0xABCD);
        h[field::FLAGS_FRAG.start] = 0x20; // MF
        assert!(!Ipv4Packet::new_checked(&h[..]).unwrap().dont_frag());
        assert!(Ipv4Packet::new_checked(&h[..]).unwrap().is_fragment());
        h[field::FLAGS_FRAG.start] = 0;
        h[field::FLAGS_FRAG.end - 1] = 1; // offset 8 bytes
        assert!(Ipv4Packet::new_checked(&h[..]).unwrap().is_fragment());
        assert_eq!(Ipv4Repr { tos: 0b1010_1110, ..Default::default() }.ecn(), 2);
    }

    /// RFC 1071 over an odd number of bytes: the last one is the high byte of a zero-padded word.
    #[test]
    fn checksum_of_odd_length_data() {
        assert_eq!(checksum(&[0x12, 0x34, 0x56]), !(0x1234u16 + 0x5600));
        assert_eq!(checksum(&[0xFF, 0xFF, 0x00, 0x02]), !0x0002, "end-around carry");
    }

    // The IPv4 header of ICRC vector V1.
    const V1: [u8; 20] = [
        0x45, 0x02, 0x00, 0x3c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0xa5, 0x27, 0xc0, 0xa8, 0x01, 0x01, 0xc0, 0xa8,
        0x01, 0x02,
    ];

    fn with_room(h: &[u8]) -> Vec<u8> {
        let mut v = h.to_vec();
        v.resize(0x3c, 0);
        v
    }

    #[test]
    fn parse_v1() {
        let buf = with_room(&V1);
        let r = Ipv4Repr::parse(&Ipv4Packet::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!(
            r,
            Ipv4Repr { src: [192, 168, 1, 1], dst: [192, 168, 1, 2], tos: 2, ttl: 64, ident: 0x1234, payload_len: 40 }
        );
    }

    #[test]
    fn emit_v1() {
        let r =
            Ipv4Repr { src: [192, 168, 1, 1], dst: [192, 168, 1, 2], tos: 2, ttl: 64, ident: 0x1234, payload_len: 40 };
        let mut b = [0u8; 20];
        r.emit(&mut b);
        assert_eq!(b, V1);
    }

    #[test]
    fn rejects_bad_fields() {
        let mut bad = with_room(&V1);
        bad[10] ^= 1;
        assert!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&bad[..]).unwrap()).is_err());
        let mut short = V1;
        short[3] = 0xF0; // total length beyond the buffer
        assert!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&short[..]).unwrap()).is_err());
        let mut v6 = with_room(&V1);
        v6[0] = 0x65;
        assert!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&v6[..]).unwrap()).is_err());
        assert!(Ipv4Packet::new_checked(&V1[..19]).is_err());
    }
}
