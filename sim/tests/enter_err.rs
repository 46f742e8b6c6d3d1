//! A QP's `qp_resp` record as the QP enters ERR, in RTL (`hdl::engine::flush::EnterErr`), against the model's
//! `flush::enter_err` on random responder states (`sim::responder::random_qp`: responses and an ACK owed,
//! a receive or a message in progress, a fatal NAK sent, any PSNs and counters): the record compared bit
//! for bit.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test enter_err`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::flush::enter_err;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::qp_context;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xE4_7E2E)
}

#[test]
fn the_record_is_the_models() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::EnterErr, Width::W8);
    let (p_resp, p_err) = (rtl.port("resp"), rtl.port("resp_err"));
    let mut rng = Rng::new(seed);
    let (mut owed, mut ack) = (0u32, 0u32);
    for n in 0..20_000 {
        let mut q = random_qp(&mut rng, &p);
        owed += u32::from(!q.resp.out.is_empty());
        ack += u32::from(q.resp.ack.is_some());
        let before = q.resp.clone();
        rtl.set_bytes(p_resp, &bytes_of(&pack(&q, &c, 0).expect("the QP packs").resp));
        rtl.eval();
        enter_err(&mut q);
        let want = bytes_of(&pack(&q, &c, 0).expect("the QP packs in ERR").resp);
        let got = rtl.get_bytes(p_err);
        assert_eq!(&got[..want.len()], &want[..], "seed {seed} (FERRITE_SEED={seed}), case {n}: {before:?}");
    }
    eprintln!("enter_err: 20,000 records: {owed} with responses owed, {ack} with an ACK owed");
    assert!(owed > 5000 && ack > 3000, "seed {seed}: too few of a kind");
}
