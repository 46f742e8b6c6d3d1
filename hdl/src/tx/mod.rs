//! The transmit datapath: header builder, payload merge and ICRC insertion.

pub mod header;
pub mod lanes;
pub mod pipeline;
