//! The requester, in blocks named after the model's `req` functions: so far its segmentation of a message
//! into packets at the path MTU (`seg`, the model's `req::segment`).

pub mod seg;
