//! The decision interface on a bare NIC: what each readiness query answers and why, the order of the ready
//! streams, when a timer counts as overdue and a pacer lets a stream go, and the checks after each kind of
//! decision.

use super::super::bench::{Bench, BenchQp};
use super::super::qp::{RecvCtx, RespItem, SendWqe};
use super::*;
use wire::contract::cmd::{op, QpAttrsRepr, RegMrOutRepr, RegMrRepr, Status};
use wire::contract::regs::doorbell;
use wire::contract::verbs::{attr, QpState, WcStatus};
use wire::contract::wqe::{send_flags, SendCtrlRepr, SendOp, SEND_DATA};
use wire::ext::AethRepr;
use wire::Psn;

/// `q`'s responder owes a plain ACK.
fn owe_ack(b: &mut Bench, q: u32) {
    b.nic.qp_mut(q).unwrap().resp.ack = Some((Psn::new(5), AethRepr { syndrome: 0x1F, msn: 0 }));
}

#[test]
fn an_illegal_decision_reads_as_the_decision_and_why() {
    let e = Illegal { decision: "SQ fetch for QP 0x2".into(), reason: "its WQE window is full".into() };
    assert_eq!(e.to_string(), "SQ fetch for QP 0x2: its WQE window is full");
}

#[test]
fn fetchable_says_why_not() {
    let mut b = Bench::new();
    let q = b.rts_qp().qpn;
    assert_eq!(b.nic.fetchable(q), Err("it has no posted WQE to fetch in its state"));
    assert_eq!(b.nic.fetchable(0x7F), Err("no such QP"));
    let w = b.nic.cfg.profile.wqe_window as u16;
    b.nic.mmio_write(doorbell::qp(q, doorbell::QP_SQ_PI), u32::from(w) + 1);
    assert_eq!(b.nic.fetchable(q), Ok(()));
    let qp = b.nic.qp_mut(q).unwrap();
    for i in 0..w {
        qp.req.push(SendWqe::unsent(i));
    }
    qp.sq.ci = w;
    assert_eq!(b.nic.fetchable(q), Err("its WQE window is full"), "one more posted, the window full");
}

#[test]
fn the_control_stream_is_ready_only_with_a_frame() {
    let mut b = Bench::new();
    assert_eq!(b.nic.tx_ready(TxPick::Control, 0), Err("the control queue is empty"));
    assert!(b.nic.ready_picks(0, 0).is_empty());
    b.nic.ctrl_queue.push_back(vec![0; 60]);
    assert_eq!(b.nic.tx_ready(TxPick::Control, 0), Ok(()));
    assert_eq!(b.nic.ready_picks(0, 0), [TxPick::Control]);
}

/// The control queue first, then the QPs round from the one asked for, each QP's responder before its
/// requester.
#[test]
fn ready_picks_go_round_from_the_qp_asked_for() {
    let mut b = Bench::new();
    let qs = [b.rts_qp().qpn, b.rts_qp().qpn, b.rts_qp().qpn];
    for &q in &qs {
        owe_ack(&mut b, q);
    }
    b.nic.qp_mut(qs[1]).unwrap().req.push(SendWqe::unsent(0));
    let resp = |qpn| TxPick::Qp { qpn, stream: Stream::Responder };
    let req = |qpn| TxPick::Qp { qpn, stream: Stream::Requester };
    assert_eq!(b.nic.ready_picks(0, qs[1]), [resp(qs[1]), req(qs[1]), resp(qs[2]), resp(qs[0])]);
    assert_eq!(b.nic.ready_picks(0, qs[2]), [resp(qs[2]), resp(qs[0]), resp(qs[1]), req(qs[1])]);
    assert_eq!(b.nic.ready_picks(0, qs[2] + 1), b.nic.ready_picks(0, qs[0]), "past the last: from the first");
    b.nic.ctrl_queue.push_back(vec![0; 60]);
    assert_eq!(b.nic.ready_picks(0, qs[2])[..2], [TxPick::Control, resp(qs[2])]);
}

/// A timer is overdue once more than `TIMER_TOLERANCE` ticks have passed its deadline.
#[test]
fn a_timer_is_overdue_past_its_tolerance() {
    let mut b = Bench::new();
    let q = b.rts_qp().qpn;
    assert_eq!(b.nic.overdue(1000), None, "nothing armed");
    b.nic.qp_mut(q).unwrap().rp.alpha_timer = Some(10);
    assert_eq!(b.nic.overdue(10), None);
    assert_eq!(b.nic.overdue(10 + TIMER_TOLERANCE), None, "at the tolerance");
    assert_eq!(b.nic.overdue(10 + TIMER_TOLERANCE + 1), Some((q, TimerKind::Alpha, 10)));
}

/// The next time a pacer lets a stream with something to send go: none while it may send already or has
/// nothing to send or no source GID, else the start of the pacer's first tick with credit.
#[test]
fn next_paced_is_the_pacers_first_tick_with_credit() {
    let mut b = Bench::new();
    let q = b.rts_qp().qpn;
    let (params, line) = (b.nic.dcqcn, b.nic.line);
    let now = tick_start(5);
    assert_eq!(b.nic.next_paced(now), None, "nothing to send");
    let qp = b.nic.qp_mut(q).unwrap();
    qp.rp.on_cnp(0, &params);
    qp.rp.on_sent(5, 8192, line, &params);
    assert!(!qp.rp.may_send(5));
    let t = qp.rp.send_tick(5);
    assert_eq!(b.nic.next_paced(now), None, "held, but nothing to send");
    owe_ack(&mut b, q);
    assert_eq!(b.nic.next_paced(now), None, "held, and an ACK owed: ACKs are not paced");
    b.nic.qp_mut(q).unwrap().req.push(SendWqe::unsent(0));
    assert_eq!(b.nic.next_paced(now), Some(tick_start(t)), "the requester held to tick {t}");
    assert_eq!(b.nic.next_paced(tick_start(t)), None, "let go at tick {t}");
    b.nic.qp_mut(q).unwrap().attrs.sgid_index = 3;
    assert_eq!(b.nic.next_paced(now), None, "no source GID: never sends");
}

/// After a transmit, a receive and a command, the QP it touched is checked (here: a receive in progress at a
/// slot the RQ never held).
#[test]
fn the_checks_follow_transmits_receives_and_commands() {
    let broken = |b: &mut Bench, q: u32| b.nic.qp_mut(q).unwrap().resp.recv = Some(RecvCtx { index: 9, offset: 0 });
    let fresh = || {
        let mut b = Bench::new();
        let q = b.rts_qp().qpn;
        b.nic.set_checks(true);
        (b, q)
    };
    let (mut b, q) = fresh();
    owe_ack(&mut b, q);
    let tx = Decision::Tx(TxPick::Qp { qpn: q, stream: Stream::Responder });
    let Effect::Frame(ack) = b.nic.apply(0, &tx, &mut b.mem).unwrap() else { panic!("an ACK") };
    assert_eq!(b.nic.check_failure(), None);
    owe_ack(&mut b, q);
    broken(&mut b, q);
    b.nic.apply(0, &tx, &mut b.mem).unwrap();
    assert!(b.nic.check_failure().is_some_and(|f| f.contains("transmit from QP")), "{:?}", b.nic.check_failure());
    // The ACK, readdressed to this NIC's QP.
    let mut h = wire::parse_headers(&ack).unwrap().hdr;
    h.bth.dest_qp = q;
    let (mut b, q) = fresh();
    broken(&mut b, q);
    b.nic.apply(0, &Decision::Rx(h.emit(&[])), &mut b.mem).unwrap();
    assert!(b.nic.check_failure().is_some_and(|f| f.contains("receive of a")), "{:?}", b.nic.check_failure());
    let (mut b, q) = fresh();
    broken(&mut b, q);
    let a = QpAttrsRepr { qpn: q, attr_mask: attr::STATE, qp_state: QpState::Rts as u8, ..Default::default() };
    b.ring(op::MODIFY_QP, &a.to_bytes());
    b.nic.apply(0, &Decision::Command, &mut b.mem).unwrap();
    assert!(b.nic.check_failure().is_some_and(|f| f.contains("command run")), "{:?}", b.nic.check_failure());
}

/// A raw packet QP in RTS with the bench's rings.
fn raw_qp(b: &mut Bench) -> BenchQp {
    let q = b.qp_of_type(QpType::RawPacket);
    let qpn = q.qpn;
    for (state, mask) in [(QpState::Init, attr::PORT), (QpState::Rtr, 0), (QpState::Rts, 0)] {
        let a = QpAttrsRepr {
            qpn,
            attr_mask: attr::STATE | mask,
            qp_state: state as u8,
            port_num: 1,
            ..Default::default()
        };
        assert_eq!(b.run(op::MODIFY_QP, &a.to_bytes()).0, Status::Ok, "to {state:?}");
    }
    q
}

/// A raw WQE is read again from the SQ for its frame: one rewritten after its fetch to another inline length
/// completes LOC_PROT_ERR, and nothing is sent.
#[test]
fn a_raw_wqe_rewritten_after_its_fetch_fails_cleanly() {
    let mut b = Bench::new();
    let q = raw_qp(&mut b);
    let frame = [0x5Au8; 64];
    let ctrl = |len| SendCtrlRepr { opcode: SendOp::Send as u8, flags: send_flags::INLINE, len, imm: 0, wr_id: 0x77 };
    b.mem.write(q.sq, &ctrl(64).to_bytes()).unwrap();
    b.mem.write(q.sq + SEND_DATA as u64, &frame).unwrap();
    b.nic.mmio_write(doorbell::qp(q.qpn, doorbell::QP_SQ_PI), 1);
    b.nic.apply(0, &Decision::FetchSq { qpn: q.qpn, primed: false }, &mut b.mem).unwrap();
    b.mem.write(q.sq, &ctrl(60).to_bytes()).unwrap();
    let tx = Decision::Tx(TxPick::Qp { qpn: q.qpn, stream: Stream::Raw });
    assert_eq!(b.nic.apply(0, &tx, &mut b.mem), Ok(Effect::None));
    let cqe = b.cqe(&q, 0);
    assert_eq!((cqe.wr_id, cqe.status), (0x77, WcStatus::LocProtErr as u8));
}

/// A limited requester's pacer is charged each frame's bytes on the wire (preamble, FCS and gap included).
#[test]
fn a_sent_frame_charges_the_pacer_its_wire_bytes() {
    let mut b = Bench::new();
    let q = b.rts_qp();
    let params = b.nic.dcqcn;
    b.nic.qp_mut(q.qpn).unwrap().rp.on_cnp(0, &params);
    let send = SendCtrlRepr { opcode: SendOp::Send as u8, flags: send_flags::SIGNALED, len: 0, imm: 0, wr_id: 1 };
    b.mem.write(q.sq, &send.to_bytes()).unwrap();
    b.nic.mmio_write(doorbell::qp(q.qpn, doorbell::QP_SQ_PI), 1);
    b.nic.apply(0, &Decision::FetchSq { qpn: q.qpn, primed: false }, &mut b.mem).unwrap();
    let tx = Decision::Tx(TxPick::Qp { qpn: q.qpn, stream: Stream::Requester });
    let Effect::Frame(f) = b.nic.apply(0, &tx, &mut b.mem).unwrap() else { panic!("a SEND") };
    assert_eq!(b.nic.qp(q.qpn).unwrap().rp.bytes as usize, f.len() + super::super::WIRE_OVERHEAD);
}

/// A flush step on a QP with nothing left (refused as a decision) completes nothing and moves no ring.
#[test]
fn a_flush_step_with_nothing_left_does_nothing() {
    let mut b = Bench::new();
    let q = b.rts_qp();
    assert_eq!(b.modify(q.qpn, QpState::Err), Status::Ok);
    assert!(!b.nic.flush_pending(q.qpn));
    assert!(b.nic.apply(0, &Decision::Flush { qpn: q.qpn }, &mut b.mem).is_err());
    b.nic.flush_one(q.qpn, &mut b.mem);
    let qp = b.nic.qp(q.qpn).unwrap();
    assert_eq!((qp.sq.ci, qp.rq.ci), (0, 0));
    assert_eq!(b.cqe(&q, 0), Default::default(), "no CQE");
}

/// The responder's pacer holds READ responses only (ACKs and NAKs go at once), and is charged each READ
/// response's bytes on the wire.
#[test]
fn the_responders_pacer_holds_read_responses_only() {
    let mut b = Bench::new();
    let q = b.rts_qp().qpn;
    let (params, line) = (b.nic.dcqcn, b.nic.line);
    let va = b.mem.alloc(4096);
    let read = RespItem::Read { psn: Psn::new(9), va, resid: 64, at_base: true, msn: 1 };
    let qp = b.nic.qp_mut(q).unwrap();
    qp.rp.on_cnp(0, &params);
    qp.resp.out.push_back(read.clone());
    let pick = TxPick::Qp { qpn: q, stream: Stream::Responder };
    assert_eq!(b.nic.tx_ready(pick, 1), Ok(()), "credit at tick 1");
    let Effect::Frame(f) = b.nic.apply(tick_start(1), &Decision::Tx(pick), &mut b.mem).unwrap() else {
        panic!("a READ response")
    };
    let qp = b.nic.qp_mut(q).unwrap();
    assert_eq!(qp.rp.bytes as usize, f.len() + super::super::WIRE_OVERHEAD);
    qp.rp.on_sent(1, 8192, line, &params);
    qp.resp.out.push_back(read);
    assert_eq!(b.nic.tx_ready(pick, 1), Err("its pacer holds it back"));
    b.nic.qp_mut(q).unwrap().resp.out.clear();
    owe_ack(&mut b, q);
    assert_eq!(b.nic.tx_ready(pick, 1), Ok(()), "an ACK is not paced");
}

/// The requester reads a WQE's slot for its first packet and keeps the descriptor for the next ones: a slot
/// rewritten after the first packet is not seen until a command on a QP drops what was kept.
#[test]
fn a_wqe_descriptor_is_kept_across_its_packets() {
    use wire::contract::wqe::DataSegRepr;
    let mut b = Bench::new();
    let q = b.rts_qp();
    let (old, new) = (b.mem.alloc(3 * 1024), b.mem.alloc(3 * 1024));
    b.mem.write(old, &[0x11; 3 * 1024]).unwrap();
    b.mem.write(new, &[0x22; 3 * 1024]).unwrap();
    let pdn = b.nic.qp(q.qpn).unwrap().pdn;
    let lkey = |b: &mut Bench, iova| {
        let mr = RegMrRepr { pdn, access: 0, iova, length: 3 * 1024 };
        RegMrOutRepr::from_bytes(&b.run(op::REG_MR, &mr.to_bytes()).1).unwrap().lkey
    };
    let keys = [lkey(&mut b, old), lkey(&mut b, new)];
    let send = SendCtrlRepr { opcode: SendOp::Send as u8, flags: 0, len: 1, imm: 0, wr_id: 1 };
    let sge = |addr, lkey| DataSegRepr { addr, lkey, length: 3 * 1024 }.to_bytes();
    b.mem.write(q.sq, &send.to_bytes()).unwrap();
    b.mem.write(q.sq + SEND_DATA as u64, &sge(old, keys[0])).unwrap();
    b.nic.mmio_write(doorbell::qp(q.qpn, doorbell::QP_SQ_PI), 1);
    b.nic.apply(0, &Decision::FetchSq { qpn: q.qpn, primed: false }, &mut b.mem).unwrap();
    let tx = Decision::Tx(TxPick::Qp { qpn: q.qpn, stream: Stream::Requester });
    let last_byte = |b: &mut Bench| {
        let Effect::Frame(f) = b.nic.apply(0, &tx, &mut b.mem).unwrap() else { panic!("a SEND packet") };
        f[f.len() - 5]
    };
    assert_eq!(last_byte(&mut b), 0x11, "the first packet");
    b.mem.write(q.sq + SEND_DATA as u64, &sge(new, keys[1])).unwrap();
    assert_eq!(last_byte(&mut b), 0x11, "the second packet: the kept descriptor");
    let a = QpAttrsRepr {
        qpn: q.qpn,
        attr_mask: attr::STATE | attr::ACCESS_FLAGS,
        qp_state: QpState::Rts as u8,
        qp_access_flags: wire::contract::verbs::access::ALL,
        ..Default::default()
    };
    assert_eq!(b.run(op::MODIFY_QP, &a.to_bytes()).0, Status::Ok);
    assert_eq!(last_byte(&mut b), 0x22, "the third packet: read again after the command");
}

/// An inline WQE's descriptor is not kept: its bytes come from the slot with each packet, so a SEND sent
/// again after its ACK timer ran out carries what the slot holds then.
#[test]
fn an_inline_descriptor_is_not_kept() {
    let mut b = Bench::new();
    let q = b.rts_qp();
    let send = SendCtrlRepr { opcode: SendOp::Send as u8, flags: send_flags::INLINE, len: 40, imm: 0, wr_id: 1 };
    b.mem.write(q.sq, &send.to_bytes()).unwrap();
    b.mem.write(q.sq + SEND_DATA as u64, &[0x11; 40]).unwrap();
    b.nic.mmio_write(doorbell::qp(q.qpn, doorbell::QP_SQ_PI), 1);
    b.nic.apply(0, &Decision::FetchSq { qpn: q.qpn, primed: false }, &mut b.mem).unwrap();
    let tx = Decision::Tx(TxPick::Qp { qpn: q.qpn, stream: Stream::Requester });
    let last_byte = |b: &mut Bench, now| {
        let Effect::Frame(f) = b.nic.apply(now, &tx, &mut b.mem).unwrap() else { panic!("a SEND") };
        f[f.len() - 5]
    };
    assert_eq!(last_byte(&mut b, 0), 0x11, "the first transmission");
    b.mem.write(q.sq + SEND_DATA as u64, &[0x22; 40]).unwrap();
    let due = b.nic.timer_deadline(q.qpn, TimerKind::Ack).expect("the ACK timer armed");
    let now = tick_start(due);
    b.nic.apply(now, &Decision::Timer { qpn: q.qpn, timer: TimerKind::Ack }, &mut b.mem).unwrap();
    assert_eq!(last_byte(&mut b, now), 0x22, "sent again from the slot");
}

/// A fetch may give the requester its WQE's descriptor (`primed`) only while it keeps none: the first packet
/// then reads no slot (a slot rewritten after the fetch is not seen), and a second primed fetch while that
/// descriptor is kept is illegal, where one not primed is not.
#[test]
fn a_primed_fetch_keeps_its_descriptor_and_only_while_none_is_kept() {
    use wire::contract::wqe::DataSegRepr;
    let mut b = Bench::new();
    let q = b.rts_qp();
    let old = b.mem.alloc(2 * 64);
    let new = old + 64;
    b.mem.write(old, &[0x11; 64]).unwrap();
    b.mem.write(new, &[0x22; 64]).unwrap();
    let pdn = b.nic.qp(q.qpn).unwrap().pdn;
    let mr = RegMrRepr { pdn, access: 0, iova: old, length: 2 * 64 };
    let lkey = RegMrOutRepr::from_bytes(&b.run(op::REG_MR, &mr.to_bytes()).1).unwrap().lkey;
    let stride = 1u64 << b.nic.qp(q.qpn).unwrap().sq.log_stride;
    let send = SendCtrlRepr { opcode: SendOp::Send as u8, flags: 0, len: 1, imm: 0, wr_id: 1 };
    let sge = |addr| DataSegRepr { addr, lkey, length: 64 }.to_bytes();
    for slot in 0..3 {
        b.mem.write(q.sq + slot * stride, &send.to_bytes()).unwrap();
        b.mem.write(q.sq + slot * stride + SEND_DATA as u64, &sge(old)).unwrap();
    }
    b.nic.mmio_write(doorbell::qp(q.qpn, doorbell::QP_SQ_PI), 3);
    assert!(b.nic.keeps_no_descriptor());
    b.nic.apply(0, &Decision::FetchSq { qpn: q.qpn, primed: true }, &mut b.mem).unwrap();
    assert!(!b.nic.keeps_no_descriptor(), "the fetched slot's descriptor kept");
    let again = b.nic.apply(0, &Decision::FetchSq { qpn: q.qpn, primed: true }, &mut b.mem);
    assert!(again.is_err_and(|e| e.reason.contains("while one is kept")), "primed while one is kept");
    b.nic.apply(0, &Decision::FetchSq { qpn: q.qpn, primed: false }, &mut b.mem).unwrap();
    b.mem.write(q.sq + SEND_DATA as u64, &sge(new)).unwrap();
    let tx = Decision::Tx(TxPick::Qp { qpn: q.qpn, stream: Stream::Requester });
    let Effect::Frame(f) = b.nic.apply(0, &tx, &mut b.mem).unwrap() else { panic!("a SEND") };
    assert_eq!(f[f.len() - 5], 0x11, "the first packet sends the fetched descriptor's bytes, reading no slot");
    assert!(b.nic.keeps_no_descriptor(), "nothing kept past the WQE's last packet");
}
