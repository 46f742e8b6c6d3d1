//! `FlushPick`: one step of the flush of a QP in ERR, the model's `flush_pending` and `flush_one`, as one
//! combinational table. The dispatch runs the steps when it has nothing else to do (`engine::dispatch`): it
//! reads a QP's contexts, asks this block what is left to flush, fetches a ring's WQE's first 16 bytes
//! (`rd_addr`) and, with them in `hdr`, writes back the counter and posts the CQE this block makes (a WQE in
//! the window needs no read: its entry kept its `wr_id`).
//!
//! Order, as the model's: the send WQEs in the requester's window (the front popped, finished first: a
//! READ or atomic it had started gives back its place, and `oldest`, which the caller's walk gives, moves
//! past the finished entries behind it; the CQE's opcode from the entry), then those still in the SQ, then
//! the receive WQE a SEND was filling (`qp_resp`'s `recv_valid`: the RQ counter
//! one behind), then the RQ. A ring counts only when its producer counter is at most its size ahead (the
//! model's `Ring::sane`). Each CQE has status WR_FLUSH_ERR, the WQE's `wr_id`, its ring counter as
//! `wqe_index` and, for a send WQE, the completion opcode of its `SendOp` (an unknown one completes as a
//! SEND, as the model's `unwrap_or` has it). A WQE whose read failed comes in as zeros (`wr_id` 0; a send
//! WQE then completes as an RDMA WRITE, the opcode of `SendCtrlRepr::default()`).

use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS, RESP_BITS};
use crate::engine::cq::{cqe_image, CQE_BITS};
use crate::engine::req::ready::WQE_BITS;
use crate::kit::*;
use crate::record::{be_get, build, slice, width};
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::{QpState, WcOpcode, WcStatus};
use wire::contract::wqe::{RecvCtrlRepr, SendCtrlRepr, SendOp};

/// What a flush step does (`FlushPick::what`).
pub mod what {
    /// Nothing is left to flush (or the QP is not flushing).
    pub const NONE: u8 = 0;
    /// The send WQE at the SQ consumer counter.
    pub const SQ: u8 = 1;
    /// The receive WQE a SEND was filling.
    pub const RECV: u8 = 2;
    /// The receive WQE at the RQ consumer counter.
    pub const RQ: u8 = 3;
    /// The send WQE at the front of the requester's window.
    pub const WINDOW: u8 = 4;
}

/// What the model's `enter_err` clears: in `qp_resp` the queued responses and the coalesced ACK, in `qp_req`
/// the ACK and RNR timers. (The state and `flushing` in `qp_attr` are set.)
pub const ERR_CLEARS_RESP: [&str; 5] = ["items", "ack_valid", "ack_psn", "ack_syndrome", "ack_msn"];
pub const ERR_CLEARS_REQ: [&str; 5] = ["timer_valid", "timer", "rnr_valid", "rnr_deadline", "rnr_psn"];

/// Verilog declaring `{ring}_pending` (WQEs posted past the consumer counter) and `{ring}_left` (some are,
/// and the producer counter is at most the ring's size ahead: the model's `Ring::pending() > 0 &&
/// Ring::sane()`) for ring `ring` ("sq" or "rq") of `qp_attr` record `rec`.
pub fn ring_left(al: &wire::layout::Layout, rec: &str, ring: &str) -> String {
    let f = |n: &str| slice(al, rec, &format!("{ring}_{n}"));
    format!(
        "wire [15:0] {ring}_pending = {} - {};\nwire {ring}_left = {ring}_pending != 16'd0 && {{1'b0, {ring}_pending}} <= (17'd1 << {});",
        f("pi"),
        f("ci"),
        f("log_size")
    )
}

/// Bytes of a WQE a flush step reads: the control segment of either ring, `wr_id` its last field.
pub const HDR_BYTES: usize = 16;
const _: () = assert!(SendCtrlRepr::LEN == HDR_BYTES && RecvCtrlRepr::LEN == HDR_BYTES);

#[derive(LogicBlock, Default)]
pub struct FlushPick {
    /// Unused: the table is combinational; its test top needs a clock to step.
    pub clock: Signal<In, Clock>,
    /// The QP: its number, whether it exists, its `qp_attr` (with its counters) and `qp_resp` records.
    pub qpn: Signal<In, Bits<24>>,
    pub qp_valid: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub resp: Signal<In, Bits<RESP_BITS>>,
    /// The window's front entry (`sq_wqe`), and where `oldest` goes once it is popped: the index the
    /// caller's walk found (`OldestWalk` over `win_count` entries from `walk_from`, entry 0 at SQ counter
    /// `win_base`) minus one.
    pub front: Signal<In, Bits<WQE_BITS>>,
    pub oldest_at: Signal<In, Bits<8>>,
    pub win_base: Signal<Out, Bits<16>>,
    pub walk_from: Signal<Out, Bits<8>>,
    pub win_count: Signal<Out, Bits<8>>,
    /// The WQE's first `HDR_BYTES` bytes (byte `i` at bits `8i+7:8i`), zeros when the read failed.
    pub hdr: Signal<In, Bits<128>>,
    /// What the step does (`what`), and the read of its WQE's control segment.
    pub what: Signal<Out, Bits<3>>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    /// The consumer counters one on (`SQ` moves the SQ's, `RQ` the RQ's), and `qp_resp` without the
    /// receive in progress (`RECV`).
    pub sq_ci: Signal<Out, Bits<16>>,
    pub rq_ci: Signal<Out, Bits<16>>,
    pub resp_next: Signal<Out, Bits<RESP_BITS>>,
    /// `qp_req` with the window's front popped (`WINDOW`).
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    /// The CQE and its CQ (the send or the receive CQ), and whether the QP is live for the post.
    pub cqe: Signal<Out, Bits<CQE_BITS>>,
    pub cqn: Signal<Out, Bits<16>>,
    pub qp_live: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl FlushPick {
    pub fn new(profile: Profile) -> Self {
        FlushPick { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for FlushPick {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_responder.rs).
    }

    fn connect(&mut self) {
        self.what.connect();
        self.rd_addr.connect();
        self.rd_len.connect();
        self.sq_ci.connect();
        self.rq_ci.connect();
        self.resp_next.connect();
        self.req_next.connect();
        self.win_base.connect();
        self.walk_from.connect();
        self.win_count.connect();
        self.cqe.connect();
        self.cqn.connect();
        self.qp_live.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `FlushPick` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, sl, rl, wl) = (&c.attr, &c.resp, &c.req, &c.wqe);
    let a = |n: &str| slice(al, "attr", n);
    let r = |n: &str| slice(rl, "req", n);
    let fe = |n: &str| slice(wl, "front", n);
    let wb = width(rl, "wqes");
    let rb = width(rl, "rd_atomic");
    let mut v =
        vec!["wire unused_clock = clock;".to_string(), format!("wire flush_on = qp_valid && {};", a("flushing"))];
    // Each ring: its pending count, whether it has a WQE to flush, the slot's address.
    for ring in ["sq", "rq"] {
        let f = |n: &str| a(&format!("{ring}_{n}"));
        v.push(ring_left(al, "attr", ring));
        v.extend([
            format!("wire [15:0] {ring}_ci_q = {};", f("ci")),
            format!("wire [3:0] {ring}_ls = {};", f("log_size")),
            format!("wire [15:0] {ring}_slot_of_ci = {ring}_ci_q & ((16'd1 << {ring}_ls) - 16'd1);"),
        ]);
    }
    v.extend([
        format!("wire [{}:0] wqes = {};", wb - 1, r("wqes")),
        format!("wire [{}:0] cursor = {};", wb - 1, r("cursor")),
        format!("wire [{}:0] oldest = {};", wb - 1, r("oldest")),
        format!("wire [{}:0] rd_atomic = {};", rb - 1, r("rd_atomic")),
        format!("wire win_on = wqes != {wb}'d0;"),
        "wire [15:0] front_at = sq_ci_q - {8'd0, wqes};".into(),
        format!("wire [3:0] front_op = {};", fe("op")),
        format!(
            "wire front_rd = {} && !{} && (front_op == 4'd{} || front_op == 4'd{} || front_op == 4'd{});",
            fe("started"),
            fe("acked"),
            SendOp::RdmaRead as u8,
            SendOp::AtomicCmpSwp as u8,
            SendOp::AtomicFetchAdd as u8
        ),
        "wire unused_front = ^front;".into(),
        format!("wire unused_req = ^req[{}:{}];", REQ_BITS - 1, rl.width()),
        format!("wire [{}:0] oldest_n = oldest_at[{}:0] - {wb}'d1;", wb - 1, wb - 1),
        "wire unused_oldest_at = ^oldest_at;".into(),
        format!("wire recv_on = {};", slice(sl, "resp", "recv_valid")),
        "wire [15:0] recv_at = rq_ci_q - 16'd1;".into(),
        "wire [15:0] recv_slot = recv_at & ((16'd1 << rq_ls) - 16'd1);".into(),
        format!(
            "wire [2:0] w = !flush_on ? 3'd{} : win_on ? 3'd{} : sq_left ? 3'd{} : recv_on ? 3'd{} : rq_left ? 3'd{} : 3'd{};",
            what::NONE,
            what::WINDOW,
            what::SQ,
            what::RECV,
            what::RQ,
            what::NONE
        ),
        format!("wire is_sq = w == 3'd{};", what::SQ),
        format!("wire is_win = w == 3'd{};", what::WINDOW),
        format!(
            "wire [63:0] sq_addr = {} + ({{48'd0, sq_slot_of_ci}} << {});",
            a("sq_iova"),
            a("sq_log_stride")
        ),
        format!(
            "wire [15:0] rq_slot = w == 3'd{} ? recv_slot : rq_slot_of_ci;\nwire [63:0] rq_addr = {} + ({{48'd0, rq_slot}} << {});",
            what::RECV,
            a("rq_iova"),
            a("rq_log_stride")
        ),
        "// The control segment: a send WQE's opcode and wr_id, a receive WQE's wr_id.".into(),
        format!("wire [7:0] send_op = {};", be_get("hdr", SendCtrlRepr::FIELDS, 0, "opcode").0),
        format!("wire [63:0] send_id = {};", be_get("hdr", SendCtrlRepr::FIELDS, 0, "wr_id").0),
        format!("wire [63:0] recv_id = {};", be_get("hdr", RecvCtrlRepr::FIELDS, 0, "wr_id").0),
        "reg [7:0] send_wc;".into(),
        "always @(*) begin".into(),
        "    case (send_op)".into(),
    ]);
    for op in (0..=u8::MAX).filter_map(SendOp::from_u8) {
        v.push(format!("    8'd{}: send_wc = 8'd{};", op as u8, op.wc_opcode() as u8));
    }
    v.extend([
        format!("    default: send_wc = 8'd{};", SendOp::Send.wc_opcode() as u8),
        "    endcase".into(),
        "    if (is_win) case (front_op)".into(),
    ]);
    for op in (0..16u8).filter_map(SendOp::from_u8) {
        v.push(format!("    4'd{}: send_wc = 8'd{};", op as u8, op.wc_opcode() as u8));
    }
    v.extend([
        format!("    default: send_wc = 8'd{};", SendOp::Send.wc_opcode() as u8),
        "    endcase".into(),
        "end".into(),
        format!("wire [63:0] wr_id_c = is_win ? {} : is_sq ? send_id : recv_id;", fe("wr_id")),
        "wire [31:0] qp_num = {8'd0, qpn};".into(),
        format!(
            "wire [15:0] wqe_index = is_win ? front_at : is_sq ? sq_ci_q : w == 3'd{} ? recv_at : rq_ci_q;",
            what::RECV
        ),
        format!("wire [7:0] wc_op = (is_sq || is_win) ? send_wc : 8'd{};", WcOpcode::Recv as u8),
        format!("wire [7:0] status = 8'd{};", WcStatus::WrFlushErr as u8),
        "wire [7:0] is_recv = {7'd0, !is_sq && !is_win};".into(),
    ]);
    v.extend(cqe_image(
        "cqe_c",
        &[
            ("wr_id", "wr_id_c"),
            ("qp_num", "qp_num"),
            ("wqe_index", "wqe_index"),
            ("opcode", "wc_op"),
            ("status", "status"),
            ("is_recv", "is_recv"),
        ],
    ));
    // The receive in progress given up, as the model's `recv.take()` packs it.
    let (decls, given_up) = build(sl, "resp", "fl", |name, _| match name {
        "recv_valid" => Some("1'b0".into()),
        "recv_offset" => Some("32'd0".into()),
        _ => None,
    });
    v.extend(decls);
    let pad = RESP_BITS - sl.width() as usize;
    let given_up = if pad == 0 { given_up } else { format!("{{{pad}'d0, {given_up}}}") };
    let (decls, popped) = build(rl, "req", "fw", |name, _| match name {
        "wqes" => Some(format!("wqes - {wb}'d1")),
        "cursor" => Some(format!("cursor == {wb}'d0 ? {wb}'d0 : cursor - {wb}'d1")),
        "oldest" => Some("oldest_n".into()),
        "rd_atomic" => Some(format!("front_rd ? rd_atomic - {rb}'d1 : rd_atomic")),
        _ => None,
    });
    v.extend(decls);
    let cq_pad = |n: &str| format!("{{{}'d0, {}}}", 16 - width(al, n), a(n));
    v.extend([
        "always @(*) begin".to_string(),
        "    what = w;".into(),
        "    rd_addr = is_sq ? sq_addr : rq_addr;".into(),
        "    win_base = front_at;".into(),
        format!("    walk_from = (oldest == {wb}'d0) ? 8'd1 : {{{}'d0, oldest}};", 8 - wb),
        format!("    win_count = {{{}'d0, wqes}};", 8 - wb),
        format!("    req_next = {{{}'d0, {popped}}};", REQ_BITS - rl.width() as usize),
        format!("    rd_len = 16'd{HDR_BYTES};"),
        "    sq_ci = sq_ci_q + 16'd1;".into(),
        "    rq_ci = rq_ci_q + 16'd1;".into(),
        format!("    resp_next = {given_up};"),
        "    cqe = cqe_c;".into(),
        format!("    cqn = (is_sq || is_win) ? {} : {};", cq_pad("send_cqn"), cq_pad("recv_cqn")),
        format!("    qp_live = {} != 3'd{};", a("state"), QpState::Err as u8),
        "end".into(),
    ]);
    v
}

/// `EnterErr`: a `qp_resp` record as the model's `enter_err` leaves it (`ERR_CLEARS_RESP` cleared).
#[derive(LogicBlock, Default)]
pub struct EnterErr {
    pub resp: Signal<In, Bits<RESP_BITS>>,
    pub resp_err: Signal<Out, Bits<RESP_BITS>>,
    profile: Param<Profile>,
}

impl EnterErr {
    pub fn new(profile: Profile) -> Self {
        EnterErr { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for EnterErr {
    fn update(&mut self) {
        // Verified in Verilator against the model's `flush::enter_err` (sim/tests/enter_err.rs).
    }

    fn connect(&mut self) {
        self.resp_err.connect();
    }

    fn hdl(&self) -> Verilog {
        let sl = qp_context(&self.profile.0).resp;
        let (mut v, e) = build(&sl, "resp", "er", |name, _| ERR_CLEARS_RESP.contains(&name).then(|| "0".into()));
        let pad = RESP_BITS - sl.width() as usize;
        let e = if pad == 0 { e } else { format!("{{{pad}'d0, {e}}}") };
        // The record's padding above this profile's width and the fields cleared are not read.
        v.push("wire unused_resp = ^resp;".into());
        v.push(format!("always @(*) resp_err = {e};"));
        custom_module(v)
    }
}
