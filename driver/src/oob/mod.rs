//! The out-of-band exchanges of the standard tools, over the host's TCP (`netdev::Stack`): what each side
//! tells the other before RDMA starts. Formats as rdma-core's and perftest's sources define them.

pub mod perftest;
mod pingpong;

pub use pingpong::{PingpongDest, PINGPONG_DONE, PINGPONG_MSG_LEN, PINGPONG_PORT};
