//! The completer's handling of a READ response or an atomic ACK, the model's `comp::on_read_response` and
//! `comp::on_atomic_ack` after their implicit acknowledgement of the PSNs before the response (`AckWalk`,
//! walked through the PSN before it):
//!
//! - `RespMatch` (combinational): what the response does to the entry the walk stopped at (the oldest
//!   unfinished one). A READ response is `take`n when that entry is a READ whose PSNs hold the response's, it
//!   is the next one the READ waits for (`comp_psn`), and its opcode's position and payload length are the
//!   ones packet `k` of the READ must have (else it is `bad`: the READ fails with BadRespErr); one past
//!   `comp_psn` means responses were lost (`ahead`: the gap's retry, not built). An atomic ACK is taken when
//!   the entry is the atomic whose PSN it answers. Anything else (a duplicate, a stale answer) is ignored.
//!   With it: whether the response ends the operation (`last`), and where its data goes in the WQE's list
//!   (`off`, `bytes`: packet `k`'s payload at `k` path MTUs; an atomic's 8-byte original value at 0).
//! - `RespRun`: the rest, in the order the model does it. A taken response has its WQE's slot read again
//!   (`SendDesc`: its scatter list), the scatter started (`sc_*`: the data fits the list, or the READ fails
//!   with LocProtErr and its data is drained); a response that ends the READ or atomic, or fails it, finishes
//!   the entry and moves `oldest` past the finished entries behind it (`OldestWalk`), and reads the entry
//!   `oldest` then names (whether work is still outstanding). Then `done` for a cycle with the decision:
//!   the entry written back (`w_*`) and `qp_req` (`RespFin`).
//! - `RespFin` (combinational): that `qp_req` and entry. A taken response moves `comp_psn` past it and
//!   counts as progress (the retry counters reset, a gap closed); a finished READ or atomic gives its place
//!   back (`rd_atomic`); the ACK timer then runs while a started WQE is outstanding, restarted from the
//!   tick now (left alone during an RNR wait; a failed READ ends the wait, as the model's `fail_oldest`).
//!   `rewind` when `comp_psn` passes the cursor (the model's `complete_to` goes back: not built).

use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
use crate::engine::req::desc::SendDesc;
use crate::engine::req::ready::WQE_BITS;
use crate::engine::req::window::{ack_deadline, entry_packets, window_base, OldestWalk};
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
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_requester.rs).
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
    /// The QP's records as the walk left them, the entry it stopped at (`qp_req.oldest`) and its response.
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub entry: Signal<In, Bits<WQE_BITS>>,
    pub psn: Signal<In, Bits<24>>,
    pub tick: Signal<In, Bits<{ TICK_BITS as usize }>>,
    /// The response failed the entry (BadRespErr), or its data fits the WQE's list (else LocProtErr); it
    /// ends the operation.
    pub bad: Signal<In, Bit>,
    pub placed: Signal<In, Bit>,
    pub last: Signal<In, Bit>,
    /// The first unfinished entry behind it (from `OldestWalk`, the window's size if none), and that entry.
    pub at: Signal<In, Bits<8>>,
    pub at_entry: Signal<In, Bits<WQE_BITS>>,
    /// The entry's SQ counter and window slot; the walk's window (entry 0's SQ counter, from where, how
    /// many) and the slot of entry `at`.
    pub index: Signal<Out, Bits<16>>,
    pub slot: Signal<Out, Bits<8>>,
    pub base: Signal<Out, Bits<16>>,
    pub count: Signal<Out, Bits<8>>,
    pub at_slot: Signal<Out, Bits<8>>,
    pub oldest_next: Signal<Out, Bits<8>>,
    /// The entry finishes (failed, or answered whole).
    pub finish: Signal<Out, Bit>,
    pub entry_next: Signal<Out, Bits<WQE_BITS>>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    pub rewind: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl RespFin {
    pub fn new(profile: Profile) -> Self {
        RespFin { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RespFin {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_requester.rs).
    }

    fn connect(&mut self) {
        self.index.connect();
        self.slot.connect();
        self.base.connect();
        self.count.connect();
        self.at_slot.connect();
        self.oldest_next.connect();
        self.finish.connect();
        self.entry_next.connect();
        self.req_next.connect();
        self.rewind.connect();
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
    let (wb, rw, t) = (width(rl, "wqes"), width(rl, "rd_atomic"), TICK_BITS);
    assert!(wb < 8, "a window index fits 8 bits with room");
    let mut v = window_base(&c, "attr", "req");
    v.extend(ack_deadline(&c, "attr", "tick"));
    v.extend([
        format!("wire [{}:0] old = {};", wb - 1, r("oldest")),
        "wire take = !bad;".into(),
        "wire failed = bad || !placed;".into(),
        "wire ends = failed || last;".into(),
        "wire [23:0] next_psn = psn + 24'd1;".into(),
        format!("wire [23:0] cur_to_next = {} - next_psn;", r("cursor_psn")),
        "wire unused_cur_to_next = ^cur_to_next[22:0];".into(),
        // Still outstanding after it: the oldest unfinished entry then is started.
        format!("wire outst = !ends || (at < {{{}'d0, nwqes}} && {});", 8 - wb, slice(wl, "at_entry", "started")),
        "wire run = outst && tmo != 5'd0;".into(),
        // During an RNR wait a taken response leaves the timers alone; a failure ends the wait.
        format!("wire keep = take && {};", r("rnr_valid")),
        format!("wire [4:0] status = bad ? 5'd{} : 5'd{};", WcStatus::BadRespErr as u8, WcStatus::LocProtErr as u8),
        "wire unused_in = ^attr ^ ^req ^ ^entry ^ ^at_entry;".into(),
    ]);
    let (rd, req_e) = build(rl, "req", "rf", |name, bits| {
        Some(match name {
            "comp_psn" => format!("take ? next_psn : {}", r("comp_psn")),
            "retry_left" => format!("take ? {} : {}", a("retry_cnt"), r("retry_left")),
            "rnr_left" => format!("take ? {} : {}", a("rnr_retry"), r("rnr_left")),
            "gap_valid" => format!("take ? 1'b0 : {}", r("gap_valid")),
            "gap_psn" => format!("take ? 24'd0 : {}", r("gap_psn")),
            "rd_atomic" => format!("{} - (ends ? {rw}'d1 : {rw}'d0)", r("rd_atomic")),
            "oldest" => format!("ends ? at[{}:0] : old", wb - 1),
            "timer_valid" => format!("keep ? {} : run", r("timer_valid")),
            "timer" => format!("keep ? {} : run ? deadline : {t}'d0", r("timer")),
            "rnr_valid" | "rnr_deadline" | "rnr_psn" => format!("bad ? {bits}'d0 : {}", r(name)),
            _ => return None,
        })
    });
    v.extend(rd);
    let (ed, entry_e) = build(wl, "entry", "re", |name, _| {
        Some(match name {
            "acked" => format!("ends ? 1'b1 : {}", w("acked")),
            "error_valid" => format!("failed ? 1'b1 : {}", w("error_valid")),
            "status" => format!("failed ? status : {}", w("status")),
            "vendor_err" => format!("failed ? 8'd0 : {}", w("vendor_err")),
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
        "    at_slot = sq_base[7:0] + at;".into(),
        format!("    oldest_next = {{{}'d0, old}} + 8'd1;", 8 - wb),
        "    finish = ends;".into(),
        format!("    entry_next = {{{}'d0, {entry_e}}};", WQE_BITS - wl.width() as usize),
        format!("    req_next = {{{}'d0, {req_e}}};", REQ_BITS - rl.width() as usize),
        "    rewind = take && cur_to_next[23];".into(),
        "end".into(),
    ]);
    v
}

#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum RespRunState {
    Idle,
    /// The walk's `qp_req` being written back and read again.
    Settle,
    /// The read of the WQE's slot, or (failed) the walk past the entry, starts.
    Begin,
    /// The slot being read (`SendDesc`).
    Desc,
    /// The scatter started: whether the data fits.
    Fit,
    /// The walk past the finished entries (`OldestWalk`).
    Walk,
    /// The entry it ended at being read.
    Probe,
    /// The decision.
    Fin,
}

/// `SendDesc`'s outputs `RespRun` does not use, side by side: imm, rkey, num, va, swap_add, compare, slot_addr.
const DESC_REST: usize = 32 + 32 + 16 + 4 * 64;

#[derive(LogicBlock)]
pub struct RespRun {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Run for a response `RespMatch` took (or found `bad`), its `last`, `off` and `bytes` (`len`) and the entry the
    /// walk stopped at taken with it; the walk's `qp_req` is written back in the same cycle.
    pub start: Signal<In, Bit>,
    pub bad: Signal<In, Bit>,
    pub last: Signal<In, Bit>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    pub entry: Signal<In, Bits<WQE_BITS>>,
    /// The QP's records on the context port, the response's PSN and the tick now.
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub psn: Signal<In, Bits<24>>,
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
    pub rewind: Signal<Out, Bit>,
    state: DFF<RespRunState>,
    bad_q: DFF<Bit>,
    last_q: DFF<Bit>,
    off_q: DFF<Bits<32>>,
    len_q: DFF<Bits<32>>,
    entry_q: DFF<Bits<WQE_BITS>>,
    placed: DFF<Bit>,
    at: DFF<Bits<8>>,
    desc: SendDesc,
    /// The descriptor's fields a response has no use for (the requester's packets need them).
    desc_rest: Spare<{ DESC_REST }>,
    walk: OldestWalk,
    fin: RespFin,
}

impl RespRun {
    pub fn new(profile: Profile) -> Self {
        RespRun {
            clock: Signal::default(),
            reset: Signal::default(),
            start: Signal::default(),
            bad: Signal::default(),
            last: Signal::default(),
            off: Signal::default(),
            len: Signal::default(),
            entry: Signal::default(),
            attr: Signal::default(),
            req: Signal::default(),
            psn: Signal::default(),
            tick: Signal::default(),
            rd_valid: Signal::default(),
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
            req_next: Signal::default(),
            rewind: Signal::default(),
            state: DFF::default(),
            bad_q: DFF::default(),
            last_q: DFF::default(),
            off_q: DFF::default(),
            len_q: DFF::default(),
            entry_q: DFF::default(),
            placed: DFF::default(),
            at: DFF::default(),
            desc: SendDesc::new(profile),
            desc_rest: Spare::default(),
            walk: OldestWalk::new(profile),
            fin: RespFin::new(profile),
        }
    }
}

impl Logic for RespRun {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, bad_q, last_q, off_q, len_q, entry_q, placed, at);
        self.desc.clock.next = self.clock.val();
        self.desc.reset.next = self.reset.val();
        self.desc.start.next = false;
        self.desc.attr.next = self.attr.val();
        self.desc.index.next = self.fin.index.val();
        self.rd_valid.next = self.desc.rd_valid.val();
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
        self.fin.attr.next = self.attr.val();
        self.fin.req.next = self.req.val();
        self.fin.entry.next = self.entry_q.q.val();
        self.fin.psn.next = self.psn.val();
        self.fin.tick.next = self.tick.val();
        self.fin.bad.next = self.bad_q.q.val();
        self.fin.placed.next = self.placed.q.val();
        self.fin.last.next = self.last_q.q.val();
        self.fin.at.next = self.at.q.val();
        self.fin.at_entry.next = self.r_entry.val();
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
        self.rewind.next = self.fin.rewind.val();
        match self.state.q.val() {
            RespRunState::Idle => {
                if self.start.val() {
                    self.bad_q.d.next = self.bad.val();
                    self.last_q.d.next = self.last.val();
                    self.off_q.d.next = self.off.val();
                    self.len_q.d.next = self.len.val();
                    self.entry_q.d.next = self.entry.val();
                    self.placed.d.next = false;
                    self.state.d.next = RespRunState::Settle;
                }
            }
            RespRunState::Settle => {
                self.state.d.next = RespRunState::Begin;
            }
            RespRunState::Begin => {
                if self.bad_q.q.val() {
                    self.walk.start.next = true;
                    self.state.d.next = RespRunState::Walk;
                } else {
                    self.desc.start.next = true;
                    self.state.d.next = RespRunState::Desc;
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
                self.state.d.next = RespRunState::Fin;
                if !self.sc_fits.val() | self.last_q.q.val() {
                    self.walk.start.next = true;
                    self.state.d.next = RespRunState::Walk;
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
                self.state.d.next = RespRunState::Fin;
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
