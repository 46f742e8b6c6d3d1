//! Scenario tests through the verbs on the golden model: every operation, segmentation at every PMTU,
//! PSN wrap, loss/reorder/duplication/corruption, RNR, retry exhaustion, access violations, bad transitions.
//! Randomised runs print their seed on failure.

use driver::pair::{connect, open_host, Host};
use driver::*;
use model::net::{Impairments, LinkConfig, World};

const BUF: usize = 1 << 20;
const T: u64 = 10_000_000_000; // 10 s of device time

fn setup(link: LinkConfig, seed: u64, o: &ConnectOpts, pa: u32, pb: u32) -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), link, seed));
    let a = open_host(&w, 0, 1, BUF, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, BUF, QpCap::default(), false).unwrap();
    connect(&a, 0, pa, &b, 0, pb, o).unwrap();
    (w, a, b)
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn write_wr(a: &Host, b: &Host, off: u64, len: u32, wr_id: u64) -> SendWr {
    SendWr {
        wr_id,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(off, len)],
        remote_addr: b.mr.addr + off,
        rkey: b.mr.rkey,
        ..Default::default()
    }
}

fn one(cq: &Cq) -> Wc {
    let w = cq.wait(1, T).unwrap();
    assert_eq!(w.len(), 1, "no completion arrived");
    w[0]
}

#[test]
fn send_recv_with_imm_and_inv() {
    let (_w, a, b) = setup(LinkConfig::default(), 1, &ConnectOpts::default(), 100, 200);
    let data = pattern(3000, 7);
    a.buf.write(0, &data).unwrap();
    for i in 0..3 {
        b.qps[0].post_recv(&RecvWr { wr_id: 50 + i, sg_list: vec![b.sge(4096 * i, 4096)] }).unwrap();
    }
    let mut wr = SendWr {
        wr_id: 1,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0, 3000)],
        ..Default::default()
    };
    a.qps[0].post_send(&wr).unwrap();
    let mut got = b.cq.wait(1, T).unwrap();
    got.extend(a.cq.wait(1, T).unwrap());
    let recv = got.iter().find(|w| w.opcode == WcOpcode::Recv).unwrap();
    assert_eq!((recv.status, recv.byte_len, recv.wr_id), (WcStatus::Success, 3000, 50));
    assert_eq!(b.buf.read(0, 3000).unwrap(), data);
    let send = got.iter().find(|w| w.opcode == WcOpcode::Send).unwrap();
    assert_eq!((send.status, send.wr_id), (WcStatus::Success, 1));

    wr.opcode = Some(SendOp::SendWithImm);
    wr.imm_data = 0xCAFE_F00D;
    wr.sg_list = vec![a.sge(0, 10)];
    a.qps[0].post_send(&wr).unwrap();
    let r = one(&b.cq);
    assert_eq!((r.imm_data, r.wc_flags & 2, r.byte_len, r.wr_id), (0xCAFE_F00D, 2, 10, 51));
    one(&a.cq);

    // SEND with invalidate naming a plain MR: the spec lets a peer invalidate only memory windows and
    // fast-register MRs, so it is a Remote Invalid Request NAK, and the MR stays registered.
    let extra = b.pd.reg_mr(b.buf.addr, 64, access::ALL).unwrap();
    wr.opcode = Some(SendOp::SendWithInv);
    wr.imm_data = extra.rkey;
    a.qps[0].post_send(&wr).unwrap();
    assert_eq!((one(&a.cq).status, one(&b.cq).status), (WcStatus::RemInvReqErr, WcStatus::WrFlushErr));
    b.pd.dereg_mr(extra).expect("the MR was not invalidated");
}

#[test]
fn write_read_atomics_every_pmtu() {
    for mtu in 1..=5u8 {
        let o = ConnectOpts { path_mtu: mtu, ..Default::default() };
        let (_w, a, b) = setup(LinkConfig::default(), u64::from(mtu), &o, 0x10, 0x20);
        let pmtu = 128u32 << mtu;
        for &len in &[0u32, 1, pmtu - 1, pmtu, pmtu + 1, 3 * pmtu, 3 * pmtu + 5, 65536] {
            let data = pattern(len as usize, mtu);
            a.buf.write(0, &data).unwrap();
            a.qps[0].post_send(&write_wr(&a, &b, 0, len, len.into())).unwrap();
            let c = one(&a.cq);
            assert_eq!(
                (c.status, c.opcode, c.wr_id),
                (WcStatus::Success, WcOpcode::RdmaWrite, u64::from(len)),
                "mtu {pmtu} len {len}"
            );
            assert_eq!(b.buf.read(0, len as usize).unwrap(), data, "WRITE mtu {pmtu} len {len}");
            // Read it back into another place.
            let rd = SendWr {
                wr_id: 9,
                opcode: Some(SendOp::RdmaRead),
                send_flags: send_flags::SIGNALED,
                sg_list: vec![a.sge(0x80000, len)],
                remote_addr: b.mr.addr,
                rkey: b.mr.rkey,
                ..Default::default()
            };
            a.qps[0].post_send(&rd).unwrap();
            let c = one(&a.cq);
            assert_eq!((c.status, c.opcode, c.byte_len), (WcStatus::Success, WcOpcode::RdmaRead, len));
            assert_eq!(a.buf.read(0x80000, len as usize).unwrap(), data, "READ mtu {pmtu} len {len}");
        }
        // Atomics.
        b.buf.write(0x1000, &100u64.to_le_bytes()).unwrap();
        let fa = SendWr {
            wr_id: 3,
            opcode: Some(SendOp::AtomicFetchAdd),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![a.sge(0x2000, 8)],
            remote_addr: b.mr.addr + 0x1000,
            rkey: b.mr.rkey,
            compare_add: 5,
            ..Default::default()
        };
        a.qps[0].post_send(&fa).unwrap();
        assert_eq!(one(&a.cq).status, WcStatus::Success);
        assert_eq!(a.buf.read(0x2000, 8).unwrap(), 100u64.to_le_bytes());
        assert_eq!(b.buf.read(0x1000, 8).unwrap(), 105u64.to_le_bytes());
        let cas = SendWr { opcode: Some(SendOp::AtomicCmpSwp), compare_add: 105, swap: 7, ..fa.clone() };
        a.qps[0].post_send(&cas).unwrap();
        assert_eq!(one(&a.cq).opcode, WcOpcode::CompSwap);
        assert_eq!(b.buf.read(0x1000, 8).unwrap(), 7u64.to_le_bytes());
        let cas_miss = SendWr { compare_add: 999, swap: 1, ..cas };
        a.qps[0].post_send(&cas_miss).unwrap();
        one(&a.cq);
        assert_eq!(a.buf.read(0x2000, 8).unwrap(), 7u64.to_le_bytes());
        assert_eq!(b.buf.read(0x1000, 8).unwrap(), 7u64.to_le_bytes(), "failed compare leaves memory");
    }
}

#[test]
fn psn_wraps_at_2_pow_24() {
    let o = ConnectOpts { path_mtu: 1, ..Default::default() };
    let (_w, a, b) = setup(LinkConfig::default(), 3, &o, 0xFF_FFF0, 0xFF_FFFA);
    for i in 0..4u64 {
        let data = pattern(8 * 256, i as u8);
        a.buf.write(0, &data).unwrap();
        a.qps[0].post_send(&write_wr(&a, &b, 0, data.len() as u32, i)).unwrap();
        assert_eq!(one(&a.cq).status, WcStatus::Success);
        assert_eq!(b.buf.read(0, data.len()).unwrap(), data);
    }
    assert!(a.qps[0].query().unwrap().sq_psn < 0x100, "sender PSN wrapped");
}

#[test]
fn lossy_links_keep_data_and_order() {
    for (i, p) in [0.01, 0.05, 0.10].into_iter().enumerate() {
        let seed = 1000 + i as u64;
        let faults = Impairments { loss: p, reorder: p, duplicate: p, corrupt: p };
        let (w, a, b) = setup(LinkConfig::default(), seed, &ConnectOpts { timeout: 8, ..Default::default() }, 1, 2);
        w.lock().unwrap().set_link_faults(faults);
        let n = 20u64;
        let mut expect = Vec::new();
        for k in 0..n {
            let len = 5000 + 977 * k as u32;
            let off = k * 40_000;
            let data = pattern(len as usize, k as u8);
            a.buf.write(off as usize, &data).unwrap();
            expect.push((off, data));
            a.qps[0].post_send(&write_wr(&a, &b, off, len, k)).unwrap();
        }
        let wcs = a.cq.wait(n as usize, T).unwrap();
        assert_eq!(wcs.len(), n as usize, "seed {seed}: completions missing (hang?)");
        for (k, wc) in wcs.iter().enumerate() {
            assert_eq!((wc.wr_id, wc.status), (k as u64, WcStatus::Success), "seed {seed}: completion order");
        }
        for (off, data) in expect {
            assert_eq!(b.buf.read(off as usize, data.len()).unwrap(), data, "seed {seed}: data at {off}");
        }
        let s = w.lock().unwrap().link_stats();
        assert!(s.lost > 0 && s.corrupted > 0 && s.reordered > 0, "seed {seed}: faults were injected {s:?}");
    }
}

#[test]
fn rnr_nak_then_success() {
    let o = ConnectOpts { min_rnr_timer: 1, rnr_retry: 7, ..Default::default() };
    let (w, a, b) = setup(LinkConfig::default(), 4, &o, 1, 2);
    a.buf.write(0, b"late receiver").unwrap();
    let wr = SendWr {
        wr_id: 1,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0, 13)],
        ..Default::default()
    };
    a.qps[0].post_send(&wr).unwrap();
    // Let it be NAKed a few times, then post the receive.
    let t0 = w.lock().unwrap().now;
    w.lock().unwrap().run_until(t0 + 100_000_000);
    assert!(a.ctx.counter(wire::contract::regs::Counter::rx_rnr_naks) >= 1);
    assert!(a.cq.poll(1).unwrap().is_empty());
    b.qps[0].post_recv(&RecvWr { wr_id: 2, sg_list: vec![b.sge(0, 64)] }).unwrap();
    assert_eq!(one(&a.cq).status, WcStatus::Success);
    assert_eq!(one(&b.cq).byte_len, 13);
    assert_eq!(b.buf.read(0, 13).unwrap(), b"late receiver");
}

#[test]
fn rnr_retry_exhausted() {
    let o = ConnectOpts { min_rnr_timer: 1, rnr_retry: 2, ..Default::default() };
    let (_w, a, _b) = setup(LinkConfig::default(), 5, &o, 1, 2);
    let wr = SendWr {
        wr_id: 1,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0, 8)],
        ..Default::default()
    };
    a.qps[0].post_send(&wr).unwrap();
    assert_eq!(one(&a.cq).status, WcStatus::RnrRetryExcErr);
}

#[test]
fn retry_exhaustion_flushes_the_rest() {
    let o = ConnectOpts { timeout: 5, retry_cnt: 3, ..Default::default() };
    let (w, a, b) = setup(LinkConfig::default(), 6, &o, 1, 2);
    w.lock().unwrap().set_link_faults(Impairments { loss: 1.0, ..Default::default() });
    for k in 0..4 {
        a.qps[0].post_send(&write_wr(&a, &b, 0, 100, k)).unwrap();
    }
    let wcs = a.cq.wait(4, T).unwrap();
    let st: Vec<_> = wcs.iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(
        st,
        vec![
            (0, WcStatus::RetryExcErr),
            (1, WcStatus::WrFlushErr),
            (2, WcStatus::WrFlushErr),
            (3, WcStatus::WrFlushErr)
        ]
    );
    assert_eq!(a.qps[0].query().unwrap().qp_state, QpState::Err as u8);
    assert!(a.ctx.counter(wire::contract::regs::Counter::local_ack_timeouts) >= 4);
}

#[test]
fn rkey_and_bounds_violations_touch_nothing() {
    let (_w, a, b) = setup(LinkConfig::default(), 7, &ConnectOpts::default(), 1, 2);
    b.buf.write(0, &[0xEE; 64]).unwrap();
    a.buf.write(0, &[0x11; 64]).unwrap();
    let cases = [
        ("bad rkey", b.mr.addr, b.mr.rkey ^ 0x100),
        ("past the end", b.mr.addr + BUF as u64 - 8, b.mr.rkey),
        ("before the start", b.mr.addr - 64, b.mr.rkey),
    ];
    for (what, addr, rkey) in cases {
        let (_w, a, b) = setup(LinkConfig::default(), 8, &ConnectOpts::default(), 1, 2);
        b.buf.write(0, &[0xEE; 64]).unwrap();
        b.buf.write(BUF - 64, &[0xEE; 64]).unwrap();
        let wr = SendWr { remote_addr: addr, rkey, ..write_wr(&a, &b, 0, 64, 1) };
        a.qps[0].post_send(&wr).unwrap();
        a.qps[0].post_send(&write_wr(&a, &b, 0, 8, 2)).unwrap();
        let wcs = a.cq.wait(2, T).unwrap();
        assert_eq!(wcs[0].status, WcStatus::RemAccessErr, "{what}");
        assert_eq!(wcs[1].status, WcStatus::WrFlushErr, "{what}");
        assert_eq!(b.buf.read(0, 64).unwrap(), vec![0xEE; 64], "{what}: memory untouched");
        assert_eq!(b.buf.read(BUF - 64, 64).unwrap(), vec![0xEE; 64], "{what}: memory untouched");
    }
    let _ = (a, b);
}

#[test]
fn illegal_modify_qp_transitions_are_rejected() {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 9));
    let a = open_host(&w, 0, 1, 4096, QpCap::default(), false).unwrap();
    let qp = &a.qps[0];
    let rts = QpAttr { qp_state: Some(QpState::Rts), ..Default::default() };
    let err = qp.modify(&rts, attr::STATE).unwrap_err();
    assert!(matches!(err, Error::Command { status: wire::contract::cmd::Status::BadState, .. }), "{err}");
    // RESET -> INIT without the required ACCESS_FLAGS; with them, but on port 0 (the device has port 1 only).
    let mut init = QpAttr { qp_state: Some(QpState::Init), ..Default::default() };
    let all = attr::STATE | attr::PKEY_INDEX | attr::PORT | attr::ACCESS_FLAGS;
    let err = qp.modify(&init, all).unwrap_err();
    assert!(matches!(err, Error::Command { status: wire::contract::cmd::Status::BadParam, .. }), "port 0: {err}");
    init.port_num = 1;
    assert!(qp.modify(&init, attr::STATE | attr::PKEY_INDEX | attr::PORT).is_err());
    assert_eq!(qp.query().unwrap().qp_state, QpState::Reset as u8, "refused modify changes nothing");
    qp.modify(&init, attr::STATE | attr::PKEY_INDEX | attr::PORT | attr::ACCESS_FLAGS).unwrap();
    // INIT -> RTR with a bad MTU.
    let rtr = QpAttr { qp_state: Some(QpState::Rtr), path_mtu: 9, ..Default::default() };
    let mask = attr::STATE
        | attr::AV
        | attr::PATH_MTU
        | attr::DEST_QPN
        | attr::RQ_PSN
        | attr::MAX_DEST_RD_ATOMIC
        | attr::MIN_RNR_TIMER;
    assert!(qp.modify(&rtr, mask).is_err());
    assert_eq!(qp.query().unwrap().qp_state, QpState::Init as u8);
    // Posting before RTS is refused by the driver.
    let wr = SendWr { opcode: Some(SendOp::Send), ..Default::default() };
    assert!(matches!(qp.post_send(&wr), Err(Error::BadState(_))));
    // Bad verbs arguments are errors, not panics.
    assert!(a.pd.reg_mr(a.buf.addr, 0, 0).is_err());
    assert!(a.ctx.create_cq(0).is_err());
    assert!(a.pd.create_qp(&a.cq, &a.cq, QpCap { max_send_sge: 1000, ..Default::default() }, false).is_err());
}

#[test]
fn ipv6_and_vlan() {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 10));
    let a = open_host(&w, 0, 1, 65536, QpCap::default(), true).unwrap();
    let b = open_host(&w, 1, 1, 65536, QpCap::default(), true).unwrap();
    // PCP 5: the top bit of the tag's priority is carried too.
    let o = ConnectOpts { vlan: Some((5, 100)), ..Default::default() };
    connect(&a, 0, 5, &b, 0, 6, &o).unwrap();
    w.lock().unwrap().capture();
    let data = pattern(5000, 3);
    a.buf.write(0, &data).unwrap();
    a.qps[0].post_send(&write_wr(&a, &b, 0, 5000, 1)).unwrap();
    assert_eq!(one(&a.cq).status, WcStatus::Success);
    assert_eq!(b.buf.read(0, 5000).unwrap(), data);
    // No flow label was given: the IPv6 header carries 0, and the UDP source port comes from the label the
    // QP numbers make, each side its own (as rxe does).
    for (_, node, f) in w.lock().unwrap().captured() {
        let (from, to) = if *node == 0 { (&a, &b) } else { (&b, &a) };
        let label = wire::roce::flow_label_from_qpns(from.qps[0].qpn, to.qps[0].qpn);
        let h = wire::parse(f).unwrap().hdr;
        match h.ip {
            wire::IpRepr::V6(ip) => assert_eq!(ip.flow_label, 0),
            other => panic!("IPv6 expected: {other:?}"),
        }
        assert_eq!(h.udp_src_port, wire::roce::udp_sport_from_flow_label(label));
    }
    let tags: Vec<_> =
        w.lock().unwrap().captured().iter().map(|(_, _, f)| wire::parse(f).unwrap().hdr.eth.vlan).collect();
    assert!(!tags.is_empty());
    assert!(tags.iter().all(|t| *t == Some(wire::eth::VlanTag { pcp: 5, dei: false, vid: 100 })), "{tags:?}");
    let q = a.qps[0].query().unwrap();
    assert_eq!((q.vlan, q.vlan_tagged), (wire::eth::VlanTag { pcp: 5, dei: false, vid: 100 }.tci(), 1));

    // Without a VLAN: untagged frames, and QUERY_QP says so.
    let (w, a, b) = setup(LinkConfig::default(), 10, &ConnectOpts::default(), 1, 2);
    w.lock().unwrap().capture();
    a.qps[0].post_send(&write_wr(&a, &b, 0, 100, 1)).unwrap();
    assert_eq!(one(&a.cq).status, WcStatus::Success);
    assert!(w.lock().unwrap().captured().iter().all(|(_, _, f)| wire::parse(f).unwrap().hdr.eth.vlan.is_none()));
    let q = a.qps[0].query().unwrap();
    assert_eq!((q.vlan, q.vlan_tagged), (0, 0));
}

#[test]
fn unsignaled_writes_make_no_cqe_and_fence_orders_after_read() {
    let (_w, a, b) = setup(LinkConfig::default(), 11, &ConnectOpts::default(), 1, 2);
    for k in 0..4u64 {
        let data = pattern(2000, k as u8);
        a.buf.write((k * 4096) as usize, &data).unwrap();
        let mut wr = write_wr(&a, &b, k * 4096, 2000, k);
        if k < 3 {
            wr.send_flags = 0;
        }
        a.qps[0].post_send(&wr).unwrap();
    }
    let wcs = a.cq.wait(2, 100_000_000).unwrap();
    assert_eq!(wcs.len(), 1, "only the signaled WR completes: {wcs:?}");
    assert_eq!(wcs[0].wr_id, 3);
    for k in 0..4u64 {
        assert_eq!(b.buf.read((k * 4096) as usize, 2000).unwrap(), pattern(2000, k as u8));
    }
    // READ then a fenced WRITE of what was read: the WRITE must carry the READ's data.
    b.buf.write(0x10000, &pattern(3000, 99)).unwrap();
    let rd = SendWr {
        wr_id: 10,
        opcode: Some(SendOp::RdmaRead),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![a.sge(0x20000, 3000)],
        remote_addr: b.mr.addr + 0x10000,
        rkey: b.mr.rkey,
        ..Default::default()
    };
    let mut wr = write_wr(&a, &b, 0x20000, 3000, 11);
    wr.remote_addr = b.mr.addr + 0x30000;
    wr.send_flags |= send_flags::FENCE;
    a.qps[0].post_send_list(&[rd, wr]).unwrap();
    let wcs = a.cq.wait(2, T).unwrap();
    assert_eq!(
        wcs.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        vec![(10, WcStatus::Success), (11, WcStatus::Success)]
    );
    assert_eq!(b.buf.read(0x30000, 3000).unwrap(), pattern(3000, 99), "fenced WRITE saw the READ's data");
}

#[test]
fn sqd_drains_started_work_and_holds_new_work_until_rts() {
    let o = ConnectOpts { path_mtu: 1, ..Default::default() };
    let (w, a, b) = setup(LinkConfig::default(), 12, &o, 3, 4);
    let data = pattern(65536, 9);
    a.buf.write(0, &data).unwrap();
    // 256 packets: still on the wire when the QP goes to SQD.
    a.qps[0].post_send(&write_wr(&a, &b, 0, 32768, 1)).unwrap();
    let t = w.lock().unwrap().now;
    w.lock().unwrap().run_until(t + 200_000);
    let sqd = QpAttr { qp_state: Some(QpState::Sqd), ..Default::default() };
    a.qps[0].modify(&sqd, attr::STATE).unwrap();
    let q = a.qps[0].query().unwrap();
    assert_eq!((q.qp_state, q.sq_draining), (QpState::Sqd as u8, 1));
    a.qps[0].post_send(&write_wr(&a, &b, 32768, 32768, 2)).unwrap();
    let first = one(&a.cq);
    assert_eq!((first.wr_id, first.status), (1, WcStatus::Success), "started WQE drains in SQD");
    assert!(a.cq.wait(1, 200_000_000).unwrap().is_empty(), "a WQE posted in SQD does not start");
    let timeouts = a.ctx.counter(wire::contract::regs::Counter::local_ack_timeouts);
    assert_eq!(timeouts, 0, "a held WQE is not outstanding: no ACK timer runs for it");
    assert_eq!(a.qps[0].query().unwrap().sq_draining, 0, "drained");
    assert_eq!(b.buf.read(32768, 16).unwrap(), vec![0; 16]);
    let rts = QpAttr { qp_state: Some(QpState::Rts), ..Default::default() };
    a.qps[0].modify(&rts, attr::STATE).unwrap();
    let second = one(&a.cq);
    assert_eq!((second.wr_id, second.status), (2, WcStatus::Success));
    assert_eq!(b.buf.read(0, 65536).unwrap(), data);
}

/// A QP taken back to RESET forgets its rings' positions and its transport state: connected again with new
/// PSNs, it works as a fresh one.
#[test]
fn a_qp_reset_and_connected_again_starts_afresh() {
    let (_w, a, b) = setup(LinkConfig::default(), 13, &ConnectOpts::default(), 1, 2);
    for i in 0..3 {
        a.qps[0].post_send(&write_wr(&a, &b, 0, 100, i)).unwrap();
        assert_eq!(one(&a.cq).status, WcStatus::Success);
    }
    for q in [&a.qps[0], &b.qps[0]] {
        q.modify(&QpAttr { qp_state: Some(QpState::Reset), ..Default::default() }, attr::STATE).unwrap();
        let r = q.query().unwrap();
        assert_eq!((r.qp_state, r.dest_qp_num, r.sq_psn, r.path_mtu), (QpState::Reset as u8, 0, 0, 0));
    }
    connect(&a, 0, 0x500, &b, 0, 0x600, &ConnectOpts::default()).unwrap();
    let data = pattern(3000, 5);
    a.buf.write(0, &data).unwrap();
    a.qps[0].post_send(&write_wr(&a, &b, 0, 3000, 9)).unwrap();
    let c = one(&a.cq);
    assert_eq!((c.wr_id, c.status), (9, WcStatus::Success));
    assert_eq!(b.buf.read(0, 3000).unwrap(), data);
}
