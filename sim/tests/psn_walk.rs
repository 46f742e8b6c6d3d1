//! The walk for a window entry's first PSN in RTL (`hdl::engine::req::window::PsnWalk`) against the model's
//! `context::unpack`, which derives the started entries' PSNs from `qp_req.psn` the same way: windows of
//! every size up to the profile's with a started prefix of every length, entries of every send operation
//! and length at every path MTU, `psn` anywhere (the sums wrap past 2^24), the walk started at every entry
//! (and at the end); the window RAM answering a slot a cycle after it is asked for. The PSN found compared.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test psn_walk`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::{pack, unpack};
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_window, window_ram};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x95_3A17)
}

#[test]
fn the_walk_finds_an_entrys_first_psn_as_the_model_does() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let per_qp = p.wqe_window as usize;
    let mut rtl = Sim::new(Top::PsnWalk, Width::W8);
    let q = |n| rtl.port(n);
    let (reset, p_start, p_attr, p_base, p_from) = (q("reset"), q("start"), q("attr"), q("base"), q("from"));
    let (p_count, p_psn, p_slot, p_entry, p_done, p_first) =
        (q("count"), q("psn"), q("r_slot"), q("r_entry"), q("done"), q("first"));
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let mut rng = Rng::new(seed);
    let (mut started_from, mut steps) = (0u32, 0u64);
    for n in 0..20_000 {
        let mut qp = random_qp(&mut rng, &p);
        let count = rng.below(per_qp as u64 + 1) as usize;
        let started = rng.below(count as u64 + 1) as usize;
        random_window(&mut rng, &mut qp, count, started);
        let from = rng.below(count as u64 + 1) as usize;
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        let back = unpack(&packed, &c, qp.qpn, 0).expect("the QP unpacks");
        let want = back.req.wqes.get(from).and_then(|w| w.first_psn).unwrap_or(back.req.psn);
        started_from += u32::from(from < started);
        let base = qp.sq.ci.wrapping_sub(count as u16);
        let ram = window_ram(&packed.wqes, base, per_qp);
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: {count} entries ({started} started), from {from}: {:?}",
            qp.req
        );
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set(p_base, u64::from(base));
        rtl.set(p_from, from as u64);
        rtl.set(p_count, count as u64);
        rtl.set(p_psn, u64::from(qp.req.psn.value()));
        rtl.set(p_start, 1);
        rtl.tick();
        rtl.set(p_start, 0);
        let mut cycles = 0;
        while rtl.get(p_done) == 0 {
            let slot = rtl.get(p_slot) as usize % per_qp;
            rtl.tick();
            rtl.set_bytes(p_entry, &ram[slot]);
            cycles += 1;
            assert!(cycles <= 2 * per_qp + 4, "the walk ends: {ctx}");
        }
        assert_eq!(Psn::new(rtl.get(p_first) as u32), want, "the first PSN: {ctx}");
        steps += cycles as u64;
    }
    eprintln!("psn_walk: 20,000 walks in {steps} cycles, {started_from} from a started entry");
    assert!(started_from > 5000, "seed {seed}: walks from started entries");
}
