//! A duplicate READ matched against one kept READ in RTL (`hdl::engine::resp::dup_read::DupRead`) against
//! the model's `resp::find_read`: a QP at any path MTU keeping one resource (a READ of any length, near
//! PSN 0 or the 2^24 wrap, near the top of the address space; or an atomic), and requests drawn around it
//! (PSNs before, inside and past its range, VAs and lengths inside, across and outside it, its R_Key or
//! another); whether the resource covers the request and the request lies within it compared with whether
//! the model regenerates it, and the item's first-response flag and MSN when it does; and whether a duplicate
//! atomic of the same PSN hits the resource (`find_atomic`), with its MSN and original value.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test dup_read`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::qp::{Resource, ResourceKind, RespItem};
use model::nic::resp::{find_atomic, find_read};
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::ext::RethRepr;
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xD0B1_EAD5)
}

/// A value near `base`: equal, a little before or after, or anywhere.
fn near(rng: &mut Rng, base: i64, span: i64) -> i64 {
    match rng.below(4) {
        0 => base,
        1 => base - 1 - rng.below(span as u64) as i64,
        2 => base + rng.below(span as u64) as i64,
        _ => rng.next_u64() as i64,
    }
}

#[test]
fn a_duplicate_read_matches_as_the_model_finds_it() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::DupRead, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_res, p_psn, p_va, p_len, p_rkey) = (q("attr"), q("res"), q("psn"), q("va"), q("len"), q("rkey"));
    let (p_covers, p_part, p_base, p_msn) = (q("covers"), q("part"), q("at_base"), q("msn"));
    let (p_hit, p_word) = (q("hit"), q("word"));
    let mut hits = 0u32;
    let mut rng = Rng::new(seed);
    let (mut found, mut outside, mut uncovered, mut at_base) = (0u32, 0u32, 0u32, 0u32);
    for n in 0..100_000 {
        let mut qp = random_qp(&mut rng, &p);
        qp.attrs.pmtu = [0, 256, 512, 1024, 2048, 4096][rng.below(6) as usize];
        let pmtu = qp.attrs.path_mtu();
        let first = Psn::new(match rng.below(3) {
            0 => rng.below(16) as u32,
            1 => (1 << 24) - 1 - rng.below(16) as u32,
            _ => rng.below(1 << 24) as u32,
        });
        let len = match rng.below(4) {
            0 => 0,
            1 => 1 + rng.below(u64::from(pmtu)) as u32,
            2 => pmtu * (1 + rng.below(8) as u32),
            _ => rng.below(1 << 20) as u32,
        };
        let va = if rng.chance(0.1) { u64::MAX - rng.below(1 << 21) } else { rng.next_u64() >> rng.below(40) };
        let rkey = rng.next_u64() as u32;
        let npkts = len.div_ceil(pmtu).max(1);
        let kind = if rng.chance(0.1) {
            ResourceKind::Atomic { orig: rng.next_u64() }
        } else {
            ResourceKind::Read { last_psn: first.add(npkts - 1), va, len, rkey }
        };
        qp.resp.resources = [Resource { first_psn: first, msn: rng.below(1 << 24) as u32, kind }].into();
        qp.resp.res_head = rng.below(256) as u8;
        // The request: a later part of the READ (or something near it).
        let within = rng.below(u64::from(npkts)) as i64;
        let k = near(&mut rng, within, 4);
        let psn = first.add(k as u32);
        let skip = u64::from(pmtu) * (k.clamp(0, i64::from(npkts)) as u64);
        let r_va = near(&mut rng, va.wrapping_add(skip) as i64, 64) as u64;
        let r_len = match rng.below(3) {
            0 => len.saturating_sub(skip as u32),
            1 => near(&mut rng, i64::from(len.saturating_sub(skip as u32)), 64).clamp(0, i64::from(u32::MAX)) as u32,
            _ => rng.next_u64() as u32,
        };
        let r_rkey = if rng.chance(0.9) { rkey } else { rng.next_u64() as u32 };
        let reth = RethRepr { va: r_va, rkey: r_rkey, dma_len: r_len };
        let want = find_read(&qp, psn, reth);
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set_bytes(p_res, &bytes_of(&packed.resources[0]));
        rtl.set(p_psn, u64::from(psn.value()));
        rtl.set(p_va, reth.va);
        rtl.set(p_len, u64::from(reth.dma_len));
        rtl.set(p_rkey, u64::from(reth.rkey));
        rtl.eval();
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: request PSN {psn:?} {reth:?} at PMTU {pmtu} against {:?}: \
             model {want:?}",
            qp.resp.resources[0]
        );
        // A duplicate atomic of the same PSN: the atomic executed there, or none.
        let atomic = find_atomic(&qp, psn);
        assert_eq!(rtl.get(p_hit) == 1, atomic.is_some(), "atomic hit: {ctx}");
        if let Some(RespItem::AtomicAck { aeth, orig, .. }) = atomic {
            assert_eq!((rtl.get(p_word), rtl.get(p_msn)), (orig, u64::from(aeth.msn)), "atomic ACK: {ctx}");
            hits += 1;
        }
        let covers =
            matches!(kind, ResourceKind::Read { last_psn, .. } if psn.diff(first) >= 0 && last_psn.diff(psn) >= 0);
        assert_eq!(rtl.get(p_covers) == 1, covers, "covers: {ctx}");
        let got = covers && rtl.get(p_part) == 1;
        assert_eq!(got, want.is_some(), "regenerated: {ctx}");
        if let Some(RespItem::Read { at_base: base, msn, .. }) = want {
            assert_eq!((rtl.get(p_base) == 1, rtl.get(p_msn)), (base, u64::from(msn)), "item: {ctx}");
            found += 1;
            at_base += u32::from(base);
        } else if covers {
            outside += 1;
        } else {
            uncovered += 1;
        }
    }
    eprintln!(
        "dup_read: {found} regenerated ({at_base} from the first response), {outside} outside, {uncovered} not covered; \
         {hits} atomics hit"
    );
    assert!(
        found > 5000 && at_base > 1000 && found - at_base > 1000 && outside > 5000 && uncovered > 5000 && hits > 1000,
        "too few of a kind"
    );
}
