//! ferrite `hdl`: the RoCEv2 datapath as rust-hdl blocks, emitted as Verilog.
//!
//! Owns: the RTL. Every layout and constant comes from `wire`; the blocks are checked against `wire` in
//! Verilator by the `sim` crate. rust-hdl is reached only through `kit`, our thin layer over it.
//!
//! Datapath width: rust-hdl's `Bits<N>` cannot take `N = 8 * K` from a const generic `K` on stable Rust, so
//! every stream block carries two const generics, data bits `D` and byte lanes `K`, checked `D == 8 * K` at
//! construction; `Width` names the two widths we build (8 and 64 bytes).

pub mod bit_table;
pub mod bram_queue;
pub mod core;
pub mod crc;
pub mod delay;
pub mod dp16kd;
pub mod engine;
pub mod host;
pub mod kit;
pub mod prefetch;
pub mod queue;
pub mod record;
pub mod rx;
pub mod store_ram;
pub mod top;
pub mod tx;
pub mod width;

pub use width::Width;
