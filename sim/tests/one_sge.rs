//! A READ response's payload as a gather list of one SGE, in RTL (`hdl::host::gather::OneSge`), against the
//! model's: `resp::take_read` gives the response's VA and length, which the model reads as one piece; the
//! list on the gather's `sges` port must be that one SGE with every entry after it zero (a zero-length entry
//! ends the walk). Random READs of any VA, length and path MTU are stepped response by response.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test one_sge`.

use hdl::top::Top;
use hdl::Width;
use model::nic::qp::{RespItem, Sge};
use model::nic::resp::take_read;
use model::rng::Rng;
use sim::responder::{random_qp, sges_bytes};
use sim::Sim;
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0_5E6E)
}

#[test]
fn a_read_responses_list_is_its_one_piece() {
    let seed = seed();
    let p = Top::engine_profile();
    let mut rtl = Sim::new(Top::OneSge, Width::W8);
    let (p_addr, p_len, p_sges) = (rtl.port("addr"), rtl.port("len"), rtl.port("sges"));
    let mut rng = Rng::new(seed);
    let mut responses = 0u32;
    for n in 0..2_000 {
        let mut qp = random_qp(&mut rng, &p);
        qp.resp.out.clear();
        let pmtu = qp.attrs.path_mtu();
        let resid = match rng.below(3) {
            0 => rng.below(u64::from(pmtu) + 1) as u32,
            _ => rng.below(16 * u64::from(pmtu)) as u32,
        };
        let va = if rng.chance(0.1) { u64::MAX - rng.below(1 << 16) } else { rng.next_u64() };
        let msn = rng.below(1 << 24) as u32;
        qp.resp.out.push_back(RespItem::Read { psn: Psn::new(0), va, resid, at_base: true, msn });
        while let Some(r) = take_read(&mut qp, pmtu) {
            rtl.set(p_addr, r.va);
            rtl.set(p_len, u64::from(r.len));
            rtl.eval();
            let want = sges_bytes(&[Sge { addr: r.va, lkey: 0, length: r.len }]);
            assert_eq!(rtl.get_bytes(p_sges), want, "seed {seed} (FERRITE_SEED={seed}), READ {n}: {r:?}");
            responses += 1;
        }
    }
    eprintln!("one_sge: 2,000 READs, {responses} responses");
    assert!(responses > 10_000, "seed {seed}: too few responses: {responses}");
}
