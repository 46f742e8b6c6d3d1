//! The responder's queuing of a sequence-error, RNR or fatal NAK, in RTL (`hdl::engine::resp::queue::RespQueue`)
//! against the model's `resp::queue_seq_nak`, `queue_rnr_nak` and `queue_fatal_nak`: random QP contexts (any minimum RNR
//! timer, a NAK outstanding or not) with random response rings (any head, any kinds queued, the ACK slot
//! full or empty), and the QP's next `qp_resp` record and the ring entries to write compared bit for bit
//! with the model's packed ones. Its READ mode likewise against `queue_read`, with random resource rings
//! (any head, up to `max_dest_rd_atomic` kept) and READs of any length at any path MTU, the resource record
//! and its slot compared too; and its duplicate READ mode against the model's queuing of a regenerated READ
//! item (or, when the key fails now, `queue_fatal_nak`); its atomic mode against `queue_atomic` (and a
//! duplicate atomic's ACK queued again).
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test resp_queue`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::qp::{Qp, Resource, ResourceKind, RespItem};
use model::nic::resp::{queue_atomic, queue_fatal_nak, queue_read, queue_rnr_nak, queue_seq_nak};
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_ring};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::ext::{syndrome, RethRepr};
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0E5E_0A4B)
}

/// A random resource ring for `qp` (any head; up to `max_dest_rd_atomic` kept, now and then up to the
/// profile's `max_qp_rd_atom`, as after MODIFY_QP lowered the limit), each resource of the kind `kind` draws.
fn random_resources(rng: &mut Rng, qp: &mut Qp, max: u32, mut kind: impl FnMut(&mut Rng) -> ResourceKind) {
    qp.resp.res_head = rng.below(256) as u8;
    let limit = if rng.chance(0.2) { max } else { u32::from(qp.attrs.max_dest_rd_atomic.max(1)) };
    let kept = rng.below(u64::from(limit) + 1) as usize;
    qp.resp.resources = (0..kept)
        .map(|_| Resource {
            first_psn: Psn::new(rng.below(1 << 24) as u32),
            msn: rng.below(1 << 24) as u32,
            kind: kind(rng),
        })
        .collect();
}

#[test]
fn a_sequence_rnr_or_fatal_nak_queues_as_the_model_queues_it() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let depth = p.resp_queue as usize;
    let mut rtl = Sim::new(Top::RespQueue, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_resp, p_rnr, p_fatal, p_syn) = (q("attr"), q("resp"), q("rnr"), q("fatal"), q("fatal_syn"));
    let (p_next, p_first, p_slot, p_two, p_second) =
        (q("resp_next"), q("first"), q("first_slot"), q("second_valid"), q("second"));
    let (resp_bytes, item_bytes) = (c.resp.width().div_ceil(8) as usize, c.resp_item.width().div_ceil(8) as usize);
    let mut rng = Rng::new(seed);
    let (mut moved, mut alone, mut rnrs, mut fatals) = (0u32, 0u32, 0u32, 0u32);
    for n in 0..20_000 {
        let mut qp = random_qp(&mut rng, &p);
        qp.attrs.min_rnr_timer = rng.below(32) as u8;
        // A sequence-error, RNR or fatal NAK (of any fatal syndrome).
        let kind = rng.below(3);
        let (rnr, fatal) = (kind == 1, kind == 2);
        let syn = [syndrome::NAK_REMOTE_OP, syndrome::NAK_INVALID_REQUEST, syndrome::NAK_REMOTE_ACCESS]
            [rng.below(3) as usize];
        let r = &mut qp.resp;
        r.nak_sent = rng.below(2) == 1;
        r.epsn = Psn::new(rng.below(1 << 24) as u32);
        r.msn = rng.below(1 << 24) as u32;
        let queued = random_ring(&mut rng, r, depth);
        let before = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&before.attr));
        rtl.set_bytes(p_resp, &bytes_of(&before.resp));
        rtl.set(p_rnr, u64::from(rnr));
        rtl.set(p_fatal, u64::from(fatal));
        rtl.set(p_syn, u64::from(syn));
        rtl.tick();
        let old = qp.resp.clone();
        if fatal {
            let epsn = qp.resp.epsn;
            queue_fatal_nak(&mut qp, syn, epsn);
            fatals += 1;
        } else if rnr {
            queue_rnr_nak(&mut qp);
            rnrs += 1;
        } else {
            queue_seq_nak(&mut qp);
        }
        let after = pack(&qp, &c, 0).expect("the QP packs");
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}, rnr {rnr}, fatal {fatal} ({syn:#x}): before {old:?}, model after {:?}",
            qp.resp
        );
        assert_eq!(&rtl.get_bytes(p_next)[..resp_bytes], &bytes_of(&after.resp)[..], "qp_resp: {ctx}");
        let new = &after.items[queued..];
        assert_eq!(rtl.get(p_two) == 1, new.len() == 2, "second entry: {ctx}");
        assert_eq!(rtl.get(p_slot), u64::from(old.item_head.wrapping_add(queued as u8)), "slot: {ctx}");
        assert_eq!(&rtl.get_bytes(p_first)[..item_bytes], &bytes_of(&new[0])[..], "first entry: {ctx}");
        if new.len() == 2 {
            assert_eq!(&rtl.get_bytes(p_second)[..item_bytes], &bytes_of(&new[1])[..], "second: {ctx}");
            moved += 1;
        } else {
            alone += 1;
        }
    }
    eprintln!(
        "resp_queue: {moved} NAKs behind a moved ACK, {alone} alone, {rnrs} of them RNR, {fatals} fatal, 0 mismatches"
    );
    assert!(moved > 4000 && alone > 4000 && rnrs > 5000 && fatals > 5000, "too few of a kind");
}

#[test]
fn a_read_queues_as_the_model_queues_it() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let depth = p.resp_queue as usize;
    let mut rtl = Sim::new(Top::RespQueue, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_resp, p_read, p_psn, p_va, p_len, p_rkey) =
        (q("attr"), q("resp"), q("read"), q("psn"), q("va"), q("len"), q("rkey"));
    let (p_next, p_first, p_two, p_second, p_res, p_res_slot) =
        (q("resp_next"), q("first"), q("second_valid"), q("second"), q("res"), q("res_slot"));
    let (resp_bytes, item_bytes, res_bytes) = (
        c.resp.width().div_ceil(8) as usize,
        c.resp_item.width().div_ceil(8) as usize,
        c.resource.width().div_ceil(8) as usize,
    );
    let mut rng = Rng::new(seed);
    let (mut moved, mut dropped, mut lowered, mut multi) = (0u32, 0u32, 0u32, 0u32);
    for n in 0..20_000 {
        let mut qp = random_qp(&mut rng, &p);
        qp.attrs.pmtu = [0, 256, 512, 1024, 2048, 4096][rng.below(6) as usize];
        let r = &mut qp.resp;
        let queued = random_ring(&mut rng, r, depth);
        random_resources(&mut rng, &mut qp, p.max_qp_rd_atom, |rng| {
            if rng.chance(0.5) {
                ResourceKind::Atomic { orig: rng.next_u64() }
            } else {
                let (va, len, rkey) = (rng.next_u64(), rng.below(1 << 31) as u32, rng.next_u64() as u32);
                ResourceKind::Read { last_psn: Psn::new(rng.below(1 << 24) as u32), va, len, rkey }
            }
        });
        let pmtu = qp.attrs.path_mtu();
        let len = match rng.below(4) {
            0 => 0,
            1 => 1 + rng.below(u64::from(pmtu)) as u32,
            2 => pmtu * (1 + rng.below(8) as u32),
            _ => rng.below(1 << 31) as u32,
        };
        let psn = Psn::new(rng.below(1 << 24) as u32);
        let reth = RethRepr { va: rng.next_u64(), rkey: rng.next_u64() as u32, dma_len: len };
        let before = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&before.attr));
        rtl.set_bytes(p_resp, &bytes_of(&before.resp));
        rtl.set(p_read, 1);
        rtl.set(p_psn, u64::from(psn.value()));
        rtl.set(p_va, reth.va);
        rtl.set(p_len, u64::from(len));
        rtl.set(p_rkey, u64::from(reth.rkey));
        rtl.tick();
        let old = qp.resp.clone();
        queue_read(&mut qp, psn, reth, pmtu);
        let after = pack(&qp, &c, 0).expect("the QP packs");
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: READ PSN {psn:?} of {len} B at PMTU {pmtu}: before {old:?}, \
             model after {:?}",
            qp.resp
        );
        assert_eq!(&rtl.get_bytes(p_next)[..resp_bytes], &bytes_of(&after.resp)[..], "qp_resp: {ctx}");
        let new = &after.items[queued..];
        assert_eq!(rtl.get(p_two) == 1, new.len() == 2, "second entry: {ctx}");
        let read_item = if new.len() == 2 { rtl.get_bytes(p_second) } else { rtl.get_bytes(p_first) };
        assert_eq!(&read_item[..item_bytes], &bytes_of(&new[new.len() - 1])[..], "the READ's item: {ctx}");
        let res = after.resources.last().expect("the READ's resource");
        assert_eq!(&rtl.get_bytes(p_res)[..res_bytes], &bytes_of(res)[..], "resource: {ctx}");
        let slot = qp.resp.res_head.wrapping_add(qp.resp.resources.len() as u8 - 1);
        assert_eq!(rtl.get(p_res_slot), u64::from(slot), "resource slot: {ctx}");
        moved += u32::from(new.len() == 2);
        dropped += u32::from(old.resources.len() == qp.resp.resources.len());
        lowered += u32::from(old.resources.len() > qp.resp.resources.len());
        multi += u32::from(len > pmtu);
    }
    rtl.set(p_read, 0);
    eprintln!(
        "resp_queue READs: {moved} behind a moved ACK, {dropped} dropping the oldest resource, {lowered} dropping \
         more (the limit lowered), {multi} of many packets"
    );
    assert!(moved > 5000 && dropped > 3000 && lowered > 300 && multi > 5000, "too few of a kind");
}

#[test]
fn a_duplicate_read_queues_again_as_the_model_queues_it() {
    let seed = seed() ^ 0xD0B;
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let depth = p.resp_queue as usize;
    let mut rtl = Sim::new(Top::RespQueue, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_resp, p_read, p_dup, p_base, p_msn) =
        (q("attr"), q("resp"), q("read"), q("dup"), q("dup_base"), q("dup_msn"));
    let (p_fatal, p_syn, p_psn, p_va, p_len) = (q("fatal"), q("fatal_syn"), q("psn"), q("va"), q("len"));
    let (p_next, p_first, p_two, p_second) = (q("resp_next"), q("first"), q("second_valid"), q("second"));
    let (resp_bytes, item_bytes) = (c.resp.width().div_ceil(8) as usize, c.resp_item.width().div_ceil(8) as usize);
    let mut rng = Rng::new(seed);
    let (mut moved, mut naks, mut based) = (0u32, 0u32, 0u32);
    rtl.set(p_read, 1);
    rtl.set(p_dup, 1);
    rtl.set(p_syn, u64::from(syndrome::NAK_REMOTE_ACCESS));
    for n in 0..20_000 {
        let mut qp = random_qp(&mut rng, &p);
        qp.attrs.pmtu = [0, 256, 512, 1024, 2048, 4096][rng.below(6) as usize];
        let r = &mut qp.resp;
        r.nak_sent = rng.chance(0.5);
        let queued = random_ring(&mut rng, r, depth);
        let (psn, va, resid) = (Psn::new(rng.below(1 << 24) as u32), rng.next_u64(), rng.below(1 << 31) as u32);
        let (at_base, msn) = (rng.chance(0.5), rng.below(1 << 24) as u32);
        // The key fails now: the fatal NAK instead.
        let fails = rng.chance(0.25);
        let before = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&before.attr));
        rtl.set_bytes(p_resp, &bytes_of(&before.resp));
        rtl.set(p_fatal, u64::from(fails));
        rtl.set(p_psn, u64::from(psn.value()));
        rtl.set(p_va, va);
        rtl.set(p_len, u64::from(resid));
        rtl.set(p_base, u64::from(at_base));
        rtl.set(p_msn, u64::from(msn));
        rtl.tick();
        let old = qp.resp.clone();
        if fails {
            queue_fatal_nak(&mut qp, syndrome::NAK_REMOTE_ACCESS, psn);
            naks += 1;
        } else {
            qp.resp.queue(RespItem::Read { psn, va, resid, at_base, msn });
            based += u32::from(at_base);
        }
        let after = pack(&qp, &c, 0).expect("the QP packs");
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={}), case {n}, key fails {fails}: before {old:?}, model after {:?}",
            seed ^ 0xD0B,
            qp.resp
        );
        assert_eq!(&rtl.get_bytes(p_next)[..resp_bytes], &bytes_of(&after.resp)[..], "qp_resp: {ctx}");
        let new = &after.items[queued..];
        assert_eq!(rtl.get(p_two) == 1, new.len() == 2, "second entry: {ctx}");
        let last = if new.len() == 2 { rtl.get_bytes(p_second) } else { rtl.get_bytes(p_first) };
        assert_eq!(&last[..item_bytes], &bytes_of(&new[new.len() - 1])[..], "the queued item: {ctx}");
        moved += u32::from(new.len() == 2);
    }
    rtl.set(p_read, 0);
    rtl.set(p_dup, 0);
    eprintln!("resp_queue duplicate READs: {moved} behind a moved ACK, {naks} NAKed, {based} from the first response");
    assert!(moved > 4000 && naks > 3000 && based > 4000, "too few of a kind");
}

#[test]
fn an_atomic_queues_as_the_model_queues_it() {
    let seed = seed() ^ 0xA70;
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let depth = p.resp_queue as usize;
    let mut rtl = Sim::new(Top::RespQueue, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_resp, p_read, p_atomic, p_dup, p_msn) =
        (q("attr"), q("resp"), q("read"), q("atomic"), q("dup"), q("dup_msn"));
    let (p_psn, p_orig, p_base) = (q("psn"), q("orig"), q("dup_base"));
    let (p_next, p_first, p_two, p_second, p_res, p_res_slot) =
        (q("resp_next"), q("first"), q("second_valid"), q("second"), q("res"), q("res_slot"));
    let (resp_bytes, item_bytes, res_bytes) = (
        c.resp.width().div_ceil(8) as usize,
        c.resp_item.width().div_ceil(8) as usize,
        c.resource.width().div_ceil(8) as usize,
    );
    let mut rng = Rng::new(seed);
    let (mut moved, mut dropped, mut dups) = (0u32, 0u32, 0u32);
    rtl.set(p_read, 1);
    rtl.set(p_atomic, 1);
    for n in 0..20_000 {
        let mut qp = random_qp(&mut rng, &p);
        let r = &mut qp.resp;
        r.nak_sent = rng.chance(0.5);
        let queued = random_ring(&mut rng, r, depth);
        random_resources(&mut rng, &mut qp, p.max_qp_rd_atom, |rng| ResourceKind::Atomic { orig: rng.next_u64() });
        let (psn, orig, msn) = (Psn::new(rng.below(1 << 24) as u32), rng.next_u64(), rng.below(1 << 24) as u32);
        let dup = rng.chance(0.3);
        let before = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&before.attr));
        rtl.set_bytes(p_resp, &bytes_of(&before.resp));
        rtl.set(p_dup, u64::from(dup));
        rtl.set(p_base, rng.below(2));
        rtl.set(p_msn, u64::from(msn));
        rtl.set(p_psn, u64::from(psn.value()));
        rtl.set(p_orig, orig);
        rtl.tick();
        let old = qp.resp.clone();
        if dup {
            let aeth = wire::ext::AethRepr { syndrome: syndrome::ACK_UNLIMITED, msn };
            qp.resp.queue(RespItem::AtomicAck { psn, aeth, orig });
            dups += 1;
        } else {
            queue_atomic(&mut qp, psn, orig);
        }
        let after = pack(&qp, &c, 0).expect("the QP packs");
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={}), case {n}: atomic PSN {psn:?} orig {orig:#x} dup {dup}: before {old:?}, \
             model after {:?}",
            seed ^ 0xA70,
            qp.resp
        );
        assert_eq!(&rtl.get_bytes(p_next)[..resp_bytes], &bytes_of(&after.resp)[..], "qp_resp: {ctx}");
        let new = &after.items[queued..];
        assert_eq!(rtl.get(p_two) == 1, new.len() == 2, "second entry: {ctx}");
        let ack = if new.len() == 2 { rtl.get_bytes(p_second) } else { rtl.get_bytes(p_first) };
        assert_eq!(&ack[..item_bytes], &bytes_of(&new[new.len() - 1])[..], "the atomic ACK: {ctx}");
        if !dup {
            let res = after.resources.last().expect("the atomic's resource");
            assert_eq!(&rtl.get_bytes(p_res)[..res_bytes], &bytes_of(res)[..], "resource: {ctx}");
            let slot = qp.resp.res_head.wrapping_add(qp.resp.resources.len() as u8 - 1);
            assert_eq!(rtl.get(p_res_slot), u64::from(slot), "resource slot: {ctx}");
            dropped += u32::from(old.resources.len() == qp.resp.resources.len());
        }
        moved += u32::from(new.len() == 2);
    }
    for port in [p_read, p_atomic, p_dup] {
        rtl.set(port, 0);
    }
    eprintln!(
        "resp_queue atomics: {moved} behind a moved ACK, {dropped} dropping the oldest resource, {dups} duplicates"
    );
    assert!(moved > 5000 && dropped > 3000 && dups > 4000, "too few of a kind");
}
