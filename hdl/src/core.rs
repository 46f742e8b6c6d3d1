//! `Core`: the NIC core the simulation drives and the boards will wrap. So far: BAR0's register file and the
//! command unit with its tables, behind 32-bit MMIO and the DMA ports; the receive side, a MAC's beats
//! through the MAC boundary (`rx::ingress`) and the RX pipeline to the dispatch (`engine::dispatch`), which
//! executes RDMA WRITEs into host memory and SENDs and WRITEs with immediate into posted receive WQEs, with
//! their receive CQEs, and queues READs; and the responder's transmit side (`engine::resp::tx`), whose
//! ACKs, NAKs and READ responses (`engine::resp::queue`'s rings, then the coalesced slot) go through the TX
//! pipeline to the MAC, a READ response's payload read from host memory (`host::stream`); and the first part
//! of the requester: send WQEs fetched into the requesters' windows (the dispatch's fetch visits, woken by
//! SQ doorbells and commands through `FetchWake`; the windows in `Rings::window`), and flushed from them;
//! the requester's transmit side (`engine::req::tx`), whose packets go through the same TX pipeline; and the
//! completer in the dispatch (`engine::comp`): ACKs, NAKs, READ responses and atomic ACKs, go-back-N, and
//! the ACK timers and RNR waits (`engine::comp::timer`'s scan).
//!
//! The responder's context port is shared by the dispatch and the responder's transmit side, one holding it
//! at a time, and neither while a command is between its lookup and its commit.
//!
//! The DMA read port is shared by tag (`DmaReadMux`): the command unit's mailbox reads are tag 0
//! (`cmd::MAILBOX_TAG`), the dispatch's WQE reads tag 1, the transmit payload's gather tags 2 and 4, and 5
//! and 6 at 64 bytes (a read in flight in each of its streams), the requester's slot reads tag 3. The DMA
//! write port is shared: the command unit's beats go first, the dispatch's (payload, CQEs, EQEs) when it
//! has none.
//!
//! The core is generic in its beat (`CoreW8`, `CoreW64`): the MAC's beats, the DMA ports, the RX and TX
//! pipelines, the payload's placement, scatter and gather and the CQE and EQE writes are `K` bytes wide; the
//! blocks that read and write control structures 8 bytes a beat (the command unit, the dispatch's WQE and
//! atomic reads, the requester's slot reads, the atomic's write) sit behind `host::adapt`'s width
//! adapters, which are wires at 8 bytes.
//!
//! The counter block (`host::counters`) counts what the engines report (`engine::counts`): the dispatch's
//! frames by route and verdict and its later decisions, CQEs, events and the interrupt, the transmit side's
//! frames and bytes as the TX pipeline takes their records, ACKs sent and packets sent again.
//!
//! The read ports of the context tables (`qp_*`, `mr`, `cq`, `eq`, `gid`, `mac`) are the engines' ports to
//! be; until the engines exist they are the core's, so the testbench can compare the packed contexts with
//! the model's.

use crate::engine::cmd::exec::{CmdExec, ATTR_BITS, CQ_BITS, MR_BITS, REQ_BITS, RESP_BITS};
use crate::engine::cmd::CmdUnit;
use crate::engine::comp::timer::TimerScan;
use crate::engine::counts::CoreEvents;
use crate::engine::dispatch::RxDispatch;
use crate::engine::raw::ctrl::CtrlQueue;
use crate::engine::raw::recv::RawRecv;
use crate::engine::req::ready::WQE_BITS;
use crate::engine::req::tx::ReqTx;
use crate::engine::req::window::FetchWake;
use crate::engine::resp::queue::{Rings, ITEM_BITS};
use crate::engine::resp::tx::RespTx;
use crate::host::adapt::{CplNarrow, WriteWiden};
use crate::host::counters::CounterBank;
use crate::host::dma::{DmaReadMux, MAX_REQUESTERS};
use crate::host::gather::{max_read, streams, DmaGather, OneSge, MAX_STREAMS};
use crate::host::mmio::{DeviceInfo, Mmio, ADDR_BITS};
use crate::kit::*;
use crate::rx::ingress::RxIngress;
use crate::rx::pipeline::Rx;
use crate::top::{
    Dir, Port, INGRESS_LOG2_W64, INGRESS_LOG2_W8, RECORDS_LOG2_W64, RECORDS_LOG2_W8, RX_COUNTERS, STORE_LOG2_W64,
    STORE_LOG2_W8,
};
use crate::tx::pipeline::Tx;

/// The 8-byte core: beats of 8 bytes, the RX and TX stores, records and ingress FIFO of the 8-byte
/// datapath, the gather's 8-byte stream.
pub type CoreW8 = Core<
    64,
    8,
    STORE_LOG2_W8,
    { STORE_LOG2_W8 + 1 },
    RECORDS_LOG2_W8,
    { RECORDS_LOG2_W8 + 1 },
    INGRESS_LOG2_W8,
    72,
    10,
    11,
    { max_read(8) / 8 },
    { streams(8) },
>;
/// The 64-byte core: the same with beats of 64 bytes (the control reads and writes through `host::adapt`).
pub type CoreW64 = Core<
    512,
    64,
    STORE_LOG2_W64,
    { STORE_LOG2_W64 + 1 },
    RECORDS_LOG2_W64,
    { RECORDS_LOG2_W64 + 1 },
    INGRESS_LOG2_W64,
    576,
    8,
    9,
    { max_read(64) / 64 },
    { streams(64) },
>;

/// The core, generic in its beat (`K` bytes, `D` bits): the RX and TX pipelines' store and record sizes
/// (`SL`, `RL`), the MAC boundary's FIFO (`IL`) and the gather's streams (`GN`, `GA`, `GM` each, `GS` of them)
/// of that width.
#[derive(LogicBlock)]
pub struct Core<
    const D: usize,
    const K: usize,
    const SL: usize,
    const SL1: usize,
    const RL: usize,
    const RL1: usize,
    const IL: usize,
    const GN: usize,
    const GA: usize,
    const GA1: usize,
    const GM: u32,
    const GS: usize,
> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub mmio_addr: Signal<In, Bits<ADDR_BITS>>,
    pub mmio_wdata: Signal<In, Bits<32>>,
    pub mmio_write: Signal<In, Bit>,
    pub mmio_read: Signal<In, Bit>,
    pub mmio_rdata: Signal<Out, Bits<32>>,
    pub mmio_rvalid: Signal<Out, Bit>,
    pub dma_rd_valid: Signal<Out, Bit>,
    pub dma_rd_ready: Signal<In, Bit>,
    pub dma_rd_addr: Signal<Out, Bits<64>>,
    pub dma_rd_len: Signal<Out, Bits<16>>,
    pub dma_rd_tag: Signal<Out, Bits<8>>,
    /// DMA completions: a failed read flags each of its beats, the first included (`host::dma`).
    pub dma_cpl_valid: Signal<In, Bit>,
    pub dma_cpl_data: Signal<In, Bits<D>>,
    pub dma_cpl_tag: Signal<In, Bits<8>>,
    pub dma_cpl_err: Signal<In, Bit>,
    pub dma_cpl_last: Signal<In, Bit>,
    pub dma_wr_valid: Signal<Out, Bit>,
    pub dma_wr_ready: Signal<In, Bit>,
    pub dma_wr_addr: Signal<Out, Bits<64>>,
    pub dma_wr_data: Signal<Out, Bits<D>>,
    pub dma_wr_strb: Signal<Out, Bits<K>>,
    /// The MAC's receive beats (no ready), the FCS verdict with a frame's last.
    pub rx_data: Signal<In, Bits<D>>,
    pub rx_keep: Signal<In, Bits<K>>,
    pub rx_last: Signal<In, Bit>,
    pub rx_valid: Signal<In, Bit>,
    pub rx_fcs_bad: Signal<In, Bit>,
    /// The MAC boundary cannot take a frame of the longest length now (`RxIngress::pause`): the XOFF a
    /// pausable MAC or link honours at a frame's start.
    pub rx_pause: Signal<Out, Bit>,
    /// Frames the MAC boundary dropped (no room, bad FCS); the RX pipeline's frames by verdict
    /// (`top::RX_COUNTERS`); frames the dispatch met that need engines not built yet.
    pub rx_drop_full: Signal<Out, Bits<32>>,
    pub rx_drop_fcs: Signal<Out, Bits<32>>,
    pub cnt_ok: Signal<Out, Bits<32>>,
    pub cnt_not_roce: Signal<Out, Bits<32>>,
    pub cnt_truncated: Signal<Out, Bits<32>>,
    pub cnt_bad_ip: Signal<Out, Bits<32>>,
    pub cnt_bad_udp_length: Signal<Out, Bits<32>>,
    pub cnt_bad_tver: Signal<Out, Bits<32>>,
    pub cnt_unknown_opcode: Signal<Out, Bits<32>>,
    pub cnt_bad_length: Signal<Out, Bits<32>>,
    pub cnt_bad_icrc: Signal<Out, Bits<32>>,
    pub cnt_too_long: Signal<Out, Bits<32>>,
    pub rx_unhandled: Signal<Out, Bits<32>>,
    /// The MAC's transmit beats.
    pub tx_data: Signal<Out, Bits<D>>,
    pub tx_keep: Signal<Out, Bits<K>>,
    pub tx_last: Signal<Out, Bit>,
    pub tx_valid: Signal<Out, Bit>,
    pub tx_ready: Signal<In, Bit>,
    /// The beat on the MAC is a reply from the control queue (`engine::raw`): such a frame's last beat
    /// taken is its decision (`Decision::Tx(TxPick::Control)`). No reply is queued or going out.
    pub tx_ctrl: Signal<Out, Bit>,
    pub trace_ctrl_idle: Signal<Out, Bit>,
    /// The decision trace: a command completed this cycle (the model's `Decision::Command`); a received
    /// frame decided (`Decision::Rx`); the dispatch idle (no frame in hand, no write left); the flush scan
    /// not running; the write beat on the DMA port is payload of QP `trace_wr_qpn`'s responder (its
    /// completer's with `trace_wr_comp`: a READ response's or an atomic ACK's).
    pub trace_cmd: Signal<Out, Bit>,
    pub trace_rx: Signal<Out, Bit>,
    pub trace_rx_idle: Signal<Out, Bit>,
    pub trace_flush_idle: Signal<Out, Bit>,
    pub trace_wr_data: Signal<Out, Bit>,
    pub trace_wr_qpn: Signal<Out, Bits<24>>,
    pub trace_wr_comp: Signal<Out, Bit>,
    /// A flush step of QP `trace_flush_qpn` decided this cycle (`Decision::Flush`; its CQE posted with it).
    pub trace_flush: Signal<Out, Bit>,
    pub trace_flush_qpn: Signal<Out, Bits<24>>,
    /// The write beat on the DMA port is a CQE's; a CQE was posted (the model's `Output::Cqe`) to CQ
    /// `trace_cqn`, in slot `trace_cq_slot` (its producer counter) of a ring of `2^trace_cq_log`; its beats
    /// follow.
    pub trace_wr_cqe: Signal<Out, Bit>,
    pub trace_cqe: Signal<Out, Bit>,
    pub trace_cqn: Signal<Out, Bits<16>>,
    pub trace_cq_slot: Signal<Out, Bits<32>>,
    pub trace_cq_log: Signal<Out, Bits<4>>,
    /// The write beat is an EQE's; an EQE was posted (`Output::Eqe`) in slot `trace_eq_slot` of the EQ.
    pub trace_wr_eqe: Signal<Out, Bit>,
    pub trace_eqe: Signal<Out, Bit>,
    pub trace_eq_slot: Signal<Out, Bits<32>>,
    /// The interrupt (MSI-X vector 0): a cycle's pulse.
    pub irq: Signal<Out, Bit>,
    /// The decision trace: QP `trace_tx_qpn`'s responder stream sent (`Decision::Tx`); its frame leaves the
    /// TX pipeline later, frames in the order of their decisions.
    pub trace_tx: Signal<Out, Bit>,
    pub trace_tx_qpn: Signal<Out, Bits<24>>,
    /// With `trace_tx`: the decision sends nothing (a READ response whose payload could not be read).
    pub trace_tx_nil: Signal<Out, Bit>,
    /// No QP's responder is known to owe a response, none is in hand.
    pub trace_tx_idle: Signal<Out, Bit>,
    /// QP `trace_fetch_qpn`'s next send WQE fetched into its window this cycle (`Decision::FetchSq`; the CQE of
    /// one that failed into an empty window posted with it); no QP is awake for a fetch.
    pub trace_fetch: Signal<Out, Bit>,
    pub trace_fetch_qpn: Signal<Out, Bits<24>>,
    /// With `trace_fetch`: the requester took the fetch's read as its descriptor read (`primed`).
    pub trace_fetch_primed: Signal<Out, Bit>,
    pub trace_fetch_idle: Signal<Out, Bit>,
    /// QP `trace_req_qpn`'s requester stream decided this cycle (`Decision::Tx`); with `trace_req_nil` it sends
    /// nothing (its WQE failed as the packet was built). Its frame leaves after every frame decided before it.
    pub trace_req: Signal<Out, Bit>,
    pub trace_req_qpn: Signal<Out, Bits<24>>,
    pub trace_req_nil: Signal<Out, Bit>,
    /// With `trace_req`: the QP is a raw packet QP (`Stream::Raw`).
    pub trace_req_raw: Signal<Out, Bit>,
    /// No QP's requester is awake, none in hand.
    pub trace_req_idle: Signal<Out, Bit>,
    /// QP `trace_timer_qpn`'s ACK timer (its RNR wait with `trace_timer_rnr`) ran out this cycle
    /// (`Decision::Timer`).
    pub trace_timer: Signal<Out, Bit>,
    pub trace_timer_qpn: Signal<Out, Bits<24>>,
    pub trace_timer_rnr: Signal<Out, Bit>,
    /// A response is decided and its frame not counted yet (`tx_frames`, `tx_bytes` count a frame as the TX
    /// pipeline takes its record, a few cycles after the decision): a counter read waits for it to clear.
    pub trace_cnt_busy: Signal<Out, Bit>,
    /// The testbench's read port of the requesters' windows: QP `wqe_qpn`'s entry in slot `wqe_slot`, a cycle
    /// later, while `wqe_lent` (no engine uses the port).
    pub wqe_lent: Signal<Out, Bit>,
    pub wqe_qpn: Signal<In, Bits<16>>,
    pub wqe_slot: Signal<In, Bits<8>>,
    pub wqe: Signal<Out, Bits<WQE_BITS>>,
    pub qp_index: Signal<In, Bits<16>>,
    pub qp_valid: Signal<Out, Bit>,
    pub qp_attr: Signal<Out, Bits<ATTR_BITS>>,
    pub qp_req: Signal<Out, Bits<REQ_BITS>>,
    pub qp_resp: Signal<Out, Bits<RESP_BITS>>,
    pub mr_index: Signal<In, Bits<24>>,
    pub mr: Signal<Out, Bits<MR_BITS>>,
    pub cq_index: Signal<In, Bits<16>>,
    pub cq: Signal<Out, Bits<CQ_BITS>>,
    pub eq: Signal<Out, Bits<CQ_BITS>>,
    pub gid_index: Signal<In, Bits<4>>,
    pub gid: Signal<Out, Bits<128>>,
    pub gid_valid: Signal<Out, Bit>,
    pub mac: Signal<Out, Bits<48>>,
    mmio: Mmio,
    rd_mux: DmaReadMux<D>,
    /// The 8-byte readers' completions (the command unit's, the dispatch's, the requester's slot reads) and
    /// the command unit's writes, at the beat's width.
    cmd_cpl: CplNarrow<D, K>,
    disp_cpl: CplNarrow<D, K>,
    req_cpl: CplNarrow<D, K>,
    cmd_wr: WriteWiden<D, K>,
    cmd: CmdUnit,
    exec: CmdExec,
    ingress: RxIngress<D, K, IL>,
    rx: Rx<D, K, SL, SL1, RL>,
    dispatch: RxDispatch<D, K>,
    resp_tx: RespTx,
    items: Rings<ITEM_BITS>,
    window: Rings<WQE_BITS>,
    wake: FetchWake,
    req_tx: ReqTx,
    timers: TimerScan,
    gather: DmaGather<D, K, GN, GA, GA1, GM, GS>,
    one_sge: OneSge,
    tx: Tx<D, K, SL, SL1, RL, RL1>,
    events: CoreEvents,
    counters: CounterBank,
    raw_recv: RawRecv<D, K>,
    ctrl: CtrlQueue<D, K>,
}

impl<
        const D: usize,
        const K: usize,
        const SL: usize,
        const SL1: usize,
        const RL: usize,
        const RL1: usize,
        const IL: usize,
        const GN: usize,
        const GA: usize,
        const GA1: usize,
        const GM: u32,
        const GS: usize,
    > Core<D, K, SL, SL1, RL, RL1, IL, GN, GA, GA1, GM, GS>
{
    pub fn new(info: DeviceInfo) -> Self {
        assert_eq!(D, 8 * K);
        let profile = info.profile;
        Core {
            clock: Signal::default(),
            reset: Signal::default(),
            mmio_addr: Signal::default(),
            mmio_wdata: Signal::default(),
            mmio_write: Signal::default(),
            mmio_read: Signal::default(),
            mmio_rdata: Signal::default(),
            mmio_rvalid: Signal::default(),
            dma_rd_valid: Signal::default(),
            dma_rd_ready: Signal::default(),
            dma_rd_addr: Signal::default(),
            dma_rd_len: Signal::default(),
            dma_rd_tag: Signal::default(),
            dma_cpl_valid: Signal::default(),
            dma_cpl_data: Signal::default(),
            dma_cpl_tag: Signal::default(),
            dma_cpl_err: Signal::default(),
            dma_cpl_last: Signal::default(),
            dma_wr_valid: Signal::default(),
            dma_wr_ready: Signal::default(),
            dma_wr_addr: Signal::default(),
            dma_wr_data: Signal::default(),
            dma_wr_strb: Signal::default(),
            rx_data: Signal::default(),
            rx_keep: Signal::default(),
            rx_last: Signal::default(),
            rx_valid: Signal::default(),
            rx_fcs_bad: Signal::default(),
            rx_pause: Signal::default(),
            rx_drop_full: Signal::default(),
            rx_drop_fcs: Signal::default(),
            cnt_ok: Signal::default(),
            cnt_not_roce: Signal::default(),
            cnt_truncated: Signal::default(),
            cnt_bad_ip: Signal::default(),
            cnt_bad_udp_length: Signal::default(),
            cnt_bad_tver: Signal::default(),
            cnt_unknown_opcode: Signal::default(),
            cnt_bad_length: Signal::default(),
            cnt_bad_icrc: Signal::default(),
            cnt_too_long: Signal::default(),
            rx_unhandled: Signal::default(),
            tx_data: Signal::default(),
            tx_keep: Signal::default(),
            tx_last: Signal::default(),
            tx_valid: Signal::default(),
            tx_ready: Signal::default(),
            tx_ctrl: Signal::default(),
            trace_ctrl_idle: Signal::default(),
            trace_cmd: Signal::default(),
            trace_rx: Signal::default(),
            trace_rx_idle: Signal::default(),
            trace_flush_idle: Signal::default(),
            trace_wr_data: Signal::default(),
            trace_wr_qpn: Signal::default(),
            trace_flush: Signal::default(),
            trace_flush_qpn: Signal::default(),
            trace_wr_cqe: Signal::default(),
            trace_wr_comp: Signal::default(),
            trace_cqe: Signal::default(),
            trace_cqn: Signal::default(),
            trace_cq_slot: Signal::default(),
            trace_cq_log: Signal::default(),
            trace_wr_eqe: Signal::default(),
            trace_eqe: Signal::default(),
            trace_eq_slot: Signal::default(),
            irq: Signal::default(),
            trace_tx: Signal::default(),
            trace_tx_qpn: Signal::default(),
            trace_tx_nil: Signal::default(),
            trace_tx_idle: Signal::default(),
            trace_fetch: Signal::default(),
            trace_fetch_qpn: Signal::default(),
            trace_fetch_primed: Signal::default(),
            trace_fetch_idle: Signal::default(),
            trace_req: Signal::default(),
            trace_req_qpn: Signal::default(),
            trace_req_nil: Signal::default(),
            trace_req_raw: Signal::default(),
            trace_req_idle: Signal::default(),
            trace_timer: Signal::default(),
            trace_timer_qpn: Signal::default(),
            trace_timer_rnr: Signal::default(),
            trace_cnt_busy: Signal::default(),
            wqe_lent: Signal::default(),
            wqe_qpn: Signal::default(),
            wqe_slot: Signal::default(),
            wqe: Signal::default(),
            qp_index: Signal::default(),
            qp_valid: Signal::default(),
            qp_attr: Signal::default(),
            qp_req: Signal::default(),
            qp_resp: Signal::default(),
            mr_index: Signal::default(),
            mr: Signal::default(),
            cq_index: Signal::default(),
            cq: Signal::default(),
            eq: Signal::default(),
            gid_index: Signal::default(),
            gid: Signal::default(),
            gid_valid: Signal::default(),
            mac: Signal::default(),
            mmio: Mmio::new(info),
            rd_mux: DmaReadMux::new(3 + GS),
            cmd_cpl: CplNarrow::default(),
            disp_cpl: CplNarrow::default(),
            req_cpl: CplNarrow::default(),
            cmd_wr: WriteWiden::default(),
            cmd: CmdUnit::default(),
            exec: CmdExec::new(profile),
            ingress: RxIngress::default(),
            rx: Rx::default(),
            dispatch: RxDispatch::new(profile),
            resp_tx: RespTx::new(profile),
            items: Rings::items(profile),
            window: Rings::window(profile),
            wake: FetchWake::new(profile),
            req_tx: ReqTx::new(profile),
            timers: TimerScan::new(profile),
            gather: DmaGather::default(),
            one_sge: OneSge::default(),
            tx: Tx::default(),
            events: CoreEvents::default(),
            counters: CounterBank::default(),
            raw_recv: RawRecv::default(),
            ctrl: CtrlQueue::default(),
        }
    }
}

/// The core with `qps` QPs at width `w`: the board profile with `qps` QPs, an 8-byte port at 125 MHz or a
/// 64-byte one at 250 MHz.
pub fn info(qps: u32, w: crate::Width) -> DeviceInfo {
    let (k, mhz) = match w {
        crate::Width::W8 => (8, 125),
        crate::Width::W64 => (64, 250),
    };
    DeviceInfo {
        profile: wire::contract::profile::Profile { max_qp: qps, ..wire::contract::profile::Profile::board() },
        port_mbps: k * 8 * mhz,
        ns_per_cycle: 1000 / mhz,
        build_id: 0,
    }
}

/// The core's ports at width `w`, in the order the simulation numbers them (`clock` first).
pub fn ports(w: crate::Width) -> Vec<Port> {
    let k = w.bytes();
    use Dir::{In, Out};
    let p = |name, bits, dir| Port { name, bits, dir };
    vec![
        p("clock", 1, In),
        p("reset", 1, In),
        p("mmio_addr", ADDR_BITS, In),
        p("mmio_wdata", 32, In),
        p("mmio_write", 1, In),
        p("mmio_read", 1, In),
        p("mmio_rdata", 32, Out),
        p("mmio_rvalid", 1, Out),
        p("dma_rd_valid", 1, Out),
        p("dma_rd_ready", 1, In),
        p("dma_rd_addr", 64, Out),
        p("dma_rd_len", 16, Out),
        p("dma_rd_tag", 8, Out),
        p("dma_cpl_valid", 1, In),
        p("dma_cpl_data", 8 * k, In),
        p("dma_cpl_tag", 8, In),
        p("dma_cpl_err", 1, In),
        p("dma_cpl_last", 1, In),
        p("dma_wr_valid", 1, Out),
        p("dma_wr_ready", 1, In),
        p("dma_wr_addr", 64, Out),
        p("dma_wr_data", 8 * k, Out),
        p("dma_wr_strb", k, Out),
        p("rx_data", 8 * k, In),
        p("rx_keep", k, In),
        p("rx_last", 1, In),
        p("rx_valid", 1, In),
        p("rx_fcs_bad", 1, In),
        p("rx_pause", 1, Out),
        p("rx_drop_full", 32, Out),
        p("rx_drop_fcs", 32, Out),
    ]
    .into_iter()
    .chain(RX_COUNTERS.iter().map(|&n| p(n, 32, Out)))
    .chain([
        p("rx_unhandled", 32, Out),
        p("tx_data", 8 * k, Out),
        p("tx_keep", k, Out),
        p("tx_last", 1, Out),
        p("tx_valid", 1, Out),
        p("tx_ready", 1, In),
        p("tx_ctrl", 1, Out),
        p("trace_ctrl_idle", 1, Out),
        p("trace_cmd", 1, Out),
        p("trace_rx", 1, Out),
        p("trace_rx_idle", 1, Out),
        p("trace_flush_idle", 1, Out),
        p("trace_wr_data", 1, Out),
        p("trace_wr_qpn", 24, Out),
        p("trace_wr_comp", 1, Out),
        p("trace_flush", 1, Out),
        p("trace_flush_qpn", 24, Out),
        p("trace_wr_cqe", 1, Out),
        p("trace_cqe", 1, Out),
        p("trace_cqn", 16, Out),
        p("trace_cq_slot", 32, Out),
        p("trace_cq_log", 4, Out),
        p("trace_wr_eqe", 1, Out),
        p("trace_eqe", 1, Out),
        p("trace_eq_slot", 32, Out),
        p("irq", 1, Out),
        p("trace_tx", 1, Out),
        p("trace_tx_qpn", 24, Out),
        p("trace_tx_nil", 1, Out),
        p("trace_tx_idle", 1, Out),
        p("trace_fetch", 1, Out),
        p("trace_fetch_qpn", 24, Out),
        p("trace_fetch_primed", 1, Out),
        p("trace_fetch_idle", 1, Out),
        p("trace_req", 1, Out),
        p("trace_req_qpn", 24, Out),
        p("trace_req_nil", 1, Out),
        p("trace_req_raw", 1, Out),
        p("trace_req_idle", 1, Out),
        p("trace_timer", 1, Out),
        p("trace_timer_qpn", 24, Out),
        p("trace_timer_rnr", 1, Out),
        p("trace_cnt_busy", 1, Out),
        p("wqe_lent", 1, Out),
        p("wqe_qpn", 16, In),
        p("wqe_slot", 8, In),
        p("wqe", WQE_BITS, Out),
        p("qp_index", 16, In),
        p("qp_valid", 1, Out),
        p("qp_attr", ATTR_BITS, Out),
        p("qp_req", REQ_BITS, Out),
        p("qp_resp", RESP_BITS, Out),
        p("mr_index", 24, In),
        p("mr", MR_BITS, Out),
        p("cq_index", 16, In),
        p("cq", CQ_BITS, Out),
        p("eq", CQ_BITS, Out),
        p("gid_index", 4, In),
        p("gid", 128, Out),
        p("gid_valid", 1, Out),
        p("mac", 48, Out),
    ])
    .collect()
}

impl<
        const D: usize,
        const K: usize,
        const SL: usize,
        const SL1: usize,
        const RL: usize,
        const RL1: usize,
        const IL: usize,
        const GN: usize,
        const GA: usize,
        const GA1: usize,
        const GM: u32,
        const GS: usize,
    > Core<D, K, SL, SL1, RL, RL1, IL, GN, GA, GA1, GM, GS>
{
    /// Marks the inputs as driven from outside (the top's ports).
    pub fn connect_inputs(&mut self) {
        self.clock.connect();
        self.reset.connect();
        self.mmio_addr.connect();
        self.mmio_wdata.connect();
        self.mmio_write.connect();
        self.mmio_read.connect();
        self.dma_rd_ready.connect();
        self.dma_cpl_valid.connect();
        self.dma_cpl_data.connect();
        self.dma_cpl_tag.connect();
        self.dma_cpl_err.connect();
        self.dma_cpl_last.connect();
        self.dma_wr_ready.connect();
        self.rx_data.connect();
        self.rx_keep.connect();
        self.rx_last.connect();
        self.rx_valid.connect();
        self.rx_fcs_bad.connect();
        self.tx_ready.connect();
        self.qp_index.connect();
        self.mr_index.connect();
        self.cq_index.connect();
        self.gid_index.connect();
        self.wqe_qpn.connect();
        self.wqe_slot.connect();
    }
}

impl<
        const D: usize,
        const K: usize,
        const SL: usize,
        const SL1: usize,
        const RL: usize,
        const RL1: usize,
        const IL: usize,
        const GN: usize,
        const GA: usize,
        const GA1: usize,
        const GM: u32,
        const GS: usize,
    > Logic for Core<D, K, SL, SL1, RL, RL1, IL, GN, GA, GA1, GM, GS>
{
    #[hdl_gen]
    fn update(&mut self) {
        self.mmio.clock.next = self.clock.val();
        self.mmio.reset.next = self.reset.val();
        self.mmio.addr.next = self.mmio_addr.val();
        self.mmio.wdata.next = self.mmio_wdata.val();
        self.mmio.write.next = self.mmio_write.val();
        self.mmio.read.next = self.mmio_read.val();
        self.mmio_rdata.next = self.mmio.rdata.val();
        self.mmio_rvalid.next = self.mmio.rvalid.val();
        self.mmio.cmd_done.next = self.cmd.done.val();
        self.mmio.cmd_status.next = self.cmd.status.val();
        // The counters: what the engines count, into the bank the register file reads.
        self.events.rx_decided.next = self.dispatch.decided.val();
        self.events.rx_len.next = self.dispatch.rx_len.val();
        self.events.of_frame.next = self.dispatch.cnt_class.val();
        self.events.outcome.next = self.dispatch.cnt_out.val();
        self.events.fetched.next = self.dispatch.fetched.val();
        self.events.cqe.next = self.dispatch.posted.val();
        self.events.cqe_err.next = self.dispatch.cqe_err.val();
        self.events.eqe.next = self.dispatch.posted_eqe.val();
        self.events.eqe_lost.next = self.dispatch.eqe_lost.val();
        self.events.irq.next = self.dispatch.irq.val();
        self.events.read_failed.next = self.resp_tx.decided.val() & self.resp_tx.nil.val();
        self.events.tx_ack.next = self.resp_tx.acked.val();
        self.events.retransmit.next = self.req_tx.retransmit.val();
        self.events.tx_take.next = self.tx.meta_valid.val() & self.tx.meta_ready.val();
        self.events.meta.next = self.tx.meta.val();
        self.events.doorbell_ignored.next = self.mmio.cnt_ignored.val();
        self.events.raw_inc.next = self.ctrl.inc.val();
        self.events.ctrl_sent.next = self.ctrl.sent.val();
        self.events.ctrl_len.next = self.ctrl.sent_len.val();
        self.counters.clock.next = self.clock.val();
        self.counters.reset.next = self.reset.val();
        self.counters.inc.next = self.events.inc.val();
        self.counters.inc2.next = self.events.inc2.val();
        self.counters.rx_add.next = self.events.rx_add.val();
        self.counters.tx_add.next = self.events.tx_add.val();
        self.counters.index.next = self.mmio.cnt_index.val();
        self.mmio.cnt_value.next = self.counters.value.val();
        self.trace_cnt_busy.next = self.resp_tx.rec_owed.val();

        self.cmd.clock.next = self.clock.val();
        self.cmd.reset.next = self.reset.val();
        self.cmd.start.next = self.mmio.cmd_start.val();
        self.cmd.mb_iova.next = self.mmio.cmd_mailbox.val();
        // The DMA read port, by tag: the command unit (0), the dispatch's WQE reads (1), the transmit payload's
        // gather (2, 4, and 5 and 6 for four streams: a tag a stream), the requester's slot reads (3).
        self.rd_mux.clock.next = self.clock.val();
        self.rd_mux.reset.next = self.reset.val();
        self.rd_mux.rq_valid.next = 0.into();
        self.rd_mux.rq_valid.next = self.rd_mux.rq_valid.val().replace_bit(0, self.cmd_cpl.rd_valid.val());
        self.rd_mux.rq_valid.next = self.rd_mux.rq_valid.val().replace_bit(1, self.disp_cpl.rd_valid.val());
        self.rd_mux.rq_valid.next = self.rd_mux.rq_valid.val().replace_bit(2, self.gather.rd_valid.val().get_bit(0));
        self.rd_mux.rq_valid.next = self.rd_mux.rq_valid.val().replace_bit(3, self.req_cpl.rd_valid.val());
        self.rd_mux.rq_valid.next = self.rd_mux.rq_valid.val().replace_bit(4, self.gather.rd_valid.val().get_bit(1));
        self.rd_mux.rq_valid.next = self.rd_mux.rq_valid.val().replace_bit(5, self.gather.rd_valid.val().get_bit(2));
        self.rd_mux.rq_valid.next = self.rd_mux.rq_valid.val().replace_bit(6, self.gather.rd_valid.val().get_bit(3));
        self.rd_mux.rq_addr.next = bit_cast::<{ 64 * MAX_REQUESTERS }, 64>(self.cmd.rd_addr.val())
            | (bit_cast::<{ 64 * MAX_REQUESTERS }, 64>(self.dispatch.rd_addr.val()) << 64)
            | (bit_cast::<{ 64 * MAX_REQUESTERS }, 64>(self.gather.rd_addr.val().get_bits::<64>(0)) << 128)
            | (bit_cast::<{ 64 * MAX_REQUESTERS }, 64>(self.req_tx.rd_addr.val()) << 192)
            | (bit_cast::<{ 64 * MAX_REQUESTERS }, 192>(self.gather.rd_addr.val().get_bits::<192>(64)) << 256);
        self.rd_mux.rq_len.next = bit_cast::<{ 16 * MAX_REQUESTERS }, 16>(self.cmd.rd_len.val())
            | (bit_cast::<{ 16 * MAX_REQUESTERS }, 16>(self.dispatch.rd_len.val()) << 16)
            | (bit_cast::<{ 16 * MAX_REQUESTERS }, 16>(self.gather.rd_len.val().get_bits::<16>(0)) << 32)
            | (bit_cast::<{ 16 * MAX_REQUESTERS }, 16>(self.req_tx.rd_len.val()) << 48)
            | (bit_cast::<{ 16 * MAX_REQUESTERS }, 48>(self.gather.rd_len.val().get_bits::<48>(16)) << 64);
        self.cmd_cpl.rd_ready.next = self.rd_mux.rq_ready.val().get_bit(0);
        self.disp_cpl.rd_ready.next = self.rd_mux.rq_ready.val().get_bit(1);
        self.gather.rd_ready.next = bit_cast::<MAX_STREAMS, 1>(self.rd_mux.rq_ready.val().get_bits::<1>(2))
            | (bit_cast::<MAX_STREAMS, 3>(self.rd_mux.rq_ready.val().get_bits::<3>(4)) << 1);
        self.req_cpl.rd_ready.next = self.rd_mux.rq_ready.val().get_bit(3);
        self.cmd.rd_ready.next = self.cmd_cpl.rq_ready.val();
        self.dispatch.rd_ready.next = self.disp_cpl.rq_ready.val();
        self.req_tx.rd_ready.next = self.req_cpl.rq_ready.val();
        self.cmd_cpl.clock.next = self.clock.val();
        self.cmd_cpl.reset.next = self.reset.val();
        self.cmd_cpl.rq_valid.next = self.cmd.rd_valid.val();
        self.cmd_cpl.rq_len.next = self.cmd.rd_len.val();
        self.cmd_cpl.cp_valid.next = self.rd_mux.cp_valid.val().get_bit(0);
        self.cmd_cpl.cp_data.next = self.rd_mux.cp_data.val();
        self.cmd_cpl.cp_err.next = self.rd_mux.cp_err.val();
        self.cmd_cpl.cp_last.next = self.rd_mux.cp_last.val();
        self.disp_cpl.clock.next = self.clock.val();
        self.disp_cpl.reset.next = self.reset.val();
        self.disp_cpl.rq_valid.next = self.dispatch.rd_valid.val();
        self.disp_cpl.rq_len.next = self.dispatch.rd_len.val();
        self.disp_cpl.cp_valid.next = self.rd_mux.cp_valid.val().get_bit(1);
        self.disp_cpl.cp_data.next = self.rd_mux.cp_data.val();
        self.disp_cpl.cp_err.next = self.rd_mux.cp_err.val();
        self.disp_cpl.cp_last.next = self.rd_mux.cp_last.val();
        self.req_cpl.clock.next = self.clock.val();
        self.req_cpl.reset.next = self.reset.val();
        self.req_cpl.rq_valid.next = self.req_tx.rd_valid.val();
        self.req_cpl.rq_len.next = self.req_tx.rd_len.val();
        self.req_cpl.cp_valid.next = self.rd_mux.cp_valid.val().get_bit(3);
        self.req_cpl.cp_data.next = self.rd_mux.cp_data.val();
        self.req_cpl.cp_err.next = self.rd_mux.cp_err.val();
        self.req_cpl.cp_last.next = self.rd_mux.cp_last.val();
        self.dma_rd_valid.next = self.rd_mux.rd_valid.val();
        self.rd_mux.rd_ready.next = self.dma_rd_ready.val();
        self.dma_rd_addr.next = self.rd_mux.rd_addr.val();
        self.dma_rd_len.next = self.rd_mux.rd_len.val();
        self.dma_rd_tag.next = self.rd_mux.rd_tag.val();
        self.rd_mux.cpl_valid.next = self.dma_cpl_valid.val();
        self.rd_mux.cpl_data.next = self.dma_cpl_data.val();
        self.rd_mux.cpl_tag.next = self.dma_cpl_tag.val();
        self.rd_mux.cpl_err.next = self.dma_cpl_err.val();
        self.rd_mux.cpl_last.next = self.dma_cpl_last.val();
        self.cmd.cpl_valid.next = self.cmd_cpl.cpl_valid.val();
        self.cmd.cpl_data.next = self.cmd_cpl.cpl_data.val();
        self.cmd.cpl_tag.next = self.cmd.rd_tag.val();
        self.cmd.cpl_err.next = self.cmd_cpl.cpl_err.val();
        self.cmd.cpl_last.next = self.cmd_cpl.cpl_last.val();
        self.dispatch.cpl_valid.next = self.disp_cpl.cpl_valid.val();
        self.dispatch.cpl_data.next = self.disp_cpl.cpl_data.val();
        self.dispatch.cpl_err.next = self.disp_cpl.cpl_err.val();
        self.dispatch.cpl_last.next = self.disp_cpl.cpl_last.val();
        self.gather.cpl_valid.next = bit_cast::<MAX_STREAMS, 1>(self.rd_mux.cp_valid.val().get_bits::<1>(2))
            | (bit_cast::<MAX_STREAMS, 3>(self.rd_mux.cp_valid.val().get_bits::<3>(4)) << 1);
        self.gather.cpl_data.next = self.rd_mux.cp_data.val();
        self.gather.cpl_err.next = self.rd_mux.cp_err.val();
        self.gather.cpl_last.next = self.rd_mux.cp_last.val();
        self.req_tx.cpl_valid.next = self.req_cpl.cpl_valid.val();
        self.req_tx.cpl_data.next = self.req_cpl.cpl_data.val();
        self.req_tx.cpl_err.next = self.req_cpl.cpl_err.val();
        self.req_tx.cpl_last.next = self.req_cpl.cpl_last.val();
        self.dispatch.clear_cache.next = self.cmd.commit.val();
        // The DMA write port: the command unit's beats first, the dispatch's when it has none.
        self.cmd.wr_ready.next = self.dma_wr_ready.val();
        self.dispatch.wr_ready.next = self.dma_wr_ready.val() & !self.cmd.wr_valid.val();
        self.dma_wr_valid.next = self.cmd.wr_valid.val() | self.dispatch.wr_valid.val();
        self.dma_wr_addr.next = self.dispatch.wr_addr.val();
        self.dma_wr_data.next = self.dispatch.wr_data.val();
        self.dma_wr_strb.next = self.dispatch.wr_strb.val();
        self.trace_wr_data.next =
            self.dispatch.wr_valid.val() & !self.dispatch.wr_cqe.val() & !self.dispatch.wr_eqe.val();
        self.trace_wr_cqe.next = self.dispatch.wr_valid.val() & self.dispatch.wr_cqe.val();
        self.trace_wr_eqe.next = self.dispatch.wr_valid.val() & self.dispatch.wr_eqe.val();
        self.cmd_wr.addr.next = self.cmd.wr_addr.val();
        self.cmd_wr.data.next = self.cmd.wr_data.val();
        self.cmd_wr.strb.next = self.cmd.wr_strb.val();
        if self.cmd.wr_valid.val() {
            self.dma_wr_addr.next = self.cmd_wr.wide_addr.val();
            self.dma_wr_data.next = self.cmd_wr.wide_data.val();
            self.dma_wr_strb.next = self.cmd_wr.wide_strb.val();
            self.trace_wr_data.next = false;
            self.trace_wr_cqe.next = false;
            self.trace_wr_eqe.next = false;
        }
        self.trace_cqe.next = self.dispatch.posted.val();
        self.trace_cqn.next = self.dispatch.cq_index.val();
        self.trace_cq_slot.next = self.dispatch.posted_slot.val();
        self.trace_cq_log.next = self.dispatch.posted_log.val();
        self.trace_eqe.next = self.dispatch.posted_eqe.val();
        self.trace_eq_slot.next = self.dispatch.eqe_slot.val();
        self.irq.next = self.dispatch.irq.val();
        self.trace_wr_qpn.next = self.dispatch.wr_qpn.val();
        self.trace_wr_comp.next = self.dispatch.wr_comp.val();
        self.trace_cmd.next = self.cmd.done.val();
        self.trace_rx.next = self.dispatch.decided.val();
        self.trace_flush.next = self.dispatch.flushed.val();
        self.trace_flush_qpn.next = self.dispatch.wr_qpn.val();
        self.trace_rx_idle.next = self.dispatch.idle.val();
        self.trace_flush_idle.next = self.dispatch.flush_idle.val();

        self.exec.clock.next = self.clock.val();
        self.exec.reset.next = self.reset.val();
        self.exec.beat_valid.next = self.cmd.beat_valid.val();
        self.exec.beat_data.next = self.cmd.beat_data.val();
        self.exec.scan_start.next = self.cmd.scan_start.val();
        self.exec.lookup.next = self.cmd.lookup.val();
        self.exec.latch.next = self.cmd.latch.val();
        self.exec.commit.next = self.cmd.commit.val();
        self.exec.out_index.next = self.cmd.out_index.val();
        self.cmd.out_beat.next = self.exec.out_beat.val();
        self.cmd.exec_status.next = self.exec.status.val();
        // A command, a frame and a response never overlap between their context reads and their writes.
        // The requester's transmit side yields to a frame, a command and a response that wants the port.
        self.cmd.quiet.next = self.exec.quiet.val()
            & !self.dispatch.ctx_busy.val()
            & !self.resp_tx.ctx_busy.val()
            & !self.req_tx.ctx_busy.val();
        self.dispatch.hold.next =
            self.cmd.lookup.val() | self.cmd.holding.val() | self.resp_tx.ctx_busy.val() | self.req_tx.ctx_busy.val();
        // Neither transmit side starts while a due timer waits for the dispatch: a timer waits out at most
        // one holder's turn (the model's `TIMER_TOLERANCE`).
        self.resp_tx.hold.next = self.cmd.lookup.val()
            | self.cmd.holding.val()
            | self.dispatch.claim.val()
            | self.req_tx.ctx_busy.val()
            | self.timers.fire.val();
        self.req_tx.hold.next = self.cmd.lookup.val()
            | self.cmd.holding.val()
            | self.dispatch.claim.val()
            | self.resp_tx.ctx_busy.val()
            | !self.resp_tx.idle.val()
            | self.timers.fire.val();
        self.exec.db_valid.next = self.mmio.db_valid.val();
        self.exec.db_addr.next = self.mmio.db_addr.val();
        self.exec.db_val.next = self.mmio.db_val.val();
        // The requester's context port (the dispatch's fetch and flush) and its windows; the fetch's
        // wake-ups: SQ doorbells and commands on a QP.
        self.dispatch.req.next = self.exec.rs_req.val();
        self.exec.rs_req_we.next = self.dispatch.req_we.val();
        self.exec.rs_req_next.next = self.dispatch.req_next.val();
        if self.req_tx.ctx_busy.val() {
            self.exec.rs_req_we.next = self.req_tx.req_we.val();
            self.exec.rs_req_next.next = self.req_tx.req_next.val();
        }
        self.window.clock.next = self.clock.val();
        self.window.we.next = self.dispatch.win_we.val();
        self.window.w_qpn.next = self.dispatch.resp_qpn.val();
        self.window.w_slot.next = self.dispatch.win_w_slot.val();
        self.window.w_item.next = self.dispatch.win_w.val();
        self.window.r_qpn.next = self.dispatch.resp_qpn.val();
        self.window.r_slot.next = self.dispatch.win_r_slot.val();
        self.wqe_lent.next = self.dispatch.idle.val() & !self.req_tx.ctx_busy.val();
        if self.req_tx.ctx_busy.val() {
            self.window.we.next = self.req_tx.win_we.val();
            self.window.w_qpn.next = self.req_tx.qp_index.val();
            self.window.w_slot.next = self.req_tx.win_w_slot.val();
            self.window.w_item.next = self.req_tx.win_w.val();
            self.window.r_qpn.next = self.req_tx.qp_index.val();
            self.window.r_slot.next = self.req_tx.win_slot.val();
        } else if self.dispatch.idle.val() {
            self.window.r_qpn.next = bit_cast::<24, 16>(self.wqe_qpn.val());
            self.window.r_slot.next = self.wqe_slot.val();
        }
        if self.cmd.peek.val() {
            // A command reads the QP's oldest entry (QUERY_QP); no engine holds the port meanwhile.
            self.window.r_qpn.next = self.exec.win_qpn.val();
            self.window.r_slot.next = self.exec.win_slot.val();
            self.wqe_lent.next = false;
        }
        self.dispatch.win_r.next = self.window.r_item.val();
        self.req_tx.win_entry.next = self.window.r_item.val();
        self.wqe.next = self.window.r_item.val();
        self.wake.clock.next = self.clock.val();
        self.wake.reset.next = self.reset.val();
        self.wake.rung.next = self.exec.sq_rung.val();
        self.wake.rung_qpn.next = self.exec.sq_rung_qpn.val();
        // A command on a QP, or the completer freeing room in its window (never in the same cycle: a command
        // commits only while no engine holds the context port).
        self.wake.cmd.next = self.exec.qp_cmd.val() | self.dispatch.comp_wake.val();
        self.wake.cmd_qpn.next = self.exec.qp_cmd_qpn.val();
        if self.dispatch.comp_wake.val() {
            self.wake.cmd_qpn.next = self.dispatch.wr_qpn.val();
        }
        self.wake.visit.next = self.dispatch.wake_visit.val();
        self.wake.visit_qpn.next = self.dispatch.resp_qpn.val();
        self.wake.clear.next = self.dispatch.wake_clear.val();
        self.dispatch.wake_any.next = self.wake.any.val();
        self.dispatch.wake_pick.next = self.wake.pick.val();
        self.wake.at_qpn.next = self.req_tx.tx_qpn.val();
        self.dispatch.at_alone.next = self.wake.at_alone.val();
        self.dispatch.at_qpn.next = self.req_tx.tx_qpn.val();
        self.trace_fetch.next = self.dispatch.fetched.val();
        self.trace_fetch_qpn.next = self.dispatch.wr_qpn.val();
        self.trace_fetch_primed.next = self.req_tx.primed.val();
        self.trace_fetch_idle.next = !self.wake.any.val();
        // The requester's transmit side: woken by a fetch or a command on the QP; the timers' tick from the
        // device's time (1,024 ns a tick).
        self.req_tx.clock.next = self.clock.val();
        self.req_tx.reset.next = self.reset.val();
        self.req_tx.fetched.next = self.dispatch.fetched.val() | self.dispatch.comp_wake.val();
        self.dispatch.retire_req.next = self.req_tx.retire_req.val();
        self.dispatch.retire_qpn.next = self.req_tx.qp_index.val();
        self.req_tx.retire_take.next = self.dispatch.retire_take.val();
        self.req_tx.fetch_qpn.next = self.dispatch.wr_qpn.val();
        // The fetch's read, for the requester's `SendDesc` to take as its own, and its commit.
        self.req_tx.snoop_go.next = self.dispatch.fetch_go.val();
        self.req_tx.snoop_index.next = self.dispatch.fetch_go_index.val();
        self.req_tx.snoop_valid.next = self.dispatch.fetch_cpl.val();
        self.req_tx.snoop_data.next = self.disp_cpl.cpl_data.val();
        self.req_tx.snoop_err.next = self.disp_cpl.cpl_err.val();
        self.req_tx.snoop_last.next = self.disp_cpl.cpl_last.val();
        self.req_tx.commit.next = self.dispatch.fetched.val();
        self.req_tx.commit_index.next = self.dispatch.fetched_index.val();
        self.req_tx.cmd.next = self.exec.qp_cmd.val();
        self.req_tx.cmd_qpn.next = self.exec.qp_cmd_qpn.val();
        self.req_tx.qp_valid.next = self.exec.rs_qp_valid.val();
        self.req_tx.attr.next = self.exec.rs_attr.val();
        self.req_tx.req.next = self.exec.rs_req.val();
        self.req_tx.gid.next = self.exec.rs_gid.val();
        self.req_tx.gid_valid.next = self.exec.rs_gid_valid.val();
        self.req_tx.mac.next = self.exec.mac.val();
        self.req_tx.tick.next = bit_cast::<36, 64>(self.mmio.now_ns.val() >> 10);
        self.trace_req.next = self.req_tx.decided.val();
        self.trace_req_qpn.next = self.req_tx.tx_qpn.val();
        self.trace_req_nil.next = self.req_tx.nil.val();
        self.trace_req_raw.next = self.req_tx.tx_raw.val();
        self.trace_req_idle.next = self.req_tx.idle.val();
        // The timers: the table scanned one QP a cycle, a due one handed to the dispatch.
        self.timers.clock.next = self.clock.val();
        self.timers.reset.next = self.reset.val();
        self.timers.tick.next = bit_cast::<36, 64>(self.mmio.now_ns.val() >> 10);
        self.exec.tm_index.next = self.timers.tm_index.val();
        self.timers.tm_live.next = self.exec.tm_live.val();
        self.timers.tm_ack.next = self.exec.tm_ack.val();
        self.timers.tm_ack_at.next = self.exec.tm_ack_at.val();
        self.timers.tm_rnr.next = self.exec.tm_rnr.val();
        self.timers.tm_rnr_at.next = self.exec.tm_rnr_at.val();
        self.dispatch.tm_fire.next = self.timers.fire.val();
        self.dispatch.tm_qpn.next = self.timers.fire_qpn.val();
        self.dispatch.tm_rnr.next = self.timers.fire_rnr.val();
        self.timers.take.next = self.dispatch.tm_take.val();
        self.trace_timer.next = self.dispatch.timer_fired.val();
        self.trace_timer_qpn.next = self.dispatch.wr_qpn.val();
        self.trace_timer_rnr.next = self.dispatch.timer_rnr.val();
        self.exec.win_entry.next = self.window.r_item.val();
        self.exec.qp_index.next = self.qp_index.val();
        self.qp_valid.next = self.exec.qp_valid.val();
        self.qp_attr.next = self.exec.qp_attr.val();
        self.qp_req.next = self.exec.qp_req.val();
        self.qp_resp.next = self.exec.qp_resp.val();
        self.exec.mr_index.next = self.mr_index.val();
        self.mr.next = self.exec.mr.val();
        self.exec.cq_index.next = self.cq_index.val();
        self.cq.next = self.exec.cq.val();
        self.eq.next = self.exec.eq.val();
        self.exec.gid_index.next = self.gid_index.val();
        self.gid.next = self.exec.gid.val();
        self.gid_valid.next = self.exec.gid_valid.val();
        self.mac.next = self.exec.mac.val();

        // Receive: the MAC boundary, the RX pipeline, the dispatch and its context ports.
        self.ingress.clock.next = self.clock.val();
        self.ingress.reset.next = self.reset.val();
        self.ingress.mac_data.next = self.rx_data.val();
        self.ingress.mac_keep.next = self.rx_keep.val();
        self.ingress.mac_last.next = self.rx_last.val();
        self.ingress.mac_valid.next = self.rx_valid.val();
        self.ingress.mac_fcs_bad.next = self.rx_fcs_bad.val();
        self.ingress.clear.next = false;
        self.rx_drop_full.next = self.ingress.cnt_full.val();
        self.rx_drop_fcs.next = self.ingress.cnt_bad_fcs.val();
        self.rx_pause.next = self.ingress.pause.val();
        self.rx.clock.next = self.clock.val();
        self.rx.in_data.next = self.ingress.out_data.val();
        self.rx.in_keep.next = self.ingress.out_keep.val();
        self.rx.in_last.next = self.ingress.out_last.val();
        // A frame the raw path holds for its decision keeps the next from starting.
        self.rx.in_valid.next = self.ingress.out_valid.val() & !self.raw_recv.held.val();
        self.ingress.out_ready.next = self.rx.in_ready.val() & !self.raw_recv.held.val();
        self.raw_recv.clock.next = self.clock.val();
        self.raw_recv.reset.next = self.reset.val();
        self.raw_recv.in_data.next = self.ingress.out_data.val();
        self.raw_recv.in_keep.next = self.ingress.out_keep.val();
        self.raw_recv.in_last.next = self.ingress.out_last.val();
        self.raw_recv.in_take.next = self.ingress.out_valid.val() & self.rx.in_ready.val() & !self.raw_recv.held.val();
        self.raw_recv.decided.next = self.dispatch.decided.val();
        self.exec.own_ip.next = self.raw_recv.own_ip.val();
        self.cnt_ok.next = self.rx.cnt_ok.val();
        self.cnt_not_roce.next = self.rx.cnt_not_roce.val();
        self.cnt_truncated.next = self.rx.cnt_truncated.val();
        self.cnt_bad_ip.next = self.rx.cnt_bad_ip.val();
        self.cnt_bad_udp_length.next = self.rx.cnt_bad_udp_length.val();
        self.cnt_bad_tver.next = self.rx.cnt_bad_tver.val();
        self.cnt_unknown_opcode.next = self.rx.cnt_unknown_opcode.val();
        self.cnt_bad_length.next = self.rx.cnt_bad_length.val();
        self.cnt_bad_icrc.next = self.rx.cnt_bad_icrc.val();
        self.cnt_too_long.next = self.rx.cnt_too_long.val();
        self.dispatch.clock.next = self.clock.val();
        self.dispatch.tick.next = bit_cast::<36, 64>(self.mmio.now_ns.val() >> 10);
        self.dispatch.reset.next = self.reset.val();
        self.dispatch.meta.next = self.rx.meta.val();
        self.dispatch.meta_valid.next = self.rx.meta_valid.val();
        self.rx.meta_ready.next = self.dispatch.meta_ready.val();
        self.dispatch.pay_data.next = self.rx.out_data.val();
        self.dispatch.pay_keep.next = self.rx.out_keep.val();
        self.dispatch.pay_last.next = self.rx.out_last.val();
        self.dispatch.pay_valid.next = self.rx.out_valid.val();
        self.rx.out_ready.next = self.dispatch.pay_ready.val();
        self.rx_unhandled.next = self.dispatch.unhandled.val();
        // The responder's context port: the dispatch's, or the transmit side's while it holds it.
        self.exec.rs_qp_index.next = self.dispatch.qp_index.val();
        self.exec.rs_gid_index.next = self.dispatch.gid_index.val();
        self.exec.rs_resp_we.next = self.dispatch.resp_we.val();
        self.exec.rs_resp_qpn.next = self.dispatch.resp_qpn.val();
        self.exec.rs_resp_next.next = self.dispatch.resp_next.val();
        self.exec.rs_rq_ci_we.next = self.dispatch.rq_ci_we.val();
        self.exec.rs_err_we.next = self.resp_tx.err.val() | self.dispatch.err_we.val();
        self.exec.rs_sq_ci_we.next = self.dispatch.sq_ci_we.val();
        self.exec.rs_sq_ci.next = self.dispatch.sq_ci.val();
        self.dispatch.err_in.next = self.exec.entered_err.val() | self.resp_tx.err.val() | self.dispatch.err_we.val();
        self.dispatch.wqe_posted.next = self.exec.wqe_posted.val();
        // Flush steps and fetch visits wait for both transmit sides to have nothing to do (a flush scan would
        // otherwise keep the port from the requester), except a fetch for the QP the requester is at when no
        // other QP is awake, whose read leaves the port to them.
        self.dispatch.tx_idle.next = self.resp_tx.idle.val() & self.req_tx.idle.val();
        // Between frames, a transmit side that waits for the port gets it (`RxDispatch`'s turn); the
        // requester's next packet only once the last one's payload has streamed (its visit may start earlier,
        // but not ahead of a waiting frame: the peer sends about one frame per packet, and the dispatch would
        // otherwise take one for two of them).
        self.dispatch.tx_wants.next = self.resp_tx.want.val() | (self.req_tx.want.val() & !self.gather.busy.val());
        self.exec.rs_rq_ci.next = self.dispatch.rq_ci.val();
        self.exec.rs_cq_index.next = self.dispatch.cq_index.val();
        self.dispatch.cq.next = self.exec.rs_cq.val();
        self.exec.rs_cq_we.next = self.dispatch.cq_we.val();
        self.exec.rs_cq_n.next = self.dispatch.cq_index.val();
        self.exec.rs_cq_next.next = self.dispatch.cq_next.val();
        self.exec.rs_cq_disarm.next = self.dispatch.cq_disarm.val();
        self.dispatch.eq.next = self.exec.eq.val();
        self.exec.ev_eq_we.next = self.dispatch.eq_we.val();
        self.exec.ev_eq_pi.next = self.dispatch.eq_pi.val();
        self.exec.ev_eq_disarm.next = self.dispatch.eq_disarm.val();
        if self.req_tx.ctx_busy.val() {
            self.exec.rs_qp_index.next = self.req_tx.qp_index.val();
            self.exec.rs_gid_index.next = self.req_tx.gid_index.val();
            self.exec.rs_resp_qpn.next = self.req_tx.qp_index.val();
            self.exec.rs_resp_we.next = false;
        }
        if self.resp_tx.ctx_busy.val() {
            self.exec.rs_qp_index.next = self.resp_tx.qp_index.val();
            self.exec.rs_gid_index.next = self.resp_tx.gid_index.val();
            self.exec.rs_resp_we.next = self.resp_tx.resp_we.val();
            self.exec.rs_resp_qpn.next = self.resp_tx.resp_qpn.val();
            self.exec.rs_resp_next.next = self.resp_tx.resp_next.val();
        }
        self.dispatch.qp_valid.next = self.exec.rs_qp_valid.val();
        self.dispatch.attr.next = self.exec.rs_attr.val();
        self.dispatch.resp.next = self.exec.rs_resp.val();
        self.exec.rs_mr_index.next = self.dispatch.mr_index.val();
        self.dispatch.mr.next = self.exec.rs_mr.val();
        self.dispatch.gid.next = self.exec.rs_gid.val();
        self.dispatch.gid_valid.next = self.exec.rs_gid_valid.val();
        self.dispatch.mac.next = self.exec.mac.val();

        // The responder's transmit side: which QPs owe a response (the dispatch's write-backs), its reads of
        // the context port, and its ACKs' records through the TX pipeline to the MAC.
        self.resp_tx.clock.next = self.clock.val();
        self.resp_tx.reset.next = self.reset.val();
        self.resp_tx.wb_we.next = self.dispatch.resp_we.val();
        self.resp_tx.wb_qpn.next = self.dispatch.resp_qpn.val();
        self.resp_tx.wb_resp.next = self.dispatch.resp_next.val();
        self.resp_tx.qp_valid.next = self.exec.rs_qp_valid.val();
        self.resp_tx.attr.next = self.exec.rs_attr.val();
        self.resp_tx.resp.next = self.exec.rs_resp.val();
        self.resp_tx.gid.next = self.exec.rs_gid.val();
        self.resp_tx.gid_valid.next = self.exec.rs_gid_valid.val();
        self.resp_tx.mac.next = self.exec.mac.val();
        self.items.clock.next = self.clock.val();
        self.items.we.next = self.dispatch.item_we.val();
        self.items.w_qpn.next = self.dispatch.resp_qpn.val();
        self.items.w_slot.next = self.dispatch.item_slot.val();
        self.items.w_item.next = self.dispatch.item.val();
        if self.resp_tx.ctx_busy.val() {
            self.items.we.next = self.resp_tx.item_we.val();
            self.items.w_qpn.next = self.resp_tx.resp_qpn.val();
            self.items.w_slot.next = self.resp_tx.item_w_slot.val();
            self.items.w_item.next = self.resp_tx.item_w.val();
        }
        self.items.r_qpn.next = self.resp_tx.qp_index.val();
        self.items.r_slot.next = self.resp_tx.item_slot.val();
        self.resp_tx.item.next = self.items.r_item.val();
        self.trace_tx.next = self.resp_tx.decided.val();
        self.trace_tx_qpn.next = self.resp_tx.tx_qpn.val();
        self.trace_tx_nil.next = self.resp_tx.nil.val();
        self.trace_tx_idle.next = self.resp_tx.idle.val();
        self.tx.clock.next = self.clock.val();
        // The TX pipeline's records: the responder's or the requester's (one holds the context port at a time,
        // from its payload's gather to its record taken, so records and payloads come in decision order).
        self.tx.meta.next = self.resp_tx.meta.val();
        self.tx.meta_valid.next = self.resp_tx.meta_valid.val() | self.req_tx.meta_valid.val();
        if self.req_tx.meta_valid.val() {
            self.tx.meta.next = self.req_tx.meta.val();
        }
        self.resp_tx.meta_ready.next = self.tx.meta_ready.val();
        self.req_tx.meta_ready.next = self.tx.meta_ready.val();
        // A READ response's payload: read once its decision is near (the dispatch's write beats out first),
        // streamed into the TX pipeline behind its record.
        self.gather.clock.next = self.clock.val();
        self.gather.reset.next = self.reset.val();
        self.one_sge.addr.next = self.resp_tx.rd_addr.val();
        self.one_sge.len.next = self.resp_tx.rd_len.val();
        self.gather.start.next = self.resp_tx.rd_start.val();
        self.gather.sges.next = self.one_sge.sges.val();
        self.gather.count.next = 1.into();
        self.gather.off.next = 0.into();
        self.gather.len.next = bit_cast::<32, 16>(self.resp_tx.rd_len.val());
        self.gather.claim.next = false;
        self.gather.tag.next = 0.into();
        self.gather.msg_end.next = 0.into();
        self.gather.drop.next = self.resp_tx.nil.val();
        if self.req_tx.ctx_busy.val() {
            self.gather.start.next = self.req_tx.g_start.val();
            self.gather.sges.next = self.req_tx.g_sges.val();
            self.gather.count.next = self.req_tx.g_count.val();
            self.gather.off.next = self.req_tx.g_off.val();
            self.gather.len.next = self.req_tx.g_len.val();
            self.gather.claim.next = self.req_tx.g_claim.val();
            self.gather.tag.next = self.req_tx.g_tag.val();
            self.gather.msg_end.next = self.req_tx.g_end.val();
            self.gather.drop.next = self.req_tx.g_drop.val();
        }
        // The requester's next packet may be read while the last one's payload still streams.
        self.req_tx.g_busy.next = self.gather.reading.val();
        self.req_tx.g_done.next = self.gather.done.val();
        self.req_tx.g_err.next = self.gather.err.val();
        self.resp_tx.rd_can.next = !self.gather.busy.val();
        self.resp_tx.wr_quiet.next = self.dispatch.wr_quiet.val();
        self.resp_tx.rd_first.next = self.gather.done.val();
        self.resp_tx.rd_err.next = self.gather.err.val();
        self.tx.pay_data.next = self.gather.out_data.val();
        self.tx.pay_keep.next = self.gather.out_keep.val();
        self.tx.pay_last.next = self.gather.out_last.val();
        self.tx.pay_valid.next = self.gather.out_valid.val();
        self.gather.out_ready.next = self.tx.pay_ready.val();
        // The MAC's port: the TX pipeline's frames, and between them the control queue's replies.
        self.ctrl.clock.next = self.clock.val();
        self.ctrl.reset.next = self.reset.val();
        self.ctrl.wr_valid.next = self.raw_recv.wr_valid.val();
        self.ctrl.wr_beat.next = self.raw_recv.wr_beat.val();
        self.ctrl.wr_data.next = self.raw_recv.wr_data.val();
        self.ctrl.at_held.next = self.raw_recv.at_held.val();
        self.ctrl.patch.next = self.raw_recv.patch.val();
        self.ctrl.own.next = self.exec.own.val();
        self.ctrl.raw.next = self.dispatch.raw.val();
        self.dispatch.raw_any.next = self.exec.raw_any.val();
        self.dispatch.raw_pick.next = self.exec.raw_qpn.val();
        self.dispatch.raw_ctrl.next = self.raw_recv.at_held.val() & self.exec.own.val();
        self.ctrl.mac.next = self.exec.mac.val();
        self.ctrl.pipe_data.next = self.tx.out_data.val();
        self.ctrl.pipe_keep.next = self.tx.out_keep.val();
        self.ctrl.pipe_last.next = self.tx.out_last.val();
        self.ctrl.pipe_valid.next = self.tx.out_valid.val();
        self.tx.out_ready.next = self.ctrl.pipe_ready.val();
        self.ctrl.tx_ready.next = self.tx_ready.val();
        self.tx_data.next = self.ctrl.tx_data.val();
        self.tx_keep.next = self.ctrl.tx_keep.val();
        self.tx_last.next = self.ctrl.tx_last.val();
        self.tx_valid.next = self.ctrl.tx_valid.val();
        self.tx_ctrl.next = self.ctrl.tx_ctrl.val();
        self.trace_ctrl_idle.next = self.ctrl.idle.val();
    }
}
