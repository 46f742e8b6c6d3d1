//! Responder: the check chain CHK_PSN -> CHK_OP_SEQ -> CHK_OP_VALID -> CHK_RESOURCE -> CHK_LENGTH -> CHK_RKEY
//! -> EXECUTE, one function per step, each returning the next step or the NAK it ends in. Duplicates (incl.
//! READ regeneration and atomic replay), ACK coalescing and the in-order response queue live here too.
//!
//! The response queue is bounded (the profile's `resp_queue`) with one coalesced ACK behind it. A request
//! whose response would not fit is dropped before anything executes (`rx_drop_resp_queue_full`): the
//! requester retries it. The queue's last place is kept for a fatal NAK, which therefore always fits: it
//! takes the coalesced ACK's place (a NAK acknowledges every PSN before its own).

use super::mr::{KeyError, MrTable, LOCAL_WRITE, REMOTE_ATOMIC, REMOTE_READ, REMOTE_WRITE};
use super::qp::{Qp, RecvCtx, Resource, ResourceKind, RespItem, Sge};
use super::{Nic, Side};
use crate::hostmem::Dma;
use crate::Time;
use wire::contract::cqe::CqeRepr;
use wire::contract::regs::Counter;
use wire::contract::verbs::{wc_flags, WcOpcode, WcStatus, MAX_MSG_LEN};
use wire::contract::wqe::{DataSegRepr, RecvCtrlRepr, DATA_SEG_LEN, RECV_DATA};
use wire::ext::{syndrome, AethRepr, AtomicEthRepr, RethRepr};
use wire::opcode::Transport;
use wire::{OpInfo, OpKind, Opcode, Position, Psn, RocePacket};

/// How the check chain ends for a packet that is not executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nak {
    /// NAK invalid request (class C): the QP goes to ERR.
    InvalidRequest,
    /// NAK remote access error: the QP goes to ERR.
    RemoteAccess,
    /// NAK remote operational error: the QP goes to ERR.
    RemoteOp,
    /// RNR NAK: no receive WQE; the requester retries later.
    Rnr,
}

/// What the check chain decides for a request packet to an RC QP, before anything is done about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The QP takes no requests (not RTR, RTS or SQD; flushing; or past a fatal NAK): dropped.
    QpState,
    /// CHK_PSN: after ePSN with no sequence NAK outstanding: dropped, and a PSN sequence error NAK owed.
    SeqNak,
    /// CHK_PSN: after ePSN, a sequence NAK already sent: dropped.
    SeqDrop,
    /// CHK_PSN: before ePSN, a duplicate (`duplicate` decides).
    Duplicate,
    /// A check from CHK_OP_SEQ to CHK_RKEY failed: this NAK.
    Nak(Nak),
    /// Every check passed, but a READ or atomic whose response would not fit: dropped.
    NoRoom,
    /// Every check passed: EXECUTE.
    Execute,
}

/// The check chain's outcome: its verdict, and whether the response queue has room for one more response
/// that is not a fatal NAK (what a sequence NAK, an RNR NAK and a READ or atomic need).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    pub verdict: Verdict,
    pub room: bool,
}

/// The check chain CHK_PSN .. CHK_RKEY for request `pkt` to QP `qp`, whose response queue holds `resp_queue`
/// items, with the MR table `mrs`: a function of the QP's context, the MR the packet's key names and the
/// packet alone (the RTL's `resp_check` computes the same).
pub fn check(qp: &Qp, mrs: &MrTable, resp_queue: usize, info: &OpInfo, pkt: &RocePacket<'_>) -> Check {
    let room = qp.resp.room(1, resp_queue - 1);
    let verdict = if !qp.can_receive() || qp.flushing || qp.resp.fatal {
        Verdict::QpState
    } else {
        let d = pkt.hdr.bth.psn.diff(qp.resp.epsn);
        if d > 0 {
            if qp.resp.nak_sent {
                Verdict::SeqDrop
            } else {
                Verdict::SeqNak
            }
        } else if d < 0 {
            Verdict::Duplicate
        } else {
            let chain = chk_op_seq(qp, info)
                .and_then(|()| chk_op_valid(qp, info))
                .and_then(|()| chk_resource(qp, info))
                .and_then(|()| chk_length(qp, info, pkt))
                .and_then(|()| chk_rkey(qp, mrs, info, pkt));
            match chain {
                Err(nak) => Verdict::Nak(nak),
                Ok(()) if (info.kind == OpKind::ReadRequest || info.is_atomic()) && !room => Verdict::NoRoom,
                Ok(()) => Verdict::Execute,
            }
        }
    };
    Check { verdict, room }
}

/// Whether the responder of `qpn` can queue one more response that is not a fatal NAK (the last place is
/// that one's). When it cannot, the request is dropped here, counted.
fn has_room(nic: &mut Nic, qpn: u32) -> bool {
    let depth = nic.cfg.profile.resp_queue as usize;
    let ok = nic.qp(qpn).is_some_and(|q| q.resp.room(1, depth - 1));
    if !ok {
        nic.count(Counter::rx_drop_resp_queue_full);
    }
    ok
}

/// Entry point for a request packet addressed to `qpn`.
pub(super) fn on_request(nic: &mut Nic, qpn: u32, pkt: &RocePacket<'_>, now: Time, mem: &mut dyn Dma) {
    let Some(info) = pkt.hdr.bth.opcode.info() else { return };
    let Some(qp) = nic.qp(qpn) else { return };
    let c = check(qp, &nic.mrs, nic.cfg.profile.resp_queue as usize, info, pkt);
    match c.verdict {
        Verdict::QpState => nic.count(Counter::rx_drop_qp_state),
        Verdict::SeqNak | Verdict::SeqDrop => {
            if c.verdict == Verdict::SeqNak && !c.room {
                nic.count(Counter::rx_drop_resp_queue_full);
            } else if c.verdict == Verdict::SeqNak {
                let Some(qp) = nic.qp_mut(qpn) else { return };
                queue_seq_nak(qp);
                nic.count(Counter::tx_naks_psn_seq);
            }
            nic.count(Counter::rx_drop_out_of_seq);
        }
        Verdict::Duplicate => {
            nic.count(Counter::rx_drop_duplicate);
            // A NAK names the request in error: here the duplicate, behind ePSN.
            if let Err(nak) = duplicate(nic, qpn, info, pkt) {
                nak_at(nic, qpn, nak, pkt.hdr.bth.psn);
            }
        }
        Verdict::Nak(nak) => send_nak(nic, qpn, nak),
        Verdict::NoRoom => nic.count(Counter::rx_drop_resp_queue_full),
        Verdict::Execute => execute(nic, qpn, info, pkt, now, mem),
    }
}

/// The value an atomic's target takes from the one it held (`orig`): the swap value when a compare-and-swap's
/// compare value matches (else `orig` again), `orig` plus the add value (modulo 2^64) for a fetch-and-add
/// (the RTL's `AtomicOp`).
pub fn atomic_result(kind: OpKind, orig: u64, a: &AtomicEthRepr) -> u64 {
    if kind == OpKind::CompareSwap {
        if orig == a.compare {
            a.swap_add
        } else {
            orig
        }
    } else {
        orig.wrapping_add(a.swap_add)
    }
}

/// Queues a sequence-error NAK for ePSN behind what the responder owes (callers check the room first); no
/// other is sent until a request arrives in sequence.
pub fn queue_seq_nak(qp: &mut Qp) {
    qp.resp.nak_sent = true;
    queue_nak_at_epsn(qp, syndrome::NAK_PSN_SEQ_ERR);
}

/// Queues an RNR NAK for ePSN (the request that found no receive WQE) behind what the responder owes, with
/// the QP's minimum RNR timer (callers check the room first); the QP stays as it is, and the requester
/// sends the request again after the timer.
pub fn queue_rnr_nak(qp: &mut Qp) {
    queue_nak_at_epsn(qp, syndrome::RNR_NAK | (qp.attrs.min_rnr_timer & 0x1F));
}

fn queue_nak_at_epsn(qp: &mut Qp, syndrome: u8) {
    let aeth = AethRepr { syndrome, msn: qp.resp.msn };
    let epsn = qp.resp.epsn;
    qp.resp.queue(RespItem::Ack { psn: epsn, aeth });
}

fn chk_op_seq(qp: &Qp, info: &OpInfo) -> Result<(), Nak> {
    let ok = match qp.resp.in_msg {
        Some(kind) => info.kind == kind && matches!(info.position, Position::Middle | Position::Last),
        None => info.starts_message(),
    };
    if ok {
        Ok(())
    } else {
        Err(Nak::InvalidRequest)
    }
}

fn chk_op_valid(qp: &Qp, info: &OpInfo) -> Result<(), Nak> {
    if info.transport != Transport::Rc || !info.is_request() {
        return Err(Nak::InvalidRequest);
    }
    let need = match info.kind {
        OpKind::Write => REMOTE_WRITE,
        OpKind::ReadRequest => REMOTE_READ,
        OpKind::CompareSwap | OpKind::FetchAdd => REMOTE_ATOMIC,
        _ => 0,
    };
    if qp.attrs.access & need != need {
        return Err(Nak::InvalidRequest);
    }
    if (info.kind == OpKind::ReadRequest || info.is_atomic()) && qp.attrs.max_dest_rd_atomic == 0 {
        return Err(Nak::InvalidRequest);
    }
    Ok(())
}

/// A SEND (first/only) or a WRITE with immediate (last/only) needs a receive WQE.
fn needs_rq_wqe(qp: &Qp, info: &OpInfo) -> bool {
    (info.kind == OpKind::Send && info.starts_message() && qp.resp.recv.is_none())
        || (info.kind == OpKind::Write && info.ends_message() && info.has(wire::opcode::hdr::IMMDT))
}

fn chk_resource(qp: &Qp, info: &OpInfo) -> Result<(), Nak> {
    if needs_rq_wqe(qp, info) && qp.rq.pending() == 0 {
        return Err(Nak::Rnr);
    }
    Ok(())
}

fn chk_length(qp: &Qp, info: &OpInfo, pkt: &RocePacket<'_>) -> Result<(), Nak> {
    let pmtu = qp.attrs.path_mtu() as usize;
    let n = pkt.payload.len();
    let ok = if !info.has_payload {
        n == 0
    } else {
        match info.position {
            Position::First | Position::Middle => n == pmtu,
            Position::Last => (1..=pmtu).contains(&n),
            Position::Only => n <= pmtu,
        }
    };
    if !ok {
        return Err(Nak::InvalidRequest);
    }
    if info.kind == OpKind::Write {
        let reth_len = pkt.hdr.ext.reth.map(|r| r.dma_len as usize);
        let fits = match info.position {
            Position::Only => reth_len == Some(n),
            Position::First => reth_len.is_some_and(|l| l > n),
            Position::Middle => (qp.resp.write_resid as usize) > n,
            Position::Last => qp.resp.write_resid as usize == n,
        };
        if !fits {
            return Err(Nak::InvalidRequest);
        }
    }
    // A message is at most 2^31 bytes (IBTA 9.4.1); the RETH (a READ's, or a WRITE's first packet's) says how long.
    if pkt.hdr.ext.reth.is_some_and(|r| r.dma_len > MAX_MSG_LEN) {
        return Err(Nak::InvalidRequest);
    }
    Ok(())
}

fn chk_rkey(qp: &Qp, mrs: &MrTable, info: &OpInfo, pkt: &RocePacket<'_>) -> Result<(), Nak> {
    let (va, rkey, len, need) = match info.kind {
        OpKind::Write if info.starts_message() => match pkt.hdr.ext.reth {
            Some(r) => (r.va, r.rkey, u64::from(r.dma_len), REMOTE_WRITE),
            None => return Err(Nak::InvalidRequest),
        },
        OpKind::ReadRequest => match pkt.hdr.ext.reth {
            Some(r) => (r.va, r.rkey, u64::from(r.dma_len), REMOTE_READ),
            None => return Err(Nak::InvalidRequest),
        },
        OpKind::CompareSwap | OpKind::FetchAdd => match pkt.hdr.ext.atomic_eth {
            Some(a) if a.va % 8 == 0 => (a.va, a.rkey, 8, REMOTE_ATOMIC),
            _ => return Err(Nak::InvalidRequest),
        },
        // Remote invalidation (IETH) may name only a memory window or a fast-register MR of the QP's PD.
        // This device has neither: every key is a plain registered MR, which a peer may not invalidate.
        OpKind::Send if pkt.hdr.ext.ieth.is_some() => return Err(Nak::InvalidRequest),
        _ => return Ok(()),
    };
    // A zero-length RDMA operation does not use its R_Key.
    if len == 0 {
        return Ok(());
    }
    match mrs.check(rkey, qp.pdn, va, len, need) {
        Ok(_) => Ok(()),
        Err(KeyError::BadKey | KeyError::WrongPd | KeyError::OutOfBounds | KeyError::NoAccess) => {
            Err(Nak::RemoteAccess)
        }
    }
}

/// Owes a plain ACK: it takes the coalesced ACK's place (an older one there is merged into it). A QP that has
/// gone to ERR owes nothing.
fn queue_ack(qp: &mut Qp, psn: Psn) {
    if qp.flushing {
        return;
    }
    let aeth = ack_aeth(qp);
    qp.resp.ack = Some((psn, aeth));
}

fn ack_aeth(qp: &Qp) -> AethRepr {
    AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn: qp.resp.msn & 0xFF_FFFF }
}

/// A SEND or WRITE packet executed before: the last packet executed (ePSN - 1) acknowledged again with the
/// MSN, nothing executed again (the RTL's `RespDuplicate`).
pub fn reack(qp: &mut Qp) {
    let prev = qp.resp.epsn.sub(1);
    queue_ack(qp, prev);
}

/// A request with PSN before ePSN: re-acknowledge, regenerate a READ, or replay an atomic; never re-execute.
/// A READ is regenerated only after its R_Key passes the checks again (the MR may be gone by now).
fn duplicate(nic: &mut Nic, qpn: u32, info: &OpInfo, pkt: &RocePacket<'_>) -> Result<(), Nak> {
    let psn = pkt.hdr.bth.psn;
    let Some(qp) = nic.qp(qpn) else { return Ok(()) };
    let pdn = qp.pdn;
    match info.kind {
        OpKind::Send | OpKind::Write => {
            if let Some(qp) = nic.qp_mut(qpn) {
                reack(qp);
            }
        }
        OpKind::ReadRequest => {
            let Some(reth) = pkt.hdr.ext.reth else { return Ok(()) };
            let Some(item) = find_read(qp, psn, reth) else { return Ok(()) };
            let len = u64::from(reth.dma_len);
            if len > 0 && nic.mrs.check(reth.rkey, pdn, reth.va, len, REMOTE_READ).is_err() {
                return Err(Nak::RemoteAccess);
            }
            if !has_room(nic, qpn) {
                return Ok(());
            }
            let Some(qp) = nic.qp_mut(qpn) else { return Ok(()) };
            qp.resp.queue(item);
        }
        OpKind::CompareSwap | OpKind::FetchAdd => {
            if let Some(item) = find_atomic(qp, psn) {
                if !has_room(nic, qpn) {
                    return Ok(());
                }
                let Some(qp) = nic.qp_mut(qpn) else { return Ok(()) };
                qp.resp.queue(item);
            }
        }
        _ => {}
    }
    Ok(())
}

/// What a duplicate READ request (PSN `psn`, RETH `reth`) asks `qp` to send again: the newest READ resource
/// whose PSNs cover `psn`, and the request within it (its VA range, its R_Key, its last PSN not past the
/// READ's), as the READ item that regenerates those responses (at the READ's first response when `psn` is
/// the READ's first PSN; the READ's MSN). None when the request is ignored. The RTL's `DupRead` matches one
/// resource the same way; the dispatch scans the QP's resources newest first.
pub fn find_read(qp: &Qp, psn: Psn, reth: RethRepr) -> Option<RespItem> {
    let (first_psn, msn, r_last, r_va, r_len, r_rkey) = qp.resp.resources.iter().rev().find_map(|r| match r.kind {
        ResourceKind::Read { last_psn, va, len, rkey } if psn.diff(r.first_psn) >= 0 && last_psn.diff(psn) >= 0 => {
            Some((r.first_psn, r.msn, last_psn, va, len, rkey))
        }
        _ => None,
    })?;
    let end_va = reth.va.saturating_add(u64::from(reth.dma_len));
    let last_psn = psn.add(reth.dma_len.div_ceil(qp.attrs.path_mtu()).max(1) - 1);
    let within = reth.va >= r_va && u128::from(end_va) <= u128::from(r_va) + u128::from(r_len);
    if !within || reth.rkey != r_rkey || last_psn.after(r_last) {
        return None;
    }
    Some(RespItem::Read { psn, va: reth.va, resid: reth.dma_len, at_base: psn == first_psn, msn })
}

/// What a duplicate atomic request of PSN `psn` is answered with: the atomic ACK of the newest atomic
/// resource of `qp` executed at that PSN (its MSN, its original value), never executed again. None when no
/// such resource is kept (the request is ignored). The RTL's `DupRead` matches one resource the same way.
pub fn find_atomic(qp: &Qp, psn: Psn) -> Option<RespItem> {
    qp.resp.resources.iter().rev().find_map(|r| match r.kind {
        ResourceKind::Atomic { orig } if r.first_psn == psn => {
            Some(RespItem::AtomicAck { psn, aeth: AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn: r.msn }, orig })
        }
        _ => None,
    })
}

/// Reads the receive WQE in RQ slot `index` and checks its scatter list: its `wr_id` and SGEs, or the `wr_id`
/// alone when the WQE is malformed or names memory it may not write.
pub(super) fn read_recv_wqe(nic: &Nic, qp: &Qp, index: u16, mem: &dyn Dma) -> Result<(u64, Vec<Sge>), u64> {
    recv_wqe(&nic.mrs, nic.cfg.profile.max_sge, qp, index, mem)
}

/// The receive WQE in RQ slot `index` of `qp`, with its scatter list checked against `mrs` (the RTL's
/// `RecvWqe` does the same). Only the slot's first `RECV_DATA + max_sge * DATA_SEG_LEN` bytes are read:
/// the most a WQE can use. A read that fails gives `Err(0)`; a WQE with more than `max_sge` SGEs or more
/// than its slot holds, or an SGE the QP's PD may not write, gives `Err(wr_id)`. Zero-length SGEs are
/// left out.
pub fn recv_wqe(mrs: &MrTable, max_sge: u32, qp: &Qp, index: u16, mem: &dyn Dma) -> Result<(u64, Vec<Sge>), u64> {
    let stride = 1usize << qp.rq.log_stride;
    let mut buf = vec![0u8; stride.min(RECV_DATA + max_sge as usize * DATA_SEG_LEN)];
    mem.dma_read(qp.rq.addr(index), &mut buf).map_err(|_| 0u64)?;
    let ctrl = RecvCtrlRepr::from_bytes(&buf).map_err(|_| 0u64)?;
    let n = usize::from(ctrl.num_sge);
    if n as u32 > max_sge {
        return Err(ctrl.wr_id);
    }
    let mut sges = Vec::with_capacity(n);
    for i in 0..n {
        // An SGE beyond the slot does not parse.
        let seg = buf.get(RECV_DATA + i * DATA_SEG_LEN..).and_then(|b| DataSegRepr::from_bytes(b).ok());
        let d = seg.ok_or(ctrl.wr_id)?;
        if d.length == 0 {
            continue;
        }
        mrs.check(d.lkey, qp.pdn, d.addr, u64::from(d.length), LOCAL_WRITE).map_err(|_| ctrl.wr_id)?;
        sges.push(Sge { addr: d.addr, lkey: d.lkey, length: d.length });
    }
    Ok((ctrl.wr_id, sges))
}

/// A receive completion of the WQE in RQ slot `index`.
pub(super) struct RecvDone {
    pub index: u16,
    pub wr_id: u64,
    pub opcode: WcOpcode,
    pub status: WcStatus,
    pub byte_len: u32,
    pub imm: u32,
    pub flags: u8,
}

impl RecvDone {
    pub fn cqe(&self, qpn: u32) -> CqeRepr {
        CqeRepr {
            wr_id: self.wr_id,
            byte_len: self.byte_len,
            imm_data: self.imm,
            qp_num: qpn,
            wqe_index: self.index,
            opcode: self.opcode as u8,
            status: self.status as u8,
            wc_flags: self.flags,
            is_recv: 1,
            ..Default::default()
        }
    }
}

/// Where a SEND packet's receive WQE is: a later packet's in the WQE its message took (`RecvCtx`), a first
/// packet's (and a WRITE with immediate's) at the RQ consumer counter; the RQ counter and the message offset.
pub fn recv_slot(qp: &Qp, info: &OpInfo) -> RecvCtx {
    match qp.resp.recv {
        Some(c) if info.kind == OpKind::Send => c,
        _ => RecvCtx { index: qp.rq.ci, offset: 0 },
    }
}

/// What a SEND packet, or the last packet of a WRITE with immediate, does with its receive WQE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// A SEND's payload goes to this scatter list, from message offset `off`.
    pub sges: Option<Vec<Sge>>,
    pub off: u32,
    /// The receive CQE (the message's end, or a failure).
    pub cqe: Option<CqeRepr>,
    /// The fatal NAK the packet ends in (its completion is in error).
    pub nak: Option<Nak>,
    /// The WQE is taken from the RQ (the consumer counter moves).
    pub took: bool,
}

/// The SEND and WRITE arms of `execute` once the receive WQE at `recv_slot` is read (`wqe`: its `wr_id` and
/// scatter list, or the `wr_id` of one that failed its checks, as `recv_wqe` gives them), for a packet the
/// chain passed: a SEND's first packet takes the WQE at the RQ counter, a later one continues in it; its
/// payload must fit the list from the message offset; the last completes the WQE with the message's length
/// (and the immediate and solicited bit). A WRITE with immediate takes the WQE for its `wr_id` alone
/// (`RecvRdmaWithImm`, the WRITE's length). A failed SEND completes its WQE in error and ends in a fatal NAK:
/// LocQpOpErr and NAK Remote Operational Error on a first packet whose WQE fails its checks, LocProtErr on
/// a later one, LocLenErr when the payload does not fit (both NAK Invalid Request). `qp`'s RQ counter and
/// receive context move as the packet leaves them; the rest (`advance`) is the caller's. The RTL's
/// `RespSend` does the same.
pub fn receive(qp: &mut Qp, info: &OpInfo, pkt: &RocePacket<'_>, wqe: Result<(u64, Vec<Sge>), u64>) -> Received {
    let at = recv_slot(qp, info);
    let qpn = qp.qpn;
    let (imm, flags) = pkt.hdr.ext.immdt.map_or((0, 0), |i| (i, wc_flags::WITH_IMM));
    let solicited = u8::from(pkt.hdr.bth.solicited);
    let cqe = |wr_id, opcode: WcOpcode, status: WcStatus, byte_len| CqeRepr {
        wr_id,
        byte_len,
        qp_num: qpn,
        wqe_index: at.index,
        opcode: opcode as u8,
        status: status as u8,
        is_recv: 1,
        ..Default::default()
    };
    let took = info.starts_message() || info.kind == OpKind::Write;
    if took {
        qp.rq.ci = qp.rq.ci.wrapping_add(1);
    }
    let wr_id = wqe.as_ref().map_or_else(|&w| w, |(w, _)| *w);
    if info.kind == OpKind::Write {
        let byte_len = qp.resp.write_len;
        let done = CqeRepr {
            imm_data: imm,
            wc_flags: flags,
            se: solicited,
            ..cqe(wr_id, WcOpcode::RecvRdmaWithImm, WcStatus::Success, byte_len)
        };
        return Received { sges: None, off: 0, cqe: Some(done), nak: None, took };
    }
    let failed = |status, byte_len, nak| Received {
        sges: None,
        off: at.offset,
        cqe: Some(cqe(wr_id, WcOpcode::Recv, status, byte_len)),
        nak: Some(nak),
        took,
    };
    let sges = match wqe {
        Ok((_, s)) => s,
        Err(_) if qp.resp.recv.is_none() => return failed(WcStatus::LocQpOpErr, 0, Nak::RemoteOp),
        Err(_) => {
            // Mid-message, its scatter list no longer passes the key checks.
            qp.resp.recv = None;
            return failed(WcStatus::LocProtErr, at.offset, Nak::InvalidRequest);
        }
    };
    if super::qp::scatter_pieces(&sges, at.offset, pkt.payload.len()).is_none() {
        // Longer than the receive buffer.
        qp.resp.recv = None;
        return failed(WcStatus::LocLenErr, at.offset, Nak::InvalidRequest);
    }
    let end = at.offset + pkt.payload.len() as u32;
    let done = if info.ends_message() {
        qp.resp.recv = None;
        Some(CqeRepr {
            imm_data: imm,
            wc_flags: flags,
            se: solicited,
            ..cqe(wr_id, WcOpcode::Recv, WcStatus::Success, end)
        })
    } else {
        qp.resp.recv = Some(RecvCtx { index: at.index, offset: end });
        None
    };
    Received { sges: Some(sges), off: at.offset, cqe: done, nak: None, took }
}

fn execute(nic: &mut Nic, qpn: u32, info: &OpInfo, pkt: &RocePacket<'_>, _now: Time, mem: &mut dyn Dma) {
    let psn = pkt.hdr.bth.psn;
    let pmtu = nic.qp(qpn).map_or(1024, |q| q.attrs.path_mtu());
    match info.kind {
        OpKind::Send | OpKind::Write => {
            let Some(qp) = nic.qp_mut(qpn) else { return };
            if info.kind == OpKind::Write {
                let va = write_cursor(qp, info, pkt);
                if !pkt.payload.is_empty() {
                    nic.place((qpn, Side::Responder), va, pkt.payload, mem);
                }
                if !info.ends_message() || pkt.hdr.ext.immdt.is_none() {
                    return advance_qp(nic, qpn, info, pkt);
                }
            }
            let Some(qp) = nic.qp(qpn) else { return };
            let (cqn, at) = (qp.recv_cqn, recv_slot(qp, info));
            let wqe = read_recv_wqe(nic, qp, at.index, mem);
            let Some(qp) = nic.qp_mut(qpn) else { return };
            let r = receive(qp, info, pkt, wqe);
            // A WQE taken counts, unless a first packet found it failing its checks.
            if r.took && r.nak != Some(Nak::RemoteOp) {
                nic.count(Counter::rq_wqes);
            }
            if let Some(sges) = &r.sges {
                nic.scatter((qpn, Side::Responder), sges, r.off, pkt.payload, mem);
            }
            if let Some(cqe) = r.cqe {
                nic.push_cqe(cqn, cqe, mem);
            }
            if let Some(nak) = r.nak {
                return send_nak(nic, qpn, nak);
            }
        }
        OpKind::ReadRequest => {
            let Some(reth) = pkt.hdr.ext.reth else { return };
            let Some(qp) = nic.qp_mut(qpn) else { return };
            queue_read(qp, psn, reth, pmtu);
            return;
        }
        OpKind::CompareSwap | OpKind::FetchAdd => {
            let Some(a) = pkt.hdr.ext.atomic_eth else { return };
            let mut cur = [0u8; 8];
            if mem.dma_read(a.va, &mut cur).is_err() {
                send_nak(nic, qpn, Nak::RemoteAccess);
                return;
            }
            let orig = u64::from_le_bytes(cur);
            let new = atomic_result(info.kind, orig, &a);
            nic.place((qpn, Side::Responder), a.va, &new.to_le_bytes(), mem);
            nic.count(if info.kind == OpKind::CompareSwap { Counter::rx_cmp_swaps } else { Counter::rx_fetch_adds });
            let Some(qp) = nic.qp_mut(qpn) else { return };
            queue_atomic(qp, psn, orig);
            return;
        }
        _ => return,
    }
    advance_qp(nic, qpn, info, pkt);
}

fn advance_qp(nic: &mut Nic, qpn: u32, info: &OpInfo, pkt: &RocePacket<'_>) {
    if let Some(qp) = nic.qp_mut(qpn) {
        advance(qp, info, pkt);
    }
}

/// A WRITE packet the chain passed: where its payload goes, and the message's cursor moved past it (a first
/// or only packet starts it at its RETH).
pub fn write_cursor(qp: &mut Qp, info: &OpInfo, pkt: &RocePacket<'_>) -> u64 {
    let r = &mut qp.resp;
    if let Some(reth) = pkt.hdr.ext.reth.filter(|_| info.starts_message()) {
        r.write_va = reth.va;
        r.write_resid = reth.dma_len;
        r.write_len = reth.dma_len;
    }
    let (va, n) = (r.write_va, pkt.payload.len() as u32);
    r.write_va = va.wrapping_add(u64::from(n));
    r.write_resid -= n.min(r.write_resid);
    va
}

/// The responder's bookkeeping once a SEND or WRITE packet is done: the next ePSN, the message in progress,
/// the MSN at a message's end, and the coalesced ACK when the packet asks for one.
pub fn advance(qp: &mut Qp, info: &OpInfo, pkt: &RocePacket<'_>) {
    let psn = pkt.hdr.bth.psn;
    qp.resp.epsn = psn.add(1);
    qp.resp.nak_sent = false;
    qp.resp.in_msg = if info.ends_message() { None } else { Some(info.kind) };
    if info.ends_message() {
        qp.resp.msn = (qp.resp.msn + 1) & 0xFF_FFFF;
    }
    if pkt.hdr.bth.ack_req {
        queue_ack(qp, psn);
    }
}

/// Executes a READ request the chain passed (PSN `psn`, its RETH `reth`, at path MTU `pmtu`): its resource
/// kept (the oldest dropped when `max_dest_rd_atomic` are kept), its responses queued (as one `Read` item,
/// behind the coalesced ACK, which moves into the ring), the MSN one on and ePSN past its last response's PSN.
/// The RTL's `RespQueue` does the same in its READ mode.
pub fn queue_read(qp: &mut Qp, psn: Psn, reth: RethRepr, pmtu: u32) {
    let npkts = reth.dma_len.div_ceil(pmtu).max(1);
    let last = psn.add(npkts - 1);
    qp.resp.msn = (qp.resp.msn + 1) & 0xFF_FFFF;
    let msn = qp.resp.msn;
    let (va, len, rkey) = (reth.va, reth.dma_len, reth.rkey);
    let kind = ResourceKind::Read { last_psn: last, va, len, rkey };
    push_resource(qp, Resource { first_psn: psn, msn, kind });
    qp.resp.queue(RespItem::Read { psn, va, resid: len, at_base: true, msn });
    qp.resp.epsn = last.add(1);
    qp.resp.nak_sent = false;
}

/// Executes an atomic request of PSN `psn` whose target held `orig`: its resource kept (the oldest dropped
/// when `max_dest_rd_atomic` are kept), its atomic ACK queued (behind the coalesced ACK, which moves into the
/// ring), the MSN one on and ePSN past it. The RTL's `RespQueue` does the same in its atomic mode.
pub fn queue_atomic(qp: &mut Qp, psn: Psn, orig: u64) {
    qp.resp.msn = (qp.resp.msn + 1) & 0xFF_FFFF;
    let msn = qp.resp.msn;
    push_resource(qp, Resource { first_psn: psn, msn, kind: ResourceKind::Atomic { orig } });
    let aeth = ack_aeth(qp);
    qp.resp.queue(RespItem::AtomicAck { psn, aeth, orig });
    qp.resp.epsn = psn.add(1);
    qp.resp.nak_sent = false;
}

fn push_resource(qp: &mut Qp, r: Resource) {
    let max = usize::from(qp.attrs.max_dest_rd_atomic.max(1));
    while qp.resp.resources.len() >= max {
        qp.resp.pop_resource();
    }
    qp.resp.resources.push_back(r);
}

/// Ends the check chain with a NAK. RNR leaves the QP as it is; every other NAK moves it to ERR.
fn send_nak(nic: &mut Nic, qpn: u32, nak: Nak) {
    if let Some(epsn) = nic.qp(qpn).map(|q| q.resp.epsn) {
        nak_at(nic, qpn, nak, epsn);
    }
}

/// Queues `nak` with PSN `psn` behind what the responder already owes. An RNR NAK (always for ePSN: the
/// request in sequence found no receive WQE) that does not fit is not sent (the request is dropped,
/// counted); a fatal one always fits.
fn nak_at(nic: &mut Nic, qpn: u32, nak: Nak, psn: Psn) {
    let (syn, counter) = match nak {
        Nak::Rnr => {
            nic.count(Counter::rx_drop_no_rq_wqe);
            if !has_room(nic, qpn) {
                return;
            }
            let Some(qp) = nic.qp_mut(qpn) else { return };
            debug_assert_eq!(psn, qp.resp.epsn, "an RNR NAK is for the request in sequence");
            queue_rnr_nak(qp);
            nic.count(Counter::tx_rnr_naks);
            return;
        }
        Nak::InvalidRequest => (syndrome::NAK_INVALID_REQUEST, Counter::tx_naks_invalid_req),
        Nak::RemoteAccess => (syndrome::NAK_REMOTE_ACCESS, Counter::tx_naks_remote_access),
        Nak::RemoteOp => (syndrome::NAK_REMOTE_OP, Counter::tx_naks_remote_op),
    };
    let Some(qp) = nic.qp_mut(qpn) else { return };
    queue_fatal_nak(qp, syn, psn);
    nic.count(counter);
}

/// Queues a fatal NAK of `syndrome` for `psn`: it follows every response still owed for earlier requests
/// (they were executed), the coalesced ACK is dropped, and nothing after it is executed. The QP enters ERR
/// when the NAK leaves (`next_frame`). The RTL's `RespQueue` does the same.
pub fn queue_fatal_nak(qp: &mut Qp, syndrome: u8, psn: Psn) {
    qp.resp.fatal = true;
    qp.resp.ack = None;
    qp.resp.queue(RespItem::FatalNak { psn, aeth: AethRepr { syndrome, msn: qp.resp.msn } });
}

/// One READ response: its PSN, the VA and length of its payload, its place in the READ's responses and the
/// READ's MSN (in the AETH of all but a middle one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadResponse {
    pub psn: Psn,
    pub va: u64,
    pub len: u32,
    pub pos: Position,
    pub msn: u32,
}

/// Takes the next response of the READ first in `qp`'s response queue at path MTU `pmtu`: the item moves on
/// past it (PSN, VA, bytes left), or leaves the queue with the READ's last. None when no READ is first. The
/// RTL's `ReadStep` does the same.
pub fn take_read(qp: &mut Qp, pmtu: u32) -> Option<ReadResponse> {
    let Some(RespItem::Read { psn, va, resid, at_base, msn }) = qp.resp.out.front_mut() else { return None };
    let r = ReadResponse {
        psn: *psn,
        va: *va,
        len: (*resid).min(pmtu),
        pos: Position::of(*at_base, *resid <= pmtu),
        msn: *msn,
    };
    *psn = r.psn.add(1);
    *va = r.va.wrapping_add(u64::from(r.len));
    *resid -= r.len;
    *at_base = false;
    if matches!(r.pos, Position::Last | Position::Only) {
        qp.resp.pop_item();
    }
    Some(r)
}

/// The payload of the READ response of PSN `psn` could not be read (the memory went away under the READ):
/// everything owed is dropped and a remote access NAK for `psn` queued, fatal. The RTL's `ReadStep` gives
/// the same record.
pub fn read_failed(qp: &mut Qp, psn: Psn) {
    qp.resp.out.clear();
    queue_fatal_nak(qp, syndrome::NAK_REMOTE_ACCESS, psn);
}

/// Whether the responder of `qp` owes a response (pacer aside); a QP in ERR sends none.
pub fn sendable(qp: &Qp) -> bool {
    qp.resp.owes() && !qp.flushing
}

/// Whether its next response is a READ response, which the pacer spaces; ACKs and NAKs go at once.
pub(super) fn paced(qp: &Qp) -> bool {
    matches!(qp.resp.out.front(), Some(RespItem::Read { .. }))
}

/// A response the responder sends: its opcode, PSN, AETH, AtomicAckETH (an atomic ACK's original value) and
/// payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub opcode: Opcode,
    pub psn: Psn,
    pub aeth: Option<AethRepr>,
    pub orig: Option<u64>,
    pub payload: Vec<u8>,
}

/// What the responder does when its stream is picked (`next_response`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// A response that leaves the QP as it is.
    Send(Response),
    /// A fatal NAK: the QP enters ERR as it leaves.
    Fatal(Response),
    /// A READ response whose payload could not be read: nothing is sent and the remote access NAK is queued
    /// (`read_failed`).
    ReadFailed,
}

/// The responder's next response, in PSN order, taken off `qp`'s response queue (the oldest item first,
/// then the coalesced ACK); `read(va, buf)` reads a READ response's payload and says whether it could. A
/// fatal NAK empties the queue and the ACK slot. None when nothing is owed. The RTL's `RespTx` does the same
/// (its `AckSlot` and `ReadStep`).
pub fn next_response(qp: &mut Qp, read: impl FnOnce(u64, &mut [u8]) -> bool) -> Option<Next> {
    let ack = |opcode, psn, aeth| Response { opcode, psn, aeth: Some(aeth), orig: None, payload: Vec::new() };
    let Some(item) = qp.resp.out.front().cloned() else {
        let (psn, aeth) = qp.resp.ack.take()?;
        return Some(Next::Send(ack(Opcode::ACKNOWLEDGE, psn, aeth)));
    };
    Some(match item {
        RespItem::Ack { psn, aeth } => {
            qp.resp.pop_item();
            Next::Send(ack(Opcode::ACKNOWLEDGE, psn, aeth))
        }
        RespItem::AtomicAck { psn, aeth, orig } => {
            qp.resp.pop_item();
            Next::Send(Response { orig: Some(orig), ..ack(Opcode::ATOMIC_ACKNOWLEDGE, psn, aeth) })
        }
        RespItem::FatalNak { psn, aeth } => {
            qp.resp.out.clear();
            qp.resp.ack = None;
            Next::Fatal(ack(Opcode::ACKNOWLEDGE, psn, aeth))
        }
        RespItem::Read { .. } => {
            let pmtu = qp.attrs.path_mtu();
            let ReadResponse { psn, va, len, pos, msn } = take_read(qp, pmtu)?;
            let mut payload = vec![0u8; len as usize];
            if len != 0 && !read(va, &mut payload) {
                // The MR went away under the READ: a remote access error ends the connection here.
                read_failed(qp, psn);
                return Some(Next::ReadFailed);
            }
            let opcode = match pos {
                Position::First => Opcode::RDMA_READ_RESPONSE_FIRST,
                Position::Middle => Opcode::RDMA_READ_RESPONSE_MIDDLE,
                Position::Last => Opcode::RDMA_READ_RESPONSE_LAST,
                Position::Only => Opcode::RDMA_READ_RESPONSE_ONLY,
            };
            let aeth = (pos != Position::Middle).then_some(AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn });
            Next::Send(Response { opcode, psn, aeth, orig: None, payload })
        }
    })
}

/// Sends the responder's next packet, in PSN order (`next_response`), and counts it.
pub(super) fn next_frame(nic: &mut Nic, qpn: u32, now: Time, mem: &mut dyn Dma) -> Option<Vec<u8>> {
    let tick = super::timer::tick_of(now);
    let (params, line) = (nic.dcqcn, nic.line);
    let qp = nic.qp_mut(qpn)?;
    let (r, fatal) = match next_response(qp, |va, buf| mem.dma_read(va, buf).is_ok())? {
        Next::Send(r) => (r, false),
        Next::Fatal(r) => (r, true),
        Next::ReadFailed => {
            nic.count(Counter::tx_naks_remote_access);
            return None;
        }
    };
    let frame = nic.headers(qpn, r.opcode, r.psn, false).map(|mut h| {
        h.ext.aeth = r.aeth;
        h.ext.atomic_ack_eth = r.orig.map(|orig| wire::ext::AtomicAckEthRepr { orig });
        h.emit(&r.payload)
    });
    if fatal {
        nic.enter_err(qpn);
        return frame;
    }
    let frame = frame?;
    if r.opcode == Opcode::ACKNOWLEDGE {
        nic.count(Counter::tx_acks);
    } else if r.opcode != Opcode::ATOMIC_ACKNOWLEDGE {
        let qp = nic.qp_mut(qpn)?;
        qp.rp.on_sent(tick, frame.len() + super::WIRE_OVERHEAD, line, &params);
    }
    Some(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hostmem::HostMemory;
    use crate::nic::NicConfig;

    const PD: u32 = 1;

    /// A NIC allowing 4 SGEs, an MR of 1 MiB at `base`, an MR without local write, and a QP whose RQ has slots
    /// of 2^`log_stride` bytes (64: room for three SGEs after the 16-byte header; 128: seven) with one receive
    /// WQE of `sges` posted.
    fn posted_in(log_stride: u8, num_sge: u16, sges: &[(u64, bool, u32)]) -> Result<(u64, Vec<Sge>), u64> {
        let stride = 1usize << log_stride;
        let mem = HostMemory::new();
        let base = mem.alloc(1 << 20);
        let mut cfg = NicConfig::default();
        cfg.profile.max_sge = 4;
        let mut n = Nic::new(cfg);
        let rw = n.mrs.register(PD, base, 1 << 20, wire::contract::verbs::access::ALL).unwrap();
        let ro = n.mrs.register(PD, base, 1 << 20, wire::contract::verbs::access::REMOTE_READ).unwrap();
        let ring = mem.alloc(stride * 4);
        let mut slot = vec![0u8; stride];
        slot[..RecvCtrlRepr::LEN].copy_from_slice(&RecvCtrlRepr { wr_id: 5, num_sge }.to_bytes());
        for (i, &(off, writable, length)) in sges.iter().enumerate() {
            let d = DataSegRepr { addr: base + off, lkey: if writable { rw } else { ro }, length };
            slot[RECV_DATA + i * DATA_SEG_LEN..][..DATA_SEG_LEN].copy_from_slice(&d.to_bytes());
        }
        mem.write(ring, &slot).unwrap();
        let mut qp = Qp::new(1, PD, crate::nic::dcqcn::Rp::new(100_000, &Default::default()));
        qp.rq = super::super::qp::Ring { iova: ring, log_size: 2, log_stride, pi: 1, ci: 0 };
        read_recv_wqe(&n, &qp, 0, &mem)
    }

    fn posted(num_sge: u16, sges: &[(u64, bool, u32)]) -> Result<(u64, Vec<Sge>), u64> {
        posted_in(6, num_sge, sges)
    }

    /// A fatal NAK fits a response queue that holds all it may of other responses and a coalesced ACK too: it
    /// takes the ACK's place, behind everything owed.
    #[test]
    fn a_fatal_nak_fits_a_full_response_queue() {
        let mut b = crate::nic::bench::Bench::new();
        let q = b.rts_qp();
        let depth = b.nic.cfg.profile.resp_queue as usize;
        let aeth = AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn: 1 };
        let qp = b.nic.qp_mut(q.qpn).unwrap();
        while qp.resp.room(1, depth - 1) {
            qp.resp.queue(RespItem::AtomicAck { psn: Psn::new(1), aeth, orig: 0 });
        }
        queue_ack(qp, Psn::new(2));
        assert_eq!((qp.resp.out.len(), qp.resp.ack.is_some()), (depth - 1, true));
        send_nak(&mut b.nic, q.qpn, Nak::InvalidRequest);
        let qp = b.nic.qp(q.qpn).unwrap();
        assert_eq!((qp.resp.out.len(), qp.resp.ack), (depth, None));
        assert!(matches!(qp.resp.out.back(), Some(RespItem::FatalNak { .. })));
        assert_eq!(b.nic.check_invariants(), Ok(()));
    }

    /// The receive WQE decoder's bounds: SGEs against the slot and max_sge, local write, zero-length SGEs.
    #[test]
    fn receive_wqe_bounds() {
        let (wr_id, sges) = posted(3, &[(0, true, 10), (100, true, 0), (200, true, 20)]).unwrap();
        assert_eq!((wr_id, sges.len()), (5, 2), "a zero-length SGE is skipped");
        assert_eq!((sges[0].length, sges[1].length), (10, 20));
        assert_eq!(posted(3, &[(0, true, 1); 3]).map(|r| r.1.len()), Ok(3), "three SGEs fill a 64-byte slot");
        assert_eq!(posted(4, &[(0, true, 1); 3]).err(), Some(5), "four SGEs do not fit a 64-byte slot");
        assert_eq!(posted_in(7, 4, &[(0, true, 1); 4]).map(|r| r.1.len()), Ok(4), "max_sge SGEs");
        assert_eq!(posted_in(7, 5, &[(0, true, 1); 5]).err(), Some(5), "past max_sge, in a slot that holds them");
        assert_eq!(posted(1, &[(0, false, 8)]).err(), Some(5), "no local write");
        assert_eq!(posted(1, &[(1 << 20, true, 8)]).err(), Some(5), "outside the MR");
        assert!(posted(0, &[]).unwrap().1.is_empty(), "no SGE at all is a receive of 0 bytes");
    }
}
