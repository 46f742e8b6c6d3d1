//! The requester's window: the send WQEs fetched from a QP's SQ and not yet retired, `wqe_window` of them at
//! most, as `qp_req` counts them (`wqes`, `cursor`, `oldest`) and the `sq_wqe` table holds them (one ring a
//! QP, `Rings::window`: the entry of SQ counter `i` in slot `i mod wqe_window`, so the window's entries are
//! the slots of the `wqes` counters before `sq_ci`). Here, as generated Verilog:
//!
//! - `SqFetch` (combinational): the model's `can_fetch` and what `fetch_send_wqe` and the `retire` after it
//!   do with the entry `WqeFetch` made: `qp_req` with the entry pushed (`oldest` moved past it when every
//!   entry before it and it are finished), the SQ consumer counter one on, and `retire` for a failed entry
//!   fetched into an empty window, which retires at once (its CQE, the QP to ERR; the window unchanged).
//! - `OldestWalk`: the index of the first unfinished entry at or after `from`, read one entry a cycle (the
//!   flush's pop of an unfinished front moves `oldest` past the finished entries behind it, as the model's
//!   `settle_oldest`).
//! - `PsnWalk`: the first PSN of a window entry, which the packed context does not keep: the started
//!   entries' PSN ranges follow each other and end at `qp_req.psn`, so it is `psn` less the packets of the
//!   started entries from it on (the model's `context::unpack` derives it so), read one entry a cycle.
//! - `RewindWalk`: where go-back-N restarts sending (the model's `comp::rewind`): the first unfinished
//!   entry holding the PSN, or not started yet.
//! - `FetchWake`: which QPs may have a WQE to fetch (an SQ doorbell, or a command on the QP, since their last
//!   visit found none), and the next to visit, round robin.

use crate::bit_table::{self, Port};
use crate::engine::cmd::exec::first_clear;
use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
use crate::engine::flush::ring_left;
use crate::engine::req::ready::WQE_BITS;
use crate::engine::resp::queue::{mtu_shift, packets, Rings};
use crate::kit::*;
use crate::record::{build, slice, width};
use wire::contract::profile::Profile;
use wire::contract::qpc::{bits_for, qp_context, QpContext, TICK_BITS};
use wire::contract::verbs::QpState;
use wire::contract::wqe::SendOp;

impl Rings<WQE_BITS> {
    /// The requesters' windows of profile `p`.
    pub fn window(p: Profile) -> Self {
        let w = qp_context(&p).wqe.width();
        Rings::shaped(p, p.wqe_window, w)
    }
}

#[derive(LogicBlock, Default)]
pub struct SqFetch {
    pub qp_valid: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    /// The entry `WqeFetch` made of the WQE at `index`.
    pub entry: Signal<In, Bits<WQE_BITS>>,
    /// The QP may fetch: it exists, is neither in RESET nor in ERR nor flushing, has a WQE posted past its
    /// consumer counter (its producer counter at most the ring's size ahead) and room in its window.
    pub fetchable: Signal<Out, Bit>,
    /// The SQ counter of the WQE to fetch, its window slot, and the consumer counter after.
    pub index: Signal<Out, Bits<16>>,
    pub slot: Signal<Out, Bits<8>>,
    pub sq_ci: Signal<Out, Bits<16>>,
    /// The entry failed and the window is empty: it retires at once (`req_next` is then `req`).
    pub retire: Signal<Out, Bit>,
    pub req_next: Signal<Out, Bits<REQ_BITS>>,
    profile: Param<Profile>,
}

impl SqFetch {
    pub fn new(profile: Profile) -> Self {
        SqFetch { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for SqFetch {
    fn update(&mut self) {
        // Verified in Verilator against the model's `req::can_fetch` and `ReqState::push` (sim/tests/sq_fetch.rs).
    }

    fn connect(&mut self) {
        self.fetchable.connect();
        self.index.connect();
        self.slot.connect();
        self.sq_ci.connect();
        self.retire.connect();
        self.req_next.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(sq_fetch_verilog(&self.profile.0))
    }
}

/// The Verilog body of `SqFetch` for profile `p`.
pub fn sq_fetch_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, rl, wl) = (&c.attr, &c.req, &c.wqe);
    let a = |n: &str| slice(al, "attr", n);
    let r = |n: &str| slice(rl, "req", n);
    let wb = width(rl, "wqes");
    let mut v = vec![
        ring_left(al, "attr", "sq"),
        format!("wire [{}:0] wqes = {};", wb - 1, r("wqes")),
        format!("wire [{}:0] oldest = {};", wb - 1, r("oldest")),
        format!("wire [2:0] st = {};", a("state")),
        format!(
            "wire ok = qp_valid && st != 3'd{} && st != 3'd{} && !{} && sq_left && wqes < {wb}'d{};",
            QpState::Reset as u8,
            QpState::Err as u8,
            a("flushing"),
            p.wqe_window
        ),
        format!("wire acked = {};", slice(wl, "entry", "acked")),
        format!("wire failed = {};", slice(wl, "entry", "error_valid")),
        "wire unused_entry = ^entry;".into(),
        // The records' other fields are other blocks'.
        "wire unused_attr = ^attr;".into(),
    ];
    let (d, e) = build(rl, "req", "fq", |name, _| match name {
        "wqes" => Some(format!("wqes + {wb}'d1")),
        "oldest" => Some(format!("(oldest == wqes && acked) ? oldest + {wb}'d1 : oldest")),
        _ => None,
    });
    v.extend(d);
    v.extend([
        "always @(*) begin".to_string(),
        "    fetchable = ok;".into(),
        format!("    index = {};", a("sq_ci")),
        format!("    slot = {}[7:0];", a("sq_ci")),
        format!("    sq_ci = {} + 16'd1;", a("sq_ci")),
        format!("    retire = failed && wqes == {wb}'d0;"),
        format!("    req_next = retire ? req : {{{}'d0, {e}}};", REQ_BITS - rl.width() as usize),
        "end".into(),
    ]);
    v
}

#[derive(LogicBlock, Default)]
pub struct OldestWalk {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Walk entries `from ..` of the window of `count` entries whose entry 0 has SQ counter `base`.
    pub start: Signal<In, Bit>,
    pub base: Signal<In, Bits<16>>,
    pub from: Signal<In, Bits<8>>,
    pub count: Signal<In, Bits<8>>,
    /// The window's read port: slot `r_slot`'s entry comes back on `r_entry` the next cycle (between walks,
    /// the slot of entry 0, `base`'s).
    pub r_slot: Signal<Out, Bits<8>>,
    pub r_entry: Signal<In, Bits<WQE_BITS>>,
    /// For a cycle: the walk is over, `at` the first unfinished entry's index (`count` if none is).
    pub done: Signal<Out, Bit>,
    pub at: Signal<Out, Bits<8>>,
    profile: Param<Profile>,
}

impl OldestWalk {
    pub fn new(profile: Profile) -> Self {
        OldestWalk { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for OldestWalk {
    fn update(&mut self) {
        // Verified in Verilator against the model's `ReqState::settle_oldest` (sim/tests/oldest_walk.rs), and
        // with the core in lockstep (driver/tests/rtl_requester.rs).
    }

    fn connect(&mut self) {
        self.r_slot.connect();
        self.done.connect();
        self.at.connect();
    }

    fn hdl(&self) -> Verilog {
        let wl = qp_context(&self.profile.0).wqe;
        custom_module(vec![
            "reg on, look, fin;".to_string(),
            "reg [7:0] k, n;".into(),
            "reg [15:0] b;".into(),
            "wire unused_base = ^base[15:8] ^ ^b[15:8];".into(),
            format!("wire acked = {};", slice(&wl, "r_entry", "acked")),
            "wire unused_entry = ^r_entry;".into(),
            "// Entry k is read in the cycle `look` is set and met the next.".into(),
            "always @(*) begin".into(),
            "    r_slot = on ? b[7:0] + k : base[7:0];".into(),
            "    done = fin;".into(),
            "    at = k;".into(),
            "end".into(),
            "always @(posedge clock) begin".into(),
            "    fin <= 1'b0;".into(),
            "    if (start) begin on <= 1'b1; look <= 1'b0; k <= from; n <= count; b <= base; end".into(),
            "    else if (on && !look) begin".into(),
            "        if (k >= n) begin on <= 1'b0; fin <= 1'b1; end else look <= 1'b1;".into(),
            "    end else if (on && look) begin".into(),
            "        look <= 1'b0;".into(),
            "        if (!acked) begin on <= 1'b0; fin <= 1'b1; end else k <= k + 8'd1;".into(),
            "    end".into(),
            "    if (reset) begin on <= 1'b0; fin <= 1'b0; end".into(),
            "end".into(),
        ])
    }
}

#[derive(LogicBlock, Default)]
pub struct PsnWalk {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Walk the window of `count` entries whose entry 0 has SQ counter `base`, from entry `from`, for the
    /// QP whose `qp_attr` (its path MTU) is `attr` and whose next new PSN is `psn` (held while it walks).
    pub start: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub base: Signal<In, Bits<16>>,
    pub from: Signal<In, Bits<8>>,
    pub count: Signal<In, Bits<8>>,
    pub psn: Signal<In, Bits<24>>,
    /// The window's read port, as `OldestWalk`'s.
    pub r_slot: Signal<Out, Bits<8>>,
    pub r_entry: Signal<In, Bits<WQE_BITS>>,
    /// For a cycle: the walk is over, `first` entry `from`'s first PSN (`psn` when it is not started).
    pub done: Signal<Out, Bit>,
    pub first: Signal<Out, Bits<24>>,
    profile: Param<Profile>,
}

impl PsnWalk {
    pub fn new(profile: Profile) -> Self {
        PsnWalk { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for PsnWalk {
    fn update(&mut self) {
        // Verified in Verilator against the model's `context::unpack` (sim/tests/psn_walk.rs).
    }

    fn connect(&mut self) {
        self.r_slot.connect();
        self.done.connect();
        self.first.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(psn_walk_verilog(&self.profile.0))
    }
}

/// Verilog declaring, for a QP whose `qp_attr` record is `attr` and `qp_req` record is `req`: `nwqes`, the
/// window's entries (`qp_req.wqes`), and `sq_base`, the SQ counter of entry 0 (`sq_ci` less them): entry `i`
/// has SQ counter `sq_base + i` and its window slot is the counter's low bits.
pub fn window_base(c: &QpContext, attr: &str, req: &str) -> Vec<String> {
    let wb = width(&c.req, "wqes");
    vec![
        format!("wire [{}:0] nwqes = {};", wb - 1, slice(&c.req, req, "wqes")),
        format!("wire [15:0] sq_base = {} - {{{}'d0, nwqes}};", slice(&c.attr, attr, "sq_ci"), 16 - wb),
    ]
}

/// Verilog declaring, for a QP whose `qp_attr` record is `attr`: `tmo`, its timeout exponent, and
/// `deadline`, the tick its local ACK timer fires at when armed at tick `tick` (the model's
/// `ack_timeout_ticks`: 4.096 us << timeout is 4 ticks << timeout). A `tmo` of 0 arms no timer.
pub fn ack_deadline(c: &QpContext, attr: &str, tick: &str) -> Vec<String> {
    let t = TICK_BITS;
    assert_eq!(width(&c.req, "timer"), t, "the ACK timer holds a whole tick");
    vec![
        format!("wire [4:0] tmo = {};", slice(&c.attr, attr, "timeout")),
        format!("wire [{}:0] deadline = {tick} + ({t}'d4 << tmo);", t - 1),
    ]
}

/// Verilog declaring, for the window entry (`sq_wqe`) record `entry` of a QP whose `qp_attr` record is
/// `attr`: `len`, `is_atomic` and `npkts` (24 bits), the packets and PSNs the entry's message takes at the
/// QP's path MTU (the model's `req::packets_for`: one for an atomic, one for an empty message).
pub fn entry_packets(c: &wire::contract::qpc::QpContext, entry: &str, attr: &str) -> Vec<String> {
    let w = |n: &str| slice(&c.wqe, entry, n);
    let op = |o: SendOp| format!("{} == 4'd{}", w("op"), o as u8);
    let mut v = mtu_shift(&slice(&c.attr, attr, "pmtu"));
    v.push(format!("wire [31:0] len = {};", w("len")));
    v.extend(packets("msg_pkts", "len"));
    v.extend([
        format!("wire is_atomic = {} || {};", op(SendOp::AtomicCmpSwp), op(SendOp::AtomicFetchAdd)),
        "wire [23:0] npkts = is_atomic ? 24'd1 : msg_pkts;".into(),
    ]);
    v
}

/// The Verilog body of `PsnWalk` for profile `p`.
pub fn psn_walk_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let mut v = entry_packets(&c, "r_entry", "attr");
    v.extend([
        format!("wire started = {};", slice(&c.wqe, "r_entry", "started")),
        "wire unused_entry = ^r_entry;".into(),
        "wire unused_attr = ^attr;".into(),
        "reg on, look, fin;".into(),
        "reg [7:0] k, n;".into(),
        "reg [15:0] b;".into(),
        "reg [23:0] sum;".into(),
        "wire unused_base = ^base[15:8] ^ ^b[15:8];".into(),
        "always @(*) begin".into(),
        "    r_slot = on ? b[7:0] + k : base[7:0];".into(),
        "    done = fin;".into(),
        "    first = psn - sum;".into(),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    fin <= 1'b0;".into(),
        "    if (start) begin on <= 1'b1; look <= 1'b0; k <= from; n <= count; b <= base; sum <= 24'd0; end".into(),
        "    else if (on && !look) begin".into(),
        "        if (k >= n) begin on <= 1'b0; fin <= 1'b1; end else look <= 1'b1;".into(),
        "    end else if (on && look) begin".into(),
        "        look <= 1'b0;".into(),
        "        if (!started) begin on <= 1'b0; fin <= 1'b1; end else begin sum <= sum + npkts; k <= k + 8'd1; end"
            .into(),
        "    end".into(),
        "    if (reset) begin on <= 1'b0; fin <= 1'b0; end".into(),
        "end".into(),
    ]);
    v
}

#[derive(LogicBlock, Default)]
pub struct RewindWalk {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Go back to PSN `target` in the window of `count` entries whose entry 0 has SQ counter `base`, from
    /// entry `from` (`oldest`), for the QP whose `qp_attr` (its path MTU) is `attr` and whose next new PSN is
    /// `psn` (held while it walks).
    pub start: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub base: Signal<In, Bits<16>>,
    pub from: Signal<In, Bits<8>>,
    pub count: Signal<In, Bits<8>>,
    pub psn: Signal<In, Bits<24>>,
    pub target: Signal<In, Bits<24>>,
    /// The window's read port, as `OldestWalk`'s.
    pub r_slot: Signal<Out, Bits<8>>,
    pub r_entry: Signal<In, Bits<WQE_BITS>>,
    /// For a cycle: the walk is over; the cursor goes to entry `cursor` at PSN `cursor_psn`.
    pub done: Signal<Out, Bit>,
    pub cursor: Signal<Out, Bits<8>>,
    pub cursor_psn: Signal<Out, Bits<24>>,
    profile: Param<Profile>,
}

impl RewindWalk {
    pub fn new(profile: Profile) -> Self {
        RewindWalk { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RewindWalk {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_requester.rs).
    }

    fn connect(&mut self) {
        self.r_slot.connect();
        self.done.connect();
        self.cursor.connect();
        self.cursor_psn.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(rewind_walk_verilog(&self.profile.0))
    }
}

/// The Verilog body of `RewindWalk` for profile `p`, the model's `comp::rewind`: the first entry from
/// `from` on that is not finished and either holds `target` or is not started. The entries' first PSNs
/// follow each other (as `PsnWalk` finds them): a first pass sums the packets of the started entries from
/// `from` on, so entry `from` starts at `psn` less them; the second walks the entries, one every two cycles.
pub fn rewind_walk_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let mut v = entry_packets(&c, "r_entry", "attr");
    v.extend([
        format!("wire started = {};", slice(&c.wqe, "r_entry", "started")),
        format!("wire acked = {};", slice(&c.wqe, "r_entry", "acked")),
        "wire unused_entry = ^r_entry;".into(),
        "wire unused_attr = ^attr;".into(),
        "reg on, look, scan, fin;".into(),
        "reg [7:0] k, n, at;".into(),
        "reg [15:0] b;".into(),
        "reg [23:0] sum, f, at_psn;".into(),
        "wire unused_base = ^base[15:8] ^ ^b[15:8];".into(),
        "// Signed 24-bit distance from the entry's first PSN to the target.".into(),
        "wire [23:0] d = target - f;".into(),
        "wire holds = started && !d[23] && d < npkts;".into(),
        "always @(*) begin".into(),
        "    r_slot = on ? b[7:0] + k : base[7:0];".into(),
        "    done = fin;".into(),
        "    cursor = at;".into(),
        "    cursor_psn = at_psn;".into(),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    fin <= 1'b0;".into(),
        "    if (start) begin".into(),
        "        on <= 1'b1; look <= 1'b0; scan <= 1'b0; k <= from; n <= count; b <= base; sum <= 24'd0;".into(),
        "    end else if (on && !look) begin".into(),
        "        if (k >= n) begin".into(),
        "            if (scan) begin on <= 1'b0; fin <= 1'b1; at <= n; at_psn <= psn; end".into(),
        "            else begin scan <= 1'b1; k <= from; f <= psn - sum; end".into(),
        "        end else look <= 1'b1;".into(),
        "    end else if (on && look) begin".into(),
        "        look <= 1'b0;".into(),
        "        if (!scan) begin".into(),
        "            if (!started) begin scan <= 1'b1; k <= from; f <= psn - sum; end".into(),
        "            else begin sum <= sum + npkts; k <= k + 8'd1; end".into(),
        "        end else if (!acked && (!started || holds)) begin".into(),
        "            on <= 1'b0; fin <= 1'b1; at <= k; at_psn <= started ? target : psn;".into(),
        "        end else begin".into(),
        "            if (started) f <= f + npkts;".into(),
        "            k <= k + 8'd1;".into(),
        "        end".into(),
        "    end".into(),
        "    if (reset) begin on <= 1'b0; fin <= 1'b0; end".into(),
        "end".into(),
    ]);
    v
}

#[derive(LogicBlock, Default)]
pub struct FetchWake {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// What may give a QP a WQE to fetch: an SQ doorbell (`rung`), a command on the QP (`cmd`).
    pub rung: Signal<In, Bit>,
    pub rung_qpn: Signal<In, Bits<24>>,
    pub cmd: Signal<In, Bit>,
    pub cmd_qpn: Signal<In, Bits<24>>,
    /// A visit of QP `visit_qpn` starts (its contexts read this cycle); `clear`: it found nothing to fetch,
    /// and the QP sleeps unless one of the above came since the visit started.
    pub visit: Signal<In, Bit>,
    pub visit_qpn: Signal<In, Bits<24>>,
    pub clear: Signal<In, Bit>,
    /// A QP is awake, and the next to visit: the first awake after the last visited, round robin.
    pub any: Signal<Out, Bit>,
    pub pick: Signal<Out, Bits<24>>,
    /// Whether QP `at_qpn` (the one the requester's transmit side is at) is the only QP awake.
    pub at_qpn: Signal<In, Bits<24>>,
    pub at_alone: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl FetchWake {
    pub fn new(profile: Profile) -> Self {
        FetchWake { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for FetchWake {
    fn update(&mut self) {
        // Verified in Verilator against a reference of the rules the dispatch relies on (sim/tests/fetch_wake.rs).
    }

    fn connect(&mut self) {
        self.any.connect();
        self.pick.connect();
        self.at_alone.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(fetch_wake_verilog(&self.profile.0))
    }
}

/// The Verilog body of `FetchWake` for profile `p`.
pub fn fetch_wake_verilog(p: &Profile) -> Vec<String> {
    let n = p.max_qp;
    let qa = bits_for(n - 1).max(1);
    let mut v = vec![
        format!("reg [{}:0] want;", n - 1),
        format!("reg [{}:0] last;", qa - 1),
        "reg dirty;".into(),
        format!("wire [{0}:0] rq = rung_qpn[{0}:0];\nwire [{0}:0] cq = cmd_qpn[{0}:0];\nwire [{0}:0] vq = visit_qpn[{0}:0];", qa - 1),
        format!("wire [{0}:0] nq = at_qpn[{0}:0];", qa - 1),
        format!("wire unused_qpn = ^rung_qpn[23:{qa}] ^ ^cmd_qpn[23:{qa}] ^ ^visit_qpn[23:{qa}] ^ ^at_qpn[23:{qa}];"),
        "wire hit = (rung && rq == vq) || (cmd && cq == vq);".into(),
        format!("wire [{0}:0] above = ~(({1}'d2 << last) - {1}'d1);", n - 1, n),
        format!("wire [{}:0] n_hi = ~(want & above);\nwire [{}:0] n_all = ~want;", n - 1, n - 1),
    ];
    let mut w = |l: String| v.push(l);
    let (f_hi, i_hi) = first_clear(&mut w, "hi", "n_hi", 0, n, qa);
    let (f_all, i_all) = first_clear(&mut w, "all", "n_all", 0, n, qa);
    v.extend([
        "always @(*) begin".to_string(),
        format!("    any = {f_all};"),
        format!("    at_alone = want == ({n}'d1 << nq);"),
        format!("    pick = {{{}'d0, {f_hi} ? {i_hi} : {i_all}}};", 24 - qa),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    if (visit) begin dirty <= hit; last <= vq; end else if (hit) dirty <= 1'b1;".into(),
        "    if (reset) begin last <= 0; dirty <= 1'b0; end".into(),
        "end".into(),
    ]);
    // A QP's bit: cleared by a visit that found it with nothing to do, set by a fetch or a command (which win).
    v.extend(bit_table::write_ports(
        "want",
        n,
        qa,
        &[
            Port { en: "clear && !dirty && !hit", at: "vq", d: "1'b0" },
            Port { en: "rung", at: "rq", d: "1'b1" },
            Port { en: "cmd", at: "cq", d: "1'b1" },
        ],
    ));
    v
}
