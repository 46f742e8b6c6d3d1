//! `ferrite perf <op> --threads N`: N application threads, each with a QP and a CQ of its own on each side,
//! posting and polling at the same time through one `Context` per NIC, as applications share libibverbs
//! objects. Every thread lets the device run when it has nothing to take (the model's world is one lock:
//! on this backend the threads share the simulation, the driver's locks are per queue). The data is
//! checked as in the single-threaded run.

use crate::perf::{pattern, report, wr_for, Op, Outcome, PerfArgs, PerfReport, DEPTH};
use crate::Error;
use driver::pair::open_host;
use driver::*;
use model::net::{Impairments, LinkConfig, World};
use model::NicConfig;

/// One thread's queues: its requester QP and CQ, and the responder QP and CQ it is connected to.
struct Lane {
    qp: Qp,
    cq: Cq,
    peer_qp: Qp,
    peer_cq: Cq,
}

/// What one thread saw.
#[derive(Default)]
struct Tally {
    done: u32,
    succeeded: u64,
    in_order: bool,
    errors: Vec<String>,
}

pub fn measure(args: &PerfArgs) -> Result<PerfReport, Error> {
    let mtu = wire::contract::verbs::mtu_enum(args.pmtu).ok_or("--pmtu must be 256, 512, 1024, 2048 or 4096")?;
    if args.op.is_latency() || args.link {
        return Err("--threads runs the bandwidth ops between simulated NICs".into());
    }
    if args.qps != 1 && args.qps != args.threads {
        return Err("--threads N runs one QP per thread: leave --qps out".into());
    }
    let (n, iters, size) = (args.threads, args.iters.unwrap_or(100), args.size());
    if iters == 0 || size > 1 << 30 || n > 256 {
        return Err("--iters at least 1, --size at most 1 GiB, --threads at most 256".into());
    }
    let faults = args.faults.check()?;
    let link = LinkConfig { gbps: args.link_gbps, delay_ns: args.delay_ns, faults: Impairments::default() };
    let nic = NicConfig { port_mbps: (args.link_gbps * 1000.0) as u32, ..Default::default() };
    let world = shared(World::pair(nic, link, args.faults.seed));
    let buf_len = size.max(8) as usize * n as usize;
    let cap = QpCap { max_send_wr: DEPTH, max_recv_wr: DEPTH, ..Default::default() };
    let (a, b) = (open_host(&world, 0, 1, buf_len, cap, false)?, open_host(&world, 1, 1, buf_len, cap, false)?);
    let opts = ConnectOpts { path_mtu: mtu, timeout: 10, ..Default::default() };
    let mut lanes = Vec::new();
    for t in 0..n {
        let (cq, peer_cq) = (a.ctx.create_cq(2 * DEPTH)?, b.ctx.create_cq(2 * DEPTH)?);
        let qp = a.pd.create_qp(&cq, &cq, cap, false)?;
        let peer_qp = b.pd.create_qp(&peer_cq, &peer_cq, cap, false)?;
        let (pa, pb) = (100 + t, 200 + t);
        qp.connect(pa, &Endpoint { qpn: peer_qp.qpn, psn: pb, gid: b.gid, mac: b.mac }, &opts)?;
        peer_qp.connect(pb, &Endpoint { qpn: qp.qpn, psn: pa, gid: a.gid, mac: a.mac }, &opts)?;
        lanes.push(Lane { qp, cq, peer_qp, peer_cq });
    }
    let src = if args.op == Op::Read { &b } else { &a };
    let expect = pattern(buf_len, args.faults.seed as u32);
    src.buf.write(0, &expect)?;
    if args.op == Op::Atomic {
        b.buf.write(0, &vec![0u8; buf_len])?;
    }
    let (t0, wall) = (world.lock().map_err(|_| "world poisoned")?.now, std::time::Instant::now());
    world.lock().map_err(|_| "world poisoned")?.set_link_faults(faults);
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = lanes
            .iter()
            .enumerate()
            .map(|(t, lane)| {
                let (a, b) = (&a, &b);
                s.spawn(move || run_lane(args.op, a, b, lane, t as u32, size, iters))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let sim_ps = world.lock().map_err(|_| "world poisoned")?.now - t0;
    let errors: Vec<String> = tallies.iter().flat_map(|t| t.errors.clone()).collect();
    let data_ok = errors.is_empty()
        && match args.op {
            Op::Read => a.buf.read(0, buf_len)? == expect,
            Op::Atomic => (0..n as usize).all(|q| {
                b.buf.read(q * size.max(8) as usize, 8).map(|v| v == u64::from(iters).to_le_bytes()).unwrap_or(false)
            }),
            _ => b.buf.read(0, buf_len)? == expect,
        };
    let succeeded: u64 = tallies.iter().map(|t| t.succeeded).sum();
    let completions_ok = tallies.iter().all(|t| t.in_order && t.done == iters) && errors.is_empty();
    let missing = tallies
        .iter()
        .enumerate()
        .filter(|(_, t)| t.done < iters)
        .map(|(i, t)| format!("thread {i}: wr {}..{}", t.done, iters - 1))
        .collect();
    Ok(report(
        args,
        [&a, &b],
        Outcome {
            size,
            iters,
            qps: n,
            threads: n,
            bytes: if data_ok { u64::from(size) * succeeded } else { 0 },
            sim_ps,
            completed: tallies.iter().map(|t| u64::from(t.done)).sum(),
            data_ok,
            completions_ok,
            missing,
            errors,
            wall_s: wall.elapsed().as_secs_f64(),
        },
    ))
}

/// One thread: keeps `DEPTH` in flight on its QP, takes its own completions, and lets the device run
/// when there is nothing to take.
fn run_lane(op: Op, a: &pair::Host, b: &pair::Host, lane: &Lane, t: u32, size: u32, iters: u32) -> Tally {
    let mut tally = Tally { in_order: true, ..Default::default() };
    let mut posted = 0u32;
    let mut idle = 0u32;
    let recv = RecvWr { wr_id: 0, sg_list: vec![b.sge(u64::from(t) * u64::from(size.max(8)), size)] };
    while tally.done < iters && tally.errors.is_empty() {
        while posted < iters && posted - tally.done < DEPTH {
            let wr = wr_for(op, a, b, t, size, u64::from(posted));
            let r = if op == Op::Send { lane.peer_qp.post_recv(&recv) } else { Ok(()) };
            if let Err(e) = r.and_then(|()| lane.qp.post_send(&wr)) {
                tally.errors.push(format!("thread {t}: posting wr {posted}: {e}"));
                return tally;
            }
            posted += 1;
        }
        let wcs = match lane.cq.poll(64) {
            Ok(w) => w,
            Err(e) => {
                tally.errors.push(format!("thread {t}: {e}"));
                return tally;
            }
        };
        for wc in lane.peer_cq.poll(64).unwrap_or_default() {
            if wc.status != WcStatus::Success {
                tally.errors.push(format!("thread {t}: receive {}: {:?}", wc.wr_id, wc.status));
            }
        }
        if wcs.is_empty() {
            // Another thread may be running the device; only a long stretch of nothing is a stall.
            idle = if a.ctx.backend().progress() { 0 } else { idle + 1 };
            if idle > 1_000_000 {
                tally.errors.push(format!("thread {t}: stalled after {} of {iters}", tally.done));
            }
            continue;
        }
        for wc in wcs {
            tally.in_order &= wc.wr_id == u64::from(tally.done);
            match wc.status {
                WcStatus::Success => tally.succeeded += 1,
                s => tally.errors.push(format!("thread {t}: wr {}: {s:?}", wc.wr_id)),
            }
            tally.done += 1;
        }
    }
    // The receive completions of the last SENDs.
    while op == Op::Send && !lane.peer_cq.poll(64).unwrap_or_default().is_empty() {}
    tally
}
