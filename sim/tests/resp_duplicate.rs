//! A SEND or WRITE packet executed before, acknowledged again, in RTL
//! (`hdl::engine::resp::duplicate::RespDuplicate`), against the model's `resp::reack` on random responder
//! states (`sim::responder::random_qp`, not flushing: a flushing QP's packets never reach it): the QP's
//! `qp_resp` record a cycle later compared bit for bit with the model's (the coalesced ACK slot holding ePSN
//! - 1 and the MSN, the rest as it was).
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test resp_duplicate`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::resp::reack;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::qp_context;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xD0_B1E5)
}

#[test]
fn the_ack_is_the_models() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::RespDuplicate, Width::W8);
    let (p_resp, p_next) = (rtl.port("resp"), rtl.port("resp_next"));
    let mut rng = Rng::new(seed);
    let (mut replaced, mut wrapped) = (0u32, 0u32);
    for n in 0..20_000 {
        let mut q = random_qp(&mut rng, &p);
        q.flushing = false;
        if rng.chance(0.1) {
            q.resp.epsn = wire::Psn::new(0);
        }
        replaced += u32::from(q.resp.ack.is_some());
        wrapped += u32::from(q.resp.epsn.value() == 0);
        let before = q.resp.clone();
        rtl.set_bytes(p_resp, &bytes_of(&pack(&q, &c, 0).expect("the QP packs").resp));
        rtl.tick();
        reack(&mut q);
        let want = bytes_of(&pack(&q, &c, 0).expect("the QP packs").resp);
        let got = rtl.get_bytes(p_next);
        assert_eq!(&got[..want.len()], &want[..], "seed {seed} (FERRITE_SEED={seed}), case {n}: {before:?}");
    }
    eprintln!("resp_duplicate: 20,000 records: {replaced} with an ACK already owed, {wrapped} with ePSN 0");
    assert!(replaced > 3000 && wrapped > 1000, "seed {seed}: too few of a kind");
}
