//! Completer: match ACKs, NAKs, READ responses and atomic ACKs to send WQEs; retire WQEs in SQ order with
//! CQEs; run the local ACK timer, RNR waits and go-back-N; move the QP to ERR on fatal errors (`flush`
//! completes what is left).

use super::qp::{Qp, SendWqe, Sge, WqeData};
use super::req::read_desc;
use super::timer::{ack_timeout_ticks, tick_of, ticks_for_ns, Tick};
use super::{Nic, Side};
use crate::hostmem::Dma;
use crate::Time;
use wire::contract::cqe::CqeRepr;
use wire::contract::eqe::EventKind;
use wire::contract::regs::Counter;
use wire::contract::verbs::{QpState, WcStatus, RNR_RETRY_INFINITE, RNR_TIMER_NS};
use wire::contract::wqe::send_flags;
use wire::ext::{AethKind, AethRepr};
use wire::{OpKind, Position, Psn, RocePacket};

/// NAK codes to the status the requester's WQE completes with.
fn nak_status(code: u8) -> WcStatus {
    match code {
        1 => WcStatus::RemInvReqErr,
        2 => WcStatus::RemAccessErr,
        4 => WcStatus::RemInvRdReqErr,
        _ => WcStatus::RemOpErr,
    }
}

/// Restarts sending at `psn` (go-back-N): the cursor goes to the first unfinished WQE from `oldest` on that
/// holds `psn` or is not started yet (the RTL's `RewindWalk` is checked against it).
pub fn rewind(qp: &mut Qp, psn: Psn) {
    let r = &mut qp.req;
    let from = r.oldest;
    let idx = (from..r.wqes.len()).find(|&i| {
        let w = &r.wqes[i];
        !w.acked && (w.contains(psn) || w.first_psn.is_none())
    });
    if let Some(i) = idx {
        r.cursor = i;
        r.cursor_psn = r.wqes[i].first_psn.map_or(r.psn, |_| psn);
    } else {
        r.cursor = r.wqes.len();
        r.cursor_psn = r.psn;
    }
    r.pkts_since_ackreq = 0;
}

/// Moves `comp_psn` to `psn` (everything before it is done). A cursor left behind it by an earlier rewind
/// (the answers to the first transmission arrived after all) jumps forward, so no PSN is sent again for
/// work already finished.
fn complete_to(qp: &mut Qp, psn: Psn) {
    qp.req.comp_psn = psn;
    if qp.req.cursor_psn.before(psn) {
        rewind(qp, psn);
    }
}

/// Keeps the local ACK timer armed while work is outstanding: restarted after progress (or when it is not
/// running), left alone otherwise, so stale responses cannot postpone a retry. Stopped when nothing is left.
fn rearm_timer(qp: &mut Qp, tick: Tick, progressed: bool) {
    if !qp.req.outstanding() {
        qp.req.timer = None;
    } else if (progressed || qp.req.timer.is_none()) && qp.req.rnr_wait.is_none() {
        qp.req.timer = ack_timeout_ticks(qp.attrs.timeout).map(|t| tick + t);
    }
}

/// Forward progress: the retry counters start again and any earlier gap is closed.
fn progress(qp: &mut Qp) {
    qp.req.retry_left = qp.attrs.retry_cnt;
    qp.req.rnr_left = qp.attrs.rnr_retry;
    qp.req.gap_retry = None;
}

/// What an acknowledgement of every PSN through `psn` does to one window entry `w`, `comp_psn` where it
/// stands: one step of `ack_through`'s walk from the oldest unfinished entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckStep {
    /// Finished before: the walk steps over it.
    Skip,
    /// Not started, or not acknowledged whole: the walk stops there, moving `comp_psn` to the PSN given (a
    /// SEND or WRITE acknowledged in part, up to `psn`).
    Stop(Option<Psn>),
    /// A READ or atomic whose PSNs end at or before `psn` and whose answer never came: the walk stops, a gap.
    Gap,
    /// Acknowledged whole: finished, `comp_psn` past its last PSN (the PSN given).
    Finish(Psn),
}

/// One step of `ack_through` (see `AckStep`).
pub fn ack_step(w: &SendWqe, psn: Psn, comp_psn: Psn) -> AckStep {
    if w.acked {
        return AckStep::Skip;
    }
    let (Some(first), Some(last)) = (w.first_psn, w.last_psn()) else { return AckStep::Stop(None) };
    if last.after(psn) {
        let part = !w.op.is_read_or_atomic() && !psn.before(first) && psn.add(1).after(comp_psn);
        return AckStep::Stop(part.then(|| psn.add(1)));
    }
    if w.op.is_read_or_atomic() {
        return AckStep::Gap;
    }
    AckStep::Finish(last.add(1))
}

/// Marks SEND/WRITE WQEs whose last PSN is at or before `psn` as acknowledged, and moves `comp_psn` past them
/// (or into a multi-packet SEND/WRITE that is partly acknowledged). Stops at a READ or atomic: if its range
/// ends at or before `psn`, the responder is past it although its answer never came, a gap (returns true).
fn ack_through(qp: &mut Qp, psn: Psn) -> bool {
    let mut progressed = false;
    let mut gap = false;
    let mut i = qp.req.oldest;
    while let Some(w) = qp.req.wqes.get(i) {
        match ack_step(w, psn, qp.req.comp_psn) {
            AckStep::Skip => i += 1,
            AckStep::Stop(moved) => {
                if let Some(p) = moved {
                    qp.req.comp_psn = p;
                    progressed = true;
                }
                break;
            }
            AckStep::Gap => {
                gap = true;
                break;
            }
            AckStep::Finish(p) => {
                qp.req.finish(i, None);
                qp.req.comp_psn = p;
                progressed = true;
                i += 1;
            }
        }
    }
    if progressed {
        let p = qp.req.comp_psn;
        complete_to(qp, p);
        progress(qp);
    }
    gap
}

/// Responses show that the PSN at `comp_psn` was lost (a later PSN was answered): go back to it now, once per
/// gap, rather than wait for the ACK timer (rxe's COMPST_ERROR_RETRY). Counts against `retry_cnt`.
fn retry_gap(qp: &mut Qp, tick: Tick) {
    let p = qp.req.comp_psn;
    if qp.req.gap_retry == Some(p) {
        return;
    }
    qp.req.gap_retry = Some(p);
    if qp.req.retry_left == 0 {
        fail_oldest(qp, WcStatus::RetryExcErr, 0);
        return;
    }
    qp.req.retry_left -= 1;
    rewind(qp, p);
    rearm_timer(qp, tick, true);
}

/// Whether `psn` was ever sent: a response at or past `high_psn` answers nothing and is ignored (as rxe).
fn sent(nic: &mut Nic, qpn: u32, psn: Psn) -> bool {
    let ok = nic.qp(qpn).is_some_and(|q| psn.before(q.req.high_psn));
    if !ok {
        nic.count(Counter::rx_drop_unsent_psn);
    }
    ok
}

/// Marks the oldest unfinished WQE failed with `status`, so it completes in order and the QP goes to ERR.
fn fail_oldest(qp: &mut Qp, status: WcStatus, vendor: u8) {
    let i = qp.req.oldest;
    qp.req.finish(i, Some((status, vendor)));
    qp.req.timer = None;
    qp.req.rnr_wait = None;
}

impl Nic {
    /// Writes a CQE and raises the completion event an armed CQ asked for. A CQE that does not fit overruns
    /// the CQ: a CQ error event, and the QP it belonged to goes to ERR with a QP fatal event.
    pub(super) fn push_cqe(&mut self, cqn: u32, cqe: CqeRepr, mem: &mut dyn Dma) {
        let qpn = cqe.qp_num;
        let qp_live = self.qp(qpn).is_some_and(|q| q.state != QpState::Err);
        let Some(Some(cq)) = self.cqs.get_mut(cqn as usize) else { return };
        let log_size = cq.log_size;
        let posted = cq.post(cqe, qp_live, mem);
        if let Some((written, slot)) = posted.written {
            self.count(Counter::cqes);
            if cqe.status != WcStatus::Success as u8 {
                self.count(Counter::error_cqes);
            }
            self.emit(|| super::Output::Cqe { cqn, slot, log_size, cqe: written });
            if posted.fire {
                self.raise(EventKind::Completion, cqn, mem);
            }
            return;
        }
        if posted.cq_error {
            self.raise(EventKind::CqError, cqn, mem);
        }
        if posted.qp_fatal {
            self.enter_err(qpn);
            self.raise(EventKind::QpFatal, qpn, mem);
        }
    }

    /// Retires finished WQEs from the front of the window, writing CQEs in SQ order (each with the `wr_id`
    /// its fetch kept). A failed WQE moves the QP to ERR.
    pub(super) fn retire(&mut self, qpn: u32, mem: &mut dyn Dma) {
        loop {
            let Some(qp) = self.qp_mut(qpn) else { return };
            if qp.flushing || !qp.req.wqes.front().is_some_and(|w| w.acked) {
                return;
            }
            let Some(w) = qp.req.pop() else { return };
            let failed = w.error.is_some_and(|(status, _)| status != WcStatus::Success);
            if let Some((cqn, cqe)) = completion(qp, &w) {
                self.push_cqe(cqn, cqe, mem);
            }
            if failed {
                self.enter_err(qpn);
                return;
            }
        }
    }

    /// Places `data` at message offset `off` of scatter list `sges` (DMA writes, recorded per QP and side).
    /// False, with nothing written, if the list is shorter than the data; a write itself cannot fail (PCIe
    /// writes are posted).
    pub(super) fn scatter(&mut self, at: (u32, Side), sges: &[Sge], off: u32, data: &[u8], mem: &mut dyn Dma) -> bool {
        let Some(pieces) = super::qp::scatter_pieces(sges, off, data.len()) else { return false };
        for (addr, a, b) in pieces {
            self.place(at, addr, &data[a..b], mem);
        }
        true
    }
}

/// A response for `qpn` (ACK or NAK, READ response, atomic ACK). One that answers a PSN never sent is
/// ignored; otherwise an ACKNOWLEDGE counts by its AETH's class, `respond` does what it says (its data
/// placed by DMA), and the finished WQEs retire.
pub(super) fn on_response(nic: &mut Nic, qpn: u32, kind: OpKind, pkt: &RocePacket<'_>, now: Time, mem: &mut dyn Dma) {
    let psn = pkt.hdr.bth.psn;
    if !sent(nic, qpn, psn) {
        return;
    }
    if let (OpKind::Ack, Some(aeth)) = (kind, pkt.hdr.ext.aeth) {
        match aeth.kind() {
            AethKind::Ack { .. } => nic.count(Counter::rx_acks),
            AethKind::RnrNak { .. } => nic.count(Counter::rx_rnr_naks),
            AethKind::Nak { .. } => nic.count(Counter::rx_naks),
            AethKind::Reserved => {}
        }
    }
    let Some(qp) = nic.qp_mut(qpn) else { return };
    let mut writes = Vec::new();
    respond(qp, kind, pkt, tick_of(now), |qp, index, off, data| {
        let pieces = match read_desc(qp, index, mem).map(|d| d.data) {
            Some(WqeData::Sges(s)) => super::qp::scatter_pieces(&s, off, data.len()),
            _ => None,
        };
        let fits = pieces.is_some();
        writes.extend(pieces.into_iter().flatten().map(|(addr, a, b)| (addr, data[a..b].to_vec())));
        fits
    });
    for (addr, bytes) in writes {
        nic.place((qpn, Side::Completer), addr, &bytes, mem);
    }
    nic.retire(qpn, mem);
}

/// What a response (ACK or NAK, READ response, atomic ACK) for a PSN that was sent does to its QP, the
/// completer's part of `on_response` that the RTL's `Completer` implements: the walk through the PSNs it
/// acknowledges, then its kind's handler; data to place is handed to `place` (the WQE's SQ counter, the
/// offset in its scatter list, the bytes), which says whether it fitted. Then the ACK timer is re-armed
/// (restarted if `comp_psn` moved; left alone during an RNR wait).
pub fn respond(
    qp: &mut Qp,
    kind: OpKind,
    pkt: &RocePacket<'_>,
    tick: Tick,
    place: impl FnOnce(&Qp, u16, u32, &[u8]) -> bool,
) {
    let before = qp.req.comp_psn;
    match kind {
        OpKind::Ack => {
            if let Some(aeth) = pkt.hdr.ext.aeth {
                on_ack(qp, pkt.hdr.bth.psn, aeth, tick);
            }
        }
        OpKind::ReadResponse | OpKind::AtomicAck => on_data(qp, kind, pkt, tick, place),
        _ => {}
    }
    if qp.req.rnr_wait.is_none() {
        let progressed = qp.req.comp_psn != before;
        rearm_timer(qp, tick, progressed);
    }
}

/// An ACK or NAK (opcode ACKNOWLEDGE).
fn on_ack(qp: &mut Qp, psn: Psn, aeth: AethRepr, tick: Tick) {
    match aeth.kind() {
        AethKind::Ack { .. } => {
            if ack_through(qp, psn) {
                retry_gap(qp, tick);
            }
        }
        AethKind::RnrNak { timer } => {
            if ack_through(qp, psn.sub(1)) {
                retry_gap(qp, tick);
            } else if qp.attrs.rnr_retry != RNR_RETRY_INFINITE && qp.req.rnr_left == 0 {
                fail_oldest(qp, WcStatus::RnrRetryExcErr, aeth.syndrome);
            } else {
                if qp.attrs.rnr_retry != RNR_RETRY_INFINITE {
                    qp.req.rnr_left -= 1;
                }
                qp.req.timer = None;
                // One tick more than the delay rounded up: the wait is never shorter than the NAK asked.
                let wait = ticks_for_ns(RNR_TIMER_NS[usize::from(timer & 31)]) + 1;
                qp.req.rnr_wait = Some((tick + wait, psn));
            }
        }
        AethKind::Nak { code: 0 } => {
            // PSN sequence error: the responder expects `psn`, or an earlier READ/atomic answer was lost.
            ack_through(qp, psn.sub(1));
            if qp.req.retry_left == 0 {
                fail_oldest(qp, WcStatus::RetryExcErr, aeth.syndrome);
            } else {
                qp.req.retry_left -= 1;
                let p = qp.req.comp_psn;
                rewind(qp, p);
                rearm_timer(qp, tick, true);
            }
        }
        AethKind::Nak { code } => {
            // A fatal NAK names the request at `psn`; everything before it was executed.
            if ack_through(qp, psn.sub(1)) {
                retry_gap(qp, tick);
            } else {
                fail_oldest(qp, nak_status(code), aeth.syndrome);
            }
        }
        AethKind::Reserved => {
            fail_oldest(qp, WcStatus::BadRespErr, aeth.syndrome);
        }
    }
}

/// What a READ response or an atomic ACK does to the oldest unfinished entry once the walk through the PSN
/// before it found no gap (the RTL's `RespMatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Not the entry's answer (a duplicate, a stale answer, an entry of another kind): ignored.
    Ignore,
    /// A READ response past `comp_psn`: the ones between were lost (a gap).
    Ahead,
    /// The READ's next response, of the wrong position or payload length: the READ fails (BadRespErr).
    Bad,
    /// Its data goes at offset `off` of the WQE's scatter list; `last`: it ends the operation.
    Take { off: u32, last: bool },
}

/// The `Answer` a response of `kind` (a READ response at `position`, or an atomic ACK) for `psn` with a
/// payload of `len` bytes gives entry `w`, `comp_psn` where it stands and `pmtu` the path MTU.
pub fn answer(w: &SendWqe, kind: OpKind, position: Position, psn: Psn, len: usize, comp_psn: Psn, pmtu: u32) -> Answer {
    if kind == OpKind::AtomicAck {
        return if w.op.is_atomic() && w.first_psn == Some(psn) {
            Answer::Take { off: 0, last: true }
        } else {
            Answer::Ignore
        };
    }
    let Some(first) = w.first_psn else { return Answer::Ignore };
    if w.op != wire::contract::wqe::SendOp::RdmaRead || !w.contains(psn) || psn.before(comp_psn) {
        return Answer::Ignore;
    }
    // comp_psn is the READ's first response not yet placed.
    if psn.after(comp_psn) {
        return Answer::Ahead;
    }
    let k = psn.diff(first) as u32;
    let want = super::req::position(k, w.npkts);
    let off = k.wrapping_mul(pmtu);
    let expect_len = if matches!(want, Position::Last | Position::Only) { w.len - off.min(w.len) } else { pmtu };
    if position != want || len as u32 != expect_len {
        return Answer::Bad;
    }
    Answer::Take { off, last: k + 1 == w.npkts }
}

/// Places a READ response and completes the READ on its last packet, or an atomic's original value in the
/// local buffer and completes the atomic. Each in-order response moves `comp_psn`, so a later rewind asks
/// only for what is still missing.
fn on_data(
    qp: &mut Qp,
    kind: OpKind,
    pkt: &RocePacket<'_>,
    tick: Tick,
    place: impl FnOnce(&Qp, u16, u32, &[u8]) -> bool,
) {
    let psn = pkt.hdr.bth.psn;
    // A response implicitly acknowledges every earlier SEND/WRITE; an earlier READ/atomic left unanswered
    // is a gap.
    if ack_through(qp, psn.sub(1)) {
        retry_gap(qp, tick);
        return;
    }
    let pmtu = qp.attrs.path_mtu();
    let i = qp.req.oldest;
    let Some(w) = qp.req.wqes.get(i) else { return };
    let Some(info) = pkt.hdr.bth.opcode.info() else { return };
    let index = w.index;
    let (off, last) = match answer(w, kind, info.position, psn, pkt.payload.len(), qp.req.comp_psn, pmtu) {
        Answer::Ignore => return,
        Answer::Ahead => {
            // Responses were lost: go back to the first missing one, once per gap.
            retry_gap(qp, tick);
            return;
        }
        Answer::Bad => {
            fail_oldest(qp, WcStatus::BadRespErr, 0);
            return;
        }
        Answer::Take { off, last } => (off, last),
    };
    let orig = pkt.hdr.ext.atomic_ack_eth.map_or(0, |a| a.orig).to_le_bytes();
    let data = if kind == OpKind::AtomicAck { &orig[..] } else { pkt.payload };
    if !place(qp, index, off, data) {
        qp.req.finish(i, Some((WcStatus::LocProtErr, 0)));
    } else if last {
        qp.req.finish(i, None);
    }
    complete_to(qp, psn.add(1));
    progress(qp);
}

/// The local ACK timer fired: go back to the oldest unanswered PSN, and keep the timer running.
pub(super) fn on_timeout(nic: &mut Nic, qpn: u32, tick: Tick, mem: &mut dyn Dma) {
    let Some(qp) = nic.qp_mut(qpn) else { return };
    if ack_timer_end(qp, tick) {
        nic.count(Counter::local_ack_timeouts);
        nic.retire(qpn, mem);
    }
}

/// The ACK timer's end on its QP (the RTL's `Completer` for a timer): with work outstanding, the oldest WQE
/// fails with no retries left, else the requester goes back to `comp_psn`. Whether work was outstanding.
pub fn ack_timer_end(qp: &mut Qp, tick: Tick) -> bool {
    qp.req.timer = None;
    if !qp.req.outstanding() {
        return false;
    }
    if qp.req.retry_left == 0 {
        fail_oldest(qp, WcStatus::RetryExcErr, 0);
    } else {
        qp.req.retry_left -= 1;
        let p = qp.req.comp_psn;
        rewind(qp, p);
        qp.req.gap_retry = None;
        rearm_timer(qp, tick, true);
    }
    true
}

/// The RNR wait is over: resend from the NAKed PSN, with the ACK timer running again.
pub(super) fn on_rnr_timer(nic: &mut Nic, qpn: u32, tick: Tick) {
    let Some(qp) = nic.qp_mut(qpn) else { return };
    rnr_wait_end(qp, tick);
    nic.count(Counter::rnr_timeouts);
}

/// The RNR wait's end on its QP (the RTL's `Completer` for a timer).
pub fn rnr_wait_end(qp: &mut Qp, tick: Tick) {
    if let Some((_, psn)) = qp.req.rnr_wait.take() {
        rewind(qp, psn);
        rearm_timer(qp, tick, true);
    }
}

/// The completion of finished entry `w` as it leaves the front of `qp`'s window: its send CQ and CQE, when
/// the WQE was signaled (or the QP signals every WQE) or failed; None otherwise. The CQE has the `wr_id` the
/// fetch kept, the byte count (an atomic's 8, else the message's length), the SQ counter, the completion
/// opcode of the operation, and the status and vendor syndrome of a failure. The RTL's `Retire` does the same.
pub fn completion(qp: &Qp, w: &SendWqe) -> Option<(u32, CqeRepr)> {
    let (status, vendor) = w.error.unwrap_or((WcStatus::Success, 0));
    let signaled = qp.sig_all || w.flags & send_flags::SIGNALED != 0;
    (signaled || status != WcStatus::Success).then(|| {
        let cqe = CqeRepr {
            wr_id: w.wr_id,
            byte_len: if w.op.is_atomic() { 8 } else { w.len },
            qp_num: qp.qpn,
            wqe_index: w.index,
            opcode: w.op.wc_opcode() as u8,
            status: status as u8,
            vendor_err: vendor,
            ..Default::default()
        };
        (qp.send_cqn, cqe)
    })
}

#[cfg(test)]
mod tests {
    use super::{ack_through, on_ack};
    use crate::nic::bench::Bench;
    use crate::nic::qp::SendWqe;
    use crate::nic::timer::{tick_start, TICK_PS};
    use crate::nic::Decision;
    use wire::contract::cmd::Status;
    use wire::contract::regs::doorbell;
    use wire::contract::verbs::RNR_TIMER_NS;
    use wire::contract::verbs::{QpState, WcStatus};
    use wire::contract::wqe::{send_flags, SendCtrlRepr, SendOp};
    use wire::ext::{syndrome, AethRepr};
    use wire::Psn;

    /// A WQE that fails at fetch (an unknown opcode, inline data past the slot) completes with the `wr_id` its
    /// slot names, and the QP goes to ERR, flushing what follows with theirs.
    #[test]
    fn a_malformed_wqe_completes_with_its_own_wr_id() {
        let mut b = Bench::new();
        let q = b.rts_qp();
        let slots = [(0xFF, 0, 0, 0x77u64), (2, send_flags::INLINE, 200, 0x78)];
        for (i, &(opcode, flags, len, wr_id)) in slots.iter().enumerate() {
            let mut slot = [0u8; 128];
            let ctrl = SendCtrlRepr { opcode, flags: flags | send_flags::SIGNALED, len, imm: 0, wr_id };
            ctrl.write_to(&mut slot).unwrap();
            b.mem.write(q.sq + 128 * i as u64, &slot).unwrap();
        }
        b.nic.mmio_write(doorbell::qp(q.qpn, doorbell::QP_SQ_PI), 2);
        b.nic.apply(0, &Decision::FetchSq { qpn: q.qpn, primed: false }, &mut b.mem).unwrap();
        let c = b.cqe(&q, 0);
        assert_eq!((c.wr_id, c.status, c.wqe_index), (0x77, WcStatus::LocQpOpErr as u8, 0));
        assert_eq!(b.nic.qp(q.qpn).map(|x| x.state), Some(QpState::Err));
        b.nic.apply(0, &Decision::Flush { qpn: q.qpn }, &mut b.mem).unwrap();
        let c = b.cqe(&q, 1);
        assert_eq!((c.wr_id, c.status, c.wqe_index), (0x78, WcStatus::WrFlushErr as u8, 1));
        assert!(!b.nic.flush_pending(q.qpn));
    }

    /// A WQE in the window completes with the `wr_id` its fetch read: a slot written again afterwards (the
    /// driver owns it only once the WQE completes) does not change the CQE.
    #[test]
    fn a_fetched_wqe_completes_with_the_wr_id_its_fetch_read() {
        let mut b = Bench::new();
        let q = b.rts_qp();
        let slot = |wr_id| {
            let mut slot = [0u8; 128];
            let ctrl = SendCtrlRepr { opcode: SendOp::Send as u8, flags: send_flags::SIGNALED, len: 0, imm: 0, wr_id };
            ctrl.write_to(&mut slot).unwrap();
            slot
        };
        b.mem.write(q.sq, &slot(0x91)).unwrap();
        b.nic.mmio_write(doorbell::qp(q.qpn, doorbell::QP_SQ_PI), 1);
        b.nic.apply(0, &Decision::FetchSq { qpn: q.qpn, primed: false }, &mut b.mem).unwrap();
        b.mem.write(q.sq, &slot(0x92)).unwrap();
        assert_eq!(b.modify(q.qpn, QpState::Err), Status::Ok);
        b.nic.apply(0, &Decision::Flush { qpn: q.qpn }, &mut b.mem).unwrap();
        let c = b.cqe(&q, 0);
        assert_eq!((c.wr_id, c.status), (0x91, WcStatus::WrFlushErr as u8));
    }

    /// An RNR NAK arms the wait at its tick plus the NAK's delay in whole ticks, rounded up, plus one: the
    /// retry can never come sooner than the delay after the NAK, wherever in its tick the NAK arrived.
    #[test]
    fn an_rnr_wait_is_never_shorter_than_the_nak_asks() {
        let mut b = Bench::new();
        let q = b.rts_qp().qpn;
        for code in [1u8, 13, 18, 0] {
            let tick = 1000;
            let psn = Psn::new(7);
            on_ack(b.nic.qp_mut(q).unwrap(), psn, AethRepr { syndrome: syndrome::RNR_NAK | code, msn: 0 }, tick);
            let (deadline, at) = b.nic.qp(q).unwrap().req.rnr_wait.unwrap();
            assert_eq!(at, psn);
            let delay_ps = RNR_TIMER_NS[usize::from(code)] * 1000;
            let latest_nak = tick_start(tick + 1) - 1;
            assert!(tick_start(deadline) >= latest_nak + delay_ps, "code {code}: fires at tick {deadline}");
            assert!(tick_start(deadline) < latest_nak + delay_ps + 2 * TICK_PS, "code {code}: no longer than that");
            b.nic.qp_mut(q).unwrap().req.rnr_wait = None;
        }
    }

    /// An ACK walks the window past entries that finished out of turn (a WQE that failed as it was fetched,
    /// behind one still in flight), retiring both and stopping at the end.
    #[test]
    fn an_ack_steps_over_entries_already_finished() {
        let mut b = Bench::new();
        let q = b.rts_qp().qpn;
        let r = &mut b.nic.qp_mut(q).unwrap().req;
        let wqe = |op, first: Option<u32>, npkts| SendWqe {
            index: 0,
            op,
            flags: 0,
            len: npkts * 256,
            first_psn: first.map(Psn::new),
            npkts,
            acked: false,
            error: None,
            wr_id: 0,
        };
        r.push(wqe(SendOp::RdmaWrite, None, 2));
        r.start(0, 2);
        let mut failed = wqe(SendOp::Send, None, 0);
        failed.acked = true;
        failed.error = Some((WcStatus::LocProtErr, 0));
        r.push(failed);
        r.cursor = 1;
        assert_eq!(r.oldest, 0);
        let qp = b.nic.qp_mut(q).unwrap();
        let first = qp.req.wqes[0].first_psn.unwrap();
        assert!(!ack_through(qp, first.add(1)), "no gap");
        assert_eq!(qp.req.oldest, 2, "both finished");
        assert_eq!(qp.req.comp_psn, first.add(2));
    }
}
