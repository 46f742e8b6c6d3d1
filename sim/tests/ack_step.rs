//! One step of the completer's walk over the window in RTL (`hdl::engine::comp::ack_step::AckStep`) against
//! the model's `comp::ack_step`: entries of every send operation and length at any path MTU, started or
//! not, finished or not, first PSNs near 0 and the 2^24 wrap; acknowledged PSNs before, inside, at the end
//! of and past the entry; `comp_psn` around them. The verdict (skip, stop, gap, finish), whether and where
//! `comp_psn` moves, and the entry's next first PSN compared.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test ack_step`.

use hdl::top::Top;
use hdl::Width;
use model::nic::comp::{ack_step, AckStep};
use model::nic::context::pack;
use model::nic::qp::SendWqe;
use model::nic::req::packets_for;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::wqe::SendOp;
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xAC05_7E90)
}

/// A PSN near `base`: equal, a little before or after, half the PSN space away (as far before as after,
/// which `Psn::diff` reads as before), or anywhere.
fn near(rng: &mut Rng, base: Psn) -> Psn {
    match rng.below(5) {
        0 => base,
        1 => base.sub(1 + rng.below(4) as u32),
        2 => base.add(1 + rng.below(4) as u32),
        3 => base.add((1 << 23) - 1 + rng.below(3) as u32),
        _ => Psn::new(rng.next_u64() as u32),
    }
}

#[test]
fn an_ack_steps_over_an_entry_as_the_model_does() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::AckStep, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_wqe, p_first, p_psn, p_comp) = (q("attr"), q("wqe"), q("first"), q("psn"), q("comp"));
    let (p_skip, p_stop, p_moved, p_gap, p_finish) = (q("skip"), q("stop"), q("moved"), q("gap"), q("finish"));
    let (p_comp_next, p_next_first) = (q("comp_next"), q("next_first"));
    let ops: Vec<SendOp> = (0..16u8).filter_map(SendOp::from_u8).collect();
    let mut rng = Rng::new(seed);
    let mut seen = [0u32; 5];
    for n in 0..100_000 {
        let mut qp = random_qp(&mut rng, &p);
        let pmtu = qp.attrs.path_mtu();
        let op = ops[rng.below(ops.len() as u64) as usize];
        let len = match rng.below(4) {
            0 => 0,
            1 => 1 + rng.below(u64::from(pmtu)) as u32,
            2 => pmtu * (1 + rng.below(8) as u32),
            _ => rng.below(1 << 20) as u32,
        };
        let npkts = packets_for(op, len, pmtu);
        let first = Psn::new(match rng.below(3) {
            0 => rng.below(16) as u32,
            1 => (1 << 24) - 1 - rng.below(16) as u32,
            _ => rng.below(1 << 24) as u32,
        });
        let started = rng.chance(0.8);
        let w = SendWqe {
            index: 0,
            op,
            flags: rng.below(16) as u8,
            len,
            first_psn: started.then_some(first),
            npkts: if started { npkts } else { 0 },
            acked: rng.chance(0.15),
            error: None,
            wr_id: rng.next_u64(),
        };
        let last = first.add(npkts - 1);
        let psn = match rng.below(3) {
            0 => near(&mut rng, last),
            1 => near(&mut rng, first),
            _ => first.add(rng.below(u64::from(npkts)) as u32),
        };
        let comp = match rng.below(3) {
            0 => near(&mut rng, psn.add(1)),
            1 => near(&mut rng, first),
            _ => first.add(rng.below(u64::from(npkts)) as u32),
        };
        let want = ack_step(&w, psn, comp);
        qp.req.wqes = [w.clone()].into();
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set_bytes(p_wqe, &bytes_of(&packed.wqes[0]));
        rtl.set(p_first, u64::from(first.value()));
        rtl.set(p_psn, u64::from(psn.value()));
        rtl.set(p_comp, u64::from(comp.value()));
        rtl.eval();
        let flags = [p_skip, p_stop, p_moved, p_gap, p_finish].map(|port| rtl.get(port) == 1);
        let (comp_next, next_first) = (Psn::new(rtl.get(p_comp_next) as u32), Psn::new(rtl.get(p_next_first) as u32));
        let got = match flags {
            [true, false, false, false, false] => Some(AckStep::Skip),
            [false, true, moved, false, false] => Some(AckStep::Stop(moved.then_some(comp_next))),
            [false, false, false, true, false] => Some(AckStep::Gap),
            [false, false, false, false, true] => Some(AckStep::Finish(comp_next)),
            _ => None,
        };
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: {w:?} at PMTU {pmtu}, ACK through {psn:?}, comp_psn {comp:?}: \
             model {want:?}, RTL flags (skip, stop, moved, gap, finish) {flags:?}"
        );
        assert_eq!(got, Some(want), "{ctx}");
        if started {
            assert_eq!(next_first, last.add(1), "next first PSN: {ctx}");
        }
        seen[match want {
            AckStep::Skip => 0,
            AckStep::Stop(None) => 1,
            AckStep::Stop(Some(_)) => 2,
            AckStep::Gap => 3,
            AckStep::Finish(_) => 4,
        }] += 1;
    }
    eprintln!("ack_step: skip, stop, stop moving comp_psn, gap, finish: {seen:?}");
    assert!(seen.iter().all(|&k| k > 2000), "seed {seed}: too few of a kind: {seen:?}");
}
