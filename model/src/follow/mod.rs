//! Following an implementation: the model replays a trace of the decisions an implementation took (which
//! stream it picked, when it accepted a frame, ran a command, fetched a WQE, fired a timer, flushed a WQE),
//! with what the host did meanwhile, checks that each decision was legal, and produces the outputs the
//! implementation must have produced. Processors are verified against their instruction-set simulators the
//! same way: the reference does not race the implementation, it follows its commit trace.
//!
//! A `Trace` is recorded from any NIC the `World` runs (`World::trace`); `Follower` replays one into a fresh
//! model; `compare` holds two runs' outputs against each other, strictly in order within each stream
//! (frames per QP and stream, data written per QP as byte extents, CQEs per CQ, QP and queue, events,
//! command results, register reads) and loosely across streams.

mod compare;
mod replay;

pub use compare::{compare, compare_counters, decode, Mismatch, StreamKey};
pub use replay::{Follower, Refusal};

use crate::nic::{Decision, NicConfig, Output};
use crate::Time;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Something the host did to its memory, which a follower's copy of that memory must see at the same point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostOp {
    Alloc { iova: u64, len: usize },
    Free { iova: u64 },
    Write { iova: u64, data: Vec<u8> },
}

/// One entry of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Host(HostOp),
    /// A frame reached the NIC's port (what the implementation's `Rx` decisions must take, in order).
    Arrive(Vec<u8>),
    Nic(Decision),
}

/// An event and the time it happened (a host event takes the time of the NIC event before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamped {
    pub time: Time,
    pub event: Event,
}

/// A NIC's run: its configuration, its events in order, what each NIC event produced, and its counters and
/// time at the end.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The NIC the trace was recorded from (a follower must be the same).
    pub config: Option<NicConfig>,
    pub events: Vec<Stamped>,
    /// Outputs, each with the index of the event that produced it.
    pub outputs: Vec<(usize, Output)>,
    /// The NIC's counters when the trace was taken.
    pub counters: Vec<u64>,
    /// When the trace was taken: the implementation had run to here.
    pub end: Time,
    time: Time,
}

impl Trace {
    /// An empty trace of a NIC of `config`.
    pub fn new(config: NicConfig) -> Self {
        Trace { config: Some(config), ..Default::default() }
    }

    /// Appends a NIC decision taken at `time` and what it produced.
    pub fn decision(&mut self, time: Time, d: Decision, outputs: Vec<Output>) {
        let i = self.events.len();
        self.time = time;
        self.events.push(Stamped { time, event: Event::Nic(d) });
        self.outputs.extend(outputs.into_iter().map(|o| (i, o)));
    }

    /// An output that came after its decision (a received WRITE's payload reaches host memory after the
    /// frame was decided): attached to the last event recorded (the reports name that event; the streams'
    /// comparison does not depend on it).
    pub fn output(&mut self, o: Output) {
        self.outputs.push((self.events.len().saturating_sub(1), o));
    }

    /// Appends a host memory operation.
    pub fn host(&mut self, op: HostOp) {
        self.events.push(Stamped { time: self.time, event: Event::Host(op) });
    }

    /// Appends a frame's arrival at the port at `time`.
    pub fn arrive(&mut self, time: Time, frame: Vec<u8>) {
        self.time = self.time.max(time);
        self.events.push(Stamped { time: self.time, event: Event::Arrive(frame) });
    }

    /// What has been recorded so far, leaving the trace to go on from here.
    pub fn take(&mut self) -> Trace {
        Trace {
            config: self.config.clone(),
            events: std::mem::take(&mut self.events),
            outputs: std::mem::take(&mut self.outputs),
            counters: Vec::new(),
            end: self.time,
            time: self.time,
        }
    }

    /// NIC decisions in the trace.
    pub fn decisions(&self) -> usize {
        self.events.iter().filter(|e| matches!(e.event, Event::Nic(_))).count()
    }
}

/// A trace being recorded, shared by the node that runs the NIC and the host memory it journals.
pub type TraceLog = Arc<Mutex<Trace>>;

/// The trace behind `log`, whether or not a holder panicked.
pub fn lock(log: &TraceLog) -> MutexGuard<'_, Trace> {
    log.lock().unwrap_or_else(PoisonError::into_inner)
}
