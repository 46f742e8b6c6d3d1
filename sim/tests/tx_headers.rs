//! The headers of a QP's packets, in RTL (`hdl::engine::headers`) against the model's `headers::headers`:
//! random address vectors (packed by the model's `context::pack`: IPv4-mapped and IPv6 GIDs, VLAN or not,
//! any hop limit, traffic class and flow label), random GID table entries (set or not), and the RTL's TX
//! record compared field by field with the record of the frame the model's headers emit.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test tx_headers`.

use hdl::rx::meta::Meta;
use hdl::top::Top;
use hdl::Width;
use model::nic::context::{pack, Packed};
use model::nic::dcqcn::Rp;
use model::nic::headers::headers;
use model::nic::qp::Qp;
use model::rng::Rng;
use sim::frames::HEADER_FIELDS;
use sim::responder::{be, bytes_of};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::QpState;
use wire::eth::VlanTag;
use wire::ipv6::gid_from_ipv4;
use wire::{Opcode, Psn};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0C4E_4EAD)
}

/// A GID: IPv4-mapped or not, sometimes one that is mapped but for one byte.
fn gid(rng: &mut Rng) -> [u8; 16] {
    let mut g = gid_from_ipv4((rng.next_u64() as u32).to_be_bytes());
    match rng.below(4) {
        0 | 1 => {}
        2 => g[rng.below(12) as usize] ^= 1 << rng.below(8),
        _ => rng.fill(&mut g),
    }
    g
}

#[test]
fn the_headers_match_the_model() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::TxHeaders, Width::W8);
    let port = |s: &Sim, n: &str| s.port(n);
    let (p_attr, p_gid_index, p_gid, p_gid_valid, p_mac) =
        (port(&rtl, "attr"), port(&rtl, "gid_index"), port(&rtl, "gid"), port(&rtl, "gid_valid"), port(&rtl, "mac"));
    let (p_opcode, p_psn, p_ack_req, p_meta, p_ok) =
        (port(&rtl, "opcode"), port(&rtl, "psn"), port(&rtl, "ack_req"), port(&rtl, "meta"), port(&rtl, "ok"));
    // Opcodes without extended headers, so the model's headers emit a whole frame as they are.
    let ops: Vec<Opcode> = sim::frames::opcodes().into_iter().filter(|o| o.info().unwrap().ext_len() == 0).collect();
    let mut rng = Rng::new(seed);
    let (mut v4, mut v6, mut unset) = (0u32, 0u32, 0u32);
    const CASES: u32 = 20_000;
    for n in 0..CASES {
        let mut q = Qp::new(1, 0, Rp::new(100_000, &Default::default()));
        q.state = QpState::Rts;
        let a = &mut q.attrs;
        a.dgid = gid(&mut rng);
        a.sgid_index = rng.below(16) as u8;
        rng.fill(&mut a.dmac);
        a.vlan = rng.chance(0.3).then(|| VlanTag::from_tci(rng.next_u64() as u16));
        a.hop_limit = if rng.chance(0.3) { 0 } else { rng.next_u64() as u8 };
        a.traffic_class = rng.next_u64() as u8;
        a.flow_label = rng.next_u64() as u32 & 0xF_FFFF;
        a.udp_sport = rng.next_u64() as u16;
        a.dest_qpn = rng.next_u64() as u32 & 0xFF_FFFF;
        let Packed { attr, .. } = pack(&q, &c, 0).expect("the QP packs");
        let mut mac = [0u8; 6];
        rng.fill(&mut mac);
        let sgid = rng.chance(0.9).then(|| gid(&mut rng));
        let (op, psn, ack_req) =
            (ops[rng.below(ops.len() as u64) as usize], Psn::new(rng.next_u64() as u32), rng.chance(0.5));
        rtl.set_bytes(p_attr, &bytes_of(&attr));
        rtl.set(p_mac, be(&mac) as u64);
        rtl.set(p_opcode, u64::from(op.0));
        rtl.set(p_psn, u64::from(psn.value()));
        rtl.set(p_ack_req, u64::from(ack_req));
        rtl.eval();
        assert_eq!(rtl.get(p_gid_index), u64::from(q.attrs.sgid_index), "seed {seed}, case {n}: gid_index");
        rtl.set_bytes(p_gid, &sgid.map_or(0, |g| be(&g)).to_le_bytes());
        rtl.set(p_gid_valid, u64::from(sgid.is_some()));
        rtl.tick();
        let want = headers(mac, sgid, &q.attrs, op, psn, ack_req);
        assert_eq!(rtl.get(p_ok) != 0, want.is_some(), "seed {seed} (FERRITE_SEED={seed}), case {n}: ok");
        let Some(h) = want else {
            unset += 1;
            continue;
        };
        let frame = h.emit(&[]);
        let pkt = wire::parse(&frame).expect("the model's headers make a well-formed frame");
        let expect = sim::frames::meta_of(&frame, &pkt);
        let got = Meta(rtl.get_bytes(p_meta));
        for f in HEADER_FIELDS {
            assert_eq!(
                got.get(f),
                expect.get(f),
                "seed {seed} (FERRITE_SEED={seed}), case {n}: field {f} (sgid {sgid:02x?}, attrs {:?})",
                q.attrs
            );
        }
        if matches!(h.ip, wire::IpRepr::V4(_)) {
            v4 += 1;
        } else {
            v6 += 1;
        }
    }
    eprintln!("tx_headers: {CASES} cases: {v4} IPv4, {v6} IPv6, {unset} without a source GID");
    assert!(v4 > 1000 && v6 > 1000 && unset > 500, "IPv4 {v4}, IPv6 {v6}, unset {unset}");
}
