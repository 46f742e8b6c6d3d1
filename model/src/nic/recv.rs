//! Receive path: parse and check the frame (wire's verdict, counted by cause), find the QP, apply ECN
//! (notification point) and CNPs (reaction point), and dispatch requests to `resp`, responses to `comp`.
//! Frames that are not RoCEv2 go to `raw`.

use super::qp::Qp;
use super::timer::tick_of;
use super::Nic;
use crate::hostmem::Dma;
use crate::Time;
use wire::bth::{pkey_match, DEFAULT_PKEY};
use wire::contract::regs::{Counter, Dcqcn};
use wire::contract::verbs::{QpState, QpType};
use wire::opcode::Transport;
use wire::roce::Layer;
use wire::{DropReason, OpKind, RocePacket};

/// The counter a frame the parser dropped counts, by its reason.
pub fn drop_counter(r: DropReason) -> Counter {
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

/// Where a received frame goes: `receive`'s dispatch, a pure function of the frame's parse, the NIC's MAC
/// and GID table and the QP the BTH names. The RTL's `RxDispatch` computes the same from the RX record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// A unicast frame for another MAC (a switch may flood before it learns).
    OtherMac,
    /// Not RoCEv2: the raw packet QP, ARP and ICMP echo.
    Raw,
    /// Dropped by the parser, counted by cause.
    Malformed(DropReason),
    /// A partition this port is not a member of.
    BadPkey,
    /// No RC QP by that number (a UC or UD packet names none either).
    NoQp,
    /// A QP in RESET or INIT takes nothing (rxe's check_type_state).
    QpState,
    /// A connected QP hears only its peer, at its own GID (rxe's check_addr).
    OtherPeer,
    /// A congestion notification for the QP's reaction point.
    Cnp,
    /// A request for the responder; `ce` when its IP header is CE-marked (the notification point's input).
    Request { ce: bool },
    /// A response for the completer.
    Response { ce: bool },
    /// A response to a QP that cannot take one (not RTS or SQD, or flushing): dropped once ECN is seen.
    ResponseQpState { ce: bool },
}

/// The NIC's own addresses, as `route` reads them.
pub struct Station<'a> {
    pub mac: [u8; 6],
    pub gids: &'a [Option<[u8; 16]>],
}

/// The route of `frame`, parsed as `parsed`, to a NIC at `station` whose QPs `qp` finds by number.
/// A frame shorter than an Ethernet header is truncated before its MAC is looked at.
pub fn route<'q>(
    station: &Station<'_>,
    qp: impl Fn(u32) -> Option<&'q Qp>,
    frame: &[u8],
    parsed: &Result<RocePacket<'_>, DropReason>,
) -> Route {
    let short = matches!(parsed, Err(DropReason::Truncated(Layer::Ethernet)));
    if !short && frame[0] & 1 == 0 && frame[..6] != station.mac {
        return Route::OtherMac;
    }
    let pkt = match parsed {
        Ok(p) => p,
        Err(DropReason::NotRoce) => return Route::Raw,
        Err(r) => return Route::Malformed(*r),
    };
    let bth = pkt.hdr.bth;
    if !pkey_match(bth.pkey, DEFAULT_PKEY) {
        return Route::BadPkey;
    }
    let Some(info) = bth.opcode.info() else { return Route::Malformed(DropReason::UnknownOpcode(bth.opcode.0)) };
    let rc = matches!(info.transport, Transport::Rc | Transport::Cnp);
    let Some(q) = qp(bth.dest_qp).filter(|q| q.qp_type == QpType::Rc && rc) else { return Route::NoQp };
    if matches!(q.state, QpState::Reset | QpState::Init) {
        return Route::QpState;
    }
    let gid = station.gids.get(usize::from(q.attrs.sgid_index)).copied().flatten();
    if q.attrs.dgid != pkt.hdr.ip.src_gid() || gid != Some(pkt.hdr.ip.dst_gid()) {
        return Route::OtherPeer;
    }
    let ce = pkt.hdr.ip.ecn() == 3;
    if info.kind == OpKind::Cnp {
        Route::Cnp
    } else if !info.is_response() {
        Route::Request { ce }
    } else if matches!(q.state, QpState::Rts | QpState::Sqd) && !q.flushing {
        Route::Response { ce }
    } else {
        Route::ResponseQpState { ce }
    }
}

pub(super) fn receive(nic: &mut Nic, now: Time, frame: &[u8], mem: &mut dyn Dma) {
    nic.count(Counter::rx_frames);
    nic.count_n(Counter::rx_bytes, frame.len() as u64);
    let parsed = wire::parse(frame);
    let station = Station { mac: nic.mac, gids: &nic.gids };
    let route = route(&station, |n| nic.qp(n), frame, &parsed);
    let (pkt, qpn) = match (route, &parsed) {
        (Route::Raw, _) => return super::raw::receive(nic, frame, mem),
        (Route::OtherMac | Route::OtherPeer, _) => return nic.count(Counter::rx_drop_not_for_us),
        (Route::Malformed(r), _) => return nic.count(drop_counter(r)),
        (Route::BadPkey, _) => return nic.count(Counter::rx_drop_bad_bth),
        (Route::NoQp, _) => return nic.count(Counter::rx_drop_no_qp),
        (Route::QpState, _) => return nic.count(Counter::rx_drop_qp_state),
        (_, Ok(p)) => (p, p.hdr.bth.dest_qp),
        (_, Err(_)) => unreachable!("a route past the QP lookup has a parsed packet"),
    };
    match route {
        Route::Cnp => {
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
        Route::Request { ce: true } | Route::Response { ce: true } | Route::ResponseQpState { ce: true } => {
            nic.count(Counter::ecn_ce_received);
            notification_point(nic, qpn, now);
        }
        _ => {}
    }
    match route {
        Route::Request { .. } => super::resp::on_request(nic, qpn, pkt, now, mem),
        Route::Response { .. } => {
            let kind = pkt.hdr.bth.opcode.info().expect("a routed opcode").kind;
            super::comp::on_response(nic, qpn, kind, pkt, now, mem)
        }
        _ => nic.count(Counter::rx_drop_qp_state),
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

#[cfg(test)]
mod tests {
    use super::super::bench::Bench;
    use super::*;
    use wire::eth::EthernetRepr;
    use wire::ipv4::Ipv4Repr;
    use wire::{BthRepr, ExtHeaders, IpRepr, Opcode, Psn, RoceHeaders};

    /// A frame from the bench QP's peer (10.0.0.2) to its port (10.0.0.1, MAC 02:00:00:00:00:01).
    fn from_peer(qpn: u32, opcode: Opcode, tos: u8) -> Vec<u8> {
        let info = opcode.info().expect("an opcode of the table");
        let mut ext = ExtHeaders::default();
        if info.has(wire::opcode::hdr::DETH) {
            ext.deth = Some(wire::ext::DethRepr { qkey: 1, src_qp: 2 });
        }
        if info.has(wire::opcode::hdr::AETH) {
            ext.aeth = Some(wire::ext::AethRepr { syndrome: wire::ext::syndrome::ACK_UNLIMITED, msn: 0 });
        }
        let h = RoceHeaders {
            eth: EthernetRepr { dst: [2, 0, 0, 0, 0, 1], src: [2, 0, 0, 0, 0, 2], vlan: None, ethertype: 0 },
            ip: IpRepr::V4(Ipv4Repr { src: [10, 0, 0, 2], dst: [10, 0, 0, 1], tos, ttl: 64, ident: 0, payload_len: 0 }),
            udp_src_port: 0xC000,
            bth: BthRepr { opcode, dest_qp: qpn, psn: Psn::new(0), ack_req: true, ..Default::default() },
            ext,
        };
        h.emit(if info.has_payload { &[0u8; 8] } else { &[] })
    }

    fn receive_one(b: &mut Bench, frame: &[u8]) {
        receive(&mut b.nic, 0, frame, &mut b.mem);
    }

    #[test]
    fn a_uc_or_ud_packet_names_no_rc_qp() {
        let mut b = Bench::new();
        let q = b.rts_qp();
        for op in [Opcode::UD_SEND_ONLY, Opcode::UC_SEND_ONLY] {
            receive_one(&mut b, &from_peer(q.qpn, op, 0));
        }
        assert_eq!(b.nic.counter(Counter::rx_drop_no_qp), 2);
        // Dropped as rxe drops them: no NAK, and the QP keeps working.
        assert_eq!(b.nic.counter(Counter::tx_naks_invalid_req), 0);
        assert_eq!(b.nic.qp_state(q.qpn).map(|s| s.state), Some(QpState::Rts));
        receive_one(&mut b, &from_peer(q.qpn, Opcode::SEND_ONLY, 0));
        assert_eq!(b.nic.counter(Counter::rq_wqes) + b.nic.counter(Counter::tx_rnr_naks), 1, "an RC SEND is taken");
    }

    #[test]
    fn a_qp_in_reset_or_init_takes_nothing() {
        let mut b = Bench::new();
        let q = b.rts_qp();
        assert_eq!(b.modify(q.qpn, QpState::Reset), wire::contract::cmd::Status::Ok);
        // CE-marked, so that a notification point would answer it if it got that far.
        for op in [Opcode::SEND_ONLY, Opcode::ACKNOWLEDGE, Opcode::CNP] {
            receive_one(&mut b, &from_peer(q.qpn, op, 3));
        }
        assert_eq!(b.nic.counter(Counter::rx_drop_qp_state), 3);
        assert_eq!(b.nic.counter(Counter::ecn_ce_received) + b.nic.counter(Counter::cnps_received), 0);
    }

    #[test]
    fn a_frame_shorter_than_an_ethernet_header_is_truncated() {
        let mut b = Bench::new();
        b.rts_qp();
        // Another station's MAC, but too short to be anyone's frame.
        receive_one(&mut b, &[2, 9, 9, 9, 9, 9, 2, 0, 0, 0, 0, 2, 0x08]);
        assert_eq!(b.nic.counter(Counter::rx_drop_truncated), 1);
        assert_eq!(b.nic.counter(Counter::rx_drop_not_for_us), 0);
        receive_one(&mut b, &[2, 9, 9, 9, 9, 9, 2, 0, 0, 0, 0, 2, 0x08, 0x00]);
        assert_eq!(b.nic.counter(Counter::rx_drop_not_for_us), 1);
    }
}
