//! The responder's check chain (rxe's CHK_OP_SEQ, CHK_OP_VALID, CHK_RKEY), each step driven by a request the
//! model's own requester never sends: every refusal is the NAK the spec names, and nothing is executed.

use driver::pair::{connect, forged_headers, open_host, Host};
use driver::*;
use model::net::{LinkConfig, World};
use model::NicConfig;
use std::cell::RefCell;
use std::rc::Rc;
use wire::contract::regs::Counter;
use wire::ext::{AtomicEthRepr, RethRepr};
use wire::Opcode;

/// B expects PSN_A from A.
const PSN_A: u32 = 0x40;

fn setup(o: ConnectOpts) -> (Rc<RefCell<World>>, Host, Host) {
    let w = Rc::new(RefCell::new(World::pair(NicConfig::default(), LinkConfig::default(), 17)));
    let a = open_host(&w, 0, 1, 1 << 16, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 16, QpCap::default(), false).unwrap();
    connect(&a, 0, PSN_A, &b, 0, 0x80, &o).unwrap();
    b.buf.write(0, &[0xEE; 4096]).unwrap();
    (w, a, b)
}

/// Delivers `frame` to B and runs until idle; B's NAK counters' deltas (invalid request, remote access).
fn deliver(w: &Rc<RefCell<World>>, b: &Host, frame: Vec<u8>) -> (u64, u64) {
    let before = (b.ctx.counter(Counter::tx_naks_invalid_req), b.ctx.counter(Counter::tx_naks_remote_access));
    w.borrow_mut().deliver(1, frame);
    w.borrow_mut().run_until(u64::MAX / 2);
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

/// CHK_OP_VALID: an operation the QP's access flags do not allow, a READ or atomic when the responder takes
/// none (max_dest_rd_atomic 0), and a UC opcode on an RC QP are invalid requests.
#[test]
fn operations_the_qp_does_not_allow_are_invalid_requests() {
    let cases: [(u32, u8, Opcode, &str); 5] = [
        (access::ALL & !access::REMOTE_WRITE, 16, Opcode::RDMA_WRITE_ONLY, "WRITE without remote write"),
        (access::ALL & !access::REMOTE_READ, 16, Opcode::RDMA_READ_REQUEST, "READ without remote read"),
        (access::ALL & !access::REMOTE_ATOMIC, 16, Opcode::FETCH_ADD, "atomic without remote atomic"),
        (access::ALL, 0, Opcode::RDMA_READ_REQUEST, "READ with max_dest_rd_atomic 0"),
        (access::ALL, 16, Opcode(0x2A), "UC RDMA WRITE ONLY on an RC QP"),
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
