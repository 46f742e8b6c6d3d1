//! What a READ response or an atomic ACK does to the entry the completer's walk stopped at, in RTL
//! (`hdl::engine::comp::resp::RespMatch`) against the model's `comp::answer` on the QP its packed context
//! unpacks to (the entries' first PSNs derived from `qp_req.psn`, as the RTL derives them): windows of
//! every size with a started prefix of every length, the walk stopped at any entry or past the last, READs
//! and atomics of every length at every path MTU, each of the four READ response opcodes and the atomic
//! ACK, PSNs in and around the entry (the sums wrap past 2^24), `comp_psn` at, before and past the PSN, and
//! payloads of the length the packet must have or near it. The verdict (`take`, `bad`, `ahead`), whether
//! the response ends the operation, and where its data goes compared.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test resp_match`.

use hdl::rx::meta::Meta;
use hdl::top::Top;
use hdl::Width;
use model::nic::comp::{answer, Answer};
use model::nic::context::{pack, unpack};
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp, random_window};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::wqe::SendOp;
use wire::{OpKind, Opcode, Psn};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xA25_3A7C)
}

#[test]
fn the_match_is_the_models_answer() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let per_qp = p.wqe_window as u64;
    let mut rtl = Sim::new(Top::RespMatch, Width::W8);
    let q = |n| rtl.port(n);
    let (p_attr, p_entry, p_held, p_first, p_comp, p_rec) =
        (q("attr"), q("entry"), q("held"), q("first"), q("comp"), q("rec"));
    let (p_take, p_bad, p_ahead, p_last, p_off, p_bytes) =
        (q("take"), q("bad"), q("ahead"), q("last"), q("off"), q("bytes"));
    let reads = [
        Opcode::RDMA_READ_RESPONSE_FIRST,
        Opcode::RDMA_READ_RESPONSE_MIDDLE,
        Opcode::RDMA_READ_RESPONSE_LAST,
        Opcode::RDMA_READ_RESPONSE_ONLY,
    ];
    let mut rng = Rng::new(seed);
    let (mut ignored, mut ahead, mut bad, mut taken, mut atomics, mut lasts) = (0u32, 0u32, 0u32, 0u32, 0u32, 0u32);
    for n in 0..200_000 {
        let mut qp = random_qp(&mut rng, &p);
        let count = rng.below(per_qp + 1) as usize;
        let started = rng.below(count as u64 + 1) as usize;
        random_window(&mut rng, &mut qp, count, started);
        // READs and atomics most of the time: the entry the match is about.
        for w in qp.req.wqes.iter_mut() {
            if rng.chance(0.7) {
                w.op = if rng.chance(0.7) { SendOp::RdmaRead } else { SendOp::AtomicFetchAdd };
            }
            w.acked = false;
        }
        // Mostly a started entry (one the response can answer), else any, or past the last.
        qp.req.oldest = if started > 0 && rng.chance(0.8) {
            rng.below(started as u64) as usize
        } else {
            rng.below(count as u64 + 1) as usize
        };
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        let back = unpack(&packed, &c, qp.qpn, 0).expect("the QP unpacks");
        let pmtu = back.attrs.path_mtu();
        let entry = back.req.wqes.get(back.req.oldest);
        let atomic = rng.chance(0.25);
        // The PSN: in or around the entry's (packet k), or anywhere; `comp_psn` at it, one before or after.
        let first = entry.and_then(|w| w.first_psn).unwrap_or(Psn::new(rng.next_u64() as u32));
        let npkts = entry.map_or(1, |w| w.npkts.max(1));
        let psn = match rng.below(8) {
            0 => Psn::new(rng.next_u64() as u32),
            1 => first.sub(1 + rng.below(2) as u32),
            2 => first.add(npkts + rng.below(2) as u32),
            _ => first.add(rng.below(u64::from(npkts)) as u32),
        };
        let comp = match rng.below(6) {
            0 => psn.sub(1),
            1 => psn.add(1),
            2 => Psn::new(rng.next_u64() as u32),
            _ => psn,
        };
        // The payload: the packet's own length most of the time (zero for an atomic ACK), or near it.
        let k = psn.diff(first).max(0) as u32;
        let want = entry.map_or(0, |w| {
            let off = k.wrapping_mul(pmtu);
            if k + 1 >= w.npkts {
                w.len - off.min(w.len)
            } else {
                pmtu
            }
        });
        let len = match rng.below(6) {
            _ if atomic => 0,
            0 => want + 1,
            1 => want.saturating_sub(1),
            2 => rng.below(4097) as u32,
            _ => want,
        };
        // The opcode: mostly the one packet k must have.
        let at = |first: bool, last: bool| {
            reads[usize::from(first && last) * 3 + usize::from(!first && last) * 2 + usize::from(!first && !last)]
        };
        let opcode = if atomic {
            Opcode::ATOMIC_ACKNOWLEDGE
        } else if rng.chance(0.7) {
            at(k == 0, k + 1 >= npkts)
        } else {
            reads[rng.below(4) as usize]
        };
        let info = opcode.info().expect("a response opcode");
        let kind = if atomic { OpKind::AtomicAck } else { OpKind::ReadResponse };
        let model = entry.map_or(Answer::Ignore, |w| answer(w, kind, info.position, psn, len as usize, comp, pmtu));
        let mut rec = Meta::default();
        rec.set("opcode", u128::from(opcode.0));
        rec.set("psn", u128::from(psn.value()));
        rec.set("payload_len", u128::from(len));
        let entry_bits = packed.wqes.get(back.req.oldest).map_or(vec![0u8; 16], bytes_of);
        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set_bytes(p_entry, &entry_bits);
        rtl.set(p_held, u64::from(entry.is_some()));
        rtl.set(p_first, u64::from(first.value()));
        rtl.set(p_comp, u64::from(comp.value()));
        rtl.set_bytes(p_rec, &rec.0);
        rtl.eval();
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), case {n}: {} PSN {:#x}, {len} bytes, comp_psn {:#x}, PMTU {pmtu}, \
             entry {entry:?}",
            info.name,
            psn.value(),
            comp.value()
        );
        let got = (rtl.get(p_take), rtl.get(p_bad), rtl.get(p_ahead));
        match model {
            Answer::Ignore => {
                assert_eq!(got, (0, 0, 0), "ignored: {ctx}");
                ignored += 1;
            }
            Answer::Ahead => {
                assert_eq!(got, (0, 0, 1), "a gap: {ctx}");
                ahead += 1;
            }
            Answer::Bad => {
                assert_eq!(got, (0, 1, 0), "a malformed response: {ctx}");
                bad += 1;
            }
            Answer::Take { off, last } => {
                assert_eq!(got, (1, 0, 0), "taken: {ctx}");
                assert_eq!(rtl.get(p_off) as u32, off, "the data's offset: {ctx}");
                assert_eq!(rtl.get(p_last) == 1, last, "whether it ends the operation: {ctx}");
                let bytes = if atomic { 8 } else { len };
                assert_eq!(rtl.get(p_bytes) as u32, bytes, "the data's length: {ctx}");
                taken += 1;
                atomics += u32::from(atomic);
                lasts += u32::from(last);
            }
        }
    }
    eprintln!(
        "resp_match: 200,000 responses: {taken} taken ({atomics} atomic ACKs, {lasts} ending a READ or atomic), \
         {bad} malformed, {ahead} past comp_psn, {ignored} ignored"
    );
    assert!(
        taken > 3000 && atomics > 500 && lasts > 1500 && bad > 1000 && ahead > 1000,
        "seed {seed}: too few of a kind"
    );
}
