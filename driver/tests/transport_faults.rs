//! The transport faults found in review of the model against IBTA chapter 9 and rxe, each reproduced from
//! the wire exchange that shows it: READs longer than the window with a lost response, a fatal NAK behind
//! owed READ responses, gaps seen from the next response, responses for PSNs never sent, remote
//! invalidation of a plain MR, a duplicate READ after deregistration, the READ's own MSN, the 2^31 WRITE
//! limit and P_Key matching.

use driver::pair::{connect, forged_headers, open_host, send_wr, Host};
use driver::*;
use model::net::{FrameFault, LinkConfig, World};
use wire::contract::regs::Counter;
use wire::ext::{syndrome, AethRepr, RethRepr};
use wire::Opcode;

const T: u64 = 10_000_000_000;
/// PMTU 256: a READ of 256 * n bytes has n responses.
const MTU_256: u8 = 1;
/// Initial send PSNs of A's and B's QPs (B expects PSN_A from A).
const PSN_A: u32 = 0x11;
const PSN_B: u32 = 0x22;

fn setup() -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 3));
    let a = open_host(&w, 0, 1, 1 << 20, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 20, QpCap::default(), false).unwrap();
    let o = ConnectOpts { path_mtu: MTU_256, timeout: 8, ..Default::default() };
    connect(&a, 0, PSN_A, &b, 0, PSN_B, &o).unwrap();
    (w, a, b)
}

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(29).wrapping_add(salt)).collect()
}

/// Every completion on `h`'s CQ until the device is idle, as (wr_id, status).
fn drain(h: &Host) -> Vec<(u64, WcStatus)> {
    h.cq.wait(usize::MAX / 2, T).unwrap().iter().map(|c| (c.wr_id, c.status)).collect()
}

fn count(h: &Host, c: Counter) -> u64 {
    h.ctx.counter(c)
}

/// Fault 1: a READ of 200 responses (the window is 128 PSNs) loses one response in the middle. It completes,
/// and the gap is found from the next response, not by the ACK timer.
#[test]
fn read_longer_than_the_window_recovers_a_lost_response() {
    let (w, a, b) = setup();
    let data = pattern(256 * 200, 1);
    b.buf.write(0, &data).unwrap();
    // B sends nothing but this READ's responses: drop the 151st, past the window from the READ's first PSN.
    w.lock().unwrap().fault_frame(1, 150, FrameFault::Drop);
    a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 0, data.len() as u32, 1)).unwrap();
    assert_eq!(drain(&a), [(1, WcStatus::Success)]);
    assert_eq!(a.buf.read(0, data.len()).unwrap(), data);
    assert_eq!(count(&a, Counter::local_ack_timeouts), 0, "the gap is seen at response 152");
    let c = w.lock().unwrap().nodes[0].nic.check_invariants();
    assert_eq!(c, Ok(()));
}

/// Fault 1, at the tail: the last response of a long READ is lost. Only the ACK timer can find that; after it
/// fires, the READ is asked again from its first missing response only.
#[test]
fn read_longer_than_the_window_recovers_a_lost_last_response() {
    let (w, a, b) = setup();
    let data = pattern(256 * 200, 2);
    b.buf.write(0, &data).unwrap();
    w.lock().unwrap().fault_frame(1, 199, FrameFault::Drop);
    a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 0, data.len() as u32, 1)).unwrap();
    let sent_before = count(&b, Counter::tx_frames);
    assert_eq!(drain(&a), [(1, WcStatus::Success)]);
    assert_eq!(a.buf.read(0, data.len()).unwrap(), data);
    assert_eq!(count(&a, Counter::local_ack_timeouts), 1);
    assert_eq!(count(&b, Counter::tx_frames) - sent_before, 201, "200 responses, then the lost one again");
}

/// Fault 2: a valid READ, then a WRITE with a bad R_Key. The responder owes the READ's responses before the
/// NAK, so the READ succeeds and the WRITE fails; what follows is flushed.
#[test]
fn fatal_nak_fails_the_request_it_names_after_owed_read_responses() {
    let (_w, a, b) = setup();
    let data = pattern(256 * 8, 3);
    b.buf.write(0, &data).unwrap();
    a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 0, data.len() as u32, 1)).unwrap();
    let mut bad = send_wr(SendOp::RdmaWrite, &a, &b, 0x8000, 64, 2);
    bad.rkey ^= 0x80;
    a.qps[0].post_send(&bad).unwrap();
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0x9000, 64, 3)).unwrap();
    let got = drain(&a);
    assert_eq!(got, [(1, WcStatus::Success), (2, WcStatus::RemAccessErr), (3, WcStatus::WrFlushErr)]);
    assert_eq!(a.buf.read(0, data.len()).unwrap(), data, "the READ's data arrived");
    assert_eq!(count(&b, Counter::tx_naks_remote_access), 1);
    assert_eq!(b.buf.read(0x9000, 64).unwrap(), vec![0; 64], "nothing after the NAK was executed");
}

/// Fault 3: the last response of a READ is lost; the next READ's first response shows the gap at once.
#[test]
fn lost_last_read_response_is_retried_from_the_next_response() {
    let (w, a, b) = setup();
    let data = pattern(256 * 8, 4);
    b.buf.write(0, &data).unwrap();
    w.lock().unwrap().fault_frame(1, 3, FrameFault::Drop);
    a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 0, 1024, 1)).unwrap();
    a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 1024, 1024, 2)).unwrap();
    assert_eq!(drain(&a), [(1, WcStatus::Success), (2, WcStatus::Success)]);
    assert_eq!(a.buf.read(0, data.len()).unwrap(), data);
    assert_eq!(count(&a, Counter::local_ack_timeouts), 0);
}

/// Fault 3: a lost atomic ACK followed by another atomic's ACK: the first is asked again at once, and the
/// responder answers it from its saved result (executed once).
#[test]
fn lost_atomic_ack_is_retried_from_the_next_ack() {
    let (w, a, b) = setup();
    b.buf.write(0, &100u64.to_le_bytes()).unwrap();
    w.lock().unwrap().fault_frame(1, 0, FrameFault::Drop);
    for i in 0..2u64 {
        let mut fa = send_wr(SendOp::AtomicFetchAdd, &a, &b, 0, 8, i);
        fa.sg_list[0].addr = a.mr.addr + 0x100 + 8 * i;
        fa.compare_add = 1;
        a.qps[0].post_send(&fa).unwrap();
    }
    assert_eq!(drain(&a), [(0, WcStatus::Success), (1, WcStatus::Success)]);
    assert_eq!(count(&a, Counter::local_ack_timeouts), 0);
    assert_eq!(b.buf.read(0, 8).unwrap(), 102u64.to_le_bytes(), "each atomic executed once");
    assert_eq!(a.buf.read(0x100, 16).unwrap(), [100u64.to_le_bytes(), 101u64.to_le_bytes()].concat());
}

/// Fault 4: an ACK for a PSN the requester never sent completes nothing.
#[test]
fn ack_beyond_what_was_sent_is_ignored() {
    let (w, a, b) = setup();
    let data = pattern(65536, 5);
    a.buf.write(0, &data).unwrap();
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, data.len() as u32, 1)).unwrap();
    // Before A sends anything, "B" acknowledges the whole WRITE (256 packets).
    let mut h = forged_headers(&b, &a, Opcode::ACKNOWLEDGE, PSN_A + 255);
    h.bth.ack_req = false;
    h.ext.aeth = Some(AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn: 1 });
    w.lock().unwrap().deliver(0, h.emit(&[]));
    assert_eq!(drain(&a), [(1, WcStatus::Success)]);
    assert_eq!(count(&a, Counter::rx_drop_unsent_psn), 1);
    assert_eq!(b.buf.read(0, data.len()).unwrap(), data, "the WRITE really happened");
}

/// Fault 5: SEND with invalidate naming a plain MR is a Remote Invalid Request NAK; the MR stays.
#[test]
fn send_with_invalidate_of_a_plain_mr_is_nakked() {
    let (_w, a, b) = setup();
    let extra = b.pd.reg_mr(b.buf.addr, 64, wire::contract::verbs::access::ALL).unwrap();
    b.qps[0]
        .post_recv(&RecvWr { wr_id: 7, sg_list: vec![Sge { addr: b.mr.addr, length: 4096, lkey: b.mr.lkey }] })
        .unwrap();
    let mut s = send_wr(SendOp::SendWithInv, &a, &b, 0, 16, 1);
    s.imm_data = extra.rkey;
    a.qps[0].post_send(&s).unwrap();
    assert_eq!(drain(&a), [(1, WcStatus::RemInvReqErr)]);
    assert_eq!(drain(&b), [(7, WcStatus::WrFlushErr)]);
    assert_eq!(count(&b, Counter::tx_naks_invalid_req), 1);
    b.pd.dereg_mr(extra).expect("the MR was not invalidated");
}

/// Fault 6: a duplicate READ request for an MR deregistered since is refused, not replayed.
#[test]
fn duplicate_read_is_rechecked_against_the_mr_table() {
    let (w, a, b) = setup();
    let extra = b.pd.reg_mr(b.buf.addr + 0x1000, 1024, wire::contract::verbs::access::ALL).unwrap();
    b.buf.write(0x1000, &pattern(1024, 6)).unwrap();
    let mut rd = send_wr(SendOp::RdmaRead, &a, &b, 0, 1024, 1);
    rd.remote_addr = extra.addr;
    rd.rkey = extra.rkey;
    a.qps[0].post_send(&rd).unwrap();
    assert_eq!(drain(&a), [(1, WcStatus::Success)]);
    let (va, rkey) = (extra.addr, extra.rkey);
    b.pd.dereg_mr(extra).unwrap();
    let mut h = forged_headers(&a, &b, Opcode::RDMA_READ_REQUEST, PSN_A);
    h.ext.reth = Some(RethRepr { va, rkey, dma_len: 1024 });
    let sent = count(&b, Counter::tx_frames);
    w.lock().unwrap().deliver(1, h.emit(&[]));
    w.lock().unwrap().run_until(u64::MAX / 2);
    assert_eq!(count(&b, Counter::rx_drop_duplicate), 1);
    assert_eq!(count(&b, Counter::tx_naks_remote_access), 1);
    assert_eq!(count(&b, Counter::tx_frames) - sent, 1, "the NAK only: no READ response regenerated");
}

/// Fault 6: READ responses carry the READ's own MSN, not the MSN of requests executed after it.
#[test]
fn read_responses_carry_the_reads_own_msn() {
    let (w, a, b) = setup();
    w.lock().unwrap().capture();
    b.qps[0]
        .post_recv(&RecvWr { wr_id: 7, sg_list: vec![Sge { addr: b.mr.addr, length: 64, lkey: b.mr.lkey }] })
        .unwrap();
    // 100 responses take longer to send than the SEND behind the READ takes to arrive.
    a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 0, 256 * 100, 1)).unwrap();
    a.qps[0].post_send(&send_wr(SendOp::Send, &a, &b, 0x80000, 16, 2)).unwrap();
    assert_eq!(drain(&a), [(1, WcStatus::Success), (2, WcStatus::Success)]);
    let w = w.lock().unwrap();
    let last: Vec<u32> = w
        .captured()
        .iter()
        .filter(|(_, node, _)| *node == 1)
        .filter_map(|(_, _, f)| wire::parse(f).ok().map(|p| p.hdr))
        .filter(|h| h.bth.opcode == Opcode::RDMA_READ_RESPONSE_LAST)
        .filter_map(|h| h.ext.aeth.map(|x| x.msn))
        .collect();
    assert_eq!(last, [1], "the READ was the first message");
    let send_acks = w.captured().iter().filter(|(_, node, _)| *node == 1).filter_map(|(_, _, f)| {
        let h = wire::parse(f).ok()?.hdr;
        (h.bth.opcode == Opcode::ACKNOWLEDGE).then(|| h.ext.aeth.map(|x| x.msn))?
    });
    assert_eq!(send_acks.max(), Some(2), "the SEND was the second, and was executed before the READ finished");
}

/// Fault 6: a WRITE longer than 2^31 bytes is an invalid request (before the R_Key is looked at).
#[test]
fn write_longer_than_2_pow_31_is_an_invalid_request() {
    let (w, a, b) = setup();
    let mut h = forged_headers(&a, &b, Opcode::RDMA_WRITE_FIRST, PSN_A);
    h.ext.reth = Some(RethRepr { va: b.mr.addr, rkey: b.mr.rkey, dma_len: (1 << 31) + 256 });
    w.lock().unwrap().deliver(1, h.emit(&[0xAB; 256]));
    w.lock().unwrap().run_until(u64::MAX / 2);
    assert_eq!(count(&b, Counter::tx_naks_invalid_req), 1);
    assert_eq!(count(&b, Counter::tx_naks_remote_access), 0);
    assert_eq!(b.buf.read(0, 256).unwrap(), vec![0; 256]);
}

/// Fault 6: P_Keys match on their low 15 bits with one full member: 0x7FFF (limited) reaches the default
/// key 0xFFFF; another partition does not.
#[test]
fn pkey_matching_follows_the_membership_rule() {
    let (w, a, b) = setup();
    for (pkey, psn, written) in [(0x7FFFu16, PSN_A, true), (0xFFFE, PSN_A + 1, false)] {
        let mut h = forged_headers(&a, &b, Opcode::RDMA_WRITE_ONLY, psn);
        h.bth.pkey = pkey;
        h.ext.reth = Some(RethRepr { va: b.mr.addr + u64::from(psn), rkey: b.mr.rkey, dma_len: 4 });
        w.lock().unwrap().deliver(1, h.emit(&[1, 2, 3, 4]));
        w.lock().unwrap().run_until(u64::MAX / 2);
        let got = b.buf.read(psn as usize, 4).unwrap();
        assert_eq!(got == [1, 2, 3, 4], written, "P_Key {pkey:#x}");
    }
    assert_eq!(count(&b, Counter::rx_drop_bad_bth), 1);
}
