//! ferrite `model`: the golden model. A whole RoCEv2 NIC as an executable spec behind the same registers,
//! commands, rings and descriptors as the RTL (all from `wire`), plus the network simulator that connects
//! NICs through links and an ECN-marking switch.
//!
//! The NIC sees only what hardware sees: MMIO, host memory via DMA, Ethernet frames. All time is simulated
//! (picoseconds), and every random choice comes from a seed, so a run is exact and repeatable. The NIC takes
//! no step on its own: each is a decision, taken by the model's scheduler (`sched`) or read from another
//! implementation's trace and checked (`follow`).
//! It knows nothing about verbs objects on the host side: that is the driver's business.

pub mod follow;
pub mod hostmem;
pub mod net;
pub mod nic;
pub mod posted;
pub mod rng;
pub mod sched;

/// Simulated time in picoseconds.
pub type Time = u64;

/// Picoseconds per nanosecond.
pub const PS_PER_NS: Time = 1000;

pub use hostmem::{Dma, DmaError, HostMemory, OwnLine, Regions};
pub use nic::{Nic, NicConfig};
pub use posted::PostedWrites;
