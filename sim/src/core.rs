//! The NIC core in Verilator with its host side in Rust: 32-bit MMIO, host memory behind the DMA ports
//! with a round-trip latency (reads complete one beat of the core's width a cycle after it, those of
//! different tags in any order when the host stalls at random; writes are posted and land at once), and a
//! MAC that hands it received frames a beat a cycle and takes the frames it sends. The core is the 8-byte
//! one at 125 MHz or the 64-byte one at 250 MHz (`hdl::core::info`).
//! `CoreSim` runs it cycle by cycle and reports the decisions the core's trace shows.

use crate::lockstep::{command_output, Lockstep, Report};
use crate::Sim;
use hdl::engine::cmd::MAILBOX_TAG;
use hdl::top::Top;
use hdl::Width;
use model::follow::lock;
use model::nic::timer::TimerKind;
use model::nic::{Decision, NicConfig, Output, Side, Stream, TxPick};
use model::{Dma, HostMemory};
use std::collections::{HashMap, VecDeque};
use wire::contract::cmd::{MAILBOX_LEN, OUT_HDR};

/// A DMA read the host is answering.
#[derive(Debug, Clone)]
struct Read {
    due: u64,
    data: Vec<u8>,
    err: bool,
    tag: u64,
    beat: usize,
}

/// Port indices, looked up once.
struct Ports {
    reset: usize,
    mmio_addr: usize,
    mmio_wdata: usize,
    mmio_write: usize,
    mmio_read: usize,
    mmio_rdata: usize,
    mmio_rvalid: usize,
    rd_valid: usize,
    rd_ready: usize,
    rd_addr: usize,
    rd_len: usize,
    rd_tag: usize,
    cpl_valid: usize,
    cpl_data: usize,
    cpl_tag: usize,
    cpl_err: usize,
    cpl_last: usize,
    wr_valid: usize,
    wr_ready: usize,
    wr_addr: usize,
    wr_data: usize,
    wr_strb: usize,
    trace_cmd: usize,
    rx_data: usize,
    rx_keep: usize,
    rx_last: usize,
    rx_valid: usize,
    rx_fcs_bad: usize,
    rx_pause: usize,
    rx_drop_full: usize,
    rx_drop_fcs: usize,
    trace_rx: usize,
    trace_rx_idle: usize,
    trace_wr_data: usize,
    trace_wr_qpn: usize,
    trace_wr_comp: usize,
    trace_flush: usize,
    trace_flush_qpn: usize,
    trace_wr_cqe: usize,
    trace_cqe: usize,
    trace_cqn: usize,
    trace_cq_slot: usize,
    trace_cq_log: usize,
    trace_wr_eqe: usize,
    trace_eqe: usize,
    trace_eq_slot: usize,
    irq: usize,
    tx_data: usize,
    tx_keep: usize,
    tx_last: usize,
    tx_valid: usize,
    tx_ready: usize,
    tx_ctrl: usize,
    trace_ctrl_idle: usize,
    trace_tx: usize,
    trace_tx_qpn: usize,
    trace_tx_nil: usize,
    trace_tx_idle: usize,
    trace_fetch: usize,
    trace_fetch_qpn: usize,
    trace_fetch_primed: usize,
    trace_timer: usize,
    trace_timer_qpn: usize,
    trace_timer_rnr: usize,
    trace_cnt_busy: usize,
    trace_fetch_idle: usize,
    trace_req: usize,
    trace_req_qpn: usize,
    trace_req_nil: usize,
    trace_req_raw: usize,
    trace_req_idle: usize,
    wqe_lent: usize,
}

/// A frame on its way in from the MAC: its bytes, the beat to go next, and whether the MAC flags its FCS.
#[derive(Debug, Clone)]
struct Arriving {
    frame: Vec<u8>,
    beat: usize,
    fcs_bad: bool,
}

/// The model NIC that is the core's twin (the same profile, port and build), its checks on.
pub fn model_twin(qps: u32, w: Width) -> NicConfig {
    let i = hdl::core::info(qps, w);
    NicConfig { profile: i.profile, port_mbps: i.port_mbps, build_id: i.build_id, checks: true }
}

/// A register access the core takes in a cycle.
#[derive(Debug, Clone, Copy)]
enum Access {
    Write(u32, u32),
    Read(u32),
}

/// What the current command has done on the DMA ports: the mailbox it read and what it wrote back.
#[derive(Debug, Clone, Default)]
struct CmdSeen {
    mailbox: u64,
    opcode: u16,
    unreadable: bool,
    tail: Vec<u8>,
}

/// The core and its host.
pub struct CoreSim {
    sim: Sim,
    p: Ports,
    /// Bytes a beat (the MAC's and the DMA ports').
    k: usize,
    /// Host memory the core's DMA reaches.
    pub mem: HostMemory,
    /// Cycles from a DMA read's request to its first completion beat.
    pub dma_latency: u64,
    reads: VecDeque<Read>,
    /// Commands completed (trace `Command` decisions) so far.
    pub commands: u64,
    /// Bytes the core has written to host memory, in order: (IOVA, bytes).
    pub writes: Vec<(u64, Vec<u8>)>,
    ps_per_cycle: u64,
    /// Random stalls of the host side: each cycle, with this probability and from this seeded source, no
    /// completion beat comes and a read request or write beat is not taken (`set_bubbles`).
    bubbles: Option<(model::rng::Rng, f64)>,
    lockstep: Option<Lockstep>,
    seen: CmdSeen,
    /// Frames waiting for the MAC, the first one going in.
    arriving: VecDeque<Arriving>,
    /// The MAC honours the core's `rx_pause` (PFC): it starts no frame while it is high (`set_lossless`).
    lossless: bool,
    /// Frames the MAC boundary kept, not yet decided, oldest first, with the cycle of their last beat.
    kept: VecDeque<(Vec<u8>, u64)>,
    /// Frames the MAC boundary dropped, as its counters last read.
    ingress_drops: u64,
    /// Frames the core decided (trace `Rx` decisions) so far.
    pub frames: u64,
    /// A lockstep check waits for the dispatch to be idle (a decided WRITE's payload all written) and for
    /// every frame decided to be sent to have left.
    check_due: bool,
    /// The streams of the frames decided and not yet out of the TX pipeline, oldest first.
    picks: VecDeque<TxPick>,
    /// The frame leaving now, its beats so far.
    leaving: Vec<u8>,
    /// Frames the core has sent, not yet taken (`take_sent`).
    sent: VecDeque<Vec<u8>>,
    /// Frames the core's responders decided to send (trace `Tx` decisions that send one) so far.
    pub responses: u64,
    /// Packets the core's requesters (raw packet QPs' frames among them) decided to send so far, and their
    /// decisions that sent nothing.
    pub requests: u64,
    pub failed_requests: u64,
    /// Flush steps the core has decided (trace `Flush` decisions) so far.
    pub flushes: u64,
    /// Timers run out (ACK timers, RNR waits).
    pub timers_fired: u64,
    /// Send WQEs the core has fetched into its requesters' windows (trace `FetchSq` decisions) so far.
    pub fetches: u64,
    /// Decisions recorded so far (of every kind).
    decisions: u64,
    /// CQEs posted and not yet written whole, oldest first: (CQ, slot, ring size log2, the cycle of the last
    /// beat of the frame whose decision posted it, none for a flush's), and the bytes of the first so far.
    cqes: VecDeque<(u32, u32, u8, Option<u64>)>,
    cqe_bytes: Vec<u8>,
    /// CQEs the core has written so far.
    pub cqes_written: u64,
    /// Completion beats given to a read while an older read was unfinished (other tags overtaking).
    pub reordered: u64,
    /// DMA reads asked for so far, by their first address.
    reads_at: HashMap<u64, u64>,
    /// For each receive CQE, the cycles from its frame's last beat in to the CQE's first write beat.
    pub rx_to_cqe: Vec<u64>,
    /// The cycle of an SQ doorbell written to an idle core (nothing coming in, going out or to fetch), until
    /// the next frame's first beat leaves.
    doorbell_at: Option<u64>,
    /// For each such doorbell, the cycles from its write to the first beat of the next frame out.
    pub doorbell_to_tx: Vec<u64>,
    /// EQEs posted and not yet written whole (their slots), and the bytes of the first so far.
    eqes: VecDeque<u32>,
    eqe_bytes: Vec<u8>,
    /// The core raised the interrupt and no one has taken it yet (`take_interrupt`).
    pub irq: bool,
}

/// Cycles the core is held in reset at the start.
const RESET_CYCLES: u64 = 2;
/// How long `CoreSim::lockstep_report` runs the core at most for a point to check at.
const REPORT_WAIT_CYCLES: u32 = 1 << 20;

/// A DMA round trip, about that of PCIe Gen3.
pub const DMA_LATENCY_NS: u64 = 500;

impl CoreSim {
    /// The core with `qps` QPs at width `w` (a `Top::Core` the sim crate builds), out of reset.
    pub fn new(qps: u32, w: Width) -> CoreSim {
        let sim = Sim::new(Top::Core(qps), w);
        let ns_per_cycle = u64::from(hdl::core::info(qps, w).ns_per_cycle);
        let q = |n| sim.port(n);
        let p = Ports {
            reset: q("reset"),
            mmio_addr: q("mmio_addr"),
            mmio_wdata: q("mmio_wdata"),
            mmio_write: q("mmio_write"),
            mmio_read: q("mmio_read"),
            mmio_rdata: q("mmio_rdata"),
            mmio_rvalid: q("mmio_rvalid"),
            rd_valid: q("dma_rd_valid"),
            rd_ready: q("dma_rd_ready"),
            rd_addr: q("dma_rd_addr"),
            rd_len: q("dma_rd_len"),
            rd_tag: q("dma_rd_tag"),
            cpl_valid: q("dma_cpl_valid"),
            cpl_data: q("dma_cpl_data"),
            cpl_tag: q("dma_cpl_tag"),
            cpl_err: q("dma_cpl_err"),
            cpl_last: q("dma_cpl_last"),
            wr_valid: q("dma_wr_valid"),
            wr_ready: q("dma_wr_ready"),
            wr_addr: q("dma_wr_addr"),
            wr_data: q("dma_wr_data"),
            wr_strb: q("dma_wr_strb"),
            trace_cmd: q("trace_cmd"),
            rx_data: q("rx_data"),
            rx_keep: q("rx_keep"),
            rx_last: q("rx_last"),
            rx_valid: q("rx_valid"),
            rx_fcs_bad: q("rx_fcs_bad"),
            rx_pause: q("rx_pause"),
            rx_drop_full: q("rx_drop_full"),
            rx_drop_fcs: q("rx_drop_fcs"),
            trace_rx: q("trace_rx"),
            trace_rx_idle: q("trace_rx_idle"),
            trace_wr_data: q("trace_wr_data"),
            trace_wr_qpn: q("trace_wr_qpn"),
            trace_wr_comp: q("trace_wr_comp"),
            trace_flush: q("trace_flush"),
            trace_flush_qpn: q("trace_flush_qpn"),
            trace_wr_cqe: q("trace_wr_cqe"),
            trace_cqe: q("trace_cqe"),
            trace_cqn: q("trace_cqn"),
            trace_cq_slot: q("trace_cq_slot"),
            trace_cq_log: q("trace_cq_log"),
            trace_wr_eqe: q("trace_wr_eqe"),
            trace_eqe: q("trace_eqe"),
            trace_eq_slot: q("trace_eq_slot"),
            irq: q("irq"),
            tx_data: q("tx_data"),
            tx_keep: q("tx_keep"),
            tx_last: q("tx_last"),
            tx_valid: q("tx_valid"),
            tx_ready: q("tx_ready"),
            tx_ctrl: q("tx_ctrl"),
            trace_ctrl_idle: q("trace_ctrl_idle"),
            trace_tx: q("trace_tx"),
            trace_tx_qpn: q("trace_tx_qpn"),
            trace_tx_nil: q("trace_tx_nil"),
            trace_tx_idle: q("trace_tx_idle"),
            trace_fetch: q("trace_fetch"),
            trace_fetch_qpn: q("trace_fetch_qpn"),
            trace_fetch_primed: q("trace_fetch_primed"),
            trace_timer: q("trace_timer"),
            trace_timer_qpn: q("trace_timer_qpn"),
            trace_timer_rnr: q("trace_timer_rnr"),
            trace_cnt_busy: q("trace_cnt_busy"),
            trace_fetch_idle: q("trace_fetch_idle"),
            trace_req: q("trace_req"),
            trace_req_qpn: q("trace_req_qpn"),
            trace_req_nil: q("trace_req_nil"),
            trace_req_raw: q("trace_req_raw"),
            trace_req_idle: q("trace_req_idle"),
            wqe_lent: q("wqe_lent"),
        };
        let mut c = CoreSim {
            sim,
            p,
            k: w.bytes(),
            mem: HostMemory::new(),
            dma_latency: DMA_LATENCY_NS / ns_per_cycle,
            reads: VecDeque::new(),
            commands: 0,
            writes: Vec::new(),
            ps_per_cycle: ns_per_cycle * 1000,
            bubbles: None,
            lockstep: None,
            seen: CmdSeen::default(),
            arriving: VecDeque::new(),
            lossless: false,
            kept: VecDeque::new(),
            ingress_drops: 0,
            frames: 0,
            flushes: 0,
            timers_fired: 0,
            fetches: 0,
            decisions: 0,
            check_due: false,
            picks: VecDeque::new(),
            leaving: Vec::new(),
            sent: VecDeque::new(),
            responses: 0,
            requests: 0,
            failed_requests: 0,
            cqes: VecDeque::new(),
            cqe_bytes: Vec::new(),
            cqes_written: 0,
            reordered: 0,
            reads_at: HashMap::new(),
            rx_to_cqe: Vec::new(),
            doorbell_at: None,
            doorbell_to_tx: Vec::new(),
            eqes: VecDeque::new(),
            eqe_bytes: Vec::new(),
            irq: false,
        };
        c.sim.set(c.p.rd_ready, 1);
        c.sim.set(c.p.wr_ready, 1);
        c.sim.set(c.p.reset, 1);
        for _ in 0..RESET_CYCLES {
            c.step();
        }
        c.sim.set(c.p.reset, 0);
        c
    }

    /// Stalls the host side at random: a cycle in `p` gives no completion beat and takes no request or
    /// write beat (`seed` makes it repeatable).
    pub fn set_bubbles(&mut self, seed: u64, p: f64) {
        self.bubbles = Some((model::rng::Rng::new(seed), p));
    }

    /// The MAC starts a frame only while the core's `rx_pause` is low, as a link with PFC would: no frame is
    /// dropped for want of room (`lossless`), or frames come as they arrive and a full FIFO drops them.
    pub fn set_lossless(&mut self, lossless: bool) {
        self.lossless = lossless;
    }

    /// A DMA read's round trip from here on, `ns` nanoseconds (whole cycles, rounded down; at least one: 0
    /// answers the next cycle, so the core's own cycles show, each round trip one cycle).
    pub fn set_dma_latency_ns(&mut self, ns: u64) {
        self.dma_latency = (ns * 1000 / self.ps_per_cycle).max(1);
    }

    fn stall(&mut self) -> bool {
        self.bubbles.as_mut().is_some_and(|(r, p)| r.chance(*p))
    }

    /// The core with the model following it (`lockstep`): every register access and command from here on
    /// is a decision the model checks, and every output is compared.
    pub fn new_lockstep(qps: u32, w: Width) -> CoreSim {
        let mut c = CoreSim::new(qps, w);
        let l = Lockstep::new(model_twin(qps, w));
        c.mem.journal(Some(l.log.clone()));
        c.lockstep = Some(l);
        c
    }

    /// What lockstep has checked (None without it), after following what is recorded so far. The core
    /// first runs to a point its periodic check would take (`checkable`, for at most `REPORT_WAIT_CYCLES`):
    /// a frame it has decided to send but not yet sent whole would otherwise show as missing.
    pub fn lockstep_report(&mut self) -> Option<Report> {
        self.lockstep.as_ref()?;
        for _ in 0..REPORT_WAIT_CYCLES {
            if self.checkable() {
                break;
            }
            self.step();
        }
        let cycle = self.cycles();
        let l = self.lockstep.as_mut()?;
        l.check(cycle);
        Some(l.report().clone())
    }

    fn record(&mut self, d: Decision, outputs: Vec<Output>) {
        self.decisions += 1;
        let time = self.now_ps();
        if let Some(l) = &self.lockstep {
            lock(&l.log).decision(time, d, outputs);
        }
    }

    /// The time of a decision just taken (called after the clock edge): the core's own time in the cycle it
    /// decided (`TIME_NS`, counted from the end of reset), which its timers read.
    fn now_ps(&self) -> u64 {
        self.sim.cycles().saturating_sub(RESET_CYCLES + 1) * self.ps_per_cycle
    }

    /// The Verilated top, for its other ports (the context read ports).
    pub fn sim(&mut self) -> &mut Sim {
        &mut self.sim
    }

    /// The value of output port `name` (up to 64 bits).
    pub fn peek(&self, name: &str) -> u64 {
        self.sim.get(self.sim.port(name))
    }

    /// The value of output port `name` as bytes, byte 0 from bits 7:0.
    pub fn peek_bytes(&self, name: &str) -> Vec<u8> {
        self.sim.get_bytes(self.sim.port(name))
    }

    /// The DMA reads asked for so far that start at `addr`.
    pub fn reads_at(&self, addr: u64) -> u64 {
        self.reads_at.get(&addr).copied().unwrap_or(0)
    }

    /// Clock cycles so far.
    pub fn cycles(&self) -> u64 {
        self.sim.cycles()
    }

    /// One cycle: the host answers what the core asks before the clock edge, then the edge.
    pub fn step(&mut self) {
        self.cycle(None);
    }

    /// A cycle in which the core takes register access `access` (its inputs set): the decisions it took at
    /// the edge are recorded in the order they saw each other (a frame's decision before an access, which
    /// reaches the tables at the edge the decision read them before; an access before a command that
    /// completes at the same edge: the access saw the command still running).
    fn cycle(&mut self, access: Option<Access>) {
        let now = self.sim.cycles();
        let (rd_ready, wr_ready, cpl_gap) = (!self.stall(), !self.stall(), self.stall());
        self.sim.set(self.p.rd_ready, u64::from(rd_ready));
        self.sim.set(self.p.wr_ready, u64::from(wr_ready));
        let p = &self.p;
        if rd_ready && self.sim.get(p.rd_valid) == 1 {
            let (addr, len, tag) = (self.sim.get(p.rd_addr), self.sim.get(p.rd_len), self.sim.get(p.rd_tag));
            let mut data = vec![0u8; (len as usize).div_ceil(self.k).max(1) * self.k];
            let err = self.mem.read(addr, &mut data[..len as usize]).is_err();
            if tag == MAILBOX_TAG {
                let opcode = if err { 0 } else { u16::from_be_bytes([data[0], data[1]]) };
                self.seen = CmdSeen { mailbox: addr, opcode, unreadable: err, tail: vec![0; MAILBOX_LEN - OUT_HDR] };
            }
            *self.reads_at.entry(addr).or_default() += 1;
            self.reads.push_back(Read { due: now + self.dma_latency, data, err, tag, beat: 0 });
        }
        if wr_ready && self.sim.get(p.wr_valid) == 1 {
            let (addr, data, strb) =
                (self.sim.get(p.wr_addr), self.sim.get_bytes(p.wr_data), self.sim.get_bytes(p.wr_strb));
            let lanes: Vec<usize> = (0..self.k).filter(|&i| strb[i / 8] >> (i % 8) & 1 == 1).collect();
            let strobed = || lanes.iter().map(|&i| data[i]);
            if self.sim.get(p.trace_wr_cqe) == 1 {
                if let (true, Some(&(.., Some(at)))) = (self.cqe_bytes.is_empty(), self.cqes.front()) {
                    self.rx_to_cqe.push(now.saturating_sub(at));
                }
                self.cqe_bytes.extend(strobed());
            }
            if self.sim.get(p.trace_wr_eqe) == 1 {
                self.eqe_bytes.extend(strobed());
            }
            if self.sim.get(p.trace_wr_data) == 1 {
                let qpn = self.sim.get(p.trace_wr_qpn) as u32;
                let side = if self.sim.get(p.trace_wr_comp) == 1 { Side::Completer } else { Side::Responder };
                let bytes: Vec<u8> = strobed().collect();
                let iova = addr + lanes.first().map_or(0, |&i| i as u64);
                if let Some(l) = &self.lockstep {
                    lock(&l.log).output(Output::Data { qpn, side, iova, bytes });
                }
            }
            for &i in &lanes {
                let b = &data[i];
                // The device's write: not the host's (not journaled); one to nowhere is counted as a fault.
                let a = addr + i as u64;
                self.mem.dma_write(a, std::slice::from_ref(b));
                let at = a.wrapping_sub(self.seen.mailbox + OUT_HDR as u64) as usize;
                if let Some(t) = self.seen.tail.get_mut(at) {
                    *t = *b;
                }
            }
            match self.writes.last_mut() {
                Some((a, d)) if *a + d.len() as u64 == addr && lanes.len() == self.k => d.extend_from_slice(&data),
                _ => self.writes.push((addr, data)),
            }
        }
        // The next completion beat: the oldest due read's, or with random stalls any due read's (a read's
        // beats stay in order; different tags' interleave).
        let due: Vec<usize> = (0..self.reads.len()).filter(|&i| self.reads[i].due <= now).collect();
        let pick = match self.bubbles.as_mut() {
            Some((rng, _)) if !due.is_empty() => Some(due[rng.below(due.len() as u64) as usize]),
            _ => due.first().copied(),
        };
        let beat = match pick {
            Some(k) if !cpl_gap => {
                self.reordered += u64::from(k != 0);
                let r = &mut self.reads[k];
                let i = r.beat;
                r.beat += 1;
                let d = r.data[self.k * i..self.k * (i + 1)].to_vec();
                Some((k, d, r.tag, r.err, r.beat * self.k >= r.data.len()))
            }
            _ => None,
        };
        match beat {
            Some((k, d, tag, err, last)) => {
                self.sim.set(p.cpl_valid, 1);
                self.sim.set_bytes(p.cpl_data, &d);
                self.sim.set(p.cpl_tag, tag);
                self.sim.set(p.cpl_err, u64::from(err));
                self.sim.set(p.cpl_last, u64::from(last));
                if last {
                    self.reads.remove(k);
                }
            }
            None => self.sim.set(p.cpl_valid, 0),
        }
        let last_in = self.mac_beat();
        let left = self.mac_take();
        let p = &self.p;
        let done = self.sim.get(p.trace_cmd) == 1;
        let decided = self.sim.get(p.trace_rx) == 1;
        let flushed = (self.sim.get(p.trace_flush) == 1).then(|| self.sim.get(p.trace_flush_qpn) as u32);
        let fetched = (self.sim.get(p.trace_fetch) == 1)
            .then(|| (self.sim.get(p.trace_fetch_qpn) as u32, self.sim.get(p.trace_fetch_primed) == 1));
        let timer = (self.sim.get(p.trace_timer) == 1).then(|| {
            let kind = if self.sim.get(p.trace_timer_rnr) == 1 { TimerKind::Rnr } else { TimerKind::Ack };
            (self.sim.get(p.trace_timer_qpn) as u32, kind)
        });
        // A responder's decision, and whether it sends a frame (a READ response whose payload could not be
        // read sends none).
        let sends = (self.sim.get(p.trace_tx) == 1)
            .then(|| (self.sim.get(p.trace_tx_qpn) as u32, self.sim.get(p.trace_tx_nil) == 0));
        // A requester's decision (a raw packet QP's: its raw stream), and whether it sends a packet (one whose
        // WQE failed sends none).
        let requests = (self.sim.get(p.trace_req) == 1).then(|| {
            let stream = if self.sim.get(p.trace_req_raw) == 1 { Stream::Raw } else { Stream::Requester };
            (self.sim.get(p.trace_req_qpn) as u32, stream, self.sim.get(p.trace_req_nil) == 0)
        });
        if self.sim.get(p.trace_eqe) == 1 {
            self.eqes.push_back(self.sim.get(p.trace_eq_slot) as u32);
        }
        let irq = self.sim.get(p.irq) == 1;
        // A CQE is posted with its frame's decision (the same cycle); its frame's last beat is set below.
        let posted = self.sim.get(p.trace_cqe) == 1;
        if posted {
            let (cqn, slot, log) =
                (self.sim.get(p.trace_cqn), self.sim.get(p.trace_cq_slot), self.sim.get(p.trace_cq_log));
            self.cqes.push_back((cqn as u32, slot as u32, log as u8, None));
        }
        self.sim.tick();
        if self.cqe_bytes.len() >= wire::contract::cqe::CQE_LEN {
            let bytes: Vec<u8> = self.cqe_bytes.drain(..wire::contract::cqe::CQE_LEN).collect();
            let (cqn, slot, log_size, _) = self.cqes.pop_front().expect("CQE beats that no post announced");
            let cqe = wire::contract::cqe::CqeRepr::from_bytes(&bytes).expect("64 bytes make a CQE");
            self.cqes_written += 1;
            if let Some(l) = &self.lockstep {
                lock(&l.log).output(Output::Cqe { cqn, slot, log_size, cqe });
            }
        }
        if self.eqe_bytes.len() >= wire::contract::eqe::EQE_LEN {
            let bytes: Vec<u8> = self.eqe_bytes.drain(..wire::contract::eqe::EQE_LEN).collect();
            let slot = self.eqes.pop_front().expect("EQE beats that no post announced");
            let e = wire::contract::eqe::EqeRepr::from_bytes(&bytes).expect("16 bytes make an EQE");
            let kind = wire::contract::eqe::EventKind::from_u8(e.kind).expect("an event kind the core knows");
            if let Some(l) = &self.lockstep {
                lock(&l.log).output(Output::Eqe { slot, owner: e.owner, kind, obj: e.obj });
            }
        }
        if irq {
            self.irq = true;
            if let Some(l) = &self.lockstep {
                lock(&l.log).output(Output::Interrupt);
            }
        }
        if let Some((frame, ctrl)) = left {
            // A reply from the control queue is decided as its last beat leaves, before this cycle's others.
            let pick = if ctrl {
                self.record(Decision::Tx(TxPick::Control), Vec::new());
                self.check_due = true;
                TxPick::Control
            } else {
                self.picks.pop_front().expect("a frame left that no decision sent")
            };
            if let Some(l) = &self.lockstep {
                lock(&l.log).output(Output::Frame { pick, frame: frame.clone() });
            }
            self.sent.push_back(frame);
        }
        if let Some(frame) = last_in {
            // The MAC boundary counts a frame it drops at its last beat.
            let drops = self.sim.get(self.p.rx_drop_full) + self.sim.get(self.p.rx_drop_fcs);
            if drops == self.ingress_drops {
                self.kept.push_back((frame, now));
            }
            self.ingress_drops = drops;
        }
        if let Some((qpn, frame)) = sends {
            let pick = TxPick::Qp { qpn, stream: Stream::Responder };
            if frame {
                self.responses += 1;
                self.picks.push_back(pick);
            }
            self.record(Decision::Tx(pick), Vec::new());
            self.check_due = true;
        }
        if let Some((qpn, stream, frame)) = requests {
            let pick = TxPick::Qp { qpn, stream };
            if frame {
                self.requests += 1;
                self.picks.push_back(pick);
            } else {
                self.failed_requests += 1;
            }
            self.record(Decision::Tx(pick), Vec::new());
            self.check_due = true;
        }
        if decided {
            self.frames += 1;
            let (frame, last_beat) =
                self.kept.pop_front().expect("the core decided a frame the MAC boundary did not keep");
            if let (true, Some(c)) = (posted, self.cqes.back_mut()) {
                c.3 = Some(last_beat);
            }
            let time = self.now_ps();
            if let Some(l) = &self.lockstep {
                lock(&l.log).arrive(time, frame.clone());
            }
            self.record(Decision::Rx(frame), Vec::new());
            self.check_due = true;
        }
        if let Some(qpn) = flushed {
            self.flushes += 1;
            self.record(Decision::Flush { qpn }, Vec::new());
            self.check_due = true;
        }
        if let Some((qpn, primed)) = fetched {
            self.fetches += 1;
            self.record(Decision::FetchSq { qpn, primed }, Vec::new());
            self.check_due = true;
        }
        if let Some((qpn, timer)) = timer {
            self.timers_fired += 1;
            self.record(Decision::Timer { qpn, timer }, Vec::new());
            self.check_due = true;
        }
        // A register access the core took in the cycle of a frame's decision came after it (the decision
        // read the contexts as they were), and before a command completing at the same edge.
        match access {
            Some(Access::Write(off, val)) => self.record(Decision::MmioWrite { off, val }, Vec::new()),
            Some(Access::Read(off)) => {
                let val = self.sim.get(self.p.mmio_rdata) as u32;
                self.record(Decision::MmioRead { off }, vec![Output::Register { off, val }]);
            }
            None => {}
        }
        if done {
            self.commands += 1;
            let seen = std::mem::take(&mut self.seen);
            let out = if seen.unreadable {
                Output::Command {
                    opcode: 0,
                    status: wire::contract::cmd::Status::BadMailbox,
                    syndrome: 0,
                    out: Vec::new(),
                }
            } else {
                command_output(seen.opcode, &seen.tail)
            };
            self.record(Decision::Command, vec![out]);
            self.check_due = true;
        }
        if self.check_due && self.checkable() {
            self.check_due = false;
            let cycle = self.cycles();
            if let Some(l) = self.lockstep.as_mut() {
                l.check(cycle);
            }
        }
    }

    /// Whether lockstep can check now: every decision's outputs are out (each frame decided sent whole, each
    /// CQE and EQE written), the dispatch idle and no engine holding the context port (a requester that
    /// hands a failed WQE to the dispatch to retire holds it from its decision until the dispatch takes it).
    fn checkable(&self) -> bool {
        self.sim.get(self.p.trace_rx_idle) == 1
            && self.sim.get(self.p.wqe_lent) == 1
            && self.picks.is_empty()
            && self.cqes.is_empty()
            && self.eqes.is_empty()
    }

    /// Drives the MAC's next beat (or none); returns the frame whose last beat this is.
    fn mac_beat(&mut self) -> Option<Vec<u8>> {
        let p = &self.p;
        let paused = self.lossless && self.sim.get(p.rx_pause) == 1;
        let Some(a) = self.arriving.front_mut().filter(|a| a.beat > 0 || !paused) else {
            self.sim.set(p.rx_valid, 0);
            return None;
        };
        let k = self.k;
        let at = k * a.beat;
        let n = (a.frame.len() - at).min(k);
        let mut beat = vec![0u8; k];
        beat[..n].copy_from_slice(&a.frame[at..at + n]);
        let last = at + n == a.frame.len();
        let keep: Vec<u8> = (0..k / 8).map(|j| ((1u16 << n.saturating_sub(8 * j).min(8)) - 1) as u8).collect();
        self.sim.set(p.rx_valid, 1);
        self.sim.set_bytes(p.rx_data, &beat);
        self.sim.set_bytes(p.rx_keep, &keep);
        self.sim.set(p.rx_last, u64::from(last));
        self.sim.set(p.rx_fcs_bad, u64::from(last && a.fcs_bad));
        a.beat += 1;
        if !last {
            return None;
        }
        self.arriving.pop_front().map(|a| a.frame)
    }

    /// Takes the core's transmit beat, if it offers one (the MAC takes one a cycle, stalled by the bubbles);
    /// returns the frame whose last beat this is, and whether it is a reply from the control queue.
    fn mac_take(&mut self) -> Option<(Vec<u8>, bool)> {
        let ready = !self.stall();
        let p = &self.p;
        self.sim.set(p.tx_ready, u64::from(ready));
        if !ready || self.sim.get(p.tx_valid) == 0 {
            return None;
        }
        let (data, keep) = (self.sim.get_bytes(p.tx_data), self.sim.get_bytes(p.tx_keep));
        let ctrl = self.sim.get(p.tx_ctrl) == 1;
        if self.leaving.is_empty() && !ctrl {
            if let Some(at) = self.doorbell_at.take() {
                self.doorbell_to_tx.push(self.sim.cycles() - at);
            }
        }
        self.leaving.extend((0..self.k).filter(|&i| keep[i / 8] >> (i % 8) & 1 == 1).map(|i| data[i]));
        (self.sim.get(p.tx_last) == 1).then(|| (std::mem::take(&mut self.leaving), ctrl))
    }

    /// The frames the core has sent since the last call, in order.
    pub fn take_sent(&mut self) -> Vec<Vec<u8>> {
        self.sent.drain(..).collect()
    }

    /// No response is owed that the core knows of, no requester is awake, and every frame it decided to send
    /// has left.
    pub fn tx_quiet(&self) -> bool {
        self.picks.is_empty()
            && self.leaving.is_empty()
            && self.sim.get(self.p.trace_tx_idle) == 1
            && self.sim.get(self.p.trace_req_idle) == 1
            && self.sim.get(self.p.trace_ctrl_idle) == 1
    }

    /// Hands `frame` to the MAC, to go in a beat a cycle after the frames before it (the MAC cannot be told
    /// to wait); `fcs_bad` has the MAC flag its FCS as bad.
    pub fn receive(&mut self, frame: Vec<u8>, fcs_bad: bool) {
        assert!(!frame.is_empty(), "a frame has bytes");
        self.arriving.push_back(Arriving { frame, beat: 0, fcs_bad });
    }

    /// Nothing received is left to go in or to be decided, and the dispatch is idle.
    pub fn rx_quiet(&self) -> bool {
        self.arriving.is_empty() && self.kept.is_empty() && self.sim.get(self.p.trace_rx_idle) == 1
    }

    /// No QP is awake for a send WQE's fetch, and the dispatch is idle.
    pub fn fetch_quiet(&self) -> bool {
        self.sim.get(self.p.trace_fetch_idle) == 1 && self.sim.get(self.p.trace_rx_idle) == 1
    }

    /// A 32-bit register write (one cycle).
    pub fn mmio_write(&mut self, addr: u32, val: u32) {
        use wire::contract::regs::doorbell::{CQ_DB_BASE, DB_STRIDE, QP_DB_BASE, QP_SQ_PI};
        let sq = (QP_DB_BASE..CQ_DB_BASE).contains(&addr) && (addr - QP_DB_BASE) % DB_STRIDE == QP_SQ_PI;
        // A doorbell whose WQE sent nothing (it failed) is replaced by the next to an idle core.
        if sq && self.rx_quiet() && self.tx_quiet() && self.fetch_quiet() {
            self.doorbell_at = Some(self.sim.cycles());
        }
        self.sim.set(self.p.mmio_addr, u64::from(addr));
        self.sim.set(self.p.mmio_wdata, u64::from(val));
        self.sim.set(self.p.mmio_write, 1);
        self.cycle(Some(Access::Write(addr, val)));
        self.sim.set(self.p.mmio_write, 0);
    }

    /// A 32-bit register read (the data comes a cycle after the request). A counter's waits while something
    /// decided is not counted yet: a response's frame (`trace_cnt_busy`, a few cycles), the CQEs, events and
    /// interrupt a completer's decision posts after it (the dispatch not idle). The model counts them all
    /// at the decision.
    pub fn mmio_read(&mut self, addr: u32) -> u32 {
        use wire::contract::regs::{counters, dcqcn};
        if (counters::BASE + counters::FIRST..dcqcn::BASE).contains(&addr) {
            while self.sim.get(self.p.trace_cnt_busy) == 1 || self.sim.get(self.p.trace_rx_idle) == 0 {
                self.step();
            }
        }
        self.sim.set(self.p.mmio_addr, u64::from(addr));
        self.sim.set(self.p.mmio_read, 1);
        self.cycle(Some(Access::Read(addr)));
        self.sim.set(self.p.mmio_read, 0);
        assert_eq!(self.sim.get(self.p.mmio_rvalid), 1, "a register read answers in one cycle");
        self.sim.get(self.p.mmio_rdata) as u32
    }

    /// Whether QP `qpn`'s context records in the core (read through its context ports) are the ones the model
    /// following it holds, packed: Err names the first record that differs. Lockstep must be on.
    pub fn context_agrees(&mut self, qpn: u32) -> Result<(), String> {
        self.lockstep.as_ref().ok_or("lockstep is off")?;
        // A snapshot: the records and the window entries read in cycles without a decision (the core writes
        // its contexts only at its decisions), after the model has followed every decision so far.
        let (got, valid, entries) = loop {
            while self.sim.get(self.p.trace_rx_idle) == 0 {
                self.step();
            }
            let (before, cycle) = (self.decisions, self.cycles());
            if let Some(l) = self.lockstep.as_mut() {
                l.check(cycle);
            }
            let port = self.sim.port("qp_index");
            self.sim.set(port, u64::from(qpn));
            self.step();
            let got = [self.peek_bytes("qp_attr"), self.peek_bytes("qp_req"), self.peek_bytes("qp_resp")];
            let valid = self.peek("qp_valid") == 1;
            // The requester's window: the entries of the SQ counters before the consumer counter, each in slot
            // `counter mod wqe_window`, read through the port the dispatch lends while it is idle.
            let nic = self.lockstep.as_ref().ok_or("lockstep is off")?.model();
            let per_qp = nic.cfg.profile.wqe_window;
            let window: Vec<u16> = nic.qp_state(qpn).map_or_else(Vec::new, |q| {
                let n = q.req.wqes.len() as u16;
                (0..n).map(|i| q.sq.ci.wrapping_sub(n - i)).collect()
            });
            let mut entries = Vec::new();
            for index in window {
                while self.sim.get(self.p.wqe_lent) == 0 {
                    self.step();
                }
                self.sim.set(self.sim.port("wqe_qpn"), u64::from(qpn));
                self.sim.set(self.sim.port("wqe_slot"), u64::from(u32::from(index) % per_qp));
                self.step();
                entries.push(self.peek_bytes("wqe"));
            }
            if self.decisions == before {
                break (got, valid, entries);
            }
        };
        let l = self.lockstep.as_ref().ok_or("lockstep is off")?;
        let nic = l.model();
        let ctx = wire::contract::qpc::qp_context(&nic.cfg.profile);
        let Some(q) = nic.qp_state(qpn) else {
            return if valid { Err(format!("QP {qpn:#x} is valid in the core, not in the model")) } else { Ok(()) };
        };
        if !valid {
            return Err(format!("QP {qpn:#x} is valid in the model, not in the core"));
        }
        let packed = model::nic::context::pack(q, &ctx, 0).map_err(|e| format!("packing QP {qpn:#x}: {e}"))?;
        // Each record, then the bits past it (the port's padding), which must be 0.
        let agree = |l: &wire::layout::Layout, got: &[u8], want: &wire::layout::Bits| {
            let want = crate::responder::bytes_of(want);
            let fields = crate::record::diff(l, got, &want);
            let pad = got.get(want.len()..).unwrap_or_default().iter().any(|&b| b != 0);
            match (fields.is_empty(), pad) {
                (true, false) => Ok(()),
                (_, true) => Err(format!("{fields} (bits past the record set: {got:02x?})")),
                (false, false) => Err(fields),
            }
        };
        for (name, l, got, want) in [
            ("qp_attr", &ctx.attr, &got[0], &packed.attr),
            ("qp_req", &ctx.req, &got[1], &packed.req),
            ("qp_resp", &ctx.resp, &got[2], &packed.resp),
        ] {
            agree(l, got, want).map_err(|e| format!("QP {qpn:#x} {name}: {e}"))?;
        }
        for (i, (got, want)) in entries.iter().zip(&packed.wqes).enumerate() {
            agree(&ctx.wqe, got, want).map_err(|e| format!("QP {qpn:#x} window entry {i}: {e}"))?;
        }
        Ok(())
    }

    /// Runs until `n` more commands have completed, or fails after `limit` cycles.
    pub fn run_commands(&mut self, n: u64, limit: u64) -> Result<u64, String> {
        let (want, start) = (self.commands + n, self.cycles());
        while self.commands < want {
            if self.cycles() - start > limit {
                return Err(format!("no command completion within {limit} cycles"));
            }
            self.step();
        }
        Ok(self.cycles() - start)
    }
}
