//! Where go-back-N restarts sending, in RTL (`hdl::engine::req::window::RewindWalk`), against the model's
//! `comp::rewind` on the QP its packed context unpacks to (the entries' first PSNs derived from
//! `qp_req.psn`, as the RTL derives them): windows of every size up to the profile's with a started prefix
//! of every length, some entries finished, entries of every send operation and length at every path MTU,
//! `psn` anywhere (the sums wrap past 2^24), the walk from every entry (and from the end), and the PSN to go
//! back to inside a started entry, at the next new PSN, or anywhere; the window RAM answering a slot a cycle
//! after it is asked for. The cursor and its PSN compared.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test rewind_walk`.

use hdl::top::Top;
use hdl::Width;
use model::nic::comp::rewind;
use model::nic::context::{pack, unpack};
use model::nic::qp::SendWqe;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_window, window_ram};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x4E_3D21)
}

#[test]
fn the_walk_finds_where_go_back_n_restarts_as_the_model_does() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let per_qp = p.wqe_window as usize;
    let mut rtl = Sim::new(Top::RewindWalk, Width::W8);
    let q = |n| rtl.port(n);
    let (reset, p_start, p_attr, p_base, p_from) = (q("reset"), q("start"), q("attr"), q("base"), q("from"));
    let (p_count, p_psn, p_target, p_slot, p_entry) = (q("count"), q("psn"), q("target"), q("r_slot"), q("r_entry"));
    let (p_done, p_cursor, p_cursor_psn) = (q("done"), q("cursor"), q("cursor_psn"));
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let mut rng = Rng::new(seed);
    // Walks that ended inside a started entry, at one not started, and past the last.
    let (mut inside, mut unstarted, mut past, mut steps) = (0u32, 0u32, 0u32, 0u64);
    for n in 0..20_000 {
        let mut qp = random_qp(&mut rng, &p);
        let count = rng.below(per_qp as u64 + 1) as usize;
        let started = rng.below(count as u64 + 1) as usize;
        random_window(&mut rng, &mut qp, count, started);
        qp.req.oldest = rng.below(count as u64 + 1) as usize;
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        let mut back = unpack(&packed, &c, qp.qpn, 0).expect("the QP unpacks");
        let from = back.req.oldest;
        // The PSN to go back to: inside a started entry from `oldest` on, the next new PSN, or anywhere.
        let holders: Vec<&SendWqe> =
            back.req.wqes.iter().skip(from).filter(|w| w.first_psn.is_some() && w.npkts > 0).collect();
        let target = match rng.below(5) {
            0..=2 if !holders.is_empty() => {
                let w = holders[rng.below(holders.len() as u64) as usize];
                w.first_psn.expect("started").add(rng.below(u64::from(w.npkts)) as u32)
            }
            3 => back.req.psn,
            _ => Psn::new(rng.next_u64() as u32),
        };
        rewind(&mut back, target);
        let (want_cursor, want_psn) = (back.req.cursor, back.req.cursor_psn);
        match back.req.wqes.get(want_cursor) {
            Some(w) if w.first_psn.is_some() => inside += 1,
            Some(_) => unstarted += 1,
            None => past += 1,
        }
        let base = qp.sq.ci.wrapping_sub(count as u16);
        let ram = window_ram(&packed.wqes, base, per_qp);
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: {count} entries ({started} started), from {from}, \
             target {target:?}: {:?}",
            qp.req
        );
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set(p_base, u64::from(base));
        rtl.set(p_from, from as u64);
        rtl.set(p_count, count as u64);
        rtl.set(p_psn, u64::from(qp.req.psn.value()));
        rtl.set(p_target, u64::from(target.value()));
        rtl.set(p_start, 1);
        rtl.tick();
        rtl.set(p_start, 0);
        let mut cycles = 0;
        while rtl.get(p_done) == 0 {
            let slot = rtl.get(p_slot) as usize % per_qp;
            rtl.tick();
            rtl.set_bytes(p_entry, &ram[slot]);
            cycles += 1;
            assert!(cycles <= 4 * per_qp + 8, "the walk ends: {ctx}");
        }
        assert_eq!(rtl.get(p_cursor) as usize, want_cursor, "the cursor: {ctx}");
        assert_eq!(Psn::new(rtl.get(p_cursor_psn) as u32), want_psn, "the cursor's PSN: {ctx}");
        steps += cycles as u64;
    }
    eprintln!(
        "rewind_walk: 20,000 walks in {steps} cycles: {inside} to a started entry, {unstarted} to one not \
         started, {past} past the last"
    );
    assert!(inside > 2000 && unstarted > 3000 && past > 1000, "seed {seed}: every outcome met often");
}
