//! The dispatch's newest-first scan of a QP's responder resources in RTL (`hdl::engine::resp::dup_read::
//! ResScan`), against the model's: `find_read` and `find_atomic` walk `resources` newest first, and the
//! packed context keeps resource `j` (oldest first) in ring slot `res_head + j`. For random rings (any head,
//! none to `max_qp_rd_atom` resources kept) and every scan step, whether a resource is that far back and its
//! slot are compared.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test res_scan`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::qp::{Resource, ResourceKind};
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x2E5_5CA2)
}

#[test]
fn the_scan_walks_the_models_resources_newest_first() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::ResScan, Width::W8);
    let (p_resp, p_i, p_slot, p_more) = (rtl.port("resp"), rtl.port("i"), rtl.port("slot"), rtl.port("more"));
    let mut rng = Rng::new(seed);
    let mut seen = vec![0u32; p.max_qp_rd_atom as usize + 1];
    for n in 0..20_000 {
        let mut q = random_qp(&mut rng, &p);
        q.resp.res_head = rng.next_u64() as u8;
        let kept = rng.below(u64::from(p.max_qp_rd_atom) + 1) as usize;
        q.resp.resources = (0..kept)
            .map(|k| Resource {
                first_psn: Psn::new(k as u32),
                msn: k as u32,
                kind: ResourceKind::Atomic { orig: rng.next_u64() },
            })
            .collect();
        let packed = pack(&q, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_resp, &bytes_of(&packed.resp));
        let newest_first: Vec<u32> = q.resp.resources.iter().rev().map(|r| r.msn).collect();
        for i in 0..=kept + 1 {
            rtl.set(p_i, i as u64);
            rtl.eval();
            let ctx =
                format!("seed {seed} (FERRITE_SEED={seed}), case {n}: head {}, {kept} kept, step {i}", q.resp.res_head);
            assert_eq!(rtl.get(p_more) == 1, i < kept, "a resource that far back: {ctx}");
            if let Some(&j) = newest_first.get(i) {
                // Resource `j` (oldest first; its MSN is its place) is in slot `res_head + j`.
                let want = q.resp.res_head.wrapping_add(j as u8);
                assert_eq!(rtl.get(p_slot) as u8, want, "its slot: {ctx}");
            }
        }
        seen[kept] += 1;
    }
    eprintln!("res_scan: 20,000 rings by resources kept: {seen:?}");
    assert!(seen.iter().all(|&k| k > 1000), "seed {seed}: too few of a count: {seen:?}");
}
