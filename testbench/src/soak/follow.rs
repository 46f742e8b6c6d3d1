//! The follower self-test of a soak scenario: each NIC's recorded trace replayed into a fresh model, which
//! must find every decision legal and produce the same outputs, stream by stream, and the same counters.

use model::follow::{compare, compare_counters, Follower, Trace};
use model::NicConfig;
use serde::Serialize;

/// How a scenario's decisions are taken and followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Follow {
    /// The model's own scheduler, replayed as recorded.
    Exact,
    /// A perturbing scheduler (other legal orders and times), replayed as recorded.
    Perturb,
}

/// What following a run found.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Followed {
    /// Decisions replayed.
    pub events: u64,
    /// Streams whose outputs differed (and counters that differed at the end).
    pub mismatches: u64,
    /// Decisions the follower refused.
    pub illegal: u64,
}

/// Replays node `node`'s trace, taken at a quiet point, into a fresh NIC of `cfg`; `Err` describes the
/// first refusal or the mismatches.
pub fn follow(trace: &Trace, cfg: &NicConfig, node: usize) -> (Followed, Result<(), String>) {
    let mut f = Follower::new(cfg.clone());
    let mut out = Followed::default();
    match f.follow(trace).and_then(|n| f.quiet(trace.end).map(|()| n)) {
        Ok(n) => out.events = n as u64,
        Err(r) => {
            out.illegal = 1;
            return (out, Err(format!("node {node}: the follower refused {r}")));
        }
    }
    let mismatches =
        compare(&trace.outputs, f.outputs()).into_iter().chain(compare_counters(&trace.counters, f.nic.counters()));
    let report: Vec<String> = mismatches.map(|m| format!("node {node}: {m}")).collect();
    out.mismatches = report.len() as u64;
    let r = if report.is_empty() { Ok(()) } else { Err(report.join("\n")) };
    (out, r)
}
