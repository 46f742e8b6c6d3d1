//! Decisions: every step the NIC takes, as the implementation (the model's own scheduler, or the RTL the
//! model follows) takes it. `Nic::apply` checks that a decision was legal (the stream had something to
//! send, the timer was due, a command was pending), applies it, and records its outputs. What may be decided
//! now is asked through the readiness functions here, which the scheduler and the legality checks share.

use super::timer::{due, tick_of, tick_start, Tick, TimerKind, TIMER_TOLERANCE};
use super::{raw, req, resp, Nic};
use crate::hostmem::Dma;
use crate::Time;
use wire::contract::cmd::Status;
use wire::contract::cqe::CqeRepr;
use wire::contract::eqe::EventKind;
use wire::contract::regs::Counter;
use wire::contract::verbs::QpType;

/// A QP's transmit streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stream {
    /// Requests (SEND, WRITE, READ and atomic requests) of an RC QP.
    Requester,
    /// Responses (ACKs and NAKs, READ responses, atomic ACKs) of an RC QP.
    Responder,
    /// Whole frames of a raw packet QP.
    Raw,
}

/// What the transmit scheduler picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxPick {
    Qp {
        qpn: u32,
        stream: Stream,
    },
    /// The NIC's own frames: CNPs, ARP and ICMP echo replies.
    Control,
}

/// One step of the NIC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// A register write taken (doorbell, command doorbell, parameter).
    MmioWrite { off: u32, val: u32 },
    /// A register read answered (reading a 64-bit register's low word latches its high word).
    MmioRead { off: u32 },
    /// The command unit ran the command its doorbell started.
    Command,
    /// The fetch unit brought QP `qpn`'s next send WQE into its window; with `primed` the requester took the
    /// read as its descriptor read too (legal only while it keeps none; `KeptDesc`).
    FetchSq { qpn: u32, primed: bool },
    /// The transmit scheduler picked a stream with something to send.
    Tx(TxPick),
    /// A frame was accepted at ingress.
    Rx(Vec<u8>),
    /// A timer of QP `qpn` fired.
    Timer { qpn: u32, timer: TimerKind },
    /// The flush unit completed QP `qpn`'s next outstanding WQE with WR_FLUSH_ERR.
    Flush { qpn: u32 },
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decision::MmioWrite { off, val } => write!(f, "MMIO write {val:#x} to {off:#x}"),
            Decision::MmioRead { off } => write!(f, "MMIO read of {off:#x}"),
            Decision::Command => write!(f, "command run"),
            Decision::FetchSq { qpn, primed: false } => write!(f, "SQ fetch for QP {qpn:#x}"),
            Decision::FetchSq { qpn, primed: true } => write!(f, "SQ fetch for QP {qpn:#x}, its descriptor kept"),
            Decision::Tx(TxPick::Control) => write!(f, "transmit from the control queue"),
            Decision::Tx(TxPick::Qp { qpn, stream }) => write!(f, "transmit from QP {qpn:#x}'s {stream:?}"),
            Decision::Rx(frame) => write!(f, "receive of a {}-byte frame", frame.len()),
            Decision::Timer { qpn, timer } => write!(f, "{timer:?} timer of QP {qpn:#x}"),
            Decision::Flush { qpn } => write!(f, "flush step of QP {qpn:#x}"),
        }
    }
}

/// What a decision gives back to its caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    None,
    /// A frame for the port.
    Frame(Vec<u8>),
    /// A register's value.
    Value(u32),
}

/// Which half of a QP wrote data into host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// As the target: a WRITE's or SEND's data, an atomic's result, a raw frame received.
    Responder,
    /// As the initiator: a READ's responses, an atomic's original value.
    Completer,
}

/// What the NIC produced, compared stream by stream when one implementation follows another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A frame sent from a stream.
    Frame { pick: TxPick, frame: Vec<u8> },
    /// Payload bytes written to host memory by a QP's responder or completer.
    Data { qpn: u32, side: Side, iova: u64, bytes: Vec<u8> },
    /// A CQE written to CQ `cqn` (of 2^`log_size` entries) as its `slot`-th entry (a free-running count),
    /// owner bit and all.
    Cqe { cqn: u32, slot: u32, log_size: u8, cqe: CqeRepr },
    /// An EQE written as the EQ's `slot`-th entry, with its owner bit.
    Eqe { slot: u32, owner: u8, kind: EventKind, obj: u32 },
    /// The interrupt raised.
    Interrupt,
    /// A command's result as written to its mailbox.
    Command { opcode: u16, status: Status, syndrome: u32, out: Vec<u8> },
    /// A register read's value.
    Register { off: u32, val: u32 },
}

/// A decision the NIC could not have taken, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Illegal {
    pub decision: String,
    pub reason: String,
}

impl std::fmt::Display for Illegal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.decision, self.reason)
    }
}

impl Nic {
    /// Applies `d` at time `now` (never earlier than the decision before), after checking it was legal.
    pub fn apply(&mut self, now: Time, d: &Decision, mem: &mut dyn Dma) -> Result<Effect, Illegal> {
        let illegal = |reason: String| Illegal { decision: d.to_string(), reason };
        self.now = self.now.max(now);
        let now = self.now;
        let tick = tick_of(now);
        let effect = match d {
            Decision::MmioWrite { off, val } => {
                self.mmio_write(*off, *val);
                Effect::None
            }
            Decision::MmioRead { off } => Effect::Value(self.mmio_read(*off)),
            Decision::Command => {
                if !self.cmd.busy {
                    return Err(illegal("no command is pending".into()));
                }
                self.exec_command(mem);
                Effect::None
            }
            Decision::FetchSq { qpn, primed } => {
                self.fetchable(*qpn).map_err(|r| illegal(r.into()))?;
                self.fetch_send_wqe(*qpn, *primed, mem).map_err(|r| illegal(r.into()))?;
                self.retire(*qpn, mem);
                Effect::None
            }
            Decision::Tx(pick) => {
                self.tx_ready(*pick, tick).map_err(|r| illegal(r.into()))?;
                let frame = match *pick {
                    TxPick::Control => self.ctrl_queue.pop_front(),
                    TxPick::Qp { qpn, stream: Stream::Requester } => {
                        let f = req::next_frame(self, qpn, now, mem);
                        if f.is_none() {
                            // The WQE failed as its packet was built: it completes now if it is the oldest.
                            self.retire(qpn, mem);
                        }
                        f
                    }
                    TxPick::Qp { qpn, stream: Stream::Responder } => resp::next_frame(self, qpn, now, mem),
                    TxPick::Qp { qpn, stream: Stream::Raw } => raw::next_frame(self, qpn, mem),
                };
                match frame {
                    Some(f) => {
                        self.count(Counter::tx_frames);
                        self.count_n(Counter::tx_bytes, f.len() as u64);
                        self.emit(|| Output::Frame { pick: *pick, frame: f.clone() });
                        Effect::Frame(f)
                    }
                    None => Effect::None,
                }
            }
            Decision::Rx(frame) => {
                super::recv::receive(self, now, frame, mem);
                Effect::None
            }
            Decision::Timer { qpn, timer } => {
                let deadline = self.timer_deadline(*qpn, *timer).ok_or_else(|| illegal("it is not armed".into()))?;
                if !due(deadline, tick) {
                    return Err(illegal(format!("it is due at tick {deadline}, fired at tick {tick} (early)")));
                }
                self.fire(*qpn, *timer, tick, mem);
                Effect::None
            }
            Decision::Flush { qpn } => {
                if !self.flush_pending(*qpn) {
                    return Err(illegal("the QP has nothing to flush".into()));
                }
                self.flush_one(*qpn, mem);
                Effect::None
            }
        };
        if self.checks {
            self.check_after(d);
        }
        Ok(effect)
    }

    /// Runs a due timer.
    fn fire(&mut self, qpn: u32, timer: TimerKind, tick: Tick, mem: &mut dyn Dma) {
        let (params, line) = (self.dcqcn, self.line);
        match timer {
            TimerKind::Ack => super::comp::on_timeout(self, qpn, tick, mem),
            TimerKind::Rnr => super::comp::on_rnr_timer(self, qpn, tick),
            TimerKind::Alpha => {
                if let Some(qp) = self.qp_mut(qpn) {
                    qp.rp.on_alpha_timer(&params);
                }
            }
            TimerKind::Rate => {
                if let Some(qp) = self.qp_mut(qpn) {
                    qp.rp.on_rate_timer(tick, line, &params);
                }
            }
        }
    }

    /// After a decision: the invariants and the packed context of the QP it touched (for a command, the QP
    /// it created or modified). The first failure is kept.
    fn check_after(&mut self, d: &Decision) {
        if self.check_failure.is_some() {
            return;
        }
        let qpns: Vec<u32> = match d {
            Decision::FetchSq { qpn, .. } | Decision::Timer { qpn, .. } | Decision::Flush { qpn } => vec![*qpn],
            Decision::Tx(TxPick::Qp { qpn, .. }) => vec![*qpn],
            Decision::Rx(f) => wire::parse_headers(f).map(|h| vec![h.hdr.bth.dest_qp]).unwrap_or_default(),
            Decision::Command => self.cmd.qpn.into_iter().collect(),
            _ => Vec::new(),
        };
        for qpn in qpns {
            let Some(q) = self.qp(qpn) else { continue };
            let r = self.check_qp(q).and_then(|()| super::context::round_trip(q, &self.layout, tick_of(self.now)));
            if let Err(e) = r {
                self.check_failure = Some(format!("after {d} at t={} ps: {e}", self.now));
                return;
            }
        }
    }

    /// A command is waiting for the command unit.
    pub fn command_pending(&self) -> bool {
        self.cmd.busy
    }

    /// The requester keeps no descriptor (`KeptDesc`): a fetch may give it one (`FetchSq` with `primed`).
    pub fn keeps_no_descriptor(&self) -> bool {
        self.kept.is_none()
    }

    /// Whether the fetch unit may bring QP `qpn`'s next send WQE into its window, or why not.
    pub fn fetchable(&self, qpn: u32) -> Result<(), &'static str> {
        let qp = self.qp(qpn).ok_or("no such QP")?;
        if self.can_fetch(qp) {
            Ok(())
        } else if qp.req.wqes.len() >= self.cfg.profile.wqe_window as usize {
            Err("its WQE window is full")
        } else {
            Err("it has no posted WQE to fetch in its state")
        }
    }

    /// Whether stream `pick` may send at tick `tick`, or why not.
    pub fn tx_ready(&self, pick: TxPick, tick: Tick) -> Result<(), &'static str> {
        let (qpn, stream) = match pick {
            TxPick::Control if self.ctrl_queue.is_empty() => return Err("the control queue is empty"),
            TxPick::Control => return Ok(()),
            TxPick::Qp { qpn, stream } => (qpn, stream),
        };
        let qp = self.qp(qpn).ok_or("no such QP")?;
        let rc = qp.qp_type == QpType::Rc;
        let (has, paced) = match stream {
            Stream::Raw if rc => return Err("it is not a raw packet QP"),
            Stream::Raw => return if raw::sendable(qp) { Ok(()) } else { Err("it has nothing to send") },
            _ if !rc => return Err("it is not an RC QP"),
            Stream::Requester => (req::sendable(qp), true),
            Stream::Responder => (resp::sendable(qp), resp::paced(qp)),
        };
        if !has {
            return Err("it has nothing to send");
        }
        if self.gid(qp.attrs.sgid_index).is_none() {
            return Err("its source GID is not set");
        }
        if paced && !qp.rp.may_send(tick) {
            return Err("its pacer holds it back");
        }
        Ok(())
    }

    /// The deadline of QP `qpn`'s `timer`, when armed.
    pub fn timer_deadline(&self, qpn: u32, timer: TimerKind) -> Option<Tick> {
        let qp = self.qp(qpn)?;
        match timer {
            TimerKind::Ack => qp.req.timer,
            TimerKind::Rnr => qp.req.rnr_wait.map(|(t, _)| t),
            TimerKind::Alpha => qp.rp.alpha_timer,
            TimerKind::Rate => qp.rp.rate_timer,
        }
    }

    /// Every armed timer: (QPN, timer, deadline), by QPN.
    pub fn timers(&self) -> impl Iterator<Item = (u32, TimerKind, Tick)> + '_ {
        self.active.iter().flat_map(move |&q| {
            TimerKind::ALL.into_iter().filter_map(move |k| self.timer_deadline(q, k).map(|d| (q, k, d)))
        })
    }

    /// A timer that was due more than `TIMER_TOLERANCE` ticks before tick `tick` and has not fired.
    pub fn overdue(&self, tick: Tick) -> Option<(u32, TimerKind, Tick)> {
        self.timers().find(|&(_, _, d)| d + TIMER_TOLERANCE < tick)
    }

    /// Every stream that may send at tick `tick`: the control queue first, then the QPs from `from_qpn` on,
    /// round, each QP's responder before its requester.
    pub fn ready_picks(&self, tick: Tick, from_qpn: u32) -> Vec<TxPick> {
        let mut out = Vec::new();
        if !self.ctrl_queue.is_empty() {
            out.push(TxPick::Control);
        }
        let start = self.active.partition_point(|&q| q < from_qpn);
        let n = self.active.len();
        for k in 0..n {
            let qpn = self.active[(start + k) % n];
            for stream in [Stream::Responder, Stream::Requester, Stream::Raw] {
                let pick = TxPick::Qp { qpn, stream };
                if self.tx_ready(pick, tick).is_ok() {
                    out.push(pick);
                }
            }
        }
        out
    }

    /// The earliest time after `now` at which a stream that has something to send is let go by its pacer.
    pub fn next_paced(&self, now: Time) -> Option<Time> {
        let tick = tick_of(now);
        self.active
            .iter()
            .filter_map(|&q| self.qp(q))
            .filter(|qp| {
                qp.qp_type == QpType::Rc
                    && self.gid(qp.attrs.sgid_index).is_some()
                    && (req::sendable(qp) || (resp::sendable(qp) && resp::paced(qp)))
                    && !qp.rp.may_send(tick)
            })
            .map(|qp| tick_start(qp.rp.send_tick(tick)))
            .min()
    }

    /// QPs whose send WQEs the fetch unit may bring in now.
    pub fn fetchable_qps(&self) -> impl Iterator<Item = u32> + '_ {
        self.active.iter().copied().filter(|&q| self.fetchable(q).is_ok())
    }

    /// QPs with WQEs left to flush.
    pub fn flushing_qps(&self) -> impl Iterator<Item = u32> + '_ {
        self.active.iter().copied().filter(|&q| self.flush_pending(q))
    }
}

#[cfg(test)]
mod tests;
