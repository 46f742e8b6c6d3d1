//! The pop of a finished entry off the window's front, in RTL (`hdl::engine::comp::ack::RetirePop`), against
//! the model's `comp::retire` (a finished front entry is due, failed if it carries an error) and
//! `ReqState::pop` on random windows (every size, a started prefix of every length, some entries finished and
//! some of those failed, the cursor and `oldest` anywhere, the SQ counter wrapping): whether the front is
//! due and failed, its SQ counter and slot, and `qp_req` after the pop compared bit for bit.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test retire_pop`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_window};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::WcStatus;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x2E7_1E0F)
}

#[test]
fn the_pop_is_the_models() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::RetirePop, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_req, p_front) = (q("attr"), q("req"), q("front"));
    let (p_slot, p_due, p_failed, p_index, p_next) = (q("slot"), q("due"), q("failed"), q("index"), q("req_next"));
    let mut rng = Rng::new(seed);
    let (mut due, mut failed, mut empty) = (0u32, 0u32, 0u32);
    for n in 0..50_000 {
        let mut qp = random_qp(&mut rng, &p);
        let count = rng.below(p.wqe_window as u64 + 1) as usize;
        let started = rng.below(count as u64 + 1) as usize;
        random_window(&mut rng, &mut qp, count, started);
        for w in qp.req.wqes.iter_mut() {
            if w.acked && rng.chance(0.3) {
                w.error = Some((WcStatus::RemAccessErr, rng.next_u64() as u8));
            }
        }
        if let Some(w) = qp.req.wqes.front_mut() {
            // A finished front half the time.
            if w.first_psn.is_some() && rng.chance(0.5) {
                w.acked = true;
            }
        }
        qp.req.cursor = rng.below(count as u64 + 1) as usize;
        qp.req.oldest = rng.below(count as u64 + 1) as usize;
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        // An empty window's front slot holds whatever was there before (often a finished entry).
        let front = packed.wqes.first().map_or_else(
            || {
                let mut stale = [0u8; 16];
                rng.fill(&mut stale);
                stale.to_vec()
            },
            bytes_of,
        );
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set_bytes(p_req, &bytes_of(&packed.req));
        rtl.set_bytes(p_front, &front);
        rtl.eval();
        let ctx = format!("seed {seed} (FERRITE_SEED={seed}), case {n}: {:?}", qp.req);
        let base = qp.sq.ci.wrapping_sub(count as u16);
        assert_eq!(rtl.get(p_index) as u16, base, "the front's SQ counter: {ctx}");
        assert_eq!(rtl.get(p_slot) as u8, base as u8, "the front's slot: {ctx}");
        let Some(w) = qp.req.wqes.front().cloned() else {
            assert_eq!(rtl.get(p_due), 0, "an empty window has nothing due: {ctx}");
            empty += 1;
            continue;
        };
        assert_eq!(rtl.get(p_due) == 1, w.acked, "the front is due: {ctx}");
        if !w.acked {
            continue;
        }
        assert_eq!(rtl.get(p_failed) == 1, w.error.is_some(), "the front failed: {ctx}");
        qp.req.pop();
        let want = bytes_of(&pack(&qp, &c, 0).expect("the QP packs after the pop").req);
        let got = rtl.get_bytes(p_next);
        assert_eq!(&got[..want.len()], &want[..], "qp_req after the pop: {ctx}");
        due += 1;
        failed += u32::from(w.error.is_some());
    }
    eprintln!("retire_pop: 50,000 windows: {due} fronts popped ({failed} failed), {empty} empty");
    assert!(due > 10_000 && failed > 1000 && empty > 1000, "seed {seed}: too few of a kind");
}
