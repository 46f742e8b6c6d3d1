//! Posting and writing a CQE in RTL (`hdl::engine::cq::CqeWrite`, the `cqe_wr` block) against the model's
//! `Cq::post`, at both widths: random CQ table entries (any ring size and address, the ring empty, nearly
//! full, full or overrun, armed for any CQE, solicited ones or not at all, or no CQ there) and random CQEs
//! (success or error, solicited or not) of live QPs or not. For each post the next table entry, the events
//! it raises and the slot are compared with the model's, and the DMA write beats (with random bubbles on
//! the input and back-pressure on the write port) must write exactly the 64 bytes the model writes, where
//! it writes them, owner byte and all.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test cqe_write`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack_cq;
use model::nic::cq::{Arm, Cq};
use model::rng::Rng;
use sim::responder::bytes_of;
use sim::stream::{OwedWrites, RecordedWrites, WritePort};
use sim::Sim;
use wire::contract::cqe::CqeRepr;
use wire::contract::verbs::WcStatus;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xC0E3_17E5)
}

/// A CQ as the CQ table could hold it: any size, address and counters, its fill drawn to reach the edges.
fn random_cq(rng: &mut Rng) -> Cq {
    let log_size = rng.below(16) as u8;
    let size = 1u64 << log_size;
    let iova = if rng.chance(0.5) { rng.next_u64() & !63 } else { rng.next_u64() >> rng.below(32) };
    let mut cq = Cq::new(iova, log_size);
    cq.pi = rng.next_u64() as u32;
    let fill = match rng.below(5) {
        0 => 0,
        1 => size - 1,
        2 => size,
        _ => rng.below(size + 1),
    };
    cq.ci = cq.pi.wrapping_sub(fill as u32);
    cq.overrun = rng.chance(0.1);
    cq.armed = match rng.below(3) {
        0 => None,
        1 => Some(Arm::Any),
        _ => Some(Arm::Solicited),
    };
    cq
}

fn random_cqe(rng: &mut Rng) -> CqeRepr {
    let status = if rng.chance(0.7) { WcStatus::Success as u8 } else { 1 + rng.below(21) as u8 };
    CqeRepr {
        wr_id: rng.next_u64(),
        byte_len: rng.next_u64() as u32,
        imm_data: rng.next_u64() as u32,
        qp_num: rng.below(1 << 24) as u32,
        src_qp: rng.below(1 << 24) as u32,
        wqe_index: rng.next_u64() as u16,
        opcode: rng.below(256) as u8,
        status,
        vendor_err: rng.below(256) as u8,
        wc_flags: rng.below(256) as u8,
        is_recv: rng.below(2) as u8,
        se: if rng.chance(0.3) { rng.below(2) as u8 } else { 0 },
        // What comes in here is not looked at: the block writes the pass's owner bit.
        owner: rng.below(256) as u8,
    }
}

/// Posts `posts` random CQEs; returns (CQEs written, events, write beats, cycles).
fn run(w: Width, posts: usize, seed: u64) -> (u64, u64, u64, u64) {
    let k = w.bytes();
    let mut sim = Sim::new(Top::CqeWrite, w);
    let port = |n: &str| sim.port(n);
    let (reset, in_valid, in_ready, p_cq, p_cqe, p_live) =
        (port("reset"), port("in_valid"), port("in_ready"), port("cq"), port("cqe"), port("qp_live"));
    let (p_written, p_next, p_fire, p_error, p_fatal, p_slot) =
        (port("written"), port("cq_next"), port("fire"), port("cq_error"), port("qp_fatal"), port("slot"));
    let p_log = port("log_size");
    let mut rng = Rng::new(seed);
    let (bubble, stall) = (rng.below(60) as f64 / 100.0, rng.below(60) as f64 / 100.0);
    let mut wr = WritePort::find(&sim, k, seed, stall);
    sim.set(reset, 1);
    sim.tick();
    sim.set(reset, 0);
    let entry_bytes = sim.port_bits(p_cq).div_ceil(8);
    // Writes the model made and the RTL has still to make, oldest first.
    let mut owed = OwedWrites::default();
    let (mut done, mut written, mut events, mut beats, mut cycles) = (0usize, 0u64, 0u64, 0u64, 0u64);
    // The CQ entry, the CQE, whether its QP is live, whether the entry holds a CQ.
    let mut offer: Option<(Cq, CqeRepr, bool, bool)> = None;
    while done < posts || !owed.is_empty() {
        cycles += 1;
        let (post, cycle) = (done, cycles);
        let ctx = move || format!("seed {seed} (FERRITE_SEED={seed}), {w:?}, post {post}, cycle {cycle}");
        assert!(cycles < 200 * posts as u64 + 1000, "{}: stuck", ctx());
        if offer.is_none() && done < posts {
            let (mut cq, cqe) = (random_cq(&mut rng), random_cqe(&mut rng));
            let exists = rng.chance(0.95);
            cq.armed = cq.armed.filter(|_| exists);
            offer = Some((cq, cqe, rng.chance(0.8), exists));
        }
        let valid = offer.is_some() && !rng.chance(bubble);
        match &offer {
            Some((cq, cqe, live, exists)) => {
                let mut entry = bytes_of(&pack_cq(cq).expect("the CQ packs"));
                entry.resize(entry_bytes, 0);
                if !exists {
                    // An empty table entry: no CQ, whatever else it holds.
                    entry[0] &= !1;
                }
                sim.set_bytes(p_cq, &entry);
                sim.set_bytes(p_cqe, &cqe.to_bytes());
                sim.set(p_live, u64::from(*live));
            }
            None => sim.set(p_live, 0),
        }
        sim.set(in_valid, u64::from(valid));
        let ready = wr.drive(&mut sim);
        sim.eval();
        if valid && sim.get(in_ready) == 1 {
            let (mut cq, cqe, live, exists) = offer.take().expect("offered");
            let mut mem = RecordedWrites::default();
            let (posted, after) = if exists {
                let p = cq.post(cqe, live, &mut mem);
                (p, bytes_of(&pack_cq(&cq).expect("the CQ packs")))
            } else {
                // No CQ: the model's `push_cqe` returns before anything happens.
                let mut e = bytes_of(&pack_cq(&cq).expect("the CQ packs"));
                e[0] &= !1;
                (model::nic::cq::Posted { written: None, fire: false, cq_error: false, qp_fatal: false }, e)
            };
            let mut next = sim.get_bytes(p_next);
            next.truncate(after.len());
            assert_eq!(next, after, "{}: the CQ's next entry (CQ {cq:?}, CQE {cqe:?})", ctx());
            assert_eq!(sim.get(p_written) == 1, posted.written.is_some(), "{}: written", ctx());
            assert_eq!(sim.get(p_fire) == 1, posted.fire, "{}: completion event", ctx());
            assert_eq!(sim.get(p_error) == 1, posted.cq_error, "{}: CQ error event", ctx());
            assert_eq!(sim.get(p_fatal) == 1, posted.qp_fatal, "{}: QP fatal", ctx());
            if let Some((_, slot)) = posted.written {
                assert_eq!(sim.get(p_slot) as u32, slot, "{}: slot", ctx());
                assert_eq!(sim.get(p_log) as u8, cq.log_size, "{}: the ring's size", ctx());
                written += 1;
            }
            events += u64::from(posted.fire) + u64::from(posted.cq_error) + u64::from(posted.qp_fatal);
            owed.extend(mem.0);
            done += 1;
        }
        if let Some(b) = wr.take(&sim, ready) {
            beats += 1;
            owed.beat(b, k).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
        }
        sim.tick();
    }
    (written, events, beats, cycles)
}

fn check_width(w: Width) {
    let seed = seed();
    let (written, events, beats, cycles) = run(w, 3000, seed);
    eprintln!(
        "cqe_write {w:?}: 3000 posts, {written} CQEs written, {events} events, {beats} write beats, {cycles} cycles"
    );
    assert!(written > 1000 && events > 500, "seed {seed}: the generator reaches both outcomes");
}

#[test]
fn cqes_post_and_land_as_the_model_writes_them_8_bytes() {
    check_width(Width::W8);
}

#[test]
fn cqes_post_and_land_as_the_model_writes_them_64_bytes() {
    check_width(Width::W64);
}
