//! What completions carry and what the driver builds on them: CQE fields on success, error and flush (QP
//! number, opcode, WQE index, vendor syndrome), the queues' accounting over many more WRs than they hold,
//! scatter/gather across several SGEs, stale answers, and which retries count against retry_cnt.

use driver::pair::{connect, open_host, send_wr, Host};
use driver::*;
use model::net::{FrameFault, LinkConfig, World};
use wire::contract::regs::Counter;
use wire::ext::syndrome;

const T: u64 = 10_000_000_000;

fn setup_with(cap: QpCap, o: ConnectOpts) -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 13));
    let a = open_host(&w, 0, 1, 1 << 16, cap, false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 16, cap, false).unwrap();
    connect(&a, 0, 0x10, &b, 0, 0x20, &o).unwrap();
    (w, a, b)
}

fn small() -> (SharedWorld, Host, Host) {
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 4, ..Default::default() };
    setup_with(cap, ConnectOpts { path_mtu: 1, timeout: 8, ..Default::default() })
}

fn all(h: &Host) -> Vec<Wc> {
    h.cq.wait(usize::MAX / 2, T).unwrap()
}

/// Ten WRs one after the other through a 4-entry SQ: each CQE's WQE index frees its slot.
#[test]
fn queues_smaller_than_the_work_keep_turning() {
    let (_w, a, b) = small();
    for i in 0..10 {
        a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, i)).unwrap();
        let c = all(&a);
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].wr_id, c[0].status, c[0].opcode, c[0].qp_num),
            (i, WcStatus::Success, WcOpcode::RdmaWrite, a.qps[0].qpn)
        );
    }
    // The same after an error: every WR posted to the QP in ERR is flushed, and the slots come back.
    let mut bad = send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 100);
    bad.rkey ^= 0x80;
    a.qps[0].post_send(&bad).unwrap();
    let c = all(&a);
    assert_eq!(c[0].status, WcStatus::RemAccessErr);
    assert_eq!(c[0].vendor_err, syndrome::NAK_REMOTE_ACCESS, "the NAK's syndrome is the vendor error");
    assert_eq!(a.ctx.counter(Counter::error_cqes), 1);
    for i in 0..10 {
        a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 0, 64, 200 + i)).unwrap();
        let c = all(&a);
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].wr_id, c[0].status, c[0].opcode, c[0].qp_num),
            (200 + i, WcStatus::WrFlushErr, WcOpcode::RdmaRead, a.qps[0].qpn),
            "flushed WR {i}"
        );
    }
    // Receive WQEs are flushed as receives, and their slots come back too.
    for i in 0..10 {
        b.qps[0].post_recv(&RecvWr { wr_id: 300 + i, sg_list: vec![b.sge(0, 64)] }).unwrap();
        let c = all(&b);
        assert!(!c.is_empty());
        let last = c.last().unwrap();
        assert_eq!(
            (last.wr_id, last.status, last.opcode, last.qp_num),
            (300 + i, WcStatus::WrFlushErr, WcOpcode::Recv, b.qps[0].qpn)
        );
    }
}

/// Ten SENDs through a 4-entry RQ: each receive CQE names its QP and its WQE index, which frees the slot.
#[test]
fn receive_completions_free_their_slots() {
    let (_w, a, b) = small();
    for i in 0..10 {
        b.qps[0].post_recv(&RecvWr { wr_id: 500 + i, sg_list: vec![b.sge(0, 64)] }).unwrap();
        a.qps[0].post_send(&send_wr(SendOp::Send, &a, &b, 0, 64, i)).unwrap();
        assert_eq!(all(&a)[0].status, WcStatus::Success);
        let r = all(&b);
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].wr_id, r[0].status, r[0].opcode, r[0].qp_num, r[0].byte_len),
            (500 + i, WcStatus::Success, WcOpcode::Recv, b.qps[0].qpn, 64)
        );
    }
}

/// A SEND gathered from three SGEs and scattered into three others of other sizes, across packets.
#[test]
fn gather_and_scatter_across_sges() {
    let (_w, a, b) = small();
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 13 + 1) as u8).collect();
    a.buf.write(0x100, &data[..100]).unwrap();
    a.buf.write(0x1000, &data[100..700]).unwrap();
    a.buf.write(0x3000, &data[700..]).unwrap();
    let rsg = vec![b.sge(0x200, 300), b.sge(0x2000, 300), b.sge(0x4000, 500)];
    b.qps[0].post_recv(&RecvWr { wr_id: 9, sg_list: rsg }).unwrap();
    let mut s = send_wr(SendOp::Send, &a, &b, 0, 0, 1);
    s.sg_list = vec![a.sge(0x100, 100), a.sge(0x1000, 600), a.sge(0x3000, 300)];
    a.qps[0].post_send(&s).unwrap();
    assert_eq!(all(&a)[0].status, WcStatus::Success);
    let r = all(&b);
    assert_eq!((r[0].status, r[0].byte_len), (WcStatus::Success, 1000));
    let got =
        [b.buf.read(0x200, 300).unwrap(), b.buf.read(0x2000, 300).unwrap(), b.buf.read(0x4000, 400).unwrap()].concat();
    assert_eq!(got, data);
    assert_eq!(b.buf.read(0x4000 + 400, 100).unwrap(), vec![0; 100], "the last SGE's tail is untouched");
}

/// A duplicate of the first atomic's ACK arrives while the second atomic is outstanding: it is stale, and the
/// second atomic gets its own original value.
#[test]
fn a_stale_atomic_ack_completes_nothing() {
    let (w, a, b) = small();
    b.buf.write(0, &7u64.to_le_bytes()).unwrap();
    w.lock().unwrap().fault_frame(1, 0, FrameFault::Duplicate);
    for i in 0..2u64 {
        let mut fa = send_wr(SendOp::AtomicFetchAdd, &a, &b, 0, 8, i);
        fa.sg_list[0].addr = a.mr.addr + 0x100 + 8 * i;
        fa.compare_add = 10;
        a.qps[0].post_send(&fa).unwrap();
    }
    let st: Vec<_> = all(&a).iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(st, [(0, WcStatus::Success), (1, WcStatus::Success)]);
    assert_eq!(a.buf.read(0x100, 16).unwrap(), [7u64.to_le_bytes(), 17u64.to_le_bytes()].concat());
    assert_eq!(b.buf.read(0, 8).unwrap(), 27u64.to_le_bytes());
}

/// A gap retry counts against retry_cnt: with retry_cnt 1, a READ whose response is lost, then lost again
/// after the retry, fails at the ACK timeout that follows.
#[test]
fn a_gap_retry_counts_against_retry_cnt() {
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 4, ..Default::default() };
    let (w, a, b) = setup_with(cap, ConnectOpts { path_mtu: 1, timeout: 8, retry_cnt: 1, ..Default::default() });
    // B's responses: 0 1(lost) 2 3, then after the gap retry 1(lost) 2 3.
    w.lock().unwrap().fault_frame(1, 1, FrameFault::Drop);
    w.lock().unwrap().fault_frame(1, 4, FrameFault::Drop);
    a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 0, 1024, 1)).unwrap();
    let c = all(&a);
    assert_eq!((c[0].wr_id, c[0].status), (1, WcStatus::RetryExcErr));
    assert_eq!(a.ctx.counter(Counter::local_ack_timeouts), 1);
}

/// A PSN sequence NAK counts against retry_cnt too: with retry_cnt 1, a WRITE packet lost, then its
/// retransmission lost, fails at the ACK timeout (the responder NAKs a sequence error only once).
#[test]
fn a_sequence_nak_counts_against_retry_cnt() {
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 4, ..Default::default() };
    let (w, a, b) = setup_with(cap, ConnectOpts { path_mtu: 1, timeout: 8, retry_cnt: 1, ..Default::default() });
    // A's packets: 0 1(lost) 2 3, then after the NAK 1(lost) 2 3.
    w.lock().unwrap().fault_frame(0, 1, FrameFault::Drop);
    w.lock().unwrap().fault_frame(0, 4, FrameFault::Drop);
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, 1024, 1)).unwrap();
    let c = all(&a);
    assert_eq!((c[0].wr_id, c[0].status), (1, WcStatus::RetryExcErr));
    assert_eq!((a.ctx.counter(Counter::rx_naks), a.ctx.counter(Counter::local_ack_timeouts)), (1, 1));
}

/// Responses that carry no progress (stale ACKs) do not postpone the local ACK timer: a WRITE whose ACK is
/// lost times out at its deadline however many stale ACKs arrive meanwhile.
#[test]
fn stale_acks_do_not_postpone_the_timeout() {
    let (w, a, b) = small(); // timeout 8: 1.05 ms
    w.lock().unwrap().fault_frame(1, 1, FrameFault::Drop); // the second WRITE's ACK
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 1)).unwrap();
    assert_eq!(all(&a)[0].status, WcStatus::Success);
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 64, 64, 2)).unwrap();
    let t0 = w.lock().unwrap().now;
    let mut stale = driver::pair::forged_headers(&b, &a, wire::Opcode::ACKNOWLEDGE, 0x10);
    stale.ext.aeth = Some(wire::ext::AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn: 1 });
    for k in 1..=6 {
        w.lock().unwrap().run_until(t0 + k * 200_000_000);
        w.lock().unwrap().deliver(0, stale.emit(&[]));
    }
    w.lock().unwrap().run_until(t0 + 1_150_000_000);
    assert_eq!(a.ctx.counter(Counter::local_ack_timeouts), 1, "timed out at its deadline");
    assert_eq!(all(&a)[0].status, WcStatus::Success, "the retransmission is acknowledged");
}

/// Runs 100 us: what was posted is on the wire, and no ACK timer (1.05 ms) has fired.
fn sent_by_now(w: &SharedWorld) {
    let t = w.lock().unwrap().now;
    w.lock().unwrap().run_until(t + 100_000_000);
}

/// A NAK with code 4 (Remote Invalid RD Request) completes the WQE with REM_INV_RD_REQ_ERR.
#[test]
fn an_invalid_rd_request_nak_has_its_own_status() {
    let (w, a, b) = small();
    w.lock().unwrap().fault_frame(1, 0, FrameFault::Drop);
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 1)).unwrap();
    sent_by_now(&w);
    let mut nak = driver::pair::forged_headers(&b, &a, wire::Opcode::ACKNOWLEDGE, 0x10);
    nak.ext.aeth = Some(wire::ext::AethRepr { syndrome: 0x60 | 4, msn: 0 });
    w.lock().unwrap().deliver(0, nak.emit(&[]));
    let c = all(&a);
    assert_eq!((c[0].wr_id, c[0].status, c[0].vendor_err), (1, WcStatus::RemInvRdReqErr, 0x64));
}

/// A READ response at the PSN of an outstanding WRITE is not an answer to it: ignored, nothing placed, and
/// the WRITE completes when its ACK comes.
#[test]
fn a_read_response_for_a_write_is_ignored() {
    let (w, a, b) = small();
    w.lock().unwrap().fault_frame(1, 0, FrameFault::Drop);
    a.buf.write(0, &[0x33; 256]).unwrap();
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, 256, 1)).unwrap();
    sent_by_now(&w);
    let mut resp = driver::pair::forged_headers(&b, &a, wire::Opcode::RDMA_READ_RESPONSE_ONLY, 0x10);
    resp.ext.aeth = Some(wire::ext::AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn: 1 });
    w.lock().unwrap().deliver(0, resp.emit(&[0x44; 256]));
    let c = all(&a);
    assert_eq!((c[0].wr_id, c[0].status), (1, WcStatus::Success));
    assert_eq!(a.buf.read(0, 256).unwrap(), vec![0x33; 256], "nothing placed");
    assert_eq!(b.buf.read(0, 256).unwrap(), vec![0x33; 256]);
}

/// A response for a QP that cannot send (still in RTR) is dropped for its state, before any PSN check.
#[test]
fn responses_for_a_qp_in_rtr_are_dropped_for_its_state() {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 13));
    let a = open_host(&w, 0, 1, 1 << 16, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 16, QpCap::default(), false).unwrap();
    let init = QpAttr { qp_state: Some(QpState::Init), port_num: 1, ..Default::default() };
    a.qps[0].modify(&init, attr::STATE | attr::PKEY_INDEX | attr::PORT | attr::ACCESS_FLAGS).unwrap();
    let mut rtr = QpAttr { qp_state: Some(QpState::Rtr), path_mtu: 3, dest_qp_num: b.qps[0].qpn, ..Default::default() };
    (rtr.ah.dgid, rtr.ah.dmac, rtr.max_dest_rd_atomic) = (b.gid, b.mac, 1);
    let mask = attr::STATE | attr::AV | attr::PATH_MTU | attr::DEST_QPN | attr::RQ_PSN;
    a.qps[0].modify(&rtr, mask | attr::MAX_DEST_RD_ATOMIC | attr::MIN_RNR_TIMER).unwrap();
    let mut ack = driver::pair::forged_headers(&b, &a, wire::Opcode::ACKNOWLEDGE, 0);
    ack.ext.aeth = Some(wire::ext::AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn: 1 });
    w.lock().unwrap().deliver(0, ack.emit(&[]));
    let t = w.lock().unwrap().now;
    w.lock().unwrap().run_until(t + 1_000_000);
    assert_eq!(a.ctx.counter(Counter::rx_drop_qp_state), 1);
    assert_eq!(a.ctx.counter(Counter::rx_drop_unsent_psn), 0);
}
