//! `WqeCache`: which receive WQE `RecvWqe`'s outputs (kept until its next start) stand for, so that the next
//! packets of the same message (the same QP and RQ slot) use them instead of fetching the WQE again. The
//! model reads the WQE and checks its scatter list for every packet of a SEND (`resp::execute`); the same
//! answer holds here as long as nothing it depends on has changed: the WQE's bytes are the device's while it
//! is posted, and the MR table, the QP's PD and its RQ change only by commands. So a command clears the
//! cache, as does a fetch whose read failed (it is tried again); a message whose MR is deregistered between
//! its packets is then fetched and checked again, as the model checks it.
//!
//! `fill_start` names the QP and slot a fetch is for; its completion beats (`fill_*`) say whether the read
//! succeeded; `hit` says whether `RecvWqe`'s outputs are a QP's slot's.

use crate::kit::*;

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
    /// `RecvWqe`'s outputs are QP `qpn`'s slot `index`'s.
    pub hit: Signal<Out, Bit>,
}

impl Logic for WqeCache {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_responder.rs).
    }

    fn connect(&mut self) {
        self.hit.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog())
    }
}

/// The Verilog body of `WqeCache`.
pub fn verilog() -> Vec<String> {
    [
        "reg held, filling, bad;",
        "reg [23:0] t_qpn;",
        "reg [15:0] t_index;",
        "always @(posedge clock) begin",
        "    if (fill_start) begin filling <= 1'b1; held <= 1'b0; bad <= 1'b0; t_qpn <= qpn; t_index <= index; end",
        "    else if (filling && fill_valid) begin",
        "        if (fill_err) bad <= 1'b1;",
        "        if (fill_last) begin filling <= 1'b0; held <= !bad && !fill_err; end",
        "    end",
        "    if (reset || clear) begin held <= 1'b0; filling <= 1'b0; end",
        "end",
        "always @(*) hit = held && t_qpn == qpn && t_index == index;",
    ]
    .map(String::from)
    .to_vec()
}
