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

/// Computes the ICRC over `l3`: from the first byte of the IP header to the last pad byte (the trailer
/// itself excluded). Returns the value whose little-endian bytes form the trailer. `l3` must hold at least
/// the IP, UDP and BTH headers.
pub fn compute(ip: IpVersion, l3: &[u8]) -> u32 {
    let hdrs = ip.header_len() + udp::UdpRepr::LEN + bth::HEADER_LEN;
    let mut masked = [0u8; ipv6::HEADER_LEN + 8 + bth::HEADER_LEN];
    let m = &mut masked[..hdrs];
    m.copy_from_slice(&l3[..hdrs]);
    let ip_len = ip.header_len();
    match ip {
        IpVersion::V4 => {
            m[ipv4::TOS_FIELD] = 0xFF;
            m[ipv4::TTL_FIELD] = 0xFF;
            m[ipv4::CHECKSUM_FIELD].fill(0xFF);
        }
        IpVersion::V6 => {
            // Traffic class (bits 27:20) and flow label (19:0) of the first word.
            m[0] |= 0x0F;
            m[1..4].fill(0xFF);
            m[ipv6::HOP_LIMIT_FIELD] = 0xFF;
        }
    }
    let udp_csum = ip_len + udp::CHECKSUM_FIELD.start..ip_len + udp::CHECKSUM_FIELD.end;
    m[udp_csum].fill(0xFF);
    m[ip_len + 8 + bth::CC_BYTE] = 0xFF;
    let crc = crc32_update(SEED_AFTER_LRH, m);
    !crc32_update(crc, &l3[hdrs..])
}

#[cfg(test)]
mod tests {
    use super::*;

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
