//! A one-way link: serialisation at its rate, propagation delay, and seeded impairments applied as a layer.

use crate::rng::Rng;
use crate::Time;

/// Random faults on a link, each a per-frame probability.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Impairments {
    pub loss: f64,
    pub reorder: f64,
    pub duplicate: f64,
    pub corrupt: f64,
}

impl Impairments {
    /// Whether any fault is set.
    pub fn any(&self) -> bool {
        *self != Impairments::default()
    }
}

/// A fault aimed at one frame, for targeted tests (duplicates, out-of-sequence arrival, one loss).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameFault {
    Drop,
    /// The frame arrives twice, the copy one frame time later.
    Duplicate,
    /// The frame arrives this many picoseconds late, so the frames behind it overtake it.
    Delay(Time),
}

/// Rate, delay and faults of a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    pub gbps: f64,
    pub delay_ns: u64,
    pub faults: Impairments,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig { gbps: 100.0, delay_ns: 1000, faults: Impairments::default() }
    }
}

/// What a link did to the frames it carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    pub frames: u64,
    pub bytes: u64,
    pub lost: u64,
    pub reordered: u64,
    pub duplicated: u64,
    pub corrupted: u64,
}

/// Where a link ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Nic(usize),
    Switch(usize),
    /// Out of the simulation: a real link the caller carries frames to (`World::attached`).
    External,
}

pub(crate) struct Link {
    pub cfg: LinkConfig,
    pub to: Endpoint,
    busy_until: Time,
    rng: Rng,
    pub stats: LinkStats,
    pub tap: bool,
    /// Faults for particular frames, by their index on this link (0 = first frame ever carried).
    pub script: Vec<(u64, FrameFault)>,
}

/// Bytes on the wire per frame beyond the frame itself (preamble, FCS, IFG).
const WIRE_OVERHEAD: usize = crate::nic::WIRE_OVERHEAD;

impl Link {
    pub fn new(cfg: LinkConfig, to: Endpoint, rng: Rng) -> Self {
        Link { cfg, to, busy_until: 0, rng, stats: LinkStats::default(), tap: false, script: Vec::new() }
    }

    /// Picoseconds to serialise `len` bytes.
    pub fn ser_time(&self, len: usize) -> Time {
        (((len.max(60) + WIRE_OVERHEAD) * 8) as f64 * 1000.0 / self.cfg.gbps.max(1e-6)) as Time
    }

    /// Queues a frame for transmission at `now`; returns (arrival time, frame) for every copy that arrives.
    pub fn send(&mut self, now: Time, frame: Vec<u8>) -> Vec<(Time, Vec<u8>)> {
        let start = now.max(self.busy_until);
        self.busy_until = start + self.ser_time(frame.len());
        let done = self.busy_until;
        self.propagate(done, frame)
    }

    /// A frame fully sent at `departed` (serialisation already accounted): apply faults and delay.
    pub fn propagate(&mut self, departed: Time, mut frame: Vec<u8>) -> Vec<(Time, Vec<u8>)> {
        let index = self.stats.frames;
        self.stats.frames += 1;
        self.stats.bytes += frame.len() as u64;
        let scripted = self.script.iter().position(|&(i, _)| i == index).map(|k| self.script.swap_remove(k).1);
        let f = self.cfg.faults;
        if scripted == Some(FrameFault::Drop) || self.rng.chance(f.loss) {
            self.stats.lost += 1;
            return Vec::new();
        }
        if self.rng.chance(f.corrupt) && !frame.is_empty() {
            let bit = self.rng.below(frame.len() as u64 * 8);
            frame[(bit / 8) as usize] ^= 1 << (bit % 8);
            self.stats.corrupted += 1;
        }
        let mut arrive = departed + self.cfg.delay_ns * 1000;
        if let Some(FrameFault::Delay(ps)) = scripted {
            arrive += ps;
            self.stats.reordered += 1;
        }
        if self.rng.chance(f.reorder) {
            // Hold this frame back by a few frame times so later ones overtake it.
            arrive += self.ser_time(frame.len()) * (2 + self.rng.below(8));
            self.stats.reordered += 1;
        }
        let mut out = Vec::with_capacity(2);
        if scripted == Some(FrameFault::Duplicate) || self.rng.chance(f.duplicate) {
            self.stats.duplicated += 1;
            out.push((arrive + self.ser_time(frame.len()), frame.clone()));
        }
        out.push((arrive, frame));
        out
    }
}
