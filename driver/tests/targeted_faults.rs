//! Targeted faults on single frames (one duplicate, one late frame, one lost ACK) with the counters that
//! prove which path of the responder and completer ran: duplicate detection, the single PSN-sequence NAK,
//! duplicate READ regeneration, atomic replay without re-execution, and the local ACK timeout.

use driver::pair::{connect, open_host, Host};
use driver::*;
use model::net::{FrameFault, LinkConfig, World};
use wire::contract::regs::Counter;

const T: u64 = 10_000_000_000;
/// PMTU 256: a 1 KiB message is four packets.
const MTU_256: u8 = 1;

fn setup(timeout: u8) -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 7));
    let a = open_host(&w, 0, 1, 1 << 16, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 16, QpCap::default(), false).unwrap();
    let o = ConnectOpts { path_mtu: MTU_256, timeout, ..Default::default() };
    connect(&a, 0, 0x11, &b, 0, 0x22, &o).unwrap();
    (w, a, b)
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(13).wrapping_add(5)).collect()
}

fn wr(op: SendOp, a: &Host, b: &Host, len: u32) -> SendWr {
    SendWr {
        wr_id: 1,
        opcode: Some(op),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0x4000, len)],
        remote_addr: b.mr.addr,
        rkey: b.mr.rkey,
        ..Default::default()
    }
}

fn complete(a: &Host, op: WcOpcode) {
    let c = a.cq.wait(1, T).unwrap();
    assert_eq!(c.len(), 1, "no completion");
    assert_eq!((c[0].status, c[0].opcode), (WcStatus::Success, op));
    assert!(a.cq.poll(4).unwrap().is_empty(), "one WR, one completion");
}

/// Counter deltas over a closure.
fn delta(h: &Host, cs: &[Counter], f: impl FnOnce()) -> Vec<u64> {
    let before: Vec<u64> = cs.iter().map(|&c| h.ctx.counter(c)).collect();
    f();
    cs.iter().zip(before).map(|(&c, b)| h.ctx.counter(c) - b).collect()
}

#[test]
fn duplicate_write_packet_is_dropped_once_and_not_nakked() {
    let (w, a, b) = setup(14);
    let data = pattern(1024);
    a.buf.write(0x4000, &data).unwrap();
    w.lock().unwrap().fault_frame(0, 1, FrameFault::Duplicate);
    let d = delta(&b, &[Counter::rx_drop_duplicate, Counter::tx_naks_psn_seq, Counter::rx_drop_out_of_seq], || {
        a.qps[0].post_send(&wr(SendOp::RdmaWrite, &a, &b, 1024)).unwrap();
        complete(&a, WcOpcode::RdmaWrite);
    });
    assert_eq!(d, [1, 0, 0], "duplicate, psn NAKs, out-of-sequence at the responder");
    assert_eq!(a.ctx.counter(Counter::retransmitted_packets), 0);
    assert_eq!(b.buf.read(0, 1024).unwrap(), data);
}

#[test]
fn late_packet_gets_one_sequence_nak_then_go_back_n() {
    let (w, a, b) = setup(14);
    let data = pattern(2048);
    a.buf.write(0x4000, &data).unwrap();
    // Packet 1 of 8 arrives 3 us late: packets 2..7 overtake it.
    w.lock().unwrap().fault_frame(0, 1, FrameFault::Delay(3_000_000));
    let cs = [Counter::tx_naks_psn_seq, Counter::rx_drop_out_of_seq];
    let mut rx_naks = 0;
    let d = delta(&b, &cs, || {
        rx_naks = delta(&a, &[Counter::rx_naks], || {
            a.qps[0].post_send(&wr(SendOp::RdmaWrite, &a, &b, 2048)).unwrap();
            complete(&a, WcOpcode::RdmaWrite);
        })[0];
    });
    assert_eq!(d[0], 1, "one PSN sequence NAK per gap");
    assert!(d[1] >= 6, "packets 2..7 dropped as out of sequence, got {}", d[1]);
    assert_eq!(rx_naks, 1);
    assert!(a.ctx.counter(Counter::retransmitted_packets) >= 6, "go-back-N resends from the gap");
    assert_eq!(b.buf.read(0, 2048).unwrap(), data);
}

#[test]
fn duplicate_read_request_regenerates_the_response() {
    let (w, a, b) = setup(14);
    let data = pattern(2048);
    b.buf.write(0, &data).unwrap();
    w.lock().unwrap().fault_frame(0, 0, FrameFault::Duplicate);
    let d = delta(&b, &[Counter::rx_drop_duplicate, Counter::tx_frames], || {
        a.qps[0].post_send(&wr(SendOp::RdmaRead, &a, &b, 2048)).unwrap();
        complete(&a, WcOpcode::RdmaRead);
        // Let the regenerated response drain.
        w.lock().unwrap().run_until(u64::MAX / 2);
    });
    assert_eq!(d, [1, 16], "one duplicate READ, eight response packets sent twice");
    assert_eq!(a.buf.read(0x4000, 2048).unwrap(), data);
}

#[test]
fn duplicate_atomic_is_replayed_not_reexecuted() {
    let (w, a, b) = setup(14);
    b.buf.write(0, &10u64.to_le_bytes()).unwrap();
    w.lock().unwrap().fault_frame(0, 0, FrameFault::Duplicate);
    let mut fa = wr(SendOp::AtomicFetchAdd, &a, &b, 8);
    fa.compare_add = 5;
    let counted = [Counter::rx_drop_duplicate, Counter::tx_frames, Counter::rx_fetch_adds, Counter::rx_cmp_swaps];
    let d = delta(&b, &counted, || {
        a.qps[0].post_send(&fa).unwrap();
        complete(&a, WcOpcode::FetchAdd);
        w.lock().unwrap().run_until(u64::MAX / 2);
    });
    assert_eq!(d, [1, 2, 1, 0], "the duplicate is answered from the saved result, and counted once");
    assert_eq!(b.buf.read(0, 8).unwrap(), 15u64.to_le_bytes(), "added once");
    assert_eq!(a.buf.read(0x4000, 8).unwrap(), 10u64.to_le_bytes(), "original value returned");
    let mut cas = wr(SendOp::AtomicCmpSwp, &a, &b, 8);
    (cas.compare_add, cas.swap) = (15, 3);
    let d = delta(&b, &counted[2..], || {
        a.qps[0].post_send(&cas).unwrap();
        complete(&a, WcOpcode::CompSwap);
    });
    assert_eq!(d, [0, 1], "a compare-and-swap is counted as one");
    assert_eq!(b.buf.read(0, 8).unwrap(), 3u64.to_le_bytes(), "swapped");
}

#[test]
fn lost_ack_times_out_and_the_duplicate_is_reacked() {
    // timeout 8: 4.096 us * 2^8 = 1.05 ms.
    let (w, a, b) = setup(8);
    let data = pattern(1024);
    a.buf.write(0x4000, &data).unwrap();
    w.lock().unwrap().fault_frame(1, 0, FrameFault::Drop);
    let t0 = w.lock().unwrap().now;
    let da = delta(&a, &[Counter::local_ack_timeouts, Counter::retransmitted_packets], || {
        let db = delta(&b, &[Counter::rx_drop_duplicate, Counter::tx_acks], || {
            a.qps[0].post_send(&wr(SendOp::RdmaWrite, &a, &b, 1024)).unwrap();
            complete(&a, WcOpcode::RdmaWrite);
        });
        // The lost ACK, then one per duplicate: each duplicate SEND/WRITE packet is ACKed again (as rxe).
        assert_eq!(db, [4, 5], "all four packets resent as duplicates");
    });
    assert_eq!(da, [1, 4]);
    assert!(w.lock().unwrap().now - t0 >= 1_048_576 * 1000, "completion waited for the ACK timer");
    assert_eq!(b.buf.read(0, 1024).unwrap(), data);
}

/// A WRITE_ONLY of `data` to B's QP at B's expected PSN, from `src_ip` to `dst_ip`.
fn forged_write(a: &Host, b: &Host, src_ip: [u8; 4], dst_ip: [u8; 4], data: &[u8]) -> Vec<u8> {
    use wire::eth::EthernetRepr;
    use wire::ext::RethRepr;
    use wire::ipv4::Ipv4Repr;
    use wire::{BthRepr, ExtHeaders, IpRepr, Opcode, Psn, RoceHeaders};
    let h = RoceHeaders {
        eth: EthernetRepr { dst: b.mac, src: a.mac, vlan: None, ethertype: 0 },
        ip: IpRepr::V4(Ipv4Repr { src: src_ip, dst: dst_ip, tos: 0, ttl: 64, ident: 0, payload_len: 0 }),
        udp_src_port: 0xC000,
        bth: BthRepr {
            opcode: Opcode::RDMA_WRITE_ONLY,
            dest_qp: b.qps[0].qpn,
            psn: Psn::new(0x11),
            ack_req: true,
            ..Default::default()
        },
        ext: ExtHeaders {
            reth: Some(RethRepr { va: b.mr.addr, rkey: b.mr.rkey, dma_len: data.len() as u32 }),
            ..Default::default()
        },
    };
    h.emit(data)
}

#[test]
fn frames_from_a_stranger_or_to_another_ip_are_dropped() {
    let (w, a, b) = setup(14);
    let (a_ip, b_ip) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    for (src, dst) in [([10, 0, 0, 9], b_ip), (a_ip, [10, 0, 0, 7])] {
        let d = delta(&b, &[Counter::rx_drop_not_for_us], || {
            w.lock().unwrap().deliver(1, forged_write(&a, &b, src, dst, &[1, 2, 3, 4]));
            w.lock().unwrap().run_until(u64::MAX / 2);
        });
        assert_eq!(d, [1], "{src:?} -> {dst:?}");
        assert_eq!(b.buf.read(0, 4).unwrap(), [0; 4], "memory untouched");
    }
    // The same frame from the connected peer is executed: the check above is what stopped it.
    w.lock().unwrap().deliver(1, forged_write(&a, &b, a_ip, b_ip, &[1, 2, 3, 4]));
    w.lock().unwrap().run_until(u64::MAX / 2);
    assert_eq!(b.buf.read(0, 4).unwrap(), [1, 2, 3, 4]);
}

#[test]
fn ack_req_is_set_every_64_packets_and_at_the_end() {
    let (w, a, b) = setup(14);
    w.lock().unwrap().capture();
    // 190 packets at PMTU 256.
    a.qps[0].post_send(&wr(SendOp::RdmaWrite, &a, &b, 256 * 190)).unwrap();
    complete(&a, WcOpcode::RdmaWrite);
    let w = w.lock().unwrap();
    let flags: Vec<bool> = w
        .captured()
        .iter()
        .filter(|(_, node, _)| *node == 0)
        .map(|(_, _, f)| wire::parse(f).unwrap().hdr.bth.ack_req)
        .collect();
    assert_eq!(flags.len(), 190);
    let set: Vec<usize> = flags.iter().enumerate().filter(|(_, &f)| f).map(|(i, _)| i).collect();
    assert_eq!(set, [63, 127, 189]);
}

#[test]
fn rnr_wait_follows_the_timer_in_the_nak() {
    let (w, a, b) = setup(14);
    // The responder asks for 0.96 ms (code 13); the requester's own min_rnr_timer is not what counts.
    b.qps[0].modify(&QpAttr { min_rnr_timer: 13, ..Default::default() }, attr::MIN_RNR_TIMER).unwrap();
    w.lock().unwrap().capture();
    let mut s = wr(SendOp::Send, &a, &b, 8);
    s.remote_addr = 0;
    a.qps[0].post_send(&s).unwrap();
    let t0 = w.lock().unwrap().now;
    w.lock().unwrap().run_until(t0 + 3_000_000_000);
    let sends: Vec<u64> =
        w.lock().unwrap().captured().iter().filter(|(_, node, _)| *node == 0).map(|(t, _, _)| *t).collect();
    assert!(sends.len() >= 3, "resent after each RNR NAK: {sends:?}");
    let wait = wire::contract::verbs::RNR_TIMER_NS[13] * 1000;
    for pair in sends.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= wait && gap < wait + 10_000_000,
            "resend {gap} ps after the last, want {wait} ps + a round trip"
        );
    }
}

#[test]
fn frames_to_another_unicast_mac_are_dropped_and_multicast_ones_are_not() {
    let (w, a, b) = setup(14);
    let (a_ip, b_ip) = ([10, 0, 0, 1], [10, 0, 0, 2]);
    let mut f = forged_write(&a, &b, a_ip, b_ip, &[1, 2, 3, 4]);
    f[5] ^= 0x40; // another unicast MAC
    let d = delta(&b, &[Counter::rx_drop_not_for_us], || {
        w.lock().unwrap().deliver(1, f.clone());
        w.lock().unwrap().run_until(u64::MAX / 2);
    });
    assert_eq!(d, [1]);
    assert_eq!(b.buf.read(0, 4).unwrap(), [0; 4]);
    // A multicast destination passes the MAC filter (the IP and QP checks still apply), and is executed.
    let mut m = forged_write(&a, &b, a_ip, b_ip, &[5, 6, 7, 8]);
    m[..6].copy_from_slice(&[0x01, 0x00, 0x5E, 0x00, 0x00, 0x02]);
    w.lock().unwrap().deliver(1, m);
    w.lock().unwrap().run_until(u64::MAX / 2);
    assert_eq!(b.buf.read(0, 4).unwrap(), [5, 6, 7, 8]);
}
