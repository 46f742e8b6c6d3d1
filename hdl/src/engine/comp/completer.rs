//! `Completer`: what a response or a timer's end does to its QP's `qp_req` and window, the model's
//! `comp::respond`, `comp::ack_timer_end` and `comp::rnr_wait_end`. A response (`start`) is walked first
//! (`AckWalk`: the WQEs it acknowledges finished, `walk_done` with the walk's `qp_req`, written back by the
//! dispatch); with it `RespMatch` says what a READ response or atomic ACK does to the entry the walk
//! stopped at and `RespPlan` what is left to do (`run`). When there is more (data placed, a failure, a retry,
//! an RNR wait), or for a timer's end, the dispatch starts `RespRun` (`run_start`), which reads the WQE's
//! slot again for its scatter list (the host read port), starts the scatter (`sc_*`), walks the window and
//! gives `run_done` with the entry written back and the final `qp_req`.
//!
//! Its own top (`Top::Completer`) is checked against the model's functions on random windows and responses
//! (sim/tests/completer.rs).

use super::ack::AckWalk;
use super::plan::RespPlan;
use super::resp::{RespMatch, RespRun};
use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
use crate::engine::req::ready::WQE_BITS;
use crate::engine::resp::recv_wqe::SGES_BITS;
use crate::kit::*;
use crate::rx::meta;
use wire::contract::profile::Profile;
use wire::contract::qpc::TICK_BITS;

#[derive(LogicBlock)]
pub struct Completer {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The QP's records on the context port, and the tick now.
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    /// A response's walk (a cycle), with its RX record, PSN, the PSN it acknowledges through, whether it
    /// acknowledges nothing (a reserved AETH) and its AETH syndrome.
    pub start: Signal<In, Bit>,
    pub rec: Signal<In, Bits<{ meta::BITS }>>,
    pub psn: Signal<In, Bits<24>>,
    pub through: Signal<In, Bits<24>>,
    pub noack: Signal<In, Bit>,
    pub aeth: Signal<In, Bits<8>>,
    /// The response's PSN was sent (a response to anything else is ignored).
    pub sent: Signal<Out, Bit>,
    /// For a cycle: the walk is over, with its `qp_req`; whether more is to be done (`run`) and whether the
    /// window's front is finished (`retire`).
    pub walk_done: Signal<Out, Bit>,
    pub walk_req_next: Signal<Out, Bits<REQ_BITS>>,
    pub run: Signal<Out, Bit>,
    pub retire: Signal<Out, Bit>,
    /// The window's ports during the walk.
    pub walk_r_slot: Signal<Out, Bits<8>>,
    pub walk_w_we: Signal<Out, Bit>,
    pub walk_w_slot: Signal<Out, Bits<8>>,
    pub walk_w_entry: Signal<Out, Bits<WQE_BITS>>,
    /// The rest (a cycle, the walk's `qp_req` written back), or a timer's end: the ACK timer's or the RNR
    /// wait's; whether that timer is armed and due.
    pub run_start: Signal<In, Bit>,
    pub tmr_ack: Signal<In, Bit>,
    pub tmr_rnr: Signal<In, Bit>,
    pub ack_due: Signal<Out, Bit>,
    pub rnr_due: Signal<Out, Bit>,
    /// For a cycle: the rest is done, with the final `qp_req`; for an ACK timer's end, whether work was
    /// outstanding.
    pub run_done: Signal<Out, Bit>,
    pub run_req_next: Signal<Out, Bits<REQ_BITS>>,
    pub timed_out: Signal<Out, Bit>,
    /// The window's ports during the rest.
    pub run_r_slot: Signal<Out, Bits<8>>,
    pub run_w_we: Signal<Out, Bit>,
    pub run_w_slot: Signal<Out, Bits<8>>,
    pub run_w_entry: Signal<Out, Bits<WQE_BITS>>,
    /// The window's read port: the entry asked for the cycle before.
    pub r_entry: Signal<In, Bits<WQE_BITS>>,
    /// The host read of the WQE's slot, and whether it still brings beats.
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub rd_open: Signal<Out, Bit>,
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<64>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// The scatter of the response's data: started for a cycle over the WQE's list, offset and length;
    /// whether the data fits (the cycle after).
    pub sc_start: Signal<Out, Bit>,
    pub sc_sges: Signal<Out, Bits<SGES_BITS>>,
    pub sc_count: Signal<Out, Bits<8>>,
    pub sc_off: Signal<Out, Bits<32>>,
    pub sc_len: Signal<Out, Bits<32>>,
    pub sc_fits: Signal<In, Bit>,
    ack: AckWalk,
    rmatch: RespMatch,
    plan: RespPlan,
    rrun: RespRun,
}

impl Completer {
    pub fn new(profile: Profile) -> Self {
        Completer {
            clock: Signal::default(),
            reset: Signal::default(),
            attr: Signal::default(),
            req: Signal::default(),
            tick: Signal::default(),
            start: Signal::default(),
            rec: Signal::default(),
            psn: Signal::default(),
            through: Signal::default(),
            noack: Signal::default(),
            aeth: Signal::default(),
            sent: Signal::default(),
            walk_done: Signal::default(),
            walk_req_next: Signal::default(),
            run: Signal::default(),
            retire: Signal::default(),
            walk_r_slot: Signal::default(),
            walk_w_we: Signal::default(),
            walk_w_slot: Signal::default(),
            walk_w_entry: Signal::default(),
            run_start: Signal::default(),
            tmr_ack: Signal::default(),
            tmr_rnr: Signal::default(),
            ack_due: Signal::default(),
            rnr_due: Signal::default(),
            run_done: Signal::default(),
            run_req_next: Signal::default(),
            timed_out: Signal::default(),
            run_r_slot: Signal::default(),
            run_w_we: Signal::default(),
            run_w_slot: Signal::default(),
            run_w_entry: Signal::default(),
            r_entry: Signal::default(),
            rd_valid: Signal::default(),
            rd_ready: Signal::default(),
            rd_addr: Signal::default(),
            rd_len: Signal::default(),
            rd_open: Signal::default(),
            cpl_valid: Signal::default(),
            cpl_data: Signal::default(),
            cpl_err: Signal::default(),
            cpl_last: Signal::default(),
            sc_start: Signal::default(),
            sc_sges: Signal::default(),
            sc_count: Signal::default(),
            sc_off: Signal::default(),
            sc_len: Signal::default(),
            sc_fits: Signal::default(),
            ack: AckWalk::new(profile),
            rmatch: RespMatch::new(profile),
            plan: RespPlan::new(profile),
            rrun: RespRun::new(profile),
        }
    }
}

impl Logic for Completer {
    #[hdl_gen]
    fn update(&mut self) {
        self.ack.clock.next = self.clock.val();
        self.ack.reset.next = self.reset.val();
        self.ack.start.next = self.start.val();
        self.ack.attr.next = self.attr.val();
        self.ack.req.next = self.req.val();
        self.ack.psn.next = self.psn.val();
        self.ack.through.next = self.through.val();
        self.ack.noack.next = self.noack.val();
        self.ack.tick.next = self.tick.val();
        self.ack.r_entry.next = self.r_entry.val();
        self.sent.next = self.ack.sent.val();
        self.walk_done.next = self.ack.done.val();
        self.walk_req_next.next = self.ack.req_next.val();
        self.retire.next = self.ack.retire.val();
        self.walk_r_slot.next = self.ack.r_slot.val();
        self.walk_w_we.next = self.ack.w_we.val();
        self.walk_w_slot.next = self.ack.w_slot.val();
        self.walk_w_entry.next = self.ack.w_entry.val();
        // What a READ response or atomic ACK does to the entry the walk stopped at (read in `done`'s cycle).
        self.rmatch.attr.next = self.attr.val();
        self.rmatch.entry.next = self.r_entry.val();
        self.rmatch.held.next = self.ack.held.val();
        self.rmatch.first.next = self.ack.held_first.val();
        self.rmatch.comp.next = self.ack.comp_psn.val();
        self.rmatch.rec.next = self.rec.val();
        // What is left after the walk.
        self.plan.rec.next = self.rec.val();
        self.plan.attr.next = self.attr.val();
        self.plan.req.next = self.ack.req_next.val();
        self.plan.gap.next = self.ack.gap.val();
        self.plan.walk_rewind.next = self.ack.rewind.val();
        self.plan.match_take.next = self.rmatch.take.val();
        self.plan.match_bad.next = self.rmatch.bad.val();
        self.plan.match_ahead.next = self.rmatch.ahead.val();
        self.run.next = self.plan.run.val();
        // Doing it.
        self.rrun.clock.next = self.clock.val();
        self.rrun.reset.next = self.reset.val();
        self.rrun.start.next = self.run_start.val();
        self.rrun.take.next = self.plan.take.val();
        self.rrun.fail.next = self.plan.fail.val();
        self.rrun.status.next = self.plan.status.val();
        self.rrun.vendor.next = self.plan.vendor.val();
        self.rrun.retry.next = self.plan.retry.val();
        self.rrun.dec_retry.next = self.plan.dec_retry.val();
        self.rrun.dec_rnr.next = self.plan.dec_rnr.val();
        self.rrun.rnr_set.next = self.plan.rnr_set.val();
        self.rrun.gap_set.next = self.plan.gap_set.val();
        self.rrun.rewind.next = self.plan.rewind.val();
        self.rrun.held.next = self.ack.held.val();
        self.rrun.tmr_ack.next = self.tmr_ack.val();
        self.rrun.tmr_rnr.next = self.tmr_rnr.val();
        self.rrun.syn.next = self.aeth.val();
        self.rrun.last.next = self.rmatch.last.val();
        self.rrun.off.next = self.rmatch.off.val();
        self.rrun.len.next = self.rmatch.bytes.val();
        self.rrun.entry.next = self.r_entry.val();
        self.rrun.attr.next = self.attr.val();
        self.rrun.req.next = self.req.val();
        self.rrun.psn.next = self.psn.val();
        self.rrun.tick.next = self.tick.val();
        self.rrun.rd_ready.next = self.rd_ready.val();
        self.rrun.cpl_valid.next = self.cpl_valid.val();
        self.rrun.cpl_data.next = self.cpl_data.val();
        self.rrun.cpl_err.next = self.cpl_err.val();
        self.rrun.cpl_last.next = self.cpl_last.val();
        self.rrun.r_entry.next = self.r_entry.val();
        self.rrun.sc_fits.next = self.sc_fits.val();
        self.ack_due.next = self.rrun.ack_due.val();
        self.rnr_due.next = self.rrun.rnr_due.val();
        self.run_done.next = self.rrun.done.val();
        self.run_req_next.next = self.rrun.req_next.val();
        self.timed_out.next = self.rrun.timed_out.val();
        self.run_r_slot.next = self.rrun.r_slot.val();
        self.run_w_we.next = self.rrun.w_we.val();
        self.run_w_slot.next = self.rrun.w_slot.val();
        self.run_w_entry.next = self.rrun.w_entry.val();
        self.rd_valid.next = self.rrun.rd_valid.val();
        self.rd_addr.next = self.rrun.rd_addr.val();
        self.rd_len.next = self.rrun.rd_len.val();
        self.rd_open.next = self.rrun.rd_open.val();
        self.sc_start.next = self.rrun.sc_start.val();
        self.sc_sges.next = self.rrun.sc_sges.val();
        self.sc_count.next = self.rrun.sc_count.val();
        self.sc_off.next = self.rrun.sc_off.val();
        self.sc_len.next = self.rrun.sc_len.val();
    }
}
