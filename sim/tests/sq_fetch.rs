//! A send WQE's entry pushed into the requester's window, in RTL (`hdl::engine::req::window::SqFetch`),
//! against the model's `req::can_fetch`, `ReqState::push` and, for a failed entry into an empty window, the
//! retire that pops it at once: random QPs of every state (flushing or not), SQs with nothing posted, WQEs
//! posted, or a producer counter further ahead than the ring holds, windows of every size (full ones too)
//! with a started prefix and finished entries, and entries that failed at the fetch. Whether the QP may
//! fetch, the WQE's SQ counter and slot, the consumer counter after, whether the entry retires at once, and
//! `qp_req` after the push compared bit for bit.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test sq_fetch`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::qp::SendWqe;
use model::nic::req::can_fetch;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_window};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::WcStatus;
use wire::contract::wqe::SendOp;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5F_E7C4)
}

#[test]
fn the_push_is_the_models() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let window = p.wqe_window as u64;
    let mut rtl = Sim::new(Top::SqFetch, Width::W8);
    let q = |n| rtl.port(n);
    let (p_valid, p_attr, p_req, p_entry) = (q("qp_valid"), q("attr"), q("req"), q("entry"));
    let (p_fetchable, p_index, p_slot, p_ci) = (q("fetchable"), q("index"), q("slot"), q("sq_ci"));
    let (p_retire, p_next) = (q("retire"), q("req_next"));
    let ops: Vec<SendOp> = (0..16u8).filter_map(SendOp::from_u8).collect();
    let mut rng = Rng::new(seed);
    let (mut pushed, mut refused, mut retired) = (0u32, 0u32, 0u32);
    for n in 0..50_000 {
        let mut qp = random_qp(&mut rng, &p);
        let count = if rng.chance(0.1) { window } else { rng.below(window + 1) } as usize;
        let started = rng.below(count as u64 + 1) as usize;
        random_window(&mut rng, &mut qp, count, started);
        qp.req.oldest = qp.req.wqes.iter().position(|w| !w.acked).unwrap_or(count);
        qp.req.cursor = rng.below(count as u64 + 1) as usize;
        qp.sq.log_size = rng.below(9) as u8;
        let size = 1u64 << qp.sq.log_size;
        let ahead = match rng.below(6) {
            0 => 0,
            1 => size + 1 + rng.below(100),
            _ => 1 + rng.below(size),
        };
        qp.sq.pi = qp.sq.ci.wrapping_add(ahead as u16);
        // The entry `WqeFetch` made of the WQE at the consumer counter; some failed as they were fetched.
        let failed = rng.chance(0.2);
        let w = SendWqe {
            index: qp.sq.ci,
            op: ops[rng.below(ops.len() as u64) as usize],
            flags: rng.next_u64() as u8 & 0x0F,
            len: rng.below(1 << 20) as u32,
            first_psn: None,
            npkts: 0,
            acked: failed,
            error: failed.then_some((WcStatus::LocLenErr, 0)),
            wr_id: rng.next_u64(),
        };
        let valid = rng.chance(0.95);
        // The entry as the window holds it (packed on its own: a full window has no room for it).
        let mut alone = qp.clone();
        alone.req.wqes = [w.clone()].into();
        (alone.req.cursor, alone.req.oldest) = (0, 0);
        let entry = pack(&alone, &c, 0).expect("the entry packs").wqes.pop().expect("the entry");
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set(p_valid, u64::from(valid));
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set_bytes(p_req, &bytes_of(&packed.req));
        rtl.set_bytes(p_entry, &bytes_of(&entry));
        rtl.eval();
        let ctx =
            format!("seed {seed} (FERRITE_SEED={seed}), case {n}: {:?} {:?} {:?}, {w:?}", qp.state, qp.sq, qp.req);
        let may = valid && can_fetch(&qp, &p);
        assert_eq!(rtl.get(p_fetchable) == 1, may, "whether the QP may fetch: {ctx}");
        if !may {
            refused += 1;
            continue;
        }
        assert_eq!(rtl.get(p_index) as u16, qp.sq.ci, "the WQE's SQ counter: {ctx}");
        assert_eq!(rtl.get(p_slot) as u8, qp.sq.ci as u8, "its slot: {ctx}");
        assert_eq!(rtl.get(p_ci) as u16, qp.sq.ci.wrapping_add(1), "the consumer counter after: {ctx}");
        let mut m = qp.clone();
        m.sq.ci = m.sq.ci.wrapping_add(1);
        m.req.push(w.clone());
        // A failed entry alone in the window retires at once (`comp::retire` pops it).
        let at_once = failed && count == 0;
        if at_once {
            m.req.pop();
        }
        assert_eq!(rtl.get(p_retire) == 1, at_once, "whether the entry retires at once: {ctx}");
        let want = bytes_of(&pack(&m, &c, 0).expect("the QP packs after the push").req);
        let got = rtl.get_bytes(p_next);
        assert_eq!(&got[..want.len()], &want[..], "qp_req after the push: {ctx}");
        pushed += 1;
        retired += u32::from(at_once);
    }
    eprintln!(
        "sq_fetch: 50,000 QPs: {pushed} entries pushed ({retired} failed into an empty window), {refused} refused"
    );
    assert!(pushed > 10_000 && refused > 10_000 && retired > 200, "seed {seed}: too few of a kind");
}
