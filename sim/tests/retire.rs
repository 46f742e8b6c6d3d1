//! The completion of a finished entry leaving the requester's window, in RTL (`hdl::engine::comp::retire::
//! Retire`), against the model's `comp::completion`: random window entries (every send operation, any
//! length, send flags, `wr_id` and SQ counter, finished or failed with any failure status and any vendor
//! syndrome) of QPs with any number, send CQ and `sig_all`; whether a CQE is posted, its CQ, and the CQE's
//! bytes compared with the model's.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test retire`.

use hdl::top::Top;
use hdl::Width;
use model::nic::comp::completion;
use model::nic::context::pack;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_window};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::WcStatus;
use wire::contract::wqe::send_flags;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x2E7_12E)
}

#[test]
fn the_completion_is_the_models() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let cq_bits = c.attr.slice("send_cqn").expect("qp_attr has the send CQ").1;
    let mut rtl = Sim::new(Top::Retire, Width::W8);
    let q = |n| rtl.port(n);
    let (p_qpn, p_attr, p_wqe, p_index) = (q("qpn"), q("attr"), q("wqe"), q("index"));
    let (p_post, p_cqn, p_cqe) = (q("post"), q("cqn"), q("cqe"));
    let mut rng = Rng::new(seed);
    let (mut posted, mut failed, mut silent) = (0u32, 0u32, 0u32);
    for n in 0..50_000 {
        let mut qp = random_qp(&mut rng, &p);
        qp.qpn = rng.below(1 << 24) as u32;
        qp.sig_all = rng.chance(0.3);
        qp.send_cqn = rng.below(1 << cq_bits) as u32;
        random_window(&mut rng, &mut qp, 1, 1);
        let w = &mut qp.req.wqes[0];
        w.acked = true;
        w.flags = rng.below(16) as u8 & (send_flags::FENCE | send_flags::SIGNALED | send_flags::SOLICITED);
        if rng.chance(0.3) {
            // Any failure status.
            w.error = Some((WcStatus::from_u8(1 + rng.below(21) as u8), rng.next_u64() as u8));
        }
        let w = w.clone();
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set(p_qpn, u64::from(qp.qpn));
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set_bytes(p_wqe, &bytes_of(&packed.wqes[0]));
        rtl.set(p_index, u64::from(w.index));
        rtl.eval();
        let ctx = format!("seed {seed} (FERRITE_SEED={seed}), case {n}: {w:?}, sig_all {}", qp.sig_all);
        let want = completion(&qp, &w);
        assert_eq!(rtl.get(p_post) == 1, want.is_some(), "a CQE posted: {ctx}");
        let Some((cqn, cqe)) = want else {
            silent += 1;
            continue;
        };
        assert_eq!(rtl.get(p_cqn), u64::from(cqn), "the send CQ: {ctx}");
        assert_eq!(rtl.get_bytes(p_cqe), cqe.to_bytes().to_vec(), "the CQE: {ctx}\nmodel {cqe:?}");
        posted += 1;
        failed += u32::from(w.error.is_some());
    }
    eprintln!("retire: 50,000 entries: {posted} CQEs ({failed} failed), {silent} unsignaled");
    assert!(posted > 20_000 && failed > 10_000 && silent > 10_000, "seed {seed}: too few of a kind");
}
