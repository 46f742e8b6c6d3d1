//! Posting and writing an EQE in RTL (`hdl::engine::eq::EqeWrite`, the `eqe_wr` block) against the model's
//! `Eq::push` and `Nic::raise`'s arming, at 8 bytes (the only width the core is built at so far): random EQ entries (any ring size and address, the
//! ring empty, nearly full or full, armed or not, or no EQ there) and events of every kind for any object.
//! For each post whether the ring took it, the producer counter after it, the interrupt and the slot are
//! compared with the model's, and the DMA write beats (with random bubbles on the input and back-pressure
//! on the write port) must write exactly the 16 bytes the model writes, where it writes them, owner byte
//! and all.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test eqe_write`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack_cq;
use model::nic::cq::{Arm, Cq};
use model::nic::eq::Eq;
use model::rng::Rng;
use sim::responder::bytes_of;
use sim::stream::{OwedWrites, RecordedWrites, WritePort};
use sim::Sim;
use wire::contract::eqe::EventKind;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xE0E5_17E5)
}

/// An EQ as the command unit keeps it: any size, address and counters, its fill drawn to reach the edges.
fn random_eq(rng: &mut Rng) -> Eq {
    let log_size = rng.below(16) as u8;
    let size = 1u64 << log_size;
    let iova = if rng.chance(0.5) { rng.next_u64() & !15 } else { rng.next_u64() >> rng.below(32) & !15 };
    let mut eq = Eq::new(iova, log_size);
    eq.pi = rng.next_u64() as u32;
    let fill = match rng.below(5) {
        0 => 0,
        1 => size - 1,
        2 => size,
        _ => rng.below(size + 1),
    };
    eq.ci = eq.pi.wrapping_sub(fill as u32);
    eq.armed = rng.chance(0.5);
    eq
}

/// The EQ's entry in the command unit's layout (`qpc::cq_entry`, armed for any event or not).
fn entry(eq: &Eq, exists: bool, bytes: usize) -> Vec<u8> {
    let mut cq = Cq::new(eq.iova, eq.log_size);
    (cq.pi, cq.ci, cq.armed) = (eq.pi, eq.ci, eq.armed.then_some(Arm::Any));
    let mut e = bytes_of(&pack_cq(&cq).expect("the EQ packs"));
    e.resize(bytes, 0);
    if !exists {
        e[0] &= !1;
    }
    e
}

/// Posts `posts` random events; returns (EQEs written, interrupts, write beats, cycles).
fn run(w: Width, posts: usize, seed: u64) -> (u64, u64, u64, u64) {
    let k = w.bytes();
    let mut sim = Sim::new(Top::EqeWrite, w);
    let port = |n: &str| sim.port(n);
    let (reset, in_valid, in_ready, p_eq, p_kind, p_obj) =
        (port("reset"), port("in_valid"), port("in_ready"), port("eq"), port("kind"), port("obj"));
    let (p_written, p_pi, p_fire, p_slot) = (port("written"), port("pi_next"), port("fire"), port("slot"));
    let mut rng = Rng::new(seed);
    let (bubble, stall) = (rng.below(60) as f64 / 100.0, rng.below(60) as f64 / 100.0);
    let mut wr = WritePort::find(&sim, k, seed, stall);
    sim.set(reset, 1);
    sim.tick();
    sim.set(reset, 0);
    let entry_bytes = sim.port_bits(p_eq).div_ceil(8);
    // Writes the model made and the RTL has still to make, oldest first.
    let mut owed = OwedWrites::default();
    let (mut done, mut written, mut irqs, mut beats, mut cycles) = (0usize, 0u64, 0u64, 0u64, 0u64);
    // The EQ, whether the entry holds one, the event's kind and object.
    let mut offer: Option<(Eq, bool, EventKind, u32)> = None;
    let kinds = [EventKind::Completion, EventKind::CqError, EventKind::QpFatal];
    while done < posts || !owed.is_empty() {
        cycles += 1;
        let (post, cycle) = (done, cycles);
        let ctx = move || format!("seed {seed} (FERRITE_SEED={seed}), {w:?}, post {post}, cycle {cycle}");
        assert!(cycles < 100 * posts as u64 + 1000, "{}: stuck", ctx());
        if offer.is_none() && done < posts {
            let kind = kinds[rng.below(3) as usize];
            offer = Some((random_eq(&mut rng), rng.chance(0.95), kind, rng.next_u64() as u32));
        }
        let valid = offer.is_some() && !rng.chance(bubble);
        if let Some((eq, exists, kind, obj)) = &offer {
            sim.set_bytes(p_eq, &entry(eq, *exists, entry_bytes));
            sim.set(p_kind, *kind as u64);
            sim.set(p_obj, u64::from(*obj));
        }
        sim.set(in_valid, u64::from(valid));
        let ready = wr.drive(&mut sim);
        sim.eval();
        if valid && sim.get(in_ready) == 1 {
            let (mut eq, exists, kind, obj) = offer.take().expect("offered");
            let before = eq.clone();
            let mut mem = RecordedWrites::default();
            // `Nic::raise`: no EQ, or a full one, loses the event; a written one spends the arming.
            let pushed = if exists { eq.push(kind, obj, &mut mem) } else { None };
            let fire = pushed.is_some() && std::mem::take(&mut eq.armed);
            let what = || format!("{}: EQ {before:?} ({exists}), {kind:?} of {obj:#x}", ctx());
            assert_eq!(sim.get(p_written) == 1, pushed.is_some(), "{}: written", what());
            assert_eq!(sim.get(p_fire) == 1, fire, "{}: the interrupt", what());
            if let Some((slot, _)) = pushed {
                assert_eq!(sim.get(p_pi) as u32, eq.pi, "{}: the producer counter after", what());
                assert_eq!(sim.get(p_slot) as u32, slot, "{}: slot", what());
                written += 1;
            }
            irqs += u64::from(fire);
            owed.extend(mem.0);
            done += 1;
        }
        if let Some(b) = wr.take(&sim, ready) {
            beats += 1;
            owed.beat(b, k).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
        }
        sim.tick();
    }
    (written, irqs, beats, cycles)
}

fn check_width(w: Width) {
    let seed = seed();
    let (written, irqs, beats, cycles) = run(w, 3000, seed);
    eprintln!(
        "eqe_write {w:?}: 3000 posts, {written} EQEs written, {irqs} interrupts, {beats} write beats, {cycles} cycles"
    );
    assert!(written > 1500 && written < 2900 && irqs > 500, "seed {seed}: the generator reaches every outcome");
}

#[test]
fn eqes_post_and_land_as_the_model_writes_them_8_bytes() {
    check_width(Width::W8);
}
