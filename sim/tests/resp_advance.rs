//! The responder's bookkeeping for the SEND and WRITE packets it executes, in RTL
//! (`hdl::engine::resp::advance`) against the model's `resp::write_cursor` and `resp::advance`: random QP
//! contexts and requests (`sim::responder`), the packets the model's check chain passes, and the QP's next
//! `qp_resp` record compared bit for bit with the model's packed one, with the WRITE payload's address.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test resp_advance`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::{pack, Packed};
use model::nic::resp::{advance, check, write_cursor, Verdict};
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_request, Mrs};
use sim::Sim;
use wire::contract::qpc::{qp_context, QpContext};
use wire::OpKind;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0C4E_ADA0)
}

#[test]
fn the_bookkeeping_matches_the_model() {
    let seed = seed();
    let p = Top::engine_profile();
    let c: QpContext = qp_context(&p);
    let mut rtl = Sim::new(Top::RespAdvance, Width::W8);
    let (p_meta, p_resp) = (rtl.port("meta"), rtl.port("resp"));
    let (p_next, p_va) = (rtl.port("resp_next"), rtl.port("va"));
    let resp_bytes = c.resp.width().div_ceil(8) as usize;
    let mut rng = Rng::new(seed);
    let (mut sends, mut writes, mut acks, mut ends) = (0u32, 0u32, 0u32, 0u32);
    const QPS: usize = 5000;
    const PACKETS: usize = 40;
    for n in 0..QPS {
        let mrs = Mrs::random(&mut rng, &p);
        let mut q = random_qp(&mut rng, &p);
        q.flushing = false;
        for k in 0..PACKETS {
            let frame = random_request(&mut rng, &q, &mrs);
            let pkt = wire::parse(&frame).expect("a well-formed frame");
            let info = pkt.hdr.bth.opcode.info().unwrap();
            let executes = check(&q, &mrs.table, p.resp_queue as usize, info, &pkt).verdict == Verdict::Execute;
            if !executes || !matches!(info.kind, OpKind::Send | OpKind::Write) {
                continue;
            }
            let Packed { resp, .. } = pack(&q, &c, 0).expect("the QP packs");
            rtl.set_bytes(p_meta, &sim::frames::meta_of(&frame, &pkt).0);
            rtl.set_bytes(p_resp, &bytes_of(&resp));
            rtl.tick();
            let before = q.clone();
            let va = (info.kind == OpKind::Write).then(|| write_cursor(&mut q, info, &pkt));
            advance(&mut q, info, &pkt);
            let want = bytes_of(&pack(&q, &c, 0).expect("the QP packs").resp);
            let got = rtl.get_bytes(p_next);
            assert_eq!(
                &got[..resp_bytes],
                &want[..],
                "seed {seed} (FERRITE_SEED={seed}), QP {n}, packet {k}: qp_resp after {} PSN {:#x} payload {} \
                 AckReq {}\nbefore: {:?}\nmodel after: {:?}",
                info.name,
                pkt.hdr.bth.psn.value(),
                pkt.payload.len(),
                pkt.hdr.bth.ack_req,
                before.resp,
                q.resp
            );
            if let Some(va) = va {
                assert_eq!(rtl.get(p_va), va, "seed {seed}, QP {n}, packet {k}: the payload's address");
                writes += 1;
            } else {
                sends += 1;
            }
            acks += u32::from(pkt.hdr.bth.ack_req);
            ends += u32::from(info.ends_message());
        }
    }
    eprintln!("resp_advance: {sends} SEND and {writes} WRITE packets executed, {acks} asking for an ACK, {ends} ending a message");
    assert!(sends > 2000 && writes > 2000 && acks > 1000 && ends > 1000, "too few of a kind");
}
