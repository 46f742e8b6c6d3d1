//! A send WQE's descriptor read again for a packet in RTL (`hdl::engine::req::desc::SendDesc`) against the
//! model's `req::read_desc`: random SQ rings (any stride, size and counter), every send operation and
//! unknown opcodes, inline data up to and past the slot (on READs and atomics too), SGE lists up to and
//! past the slot and past the list the RTL keeps (`max_sge`), SGEs of no length; reads that fail. The read
//! asked for must be the model's (the whole slot), and what the packet needs (the immediate, the remote
//! address and key, the atomic operands, the inline data's place and length or the SGEs of nonzero length)
//! the model's, with random back-pressure on the read request and bubbles in its completion. One slot in
//! four is taken from another's read of it (`snoop`: no read asked, the beats given), and one in eight
//! starts after a snoop of other bytes is cut short (`cut`, with the start): the outcome is the same.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test send_desc`.

use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::qp::WqeData;
use model::nic::req::desc_of_slot;
use model::rng::Rng;
use sim::responder::{bytes_of, random_qp};
use sim::Sim;
use wire::contract::qpc::{qp_context, recv_sge};
use wire::contract::wqe::{
    send_flags, DataSegRepr, SendCtrlRepr, SendOp, DATA_SEG_LEN, MAX_LOG_STRIDE, MIN_SQ_LOG_STRIDE, SEND_DATA,
};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5E0D_DE5C)
}

/// Field `name` of SGE `i` of a `sges` port's bytes.
fn sge_field(bytes: &[u8], i: usize, name: &str) -> u64 {
    let l = recv_sge();
    let (lsb, w) = l.slice(name).expect("an SGE field");
    let at = i * l.width() as usize + lsb as usize;
    (0..w as usize).fold(0u64, |v, b| v | u64::from(bytes[(at + b) / 8] >> ((at + b) % 8) & 1) << b)
}

#[test]
fn descriptors_are_read_again_as_the_model_reads_them() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let max_sge = p.max_sge as usize;
    let mut rtl = Sim::new(Top::SendDesc, Width::W8);
    let q = |n| rtl.port(n);
    let (reset, start, attr, index_p, done) = (q("reset"), q("start"), q("attr"), q("index"), q("done"));
    let (busy, snoop, cut) = (q("busy"), q("snoop"), q("cut"));
    let [rd_valid, rd_ready, rd_addr, rd_len] = [q("rd_valid"), q("rd_ready"), q("rd_addr"), q("rd_len")];
    let [cpl_valid, cpl_data, cpl_err, cpl_last] = [q("cpl_valid"), q("cpl_data"), q("cpl_err"), q("cpl_last")];
    let [ok_p, imm, va, rkey, swap_add, compare] = [q("ok"), q("imm"), q("va"), q("rkey"), q("swap_add"), q("compare")];
    let [inline_data, num_p, slot_addr, count, sges_p] =
        [q("inline_data"), q("num"), q("slot_addr"), q("count"), q("sges")];
    let ops: Vec<SendOp> = (0..16u8).filter_map(SendOp::from_u8).collect();
    let mut rng = Rng::new(seed);
    let (stall, bubble) = (rng.below(60) as f64 / 100.0, rng.below(60) as f64 / 100.0);
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let mut outcomes = std::collections::BTreeMap::<&str, u32>::new();
    let slots = 4_000;
    for n in 0..slots {
        let ctx = || format!("seed {seed} (FERRITE_SEED={seed}), slot {n}");
        let mut qp = random_qp(&mut rng, &p);
        qp.sq.iova = rng.next_u64() >> 16;
        qp.sq.log_size = rng.below(13) as u8;
        qp.sq.log_stride = MIN_SQ_LOG_STRIDE + rng.below(u64::from(MAX_LOG_STRIDE - MIN_SQ_LOG_STRIDE) + 1) as u8;
        let stride = 1usize << qp.sq.log_stride;
        let room = stride - SEND_DATA;
        let index = rng.next_u64() as u16;
        let op = if rng.chance(0.05) { rng.next_u64() as u8 } else { ops[rng.below(ops.len() as u64) as usize] as u8 };
        let inline = rng.chance(0.3);
        let flags = (rng.next_u64() as u8 & !send_flags::INLINE) | if inline { send_flags::INLINE } else { 0 };
        let mut bytes = vec![0u8; stride];
        rng.fill(&mut bytes);
        let num = match rng.below(6) {
            0 => rng.next_u64() as u16,
            1 if inline => (room + rng.below(2) as usize) as u16,
            1 => (room / DATA_SEG_LEN + rng.below(2) as usize) as u16,
            2 if !inline => (max_sge + 1 + rng.below(3) as usize).min(room / DATA_SEG_LEN) as u16,
            _ if inline => rng.below(room as u64 + 1) as u16,
            _ => rng.below(max_sge as u64 + 1) as u16,
        };
        let ctrl = SendCtrlRepr { opcode: op, flags, len: num, imm: rng.next_u64() as u32, wr_id: rng.next_u64() };
        bytes[..SendCtrlRepr::LEN].copy_from_slice(&ctrl.to_bytes());
        if !inline {
            for i in 0..usize::from(num) {
                let at = SEND_DATA + i * DATA_SEG_LEN;
                if at + DATA_SEG_LEN > stride {
                    break;
                }
                let length = if rng.chance(0.2) { 0 } else { rng.next_u64() as u32 >> rng.below(32) };
                let d = DataSegRepr { addr: rng.next_u64(), lkey: rng.next_u64() as u32, length };
                bytes[at..at + DATA_SEG_LEN].copy_from_slice(&d.to_bytes());
            }
        }
        let fail = rng.chance(0.05);
        let want = if fail { None } else { desc_of_slot(&bytes) };
        let packed = pack(&qp, &c, 0).expect("the QP packs");
        rtl.set_bytes(attr, &bytes_of(&packed.attr));
        rtl.set(index_p, u64::from(index));
        let beats_of = |bytes: &[u8], fail: bool| -> Vec<(u64, bool, bool)> {
            let l = bytes.len();
            // A failed read flags every beat (`hdl::host::dma`).
            bytes
                .chunks(8)
                .enumerate()
                .map(|(j, b)| (u64::from_le_bytes(b.try_into().expect("8 bytes")), (j + 1) * 8 >= l, fail))
                .collect()
        };
        let mode = rng.below(8);
        if mode == 0 {
            // A snoop of other bytes, cut short after a few of its beats by this slot's start.
            let mut other = vec![0u8; stride];
            rng.fill(&mut other);
            rtl.set(snoop, 1);
            rtl.set(start, 1);
            rtl.tick();
            rtl.set(snoop, 0);
            rtl.set(start, 0);
            for (d, last, err) in beats_of(&other, false).into_iter().take(rng.below(4) as usize) {
                rtl.set(cpl_data, d);
                rtl.set(cpl_last, u64::from(last));
                rtl.set(cpl_err, u64::from(err));
                rtl.set(cpl_valid, 1);
                rtl.tick();
            }
            rtl.set(cpl_valid, 0);
            rtl.set(cut, 1);
        }
        let snooped = mode >= 6;
        rtl.set(snoop, u64::from(snooped));
        rtl.set(start, 1);
        rtl.tick();
        rtl.set(start, 0);
        rtl.set(snoop, 0);
        rtl.set(cut, 0);
        let (mut asked, mut beats, mut waited) = (None, Vec::<(u64, bool, bool)>::new(), 0);
        if snooped {
            // Another's read of the slot: its beats come with no read asked for.
            beats = beats_of(&bytes, fail);
            asked = Some(qp.sq.addr(index));
            *outcomes.entry("snooped").or_default() += 1;
        }
        // Done seen: then the rest of the read comes in, `busy` holding until its last beat is taken.
        let mut decided = false;
        loop {
            waited += 1;
            assert!(waited < 5_000, "{}: no end", ctx());
            let ready = asked.is_none() && !rng.chance(stall);
            rtl.set(rd_ready, u64::from(ready));
            let beat = !beats.is_empty() && !rng.chance(bubble);
            let (d, last, err) =
                if beat { beats.remove(0) } else { (rng.next_u64(), rng.chance(0.5), rng.chance(0.5)) };
            rtl.set(cpl_data, d);
            rtl.set(cpl_last, u64::from(last));
            rtl.set(cpl_err, u64::from(err));
            rtl.set(cpl_valid, u64::from(beat));
            rtl.eval();
            if decided {
                assert_eq!(rtl.get(done), 0, "{}: done twice", ctx());
                if rtl.get(busy) == 0 {
                    assert!(beats.is_empty() && !beat, "{}: not busy with beats of its read to come", ctx());
                    break;
                }
            } else {
                decided = rtl.get(done) == 1;
            }
            assert!(!(snooped && rtl.get(rd_valid) == 1), "{}: a read asked for while snooping", ctx());
            if rtl.get(rd_valid) == 1 && ready {
                let (a, l) = (rtl.get(rd_addr), rtl.get(rd_len) as usize);
                assert_eq!((a, l), (qp.sq.addr(index), stride), "{}: the read asked for is the whole slot", ctx());
                beats = beats_of(&bytes, fail);
                asked = Some(a);
            }
            rtl.tick();
        }
        let ok = rtl.get(ok_p) == 1;
        assert_eq!(ok, want.is_some(), "{}: the slot parses (RTL, model) for {want:?}", ctx());
        let Some(d) = want else {
            *outcomes.entry(if fail { "read failed" } else { "malformed" }).or_default() += 1;
            rtl.tick();
            continue;
        };
        let got = (rtl.get(imm), rtl.get(va), rtl.get(rkey), rtl.get(swap_add), rtl.get(compare));
        let model = (u64::from(d.imm), d.remote_va, u64::from(d.rkey), d.swap_add, d.compare);
        assert_eq!(got, model, "{}: immediate, remote address and key, atomic operands", ctx());
        match &d.data {
            WqeData::Inline(data) => {
                *outcomes.entry("inline").or_default() += 1;
                assert_eq!(rtl.get(inline_data), 1, "{}: inline", ctx());
                assert_eq!(rtl.get(num_p), data.len() as u64, "{}: the inline bytes", ctx());
                assert_eq!(rtl.get(slot_addr), qp.sq.addr(index), "{}: the slot's address", ctx());
            }
            WqeData::Sges(sges) => {
                assert_eq!(rtl.get(inline_data), 0, "{}: not inline", ctx());
                let kept = sges.len().min(max_sge);
                *outcomes.entry(if sges.len() > max_sge { "SGEs past the list" } else { "SGEs" }).or_default() += 1;
                assert_eq!(rtl.get(count), kept as u64, "{}: the SGEs kept of {sges:?}", ctx());
                let list = rtl.get_bytes(sges_p);
                for (i, s) in sges.iter().take(kept).enumerate() {
                    let got = (sge_field(&list, i, "addr"), sge_field(&list, i, "length"));
                    assert_eq!(got, (s.addr, u64::from(s.length)), "{}: SGE {i}", ctx());
                }
            }
        }
        rtl.tick();
    }
    eprintln!("send_desc: {slots} slots: {outcomes:?}");
    for k in ["inline", "SGEs", "malformed", "read failed", "snooped"] {
        assert!(outcomes.get(k).copied().unwrap_or(0) > slots / 50, "seed {seed}: too few {k}");
    }
}
