//! Command mailboxes. The driver writes a 256-byte mailbox into host memory: a header (opcode), the
//! command's input at `IN`, and the device writes the status, syndrome and the output at `OUT`.
//! Each command is answered exactly once with a `Status`; a bad request never changes device state.

/// Mailbox size in bytes.
pub const MAILBOX_LEN: usize = 256;
/// Offset of the command input.
pub const IN: usize = 16;
/// Offset of the output header (status, syndrome).
pub const OUT_HDR: usize = 128;
/// Offset of the command output.
pub const OUT: usize = 144;

crate::header! {
    /// Mailbox header at offset 0.
    CmdHeader / CmdHeaderRepr, len = 16;
    opcode / set_opcode: u16 [0..2],
}

crate::header! {
    /// Output header at `OUT_HDR`.
    CmdOutHeader / CmdOutHeaderRepr, len = 16;
    status / set_status: u8 [0..1],
    /// Which check failed (command-specific detail for logs).
    syndrome / set_syndrome: u32 [4..8],
}

/// Command opcodes.
pub mod op {
    pub const SET_PORT: u16 = 0x01;
    pub const SET_GID: u16 = 0x02;
    pub const ALLOC_PD: u16 = 0x10;
    pub const DEALLOC_PD: u16 = 0x11;
    pub const REG_MR: u16 = 0x20;
    pub const DEREG_MR: u16 = 0x21;
    pub const CREATE_CQ: u16 = 0x30;
    pub const DESTROY_CQ: u16 = 0x31;
    pub const CREATE_QP: u16 = 0x40;
    pub const MODIFY_QP: u16 = 0x41;
    pub const QUERY_QP: u16 = 0x42;
    pub const DESTROY_QP: u16 = 0x43;
    /// Creates the device's event queue (input `CreateCqRepr`: the same ring description, 16-byte EQEs).
    pub const CREATE_EQ: u16 = 0x50;
}

/// Command completion status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[repr(u8)]
pub enum Status {
    #[error("ok")]
    Ok = 0,
    #[error("unknown command opcode")]
    BadOp = 1,
    #[error("bad parameter")]
    BadParam = 2,
    #[error("operation not allowed in the object's current state")]
    BadState = 3,
    #[error("no such object")]
    BadResource = 4,
    #[error("table full")]
    NoResources = 5,
    #[error("object still in use")]
    Busy = 6,
    #[error("mailbox could not be read or written")]
    BadMailbox = 7,
}

impl Status {
    pub fn from_u8(v: u8) -> Self {
        match v {
            0 => Status::Ok,
            1 => Status::BadOp,
            2 => Status::BadParam,
            3 => Status::BadState,
            4 => Status::BadResource,
            5 => Status::NoResources,
            6 => Status::Busy,
            _ => Status::BadMailbox,
        }
    }
}

crate::header! {
    /// SET_PORT input: the port's MAC address.
    SetPort / SetPortRepr, len = 8;
    mac / set_mac: u64 [0..6],
}

crate::header! {
    /// SET_GID input: GID table entry (an IPv4-mapped GID selects IPv4 encapsulation).
    SetGid / SetGidRepr, len = 24;
    index / set_index: u8 [0..1],
    /// 1 = entry valid.
    valid / set_valid: u8 [1..2],
    gid_hi / set_gid_hi: u64 [8..16],
    gid_lo / set_gid_lo: u64 [16..24],
}

crate::header! {
    /// Output holding one object number (ALLOC_PD, CREATE_CQ, CREATE_QP).
    ObjOut / ObjOutRepr, len = 4;
    id / set_id: u32 [0..4],
}

crate::header! {
    /// Input naming one object (DEALLOC_PD, DESTROY_CQ, QUERY_QP, DESTROY_QP, DEREG_MR by key).
    ObjIn / ObjInRepr, len = 4;
    id / set_id: u32 [0..4],
}

crate::header! {
    /// REG_MR input. The region is contiguous in IOVA space.
    RegMr / RegMrRepr, len = 24;
    pdn / set_pdn: u32 [0..4],
    access / set_access: u32 [4..8],
    iova / set_iova: u64 [8..16],
    length / set_length: u64 [16..24],
}

crate::header! {
    /// REG_MR output: L_Key and R_Key (equal: table index << 8 | variant).
    RegMrOut / RegMrOutRepr, len = 8;
    lkey / set_lkey: u32 [0..4],
    rkey / set_rkey: u32 [4..8],
}

crate::header! {
    /// CREATE_CQ input: ring of 2^log_size 64-byte CQEs at `ring_iova`, zeroed by the driver. CREATE_EQ
    /// takes the same with 16-byte EQEs.
    CreateCq / CreateCqRepr, len = 16;
    log_size / set_log_size: u8 [0..1],
    ring_iova / set_ring_iova: u64 [8..16],
}

crate::header! {
    /// CREATE_QP input. Rings of 2^log_size WQEs of 2^log_stride bytes each.
    CreateQp / CreateQpRepr, len = 40;
    pdn / set_pdn: u32 [0..4],
    send_cqn / set_send_cqn: u32 [4..8],
    recv_cqn / set_recv_cqn: u32 [8..12],
    sq_log_size / set_sq_log_size: u8 [12..13],
    sq_log_stride / set_sq_log_stride: u8 [13..14],
    rq_log_size / set_rq_log_size: u8 [14..15],
    rq_log_stride / set_rq_log_stride: u8 [15..16],
    sq_iova / set_sq_iova: u64 [16..24],
    rq_iova / set_rq_iova: u64 [24..32],
    /// 1 = every send WQE completes with a CQE (`sq_sig_all`).
    sq_sig_all / set_sq_sig_all: u8 [32..33],
    /// `verbs::QpType`.
    qp_type / set_qp_type: u8 [33..34],
}

crate::header! {
    /// MODIFY_QP input and QUERY_QP output: the attributes of `ibv_qp_attr` the device keeps.
    QpAttrs / QpAttrsRepr, len = 96;
    qpn / set_qpn: u32 [0..4],
    /// `verbs::attr` bits naming the fields below that are valid (MODIFY_QP only).
    attr_mask / set_attr_mask: u32 [4..8],
    qp_state / set_qp_state: u8 [8..9],
    cur_qp_state / set_cur_qp_state: u8 [9..10],
    path_mtu / set_path_mtu: u8 [10..11],
    timeout / set_timeout: u8 [11..12],
    retry_cnt / set_retry_cnt: u8 [12..13],
    rnr_retry / set_rnr_retry: u8 [13..14],
    min_rnr_timer / set_min_rnr_timer: u8 [14..15],
    max_rd_atomic / set_max_rd_atomic: u8 [15..16],
    max_dest_rd_atomic / set_max_dest_rd_atomic: u8 [16..17],
    sgid_index / set_sgid_index: u8 [17..18],
    hop_limit / set_hop_limit: u8 [18..19],
    /// DSCP (7:2) and ECN (1:0) to send with.
    traffic_class / set_traffic_class: u8 [19..20],
    qp_access_flags / set_qp_access_flags: u32 [20..24],
    dest_qp_num / set_dest_qp_num: u32 [24..28],
    rq_psn / set_rq_psn: u32 [28..32],
    sq_psn / set_sq_psn: u32 [32..36],
    flow_label / set_flow_label: u32 [36..40],
    dmac / set_dmac: u64 [40..46],
    /// The 802.1Q tag control information (PCP 15:13, DEI 12, VID 11:0), used when `vlan_tagged` is 1.
    vlan / set_vlan: u16 [46..48],
    dgid_hi / set_dgid_hi: u64 [48..56],
    dgid_lo / set_dgid_lo: u64 [56..64],
    pkey_index / set_pkey_index: u16 [64..66],
    port_num / set_port_num: u8 [66..67],
    /// Requester and responder state for QUERY_QP: next PSN to send, expected PSN (read-only).
    sq_draining / set_sq_draining: u8 [67..68],
    /// 1 = the QP's frames carry an 802.1Q tag with `vlan` as its TCI.
    vlan_tagged / set_vlan_tagged: u8 [68..69],
}

/// Splits a 16-byte GID into the two big-endian halves the mailboxes carry.
pub fn gid_split(g: &[u8; 16]) -> (u64, u64) {
    (crate::field::get_be(&g[..8]), crate::field::get_be(&g[8..]))
}

/// Joins the two halves back.
pub fn gid_join(hi: u64, lo: u64) -> [u8; 16] {
    let mut g = [0u8; 16];
    crate::field::set_be(&mut g[..8], hi);
    crate::field::set_be(&mut g[8..], lo);
    g
}

// The layouts fit the mailbox, checked when the crate compiles.
const _: () = assert!(IN + QpAttrsRepr::LEN <= OUT_HDR);
const _: () = assert!(OUT + QpAttrsRepr::LEN <= MAILBOX_LEN);
const _: () = assert!(IN + CreateQpRepr::LEN <= OUT_HDR);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_both_ways() {
        for v in 0..=7u8 {
            assert_eq!(Status::from_u8(v) as u8, v);
        }
        assert_eq!(Status::from_u8(200), Status::BadMailbox);
    }

    #[test]
    fn qp_attrs_both_ways() {
        let a = QpAttrsRepr {
            qpn: 0x12,
            attr_mask: 0x181,
            qp_state: 2,
            dmac: 0x0200_0000_0002,
            vlan: 0xE000 | 100,
            vlan_tagged: 1,
            dgid_lo: 0xFFFF_0A00_0001,
            ..Default::default()
        };
        let b = a.to_bytes();
        assert_eq!(&b[0..4], &[0, 0, 0, 0x12]);
        assert_eq!(&b[40..46], &[2, 0, 0, 0, 0, 2]);
        assert_eq!((&b[46..48], b[68]), (&[0xE0, 100][..], 1), "PCP 7 and the tagged flag apart");
        assert_eq!(QpAttrsRepr::from_bytes(&b).unwrap(), a);
    }

    #[test]
    fn gid_halves() {
        let g: [u8; 16] = core::array::from_fn(|i| i as u8);
        let (h, l) = gid_split(&g);
        assert_eq!(h, 0x0001_0203_0405_0607);
        assert_eq!(gid_join(h, l), g);
    }
}
