//! ferrite `driver`: verbs shaped like libibverbs over a `Backend` (MMIO + DMA memory + progress + interrupts).
//!
//! Owns: the host side of the contract in `wire` (command mailboxes, ring producer/consumer counters,
//! WQE encoding, CQE ownership) and the verbs objects. Knows nothing about how the device is built:
//! the golden model, the RTL simulation and VFIO hardware all sit behind the same trait.

mod backend;
mod error;
mod events;
pub mod netdev;
pub mod oob;
pub mod pair;
pub mod realtime;
pub mod rtl;
mod verbs;
pub mod vfio;

pub use backend::{lock_world, shared, Backend, ModelBackend, SharedWorld};
pub use error::Error;
pub use events::AsyncEvent;
pub use verbs::*;
pub use wire::contract::verbs::{access, attr, QpState, WcOpcode, WcStatus};
pub use wire::contract::wqe::{send_flags, SendOp};
