//! `ReqReady`: whether a QP's requester has a packet it may send (pacer aside), the model's
//! `req::sendable`, as generated Verilog (combinational): the scheduler's ready bit for a QP. In: the QP's
//! `qp_attr` and `qp_req` records and the window entry at its cursor (`sq_wqe`; the caller reads it from the
//! window at `qp_req`'s `cursor`). Out: `ready`, when the QP waits for no RNR timer, its cursor is at a WQE
//! of the window that may go out in the QP's state (RTS, or SQD for a WQE already started; never while
//! flushing) and is not acknowledged, fewer than `MAX_UNACKED_PSNS` PSNs are unacknowledged, and a WQE not
//! yet started is not fenced behind a READ or atomic and, itself a READ or atomic, would not exceed
//! `max_rd_atomic` of them outstanding.

use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
use crate::kit::*;
use crate::record::{slice, width};
use wire::contract::profile::Profile;
use wire::contract::qpc::{qp_context, MAX_UNACKED_PSNS};
use wire::contract::verbs::QpState;
use wire::contract::wqe::{send_flags, SendOp};

/// Port width of a window entry (`sq_wqe`, zero-extended; checked when generated).
pub const WQE_BITS: usize = 128;

#[derive(LogicBlock, Default)]
pub struct ReqReady {
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub wqe: Signal<In, Bits<WQE_BITS>>,
    pub ready: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl ReqReady {
    pub fn new(profile: Profile) -> Self {
        ReqReady { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for ReqReady {
    fn update(&mut self) {
        // Verified in Verilator against the model's `req::sendable` (sim/tests/req_ready.rs).
    }

    fn connect(&mut self) {
        self.ready.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `ReqReady` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, rl, wl) = (&c.attr, &c.req, &c.wqe);
    assert!(wl.width() as usize <= WQE_BITS, "sq_wqe ({} bits) is wider than its port", wl.width());
    let a = |n: &str| slice(al, "attr", n);
    let r = |n: &str| slice(rl, "req", n);
    let w = |n: &str| slice(wl, "wqe", n);
    let (ww, rw) = (width(rl, "cursor"), width(rl, "rd_atomic"));
    assert_eq!(width(al, "max_rd_atomic"), rw, "max_rd_atomic and the count of them outstanding are one width");
    let op = |o: SendOp| format!("{} == 4'd{}", w("op"), o as u8);
    vec![
        format!("wire [{}:0] cursor = {};", ww - 1, r("cursor")),
        "wire unused_in = ^attr ^ ^req ^ ^wqe;".into(),
        format!("wire in_window = cursor < {};", r("wqes")),
        format!("wire started = {};", w("started")),
        format!(
            "wire can_send = !{} && ({} == 3'd{} || ({} == 3'd{} && started));",
            a("flushing"),
            a("state"),
            QpState::Rts as u8,
            a("state"),
            QpState::Sqd as u8
        ),
        format!("wire [23:0] unacked = {} - {};", r("cursor_psn"), r("comp_psn")),
        format!("wire window_full = !unacked[23] && unacked >= 24'd{MAX_UNACKED_PSNS};"),
        format!("wire [{0}:0] rd_max = {1} == {rw}'d0 ? {rw}'d1 : {1};", rw - 1, a("max_rd_atomic")),
        format!("wire rd_busy = {} != {rw}'d0;", r("rd_atomic")),
        format!("wire rd_full = {} >= rd_max;", r("rd_atomic")),
        format!("wire fenced = ({} & 4'd{}) != 4'd0 && rd_busy;", w("flags"), send_flags::FENCE),
        format!(
            "wire rd_op = {} || {} || {};",
            op(SendOp::RdmaRead),
            op(SendOp::AtomicCmpSwp),
            op(SendOp::AtomicFetchAdd)
        ),
        format!(
            "always @(*) ready = !{} && in_window && can_send && !{} && !window_full && (started || (!fenced && !(rd_op && rd_full)));",
            r("rnr_valid"),
            w("acked")
        ),
    ]
}
