//! A QP's readiness to send in RTL (`hdl::engine::req::ready::ReqReady`) against the model's
//! `req::sendable`: QPs in every state (flushing or not), windows of any fill with a started prefix and
//! acknowledged entries, the cursor anywhere in the window and past it, unacknowledged PSN spans around the
//! limit (and across the 2^24 wrap), READs and atomics outstanding up to and past `max_rd_atomic` (0 too),
//! fenced WQEs, an RNR wait; the cursor's window entry packed as the model packs it.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test req_ready`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::qp::SendWqe;
use model::nic::req::sendable;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::wqe::SendOp;
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x4EAD_7000)
}

#[test]
fn a_qp_is_ready_to_send_as_the_model_finds_it() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::ReqReady, Width::W8);
    let (p_attr, p_req, p_wqe, p_ready) = (rtl.port("attr"), rtl.port("req"), rtl.port("wqe"), rtl.port("ready"));
    let ops: Vec<SendOp> = (0..16u8).filter_map(SendOp::from_u8).collect();
    let mut rng = Rng::new(seed);
    let (mut ready, mut not_ready) = (0u32, 0u32);
    for n in 0..100_000 {
        let mut qp = random_qp(&mut rng, &p);
        qp.attrs.max_rd_atomic = rng.below(u64::from(p.max_qp_init_rd_atom) + 1) as u8;
        let pmtu = qp.attrs.path_mtu();
        let r = &mut qp.req;
        r.psn = Psn::new(rng.next_u64() as u32);
        let fill = rng.below(u64::from(p.wqe_window) + 1) as usize;
        let started = rng.below(fill as u64 + 1) as usize;
        let mut first = r.psn;
        let mut window: Vec<SendWqe> = (0..fill)
            .map(|i| {
                let op = ops[rng.below(ops.len() as u64) as usize];
                let len = rng.below(3 * u64::from(pmtu)) as u32;
                SendWqe {
                    index: i as u16,
                    op,
                    flags: rng.below(16) as u8,
                    len,
                    first_psn: None,
                    npkts: 0,
                    acked: i < started && rng.chance(0.3),
                    error: None,
                    wr_id: rng.next_u64(),
                }
            })
            .collect();
        for w in window[..started].iter_mut().rev() {
            w.npkts = model::nic::req::packets_for(w.op, w.len, pmtu);
            first = first.sub(w.npkts);
            w.first_psn = Some(first);
        }
        r.wqes = window.into();
        r.cursor = rng.below(fill as u64 + 2).min(fill as u64) as usize;
        r.comp_psn = first;
        let span = match rng.below(4) {
            0 => 127 + rng.below(3) as u32,
            1 => (1 << 24) - 1 - rng.below(4) as u32,
            _ => rng.below(128) as u32,
        };
        r.cursor_psn = r.comp_psn.add(span);
        r.rd_atomic = rng.below(u64::from(p.max_qp_init_rd_atom) + 1) as u8;
        r.oldest = r.wqes.iter().position(|w| !w.acked).unwrap_or(r.wqes.len());
        r.rnr_wait = rng.chance(0.1).then(|| (0, Psn::new(0)));
        let want = sendable(&qp);
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set_bytes(p_req, &bytes_of(&packed.req));
        let entry = packed
            .wqes
            .get(qp.req.cursor)
            .map(bytes_of)
            .unwrap_or_else(|| vec![0xff; hdl::engine::req::ready::WQE_BITS / 8]);
        rtl.set_bytes(p_wqe, &entry);
        rtl.eval();
        let got = rtl.get(p_ready) == 1;
        assert_eq!(
            got,
            want,
            "seed {seed} (FERRITE_SEED={seed}), case {n}: QP in {:?} (flushing {}, max_rd_atomic {}), cursor {} of \
             {:?}, PSNs {:?}..{:?}, {} READs or atomics out, RNR wait {:?}",
            qp.state,
            qp.flushing,
            qp.attrs.max_rd_atomic,
            qp.req.cursor,
            qp.req.wqes,
            qp.req.comp_psn,
            qp.req.cursor_psn,
            qp.req.rd_atomic,
            qp.req.rnr_wait
        );
        if want {
            ready += 1;
        } else {
            not_ready += 1;
        }
    }
    eprintln!("req_ready: {ready} ready, {not_ready} not");
    assert!(ready > 10_000 && not_ready > 10_000, "too few of a kind");
}
