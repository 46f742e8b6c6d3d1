//! The soak in CI: seeded scenarios on both hardware profiles, and the follower's self-test (every NIC's
//! decisions replayed into a fresh model, as recorded and legally perturbed; illegal decisions refused). A
//! failure prints its seed and the command that replays it.

use model::follow::{compare, Event, Follower, Trace};
use model::nic::timer::{tick_of, tick_start, TimerKind, TIMER_TOLERANCE};
use model::nic::{Decision, Output, Stream, TxPick};
use model::NicConfig;
use testbench::soak::{soak, Follow, Options, Report, Scenario};
use wire::contract::profile::Profile;

fn failures(rep: &Report, flags: &str) -> String {
    rep.failures
        .iter()
        .map(|f| {
            format!(
                "seed {} (replay: ferrite soak --seed {} --scenarios 1 {flags}): {}\n  shrunk: {:?}\n  fails with: {}",
                f.seed, f.seed, f.error, f.shrunk, f.shrunk_error
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn all_pass(first: u64, n: u64, opts: Options, flags: &str) -> Report {
    let rep = soak(first, n, &opts, |_, _| {});
    assert!(rep.failures.is_empty(), "{} of {n} failed:\n{}", rep.failures.len(), failures(&rep, flags));
    assert_eq!(rep.passed, n);
    rep
}

#[test]
fn two_hundred_random_scenarios_pass_on_the_board_profile() {
    let rep = all_pass(1, 200, Options::default(), "--profile board");
    assert!(rep.totals.retransmitted > 0, "the impairments were exercised");
}

#[test]
fn random_scenarios_pass_on_the_large_profile() {
    all_pass(1, 40, Options { profile: Profile::large(), follow: None }, "--profile large");
}

/// Each scenario's decisions, replayed as recorded into a fresh model: every output identical.
#[test]
fn the_follower_replays_recorded_decisions_exactly() {
    let opts = Options { profile: Profile::board(), follow: Some(Follow::Exact) };
    let rep = all_pass(1, 60, opts, "--follow exact");
    assert!(rep.totals.follow_events > 100_000, "{} decisions followed", rep.totals.follow_events);
    assert_eq!((rep.totals.follow_mismatches, rep.totals.illegal_decisions), (0, 0));
}

/// The same scenarios with every decision taken at another legal time or in another legal order: the
/// soak's invariants hold, and the follower finds every decision legal and every output the same.
#[test]
fn perturbed_decisions_keep_every_invariant_and_are_followed() {
    let opts = Options { profile: Profile::board(), follow: Some(Follow::Perturb) };
    let rep = all_pass(1, 60, opts, "--follow perturb");
    assert!(rep.totals.follow_events > 100_000);
    assert_eq!((rep.totals.follow_mismatches, rep.totals.illegal_decisions), (0, 0));
}

fn fires_ack_timer(t: &Trace) -> bool {
    t.events.iter().any(|e| matches!(e.event, Event::Nic(Decision::Timer { timer: TimerKind::Ack, .. })))
}

/// A recorded trace of a NIC whose ACK timer fired (a scenario with loss), for the refusal tests.
fn recorded() -> (Trace, NicConfig) {
    let trace = (1..50)
        .filter(|&s| Scenario::generate(s).faults.loss > 0.0)
        .flat_map(|s| testbench::soak::record(&Scenario::generate(s), Profile::board()).expect("the scenario passes"))
        .find(fires_ack_timer)
        .expect("a scenario among the first 50 whose ACK timer fires");
    (trace, NicConfig::default())
}

fn refused(t: &Trace, cfg: &NicConfig) -> String {
    Follower::new(cfg.clone()).follow(t).expect_err("refused").to_string()
}

#[test]
fn illegal_decisions_are_refused_naming_the_event() {
    let (trace, cfg) = recorded();
    assert!(Follower::new(cfg.clone()).follow(&trace).is_ok(), "the trace as recorded is legal");
    let timer_at = trace
        .events
        .iter()
        .position(|e| matches!(e.event, Event::Nic(Decision::Timer { timer: TimerKind::Ack, .. })))
        .expect("an ACK timer fired");
    // The timer fired in the tick before the one it was due in: moved to follow the last decision of an
    // earlier tick.
    let mut early = trace.clone();
    let fired = early.events.remove(timer_at);
    let due = tick_of(fired.time);
    let before =
        early.events[..timer_at].iter().rposition(|e| tick_of(e.time) < due && matches!(e.event, Event::Nic(_)));
    let before = before.expect("a decision in an earlier tick");
    let at = model::follow::Stamped { time: early.events[before].time, event: fired.event.clone() };
    early.events.insert(before + 1, at);
    let e = refused(&early, &cfg);
    assert!(e.starts_with(&format!("event {} ", before + 1)) && e.contains("(early)"), "{e}");
    // A decision stamped before the one before it.
    let mut back = trace.clone();
    back.events[timer_at].time = tick_start(due) - 1;
    if back.events[..timer_at].iter().any(|e| e.time > tick_start(due) - 1) {
        assert!(refused(&back, &cfg).contains("before the decision before it"));
    }
    // The same timer not fired for longer than the tolerance: the next decision (a register read, legal in
    // itself) is refused for it.
    let mut late = trace.clone();
    late.events.truncate(timer_at);
    let read = Decision::MmioRead { off: wire::contract::regs::id::BASE };
    let ok_at = tick_start(due + TIMER_TOLERANCE);
    late.events.push(model::follow::Stamped { time: ok_at, event: Event::Nic(read.clone()) });
    assert!(Follower::new(cfg.clone()).follow(&late).is_ok(), "late within the tolerance is legal");
    late.events.push(model::follow::Stamped { time: tick_start(due + TIMER_TOLERANCE + 1), event: Event::Nic(read) });
    let e = refused(&late, &cfg);
    assert!(e.starts_with(&format!("event {} ", timer_at + 1)) && e.contains("has not fired"), "{e}");
    // A QP picked while it had nothing to send, at the start (no QP exists yet), and a command run with none
    // pending.
    let mut idle = trace.clone();
    let t = idle.events[0].time;
    let tx = Decision::Tx(TxPick::Qp { qpn: 2, stream: Stream::Requester });
    idle.events.insert(0, model::follow::Stamped { time: t, event: Event::Nic(tx) });
    let e = refused(&idle, &cfg);
    assert!(e.starts_with("event 0 ") && e.contains("QP 0x2's Requester"), "{e}");
    let mut cmd = trace.clone();
    cmd.events.insert(0, model::follow::Stamped { time: t, event: Event::Nic(Decision::Command) });
    assert!(refused(&cmd, &cfg).contains("no command is pending"));
}

/// The comparison fails on a changed output, naming the stream, the event and both sides decoded.
#[test]
fn a_changed_output_is_a_mismatch_with_both_sides_decoded() {
    let (trace, cfg) = recorded();
    let mut f = Follower::new(cfg);
    f.follow(&trace).unwrap();
    assert!(compare(&trace.outputs, f.outputs()).is_empty());
    let mut bent = trace.outputs.clone();
    let i = bent.iter().position(|(_, o)| matches!(o, Output::Frame { .. })).unwrap();
    if let (_, Output::Frame { frame, .. }) = &mut bent[i] {
        let last = frame.len() - 1;
        frame[last] ^= 1;
    }
    let m = compare(&bent, f.outputs());
    assert_eq!(m.len(), 1, "{m:?}");
    let text = m[0].to_string();
    assert!(text.contains(&format!("recorded at event {}", bent[i].0)) && text.contains("bth"), "{text}");
    let mut cqe = trace.outputs.clone();
    let i = cqe.iter().position(|(_, o)| matches!(o, Output::Cqe { .. })).unwrap();
    cqe.remove(i);
    assert!(!compare(&cqe, f.outputs()).is_empty(), "a missing CQE");
}
