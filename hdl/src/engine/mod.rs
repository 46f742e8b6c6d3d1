//! The transport engine, in blocks named after the model's functions: so far the command unit (`cmd`), the
//! RX route (`recv`, the model's `recv::route`), the TX headers (`headers`) and the responder's check chain
//! (`resp::check`).

pub mod cmd;
pub mod headers;
pub mod recv;
pub mod resp;
