//! `AtomicOp`: an atomic request's operands from its RX record and the value its target takes, the model's
//! `resp::execute` for CMP_SWAP and FETCH_ADD, as generated Verilog (combinational): the target's VA (the
//! check chain has seen it aligned) and, from the value it held (`orig`, read by DMA), the value written
//! back: the swap value when a compare-and-swap's compare value matches (else `orig` again), `orig` plus the
//! add value (modulo 2^64) for a fetch-and-add.

use super::opcode_flags;
use crate::kit::*;
use crate::record::be_slice;
use crate::rx::meta;
use wire::ext::AtomicEthRepr;

#[derive(LogicBlock, Default)]
pub struct AtomicOp {
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    pub orig: Signal<In, Bits<64>>,
    pub va: Signal<Out, Bits<64>>,
    pub result: Signal<Out, Bits<64>>,
}

impl Logic for AtomicOp {
    fn update(&mut self) {
        // Verified in Verilator against the model's `resp::atomic_result` (sim/tests/atomic_op.rs).
    }

    fn connect(&mut self) {
        self.va.connect();
        self.result.connect();
    }

    fn hdl(&self) -> Verilog {
        let f = |n: &str| be_slice("meta", meta::field("atomic_eth").0, AtomicEthRepr::FIELDS, AtomicEthRepr::LEN, n);
        // The record's other fields are other blocks'.
        let mut v = vec![
            format!("wire [7:0] opcode = {};", meta::select("meta", "opcode")),
            "wire unused_meta = ^meta;".into(),
        ];
        v.extend(opcode_flags(&["k_cas"]));
        v.extend([
            format!("wire [63:0] swap_add = {};", f("swap_add")),
            format!("wire [63:0] compare = {};", f("compare")),
            "always @(*) begin".to_string(),
            format!("    va = {};", f("va")),
            "    result = k_cas ? (orig == compare ? swap_add : orig) : orig + swap_add;".into(),
            "end".into(),
        ]);
        custom_module(v)
    }
}
