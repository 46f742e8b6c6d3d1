//! The responder's check chain (rxe's CHK_OP_SEQ, CHK_OP_VALID, CHK_RKEY), each step driven by a request the
//! model's own requester never sends: every refusal is the NAK the spec names, and nothing is executed.

use driver::pair::{connect, forged_headers, open_host, Host};
use driver::*;
use model::net::{LinkConfig, World};
use wire::contract::regs::Counter;
use wire::ext::{AtomicEthRepr, RethRepr};
use wire::Opcode;

/// B expects PSN_A from A.
const PSN_A: u32 = 0x40;

fn setup(o: ConnectOpts) -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 17));
    let a = open_host(&w, 0, 1, 1 << 16, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 16, QpCap::default(), false).unwrap();
    connect(&a, 0, PSN_A, &b, 0, 0x80, &o).unwrap();
    b.buf.write(0, &[0xEE; 4096]).unwrap();
    (w, a, b)
}

/// Delivers `frame` to B and runs until idle; B's NAK counters' deltas (invalid request, remote access).
fn deliver(w: &SharedWorld, b: &Host, frame: Vec<u8>) -> (u64, u64) {
    let before = (b.ctx.counter(Counter::tx_naks_invalid_req), b.ctx.counter(Counter::tx_naks_remote_access));
    w.lock().unwrap().deliver(1, frame);
    w.lock().unwrap().run_until(u64::MAX / 2);
    (b.ctx.counter(Counter::tx_naks_invalid_req) - before.0, b.ctx.counter(Counter::tx_naks_remote_access) - before.1)
}

fn reth(b: &Host, len: u32) -> Option<RethRepr> {
    Some(RethRepr { va: b.mr.addr, rkey: b.mr.rkey, dma_len: len })
}

/// CHK_OP_SEQ: a MIDDLE with no message in progress, and a WRITE MIDDLE inside a SEND, are invalid requests.
#[test]
fn out_of_sequence_opcodes_are_invalid_requests() {
    let (w, a, b) = setup(ConnectOpts { path_mtu: 1, ..Default::default() });
    let h = forged_headers(&a, &b, Opcode::RDMA_WRITE_MIDDLE, PSN_A);
    assert_eq!(deliver(&w, &b, h.emit(&[1; 256])), (1, 0));
    assert_eq!(b.buf.read(0, 256).unwrap(), vec![0xEE; 256]);

    let (w, a, b) = setup(ConnectOpts { path_mtu: 1, ..Default::default() });
    b.qps[0]
        .post_recv(&RecvWr { wr_id: 1, sg_list: vec![Sge { addr: b.mr.addr + 0x1000, length: 1024, lkey: b.mr.lkey }] })
        .unwrap();
    let first = forged_headers(&a, &b, Opcode::SEND_FIRST, PSN_A);
    assert_eq!(deliver(&w, &b, first.emit(&[2; 256])), (0, 0), "a SEND begins");
    let mid = forged_headers(&a, &b, Opcode::RDMA_WRITE_MIDDLE, PSN_A + 1);
    assert_eq!(deliver(&w, &b, mid.emit(&[3; 256])), (1, 0), "a WRITE packet inside the SEND");

    // A SEND MIDDLE that every later check would let through (full PMTU, a receive WQE waiting).
    let (w, a, b) = setup(ConnectOpts { path_mtu: 1, ..Default::default() });
    b.qps[0]
        .post_recv(&RecvWr { wr_id: 1, sg_list: vec![Sge { addr: b.mr.addr, length: 1024, lkey: b.mr.lkey }] })
        .unwrap();
    let mid = forged_headers(&a, &b, Opcode::SEND_MIDDLE, PSN_A);
    assert_eq!(deliver(&w, &b, mid.emit(&[4; 256])), (1, 0), "a SEND MIDDLE with no SEND begun");
    assert_eq!(b.buf.read(0, 256).unwrap(), vec![0xEE; 256], "nothing placed");
}

/// CHK_OP_VALID: an operation the QP's access flags do not allow, and a READ or atomic when the responder
/// takes none (max_dest_rd_atomic 0), are invalid requests.
#[test]
fn operations_the_qp_does_not_allow_are_invalid_requests() {
    let cases: [(u32, u8, Opcode, &str); 4] = [
        (access::ALL & !access::REMOTE_WRITE, 16, Opcode::RDMA_WRITE_ONLY, "WRITE without remote write"),
        (access::ALL & !access::REMOTE_READ, 16, Opcode::RDMA_READ_REQUEST, "READ without remote read"),
        (access::ALL & !access::REMOTE_ATOMIC, 16, Opcode::FETCH_ADD, "atomic without remote atomic"),
        (access::ALL, 0, Opcode::RDMA_READ_REQUEST, "READ with max_dest_rd_atomic 0"),
    ];
    for (acc, rd, op, what) in cases {
        let (w, a, b) = setup(ConnectOpts { access: acc, max_rd_atomic: rd, ..Default::default() });
        let mut h = forged_headers(&a, &b, op, PSN_A);
        let payload: &[u8] = match op {
            Opcode::FETCH_ADD => {
                h.ext.atomic_eth = Some(AtomicEthRepr { va: b.mr.addr, rkey: b.mr.rkey, swap_add: 1, compare: 0 });
                &[]
            }
            Opcode::RDMA_READ_REQUEST => {
                h.ext.reth = reth(&b, 64);
                &[]
            }
            _ => {
                h.ext.reth = reth(&b, 8);
                &[9; 8]
            }
        };
        assert_eq!(deliver(&w, &b, h.emit(payload)), (1, 0), "{what}");
        assert_eq!(b.buf.read(0, 64).unwrap(), vec![0xEE; 64], "{what}: nothing executed");
    }
}

/// CHK_RKEY: READs and atomics check their R_Key and range as WRITEs do; an atomic at an address not 8-byte
/// aligned is an invalid request.
#[test]
fn reads_and_atomics_check_their_rkey_and_alignment() {
    let (w, a, b) = setup(ConnectOpts::default());
    let mut h = forged_headers(&a, &b, Opcode::RDMA_READ_REQUEST, PSN_A);
    h.ext.reth = Some(RethRepr { va: b.mr.addr, rkey: b.mr.rkey ^ 0x80, dma_len: 64 });
    assert_eq!(deliver(&w, &b, h.emit(&[])), (0, 1), "READ with a bad R_Key");

    let (w, a, b) = setup(ConnectOpts::default());
    let mut h = forged_headers(&a, &b, Opcode::COMPARE_SWAP, PSN_A);
    h.ext.atomic_eth =
        Some(AtomicEthRepr { va: b.mr.addr, rkey: b.mr.rkey ^ 0x80, swap_add: 1, compare: 0xEEEE_EEEE_EEEE_EEEE });
    assert_eq!(deliver(&w, &b, h.emit(&[])), (0, 1), "atomic with a bad R_Key");
    assert_eq!(b.buf.read(0, 8).unwrap(), vec![0xEE; 8]);

    let (w, a, b) = setup(ConnectOpts::default());
    let mut h = forged_headers(&a, &b, Opcode::FETCH_ADD, PSN_A);
    h.ext.atomic_eth = Some(AtomicEthRepr { va: b.mr.addr + 4, rkey: b.mr.rkey, swap_add: 1, compare: 0 });
    assert_eq!(deliver(&w, &b, h.emit(&[])), (1, 0), "atomic not 8-byte aligned");
    assert_eq!(b.buf.read(0, 16).unwrap(), vec![0xEE; 16]);
}

/// CHK_OP_SEQ, same operation: a SEND ONLY while a SEND is in progress is out of sequence too.
#[test]
fn a_new_message_inside_a_message_is_an_invalid_request() {
    let (w, a, b) = setup(ConnectOpts { path_mtu: 1, ..Default::default() });
    for wr_id in 1..=2 {
        let sg = vec![Sge { addr: b.mr.addr + 0x1000 * wr_id, length: 1024, lkey: b.mr.lkey }];
        b.qps[0].post_recv(&RecvWr { wr_id, sg_list: sg }).unwrap();
    }
    let first = forged_headers(&a, &b, Opcode::SEND_FIRST, PSN_A);
    assert_eq!(deliver(&w, &b, first.emit(&[2; 256])), (0, 0), "a SEND begins");
    let only = forged_headers(&a, &b, Opcode::SEND_ONLY, PSN_A + 1);
    assert_eq!(deliver(&w, &b, only.emit(&[3; 16])), (1, 0), "a SEND ONLY inside the SEND");
    assert_eq!(b.buf.read(0x2000, 16).unwrap(), vec![0; 16], "the second receive WQE is untouched");
}

/// The length checks at their boundaries: a FIRST whose RETH length its own payload covers should have been an
/// ONLY, a MIDDLE that carries the rest should have been a LAST, and a message is at most 2^31 bytes (a READ
/// or WRITE of exactly 2^31 passes the length check and fails the R_Key's range instead).
#[test]
fn lengths_are_checked_at_their_boundaries() {
    let o = ConnectOpts { path_mtu: 1, ..Default::default() };
    let (w, a, b) = setup(o);
    let mut h = forged_headers(&a, &b, Opcode::RDMA_WRITE_FIRST, PSN_A);
    h.ext.reth = reth(&b, 256);
    assert_eq!(deliver(&w, &b, h.emit(&[1; 256])), (1, 0), "FIRST carrying the whole WRITE");

    let (w, a, b) = setup(o);
    let mut h = forged_headers(&a, &b, Opcode::RDMA_WRITE_FIRST, PSN_A);
    h.ext.reth = reth(&b, 512);
    assert_eq!(deliver(&w, &b, h.emit(&[1; 256])), (0, 0), "FIRST of two packets");
    let mid = forged_headers(&a, &b, Opcode::RDMA_WRITE_MIDDLE, PSN_A + 1);
    assert_eq!(deliver(&w, &b, mid.emit(&[2; 256])), (1, 0), "MIDDLE carrying the rest");
    assert_eq!(b.buf.read(256, 256).unwrap(), vec![0xEE; 256]);

    for (op, len, want) in [
        (Opcode::RDMA_READ_REQUEST, 1u32 << 31, (0, 1)),
        (Opcode::RDMA_READ_REQUEST, (1u32 << 31) + 1, (1, 0)),
        (Opcode::RDMA_WRITE_FIRST, 1 << 31, (0, 1)),
        (Opcode::RDMA_WRITE_FIRST, (1 << 31) + 1, (1, 0)),
    ] {
        let (w, a, b) = setup(o);
        let mut h = forged_headers(&a, &b, op, PSN_A);
        h.ext.reth = reth(&b, len);
        let payload: &[u8] = if op == Opcode::RDMA_WRITE_FIRST { &[1; 256] } else { &[] };
        assert_eq!(deliver(&w, &b, h.emit(payload)), want, "{op:?} of {len} bytes");
    }
}

/// A UC or UD packet names no RC QP: dropped and counted with no answer (rxe's check_type_state), and the
/// QP it named goes on working.
#[test]
fn a_uc_or_ud_packet_is_not_an_rc_qps_to_answer() {
    let (w, a, b) = setup(ConnectOpts::default());
    w.lock().unwrap().capture();
    let before = b.ctx.counter(Counter::rx_drop_no_qp);
    let mut uc = forged_headers(&a, &b, Opcode::UC_RDMA_WRITE_ONLY, PSN_A);
    uc.ext.reth = reth(&b, 8);
    assert_eq!(deliver(&w, &b, uc.emit(&[9; 8])), (0, 0), "UC RDMA WRITE ONLY");
    let mut ud = forged_headers(&a, &b, Opcode::UD_SEND_ONLY, PSN_A);
    ud.ext.deth = Some(wire::ext::DethRepr { qkey: 0x1111, src_qp: a.qps[0].qpn });
    assert_eq!(deliver(&w, &b, ud.emit(&[9; 8])), (0, 0), "UD SEND ONLY");
    assert_eq!(b.ctx.counter(Counter::rx_drop_no_qp) - before, 2);
    assert!(w.lock().unwrap().captured().iter().all(|(_, n, _)| *n != 1), "no answer");
    assert_eq!(b.buf.read(0, 8).unwrap(), vec![0xEE; 8], "nothing executed");
    // The RC WRITE the UC one mimicked is taken.
    let mut rc = forged_headers(&a, &b, Opcode::RDMA_WRITE_ONLY, PSN_A);
    rc.ext.reth = reth(&b, 8);
    assert_eq!(deliver(&w, &b, rc.emit(&[9; 8])), (0, 0), "RC RDMA WRITE ONLY");
    assert_eq!(b.buf.read(0, 8).unwrap(), vec![9; 8]);
}

/// A request for a QP that cannot receive (still in RESET) is dropped and counted, with no answer.
#[test]
fn requests_for_a_qp_that_cannot_receive_are_dropped() {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 17));
    let a = open_host(&w, 0, 1, 1 << 16, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 2, 1 << 16, QpCap::default(), false).unwrap();
    connect(&a, 0, PSN_A, &b, 0, 0x80, &ConnectOpts::default()).unwrap();
    w.lock().unwrap().capture();
    let mut h = forged_headers(&a, &b, Opcode::RDMA_WRITE_ONLY, PSN_A);
    h.bth.dest_qp = b.qps[1].qpn;
    h.ext.reth = reth(&b, 8);
    let before = b.ctx.counter(Counter::rx_drop_qp_state);
    assert_eq!(deliver(&w, &b, h.emit(&[9; 8])), (0, 0));
    assert_eq!(b.ctx.counter(Counter::rx_drop_qp_state) - before, 1);
    assert!(w.lock().unwrap().captured().iter().all(|(_, n, _)| *n != 1), "no answer");
    assert_eq!(b.buf.read(0, 8).unwrap(), vec![0; 8]);
}

/// Behind a fatal NAK still waiting for owed READ responses, the responder takes no more requests: a SEND
/// arriving then is dropped, and its receive WQE is flushed, not filled.
#[test]
fn requests_behind_a_pending_fatal_nak_are_dropped() {
    let (_w, a, b) = setup(ConnectOpts::default());
    b.qps[0].post_recv(&RecvWr { wr_id: 7, sg_list: vec![b.sge(0x8000, 64)] }).unwrap();
    a.buf.write(0x8000, &[5; 64]).unwrap();
    let read = driver::pair::send_wr(SendOp::RdmaRead, &a, &b, 0, 32768, 1);
    let mut bad = driver::pair::send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 2);
    bad.rkey ^= 0x80;
    let send = driver::pair::send_wr(SendOp::Send, &a, &b, 0x8000, 64, 3);
    a.qps[0].post_send_list(&[read, bad, send]).unwrap();
    let got: Vec<_> = a.cq.wait(3, 10_000_000_000).unwrap().iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(got, vec![(1, WcStatus::Success), (2, WcStatus::RemAccessErr), (3, WcStatus::WrFlushErr)]);
    let r = b.cq.wait(1, 10_000_000_000).unwrap();
    assert_eq!((r[0].wr_id, r[0].status), (7, WcStatus::WrFlushErr));
    assert!(b.ctx.counter(Counter::rx_drop_qp_state) >= 1);
    assert_eq!(b.buf.read(0x8000, 64).unwrap(), vec![0; 64], "the SEND was not placed");
}

/// A zero-length WRITE names no memory: its VA and R_Key are not checked and nothing is written.
#[test]
fn a_zero_length_write_touches_no_memory() {
    let (w, a, b) = setup(ConnectOpts::default());
    let mut h = forged_headers(&a, &b, Opcode::RDMA_WRITE_ONLY, PSN_A);
    h.ext.reth = Some(RethRepr { va: 0, rkey: 0xDEAD, dma_len: 0 });
    w.lock().unwrap().capture();
    assert_eq!(deliver(&w, &b, h.emit(&[])), (0, 0));
    let w = w.lock().unwrap();
    let acks: Vec<_> =
        w.captured().iter().filter(|(_, n, _)| *n == 1).map(|(_, _, f)| wire::parse(f).unwrap()).collect();
    assert_eq!(acks.len(), 1);
    assert_eq!((acks[0].hdr.bth.opcode, acks[0].hdr.bth.psn.value()), (Opcode::ACKNOWLEDGE, PSN_A));
    assert_eq!(acks[0].hdr.ext.aeth.unwrap().syndrome & 0x60, 0, "an ACK, not a NAK");
}
