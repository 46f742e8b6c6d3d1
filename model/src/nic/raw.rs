//! The raw Ethernet path: every frame that is not RoCEv2. The NIC answers ARP requests and ICMP echo
//! requests for its own IPv4 addresses (those of its IPv4-mapped GIDs) itself, as FPGA stacks without a host
//! network stack do; every other frame goes to the raw packet QP's receive queue, one frame per receive
//! WQE. That QP's send WQEs (SEND only) go out as whole frames, padded to the Ethernet minimum.

use super::qp::{walk_sges, Qp, WqeData};
use super::resp::{fetch_recv_wqe, recv_cqe};
use super::Nic;
use crate::hostmem::Dma;
use crate::Time;
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
            nic.ctrl_queue.push_back(arp::reply_frame(&eth, &req, nic.mac));
            nic.count(Counter::arp_replies);
            return;
        }
    }
    if let Some(req) = icmp::parse_echo_request(frame) {
        if nic.owns_ipv4(req.dst) {
            nic.ctrl_queue.push_back(icmp::echo_reply(frame, &req));
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
    let ctx = fetch_recv_wqe(nic, qp, mem);
    if let Some(q) = nic.qp_mut(qpn) {
        q.rq.ci = q.rq.ci.wrapping_add(1);
    }
    nic.count(Counter::rq_wqes);
    let status = match &ctx {
        Ok(c) => {
            let room: u64 = c.sges.iter().map(|s| u64::from(s.length)).sum();
            let placed = room >= frame.len() as u64
                && walk_sges(&c.sges, 0, frame.len(), |addr, a, b| mem.dma_write(addr, &frame[a..b]).is_ok());
            if placed {
                WcStatus::Success
            } else {
                WcStatus::LocLenErr
            }
        }
        Err(_) => WcStatus::LocProtErr,
    };
    let ctx = ctx.unwrap_or_else(|wr_id| super::qp::RecvCtx { index, wr_id, sges: Vec::new(), offset: 0 });
    let len = if status == WcStatus::Success { frame.len() as u32 } else { 0 };
    nic.push_cqe(cqn, recv_cqe(qpn, &ctx, WcOpcode::Recv, status, len, 0, 0), mem);
    if status == WcStatus::Success {
        nic.count(Counter::raw_rx_frames);
    } else {
        // As for any QP, an error completion ends it: the QP enters ERR and what is posted is flushed.
        if let Some(q) = nic.qp_mut(qpn) {
            q.state = QpState::Err;
        }
        nic.flush(qpn, mem);
    }
}

/// When the raw packet QP `qp` may send: at once, while it is in RTS with a WQE fetched.
pub(super) fn ready_at(qp: &Qp) -> Option<Time> {
    (qp.state == QpState::Rts && !qp.flushing && !qp.req.wqes.is_empty()).then_some(0)
}

/// The next frame of raw packet QP `qpn`; its WQE completes as the frame leaves.
pub(super) fn next_frame(nic: &mut Nic, qpn: u32, mem: &mut dyn Dma) -> Option<Vec<u8>> {
    let qp = nic.qp_mut(qpn)?;
    let w = qp.req.wqes.front_mut()?;
    w.acked = true;
    let len = w.len as usize;
    let mut frame = vec![0u8; len];
    let error = if w.error.is_some() {
        None
    } else if w.op != SendOp::Send {
        Some(WcStatus::LocQpOpErr)
    } else if !(wire::eth::HEADER_LEN..=MAX_FRAME_LEN).contains(&len) {
        Some(WcStatus::LocLenErr)
    } else {
        let ok = match &w.data {
            WqeData::Inline(b) => {
                frame.copy_from_slice(b);
                true
            }
            WqeData::Sges(sges) => walk_sges(sges, 0, len, |addr, a, b| mem.dma_read(addr, &mut frame[a..b]).is_ok()),
        };
        (!ok).then_some(WcStatus::LocProtErr)
    };
    if let Some(e) = error {
        w.error = Some((e, 0));
    }
    let sent = w.error.is_none();
    nic.retire(qpn, mem);
    if !sent {
        return None;
    }
    nic.count(Counter::raw_tx_frames);
    frame.resize(len.max(MIN_FRAME_LEN), 0);
    Some(frame)
}
