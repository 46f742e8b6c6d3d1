//! The NIC: registers, commands, doorbells, and the decisions that drive it. The engine is split as rxe
//! splits it: `recv` (checks and dispatch), `req` (WQE -> packets), `resp` (the responder's check chain),
//! `comp` (ACK matching and completions), plus `qp`, `mr`, `cq`, `eq`, `dcqcn`, `flush` and `timer`.
//!
//! The NIC sees only what hardware sees: MMIO, host memory through `Dma`, and Ethernet frames. It does
//! nothing on its own: every step is a `Decision` (a register access, a command run, a WQE fetched, a stream
//! picked to send, a frame accepted, a timer fired, a WQE flushed) applied with `apply`, which checks that
//! the decision was legal. Who decides is outside: the model's own scheduler (`crate::sched`), or an
//! implementation whose decisions the model follows (`crate::follow`). State is bounded by the hardware
//! profile in `NicConfig` and packs into the QP context layout (`context`).

#[cfg(test)]
mod bench;
mod cmd;
pub mod comp;
pub mod context;
pub mod cq;
pub mod dcqcn;
mod decision;
pub mod eq;
pub mod flush;
pub mod headers;
pub mod mr;
pub mod qp;
pub mod raw;
pub mod recv;
pub mod req;
pub mod resp;
pub mod timer;

pub use decision::{Decision, Effect, Illegal, Output, Side, Stream, TxPick};

use crate::Time;
use std::collections::VecDeque;
use wire::contract::profile::Profile;
use wire::contract::regs::{self, block, block_type, Counter, Dcqcn};
use wire::{Opcode, Psn, RoceHeaders};

use cq::Cq;
use mr::MrTable;
use qp::Qp;

/// A NIC instance: its hardware profile and port, and whether the simulation checks it as it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NicConfig {
    pub profile: Profile,
    pub port_mbps: u32,
    pub build_id: u32,
    /// Check the invariants and the packed QP context after every decision (`Nic::set_checks`; always in
    /// debug builds). A property of the simulation, not of the device.
    pub checks: bool,
}

impl NicConfig {
    /// A 100 Gb/s port with the limits of `profile`.
    pub fn new(profile: Profile) -> Self {
        NicConfig { profile, port_mbps: 100_000, build_id: 0, checks: false }
    }
}

impl Default for NicConfig {
    /// The board profile.
    fn default() -> Self {
        NicConfig::new(Profile::board())
    }
}

/// Preamble, SFD, FCS and inter-frame gap added to each frame on the wire.
pub const WIRE_OVERHEAD: usize = 24;
/// GID table entries.
pub const GID_TABLE_LEN: usize = 16;

/// The command unit: the command the doorbell started, until it has run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct CmdUnit {
    busy: bool,
    token: u8,
    status: u8,
    /// The QP the last command created or modified, for the checks after it.
    qpn: Option<u32>,
}

/// The golden-model NIC.
pub struct Nic {
    pub cfg: NicConfig,
    counters: Vec<u64>,
    /// The high word latched by the last read of a 64-bit register's low word.
    hi_latch: u32,
    pub(crate) dcqcn: dcqcn::Params,
    /// The port's line rate (Mb/s, 8 fractional bits).
    pub(crate) line: u32,
    mailbox: u64,
    cmd: CmdUnit,
    pub(crate) mac: [u8; 6],
    gids: [Option<[u8; 16]>; GID_TABLE_LEN],
    pds: Vec<bool>,
    mrs: MrTable,
    cqs: Vec<Option<Cq>>,
    pub(crate) eq: Option<eq::Eq>,
    /// The interrupt line: set when an armed EQ gets an EQE, cleared by `take_irq`.
    irq: bool,
    qps: Vec<Option<Box<Qp>>>,
    /// The requester's descriptor cache.
    pub(crate) kept: Option<qp::KeptDesc>,
    /// Frames that go out ahead of all QP traffic: CNPs, and the NIC's own ARP and ICMP echo replies.
    ctrl_queue: VecDeque<Vec<u8>>,
    /// QPNs in use, ascending.
    active: Vec<u32>,
    now: Time,
    /// What the decisions produced, while recording (`record_outputs`).
    outputs: Option<Vec<Output>>,
    /// The QP context layouts of the profile, for the packed-context checks.
    layout: wire::contract::qpc::QpContext,
    /// Check invariants and the packed context after every decision (`set_checks`).
    checks: bool,
    /// The first check that failed.
    check_failure: Option<String>,
}

impl Nic {
    pub fn new(cfg: NicConfig) -> Self {
        let p = cfg.profile;
        Nic {
            counters: vec![0; Counter::ALL.len()],
            hi_latch: 0,
            dcqcn: dcqcn::Params::default(),
            line: dcqcn::rate_q8(cfg.port_mbps.max(1)),
            mailbox: 0,
            cmd: CmdUnit::default(),
            mac: [0; 6],
            gids: [None; GID_TABLE_LEN],
            pds: vec![false; p.max_pd as usize],
            mrs: MrTable::new(p.max_mr as usize),
            cqs: vec![None; p.max_cq as usize],
            eq: None,
            irq: false,
            qps: (0..p.max_qp).map(|_| None).collect(),
            kept: None,
            ctrl_queue: VecDeque::new(),
            active: Vec::new(),
            now: 0,
            outputs: None,
            layout: wire::contract::qpc::qp_context(&p),
            checks: cfg.checks || cfg!(debug_assertions),
            check_failure: None,
            cfg,
        }
    }

    pub fn counter(&self, c: Counter) -> u64 {
        self.counters[c as usize]
    }
    /// Every counter, in register order.
    pub fn counters(&self) -> &[u64] {
        &self.counters
    }
    pub(crate) fn count(&mut self, c: Counter) {
        self.counters[c as usize] += 1;
    }
    pub(crate) fn count_n(&mut self, c: Counter, n: u64) {
        self.counters[c as usize] += n;
    }

    /// A 32-bit register read. Reading the low word of a 64-bit register latches its high word.
    pub fn mmio_read(&mut self, off: u32) -> u32 {
        let v = self.read_register(off);
        self.emit(|| Output::Register { off, val: v });
        v
    }

    fn read_register(&mut self, off: u32) -> u32 {
        use regs::{cmd, counters, dcqcn, doorbell, id};
        let c = &self.cfg;
        let p = &c.profile;
        let in_block = |base: u32| off.checked_sub(base).filter(|o| *o < 0x100);
        if let Some(o) = in_block(id::BASE) {
            let now_ns = self.now / crate::PS_PER_NS;
            return match o {
                id::TIME_NS_LO => {
                    self.hi_latch = (now_ns >> 32) as u32;
                    now_ns as u32
                }
                id::TIME_NS_HI => self.hi_latch,
                _ => regs::id_registers(p, c.port_mbps, c.build_id).iter().find(|r| r.0 == off).map_or(0, |r| r.1),
            };
        }
        if let Some(o) = in_block(cmd::BASE) {
            return match o {
                block::TYPE => block_type::CMD,
                block::VERSION => regs::VERSION,
                block::NEXT => counters::BASE,
                cmd::MAILBOX_LO => self.mailbox as u32,
                cmd::MAILBOX_HI => (self.mailbox >> 32) as u32,
                cmd::STATUS => {
                    let busy = if self.cmd.busy { cmd::STATUS_BUSY } else { 0 };
                    busy | (u32::from(self.cmd.token) << 8) | u32::from(self.cmd.status)
                }
                _ => 0,
            };
        }
        if let Some(o) = off.checked_sub(counters::BASE).filter(|o| *o < dcqcn::BASE - counters::BASE) {
            return match o {
                block::TYPE => block_type::COUNTERS,
                block::VERSION => regs::VERSION,
                block::NEXT => dcqcn::BASE,
                counters::COUNT => Counter::ALL.len() as u32,
                o if o >= counters::FIRST => {
                    let i = ((o - counters::FIRST) / 8) as usize;
                    let v = self.counters.get(i).copied().unwrap_or(0);
                    if (o - counters::FIRST).is_multiple_of(8) {
                        self.hi_latch = (v >> 32) as u32;
                        v as u32
                    } else {
                        self.hi_latch
                    }
                }
                _ => 0,
            };
        }
        if let Some(o) = in_block(dcqcn::BASE) {
            return match o {
                block::TYPE => block_type::DCQCN,
                block::VERSION => regs::VERSION,
                block::NEXT => doorbell::BASE,
                dcqcn::COUNT => Dcqcn::ALL.len() as u32,
                o if o >= dcqcn::FIRST => self.dcqcn.regs.get(((o - dcqcn::FIRST) / 4) as usize).copied().unwrap_or(0),
                _ => 0,
            };
        }
        if let Some(o) = in_block(doorbell::BASE) {
            return match o {
                block::TYPE => block_type::DOORBELL,
                block::VERSION => regs::VERSION,
                block::NEXT => 0,
                doorbell::QP_AREA => doorbell::QP_DB_BASE,
                doorbell::CQ_AREA => doorbell::CQ_DB_BASE,
                doorbell::STRIDE => doorbell::DB_STRIDE,
                doorbell::EQ_AREA => doorbell::EQ_DB,
                _ => 0,
            };
        }
        0
    }

    /// A 32-bit register write: a doorbell only moves a producer counter, a command doorbell starts the
    /// command unit; what follows are decisions of their own (`FetchSq`, `Command`).
    pub fn mmio_write(&mut self, off: u32, val: u32) {
        use regs::{cmd, doorbell};
        match off {
            o if o == cmd::BASE + cmd::MAILBOX_LO => self.mailbox = (self.mailbox & !0xFFFF_FFFF) | u64::from(val),
            o if o == cmd::BASE + cmd::MAILBOX_HI => {
                self.mailbox = (self.mailbox & 0xFFFF_FFFF) | (u64::from(val) << 32)
            }
            o if o == cmd::BASE + cmd::DOORBELL => {
                if self.cmd.busy {
                    self.count(Counter::cmd_doorbells_ignored);
                } else {
                    self.cmd = CmdUnit { busy: true, token: val as u8, status: 0, qpn: None };
                }
            }
            o if (Dcqcn::ALL[0].offset()..Dcqcn::ALL[0].offset() + 4 * Dcqcn::ALL.len() as u32).contains(&o) => {
                self.dcqcn.regs[((o - Dcqcn::ALL[0].offset()) / 4) as usize] = val;
            }
            o if (doorbell::QP_DB_BASE..doorbell::QP_DB_BASE + self.cfg.profile.max_qp * doorbell::DB_STRIDE)
                .contains(&o) =>
            {
                let qpn = (o - doorbell::QP_DB_BASE) / doorbell::DB_STRIDE;
                let Some(qp) = self.qp_mut(qpn) else { return };
                if qp.state == wire::contract::verbs::QpState::Reset {
                    return; // Posting to a RESET QP is refused by the driver; the device ignores it.
                }
                match (o - doorbell::QP_DB_BASE) % doorbell::DB_STRIDE {
                    doorbell::QP_SQ_PI => qp.sq.pi = val as u16,
                    doorbell::QP_RQ_PI => qp.rq.pi = val as u16,
                    _ => {}
                }
            }
            o if (doorbell::CQ_DB_BASE..doorbell::CQ_DB_BASE + self.cfg.profile.max_cq * doorbell::DB_STRIDE)
                .contains(&o) =>
            {
                let cqn = ((o - doorbell::CQ_DB_BASE) / doorbell::DB_STRIDE) as usize;
                if let Some(Some(cq)) = self.cqs.get_mut(cqn) {
                    match (o - doorbell::CQ_DB_BASE) % doorbell::DB_STRIDE {
                        doorbell::CQ_CI => cq.ci = val,
                        doorbell::CQ_ARM => cq.armed = cq::Arm::from_doorbell(val),
                        _ => {}
                    }
                }
            }
            o if (doorbell::EQ_DB..doorbell::EQ_DB + doorbell::DB_STRIDE).contains(&o) => {
                if let Some(eq) = self.eq.as_mut() {
                    match o - doorbell::EQ_DB {
                        doorbell::EQ_CI => eq.ci = val,
                        doorbell::EQ_ARM => eq.armed = val & 1 != 0,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    pub(crate) fn qp(&self, qpn: u32) -> Option<&Qp> {
        self.qps.get(qpn as usize)?.as_deref()
    }
    pub(crate) fn qp_mut(&mut self, qpn: u32) -> Option<&mut Qp> {
        self.qps.get_mut(qpn as usize)?.as_deref_mut()
    }

    /// QP `qpn`'s state, for tests and the follower's reports.
    pub fn qp_state(&self, qpn: u32) -> Option<&Qp> {
        self.qp(qpn)
    }

    /// CQ `cqn`'s state, if it exists (for checks against an implementation's tables).
    pub fn cq_state(&self, cqn: u32) -> Option<&Cq> {
        self.cqs.get(cqn as usize)?.as_ref()
    }

    /// The event queue's state, once created.
    pub fn eq_state(&self) -> Option<&eq::Eq> {
        self.eq.as_ref()
    }

    /// The port's GID at `index`.
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.gids.get(usize::from(index)).copied().flatten()
    }

    /// Headers for a packet of `qp` to its peer (`headers::headers`); `None` when its source GID is not (or
    /// no longer) set.
    pub(crate) fn headers(&self, qpn: u32, opcode: Opcode, psn: Psn, ack_req: bool) -> Option<RoceHeaders> {
        let a = &self.qp(qpn)?.attrs;
        headers::headers(self.mac, self.gid(a.sgid_index), a, opcode, psn, ack_req)
    }

    /// Picoseconds the port takes to serialise a frame of `frame_len` bytes.
    pub fn serialize_time(&self, frame_len: usize) -> Time {
        let bits = ((frame_len.max(60) + WIRE_OVERHEAD) * 8) as u64;
        bits * 1_000_000 / u64::from(self.cfg.port_mbps.max(1))
    }

    pub(crate) fn build_cnp(&self, qpn: u32) -> Option<Vec<u8>> {
        let dscp = self.dcqcn.get(Dcqcn::CNP_DSCP) as u8;
        let mut h = self.headers(qpn, Opcode::CNP, Psn::new(0), false)?;
        h.bth.becn = true;
        h.ip.set_tclass(dscp << 2);
        Some(h.emit(&[]))
    }

    /// Queues a frame of the NIC's own (at most `CTRL_FRAME_LEN` bytes, as its slot holds) for the port;
    /// dropped, counted, when the control queue is full. Whether it was queued.
    pub(crate) fn queue_control(&mut self, frame: Vec<u8>) -> bool {
        let full = self.ctrl_queue.len() >= self.cfg.profile.ctrl_queue as usize;
        if full || frame.len() as u64 > wire::contract::qpc::CTRL_FRAME_LEN {
            self.count(Counter::ctrl_drop_full);
            return false;
        }
        self.ctrl_queue.push_back(frame);
        true
    }

    /// Places payload bytes in host memory for QP `qpn`'s responder or completer: every data write the NIC
    /// makes comes through here.
    pub(crate) fn place(
        &mut self,
        (qpn, side): (u32, Side),
        iova: u64,
        data: &[u8],
        mem: &mut dyn crate::hostmem::Dma,
    ) {
        mem.dma_write(iova, data);
        self.emit(|| Output::Data { qpn, side, iova, bytes: data.to_vec() });
    }

    /// Records an output while recording.
    pub(crate) fn emit(&mut self, f: impl FnOnce() -> Output) {
        if let Some(o) = self.outputs.as_mut() {
            o.push(f());
        }
    }

    /// Starts (or stops) keeping what every decision produces, for `take_outputs`.
    pub fn record_outputs(&mut self, on: bool) {
        self.outputs = on.then(Vec::new);
    }

    /// What the decisions produced since the last call, in order.
    pub fn take_outputs(&mut self) -> Vec<Output> {
        self.outputs.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Current DCQCN rate of a QP in Mb/s.
    pub fn qp_rate_mbps(&self, qpn: u32) -> Option<f64> {
        Some(self.qp(qpn)?.rp.rate_mbps())
    }

    /// Checks every QP's requester/completer invariants (`ReqState`) and the profile's bounds; the first one
    /// broken, if any.
    pub fn check_invariants(&self) -> Result<(), String> {
        if let Some(e) = &self.check_failure {
            return Err(e.clone());
        }
        if self.ctrl_queue.len() > self.cfg.profile.ctrl_queue as usize {
            return Err("control queue past its depth".into());
        }
        self.active.iter().filter_map(|&q| self.qp(q)).try_for_each(|q| self.check_qp(q))
    }

    fn check_qp(&self, q: &Qp) -> Result<(), String> {
        let p = &self.cfg.profile;
        let bound = |what: &str, n: usize, max: u32| {
            if n > max as usize {
                Err(format!("QP {:#x}: {what} holds {n}, past the profile's {max}", q.qpn))
            } else {
                Ok(())
            }
        };
        bound("the WQE window", q.req.wqes.len(), p.wqe_window)?;
        bound("the response queue", q.resp.out.len(), p.resp_queue)?;
        bound("the responder's resources", q.resp.resources.len(), p.max_qp_rd_atom)?;
        q.check_req_invariants()
    }

    /// Turns the checks run after every decision on or off (on in debug builds): the invariants of the QP
    /// the decision touched, and its packed context unpacking to the same state. The first failure is kept
    /// and reported by `check_invariants`.
    pub fn set_checks(&mut self, on: bool) {
        self.checks = on;
    }

    /// The first check that failed after a decision, if any (`set_checks`).
    pub fn check_failure(&self) -> Option<&str> {
        self.check_failure.as_deref()
    }

    /// QPNs in use, ascending.
    pub fn qpns(&self) -> &[u32] {
        &self.active
    }

    pub(crate) fn set_active(&mut self, qpn: u32, on: bool) {
        match self.active.binary_search(&qpn) {
            Ok(i) if !on => {
                self.active.remove(i);
            }
            Err(i) if on => self.active.insert(i, qpn),
            _ => {}
        }
    }

    /// True once per interrupt: the MSI-X message (a harness callback in simulation).
    pub fn take_irq(&mut self) -> bool {
        std::mem::take(&mut self.irq)
    }
}

#[cfg(test)]
mod tests;
