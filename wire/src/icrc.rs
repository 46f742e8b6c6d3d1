//! The RoCEv2 invariant CRC: CRC-32 (IEEE 802.3, reflected) over a pseudo-LRH of eight 0xFF bytes, the IP,
//! UDP and BTH headers with their variant fields masked to ones, the rest of the transport headers, the
//! payload and the pad. The trailer is the complemented CRC sent least-significant byte first.

use crate::{bth, ipv4, ipv6, udp};

/// Length of the ICRC trailer.
pub const ICRC_LEN: usize = 4;
/// CRC register after the eight 0xFF bytes that stand in for the IB LRH (no final XOR).
pub const SEED_AFTER_LRH: u32 = 0xDEBB_20E3;

const POLY: u32 = 0xEDB8_8320;

/// Slicing-by-8 tables for the reflected CRC-32.
static TABLES: [[u32; 256]; 8] = {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            i += 1;
        }
        s += 1;
    }
    t
};

/// Advances a raw (non-inverted) reflected CRC-32 register over `data`.
pub fn crc32_update(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = TABLES[7][(lo & 0xFF) as usize]
            ^ TABLES[6][((lo >> 8) & 0xFF) as usize]
            ^ TABLES[5][((lo >> 16) & 0xFF) as usize]
            ^ TABLES[4][(lo >> 24) as usize]
            ^ TABLES[3][(hi & 0xFF) as usize]
            ^ TABLES[2][((hi >> 8) & 0xFF) as usize]
            ^ TABLES[1][((hi >> 16) & 0xFF) as usize]
            ^ TABLES[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ TABLES[0][((crc ^ u32::from(b)) & 0xFF) as usize];
    }
    crc
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
        // Slicing and bytewise paths agree on every length.
        let data: Vec<u8> = (0..100u8).collect();
        for n in 0..data.len() {
            let bytewise = data[..n].iter().fold(0xFFFF_FFFFu32, |c, &b| crc32_update(c, &[b]));
            assert_eq!(crc32_update(0xFFFF_FFFF, &data[..n]), bytewise, "len {n}");
        }
    }
}
