//! ferrite `wire`: the single source of truth for every layout.
//!
//! Owns: packet headers (and the ARP and ICMP echo layouts the NIC answers itself) (zero-copy views plus
//! validated `Repr`s with parse/emit), the opcode table, PSN arithmetic, the ICRC, the host/NIC contract
//! (register map, commands, doorbells, WQE and CQE layouts, hardware profiles) and the packed QP context
//! layout (`layout`, `contract::qpc`).
//! Knows nothing about queues, timers or state: the model, the RTL generator, the driver and the tests
//! all take their offsets from here and nowhere else.

#[doc(hidden)]
pub mod field;

pub mod arp;
pub mod bth;
pub mod contract;
mod error;
pub mod eth;
pub mod ext;
pub mod icmp;
pub mod icrc;
pub mod ipv4;
pub mod ipv6;
pub mod layout;
pub mod opcode;
pub mod psn;
pub mod roce;
pub mod udp;

pub use bth::{Bth, BthRepr};
pub use error::Error;
pub use opcode::{OpInfo, OpKind, Opcode, Position};
pub use psn::Psn;
pub use roce::{parse, parse_headers, DropReason, ExtHeaders, IpRepr, RoceHeaders, RocePacket, MAX_FRAME_LEN};
