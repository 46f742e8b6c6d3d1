//! `TimerScan`: which QP's ACK timer or RNR wait is due, as generated Verilog. It reads the timers' table
//! (`CmdExec`'s `tm_*` port) one QP a cycle, round robin, and compares each armed deadline with the tick
//! now (the model's `timer::due`: PSN-style wrapping distances, the ACK timer's over its 36 bits, the RNR
//! wait's over its 25). The first it finds due it offers (`fire`, the QP and which timer: the ACK timer
//! before an RNR wait) until the dispatch takes it (`take`), and the scan goes on from the QP after it. The
//! dispatch checks the timer again against the QP's `qp_req` before it acts: one that moved since the scan
//! read it is let go. A scan of `max_qp` QPs takes as many cycles; the model lets a timer fire up to
//! `TIMER_TOLERANCE` ticks late.

use crate::kit::*;
use wire::contract::profile::Profile;
use wire::contract::qpc::{bits_for, NEAR_TICK_BITS, TICK_BITS};

#[derive(LogicBlock, Default)]
pub struct TimerScan {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    /// The timers' table: the QP read, and its entry the cycle after.
    pub tm_index: Signal<Out, Bits<24>>,
    pub tm_live: Signal<In, Bit>,
    pub tm_ack: Signal<In, Bit>,
    pub tm_ack_at: Signal<In, Bits<{ TICK_BITS as usize }>>,
    pub tm_rnr: Signal<In, Bit>,
    pub tm_rnr_at: Signal<In, Bits<{ NEAR_TICK_BITS as usize }>>,
    /// A due timer of QP `fire_qpn` (its RNR wait with `fire_rnr`, else its ACK timer), until `take`n.
    pub fire: Signal<Out, Bit>,
    pub fire_qpn: Signal<Out, Bits<24>>,
    pub fire_rnr: Signal<Out, Bit>,
    pub take: Signal<In, Bit>,
    profile: Param<Profile>,
}

impl TimerScan {
    pub fn new(profile: Profile) -> Self {
        TimerScan { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for TimerScan {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_requester.rs).
    }

    fn connect(&mut self) {
        self.tm_index.connect();
        self.fire.connect();
        self.fire_qpn.connect();
        self.fire_rnr.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `TimerScan` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let qa = bits_for(p.max_qp - 1);
    let (t, n) = (TICK_BITS, NEAR_TICK_BITS);
    vec![
        format!("reg [{}:0] i, at;", qa - 1),
        "reg have, rnr_k, seen;".into(),
        format!("reg [{}:0] q;", qa - 1),
        format!("wire [{}:0] ack_left = tick - tm_ack_at;", t - 1),
        format!("wire [{}:0] rnr_left = tick[{}:0] - tm_rnr_at;", n - 1, n - 1),
        format!("wire unused_left = ^ack_left[{}:0] ^ ^rnr_left[{}:0];", t - 2, n - 2),
        "// The entry in (read the cycle before, for QP `at`): an armed deadline at or before the tick.".into(),
        format!("wire ack_due = seen && tm_live && tm_ack && !ack_left[{}];", t - 1),
        format!("wire rnr_due = seen && tm_live && tm_rnr && !rnr_left[{}];", n - 1),
        "always @(*) begin".into(),
        format!("    tm_index = {{{}'d0, i}};", 24 - qa),
        "    fire = have;".into(),
        format!("    fire_qpn = {{{}'d0, q}};", 24 - qa),
        "    fire_rnr = rnr_k;".into(),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    seen <= 1'b0;".into(),
        "    if (have) begin".into(),
        "        if (take) have <= 1'b0;".into(),
        "    end else if (ack_due || rnr_due) begin".into(),
        "        have <= 1'b1; q <= at; rnr_k <= !ack_due;".into(),
        "    end else begin".into(),
        "        seen <= 1'b1; at <= i;".into(),
        format!("        i <= i == {qa}'d{} ? {qa}'d0 : i + {qa}'d1;", p.max_qp - 1),
        "    end".into(),
        "    if (reset) begin have <= 1'b0; seen <= 1'b0; i <= 0; end".into(),
        "end".into(),
    ]
}
