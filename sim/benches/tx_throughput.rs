//! TX pipeline throughput in Verilator: back-to-back frames of one size (records and payload always
//! offered, output always ready): frame beats out per cycle, and Verilator cycles per second.
//! `cargo bench -p ferrite-sim --bench tx_throughput` (figures go to BENCHMARKS.md).

use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::frames::meta_of;
use sim::stream::{beats, Driver, Monitor, StreamPorts};
use sim::Sim;
use std::time::Instant;

fn main() {
    println!("{:>6} {:>6} {:>10} {:>12} {:>12}", "width", "frame", "frames", "beats/cycle", "Mcycles/s");
    for w in Width::ALL {
        let mut sim = Sim::new(Top::Tx, w);
        for size in [64usize, 128, 256, 512, 1024, 1500, 4096] {
            let n = (400_000 / size).max(50);
            let mut rng = Rng::new(size as u64);
            let frames: Vec<Vec<u8>> = (0..n)
                .map(|_| sim::frames::frame(&mut rng, wire::Opcode::SEND_ONLY, false, false, (size - 58) & !3))
                .collect();
            let nbeats: usize = frames.iter().map(|f| beats(f, w.bytes()).len()).sum();
            let (meta_p, meta_v, meta_r) = (sim.port("meta"), sim.port("meta_valid"), sim.port("meta_ready"));
            let mut pay = Driver::new(StreamPorts::find(&sim, "pay_", true), w.bytes(), 0, 0.0);
            let mut mon = Monitor::new(StreamPorts::find(&sim, "out_", true), 0, 0.0);
            let mut metas = std::collections::VecDeque::new();
            for f in &frames {
                let p = wire::parse(f).expect("well formed");
                metas.push_back(meta_of(f, &p));
                pay.push_frame(p.payload);
            }
            let ov = sim.port("out_valid");
            let (mut first, mut last, mut out_beats) = (None, 0, 0usize);
            let start = sim.cycles();
            let wall = Instant::now();
            while mon.frames.len() < n {
                if let Some(m) = metas.front() {
                    sim.set_bytes(meta_p, &m.0);
                }
                sim.set(meta_v, u64::from(!metas.is_empty()));
                pay.drive(&mut sim);
                mon.drive(&mut sim);
                sim.eval();
                if !metas.is_empty() && sim.get(meta_r) != 0 {
                    metas.pop_front();
                }
                if sim.get(ov) != 0 {
                    first.get_or_insert(sim.cycles());
                    last = sim.cycles();
                    out_beats += 1;
                }
                pay.accepted(&sim);
                mon.sample(&sim);
                sim.tick();
            }
            assert_eq!(out_beats, nbeats);
            assert!(mon.frames == frames, "frames out as wire made them");
            mon.frames.clear();
            let span = (last - first.unwrap_or(0) + 1) as f64;
            let secs = wall.elapsed().as_secs_f64();
            println!(
                "{:>6} {:>6} {:>10} {:>12.3} {:>12.2}",
                w.bytes(),
                frames[0].len(),
                n,
                nbeats as f64 / span,
                (sim.cycles() - start) as f64 / secs / 1e6
            );
        }
    }
}
