//! `RxDispatch`: what happens to each frame the RX pipeline has parsed, the model's `recv::receive` as far as
//! the engines built so far go. A frame's record is taken, its QP's contexts, GID entry and MR entry are read
//! (`RxRoute` names the QP and the GID, `RespCheck` the key), and with the route, the check chain's verdict
//! and `RespAdvance`'s bookkeeping in hand one decision is made, in one cycle (`decided`, the trace's
//! `Rx` decision): a WRITE the chain passed has its QP's next `qp_resp` record written back and its payload
//! placed in host memory (`DmaPlace`, at the cursor); a SEND packet the chain passed, or a WRITE's last
//! packet with immediate, has its receive WQE fetched (`RecvWqe`, through the DMA read port; a message's later
//! packets use what it fetched for the first while `WqeCache` says it stands) and is decided
//! once the WQE's own SGEs are in (`RespSend`; the read's other beats come in while it goes on, and the
//! dispatch starts nothing else until they have, as after a send WQE's fetch): the QP's RQ consumer counter and `qp_resp` record written back, a
//! SEND's payload scattered over the WQE's list (`DmaScatter`), a WRITE's placed, and the receive CQE
//! posted at the message's end (`CqeWrite`, through the responder's CQ port; its beats after the
//! payload's), with the completion event an armed CQ fires (`EqeWrite`, its beats after the CQE's, then the
//! interrupt an armed EQ raises); a SEND or WRITE packet executed before has the QP's
//! ACK slot set again (`RespDuplicate`) and its payload drained; the first request past ePSN, or a request
//! in sequence that needs a receive WQE and finds none, has a sequence-error or RNR NAK queued in the QP's
//! response ring (`RespQueue`: the coalesced ACK moving in ahead of it takes a second write, `QueueMore`);
//! a frame whose only effect in the model is a counter (another MAC or peer, malformed, a P_Key, QP or
//! QP-state drop, a sequence or queue-full drop) is dropped, its payload drained; a request in sequence the
//! check chain fails (Invalid Request: a bad opcode sequence or length, a SEND with invalidate; Remote
//! Access: an R_Key, bounds or access failure) and a SEND whose WQE fails its checks or is too short have a
//! fatal NAK queued (`RespQueue`), the SEND's receive completed in error. A READ request the chain passed
//! has its responses queued (`RespQueue`'s READ mode; `RespTx` sends them) and its resource kept in the QP's
//! ring (`Rings::resources`). A READ executed before has the QP's resources scanned newest first
//! (`ResScan`, one every two cycles), the first whose PSNs cover it matched (`DupRead`): asked within it,
//! its responses are queued again (from its first PSN, at the READ's MSN) when there is room, or a remote
//! access NAK when its key fails now; otherwise it is ignored. An atomic the chain passed has its 8-byte
//! target read by DMA (`AtomRead`) and is decided once it is in: its atomic ACK queued and its resource kept
//! (`RespQueue`'s atomic mode), both ring entries written, then the new value (`AtomicOp`) written while the
//! context port is still held, so its ACK leaves after it; a target that cannot be read has a remote access
//! NAK queued. An atomic executed before is answered from the resource of the atomic at its PSN (the same
//! scan, `DupRead`'s `hit`) when there is room, never executed again. A positive ACK a QP's requester
//! sent for is the completer's (`Completer`, the model's `comp::respond`; first its walk, `AckWalk`): the
//! WQEs it covers finished, `comp_psn`, the retry counters and the ACK timer moved on (the decision),
//! then the finished WQEs popped from the window's front one at a time (`RetirePop`), each signaled or
//! failed one's CQE posted with the `wr_id` its window entry kept from the fetch (`Retire`), a failed one
//! taking the QP to ERR; the context port is held until the last CQE is out. A NAK, a READ response or an
//! atomic ACK walks the window the same way through the PSN before it (a reserved AETH through nothing);
//! `RespPlan` then says what is left: data placed (a READ response in sequence, an atomic ACK:
//! `RespMatch`), the oldest WQE failed (a fatal NAK, an exhausted retry count, a malformed response),
//! go-back-N (a sequence NAK, a gap: responses lost), an RNR wait; `RespRun` does it (the WQE's slot read
//! again for its scatter list and the scatter started, the finished entries walked past, the cursor's new
//! place found) and its end is the decision; the data is scattered (an atomic's original value as one
//! beat) before the retire, the port held throughout.
//! A frame that is not RoCEv2 (its payload the whole frame) is `engine::raw`'s when the control queue
//! answers it (`raw`, with its decision; `raw_ctrl` says so beforehand) and is dropped here; otherwise it
//! is the raw packet QP's (`CmdExec`'s `raw_qpn`, whose contexts are read instead of the BTH's QP), the
//! model's `raw::receive`: with a receive WQE posted it is fetched (`RecvWqe`) and the frame decided and
//! scattered over it as a SEND's only packet (`RespSend`'s raw mode, the CQE its length), a WQE that
//! fails or is too short taking the QP to ERR (`err_we`); without a WQE, or without such a QP, it is
//! dropped and counted.
//! Everything else (CNPs, CE marks) is not built yet: it is dropped too and counted in
//! `unhandled`, so that a run which needs it shows it. A CQE post that overruns its CQ raises
//! the CQ error event the first time, and the post of a live QP's CQE moves the QP to ERR (`err_we`, its
//! `qp_resp` as the model's `enter_err` leaves it) with its fatal event (`EvPost`, after the payload).
//!
//! When nothing else wants the context port (no frame waiting, the transmit side idle), the dispatch runs
//! the flush of QPs in ERR, the model's `flush_one`, one step at a time (`FlushPick`): it scans the QPs,
//! reading each one's contexts, and a QP with a WQE left has it completed: one in a ring has its control
//! segment read (the WQE port) and its consumer counter (or the receive in progress) written back, one in
//! the window is popped; a WR_FLUSH_ERR CQE is posted, with its event, as a receive's (the trace's `Flush`
//! decision). The scan runs once a QP enters ERR (`err_in`: a MODIFY_QP or a fatal NAK) and stops after a
//! pass that flushed nothing; an SQ or RQ doorbell after a QP has entered ERR (`wqe_posted`) starts it
//! again, so a WQE posted to a QP in ERR is flushed too, and a NIC with no QP in ERR costs nothing.
//!
//! When no frame is waiting (or one has waited its turns), it also fetches send WQEs into the requesters'
//! windows, the model's `fetch_send_wqe` (the trace's `FetchSq` decision): it visits a QP `FetchWake` says
//! may have one (an SQ doorbell or a command since its last visit found none; while the transmit sides are
//! busy, only the QP the requester's is at, and only while no other QP is awake, so that it streams one
//! QP's messages back to back and no QP waits on another's), reads its contexts, and if
//! `SqFetch` says it may fetch, reads and checks the WQE (`WqeFetch`, on the DMA read and MR ports) while
//! the transmit sides have the context port (a message streams on while the next WQE is read), then takes
//! the port again, reads the contexts again and, if the QP may still fetch that WQE, writes the window
//! entry, `qp_req` and the SQ consumer counter; a WQE that fails into an empty window retires at once
//! (`Retire`: its CQE, the QP to ERR). The flush empties a QP's window first (its front
//! entry read, `OldestWalk` finding the oldest unfinished entry behind it).
//!
//! Between its context reads and its write-back (`ctx_busy`, which spans a WQE's fetch and its read) no
//! command may look up or commit; a command
//! between its lookup and its commit, or the responder's transmit side holding the context port (`hold`),
//! keeps a new frame from starting. Each side's decision then
//! sees the other's whole, as the model applies them one after another.

use super::cmd::exec::CQ_BITS;
use super::cmd::exec::{ATTR_BITS, MR_BITS, REQ_BITS, RESP_BITS};
use super::comp::ack::RetirePop;
use super::comp::completer::Completer;
use super::comp::retire::Retire;
use super::counts::{RxCount, INC_BITS};
use super::cq::CqeWrite;
use super::eq::EqeWrite;
use super::flush::{what, EnterErr, FlushPick};
use super::recv::{route, RxRoute};
use super::req::ready::WQE_BITS;
use super::req::window::{OldestWalk, SqFetch};
use super::req::wqe_fetch::WqeFetch;
use super::resp::advance::RespAdvance;
use super::resp::atomic::AtomicOp;
use super::resp::check::{verdict, RespCheck};
use super::resp::dup_read::{DupRead, ResScan};
use super::resp::duplicate::RespDuplicate;
use super::resp::opcode_flags;
use super::resp::queue::{ReadArgs, RespQueue, Rings, ITEM_BITS, RES_BITS};
use super::resp::recv_wqe::RecvWqe;
use super::resp::send::RespSend;
use super::resp::wqe_cache::WqeCache;
use crate::host::adapt::WriteWiden;
use crate::host::place::DmaPlace;
use crate::host::scatter::DmaScatter;
use crate::kit::*;
use crate::record::be_slice;
use crate::rx::meta::{self, Verdict};
use wire::contract::eqe::EventKind;
use wire::contract::profile::Profile;
use wire::contract::qpc::TICK_BITS;
use wire::ext::syndrome;
use wire::ext::AtomicAckEthRepr;

/// What the decision does with a frame (`Action::action`).
pub mod action {
    pub const DROP: u8 = 0;
    pub const WRITE: u8 = 1;
    pub const UNHANDLED: u8 = 2;
    /// A SEND or WRITE executed before: acknowledged again.
    pub const DUP_ACK: u8 = 3;
    /// A request past ePSN, the first since the last in sequence: a sequence-error NAK queued.
    pub const SEQ_NAK: u8 = 4;
    /// A request in sequence that needs a receive WQE and finds none: an RNR NAK queued.
    pub const RNR_NAK: u8 = 5;
    /// A SEND packet, or a WRITE's last with immediate, the chain passed: its receive WQE fetched.
    pub const RECV: u8 = 6;
    /// A request in sequence the chain failed (Invalid Request, Remote Access): a fatal NAK queued.
    pub const FATAL_NAK: u8 = 7;
    /// A READ request the chain passed: its responses queued, its resource kept in the QP's ring.
    pub const READ: u8 = 8;
    /// A READ request executed before: the QP's resources scanned for it, its responses queued again.
    pub const DUP_READ: u8 = 9;
    /// An atomic request the chain passed: its target read, changed and written back, its ACK queued.
    pub const ATOMIC: u8 = 10;
    /// An atomic executed before: the QP's resources scanned for it, its ACK queued again.
    pub const DUP_ATOMIC: u8 = 11;
    /// A positive ACK for a QP that may take a response: the completer's walk (`AckWalk`), then the WQEs it
    /// finished retired from the window's front with their CQEs.
    pub const ACK: u8 = 12;
    /// A READ response for a QP that may take one: the completer's walk through the PSN before it, then the
    /// READ it answers checked and its payload placed (`RespRun`), the WQEs finished retired.
    pub const READ_RESP: u8 = 13;
    /// An atomic ACK for a QP that may take one: as a READ response, the original value placed.
    pub const ATOMIC_ACK: u8 = 14;
    /// A frame that is not RoCEv2, for the raw packet QP with a receive WQE posted: the WQE fetched, the
    /// frame scattered over it (the model's `raw::receive`).
    pub const RAW_RECV: u8 = 15;
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum DispatchState {
    Idle,
    /// The record is in: the QP's contexts are being read.
    Look,
    /// The contexts are in: the route settles, the MR entry is being read.
    Ctx,
    /// The MR entry is in: the check chain settles.
    Check,
    /// Route, verdict and bookkeeping in hand: the decision.
    Decide,
    /// A NAK's second ring entry being written (the ACK it moved is the first).
    QueueMore,
    /// A WRITE's payload going to `DmaPlace`.
    Place,
    /// Its last write beat still to go out.
    PlaceEnd,
    /// A dropped frame's payload being discarded.
    Drain,
    /// The receive WQE being fetched.
    Wqe,
    /// The WQE in and the payload's fit known: the decision.
    Exec,
    /// A SEND's payload going to `DmaScatter` (or drained by it, when it does not fit).
    Scatter,
    /// Its last write beat still to go out.
    ScatterEnd,
    /// The receive CQE's beats going out, after the payload's.
    CqeEnd,
    /// The completion event's EQE beats going out, after the CQE's; then the interrupt.
    EqeEnd,
    /// A failed SEND's fatal NAK being queued and the QP's record written back.
    Nak,
    /// A duplicate READ: the resource the scan is at being read (none left: ignored, decided).
    DupLook,
    /// Its resource in: the READ that covers the request's PSN, or on to the next.
    DupMatch,
    /// The READ found: the decision (its responses queued again, a fatal NAK for a key that fails now, or
    /// nothing); or the atomic found: its ACK queued again.
    DupExec,
    /// An atomic: its target being read.
    AtomRead,
    /// The value in: the queue takes it.
    AtomQueue,
    /// The decision: its ACK and resource queued (a fatal NAK if the read failed).
    AtomExec,
    /// The new value's write beat going out.
    AtomWrite,
    /// A flush step: the scanned QP's contexts being read.
    FlushLook,
    /// Its contexts in: whether it has a WQE to flush (`FlushPick`).
    FlushCtx,
    /// The control segment of a WQE a flush step completes from its ring (the SQ's or the RQ's).
    CtrlRead,
    /// It is in: the counter written back and the CQE posted.
    FlushExec,
    /// A CQ overrun's events being posted: the CQ error, then the QP's fatal event.
    EvPost,
    /// A flush step of the window: its front entry coming in.
    FlushFront,
    /// The oldest unfinished entry behind the front being found (`OldestWalk`).
    FlushWalk,
    /// A fetch visit: the QP's contexts being read.
    FetchLook,
    /// Its contexts in: whether it may fetch (`SqFetch`).
    FetchCtx,
    /// The send WQE being read and checked (`WqeFetch`), the context port left to the transmit sides.
    FetchRead,
    /// It is in: the context port awaited, to read the QP's contexts again (`FetchLook`) and commit.
    FetchWait,
    /// It is in: the window entry, `qp_req` and the SQ counter written (or, failed into an empty window,
    /// its CQE posted and the QP to ERR).
    FetchExec,
    /// An ACK: the completer's walk over the window (`AckWalk`); the decision at its end.
    AckRun,
    /// A response with more to do than its walk, or a timer's end: `RespRun`; the decision at its end.
    RspRun,
    /// A due timer (`TimerScan`): the QP's contexts being read.
    TmrLook,
    /// They are in: the timer is still due (else it is let go), and `RespRun` starts.
    TmrCtx,
    /// A retire: the QP's records settling after a write.
    RetLook,
    /// The window's front entry being read.
    RetFront,
    /// It is in: finished or not, and whether it posts a CQE.
    RetCheck,
    /// It leaves the window: `qp_req` written, its CQE posted (a failed one takes the QP to ERR).
    RetExec,
}

#[derive(LogicBlock)]
pub struct RxDispatch<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The RX pipeline's records and payloads (beats of `K` bytes, realigned to lane 0).
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    pub meta_valid: Signal<In, Bit>,
    pub meta_ready: Signal<Out, Bit>,
    pub pay_data: Signal<In, Bits<D>>,
    pub pay_keep: Signal<In, Bits<K>>,
    pub pay_last: Signal<In, Bit>,
    pub pay_valid: Signal<In, Bit>,
    pub pay_ready: Signal<Out, Bit>,
    /// The context port is another's: a command between its lookup and its commit (or looking up this
    /// cycle), or the responder's transmit side.
    pub hold: Signal<In, Bit>,
    /// The requester's transmit side hands QP `retire_qpn` over, the context port with it: a WQE failed as
    /// its packet was built at the window's front, and retires (`retire_take` the cycle it is taken).
    pub retire_req: Signal<In, Bit>,
    pub retire_qpn: Signal<In, Bits<24>>,
    pub retire_take: Signal<Out, Bit>,
    /// The timer tick now (the completer re-arms the ACK timer from it).
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    /// Between the context reads and the write-back.
    pub ctx_busy: Signal<Out, Bit>,
    /// Holding the context port, or taking a record (so taking it) this cycle.
    pub claim: Signal<Out, Bit>,
    /// No frame in hand and no write beat left to go.
    pub idle: Signal<Out, Bit>,
    /// No write beat left to go and none decided until the context port is taken again: idle, or a fetch's
    /// WQE being read (a READ response's payload read may start, its responder holding the port).
    pub wr_quiet: Signal<Out, Bit>,
    /// The context ports (`CmdExec`'s `rs_*`).
    pub qp_index: Signal<Out, Bits<24>>,
    pub qp_valid: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub resp: Signal<In, Bits<RESP_BITS>>,
    pub mr_index: Signal<Out, Bits<24>>,
    pub mr: Signal<In, Bits<MR_BITS>>,
    pub gid_index: Signal<Out, Bits<4>>,
    pub gid: Signal<In, Bits<128>>,
    pub gid_valid: Signal<In, Bit>,
    pub mac: Signal<In, Bits<48>>,
    pub resp_we: Signal<Out, Bit>,
    pub resp_qpn: Signal<Out, Bits<24>>,
    pub resp_next: Signal<Out, Bits<RESP_BITS>>,
    /// The response rings' write port (`Rings::items`; the QP is `resp_qpn`).
    pub item_we: Signal<Out, Bit>,
    pub item_slot: Signal<Out, Bits<8>>,
    pub item: Signal<Out, Bits<ITEM_BITS>>,
    /// Posted DMA writes of placed payload.
    pub wr_valid: Signal<Out, Bit>,
    pub wr_ready: Signal<In, Bit>,
    pub wr_addr: Signal<Out, Bits<64>>,
    pub wr_data: Signal<Out, Bits<D>>,
    pub wr_strb: Signal<Out, Bits<K>>,
    /// The write beat is a CQE's (else placed payload).
    pub wr_cqe: Signal<Out, Bit>,
    /// Placed payload is the completer's (a READ response's or an atomic ACK's), else the responder's.
    pub wr_comp: Signal<Out, Bit>,
    /// The DMA read of receive WQEs (requester port of `DmaReadMux`) and its completion beats, 8 bytes a
    /// beat at every width (`host::adapt::CplNarrow` in front of it on a wider datapath).
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<64>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// A command completed: the WQE cache forgets what it holds.
    pub clear_cache: Signal<In, Bit>,
    /// The RQ consumer counter's write (the QP is `resp_qpn`).
    pub rq_ci_we: Signal<Out, Bit>,
    pub rq_ci: Signal<Out, Bits<16>>,
    /// The CQ port (`CmdExec`'s `rs_cq*`).
    pub cq_index: Signal<Out, Bits<16>>,
    pub cq: Signal<In, Bits<CQ_BITS>>,
    pub cq_we: Signal<Out, Bit>,
    pub cq_next: Signal<Out, Bits<CQ_BITS>>,
    pub cq_disarm: Signal<Out, Bit>,
    /// The EQ's entry (`CmdExec`'s `eq`) and its write after a post (`ev_eq_*`).
    pub eq: Signal<In, Bits<CQ_BITS>>,
    pub eq_we: Signal<Out, Bit>,
    pub eq_pi: Signal<Out, Bits<32>>,
    pub eq_disarm: Signal<Out, Bit>,
    /// The write beat is an EQE's.
    pub wr_eqe: Signal<Out, Bit>,
    /// The interrupt (MSI-X vector 0), a cycle's pulse after the EQE that raised it is written.
    pub irq: Signal<Out, Bit>,
    /// The decision trace: a frame decided this cycle; the QP whose payload the write beats carry; a CQE
    /// posted this cycle to CQ `cq_index`, its slot (the CQ's producer counter) and the ring's size.
    pub decided: Signal<Out, Bit>,
    /// A frame decided this cycle that is not RoCEv2 (route `RAW`), for `engine::raw`.
    pub raw: Signal<Out, Bit>,
    /// The raw packet QP that takes frames that are not RoCEv2 (`CmdExec`'s `raw_any`, `raw_qpn`), and
    /// whether the control queue answers the frame in hand instead (`RawRecv`'s held frame, for an address
    /// of the NIC's).
    pub raw_any: Signal<In, Bit>,
    pub raw_pick: Signal<In, Bits<24>>,
    pub raw_ctrl: Signal<In, Bit>,
    pub wr_qpn: Signal<Out, Bits<24>>,
    pub posted: Signal<Out, Bit>,
    pub posted_slot: Signal<Out, Bits<32>>,
    pub posted_log: Signal<Out, Bits<4>>,
    /// The decision trace: an EQE posted this cycle, in slot `eqe_slot` (the EQ's producer counter).
    pub posted_eqe: Signal<Out, Bit>,
    pub eqe_slot: Signal<Out, Bits<32>>,
    /// What the counters count (`engine::counts`): the counters of the frame in hand's class (counted when
    /// it is decided, `decided`), and of the later decision taken this cycle; the CQE posted is in error;
    /// an event was lost (no EQ, or no room).
    pub cnt_class: Signal<Out, Bits<INC_BITS>>,
    pub cnt_out: Signal<Out, Bits<INC_BITS>>,
    pub rx_len: Signal<Out, Bits<16>>,
    pub cqe_err: Signal<Out, Bit>,
    pub eqe_lost: Signal<Out, Bit>,
    /// Frames that needed what is not built yet.
    pub unhandled: Signal<Out, Bits<32>>,
    /// A QP entered ERR this cycle (a command or a fatal NAK): the flush scan runs.
    pub err_in: Signal<In, Bit>,
    /// A QP's SQ or RQ doorbell was taken this cycle: once a QP has entered ERR, the scan runs again (the
    /// WQE may be one to flush).
    pub wqe_posted: Signal<In, Bit>,
    /// The flush scan is not running.
    pub flush_idle: Signal<Out, Bit>,
    /// The responder's transmit side wants nothing of the context port (the scan lets it go first).
    pub tx_idle: Signal<In, Bit>,
    /// A transmit side waits for the context port (`ReqTx::want`, `RespTx::want`).
    pub tx_wants: Signal<In, Bit>,
    /// The SQ consumer counter's write (the QP is `resp_qpn`).
    pub sq_ci_we: Signal<Out, Bit>,
    pub sq_ci: Signal<Out, Bits<16>>,
    /// The decision trace: a flush step of QP `wr_qpn` decided this cycle (its CQE posted with it).
    pub flushed: Signal<Out, Bit>,
    /// QP `resp_qpn` enters ERR (its CQ refused its CQE): `CmdExec`'s `rs_err_we`.
    pub err_we: Signal<Out, Bit>,
    /// The requester's `qp_req` record on the context port (`CmdExec`'s `rs_req`), and the write of QP
    /// `resp_qpn`'s next one.
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub req_we: Signal<Out, Bit>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    /// The requesters' windows (`Rings::window`; the QP is `resp_qpn`): the write of an entry fetched, and
    /// the flush's reads (slot `win_r_slot`, its entry on `win_r` the next cycle).
    pub win_we: Signal<Out, Bit>,
    pub win_w_slot: Signal<Out, Bits<8>>,
    pub win_w: Signal<Out, Bits<WQE_BITS>>,
    pub win_r_slot: Signal<Out, Bits<8>>,
    pub win_r: Signal<In, Bits<WQE_BITS>>,
    /// The fetch's wake-ups (`FetchWake`): a QP to visit; the visit of QP `resp_qpn` starts, or found
    /// nothing to fetch.
    pub wake_any: Signal<In, Bit>,
    pub wake_pick: Signal<In, Bits<24>>,
    /// QP `at_qpn`, the one the requester's transmit side is at, is the only QP awake: its next WQE may be
    /// fetched while that side streams. With another QP awake the fetch waits for the transmit sides to be
    /// idle, as the window of the QP in hand drains: no QP keeps the others from their turn, and the
    /// requester stays with one QP's messages while its descriptor and read-ahead serve them.
    pub at_alone: Signal<In, Bit>,
    pub at_qpn: Signal<In, Bits<24>>,
    pub wake_visit: Signal<Out, Bit>,
    pub wake_clear: Signal<Out, Bit>,
    /// The decision trace: QP `wr_qpn`'s next send WQE fetched into its window this cycle (the model's
    /// `FetchSq`; a failed one fetched into an empty window retires at once, its CQE posted with it).
    pub fetched: Signal<Out, Bit>,
    /// With `fetched`: the SQ counter of the WQE fetched.
    pub fetched_index: Signal<Out, Bits<16>>,
    /// A fetch visit starts QP `wr_qpn`'s WQE read at SQ counter `fetch_go_index` this cycle, and the read's
    /// completion beats (`fetch_cpl`, with the port's data, error and last), for the requester's `SendDesc`
    /// to take as its own (`ReqTx`'s snoop).
    pub fetch_go: Signal<Out, Bit>,
    pub fetch_go_index: Signal<Out, Bits<16>>,
    pub fetch_cpl: Signal<Out, Bit>,
    /// The completer moved QP `wr_qpn`'s requester on (an ACK's decision, or an entry popped off its window):
    /// it may send, or fetch, again.
    pub comp_wake: Signal<Out, Bit>,
    /// A due timer (`TimerScan`): QP `tm_qpn`'s RNR wait (`tm_rnr`) or ACK timer, taken with `tm_take`.
    pub tm_fire: Signal<In, Bit>,
    pub tm_qpn: Signal<In, Bits<24>>,
    pub tm_rnr: Signal<In, Bit>,
    pub tm_take: Signal<Out, Bit>,
    /// The decision trace: QP `wr_qpn`'s timer (its RNR wait with `timer_rnr`) ran out this cycle (the
    /// model's `Timer`).
    pub timer_fired: Signal<Out, Bit>,
    pub timer_rnr: Signal<Out, Bit>,
    state: DFF<DispatchState>,
    rec: DFF<Bits<{ meta::BITS }>>,
    qpn: DFF<Bits<24>>,
    va: DFF<Bits<64>>,
    count: DFF<Bits<32>>,
    /// The frame in hand is a RECV action's (it ends through `CqeEnd`); a CQE's beats are owed.
    recv: DFF<Bit>,
    owe_cqe: DFF<Bit>,
    /// An EQE's beats are owed, and then the interrupt.
    owe_eqe: DFF<Bit>,
    owe_irq: DFF<Bit>,
    /// The flush: the step in hand is one (not a frame); the scan runs (a QP entered ERR, or a WQE was
    /// posted after one had, or the last pass flushed something) and the QP it is at; a WQE was flushed in
    /// this pass (or the scan was started again meanwhile); a QP has entered ERR since reset; the WQE's
    /// control segment as it comes in, its read failed, its request taken.
    flush: DFF<Bit>,
    flush_on: DFF<Bit>,
    err_seen: DFF<Bit>,
    /// The turns the next frame has given a fetch visit or a transmit side that waits for the port: two at
    /// most (a transmit side held off by something else, such as the other side, must not stop the
    /// frames), so a steady stream of frames cannot hold them off. Reset leaves none for the first frame.
    waited: DFF<Bits<2>>,
    flush_seen: DFF<Bit>,
    scan: DFF<Bits<16>>,
    hdr: DFF<Bits<128>>,
    hdr_err: DFF<Bit>,
    rd_sent: DFF<Bit>,
    // The last read of a receive WQE, a send WQE or a send WQE's descriptor still brings beats no longer
    // needed (those blocks decide before their read's end), on the port every read of the dispatch shares:
    // no read is offered, and no beat taken as another's, until they are in.
    drain: Signal<Local, Bit>,
    /// A fetch visit may start, and of which QP: the next awake with both transmit sides idle, or while they
    /// are busy the requester's QP when no other is awake (its read leaves them the port).
    fetch_may: Signal<Local, Bit>,
    fetch_qpn: Signal<Local, Bits<24>>,
    /// The step in hand is a fetch visit; a window flush's front entry and the oldest unfinished entry's
    /// index behind it.
    fetch: DFF<Bit>,
    /// A fetch visit's WQE is in (`WqeFetch`'s entry), read from SQ counter `fetch_index`: the contexts read
    /// again decide whether it is still the one to commit.
    fetch_have: DFF<Bit>,
    fetch_index: DFF<Bits<16>>,
    front: DFF<Bits<WQE_BITS>>,
    oldest_at: DFF<Bits<8>>,
    /// A CQ overrun's events owed: the CQ error (of the CQ posted to), the QP's fatal event (of QP `qpn`);
    /// the post that overran moved the QP to ERR.
    ev_cq_err: DFF<Bit>,
    ev_qp_fatal: DFF<Bit>,
    post_fatal: DFF<Bit>,
    /// The frame in hand is a response for the completer; and after its CQE, the retire goes on.
    comp: DFF<Bit>,
    comp_more: DFF<Bit>,
    /// The job in hand is a timer's end (the RNR wait's with `tmr_rnr`).
    tmr: DFF<Bit>,
    tmr_rnr: DFF<Bit>,
    /// A duplicate READ's scan: resources back from the newest.
    dup_i: DFF<Bits<8>>,
    /// An atomic's target as read, and whether the read failed.
    word: DFF<Bits<64>>,
    word_err: DFF<Bit>,
    /// The class of the frame in hand, kept from its first decision cycle.
    cls: DFF<Bits<INC_BITS>>,
    /// A raw packet QP took the frame in hand (not RoCEv2) as its contexts were read (`raw_any` then).
    raw_have: DFF<Bit>,

    rx_route: RxRoute,
    check: RespCheck,
    advance: RespAdvance,
    duplicate: RespDuplicate,
    queue: RespQueue,
    read_args: ReadArgs,
    resources: Rings<RES_BITS>,
    res_scan: ResScan,
    dup_read: DupRead,
    atomic_op: AtomicOp,
    /// The atomic's new value as a write beat of the datapath's width.
    atomic_wr: WriteWiden<D, K>,
    act: Action,
    place: DmaPlace<D, K>,
    recv_wqe: RecvWqe,
    cache: WqeCache,
    send: RespSend,
    scatter: DmaScatter<D, K>,
    cqe_wr: CqeWrite<D, K>,
    eqe_wr: EqeWrite<D, K>,
    pick: FlushPick,
    walk: OldestWalk,
    wqe_fetch: WqeFetch,
    sq_fetch: SqFetch,
    retire: Retire,
    completer: Completer,
    counts: RxCount,
    pop: RetirePop,
    enter_err: EnterErr,
    kind_cq_err: Constant<Bits<8>>,
    kind_qp_fatal: Constant<Bits<8>>,
    last_qp: Constant<Bits<16>>,
    pick_none: Constant<Bits<3>>,
    pick_sq: Constant<Bits<3>>,
    pick_recv: Constant<Bits<3>>,
    pick_rq: Constant<Bits<3>>,
    pick_win: Constant<Bits<3>>,
    completion: Constant<Bits<8>>,
    write: Constant<Bits<4>>,
    recv_act: Constant<Bits<4>>,
    raw_recv_act: Constant<Bits<4>>,
    unbuilt: Constant<Bits<4>>,
    raw_route: Constant<Bits<4>>,
    dup_ack: Constant<Bits<4>>,
    seq_nak: Constant<Bits<4>>,
    rnr_nak: Constant<Bits<4>>,
    fatal_nak: Constant<Bits<4>>,
    read_act: Constant<Bits<4>>,
    dup_read_act: Constant<Bits<4>>,
    atomic_act: Constant<Bits<4>>,
    dup_atomic_act: Constant<Bits<4>>,
    remote_access: Constant<Bits<8>>,
}

impl<const D: usize, const K: usize> RxDispatch<D, K> {
    pub fn new(profile: Profile) -> Self {
        RxDispatch {
            clock: Signal::default(),
            reset: Signal::default(),
            meta: Signal::default(),
            meta_valid: Signal::default(),
            meta_ready: Signal::default(),
            pay_data: Signal::default(),
            pay_keep: Signal::default(),
            pay_last: Signal::default(),
            pay_valid: Signal::default(),
            pay_ready: Signal::default(),
            hold: Signal::default(),
            retire_req: Signal::default(),
            retire_qpn: Signal::default(),
            retire_take: Signal::default(),
            tick: Signal::default(),
            ctx_busy: Signal::default(),
            claim: Signal::default(),
            idle: Signal::default(),
            wr_quiet: Signal::default(),
            qp_index: Signal::default(),
            qp_valid: Signal::default(),
            attr: Signal::default(),
            resp: Signal::default(),
            mr_index: Signal::default(),
            mr: Signal::default(),
            gid_index: Signal::default(),
            gid: Signal::default(),
            gid_valid: Signal::default(),
            mac: Signal::default(),
            resp_we: Signal::default(),
            resp_qpn: Signal::default(),
            resp_next: Signal::default(),
            item_we: Signal::default(),
            item_slot: Signal::default(),
            item: Signal::default(),
            wr_valid: Signal::default(),
            wr_ready: Signal::default(),
            wr_addr: Signal::default(),
            wr_data: Signal::default(),
            wr_strb: Signal::default(),
            wr_cqe: Signal::default(),
            wr_comp: Signal::default(),
            rd_valid: Signal::default(),
            rd_ready: Signal::default(),
            rd_addr: Signal::default(),
            rd_len: Signal::default(),
            cpl_valid: Signal::default(),
            cpl_data: Signal::default(),
            cpl_err: Signal::default(),
            cpl_last: Signal::default(),
            clear_cache: Signal::default(),
            rq_ci_we: Signal::default(),
            rq_ci: Signal::default(),
            cq_index: Signal::default(),
            cq: Signal::default(),
            cq_we: Signal::default(),
            cq_next: Signal::default(),
            cq_disarm: Signal::default(),
            eq: Signal::default(),
            eq_we: Signal::default(),
            eq_pi: Signal::default(),
            eq_disarm: Signal::default(),
            wr_eqe: Signal::default(),
            irq: Signal::default(),
            decided: Signal::default(),
            raw: Signal::default(),
            raw_any: Signal::default(),
            raw_pick: Signal::default(),
            raw_ctrl: Signal::default(),
            wr_qpn: Signal::default(),
            posted: Signal::default(),
            posted_slot: Signal::default(),
            posted_log: Signal::default(),
            posted_eqe: Signal::default(),
            eqe_slot: Signal::default(),
            cnt_class: Signal::default(),
            cnt_out: Signal::default(),
            rx_len: Signal::default(),
            cqe_err: Signal::default(),
            eqe_lost: Signal::default(),
            unhandled: Signal::default(),
            err_in: Signal::default(),
            wqe_posted: Signal::default(),
            flush_idle: Signal::default(),
            tx_idle: Signal::default(),
            tx_wants: Signal::default(),
            sq_ci_we: Signal::default(),
            sq_ci: Signal::default(),
            flushed: Signal::default(),
            err_we: Signal::default(),
            req: Signal::default(),
            req_we: Signal::default(),
            req_next: Signal::default(),
            win_we: Signal::default(),
            win_w_slot: Signal::default(),
            win_w: Signal::default(),
            win_r_slot: Signal::default(),
            win_r: Signal::default(),
            wake_any: Signal::default(),
            wake_pick: Signal::default(),
            at_alone: Signal::default(),
            at_qpn: Signal::default(),
            wake_visit: Signal::default(),
            wake_clear: Signal::default(),
            fetched: Signal::default(),
            fetched_index: Signal::default(),
            fetch_go: Signal::default(),
            fetch_go_index: Signal::default(),
            fetch_cpl: Signal::default(),
            comp_wake: Signal::default(),
            tm_fire: Signal::default(),
            tm_qpn: Signal::default(),
            tm_rnr: Signal::default(),
            tm_take: Signal::default(),
            timer_fired: Signal::default(),
            timer_rnr: Signal::default(),
            state: DFF::default(),
            rec: DFF::default(),
            qpn: DFF::default(),
            va: DFF::default(),
            count: DFF::default(),
            recv: DFF::default(),
            owe_cqe: DFF::default(),
            owe_eqe: DFF::default(),
            owe_irq: DFF::default(),
            flush: DFF::default(),
            flush_on: DFF::default(),
            err_seen: DFF::default(),
            waited: DFF::default(),
            flush_seen: DFF::default(),
            scan: DFF::default(),
            hdr: DFF::default(),
            hdr_err: DFF::default(),
            rd_sent: DFF::default(),
            drain: Signal::default(),
            fetch_may: Signal::default(),
            fetch_qpn: Signal::default(),
            fetch: DFF::default(),
            fetch_have: DFF::default(),
            fetch_index: DFF::default(),
            front: DFF::default(),
            oldest_at: DFF::default(),
            ev_cq_err: DFF::default(),
            ev_qp_fatal: DFF::default(),
            post_fatal: DFF::default(),
            comp: DFF::default(),
            comp_more: DFF::default(),
            tmr: DFF::default(),
            tmr_rnr: DFF::default(),
            dup_i: DFF::default(),
            word: DFF::default(),
            word_err: DFF::default(),
            cls: DFF::default(),
            raw_have: DFF::default(),
            rx_route: RxRoute::new(profile),
            check: RespCheck::new(profile),
            advance: RespAdvance::new(profile),
            duplicate: RespDuplicate::new(profile),
            queue: RespQueue::new(profile),
            read_args: ReadArgs::default(),
            resources: Rings::resources(profile),
            res_scan: ResScan::new(profile),
            dup_read: DupRead::new(profile),
            atomic_op: AtomicOp::default(),
            atomic_wr: WriteWiden::default(),
            act: Action::default(),
            place: DmaPlace::default(),
            recv_wqe: RecvWqe::new(profile),
            cache: WqeCache::new(profile),
            send: RespSend::new(profile),
            scatter: DmaScatter::default(),
            cqe_wr: CqeWrite::default(),
            eqe_wr: EqeWrite::default(),
            pick: FlushPick::new(profile),
            walk: OldestWalk::new(profile),
            wqe_fetch: WqeFetch::new(profile),
            sq_fetch: SqFetch::new(profile),
            retire: Retire::new(profile),
            completer: Completer::new(profile),
            counts: RxCount::default(),
            pop: RetirePop::new(profile),
            enter_err: EnterErr::new(profile),
            kind_cq_err: Constant::new(u64::from(EventKind::CqError as u8).into()),
            kind_qp_fatal: Constant::new(u64::from(EventKind::QpFatal as u8).into()),
            last_qp: Constant::new(u64::from(profile.max_qp - 1).into()),
            pick_none: Constant::new(u64::from(what::NONE).into()),
            pick_sq: Constant::new(u64::from(what::SQ).into()),
            pick_recv: Constant::new(u64::from(what::RECV).into()),
            pick_rq: Constant::new(u64::from(what::RQ).into()),
            pick_win: Constant::new(u64::from(what::WINDOW).into()),
            completion: Constant::new(u64::from(EventKind::Completion as u8).into()),
            write: Constant::new(u64::from(action::WRITE).into()),
            recv_act: Constant::new(u64::from(action::RECV).into()),
            raw_recv_act: Constant::new(u64::from(action::RAW_RECV).into()),
            unbuilt: Constant::new(u64::from(action::UNHANDLED).into()),
            raw_route: Constant::new(u64::from(route::RAW).into()),
            dup_ack: Constant::new(u64::from(action::DUP_ACK).into()),
            seq_nak: Constant::new(u64::from(action::SEQ_NAK).into()),
            rnr_nak: Constant::new(u64::from(action::RNR_NAK).into()),
            fatal_nak: Constant::new(u64::from(action::FATAL_NAK).into()),
            read_act: Constant::new(u64::from(action::READ).into()),
            dup_read_act: Constant::new(u64::from(action::DUP_READ).into()),
            atomic_act: Constant::new(u64::from(action::ATOMIC).into()),
            dup_atomic_act: Constant::new(u64::from(action::DUP_ATOMIC).into()),
            remote_access: Constant::new(u64::from(syndrome::NAK_REMOTE_ACCESS).into()),
        }
    }
}

impl<const D: usize, const K: usize> Logic for RxDispatch<D, K> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            rec,
            qpn,
            va,
            count,
            recv,
            owe_cqe,
            owe_eqe,
            owe_irq,
            flush,
            flush_on,
            err_seen,
            waited,
            flush_seen,
            scan,
            hdr,
            hdr_err,
            rd_sent,
            fetch,
            fetch_have,
            fetch_index,
            front,
            oldest_at,
            ev_cq_err,
            ev_qp_fatal,
            post_fatal,
            comp,
            comp_more,
            tmr,
            tmr_rnr,
            dup_i,
            word,
            word_err,
            cls,
            raw_have
        );
        // The blocks read the record in hand; their context ports are this block's.
        self.rx_route.clock.next = self.clock.val();
        self.rx_route.meta.next = self.rec.q.val();
        self.rx_route.mac.next = self.mac.val();
        self.qp_index.next = self.rx_route.qp_index.val();
        if self.flush.q.val() | self.fetch.q.val() | self.comp.q.val() | self.act.raw_rec.val() {
            self.qp_index.next = self.qpn.q.val();
        }
        // A frame that is not RoCEv2 reads the raw packet QP's contexts (any QP's, when there is none).
        if (self.state.q.val() == DispatchState::Look) & self.act.raw_rec.val() {
            self.qp_index.next = self.raw_pick.val();
        }
        self.rx_route.qp_valid.next = self.qp_valid.val();
        self.rx_route.attr.next = self.attr.val();
        self.gid_index.next = self.rx_route.gid_index.val();
        self.rx_route.gid.next = self.gid.val();
        self.rx_route.gid_valid.next = self.gid_valid.val();
        self.check.clock.next = self.clock.val();
        self.check.meta.next = self.rec.q.val();
        self.check.attr.next = self.attr.val();
        self.check.resp.next = self.resp.val();
        self.mr_index.next = self.check.key_index.val();
        self.check.mr.next = self.mr.val();
        self.advance.clock.next = self.clock.val();
        self.advance.meta.next = self.rec.q.val();
        self.advance.resp.next = self.resp.val();
        self.duplicate.clock.next = self.clock.val();
        self.duplicate.resp.next = self.resp.val();
        self.queue.clock.next = self.clock.val();
        self.queue.attr.next = self.attr.val();
        self.queue.resp.next = self.resp.val();
        self.queue.rnr.next = self.act.action.val() == self.rnr_nak.val();
        // A READ request executed, or a duplicate's responses queued again: its PSN and RETH. An atomic
        // executed, or a duplicate's ACK queued again: its PSN and its target's value.
        self.queue.read.next = (self.act.action.val() == self.read_act.val())
            | (self.act.action.val() == self.dup_read_act.val())
            | self.act.is_atomic.val();
        self.queue.atomic.next = self.act.is_atomic.val();
        self.atomic_op.meta.next = self.rec.q.val();
        self.atomic_op.orig.next = self.word.q.val();
        self.atomic_wr.addr.next = self.atomic_op.va.val();
        self.atomic_wr.data.next = self.atomic_op.result.val();
        self.atomic_wr.strb.next = 0xFF.into();
        self.queue.orig.next = self.word.q.val();
        if self.act.action.val() == self.dup_atomic_act.val() {
            self.queue.orig.next = self.dup_read.word.val();
        }
        self.read_args.meta.next = self.rec.q.val();
        self.queue.psn.next = self.read_args.psn.val();
        self.queue.va.next = self.read_args.va.val();
        self.queue.len.next = self.read_args.len.val();
        self.queue.rkey.next = self.read_args.rkey.val();
        // A duplicate READ: the QP's resources read newest first (`res_scan`), each matched (`dup_read`);
        // the one found gives its first PSN and MSN to the queue.
        self.resources.clock.next = self.clock.val();
        self.resources.we.next = false;
        self.resources.w_qpn.next = self.qpn.q.val();
        self.resources.w_slot.next = self.queue.res_slot.val();
        self.resources.w_item.next = self.queue.res.val();
        self.res_scan.resp.next = self.resp.val();
        self.res_scan.i.next = self.dup_i.q.val();
        self.resources.r_qpn.next = self.qpn.q.val();
        self.resources.r_slot.next = self.res_scan.slot.val();
        self.dup_read.attr.next = self.attr.val();
        self.dup_read.res.next = self.resources.r_item.val();
        self.dup_read.psn.next = self.read_args.psn.val();
        self.dup_read.va.next = self.read_args.va.val();
        self.dup_read.len.next = self.read_args.len.val();
        self.dup_read.rkey.next = self.read_args.rkey.val();
        self.queue.dup.next = self.act.is_dup.val();
        self.queue.dup_base.next = self.dup_read.at_base.val();
        self.queue.dup_msn.next = self.dup_read.msn.val();
        // A SEND's failure is queued from the record it leaves (the receive given up); the chain's from the
        // record as it is.
        self.queue.fatal.next = self.recv.q.val() & self.send.fatal.val();
        self.queue.fatal_syn.next = self.send.syn.val();
        if !self.recv.q.val() & (self.act.action.val() == self.fatal_nak.val()) {
            self.queue.fatal.next = true;
            self.queue.fatal_syn.next = self.act.syn.val();
        }
        // A duplicate READ whose key fails now (the MR gone or changed since), or an atomic whose target
        // could not be read: a remote access NAK.
        if ((self.act.action.val() == self.dup_read_act.val()) & self.check.key_bad.val())
            | ((self.act.action.val() == self.atomic_act.val()) & self.word_err.q.val())
        {
            self.queue.fatal.next = true;
            self.queue.fatal_syn.next = self.remote_access.val();
        }
        self.enter_err.resp.next = self.send.resp_next.val();
        if self.fetch.q.val() | self.comp.q.val() {
            self.enter_err.resp.next = self.resp.val();
        }
        if self.recv.q.val() {
            self.queue.resp.next = self.send.resp_next.val();
            if self.post_fatal.q.val() {
                // The post before it took the QP to ERR: the NAK goes into the queue `enter_err` emptied.
                self.queue.resp.next = self.enter_err.resp_err.val();
            }
        }
        self.item_we.next = false;
        self.item_slot.next = self.queue.first_slot.val();
        self.item.next = self.queue.first.val();
        self.act.rec.next = self.rec.q.val();
        self.act.route.next = self.rx_route.route.val();
        self.act.ce.next = self.rx_route.ce.val();
        self.act.verdict.next = self.check.verdict.val();
        self.act.room.next = self.check.room.val();
        self.act.raw_ctrl.next = self.raw_ctrl.val();
        self.act.raw_any.next = self.raw_have.q.val();
        self.act.rq_has.next = self.send.rq_has.val();
        // What the frame in hand and this cycle's decision count.
        self.counts.rec.next = self.rec.q.val();
        self.counts.route.next = self.rx_route.route.val();
        self.counts.ce.next = self.rx_route.ce.val();
        self.counts.verdict.next = self.check.verdict.val();
        self.counts.room.next = self.check.room.val();
        self.counts.action.next = self.act.action.val();
        self.counts.sent.next = self.completer.sent.val();
        self.counts.aeth.next = self.act.aeth.val();
        self.counts.raw_ctrl.next = self.raw_ctrl.val();
        self.counts.raw_any.next = self.raw_have.q.val();
        self.counts.raw_rx.next =
            (self.state.q.val() == DispatchState::Exec) & self.act.raw_rec.val() & !self.send.raw_fail.val();
        self.counts.at_exec.next = self.state.q.val() == DispatchState::Exec;
        self.counts.rq_moves.next = self.send.rq_ci_we.val();
        self.counts.fatal.next = self.send.fatal.val();
        self.counts.syn.next = self.send.syn.val();
        self.counts.at_dup.next = self.state.q.val() == DispatchState::DupExec;
        self.counts.part.next = self.dup_read.part.val();
        self.counts.key_bad.next = self.check.key_bad.val();
        self.counts.at_atomic.next = self.state.q.val() == DispatchState::AtomExec;
        self.counts.word_err.next = self.word_err.q.val();
        self.counts.at_timer.next =
            (self.state.q.val() == DispatchState::RspRun) & self.completer.run_done.val() & self.tmr.q.val();
        self.counts.timer_rnr.next = self.tmr_rnr.q.val();
        self.counts.outstanding.next = self.completer.timed_out.val();
        self.cnt_class.next = self.cls.q.val();
        if self.state.q.val() == DispatchState::Decide {
            self.cls.d.next = self.counts.of_frame.val();
            self.cnt_class.next = self.counts.of_frame.val();
        }
        self.cnt_out.next = self.counts.outcome.val();
        self.rx_len.next = self.counts.rx_len.val();
        self.resp_qpn.next = self.qpn.q.val();
        self.resp_next.next = self.advance.resp_next.val();
        self.resp_we.next = false;
        self.wr_qpn.next = self.qpn.q.val();
        self.unhandled.next = self.count.q.val();

        self.place.clock.next = self.clock.val();
        self.place.reset.next = self.reset.val();
        self.place.in_data.next = self.pay_data.val();
        self.place.in_keep.next = self.pay_keep.val();
        self.place.in_last.next = self.pay_last.val();
        self.place.in_valid.next = false;
        self.place.va.next = self.va.q.val();
        self.place.lane.next = 0.into();

        // The receive WQE's fetch (its MR reads take the MR port while it runs), what executing the packet
        // does, the scatter of a SEND's payload and the CQE's post and write.
        self.recv_wqe.clock.next = self.clock.val();
        self.recv_wqe.reset.next = self.reset.val();
        self.recv_wqe.start.next = false;
        self.recv_wqe.attr.next = self.attr.val();
        self.recv_wqe.index.next = self.send.index.val();
        self.rd_valid.next = self.recv_wqe.rd_valid.val();
        self.recv_wqe.rd_ready.next = self.rd_ready.val();
        self.rd_addr.next = self.recv_wqe.rd_addr.val();
        self.rd_len.next = self.recv_wqe.rd_len.val();
        self.recv_wqe.cpl_valid.next = self.cpl_valid.val();
        self.recv_wqe.cpl_data.next = self.cpl_data.val();
        self.recv_wqe.cpl_err.next = self.cpl_err.val();
        self.recv_wqe.cpl_last.next = self.cpl_last.val();
        self.cache.clock.next = self.clock.val();
        self.cache.reset.next = self.reset.val();
        self.cache.clear.next = self.clear_cache.val();
        self.cache.fill_start.next = false;
        self.cache.qpn.next = self.qpn.q.val();
        self.cache.index.next = self.send.index.val();
        self.cache.fill_valid.next = self.cpl_valid.val();
        self.cache.fill_err.next = self.cpl_err.val();
        self.cache.fill_last.next = self.cpl_last.val();
        self.cache.store.next = self.recv_wqe.done.val();
        self.cache.st_ok.next = self.recv_wqe.ok.val();
        self.cache.st_wr_id.next = self.recv_wqe.wr_id.val();
        self.cache.st_count.next = self.recv_wqe.count.val();
        self.cache.st_sges.next = self.recv_wqe.sges.val();
        self.recv_wqe.mr.next = self.mr.val();
        self.send.meta.next = self.rec.q.val();
        self.send.raw.next = self.act.raw_rec.val();
        self.send.qpn.next = self.qpn.q.val();
        self.send.attr.next = self.attr.val();
        self.send.resp.next = self.resp.val();
        self.send.adv.next = self.advance.resp_next.val();
        // The WQE: what `RecvWqe` made of it, or of it before (the cache's copy).
        self.send.wqe_ok.next = self.recv_wqe.ok.val();
        self.send.wr_id.next = self.recv_wqe.wr_id.val();
        if self.cache.hit.val() {
            self.send.wqe_ok.next = self.cache.ok.val();
            self.send.wr_id.next = self.cache.wr_id.val();
        }
        self.send.fits.next = self.scatter.fits.val();
        self.rq_ci_we.next = false;
        self.rq_ci.next = self.send.rq_ci.val();
        // The flush step's table: what the QP in hand has left, the CQE of its next WQE.
        self.pick.clock.next = self.clock.val();
        self.pick.qpn.next = self.qpn.q.val();
        self.pick.qp_valid.next = self.qp_valid.val();
        self.pick.attr.next = self.attr.val();
        self.pick.resp.next = self.resp.val();
        self.pick.hdr.next = self.hdr.q.val();
        if self.hdr_err.q.val() {
            self.pick.hdr.next = 0.into();
        }
        self.pick.req.next = self.req.val();
        self.pick.front.next = self.front.q.val();
        self.pick.oldest_at.next = self.oldest_at.q.val();
        // The walk past the finished entries behind a flushed front; the window's read port is its (while
        // it is not walking, at the front's slot).
        self.walk.clock.next = self.clock.val();
        self.walk.reset.next = self.reset.val();
        self.walk.start.next = false;
        self.walk.base.next = self.pick.win_base.val();
        self.walk.from.next = self.pick.walk_from.val();
        self.walk.count.next = self.pick.win_count.val();
        self.walk.r_entry.next = self.win_r.val();
        self.win_r_slot.next = self.walk.r_slot.val();
        // A fetch visit: whether the QP may fetch, the WQE's read and checks (the DMA read port and the MR
        // port are its while it runs), what the entry does to the window, and a failed one's CQE.
        self.sq_fetch.qp_valid.next = self.qp_valid.val();
        self.sq_fetch.attr.next = self.attr.val();
        self.sq_fetch.req.next = self.req.val();
        self.sq_fetch.entry.next = self.wqe_fetch.entry.val();
        self.wqe_fetch.clock.next = self.clock.val();
        self.wqe_fetch.reset.next = self.reset.val();
        self.wqe_fetch.start.next = false;
        self.wqe_fetch.attr.next = self.attr.val();
        self.wqe_fetch.index.next = self.sq_fetch.index.val();
        self.wqe_fetch.rd_ready.next = self.rd_ready.val();
        self.wqe_fetch.cpl_valid.next = self.cpl_valid.val();
        self.wqe_fetch.cpl_data.next = self.cpl_data.val();
        self.wqe_fetch.cpl_err.next = self.cpl_err.val();
        self.wqe_fetch.cpl_last.next = self.cpl_last.val();
        self.wqe_fetch.mr.next = self.mr.val();
        self.retire.qpn.next = self.qpn.q.val();
        self.retire.attr.next = self.attr.val();
        self.retire.wqe.next = self.wqe_fetch.entry.val();
        self.retire.index.next = self.sq_fetch.index.val();
        // The completer: an ACK's walk over the window, then the front's retire (its entry, with the `wr_id`
        // the fetch kept, and its SQ counter into `Retire`).
        self.completer.clock.next = self.clock.val();
        self.completer.reset.next = self.reset.val();
        self.completer.attr.next = self.attr.val();
        self.completer.req.next = self.req.val();
        self.completer.tick.next = self.tick.val();
        self.completer.start.next = false;
        self.completer.rec.next = self.rec.q.val();
        self.completer.psn.next = self.act.psn.val();
        self.completer.through.next = self.act.through.val();
        self.completer.noack.next = self.act.noack.val();
        self.completer.aeth.next = self.act.aeth.val();
        self.completer.run_start.next = false;
        self.completer.tmr_ack.next = self.tmr.q.val() & !self.tmr_rnr.q.val();
        self.completer.tmr_rnr.next = self.tmr.q.val() & self.tmr_rnr.q.val();
        self.completer.r_entry.next = self.win_r.val();
        self.completer.rd_ready.next = self.rd_ready.val();
        self.completer.cpl_valid.next = self.cpl_valid.val();
        self.completer.cpl_data.next = self.cpl_data.val();
        self.completer.cpl_err.next = self.cpl_err.val();
        self.completer.cpl_last.next = self.cpl_last.val();
        self.completer.sc_fits.next = self.scatter.fits.val();
        self.pop.attr.next = self.attr.val();
        self.pop.req.next = self.req.val();
        self.pop.front.next = self.win_r.val();
        if self.comp.q.val() {
            self.retire.wqe.next = self.win_r.val();
            self.retire.index.next = self.pop.index.val();
        }
        self.win_we.next = false;
        self.win_w_slot.next = self.sq_fetch.slot.val();
        self.win_w.next = self.wqe_fetch.entry.val();
        self.req_we.next = false;
        self.req_next.next = self.sq_fetch.req_next.val();
        if self.flush.q.val() {
            self.req_next.next = self.pick.req_next.val();
        }
        self.wake_visit.next = false;
        self.wake_clear.next = false;
        self.fetched.next = false;
        self.fetched_index.next = self.fetch_index.q.val();
        self.fetch_go_index.next = self.sq_fetch.index.val();
        // The only read on the port while the fetch's is open (nothing else is offered while it drains).
        self.fetch_cpl.next = self.cpl_valid.val() & self.wqe_fetch.busy.val();
        self.retire_take.next = false;
        self.tm_take.next = false;
        self.timer_fired.next = false;
        self.timer_rnr.next = self.tmr_rnr.q.val();
        self.comp_wake.next = (self.state.q.val() == DispatchState::RetExec)
            | ((self.state.q.val() == DispatchState::AckRun) & self.completer.walk_done.val())
            | ((self.state.q.val() == DispatchState::RspRun) & self.completer.run_done.val());
        self.sq_ci_we.next = false;
        self.sq_ci.next = self.pick.sq_ci.val();
        self.flushed.next = false;
        self.err_we.next = false;
        if self.flush.q.val() {
            self.rq_ci.next = self.pick.rq_ci.val();
        }
        self.scatter.clock.next = self.clock.val();
        self.scatter.reset.next = self.reset.val();
        self.scatter.start.next = self.completer.sc_start.val();
        self.scatter.sges.next = self.recv_wqe.sges.val();
        self.scatter.count.next = self.recv_wqe.count.val();
        if self.cache.hit.val() {
            self.scatter.sges.next = self.cache.sges.val();
            self.scatter.count.next = self.cache.count.val();
        }
        self.scatter.off.next = self.send.off.val();
        self.scatter.len.next = self.send.len.val();
        self.scatter.in_data.next = self.pay_data.val();
        self.scatter.in_keep.next = self.pay_keep.val();
        self.scatter.in_last.next = self.pay_last.val();
        self.scatter.in_valid.next = false;
        self.wr_comp.next = self.comp.q.val();
        if self.comp.q.val() {
            // The completer's data: over the READ or atomic's list; an atomic ACK's is one beat, its value.
            self.scatter.sges.next = self.completer.sc_sges.val();
            self.scatter.count.next = self.completer.sc_count.val();
            self.scatter.off.next = self.completer.sc_off.val();
            self.scatter.len.next = self.completer.sc_len.val();
            if self.act.atomic_ack.val() {
                self.scatter.in_data.next = bit_cast::<D, 64>(self.act.orig.val());
                self.scatter.in_keep.next = bit_cast::<K, 8>(0xFF.into());
                self.scatter.in_last.next = true;
            }
        }
        self.cq_index.next = self.send.cqn.val();
        if self.flush.q.val() {
            self.cq_index.next = self.pick.cqn.val();
        }
        if self.fetch.q.val() | self.comp.q.val() {
            self.cq_index.next = self.retire.cqn.val();
        }
        self.cqe_wr.clock.next = self.clock.val();
        self.cqe_wr.reset.next = self.reset.val();
        self.cqe_wr.in_valid.next = false;
        self.cqe_wr.cq.next = self.cq.val();
        self.cqe_wr.cqe.next = self.send.cqe.val();
        self.cqe_wr.qp_live.next = self.send.qp_live.val();
        if self.flush.q.val() {
            self.cqe_wr.cqe.next = self.pick.cqe.val();
            self.cqe_wr.qp_live.next = self.pick.qp_live.val();
        }
        if self.fetch.q.val() | self.comp.q.val() {
            // A QP that may fetch, or take a response, is live.
            self.cqe_wr.cqe.next = self.retire.cqe.val();
            self.cqe_wr.qp_live.next = true;
        }
        self.cq_we.next = false;
        self.cq_next.next = self.cqe_wr.cq_next.val();
        self.cq_disarm.next = self.cqe_wr.fire.val();
        self.posted.next = false;
        self.cqe_err.next = self.cqe_wr.failed.val();
        self.posted_slot.next = self.cqe_wr.slot.val();
        self.posted_log.next = self.cqe_wr.log_size.val();
        // A completion event for the CQ a CQE fired.
        self.eqe_wr.clock.next = self.clock.val();
        self.eqe_wr.reset.next = self.reset.val();
        self.eqe_wr.in_valid.next = false;
        self.eqe_wr.eq.next = self.eq.val();
        self.eqe_wr.kind.next = self.completion.val();
        self.eqe_wr.obj.next = bit_cast::<32, 16>(self.send.cqn.val());
        if self.flush.q.val() {
            self.eqe_wr.obj.next = bit_cast::<32, 16>(self.pick.cqn.val());
        }
        if self.fetch.q.val() | self.comp.q.val() {
            self.eqe_wr.obj.next = bit_cast::<32, 16>(self.retire.cqn.val());
        }
        self.eq_we.next = false;
        self.eq_pi.next = self.eqe_wr.pi_next.val();
        self.eq_disarm.next = self.eqe_wr.fire.val();
        self.posted_eqe.next = false;
        self.eqe_lost.next = false;
        self.eqe_slot.next = self.eqe_wr.slot.val();
        self.irq.next = false;

        // The DMA write port: placed payload, scattered payload, the CQE (one at a time, in that order).
        self.place.wr_ready.next = self.wr_ready.val();
        self.scatter.wr_ready.next = self.wr_ready.val() & !self.place.wr_valid.val();
        self.cqe_wr.wr_ready.next = false;
        self.eqe_wr.wr_ready.next = false;
        self.wr_eqe.next = false;
        self.wr_valid.next = self.place.wr_valid.val() | self.scatter.wr_valid.val();
        self.wr_addr.next = self.place.wr_addr.val();
        self.wr_data.next = self.place.wr_data.val();
        self.wr_strb.next = self.place.wr_strb.val();
        self.wr_cqe.next = false;
        if self.scatter.wr_valid.val() & !self.place.wr_valid.val() {
            self.wr_addr.next = self.scatter.wr_addr.val();
            self.wr_data.next = self.scatter.wr_data.val();
            self.wr_strb.next = self.scatter.wr_strb.val();
        }
        if self.state.q.val() == DispatchState::CqeEnd {
            self.cqe_wr.wr_ready.next = self.wr_ready.val();
            self.wr_valid.next = self.cqe_wr.wr_valid.val();
            self.wr_addr.next = self.cqe_wr.wr_addr.val();
            self.wr_data.next = self.cqe_wr.wr_data.val();
            self.wr_strb.next = self.cqe_wr.wr_strb.val();
            self.wr_cqe.next = true;
        }
        if self.state.q.val() == DispatchState::AtomWrite {
            self.wr_valid.next = true;
            self.wr_addr.next = self.atomic_wr.wide_addr.val();
            self.wr_data.next = self.atomic_wr.wide_data.val();
            self.wr_strb.next = self.atomic_wr.wide_strb.val();
        }
        if self.state.q.val() == DispatchState::EqeEnd {
            self.eqe_wr.wr_ready.next = self.wr_ready.val();
            self.wr_valid.next = self.eqe_wr.wr_valid.val();
            self.wr_addr.next = self.eqe_wr.wr_addr.val();
            self.wr_data.next = self.eqe_wr.wr_data.val();
            self.wr_strb.next = self.eqe_wr.wr_strb.val();
            self.wr_eqe.next = true;
        }

        self.meta_ready.next = false;
        self.pay_ready.next = false;
        self.ctx_busy.next = false;
        self.claim.next = false;
        self.drain.next = self.recv_wqe.busy.val() | self.wqe_fetch.busy.val() | self.completer.rd_open.val();
        self.fetch_may.next = (self.wake_any.val() & self.tx_idle.val()) | self.at_alone.val();
        self.fetch_qpn.next = self.at_qpn.val();
        if self.tx_idle.val() {
            self.fetch_qpn.next = self.wake_pick.val();
        }
        self.idle.next = false;
        self.wr_quiet.next = (self.state.q.val() == DispatchState::Idle)
            | (self.state.q.val() == DispatchState::FetchRead)
            | (self.state.q.val() == DispatchState::FetchWait);
        self.flush_idle.next = !self.flush_on.q.val();
        self.decided.next = false;
        match self.state.q.val() {
            DispatchState::Idle => {
                self.idle.next = true;
                self.comp.d.next = false;
                self.tmr.d.next = false;
                if self.drain.val() {
                    // Nothing starts until the last read's beats are in.
                } else if self.retire_req.val() {
                    // The requester's transmit side holds the port and gives it over: its failed front retires.
                    self.retire_take.next = true;
                    self.claim.next = true;
                    self.recv.d.next = false;
                    self.flush.d.next = false;
                    self.fetch.d.next = false;
                    self.comp.d.next = true;
                    self.comp_more.d.next = true;
                    self.qpn.d.next = self.retire_qpn.val();
                    self.state.d.next = DispatchState::RetLook;
                } else if !self.hold.val() & self.tm_fire.val() {
                    // A due timer first: the model lets it wait `TIMER_TOLERANCE` ticks at most.
                    self.tm_take.next = true;
                    self.claim.next = true;
                    self.recv.d.next = false;
                    self.flush.d.next = false;
                    self.fetch.d.next = false;
                    self.comp.d.next = true;
                    self.comp_more.d.next = true;
                    self.tmr.d.next = true;
                    self.tmr_rnr.d.next = self.tm_rnr.val();
                    self.qpn.d.next = self.tm_qpn.val();
                    self.state.d.next = DispatchState::TmrLook;
                } else if self.hold.val() {
                    // Another holder has the port.
                } else if self.meta_valid.val() & !self.waited.q.val().get_bit(1) & self.fetch_may.val() {
                    // A frame waits, and so does a send WQE's fetch: the visit first.
                    self.waited.d.next = self.waited.q.val() + 1;
                    self.claim.next = true;
                    self.flush.d.next = false;
                    self.fetch.d.next = true;
                    self.qpn.d.next = self.fetch_qpn.val();
                    self.state.d.next = DispatchState::FetchLook;
                } else if self.meta_valid.val() & !self.waited.q.val().get_bit(1) & self.tx_wants.val() {
                    // A frame waits, and so does a transmit side: the port is left free for it.
                    self.waited.d.next = self.waited.q.val() + 1;
                } else {
                    self.meta_ready.next = true;
                    self.claim.next = self.meta_valid.val();
                    if self.meta_valid.val() {
                        self.waited.d.next = 0.into();
                        self.rec.d.next = self.meta.val();
                        self.recv.d.next = false;
                        self.flush.d.next = false;
                        self.fetch.d.next = false;
                        self.state.d.next = DispatchState::Look;
                    } else if self.fetch_may.val() {
                        // No frame: a fetch visit.
                        self.claim.next = true;
                        self.flush.d.next = false;
                        self.fetch.d.next = true;
                        self.qpn.d.next = self.fetch_qpn.val();
                        self.state.d.next = DispatchState::FetchLook;
                    } else if self.flush_on.q.val() & self.tx_idle.val() {
                        // Nothing else wants the port: a flush step at the QP the scan is at.
                        self.claim.next = true;
                        self.flush.d.next = true;
                        self.fetch.d.next = false;
                        self.qpn.d.next = bit_cast::<24, 16>(self.scan.q.val());
                        self.state.d.next = DispatchState::FlushLook;
                    }
                }
            }
            DispatchState::Look => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.qpn.d.next = self.rx_route.qp_index.val();
                self.raw_have.d.next = self.raw_any.val();
                if self.act.raw_rec.val() {
                    self.qpn.d.next = self.raw_pick.val();
                }
                self.state.d.next = DispatchState::Ctx;
            }
            DispatchState::Ctx => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.state.d.next = DispatchState::Check;
            }
            DispatchState::Check => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.state.d.next = DispatchState::Decide;
            }
            DispatchState::Decide => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.decided.next = true;
                self.va.d.next = self.advance.va.val();
                if self.act.action.val() == self.write.val() {
                    self.resp_we.next = true;
                }
                if self.act.action.val() == self.dup_ack.val() {
                    self.resp_next.next = self.duplicate.resp_next.val();
                    self.resp_we.next = true;
                }
                if (self.act.action.val() == self.seq_nak.val())
                    | (self.act.action.val() == self.rnr_nak.val())
                    | (self.act.action.val() == self.fatal_nak.val())
                    | (self.act.action.val() == self.read_act.val())
                {
                    self.resp_next.next = self.queue.resp_next.val();
                    self.resp_we.next = true;
                    self.item_we.next = true;
                }
                if self.act.action.val() == self.unbuilt.val() {
                    self.count.d.next = self.count.q.val() + 1;
                }
                if self.act.action.val() == self.read_act.val() {
                    self.resources.we.next = true;
                }
                if self.act.to_comp.val() & self.completer.sent.val() {
                    // Decided once the walk is over.
                    self.decided.next = false;
                    self.completer.start.next = true;
                    self.comp.d.next = true;
                    self.state.d.next = DispatchState::AckRun;
                } else if self.act.is_dup.val() {
                    // Decided once the scan is done.
                    self.decided.next = false;
                    self.dup_i.d.next = 0.into();
                    self.state.d.next = DispatchState::DupLook;
                } else if self.act.action.val() == self.atomic_act.val() {
                    // Decided once its target is read.
                    self.decided.next = false;
                    self.rd_sent.d.next = false;
                    self.word_err.d.next = false;
                    self.state.d.next = DispatchState::AtomRead;
                } else if (self.act.action.val() == self.recv_act.val())
                    | (self.act.action.val() == self.raw_recv_act.val())
                {
                    // Decided once the WQE is in.
                    self.decided.next = false;
                    self.recv.d.next = true;
                    if self.cache.hit.val() {
                        // The WQE fetched for the message's first packet stands.
                        self.scatter.start.next = self.send.is_send.val() & self.cache.ok.val();
                        self.state.d.next = DispatchState::Exec;
                    } else {
                        self.recv_wqe.start.next = true;
                        self.cache.fill_start.next = true;
                        self.state.d.next = DispatchState::Wqe;
                    }
                } else if ((self.act.action.val() == self.seq_nak.val())
                    | (self.act.action.val() == self.rnr_nak.val())
                    | (self.act.action.val() == self.read_act.val()))
                    & self.queue.second_valid.val()
                {
                    self.state.d.next = DispatchState::QueueMore;
                } else if !self.act.has_payload.val() {
                    self.state.d.next = DispatchState::Idle;
                } else if self.act.action.val() == self.write.val() {
                    self.state.d.next = DispatchState::Place;
                } else {
                    self.state.d.next = DispatchState::Drain;
                }
            }
            DispatchState::DupLook => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.state.d.next = DispatchState::DupMatch;
                if !self.res_scan.more.val() {
                    // No READ kept covers it: ignored.
                    self.decided.next = true;
                    self.state.d.next = DispatchState::Idle;
                    if self.act.has_payload.val() {
                        self.state.d.next = DispatchState::Drain;
                    }
                }
            }
            DispatchState::DupMatch => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                if (self.dup_read.covers.val() & (self.act.action.val() == self.dup_read_act.val()))
                    | (self.dup_read.hit.val() & (self.act.action.val() == self.dup_atomic_act.val()))
                {
                    self.state.d.next = DispatchState::DupExec;
                } else {
                    self.dup_i.d.next = self.dup_i.q.val() + 1;
                    self.state.d.next = DispatchState::DupLook;
                }
            }
            DispatchState::DupExec => {
                // Asked within the READ: a key that fails now is NAKed, else its responses are queued if
                // there is room; anything else is ignored.
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.decided.next = true;
                self.state.d.next = DispatchState::Idle;
                if self.act.has_payload.val() {
                    self.state.d.next = DispatchState::Drain;
                }
                if (self.act.action.val() == self.dup_atomic_act.val()) & self.check.room.val()
                    | (self.act.action.val() == self.dup_read_act.val())
                        & self.dup_read.part.val()
                        & (self.check.key_bad.val() | self.check.room.val())
                {
                    self.resp_next.next = self.queue.resp_next.val();
                    self.resp_we.next = true;
                    self.item_we.next = true;
                    if self.queue.second_valid.val() {
                        self.state.d.next = DispatchState::QueueMore;
                    }
                }
            }
            DispatchState::AtomRead => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.rd_valid.next = !self.rd_sent.q.val() & !self.drain.val();
                self.rd_addr.next = self.atomic_op.va.val();
                self.rd_len.next = 8.into();
                if self.rd_ready.val() {
                    self.rd_sent.d.next = true;
                }
                if self.cpl_valid.val() & self.rd_sent.q.val() {
                    self.word.d.next = self.cpl_data.val();
                    self.word_err.d.next = self.word_err.q.val() | self.cpl_err.val();
                    if self.cpl_last.val() {
                        self.state.d.next = DispatchState::AtomQueue;
                    }
                }
            }
            DispatchState::AtomQueue => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.state.d.next = DispatchState::AtomExec;
            }
            DispatchState::AtomExec => {
                // Its ACK (or, the read failed, its fatal NAK) queued, both ring entries written before the new
                // value (the queue's outputs hold only until the write-back shows on the context port).
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.decided.next = true;
                self.resp_next.next = self.queue.resp_next.val();
                self.resp_we.next = true;
                self.item_we.next = true;
                self.resources.we.next = !self.word_err.q.val();
                self.state.d.next = DispatchState::Idle;
                if self.queue.second_valid.val() {
                    self.state.d.next = DispatchState::QueueMore;
                } else if !self.word_err.q.val() {
                    self.state.d.next = DispatchState::AtomWrite;
                }
            }
            DispatchState::AtomWrite => {
                // The port held until the host takes the beat: the model writes at the decision, so no
                // response or command may see the QP before.
                self.ctx_busy.next = true;
                self.claim.next = true;
                if self.wr_ready.val() {
                    self.state.d.next = DispatchState::Idle;
                }
            }
            DispatchState::QueueMore => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.item_we.next = true;
                self.item_slot.next = self.queue.first_slot.val() + 1;
                self.item.next = self.queue.second.val();
                self.state.d.next = DispatchState::Idle;
                if self.act.has_payload.val() {
                    self.state.d.next = DispatchState::Drain;
                }
                if self.act.action.val() == self.atomic_act.val() {
                    self.state.d.next = DispatchState::AtomWrite;
                }
            }
            DispatchState::Place => {
                self.place.in_valid.next = self.pay_valid.val();
                self.pay_ready.next = self.place.in_ready.val();
                if self.pay_valid.val() & self.place.in_ready.val() & self.pay_last.val() {
                    self.state.d.next = DispatchState::PlaceEnd;
                }
            }
            DispatchState::PlaceEnd => {
                if self.place.wr_valid.val() & self.wr_ready.val() & self.place.wr_last.val() {
                    self.state.d.next = DispatchState::Idle;
                    if self.recv.q.val() {
                        self.state.d.next = DispatchState::CqeEnd;
                    }
                }
            }
            DispatchState::Wqe => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.mr_index.next = self.recv_wqe.mr_index.val();
                if self.recv_wqe.done.val() {
                    self.scatter.start.next = self.send.is_send.val() & self.recv_wqe.ok.val();
                    self.state.d.next = DispatchState::Exec;
                }
            }
            DispatchState::Exec => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.decided.next = true;
                self.owe_cqe.d.next = false;
                self.owe_eqe.d.next = false;
                self.owe_irq.d.next = false;
                self.ev_cq_err.d.next = false;
                self.ev_qp_fatal.d.next = false;
                self.post_fatal.d.next = false;
                self.resp_next.next = self.send.resp_next.val();
                // A failed packet's record is written with its NAK's queuing, next cycle.
                self.resp_we.next = !self.send.fatal.val();
                self.rq_ci_we.next = self.send.rq_ci_we.val();
                // The CQE's post (below); a live QP whose CQ refuses it leaves its record as `enter_err` does.
                if self.send.cqe_valid.val() {
                    self.post_fatal.d.next = self.cqe_wr.qp_fatal.val();
                    if self.cqe_wr.qp_fatal.val() {
                        self.err_we.next = true;
                        self.resp_next.next = self.enter_err.resp_err.val();
                    }
                }
                // A raw frame's failed receive ends the QP, as any error completion does.
                if self.send.raw_fail.val() {
                    self.err_we.next = true;
                    self.resp_next.next = self.enter_err.resp_err.val();
                }
                if self.send.fatal.val() {
                    self.state.d.next = DispatchState::Nak;
                } else if self.send.drain.val() {
                    self.state.d.next = DispatchState::Drain;
                } else if !self.act.has_payload.val() {
                    self.state.d.next = DispatchState::CqeEnd;
                } else if self.send.is_send.val() {
                    self.state.d.next = DispatchState::Scatter;
                } else {
                    self.state.d.next = DispatchState::Place;
                }
            }
            DispatchState::Nak => {
                // The coalesced ACK is dropped, not moved: one ring entry.
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.resp_next.next = self.queue.resp_next.val();
                self.resp_we.next = true;
                self.item_we.next = true;
                if !self.act.has_payload.val() {
                    self.state.d.next = DispatchState::CqeEnd;
                } else if self.scatter.busy.val() {
                    // Too long for the list: the scatter drains it.
                    self.state.d.next = DispatchState::Scatter;
                } else {
                    self.state.d.next = DispatchState::Drain;
                }
            }
            DispatchState::Scatter => {
                // The completer's data is scattered with the QP's context port held, up to its retire.
                self.ctx_busy.next = self.comp.q.val();
                self.claim.next = self.comp.q.val();
                if self.comp.q.val() & self.act.atomic_ack.val() {
                    self.scatter.in_valid.next = true;
                    if self.scatter.in_ready.val() {
                        self.state.d.next = DispatchState::ScatterEnd;
                    }
                } else {
                    self.scatter.in_valid.next = self.pay_valid.val();
                    self.pay_ready.next = self.scatter.in_ready.val();
                    if self.pay_valid.val() & self.scatter.in_ready.val() & self.pay_last.val() {
                        self.state.d.next = DispatchState::ScatterEnd;
                    }
                }
            }
            DispatchState::ScatterEnd => {
                self.ctx_busy.next = self.comp.q.val();
                self.claim.next = self.comp.q.val();
                if !self.scatter.busy.val() {
                    self.state.d.next = DispatchState::CqeEnd;
                }
            }
            DispatchState::CqeEnd => {
                // A retire holds the QP until its last CQE is out.
                self.ctx_busy.next = self.comp.q.val();
                self.claim.next = self.comp.q.val();
                if !self.owe_cqe.q.val()
                    | (self.cqe_wr.wr_valid.val() & self.wr_ready.val() & self.cqe_wr.wr_last.val())
                {
                    self.state.d.next = DispatchState::Idle;
                    if self.comp.q.val() & self.comp_more.q.val() {
                        self.state.d.next = DispatchState::RetLook;
                    }
                    if self.owe_eqe.q.val() {
                        self.state.d.next = DispatchState::EqeEnd;
                    } else if self.ev_cq_err.q.val() | self.ev_qp_fatal.q.val() {
                        self.state.d.next = DispatchState::EvPost;
                    }
                }
            }
            DispatchState::EqeEnd => {
                self.ctx_busy.next = self.comp.q.val();
                self.claim.next = self.comp.q.val();
                if self.eqe_wr.wr_valid.val() & self.wr_ready.val() & self.eqe_wr.wr_last.val() {
                    self.irq.next = self.owe_irq.q.val();
                    self.state.d.next = DispatchState::Idle;
                    if self.comp.q.val() & self.comp_more.q.val() {
                        self.state.d.next = DispatchState::RetLook;
                    }
                    if self.ev_cq_err.q.val() | self.ev_qp_fatal.q.val() {
                        self.state.d.next = DispatchState::EvPost;
                    }
                }
            }
            DispatchState::EvPost => {
                self.ctx_busy.next = self.comp.q.val();
                self.claim.next = self.comp.q.val();
                // One event a visit (the EQ's entry is the last post's by then), the CQ's first.
                self.eqe_wr.in_valid.next = true;
                self.eqe_wr.kind.next = self.kind_qp_fatal.val();
                self.eqe_wr.obj.next = bit_cast::<32, 24>(self.qpn.q.val());
                if self.ev_cq_err.q.val() {
                    self.eqe_wr.kind.next = self.kind_cq_err.val();
                    self.eqe_wr.obj.next = bit_cast::<32, 16>(self.send.cqn.val());
                    if self.flush.q.val() {
                        self.eqe_wr.obj.next = bit_cast::<32, 16>(self.pick.cqn.val());
                    }
                    if self.fetch.q.val() | self.comp.q.val() {
                        self.eqe_wr.obj.next = bit_cast::<32, 16>(self.retire.cqn.val());
                    }
                    self.ev_cq_err.d.next = false;
                } else {
                    self.ev_qp_fatal.d.next = false;
                }
                self.eq_we.next = self.eqe_wr.written.val();
                self.posted_eqe.next = self.eqe_wr.written.val();
                self.eqe_lost.next = !self.eqe_wr.written.val();
                self.owe_irq.d.next = self.eqe_wr.fire.val();
                if self.eqe_wr.written.val() {
                    self.state.d.next = DispatchState::EqeEnd;
                } else if !(self.ev_cq_err.q.val() & self.ev_qp_fatal.q.val()) {
                    // Lost (no EQ, or no room), and nothing more owed.
                    self.state.d.next = DispatchState::Idle;
                }
            }
            DispatchState::Drain => {
                self.ctx_busy.next = self.comp.q.val();
                self.claim.next = self.comp.q.val();
                self.pay_ready.next = true;
                if self.pay_valid.val() & self.pay_last.val() {
                    self.state.d.next = DispatchState::Idle;
                    if self.recv.q.val() | self.comp.q.val() {
                        self.state.d.next = DispatchState::CqeEnd;
                    }
                }
            }
            DispatchState::FlushLook => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.state.d.next = DispatchState::FlushCtx;
            }
            DispatchState::FlushCtx => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                if self.pick.what.val() == self.pick_none.val() {
                    // Nothing left here: on to the next QP. A pass that flushed nothing ends the scan.
                    self.state.d.next = DispatchState::Idle;
                    if self.scan.q.val() == self.last_qp.val() {
                        self.scan.d.next = 0.into();
                        self.flush_on.d.next = self.flush_seen.q.val();
                        self.flush_seen.d.next = false;
                    } else {
                        self.scan.d.next = self.scan.q.val() + 1;
                    }
                } else if self.pick.what.val() == self.pick_win.val() {
                    // The front's entry read now (the walk, idle, points the port at it).
                    self.flush_seen.d.next = true;
                    self.state.d.next = DispatchState::FlushFront;
                } else {
                    self.flush_seen.d.next = true;
                    self.rd_sent.d.next = false;
                    self.hdr_err.d.next = false;
                    self.state.d.next = DispatchState::CtrlRead;
                }
            }
            DispatchState::FlushFront => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.front.d.next = self.win_r.val();
                self.walk.start.next = true;
                self.state.d.next = DispatchState::FlushWalk;
            }
            DispatchState::FlushWalk => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                if self.walk.done.val() {
                    // The front's CQE carries the `wr_id` its entry kept: nothing to read.
                    self.oldest_at.d.next = self.walk.at.val();
                    self.state.d.next = DispatchState::FlushExec;
                }
            }
            DispatchState::FetchLook => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.wake_visit.next = !self.fetch_have.q.val();
                self.state.d.next = DispatchState::FetchCtx;
            }
            DispatchState::FetchCtx => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.fetch_have.d.next = false;
                if self.fetch_have.q.val() {
                    // The contexts read again: the WQE read is committed if the QP may still fetch it (a
                    // transmit side may have moved the QP to ERR meanwhile); otherwise it is dropped and the
                    // QP, still awake, visited again.
                    if self.sq_fetch.fetchable.val() & (self.sq_fetch.index.val() == self.fetch_index.q.val()) {
                        self.state.d.next = DispatchState::FetchExec;
                    } else {
                        self.state.d.next = DispatchState::Idle;
                    }
                } else if self.sq_fetch.fetchable.val() {
                    self.wqe_fetch.start.next = true;
                    self.fetch_index.d.next = self.sq_fetch.index.val();
                    self.state.d.next = DispatchState::FetchRead;
                } else {
                    self.wake_clear.next = true;
                    self.state.d.next = DispatchState::Idle;
                }
            }
            DispatchState::FetchRead => {
                // The context port is the transmit sides' while the WQE is read; no command commits
                // (`ctx_busy`), so only they can change the QP, and only what the contexts read again show.
                self.ctx_busy.next = true;
                self.rd_valid.next = self.wqe_fetch.rd_valid.val();
                self.rd_addr.next = self.wqe_fetch.rd_addr.val();
                self.rd_len.next = self.wqe_fetch.rd_len.val();
                self.mr_index.next = self.wqe_fetch.mr_index.val();
                if self.wqe_fetch.done.val() {
                    self.fetch_have.d.next = true;
                    self.state.d.next = DispatchState::FetchWait;
                }
            }
            DispatchState::FetchWait => {
                self.ctx_busy.next = true;
                if self.retire_req.val() {
                    // The requester hands over a failed front, holding the port until it is retired: the
                    // WQE read is dropped (the QP stays awake) and the retire taken first.
                    self.fetch_have.d.next = false;
                    self.state.d.next = DispatchState::Idle;
                } else if !self.hold.val() {
                    self.claim.next = true;
                    self.state.d.next = DispatchState::FetchLook;
                }
            }
            DispatchState::FetchExec => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.fetched.next = true;
                self.owe_cqe.d.next = false;
                self.owe_eqe.d.next = false;
                self.owe_irq.d.next = false;
                self.sq_ci_we.next = true;
                self.sq_ci.next = self.sq_fetch.sq_ci.val();
                self.state.d.next = DispatchState::Idle;
                if self.sq_fetch.retire.val() {
                    // Retired at once: its CQE (below), the QP to ERR as `enter_err` leaves it.
                    self.err_we.next = true;
                    self.resp_we.next = true;
                    self.resp_next.next = self.enter_err.resp_err.val();
                    self.state.d.next = DispatchState::CqeEnd;
                } else {
                    self.win_we.next = true;
                    self.req_we.next = true;
                }
            }
            DispatchState::CtrlRead => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.rd_valid.next = !self.rd_sent.q.val() & !self.drain.val();
                self.rd_addr.next = self.pick.rd_addr.val();
                self.rd_len.next = self.pick.rd_len.val();
                if self.rd_ready.val() {
                    self.rd_sent.d.next = true;
                }
                if self.cpl_valid.val() & self.rd_sent.q.val() {
                    // Two beats: the first ends in the low half.
                    self.hdr.d.next = (bit_cast::<128, 64>(self.cpl_data.val()) << 64) | (self.hdr.q.val() >> 64);
                    self.hdr_err.d.next = self.hdr_err.q.val() | self.cpl_err.val();
                    if self.cpl_last.val() {
                        self.state.d.next = DispatchState::FlushExec;
                    }
                }
            }
            DispatchState::AckRun => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.win_r_slot.next = self.completer.walk_r_slot.val();
                self.win_we.next = self.completer.walk_w_we.val();
                self.win_w_slot.next = self.completer.walk_w_slot.val();
                self.win_w.next = self.completer.walk_w_entry.val();
                self.req_next.next = self.completer.walk_req_next.val();
                if self.completer.walk_done.val() {
                    self.req_we.next = true;
                    self.comp_more.d.next = true;
                    self.owe_cqe.d.next = false;
                    self.owe_eqe.d.next = false;
                    self.owe_irq.d.next = false;
                    if self.completer.run.val() {
                        // More to do than the walk (data, a failure, a retry, an RNR wait): decided once
                        // `RespRun` is done.
                        self.completer.run_start.next = true;
                        self.state.d.next = DispatchState::RspRun;
                    } else {
                        // An ACK, or a response that answers nothing (a duplicate, a stale answer): decided.
                        self.decided.next = true;
                        self.state.d.next = DispatchState::Idle;
                        if self.completer.retire.val() {
                            self.state.d.next = DispatchState::RetLook;
                        }
                        if self.act.has_payload.val() {
                            self.state.d.next = DispatchState::Drain;
                        }
                    }
                }
            }
            DispatchState::TmrLook => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.state.d.next = DispatchState::TmrCtx;
            }
            DispatchState::TmrCtx => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.owe_cqe.d.next = false;
                self.owe_eqe.d.next = false;
                self.owe_irq.d.next = false;
                self.state.d.next = DispatchState::Idle;
                if self.qp_valid.val()
                    & ((self.tmr_rnr.q.val() & self.completer.rnr_due.val())
                        | (!self.tmr_rnr.q.val() & self.completer.ack_due.val()))
                {
                    self.completer.run_start.next = true;
                    self.state.d.next = DispatchState::RspRun;
                }
            }
            DispatchState::RspRun => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.rd_valid.next = self.completer.rd_valid.val();
                self.rd_addr.next = self.completer.rd_addr.val();
                self.rd_len.next = self.completer.rd_len.val();
                self.win_r_slot.next = self.completer.run_r_slot.val();
                self.win_we.next = self.completer.run_w_we.val();
                self.win_w_slot.next = self.completer.run_w_slot.val();
                self.win_w.next = self.completer.run_w_entry.val();
                self.req_next.next = self.completer.run_req_next.val();
                if self.completer.run_done.val() {
                    // The decision: the entry and `qp_req` written; the data scattered (or drained), then the
                    // retire.
                    self.decided.next = !self.tmr.q.val();
                    self.timer_fired.next = self.tmr.q.val();
                    self.req_we.next = true;
                    self.state.d.next = DispatchState::CqeEnd;
                    if self.scatter.busy.val() {
                        self.state.d.next = DispatchState::Scatter;
                    } else if self.act.has_payload.val() & !self.tmr.q.val() {
                        self.state.d.next = DispatchState::Drain;
                    }
                }
            }
            DispatchState::RetLook => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.state.d.next = DispatchState::RetFront;
            }
            DispatchState::RetFront => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.win_r_slot.next = self.pop.slot.val();
                self.state.d.next = DispatchState::RetCheck;
            }
            DispatchState::RetCheck => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.win_r_slot.next = self.pop.slot.val();
                self.state.d.next = DispatchState::Idle;
                if self.pop.due.val() {
                    self.state.d.next = DispatchState::RetExec;
                }
            }
            DispatchState::RetExec => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.win_r_slot.next = self.pop.slot.val();
                self.owe_cqe.d.next = false;
                self.owe_eqe.d.next = false;
                self.owe_irq.d.next = false;
                self.req_we.next = true;
                self.req_next.next = self.pop.req_next.val();
                // A failed WQE, or a CQE its CQ refuses, takes the QP to ERR and ends the retire.
                self.comp_more.d.next = !self.pop.failed.val();
                if self.pop.failed.val() | (self.retire.post.val() & self.cqe_wr.qp_fatal.val()) {
                    self.comp_more.d.next = false;
                    self.err_we.next = true;
                    self.resp_we.next = true;
                    self.resp_next.next = self.enter_err.resp_err.val();
                }
                self.state.d.next = DispatchState::CqeEnd;
            }
            DispatchState::FlushExec => {
                self.ctx_busy.next = true;
                self.claim.next = true;
                self.flushed.next = true;
                self.owe_cqe.d.next = false;
                self.owe_eqe.d.next = false;
                self.owe_irq.d.next = false;
                self.sq_ci_we.next = self.pick.what.val() == self.pick_sq.val();
                self.rq_ci_we.next = self.pick.what.val() == self.pick_rq.val();
                self.resp_next.next = self.pick.resp_next.val();
                self.resp_we.next = self.pick.what.val() == self.pick_recv.val();
                self.req_we.next = self.pick.what.val() == self.pick_win.val();
                self.state.d.next = DispatchState::CqeEnd;
            }
            _ => {
                self.state.d.next = DispatchState::Idle;
            }
        }
        // A CQE posted (a receive's, or a flush step's): written if the CQ takes it, with the completion event
        // of an armed CQ; an overrun's events (the CQ error the first time; a live QP's fatal event, never a
        // flushing one's) go out after the payload.
        if ((self.state.q.val() == DispatchState::Exec) & self.send.cqe_valid.val())
            | (self.state.q.val() == DispatchState::FlushExec)
            | ((self.state.q.val() == DispatchState::FetchExec) & self.sq_fetch.retire.val() & self.retire.post.val())
            | ((self.state.q.val() == DispatchState::RetExec) & self.retire.post.val())
        {
            self.cqe_wr.in_valid.next = true;
            self.cq_we.next = self.cqe_wr.written.val() | self.cqe_wr.cq_error.val();
            self.posted.next = self.cqe_wr.written.val();
            self.owe_cqe.d.next = self.cqe_wr.written.val();
            if self.cqe_wr.fire.val() {
                self.eqe_wr.in_valid.next = true;
                self.eq_we.next = self.eqe_wr.written.val();
                self.posted_eqe.next = self.eqe_wr.written.val();
                self.eqe_lost.next = !self.eqe_wr.written.val();
                self.owe_eqe.d.next = self.eqe_wr.written.val();
                self.owe_irq.d.next = self.eqe_wr.fire.val();
            }
            self.ev_cq_err.d.next = self.cqe_wr.cq_error.val();
            self.ev_qp_fatal.d.next = self.cqe_wr.qp_fatal.val();
        }
        self.raw.next = self.decided.val() & (self.rx_route.route.val() == self.raw_route.val());
        if self.err_in.val() | (self.wqe_posted.val() & self.err_seen.q.val()) {
            self.flush_on.d.next = true;
            self.flush_seen.d.next = true;
        }
        if self.err_in.val() {
            self.err_seen.d.next = true;
        }
        if self.reset.val() {
            self.state.d.next = DispatchState::Idle;
            self.count.d.next = 0.into();
            self.owe_cqe.d.next = false;
            self.owe_eqe.d.next = false;
            self.flush.d.next = false;
            self.fetch.d.next = false;
            self.fetch_have.d.next = false;
            self.flush_on.d.next = false;
            self.err_seen.d.next = false;
            self.waited.d.next = 2.into();
            self.flush_seen.d.next = false;
            self.scan.d.next = 0.into();
            self.ev_cq_err.d.next = false;
            self.ev_qp_fatal.d.next = false;
        }
        self.fetch_go.next = self.wqe_fetch.start.val();
    }
}

/// The decision's table: from the record, the route and the verdict, what is done with the frame
/// (`action`) and whether it has payload to place or drain.
#[derive(LogicBlock, Default)]
pub struct Action {
    pub rec: Signal<In, Bits<{ meta::BITS }>>,
    pub route: Signal<In, Bits<4>>,
    pub ce: Signal<In, Bit>,
    pub verdict: Signal<In, Bits<4>>,
    pub room: Signal<In, Bit>,
    /// For a frame that is not RoCEv2: the control queue answers it; a raw packet QP may take it, and has a
    /// receive WQE posted.
    pub raw_ctrl: Signal<In, Bit>,
    pub raw_any: Signal<In, Bit>,
    pub rq_has: Signal<In, Bit>,
    pub action: Signal<Out, Bits<4>>,
    /// The frame carries payload for the dispatch to place or drain (`Meta::carries_payload`).
    pub has_payload: Signal<Out, Bit>,
    /// The record is of a frame that is not RoCEv2 (its RoCE fields are not its).
    pub raw_rec: Signal<Out, Bit>,
    /// A `FATAL_NAK`'s syndrome.
    pub syn: Signal<Out, Bits<8>>,
    /// The action is `ATOMIC` or `DUP_ATOMIC`; `DUP_READ` or `DUP_ATOMIC`.
    pub is_atomic: Signal<Out, Bit>,
    pub is_dup: Signal<Out, Bit>,
    /// The frame's PSN; the PSN the completer's walk acknowledges through (the one before it for a READ
    /// response or atomic ACK, which acknowledge what came before them).
    pub psn: Signal<Out, Bits<24>>,
    pub through: Signal<Out, Bits<24>>,
    /// An atomic ACK's original value (its AtomicAckETH).
    pub orig: Signal<Out, Bits<64>>,
    /// The action is the completer's (`ACK`, `READ_RESP`, `ATOMIC_ACK`); the last.
    pub to_comp: Signal<Out, Bit>,
    pub atomic_ack: Signal<Out, Bit>,
    /// A response's AETH syndrome; it is reserved (it acknowledges nothing).
    pub aeth: Signal<Out, Bits<8>>,
    pub noack: Signal<Out, Bit>,
}

impl Logic for Action {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_responder.rs).
    }

    fn connect(&mut self) {
        self.action.connect();
        self.has_payload.connect();
        self.raw_rec.connect();
        self.syn.connect();
        self.is_atomic.connect();
        self.is_dup.connect();
        self.psn.connect();
        self.through.connect();
        self.orig.connect();
        self.to_comp.connect();
        self.atomic_ack.connect();
        self.aeth.connect();
        self.noack.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(action_verilog())
    }
}

/// The Verilog body of `Action`.
pub fn action_verilog() -> Vec<String> {
    let mut v = vec![format!("wire [7:0] opcode = {};", meta::select("rec", "opcode"))];
    v.extend(opcode_flags(&["k_send", "k_write", "k_read", "k_cas", "k_fadd", "op_immdt"]));
    v.push(format!("wire has_ieth = {};", meta::select("rec", "has_ieth")));
    v.push(format!("wire has_reth = {};", meta::select("rec", "has_reth")));
    let vd = meta::select("rec", "verdict");
    v.push(format!("wire raw = {vd} == 4'd{};", Verdict::NotRoce as u8));
    v.push(format!(
        "wire pay = raw || ({vd} == 4'd{} && {} != 16'd0);",
        Verdict::Ok as u8,
        meta::select("rec", "payload_len")
    ));
    let (drop, write, unbuilt, dup, nak, rnr, recv, fatal, read, dup_read, atomic, dup_atomic) = (
        action::DROP,
        action::WRITE,
        action::UNHANDLED,
        action::DUP_ACK,
        action::SEQ_NAK,
        action::RNR_NAK,
        action::RECV,
        action::FATAL_NAK,
        action::READ,
        action::DUP_READ,
        action::ATOMIC,
        action::DUP_ATOMIC,
    );
    v.push("reg with_data;".into());
    v.push("always @(*) begin".into());
    v.push(format!("    psn = {};", meta::select("rec", "psn")));
    v.push(format!(
        "    orig = {};",
        be_slice("rec", meta::field("atomic_ack_eth").0, AtomicAckEthRepr::FIELDS, AtomicAckEthRepr::LEN, "orig")
    ));
    v.push("    has_payload = pay;".into());
    v.push("    raw_rec = raw;".into());
    v.push(format!(
        "    syn = verdict == 4'd{} ? 8'h{:02x} : 8'h{:02x};",
        verdict::NAK_REMOTE_ACCESS,
        syndrome::NAK_REMOTE_ACCESS,
        syndrome::NAK_INVALID_REQUEST
    ));
    v.push(format!("    action = 4'd{unbuilt};"));
    v.push("    case (route)".into());
    // A frame that is not RoCEv2 and not answered by the control queue is the raw packet QP's, if one may
    // take it and has a receive WQE; otherwise it is dropped.
    v.push(format!(
        "    4'd{}: action = !raw_ctrl && raw_any && rq_has ? 4'd{} : 4'd{drop};",
        route::RAW,
        action::RAW_RECV
    ));
    for r in [route::OTHER_MAC, route::MALFORMED, route::BAD_PKEY, route::NO_QP, route::QP_STATE, route::OTHER_PEER] {
        v.push(format!("    4'd{r}: action = 4'd{drop};"));
    }
    v.push(format!("    4'd{}: if (!ce) action = 4'd{drop};", route::RESPONSE_QP_STATE));
    // An ACK or NAK, a READ response and an atomic ACK go to the completer.
    v.push(format!(
        "    4'd{}: if (!ce && opcode == 8'h{:02x}) action = 4'd{}; else if (!ce && opcode >= 8'h{:02x} && opcode <= 8'h{:02x}) action = 4'd{}; else if (!ce && opcode == 8'h{:02x}) action = 4'd{};",
        route::RESPONSE,
        wire::Opcode::ACKNOWLEDGE.0,
        action::ACK,
        wire::Opcode::RDMA_READ_RESPONSE_FIRST.0,
        wire::Opcode::RDMA_READ_RESPONSE_ONLY.0,
        action::READ_RESP,
        wire::Opcode::ATOMIC_ACKNOWLEDGE.0,
        action::ATOMIC_ACK,
    ));
    v.push(format!("    4'd{}: if (!ce) begin", route::REQUEST));
    v.push("        case (verdict)".into());
    for vd in [verdict::QP_STATE, verdict::SEQ_DROP, verdict::NO_ROOM] {
        v.push(format!("        4'd{vd}: action = 4'd{drop};"));
    }
    v.push(format!("        4'd{}: action = room ? 4'd{nak} : 4'd{drop};", verdict::SEQ_NAK));
    v.push(format!("        4'd{}: action = room ? 4'd{rnr} : 4'd{drop};", verdict::NAK_RNR));
    // A duplicate READ without a RETH is ignored, as the model ignores it.
    v.push(format!(
        "        4'd{}: if (k_send || k_write) action = 4'd{dup}; else if (k_read) action = has_reth ? 4'd{dup_read} : 4'd{drop}; else if (k_cas || k_fadd) action = 4'd{dup_atomic};",
        verdict::DUPLICATE
    ));
    for vd in [verdict::NAK_INVALID_REQUEST, verdict::NAK_REMOTE_ACCESS] {
        v.push(format!("        4'd{vd}: action = 4'd{fatal};"));
    }
    v.push(format!(
        "        4'd{}: if (k_write && !op_immdt) action = 4'd{write}; else if (k_write || (k_send && !has_ieth)) action = 4'd{recv}; else if (k_read) action = 4'd{read}; else if (k_cas || k_fadd) action = 4'd{atomic};",
        verdict::EXECUTE
    ));
    v.push("        default: ;".into());
    v.push("        endcase".into());
    v.push("    end".into());
    v.push("    default: ;".into());
    v.push("    endcase".into());
    v.push(format!("    is_atomic = action == 4'd{atomic} || action == 4'd{dup_atomic};"));
    v.push(format!("    is_dup = action == 4'd{dup_read} || action == 4'd{dup_atomic};"));
    v.push(format!("    with_data = action == 4'd{} || action == 4'd{};", action::READ_RESP, action::ATOMIC_ACK));
    v.push(format!("    atomic_ack = action == 4'd{};", action::ATOMIC_ACK));
    v.push(format!("    to_comp = with_data || action == 4'd{};", action::ACK));
    let aeth = meta::field("aeth").0;
    v.push(format!("    aeth = rec[{}:{}];", aeth + 31, aeth + 24));
    // A reserved AETH (bit 7, or kind 2) acknowledges nothing; a NAK everything before its PSN.
    v.push(format!("    noack = action == 4'd{} && (aeth[7] || aeth[6:5] == 2'd2);", action::ACK));
    v.push("    through = (with_data || aeth[6:5] != 2'd0) ? psn - 24'd1 : psn;".into());
    v.push("end".into());
    v
}
