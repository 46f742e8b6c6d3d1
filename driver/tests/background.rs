//! Rules of the contract that hardware imposes, seen from the driver: a flush runs in the background after
//! the command that started it, one WQE per step; the NIC's writes to host memory cannot fail, so one that
//! lands nowhere changes nothing on the wire; a SEND without a receive buffer is counted as such.

use driver::pair::{connect, open_host, send_wr, Host};
use driver::*;
use model::follow::Event;
use model::net::{LinkConfig, World};
use model::nic::{Decision, Output};
use wire::contract::regs::Counter;

const T: u64 = 10_000_000_000;

fn pair() -> (SharedWorld, Host, Host) {
    let mut world = World::pair(driver::pair::nic_config(), LinkConfig::default(), 7);
    world.trace(0);
    let w = shared(world);
    let a = open_host(&w, 0, 1, 1 << 16, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 16, QpCap::default(), false).unwrap();
    connect(&a, 0, 1, &b, 0, 2, &ConnectOpts::default()).unwrap();
    (w, a, b)
}

/// MODIFY_QP to ERR returns with nothing completed; the flush then completes each posted WQE, one CQE per
/// flush step, receives after sends.
#[test]
fn a_flush_runs_after_its_command_one_wqe_at_a_time() {
    let (w, a, _b) = pair();
    let qp = &a.qps[0];
    for i in 0..3 {
        qp.post_recv(&RecvWr { wr_id: 100 + i, sg_list: vec![a.sge(0, 8)] }).unwrap();
    }
    w.lock().unwrap().take_trace(0);
    qp.modify(&QpAttr { qp_state: Some(QpState::Err), ..Default::default() }, wire::contract::verbs::attr::STATE)
        .unwrap();
    let wcs = a.cq.wait(3, T).unwrap();
    assert_eq!(
        wcs.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        (100..103).map(|i| (i, WcStatus::WrFlushErr)).collect::<Vec<_>>()
    );
    let t = w.lock().unwrap().take_trace(0).unwrap();
    let cqes_of = |pick: fn(&Decision) -> bool| -> Vec<usize> {
        t.events
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(&e.event, Event::Nic(d) if pick(d)))
            .map(|(i, _)| t.outputs.iter().filter(|(e, o)| *e == i && matches!(o, Output::Cqe { .. })).count())
            .collect()
    };
    assert_eq!(cqes_of(|d| matches!(d, Decision::Command)), [0], "the command completes nothing itself");
    assert_eq!(cqes_of(|d| matches!(d, Decision::Flush { .. })), [1, 1, 1], "one WQE per flush step");
}

/// A WRITE into an MR whose memory the host has no region for: the responder's DMA write is lost (an IOMMU
/// would see a fault), the WRITE is acknowledged as any other, and the fault is counted by host memory.
#[test]
fn a_dma_write_that_lands_nowhere_changes_nothing_on_the_wire() {
    let (w, a, b) = pair();
    let gone = b.pd.reg_mr(0x7_0000_0000, 4096, wire::contract::verbs::access::ALL).unwrap();
    let mut wr = send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 1);
    (wr.remote_addr, wr.rkey) = (gone.addr, gone.rkey);
    a.qps[0].post_send(&wr).unwrap();
    let c = a.cq.wait(1, T).unwrap();
    assert_eq!(c[0].status, WcStatus::Success);
    assert_eq!(b.ctx.counter(Counter::tx_naks_remote_access), 0);
    assert_eq!(w.lock().unwrap().nodes[1].mem.faults(), 1);
}

/// A WRITE whose source the requester's DMA read cannot reach: the WQE fails with a local protection error
/// as its packet is built, completes at once, and the QP flushes what follows.
#[test]
fn a_gather_that_reaches_no_memory_fails_its_wqe() {
    let (_w, a, b) = pair();
    let gone = a.pd.reg_mr(0x7_0000_0000, 4096, wire::contract::verbs::access::ALL).unwrap();
    let mut wr = send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 1);
    wr.sg_list[0] = Sge { addr: gone.addr, length: 64, lkey: gone.lkey };
    a.qps[0].post_send_list(&[wr, send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 2)]).unwrap();
    let c = a.cq.wait(2, T).unwrap();
    assert_eq!(
        c.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        [(1, WcStatus::LocProtErr), (2, WcStatus::WrFlushErr)]
    );
}

/// A SEND with no receive WQE posted: an RNR NAK, counted as a receive dropped for want of a buffer; once a
/// WQE is posted the retry lands.
#[test]
fn a_send_without_a_receive_buffer_is_counted() {
    let (_w, a, b) = pair();
    a.qps[0].post_send(&send_wr(SendOp::Send, &a, &b, 0, 64, 1)).unwrap();
    while b.ctx.counter(Counter::tx_rnr_naks) == 0 {
        assert!(a.ctx.backend().progress());
    }
    assert_eq!(b.ctx.counter(Counter::rx_drop_no_rq_wqe), 1);
    b.qps[0].post_recv(&RecvWr { wr_id: 9, sg_list: vec![b.sge(0, 64)] }).unwrap();
    assert_eq!(a.cq.wait(1, T).unwrap()[0].status, WcStatus::Success);
    assert_eq!(b.cq.wait(1, T).unwrap()[0].wr_id, 9);
}
