//! The verbs objects across threads, as applications use libibverbs: one thread polls a CQ while others
//! post to their own QPs; the per-queue locks keep every ring consistent.

use driver::pair::{connect, open_host, Host};
use driver::*;
use model::net::{LinkConfig, World};

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn verbs_objects_are_send_and_sync() {
    assert_send_sync::<Context>();
    assert_send_sync::<Pd>();
    assert_send_sync::<Mr>();
    assert_send_sync::<Cq>();
    assert_send_sync::<Qp>();
    assert_send_sync::<Buffer>();
    assert_send_sync::<Host>();
}

const QPS: usize = 4;
const PER_QP: u32 = 200;
const LEN: u32 = 512;

fn write(h: &Host, q: usize, i: u32, peer: &Host) -> SendWr {
    let off = (q as u64 * u64::from(PER_QP) + u64::from(i)) * u64::from(LEN);
    SendWr {
        wr_id: (q as u64) << 32 | u64::from(i),
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![Sge { addr: h.mr.addr + off, length: LEN, lkey: h.mr.lkey }],
        remote_addr: peer.mr.addr + off,
        rkey: peer.mr.rkey,
        ..Default::default()
    }
}

#[test]
fn one_thread_polls_while_others_post() {
    let world = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 21));
    let len = QPS * PER_QP as usize * LEN as usize;
    let cap = QpCap { max_send_wr: 16, ..Default::default() };
    let a = open_host(&world, 0, QPS, len, cap, false).unwrap();
    let b = open_host(&world, 1, QPS, len, cap, false).unwrap();
    for q in 0..QPS {
        connect(&a, q, 100 + q as u32, &b, q, 200 + q as u32, &ConnectOpts::default()).unwrap();
    }
    let data: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
    a.buf.write(0, &data).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let next = std::thread::scope(|s| {
        for q in 0..QPS {
            let (a, b, done) = (&a, &b, &done);
            s.spawn(move || {
                let mut i = 0;
                while i < PER_QP && !done.load(std::sync::atomic::Ordering::Relaxed) {
                    match a.qps[q].post_send(&write(a, q, i, b)) {
                        Ok(()) => i += 1,
                        Err(Error::QueueFull(_)) => std::thread::yield_now(),
                        Err(e) => panic!("qp {q} wr {i}: {e}"),
                    }
                }
            });
        }
        // The poller: completions of every QP, each QP's in order, while the posters run.
        let mut next = [0u32; QPS];
        let mut idle = 0;
        while next.iter().any(|&n| n < PER_QP) && idle < 1_000_000 {
            let wcs = a.cq.poll(32).unwrap();
            if wcs.is_empty() {
                idle += 1;
                a.ctx.backend().progress();
                continue;
            }
            idle = 0;
            for wc in wcs {
                assert_eq!(wc.status, WcStatus::Success, "{wc:?}");
                let (q, i) = ((wc.wr_id >> 32) as usize, wc.wr_id as u32);
                assert_eq!(i, next[q], "qp {q} completed out of order");
                next[q] += 1;
            }
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        next
    });
    assert_eq!(next, [PER_QP; QPS], "every WRITE of every thread completed");
    assert_eq!(b.buf.read(0, len).unwrap(), data, "every byte landed");
}

/// A doorbell rung while another thread is running the device does not wait for it: the write is posted,
/// as PCIe posts it, and the NIC takes it at its next step.
#[test]
fn a_doorbell_rung_while_the_device_runs_is_posted() {
    let world = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 22));
    let cap = QpCap { max_send_wr: 16, ..Default::default() };
    let a = open_host(&world, 0, 1, 4096, cap, false).unwrap();
    let b = open_host(&world, 1, 1, 4096, cap, false).unwrap();
    connect(&a, 0, 1, &b, 0, 2, &ConnectOpts::default()).unwrap();
    a.buf.write(0, &[0x5a; LEN as usize]).unwrap();
    let busy = world.lock().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let (a, b) = (&a, &b);
        s.spawn(move || tx.send(a.qps[0].post_send(&write(a, 0, 0, b))).unwrap());
        let posted = rx.recv_timeout(std::time::Duration::from_secs(20));
        drop(busy);
        assert!(matches!(posted, Ok(Ok(()))), "post_send waited for the device's thread: {posted:?}");
    });
    let wcs = a.cq.wait(1, 100_000_000).unwrap();
    assert_eq!(wcs.len(), 1, "the posted doorbell reached the NIC");
    assert_eq!(wcs[0].status, WcStatus::Success);
    assert_eq!(b.buf.read(0, LEN as usize).unwrap(), vec![0x5a; LEN as usize]);
}
