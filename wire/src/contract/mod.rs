//! The host/NIC contract: what the driver and the NIC (model or RTL) agree on. Register map, command
//! mailboxes, doorbells, and the WQE/CQE layouts of the rings in host memory. Every field has one definition
//! here; the model, the RTL generator and the driver all use it.
//!
//! Shape (after mlx5 and Corundum): BAR0 holds a linked list of self-describing register blocks, a command
//! interface with mailboxes in host memory, and per-queue doorbell registers. Send, receive and completion
//! queues are power-of-two rings in host memory; CQEs carry an owner bit that flips on each pass. One event
//! queue per device carries completion events and asynchronous errors, signalled by an interrupt.

pub mod cmd;
pub mod cqe;
pub mod eqe;
pub mod pci;
pub mod profile;
pub mod qpc;
pub mod regs;
pub mod verbs;
pub mod wqe;
