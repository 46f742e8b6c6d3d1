//! A message's segmentation into packets in RTL (`hdl::engine::req::seg::ReqSeg`) against the model's
//! `req::segment`: a QP at any path MTU (an unset one too), every send operation, messages of every length
//! class up to the largest (empty, within one packet, whole packets, anything), first PSNs near 0 and the
//! 2^24 wrap, the cursor at any packet of the message (and before its first, as a PSN behind it reads),
//! remote addresses near the top of the address space, any flags and any count since the last AckReq; every
//! output compared: the opcode, the payload's offset and length, the RETH, the AckReq and solicited bits,
//! the next PSN, whether the WQE is finished, the count after.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test req_seg`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::req::{packets_for, segment};
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::MAX_MSG_LEN;
use wire::contract::wqe::SendOp;
use wire::Psn;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5E6_0E47)
}

#[test]
fn a_message_is_segmented_as_the_model_segments_it() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rtl = Sim::new(Top::ReqSeg, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_op, p_flags, p_len, p_first, p_psn, p_va, p_since) =
        (q("attr"), q("op"), q("flags"), q("len"), q("first"), q("psn"), q("va"), q("since"));
    let (p_opcode, p_off, p_plen, p_reth, p_rva, p_rlen) =
        (q("opcode"), q("off"), q("payload_len"), q("has_reth"), q("reth_va"), q("reth_len"));
    let (p_ack, p_sol, p_next, p_last, p_since_next) =
        (q("ack_req"), q("solicited"), q("next_psn"), q("last"), q("since_next"));
    let ops: Vec<SendOp> = (0..16u8).filter_map(SendOp::from_u8).collect();
    let mut rng = Rng::new(seed);
    let (mut middles, mut lasts, mut reths, mut behind, mut acks) = (0u32, 0u32, 0u32, 0u32, 0u32);
    for n in 0..100_000 {
        let mut qp = random_qp(&mut rng, &p);
        qp.attrs.pmtu = [0, 256, 512, 1024, 2048, 4096][rng.below(6) as usize];
        let pmtu = qp.attrs.path_mtu();
        let op = ops[rng.below(ops.len() as u64) as usize];
        let flags = rng.below(16) as u8;
        let len = match rng.below(5) {
            0 => 0,
            1 => 1 + rng.below(u64::from(pmtu)) as u32,
            2 => pmtu * (1 + rng.below(8) as u32),
            3 => MAX_MSG_LEN - rng.below(u64::from(pmtu)) as u32,
            _ => rng.below(1 << 20) as u32,
        };
        let first = Psn::new(match rng.below(3) {
            0 => rng.below(16) as u32,
            1 => (1 << 24) - 1 - rng.below(16) as u32,
            _ => rng.below(1 << 24) as u32,
        });
        let npkts = packets_for(op, len, pmtu);
        let k = match rng.below(5) {
            0 => 0,
            1 => npkts - 1,
            2 => npkts.saturating_sub(2),
            3 => {
                behind += 1;
                (1 << 24) - 1 - rng.below(8) as u32
            }
            _ => rng.below(u64::from(npkts)) as u32,
        };
        let psn = first.add(k);
        let va = if rng.chance(0.2) { u64::MAX - rng.below(1 << 24) } else { rng.next_u64() >> rng.below(40) };
        let rkey = rng.next_u64() as u32;
        let since = if rng.chance(0.2) { 63 } else { rng.below(64) as u32 };
        let want = segment(op, flags, len, (first, npkts), psn, pmtu, (va, rkey), since);
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set(p_op, op as u64);
        rtl.set(p_flags, u64::from(flags));
        rtl.set(p_len, u64::from(len));
        rtl.set(p_first, u64::from(first.value()));
        rtl.set(p_psn, u64::from(psn.value()));
        rtl.set(p_va, va);
        rtl.set(p_since, u64::from(since));
        rtl.eval();
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: {op:?} flags {flags:#x} of {len} bytes from PSN {first:?} \
             ({npkts} packets) at PSN {psn:?}, PMTU {pmtu}, VA {va:#x}, {since} since the AckReq: model {want:?}"
        );
        assert_eq!(rtl.get(p_opcode), u64::from(want.opcode.0), "opcode: {ctx}");
        assert_eq!(rtl.get(p_off), u64::from(want.off), "offset: {ctx}");
        assert_eq!(rtl.get(p_plen), u64::from(want.payload_len), "payload length: {ctx}");
        assert_eq!(rtl.get(p_reth) == 1, want.reth.is_some(), "RETH: {ctx}");
        if let Some(r) = want.reth {
            assert_eq!((rtl.get(p_rva), rtl.get(p_rlen)), (r.va, u64::from(r.dma_len)), "RETH fields: {ctx}");
            assert_eq!(r.rkey, rkey, "the RETH carries the WQE's R_Key: {ctx}");
            reths += 1;
        }
        assert_eq!(rtl.get(p_ack) == 1, want.ack_req, "AckReq: {ctx}");
        assert_eq!(rtl.get(p_sol) == 1, want.solicited, "solicited: {ctx}");
        assert_eq!(rtl.get(p_next), u64::from(want.next_psn.value()), "next PSN: {ctx}");
        assert_eq!(rtl.get(p_last) == 1, want.last_of_wqe, "finishes the WQE: {ctx}");
        assert_eq!(rtl.get(p_since_next), u64::from(want.pkts_since_ackreq), "count after: {ctx}");
        let info = want.opcode.info().expect("a request opcode");
        middles += u32::from(info.position == wire::Position::Middle);
        lasts += u32::from(info.position == wire::Position::Last);
        acks += u32::from(want.ack_req && !info.ends_message());
    }
    eprintln!(
        "req_seg: {middles} MIDDLE, {lasts} LAST, {reths} RETHs, {behind} behind the first PSN, {acks} AckReqs mid-message"
    );
    assert!(middles > 5000 && lasts > 5000 && reths > 10_000 && behind > 5000 && acks > 1000, "too few of a kind");
}
