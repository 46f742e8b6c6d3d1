//! What the completer does with a response once `AckWalk` has walked the window (through the PSN it
//! acknowledges) and `RespPlan` has said what is left to do, the model's `comp::on_data` and the NAK cases
//! of `comp::on_ack`:
//!
//! - `RespMatch` (combinational, the model's `comp::answer`): what a READ response or atomic ACK does to the
//!   entry the walk stopped at (the oldest unfinished one). A READ response is `take`n when that entry is a
//!   READ whose PSNs hold the response's, it is the next one the READ waits for (`comp_psn`), and its
//!   opcode's position and payload length are the ones packet `k` of the READ must have (else it is `bad`:
//!   the READ fails with BadRespErr); one past `comp_psn` means responses were lost (`ahead`: a gap). An
//!   atomic ACK is taken when the entry is the atomic whose PSN it answers. Anything else (a duplicate, a
//!   stale answer) is ignored. With it: whether the response ends the operation (`last`), and where its data
//!   goes in the WQE's list (`off`, `bytes`: packet `k`'s payload at `k` path MTUs; an atomic's original
//!   value at 0).
//! - `RespRun`: the plan, in the order the model does it. Taken data has its WQE's slot read again
//!   (`SendDesc`: its scatter list) and the scatter started (`sc_*`: the data fits the list, or the READ
//!   fails with LocProtErr and its data is drained); a response that ends the READ or atomic, or fails the
//!   oldest WQE, finishes that entry and moves `oldest` past the finished entries behind it (`OldestWalk`),
//!   reading the entry `oldest` then names (whether work is still outstanding); a rewind finds where the
//!   cursor goes back to (`RewindWalk`). Then `done` for a cycle with the decision: the entry written back
//!   (`w_*`) and `qp_req` (`RespFin`).
//! - `RespFin` (combinational): that `qp_req` and entry. Taken data moves `comp_psn` past it and counts as
//!   progress (the retry counters reset, a gap closed); a retry or an RNR wait counts one down; a finished
//!   READ or atomic gives its place back (`rd_atomic`); a rewind moves the cursor; an RNR NAK sets the
//!   wait (its delay from the NAK's timer code) and stops the ACK timer; otherwise the ACK timer runs while
//!   a started WQE is outstanding, restarted from the tick now (an RNR wait holds it; a failure ends the
//!   wait, as the model's `fail_oldest`).

use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
use crate::engine::req::desc::SendDesc;
use crate::engine::req::ready::WQE_BITS;
use crate::engine::req::window::{ack_deadline, entry_packets, window_base, OldestWalk, RewindWalk};
use crate::engine::resp::recv_wqe::SGES_BITS;
use crate::kit::*;
use crate::record::{build, slice, width};
use crate::rx::meta;
use wire::contract::profile::Profile;
use wire::contract::qpc::{qp_context, TICK_BITS};
use wire::contract::verbs::WcStatus;
use wire::contract::wqe::SendOp;
use wire::Opcode;

#[derive(LogicBlock, Default)]
pub struct RespMatch {
    /// The QP's `qp_attr` (its path MTU); the entry the walk stopped at (`held`: it is in the window) and
    /// its first PSN; `comp_psn` after the walk.
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub entry: Signal<In, Bits<WQE_BITS>>,
    pub held: Signal<In, Bit>,
    pub first: Signal<In, Bits<24>>,
    pub comp: Signal<In, Bits<24>>,
    /// The response's RX record (a READ response or an atomic ACK).
    pub rec: Signal<In, Bits<{ meta::BITS }>>,
    pub take: Signal<Out, Bit>,
    pub bad: Signal<Out, Bit>,
    pub ahead: Signal<Out, Bit>,
    pub last: Signal<Out, Bit>,
    pub off: Signal<Out, Bits<32>>,
    pub bytes: Signal<Out, Bits<32>>,
    profile: Param<Profile>,
}

impl RespMatch {
    pub fn new(profile: Profile) -> Self {
        RespMatch { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RespMatch {
    fn update(&mut self) {
        // Verified in Verilator against the model's `comp::answer` (sim/tests/resp_match.rs), and within `Completer`.
    }

    fn connect(&mut self) {
        self.take.connect();
        self.bad.connect();
        self.ahead.connect();
        self.last.connect();
        self.off.connect();
        self.bytes.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(match_verilog(&self.profile.0))
    }
}

/// The Verilog body of `RespMatch` for profile `p`.
pub fn match_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let w = |n: &str| slice(&c.wqe, "entry", n);
    let mut v = entry_packets(&c, "entry", "attr");
    let op = |o: Opcode| format!("8'h{:02x}", o.0);
    v.extend([
        format!("wire [7:0] opcode = {};", meta::select("rec", "opcode")),
        format!("wire [23:0] psn = {};", meta::select("rec", "psn")),
        format!("wire [15:0] payload_len = {};", meta::select("rec", "payload_len")),
        format!("wire atomic = opcode == {};", op(Opcode::ATOMIC_ACKNOWLEDGE)),
        "wire unused_rec = ^rec;".into(),
        format!("wire started = {};", w("started")),
        format!("wire is_read = {} == 4'd{};", w("op"), SendOp::RdmaRead as u8),
        "wire unused_entry = ^entry;".into(),
        "wire unused_attr = ^attr;".into(),
        // Packet k of the READ (PSN order as the model's `Psn::diff`: signed 24-bit distances).
        "wire [23:0] k = psn - first;".into(),
        "wire holds = held && started && !k[23] && k < npkts;".into(),
        "wire [23:0] to_comp = psn - comp;".into(),
        "wire is_dup = to_comp[23];".into(),
        "wire skipped = !to_comp[23] && to_comp != 24'd0;".into(),
        "wire first_pkt = k == 24'd0;".into(),
        "wire last_pkt = k + 24'd1 == npkts;".into(),
        format!(
            "wire [7:0] want = first_pkt ? (last_pkt ? {} : {}) : (last_pkt ? {} : {});",
            op(Opcode::RDMA_READ_RESPONSE_ONLY),
            op(Opcode::RDMA_READ_RESPONSE_FIRST),
            op(Opcode::RDMA_READ_RESPONSE_LAST),
            op(Opcode::RDMA_READ_RESPONSE_MIDDLE)
        ),
        "wire [31:0] k_off = {8'd0, k} << mtu_shift;".into(),
        "wire [31:0] rest = len - (k_off < len ? k_off : len);".into(),
        "wire [31:0] expect_len = last_pkt ? rest : 32'd1 << mtu_shift;".into(),
        "wire shaped = opcode == want && {16'd0, payload_len} == expect_len;".into(),
        "wire read_next = !atomic && is_read && holds && !is_dup && !skipped;".into(),
        "wire atomic_here = atomic && held && started && is_atomic && first == psn;".into(),
        "always @(*) begin".into(),
        "    take = (read_next && shaped) || atomic_here;".into(),
        "    bad = read_next && !shaped;".into(),
        "    ahead = !atomic && is_read && holds && skipped;".into(),
        "    last = atomic || last_pkt;".into(),
        "    off = atomic ? 32'd0 : k_off;".into(),
        "    bytes = atomic ? 32'd8 : {16'd0, payload_len};".into(),
        "end".into(),
    ]);
    v
}

#[derive(LogicBlock, Default)]
pub struct RespFin {
    /// The QP's records as the walk left them, the entry it stopped at (`qp_req.oldest`; `held`: in the
    /// window), the response's PSN and AETH syndrome, and the tick now.
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub entry: Signal<In, Bits<WQE_BITS>>,
    pub held: Signal<In, Bit>,
    pub psn: Signal<In, Bits<24>>,
    pub syn: Signal<In, Bits<8>>,
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    /// `RespPlan`'s plan (`fail` with `status` and `vendor`, `take`, `retry` and its counts, `rnr_set`,
    /// `gap_set`, `rewind`); with it whether taken data fits the WQE's list (else LocProtErr) and ends the
    /// operation.
    pub take: Signal<In, Bit>,
    pub fail: Signal<In, Bit>,
    pub status: Signal<In, Bits<5>>,
    pub vendor: Signal<In, Bits<8>>,
    pub retry: Signal<In, Bit>,
    pub dec_retry: Signal<In, Bit>,
    pub dec_rnr: Signal<In, Bit>,
    pub rnr_set: Signal<In, Bit>,
    pub gap_set: Signal<In, Bit>,
    pub rewind: Signal<In, Bit>,
    pub placed: Signal<In, Bit>,
    pub last: Signal<In, Bit>,
    /// Instead of a response, the end of the ACK timer (`tmr_ack`, the model's `on_timeout`) or of the RNR
    /// wait (`tmr_rnr`, `on_rnr_timer`); for the ACK timer, with work outstanding, the oldest WQE fails
    /// (`t_fail`: no retries left) or the requester goes back to `comp_psn` (`t_retry`).
    pub tmr_ack: Signal<In, Bit>,
    pub tmr_rnr: Signal<In, Bit>,
    pub t_fail: Signal<In, Bit>,
    pub t_retry: Signal<In, Bit>,
    /// The first unfinished entry behind a finished one (from `OldestWalk`, the window's size if none), and
    /// that entry (`at_outst` says whether it is started); then whether it was (`outst_at`, kept).
    pub at: Signal<In, Bits<8>>,
    pub at_entry: Signal<In, Bits<WQE_BITS>>,
    pub outst_at: Signal<In, Bit>,
    /// Where `RewindWalk` put the cursor.
    pub rw_cursor: Signal<In, Bits<8>>,
    pub rw_psn: Signal<In, Bits<24>>,
    /// The entry's SQ counter and window slot; the walks' window (entry 0's SQ counter, how many, the next
    /// new PSN), `OldestWalk`'s start and the slot of entry `at`; `RewindWalk`'s start and target.
    pub index: Signal<Out, Bits<16>>,
    pub slot: Signal<Out, Bits<8>>,
    pub base: Signal<Out, Bits<16>>,
    pub count: Signal<Out, Bits<8>>,
    pub req_psn: Signal<Out, Bits<24>>,
    pub oldest_next: Signal<Out, Bits<8>>,
    pub at_slot: Signal<Out, Bits<8>>,
    pub at_outst: Signal<Out, Bit>,
    pub rw_from: Signal<Out, Bits<8>>,
    pub rw_target: Signal<Out, Bits<24>>,
    /// The window index of the oldest unfinished entry; the ACK timer, the RNR wait, is armed and due; with
    /// work outstanding (`at_outst`), whether the ACK timer's end fails the oldest WQE or retries.
    pub old_idx: Signal<Out, Bits<8>>,
    pub ack_due: Signal<Out, Bit>,
    pub rnr_due: Signal<Out, Bit>,
    pub t_fail_now: Signal<Out, Bit>,
    pub t_retry_now: Signal<Out, Bit>,
    /// The entry finishes (failed, or answered whole).
    pub finish: Signal<Out, Bit>,
    pub entry_next: Signal<Out, Bits<WQE_BITS>>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    profile: Param<Profile>,
}

impl RespFin {
    pub fn new(profile: Profile) -> Self {
        RespFin { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RespFin {
    fn update(&mut self) {
        // Verified in Verilator within `Completer` against the model's `comp::respond` (sim/tests/completer.rs).
    }

    fn connect(&mut self) {
        self.index.connect();
        self.slot.connect();
        self.base.connect();
        self.count.connect();
        self.req_psn.connect();
        self.oldest_next.connect();
        self.at_slot.connect();
        self.at_outst.connect();
        self.rw_from.connect();
        self.rw_target.connect();
        self.old_idx.connect();
        self.ack_due.connect();
        self.rnr_due.connect();
        self.t_fail_now.connect();
        self.t_retry_now.connect();
        self.finish.connect();
        self.entry_next.connect();
        self.req_next.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(fin_verilog(&self.profile.0))
    }
}

/// The Verilog body of `RespFin` for profile `p`.
pub fn fin_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, rl, wl) = (&c.attr, &c.req, &c.wqe);
    let a = |n: &str| slice(al, "attr", n);
    let r = |n: &str| slice(rl, "req", n);
    let w = |n: &str| slice(wl, "entry", n);
    let (wb, rw, t, nt) = (width(rl, "wqes"), width(rl, "rd_atomic"), TICK_BITS, width(rl, "rnr_deadline"));
    assert!(wb < 8, "a window index fits 8 bits with room");
    let mut v = window_base(&c, "attr", "req");
    v.extend(ack_deadline(&c, "attr", "tick"));
    v.extend([
        format!("wire [{}:0] old = {};", wb - 1, r("oldest")),
        "wire timer_mode = tmr_ack || tmr_rnr;".into(),
        "wire fail_e = fail || t_fail;".into(),
        format!("wire [4:0] status_e = t_fail ? 5'd{} : status;", WcStatus::RetryExcErr as u8),
        "wire [7:0] vendor_e = t_fail ? 8'd0 : vendor;".into(),
        "wire dec_retry_e = dec_retry || t_retry;".into(),
        "wire rewind_e = rewind || t_retry || tmr_rnr;".into(),
        "wire failed = fail_e || (take && !placed);".into(),
        // A failure with no unfinished WQE in the window (a late NAK) finishes nothing: the model's `finish`
        // finds no entry there.
        "wire ends = (failed && held) || (take && last);".into(),
        format!(
            "wire holds = {} && !{} && ({} == 4'd{} || {} == 4'd{} || {} == 4'd{});",
            w("started"),
            w("acked"),
            w("op"),
            SendOp::RdmaRead as u8,
            w("op"),
            SendOp::AtomicCmpSwp as u8,
            w("op"),
            SendOp::AtomicFetchAdd as u8
        ),
        "wire [23:0] next_psn = psn + 24'd1;".into(),
        // Still outstanding after it: the oldest unfinished entry then is started.
        format!("wire outst = (ends || timer_mode) ? outst_at : held && {};", w("started")),
        format!("wire [4:0] err_st = fail_e ? status_e : 5'd{};", WcStatus::LocProtErr as u8),
        format!("wire [{}:0] restart = tmo != 5'd0 ? deadline : {t}'d0;", t - 1),
        // The ACK timer: stopped by an RNR wait; after a failure running while work is outstanding; after a
        // retry too unless an RNR wait holds it; after data or progress restarted unless an RNR wait holds it.
        format!("wire rnr_before = {};", r("rnr_valid")),
        "wire keep = !timer_mode && !rnr_set && !fail && rnr_before && (!retry || outst);".to_string(),
        // The ACK timer's end: stopped, restarted by a retry (unless an RNR wait holds it); the RNR wait's
        // end: restarted while work is outstanding.
        "wire run_t = tmr_ack ? t_retry && !rnr_before : outst;".into(),
        "wire run = (timer_mode ? run_t : !rnr_set && !keep && outst) && tmo != 5'd0;".into(),
        // Whether the timer asked for is due (the scan saw it so; it may have moved since).
        format!("wire [{}:0] ack_left = tick - {};", t - 1, r("timer")),
        format!("wire [{}:0] rnr_left = tick[{}:0] - {};", nt - 1, nt - 1, r("rnr_deadline")),
        format!("wire unused_left = ^ack_left[{}:0] ^ ^rnr_left[{}:0];", t - 2, nt - 2),
        // An RNR wait: one tick more than the delay in whole ticks, rounded up (the model's `on_ack`).
        format!("reg [{}:0] rnr_wait;", nt - 1),
        "always @(*) begin".into(),
        "    case (syn[4:0])".into(),
    ]);
    for (code, &ns) in wire::contract::verbs::RNR_TIMER_NS.iter().enumerate() {
        let ticks = ns.div_ceil(u64::from(wire::contract::qpc::TICK_NS)).max(1) + 1;
        assert!(ticks < 1 << (nt - 1), "an RNR wait fits the near-tick field");
        v.push(format!("    5'd{code}: rnr_wait = {nt}'d{ticks};"));
    }
    v.extend([
        "    endcase".to_string(),
        "end".into(),
        format!("wire [{}:0] tick_near = tick[{}:0];", nt - 1, nt - 1),
        format!("wire unused_tick = ^tick[{}:{}];", t - 1, nt),
        "wire unused_in = ^attr ^ ^req ^ ^entry ^ ^at_entry ^ ^rw_cursor ^ ^syn;".into(),
    ]);
    let (rd, req_e) = build(rl, "req", "rf", |name, bits| {
        Some(match name {
            "comp_psn" => format!("take ? next_psn : {}", r("comp_psn")),
            "retry_left" => {
                format!("take ? {} : dec_retry_e ? {} - 3'd1 : {}", a("retry_cnt"), r("retry_left"), r("retry_left"))
            }
            "rnr_left" => format!("take ? {} : dec_rnr ? {} - 3'd1 : {}", a("rnr_retry"), r("rnr_left"), r("rnr_left")),
            "gap_valid" => format!("(take || t_retry) ? 1'b0 : gap_set ? 1'b1 : {}", r("gap_valid")),
            "gap_psn" => format!("(take || t_retry) ? 24'd0 : gap_set ? {} : {}", r("comp_psn"), r("gap_psn")),
            "rd_atomic" => format!("{} - ((ends && holds) ? {rw}'d1 : {rw}'d0)", r("rd_atomic")),
            "oldest" => format!("ends ? at[{}:0] : old", wb - 1),
            "cursor" => format!("rewind_e ? rw_cursor[{}:0] : {}", wb - 1, r("cursor")),
            "cursor_psn" => format!("rewind_e ? rw_psn : {}", r("cursor_psn")),
            "pkts_since_ackreq" => format!("rewind_e ? {bits}'d0 : {}", r(name)),
            "timer_valid" => format!("keep ? {} : run", r("timer_valid")),
            "timer" => format!("keep ? {} : run ? restart : {t}'d0", r("timer")),
            "rnr_valid" => format!("rnr_set ? 1'b1 : (fail_e || tmr_rnr) ? 1'b0 : {}", r(name)),
            "rnr_deadline" => format!("rnr_set ? tick_near + rnr_wait : (fail_e || tmr_rnr) ? {bits}'d0 : {}", r(name)),
            "rnr_psn" => format!("rnr_set ? psn : (fail_e || tmr_rnr) ? {bits}'d0 : {}", r(name)),
            _ => return None,
        })
    });
    v.extend(rd);
    let (ed, entry_e) = build(wl, "entry", "re", |name, _| {
        Some(match name {
            "acked" => format!("ends ? 1'b1 : {}", w("acked")),
            "error_valid" => format!("failed ? 1'b1 : {}", w("error_valid")),
            "status" => format!("failed ? err_st : {}", w("status")),
            "vendor_err" => format!("failed ? (fail_e ? vendor_e : 8'd0) : {}", w("vendor_err")),
            _ => return None,
        })
    });
    v.extend(ed);
    v.extend([
        "always @(*) begin".to_string(),
        format!("    index = sq_base + {{{}'d0, old}};", 16 - wb),
        format!("    slot = sq_base[7:0] + {{{}'d0, old}};", 8 - wb),
        "    base = sq_base;".into(),
        format!("    count = {{{}'d0, nwqes}};", 8 - wb),
        format!("    req_psn = {};", r("psn")),
        format!("    oldest_next = {{{}'d0, old}} + 8'd1;", 8 - wb),
        "    at_slot = sq_base[7:0] + at;".into(),
        format!("    at_outst = at < {{{}'d0, nwqes}} && {};", 8 - wb, slice(wl, "at_entry", "started")),
        format!("    rw_from = (ends && !fail_e) ? at : {{{}'d0, old}};", 8 - wb),
        format!("    rw_target = tmr_rnr ? {} : take ? next_psn : {};", r("rnr_psn"), r("comp_psn")),
        format!("    old_idx = {{{}'d0, old}};", 8 - wb),
        format!("    ack_due = {} && !ack_left[{}];", r("timer_valid"), t - 1),
        format!("    rnr_due = {} && !rnr_left[{}];", r("rnr_valid"), nt - 1),
        format!("    t_fail_now = tmr_ack && at_outst && {} == 3'd0;", r("retry_left")),
        format!("    t_retry_now = tmr_ack && at_outst && {} != 3'd0;", r("retry_left")),
        "    finish = ends;".into(),
        format!("    entry_next = {{{}'d0, {entry_e}}};", WQE_BITS - wl.width() as usize),
        format!("    req_next = {{{}'d0, {req_e}}};", REQ_BITS - rl.width() as usize),
        "end".into(),
    ]);
    v
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum RespRunState {
    Idle,
    /// The walk's `qp_req` being written back and read again.
    Settle,
    /// The read of the WQE's slot, the walk past a failed entry, the rewind, or the decision.
    Begin,
    /// The slot being read (`SendDesc`).
    Desc,
    /// The scatter started: whether the data fits.
    Fit,
    /// The walk past the finished entries (`OldestWalk`).
    Walk,
    /// The entry it ended at being read; then in: whether it is started.
    Probe,
    Seen,
    /// Go-back-N: where the cursor goes (`RewindWalk`).
    Rewind,
    /// The decision.
    Fin,
}

#[derive(LogicBlock)]
pub struct RespRun {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Run `RespPlan`'s plan (taken with `start`: `take`, `fail`, ... `rewind`), with `RespMatch`'s `last`,
    /// `off` and `bytes` (`len`) and the entry the walk stopped at (`held`: in the window); the walk's
    /// `qp_req` is written back in the same cycle.
    pub start: Signal<In, Bit>,
    pub take: Signal<In, Bit>,
    pub fail: Signal<In, Bit>,
    pub status: Signal<In, Bits<5>>,
    pub vendor: Signal<In, Bits<8>>,
    pub retry: Signal<In, Bit>,
    pub dec_retry: Signal<In, Bit>,
    pub dec_rnr: Signal<In, Bit>,
    pub rnr_set: Signal<In, Bit>,
    pub gap_set: Signal<In, Bit>,
    pub rewind: Signal<In, Bit>,
    pub last: Signal<In, Bit>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    pub entry: Signal<In, Bits<WQE_BITS>>,
    pub held: Signal<In, Bit>,
    /// Or, with `start`, a timer's end instead (the plan is not looked at): the ACK timer's, the RNR wait's.
    pub tmr_ack: Signal<In, Bit>,
    pub tmr_rnr: Signal<In, Bit>,
    /// The ACK timer, the RNR wait, is armed and due now (the dispatch checks before it starts a timer's end).
    pub ack_due: Signal<Out, Bit>,
    pub rnr_due: Signal<Out, Bit>,
    /// The QP's records on the context port, the response's PSN and AETH syndrome, and the tick now.
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub psn: Signal<In, Bits<24>>,
    pub syn: Signal<In, Bits<8>>,
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    /// The DMA read of the slot and its completion beats.
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<64>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// The slot's read still brings beats (`SendDesc` is done before its read's end).
    pub rd_open: Signal<Out, Bit>,
    /// The window's read port.
    pub r_slot: Signal<Out, Bits<8>>,
    pub r_entry: Signal<In, Bits<WQE_BITS>>,
    /// The scatter's start (for a cycle) with the WQE's list, the offset and the length; then whether the
    /// data fits (the cycle after).
    pub sc_start: Signal<Out, Bit>,
    pub sc_sges: Signal<Out, Bits<SGES_BITS>>,
    pub sc_count: Signal<Out, Bits<8>>,
    pub sc_off: Signal<Out, Bits<32>>,
    pub sc_len: Signal<Out, Bits<32>>,
    pub sc_fits: Signal<In, Bit>,
    /// For a cycle: the decision, the entry's write and `qp_req`'s.
    pub done: Signal<Out, Bit>,
    pub w_we: Signal<Out, Bit>,
    pub w_slot: Signal<Out, Bits<8>>,
    pub w_entry: Signal<Out, Bits<WQE_BITS>>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    /// With `done` of an ACK timer's end: work was outstanding (a retry or a failure, the model's
    /// `on_timeout` past its early return).
    pub timed_out: Signal<Out, Bit>,
    state: DFF<RespRunState>,
    take_q: DFF<Bit>,
    fail_q: DFF<Bit>,
    status_q: DFF<Bits<5>>,
    vendor_q: DFF<Bits<8>>,
    retry_q: DFF<Bit>,
    dec_retry_q: DFF<Bit>,
    dec_rnr_q: DFF<Bit>,
    rnr_set_q: DFF<Bit>,
    gap_set_q: DFF<Bit>,
    rewind_q: DFF<Bit>,
    last_q: DFF<Bit>,
    off_q: DFF<Bits<32>>,
    len_q: DFF<Bits<32>>,
    entry_q: DFF<Bits<WQE_BITS>>,
    held_q: DFF<Bit>,
    placed: DFF<Bit>,
    at: DFF<Bits<8>>,
    outst_at: DFF<Bit>,
    rw_cursor: DFF<Bits<8>>,
    rw_psn: DFF<Bits<24>>,
    tmr_ack_q: DFF<Bit>,
    tmr_rnr_q: DFF<Bit>,
    t_fail_q: DFF<Bit>,
    t_retry_q: DFF<Bit>,
    /// A timer's end: the oldest entry has been read (the walk after a failure reads another).
    probed: DFF<Bit>,
    desc: SendDesc,
    /// The descriptor's fields a response has no use for (the requester's packets need them).
    desc_rest: Spare<{ DESC_REST }>,
    walk: OldestWalk,
    rw: RewindWalk,
    fin: RespFin,
}

/// `SendDesc`'s outputs `RespRun` does not use, side by side: imm, rkey, num, va, swap_add, compare, slot_addr.
const DESC_REST: usize = 32 + 32 + 16 + 4 * 64;

impl RespRun {
    pub fn new(profile: Profile) -> Self {
        RespRun {
            clock: Signal::default(),
            reset: Signal::default(),
            start: Signal::default(),
            take: Signal::default(),
            fail: Signal::default(),
            status: Signal::default(),
            vendor: Signal::default(),
            retry: Signal::default(),
            dec_retry: Signal::default(),
            dec_rnr: Signal::default(),
            rnr_set: Signal::default(),
            gap_set: Signal::default(),
            rewind: Signal::default(),
            last: Signal::default(),
            off: Signal::default(),
            len: Signal::default(),
            entry: Signal::default(),
            held: Signal::default(),
            tmr_ack: Signal::default(),
            tmr_rnr: Signal::default(),
            ack_due: Signal::default(),
            rnr_due: Signal::default(),
            attr: Signal::default(),
            req: Signal::default(),
            psn: Signal::default(),
            syn: Signal::default(),
            tick: Signal::default(),
            rd_valid: Signal::default(),
            rd_open: Signal::default(),
            rd_ready: Signal::default(),
            rd_addr: Signal::default(),
            rd_len: Signal::default(),
            cpl_valid: Signal::default(),
            cpl_data: Signal::default(),
            cpl_err: Signal::default(),
            cpl_last: Signal::default(),
            r_slot: Signal::default(),
            r_entry: Signal::default(),
            sc_start: Signal::default(),
            sc_sges: Signal::default(),
            sc_count: Signal::default(),
            sc_off: Signal::default(),
            sc_len: Signal::default(),
            sc_fits: Signal::default(),
            done: Signal::default(),
            w_we: Signal::default(),
            w_slot: Signal::default(),
            w_entry: Signal::default(),
            timed_out: Signal::default(),
            req_next: Signal::default(),
            state: DFF::default(),
            take_q: DFF::default(),
            fail_q: DFF::default(),
            status_q: DFF::default(),
            vendor_q: DFF::default(),
            retry_q: DFF::default(),
            dec_retry_q: DFF::default(),
            dec_rnr_q: DFF::default(),
            rnr_set_q: DFF::default(),
            gap_set_q: DFF::default(),
            rewind_q: DFF::default(),
            last_q: DFF::default(),
            off_q: DFF::default(),
            len_q: DFF::default(),
            entry_q: DFF::default(),
            held_q: DFF::default(),
            placed: DFF::default(),
            at: DFF::default(),
            outst_at: DFF::default(),
            rw_cursor: DFF::default(),
            rw_psn: DFF::default(),
            tmr_ack_q: DFF::default(),
            tmr_rnr_q: DFF::default(),
            t_fail_q: DFF::default(),
            t_retry_q: DFF::default(),
            probed: DFF::default(),
            desc: SendDesc::new(profile),
            desc_rest: Spare::default(),
            walk: OldestWalk::new(profile),
            rw: RewindWalk::new(profile),
            fin: RespFin::new(profile),
        }
    }
}

impl Logic for RespRun {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            take_q,
            fail_q,
            status_q,
            vendor_q,
            retry_q,
            dec_retry_q,
            dec_rnr_q,
            rnr_set_q,
            gap_set_q,
            rewind_q,
            last_q,
            off_q,
            len_q,
            entry_q,
            held_q,
            placed,
            at,
            outst_at,
            rw_cursor,
            rw_psn,
            tmr_ack_q,
            tmr_rnr_q,
            t_fail_q,
            t_retry_q,
            probed
        );
        self.desc.clock.next = self.clock.val();
        self.desc.reset.next = self.reset.val();
        self.desc.start.next = false;
        // Its own reads only.
        self.desc.snoop.next = false;
        self.desc.cut.next = false;
        self.desc.attr.next = self.attr.val();
        self.desc.index.next = self.fin.index.val();
        self.rd_valid.next = self.desc.rd_valid.val();
        self.rd_open.next = self.desc.busy.val();
        self.desc.rd_ready.next = self.rd_ready.val();
        self.rd_addr.next = self.desc.rd_addr.val();
        self.rd_len.next = self.desc.rd_len.val();
        self.desc.cpl_valid.next = self.cpl_valid.val();
        self.desc.cpl_data.next = self.cpl_data.val();
        self.desc.cpl_err.next = self.cpl_err.val();
        self.desc.cpl_last.next = self.cpl_last.val();
        self.desc_rest.bits.next = bit_cast::<DESC_REST, 32>(self.desc.imm.val())
            | (bit_cast::<DESC_REST, 32>(self.desc.rkey.val()) << 32)
            | (bit_cast::<DESC_REST, 16>(self.desc.num.val()) << 64)
            | (bit_cast::<DESC_REST, 64>(self.desc.va.val()) << 80)
            | (bit_cast::<DESC_REST, 64>(self.desc.swap_add.val()) << 144)
            | (bit_cast::<DESC_REST, 64>(self.desc.compare.val()) << 208)
            | (bit_cast::<DESC_REST, 64>(self.desc.slot_addr.val()) << 272);
        self.walk.clock.next = self.clock.val();
        self.walk.reset.next = self.reset.val();
        self.walk.start.next = false;
        self.walk.base.next = self.fin.base.val();
        self.walk.from.next = self.fin.oldest_next.val();
        self.walk.count.next = self.fin.count.val();
        self.walk.r_entry.next = self.r_entry.val();
        self.rw.clock.next = self.clock.val();
        self.rw.reset.next = self.reset.val();
        self.rw.start.next = false;
        self.rw.attr.next = self.attr.val();
        self.rw.base.next = self.fin.base.val();
        self.rw.from.next = self.fin.rw_from.val();
        self.rw.count.next = self.fin.count.val();
        self.rw.psn.next = self.fin.req_psn.val();
        self.rw.target.next = self.fin.rw_target.val();
        self.rw.r_entry.next = self.r_entry.val();
        self.fin.attr.next = self.attr.val();
        self.fin.req.next = self.req.val();
        self.fin.entry.next = self.entry_q.q.val();
        self.fin.held.next = self.held_q.q.val();
        self.fin.psn.next = self.psn.val();
        self.fin.syn.next = self.syn.val();
        self.fin.tick.next = self.tick.val();
        self.fin.take.next = self.take_q.q.val();
        self.fin.fail.next = self.fail_q.q.val();
        self.fin.status.next = self.status_q.q.val();
        self.fin.vendor.next = self.vendor_q.q.val();
        self.fin.retry.next = self.retry_q.q.val();
        self.fin.dec_retry.next = self.dec_retry_q.q.val();
        self.fin.dec_rnr.next = self.dec_rnr_q.q.val();
        self.fin.rnr_set.next = self.rnr_set_q.q.val();
        self.fin.gap_set.next = self.gap_set_q.q.val();
        self.fin.rewind.next = self.rewind_q.q.val();
        self.fin.placed.next = self.placed.q.val();
        if self.state.q.val() == RespRunState::Fit {
            // The scatter's verdict is in this cycle (`placed` holds it from the next): a rewind started now
            // goes back from the right entry.
            self.fin.placed.next = self.sc_fits.val();
        }
        self.fin.last.next = self.last_q.q.val();
        self.fin.at.next = self.at.q.val();
        self.fin.at_entry.next = self.r_entry.val();
        self.fin.outst_at.next = self.outst_at.q.val();
        self.fin.rw_cursor.next = self.rw_cursor.q.val();
        self.fin.rw_psn.next = self.rw_psn.q.val();
        self.fin.tmr_ack.next = self.tmr_ack_q.q.val();
        self.fin.tmr_rnr.next = self.tmr_rnr_q.q.val();
        self.fin.t_fail.next = self.t_fail_q.q.val();
        self.fin.t_retry.next = self.t_retry_q.q.val();
        self.timed_out.next = self.t_fail_q.q.val() | self.t_retry_q.q.val();
        self.ack_due.next = self.fin.ack_due.val();
        self.rnr_due.next = self.fin.rnr_due.val();
        self.r_slot.next = self.fin.at_slot.val();
        self.sc_start.next = false;
        self.sc_sges.next = self.desc.sges.val();
        self.sc_count.next = self.desc.count.val();
        self.sc_off.next = self.off_q.q.val();
        self.sc_len.next = self.len_q.q.val();
        self.done.next = false;
        self.w_we.next = false;
        self.w_slot.next = self.fin.slot.val();
        self.w_entry.next = self.fin.entry_next.val();
        self.req_next.next = self.fin.req_next.val();
        match self.state.q.val() {
            RespRunState::Idle => {
                if self.start.val() {
                    self.take_q.d.next = self.take.val();
                    self.fail_q.d.next = self.fail.val();
                    self.status_q.d.next = self.status.val();
                    self.vendor_q.d.next = self.vendor.val();
                    self.retry_q.d.next = self.retry.val();
                    self.dec_retry_q.d.next = self.dec_retry.val();
                    self.dec_rnr_q.d.next = self.dec_rnr.val();
                    self.rnr_set_q.d.next = self.rnr_set.val();
                    self.gap_set_q.d.next = self.gap_set.val();
                    self.rewind_q.d.next = self.rewind.val();
                    self.last_q.d.next = self.last.val();
                    self.off_q.d.next = self.off.val();
                    self.len_q.d.next = self.len.val();
                    self.entry_q.d.next = self.entry.val();
                    self.held_q.d.next = self.held.val();
                    self.placed.d.next = false;
                    self.tmr_ack_q.d.next = self.tmr_ack.val();
                    self.tmr_rnr_q.d.next = self.tmr_rnr.val();
                    self.t_fail_q.d.next = false;
                    self.t_retry_q.d.next = false;
                    self.probed.d.next = false;
                    if self.tmr_ack.val() | self.tmr_rnr.val() {
                        // A timer's end: the plan is the timer's own.
                        self.take_q.d.next = false;
                        self.fail_q.d.next = false;
                        self.retry_q.d.next = false;
                        self.dec_retry_q.d.next = false;
                        self.dec_rnr_q.d.next = false;
                        self.rnr_set_q.d.next = false;
                        self.gap_set_q.d.next = false;
                        self.rewind_q.d.next = false;
                    }
                    self.state.d.next = RespRunState::Settle;
                }
            }
            RespRunState::Settle => {
                self.state.d.next = RespRunState::Begin;
            }
            RespRunState::Begin => {
                // A timer's end first reads the oldest entry (is work outstanding?).
                if self.tmr_ack_q.q.val() | self.tmr_rnr_q.q.val() {
                    self.at.d.next = self.fin.old_idx.val();
                    self.state.d.next = RespRunState::Probe;
                } else if self.take_q.q.val() {
                    self.desc.start.next = true;
                    self.state.d.next = RespRunState::Desc;
                } else if self.fail_q.q.val() & self.held_q.q.val() {
                    self.walk.start.next = true;
                    self.state.d.next = RespRunState::Walk;
                } else if self.rewind_q.q.val() {
                    self.rw.start.next = true;
                    self.state.d.next = RespRunState::Rewind;
                } else {
                    self.state.d.next = RespRunState::Fin;
                }
            }
            RespRunState::Desc => {
                if self.desc.done.val() {
                    // A slot no longer read as a list (unreadable, malformed, inline data): nothing placed.
                    if self.desc.ok.val() & !self.desc.inline_data.val() {
                        self.sc_start.next = true;
                        self.state.d.next = RespRunState::Fit;
                    } else {
                        self.walk.start.next = true;
                        self.state.d.next = RespRunState::Walk;
                    }
                }
            }
            RespRunState::Fit => {
                self.placed.d.next = self.sc_fits.val();
                if !self.sc_fits.val() | self.last_q.q.val() {
                    self.walk.start.next = true;
                    self.state.d.next = RespRunState::Walk;
                } else if self.rewind_q.q.val() {
                    self.rw.start.next = true;
                    self.state.d.next = RespRunState::Rewind;
                } else {
                    self.state.d.next = RespRunState::Fin;
                }
            }
            RespRunState::Walk => {
                self.r_slot.next = self.walk.r_slot.val();
                if self.walk.done.val() {
                    self.at.d.next = self.walk.at.val();
                    self.state.d.next = RespRunState::Probe;
                }
            }
            RespRunState::Probe => {
                self.state.d.next = RespRunState::Seen;
            }
            RespRunState::Seen => {
                self.outst_at.d.next = self.fin.at_outst.val();
                self.state.d.next = RespRunState::Fin;
                if (self.tmr_ack_q.q.val() | self.tmr_rnr_q.q.val()) & !self.probed.q.val() {
                    // The oldest entry is in: the timer's plan.
                    self.probed.d.next = true;
                    self.entry_q.d.next = self.r_entry.val();
                    self.held_q.d.next = true;
                    self.t_fail_q.d.next = self.fin.t_fail_now.val();
                    self.t_retry_q.d.next = self.fin.t_retry_now.val();
                    if self.fin.t_fail_now.val() {
                        self.walk.start.next = true;
                        self.state.d.next = RespRunState::Walk;
                    } else if self.fin.t_retry_now.val() | self.tmr_rnr_q.q.val() {
                        self.rw.start.next = true;
                        self.state.d.next = RespRunState::Rewind;
                    }
                } else if self.rewind_q.q.val() {
                    self.rw.start.next = true;
                    self.state.d.next = RespRunState::Rewind;
                }
            }
            RespRunState::Rewind => {
                self.r_slot.next = self.rw.r_slot.val();
                if self.rw.done.val() {
                    self.rw_cursor.d.next = self.rw.cursor.val();
                    self.rw_psn.d.next = self.rw.cursor_psn.val();
                    self.state.d.next = RespRunState::Fin;
                }
            }
            RespRunState::Fin => {
                self.done.next = true;
                self.w_we.next = self.fin.finish.val();
                self.state.d.next = RespRunState::Idle;
            }
            _ => {
                self.state.d.next = RespRunState::Idle;
            }
        }
        if self.reset.val() {
            self.state.d.next = RespRunState::Idle;
        }
    }
}
