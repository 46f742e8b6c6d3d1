//! `DmaPlace`: payload bytes placed in host memory at any address, the model's `Nic::place`, as generated
//! Verilog: a payload stream (realigned to lane 0, as the RX pipeline gives it: full beats, then a last beat
//! whose `keep` is a prefix; or a piece `DmaScatter` cut, whose first beat starts at `lane`) and the address
//! its first byte goes to in; posted DMA write beats out, each at a beat-aligned address with a byte strobe,
//! the payload's last one flagged.
//!
//! The payload is shifted up by its address's lane offset less its first lane (modulo a beat); the bytes
//! that spill over the top wait in a carry for the next beat, and after the last input beat one more write
//! beat takes what is left in the carry. A beat that would write nothing (a piece whose first lane is above
//! its address's: all of it spills) is not written. So a payload of `n` bytes at address `va` takes
//! ceil((va mod K + n) / K) write beats, the fewest there can be. One write beat is held in an output
//! register (`wr_*`) until `wr_ready`; the input waits meanwhile and while the carry is being written.

use crate::kit::*;

#[derive(LogicBlock)]
pub struct DmaPlace<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    /// Synchronous reset: no write pending, the next input beat a payload's first.
    pub reset: Signal<In, Bit>,
    pub in_data: Signal<In, Bits<D>>,
    pub in_keep: Signal<In, Bits<K>>,
    pub in_last: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    /// Where the payload's first byte goes, and the lane it is in; read with a payload's first beat. Its
    /// first beat's `keep` may start at that lane (`DmaScatter` cuts pieces from beats); the rest are whole
    /// beats and a last one whose `keep` is a prefix.
    pub va: Signal<In, Bits<64>>,
    pub lane: Signal<In, Bits<8>>,
    pub wr_valid: Signal<Out, Bit>,
    pub wr_ready: Signal<In, Bit>,
    pub wr_addr: Signal<Out, Bits<64>>,
    pub wr_data: Signal<Out, Bits<D>>,
    pub wr_strb: Signal<Out, Bits<K>>,
    /// This write beat is the payload's last.
    pub wr_last: Signal<Out, Bit>,
}

impl<const D: usize, const K: usize> Default for DmaPlace<D, K> {
    fn default() -> Self {
        assert!(D == 8 * K && K.is_power_of_two(), "a beat of {K} bytes is {D} bits");
        DmaPlace {
            clock: Signal::default(),
            reset: Signal::default(),
            in_data: Signal::default(),
            in_keep: Signal::default(),
            in_last: Signal::default(),
            in_valid: Signal::default(),
            in_ready: Signal::default(),
            va: Signal::default(),
            lane: Signal::default(),
            wr_valid: Signal::default(),
            wr_ready: Signal::default(),
            wr_addr: Signal::default(),
            wr_data: Signal::default(),
            wr_strb: Signal::default(),
            wr_last: Signal::default(),
        }
    }
}

impl<const D: usize, const K: usize> Logic for DmaPlace<D, K> {
    fn update(&mut self) {
        // Verified in Verilator against host memory as the model's `place` leaves it (sim/tests/dma_place.rs).
    }

    fn connect(&mut self) {
        self.in_ready.connect();
        self.wr_valid.connect();
        self.wr_addr.connect();
        self.wr_data.connect();
        self.wr_strb.connect();
        self.wr_last.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(K))
    }
}

/// The Verilog body of `DmaPlace` for beats of `k` bytes.
pub fn verilog(k: usize) -> Vec<String> {
    let l = k.trailing_zeros() as usize;
    let d = 8 * k;
    // The offset register and the shift amounts are `l` bits wide; at one byte a beat there is no offset.
    assert!(l >= 1, "beats of at least two bytes");
    vec![
        "reg first, flush;".to_string(),
        format!("reg [{}:0] off;", l - 1),
        "reg [63:0] addr;".into(),
        format!("reg [{}:0] carry;", d - 1),
        format!("reg [{}:0] carry_keep;", k - 1),
        "// Room for one more write beat in the output register.".into(),
        "wire room = !wr_valid || wr_ready;".into(),
        "always @(*) in_ready = room && !flush;".into(),
        "wire in_fire = in_valid && in_ready;".into(),
        // A payload whose first byte sits in a higher lane than its address's shifts up by less than that
        // lane (modulo a beat) and starts a beat lower: that beat, empty, is not written.
        format!("wire [{}:0] lane_in = lane[{}:0];", l - 1, l - 1),
        format!("wire unused_lane = ^lane[7:{l}];"),
        format!("wire [{}:0] o = first ? va[{}:0] - lane_in : off;", l - 1, l - 1),
        format!(
            "wire [63:0] base = first ? {{va[63:{l}], {l}'d0}} - (lane_in > va[{}:0] ? 64'd{k} : 64'd0) : addr;",
            l - 1
        ),
        format!("wire [{}:0] c_in = first ? {d}'d0 : carry;", d - 1),
        format!("wire [{}:0] ck_in = first ? {k}'d0 : carry_keep;", k - 1),
        // The beat shifted up by `o` bytes over the carry, and what spills over the top.
        format!("wire [{}:0] sh = {{{d}'d0, in_data}} << {{o, 3'd0}};", 2 * d - 1),
        format!("wire [{}:0] shk = {{{k}'d0, in_keep}} << o;", 2 * k - 1),
        format!("wire [{}:0] spill_keep = shk[{}:{k}];", k - 1, 2 * k - 1),
        "always @(posedge clock) begin".into(),
        "    if (reset) begin".into(),
        "        first <= 1'b1; flush <= 1'b0; wr_valid <= 1'b0; wr_last <= 1'b0;".into(),
        format!("        off <= {l}'d0; addr <= 64'd0; carry <= {d}'d0; carry_keep <= {k}'d0;"),
        "    end else begin".into(),
        "        if (wr_valid && wr_ready) wr_valid <= 1'b0;".into(),
        "        if (in_fire) begin".into(),
        format!("            wr_valid <= |(shk[{}:0] | ck_in);", k - 1),
        "            wr_addr <= base;".into(),
        format!("            wr_data <= sh[{}:0] | c_in;", d - 1),
        format!("            wr_strb <= shk[{}:0] | ck_in;", k - 1),
        "            wr_last <= in_last && spill_keep == 0;".into(),
        format!("            addr <= base + 64'd{k};"),
        "            off <= o;".into(),
        format!("            carry <= sh[{}:{d}];", 2 * d - 1),
        "            carry_keep <= spill_keep;".into(),
        "            first <= in_last;".into(),
        "            flush <= in_last && spill_keep != 0;".into(),
        "        end else if (flush && room) begin".into(),
        "            wr_valid <= 1'b1;".into(),
        "            wr_addr <= addr;".into(),
        "            wr_data <= carry;".into(),
        "            wr_strb <= carry_keep;".into(),
        "            wr_last <= 1'b1;".into(),
        "            flush <= 1'b0;".into(),
        "        end".into(),
        "    end".into(),
        "end".into(),
    ]
}
