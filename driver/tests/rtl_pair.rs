//! Two RTL NICs: two Verilated cores, each with its host and its model follower, joined by a link that
//! carries every frame one sends to the other. Each sends SENDs and WRITEs (one to many packets, signaled
//! or not, across a PSN wrap) to the other at once: the payloads land, the receives complete with their
//! data, the ACKs complete the senders' WQEs in order, and each core's model follows it with no mismatch and
//! the same contexts. READs and atomics wait for the completer's READ responses and atomic ACKs.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-driver --test rtl_pair`.

use driver::pair::{connect, open_host_on, Host};
use driver::rtl::{RtlBackend, RtlHandle};
use driver::*;
use model::rng::Rng;

const BUF: usize = 1 << 17;
/// Each host's buffer: the peer's WRITEs land below `RECV`, its SENDs from `RECV` (4 KiB a receive), and the
/// host's own sources are from `SRC` on.
const RECV: usize = 0x10000;
const SRC: usize = 0x18000;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0025)
}

/// An RTL host (a 16-QP core in lockstep) as host `i` of the pair, with `nqps` QPs.
fn rtl_host(i: usize, nqps: usize) -> (RtlHandle, Host) {
    let rtl = RtlBackend::with_lockstep(16);
    let core = rtl.handle();
    let cap = QpCap { max_send_wr: 32, max_recv_wr: 32, ..QpCap::default() };
    let h = open_host_on(Box::new(rtl), i, nqps, BUF, cap, false).expect("an RTL host");
    (core, h)
}

/// Carries frames between the two cores until neither has anything to send; the passes it took.
fn link(cores: [&RtlHandle; 2], ctx: &str) -> usize {
    let mut wire: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    for pass in 0.. {
        for (i, core) in cores.iter().enumerate() {
            for f in std::mem::take(&mut wire[i]) {
                core.receive(f);
            }
            assert!(core.settle(5_000_000), "{ctx}: core {i} settled in pass {pass}");
        }
        wire = [cores[1].take_sent(), cores[0].take_sent()];
        if wire.iter().all(Vec::is_empty) {
            return pass;
        }
        assert!(pass < 100, "{ctx}: the cores still talk after {pass} passes");
    }
    unreachable!("the passes end in the loop")
}

#[test]
fn two_rtl_nics_send_and_write_to_each_other() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let ctx = format!("seed {seed:#x}");
    let (ca, a) = rtl_host(0, 2);
    let (cb, b) = rtl_host(1, 2);
    ca.set_bubbles(seed, 0.2);
    cb.set_bubbles(seed ^ 1, 0.2);
    for q in 0..2 {
        connect(&a, q, 0xFF_FFF0, &b, q, 0x10, &ConnectOpts::default()).expect("connected");
    }
    let hosts = [&a, &b];
    let mut want: [Vec<u8>; 2] = [vec![0u8; SRC], vec![0u8; SRC]];
    let mut signaled: [Vec<(u64, WcOpcode, u32)>; 2] = [Vec::new(), Vec::new()];
    let mut received = [0u32; 2];
    for (s, host) in hosts.iter().enumerate() {
        let peer = hosts[1 - s];
        let src: Vec<u8> = (0..BUF - SRC).map(|_| rng.below(256) as u8).collect();
        host.buf.write(SRC, &src).expect("the sources");
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
                let from = rng.below((BUF - SRC) as u64 - u64::from(len));
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
    }
    let passes = link([&ca, &cb], &ctx);

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
        for q in 0..2 {
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
    }
    for (core, host) in [(&ca, &a), (&cb, &b)] {
        for q in 0..2 {
            core.context_agrees(host.qps[q].qpn).unwrap_or_else(|e| panic!("{ctx}: QP {q}: {e}"));
        }
        assert_eq!(core.peek("rx_unhandled"), 0, "{ctx}: every frame handled");
        let r = core.lockstep_report().expect("lockstep is on");
        assert_eq!((r.mismatches, &r.first), (0, &None), "{ctx}: the model following {} decisions", r.events);
        let sent = core.requests().0 + core.responses();
        assert!(r.events as u64 >= sent + core.frames(), "{ctx}: every packet sent and received followed");
    }
    eprintln!(
        "two RTL NICs: {} + {} packets sent, {} passes, {} + {} cycles",
        ca.requests().0 + ca.responses(),
        cb.requests().0 + cb.responses(),
        passes,
        ca.cycles(),
        cb.cycles()
    );
}
