//! Flush: a QP in ERR completes every outstanding WQE with WR_FLUSH_ERR, in the background, one WQE per
//! `Flush` decision, so a long flush never holds up a command, a doorbell or another QP. Order: the send
//! WQEs in the window, then those still in the SQ, then the receive WQE a SEND was filling, then the RQ;
//! WQEs posted to the QP while it is in ERR are flushed the same way. A WQE in the window completes with the
//! `wr_id` its fetch kept; one still in the SQ, or a receive WQE, has its `wr_id` read from its slot. A
//! MODIFY_QP to RESET meanwhile drops what the flush has not completed yet, as IBTA's RESET removes WQEs
//! without completions: an application that wants every completion polls them before the RESET.

use super::qp::Qp;
use super::Nic;
use crate::hostmem::Dma;
use wire::contract::cqe::CqeRepr;
use wire::contract::verbs::{QpState, WcOpcode, WcStatus};
use wire::contract::wqe::{RecvCtrlRepr, SendCtrlRepr, SendOp};

impl Nic {
    /// Moves `qpn` to ERR: nothing more is sent or executed, timers stop, responses owed are dropped; the
    /// flush starts.
    pub(crate) fn enter_err(&mut self, qpn: u32) {
        if let Some(qp) = self.qp_mut(qpn) {
            enter_err(qp);
        }
    }

    /// Whether `qpn` has WQEs left to flush.
    pub(crate) fn flush_pending(&self, qpn: u32) -> bool {
        self.qp(qpn).is_some_and(|q| {
            q.flushing
                && (!q.req.wqes.is_empty()
                    || (q.sq.pending() > 0 && q.sq.sane())
                    || q.resp.recv.is_some()
                    || (q.rq.pending() > 0 && q.rq.sane()))
        })
    }

    /// Completes the next outstanding WQE of `qpn` with WR_FLUSH_ERR. Callers check `flush_pending` first.
    pub(crate) fn flush_one(&mut self, qpn: u32, mem: &mut dyn Dma) {
        let Some(qp) = self.qp_mut(qpn) else { return };
        if let Some((cqn, cqe)) = flush_next(qpn, qp, mem) {
            self.push_cqe(cqn, cqe, mem);
        }
    }
}

/// QP `qp` moved to ERR (`Nic::enter_err`; the RTL's `EnterErr` builds its `qp_resp`).
pub fn enter_err(qp: &mut Qp) {
    qp.state = QpState::Err;
    qp.flushing = true;
    qp.req.timer = None;
    qp.req.rnr_wait = None;
    qp.resp.out.clear();
    qp.resp.ack = None;
}

/// The next outstanding WQE of QP `qpn` (`qp`, flushing) completed with WR_FLUSH_ERR: the CQ it goes to and
/// its CQE, with the QP's state moved past it (the window's front popped, a consumer counter moved, or the
/// receive in progress given up); None when nothing is left. The RTL's `FlushPick` computes the same.
pub fn flush_next(qpn: u32, qp: &mut Qp, mem: &dyn Dma) -> Option<(u32, CqeRepr)> {
    let (send_cqn, recv_cqn) = (qp.send_cqn, qp.recv_cqn);
    let flushed = |wr_id, wqe_index, opcode: WcOpcode, is_recv| CqeRepr {
        wr_id,
        qp_num: qpn,
        wqe_index,
        opcode: opcode as u8,
        status: WcStatus::WrFlushErr as u8,
        is_recv,
        ..Default::default()
    };
    if !qp.req.wqes.is_empty() {
        qp.req.finish(0, None);
        let w = qp.req.pop()?;
        return Some((send_cqn, flushed(w.wr_id, w.index, w.op.wc_opcode(), 0)));
    }
    if qp.sq.pending() > 0 && qp.sq.sane() {
        let index = qp.sq.ci;
        qp.sq.ci = index.wrapping_add(1);
        let mut hdr = [0u8; SendCtrlRepr::LEN];
        let ctrl = match mem.dma_read(qp.sq.addr(index), &mut hdr) {
            Ok(()) => SendCtrlRepr::from_bytes(&hdr).unwrap_or_default(),
            Err(_) => SendCtrlRepr::default(),
        };
        let op = SendOp::from_u8(ctrl.opcode).unwrap_or(SendOp::Send);
        return Some((send_cqn, flushed(ctrl.wr_id, index, op.wc_opcode(), 0)));
    }
    let index = match qp.resp.recv.take() {
        Some(ctx) => ctx.index,
        None if qp.rq.pending() > 0 && qp.rq.sane() => {
            let i = qp.rq.ci;
            qp.rq.ci = i.wrapping_add(1);
            i
        }
        None => return None,
    };
    let mut hdr = [0u8; RecvCtrlRepr::LEN];
    let wr_id = match mem.dma_read(qp.rq.addr(index), &mut hdr) {
        Ok(()) => RecvCtrlRepr::from_bytes(&hdr).map(|r| r.wr_id).unwrap_or(0),
        Err(_) => 0,
    };
    Some((recv_cqn, flushed(wr_id, index, WcOpcode::Recv, 1)))
}
