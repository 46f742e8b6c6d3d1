//! The raw Ethernet path: every frame that is not RoCEv2. The NIC answers ARP requests and ICMP echo
//! requests for its own IPv4 addresses (those of its IPv4-mapped GIDs) itself, as FPGA stacks without a host
//! network stack do; every other frame goes to the raw packet QP's receive queue, one frame per receive
//! WQE. That QP's send WQEs (SEND only) go out as whole frames, padded to the Ethernet minimum.

use super::qp::{walk_sges, Qp, WqeData};
use super::req::read_desc;
use super::resp::{read_recv_wqe, RecvDone};
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
    let index = qp.rq.ci;
    let wqe = read_recv_wqe(nic, qp, index, mem);
    if let Some(q) = nic.qp_mut(qpn) {
        q.rq.ci = q.rq.ci.wrapping_add(1);
    }
    nic.count(Counter::rq_wqes);
    let (wr_id, status) = match wqe {
        Ok((wr_id, sges)) => {
            let room: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
            if room >= frame.len() as u64 && nic.scatter((qpn, Side::Responder), &sges, 0, frame, mem) {
                (wr_id, WcStatus::Success)
            } else {
                (wr_id, WcStatus::LocLenErr)
            }
        }
        Err(wr_id) => (wr_id, WcStatus::LocProtErr),
    };
    let byte_len = if status == WcStatus::Success { frame.len() as u32 } else { 0 };
    let done = RecvDone { index, wr_id, opcode: WcOpcode::Recv, status, byte_len, imm: 0, flags: 0 };
    nic.push_cqe(cqn, done.cqe(qpn), mem);
    if status == WcStatus::Success {
        nic.count(Counter::raw_rx_frames);
    } else {
        // As for any QP, an error completion ends it: the QP enters ERR and what is posted is flushed.
        nic.enter_err(qpn);
    }
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
