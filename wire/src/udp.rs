//! UDP. RoCEv2 sends checksum 0 and uses destination port 4791.

/// The RoCEv2 UDP destination port.
pub const ROCE_V2_PORT: u16 = 4791;

crate::header! {
    /// Zero-copy UDP header view.
    UdpPacket / UdpRepr, len = 8;
    src_port / set_src_port: u16 [0..2],
    dst_port / set_dst_port: u16 [2..4],
    /// Length of UDP header plus payload.
    len / set_len: u16 [4..6],
    checksum / set_checksum: u16 [6..8],
}

/// Byte range of the checksum (masked in the ICRC).
pub const CHECKSUM_FIELD: core::ops::Range<usize> = 6..8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways() {
        let bytes = [0xc0, 0x01, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00];
        let r = UdpRepr::from_bytes(&bytes).unwrap();
        assert_eq!(r, UdpRepr { src_port: 0xc001, dst_port: ROCE_V2_PORT, len: 0x28, checksum: 0 });
        assert_eq!(r.to_bytes(), bytes);
        assert!(UdpRepr::from_bytes(&bytes[..7]).is_err());
    }
}
