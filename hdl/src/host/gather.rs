//! `DmaGather`: a packet's payload gathered from a list of SGEs in host memory, the model's `req::gather`
//! over `qp::walk_sges` (what a send WQE's packet carries), for the TX pipeline. Started with the SGEs
//! (`qpc::recv_sge` records: an address and a length each), how many there are, the message offset the
//! payload starts at and its length (at most a path MTU), it walks to the SGE the offset falls in (past any
//! of no length) and reads the payload piece by piece, each piece the rest of an SGE or of the payload, one
//! read at a time through `DmaStream`. Once every piece is in (or the list ran out first) it says so for a
//! cycle (`done`), with `err` if a read failed or the list is shorter than offset plus length (the model's
//! gather then fails: no packet). The pieces' bytes then come out as one stream (`out_*`: full 8-byte beats
//! from lane 0, the last one's `keep` a prefix), or, with `drop` (from `done` on), are discarded. A payload
//! of no bytes reads nothing and gives no beats. An inline WQE's data is one piece: the slot's bytes.
//!
//! A read is at most `MAX_READ` bytes (a longer piece is read in parts), so with at most a path MTU
//! (4,096 bytes, 512 beats, and a partial beat a piece) queued before it, every read finds room in the
//! stream's 1,024 beats. Each read costs a DMA round trip (they are not overlapped yet).

use crate::engine::resp::recv_wqe::{MAX_SGE, SGES_BITS, SGE_BITS};
use crate::host::stream::DmaStream;
use crate::kit::*;
use wire::contract::qpc::recv_sge;

/// The pieces' reads: 8-byte beats, 1,024 of them queued, `MAX_READ` bytes kept free for a read.
type GatherStream = DmaStream<64, 8, 72, 10, 11, 256>;

/// The longest read the gather asks for (`GatherStream`'s room).
pub const MAX_READ: u32 = 256 * 8;

/// The walk over the SGEs, the pieces' accounting and the funnel that joins the pieces' bytes.
#[derive(LogicBlock, Default)]
pub struct GatherWalk {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub sges: Signal<In, Bits<SGES_BITS>>,
    pub count: Signal<In, Bits<8>>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    pub busy: Signal<Out, Bit>,
    pub done: Signal<Out, Bit>,
    pub err: Signal<Out, Bit>,
    pub drop: Signal<In, Bit>,
    /// `DmaStream`'s side: a read's start, and its first beat (with the read's error) and payload beats.
    pub s_can: Signal<In, Bit>,
    pub s_start: Signal<Out, Bit>,
    pub s_addr: Signal<Out, Bits<64>>,
    pub s_len: Signal<Out, Bits<16>>,
    pub s_first: Signal<In, Bit>,
    pub s_err: Signal<In, Bit>,
    pub s_data: Signal<In, Bits<64>>,
    pub s_keep: Signal<In, Bits<8>>,
    pub s_last: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub out_data: Signal<Out, Bits<64>>,
    pub out_keep: Signal<Out, Bits<8>>,
    pub out_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
}

impl Logic for GatherWalk {
    fn update(&mut self) {
        // Verified in Verilator against the model's `req::gather` (sim/tests/dma_gather.rs).
    }

    fn connect(&mut self) {
        self.busy.connect();
        self.done.connect();
        self.err.connect();
        self.s_start.connect();
        self.s_addr.connect();
        self.s_len.connect();
        self.s_ready.connect();
        self.out_data.connect();
        self.out_keep.connect();
        self.out_last.connect();
        self.out_valid.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(walk_verilog())
    }
}

/// The Verilog body of `GatherWalk`.
pub fn walk_verilog() -> Vec<String> {
    let l = recv_sge();
    assert_eq!(l.width() as usize, SGE_BITS);
    let f = |n: &str| l.slice(n).map(|(lsb, w)| (lsb as usize, w as usize)).expect("an SGE field");
    let ((a_lsb, a_w), (n_lsb, n_w)) = (f("addr"), f("length"));
    vec![
        "localparam IDLE = 3'd0, SEEK = 3'd1, ISSUE = 3'd2, WAIT = 3'd3, STREAM = 3'd4, DRAIN = 3'd5;".to_string(),
        "reg [2:0] st;".into(),
        format!("reg [63:0] g_addr [0:{}];", MAX_SGE - 1),
        format!("reg [31:0] g_len [0:{}];", MAX_SGE - 1),
        "reg [7:0] n_sge, j;".into(),
        "reg [31:0] skip, rem;".into(),
        "reg [5:0] pieces, firsts, failed, lasts;".into(),
        "reg bad, done_r;".into(),
        "integer il;".into(),
        "wire [31:0] cur_len = j < n_sge ? g_len[j[3:0]] : 32'd0;".into(),
        "wire [31:0] in_sge = cur_len - skip;".into(),
        "wire [31:0] fit = rem < in_sge ? rem : in_sge;".into(),
        format!("wire [31:0] piece = fit < 32'd{MAX_READ} ? fit : 32'd{MAX_READ};"),
        "wire [5:0] ok = pieces - failed;".into(),
        "// The funnel: up to 7 bytes held back (`acc`, `an` of them), a beat's bytes joined above them; the".into(),
        "// output beat registered, and the last few bytes of the stream owed as a beat of their own (`tail`).".into(),
        "reg [63:0] acc;\nreg [3:0] an;\nreg tail;".into(),
        "reg [63:0] o_data;\nreg [7:0] o_keep;\nreg o_last, o_valid;".into(),
        "reg [3:0] m;\ninteger ib;".into(),
        "always @(*) begin m = 4'd0; for (ib = 0; ib < 8; ib = ib + 1) if (s_keep[ib]) m = ib[3:0] + 4'd1; end".into(),
        "// The beat's bytes past its `keep` are not trusted: zeroed.".into(),
        "wire [63:0] kd = s_data & {{8{s_keep[7]}}, {8{s_keep[6]}}, {8{s_keep[5]}}, {8{s_keep[4]}}, {8{s_keep[3]}}, {8{s_keep[2]}}, {8{s_keep[1]}}, {8{s_keep[0]}}};".into(),
        "wire [127:0] joined = {64'd0, acc} | ({64'd0, kd} << {an, 3'd0});".into(),
        "wire [4:0] tot = {1'b0, an} + {1'b0, m};".into(),
        "wire final_beat = s_last && lasts + 6'd1 == ok;".into(),
        "function [7:0] prefix(input [4:0] n); prefix = n >= 5'd8 ? 8'hFF : (8'd1 << n[2:0]) - 8'd1; endfunction".into(),
        "wire take = st == STREAM && !drop && s_valid && !tail && (!o_valid || out_ready);".into(),
        "always @(*) begin".into(),
        "    busy = st != IDLE;".into(),
        "    done = done_r;".into(),
        "    err = bad;".into(),
        "    s_start = st == ISSUE && s_can;".into(),
        "    s_addr = g_addr[j[3:0]] + {32'd0, skip};".into(),
        "    s_len = piece[15:0];".into(),
        "    s_ready = take || st == DRAIN;".into(),
        "    out_data = o_data;\n    out_keep = o_keep;\n    out_last = o_last;\n    out_valid = o_valid;".into(),
        "end".into(),
        "wire unused_piece = ^piece[31:16];".into(),
        "always @(posedge clock) begin".into(),
        "    done_r <= 1'b0;".into(),
        "    if (s_first) begin firsts <= firsts + 6'd1; if (s_err) begin failed <= failed + 6'd1; bad <= 1'b1; end end".into(),
        "    if (o_valid && out_ready) begin".into(),
        "        o_valid <= 1'b0;".into(),
        "        if (o_last) st <= IDLE;".into(),
        "        if (tail) begin o_valid <= 1'b1; o_data <= acc; o_keep <= prefix({1'b0, an}); o_last <= 1'b1; tail <= 1'b0; end".into(),
        "    end".into(),
        "    case (st)".into(),
        "    IDLE: if (start) begin".into(),
        format!("        for (il = 0; il < {MAX_SGE}; il = il + 1) begin"),
        format!("            g_addr[il] <= sges[il * {SGE_BITS} + {} -: {a_w}];", a_lsb + a_w - 1),
        format!("            g_len[il] <= sges[il * {SGE_BITS} + {} -: {n_w}];", n_lsb + n_w - 1),
        "        end".into(),
        format!("        n_sge <= count > 8'd{MAX_SGE} ? 8'd{MAX_SGE} : count;"),
        "        j <= 8'd0; skip <= off; rem <= len; pieces <= 6'd0; firsts <= 6'd0; failed <= 6'd0; lasts <= 6'd0;".into(),
        "        bad <= 1'b0; acc <= 64'd0; an <= 4'd0; tail <= 1'b0; o_valid <= 1'b0;".into(),
        "        st <= SEEK;".into(),
        "    end".into(),
        "    // Past the SGEs the offset (or the pieces before) used up, and any of no length.".into(),
        "    SEEK: if (rem == 32'd0) st <= WAIT;".into(),
        "    else if (j >= n_sge) begin bad <= 1'b1; st <= WAIT; end".into(),
        "    else if (skip >= cur_len) begin skip <= skip - cur_len; j <= j + 8'd1; end".into(),
        "    else st <= ISSUE;".into(),
        "    ISSUE: if (s_can) begin".into(),
        "        pieces <= pieces + 6'd1; rem <= rem - piece;".into(),
        "        if (piece == in_sge) begin j <= j + 8'd1; skip <= 32'd0; end else skip <= skip + piece;".into(),
        "        st <= SEEK;".into(),
        "    end".into(),
        "    // Every piece's read over (its beats all in): done; nothing to stream if no piece was read whole.".into(),
        "    WAIT: if (s_can && firsts == pieces && !s_first) begin".into(),
        "        done_r <= 1'b1;".into(),
        "        st <= ok == 6'd0 ? IDLE : drop ? DRAIN : STREAM;".into(),
        "    end".into(),
        "    STREAM: if (drop) st <= DRAIN;".into(),
        "    else if (take) begin".into(),
        "        if (s_last) lasts <= lasts + 6'd1;".into(),
        "        if (tot >= 5'd8 || final_beat) begin".into(),
        "            o_valid <= 1'b1; o_data <= joined[63:0]; o_keep <= prefix(tot);".into(),
        "            o_last <= final_beat && tot <= 5'd8;".into(),
        "            acc <= joined[127:64]; an <= tot >= 5'd8 ? tot[3:0] - 4'd8 : 4'd0;".into(),
        "            tail <= final_beat && tot > 5'd8;".into(),
        "        end else begin acc <= joined[63:0]; an <= tot[3:0]; end".into(),
        "    end".into(),
        "    DRAIN: begin".into(),
        "        o_valid <= 1'b0; tail <= 1'b0;".into(),
        "        if (s_valid && s_last) lasts <= lasts + 6'd1;".into(),
        "        if (lasts == ok || (s_valid && s_last && lasts + 6'd1 == ok)) st <= IDLE;".into(),
        "    end".into(),
        "    default: st <= IDLE;".into(),
        "    endcase".into(),
        "    if (reset) begin st <= IDLE; done_r <= 1'b0; o_valid <= 1'b0; tail <= 1'b0; bad <= 1'b0; end".into(),
        "end".into(),
    ]
}

/// `dma_gather`: `GatherWalk` and the `DmaStream` that reads its pieces.
#[derive(LogicBlock, Default)]
pub struct DmaGather {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub sges: Signal<In, Bits<SGES_BITS>>,
    pub count: Signal<In, Bits<8>>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    /// From a start to the stream's last beat taken (or dropped).
    pub busy: Signal<Out, Bit>,
    /// Every piece is in, for a cycle; and whether the gather failed (a read, or the list too short).
    pub done: Signal<Out, Bit>,
    pub err: Signal<Out, Bit>,
    /// Discard what was read (from `done` on).
    pub drop: Signal<In, Bit>,
    /// The DMA read port (a requester of `DmaReadMux`) and its completions.
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<64>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// The payload beats.
    pub out_data: Signal<Out, Bits<64>>,
    pub out_keep: Signal<Out, Bits<8>>,
    pub out_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    walk: GatherWalk,
    stream: GatherStream,
}

impl Logic for DmaGather {
    #[hdl_gen]
    fn update(&mut self) {
        self.walk.clock.next = self.clock.val();
        self.walk.reset.next = self.reset.val();
        self.walk.start.next = self.start.val();
        self.walk.sges.next = self.sges.val();
        self.walk.count.next = self.count.val();
        self.walk.off.next = self.off.val();
        self.walk.len.next = self.len.val();
        self.walk.drop.next = self.drop.val();
        self.busy.next = self.walk.busy.val();
        self.done.next = self.walk.done.val();
        self.err.next = self.walk.err.val();

        self.stream.clock.next = self.clock.val();
        self.stream.reset.next = self.reset.val();
        self.stream.start.next = self.walk.s_start.val();
        self.stream.addr.next = self.walk.s_addr.val();
        self.stream.len.next = self.walk.s_len.val();
        self.walk.s_can.next = self.stream.can_start.val();
        self.rd_valid.next = self.stream.rd_valid.val();
        self.stream.rd_ready.next = self.rd_ready.val();
        self.rd_addr.next = self.stream.rd_addr.val();
        self.rd_len.next = self.stream.rd_len.val();
        self.stream.cpl_valid.next = self.cpl_valid.val();
        self.stream.cpl_data.next = self.cpl_data.val();
        self.stream.cpl_err.next = self.cpl_err.val();
        self.stream.cpl_last.next = self.cpl_last.val();
        self.walk.s_first.next = self.stream.first.val();
        self.walk.s_err.next = self.stream.err.val();
        self.walk.s_data.next = self.stream.out_data.val();
        self.walk.s_keep.next = self.stream.out_keep.val();
        self.walk.s_last.next = self.stream.out_last.val();
        self.walk.s_valid.next = self.stream.out_valid.val();
        self.stream.out_ready.next = self.walk.s_ready.val();
        self.out_data.next = self.walk.out_data.val();
        self.out_keep.next = self.walk.out_keep.val();
        self.out_last.next = self.walk.out_last.val();
        self.out_valid.next = self.walk.out_valid.val();
        self.walk.out_ready.next = self.out_ready.val();
    }
}

/// A gather list of one SGE (`addr`, `len` bytes), the rest of the list zero: a READ response's payload,
/// read through the gather.
#[derive(LogicBlock, Default)]
pub struct OneSge {
    pub addr: Signal<In, Bits<64>>,
    pub len: Signal<In, Bits<16>>,
    pub sges: Signal<Out, Bits<SGES_BITS>>,
}

impl Logic for OneSge {
    fn update(&mut self) {
        // Verified with the core, in lockstep with the model (driver/tests/rtl_responder.rs: READ responses).
    }

    fn connect(&mut self) {
        self.sges.connect();
    }

    fn hdl(&self) -> Verilog {
        let l = recv_sge();
        let f = |n: &str| l.slice(n).map(|(lsb, w)| (lsb as usize, w as usize)).expect("an SGE field");
        let ((a_lsb, a_w), (n_lsb, n_w)) = (f("addr"), f("length"));
        custom_module(vec![
            "always @(*) begin".to_string(),
            format!("    sges = {SGES_BITS}'d0;"),
            format!("    sges[{}:{a_lsb}] = addr;", a_lsb + a_w - 1),
            format!("    sges[{}:{n_lsb}] = {{{}'d0, len}};", n_lsb + n_w - 1, n_w - 16),
            "end".into(),
        ])
    }
}
