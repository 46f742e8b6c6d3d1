//! Completion queue entries: 64 bytes, written by the NIC into a ring of 2^log_size entries.
//!
//! Ownership: the NIC writes entry `n` (a free-running counter) with `owner = ((n >> log_size) & 1) ^ 1`,
//! so the first pass writes 1 into a zeroed ring. The driver, at consumer counter `c`, owns the entry
//! when its owner bit equals `((c >> log_size) & 1) ^ 1`. The owner byte is written last.

/// CQE size in bytes.
pub const CQE_LEN: usize = 64;
/// Offset of the owner byte (bit 0).
pub const OWNER: usize = 63;

crate::header! {
    /// Completion entry, mirroring `struct ibv_wc`.
    Cqe / CqeRepr, len = 64;
    wr_id / set_wr_id: u64 [0..8],
    byte_len / set_byte_len: u32 [8..12],
    /// Immediate data, or the invalidated R_Key with `WITH_INV`.
    imm_data / set_imm_data: u32 [12..16],
    qp_num / set_qp_num: u32 [16..20],
    src_qp / set_src_qp: u32 [20..24],
    /// Index of the WQE in its ring (16 bits of the ring counter).
    wqe_index / set_wqe_index: u16 [24..26],
    /// `WcOpcode`.
    opcode / set_opcode: u8 [26..27],
    /// `WcStatus`.
    status / set_status: u8 [27..28],
    /// Device-specific detail for errors (e.g. the NAK syndrome received).
    vendor_err / set_vendor_err: u8 [28..29],
    /// `wc_flags` bits.
    wc_flags / set_wc_flags: u8 [29..30],
    /// 1 = the CQE belongs to a receive WQE.
    is_recv / set_is_recv: u8 [30..31],
    /// 1 = the message asked for a solicited event (BTH SE on its last packet).
    se / set_se: u8 [31..32],
    owner / set_owner: u8 [63..64],
}

/// Owner bit the NIC writes for its `n`-th CQE on a ring of `2^log_size`.
pub const fn owner_for(n: u32, log_size: u8) -> u8 {
    (((n >> log_size) & 1) ^ 1) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_flips_each_pass() {
        assert_eq!(owner_for(0, 2), 1);
        assert_eq!(owner_for(3, 2), 1);
        assert_eq!(owner_for(4, 2), 0);
        assert_eq!(owner_for(8, 2), 1);
    }

    #[test]
    fn layout() {
        let c = CqeRepr { wr_id: 1, byte_len: 0x100, status: 12, opcode: 129, owner: 1, ..Default::default() };
        let b = c.to_bytes();
        assert_eq!(b[63], 1);
        assert_eq!(b[26], 129);
        assert_eq!(b[27], 12);
        assert_eq!(&b[8..12], &[0, 0, 1, 0]);
        assert_eq!(CqeRepr::from_bytes(&b).unwrap(), c);
    }
}
