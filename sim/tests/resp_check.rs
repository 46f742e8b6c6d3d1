//! The responder's check chain in RTL (`hdl::engine::resp::check`) against the model's `resp::check`: random
//! QP contexts (packed by the model's `context::pack`), random MR tables and random request packets near
//! each QP's ePSN, the RTL given the same records (the packet's RX record from `frames::meta_of`, the QP's
//! `qp_attr` and `qp_resp`, the MR entry its `key_index` names) and compared verdict for verdict, and a
//! READ's key check alone (`key_bad`) with the model's MR check.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test resp_check`.

use hdl::engine::resp::check::verdict;
use hdl::top::Top;
use hdl::Width;
use model::nic::context::{pack, Packed};
use model::nic::mr::REMOTE_READ;
use model::nic::resp::{check, Check, Nak, Verdict};
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_request, Mrs};
use sim::Sim;
use wire::contract::qpc::{qp_context, QpContext};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0C4E_C000)
}

/// The RTL's code for a model verdict.
fn code(v: Verdict) -> u8 {
    match v {
        Verdict::QpState => verdict::QP_STATE,
        Verdict::SeqNak => verdict::SEQ_NAK,
        Verdict::SeqDrop => verdict::SEQ_DROP,
        Verdict::Duplicate => verdict::DUPLICATE,
        Verdict::Nak(Nak::InvalidRequest) => verdict::NAK_INVALID_REQUEST,
        Verdict::Nak(Nak::RemoteAccess) => verdict::NAK_REMOTE_ACCESS,
        Verdict::Nak(Nak::Rnr) => verdict::NAK_RNR,
        // The chain never ends in a remote operational error (that is a receive WQE's fault, found later).
        Verdict::Nak(Nak::RemoteOp) => panic!("the check chain gave NAK remote operational error"),
        Verdict::NoRoom => verdict::NO_ROOM,
        Verdict::Execute => verdict::EXECUTE,
    }
}

/// Which model verdicts were reached, so a stream that drifted cannot pass vacuously.
#[derive(Default)]
struct Seen(std::collections::BTreeMap<u8, u64>);

#[test]
fn the_check_chain_matches_the_model() {
    let seed = seed();
    let p = Top::engine_profile();
    let c: QpContext = qp_context(&p);
    let mut rtl = Sim::new(Top::RespCheck, Width::W8);
    let port = |s: &Sim, n: &str| s.port(n);
    let (p_meta, p_attr, p_resp, p_mr) = (port(&rtl, "meta"), port(&rtl, "attr"), port(&rtl, "resp"), port(&rtl, "mr"));
    let (p_key, p_verdict, p_room) = (port(&rtl, "key_index"), port(&rtl, "verdict"), port(&rtl, "room"));
    let p_key_bad = port(&rtl, "key_bad");
    let mut key_seen = [0u64; 2];
    let mut rng = Rng::new(seed);
    let mut seen = Seen::default();
    let mut room_seen = [0u64; 2];
    const QPS: usize = 2000;
    const PACKETS: usize = 50;
    for n in 0..QPS {
        let mrs = Mrs::random(&mut rng, &p);
        let q = random_qp(&mut rng, &p);
        let Packed { attr, resp, .. } = pack(&q, &c, 0).expect("the QP packs");
        rtl.set_bytes(p_attr, &bytes_of(&attr));
        rtl.set_bytes(p_resp, &bytes_of(&resp));
        for k in 0..PACKETS {
            let frame = random_request(&mut rng, &q, &mrs);
            let pkt = wire::parse(&frame).expect("a well-formed frame");
            let info = pkt.hdr.bth.opcode.info().unwrap();
            let want: Check = check(&q, &mrs.table, p.resp_queue as usize, info, &pkt);
            rtl.set_bytes(p_meta, &sim::frames::meta_of(&frame, &pkt).0);
            rtl.eval();
            let index = rtl.get(p_key);
            rtl.set_bytes(p_mr, &mrs.entry(index, &p));
            rtl.tick();
            let got = (rtl.get(p_verdict) as u8, rtl.get(p_room) != 0);
            assert_eq!(
                got,
                (code(want.verdict), want.room),
                "seed {seed} (FERRITE_SEED={seed}), QP {n}, packet {k}: the model says {:?}; {} PSN {:#x} payload {}, \
                 {:?}, {:?}\nQP: {:?}",
                want.verdict,
                info.name,
                pkt.hdr.bth.psn.value(),
                pkt.payload.len(),
                pkt.hdr.ext.reth,
                pkt.hdr.ext.atomic_eth,
                q
            );
            // A READ's key check alone (a duplicate READ is checked again by it).
            if let (wire::OpKind::ReadRequest, Some(reth)) = (info.kind, pkt.hdr.ext.reth) {
                let len = u64::from(reth.dma_len);
                let bad = len > 0 && mrs.table.check(reth.rkey, q.pdn, reth.va, len, REMOTE_READ).is_err();
                assert_eq!(
                    rtl.get(p_key_bad) == 1,
                    bad,
                    "seed {seed} (FERRITE_SEED={seed}), QP {n}, packet {k}: key check of {reth:?}"
                );
                key_seen[usize::from(bad)] += 1;
            }
            *seen.0.entry(got.0).or_default() += 1;
            room_seen[usize::from(got.1)] += 1;
        }
    }
    eprintln!(
        "resp_check: {} packets, verdicts by code {:?}, room {room_seen:?}, READ keys (good, bad) {key_seen:?}",
        QPS * PACKETS,
        seen.0
    );
    assert!(key_seen.iter().all(|&n| n > 100), "READ keys {key_seen:?}");
    for v in 0..=verdict::EXECUTE {
        assert!(seen.0.get(&v).is_some_and(|&n| n >= 20), "verdict {v} reached {:?} times", seen.0.get(&v));
    }
    assert!(room_seen.iter().all(|&n| n > 100), "room {room_seen:?}");
}
