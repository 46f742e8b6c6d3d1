//! The requester on the RTL core, as far as it is built: send WQEs fetched from the SQ into the requester's
//! window (each checked: a WQE whose SGE names no MR is kept with its error), a failed one fetched into an
//! empty window completed at once and its QP taken to ERR, a window that fills leaving the rest in the SQ,
//! and a QP in ERR flushing its window before its SQ. The model follows the core throughout: every fetch a
//! legal `FetchSq` decision, every CQE the same, each QP's contexts and window entries the same after.
//!
//! And the requests the core sends, to a model NIC as the responder: SENDs (from SGEs, several SGEs, inline,
//! with immediate), WRITEs of many packets across a PSN wrap and past `MAX_PKTS_PER_ACK`, a WRITE with
//! immediate, a READ and atomics, each packet a legal requester `Tx` decision whose frame is the model's
//! bit for bit; what they carry lands in the model host, and a fenced WQE waits behind the READ and atomics
//! still outstanding (the responses are not given to the core in that test).
//!
//! And the completer: ACKs, READ responses and atomic ACKs from the model host complete the core's WQEs in
//! order, the data they bring placed; malformed and stale responses are dropped or fail the READ as the model
//! does.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-driver --test rtl_requester`.

use driver::pair::{connect, open_host, open_host_on, rtl_turn, run_external, Host};
use driver::rtl::{RtlBackend, RtlHandle};
use driver::*;
use hdl::Width;
use model::net::{LinkConfig, World};
use wire::contract::regs::Counter;

#[macro_use]
mod widths;

const BUF: usize = 1 << 16;
/// An L_Key no MR has.
const NO_KEY: u32 = 0x00DE_AD00;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0025)
}

/// A model host and an RTL host (a core of `core_qps` QPs in lockstep) with `nqps` QPs each and buffers of
/// `buf` bytes, QP `q` connected to QP `q` with `opts`, the RTL host's requesters starting at PSN `psn`.
fn hosts(
    width: Width,
    core_qps: u32,
    seed: u64,
    nqps: usize,
    buf: usize,
    psn: u32,
    opts: &ConnectOpts,
) -> (SharedWorld, Host, RtlHandle, Host) {
    let w = shared(World::attached(driver::pair::nic_config(), LinkConfig::default(), seed));
    let a = open_host(&w, 0, nqps, buf, QpCap::default(), false).expect("the model host");
    let rtl = RtlBackend::with_lockstep(core_qps, width);
    let core = rtl.handle();
    let cap = QpCap { max_send_wr: 16, ..QpCap::default() };
    let b = open_host_on(Box::new(rtl), 1, nqps, buf, cap, false).expect("the RTL host");
    for q in 0..nqps {
        connect(&b, q, psn, &a, q, 0x200, opts).expect("connected");
    }
    (w, a, core, b)
}

/// Frames both ways until neither side has more to say: each of the model host's answers goes through
/// `answer` (the frames the core is given for it, in order), one at a time, and the contexts of the RTL host's
/// QPs are compared after each and after each turn of the core's.
fn exchange(w: &SharedWorld, core: &RtlHandle, b: &Host, ctx: &str, answer: impl FnMut(Vec<u8>) -> Vec<Vec<u8>>) {
    exchange_lossy(w, core, b, ctx, |_| true, answer);
}

/// `exchange`, the core's frames each going to the model host only if `deliver` says so.
fn exchange_lossy(
    w: &SharedWorld,
    core: &RtlHandle,
    b: &Host,
    ctx: &str,
    mut deliver: impl FnMut(&[u8]) -> bool,
    mut answer: impl FnMut(Vec<u8>) -> Vec<Vec<u8>>,
) {
    let agree = |at: &str| {
        for (q, qp) in b.qps.iter().enumerate() {
            core.context_agrees(qp.qpn).unwrap_or_else(|e| panic!("{ctx}: QP {q} after {at}: {e}"));
        }
    };
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for pass in 0.. {
        for (i, f) in frames.into_iter().flat_map(&mut answer).enumerate() {
            core.receive(f);
            assert!(core.settle(5_000_000), "{ctx}: the core settled after frame {i} of pass {pass}");
            agree(&format!("frame {i} of pass {pass}"));
        }
        assert!(core.settle(5_000_000), "{ctx}: the core settled in pass {pass}");
        agree(&format!("pass {pass}"));
        for f in core.take_sent() {
            if deliver(&f) {
                lock_world(w).inject_external(f);
            }
        }
        frames = run_external(w, 200_000_000);
        if frames.is_empty() {
            break;
        }
        assert!(pass < 40, "{ctx}: the exchange goes on after {pass} passes");
    }
}

/// The model followed every decision of the core with no mismatch, at least `least` of them (a decision for
/// every packet sent and frame taken, say): how many.
fn followed(core: &RtlHandle, ctx: &str, least: u64, what: &str) -> usize {
    let c = core.read_counters();
    let sent = core.requests().0 + core.responses();
    assert_eq!(c[Counter::rx_frames as usize], core.frames(), "{ctx}: rx_frames is the frames decided");
    assert_eq!(c[Counter::tx_frames as usize], sent, "{ctx}: tx_frames is the frames sent");
    let r = core.lockstep_report().expect("lockstep is on");
    assert_eq!((r.mismatches, &r.first), (0, &None), "{ctx}: the model following {} decisions", r.events);
    assert!(r.events as u64 >= least, "{ctx}: {what}: {} decisions, {least} at least", r.events);
    r.events
}

/// The first offset where `got` and `want` differ, with both bytes there.
fn first_diff(got: &[u8], want: &[u8]) -> Option<(usize, u8, u8)> {
    got.iter().zip(want).enumerate().find(|(_, (g, w))| g != w).map(|(i, (&g, &w))| (i, g, w))
}

/// Runs the core a cycle at a time until it has decided its first requester packet (within 100,000 cycles).
fn run_to_first_packet(core: &RtlHandle, ctx: &str) {
    for cycle in 0.. {
        if core.requests().0 > 0 {
            return;
        }
        assert!(cycle < 100_000, "{ctx}: the core decided its first packet");
        core.run(1);
    }
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

fn send_wqes_are_fetched_into_the_window_and_flushed_from_it(width: Width) {
    fetch_and_flush(width, 16);
}

/// The same on the 1024-QP core (the wake-ups' bitmap and the windows' RAM indexed by 10 bits).
#[test]
fn send_wqes_are_fetched_and_flushed_on_the_1024_qp_core() {
    fetch_and_flush(Width::W8, 1024);
}

fn fetch_and_flush(width: Width, core_qps: u32) {
    let seed = seed();
    let (_w, _a, core, b) = hosts(width, core_qps, seed, 3, BUF, 0x100, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}, {core_qps}-QP core");
    let settle = || assert!(core.settle(2_000_000), "{ctx}: the core fetched what it may");
    let agree = |q: usize| core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("{ctx}: QP {q}: {e}"));
    let window = u64::from(sim::core::model_twin(core_qps, width).profile.wqe_window);

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
    let events = followed(&core, &ctx, core.fetches() + core.flushes() + 1, "every fetch and flush step followed");
    eprintln!(
        "RTL requester ({core_qps} QPs): {} send WQEs fetched, {} flushed, {} decisions in lockstep",
        core.fetches(),
        core.flushes(),
        events
    );
}

fn requests_from_the_rtl_core_reach_a_model_responder(width: Width) {
    send_requests(width, 16);
}

/// Requests of every kind from the core to the model host: what lands there, the packets sent, lockstep.
fn send_requests(width: Width, core_qps: u32) {
    const BIG: usize = 1 << 18;
    let seed = seed();
    let mut rng = model::rng::Rng::new(seed);
    // PSNs from 2^24 - 8: QP 0's packets wrap.
    let (w, a, core, b) = hosts(width, core_qps, seed, 2, BIG, 0xFF_FFF8, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}, {core_qps}-QP core");
    let src: Vec<u8> = (0..BIG).map(|_| rng.below(256) as u8).collect();
    b.buf.write(0, &src).expect("the sources");
    let zeros = vec![0u8; BIG];
    a.buf.write(0, &zeros).expect("the targets cleared");
    let (fa, cs) = (0x1_0000u64, 0x1_0008u64);
    a.buf.write(fa as usize, &0x1111_2222_3333_4444u64.to_le_bytes()).expect("the fetch-add target");
    a.buf.write(cs as usize, &0x5555_6666_7777_8888u64.to_le_bytes()).expect("the compare-swap target");
    // The atomics' targets are host-order (little-endian) words. The model host's receives: 4 KiB each from 0x8000.
    for r in 0..4u64 {
        let sge = a.sge(0x8000 + 0x1000 * r, 0x1000);
        a.qps[0].post_recv(&RecvWr { wr_id: 0x50 + r, sg_list: vec![sge] }).expect("a receive posted");
    }
    let remote = |off: u64| a.mr.addr + off;
    let req = |wr_id, op, sg_list: Vec<Sge>| SendWr {
        wr_id,
        opcode: Some(op),
        send_flags: send_flags::SIGNALED,
        sg_list,
        rkey: a.mr.rkey,
        ..Default::default()
    };
    let mut inline = req(2, SendOp::SendWithImm, vec![b.sge(0x300, 40)]);
    (inline.send_flags, inline.imm_data) = (inline.send_flags | send_flags::INLINE, 0xCAFE_0001);
    let mut write = req(3, SendOp::RdmaWrite, vec![b.sge(0x1000, 5000)]);
    write.remote_addr = remote(0x2000);
    let mut three =
        req(4, SendOp::Send, vec![b.sge(0x4000, 100), b.sge(0x4200, 0), b.sge(0x4400, 200), b.sge(0x4800, 1)]);
    three.send_flags |= send_flags::SOLICITED;
    let mut write_imm = req(5, SendOp::RdmaWriteWithImm, vec![b.sge(0x5000, 2000)]);
    (write_imm.remote_addr, write_imm.imm_data) = (remote(0x6000), 0xCAFE_0002);
    let mut read = req(6, SendOp::RdmaRead, vec![b.sge(0x9000, 3000)]);
    read.remote_addr = remote(0x100);
    let mut fetch_add = req(7, SendOp::AtomicFetchAdd, vec![b.sge(0xA000, 8)]);
    (fetch_add.remote_addr, fetch_add.compare_add) = (remote(fa), 0x10);
    let mut inline_write = req(8, SendOp::RdmaWrite, vec![b.sge(0x600, 20)]);
    (inline_write.send_flags, inline_write.remote_addr) =
        (inline_write.send_flags | send_flags::INLINE, remote(0x7000));
    let qp0 =
        [req(1, SendOp::Send, vec![b.sge(0x200, 100)]), inline, write, three, write_imm, read, fetch_add, inline_write];
    b.qps[0].post_send_list(&qp0).unwrap_or_else(|e| panic!("{ctx}: QP 0's WQEs: {e:?}"));
    // QP 1: a WRITE of 66 packets (an AckReq at the 64th), a compare-swap, then a fenced WRITE that waits.
    let mut long = req(9, SendOp::RdmaWrite, vec![b.sge(0, 66 * 1024)]);
    long.remote_addr = remote(0x1_0000 + 64);
    let mut swap = req(10, SendOp::AtomicCmpSwp, vec![b.sge(0xA008, 8)]);
    (swap.remote_addr, swap.compare_add, swap.swap) = (remote(cs), 0x5555_6666_7777_8888, 0xABCD);
    let mut fenced = req(11, SendOp::RdmaWrite, vec![b.sge(0, 64)]);
    (fenced.send_flags, fenced.remote_addr) = (fenced.send_flags | send_flags::FENCE, remote(0));
    b.qps[1].post_send_list(&[long, swap, fenced]).unwrap_or_else(|e| panic!("{ctx}: QP 1's WQEs: {e:?}"));

    // The core sends what it may; the model host takes it. Its answers are not given to the core.
    let mut opcodes = Vec::new();
    let (_, settled) = rtl_turn(&w, &core, Vec::new(), 5_000_000, |f| {
        let h = wire::parse(f).expect("a RoCE frame").hdr;
        opcodes.push((h.bth.dest_qp, h.bth.opcode, h.bth.psn.value(), h.bth.ack_req));
    });
    assert!(settled, "{ctx}: the core sent what it may");
    let answers = run_external(&w, 200_000_000);
    assert!(!answers.is_empty(), "{ctx}: the model host answered");

    // The packets: QP 0's 12 (1, 1, 5, 1, 2, 1 READ, 1 atomic, 1) across the PSN wrap, QP 1's 66 + 1.
    assert_eq!(core.requests(), (13 + 67, 0), "{ctx}: packets sent, none failed");
    let to = |q: usize| opcodes.iter().filter(|o| o.0 == a.qps[q].qpn).collect::<Vec<_>>();
    let psns: Vec<u32> = to(0).iter().map(|o| o.2).collect();
    // The READ of 3,000 bytes takes three PSNs (its responses'), the packet after it the fourth.
    let want: Vec<u32> = (0xFF_FFF8..=0xFF_FFFF).chain([0, 1, 2, 5, 6]).collect();
    assert_eq!(psns, want, "{ctx}: QP 0's PSNs, in order, across the wrap");
    let asks: Vec<usize> = to(1).iter().enumerate().filter(|(_, o)| o.3).map(|(i, _)| i).collect();
    assert_eq!(asks, vec![63, 65, 66], "{ctx}: QP 1's AckReqs: the 64th packet, the WRITE's last, the atomic");

    // What landed: the SENDs and the WRITE with immediate in the receives, in order; the WRITEs; the atomics.
    let got = a.cq.poll(16).expect("the model host's completions");
    let recvs: Vec<(u64, WcStatus, u32, u32)> =
        got.iter().filter(|c| c.qp_num == a.qps[0].qpn).map(|c| (c.wr_id, c.status, c.byte_len, c.imm_data)).collect();
    let ok = WcStatus::Success;
    assert_eq!(
        recvs,
        vec![(0x50, ok, 100, 0), (0x51, ok, 40, 0xCAFE_0001), (0x52, ok, 301, 0), (0x53, ok, 2000, 0xCAFE_0002)],
        "{ctx}: the model host's receives"
    );
    let at = |off: usize, len: usize| a.buf.read(off, len).expect("the model host's buffer");
    assert_eq!(at(0x8000, 100), src[0x200..0x264], "{ctx}: the SEND");
    assert_eq!(at(0x9000, 40), src[0x300..0x328], "{ctx}: the inline SEND");
    let joined: Vec<u8> = [&src[0x4000..0x4064], &src[0x4400..0x44C8], &src[0x4800..0x4801]].concat();
    assert_eq!(at(0xA000, 301), joined, "{ctx}: the SEND gathered from three SGEs");
    assert_eq!(at(0x2000, 5000), src[0x1000..0x1000 + 5000], "{ctx}: the WRITE");
    assert_eq!(at(0x6000, 2000), src[0x5000..0x5000 + 2000], "{ctx}: the WRITE with immediate");
    assert_eq!(at(0x7000, 20), src[0x600..0x614], "{ctx}: the inline WRITE");
    assert_eq!(at(0x1_0040, 66 * 1024), src[..66 * 1024], "{ctx}: the long WRITE");
    assert_eq!(at(fa as usize, 8), 0x1111_2222_3333_4454u64.to_le_bytes(), "{ctx}: the fetch-add");
    assert_eq!(at(cs as usize, 8), 0xABCDu64.to_le_bytes(), "{ctx}: the compare-swap");
    assert_eq!(at(0, 64), vec![0u8; 64], "{ctx}: the fenced WRITE waits behind the compare-swap");

    for q in 0..2 {
        core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("{ctx}: QP {q}: {e}"));
    }
    let events = followed(&core, &ctx, core.requests().0, "every packet a decision followed");
    eprintln!(
        "RTL requests ({core_qps} QPs): {} packets sent in {} cycles, {} decisions in lockstep",
        core.requests().0,
        core.cycles(),
        events
    );
}

/// SENDs and WRITEs from the core complete: the model host's ACKs walk the core's windows (a coalesced ACK
/// finishing several WQEs, an ACK within a long WRITE moving `comp_psn` only), the finished WQEs retire in SQ
/// order with their CQEs (the signaled ones; an unsignaled one leaves quietly), the windows refill from the
/// SQs as they drain, and a WQE that failed at its fetch completes in error behind the ones before it and
/// takes its QP to ERR. The contexts are compared after every exchange (timers, PSNs, counters mid-flight).
fn acks_complete_the_rtl_cores_sends_and_writes(width: Width) {
    const BUF: usize = 1 << 18;
    let seed = seed();
    let mut rng = model::rng::Rng::new(seed);
    let (w, a, core, b) = hosts(width, 16, seed, 2, BUF, 0xFF_FF00, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}");
    let src: Vec<u8> = (0..BUF).map(|_| rng.below(256) as u8).collect();
    b.buf.write(0, &src).expect("the sources");
    for r in 0..8u64 {
        let sge = a.sge(0x8000 + 0x800 * r, 0x800);
        a.qps[0].post_recv(&RecvWr { wr_id: 0x50 + r, sg_list: vec![sge] }).expect("a receive posted");
    }
    // QP 0: 14 WQEs, more than its window holds: WRITEs of 1 to 3 packets, some unsignaled, and SENDs.
    let mut want_a = vec![0u8; BUF];
    let mut wqes = Vec::new();
    let mut sends = 0u64;
    for i in 0..14u64 {
        let len = 1 + rng.below(3000) as u32;
        let from = 0x4000 * (i % 2) + rng.below(0x1000);
        let mut wr = SendWr {
            wr_id: 0x100 + i,
            opcode: Some(SendOp::RdmaWrite),
            send_flags: if i % 3 == 2 { 0 } else { send_flags::SIGNALED },
            sg_list: vec![b.sge(from, len)],
            rkey: a.mr.rkey,
            ..Default::default()
        };
        if i % 4 == 3 && sends < 8 {
            wr.opcode = Some(SendOp::Send);
            let at = 0x8000 + 0x800 * sends as usize;
            wr.sg_list = vec![b.sge(from, len.min(0x800))];
            want_a[at..at + len.min(0x800) as usize].copy_from_slice(&src[from as usize..][..len.min(0x800) as usize]);
            sends += 1;
        } else {
            let to = 0x1000 * (i as usize % 6);
            wr.remote_addr = a.mr.addr + to as u64;
            want_a[to..to + len as usize].copy_from_slice(&src[from as usize..][..len as usize]);
        }
        wqes.push(wr);
    }
    b.qps[0].post_send_list(&wqes).unwrap_or_else(|e| panic!("{ctx}: QP 0's WQEs: {e:?}"));
    // QP 1: a WRITE of 66 packets (the ACK of its 64th moves `comp_psn` into it), a WRITE, then one whose SGE
    // names no MR: it completes in error after the others.
    let long = SendWr {
        wr_id: 0x2FF,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![b.sge(0x10000, 66 * 1024)],
        remote_addr: a.mr.addr + 0x10000,
        rkey: a.mr.rkey,
        ..Default::default()
    };
    want_a[0x10000..0x10000 + 66 * 1024].copy_from_slice(&src[0x10000..0x10000 + 66 * 1024]);
    let ok = SendWr {
        wr_id: 0x200,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![b.sge(0, 2500)],
        remote_addr: a.mr.addr + 0x6000,
        rkey: a.mr.rkey,
        ..Default::default()
    };
    let mut bad = ok.clone();
    (bad.wr_id, bad.sg_list) = (0x201, vec![Sge { addr: b.mr.addr, length: 16, lkey: NO_KEY }]);
    b.qps[1].post_send_list(&[long, ok.clone(), bad]).unwrap_or_else(|e| panic!("{ctx}: QP 1's WQEs: {e:?}"));
    want_a[0x6000..0x6000 + 2500].copy_from_slice(&src[..2500]);

    // The answers one at a time, the contexts compared after each (an ACK within a WRITE, a timer restarted,
    // before the next ACK covers them).
    exchange(&w, &core, &b, &ctx, |f| vec![f]);
    let got = b.cq.poll(64).expect("the RTL host's completions");
    let done: Vec<(u64, WcStatus, WcOpcode, u32)> =
        got.iter().map(|c| (c.wr_id, c.status, c.opcode, c.byte_len)).collect();
    let mut want: Vec<(u64, WcStatus, WcOpcode, u32)> = wqes
        .iter()
        .filter(|w| w.send_flags & send_flags::SIGNALED != 0)
        .map(|w| {
            let op = if w.opcode == Some(SendOp::Send) { WcOpcode::Send } else { WcOpcode::RdmaWrite };
            (w.wr_id, WcStatus::Success, op, w.sg_list[0].length)
        })
        .collect();
    want.push((0x2FF, WcStatus::Success, WcOpcode::RdmaWrite, 66 * 1024));
    want.push((0x200, WcStatus::Success, WcOpcode::RdmaWrite, 2500));
    want.push((0x201, WcStatus::LocProtErr, WcOpcode::RdmaWrite, 0));
    let (mut d0, mut w0) = (done.clone(), want.clone());
    d0.sort_by_key(|c| c.0);
    w0.sort_by_key(|c| c.0);
    assert_eq!(d0, w0, "{ctx}: every signaled WQE completed, the failed one in error");
    let order = |v: &[(u64, WcStatus, WcOpcode, u32)], q: u64| {
        v.iter().filter(|c| c.0 >> 8 == q).map(|c| c.0).collect::<Vec<_>>()
    };
    assert_eq!(order(&done, 1), order(&want, 1), "{ctx}: QP 0's completions in SQ order");
    assert_eq!(order(&done, 2), order(&want, 2), "{ctx}: QP 1's completions in SQ order");
    assert_eq!(a.buf.read(0, BUF).expect("the model host's buffer"), want_a, "{ctx}: what landed");
    let recvs =
        a.cq.poll(64).expect("the model host's completions").iter().filter(|c| c.qp_num == a.qps[0].qpn).count();
    assert_eq!(recvs as u64, sends, "{ctx}: a receive for every SEND");
    assert_eq!(b.qps[1].query().map(|q| q.qp_state).ok(), Some(QpState::Err as u8), "{ctx}: QP 1 in ERR");
    for q in 0..2 {
        core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("{ctx}: QP {q}: {e}"));
    }
    assert_eq!(core.peek("rx_unhandled"), 0, "{ctx}: every response handled");
    let events = followed(&core, &ctx, core.requests().0 + core.frames(), "every packet and ACK followed");
    eprintln!(
        "RTL completions: {} CQEs from {} requests and {} ACKs in {} cycles, {} decisions in lockstep",
        got.len(),
        core.requests().0,
        core.frames(),
        core.cycles(),
        events
    );
}

/// A WQE whose data cannot be read as its packet is built (its MR's memory freed after the fetch checked its
/// key) sends nothing and fails with LocProtErr: at the window's front it completes at once and takes its QP
/// to ERR (the dispatch retires it, given the QP by the transmit side); behind a WRITE not yet acknowledged
/// it waits, finished, and completes after that WRITE once the ACK comes, then the QP enters ERR.
fn a_payload_that_cannot_be_read_fails_its_wqe(width: Width) {
    let seed = seed();
    let (w, a, core, b) = hosts(width, 16, seed, 2, BUF, 0x100, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}");
    let gone = b.ctx.alloc_buf(4096).expect("a buffer");
    let mr = b.pd.reg_buf(&gone, access::ALL).expect("its MR");
    let lost = Sge { addr: mr.addr, length: 100, lkey: mr.lkey };
    drop(gone);
    let write = |wr_id, sge: Sge| SendWr {
        wr_id,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![sge],
        remote_addr: a.mr.addr,
        rkey: a.mr.rkey,
        ..Default::default()
    };
    b.qps[0].post_send(&write(1, lost)).unwrap_or_else(|e| panic!("{ctx}: posted: {e:?}"));
    b.qps[1].post_send_list(&[write(2, b.sge(0, 100)), write(3, lost)]).unwrap_or_else(|e| panic!("{ctx}: {e:?}"));
    let mut frames = Vec::new();
    for pass in 0.. {
        let (_, settled) = rtl_turn(&w, &core, frames, 2_000_000, |_| {});
        assert!(settled, "{ctx}: the core settled in pass {pass}");
        for q in 0..2 {
            core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("{ctx}: QP {q} after pass {pass}: {e}"));
        }
        frames = run_external(&w, 100_000_000);
        if frames.is_empty() {
            break;
        }
        assert!(pass < 10, "{ctx}: the exchange goes on after {pass} passes");
    }
    let got: Vec<(u64, u32, WcStatus)> =
        b.cq.poll(8).expect("completions").iter().map(|c| (c.wr_id, c.qp_num, c.status)).collect();
    let (q0, q1) = (b.qps[0].qpn, b.qps[1].qpn);
    let of = |q: u32| got.iter().filter(|c| c.1 == q).map(|c| (c.0, c.2)).collect::<Vec<_>>();
    assert_eq!(of(q0), vec![(1, WcStatus::LocProtErr)], "{ctx}: the failed front completed at once");
    assert_eq!(
        of(q1),
        vec![(2, WcStatus::Success), (3, WcStatus::LocProtErr)],
        "{ctx}: the failed WQE completed after the one before it"
    );
    for q in 0..2 {
        assert_eq!(b.qps[q].query().map(|x| x.qp_state).ok(), Some(QpState::Err as u8), "{ctx}: QP {q} in ERR");
    }
    assert_eq!(core.requests(), (1, 2), "{ctx}: one packet sent, two failed");
    let (sent, failed) = core.requests();
    followed(&core, &ctx, sent + failed + core.frames(), "every packet, failure and ACK followed");
}

/// READs and atomics from the core complete: each READ response is placed over its READ's scatter list (split
/// over several SGEs, one of no length; an empty READ), moving `comp_psn` one packet at a time, the last
/// finishing the READ; an atomic ACK places the original value; each response also acknowledges the SENDs and
/// WRITEs before it. The WQEs retire in SQ order with their CQEs (a READ's byte count its length, an
/// atomic's 8), the READ/atomic places given back as they finish. Answers one at a time, contexts compared
/// after each.
fn reads_and_atomics_complete_on_the_rtl_core(width: Width) {
    const BUF: usize = 1 << 19;
    let seed = seed();
    let mut rng = model::rng::Rng::new(seed);
    let (w, a, core, b) = hosts(width, 16, seed, 2, BUF, 0xFF_FFF0, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}");
    let src: Vec<u8> = (0..BUF).map(|_| rng.below(256) as u8).collect();
    a.buf.write(0, &src).expect("the READs' sources");
    b.buf.write(0, &src[..0x8000]).expect("the WRITEs' sources");
    b.buf.write(0x8000, &vec![0u8; BUF - 0x8000]).expect("the READs' targets cleared");
    let mut want_b = b.buf.read(0, BUF).expect("the RTL host's buffer");
    let mut want_a = src.clone();
    // The model host's receives: QP q's r-th at `0x6_0000 + 0x2000 q + 0x800 r`.
    let recv_at = |q: usize, r: usize| 0x6_0000 + 0x2000 * q + 0x800 * r;
    for q in 0..2 {
        for r in 0..4 {
            let sge = a.sge(recv_at(q, r) as u64, 0x800);
            a.qps[q].post_recv(&RecvWr { wr_id: 0x50 + r as u64, sg_list: vec![sge] }).expect("a receive posted");
        }
    }
    // WQE `i` of QP `q` places what it reads in region `0x8000 + 0x3000 * (16 q + i)` of the RTL host's
    // buffer; in the model host's, a WRITE's target is at `0x2_0000 + 0x1000 * (16 q + i)` and an atomic's
    // is word `i` of QP `q`'s at `0x5_0000 + 0x100 q`.
    let mut wqes: [Vec<SendWr>; 2] = [Vec::new(), Vec::new()];
    let mut want: [Vec<(u64, WcStatus, WcOpcode, u32)>; 2] = [Vec::new(), Vec::new()];
    let plan: [&[u8]; 2] = [b"RWRAsRcRfRAR", b"LfRcsLR"];
    for (q, kinds) in plan.iter().enumerate() {
        for (i, &k) in kinds.iter().enumerate() {
            let region = 0x8000 + 0x3000 * (16 * q as u64 + i as u64);
            let wr_id = 0x100 * (q as u64 + 1) + i as u64;
            let signaled = rng.below(4) != 0;
            let mut wr = SendWr {
                wr_id,
                send_flags: if signaled { send_flags::SIGNALED } else { 0 },
                rkey: a.mr.rkey,
                ..Default::default()
            };
            let (op, len) = match k {
                b'R' | b'L' => {
                    // A READ: from a random place of the model host's buffer, over one to three SGEs.
                    let len = match k {
                        b'L' => 9 * 1024 + rng.below(1024) as u32,
                        _ if rng.below(5) == 0 => 0,
                        _ => 1 + rng.below(5000) as u32,
                    };
                    // Below the WRITEs' targets: what a READ reads is what the buffer held before.
                    let from = rng.below(0x1_8000);
                    wr.remote_addr = a.mr.addr + from;
                    let cut1 = if len == 0 { 0 } else { rng.below(u64::from(len) + 1) as u32 };
                    let cut2 = cut1 + rng.below(u64::from(len - cut1) + 1) as u32;
                    let pieces = [cut1, 0, cut2 - cut1, len - cut2];
                    let mut at = region;
                    let mut done = 0usize;
                    for (j, &n) in pieces.iter().enumerate() {
                        if n == 0 && j != 1 {
                            continue;
                        }
                        wr.sg_list.push(b.sge(at, n));
                        let (to, s) = (at as usize, from as usize + done);
                        want_b[to..to + n as usize].copy_from_slice(&src[s..s + n as usize]);
                        at += u64::from(n) + 16;
                        done += n as usize;
                    }
                    (SendOp::RdmaRead, len)
                }
                b'f' | b'c' => {
                    let target = 0x5_0000 + 0x100 * q + 8 * i;
                    let orig = u64::from_le_bytes(src[target..target + 8].try_into().expect("a word"));
                    wr.remote_addr = a.mr.addr + target as u64;
                    wr.sg_list = vec![b.sge(region, 8)];
                    want_b[region as usize..region as usize + 8].copy_from_slice(&orig.to_le_bytes());
                    let new = if k == b'f' {
                        wr.compare_add = rng.below(1 << 40);
                        (SendOp::AtomicFetchAdd, orig.wrapping_add(wr.compare_add))
                    } else {
                        // Half the compare-swaps find the value they compare.
                        wr.compare_add = if rng.below(2) == 0 { orig } else { orig ^ 1 };
                        wr.swap = rng.below(1 << 40);
                        (SendOp::AtomicCmpSwp, if wr.compare_add == orig { wr.swap } else { orig })
                    };
                    want_a[target..target + 8].copy_from_slice(&new.1.to_le_bytes());
                    (new.0, 8)
                }
                b'W' | b'A' => {
                    let len = 1 + rng.below(if k == b'A' { 2500 } else { 100 }) as u32;
                    let (from, to) = (rng.below(0x4000), 0x2_0000 + 0x1000 * (16 * q + i));
                    wr.sg_list = vec![b.sge(from, len)];
                    wr.remote_addr = a.mr.addr + to as u64;
                    want_a[to..to + len as usize].copy_from_slice(&src[from as usize..][..len as usize]);
                    (SendOp::RdmaWrite, len)
                }
                _ => {
                    // A SEND into the next receive.
                    let len = 1 + rng.below(0x800) as u32;
                    let from = rng.below(0x4000);
                    let at = recv_at(q, kinds[..i].iter().filter(|&&k| k == b's').count());
                    wr.sg_list = vec![b.sge(from, len)];
                    want_a[at..at + len as usize].copy_from_slice(&src[from as usize..][..len as usize]);
                    (SendOp::Send, len)
                }
            };
            wr.opcode = Some(op);
            if signaled {
                let wc = match op {
                    SendOp::RdmaRead => WcOpcode::RdmaRead,
                    SendOp::AtomicFetchAdd => WcOpcode::FetchAdd,
                    SendOp::AtomicCmpSwp => WcOpcode::CompSwap,
                    SendOp::Send => WcOpcode::Send,
                    _ => WcOpcode::RdmaWrite,
                };
                want[q].push((wr_id, WcStatus::Success, wc, len));
            }
            wqes[q].push(wr);
        }
    }
    for (q, list) in wqes.iter().enumerate() {
        b.qps[q].post_send_list(list).unwrap_or_else(|e| panic!("{ctx}: QP {q}'s WQEs: {e:?}"));
    }
    exchange(&w, &core, &b, &ctx, |f| vec![f]);

    let got = b.cq.poll(64).expect("the RTL host's completions");
    for (q, want) in want.iter().enumerate() {
        let done: Vec<_> = got
            .iter()
            .filter(|c| c.qp_num == b.qps[q].qpn)
            .map(|c| (c.wr_id, c.status, c.opcode, c.byte_len))
            .collect();
        assert_eq!(&done, want, "{ctx}: QP {q}'s completions, in SQ order");
        assert_eq!(b.qps[q].query().map(|x| x.qp_state).ok(), Some(QpState::Rts as u8), "{ctx}: QP {q} in RTS");
    }
    let b_got = b.buf.read(0, BUF).expect("the RTL host's buffer");
    assert_eq!(first_diff(&b_got, &want_b), None, "{ctx}: what the READs and atomics placed (first difference)");
    let a_got = a.buf.read(0, BUF).expect("the model host's buffer");
    assert_eq!(first_diff(&a_got, &want_a), None, "{ctx}: the targets (first difference)");
    assert_eq!(core.peek("rx_unhandled"), 0, "{ctx}: every response handled");
    let events = followed(&core, &ctx, core.requests().0 + core.frames(), "every packet and response followed");
    eprintln!(
        "RTL READs and atomics: {} CQEs from {} requests and {} responses in {} cycles, {} decisions in lockstep",
        got.len(),
        core.requests().0,
        core.frames(),
        core.cycles(),
        events
    );
}

/// Responses that answer nothing are ignored (a READ response again, an atomic ACK again, one for a PSN never
/// sent), and a READ response of the wrong length fails its READ with BadRespErr: the QP enters ERR, what
/// follows is flushed, and the READ's later responses are dropped.
fn a_read_response_of_the_wrong_length_fails_the_read(width: Width) {
    let seed = seed();
    let (w, a, core, b) = hosts(width, 16, seed, 2, BUF, 0x10, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}");
    let mut src = vec![0u8; 4096];
    model::rng::Rng::new(seed).fill(&mut src);
    a.buf.write(0, &src).expect("the READ's source");
    let mut read = wr(1, SendOp::RdmaRead, Some(b.sge(0x1000, 3000)));
    (read.remote_addr, read.rkey) = (a.mr.addr, a.mr.rkey);
    let mut write = wr(2, SendOp::RdmaWrite, Some(b.sge(0, 100)));
    (write.remote_addr, write.rkey) = (a.mr.addr + 0x2000, a.mr.rkey);
    b.qps[0].post_send_list(&[read, write]).unwrap_or_else(|e| panic!("{ctx}: QP 0's WQEs: {e:?}"));
    let mut add = wr(3, SendOp::AtomicFetchAdd, Some(b.sge(0x3000, 8)));
    (add.remote_addr, add.rkey, add.compare_add) = (a.mr.addr + 0x2800, a.mr.rkey, 5);
    b.qps[1].post_send(&add).unwrap_or_else(|e| panic!("{ctx}: QP 1's WQE: {e:?}"));
    let q0 = b.qps[0].qpn;
    let mut seen = Vec::new();
    exchange(&w, &core, &b, &ctx, |f| {
        let p = wire::parse(&f).expect("a RoCE frame");
        let (op, psn) = (p.hdr.bth.opcode, p.hdr.bth.psn);
        seen.push(op);
        let again = |h: &wire::RoceHeaders, payload: &[u8]| h.emit(payload);
        if p.hdr.bth.dest_qp != q0 {
            // The atomic ACK, then the same again: stale, ignored.
            return vec![f.clone(), f];
        }
        if op == wire::Opcode::RDMA_READ_RESPONSE_FIRST {
            // It, again (a duplicate), and one as if for a PSN far ahead (never sent).
            let mut far = p.hdr;
            far.bth.psn = psn.add(100);
            return vec![f.clone(), f.clone(), again(&far, p.payload)];
        }
        if op == wire::Opcode::RDMA_READ_RESPONSE_MIDDLE {
            return vec![again(&p.hdr, &p.payload[..p.payload.len() - 8])];
        }
        vec![f]
    });
    assert!(seen.contains(&wire::Opcode::RDMA_READ_RESPONSE_LAST), "{ctx}: the READ's last response came, and went");
    let got: Vec<(u64, u32, WcStatus, u32)> =
        b.cq.poll(8).expect("completions").iter().map(|c| (c.wr_id, c.qp_num, c.status, c.byte_len)).collect();
    let of = |q: u32| got.iter().filter(|c| c.1 == q).map(|c| (c.0, c.2)).collect::<Vec<_>>();
    assert_eq!(
        of(q0),
        vec![(1, WcStatus::BadRespErr), (2, WcStatus::WrFlushErr)],
        "{ctx}: the READ failed, the WRITE behind it flushed"
    );
    assert_eq!(of(b.qps[1].qpn), vec![(3, WcStatus::Success)], "{ctx}: the atomic, completed once");
    assert_eq!(b.qps[0].query().map(|x| x.qp_state).ok(), Some(QpState::Err as u8), "{ctx}: QP 0 in ERR");
    assert_eq!(b.buf.read(0x1000, 1024).expect("the READ's target"), src[..1024], "{ctx}: its first response placed");
    assert_eq!(b.buf.read(0x1400, 8).expect("past it"), vec![0u8; 8], "{ctx}: nothing of the bad one");
    // A fatal NAK for QP 1's atomic, arriving after the atomic completed (its window empty): it fails
    // nothing (the model's `fail_oldest` finds no entry) and the QP stays in RTS.
    let mut nak = driver::pair::forged_headers(&a, &b, wire::Opcode::ACKNOWLEDGE, 0x10);
    nak.bth.dest_qp = b.qps[1].qpn;
    nak.ext.aeth = Some(wire::ext::AethRepr { syndrome: wire::ext::syndrome::NAK_REMOTE_ACCESS, msn: 1 });
    core.receive(nak.emit(&[]));
    assert!(core.settle(1_000_000), "{ctx}: the core settled after the late NAK");
    core.context_agrees(b.qps[1].qpn).unwrap_or_else(|e| panic!("{ctx}: QP 1 after the late NAK: {e}"));
    assert_eq!(b.qps[1].query().map(|x| x.qp_state).ok(), Some(QpState::Rts as u8), "{ctx}: QP 1 still in RTS");
    assert_eq!(core.peek("rx_unhandled"), 0, "{ctx}: every response handled");
    followed(&core, &ctx, core.requests().0 + core.frames(), "every packet and response followed");
}

/// Go-back-N: packets the model host never got (a WRITE's, a SEND's, a READ request) draw a sequence NAK and
/// the core sends again from the lost PSN (mid-message); a lost READ response leaves a gap the next response
/// shows, and the core asks again from it, once. A WRITE the responder refuses (a bad R_Key) draws a fatal
/// NAK: it fails with RemAccessErr and the QP enters ERR, what follows flushed. An RNR NAK (a SEND with no
/// receive posted) sets the RNR wait and stops the ACK timer (the retry when the wait is over needs the
/// timers, not built yet). Every step in lockstep, the contexts compared after each answer.
fn lost_packets_and_naks_on_the_rtl_core(width: Width) {
    const BUF: usize = 1 << 18;
    let seed = seed();
    let mut rng = model::rng::Rng::new(seed);
    let (w, a, core, b) = hosts(width, 16, seed, 3, BUF, 0xFF_FFFA, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}");
    let src: Vec<u8> = (0..BUF).map(|_| rng.below(256) as u8).collect();
    b.buf.write(0, &src[..0x10000]).expect("the sources");
    a.buf.write(0, &src).expect("the READ's source");
    b.buf.write(0x10000, &vec![0u8; BUF - 0x10000]).expect("the READ's target cleared");
    for r in 0..2u64 {
        let sge = a.sge(0x3_0000 + 0x1000 * r, 0x1000);
        a.qps[0].post_recv(&RecvWr { wr_id: 0x50 + r, sg_list: vec![sge] }).expect("a receive posted");
    }
    let op = |wr_id, op, sge: Sge, to: u64| SendWr {
        wr_id,
        opcode: Some(op),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![sge],
        remote_addr: a.mr.addr + to,
        rkey: a.mr.rkey,
        ..Default::default()
    };
    // QP 0: a WRITE of 3 packets, a SEND of 2, a READ of 4 responses, a WRITE of 5 packets.
    let q0 = [
        op(1, SendOp::RdmaWrite, b.sge(0, 3000), 0x2_0000),
        op(2, SendOp::Send, b.sge(0x1000, 2000), 0),
        op(3, SendOp::RdmaRead, b.sge(0x1_0000, 4000), 0x4000),
        op(4, SendOp::RdmaWrite, b.sge(0x2000, 4500), 0x2_2000),
    ];
    b.qps[0].post_send_list(&q0).unwrap_or_else(|e| panic!("{ctx}: QP 0's WQEs: {e:?}"));
    // QP 1: a WRITE the responder refuses, and one behind it.
    let mut refused = op(5, SendOp::RdmaWrite, b.sge(0, 100), 0x2_8000);
    refused.rkey ^= 0x100;
    b.qps[1].post_send_list(&[refused, op(6, SendOp::RdmaWrite, b.sge(0, 100), 0x2_8000)]).expect("QP 1's WQEs");
    // QP 2: a SEND its peer has no receive for.
    b.qps[2].post_send(&op(7, SendOp::Send, b.sge(0, 64), 0)).expect("QP 2's WQE");

    // Lost: QP 0's second packet (the WRITE's middle); then, as the core sends from it again, the SEND's
    // first (the fourteenth packet); and the READ's second response.
    let qpn0 = a.qps[0].qpn;
    let (mut sent, mut lost) = (0, Vec::new());
    let mut responses = 0;
    let mut naks = Vec::new();
    exchange_lossy(
        &w,
        &core,
        &b,
        &ctx,
        |f| {
            let h = wire::parse(f).expect("a RoCE frame").hdr;
            if h.bth.dest_qp != qpn0 {
                return true;
            }
            sent += 1;
            let keep = ![2, 14].contains(&sent);
            if !keep {
                lost.push(h.bth.psn.value());
            }
            keep
        },
        |f| {
            let h = wire::parse(&f).expect("a RoCE frame").hdr;
            if let Some(aeth) = h.ext.aeth.filter(|_| h.bth.opcode == wire::Opcode::ACKNOWLEDGE) {
                if aeth.syndrome >> 5 != 0 {
                    naks.push((h.bth.dest_qp, aeth.syndrome));
                }
            }
            if h.bth.opcode.info().is_some_and(|i| i.kind == wire::OpKind::ReadResponse) {
                responses += 1;
                if responses == 2 {
                    return Vec::new();
                }
            }
            vec![f]
        },
    );
    assert_eq!(lost.len(), 2, "{ctx}: two packets lost");
    let nak_seq = naks.iter().filter(|n| n.1 == wire::ext::syndrome::NAK_PSN_SEQ_ERR).count();
    assert!(nak_seq >= 2, "{ctx}: sequence NAKs for the lost packets: {naks:x?}");
    assert!(naks.iter().any(|n| n.1 == wire::ext::syndrome::NAK_REMOTE_ACCESS), "{ctx}: the refused WRITE's NAK");
    assert!(naks.iter().any(|n| n.1 & 0xE0 == wire::ext::syndrome::RNR_NAK), "{ctx}: the SEND's RNR NAK");

    let got: Vec<(u64, u32, WcStatus, u32)> =
        b.cq.poll(16).expect("completions").iter().map(|c| (c.wr_id, c.qp_num, c.status, c.byte_len)).collect();
    let of = |q: usize| got.iter().filter(|c| c.1 == b.qps[q].qpn).map(|c| (c.0, c.2, c.3)).collect::<Vec<_>>();
    let ok = WcStatus::Success;
    assert_eq!(of(0), vec![(1, ok, 3000), (2, ok, 2000), (3, ok, 4000), (4, ok, 4500)], "{ctx}: QP 0, all sent again");
    assert_eq!(
        of(1),
        vec![(5, WcStatus::RemAccessErr, 100), (6, WcStatus::WrFlushErr, 0)],
        "{ctx}: QP 1: the refused WRITE failed, the next flushed"
    );
    assert_eq!(of(2), Vec::new(), "{ctx}: QP 2's SEND waits out its RNR delay");
    assert_eq!(b.qps[1].query().map(|x| x.qp_state).ok(), Some(QpState::Err as u8), "{ctx}: QP 1 in ERR");
    let at = |h: &Host, off: usize, len: usize| h.buf.read(off, len).expect("a buffer");
    assert_eq!(at(&a, 0x2_0000, 3000), src[..3000], "{ctx}: the first WRITE, whole");
    assert_eq!(at(&a, 0x3_0000, 2000), src[0x1000..0x1000 + 2000], "{ctx}: the SEND, whole");
    assert_eq!(at(&b, 0x1_0000, 4000), src[0x4000..0x4000 + 4000], "{ctx}: the READ, whole");
    assert_eq!(at(&a, 0x2_2000, 4500), src[0x2000..0x2000 + 4500], "{ctx}: the last WRITE, whole");
    assert_eq!(core.peek("rx_unhandled"), 0, "{ctx}: every response handled");
    let events = followed(&core, &ctx, core.requests().0 + core.frames(), "every packet and response followed");
    eprintln!(
        "RTL go-back-N: {} lost, {} NAKs, {} packets sent in all, {} cycles, {} decisions in lockstep",
        lost.len(),
        naks.len(),
        core.requests().0,
        core.cycles(),
        events
    );
}

/// The timers: with a short ACK timeout (32 ticks) a lost last packet, which no later packet reveals, is
/// sent again when the ACK timer runs out (the model's `Timer` decision, taken by the core's scan of its
/// QPs' timers); a packet lost every time runs the retries out (RetryExcErr, the QP in ERR). A SEND that
/// finds no receive waits out its RNR delay (11 ticks) and is sent again: completed once a receive is
/// posted, failed with RnrRetryExcErr when the one RNR retry is spent. Every step in lockstep.
fn timers_run_out_on_the_rtl_core(width: Width) {
    timers_run_out(width, 16);
}

/// The same on the 1024-QP core, whose scan reads its QPs' timers a bank of them a cycle, so every timer is
/// seen within a tick.
#[test]
fn timers_run_out_on_the_1024_qp_core() {
    timers_run_out(Width::W8, 1024);
}

fn timers_run_out(width: Width, core_qps: u32) {
    let seed = seed();
    let opts = ConnectOpts { timeout: 3, retry_cnt: 2, rnr_retry: 1, min_rnr_timer: 1, ..ConnectOpts::default() };
    let (w, a, core, b) = hosts(width, core_qps, seed, 4, BUF, 0x40, &opts);
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}, {core_qps} QPs");
    let write = |wr_id, to: u64| {
        let mut x = wr(wr_id, SendOp::RdmaWrite, Some(b.sge(0x100 * wr_id, 200)));
        (x.remote_addr, x.rkey) = (a.mr.addr + to, a.mr.rkey);
        x
    };
    // QP 0: two WRITEs, the second's packet lost once; QP 1: a WRITE lost every time; QPs 2 and 3: a SEND
    // each, with no receive at first.
    b.qps[0].post_send_list(&[write(1, 0x1000), write(2, 0x2000)]).expect("QP 0's WQEs");
    b.qps[1].post_send(&write(3, 0x3000)).expect("QP 1's WQE");
    b.qps[2].post_send(&wr(4, SendOp::Send, Some(b.sge(0x400, 100)))).expect("QP 2's WQE");
    b.qps[3].post_send(&wr(5, SendOp::Send, Some(b.sge(0x500, 100)))).expect("QP 3's WQE");
    let (q0, q1) = (a.qps[0].qpn, a.qps[1].qpn);
    let (mut to_q0, mut lost) = (0, 0);
    let mut rnr_naks = 0;
    let mut posted = false;
    for round in 0..20 {
        exchange_lossy(
            &w,
            &core,
            &b,
            &ctx,
            |f| {
                let h = wire::parse(f).expect("a RoCE frame").hdr;
                let drop = h.bth.dest_qp == q1
                    || (h.bth.dest_qp == q0 && {
                        to_q0 += 1;
                        to_q0 == 2
                    });
                lost += u32::from(drop);
                !drop
            },
            |f| {
                let h = wire::parse(&f).expect("a RoCE frame").hdr;
                if h.ext.aeth.is_some_and(|x| x.syndrome & 0xE0 == wire::ext::syndrome::RNR_NAK) {
                    rnr_naks += 1;
                }
                vec![f]
            },
        );
        if rnr_naks > 0 && !posted {
            // QP 3's peer posts its receive after the first RNR NAKs; QP 2's never does.
            let sge = a.sge(0x8000, 0x1000);
            a.qps[3].post_recv(&RecvWr { wr_id: 0x53, sg_list: vec![sge] }).expect("a receive posted");
            posted = true;
        }
        if b.qps[1].query().map(|x| x.qp_state).ok() == Some(QpState::Err as u8) && core.timers_fired() >= 6 {
            break;
        }
        assert!(round < 19, "{ctx}: the timers still run after {round} rounds");
        // Time passes: one ACK timeout (32 ticks of 128 cycles) and a little more, so a timer runs out at
        // most once before what it sent is delivered.
        core.run(32 * 128 + 512);
    }
    let got: Vec<(u64, u32, WcStatus)> =
        b.cq.poll(16).expect("completions").iter().map(|c| (c.wr_id, c.qp_num, c.status)).collect();
    let of = |q: usize| got.iter().filter(|c| c.1 == b.qps[q].qpn).map(|c| (c.0, c.2)).collect::<Vec<_>>();
    let ok = WcStatus::Success;
    assert_eq!(of(0), vec![(1, ok), (2, ok)], "{ctx}: QP 0: the lost WRITE sent again when its ACK timer ran out");
    assert_eq!(of(1), vec![(3, WcStatus::RetryExcErr)], "{ctx}: QP 1: its retries ran out");
    assert_eq!(of(2), vec![(4, WcStatus::RnrRetryExcErr)], "{ctx}: QP 2: its RNR retry spent");
    assert_eq!(of(3), vec![(5, ok)], "{ctx}: QP 3: sent again after its RNR wait, received");
    assert_eq!(a.buf.read(0x2000, 200).expect("the buffer"), b.buf.read(0x200, 200).expect("the source"));
    assert!(rnr_naks >= 3, "{ctx}: RNR NAKs: QP 2's two, QP 3's first ({rnr_naks})");
    assert!(lost >= 4, "{ctx}: QP 0's one packet lost and QP 1's three ({lost})");
    let events = followed(&core, &ctx, core.requests().0 + core.frames(), "every packet and response followed");
    assert!(core.timers_fired() >= 6, "{ctx}: ACK timers (QP 0's one, QP 1's three), RNR waits (QP 2's, QP 3's)");
    eprintln!(
        "RTL timers: {} run out, {} packets lost, {} RNR NAKs, {} cycles, {} decisions in lockstep",
        core.timers_fired(),
        lost,
        rnr_naks,
        core.cycles(),
        events
    );
}

/// QUERY_QP's `sq_draining` (the model's `Qp::sq_draining`): a QP moved to SQD while a WRITE it sent is
/// unacknowledged is draining; once the ACK is in it is not, and it stays in SQD. The query's output is a
/// DMA write the model's must match, so lockstep checks the core's answer too.
fn an_sqd_qp_drains_until_its_write_is_acknowledged(width: Width) {
    let seed = seed();
    let (w, a, core, b) = hosts(width, 16, seed, 2, BUF, 0x40, &ConnectOpts::default());
    let ctx = format!("seed {seed:#x}");
    let mut x = wr(1, SendOp::RdmaWrite, Some(b.sge(0x100, 200)));
    (x.remote_addr, x.rkey) = (a.mr.addr + 0x1000, a.mr.rkey);
    b.qps[0].post_send(&x).expect("a WRITE");
    assert!(core.settle(5_000_000), "{ctx}: the core sent the WRITE");
    let sent = core.take_sent();
    assert_eq!(sent.len(), 1, "{ctx}: one packet");
    let sqd = QpAttr { qp_state: Some(QpState::Sqd), ..Default::default() };
    for q in 0..2 {
        b.qps[q].modify(&sqd, attr::STATE).unwrap_or_else(|e| panic!("{ctx}: QP {q} to SQD: {e:?}"));
    }
    let draining = |q: usize| {
        let r = b.qps[q].query().unwrap_or_else(|e| panic!("{ctx}: QUERY_QP {q}: {e:?}"));
        (r.qp_state, r.sq_draining)
    };
    let sqd = QpState::Sqd as u8;
    assert_eq!(draining(0), (sqd, 1), "{ctx}: QP 0 drains while its WRITE is unacknowledged");
    assert_eq!(draining(1), (sqd, 0), "{ctx}: QP 1 sent nothing: drained");
    for f in sent {
        lock_world(&w).inject_external(f);
    }
    exchange(&w, &core, &b, &ctx, |f| vec![f]);
    assert_eq!(draining(0), (sqd, 0), "{ctx}: QP 0 drained once the ACK is in");
    let got: Vec<(u64, WcStatus)> = b.cq.poll(4).expect("completions").iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(got, [(1, WcStatus::Success)], "{ctx}: the WRITE completed");
    followed(&core, &ctx, 4, "a WRITE, its ACK and the commands");
}

/// A raw packet QP sending beside an RC QP's WRITEs on the same core: the two QPs' WQEs posted in turn, their
/// packets leave interleaved as the requester visits the QPs in turn, each a legal decision of its stream
/// (raw or requester); every raw frame leaves whole and in order, every WRITE lands and is acknowledged.
fn a_raw_packet_qp_sends_beside_rc_writes(width: Width) {
    const BUF: usize = 1 << 16;
    let seed = seed();
    let mut rng = model::rng::Rng::new(seed);
    let (w, a, core, b) = hosts(width, 16, seed, 1, BUF, 0x100, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}");
    let rcq = b.ctx.create_cq(64).expect("the raw QP's CQ");
    let raw = b.pd.create_raw_qp(&rcq, &rcq, QpCap { max_send_wr: 16, ..QpCap::default() }).expect("a raw QP");
    raw.activate_raw().expect("RTS");
    let src: Vec<u8> = (0..BUF / 2).map(|_| rng.below(256) as u8).collect();
    b.buf.write(0, &src).expect("the sources");
    let mut want_a = vec![0u8; BUF];
    let mut frames = Vec::new();
    for i in 0..6usize {
        let len = 1 + rng.below(3000) as usize;
        let from = rng.below(0x4000) as usize;
        let to = 0x2000 * i;
        let write = SendWr {
            wr_id: 0x100 + i as u64,
            opcode: Some(SendOp::RdmaWrite),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![b.sge(from as u64, len as u32)],
            remote_addr: a.mr.addr + to as u64,
            rkey: a.mr.rkey,
            ..Default::default()
        };
        want_a[to..to + len].copy_from_slice(&src[from..from + len]);
        b.qps[0].post_send(&write).unwrap_or_else(|e| panic!("{ctx}: WRITE {i}: {e:?}"));
        let mut f = vec![0u8; 14 + rng.below(1500) as usize];
        rng.fill(&mut f[14..]);
        f[..6].copy_from_slice(&a.mac);
        f[6..12].copy_from_slice(&b.mac);
        f[12..14].copy_from_slice(&wire::eth::ethertype::EXPERIMENTAL.to_be_bytes());
        let at = BUF / 2 + 0x800 * i;
        b.buf.write(at, &f).expect("the frame");
        let send = SendWr {
            wr_id: 0x300 + i as u64,
            opcode: Some(SendOp::Send),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![b.sge(at as u64, f.len() as u32)],
            ..Default::default()
        };
        raw.post_send(&send).unwrap_or_else(|e| panic!("{ctx}: raw send {i}: {e:?}"));
        f.resize(f.len().max(wire::eth::MIN_FRAME_LEN), 0);
        frames.push(f);
    }
    // Every frame the core sends, in order, the model host's ACKs answering the WRITEs.
    let mut seen: Vec<Vec<u8>> = Vec::new();
    exchange_lossy(
        &w,
        &core,
        &b,
        &ctx,
        |f| {
            seen.push(f.to_vec());
            true
        },
        |f| vec![f],
    );
    let is_raw: Vec<bool> =
        seen.iter().map(|f| f[12..14] == wire::eth::ethertype::EXPERIMENTAL.to_be_bytes()).collect();
    let raws: Vec<Vec<u8>> = seen.iter().zip(&is_raw).filter(|p| *p.1).map(|p| p.0.clone()).collect();
    assert_eq!(raws, frames, "{ctx}: the raw frames, whole and in order");
    let turns = is_raw.windows(2).filter(|p| p[0] != p[1]).count();
    assert!(turns >= 2, "{ctx}: the WRITEs' packets and the raw frames interleave ({turns} turns)");
    assert_eq!(a.buf.read(0, BUF).expect("the model host's buffer"), want_a, "{ctx}: what landed");
    let done = |cq: &Cq| cq.poll(64).expect("polled").iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>();
    let ok = |base: u64| (0..6).map(|i| (base + i, WcStatus::Success)).collect::<Vec<_>>();
    assert_eq!(done(&b.cq), ok(0x100), "{ctx}: the WRITEs completed");
    assert_eq!(done(&rcq), ok(0x300), "{ctx}: the raw sends completed");
    for qpn in [b.qps[0].qpn, raw.qpn] {
        core.context_agrees(qpn).unwrap_or_else(|e| panic!("{ctx}: QP {qpn}: {e}"));
    }
    let events = followed(&core, &ctx, core.requests().0 + core.frames(), "every packet and ACK followed");
    eprintln!("raw beside RC: {} frames sent, {events} decisions in lockstep", core.requests().0);
}

/// A lockstep report asked for while the core is still sending a frame it has decided on (the model has the
/// frame from the decision on) waits for the frame's last beat: no mismatch then, nor after the exchange.
fn a_report_mid_frame_waits_for_the_frame(width: Width) {
    let seed = seed();
    let (w, a, core, b) = hosts(width, 16, seed, 1, BUF, 0, &ConnectOpts::default());
    b.buf.write(0, &[0x5A; 1024]).expect("the source");
    let mut wr = wr(1, SendOp::RdmaWrite, Some(b.sge(0, 1024)));
    (wr.remote_addr, wr.rkey) = (a.mr.addr, a.mr.rkey);
    b.qps[0].post_send(&wr).expect("a WRITE posted");
    run_to_first_packet(&core, "mid-frame");
    let r = core.lockstep_report().expect("lockstep is on");
    assert_eq!((r.mismatches, &r.first), (0, &None), "a report mid-frame, {} decisions", r.events);
    exchange(&w, &core, &b, "mid-frame", |f| vec![f]);
    followed(&core, "mid-frame", 3, "a WRITE and its ACK");
    assert_eq!(a.buf.read(0, 1024).expect("the target"), vec![0x5A; 1024]);
}

/// The requester reads a WQE's slot for its first packet and keeps the descriptor for the rest (the model's
/// `KeptDesc`): a slot rewritten once the first packet is decided (its SGE moved to other bytes; what verbs
/// leave undefined) changes nothing the WRITE sends, and the model, keeping it too, follows every packet.
fn a_kept_descriptor_outlives_its_slot(width: Width) {
    use wire::contract::wqe::{DataSegRepr, SEND_DATA};
    let seed = seed();
    let (w, a, core, b) = hosts(width, 16, seed, 1, BUF, 0, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}");
    let (old, new) = ((0..3072).map(|i| (i % 251) as u8).collect::<Vec<_>>(), vec![0xEE; 3072]);
    b.buf.write(0, &old).expect("the source");
    b.buf.write(0x4000, &new).expect("the other bytes");
    a.buf.write(0, &[0; 3072]).expect("the target cleared");
    let mut wr = wr(1, SendOp::RdmaWrite, Some(b.sge(0, 3072)));
    (wr.remote_addr, wr.rkey) = (a.mr.addr, a.mr.rkey);
    b.qps[0].post_send(&wr).expect("a WRITE of three packets posted");
    run_to_first_packet(&core, &ctx);
    let moved = DataSegRepr { addr: b.sge(0x4000, 0).addr, lkey: b.mr.lkey, length: 3072 }.to_bytes();
    b.ctx.backend().dma_write(b.qps[0].sq_slot(0) + SEND_DATA as u64, &moved).expect("the slot rewritten");
    exchange(&w, &core, &b, &ctx, |f| vec![f]);
    followed(&core, &ctx, 4, "three packets and an ACK");
    assert_eq!(core.requests().0, 3, "{ctx}: three packets");
    assert_eq!(a.buf.read(0, 3072).expect("the target"), old, "{ctx}: the WRITE's bytes, from the kept SGE");
}

/// A WQE fetched while the requester keeps no descriptor and is idle gives it its descriptor (the fetch's
/// read taken as its own, `FetchSq` with `primed`): the WRITE's first packet reads no slot, so the slot is
/// read once for its three packets, and a slot rewritten once the WQE is fetched (its SGE moved to other
/// bytes; what verbs leave undefined) changes nothing the WRITE sends, the model keeping the fetched
/// descriptor too. Twice: after the first WRITE's last packet nothing is kept, so the second WRITE's fetch
/// primes the requester again. Without the priming a first packet reads the slot again and sends the other
/// bytes.
fn a_fetch_gives_the_requester_its_descriptor(width: Width) {
    use wire::contract::wqe::{DataSegRepr, SEND_DATA};
    let seed = seed();
    let (w, a, core, b) = hosts(width, 16, seed, 1, BUF, 0, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    const LEN: u64 = 3072;
    for i in 0..2u64 {
        let ctx = format!("seed {seed:#x}, WRITE {i}");
        let old: Vec<u8> = (0..LEN).map(|j| (j % 241) as u8 ^ i as u8).collect();
        let at = (LEN * i) as usize;
        b.buf.write(at, &old).expect("the source");
        b.buf.write(0x4000, &[0xEE; LEN as usize]).expect("the other bytes");
        a.buf.write(at, &[0; LEN as usize]).expect("the target cleared");
        let mut wr = wr(i, SendOp::RdmaWrite, Some(b.sge(LEN * i, LEN as u32)));
        (wr.remote_addr, wr.rkey) = (a.mr.addr + LEN * i, a.mr.rkey);
        b.qps[0].post_send(&wr).expect("a WRITE of three packets posted");
        for cycle in 0.. {
            if core.fetches() == i + 1 {
                break;
            }
            assert!(cycle < 100_000, "{ctx}: the WRITE fetched");
            core.run(1);
        }
        assert_eq!(core.requests().0, 3 * i, "{ctx}: no packet of it yet as the fetch commits");
        let slot = b.qps[0].sq_slot(i as u16);
        let moved = DataSegRepr { addr: b.sge(0x4000, 0).addr, lkey: b.mr.lkey, length: LEN as u32 }.to_bytes();
        b.ctx.backend().dma_write(slot + SEND_DATA as u64, &moved).expect("the slot rewritten");
        exchange(&w, &core, &b, &ctx, |f| vec![f]);
        assert_eq!(core.requests().0, 3 * (i + 1), "{ctx}: three packets");
        assert_eq!(core.reads_at(slot), 1, "{ctx}: the slot read by the fetch alone");
        let got = a.buf.read(at, LEN as usize).expect("the target");
        assert_eq!(got, old, "{ctx}: the WRITE's bytes, from the fetched SGE");
        let done: Vec<u64> = b.cq.poll(2).expect("completions").iter().map(|c| c.wr_id).collect();
        assert_eq!(done, vec![i], "{ctx}: completed");
    }
    followed(&core, &format!("seed {seed:#x}"), 8, "six packets and their ACKs");
}

/// The next WQE's fetch does not wait for the message before it to be sent: its slot is read while the
/// requester streams (the context port left to it), and the window entry committed between two of its
/// packets, the contexts read again. Two WRITEs of 16 packets posted together (at 64 B a packet takes 17
/// beats, so 16 outlast a DMA round trip): the second is fetched before the first has sent its last packet,
/// and both complete, the model following every decision.
fn the_next_wqe_is_fetched_while_a_message_streams(width: Width) {
    let seed = seed();
    let (w, a, core, b) = hosts(width, 16, seed, 1, BUF, 0, &ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let ctx = format!("seed {seed:#x}");
    const LEN: u64 = 16 * 1024;
    let src: Vec<u8> = (0..2 * LEN).map(|i| (i % 253) as u8).collect();
    b.buf.write(0, &src).expect("the source");
    let write = |i: u64| {
        let mut wr = wr(i, SendOp::RdmaWrite, Some(b.sge(LEN * i, LEN as u32)));
        (wr.remote_addr, wr.rkey) = (a.mr.addr + LEN * i, a.mr.rkey);
        wr
    };
    b.qps[0].post_send_list(&[write(0), write(1)]).unwrap_or_else(|e| panic!("{ctx}: posted: {e:?}"));
    for cycle in 0.. {
        if core.fetches() == 2 {
            break;
        }
        assert!(cycle < 200_000, "{ctx}: both WQEs fetched");
        core.run(1);
    }
    let sent = core.requests().0;
    assert!(sent < 16, "{ctx}: the second WRITE fetched after {sent} of the first's 16 packets, before its last");
    exchange(&w, &core, &b, &ctx, |f| vec![f]);
    let got: Vec<(u64, WcStatus)> = b.cq.poll(4).expect("completions").iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(got, vec![(0, WcStatus::Success), (1, WcStatus::Success)], "{ctx}: both WRITEs completed");
    assert_eq!(a.buf.read(0, 2 * LEN as usize).expect("the target"), src, "{ctx}: both WRITEs landed");
    followed(&core, &ctx, 32 + core.frames(), "32 packets and their ACKs");
}

at_both_widths!(
    a_fetch_gives_the_requester_its_descriptor,
    the_next_wqe_is_fetched_while_a_message_streams,
    a_kept_descriptor_outlives_its_slot,
    a_report_mid_frame_waits_for_the_frame,
    a_raw_packet_qp_sends_beside_rc_writes,
    send_wqes_are_fetched_into_the_window_and_flushed_from_it,
    requests_from_the_rtl_core_reach_a_model_responder,
    acks_complete_the_rtl_cores_sends_and_writes,
    a_payload_that_cannot_be_read_fails_its_wqe,
    reads_and_atomics_complete_on_the_rtl_core,
    a_read_response_of_the_wrong_length_fails_the_read,
    lost_packets_and_naks_on_the_rtl_core,
    timers_run_out_on_the_rtl_core,
    an_sqd_qp_drains_until_its_write_is_acknowledged,
);
