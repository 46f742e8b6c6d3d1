//! Our one door to rust-hdl 0.46 (no longer developed): the items the blocks use, and the pieces rust-hdl
//! cannot express well, which we emit as Verilog ourselves from Rust (`custom_module`). Swapping the HDL
//! layer means rewriting this file and the `#[hdl_gen]` kernels, not the generators.
//!
//! What rust-hdl could not do for us, and what we do instead:
//! - wide XOR matrices (CRC over 64 bytes per cycle): `#[hdl_gen]` has no loops over computed tables, so the
//!   matrix is computed in Rust from `wire`'s CRC and written as one `assign` per output bit;
//! - byte counting over a `keep` mask: a generated Verilog `for` loop;
//! - a shared block's outputs one user has no use for: rust-hdl leaves them dangling, which Verilator's
//!   `-Wall` rejects, so they go into a `Spare`.

// rust-hdl's derive and `#[hdl_gen]` macros expand to paths (`ast::`, `probe::`, `block::`) that must be in
// scope, so the whole prelude comes through.
pub use rust_hdl::prelude::*;

/// Verilog for a `custom_module` body: `lines` joined, indented.
pub fn custom_module(lines: impl IntoIterator<Item = String>) -> Verilog {
    let mut s = String::new();
    for l in lines {
        s.push_str("    ");
        s.push_str(&l);
        s.push('\n');
    }
    Verilog::Custom(s)
}

/// A generation-time parameter a block holds (a hardware profile, a clock rate): no signal, nothing in the
/// Verilog, read by the block's `hdl()` when it writes its body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Param<T>(pub T);

impl<T> Logic for Param<T> {
    fn update(&mut self) {}
}

impl<T> Block for Param<T> {
    fn connect_all(&mut self) {}
    fn update_all(&mut self) {}
    fn has_changed(&self) -> bool {
        false
    }
    fn accept(&self, _name: &str, _probe: &mut dyn Probe) {}
}

/// `N` bits a block has no use for (results of a shared block that serve its other users), taken in so the
/// Verilog uses them: nothing comes out, nothing is built.
#[derive(LogicBlock, Default)]
pub struct Spare<const N: usize> {
    pub bits: Signal<In, Bits<N>>,
}

impl<const N: usize> Logic for Spare<N> {
    fn update(&mut self) {}

    fn hdl(&self) -> Verilog {
        custom_module(["wire unused_bits = ^bits;".to_string()])
    }
}
