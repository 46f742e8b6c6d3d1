//! The CRC engine in Verilator at both widths against `wire::icrc::crc32_update`: random frames and seeds,
//! random input bubbles, frames back to back; and the full-rate case (no bubbles: one frame end per cycle).
//! Set `FERRITE_SEED` to replay a failure; the seed is printed when an assertion fails.

use hdl::crc::LATENCY;
use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::stream::{beats, Driver, StreamPorts};
use sim::Sim;
use wire::icrc::crc32_update;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_C4C0)
}

/// Runs `frames` (with per-frame CRC seeds) through the engine; returns the CRCs in output order and the
/// cycles taken.
fn run(sim: &mut Sim, lanes: usize, frames: &[(u32, Vec<u8>)], rng_seed: u64, bubble: f64) -> (Vec<u32>, u64) {
    let ports = StreamPorts::find(sim, "", false);
    let (seed_p, crc_p, crc_v, reset) = (sim.port("seed"), sim.port("crc"), sim.port("crc_valid"), sim.port("reset"));
    let mut drv = Driver::new(ports, lanes, rng_seed, bubble);
    for (_, f) in frames {
        drv.push_frame(f);
    }
    sim.set(reset, 1);
    sim.tick();
    sim.set(reset, 0);
    let start = sim.cycles();
    let mut head = 0; // frame of the beat at the head of the driver
    let mut out = Vec::new();
    let mut idle = 0;
    while out.len() < frames.len() && idle < 1000 {
        drv.drive(sim);
        sim.set(seed_p, u64::from(frames.get(head).map_or(0, |f| f.0)));
        sim.eval();
        if sim.get(crc_v) != 0 {
            out.push(sim.get(crc_p) as u32);
        }
        let last = sim.get(ports.last) != 0 && sim.get(ports.valid) != 0;
        if drv.accepted(sim) && last {
            head += 1;
        }
        sim.tick();
        idle = if drv.pending() == 0 { idle + 1 } else { 0 };
    }
    (out, sim.cycles() - start)
}

fn random_frames(rng: &mut Rng, lanes: usize, n: usize) -> Vec<(u32, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let len = match i % 3 {
                0 => 1 + rng.below(3 * lanes as u64 + 5) as usize,
                1 => 1 + rng.below(lanes as u64) as usize,
                _ => 1 + rng.below(1500) as usize,
            };
            let mut f = vec![0u8; len];
            rng.fill(&mut f);
            (rng.next_u64() as u32, f)
        })
        .collect()
}

fn check_width(w: Width) {
    let seed = seed();
    let lanes = w.bytes();
    let mut sim = Sim::new(Top::Crc, w);
    let mut rng = Rng::new(seed ^ lanes as u64);
    for (round, bubble) in [0.0, 0.3, 0.7].into_iter().enumerate() {
        let frames = random_frames(&mut rng, lanes, 300);
        let (got, _) = run(&mut sim, lanes, &frames, seed.wrapping_add(round as u64), bubble);
        assert_eq!(got.len(), frames.len(), "seed {seed}, width {lanes}, bubble {bubble}: frames lost");
        for (i, ((s, f), g)) in frames.iter().zip(&got).enumerate() {
            assert_eq!(*g, crc32_update(*s, f), "seed {seed}, width {lanes}, bubble {bubble}: frame {i} (len {})", f.len());
        }
    }
    // Full rate: every beat in one cycle, one result per frame, nothing from the pipeline itself stalls.
    let frames: Vec<(u32, Vec<u8>)> = (0..200).map(|i| (i, vec![i as u8; lanes - (i as usize % lanes)])).collect();
    let nbeats: usize = frames.iter().map(|(_, f)| beats(f, lanes).len()).sum();
    let (got, cycles) = run(&mut sim, lanes, &frames, seed, 0.0);
    assert_eq!(got.len(), frames.len());
    assert!(frames.iter().zip(&got).all(|((s, f), g)| *g == crc32_update(*s, f)), "seed {seed}, width {lanes}: full rate");
    assert_eq!(cycles as usize, nbeats + LATENCY, "width {lanes}: one beat per cycle, then the pipeline latency");
}

#[test]
fn crc_engine_8_bytes() {
    check_width(Width::W8);
}

#[test]
fn crc_engine_64_bytes() {
    check_width(Width::W64);
}
