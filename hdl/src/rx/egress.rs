//! Byte-lane blocks of the RX egress, generated as Verilog (see `kit`): the record slicer that completes the
//! metadata with the ICRC verdict, the funnel shifter that realigns the payload to lane 0, and the lane mask.

use super::meta::{self, Verdict};
use crate::kit::*;

/// Completes a decoded record: `meta_out` is `rec` with the final verdict (the decoder's, or `BadIcrc` when
/// the decoder accepted the frame and the ICRC check failed) and the received ICRC; also slices out what the
/// egress steers by. The payload of a frame that is not RoCEv2 is the whole frame (for the raw path): from
/// byte 0, `frame_len` long.
#[derive(Clone, Debug, LogicBlock)]
pub struct RecordFields<const K: usize> {
    pub rec: Signal<In, Bits<{ meta::BITS }>>,
    pub icrc_ok: Signal<In, Bit>,
    pub icrc: Signal<In, Bits<32>>,
    pub meta_out: Signal<Out, Bits<{ meta::BITS }>>,
    pub verdict: Signal<Out, Bits<4>>,
    /// Beat index of the first payload byte, and its lane.
    pub first_beat: Signal<Out, Bits<16>>,
    pub shift: Signal<Out, Bits<8>>,
    pub payload_len: Signal<Out, Bits<16>>,
}

impl<const K: usize> Default for RecordFields<K> {
    fn default() -> Self {
        RecordFields {
            rec: Signal::default(),
            icrc_ok: Signal::default(),
            icrc: Signal::default(),
            meta_out: Signal::default(),
            verdict: Signal::default(),
            first_beat: Signal::default(),
            shift: Signal::default(),
            payload_len: Signal::default(),
        }
    }
}

fn slice(name: &str) -> String {
    meta::select("rec", name)
}

impl<const K: usize> Logic for RecordFields<K> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.meta_out.connect();
        self.verdict.connect();
        self.first_beat.connect();
        self.shift.connect();
        self.payload_len.connect();
    }

    fn hdl(&self) -> Verilog {
        let (vl, vb) = meta::field("verdict");
        let (il, ib) = meta::field("icrc");
        let lg = K.trailing_zeros();
        custom_module([
            "always @(*) begin".to_string(),
            format!("    verdict = {};", slice("verdict")),
            format!(
                "    if (verdict == 4'd{} && !icrc_ok) verdict = 4'd{};",
                Verdict::Ok as u8,
                Verdict::BadIcrc as u8
            ),
            "    meta_out = rec;".into(),
            format!("    meta_out[{}:{}] = verdict;", vl + vb - 1, vl),
            format!("    meta_out[{}:{}] = icrc;", il + ib - 1, il),
            format!("    first_beat = {} >> {lg};", slice("payload_off")),
            format!("    shift = {{8'd0, {}}} & 8'd{};", slice("payload_off"), K - 1),
            format!("    payload_len = {};", slice("payload_len")),
            format!("    if (verdict == 4'd{}) begin", Verdict::NotRoce as u8),
            "        first_beat = 16'd0;".into(),
            "        shift = 8'd0;".into(),
            format!("        payload_len = {};", slice("frame_len")),
            "    end".into(),
            "end".into(),
        ])
    }
}

/// `out` = the `K` bytes starting at lane `shift` of `lo` and continuing into `hi`.
#[derive(Clone, Debug, LogicBlock)]
pub struct Funnel<const D: usize> {
    pub lo: Signal<In, Bits<D>>,
    pub hi: Signal<In, Bits<D>>,
    pub shift: Signal<In, Bits<8>>,
    pub out: Signal<Out, Bits<D>>,
}

impl<const D: usize> Default for Funnel<D> {
    fn default() -> Self {
        Funnel { lo: Signal::default(), hi: Signal::default(), shift: Signal::default(), out: Signal::default() }
    }
}

impl<const D: usize> Logic for Funnel<D> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.out.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module([
            format!("wire [{}:0] both = {{hi, lo}};", 2 * D - 1),
            format!("wire [{}:0] moved = both >> {{shift, 3'b000}};", 2 * D - 1),
            format!("always @(*) out = moved[{}:0];", D - 1),
        ])
    }
}

/// `keep` with lanes `0 .. min(n, K)` set.
#[derive(Clone, Debug, LogicBlock)]
pub struct LaneMask<const K: usize> {
    pub n: Signal<In, Bits<16>>,
    pub keep: Signal<Out, Bits<K>>,
}

impl<const K: usize> Default for LaneMask<K> {
    fn default() -> Self {
        LaneMask { n: Signal::default(), keep: Signal::default() }
    }
}

impl<const K: usize> Logic for LaneMask<K> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.keep.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module([
            "integer l;".to_string(),
            format!("always @(*) for (l = 0; l < {K}; l = l + 1) keep[l] = n > l[15:0];"),
        ])
    }
}
