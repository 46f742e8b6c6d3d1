//! The walk for a requester window's oldest unfinished entry in RTL (`hdl::engine::req::window::OldestWalk`)
//! against the model's `ReqState::settle_oldest`: windows of every size up to the profile's, entry 0 at any
//! SQ counter (so the slots wrap), entries finished or not, the walk started anywhere in them (and at the
//! end); the window RAM answering a slot a cycle after it is asked for, as `Rings::window` does. The index
//! found, and that the walk asks only for the window's slots, compared.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test oldest_walk`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::qp::SendWqe;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::wqe::SendOp;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x01DE_5700)
}

#[test]
fn the_walk_finds_the_oldest_unfinished_entry_as_the_model_does() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let per_qp = p.wqe_window as usize;
    let mut rtl = Sim::new(Top::OldestWalk, Width::W8);
    let q = |n| rtl.port(n);
    let (reset, p_start, p_base, p_from, p_count) = (q("reset"), q("start"), q("base"), q("from"), q("count"));
    let (p_slot, p_entry, p_done, p_at) = (q("r_slot"), q("r_entry"), q("done"), q("at"));
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let mut rng = Rng::new(seed);
    let (mut steps, mut at_end) = (0u64, 0u32);
    for n in 0..20_000 {
        let mut qp = random_qp(&mut rng, &p);
        let count = rng.below(per_qp as u64 + 1) as usize;
        let base = rng.next_u64() as u16;
        let finished = [0.1, 0.5, 0.9][rng.below(3) as usize];
        qp.req.wqes = (0..count)
            .map(|i| SendWqe {
                index: base.wrapping_add(i as u16),
                op: SendOp::RdmaWrite,
                flags: 0,
                len: rng.below(100) as u32,
                first_psn: None,
                npkts: 0,
                acked: rng.chance(finished),
                error: None,
                wr_id: rng.next_u64(),
            })
            .collect();
        let from = rng.below(count as u64 + 1) as usize;
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        // The RAM: QP `qp`'s ring, the entry of SQ counter `i` in slot `i mod wqe_window`.
        let mut ram = vec![Vec::new(); per_qp];
        for (i, w) in packed.wqes.iter().enumerate() {
            ram[usize::from(base.wrapping_add(i as u16)) % per_qp] = bytes_of(w);
        }
        qp.req.oldest = from;
        qp.req.settle_oldest();
        let want = qp.req.oldest;
        let ctx =
            format!("seed {seed} (FERRITE_SEED={seed}), case {n}: {count} entries from {base:#x}, walk from {from}");
        rtl.set(p_base, u64::from(base));
        rtl.set(p_from, from as u64);
        rtl.set(p_count, count as u64);
        rtl.set(p_start, 1);
        rtl.tick();
        rtl.set(p_start, 0);
        let mut cycles = 0;
        loop {
            // The slot asked for now is answered after the edge.
            let slot = rtl.get(p_slot) as usize % per_qp;
            let done = rtl.get(p_done) == 1;
            if done {
                break;
            }
            rtl.tick();
            let entry = &ram[slot];
            rtl.set_bytes(p_entry, if entry.is_empty() { &[0u8; 8][..] } else { entry });
            cycles += 1;
            assert!(cycles <= 2 * per_qp + 4, "the walk ends: {ctx}");
        }
        assert_eq!(rtl.get(p_at) as usize, want, "the oldest unfinished entry: {ctx}");
        steps += cycles as u64;
        at_end += u32::from(want == count);
    }
    eprintln!("oldest_walk: 20,000 walks, {steps} cycles, {at_end} found every entry finished");
    assert!(at_end > 1000 && at_end < 19_000, "seed {seed}: walks ending at the window's end, and before it");
}
