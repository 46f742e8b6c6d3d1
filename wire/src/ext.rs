//! Extended transport headers: RETH, AETH, ImmDt, IETH, AtomicETH, AtomicAckETH, DETH and the CNP body.

crate::header! {
    /// RDMA Extended Transport Header.
    Reth / RethRepr, len = 16;
    va / set_va: u64 [0..8],
    rkey / set_rkey: u32 [8..12],
    /// Total length of the message (DMA Length).
    dma_len / set_dma_len: u32 [12..16],
}

crate::header! {
    /// ACK Extended Transport Header.
    Aeth / AethRepr, len = 4;
    syndrome / set_syndrome: u8 [0..1],
    msn / set_msn: u32 [1..4],
}

crate::header! {
    /// Immediate data.
    ImmDt / ImmDtRepr, len = 4;
    imm / set_imm: u32 [0..4],
}

crate::header! {
    /// Invalidate Extended Transport Header.
    Ieth / IethRepr, len = 4;
    rkey / set_rkey: u32 [0..4],
}

crate::header! {
    /// Atomic Extended Transport Header.
    AtomicEth / AtomicEthRepr, len = 28;
    va / set_va: u64 [0..8],
    rkey / set_rkey: u32 [8..12],
    /// Swap value (CMP_SWAP) or add value (FETCH_ADD).
    swap_add / set_swap_add: u64 [12..20],
    compare / set_compare: u64 [20..28],
}

crate::header! {
    /// Atomic ACK Extended Transport Header.
    AtomicAckEth / AtomicAckEthRepr, len = 8;
    orig / set_orig: u64 [0..8],
}

crate::header! {
    /// Datagram Extended Transport Header.
    Deth / DethRepr, len = 8;
    qkey / set_qkey: u32 [0..4],
    src_qp / set_src_qp: u32 [5..8],
}

/// Length of the reserved body of a CNP (zeros, covered by the ICRC).
pub const CNP_PAD_LEN: usize = 16;

/// AETH syndrome encoding (bits 6:5 select ACK / RNR NAK / NAK).
pub mod syndrome {
    /// ACK with "no end-to-end credit" (credit code 31).
    pub const ACK_UNLIMITED: u8 = 0x1F;
    pub const RNR_NAK: u8 = 0x20;
    pub const NAK_PSN_SEQ_ERR: u8 = 0x60;
    pub const NAK_INVALID_REQUEST: u8 = 0x61;
    pub const NAK_REMOTE_ACCESS: u8 = 0x62;
    pub const NAK_REMOTE_OP: u8 = 0x63;
    pub const NAK_INVALID_RD_REQUEST: u8 = 0x64;
}

/// What an AETH syndrome says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AethKind {
    /// ACK with a credit code.
    Ack { credit: u8 },
    /// RNR NAK with a min_rnr_timer code.
    RnrNak { timer: u8 },
    /// NAK with a code (0 PSN sequence error .. 4 invalid RD request).
    Nak { code: u8 },
    /// Reserved encoding (bits 6:5 = 10 or bit 7 set).
    Reserved,
}

impl AethRepr {
    pub fn kind(&self) -> AethKind {
        if self.syndrome & 0x80 != 0 {
            return AethKind::Reserved;
        }
        match (self.syndrome >> 5) & 3 {
            0 => AethKind::Ack { credit: self.syndrome & 0x1F },
            1 => AethKind::RnrNak { timer: self.syndrome & 0x1F },
            3 => AethKind::Nak { code: self.syndrome & 0x1F },
            _ => AethKind::Reserved,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The AETH syndrome's three classes and their 5-bit values; class 2 and bit 7 are reserved.
    #[test]
    fn aeth_values_within_each_class() {
        let kind = |syndrome| AethRepr { syndrome, msn: 0 }.kind();
        assert_eq!(kind(0x05), AethKind::Ack { credit: 5 });
        assert_eq!(kind(0x2C), AethKind::RnrNak { timer: 12 });
        assert_eq!(kind(0x62), AethKind::Nak { code: 2 });
        assert_eq!(kind(0x41), AethKind::Reserved);
        assert_eq!(kind(0x85), AethKind::Reserved);
    }

    #[test]
    fn reth_both_ways() {
        let bytes = [0, 0, 0x7f, 0, 0, 0, 0x10, 0, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 5];
        let r = RethRepr::from_bytes(&bytes).unwrap();
        assert_eq!(r, RethRepr { va: 0x7F00_0000_1000, rkey: 0x1234_5678, dma_len: 5 });
        assert_eq!(r.to_bytes(), bytes);
        assert!(RethRepr::from_bytes(&bytes[..15]).is_err());
    }

    #[test]
    fn aeth_both_ways_and_kinds() {
        let bytes = [0x1f, 0, 0, 1];
        let r = AethRepr::from_bytes(&bytes).unwrap();
        assert_eq!(r, AethRepr { syndrome: 0x1F, msn: 1 });
        assert_eq!(r.to_bytes(), bytes);
        assert_eq!(r.kind(), AethKind::Ack { credit: 31 });
        assert_eq!(AethRepr { syndrome: 0x2E, msn: 0 }.kind(), AethKind::RnrNak { timer: 14 });
        assert_eq!(AethRepr { syndrome: 0x62, msn: 0 }.kind(), AethKind::Nak { code: 2 });
        assert_eq!(AethRepr { syndrome: 0x40, msn: 0 }.kind(), AethKind::Reserved);
    }

    #[test]
    fn atomic_both_ways() {
        let r =
            AtomicEthRepr { va: 0x1122_3344_5566_7788, rkey: 0xAABB_CCDD, swap_add: 7, compare: 0xFFFF_FFFF_FFFF_FFFE };
        let b = r.to_bytes();
        assert_eq!(&b[..8], &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(&b[8..12], &[0xAA, 0xBB, 0xCC, 0xDD]);
        assert_eq!(&b[12..20], &[0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!(AtomicEthRepr::from_bytes(&b).unwrap(), r);
        let ack = AtomicAckEthRepr { orig: 0x0102_0304_0506_0708 };
        assert_eq!(ack.to_bytes(), [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn deth_skips_reserved_byte() {
        let bytes = [0x80, 0x01, 0x00, 0x00, 0xEE, 0x00, 0x00, 0x05];
        let r = DethRepr::from_bytes(&bytes).unwrap();
        assert_eq!(r, DethRepr { qkey: 0x8001_0000, src_qp: 5 });
        let mut out = [0xEEu8; 8];
        r.write_to(&mut out).unwrap();
        assert_eq!(out, [0x80, 0x01, 0, 0, 0, 0, 0, 5]);
    }

    #[test]
    fn imm_and_ieth() {
        assert_eq!(ImmDtRepr { imm: 0xDEADBEEF }.to_bytes(), [0xDE, 0xAD, 0xBE, 0xEF]);
        assert_eq!(IethRepr::from_bytes(&[0, 0, 1, 0]).unwrap().rkey, 0x100);
    }
}
