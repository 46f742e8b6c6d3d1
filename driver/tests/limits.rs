//! The hardware profile as a user meets it: the device reports its limits as `ibv_query_device` does, the
//! driver refuses what goes past them, and the bounded queues behind them (the WQE window, the responder's
//! response queue, the control queue) keep their depth under load, counting what they drop.

use driver::pair::{connect, forged_headers, open_host, profile, send_wr, Host};
use driver::*;
use model::net::{LinkConfig, World};
use wire::contract::regs::Counter;
use wire::{Opcode, Psn};

const T: u64 = 10_000_000_000;

fn pair(cap: QpCap) -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 5));
    let a = open_host(&w, 0, 1, 1 << 20, cap, false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 20, cap, false).unwrap();
    connect(&a, 0, 1, &b, 0, 2, &ConnectOpts::default()).unwrap();
    w.lock().unwrap().capture();
    (w, a, b)
}

#[test]
fn the_device_reports_its_profile() {
    let p = profile();
    let (_w, a, _b) = pair(QpCap::default());
    let d = a.ctx.query_device();
    assert_eq!((d.max_qp, d.max_cq, d.max_mr, d.max_pd), (p.max_qp, p.max_cq, p.max_mr, p.max_pd));
    assert_eq!((d.max_sge, d.max_inline, d.max_log_ring), (p.max_sge, p.max_inline, u32::from(p.max_log_ring)));
    assert_eq!((d.max_qp_rd_atom, d.max_qp_init_rd_atom), (p.max_qp_rd_atom, p.max_qp_init_rd_atom));
    assert_eq!((d.wqe_window, d.resp_queue, d.tick_ns), (p.wqe_window, p.resp_queue, 1024));
}

#[test]
fn requests_past_the_limits_are_refused() {
    let p = profile();
    let (_w, a, _b) = pair(QpCap::default());
    let bad = |r: Result<Qp, Error>, what: &str| {
        let e = r.err().unwrap_or_else(|| panic!("{what} accepted"));
        assert!(matches!(e, Error::InvalidArgument(_)), "{what}: {e}");
    };
    let cap = |f: fn(&mut QpCap, &driver::DeviceAttr)| {
        let mut c = QpCap::default();
        f(&mut c, &a.ctx.query_device());
        c
    };
    bad(a.pd.create_qp(&a.cq, &a.cq, cap(|c, d| c.max_send_sge = d.max_sge + 1), false), "max_send_sge");
    bad(a.pd.create_qp(&a.cq, &a.cq, cap(|c, d| c.max_recv_sge = d.max_sge + 1), false), "max_recv_sge");
    bad(a.pd.create_qp(&a.cq, &a.cq, cap(|c, d| c.max_inline_data = d.max_inline + 1), false), "max_inline");
    bad(a.pd.create_qp(&a.cq, &a.cq, cap(|c, d| c.max_send_wr = (1 << d.max_log_ring) + 1), false), "depth");
    assert!(matches!(a.ctx.create_cq((1 << p.max_log_ring) + 1), Err(Error::InvalidArgument(_))), "CQ depth");
    let e = a.pd.reg_mr(a.mr.addr, (1 << 48) + 1, 0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "an MR past 2^48 bytes: {e}");
    // max_rd_atomic and max_dest_rd_atomic past the device's: refused by modify, lowered by connect.
    let qp = a.pd.create_qp(&a.cq, &a.cq, QpCap::default(), false).unwrap();
    let over = QpAttr { max_rd_atomic: p.max_qp_init_rd_atom as u8 + 1, ..Default::default() };
    let e = qp.modify(&over, wire::contract::verbs::attr::MAX_QP_RD_ATOMIC).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let over = QpAttr { max_dest_rd_atomic: p.max_qp_rd_atom as u8 + 1, ..Default::default() };
    let e = qp.modify(&over, wire::contract::verbs::attr::MAX_DEST_RD_ATOMIC).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let q = a.qps[0].query().unwrap();
    assert_eq!((q.max_rd_atomic, q.max_dest_rd_atomic), (p.max_qp_init_rd_atom as u8, p.max_qp_rd_atom as u8));
}

/// QPs are handed out lowest number first from 2 until `max_qp`; past it CREATE_QP fails with no resources
/// (tried where `max_qp` is at most 1024: creating the large profile's 16K takes minutes of simulation),
/// and a destroyed QP's number is the next one given.
#[test]
fn qps_run_out_at_max_qp() {
    let p = profile();
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 5));
    let cap = QpCap { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let h = open_host(&w, 0, 1, 4096, cap, false).unwrap();
    let mut qps = Vec::new();
    for n in 3..p.max_qp.min(1024) {
        let qp = h.pd.create_qp(&h.cq, &h.cq, cap, false).unwrap();
        assert_eq!(qp.qpn, n);
        qps.push(qp);
    }
    if p.max_qp <= 1024 {
        let e = h.pd.create_qp(&h.cq, &h.cq, cap, false).err().expect("one past max_qp");
        assert!(matches!(e, Error::Command { status: wire::contract::cmd::Status::NoResources, .. }), "{e}");
    }
    let freed = qps.remove(10);
    let n = freed.qpn;
    freed.destroy().unwrap();
    assert_eq!(h.pd.create_qp(&h.cq, &h.cq, cap, false).unwrap().qpn, n, "the lowest free number");
}

/// The requester holds at most its window of WQEs: twice as many posted complete in order while the window
/// never holds more.
#[test]
fn the_requester_never_holds_more_than_its_window() {
    let (w, a, b) = pair(QpCap { max_send_wr: 64, ..Default::default() });
    let window = a.ctx.query_device().wqe_window as usize;
    let n = 2 * window as u64;
    let wrs: Vec<_> = (0..n).map(|i| send_wr(SendOp::RdmaWrite, &a, &b, i * 4096, 4096, i)).collect();
    a.qps[0].post_send_list(&wrs).unwrap();
    let (mut done, mut most) = (Vec::new(), 0);
    while done.len() < n as usize {
        done.extend(a.cq.poll(16).unwrap());
        let mut w = w.lock().unwrap();
        most = most.max(w.nodes[0].nic.qp_state(a.qps[0].qpn).map_or(0, |q| q.req.wqes.len()));
        assert!(w.step() || done.len() == n as usize, "stalled with {} of {n} done", done.len());
    }
    assert_eq!(most, window, "the window fills, and no more");
    assert!(done.iter().enumerate().all(|(i, c)| c.wr_id == i as u64 && c.status == WcStatus::Success));
}

/// READ requests past what the responder's queue holds are dropped unexecuted and counted, and the
/// requester's retry still completes the READ; the queue never goes past its depth.
#[test]
fn a_full_response_queue_drops_requests_and_counts_them() {
    let (w, a, b) = pair(QpCap::default());
    b.buf.write(0, &[7; 4096]).unwrap();
    a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 0, 4096, 1)).unwrap();
    assert_eq!(a.cq.wait(1, T).unwrap()[0].status, WcStatus::Success);
    // The same READ again, many times at once, forged from A: duplicates, each owing a response stream.
    let mut h = forged_headers(&a, &b, Opcode::RDMA_READ_REQUEST, 1);
    h.bth.psn = Psn::new(1);
    h.ext.reth = Some(wire::ext::RethRepr { va: b.mr.addr, rkey: b.mr.rkey, dma_len: 4096 });
    let frame = h.emit(&[]);
    let depth = b.ctx.query_device().resp_queue as u64;
    // After them, a new READ at the expected PSN: it finds the queue full too, and is not executed.
    let epsn = w.lock().unwrap().nodes[1].nic.qp_state(b.qps[0].qpn).unwrap().resp.epsn;
    h.bth.psn = epsn;
    let new = h.emit(&[]);
    let owed = {
        let mut w = w.lock().unwrap();
        for _ in 0..2 * depth {
            w.deliver(1, frame.clone());
        }
        w.deliver(1, new);
        w.step();
        let q = w.nodes[1].nic.qp_state(b.qps[0].qpn).unwrap();
        assert_eq!((q.resp.epsn, q.resp.resources.len()), (epsn, 1), "the new READ left no trace");
        q.resp.out.len() as u64
    };
    assert!(owed < depth, "{owed} responses queued, the depth is {depth} with its last place kept");
    assert_eq!(b.ctx.counter(Counter::rx_drop_resp_queue_full), 2 * depth + 1 - owed, "every request not queued");
    assert_eq!(b.ctx.counter(Counter::rx_drop_duplicate), 2 * depth);
}

/// ARP requests past the control queue's depth, at once: the queue's worth answered, the rest counted.
#[test]
fn a_full_control_queue_drops_and_counts() {
    let (w, a, b) = pair(QpCap::default());
    let depth = profile().ctrl_queue as u64;
    let req = wire::arp::request_frame(a.mac, [10, 0, 0, 1], [10, 0, 0, 2]);
    let before = b.ctx.counter(Counter::arp_replies);
    {
        let mut w = w.lock().unwrap();
        for _ in 0..depth + 3 {
            w.deliver(1, req.clone());
        }
        w.step();
    }
    w.lock().unwrap().run_until(u64::MAX / 4);
    assert_eq!(b.ctx.counter(Counter::ctrl_drop_full), 3);
    assert_eq!(b.ctx.counter(Counter::arp_replies) - before, depth + 3, "each was answered, and some dropped");
    let replies =
        w.lock().unwrap().captured().iter().filter(|(_, n, f)| *n == 1 && wire::arp::parse_frame(f).is_some()).count();
    assert_eq!(replies as u64, depth);
}
