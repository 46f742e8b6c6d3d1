//! The driver's one error type: each variant names the operation that failed.

use wire::contract::cmd::Status;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    #[error("device refused {op}: {status} (syndrome {syndrome:#x})")]
    Command { op: &'static str, status: Status, syndrome: u32 },
    #[error("device did not finish command {0}")]
    CommandTimeout(&'static str),
    #[error("{0} queue is full")]
    QueueFull(&'static str),
    #[error("DMA to unmapped memory at {iova:#x} (+{len})")]
    Dma { iova: u64, len: usize },
    #[error("not a ferrite device or an incompatible contract version ({0:#x})")]
    BadDevice(u32),
    #[error("QP is in a state that does not allow this: {0}")]
    BadState(&'static str),
    #[error("{0}: timed out")]
    Timeout(&'static str),
    #[error("{0}")]
    Network(&'static str),
    /// The device's register blocks are not the contract this driver speaks.
    #[error("{0}")]
    Contract(String),
    /// A VFIO set-up problem, saying what is missing and what to do.
    #[error("{0}")]
    Vfio(String),
}
