//! The NIC: registers, commands, doorbells and the transmit scheduler. The engine is split as rxe splits it:
//! `recv` (checks and dispatch), `req` (WQE -> packets), `resp` (the responder's check chain), `comp`
//! (ACK matching and completions), plus `qp`, `mr`, `cq` and `dcqcn`.
//!
//! The NIC sees only what hardware sees: MMIO, host memory through `Dma`, and Ethernet frames. Time is
//! given by the caller (`step`), so a run is exact and repeatable.

mod cmd;
mod comp;
pub mod cq;
pub mod dcqcn;
pub mod eq;
pub mod mr;
pub mod qp;
mod raw;
mod recv;
mod req;
mod resp;

use crate::hostmem::Dma;
use crate::Time;
use std::cell::Cell;
use std::collections::VecDeque;
use wire::contract::regs::{self, block, block_type, Counter, Dcqcn};
use wire::contract::verbs::QpType;
use wire::eth::EthernetRepr;
use wire::ipv4::Ipv4Repr;
use wire::ipv6::{gid_to_ipv4, Ipv6Repr};
use wire::{BthRepr, ExtHeaders, IpRepr, Opcode, Psn, RoceHeaders};

use cq::Cq;
use mr::MrTable;
use qp::Qp;

/// Size and speed of a NIC instance.
#[derive(Debug, Clone)]
pub struct NicConfig {
    pub max_qp: u32,
    pub max_cq: u32,
    pub max_mr: u32,
    pub max_pd: u32,
    pub max_sge: u32,
    pub max_inline: u32,
    pub max_rd_atomic: u32,
    pub port_mbps: u32,
    pub build_id: u32,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            max_qp: 1024,
            max_cq: 1024,
            max_mr: 4096,
            max_pd: 256,
            max_sge: 16,
            max_inline: 512,
            max_rd_atomic: 16,
            port_mbps: 100_000,
            build_id: 0,
        }
    }
}

/// Most PSNs a requester leaves unacknowledged (as rxe).
pub const MAX_UNACKED_PSNS: i32 = 128;
/// AckReq at least every this many packets.
pub const MAX_PKTS_PER_ACK: u32 = 64;
/// Preamble, SFD, FCS and inter-frame gap added to each frame on the wire.
pub const WIRE_OVERHEAD: usize = 24;
/// GID table entries.
pub const GID_TABLE_LEN: usize = 16;
/// Largest ring, log2 entries.
pub const MAX_LOG_RING: u8 = 15;

/// The golden-model NIC.
pub struct Nic {
    pub cfg: NicConfig,
    counters: Vec<u64>,
    pub(crate) dcqcn: dcqcn::Params,
    mailbox: u64,
    cmd_status: u32,
    pub(crate) mac: [u8; 6],
    gids: [Option<[u8; 16]>; GID_TABLE_LEN],
    pds: Vec<bool>,
    mrs: MrTable,
    cqs: Vec<Option<Cq>>,
    pub(crate) eq: Option<eq::Eq>,
    /// The interrupt line: set when an armed EQ gets an EQE, cleared by `take_irq`.
    irq: bool,
    qps: Vec<Option<Box<Qp>>>,
    /// The port is busy serialising until this time.
    tx_free_at: Time,
    /// Frames that go out ahead of all QP traffic: CNPs, and the NIC's own ARP and ICMP echo replies.
    pub(crate) ctrl_queue: VecDeque<Vec<u8>>,
    /// QPNs in use, ascending.
    active: Vec<u32>,
    rr: usize,
    ip_ident: u16,
    now: Time,
    /// `next_event`'s answer since the last mutation (every `&mut self` entry point clears it).
    next_event_memo: Cell<Option<Option<Time>>>,
}

impl Nic {
    pub fn new(cfg: NicConfig) -> Self {
        Nic {
            counters: vec![0; Counter::ALL.len()],
            dcqcn: dcqcn::Params::default(),
            mailbox: 0,
            cmd_status: 0,
            mac: [0; 6],
            gids: [None; GID_TABLE_LEN],
            pds: vec![false; cfg.max_pd as usize],
            mrs: MrTable::new(cfg.max_mr as usize),
            cqs: vec![None; cfg.max_cq as usize],
            eq: None,
            irq: false,
            qps: (0..cfg.max_qp).map(|_| None).collect(),
            tx_free_at: 0,
            ctrl_queue: VecDeque::new(),
            active: Vec::new(),
            rr: 0,
            ip_ident: 0,
            now: 0,
            next_event_memo: Cell::new(None),
            cfg,
        }
    }

    pub fn counter(&self, c: Counter) -> u64 {
        self.counters[c as usize]
    }
    pub(crate) fn count(&mut self, c: Counter) {
        self.counters[c as usize] += 1;
    }
    pub(crate) fn count_n(&mut self, c: Counter, n: u64) {
        self.counters[c as usize] += n;
    }

    /// A 32-bit register read.
    pub fn mmio_read(&self, off: u32) -> u32 {
        use regs::{cmd, counters, dcqcn, doorbell, id};
        let c = &self.cfg;
        let in_block = |base: u32| off.checked_sub(base).filter(|o| *o < 0x100);
        if let Some(o) = in_block(id::BASE) {
            return match o {
                block::TYPE => block_type::ID,
                block::VERSION => regs::VERSION,
                block::NEXT => cmd::BASE,
                id::BUILD_ID => c.build_id,
                id::FEATURES => {
                    regs::feature::IPV6
                        | regs::feature::VLAN
                        | regs::feature::ATOMICS
                        | regs::feature::DCQCN
                        | regs::feature::SEND_WITH_INV
                }
                id::MAX_QP => c.max_qp,
                id::MAX_CQ => c.max_cq,
                id::MAX_MR => c.max_mr,
                id::MAX_PD => c.max_pd,
                id::MAX_SGE => c.max_sge,
                id::MAX_INLINE => c.max_inline,
                id::MAX_RD_ATOMIC => c.max_rd_atomic,
                id::PORT_MBPS => c.port_mbps,
                id::MAX_MTU => u32::from(wire::contract::verbs::MAX_MTU_ENUM),
                id::MAX_LOG_RING => u32::from(MAX_LOG_RING),
                id::TIME_NS_LO => (self.now / 1000) as u32,
                id::TIME_NS_HI => ((self.now / 1000) >> 32) as u32,
                _ => 0,
            };
        }
        if let Some(o) = in_block(cmd::BASE) {
            return match o {
                block::TYPE => block_type::CMD,
                block::VERSION => regs::VERSION,
                block::NEXT => counters::BASE,
                cmd::MAILBOX_LO => self.mailbox as u32,
                cmd::MAILBOX_HI => (self.mailbox >> 32) as u32,
                cmd::STATUS => self.cmd_status,
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
                        v as u32
                    } else {
                        (v >> 32) as u32
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

    /// A 32-bit register write. Doorbells and commands act at once.
    pub fn mmio_write(&mut self, off: u32, val: u32, mem: &mut dyn Dma) {
        self.next_event_memo.set(None);
        use regs::{cmd, doorbell};
        match off {
            o if o == cmd::BASE + cmd::MAILBOX_LO => self.mailbox = (self.mailbox & !0xFFFF_FFFF) | u64::from(val),
            o if o == cmd::BASE + cmd::MAILBOX_HI => {
                self.mailbox = (self.mailbox & 0xFFFF_FFFF) | (u64::from(val) << 32)
            }
            o if o == cmd::BASE + cmd::DOORBELL => {
                let status = self.exec_command(mem);
                self.cmd_status = ((val & 0xFF) << 8) | status as u32;
            }
            o if (Dcqcn::ALL[0].offset()..Dcqcn::ALL[0].offset() + 4 * Dcqcn::ALL.len() as u32).contains(&o) => {
                self.dcqcn.regs[((o - Dcqcn::ALL[0].offset()) / 4) as usize] = val;
            }
            o if (doorbell::QP_DB_BASE..doorbell::QP_DB_BASE + self.cfg.max_qp * doorbell::DB_STRIDE).contains(&o) => {
                let qpn = (o - doorbell::QP_DB_BASE) / doorbell::DB_STRIDE;
                let reg = (o - doorbell::QP_DB_BASE) % doorbell::DB_STRIDE;
                self.qp_doorbell(qpn, reg, val as u16, mem);
            }
            o if (doorbell::CQ_DB_BASE..doorbell::CQ_DB_BASE + self.cfg.max_cq * doorbell::DB_STRIDE).contains(&o) => {
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

    fn qp_doorbell(&mut self, qpn: u32, reg: u32, pi: u16, mem: &mut dyn Dma) {
        let Some(Some(qp)) = self.qps.get_mut(qpn as usize) else { return };
        if qp.state == wire::contract::verbs::QpState::Reset {
            return; // Posting to a RESET QP is refused by the driver; the device ignores it.
        }
        match reg {
            regs::doorbell::QP_SQ_PI => {
                qp.sq.pi = pi;
                self.fetch_send_wqes(qpn, mem);
                self.retire(qpn, mem);
            }
            regs::doorbell::QP_RQ_PI => qp.rq.pi = pi,
            _ => {}
        }
        if self.qp(qpn).is_some_and(|q| q.state == wire::contract::verbs::QpState::Err || q.flushing) {
            self.flush(qpn, mem);
        }
    }

    pub(crate) fn qp(&self, qpn: u32) -> Option<&Qp> {
        self.qps.get(qpn as usize)?.as_deref()
    }
    pub(crate) fn qp_mut(&mut self, qpn: u32) -> Option<&mut Qp> {
        self.qps.get_mut(qpn as usize)?.as_deref_mut()
    }

    /// The port's GID at `index`.
    fn gid(&self, index: u8) -> Option<[u8; 16]> {
        self.gids.get(usize::from(index)).copied().flatten()
    }

    /// Headers for a packet of `qp` to its peer.
    pub(crate) fn headers(&mut self, qpn: u32, opcode: Opcode, psn: Psn, ack_req: bool) -> Option<RoceHeaders> {
        let ident = self.ip_ident;
        self.ip_ident = self.ip_ident.wrapping_add(1);
        let qp = self.qp(qpn)?;
        let a = &qp.attrs;
        let sgid = self.gid(a.sgid_index)?;
        let ttl = if a.hop_limit == 0 { 64 } else { a.hop_limit };
        let ip = match (gid_to_ipv4(&sgid), gid_to_ipv4(&a.dgid)) {
            (Some(src), Some(dst)) => {
                IpRepr::V4(Ipv4Repr { src, dst, tos: a.traffic_class, ttl, ident, payload_len: 0 })
            }
            _ => IpRepr::V6(Ipv6Repr {
                src: sgid,
                dst: a.dgid,
                traffic_class: a.traffic_class,
                flow_label: a.flow_label,
                hop_limit: ttl,
                payload_len: 0,
            }),
        };
        let fl = if a.flow_label != 0 { a.flow_label } else { wire::roce::flow_label_from_qpns(qpn, a.dest_qpn) };
        Some(RoceHeaders {
            eth: EthernetRepr { dst: a.dmac, src: self.mac, vlan: a.vlan, ethertype: 0 },
            ip,
            udp_src_port: wire::roce::udp_sport_from_flow_label(fl),
            bth: BthRepr { opcode, dest_qp: a.dest_qpn, psn, ack_req, ..Default::default() },
            ext: ExtHeaders::default(),
        })
    }

    fn serialize_time(&self, frame_len: usize) -> Time {
        let bits = ((frame_len.max(60) + WIRE_OVERHEAD) * 8) as u64;
        bits * 1_000_000 / u64::from(self.cfg.port_mbps.max(1))
    }

    /// Runs the NIC at time `now`: timers, then at most one frame onto the wire if the port is free.
    pub fn step(&mut self, now: Time, mem: &mut dyn Dma) -> Option<Vec<u8>> {
        self.next_event_memo.set(None);
        self.now = now;
        self.service_timers(now, mem);
        if now < self.tx_free_at {
            return None;
        }
        let frame = self.pick_frame(now, mem);
        self.debug_check();
        let frame = frame?;
        self.tx_free_at = now + self.serialize_time(frame.len());
        self.count(Counter::tx_frames);
        self.count_n(Counter::tx_bytes, frame.len() as u64);
        Some(frame)
    }

    fn pick_frame(&mut self, now: Time, mem: &mut dyn Dma) -> Option<Vec<u8>> {
        if let Some(f) = self.ctrl_queue.pop_front() {
            return Some(f);
        }
        let n = self.active.len();
        for k in 0..n {
            let qpn = self.active[(self.rr + k) % n];
            let Some(qp) = self.qp(qpn) else { continue };
            if qp.qp_type == QpType::RawPacket {
                if raw::ready_at(qp).is_some_and(|t| t <= now) {
                    if let Some(f) = raw::next_frame(self, qpn, mem) {
                        self.rr = (self.rr + k + 1) % n;
                        return Some(f);
                    }
                }
                continue;
            }
            let resp_ready = resp::ready_at(qp).is_some_and(|t| t <= now);
            let req_ready = req::ready_at(qp).is_some_and(|t| t <= now);
            let f = if resp_ready {
                resp::next_frame(self, qpn, now, mem)
            } else if req_ready {
                req::next_frame(self, qpn, now, mem)
            } else {
                None
            };
            if f.is_some() {
                self.rr = (self.rr + k + 1) % n;
                return f;
            }
        }
        None
    }

    /// The earliest time `step` has something to do, if any.
    pub fn next_event(&self) -> Option<Time> {
        if let Some(t) = self.next_event_memo.get() {
            return t;
        }
        let t = self.compute_next_event();
        self.next_event_memo.set(Some(t));
        t
    }

    fn compute_next_event(&self) -> Option<Time> {
        let mut t: Option<Time> = None;
        let mut consider = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t: Time| t.min(x)));
            }
        };
        if !self.ctrl_queue.is_empty() {
            consider(Some(self.tx_free_at));
        }
        for qp in self.active.iter().filter_map(|&q| self.qp(q)) {
            if qp.qp_type == QpType::RawPacket {
                consider(raw::ready_at(qp).map(|x| x.max(self.tx_free_at)));
                continue;
            }
            consider(resp::ready_at(qp).map(|x| x.max(self.tx_free_at)));
            consider(req::ready_at(qp).map(|x| x.max(self.tx_free_at)));
            consider(qp.req.timer);
            consider(qp.req.rnr_wait.map(|(t, _)| t));
        }
        t
    }

    fn service_timers(&mut self, now: Time, mem: &mut dyn Dma) {
        for i in 0..self.active.len() {
            let qpn = self.active[i];
            let Some(qp) = self.qp(qpn) else { continue };
            let timer_due = qp.req.timer.is_some_and(|t| t <= now);
            let rnr_due = qp.req.rnr_wait.is_some_and(|(t, _)| t <= now);
            if timer_due {
                comp::on_timeout(self, qpn, now, mem);
            }
            if rnr_due {
                comp::on_rnr_timer(self, qpn, now);
            }
            if self.qp(qpn).is_some_and(|q| q.req.wqes.front().is_some_and(|w| w.acked)) {
                self.retire(qpn, mem);
            }
        }
    }

    /// Delivers one frame from the wire.
    pub fn receive(&mut self, now: Time, frame: &[u8], mem: &mut dyn Dma) {
        self.next_event_memo.set(None);
        self.now = now;
        recv::receive(self, now, frame, mem);
        self.debug_check();
    }

    pub(crate) fn build_cnp(&mut self, qpn: u32) -> Option<Vec<u8>> {
        let dscp = self.dcqcn.get(Dcqcn::CNP_DSCP) as u8;
        let mut h = self.headers(qpn, Opcode::CNP, Psn::new(0), false)?;
        h.bth.becn = true;
        h.ip.set_tclass(dscp << 2);
        self.count(Counter::cnps_sent);
        Some(h.emit(&[]))
    }

    /// Current DCQCN rate of a QP in Mb/s (after applying timers up to `now`).
    pub fn qp_rate_mbps(&mut self, qpn: u32, now: Time) -> Option<f64> {
        self.next_event_memo.set(None);
        let params = self.dcqcn;
        let qp = self.qp_mut(qpn)?;
        qp.rp.catch_up(now, &params);
        Some(qp.rp.rc)
    }

    /// Checks every QP's requester/completer invariants (`ReqState`); the first one broken, if any.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.active.iter().filter_map(|&q| self.qp(q)).try_for_each(Qp::check_req_invariants)
    }

    /// Debug builds stop at the first event that breaks an invariant.
    fn debug_check(&self) {
        #[cfg(debug_assertions)]
        if let Err(e) = self.check_invariants() {
            panic!("model invariant broken at t={} ps: {e}", self.now);
        }
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
        self.rr = 0;
    }
}
