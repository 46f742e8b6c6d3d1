//! The receive WQEs kept between a message's packets, in RTL (`hdl::engine::resp::wqe_cache::WqeCache`),
//! against the rules its doc gives. The model reads and checks a SEND's WQE for every packet; the cache may
//! answer instead only with what `RecvWqe` made of that very WQE (that QP and RQ slot) when it was stored,
//! since the last command (which clears it), and never from a fetch whose read failed. It keeps one WQE a QP
//! (a QP's new WQE replaces its old one) and otherwise replaces its entries in turn.
//!
//! Random fetches of a few QPs' slots (completion beats with bubbles, some failing), stores of random
//! verdicts, `wr_id`s and SGE lists, commands and resets, and a lookup every cycle: `hit` and what it gives
//! must be the reference's, whose entries follow those rules; and every hit must be the last thing stored
//! for its QP and slot since the last clear.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test wqe_cache`.

use hdl::engine::resp::recv_wqe::{SGES_BITS, SGE_BITS};
use hdl::engine::resp::wqe_cache::ENTRIES;
use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::Sim;
use std::collections::HashMap;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x3C_AC4E)
}

/// What `RecvWqe` made of a WQE: its verdict, `wr_id`, SGE count and list (the port's bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Made {
    ok: bool,
    wr_id: u64,
    count: u8,
    sges: Vec<u8>,
}

/// The reference: the entries (QP, RQ slot, what was made of it) and the next to replace.
struct Reference {
    entries: [Option<(u32, u16, Made)>; ENTRIES],
    next: usize,
}

impl Reference {
    /// The lowest entry holding QP `qpn`'s slot `index`.
    fn lookup(&self, qpn: u32, index: u16) -> Option<&Made> {
        self.entries.iter().flatten().find(|(q, i, _)| *q == qpn && *i == index).map(|(_, _, m)| m)
    }

    /// A WQE kept: in the lowest entry of its QP, else in the next in turn (which moves on).
    fn store(&mut self, qpn: u32, index: u16, made: Made) {
        match self.entries.iter().position(|e| e.as_ref().is_some_and(|(q, ..)| *q == qpn)) {
            Some(k) => self.entries[k] = Some((qpn, index, made)),
            None => {
                self.entries[self.next] = Some((qpn, index, made));
                self.next = (self.next + 1) % ENTRIES;
            }
        }
    }

    fn clear(&mut self) {
        self.entries = Default::default();
    }
}

#[test]
fn a_hit_is_the_wqe_stored_for_that_qp_and_slot() {
    let seed = seed();
    let p = Top::engine_profile();
    let kept_bits = p.max_sge as usize * SGE_BITS;
    let mut rtl = Sim::new(Top::WqeCache, Width::W8);
    let mut rng = Rng::new(seed);
    let set = |rtl: &mut Sim, n: &str, v: u64| {
        let port = rtl.port(n);
        rtl.set(port, v);
    };
    set(&mut rtl, "reset", 1);
    rtl.tick();
    set(&mut rtl, "reset", 0);
    let mut r = Reference { entries: Default::default(), next: 0 };
    // The last thing stored for each QP and slot since the last clear.
    let mut last: HashMap<(u32, u16), Made> = HashMap::new();
    // The fetch in flight: its QP and slot, beats left, whether one failed.
    let mut fill: Option<(u32, u16, u32, bool)> = None;
    let bubble = rng.below(60) as f64 / 100.0;
    let (mut hits, mut stores, mut failed, mut clears, mut replaced) = (0u32, 0u32, 0u32, 0u32, 0u32);
    for cycle in 0..200_000u32 {
        let ctx = format!("seed {seed} (FERRITE_SEED={seed}), cycle {cycle}");
        for n in ["clear", "fill_start", "fill_valid", "fill_err", "fill_last", "store"] {
            set(&mut rtl, n, 0);
        }
        // A lookup every cycle, of one of a few QPs' slots (a fetch's QP and slot while it starts).
        let (qpn, index) = (rng.below(6) as u32, rng.below(3) as u16);
        set(&mut rtl, "qpn", u64::from(qpn));
        set(&mut rtl, "index", u64::from(index));
        rtl.eval();
        let got = (rtl.get(rtl.port("hit")) == 1).then(|| Made {
            ok: rtl.get(rtl.port("ok")) == 1,
            wr_id: rtl.get(rtl.port("wr_id")),
            count: rtl.get(rtl.port("count")) as u8,
            sges: rtl.get_bytes(rtl.port("sges")),
        });
        assert_eq!(got.as_ref(), r.lookup(qpn, index), "the lookup of QP {qpn} slot {index}: {ctx}");
        if let Some(m) = &got {
            assert_eq!(Some(m), last.get(&(qpn, index)), "a hit is the last stored since a clear: {ctx}");
            hits += 1;
        }
        // What the surroundings do this cycle, seen by the block at the clock edge.
        match fill.take() {
            None if rng.chance(0.02) => {
                set(&mut rtl, "clear", 1);
                r.clear();
                last.clear();
                clears += 1;
            }
            None if rng.chance(0.3) => {
                set(&mut rtl, "fill_start", 1);
                fill = Some((qpn, index, 1 + rng.below(8) as u32, false));
            }
            None => {}
            Some((q, i, 0, bad)) => {
                // `RecvWqe` is done: what it made of the WQE is stored, unless the read failed.
                let mut sges = vec![0u8; SGES_BITS / 8];
                rng.fill(&mut sges);
                let made = Made { ok: rng.chance(0.7), wr_id: rng.next_u64(), count: rng.next_u64() as u8, sges };
                set(&mut rtl, "store", 1);
                set(&mut rtl, "st_ok", u64::from(made.ok));
                set(&mut rtl, "st_wr_id", made.wr_id);
                set(&mut rtl, "st_count", u64::from(made.count));
                let port = rtl.port("st_sges");
                rtl.set_bytes(port, &made.sges);
                if bad {
                    failed += 1;
                } else {
                    // The port gives the profile's SGEs, the rest zero.
                    let mut kept = made.clone();
                    for (b, byte) in kept.sges.iter_mut().enumerate() {
                        let keep = (0..8).filter(|k| b * 8 + k < kept_bits).fold(0u8, |m, k| m | 1 << k);
                        *byte &= keep;
                    }
                    replaced += u32::from(r.lookup(q, i).is_none() && r.entries.iter().flatten().any(|e| e.0 == q));
                    r.store(q, i, kept.clone());
                    last.insert((q, i), kept);
                    stores += 1;
                }
            }
            Some((q, i, left, bad)) => {
                // A completion beat, or a bubble.
                let beat = !rng.chance(bubble);
                let err = beat && rng.chance(0.03);
                set(&mut rtl, "fill_valid", u64::from(beat));
                set(&mut rtl, "fill_err", u64::from(err));
                set(&mut rtl, "fill_last", u64::from(beat && left == 1));
                fill = Some((q, i, left - u32::from(beat), bad || err));
            }
        }
        rtl.tick();
    }
    eprintln!(
        "wqe_cache: 200,000 cycles: {hits} hits, {stores} stores ({replaced} replacing their QP's older WQE), {failed} fetches failed, {clears} clears"
    );
    assert!(
        hits > 20_000 && stores > 3000 && replaced > 500 && failed > 100 && clears > 500,
        "seed {seed}: too few of a kind: {hits} hits, {stores} stores, {replaced} replacing, {failed} failed, {clears} clears"
    );
}
