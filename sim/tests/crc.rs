//! The CRC engine in Verilator at both widths against `wire::icrc::crc32_update` from a zero register:
//! random frames, random input bubbles, frames back to back; and the full-rate case (no bubbles: one frame end per cycle).
//! Set `FERRITE_SEED` to replay a failure; the seed is printed when an assertion fails.

use hdl::crc::latency;
use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::stream::{beats, Driver, StreamPorts};
use sim::Sim;
use wire::icrc::crc32_update;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_C4C0)
}

/// Runs `frames` through the engine after a reset that cuts off a frame half-way in (it must leave nothing
/// behind); returns the CRCs in output order and the cycles taken.
fn run(sim: &mut Sim, lanes: usize, frames: &[Vec<u8>], rng_seed: u64, bubble: f64) -> (Vec<u32>, u64) {
    let ports = StreamPorts::find(sim, "", false);
    let (crc_p, crc_v, reset) = (sim.port("crc"), sim.port("crc_valid"), sim.port("reset"));
    let mut drv = Driver::new(ports, lanes, rng_seed, bubble);
    for f in frames {
        drv.push_frame(f);
    }
    sim.set_bytes(ports.data, &vec![0xA5; lanes]);
    sim.set(ports.keep, if lanes == 64 { u64::MAX } else { (1 << lanes) - 1 });
    sim.set(ports.last, 0);
    sim.set(ports.valid, 1);
    for _ in 0..3 {
        sim.tick();
    }
    sim.set(ports.valid, 0);
    sim.set(reset, 1);
    sim.tick();
    sim.set(reset, 0);
    let start = sim.cycles();
    let mut out = Vec::new();
    let mut idle = 0;
    while out.len() < frames.len() && idle < 1000 {
        drv.drive(sim);
        sim.eval();
        drv.accepted(sim);
        if sim.get(crc_v) != 0 {
            out.push(sim.get(crc_p) as u32);
        }
        sim.tick();
        idle = if drv.pending() == 0 { idle + 1 } else { 0 };
    }
    (out, sim.cycles() - start)
}

fn random_frames(rng: &mut Rng, lanes: usize, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = match i % 3 {
                0 => 1 + rng.below(3 * lanes as u64 + 5) as usize,
                1 => 1 + rng.below(lanes as u64) as usize,
                _ => 1 + rng.below(1500) as usize,
            };
            let mut f = vec![0u8; len];
            rng.fill(&mut f);
            f
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
        for (i, (f, g)) in frames.iter().zip(&got).enumerate() {
            assert_eq!(
                *g,
                crc32_update(0, f),
                "seed {seed}, width {lanes}, bubble {bubble}: frame {i} (len {})",
                f.len()
            );
        }
    }
    // Full rate: every beat in one cycle, one result per frame, nothing from the pipeline itself stalls.
    let frames: Vec<Vec<u8>> = (0..200).map(|i| vec![i as u8; lanes - (i % lanes)]).collect();
    let nbeats: usize = frames.iter().map(|f| beats(f, lanes).len()).sum();
    let (got, cycles) = run(&mut sim, lanes, &frames, seed, 0.0);
    assert_eq!(got.len(), frames.len());
    assert!(frames.iter().zip(&got).all(|(f, g)| *g == crc32_update(0, f)), "seed {seed}, width {lanes}: full rate");
    assert_eq!(
        cycles as usize,
        nbeats + latency(lanes),
        "width {lanes}: one beat per cycle, then the pipeline latency"
    );
}

#[test]
fn crc_engine_8_bytes() {
    check_width(Width::W8);
}

#[test]
fn crc_engine_64_bytes() {
    check_width(Width::W64);
}
