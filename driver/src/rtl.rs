//! The RTL backend: the driver's `Backend` on the Verilated NIC core (`sim::core::CoreSim`): its register
//! file and command unit, its requester, responder and completer (every RC operation, go-back-N, RNR), the
//! flush of QPs in ERR, the raw packet QP and the ARP and ping answers. A peer's frames go in through
//! `RtlHandle::receive` and the core's come out of `RtlHandle::take_sent` (two cores or a core and a model
//! NIC joined by `pair`), or the core's MAC sits on a real Ethernet link (`RtlBackend::attach`).

use crate::realtime::DgramLink;
use crate::{Backend, Error};
use pcap_file::pcap::{PcapPacket, PcapWriter};
use sim::core::CoreSim;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use wire::contract::regs::Counter;

/// Cycles a `progress` call runs.
const CYCLES_PER_PROGRESS: u32 = 32;

/// The Verilated core with `qps` QPs and its host memory.
pub struct RtlBackend {
    core: Arc<Mutex<CoreSim>>,
    ns_per_cycle: u64,
    link: Option<Mutex<OnLink>>,
}

/// The core's MAC on a real Ethernet link (`attach`).
struct OnLink {
    link: DgramLink,
    /// When the core was attached: the host's clock counts from here.
    start: Instant,
    pcap: Option<PcapWriter<BufWriter<File>>>,
}

impl OnLink {
    /// Writes `frame` to the capture, if any, at the wall clock's time.
    fn tap(&mut self, frame: &[u8]) {
        if let Some(w) = &mut self.pcap {
            let ts = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
            // Best effort, as a capture on a real link is: a failed write loses that record only.
            let _ = w.write_packet(&PcapPacket::new(ts, frame.len() as u32, frame));
        }
    }
}

impl RtlBackend {
    /// The core with `qps` QPs at width `w` (one the sim crate builds: 16 or 1024 QPs at 8 bytes, 16 at 64).
    pub fn new(qps: u32, w: hdl::Width) -> Self {
        Self::on(CoreSim::new(qps, w), qps, w)
    }

    /// The same, with the model following the core (`sim::lockstep`): each register access and command is
    /// checked as it happens; `lockstep_report` says what was checked and what differed.
    pub fn with_lockstep(qps: u32, w: hdl::Width) -> Self {
        Self::on(CoreSim::new_lockstep(qps, w), qps, w)
    }

    fn on(core: CoreSim, qps: u32, w: hdl::Width) -> Self {
        let ns_per_cycle = u64::from(hdl::core::info(qps, w).ns_per_cycle);
        RtlBackend { core: Arc::new(Mutex::new(core)), ns_per_cycle, link: None }
    }

    /// Puts the core's MAC on a real Ethernet link (QEMU's `-netdev dgram`), each frame captured to `pcap`
    /// if given. Each `progress` takes in the frames waiting on the link, runs the core and sends what it
    /// sent. The core runs as fast as the simulation does, slower than the wall clock: its own timers count
    /// its cycles, while the host's clock (`now_ns`: the driver's and TCP's timeouts) is the wall clock.
    /// The MAC honours the core's pause (`set_lossless`): a frame waits on the link rather than being
    /// dropped at a full ingress, as the simulation cannot keep up with a peer's bursts.
    pub fn attach(&mut self, link: DgramLink, pcap: Option<&Path>) -> std::io::Result<()> {
        let pcap = match pcap {
            Some(p) => Some(PcapWriter::new(BufWriter::new(File::create(p)?)).map_err(std::io::Error::other)?),
            None => None,
        };
        self.core().set_lossless(true);
        self.link = Some(Mutex::new(OnLink { link, start: Instant::now(), pcap }));
        Ok(())
    }

    /// A handle on the core that outlives the backend's move into a `Context`.
    pub fn handle(&self) -> RtlHandle {
        RtlHandle(self.core.clone())
    }

    fn core(&self) -> MutexGuard<'_, CoreSim> {
        crate::verbs::lock(&self.core)
    }

    /// Clock cycles the core has run.
    pub fn cycles(&self) -> u64 {
        self.core().cycles()
    }
}

pub use sim::core::model_twin;

impl Backend for RtlBackend {
    fn mmio_read(&self, off: u32) -> u32 {
        self.core().mmio_read(off)
    }

    fn mmio_write(&self, off: u32, val: u32) {
        self.core().mmio_write(off, val)
    }

    fn dma_alloc(&self, len: usize) -> Result<u64, Error> {
        Ok(self.core().mem.alloc(len))
    }

    fn dma_free(&self, iova: u64) {
        self.core().mem.free(iova);
    }

    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), Error> {
        self.core().mem.read(iova, buf).map_err(|_| Error::Dma { iova, len: buf.len() })
    }

    fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), Error> {
        self.core().mem.write(iova, data).map_err(|_| Error::Dma { iova, len: data.len() })
    }

    fn progress(&self) -> bool {
        let mut link = self.link.as_ref().map(crate::verbs::lock);
        let mut c = self.core();
        if let Some(l) = link.as_mut() {
            while let Some(f) = l.link.recv_frame() {
                l.tap(&f);
                // An empty datagram carries no frame.
                if !f.is_empty() {
                    c.receive(f, false);
                }
            }
        }
        for _ in 0..CYCLES_PER_PROGRESS {
            c.step();
        }
        if let Some(l) = link.as_mut() {
            for f in c.take_sent() {
                l.tap(&f);
                l.link.send_frame(&f);
            }
        }
        true
    }

    fn now_ns(&self) -> u64 {
        match &self.link {
            Some(l) => crate::verbs::lock(l).start.elapsed().as_nanos() as u64,
            None => self.core().cycles() * self.ns_per_cycle,
        }
    }

    fn take_interrupt(&self) -> bool {
        std::mem::take(&mut self.core().irq)
    }
}

/// The core behind an `RtlBackend`, for what the verbs do not show: the cycles run and lockstep's report.
#[derive(Clone)]
pub struct RtlHandle(Arc<Mutex<CoreSim>>);

impl RtlHandle {
    /// Clock cycles the core has run.
    pub fn cycles(&self) -> u64 {
        crate::verbs::lock(&self.0).cycles()
    }

    /// Hands a frame to the core's MAC (it goes in as the core runs).
    pub fn receive(&self, frame: Vec<u8>) {
        crate::verbs::lock(&self.0).receive(frame, false);
    }

    /// Runs the core until every frame handed to it is in and decided, its payload written, every response
    /// it owes sent and every send WQE it may fetch fetched; false if that takes more than `limit` cycles.
    /// Nothing received is left to go in or be decided, nothing decided is left to send, no QP waits for a
    /// fetch: what `settle` waits for.
    pub fn quiet(&self) -> bool {
        let c = crate::verbs::lock(&self.0);
        c.rx_quiet() && c.tx_quiet() && c.fetch_quiet()
    }

    pub fn settle(&self, limit: u64) -> bool {
        let mut c = crate::verbs::lock(&self.0);
        let start = c.cycles();
        while !(c.rx_quiet() && c.tx_quiet() && c.fetch_quiet()) {
            if c.cycles() - start > limit {
                return false;
            }
            c.step();
        }
        true
    }

    /// The MAC honours the core's pause (PFC): no frame is dropped for want of room (`CoreSim::set_lossless`).
    pub fn set_lossless(&self, lossless: bool) {
        crate::verbs::lock(&self.0).set_lossless(lossless);
    }

    /// A DMA read's round trip from here on (`CoreSim::set_dma_latency_ns`; 500 ns at first).
    pub fn set_dma_latency_ns(&self, ns: u64) {
        crate::verbs::lock(&self.0).set_dma_latency_ns(ns);
    }

    /// For each SQ doorbell written to an idle core, the cycles to the next frame's first beat out
    /// (`CoreSim::doorbell_to_tx`).
    pub fn doorbell_to_tx(&self) -> Vec<u64> {
        crate::verbs::lock(&self.0).doorbell_to_tx.clone()
    }

    /// Stalls the core's host side and MAC at random from here on (`CoreSim::set_bubbles`; 0 for none).
    pub fn set_bubbles(&self, seed: u64, p: f64) {
        crate::verbs::lock(&self.0).set_bubbles(seed, p);
    }

    /// The frames the core has sent since the last call, in order.
    pub fn take_sent(&self) -> Vec<Vec<u8>> {
        crate::verbs::lock(&self.0).take_sent()
    }

    /// Frames the core has decided to send (its trace's `Tx` decisions).
    pub fn responses(&self) -> u64 {
        crate::verbs::lock(&self.0).responses
    }

    /// Packets the core's requesters have sent so far, and their decisions that sent nothing (a WQE failed).
    pub fn requests(&self) -> (u64, u64) {
        let c = crate::verbs::lock(&self.0);
        (c.requests, c.failed_requests)
    }

    /// The value of one of the core's output ports (a counter, up to 64 bits).
    pub fn peek(&self, port: &str) -> u64 {
        crate::verbs::lock(&self.0).peek(port)
    }

    /// Whether QP `qpn`'s contexts in the core are the model's, packed (lockstep on): Err names the record.
    pub fn context_agrees(&self, qpn: u32) -> Result<(), String> {
        crate::verbs::lock(&self.0).context_agrees(qpn)
    }

    /// Frames the core has decided (its trace's `Rx` decisions).
    pub fn frames(&self) -> u64 {
        crate::verbs::lock(&self.0).frames
    }

    /// Flush steps the core has decided (its trace's `Flush` decisions: a WQE of a QP in ERR completed).
    pub fn flushes(&self) -> u64 {
        crate::verbs::lock(&self.0).flushes
    }

    /// Timers the core has run out (its trace's `Timer` decisions: ACK timers, RNR waits).
    pub fn timers_fired(&self) -> u64 {
        crate::verbs::lock(&self.0).timers_fired
    }

    /// Runs the core for `cycles` cycles whatever it is doing: time passes (timers run out) as it does for
    /// a host that waits.
    pub fn run(&self, cycles: u64) {
        let mut c = crate::verbs::lock(&self.0);
        for _ in 0..cycles {
            c.step();
        }
    }

    /// Send WQEs the core has fetched into its requesters' windows so far.
    pub fn fetches(&self) -> u64 {
        crate::verbs::lock(&self.0).fetches
    }

    /// The DMA reads the core has asked for so far that start at `addr` (e.g. an SQ slot's).
    pub fn reads_at(&self, addr: u64) -> u64 {
        crate::verbs::lock(&self.0).reads_at(addr)
    }

    /// For each receive CQE, the cycles from its frame's last beat in to its first write beat
    /// (`CoreSim::rx_to_cqe`).
    pub fn rx_to_cqe(&self) -> Vec<u64> {
        crate::verbs::lock(&self.0).rx_to_cqe.clone()
    }

    /// DMA completion beats the host gave a read while an older one was unfinished (`CoreSim::reordered`).
    pub fn reordered(&self) -> u64 {
        crate::verbs::lock(&self.0).reordered
    }

    /// Every counter, read through the register file as a driver reads one (low word, then the high word
    /// it latched): with lockstep on, each read is a decision the model follows and its value is compared
    /// with the model's.
    pub fn read_counters(&self) -> Vec<u64> {
        let mut c = crate::verbs::lock(&self.0);
        Counter::ALL
            .iter()
            .map(|k| u64::from(c.mmio_read(k.offset())) | u64::from(c.mmio_read(k.offset() + 4)) << 32)
            .collect()
    }

    /// Lockstep's report after following everything recorded so far (None when it is off).
    pub fn lockstep_report(&self) -> Option<sim::lockstep::Report> {
        crate::verbs::lock(&self.0).lockstep_report()
    }
}
