//! The RTL core's receive side as a responder, in cycles: a model NIC's requester writes into the Verilated
//! core (16 QPs, 8-byte datapath, host memory behind the default DMA latency), or SENDs into receive WQEs
//! posted there, and the core places the data (a SEND's after fetching its WQE, then its CQE) and
//! acknowledges it. `cargo bench -p ferrite-driver --bench rtl_core` prints, for each run, the core's
//! cycles from the first frame in to the last ACK out, the frames its MAC boundary dropped for want of room
//! (sent again after its sequence NAK), the payload bytes per cycle over the datapath's width
//! (the responder's efficiency, headers and the ACKs' turnaround included), frames per cycle, and the
//! simulation's speed in cycles per wall second, without and with the model following in lockstep
//! (figures in BENCHMARKS.md). Every run checks the data landed, the requester's WRITEs or SENDs completed and,
//! for SENDs, every receive completed.

use driver::pair::{connect, open_host, open_host_on, rtl_turn, run_external};
use driver::rtl::RtlBackend;
use driver::*;
use model::net::{LinkConfig, World};
use std::time::Instant;

const BUF: usize = 1 << 20;
/// The core's datapath, bytes a cycle.
const DATAPATH: f64 = 8.0;

struct Run {
    cycles: u64,
    frames: usize,
    drops: u64,
    bytes: usize,
    wall: f64,
}

/// `count` WRITEs (or SENDs, each into a receive WQE posted first) of `size` bytes at PMTU 4096 from the
/// model into the core; the core's cycles and the wall time for them (and for the ACKs to complete them at
/// the requester).
fn run(op: SendOp, size: usize, count: usize, lockstep: bool) -> Run {
    let w = shared(World::attached(driver::pair::nic_config(), LinkConfig::default(), 1));
    let cap = QpCap { max_send_wr: count as u32, max_recv_wr: count as u32, ..QpCap::default() };
    let a = open_host(&w, 0, 1, BUF, cap, false).expect("the model host");
    let rtl =
        if lockstep { RtlBackend::with_lockstep(16, hdl::Width::W8) } else { RtlBackend::new(16, hdl::Width::W8) };
    let core = rtl.handle();
    let b = open_host_on(Box::new(rtl), 1, 1, BUF, cap, false).expect("the RTL host");
    let opts = ConnectOpts { path_mtu: 5, timeout: 20, ..Default::default() };
    connect(&a, 0, 0x10, &b, 0, 0x20, &opts).expect("connected");
    let data: Vec<u8> = (0..size * count).map(|i| (i * 31 + 7) as u8).collect();
    a.buf.write(0, &data).expect("the source written");
    for i in 0..count {
        if op == SendOp::Send {
            let sg_list = vec![b.sge((i * size) as u64, size as u32)];
            b.qps[0].post_recv(&RecvWr { wr_id: i as u64, sg_list }).expect("the receive posted");
        }
        let wr = SendWr {
            wr_id: i as u64,
            opcode: Some(op),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![a.sge((i * size) as u64, size as u32)],
            remote_addr: b.mr.addr + (i * size) as u64,
            rkey: b.mr.rkey,
            ..Default::default()
        };
        a.qps[0].post_send(&wr).expect("posted");
    }
    // The requester sends what its window lets it, the core answers, and so on until every WRITE completed;
    // only the core's part is timed.
    let (mut cycles, mut wall, mut n, mut done) = (0u64, 0f64, 0usize, Vec::new());
    for _ in 0..64 {
        let frames = run_external(&w, 2_000_000_000);
        n += frames.len();
        let start = Instant::now();
        let (c, settled) = rtl_turn(&w, &core, frames, 100_000_000, |_| {});
        assert!(settled, "the core took every frame in and answered");
        cycles += c;
        wall += start.elapsed().as_secs_f64();
        // The ACKs reach the requester; what it sends next waits for the next turn.
        {
            let mut w = lock_world(&w);
            let until = w.now + 2_000_000_000;
            w.run_until(until);
        }
        done.extend(a.cq.poll(count + 1).expect("the requester's completions"));
        if done.len() >= count {
            break;
        }
    }
    assert_eq!(done.len(), count, "every WRITE completed by the core's ACKs");
    assert!(done.iter().all(|c| c.status == WcStatus::Success), "{done:?}");
    assert_eq!(b.buf.read(0, size * count).expect("the core's buffer"), data, "the data landed");
    if op == SendOp::Send {
        let recvs = b.cq.poll(count + 1).expect("the core's completions");
        assert_eq!(recvs.len(), count, "every receive completed");
        assert!(recvs.iter().all(|c| c.status == WcStatus::Success && c.byte_len == size as u32), "{recvs:?}");
    }
    if lockstep {
        let r = core.lockstep_report().expect("lockstep is on");
        assert_eq!((r.mismatches, r.first), (0, None), "the model following {} decisions", r.events);
        assert!(r.events as u64 > core.frames() + core.responses(), "every frame in and out a decision followed");
    }
    // Frames the MAC boundary dropped for want of room (the requester sends them again after a NAK).
    Run { cycles, frames: n, drops: core.peek("rx_drop_full"), bytes: size * count, wall }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this once as a smoke test.
    let quick = !std::env::args().any(|a| a == "--bench");
    let cases: &[(SendOp, usize, usize)] = if quick {
        &[(SendOp::RdmaWrite, 4096, 2), (SendOp::Send, 4096, 2)]
    } else {
        &[
            (SendOp::RdmaWrite, 1 << 16, 16),
            (SendOp::RdmaWrite, 4096, 64),
            (SendOp::RdmaWrite, 64, 256),
            (SendOp::Send, 1 << 16, 16),
            (SendOp::Send, 4096, 64),
            (SendOp::Send, 64, 256),
        ]
    };
    println!(
        "| messages | lockstep | frames | dropped | core cycles | payload B / (cycles x 8 B) | frames / cycle | Kcycles / s |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &(op, size, count) in cases {
        for lockstep in [false, true] {
            let r = run(op, size, count, lockstep);
            let name = if op == SendOp::Send { "SENDs" } else { "WRITEs" };
            println!(
                "| {count} {name} x {size} B | {} | {} | {} | {} | {:.3} | {:.4} | {:.0} |",
                if lockstep { "on" } else { "off" },
                r.frames,
                r.drops,
                r.cycles,
                r.bytes as f64 / (r.cycles as f64 * DATAPATH),
                r.frames as f64 / r.cycles as f64,
                r.cycles as f64 / r.wall / 1000.0
            );
        }
    }
}
