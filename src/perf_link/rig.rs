//! Everything one run holds on ferrite's side: the QPs, the CQs, the buffer laid out as perftest lays out
//! its own, and the waits, which watch the peer as well as the device.

use super::opts::Plan;
use driver::oob::perftest::{Keys, Role, Session};
use driver::{Buffer, Cq, Mr, Qp, RecvWr, Sge, Wc, WcStatus};
use std::cell::Cell;
use wire::contract::regs::Counter;

/// Why a run failed: what ferrite saw, in words.
pub type Failure = String;

/// Device time one wait for a completion event may take before the host stack is polled again.
const EVENT_WAIT_NS: u64 = 1_000_000;
/// How long a wait goes on after the peer closed the exchange: what was already on the wire (the ACK of
/// a last message the peer saw before it exited) still arrives.
const CLOSED_GRACE_NS: u64 = 1_000_000_000;

pub struct Rig<'a> {
    pub plan: &'a Plan,
    pub role: Role,
    pub timeout_ns: u64,
    pub ctx: &'a driver::Context,
    pub qps: Vec<Qp>,
    pub scq: Cq,
    pub rcq: Cq,
    pub buf: Buffer,
    pub mr: Mr,
    /// perftest's `BUFF_SIZE`: each QP's own half, and then the peer's, are this long.
    pub buff: u64,
    /// Where the slots for reads and atomics in flight start, and each QP's share of them.
    pub slots_off: u64,
    pub slot_len: u64,
    pub rem: Vec<Keys>,
    /// Completion events taken (`-e`), and whether each CQ is armed for its next one.
    pub events: Cell<u64>,
    armed: [Cell<bool>; 2],
    /// When the peer was first seen to have closed the exchange.
    closed_at: Cell<Option<u64>>,
}

impl<'a> Rig<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        plan: &'a Plan,
        role: Role,
        timeout_ns: u64,
        ctx: &'a driver::Context,
        qps: Vec<Qp>,
        cqs: (Cq, Cq),
        buf: Buffer,
        mr: Mr,
        layout: (u64, u64),
    ) -> Self {
        let (buff, slot_len) = layout;
        let n = qps.len() as u64;
        Rig {
            plan,
            role,
            timeout_ns,
            ctx,
            qps,
            scq: cqs.0,
            rcq: cqs.1,
            buf,
            mr,
            buff,
            slots_off: 2 * n * buff,
            slot_len,
            rem: Vec::new(),
            events: Cell::new(0),
            armed: [Cell::new(false), Cell::new(false)],
            closed_at: Cell::new(None),
        }
    }

    /// QP `q`'s own half: what it sends and writes (perftest's `buf[q]`).
    pub fn own(&self, q: usize) -> u64 {
        q as u64 * self.buff
    }

    /// Where the peer's RDMA to QP `q` lands, from the buffer's start (perftest's `(num_of_qps + q) *
    /// BUFF_SIZE`).
    pub fn target(&self, q: usize) -> u64 {
        (self.qps.len() + q) as u64 * self.buff
    }

    pub fn deadline(&self) -> u64 {
        self.ctx.backend().now_ns() + self.timeout_ns
    }

    /// Lets the device and the host stack run once; fails past `end`, or soon after the peer has closed
    /// the exchange (its tool exited).
    pub fn tick(&self, s: &mut Session, end: u64, what: &str) -> Result<(), Failure> {
        s.stack.poll();
        let now = self.ctx.backend().now_ns();
        if s.peer_closed() {
            let at = self.closed_at.get().unwrap_or(now);
            self.closed_at.set(Some(at));
            if now > at + CLOSED_GRACE_NS {
                return Err(self.peer_gone(what));
            }
        }
        if now > end {
            return Err(format!("timed out waiting for {what}"));
        }
        Ok(())
    }

    /// Waits until the peer's next message of `len` bytes is all here, for as long as frames keep arriving
    /// from the link: fails once the peer closed the exchange, or once nothing at all arrived for the step's
    /// timeout (the peer, or its link, is gone without a word).
    pub fn await_peer(&self, s: &mut Session, len: usize, what: &str) -> Result<(), Failure> {
        let b = self.ctx.backend();
        let (mut frames, mut heard) = (self.ctx.counter(Counter::rx_frames), b.now_ns());
        while !s.peer_waiting(len) {
            if s.peer_closed() {
                return Err(self.peer_gone(what));
            }
            s.stack.poll();
            let (now, n) = (b.now_ns(), self.ctx.counter(Counter::rx_frames));
            if n != frames {
                (frames, heard) = (n, now);
            } else if now.saturating_sub(heard) > s.timeout_ns {
                return Err(format!(
                    "nothing arrived from the peer for {} s while ferrite waited for {what}",
                    s.timeout_ns / 1_000_000_000
                ));
            }
        }
        Ok(())
    }

    /// One step of the exchange: on an error, says whether the peer had gone (and why, if ferrite's
    /// responder NAKed it) rather than only what the socket said.
    pub fn step<T>(
        &self,
        s: &mut Session,
        what: &str,
        f: impl FnOnce(&mut Session) -> Result<T, driver::Error>,
    ) -> Result<T, Failure> {
        f(s).map_err(|e| if s.peer_closed() { self.peer_gone(what) } else { format!("{what}: {e}") })
    }

    /// What to say when the peer's tool went away: with what ferrite's responder had NAKed, which is
    /// usually why.
    pub fn peer_gone(&self, what: &str) -> Failure {
        format!("the peer closed the exchange while ferrite waited for {what} (its tool exited){}", self.naks_sent())
    }

    /// The NAKs ferrite's responder sent, in words (empty if none).
    pub fn naks_sent(&self) -> String {
        let kinds = [
            (Counter::tx_naks_remote_access, "remote access error (a key, bound or access right)"),
            (Counter::tx_naks_invalid_req, "invalid request"),
            (Counter::tx_naks_remote_op, "remote operational error"),
            (Counter::tx_naks_psn_seq, "PSN sequence error"),
        ];
        let said: Vec<String> = kinds
            .iter()
            .filter_map(|&(c, name)| Some(self.ctx.counter(c)).filter(|&n| n > 0).map(|n| format!("{n} x {name}")))
            .collect();
        if said.is_empty() {
            String::new()
        } else {
            format!("; ferrite's responder had NAKed the peer's requests: {}", said.join(", "))
        }
    }

    /// Up to `max` completions from `cq`, waiting for at least one (on completion events with `-e`).
    pub fn wcs(&self, s: &mut Session, cq: &Cq, max: usize, what: &str) -> Result<Vec<Wc>, Failure> {
        let end = self.deadline();
        let armed = &self.armed[usize::from(cq.cqn == self.rcq.cqn)];
        loop {
            let w = cq.poll(max).map_err(|e| e.to_string())?;
            if !w.is_empty() {
                return Ok(w);
            }
            if self.plan.events {
                if !armed.get() {
                    // Armed, then polled once more: a completion between the poll and the arming is not lost.
                    cq.req_notify(false);
                    armed.set(true);
                    continue;
                }
                if let Some(cqn) = self.ctx.get_cq_event(EVENT_WAIT_NS).map_err(|e| e.to_string())? {
                    self.events.set(self.events.get() + 1);
                    self.armed[usize::from(cqn == self.rcq.cqn)].set(false);
                    continue;
                }
            }
            self.tick(s, end, what)?;
        }
    }

    /// One completion from `cq`, which must be a success.
    pub fn one(&self, s: &mut Session, cq: &Cq, what: &str) -> Result<Wc, Failure> {
        let wc = self.wcs(s, cq, 1, what)?.remove(0);
        if wc.status != WcStatus::Success {
            return Err(format!("{what} wr {:#x} completed with {:?}{}", wc.wr_id, wc.status, self.naks_sent()));
        }
        Ok(wc)
    }

    /// A receive on QP `q` into the peer's half, as long as the largest message.
    pub fn post_recv(&self, q: usize, id: u64) -> Result<(), Failure> {
        let sge = Sge { addr: self.buf.addr + self.target(q), length: self.plan.max_size, lkey: self.mr.lkey };
        self.qps[q].post_recv(&RecvWr { wr_id: id, sg_list: vec![sge] }).map_err(|e| format!("post_recv: {e}"))
    }

    pub fn read(&self, off: u64, len: usize) -> Result<Vec<u8>, Failure> {
        self.buf.read(off as usize, len).map_err(|e| e.to_string())
    }
}
