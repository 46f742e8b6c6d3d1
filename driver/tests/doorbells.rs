//! The data path's MMIO: one doorbell write per `post_send` / `post_send_list` / `post_recv` call and one
//! per `poll_cq` that took something, however many work requests or completions; nothing for a miss.

use driver::pair::{connect, Switchable};
use driver::*;
use model::net::{LinkConfig, World};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

#[test]
fn one_doorbell_per_call() {
    let world = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 5));
    let writes = Arc::new(AtomicU64::new(0));
    let cap = QpCap { max_send_wr: 64, max_recv_wr: 64, ..Default::default() };
    let host = |i| {
        let be = Switchable::new(ModelBackend::new(world.clone(), i), Arc::new(AtomicBool::new(false)), writes.clone());
        pair::open_host_on(Box::new(be), i, 1, 1 << 16, cap, false).unwrap()
    };
    let (a, b) = (host(0), host(1));
    connect(&a, 0, 1, &b, 0, 1, &ConnectOpts::default()).unwrap();
    let count = |f: &dyn Fn()| {
        let before = writes.load(Ordering::Relaxed);
        f();
        writes.load(Ordering::Relaxed) - before
    };
    let wr = SendWr {
        wr_id: 1,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0, 64)],
        remote_addr: b.mr.addr,
        rkey: b.mr.rkey,
        ..Default::default()
    };
    for k in [1usize, 8, 32] {
        assert_eq!(count(&|| a.qps[0].post_send_list(&vec![wr.clone(); k]).unwrap()), 1, "a list of {k}");
    }
    assert_eq!(count(&|| b.qps[0].post_recv(&RecvWr { wr_id: 9, sg_list: vec![b.sge(0, 64)] }).unwrap()), 1);
    assert_eq!(count(&|| assert!(b.cq.poll(8).unwrap().is_empty())), 0, "a miss writes nothing");
    while world.lock().unwrap().step() {}
    let got = std::cell::Cell::new(0);
    assert_eq!(count(&|| got.set(a.cq.poll(64).unwrap().len())), 1, "one CQ doorbell for the whole poll");
    assert_eq!(got.get(), 41);
}
