//! Byte-lane blocks of the TX pipeline, generated as Verilog (see `kit`): payload lanes masked by `keep`,
//! and the ICRC written over the frame's last four bytes.

use crate::kit::*;

/// `out` = `data` with the lanes `keep` does not cover zeroed.
#[derive(Clone, Debug, LogicBlock)]
pub struct KeepData<const D: usize, const K: usize> {
    pub data: Signal<In, Bits<D>>,
    pub keep: Signal<In, Bits<K>>,
    pub out: Signal<Out, Bits<D>>,
}

impl<const D: usize, const K: usize> Default for KeepData<D, K> {
    fn default() -> Self {
        KeepData { data: Signal::default(), keep: Signal::default(), out: Signal::default() }
    }
}

impl<const D: usize, const K: usize> Logic for KeepData<D, K> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.out.connect();
    }

    fn hdl(&self) -> Verilog {
        let lanes: Vec<String> = (0..K).rev().map(|l| format!("{{8{{keep[{l}]}}}}")).collect();
        custom_module([format!("always @(*) out = data & {{{}}};", lanes.join(", "))])
    }
}

/// `out` = `data` (beat `beat` of a `flen`-byte frame) with bytes `flen - 4 .. flen` replaced by `icrc`,
/// least significant byte first.
#[derive(Clone, Debug, LogicBlock)]
pub struct IcrcInsert<const D: usize, const K: usize> {
    pub data: Signal<In, Bits<D>>,
    pub beat: Signal<In, Bits<16>>,
    pub flen: Signal<In, Bits<16>>,
    pub icrc: Signal<In, Bits<32>>,
    pub out: Signal<Out, Bits<D>>,
}

impl<const D: usize, const K: usize> Default for IcrcInsert<D, K> {
    fn default() -> Self {
        IcrcInsert {
            data: Signal::default(),
            beat: Signal::default(),
            flen: Signal::default(),
            icrc: Signal::default(),
            out: Signal::default(),
        }
    }
}

impl<const D: usize, const K: usize> Logic for IcrcInsert<D, K> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.out.connect();
    }

    fn hdl(&self) -> Verilog {
        let shift = K.trailing_zeros();
        let mut v = vec![
            "integer l;".to_string(),
            "reg [16:0] o;".into(),
            "always @(*) begin".into(),
            "    out = data;".into(),
            format!("    for (l = 0; l < {K}; l = l + 1) begin"),
            format!("        o = ({{1'b0, beat}} << {shift}) + l[16:0];"),
        ];
        for t in 0..4 {
            v.push(format!(
                "        if (o + 17'd{} == {{1'b0, flen}}) out[8*l +: 8] = icrc[{}:{}];",
                4 - t,
                8 * t + 7,
                8 * t
            ));
        }
        v.extend(["    end".to_string(), "end".to_string()]);
        custom_module(v)
    }
}
