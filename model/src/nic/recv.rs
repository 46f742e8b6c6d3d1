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
use wire::roce::Layer;
use wire::{DropReason, OpKind, RocePacket};

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
    /// No RC QP by that number.
    NoQp,
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
    let Some(q) = qp(bth.dest_qp).filter(|q| q.qp_type == QpType::Rc) else { return Route::NoQp };
    let connected = !matches!(q.state, QpState::Reset | QpState::Init);
    let gid = station.gids.get(usize::from(q.attrs.sgid_index)).copied().flatten();
    if connected && (q.attrs.dgid != pkt.hdr.ip.src_gid() || gid != Some(pkt.hdr.ip.dst_gid())) {
        return Route::OtherPeer;
    }
    let ce = pkt.hdr.ip.ecn() == 3;
    match bth.opcode.info().map(|i| i.kind) {
        Some(OpKind::Cnp) => Route::Cnp,
        Some(k) if super::comp::is_completer_kind(k) => {
            if matches!(q.state, QpState::Rts | QpState::Sqd) && !q.flushing {
                Route::Response { ce }
            } else {
                Route::ResponseQpState { ce }
            }
        }
        // Every other opcode the parser passes is a request.
        _ => Route::Request { ce },
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
            let kind = pkt.hdr.bth.opcode.info().expect("a parsed opcode").kind;
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
