//! RX pipeline throughput in Verilator: back-to-back frames of one size (no input bubbles, outputs always
//! ready), input beats accepted per cycle and payload bytes out per cycle, and Verilator cycles per second.
//! `cargo bench -p ferrite-sim --bench rx_throughput` (figures go to BENCHMARKS.md).

use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::stream::{beats, Driver, Monitor, StreamPorts};
use sim::Sim;
use std::time::Instant;

/// A SEND_ONLY frame of about `total` bytes (IPv4, no VLAN: 58 bytes of headers and ICRC, the payload a
/// multiple of 4 so there is no pad).
fn frame_of(rng: &mut Rng, total: usize) -> Vec<u8> {
    sim::frames::frame(rng, wire::Opcode::SEND_ONLY, false, false, (total - 58) & !3)
}

fn main() {
    println!(
        "{:>6} {:>6} {:>10} {:>12} {:>14} {:>12}",
        "width", "frame", "frames", "beats/cycle", "payload B/cyc", "Mcycles/s"
    );
    for w in Width::ALL {
        let mut sim = Sim::new(Top::Rx, w);
        for size in [64usize, 128, 256, 512, 1024, 1500, 4096] {
            let n = (400_000 / size).max(50);
            let mut rng = Rng::new(size as u64);
            let frames: Vec<Vec<u8>> = (0..n).map(|_| frame_of(&mut rng, size)).collect();
            let nbeats: usize = frames.iter().map(|f| beats(f, w.bytes()).len()).sum();
            let mut drv = Driver::new(StreamPorts::find(&sim, "in_", true), w.bytes(), 0, 0.0);
            let mut mon = Monitor::new(StreamPorts::find(&sim, "out_", true), 0, 0.0);
            for f in &frames {
                drv.push_frame(f);
            }
            let (mv, mr) = (sim.port("meta_valid"), sim.port("meta_ready"));
            let start = sim.cycles();
            let wall = Instant::now();
            let (mut first_in, mut last_in) = (None, 0);
            let mut records = 0;
            while records < n {
                drv.drive(&mut sim);
                mon.drive(&mut sim);
                sim.set(mr, 1);
                sim.eval();
                records += usize::from(sim.get(mv) != 0);
                mon.sample(&sim);
                if drv.accepted(&sim) {
                    first_in.get_or_insert(sim.cycles());
                    last_in = sim.cycles();
                }
                sim.tick();
            }
            let cycles = sim.cycles() - start;
            let secs = wall.elapsed().as_secs_f64();
            let in_span = (last_in - first_in.unwrap_or(0) + 1) as f64;
            let payload: usize = mon.frames.iter().map(Vec::len).sum();
            mon.frames.clear();
            println!(
                "{:>6} {:>6} {:>10} {:>12.3} {:>14.2} {:>12.2}",
                w.bytes(),
                frames[0].len(),
                n,
                nbeats as f64 / in_span,
                payload as f64 / in_span,
                cycles as f64 / secs / 1e6
            );
        }
    }
}
