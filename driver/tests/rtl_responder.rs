//! The responder on the RTL core, with a model NIC as the requester: the RDMA WRITEs the model's requester
//! sends (empty, one packet, many packets at PMTU 1024, at any offset) land in the core's host memory, the
//! core's ACKs complete them at the requester, a lost packet has the core NAK the next one (a sequence
//! error, queued behind the ACK it owes) and the requester go back to it, packets it has executed before
//! are acknowledged again and not executed, frames the model only counts (a bad ICRC, another MAC, no
//! such QP) change nothing, and a SEND that finds no receive WQE is NAKed RNR until the requester gives up. The model follows the core throughout: every decision legal, every byte
//! written and every frame sent the same, the QP's contexts the same after.

use driver::pair::{connect, forged_headers, open_host, open_host_on, rtl_turn, run_external, Host};
use driver::rtl::{RtlBackend, RtlHandle};
use driver::*;
use hdl::Width;
use model::net::{LinkConfig, World};
use model::rng::Rng;
use wire::contract::regs::Counter;
use wire::ext::RethRepr;
use wire::Opcode;

#[macro_use]
mod widths;

/// The core expects PSN_A from the model's QP.
const PSN_A: u32 = 0xFF_FFF0;
const BUF: usize = 1 << 16;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0025)
}

fn writes_from_a_model_requester_land_in_the_rtl_core(width: Width) {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let cap = QpCap { max_send_wr: 16, max_recv_wr: 16, ..QpCap::default() };
    let (w, a, core, b) = hosts(width, seed, 1, cap, ConnectOpts::default());

    // The WRITEs, a requester's window at a time (the requester waits for the core's ACKs before the next):
    // the image the core's buffer must end as.
    let mut want = vec![0u8; BUF];
    let (mut packets, mut n, mut acks, mut resent) = (0usize, 0u64, 0usize, 0usize);
    for round in 0..3 {
        let mut sent = 0;
        for i in 0..8u64 {
            // The first window: a long WRITE placed slowly (the host stalls), an empty one asking for an ACK,
            // then one lost on the way: the next is decided before the empty one's ACK can leave, so the
            // NAK queues behind it.
            let first = [Some(3000), Some(0), Some(100)];
            let len = match first.get(i as usize).copied().flatten().filter(|_| round == 0) {
                Some(l) => l,
                None => match rng.below(4) {
                    0 => 0,
                    1 => 1 + rng.below(64) as usize,
                    2 => 1 + rng.below(1024) as usize,
                    _ => 1025 + rng.below(6 * 1024) as usize,
                },
            };
            // Each WRITE of a window has its own source (they are read as they go out, after all are posted).
            let (src, dst) = (8192 * i as usize, rng.below((BUF - len) as u64) as usize);
            let data: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            a.buf.write(src, &data).expect("the source written");
            want[dst..dst + len].copy_from_slice(&data);
            sent += len.div_ceil(1024).max(1);
            let sg_list = if len == 0 { Vec::new() } else { vec![a.sge(src as u64, len as u32)] };
            let wr = SendWr {
                wr_id: 8 * round + i,
                opcode: Some(SendOp::RdmaWrite),
                send_flags: send_flags::SIGNALED,
                sg_list,
                remote_addr: b.mr.addr + dst as u64,
                rkey: b.mr.rkey,
                ..Default::default()
            };
            a.qps[0].post_send(&wr).unwrap_or_else(|e| panic!("seed {seed:#x}: WRITE {i} posted: {e:?}"));
        }
        let mut frames = run(&w);
        assert_eq!(frames.len(), sent, "seed {seed:#x}: round {round}: the requester sent every packet");
        core.set_bubbles(seed, if round == 0 { 0.5 } else { 0.0 });
        if round == 0 {
            // The 100-byte WRITE (after the long one's 3 packets and the empty one).
            frames.remove(4);
        }
        n += frames.len() as u64;
        if round == 1 {
            // Frames the model only counts: a bad ICRC, another MAC, a QP the core does not have.
            let mut bad_icrc = frames[0].clone();
            *bad_icrc.last_mut().expect("bytes") ^= 1;
            let mut other_mac = frames[0].clone();
            other_mac[5] ^= 0x10;
            let mut h = forged_headers(&a, &b, Opcode::RDMA_WRITE_ONLY, PSN_A);
            h.bth.dest_qp = 0x3;
            h.ext.reth = Some(RethRepr { va: b.mr.addr, rkey: b.mr.rkey, dma_len: 16 });
            for f in [bad_icrc, other_mac, h.emit(&[0xAB; 16])] {
                core.receive(f);
                n += 1;
            }
        }
        let again = [frames[0].clone(), frames[frames.len() - 1].clone()];
        for f in frames {
            core.receive(f);
        }
        if round == 2 {
            // Duplicates (a PSN behind the core's ePSN): acknowledged again, not executed again (their bytes
            // are already in place; a WRITE placed twice would show as a second `Data` output).
            for f in again {
                core.receive(f);
                n += 1;
            }
        }
        packets += sent;
        // The core answers; the requester goes back to a NAKed packet and sends again, until it is done.
        let mut again = Vec::new();
        for pass in 0.. {
            let mut answers = 0;
            let (_, settled) = rtl_turn(&w, &core, again, 2_000_000, |_| answers += 1);
            assert!(settled, "seed {seed:#x}: the core took every frame in and answered");
            assert!(answers > 0, "seed {seed:#x}: round {round}: the core answered pass {pass}");
            acks += answers;
            again = run(&w);
            if again.is_empty() {
                break;
            }
            assert!(pass < 4, "seed {seed:#x}: round {round}: the requester still sends after {pass} passes");
            n += again.len() as u64;
            resent += again.len();
        }
        let done = a.cq.poll(64).expect("the requester's completions");
        assert_eq!(done.len(), 8, "seed {seed:#x}: round {round}: the core's ACKs completed the window");
        assert!(done.iter().all(|c| c.status == WcStatus::Success), "seed {seed:#x}: {done:?}");
    }
    assert_eq!(core.responses(), acks as u64, "seed {seed:#x}: every ACK decided left the core");
    assert!(resent >= 6, "seed {seed:#x}: the requester went back to the lost packet ({resent} sent again)");

    assert_eq!(core.frames(), n, "seed {seed:#x}: every frame decided");
    assert_eq!(core.peek("rx_drop_full"), 0, "seed {seed:#x}: the MAC boundary had room");
    assert_eq!(core.peek("cnt_bad_icrc"), 1, "seed {seed:#x}");
    let events = lockstep_clean(&core, &format!("seed {seed:#x}"));
    let got = b.buf.read(0, BUF).expect("the core's buffer");
    if let Some(at) = (0..BUF).find(|&i| got[i] != want[i]) {
        panic!("seed {seed:#x}: the core's buffer differs first at byte {at:#x}");
    }
    core.context_agrees(b.qps[0].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    eprintln!(
        "RTL responder: {packets} WRITE packets (one lost, {resent} sent again), 2 duplicates and 3 dropped frames \
         in, {acks} ACKs and NAKs out, {} decisions in lockstep",
        events
    );
}

/// A model host (the requester) and an RTL host (a 16-QP core, lockstep on, its QPs' capacities `cap`), with
/// `nqps` QPs each, QP `q` connected to QP `q` from PSN_A, the requester's ACK timeout far past a run (a lost
/// ACK shows as missing completions, not a retry), the rest of `opts` as given (PMTU 1024 by default).
fn hosts(width: Width, seed: u64, nqps: usize, cap: QpCap, opts: ConnectOpts) -> (SharedWorld, Host, RtlHandle, Host) {
    hosts_on(width, 16, seed, nqps, cap, opts)
}

/// The same with a core of `core_qps` QPs (16 or 1024 at 8 bytes, 16 at 64).
fn hosts_on(
    width: Width,
    core_qps: u32,
    seed: u64,
    nqps: usize,
    cap: QpCap,
    opts: ConnectOpts,
) -> (SharedWorld, Host, RtlHandle, Host) {
    let w = shared(World::attached(driver::pair::nic_config(), LinkConfig::default(), seed));
    let a = open_host(&w, 0, nqps, BUF, QpCap::default(), false).expect("the model host");
    let rtl = RtlBackend::with_lockstep(core_qps, width);
    let core = rtl.handle();
    let b = open_host_on(Box::new(rtl), 1, nqps, BUF, cap, false).expect("the RTL host");
    let opts = ConnectOpts { timeout: 20, ..opts };
    for q in 0..nqps {
        connect(&a, q, PSN_A, &b, q, 0x100, &opts).expect("connected");
    }
    (w, a, core, b)
}

/// RDMA READs from a model requester answered by the core: READs of every size class (empty, one byte, one
/// path MTU and either side of it, many packets) at any offset, on two QPs, each answered with READ
/// responses (FIRST / MIDDLE / LAST / ONLY) whose payload the core reads from its host memory while the host
/// stalls at random; a WRITE followed by a READ of what it wrote (the READ must see it); a READ of many
/// packets, held back by the MAC, followed by a WRITE over its later part (a response is read once the
/// WRITE's bytes decided before it are out, as the model reads it at its decision); and a READ of an MR whose memory is not there, which sends nothing and a remote access
/// NAK, its QP entering ERR. In lockstep, every response the model's; the requester's buffer the core's
/// bytes after.
fn reads_from_a_model_requester_are_answered_by_the_rtl_core(width: Width) {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let (w, a, core, b) = hosts(width, seed, 3, QpCap::default(), ConnectOpts::default());
    let image: Vec<u8> = (0..BUF).map(|_| rng.below(256) as u8).collect();
    b.buf.write(0, &image).expect("the core's buffer written");
    core.set_bubbles(seed, 0.3);
    let (base, key) = (b.mr.addr, b.mr.rkey);
    let read = |wr_id: u64, dst: usize, src: usize, len: usize| SendWr {
        wr_id,
        opcode: Some(SendOp::RdmaRead),
        send_flags: send_flags::SIGNALED,
        sg_list: if len == 0 { Vec::new() } else { vec![a.sge(dst as u64, len as u32)] },
        remote_addr: base + src as u64,
        rkey: key,
        ..Default::default()
    };
    let write = |wr_id: u64, src: usize, dst: usize, len: usize| SendWr {
        wr_id,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(src as u64, len as u32)],
        remote_addr: base + dst as u64,
        rkey: key,
        ..Default::default()
    };
    // The bytes each READ must bring (checked after), by destination.
    let mut want: Vec<(usize, Vec<u8>)> = Vec::new();
    let (mut reads, mut packets) = (0usize, 0usize);
    for round in 0..2u64 {
        // QP 0: every size class, each into its own 4 KiB-aligned place (the last two 8 KiB).
        let sizes = [0, 1, 1023, 1024, 1025, 3000, 5000 + rng.below(3000) as usize, rng.below(2048) as usize];
        for (i, &len) in sizes.iter().enumerate() {
            let (dst, src) = (0x2000 * i, rng.below((BUF - len) as u64) as usize);
            a.qps[0].post_send(&read(16 * round + i as u64, dst, src, len)).expect("posted");
            want.push((dst, image[src..src + len].to_vec()));
            packets += len.div_ceil(1024).max(1);
            reads += 1;
        }
        let frames = run(&w);
        let mut seen = [0usize; 4];
        exchange(&w, &core, frames, seed, |f| {
            let p = wire::parse(f).unwrap_or_else(|e| panic!("seed {seed:#x}: a frame from the core: {e:?}"));
            let op = p.hdr.bth.opcode;
            let at = [
                Opcode::RDMA_READ_RESPONSE_FIRST,
                Opcode::RDMA_READ_RESPONSE_MIDDLE,
                Opcode::RDMA_READ_RESPONSE_LAST,
                Opcode::RDMA_READ_RESPONSE_ONLY,
            ]
            .iter()
            .position(|&o| o == op)
            .unwrap_or_else(|| panic!("seed {seed:#x}: a READ response, not {op:?}"));
            seen[at] += 1;
        });
        assert!(seen.iter().all(|&n| n > 0), "seed {seed:#x}: responses of every position: {seen:?}");
        let done = a.cq.poll(16).expect("the requester's completions");
        assert_eq!(done.len(), sizes.len(), "seed {seed:#x}: round {round}: every READ completed");
        assert!(done.iter().all(|c| c.status == WcStatus::Success), "seed {seed:#x}: {done:?}");
        for (dst, bytes) in want.drain(..) {
            let got = a.buf.read(dst, bytes.len()).expect("the requester's buffer");
            assert!(got == bytes, "seed {seed:#x}: round {round}: the READ into {dst:#x} brought the core's bytes");
        }
    }
    // A READ behind a coalesced ACK: QP 0's READ request goes in first, and while its first response's
    // payload streams in (no second read can start), QP 1's empty WRITE fills its ACK slot and its READ,
    // decided next, moves that ACK into the ring ahead of it: both must go.
    a.qps[0].post_send(&read(0x31, 0, 0, 0x2000)).expect("posted");
    let mut frames = run(&w);
    a.qps[1].post_send(&SendWr { sg_list: Vec::new(), ..write(0x3E, 0, 0x100, 0) }).expect("posted");
    a.qps[1].post_send(&read(0x3F, 0x3000, 0x100, 100)).expect("posted");
    frames.extend(run(&w));
    exchange(&w, &core, frames, seed, |_| {});
    let mut done: Vec<_> =
        a.cq.poll(8).expect("the requester's completions").iter().map(|c| (c.wr_id, c.status)).collect();
    done.sort_unstable_by_key(|c| c.0);
    assert_eq!(done, [0x31, 0x3E, 0x3F].map(|id| (id, WcStatus::Success)), "seed {seed:#x}: the READ behind an ACK");
    // QP 1: a WRITE, then a READ of what it wrote.
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
    a.buf.write(0xA000, &data).expect("the source written");
    a.qps[1].post_send(&write(0x40, 0xA000, 0x100, 3000)).expect("posted");
    a.qps[1].post_send(&read(0x41, 0xC000, 0x100, 3000)).expect("posted");
    let frames = run(&w);
    exchange(&w, &core, frames, seed, |_| {});
    assert_eq!(a.buf.read(0xC000, 3000).expect("read back"), data[..3000], "seed {seed:#x}: the READ saw the WRITE");
    let image = b.buf.read(0, BUF).expect("the core's buffer");
    // Then, with the host stalling often, a READ of 24 KiB with a WRITE of 8 KiB over its first 8 KiB behind:
    // the READ's responses (each read waiting for the last one's beats, which the host spaces) and the
    // WRITE's packets (placed at the pace the host takes them) keep step, so responses meet the WRITE's
    // packets being placed near their own bytes; which bytes each response carries is the model's to say.
    a.qps[1].post_send(&read(0x42, 0, 0x8000, 0x6000)).expect("posted");
    a.qps[1].post_send(&write(0x43, 0xA000, 0x8000, 0x2000)).expect("posted");
    core.set_bubbles(seed, 0.6);
    let frames = run(&w);
    exchange(&w, &core, frames, seed, |_| {});
    let done = a.cq.poll(8).expect("the requester's completions");
    let st: Vec<_> = done.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(
        st,
        [0x40, 0x41, 0x42, 0x43].map(|id| (id, WcStatus::Success)),
        "seed {seed:#x}: the WRITEs and READs on QP 1"
    );
    let got = a.buf.read(0x2000, 0x4000).expect("read back");
    assert_eq!(got, image[0xA000..0xE000], "seed {seed:#x}: the READ's bytes past the WRITE's");
    core.set_bubbles(seed, 0.3);
    // QP 2: a READ of an MR whose memory is not there: no response, a remote access NAK, the QP in ERR.
    let far = b.pd.reg_mr(1 << 44, 0x10000, wire::contract::verbs::access::REMOTE_READ).expect("an MR");
    let wr = SendWr { remote_addr: 1 << 44, rkey: far.rkey, ..read(0x50, 0, 0, 2500) };
    a.qps[2].post_send(&wr).expect("posted");
    let frames = run(&w);
    let mut naks = Vec::new();
    exchange(&w, &core, frames, seed, |f| {
        let p = wire::parse(f).unwrap_or_else(|e| panic!("seed {seed:#x}: a frame from the core: {e:?}"));
        naks.push((p.hdr.bth.opcode, p.hdr.ext.aeth.map(|a| a.syndrome)));
    });
    let nak = (Opcode::ACKNOWLEDGE, Some(wire::ext::syndrome::NAK_REMOTE_ACCESS));
    assert_eq!(naks, [nak], "seed {seed:#x}: the READ's only answer, a remote access NAK");
    let done = a.cq.poll(4).expect("the requester's completions");
    let st: Vec<_> = done.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(st, [(0x50, WcStatus::RemAccessErr)], "seed {seed:#x}");
    assert_eq!(b.qps[2].query().expect("QUERY_QP").qp_state, QpState::Err as u8, "seed {seed:#x}: QP 2 in ERR");
    for q in 0..3 {
        core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    }
    let events = lockstep_clean(&core, &format!("seed {seed:#x}"));
    eprintln!(
        "RTL READ responder: {reads} READs of {packets} response packets on QP 0, a WRITE / READ pair each way \
         on QP 1, a READ of missing memory on QP 2; {} responses, {events} decisions in lockstep",
        core.responses()
    );
}

/// Duplicate READs answered from the core's resources: a READ response lost on the way has the requester
/// ask again from the first PSN it is missing (the model's gap retry), and the core sends those responses
/// again from the READ it kept: a lost MIDDLE (the re-request starts mid-READ: MIDDLE ... LAST), a lost
/// FIRST (the whole READ again, FIRST first), a lost response of the older of two READs (the scan passes the
/// newer one; the newer is asked again too). Forged duplicates: part of a kept READ (answered; the requester
/// drops responses it has), one with another R_Key, one past the READ's bytes, one of a READ no longer kept
/// (`max_dest_rd_atomic` newer ones since), each ignored; a duplicate READ moving a coalesced ACK into the
/// ring ahead of its response. On QP 1 a READ whose MR is deregistered before
/// the re-request comes: a remote access NAK, QP 1 in ERR. In lockstep throughout; the requester's bytes the
/// core's.
fn duplicate_reads_are_answered_again_from_the_kept_resources(width: Width) {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let opts = ConnectOpts { max_rd_atomic: 4, ..ConnectOpts::default() };
    let (w, a, core, b) = hosts(width, seed, 2, QpCap::default(), opts);
    let image: Vec<u8> = (0..BUF).map(|_| rng.below(256) as u8).collect();
    b.buf.write(0, &image).expect("the core's buffer written");
    core.set_bubbles(seed, 0.3);
    let read = |wr_id: u64, dst: usize, src: usize, len: usize| SendWr {
        wr_id,
        opcode: Some(SendOp::RdmaRead),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(dst as u64, len as u32)],
        remote_addr: b.mr.addr + src as u64,
        rkey: b.mr.rkey,
        ..Default::default()
    };
    // The core's answers to `frames`, those `lose` picks (by index) not passed on; the opcodes sent.
    let lossy = |frames: Vec<Vec<u8>>, lose: &[usize]| -> Vec<Opcode> {
        let mut ops = Vec::new();
        turn(&w, &core, frames, seed, |f| {
            ops.push(wire::parse(f).expect("a frame from the core").hdr.bth.opcode);
            !lose.contains(&(ops.len() - 1))
        });
        ops
    };
    // The opcodes of the core's answers in one exchange (the requester's retries included).
    let answers = |frames: Vec<Vec<u8>>| {
        let mut ops = Vec::new();
        exchange(&w, &core, frames, seed, |f| ops.push(wire::parse(f).expect("a frame from the core").hdr.bth.opcode));
        ops
    };
    let check = |wr_ids: &[u64], want: &[(usize, usize, usize)], what: &str| {
        let mut done: Vec<_> = a.cq.poll(16).expect("completions").iter().map(|c| (c.wr_id, c.status)).collect();
        done.sort_unstable_by_key(|c| c.0);
        let ok: Vec<_> = wr_ids.iter().map(|&id| (id, WcStatus::Success)).collect();
        assert_eq!(done, ok, "seed {seed:#x}: {what}: completions");
        for &(dst, src, len) in want {
            let got = a.buf.read(dst, len).expect("the requester's buffer");
            assert!(
                got == image[src..src + len],
                "seed {seed:#x}: {what}: the READ into {dst:#x} brought the core's bytes"
            );
        }
    };
    use Opcode as O;
    let (first, middle, last) = (O::RDMA_READ_RESPONSE_FIRST, O::RDMA_READ_RESPONSE_MIDDLE, O::RDMA_READ_RESPONSE_LAST);

    // A lost MIDDLE: 5 responses, the third lost; asked again from it.
    a.qps[0].post_send(&read(1, 0, 0x100, 5000)).expect("posted");
    let sent = lossy(run(&w), &[2]);
    assert_eq!(sent, [first, middle, middle, middle, last], "seed {seed:#x}: the READ's responses");
    assert_eq!(answers(run(&w)), [middle, middle, last], "seed {seed:#x}: sent again from the lost MIDDLE");
    check(&[1], &[(0, 0x100, 5000)], "a lost MIDDLE");
    // A lost FIRST: the whole READ again.
    a.qps[0].post_send(&read(2, 0x2000, 0x3000, 3000)).expect("posted");
    lossy(run(&w), &[0]);
    assert_eq!(answers(run(&w)), [first, middle, last], "seed {seed:#x}: sent again from the lost FIRST");
    check(&[2], &[(0x2000, 0x3000, 3000)], "a lost FIRST");
    // Two READs, the older one's MIDDLE lost: its rest and the newer READ asked again.
    a.qps[0].post_send(&read(3, 0x4000, 0x5000, 3000)).expect("posted");
    a.qps[0].post_send(&read(4, 0x5000, 0x7000, 2000)).expect("posted");
    let requests = run(&w);
    assert_eq!(lossy(requests.clone(), &[1]).len(), 5, "seed {seed:#x}: both READs' responses");
    assert_eq!(answers(run(&w)), [middle, last, first, last], "seed {seed:#x}: the older READ's rest, the newer");
    check(&[3, 4], &[(0x4000, 0x5000, 3000), (0x5000, 0x7000, 2000)], "two READs");

    // Forged duplicates of READ 3 (its request as sent, changed).
    let p = wire::parse(&requests[0]).expect("the READ request");
    let (h3, r3) = (p.hdr, p.hdr.ext.reth.expect("a RETH"));
    let forged = |psn_off: u32, reth: RethRepr| {
        let mut h = h3;
        h.bth.psn = h3.bth.psn.add(psn_off);
        h.ext.reth = Some(reth);
        h.emit(&[])
    };
    // Its second and third responses (answered; the requester drops them, it has them).
    let part = RethRepr { va: r3.va + 1024, dma_len: 1976, ..r3 };
    assert_eq!(answers(vec![forged(1, part)]), [middle, last], "seed {seed:#x}: part of READ 3 again");
    let other_key = RethRepr { rkey: r3.rkey ^ 0x100, ..r3 };
    let past_end = RethRepr { dma_len: 3001, ..r3 };
    assert_eq!(answers(vec![forged(0, other_key), forged(0, past_end)]), [], "seed {seed:#x}: ignored");
    // Four more READs: READ 3 is no longer kept (the core keeps four).
    for i in 0..4 {
        a.qps[0].post_send(&read(5 + i, 0x8000 + 0x100 * i as usize, 0x100, 100)).expect("posted");
    }
    let four = run(&w);
    assert_eq!(answers(four.clone()).len(), 4, "seed {seed:#x}: four READ responses");
    check(&[5, 6, 7, 8], &[(0x8300, 0x100, 100)], "four more READs");
    assert_eq!(answers(vec![forged(0, r3)]), [], "seed {seed:#x}: a READ no longer kept: ignored");
    // A duplicate READ behind a coalesced ACK: QP 1's READ goes in first, and while its response's payload
    // streams in (no QP is taken), QP 0's empty WRITE fills its ACK slot and READ 8's request, sent again,
    // moves that ACK into the ring ahead of its response: both go (the requester drops the response it has).
    a.qps[1].post_send(&read(0x10, 0x6000, 0, 0x2000)).expect("posted");
    let mut frames = run(&w);
    let empty = SendWr { wr_id: 0x11, opcode: Some(SendOp::RdmaWrite), sg_list: Vec::new(), ..read(0, 0, 0, 0) };
    a.qps[0].post_send(&empty).expect("posted");
    frames.extend(run(&w));
    frames.push(four[3].clone());
    let ops = answers(frames);
    let acks = ops.iter().filter(|&&o| o == O::ACKNOWLEDGE).count();
    let onlys = ops.iter().filter(|&&o| o == O::RDMA_READ_RESPONSE_ONLY).count();
    assert_eq!((acks, onlys), (1, 1), "seed {seed:#x}: the ACK and the READ sent again: {ops:?}");
    check(&[0x10, 0x11], &[(0x6000, 0, 0x2000)], "a duplicate READ behind an ACK");

    // QP 1: the MR goes away between the lost response and the re-request: a remote access NAK.
    let mr = b.pd.reg_mr(b.mr.addr, 0x4000, access::REMOTE_READ).expect("an MR");
    let wr = SendWr { rkey: mr.rkey, ..read(9, 0xA000, 0x1000, 2500) };
    a.qps[1].post_send(&wr).expect("posted");
    lossy(run(&w), &[0]);
    b.pd.dereg_mr(mr).expect("the MR deregistered");
    let mut naks = Vec::new();
    exchange(&w, &core, run(&w), seed, |f| {
        let p = wire::parse(f).expect("a frame from the core");
        naks.push((p.hdr.bth.opcode, p.hdr.ext.aeth.map(|a| a.syndrome)));
    });
    assert_eq!(naks, [(O::ACKNOWLEDGE, Some(wire::ext::syndrome::NAK_REMOTE_ACCESS))], "seed {seed:#x}: the NAK");
    let st: Vec<_> = a.cq.poll(4).expect("completions").iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(st, [(9, WcStatus::RemAccessErr)], "seed {seed:#x}: the READ on QP 1");
    assert_eq!(b.qps[1].query().expect("QUERY_QP").qp_state, QpState::Err as u8, "seed {seed:#x}: QP 1 in ERR");
    for q in 0..2 {
        core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    }
    let events = lockstep_clean(&core, &format!("seed {seed:#x}"));
    eprintln!("RTL duplicate READs: {} responses, {events} decisions in lockstep", core.responses());
}

/// Atomics from a model requester executed by the core: FETCH_ADDs and CMP_SWAPs (the compare value
/// matching and not) on 8-byte words of the core's memory, each returning the word's original value (the
/// requester's buffer) and leaving the new one (the core's), the core reading, changing and writing the word
/// by DMA while the host stalls; an atomic ACK lost on the way (the READ response behind it shows the gap):
/// the requester sends the atomic again and the core answers it from its resource, not executing it twice;
/// a forged duplicate atomic of a PSN no atomic was executed at, ignored; an atomic that moves a coalesced ACK
/// into the ring ahead of its own ACK; an atomic on memory that is not there on QP 1: a remote access NAK, QP 1
/// in ERR. In lockstep throughout.
fn atomics_from_a_model_requester_are_executed_by_the_rtl_core(width: Width) {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let (w, a, core, b) = hosts(width, seed, 2, QpCap::default(), ConnectOpts::default());
    let words: Vec<u64> = (0..64).map(|_| rng.next_u64()).collect();
    let image: Vec<u8> = words.iter().flat_map(|x| x.to_le_bytes()).collect();
    b.buf.write(0x1000, &image).expect("the core's buffer written");
    core.set_bubbles(seed, 0.3);
    let word_at = |i: usize| u64::from_le_bytes(b.buf.read(0x1000 + 8 * i, 8).expect("read").try_into().expect("8"));
    let returned = |i: usize| u64::from_le_bytes(a.buf.read(0x100 * i, 8).expect("read").try_into().expect("8"));
    let atomic = |wr_id: u64, op: SendOp, i: usize, compare_add: u64, swap: u64| SendWr {
        wr_id,
        opcode: Some(op),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0x100 * wr_id, 8)],
        remote_addr: b.mr.addr + 0x1000 + 8 * i as u64,
        rkey: b.mr.rkey,
        compare_add,
        swap,
        ..Default::default()
    };
    let done = || -> Vec<(u64, WcStatus)> {
        let mut d: Vec<_> = a.cq.poll(16).expect("completions").iter().map(|c| (c.wr_id, c.status)).collect();
        d.sort_unstable_by_key(|c| c.0);
        d
    };
    // Word 0 += 5; word 1 swapped (its compare matches); word 2 not (it does not); word 3 += 2^63, twice.
    let want = [words[0].wrapping_add(5), 0x1234, words[2], words[3].wrapping_add(1 << 63).wrapping_add(1 << 63)];
    a.qps[0].post_send(&atomic(1, SendOp::AtomicFetchAdd, 0, 5, 0)).expect("posted");
    a.qps[0].post_send(&atomic(2, SendOp::AtomicCmpSwp, 1, words[1], 0x1234)).expect("posted");
    a.qps[0].post_send(&atomic(3, SendOp::AtomicCmpSwp, 2, !words[2], 0x5678)).expect("posted");
    a.qps[0].post_send(&atomic(4, SendOp::AtomicFetchAdd, 3, 1 << 63, 0)).expect("posted");
    a.qps[0].post_send(&atomic(5, SendOp::AtomicFetchAdd, 3, 1 << 63, 0)).expect("posted");
    let mut ops = Vec::new();
    exchange(&w, &core, run(&w), seed, |f| ops.push(wire::parse(f).expect("a frame").hdr.bth.opcode));
    assert_eq!(ops, [Opcode::ATOMIC_ACKNOWLEDGE; 5], "seed {seed:#x}: an atomic ACK for each");
    assert_eq!(done(), (1..=5).map(|id| (id, WcStatus::Success)).collect::<Vec<_>>(), "seed {seed:#x}");
    let origs = [words[0], words[1], words[2], words[3], words[3].wrapping_add(1 << 63)];
    for (k, &o) in origs.iter().enumerate() {
        assert_eq!(returned(k + 1), o, "seed {seed:#x}: atomic {} returned the original value", k + 1);
    }
    for (i, &x) in want.iter().enumerate() {
        assert_eq!(word_at(i), x, "seed {seed:#x}: word {i} after");
    }
    // A FETCH_ADD whose ACK is lost, a READ behind it: the READ's response shows the gap, the FETCH_ADD is
    // sent again and answered from its resource (the word added to once).
    a.qps[0].post_send(&atomic(6, SendOp::AtomicFetchAdd, 4, 7, 0)).expect("posted");
    let read = SendWr {
        wr_id: 7,
        opcode: Some(SendOp::RdmaRead),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0x800, 16)],
        remote_addr: b.mr.addr + 0x1000 + 8 * 5,
        rkey: b.mr.rkey,
        ..Default::default()
    };
    a.qps[0].post_send(&read).expect("posted");
    let requests = run(&w);
    let mut first = Vec::new();
    turn(&w, &core, requests.clone(), seed, |f| {
        first.push(wire::parse(f).expect("a frame").hdr.bth.opcode);
        first.len() != 1
    });
    assert_eq!(first, [Opcode::ATOMIC_ACKNOWLEDGE, Opcode::RDMA_READ_RESPONSE_ONLY], "seed {seed:#x}");
    let mut again = Vec::new();
    exchange(&w, &core, run(&w), seed, |f| again.push(wire::parse(f).expect("a frame").hdr.bth.opcode));
    assert_eq!(again, [Opcode::ATOMIC_ACKNOWLEDGE, Opcode::RDMA_READ_RESPONSE_ONLY], "seed {seed:#x}: answered again");
    assert_eq!(done(), [(6, WcStatus::Success), (7, WcStatus::Success)], "seed {seed:#x}");
    assert_eq!(returned(6), words[4], "seed {seed:#x}: the FETCH_ADD sent again returned the original value");
    assert_eq!(word_at(4), words[4].wrapping_add(7), "seed {seed:#x}: added to once");
    // The FETCH_ADD's request forged with the READ's PSN (no atomic executed there): ignored.
    let mut h = wire::parse(&requests[0]).expect("the FETCH_ADD").hdr;
    h.bth.psn = wire::parse(&requests[1]).expect("the READ").hdr.bth.psn;
    let mut ignored = 0;
    exchange(&w, &core, vec![h.emit(&[])], seed, |_| ignored += 1);
    assert_eq!(ignored, 0, "seed {seed:#x}: no answer to a duplicate atomic with no resource");
    // An atomic behind a coalesced ACK: QP 0's READ goes in first, and while its response's payload streams
    // in (no QP is taken), QP 1's empty WRITE fills its ACK slot and its FETCH_ADD, executed next, moves that
    // ACK into the ring ahead of its own: both must go, with the host stalling the atomic's write beat (the ring
    // entries are written before it).
    core.set_bubbles(seed, 0.9);
    a.qps[0].post_send(&SendWr { wr_id: 9, sg_list: vec![a.sge(0x2000, 0x1000)], ..read }).expect("posted");
    let mut frames = run(&w);
    let empty = SendWr { wr_id: 10, opcode: Some(SendOp::RdmaWrite), sg_list: Vec::new(), ..read };
    a.qps[1].post_send(&empty).expect("posted");
    a.qps[1].post_send(&atomic(11, SendOp::AtomicFetchAdd, 6, 3, 0)).expect("posted");
    frames.extend(run(&w));
    exchange(&w, &core, frames, seed, |_| {});
    let ids = [9, 10, 11].map(|id| (id, WcStatus::Success));
    assert_eq!(done(), ids, "seed {seed:#x}: the atomic behind an ACK");
    assert_eq!((returned(11), word_at(6)), (words[6], words[6].wrapping_add(3)), "seed {seed:#x}: behind an ACK");
    core.set_bubbles(seed, 0.3);
    // QP 1: an atomic on an MR whose memory is not there.
    let far = b.pd.reg_mr(1 << 44, 0x1000, access::REMOTE_ATOMIC | access::LOCAL_WRITE).expect("an MR");
    let wr = SendWr { remote_addr: 1 << 44, rkey: far.rkey, ..atomic(12, SendOp::AtomicFetchAdd, 0, 1, 0) };
    a.qps[1].post_send(&wr).expect("posted");
    let mut naks = Vec::new();
    exchange(&w, &core, run(&w), seed, |f| {
        let p = wire::parse(f).expect("a frame");
        naks.push((p.hdr.bth.opcode, p.hdr.ext.aeth.map(|a| a.syndrome)));
    });
    assert_eq!(naks, [(Opcode::ACKNOWLEDGE, Some(wire::ext::syndrome::NAK_REMOTE_ACCESS))], "seed {seed:#x}");
    assert_eq!(done(), [(12, WcStatus::RemAccessErr)], "seed {seed:#x}");
    assert_eq!(b.qps[1].query().expect("QUERY_QP").qp_state, QpState::Err as u8, "seed {seed:#x}: QP 1 in ERR");
    for q in 0..2 {
        core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    }
    let events = lockstep_clean(&core, &format!("seed {seed:#x}"));
    eprintln!("RTL atomics: {} responses, {events} decisions in lockstep", core.responses());
}

/// The end of every test: nothing needed an engine not built yet, and the model followed the core with no
/// mismatch through more decisions than the frames in and out and the flush steps (register accesses and
/// commands are decisions too); the decisions followed.
fn lockstep_clean(core: &RtlHandle, ctx: &str) -> usize {
    assert_eq!(core.peek("rx_unhandled"), 0, "{ctx}: nothing needed an engine not built yet");
    let c = core.read_counters();
    let sent = core.requests().0 + core.responses();
    assert_eq!(c[Counter::rx_frames as usize], core.frames(), "{ctx}: rx_frames is the frames decided");
    assert_eq!(c[Counter::tx_frames as usize], sent, "{ctx}: tx_frames is the frames sent");
    let r = core.lockstep_report().expect("lockstep is on");
    assert_eq!((r.mismatches, &r.first), (0, &None), "{ctx}: the model following {} decisions", r.events);
    let seen = core.frames() + core.responses() + core.flushes();
    assert!(
        r.events as u64 > seen,
        "{ctx}: every frame in and out and every flush step a decision followed ({} in all)",
        r.events
    );
    r.events
}

/// Runs the model's world for 2 ms (far short of the ACK timeout) and takes the frames it sent.
fn run(w: &SharedWorld) -> Vec<Vec<u8>> {
    run_external(w, 2_000_000_000)
}

/// Passes `frames` into the core, and the core's answers (each shown to `look` first) back to the model,
/// until the requester sends nothing more; the frames it sent after the first pass.
fn exchange(w: &SharedWorld, core: &RtlHandle, frames: Vec<Vec<u8>>, seed: u64, mut look: impl FnMut(&[u8])) -> usize {
    exchange_keeping(w, core, frames, seed, |f| {
        look(f);
        true
    })
}

/// The same, the core's answers `keep` refuses lost on the way.
fn exchange_keeping(
    w: &SharedWorld,
    core: &RtlHandle,
    mut frames: Vec<Vec<u8>>,
    seed: u64,
    mut keep: impl FnMut(&[u8]) -> bool,
) -> usize {
    let (mut again, mut refused) = (0, 0);
    for pass in 0.. {
        turn(w, core, frames, seed, |f| {
            let k = keep(f);
            refused += usize::from(!k);
            k
        });
        frames = run(w);
        if frames.is_empty() {
            return again;
        }
        again += frames.len();
        // Each answer lost may cost a pass (the requester asks again).
        assert!(pass < 4 + refused, "seed {seed:#x}: the requester still sends after {pass} passes");
    }
    unreachable!("the passes end in the loop")
}

/// Passes `frames` into the core and, once it has answered, the answers `keep` keeps to the model.
fn turn(w: &SharedWorld, core: &RtlHandle, frames: Vec<Vec<u8>>, seed: u64, mut keep: impl FnMut(&[u8]) -> bool) {
    for f in frames {
        core.receive(f);
    }
    assert!(core.settle(2_000_000), "seed {seed:#x}: the core took every frame in and answered");
    let mut w = lock_world(w);
    for f in core.take_sent() {
        if keep(&f) {
            w.inject_external(f);
        }
    }
}

fn a_send_that_finds_no_receive_wqe_is_rnr_naked_by_the_rtl_core(width: Width) {
    let seed = seed();
    // The core's minimum RNR timer 10 us (code 1); the requester sends a request NAKed RNR twice more.
    let opts = ConnectOpts { rnr_retry: 2, min_rnr_timer: 1, ..Default::default() };
    let (w, a, core, b) = hosts(width, seed, 1, QpCap::default(), opts);

    // A WRITE the core executes, then a SEND with no receive WQE posted at the core.
    let data: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
    a.buf.write(0, &data).expect("the source written");
    let write = SendWr {
        wr_id: 1,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0, 300)],
        remote_addr: b.mr.addr + 0x40,
        rkey: b.mr.rkey,
        ..Default::default()
    };
    let send = SendWr {
        wr_id: 2,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0, 200)],
        ..Default::default()
    };
    for wr in [&write, &send] {
        a.qps[0].post_send(wr).unwrap_or_else(|e| panic!("seed {seed:#x}: posted: {e:?}"));
    }
    let frames = run(&w);
    assert_eq!(frames.len(), 2, "seed {seed:#x}: the WRITE and the SEND");
    let (mut rnr, mut acks) = (0usize, 0usize);
    exchange(&w, &core, frames, seed, |f| {
        let p = wire::parse(f).unwrap_or_else(|e| panic!("seed {seed:#x}: a frame from the core: {e:?}"));
        let aeth = p.hdr.ext.aeth.expect("an ACK or NAK");
        if aeth.syndrome >> 5 == 1 {
            // An RNR NAK for the SEND (the PSN after the WRITE's), with the core's timer.
            assert_eq!(aeth.syndrome & 0x1F, 1, "seed {seed:#x}: the core's minimum RNR timer");
            assert_eq!(p.hdr.bth.psn, wire::Psn::new(PSN_A + 1), "seed {seed:#x}: the SEND's PSN");
            rnr += 1;
        } else {
            acks += 1;
        }
    });
    // The first RNR NAK and one for each of the two retries; the requester then gives up.
    assert_eq!(rnr, 3, "seed {seed:#x}: RNR NAKs");
    assert!(acks >= 1, "seed {seed:#x}: the WRITE acknowledged");
    let done = a.cq.poll(8).expect("the requester's completions");
    let status: Vec<_> = done.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(status, [(1, WcStatus::Success), (2, WcStatus::RnrRetryExcErr)], "seed {seed:#x}");
    let events = lockstep_clean(&core, &format!("seed {seed:#x}"));
    assert_eq!(b.buf.read(0x40, 300).expect("the core's buffer"), data, "seed {seed:#x}: the WRITE landed");
    core.context_agrees(b.qps[0].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    eprintln!("RTL responder: a SEND with no receive WQE NAKed RNR {rnr} times, {acks} ACKs, {events} decisions");
}

/// What a receive's completion must say, where its bytes must land (offset, length), and the bytes.
type Received = (Wc, Vec<(usize, usize)>, Vec<u8>);

/// SENDs (empty, one packet, many, with and without immediate) and WRITEs with immediate from a model
/// requester land in receive WQEs posted on the RTL host: each SEND's payload scattered over its WQE's list
/// of one to three SGEs, each completed with a receive CQE the driver polls (its `wr_id`, length, opcode,
/// immediate and flags the message's), the WRITEs' payload at their address, in lockstep throughout. The
/// CQ armed raises one completion event (an EQE and the interrupt the driver takes), armed for solicited
/// messages one if a message was solicited, unarmed none.
fn sends_from_a_model_requester_land_in_receive_wqes_on_the_rtl_core(width: Width) {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let cap = QpCap { max_send_wr: 16, max_recv_wr: 16, max_recv_sge: 4, ..QpCap::default() };
    let (w, a, core, b) = hosts(width, seed, 1, cap, ConnectOpts::default());

    let mut sends = 0usize;
    for round in 0..3u64 {
        let mut want: Vec<Received> = Vec::new();
        match round {
            0 => b.cq.req_notify(false),
            2 => b.cq.req_notify(true),
            _ => {}
        }
        let mut solicited = false;
        let mut sent = 0;
        for i in 0..6u64 {
            let wr_id = 0x100 * (round + 1) + i;
            let len = match (round, i) {
                (0, 0) => 0,
                (0, 1) => 1024,
                (0, 2) => 1025,
                _ => match rng.below(3) {
                    0 => 1 + rng.below(64) as usize,
                    1 => 1 + rng.below(1024) as usize,
                    _ => 1025 + rng.below(4 * 1024) as usize,
                },
            };
            let data: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            let src = 8192 * i as usize;
            a.buf.write(src, &data).expect("the source written");
            let with_imm = rng.chance(0.5);
            let imm = rng.next_u64() as u32;
            let write = i == 5;
            let se = rng.chance(0.3);
            solicited |= se;
            // The receive: its buffer cut into up to three SGEs (a WRITE with immediate's is not used).
            let base = 4096 + 8192 * i as usize;
            let mut pieces = Vec::new();
            let mut left = len.max(1);
            while left > 0 {
                let n = if pieces.len() == 2 { left } else { 1 + rng.below(left as u64) as usize };
                let at = base + pieces.iter().map(|&(_, l): &(usize, usize)| l + 16).sum::<usize>();
                pieces.push((at, n));
                left -= n;
            }
            let sg_list = pieces.iter().map(|&(at, n)| b.sge(at as u64, n as u32)).collect();
            b.qps[0].post_recv(&RecvWr { wr_id, sg_list }).unwrap_or_else(|e| panic!("seed {seed:#x}: {e:?}"));
            let dst = if write { 0xD000 + 8 * round as usize } else { 0 };
            let wr = SendWr {
                wr_id,
                opcode: Some(match (write, with_imm) {
                    (true, _) => SendOp::RdmaWriteWithImm,
                    (false, true) => SendOp::SendWithImm,
                    (false, false) => SendOp::Send,
                }),
                // Solicited or not: the CQE's `se` (which only lockstep sees), and the event of an arming for
                // solicited messages.
                send_flags: send_flags::SIGNALED | if se { send_flags::SOLICITED } else { 0 },
                sg_list: if len == 0 { Vec::new() } else { vec![a.sge(src as u64, len as u32)] },
                imm_data: imm,
                remote_addr: b.mr.addr + dst as u64,
                rkey: b.mr.rkey,
                ..Default::default()
            };
            a.qps[0].post_send(&wr).unwrap_or_else(|e| panic!("seed {seed:#x}: posted: {e:?}"));
            sent += len.div_ceil(1024).max(1);
            let imm_flag = write || with_imm;
            let wc = Wc {
                wr_id,
                status: WcStatus::Success,
                opcode: if write { WcOpcode::RecvRdmaWithImm } else { WcOpcode::Recv },
                byte_len: len as u32,
                imm_data: if imm_flag { imm } else { 0 },
                qp_num: b.qps[0].qpn,
                wc_flags: if imm_flag { wire::contract::verbs::wc_flags::WITH_IMM } else { 0 },
                vendor_err: 0,
                src_qp: 0,
            };
            let land = if write { vec![(dst, len)] } else { pieces.iter().map(|&(at, n)| (at, n.min(len))).collect() };
            want.push((wc, land, data));
            sends += 1;
        }
        let mut frames = run(&w);
        assert_eq!(frames.len(), sent, "seed {seed:#x}: round {round}: the requester sent every packet");
        core.set_bubbles(seed ^ round, if round == 1 { 0.5 } else { 0.0 });
        if round == 1 {
            for f in frames.drain(..) {
                core.receive(f);
            }
            // Commands while the frames go in: their mailbox reads and the WQE fetches share the DMA read
            // port, their completions in any order (the host stalls at random).
            for _ in 0..64 {
                let q = b.qps[0].query().unwrap_or_else(|e| panic!("seed {seed:#x}: QUERY_QP: {e:?}"));
                assert_eq!(q.qp_state, QpState::Rts as u8, "seed {seed:#x}: the QP queried");
                if core.reordered() > 0 {
                    break;
                }
            }
        }
        exchange(&w, &core, frames, seed, |_| {});
        let done = a.cq.poll(64).expect("the requester's completions");
        assert_eq!(done.len(), 6, "seed {seed:#x}: round {round}: the core's ACKs completed the window");
        assert!(done.iter().all(|c| c.status == WcStatus::Success), "seed {seed:#x}: {done:?}");
        let event = b.ctx.get_cq_event(100_000).expect("the event queue read");
        let armed = round == 0 || (round == 2 && solicited);
        assert_eq!(event, armed.then_some(b.cq.cqn), "seed {seed:#x}: round {round}: the completion event");
        assert_eq!(b.ctx.get_cq_event(100_000).expect("the event queue read"), None, "one event an arming");
        let got = b.cq.poll(64).expect("the RTL host's completions");
        assert_eq!(got.len(), want.len(), "seed {seed:#x}: a receive completion for every message: {got:?}");
        for (g, (wc, land, data)) in got.iter().zip(&want) {
            assert_eq!(g, wc, "seed {seed:#x}: round {round}: the receive completion");
            let mut at = 0;
            for &(addr, n) in land {
                let bytes = b.buf.read(addr, n).expect("the core's buffer");
                assert_eq!(bytes, data[at..at + n], "seed {seed:#x}: WQE {:#x}: bytes at {addr:#x}", wc.wr_id);
                at += n;
            }
        }
    }
    assert!(core.reordered() > 0, "seed {seed:#x}: mailbox reads and WQE fetches completed out of order");
    let events = lockstep_clean(&core, &format!("seed {seed:#x}"));
    core.context_agrees(b.qps[0].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    eprintln!("RTL responder: {sends} SENDs and WRITEs with immediate into receive WQEs, {events} decisions");
}

/// SENDs the receive WQE cannot take, each on a QP of its own: longer than the WQE's list on its only packet
/// (LocLenErr, no bytes) and on its second (LocLenErr, the first packet's bytes placed), and a WQE whose SGE
/// names no MR (LocQpOpErr). The core completes the receive in error and sends a fatal NAK (Invalid Request,
/// Remote Operational Error), which completes the requester's SEND in error; the QP enters ERR as the NAK
/// leaves. In lockstep throughout, the QPs' contexts the model's after.
fn sends_the_receive_wqe_cannot_take_complete_it_in_error_with_a_fatal_nak(width: Width) {
    let seed = seed();
    let (w, a, core, b) = hosts(width, seed, 3, QpCap::default(), ConnectOpts::default());
    // (SEND length, receive length, a bad key, what the receive completes with, its byte count, what the
    // requester's SEND completes with)
    let cases = [
        (300usize, 100u32, false, WcStatus::LocLenErr, 0u32, WcStatus::RemInvReqErr),
        (3000, 1500, false, WcStatus::LocLenErr, 1024, WcStatus::RemInvReqErr),
        (200, 400, true, WcStatus::LocQpOpErr, 0, WcStatus::RemOpErr),
    ];
    let data: Vec<u8> = (0..3000u32).map(|i| (i * 13 + 5) as u8).collect();
    a.buf.write(0, &data).expect("the source written");
    for (q, &(len, room, bad_key, ..)) in cases.iter().enumerate() {
        let mut sge = b.sge(0x1000 * (q as u64 + 1), room);
        if bad_key {
            sge.lkey ^= 0x100;
        }
        b.qps[q].post_recv(&RecvWr { wr_id: 0x70 + q as u64, sg_list: vec![sge] }).expect("posted");
        let wr = SendWr {
            wr_id: 0x50 + q as u64,
            opcode: Some(SendOp::Send),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![a.sge(0, len as u32)],
            ..Default::default()
        };
        a.qps[q].post_send(&wr).unwrap_or_else(|e| panic!("seed {seed:#x}: posted: {e:?}"));
    }
    let frames = run(&w);
    exchange(&w, &core, frames, seed, |_| {});
    let mut got = b.cq.poll(8).expect("the RTL host's completions");
    got.sort_by_key(|c| c.wr_id);
    let mut sent = a.cq.poll(8).expect("the requester's completions");
    sent.sort_by_key(|c| c.wr_id);
    assert_eq!((got.len(), sent.len()), (3, 3), "seed {seed:#x}: {got:?} {sent:?}");
    for (q, &(_, room, _, status, byte_len, req_status)) in cases.iter().enumerate() {
        let c = &got[q];
        assert_eq!((c.wr_id, c.status, c.byte_len), (0x70 + q as u64, status, byte_len), "seed {seed:#x}: {c:?}");
        assert_eq!((sent[q].wr_id, sent[q].status), (0x50 + q as u64, req_status), "seed {seed:#x}: {sent:?}");
        let placed = b.buf.read(0x1000 * (q + 1), room as usize).expect("the core's buffer");
        let want: Vec<u8> = (0..room as usize).map(|i| if i < byte_len as usize { data[i] } else { 0 }).collect();
        assert_eq!(placed, want, "seed {seed:#x}: QP {q}: what was placed before the error, and nothing else");
        core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        let state = b.qps[q].query().expect("QUERY_QP").qp_state;
        assert_eq!(state, QpState::Err as u8, "seed {seed:#x}: QP {q} entered ERR as its NAK left");
    }
    lockstep_clean(&core, &format!("seed {seed:#x}"));
}

/// A SEND whose receive buffer's MR is deregistered between its packets: the next packet finds the WQE's
/// scatter list no longer passes the key checks (the command cleared the core's `WqeCache`, so it fetches and
/// checks the WQE again, as the model checks it for every packet), completes the receive with LocProtErr and
/// the bytes placed so far, and sends a fatal NAK.
fn a_receive_whose_mr_goes_away_mid_message_completes_in_error(width: Width) {
    let seed = seed();
    let (w, a, core, b) = hosts(width, seed, 1, QpCap::default(), ConnectOpts::default());
    let mr = b.pd.reg_mr(b.mr.addr + 0x4000, 0x1000, wire::contract::verbs::access::LOCAL_WRITE).expect("an MR");
    let sge = Sge { addr: b.mr.addr + 0x4000, length: 3000, lkey: mr.lkey };
    b.qps[0].post_recv(&RecvWr { wr_id: 0x77, sg_list: vec![sge] }).expect("posted");
    let data: Vec<u8> = (0..3000u32).map(|i| (i * 29 + 1) as u8).collect();
    a.buf.write(0, &data).expect("the source written");
    let wr = SendWr {
        wr_id: 0x55,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0, 3000)],
        ..Default::default()
    };
    a.qps[0].post_send(&wr).expect("posted");
    let mut frames = run(&w);
    assert_eq!(frames.len(), 3, "seed {seed:#x}: three packets");
    core.receive(frames.remove(0));
    assert!(core.settle(2_000_000), "seed {seed:#x}: the first packet in");
    b.pd.dereg_mr(mr).expect("the MR deregistered");
    exchange(&w, &core, frames, seed, |_| {});
    let got = b.cq.poll(4).expect("the RTL host's completions");
    let st: Vec<_> = got.iter().map(|c| (c.wr_id, c.status, c.byte_len)).collect();
    assert_eq!(st, [(0x77, WcStatus::LocProtErr, 1024)], "seed {seed:#x}");
    let sent = a.cq.poll(4).expect("the requester's completions");
    let st: Vec<_> = sent.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(st, [(0x55, WcStatus::RemInvReqErr)], "seed {seed:#x}");
    let placed = b.buf.read(0x4000, 3000).expect("the core's buffer");
    assert_eq!(placed[..1024], data[..1024], "seed {seed:#x}: the first packet's bytes");
    assert!(placed[1024..].iter().all(|&x| x == 0), "seed {seed:#x}: nothing after the MR went away");
    core.context_agrees(b.qps[0].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    lockstep_clean(&core, &format!("seed {seed:#x}"));
}

/// A QP in ERR completes what it holds with WR_FLUSH_ERR, in the model's order, each with its WQE's
/// `wr_id`: QP 0 (moved to ERR by MODIFY_QP) its send WQEs (a SEND, an RDMA WRITE, never sent: the
/// core has no requester yet), then its receives; QP 1 (moved to ERR with a SEND half received) the receive
/// that SEND was filling, then the next; a receive posted to QP 0 in ERR is flushed too. The armed CQ raises
/// its completion event; the host stalls at random throughout. The flush scan then ends, and a receive
/// posted to QP 0 afterwards starts it again. In lockstep, the contexts the model's after.
fn a_qp_in_err_flushes_its_work_requests_with_wr_flush_err(width: Width) {
    let seed = seed();
    let (w, a, core, b) = hosts(width, seed, 2, QpCap::default(), ConnectOpts::default());
    core.set_bubbles(seed, 0.3);
    let recv = |q: usize, wr_id: u64| {
        let wr = RecvWr { wr_id, sg_list: vec![b.sge(0x1000 * (q as u64 + 1), 3000)] };
        b.qps[q].post_recv(&wr).unwrap_or_else(|e| panic!("seed {seed:#x}: posted: {e:?}"));
    };
    for wr_id in [0x10, 0x11, 0x12] {
        recv(0, wr_id);
    }
    for (wr_id, opcode) in [(0x20, SendOp::Send), (0x21, SendOp::RdmaWrite)] {
        let wr = SendWr {
            wr_id,
            opcode: Some(opcode),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![b.sge(0, 64)],
            remote_addr: 0x1000,
            rkey: 0x1234,
            ..Default::default()
        };
        b.qps[0].post_send(&wr).unwrap_or_else(|e| panic!("seed {seed:#x}: posted: {e:?}"));
    }
    recv(1, 0x30);
    recv(1, 0x31);
    // QP 1: the first of a SEND's three packets in, the rest never.
    a.buf.write(0, &[0x5A; 3000]).expect("the source written");
    let send = SendWr {
        wr_id: 0x55,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0, 3000)],
        ..Default::default()
    };
    a.qps[1].post_send(&send).expect("posted");
    let frames = run(&w);
    assert_eq!(frames.len(), 3, "seed {seed:#x}: three packets");
    core.receive(frames[0].clone());
    assert!(core.settle(2_000_000), "seed {seed:#x}: the first packet in");
    assert_eq!(core.flushes(), 0, "seed {seed:#x}: nothing flushed before a QP is in ERR");

    b.cq.req_notify(false);
    let err = QpAttr { qp_state: Some(QpState::Err), ..Default::default() };
    for q in [1, 0] {
        b.qps[q].modify(&err, attr::STATE).unwrap_or_else(|e| panic!("seed {seed:#x}: QP {q} to ERR: {e:?}"));
    }
    recv(0, 0x13);
    let got = b.cq.wait(8, 10_000_000).expect("the RTL host's completions");
    let per_qp = |q: usize| -> Vec<(u64, WcOpcode)> {
        got.iter().filter(|c| c.qp_num == b.qps[q].qpn).map(|c| (c.wr_id, c.opcode)).collect()
    };
    assert_eq!(got.len(), 8, "seed {seed:#x}: a completion for every WQE held: {got:?}");
    assert!(got.iter().all(|c| c.status == WcStatus::WrFlushErr && c.byte_len == 0), "seed {seed:#x}: {got:?}");
    let recv_op = WcOpcode::Recv;
    assert_eq!(
        per_qp(0),
        [
            (0x20, WcOpcode::Send),
            (0x21, WcOpcode::RdmaWrite),
            (0x10, recv_op),
            (0x11, recv_op),
            (0x12, recv_op),
            (0x13, recv_op)
        ],
        "seed {seed:#x}: QP 0's send WQEs, then its receives, in order"
    );
    assert_eq!(per_qp(1), [(0x30, recv_op), (0x31, recv_op)], "seed {seed:#x}: the receive in progress first");
    assert_eq!(core.flushes(), 8, "seed {seed:#x}: a flush step a WQE");
    assert_eq!(b.ctx.get_cq_event(100_000).expect("the event queue read"), Some(b.cq.cqn), "seed {seed:#x}");
    assert!(b.cq.wait(1, 1_000_000).expect("polled").is_empty(), "seed {seed:#x}: nothing more");
    // The scan has ended (its last pass flushed nothing); a receive posted to QP 0, still in ERR, starts it
    // again, and it ends again once that receive is flushed.
    let scanning = || core.peek("trace_flush_idle") == 0;
    assert!(!scanning(), "seed {seed:#x}: the flush scan ends once a pass flushes nothing");
    recv(0, 0x14);
    let got = b.cq.wait(1, 1_000_000).expect("the RTL host's completions");
    let got: Vec<_> = got.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(got, [(0x14, WcStatus::WrFlushErr)], "seed {seed:#x}: a receive posted in ERR, flushed");
    assert_eq!(core.flushes(), 9, "seed {seed:#x}: one more flush step");
    core.run(10_000);
    assert!(!scanning(), "seed {seed:#x}: the flush scan ends again");
    for q in [0, 1] {
        core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    }
    lockstep_clean(&core, &format!("seed {seed:#x}"));
}

/// Requests in sequence the core's check chain fails, each on a QP of its own: a WRITE whose R_Key names no
/// MR, a WRITE past its MR's end and a READ whose R_Key names no MR (Remote Access), and a SEND with
/// invalidate (Invalid Request: this device has no key a peer may invalidate). The core queues a fatal NAK
/// for each, which completes the requester's work request in error, and the QP enters ERR as the NAK leaves;
/// the receive posted on the SEND's QP is then flushed. In lockstep, the contexts the model's after; and
/// after the QPs' next commands (one back to RESET, one destroyed and its slot taken by a new QP).
fn requests_the_check_chain_fails_are_naked_and_their_qp_enters_err(width: Width) {
    let seed = seed();
    let (w, a, core, mut b) = hosts(width, seed, 4, QpCap::default(), ConnectOpts::default());
    let data: Vec<u8> = (0..300u32).map(|i| (i * 11) as u8).collect();
    a.buf.write(0, &data).expect("the source written");
    b.qps[1].post_recv(&RecvWr { wr_id: 0x71, sg_list: vec![b.sge(0x2000, 1000)] }).expect("posted");
    let wr = |wr_id: u64, opcode: SendOp, remote_addr: u64, rkey: u32, imm_data: u32| SendWr {
        wr_id,
        opcode: Some(opcode),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0x1000 * (wr_id & 0xF), 300)],
        remote_addr,
        rkey,
        imm_data,
        ..Default::default()
    };
    let (base, key) = (b.mr.addr, b.mr.rkey);
    let cases = [
        (wr(0x50, SendOp::RdmaWrite, base, key ^ 0x100, 0), WcStatus::RemAccessErr),
        (wr(0x51, SendOp::SendWithInv, 0, 0, key), WcStatus::RemInvReqErr),
        (wr(0x52, SendOp::RdmaWrite, base + BUF as u64 - 100, key, 0), WcStatus::RemAccessErr),
        (wr(0x53, SendOp::RdmaRead, base, key ^ 0x100, 0), WcStatus::RemAccessErr),
    ];
    for (q, (wr, _)) in cases.iter().enumerate() {
        a.qps[q].post_send(wr).unwrap_or_else(|e| panic!("seed {seed:#x}: posted: {e:?}"));
    }
    let frames = run(&w);
    assert_eq!(frames.len(), 4, "seed {seed:#x}: one request a QP");
    let mut naks = Vec::new();
    exchange(&w, &core, frames, seed, |f| {
        let p = wire::parse(f).unwrap_or_else(|e| panic!("seed {seed:#x}: a frame from the core: {e:?}"));
        naks.push(p.hdr.ext.aeth.expect("a NAK").syndrome);
    });
    naks.sort_unstable();
    let (access, invalid) = (wire::ext::syndrome::NAK_REMOTE_ACCESS, wire::ext::syndrome::NAK_INVALID_REQUEST);
    let mut want = vec![access, access, access, invalid];
    want.sort_unstable();
    assert_eq!(naks, want, "seed {seed:#x}: a fatal NAK for each request");
    let mut sent = a.cq.poll(8).expect("the requester's completions");
    sent.sort_by_key(|c| c.wr_id);
    let st: Vec<_> = sent.iter().map(|c| (c.wr_id, c.status)).collect();
    let want: Vec<_> = cases.iter().map(|(wr, s)| (wr.wr_id, *s)).collect();
    assert_eq!(st, want, "seed {seed:#x}: each request completed with its NAK's status");
    let got = b.cq.wait(1, 1_000_000).expect("the RTL host's completions");
    let st: Vec<_> = got.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(st, [(0x71, WcStatus::WrFlushErr)], "seed {seed:#x}: the receive the SEND did not take, flushed");
    assert!(b.buf.read(0, BUF).expect("the core's buffer").iter().all(|&x| x == 0), "seed {seed:#x}: no byte");
    for q in 0..4 {
        core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        let state = b.qps[q].query().expect("QUERY_QP").qp_state;
        assert_eq!(state, QpState::Err as u8, "seed {seed:#x}: QP {q} entered ERR as its NAK left");
    }
    // The core keeps a NAK's ERR as a mark beside the QP's records, which the QP's next command folds in:
    // QP 0 back to RESET, QP 1 destroyed and its slot taken by a new QP; each as the model has it.
    let reset = QpAttr { qp_state: Some(QpState::Reset), ..Default::default() };
    b.qps[0].modify(&reset, attr::STATE).unwrap_or_else(|e| panic!("seed {seed:#x}: QP 0 to RESET: {e:?}"));
    assert_eq!(b.qps[0].query().expect("QUERY_QP").qp_state, QpState::Reset as u8, "seed {seed:#x}: QP 0 in RESET");
    core.context_agrees(b.qps[0].qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: QP 0 reset: {e}"));
    let gone = b.qps.remove(1);
    let qpn = gone.qpn;
    gone.destroy().unwrap_or_else(|e| panic!("seed {seed:#x}: QP 1 destroyed: {e:?}"));
    let fresh = b.pd.create_qp(&b.cq, &b.cq, QpCap::default(), false).expect("CREATE_QP");
    assert_eq!(fresh.qpn, qpn, "seed {seed:#x}: the new QP takes the freed slot");
    assert_eq!(fresh.query().expect("QUERY_QP").qp_state, QpState::Reset as u8, "seed {seed:#x}: a new QP in RESET");
    core.context_agrees(qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: the new QP: {e}"));
    lockstep_clean(&core, &format!("seed {seed:#x}"));
}

/// SENDs into a QP whose CQ holds two CQEs, none polled: the third SEND's receive CQE overruns the CQ,
/// which raises the CQ error event, and the QP, live when its CQE was refused, enters ERR with its fatal
/// event (the SEND's bytes are placed, its ACK dropped); the receive left is then flushed into the overrun
/// CQ, which refuses it without a second CQ error. In lockstep, the QP's contexts the model's after.
fn a_cq_overrun_raises_its_events_and_takes_the_qp_to_err(width: Width) {
    let seed = seed();
    let w = shared(World::attached(driver::pair::nic_config(), LinkConfig::default(), seed));
    let a = open_host(&w, 0, 1, BUF, QpCap::default(), false).expect("the model host");
    let rtl = RtlBackend::with_lockstep(16, width);
    let core = rtl.handle();
    let b = open_host_on(Box::new(rtl), 1, 1, BUF, QpCap::default(), false).expect("the RTL host");
    let small = b.ctx.create_cq(2).expect("a CQ of two");
    let qp = b.pd.create_qp(&small, &small, QpCap::default(), false).expect("a QP on it");
    let opts = ConnectOpts { path_mtu: 3, timeout: 20, ..ConnectOpts::default() };
    a.qps[0].connect(PSN_A, &Endpoint { qpn: qp.qpn, psn: 0x100, gid: b.gid, mac: b.mac }, &opts).expect("up");
    qp.connect(0x100, &a.endpoint(0, PSN_A), &opts).expect("up");
    for i in 0..4u64 {
        qp.post_recv(&RecvWr { wr_id: 0x90 + i, sg_list: vec![b.sge(0x1000 * (i + 1), 200)] }).expect("posted");
    }
    let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
    a.buf.write(0, &data).expect("the source written");
    for i in 0..3u64 {
        let wr = SendWr {
            wr_id: 0x50 + i,
            opcode: Some(SendOp::Send),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![a.sge(100 * i, 100)],
            ..Default::default()
        };
        a.qps[0].post_send(&wr).unwrap_or_else(|e| panic!("seed {seed:#x}: posted: {e:?}"));
    }
    let frames = run(&w);
    assert_eq!(frames.len(), 3, "seed {seed:#x}: three SENDs");
    exchange(&w, &core, frames, seed, |_| {});
    let events: Vec<_> =
        std::iter::from_fn(|| b.ctx.get_async_event(1_000_000).expect("the event queue read")).collect();
    assert_eq!(
        events,
        [AsyncEvent::CqError { cqn: small.cqn }, AsyncEvent::QpFatal { qpn: qp.qpn }],
        "seed {seed:#x}: the CQ's error, then the QP's fatal event"
    );
    let got = small.poll(8).expect("the small CQ");
    let st: Vec<_> = got.iter().map(|c| (c.wr_id, c.status, c.byte_len)).collect();
    assert_eq!(st, [(0x90, WcStatus::Success, 100), (0x91, WcStatus::Success, 100)], "seed {seed:#x}");
    for i in 0..3 {
        let placed = b.buf.read(0x1000 * (i + 1), 100).expect("the core's buffer");
        assert_eq!(placed, data[100 * i..100 * (i + 1)], "seed {seed:#x}: SEND {i}'s bytes");
    }
    assert_eq!(qp.query().expect("QUERY_QP").qp_state, QpState::Err as u8, "seed {seed:#x}: the QP in ERR");
    assert_eq!(core.flushes(), 1, "seed {seed:#x}: the receive left flushed (its CQE refused)");
    let sent = a.cq.poll(8).expect("the requester's completions");
    let st: Vec<_> = sent.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(st, [(0x50, WcStatus::Success), (0x51, WcStatus::Success)], "seed {seed:#x}: the third unACKed");
    core.context_agrees(qp.qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    lockstep_clean(&core, &format!("seed {seed:#x}"));
}

/// Scenarios the random soak runs (`FERRITE_SOAK_SCENARIOS` for more).
const SOAK_SCENARIOS: u64 = 12;

/// A random soak of the responder: each scenario (from the seed and its number) connects 1 to 4 QPs of a
/// 16-QP core (a 1,024-QP one for odd seeds) at a random PMTU, and in rounds posts WRITEs, WRITEs with
/// immediate, SENDs, SENDs with immediate and READs of 0 to 6,000 bytes (receives of one to three SGEs posted
/// for those that need one) and FETCH_ADDs and CMP_SWAPs (the compare value matching half the time), with
/// faults drawn at random: a WRITE, READ or atomic whose R_Key names no MR (a fatal NAK), a receive too short for its SEND (LocLenErr, a fatal NAK), a
/// QP pair moved to ERR between rounds (flushed), receives posted to a QP in ERR (flushed), host stalls, READ
/// responses lost on the way (a FIRST or MIDDLE one in three, each once at most: the requester asks again
/// from it when the next response shows the gap, a duplicate READ the core answers from its resources). At
/// the end every QP of the core is moved to ERR. Every work request posted on either side completes, each
/// message completed with success landed whole, and the model follows the core throughout: 0 mismatches, the
/// contexts the model's, nothing the core does not build. Replay a scenario with `FERRITE_SEED=<seed>`.
#[test]
fn a_random_soak_of_requests_stays_in_lockstep() {
    let n: u64 = std::env::var("FERRITE_SOAK_SCENARIOS").ok().and_then(|s| s.parse().ok()).unwrap_or(SOAK_SCENARIOS);
    let mut seen = [0usize; 6];
    for k in 0..n {
        let s = soak_one(seed().wrapping_add(k));
        for (t, x) in seen.iter_mut().zip(s) {
            *t += x;
        }
    }
    eprintln!(
        "RTL soak: {n} scenarios; completions with a NAK's status {}, LocLenErr {}, WR_FLUSH_ERR {}; READs {}, \
         READ responses lost {}; atomics {}",
        seen[0], seen[1], seen[2], seen[3], seen[4], seen[5]
    );
    assert!(seen.iter().all(|&x| x > 0), "every fault showed, READs completed, responses were lost: {seen:?}");
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum SoakOp {
    Write,
    WriteImm,
    Send,
    SendImm,
    Read,
    Atomic,
}

/// One message of a soak round: its requester WR and its region in both buffers.
struct Posted {
    wr_id: u64,
    op: SoakOp,
    off: usize,
    len: usize,
}

/// Runs the scenario of `seed`; the completions it saw with a NAK's status (requester), LocLenErr and
/// WR_FLUSH_ERR (core), and the READs that completed with success.
fn soak_one(seed: u64) -> [usize; 6] {
    let mut rng = Rng::new(seed);
    let (width, core_qps) = [(Width::W8, 16), (Width::W8, 1024), (Width::W64, 16)][(seed % 3) as usize];
    let nqps = 1 + rng.below(4) as usize;
    let path_mtu = 1 + rng.below(5) as u8;
    let opts = ConnectOpts { path_mtu, ..ConnectOpts::default() };
    let (w, a, core, b) = hosts_on(width, core_qps, seed, nqps, QpCap::default(), opts);
    let ctx = format!(
        "seed {seed:#x} (FERRITE_SEED={seed}), {core_qps}-QP core of {} bytes, {nqps} QPs, path_mtu {path_mtu}",
        width.bytes()
    );
    let (mut sends, mut recvs, mut got_a, mut got_b) = (0usize, 0usize, 0usize, 0usize);
    let mut in_err = vec![false; nqps];
    // Losses drawn apart, so a scenario's requests are the same with them or without.
    let mut loss = Rng::new(seed ^ 0x1055);
    let mut lost = 0usize;
    let mut gone = std::collections::HashSet::new();
    let (mut wr_id, mut reads, mut atomics) = (0u64, 0usize, 0usize);
    let mut seen = [0usize; 3];
    let mut count = |a: &[Wc], b: &[Wc]| {
        seen[0] += a.iter().filter(|c| matches!(c.status, WcStatus::RemAccessErr | WcStatus::RemInvReqErr)).count();
        seen[1] += b.iter().filter(|c| c.status == WcStatus::LocLenErr).count();
        seen[2] += b.iter().filter(|c| c.status == WcStatus::WrFlushErr).count();
    };
    for round in 0..1 + rng.below(4) {
        core.set_bubbles(seed ^ round, if rng.chance(0.5) { 0.3 } else { 0.0 });
        let mut posted = Vec::new();
        let mut off = 0usize;
        for _ in 0..rng.below(9) {
            let live: Vec<usize> = (0..nqps).filter(|&q| !in_err[q]).collect();
            if live.is_empty() {
                break;
            }
            let qp = live[rng.below(live.len() as u64) as usize];
            let ops = [SoakOp::Write, SoakOp::WriteImm, SoakOp::Send, SoakOp::SendImm, SoakOp::Read, SoakOp::Atomic];
            let op = ops[rng.below(6) as usize];
            let len = match rng.below(4) {
                _ if op == SoakOp::Atomic => 8,
                0 => 0,
                1 => 1 + rng.below(64) as usize,
                _ => 1 + rng.below(6000) as usize,
            };
            wr_id += 1;
            let data: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            // A READ's source is the core's memory, and an atomic's target.
            let src = if matches!(op, SoakOp::Read | SoakOp::Atomic) { &b } else { &a };
            src.buf.write(off, &data).expect("the source written");
            if matches!(op, SoakOp::Send | SoakOp::SendImm | SoakOp::WriteImm) {
                // The receive: its room over one to three SGEs laid end to end, now and then too short.
                let room = if op != SoakOp::WriteImm && len > 0 && rng.chance(0.06) { len - 1 } else { len };
                let pieces = 1 + rng.below(3) as usize;
                let mut sg_list = Vec::new();
                let mut at = 0;
                for i in 0..pieces {
                    let n = if i + 1 == pieces { room - at } else { rng.below((room - at) as u64 + 1) as usize };
                    if n > 0 {
                        sg_list.push(b.sge((off + at) as u64, n as u32));
                    }
                    at += n;
                }
                let r = RecvWr { wr_id: 0x1_0000 + wr_id, sg_list };
                b.qps[qp].post_recv(&r).unwrap_or_else(|e| panic!("{ctx}: receive posted: {e:?}"));
                recvs += 1;
            }
            let bad_key = matches!(op, SoakOp::Write | SoakOp::WriteImm | SoakOp::Read | SoakOp::Atomic)
                && len > 0
                && rng.chance(0.06);
            let wr = SendWr {
                wr_id,
                opcode: Some(match op {
                    SoakOp::Write => SendOp::RdmaWrite,
                    SoakOp::WriteImm => SendOp::RdmaWriteWithImm,
                    SoakOp::Send => SendOp::Send,
                    SoakOp::SendImm => SendOp::SendWithImm,
                    SoakOp::Read => SendOp::RdmaRead,
                    SoakOp::Atomic if rng.chance(0.5) => SendOp::AtomicFetchAdd,
                    SoakOp::Atomic => SendOp::AtomicCmpSwp,
                }),
                send_flags: send_flags::SIGNALED,
                sg_list: if len == 0 { Vec::new() } else { vec![a.sge(off as u64, len as u32)] },
                remote_addr: b.mr.addr + off as u64,
                rkey: if bad_key { b.mr.rkey ^ 0x100 } else { b.mr.rkey },
                imm_data: wr_id as u32,
                // A compare-and-swap's compare value matches now and then (the target is the bytes just
                // written: `data`).
                compare_add: match data.get(..8) {
                    Some(w) if rng.chance(0.5) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
                    _ => rng.next_u64(),
                },
                swap: rng.next_u64(),
            };
            a.qps[qp].post_send(&wr).unwrap_or_else(|e| panic!("{ctx}: posted: {e:?}"));
            sends += 1;
            posted.push(Posted { wr_id, op, off, len });
            off += len.next_multiple_of(64);
        }
        let frames = run(&w);
        // A FIRST or MIDDLE response lost: the READ's next response, in the same pass, shows the gap. Each
        // response is lost once at most (the requester asks again for a gap once, then waits for its timer).
        exchange_keeping(&w, &core, frames, seed, |f| {
            let bth = wire::parse(f).expect("a frame from the core").hdr.bth;
            let gap = matches!(bth.opcode, Opcode::RDMA_READ_RESPONSE_FIRST | Opcode::RDMA_READ_RESPONSE_MIDDLE);
            let lose = gap && loss.chance(0.3) && gone.insert((bth.dest_qp, bth.psn.value()));
            lost += usize::from(lose);
            !lose
        });
        if lost > 0 {
            // A READ asked again whose QP a later request's fatal NAK took to ERR (the core drops the re-request)
            // waits for the requester's ACK timer (2^20 ticks, 4.3 s): time runs on until no timer is left.
            loop {
                let frames = run_external(&w, 5_000_000_000_000);
                if frames.is_empty() {
                    break;
                }
                exchange(&w, &core, frames, seed, |_| {});
            }
        }
        // What completed with success landed whole.
        let done_a = a.cq.poll(4096).expect("the requester's completions");
        let done_b = b.cq.poll(4096).expect("the core's completions");
        got_a += done_a.len();
        got_b += done_b.len();
        count(&done_a, &done_b);
        for p in &posted {
            let ok_a = done_a.iter().any(|c| c.wr_id == p.wr_id && c.status == WcStatus::Success);
            let ok_b = done_b.iter().any(|c| c.wr_id == 0x1_0000 + p.wr_id && c.status == WcStatus::Success);
            let landed = if matches!(p.op, SoakOp::Write | SoakOp::Read) { ok_a } else { ok_b };
            reads += usize::from(p.op == SoakOp::Read && ok_a);
            atomics += usize::from(p.op == SoakOp::Atomic && ok_a);
            // An atomic's bytes are the model's to check (lockstep): the two buffers differ by design.
            if landed && p.len > 0 && p.op != SoakOp::Atomic {
                // The same bytes at the message's place in both buffers (a READ's came from the core's).
                let here = a.buf.read(p.off, p.len).expect("the requester's buffer");
                let there = b.buf.read(p.off, p.len).expect("the core's buffer");
                assert!(here == there, "{ctx}: round {round}: {:?} {} of {} B landed whole", p.op, p.wr_id, p.len);
            }
            if ok_b {
                let c = done_b.iter().find(|c| c.wr_id == 0x1_0000 + p.wr_id).expect("found");
                let want = if p.op == SoakOp::WriteImm { WcOpcode::RecvRdmaWithImm } else { WcOpcode::Recv };
                assert_eq!((c.opcode, c.byte_len as usize), (want, p.len), "{ctx}: round {round}: {c:?}");
            }
        }
        // A QP pair moved to ERR now and then; receives posted to QPs in ERR.
        for (q, err_now) in in_err.iter_mut().enumerate() {
            if !*err_now && rng.chance(0.08) {
                let err = QpAttr { qp_state: Some(QpState::Err), ..Default::default() };
                b.qps[q].modify(&err, attr::STATE).unwrap_or_else(|e| panic!("{ctx}: to ERR: {e:?}"));
                a.qps[q].modify(&err, attr::STATE).unwrap_or_else(|e| panic!("{ctx}: to ERR: {e:?}"));
            }
            *err_now = b.qps[q].query().expect("QUERY_QP").qp_state == QpState::Err as u8;
            if *err_now && rng.chance(0.3) {
                b.qps[q].post_recv(&RecvWr { wr_id: 0xE_0000 + q as u64, sg_list: vec![b.sge(0, 8)] }).expect("posted");
                recvs += 1;
            }
        }
    }
    // The end: every QP of the core to ERR, so each receive left completes.
    let err = QpAttr { qp_state: Some(QpState::Err), ..Default::default() };
    for (q, _) in in_err.iter().enumerate().filter(|(_, e)| !**e) {
        b.qps[q].modify(&err, attr::STATE).unwrap_or_else(|e| panic!("{ctx}: to ERR: {e:?}"));
    }
    let last_b = b.cq.wait(recvs - got_b, 50_000_000).expect("the core's completions");
    exchange(&w, &core, Vec::new(), seed, |_| {});
    let last_a = a.cq.poll(4096).expect("the requester's completions");
    count(&last_a, &last_b);
    (got_a, got_b) = (got_a + last_a.len(), got_b + last_b.len());
    assert_eq!((got_a, got_b), (sends, recvs), "{ctx}: every work request completed, on both sides");
    for q in 0..nqps {
        core.context_agrees(b.qps[q].qpn).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    }
    let events = lockstep_clean(&core, &ctx);
    eprintln!(
        "{ctx}: {sends} sends ({reads} READs done, {lost} responses lost, {atomics} atomics done), {recvs} \
         receives, {events} decisions in lockstep"
    );
    [seen[0], seen[1], seen[2], reads, lost, atomics]
}

at_both_widths!(
    writes_from_a_model_requester_land_in_the_rtl_core,
    reads_from_a_model_requester_are_answered_by_the_rtl_core,
    duplicate_reads_are_answered_again_from_the_kept_resources,
    atomics_from_a_model_requester_are_executed_by_the_rtl_core,
    a_send_that_finds_no_receive_wqe_is_rnr_naked_by_the_rtl_core,
    sends_from_a_model_requester_land_in_receive_wqes_on_the_rtl_core,
    sends_the_receive_wqe_cannot_take_complete_it_in_error_with_a_fatal_nak,
    a_receive_whose_mr_goes_away_mid_message_completes_in_error,
    a_qp_in_err_flushes_its_work_requests_with_wr_flush_err,
    requests_the_check_chain_fails_are_naked_and_their_qp_enters_err,
    a_cq_overrun_raises_its_events_and_takes_the_qp_to_err,
);
