//! `DmaGather`: a packet's payload gathered from a list of SGEs in host memory, the model's `req::gather`
//! over `qp::walk_sges` (what a send WQE's packet carries), for the TX pipeline. Started with the SGEs
//! (`qpc::recv_sge` records: an address and a length each), how many there are, the message offset the
//! payload starts at and its length (at most a path MTU), it walks to the SGE the offset falls in (past any
//! of no length) and reads the payload piece by piece, each piece the rest of an SGE or of the payload, one
//! read at a time through `DmaStream`. Once every piece's read is answered (its first beat in: whether it
//! failed is known then) or the list ran out first, it says so for a cycle (`done`), with `err` if a read
//! failed or the list is shorter than offset plus length (the model's gather then fails: no packet). The
//! pieces' bytes then come out as one stream, as they arrive (`out_*`: full beats of `K`
//! bytes from lane 0, the last one's `keep` a prefix), or, with `drop` in the `done` cycle, are discarded. A
//! payload of no bytes reads nothing and gives no beats. An inline WQE's data is one piece: the slot's
//! bytes. Generic in the beat (`DmaGatherW8`, `DmaGatherW64`).
//!
//! Two packets overlap: the reader takes the next packet's start once the last one is answered (`reading`
//! low) while the streamer still sends that one's bytes, which the queue holds ahead of the next's; so the
//! next packet's reads are asked for while the last one's beats still come in, and no round trip a packet
//! is spent. A packet read
//! before the streamer is free waits for it (`held`), and the reader waits for that packet to go to the
//! streamer; `busy` is high while any of it is in flight.
//!
//! A read is at most `max_read(K)` bytes (a longer piece is read in parts). The reads go to two `DmaStream`s in
//! turn, each a DMA requester of its own (a tag each), so two are in flight at once: the second read's round
//! trip is hidden behind the first one's beats. Their beats are taken in the order the reads were asked for
//! (a stream's reads end in a `last` beat, a failed one's too), whatever order the host completes them in. A
//! read is asked for only with room in its stream's queue (1,024 beats of 8 bytes; 128 of 64) for all of it,
//! so a read waits for the streamer to make room.

use crate::engine::resp::recv_wqe::{MAX_SGE, SGES_BITS, SGE_BITS};
use crate::host::stream::DmaStream;
use crate::kit::*;
use wire::contract::qpc::recv_sge;

/// The gather of the 8-byte datapath: its reads' 8-byte beats, 1,024 of them queued in each stream, a
/// longest read's bytes (2,048) kept free for a read. A packet's reads may all but one go to one stream (a
/// long piece and a short one in turn), so each stream holds a whole packet (4,096 bytes and a part beat a
/// piece) past the room it keeps.
pub type DmaGatherW8 = DmaGather<64, 8, 72, 10, 11, { max_read(8) / 8 }>;
/// The gather of the 64-byte datapath: 256 beats of 64 bytes queued in each stream, a longest read's bytes
/// (4,096) kept free, and a whole packet past them.
pub type DmaGatherW64 = DmaGather<512, 64, 576, 8, 9, { max_read(64) / 64 }>;

/// The longest read the gather asks for with beats of `k` bytes (its stream's room): 2,048 bytes at 8, a
/// whole packet at the largest path MTU (4,096) at 64, where a round trip is two packets' beats and each
/// stream's one read in flight must carry a packet.
pub const fn max_read(k: usize) -> u32 {
    if k >= 64 {
        4096
    } else {
        2048
    }
}

/// The walk over the SGEs, the pieces' accounting and the funnel that joins the pieces' bytes.
#[derive(LogicBlock, Default)]
pub struct GatherWalk<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub sges: Signal<In, Bits<SGES_BITS>>,
    pub count: Signal<In, Bits<8>>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    pub busy: Signal<Out, Bit>,
    pub reading: Signal<Out, Bit>,
    pub done: Signal<Out, Bit>,
    pub err: Signal<Out, Bit>,
    pub drop: Signal<In, Bit>,
    /// The streams' side: a read's start (in the stream whose turn it is), each stream's first beat of a
    /// read (with the read's error), and the reads' beats in turn.
    pub s_can: Signal<In, Bit>,
    pub s_start: Signal<Out, Bit>,
    pub s_addr: Signal<Out, Bits<64>>,
    pub s_len: Signal<Out, Bits<16>>,
    pub s_first: Signal<In, Bits<2>>,
    pub s_err: Signal<In, Bits<2>>,
    pub s_data: Signal<In, Bits<D>>,
    pub s_keep: Signal<In, Bits<K>>,
    pub s_last: Signal<In, Bit>,
    pub s_valid: Signal<In, Bit>,
    pub s_ready: Signal<Out, Bit>,
    pub out_data: Signal<Out, Bits<D>>,
    pub out_keep: Signal<Out, Bits<K>>,
    pub out_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
}

impl<const D: usize, const K: usize> Logic for GatherWalk<D, K> {
    fn update(&mut self) {
        // Verified in Verilator against the model's `req::gather` (sim/tests/dma_gather.rs).
    }

    fn connect(&mut self) {
        self.busy.connect();
        self.reading.connect();
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
        custom_module(walk_verilog(K))
    }
}

/// The Verilog body of `GatherWalk` with beats of `k` bytes.
pub fn walk_verilog(k: usize) -> Vec<String> {
    assert!(k.is_power_of_two() && k >= 8);
    // Bits of a byte count below a beat (`an`); of one up to two beats (`tot`); of a lane.
    let cb = (k as u32).ilog2() as usize + 1;
    let lk = cb - 1;
    let d = 8 * k;
    let lanes: Vec<String> = (0..k).rev().map(|i| format!("{{8{{s_keep[{i}]}}}}")).collect();
    let l = recv_sge();
    assert_eq!(l.width() as usize, SGE_BITS);
    let f = |n: &str| l.slice(n).map(|(lsb, w)| (lsb as usize, w as usize)).expect("an SGE field");
    let ((a_lsb, a_w), (n_lsb, n_w)) = (f("addr"), f("length"));
    vec![
        "localparam R_IDLE = 2'd0, SEEK = 2'd1, ISSUE = 2'd2, WAIT = 2'd3;".to_string(),
        "localparam S_IDLE = 2'd0, STREAM = 2'd1, DRAIN = 2'd2;".into(),
        "// The reader (`rs`: the walk and its reads) and the streamer (`ss`: the funnel), one packet each.".into(),
        "reg [1:0] rs, ss;".into(),
        format!("reg [63:0] g_addr [0:{}];", MAX_SGE - 1),
        format!("reg [31:0] g_len [0:{}];", MAX_SGE - 1),
        "reg [7:0] n_sge, j;".into(),
        "reg [31:0] skip, rem;".into(),
        "// The reader's packet: its reads, their first beats seen.".into(),
        "reg [5:0] pieces, firsts;".into(),
        "// The streamer's packet: its reads with beats in the queue, their last beats seen.".into(),
        "reg [5:0] ok_s, lasts;".into(),
        "// A packet read and waiting for the streamer (`held`): its reads with beats, and whether it is dropped.".into(),
        "reg held, h_drop;".into(),
        "reg [5:0] h_ok;".into(),
        "// The streamer's packet is the one `done` shows this cycle (it went straight to the streamer).".into(),
        "reg fresh;".into(),
        "reg bad, done_r;".into(),
        "integer il;".into(),
        "wire [31:0] cur_len = j < n_sge ? g_len[j[3:0]] : 32'd0;".into(),
        "wire [31:0] in_sge = cur_len - skip;".into(),
        "wire [31:0] fit = rem < in_sge ? rem : in_sge;".into(),
        format!("wire [31:0] piece = fit < 32'd{mr} ? fit : 32'd{mr};", mr = max_read(k)),
        "// Every read leaves beats to take, a failed one its last.".into(),
        "wire [5:0] ok = pieces;".into(),
        format!("// The funnel: up to {} bytes held back (`acc`, `an` of them), a beat's bytes joined above them;", k - 1),
        "// the output beat registered, and the last few bytes of the stream owed as a beat of their own (`tail`).".into(),
        format!("reg [{}:0] acc;\nreg [{}:0] an;\nreg tail;", d - 1, cb - 1),
        format!("reg [{}:0] o_data;\nreg [{}:0] o_keep;\nreg o_last, o_valid;", d - 1, k - 1),
        format!("reg [{}:0] m;\ninteger ib;", cb - 1),
        format!("always @(*) begin m = {cb}'d0; for (ib = 0; ib < {k}; ib = ib + 1) if (s_keep[ib]) m = ib[{}:0] + {cb}'d1; end", cb - 1),
        "// The beat's bytes past its `keep` are not trusted: zeroed.".into(),
        format!("wire [{}:0] kd = s_data & {{{}}};", d - 1, lanes.join(", ")),
        format!("wire [{}:0] joined = {{{d}'d0, acc}} | ({{{d}'d0, kd}} << {{an, 3'd0}});", 2 * d - 1),
        format!("wire [{cb}:0] tot = {{1'b0, an}} + {{1'b0, m}};"),
        "wire final_beat = s_last && lasts + 6'd1 == ok_s;".into(),
        format!(
            "function [{}:0] prefix(input [{cb}:0] n); prefix = n >= {}'d{k} ? {{{k}{{1'b1}}}} : ({k}'d1 << n[{}:0]) - {k}'d1; endfunction",
            k - 1,
            cb + 1,
            lk - 1
        ),
        "// The packet `done` shows is dropped: read only in that cycle.".into(),
        "wire cut = fresh && drop;".into(),
        "// Beats are taken up to the packet's last read's last beat; the next packet's follow in the queue.".into(),
        "wire more = lasts != ok_s;".into(),
        "wire take = ss == STREAM && !cut && more && s_valid && !tail && (!o_valid || out_ready);".into(),
        "always @(*) begin".into(),
        "    busy = rs != R_IDLE || ss != S_IDLE || held;".into(),
        "    reading = rs != R_IDLE || held;".into(),
        "    done = done_r;".into(),
        "    err = bad;".into(),
        "    s_start = rs == ISSUE && s_can;".into(),
        "    s_addr = g_addr[j[3:0]] + {32'd0, skip};".into(),
        "    s_len = piece[15:0];".into(),
        "    s_ready = take || ss == DRAIN;".into(),
        "    out_data = o_data;\n    out_keep = o_keep;\n    out_last = o_last;\n    out_valid = o_valid;".into(),
        "end".into(),
        "wire unused_piece = ^piece[31:16];".into(),
        "always @(posedge clock) begin".into(),
        "    done_r <= 1'b0;".into(),
        "    fresh <= 1'b0;".into(),
        "    firsts <= firsts + {5'd0, s_first[0]} + {5'd0, s_first[1]};".into(),
        "    if (|(s_first & s_err)) bad <= 1'b1;".into(),
        "    if (done_r && drop && held) h_drop <= 1'b1;".into(),
        "    if (o_valid && out_ready) begin".into(),
        "        o_valid <= 1'b0;".into(),
        "        if (o_last) ss <= S_IDLE;".into(),
        "        if (tail) begin o_valid <= 1'b1; o_data <= acc; o_keep <= prefix({1'b0, an}); o_last <= 1'b1; tail <= 1'b0; end".into(),
        "    end".into(),
        "    case (rs)".into(),
        "    R_IDLE: if (start) begin".into(),
        format!("        for (il = 0; il < {MAX_SGE}; il = il + 1) begin"),
        format!("            g_addr[il] <= sges[il * {SGE_BITS} + {} -: {a_w}];", a_lsb + a_w - 1),
        format!("            g_len[il] <= sges[il * {SGE_BITS} + {} -: {n_w}];", n_lsb + n_w - 1),
        "        end".into(),
        format!("        n_sge <= count > 8'd{MAX_SGE} ? 8'd{MAX_SGE} : count;"),
        "        j <= 8'd0; skip <= off; rem <= len; pieces <= 6'd0; firsts <= 6'd0; bad <= 1'b0;".into(),
        "        rs <= SEEK;".into(),
        "    end".into(),
        "    // Past the SGEs the offset (or the pieces before) used up, and any of no length.".into(),
        "    SEEK: if (rem == 32'd0) rs <= WAIT;".into(),
        "    else if (j >= n_sge) begin bad <= 1'b1; rs <= WAIT; end".into(),
        "    else if (skip >= cur_len) begin skip <= skip - cur_len; j <= j + 8'd1; end".into(),
        "    else rs <= ISSUE;".into(),
        "    ISSUE: if (s_can) begin".into(),
        "        pieces <= pieces + 6'd1; rem <= rem - piece;".into(),
        "        if (piece == in_sge) begin j <= j + 8'd1; skip <= 32'd0; end else skip <= skip + piece;".into(),
        "        rs <= SEEK;".into(),
        "    end".into(),
        "    // Every piece's read answered (its first beat in; more may follow): done. A packet with reads".into(),
        "    // goes to the streamer, or waits for it (`held`); the reader is free once the streamer has it.".into(),
        "    WAIT: if (firsts == pieces && s_first == 2'd0) begin".into(),
        "        done_r <= 1'b1;".into(),
        "        rs <= R_IDLE;".into(),
        "        if (ok != 6'd0 && ss == S_IDLE) begin".into(),
        format!("            ss <= STREAM; ok_s <= ok; lasts <= 6'd0; acc <= {d}'d0; an <= {cb}'d0; tail <= 1'b0; fresh <= 1'b1;"),
        "        end else if (ok != 6'd0) begin held <= 1'b1; h_ok <= ok; h_drop <= 1'b0; end".into(),
        "    end".into(),
        "    default: rs <= R_IDLE;".into(),
        "    endcase".into(),
        "    case (ss)".into(),
        "    S_IDLE: if (held) begin".into(),
        "        ss <= h_drop || (done_r && drop) ? DRAIN : STREAM;".into(),
        format!("        ok_s <= h_ok; lasts <= 6'd0; acc <= {d}'d0; an <= {cb}'d0; tail <= 1'b0; held <= 1'b0;"),
        "    end".into(),
        "    STREAM: if (cut) ss <= DRAIN;".into(),
        "    else if (take) begin".into(),
        "        if (s_last) lasts <= lasts + 6'd1;".into(),
        format!("        if (tot >= {}'d{k} || final_beat) begin", cb + 1),
        format!("            o_valid <= 1'b1; o_data <= joined[{}:0]; o_keep <= prefix(tot);", d - 1),
        format!("            o_last <= final_beat && tot <= {}'d{k};", cb + 1),
        format!(
            "            acc <= joined[{}:{d}]; an <= tot >= {}'d{k} ? tot[{}:0] - {cb}'d{k} : {cb}'d0;",
            2 * d - 1,
            cb + 1,
            cb - 1
        ),
        format!("            tail <= final_beat && tot > {}'d{k};", cb + 1),
        format!("        end else begin acc <= joined[{}:0]; an <= tot[{}:0]; end", d - 1, cb - 1),
        "    end".into(),
        "    // The packet's beats discarded, up to its last read's last beat (the next packet's follow).".into(),
        "    DRAIN: if (s_valid) begin".into(),
        "        if (s_last) lasts <= lasts + 6'd1;".into(),
        "        if (s_last && lasts + 6'd1 == ok_s) ss <= S_IDLE;".into(),
        "    end".into(),
        "    default: ss <= S_IDLE;".into(),
        "    endcase".into(),
        "    if (reset) begin".into(),
        "        rs <= R_IDLE; ss <= S_IDLE; held <= 1'b0; fresh <= 1'b0; done_r <= 1'b0; o_valid <= 1'b0; tail <= 1'b0;".into(),
        "        bad <= 1'b0;".into(),
        "    end".into(),
        "end".into(),
    ]
}

/// `dma_gather`: `GatherWalk` and the two `DmaStream`s that read its pieces in turn, with beats of `K` bytes
/// (`D` bits; each stream's queue of `2^A` entries of `N = D + K` bits, `M` beats kept free for a read).
#[derive(LogicBlock, Default)]
pub struct DmaGather<const D: usize, const K: usize, const N: usize, const A: usize, const AP1: usize, const M: u32> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub sges: Signal<In, Bits<SGES_BITS>>,
    pub count: Signal<In, Bits<8>>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    /// From a start to the stream's last beat taken (or dropped).
    pub busy: Signal<Out, Bit>,
    /// A start now would be lost: a packet is being read, or is read and waits for the streamer.
    pub reading: Signal<Out, Bit>,
    /// Every piece's read is answered, for a cycle; and whether the gather failed (a read, or the list too
    /// short).
    pub done: Signal<Out, Bit>,
    pub err: Signal<Out, Bit>,
    /// Discard what was read: read in the cycle `done` shows.
    pub drop: Signal<In, Bit>,
    /// The streams' DMA read ports (two requesters of `DmaReadMux`, a tag each: `rd_*` and `rd2_*`) and
    /// their completions (`cpl_valid` the first's, `cpl2_valid` the second's; the rest shared).
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub rd2_valid: Signal<Out, Bit>,
    pub rd2_ready: Signal<In, Bit>,
    pub rd2_addr: Signal<Out, Bits<64>>,
    pub rd2_len: Signal<Out, Bits<16>>,
    pub cpl_valid: Signal<In, Bit>,
    pub cpl2_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<D>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// The payload beats.
    pub out_data: Signal<Out, Bits<D>>,
    pub out_keep: Signal<Out, Bits<K>>,
    pub out_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    walk: GatherWalk<D, K>,
    stream: DmaStream<D, K, N, A, AP1, M>,
    stream2: DmaStream<D, K, N, A, AP1, M>,
    /// The stream the next read goes to, and the one whose beats are taken (the second when set).
    wi: DFF<Bit>,
    ri: DFF<Bit>,
}

impl<const D: usize, const K: usize, const N: usize, const A: usize, const AP1: usize, const M: u32> Logic
    for DmaGather<D, K, N, A, AP1, M>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wi, ri);
        self.walk.clock.next = self.clock.val();
        self.walk.reset.next = self.reset.val();
        self.walk.start.next = self.start.val();
        self.walk.sges.next = self.sges.val();
        self.walk.count.next = self.count.val();
        self.walk.off.next = self.off.val();
        self.walk.len.next = self.len.val();
        self.walk.drop.next = self.drop.val();
        self.busy.next = self.walk.busy.val();
        self.reading.next = self.walk.reading.val();
        self.done.next = self.walk.done.val();
        self.err.next = self.walk.err.val();

        // Reads go to the streams in turn.
        self.stream.clock.next = self.clock.val();
        self.stream.reset.next = self.reset.val();
        self.stream.start.next = self.walk.s_start.val() & !self.wi.q.val();
        self.stream.addr.next = self.walk.s_addr.val();
        self.stream.len.next = self.walk.s_len.val();
        self.stream2.clock.next = self.clock.val();
        self.stream2.reset.next = self.reset.val();
        self.stream2.start.next = self.walk.s_start.val() & self.wi.q.val();
        self.stream2.addr.next = self.walk.s_addr.val();
        self.stream2.len.next = self.walk.s_len.val();
        self.walk.s_can.next = self.stream.can_start.val();
        if self.wi.q.val() {
            self.walk.s_can.next = self.stream2.can_start.val();
        }
        if self.walk.s_start.val() {
            self.wi.d.next = !self.wi.q.val();
        }
        self.rd_valid.next = self.stream.rd_valid.val();
        self.stream.rd_ready.next = self.rd_ready.val();
        self.rd_addr.next = self.stream.rd_addr.val();
        self.rd_len.next = self.stream.rd_len.val();
        self.rd2_valid.next = self.stream2.rd_valid.val();
        self.stream2.rd_ready.next = self.rd2_ready.val();
        self.rd2_addr.next = self.stream2.rd_addr.val();
        self.rd2_len.next = self.stream2.rd_len.val();
        self.stream.cpl_valid.next = self.cpl_valid.val();
        self.stream.cpl_data.next = self.cpl_data.val();
        self.stream.cpl_err.next = self.cpl_err.val();
        self.stream.cpl_last.next = self.cpl_last.val();
        self.stream2.cpl_valid.next = self.cpl2_valid.val();
        self.stream2.cpl_data.next = self.cpl_data.val();
        self.stream2.cpl_err.next = self.cpl_err.val();
        self.stream2.cpl_last.next = self.cpl_last.val();
        self.walk.s_first.next =
            bit_cast::<2, 1>(self.stream.first.val().into()) | (bit_cast::<2, 1>(self.stream2.first.val().into()) << 1);
        self.walk.s_err.next =
            bit_cast::<2, 1>(self.stream.err.val().into()) | (bit_cast::<2, 1>(self.stream2.err.val().into()) << 1);
        // Beats are taken from the streams in turn, a read's whole (up to its `last`) at a time.
        self.walk.s_data.next = self.stream.out_data.val();
        self.walk.s_keep.next = self.stream.out_keep.val();
        self.walk.s_last.next = self.stream.out_last.val();
        self.walk.s_valid.next = self.stream.out_valid.val();
        if self.ri.q.val() {
            self.walk.s_data.next = self.stream2.out_data.val();
            self.walk.s_keep.next = self.stream2.out_keep.val();
            self.walk.s_last.next = self.stream2.out_last.val();
            self.walk.s_valid.next = self.stream2.out_valid.val();
        }
        self.stream.out_ready.next = self.walk.s_ready.val() & !self.ri.q.val();
        self.stream2.out_ready.next = self.walk.s_ready.val() & self.ri.q.val();
        if self.walk.s_ready.val() & self.walk.s_valid.val() & self.walk.s_last.val() {
            self.ri.d.next = !self.ri.q.val();
        }
        if self.reset.val() {
            self.wi.d.next = false;
            self.ri.d.next = false;
        }
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
