//! `Delay<N>`: a bit delayed by `N >= 1` clock cycles (a shift register), to keep a valid strobe in step with
//! a pipelined block. Generated Verilog (see `kit`): `#[hdl_gen]` has no shift by a generic amount.

use crate::kit::*;

#[derive(Clone, Debug, LogicBlock)]
pub struct Delay<const N: usize> {
    pub clock: Signal<In, Clock>,
    pub d: Signal<In, Bit>,
    pub q: Signal<Out, Bit>,
}

impl<const N: usize> Default for Delay<N> {
    fn default() -> Self {
        assert!(N >= 1, "a delay of at least one cycle");
        Delay { clock: Signal::default(), d: Signal::default(), q: Signal::default() }
    }
}

impl<const N: usize> Logic for Delay<N> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate), inside the pipelines that use it.
    }

    fn connect(&mut self) {
        self.q.connect();
    }

    fn hdl(&self) -> Verilog {
        let shift = if N == 1 { "sr <= d;".to_string() } else { format!("sr <= {{sr[{}:0], d}};", N - 2) };
        custom_module([
            format!("reg [{}:0] sr = {N}'d0;", N - 1),
            format!("always @(posedge clock) {shift}"),
            format!("always @(*) q = sr[{}];", N - 1),
        ])
    }
}
