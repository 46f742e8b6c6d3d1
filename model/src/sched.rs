//! The implementation's choices, made by the model itself: which decision the NIC takes next and when. With
//! `Policy::Exact` every decision is taken as soon as it is possible, in a fixed order within an instant
//! (timers by QPN, then received frames, then the command unit, the fetch and flush units, then one frame
//! out if the port is free, control frames first and QPs in round robin). `Policy::Perturb` takes the same
//! decisions at other legal times and in other legal orders, as an RTL would: a random ready stream,
//! frames accepted later, DMA reads completing after a PCIe-like latency, timers late within their
//! tolerance. The NIC's outputs may then interleave differently, never differ in substance.

use crate::follow::{lock, TraceLog};
use crate::hostmem::HostMemory;
use crate::nic::timer::{tick_of, tick_start, Tick, TimerKind, TIMER_TOLERANCE};
use crate::nic::{Decision, Effect, Nic, TxPick};
use crate::rng::Rng;
use crate::Time;
use std::collections::{HashMap, VecDeque};

/// How the scheduler chooses.
#[derive(Debug, Clone)]
pub enum Policy {
    Exact,
    Perturb(Rng),
}

/// A deferred decision (perturbed policy): when it becomes ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Wait {
    Command,
    Fetch(u32),
    Flush(u32),
    Timer(u32, TimerKind, Tick),
}

/// DMA latency of the perturbed policy: a round trip of 500 ns, then 12 GB/s.
fn dma_ps(bytes: usize) -> Time {
    500_000 + bytes as Time * 1000 / 12
}

/// Most a perturbed ingress holds a frame back.
const RX_JITTER_PS: Time = 2_000_000;

/// One NIC's scheduler: its policy, the port, and the frames waiting at ingress.
#[derive(Debug, Clone)]
pub struct Sched {
    policy: Policy,
    /// QPN the next round-robin scan starts at (kept across QP creation and destruction).
    rr: u32,
    /// The port is busy serialising until then.
    tx_free_at: Time,
    /// When the last frame left (frames leave in the order they were picked).
    emitted_at: Time,
    /// Frames arrived and when they are accepted, in order.
    ingress: VecDeque<(Time, Vec<u8>)>,
    waits: HashMap<Wait, Time>,
}

impl Sched {
    pub fn new(policy: Policy) -> Self {
        Sched { policy, rr: 0, tx_free_at: 0, emitted_at: 0, ingress: VecDeque::new(), waits: HashMap::new() }
    }

    /// A frame arrived from the link at `now`.
    pub fn arrive(&mut self, now: Time, frame: Vec<u8>) {
        let mut at = now;
        if let Policy::Perturb(rng) = &mut self.policy {
            at += rng.below(RX_JITTER_PS);
        }
        let at = self.ingress.back().map_or(at, |b| at.max(b.0));
        self.ingress.push_back((at, frame));
    }

    fn perturbed(&self) -> bool {
        matches!(self.policy, Policy::Perturb(_))
    }

    /// Whether deferred decision `w`, first seen now, is ready at `now` (perturbed: after its delay).
    fn ready(&mut self, w: Wait, delay: Time, now: Time) -> bool {
        if !self.perturbed() {
            return true;
        }
        let at = *self.waits.entry(w).or_insert(now + delay);
        at <= now
    }

    /// When a due timer fires (perturbed: up to `TIMER_TOLERANCE` ticks late).
    fn timer_at(&mut self, qpn: u32, kind: TimerKind, deadline: Tick) -> Time {
        let late = match &mut self.policy {
            Policy::Exact => 0,
            Policy::Perturb(rng) => {
                let w = Wait::Timer(qpn, kind, deadline);
                if let Some(&at) = self.waits.get(&w) {
                    return at;
                }
                let at = tick_start(deadline + rng.below(TIMER_TOLERANCE + 1)) + rng.below(1000) * 1000;
                self.waits.insert(w, at);
                return at;
            }
        };
        tick_start(deadline + late)
    }

    /// Takes every decision due at `now`; returns the frames for the port with the times they leave.
    pub fn run(
        &mut self,
        nic: &mut Nic,
        mem: &mut HostMemory,
        now: Time,
        trace: Option<&TraceLog>,
    ) -> Vec<(Time, Vec<u8>)> {
        let mut frames = Vec::new();
        loop {
            let mut did = false;
            // Timers, by QPN.
            let due: Vec<_> = nic.timers().collect();
            for (qpn, kind, deadline) in due {
                if nic.timer_deadline(qpn, kind) == Some(deadline) && self.timer_at(qpn, kind, deadline) <= now {
                    self.waits.remove(&Wait::Timer(qpn, kind, deadline));
                    apply(nic, mem, now, Decision::Timer { qpn, timer: kind }, trace);
                    did = true;
                }
            }
            // Received frames.
            while self.ingress.front().is_some_and(|f| f.0 <= now) {
                let Some((_, frame)) = self.ingress.pop_front() else { break };
                apply(nic, mem, now, Decision::Rx(frame), trace);
                did = true;
            }
            // The command unit: a mailbox read and its output written.
            if nic.command_pending() && self.ready(Wait::Command, 2 * dma_ps(256), now) {
                self.waits.remove(&Wait::Command);
                apply(nic, mem, now, Decision::Command, trace);
                did = true;
            }
            // The fetch unit: one WQE read per step, a DMA round trip each when perturbed.
            let fetch: Vec<u32> = nic.fetchable_qps().collect();
            for qpn in fetch {
                while nic.fetchable(qpn).is_ok() && self.ready(Wait::Fetch(qpn), dma_ps(128), now) {
                    self.waits.remove(&Wait::Fetch(qpn));
                    // The requester takes the fetch's read as its descriptor read whenever it keeps none.
                    let primed = nic.keeps_no_descriptor();
                    apply(nic, mem, now, Decision::FetchSq { qpn, primed }, trace);
                    did = true;
                }
            }
            // The flush unit.
            let flush: Vec<u32> = nic.flushing_qps().collect();
            for qpn in flush {
                while nic.flush_pending(qpn) && self.ready(Wait::Flush(qpn), dma_ps(64), now) {
                    self.waits.remove(&Wait::Flush(qpn));
                    apply(nic, mem, now, Decision::Flush { qpn }, trace);
                    did = true;
                }
            }
            // One frame out, if the port is free.
            if self.tx_free_at <= now {
                let picks = nic.ready_picks(tick_of(now), self.rr);
                let pick = match &mut self.policy {
                    Policy::Exact => picks.first().copied(),
                    Policy::Perturb(rng) if !picks.is_empty() => Some(picks[rng.below(picks.len() as u64) as usize]),
                    Policy::Perturb(_) => None,
                };
                if let Some(pick) = pick {
                    if let TxPick::Qp { qpn, .. } = pick {
                        self.rr = qpn + 1;
                    }
                    if let Effect::Frame(f) = apply(nic, mem, now, Decision::Tx(pick), trace) {
                        let ser = nic.serialize_time(f.len());
                        let leave = if self.perturbed() { (now + dma_ps(f.len())).max(self.emitted_at) } else { now };
                        self.tx_free_at = now + ser;
                        self.emitted_at = leave + ser;
                        frames.push((leave, f));
                    }
                    did = true;
                }
            }
            // Deferred decisions seen for the first time are booked; forget those no longer possible.
            self.forget_stale(nic);
            if !did {
                return frames;
            }
        }
    }

    /// Drops waits for decisions that can no longer be taken.
    fn forget_stale(&mut self, nic: &Nic) {
        if self.waits.is_empty() {
            return;
        }
        self.waits.retain(|w, _| match *w {
            Wait::Command => nic.command_pending(),
            Wait::Fetch(q) => nic.fetchable(q).is_ok(),
            Wait::Flush(q) => nic.flush_pending(q),
            Wait::Timer(q, k, d) => nic.timer_deadline(q, k) == Some(d),
        });
    }

    /// The earliest time after (or at) `now` at which a decision is due, if any.
    pub fn next_time(&mut self, nic: &Nic, now: Time) -> Option<Time> {
        let mut t: Option<Time> = self.ingress.front().map(|f| f.0);
        let mut consider = |x: Time| t = Some(t.map_or(x, |t: Time| t.min(x)));
        let timers: Vec<_> = nic.timers().collect();
        for (qpn, kind, deadline) in timers {
            consider(self.timer_at(qpn, kind, deadline));
        }
        if nic.command_pending() {
            consider(self.deferred(Wait::Command, 2 * dma_ps(256), now));
        }
        let fetch: Vec<u32> = nic.fetchable_qps().collect();
        for qpn in fetch {
            consider(self.deferred(Wait::Fetch(qpn), dma_ps(128), now));
        }
        let flush: Vec<u32> = nic.flushing_qps().collect();
        for qpn in flush {
            consider(self.deferred(Wait::Flush(qpn), dma_ps(64), now));
        }
        if !nic.ready_picks(tick_of(now), self.rr).is_empty() {
            consider(now.max(self.tx_free_at));
        } else if let Some(p) = nic.next_paced(now) {
            consider(p.max(self.tx_free_at));
        }
        t.map(|t| t.max(now))
    }

    /// When deferred decision `w` becomes ready (now, unperturbed).
    fn deferred(&mut self, w: Wait, delay: Time, now: Time) -> Time {
        if !self.perturbed() {
            return now;
        }
        *self.waits.entry(w).or_insert(now + delay)
    }
}

/// Applies a decision of the model's own scheduler, recording it (and its outputs) in `trace`. The
/// scheduler takes only legal decisions; one refused, or a check failing after one (`Nic::set_checks`), is a
/// fault of the model's, reported as such.
pub fn apply(nic: &mut Nic, mem: &mut HostMemory, now: Time, d: Decision, trace: Option<&TraceLog>) -> Effect {
    match nic.apply(now, &d, mem) {
        Ok(_) if nic.check_failure().is_some() => {
            panic!("model check failed: {}", nic.check_failure().unwrap_or_default())
        }
        Ok(e) => {
            if let Some(t) = trace {
                let outputs = nic.take_outputs();
                lock(t).decision(now, d, outputs);
            }
            e
        }
        Err(e) => panic!("the model's scheduler took an illegal decision at t={now} ps: {e}"),
    }
}
