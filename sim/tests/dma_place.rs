//! Payload placement in host memory in RTL (`hdl::host::place`) against what the model's `Nic::place` does
//! (the payload's bytes at its address, and nothing else written), at both widths: random payloads (every
//! length from 1 byte to a 4096-byte packet and beyond, every start offset in a beat), back to back, with
//! random bubbles on the input and random back-pressure on the write port. Each payload must take the
//! fewest write beats there can be, at rising beat-aligned addresses, its last one flagged.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test dma_place`.

use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::Sim;
use std::collections::{HashMap, VecDeque};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0C4E_D3A0)
}

/// A payload and where it goes.
struct Payload {
    va: u64,
    data: Vec<u8>,
}

/// A write beat the RTL issued.
struct Beat {
    addr: u64,
    data: Vec<u8>,
    strb: u128,
    last: bool,
}

/// Runs `payloads` random payloads through the block; `pressure` draws the rates of input bubbles and write
/// stalls from the seed (else there are none). The write beats and the cycles taken.
fn run(w: Width, payloads: usize, seed: u64, pressure: bool) -> (u64, u64) {
    let k = w.bytes();
    let mut sim = Sim::new(Top::DmaPlace, w);
    let port = |n: &str| sim.port(n);
    let (reset, in_data, in_keep, in_last, in_valid, in_ready, va) = (
        port("reset"),
        port("in_data"),
        port("in_keep"),
        port("in_last"),
        port("in_valid"),
        port("in_ready"),
        port("va"),
    );
    let (wr_valid, wr_ready, wr_addr, wr_data, wr_strb, wr_last) =
        (port("wr_valid"), port("wr_ready"), port("wr_addr"), port("wr_data"), port("wr_strb"), port("wr_last"));
    let mut rng = Rng::new(seed);
    let (bubble, stall) =
        if pressure { (rng.below(50) as f64 / 100.0, rng.below(50) as f64 / 100.0) } else { (0.0, 0.0) };
    let todo: Vec<Payload> = (0..payloads)
        .map(|_| {
            let len = match rng.below(4) {
                0 => 1 + rng.below(2 * k as u64) as usize,
                1 => 4096,
                _ => 1 + rng.below(5000) as usize,
            };
            let mut data = vec![0u8; len];
            rng.fill(&mut data);
            let va = if rng.chance(0.05) { u64::MAX - len as u64 - rng.below(256) } else { rng.next_u64() >> 8 };
            Payload { va, data }
        })
        .collect();
    sim.set(reset, 1);
    sim.tick();
    sim.set(reset, 0);
    // The input: every payload's beats in order.
    let mut beats: VecDeque<(usize, usize)> = VecDeque::new();
    for (i, p) in todo.iter().enumerate() {
        for b in 0..p.data.len().div_ceil(k) {
            beats.push_back((i, b));
        }
    }
    let mut out: Vec<Vec<Beat>> = (0..payloads).map(|_| Vec::new()).collect();
    let mut done = 0usize;
    let mut cycles = 0u64;
    let mut held: Option<Beat> = None;
    let limit = 100 * beats.len() as u64 + 10_000;
    while done < payloads {
        cycles += 1;
        assert!(cycles < limit, "seed {seed} ({w:?}): stuck after {done} payloads");
        let offer = beats.front().copied().filter(|_| !rng.chance(bubble));
        match offer {
            Some((i, b)) => {
                let p = &todo[i];
                let chunk = &p.data[b * k..((b + 1) * k).min(p.data.len())];
                // Lanes past the payload hold anything: the strobes must leave them out.
                let mut bytes = vec![0u8; k];
                rng.fill(&mut bytes);
                bytes[..chunk.len()].copy_from_slice(chunk);
                sim.set_bytes(in_data, &bytes);
                let keep: u128 =
                    if chunk.len() == k { u128::MAX >> (128 - k.min(128)) } else { (1u128 << chunk.len()) - 1 };
                sim.set_bytes(in_keep, &keep.to_le_bytes()[..k.div_ceil(8)]);
                sim.set(in_last, u64::from((b + 1) * k >= p.data.len()));
                // The address counts on a payload's first beat only.
                sim.set(va, if b == 0 { p.va } else { rng.next_u64() });
                sim.set(in_valid, 1);
            }
            None => {
                sim.set(va, rng.next_u64());
                sim.set(in_valid, 0);
            }
        }
        let ready = !rng.chance(stall);
        sim.set(wr_ready, u64::from(ready));
        sim.eval();
        let took = offer.is_some() && sim.get(in_ready) == 1;
        if sim.get(wr_valid) == 1 {
            let strb_bytes = sim.get_bytes(wr_strb);
            let strb = strb_bytes.iter().take(16).enumerate().fold(0u128, |a, (i, &b)| a | u128::from(b) << (8 * i));
            let beat = Beat { addr: sim.get(wr_addr), data: sim.get_bytes(wr_data), strb, last: sim.get(wr_last) == 1 };
            // A beat offered is held as it is until it is taken.
            if let Some(h) = held.take() {
                assert!(
                    (h.addr, &h.data, h.strb, h.last) == (beat.addr, &beat.data, beat.strb, beat.last),
                    "seed {seed} ({w:?}): a write beat changed while it waited (cycle {cycles})"
                );
            }
            if !ready {
                held = Some(beat);
                sim.tick();
                if took {
                    beats.pop_front();
                }
                continue;
            }
            let last = beat.last;
            out[done].push(beat);
            if last {
                done += 1;
            }
        } else {
            assert!(held.is_none(), "seed {seed} ({w:?}): a write beat withdrawn before it was taken (cycle {cycles})");
        }
        if took {
            beats.pop_front();
        }
        sim.tick();
    }
    // Each payload's beats against the bytes `place` writes.
    let mut total_beats = 0u64;
    for (i, (p, got)) in todo.iter().zip(&out).enumerate() {
        let ctx =
            || format!("seed {seed} (FERRITE_SEED={seed}), {w:?}, payload {i} ({} bytes at {:#x})", p.data.len(), p.va);
        let off = (p.va % k as u64) as usize;
        assert_eq!(got.len(), (off + p.data.len()).div_ceil(k), "{}: write beats", ctx());
        let mut mem: HashMap<u64, u8> = HashMap::new();
        for (j, b) in got.iter().enumerate() {
            assert_eq!(b.addr, (p.va - off as u64).wrapping_add((j * k) as u64), "{}: beat {j}'s address", ctx());
            assert_eq!(b.last, j + 1 == got.len(), "{}: beat {j}'s last flag", ctx());
            for lane in (0..k).filter(|&l| b.strb >> l & 1 == 1) {
                assert!(
                    mem.insert(b.addr.wrapping_add(lane as u64), b.data[lane]).is_none(),
                    "{}: a byte written twice",
                    ctx()
                );
            }
        }
        let want: HashMap<u64, u8> =
            p.data.iter().enumerate().map(|(j, &x)| (p.va.wrapping_add(j as u64), x)).collect();
        assert_eq!(mem.len(), want.len(), "{}: bytes written", ctx());
        assert!(mem == want, "{}: the bytes written differ from the payload's", ctx());
        total_beats += got.len() as u64;
    }
    (total_beats, cycles)
}

fn check_width(w: Width, payloads: usize) {
    let seed = seed();
    let (beats, cycles) = run(w, payloads, seed, true);
    eprintln!("dma_place {w:?}: {payloads} payloads with bubbles and stalls, {beats} write beats, {cycles} cycles");
    // Unhindered, a write beat leaves every cycle: the input waits only while a carry is written.
    let (beats, cycles) = run(w, payloads, seed ^ 1, false);
    eprintln!("dma_place {w:?}: {payloads} payloads unhindered, {beats} write beats, {cycles} cycles");
    assert!(cycles <= beats + 2, "seed {seed} ({w:?}): {beats} write beats took {cycles} cycles");
}

#[test]
fn payloads_land_where_place_puts_them_8_bytes() {
    check_width(Width::W8, 400);
}

#[test]
fn payloads_land_where_place_puts_them_64_bytes() {
    check_width(Width::W64, 1500);
}
