//! What the engines count: the events of the model's `Nic::count` calls, as generated Verilog, for the
//! counter block (`host::counters`).
//!
//! `RxCount` is the dispatch's share: `of_frame`, the counters a received frame's route and verdict decide
//! (the model's `recv::receive` and `resp::on_request` up to `execute`, `comp::on_response`'s `sent` check
//! and `on_ack`'s by AETH class), which the dispatch counts at the frame's decision; and `outcome`, the
//! counters of the steps that decide later (a SEND's or WRITE with immediate's receive WQE taken and its
//! fatal NAKs, a duplicate READ's or atomic's NAK or full queue, an atomic executed or NAKed, an ACK timer
//! or RNR wait ending), each in the cycle its decision is taken.
//!
//! `CoreEvents` gathers the core's events into the counter block's two increment vectors (bit
//! `Counter as usize` each: `inc` the dispatch's, `inc2` the transmit side's and the register file's, so
//! a counter two of them count in one cycle loses nothing) and its byte counts: a frame decided adds its
//! length to `rx_bytes`; a record the TX pipeline takes is a frame sent (`tx_frames`, its length, from the
//! record as the TX header builder works it out, to `tx_bytes`).

use crate::engine::dispatch::action;
use crate::engine::recv::route;
use crate::engine::resp::check::verdict;
use crate::kit::*;
use crate::rx::meta::{self, Verdict};
use wire::contract::regs::Counter;
use wire::ext::syndrome;
use wire::{bth, eth, ipv4, ipv6};

/// Bits of an increment vector: one per counter, and room to spare.
pub const INC_BITS: usize = 64;
const _: () = assert!(Counter::ALL.len() <= INC_BITS);

/// `name[i] = 1'b1` for counter `c`.
fn set(name: &str, c: Counter) -> String {
    format!("{name}[{}] = 1'b1;", c as usize)
}

/// The counter of a frame the parser dropped, by its `meta::Verdict` (the model's `recv::drop_counter`).
const DROPS: [(Verdict, Counter); 8] = [
    (Verdict::Truncated, Counter::rx_drop_truncated),
    (Verdict::BadIpHeader, Counter::rx_drop_bad_ip),
    (Verdict::BadUdpLength, Counter::rx_drop_bad_udp),
    (Verdict::BadTver, Counter::rx_drop_bad_bth),
    (Verdict::UnknownOpcode, Counter::rx_drop_bad_opcode),
    (Verdict::BadLength, Counter::rx_drop_bad_length),
    (Verdict::BadIcrc, Counter::rx_drop_bad_icrc),
    (Verdict::TooLong, Counter::rx_drop_too_long),
];

#[derive(LogicBlock, Default)]
pub struct RxCount {
    /// The frame's RX record, its route (`recv::route`), CE mark, check verdict (`check::verdict`), whether
    /// its responder has room for one more response, the dispatch's `action`, and for a response whether
    /// its PSN was ever sent, and its AETH syndrome (`Action`'s `aeth`).
    pub rec: Signal<In, Bits<{ meta::BITS }>>,
    pub route: Signal<In, Bits<4>>,
    pub ce: Signal<In, Bit>,
    pub verdict: Signal<In, Bits<4>>,
    pub room: Signal<In, Bit>,
    pub action: Signal<In, Bits<4>>,
    pub sent: Signal<In, Bit>,
    pub aeth: Signal<In, Bits<8>>,
    /// A frame that is not RoCEv2: the control queue answers it; a raw packet QP may take it. A raw frame's
    /// receive decided and done (`Exec`).
    pub raw_ctrl: Signal<In, Bit>,
    pub raw_any: Signal<In, Bit>,
    pub raw_rx: Signal<In, Bit>,
    /// A SEND's or WRITE with immediate's decision (`Exec`): the RQ consumer counter moves, the packet fails
    /// with a fatal NAK of syndrome `syn`.
    pub at_exec: Signal<In, Bit>,
    pub rq_moves: Signal<In, Bit>,
    pub fatal: Signal<In, Bit>,
    pub syn: Signal<In, Bits<8>>,
    /// A duplicate READ's or atomic's decision (`DupExec`): asked within the READ kept; its key fails now.
    pub at_dup: Signal<In, Bit>,
    pub part: Signal<In, Bit>,
    pub key_bad: Signal<In, Bit>,
    /// An atomic's decision (`AtomExec`): its target could not be read.
    pub at_atomic: Signal<In, Bit>,
    pub word_err: Signal<In, Bit>,
    /// A timer's decision: the RNR wait's (else the ACK timer's), and for the ACK timer whether work was
    /// outstanding (else the model's `on_timeout` counts nothing).
    pub at_timer: Signal<In, Bit>,
    pub timer_rnr: Signal<In, Bit>,
    pub outstanding: Signal<In, Bit>,
    pub of_frame: Signal<Out, Bits<INC_BITS>>,
    pub outcome: Signal<Out, Bits<INC_BITS>>,
    /// The frame's length (`rx_bytes`).
    pub rx_len: Signal<Out, Bits<16>>,
}

impl Logic for RxCount {
    fn update(&mut self) {
        // Verified in Verilator on its own against the model's counting (sim/tests/rx_count.rs), and with the
        // core: every counter read in lockstep with the model (driver/tests/rtl_requester.rs, rtl_pair.rs).
    }

    fn connect(&mut self) {
        self.of_frame.connect();
        self.outcome.connect();
        self.rx_len.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(rx_count_verilog())
    }
}

/// The Verilog body of `RxCount`.
pub fn rx_count_verilog() -> Vec<String> {
    use Counter as C;
    let mut v = vec![format!("wire [7:0] opcode = {};", meta::select("rec", "opcode"))];
    v.push(format!("wire [3:0] pverdict = {};", meta::select("rec", "verdict")));
    v.push(format!("wire cas = opcode == 8'h{:02x};", wire::Opcode::COMPARE_SWAP.0));
    v.push("wire unused_aeth = ^aeth[4:0];".into());
    v.push(format!("always @(*) rx_len = {};", meta::select("rec", "frame_len")));
    v.push("always @(*) begin".into());
    v.push("    of_frame = 64'd0;".into());
    v.push(format!("    {}", set("of_frame", C::rx_frames)));
    v.push("    case (route)".into());
    for r in [route::OTHER_MAC, route::OTHER_PEER] {
        v.push(format!("    4'd{r}: {}", set("of_frame", C::rx_drop_not_for_us)));
    }
    v.push(format!("    4'd{}: begin", route::MALFORMED));
    v.push("        case (pverdict)".into());
    for (vd, c) in DROPS {
        v.push(format!("        4'd{}: {}", vd as u8, set("of_frame", c)));
    }
    v.push("        default: ;\n        endcase\n    end".into());
    // Not RoCEv2, not the control queue's: dropped without a raw packet QP, or one without a receive WQE
    // (the model's `raw::receive`); a reply's counts are `CtrlQueue`'s.
    v.push(format!("    4'd{}: if (!raw_ctrl && action == 4'd{}) begin", route::RAW, action::DROP));
    v.push(format!(
        "        if (raw_any) {} else {}",
        set("of_frame", C::raw_rx_drop_no_wqe),
        set("of_frame", C::rx_drop_not_roce)
    ));
    v.push("    end".into());
    v.push(format!("    4'd{}: {}", route::BAD_PKEY, set("of_frame", C::rx_drop_bad_bth)));
    v.push(format!("    4'd{}: {}", route::NO_QP, set("of_frame", C::rx_drop_no_qp)));
    v.push(format!("    4'd{}: {}", route::QP_STATE, set("of_frame", C::rx_drop_qp_state)));
    v.push(format!("    4'd{}: if (!ce) {}", route::RESPONSE_QP_STATE, set("of_frame", C::rx_drop_qp_state)));
    // A response: one never sent is ignored, counted; an ACKNOWLEDGE by its AETH class.
    let comp = [action::ACK, action::READ_RESP, action::ATOMIC_ACK].map(|a| format!("action == 4'd{a}")).join(" || ");
    v.push(format!("    4'd{}: if (!ce && ({comp})) begin", route::RESPONSE));
    v.push(format!("        if (!sent) {}", set("of_frame", C::rx_drop_unsent_psn)));
    v.push(format!("        else if (action == 4'd{} && !aeth[7]) begin", action::ACK));
    v.push(format!("            if (aeth[6:5] == 2'd0) {}", set("of_frame", C::rx_acks)));
    v.push(format!("            if (aeth[6:5] == 2'd1) {}", set("of_frame", C::rx_rnr_naks)));
    v.push(format!("            if (aeth[6:5] == 2'd3) {}", set("of_frame", C::rx_naks)));
    v.push("        end\n    end".into());
    // A request: by the check chain's verdict (the model's `on_request`).
    v.push(format!("    4'd{}: if (!ce) begin", route::REQUEST));
    v.push("        case (verdict)".into());
    v.push(format!("        4'd{}: {}", verdict::QP_STATE, set("of_frame", C::rx_drop_qp_state)));
    v.push(format!(
        "        4'd{}: begin {} if (room) {} else {} end",
        verdict::SEQ_NAK,
        set("of_frame", C::rx_drop_out_of_seq),
        set("of_frame", C::tx_naks_psn_seq),
        set("of_frame", C::rx_drop_resp_queue_full)
    ));
    v.push(format!("        4'd{}: {}", verdict::SEQ_DROP, set("of_frame", C::rx_drop_out_of_seq)));
    v.push(format!("        4'd{}: {}", verdict::DUPLICATE, set("of_frame", C::rx_drop_duplicate)));
    v.push(format!("        4'd{}: {}", verdict::NAK_INVALID_REQUEST, set("of_frame", C::tx_naks_invalid_req)));
    v.push(format!("        4'd{}: {}", verdict::NAK_REMOTE_ACCESS, set("of_frame", C::tx_naks_remote_access)));
    v.push(format!(
        "        4'd{}: begin {} if (room) {} else {} end",
        verdict::NAK_RNR,
        set("of_frame", C::rx_drop_no_rq_wqe),
        set("of_frame", C::tx_rnr_naks),
        set("of_frame", C::rx_drop_resp_queue_full)
    ));
    v.push(format!("        4'd{}: {}", verdict::NO_ROOM, set("of_frame", C::rx_drop_resp_queue_full)));
    v.push("        default: ;\n        endcase\n    end".into());
    v.push("    default: ;\n    endcase".into());
    v.push("end".into());
    // The later decisions.
    v.push("always @(*) begin".into());
    v.push("    outcome = 64'd0;".into());
    // A SEND's first packet takes its WQE (counted unless the WQE failed: Remote Operational Error); a WRITE
    // with immediate always does. A failed packet's NAK by its syndrome.
    v.push(format!(
        "    if (at_exec && rq_moves && !(fatal && syn == 8'h{:02x})) {}",
        syndrome::NAK_REMOTE_OP,
        set("outcome", C::rq_wqes)
    ));
    for (s, c) in [
        (syndrome::NAK_REMOTE_OP, C::tx_naks_remote_op),
        (syndrome::NAK_INVALID_REQUEST, C::tx_naks_invalid_req),
        (syndrome::NAK_REMOTE_ACCESS, C::tx_naks_remote_access),
    ] {
        v.push(format!("    if (at_exec && fatal && syn == 8'h{s:02x}) {}", set("outcome", c)));
    }
    // A duplicate READ asked within the READ kept: a key that fails now is NAKed; else no room drops it.
    // A duplicate atomic found: no room drops it.
    v.push(format!("    if (at_dup && action == 4'd{} && part) begin", action::DUP_READ));
    v.push(format!(
        "        if (key_bad) {} else if (!room) {}",
        set("outcome", C::tx_naks_remote_access),
        set("outcome", C::rx_drop_resp_queue_full)
    ));
    v.push("    end".into());
    v.push(format!(
        "    if (at_dup && action == 4'd{} && !room) {}",
        action::DUP_ATOMIC,
        set("outcome", C::rx_drop_resp_queue_full)
    ));
    v.push(format!("    if (at_atomic && word_err) {}", set("outcome", C::tx_naks_remote_access)));
    v.push(format!("    if (at_atomic && !word_err && cas) {}", set("outcome", C::rx_cmp_swaps)));
    v.push(format!("    if (at_atomic && !word_err && !cas) {}", set("outcome", C::rx_fetch_adds)));
    v.push(format!("    if (raw_rx) {}", set("outcome", C::raw_rx_frames)));
    v.push(format!("    if (at_timer && timer_rnr) {}", set("outcome", C::rnr_timeouts)));
    v.push(format!("    if (at_timer && !timer_rnr && outstanding) {}", set("outcome", C::local_ack_timeouts)));
    v.push("end".into());
    v
}

#[derive(LogicBlock, Default)]
pub struct CoreEvents {
    /// The dispatch: a frame decided (its `of_frame`, and its length from the record); the counters its later
    /// decisions count (`outcome`); a send WQE fetched; a CQE posted (`cqe_err`: in error); an event posted
    /// or lost; the interrupt.
    pub rx_decided: Signal<In, Bit>,
    pub rx_len: Signal<In, Bits<16>>,
    pub of_frame: Signal<In, Bits<INC_BITS>>,
    pub outcome: Signal<In, Bits<INC_BITS>>,
    pub fetched: Signal<In, Bit>,
    pub cqe: Signal<In, Bit>,
    pub cqe_err: Signal<In, Bit>,
    pub eqe: Signal<In, Bit>,
    pub eqe_lost: Signal<In, Bit>,
    pub irq: Signal<In, Bit>,
    /// The transmit side: a READ response whose payload could not be read (its fatal NAK queued instead); a
    /// requester packet sent again; a record the TX pipeline takes (a frame sent).
    pub read_failed: Signal<In, Bit>,
    /// An ACK, sequence or RNR NAK decided.
    pub tx_ack: Signal<In, Bit>,
    pub retransmit: Signal<In, Bit>,
    pub tx_take: Signal<In, Bit>,
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    /// The register file: a command doorbell rung while a command runs.
    pub doorbell_ignored: Signal<In, Bit>,
    /// The raw path (`engine::raw`): what a frame that is not RoCEv2 counts at its decision; a reply sent
    /// from the control queue, and its length.
    pub raw_inc: Signal<In, Bits<INC_BITS>>,
    pub ctrl_sent: Signal<In, Bit>,
    pub ctrl_len: Signal<In, Bits<16>>,
    pub inc: Signal<Out, Bits<INC_BITS>>,
    pub inc2: Signal<Out, Bits<INC_BITS>>,
    pub rx_add: Signal<Out, Bits<16>>,
    pub tx_add: Signal<Out, Bits<16>>,
}

impl Logic for CoreEvents {
    fn update(&mut self) {
        // Verified in Verilator on its own against the model's counts for the same events (sim/tests/core_events.rs).
    }

    fn connect(&mut self) {
        self.inc.connect();
        self.inc2.connect();
        self.rx_add.connect();
        self.tx_add.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(core_events_verilog())
    }
}

/// The Verilog body of `CoreEvents`.
pub fn core_events_verilog() -> Vec<String> {
    use Counter as C;
    let f = |r: &str, n: &str| meta::select(r, n);
    let (vl, v6) = (f("meta", "vlan"), f("meta", "ipv6"));
    // Everything before the extended headers: Ethernet (and its VLAN tag), IP, UDP, BTH.
    let base = |vlan: bool, six: bool| {
        eth::HEADER_LEN
            + if vlan { eth::VLAN_LEN } else { 0 }
            + if six { ipv6::HEADER_LEN } else { ipv4::HEADER_LEN }
            + wire::udp::UdpRepr::LEN
            + bth::HEADER_LEN
    };
    let mut v = vec![
        format!("wire [7:0] opcode = {};", f("meta", "opcode")),
        format!("wire [15:0] plen = {};", f("meta", "payload_len")),
        // A raw packet QP's frame: its payload is the frame, padded to the Ethernet minimum.
        format!("wire raw = {} == 4'd{};", f("meta", "verdict"), Verdict::NotRoce as u8),
        format!("wire [15:0] raw_len = plen < 16'd{0} ? 16'd{0} : plen;", eth::MIN_FRAME_LEN),
        format!(
            "wire [15:0] hl0 = {vl} ? ({v6} ? 16'd{} : 16'd{}) : ({v6} ? 16'd{} : 16'd{});",
            base(true, true),
            base(true, false),
            base(false, true),
            base(false, false)
        ),
        "wire [1:0] pad = 2'd0 - plen[1:0];".into(),
        "reg [15:0] ext_len;".into(),
        "always @(*) begin".into(),
        "    ext_len = 16'd0;".into(),
        "    case (opcode)".into(),
    ];
    for (op, info) in wire::opcode::TABLE.iter().enumerate() {
        if let Some(info) = info {
            v.push(format!("    8'h{op:02x}: ext_len = 16'd{};", info.ext_len()));
        }
    }
    v.push("    default: ;\n    endcase\nend".into());
    // The records' other fields are other blocks' (the core's Verilator waivers name `rec` and `meta`).
    v.extend([
        "always @(*) begin".to_string(),
        "    inc = outcome | raw_inc;".into(),
        "    if (rx_decided) inc = inc | of_frame;".into(),
        format!("    if (fetched) {}", set("inc", C::sq_wqes)),
        format!("    if (cqe) {}", set("inc", C::cqes)),
        format!("    if (cqe && cqe_err) {}", set("inc", C::error_cqes)),
        format!("    if (eqe) {}", set("inc", C::events)),
        format!("    if (eqe_lost) {}", set("inc", C::events_lost)),
        format!("    if (irq) {}", set("inc", C::interrupts)),
        // A reply sent in the cycle the TX pipeline takes a record: both count (`inc2` has the record's).
        format!("    if (ctrl_sent) {}", set("inc", C::tx_frames)),
        "    inc2 = 64'd0;".into(),
        format!("    if (read_failed) {}", set("inc2", C::tx_naks_remote_access)),
        format!("    if (tx_ack) {}", set("inc2", C::tx_acks)),
        format!("    if (retransmit) {}", set("inc2", C::retransmitted_packets)),
        format!("    if (tx_take) {}", set("inc2", C::tx_frames)),
        format!("    if (tx_take && raw) {}", set("inc2", C::raw_tx_frames)),
        format!("    if (doorbell_ignored) {}", set("inc2", C::cmd_doorbells_ignored)),
        "    rx_add = rx_decided ? rx_len : 16'd0;".into(),
        format!(
            "    tx_add = (tx_take ? (raw ? raw_len : hl0 + ext_len + plen + {{14'd0, pad}} + 16'd{}) : 16'd0) + (ctrl_sent ? ctrl_len : 16'd0);",
            wire::icrc::ICRC_LEN
        ),
        "end".into(),
    ]);
    v
}
