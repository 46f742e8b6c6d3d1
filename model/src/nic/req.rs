//! Requester: fetch send WQEs from the SQ ring, turn them into packets (segmentation at the PMTU, padding,
//! AckReq policy), and keep the go-back-N cursor. Completion and retransmission decisions live in `comp`.

use super::qp::{Qp, SendWqe, Sge, WqeData};
use super::{Nic, MAX_PKTS_PER_ACK, MAX_UNACKED_PSNS, WIRE_OVERHEAD};
use crate::hostmem::Dma;
use crate::Time;
use wire::contract::regs::Counter;
use wire::contract::verbs::{access, local_ack_timeout_ns, WcStatus, MAX_MSG_LEN};
use wire::contract::wqe::*;
use wire::ext::{AtomicEthRepr, RethRepr};
use wire::{Opcode, Position};

/// When the requester of `qp` may send its next packet, or `None` if it has nothing sendable.
pub(super) fn ready_at(qp: &Qp) -> Option<Time> {
    let r = &qp.req;
    if r.rnr_wait.is_some() {
        return None;
    }
    let w = r.wqes.get(r.cursor)?;
    if !qp.can_send(w) || w.acked || r.cursor_psn.diff(r.comp_psn) >= MAX_UNACKED_PSNS {
        return None;
    }
    if w.first_psn.is_none() {
        let earlier = || r.wqes.iter().take(r.cursor).filter(|x| !x.acked && x.op.is_read_or_atomic());
        if w.flags & send_flags::FENCE != 0 && earlier().next().is_some() {
            return None;
        }
        if w.op.is_read_or_atomic() && earlier().count() >= usize::from(qp.attrs.max_rd_atomic.max(1)) {
            return None;
        }
    }
    Some(r.next_send)
}

/// Number of packets (and PSNs) a WQE uses.
fn packets_for(op: SendOp, len: u32, pmtu: u32) -> u32 {
    if op.is_atomic() {
        1
    } else {
        len.div_ceil(pmtu).max(1)
    }
}

fn opcode_for(op: SendOp, pos: Position) -> Opcode {
    use Position::*;
    match (op, pos) {
        (SendOp::Send | SendOp::SendWithImm | SendOp::SendWithInv, First) => Opcode::SEND_FIRST,
        (SendOp::Send | SendOp::SendWithImm | SendOp::SendWithInv, Middle) => Opcode::SEND_MIDDLE,
        (SendOp::Send, Last) => Opcode::SEND_LAST,
        (SendOp::Send, Only) => Opcode::SEND_ONLY,
        (SendOp::SendWithImm, Last) => Opcode::SEND_LAST_WITH_IMMEDIATE,
        (SendOp::SendWithImm, Only) => Opcode::SEND_ONLY_WITH_IMMEDIATE,
        (SendOp::SendWithInv, Last) => Opcode::SEND_LAST_WITH_INVALIDATE,
        (SendOp::SendWithInv, Only) => Opcode::SEND_ONLY_WITH_INVALIDATE,
        (SendOp::RdmaWrite | SendOp::RdmaWriteWithImm, First) => Opcode::RDMA_WRITE_FIRST,
        (SendOp::RdmaWrite | SendOp::RdmaWriteWithImm, Middle) => Opcode::RDMA_WRITE_MIDDLE,
        (SendOp::RdmaWrite, Last) => Opcode::RDMA_WRITE_LAST,
        (SendOp::RdmaWrite, Only) => Opcode::RDMA_WRITE_ONLY,
        (SendOp::RdmaWriteWithImm, Last) => Opcode::RDMA_WRITE_LAST_WITH_IMMEDIATE,
        (SendOp::RdmaWriteWithImm, Only) => Opcode::RDMA_WRITE_ONLY_WITH_IMMEDIATE,
        (SendOp::RdmaRead, _) => Opcode::RDMA_READ_REQUEST,
        (SendOp::AtomicCmpSwp, _) => Opcode::COMPARE_SWAP,
        (SendOp::AtomicFetchAdd, _) => Opcode::FETCH_ADD,
    }
}

/// The position of packet `k` of an `n`-packet message.
pub(super) fn position(k: u32, n: u32) -> Position {
    Position::of(k == 0, k + 1 == n)
}

/// Copies the payload at message offset `off` out of a WQE's data into `dst`.
fn gather(data: &WqeData, off: u32, dst: &mut [u8], mem: &dyn Dma) -> bool {
    match data {
        WqeData::Inline(bytes) => match bytes.get(off as usize..off as usize + dst.len()) {
            Some(src) => {
                dst.copy_from_slice(src);
                true
            }
            None => false,
        },
        WqeData::Sges(sges) => {
            super::qp::walk_sges(sges, off, dst.len(), |addr, a, b| mem.dma_read(addr, &mut dst[a..b]).is_ok())
        }
    }
}

/// Builds the next packet of `qpn`'s requester. Callers check `ready_at` first.
pub(super) fn next_frame(nic: &mut Nic, qpn: u32, now: Time, mem: &mut dyn Dma) -> Option<Vec<u8>> {
    let params = nic.dcqcn;
    let qp = nic.qp_mut(qpn)?;
    let pmtu = qp.attrs.path_mtu();
    let cursor = qp.req.cursor;
    let next_psn = qp.req.psn;
    let w = qp.req.wqes.get_mut(cursor)?;
    if w.first_psn.is_none() {
        w.first_psn = Some(next_psn);
        w.npkts = packets_for(w.op, w.len, pmtu);
        qp.req.psn = next_psn.add(w.npkts);
    }
    let w = &qp.req.wqes[cursor];
    let first = w.first_psn?;
    let psn = qp.req.cursor_psn;
    let k = psn.diff(first).max(0) as u32;
    let pos = position(k, w.npkts);
    let (op, flags, imm, npkts) = (w.op, w.flags, w.imm, w.npkts);
    let off = k * pmtu;
    let mut reth = None;
    let mut atomic = None;
    let mut payload_len = 0;
    // Where the cursor goes once this packet is out, and whether it finishes the WQE.
    let (next_cursor_psn, last_of_wqe) = match op {
        SendOp::RdmaRead => {
            reth = Some(RethRepr { va: w.remote_va + u64::from(off), rkey: w.rkey, dma_len: w.len - off.min(w.len) });
            (first.add(npkts), true)
        }
        SendOp::AtomicCmpSwp | SendOp::AtomicFetchAdd => {
            atomic = Some(AtomicEthRepr { va: w.remote_va, rkey: w.rkey, swap_add: w.swap_add, compare: w.compare });
            (psn.add(1), true)
        }
        _ => {
            payload_len = pmtu.min(w.len.saturating_sub(off));
            if matches!(op, SendOp::RdmaWrite | SendOp::RdmaWriteWithImm)
                && matches!(pos, Position::First | Position::Only)
            {
                reth = Some(RethRepr { va: w.remote_va, rkey: w.rkey, dma_len: w.len });
            }
            (psn.add(1), k + 1 >= npkts)
        }
    };
    let opcode = opcode_for(op, if op.is_read_or_atomic() { Position::Only } else { pos });
    let info = opcode.info()?;
    let ack_req = info.ends_message() || qp.req.pkts_since_ackreq + 1 >= MAX_PKTS_PER_ACK;
    let mut h = nic.headers(qpn, opcode, psn, ack_req)?;
    h.bth.solicited = info.ends_message() && flags & send_flags::SOLICITED != 0;
    h.ext.reth = reth;
    h.ext.atomic_eth = atomic;
    if info.has(wire::opcode::hdr::IMMDT) {
        h.ext.immdt = Some(imm);
    }
    if info.has(wire::opcode::hdr::IETH) {
        h.ext.ieth = Some(imm);
    }
    let data = &nic.qp(qpn)?.req.wqes[cursor].data;
    let Some(frame) = h.emit_with(payload_len as usize, |dst| gather(data, off, dst, mem)) else {
        let x = &mut nic.qp_mut(qpn)?.req.wqes[cursor];
        x.acked = true;
        x.error = Some((WcStatus::LocProtErr, 0));
        return None;
    };
    let qp = nic.qp_mut(qpn)?;
    qp.req.cursor_psn = next_cursor_psn;
    if last_of_wqe {
        qp.req.cursor = cursor + 1;
    }
    qp.req.pkts_since_ackreq = if ack_req { 0 } else { qp.req.pkts_since_ackreq + 1 };
    let retransmit = psn.before(qp.req.high_psn);
    if !retransmit {
        qp.req.high_psn = qp.req.cursor_psn;
    }
    if qp.req.timer.is_none() {
        qp.req.timer = local_ack_timeout_ns(qp.attrs.timeout).map(|ns| now + ns * 1000);
    }
    pace(qp, now, frame.len(), &params);
    if retransmit {
        nic.count(Counter::retransmitted_packets);
    }
    Some(frame)
}

/// Advances the DCQCN pacer of `qp` past one frame.
pub(super) fn pace(qp: &mut Qp, now: Time, frame_len: usize, params: &super::dcqcn::Params) {
    let wire_len = frame_len + WIRE_OVERHEAD;
    qp.rp.on_sent(now, wire_len, params);
    qp.req.next_send = if qp.rp.active { qp.req.next_send.max(now) + qp.rp.gap(wire_len) } else { now };
}

impl Nic {
    /// Reads every posted send WQE into the requester's queue, validating it; a bad WQE is kept with its
    /// error so it completes in SQ order.
    pub(super) fn fetch_send_wqes(&mut self, qpn: u32, mem: &mut dyn Dma) {
        let max_sge = self.cfg.max_sge;
        let max_inline = self.cfg.max_inline;
        loop {
            let Some(qp) = self.qp(qpn) else { return };
            if qp.sq.pending() == 0 || qp.sq.pending() > 1 << qp.sq.log_size {
                return;
            }
            let index = qp.sq.ci;
            let stride = 1usize << qp.sq.log_stride;
            let mut buf = vec![0u8; stride];
            let read_ok = mem.dma_read(qp.sq.addr(index), &mut buf).is_ok();
            let pdn = qp.pdn;
            let wqe = self.decode_send_wqe(index, &buf, read_ok, pdn, max_sge, max_inline);
            let qp = match self.qp_mut(qpn) {
                Some(q) => q,
                None => return,
            };
            qp.sq.ci = qp.sq.ci.wrapping_add(1);
            qp.req.wqes.push_back(wqe);
            self.count(Counter::sq_wqes);
        }
    }

    fn decode_send_wqe(
        &self,
        index: u16,
        buf: &[u8],
        read_ok: bool,
        pdn: u32,
        max_sge: u32,
        max_inline: u32,
    ) -> SendWqe {
        let ctrl = SendCtrlRepr::from_bytes(buf).unwrap_or_default();
        let remote = RemoteSegRepr::from_bytes(&buf[REMOTE..]).unwrap_or_default();
        let atom = AtomicSegRepr::from_bytes(&buf[ATOMIC..]).unwrap_or_default();
        let mut w = SendWqe {
            index,
            wr_id: ctrl.wr_id,
            op: SendOp::from_u8(ctrl.opcode).unwrap_or(SendOp::Send),
            flags: ctrl.flags,
            imm: ctrl.imm,
            remote_va: remote.va,
            rkey: remote.rkey,
            swap_add: atom.swap_add,
            compare: atom.compare,
            data: WqeData::Sges(Vec::new()),
            len: 0,
            first_psn: None,
            npkts: 0,
            resp_pkts: 0,
            acked: false,
            error: None,
        };
        let fail = |mut w: SendWqe, s: WcStatus| {
            w.acked = true;
            w.error = Some((s, 0));
            w
        };
        if !read_ok || SendOp::from_u8(ctrl.opcode).is_none() {
            return fail(w, WcStatus::LocQpOpErr);
        }
        let room = buf.len() - SEND_DATA;
        if ctrl.flags & send_flags::INLINE != 0 {
            let n = usize::from(ctrl.len);
            if n > room || n as u32 > max_inline || w.op.is_read_or_atomic() {
                return fail(w, WcStatus::LocLenErr);
            }
            w.data = WqeData::Inline(buf[SEND_DATA..SEND_DATA + n].to_vec());
            w.len = n as u32;
            return w;
        }
        let n = usize::from(ctrl.len);
        if n * DATA_SEG_LEN > room || n as u32 > max_sge {
            return fail(w, WcStatus::LocLenErr);
        }
        let needed = if w.op.is_read_or_atomic() { access::LOCAL_WRITE } else { 0 };
        let mut sges = Vec::with_capacity(n);
        let mut total: u64 = 0;
        for i in 0..n {
            let d = DataSegRepr::from_bytes(&buf[SEND_DATA + i * DATA_SEG_LEN..]).unwrap_or_default();
            if d.length == 0 {
                continue;
            }
            if self.mrs.check(d.lkey, pdn, d.addr, u64::from(d.length), needed).is_err() {
                return fail(w, WcStatus::LocProtErr);
            }
            total += u64::from(d.length);
            sges.push(Sge { addr: d.addr, lkey: d.lkey, length: d.length });
        }
        if total > u64::from(MAX_MSG_LEN) || (w.op.is_atomic() && total != u64::from(ATOMIC_LEN)) {
            return fail(w, WcStatus::LocLenErr);
        }
        w.len = total as u32;
        w.data = WqeData::Sges(sges);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::NicConfig;

    /// A 128-byte send WQE slot: the 48-byte header, then room for five SGEs or 80 bytes of inline data.
    const STRIDE: usize = 128;
    const PD: u32 = 1;

    fn slot(op: SendOp, flags: u8, len: u16, sges: &[(u64, u32, u32)]) -> Vec<u8> {
        let mut b = vec![0u8; STRIDE];
        b[..SendCtrlRepr::LEN]
            .copy_from_slice(&SendCtrlRepr { opcode: op as u8, flags, len, imm: 0, wr_id: 7 }.to_bytes());
        for (i, &(addr, lkey, length)) in sges.iter().enumerate() {
            let at = SEND_DATA + i * DATA_SEG_LEN;
            b[at..at + DATA_SEG_LEN].copy_from_slice(&DataSegRepr { addr, lkey, length }.to_bytes());
        }
        b
    }

    /// A NIC with one MR of 4 GiB at 0x1_0000_0000 (registered, never touched) and one without local write.
    fn nic() -> (Nic, u32, u32) {
        let mut n = Nic::new(NicConfig { max_sge: 4, max_inline: 64, ..Default::default() });
        let big = n.mrs.register(PD, 0x1_0000_0000, 1 << 32, access::ALL).unwrap();
        let ro = n.mrs.register(PD, 0x3_0000_0000, 4096, access::REMOTE_READ).unwrap();
        (n, big, ro)
    }

    fn decode(n: &Nic, b: &[u8]) -> Option<WcStatus> {
        n.decode_send_wqe(0, b, true, PD, n.cfg.max_sge, n.cfg.max_inline).error.map(|e| e.0)
    }

    /// The send WQE decoder's bounds, each at its limit and one past it.
    #[test]
    fn send_wqe_bounds() {
        let (n, big, ro) = nic();
        let base = 0x1_0000_0000u64;
        let inline = send_flags::INLINE;
        let cases: Vec<(Vec<u8>, Option<WcStatus>, &str)> = vec![
            (slot(SendOp::Send, inline, 64, &[]), None, "inline at max_inline"),
            (slot(SendOp::Send, inline, 65, &[]), Some(WcStatus::LocLenErr), "inline past max_inline"),
            (slot(SendOp::RdmaRead, inline, 8, &[]), Some(WcStatus::LocLenErr), "inline READ"),
            (slot(SendOp::AtomicFetchAdd, inline, 8, &[]), Some(WcStatus::LocLenErr), "inline atomic"),
            (slot(SendOp::Send, 0, 4, &[(base, big, 1); 4]), None, "max_sge SGEs"),
            (slot(SendOp::Send, 0, 5, &[(base, big, 1); 5]), Some(WcStatus::LocLenErr), "past max_sge"),
            (slot(SendOp::Send, 0, 2, &[(base, big, 1 << 31), (base, big, 0)]), None, "2^31 bytes, a zero SGE"),
            (slot(SendOp::Send, 0, 2, &[(base, big, 1 << 31), (base, big, 1)]), Some(WcStatus::LocLenErr), "2^31 + 1"),
            (slot(SendOp::AtomicCmpSwp, 0, 1, &[(base, big, 8)]), None, "atomic of 8"),
            (slot(SendOp::AtomicCmpSwp, 0, 1, &[(base, big, 4)]), Some(WcStatus::LocLenErr), "atomic of 4"),
            (
                slot(SendOp::RdmaRead, 0, 1, &[(0x3_0000_0000, ro, 8)]),
                Some(WcStatus::LocProtErr),
                "READ into no local write",
            ),
            (slot(SendOp::RdmaWrite, 0, 1, &[(0x3_0000_0000, ro, 8)]), None, "WRITE from it"),
        ];
        for (b, want, what) in cases {
            assert_eq!(decode(&n, &b), want, "{what}");
        }
        // Inline data beyond the slot, with a large max_inline: the slot holds 80 bytes.
        let b = slot(SendOp::Send, inline, 81, &[]);
        assert_eq!(n.decode_send_wqe(0, &b, true, PD, 4, 1024).error.map(|e| e.0), Some(WcStatus::LocLenErr));
        let b = slot(SendOp::Send, inline, 80, &[]);
        assert_eq!(n.decode_send_wqe(0, &b, true, PD, 4, 1024).error, None);
        // SGEs beyond the slot, with a large max_sge: five fit, six do not.
        let b = slot(SendOp::Send, 0, 5, &[(base, big, 1); 5]);
        assert_eq!(n.decode_send_wqe(0, &b, true, PD, 16, 64).error, None);
        let b = slot(SendOp::Send, 0, 6, &[(base, big, 1); 5]);
        assert_eq!(n.decode_send_wqe(0, &b, true, PD, 16, 64).error.map(|e| e.0), Some(WcStatus::LocLenErr));
        // An unknown opcode, or a slot the device could not read.
        let mut b = slot(SendOp::Send, 0, 0, &[]);
        b[0] = 0xFF;
        assert_eq!(decode(&n, &b), Some(WcStatus::LocQpOpErr));
        let b = slot(SendOp::Send, 0, 0, &[]);
        assert_eq!(n.decode_send_wqe(0, &b, false, PD, 4, 64).error.map(|e| e.0), Some(WcStatus::LocQpOpErr));
        // What decodes is what was written.
        let b = slot(SendOp::Send, 0, 3, &[(base, big, 10), (base, big, 0), (base + 64, big, 20)]);
        let w = n.decode_send_wqe(0, &b, true, PD, 4, 64);
        assert_eq!((w.len, w.wr_id), (30, 7));
        assert_eq!(
            w.data,
            WqeData::Sges(vec![
                Sge { addr: base, lkey: big, length: 10 },
                Sge { addr: base + 64, lkey: big, length: 20 }
            ])
        );
    }

    /// The pacer: unlimited, a frame may follow at once; after a cut, frames are spaced by their wire length
    /// (frame plus preamble, SFD and gap) at the current rate, queueing behind one another; the bytes feed
    /// the reaction point's byte counter.
    #[test]
    fn pacing_spaces_frames_at_the_current_rate() {
        let p = crate::nic::dcqcn::Params::default();
        let mut qp = Qp::new(1, PD, crate::nic::dcqcn::Rp::new(100_000, &p));
        pace(&mut qp, 1_000, 1000, &p);
        assert_eq!(qp.req.next_send, 1_000, "at line rate nothing waits");
        assert!(qp.rp.on_cnp(2_000, &p));
        let gap = ((1000 + WIRE_OVERHEAD) as f64 * 8.0e6 / qp.rp.rc) as Time;
        assert!(gap > 100_000, "{gap} ps for 1 KiB below line rate");
        pace(&mut qp, 2_000, 1000, &p);
        assert_eq!(qp.req.next_send, 2_000 + gap);
        pace(&mut qp, 2_000, 1000, &p);
        assert_eq!(qp.req.next_send, 2_000 + 2 * gap, "the second frame queues behind the first");
        let before = qp.rp.bc_cnt;
        let bc = p.get(wire::contract::regs::Dcqcn::BYTE_COUNTER) as usize;
        pace(&mut qp, 3_000, bc, &p);
        assert_eq!(qp.rp.bc_cnt, before + 1, "the byte counter saw the bytes");
    }
}
