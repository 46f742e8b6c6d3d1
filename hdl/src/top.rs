//! The tops: what `ferrite verilog` writes and what the `sim` crate Verilates, each at both widths, with
//! the port list the simulation binds to.

use crate::crc::CrcEngine;
use crate::host::gather::MAX_STREAMS;
use crate::kit::*;
use crate::Width;

/// A top-level design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Top {
    /// The CRC-32 engine behind the ICRC checker and inserter.
    Crc,
    /// The RX header decoder (checks and metadata), outputs registered. Width-independent.
    RxDecode,
    /// The whole RX pipeline: frames in; metadata, realigned payload and drop counters out.
    Rx,
    /// The whole TX pipeline: metadata and payload in; frames out.
    Tx,
    /// The NIC core (so far the register file and the command unit), with this many QPs.
    Core(u32),
    /// The responder's check chain on its own (`engine::resp::check`), with `engine_profile`.
    RespCheck,
    /// The responder's SEND / WRITE bookkeeping on its own (`engine::resp::advance`), with `engine_profile`.
    RespAdvance,
    /// One step of the flush of a QP in ERR on its own (`engine::flush::FlushPick`), with `engine_profile`.
    FlushPick,
    /// The responder's sequence-error and RNR NAK queuing on its own (`engine::resp::queue::RespQueue`),
    /// with `engine_profile`.
    RespQueue,
    /// One READ response's step on its own (`engine::resp::read::ReadStep`), with `engine_profile`.
    ReadStep,
    /// A duplicate READ matched against one resource on its own (`engine::resp::dup_read::DupRead`), with
    /// `engine_profile`.
    DupRead,
    /// The requester's segmentation of a message on its own (`engine::req::seg::ReqSeg`), with
    /// `engine_profile`.
    ReqSeg,
    /// Whether a QP's requester may send, on its own (`engine::req::ready::ReqReady`), with `engine_profile`.
    ReqReady,
    /// A send WQE fetched into the requester's window on its own (`engine::req::wqe_fetch::WqeFetch`), with
    /// `engine_profile`.
    WqeFetch,
    /// A send WQE's descriptor read again for a packet on its own (`engine::req::desc::SendDesc`), with
    /// `engine_profile`.
    SendDesc,
    /// One step of the completer's walk over the window on its own (`engine::comp::ack_step::AckStep`), with
    /// `engine_profile`.
    AckStep,
    /// The walk for the oldest unfinished entry of a requester's window on its own
    /// (`engine::req::window::OldestWalk`), with `engine_profile`.
    OldestWalk,
    /// The walk for a window entry's first PSN on its own (`engine::req::window::PsnWalk`), with
    /// `engine_profile`.
    PsnWalk,
    /// The walk for where go-back-N restarts on its own (`engine::req::window::RewindWalk`), with
    /// `engine_profile`.
    RewindWalk,
    /// Which QPs may have a send WQE to fetch, on its own (`engine::req::window::FetchWake`), with
    /// `engine_profile`.
    FetchWake,
    /// The timers' scan on its own (`engine::comp::timer::TimerScan`), with the 1,024-QP core's profile
    /// (`timer_profile`: 16 lanes a row).
    TimerScan,
    /// A packet's payload gathered from a scatter list on its own (`host::gather::DmaGather`).
    DmaGather,
    /// A host read streamed out as payload on its own (`host::stream::DmaStream`), at both widths.
    DmaStream,
    /// The RX route on its own (`engine::recv`), with `engine_profile`.
    RxRoute,
    /// The MAC boundary (`rx::ingress`), at both widths.
    RxIngress,
    /// Payload placement in host memory on its own (`host::place`), at both widths.
    DmaPlace,
    /// The TX headers on their own (`engine::headers`), with `engine_profile`.
    TxHeaders,
    /// Posting and writing a CQE on its own (`engine::cq::CqeWrite`), at both widths.
    CqeWrite,
    /// Posting and writing an EQE on its own (`engine::eq::EqeWrite`), at 8 bytes (`EntryWrite` writes whole
    /// beats: a 16-byte EQE at 64 bytes a beat waits for the 64-byte core).
    EqeWrite,
    /// A payload scattered over SGEs on its own (`host::scatter::DmaScatter`), at both widths.
    DmaScatter,
    /// The DMA read port's mux on its own (`host::dma::DmaReadMux`), with `DMA_MUX_REQUESTERS` requesters.
    DmaReadMux,
    /// The DMA ports' width adapters (`host::adapt`): a read's wide completions as 8-byte beats; an 8-byte
    /// write beat as a wide one. Built at 64 bytes only (at 8 they are wires).
    CplNarrow,
    WriteWiden,
    /// A receive WQE fetched and checked on its own (`engine::resp::recv_wqe::RecvWqe`), with `engine_profile`.
    RecvWqe,
    /// The same with the large profile (16 SGEs, 65,536 MRs).
    RecvWqeLarge,
    /// The counter block's counters on their own (`host::counters::CounterBank`). Width-independent.
    CounterBank,
    /// What a READ response or atomic ACK does to the entry the completer's walk stopped at, on its own
    /// (`engine::comp::resp::RespMatch`), with `engine_profile`.
    RespMatch,
    /// What a response or a timer's end does to its QP's `qp_req` and window, on its own
    /// (`engine::comp::completer::Completer`), with `engine_profile`.
    Completer,
    /// The pop of a finished entry off the window's front on its own (`engine::comp::ack::RetirePop`), with
    /// `engine_profile`.
    RetirePop,
    /// The `qp_resp` record of a QP entering ERR on its own (`engine::flush::EnterErr`), with `engine_profile`.
    EnterErr,
    /// An atomic request's target and the value it takes on its own (`engine::resp::atomic::AtomicOp`).
    AtomicOp,
    /// A duplicate SEND or WRITE acknowledged again on its own (`engine::resp::duplicate::RespDuplicate`),
    /// with `engine_profile`.
    RespDuplicate,
    /// A send WQE's entry pushed into the requester's window on its own (`engine::req::window::SqFetch`), with
    /// `engine_profile`.
    SqFetch,
    /// The responder's transmit side on its own (`engine::resp::tx::RespTx`, with `Owed` and `AckSlot`), with
    /// `engine_profile`.
    RespTx,
    /// The completion of an entry leaving the requester's window on its own (`engine::comp::retire::Retire`),
    /// with `engine_profile`.
    Retire,
    /// A SEND's (or a WRITE with immediate's, or a raw frame's) receive on its own
    /// (`engine::resp::send::RespSend`), with `engine_profile`.
    RespSend,
    /// A READ request's PSN and RETH fields from its RX record on their own (`engine::resp::queue::ReadArgs`).
    ReadArgs,
    /// The dispatch's newest-first scan of a QP's resources on its own (`engine::resp::dup_read::ResScan`),
    /// with `engine_profile`.
    ResScan,
    /// A READ response's payload as a gather list of one SGE on its own (`host::gather::OneSge`).
    OneSge,
    /// The receive WQEs kept between a message's packets, on their own (`engine::resp::wqe_cache::WqeCache`),
    /// with `engine_profile`.
    WqeCache,
    /// The counters a received frame and the later decisions count, on their own
    /// (`engine::counts::RxCount`). Width-independent.
    RxCount,
    /// The core's events gathered into the counter block's increments, on their own
    /// (`engine::counts::CoreEvents`). Width-independent.
    CoreEvents,
}

/// Direction of a top-level port, as the testbench sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    In,
    Out,
}

/// A port of a top: its Verilog name, width in bits and direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Port {
    pub name: &'static str,
    pub bits: usize,
    pub dir: Dir,
}

/// Requesters of the DMA read mux's own top: a number that is not a power of two, so the round robin wraps
/// unevenly.
pub const DMA_MUX_REQUESTERS: usize = 3;

impl Top {
    pub const ALL: [Top; 53] = [
        Top::Crc,
        Top::RxDecode,
        Top::Rx,
        Top::Tx,
        Top::Core(16),
        Top::Core(1024),
        Top::RespCheck,
        Top::RespAdvance,
        Top::RespQueue,
        Top::FlushPick,
        Top::ReadStep,
        Top::DupRead,
        Top::ReqSeg,
        Top::ReqReady,
        Top::WqeFetch,
        Top::SendDesc,
        Top::AckStep,
        Top::OldestWalk,
        Top::PsnWalk,
        Top::RewindWalk,
        Top::FetchWake,
        Top::TimerScan,
        Top::DmaGather,
        Top::DmaStream,
        Top::RxRoute,
        Top::TxHeaders,
        Top::DmaPlace,
        Top::RxIngress,
        Top::CqeWrite,
        Top::EqeWrite,
        Top::RecvWqe,
        Top::RecvWqeLarge,
        Top::DmaScatter,
        Top::DmaReadMux,
        Top::CplNarrow,
        Top::WriteWiden,
        Top::CounterBank,
        Top::RespMatch,
        Top::Completer,
        Top::RetirePop,
        Top::EnterErr,
        Top::AtomicOp,
        Top::RespDuplicate,
        Top::SqFetch,
        Top::RespTx,
        Top::Retire,
        Top::RespSend,
        Top::ReadArgs,
        Top::ResScan,
        Top::OneSge,
        Top::WqeCache,
        Top::RxCount,
        Top::CoreEvents,
    ];

    /// The board profile's core: written by `ferrite verilog` for synthesis, not simulated (the tests use
    /// the 16- and 1024-QP cores).
    pub const BOARD_CORE: Top = Top::Core(wire::contract::profile::Profile::board().max_qp);

    /// The large profile's QP count on one core (8 bytes): simulated only in a build that asks for it
    /// (`--features large-core`), for its benchmark; its Verilated C++ is about six times the 1,024-QP
    /// core's and takes minutes to compile.
    pub const LARGE_CORE: Top = Top::Core(wire::contract::profile::Profile::large().max_qp);

    /// The beats the MAC boundary's FIFO holds at width `w`.
    pub fn rx_ingress_depth(w: Width) -> usize {
        1 << match w {
            Width::W8 => INGRESS_LOG2_W8,
            Width::W64 => INGRESS_LOG2_W64,
        }
    }

    /// The profile the engine blocks' own tops are built with: the 16-QP core's.
    pub fn engine_profile() -> wire::contract::profile::Profile {
        crate::core::info(16, Width::W8).profile
    }

    /// The profile `Top::TimerScan` is built with: the 1,024-QP core's, whose timers' table has 16 lanes.
    pub fn timer_profile() -> wire::contract::profile::Profile {
        crate::core::info(1024, Width::W8).profile
    }

    /// Every top `ferrite verilog` writes: the simulated ones and the board's core.
    pub fn written() -> impl Iterator<Item = Top> {
        Top::ALL.into_iter().chain([Top::BOARD_CORE])
    }

    /// The widths this top is built at (a width-independent top only at the narrow one).
    pub fn widths(self) -> &'static [Width] {
        match self {
            Top::Core(16) => &Width::ALL,
            Top::RxDecode
            | Top::Core(_)
            | Top::RespCheck
            | Top::RespAdvance
            | Top::RespQueue
            | Top::FlushPick
            | Top::ReadStep
            | Top::DupRead
            | Top::ReqSeg
            | Top::ReqReady
            | Top::WqeFetch
            | Top::SendDesc
            | Top::AckStep
            | Top::OldestWalk
            | Top::PsnWalk
            | Top::RewindWalk
            | Top::FetchWake
            | Top::TimerScan
            | Top::EqeWrite
            | Top::RecvWqe
            | Top::RecvWqeLarge
            | Top::DmaReadMux
            | Top::RxRoute
            | Top::TxHeaders
            | Top::CounterBank
            | Top::RespMatch
            | Top::Completer
            | Top::RetirePop
            | Top::EnterErr
            | Top::AtomicOp
            | Top::RespDuplicate
            | Top::SqFetch
            | Top::RespTx
            | Top::Retire
            | Top::RespSend
            | Top::ReadArgs
            | Top::ResScan
            | Top::OneSge
            | Top::WqeCache
            | Top::RxCount
            | Top::CoreEvents => &[Width::W8],
            Top::CplNarrow | Top::WriteWiden => &[Width::W64],
            _ => &Width::ALL,
        }
    }

    /// File and model name stem, e.g. `crc_w8`.
    pub fn name(self, w: Width) -> String {
        match self {
            Top::Crc => format!("crc_w{}", w.bytes()),
            Top::RxDecode => "rx_decode".into(),
            Top::Rx => format!("rx_w{}", w.bytes()),
            Top::Tx => format!("tx_w{}", w.bytes()),
            Top::Core(qps) => match w {
                Width::W8 => format!("core_q{qps}"),
                Width::W64 => format!("core_q{qps}_w64"),
            },
            Top::RespCheck => "resp_check".into(),
            Top::RespAdvance => "resp_advance".into(),
            Top::RespQueue => "resp_queue".into(),
            Top::FlushPick => "flush_pick".into(),
            Top::ReadStep => "read_step".into(),
            Top::DupRead => "dup_read".into(),
            Top::ReqSeg => "req_seg".into(),
            Top::ReqReady => "req_ready".into(),
            Top::WqeFetch => "wqe_fetch".into(),
            Top::SendDesc => "send_desc".into(),
            Top::AckStep => "ack_step".into(),
            Top::OldestWalk => "oldest_walk".into(),
            Top::PsnWalk => "psn_walk".into(),
            Top::RewindWalk => "rewind_walk".into(),
            Top::FetchWake => "fetch_wake".into(),
            Top::TimerScan => "timer_scan".into(),
            Top::DmaGather => format!("dma_gather_w{}", w.bytes()),
            Top::DmaStream => format!("dma_stream_w{}", w.bytes()),
            Top::RxRoute => "rx_route".into(),
            Top::TxHeaders => "tx_headers".into(),
            Top::DmaPlace => format!("dma_place_w{}", w.bytes()),
            Top::RxIngress => format!("rx_ingress_w{}", w.bytes()),
            Top::CqeWrite => format!("cqe_write_w{}", w.bytes()),
            Top::EqeWrite => "eqe_write_w8".into(),
            Top::RecvWqe => "recv_wqe".into(),
            Top::RecvWqeLarge => "recv_wqe_large".into(),
            Top::DmaReadMux => "dma_read_mux".into(),
            Top::CplNarrow => format!("cpl_narrow_w{}", w.bytes()),
            Top::WriteWiden => format!("write_widen_w{}", w.bytes()),
            Top::DmaScatter => format!("dma_scatter_w{}", w.bytes()),
            Top::CounterBank => "counter_bank".into(),
            Top::RespMatch => "resp_match".into(),
            Top::Completer => "completer".into(),
            Top::RetirePop => "retire_pop".into(),
            Top::EnterErr => "enter_err".into(),
            Top::AtomicOp => "atomic_op".into(),
            Top::RespDuplicate => "resp_duplicate".into(),
            Top::SqFetch => "sq_fetch".into(),
            Top::RespTx => "resp_tx".into(),
            Top::Retire => "retire".into(),
            Top::RespSend => "resp_send".into(),
            Top::ReadArgs => "read_args".into(),
            Top::ResScan => "res_scan".into(),
            Top::OneSge => "one_sge".into(),
            Top::WqeCache => "wqe_cache".into(),
            Top::RxCount => "rx_count".into(),
            Top::CoreEvents => "core_events".into(),
        }
    }

    /// The ports, in the order the simulation numbers them. `clock` is always port 0.
    pub fn ports(self, w: Width) -> Vec<Port> {
        let k = w.bytes();
        let p = |name, bits, dir| Port { name, bits, dir };
        match self {
            Top::Crc => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("data", 8 * k, Dir::In),
                p("keep", k, Dir::In),
                p("last", 1, Dir::In),
                p("valid", 1, Dir::In),
                p("crc", 32, Dir::Out),
                p("crc_valid", 1, Dir::Out),
            ],
            Top::RxDecode => vec![
                p("clock", 1, Dir::In),
                p("hdr", 8 * crate::rx::decode::HDR_BYTES, Dir::In),
                p("len", 16, Dir::In),
                p("meta", crate::rx::meta::BITS, Dir::Out),
                p("ip_end", 17, Dir::Out),
                p("vlan", 1, Dir::Out),
                p("ipv6", 1, Dir::Out),
            ],
            Top::Rx => {
                let mut v = vec![
                    p("clock", 1, Dir::In),
                    p("in_data", 8 * k, Dir::In),
                    p("in_keep", k, Dir::In),
                    p("in_last", 1, Dir::In),
                    p("in_valid", 1, Dir::In),
                    p("in_ready", 1, Dir::Out),
                    p("meta", crate::rx::meta::BITS, Dir::Out),
                    p("meta_valid", 1, Dir::Out),
                    p("meta_ready", 1, Dir::In),
                    p("out_data", 8 * k, Dir::Out),
                    p("out_keep", k, Dir::Out),
                    p("out_last", 1, Dir::Out),
                    p("out_valid", 1, Dir::Out),
                    p("out_ready", 1, Dir::In),
                ];
                v.extend(RX_COUNTERS.iter().map(|&c| p(c, 32, Dir::Out)));
                v
            }
            Top::Tx => vec![
                p("clock", 1, Dir::In),
                p("meta", crate::rx::meta::BITS, Dir::In),
                p("meta_valid", 1, Dir::In),
                p("meta_ready", 1, Dir::Out),
                p("pay_data", 8 * k, Dir::In),
                p("pay_keep", k, Dir::In),
                p("pay_last", 1, Dir::In),
                p("pay_valid", 1, Dir::In),
                p("pay_ready", 1, Dir::Out),
                p("out_data", 8 * k, Dir::Out),
                p("out_keep", k, Dir::Out),
                p("out_last", 1, Dir::Out),
                p("out_valid", 1, Dir::Out),
                p("out_ready", 1, Dir::In),
            ],
            Top::Core(_) => crate::core::ports(w),
            Top::CounterBank => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("inc", crate::engine::counts::INC_BITS, Dir::In),
                p("inc2", crate::engine::counts::INC_BITS, Dir::In),
                p("rx_add", 16, Dir::In),
                p("tx_add", 16, Dir::In),
                p("index", crate::host::counters::INDEX_BITS, Dir::In),
                p("value", 64, Dir::Out),
            ],
            Top::RespCheck => {
                use crate::engine::cmd::exec::{ATTR_BITS, MR_BITS, RESP_BITS};
                vec![
                    p("clock", 1, Dir::In),
                    p("meta", crate::rx::meta::BITS, Dir::In),
                    p("attr", ATTR_BITS, Dir::In),
                    p("resp", RESP_BITS, Dir::In),
                    p("key_index", 24, Dir::Out),
                    p("mr", MR_BITS, Dir::In),
                    p("verdict", 4, Dir::Out),
                    p("room", 1, Dir::Out),
                    p("key_bad", 1, Dir::Out),
                ]
            }
            Top::RespMatch => {
                use crate::engine::cmd::exec::ATTR_BITS;
                use crate::engine::req::ready::WQE_BITS;
                vec![
                    p("attr", ATTR_BITS, Dir::In),
                    p("entry", WQE_BITS, Dir::In),
                    p("held", 1, Dir::In),
                    p("first", 24, Dir::In),
                    p("comp", 24, Dir::In),
                    p("rec", crate::rx::meta::BITS, Dir::In),
                    p("take", 1, Dir::Out),
                    p("bad", 1, Dir::Out),
                    p("ahead", 1, Dir::Out),
                    p("last", 1, Dir::Out),
                    p("off", 32, Dir::Out),
                    p("bytes", 32, Dir::Out),
                ]
            }
            Top::Completer => {
                use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
                use crate::engine::req::ready::WQE_BITS;
                let mut v = vec![
                    p("clock", 1, Dir::In),
                    p("reset", 1, Dir::In),
                    p("attr", ATTR_BITS, Dir::In),
                    p("req", REQ_BITS, Dir::In),
                    p("tick", wire::contract::qpc::TICK_BITS as usize, Dir::In),
                    p("start", 1, Dir::In),
                    p("rec", crate::rx::meta::BITS, Dir::In),
                    p("psn", 24, Dir::In),
                    p("through", 24, Dir::In),
                    p("noack", 1, Dir::In),
                    p("aeth", 8, Dir::In),
                    p("sent", 1, Dir::Out),
                    p("walk_done", 1, Dir::Out),
                    p("walk_req_next", REQ_BITS, Dir::Out),
                    p("run", 1, Dir::Out),
                    p("retire", 1, Dir::Out),
                    p("walk_r_slot", 8, Dir::Out),
                    p("walk_w_we", 1, Dir::Out),
                    p("walk_w_slot", 8, Dir::Out),
                    p("walk_w_entry", WQE_BITS, Dir::Out),
                ];
                v.extend(["run_start", "tmr_ack", "tmr_rnr"].map(|n| p(n, 1, Dir::In)));
                v.extend(["ack_due", "rnr_due", "run_done"].map(|n| p(n, 1, Dir::Out)));
                v.extend([
                    p("run_req_next", REQ_BITS, Dir::Out),
                    p("timed_out", 1, Dir::Out),
                    p("run_r_slot", 8, Dir::Out),
                    p("run_w_we", 1, Dir::Out),
                    p("run_w_slot", 8, Dir::Out),
                    p("run_w_entry", WQE_BITS, Dir::Out),
                    p("r_entry", WQE_BITS, Dir::In),
                    p("rd_valid", 1, Dir::Out),
                    p("rd_ready", 1, Dir::In),
                    p("rd_addr", 64, Dir::Out),
                    p("rd_len", 16, Dir::Out),
                    p("rd_open", 1, Dir::Out),
                    p("cpl_valid", 1, Dir::In),
                    p("cpl_data", 64, Dir::In),
                    p("cpl_err", 1, Dir::In),
                    p("cpl_last", 1, Dir::In),
                    p("sc_start", 1, Dir::Out),
                    p("sc_sges", crate::engine::resp::recv_wqe::SGES_BITS, Dir::Out),
                    p("sc_count", 8, Dir::Out),
                    p("sc_off", 32, Dir::Out),
                    p("sc_len", 32, Dir::Out),
                    p("sc_fits", 1, Dir::In),
                ]);
                v
            }
            Top::RetirePop => {
                use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
                vec![
                    p("attr", ATTR_BITS, Dir::In),
                    p("req", REQ_BITS, Dir::In),
                    p("front", crate::engine::req::ready::WQE_BITS, Dir::In),
                    p("slot", 8, Dir::Out),
                    p("due", 1, Dir::Out),
                    p("failed", 1, Dir::Out),
                    p("index", 16, Dir::Out),
                    p("req_next", REQ_BITS, Dir::Out),
                ]
            }
            Top::EnterErr => vec![
                p("resp", crate::engine::cmd::exec::RESP_BITS, Dir::In),
                p("resp_err", crate::engine::cmd::exec::RESP_BITS, Dir::Out),
            ],
            Top::AtomicOp => vec![
                p("meta", crate::rx::meta::BITS, Dir::In),
                p("orig", 64, Dir::In),
                p("va", 64, Dir::Out),
                p("result", 64, Dir::Out),
            ],
            Top::RespDuplicate => vec![
                p("clock", 1, Dir::In),
                p("resp", crate::engine::cmd::exec::RESP_BITS, Dir::In),
                p("resp_next", crate::engine::cmd::exec::RESP_BITS, Dir::Out),
            ],
            Top::SqFetch => {
                use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
                vec![
                    p("qp_valid", 1, Dir::In),
                    p("attr", ATTR_BITS, Dir::In),
                    p("req", REQ_BITS, Dir::In),
                    p("entry", crate::engine::req::ready::WQE_BITS, Dir::In),
                    p("fetchable", 1, Dir::Out),
                    p("index", 16, Dir::Out),
                    p("slot", 8, Dir::Out),
                    p("sq_ci", 16, Dir::Out),
                    p("retire", 1, Dir::Out),
                    p("req_next", REQ_BITS, Dir::Out),
                ]
            }
            Top::RespTx => {
                use crate::engine::cmd::exec::{ATTR_BITS, RESP_BITS};
                use crate::engine::resp::queue::ITEM_BITS;
                let mut v = vec![p("clock", 1, Dir::In), p("reset", 1, Dir::In)];
                v.extend([
                    p("wb_we", 1, Dir::In),
                    p("wb_qpn", 24, Dir::In),
                    p("wb_resp", RESP_BITS, Dir::In),
                    p("hold", 1, Dir::In),
                    p("qp_valid", 1, Dir::In),
                    p("attr", ATTR_BITS, Dir::In),
                    p("resp", RESP_BITS, Dir::In),
                    p("gid", 128, Dir::In),
                    p("gid_valid", 1, Dir::In),
                    p("mac", 48, Dir::In),
                    p("item", ITEM_BITS, Dir::In),
                    p("rd_can", 1, Dir::In),
                    p("wr_quiet", 1, Dir::In),
                    p("rd_first", 1, Dir::In),
                    p("rd_err", 1, Dir::In),
                    p("meta_ready", 1, Dir::In),
                ]);
                v.extend(["ctx_busy", "idle", "want"].map(|n| p(n, 1, Dir::Out)));
                v.extend([
                    p("qp_index", 24, Dir::Out),
                    p("gid_index", 4, Dir::Out),
                    p("resp_we", 1, Dir::Out),
                    p("resp_qpn", 24, Dir::Out),
                    p("resp_next", RESP_BITS, Dir::Out),
                    p("item_slot", 8, Dir::Out),
                    p("item_we", 1, Dir::Out),
                    p("item_w_slot", 8, Dir::Out),
                    p("item_w", ITEM_BITS, Dir::Out),
                    p("rd_start", 1, Dir::Out),
                    p("rd_addr", 64, Dir::Out),
                    p("rd_len", 16, Dir::Out),
                    p("meta", crate::rx::meta::BITS, Dir::Out),
                ]);
                v.extend(["meta_valid", "decided", "nil", "rec_owed", "acked", "err"].map(|n| p(n, 1, Dir::Out)));
                v.push(p("tx_qpn", 24, Dir::Out));
                v
            }
            Top::Retire => vec![
                p("qpn", 24, Dir::In),
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("wqe", crate::engine::req::ready::WQE_BITS, Dir::In),
                p("index", 16, Dir::In),
                p("post", 1, Dir::Out),
                p("cqn", 16, Dir::Out),
                p("cqe", crate::engine::cq::CQE_BITS, Dir::Out),
            ],
            Top::RespSend => {
                use crate::engine::cmd::exec::{ATTR_BITS, RESP_BITS};
                let mut v = vec![
                    p("meta", crate::rx::meta::BITS, Dir::In),
                    p("qpn", 24, Dir::In),
                    p("attr", ATTR_BITS, Dir::In),
                    p("resp", RESP_BITS, Dir::In),
                    p("adv", RESP_BITS, Dir::In),
                    p("raw", 1, Dir::In),
                    p("wqe_ok", 1, Dir::In),
                    p("wr_id", 64, Dir::In),
                    p("fits", 1, Dir::In),
                    p("index", 16, Dir::Out),
                    p("off", 32, Dir::Out),
                    p("len", 32, Dir::Out),
                ];
                v.extend(["is_send", "fatal"].map(|n| p(n, 1, Dir::Out)));
                v.push(p("syn", 8, Dir::Out));
                v.extend(["raw_fail", "drain", "rq_has", "rq_ci_we"].map(|n| p(n, 1, Dir::Out)));
                v.extend([
                    p("rq_ci", 16, Dir::Out),
                    p("resp_next", RESP_BITS, Dir::Out),
                    p("cqe_valid", 1, Dir::Out),
                    p("cqe", crate::engine::cq::CQE_BITS, Dir::Out),
                    p("cqn", 16, Dir::Out),
                    p("qp_live", 1, Dir::Out),
                ]);
                v
            }
            Top::ReadArgs => vec![
                p("meta", crate::rx::meta::BITS, Dir::In),
                p("psn", 24, Dir::Out),
                p("va", 64, Dir::Out),
                p("len", 32, Dir::Out),
                p("rkey", 32, Dir::Out),
            ],
            Top::ResScan => vec![
                p("resp", crate::engine::cmd::exec::RESP_BITS, Dir::In),
                p("i", 8, Dir::In),
                p("slot", 8, Dir::Out),
                p("more", 1, Dir::Out),
            ],
            Top::OneSge => vec![
                p("addr", 64, Dir::In),
                p("len", 16, Dir::In),
                p("sges", crate::engine::resp::recv_wqe::SGES_BITS, Dir::Out),
            ],
            Top::WqeCache => {
                use crate::engine::resp::recv_wqe::SGES_BITS;
                let mut v = vec![p("clock", 1, Dir::In)];
                v.extend(["reset", "clear", "fill_start"].map(|n| p(n, 1, Dir::In)));
                v.extend([p("qpn", 24, Dir::In), p("index", 16, Dir::In)]);
                v.extend(["fill_valid", "fill_err", "fill_last", "store", "st_ok"].map(|n| p(n, 1, Dir::In)));
                v.extend([p("st_wr_id", 64, Dir::In), p("st_count", 8, Dir::In), p("st_sges", SGES_BITS, Dir::In)]);
                v.extend([p("hit", 1, Dir::Out), p("ok", 1, Dir::Out), p("wr_id", 64, Dir::Out)]);
                v.extend([p("count", 8, Dir::Out), p("sges", SGES_BITS, Dir::Out)]);
                v
            }
            Top::RxCount => {
                use crate::engine::counts::INC_BITS;
                let mut v = vec![
                    p("rec", crate::rx::meta::BITS, Dir::In),
                    p("route", 4, Dir::In),
                    p("ce", 1, Dir::In),
                    p("verdict", 4, Dir::In),
                    p("room", 1, Dir::In),
                    p("action", 4, Dir::In),
                    p("sent", 1, Dir::In),
                    p("aeth", 8, Dir::In),
                ];
                v.extend(["raw_ctrl", "raw_any", "raw_rx", "at_exec", "rq_moves", "fatal"].map(|n| p(n, 1, Dir::In)));
                v.push(p("syn", 8, Dir::In));
                v.extend(
                    ["at_dup", "part", "key_bad", "at_atomic", "word_err", "at_timer", "timer_rnr", "outstanding"]
                        .map(|n| p(n, 1, Dir::In)),
                );
                v.extend([
                    p("of_frame", INC_BITS, Dir::Out),
                    p("outcome", INC_BITS, Dir::Out),
                    p("rx_len", 16, Dir::Out),
                ]);
                v
            }
            Top::CoreEvents => {
                use crate::engine::counts::INC_BITS;
                let mut v = vec![
                    p("rx_decided", 1, Dir::In),
                    p("rx_len", 16, Dir::In),
                    p("of_frame", INC_BITS, Dir::In),
                    p("outcome", INC_BITS, Dir::In),
                ];
                v.extend(
                    [
                        "fetched",
                        "cqe",
                        "cqe_err",
                        "eqe",
                        "eqe_lost",
                        "irq",
                        "read_failed",
                        "tx_ack",
                        "retransmit",
                        "tx_take",
                    ]
                    .map(|n| p(n, 1, Dir::In)),
                );
                v.extend([
                    p("meta", crate::rx::meta::BITS, Dir::In),
                    p("doorbell_ignored", 1, Dir::In),
                    p("raw_inc", INC_BITS, Dir::In),
                    p("ctrl_sent", 1, Dir::In),
                    p("ctrl_len", 16, Dir::In),
                    p("inc", INC_BITS, Dir::Out),
                    p("inc2", INC_BITS, Dir::Out),
                    p("rx_add", 16, Dir::Out),
                    p("tx_add", 16, Dir::Out),
                ]);
                v
            }
            Top::RespAdvance => vec![
                p("clock", 1, Dir::In),
                p("meta", crate::rx::meta::BITS, Dir::In),
                p("resp", crate::engine::cmd::exec::RESP_BITS, Dir::In),
                p("resp_next", crate::engine::cmd::exec::RESP_BITS, Dir::Out),
                p("va", 64, Dir::Out),
            ],
            Top::RespQueue => {
                let item = crate::engine::resp::queue::ITEM_BITS;
                vec![
                    p("clock", 1, Dir::In),
                    p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                    p("resp", crate::engine::cmd::exec::RESP_BITS, Dir::In),
                    p("rnr", 1, Dir::In),
                    p("fatal", 1, Dir::In),
                    p("fatal_syn", 8, Dir::In),
                    p("read", 1, Dir::In),
                    p("psn", 24, Dir::In),
                    p("va", 64, Dir::In),
                    p("len", 32, Dir::In),
                    p("rkey", 32, Dir::In),
                    p("dup", 1, Dir::In),
                    p("dup_base", 1, Dir::In),
                    p("dup_msn", 24, Dir::In),
                    p("atomic", 1, Dir::In),
                    p("orig", 64, Dir::In),
                    p("resp_next", crate::engine::cmd::exec::RESP_BITS, Dir::Out),
                    p("first", item, Dir::Out),
                    p("first_slot", 8, Dir::Out),
                    p("second_valid", 1, Dir::Out),
                    p("second", item, Dir::Out),
                    p("res", crate::engine::resp::queue::RES_BITS, Dir::Out),
                    p("res_slot", 8, Dir::Out),
                ]
            }
            Top::FlushPick => {
                let (a, r) = (crate::engine::cmd::exec::ATTR_BITS, crate::engine::cmd::exec::RESP_BITS);
                let rq = crate::engine::cmd::exec::REQ_BITS;
                vec![
                    p("clock", 1, Dir::In),
                    p("qpn", 24, Dir::In),
                    p("qp_valid", 1, Dir::In),
                    p("attr", a, Dir::In),
                    p("req", rq, Dir::In),
                    p("resp", r, Dir::In),
                    p("front", crate::engine::req::ready::WQE_BITS, Dir::In),
                    p("oldest_at", 8, Dir::In),
                    p("win_base", 16, Dir::Out),
                    p("walk_from", 8, Dir::Out),
                    p("win_count", 8, Dir::Out),
                    p("hdr", 128, Dir::In),
                    p("what", 3, Dir::Out),
                    p("rd_addr", 64, Dir::Out),
                    p("rd_len", 16, Dir::Out),
                    p("sq_ci", 16, Dir::Out),
                    p("rq_ci", 16, Dir::Out),
                    p("resp_next", r, Dir::Out),
                    p("req_next", rq, Dir::Out),
                    p("cqe", crate::engine::cq::CQE_BITS, Dir::Out),
                    p("cqn", 16, Dir::Out),
                    p("qp_live", 1, Dir::Out),
                ]
            }
            Top::ReadStep => {
                use crate::engine::cmd::exec::{ATTR_BITS, RESP_BITS};
                let item = crate::engine::resp::queue::ITEM_BITS;
                vec![
                    p("clock", 1, Dir::In),
                    p("attr", ATTR_BITS, Dir::In),
                    p("resp", RESP_BITS, Dir::In),
                    p("item", item, Dir::In),
                    p("psn", 24, Dir::Out),
                    p("opcode", 8, Dir::Out),
                    p("has_aeth", 1, Dir::Out),
                    p("aeth", 32, Dir::Out),
                    p("va", 64, Dir::Out),
                    p("len", 16, Dir::Out),
                    p("last", 1, Dir::Out),
                    p("item_next", item, Dir::Out),
                    p("slot", 8, Dir::Out),
                    p("resp_next", RESP_BITS, Dir::Out),
                    p("resp_err", RESP_BITS, Dir::Out),
                    p("nak", item, Dir::Out),
                    p("nak_slot", 8, Dir::Out),
                ]
            }
            Top::DupRead => vec![
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("res", crate::engine::resp::queue::RES_BITS, Dir::In),
                p("psn", 24, Dir::In),
                p("va", 64, Dir::In),
                p("len", 32, Dir::In),
                p("rkey", 32, Dir::In),
                p("covers", 1, Dir::Out),
                p("part", 1, Dir::Out),
                p("at_base", 1, Dir::Out),
                p("msn", 24, Dir::Out),
                p("hit", 1, Dir::Out),
                p("word", 64, Dir::Out),
            ],
            Top::ReqSeg => vec![
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("op", 4, Dir::In),
                p("flags", 4, Dir::In),
                p("len", 32, Dir::In),
                p("first", 24, Dir::In),
                p("psn", 24, Dir::In),
                p("va", 64, Dir::In),
                p("since", 6, Dir::In),
                p("opcode", 8, Dir::Out),
                p("off", 32, Dir::Out),
                p("payload_len", 16, Dir::Out),
                p("has_reth", 1, Dir::Out),
                p("reth_va", 64, Dir::Out),
                p("reth_len", 32, Dir::Out),
                p("ack_req", 1, Dir::Out),
                p("solicited", 1, Dir::Out),
                p("next_psn", 24, Dir::Out),
                p("last", 1, Dir::Out),
                p("since_next", 6, Dir::Out),
            ],
            Top::ReqReady => vec![
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("req", crate::engine::cmd::exec::REQ_BITS, Dir::In),
                p("wqe", crate::engine::req::ready::WQE_BITS, Dir::In),
                p("ready", 1, Dir::Out),
            ],
            Top::AckStep => vec![
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("wqe", crate::engine::req::ready::WQE_BITS, Dir::In),
                p("first", 24, Dir::In),
                p("psn", 24, Dir::In),
                p("comp", 24, Dir::In),
                p("skip", 1, Dir::Out),
                p("stop", 1, Dir::Out),
                p("moved", 1, Dir::Out),
                p("gap", 1, Dir::Out),
                p("finish", 1, Dir::Out),
                p("comp_next", 24, Dir::Out),
                p("next_first", 24, Dir::Out),
            ],
            Top::DmaGather => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("start", 1, Dir::In),
                p("sges", crate::engine::resp::recv_wqe::SGES_BITS, Dir::In),
                p("count", 8, Dir::In),
                p("off", 32, Dir::In),
                p("len", 32, Dir::In),
                p("claim", 1, Dir::In),
                p("tag", 32, Dir::In),
                p("msg_end", 32, Dir::In),
                p("busy", 1, Dir::Out),
                p("reading", 1, Dir::Out),
                p("done", 1, Dir::Out),
                p("err", 1, Dir::Out),
                p("drop", 1, Dir::In),
                p("rd_valid", MAX_STREAMS, Dir::Out),
                p("rd_ready", MAX_STREAMS, Dir::In),
                p("rd_addr", 64 * MAX_STREAMS, Dir::Out),
                p("rd_len", 16 * MAX_STREAMS, Dir::Out),
                p("cpl_valid", MAX_STREAMS, Dir::In),
                p("cpl_data", 8 * k, Dir::In),
                p("cpl_err", 1, Dir::In),
                p("cpl_last", 1, Dir::In),
                p("out_data", 8 * k, Dir::Out),
                p("out_keep", k, Dir::Out),
                p("out_last", 1, Dir::Out),
                p("out_valid", 1, Dir::Out),
                p("out_ready", 1, Dir::In),
            ],
            Top::TimerScan => {
                use crate::engine::comp::timer::TIMER_LANES;
                use wire::contract::qpc::{NEAR_TICK_BITS, TICK_BITS};
                let (l, t, n) = (TIMER_LANES, TICK_BITS as usize, NEAR_TICK_BITS as usize);
                vec![
                    p("clock", 1, Dir::In),
                    p("reset", 1, Dir::In),
                    p("tick", t, Dir::In),
                    p("tm_index", 24, Dir::Out),
                    p("tm_live", l, Dir::In),
                    p("tm_ack", l, Dir::In),
                    p("tm_ack_at", l * t, Dir::In),
                    p("tm_rnr", l, Dir::In),
                    p("tm_rnr_at", l * n, Dir::In),
                    p("fire", 1, Dir::Out),
                    p("fire_qpn", 24, Dir::Out),
                    p("fire_rnr", 1, Dir::Out),
                    p("take", 1, Dir::In),
                ]
            }
            Top::FetchWake => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("rung", 1, Dir::In),
                p("rung_qpn", 24, Dir::In),
                p("cmd", 1, Dir::In),
                p("cmd_qpn", 24, Dir::In),
                p("visit", 1, Dir::In),
                p("visit_qpn", 24, Dir::In),
                p("clear", 1, Dir::In),
                p("any", 1, Dir::Out),
                p("pick", 24, Dir::Out),
                p("at_qpn", 24, Dir::In),
                p("at_alone", 1, Dir::Out),
            ],
            Top::PsnWalk => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("start", 1, Dir::In),
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("base", 16, Dir::In),
                p("from", 8, Dir::In),
                p("count", 8, Dir::In),
                p("psn", 24, Dir::In),
                p("r_slot", 8, Dir::Out),
                p("r_entry", crate::engine::req::ready::WQE_BITS, Dir::In),
                p("done", 1, Dir::Out),
                p("first", 24, Dir::Out),
            ],
            Top::RewindWalk => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("start", 1, Dir::In),
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("base", 16, Dir::In),
                p("from", 8, Dir::In),
                p("count", 8, Dir::In),
                p("psn", 24, Dir::In),
                p("target", 24, Dir::In),
                p("r_slot", 8, Dir::Out),
                p("r_entry", crate::engine::req::ready::WQE_BITS, Dir::In),
                p("done", 1, Dir::Out),
                p("cursor", 8, Dir::Out),
                p("cursor_psn", 24, Dir::Out),
            ],
            Top::OldestWalk => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("start", 1, Dir::In),
                p("base", 16, Dir::In),
                p("from", 8, Dir::In),
                p("count", 8, Dir::In),
                p("r_slot", 8, Dir::Out),
                p("r_entry", crate::engine::req::ready::WQE_BITS, Dir::In),
                p("done", 1, Dir::Out),
                p("at", 8, Dir::Out),
            ],
            Top::WqeFetch => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("start", 1, Dir::In),
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("index", 16, Dir::In),
                p("busy", 1, Dir::Out),
                p("rd_valid", 1, Dir::Out),
                p("rd_ready", 1, Dir::In),
                p("rd_addr", 64, Dir::Out),
                p("rd_len", 16, Dir::Out),
                p("cpl_valid", 1, Dir::In),
                p("cpl_data", 64, Dir::In),
                p("cpl_err", 1, Dir::In),
                p("cpl_last", 1, Dir::In),
                p("mr_index", 24, Dir::Out),
                p("mr", crate::engine::cmd::exec::MR_BITS, Dir::In),
                p("done", 1, Dir::Out),
                p("entry", crate::engine::req::ready::WQE_BITS, Dir::Out),
            ],
            Top::SendDesc => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("start", 1, Dir::In),
                p("snoop", 1, Dir::In),
                p("cut", 1, Dir::In),
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("index", 16, Dir::In),
                p("busy", 1, Dir::Out),
                p("rd_valid", 1, Dir::Out),
                p("rd_ready", 1, Dir::In),
                p("rd_addr", 64, Dir::Out),
                p("rd_len", 16, Dir::Out),
                p("cpl_valid", 1, Dir::In),
                p("cpl_data", 64, Dir::In),
                p("cpl_err", 1, Dir::In),
                p("cpl_last", 1, Dir::In),
                p("done", 1, Dir::Out),
                p("ok", 1, Dir::Out),
                p("imm", 32, Dir::Out),
                p("va", 64, Dir::Out),
                p("rkey", 32, Dir::Out),
                p("swap_add", 64, Dir::Out),
                p("compare", 64, Dir::Out),
                p("inline_data", 1, Dir::Out),
                p("num", 16, Dir::Out),
                p("slot_addr", 64, Dir::Out),
                p("count", 8, Dir::Out),
                p("sges", crate::engine::resp::recv_wqe::SGES_BITS, Dir::Out),
            ],
            Top::DmaStream => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("start", 1, Dir::In),
                p("addr", 64, Dir::In),
                p("len", 16, Dir::In),
                p("can_start", 1, Dir::Out),
                p("rd_valid", 1, Dir::Out),
                p("rd_ready", 1, Dir::In),
                p("rd_addr", 64, Dir::Out),
                p("rd_len", 16, Dir::Out),
                p("cpl_valid", 1, Dir::In),
                p("cpl_data", 8 * k, Dir::In),
                p("cpl_err", 1, Dir::In),
                p("cpl_last", 1, Dir::In),
                p("first", 1, Dir::Out),
                p("err", 1, Dir::Out),
                p("out_data", 8 * k, Dir::Out),
                p("out_keep", k, Dir::Out),
                p("out_last", 1, Dir::Out),
                p("out_valid", 1, Dir::Out),
                p("out_ready", 1, Dir::In),
            ],
            Top::RxRoute => vec![
                p("clock", 1, Dir::In),
                p("meta", crate::rx::meta::BITS, Dir::In),
                p("mac", 48, Dir::In),
                p("qp_index", 24, Dir::Out),
                p("qp_valid", 1, Dir::In),
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("gid_index", 4, Dir::Out),
                p("gid", 128, Dir::In),
                p("gid_valid", 1, Dir::In),
                p("route", 4, Dir::Out),
                p("ce", 1, Dir::Out),
            ],
            Top::RxIngress => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("mac_data", 8 * k, Dir::In),
                p("mac_keep", k, Dir::In),
                p("mac_last", 1, Dir::In),
                p("mac_valid", 1, Dir::In),
                p("mac_fcs_bad", 1, Dir::In),
                p("out_data", 8 * k, Dir::Out),
                p("out_keep", k, Dir::Out),
                p("out_last", 1, Dir::Out),
                p("out_valid", 1, Dir::Out),
                p("out_ready", 1, Dir::In),
                p("cnt_full", 32, Dir::Out),
                p("cnt_bad_fcs", 32, Dir::Out),
                p("clear", 1, Dir::In),
                p("pause", 1, Dir::Out),
            ],
            Top::DmaPlace => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("in_data", 8 * k, Dir::In),
                p("in_keep", k, Dir::In),
                p("in_last", 1, Dir::In),
                p("in_valid", 1, Dir::In),
                p("in_ready", 1, Dir::Out),
                p("va", 64, Dir::In),
                p("lane", 8, Dir::In),
                p("wr_valid", 1, Dir::Out),
                p("wr_ready", 1, Dir::In),
                p("wr_addr", 64, Dir::Out),
                p("wr_data", 8 * k, Dir::Out),
                p("wr_strb", k, Dir::Out),
                p("wr_last", 1, Dir::Out),
            ],
            Top::CplNarrow => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("rq_valid", 1, Dir::In),
                p("rq_ready", 1, Dir::Out),
                p("rq_len", 16, Dir::In),
                p("rd_valid", 1, Dir::Out),
                p("rd_ready", 1, Dir::In),
                p("cp_valid", 1, Dir::In),
                p("cp_data", 8 * k, Dir::In),
                p("cp_err", 1, Dir::In),
                p("cp_last", 1, Dir::In),
                p("cpl_valid", 1, Dir::Out),
                p("cpl_data", 64, Dir::Out),
                p("cpl_err", 1, Dir::Out),
                p("cpl_last", 1, Dir::Out),
            ],
            Top::WriteWiden => vec![
                p("addr", 64, Dir::In),
                p("data", 64, Dir::In),
                p("strb", 8, Dir::In),
                p("wide_addr", 64, Dir::Out),
                p("wide_data", 8 * k, Dir::Out),
                p("wide_strb", k, Dir::Out),
            ],
            Top::DmaReadMux => {
                let m = crate::host::dma::MAX_REQUESTERS;
                vec![
                    p("clock", 1, Dir::In),
                    p("reset", 1, Dir::In),
                    p("rq_valid", m, Dir::In),
                    p("rq_ready", m, Dir::Out),
                    p("rq_addr", 64 * m, Dir::In),
                    p("rq_len", 16 * m, Dir::In),
                    p("cp_valid", m, Dir::Out),
                    p("cp_data", 64, Dir::Out),
                    p("cp_err", 1, Dir::Out),
                    p("cp_last", 1, Dir::Out),
                    p("rd_valid", 1, Dir::Out),
                    p("rd_ready", 1, Dir::In),
                    p("rd_addr", 64, Dir::Out),
                    p("rd_len", 16, Dir::Out),
                    p("rd_tag", 8, Dir::Out),
                    p("cpl_valid", 1, Dir::In),
                    p("cpl_data", 64, Dir::In),
                    p("cpl_tag", 8, Dir::In),
                    p("cpl_err", 1, Dir::In),
                    p("cpl_last", 1, Dir::In),
                ]
            }
            Top::DmaScatter => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("start", 1, Dir::In),
                p("sges", crate::engine::resp::recv_wqe::SGES_BITS, Dir::In),
                p("count", 8, Dir::In),
                p("off", 32, Dir::In),
                p("len", 32, Dir::In),
                p("busy", 1, Dir::Out),
                p("fits", 1, Dir::Out),
                p("in_data", 8 * k, Dir::In),
                p("in_keep", k, Dir::In),
                p("in_last", 1, Dir::In),
                p("in_valid", 1, Dir::In),
                p("in_ready", 1, Dir::Out),
                p("wr_valid", 1, Dir::Out),
                p("wr_ready", 1, Dir::In),
                p("wr_addr", 64, Dir::Out),
                p("wr_data", 8 * k, Dir::Out),
                p("wr_strb", k, Dir::Out),
                p("wr_last", 1, Dir::Out),
            ],
            Top::EqeWrite => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("in_valid", 1, Dir::In),
                p("in_ready", 1, Dir::Out),
                p("eq", crate::engine::cmd::exec::CQ_BITS, Dir::In),
                p("kind", 8, Dir::In),
                p("obj", 32, Dir::In),
                p("written", 1, Dir::Out),
                p("pi_next", 32, Dir::Out),
                p("fire", 1, Dir::Out),
                p("slot", 32, Dir::Out),
                p("wr_valid", 1, Dir::Out),
                p("wr_ready", 1, Dir::In),
                p("wr_addr", 64, Dir::Out),
                p("wr_data", 8 * k, Dir::Out),
                p("wr_strb", k, Dir::Out),
                p("wr_last", 1, Dir::Out),
            ],
            Top::CqeWrite => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("in_valid", 1, Dir::In),
                p("in_ready", 1, Dir::Out),
                p("cq", crate::engine::cmd::exec::CQ_BITS, Dir::In),
                p("cqe", crate::engine::cq::CQE_BITS, Dir::In),
                p("qp_live", 1, Dir::In),
                p("written", 1, Dir::Out),
                p("cq_next", crate::engine::cmd::exec::CQ_BITS, Dir::Out),
                p("fire", 1, Dir::Out),
                p("failed", 1, Dir::Out),
                p("cq_error", 1, Dir::Out),
                p("qp_fatal", 1, Dir::Out),
                p("slot", 32, Dir::Out),
                p("log_size", 4, Dir::Out),
                p("wr_valid", 1, Dir::Out),
                p("wr_ready", 1, Dir::In),
                p("wr_addr", 64, Dir::Out),
                p("wr_data", 8 * k, Dir::Out),
                p("wr_strb", k, Dir::Out),
                p("wr_last", 1, Dir::Out),
            ],
            Top::RecvWqe | Top::RecvWqeLarge => vec![
                p("clock", 1, Dir::In),
                p("reset", 1, Dir::In),
                p("start", 1, Dir::In),
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("index", 16, Dir::In),
                p("busy", 1, Dir::Out),
                p("rd_valid", 1, Dir::Out),
                p("rd_ready", 1, Dir::In),
                p("rd_addr", 64, Dir::Out),
                p("rd_len", 16, Dir::Out),
                p("cpl_valid", 1, Dir::In),
                p("cpl_data", 64, Dir::In),
                p("cpl_err", 1, Dir::In),
                p("cpl_last", 1, Dir::In),
                p("mr_index", 24, Dir::Out),
                p("mr", crate::engine::cmd::exec::MR_BITS, Dir::In),
                p("done", 1, Dir::Out),
                p("ok", 1, Dir::Out),
                p("wr_id", 64, Dir::Out),
                p("count", 8, Dir::Out),
                p("sges", crate::engine::resp::recv_wqe::SGES_BITS, Dir::Out),
            ],
            Top::TxHeaders => vec![
                p("clock", 1, Dir::In),
                p("attr", crate::engine::cmd::exec::ATTR_BITS, Dir::In),
                p("gid_index", 4, Dir::Out),
                p("gid", 128, Dir::In),
                p("gid_valid", 1, Dir::In),
                p("mac", 48, Dir::In),
                p("opcode", 8, Dir::In),
                p("psn", 24, Dir::In),
                p("ack_req", 1, Dir::In),
                p("meta", crate::rx::meta::BITS, Dir::Out),
                p("ok", 1, Dir::Out),
            ],
        }
    }

    /// The Verilog of this top at width `w`; the top module is named `top`.
    pub fn verilog(self, w: Width) -> String {
        match (self, w) {
            (Top::Core(qps), Width::W8) => top_verilog(crate::core::CoreW8::new(crate::core::info(qps, w))),
            (Top::Core(qps), Width::W64) => top_verilog(crate::core::CoreW64::new(crate::core::info(qps, w))),
            (Top::RespCheck, _) => top_verilog(crate::engine::resp::check::RespCheck::new(Top::engine_profile())),
            (Top::RespMatch, _) => top_verilog(crate::engine::comp::resp::RespMatch::new(Top::engine_profile())),
            (Top::Completer, _) => top_verilog(crate::engine::comp::completer::Completer::new(Top::engine_profile())),
            (Top::RetirePop, _) => top_verilog(crate::engine::comp::ack::RetirePop::new(Top::engine_profile())),
            (Top::EnterErr, _) => top_verilog(crate::engine::flush::EnterErr::new(Top::engine_profile())),
            (Top::AtomicOp, _) => top_verilog(crate::engine::resp::atomic::AtomicOp::default()),
            (Top::RespDuplicate, _) => {
                top_verilog(crate::engine::resp::duplicate::RespDuplicate::new(Top::engine_profile()))
            }
            (Top::SqFetch, _) => top_verilog(crate::engine::req::window::SqFetch::new(Top::engine_profile())),
            (Top::RespTx, _) => top_verilog(crate::engine::resp::tx::RespTx::new(Top::engine_profile())),
            (Top::Retire, _) => top_verilog(crate::engine::comp::retire::Retire::new(Top::engine_profile())),
            (Top::RespSend, _) => top_verilog(crate::engine::resp::send::RespSend::new(Top::engine_profile())),
            (Top::ReadArgs, _) => top_verilog(crate::engine::resp::queue::ReadArgs::default()),
            (Top::ResScan, _) => top_verilog(crate::engine::resp::dup_read::ResScan::new(Top::engine_profile())),
            (Top::OneSge, _) => top_verilog(crate::host::gather::OneSge::default()),
            (Top::WqeCache, _) => top_verilog(crate::engine::resp::wqe_cache::WqeCache::new(Top::engine_profile())),
            (Top::RxCount, _) => top_verilog(crate::engine::counts::RxCount::default()),
            (Top::CoreEvents, _) => top_verilog(crate::engine::counts::CoreEvents::default()),
            (Top::RespAdvance, _) => top_verilog(crate::engine::resp::advance::RespAdvance::new(Top::engine_profile())),
            (Top::CplNarrow, Width::W8) => top_verilog(crate::host::adapt::CplNarrow::<64, 8>::default()),
            (Top::CplNarrow, Width::W64) => top_verilog(crate::host::adapt::CplNarrow::<512, 64>::default()),
            (Top::WriteWiden, Width::W8) => top_verilog(crate::host::adapt::WriteWiden::<64, 8>::default()),
            (Top::WriteWiden, Width::W64) => top_verilog(crate::host::adapt::WriteWiden::<512, 64>::default()),
            (Top::DmaReadMux, _) => top_verilog(crate::host::dma::DmaReadMux::<64>::new(DMA_MUX_REQUESTERS)),
            (Top::RecvWqe | Top::RecvWqeLarge, _) => {
                let p = if self == Top::RecvWqe {
                    Top::engine_profile()
                } else {
                    wire::contract::profile::Profile::large()
                };
                top_verilog(crate::engine::resp::recv_wqe::RecvWqe::new(p))
            }
            (Top::RespQueue, _) => top_verilog(crate::engine::resp::queue::RespQueue::new(Top::engine_profile())),
            (Top::FlushPick, _) => top_verilog(crate::engine::flush::FlushPick::new(Top::engine_profile())),
            (Top::ReadStep, _) => top_verilog(crate::engine::resp::read::ReadStep::new(Top::engine_profile())),
            (Top::DupRead, _) => top_verilog(crate::engine::resp::dup_read::DupRead::new(Top::engine_profile())),
            (Top::ReqSeg, _) => top_verilog(crate::engine::req::seg::ReqSeg::new(Top::engine_profile())),
            (Top::AckStep, _) => top_verilog(crate::engine::comp::ack_step::AckStep::new(Top::engine_profile())),
            (Top::DmaGather, Width::W8) => top_verilog(crate::host::gather::DmaGatherW8::default()),
            (Top::DmaGather, Width::W64) => top_verilog(crate::host::gather::DmaGatherW64::default()),
            (Top::TimerScan, _) => top_verilog(crate::engine::comp::timer::TimerScan::new(Top::timer_profile())),
            (Top::CounterBank, _) => top_verilog(crate::host::counters::CounterBank::default()),
            (Top::FetchWake, _) => top_verilog(crate::engine::req::window::FetchWake::new(Top::engine_profile())),
            (Top::PsnWalk, _) => top_verilog(crate::engine::req::window::PsnWalk::new(Top::engine_profile())),
            (Top::RewindWalk, _) => top_verilog(crate::engine::req::window::RewindWalk::new(Top::engine_profile())),
            (Top::OldestWalk, _) => top_verilog(crate::engine::req::window::OldestWalk::new(Top::engine_profile())),
            (Top::WqeFetch, _) => top_verilog(crate::engine::req::wqe_fetch::WqeFetch::new(Top::engine_profile())),
            (Top::SendDesc, _) => top_verilog(crate::engine::req::desc::SendDesc::new(Top::engine_profile())),
            (Top::ReqReady, _) => top_verilog(crate::engine::req::ready::ReqReady::new(Top::engine_profile())),
            (Top::DmaStream, Width::W8) => {
                top_verilog(crate::host::stream::DmaStream::<64, 8, 72, 10, 11, 512>::default())
            }
            (Top::DmaStream, Width::W64) => {
                top_verilog(crate::host::stream::DmaStream::<512, 64, 576, 7, 8, 64>::default())
            }
            (Top::RxRoute, _) => top_verilog(crate::engine::recv::RxRoute::new(Top::engine_profile())),
            (Top::TxHeaders, _) => top_verilog(crate::engine::headers::TxHeaders::new(Top::engine_profile())),
            (Top::RxIngress, Width::W8) => {
                top_verilog(crate::rx::ingress::RxIngress::<64, 8, INGRESS_LOG2_W8>::default())
            }
            (Top::RxIngress, Width::W64) => {
                top_verilog(crate::rx::ingress::RxIngress::<512, 64, INGRESS_LOG2_W64>::default())
            }
            (Top::DmaPlace, Width::W8) => top_verilog(crate::host::place::DmaPlace::<64, 8>::default()),
            (Top::DmaPlace, Width::W64) => top_verilog(crate::host::place::DmaPlace::<512, 64>::default()),
            (Top::DmaScatter, Width::W8) => top_verilog(crate::host::scatter::DmaScatter::<64, 8>::default()),
            (Top::DmaScatter, Width::W64) => top_verilog(crate::host::scatter::DmaScatter::<512, 64>::default()),
            (Top::CqeWrite, Width::W8) => top_verilog(crate::engine::cq::CqeWrite::<64, 8>::default()),
            (Top::CqeWrite, Width::W64) => top_verilog(crate::engine::cq::CqeWrite::<512, 64>::default()),
            (Top::EqeWrite, _) => top_verilog(crate::engine::eq::EqeWrite::<64, 8>::default()),
            (Top::Crc, Width::W8) => top_verilog(CrcEngine::<64, 8>::default()),
            (Top::Crc, Width::W64) => top_verilog(CrcEngine::<512, 64>::default()),
            (Top::Rx, Width::W8) => {
                top_verilog(
                    crate::rx::pipeline::Rx::<64, 8, STORE_LOG2_W8, { STORE_LOG2_W8 + 1 }, RECORDS_LOG2_W8>::default(),
                )
            }
            (Top::Rx, Width::W64) => top_verilog(crate::rx::pipeline::Rx::<
                512,
                64,
                STORE_LOG2_W64,
                { STORE_LOG2_W64 + 1 },
                RECORDS_LOG2_W64,
            >::default()),
            (Top::Tx, Width::W8) => top_verilog(crate::tx::pipeline::Tx::<
                64,
                8,
                STORE_LOG2_W8,
                { STORE_LOG2_W8 + 1 },
                RECORDS_LOG2_W8,
                { RECORDS_LOG2_W8 + 1 },
            >::default()),
            (Top::Tx, Width::W64) => top_verilog(crate::tx::pipeline::Tx::<
                512,
                64,
                STORE_LOG2_W64,
                { STORE_LOG2_W64 + 1 },
                RECORDS_LOG2_W64,
                { RECORDS_LOG2_W64 + 1 },
            >::default()),
            (Top::RxDecode, _) => top_verilog(crate::rx::DecodeTop::default()),
        }
    }
}

/// The RX drop counters, in `meta::Verdict` order (index = verdict code).
pub const RX_COUNTERS: [&str; 10] = [
    "cnt_ok",
    "cnt_not_roce",
    "cnt_truncated",
    "cnt_bad_ip",
    "cnt_bad_udp_length",
    "cnt_bad_tver",
    "cnt_unknown_opcode",
    "cnt_bad_length",
    "cnt_bad_icrc",
    "cnt_too_long",
];

/// Frame stores (RX and TX) hold 2^10 beats at 8 bytes and 2^8 at 64 bytes: 8 and 16 KiB.
pub(crate) const STORE_LOG2_W8: usize = 10;
pub const STORE_LOG2_W64: usize = 8;

/// The RX record queues and the TX length and ICRC queues hold 2^4 frames at 8 bytes (frames of 8 beats
/// or more) and 2^5 at 64 bytes (back-to-back 1-beat frames).
pub(crate) const RECORDS_LOG2_W8: usize = 4;
pub const RECORDS_LOG2_W64: usize = 5;

/// Bytes of the largest frame the RX and TX frame stores hold at width `w` (the TX store, one beat
/// smaller, bounds it).
pub fn max_frame(w: Width) -> usize {
    let log2 = match w {
        Width::W8 => STORE_LOG2_W8,
        Width::W64 => STORE_LOG2_W64,
    };
    w.bytes() * ((1 << log2) - TX_STORE_MARGIN as usize)
}

/// The Verilog of block `u` as a top whose module is named `top`: everything inside it connected. Its inputs
/// are the top's ports, driven from outside, which rust-hdl's connection check leaves to the top.
fn top_verilog(mut u: impl Block) -> String {
    u.connect_all();
    generate_verilog(&u)
}

/// Beats a frame store keeps free: its writers stop at `almost_full`, `STORE_MARGIN` entries short of full,
/// because rust-hdl's fill level lags a write by a cycle and a registered ready or beat adds one more.
pub const STORE_MARGIN: u32 = 4;

/// The TX frame store keeps one beat more: its assembler reads `almost_full` through a register.
pub const TX_STORE_MARGIN: u32 = STORE_MARGIN + 1;

/// The MAC boundary's FIFO, in beats (log2): 8 KiB at either width, room for a frame of the longest.
pub(crate) const INGRESS_LOG2_W8: usize = 10;
pub const INGRESS_LOG2_W64: usize = 7;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_stores_hold_the_longest_frame_in_whole_beats() {
        for w in Width::ALL {
            assert!(max_frame(w) >= wire::MAX_FRAME_LEN, "width {}", w.bytes());
            assert_eq!(wire::MAX_FRAME_LEN % w.bytes(), 0, "the RX cut is at a beat boundary");
            assert!(
                (crate::rx::decode::PARAM_BYTES - 1) / w.bytes() < wire::MAX_FRAME_LEN / w.bytes() - 2,
                "lane parameters come before the cut"
            );
        }
    }
}
