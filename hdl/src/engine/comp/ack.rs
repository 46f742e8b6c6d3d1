//! The completer's handling of a positive ACK, the model's `comp::on_ack` for an ACK (`ack_through`, then
//! `progress` and the ACK timer's `rearm_timer`), and the pop of a finished entry off the window's front
//! that `comp::retire` does:
//!
//! - `AckWalk`: walks QP's window from its oldest unfinished entry, one `AckStep` an entry (the first
//!   entry's first PSN found first, `PsnWalk`; each next one's follows from it), marking each entry the ACK
//!   covers whole finished (the window's write port) and moving `comp_psn` past it or into a SEND or WRITE
//!   it covers in part; it stops at an entry not covered whole, or at a READ or atomic the ACK is past
//!   without its answer (`gap`). Then `done` for a cycle with `req_next`: `comp_psn`, `oldest` at the entry
//!   it stopped at, the retry counters reset and any gap closed after progress, the ACK timer stopped when
//!   nothing started is left and restarted after progress or when it was not running (not during an RNR
//!   wait); `retire` when the front entry is finished (its CQE is due); `rewind` when the cursor was left
//!   behind `comp_psn` (the model's `complete_to` goes back to it). A READ response or an atomic ACK
//!   acknowledges every PSN before its own (`through`); `held`, `held_first` and `comp_psn` give the entry
//!   the walk stopped at for `RespMatch`.
//! - `RetirePop` (combinational): the window's front entry, whether it is finished, its SQ counter, and
//!   `qp_req` with it popped.
//!
//! The rewind and the gap's retry (`retry_gap`) that may follow the walk are `RespPlan`'s and `RespRun`'s.

use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
use crate::engine::comp::ack_step::AckStep;
use crate::engine::req::ready::WQE_BITS;
use crate::engine::req::window::{ack_deadline, window_base, PsnWalk};
use crate::kit::*;
use crate::record::{build, slice, width};
use wire::contract::profile::Profile;
use wire::contract::qpc::{qp_context, TICK_BITS};

#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum AckWalkState {
    Idle,
    /// The oldest entry's first PSN being found.
    Sum,
    /// Entry `k` being read.
    Look,
    /// Entry `k` is in: one step.
    Step,
    /// The walk is over: `done`.
    Fin,
}

#[derive(LogicBlock)]
pub struct AckWalk {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Walk the window of the QP whose records are `attr` and `req` (held until `done`) for a response of
    /// PSN `psn` that acknowledges every PSN through `through` (`psn` for an ACK, the one before it for a READ
    /// response or an atomic ACK).
    pub start: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub psn: Signal<In, Bits<24>>,
    pub through: Signal<In, Bits<24>>,
    /// The response acknowledges nothing (a reserved AETH): the walk only finds the oldest unfinished entry.
    pub noack: Signal<In, Bit>,
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    /// The windows' read port (the entry of `r_slot` the next cycle) and write port.
    pub r_slot: Signal<Out, Bits<8>>,
    pub r_entry: Signal<In, Bits<WQE_BITS>>,
    pub w_we: Signal<Out, Bit>,
    pub w_slot: Signal<Out, Bits<8>>,
    pub w_entry: Signal<Out, Bits<WQE_BITS>>,
    /// `psn` was sent (before `high_psn`): a response to anything else is ignored.
    pub sent: Signal<Out, Bit>,
    pub done: Signal<Out, Bit>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    pub retire: Signal<Out, Bit>,
    pub gap: Signal<Out, Bit>,
    pub rewind: Signal<Out, Bit>,
    /// With `done`: the walk stopped at an entry of the window (the oldest unfinished one after it, read on
    /// the window's port in that cycle), and that entry's first PSN if it is started.
    pub held: Signal<Out, Bit>,
    pub held_first: Signal<Out, Bits<24>>,
    /// With `done`: `comp_psn` after the walk.
    pub comp_psn: Signal<Out, Bits<24>>,
    state: DFF<AckWalkState>,
    k: DFF<Bits<8>>,
    first: DFF<Bits<24>>,
    comp: DFF<Bits<24>>,
    prog: DFF<Bit>,
    gapped: DFF<Bit>,
    outst: DFF<Bit>,
    psn_walk: PsnWalk,
    step: AckStep,
    fin: AckFin,
}

impl AckWalk {
    pub fn new(profile: Profile) -> Self {
        AckWalk {
            clock: Signal::default(),
            reset: Signal::default(),
            start: Signal::default(),
            attr: Signal::default(),
            req: Signal::default(),
            psn: Signal::default(),
            through: Signal::default(),
            noack: Signal::default(),
            tick: Signal::default(),
            r_slot: Signal::default(),
            r_entry: Signal::default(),
            w_we: Signal::default(),
            w_slot: Signal::default(),
            w_entry: Signal::default(),
            sent: Signal::default(),
            done: Signal::default(),
            req_next: Signal::default(),
            retire: Signal::default(),
            gap: Signal::default(),
            rewind: Signal::default(),
            held: Signal::default(),
            held_first: Signal::default(),
            comp_psn: Signal::default(),
            state: DFF::default(),
            k: DFF::default(),
            first: DFF::default(),
            comp: DFF::default(),
            prog: DFF::default(),
            gapped: DFF::default(),
            outst: DFF::default(),
            psn_walk: PsnWalk::new(profile),
            step: AckStep::new(profile),
            fin: AckFin::new(profile),
        }
    }
}

impl Logic for AckWalk {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, k, first, comp, prog, gapped, outst);
        self.fin.attr.next = self.attr.val();
        self.fin.req.next = self.req.val();
        self.fin.psn.next = self.psn.val();
        self.fin.tick.next = self.tick.val();
        self.fin.entry.next = self.r_entry.val();
        self.fin.k.next = self.k.q.val();
        self.fin.comp.next = self.comp.q.val();
        self.fin.prog.next = self.prog.q.val();
        self.fin.outst.next = self.outst.q.val();
        self.psn_walk.clock.next = self.clock.val();
        self.psn_walk.reset.next = self.reset.val();
        self.psn_walk.start.next = false;
        self.psn_walk.attr.next = self.attr.val();
        self.psn_walk.base.next = self.fin.base.val();
        self.psn_walk.from.next = self.fin.oldest.val();
        self.psn_walk.count.next = self.fin.wqes.val();
        self.psn_walk.psn.next = self.fin.req_psn.val();
        self.psn_walk.r_entry.next = self.r_entry.val();
        self.step.attr.next = self.attr.val();
        self.step.wqe.next = self.r_entry.val();
        self.step.first.next = self.first.q.val();
        self.step.psn.next = self.through.val();
        self.step.comp.next = self.comp.q.val();
        self.sent.next = self.fin.sent.val();
        self.req_next.next = self.fin.req_next.val();
        self.retire.next = self.fin.retire.val();
        self.gap.next = self.gapped.q.val();
        self.rewind.next = self.fin.rewind.val();
        self.held.next = self.fin.in_window.val();
        self.held_first.next = self.first.q.val();
        self.comp_psn.next = self.comp.q.val();
        self.r_slot.next = self.fin.slot.val();
        self.w_slot.next = self.fin.slot.val();
        self.w_entry.next = self.fin.entry_next.val();
        self.w_we.next = false;
        self.done.next = false;
        match self.state.q.val() {
            AckWalkState::Idle => {
                if self.start.val() {
                    self.psn_walk.start.next = true;
                    self.k.d.next = self.fin.oldest.val();
                    self.comp.d.next = self.fin.comp_psn.val();
                    self.prog.d.next = false;
                    self.gapped.d.next = false;
                    self.outst.d.next = false;
                    self.state.d.next = AckWalkState::Sum;
                }
            }
            AckWalkState::Sum => {
                self.r_slot.next = self.psn_walk.r_slot.val();
                if self.psn_walk.done.val() {
                    self.first.d.next = self.psn_walk.first.val();
                    self.state.d.next = AckWalkState::Look;
                }
            }
            AckWalkState::Look => {
                self.state.d.next = AckWalkState::Step;
                if !self.fin.in_window.val() {
                    self.state.d.next = AckWalkState::Fin;
                }
            }
            AckWalkState::Step => {
                self.state.d.next = AckWalkState::Look;
                if self.noack.val() {
                    self.outst.d.next = self.fin.started.val();
                    self.state.d.next = AckWalkState::Fin;
                } else if self.step.skip.val() {
                    self.k.d.next = self.fin.k_next.val();
                    if self.fin.started.val() {
                        self.first.d.next = self.step.next_first.val();
                    }
                } else if self.step.finish.val() {
                    self.w_we.next = true;
                    self.comp.d.next = self.step.comp_next.val();
                    self.prog.d.next = true;
                    self.k.d.next = self.fin.k_next.val();
                    self.first.d.next = self.step.next_first.val();
                } else if self.step.stop.val() | self.step.gap.val() {
                    if self.step.moved.val() {
                        self.comp.d.next = self.step.comp_next.val();
                        self.prog.d.next = true;
                    }
                    self.gapped.d.next = self.step.gap.val();
                    self.outst.d.next = self.fin.started.val();
                    self.state.d.next = AckWalkState::Fin;
                }
            }
            AckWalkState::Fin => {
                self.done.next = true;
                self.state.d.next = AckWalkState::Idle;
            }
            _ => {
                self.state.d.next = AckWalkState::Idle;
            }
        }
        if self.reset.val() {
            self.state.d.next = AckWalkState::Idle;
        }
    }
}

/// `AckWalk`'s fields by name and what its walk leaves: the window's base (the SQ counter of entry 0) and the
/// slot of entry `k`, whether `k` is in the window and the one after it, entry `k` marked finished, whether
/// the ACK's PSN was sent, and after the walk (`comp`, `prog`, `outst`: whether the entry it stopped
/// at is started) the `qp_req` record and the `retire` and `rewind` flags.
#[derive(LogicBlock, Default)]
pub struct AckFin {
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub psn: Signal<In, Bits<24>>,
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    pub entry: Signal<In, Bits<WQE_BITS>>,
    pub k: Signal<In, Bits<8>>,
    pub comp: Signal<In, Bits<24>>,
    pub prog: Signal<In, Bit>,
    pub outst: Signal<In, Bit>,
    pub base: Signal<Out, Bits<16>>,
    pub oldest: Signal<Out, Bits<8>>,
    pub wqes: Signal<Out, Bits<8>>,
    pub req_psn: Signal<Out, Bits<24>>,
    pub comp_psn: Signal<Out, Bits<24>>,
    pub slot: Signal<Out, Bits<8>>,
    pub in_window: Signal<Out, Bit>,
    pub k_next: Signal<Out, Bits<8>>,
    pub started: Signal<Out, Bit>,
    pub entry_next: Signal<Out, Bits<WQE_BITS>>,
    pub sent: Signal<Out, Bit>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    pub retire: Signal<Out, Bit>,
    pub rewind: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl AckFin {
    pub fn new(profile: Profile) -> Self {
        AckFin { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for AckFin {
    fn update(&mut self) {
        // Verified in Verilator within `Completer` against the model's `comp::respond` (sim/tests/completer.rs).
    }

    fn connect(&mut self) {
        self.base.connect();
        self.oldest.connect();
        self.wqes.connect();
        self.req_psn.connect();
        self.comp_psn.connect();
        self.slot.connect();
        self.in_window.connect();
        self.k_next.connect();
        self.started.connect();
        self.entry_next.connect();
        self.sent.connect();
        self.req_next.connect();
        self.retire.connect();
        self.rewind.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(fin_verilog(&self.profile.0))
    }
}

/// The Verilog body of `AckFin` for profile `p`.
pub fn fin_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, rl, wl) = (&c.attr, &c.req, &c.wqe);
    let a = |n: &str| slice(al, "attr", n);
    let r = |n: &str| slice(rl, "req", n);
    let w = |n: &str| slice(wl, "entry", n);
    let (wb, t) = (width(rl, "wqes"), TICK_BITS);
    assert!(wb < 8, "a window index fits 8 bits with room");
    let mut v = window_base(&c, "attr", "req");
    v.extend(ack_deadline(&c, "attr", "tick"));
    v.extend([
        format!("wire [23:0] to_high = psn - {};", r("high_psn")),
        "wire unused_to_high = ^to_high[22:0];".into(),
        format!("wire [23:0] cur_to_comp = {} - comp;", r("cursor_psn")),
        "wire unused_cur_to_comp = ^cur_to_comp[22:0];".into(),
        // The timer after the walk: not during an RNR wait; stopped with nothing started left; restarted
        // after progress or when not running (with no timeout configured, not running).
        format!("wire rnr = {};", r("rnr_valid")),
        format!("wire restart = outst && (prog || !{});", r("timer_valid")),
        "wire unused_in = ^attr ^ ^req ^ ^entry;".into(),
    ]);
    let (rd, req_e) = build(rl, "req", "an", |name, _| {
        Some(match name {
            "comp_psn" => "comp".into(),
            "oldest" => format!("k[{}:0]", wb - 1),
            "retry_left" => format!("prog ? {} : {}", a("retry_cnt"), r("retry_left")),
            "rnr_left" => format!("prog ? {} : {}", a("rnr_retry"), r("rnr_left")),
            "gap_valid" => format!("prog ? 1'b0 : {}", r("gap_valid")),
            "gap_psn" => format!("prog ? 24'd0 : {}", r("gap_psn")),
            // A timer not running holds 0, as the model packs one.
            "timer_valid" => format!("rnr ? {0} : !outst ? 1'b0 : restart ? tmo != 5'd0 : {0}", r("timer_valid")),
            "timer" => {
                format!("rnr ? {0} : !outst ? {t}'d0 : restart ? (tmo != 5'd0 ? deadline : {t}'d0) : {0}", r("timer"))
            }
            _ => return None,
        })
    });
    v.extend(rd);
    let (ed, entry_e) = build(wl, "entry", "ae", |name, _| match name {
        "acked" => Some("1'b1".into()),
        _ => None,
    });
    v.extend(ed);
    v.extend([
        "always @(*) begin".to_string(),
        "    base = sq_base;".into(),
        format!("    oldest = {{{}'d0, {}}};", 8 - wb, r("oldest")),
        format!("    wqes = {{{}'d0, nwqes}};", 8 - wb),
        format!("    req_psn = {};", r("psn")),
        format!("    comp_psn = {};", r("comp_psn")),
        "    slot = sq_base[7:0] + k;".into(),
        format!("    in_window = k < {{{}'d0, nwqes}};", 8 - wb),
        "    k_next = k + 8'd1;".into(),
        format!("    started = {};", w("started")),
        format!("    entry_next = {{{}'d0, {entry_e}}};", WQE_BITS - wl.width() as usize),
        "    sent = to_high[23];".into(),
        format!("    req_next = {{{}'d0, {req_e}}};", REQ_BITS - rl.width() as usize),
        "    retire = k != 8'd0;".into(),
        "    rewind = prog && cur_to_comp[23];".into(),
        "end".into(),
    ]);
    v
}

/// The front of a QP's window leaving it (`comp::retire`'s pop), as generated Verilog (combinational): from
/// the QP's `qp_attr` and `qp_req` and the front entry (read at `slot`), whether it is finished (`due`) and
/// failed, its SQ counter (`index`) and `qp_req` after the pop (one entry fewer, the cursor and `oldest` one
/// back, not below 0).
#[derive(LogicBlock, Default)]
pub struct RetirePop {
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub front: Signal<In, Bits<WQE_BITS>>,
    pub slot: Signal<Out, Bits<8>>,
    pub due: Signal<Out, Bit>,
    pub failed: Signal<Out, Bit>,
    pub index: Signal<Out, Bits<16>>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    profile: Param<Profile>,
}

impl RetirePop {
    pub fn new(profile: Profile) -> Self {
        RetirePop { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RetirePop {
    fn update(&mut self) {
        // Verified in Verilator against the model's `comp::retire` and `ReqState::pop` (sim/tests/retire_pop.rs).
    }

    fn connect(&mut self) {
        self.slot.connect();
        self.due.connect();
        self.failed.connect();
        self.index.connect();
        self.req_next.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(pop_verilog(&self.profile.0))
    }
}

/// The Verilog body of `RetirePop` for profile `p`.
pub fn pop_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (rl, wl) = (&c.req, &c.wqe);
    let r = |n: &str| slice(rl, "req", n);
    let wb = width(rl, "wqes");
    let dec = |n: &str| format!("{0} == {wb}'d0 ? {wb}'d0 : {0} - {wb}'d1", r(n));
    let mut v = window_base(&c, "attr", "req");
    v.extend(["wire unused_in = ^attr ^ ^req ^ ^front;".into()]);
    let (rd, req_e) = build(rl, "req", "rp", |name, _| match name {
        "wqes" => Some(format!("{} - {wb}'d1", r("wqes"))),
        "cursor" | "oldest" => Some(dec(name)),
        _ => None,
    });
    v.extend(rd);
    v.extend([
        "always @(*) begin".to_string(),
        "    slot = sq_base[7:0];".into(),
        format!("    due = nwqes != {wb}'d0 && {};", slice(wl, "front", "acked")),
        format!("    failed = {};", slice(wl, "front", "error_valid")),
        "    index = sq_base;".into(),
        format!("    req_next = {{{}'d0, {req_e}}};", REQ_BITS - rl.width() as usize),
        "end".into(),
    ]);
    v
}
