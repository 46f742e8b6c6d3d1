//! The counter block's counters in RTL (`hdl::host::counters::CounterBank`) against the model's counting
//! (`Nic::count`: each counter the plain sum of what was counted). For 100,000 cycles: random increments on
//! both event inputs, in stretches from idle to every counter every cycle (so a counter takes increments
//! while the sweep adds its pending count in); byte counts of up to 65,535 a cycle into `rx_bytes` and
//! `tx_bytes`; a random counter read every cycle and compared with the sum of every increment before it
//! (indices past the last counter read 0); a reset now and then, mid-sweep, after which every count reads
//! 0 and counts again from there.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test counter_bank`.

use hdl::host::counters::INDEX_BITS;
use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::Sim;
use wire::contract::regs::Counter;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xC0_0A7E)
}

/// 64 bits, each set with probability `p`.
fn mask(rng: &mut Rng, p: f64) -> u64 {
    (0..64).filter(|_| rng.chance(p)).fold(0, |m, b| m | 1 << b)
}

#[test]
fn every_count_reads_back_as_the_sum_of_its_increments() {
    let seed = seed();
    let n = Counter::ALL.len();
    for (i, c) in Counter::ALL.iter().enumerate() {
        assert_eq!(*c as usize, i, "Counter::ALL is in index order");
    }
    let (rx, tx) = (Counter::rx_bytes as usize, Counter::tx_bytes as usize);
    let mut rtl = Sim::new(Top::CounterBank, Width::W8);
    let q = |name| rtl.port(name);
    let (reset, inc, inc2, rx_add, tx_add) = (q("reset"), q("inc"), q("inc2"), q("rx_add"), q("tx_add"));
    let (index, value) = (q("index"), q("value"));
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let mut rng = Rng::new(seed);
    let mut want = vec![0u64; n];
    let (mut density, mut resets, mut nonzero) = (0.5, 0u32, 0u32);
    for cycle in 0..100_000u32 {
        if cycle % 500 == 0 {
            density = [0.0, 0.02, 0.5, 1.0][rng.below(4) as usize];
        }
        let (a, b) = (mask(&mut rng, density), mask(&mut rng, density));
        let bytes = |rng: &mut Rng| if rng.chance(density) { rng.below(1 << 16) } else { 0 };
        let (r, t) = (bytes(&mut rng), bytes(&mut rng));
        let at = rng.below(1 << INDEX_BITS) as usize;
        let clear = rng.chance(0.0005);
        rtl.set(inc, a);
        rtl.set(inc2, b);
        rtl.set(rx_add, r);
        rtl.set(tx_add, t);
        rtl.set(index, at as u64);
        rtl.set(reset, u64::from(clear));
        rtl.eval();
        let expect = want.get(at).copied().unwrap_or(0);
        let name = Counter::ALL.get(at).map_or("past the last counter".to_string(), |c| format!("{c:?}"));
        assert_eq!(rtl.get(value), expect, "FERRITE_SEED={seed}, cycle {cycle}: counter {at} ({name})");
        nonzero += u32::from(expect != 0);
        rtl.tick();
        if clear {
            // A reset clears every count; what came in with it is not counted.
            want.iter_mut().for_each(|w| *w = 0);
            resets += 1;
            continue;
        }
        for (i, w) in want.iter_mut().enumerate() {
            *w += match i {
                _ if i == rx => r,
                _ if i == tx => t,
                _ => (a >> i & 1) + (b >> i & 1),
            };
        }
    }
    assert!(resets >= 20 && nonzero >= 50_000, "FERRITE_SEED={seed}: {resets} resets, {nonzero} reads of a count");
}
