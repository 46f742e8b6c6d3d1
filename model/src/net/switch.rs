//! An output-queued Ethernet switch: MAC learning, one egress FIFO per port drained at the port's link rate,
//! RED-style ECN marking on the egress queue depth (the DCQCN congestion point), and drop-tail at the buffer size.

use super::link::Link;
use crate::rng::Rng;
use crate::Time;
use std::collections::{HashMap, VecDeque};
use wire::eth::EthernetFrame;

/// ECN marking: probability 0 below `kmin_bytes`, rising linearly to `pmax` at `kmax_bytes`, 1 above.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EcnConfig {
    pub kmin_bytes: u64,
    pub kmax_bytes: u64,
    pub pmax: f64,
    /// Egress buffer per port; a frame that would exceed it is dropped.
    pub buffer_bytes: u64,
}

impl Default for EcnConfig {
    fn default() -> Self {
        // DCQCN paper values: Kmin 5 KB, Kmax 200 KB, Pmax 1%.
        EcnConfig { kmin_bytes: 5_000, kmax_bytes: 200_000, pmax: 0.01, buffer_bytes: 4 << 20 }
    }
}

impl EcnConfig {
    pub fn mark_probability(&self, q: u64) -> f64 {
        if q <= self.kmin_bytes {
            0.0
        } else if q > self.kmax_bytes {
            1.0
        } else {
            self.pmax * (q - self.kmin_bytes) as f64 / (self.kmax_bytes - self.kmin_bytes).max(1) as f64
        }
    }
}

pub(crate) struct EgressPort {
    pub link: usize,
    /// (time the frame finishes leaving, its length) for frames not yet gone.
    queue: VecDeque<(Time, u64)>,
    queued_bytes: u64,
    busy_until: Time,
    pub peak_bytes: u64,
    pub marked: u64,
    pub dropped: u64,
}

pub(crate) struct Switch {
    pub ports: Vec<EgressPort>,
    macs: HashMap<[u8; 6], usize>,
    pub ecn: EcnConfig,
    rng: Rng,
}

impl Switch {
    pub fn new(ecn: EcnConfig, rng: Rng) -> Self {
        Switch { ports: Vec::new(), macs: HashMap::new(), ecn, rng }
    }

    pub fn add_port(&mut self, link: usize) -> usize {
        self.ports.push(EgressPort {
            link,
            queue: VecDeque::new(),
            queued_bytes: 0,
            busy_until: 0,
            peak_bytes: 0,
            marked: 0,
            dropped: 0,
        });
        self.ports.len() - 1
    }

    /// A frame arrived on `ingress` at `now`: returns the (egress link, departure time, frame) list.
    pub fn forward(
        &mut self,
        now: Time,
        ingress: usize,
        mut frame: Vec<u8>,
        links: &[Link],
    ) -> Vec<(usize, Time, Vec<u8>)> {
        let Ok(eth) = EthernetFrame::new_checked(&frame[..]) else { return Vec::new() };
        let (dst, src) = (eth.dst(), eth.src());
        self.macs.insert(src, ingress);
        let targets: Vec<usize> = match self.macs.get(&dst) {
            Some(&p) if p != ingress => vec![p],
            Some(_) => Vec::new(),
            None => (0..self.ports.len()).filter(|&p| p != ingress).collect(),
        };
        let mut out = Vec::new();
        for p in targets {
            let port = &mut self.ports[p];
            while port.queue.front().is_some_and(|&(t, _)| t <= now) {
                if let Some((_, b)) = port.queue.pop_front() {
                    port.queued_bytes -= b;
                }
            }
            let len = frame.len() as u64;
            if port.queued_bytes + len > self.ecn.buffer_bytes {
                port.dropped += 1;
                continue;
            }
            let mut f = frame.clone();
            if self.rng.chance(self.ecn.mark_probability(port.queued_bytes)) && wire::roce::mark_ce(&mut f) {
                port.marked += 1;
            }
            let start = now.max(port.busy_until);
            port.busy_until = start + links[port.link].ser_time(f.len());
            port.queue.push_back((port.busy_until, len));
            port.queued_bytes += len;
            port.peak_bytes = port.peak_bytes.max(port.queued_bytes);
            out.push((port.link, port.busy_until, f));
        }
        frame.clear();
        out
    }

    /// Bytes queued on a port at `now`.
    pub fn queue_bytes(&self, port: usize, now: Time) -> u64 {
        self.ports.get(port).map_or(0, |p| p.queue.iter().filter(|&&(t, _)| t > now).map(|&(_, b)| b).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn red_profile() {
        let e = EcnConfig { kmin_bytes: 100, kmax_bytes: 200, pmax: 0.5, buffer_bytes: 1000 };
        assert_eq!(e.mark_probability(100), 0.0);
        assert!((e.mark_probability(150) - 0.25).abs() < 1e-9);
        assert_eq!(e.mark_probability(201), 1.0);
    }
}
