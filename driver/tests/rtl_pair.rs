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

use driver::pair::{connect, open_host_on, rtl_link, Host};
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
