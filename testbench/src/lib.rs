//! ferrite `testbench`: suites that cross crates. The interop harness against Linux soft-RoCE in a QEMU
//! guest (`interop`), and the soak: seeded random scenarios of every verb
//! over several QPs and impaired links, run through the driver on the golden model, checked end to end
//! (completions, data, atomics, termination, the model's own invariants), and shrunk when one fails.
//!
//! It owns no layout and no transport logic: it drives the verbs and reads host memory like an application.

pub mod interop;
pub mod soak;
