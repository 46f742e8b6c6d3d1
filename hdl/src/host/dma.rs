//! `DmaReadMux`: the DMA read port shared by the engines that read host memory (the command unit's mailboxes, receive
//! WQEs and atomics' targets, READ responses' payload, and later send WQEs), as generated Verilog. Each requester has
//! one read in flight at most, and its index is the read's tag; completions come back in any order across tags (a tag's
//! own beats in order, `last` on its final one) and each goes to the requester its tag names, on shared data lines.
//! Requests are granted round robin from the one after the last granted, and a request offered and not yet taken keeps
//! the port (its address and length hold still, as a bridge expects), so no requester waits more than one turn of the
//! others.
//!
//! A read that fails is flagged on every one of its completion beats, the first included (`cpl_err`): an
//! engine may decide on a read's first beat (the READ responder does). A bridge whose host splits a read
//! into several completions and fails a later one must hold the read's beats until it knows.
//!
//! A read requested after a write beat was taken (`wr_ready`) sees that write: a READ response's payload
//! sees the WRITEs decided before it, an atomic the last one's new value. PCIe keeps that order (a read does
//! not pass a posted write); a bridge to a fabric that does not (AXI's separate read and write channels)
//! must hold reads until the writes before them are acknowledged.

use crate::kit::*;

/// The most requesters a mux serves (tags 0 to 7).
pub const MAX_REQUESTERS: usize = 8;

/// Generic in the completion beat (`D` bits), which it passes through.
#[derive(LogicBlock, Default)]
pub struct DmaReadMux<const D: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The requesters' reads: requester `i`'s bit, address (`64i+63:64i`) and length (`16i+15:16i`).
    pub rq_valid: Signal<In, Bits<MAX_REQUESTERS>>,
    pub rq_ready: Signal<Out, Bits<MAX_REQUESTERS>>,
    pub rq_addr: Signal<In, Bits<{ 64 * MAX_REQUESTERS }>>,
    pub rq_len: Signal<In, Bits<{ 16 * MAX_REQUESTERS }>>,
    /// The completion beat is requester `i`'s when its bit is set; data, error and last are shared.
    pub cp_valid: Signal<Out, Bits<MAX_REQUESTERS>>,
    pub cp_data: Signal<Out, Bits<D>>,
    pub cp_err: Signal<Out, Bit>,
    pub cp_last: Signal<Out, Bit>,
    /// The host side: tagged reads out, completions in.
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub rd_tag: Signal<Out, Bits<8>>,
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<D>>,
    pub cpl_tag: Signal<In, Bits<8>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    requesters: Param<usize>,
}

impl<const D: usize> DmaReadMux<D> {
    /// A mux for `n` requesters (tags 0 to `n - 1`).
    pub fn new(n: usize) -> Self {
        assert!((1..=MAX_REQUESTERS).contains(&n), "1 to {MAX_REQUESTERS} requesters");
        DmaReadMux { requesters: Param(n), ..Default::default() }
    }
}

impl<const D: usize> Logic for DmaReadMux<D> {
    fn update(&mut self) {
        // Verified in Verilator (sim/tests/dma_read_mux.rs).
    }

    fn connect(&mut self) {
        self.rq_ready.connect();
        self.cp_valid.connect();
        self.cp_data.connect();
        self.cp_err.connect();
        self.cp_last.connect();
        self.rd_valid.connect();
        self.rd_addr.connect();
        self.rd_len.connect();
        self.rd_tag.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(self.requesters.0))
    }
}

/// The Verilog body of `DmaReadMux` for `n` requesters. The round robin and the selects are written out as
/// constant cases: yosys makes a divider of a `%` by a non-power of two and a barrel shifter of a variable
/// `+:` offset (12,273 LUT4 and 6,254 carries for five requesters, where the cases take a few hundred).
pub fn verilog(n: usize) -> Vec<String> {
    let m = MAX_REQUESTERS;
    let mut v = vec![
        "// The requester granted last, and whether its offer waits (it keeps the port).".to_string(),
        "reg [2:0] last_g;".into(),
        "reg waiting;".into(),
        "reg [2:0] g;".into(),
        "reg any;".into(),
        "// Round robin: the first valid requester after the last granted (itself last).".into(),
        "always @(*) begin".into(),
        "    g = last_g; any = 1'b0;".into(),
        "    if (waiting) any = 1'b1;".into(),
        "    else case (last_g)".into(),
    ];
    for lg in 0..n {
        let label = if lg + 1 == n { "default".to_string() } else { format!("3'd{lg}") };
        let chain: Vec<String> = (1..=n)
            .map(|k| (lg + k) % n)
            .map(|i| format!("if (rq_valid[{i}]) begin g = 3'd{i}; any = 1'b1; end"))
            .collect();
        v.push(format!("        {label}: {}", chain.join(" else ")));
    }
    v.extend([
        "    endcase".to_string(),
        "end".into(),
        "always @(*) begin".into(),
        "    rd_valid = any;".into(),
        "    case (g)".into(),
    ]);
    for i in 0..n {
        let label = if i + 1 == n { "default".to_string() } else { format!("3'd{i}") };
        v.push(format!(
            "        {label}: begin rd_addr = rq_addr[{}:{}]; rd_len = rq_len[{}:{}]; end",
            64 * i + 63,
            64 * i,
            16 * i + 15,
            16 * i
        ));
    }
    v.extend([
        "    endcase".to_string(),
        "    rd_tag = {5'd0, g};".into(),
        format!("    rq_ready = {m}'d0;"),
        "    rq_ready[g] = any && rd_ready;".into(),
        format!("    cp_valid = {m}'d0;"),
        format!("    cp_valid[cpl_tag[2:0]] = cpl_valid && cpl_tag < 8'd{n};"),
        "    cp_data = cpl_data;".into(),
        "    cp_err = cpl_err;".into(),
        "    cp_last = cpl_last;".into(),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    if (any) last_g <= g;".into(),
        "    waiting <= any && !rd_ready;".into(),
        "    if (reset) begin last_g <= 3'd0; waiting <= 1'b0; end".into(),
        "end".into(),
    ]);
    if n < m {
        // Requesters past `n` are not there: their inputs are not looked at (Verilator's `*unused*` names).
        v.push(format!(
            "wire unused_rq = ^{{rq_valid[{}:{n}], rq_addr[{}:{}], rq_len[{}:{}]}};",
            m - 1,
            64 * m - 1,
            64 * n,
            16 * m - 1,
            16 * n
        ));
    }
    v
}
