//! The completer, in blocks named after the model's `comp` functions: so far one step of the walk an
//! acknowledgement makes over the requester's window (`ack_step`, the model's `comp::ack_step`), and the
//! completion of an entry leaving the window (`retire`, the model's `comp::retire`).

pub mod ack_step;
pub mod retire;
