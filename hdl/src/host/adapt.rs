//! The DMA ports' width adapters, for the engines that read and write host memory 8 bytes a beat (the
//! command unit's mailboxes, WQEs, receive WQEs, atomics' targets) on a datapath of `K` bytes a beat.
//! `CplNarrow` turns a read's completions of `K` bytes into 8-byte beats; `WriteWiden` puts an 8-byte
//! write beat into the lanes of a `K`-byte one. At 8 bytes both are wires.

use crate::kit::*;

/// The longest read a `CplNarrow` holds: its queue, in bytes (a mailbox is 256, a WQE at most 1,024).
pub const NARROW_MAX_READ: usize = 2048;

/// A requester's read through to the DMA read port, its completions (`K` bytes a beat, lane 0 the read's
/// first byte) back as 8-byte beats (`cpl_*`, `last` on the read's last, `err` on each beat of a failed
/// read), as the 8-byte requester takes them: one a cycle, never held back. The wide beats wait in a queue
/// (block RAM, `NARROW_MAX_READ` bytes) while their 8-byte pieces go out; the requester's next read is let
/// through only once the last piece of its read is out, so one read is in the queue at a time and the
/// queue always has room for it. The length of the read says where it ends.
#[derive(LogicBlock, Default)]
pub struct CplNarrow<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The requester's read, and the DMA read port's (a requester of `DmaReadMux`).
    pub rq_valid: Signal<In, Bit>,
    pub rq_ready: Signal<Out, Bit>,
    pub rq_len: Signal<In, Bits<16>>,
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    /// The wide completions in.
    pub cp_valid: Signal<In, Bit>,
    pub cp_data: Signal<In, Bits<D>>,
    pub cp_err: Signal<In, Bit>,
    pub cp_last: Signal<In, Bit>,
    /// The 8-byte completions out.
    pub cpl_valid: Signal<Out, Bit>,
    pub cpl_data: Signal<Out, Bits<64>>,
    pub cpl_err: Signal<Out, Bit>,
    pub cpl_last: Signal<Out, Bit>,
}

impl<const D: usize, const K: usize> Logic for CplNarrow<D, K> {
    fn update(&mut self) {
        // Verified in Verilator (sim/tests/cpl_narrow.rs) and with the 64-byte core in lockstep.
    }

    fn connect(&mut self) {
        self.rq_ready.connect();
        self.rd_valid.connect();
        self.cpl_valid.connect();
        self.cpl_data.connect();
        self.cpl_err.connect();
        self.cpl_last.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(narrow_verilog(K))
    }
}

/// The Verilog body of `CplNarrow` for beats of `k` bytes.
pub fn narrow_verilog(k: usize) -> Vec<String> {
    assert!(k.is_power_of_two() && k >= 8 && NARROW_MAX_READ.is_multiple_of(k));
    if k == 8 {
        return vec![
            "always @(*) begin".into(),
            "    rd_valid = rq_valid; rq_ready = rd_ready;".into(),
            "    cpl_valid = cp_valid; cpl_data = cp_data; cpl_err = cp_err; cpl_last = cp_last;".into(),
            "end".into(),
            "wire unused_len = ^rq_len;".into(),
            "wire unused_clock = clock ^ reset;".into(),
        ];
    }
    let d = 8 * k;
    let depth = NARROW_MAX_READ / k;
    let a = depth.ilog2() as usize;
    let lanes = k / 8;
    let lb = lanes.ilog2() as usize;
    vec![
        "// The queue: wide beats with their error flag, a read in it at a time.".into(),
        format!("reg [{d}:0] mem [0:{}];", depth - 1),
        format!("reg [{a}:0] wp, rp;"),
        "// The read in the queue (`busy` from its request to its last piece out), the bytes still to go out, the"
            .into(),
        "// head beat (read from the queue) and the piece of it going out next.".into(),
        "reg busy, hv;".into(),
        "reg [15:0] left;".into(),
        format!("reg [{d}:0] head;"),
        format!("reg [{}:0] j;", lb - 1),
        "wire last_piece = left <= 16'd8;".into(),
        format!("wire head_done = hv && (j == {lb}'d{} || last_piece);", lanes - 1),
        "wire load = (!hv || head_done) && wp != rp;".into(),
        "always @(*) begin".into(),
        "    rd_valid = rq_valid && !busy;".into(),
        "    rq_ready = rd_ready && !busy;".into(),
        "    cpl_valid = hv;".into(),
        "    cpl_data = head[j * 64 +: 64];".into(),
        format!("    cpl_err = head[{d}];"),
        "    cpl_last = last_piece;".into(),
        "end".into(),
        "wire unused_last = cp_last;".into(),
        "always @(posedge clock) begin".into(),
        "    if (cp_valid) begin".into(),
        format!("        mem[wp[{}:0]] <= {{cp_err, cp_data}};", a - 1),
        format!("        wp <= wp + {}'d1;", a + 1),
        "    end".into(),
        "    if (hv) begin".into(),
        format!("        j <= j + {lb}'d1;"),
        "        left <= left - 16'd8;".into(),
        "        if (last_piece) busy <= 1'b0;".into(),
        "    end".into(),
        "    if (head_done) hv <= 1'b0;".into(),
        "    if (load) begin".into(),
        format!("        head <= mem[rp[{}:0]]; rp <= rp + {}'d1; hv <= 1'b1; j <= {lb}'d0;", a - 1, a + 1),
        "    end".into(),
        "    if (rq_valid && rq_ready) begin busy <= 1'b1; left <= rq_len; end".into(),
        "    if (reset) begin wp <= 0; rp <= 0; busy <= 1'b0; hv <= 1'b0; end".into(),
        "end".into(),
    ]
}

/// An 8-byte write beat (at an 8-byte-aligned address, its strobe) as a `K`-byte one: the beat's address
/// aligned down to `K`, the data and strobe moved to the lanes the address falls in.
#[derive(LogicBlock, Default)]
pub struct WriteWiden<const D: usize, const K: usize> {
    pub addr: Signal<In, Bits<64>>,
    pub data: Signal<In, Bits<64>>,
    pub strb: Signal<In, Bits<8>>,
    pub wide_addr: Signal<Out, Bits<64>>,
    pub wide_data: Signal<Out, Bits<D>>,
    pub wide_strb: Signal<Out, Bits<K>>,
}

impl<const D: usize, const K: usize> Logic for WriteWiden<D, K> {
    fn update(&mut self) {
        // Verified with the 64-byte core in lockstep (mailboxes, atomics).
    }

    fn connect(&mut self) {
        self.wide_addr.connect();
        self.wide_data.connect();
        self.wide_strb.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(widen_verilog(K))
    }
}

/// The Verilog body of `WriteWiden` for beats of `k` bytes.
pub fn widen_verilog(k: usize) -> Vec<String> {
    assert!(k.is_power_of_two() && k >= 8);
    if k == 8 {
        return vec!["always @(*) begin wide_addr = addr; wide_data = data; wide_strb = strb; end".into()];
    }
    let lk = k.ilog2() as usize;
    vec![
        "always @(*) begin".into(),
        format!("    wide_addr = {{addr[63:{lk}], {lk}'d0}};"),
        format!("    wide_data = {{{}'d0, data}} << {{addr[{}:3], 6'd0}};", 8 * k - 64, lk - 1),
        format!("    wide_strb = {{{}'d0, strb}} << {{addr[{}:3], 3'd0}};", k - 8, lk - 1),
        "end".into(),
        "wire unused_low = ^addr[2:0];".into(),
    ]
}
