//! Queue pair state: attributes, the state machine (RESET/INIT/RTR/RTS/SQD/SQE/ERR), and the per-role state
//! the requester (`req`), completer (`comp`) and responder (`resp`) keep. Every piece is bounded by the
//! hardware profile (the WQE window, the responder's resources and response queue) and packs into the QP
//! context layout of `wire::contract::qpc` (`context`).

use super::dcqcn::Rp;
use super::timer::Tick;
use std::collections::VecDeque;
use wire::contract::cmd::QpAttrsRepr;
use wire::contract::verbs::{
    attr, check_modify, mtu_bytes, QpState, QpType, TransitionError, WcStatus, PKEY_TABLE_LEN,
};
use wire::contract::wqe::SendOp;
use wire::eth::VlanTag;
use wire::ext::AethRepr;
use wire::Psn;

/// Attributes set through MODIFY_QP.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs {
    pub access: u32,
    pub pmtu: u32,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub sgid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub dest_qpn: u32,
    pub flow_label: u32,
    pub dmac: [u8; 6],
    pub vlan: Option<VlanTag>,
    pub dgid: [u8; 16],
    /// The port, once set (there is one: port 1).
    pub port_num: u8,
    /// The UDP source port of every packet, computed when the address or the destination QP is set.
    pub udp_sport: u16,
}

impl Attrs {
    /// The path MTU in bytes packets are cut to: 256 (the smallest) before MODIFY_QP has set one.
    pub fn path_mtu(&self) -> u32 {
        self.pmtu.max(256)
    }
}

/// A host ring (SQ or RQ) as the NIC tracks it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ring {
    pub iova: u64,
    pub log_size: u8,
    pub log_stride: u8,
    /// Producer counter from the doorbell.
    pub pi: u16,
    /// Next entry the NIC will fetch.
    pub ci: u16,
}

impl Ring {
    pub fn addr(&self, counter: u16) -> u64 {
        let slot = u64::from(counter) & ((1u64 << self.log_size) - 1);
        self.iova.wrapping_add(slot << self.log_stride)
    }
    pub fn pending(&self) -> u16 {
        self.pi.wrapping_sub(self.ci)
    }
    /// Whether the producer counter describes a ring the driver could have filled (at most its size ahead).
    pub fn sane(&self) -> bool {
        u32::from(self.pending()) <= 1 << self.log_size
    }
}

/// A scatter/gather element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sge {
    pub addr: u64,
    pub lkey: u32,
    pub length: u32,
}

/// Walks the `len` bytes at message offset `off` of a scatter list, calling `f(addr, start, end)` for each
/// piece (`start..end` is its range within those `len` bytes). False if the list is too short or `f` fails.
pub fn walk_sges(sges: &[Sge], mut off: u32, len: usize, mut f: impl FnMut(u64, usize, usize) -> bool) -> bool {
    let mut done = 0usize;
    for s in sges {
        if done == len {
            break;
        }
        if off >= s.length {
            off -= s.length;
            continue;
        }
        let n = ((s.length - off) as usize).min(len - done);
        if !f(s.addr.wrapping_add(u64::from(off)), done, done + n) {
            return false;
        }
        done += n;
        off = 0;
    }
    done == len
}

/// The pieces a payload of `len` bytes at message offset `off` takes in a scatter list, `(addr, start, end)`
/// as `walk_sges` gives them; `None` when the list from `off` is shorter than the payload, which then writes
/// nothing (a payload of no bytes always fits). The RTL's `DmaScatter` decides and cuts the same.
pub fn scatter_pieces(sges: &[Sge], off: u32, len: usize) -> Option<Vec<(u64, usize, usize)>> {
    let total: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
    if len > 0 && u64::from(off) + len as u64 > total {
        return None;
    }
    let mut pieces = Vec::new();
    let whole = walk_sges(sges, off, len, |addr, a, b| {
        pieces.push((addr, a, b));
        true
    });
    whole.then_some(pieces)
}

/// Where a send WQE's data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WqeData {
    Sges(Vec<Sge>),
    Inline(Vec<u8>),
}

impl Default for WqeData {
    fn default() -> Self {
        WqeData::Sges(Vec::new())
    }
}

/// What a send WQE's slot in the SQ says beyond the transport state: read from the SQ when a packet or a
/// completion needs it (the slot is the driver's until the WQE completes); the requester keeps the last one
/// it read for the next packets of the same WQE (`KeptDesc`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WqeDesc {
    pub wr_id: u64,
    pub imm: u32,
    pub remote_va: u64,
    pub rkey: u32,
    pub swap_add: u64,
    pub compare: u64,
    pub data: WqeData,
    /// Message length: the SGEs' or the inline bytes'.
    pub len: u32,
}

/// The requester's one-entry descriptor cache: the descriptor read for QP `qpn`'s WQE at SQ counter `index`,
/// used again for that WQE's next packets instead of reading its slot again. Any other WQE's read replaces
/// it; a raw frame's read, a read that fails or does not parse, an inline WQE's read (the hardware gathers
/// inline bytes from the slot with each packet), the WQE's last packet and a command that creates or
/// modifies a QP drop it. With none kept, a WQE's fetch may give it (`Decision::FetchSq` with `primed`), so
/// that WQE's first packet reads no slot. A slot rewritten while its WQE is posted (which verbs leave undefined) is seen only by a packet
/// that reads it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptDesc {
    pub qpn: u32,
    pub index: u16,
    pub desc: WqeDesc,
}

impl KeptDesc {
    /// What is kept of a descriptor read for QP `qpn`'s WQE at `index`: nothing if its data is inline.
    pub fn of(qpn: u32, index: u16, desc: WqeDesc) -> Option<Self> {
        (!matches!(desc.data, WqeData::Inline(_))).then_some(KeptDesc { qpn, index, desc })
    }
}

/// A send WQE in the requester's window: fetched, not yet completed. Its transport state only; the rest is
/// in its SQ slot (`WqeDesc`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendWqe {
    /// Its SQ counter (the window's entries are consecutive).
    pub index: u16,
    pub op: SendOp,
    pub flags: u8,
    /// Message length in bytes.
    pub len: u32,
    /// First PSN, assigned when the WQE is first sent.
    pub first_psn: Option<Psn>,
    pub npkts: u32,
    /// Fully acknowledged (or answered, or failed); ready to retire in SQ order.
    pub acked: bool,
    /// Completion status when the WQE failed, with the vendor syndrome.
    pub error: Option<(WcStatus, u8)>,
    /// Its `wr_id`, from its control segment at the fetch (0 when the slot could not be read), for its CQE.
    pub wr_id: u64,
}

#[cfg(test)]
impl SendWqe {
    /// A window entry for tests: a zero-length SEND at SQ counter `index`, not sent yet.
    pub(crate) fn unsent(index: u16) -> SendWqe {
        SendWqe {
            index,
            op: SendOp::Send,
            flags: 0,
            len: 0,
            first_psn: None,
            npkts: 0,
            acked: false,
            error: None,
            wr_id: 0,
        }
    }
}

impl SendWqe {
    pub fn last_psn(&self) -> Option<Psn> {
        self.first_psn.map(|f| f.add(self.npkts.saturating_sub(1)))
    }
    /// Whether `psn` falls in this WQE's PSN range.
    pub fn contains(&self, psn: Psn) -> bool {
        match self.first_psn {
            Some(f) => {
                let d = psn.diff(f);
                d >= 0 && (d as u32) < self.npkts
            }
            None => false,
        }
    }
    /// A started READ or atomic not yet answered: one of the `max_rd_atomic` outstanding.
    fn holds_rd_atomic(&self) -> bool {
        self.op.is_read_or_atomic() && self.first_psn.is_some() && !self.acked
    }
}

/// Requester + completer state (rxe's `qp->req` and `qp->comp`).
///
/// The window `wqes` holds the fetched WQEs not yet retired, at most the profile's `wqe_window`. PSNs are
/// assigned to WQEs in SQ order when a WQE is first sent, so the started WQEs are a prefix of the window and
/// their PSN ranges are contiguous. Three cursors walk that PSN space, never past one another:
///
/// ```text
///   comp_psn  <=  cursor_psn  <=  psn            (go-back-N moves cursor_psn back to comp_psn or later)
///   comp_psn  <=  high_psn    <=  psn            (high_psn only grows)
/// ```
///
/// `Qp::check_req_invariants` states these and the rest in code; debug builds check them after every event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReqState {
    /// Fetched WQEs not yet retired, oldest first. A WQE is retired (its CQE written) once it and every
    /// older one are `acked`.
    pub wqes: VecDeque<SendWqe>,
    /// Next PSN to assign to a WQE that has not been sent yet (rxe: the end of the last started WQE).
    pub psn: Psn,
    /// Index into `wqes` of the WQE the next packet belongs to (`wqes.len()` when nothing is left to send).
    pub cursor: usize,
    /// PSN of the next packet to send: inside `wqes[cursor]`'s range, or `psn` at its first packet.
    pub cursor_psn: Psn,
    /// Oldest PSN not yet acknowledged or answered (rxe: `comp.psn`). Every PSN before it is done: SEND
    /// and WRITE packets acknowledged, READ responses placed, atomics answered. It moves on ACKs, on each
    /// in-order READ response and on atomic ACKs, so a rewind to it never re-requests finished work.
    pub comp_psn: Psn,
    /// Retries left before RETRY_EXC_ERR; reset to `retry_cnt` on progress.
    pub retry_left: u8,
    /// RNR retries left before RNR_RETRY_EXC_ERR; reset to `rnr_retry` on progress.
    pub rnr_left: u8,
    /// Local ACK timer deadline. Armed whenever a started WQE is unacknowledged and no RNR wait runs.
    pub timer: Option<Tick>,
    /// RNR wait: (deadline, PSN to resume at). The ACK timer is stopped meanwhile.
    pub rnr_wait: Option<(Tick, Psn)>,
    /// Packets sent since the last one with AckReq set.
    pub pkts_since_ackreq: u32,
    /// A response showed a gap at this PSN and we already went back to it: later responses showing the same
    /// gap do not rewind again (one retry per gap, as rxe). Cleared on progress.
    pub gap_retry: Option<Psn>,
    /// One past the highest PSN ever sent. A response for a PSN at or after it answers nothing we sent and is
    /// ignored; a packet sent below it is a retransmission.
    pub high_psn: Psn,
    /// Started READ and atomic WQEs not yet answered (at most `max_rd_atomic`).
    pub rd_atomic: u8,
    /// Index into `wqes` of the oldest WQE not yet `acked` (`wqes.len()` when every one is).
    pub oldest: usize,
}

impl ReqState {
    /// Marks window entry `i` finished (acknowledged, answered or failed with `error`), keeping the
    /// outstanding-READ count and the oldest-unfinished index.
    pub fn finish(&mut self, i: usize, error: Option<(WcStatus, u8)>) {
        let Some(w) = self.wqes.get_mut(i) else { return };
        if w.acked {
            return;
        }
        if w.holds_rd_atomic() {
            self.rd_atomic -= 1;
        }
        w.acked = true;
        if error.is_some() {
            w.error = error;
        }
        self.settle_oldest();
    }

    /// Moves `oldest` past finished entries.
    pub fn settle_oldest(&mut self) {
        while self.wqes.get(self.oldest).is_some_and(|w| w.acked) {
            self.oldest += 1;
        }
    }

    /// Puts a fetched WQE at the end of the window.
    pub fn push(&mut self, w: SendWqe) {
        self.wqes.push_back(w);
        self.settle_oldest();
    }

    /// Takes the oldest entry off the window (it must be finished).
    pub fn pop(&mut self) -> Option<SendWqe> {
        let w = self.wqes.pop_front()?;
        self.cursor = self.cursor.saturating_sub(1);
        self.oldest = self.oldest.saturating_sub(1);
        Some(w)
    }

    /// Assigns window entry `i` its PSNs from `psn` on (its first packet goes out).
    pub fn start(&mut self, i: usize, npkts: u32) {
        let psn = self.psn;
        let Some(w) = self.wqes.get_mut(i) else { return };
        w.first_psn = Some(psn);
        w.npkts = npkts;
        self.psn = psn.add(npkts);
        if w.holds_rd_atomic() {
            self.rd_atomic += 1;
        }
    }

    /// The oldest unfinished entry, if any.
    pub fn oldest_unfinished(&self) -> Option<&SendWqe> {
        self.wqes.get(self.oldest)
    }

    /// Whether a started WQE still waits for its acknowledgement or answer (started WQEs are a prefix, so
    /// only the oldest unfinished one can be).
    pub fn outstanding(&self) -> bool {
        self.oldest_unfinished().is_some_and(|w| w.first_psn.is_some())
    }
}

/// One responder resource: a READ or atomic request kept for duplicate handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    pub first_psn: Psn,
    /// The MSN this request completed (READ responses and atomic ACKs carry it, replays too).
    pub msn: u32,
    pub kind: ResourceKind,
}

/// What a resource keeps of its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    /// A READ: the range and key a duplicate must stay within.
    Read { last_psn: Psn, va: u64, len: u32, rkey: u32 },
    /// An atomic: the original value a duplicate is answered with.
    Atomic { orig: u64 },
}

/// A response the responder owes, sent in PSN order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RespItem {
    /// An ACK or a NAK the QP survives (PSN sequence error, RNR).
    Ack {
        psn: Psn,
        aeth: AethRepr,
    },
    AtomicAck {
        psn: Psn,
        aeth: AethRepr,
        orig: u64,
    },
    /// READ responses still to send: the next PSN, VA and remaining bytes, and the READ's own MSN. As in
    /// rxe, a response is FIRST (or ONLY) at the READ's first PSN (`at_base`: the next one is there) and LAST
    /// (or ONLY) when `resid` fits one packet, so a duplicate asking for part of the READ ends where it asks.
    Read {
        psn: Psn,
        va: u64,
        resid: u32,
        at_base: bool,
        msn: u32,
    },
    /// A NAK that ends the connection (class B/C/D errors): sent after every response owed for earlier
    /// requests, then the QP enters ERR.
    FatalNak {
        psn: Psn,
        aeth: AethRepr,
    },
}

/// The receive WQE a multi-packet SEND is filling: always the one before the RQ's consumer counter. Its
/// scatter list is read from the RQ again for each packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvCtx {
    pub index: u16,
    pub offset: u32,
}

/// Responder state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RespState {
    /// Expected PSN.
    pub epsn: Psn,
    pub msn: u32,
    pub nak_sent: bool,
    /// Kind of the multi-packet message in progress (after FIRST/MIDDLE).
    pub in_msg: Option<wire::OpKind>,
    /// WRITE in progress: next VA, remaining bytes.
    pub write_va: u64,
    pub write_resid: u32,
    /// Total length of the WRITE in progress (RETH DMA length).
    pub write_len: u32,
    pub recv: Option<RecvCtx>,
    /// READ and atomic requests kept for duplicates, oldest first (at most `max_dest_rd_atomic`).
    pub resources: VecDeque<Resource>,
    /// Resources dropped off the front so far, wrapping (`qpc::RING_HEAD_BITS`): the ring slot of the oldest.
    pub res_head: u8,
    /// Responses owed, oldest first (at most the profile's `resp_queue`).
    pub out: VecDeque<RespItem>,
    /// Responses taken off the front so far, wrapping: the ring slot of the oldest.
    pub item_head: u8,
    /// The coalesced ACK: the newest plain ACK owed, sent after everything in `out`. A later ACK replaces
    /// it; anything else queued behind it moves it into `out` first.
    pub ack: Option<(Psn, AethRepr)>,
    /// A fatal NAK is queued: no further request is executed; the QP enters ERR once it is sent.
    pub fatal: bool,
}

impl RespState {
    /// Whether `n` more items fit `out` (the coalesced ACK moving in first, if there is one), at depth `depth`.
    pub fn room(&self, n: usize, depth: usize) -> bool {
        self.out.len() + usize::from(self.ack.is_some()) + n <= depth
    }

    /// Queues `item` behind everything owed (callers check `room` first).
    pub fn queue(&mut self, item: RespItem) {
        if let Some((psn, aeth)) = self.ack.take() {
            self.out.push_back(RespItem::Ack { psn, aeth });
        }
        self.out.push_back(item);
    }

    /// Takes the oldest response owed off the queue.
    pub fn pop_item(&mut self) -> Option<RespItem> {
        let i = self.out.pop_front();
        if i.is_some() {
            self.item_head = self.item_head.wrapping_add(1);
        }
        i
    }

    /// Drops the oldest resource.
    pub fn pop_resource(&mut self) {
        if self.resources.pop_front().is_some() {
            self.res_head = self.res_head.wrapping_add(1);
        }
    }

    /// Whether anything is owed.
    pub fn owes(&self) -> bool {
        !self.out.is_empty() || self.ack.is_some()
    }
}

/// A queue pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qp {
    pub qpn: u32,
    pub qp_type: QpType,
    pub pdn: u32,
    pub send_cqn: u32,
    pub recv_cqn: u32,
    pub state: QpState,
    pub attrs: Attrs,
    pub sq: Ring,
    pub rq: Ring,
    pub sig_all: bool,
    pub req: ReqState,
    pub resp: RespState,
    pub rp: Rp,
    /// Tick of the last CNP this QP sent (notification point).
    pub last_cnp: Option<Tick>,
    /// The QP is in ERR and its outstanding WQEs are being completed with WR_FLUSH_ERR (`flush`).
    pub flushing: bool,
}

impl Qp {
    /// A new RC QP in RESET: no rings, CQ 0 for both queues, transport state cleared, rate limiter `rp`.
    pub fn new(qpn: u32, pdn: u32, rp: Rp) -> Qp {
        Qp {
            qpn,
            qp_type: QpType::Rc,
            pdn,
            send_cqn: 0,
            recv_cqn: 0,
            state: QpState::Reset,
            attrs: Attrs::default(),
            sq: Ring::default(),
            rq: Ring::default(),
            sig_all: false,
            req: ReqState::default(),
            resp: RespState::default(),
            rp,
            last_cnp: None,
            flushing: false,
        }
    }

    /// Applies a MODIFY_QP after checking the RC transition rules. Nothing changes on error.
    pub fn modify(&mut self, a: &QpAttrsRepr) -> Result<(), ModifyError> {
        let mask = a.attr_mask;
        let cur = self.state;
        if mask & attr::CUR_STATE != 0 && QpState::from_u8(a.cur_qp_state) != Some(cur) {
            return Err(ModifyError::Rule(TransitionError::CurStateMismatch));
        }
        let next = if mask & attr::STATE != 0 {
            QpState::from_u8(a.qp_state).ok_or(ModifyError::BadValue("qp_state"))?
        } else {
            cur
        };
        check_modify(self.qp_type, cur, next, mask).map_err(ModifyError::Rule)?;
        // Validate values before touching anything.
        if mask & attr::PATH_MTU != 0 && mtu_bytes(a.path_mtu).is_none() {
            return Err(ModifyError::BadValue("path_mtu"));
        }
        if mask & attr::TIMEOUT != 0 && a.timeout > 31 {
            return Err(ModifyError::BadValue("timeout"));
        }
        if mask & attr::RETRY_CNT != 0 && a.retry_cnt > 7 {
            return Err(ModifyError::BadValue("retry_cnt"));
        }
        if mask & attr::RNR_RETRY != 0 && a.rnr_retry > 7 {
            return Err(ModifyError::BadValue("rnr_retry"));
        }
        if mask & attr::MIN_RNR_TIMER != 0 && a.min_rnr_timer > 31 {
            return Err(ModifyError::BadValue("min_rnr_timer"));
        }
        if mask & attr::DEST_QPN != 0 && a.dest_qp_num > 0xFF_FFFF {
            return Err(ModifyError::BadValue("dest_qp_num"));
        }
        if mask & attr::ACCESS_FLAGS != 0 && a.qp_access_flags & !wire::contract::verbs::access::ALL != 0 {
            return Err(ModifyError::BadValue("qp_access_flags"));
        }
        if mask & attr::MAX_QP_RD_ATOMIC != 0 && a.max_rd_atomic > 16 {
            return Err(ModifyError::BadValue("max_rd_atomic"));
        }
        if mask & attr::MAX_DEST_RD_ATOMIC != 0 && a.max_dest_rd_atomic > 16 {
            return Err(ModifyError::BadValue("max_dest_rd_atomic"));
        }
        if mask & attr::PKEY_INDEX != 0 && a.pkey_index >= PKEY_TABLE_LEN {
            return Err(ModifyError::BadValue("pkey_index"));
        }
        if mask & attr::PORT != 0 && a.port_num != 1 {
            return Err(ModifyError::BadValue("port_num"));
        }
        let t = &mut self.attrs;
        if mask & attr::ACCESS_FLAGS != 0 {
            t.access = a.qp_access_flags;
        }
        if mask & attr::PORT != 0 {
            t.port_num = a.port_num;
        }
        if mask & attr::AV != 0 {
            t.sgid_index = a.sgid_index;
            t.hop_limit = a.hop_limit;
            t.traffic_class = a.traffic_class;
            t.flow_label = a.flow_label & 0xF_FFFF;
            let mut dmac = [0u8; 6];
            wire::field::set_be(&mut dmac, a.dmac);
            t.dmac = dmac;
            t.vlan = (a.vlan_tagged != 0).then(|| VlanTag::from_tci(a.vlan));
            t.dgid = wire::contract::cmd::gid_join(a.dgid_hi, a.dgid_lo);
        }
        if mask & attr::PATH_MTU != 0 {
            t.pmtu = mtu_bytes(a.path_mtu).unwrap_or(1024);
        }
        if mask & attr::DEST_QPN != 0 {
            t.dest_qpn = a.dest_qp_num;
        }
        if mask & (attr::AV | attr::DEST_QPN) != 0 {
            let fl =
                if t.flow_label != 0 { t.flow_label } else { wire::roce::flow_label_from_qpns(self.qpn, t.dest_qpn) };
            t.udp_sport = wire::roce::udp_sport_from_flow_label(fl);
        }
        if mask & attr::RQ_PSN != 0 {
            self.resp.epsn = Psn::new(a.rq_psn);
        }
        if mask & attr::MAX_DEST_RD_ATOMIC != 0 {
            t.max_dest_rd_atomic = a.max_dest_rd_atomic;
            while self.resp.resources.len() > usize::from(a.max_dest_rd_atomic.max(1)) {
                self.resp.pop_resource();
            }
        }
        if mask & attr::MIN_RNR_TIMER != 0 {
            t.min_rnr_timer = a.min_rnr_timer;
        }
        if mask & attr::TIMEOUT != 0 {
            t.timeout = a.timeout;
        }
        if mask & attr::RETRY_CNT != 0 {
            t.retry_cnt = a.retry_cnt;
            self.req.retry_left = a.retry_cnt;
        }
        if mask & attr::RNR_RETRY != 0 {
            t.rnr_retry = a.rnr_retry;
            self.req.rnr_left = a.rnr_retry;
        }
        if mask & attr::SQ_PSN != 0 {
            let p = Psn::new(a.sq_psn);
            self.req.psn = p;
            self.req.cursor_psn = p;
            self.req.comp_psn = p;
            self.req.high_psn = p;
        }
        if mask & attr::MAX_QP_RD_ATOMIC != 0 {
            t.max_rd_atomic = a.max_rd_atomic;
        }
        self.state = next;
        if next == QpState::Reset {
            self.reset();
        }
        Ok(())
    }

    /// Back to RESET: rings emptied, all transport state cleared.
    fn reset(&mut self) {
        self.sq.pi = 0;
        self.sq.ci = 0;
        self.rq.pi = 0;
        self.rq.ci = 0;
        self.req = ReqState::default();
        self.resp = RespState::default();
        self.flushing = false;
        self.attrs = Attrs::default();
    }

    /// The current attributes, as QUERY_QP reports them.
    pub fn query(&self) -> QpAttrsRepr {
        let t = &self.attrs;
        let (dgid_hi, dgid_lo) = wire::contract::cmd::gid_split(&t.dgid);
        QpAttrsRepr {
            qpn: self.qpn,
            attr_mask: 0,
            qp_state: self.state as u8,
            cur_qp_state: self.state as u8,
            path_mtu: wire::contract::verbs::mtu_enum(t.pmtu).unwrap_or(0),
            timeout: t.timeout,
            retry_cnt: t.retry_cnt,
            rnr_retry: t.rnr_retry,
            min_rnr_timer: t.min_rnr_timer,
            max_rd_atomic: t.max_rd_atomic,
            max_dest_rd_atomic: t.max_dest_rd_atomic,
            sgid_index: t.sgid_index,
            hop_limit: t.hop_limit,
            traffic_class: t.traffic_class,
            qp_access_flags: t.access,
            dest_qp_num: t.dest_qpn,
            rq_psn: self.resp.epsn.value(),
            sq_psn: self.req.psn.value(),
            flow_label: t.flow_label,
            dmac: wire::field::get_be(&t.dmac),
            vlan: t.vlan.map_or(0, |v| v.tci()),
            vlan_tagged: u8::from(t.vlan.is_some()),
            dgid_hi,
            dgid_lo,
            pkey_index: 0,
            port_num: t.port_num,
            sq_draining: u8::from(self.sq_draining()),
        }
    }

    /// Accepts request packets (responder side).
    pub fn can_receive(&self) -> bool {
        matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd)
    }
    /// Sends packets of WQE `w`: in RTS any, in SQD (draining) only those of WQEs already started.
    pub fn can_send(&self, w: &SendWqe) -> bool {
        !self.flushing && (self.state == QpState::Rts || (self.state == QpState::Sqd && w.first_psn.is_some()))
    }

    /// The requester/completer invariants of `ReqState`, as an error naming the first one broken.
    pub fn check_req_invariants(&self) -> Result<(), String> {
        let r = &self.req;
        let fail = |what: &str| Err(format!("QP {:#x}: {what}: {r:?}", self.qpn));
        if r.cursor > r.wqes.len() {
            return fail("cursor past the queue");
        }
        if r.cursor_psn.diff(r.comp_psn) < 0 || r.psn.diff(r.cursor_psn) < 0 {
            return fail("cursor_psn outside comp_psn..=psn");
        }
        if r.high_psn.diff(r.comp_psn) < 0 || r.psn.diff(r.high_psn) < 0 {
            return fail("high_psn outside comp_psn..=psn");
        }
        // The window's entries are consecutive SQ slots ending where the fetch stopped.
        let head = self.sq.ci.wrapping_sub(r.wqes.len() as u16);
        if r.wqes.iter().enumerate().any(|(i, w)| w.index != head.wrapping_add(i as u16)) {
            return fail("window entries are not the SQ slots before the fetch counter");
        }
        // Started WQEs: a prefix, with contiguous PSN ranges ending at `psn`.
        let started = r.wqes.iter().take_while(|w| w.first_psn.is_some()).count();
        if r.wqes.iter().skip(started).any(|w| w.first_psn.is_some()) {
            return fail("a WQE started out of SQ order");
        }
        let mut next = None;
        for w in r.wqes.iter().take(started) {
            let first = w.first_psn.unwrap_or_default();
            if next.is_some_and(|n: Psn| n != first) {
                return fail("PSN ranges of started WQEs not contiguous");
            }
            next = Some(first.add(w.npkts));
        }
        if next.is_some_and(|n| n != r.psn) {
            return fail("psn is not the end of the last started WQE");
        }
        // comp_psn lies in the oldest unfinished started WQE (or at `psn` when none is left). A QP that is
        // flushing has stopped: what is left of its window is completed as it is.
        if let Some(w) = r.wqes.iter().take(started).find(|w| !w.acked && w.error.is_none() && !self.flushing) {
            let first = w.first_psn.unwrap_or_default();
            if r.comp_psn.diff(first) < 0 || first.add(w.npkts).diff(r.comp_psn) <= 0 {
                return fail("comp_psn outside the oldest unfinished WQE");
            }
            if r.timer.is_none() && r.rnr_wait.is_none() {
                return fail("work outstanding with no ACK timer and no RNR wait");
            }
        }
        // The counters kept in place of scans.
        if usize::from(r.rd_atomic) != r.wqes.iter().filter(|w| w.holds_rd_atomic()).count() {
            return fail("rd_atomic is not the number of outstanding READs and atomics");
        }
        if r.oldest != r.wqes.iter().position(|w| !w.acked).unwrap_or(r.wqes.len()) {
            return fail("oldest is not the oldest unfinished WQE");
        }
        if !self.flushing && r.wqes.front().is_some_and(|w| w.acked) {
            return fail("a finished WQE at the front of the window was not retired");
        }
        if self.resp.recv.is_some_and(|c| c.index != self.rq.ci.wrapping_sub(1)) {
            return fail("the receive in progress is not the last RQ entry taken");
        }
        Ok(())
    }

    /// SQD with started WQEs still unacknowledged.
    pub fn sq_draining(&self) -> bool {
        self.state == QpState::Sqd && self.req.outstanding()
    }
}

/// Why a MODIFY_QP was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModifyError {
    Rule(TransitionError),
    BadValue(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;
    fn qp_in_init() -> Qp {
        let mut q = Qp::new(1, 1, Rp::new(100_000, &super::super::dcqcn::Params::default()));
        let init = QpAttrsRepr {
            attr_mask: attr::STATE | attr::PKEY_INDEX | attr::PORT | attr::ACCESS_FLAGS,
            qp_state: QpState::Init as u8,
            port_num: 1,
            ..Default::default()
        };
        q.modify(&init).unwrap();
        q
    }

    /// The request that takes `q` from its state to `to`, with every required attribute at a good value.
    fn good(to: QpState) -> QpAttrsRepr {
        let mask = match to {
            QpState::Rtr => {
                attr::AV
                    | attr::PATH_MTU
                    | attr::DEST_QPN
                    | attr::RQ_PSN
                    | attr::MAX_DEST_RD_ATOMIC
                    | attr::MIN_RNR_TIMER
            }
            QpState::Rts => attr::TIMEOUT | attr::RETRY_CNT | attr::RNR_RETRY | attr::SQ_PSN | attr::MAX_QP_RD_ATOMIC,
            _ => attr::ACCESS_FLAGS,
        };
        QpAttrsRepr { attr_mask: attr::STATE | mask, qp_state: to as u8, path_mtu: 3, ..Default::default() }
    }

    /// Every out-of-range value is refused by name, and a refused MODIFY_QP changes nothing.
    #[test]
    fn modify_refuses_bad_values_and_changes_nothing() {
        // The transition an attribute belongs to, how to spoil it, and the name the refusal gives.
        type Spoilt = (QpState, fn(&mut QpAttrsRepr), &'static str);
        let bad: [Spoilt; 9] = [
            (QpState::Rtr, |a| a.path_mtu = 6, "path_mtu"),
            (QpState::Rtr, |a| a.min_rnr_timer = 32, "min_rnr_timer"),
            (QpState::Rtr, |a| a.dest_qp_num = 1 << 24, "dest_qp_num"),
            (QpState::Rtr, |a| a.max_dest_rd_atomic = 17, "max_dest_rd_atomic"),
            (QpState::Rts, |a| a.timeout = 32, "timeout"),
            (QpState::Rts, |a| a.retry_cnt = 8, "retry_cnt"),
            (QpState::Rts, |a| a.rnr_retry = 8, "rnr_retry"),
            (QpState::Rts, |a| a.max_rd_atomic = 17, "max_rd_atomic"),
            (QpState::Init, |a| a.qp_access_flags = 1 << 20, "qp_access_flags"),
        ];
        for (to, set, name) in bad {
            let mut q = qp_in_init();
            if to == QpState::Rts {
                q.modify(&good(QpState::Rtr)).unwrap();
            }
            let mut a = good(to);
            set(&mut a);
            let before = q.query();
            assert_eq!(q.modify(&a), Err(ModifyError::BadValue(name)), "{name}");
            assert_eq!(q.query(), before, "{name}: nothing changed");
            assert_eq!(q.modify(&good(to)), Ok(()), "{name}: the same request with a good value");
        }
        // RTR -> RTS naming the current state: refused when it is not the QP's.
        let mut q = qp_in_init();
        q.modify(&good(QpState::Rtr)).unwrap();
        let mut a = good(QpState::Rts);
        a.attr_mask |= attr::CUR_STATE;
        a.cur_qp_state = QpState::Init as u8;
        assert_eq!(q.modify(&a), Err(ModifyError::Rule(TransitionError::CurStateMismatch)));
        assert_eq!(q.state, QpState::Rtr);
        a.cur_qp_state = QpState::Rtr as u8;
        assert_eq!(q.modify(&a), Ok(()), "the current state named right");
        assert_eq!(q.state, QpState::Rts);
    }

    /// Fields outside the attribute mask are neither checked nor applied (here: garbage in every one of them).
    #[test]
    fn modify_ignores_what_the_mask_leaves_out() {
        let mut q = qp_in_init();
        q.modify(&good(QpState::Rtr)).unwrap();
        q.modify(&good(QpState::Rts)).unwrap();
        let before = q.query();
        // RTS -> RTS with nothing in the mask.
        let garbage = QpAttrsRepr {
            attr_mask: 0,
            qp_state: 0xEE,
            cur_qp_state: 0xEE,
            path_mtu: 0xEE,
            timeout: 0xEE,
            retry_cnt: 0xEE,
            rnr_retry: 0xEE,
            min_rnr_timer: 0xEE,
            max_rd_atomic: 0xEE,
            max_dest_rd_atomic: 0xEE,
            sgid_index: 0xEE,
            hop_limit: 0xEE,
            traffic_class: 0xEE,
            qp_access_flags: u32::MAX,
            dest_qp_num: u32::MAX,
            rq_psn: 0x123,
            sq_psn: 0x456,
            flow_label: 0x777,
            dmac: 0x0102_0304_0506,
            vlan: u16::MAX,
            vlan_tagged: 1,
            dgid_hi: 1,
            dgid_lo: 2,
            pkey_index: 0xEE,
            port_num: 0xEE,
            ..Default::default()
        };
        assert_eq!(q.modify(&garbage), Ok(()), "an empty mask changes nothing and checks nothing");
        assert_eq!(q.query(), before);
    }

    /// The largest legal value of each ranged attribute is accepted.
    #[test]
    fn modify_accepts_each_limit() {
        let mut q = qp_in_init();
        let mut rtr = good(QpState::Rtr);
        (rtr.path_mtu, rtr.min_rnr_timer, rtr.max_dest_rd_atomic, rtr.dest_qp_num) = (5, 31, 16, 0xFF_FFFF);
        assert_eq!(q.modify(&rtr), Ok(()));
        let mut rts = good(QpState::Rts);
        (rts.timeout, rts.retry_cnt, rts.rnr_retry, rts.max_rd_atomic) = (31, 7, 7, 16);
        assert_eq!(q.modify(&rts), Ok(()));
        let got = q.query();
        let set = (got.path_mtu, got.min_rnr_timer, got.max_dest_rd_atomic, got.dest_qp_num, got.timeout);
        assert_eq!(set, (5, 31, 16, 0xFF_FFFF, 31));
        assert_eq!((got.retry_cnt, got.rnr_retry, got.max_rd_atomic), (7, 7, 16));
    }

    fn wqe(op: SendOp, first: Option<u32>, npkts: u32) -> SendWqe {
        SendWqe {
            index: 0,
            op,
            flags: 0,
            len: npkts * 256,
            first_psn: first.map(Psn::new),
            npkts,
            acked: false,
            error: None,
            wr_id: 0,
        }
    }

    /// Two WRITEs of 4 PSNs from 10 in flight, a READ of 4 after them not yet sent; comp_psn at 12. The
    /// window holds SQ slots 5, 6 and 7.
    fn consistent() -> Qp {
        let mut q = qp_in_init();
        q.sq.ci = 8;
        let r = &mut q.req;
        r.wqes.extend([wqe(SendOp::RdmaWrite, Some(10), 4), wqe(SendOp::RdmaWrite, Some(14), 4)]);
        r.wqes.push_back(wqe(SendOp::RdmaRead, None, 0));
        for (i, w) in r.wqes.iter_mut().enumerate() {
            w.index = 5 + i as u16;
        }
        (r.psn, r.cursor, r.cursor_psn, r.comp_psn, r.high_psn) =
            (Psn::new(18), 2, Psn::new(18), Psn::new(12), Psn::new(18));
        r.timer = Some(1);
        q
    }

    /// A WQE's PSN range: from its first PSN for `npkts` PSNs, across the 24-bit wrap; nothing before it starts.
    #[test]
    fn a_wqe_contains_its_psns_only() {
        let w = wqe(SendOp::RdmaWrite, Some(10), 4);
        let got: Vec<_> = (8..16).filter(|&p| w.contains(Psn::new(p))).collect();
        assert_eq!(got, [10, 11, 12, 13]);
        let w = wqe(SendOp::RdmaWrite, Some(0xFF_FFFE), 3);
        assert!(w.contains(Psn::new(0)) && !w.contains(Psn::new(1)) && !w.contains(Psn::new(0xFF_FFFD)));
        assert!(!wqe(SendOp::RdmaWrite, None, 0).contains(Psn::new(0)));
    }

    /// The window's bookkeeping: finishing keeps the outstanding-READ count and the oldest unfinished entry,
    /// popping shifts both cursors, and a READ counts from its start to its answer.
    #[test]
    fn the_window_keeps_its_counters() {
        let mut r = ReqState::default();
        r.push(wqe(SendOp::RdmaRead, None, 0));
        r.push(wqe(SendOp::RdmaWrite, None, 0));
        let mut failed = wqe(SendOp::Send, None, 0);
        failed.acked = true;
        r.push(failed);
        assert_eq!((r.oldest, r.rd_atomic), (0, 0));
        r.start(0, 3);
        assert_eq!((r.rd_atomic, r.psn, r.wqes[0].first_psn), (1, Psn::new(3), Some(Psn::new(0))));
        assert!(r.outstanding());
        r.finish(1, None);
        assert_eq!(r.oldest, 0, "the READ before it is still out");
        r.finish(0, Some((WcStatus::LocProtErr, 0)));
        assert_eq!((r.oldest, r.rd_atomic), (3, 0), "past the finished and the pre-failed entries");
        assert_eq!(r.wqes[0].error, Some((WcStatus::LocProtErr, 0)));
        r.finish(0, Some((WcStatus::RemOpErr, 0)));
        assert_eq!(r.wqes[0].error, Some((WcStatus::LocProtErr, 0)), "a finished entry keeps its status");
        r.cursor = 2;
        assert!(r.pop().is_some());
        assert_eq!((r.cursor, r.oldest, r.wqes.len()), (1, 2, 2));
        assert!(!r.outstanding());
    }

    /// Each invariant of `ReqState`, broken on its own, is reported.
    #[test]
    fn requester_invariants_catch_each_broken_rule() {
        assert_eq!(consistent().check_req_invariants(), Ok(()));
        // Both WRITEs acknowledged and retired: comp_psn at the end, the READ not started, no timer.
        let mut q = consistent();
        let r = &mut q.req;
        for i in 0..2 {
            r.finish(i, None);
        }
        (r.comp_psn, r.timer) = (Psn::new(18), None);
        assert!(r.pop().is_some() && r.pop().is_some());
        assert_eq!(q.check_req_invariants(), Ok(()));
        type Break = (fn(&mut Qp), &'static str);
        let breaks: [Break; 14] = [
            (|q| q.req.cursor = 4, "cursor past the queue"),
            (|q| q.req.cursor_psn = Psn::new(11), "cursor_psn outside"),
            (|q| q.req.high_psn = Psn::new(19), "high_psn outside"),
            (
                |q| {
                    q.req.wqes[1].first_psn = None;
                    q.req.wqes[2].first_psn = Some(Psn::new(14));
                },
                "started out of SQ order",
            ),
            (|q| q.req.wqes[1].first_psn = Some(Psn::new(15)), "not contiguous"),
            (|q| q.req.psn = Psn::new(20), "psn is not the end"),
            (|q| q.req.comp_psn = Psn::new(9), "comp_psn outside"),
            (|q| q.req.timer = None, "no ACK timer"),
            (|q| q.sq.ci = 9, "not the SQ slots"),
            (|q| q.req.wqes[1].index = 7, "not the SQ slots"),
            (|q| q.req.rd_atomic = 1, "rd_atomic"),
            (|q| q.req.oldest = 1, "oldest"),
            (|q| q.resp.recv = Some(RecvCtx { index: 3, offset: 0 }), "receive in progress"),
            (
                |q| {
                    q.req.finish(0, None);
                    q.req.comp_psn = Psn::new(14);
                },
                "not retired",
            ),
        ];
        for (spoil, what) in breaks {
            let mut q = consistent();
            spoil(&mut q);
            let e = q.check_req_invariants().expect_err(what);
            assert!(e.contains(what), "{what}: {e}");
        }
    }

    /// The UDP source port is fixed when MODIFY_QP gives the address vector or the destination QPN (at RTR),
    /// from the flow label or, when that is 0, from the two QPNs; a later MODIFY_QP without them keeps it.
    #[test]
    fn the_udp_source_port_is_fixed_at_rtr() {
        let mut q = qp_in_init();
        let mut rtr = good(QpState::Rtr);
        rtr.dest_qp_num = 0x12;
        q.modify(&rtr).unwrap();
        let port = wire::roce::udp_sport_from_flow_label(wire::roce::flow_label_from_qpns(1, 0x12));
        assert_eq!(q.attrs.udp_sport, port, "from the QPNs at RTR");
        q.modify(&good(QpState::Rts)).unwrap();
        assert_eq!(q.attrs.udp_sport, port, "kept at RTS");
        let mut q = qp_in_init();
        rtr.flow_label = 0x5_4321;
        q.modify(&rtr).unwrap();
        assert_eq!(q.attrs.udp_sport, wire::roce::udp_sport_from_flow_label(0x5_4321), "from the flow label");
    }

    /// SQD -> SQD may lower max_dest_rd_atomic: the responder keeps the newest resources that still fit, and
    /// none is dropped while they do.
    #[test]
    fn lowering_max_dest_rd_atomic_keeps_the_newest_resources() {
        let mut q = qp_in_init();
        q.modify(&good(QpState::Rtr)).unwrap();
        q.modify(&good(QpState::Rts)).unwrap();
        let sqd = QpAttrsRepr { attr_mask: attr::STATE, qp_state: QpState::Sqd as u8, ..Default::default() };
        q.modify(&sqd).unwrap();
        for k in 0..4u32 {
            q.resp.resources.push_back(Resource {
                first_psn: Psn::new(k),
                msn: k,
                kind: ResourceKind::Atomic { orig: u64::from(k) },
            });
        }
        let lower = |n| QpAttrsRepr {
            attr_mask: attr::STATE | attr::MAX_DEST_RD_ATOMIC,
            qp_state: QpState::Sqd as u8,
            max_dest_rd_atomic: n,
            ..Default::default()
        };
        q.modify(&lower(4)).unwrap();
        assert_eq!(q.resp.resources.len(), 4, "all four fit");
        q.modify(&lower(2)).unwrap();
        let msns: Vec<u32> = q.resp.resources.iter().map(|r| r.msn).collect();
        assert_eq!(msns, [2, 3], "the newest two");
        assert_eq!(q.resp.res_head, 2, "the ring's head moved past the two dropped");
    }

    /// The response queue's head counts the responses taken off its front, wrapping; dropping the queue
    /// (entering ERR, a fatal NAK) leaves it where it is.
    #[test]
    fn the_response_ring_head_counts_what_leaves_its_front() {
        let mut r = RespState { item_head: 0xFF, ..Default::default() };
        let ack = RespItem::Ack { psn: Psn::new(1), aeth: AethRepr::default() };
        r.out.extend([ack.clone(), ack.clone(), ack]);
        assert!(r.pop_item().is_some());
        assert_eq!(r.item_head, 0, "wraps");
        r.out.clear();
        assert_eq!((r.pop_item(), r.item_head), (None, 0), "an empty queue keeps its head");
        r.pop_resource();
        assert_eq!(r.res_head, 0, "no resource, no move");
    }
}
