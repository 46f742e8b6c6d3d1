//! The completer, in blocks named after the model's `comp` functions: one step of the walk an
//! acknowledgement makes over the requester's window (`ack_step`, the model's `comp::ack_step`), the walk a
//! response makes and the pop of a finished entry off the window's front (`ack`, the model's
//! `ack_through` and `comp::retire`), what is left to do after the walk (`plan`: the cases of
//! `comp::on_ack`, `answer`, `on_data` and `retry_gap`) and doing it (`resp`: data placed,
//! the oldest WQE failed, go-back-N, an RNR wait; and the timers' ends, the model's `comp::on_timeout`
//! and `on_rnr_timer`), the three as one block the dispatch drives (`completer`, the model's
//! `comp::respond`, `ack_timer_end` and `rnr_wait_end`), the completion of an entry leaving the window
//! (`retire`), and the scan for due timers (`timer`).

pub mod ack;
pub mod ack_step;
pub mod completer;
pub mod plan;
pub mod resp;
pub mod retire;
pub mod timer;
