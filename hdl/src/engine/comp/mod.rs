//! The completer, in blocks named after the model's `comp` functions: one step of the walk an
//! acknowledgement makes over the requester's window (`ack_step`, the model's `comp::ack_step`), the walk a
//! positive ACK makes and the pop of a finished entry off the window's front (`ack`, the model's
//! `comp::on_ack` and `comp::retire`), what a READ response or an atomic ACK does after that walk (`resp`,
//! the model's `comp::on_read_response` and `comp::on_atomic_ack`), and the completion of an entry leaving
//! the window (`retire`).

pub mod ack;
pub mod ack_step;
pub mod resp;
pub mod retire;
