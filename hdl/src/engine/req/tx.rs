//! `ReqTx`: the requester's transmit side, the model's `req::next_frame` for a QP the scheduler picked, and
//! the scheduler itself (`tx_ready` for the requester stream: `ReqReady`, an RC QP, its source GID set).
//!
//! Which QPs may have a packet to send is kept as `FetchWake` keeps it for the fetch: a bit a QP, set when a
//! WQE is fetched into its window or a command writes it, cleared when a visit finds it not ready (unless it
//! was woken during the visit); the next to visit is the first awake after the last visited, round robin. A
//! visit holds the engines' context port from the contexts' read to the decision: the `qp_attr` and `qp_req`
//! records, the GID entry, then the window entry at the cursor (`Rings::window`). A QP that may send has, for
//! a WQE already started, its first PSN found (`PsnWalk`: the packed context does not keep it), then its SQ
//! slot read (`SendDesc`) unless its descriptor is the one kept from the last read (the model's `KeptDesc`:
//! the same QP and SQ counter, not inline, no raw frame's read and no QP command since; nothing is kept once
//! a WQE's last packet is sent). With nothing kept and the requester idle as the dispatch starts a WQE's fetch,
//! `SendDesc` takes the fetch's read as its own (`snoop`): committed with the fetch (`primed`, the trace's
//! `FetchSq` with `primed`), its descriptor is kept, so the WQE's first packet reads no slot; a visit that
//! needs `SendDesc` meanwhile cuts the snoop short (`cut`). The packet segmented
//! (`ReqSeg`) and its headers built (`TxHeaders`), and its
//! payload gathered (`DmaGather`, shared with the responder's READ responses: the SGEs, or the slot's inline
//! bytes as one piece; a packet taking the kept descriptor claims what the gather read ahead along the
//! message, which it reads only while no other QP waits to send). The decision (`decided`, the trace's `Tx` of the requester stream) is taken in the
//! cycle the TX pipeline takes the packet's record: `qp_req` written back (`ReqStep`) and the entry marked
//! started. A slot that cannot be read or parsed again (LocQpOpErr), or a payload that cannot be gathered
//! (LocProtErr, its bytes dropped), sends nothing (`nil`): the entry is finished with that error, `oldest`
//! moved past it as the model's `settle_oldest` moves it (`OldestWalk`).
//!
//! A failed entry that is the window's front retires at once, as the model's decision retires it: the QP and
//! the context port go straight to the dispatch (`retire_req`), which pops it with its CQE and takes the QP to
//! ERR before anything else sees the QP. DCQCN's reaction point is not kept: the requester is never paced.
//!
//! A raw packet QP's visit is the model's `raw::next_frame` (the trace's `Tx` of its raw stream, `tx_raw`):
//! in RTS, its front entry is checked (a SEND of 14 to `wire::MAX_FRAME_LEN` bytes whose fetch did not fail),
//! its slot read again, its bytes gathered from offset 0 and handed to the TX pipeline as a raw record (no
//! headers, no ICRC, padded to the Ethernet minimum), the entry finished as the record is taken; an entry
//! that fails sends nothing. Either way it is the front and retires at once (`Handoff`): raw QPs keep no
//! PSNs, so nothing in `qp_req` moves but `oldest`.

use super::desc::SendDesc;
use super::ready::{ReqReady, WQE_BITS};
use super::seg::ReqSeg;
use super::window::{ack_deadline, entry_packets, window_base, FetchWake, OldestWalk, PsnWalk};
use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
use crate::engine::headers::TxHeaders;
use crate::engine::resp::recv_wqe::SGES_BITS;
use crate::kit::*;
use crate::record::{build, slice, width};
use crate::rx::meta::{self, Verdict};
use wire::contract::profile::Profile;
use wire::contract::qpc::{qp_context, recv_sge, TICK_BITS};
use wire::contract::verbs::{QpState, WcStatus};
use wire::contract::wqe::{SendOp, SEND_DATA};
use wire::opcode::hdr;
use wire::Opcode;

#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum ReqTxState {
    Idle,
    /// A QP picked: its contexts being read.
    Look,
    /// The contexts are in: the window entry at the cursor being read.
    Ctx,
    /// The entry is in: ready or not.
    Entry,
    /// A started entry's first PSN being found.
    Walk,
    /// The WQE's slot being read, or its kept descriptor taken.
    Desc,
    /// The payload being gathered.
    Gather,
    /// The record offered to the TX pipeline: the decision when it is taken.
    Emit,
    /// The packet failed: `oldest` being found past the entry.
    FailWalk,
    /// The packet failed: the decision (nothing sent).
    Fail,
    /// The failed entry is the window's front: the QP and the context port given over to the dispatch,
    /// which retires it.
    Handoff,
}

#[derive(LogicBlock)]
pub struct ReqTx {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The QP of the dispatch's WQE fetch: the one `fetched`, `snoop_go` and `commit` name.
    pub fetch_qpn: Signal<In, Bits<24>>,
    /// Wake-ups: a WQE fetched into QP `fetch_qpn`'s window, a command on QP `cmd_qpn`.
    pub fetched: Signal<In, Bit>,
    pub cmd: Signal<In, Bit>,
    pub cmd_qpn: Signal<In, Bits<24>>,
    /// The dispatch starts the fetch of QP `fetch_qpn`'s WQE at SQ counter `snoop_index` (the engines'
    /// context port gives its `qp_attr` this cycle); the fetch read's completion beats (`snoop_valid`, ...).
    pub snoop_go: Signal<In, Bit>,
    pub snoop_index: Signal<In, Bits<16>>,
    pub snoop_valid: Signal<In, Bit>,
    pub snoop_data: Signal<In, Bits<64>>,
    pub snoop_err: Signal<In, Bit>,
    pub snoop_last: Signal<In, Bit>,
    /// The dispatch commits QP `fetch_qpn`'s fetch of SQ counter `commit_index` (the trace's `FetchSq`).
    pub commit: Signal<In, Bit>,
    pub commit_index: Signal<In, Bits<16>>,
    /// With `commit`: the fetch's read was taken as the descriptor read (the trace's `primed`).
    pub primed: Signal<Out, Bit>,
    /// The context port is another's this cycle, or another wants it.
    pub hold: Signal<In, Bit>,
    /// Holding the context port.
    pub ctx_busy: Signal<Out, Bit>,
    /// No QP awake, none in hand.
    pub idle: Signal<Out, Bit>,
    /// It waits for the context port: a QP to visit, and nothing else in its way but the port's holder.
    pub want: Signal<Out, Bit>,
    /// The engines' context port (`CmdExec`'s `rs_*`).
    pub qp_index: Signal<Out, Bits<24>>,
    pub qp_valid: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub gid_index: Signal<Out, Bits<4>>,
    pub gid: Signal<In, Bits<128>>,
    pub gid_valid: Signal<In, Bit>,
    pub mac: Signal<In, Bits<48>>,
    pub req_we: Signal<Out, Bit>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    /// The windows' read port (the entry of `win_slot` of QP `qp_index` the next cycle) and write port.
    pub win_slot: Signal<Out, Bits<8>>,
    pub win_entry: Signal<In, Bits<WQE_BITS>>,
    pub win_we: Signal<Out, Bit>,
    pub win_w_slot: Signal<Out, Bits<8>>,
    pub win_w: Signal<Out, Bits<WQE_BITS>>,
    /// The slot's read (a requester of `DmaReadMux`).
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<64>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// The payload's gather (`DmaGather`, while this block holds the context port).
    pub g_start: Signal<Out, Bit>,
    pub g_sges: Signal<Out, Bits<SGES_BITS>>,
    pub g_count: Signal<Out, Bits<8>>,
    pub g_off: Signal<Out, Bits<32>>,
    pub g_len: Signal<Out, Bits<32>>,
    /// The packet is the next of the message the last gather was of (its descriptor kept), which the gather
    /// may have read ahead; the message (`g_tag`: the QP number's low 16 bits and the WQE's SQ counter; the
    /// claim also needs the kept descriptor, whose QP number is whole) and how far to read ahead
    /// along it (`g_end`: its length, or 0 when another QP waits to send and the next visit is not this
    /// QP's, when the packet is sent again, or when the data is not read from SGEs).
    pub g_claim: Signal<Out, Bit>,
    pub g_tag: Signal<Out, Bits<32>>,
    pub g_end: Signal<Out, Bits<32>>,
    pub g_busy: Signal<In, Bit>,
    pub g_done: Signal<In, Bit>,
    pub g_err: Signal<In, Bit>,
    pub g_drop: Signal<Out, Bit>,
    /// The timer tick now (the ACK timer is armed from it).
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    /// The packet's TX record (its payload comes from the gather).
    pub meta: Signal<Out, Bits<{ meta::BITS }>>,
    pub meta_valid: Signal<Out, Bit>,
    pub meta_ready: Signal<In, Bit>,
    /// The decision trace: QP `tx_qpn`'s requester sent this cycle; with `nil`, nothing (the packet failed).
    pub decided: Signal<Out, Bit>,
    /// With `decided` (not `nil`): the packet is sent again (`retransmitted_packets`).
    pub retransmit: Signal<Out, Bit>,
    pub nil: Signal<Out, Bit>,
    pub tx_qpn: Signal<Out, Bits<24>>,
    /// With `decided`: the QP is a raw packet QP (its raw stream decided, not its requester).
    pub tx_raw: Signal<Out, Bit>,
    /// The failed front's retire, asked of the dispatch (`retire_take` when it takes it).
    pub retire_req: Signal<Out, Bit>,
    pub retire_take: Signal<In, Bit>,
    state: DFF<ReqTxState>,
    qpn: DFF<Bits<24>>,
    first: DFF<Bits<24>>,
    /// The packet failed, and with what.
    status: DFF<Bits<5>>,
    oldest_at: DFF<Bits<8>>,
    /// The descriptor cache (the model's `KeptDesc`): `desc` holds QP `kept_qpn`'s WQE at SQ counter
    /// `kept_index`; `hit` when this packet's is that one (no read): 2 as `Desc` is entered, taken at 1 (the
    /// window entry at the cursor is read again after `PsnWalk`'s reads, a cycle).
    kept: DFF<Bit>,
    kept_qpn: DFF<Bits<24>>,
    kept_index: DFF<Bits<16>>,
    hit: DFF<Bits<2>>,
    /// A fetch's read given to `SendDesc` (`snooping`: its beats routed there until its last; `snoop_run`:
    /// `SendDesc` not done with it yet) for QP `sn_qpn`'s WQE at `sn_index`; `sn_have` once done (`sn_ok`: it
    /// parses, not inline), until a start of `SendDesc`'s own.
    snooping: DFF<Bit>,
    snoop_run: DFF<Bit>,
    sn_qpn: DFF<Bits<24>>,
    sn_index: DFF<Bits<16>>,
    sn_have: DFF<Bit>,
    sn_ok: DFF<Bit>,
    /// `SendDesc` is started for a packet or a raw frame this cycle (a snoop cut short).
    own_start: Signal<Local, Bit>,
    /// A visit may start: a QP is awake, the gather is free, and `SendDesc` is free or busy only with a snoop
    /// (which the visit cuts short).
    can_visit: Signal<Local, Bit>,
    /// `Desc` is entered for a packet (from `Entry` or `Walk`): its descriptor read or the kept one taken.
    to_desc: Signal<Local, Bit>,
    wake: FetchWake,
    /// Whether the QP in hand is the only one awake: the dispatch's `FetchWake` says so of its own.
    wake_at: Spare<1>,
    sendable: ReqReady,
    psn_walk: PsnWalk,
    oldest_walk: OldestWalk,
    desc: SendDesc,
    seg: ReqSeg,
    headers: TxHeaders,
    step: ReqStep,
    qp_op_err: Constant<Bits<5>>,
    prot_err: Constant<Bits<5>>,
}

impl ReqTx {
    pub fn new(profile: Profile) -> Self {
        ReqTx {
            clock: Signal::default(),
            reset: Signal::default(),
            fetched: Signal::default(),
            fetch_qpn: Signal::default(),
            cmd: Signal::default(),
            cmd_qpn: Signal::default(),
            snoop_go: Signal::default(),
            snoop_index: Signal::default(),
            snoop_valid: Signal::default(),
            snoop_data: Signal::default(),
            snoop_err: Signal::default(),
            snoop_last: Signal::default(),
            commit: Signal::default(),
            commit_index: Signal::default(),
            primed: Signal::default(),
            hold: Signal::default(),
            ctx_busy: Signal::default(),
            idle: Signal::default(),
            want: Signal::default(),
            qp_index: Signal::default(),
            qp_valid: Signal::default(),
            attr: Signal::default(),
            req: Signal::default(),
            gid_index: Signal::default(),
            gid: Signal::default(),
            gid_valid: Signal::default(),
            mac: Signal::default(),
            req_we: Signal::default(),
            req_next: Signal::default(),
            win_slot: Signal::default(),
            win_entry: Signal::default(),
            win_we: Signal::default(),
            win_w_slot: Signal::default(),
            win_w: Signal::default(),
            rd_valid: Signal::default(),
            rd_ready: Signal::default(),
            rd_addr: Signal::default(),
            rd_len: Signal::default(),
            cpl_valid: Signal::default(),
            cpl_data: Signal::default(),
            cpl_err: Signal::default(),
            cpl_last: Signal::default(),
            g_start: Signal::default(),
            g_sges: Signal::default(),
            g_count: Signal::default(),
            g_off: Signal::default(),
            g_len: Signal::default(),
            g_claim: Signal::default(),
            g_tag: Signal::default(),
            g_end: Signal::default(),
            g_busy: Signal::default(),
            g_done: Signal::default(),
            g_err: Signal::default(),
            g_drop: Signal::default(),
            tick: Signal::default(),
            meta: Signal::default(),
            meta_valid: Signal::default(),
            meta_ready: Signal::default(),
            decided: Signal::default(),
            retransmit: Signal::default(),
            nil: Signal::default(),
            tx_qpn: Signal::default(),
            tx_raw: Signal::default(),
            retire_req: Signal::default(),
            retire_take: Signal::default(),
            state: DFF::default(),
            qpn: DFF::default(),
            first: DFF::default(),
            status: DFF::default(),
            oldest_at: DFF::default(),
            kept: DFF::default(),
            kept_qpn: DFF::default(),
            kept_index: DFF::default(),
            hit: DFF::default(),
            snooping: DFF::default(),
            snoop_run: DFF::default(),
            sn_qpn: DFF::default(),
            sn_index: DFF::default(),
            sn_have: DFF::default(),
            sn_ok: DFF::default(),
            own_start: Signal::default(),
            can_visit: Signal::default(),
            to_desc: Signal::default(),
            wake: FetchWake::new(profile),
            wake_at: Spare::default(),
            sendable: ReqReady::new(profile),
            psn_walk: PsnWalk::new(profile),
            oldest_walk: OldestWalk::new(profile),
            desc: SendDesc::new(profile),
            seg: ReqSeg::new(profile),
            headers: TxHeaders::new(profile),
            step: ReqStep::new(profile),
            qp_op_err: Constant::new(u64::from(WcStatus::LocQpOpErr as u8).into()),
            prot_err: Constant::new(u64::from(WcStatus::LocProtErr as u8).into()),
        }
    }
}

impl Logic for ReqTx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, qpn, first, status, oldest_at, kept, kept_qpn, kept_index, hit);
        dff_setup!(self, clock, snooping, snoop_run, sn_qpn, sn_index, sn_have, sn_ok);
        self.wake.clock.next = self.clock.val();
        self.wake.reset.next = self.reset.val();
        self.wake.rung.next = self.fetched.val();
        self.wake.rung_qpn.next = self.fetch_qpn.val();
        self.wake.cmd.next = self.cmd.val();
        self.wake.cmd_qpn.next = self.cmd_qpn.val();
        self.wake.visit.next = false;
        self.wake.visit_qpn.next = self.qpn.q.val();
        self.wake.at_qpn.next = self.qpn.q.val();
        self.wake_at.bits.next = self.wake.at_alone.val().into();
        self.wake.clear.next = false;
        self.to_desc.next = false;

        self.step.attr.next = self.attr.val();
        self.step.req.next = self.req.val();
        self.step.entry.next = self.win_entry.val();
        self.step.next_psn.next = self.seg.next_psn.val();
        self.step.last.next = self.seg.last.val();
        self.step.since_next.next = self.seg.since_next.val();
        self.step.tick.next = self.tick.val();
        self.step.finish.next = false;
        self.step.status.next = self.status.q.val();
        self.step.oldest_at.next = self.oldest_at.q.val();
        self.step.hdr.next = self.headers.meta.val();
        self.step.solicited.next = self.seg.solicited.val();
        self.step.has_reth.next = self.seg.has_reth.val();
        self.step.reth_va.next = self.seg.reth_va.val();
        self.step.reth_len.next = self.seg.reth_len.val();
        self.step.payload_len.next = self.seg.payload_len.val();
        self.step.rkey.next = self.desc.rkey.val();
        self.step.va.next = self.desc.va.val();
        self.step.swap_add.next = self.desc.swap_add.val();
        self.step.compare.next = self.desc.compare.val();
        self.step.imm.next = self.desc.imm.val();
        self.step.inline.next = self.desc.inline_data.val();
        self.step.num.next = self.desc.num.val();
        self.step.slot_addr.next = self.desc.slot_addr.val();
        self.step.sges.next = self.desc.sges.val();
        self.step.count.next = self.desc.count.val();
        self.step.off.next = self.seg.off.val();

        self.sendable.attr.next = self.attr.val();
        self.sendable.req.next = self.req.val();
        self.sendable.wqe.next = self.win_entry.val();

        self.psn_walk.clock.next = self.clock.val();
        self.psn_walk.reset.next = self.reset.val();
        self.psn_walk.start.next = false;
        self.psn_walk.attr.next = self.attr.val();
        self.psn_walk.base.next = self.step.base.val();
        self.psn_walk.from.next = self.step.cursor.val();
        self.psn_walk.count.next = self.step.wqes.val();
        self.psn_walk.psn.next = self.step.psn.val();
        self.psn_walk.r_entry.next = self.win_entry.val();
        self.oldest_walk.clock.next = self.clock.val();
        self.oldest_walk.reset.next = self.reset.val();
        self.oldest_walk.start.next = false;
        self.oldest_walk.base.next = self.step.base.val();
        self.oldest_walk.from.next = self.step.cursor_next.val();
        self.oldest_walk.count.next = self.step.wqes.val();
        self.oldest_walk.r_entry.next = self.win_entry.val();

        self.desc.clock.next = self.clock.val();
        self.desc.reset.next = self.reset.val();
        self.desc.start.next = false;
        self.desc.snoop.next = false;
        self.desc.cut.next = false;
        self.own_start.next = false;
        self.can_visit.next = self.wake.any.val()
            & !self.g_busy.val()
            & (!self.desc.busy.val() | self.snooping.q.val() | self.snoop_run.q.val());
        self.desc.attr.next = self.attr.val();
        self.desc.index.next = self.step.index.val();
        self.rd_valid.next = self.desc.rd_valid.val();
        self.desc.rd_ready.next = self.rd_ready.val();
        self.rd_addr.next = self.desc.rd_addr.val();
        self.rd_len.next = self.desc.rd_len.val();
        self.desc.cpl_valid.next = self.cpl_valid.val();
        self.desc.cpl_data.next = self.cpl_data.val();
        self.desc.cpl_err.next = self.cpl_err.val();
        self.desc.cpl_last.next = self.cpl_last.val();
        if self.snooping.q.val() {
            self.desc.cpl_valid.next = self.snoop_valid.val();
            self.desc.cpl_data.next = self.snoop_data.val();
            self.desc.cpl_err.next = self.snoop_err.val();
            self.desc.cpl_last.next = self.snoop_last.val();
        }
        self.primed.next = false;

        self.seg.attr.next = self.attr.val();
        self.seg.op.next = self.step.op.val();
        self.seg.flags.next = self.step.flags.val();
        self.seg.len.next = self.step.len.val();
        self.seg.first.next = self.first.q.val();
        self.seg.psn.next = self.step.cursor_psn.val();
        self.seg.va.next = self.desc.va.val();
        self.seg.since.next = self.step.since.val();

        self.headers.clock.next = self.clock.val();
        self.headers.attr.next = self.attr.val();
        self.gid_index.next = self.headers.gid_index.val();
        self.headers.gid.next = self.gid.val();
        self.headers.gid_valid.next = self.gid_valid.val();
        self.headers.mac.next = self.mac.val();
        self.headers.opcode.next = self.seg.opcode.val();
        self.headers.psn.next = self.step.cursor_psn.val();
        self.headers.ack_req.next = self.seg.ack_req.val();

        self.qp_index.next = self.qpn.q.val();
        self.tx_qpn.next = self.qpn.q.val();
        self.tx_raw.next = self.step.raw.val();
        self.req_next.next = self.step.req_next.val();
        self.win_slot.next = self.step.cursor_slot.val();
        self.win_w_slot.next = self.step.cursor_slot.val();
        self.win_w.next = self.step.entry_next.val();
        self.g_sges.next = self.step.g_sges.val();
        self.g_count.next = self.step.g_count.val();
        self.g_off.next = self.step.g_off.val();
        self.g_len.next = self.step.g_len.val();
        self.g_claim.next = (self.hit.q.val() == 1) & !self.step.raw.val();
        self.g_tag.next = (bit_cast::<32, 24>(self.qpn.q.val()) << 16) | bit_cast::<32, 16>(self.step.index.val());
        self.g_end.next = 0.into();
        // Not while sending packets again: those after it may have been sent already, and the WQE may
        // complete before what was read ahead of them is asked for.
        if (self.wake.pick.val() == self.qpn.q.val()) & !self.step.retransmit.val() {
            self.g_end.next = self.step.g_end.val();
        }
        self.meta.next = self.step.meta.val();

        self.req_we.next = false;
        self.win_we.next = false;
        self.g_start.next = false;
        self.g_drop.next = false;
        self.meta_valid.next = false;
        self.decided.next = false;
        self.retransmit.next = false;
        self.nil.next = false;
        self.retire_req.next = false;
        self.ctx_busy.next = true;
        self.idle.next = false;
        self.want.next = false;
        match self.state.q.val() {
            ReqTxState::Idle => {
                self.ctx_busy.next = false;
                self.idle.next = !self.wake.any.val();
                // A visit waits for the gather and for the last descriptor read's beats (`SendDesc` decides
                // before its read's end).
                // A snoop does not hold it: a visit that needs `SendDesc` cuts it short.
                self.want.next = self.can_visit.val();
                if self.can_visit.val() & !self.hold.val() {
                    self.qpn.d.next = self.wake.pick.val();
                    self.state.d.next = ReqTxState::Look;
                }
            }
            ReqTxState::Look => {
                self.wake.visit.next = true;
                self.state.d.next = ReqTxState::Ctx;
            }
            ReqTxState::Ctx => {
                self.state.d.next = ReqTxState::Entry;
            }
            ReqTxState::Entry => {
                if self.step.raw.val() {
                    // A raw packet QP: its front entry goes out whole, or fails; either way it is finished and
                    // retires at once, and the entry after it (never finished before it) is the oldest.
                    self.status.d.next = self.step.raw_status.val();
                    self.oldest_at.d.next = self.step.cursor_next.val();
                    if self.step.raw_go.val() & self.qp_valid.val() {
                        // The raw frame's read takes the descriptor's registers.
                        self.kept.d.next = false;
                    }
                    if !(self.step.raw_go.val() & self.qp_valid.val()) {
                        self.wake.clear.next = true;
                        self.state.d.next = ReqTxState::Idle;
                    } else if self.step.raw_send.val() {
                        self.desc.start.next = true;
                        self.own_start.next = true;
                        self.state.d.next = ReqTxState::Desc;
                    } else {
                        self.state.d.next = ReqTxState::Fail;
                    }
                } else if self.sendable.ready.val() & self.qp_valid.val() & self.gid_valid.val() {
                    if self.step.started.val() {
                        self.psn_walk.start.next = true;
                        self.state.d.next = ReqTxState::Walk;
                    } else {
                        // A WQE not started yet starts at the requester's next PSN.
                        self.first.d.next = self.step.psn.val();
                        self.state.d.next = ReqTxState::Desc;
                        self.to_desc.next = true;
                    }
                } else {
                    self.wake.clear.next = true;
                    self.state.d.next = ReqTxState::Idle;
                }
            }
            ReqTxState::Walk => {
                self.win_slot.next = self.psn_walk.r_slot.val();
                if self.psn_walk.done.val() {
                    self.first.d.next = self.psn_walk.first.val();
                    self.state.d.next = ReqTxState::Desc;
                    self.to_desc.next = true;
                }
            }
            ReqTxState::Desc => {
                // The descriptor read (`desc.done`), or the kept one (`hit`) once the entry is in again.
                if self.hit.q.val() == 2 {
                    self.hit.d.next = 1.into();
                }
                if self.desc.done.val() | (self.hit.q.val() == 1) {
                    self.hit.d.next = 0.into();
                    if self.step.raw.val() {
                        // The model's `raw::next_frame`: a slot that cannot be read, or inline data of another
                        // length than the entry's, is a protection error.
                        if self.desc.ok.val() & !self.step.raw_inline_bad.val() {
                            self.g_start.next = true;
                            self.state.d.next = ReqTxState::Gather;
                        } else {
                            self.status.d.next = self.prot_err.val();
                            self.state.d.next = ReqTxState::Fail;
                        }
                    } else if self.desc.ok.val() | (self.hit.q.val() == 1) {
                        // An inline WQE's bytes are read from its slot with each packet: it is not kept.
                        self.kept.d.next = !self.desc.inline_data.val();
                        self.g_start.next = true;
                        self.state.d.next = ReqTxState::Gather;
                    } else {
                        self.status.d.next = self.qp_op_err.val();
                        self.state.d.next = ReqTxState::Fail;
                        if self.step.oldest_here.val() {
                            self.oldest_walk.start.next = true;
                            self.state.d.next = ReqTxState::FailWalk;
                        }
                    }
                }
            }
            ReqTxState::Gather => {
                if self.g_done.val() {
                    if self.g_err.val() {
                        self.g_drop.next = true;
                        self.status.d.next = self.prot_err.val();
                        self.state.d.next = ReqTxState::Fail;
                        if self.step.oldest_here.val() & !self.step.raw.val() {
                            self.oldest_walk.start.next = true;
                            self.state.d.next = ReqTxState::FailWalk;
                        }
                    } else {
                        self.state.d.next = ReqTxState::Emit;
                    }
                }
            }
            ReqTxState::Emit => {
                // The decision as the TX pipeline takes the record: nothing sent after it can overtake it.
                self.meta_valid.next = true;
                // A raw frame finishes its entry as it goes (`status` is 0: no error).
                self.step.finish.next = self.step.raw.val();
                if self.meta_ready.val() {
                    self.req_we.next = true;
                    self.win_we.next = true;
                    self.decided.next = true;
                    // The WQE's last packet: nothing is kept after it (the model's `next_frame`).
                    if self.seg.last.val() & !self.step.raw.val() {
                        self.kept.d.next = false;
                    }
                    self.retransmit.next = self.step.retransmit.val() & !self.step.raw.val();
                    self.state.d.next = ReqTxState::Idle;
                    if self.step.raw.val() {
                        self.state.d.next = ReqTxState::Handoff;
                    }
                }
            }
            ReqTxState::FailWalk => {
                self.win_slot.next = self.oldest_walk.r_slot.val();
                if self.oldest_walk.done.val() {
                    self.oldest_at.d.next = self.oldest_walk.at.val();
                    self.state.d.next = ReqTxState::Fail;
                }
            }
            ReqTxState::Fail => {
                self.step.finish.next = true;
                self.req_we.next = true;
                self.win_we.next = true;
                self.decided.next = true;
                self.nil.next = true;
                self.state.d.next = ReqTxState::Idle;
                if self.step.front.val() {
                    self.state.d.next = ReqTxState::Handoff;
                }
            }
            ReqTxState::Handoff => {
                self.retire_req.next = true;
                if self.retire_take.val() {
                    self.state.d.next = ReqTxState::Idle;
                }
            }
            _ => {
                self.state.d.next = ReqTxState::Idle;
            }
        }
        // The packet's descriptor: the kept one if it is this WQE's, else read (and kept once it parses).
        if self.to_desc.val() {
            if self.kept.q.val()
                & (self.kept_qpn.q.val() == self.qpn.q.val())
                & (self.kept_index.q.val() == self.step.index.val())
            {
                self.hit.d.next = 2.into();
            } else {
                self.desc.start.next = true;
                self.own_start.next = true;
                self.kept.d.next = false;
                self.kept_qpn.d.next = self.qpn.q.val();
                self.kept_index.d.next = self.step.index.val();
            }
        }
        // The fetch's read taken as the descriptor read: with nothing kept, the requester idle and `SendDesc`
        // free as the fetch starts. Its beats go to `SendDesc` until the read's last.
        if self.snooping.q.val() & self.snoop_valid.val() & self.snoop_last.val() {
            self.snooping.d.next = false;
        }
        if self.snoop_run.q.val() & self.desc.done.val() {
            self.snoop_run.d.next = false;
            self.sn_have.d.next = true;
            self.sn_ok.d.next = self.desc.ok.val() & !self.desc.inline_data.val();
        }
        if self.snoop_go.val() {
            self.sn_have.d.next = false;
            self.desc.index.next = self.snoop_index.val();
            if !self.kept.q.val() & !self.desc.busy.val() & (self.state.q.val() == ReqTxState::Idle) {
                self.desc.start.next = true;
                self.desc.snoop.next = true;
                self.snooping.d.next = true;
                self.snoop_run.d.next = true;
                self.sn_qpn.d.next = self.fetch_qpn.val();
                self.sn_index.d.next = self.snoop_index.val();
            }
        }
        // `SendDesc` started for the requester's own read: a snoop is cut short, and what it gave is gone.
        if self.own_start.val() {
            self.desc.cut.next = self.snooping.q.val() | self.snoop_run.q.val();
            self.snooping.d.next = false;
            self.snoop_run.d.next = false;
            self.sn_have.d.next = false;
        }
        // The fetch committed: what its read gave is kept (if it parses and is not inline), as if read for the
        // WQE's first packet.
        if self.commit.val()
            & self.sn_have.q.val()
            & !self.kept.q.val()
            & (self.sn_qpn.q.val() == self.fetch_qpn.val())
            & (self.sn_index.q.val() == self.commit_index.val())
        {
            self.primed.next = true;
            self.sn_have.d.next = false;
            self.kept.d.next = self.sn_ok.q.val();
            self.kept_qpn.d.next = self.sn_qpn.q.val();
            self.kept_index.d.next = self.sn_index.q.val();
        }
        // A QP's records written by a command: what is kept may be stale.
        if self.cmd.val() {
            self.kept.d.next = false;
            self.sn_have.d.next = false;
        }
        if self.reset.val() {
            self.state.d.next = ReqTxState::Idle;
            self.kept.d.next = false;
            self.hit.d.next = 0.into();
            self.snooping.d.next = false;
            self.snoop_run.d.next = false;
            self.sn_have.d.next = false;
        }
    }
}

/// What the packet of the QP in hand does to its contexts, and its TX record: from the QP's `qp_attr` and
/// `qp_req`, the entry at the cursor, `ReqSeg`'s answers and the tick now, the `qp_req` record
/// after the packet (the model's `req::start` for an entry not started, the cursor, cursor PSN, high PSN
/// and AckReq count moved on, the ACK timer armed if it was not) or, with `finish`, after the entry finished
/// without a packet, failed with `status` (`start` then `finish`: the PSNs given, the READ or atomic's place given back, `oldest`
/// moved to `oldest_at` if it was the entry), and the entry after (started; finished with `status` on a
/// failure). Also the fields the block needs by name (`qp_req`'s and the entry's, the SQ counter of the
/// entry and its window slot), the gather's list (the SGEs, or the slot's inline bytes as one) and the TX
/// record: the headers with the solicited bit, the RETH, the AtomicETH, the immediate and the payload length.
/// For a raw packet QP (the model's `raw::next_frame`): the checks of its front entry, the gather of its
/// `len` bytes from offset 0, the record of a raw frame (verdict `NotRoce`, the payload its `len`), and with
/// `finish` the entry finished as its frame goes (with `status` unless it is 0: then no frame) and nothing else
/// moved (the model's `finish` alone).
#[derive(LogicBlock)]
pub struct ReqStep {
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub entry: Signal<In, Bits<WQE_BITS>>,
    pub next_psn: Signal<In, Bits<24>>,
    pub last: Signal<In, Bit>,
    pub since_next: Signal<In, Bits<6>>,
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    pub finish: Signal<In, Bit>,
    pub status: Signal<In, Bits<5>>,
    pub oldest_at: Signal<In, Bits<8>>,
    pub hdr: Signal<In, Bits<{ meta::BITS }>>,
    pub solicited: Signal<In, Bit>,
    pub has_reth: Signal<In, Bit>,
    pub reth_va: Signal<In, Bits<64>>,
    pub reth_len: Signal<In, Bits<32>>,
    pub payload_len: Signal<In, Bits<16>>,
    pub rkey: Signal<In, Bits<32>>,
    pub va: Signal<In, Bits<64>>,
    pub swap_add: Signal<In, Bits<64>>,
    pub compare: Signal<In, Bits<64>>,
    pub imm: Signal<In, Bits<32>>,
    pub inline: Signal<In, Bit>,
    pub num: Signal<In, Bits<16>>,
    pub slot_addr: Signal<In, Bits<64>>,
    pub sges: Signal<In, Bits<SGES_BITS>>,
    pub count: Signal<In, Bits<8>>,
    pub off: Signal<In, Bits<32>>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    pub entry_next: Signal<Out, Bits<WQE_BITS>>,
    pub raw: Signal<Out, Bit>,
    /// A raw packet QP that may send (the model's `raw::sendable`: RTS, not flushing, a WQE in its window);
    /// its entry at the cursor (the front) goes out as a frame (`raw_send`) or fails with `raw_status` (0:
    /// it keeps the error its fetch gave it); `raw_inline_bad`: its inline data is not `len` bytes.
    pub raw_go: Signal<Out, Bit>,
    pub raw_send: Signal<Out, Bit>,
    pub raw_status: Signal<Out, Bits<5>>,
    pub raw_inline_bad: Signal<Out, Bit>,
    pub started: Signal<Out, Bit>,
    pub oldest_here: Signal<Out, Bit>,
    pub front: Signal<Out, Bit>,
    pub op: Signal<Out, Bits<4>>,
    pub flags: Signal<Out, Bits<4>>,
    pub len: Signal<Out, Bits<32>>,
    pub psn: Signal<Out, Bits<24>>,
    pub cursor_psn: Signal<Out, Bits<24>>,
    pub since: Signal<Out, Bits<6>>,
    pub wqes: Signal<Out, Bits<8>>,
    pub cursor: Signal<Out, Bits<8>>,
    pub cursor_next: Signal<Out, Bits<8>>,
    pub base: Signal<Out, Bits<16>>,
    pub index: Signal<Out, Bits<16>>,
    pub cursor_slot: Signal<Out, Bits<8>>,
    pub g_sges: Signal<Out, Bits<SGES_BITS>>,
    pub g_count: Signal<Out, Bits<8>>,
    pub g_off: Signal<Out, Bits<32>>,
    pub g_len: Signal<Out, Bits<32>>,
    /// The message's length, up to which the gather may read ahead (0 for a raw frame or inline data).
    pub g_end: Signal<Out, Bits<32>>,
    pub meta: Signal<Out, Bits<{ meta::BITS }>>,
    /// The packet's PSN is one sent before (behind `high_psn`).
    pub retransmit: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl ReqStep {
    pub fn new(profile: Profile) -> Self {
        ReqStep {
            attr: Signal::default(),
            req: Signal::default(),
            entry: Signal::default(),
            next_psn: Signal::default(),
            last: Signal::default(),
            since_next: Signal::default(),
            tick: Signal::default(),
            finish: Signal::default(),
            status: Signal::default(),
            oldest_at: Signal::default(),
            hdr: Signal::default(),
            solicited: Signal::default(),
            has_reth: Signal::default(),
            reth_va: Signal::default(),
            reth_len: Signal::default(),
            payload_len: Signal::default(),
            rkey: Signal::default(),
            va: Signal::default(),
            swap_add: Signal::default(),
            compare: Signal::default(),
            imm: Signal::default(),
            inline: Signal::default(),
            num: Signal::default(),
            slot_addr: Signal::default(),
            sges: Signal::default(),
            count: Signal::default(),
            off: Signal::default(),
            req_next: Signal::default(),
            entry_next: Signal::default(),
            raw: Signal::default(),
            raw_go: Signal::default(),
            raw_send: Signal::default(),
            raw_status: Signal::default(),
            raw_inline_bad: Signal::default(),
            started: Signal::default(),
            oldest_here: Signal::default(),
            front: Signal::default(),
            op: Signal::default(),
            flags: Signal::default(),
            len: Signal::default(),
            psn: Signal::default(),
            cursor_psn: Signal::default(),
            since: Signal::default(),
            wqes: Signal::default(),
            cursor: Signal::default(),
            cursor_next: Signal::default(),
            base: Signal::default(),
            index: Signal::default(),
            cursor_slot: Signal::default(),
            g_sges: Signal::default(),
            g_count: Signal::default(),
            g_off: Signal::default(),
            g_len: Signal::default(),
            g_end: Signal::default(),
            meta: Signal::default(),
            retransmit: Signal::default(),
            profile: Param(profile),
        }
    }
}

impl Logic for ReqStep {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_requester.rs).
    }

    fn connect(&mut self) {
        self.req_next.connect();
        self.entry_next.connect();
        self.raw.connect();
        self.raw_go.connect();
        self.raw_send.connect();
        self.raw_status.connect();
        self.raw_inline_bad.connect();
        self.started.connect();
        self.oldest_here.connect();
        self.front.connect();
        self.op.connect();
        self.flags.connect();
        self.len.connect();
        self.psn.connect();
        self.cursor_psn.connect();
        self.since.connect();
        self.wqes.connect();
        self.cursor.connect();
        self.cursor_next.connect();
        self.base.connect();
        self.index.connect();
        self.cursor_slot.connect();
        self.g_sges.connect();
        self.g_count.connect();
        self.g_off.connect();
        self.g_len.connect();
        self.g_end.connect();
        self.meta.connect();
        self.retransmit.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(step_verilog(&self.profile.0))
    }
}

/// The opcodes (of every class) that carry extended header `h`, as a Verilog condition on `opcode`.
fn carries(h: u16) -> String {
    let codes: Vec<String> = (0..=255u8)
        .filter(|&o| Opcode(o).info().is_some_and(|i| i.has(h)))
        .map(|o| format!("opc == 8'h{o:02x}"))
        .collect();
    if codes.is_empty() {
        "1'b0".into()
    } else {
        codes.join(" || ")
    }
}

/// The Verilog body of `ReqStep` for profile `p`.
pub fn step_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, rl, wl) = (&c.attr, &c.req, &c.wqe);
    let a = |n: &str| slice(al, "attr", n);
    let r = |n: &str| slice(rl, "req", n);
    let w = |n: &str| slice(wl, "entry", n);
    let (wb, rw) = (width(rl, "wqes"), width(rl, "rd_atomic"));
    assert!(wb < 8, "a window index fits the walks' 8 bits with room");
    let op = |o: SendOp| format!("{} == 4'd{}", w("op"), o as u8);
    let mut v = entry_packets(&c, "entry", "attr");
    v.extend(window_base(&c, "attr", "req"));
    v.extend(ack_deadline(&c, "attr", "tick"));
    let sl = recv_sge();
    let field = |n: &str| sl.slice(n).map(|(lsb, w)| (lsb as usize, w as usize)).expect("an SGE field");
    let ((alsb, aw), (llsb, lw)) = (field("addr"), field("length"));
    v.extend([
        format!("wire [7:0] opc = {};", meta::select("hdr", "opcode")),
        format!(
            "wire rd_op = {} || {} || {};",
            op(SendOp::RdmaRead),
            op(SendOp::AtomicCmpSwp),
            op(SendOp::AtomicFetchAdd)
        ),
        format!("wire was_started = {};", w("started")),
        format!("wire [{}:0] cur = {};", wb - 1, r("cursor")),
        format!("wire [23:0] behind = {} - {};", r("cursor_psn"), r("high_psn")),
        "wire resent = behind[23];".into(),
        "always @(*) retransmit = resent;".into(),
        "wire unused_behind = ^behind[22:0];".into(),
        format!("wire arm = !{} && tmo != 5'd0;", r("timer_valid")),
        format!("wire [{}:0] inline_sge = 0;", SGES_BITS - 1),
        format!("wire is_raw = {};", a("raw")),
        format!("wire [31:0] wlen = {};", w("len")),
        format!("wire len_ok = wlen >= 32'd{} && wlen <= 32'd{};", wire::eth::HEADER_LEN, wire::MAX_FRAME_LEN),
        format!("wire fetch_failed = {};", w("error_valid")),
        format!("wire is_send = {};", op(SendOp::Send)),
        "wire failing = finish && status != 5'd0;".into(),
        format!("wire [63:0] inline_addr = slot_addr + 64'd{SEND_DATA};"),
    ]);
    let (rd, req_e) = build(rl, "req", "rs", |name, _| {
        Some(match name {
            "cursor" => format!("finish ? cur : cur + {{{}'d0, last}}", wb - 1),
            "oldest" => format!("(finish && {} == cur) ? oldest_at[{}:0] : {}", r("oldest"), wb - 1, r("oldest")),
            "rd_atomic" => format!(
                "{} + ((!was_started && rd_op) ? {rw}'d1 : {rw}'d0) - ((finish && rd_op) ? {rw}'d1 : {rw}'d0)",
                r("rd_atomic")
            ),
            "psn" => format!("(was_started || is_raw) ? {} : {} + npkts", r("psn"), r("psn")),
            "cursor_psn" => format!("finish ? {} : next_psn", r("cursor_psn")),
            "high_psn" => format!("(finish || resent) ? {} : next_psn", r("high_psn")),
            "pkts_since_ackreq" => format!("finish ? {} : since_next", r("pkts_since_ackreq")),
            "timer_valid" => format!("(!finish && arm) ? 1'b1 : {}", r("timer_valid")),
            "timer" => format!("(!finish && arm) ? deadline : {}", r("timer")),
            _ => return None,
        })
    });
    v.extend(rd);
    let (ed, entry_e) = build(wl, "entry", "es", |name, _| {
        Some(match name {
            "started" => "1'b1".into(),
            "acked" => format!("finish ? 1'b1 : {}", w(name)),
            "error_valid" => format!("failing ? 1'b1 : {}", w(name)),
            "status" => format!("failing ? status : {}", w("status")),
            "vendor_err" => format!("failing ? 8'd0 : {}", w("vendor_err")),
            _ => return None,
        })
    });
    v.extend(ed);
    let set = |name: &str, val: &str| {
        let (lsb, bits) = meta::field(name);
        format!("    meta[{}:{lsb}] = {val};", lsb + bits - 1)
    };
    let flag = |name: &str, val: &str| {
        let (lsb, _) = meta::field(name);
        format!("    meta[{lsb}] = {val};")
    };
    v.extend([
        format!("wire has_atomic = {};", carries(hdr::ATOMIC_ETH)),
        format!("wire has_immdt = {};", carries(hdr::IMMDT)),
        format!("wire has_ieth = {};", carries(hdr::IETH)),
        "wire unused_in = ^oldest_at ^ ^entry ^ ^attr ^ ^req;".into(),
        "always @(*) begin".into(),
        format!("    req_next = {{{}'d0, {req_e}}};", REQ_BITS - rl.width() as usize),
        format!("    entry_next = {{{}'d0, {entry_e}}};", WQE_BITS - wl.width() as usize),
        "    raw = is_raw;".into(),
        format!(
            "    raw_go = is_raw && !{} && {} == 3'd{} && nwqes != {wb}'d0;",
            a("flushing"),
            a("state"),
            QpState::Rts as u8
        ),
        "    raw_send = !fetch_failed && is_send && len_ok;".into(),
        format!(
            "    raw_status = fetch_failed ? 5'd0 : !is_send ? 5'd{} : !len_ok ? 5'd{} : 5'd0;",
            WcStatus::LocQpOpErr as u8,
            WcStatus::LocLenErr as u8
        ),
        "    raw_inline_bad = inline && {16'd0, num} != wlen;".into(),
        "    started = was_started;".into(),
        format!("    oldest_here = {} == cur;", r("oldest")),
        format!("    front = cur == {wb}'d0;"),
        format!("    op = {};", w("op")),
        format!("    flags = {};", w("flags")),
        format!("    len = {};", w("len")),
        format!("    psn = {};", r("psn")),
        format!("    cursor_psn = {};", r("cursor_psn")),
        format!("    since = {};", r("pkts_since_ackreq")),
        format!("    wqes = {{{}'d0, nwqes}};", 8 - wb),
        format!("    cursor = {{{}'d0, cur}};", 8 - wb),
        format!("    cursor_next = {{{}'d0, cur}} + 8'd1;", 8 - wb),
        "    base = sq_base;".into(),
        format!("    index = sq_base + {{{}'d0, cur}};", 16 - wb),
        format!("    cursor_slot = sq_base[7:0] + {{{}'d0, cur}};", 8 - wb),
        "    g_sges = inline ? inline_sge : sges;".into(),
        format!("    g_sges[{}:{alsb}] = inline ? inline_addr : sges[{}:{alsb}];", alsb + aw - 1, alsb + aw - 1),
        format!(
            "    g_sges[{}:{llsb}] = inline ? {{{}'d0, num}} : sges[{}:{llsb}];",
            llsb + lw - 1,
            lw - 16,
            llsb + lw - 1
        ),
        "    g_count = inline ? 8'd1 : count;".into(),
        "    g_off = is_raw ? 32'd0 : off;".into(),
        "    g_len = is_raw ? wlen : {16'd0, payload_len};".into(),
        format!("    g_end = is_raw || inline ? 32'd0 : {};", w("len")),
        "    meta = hdr;".into(),
        flag("solicited", "solicited"),
        // The extended headers share a union (`meta::ext_slot`): each written only when present, over
        // the header record's zeros.
        flag("has_reth", "has_reth"),
        format!("    if (has_reth) {}", set("reth", "{reth_va, rkey, reth_len}").trim_start()),
        flag("has_atomic_eth", "has_atomic"),
        format!("    if (has_atomic) {}", set("atomic_eth", "{va, rkey, swap_add, compare}").trim_start()),
        flag("has_immdt", "has_immdt"),
        format!("    if (has_immdt) {}", set("immdt", "imm").trim_start()),
        flag("has_ieth", "has_ieth"),
        format!("    if (has_ieth) {}", set("ieth", "imm").trim_start()),
        set("payload_len", "payload_len"),
        "    if (is_raw) begin".into(),
        format!("        meta = {}'d0;", meta::BITS),
        format!("    {}", set("verdict", &format!("4'd{}", Verdict::NotRoce as u8))),
        format!("    {}", set("payload_len", "wlen[15:0]")),
        "    end".into(),
        "end".into(),
    ]);
    v
}
