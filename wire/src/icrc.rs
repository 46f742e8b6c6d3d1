//! The RoCEv2 invariant CRC: CRC-32 (IEEE 802.3, reflected) over a pseudo-LRH of eight 0xFF bytes, the IP,
//! UDP and BTH headers with their variant fields masked to ones, the rest of the transport headers, the
//! payload and the pad. The trailer is the complemented CRC sent least-significant byte first.

use crate::{bth, ipv4, ipv6, udp};

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;
/// CRC register after the eight 0xFF bytes that stand in for the IB LRH (no final XOR).
pub const SEED_AFTER_LRH: u32 = 0xDEBB_20E3;

/// Advances a raw (non-inverted) reflected CRC-32 register over `data`. The arithmetic is the `crc32fast`
/// crate's (carry-less multiply folding where the CPU has it); this wrapper keeps our raw-register convention.
pub fn crc32_update(crc: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(!crc);
    h.update(data);
    !h.finalize()
}

/// The IP version of the frame the ICRC covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpVersion {
    V4,
    V6,
}

impl IpVersion {
    pub const fn header_len(self) -> usize {
        match self {
            IpVersion::V4 => ipv4::HEADER_LEN,
            IpVersion::V6 => ipv6::HEADER_LEN,
        }
    }
}

/// The header bytes the ICRC covers as ones, as (offset from the first IP byte, OR mask): the IP fields a
/// router may change (TOS/traffic class, flow label, TTL/hop limit, IPv4 checksum), the UDP checksum and
/// the BTH FECN/BECN/Resv6 byte. The RTL's ICRC lanes are generated from this list too.
pub const fn variant_mask(ip: IpVersion) -> &'static [(usize, u8)] {
    const UDP4: usize = ipv4::HEADER_LEN + udp::CHECKSUM_FIELD.start;
    const UDP6: usize = ipv6::HEADER_LEN + udp::CHECKSUM_FIELD.start;
    const BTH4: usize = ipv4::HEADER_LEN + udp::UdpRepr::LEN + bth::CC_BYTE;
    const BTH6: usize = ipv6::HEADER_LEN + udp::UdpRepr::LEN + bth::CC_BYTE;
    match ip {
        IpVersion::V4 => &[
            (ipv4::TOS_FIELD, 0xFF),
            (ipv4::TTL_FIELD, 0xFF),
            (ipv4::CHECKSUM_FIELD.start, 0xFF),
            (ipv4::CHECKSUM_FIELD.start + 1, 0xFF),
            (UDP4, 0xFF),
            (UDP4 + 1, 0xFF),
            (BTH4, 0xFF),
        ],
        // Traffic class (bits 27:20 of the first word) and flow label (19:0).
        IpVersion::V6 => &[
            (0, 0x0F),
            (1, 0xFF),
            (2, 0xFF),
            (3, 0xFF),
            (ipv6::HOP_LIMIT_FIELD, 0xFF),
            (UDP6, 0xFF),
            (UDP6 + 1, 0xFF),
            (BTH6, 0xFF),
        ],
    }
}

/// Computes the ICRC over `l3`: from the first byte of the IP header to the last pad byte (the trailer
/// itself excluded). Returns the value whose little-endian bytes form the trailer. `l3` must hold at least
/// the IP, UDP and BTH headers.
pub fn compute(ip: IpVersion, l3: &[u8]) -> u32 {
    let hdrs = ip.header_len() + udp::UdpRepr::LEN + bth::HEADER_LEN;
    let mut masked = [0u8; ipv6::HEADER_LEN + udp::UdpRepr::LEN + bth::HEADER_LEN];
    let m = &mut masked[..hdrs];
    m.copy_from_slice(&l3[..hdrs]);
    for &(o, or) in variant_mask(ip) {
        m[o] |= or;
    }
    let crc = crc32_update(SEED_AFTER_LRH, m);
    !crc32_update(crc, &l3[hdrs..])
}

/// The raw CRC register after a frame's covered bytes followed by its own correct ICRC trailer (the CRC-32
/// residue): a receiver can check the ICRC without locating the trailer first.
pub const RESIDUE: u32 = 0xDEBB_20E3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_leaves_the_residue() {
        let data = b"any bytes at all";
        let crc = !crc32_update(SEED_AFTER_LRH, data);
        let after = crc32_update(crc32_update(SEED_AFTER_LRH, data), &crc.to_le_bytes());
        assert_eq!(after, RESIDUE);
        // An all-ones initial register is the same as complementing the first four bytes of the input.
        assert_eq!(crc32_update(0xFFFF_FFFF, &[0xFF; 8]), crc32_update(0, &[0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]));
    }

    #[test]
    fn seed_is_eight_ff_bytes() {
        assert_eq!(crc32_update(0xFFFF_FFFF, &[0xFF; 8]), SEED_AFTER_LRH);
    }

    #[test]
    fn crc32_check_value() {
        // The standard CRC-32 check value of "123456789".
        assert_eq!(!crc32_update(0xFFFF_FFFF, b"123456789"), 0xCBF4_3926);
        // Any split of the input gives the same register as one pass, against a bitwise reference.
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        let bitwise = |mut c: u32, d: &[u8]| {
            for &b in d {
                c ^= u32::from(b);
                for _ in 0..8 {
                    c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
                }
            }
            c
        };
        for n in 0..data.len() {
            let split = crc32_update(crc32_update(0xFFFF_FFFF, &data[..n / 2]), &data[n / 2..n]);
            assert_eq!(split, bitwise(0xFFFF_FFFF, &data[..n]), "len {n}");
        }
    }
}
