//! Every error completion the model produces, each from the wire exchange (or the local check) that causes
//! it: the status on both sides, the order (what follows is flushed), the counters, the exact number of
//! transmissions where retries run out, and that nothing was written outside the buffer the WR named.

use driver::pair::{connect, open_host, send_wr, Host};
use driver::*;
use model::net::{FrameFault, Impairments, LinkConfig, World};
use wire::contract::regs::Counter;
use wire::ext::{syndrome, AethRepr};
use wire::{BthRepr, ExtHeaders, Opcode, Psn, RoceHeaders};

const T: u64 = 10_000_000_000;
const PSN_A: u32 = 0x100;
const PSN_B: u32 = 0x200;
/// A byte pattern that no WR writes: what "untouched" looks like.
const UNTOUCHED: u8 = 0xEE;

fn setup_with(o: ConnectOpts, psn_a: u32) -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 9));
    let a = open_host(&w, 0, 1, 1 << 16, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 16, QpCap::default(), false).unwrap();
    connect(&a, 0, psn_a, &b, 0, PSN_B, &o).unwrap();
    for h in [&a, &b] {
        h.buf.write(0, &[UNTOUCHED; 1 << 16]).unwrap();
    }
    (w, a, b)
}

fn setup() -> (SharedWorld, Host, Host) {
    setup_with(ConnectOpts { path_mtu: 1, timeout: 8, ..Default::default() }, PSN_A)
}

fn drain(h: &Host) -> Vec<(u64, WcStatus)> {
    h.cq.wait(usize::MAX / 2, T).unwrap().iter().map(|c| (c.wr_id, c.status)).collect()
}

/// Counter deltas over `f`, per host.
fn deltas(hs: [&Host; 2], cs: &[Counter], f: impl FnOnce()) -> [Vec<u64>; 2] {
    let before: Vec<Vec<u64>> = hs.iter().map(|h| cs.iter().map(|&c| h.ctx.counter(c)).collect()).collect();
    f();
    [0, 1].map(|i| cs.iter().zip(&before[i]).map(|(&c, b)| hs[i].ctx.counter(c) - b).collect())
}

/// Whether `h`'s buffer still holds the untouched pattern outside `[off, off + len)`.
fn untouched_outside(h: &Host, off: usize, len: usize) -> bool {
    let all = h.buf.read(0, 1 << 16).unwrap();
    all.iter().enumerate().all(|(i, &x)| (off..off + len).contains(&i) || x == UNTOUCHED)
}

/// A SEND longer than the receive buffer: LOC_LEN_ERR at the responder (which NAKs Invalid Request),
/// REM_INV_REQ_ERR at the requester, the rest flushed on both sides.
#[test]
fn send_longer_than_the_receive_buffer() {
    let (_w, a, b) = setup();
    b.qps[0].post_recv(&RecvWr { wr_id: 10, sg_list: vec![b.sge(0x1000, 64)] }).unwrap();
    b.qps[0].post_recv(&RecvWr { wr_id: 11, sg_list: vec![b.sge(0x2000, 64)] }).unwrap();
    let d = deltas([&a, &b], &[Counter::rx_naks, Counter::tx_naks_invalid_req], || {
        a.qps[0].post_send(&send_wr(SendOp::Send, &a, &b, 0, 100, 1)).unwrap();
        a.qps[0].post_send(&send_wr(SendOp::Send, &a, &b, 0, 8, 2)).unwrap();
        assert_eq!(drain(&a), [(1, WcStatus::RemInvReqErr), (2, WcStatus::WrFlushErr)]);
        assert_eq!(drain(&b), [(10, WcStatus::LocLenErr), (11, WcStatus::WrFlushErr)]);
    });
    assert_eq!(d, [vec![1, 0], vec![0, 1]]);
    assert!(untouched_outside(&b, 0x1000, 64), "nothing beyond the receive buffer");
}

/// A receive WQE whose L_Key is bad: LOC_QP_OP_ERR at the responder (NAK Remote Operational Error, as rxe's
/// malformed-WQE path), REM_OP_ERR at the requester.
#[test]
fn receive_wqe_with_a_bad_lkey() {
    let (_w, a, b) = setup();
    let mut bad = b.sge(0x1000, 64);
    bad.lkey ^= 0x80;
    b.qps[0].post_recv(&RecvWr { wr_id: 10, sg_list: vec![bad] }).unwrap();
    let d = deltas([&a, &b], &[Counter::rx_naks, Counter::tx_naks_remote_op], || {
        a.qps[0].post_send(&send_wr(SendOp::Send, &a, &b, 0, 16, 1)).unwrap();
        assert_eq!(drain(&a), [(1, WcStatus::RemOpErr)]);
        assert_eq!(drain(&b), [(10, WcStatus::LocQpOpErr)]);
    });
    assert_eq!(d, [vec![1, 0], vec![0, 1]]);
    assert!(untouched_outside(&b, 0, 0));
}

/// A local SGE with a bad L_Key: LOC_PROT_ERR before anything is sent; a READ into memory registered without
/// local write is refused the same way.
#[test]
fn local_sge_that_the_mr_does_not_cover() {
    let (_w, a, b) = setup();
    let ro = a.pd.reg_mr(a.buf.addr + 0x8000, 0x1000, access::REMOTE_READ).unwrap();
    let mut w1 = send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 1);
    w1.sg_list[0].lkey ^= 0x80;
    let mut w2 = send_wr(SendOp::RdmaRead, &a, &b, 0, 64, 2);
    w2.sg_list[0] = Sge { addr: ro.addr, length: 64, lkey: ro.lkey };
    let d = deltas([&a, &b], &[Counter::tx_frames], || {
        a.qps[0].post_send(&w1).unwrap();
        assert_eq!(drain(&a), [(1, WcStatus::LocProtErr)]);
    });
    assert_eq!(d, [vec![0], vec![0]], "nothing went on the wire");
    let (_w, a, b) = setup();
    let ro = a.pd.reg_mr(a.buf.addr + 0x8000, 0x1000, access::REMOTE_READ).unwrap();
    w2.sg_list[0] = Sge { addr: ro.addr, length: 64, lkey: ro.lkey };
    w2.remote_addr = b.mr.addr;
    w2.rkey = b.mr.rkey;
    a.qps[0].post_send(&w2).unwrap();
    assert_eq!(drain(&a), [(2, WcStatus::LocProtErr)]);
    assert!(untouched_outside(&a, 0, 0));
}

/// A WRITE with a bad R_Key: REM_ACCESS_ERR, the responder's memory untouched, the rest flushed.
#[test]
fn write_with_a_bad_rkey() {
    let (_w, a, b) = setup();
    let mut w1 = send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 1);
    w1.rkey ^= 0x80;
    let d = deltas([&a, &b], &[Counter::rx_naks, Counter::tx_naks_remote_access], || {
        a.qps[0].post_send(&w1).unwrap();
        a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0x100, 64, 2)).unwrap();
        assert_eq!(drain(&a), [(1, WcStatus::RemAccessErr), (2, WcStatus::WrFlushErr)]);
    });
    assert_eq!(d, [vec![1, 0], vec![0, 1]]);
    assert!(untouched_outside(&b, 0, 0));
}

/// A READ response whose length does not fit the READ: BAD_RESP_ERR, nothing placed.
#[test]
fn read_response_of_the_wrong_length() {
    let (w, a, b) = setup();
    // Drop B's four real responses, and answer with a forged first response of 100 bytes (PMTU is 256).
    for k in 0..4 {
        w.lock().unwrap().fault_frame(1, k, FrameFault::Drop);
    }
    a.qps[0].post_send(&send_wr(SendOp::RdmaRead, &a, &b, 0x1000, 1024, 1)).unwrap();
    let now = w.lock().unwrap().now;
    w.lock().unwrap().run_until(now + 20_000_000);
    let h = RoceHeaders {
        eth: wire::eth::EthernetRepr { dst: a.mac, src: b.mac, vlan: None, ethertype: 0 },
        ip: wire::IpRepr::V4(wire::ipv4::Ipv4Repr {
            src: wire::ipv6::gid_to_ipv4(&b.gid).unwrap(),
            dst: wire::ipv6::gid_to_ipv4(&a.gid).unwrap(),
            tos: 0,
            ttl: 64,
            ident: 0,
            payload_len: 0,
        }),
        udp_src_port: 0xC000,
        bth: BthRepr {
            opcode: Opcode::RDMA_READ_RESPONSE_FIRST,
            dest_qp: a.qps[0].qpn,
            psn: Psn::new(PSN_A),
            ..Default::default()
        },
        ext: ExtHeaders { aeth: Some(AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn: 1 }), ..Default::default() },
    };
    w.lock().unwrap().deliver(0, h.emit(&[0x55; 100]));
    assert_eq!(drain(&a), [(1, WcStatus::BadRespErr)]);
    assert!(untouched_outside(&a, 0, 0), "nothing placed");
}

/// Every frame lost: the WRITE goes out exactly 1 + retry_cnt times, then RETRY_EXC_ERR.
#[test]
fn retry_cnt_runs_out_after_exactly_that_many_retries() {
    for retry_cnt in [0u8, 3, 7] {
        let (w, a, b) = setup_with(ConnectOpts { path_mtu: 1, timeout: 8, retry_cnt, ..Default::default() }, PSN_A);
        w.lock().unwrap().set_link_faults(Impairments { loss: 1.0, ..Default::default() });
        let cs = [Counter::tx_frames, Counter::retransmitted_packets, Counter::local_ack_timeouts];
        let d = deltas([&a, &b], &cs, || {
            a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 1)).unwrap();
            assert_eq!(drain(&a), [(1, WcStatus::RetryExcErr)], "retry_cnt {retry_cnt}");
        });
        let n = u64::from(retry_cnt);
        assert_eq!(d[0], [n + 1, n, n + 1], "retry_cnt {retry_cnt}: sent, resent, timeouts");
        assert!(untouched_outside(&b, 0, 0));
    }
}

/// No receive WQE: the SEND is RNR-NAKed and resent exactly 1 + rnr_retry times, then RNR_RETRY_EXC_ERR.
#[test]
fn rnr_retry_runs_out_after_exactly_that_many_retries() {
    for rnr_retry in [0u8, 2, 6] {
        let o = ConnectOpts { path_mtu: 1, min_rnr_timer: 1, rnr_retry, ..Default::default() };
        let (_w, a, b) = setup_with(o, PSN_A);
        let d = deltas([&a, &b], &[Counter::tx_frames, Counter::rx_rnr_naks, Counter::tx_rnr_naks], || {
            a.qps[0].post_send(&send_wr(SendOp::Send, &a, &b, 0, 8, 1)).unwrap();
            assert_eq!(drain(&a), [(1, WcStatus::RnrRetryExcErr)], "rnr_retry {rnr_retry}");
        });
        a.qps[0].post_send(&send_wr(SendOp::Send, &a, &b, 0, 8, 2)).unwrap();
        assert_eq!(drain(&a), [(2, WcStatus::WrFlushErr)], "the QP is in ERR: what follows is flushed");
        let n = u64::from(rnr_retry);
        assert_eq!(d[0], [n + 1, n + 1, 0], "rnr_retry {rnr_retry}: A sent, was NAKed");
        assert_eq!(d[1], [n + 1, 0, n + 1], "rnr_retry {rnr_retry}: B NAKed each");
    }
}

/// A READ whose PSNs wrap past 2^24 - 1 loses a response after the wrap, and recovers from the next one.
#[test]
fn psn_wrap_in_the_middle_of_a_read_with_a_loss() {
    let (w, a, b) = setup_with(ConnectOpts { path_mtu: 1, timeout: 8, ..Default::default() }, 0xFF_FFFC);
    let data: Vec<u8> = (0..2560u32).map(|i| (i * 7) as u8).collect();
    b.buf.write(0x2000, &data).unwrap();
    // Responses use PSNs 0xFFFFFC ..= 0x000005; drop the one at 0x000001.
    w.lock().unwrap().fault_frame(1, 5, FrameFault::Drop);
    let mut rd = send_wr(SendOp::RdmaRead, &a, &b, 0x2000, data.len() as u32, 1);
    rd.remote_addr = b.mr.addr + 0x2000;
    a.qps[0].post_send(&rd).unwrap();
    assert_eq!(drain(&a), [(1, WcStatus::Success)]);
    assert_eq!(a.buf.read(0x2000, data.len()).unwrap(), data);
    assert_eq!(a.ctx.counter(Counter::local_ack_timeouts), 0, "the gap was seen from the next response");
    assert!(untouched_outside(&a, 0x2000, data.len()));
}

#[test]
fn the_model_refuses_to_register_process_memory() {
    let (_w, a, _b) = setup();
    let mut mine = vec![0u8; 4096];
    let r = a.pd.reg_user(&mut mine, access::LOCAL_WRITE);
    assert!(matches!(r, Err(Error::InvalidArgument(m)) if m.contains("alloc_buf")));
}
