//! `DupRead`: whether one of a QP's READ resources is what a duplicate READ request asks for again, the
//! model's `resp::find_read` for one resource, as generated Verilog (combinational). The QP's `qp_attr`
//! record (its path MTU), a `resource` record and the request's PSN and RETH fields in; out: whether the
//! resource is a READ whose PSNs cover the request's (`covers`: the dispatch scans the QP's resources newest
//! first and stops at the first that does), whether the request lies within it (`part`: its VA range, its
//! R_Key, its last PSN not past the READ's), whether it starts at the READ's first response (`at_base`) and
//! the READ's MSN; and for a duplicate atomic whether the resource is the atomic executed at its PSN (`hit`,
//! the model's `resp::find_atomic`) and the value it returned (`word`).

use super::queue::{mtu_shift, packets, RES_BITS};
use crate::engine::cmd::exec::{ATTR_BITS, RESP_BITS};
use crate::kit::*;
use crate::record::slice;
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;

#[derive(LogicBlock, Default)]
pub struct DupRead {
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub res: Signal<In, Bits<RES_BITS>>,
    pub psn: Signal<In, Bits<24>>,
    pub va: Signal<In, Bits<64>>,
    pub len: Signal<In, Bits<32>>,
    pub rkey: Signal<In, Bits<32>>,
    pub covers: Signal<Out, Bit>,
    pub part: Signal<Out, Bit>,
    pub at_base: Signal<Out, Bit>,
    pub msn: Signal<Out, Bits<24>>,
    /// The resource is an atomic executed at the request's PSN (`resp::find_atomic`), and its original value.
    pub hit: Signal<Out, Bit>,
    pub word: Signal<Out, Bits<64>>,
    profile: Param<Profile>,
}

impl DupRead {
    pub fn new(profile: Profile) -> Self {
        DupRead { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for DupRead {
    fn update(&mut self) {
        // Verified in Verilator against the model's `find_read` (sim/tests/dup_read.rs).
    }

    fn connect(&mut self) {
        self.covers.connect();
        self.part.connect();
        self.at_base.connect();
        self.msn.connect();
        self.hit.connect();
        self.word.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `DupRead` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let rl = &c.resource;
    let r = |n: &str| slice(rl, "res", n);
    let w = rl.width() as usize;
    assert!(w < RES_BITS, "resource ({w} bits) is wider than its port");
    let mut v = mtu_shift(&slice(&c.attr, "attr", "pmtu"));
    v.push(format!("wire unused_res = ^res[{}:{w}];", RES_BITS - 1));
    v.extend([
        format!("wire [23:0] r_first = {};", r("first_psn")),
        format!("wire [63:0] r_va = {};", r("word")),
        format!("wire [31:0] r_len = {};", r("len")),
    ]);
    v.extend(packets("r_pkts", "r_len"));
    v.extend(packets("q_pkts", "len"));
    v.extend([
        // PSN distances as signed 24-bit numbers, as the model's `Psn::diff` gives them.
        "wire [23:0] r_last = r_first + r_pkts - 24'd1;".to_string(),
        "wire [23:0] q_last = psn + q_pkts - 24'd1;".into(),
        "wire before_first = $signed(psn - r_first) < 24'sd0;".into(),
        "wire after_last = $signed(r_last - psn) < 24'sd0;".into(),
        "wire ends_after = $signed(q_last - r_last) > 24'sd0;".into(),
        // The request's end saturates at 2^64 - 1, as the model's does; the READ's does not wrap.
        "wire [64:0] q_end_full = {1'b0, va} + {33'd0, len};".into(),
        "wire [64:0] q_end = q_end_full[64] ? {1'b0, {64{1'b1}}} : q_end_full;".into(),
        "wire [64:0] r_end = {1'b0, r_va} + {33'd0, r_len};".into(),
        "always @(*) begin".into(),
        format!("    covers = !{} && !before_first && !after_last;", r("atomic")),
        format!("    part = va >= r_va && q_end <= r_end && rkey == {} && !ends_after;", r("rkey")),
        "    at_base = psn == r_first;".into(),
        format!("    msn = {};", r("msn")),
        format!("    hit = {} && psn == r_first;", r("atomic")),
        "    word = r_va;".into(),
        "end".into(),
    ]);
    v
}

/// The dispatch's scan of a QP's resources, newest first: from its `qp_resp` record and the scan's step `i`,
/// the ring slot of the resource `i` before the newest (`slot`) and whether the QP keeps that many
/// (`more`), combinationally.
#[derive(LogicBlock, Default)]
pub struct ResScan {
    pub resp: Signal<In, Bits<RESP_BITS>>,
    pub i: Signal<In, Bits<8>>,
    pub slot: Signal<Out, Bits<8>>,
    pub more: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl ResScan {
    pub fn new(profile: Profile) -> Self {
        ResScan { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for ResScan {
    fn update(&mut self) {
        // Verified in Verilator on its own (sim/tests/res_scan.rs) and in the core's lockstep.
    }

    fn connect(&mut self) {
        self.slot.connect();
        self.more.connect();
    }

    fn hdl(&self) -> Verilog {
        let sl = qp_context(&self.profile.0).resp;
        let s = |n: &str| slice(&sl, "resp", n);
        let rw = crate::record::width(&sl, "resources") as usize;
        custom_module([
            format!("wire [7:0] kept = {{{}'d0, {}}};", 8 - rw, s("resources")),
            // Of the whole record it reads the resources' count and head.
            "wire unused_resp = ^resp;".into(),
            "always @(*) begin".to_string(),
            format!("    slot = {} + kept - 8'd1 - i;", s("res_head")),
            "    more = i < kept;".into(),
            "end".into(),
        ])
    }
}
