//! Requester: fetch send WQEs from the SQ ring into the QP's window, turn them into packets (segmentation
//! at the PMTU, padding, AckReq policy), and keep the go-back-N cursor. A WQE's descriptor is read from its
//! SQ slot again for every packet, first or retransmitted. Completion and retransmission decisions live in
//! `comp`.

use super::mr::MrTable;
use super::qp::{KeptDesc, Qp, SendWqe, Sge, WqeData, WqeDesc};
use super::timer::{ack_timeout_ticks, tick_of};
use super::{Nic, WIRE_OVERHEAD};
use crate::hostmem::Dma;
use crate::Time;
use wire::contract::profile::Profile;
use wire::contract::qpc::{MAX_PKTS_PER_ACK, MAX_UNACKED_PSNS};
use wire::contract::regs::Counter;
use wire::contract::verbs::{access, WcStatus, MAX_MSG_LEN};
use wire::contract::wqe::*;
use wire::ext::{AtomicEthRepr, RethRepr};
use wire::{Opcode, Position, Psn};

/// The send flags the NIC acts on (the rest of the byte is ignored).
const SEND_FLAGS: u8 = send_flags::FENCE | send_flags::SIGNALED | send_flags::SOLICITED | send_flags::INLINE;

/// Whether the requester of `qp` has a packet it may send, pacer aside.
pub fn sendable(qp: &Qp) -> bool {
    let r = &qp.req;
    if r.rnr_wait.is_some() {
        return false;
    }
    let Some(w) = r.wqes.get(r.cursor) else { return false };
    if !qp.can_send(w) || w.acked || r.cursor_psn.diff(r.comp_psn) >= MAX_UNACKED_PSNS as i32 {
        return false;
    }
    if w.first_psn.is_none() {
        // A new WQE: a fence waits for every READ and atomic before it, and at most max_rd_atomic run.
        if w.flags & send_flags::FENCE != 0 && r.rd_atomic > 0 {
            return false;
        }
        if w.op.is_read_or_atomic() && r.rd_atomic >= qp.attrs.max_rd_atomic.max(1) {
            return false;
        }
    }
    true
}

/// Number of packets (and PSNs) a WQE uses.
pub fn packets_for(op: SendOp, len: u32, pmtu: u32) -> u32 {
    if op.is_atomic() {
        1
    } else {
        len.div_ceil(pmtu).max(1)
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

/// Builds the next packet of `qpn`'s requester, reading its WQE from the SQ. Callers check readiness first.
/// A WQE whose slot or data cannot be read fails (no packet).
pub(super) fn next_frame(nic: &mut Nic, qpn: u32, now: Time, mem: &mut dyn Dma) -> Option<Vec<u8>> {
    let tick = tick_of(now);
    let (params, line) = (nic.dcqcn, nic.line);
    let qp = nic.qp_mut(qpn)?;
    let pmtu = qp.attrs.path_mtu();
    let cursor = qp.req.cursor;
    let w = qp.req.wqes.get(cursor)?;
    if w.first_psn.is_none() {
        let n = packets_for(w.op, w.len, pmtu);
        qp.req.start(cursor, n);
    }
    let w = &qp.req.wqes[cursor];
    let (index, op, flags, len, npkts) = (w.index, w.op, w.flags, w.len, w.npkts);
    let first = w.first_psn?;
    let kept = nic.kept.take().filter(|k| k.qpn == qpn && k.index == index);
    let qp = nic.qp_mut(qpn)?;
    let Some(desc) = kept.map(|k| k.desc).or_else(|| read_desc(qp, index, mem)) else {
        qp.req.finish(cursor, Some((WcStatus::LocQpOpErr, 0)));
        return None;
    };
    nic.kept = KeptDesc::of(qpn, index, desc.clone());
    let qp = nic.qp_mut(qpn)?;
    let psn = qp.req.cursor_psn;
    let seg = segment(op, flags, len, (first, npkts), psn, pmtu, (desc.remote_va, desc.rkey), qp.req.pkts_since_ackreq);
    let (opcode, ack_req) = (seg.opcode, seg.ack_req);
    let info = opcode.info()?;
    let mut h = nic.headers(qpn, opcode, psn, ack_req)?;
    h.bth.solicited = seg.solicited;
    h.ext.reth = seg.reth;
    h.ext.atomic_eth = op.is_atomic().then_some(AtomicEthRepr {
        va: desc.remote_va,
        rkey: desc.rkey,
        swap_add: desc.swap_add,
        compare: desc.compare,
    });
    if info.has(wire::opcode::hdr::IMMDT) {
        h.ext.immdt = Some(desc.imm);
    }
    if info.has(wire::opcode::hdr::IETH) {
        h.ext.ieth = Some(desc.imm);
    }
    let Some(frame) = h.emit_with(seg.payload_len as usize, |dst| gather(&desc.data, seg.off, dst, mem)) else {
        nic.qp_mut(qpn)?.req.finish(cursor, Some((WcStatus::LocProtErr, 0)));
        return None;
    };
    if seg.last_of_wqe {
        // Nothing is kept past a WQE's last packet: the next WQE's fetch may give its descriptor (`primed`).
        nic.kept = None;
    }
    let qp = nic.qp_mut(qpn)?;
    qp.req.cursor_psn = seg.next_psn;
    if seg.last_of_wqe {
        qp.req.cursor = cursor + 1;
    }
    qp.req.pkts_since_ackreq = seg.pkts_since_ackreq;
    let retransmit = psn.before(qp.req.high_psn);
    if !retransmit {
        qp.req.high_psn = qp.req.cursor_psn;
    }
    if qp.req.timer.is_none() {
        qp.req.timer = ack_timeout_ticks(qp.attrs.timeout).map(|t| tick + t);
    }
    qp.rp.on_sent(tick, frame.len() + WIRE_OVERHEAD, line, &params);
    if retransmit {
        nic.count(Counter::retransmitted_packets);
    }
    Some(frame)
}

/// Packet `psn` of a WQE as the requester segments it (the model's `next_frame` before any memory is read):
/// its opcode, the payload's offset in the message and its length, the RETH, the AckReq bit (a message's
/// last packet, or every `MAX_PKTS_PER_ACK`th) and the solicited bit, where the cursor goes once it is out,
/// whether it finishes the WQE, and the packets since the last AckReq after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub opcode: Opcode,
    pub off: u32,
    pub payload_len: u32,
    pub reth: Option<RethRepr>,
    pub ack_req: bool,
    pub solicited: bool,
    pub next_psn: Psn,
    pub last_of_wqe: bool,
    pub pkts_since_ackreq: u32,
}

/// Segments packet `psn` of a WQE (`op`, `flags`, `len` bytes, first sent at `first` in `npkts` packets:
/// `packets_for` at the path MTU it started at) at path MTU `pmtu`, with the remote address `remote_va`
/// and key `rkey`, `since_ackreq` packets after the last AckReq.
#[allow(clippy::too_many_arguments)]
pub fn segment(
    op: SendOp,
    flags: u8,
    len: u32,
    (first, npkts): (Psn, u32),
    psn: Psn,
    pmtu: u32,
    (remote_va, rkey): (u64, u32),
    since_ackreq: u32,
) -> Segment {
    let k = psn.diff(first).max(0) as u32;
    let pos = position(k, npkts);
    let off = k.wrapping_mul(pmtu);
    let (mut reth, mut payload_len) = (None, 0);
    let (next_psn, last_of_wqe) = match op {
        SendOp::RdmaRead => {
            reth = Some(RethRepr { va: remote_va.wrapping_add(u64::from(off)), rkey, dma_len: len - off.min(len) });
            (first.add(npkts), true)
        }
        SendOp::AtomicCmpSwp | SendOp::AtomicFetchAdd => (psn.add(1), true),
        _ => {
            payload_len = pmtu.min(len.saturating_sub(off));
            if matches!(op, SendOp::RdmaWrite | SendOp::RdmaWriteWithImm)
                && matches!(pos, Position::First | Position::Only)
            {
                reth = Some(RethRepr { va: remote_va, rkey, dma_len: len });
            }
            (psn.add(1), k + 1 >= npkts)
        }
    };
    let opcode = op.opcode(if op.is_read_or_atomic() { Position::Only } else { pos });
    let ends = opcode.info().is_some_and(|i| i.ends_message());
    let ack_req = ends || since_ackreq + 1 >= MAX_PKTS_PER_ACK;
    Segment {
        opcode,
        off,
        payload_len,
        reth,
        ack_req,
        solicited: ends && flags & send_flags::SOLICITED != 0,
        next_psn,
        last_of_wqe,
        pkts_since_ackreq: if ack_req { 0 } else { since_ackreq + 1 },
    }
}

/// Reads the descriptor of the WQE in SQ slot `index` again.
pub(super) fn read_desc(qp: &Qp, index: u16, mem: &dyn Dma) -> Option<WqeDesc> {
    let mut buf = vec![0u8; 1usize << qp.sq.log_stride];
    mem.dma_read(qp.sq.addr(index), &mut buf).ok()?;
    desc_of_slot(&buf)
}

/// The descriptor a send WQE slot (`buf`, read whole) gives a packet, none if it does not parse; the
/// profile's limits were checked at the fetch and are not checked again.
pub fn desc_of_slot(buf: &[u8]) -> Option<WqeDesc> {
    parse_send_slot(buf, u32::MAX, u32::MAX).ok().map(|(_, _, d)| d)
}

/// Parses a send WQE slot: its opcode, flags and descriptor, or the status a malformed one completes with.
fn parse_send_slot(buf: &[u8], max_sge: u32, max_inline: u32) -> Result<(SendOp, u8, WqeDesc), WcStatus> {
    let ctrl = SendCtrlRepr::from_bytes(buf).map_err(|_| WcStatus::LocQpOpErr)?;
    let op = SendOp::from_u8(ctrl.opcode).ok_or(WcStatus::LocQpOpErr)?;
    let remote = RemoteSegRepr::from_bytes(&buf[REMOTE..]).unwrap_or_default();
    let atom = AtomicSegRepr::from_bytes(&buf[ATOMIC..]).unwrap_or_default();
    let mut d = WqeDesc {
        wr_id: ctrl.wr_id,
        imm: ctrl.imm,
        remote_va: remote.va,
        rkey: remote.rkey,
        swap_add: atom.swap_add,
        compare: atom.compare,
        data: WqeData::Sges(Vec::new()),
        len: 0,
    };
    let room = buf.len() - SEND_DATA;
    let n = usize::from(ctrl.len);
    if ctrl.flags & send_flags::INLINE != 0 {
        if n > room || n as u32 > max_inline || op.is_read_or_atomic() {
            return Err(WcStatus::LocLenErr);
        }
        d.data = WqeData::Inline(buf[SEND_DATA..SEND_DATA + n].to_vec());
        d.len = n as u32;
        return Ok((op, ctrl.flags, d));
    }
    if n * DATA_SEG_LEN > room || n as u32 > max_sge {
        return Err(WcStatus::LocLenErr);
    }
    let mut sges = Vec::with_capacity(n);
    let mut total: u64 = 0;
    for i in 0..n {
        let s = DataSegRepr::from_bytes(&buf[SEND_DATA + i * DATA_SEG_LEN..]).unwrap_or_default();
        if s.length != 0 {
            total += u64::from(s.length);
            sges.push(Sge { addr: s.addr, lkey: s.lkey, length: s.length });
        }
    }
    d.len = total.min(u64::from(u32::MAX)) as u32;
    d.data = WqeData::Sges(sges);
    Ok((op, ctrl.flags, d))
}

impl Nic {
    /// Whether the fetch unit may bring `qp`'s next send WQE into its window.
    pub(super) fn can_fetch(&self, qp: &Qp) -> bool {
        can_fetch(qp, &self.cfg.profile)
    }

    /// Reads the next posted send WQE of `qpn` into the window, validating it; a bad WQE is kept with its
    /// error so it completes in SQ order. With `primed` the requester takes the read as its descriptor read
    /// (the hardware's `SendDesc` given the fetch's beats): legal only while it keeps no descriptor; the
    /// WQE's is kept if the slot parses and its data is not inline, as `next_frame` would keep it.
    pub(super) fn fetch_send_wqe(&mut self, qpn: u32, primed: bool, mem: &mut dyn Dma) -> Result<(), &'static str> {
        if primed && self.kept.is_some() {
            return Err("the fetch's read taken as a descriptor read while one is kept");
        }
        let Some(qp) = self.qp(qpn) else { return Ok(()) };
        let index = qp.sq.ci;
        let mut buf = vec![0u8; 1usize << qp.sq.log_stride];
        let read_ok = mem.dma_read(qp.sq.addr(index), &mut buf).is_ok();
        let w = decode_send_wqe(&self.mrs, &self.cfg.profile, index, &buf, read_ok, qp.pdn);
        if primed {
            let desc = read_ok.then(|| desc_of_slot(&buf)).flatten();
            self.kept = desc.and_then(|desc| KeptDesc::of(qpn, index, desc));
        }
        let Some(qp) = self.qp_mut(qpn) else { return Ok(()) };
        qp.sq.ci = qp.sq.ci.wrapping_add(1);
        qp.req.push(w);
        self.count(Counter::sq_wqes);
        Ok(())
    }
}

/// Whether QP `qp` may fetch a send WQE into its window under profile `p`: not in RESET or ERR, not
/// flushing, a WQE posted past its consumer counter (the producer counter at most the ring's size ahead),
/// room in the window (the RTL's `SqFetch`).
pub fn can_fetch(qp: &Qp, p: &Profile) -> bool {
    use wire::contract::verbs::QpState;
    !matches!(qp.state, QpState::Reset | QpState::Err)
        && !qp.flushing
        && qp.sq.pending() > 0
        && qp.sq.sane()
        && qp.req.wqes.len() < p.wqe_window as usize
}

/// The window entry of the send WQE in `buf` (SQ slot `index`, read whole; `read_ok` false when the read
/// failed) of a QP of PD `pdn`, with the status it fails with if the slot was unreadable or the WQE breaks a
/// limit of profile `p` or names memory (in `mrs`) it may not use.
pub fn decode_send_wqe(mrs: &MrTable, p: &Profile, index: u16, buf: &[u8], read_ok: bool, pdn: u32) -> SendWqe {
    let ctrl = SendCtrlRepr::from_bytes(buf).unwrap_or_default();
    let mut w = SendWqe {
        index,
        op: SendOp::from_u8(ctrl.opcode).unwrap_or(SendOp::Send),
        flags: ctrl.flags & SEND_FLAGS,
        len: 0,
        first_psn: None,
        npkts: 0,
        acked: false,
        error: None,
        wr_id: if read_ok { ctrl.wr_id } else { 0 },
    };
    let checked = if read_ok {
        parse_send_slot(buf, p.max_sge, p.max_inline)
            .and_then(|(op, _, d)| check_send_data(mrs, op, &d, pdn).map(|()| d))
    } else {
        Err(WcStatus::LocQpOpErr)
    };
    match checked {
        Ok(d) => w.len = d.len,
        Err(s) => {
            w.acked = true;
            w.error = Some((s, 0));
        }
    }
    w
}

/// The local keys and the length of a send WQE's data: each SGE within its MR, of the QP's PD, writable
/// where a READ or atomic lands; at most 2^31 bytes, exactly 8 for an atomic.
fn check_send_data(mrs: &MrTable, op: SendOp, d: &WqeDesc, pdn: u32) -> Result<(), WcStatus> {
    if let WqeData::Sges(sges) = &d.data {
        let needed = if op.is_read_or_atomic() { access::LOCAL_WRITE } else { 0 };
        for s in sges {
            if mrs.check(s.lkey, pdn, s.addr, u64::from(s.length), needed).is_err() {
                return Err(WcStatus::LocProtErr);
            }
        }
        let total: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
        if total > u64::from(MAX_MSG_LEN) || (op.is_atomic() && total != u64::from(ATOMIC_LEN)) {
            return Err(WcStatus::LocLenErr);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::dcqcn::{rate_q8, Params, Rp};
    use crate::nic::timer::TICK_PS;
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

    /// A NIC allowing `max_sge` SGEs and `max_inline` inline bytes, with one MR of 4 GiB at 0x1_0000_0000
    /// (registered, never touched) and one without local write.
    fn nic_with(max_sge: u32, max_inline: u32) -> (Nic, u32, u32) {
        let mut cfg = NicConfig::default();
        (cfg.profile.max_sge, cfg.profile.max_inline) = (max_sge, max_inline);
        let mut n = Nic::new(cfg);
        let big = n.mrs.register(PD, 0x1_0000_0000, 1 << 32, access::ALL).unwrap();
        let ro = n.mrs.register(PD, 0x3_0000_0000, 4096, access::REMOTE_READ).unwrap();
        (n, big, ro)
    }

    fn decode(n: &Nic, b: &[u8]) -> Option<WcStatus> {
        decode_send_wqe(&n.mrs, &n.cfg.profile, 0, b, true, PD).error.map(|e| e.0)
    }

    /// The send WQE decoder's bounds, each at its limit and one past it.
    #[test]
    fn send_wqe_bounds() {
        let (n, big, ro) = nic_with(4, 64);
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
        let (wide, big, _) = nic_with(16, 1024);
        assert_eq!(decode(&wide, &slot(SendOp::Send, inline, 81, &[])), Some(WcStatus::LocLenErr));
        assert_eq!(decode(&wide, &slot(SendOp::Send, inline, 80, &[])), None);
        // SGEs beyond the slot, with a large max_sge: five fit, six do not.
        assert_eq!(decode(&wide, &slot(SendOp::Send, 0, 5, &[(base, big, 1); 5])), None);
        assert_eq!(decode(&wide, &slot(SendOp::Send, 0, 6, &[(base, big, 1); 5])), Some(WcStatus::LocLenErr));
        // An unknown opcode, or a slot the device could not read.
        let mut b = slot(SendOp::Send, 0, 0, &[]);
        b[0] = 0xFF;
        assert_eq!(decode(&n, &b), Some(WcStatus::LocQpOpErr));
        let b = slot(SendOp::Send, 0, 0, &[]);
        assert_eq!(
            decode_send_wqe(&n.mrs, &n.cfg.profile, 0, &b, false, PD).error.map(|e| e.0),
            Some(WcStatus::LocQpOpErr)
        );
        // What decodes is what was written; flags the NIC does not know are dropped.
        let b =
            slot(SendOp::Send, 0xF0 | send_flags::FENCE, 3, &[(base, big, 10), (base, big, 0), (base + 64, big, 20)]);
        let w = decode_send_wqe(&n.mrs, &n.cfg.profile, 9, &b, true, PD);
        assert_eq!((w.index, w.len, w.flags, w.error), (9, 30, send_flags::FENCE, None));
        let (op, _, d) = parse_send_slot(&b, 4, 64).unwrap();
        assert_eq!((op, d.wr_id, d.len), (SendOp::Send, 7, 30));
        assert_eq!(
            d.data,
            WqeData::Sges(vec![
                Sge { addr: base, lkey: big, length: 10 },
                Sge { addr: base + 64, lkey: big, length: 20 }
            ])
        );
    }

    /// The pacer: unlimited, frames may follow at once; after a cut, a tick's worth of credit at the current
    /// rate lets frames go until it runs out, then the next one waits for the ticks that pay for it; the bytes
    /// feed the reaction point's byte counter.
    #[test]
    fn pacing_spends_credit_at_the_current_rate() {
        let p = Params::default();
        let line = rate_q8(100_000);
        let mut rp = Rp::new(line, &p);
        rp.on_sent(0, 1000, line, &p);
        assert!(rp.may_send(0), "at line rate nothing waits");
        assert!(rp.on_cnp(10, &p));
        assert_eq!(rp.rate_mbps(), 50_000.0, "alpha starts at 1: the cut halves");
        // 50 Gb/s is 51.2 Mbit, 6400 bytes, per 1.024 us tick.
        assert!(rp.may_send(10), "a cut starts with no credit, which is not negative");
        rp.on_sent(10, 4000, line, &p);
        assert!(!rp.may_send(10), "4000 bytes spent with nothing saved");
        assert_eq!(rp.send_tick(10), 11, "one tick pays 6400 bytes");
        assert!(rp.may_send(11));
        rp.on_sent(11, 2000, line, &p);
        rp.on_sent(11, 2000, line, &p);
        assert!(!rp.may_send(11), "6400 - 4000 + ... spent past zero");
        // Long idle saves at most one tick's worth.
        assert!(rp.may_send(1000));
        rp.on_sent(1000, 6400, line, &p);
        assert!(rp.may_send(1000), "exactly the saved tick");
        rp.on_sent(1000, 1, line, &p);
        assert!(!rp.may_send(1000));
        let bc = p.get(wire::contract::regs::Dcqcn::BYTE_COUNTER) as usize;
        let before = rp.bc_cnt;
        rp.on_sent(1001, bc, line, &p);
        assert_eq!(rp.bc_cnt, before + 1, "the byte counter saw the bytes");
        assert_eq!(TICK_PS, 1_024_000);
    }
}
