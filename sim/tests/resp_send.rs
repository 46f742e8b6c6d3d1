//! A SEND packet's receive in RTL (`hdl::engine::resp::send::RespSend`), and a WRITE with immediate's and a
//! raw frame's, against the model's `resp::receive` and `raw::deliver`: random QP contexts (any RQ counters,
//! a message in progress or not at any offset, any state, receive CQ and WRITE length), SEND packets of every
//! position with and without immediate, WRITEs with immediate, raw frames of any length, and receive WQEs
//! whose scatter lists pass or fail the checks, with the payload fitting or not. The WQE's RQ counter, the
//! payload's offset and length, the fatal NAK and its syndrome, the RQ counter's move, the `qp_resp` record
//! after the packet (bit for bit, from `RespAdvance`'s as the core gives it) and the receive CQE (its bytes
//! and CQ) are compared with the model's.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test resp_send`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::qp::{scatter_pieces, RecvCtx, Sge};
use model::nic::raw::deliver;
use model::nic::resp::{advance, receive, recv_slot, write_cursor, Nak, Received};
use model::rng::Rng;
use sim::frames::meta_of;
use sim::record::diff;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use std::collections::HashMap;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::QpState;
use wire::ext::syndrome;
use wire::{OpKind, Opcode};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5E_4D5E)
}

/// The packets that come here: SENDs of every position (with immediate or not) and the WRITEs that end
/// with an immediate.
const OPCODES: [Opcode; 8] = [
    Opcode::SEND_FIRST,
    Opcode::SEND_MIDDLE,
    Opcode::SEND_LAST,
    Opcode::SEND_LAST_WITH_IMMEDIATE,
    Opcode::SEND_ONLY,
    Opcode::SEND_ONLY_WITH_IMMEDIATE,
    Opcode::RDMA_WRITE_LAST_WITH_IMMEDIATE,
    Opcode::RDMA_WRITE_ONLY_WITH_IMMEDIATE,
];

/// A receive WQE as `recv_wqe` gives it: a scatter list of up to `max_sge` entries whose room is about
/// `want` bytes (sometimes a little short), or one that failed its checks.
fn random_wqe(rng: &mut Rng, max_sge: u32, want: u32) -> Result<(u64, Vec<Sge>), u64> {
    let wr_id = rng.next_u64();
    if rng.chance(0.15) {
        return Err(if rng.chance(0.2) { 0 } else { wr_id });
    }
    let n = 1 + rng.below(u64::from(max_sge)) as usize;
    let short = if rng.chance(0.3) { rng.below(80) as u32 } else { 0 };
    let mut left = (want + rng.below(64) as u32).saturating_sub(short);
    let sges = (0..n)
        .map(|i| {
            let length = if i + 1 == n { left } else { rng.below(u64::from(left) + 1) as u32 };
            left -= length;
            Sge { addr: rng.next_u64(), length, lkey: rng.next_u64() as u32 }
        })
        .collect();
    Ok((wr_id, sges))
}

#[test]
fn the_receive_is_the_models() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let cq_bits = c.attr.slice("recv_cqn").expect("qp_attr has the receive CQ").1;
    let mut rtl = Sim::new(Top::RespSend, Width::W8);
    let mut rng = Rng::new(seed);
    let mut tally: HashMap<&str, u32> = HashMap::new();
    for n in 0..60_000 {
        let mut q = random_qp(&mut rng, &p);
        q.qpn = rng.below(1 << 24) as u32;
        q.recv_cqn = rng.below(1 << cq_bits) as u32;
        q.rq.pi = q.rq.ci.wrapping_add(rng.below(3) as u16);
        q.resp.write_len = rng.next_u64() as u32;
        let raw = rng.chance(0.15);
        let op = OPCODES[rng.below(OPCODES.len() as u64) as usize];
        let info = op.info().expect("an opcode of the table");
        // A SEND continues in the WQE one behind the RQ counter (the packed context keeps only its offset).
        q.resp.recv = (info.kind == OpKind::Send && rng.chance(0.5))
            .then(|| RecvCtx { index: q.rq.ci.wrapping_sub(1), offset: rng.below(1 << 16) as u32 });
        let len = match rng.below(4) {
            0 => 0,
            1 => rng.below(64) as usize,
            _ => rng.below(4097) as usize,
        };
        let (ipv6, vlan) = (rng.chance(0.3), rng.chance(0.2));
        let frame = sim::frames::frame(&mut rng, op, ipv6, vlan, len);
        let pkt = wire::parse(&frame).expect("a well-formed frame");
        let mut meta = meta_of(&frame, &pkt);
        // A raw frame's record: the length of a frame that is not RoCEv2; its RoCE fields are not its.
        let raw_len = 14 + rng.below(1500) as usize;
        if raw {
            meta.set("frame_len", raw_len as u128);
        }
        let off = if raw { 0 } else { recv_slot(&q, info).offset };
        let want = if raw { raw_len } else { len } as u32;
        let wqe = random_wqe(&mut rng, p.max_sge, off.saturating_add(want));
        let fits = wqe.as_ref().is_ok_and(|(_, s)| scatter_pieces(s, off, want as usize).is_some());
        // The core's `RespAdvance` record, and the model after the packet.
        let mut adv = q.clone();
        let mut m = q.clone();
        let r: Received = if raw {
            deliver(&mut m, raw_len, wqe.clone())
        } else {
            if info.kind == OpKind::Write {
                write_cursor(&mut adv, info, &pkt);
                write_cursor(&mut m, info, &pkt);
            }
            advance(&mut adv, info, &pkt);
            let r = receive(&mut m, info, &pkt, wqe.clone());
            if r.nak.is_none() {
                advance(&mut m, info, &pkt);
            }
            r
        };
        let (before, adv, after) = (
            pack(&q, &c, 0).expect("the QP packs"),
            pack(&adv, &c, 0).expect("the QP packs after RespAdvance"),
            pack(&m, &c, 0).expect("the QP packs after the packet"),
        );
        let set_bytes = |rtl: &mut Sim, name: &str, b: &[u8]| {
            let port = rtl.port(name);
            rtl.set_bytes(port, b);
        };
        let set = |rtl: &mut Sim, name: &str, v: u64| {
            let port = rtl.port(name);
            rtl.set(port, v);
        };
        set_bytes(&mut rtl, "meta", &meta.0);
        set(&mut rtl, "qpn", u64::from(q.qpn));
        set_bytes(&mut rtl, "attr", &bytes_of(&before.attr));
        set_bytes(&mut rtl, "resp", &bytes_of(&before.resp));
        set_bytes(&mut rtl, "adv", &bytes_of(&adv.resp));
        set(&mut rtl, "raw", u64::from(raw));
        set(&mut rtl, "wqe_ok", u64::from(wqe.is_ok()));
        set(&mut rtl, "wr_id", wqe.as_ref().map_or_else(|&w| w, |(w, _)| *w));
        set(&mut rtl, "fits", u64::from(fits));
        rtl.eval();
        let get = |name: &str| rtl.get(rtl.port(name));
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: {}, payload {want}, WQE {wqe:?}, fits {fits}, QP {:?} rq {:?}: model {r:?}",
            if raw { "raw frame".to_string() } else { format!("{op:?}") },
            q.resp,
            q.rq
        );
        let at = if raw { q.rq.ci } else { recv_slot(&q, info).index };
        assert_eq!(get("index"), u64::from(at), "the WQE's RQ counter: {ctx}");
        assert_eq!(get("off"), u64::from(off), "the payload's offset: {ctx}");
        assert_eq!(get("len"), u64::from(want), "the payload's length: {ctx}");
        assert_eq!(get("is_send") == 1, raw || info.kind == OpKind::Send, "a SEND: {ctx}");
        assert_eq!(get("fatal") == 1, r.nak.is_some(), "a fatal NAK: {ctx}");
        if let Some(nak) = r.nak {
            let syn = if nak == Nak::RemoteOp { syndrome::NAK_REMOTE_OP } else { syndrome::NAK_INVALID_REQUEST };
            assert_eq!(get("syn"), u64::from(syn), "the NAK's syndrome: {ctx}");
        }
        let raw_ok = r.cqe.is_some_and(|e| e.status == 0);
        assert_eq!(get("raw_fail") == 1, raw && !raw_ok, "a raw frame's receive fails: {ctx}");
        assert_eq!(get("drain") == 1, raw && wqe.is_err(), "a raw frame drained: {ctx}");
        assert_eq!(get("rq_has") == 1, q.rq.pi != q.rq.ci, "a receive WQE posted: {ctx}");
        assert_eq!(get("rq_ci_we") == 1, r.took, "the RQ counter moves: {ctx}");
        if r.took {
            assert_eq!(get("rq_ci"), u64::from(m.rq.ci), "the next RQ counter: {ctx}");
        }
        let d = diff(&c.resp, &rtl.get_bytes(rtl.port("resp_next")), &bytes_of(&after.resp));
        assert!(d.is_empty(), "qp_resp after the packet: {d}\n{ctx}");
        assert_eq!(get("cqe_valid") == 1, r.cqe.is_some(), "a receive CQE: {ctx}");
        if let Some(cqe) = r.cqe {
            assert_eq!(rtl.get_bytes(rtl.port("cqe")), cqe.to_bytes().to_vec(), "the CQE: {ctx}\nmodel {cqe:?}");
            assert_eq!(get("cqn"), u64::from(q.recv_cqn), "the receive CQ: {ctx}");
        }
        assert_eq!(get("qp_live") == 1, q.state != QpState::Err, "the QP is live: {ctx}");
        let what = match (raw, info.kind, r.nak, r.cqe.map(|e| e.status)) {
            (true, _, _, Some(0)) => "raw frame received",
            (true, ..) => "raw frame failed",
            (_, OpKind::Write, ..) => "WRITE with immediate",
            (_, _, Some(Nak::RemoteOp), _) => "SEND, WQE failed at the first packet",
            (_, _, Some(_), Some(s)) if s == wire::contract::verbs::WcStatus::LocLenErr as u8 => "SEND too long",
            (_, _, Some(_), _) => "SEND, WQE failed mid-message",
            (_, _, _, Some(_)) => "SEND completed",
            _ => "SEND continues",
        };
        *tally.entry(what).or_default() += 1;
    }
    let mut t: Vec<_> = tally.into_iter().collect();
    t.sort();
    eprintln!("resp_send: 60,000 packets: {t:?}");
    assert!(t.len() == 8 && t.iter().all(|&(_, k)| k > 500), "seed {seed}: too few of a kind: {t:?}");
}
