//! The core's events gathered into the counter block's increments, in RTL
//! (`hdl::engine::counts::CoreEvents`), against the model's `Nic::count` calls for the same events: a send
//! WQE fetched (`sq_wqes`), a CQE posted and one in error, an event posted or lost, an interrupt, a READ
//! response that could not be read (its NAK), an ACK or NAK sent, a packet sent again, a frame sent (and a
//! raw packet QP's), a command doorbell ignored; the frame decided, its counts and the later decisions'
//! passed through. The bytes a frame sent adds are the length of the frame `wire` builds from the same
//! record (every opcode, IPv4 and IPv6, with and without a VLAN tag, payloads of every pad), or a raw
//! frame's padded to the Ethernet minimum as the model's `raw` sends it, plus a control reply's.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test core_events`.

use hdl::rx::meta::{Meta, Verdict};
use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::frames::{frame, meta_of, opcodes};
use sim::Sim;
use wire::contract::regs::Counter;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xC0_4E57)
}

/// The one-bit events and the counter each counts in the model, by increment vector (`inc`: 0, `inc2`: 1).
const EVENTS: [(&str, Counter, usize); 12] = [
    ("fetched", Counter::sq_wqes, 0),
    ("cqe", Counter::cqes, 0),
    ("eqe", Counter::events, 0),
    ("eqe_lost", Counter::events_lost, 0),
    ("irq", Counter::interrupts, 0),
    ("ctrl_sent", Counter::tx_frames, 0),
    ("read_failed", Counter::tx_naks_remote_access, 1),
    ("tx_ack", Counter::tx_acks, 1),
    ("retransmit", Counter::retransmitted_packets, 1),
    ("tx_take", Counter::tx_frames, 1),
    ("doorbell_ignored", Counter::cmd_doorbells_ignored, 1),
    ("cqe_err", Counter::error_cqes, 0),
];

fn names(v: u64) -> Vec<&'static str> {
    Counter::ALL.iter().filter(|&&c| v >> c as usize & 1 == 1).map(|c| c.name()).collect()
}

#[test]
fn the_increments_are_the_models() {
    let seed = seed();
    let mut rtl = Sim::new(Top::CoreEvents, Width::W8);
    let ops = opcodes();
    let mut rng = Rng::new(seed);
    let (mut frames, mut raws, mut lens) = (0u32, 0u32, std::collections::BTreeSet::new());
    for n in 0..50_000 {
        // The record the TX pipeline takes: a RoCEv2 frame's, or a raw one's (its payload is the frame).
        let raw = rng.chance(0.2);
        let (meta, sent_len) = if raw {
            let len = rng.below(1500) as usize;
            let mut m = Meta::default();
            m.set("verdict", Verdict::NotRoce as u128);
            m.set("payload_len", len as u128);
            (m, len.max(wire::eth::MIN_FRAME_LEN))
        } else {
            let op = ops[rng.below(ops.len() as u64) as usize];
            let info = op.info().expect("an opcode of the table");
            let pay = if info.has_payload { rng.below(4097) as usize } else { 0 };
            let (ipv6, vlan) = (rng.chance(0.5), rng.chance(0.3));
            let f = frame(&mut rng, op, ipv6, vlan, pay);
            let p = wire::parse(&f).expect("a well-formed frame");
            (meta_of(&f, &p), f.len())
        };
        let mut on = [false; EVENTS.len()];
        for b in on.iter_mut() {
            *b = rng.chance(0.3);
        }
        let (rx_decided, rx_len, ctrl_len) = (rng.chance(0.5), rng.below(1 << 16), rng.below(1 << 11));
        let (of_frame, outcome, raw_inc) = (rng.next_u64(), rng.next_u64(), rng.next_u64());
        let p_meta = rtl.port("meta");
        rtl.set_bytes(p_meta, &meta.0);
        for ((name, _, _), &b) in EVENTS.iter().zip(&on) {
            let p = rtl.port(name);
            rtl.set(p, u64::from(b));
        }
        for (name, v) in [
            ("rx_decided", u64::from(rx_decided)),
            ("rx_len", rx_len),
            ("of_frame", of_frame),
            ("outcome", outcome),
            ("raw_inc", raw_inc),
            ("ctrl_len", ctrl_len),
        ] {
            let p = rtl.port(name);
            rtl.set(p, v);
        }
        rtl.eval();
        // What the model counts for these events.
        let mut want = [outcome | raw_inc | if rx_decided { of_frame } else { 0 }, 0];
        let cqe = on[1];
        for ((name, c, v), &b) in EVENTS.iter().zip(&on) {
            // An error CQE is one of the CQEs posted.
            if b && (*name != "cqe_err" || cqe) {
                want[*v] |= 1 << *c as usize;
            }
        }
        let tx_take = on[9];
        if tx_take && raw {
            want[1] |= 1 << Counter::raw_tx_frames as usize;
        }
        let ctrl = if on[5] { ctrl_len } else { 0 };
        let tx_bytes = if tx_take { sent_len as u64 } else { 0 } + ctrl;
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: events {:?}, raw {raw}, frame of {sent_len} bytes",
            EVENTS.iter().zip(&on).filter(|(_, &b)| b).map(|(e, _)| e.0).collect::<Vec<_>>()
        );
        let (inc, inc2) = (rtl.get(rtl.port("inc")), rtl.get(rtl.port("inc2")));
        assert_eq!(names(inc), names(want[0]), "inc: {ctx}");
        assert_eq!(inc, want[0], "inc, bit for bit: {ctx}");
        assert_eq!(names(inc2), names(want[1]), "inc2: {ctx}");
        assert_eq!(inc2, want[1], "inc2, bit for bit: {ctx}");
        assert_eq!(rtl.get(rtl.port("rx_add")), if rx_decided { rx_len } else { 0 }, "rx_bytes: {ctx}");
        assert_eq!(rtl.get(rtl.port("tx_add")), tx_bytes, "tx_bytes: {ctx}");
        if tx_take {
            frames += 1;
            raws += u32::from(raw);
            lens.insert(sent_len);
        }
    }
    eprintln!("core_events: 50,000 cases, {frames} frames sent ({raws} raw) of {} lengths", lens.len());
    assert!(frames > 10_000 && raws > 2000 && lens.len() > 1000, "seed {seed}: too few frames");
}
