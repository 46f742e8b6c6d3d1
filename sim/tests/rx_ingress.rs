//! The MAC boundary in RTL (`hdl::rx::ingress`) at both widths: random frames from a MAC that cannot be
//! told to wait (any length, some longer than the FIFO, some with a bad FCS, gaps between and within them)
//! into a pipeline that stalls in phases, from never to always. The test follows the pipeline's reads (how
//! many beats have left the FIFO) and holds each frame to the FIFO's rules: a frame is dropped exactly when
//! one of its beats finds the FIFO full, or the MAC flags its FCS; every other frame comes out whole, in
//! order; the counters say how many of each, and clear when told.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test rx_ingress`.

use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::Sim;
use std::collections::VecDeque;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0C4E_1A55)
}

/// A frame as the MAC gives it: its beats (data, keep) and its FCS verdict.
struct Frame {
    beats: Vec<(Vec<u8>, u128)>,
    fcs_bad: bool,
}

fn run(w: Width, frames: usize, seed: u64) {
    let k = w.bytes();
    let depth = Top::rx_ingress_depth(w);
    let mut sim = Sim::new(Top::RxIngress, w);
    let port = |n: &str| sim.port(n);
    let (reset, clear) = (port("reset"), port("clear"));
    let (m_data, m_keep, m_last, m_valid, m_fcs) =
        (port("mac_data"), port("mac_keep"), port("mac_last"), port("mac_valid"), port("mac_fcs_bad"));
    let (o_data, o_keep, o_last, o_valid, o_ready) =
        (port("out_data"), port("out_keep"), port("out_last"), port("out_valid"), port("out_ready"));
    let (c_full, c_fcs, pause) = (port("cnt_full"), port("cnt_bad_fcs"), port("pause"));
    let xoff = hdl::rx::ingress::xoff(depth, k);
    let mut rng = Rng::new(seed);
    let full_keep = if k >= 128 { u128::MAX } else { (1u128 << k) - 1 };
    let todo: Vec<Frame> = (0..frames)
        .map(|_| {
            let n = match rng.below(20) {
                0 => depth + rng.below(depth as u64) as usize,
                1..=3 => 1 + rng.below(depth as u64) as usize,
                _ => 1 + rng.below((depth / 4) as u64) as usize,
            };
            let beats = (0..n)
                .map(|b| {
                    let mut d = vec![0u8; k];
                    rng.fill(&mut d);
                    let keep = if b + 1 == n { full_keep >> rng.below(k as u64) } else { full_keep };
                    (d, keep)
                })
                .collect();
            Frame { beats, fcs_bad: rng.chance(0.1) }
        })
        .collect();
    sim.set(reset, 1);
    sim.tick();
    sim.set(reset, 0);
    // The reference: the FIFO's write side, in beats, following the beats the pipeline has read.
    let (mut wr, mut good, mut dropping) = (0usize, 0usize, false);
    let mut expected: Vec<usize> = Vec::new();
    let (mut want_full, mut want_fcs) = (0u32, 0u32);
    let (mut all_full, mut all_fcs) = (0u32, 0u32);
    let mut taken = 0usize;
    // What comes out.
    let mut got: Vec<Vec<(Vec<u8>, u128)>> = Vec::new();
    let mut cur: Vec<(Vec<u8>, u128)> = Vec::new();
    let mut held: Option<(Vec<u8>, Vec<u8>, u64)> = None;
    let mut mac: VecDeque<(usize, usize)> = VecDeque::new();
    for (i, f) in todo.iter().enumerate() {
        for b in 0..f.beats.len() {
            mac.push_back((i, b));
        }
    }
    let (mut p_ready, mut cycles, mut gap) = (1.0, 0u64, 0u64);
    let mut drain: Option<(u64, usize)> = None;
    // The counters clear as a bad frame ends, so that its count must survive the clear.
    let bad: Vec<usize> = (0..frames).filter(|&i| todo[i].fcs_bad).collect();
    let clear_frame = bad.get(bad.len() / 2).copied();
    while !mac.is_empty() || good != taken || sim.get(o_valid) == 1 {
        cycles += 1;
        assert!(cycles < 50_000_000, "seed {seed} ({w:?}): stuck");
        if cycles % 2000 == 0 {
            p_ready = [0.0, 0.2, 0.7, 1.0][rng.below(4) as usize];
        }
        // Over the MAC's last frames the pipeline waits; once the MAC is done it drains what is left, a beat
        // a cycle.
        if mac.is_empty() && drain.is_none() {
            drain = Some((cycles, good - taken));
        }
        let ready = if mac.is_empty() { true } else { mac.len() > depth && rng.chance(p_ready) };
        sim.set(o_ready, u64::from(ready));
        // The MAC: a gap now and then, within a frame as between frames.
        let beat = if gap > 0 {
            gap -= 1;
            None
        } else if rng.chance(0.1) {
            gap = rng.below(8);
            None
        } else {
            mac.pop_front()
        };
        let clear_now = beat.is_some_and(|(i, b)| Some(i) == clear_frame && b + 1 == todo[i].beats.len());
        sim.set(clear, u64::from(clear_now));
        if clear_now {
            (want_full, want_fcs) = (0, 0);
        }
        match beat {
            Some((i, b)) => {
                let f = &todo[i];
                let (d, keep) = &f.beats[b];
                let last = b + 1 == f.beats.len();
                sim.set_bytes(m_data, d);
                sim.set_bytes(m_keep, &keep.to_le_bytes()[..k.div_ceil(8)]);
                sim.set(m_last, u64::from(last));
                sim.set(m_fcs, u64::from(last && f.fcs_bad));
                sim.set(m_valid, 1);
                // The rules: the beats that have left the RAM are those taken and the one held.
                let rd = taken + sim.get(o_valid) as usize;
                let full = wr - rd == depth;
                assert_eq!(sim.get(pause) == 1, wr - rd > xoff, "seed {seed} ({w:?}): pause at a fill of {}", wr - rd);
                if dropping || full {
                    wr = good;
                    dropping = !last;
                    if last {
                        want_full += 1;
                        all_full += 1;
                    }
                } else if last && f.fcs_bad {
                    wr = good;
                    want_fcs += 1;
                    all_fcs += 1;
                } else {
                    wr += 1;
                    if last {
                        good = wr;
                        expected.push(i);
                    }
                }
            }
            None => sim.set(m_valid, 0),
        }
        sim.eval();
        if sim.get(o_valid) == 1 {
            let now = (sim.get_bytes(o_data), sim.get_bytes(o_keep), sim.get(o_last));
            if let Some(h) = held.take() {
                assert!(h == now, "seed {seed} ({w:?}): the output changed while it waited (cycle {cycles})");
            }
            if ready {
                let keep = now.1.iter().take(16).enumerate().fold(0u128, |a, (i, &b)| a | u128::from(b) << (8 * i));
                cur.push((now.0[..k].to_vec(), keep));
                taken += 1;
                if now.2 == 1 {
                    got.push(std::mem::take(&mut cur));
                }
            } else {
                held = Some(now);
            }
        }
        sim.tick();
    }
    assert!(cur.is_empty(), "seed {seed} ({w:?}): a frame left half out");
    let (from, left) = drain.expect("the MAC finished");
    assert!(left > depth / 2, "seed {seed} ({w:?}): only {left} beats left to drain");
    assert!(
        cycles - from <= left as u64 + 2,
        "seed {seed} ({w:?}): {left} beats took {} cycles to drain",
        cycles - from
    );
    assert_eq!(got.len(), expected.len(), "seed {seed} (FERRITE_SEED={seed}) ({w:?}): frames out");
    for (n, (g, &i)) in got.iter().zip(&expected).enumerate() {
        assert!(*g == todo[i].beats, "seed {seed} ({w:?}): frame {n} out is not frame {i} in");
    }
    let counters = (sim.get(c_full) as u32, sim.get(c_fcs) as u32);
    assert_eq!(counters, (want_full, want_fcs), "seed {seed} ({w:?}): the counters (full, bad FCS)");
    eprintln!(
        "rx_ingress {w:?}: {frames} frames, {} out, {all_full} dropped for room, {all_fcs} for a bad FCS, {cycles} cycles",
        expected.len()
    );
    assert!(all_full > 20 && all_fcs > 20 && expected.len() > frames / 4, "seed {seed} ({w:?}): too few of a kind");
}

#[test]
fn a_full_ingress_drops_whole_frames_8_bytes() {
    run(Width::W8, 1500, seed());
}

#[test]
fn a_full_ingress_drops_whole_frames_64_bytes() {
    run(Width::W64, 3000, seed());
}
