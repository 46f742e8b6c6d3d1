//! Which QPs may have a send WQE to fetch, in RTL (`hdl::engine::req::window::FetchWake`), against the
//! rules the dispatch relies on, held by a reference here: an SQ doorbell or a command wakes its QP; a visit
//! that finds nothing puts its QP to sleep unless a doorbell or command for it came since the visit began
//! (in the visit's first cycle included: the visit read the QP's counters before it landed); the QP to visit
//! next is the first awake after the last visited, wrapping round; `at_alone` says whether the QP `at_qpn`
//! names (the requester's) is the only one awake. Random doorbells, commands and visits (the visits the dispatch makes:
//! of the QP offered, a few cycles each, most finding nothing) for 200,000 cycles, `any`, `pick` and `at_alone`
//! (of a random QP) compared every cycle.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test fetch_wake`.

use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::Sim;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xFE_7C4A)
}

#[test]
fn qps_wake_sleep_and_take_turns_as_the_dispatch_needs() {
    let seed = seed();
    let n = Top::engine_profile().max_qp as usize;
    let mut rtl = Sim::new(Top::FetchWake, Width::W8);
    let q = |name| rtl.port(name);
    let (reset, rung, rung_qpn, cmd, cmd_qpn) = (q("reset"), q("rung"), q("rung_qpn"), q("cmd"), q("cmd_qpn"));
    let (visit, visit_qpn, clear, any, pick) = (q("visit"), q("visit_qpn"), q("clear"), q("any"), q("pick"));
    let (at_qpn, at_alone) = (q("at_qpn"), q("at_alone"));
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let mut rng = Rng::new(seed);
    // The reference: who is awake, the last QP visited, whether the visit in hand saw a wake-up.
    let (mut awake, mut last, mut dirty) = (vec![false; n], 0usize, false);
    // The visit in hand: its QP and the cycles left until it decides.
    let mut visiting: Option<(usize, u32)> = None;
    let (mut picks, mut kept, mut slept, mut alone_at, mut shared_at) = (0u32, 0u32, 0u32, 0u32, 0u32);
    for cycle in 0..200_000u32 {
        let ctx = format!("seed {seed} (FERRITE_SEED={seed}), cycle {cycle}");
        let want_any = awake.iter().any(|&a| a);
        let want_pick = (1..=n).map(|d| (last + d) % n).find(|&i| awake[i]);
        assert_eq!(rtl.get(any) == 1, want_any, "any: {ctx}");
        if let Some(p) = want_pick {
            assert_eq!(rtl.get(pick) as usize, p, "the next QP to visit: {ctx} ({awake:?}, last {last})");
        }
        // The QP asked about: an awake one most of the time (the only one, when one is).
        let nq = match want_pick {
            Some(p) if rng.chance(0.8) => p,
            _ => rng.below(n as u64) as usize,
        };
        rtl.set(at_qpn, nq as u64);
        rtl.eval();
        let alone = awake[nq] && awake.iter().filter(|&&a| a).count() == 1;
        assert_eq!(rtl.get(at_alone) == 1, alone, "at_alone, of QP {nq}: {ctx} ({awake:?})");
        (alone_at, shared_at) = (alone_at + u32::from(alone), shared_at + u32::from(awake[nq] && !alone));
        // This cycle's inputs: doorbells and commands for QPs near the one visited (the race), a visit's
        // start or end.
        let near = |rng: &mut Rng| match visiting {
            Some((v, _)) if rng.chance(0.5) => v,
            _ => rng.below(n as u64) as usize,
        };
        let r = rng.chance(0.05).then(|| near(&mut rng));
        let c = rng.chance(0.02).then(|| near(&mut rng));
        let (mut start, mut end) = (None, None);
        match visiting {
            None if want_any && rng.chance(0.5) => {
                let v = want_pick.expect("a QP is awake");
                start = Some(v);
                visiting = Some((v, rng.below(4) as u32));
            }
            Some((v, 0)) => {
                end = Some(v);
                visiting = None;
            }
            Some((v, k)) => visiting = Some((v, k - 1)),
            None => {}
        }
        // Most visits find nothing (the QP's window full, or nothing posted).
        let finds_nothing = end.is_some() && rng.chance(0.8);
        rtl.set(rung, u64::from(r.is_some()));
        rtl.set(rung_qpn, r.unwrap_or(0) as u64);
        rtl.set(cmd, u64::from(c.is_some()));
        rtl.set(cmd_qpn, c.unwrap_or(0) as u64);
        rtl.set(visit, u64::from(start.is_some()));
        // The QP in hand is on `visit_qpn` from the visit's start to its end (the dispatch's QP register).
        rtl.set(visit_qpn, start.or(end).or(visiting.map(|(v, _)| v)).unwrap_or(0) as u64);
        rtl.set(clear, u64::from(finds_nothing));
        rtl.tick();
        // The reference's edge.
        let hit = |q: usize| r == Some(q) || c == Some(q);
        if let Some(v) = start {
            dirty = hit(v);
            last = v;
            picks += 1;
        } else if let Some((v, _)) = visiting.or(end.map(|v| (v, 0))) {
            dirty |= hit(v);
        }
        if let (Some(v), true) = (end, finds_nothing) {
            if dirty || hit(v) {
                kept += 1;
            } else {
                awake[v] = false;
                slept += 1;
            }
        }
        for qp in [r, c].into_iter().flatten() {
            awake[qp] = true;
        }
    }
    eprintln!(
        "fetch_wake: {picks} visits, {slept} QPs put to sleep, {kept} kept awake by a wake-up during the visit, \
         QP at_qpn awake alone {alone_at} cycles, with others {shared_at}"
    );
    assert!(
        picks > 10_000 && slept > 1000 && kept > 100 && alone_at > 1000 && shared_at > 1000,
        "seed {seed}: every case met often"
    );
}
