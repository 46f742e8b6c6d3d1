//! The TX pipeline in Verilator at 8 and 64 bytes per beat, locked to `wire`'s emit: proptest frames (every
//! opcode, IPv4/IPv6, VLAN or not, every pad count, random lengths) are parsed by `wire`, their record and
//! payload go into the TX pipeline with random bubbles on both inputs and random back-pressure on the
//! output, and every frame must come out byte for byte as `wire` made it (lengths, IPv4 checksum, PadCnt,
//! zero pad and ICRC included). Raw frames (the raw packet QP's: a record with verdict `NotRoce` and the rest
//! of its fields random) are mixed in and must come out as their payload, padded with zeros to 60 bytes,
//! with no ICRC.

mod common;

use hdl::rx::meta::{Meta, Verdict};
use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use proptest::prelude::*;
use sim::frames::{frame, meta_of, opcodes};
use sim::stream::{Driver, Monitor, StreamPorts};
use sim::Sim;
use std::cell::RefCell;
use std::collections::VecDeque;

/// A record, its payload, and the frame that must come out.
struct Case {
    meta: Meta,
    payload: Vec<u8>,
    want: Vec<u8>,
}

/// A RoCEv2 frame as `wire` parses it.
fn roce(f: Vec<u8>) -> Case {
    let p = wire::parse(&f).expect("generated frames are well formed");
    let (meta, payload) = (meta_of(&f, &p), p.payload.to_vec());
    Case { meta, payload, want: f }
}

/// A raw frame of `len` random bytes, its record's other fields random too.
fn raw(rng: &mut Rng, len: usize) -> Case {
    let mut payload = vec![0u8; len];
    rng.fill(&mut payload);
    let mut meta = Meta::default();
    rng.fill(&mut meta.0);
    meta.set("verdict", Verdict::NotRoce as u128);
    meta.set("payload_len", len as u128);
    let mut want = payload.clone();
    want.resize(len.max(wire::eth::MIN_FRAME_LEN), 0);
    Case { meta, payload, want }
}

/// Sends the records and payloads of `cases`; returns the frames that came out, and the cycles the output
/// paused in the middle of a frame (a MAC would underrun: there must be none).
fn run(sim: &mut Sim, lanes: usize, cases: &[Case], seed: u64, bubble: f64, stall: f64) -> (Vec<Vec<u8>>, u64) {
    let (meta_p, meta_v, meta_r) = (sim.port("meta"), sim.port("meta_valid"), sim.port("meta_ready"));
    let mut pay = Driver::new(StreamPorts::find(sim, "pay_", true), lanes, seed, bubble);
    let mut mon = Monitor::new(StreamPorts::find(sim, "out_", true), seed ^ 1, stall);
    let mut rng = Rng::new(seed ^ 2);
    let mut metas = VecDeque::new();
    for c in cases {
        metas.push_back(c.meta.clone());
        pay.push_frame(&c.payload);
    }
    let limit = sim.cycles() + 20_000 + 4 * cases.iter().map(|c| c.want.len()).sum::<usize>() as u64;
    while mon.frames.len() < cases.len() && sim.cycles() < limit {
        let offer = !metas.is_empty() && !rng.chance(bubble);
        if let Some(m) = metas.front().filter(|_| offer) {
            sim.set_bytes(meta_p, &m.0);
        }
        sim.set(meta_v, u64::from(offer));
        pay.drive(sim);
        mon.drive(sim);
        sim.eval();
        if offer && sim.get(meta_r) != 0 {
            metas.pop_front();
        }
        pay.accepted(sim);
        mon.sample(sim);
        sim.tick();
    }
    (std::mem::take(&mut mon.frames), mon.pauses)
}

fn check_width(w: Width, cases: u32) {
    let lanes = w.bytes();
    let sim = RefCell::new(Sim::new(Top::Tx, w));
    let ops = opcodes();
    // One frame in four raw, of 14 to 200 bytes (the 60-byte minimum on both sides) or up to the longest.
    let spec = (0..ops.len(), any::<bool>(), any::<bool>(), 0usize..1200, any::<u64>(), 0u8..8);
    let batch = (proptest::collection::vec(spec, 1..8), any::<u64>(), 0u8..4, 0u8..4);
    let (mut runner, seed) = common::runner(cases);
    let result = runner.run(&batch, |(specs, seed, b, s)| {
        let cases: Vec<Case> = specs
            .iter()
            .map(|&(op, v6, vlan, len, fseed, kind)| {
                let rng = &mut Rng::new(fseed);
                match kind {
                    0 => raw(rng, 14 + len % 187),
                    1 => raw(rng, 14 + len * (wire::MAX_FRAME_LEN - 14) / 1199),
                    _ => roce(frame(rng, ops[op], v6, vlan, len)),
                }
            })
            .collect();
        let (got, pauses) = run(&mut sim.borrow_mut(), lanes, &cases, seed, f64::from(b) * 0.2, f64::from(s) * 0.2);
        prop_assert_eq!(got.len(), cases.len(), "frames out (width {})", lanes);
        prop_assert_eq!(pauses, 0, "cycles without a beat mid-frame (width {})", lanes);
        for (i, (c, got)) in cases.iter().zip(&got).enumerate() {
            prop_assert_eq!(got, &c.want, "frame {} (width {})", i, lanes);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("FERRITE_SEED={seed}, width {lanes}: {e}");
    }
}

#[test]
fn tx_pipeline_8_bytes() {
    check_width(Width::W8, 500);
}

#[test]
fn tx_pipeline_64_bytes() {
    check_width(Width::W64, 500);
}

/// More frames than the frame store holds, with the output mostly stalled: assembly must stop at a full
/// store (the assembled-beat register needs one free entry) and lose nothing.
fn fill_store(w: Width) {
    let lanes = w.bytes();
    let mut sim = Sim::new(Top::Tx, w);
    let op = opcodes().into_iter().find(|o| o.info().is_some_and(|i| i.has_payload)).expect("an opcode with payload");
    let frames: Vec<Vec<u8>> =
        (0..24u64).map(|i| frame(&mut Rng::new(i), op, i % 2 == 1, i % 3 == 0, 1400 + i as usize)).collect();
    let total: usize = frames.iter().map(Vec::len).sum();
    assert!(total > hdl::top::max_frame(w) * 3 / 2, "the batch must overfill the store");
    let cases: Vec<Case> = frames.iter().cloned().map(roce).collect();
    let (got, pauses) = run(&mut sim, lanes, &cases, 7, 0.0, 0.9);
    assert_eq!(got.len(), frames.len(), "frames out (width {lanes})");
    assert_eq!(pauses, 0, "cycles without a beat mid-frame (width {lanes})");
    for (i, (want, got)) in frames.iter().zip(&got).enumerate() {
        assert_eq!(got, want, "frame {i} (width {lanes})");
    }
}

#[test]
fn tx_store_fills_8_bytes() {
    fill_store(Width::W8);
}

#[test]
fn tx_store_fills_64_bytes() {
    fill_store(Width::W64);
}
