//! A send WQE fetched into the requester's window in RTL (`hdl::engine::req::wqe_fetch::WqeFetch`) against
//! the model's `req::decode_send_wqe`: random SQ rings (any stride, size and counter), every send operation
//! and unknown opcodes, inline data up to and past the slot and `max_inline` (on READs and atomics too),
//! SGE lists up to and past `max_sge` and the slot, SGEs whose keys are live, stale or unknown, aimed
//! inside, across the end of and outside their MR, of the QP's PD or another, writable or not, some of zero
//! length, totals past 2^31, atomics with 8 bytes and without; reads that fail. The DMA read asked for must
//! be the model's (the whole slot), and the window entry (`sq_wqe`, packed, with the `wr_id` its CQE will
//! carry) the model's, with random back-pressure on the read request and bubbles in its completion.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test wqe_fetch`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::mr::Mr;
use model::nic::req::decode_send_wqe;
use model::rng::Rng;
use sim::fetch::{self, FetchPorts, Host};
use sim::responder::{bytes_of, random_qp, Mrs};
use sim::Sim;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::{access, WcStatus};
use wire::contract::wqe::{
    send_flags, DataSegRepr, SendCtrlRepr, SendOp, DATA_SEG_LEN, MAX_LOG_STRIDE, MIN_SQ_LOG_STRIDE, SEND_DATA,
};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5E0D_F37C)
}

#[test]
fn send_wqes_are_fetched_and_checked_as_the_model_does() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let max_sge = p.max_sge as usize;
    let mut rtl = Sim::new(Top::WqeFetch, Width::W8);
    let q = |n| rtl.port(n);
    let (reset, p_attr, p_index, p_entry) = (q("reset"), q("attr"), q("index"), q("entry"));
    let f = FetchPorts::of(&rtl);
    let ops: Vec<SendOp> = (0..16u8).filter_map(SendOp::from_u8).collect();
    let mut rng = Rng::new(seed);
    let (stall, bubble) = (rng.below(60) as f64 / 100.0, rng.below(60) as f64 / 100.0);
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let mut outcomes = std::collections::BTreeMap::<String, u32>::new();
    let mut mrs = Mrs::random(&mut rng, &p);
    let wqes = 5_000;
    for n in 0..wqes {
        let ctx = || format!("seed {seed} (FERRITE_SEED={seed}), WQE {n}");
        if n % 100 == 0 {
            mrs = Mrs::random(&mut rng, &p);
        }
        let mut qp = random_qp(&mut rng, &p);
        qp.sq.iova = if rng.chance(0.1) { u64::MAX - rng.below(1 << 20) } else { rng.next_u64() >> 16 };
        qp.sq.log_size = rng.below(13) as u8;
        qp.sq.log_stride = MIN_SQ_LOG_STRIDE + rng.below(u64::from(MAX_LOG_STRIDE - MIN_SQ_LOG_STRIDE) + 1) as u8;
        let stride = 1usize << qp.sq.log_stride;
        let room = stride - SEND_DATA;
        let index = rng.next_u64() as u16;
        let op = if rng.chance(0.05) { rng.next_u64() as u8 } else { ops[rng.below(ops.len() as u64) as usize] as u8 };
        let rd_or_atomic = SendOp::from_u8(op).is_some_and(|o| o.is_read_or_atomic());
        let atomic = SendOp::from_u8(op).is_some_and(|o| o.is_atomic());
        let inline = rng.chance(0.25);
        let flags = (rng.next_u64() as u8 & !send_flags::INLINE) | if inline { send_flags::INLINE } else { 0 };
        let mut bytes = vec![0u8; stride];
        rng.fill(&mut bytes);
        let num = if inline {
            match rng.below(5) {
                0 => rng.next_u64() as u16,
                1 => (room.min(p.max_inline as usize) + rng.below(2) as usize) as u16,
                _ => rng.below(room.min(p.max_inline as usize) as u64 + 1) as u16,
            }
        } else {
            match rng.below(8) {
                0 => rng.next_u64() as u16,
                1 => (max_sge + 1 + rng.below(2) as usize) as u16,
                _ => rng.below(max_sge as u64 + 1) as u16,
            }
        };
        let ctrl = SendCtrlRepr { opcode: op, flags, len: num, imm: rng.next_u64() as u32, wr_id: rng.next_u64() };
        bytes[..SendCtrlRepr::LEN].copy_from_slice(&ctrl.to_bytes());
        // Most SGEs name MRs of the QP's PD (writable ones for a READ or atomic), so that whole lists pass.
        let need = if rd_or_atomic { access::LOCAL_WRITE } else { 0 };
        let usable: Vec<Mr> = mrs.entries.iter().flatten().filter(|m| m.access & need == need).copied().collect();
        if let Some(m) = usable.get(rng.below(usable.len().max(1) as u64) as usize) {
            qp.pdn = m.pdn;
        }
        let good: Vec<Mr> = usable.iter().filter(|m| m.pdn == qp.pdn).copied().collect();
        let clean = !good.is_empty() && rng.chance(0.3);
        for i in 0..if inline { 0 } else { usize::from(num).min(max_sge) } {
            let at = SEND_DATA + i * DATA_SEG_LEN;
            if at + DATA_SEG_LEN > stride {
                break;
            }
            let (lkey, mr) = match good.get(rng.below(good.len().max(1) as u64) as usize) {
                Some(m) if clean || rng.chance(0.8) => (m.key, Some(*m)),
                _ => mrs.key(&mut rng),
            };
            let length = match (atomic && clean, rng.below(10)) {
                (true, k) if k < 8 => {
                    if i == 0 {
                        8
                    } else {
                        0
                    }
                }
                (_, 0) => 0,
                (false, 1) if !clean => rng.next_u64() as u32,
                (_, 2) => (1 << 31) - rng.below(2) as u32,
                _ => 1 + rng.below(5000) as u32,
            };
            let addr = match (mr, clean, rng.below(12)) {
                (Some(m), true, _) => m.iova + rng.below(m.length.saturating_sub(u64::from(length)) + 1),
                (Some(m), _, 0) => m.iova + m.length - rng.below(u64::from(length) + 1).min(m.length),
                (Some(m), _, 1) => m.iova.wrapping_sub(rng.below(64)),
                (Some(m), _, _) => m.iova + rng.below(m.length),
                (None, _, _) => rng.next_u64(),
            };
            let d = DataSegRepr { addr, lkey, length };
            bytes[at..at + DATA_SEG_LEN].copy_from_slice(&d.to_bytes());
        }
        let fail = rng.chance(0.05);
        // A failed read leaves the model's buffer as it was (zeros): host memory reads all or nothing.
        let seen = if fail { vec![0u8; stride] } else { bytes.clone() };
        let want = decode_send_wqe(&mrs.table, &p, index, &seen, !fail, qp.pdn);
        let status = want.error.map_or("taken".to_string(), |e| format!("{:?}", e.0));
        *outcomes
            .entry(format!("{status}{}", if inline && want.error.is_none() { " inline" } else { "" }))
            .or_default() += 1;
        let read = (qp.sq.addr(index), stride);
        qp.req.wqes = [want.clone()].into();
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        let mut entry = bytes_of(&packed.wqes[0]);
        entry.resize(hdl::engine::req::ready::WQE_BITS / 8, 0);

        rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        rtl.set(p_index, u64::from(index));
        let host = Host { addr: read.0, bytes: &bytes, fail };
        let (asked, _) = fetch::run(&mut rtl, &f, &mut rng, (stall, bubble), &mrs, &p, &host, &ctx);
        assert_eq!(asked, read, "{}: the read asked for (address, length) is the model's (the whole slot)", ctx());
        let got = rtl.get_bytes(p_entry);
        assert_eq!(got, entry, "{}: the window entry (RTL, model) for the model's {want:?}", ctx());
        rtl.tick();
    }
    eprintln!("wqe_fetch: {wqes} WQEs: {outcomes:?}");
    let count = |k: &str| outcomes.get(k).copied().unwrap_or(0);
    for k in ["taken", "taken inline"] {
        assert!(count(k) > wqes / 20, "seed {seed}: too few {k}");
    }
    for s in [WcStatus::LocLenErr, WcStatus::LocQpOpErr, WcStatus::LocProtErr] {
        assert!(count(&format!("{s:?}")) > wqes / 50, "seed {seed}: too few {s:?}");
    }
}
