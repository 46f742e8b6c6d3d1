//! One step of the flush of a QP in ERR, in RTL (`hdl::engine::flush::FlushPick`) against the model's
//! `flush::flush_next`: random QP contexts (flushing or not, in ERR or not, send and receive rings of any
//! size, stride and counters, some producer counters past their ring, a receive in progress or not, a
//! requester's window of entries started or not, finished or not) with
//! the rings' control segments in host memory (some rings unreadable), the control segment the RTL asks for
//! given back as the DMA would (a window entry's CQE takes the `wr_id` the entry kept), and what the step does compared with the model: which WQE, the counter it
//! moves, the `qp_resp` or `qp_req` record, the CQE byte for byte, its CQ. The window's front comes in as
//! the RAM gives it, and the oldest unfinished entry behind it as `OldestWalk` finds it.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test flush_pick`.

use hdl::engine::flush::{what, HDR_BYTES};
use hdl::top::Top;
use hdl::Width;
use model::hostmem::HostMemory;
use model::nic::context::pack;
use model::nic::flush::flush_next;
use model::nic::qp::SendWqe;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::QpState;
use wire::contract::verbs::WcStatus;
use wire::contract::wqe::SendOp;
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xF1_05E5)
}

/// A ring of 2^`log_size` slots of 2^`log_stride` bytes in `mem`, every slot's first bytes random (or, now
/// and then, an IOVA with no memory behind it).
fn ring(rng: &mut Rng, mem: &HostMemory, log_size: u8, log_stride: u8) -> u64 {
    if rng.chance(0.1) {
        return 0xDEAD_0000_0000;
    }
    let len = 1usize << (log_size + log_stride);
    let iova = mem.alloc(len);
    let bytes: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
    mem.write(iova, &bytes).expect("the ring written");
    iova
}

#[test]
fn a_flush_step_does_what_the_models_does() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::FlushPick, Width::W8);
    let q = |n| rtl.port(n);
    let (p_qpn, p_valid, p_attr, p_resp, p_hdr) = (q("qpn"), q("qp_valid"), q("attr"), q("resp"), q("hdr"));
    let (p_req, p_front, p_oldest_at, p_base, p_from, p_count, p_req_next) =
        (q("req"), q("front"), q("oldest_at"), q("win_base"), q("walk_from"), q("win_count"), q("req_next"));
    let req_bytes = c.req.width().div_ceil(8) as usize;
    let (p_what, p_addr, p_len) = (q("what"), q("rd_addr"), q("rd_len"));
    let (p_sq_ci, p_rq_ci, p_next, p_cqe, p_cqn, p_live) =
        (q("sq_ci"), q("rq_ci"), q("resp_next"), q("cqe"), q("cqn"), q("qp_live"));
    let resp_bytes = c.resp.width().div_ceil(8) as usize;
    let mut rng = Rng::new(seed);
    let mut seen = [0u32; 5];
    for n in 0..4000 {
        let mem = HostMemory::new();
        let qpn = rng.below(u64::from(p.max_qp)) as u32;
        let mut qp = random_qp(&mut rng, &p);
        qp.flushing = rng.chance(0.8);
        if qp.flushing {
            qp.state = QpState::Err;
        }
        (qp.send_cqn, qp.recv_cqn) = (rng.below(u64::from(p.max_cq)) as u32, rng.below(u64::from(p.max_cq)) as u32);
        for (r, min_stride) in [(&mut qp.sq, 6u8), (&mut qp.rq, 5)] {
            r.log_size = rng.below(8) as u8;
            r.log_stride = min_stride + rng.below(3) as u8;
            r.iova = ring(&mut rng, &mem, r.log_size, r.log_stride);
            r.ci = rng.next_u64() as u16;
            let size = 1u64 << r.log_size;
            // Empty, some posted, full, or past the ring (not sane: left alone).
            let ahead = match rng.below(4) {
                0 => 0,
                1 => 1 + rng.below(size),
                2 => size,
                _ => size + 1 + rng.below(100),
            };
            r.pi = r.ci.wrapping_add(ahead as u16);
        }
        // A receive in progress is the WQE one behind the RQ counter.
        match qp.resp.recv.as_mut() {
            Some(r) if rng.chance(0.5) => r.index = qp.rq.ci.wrapping_sub(1),
            _ => qp.resp.recv = None,
        }
        if rng.chance(0.3) {
            window(&mut rng, &mut qp, p.wqe_window, p.max_qp_init_rd_atom);
        }
        let valid = rng.chance(0.95);
        let before = pack(&qp, &c, 0).expect("the QP packs");
        let r = &qp.req;
        // What the walk finds: the first unfinished entry from the oldest on, past the front.
        let from = r.oldest.max(1);
        let at = (from..r.wqes.len()).find(|&i| !r.wqes[i].acked).unwrap_or(r.wqes.len());
        rtl.set_bytes(p_req, &bytes_of(&before.req));
        rtl.set_bytes(p_front, &before.wqes.first().map(bytes_of).unwrap_or_default());
        rtl.set(p_oldest_at, at as u64);
        rtl.set(p_qpn, u64::from(qpn));
        rtl.set(p_valid, u64::from(valid));
        rtl.set_bytes(p_attr, &bytes_of(&before.attr));
        rtl.set_bytes(p_resp, &bytes_of(&before.resp));
        rtl.tick();
        // The control segment at the address asked for, as the DMA gives it: zeros when the read fails.
        let mut hdr = [0u8; HDR_BYTES];
        assert_eq!(rtl.get(p_len), HDR_BYTES as u64, "seed {seed}, case {n}: the read's length");
        if mem.read(rtl.get(p_addr), &mut hdr).is_err() {
            hdr = [0; HDR_BYTES];
        }
        rtl.set_bytes(p_hdr, &hdr);
        rtl.tick();
        let ctx = format!("seed {seed} (FERRITE_SEED={seed}), case {n}: QP {qpn:#x} valid {valid}: {qp:?}");
        let old = qp.clone();
        let step = if valid && qp.flushing { flush_next(qpn, &mut qp, &mem) } else { None };
        let w = rtl.get(p_what) as u8;
        assert_eq!(rtl.get(p_live) == 1, old.state != QpState::Err, "live: {ctx}");
        seen[usize::from(w)] += 1;
        let Some((cqn, cqe)) = step else {
            assert_eq!(w, what::NONE, "nothing to flush: {ctx}");
            continue;
        };
        if !old.req.wqes.is_empty() {
            let front = old.sq.ci.wrapping_sub(old.req.wqes.len() as u16);
            assert_eq!(rtl.get(p_base), u64::from(front), "the window's front: {ctx}");
            assert_eq!(rtl.get(p_from), from as u64, "the walk's start: {ctx}");
            assert_eq!(rtl.get(p_count), old.req.wqes.len() as u64, "the window's count: {ctx}");
        }
        let want = match () {
            _ if qp.req.wqes.len() != old.req.wqes.len() => what::WINDOW,
            _ if qp.sq.ci != old.sq.ci => what::SQ,
            _ if qp.rq.ci != old.rq.ci => what::RQ,
            _ => what::RECV,
        };
        assert_eq!(w, want, "which WQE: {ctx}");
        // A window entry kept its `wr_id` (the dispatch reads nothing for it; `hdr` is another slot's).
        let addr = match want {
            what::WINDOW => None,
            what::SQ => Some(old.sq.addr(old.sq.ci)),
            what::RQ => Some(old.rq.addr(old.rq.ci)),
            _ => Some(old.rq.addr(old.rq.ci.wrapping_sub(1))),
        };
        if let Some(addr) = addr {
            assert_eq!(rtl.get(p_addr), addr, "the control segment's address: {ctx}");
        }
        assert_eq!(rtl.get(p_cqn), u64::from(cqn), "CQ: {ctx}");
        assert_eq!(rtl.get_bytes(p_cqe), cqe.to_bytes().to_vec(), "CQE {cqe:?}: {ctx}");
        match want {
            what::WINDOW => {
                let after = pack(&qp, &c, 0).expect("the QP packs");
                assert_eq!(&rtl.get_bytes(p_req_next)[..req_bytes], &bytes_of(&after.req)[..], "qp_req: {ctx}");
            }
            what::SQ => assert_eq!(rtl.get(p_sq_ci), u64::from(qp.sq.ci), "SQ counter: {ctx}"),
            what::RQ => assert_eq!(rtl.get(p_rq_ci), u64::from(qp.rq.ci), "RQ counter: {ctx}"),
            _ => {
                let after = pack(&qp, &c, 0).expect("the QP packs");
                assert_eq!(&rtl.get_bytes(p_next)[..resp_bytes], &bytes_of(&after.resp)[..], "qp_resp: {ctx}");
            }
        }
    }
    eprintln!(
        "flush steps: none {}, window {}, SQ {}, receive in progress {}, RQ {}",
        seen[0], seen[4], seen[1], seen[2], seen[3]
    );
    assert!(seen.iter().all(|&k| k > 100), "every kind of step met often: {seen:?}");
}

/// Gives `qp` a requester's window of up to `max` entries, the SQ slots before its consumer counter: a
/// started prefix (READs and atomics among them holding their places), entries finished or not (some
/// failed), `oldest` the first unfinished, the cursor anywhere in it; at most `max_rd` READs and atomics
/// outstanding.
fn window(rng: &mut Rng, qp: &mut model::nic::qp::Qp, max: u32, max_rd: u32) {
    let n = 1 + rng.below(u64::from(max)) as usize;
    let started = rng.below(n as u64 + 1) as usize;
    let ops = [SendOp::RdmaWrite, SendOp::Send, SendOp::RdmaRead, SendOp::AtomicCmpSwp, SendOp::SendWithImm];
    let r = &mut qp.req;
    r.wqes.clear();
    let mut psn = Psn::new(rng.below(1 << 24) as u32);
    let mut outstanding = 0;
    for i in 0..n {
        let op = ops[rng.below(ops.len() as u64) as usize];
        let holds = op.is_read_or_atomic() && i < started;
        let acked = rng.chance(0.4) || (holds && outstanding >= max_rd);
        outstanding += u32::from(holds && !acked);
        let npkts = 1 + rng.below(4) as u32;
        r.wqes.push_back(SendWqe {
            index: qp.sq.ci.wrapping_sub((n - i) as u16),
            op,
            flags: rng.below(16) as u8,
            len: rng.below(5000) as u32,
            first_psn: (i < started).then_some(psn),
            npkts: if i < started { npkts } else { 0 },
            acked,
            error: (acked && rng.chance(0.3)).then_some((WcStatus::LocLenErr, 0)),
            wr_id: rng.next_u64(),
        });
        if i < started {
            psn = psn.add(npkts);
        }
    }
    r.oldest = r.wqes.iter().position(|w| !w.acked).unwrap_or(n);
    r.cursor = rng.below(n as u64 + 1) as usize;
    r.rd_atomic = r.wqes.iter().filter(|w| w.op.is_read_or_atomic() && w.first_psn.is_some() && !w.acked).count() as u8;
}
