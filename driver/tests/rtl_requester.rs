//! The requester on the RTL core, as far as it is built: send WQEs fetched from the SQ into the requester's
//! window (each checked: a WQE whose SGE names no MR is kept with its error), a failed one fetched into an
//! empty window completed at once and its QP taken to ERR, a window that fills leaving the rest in the SQ,
//! and a QP in ERR flushing its window before its SQ. The model follows the core throughout: every fetch a
//! legal `FetchSq` decision, every CQE the same, each QP's contexts and window entries the same after.
//! Nothing is sent yet: the core does not transmit requests.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-driver --test rtl_requester`.

use driver::pair::{connect, open_host, open_host_on, Host};
use driver::rtl::{RtlBackend, RtlHandle};
use driver::*;
use model::net::{LinkConfig, World};

const BUF: usize = 1 << 16;
/// An L_Key no MR has.
const NO_KEY: u32 = 0x00DE_AD00;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0025)
}

/// A model host and an RTL host (a core of `core_qps` QPs in lockstep) with `nqps` QPs each, QP `q`
/// connected to QP `q`.
fn hosts(core_qps: u32, seed: u64, nqps: usize) -> (SharedWorld, Host, RtlHandle, Host) {
    let w = shared(World::attached(driver::pair::nic_config(), LinkConfig::default(), seed));
    let a = open_host(&w, 0, nqps, BUF, QpCap::default(), false).expect("the model host");
    let rtl = RtlBackend::with_lockstep(core_qps);
    let core = rtl.handle();
    let cap = QpCap { max_send_wr: 16, ..QpCap::default() };
    let b = open_host_on(Box::new(rtl), 1, nqps, BUF, cap, false).expect("the RTL host");
    for q in 0..nqps {
        connect(&b, q, 0x100, &a, q, 0x200, &ConnectOpts::default()).expect("connected");
    }
    (w, a, core, b)
}

/// A signaled work request `op` with SGE `sge` (none for an empty one).
fn wr(wr_id: u64, op: SendOp, sge: Option<Sge>) -> SendWr {
    SendWr {
        wr_id,
        opcode: Some(op),
        send_flags: send_flags::SIGNALED,
        sg_list: sge.into_iter().collect(),
        remote_addr: 0x1000,
        rkey: 0x1234,
        ..Default::default()
    }
}

#[test]
fn send_wqes_are_fetched_into_the_window_and_flushed_from_it() {
    fetch_and_flush(16);
}

/// The same on the 1024-QP core (the wake-ups' bitmap and the windows' RAM indexed by 10 bits).
#[test]
fn send_wqes_are_fetched_and_flushed_on_the_1024_qp_core() {
    fetch_and_flush(1024);
}

fn fetch_and_flush(core_qps: u32) {
    let seed = seed();
    let (_w, _a, core, b) = hosts(core_qps, seed, 3);
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}, {core_qps}-QP core");
    let settle = || assert!(core.settle(2_000_000), "{ctx}: the core fetched what it may");
    let agree = |q: usize| core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("{ctx}: QP {q}: {e}"));
    let window = u64::from(sim::core::model_twin(core_qps).profile.wqe_window);

    // QP 0: a SEND, an inline WRITE and a READ, then a SEND whose SGE names no MR, one doorbell: all four in
    // the window (the last with its error, waiting for the ones before it).
    b.buf.write(0x100, &[0x5A; 40]).expect("the inline source");
    let mut inline = wr(2, SendOp::RdmaWrite, Some(b.sge(0x100, 40)));
    inline.send_flags |= send_flags::INLINE;
    let bad = Sge { addr: b.mr.addr, length: 16, lkey: NO_KEY };
    let first = [
        wr(1, SendOp::Send, Some(b.sge(0, 100))),
        inline,
        wr(3, SendOp::RdmaRead, Some(b.sge(0x200, 3000))),
        wr(4, SendOp::Send, Some(bad)),
    ];
    b.qps[0].post_send_list(&first).unwrap_or_else(|e| panic!("{ctx}: posted: {e:?}"));
    settle();
    assert_eq!(core.fetches(), 4, "{ctx}: QP 0's four WQEs fetched");
    agree(0);
    assert!(b.cq.poll(8).expect("polled").is_empty(), "{ctx}: nothing completes before it is sent");

    // QP 1: a WQE naming no MR into an empty window completes at once in error, and the QP enters ERR.
    b.qps[1].post_send(&wr(5, SendOp::RdmaWrite, Some(bad))).expect("posted");
    let got = b.cq.wait(1, 2_000_000).expect("the RTL host's completions");
    assert_eq!(got.len(), 1, "{ctx}: {got:?}");
    let c = &got[0];
    assert_eq!(
        (c.wr_id, c.status, c.opcode, c.qp_num, c.byte_len),
        (5, WcStatus::LocProtErr, WcOpcode::RdmaWrite, b.qps[1].qpn, 0),
        "{ctx}: the failed WQE's completion"
    );
    settle();
    assert_eq!(core.fetches(), 5, "{ctx}");
    agree(1);

    // QP 2: more WQEs than the window holds: it fills, the rest wait in the SQ.
    let many: Vec<SendWr> = (0..window + 3).map(|i| wr(0x20 + i, SendOp::RdmaWrite, Some(b.sge(64 * i, 64)))).collect();
    for w in &many {
        b.qps[2].post_send(w).unwrap_or_else(|e| panic!("{ctx}: posted: {e:?}"));
    }
    settle();
    assert_eq!(core.fetches(), 5 + window, "{ctx}: QP 2's window filled");
    agree(2);

    // QP 0 and QP 2 to ERR: each window flushed front first (QP 0's failed entry too), then QP 2's SQ. QP
    // 0's contexts are compared between its flush steps (a step is a DMA round trip, longer than the
    // cycles between two looks): popping an unfinished front moves `oldest` past the finished entry behind it.
    let err = QpAttr { qp_state: Some(QpState::Err), ..Default::default() };
    b.qps[0].modify(&err, attr::STATE).unwrap_or_else(|e| panic!("{ctx}: QP 0 to ERR: {e:?}"));
    let mut looks = 0;
    while core.flushes() < 4 {
        core.settle(40);
        agree(0);
        looks += 1;
        assert!(looks < 10_000, "{ctx}: QP 0's window flushed");
    }
    b.qps[2].modify(&err, attr::STATE).unwrap_or_else(|e| panic!("{ctx}: QP 2 to ERR: {e:?}"));
    let n = 4 + window as usize + 3;
    let got = b.cq.wait(n, 10_000_000).expect("the RTL host's completions");
    assert_eq!(got.len(), n, "{ctx}: a completion for every WQE held: {got:?}");
    assert!(got.iter().all(|c| c.status == WcStatus::WrFlushErr && c.byte_len == 0), "{ctx}: {got:?}");
    let per_qp = |q: usize| -> Vec<(u64, WcOpcode)> {
        got.iter().filter(|c| c.qp_num == b.qps[q].qpn).map(|c| (c.wr_id, c.opcode)).collect()
    };
    let ops = [WcOpcode::Send, WcOpcode::RdmaWrite, WcOpcode::RdmaRead, WcOpcode::Send];
    assert_eq!(per_qp(0), (1..=4).zip(ops).collect::<Vec<_>>(), "{ctx}: QP 0's window, in order");
    assert_eq!(
        per_qp(2),
        many.iter().map(|w| (w.wr_id, WcOpcode::RdmaWrite)).collect::<Vec<_>>(),
        "{ctx}: QP 2's window, then its SQ, in order"
    );
    assert_eq!(core.flushes(), n as u64, "{ctx}: a flush step a WQE");
    settle();
    for q in 0..3 {
        agree(q);
    }
    let r = core.lockstep_report().expect("lockstep is on");
    assert_eq!((r.mismatches, &r.first), (0, &None), "{ctx}: the model following {} decisions", r.events);
    assert!(r.events as u64 > core.fetches() + core.flushes(), "{ctx}: every fetch and flush step followed");
    eprintln!(
        "RTL requester ({core_qps} QPs): {} send WQEs fetched, {} flushed, {} decisions in lockstep",
        core.fetches(),
        core.flushes(),
        r.events
    );
}
