//! The requester, in blocks named after the model's `req` functions: the fetch of a send WQE into the
//! window (`wqe_fetch`, the model's `req::decode_send_wqe`), whether a QP may send (`ready`, the model's
//! `req::sendable`: the scheduler's ready bit), the segmentation of a message into packets at the path MTU
//! (`seg`, the model's `req::segment`), a WQE's descriptor read again for a packet (`desc`, the model's
//! `req::read_desc`), the transmit side that sends the packets (`tx`, the model's `req::next_frame`); the
//! window those WQEs wait in, what a fetch does to it and which QPs may have one to fetch (`window`).

pub mod desc;
pub mod ready;
pub mod seg;
pub mod tx;
pub mod window;
pub mod wqe_fetch;
