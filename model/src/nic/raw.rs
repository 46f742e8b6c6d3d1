//! The raw Ethernet path: every frame that is not RoCEv2. The NIC answers ARP requests and ICMP echo
//! requests for its own IPv4 addresses (those of its IPv4-mapped GIDs) itself, as FPGA stacks without a host
//! network stack do; every other frame goes to the raw packet QP's receive queue, one frame per receive
//! WQE. That QP's send WQEs (SEND only) go out as whole frames, padded to the Ethernet minimum.

use super::qp::{scatter_pieces, walk_sges, Qp, Sge, WqeData};
use super::req::read_desc;
use super::resp::{read_recv_wqe, Received, RecvDone};
use super::{Nic, Side};
use crate::hostmem::Dma;
use wire::contract::regs::Counter;
use wire::contract::verbs::{QpState, QpType, WcOpcode, WcStatus};
use wire::contract::wqe::SendOp;
use wire::eth::MIN_FRAME_LEN;
use wire::ipv4::Ipv4Addr;
use wire::{arp, icmp, MAX_FRAME_LEN};

impl Nic {
    /// The IPv4 addresses the NIC answers ARP and ICMP echo for.
    fn owns_ipv4(&self, ip: Ipv4Addr) -> bool {
        self.gids.iter().flatten().any(|g| wire::ipv6::gid_to_ipv4(g) == Some(ip))
    }

    /// The raw packet QP that takes received frames: the first one able to receive.
    fn raw_receiver(&self) -> Option<u32> {
        self.active
            .iter()
            .copied()
            .find(|&q| self.qp(q).is_some_and(|qp| qp.qp_type == QpType::RawPacket && qp.can_receive() && !qp.flushing))
    }
}

/// A frame that is not RoCEv2 (already past the MAC filter).
pub(super) fn receive(nic: &mut Nic, frame: &[u8], mem: &mut dyn Dma) {
    if let Some((eth, req)) = arp::parse_frame(frame) {
        if req.oper == arp::REQUEST && nic.owns_ipv4(req.tpa) {
            let mac = nic.mac;
            let _ = nic.queue_control(arp::reply_frame(&eth, &req, mac));
            nic.count(Counter::arp_replies);
            return;
        }
    }
    // An echo request for one of its addresses the NIC answers itself, when the reply fits a control-queue
    // slot (1536 bytes); a longer one goes on like any other frame.
    if let Some(req) = icmp::parse_echo_request(frame) {
        if nic.owns_ipv4(req.dst) && frame.len() as u64 <= wire::contract::qpc::CTRL_FRAME_LEN {
            nic.queue_control(icmp::echo_reply(frame, &req));
            nic.count(Counter::icmp_echo_replies);
            return;
        }
    }
    let Some(qpn) = nic.raw_receiver() else {
        nic.count(Counter::rx_drop_not_roce);
        return;
    };
    let Some(qp) = nic.qp(qpn) else { return };
    if qp.rq.pending() == 0 {
        nic.count(Counter::raw_rx_drop_no_wqe);
        return;
    }
    let cqn = qp.recv_cqn;
    let wqe = read_recv_wqe(nic, qp, qp.rq.ci, mem);
    let Some(qp) = nic.qp_mut(qpn) else { return };
    let r = deliver(qp, frame.len(), wqe);
    nic.count(Counter::rq_wqes);
    if let Some(sges) = &r.sges {
        nic.scatter((qpn, Side::Responder), sges, 0, frame, mem);
    }
    let ok = r.cqe.is_some_and(|c| c.status == WcStatus::Success as u8);
    if let Some(cqe) = r.cqe {
        nic.push_cqe(cqn, cqe, mem);
    }
    if ok {
        nic.count(Counter::raw_rx_frames);
    } else {
        // As for any QP, an error completion ends it: the QP enters ERR and what is posted is flushed.
        nic.enter_err(qpn);
    }
}

/// A frame of `len` bytes taken by the raw packet QP `qp`'s receive WQE at the RQ consumer counter (`wqe`, as
/// `recv_wqe` reads it): the counter moves; the frame is scattered over the list from offset 0 if it fits
/// (Success, its length), else the WQE completes with LocLenErr, or LocProtErr if its list failed the
/// checks (no bytes). The RTL's `RespSend` does the same for a raw frame.
pub fn deliver(qp: &mut Qp, len: usize, wqe: Result<(u64, Vec<Sge>), u64>) -> Received {
    let index = qp.rq.ci;
    qp.rq.ci = qp.rq.ci.wrapping_add(1);
    let (wr_id, status, sges) = match wqe {
        Ok((wr_id, sges)) => match scatter_pieces(&sges, 0, len) {
            Some(_) => (wr_id, WcStatus::Success, Some(sges)),
            None => (wr_id, WcStatus::LocLenErr, None),
        },
        Err(wr_id) => (wr_id, WcStatus::LocProtErr, None),
    };
    let byte_len = if status == WcStatus::Success { len as u32 } else { 0 };
    let done = RecvDone { index, wr_id, opcode: WcOpcode::Recv, status, byte_len, imm: 0, flags: 0 };
    Received { sges, off: 0, cqe: Some(done.cqe(qp.qpn)), nak: None, took: true }
}

/// Whether the raw packet QP `qp` may send: while it is in RTS with a WQE fetched.
pub(super) fn sendable(qp: &Qp) -> bool {
    qp.state == QpState::Rts && !qp.flushing && !qp.req.wqes.is_empty()
}

/// The next frame of raw packet QP `qpn`; its WQE completes as the frame leaves.
pub(super) fn next_frame(nic: &mut Nic, qpn: u32, mem: &mut dyn Dma) -> Option<Vec<u8>> {
    // The raw frame's read takes the requester's descriptor registers.
    nic.kept = None;
    let qp = nic.qp_mut(qpn)?;
    let w = qp.req.wqes.front()?;
    let (op, len, failed) = (w.op, w.len as usize, w.error.is_some());
    let desc = read_desc(qp, w.index, mem);
    let mut frame = vec![0u8; len];
    let error = if failed {
        None
    } else if op != SendOp::Send {
        Some(WcStatus::LocQpOpErr)
    } else if !(wire::eth::HEADER_LEN..=MAX_FRAME_LEN).contains(&len) {
        Some(WcStatus::LocLenErr)
    } else {
        let ok = match desc.map(|d| d.data) {
            Some(WqeData::Inline(b)) if b.len() == len => {
                frame.copy_from_slice(&b);
                true
            }
            Some(WqeData::Sges(sges)) => {
                walk_sges(&sges, 0, len, |addr, a, b| mem.dma_read(addr, &mut frame[a..b]).is_ok())
            }
            _ => false,
        };
        (!ok).then_some(WcStatus::LocProtErr)
    };
    let sent = !failed && error.is_none();
    qp.req.finish(0, error.map(|e| (e, 0)));
    nic.retire(qpn, mem);
    if !sent {
        return None;
    }
    nic.count(Counter::raw_tx_frames);
    frame.resize(len.max(MIN_FRAME_LEN), 0);
    Some(frame)
}
