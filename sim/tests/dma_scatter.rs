//! A payload scattered over a list of SGEs in RTL (`hdl::host::scatter::DmaScatter`) against the model's
//! `qp::scatter_pieces` (what `Nic::scatter` places), at both widths: random lists (up to 16 SGEs, some of
//! no length, some of a byte or a few, some of nearly 4 GiB, any address; the port's entries past the list
//! holding stale SGEs), random message offsets and payload lengths that fit
//! or do not, random bubbles on the input and back-pressure on the write port. `fits` must be the model's;
//! the bytes written exactly the model's pieces (none when the payload does not fit), each piece in the
//! fewest write beats there can be, its last one flagged.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test dma_scatter`.

use hdl::engine::resp::recv_wqe::MAX_SGE;
use hdl::top::Top;
use hdl::Width;
use model::nic::qp::{scatter_pieces, Sge};
use model::rng::Rng;
use sim::responder::sges_bytes;
use sim::stream::WritePort;
use sim::Sim;
use std::collections::BTreeMap;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5CA7_7E12)
}

fn random_sges(rng: &mut Rng, k: usize) -> Vec<Sge> {
    let n = if rng.chance(0.1) { MAX_SGE } else { rng.below(MAX_SGE as u64 + 1) as usize };
    (0..n)
        .map(|_| {
            let length = match rng.below(6) {
                _ if rng.chance(0.03) => u32::MAX - rng.below(8) as u32,
                0 => 0,
                1 => 1 + rng.below(3) as u32,
                2 => 1 + rng.below(2 * k as u64) as u32,
                _ => 1 + rng.below(3000) as u32,
            };
            Sge { addr: rng.next_u64() >> 2, lkey: 0, length }
        })
        .collect()
}

/// The SGEs as the `sges` port carries them, the entries past them anything (`RecvWqe` leaves the last
/// WQE's there).
fn sges_bus(sges: &[Sge], rng: &mut Rng) -> Vec<u8> {
    let stale =
        (sges.len()..MAX_SGE).map(|_| Sge { addr: rng.next_u64(), lkey: 0, length: 1 + rng.next_u64() as u32 % 5000 });
    sges_bytes(&sges.iter().copied().chain(stale).collect::<Vec<_>>())
}

/// Scatters `payloads` random payloads; returns (payloads that fit, pieces, write beats, cycles).
fn run(w: Width, payloads: usize, seed: u64) -> (u64, u64, u64, u64) {
    let k = w.bytes();
    let mut sim = Sim::new(Top::DmaScatter, w);
    let port = |n: &str| sim.port(n);
    let (reset, start, p_sges, p_count, p_off, p_len, busy, fits) = (
        port("reset"),
        port("start"),
        port("sges"),
        port("count"),
        port("off"),
        port("len"),
        port("busy"),
        port("fits"),
    );
    let (in_data, in_keep, in_last, in_valid, in_ready) =
        (port("in_data"), port("in_keep"), port("in_last"), port("in_valid"), port("in_ready"));
    let mut rng = Rng::new(seed);
    let (bubble, stall) = (rng.below(60) as f64 / 100.0, rng.below(60) as f64 / 100.0);
    let mut wr = WritePort::find(&sim, k, seed, stall);
    sim.set(reset, 1);
    sim.tick();
    sim.set(reset, 0);
    let (mut fitted, mut pieces_n, mut beats_n) = (0u64, 0u64, 0u64);
    for n in 0..payloads {
        let ctx = |what: &str| format!("seed {seed} (FERRITE_SEED={seed}), {w:?}, payload {n}: {what}");
        let sges = random_sges(&mut rng, k);
        let total: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
        let off = match rng.below(4) {
            0 => 0,
            _ => rng.below(total.min(u64::from(u32::MAX)) + 2 * k as u64 + 1).min(u64::from(u32::MAX)) as u32,
        };
        // At most a 4 KiB packet's payload (and a byte): lists of nearly 4 GiB are reached through the offset.
        let rest = total.saturating_sub(u64::from(off)).min(4097) as usize;
        let len = match rng.below(8) {
            0 => 0,
            1 => 1 + rng.below(2 * k as u64) as usize,
            2 => rest,
            3 => rest + 1,
            _ => 1 + rng.below(4097) as usize,
        };
        let mut payload = vec![0u8; len];
        rng.fill(&mut payload);
        let want = scatter_pieces(&sges, off, len);

        assert_eq!(sim.get(busy), 0, "{}", ctx("busy before the start"));
        sim.set_bytes(p_sges, &sges_bus(&sges, &mut rng));
        sim.set(p_count, sges.len() as u64);
        sim.set(p_off, u64::from(off));
        sim.set(p_len, len as u64);
        sim.set(start, 1);
        sim.tick();
        sim.set(start, 0);
        sim.eval();
        assert_eq!(sim.get(fits) == 1, want.is_some(), "{}", ctx("fits"));

        let mut beat = 0usize;
        let nbeats = len.div_ceil(k);
        let mut got: BTreeMap<u64, u8> = BTreeMap::new();
        let (mut wbeats, mut lasts) = (0u64, 0u64);
        let mut cycles = 0u64;
        while beat < nbeats || sim.get(busy) == 1 {
            cycles += 1;
            assert!(cycles < 50 * (nbeats as u64 + 40), "{}", ctx("stuck"));
            let offer = beat < nbeats && !rng.chance(bubble);
            if offer {
                let chunk = &payload[beat * k..((beat + 1) * k).min(len)];
                let mut bytes = vec![0u8; k];
                rng.fill(&mut bytes);
                bytes[..chunk.len()].copy_from_slice(chunk);
                sim.set_bytes(in_data, &bytes);
                let keep: u128 = if chunk.len() == k { u128::MAX >> (128 - k) } else { (1u128 << chunk.len()) - 1 };
                sim.set_bytes(in_keep, &keep.to_le_bytes()[..k.div_ceil(8)]);
                sim.set(in_last, u64::from(beat + 1 == nbeats));
            }
            sim.set(in_valid, u64::from(offer));
            let ready = wr.drive(&mut sim);
            sim.eval();
            if offer && sim.get(in_ready) == 1 {
                beat += 1;
            }
            if let Some(b) = wr.take(&sim, ready) {
                assert_eq!(b.addr % k as u64, 0, "{}", ctx("a write beat's address is beat-aligned"));
                assert!(!b.bytes.is_empty(), "{}", ctx("a write beat with no byte"));
                for (at, x) in b.bytes {
                    assert!(got.insert(at, x).is_none(), "{}", ctx(&format!("byte {at:#x} written twice")));
                }
                wbeats += 1;
                lasts += u64::from(b.last);
            }
            sim.tick();
        }
        sim.eval();
        let (want_bytes, want_beats, want_pieces) = match &want {
            Some(pieces) => {
                let mut m = BTreeMap::new();
                let mut beats = 0u64;
                for &(addr, a, b) in pieces {
                    for (i, &x) in payload[a..b].iter().enumerate() {
                        m.insert(addr + i as u64, x);
                    }
                    beats += ((addr % k as u64) as usize + (b - a)).div_ceil(k) as u64;
                }
                (m, beats, pieces.len() as u64)
            }
            None => (BTreeMap::new(), 0, 0),
        };
        assert!(got == want_bytes, "{}", ctx(&format!("bytes written (SGEs {sges:?}, off {off}, len {len})")));
        assert_eq!((wbeats, lasts), (want_beats, want_pieces), "{}", ctx("write beats and pieces"));
        fitted += u64::from(want.is_some());
        pieces_n += want_pieces;
        beats_n += wbeats;
    }
    (fitted, pieces_n, beats_n, sim.cycles())
}

fn check_width(w: Width, payloads: usize) {
    let seed = seed();
    let (fitted, pieces, beats, cycles) = run(w, payloads, seed);
    eprintln!(
        "dma_scatter {w:?}: {payloads} payloads, {fitted} fit, {pieces} pieces, {beats} write beats, {cycles} cycles"
    );
    assert!(fitted > payloads as u64 / 3 && fitted < payloads as u64, "seed {seed}: both outcomes reached");
}

#[test]
fn payloads_scatter_as_the_model_scatters_them_8_bytes() {
    check_width(Width::W8, 1500);
}

#[test]
fn payloads_scatter_as_the_model_scatters_them_64_bytes() {
    check_width(Width::W64, 1500);
}
