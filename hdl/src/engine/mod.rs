//! The transport engine, in blocks named after the model's functions: so far the command unit (`cmd`), the
//! RX route (`recv`, the model's `recv::route`), the TX headers (`headers`), the responder's check chain and
//! bookkeeping (`resp`), the requester's (`req`), the completer's (`comp`), completion queues (`cq`), the
//! event queue (`eq`), the MR check (`mr`), the flush of a QP in ERR (`flush`), the dispatch of each
//! received frame (`dispatch`, `recv::receive`), the NIC's own ARP and ICMP echo replies (`raw`) and what they count (`counts`, `Nic::count`).

pub mod cmd;
pub mod comp;
pub mod counts;
pub mod cq;
pub mod dispatch;
pub mod eq;
pub mod flush;
pub mod headers;
pub mod mr;
pub mod raw;
pub mod recv;
pub mod req;
pub mod resp;
