//! `RxIngress`: the boundary between a MAC and the RX pipeline. A MAC cannot be told to wait, so frames go
//! into a FIFO of `2^L` beats as they arrive and are offered to the pipeline (`out_*`, with back-pressure)
//! only once whole and good: a frame the MAC flags with a bad FCS on its last beat, or one that finds the
//! FIFO full at any of its beats, is taken back out (the write pointer returns to the last good frame's end)
//! and counted, and nothing before it is lost. The counters clear on `clear` (a count in the same cycle
//! survives it). `pause` says the FIFO could not take a frame of the longest length now (`xoff`): a MAC
//! that can be paused (PFC, or a link that waits) starts no frame while it is high, and loses none.
//!
//! The FIFO's read is registered (block RAM): a beat moves from the RAM into the output register whenever
//! that is empty or being taken, so a waiting pipeline takes a beat every cycle.

use crate::kit::*;

#[derive(LogicBlock)]
pub struct RxIngress<const D: usize, const K: usize, const L: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The MAC's beats: no ready. `mac_fcs_bad` counts with a frame's last beat.
    pub mac_data: Signal<In, Bits<D>>,
    pub mac_keep: Signal<In, Bits<K>>,
    pub mac_last: Signal<In, Bit>,
    pub mac_valid: Signal<In, Bit>,
    pub mac_fcs_bad: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<D>>,
    pub out_keep: Signal<Out, Bits<K>>,
    pub out_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    /// Frames dropped for want of room, and for a bad FCS; both clear on `clear`.
    pub cnt_full: Signal<Out, Bits<32>>,
    pub cnt_bad_fcs: Signal<Out, Bits<32>>,
    pub clear: Signal<In, Bit>,
    /// Fewer free beats than a frame of `wire::MAX_FRAME_LEN` takes.
    pub pause: Signal<Out, Bit>,
}

/// The FIFO's fill in beats above which `pause` is high, for a FIFO of `depth` beats of `k` bytes: room
/// for one frame of the longest length is kept.
pub const fn xoff(depth: usize, k: usize) -> usize {
    depth - wire::MAX_FRAME_LEN.div_ceil(k)
}

impl<const D: usize, const K: usize, const L: usize> Default for RxIngress<D, K, L> {
    fn default() -> Self {
        assert!(D == 8 * K, "a beat of {K} bytes is {D} bits");
        RxIngress {
            clock: Signal::default(),
            reset: Signal::default(),
            mac_data: Signal::default(),
            mac_keep: Signal::default(),
            mac_last: Signal::default(),
            mac_valid: Signal::default(),
            mac_fcs_bad: Signal::default(),
            out_data: Signal::default(),
            out_keep: Signal::default(),
            out_last: Signal::default(),
            out_valid: Signal::default(),
            out_ready: Signal::default(),
            cnt_full: Signal::default(),
            cnt_bad_fcs: Signal::default(),
            clear: Signal::default(),
            pause: Signal::default(),
        }
    }
}

impl<const D: usize, const K: usize, const L: usize> Logic for RxIngress<D, K, L> {
    fn update(&mut self) {
        // Verified in Verilator against the FIFO's rules, following the pipeline's reads (sim/tests/rx_ingress.rs).
    }

    fn connect(&mut self) {
        self.out_data.connect();
        self.out_keep.connect();
        self.out_last.connect();
        self.out_valid.connect();
        self.cnt_full.connect();
        self.cnt_bad_fcs.connect();
        self.pause.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(D, K, L))
    }
}

/// The Verilog body of `RxIngress` for beats of `d` bits (`k` bytes) and a FIFO of `2^l` beats.
pub fn verilog(d: usize, k: usize, l: usize) -> Vec<String> {
    let w = d + k + 1;
    vec![
        format!("reg [{}:0] mem [0:{}];", w - 1, (1usize << l) - 1),
        // Pointers one bit wider than the address, so that full and empty differ.
        format!("reg [{l}:0] wr, good, rd;"),
        "reg dropping;".into(),
        format!("wire full = (wr - rd) == {}'d{};", l + 1, 1usize << l),
        "wire load = rd != good && (!out_valid || out_ready);".into(),
        // A beat of a frame being dropped, or one that finds no room, is not written.
        "wire drop_beat = mac_valid && (dropping || full);".into(),
        "wire put = mac_valid && !drop_beat;".into(),
        "wire end_full = mac_valid && mac_last && drop_beat;".into(),
        "wire end_fcs = put && mac_last && mac_fcs_bad;".into(),
        format!("always @(*) pause = (wr - rd) > {}'d{};", l + 1, xoff(1 << l, k)),
        "always @(posedge clock) begin".into(),
        format!("    if (put) mem[wr[{}:0]] <= {{mac_last, mac_keep, mac_data}};", l - 1),
        format!("    if (load) {{out_last, out_keep, out_data}} <= mem[rd[{}:0]];", l - 1),
        "    if (reset) begin".into(),
        format!("        wr <= {}'d0; good <= {}'d0; rd <= {}'d0;", l + 1, l + 1, l + 1),
        "        dropping <= 1'b0; out_valid <= 1'b0; cnt_full <= 32'd0; cnt_bad_fcs <= 32'd0;".into(),
        "    end else begin".into(),
        "        if (load) begin rd <= rd + 1'b1; out_valid <= 1'b1; end".into(),
        "        else if (out_ready) out_valid <= 1'b0;".into(),
        "        if (drop_beat) begin".into(),
        // The frame so far comes back out; the rest of it is not written.
        "            wr <= good;".into(),
        "            dropping <= !mac_last;".into(),
        "        end else if (put) begin".into(),
        "            if (mac_last && mac_fcs_bad) wr <= good;".into(),
        "            else begin wr <= wr + 1'b1; if (mac_last) good <= wr + 1'b1; end".into(),
        "        end".into(),
        "        cnt_full <= (clear ? 32'd0 : cnt_full) + {31'd0, end_full};".into(),
        "        cnt_bad_fcs <= (clear ? 32'd0 : cnt_bad_fcs) + {31'd0, end_fcs};".into(),
        "    end".into(),
        "end".into(),
    ]
}
