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
//! Packets overlap. The reader takes the next start once the last packet is answered and fewer than two
//! wait for the streamer (`reading` low), while the streamer still sends the packets before, kept in order
//! in a short list, so a packet's reads go out while the last one's beats still come in; the streamer
//! goes from a packet's last beat straight to the next packet's first (unless the last leaves a beat of
//! its own to send), so packets stream with no gap between them. And it reads ahead: after a packet of a
//! message that goes on (`msg_end`), the next `read_ahead(K)` packets' pieces (each as long as the first,
//! the last what is left) are asked for before anyone asks for them, so at 64 bytes, where a round trip is
//! two packets' beats, a packet's bytes are in when its turn comes. A start that names the next packet
//! read ahead (`claim`, the same `tag`, offset and length) takes it; any other drops all that was read
//! ahead, whose beats the streamer then discards. Each stream's read in flight is marked with its
//! packet's number, so first beats that come out of order across the streams count to the right packet;
//! a dropped packet's read still in flight has its first beat passed over. `busy` is high while anything
//! asked for is in flight.
//!
//! A read is at most `max_read(K)` bytes (a longer piece is read in parts). The reads go to `streams(K)`
//! `DmaStream`s in turn (2 at 8 bytes, 4 at 64), each a DMA requester of its own (a tag each), so as many
//! are in flight at once: the next reads' round trips are hidden behind the first one's beats. Their beats
//! are taken in the order the reads were asked for (a stream's reads end in a `last` beat, a failed one's
//! too), whatever order the host completes them in. A read is asked for only with room in its stream's
//! queue (1,024 beats of 8 bytes; 256 of 64) for all of it, so a read waits for the streamer to make room.

use crate::engine::resp::recv_wqe::{MAX_SGE, SGES_BITS, SGE_BITS};
use crate::host::stream::DmaStream;
use crate::kit::*;
use wire::contract::qpc::recv_sge;

/// The gather of the 8-byte datapath: its reads' 8-byte beats, 1,024 of them queued in each stream, a
/// longest read's bytes (2,048) kept free for a read. A packet's reads may all but one go to one stream (a
/// long piece and a short one in turn), so each stream holds a whole packet (4,096 bytes and a part beat a
/// piece) past the room it keeps: the packet being read can always be read. Packets read ahead wait in the
/// queues too, and only hold further reads back until the streamer takes them.
pub type DmaGatherW8 = DmaGather<64, 8, 72, 10, 11, { max_read(8) / 8 }, { streams(8) }>;
/// The gather of the 64-byte datapath: 256 beats of 64 bytes queued in each stream, a longest read's bytes
/// (4,096) kept free, and a whole packet past them.
pub type DmaGatherW64 = DmaGather<512, 64, 576, 8, 9, { max_read(64) / 64 }, { streams(64) }>;

/// The streams the gather reads through with beats of `k` bytes, each with one read in flight: 2 at 8,
/// where a round trip is a few dozen beats; 4 at 64, where it is about two packets' beats and a packet is
/// one read, so that three packets' reads are in flight while a fourth streams out.
pub const fn streams(k: usize) -> usize {
    if k >= 64 {
        4
    } else {
        2
    }
}

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
pub struct GatherWalk<const D: usize, const K: usize, const S: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub sges: Signal<In, Bits<SGES_BITS>>,
    pub count: Signal<In, Bits<8>>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    pub claim: Signal<In, Bit>,
    pub tag: Signal<In, Bits<32>>,
    pub msg_end: Signal<In, Bits<32>>,
    pub busy: Signal<Out, Bit>,
    pub reading: Signal<Out, Bit>,
    pub done: Signal<Out, Bit>,
    pub err: Signal<Out, Bit>,
    pub drop: Signal<In, Bit>,
    /// The streams' side: a read's start (in the stream whose turn it is, `s_turn`), each stream's first
    /// beat of a read (with the read's error; bit `i` stream `i`'s, those past `S` unused), and the reads'
    /// beats in turn.
    pub s_can: Signal<In, Bit>,
    pub s_turn: Signal<In, Bits<2>>,
    pub s_start: Signal<Out, Bit>,
    pub s_addr: Signal<Out, Bits<64>>,
    pub s_len: Signal<Out, Bits<16>>,
    pub s_first: Signal<In, Bits<MAX_STREAMS>>,
    pub s_err: Signal<In, Bits<MAX_STREAMS>>,
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

impl<const D: usize, const K: usize, const S: usize> Logic for GatherWalk<D, K, S> {
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
        custom_module(walk_verilog(K, S))
    }
}

/// Packets the reader may read ahead of the one the requester asked for with beats of `k` bytes: 2 at 8,
/// 3 at 64 (with the one asked for, a read in flight in each of its four streams). Packets are numbered
/// in 2 bits, so at most 3.
pub const fn read_ahead(k: usize) -> u32 {
    if k >= 64 {
        3
    } else {
        2
    }
}

/// The Verilog body of `GatherWalk` with beats of `k` bytes and `s` streams.
pub fn walk_verilog(k: usize, s: usize) -> Vec<String> {
    assert!(k.is_power_of_two() && k >= 8);
    assert!(s == 2 || s == MAX_STREAMS, "2 or {MAX_STREAMS} streams");
    // Bits of a byte count below a beat (`an`); of one up to two beats (`tot`); of a lane.
    let cb = (k as u32).ilog2() as usize + 1;
    let lk = cb - 1;
    let d = 8 * k;
    let lanes: Vec<String> = (0..k).rev().map(|i| format!("{{8{{s_keep[{i}]}}}}")).collect();
    let l = recv_sge();
    assert_eq!(l.width() as usize, SGE_BITS);
    let f = |n: &str| l.slice(n).map(|(lsb, w)| (lsb as usize, w as usize)).expect("an SGE field");
    let ((a_lsb, a_w), (n_lsb, n_w)) = (f("addr"), f("length"));
    let mut v = vec![
        "localparam R_IDLE = 2'd0, SEEK = 2'd1, ISSUE = 2'd2;".to_string(),
        "localparam S_IDLE = 2'd0, STREAM = 2'd1, DRAIN = 2'd2;".into(),
        "// The reader (`rs`: the walk and its reads) and the streamer (`ss`: the funnel).".into(),
        "reg [1:0] rs, ss;".into(),
        format!("reg [63:0] g_addr [0:{}];", MAX_SGE - 1),
        format!("reg [31:0] g_len [0:{}];", MAX_SGE - 1),
        "reg [7:0] n_sge, j;".into(),
        "reg [31:0] skip, rem;".into(),
        "// Packets by a number of 2 bits: reads asked for, first beats seen, failed, every read asked for;".into(),
        "// offset and length. The asked-for packet (`ps`, awaited while `p_on`), those read ahead after it".into(),
        "// up to `ts`, the one being read (`iseq`).".into(),
        "reg [5:0] pcs [0:3];\nreg [5:0] fst [0:3];\nreg [3:0] bd, isd;".into(),
        "reg [31:0] poff [0:3];\nreg [31:0] plen [0:3];".into(),
        "reg [1:0] ps, ts, iseq;\nreg p_on;".into(),
        "// The read ahead: the message it follows (`a_tag`), its end, the packets' length, the next one's offset."
            .into(),
        "reg [31:0] a_tag, a_end, a_plen, a_off;\nreg a_ok;".into(),
        "// Each stream's read waiting for its first beat, the packet it is of, and a first beat to pass over".into(),
        "// (its packet was dropped, its number may be another's now).".into(),
        format!("reg [{}:0] infl, stale;", s - 1),
        "// Packets for the streamer, in order: reads with beats in the queues, and whether they are dropped.".into(),
        "reg [6:0] l_cnt [0:3];\nreg [3:0] l_drop;\nreg [1:0] lh, lt;\nreg [2:0] ln;".into(),
        "// The streamer's packet: its reads, their last beats seen.".into(),
        "reg [6:0] ok_s, lasts;".into(),
        "reg done_r, err_r;\nreg [5:0] d_cnt;".into(),
        "integer il;".into(),
        "wire [31:0] cur_len = j < n_sge ? g_len[j[3:0]] : 32'd0;".into(),
        "wire [31:0] in_sge = cur_len - skip;".into(),
        "wire [31:0] fit = rem < in_sge ? rem : in_sge;".into(),
        format!("wire [31:0] piece = fit < 32'd{mr} ? fit : 32'd{mr};", mr = max_read(k)),
        "// First beats counted, each to its read's packet.".into(),
    ];
    for i in 0..s {
        v.push(format!("reg [1:0] own{i};\nwire c{i} = s_first[{i}] && !stale[{i}];"));
    }
    if s < MAX_STREAMS {
        v.push(format!("wire unused_s = ^{{s_turn[1], s_first[{m}:{s}], s_err[{m}:{s}]}};", m = MAX_STREAMS - 1));
    }
    for q in 0..4 {
        let terms: Vec<String> = (0..s).map(|i| format!("{{2'b0, c{i} && own{i} == 2'd{q}}}")).collect();
        v.push(format!("wire [2:0] inc{q} = {};", terms.join(" + ")));
    }
    v.extend([
        "wire [2:0] inc_ps = ps == 2'd0 ? inc0 : ps == 2'd1 ? inc1 : ps == 2'd2 ? inc2 : inc3;".to_string(),
        "wire [1:0] a_n = ts - ps;\nwire [1:0] nx = ps + 2'd1;\nwire [1:0] nx2 = ps + 2'd2;\nwire [1:0] nx3 = ps + 2'd3;".into(),
        "wire [1:0] nt = ts + 2'd1;".into(),
        "// The reads of the packets read ahead.".into(),
        "wire [6:0] a_sum = (a_n >= 2'd1 ? {1'b0, pcs[nx]} : 7'd0) + (a_n >= 2'd2 ? {1'b0, pcs[nx2]} : 7'd0)".into(),
        "    + (a_n == 2'd3 ? {1'b0, pcs[nx3]} : 7'd0);".into(),
        "// The start asks for the packet read ahead next: the same message (its descriptor kept), offset and length.".into(),
        "wire hit = claim && a_n != 2'd0 && a_tag == tag && poff[nx] == off && plen[nx] == len;".into(),
        "wire [31:0] a_left = a_end - a_off;".into(),
        "wire [31:0] a_len = a_left < a_plen ? a_left : a_plen;".into(),
        format!("wire ahead = a_ok && a_off < a_end && a_n < 2'd{};", read_ahead(k)),
        "wire p_done = p_on && isd[ps] && fst[ps] == pcs[ps] && inc_ps == 3'd0 && ln != 3'd4;".into(),
        "wire push_d = done_r && d_cnt != 6'd0;".into(),
        "wire push_a = start && !hit && a_sum != 7'd0;".into(),
        "// The streamer takes the next packet when idle, or straight after the last beat of one that leaves no".into(),
        "// tail beat, so packets follow each other with no gap.".into(),
        format!("wire chain = take && final_beat && tot <= {}'d{k};", cb + 1),
        "wire pop = (ss == S_IDLE || chain) && ln != 3'd0;".into(),
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
        "wire final_beat = s_last && lasts + 7'd1 == ok_s;".into(),
        format!(
            "function [{}:0] prefix(input [{cb}:0] n); prefix = n >= {}'d{k} ? {{{k}{{1'b1}}}} : ({k}'d1 << n[{}:0]) - {k}'d1; endfunction",
            k - 1,
            cb + 1,
            lk - 1
        ),
        "// Beats are taken up to the packet's last read's last beat; the next packet's follow in the queue.".into(),
        "wire more = lasts != ok_s;".into(),
        "wire take = ss == STREAM && more && s_valid && !tail && (!o_valid || out_ready);".into(),
        "always @(*) begin".into(),
        "    busy = p_on || done_r || ss != S_IDLE || ln != 3'd0 || o_valid;".into(),
        "    reading = p_on || done_r || ln >= 3'd2;".into(),
        "    done = done_r;".into(),
        "    err = err_r;".into(),
        "    s_start = rs == ISSUE && s_can && !start;".into(),
        "    s_addr = g_addr[j[3:0]] + {32'd0, skip};".into(),
        "    s_len = piece[15:0];".into(),
        "    s_ready = take || ss == DRAIN;".into(),
        "    out_data = o_data;\n    out_keep = o_keep;\n    out_last = o_last;\n    out_valid = o_valid;".into(),
        "end".into(),
        "wire unused_piece = ^piece[31:16];".into(),
        "always @(posedge clock) begin".into(),
        "    done_r <= 1'b0;".into(),
        "    fst[0] <= fst[0] + {3'd0, inc0}; fst[1] <= fst[1] + {3'd0, inc1};".into(),
        "    fst[2] <= fst[2] + {3'd0, inc2}; fst[3] <= fst[3] + {3'd0, inc3};".into(),
    ]);
    for i in 0..s {
        v.push(format!("    if (c{i} && s_err[{i}]) bd[own{i}] <= 1'b1;"));
        v.push(format!("    if (s_first[{i}]) begin infl[{i}] <= 1'b0; stale[{i}] <= 1'b0; end"));
        v.push(format!("    if (s_start && s_turn == 2'd{i}) begin infl[{i}] <= 1'b1; own{i} <= iseq; end"));
    }
    v.extend([
        "    if (s_start) pcs[iseq] <= pcs[iseq] + 6'd1;".to_string(),
        "    if (o_valid && out_ready) begin".into(),
        "        o_valid <= 1'b0;".into(),
        "        if (tail) begin".into(),
        "            o_valid <= 1'b1; o_data <= acc; o_keep <= prefix({1'b0, an}); o_last <= 1'b1; tail <= 1'b0;".into(),
        "            ss <= S_IDLE;".into(),
        "        end".into(),
        "    end".into(),
        "    // The reader: the packet being read piece by piece, then the next one ahead while there is one.".into(),
        "    case (rs)".into(),
        "    R_IDLE: if (ahead) begin".into(),
        "        ts <= nt; iseq <= nt; pcs[nt] <= 6'd0; fst[nt] <= 6'd0; bd[nt] <= 1'b0; isd[nt] <= 1'b0;".into(),
        "        poff[nt] <= a_off; plen[nt] <= a_len; rem <= a_len; a_off <= a_off + a_len; rs <= SEEK;".into(),
        "    end".into(),
        "    // Past the SGEs the offset (or the pieces before) used up, and any of no length.".into(),
        "    SEEK: if (rem == 32'd0) begin".into(),
        "        isd[iseq] <= 1'b1;".into(),
        "        if (ahead) begin".into(),
        "            ts <= nt; iseq <= nt; pcs[nt] <= 6'd0; fst[nt] <= 6'd0; bd[nt] <= 1'b0; isd[nt] <= 1'b0;".into(),
        "            poff[nt] <= a_off; plen[nt] <= a_len; rem <= a_len; a_off <= a_off + a_len;".into(),
        "        end else rs <= R_IDLE;".into(),
        "    end else if (j >= n_sge) begin".into(),
        "        // The list is shorter than the packet: it fails, and nothing is read ahead after it.".into(),
        "        bd[iseq] <= 1'b1; isd[iseq] <= 1'b1; a_ok <= 1'b0; rs <= R_IDLE;".into(),
        "    end else if (skip >= cur_len) begin skip <= skip - cur_len; j <= j + 8'd1; end".into(),
        "    else rs <= ISSUE;".into(),
        "    ISSUE: if (s_can && !start) begin".into(),
        "        rem <= rem - piece;".into(),
        "        if (piece == in_sge) begin j <= j + 8'd1; skip <= 32'd0; end else skip <= skip + piece;".into(),
        "        rs <= SEEK;".into(),
        "    end".into(),
        "    default: rs <= R_IDLE;".into(),
        "    endcase".into(),
        "    // A start takes the packet read ahead next, or drops what was read ahead and reads its own.".into(),
        "    // A start that takes it says how far to read ahead now (not past its message; 0: no further).".into(),
        "    if (start && hit) begin ps <= nx; p_on <= 1'b1; a_end <= msg_end; end".into(),
        "    else if (start) begin".into(),
        format!("        stale <= infl & ~s_first[{}:0];", s - 1),
        format!("        for (il = 0; il < {MAX_SGE}; il = il + 1) begin"),
        format!("            g_addr[il] <= sges[il * {SGE_BITS} + {} -: {a_w}];", a_lsb + a_w - 1),
        format!("            g_len[il] <= sges[il * {SGE_BITS} + {} -: {n_w}];", n_lsb + n_w - 1),
        "        end".into(),
        format!("        n_sge <= count > 8'd{MAX_SGE} ? 8'd{MAX_SGE} : count;"),
        "        j <= 8'd0; skip <= off; rem <= len;".into(),
        "        ps <= nx; ts <= nx; iseq <= nx; pcs[nx] <= 6'd0; fst[nx] <= 6'd0; bd[nx] <= 1'b0; isd[nx] <= 1'b0;".into(),
        "        p_on <= 1'b1; rs <= SEEK;".into(),
        "        a_tag <= tag; a_end <= msg_end; a_plen <= len; a_off <= off + len; a_ok <= len != 32'd0;".into(),
        "    end".into(),
        "    // Every read of the asked-for packet answered (its first beat in; more may follow): done. The".into(),
        "    // packet goes to the streamer's list the cycle after, kept or dropped (`drop`, read then).".into(),
        "    if (p_done) begin done_r <= 1'b1; err_r <= bd[ps]; d_cnt <= pcs[ps]; p_on <= 1'b0; end".into(),
        "    if (push_d || push_a) begin".into(),
        "        l_cnt[lt] <= push_d ? {1'b0, d_cnt} : a_sum; l_drop[lt] <= push_d ? drop : 1'b1; lt <= lt + 2'd1;".into(),
        "    end".into(),
        "    if (pop) lh <= lh + 2'd1;".into(),
        "    ln <= ln + {2'd0, push_d || push_a} - {2'd0, pop};".into(),
        "    case (ss)".into(),
        "    STREAM: if (take) begin".into(),
        "        if (s_last) lasts <= lasts + 7'd1;".into(),
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
        "        if (chain) ss <= S_IDLE;".into(),
        "    end".into(),
        "    // The packet's beats discarded, up to its last read's last beat (the next packet's follow).".into(),
        "    DRAIN: if (s_valid) begin".into(),
        "        if (s_last) lasts <= lasts + 7'd1;".into(),
        "        if (s_last && lasts + 7'd1 == ok_s) ss <= S_IDLE;".into(),
        "    end".into(),
        "    default: ss <= S_IDLE;".into(),
        "    endcase".into(),
        "    if (pop) begin".into(),
        "        ss <= l_drop[lh] ? DRAIN : STREAM;".into(),
        format!("        ok_s <= l_cnt[lh]; lasts <= 7'd0; acc <= {d}'d0; an <= {cb}'d0; tail <= 1'b0;"),
        "    end".into(),
        "    if (reset) begin".into(),
        format!("        rs <= R_IDLE; ss <= S_IDLE; p_on <= 1'b0; ts <= ps; a_ok <= 1'b0; infl <= {s}'d0; stale <= {s}'d0;"),
        "        lh <= 2'd0; lt <= 2'd0; ln <= 3'd0; done_r <= 1'b0; o_valid <= 1'b0; tail <= 1'b0;".into(),
        "    end".into(),
        "end".into(),
    ]);
    v
}

/// `dma_gather`: `GatherWalk` and the `S` (2 or 4) `DmaStream`s that read its pieces in turn, with beats of
/// `K` bytes (`D` bits; each stream's queue of `2^A` entries of `N = D + K` bits, `M` beats kept free for a
/// read).
#[derive(LogicBlock)]
pub struct DmaGather<
    const D: usize,
    const K: usize,
    const N: usize,
    const A: usize,
    const AP1: usize,
    const M: u32,
    const S: usize,
> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub sges: Signal<In, Bits<SGES_BITS>>,
    pub count: Signal<In, Bits<8>>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    /// The packet is of the message the last start's was (`tag` names it: the same SGEs), which may have
    /// been read ahead; and the message's length, up to which the packets after this one (each as long as
    /// it, the last what is left) are read ahead. A start of another message, another offset or length, or
    /// without `claim` drops what was read ahead.
    pub claim: Signal<In, Bit>,
    pub tag: Signal<In, Bits<32>>,
    pub msg_end: Signal<In, Bits<32>>,
    /// From a start to the stream's last beat taken (or dropped); what is read ahead and not asked for does
    /// not count.
    pub busy: Signal<Out, Bit>,
    /// Wait before a start: a packet is being read, or two wait for the streamer (the list's room).
    pub reading: Signal<Out, Bit>,
    /// Every piece's read is answered, for a cycle; and whether the gather failed (a read, or the list too
    /// short).
    pub done: Signal<Out, Bit>,
    pub err: Signal<Out, Bit>,
    /// Discard what was read: read in the cycle `done` shows.
    pub drop: Signal<In, Bit>,
    /// The streams' DMA read ports, stream `i`'s at bit `i`, address bits `64i+63:64i` and length bits
    /// `16i+15:16i` (requesters of `DmaReadMux`, a tag each; those past `S` idle), and their completions
    /// (stream `i`'s when bit `i` of `cpl_valid` is set; the rest shared).
    pub rd_valid: Signal<Out, Bits<MAX_STREAMS>>,
    pub rd_ready: Signal<In, Bits<MAX_STREAMS>>,
    pub rd_addr: Signal<Out, Bits<{ 64 * MAX_STREAMS }>>,
    pub rd_len: Signal<Out, Bits<{ 16 * MAX_STREAMS }>>,
    pub cpl_valid: Signal<In, Bits<MAX_STREAMS>>,
    pub cpl_data: Signal<In, Bits<D>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// The payload beats.
    pub out_data: Signal<Out, Bits<D>>,
    pub out_keep: Signal<Out, Bits<K>>,
    pub out_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    walk: GatherWalk<D, K, S>,
    streams: [DmaStream<D, K, N, A, AP1, M>; S],
    /// The stream the next read goes to, and the one whose beats are taken.
    wi: DFF<Bits<2>>,
    ri: DFF<Bits<2>>,
    /// The last stream's index; how far the streams' addresses and lengths are shifted down to their
    /// places (they are gathered in at the top).
    last: Constant<Bits<2>>,
    addr_pad: Constant<Bits<16>>,
    len_pad: Constant<Bits<16>>,
    addrs: Signal<Local, Bits<{ 64 * MAX_STREAMS }>>,
    lens: Signal<Local, Bits<{ 16 * MAX_STREAMS }>>,
    one_addr: Signal<Local, Bits<64>>,
    one_len: Signal<Local, Bits<16>>,
    /// The port bits of streams past `S`, taken in unused.
    spare_ready: Spare<MAX_STREAMS>,
    spare_cpl: Spare<MAX_STREAMS>,
}

/// The most streams a gather has (the width of its DMA port vectors).
pub const MAX_STREAMS: usize = 4;

impl<
        const D: usize,
        const K: usize,
        const N: usize,
        const A: usize,
        const AP1: usize,
        const M: u32,
        const S: usize,
    > Default for DmaGather<D, K, N, A, AP1, M, S>
{
    fn default() -> Self {
        assert!(S == 2 || S == MAX_STREAMS, "2 or {MAX_STREAMS} streams");
        let pad = (MAX_STREAMS - S) as u64;
        DmaGather {
            clock: Signal::default(),
            reset: Signal::default(),
            start: Signal::default(),
            sges: Signal::default(),
            count: Signal::default(),
            off: Signal::default(),
            len: Signal::default(),
            claim: Signal::default(),
            tag: Signal::default(),
            msg_end: Signal::default(),
            busy: Signal::default(),
            reading: Signal::default(),
            done: Signal::default(),
            err: Signal::default(),
            drop: Signal::default(),
            rd_valid: Signal::default(),
            rd_ready: Signal::default(),
            rd_addr: Signal::default(),
            rd_len: Signal::default(),
            cpl_valid: Signal::default(),
            cpl_data: Signal::default(),
            cpl_err: Signal::default(),
            cpl_last: Signal::default(),
            out_data: Signal::default(),
            out_keep: Signal::default(),
            out_last: Signal::default(),
            out_valid: Signal::default(),
            out_ready: Signal::default(),
            walk: GatherWalk::default(),
            streams: std::array::from_fn(|_| DmaStream::default()),
            wi: DFF::default(),
            ri: DFF::default(),
            last: Constant::new((S as u64 - 1).into()),
            addr_pad: Constant::new((64 * pad).into()),
            len_pad: Constant::new((16 * pad).into()),
            addrs: Signal::default(),
            lens: Signal::default(),
            one_addr: Signal::default(),
            one_len: Signal::default(),
            spare_ready: Spare::default(),
            spare_cpl: Spare::default(),
        }
    }
}

impl<
        const D: usize,
        const K: usize,
        const N: usize,
        const A: usize,
        const AP1: usize,
        const M: u32,
        const S: usize,
    > Logic for DmaGather<D, K, N, A, AP1, M, S>
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
        self.walk.claim.next = self.claim.val();
        self.walk.tag.next = self.tag.val();
        self.walk.msg_end.next = self.msg_end.val();
        self.walk.drop.next = self.drop.val();
        self.walk.s_turn.next = self.wi.q.val();
        self.busy.next = self.walk.busy.val();
        self.reading.next = self.walk.reading.val();
        self.done.next = self.walk.done.val();
        self.err.next = self.walk.err.val();

        // Reads go to the streams in turn; beats are taken from them in turn, a read's whole (up to its
        // `last`) at a time.
        self.walk.s_can.next = false;
        self.walk.s_first.next = 0.into();
        self.walk.s_err.next = 0.into();
        self.walk.s_data.next = 0.into();
        self.walk.s_keep.next = 0.into();
        self.walk.s_last.next = false;
        self.walk.s_valid.next = false;
        self.rd_valid.next = 0.into();
        self.addrs.next = 0.into();
        self.lens.next = 0.into();
        self.one_addr.next = 0.into();
        self.one_len.next = 0.into();
        for i in 0..S {
            self.streams[i].clock.next = self.clock.val();
            self.streams[i].reset.next = self.reset.val();
            self.streams[i].start.next = false;
            self.streams[i].addr.next = self.walk.s_addr.val();
            self.streams[i].len.next = self.walk.s_len.val();
            if self.wi.q.val().index() == i {
                self.streams[i].start.next = self.walk.s_start.val();
                self.walk.s_can.next = self.streams[i].can_start.val();
            }
            self.rd_valid.next = self.rd_valid.val().replace_bit(i, self.streams[i].rd_valid.val());
            self.streams[i].rd_ready.next = self.rd_ready.val().get_bit(i);
            self.one_addr.next = self.streams[i].rd_addr.val();
            self.one_len.next = self.streams[i].rd_len.val();
            self.addrs.next =
                (self.addrs.val() >> 64) | (bit_cast::<{ 64 * MAX_STREAMS }, 64>(self.one_addr.val()) << 192);
            self.lens.next = (self.lens.val() >> 16) | (bit_cast::<{ 16 * MAX_STREAMS }, 16>(self.one_len.val()) << 48);
            self.streams[i].cpl_valid.next = self.cpl_valid.val().get_bit(i);
            self.streams[i].cpl_data.next = self.cpl_data.val();
            self.streams[i].cpl_err.next = self.cpl_err.val();
            self.streams[i].cpl_last.next = self.cpl_last.val();
            self.walk.s_first.next = self.walk.s_first.val().replace_bit(i, self.streams[i].first.val());
            self.walk.s_err.next = self.walk.s_err.val().replace_bit(i, self.streams[i].err.val());
            self.streams[i].out_ready.next = false;
            if self.ri.q.val().index() == i {
                self.walk.s_data.next = self.streams[i].out_data.val();
                self.walk.s_keep.next = self.streams[i].out_keep.val();
                self.walk.s_last.next = self.streams[i].out_last.val();
                self.walk.s_valid.next = self.streams[i].out_valid.val();
                self.streams[i].out_ready.next = self.walk.s_ready.val();
            }
        }
        self.spare_ready.bits.next = self.rd_ready.val();
        self.spare_cpl.bits.next = self.cpl_valid.val();
        self.rd_addr.next = self.addrs.val() >> self.addr_pad.val();
        self.rd_len.next = self.lens.val() >> self.len_pad.val();
        if self.walk.s_start.val() {
            self.wi.d.next = self.wi.q.val() + 1;
            if self.wi.q.val() == self.last.val() {
                self.wi.d.next = 0.into();
            }
        }
        if self.walk.s_ready.val() & self.walk.s_valid.val() & self.walk.s_last.val() {
            self.ri.d.next = self.ri.q.val() + 1;
            if self.ri.q.val() == self.last.val() {
                self.ri.d.next = 0.into();
            }
        }
        if self.reset.val() {
            self.wi.d.next = 0.into();
            self.ri.d.next = 0.into();
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
        // Verified in Verilator on its own (sim/tests/one_sge.rs) and in the core's lockstep.
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
