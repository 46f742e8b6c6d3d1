//! BAR0 register map: a linked list of blocks, each starting with `TYPE`, `VERSION`, `NEXT`
//! (byte offset of the next block, 0 = last). All registers are 32 bits wide, little-endian. A 64-bit value
//! (a counter, the time) is a LO/HI pair: reading LO latches HI, so read LO, then HI, and the two halves
//! are of one moment.

/// Common block header.
pub mod block {
    pub const TYPE: u32 = 0x00;
    pub const VERSION: u32 = 0x04;
    pub const NEXT: u32 = 0x08;
}

/// Block type codes ("FE" + index).
pub mod block_type {
    pub const ID: u32 = 0x4645_0001;
    pub const CMD: u32 = 0x4645_0002;
    pub const COUNTERS: u32 = 0x4645_0003;
    pub const DCQCN: u32 = 0x4645_0004;
    pub const DOORBELL: u32 = 0x4645_0005;
}

/// Contract version carried by every block (major << 16 | minor). The driver refuses another major.
/// 2: commands run in the background (`cmd::STATUS_BUSY`), 64-bit reads latch, the profile registers.
pub const VERSION: u32 = 0x0002_0000;

/// Identity block at offset 0: what this NIC is and how big its tables are.
pub mod id {
    pub const BASE: u32 = 0x0000;
    /// Low 32 bits of the build's git hash (0 when unknown).
    pub const BUILD_ID: u32 = 0x0C;
    /// `feature::*` bits.
    pub const FEATURES: u32 = 0x10;
    pub const MAX_QP: u32 = 0x14;
    pub const MAX_CQ: u32 = 0x18;
    pub const MAX_MR: u32 = 0x1C;
    pub const MAX_PD: u32 = 0x20;
    pub const MAX_SGE: u32 = 0x24;
    pub const MAX_INLINE: u32 = 0x28;
    /// READ/atomic requests a QP executes as responder (`max_qp_rd_atom`, bounds `max_dest_rd_atomic`).
    pub const MAX_QP_RD_ATOM: u32 = 0x2C;
    /// Port line rate in Mb/s.
    pub const PORT_MBPS: u32 = 0x30;
    /// Largest PMTU enum value supported (5 = 4096).
    pub const MAX_MTU: u32 = 0x34;
    /// log2 of the largest ring (entries).
    pub const MAX_LOG_RING: u32 = 0x38;
    /// Free-running time in nanoseconds, low and high words (reading LO latches HI).
    pub const TIME_NS_LO: u32 = 0x3C;
    pub const TIME_NS_HI: u32 = 0x40;
    /// READ/atomic requests a QP keeps outstanding as requester (`max_qp_init_rd_atom`, bounds `max_rd_atomic`).
    pub const MAX_QP_INIT_RD_ATOM: u32 = 0x44;
    /// Send WQEs the requester holds per QP (fetched, not yet completed).
    pub const WQE_WINDOW: u32 = 0x48;
    /// Responses a QP's responder queues besides its coalesced ACK.
    pub const RESP_QUEUE: u32 = 0x4C;
    /// Frames of the NIC's own (CNPs, ARP, ICMP echo replies) queued for the port.
    pub const CTRL_QUEUE: u32 = 0x50;
    /// The timer tick in nanoseconds: every timer of the NIC counts in these.
    pub const TICK_NS: u32 = 0x54;
}

/// The ID block's fixed registers for a device of profile `p` with a port of `port_mbps` and build `build_id`:
/// (offset, value). Every other offset of the block but the time reads 0.
pub fn id_registers(p: &super::profile::Profile, port_mbps: u32, build_id: u32) -> [(u32, u32); 20] {
    [
        (id::BASE + block::TYPE, block_type::ID),
        (id::BASE + block::VERSION, VERSION),
        (id::BASE + block::NEXT, cmd::BASE),
        (id::BUILD_ID, build_id),
        (id::FEATURES, feature::DEVICE),
        (id::MAX_QP, p.max_qp),
        (id::MAX_CQ, p.max_cq),
        (id::MAX_MR, p.max_mr),
        (id::MAX_PD, p.max_pd),
        (id::MAX_SGE, p.max_sge),
        (id::MAX_INLINE, p.max_inline),
        (id::MAX_QP_RD_ATOM, p.max_qp_rd_atom),
        (id::MAX_QP_INIT_RD_ATOM, p.max_qp_init_rd_atom),
        (id::WQE_WINDOW, p.wqe_window),
        (id::RESP_QUEUE, p.resp_queue),
        (id::CTRL_QUEUE, p.ctrl_queue),
        (id::TICK_NS, super::qpc::TICK_NS),
        (id::PORT_MBPS, port_mbps),
        (id::MAX_MTU, super::verbs::MAX_MTU_ENUM as u32),
        (id::MAX_LOG_RING, p.max_log_ring as u32),
    ]
}

/// Feature bits in `id::FEATURES`.
pub mod feature {
    pub const IPV6: u32 = 1 << 0;
    pub const VLAN: u32 = 1 << 1;
    pub const ATOMICS: u32 = 1 << 2;
    pub const DCQCN: u32 = 1 << 3;
    pub const SEND_WITH_INV: u32 = 1 << 4;
    /// The features of the NIC this contract describes.
    pub const DEVICE: u32 = IPV6 | VLAN | ATOMICS | DCQCN | SEND_WITH_INV;
}

/// Command interface (see `cmd`). Write the mailbox IOVA, then `DOORBELL` with a token; poll `STATUS`
/// until `BUSY` clears and its token matches. The command's status and output are in the mailbox. A command
/// runs in the background: MMIO goes on meanwhile. A doorbell rung while one is busy is ignored (counted in
/// `cmd_doorbells_ignored`).
pub mod cmd {
    pub const BASE: u32 = 0x0100;
    pub const MAILBOX_LO: u32 = 0x0C;
    pub const MAILBOX_HI: u32 = 0x10;
    /// Writing starts the command in the mailbox; the value (8 bits) is echoed as the token.
    pub const DOORBELL: u32 = 0x14;
    /// Bit 31 busy, bits 15:8 token of the last command, bits 7:0 its status.
    pub const STATUS: u32 = 0x18;
    pub const STATUS_BUSY: u32 = 1 << 31;
}

/// Counters: 64-bit, as LO/HI word pairs at `BASE + FIRST + 8 * index`.
pub mod counters {
    pub const BASE: u32 = 0x0200;
    /// Number of counters in this block.
    pub const COUNT: u32 = 0x0C;
    pub const FIRST: u32 = 0x10;
}

macro_rules! counters {
    ($( $(#[$m:meta])* $name:ident ),* $(,)?) => {
        /// Every NIC counter, in register order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[allow(non_camel_case_types)]
        pub enum Counter { $( $(#[$m])* $name, )* }
        impl Counter {
            pub const ALL: &'static [Counter] = &[ $( Counter::$name, )* ];
            pub fn name(self) -> &'static str {
                match self { $( Counter::$name => stringify!($name), )* }
            }
            /// Offset of the low word in BAR0.
            pub const fn offset(self) -> u32 {
                counters::BASE + counters::FIRST + 8 * self as u32
            }
        }
    };
}

counters! {
    rx_frames, rx_bytes, tx_frames, tx_bytes,
    rx_drop_not_for_us, rx_drop_too_long,
    /// Not RoCEv2, not answered by the NIC itself, and no raw packet QP able to take it.
    rx_drop_not_roce,
    rx_drop_truncated, rx_drop_bad_ip, rx_drop_bad_udp, rx_drop_bad_bth,
    rx_drop_bad_opcode, rx_drop_bad_length, rx_drop_bad_icrc,
    /// No RC QP by the BTH's number, or a UC or UD packet (an RC QP takes neither).
    rx_drop_no_qp,
    /// A QP in RESET or INIT (it takes nothing), a request to one that cannot receive, a response to one
    /// that cannot send.
    rx_drop_qp_state,
    rx_drop_duplicate, rx_drop_out_of_seq,
    /// Responses (ACK, READ response, atomic ACK) for a PSN this QP never sent: ignored.
    rx_drop_unsent_psn,
    tx_naks_psn_seq, tx_naks_invalid_req, tx_naks_remote_access, tx_naks_remote_op, tx_rnr_naks,
    rx_naks, rx_rnr_naks, tx_acks, rx_acks,
    retransmitted_packets, local_ack_timeouts, rnr_timeouts,
    cnps_sent, cnps_received, ecn_ce_received, rate_cuts,
    sq_wqes, rq_wqes, cqes, error_cqes,
    events, events_lost, interrupts,
    /// ARP requests for one of the NIC's IPv4 addresses, answered by the NIC.
    arp_replies,
    /// ICMP echo requests to one of the NIC's IPv4 addresses, answered by the NIC.
    icmp_echo_replies,
    /// Frames placed in the raw packet QP's receive queue, and sent from its send queue.
    raw_rx_frames, raw_tx_frames,
    /// Frames for the raw packet QP dropped because it had no receive WQE posted.
    raw_rx_drop_no_wqe,
    /// SENDs and WRITEs with immediate that found no receive WQE (answered with an RNR NAK).
    rx_drop_no_rq_wqe,
    /// Requests dropped unexecuted because the responder's response queue was full (the requester retries).
    rx_drop_resp_queue_full,
    /// Frames of the NIC's own (CNPs, ARP and ICMP echo replies) dropped because the control queue was full.
    ctrl_drop_full,
    /// Command doorbells rung while a command was still running: ignored.
    cmd_doorbells_ignored,
    /// Compare-and-swap and fetch-and-add requests the responder executed (a duplicate, answered from
    /// its saved result, is not counted again).
    rx_cmp_swaps, rx_fetch_adds,
}

/// DCQCN parameters: one register each at `BASE + 0x10 + 4 * index`, with the documented default.
pub mod dcqcn {
    pub const BASE: u32 = 0x0400;
    /// Number of parameter registers in this block.
    pub const COUNT: u32 = 0x0C;
    /// The first parameter register; parameter `i` at `FIRST + 4 * i`.
    pub const FIRST: u32 = 0x10;
}

/// One DCQCN parameter register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DcqcnParam {
    pub name: &'static str,
    pub default: u32,
    pub doc: &'static str,
}

macro_rules! dcqcn_params {
    ($( $konst:ident = $default:expr, $doc:literal; )*) => {
        /// Indices of the DCQCN registers.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Dcqcn { $( $konst, )* }
        impl Dcqcn {
            pub const ALL: &'static [Dcqcn] = &[ $( Dcqcn::$konst, )* ];
            pub const fn offset(self) -> u32 { dcqcn::BASE + dcqcn::FIRST + 4 * self as u32 }
            pub const fn param(self) -> DcqcnParam {
                match self { $( Dcqcn::$konst => DcqcnParam { name: stringify!($konst), default: $default, doc: $doc }, )* }
            }
        }
    };
}

dcqcn_params! {
    ENABLE = 1, "1 = the reaction point limits each QP's rate; 0 = line rate always";
    NP_ENABLE = 1, "1 = the notification point sends CNPs for CE-marked packets";
    CNP_INTERVAL_NS = 50_000, "NP: at most one CNP per QP per interval (ns)";
    CNP_DSCP = 48, "DSCP of CNPs sent";
    G_SHIFT = 8, "alpha gain g = 2^-G_SHIFT (1/256)";
    ALPHA_INIT = 1024, "initial alpha in 1/1024 units (1.0)";
    ALPHA_TIMER_NS = 55_000, "K: alpha decays by (1-g) every K ns without a CNP";
    RATE_TIMER_NS = 55_000, "T: rate-increase timer (ns)";
    BYTE_COUNTER = 10_485_760, "B: rate-increase byte counter (bytes)";
    F = 5, "fast-recovery stages before additive increase";
    RAI_MBPS = 40, "additive increase step (Mb/s)";
    RHAI_MBPS = 200, "hyper increase step (Mb/s)";
    MIN_RATE_MBPS = 10, "floor of the current rate (Mb/s)";
    RATE_REDUCE_PERIOD_NS = 4_000, "at most one rate cut per period (ns)";
}

/// Doorbells: per-QP and per-CQ registers in their own pages.
pub mod doorbell {
    pub const BASE: u32 = 0x0500;
    /// Offset of the QP doorbell area (register holds the value, the block is for discovery).
    pub const QP_AREA: u32 = 0x0C;
    pub const CQ_AREA: u32 = 0x10;
    pub const STRIDE: u32 = 0x14;
    pub const EQ_AREA: u32 = 0x18;

    /// Start of the QP doorbells; QP `n` at `QP_DB_BASE + n * DB_STRIDE`.
    pub const QP_DB_BASE: u32 = 0x0010_0000;
    /// Start of the CQ doorbells; CQ `n` at `CQ_DB_BASE + n * DB_STRIDE`.
    pub const CQ_DB_BASE: u32 = 0x0020_0000;
    pub const DB_STRIDE: u32 = 8;
    /// QP doorbell: write the SQ producer counter (16 bits, wrapping).
    pub const QP_SQ_PI: u32 = 0;
    /// QP doorbell: write the RQ producer counter (16 bits, wrapping).
    pub const QP_RQ_PI: u32 = 4;
    /// CQ doorbell: write the consumer counter (32 bits, wrapping).
    pub const CQ_CI: u32 = 0;
    /// CQ doorbell: write `ARM_ANY` to request an event on the next CQE, `ARM_SOLICITED` for the next CQE of a
    /// solicited message or in error; anything else disarms. The CQ table keeps the value (0 when disarmed).
    pub const CQ_ARM: u32 = 4;
    pub const ARM_ANY: u32 = 1;
    pub const ARM_SOLICITED: u32 = 2;
    /// The event queue's doorbells (one EQ per device).
    pub const EQ_DB: u32 = 0x0030_0000;
    /// EQ doorbell: write the consumer counter (32 bits, wrapping).
    pub const EQ_CI: u32 = 0;
    /// EQ doorbell: write 1 to raise the interrupt on the next EQE.
    pub const EQ_ARM: u32 = 4;

    pub const fn qp(qpn: u32, reg: u32) -> u32 {
        QP_DB_BASE + qpn * DB_STRIDE + reg
    }
    pub const fn cq(cqn: u32, reg: u32) -> u32 {
        CQ_DB_BASE + cqn * DB_STRIDE + reg
    }
}

/// Size of BAR0 in bytes.
pub const BAR0_LEN: u32 = 0x0040_0000;

#[cfg(test)]
mod tests {
    use super::*;

    /// Doorbell addresses: each QP's and CQ's registers in their own 8-byte slot, inside BAR0 for every
    /// object the device can have.
    #[test]
    fn doorbell_addresses() {
        use doorbell::*;
        assert_eq!(qp(0, QP_SQ_PI), QP_DB_BASE);
        assert_eq!(qp(5, QP_RQ_PI), QP_DB_BASE + 5 * DB_STRIDE + 4);
        assert_eq!(cq(3, CQ_CI), CQ_DB_BASE + 3 * DB_STRIDE);
        assert!(qp(0xFFFF, QP_RQ_PI) < CQ_DB_BASE && cq(0xFFFF, CQ_CI) + 4 <= BAR0_LEN);
        let f = [feature::IPV6, feature::VLAN, feature::ATOMICS, feature::DCQCN, feature::SEND_WITH_INV];
        assert_eq!(f, [1, 2, 4, 8, 16]);
        assert_eq!(cmd::STATUS_BUSY, 0x8000_0000);
    }

    #[test]
    fn counters_fit_before_the_next_block() {
        let last = *Counter::ALL.last().unwrap();
        assert!(last.offset() + 8 <= dcqcn::BASE);
        assert_eq!(Counter::rx_frames.offset(), 0x210);
        assert_eq!(Counter::tx_frames.offset(), 0x220);
        assert_eq!(Counter::rx_drop_not_for_us.offset(), 0x230);
    }

    #[test]
    fn dcqcn_fits_before_doorbell_block() {
        let last = *Dcqcn::ALL.last().unwrap();
        assert!(last.offset() + 4 <= doorbell::BASE);
        assert_eq!(Dcqcn::CNP_DSCP.param().default, 48);
    }
}
