//! Stream stimulus and capture: frames cut into beats of `K` byte lanes (keep contiguous from lane 0, a
//! partial beat only at the end), driven with seeded random bubbles (`valid` low) and captured with seeded
//! random back-pressure (`ready` low).

use crate::Sim;
use model::rng::Rng;
use std::collections::VecDeque;

/// One beat of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Beat {
    pub data: Vec<u8>,
    /// Bit `i` set = lane `i` valid.
    pub keep: u64,
    pub last: bool,
}

/// Cuts `frame` into beats of `lanes` bytes. An empty frame has no beats.
pub fn beats(frame: &[u8], lanes: usize) -> Vec<Beat> {
    let n = frame.len().div_ceil(lanes);
    frame
        .chunks(lanes)
        .enumerate()
        .map(|(i, c)| Beat {
            data: c.to_vec(),
            keep: if c.len() == 64 { u64::MAX } else { (1u64 << c.len()) - 1 },
            last: i + 1 == n,
        })
        .collect()
}

/// The port numbers of one stream interface (`<prefix>data`, `keep`, `last`, `valid`, optional `ready`).
#[derive(Debug, Clone, Copy)]
pub struct StreamPorts {
    pub data: usize,
    pub keep: usize,
    pub last: usize,
    pub valid: usize,
    pub ready: Option<usize>,
}

impl StreamPorts {
    /// Looks the ports up by name; `ready` only if the top has it.
    pub fn find(sim: &Sim, prefix: &str, with_ready: bool) -> Self {
        let p = |n: &str| sim.port(&format!("{prefix}{n}"));
        StreamPorts {
            data: p("data"),
            keep: p("keep"),
            last: p("last"),
            valid: p("valid"),
            ready: with_ready.then(|| p("ready")),
        }
    }
}

/// Drives queued frames into a stream input, inserting a bubble before a beat with probability `bubble`.
pub struct Driver {
    ports: StreamPorts,
    lanes: usize,
    queue: VecDeque<Beat>,
    rng: Rng,
    bubble: f64,
    /// The beat on the bus this cycle, if any.
    offered: bool,
}

impl Driver {
    pub fn new(ports: StreamPorts, lanes: usize, seed: u64, bubble: f64) -> Self {
        Driver { ports, lanes, queue: VecDeque::new(), rng: Rng::new(seed), bubble, offered: false }
    }

    pub fn push_frame(&mut self, frame: &[u8]) {
        self.queue.extend(beats(frame, self.lanes));
    }

    /// Beats not yet accepted.
    pub fn pending(&self) -> usize {
        self.queue.len()
    }

    /// Sets the bus for the coming edge. Call before `Sim::tick`, then `accepted` after `Sim::eval`.
    pub fn drive(&mut self, sim: &mut Sim) {
        let b = self.queue.front().filter(|_| !self.rng.chance(self.bubble));
        self.offered = b.is_some();
        match b {
            Some(b) => {
                sim.set_bytes(self.ports.data, &b.data);
                sim.set(self.ports.keep, b.keep);
                sim.set(self.ports.last, u64::from(b.last));
                sim.set(self.ports.valid, 1);
            }
            None => {
                sim.set(self.ports.valid, 0);
                sim.set(self.ports.last, 0);
                sim.set(self.ports.keep, 0);
            }
        }
    }

    /// Whether the beat offered this cycle is taken at the edge (`ready` read after `Sim::eval`); pops it.
    pub fn accepted(&mut self, sim: &Sim) -> bool {
        let ready = self.ports.ready.is_none_or(|r| sim.get(r) != 0);
        let fired = self.offered && ready;
        if fired {
            self.queue.pop_front();
        }
        fired
    }
}

/// Captures frames from a stream output, holding `ready` low with probability `stall`.
pub struct Monitor {
    ports: StreamPorts,
    rng: Rng,
    stall: f64,
    ready: bool,
    cur: Vec<u8>,
    pub frames: Vec<Vec<u8>>,
    /// Cycles in which the bus had no beat in the middle of a frame (a MAC would underrun).
    pub pauses: u64,
}

impl Monitor {
    pub fn new(ports: StreamPorts, seed: u64, stall: f64) -> Self {
        Monitor { ports, rng: Rng::new(seed), stall, ready: true, cur: Vec::new(), frames: Vec::new(), pauses: 0 }
    }

    /// Sets `ready` for the coming edge.
    pub fn drive(&mut self, sim: &mut Sim) {
        self.ready = !self.rng.chance(self.stall);
        if let Some(r) = self.ports.ready {
            sim.set(r, u64::from(self.ready));
        }
    }

    /// Samples the bus (after `Sim::eval`, before `Sim::tick`); a transferred beat is kept.
    pub fn sample(&mut self, sim: &Sim) {
        if sim.get(self.ports.valid) == 0 {
            self.pauses += u64::from(!self.cur.is_empty());
            return;
        }
        if !self.ready {
            return;
        }
        let data = sim.get_bytes(self.ports.data);
        let keep = sim.get(self.ports.keep);
        for (i, b) in data.iter().enumerate() {
            if keep >> i & 1 != 0 {
                self.cur.push(*b);
            }
        }
        if sim.get(self.ports.last) != 0 {
            self.frames.push(std::mem::take(&mut self.cur));
        }
    }
}

/// The posted DMA write port of a block (`wr_valid`, `wr_ready`, `wr_addr`, `wr_data`, `wr_strb`,
/// `wr_last`), with seeded random back-pressure.
pub struct WritePort {
    valid: usize,
    ready: usize,
    addr: usize,
    data: usize,
    strb: usize,
    last: usize,
    lanes: usize,
    stall: f64,
    rng: Rng,
}

/// A write beat taken from a `WritePort`: its bytes by address (the lanes its strobe names), and whether it
/// ends its write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteBeat {
    pub addr: u64,
    pub bytes: Vec<(u64, u8)>,
    pub last: bool,
}

impl WritePort {
    /// The ports of `sim`, whose beats are `lanes` bytes wide; `ready` is low with probability `stall`.
    pub fn find(sim: &Sim, lanes: usize, seed: u64, stall: f64) -> Self {
        let p = |n: &str| sim.port(&format!("wr_{n}"));
        WritePort {
            valid: p("valid"),
            ready: p("ready"),
            addr: p("addr"),
            data: p("data"),
            strb: p("strb"),
            last: p("last"),
            lanes,
            stall,
            rng: Rng::new(seed),
        }
    }

    /// Sets `ready` for this cycle (before `Sim::eval`).
    pub fn drive(&mut self, sim: &mut Sim) -> bool {
        let ready = !self.rng.chance(self.stall);
        sim.set(self.ready, u64::from(ready));
        ready
    }

    /// The beat taken this cycle (after `Sim::eval`, with `ready` as `drive` set it), if any.
    pub fn take(&self, sim: &Sim, ready: bool) -> Option<WriteBeat> {
        if !ready || sim.get(self.valid) == 0 {
            return None;
        }
        let (addr, data, strb) = (sim.get(self.addr), sim.get_bytes(self.data), sim.get_bytes(self.strb));
        let bytes = (0..self.lanes)
            .filter(|&l| strb[l / 8] >> (l % 8) & 1 == 1)
            .map(|l| (addr.wrapping_add(l as u64), data[l]))
            .collect();
        Some(WriteBeat { addr, bytes, last: sim.get(self.last) == 1 })
    }
}

/// Host memory that only records the writes made to it: the model's, for a block whose DMA writes are
/// checked against them (`OwedWrites`). Reading it is a test's bug.
#[derive(Default)]
pub struct RecordedWrites(pub Vec<(u64, Vec<u8>)>);

impl model::hostmem::Dma for RecordedWrites {
    fn dma_read(&self, iova: u64, _buf: &mut [u8]) -> Result<(), model::hostmem::DmaError> {
        unreachable!("a read at {iova:#x} of memory that only records writes")
    }
    fn dma_write(&mut self, iova: u64, data: &[u8]) {
        self.0.push((iova, data.to_vec()));
    }
}

/// The DMA writes a block owes (the model's, in order) held against the beats it writes: each write's bytes
/// in beats of its own ending in `last`, every byte once, where the model wrote it.
#[derive(Default)]
pub struct OwedWrites {
    owed: VecDeque<(u64, Vec<u8>)>,
    got: std::collections::BTreeMap<u64, u8>,
}

impl OwedWrites {
    /// Writes the model made, after those owed already.
    pub fn extend(&mut self, writes: impl IntoIterator<Item = (u64, Vec<u8>)>) {
        self.owed.extend(writes);
    }

    /// No write owed and none half written.
    pub fn is_empty(&self) -> bool {
        self.owed.is_empty() && self.got.is_empty()
    }

    /// Takes a beat of `lanes` bytes; what differs from the model's writes, if anything.
    pub fn beat(&mut self, b: WriteBeat, lanes: usize) -> Result<(), String> {
        if !b.addr.is_multiple_of(lanes as u64) {
            return Err(format!("a write beat at {:#x}, not beat-aligned", b.addr));
        }
        for (at, x) in b.bytes {
            if self.got.insert(at, x).is_some() {
                return Err(format!("byte {at:#x} written twice"));
            }
        }
        if b.last {
            let (at, bytes) = self.owed.pop_front().ok_or("a write the model did not make")?;
            let want: std::collections::BTreeMap<u64, u8> =
                bytes.iter().enumerate().map(|(i, &b)| (at.wrapping_add(i as u64), b)).collect();
            if std::mem::take(&mut self.got) != want {
                return Err(format!("the write at {at:#x} differs from the model's"));
            }
        }
        Ok(())
    }
}
