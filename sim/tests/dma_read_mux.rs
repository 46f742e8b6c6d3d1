//! The DMA read port's mux in RTL (`hdl::host::dma::DmaReadMux`), three requesters on one port: each offers
//! reads at random (address and length anything, one in flight at a time) and holds an offer until it is
//! taken; the host takes them with random stalls and completes them out of order across tags, a tag's beats
//! in order with gaps (and, every other 2,000 cycles, a storm of one-beat reads answered at once, offered again at once), some with errors, and now and then a stray beat of a tag no requester has. Every read
//! must reach the host as offered, tagged with its requester, and held still while the host stalls; every
//! completion beat must reach exactly its requester, in order; no requester waits more than one turn of the
//! others; a stray beat reaches nobody.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test dma_read_mux`.

use hdl::host::dma::MAX_REQUESTERS;
use hdl::top::{Top, DMA_MUX_REQUESTERS};
use hdl::Width;
use model::rng::Rng;
use sim::Sim;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xD3A_3E4D)
}

/// The host's data for beat `i` of a read at `addr`.
fn word(addr: u64, i: usize) -> u64 {
    addr.rotate_left(17) ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Req {
    Idle,
    /// An offer (address, length) and the grants to others since it was first offered.
    Offer(u64, u16, usize),
    /// Waiting for the completion of a read at this address: the beats taken, whether one failed.
    Wait(u64, u16, usize),
}

/// A read the host took: its tag, address, beats, the beats sent, the cycle it may start, its failed beat.
struct Read {
    tag: u64,
    addr: u64,
    beats: usize,
    sent: usize,
    due: u64,
    bad: Option<usize>,
}

#[test]
fn reads_are_tagged_and_completions_reach_their_requester() {
    let seed = seed();
    let n = DMA_MUX_REQUESTERS;
    let mut sim = Sim::new(Top::DmaReadMux, Width::W8);
    let q = |s: &str| sim.port(s);
    let (reset, rq_valid, rq_ready, rq_addr, rq_len) =
        (q("reset"), q("rq_valid"), q("rq_ready"), q("rq_addr"), q("rq_len"));
    let (cp_valid, cp_data, cp_err, cp_last) = (q("cp_valid"), q("cp_data"), q("cp_err"), q("cp_last"));
    let (rd_valid, rd_ready, rd_addr, rd_len, rd_tag) =
        (q("rd_valid"), q("rd_ready"), q("rd_addr"), q("rd_len"), q("rd_tag"));
    let (cpl_valid, cpl_data, cpl_tag, cpl_err, cpl_last) =
        (q("cpl_valid"), q("cpl_data"), q("cpl_tag"), q("cpl_err"), q("cpl_last"));
    let mut rng = Rng::new(seed);
    let (stall, gap, eager) =
        (rng.below(60) as f64 / 100.0, rng.below(60) as f64 / 100.0, 0.3 + rng.below(70) as f64 / 100.0);
    sim.set(reset, 1);
    sim.tick();
    sim.set(reset, 0);
    let mut reqs = vec![Req::Idle; n];
    let mut done = vec![0u64; n];
    let mut failed = 0u64;
    let mut host: Vec<Read> = Vec::new();
    let mut held: Option<(u64, u64, u64)> = None;
    let (mut strays, mut waits) = (0u64, 0usize);
    for cycle in 0..200_000u64 {
        // Every other 2,000 cycles a storm: every requester offers again at once, reads of one beat that the
        // host answers at once, its stalls short and rare (each lets all three offers stand together), so a
        // requester passed over for too long would show.
        let storm = cycle / 2_000 % 2 == 1;
        let (stall, gap, eager) = if storm { (0.1, 0.0, 1.0) } else { (stall, gap, eager) };
        let ctx = |what: &str| format!("seed {seed} (FERRITE_SEED={seed}), cycle {cycle}: {what}");
        // The requesters' offers.
        let mut valid = 0u64;
        let mut addrs = vec![0u8; 8 * MAX_REQUESTERS];
        let mut lens = vec![0u8; 2 * MAX_REQUESTERS];
        for (i, r) in reqs.iter_mut().enumerate() {
            if *r == Req::Idle && rng.chance(eager) {
                let most = if storm {
                    8
                } else if rng.chance(0.2) {
                    4096
                } else {
                    300
                };
                let len = 1 + rng.below(most) as u16;
                *r = Req::Offer(rng.next_u64(), len, 0);
            }
            if let Req::Offer(a, l, _) = *r {
                valid |= 1 << i;
                addrs[8 * i..8 * i + 8].copy_from_slice(&a.to_le_bytes());
                lens[2 * i..2 * i + 2].copy_from_slice(&l.to_le_bytes());
            }
        }
        sim.set(rq_valid, valid);
        sim.set_bytes(rq_addr, &addrs);
        sim.set_bytes(rq_len, &lens);
        // The host: one completion beat of any read that is due, or a stray.
        let ready = !rng.chance(stall);
        sim.set(rd_ready, u64::from(ready));
        let due: Vec<usize> = (0..host.len()).filter(|&j| host[j].due <= cycle).collect();
        let mut beat = None;
        if !rng.chance(gap) {
            if rng.chance(0.005) {
                strays += 1;
                sim.set(cpl_tag, n as u64 + rng.below(256 - n as u64));
                sim.set(cpl_data, rng.next_u64());
                sim.set(cpl_err, 0);
                sim.set(cpl_last, 1);
                sim.set(cpl_valid, 1);
            } else if !due.is_empty() {
                let j = due[rng.below(due.len() as u64) as usize];
                let r = &mut host[j];
                let (i, last, err) = (r.sent, r.sent + 1 == r.beats, r.bad == Some(r.sent));
                sim.set(cpl_tag, r.tag);
                sim.set(cpl_data, word(r.addr, i));
                sim.set(cpl_err, u64::from(err));
                sim.set(cpl_last, u64::from(last));
                sim.set(cpl_valid, 1);
                r.sent += 1;
                beat = Some((r.tag as usize, word(r.addr, i), err, last));
                if last {
                    host.remove(j);
                }
            } else {
                sim.set(cpl_valid, 0);
            }
        } else {
            sim.set(cpl_valid, 0);
        }
        sim.eval();

        // The read offered to the host: held still while it stalls, then taken as its requester offered it.
        if sim.get(rd_valid) == 1 {
            let now = (sim.get(rd_addr), sim.get(rd_len), sim.get(rd_tag));
            if let Some(h) = held.take() {
                assert_eq!(now, h, "{}", ctx("an offer to the host changed before it was taken"));
            }
            let t = now.2 as usize;
            assert!(t < n, "{}", ctx("a tag no requester has"));
            match reqs[t] {
                Req::Offer(a, l, _) => assert_eq!((now.0, now.1), (a, u64::from(l)), "{}", ctx("the read as offered")),
                other => panic!("{}", ctx(&format!("requester {t} is {other:?}, not offering"))),
            }
            let granted = sim.get(rq_ready);
            if ready {
                assert_eq!(granted, 1 << t, "{}", ctx("the requester whose read the host takes is told"));
                let (a, l) = (now.0, now.1 as u16);
                let beats = usize::from(l).div_ceil(8);
                let bad = rng.chance(0.05).then(|| rng.below(beats as u64) as usize);
                host.push(Read {
                    tag: t as u64,
                    addr: a,
                    beats,
                    sent: 0,
                    due: cycle + if storm { 1 } else { 2 + rng.below(30) },
                    bad,
                });
                for (i, r) in reqs.iter_mut().enumerate() {
                    if let Req::Offer(_, _, others) = r {
                        if i != t {
                            *others += 1;
                            waits = waits.max(*others);
                            assert!(*others < n, "{}", ctx(&format!("requester {i} passed over {others} times")));
                        }
                    }
                }
                reqs[t] = Req::Wait(a, l, 0);
            } else {
                assert_eq!(granted, 0, "{}", ctx("nobody told while the host stalls"));
                held = Some(now);
            }
        } else {
            assert!(held.is_none(), "{}", ctx("an offer withdrawn before the host took it"));
            assert_eq!(valid, 0, "{}", ctx("a requester offers and the host sees nothing"));
        }

        // The completion beat: to its requester alone, in order.
        let to = sim.get(cp_valid);
        match beat {
            Some((t, data, err, last)) => {
                assert_eq!(to, 1 << t, "{}", ctx("a completion beat goes to its tag's requester"));
                assert_eq!((sim.get(cp_data), sim.get(cp_err) == 1, sim.get(cp_last) == 1), (data, err, last));
                let Req::Wait(a, l, got) = reqs[t] else { panic!("{}", ctx("a beat for a requester not waiting")) };
                assert_eq!(data, word(a, got), "{}", ctx("the beats in order"));
                failed += u64::from(err);
                reqs[t] = if last {
                    assert_eq!(got + 1, usize::from(l).div_ceil(8), "{}", ctx("the read's beats"));
                    done[t] += 1;
                    Req::Idle
                } else {
                    Req::Wait(a, l, got + 1)
                };
            }
            None => assert_eq!(to, 0, "{}", ctx("no beat, or a stray one, goes to nobody")),
        }
        sim.tick();
    }
    eprintln!(
        "dma_read_mux: reads completed per requester {done:?} ({failed} error beats), {strays} stray beats, at most {waits} grants to others while one waited"
    );
    assert!(done.iter().all(|&d| d > 200), "seed {seed}: every requester is served");
}
