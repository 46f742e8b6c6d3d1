//! `ferrite perf <op> --threads N`: N application threads, each with a QP and a CQ of its own on each side,
//! posting and polling at the same time through one `Context` per NIC, as applications share libibverbs
//! objects. The simulated device runs on a thread of its own, as hardware runs beside the CPUs: the
//! application threads only post and poll (host memory and doorbells are theirs without the world's lock),
//! and each times its own verbs calls, so the report shows what the driver costs per work request as the
//! threads grow. The data is checked as in the single-threaded run.

use crate::perf::{pattern, report, wr_for, Op, Outcome, PerfArgs, PerfReport, DEPTH};
use crate::Error;
use driver::pair::open_host;
use driver::*;
use model::net::{Impairments, LinkConfig, World};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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
    /// Time inside post_send, post_recv and the polls that took something.
    driver: Duration,
    errors: Vec<String>,
}

pub fn measure(args: &PerfArgs) -> Result<PerfReport, Error> {
    let mtu = wire::contract::verbs::mtu_enum(args.pmtu).ok_or("--pmtu must be 256, 512, 1024, 2048 or 4096")?;
    if args.op.is_latency() {
        return Err("--threads runs the bandwidth ops between simulated NICs".into());
    }
    let n = args.threads.unwrap_or(1);
    if args.qps != 1 && args.qps != n {
        return Err("--threads N runs one QP per thread: leave --qps out".into());
    }
    let (iters, size) = (args.iters.unwrap_or(100), args.size());
    if iters == 0 || size > 1 << 30 || n == 0 || n > 256 {
        return Err("--iters at least 1, --size at most 1 GiB, --threads from 1 to 256".into());
    }
    let faults = args.faults.check()?;
    let link = LinkConfig { gbps: args.link_gbps, delay_ns: args.delay_ns, faults: Impairments::default() };
    let world = shared(World::pair(args.nic()?, link, args.faults.seed));
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
    let (t0, wall) = (driver::lock_world(&world).now, std::time::Instant::now());
    driver::lock_world(&world).set_link_faults(faults);
    let running = AtomicUsize::new(n as usize);
    let stalled = AtomicBool::new(false);
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = lanes
            .iter()
            .enumerate()
            .map(|(t, lane)| {
                let (a, b, running, stalled) = (&a, &b, &running, &stalled);
                s.spawn(move || {
                    let tally = run_lane(args.op, a, b, lane, t as u32, size, iters, stalled);
                    running.fetch_sub(1, Ordering::Release);
                    tally
                })
            })
            .collect();
        run_device(&world, &running, &stalled);
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let sim_ps = driver::lock_world(&world).now - t0;
    let errors: Vec<String> = tallies.iter().flat_map(|t| t.errors.clone()).collect();
    let data_ok = errors.is_empty() && crate::perf::data_arrived(args.op, [&a, &b], n, size, iters, &expect)?;
    let succeeded: u64 = tallies.iter().map(|t| t.succeeded).sum();
    let completed: u64 = tallies.iter().map(|t| u64::from(t.done)).sum();
    let driver = tallies.iter().map(|t| t.driver).sum::<Duration>();
    let completions_ok = tallies.iter().all(|t| t.in_order && t.done == iters) && errors.is_empty();
    let missing = tallies
        .iter()
        .enumerate()
        .filter(|(_, t)| t.done < iters)
        .map(|(i, t)| format!("thread {i}: wr {}..{}", t.done, iters - 1))
        .collect();
    Ok(report(
        args,
        &[&a, &b],
        Outcome {
            size,
            iters,
            qps: n,
            threads: n,
            bytes: if data_ok { u64::from(size) * succeeded } else { 0 },
            sim_ps,
            completed,
            driver_ns_per_wr: Some(driver.as_nanos() as f64 / completed.max(1) as f64),
            data_ok,
            completions_ok,
            missing,
            errors,
            wall_s: wall.elapsed().as_secs_f64(),
        },
    ))
}

/// Events the device thread runs per hold of the world's lock: long enough that the lock is not the work,
/// short enough that a doorbell rung meanwhile waits little.
const DEVICE_BATCH: usize = 64;

/// Consecutive empty looks at the device, with work requests outstanding, that make a stall.
const STALL_LOOKS: u32 = 1_000_000;

/// The device's thread: runs the simulation while any application thread is running. An idle world with
/// threads still waiting for completions is a lost work request: it says so rather than spin forever.
fn run_device(world: &SharedWorld, running: &AtomicUsize, stalled: &AtomicBool) {
    let mut idle = 0u32;
    while running.load(Ordering::Acquire) > 0 {
        let ran = {
            let mut w = driver::lock_world(world);
            (0..DEVICE_BATCH).take_while(|_| w.step()).count()
        };
        if ran > 0 {
            idle = 0;
            continue;
        }
        idle += 1;
        if idle > STALL_LOOKS {
            stalled.store(true, Ordering::Release);
        }
        std::thread::yield_now();
    }
}

/// One application thread: keeps `DEPTH` in flight on its QP and takes its own completions; it never runs
/// the device.
#[allow(clippy::too_many_arguments)]
fn run_lane(
    op: Op,
    a: &pair::Host,
    b: &pair::Host,
    lane: &Lane,
    t: u32,
    size: u32,
    iters: u32,
    stalled: &AtomicBool,
) -> Tally {
    let mut tally = Tally { in_order: true, ..Default::default() };
    let mut posted = 0u32;
    let recv = RecvWr { wr_id: 0, sg_list: vec![b.sge(u64::from(t) * u64::from(size.max(8)), size)] };
    while tally.done < iters && tally.errors.is_empty() {
        while posted < iters && posted - tally.done < DEPTH {
            let wr = wr_for(op, a, b, t, size, u64::from(posted));
            let (r, took) = timed(|| {
                let r = if op == Op::Send { lane.peer_qp.post_recv(&recv) } else { Ok(()) };
                r.and_then(|()| lane.qp.post_send(&wr))
            });
            tally.driver += took;
            if let Err(e) = r {
                tally.errors.push(format!("thread {t}: posting wr {posted}: {e}"));
                return tally;
            }
            posted += 1;
        }
        let (wcs, took) = timed(|| lane.cq.poll(64));
        let wcs = match wcs {
            Ok(w) => w,
            Err(e) => {
                tally.errors.push(format!("thread {t}: {e}"));
                return tally;
            }
        };
        let (peer, peer_took) = timed(|| lane.peer_cq.poll(64).unwrap_or_default());
        // Only polls that took something count: an empty poll is waiting for the device.
        tally.driver += if wcs.is_empty() { Duration::ZERO } else { took };
        tally.driver += if peer.is_empty() { Duration::ZERO } else { peer_took };
        for wc in peer {
            if wc.status != WcStatus::Success {
                tally.errors.push(format!("thread {t}: receive {}: {:?}", wc.wr_id, wc.status));
            }
        }
        if wcs.is_empty() {
            if stalled.load(Ordering::Acquire) {
                tally.errors.push(format!("thread {t}: the device went idle after {} of {iters}", tally.done));
            }
            std::thread::yield_now();
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

/// `f`'s result and the wall time it took.
fn timed<R>(f: impl FnOnce() -> R) -> (R, Duration) {
    let t0 = Instant::now();
    (f(), t0.elapsed())
}
