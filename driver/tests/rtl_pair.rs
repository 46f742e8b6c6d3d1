//! Two RTL NICs: two Verilated cores, each with its host and its model follower, joined by a link that
//! carries every frame one sends to the other (the cores run side by side, the frames handed over every 64
//! cycles). Each sends SENDs and WRITEs (one to many packets, signaled
//! or not, across a PSN wrap) to the other at once: the payloads land, the receives complete with their
//! data, the ACKs complete the senders' WQEs in order, and each core's model follows it with no mismatch and
//! the same contexts; and each READs from the other and runs atomics on its words: the READ responses land
//! over the READs' scatter lists, the atomics' original values come back and the words change once. Frames a
//! core's receive buffer has no room for are dropped, as a NIC without flow control drops them; the other
//! side's sequence NAKs bring them again (go-back-N), and a lost last packet its ACK timer, in lockstep
//! too. At both widths: two 8-byte cores, two 64-byte cores.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-driver --test rtl_pair`.

use driver::pair::{connect, open_host_on, raw_frame, rtl_link, send_wr, Host};
use driver::rtl::{RtlBackend, RtlHandle};
use driver::*;
use hdl::Width;
use model::rng::Rng;
use wire::contract::regs::Counter;

const BUF: usize = 1 << 18;
/// Each host's buffer: the peer's WRITEs land below `RECV`, its SENDs from `RECV` (4 KiB a receive), the
/// host's own sources (which the peer's READs read too) are from `SRC` to `READS`, what its own READs and
/// atomics bring back lands from `READS` on, and the words the peer's atomics change are at `WORDS`.
const RECV: usize = 0x10000;
const SRC: usize = 0x18000;
const READS: usize = 0x20000;
const WORDS: usize = 0x3F000;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0025)
}

/// The ACK timeout the pair's QPs connect with: 4.096 us x 2^6, 256 ticks, short enough to wait out at the
/// end (a lost last packet).
const TIMEOUT: u8 = 6;

/// An RTL host (a 16-QP core of width `w` in lockstep) as host `i` of the pair, with `nqps` QPs.
fn rtl_host(i: usize, nqps: usize, w: Width) -> (RtlHandle, Host) {
    let rtl = RtlBackend::with_lockstep(16, w);
    let core = rtl.handle();
    let cap = QpCap { max_send_wr: 32, max_recv_wr: 32, ..QpCap::default() };
    let h = open_host_on(Box::new(rtl), i, nqps, BUF, cap, false).expect("an RTL host");
    (core, h)
}

#[test]
fn two_rtl_nics_send_and_write_to_each_other() {
    two_rtl_nics(Width::W8);
}

#[test]
fn two_64_byte_rtl_nics_send_and_write_to_each_other() {
    two_rtl_nics(Width::W64);
}

fn two_rtl_nics(w: Width) {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let ctx = format!("seed {seed:#x}, width {}", w.bytes());
    let (ca, a) = rtl_host(0, 3, w);
    let (cb, b) = rtl_host(1, 3, w);
    // An ACK timeout and as much again, in cycles (1,024 ns a tick).
    let wait = 2 * (4 << TIMEOUT) * 1024 / u64::from(hdl::core::info(16, w).ns_per_cycle);
    ca.set_bubbles(seed, 0.2);
    cb.set_bubbles(seed ^ 1, 0.2);
    for q in 0..3 {
        let opts = ConnectOpts { timeout: TIMEOUT, ..ConnectOpts::default() };
        connect(&a, q, 0xFF_FFF0, &b, q, 0x10, &opts).expect("connected");
    }
    let hosts = [&a, &b];
    let mut want: [Vec<u8>; 2] = [vec![0u8; SRC], vec![0u8; SRC]];
    let mut signaled: [Vec<(u64, WcOpcode, u32)>; 2] = [Vec::new(), Vec::new()];
    let mut received = [0u32; 2];
    let srcs: Vec<Vec<u8>> = (0..2).map(|_| (0..READS - SRC).map(|_| rng.below(256) as u8).collect()).collect();
    let words: Vec<Vec<u8>> = (0..2).map(|_| (0..64).map(|_| rng.below(256) as u8).collect()).collect();
    let mut want_reads: [Vec<u8>; 2] = [vec![0u8; WORDS - READS], vec![0u8; WORDS - READS]];
    let mut want_words = words.clone();
    for (s, host) in hosts.iter().enumerate() {
        host.buf.write(SRC, &srcs[s]).expect("the sources");
        host.buf.write(WORDS, &words[s]).expect("the atomics' words");
    }
    for (s, host) in hosts.iter().enumerate() {
        let peer = hosts[1 - s];
        let src = &srcs[s];
        // The peer's receives.
        for r in 0..8u64 {
            let sge = peer.sge((RECV + 0x1000 * r as usize) as u64, 0x1000);
            peer.qps[0].post_recv(&RecvWr { wr_id: 0x80 + r, sg_list: vec![sge] }).expect("a receive");
        }
        // QP 0: SENDs and WRITEs; QP 1: long WRITEs.
        for q in 0..2 {
            let mut wrs = Vec::new();
            let mut to = 0x8000 * q;
            for i in 0..10u64 {
                let send = q == 0 && i % 3 == 1 && received[1 - s] < 8;
                let len = if q == 1 { 1 + rng.below(9000) as u32 } else { 1 + rng.below(4000) as u32 };
                let from = rng.below((READS - SRC) as u64 - u64::from(len));
                let flags = if i % 4 == 3 { 0 } else { send_flags::SIGNALED };
                let mut wr = SendWr {
                    wr_id: (s as u64) << 12 | (q as u64) << 8 | i,
                    opcode: Some(if send { SendOp::Send } else { SendOp::RdmaWrite }),
                    send_flags: flags,
                    sg_list: vec![host.sge(SRC as u64 + from, len)],
                    rkey: peer.mr.rkey,
                    ..Default::default()
                };
                let data = &src[from as usize..][..len as usize];
                if send {
                    let len = len.min(0x1000);
                    wr.sg_list = vec![host.sge(SRC as u64 + from, len)];
                    let at = RECV + 0x1000 * received[1 - s] as usize;
                    want[1 - s][at..at + len as usize].copy_from_slice(&data[..len as usize]);
                    received[1 - s] += 1;
                } else {
                    if to + len as usize > 0x8000 * (q + 1) {
                        to = 0x8000 * q;
                    }
                    wr.remote_addr = peer.mr.addr + to as u64;
                    want[1 - s][to..to + len as usize].copy_from_slice(data);
                    to += len as usize;
                }
                if flags != 0 {
                    let op = if send { WcOpcode::Send } else { WcOpcode::RdmaWrite };
                    signaled[s].push((wr.wr_id, op, wr.sg_list[0].length));
                }
                wrs.push(wr);
            }
            host.qps[q].post_send_list(&wrs).unwrap_or_else(|e| panic!("{ctx}: host {s} QP {q}: {e:?}"));
        }
        // QP 2: READs of the peer's sources (one of 9 KiB and more, some over two SGEs) and atomics on its
        // words, each into a place of its own from `READS`.
        let mut wrs = Vec::new();
        for (i, &k) in b"RfcRLfRc".iter().enumerate() {
            let at = 0x2000 * i;
            let flags = if i % 4 == 3 { 0 } else { send_flags::SIGNALED };
            let mut wr = SendWr {
                wr_id: (s as u64) << 12 | 2 << 8 | i as u64,
                send_flags: flags,
                rkey: peer.mr.rkey,
                ..Default::default()
            };
            let (op, wc, len) = if k == b'R' || k == b'L' {
                let len = if k == b'L' { 9000 + rng.below(1000) as u32 } else { rng.below(3000) as u32 };
                let from = rng.below((READS - SRC) as u64 - u64::from(len));
                wr.remote_addr = peer.mr.addr + (SRC as u64 + from);
                let cut = rng.below(u64::from(len) + 1) as u32;
                wr.sg_list =
                    vec![host.sge((READS + at) as u64, cut), host.sge((READS + at) as u64 + 0x1000, len - cut)];
                let data = &srcs[1 - s][from as usize..][..len as usize];
                want_reads[s][at..at + cut as usize].copy_from_slice(&data[..cut as usize]);
                want_reads[s][at + 0x1000..at + 0x1000 + (len - cut) as usize].copy_from_slice(&data[cut as usize..]);
                (SendOp::RdmaRead, WcOpcode::RdmaRead, len)
            } else {
                let w = 8 * i;
                let old = u64::from_le_bytes(want_words[1 - s][w..w + 8].try_into().expect("a word"));
                want_reads[s][at..at + 8].copy_from_slice(&old.to_le_bytes());
                wr.remote_addr = peer.mr.addr + (WORDS + w) as u64;
                wr.sg_list = vec![host.sge((READS + at) as u64, 8)];
                let (op, wc, new) = if k == b'f' {
                    wr.compare_add = rng.below(1 << 50);
                    (SendOp::AtomicFetchAdd, WcOpcode::FetchAdd, old.wrapping_add(wr.compare_add))
                } else {
                    wr.compare_add = if i % 2 == 0 { old } else { !old };
                    wr.swap = rng.below(1 << 50);
                    let new = if wr.compare_add == old { wr.swap } else { old };
                    (SendOp::AtomicCmpSwp, WcOpcode::CompSwap, new)
                };
                want_words[1 - s][w..w + 8].copy_from_slice(&new.to_le_bytes());
                (op, wc, 8)
            };
            wr.opcode = Some(op);
            if flags != 0 {
                signaled[s].push((wr.wr_id, wc, len));
            }
            wrs.push(wr);
        }
        host.qps[2].post_send_list(&wrs).unwrap_or_else(|e| panic!("{ctx}: host {s} QP 2: {e:?}"));
    }
    let cycles = rtl_link([&ca, &cb], wait, 50_000_000).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    for (s, host) in hosts.iter().enumerate() {
        let got = host.cq.poll(64).expect("completions");
        let sent: Vec<(u64, WcOpcode, u32)> = got
            .iter()
            .filter(|c| c.opcode != WcOpcode::Recv)
            .map(|c| {
                assert_eq!(c.status, WcStatus::Success, "{ctx}: host {s}: {c:?}");
                (c.wr_id, c.opcode, c.byte_len)
            })
            .collect();
        let per_qp =
            |v: &[(u64, WcOpcode, u32)], q: u64| v.iter().filter(|c| c.0 >> 8 & 0xF == q).copied().collect::<Vec<_>>();
        for q in 0..3 {
            assert_eq!(
                per_qp(&sent, q),
                per_qp(&signaled[s], q),
                "{ctx}: host {s} QP {q}: its WQEs completed in order"
            );
        }
        let recvs = got.iter().filter(|c| c.opcode == WcOpcode::Recv).count();
        assert_eq!(recvs as u32, received[s], "{ctx}: host {s}: a receive for every SEND");
        let got = host.buf.read(0, SRC).expect("the buffer");
        assert_eq!(got[..RECV], want[s][..RECV], "{ctx}: host {s}: the WRITEs");
        assert_eq!(got[RECV..], want[s][RECV..], "{ctx}: host {s}: the SENDs");
        let got = host.buf.read(READS, WORDS - READS).expect("the buffer");
        assert!(got == want_reads[s], "{ctx}: host {s}: what its READs and atomics brought back");
        let got = host.buf.read(WORDS, 64).expect("the words");
        assert_eq!(got, want_words[s], "{ctx}: host {s}: its words after the peer's atomics");
    }
    for (core, host) in [(&ca, &a), (&cb, &b)] {
        for q in 0..3 {
            core.context_agrees(host.qps[q].qpn).unwrap_or_else(|e| panic!("{ctx}: QP {q}: {e}"));
        }
        assert_eq!(core.peek("rx_unhandled"), 0, "{ctx}: every frame handled");
        let c = core.read_counters();
        let sent = core.requests().0 + core.responses();
        assert_eq!(c[Counter::rx_frames as usize], core.frames(), "{ctx}: rx_frames is the frames decided");
        assert_eq!(c[Counter::tx_frames as usize], sent, "{ctx}: tx_frames is the frames sent");
        let r = core.lockstep_report().expect("lockstep is on");
        assert_eq!((r.mismatches, &r.first), (0, &None), "{ctx}: the model following {} decisions", r.events);
        assert!(r.events as u64 >= sent + core.frames(), "{ctx}: every packet sent and received followed");
    }
    eprintln!(
        "two RTL NICs: {} + {} packets sent, {} cycles linked, {} + {} cycles in all",
        ca.requests().0 + ca.responses(),
        cb.requests().0 + cb.responses(),
        cycles,
        ca.cycles(),
        cb.cycles()
    );
}

#[test]
fn two_rtl_nics_carry_raw_ethernet_beside_roce() {
    raw_ethernet_beside_roce(Width::W8);
}

#[test]
fn two_64_byte_rtl_nics_carry_raw_ethernet_beside_roce() {
    raw_ethernet_beside_roce(Width::W64);
}

/// Two RTL NICs, each with a raw packet QP beside an RC QP, the model's `raw_ethernet` test on the RTL: each
/// raw QP sends whole frames to the other NIC's MAC (14 to `wire::MAX_FRAME_LEN` bytes; the short ones padded
/// to 60 on the way) and they land whole in the other's raw QP, one a receive WQE; A's raw QP asks for B's
/// MAC by ARP, B's NIC answers itself, and the reply, which is no request, lands in A's raw QP; an RC WRITE
/// goes beside them untouched. Both cores in lockstep with their models.
fn raw_ethernet_beside_roce(w: Width) {
    let seed = seed();
    let ctx = format!("seed {seed:#x}, width {}", w.bytes());
    let (ca, a) = rtl_host(0, 1, w);
    let (cb, b) = rtl_host(1, 1, w);
    ca.set_bubbles(seed, 0.2);
    cb.set_bubbles(seed ^ 1, 0.2);
    connect(&a, 0, 0x100, &b, 0, 0x200, &ConnectOpts::default()).expect("connected");
    let raw = |h: &Host| {
        let cq = h.ctx.create_cq(64).expect("a CQ");
        let cap = QpCap { max_send_wr: 16, max_recv_wr: 16, ..QpCap::default() };
        let qp = h.pd.create_raw_qp(&cq, &cq, cap).expect("a raw QP");
        qp.activate_raw().expect("RTS");
        for i in 0..8u64 {
            qp.post_recv(&RecvWr { wr_id: 0x40 + i, sg_list: vec![h.sge(RECV as u64 + 0x2000 * i, 0x2000)] })
                .expect("a receive");
        }
        (qp, cq)
    };
    let (qa, cqa) = raw(&a);
    let (qb, cqb) = raw(&b);
    let ip = |h: &Host| wire::ipv6::gid_to_ipv4(&h.gid).expect("an IPv4 GID");
    let arp_req = wire::arp::request_frame(a.mac, ip(&a), ip(&b));
    let to_b: Vec<Vec<u8>> = [14, 100, 1500, wire::MAX_FRAME_LEN]
        .iter()
        .enumerate()
        .map(|(i, &l)| raw_frame(b.mac, a.mac, l, i as u8))
        .collect();
    let to_a: Vec<Vec<u8>> =
        [59, 61, 3000].iter().enumerate().map(|(i, &l)| raw_frame(a.mac, b.mac, l, 9 + i as u8)).collect();
    let post = |h: &Host, qp: &Qp, frames: &[Vec<u8>]| {
        let mut wrs = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            let at = SRC + 0x1400 * i;
            h.buf.write(at, f).expect("the frame");
            let sg_list = vec![h.sge(at as u64, f.len() as u32)];
            wrs.push(SendWr {
                wr_id: i as u64,
                opcode: Some(SendOp::Send),
                send_flags: send_flags::SIGNALED,
                sg_list,
                ..Default::default()
            });
        }
        qp.post_send_list(&wrs).expect("posted");
    };
    let mut from_a = to_b.clone();
    from_a.insert(2, arp_req.clone());
    post(&a, &qa, &from_a);
    post(&b, &qb, &to_a);
    let data: Vec<u8> = (0..3000).map(|i| (i * 13) as u8).collect();
    a.buf.write(0, &data).expect("the WRITE's data");
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, 3000, 0x77)).expect("a WRITE");
    rtl_link([&ca, &cb], 20_000, 50_000_000).unwrap_or_else(|e| panic!("{ctx}: {e}"));

    // What each raw QP received: the other's frames as they left it (padded to 60), in order; A also B's
    // ARP reply, among them.
    let padded = |f: &Vec<u8>| {
        let mut p = f.clone();
        p.resize(f.len().max(wire::eth::MIN_FRAME_LEN), 0);
        p
    };
    // Each raw QP's CQ: its sends completed in order, and a receive a frame, whole.
    let landed = |h: &Host, cq: &Cq, sends: usize, n: usize| -> Vec<Vec<u8>> {
        let c = cq.poll(32).expect("polled");
        let (recvs, done): (Vec<&Wc>, Vec<&Wc>) = c.iter().partition(|c| c.opcode == WcOpcode::Recv);
        let done: Vec<(u64, WcStatus, WcOpcode)> = done.iter().map(|c| (c.wr_id, c.status, c.opcode)).collect();
        let want: Vec<_> = (0..sends as u64).map(|i| (i, WcStatus::Success, WcOpcode::Send)).collect();
        assert_eq!(done, want, "{ctx}: the raw sends completed");
        assert_eq!(recvs.len(), n, "{ctx}: a receive a frame");
        recvs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                assert_eq!((c.wr_id, c.status), (0x40 + i as u64, WcStatus::Success), "{ctx}: receive {i}");
                h.buf.read(RECV + 0x2000 * i, c.byte_len as usize).expect("the frame")
            })
            .collect()
    };
    let at_b = landed(&b, &cqb, to_a.len(), to_b.len());
    assert_eq!(at_b, to_b.iter().map(padded).collect::<Vec<_>>(), "{ctx}: A's frames at B");
    let at_a = landed(&a, &cqa, from_a.len(), to_a.len() + 1);
    let (arp, frames): (Vec<Vec<u8>>, Vec<Vec<u8>>) =
        at_a.into_iter().partition(|f| f[12..14] == wire::eth::ethertype::ARP.to_be_bytes());
    assert_eq!(frames, to_a.iter().map(padded).collect::<Vec<_>>(), "{ctx}: B's frames at A");
    let (eth, req) = wire::arp::parse_frame(&arp_req).expect("an ARP request");
    assert_eq!(arp, vec![wire::arp::reply_frame(&eth, &req, b.mac)], "{ctx}: B's NIC answered A's ARP");

    // The WRITE landed beside them.
    let w = a.cq.poll(4).expect("polled");
    assert_eq!(w.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(), vec![(0x77, WcStatus::Success)], "{ctx}");
    assert_eq!(b.buf.read(0, 3000).expect("the buffer"), data, "{ctx}: the WRITE");
    for (core, h, tx, rx) in [(&ca, &a, from_a.len(), to_a.len() + 1), (&cb, &b, to_a.len(), to_b.len())] {
        let c = core.read_counters();
        assert_eq!(
            (c[Counter::raw_tx_frames as usize], c[Counter::raw_rx_frames as usize]),
            (tx as u64, rx as u64),
            "{ctx}: raw frames sent and received"
        );
        core.context_agrees(h.qps[0].qpn).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let r = core.lockstep_report().expect("lockstep is on");
        assert_eq!((r.mismatches, &r.first), (0, &None), "{ctx}: the model following {} decisions", r.events);
    }
    assert_eq!(cb.read_counters()[Counter::arp_replies as usize], 1, "{ctx}: B's NIC answered");
}
