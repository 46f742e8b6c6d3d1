//! Completion events (arm, one event per arming, solicited-only) and asynchronous events (CQ overrun takes
//! the QP to ERR) through the event queue and the interrupt.

use driver::pair::{connect, open_host, Host};
use driver::*;
use model::net::{LinkConfig, World};
use wire::contract::regs::Counter;

const T: u64 = 1_000_000_000;

fn setup(cap: QpCap) -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 3));
    let a = open_host(&w, 0, 1, 1 << 16, cap, false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 16, cap, false).unwrap();
    connect(&a, 0, 0x31, &b, 0, 0x41, &ConnectOpts::default()).unwrap();
    (w, a, b)
}

fn write(a: &Host, b: &Host, wr_id: u64) -> SendWr {
    SendWr {
        wr_id,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![Sge { addr: a.mr.addr, length: 100, lkey: a.mr.lkey }],
        remote_addr: b.mr.addr,
        rkey: b.mr.rkey,
        ..Default::default()
    }
}

fn send(a: &Host, flags: u8) -> SendWr {
    SendWr {
        wr_id: 7,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED | flags,
        sg_list: vec![Sge { addr: a.mr.addr, length: 64, lkey: a.mr.lkey }],
        ..Default::default()
    }
}

#[test]
fn armed_cq_raises_one_event_per_arming() {
    let (_w, a, b) = setup(QpCap::default());
    assert_eq!(a.ctx.get_cq_event(T).unwrap(), None, "nothing armed, nothing happened");
    a.cq.req_notify(false);
    a.qps[0].post_send(&write(&a, &b, 1)).unwrap();
    assert_eq!(a.ctx.get_cq_event(T).unwrap(), Some(a.cq.cqn));
    let wc = a.cq.poll(4).unwrap();
    assert_eq!((wc.len(), wc[0].wr_id, wc[0].status), (1, 1, WcStatus::Success));
    // Not re-armed: the next completion is polled but raises no event.
    a.qps[0].post_send(&write(&a, &b, 2)).unwrap();
    assert_eq!(a.cq.wait(1, T).unwrap().len(), 1);
    assert_eq!(a.ctx.get_cq_event(T).unwrap(), None);
    assert_eq!(a.ctx.counter(Counter::interrupts), 1);
    // Re-armed: an event again.
    a.cq.req_notify(false);
    a.qps[0].post_send(&write(&a, &b, 3)).unwrap();
    assert_eq!(a.ctx.get_cq_event(T).unwrap(), Some(a.cq.cqn));
    assert_eq!(a.ctx.counter(Counter::events), 2);
    // And a third: each EQE in the next slot of the ring.
    assert_eq!(a.cq.wait(1, T).unwrap().len(), 1);
    a.cq.req_notify(false);
    a.qps[0].post_send(&write(&a, &b, 4)).unwrap();
    assert_eq!(a.ctx.get_cq_event(T).unwrap(), Some(a.cq.cqn));
    assert_eq!(a.ctx.counter(Counter::events), 3);
}

#[test]
fn solicited_only_arming_waits_for_a_solicited_message() {
    let (_w, a, b) = setup(QpCap::default());
    for i in 0..2 {
        b.qps[0]
            .post_recv(&RecvWr { wr_id: i, sg_list: vec![Sge { addr: b.mr.addr, length: 64, lkey: b.mr.lkey }] })
            .unwrap();
    }
    b.cq.req_notify(true);
    a.qps[0].post_send(&send(&a, 0)).unwrap();
    assert_eq!(a.cq.wait(1, T).unwrap().len(), 1);
    assert_eq!(b.ctx.get_cq_event(T).unwrap(), None, "unsolicited SEND: no event");
    assert_eq!(b.cq.poll(4).unwrap().len(), 1, "but the receive completed");
    a.qps[0].post_send(&send(&a, send_flags::SOLICITED)).unwrap();
    assert_eq!(b.ctx.get_cq_event(T).unwrap(), Some(b.cq.cqn));
    let wc = b.cq.poll(4).unwrap();
    assert_eq!((wc.len(), wc[0].wr_id), (1, 1));
}

#[test]
fn cq_overrun_is_an_async_error_and_the_qp_goes_to_err() {
    let (_w, mut a, mut b) = setup(QpCap::default());
    // A two-entry CQ on a second QP of host A; three unpolled completions overrun it.
    let small = a.ctx.create_cq(2).unwrap();
    a.qps.push(a.pd.create_qp(&small, &small, QpCap::default(), false).unwrap());
    b.qps.push(b.pd.create_qp(&b.cq, &b.cq, QpCap::default(), false).unwrap());
    connect(&a, 1, 0x51, &b, 1, 0x61, &ConnectOpts::default()).unwrap();
    let qp = &a.qps[1];
    for i in 0..3 {
        qp.post_send(&write(&a, &b, i)).unwrap();
    }
    let e1 = a.ctx.get_async_event(T).unwrap();
    let e2 = a.ctx.get_async_event(T).unwrap();
    assert_eq!((e1, e2), (Some(AsyncEvent::CqError { cqn: small.cqn }), Some(AsyncEvent::QpFatal { qpn: qp.qpn })));
    assert_eq!(qp.query().unwrap().qp_state, QpState::Err as u8);
    assert_eq!(small.poll(8).unwrap().len(), 2, "the two CQEs that fit");
    // The other QP of the same device is untouched.
    a.qps[0].post_send(&write(&a, &b, 9)).unwrap();
    assert_eq!(a.cq.wait(1, T).unwrap()[0].status, WcStatus::Success);
}
