//! The follower: a fresh model NIC and a copy of the host's memory, driven by a trace instead of a
//! scheduler of its own.

use super::{Event, HostOp, Trace};
use crate::hostmem::HostMemory;
use crate::nic::timer::tick_of;
use crate::nic::{Decision, Illegal, Nic, NicConfig, Output};
use crate::Time;
use std::collections::VecDeque;

/// A decision the follower refused: where in the trace, when, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub event: usize,
    pub time: Time,
    pub illegal: Illegal,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "event {} at t={} ps: {} is illegal: {}",
            self.event, self.time, self.illegal.decision, self.illegal.reason
        )
    }
}

/// A model NIC that takes its decisions from a trace.
pub struct Follower {
    pub nic: Nic,
    mem: HostMemory,
    outputs: Vec<(usize, Output)>,
    /// Frames that reached the port and were not yet accepted, oldest first.
    arrived: VecDeque<Vec<u8>>,
    /// Where the trace got to: its last event's index and time.
    at: (usize, Time),
}

impl Follower {
    /// A fresh NIC of `cfg` (its invariant and packed-context checks on) with empty host memory.
    pub fn new(cfg: NicConfig) -> Self {
        let mut nic = Nic::new(cfg);
        nic.record_outputs(true);
        nic.set_checks(true);
        Follower { nic, mem: HostMemory::new(), outputs: Vec::new(), arrived: VecDeque::new(), at: (0, 0) }
    }

    /// Replays `trace`: host operations into the follower's memory, decisions into its NIC, each checked
    /// for legality (a timer left unfired past its tolerance is refused at the next decision). Stops at the
    /// first refusal. Returns the number of decisions applied.
    pub fn follow(&mut self, trace: &Trace) -> Result<usize, Refusal> {
        if let Some(cfg) =
            trace.config.as_ref().filter(|c| c.profile != self.nic.cfg.profile || c.port_mbps != self.nic.cfg.port_mbps)
        {
            let reason = format!("it was recorded from a NIC of {cfg:?}, this one is of {:?}", self.nic.cfg);
            return Err(Refusal { event: 0, time: 0, illegal: Illegal { decision: "the trace".into(), reason } });
        }
        let mut decisions = 0;
        let mut last = 0;
        for (i, e) in trace.events.iter().enumerate() {
            self.at = (i, e.time);
            match &e.event {
                Event::Host(op) => self.host(op),
                Event::Arrive(frame) => self.arrived.push_back(frame.clone()),
                Event::Nic(d) => {
                    let refuse = |illegal| Refusal { event: i, time: e.time, illegal };
                    if let Decision::Rx(frame) = d {
                        if self.arrived.front() != Some(frame) {
                            let reason = match self.arrived.front() {
                                None => "no frame has arrived to be accepted".to_string(),
                                Some(f) => format!("the next frame to arrive was another ({} bytes)", f.len()),
                            };
                            return Err(refuse(Illegal { decision: d.to_string(), reason }));
                        }
                        self.arrived.pop_front();
                    }
                    if e.time < last {
                        return Err(refuse(Illegal {
                            decision: d.to_string(),
                            reason: format!("it is stamped {} ps, before the decision before it ({last} ps)", e.time),
                        }));
                    }
                    last = e.time;
                    if let Some((qpn, timer, deadline)) = self.nic.overdue(tick_of(e.time)) {
                        return Err(refuse(Illegal {
                            decision: d.to_string(),
                            reason: format!(
                                "the {timer:?} timer of QP {qpn:#x}, due at tick {deadline}, has not fired by tick {}",
                                tick_of(e.time)
                            ),
                        }));
                    }
                    self.nic.apply(e.time, d, &mut self.mem).map_err(refuse)?;
                    self.outputs.extend(self.nic.take_outputs().into_iter().map(|o| (i, o)));
                    decisions += 1;
                    if let Some(reason) = self.nic.check_failure() {
                        return Err(refuse(Illegal { decision: d.to_string(), reason: reason.to_string() }));
                    }
                }
            }
        }
        Ok(decisions)
    }

    /// At a quiet point (the implementation has run to time `end` and has nothing to do): every frame that
    /// arrived was accepted, no timer was left unfired, and nothing is waiting for a decision (a command, a
    /// WQE to fetch or flush, a stream with something its pacer lets go).
    pub fn quiet(&self, end: Time) -> Result<(), Refusal> {
        let tick = tick_of(end);
        let n = &self.nic;
        let left = if !self.arrived.is_empty() {
            Some(format!("{} frames arrived and were never accepted", self.arrived.len()))
        } else if let Some((qpn, timer, deadline)) = n.timers().find(|t| t.2 <= tick) {
            Some(format!("the {timer:?} timer of QP {qpn:#x}, due at tick {deadline}, never fired"))
        } else if n.command_pending() {
            Some("a command was never run".into())
        } else if let Some(qpn) = n.fetchable_qps().next() {
            Some(format!("QP {qpn:#x} has posted WQEs never fetched"))
        } else if let Some(qpn) = n.flushing_qps().next() {
            Some(format!("QP {qpn:#x} has WQEs never flushed"))
        } else {
            n.ready_picks(tick, 0).first().map(|p| format!("{p:?} has something to send"))
        };
        match left {
            None => Ok(()),
            Some(reason) => Err(Refusal {
                event: self.at.0,
                time: end,
                illegal: Illegal { decision: "the end of the trace".into(), reason },
            }),
        }
    }

    fn host(&mut self, op: &HostOp) {
        match op {
            HostOp::Alloc { iova, len } => self.mem.alloc_at(*iova, *len),
            HostOp::Free { iova } => {
                self.mem.free(*iova);
            }
            HostOp::Write { iova, data } => {
                let _ = self.mem.write(*iova, data);
            }
        }
    }

    /// What the follower produced, each output with the index of the trace event behind it.
    pub fn outputs(&self) -> &[(usize, Output)] {
        &self.outputs
    }

    /// Applies one decision outside a trace (for tests that build illegal ones by hand).
    pub fn apply(&mut self, time: Time, d: &Decision) -> Result<(), Illegal> {
        self.nic.apply(time, d, &mut self.mem).map(|_| ())
    }
}
