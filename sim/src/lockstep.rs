//! Lockstep: the model follows the RTL core's decisions and every output of the core is held against the
//! model's (`model::follow`). `CoreSim` records its run as a `Trace`: the host's memory operations (through
//! `HostMemory`'s journal), each register write and read the core took, each command it completed; its
//! outputs are the values its register reads returned and the command results it wrote to the mailbox. The
//! follower replays each new part of the trace into its own model NIC, refusing a decision the model could
//! not have taken, and `compare` holds the two sets of outputs against each other stream by stream.

use model::follow::{compare, decode, lock, Follower, Mismatch, Trace, TraceLog};
use model::nic::{NicConfig, Output};
use std::sync::{Arc, Mutex};
use wire::contract::cmd::{MAILBOX_LEN, OUT, OUT_HDR};

/// Cycles before the previous check that a mismatch's waves window starts at.
const WAVES_BEFORE: u64 = 1_000;

/// Bytes of a command's output as the mailbox holds it (from `OUT` to the end).
const OUT_LEN: usize = MAILBOX_LEN - OUT;

/// What lockstep has checked so far (as the tools' JSON reports carry it).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// Decisions the model followed.
    pub events: usize,
    /// Outputs that differed, or decisions the model refused.
    pub mismatches: usize,
    /// The first of them, decoded, with the cycle it was found at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

impl Report {
    /// A run's failure when the model disagreed with the core.
    pub fn failure(&self) -> Option<String> {
        (self.mismatches > 0).then(|| {
            format!(
                "lockstep: {} mismatches in {} decisions; first: {}",
                self.mismatches,
                self.events,
                self.first.as_deref().unwrap_or("?")
            )
        })
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the model followed {} decisions of the core, {} mismatches", self.events, self.mismatches)
    }
}

/// The recording and the follower.
pub struct Lockstep {
    /// The trace the core's run is recorded into (shared with the host memory's journal).
    pub log: TraceLog,
    follower: Follower,
    /// Events of the trace already followed, and the follower's outputs already compared.
    events_done: usize,
    outputs_done: usize,
    /// The cycle of the last check: what the next one finds happened after it.
    checked_at: u64,
    report: Report,
}

impl Lockstep {
    /// A follower of a NIC of `cfg` (the core's twin), and an empty trace.
    pub fn new(cfg: NicConfig) -> Lockstep {
        Lockstep {
            log: Arc::new(Mutex::new(Trace::new(cfg.clone()))),
            follower: Follower::new(cfg),
            events_done: 0,
            outputs_done: 0,
            checked_at: 0,
            report: Report::default(),
        }
    }

    /// Follows what was recorded since the last check and compares the outputs; `cycle` names the moment
    /// in the report.
    pub fn check(&mut self, cycle: u64) {
        let since = std::mem::replace(&mut self.checked_at, cycle);
        let chunk = lock(&self.log).take();
        let base = self.events_done;
        self.events_done += chunk.events.len();
        let decisions = match self.follower.follow(&chunk) {
            Ok(n) => n,
            Err(r) => {
                self.note(since, cycle, format!("the model refused event {}: {r}", base + r.event));
                return;
            }
        };
        self.report.events += decisions;
        let got: Vec<(usize, Output)> =
            self.follower.outputs()[self.outputs_done..].iter().map(|(i, o)| (base + i, normal(o))).collect();
        self.outputs_done = self.follower.outputs().len();
        let want: Vec<(usize, Output)> = chunk.outputs.iter().map(|(i, o)| (base + i, normal(o))).collect();
        for m in compare(&want, &got) {
            self.note(since, cycle, describe(&m));
        }
    }

    /// A mismatch found at `cycle`, from what happened after cycle `since` (with the waves that show it).
    fn note(&mut self, since: u64, cycle: u64, what: String) {
        self.report.mismatches += 1;
        if self.report.first.is_none() {
            // The decision may have been taken a little before the last check (its outputs after it).
            let from = since.saturating_sub(WAVES_BEFORE);
            self.report.first = Some(format!("cycle {cycle}: {what} ({})", crate::waves_hint(from, cycle)));
        }
    }

    /// The model NIC following the core.
    pub fn model(&self) -> &model::nic::Nic {
        &self.follower.nic
    }

    pub fn report(&self) -> &Report {
        &self.report
    }
}

/// A command's output as the mailbox holds it: zero-padded to the mailbox's end (the model's is the
/// command's own length; the core writes the whole mailbox tail).
fn normal(o: &Output) -> Output {
    match o {
        Output::Command { opcode, status, syndrome, out } if *status != wire::contract::cmd::Status::BadMailbox => {
            let mut padded = out.clone();
            padded.resize(OUT_LEN, 0);
            Output::Command { opcode: *opcode, status: *status, syndrome: *syndrome, out: padded }
        }
        o => o.clone(),
    }
}

fn describe(m: &Mismatch) -> String {
    format!(
        "{:?} #{}: core (event {:?}) {}; model (event {:?}) {}",
        m.stream, m.index, m.want_event, m.want, m.got_event, m.got
    )
}

/// The command result a core wrote: the mailbox's opcode, and the output header and output it wrote back
/// (`tail`, the mailbox from `OUT_HDR` on).
pub fn command_output(opcode: u16, tail: &[u8]) -> Output {
    use wire::contract::cmd::{CmdOutHeaderRepr, Status};
    let hdr = CmdOutHeaderRepr::from_bytes(tail).unwrap_or_default();
    Output::Command {
        opcode,
        status: Status::from_u8(hdr.status),
        syndrome: hdr.syndrome,
        out: tail[OUT - OUT_HDR..].to_vec(),
    }
}

/// Decodes an output (for reports).
pub fn show(o: &Output) -> String {
    decode(o, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::nic::Decision;
    use wire::contract::regs::id;

    fn twin() -> NicConfig {
        crate::core::model_twin(16, hdl::Width::W8)
    }

    /// A register value the model would not have read, and a decision it could not have taken, are each
    /// reported; what agrees is not.
    #[test]
    fn differences_and_refusals_are_reported() {
        let mut l = Lockstep::new(twin());
        let read = |val| (Decision::MmioRead { off: id::MAX_QP }, vec![Output::Register { off: id::MAX_QP, val }]);
        let (d, o) = read(16);
        lock(&l.log).decision(1000, d, o);
        l.check(1);
        assert_eq!((l.report().events, l.report().mismatches), (1, 0));
        let (d, o) = read(17);
        lock(&l.log).decision(2000, d, o);
        l.check(2);
        assert_eq!(l.report().mismatches, 1);
        assert!(
            l.report()
                .first
                .as_deref()
                .is_some_and(|f| f.starts_with("cycle 2") && f.contains("0x11") && f.contains("FERRITE_WAVES=0:2 ")),
            "{:?}",
            l.report()
        );
        lock(&l.log).decision(3000, Decision::Command, Vec::new());
        l.check(3);
        assert_eq!(l.report().mismatches, 2, "a command with none pending is refused");
    }

    /// The core writes the whole mailbox tail; the model's output is the command's own length: padded alike.
    #[test]
    fn command_outputs_compare_as_the_mailbox_holds_them() {
        let mut tail = vec![0u8; MAILBOX_LEN - OUT_HDR];
        tail[OUT - OUT_HDR + 3] = 5;
        let core = command_output(0x10, &tail);
        let model = Output::Command {
            opcode: 0x10,
            status: wire::contract::cmd::Status::Ok,
            syndrome: 0,
            out: vec![0, 0, 0, 5],
        };
        assert_eq!(normal(&core), normal(&model));
        tail[OUT - OUT_HDR + 50] = 1;
        assert_ne!(normal(&command_output(0x10, &tail)), normal(&model), "a stray byte past the output");
    }
}
