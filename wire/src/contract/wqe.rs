//! Work queue entries in host memory.
//!
//! Send WQE (stride 2^sq_log_stride >= 64 bytes), fixed segment positions so hardware never searches:
//! `CTRL` at 0, `REMOTE` at 16, `ATOMIC` at 32, then data segments (16 bytes each) or inline bytes at 48.
//! Receive WQE (stride 2^rq_log_stride >= 32): `RecvCtrl` at 0, data segments at 16.

/// Offsets of the send-WQE segments.
pub const CTRL: usize = 0;
pub const REMOTE: usize = 16;
pub const ATOMIC: usize = 32;
pub const SEND_DATA: usize = 48;
/// Offset of the receive data segments.
pub const RECV_DATA: usize = 16;
/// Size of one data segment.
pub const DATA_SEG_LEN: usize = 16;
/// Smallest send stride (ctrl + remote + atomic + one data segment).
pub const MIN_SQ_LOG_STRIDE: u8 = 6;
/// Smallest receive stride (ctrl + one data segment).
pub const MIN_RQ_LOG_STRIDE: u8 = 5;
/// Largest stride of either ring.
pub const MAX_LOG_STRIDE: u8 = 10;

crate::header! {
    /// Send WQE control segment.
    SendCtrl / SendCtrlRepr, len = 16;
    /// `SendOp` value.
    opcode / set_opcode: u8 [0..1],
    /// `send_flags` bits.
    flags / set_flags: u8 [1..2],
    /// Number of data segments, or with `INLINE` the number of inline bytes.
    len / set_len: u16 [2..4],
    /// Immediate data (with-IMM ops) or the R_Key to invalidate (SEND_WITH_INV).
    imm / set_imm: u32 [4..8],
    wr_id / set_wr_id: u64 [8..16],
}

crate::header! {
    /// Remote address segment (RDMA and atomic ops).
    RemoteSeg / RemoteSegRepr, len = 16;
    va / set_va: u64 [0..8],
    rkey / set_rkey: u32 [8..12],
}

crate::header! {
    /// Atomic operands.
    AtomicSeg / AtomicSegRepr, len = 16;
    swap_add / set_swap_add: u64 [0..8],
    compare / set_compare: u64 [8..16],
}

crate::header! {
    /// Scatter/gather element.
    DataSeg / DataSegRepr, len = 16;
    addr / set_addr: u64 [0..8],
    lkey / set_lkey: u32 [8..12],
    length / set_length: u32 [12..16],
}

crate::header! {
    /// Receive WQE control segment.
    RecvCtrl / RecvCtrlRepr, len = 16;
    wr_id / set_wr_id: u64 [0..8],
    num_sge / set_num_sge: u16 [8..10],
}

/// Send opcodes, numbered as `enum ibv_wr_opcode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum SendOp {
    RdmaWrite = 0,
    RdmaWriteWithImm = 1,
    Send = 2,
    SendWithImm = 3,
    RdmaRead = 4,
    AtomicCmpSwp = 5,
    AtomicFetchAdd = 6,
    SendWithInv = 9,
}

impl SendOp {
    pub fn from_u8(v: u8) -> Option<Self> {
        use SendOp::*;
        Some(match v {
            0 => RdmaWrite,
            1 => RdmaWriteWithImm,
            2 => Send,
            3 => SendWithImm,
            4 => RdmaRead,
            5 => AtomicCmpSwp,
            6 => AtomicFetchAdd,
            9 => SendWithInv,
            _ => return None,
        })
    }
    pub fn is_atomic(self) -> bool {
        matches!(self, SendOp::AtomicCmpSwp | SendOp::AtomicFetchAdd)
    }
    /// READ and atomics need a responder resource and block fenced WQEs.
    pub fn is_read_or_atomic(self) -> bool {
        self == SendOp::RdmaRead || self.is_atomic()
    }
    /// The request opcode of a packet at position `pos` of a message of this operation (a READ or an
    /// atomic is one request whatever its length).
    pub fn opcode(self, pos: crate::Position) -> crate::Opcode {
        use crate::{Opcode, Position::*};
        match (self, pos) {
            (SendOp::Send | SendOp::SendWithImm | SendOp::SendWithInv, First) => Opcode::SEND_FIRST,
            (SendOp::Send | SendOp::SendWithImm | SendOp::SendWithInv, Middle) => Opcode::SEND_MIDDLE,
            (SendOp::Send, Last) => Opcode::SEND_LAST,
            (SendOp::Send, Only) => Opcode::SEND_ONLY,
            (SendOp::SendWithImm, Last) => Opcode::SEND_LAST_WITH_IMMEDIATE,
            (SendOp::SendWithImm, Only) => Opcode::SEND_ONLY_WITH_IMMEDIATE,
            (SendOp::SendWithInv, Last) => Opcode::SEND_LAST_WITH_INVALIDATE,
            (SendOp::SendWithInv, Only) => Opcode::SEND_ONLY_WITH_INVALIDATE,
            (SendOp::RdmaWrite | SendOp::RdmaWriteWithImm, First) => Opcode::RDMA_WRITE_FIRST,
            (SendOp::RdmaWrite | SendOp::RdmaWriteWithImm, Middle) => Opcode::RDMA_WRITE_MIDDLE,
            (SendOp::RdmaWrite, Last) => Opcode::RDMA_WRITE_LAST,
            (SendOp::RdmaWrite, Only) => Opcode::RDMA_WRITE_ONLY,
            (SendOp::RdmaWriteWithImm, Last) => Opcode::RDMA_WRITE_LAST_WITH_IMMEDIATE,
            (SendOp::RdmaWriteWithImm, Only) => Opcode::RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            (SendOp::RdmaRead, _) => Opcode::RDMA_READ_REQUEST,
            (SendOp::AtomicCmpSwp, _) => Opcode::COMPARE_SWAP,
            (SendOp::AtomicFetchAdd, _) => Opcode::FETCH_ADD,
        }
    }
    pub fn wc_opcode(self) -> super::verbs::WcOpcode {
        use super::verbs::WcOpcode;
        match self {
            SendOp::RdmaWrite | SendOp::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            SendOp::Send | SendOp::SendWithImm | SendOp::SendWithInv => WcOpcode::Send,
            SendOp::RdmaRead => WcOpcode::RdmaRead,
            SendOp::AtomicCmpSwp => WcOpcode::CompSwap,
            SendOp::AtomicFetchAdd => WcOpcode::FetchAdd,
        }
    }
}

/// `send_flags` bits (`enum ibv_send_flags`).
pub mod send_flags {
    pub const FENCE: u8 = 1 << 0;
    pub const SIGNALED: u8 = 1 << 1;
    pub const SOLICITED: u8 = 1 << 2;
    pub const INLINE: u8 = 1 << 3;
}

/// Atomic operands are 8 bytes and must be 8-byte aligned.
pub const ATOMIC_LEN: u32 = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_ctrl_layout() {
        let c = SendCtrlRepr { opcode: 3, flags: send_flags::SIGNALED, len: 2, imm: 0xAABBCCDD, wr_id: 7 };
        let b = c.to_bytes();
        assert_eq!(b, [3, 2, 0, 2, 0xAA, 0xBB, 0xCC, 0xDD, 0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!(SendCtrlRepr::from_bytes(&b).unwrap(), c);
        assert_eq!(SEND_DATA, ATOMIC + AtomicSegRepr::LEN);
    }

    #[test]
    fn opcodes_roundtrip() {
        for v in 0..=255u8 {
            if let Some(op) = SendOp::from_u8(v) {
                assert_eq!(op as u8, v);
            }
        }
    }
}
