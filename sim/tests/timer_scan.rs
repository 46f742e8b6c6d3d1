//! The timers' scan in RTL (`hdl::engine::comp::timer::TimerScan`, 1,024 QPs in 64 rows of 16 lanes)
//! against the rules the dispatch relies on, held by a reference here: the test is the timers' table (a row
//! read a cycle, its entries the cycle after); every timer offered was due when its row was read (live, armed,
//! its deadline at or before the tick, PSN-style over 36 bits for the ACK timer and 25 for the RNR wait), an
//! ACK timer before an RNR wait of the same QP; a row's offers, once it starts, are every QP of the row due
//! when it was read, none left for the next scan; and every timer due is offered within a scan of 64 rows
//! and two cycles a row that had offers (the scan reads the row it was at again), three scans at most. The tick runs fast and crosses both wraps; the dispatch
//! takes an offer after 0 to 3 cycles and disarms what it took, sometimes arming the ACK timer again.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test timer_scan`.

use hdl::engine::comp::timer::{lanes, TIMER_LANES};
use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::Sim;
use wire::contract::qpc::{NEAR_TICK_BITS, TICK_BITS};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x71_3E25)
}

/// One QP's timers as the table keeps them.
#[derive(Clone, Copy, Default)]
struct Timers {
    live: bool,
    ack: Option<u64>,
    rnr: Option<u64>,
}

/// Whether `at` is due at `tick`, the distance taken over `bits` bits.
fn due(at: u64, tick: u64, bits: u32) -> bool {
    let m = (1u64 << bits) - 1;
    (tick.wrapping_sub(at) & m) >> (bits - 1) == 0
}

impl Timers {
    fn ack_due(&self, tick: u64) -> bool {
        self.live && self.ack.is_some_and(|a| due(a, tick, TICK_BITS))
    }
    fn rnr_due(&self, tick: u64) -> bool {
        self.live && self.rnr.is_some_and(|r| due(r, tick, NEAR_TICK_BITS))
    }
}

/// Packs a row's field of `bits` bits a lane, little-endian, into `TIMER_LANES` lanes.
fn pack(values: impl Iterator<Item = u64>, bits: usize) -> Vec<u8> {
    let mut out = vec![0u8; (TIMER_LANES * bits).div_ceil(8)];
    for (k, v) in values.enumerate() {
        for b in 0..bits {
            if v >> b & 1 == 1 {
                let i = k * bits + b;
                out[i / 8] |= 1 << (i % 8);
            }
        }
    }
    out
}

#[test]
fn due_timers_are_offered_within_a_scan_and_none_early() {
    let seed = seed();
    let p = Top::timer_profile();
    let (l, n) = (lanes(&p) as usize, p.max_qp as usize);
    let rows = n / l;
    let mut rtl = Sim::new(Top::TimerScan, Width::W8);
    let q = |name| rtl.port(name);
    let (reset, tick_p, index, live_p, ack_p, ack_at_p) =
        (q("reset"), q("tick"), q("tm_index"), q("tm_live"), q("tm_ack"), q("tm_ack_at"));
    let (rnr_p, rnr_at_p, fire, fire_qpn, fire_rnr, take) =
        (q("tm_rnr"), q("tm_rnr_at"), q("fire"), q("fire_qpn"), q("fire_rnr"), q("take"));
    let mut rng = Rng::new(seed);
    let t_mask = (1u64 << TICK_BITS) - 1;
    let n_mask = (1u64 << NEAR_TICK_BITS) - 1;
    // Both wraps are crossed: the 25-bit one near the start, the 36-bit one at the same tick.
    let mut tick = t_mask - 2_000;
    let mut table = vec![Timers::default(); n];
    for t in table.iter_mut() {
        t.live = rng.chance(0.9);
    }
    // The row presented this cycle, as it was when read (the offer's snapshot), with the tick then.
    let mut snapshot: Vec<Option<(Vec<Timers>, u64)>> = vec![None; rows];
    // For each timer due and not yet offered: the scan's cycles not spent offering since it became due.
    let mut waiting: Vec<[Option<u32>; 2]> = vec![[None; 2]; n];
    // The row whose offers are under way: its due lanes when read, and the lanes taken so far.
    let mut episode: Option<(usize, Vec<usize>, Vec<usize>)> = None;
    let (mut offers, mut rnr_offers, mut worst, mut delay) = (0u32, 0u32, 0u32, None::<u32>);
    rtl.set(tick_p, tick);
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    for cycle in 0..150_000u32 {
        let ctx = format!("seed {seed} (FERRITE_SEED={seed}), cycle {cycle}, tick {tick:#x}");
        // The dispatch arms timers: an idle QP's ACK timer or RNR wait, due a little later.
        for _ in 0..2 {
            let i = rng.below(n as u64) as usize;
            let at = tick + rng.below(40);
            if rng.chance(0.5) {
                table[i].ack.get_or_insert(at & t_mask);
            } else if table[i].rnr.is_none() {
                table[i].rnr = Some(at & n_mask);
            }
        }
        rtl.eval();
        let offering = rtl.get(fire) == 1;
        if !offering {
            if let Some((row, due_lanes, taken)) = episode.take() {
                assert_eq!(taken, due_lanes, "row {row}'s offers ended: every lane due when read: {ctx}");
            }
        }
        // Waits: each due timer not offered yet counts a cycle unless the scan is offering.
        for (i, t) in table.iter().enumerate() {
            for (k, d) in [t.ack_due(tick), t.rnr_due(tick)].into_iter().enumerate() {
                let w = &mut waiting[i][k];
                match (d, w.as_mut()) {
                    (true, Some(c)) => *c += u32::from(!offering),
                    (true, None) => *w = Some(0),
                    (false, _) => *w = None,
                }
                let c = w.unwrap_or(0);
                worst = worst.max(c);
                assert!(c <= 3 * rows as u32 + 2, "QP {i}'s timer {k} due for {c} scan cycles: {ctx}");
            }
        }
        let mut took = false;
        if offering {
            let qpn = rtl.get(fire_qpn) as usize;
            let (row, lane) = (qpn / l, qpn % l);
            let (snap, then) = snapshot[row].clone().unwrap_or_else(|| panic!("QP {qpn} offered unread: {ctx}"));
            let s = snap[lane];
            let rnr = rtl.get(fire_rnr) == 1;
            let (at, due_lanes, taken) = episode.get_or_insert_with(|| {
                let due_lanes = (0..l).filter(|&k| snap[k].ack_due(then) || snap[k].rnr_due(then)).collect();
                (row, due_lanes, Vec::new())
            });
            assert_eq!(
                *at, row,
                "an offer of another row before this row's were done ({due_lanes:?}, {taken:?}): {ctx}"
            );
            assert!(s.ack_due(then) || s.rnr_due(then), "QP {qpn} offered, not due when read: {ctx}");
            assert_eq!(rnr, !s.ack_due(then), "QP {qpn}: the ACK timer before the RNR wait: {ctx}");
            // The dispatch takes it after a few cycles and acts on the QP's timers now.
            let d = *delay.get_or_insert_with(|| rng.below(4) as u32);
            if d == 0 {
                took = true;
                delay = None;
                offers += 1;
                rnr_offers += u32::from(rnr);
                let t = &mut table[qpn];
                if rnr {
                    t.rnr = None;
                } else {
                    t.ack = rng.chance(0.3).then(|| (tick + 20 + rng.below(100)) & t_mask);
                }
                waiting[qpn][usize::from(rnr)] = None;
                if let Some(other) = waiting[qpn][usize::from(!rnr)].as_mut() {
                    *other = 0;
                }
                if let Some((_, _, taken)) = episode.as_mut() {
                    taken.push(lane);
                }
            } else {
                delay = Some(d - 1);
            }
        }
        rtl.set(take, u64::from(took));
        let read = rtl.get(index) as usize;
        assert!(read < rows, "row {read} read: {ctx}");
        rtl.tick();
        if cycle % 8 == 7 {
            tick = (tick + 1) & t_mask;
        }
        // The table's read port: the row read at the edge, its entries now, seen with the tick now.
        let row: Vec<Timers> = table[read * l..read * l + l].to_vec();
        let lanes_of =
            |f: &dyn Fn(&Timers) -> u64| (0..TIMER_LANES).map(|k| row.get(k).map_or(0, f)).collect::<Vec<u64>>();
        let bits =
            |f: &dyn Fn(&Timers) -> bool| row.iter().enumerate().fold(0u64, |acc, (k, t)| acc | u64::from(f(t)) << k);
        rtl.set(tick_p, tick);
        rtl.set(live_p, bits(&|t| t.live));
        rtl.set(ack_p, bits(&|t| t.ack.is_some()));
        rtl.set(rnr_p, bits(&|t| t.rnr.is_some()));
        rtl.set_bytes(ack_at_p, &pack(lanes_of(&|t| t.ack.unwrap_or(0)).into_iter(), TICK_BITS as usize));
        rtl.set_bytes(rnr_at_p, &pack(lanes_of(&|t| t.rnr.unwrap_or(0)).into_iter(), NEAR_TICK_BITS as usize));
        snapshot[read] = Some((row, tick));
    }
    // The run offered plenty of both kinds, and the tick crossed both wraps.
    assert!(offers > 10_000 && rnr_offers > 3_000, "{offers} offers, {rnr_offers} RNR waits (seed {seed})");
    assert!(tick < 20_000, "the tick wrapped: {tick:#x} (seed {seed})");
    eprintln!("{offers} timers offered ({rnr_offers} RNR waits); the longest wait {worst} scan cycles");
}
