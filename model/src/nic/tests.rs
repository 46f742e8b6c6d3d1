//! The NIC's registers, doorbells, headers and checks, each read and written as the driver and the RTL
//! would: every ID register, block header and counter where the contract puts it, doorbells to the object
//! they name, and the checks after a decision catching a broken state.

use super::bench::Bench;
use super::*;
use wire::contract::regs::{cmd, counters, dcqcn, doorbell, id};
use wire::IpRepr;

#[test]
fn the_id_block_reports_the_profile_and_the_port() {
    let p = Profile::large();
    let mut n = Nic::new(NicConfig { build_id: 0x1234_5678, port_mbps: 25_000, ..NicConfig::new(p) });
    let want = [
        (block::TYPE, block_type::ID),
        (block::VERSION, regs::VERSION),
        (block::NEXT, cmd::BASE),
        (id::BUILD_ID, 0x1234_5678),
        (id::FEATURES, 0b1_1111),
        (id::MAX_QP, p.max_qp),
        (id::MAX_CQ, p.max_cq),
        (id::MAX_MR, p.max_mr),
        (id::MAX_PD, p.max_pd),
        (id::MAX_SGE, p.max_sge),
        (id::MAX_INLINE, p.max_inline),
        (id::MAX_QP_RD_ATOM, p.max_qp_rd_atom),
        (id::MAX_QP_INIT_RD_ATOM, p.max_qp_init_rd_atom),
        (id::WQE_WINDOW, p.wqe_window),
        (id::RESP_QUEUE, p.resp_queue),
        (id::CTRL_QUEUE, p.ctrl_queue),
        (id::TICK_NS, 1024),
        (id::PORT_MBPS, 25_000),
        (id::MAX_MTU, 5),
        (id::MAX_LOG_RING, 15),
        (0xFC, 0),
    ];
    for (off, v) in want {
        assert_eq!(n.mmio_read(id::BASE + off), v, "ID register {off:#x}");
    }
}

#[test]
fn every_block_names_itself_and_the_next() {
    let mut n = Nic::new(NicConfig::default());
    let blocks = [
        (id::BASE, block_type::ID, cmd::BASE),
        (cmd::BASE, block_type::CMD, counters::BASE),
        (counters::BASE, block_type::COUNTERS, dcqcn::BASE),
        (dcqcn::BASE, block_type::DCQCN, doorbell::BASE),
        (doorbell::BASE, block_type::DOORBELL, 0),
    ];
    for (base, ty, next) in blocks {
        let got =
            (n.mmio_read(base + block::TYPE), n.mmio_read(base + block::VERSION), n.mmio_read(base + block::NEXT));
        assert_eq!(got, (ty, regs::VERSION, next), "block at {base:#x}");
    }
    assert_eq!(n.mmio_read(counters::BASE + counters::COUNT), Counter::ALL.len() as u32);
    assert_eq!(n.mmio_read(dcqcn::BASE + dcqcn::COUNT), Dcqcn::ALL.len() as u32);
    let layout = [
        (doorbell::QP_AREA, doorbell::QP_DB_BASE),
        (doorbell::CQ_AREA, doorbell::CQ_DB_BASE),
        (doorbell::STRIDE, doorbell::DB_STRIDE),
        (doorbell::EQ_AREA, doorbell::EQ_DB),
    ];
    for (off, v) in layout {
        assert_eq!(n.mmio_read(doorbell::BASE + off), v);
    }
    assert_eq!(n.mmio_read(0x0060_0000), 0, "nothing there");
    // Offsets no register is at, inside each block (unaligned among them), read 0 and nothing else happens.
    for off in [
        id::BASE + 0x45,
        cmd::BASE + 0x1C,
        counters::BASE + 0x3,
        counters::BASE + 0xD,
        dcqcn::BASE + 0x2,
        dcqcn::BASE + 0xE,
    ] {
        assert_eq!(n.mmio_read(off), 0, "{off:#x}");
    }
}

/// Each counter is a LO/HI pair at its own offset, and `count_n` adds.
#[test]
fn counters_are_where_the_contract_puts_them() {
    let mut n = Nic::new(NicConfig::default());
    for (i, c) in Counter::ALL.iter().enumerate() {
        n.count_n(*c, ((i as u64 + 1) << 32) | (0x100 + i as u64));
    }
    n.count_n(Counter::rx_frames, 2);
    for (i, c) in Counter::ALL.iter().enumerate() {
        let extra = if *c == Counter::rx_frames { 2 } else { 0 };
        let v = ((i as u64 + 1) << 32) | (0x100 + i as u64 + extra);
        assert_eq!(n.counter(*c), v);
        assert_eq!(n.counters()[i], v);
        assert_eq!(n.mmio_read(c.offset()), v as u32, "{} LO", c.name());
        assert_eq!(n.mmio_read(c.offset() + 4), (v >> 32) as u32, "{} HI", c.name());
    }
    let past = Counter::ALL.last().map_or(0, |c| c.offset() + 8);
    assert_eq!(n.mmio_read(past), 0, "past the last counter");
}

#[test]
fn dcqcn_parameters_read_back_what_was_written() {
    let mut n = Nic::new(NicConfig::default());
    for p in Dcqcn::ALL {
        assert_eq!(n.mmio_read(p.offset()), p.param().default, "{} default", p.param().name);
    }
    n.mmio_write(Dcqcn::F.offset(), 9);
    n.mmio_write(Dcqcn::CNP_DSCP.offset(), 46);
    assert_eq!((n.mmio_read(Dcqcn::F.offset()), n.dcqcn.get(Dcqcn::F)), (9, 9));
    assert_eq!(n.mmio_read(Dcqcn::CNP_DSCP.offset()), 46);
    assert_eq!(n.mmio_read(dcqcn::BASE + dcqcn::FIRST + 4 * Dcqcn::ALL.len() as u32), 0, "past the last");
}

/// The mailbox address is written in two halves, each keeping the other; STATUS packs busy, token and status.
#[test]
fn the_mailbox_address_and_the_status() {
    let mut n = Nic::new(NicConfig::default());
    n.mmio_write(cmd::BASE + cmd::MAILBOX_LO, 0x1111_2222);
    n.mmio_write(cmd::BASE + cmd::MAILBOX_HI, 0x3);
    n.mmio_write(cmd::BASE + cmd::MAILBOX_LO, 0x4444_5555);
    assert_eq!(n.mailbox, 0x3_4444_5555);
    assert_eq!((n.mmio_read(cmd::BASE + cmd::MAILBOX_LO), n.mmio_read(cmd::BASE + cmd::MAILBOX_HI)), (0x4444_5555, 3));
    n.mmio_write(cmd::BASE + cmd::MAILBOX_HI, 0x7);
    assert_eq!(n.mailbox, 0x7_4444_5555);
    n.cmd = CmdUnit { busy: true, token: 0xAB, status: 4, qpn: None };
    assert_eq!(n.mmio_read(cmd::BASE + cmd::STATUS), cmd::STATUS_BUSY | 0xAB04);
    n.cmd.busy = false;
    assert_eq!(n.mmio_read(cmd::BASE + cmd::STATUS), 0xAB04);
}

/// A QP doorbell moves that QP's producer counter only (none of a QP in RESET, or past the table); CQ and EQ
/// doorbells set the consumer counter and the arming.
#[test]
fn doorbells_reach_the_object_they_name() {
    let mut b = Bench::new();
    let (q1, q2) = (b.qp(), b.qp());
    for q in [q1, q2] {
        assert_eq!(b.modify(q, wire::contract::verbs::QpState::Err), wire::contract::cmd::Status::Ok);
    }
    b.nic.mmio_write(doorbell::qp(q2, doorbell::QP_SQ_PI), 0x1_0005);
    b.nic.mmio_write(doorbell::qp(q2, doorbell::QP_RQ_PI), 7);
    b.nic.mmio_write(doorbell::qp(q2, 6), 9);
    let (s1, s2) = (b.nic.qp(q1).unwrap(), b.nic.qp(q2).unwrap());
    assert_eq!((s1.sq.pi, s1.rq.pi, s2.sq.pi, s2.rq.pi), (0, 0, 5, 7), "16-bit counters, to their own QP");
    let reset = b.qp();
    b.nic.mmio_write(doorbell::qp(reset, doorbell::QP_SQ_PI), 3);
    assert_eq!(b.nic.qp(reset).unwrap().sq.pi, 0, "a QP in RESET takes none");
    b.nic.mmio_write(doorbell::qp(b.nic.cfg.profile.max_qp, doorbell::QP_SQ_PI), 3);
    let cqn = b.nic.qp(q2).unwrap().send_cqn;
    b.nic.mmio_write(doorbell::cq(cqn, doorbell::CQ_CI), 12);
    b.nic.mmio_write(doorbell::cq(cqn, doorbell::CQ_ARM), 2);
    let cq = b.nic.cqs[cqn as usize].as_ref().unwrap();
    assert_eq!((cq.ci, cq.armed), (12, Some(cq::Arm::Solicited)));
    b.nic.mmio_write(doorbell::cq(cqn, doorbell::CQ_ARM), 3);
    assert_eq!(b.nic.cqs[cqn as usize].as_ref().unwrap().armed, None, "anything else disarms");
    b.nic.mmio_write(doorbell::cq(cqn - 1, doorbell::CQ_CI), 99);
    assert_eq!(b.nic.cqs[cqn as usize].as_ref().unwrap().ci, 12, "another CQ's doorbell");
    let ring = b.mem.alloc(4096);
    b.nic.eq = Some(eq::Eq::new(ring, 4));
    b.nic.mmio_write(doorbell::EQ_DB + doorbell::EQ_CI, 5);
    b.nic.mmio_write(doorbell::EQ_DB + doorbell::EQ_ARM, 3);
    let e = b.nic.eq.as_ref().unwrap();
    assert_eq!((e.ci, e.armed), (5, true));
    b.nic.mmio_write(doorbell::EQ_DB + doorbell::EQ_ARM, 2);
    assert!(!b.nic.eq.as_ref().unwrap().armed, "bit 0 arms");
    b.nic.mmio_write(doorbell::EQ_DB + doorbell::DB_STRIDE, 9);
    assert_eq!(b.nic.eq.as_ref().unwrap().ci, 5, "past the EQ's doorbells");
}

/// Headers follow the address vector: IPv4 between IPv4-mapped GIDs and IPv6 otherwise, TTL 64 for a hop
/// limit of 0, the UDP source port of MODIFY_QP, the DSCP of CNPs in the upper six bits.
#[test]
fn headers_follow_the_address_vector() {
    let mut b = Bench::new();
    let q = b.rts_qp().qpn;
    let h = b.nic.headers(q, Opcode::RDMA_WRITE_ONLY, Psn::new(3), true).unwrap();
    let want_port = b.nic.qp(q).unwrap().attrs.udp_sport;
    assert!(want_port >= 0xC000);
    assert_eq!((h.udp_src_port, h.bth.dest_qp, h.bth.psn, h.bth.ack_req), (want_port, 0x11, Psn::new(3), true));
    let IpRepr::V4(ip) = h.ip else { panic!("IPv4 between IPv4-mapped GIDs: {:?}", h.ip) };
    assert_eq!((ip.src, ip.dst, ip.ttl, ip.ident), ([10, 0, 0, 1], [10, 0, 0, 2], 64, 0));
    b.nic.qp_mut(q).unwrap().attrs.hop_limit = 5;
    let h = b.nic.headers(q, Opcode::RDMA_WRITE_ONLY, Psn::new(3), true).unwrap();
    assert!(matches!(h.ip, IpRepr::V4(ip) if ip.ttl == 5));
    b.nic.qp_mut(q).unwrap().attrs.dgid[0] = 0xfd;
    let h = b.nic.headers(q, Opcode::RDMA_WRITE_ONLY, Psn::new(3), true).unwrap();
    assert!(matches!(h.ip, IpRepr::V6(ip) if ip.hop_limit == 5 && ip.dst[0] == 0xfd), "{:?}", h.ip);
    let cnp = b.nic.build_cnp(q).unwrap();
    let p = wire::parse(&cnp).unwrap();
    assert_eq!((p.hdr.bth.opcode, p.hdr.bth.becn, p.hdr.ip.tclass()), (Opcode::CNP, true, 48 << 2));
    b.nic.qp_mut(q).unwrap().attrs.sgid_index = 3;
    assert!(b.nic.headers(q, Opcode::RDMA_WRITE_ONLY, Psn::new(3), true).is_none(), "no GID at index 3");
}

#[test]
fn a_frame_takes_its_wire_time_at_the_port_rate() {
    let n = Nic::new(NicConfig::default());
    assert_eq!(n.serialize_time(1000), (1000 + WIRE_OVERHEAD as u64) * 8 * 10, "100 Gb/s: 10 ps a bit");
    assert_eq!(n.serialize_time(10), n.serialize_time(60), "padded to 60 bytes");
    let slow = Nic::new(NicConfig { port_mbps: 1000, ..NicConfig::default() });
    assert_eq!(slow.serialize_time(1000), (1000 + WIRE_OVERHEAD as u64) * 8 * 1000);
}

/// QPNs in use, ascending; the rate of each QP's reaction point.
#[test]
fn qpns_in_use_and_their_rates() {
    let mut b = Bench::new();
    let qs = [b.qp(), b.qp(), b.qp()];
    assert_eq!(b.nic.qpns(), &qs[..]);
    let input = wire::contract::cmd::ObjInRepr { id: qs[1] }.to_bytes();
    assert_eq!(b.run(wire::contract::cmd::op::DESTROY_QP, &input).0, wire::contract::cmd::Status::Ok);
    assert_eq!(b.nic.qpns(), &[qs[0], qs[2]]);
    b.nic.set_active(qs[0], true);
    assert_eq!(b.nic.qpns(), &[qs[0], qs[2]], "already in");
    b.nic.set_active(qs[1], false);
    assert_eq!(b.nic.qpns(), &[qs[0], qs[2]], "not in");
    assert_eq!(b.qp(), qs[1], "the lowest free QPN");
    assert_eq!(b.nic.qpns(), &qs[..]);
    assert_eq!(b.nic.qp_rate_mbps(qs[0]), Some(100_000.0));
    b.nic.qp_mut(qs[0]).unwrap().rp.rc = super::dcqcn::rate_q8(1234);
    assert_eq!(b.nic.qp_rate_mbps(qs[0]), Some(1234.0));
    assert_eq!(b.nic.qp_rate_mbps(1), None);
}

/// The checks find a broken QP, a window or queue past its bound, and (turned on) stop at the first decision
/// after which one fails.
#[test]
fn the_checks_catch_a_broken_state() {
    let mut b = Bench::new();
    let q = b.rts_qp().qpn;
    assert_eq!(b.nic.check_invariants(), Ok(()));
    b.nic.qp_mut(q).unwrap().req.rd_atomic = 1;
    assert!(b.nic.check_invariants().unwrap_err().contains("rd_atomic"));
    b.nic.qp_mut(q).unwrap().req.rd_atomic = 0;
    let w = b.nic.cfg.profile.wqe_window as usize;
    let qp = b.nic.qp_mut(q).unwrap();
    for _ in 0..=w {
        let index = qp.sq.ci;
        qp.sq.ci = index.wrapping_add(1);
        qp.req.push(qp::SendWqe::unsent(index));
    }
    assert!(b.nic.check_invariants().unwrap_err().contains("the WQE window holds 9"));
    b.nic.qp_mut(q).unwrap().req = qp::ReqState::default();
    b.nic.qp_mut(q).unwrap().sq.ci = 0;
    for _ in 0..b.nic.cfg.profile.ctrl_queue {
        b.nic.ctrl_queue.push_back(vec![0; 60]);
    }
    assert_eq!(b.nic.check_invariants(), Ok(()), "the control queue full");
    b.nic.ctrl_queue.push_back(vec![0; 60]);
    assert!(b.nic.check_invariants().unwrap_err().contains("control queue"));
    b.nic.ctrl_queue.clear();
    // After a decision on the QP: kept, and reported from then on.
    b.nic.set_checks(true);
    b.nic.qp_mut(q).unwrap().resp.recv = Some(qp::RecvCtx { index: 9, offset: 0 });
    let mem = &mut b.mem;
    b.nic.apply(0, &Decision::Timer { qpn: q, timer: timer::TimerKind::Alpha }, mem).unwrap_err();
    b.nic.qp_mut(q).unwrap().rp.alpha_timer = Some(0);
    b.nic.apply(0, &Decision::Timer { qpn: q, timer: timer::TimerKind::Alpha }, mem).unwrap();
    let f = b.nic.check_failure().expect("the check after the decision failed");
    assert!(f.contains("Alpha timer") && f.contains("receive in progress"), "{f}");
    assert!(b.nic.check_invariants().is_err(), "and is reported from then on");
    let mut off = Bench::new();
    let q = off.rts_qp().qpn;
    off.nic.set_checks(false);
    off.nic.qp_mut(q).unwrap().resp.recv = Some(qp::RecvCtx { index: 9, offset: 0 });
    off.nic.qp_mut(q).unwrap().rp.alpha_timer = Some(0);
    off.nic.apply(0, &Decision::Timer { qpn: q, timer: timer::TimerKind::Alpha }, &mut off.mem).unwrap();
    assert_eq!(off.nic.check_failure(), None, "checks off");
}

/// Doorbells of the highest QP and CQ numbers reach them; writes to registers that take none (read-only
/// ones, the gaps between blocks, just past the DCQCN parameters) change nothing.
#[test]
fn doorbells_cover_every_object_and_nothing_else_is_written() {
    let mut b = Bench::new();
    let q = b.qp();
    assert_eq!(b.modify(q, wire::contract::verbs::QpState::Err), wire::contract::cmd::Status::Ok);
    let max_qp = b.nic.cfg.profile.max_qp;
    // Move the QP to the last number the table has, and a CQ to the last CQ number.
    let mut qp = b.nic.qps[q as usize].take().unwrap();
    qp.qpn = max_qp - 1;
    b.nic.qps[(max_qp - 1) as usize] = Some(qp);
    b.nic.mmio_write(doorbell::qp(max_qp - 1, doorbell::QP_SQ_PI), 4);
    assert_eq!(b.nic.qp(max_qp - 1).unwrap().sq.pi, 4);
    let last_cq = b.nic.cfg.profile.max_cq - 1;
    b.nic.cqs[last_cq as usize] = Some(cq::Cq::new(0x1000, 2));
    b.nic.mmio_write(doorbell::cq(last_cq, doorbell::CQ_CI), 3);
    assert_eq!(b.nic.cqs[last_cq as usize].as_ref().unwrap().ci, 3);
    b.nic.eq = Some(eq::Eq::new(0x2000, 2));
    let dcqcn_before = b.nic.dcqcn;
    let past_dcqcn = Dcqcn::ALL[0].offset() + 4 * Dcqcn::ALL.len() as u32;
    for off in [id::BASE + id::MAX_QP, counters::BASE + counters::FIRST, past_dcqcn, doorbell::BASE, 0x0060_0000] {
        b.nic.mmio_write(off, 0x55);
    }
    assert_eq!(b.nic.dcqcn, dcqcn_before);
    let e = b.nic.eq.as_ref().unwrap();
    assert_eq!((e.ci, e.armed), (0, false));
    assert_eq!(b.nic.mmio_read(id::BASE + id::MAX_QP), max_qp);
}

/// The control queue takes frames up to its slot's 1536 bytes, and no more than its depth.
#[test]
fn the_control_queue_takes_frames_that_fit_its_slots() {
    let mut n = Nic::new(NicConfig::default());
    assert!(n.queue_control(vec![0; 1536]));
    assert!(!n.queue_control(vec![0; 1537]));
    assert_eq!(n.counter(Counter::ctrl_drop_full), 1);
    for _ in 1..n.cfg.profile.ctrl_queue {
        assert!(n.queue_control(vec![0; 60]));
    }
    assert!(!n.queue_control(vec![0; 60]), "full");
    assert_eq!(n.counter(Counter::ctrl_drop_full), 2);
}
