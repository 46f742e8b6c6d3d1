//! What the responder answers, read off the wire: the MSN each message's reply carries, ACKs merged while
//! the responder is busy, duplicate READs replayed over the range they ask for (or ignored when it is not
//! the original's), and a WRITE with immediate waiting for a receive WQE.

use driver::pair::{connect, forged_headers, open_host, send_wr, Host};
use driver::*;
use model::net::{LinkConfig, World};
use wire::contract::regs::Counter;
use wire::ext::RethRepr;
use wire::Opcode;

const T: u64 = 10_000_000_000;
const PSN_A: u32 = 0x40;

fn setup(o: ConnectOpts) -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 19));
    let a = open_host(&w, 0, 1, 1 << 20, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 20, QpCap::default(), false).unwrap();
    connect(&a, 0, PSN_A, &b, 0, 0x80, &o).unwrap();
    w.lock().unwrap().capture();
    (w, a, b)
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed)).collect()
}

/// B's replies from capture entry `from` on: (opcode, PSN, AETH MSN if any, payload).
fn replies(w: &World, from: usize) -> Vec<(Opcode, u32, Option<u32>, Vec<u8>)> {
    w.captured()[from..]
        .iter()
        .filter(|(_, n, _)| *n == 1)
        .map(|(_, _, f)| {
            let p = wire::parse(f).expect("valid");
            (p.hdr.bth.opcode, p.hdr.bth.psn.value(), p.hdr.ext.aeth.map(|a| a.msn), p.payload.to_vec())
        })
        .collect()
}

fn done(h: &Host, wr_id: u64) {
    let c = h.cq.wait(1, T).unwrap();
    assert_eq!((c[0].wr_id, c[0].status), (wr_id, WcStatus::Success));
}

/// Every message moves the MSN by one, whatever its operation, and its last reply carries it.
#[test]
fn each_message_reply_carries_the_next_msn() {
    let (w, a, b) = setup(ConnectOpts::default());
    for i in 0..6 {
        b.qps[0].post_recv(&RecvWr { wr_id: 100 + i, sg_list: vec![b.sge(0x10000 * (i + 1), 4096)] }).unwrap();
    }
    let mut ops = vec![
        send_wr(SendOp::Send, &a, &b, 0, 3000, 1),
        send_wr(SendOp::RdmaWrite, &a, &b, 0, 3000, 2),
        send_wr(SendOp::RdmaRead, &a, &b, 0x8000, 3000, 3),
        send_wr(SendOp::AtomicFetchAdd, &a, &b, 0x9000, 8, 4),
        send_wr(SendOp::AtomicCmpSwp, &a, &b, 0x9000, 8, 5),
        send_wr(SendOp::RdmaWriteWithImm, &a, &b, 0, 10, 6),
        send_wr(SendOp::Send, &a, &b, 0, 0, 7),
    ];
    for (i, wr) in ops.drain(..).enumerate() {
        let from = w.lock().unwrap().captured().len();
        a.qps[0].post_send(&wr).unwrap();
        done(&a, wr.wr_id);
        let r = replies(&w.lock().unwrap(), from);
        let last = r.iter().rev().find(|x| x.2.is_some()).expect("a reply with an AETH");
        assert_eq!(last.2, Some(i as u32 + 1), "{:?}: {r:?}", wr.opcode);
    }
}

/// ACKs queued behind READ responses merge into one: the last ACK covers every WRITE before it. As many
/// WRITEs as fit the requester's window beside the READ (7 on the board profile, 31 on the large one).
#[test]
fn acks_queued_behind_read_responses_merge() {
    let (w, a, b) = setup(ConnectOpts::default());
    let n = a.ctx.query_device().wqe_window as u64 - 1;
    let mut wrs = vec![send_wr(SendOp::RdmaRead, &a, &b, 0, 262144, 0)];
    wrs.extend((1..=n).map(|i| send_wr(SendOp::RdmaWrite, &a, &b, 0x80000 + 64 * i, 64, i)));
    a.qps[0].post_send_list(&wrs).unwrap();
    let got = a.cq.wait(n as usize + 1, T).unwrap();
    assert_eq!(got.len(), n as usize + 1);
    assert!(got.iter().all(|c| c.status == WcStatus::Success));
    let r = replies(&w.lock().unwrap(), 0);
    let acks: Vec<_> = r.iter().filter(|x| x.0 == Opcode::ACKNOWLEDGE).collect();
    assert_eq!(acks.len(), 1, "one ACK for {n} WRITEs: {acks:?}");
    // READ: PSNs 0x40..0x140; the WRITEs from 0x140 on.
    assert_eq!((acks[0].1, acks[0].2), (0x140 + n as u32 - 1, Some(n as u32 + 1)));
    assert_eq!(b.ctx.counter(Counter::retransmitted_packets) + a.ctx.counter(Counter::retransmitted_packets), 0);
}

/// A READ of 4 KiB (PSNs 0x40..0x44, PMTU 1024) is done; then duplicates of it arrive.
fn after_a_read(rkey_of_read: Option<u32>, len: u32) -> (SharedWorld, Host, Host) {
    let (w, a, b) = setup(ConnectOpts::default());
    b.buf.write(0, &pattern(4096, 3)).unwrap();
    let mut rd = send_wr(SendOp::RdmaRead, &a, &b, 0, len, 1);
    if let Some(k) = rkey_of_read {
        rd.rkey = k;
    }
    a.qps[0].post_send(&rd).unwrap();
    done(&a, 1);
    (w, a, b)
}

fn dup_read(w: &SharedWorld, a: &Host, b: &Host, psn: u32, reth: RethRepr) -> Vec<(Opcode, u32, Option<u32>, Vec<u8>)> {
    let mut h = forged_headers(a, b, Opcode::RDMA_READ_REQUEST, psn);
    h.ext.reth = Some(reth);
    let from = w.lock().unwrap().captured().len();
    w.lock().unwrap().deliver(1, h.emit(&[]));
    let t = w.lock().unwrap().now;
    w.lock().unwrap().run_until(t + 1_000_000_000);
    replies(&w.lock().unwrap(), from)
}

#[test]
fn a_duplicate_read_is_replayed_over_the_range_it_asks_for() {
    let (w, a, b) = after_a_read(None, 4096);
    let data = pattern(4096, 3);
    let (va, rkey) = (b.mr.addr, b.mr.rkey);
    use Opcode as O;
    // From its second packet to the end: MIDDLE, MIDDLE, LAST, with the READ's own MSN on the LAST.
    let r = dup_read(&w, &a, &b, PSN_A + 1, RethRepr { va: va + 1024, rkey, dma_len: 3072 });
    let got: Vec<_> = r.iter().map(|x| (x.0, x.1, x.2)).collect();
    assert_eq!(
        got,
        vec![
            (O::RDMA_READ_RESPONSE_MIDDLE, PSN_A + 1, None),
            (O::RDMA_READ_RESPONSE_MIDDLE, PSN_A + 2, None),
            (O::RDMA_READ_RESPONSE_LAST, PSN_A + 3, Some(1))
        ]
    );
    assert_eq!(r.iter().flat_map(|x| x.3.clone()).collect::<Vec<_>>(), data[1024..]);
    // Only its second packet: the reply ends where the request does, as rxe's does.
    let r = dup_read(&w, &a, &b, PSN_A + 1, RethRepr { va: va + 1024, rkey, dma_len: 1024 });
    let got: Vec<_> = r.iter().map(|x| (x.0, x.1)).collect();
    assert_eq!(got, vec![(O::RDMA_READ_RESPONSE_LAST, PSN_A + 1)]);
    assert_eq!(r[0].3, data[1024..2048]);
    // The whole READ again, from its first PSN: FIRST .. LAST.
    let r = dup_read(&w, &a, &b, PSN_A, RethRepr { va, rkey, dma_len: 4096 });
    assert_eq!(r.first().map(|x| x.0), Some(O::RDMA_READ_RESPONSE_FIRST));
    assert_eq!(r.len(), 4);
}

#[test]
fn a_duplicate_read_outside_the_original_is_ignored() {
    let (w, a, b) = after_a_read(None, 4096);
    let (va, rkey) = (b.mr.addr, b.mr.rkey);
    for (what, reth) in [
        ("starts before the READ", RethRepr { va: va - 1, rkey, dma_len: 3073 }),
        ("ends after the READ", RethRepr { va: va + 1024, rkey, dma_len: 3073 }),
        ("another R_Key", RethRepr { va: va + 1024, rkey: rkey ^ 0x80, dma_len: 3072 }),
        ("past the end, inside the MR", RethRepr { va: va + 4096, rkey, dma_len: 1024 }),
        ("more packets than the READ has after its PSN", RethRepr { va: va + 1023, rkey, dma_len: 3073 }),
    ] {
        let r = dup_read(&w, &a, &b, PSN_A + 1, reth);
        assert!(r.is_empty(), "{what}: {:?}", r.iter().map(|x| (x.0, x.1, x.2, x.3.len())).collect::<Vec<_>>());
    }
    assert_eq!(b.ctx.counter(Counter::tx_naks_remote_access), 0);
}

/// A zero-length READ names no memory: neither it nor its duplicate checks the R_Key.
#[test]
fn a_duplicate_zero_length_read_is_replayed_without_a_key_check() {
    let (w, a, b) = after_a_read(Some(0xDEAD), 0);
    let r = dup_read(&w, &a, &b, PSN_A, RethRepr { va: b.mr.addr, rkey: 0xDEAD, dma_len: 0 });
    let got: Vec<_> = r.iter().map(|x| (x.0, x.1, x.3.len())).collect();
    assert_eq!(got, vec![(Opcode::RDMA_READ_RESPONSE_ONLY, PSN_A, 0)]);
    assert_eq!(b.ctx.counter(Counter::tx_naks_remote_access), 0);
}

/// A WRITE with immediate consumes a receive WQE: with none posted it is refused with RNR NAKs and placed
/// only once one is.
#[test]
fn a_write_with_immediate_waits_for_a_receive_wqe() {
    let (w, a, b) = setup(ConnectOpts { min_rnr_timer: 1, ..Default::default() });
    a.buf.write(0, &pattern(2048, 8)).unwrap();
    // One packet (ONLY WITH IMMEDIATE): the RNR NAK refuses its data with it.
    let mut wr = send_wr(SendOp::RdmaWriteWithImm, &a, &b, 0, 1000, 1);
    wr.imm_data = 0x1234;
    a.qps[0].post_send(&wr).unwrap();
    let t = w.lock().unwrap().now;
    w.lock().unwrap().run_until(t + 1_000_000_000);
    assert!(b.ctx.counter(Counter::tx_rnr_naks) >= 1, "RNR NAKed");
    assert_eq!(b.buf.read(0, 1000).unwrap(), vec![0; 1000], "not placed while refused");
    b.qps[0].post_recv(&RecvWr { wr_id: 9, sg_list: vec![] }).unwrap();
    done(&a, 1);
    let r = b.cq.wait(1, T).unwrap();
    assert_eq!((r[0].wr_id, r[0].opcode, r[0].imm_data, r[0].byte_len), (9, WcOpcode::RecvRdmaWithImm, 0x1234, 1000));
    assert_eq!(b.buf.read(0, 1000).unwrap(), pattern(1000, 8));
    assert!(a.ctx.counter(Counter::rx_rnr_naks) >= 1);
}
