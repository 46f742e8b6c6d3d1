//! An atomic request's target and the value it takes, in RTL (`hdl::engine::resp::atomic::AtomicOp`), against
//! the model's `resp::atomic_result` and the request's AtomicETH: CMP_SWAP and FETCH_ADD frames (IPv4 and
//! IPv6, with and without a VLAN tag, random operands) as their RX records, the target's old value matching
//! the compare value or not, sums that wrap past 2^64.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test atomic_op`.

use hdl::top::Top;
use hdl::Width;
use model::nic::resp::atomic_result;
use model::rng::Rng;
use sim::frames::{frame, meta_of};
use sim::Sim;
use wire::Opcode;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xA70_41C)
}

#[test]
fn the_value_is_the_models() {
    let seed = seed();
    let mut rtl = Sim::new(Top::AtomicOp, Width::W8);
    let q = |n| rtl.port(n);
    let (p_meta, p_orig, p_va, p_result) = (q("meta"), q("orig"), q("va"), q("result"));
    let mut rng = Rng::new(seed);
    let (mut swapped, mut kept, mut wrapped) = (0u32, 0u32, 0u32);
    for n in 0..50_000 {
        let op = if rng.chance(0.5) { Opcode::COMPARE_SWAP } else { Opcode::FETCH_ADD };
        let (ipv6, vlan) = (rng.chance(0.5), rng.chance(0.3));
        let f = frame(&mut rng, op, ipv6, vlan, 0);
        let pkt = wire::parse(&f).expect("a well-formed frame");
        let a = pkt.hdr.ext.atomic_eth.expect("an AtomicETH");
        let orig = if rng.chance(0.4) { a.compare } else { rng.next_u64() };
        rtl.set_bytes(p_meta, &meta_of(&f, &pkt).0);
        rtl.set(p_orig, orig);
        rtl.eval();
        let kind = op.info().expect("an atomic opcode").kind;
        let want = atomic_result(kind, orig, &a);
        let ctx =
            format!("seed {seed} (FERRITE_SEED={seed}), case {n}: {} {a:?}, orig {orig:#x}", op.info().unwrap().name);
        assert_eq!(rtl.get(p_va), a.va, "the target: {ctx}");
        assert_eq!(rtl.get(p_result), want, "the value written back: {ctx}");
        if op == Opcode::COMPARE_SWAP {
            if orig == a.compare {
                swapped += 1;
            } else {
                kept += 1;
            }
        } else {
            wrapped += u32::from(orig.checked_add(a.swap_add).is_none());
        }
    }
    eprintln!("atomic_op: 50,000 atomics: {swapped} swapped, {kept} compared unequal, {wrapped} sums wrapped");
    assert!(swapped > 5000 && kept > 5000 && wrapped > 5000, "seed {seed}: too few of a kind");
}
