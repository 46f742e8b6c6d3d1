//! Driver overhead, CPU time per verb with the device out of the picture as far as it can be:
//! `cargo bench -p ferrite-driver --bench verbs` (figures in BENCHMARKS.md).
//!
//! - `post_send`: one 64-byte RDMA WRITE (WQE encode, the WQE into the send ring, the doorbell), on the model
//!   backend (the doorbell reaches the model NIC, which notes the new producer index) and on a mock BAR (the
//!   doorbell is dropped; the ring is the model's host memory either way).
//! - `post_send_list/8`: eight WRITEs and one doorbell per call, per call.
//! - `poll_cq`: a hit (one CQE taken, the CQ doorbell written) and a miss (the owner byte of the next slot).
//! - `post_send_threads/mock_bar/T`: T threads posting WRITEs at once, each to a QP of its own, on the mock
//!   BAR; the time is the wall time per WR of all of them together, so it falls as 1/T while the driver's
//!   locks are per queue and there are cores for the threads.
//!
//! The send queue fills because nothing consumes it while the clock runs: every `DEPTH` posts the QPs are
//! reset and reconnected, outside the timed part.

use criterion::{criterion_group, criterion_main, Criterion};
use driver::pair::{connect, open_host_on, Host, Switchable};
use driver::*;
use model::net::{LinkConfig, World};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Send WQEs per QP: the four QPs' send and receive queues share one CQ, which must fit the board profile's
/// largest ring (4096 entries): 4 x (1008 + 16) = 4096.
const DEPTH: u32 = 1008;
/// QPs on the posting side, one per thread of the threaded bench.
const QPS: usize = 4;

struct Rig {
    world: SharedWorld,
    a: Host,
    b: Host,
    mock: Arc<AtomicBool>,
    mmio_writes: Arc<AtomicU64>,
}

impl Rig {
    fn new() -> Self {
        let world = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 1));
        let mock = Arc::new(AtomicBool::new(false));
        let mmio_writes = Arc::new(AtomicU64::new(0));
        let cap = QpCap { max_send_wr: DEPTH, max_recv_wr: 16, ..Default::default() };
        let host = |i| {
            let be = Switchable::new(ModelBackend::new(world.clone(), i), mock.clone(), mmio_writes.clone());
            open_host_on(Box::new(be), i, QPS, 1 << 16, cap, false).expect("host")
        };
        let (a, b) = (host(0), host(1));
        let r = Rig { world, a, b, mock, mmio_writes };
        r.reset();
        r
    }

    /// Every QP back to RESET and connected again: empty rings, with the device along.
    fn reset(&self) {
        self.mock.store(false, Ordering::Relaxed);
        let to_reset = QpAttr { qp_state: Some(QpState::Reset), ..Default::default() };
        for h in [&self.a, &self.b] {
            for qp in &h.qps {
                qp.modify(&to_reset, attr::STATE).expect("reset");
            }
            while !h.cq.poll(64).expect("drain").is_empty() {}
        }
        for q in 0..QPS {
            let psn = q as u32 + 1;
            connect(&self.a, q, psn, &self.b, q, psn, &ConnectOpts::default()).expect("connect");
        }
    }

    fn write(&self, signaled: bool) -> SendWr {
        SendWr {
            wr_id: 1,
            opcode: Some(SendOp::RdmaWrite),
            send_flags: if signaled { send_flags::SIGNALED } else { 0 },
            sg_list: vec![self.a.sge(0, 64)],
            remote_addr: self.b.mr.addr,
            rkey: self.b.mr.rkey,
            ..Default::default()
        }
    }

    /// Times `iters` calls of `post`, each taking `per_call` ring slots, resetting when the ring is full.
    fn time_posts(&self, iters: u64, mock: bool, per_call: u32, post: impl Fn(&Rig)) -> Duration {
        let mut total = Duration::ZERO;
        let mut left = iters;
        while left > 0 {
            self.reset();
            self.mock.store(mock, Ordering::Relaxed);
            let n = left.min(u64::from(DEPTH / per_call));
            let t = Instant::now();
            for _ in 0..n {
                post(self);
            }
            total += t.elapsed();
            left -= n;
        }
        self.mock.store(false, Ordering::Relaxed);
        total
    }
}

fn benches(c: &mut Criterion) {
    let rig = Rig::new();
    let one = rig.write(false);
    for (name, mock) in [("post_send/model", false), ("post_send/mock_bar", true)] {
        c.bench_function(name, |bn| {
            bn.iter_custom(|iters| rig.time_posts(iters, mock, 1, |r| r.a.qps[0].post_send(&one).expect("post")))
        });
    }
    let eight = vec![one.clone(); 8];
    c.bench_function("post_send_list/8/mock_bar", |bn| {
        bn.iter_custom(|iters| rig.time_posts(iters, true, 8, |r| r.a.qps[0].post_send_list(&eight).expect("post")))
    });
    c.bench_function("poll_cq/miss", |bn| bn.iter(|| assert!(rig.a.cq.poll(1).expect("poll").is_empty())));
    let signaled = rig.write(true);
    c.bench_function("poll_cq/hit", |bn| {
        bn.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                rig.reset();
                let n = left.min(u64::from(DEPTH));
                for _ in 0..n {
                    rig.a.qps[0].post_send(&signaled).expect("post");
                }
                // The model runs until every completion is in the ring; then only the polls are timed.
                let mut w = rig.world.lock().expect("world");
                while w.step() {}
                drop(w);
                let t = Instant::now();
                for _ in 0..n {
                    assert_eq!(rig.a.cq.poll(1).expect("poll").len(), 1);
                }
                total += t.elapsed();
                left -= n;
            }
            total
        })
    });
    let mut group = c.benchmark_group("post_send_threads/mock_bar");
    for threads in [1, 2, 4] {
        group.bench_function(threads.to_string(), |bn| {
            bn.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters;
                while left > 0 {
                    rig.reset();
                    rig.mock.store(true, Ordering::Relaxed);
                    let per_thread = left.div_ceil(threads as u64).min(u64::from(DEPTH));
                    // Every thread is up before the clock starts; the clock stops when the last is done.
                    let start = Barrier::new(threads + 1);
                    let t = std::thread::scope(|s| {
                        for qp in &rig.a.qps[..threads] {
                            let start = &start;
                            let one = &one;
                            s.spawn(move || {
                                start.wait();
                                for _ in 0..per_thread {
                                    qp.post_send(one).expect("post");
                                }
                            });
                        }
                        start.wait();
                        Instant::now()
                    });
                    total += t.elapsed();
                    left = left.saturating_sub(per_thread * threads as u64);
                }
                rig.mock.store(false, Ordering::Relaxed);
                total
            })
        });
    }
    group.finish();
    // Not a time: MMIO writes per work request, one doorbell per call whatever the list's length.
    for k in [1u64, 8, 32] {
        rig.reset();
        let before = rig.mmio_writes.load(Ordering::Relaxed);
        let list = vec![one.clone(); k as usize];
        rig.a.qps[0].post_send_list(&list).expect("post");
        let writes = rig.mmio_writes.load(Ordering::Relaxed) - before;
        println!("post_send_list of {k}: {writes} MMIO write(s), {:.3} per WR", writes as f64 / k as f64);
    }
}

criterion_group!(verbs, benches);
criterion_main!(verbs);
