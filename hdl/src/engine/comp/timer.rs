//! `TimerScan`: which QP's ACK timer or RNR wait is due, as generated Verilog. It reads the timers' table
//! (`CmdExec`'s `tm_*` port) a row a cycle, round robin: the table is `lanes(p)` banks, QP `q` in bank
//! `q mod lanes` at row `q / lanes`, so a row is that many QPs and a whole scan takes `max_qp / lanes`
//! cycles. Each armed deadline is compared with the tick now (the model's `timer::due`: PSN-style wrapping
//! distances, the ACK timer's over its 36 bits, the RNR wait's over its 25). The due QPs of a row are kept
//! and offered one at a time, the lowest first (`fire`, the QP and which timer: the ACK timer before an RNR
//! wait), each until the dispatch takes it (`take`); then the scan goes on from the next row. The dispatch
//! checks the timer again against the QP's `qp_req` before it acts: one that moved since the scan read it
//! is let go. The model lets a timer fire up to `TIMER_TOLERANCE` ticks (1,024 cycles at 125 MHz) late: an
//! offered timer waits for one holder's turn of the context port at most (the transmit sides start nothing
//! while one is offered).

use crate::kit::*;
use wire::contract::profile::Profile;
use wire::contract::qpc::{bits_for, NEAR_TICK_BITS, TICK_BITS};

/// The most QPs a row of the timers' table holds: the width of the `tm_*` ports, in lanes.
pub const TIMER_LANES: usize = 16;

/// QPs a row of the timers' table holds for profile `p`: enough that a scan takes at most 64 cycles (half
/// a tick at 125 MHz), up to `TIMER_LANES`, a power of two that divides `max_qp`. The large profile's
/// 16,384 QPs take 1,024 cycles a scan, past the tolerance: that size wants a timer wheel instead.
pub fn lanes(p: &Profile) -> u32 {
    let mut l = (p.max_qp / 64).clamp(1, TIMER_LANES as u32).next_power_of_two();
    while l > 1 && (l > p.max_qp / 64 || !p.max_qp.is_multiple_of(l)) {
        l /= 2;
    }
    l
}

const T: usize = TICK_BITS as usize;
const N: usize = NEAR_TICK_BITS as usize;

#[derive(LogicBlock, Default)]
pub struct TimerScan {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub tick: Signal<In, Bits<T>>,
    /// The timers' table: the row read, and its QPs' entries the cycle after (lane `k` is the row's `k`th
    /// QP; lanes past `lanes(p)` are zero).
    pub tm_index: Signal<Out, Bits<24>>,
    pub tm_live: Signal<In, Bits<TIMER_LANES>>,
    pub tm_ack: Signal<In, Bits<TIMER_LANES>>,
    pub tm_ack_at: Signal<In, Bits<{ TIMER_LANES * T }>>,
    pub tm_rnr: Signal<In, Bits<TIMER_LANES>>,
    pub tm_rnr_at: Signal<In, Bits<{ TIMER_LANES * N }>>,
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
        // Verified in Verilator on its own against a reference of the table's rules (sim/tests/timer_scan.rs)
        // and with the core, in lockstep with the model (driver/tests/rtl_requester.rs).
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
    let l = lanes(p);
    let lb = bits_for(l - 1);
    let rows = p.max_qp / l;
    let ra = bits_for(rows - 1);
    let (t, n) = (TICK_BITS, NEAR_TICK_BITS);
    let mut v = vec![
        format!("reg [{}:0] i, at, q;", ra - 1),
        "reg have, seen;".into(),
        "// The row's due lanes kept (`dm`), and which of them fire an RNR wait (`rk`); the row in (read".into(),
        "// the cycle before, row `at`) and its lanes with an armed deadline at or before the tick.".into(),
        format!("reg [{}:0] dm, rk;", l - 1),
    ];
    v.push(format!("wire [{}:0] ack_due, rnr_due;", l - 1));
    let mut unused = Vec::new();
    for k in 0..l {
        v.push(format!("wire [{}:0] ack_left{k} = tick - tm_ack_at[{}:{}];", t - 1, k * t + t - 1, k * t));
        v.push(format!("wire [{}:0] rnr_left{k} = tick[{}:0] - tm_rnr_at[{}:{}];", n - 1, n - 1, k * n + n - 1, k * n));
        v.push(format!("assign ack_due[{k}] = tm_live[{k}] && tm_ack[{k}] && !ack_left{k}[{}];", t - 1));
        v.push(format!("assign rnr_due[{k}] = tm_live[{k}] && tm_rnr[{k}] && !rnr_left{k}[{}];", n - 1));
        unused.push(format!("^ack_left{k}[{}:0] ^ ^rnr_left{k}[{}:0]", t - 2, n - 2));
    }
    if (l as usize) < TIMER_LANES {
        let lanes = TIMER_LANES as u32;
        unused.push(format!(
            "^tm_live[{0}:{l}] ^ ^tm_ack[{0}:{l}] ^ ^tm_rnr[{0}:{l}] ^ ^tm_ack_at[{1}:{2}] ^ ^tm_rnr_at[{3}:{4}]",
            lanes - 1,
            lanes * t - 1,
            l * t,
            lanes * n - 1,
            l * n
        ));
    }
    v.push(format!("wire unused_left = {};", unused.join(" ^ ")));
    v.push(format!("wire [{}:0] due = seen ? ack_due | rnr_due : {l}'d0;", l - 1));
    if l == 1 {
        v.extend([
            "always @(*) begin".into(),
            format!("    tm_index = {{{}'d0, i}};", 24 - ra),
            "    fire = have;".into(),
            format!("    fire_qpn = {{{}'d0, q}};", 24 - ra),
            "    fire_rnr = rk[0];".into(),
            "end".into(),
            "wire left = 1'b0;".into(),
            "wire unused_dm = ^dm;".into(),
        ]);
    } else {
        v.push("// The lowest due lane kept.".into());
        v.push(format!("reg [{}:0] lane;", lb - 1));
        v.push("always @(*) begin".into());
        v.push(format!("    lane = {lb}'d0;"));
        for k in (1..l).rev() {
            v.push(format!("    if (dm[{k}]) lane = {lb}'d{k};"));
        }
        v.push(format!("    if (dm[0]) lane = {lb}'d0;"));
        v.extend([
            format!("    tm_index = {{{}'d0, i}};", 24 - ra),
            "    fire = have;".into(),
            format!("    fire_qpn = {{{}'d0, q, lane}};", 24 - ra - lb),
            "    fire_rnr = rk[lane];".into(),
            "end".into(),
            "// Lanes due after the one offered now.".into(),
            format!("wire left = |(dm & ~({l}'d1 << lane));"),
        ]);
    }
    v.extend([
        "always @(posedge clock) begin".into(),
        "    seen <= 1'b0;".into(),
        "    if (have) begin".into(),
        if l == 1 {
            "        if (take) have <= left;".into()
        } else {
            "        if (take) begin dm[lane] <= 1'b0; have <= left; end".into()
        },
        "    end else if (|due) begin".into(),
        "        have <= 1'b1; q <= at; dm <= due; rk <= ~ack_due;".into(),
        "    end else begin".into(),
        "        seen <= 1'b1; at <= i;".into(),
        format!("        i <= i == {ra}'d{} ? {ra}'d0 : i + {ra}'d1;", rows - 1),
        "    end".into(),
        "    if (reset) begin have <= 1'b0; seen <= 1'b0; i <= 0; end".into(),
        "end".into(),
    ]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scan_takes_at_most_64_cycles_up_to_sixteen_lanes() {
        for (max_qp, want) in [(16, 1), (64, 1), (128, 2), (256, 4), (1024, 16), (200, 2), (16384, 16)] {
            let p = Profile { max_qp, ..Profile::board() };
            assert_eq!(lanes(&p), want, "{max_qp} QPs");
            assert!(max_qp.is_multiple_of(want));
        }
    }
}
