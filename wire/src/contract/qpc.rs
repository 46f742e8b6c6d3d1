//! The QP context: every piece of state the NIC keeps per QP, as packed records, and the tables the NIC's
//! block RAM holds. One description for everything that needs the bits: the model packs its QP state into
//! it (and unpacks it again after every event of the soak, which proves the widths are enough), the RTL's
//! context RAMs and the testbench's packing come from it, and `tables` counts the block RAM a profile needs.
//!
//! A QP's context is split by engine, one table each, so two engines can use theirs in the same cycle:
//! `qp_attr` (what MODIFY_QP sets, the rings, read by every engine), `qp_req` (requester and completer),
//! `qp_resp` (responder), `qp_rp` (DCQCN's reaction point and the pacer); and three tables of several entries
//! per QP: the WQE window (`sq_wqe`), the responder's resources (`resource`) and its response queue
//! (`resp_item`).
//!
//! A tick value (a timer's deadline, the tick of a past event) is stored in fewer bits than the tick counter:
//! modulo 2^w, within 2^(w-1) ticks of now either way, which bounds how far from now it may be (`TICK_BITS`
//! for the ACK timer and the last CNP, `NEAR_TICK_BITS` for values within a DCQCN period or an RNR delay of
//! now). Several fields are not stored because the others give them: a WQE's PSNs (the window's started WQEs
//! have contiguous ranges ending at the next PSN) and its packet count (from its length and the path MTU,
//! fixed once the QP is past RTR), a READ resource's last PSN, the window's SQ indices.

use super::profile::Profile;
use crate::layout::{Bram, Layout, Table};

/// Length of the timer tick in nanoseconds, as the ID block reports it: every timer of the NIC counts in these.
pub const TICK_NS: u32 = 1024;

/// Bits of a tick value that may be far from now: 1.024 us ticks, 2^35 of them (9.8 hours) either way,
/// which covers the longest ACK timeout (4 x 2^31 ticks).
pub const TICK_BITS: u32 = 36;
/// Bits of a tick value within 2^24 ticks (17 s) of now: DCQCN's periods (32-bit nanosecond registers, at
/// most 2^22 ticks) and RNR delays (at most 655 ms).
pub const NEAR_TICK_BITS: u32 = 25;
/// Bits of a PSN.
pub const PSN_BITS: u32 = 24;
/// Bits of a rate (Mb/s with 8 fractional bits: up to 524 Gb/s).
pub const RATE_BITS: u32 = 27;
/// Bits of an MR's length (256 TiB).
pub const MR_LEN_BITS: u32 = 48;

/// Bits to hold every value in `0..=n`.
pub const fn bits_for(n: u32) -> u32 {
    32 - n.leading_zeros()
}

/// The layouts of a QP's context for a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QpContext {
    pub attr: Layout,
    pub req: Layout,
    pub wqe: Layout,
    pub resp: Layout,
    pub resource: Layout,
    pub resp_item: Layout,
    pub rp: Layout,
}

/// Width of a per-QP ring's head (`qp_resp.res_head`, `item_head`): a free-running count of the entries
/// taken off its front, whose low bits are the slot of the oldest entry in the QP's rows of the table. The
/// rings' depths (`max_qp_rd_atom`, `resp_queue`) are powers of two up to 2^`RING_HEAD_BITS`.
pub const RING_HEAD_BITS: u32 = 8;

/// The QP context layouts for profile `p`.
/// Most PSNs a requester leaves unacknowledged (as rxe): it stops sending this many past `comp_psn`.
pub const MAX_UNACKED_PSNS: u32 = 128;
/// A requester asks for an ACK (AckReq) at least every this many packets; `qp_req`'s count of packets since
/// the last one is sized by it.
pub const MAX_PKTS_PER_ACK: u32 = 64;

pub fn qp_context(p: &Profile) -> QpContext {
    for (name, depth) in [("max_qp_rd_atom", p.max_qp_rd_atom), ("resp_queue", p.resp_queue)] {
        assert!(
            depth.is_power_of_two() && depth <= 1 << RING_HEAD_BITS,
            "{name} {depth} is not a power of two up to {}",
            1 << RING_HEAD_BITS
        );
    }
    let window = bits_for(p.wqe_window);
    let t = TICK_BITS;
    let psn = PSN_BITS;
    let attr = Layout::new(
        "qp_attr",
        &[
            ("raw", 1),
            ("state", 3),
            ("flushing", 1),
            ("pdn", bits_for(p.max_pd - 1)),
            ("send_cqn", bits_for(p.max_cq - 1)),
            ("recv_cqn", bits_for(p.max_cq - 1)),
            ("sig_all", 1),
            ("access", 4),
            ("pmtu", 3),
            ("timeout", 5),
            ("retry_cnt", 3),
            ("rnr_retry", 3),
            ("min_rnr_timer", 5),
            ("max_rd_atomic", bits_for(p.max_qp_init_rd_atom)),
            ("max_dest_rd_atomic", bits_for(p.max_qp_rd_atom)),
            ("sgid_index", 4),
            ("hop_limit", 8),
            ("traffic_class", 8),
            ("dest_qpn", 24),
            ("flow_label", 20),
            ("dmac", 48),
            ("vlan_tagged", 1),
            ("vlan_tci", 16),
            ("dgid_hi", 64),
            ("dgid_lo", 64),
            ("port_set", 1),
            ("udp_sport", 16),
            ("sq_iova", 64),
            ("sq_log_size", 4),
            ("sq_log_stride", 4),
            ("sq_pi", 16),
            ("sq_ci", 16),
            ("rq_iova", 64),
            ("rq_log_size", 4),
            ("rq_log_stride", 4),
            ("rq_pi", 16),
            ("rq_ci", 16),
            ("last_cnp_valid", 1),
            ("last_cnp", t),
        ],
    );
    let req = Layout::new(
        "qp_req",
        &[
            ("wqes", window),
            ("cursor", window),
            ("oldest", window),
            ("rd_atomic", bits_for(p.max_qp_init_rd_atom)),
            ("psn", psn),
            ("cursor_psn", psn),
            ("comp_psn", psn),
            ("high_psn", psn),
            ("retry_left", 3),
            ("rnr_left", 3),
            ("timer_valid", 1),
            ("timer", t),
            ("rnr_valid", 1),
            ("rnr_deadline", NEAR_TICK_BITS),
            ("rnr_psn", psn),
            ("pkts_since_ackreq", bits_for(MAX_PKTS_PER_ACK - 1)),
            ("gap_valid", 1),
            ("gap_psn", psn),
        ],
    );
    let wqe = Layout::new(
        "sq_wqe",
        &[
            ("op", 4),
            ("flags", 4),
            ("len", 32),
            ("started", 1),
            ("acked", 1),
            ("error_valid", 1),
            ("status", 5),
            ("vendor_err", 8),
            // Kept from the fetch for the WQE's CQE, so the completer does not read its slot again.
            ("wr_id", 64),
        ],
    );
    let resp = Layout::new(
        "qp_resp",
        &[
            ("epsn", psn),
            ("msn", 24),
            ("nak_sent", 1),
            ("in_msg", 2),
            ("write_va", 64),
            ("write_resid", 32),
            ("write_len", 32),
            ("recv_valid", 1),
            ("recv_offset", 32),
            ("fatal", 1),
            ("resources", bits_for(p.max_qp_rd_atom)),
            ("res_head", RING_HEAD_BITS),
            ("items", bits_for(p.resp_queue)),
            ("item_head", RING_HEAD_BITS),
            ("ack_valid", 1),
            ("ack_psn", psn),
            ("ack_syndrome", 8),
            ("ack_msn", 24),
        ],
    );
    // A READ keeps its VA, length and R_Key in `word`, `len` and `rkey`; an atomic its original value in
    // `word`.
    let resource = Layout::new(
        "resource",
        &[("atomic", 1), ("first_psn", psn), ("msn", 24), ("word", 64), ("len", 32), ("rkey", 32)],
    );
    // By `kind` (`item`): an ACK or NAK keeps its syndrome in `small`; an atomic ACK its original value in
    // `word`; a READ stream its next VA in `word`, the bytes left in `small`, and in `at_base` whether its
    // next response is the READ's first.
    let resp_item = Layout::new(
        "resp_item",
        &[("kind", 2), ("psn", psn), ("msn", 24), ("word", 64), ("small", 32), ("at_base", 1)],
    );
    let near = NEAR_TICK_BITS;
    let rp = Layout::new(
        "qp_rp",
        &[
            ("rc", RATE_BITS),
            ("rt", RATE_BITS),
            ("alpha", 21),
            ("t_cnt", 16),
            ("bc_cnt", 16),
            ("bytes", 32),
            ("alpha_timer_valid", 1),
            ("alpha_timer", near),
            ("rate_timer_valid", 1),
            ("rate_timer", near),
            ("cut_valid", 1),
            ("cut_at", near),
            ("cnp_since_alpha", 1),
            ("active", 1),
            ("credit", 32),
            ("credited", near),
        ],
    );
    QpContext { attr, req, wqe, resp, resource, resp_item, rp }
}

/// Response item kinds in `resp_item.kind`.
pub mod item {
    pub const ACK: u8 = 0;
    pub const ATOMIC_ACK: u8 = 1;
    pub const READ: u8 = 2;
    pub const FATAL_NAK: u8 = 3;
}

/// The message a responder is in the middle of, in `qp_resp.in_msg`.
pub mod in_msg {
    pub const NONE: u8 = 0;
    pub const SEND: u8 = 1;
    pub const WRITE: u8 = 2;
}

/// An MR table entry.
pub fn mr_entry(p: &Profile) -> Layout {
    Layout::new(
        "mr",
        &[
            ("valid", 1),
            ("variant", 8),
            ("pdn", bits_for(p.max_pd - 1)),
            ("access", 4),
            ("iova", 64),
            ("length", MR_LEN_BITS + 1),
        ],
    )
}

/// A CQ table entry.
pub fn cq_entry() -> Layout {
    Layout::new(
        "cq",
        &[("valid", 1), ("iova", 64), ("log_size", 4), ("pi", 32), ("ci", 32), ("overrun", 1), ("armed", 2)],
    )
}

/// A receive WQE's SGE as the responder keeps it once checked (the key has done its work).
pub fn recv_sge() -> Layout {
    Layout::new("recv_sge", &[("addr", 64), ("length", 32)])
}

/// Longest frame the control queue holds (an ICMP echo reply of a full 1500-byte packet, with its header).
pub const CTRL_FRAME_LEN: u64 = 1536;

/// One 64-bit word of the control queue's frame store.
pub fn ctrl_word() -> Layout {
    Layout::new("ctrl_frame_word", &[("data", 64)])
}

/// Every table the NIC's state takes for profile `p`, with its depth; each QP-wide context record of
/// profile `board` is spread over two rows of its RAM (read in two cycles), so the 256-deep tables fill the
/// 512-deep shapes of the block RAM.
pub fn tables(p: &Profile) -> Vec<Table> {
    let c = qp_context(p);
    let qps = u64::from(p.max_qp);
    let rows = if qps <= 256 { 2 } else { 1 };
    vec![
        Table { layout: c.attr, depth: qps, rows },
        Table { layout: c.req, depth: qps, rows },
        Table { layout: c.resp, depth: qps, rows },
        Table { layout: c.rp, depth: qps, rows },
        Table { layout: c.wqe, depth: qps * u64::from(p.wqe_window), rows: 1 },
        Table { layout: c.resource, depth: qps * u64::from(p.max_qp_rd_atom), rows: 1 },
        Table { layout: c.resp_item, depth: qps * u64::from(p.resp_queue), rows: 1 },
        Table { layout: mr_entry(p), depth: u64::from(p.max_mr), rows },
        Table { layout: cq_entry(), depth: u64::from(p.max_cq), rows },
        Table { layout: ctrl_word(), depth: u64::from(p.ctrl_queue) * CTRL_FRAME_LEN / 8, rows: 1 },
    ]
}

/// Bits of context per QP (the QP-wide records and its entries in the per-QP tables).
pub fn bits_per_qp(p: &Profile) -> u64 {
    let c = qp_context(p);
    let w = |l: &Layout| u64::from(l.width());
    w(&c.attr)
        + w(&c.req)
        + w(&c.resp)
        + w(&c.rp)
        + w(&c.wqe) * u64::from(p.wqe_window)
        + w(&c.resource) * u64::from(p.max_qp_rd_atom)
        + w(&c.resp_item) * u64::from(p.resp_queue)
}

/// The DP16KD the board profile's tables may take: 72 of the LFE5U-45F's 108, the rest left for the frame
/// stores, queues and FIFOs of the datapath (the window's `wr_id`s take 7 of the 72).
pub const BOARD_DP16KD_BUDGET: u64 = 72;

/// Block RAM primitives of kind `b` all tables take.
pub fn blocks(p: &Profile, b: Bram) -> u64 {
    tables(p).iter().map(|t| t.blocks(b)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_the_profile() {
        assert_eq!((bits_for(0), bits_for(1), bits_for(8), bits_for(255), bits_for(256)), (0, 1, 4, 8, 9));
        let (b, l) = (qp_context(&Profile::board()), qp_context(&Profile::large()));
        assert_eq!(b.attr.slice("pdn").map(|s| s.1), Some(6), "64 PDs");
        assert_eq!(l.attr.slice("pdn").map(|s| s.1), Some(12), "4096 PDs");
        assert_eq!(b.req.slice("wqes").map(|s| s.1), Some(4), "0..=8 WQEs");
        assert!(b.req.slice("timer").is_some_and(|s| s.1 == TICK_BITS));
        assert!(bits_per_qp(&Profile::board()) < bits_per_qp(&Profile::large()));
    }

    /// The board profile's tables fit in their share of the LFE5U-45F's DP16KD.
    #[test]
    fn the_board_profile_fits_its_block_ram_budget() {
        let n = blocks(&Profile::board(), Bram::Dp16kd);
        assert!(n <= BOARD_DP16KD_BUDGET, "{n} DP16KD");
    }
}
