//! ferrite `sim-rt`: links the Verilator runtime (built by `build.rs`) into whatever depends on this crate.
//! The `sim` crate's models need its symbols; nothing here is called from Rust.
