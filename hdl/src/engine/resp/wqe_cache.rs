//! `WqeCache`: the receive WQEs `RecvWqe` fetched last (`ENTRIES` of them, one a QP: a QP's new WQE replaces
//! its old one, else the entries are replaced in turn), each with
//! what `RecvWqe` made of it (its scatter list's verdict, `wr_id` and the SGEs kept), so that the next
//! packets of the same message (the same QP and RQ slot) use them instead of fetching the WQE again, with
//! several QPs' messages interleaved. The model reads the WQE and checks its scatter list for every packet
//! of a SEND (`resp::execute`); the same answer holds here as long as nothing it depends on has changed:
//! the WQE's bytes are the device's while it is posted, and the MR table, the QP's PD and its RQ change only
//! by commands. So a command clears the cache; a fetch whose read failed is not kept (it is tried again);
//! a message whose MR is deregistered between its packets is fetched and checked again, as the model
//! checks it.
//!
//! `fill_start` names the QP and slot a fetch is for; its completion beats (`fill_*`) say whether the read
//! succeeded; `store` (with `RecvWqe`'s outputs, when it is done) keeps it. `hit` says whether QP `qpn`'s
//! slot `index` is held, and `ok`, `wr_id`, `count` and `sges` are what `RecvWqe` made of it.

use crate::engine::resp::recv_wqe::{SGES_BITS, SGE_BITS};
use crate::kit::*;
use wire::contract::profile::Profile;

/// WQEs held.
pub const ENTRIES: usize = 4;

#[derive(LogicBlock, Default)]
pub struct WqeCache {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// A command completed.
    pub clear: Signal<In, Bit>,
    /// A fetch of QP `qpn`'s RQ slot `index` starts; its completion beats follow.
    pub fill_start: Signal<In, Bit>,
    pub qpn: Signal<In, Bits<24>>,
    pub index: Signal<In, Bits<16>>,
    pub fill_valid: Signal<In, Bit>,
    pub fill_err: Signal<In, Bit>,
    pub fill_last: Signal<In, Bit>,
    /// `RecvWqe` is done with the fetch: what it made of it.
    pub store: Signal<In, Bit>,
    pub st_ok: Signal<In, Bit>,
    pub st_wr_id: Signal<In, Bits<64>>,
    pub st_count: Signal<In, Bits<8>>,
    pub st_sges: Signal<In, Bits<SGES_BITS>>,
    /// QP `qpn`'s slot `index` is held, and what `RecvWqe` made of it.
    pub hit: Signal<Out, Bit>,
    pub ok: Signal<Out, Bit>,
    pub wr_id: Signal<Out, Bits<64>>,
    pub count: Signal<Out, Bits<8>>,
    pub sges: Signal<Out, Bits<SGES_BITS>>,
    profile: Param<Profile>,
}

impl WqeCache {
    pub fn new(profile: Profile) -> Self {
        WqeCache { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for WqeCache {
    fn update(&mut self) {
        // Verified in Verilator on its own (sim/tests/wqe_cache.rs) and in the core's lockstep.
    }

    fn connect(&mut self) {
        self.hit.connect();
        self.ok.connect();
        self.wr_id.connect();
        self.count.connect();
        self.sges.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `WqeCache` for profile `p` (its `max_sge` SGEs an entry).
pub fn verilog(p: &Profile) -> Vec<String> {
    let e = ENTRIES;
    let sw = p.max_sge as usize * SGE_BITS;
    assert!(sw <= SGES_BITS, "max_sge past the SGE port");
    let mut v = vec![
        "reg filling, bad;".to_string(),
        "reg [23:0] t_qpn;\nreg [15:0] t_index;".into(),
        format!("reg [{}:0] held;", e - 1),
        format!("reg [23:0] e_qpn [0:{}];\nreg [15:0] e_index [0:{0}];", e - 1),
        format!("reg e_ok [0:{}];\nreg [63:0] e_id [0:{0}];\nreg [7:0] e_count [0:{0}];", e - 1),
        format!("reg [{}:0] e_sges [0:{}];", sw - 1, e - 1),
        format!("reg [{}:0] next;", e.trailing_zeros().max(1) - 1),
        format!("wire unused_sges = |st_sges[{}:{sw}];", SGES_BITS - 1),
        "// The entry a new WQE goes to: its QP's, else the next in turn.".into(),
        "reg same;".into(),
        format!("reg [{}:0] victim;", e.trailing_zeros().max(1) - 1),
        "integer j;".into(),
        "always @(*) begin".into(),
        "    same = 1'b0; victim = next;".into(),
        format!("    for (j = {}; j >= 0; j = j - 1)", e - 1),
        format!("        if (held[j] && e_qpn[j] == t_qpn) begin same = 1'b1; victim = j[{}:0]; end", e.trailing_zeros().max(1) - 1),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    if (fill_start) begin filling <= 1'b1; bad <= 1'b0; t_qpn <= qpn; t_index <= index; end".into(),
        "    else if (filling && fill_valid) begin".into(),
        "        if (fill_err) bad <= 1'b1;".into(),
        "        if (fill_last) filling <= 1'b0;".into(),
        "    end".into(),
        "    if (store && !bad) begin".into(),
        "        held[victim] <= 1'b1; e_qpn[victim] <= t_qpn; e_index[victim] <= t_index;".into(),
        format!("        e_ok[victim] <= st_ok; e_id[victim] <= st_wr_id; e_count[victim] <= st_count; e_sges[victim] <= st_sges[{}:0];", sw - 1),
        "        if (!same) next <= next + 1'b1;".into(),
        "    end".into(),
        format!("    if (reset || clear) begin held <= {e}'d0; filling <= 1'b0; end"),
        "end".into(),
        "integer i;".into(),
        "always @(*) begin".into(),
        "    hit = 1'b0; ok = 1'b0; wr_id = 64'd0; count = 8'd0;".into(),
        format!("    sges = {SGES_BITS}'d0;"),
        format!("    for (i = {}; i >= 0; i = i - 1)", e - 1),
        "        if (held[i] && e_qpn[i] == qpn && e_index[i] == index) begin".into(),
        format!("            hit = 1'b1; ok = e_ok[i]; wr_id = e_id[i]; count = e_count[i]; sges[{}:0] = e_sges[i];", sw - 1),
        "        end".into(),
        "end".into(),
    ];
    v.shrink_to_fit();
    v
}
