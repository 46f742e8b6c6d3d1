//! `Retire`: the completion of one finished entry leaving the front of the requester's window, the model's
//! `comp::retire` for that entry, as generated Verilog (combinational). In: the QP (its number and
//! `qp_attr` record: `sig_all` and the send CQ), the window entry (`sq_wqe`) and its SQ counter.
//! Out: whether a CQE is posted (the WQE was signaled, or failed: the QP then enters ERR), the CQ and the
//! CQE: the `wr_id` the entry kept from the fetch, its byte count (an atomic's 8, else the message's
//! length), QP number and SQ counter, the completion opcode of its operation, and its status and vendor
//! syndrome.

use crate::engine::cmd::exec::ATTR_BITS;
use crate::engine::cq::{cqe_image, CQE_BITS};
use crate::engine::req::ready::WQE_BITS;
use crate::kit::*;
use crate::record::{slice, width};
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::contract::wqe::{send_flags, SendOp};

#[derive(LogicBlock, Default)]
pub struct Retire {
    pub qpn: Signal<In, Bits<24>>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub wqe: Signal<In, Bits<WQE_BITS>>,
    pub index: Signal<In, Bits<16>>,
    pub post: Signal<Out, Bit>,
    pub cqn: Signal<Out, Bits<16>>,
    pub cqe: Signal<Out, Bits<CQE_BITS>>,
    profile: Param<Profile>,
}

impl Retire {
    pub fn new(profile: Profile) -> Self {
        Retire { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for Retire {
    fn update(&mut self) {
        // Verified in Verilator on its own (sim/tests/retire.rs) and in the core's lockstep.
    }

    fn connect(&mut self) {
        self.post.connect();
        self.cqn.connect();
        self.cqe.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `Retire` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, wl) = (&c.attr, &c.wqe);
    let e = |n: &str| slice(wl, "wqe", n);
    let mut v = vec![
        format!("wire [3:0] op = {};", e("op")),
        format!("wire failed_c = {};", e("error_valid")),
        format!(
            "wire signaled = {} || ({} & 4'd{}) != 4'd0;",
            slice(al, "attr", "sig_all"),
            e("flags"),
            send_flags::SIGNALED
        ),
        format!(
            "wire is_atomic = op == 4'd{} || op == 4'd{};",
            SendOp::AtomicCmpSwp as u8,
            SendOp::AtomicFetchAdd as u8
        ),
        format!("wire [31:0] byte_len = is_atomic ? 32'd8 : {};", e("len")),
        format!("wire [63:0] wr_id = {};", e("wr_id")),
        "wire [31:0] qp_num = {8'd0, qpn};".into(),
        "reg [7:0] wc_op;".into(),
        "always @(*) begin".into(),
        "    case (op)".into(),
    ];
    for op in (0..16u8).filter_map(SendOp::from_u8) {
        v.push(format!("    4'd{}: wc_op = 8'd{};", op as u8, op.wc_opcode() as u8));
    }
    v.extend([
        format!("    default: wc_op = 8'd{};", SendOp::Send.wc_opcode() as u8),
        "    endcase".into(),
        "end".into(),
        format!("wire [7:0] status = failed_c ? {{3'd0, {}}} : 8'd0;", e("status")),
        format!("wire [7:0] vendor = failed_c ? {} : 8'd0;", e("vendor_err")),
        format!("wire unused_wqe = ^wqe[{}:{}] ^ ^{};", WQE_BITS - 1, wl.width(), e("started")),
        format!("wire unused_acked = ^{};", e("acked")),
        // Of `qp_attr` it reads `sig_all` and the send CQ.
        "wire unused_attr = ^attr;".into(),
    ]);
    v.extend(cqe_image(
        "cqe_c",
        &[
            ("wr_id", "wr_id"),
            ("byte_len", "byte_len"),
            ("qp_num", "qp_num"),
            ("wqe_index", "index"),
            ("opcode", "wc_op"),
            ("status", "status"),
            ("vendor_err", "vendor"),
        ],
    ));
    v.extend([
        "always @(*) begin".to_string(),
        "    post = signaled || failed_c;".into(),
        format!("    cqn = {{{}'d0, {}}};", 16 - width(al, "send_cqn"), slice(al, "attr", "send_cqn")),
        "    cqe = cqe_c;".into(),
        "end".into(),
    ]);
    v
}
