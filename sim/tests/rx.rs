//! The whole RX pipeline in Verilator at 8 and 64 bytes per beat, locked to `wire::parse`: batches of
//! proptest frames (every opcode, IPv4/IPv6, VLAN or not, every pad count, random lengths, truncation, bit
//! flips anywhere, Ethernet padding) go in back to back with random input bubbles while the metadata and
//! payload outputs see random back-pressure. Every frame must come out as one metadata record with wire's
//! verdict; accepted frames with wire's headers, ICRC and payload, frames that are not RoCEv2 whole (the raw
//! path's); the drop counters must add up.

use hdl::rx::meta::{Meta, Verdict};
mod common;

use hdl::top::{Top, RX_COUNTERS};
use hdl::Width;
use model::rng::Rng;
use proptest::prelude::*;
use sim::frames::{damage, frame, meta_of, opcodes, verdict, Damage};
use sim::stream::{Driver, Monitor, StreamPorts};
use sim::Sim;
use std::cell::RefCell;

type Spec = (usize, bool, bool, usize, u64, Damage);

fn damage_strategy() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => Just(Damage::None),
        1 => (1u16..1000).prop_map(Damage::Truncate),
        2 => (0u16..1000, 0u8..8).prop_map(|(p, b)| Damage::Flip(p, b)),
        2 => (0u8..80, 0u8..8).prop_map(|(i, b)| Damage::FlipHeader(i, b)),
        1 => (1u8..32).prop_map(Damage::Pad),
        1 => (0u8..16).prop_map(Damage::Oversize),
    ]
}

/// What wire says a frame must produce: the record, and the payload if accepted; a frame that is not RoCEv2
/// comes out whole, for the raw path.
fn expected(f: &[u8]) -> (Verdict, u8, u8, Option<(Meta, Vec<u8>)>) {
    let parsed = wire::parse(f);
    let (v, layer, why) = verdict(&parsed);
    let ok = parsed.ok().map(|p| {
        let mut m = meta_of(f, &p);
        m.set("icrc", u128::from(p.icrc));
        m.set("frame_len", f.len() as u128);
        (m, p.payload.to_vec())
    });
    (v, layer, why, ok)
}

/// The payload a frame must come out with, if any.
fn expected_payload(f: &[u8]) -> Option<Vec<u8>> {
    match expected(f) {
        (Verdict::NotRoce, ..) => Some(f.to_vec()),
        (.., Some((_, p))) if !p.is_empty() => Some(p),
        _ => None,
    }
}

/// Runs one batch; returns the records and payloads seen, in order, and whether everything came out before
/// the cycle limit.
fn run(
    sim: &mut Sim,
    lanes: usize,
    frames: &[Vec<u8>],
    seed: u64,
    bubble: f64,
    stall: f64,
) -> (Vec<Meta>, Vec<Vec<u8>>, bool) {
    let input = StreamPorts::find(sim, "in_", true);
    let output = StreamPorts::find(sim, "out_", true);
    let (meta_p, meta_v, meta_r) = (sim.port("meta"), sim.port("meta_valid"), sim.port("meta_ready"));
    let mut drv = Driver::new(input, lanes, seed, bubble);
    let mut mon = Monitor::new(output, seed ^ 1, stall);
    let mut rng = Rng::new(seed ^ 2);
    for f in frames {
        drv.push_frame(f);
    }
    let want_payloads = frames.iter().filter(|f| expected_payload(f).is_some()).count();
    let mut metas = Vec::new();
    let start = sim.cycles();
    while metas.len() < frames.len() || mon.frames.len() < want_payloads {
        if sim.cycles() - start > 20_000 + 4 * frames.iter().map(Vec::len).sum::<usize>() as u64 {
            return (metas, std::mem::take(&mut mon.frames), false);
        }
        drv.drive(sim);
        mon.drive(sim);
        let mr = !rng.chance(stall);
        sim.set(meta_r, u64::from(mr));
        sim.eval();
        if mr && sim.get(meta_v) != 0 {
            metas.push(Meta(sim.get_bytes(meta_p)));
        }
        mon.sample(sim);
        drv.accepted(sim);
        sim.tick();
    }
    (metas, std::mem::take(&mut mon.frames), true)
}

fn check_width(w: Width, cases: u32) {
    let lanes = w.bytes();
    let sim = RefCell::new(Sim::new(Top::Rx, w));
    let ops = opcodes();
    let spec = (0..ops.len(), any::<bool>(), any::<bool>(), 0usize..1200, any::<u64>(), damage_strategy());
    let batch = (proptest::collection::vec(spec, 1..10), any::<u64>(), 0u8..4, 0u8..4);
    let tally = RefCell::new([0u64; RX_COUNTERS.len()]);
    let (mut runner, seed) = common::runner(cases);
    let result = runner.run(&batch, |(specs, seed, b, s): (Vec<Spec>, u64, u8, u8)| {
        let frames: Vec<Vec<u8>> = specs
            .iter()
            .map(|&(op, v6, vlan, len, fseed, d)| damage(frame(&mut Rng::new(fseed), ops[op], v6, vlan, len), d))
            .filter(|f| !f.is_empty())
            .collect();
        let (bubble, stall) = (f64::from(b) * 0.2, f64::from(s) * 0.2);
        let (metas, payloads, finished) = run(&mut sim.borrow_mut(), lanes, &frames, seed, bubble, stall);
        let mut payloads = payloads.into_iter();
        for (i, (f, got)) in frames.iter().zip(&metas).enumerate() {
            let (v, layer, why, ok) = expected(f);
            tally.borrow_mut()[v as usize] += 1;
            let code = (got.get("verdict") as u8, got.get("layer") as u8, got.get("ip_reject") as u8);
            prop_assert_eq!(
                code,
                (v as u8, layer, why),
                "frame {} ({} bytes, width {}): {:02x?}",
                i,
                f.len(),
                lanes,
                f
            );
            if let Some((m, _)) = ok {
                prop_assert_eq!(got, &m, "frame {} record", i);
            }
            if let Some(payload) = expected_payload(f) {
                prop_assert_eq!(payloads.next(), Some(payload), "frame {} payload", i);
            }
        }
        prop_assert!(finished && metas.len() == frames.len(), "hang: {} of {} records", metas.len(), frames.len());
        prop_assert!(payloads.next().is_none(), "payload for a frame that should have none");
        Ok(())
    });
    if let Err(e) = result {
        panic!("FERRITE_SEED={seed}, width {lanes}: {e}");
    }
    let mut s = sim.borrow_mut();
    // The last frame retires (its trailing beats leave the store) a few cycles after its record.
    for _ in 0..200 {
        s.tick();
    }
    for (i, name) in RX_COUNTERS.iter().enumerate() {
        assert_eq!(s.get(s.port(name)), tally.borrow()[i], "width {lanes}: counter {name}");
    }
    let t = tally.borrow();
    assert!(
        t[0] > u64::from(cases)
            && t[Verdict::NotRoce as usize] > 10
            && t[Verdict::BadIcrc as usize] > 10
            && t[Verdict::TooLong as usize] > 10,
        "width {lanes}: the mix must exercise accepts, frames that are not RoCEv2, ICRC drops and overlong frames: {t:?}"
    );
}

#[test]
fn rx_pipeline_8_bytes() {
    check_width(Width::W8, 1000);
}

#[test]
fn rx_pipeline_64_bytes() {
    check_width(Width::W64, 1000);
}

/// Frames far over `wire::MAX_FRAME_LEN` (up to beyond the 16-bit length) are taken whole and dropped as
/// `TooLong`; the frames around them, and one of exactly the limit, go through.
fn overlong_frames(w: Width) {
    let mut sim = Sim::new(Top::Rx, w);
    let ops = opcodes();
    let mut rng = Rng::new(7);
    let mut good = || frame(&mut rng, ops[0], false, false, 300);
    let padded = |mut f: Vec<u8>, n: usize| {
        f.resize(n, 0x33);
        f
    };
    let max = wire::MAX_FRAME_LEN;
    let frames = vec![
        good(),
        padded(good(), 70_000),
        good(),
        padded(good(), max),
        padded(good(), max + 1),
        padded(good(), 3 * max),
        good(),
    ];
    let (metas, payloads, finished) = run(&mut sim, w.bytes(), &frames, 11, 0.3, 0.3);
    assert!(
        finished && metas.len() == frames.len(),
        "width {}: {} of {} records",
        w.bytes(),
        metas.len(),
        frames.len()
    );
    let mut want_payloads = Vec::new();
    for (i, (f, got)) in frames.iter().zip(&metas).enumerate() {
        let (v, ..) = expected(f);
        assert_eq!(got.get("verdict") as u8, v as u8, "width {}: frame {i} ({} bytes)", w.bytes(), f.len());
        want_payloads.extend(expected_payload(f));
    }
    let too_long = frames.iter().filter(|f| f.len() > max).count() as u64;
    assert_eq!(too_long, 3);
    assert_eq!(payloads, want_payloads, "width {}", w.bytes());
    for _ in 0..200 {
        sim.tick();
    }
    assert_eq!(sim.get(sim.port("cnt_too_long")), too_long);
    assert_eq!(sim.get(sim.port("cnt_ok")), frames.len() as u64 - too_long);
}

#[test]
fn overlong_frames_8_bytes() {
    overlong_frames(Width::W8);
}

#[test]
fn overlong_frames_64_bytes() {
    overlong_frames(Width::W64);
}
