//! The event loop: NICs with their host memory, links, an optional switch, and a pcap tap.

use super::link::{Endpoint, FrameFault, Link, LinkConfig, LinkStats};
use super::switch::{EcnConfig, Switch};
use crate::follow::{lock, Trace, TraceLog};
use crate::hostmem::HostMemory;
use crate::nic::{Decision, Effect, Nic, NicConfig};
use crate::posted::PostedWrites;
use crate::rng::Rng;
use crate::sched::{self, Policy, Sched};
use crate::Time;
use pcap_file::pcap::{PcapPacket, PcapWriter};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::BufWriter;
use std::time::Duration;

/// A host: its NIC, its memory, and the scheduler that takes the NIC's decisions.
pub struct Node {
    pub nic: Nic,
    pub mem: HostMemory,
    /// Register writes the host posted while the world was busy; applied before the next step or read.
    pub posted: PostedWrites,
    pub sched: Sched,
    out_link: usize,
    /// The NIC's trace, while recording (`World::trace`).
    trace: Option<TraceLog>,
}

impl Node {
    /// A host whose NIC sends on link `out_link`.
    fn new(cfg: &NicConfig, out_link: usize) -> Self {
        Node {
            nic: Nic::new(cfg.clone()),
            mem: HostMemory::new(),
            posted: PostedWrites::default(),
            sched: Sched::new(Policy::Exact),
            out_link,
            trace: None,
        }
    }

    /// A host-side decision (a register access) at `now`.
    fn host_decision(&mut self, now: Time, d: Decision) -> Effect {
        sched::apply(&mut self.nic, &mut self.mem, now, d, self.trace.as_ref())
    }
}

struct Arrival {
    time: Time,
    seq: u64,
    to: Endpoint,
    frame: Vec<u8>,
}

impl PartialEq for Arrival {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl Eq for Arrival {}
impl PartialOrd for Arrival {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Arrival {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(o.time, o.seq))
    }
}

/// A simulated network of NICs.
pub struct World {
    pub now: Time,
    pub nodes: Vec<Node>,
    links: Vec<Link>,
    switch: Option<Switch>,
    events: BinaryHeap<Reverse<Arrival>>,
    seq: u64,
    rng: Rng,
    pcap: Option<PcapWriter<BufWriter<File>>>,
    /// Frames the NICs sent, with the time and the sending node, while `capture` is on (for tests).
    captured: Option<Vec<(Time, usize, Vec<u8>)>>,
    /// Frames that reached the external end of an attached world's link, for the caller to carry on.
    external_out: Vec<Vec<u8>>,
}

impl World {
    /// Two NICs back to back, one link each way with the same configuration.
    pub fn pair(nic: NicConfig, link: LinkConfig, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let links =
            vec![Link::new(link, Endpoint::Nic(1), rng.fork(1)), Link::new(link, Endpoint::Nic(0), rng.fork(2))];
        World::assemble(vec![Node::new(&nic, 0), Node::new(&nic, 1)], links, None, rng)
    }

    /// One NIC on a link to the outside world: link 0 carries its frames out (`take_external`), link 1 brings
    /// frames in (`inject_external`); `link`'s delay and seeded faults apply both ways, on this side.
    pub fn attached(nic: NicConfig, link: LinkConfig, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let links =
            vec![Link::new(link, Endpoint::External, rng.fork(1)), Link::new(link, Endpoint::Nic(0), rng.fork(2))];
        World::assemble(vec![Node::new(&nic, 0)], links, None, rng)
    }

    fn assemble(nodes: Vec<Node>, links: Vec<Link>, switch: Option<Switch>, rng: Rng) -> Self {
        World {
            now: 0,
            nodes,
            links,
            switch,
            events: BinaryHeap::new(),
            seq: 0,
            rng,
            pcap: None,
            captured: None,
            external_out: Vec::new(),
        }
    }

    /// A frame from the outside world, into an attached world's inbound link now.
    pub fn inject_external(&mut self, frame: Vec<u8>) {
        let now = self.now;
        if self.links.get(1).is_some_and(|l| l.to == Endpoint::Nic(0)) {
            self.send_on(1, now, frame);
        }
    }

    /// The frames that left an attached world since the last call, in order.
    pub fn take_external(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.external_out)
    }

    /// `n` NICs on one switch; every port's links share `link`.
    pub fn star(n: usize, nic: NicConfig, link: LinkConfig, ecn: EcnConfig, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut sw = Switch::new(ecn, rng.fork(99));
        let mut links = Vec::new();
        let mut nodes = Vec::new();
        for i in 0..n {
            // NIC i -> switch port i, and switch port i -> NIC i.
            links.push(Link::new(link, Endpoint::Switch(i), rng.fork(2 * i as u64 + 10)));
            links.push(Link::new(link, Endpoint::Nic(i), rng.fork(2 * i as u64 + 11)));
            sw.add_port(2 * i + 1);
            nodes.push(Node::new(&nic, 2 * i));
        }
        World::assemble(nodes, links, Some(sw), rng)
    }

    /// Records every frame sent by node `node` (and, with a switch, every frame delivered to it) to `path`.
    pub fn tap(&mut self, path: &std::path::Path, nodes: &[usize]) -> std::io::Result<()> {
        let f = BufWriter::new(File::create(path)?);
        self.pcap = Some(PcapWriter::new(f).map_err(std::io::Error::other)?);
        for &n in nodes {
            if let Some(node) = self.nodes.get(n) {
                self.links[node.out_link].tap = true;
            }
        }
        Ok(())
    }

    /// Records every frame entering any link to `path`: for an attached world, both directions of the real
    /// link (inbound frames as they arrived, before this side's faults).
    pub fn tap_all(&mut self, path: &std::path::Path) -> std::io::Result<()> {
        let f = BufWriter::new(File::create(path)?);
        self.pcap = Some(PcapWriter::new(f).map_err(std::io::Error::other)?);
        for l in &mut self.links {
            l.tap = true;
        }
        Ok(())
    }

    /// Starts keeping every frame a NIC sends in memory (`captured`), as it left the NIC.
    pub fn capture(&mut self) {
        self.captured.get_or_insert_with(Vec::new);
    }

    /// The frames kept since `capture`: (time, sending node, frame).
    pub fn captured(&self) -> &[(Time, usize, Vec<u8>)] {
        self.captured.as_deref().unwrap_or(&[])
    }

    /// Changes the faults of the links leaving every node (e.g. after connection set-up).
    pub fn set_link_faults(&mut self, faults: super::Impairments) {
        for l in &mut self.links {
            l.cfg.faults = faults;
        }
    }

    /// Hands `frame` to node `node`'s NIC now, as if it came off its link (for tests that forge frames).
    pub fn deliver(&mut self, node: usize, frame: Vec<u8>) {
        if node < self.nodes.len() {
            let now = self.now;
            self.push(now, Endpoint::Nic(node), frame);
        }
    }

    /// Applies `fault` to the `nth` frame (0 = the next one) that node `node` sends from now on.
    pub fn fault_frame(&mut self, node: usize, nth: u64, fault: FrameFault) {
        if let Some(n) = self.nodes.get(node) {
            let link = &mut self.links[n.out_link];
            link.script.push((link.stats.frames + nth, fault));
        }
    }

    pub fn link_stats(&self) -> LinkStats {
        let mut s = LinkStats::default();
        for l in &self.links {
            s.frames += l.stats.frames;
            s.bytes += l.stats.bytes;
            s.lost += l.stats.lost;
            s.reordered += l.stats.reordered;
            s.duplicated += l.stats.duplicated;
            s.corrupted += l.stats.corrupted;
        }
        s
    }

    /// Peak egress queue of any switch port, in bytes.
    pub fn peak_queue_bytes(&self) -> u64 {
        self.switch.as_ref().map_or(0, |s| s.ports.iter().map(|p| p.peak_bytes).max().unwrap_or(0))
    }

    /// Current egress queue toward node `n`, in bytes.
    pub fn queue_bytes(&self, n: usize) -> u64 {
        self.switch.as_ref().map_or(0, |s| s.queue_bytes(n, self.now))
    }

    fn push(&mut self, time: Time, to: Endpoint, frame: Vec<u8>) {
        self.seq += 1;
        self.events.push(Reverse(Arrival { time, seq: self.seq, to, frame }));
    }

    fn record(&mut self, link: usize, time: Time, frame: &[u8]) {
        if !self.links[link].tap {
            return;
        }
        if let Some(w) = self.pcap.as_mut() {
            let ts = Duration::from_nanos(time / 1000);
            let _ = w.write_packet(&PcapPacket::new(ts, frame.len() as u32, frame));
        }
    }

    fn send_on(&mut self, link: usize, now: Time, frame: Vec<u8>) {
        self.record(link, now, &frame);
        let to = self.links[link].to;
        for (t, f) in self.links[link].send(now, frame) {
            self.push(t, to, f);
        }
    }

    /// Earliest pending event, if any.
    pub fn next_time(&mut self) -> Option<Time> {
        let ev = self.events.peek().map(|Reverse(a)| a.time);
        let now = self.now;
        let nic = self.nodes.iter_mut().filter_map(|n| n.sched.next_time(&n.nic, now)).min();
        match (ev, nic) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Applies the register writes every host posted, in order, at the current time.
    pub fn apply_posted(&mut self) {
        let now = self.now;
        for node in &mut self.nodes {
            for (off, val) in node.posted.take() {
                node.host_decision(now, Decision::MmioWrite { off, val });
            }
        }
    }

    /// A register write to node `n`'s NIC, after the writes posted before it.
    pub fn mmio_write(&mut self, n: usize, off: u32, val: u32) {
        self.apply_posted();
        let now = self.now;
        self.nodes[n].host_decision(now, Decision::MmioWrite { off, val });
    }

    /// A register read from node `n`'s NIC; like a PCIe read, it lands after the writes posted before it.
    pub fn mmio_read(&mut self, n: usize, off: u32) -> u32 {
        self.apply_posted();
        let now = self.now;
        match self.nodes[n].host_decision(now, Decision::MmioRead { off }) {
            Effect::Value(v) => v,
            _ => 0,
        }
    }

    /// Starts recording node `n`'s trace (its decisions, their outputs, the frames that reach it, and what its
    /// host does to memory), from now on. Start before the host does anything, so a follower starts from the
    /// same state.
    pub fn trace(&mut self, n: usize) {
        let node = &mut self.nodes[n];
        let log: TraceLog = std::sync::Arc::new(std::sync::Mutex::new(Trace::new(node.nic.cfg.clone())));
        node.nic.record_outputs(true);
        node.mem.journal(Some(log.clone()));
        node.trace = Some(log);
    }

    /// Node `n`'s trace so far, with its counters and the time as they are now; recording goes on.
    pub fn take_trace(&mut self, n: usize) -> Option<Trace> {
        let now = self.now;
        let node = &mut self.nodes[n];
        let log = node.trace.as_ref()?;
        let mut t = lock(log).take();
        t.counters = node.nic.counters().to_vec();
        t.end = t.end.max(now);
        Some(t)
    }

    /// Sets how node `n`'s scheduler decides.
    pub fn set_policy(&mut self, n: usize, policy: Policy) {
        self.nodes[n].sched = Sched::new(policy);
    }

    /// Turns every NIC's checks after each decision on or off (`Nic::set_checks`).
    pub fn set_checks(&mut self, on: bool) {
        for n in &mut self.nodes {
            n.nic.set_checks(on);
        }
    }

    /// Processes everything due at the next event time. Returns false when nothing is pending.
    pub fn step(&mut self) -> bool {
        self.apply_posted();
        let Some(t) = self.next_time() else { return false };
        self.now = self.now.max(t);
        let now = self.now;
        while self.events.peek().is_some_and(|Reverse(a)| a.time <= now) {
            let Some(Reverse(a)) = self.events.pop() else { break };
            match a.to {
                Endpoint::Nic(i) => {
                    let node = &mut self.nodes[i];
                    if let Some(t) = &node.trace {
                        lock(t).arrive(now, a.frame.clone());
                    }
                    node.sched.arrive(now, a.frame);
                }
                Endpoint::External => self.external_out.push(a.frame),
                Endpoint::Switch(port) => {
                    if let Some(mut sw) = self.switch.take() {
                        let out = sw.forward(now, port, a.frame, &self.links);
                        self.switch = Some(sw);
                        for (link, depart, f) in out {
                            self.record(link, depart, &f);
                            let to = self.links[link].to;
                            for (t, f) in self.links[link].propagate(depart, f) {
                                self.push(t, to, f);
                            }
                        }
                    }
                }
            }
        }
        for i in 0..self.nodes.len() {
            let node = &mut self.nodes[i];
            let frames = node.sched.run(&mut node.nic, &mut node.mem, now, node.trace.as_ref());
            let link = node.out_link;
            for (at, frame) in frames {
                if let Some(c) = self.captured.as_mut() {
                    c.push((at, i, frame.clone()));
                }
                self.send_on(link, at, frame);
            }
        }
        true
    }

    /// Runs until `until` or until nothing is pending.
    pub fn run_until(&mut self, until: Time) {
        self.apply_posted();
        while self.next_time().is_some_and(|t| t <= until) {
            self.step();
        }
        self.now = self.now.max(until);
    }

    /// The seed-derived generator for callers that need randomness tied to this run.
    pub fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }
}
