//! Network simulator: NICs connected by links (rate, delay, seeded loss, reordering, duplication, bit
//! corruption) directly or through a switch with per-port egress queues and RED-style ECN marking. One event
//! loop drives everything on the simulated clock; a pcap tap can record any link.

mod link;
mod switch;
mod world;

pub use link::{FrameFault, Impairments, LinkConfig, LinkStats};
pub use switch::EcnConfig;
pub use world::{Node, World};
