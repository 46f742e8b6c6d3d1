//! The requester, in blocks named after the model's `req` functions: so far the fetch of a send WQE into
//! the window (`wqe_fetch`, the model's `req::decode_send_wqe`), whether a QP may send (`ready`, the
//! model's `req::sendable`: the scheduler's ready bit) and the segmentation of a message into packets at
//! the path MTU (`seg`, the model's `req::segment`); the window those WQEs wait in, what a fetch does to
//! it and which QPs may have one to fetch (`window`).

pub mod ready;
pub mod seg;
pub mod window;
pub mod wqe_fetch;
