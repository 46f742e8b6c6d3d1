//! One READ response's step in RTL (`hdl::engine::resp::read::ReadStep`) against the model's
//! `resp::take_read` and `resp::read_failed`: random QP contexts at any path MTU with a random response ring
//! (any head, any items behind, the ACK slot full or empty) whose first item is a READ (first response or
//! not, any bytes left: none, less than, exactly or many times the path MTU); the response's PSN, opcode,
//! AETH, VA and length, the item after it, and the `qp_resp` records after it and after a failed read (with
//! the fatal NAK and its slot) compared bit for bit with the model's packed ones.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test read_step`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::qp::RespItem;
use model::nic::resp::{read_failed, take_read};
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_ring};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::ext::syndrome;
use wire::{Opcode, Position, Psn};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x4EAD_57E9)
}

#[test]
fn a_read_response_steps_as_the_model_steps_it() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let depth = p.resp_queue as usize;
    let mut rtl = Sim::new(Top::ReadStep, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_resp, p_item) = (q("attr"), q("resp"), q("item"));
    let (p_psn, p_opcode, p_has_aeth, p_aeth, p_va, p_len, p_last) =
        (q("psn"), q("opcode"), q("has_aeth"), q("aeth"), q("va"), q("len"), q("last"));
    let (p_item_next, p_slot, p_next, p_err, p_nak, p_nak_slot) =
        (q("item_next"), q("slot"), q("resp_next"), q("resp_err"), q("nak"), q("nak_slot"));
    let (resp_bytes, item_bytes) = (c.resp.width().div_ceil(8) as usize, c.resp_item.width().div_ceil(8) as usize);
    let mut rng = Rng::new(seed);
    let mut seen = [0u32; 4];
    for n in 0..20_000 {
        let mut qp = random_qp(&mut rng, &p);
        qp.attrs.pmtu = [0, 256, 512, 1024, 2048, 4096][rng.below(6) as usize];
        let pmtu = qp.attrs.path_mtu();
        random_ring(&mut rng, &mut qp.resp, depth);
        let resid = match rng.below(5) {
            0 => 0,
            1 => 1 + rng.below(u64::from(pmtu)) as u32,
            2 => pmtu,
            3 => pmtu * (2 + rng.below(8) as u32),
            _ => rng.below(1 << 31) as u32,
        };
        let read = RespItem::Read {
            psn: Psn::new(rng.below(1 << 24) as u32),
            va: if rng.chance(0.1) { u64::MAX - rng.below(8192) } else { rng.next_u64() },
            resid,
            at_base: rng.chance(0.5),
            msn: rng.below(1 << 24) as u32,
        };
        qp.resp.out.push_front(read.clone());
        let before = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&before.attr));
        rtl.set_bytes(p_resp, &bytes_of(&before.resp));
        rtl.set_bytes(p_item, &bytes_of(&before.items[0]));
        rtl.tick();
        let mut sent = qp.clone();
        let r = take_read(&mut sent, pmtu).expect("a READ is first");
        let mut failed = qp.clone();
        take_read(&mut failed, pmtu);
        read_failed(&mut failed, r.psn);
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: {read:?} at PMTU {pmtu}, ring {:?}: model {r:?}",
            qp.resp
        );
        let opcode = match r.pos {
            Position::First => Opcode::RDMA_READ_RESPONSE_FIRST,
            Position::Middle => Opcode::RDMA_READ_RESPONSE_MIDDLE,
            Position::Last => Opcode::RDMA_READ_RESPONSE_LAST,
            Position::Only => Opcode::RDMA_READ_RESPONSE_ONLY,
        };
        let last = matches!(r.pos, Position::Last | Position::Only);
        assert_eq!(rtl.get(p_psn), u64::from(r.psn.value()), "PSN: {ctx}");
        assert_eq!(rtl.get(p_opcode), u64::from(opcode.0), "opcode: {ctx}");
        assert_eq!(rtl.get(p_has_aeth) == 1, r.pos != Position::Middle, "AETH: {ctx}");
        assert_eq!(rtl.get(p_aeth), u64::from(syndrome::ACK_UNLIMITED) << 24 | u64::from(r.msn), "AETH: {ctx}");
        assert_eq!((rtl.get(p_va), rtl.get(p_len)), (r.va, u64::from(r.len)), "payload: {ctx}");
        assert_eq!(rtl.get(p_last) == 1, last, "last: {ctx}");
        assert_eq!(rtl.get(p_slot), u64::from(qp.resp.item_head), "slot: {ctx}");
        let after = pack(&sent, &c, 0).expect("the QP packs");
        assert_eq!(&rtl.get_bytes(p_next)[..resp_bytes], &bytes_of(&after.resp)[..], "qp_resp: {ctx}");
        if !last {
            assert_eq!(&rtl.get_bytes(p_item_next)[..item_bytes], &bytes_of(&after.items[0])[..], "item: {ctx}");
        }
        let after = pack(&failed, &c, 0).expect("the QP packs");
        assert_eq!(&rtl.get_bytes(p_err)[..resp_bytes], &bytes_of(&after.resp)[..], "qp_resp, failed: {ctx}");
        assert_eq!(after.items.len(), 1, "the fatal NAK alone: {ctx}");
        assert_eq!(&rtl.get_bytes(p_nak)[..item_bytes], &bytes_of(&after.items[0])[..], "NAK: {ctx}");
        assert_eq!(rtl.get(p_nak_slot), u64::from(failed.resp.item_head), "NAK slot: {ctx}");
        seen[r.pos as usize] += 1;
    }
    eprintln!("read_step: responses by position (first, middle, last, only): {seen:?}, 0 mismatches");
    assert!(seen.iter().all(|&k| k > 2000), "too few of a position: {seen:?}");
}
