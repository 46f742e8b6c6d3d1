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
    all_pass(1, 40, Options { profile: Profile::large(), follow: None, checks: true, rtl: None }, "--profile large");
}

/// Each scenario's decisions, replayed as recorded into a fresh model: every output identical.
#[test]
fn the_follower_replays_recorded_decisions_exactly() {
    let opts = Options { profile: Profile::board(), follow: Some(Follow::Exact), checks: true, rtl: None };
    let rep = all_pass(1, 60, opts, "--follow exact");
    assert!(rep.totals.follow_events > 100_000, "{} decisions followed", rep.totals.follow_events);
    assert_eq!((rep.totals.follow_mismatches, rep.totals.illegal_decisions), (0, 0));
}

/// The same scenarios with every decision taken at another legal time or in another legal order: the
/// soak's invariants hold, and the follower finds every decision legal and every output the same.
#[test]
fn perturbed_decisions_keep_every_invariant_and_are_followed() {
    let opts = Options { profile: Profile::board(), follow: Some(Follow::Perturb), checks: true, rtl: None };
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
    // A decision stamped before the NIC decision before it.
    let mut back = trace.clone();
    let nic_events: Vec<usize> =
        (0..back.events.len()).filter(|&i| matches!(back.events[i].event, Event::Nic(_))).collect();
    let k = nic_events.windows(2).find(|w| back.events[w[0]].time > 0).map(|w| w[1]).expect("two stamped decisions");
    back.events[k].time = 0;
    let e = refused(&back, &cfg);
    assert!(e.starts_with(&format!("event {k} ")) && e.contains("before the decision before it"), "{e}");
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
    // A frame accepted that never arrived, and one accepted out of its arrival order.
    let rx = trace.events.iter().position(|e| matches!(e.event, Event::Nic(Decision::Rx(_)))).expect("a frame taken");
    let mut ghost = trace.clone();
    ghost.events.retain(|e| !matches!(e.event, Event::Arrive(_)));
    let e = refused(&ghost, &cfg);
    assert!(e.contains("no frame has arrived"), "{e}");
    let mut swapped = trace.clone();
    let arrivals: Vec<usize> = (0..rx).filter(|&i| matches!(swapped.events[i].event, Event::Arrive(_))).collect();
    if let [.., a, b] = arrivals[..] {
        let (x, y) = (swapped.events[a].event.clone(), swapped.events[b].event.clone());
        if x != y {
            (swapped.events[a].event, swapped.events[b].event) = (y, x);
            assert!(refused(&swapped, &cfg).contains("the next frame to arrive was another"));
        }
    }
    // At the end: the trace as recorded is quiet; one that stops short (frames arrived and not taken, or a
    // timer not fired) is not.
    let mut f = Follower::new(cfg.clone());
    f.follow(&trace).unwrap();
    assert!(f.quiet(trace.end).is_ok(), "the recorded run ended quiet");
    let last_rx = trace.events.iter().rposition(|e| matches!(e.event, Event::Nic(Decision::Rx(_)))).unwrap();
    let mut short = trace.clone();
    short.events.truncate(last_rx);
    let mut f = Follower::new(cfg.clone());
    f.follow(&short).unwrap();
    let e = f.quiet(short.events[last_rx - 1].time).unwrap_err().to_string();
    assert!(e.contains("never accepted") || e.contains("never fired") || e.contains("to send"), "{e}");
    let mut early_end = trace.clone();
    early_end.events.truncate(timer_at);
    let mut f = Follower::new(cfg.clone());
    f.follow(&early_end).unwrap();
    let e = f.quiet(tick_start(due)).unwrap_err().to_string();
    assert!(e.contains("never fired") || e.contains("never accepted") || e.contains("to send"), "{e}");
    // A trace of another NIC.
    let mut other = cfg.clone();
    other.profile = Profile::large();
    assert!(Follower::new(other).follow(&trace).unwrap_err().to_string().contains("recorded from a NIC"));
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
    // A CQE with the owner bit of the wrong pass: the CQE stream still matches, the ring's discipline not.
    let mut owner = trace.outputs.clone();
    if let (_, Output::Cqe { cqe, .. }) = &mut owner[i] {
        cqe.owner ^= 1;
    }
    let m = compare(&owner, f.outputs());
    assert!(m.len() == 1 && matches!(m[0].stream, model::follow::StreamKey::Ring { .. }), "{m:?}");
    assert!(m[0].to_string().contains("owner bit"));
    // A counter that differs at the end, named.
    let mut counters = trace.counters.clone();
    counters[0] += 1;
    let m = model::follow::compare_counters(&counters, f.nic.counters());
    assert!(m.len() == 1 && m[0].want.starts_with("rx_frames"), "{m:?}");
    assert!(!model::follow::compare_counters(&counters[1..], f.nic.counters()).is_empty(), "a counter missing");
}
