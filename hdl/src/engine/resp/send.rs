//! `RespSend`: what executing a SEND packet, or the last packet of a WRITE with immediate, does once its
//! receive WQE is in: the SEND and WRITE arms of the model's `resp::execute` as generated Verilog, one
//! combinational table. In: the packet's RX record, its QP's `qp_attr` and `qp_resp` records, the `qp_resp`
//! record `RespAdvance` made of it, the WQE `RecvWqe` fetched (whether its scatter list passed, its
//! `wr_id`), and whether the payload fits that list (`DmaScatter`'s `fits`). Out: the RQ slot the WQE is
//! in, the message offset the payload goes to, the QP's next RQ consumer counter and `qp_resp` record, the
//! receive CQE, and whether the packet fails (`fatal`, with its NAK's syndrome).
//!
//! A SEND's first or only packet takes the WQE at the RQ consumer counter and moves the counter; a later
//! packet finds its WQE one behind it (`qp_resp`'s `recv_valid`, the model's `RecvCtx`) and its payload at
//! `recv_offset`. The last packet completes the WQE (`Recv`, its byte count the message's), with the
//! immediate if it carries one and the BTH's solicited bit. A WRITE with immediate takes the WQE at the
//! counter for its `wr_id` alone and completes it (`RecvRdmaWithImm`, the WRITE's length).
//!
//! A SEND whose WQE's scatter list fails completes it in error with a fatal NAK: LocQpOpErr (no bytes) and
//! NAK Remote Operational Error on a first packet, LocProtErr (the bytes placed so far) and NAK Invalid
//! Request later; so does one whose payload is longer than the list (LocLenErr, Invalid Request). The QP's
//! `qp_resp` record is then not advanced: the receive is given up and `RespQueue` queues the NAK (`fatal`,
//! its syndrome `syn`). (SEND with invalidate never comes here: the dispatch's `Action` leaves it
//! unhandled.)
//!
//! A frame that is not RoCEv2 for a raw packet QP (`raw`, the model's `raw::receive`) is a SEND's only
//! packet of the frame's length (`frame_len`) without immediate or solicited bit: its WQE at the counter,
//! its payload scattered from offset 0. A WQE that fails its checks is LocProtErr (its payload drained,
//! `drain`), a list too short LocLenErr (the scatter drains it), both with no bytes; no NAK is owed, the QP
//! enters ERR instead (`raw_fail`), and its `qp_resp` record is left as it is.

use super::opcode_flags;
use crate::engine::cmd::exec::{ATTR_BITS, RESP_BITS};
use crate::engine::cq::{cqe_image, CQE_BITS};
use crate::kit::*;
use crate::record::{build, slice, width};
use crate::rx::meta;
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::{wc_flags, QpState, WcOpcode, WcStatus};
use wire::ext::syndrome;

#[derive(LogicBlock, Default)]
pub struct RespSend {
    /// The packet's RX record (`rx::meta`).
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    /// Its QP: number, `qp_attr` (with its counters), `qp_resp` before the packet, and after it as
    /// `RespAdvance` has it.
    pub qpn: Signal<In, Bits<24>>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub resp: Signal<In, Bits<RESP_BITS>>,
    pub adv: Signal<In, Bits<RESP_BITS>>,
    /// The frame is not RoCEv2, for the raw packet QP `qpn`.
    pub raw: Signal<In, Bit>,
    /// The receive WQE: its scatter list passed; its `wr_id`; the payload fits the list from `off`.
    pub wqe_ok: Signal<In, Bit>,
    pub wr_id: Signal<In, Bits<64>>,
    pub fits: Signal<In, Bit>,
    /// The RQ counter of the WQE the packet lands in, and the message offset its payload starts at.
    pub index: Signal<Out, Bits<16>>,
    pub off: Signal<Out, Bits<32>>,
    /// The payload's length.
    pub len: Signal<Out, Bits<32>>,
    /// A SEND (its payload is scattered), not a WRITE with immediate (placed at the WRITE's cursor).
    pub is_send: Signal<Out, Bit>,
    /// The packet fails: a fatal NAK of syndrome `syn` to queue.
    pub fatal: Signal<Out, Bit>,
    pub syn: Signal<Out, Bits<8>>,
    /// A raw frame's receive fails (the QP enters ERR); its WQE failed, so the payload is drained unseen.
    pub raw_fail: Signal<Out, Bit>,
    pub drain: Signal<Out, Bit>,
    /// The QP has a receive WQE posted (the RQ's producer counter is past its consumer counter).
    pub rq_has: Signal<Out, Bit>,
    /// The QP's next RQ consumer counter, when it moves.
    pub rq_ci_we: Signal<Out, Bit>,
    pub rq_ci: Signal<Out, Bits<16>>,
    pub resp_next: Signal<Out, Bits<RESP_BITS>>,
    /// The receive CQE to post to CQ `cqn`, and whether the QP is live (not in ERR) for the post.
    pub cqe_valid: Signal<Out, Bit>,
    pub cqe: Signal<Out, Bits<CQE_BITS>>,
    pub cqn: Signal<Out, Bits<16>>,
    pub qp_live: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl RespSend {
    pub fn new(profile: Profile) -> Self {
        RespSend { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RespSend {
    fn update(&mut self) {
        // Verified in Verilator on its own (sim/tests/resp_send.rs) and in the core's lockstep.
    }

    fn connect(&mut self) {
        self.index.connect();
        self.off.connect();
        self.len.connect();
        self.is_send.connect();
        self.fatal.connect();
        self.syn.connect();
        self.raw_fail.connect();
        self.drain.connect();
        self.rq_has.connect();
        self.rq_ci_we.connect();
        self.rq_ci.connect();
        self.resp_next.connect();
        self.cqe_valid.connect();
        self.cqe.connect();
        self.cqn.connect();
        self.qp_live.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `RespSend` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, sl) = (&c.attr, &c.resp);
    let a = |n: &str| slice(al, "attr", n);
    let r = |n: &str| slice(sl, "resp", n);
    let m = |n: &str| meta::select("meta", n);
    let mut v = vec![
        format!("wire [7:0] opcode = {};", m("opcode")),
        // Of the whole records it takes it reads the fields it names.
        "wire unused_records = ^meta ^ ^attr ^ ^resp ^ ^adv;".into(),
    ];
    v.extend(opcode_flags(&["k_send", "k_write", "p_first", "p_last", "p_only"]));
    v.extend([
        // A raw frame: a SEND's only packet; the record's RoCE fields are not its.
        "wire s_send = raw || k_send;".to_string(),
        "wire s_write = !raw && k_write;".into(),
        "wire starts = raw || p_first || p_only;".into(),
        "wire ends = raw || p_last || p_only;".into(),
        format!("wire has_imm = !raw && {};", m("has_immdt")),
        format!("wire [31:0] imm = {};", m("immdt")),
        format!("wire [31:0] plen = {{16'd0, raw ? {} : {}}};", m("frame_len"), m("payload_len")),
        format!("wire recv_valid = !raw && {};", r("recv_valid")),
        format!("wire [15:0] ci = {};", a("rq_ci")),
        "wire [15:0] at = s_send && recv_valid ? ci - 16'd1 : ci;".into(),
        format!("wire [31:0] at_off = s_send && recv_valid ? {} : 32'd0;", r("recv_offset")),
        "wire [31:0] end_off = at_off + plen;".into(),
        "wire qp_op_err = !raw && s_send && !recv_valid && !wqe_ok;".into(),
        "wire prot_err = s_send && (recv_valid || raw) && !wqe_ok;".into(),
        "wire len_err = s_send && wqe_ok && !fits;".into(),
        "wire failed = qp_op_err || prot_err || len_err;".into(),
        format!("wire [31:0] adv_len = {};", slice(sl, "adv", "write_len")),
    ]);
    let (decls, next) = build(sl, "adv", "sn", |name, _| match name {
        "recv_valid" => Some("!ends".into()),
        "recv_offset" => Some("ends ? 32'd0 : end_off".into()),
        _ => None,
    });
    v.extend(decls);
    // A failed packet: the receive given up, nothing else moved (the NAK's queuing is `RespQueue`'s).
    let (decls, given_up) = build(sl, "resp", "fl", |name, _| match name {
        "recv_valid" => Some("1'b0".into()),
        "recv_offset" => Some("32'd0".into()),
        _ => None,
    });
    v.extend(decls);
    let pad = RESP_BITS - sl.width() as usize;
    let pad = |e: String| if pad == 0 { e } else { format!("{{{pad}'d0, {e}}}") };
    let recv = WcOpcode::Recv as u8;
    let recv_imm = WcOpcode::RecvRdmaWithImm as u8;
    v.extend([
        format!("wire [7:0] wc_op = s_write ? 8'd{recv_imm} : 8'd{recv};"),
        "wire [31:0] byte_len = s_write ? adv_len : qp_op_err ? 32'd0 : failed ? at_off : end_off;".into(),
        "wire [31:0] imm_data = has_imm && !failed ? imm : 32'd0;".into(),
        format!("wire [7:0] flags = has_imm && !failed ? 8'd{} : 8'd0;", wc_flags::WITH_IMM),
        "wire [31:0] qp_num = {8'd0, qpn};".into(),
        "wire [15:0] wqe_index = at;".into(),
        format!(
            "wire [7:0] status = qp_op_err ? 8'd{} : prot_err ? 8'd{} : len_err ? 8'd{} : 8'd{};",
            WcStatus::LocQpOpErr as u8,
            WcStatus::LocProtErr as u8,
            WcStatus::LocLenErr as u8,
            WcStatus::Success as u8
        ),
        "wire [7:0] is_recv = 8'd1;".into(),
        format!("wire [7:0] se = {{7'd0, {} && !failed && !raw}};", m("solicited")),
    ]);
    v.extend(cqe_image(
        "cqe_c",
        &[
            ("wr_id", "wr_id"),
            ("byte_len", "byte_len"),
            ("imm_data", "imm_data"),
            ("qp_num", "qp_num"),
            ("wqe_index", "wqe_index"),
            ("opcode", "wc_op"),
            ("status", "status"),
            ("wc_flags", "flags"),
            ("is_recv", "is_recv"),
            ("se", "se"),
        ],
    ));
    v.extend([
        "always @(*) begin".to_string(),
        "    index = at;".into(),
        "    off = at_off;".into(),
        "    len = plen;".into(),
        "    is_send = s_send;".into(),
        "    fatal = failed && !raw;".into(),
        format!("    syn = qp_op_err ? 8'h{:02x} : 8'h{:02x};", syndrome::NAK_REMOTE_OP, syndrome::NAK_INVALID_REQUEST),
        "    raw_fail = failed && raw;".into(),
        "    drain = raw && !wqe_ok;".into(),
        format!("    rq_has = {} != ci;", a("rq_pi")),
        "    rq_ci_we = s_write || starts;".into(),
        "    rq_ci = ci + 16'd1;".into(),
        format!("    resp_next = raw ? resp : failed ? {} : s_send ? {} : adv;", pad(given_up), pad(next)),
        "    cqe_valid = s_write || ends || failed;".into(),
        "    cqe = cqe_c;".into(),
        format!("    cqn = {{{}'d0, {}}};", 16 - width(al, "recv_cqn"), a("recv_cqn")),
        format!("    qp_live = {} != 3'd{};", a("state"), QpState::Err as u8),
        "end".into(),
    ]);
    v
}
