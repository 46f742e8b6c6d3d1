//! The RX header decoder in Verilator, locked to `wire::parse`: proptest frames of every opcode, IPv4 and
//! IPv6, with and without VLAN, every pad count, random payload lengths, truncation, bit flips and Ethernet
//! padding. The drop verdict (cause, layer, IP reason) must be wire's; for accepted frames every metadata
//! field must be wire's. (The ICRC is the ingress's job: the decoder is held to `wire::parse_headers`,
//! which makes every check of `wire::parse` but that one.)

use hdl::rx::decode::{HDR_BYTES, LATENCY, PARAM_LATENCY};
mod common;

use hdl::rx::meta::Meta;
use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use proptest::prelude::*;
use sim::frames::{damage, frame, meta_of, opcodes, verdict, Damage};
use sim::Sim;

fn damage_strategy() -> impl Strategy<Value = Damage> {
    prop_oneof![
        3 => Just(Damage::None),
        2 => (0u16..1000).prop_map(Damage::Truncate),
        2 => (0u16..1000, 0u8..8).prop_map(|(p, b)| Damage::Flip(p, b)),
        3 => (0u8..80, 0u8..8).prop_map(|(i, b)| Damage::FlipHeader(i, b)),
        1 => (1u8..32).prop_map(Damage::Pad),
        1 => (0u8..16).prop_map(Damage::Oversize),
    ]
}

/// The decoder's outputs for frame `f`: the record, and the lane parameters (VLAN, IPv6, IP end). The
/// window holds noise past `f`'s end; the inputs hold `f` for one cycle only, then change to noise (`rng`):
/// every stage must register what it needs.
fn decode(sim: &mut Sim, rng: &mut Rng, f: &[u8]) -> (Meta, (bool, bool, u64)) {
    let (hdr, len, meta) = (sim.port("hdr"), sim.port("len"), sim.port("meta"));
    let (vlan, ipv6, ip_end) = (sim.port("vlan"), sim.port("ipv6"), sim.port("ip_end"));
    // Past the frame's end the window holds whatever came before: noise.
    let mut h = vec![0; HDR_BYTES];
    rng.fill(&mut h);
    let n = f.len().min(HDR_BYTES);
    h[..n].copy_from_slice(&f[..n]);
    sim.set_bytes(hdr, &h);
    sim.set(len, f.len() as u64);
    let mut params = (false, false, 0);
    for cycle in 1..=LATENCY {
        sim.tick();
        let mut noise = vec![0; HDR_BYTES];
        rng.fill(&mut noise);
        sim.set_bytes(hdr, &noise);
        sim.set(len, rng.next_u64() & 0xffff);
        if cycle == PARAM_LATENCY {
            sim.eval();
            params = (sim.get(vlan) != 0, sim.get(ipv6) != 0, sim.get(ip_end));
        }
    }
    sim.eval();
    (Meta(sim.get_bytes(meta)), params)
}

#[test]
fn decoder_matches_wire() {
    let sim = std::cell::RefCell::new(Sim::new(Top::RxDecode, Width::W8));
    let ops = opcodes();
    let strategy = (0..ops.len(), any::<bool>(), any::<bool>(), 0usize..1500, any::<u64>(), damage_strategy());
    let (mut runner, seed) = common::runner(3000);
    let accepted = std::cell::Cell::new(0);
    let result = runner.run(&strategy, |(op, v6, vlan, len, seed, d)| {
        let f = damage(frame(&mut Rng::new(seed), ops[op], v6, vlan, len), d);
        let (got, (vlan, ipv6, ip_end)) = decode(&mut sim.borrow_mut(), &mut Rng::new(!seed), &f);
        let parsed = wire::parse_headers(&f);
        let (want, layer, why) = verdict(&parsed);
        prop_assert_eq!(
            (got.get("verdict") as u8, got.get("layer") as u8, got.get("ip_reject") as u8),
            (want as u8, layer, why),
            "{:?} on {:02x?}",
            parsed.err(),
            f
        );
        if let Ok(p) = parsed {
            let mut want = meta_of(&f, &p);
            want.set("frame_len", f.len() as u128);
            let eth_len = if want.get("vlan") != 0 { 18 } else { 14 };
            let ip_hl = if want.get("ipv6") != 0 { 40 } else { 20 };
            prop_assert_eq!(
                (vlan, ipv6, ip_end),
                (
                    want.get("vlan") != 0,
                    want.get("ipv6") != 0,
                    (eth_len + ip_hl) as u64 + want.get("ip_payload_len") as u64
                )
            );
            prop_assert_eq!(got, want);
            accepted.set(accepted.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("FERRITE_SEED={seed}: {e}");
    }
    assert!(accepted.get() > 1000, "the mix must exercise accepted frames: {}", accepted.get());
}
