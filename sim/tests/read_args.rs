//! A READ request's PSN and RETH fields taken from its RX record in RTL (`hdl::engine::resp::queue::ReadArgs`),
//! against what `wire::parse` reads from the frame (what the model's `resp::queue_read` is given): random
//! READ requests over IPv4 and IPv6, with and without VLAN, any PSN, VA, length and R_Key.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test read_args`.

use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::frames::{frame, meta_of};
use sim::Sim;
use wire::Opcode;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x2EAD_A265)
}

#[test]
fn the_read_arguments_are_the_frames() {
    let seed = seed();
    let mut rtl = Sim::new(Top::ReadArgs, Width::W8);
    let q = |n| rtl.port(n);
    let (p_meta, p_psn, p_va, p_len, p_rkey) = (q("meta"), q("psn"), q("va"), q("len"), q("rkey"));
    let mut rng = Rng::new(seed);
    let mut v6 = 0u32;
    for n in 0..20_000 {
        let (ipv6, vlan) = (rng.chance(0.5), rng.chance(0.3));
        let f = frame(&mut rng, Opcode::RDMA_READ_REQUEST, ipv6, vlan, 0);
        let pkt = wire::parse(&f).expect("a well-formed READ request");
        let reth = pkt.hdr.ext.reth.expect("a READ request has a RETH");
        rtl.set_bytes(p_meta, &meta_of(&f, &pkt).0);
        rtl.eval();
        let ctx = format!("seed {seed} (FERRITE_SEED={seed}), case {n}: {:?}", pkt.hdr);
        assert_eq!(rtl.get(p_psn), u64::from(pkt.hdr.bth.psn.value()), "PSN: {ctx}");
        assert_eq!(rtl.get(p_va), reth.va, "VA: {ctx}");
        assert_eq!(rtl.get(p_len), u64::from(reth.dma_len), "DMA length: {ctx}");
        assert_eq!(rtl.get(p_rkey), u64::from(reth.rkey), "R_Key: {ctx}");
        v6 += u32::from(ipv6);
    }
    eprintln!("read_args: 20,000 READ requests ({v6} over IPv6)");
    assert!(v6 > 5000, "seed {seed}: too few over IPv6");
}
