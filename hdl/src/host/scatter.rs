//! `DmaScatter`: a payload scattered over a list of SGEs in host memory, the model's `qp::scatter_pieces`
//! (what `Nic::scatter` places), as generated Verilog in front of `DmaPlace`. Started with the SGEs (`qpc::recv_sge` records, as
//! `RecvWqe` keeps them), how many there are, the message offset the payload starts at and its length, it
//! first decides whether the payload fits the list from that offset (`fits`, the next cycle). If it does,
//! it walks to the SGE the offset falls in and cuts the payload stream (realigned to lane 0, full beats and
//! a last one whose `keep` is a prefix) into pieces at the SGEs' ends; each piece goes to `DmaPlace` as a
//! payload of its own, at its address, from the lane it starts at. A beat that holds the end of one SGE and
//! the start of the next is offered twice. If the payload does not fit, nothing is written and the payload
//! is drained. A payload of no bytes takes no beats.
//!
//! A `count` past 16 is taken as 16, and a payload stream longer than its `len` has its excess drained once
//! the SGEs run out: the walk never writes past the list, nor waits for what will not come.
//!
//! Each SGE boundary costs a cycle (the walk to the next SGE, past any of zero length) and `DmaPlace`'s
//! flush of the piece's last write beat when it spills over a beat.

use crate::engine::resp::recv_wqe::{MAX_SGE, SGES_BITS, SGE_BITS};
use crate::host::place::DmaPlace;
use crate::kit::*;
use wire::contract::qpc::recv_sge;

/// The walk: it decides, finds SGEs and cuts pieces; `DmaPlace` writes them.
#[derive(LogicBlock, Default)]
pub struct ScatterWalk<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub sges: Signal<In, Bits<SGES_BITS>>,
    pub count: Signal<In, Bits<8>>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    pub busy: Signal<Out, Bit>,
    pub fits: Signal<Out, Bit>,
    pub in_data: Signal<In, Bits<D>>,
    pub in_keep: Signal<In, Bits<K>>,
    pub in_last: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    /// Pieces for `DmaPlace`: the beat, the piece's lanes, its address and first lane, its end.
    pub p_data: Signal<Out, Bits<D>>,
    pub p_keep: Signal<Out, Bits<K>>,
    pub p_va: Signal<Out, Bits<64>>,
    pub p_lane: Signal<Out, Bits<8>>,
    pub p_last: Signal<Out, Bit>,
    pub p_valid: Signal<Out, Bit>,
    pub p_ready: Signal<In, Bit>,
    /// `DmaPlace` has nothing left to write.
    pub p_idle: Signal<In, Bit>,
}

impl<const D: usize, const K: usize> Logic for ScatterWalk<D, K> {
    fn update(&mut self) {
        // Verified in Verilator against the model's `Nic::scatter` (sim/tests/dma_scatter.rs).
    }

    fn connect(&mut self) {
        self.busy.connect();
        self.fits.connect();
        self.in_ready.connect();
        self.p_data.connect();
        self.p_keep.connect();
        self.p_va.connect();
        self.p_lane.connect();
        self.p_last.connect();
        self.p_valid.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(walk_verilog(K))
    }
}

/// The Verilog body of `ScatterWalk` for beats of `k` bytes.
pub fn walk_verilog(k: usize) -> Vec<String> {
    assert!(k <= 128, "a beat's lanes count in 8 bits");
    let l = sge_layout();
    let (a_lsb, a_w) = l.0;
    let (n_lsb, n_w) = l.1;
    let v = vec![
        "localparam IDLE = 3'd0, SEEK = 3'd1, RUN = 3'd2, DRAIN = 3'd3, END = 3'd4;".to_string(),
        "reg [2:0] st;".into(),
        format!("reg [63:0] s_addr [0:{}];", MAX_SGE - 1),
        format!("reg [31:0] s_len [0:{}];", MAX_SGE - 1),
        "reg [7:0] n_sge, j;".into(),
        "reg [31:0] skip, rem;".into(),
        "reg [63:0] at;".into(),
        "reg [7:0] c;".into(),
        "reg fits_r;".into(),
        "// The list's length, to the SGEs it has.".into(),
        "reg [39:0] total;".into(),
        "// Each loop has a variable of its own (one per always block).".into(),
        "integer it, ib, ip, il;".into(),
        "always @(*) begin".into(),
        "    total = 40'd0;".into(),
        format!("    for (it = 0; it < {MAX_SGE}; it = it + 1)"),
        format!(
            "        if (it < count) total = total + {{8'd0, sges[it * {SGE_BITS} + {} -: {n_w}]}};",
            n_lsb + n_w - 1
        ),
        "end".into(),
        "wire [39:0] need = {8'd0, off} + {8'd0, len};".into(),
        "// The SGE the walk stands at.".into(),
        "wire [31:0] cur_len = j < n_sge ? s_len[j[3:0]] : 32'd0;".into(),
        "// The beat's bytes (its keep a prefix), those left from lane c, the piece: what the SGE takes of them."
            .into(),
        "reg [8:0] nb;".into(),
        "always @(*) begin".into(),
        "    nb = 9'd0;".into(),
        format!("    for (ib = 0; ib < {k}; ib = ib + 1) if (in_keep[ib]) nb = ib + 1;"),
        "end".into(),
        "wire [8:0] avail = nb - {1'b0, c};".into(),
        "wire [31:0] piece = rem < {23'd0, avail} ? rem : {23'd0, avail};".into(),
        "wire ends_beat = piece == {23'd0, avail};".into(),
        format!("reg [{}:0] pk;", k - 1),
        "always @(*) begin".into(),
        format!("    for (ip = 0; ip < {k}; ip = ip + 1)"),
        "        pk[ip] = ip >= {24'd0, c} && ip < {24'd0, c} + piece;".into(),
        "end".into(),
        "always @(*) begin".into(),
        "    busy = st != IDLE;".into(),
        "    fits = fits_r;".into(),
        "    p_data = in_data;".into(),
        "    p_keep = pk;".into(),
        "    p_va = at;".into(),
        "    p_lane = c;".into(),
        "    p_last = piece == rem || (in_last && ends_beat);".into(),
        "    p_valid = st == RUN && in_valid;".into(),
        "    in_ready = (st == RUN && p_ready && ends_beat) || st == DRAIN;".into(),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    case (st)".into(),
        "    IDLE: if (start) begin".into(),
        format!("        for (il = 0; il < {MAX_SGE}; il = il + 1) begin"),
        format!("            s_addr[il] <= sges[il * {SGE_BITS} + {} -: {a_w}];", a_lsb + a_w - 1),
        format!("            s_len[il] <= sges[il * {SGE_BITS} + {} -: {n_w}];", n_lsb + n_w - 1),
        "        end".into(),
        format!("        n_sge <= count > 8'd{MAX_SGE} ? 8'd{MAX_SGE} : count; j <= 8'd0; skip <= off; c <= 8'd0;"),
        "        fits_r <= len == 32'd0 || need <= total;".into(),
        "        st <= len == 32'd0 ? IDLE : need <= total ? SEEK : DRAIN;".into(),
        "    end".into(),
        "    // Past the SGEs the offset (or the piece before) used up, and any of no length. A stream longer".into(),
        "    // than its `len` runs out of SGEs: the rest is drained.".into(),
        "    SEEK: if (j >= n_sge) st <= DRAIN;".into(),
        "    else if (skip >= cur_len) begin".into(),
        "        skip <= skip - cur_len; j <= j + 8'd1;".into(),
        "    end else begin".into(),
        "        at <= s_addr[j[3:0]] + {32'd0, skip}; rem <= cur_len - skip; st <= RUN;".into(),
        "    end".into(),
        "    RUN: if (in_valid && p_ready) begin".into(),
        "        at <= at + {32'd0, piece}; rem <= rem - piece;".into(),
        "        c <= ends_beat ? 8'd0 : c + piece[7:0];".into(),
        "        if (ends_beat && in_last) st <= END;".into(),
        "        else if (piece == rem) begin skip <= 32'd0; j <= j + 8'd1; st <= SEEK; end".into(),
        "    end".into(),
        "    DRAIN: if (in_valid && in_last) st <= IDLE;".into(),
        "    END: if (p_idle) st <= IDLE;".into(),
        "    default: st <= IDLE;".into(),
        "    endcase".into(),
        "    if (reset) begin st <= IDLE; fits_r <= 1'b0; end".into(),
        "end".into(),
    ];
    v
}

/// The SGE record's (lsb, width) of `addr` and `length`.
fn sge_layout() -> ((usize, usize), (usize, usize)) {
    let l = recv_sge();
    assert_eq!(l.width() as usize, SGE_BITS);
    let f = |n: &str| {
        let (lsb, w) = l.slice(n).expect("an SGE field");
        (lsb as usize, w as usize)
    };
    (f("addr"), f("length"))
}

/// `dma_scatter`: `ScatterWalk` and the `DmaPlace` it feeds.
#[derive(LogicBlock, Default)]
pub struct DmaScatter<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub sges: Signal<In, Bits<SGES_BITS>>,
    pub count: Signal<In, Bits<8>>,
    pub off: Signal<In, Bits<32>>,
    pub len: Signal<In, Bits<32>>,
    /// Between a start and the last write beat of its payload.
    pub busy: Signal<Out, Bit>,
    /// The payload fits the list from its offset (from the cycle after a start).
    pub fits: Signal<Out, Bit>,
    pub in_data: Signal<In, Bits<D>>,
    pub in_keep: Signal<In, Bits<K>>,
    pub in_last: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub wr_valid: Signal<Out, Bit>,
    pub wr_ready: Signal<In, Bit>,
    pub wr_addr: Signal<Out, Bits<64>>,
    pub wr_data: Signal<Out, Bits<D>>,
    pub wr_strb: Signal<Out, Bits<K>>,
    pub wr_last: Signal<Out, Bit>,
    walk: ScatterWalk<D, K>,
    place: DmaPlace<D, K>,
}

impl<const D: usize, const K: usize> Logic for DmaScatter<D, K> {
    #[hdl_gen]
    fn update(&mut self) {
        self.walk.clock.next = self.clock.val();
        self.walk.reset.next = self.reset.val();
        self.walk.start.next = self.start.val();
        self.walk.sges.next = self.sges.val();
        self.walk.count.next = self.count.val();
        self.walk.off.next = self.off.val();
        self.walk.len.next = self.len.val();
        self.busy.next = self.walk.busy.val();
        self.fits.next = self.walk.fits.val();
        self.walk.in_data.next = self.in_data.val();
        self.walk.in_keep.next = self.in_keep.val();
        self.walk.in_last.next = self.in_last.val();
        self.walk.in_valid.next = self.in_valid.val();
        self.in_ready.next = self.walk.in_ready.val();

        self.place.clock.next = self.clock.val();
        self.place.reset.next = self.reset.val();
        self.place.in_data.next = self.walk.p_data.val();
        self.place.in_keep.next = self.walk.p_keep.val();
        self.place.va.next = self.walk.p_va.val();
        self.place.lane.next = self.walk.p_lane.val();
        self.place.in_last.next = self.walk.p_last.val();
        self.place.in_valid.next = self.walk.p_valid.val();
        self.walk.p_ready.next = self.place.in_ready.val();
        self.walk.p_idle.next = !self.place.wr_valid.val() & self.place.in_ready.val();
        self.wr_valid.next = self.place.wr_valid.val();
        self.place.wr_ready.next = self.wr_ready.val();
        self.wr_addr.next = self.place.wr_addr.val();
        self.wr_data.next = self.place.wr_data.val();
        self.wr_strb.next = self.place.wr_strb.val();
        self.wr_last.next = self.place.wr_last.val();
    }
}
