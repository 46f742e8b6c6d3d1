//! Receive path: parse and check the frame (wire's verdict, counted by cause), find the QP, apply ECN
//! (notification point) and CNPs (reaction point), and dispatch requests to `resp`, responses to `comp`.
//! Frames that are not RoCEv2 go to `raw`.

use super::timer::tick_of;
use super::Nic;
use crate::hostmem::Dma;
use crate::Time;
use wire::bth::{pkey_match, DEFAULT_PKEY};
use wire::contract::regs::{Counter, Dcqcn};
use wire::contract::verbs::{QpState, QpType};
use wire::{DropReason, OpKind};

fn drop_counter(r: DropReason) -> Counter {
    match r {
        DropReason::TooLong => Counter::rx_drop_too_long,
        DropReason::NotRoce => Counter::rx_drop_not_roce,
        DropReason::Truncated(_) => Counter::rx_drop_truncated,
        DropReason::BadIpHeader(_) => Counter::rx_drop_bad_ip,
        DropReason::BadUdpLength => Counter::rx_drop_bad_udp,
        DropReason::BadTver => Counter::rx_drop_bad_bth,
        DropReason::UnknownOpcode(_) => Counter::rx_drop_bad_opcode,
        DropReason::BadLength => Counter::rx_drop_bad_length,
        DropReason::BadIcrc => Counter::rx_drop_bad_icrc,
    }
}

pub(super) fn receive(nic: &mut Nic, now: Time, frame: &[u8], mem: &mut dyn Dma) {
    nic.count(Counter::rx_frames);
    nic.count_n(Counter::rx_bytes, frame.len() as u64);
    // Unicast frames for another MAC are not ours (a switch may flood before it learns).
    if frame.len() >= 6 && frame[0] & 1 == 0 && frame[..6] != nic.mac {
        nic.count(Counter::rx_drop_not_for_us);
        return;
    }
    let pkt = match wire::parse(frame) {
        Ok(p) => p,
        Err(DropReason::NotRoce) => return super::raw::receive(nic, frame, mem),
        Err(r) => {
            nic.count(drop_counter(r));
            return;
        }
    };
    let bth = pkt.hdr.bth;
    let Some(info) = bth.opcode.info() else { return };
    if !pkey_match(bth.pkey, DEFAULT_PKEY) {
        nic.count(Counter::rx_drop_bad_bth);
        return;
    }
    let qpn = bth.dest_qp;
    let Some(qp) = nic.qp(qpn).filter(|q| q.qp_type == QpType::Rc) else {
        nic.count(Counter::rx_drop_no_qp);
        return;
    };
    // A connected QP hears only its peer, at its own GID (rxe's check_addr).
    let connected = !matches!(qp.state, QpState::Reset | QpState::Init);
    if connected
        && (qp.attrs.dgid != pkt.hdr.ip.src_gid() || nic.gid(qp.attrs.sgid_index) != Some(pkt.hdr.ip.dst_gid()))
    {
        nic.count(Counter::rx_drop_not_for_us);
        return;
    }
    if info.kind == OpKind::Cnp {
        nic.count(Counter::cnps_received);
        let params = nic.dcqcn;
        if params.get(Dcqcn::ENABLE) != 0 {
            if let Some(qp) = nic.qp_mut(qpn) {
                if qp.rp.on_cnp(tick_of(now), &params) {
                    nic.count(Counter::rate_cuts);
                }
            }
        }
        return;
    }
    if pkt.hdr.ip.ecn() == 3 {
        nic.count(Counter::ecn_ce_received);
        notification_point(nic, qpn, now);
    }
    if info.is_request() {
        super::resp::on_request(nic, qpn, &pkt, now, mem);
    } else if super::comp::is_completer_kind(info.kind) {
        let state_ok = nic.qp(qpn).is_some_and(|q| matches!(q.state, QpState::Rts | QpState::Sqd) && !q.flushing);
        if !state_ok {
            nic.count(Counter::rx_drop_qp_state);
            return;
        }
        super::comp::on_response(nic, qpn, info.kind, &pkt, now, mem);
    }
}

/// CE-marked packet for `qpn`: send one CNP to its peer, at most once per interval (in ticks).
fn notification_point(nic: &mut Nic, qpn: u32, now: Time) {
    if nic.dcqcn.get(Dcqcn::NP_ENABLE) == 0 {
        return;
    }
    let (tick, interval) = (tick_of(now), nic.dcqcn.cnp_interval());
    let Some(qp) = nic.qp_mut(qpn) else { return };
    if qp.last_cnp.is_some_and(|t| tick < t + interval) {
        return;
    }
    qp.last_cnp = Some(tick);
    if let Some(f) = nic.build_cnp(qpn) {
        if nic.queue_control(f) {
            nic.count(Counter::cnps_sent);
        }
    }
}
