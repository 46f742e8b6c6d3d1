//! `AckStep`: what an acknowledgement of every PSN through `psn` does to one entry of the requester's
//! window, the model's `comp::ack_step`, as generated Verilog (combinational). The completer walks the
//! window from its oldest unfinished entry one step at a time; the entries' PSN ranges follow each other,
//! so a started entry's first PSN is the previous one's `next_first`. In: the QP's `qp_attr` record (its
//! path MTU, which cuts a message into packets), the entry (`sq_wqe`), its first PSN (when `started`), the
//! acknowledged PSN and `comp_psn`. Out, one of: `skip` (finished before), `stop` (not started, or not
//! acknowledged whole; `moved` when a SEND or WRITE acknowledged in part moves `comp_psn` to `comp_next`),
//! `gap` (a READ or atomic the responder is past without its answer), `finish` (acknowledged whole:
//! `comp_psn` to `comp_next`, one past its last PSN); and `next_first`, the PSN after the entry's last.

use crate::engine::cmd::exec::ATTR_BITS;
use crate::engine::req::ready::WQE_BITS;
use crate::engine::req::window::entry_packets;
use crate::kit::*;
use crate::record::slice;
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::contract::wqe::SendOp;

#[derive(LogicBlock, Default)]
pub struct AckStep {
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub wqe: Signal<In, Bits<WQE_BITS>>,
    pub first: Signal<In, Bits<24>>,
    pub psn: Signal<In, Bits<24>>,
    pub comp: Signal<In, Bits<24>>,
    pub skip: Signal<Out, Bit>,
    pub stop: Signal<Out, Bit>,
    pub moved: Signal<Out, Bit>,
    pub gap: Signal<Out, Bit>,
    pub finish: Signal<Out, Bit>,
    pub comp_next: Signal<Out, Bits<24>>,
    pub next_first: Signal<Out, Bits<24>>,
    profile: Param<Profile>,
}

impl AckStep {
    pub fn new(profile: Profile) -> Self {
        AckStep { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for AckStep {
    fn update(&mut self) {
        // Verified in Verilator against the model's `comp::ack_step` (sim/tests/ack_step.rs).
    }

    fn connect(&mut self) {
        self.skip.connect();
        self.stop.connect();
        self.moved.connect();
        self.gap.connect();
        self.finish.connect();
        self.comp_next.connect();
        self.next_first.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `AckStep` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let w = |n: &str| slice(&c.wqe, "wqe", n);
    let mut v = entry_packets(&c, "wqe", "attr");
    v.extend([
        format!("wire rd_or_atomic = {} == 4'd{} || is_atomic;", w("op"), SendOp::RdmaRead as u8),
        "wire [23:0] last = first + npkts - 24'd1;".into(),
        // PSN order as the model's `Psn::diff` gives it: signed 24-bit distances.
        "wire [23:0] last_to_psn = last - psn;".into(),
        "wire [23:0] psn_to_first = psn - first;".into(),
        "wire unused_psn_to_first = ^psn_to_first[22:0];".into(),
        "wire [23:0] next_to_comp = psn + 24'd1 - comp;".into(),
        "wire last_after = !last_to_psn[23] && last_to_psn != 24'd0;".into(),
        "wire psn_before_first = psn_to_first[23];".into(),
        "wire next_after_comp = !next_to_comp[23] && next_to_comp != 24'd0;".into(),
        format!("wire done_before = {};", w("acked")),
        format!("wire started = {};", w("started")),
        "wire unused_wqe = ^wqe;".into(),
        "always @(*) begin".into(),
        "    skip = done_before;".into(),
        "    stop = !done_before && (!started || last_after);".into(),
        "    moved = stop && started && !rd_or_atomic && !psn_before_first && next_after_comp;".into(),
        "    gap = !done_before && started && !last_after && rd_or_atomic;".into(),
        "    finish = !done_before && started && !last_after && !rd_or_atomic;".into(),
        "    comp_next = moved ? psn + 24'd1 : last + 24'd1;".into(),
        "    next_first = last + 24'd1;".into(),
        "end".into(),
    ]);
    v
}
