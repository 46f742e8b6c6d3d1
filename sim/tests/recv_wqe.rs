//! A receive WQE fetched and its scatter list checked in RTL (`hdl::engine::resp::recv_wqe::RecvWqe`)
//! against the model's `resp::recv_wqe`: random RQ rings (any stride, size and counter), WQEs with up to
//! two SGEs past `max_sge` or past the slot, SGEs whose keys are live, stale or unknown, aimed inside, across
//! the end of and outside their MR, of the QP's PD or another, some of zero length; reads that fail. The
//! DMA read asked for must be the model's read, and `ok`, `wr_id` and the SGEs kept must be the model's,
//! with random back-pressure on the read request and bubbles in its completion.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test recv_wqe`.

use hdl::engine::resp::recv_wqe::SGE_BITS;
use hdl::top::Top;
use hdl::Width;
use model::hostmem::{Dma, DmaError};
use model::nic::context::pack;
use model::nic::mr::Mr;
use model::nic::resp::recv_wqe;
use model::rng::Rng;
use sim::fetch::{self, FetchPorts, Host};
use sim::responder::{bytes_of, random_qp, Mrs};
use sim::Sim;
use std::cell::RefCell;
use wire::contract::profile::Profile;
use wire::contract::qpc::{qp_context, recv_sge};
use wire::contract::verbs::access;
use wire::contract::wqe::{DataSegRepr, RecvCtrlRepr, DATA_SEG_LEN, MAX_LOG_STRIDE, MIN_RQ_LOG_STRIDE, RECV_DATA};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0E3C_5A7E)
}

/// The RQ slot in host memory, the reads the model made of it, and whether reads fail.
struct Slot {
    addr: u64,
    bytes: Vec<u8>,
    fail: bool,
    reads: RefCell<Vec<(u64, usize)>>,
}

impl Dma for Slot {
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.reads.borrow_mut().push((iova, buf.len()));
        let off = iova.wrapping_sub(self.addr) as usize;
        match self.bytes.get(off..off + buf.len()) {
            Some(b) if !self.fail => {
                buf.copy_from_slice(b);
                Ok(())
            }
            _ => Err(DmaError { iova, len: buf.len() }),
        }
    }
    fn dma_write(&mut self, _iova: u64, _data: &[u8]) {
        unreachable!("fetching a receive WQE writes nothing")
    }
}

/// Bits `lsb..lsb + width` of a little-endian byte bus.
fn bits(bytes: &[u8], lsb: u32, width: u32) -> u128 {
    (0..width).fold(0u128, |a, i| {
        let b = lsb + i;
        a | u128::from(bytes[(b / 8) as usize] >> (b % 8) & 1) << i
    })
}

#[test]
fn receive_wqes_are_read_and_checked_as_the_model_does() {
    check(Top::RecvWqe, Top::engine_profile(), 5_000);
}

/// The large profile: 16 SGEs (a 272-byte read, the `sges` port full), 65,536 MRs.
#[test]
fn receive_wqes_of_the_large_profile_are_read_and_checked_as_the_model_does() {
    check(Top::RecvWqeLarge, Profile::large(), 2_000);
}

fn check(top: Top, p: Profile, wqes: usize) {
    let seed = seed();
    let c = qp_context(&p);
    let max_sge = p.max_sge as usize;
    let mut rtl = Sim::new(top, Width::W8);
    let q = |n| rtl.port(n);
    let (reset, p_attr, p_index) = (q("reset"), q("attr"), q("index"));
    let (ok, wr_id, count, p_sges) = (q("ok"), q("wr_id"), q("count"), q("sges"));
    let f = FetchPorts::of(&rtl);
    let sl = recv_sge();
    let (addr_f, len_f) = (sl.slice("addr").unwrap(), sl.slice("length").unwrap());
    let mut rng = Rng::new(seed);
    let (stall, bubble) = (rng.below(60) as f64 / 100.0, rng.below(60) as f64 / 100.0);
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let (mut oks, mut bad_wqe, mut failed, mut kept, mut full, mut cycles) = (0u32, 0u32, 0u32, 0usize, 0usize, 0u64);
    let mut mrs = Mrs::random(&mut rng, &p);
    for n in 0..wqes {
        let ctx = || format!("seed {seed} (FERRITE_SEED={seed}), WQE {n}");
        if n % 100 == 0 {
            mrs = Mrs::random(&mut rng, &p);
        }
        let mut qp = random_qp(&mut rng, &p);
        qp.rq.iova = if rng.chance(0.1) { u64::MAX - rng.below(1 << 20) } else { rng.next_u64() >> 16 };
        qp.rq.log_size = rng.below(13) as u8;
        qp.rq.log_stride = MIN_RQ_LOG_STRIDE + rng.below(u64::from(MAX_LOG_STRIDE - MIN_RQ_LOG_STRIDE) + 1) as u8;
        let stride = 1usize << qp.rq.log_stride;
        let index = rng.next_u64() as u16;
        // The slot: a control segment and SGEs, the rest anything.
        let mut bytes = vec![0u8; stride];
        rng.fill(&mut bytes);
        let num = match rng.below(8) {
            0 => rng.next_u64() as u16,
            1 => (max_sge + 1 + rng.below(2) as usize) as u16,
            _ => rng.below(max_sge as u64 + 1) as u16,
        };
        // Most SGEs name MRs the QP's PD may write, so that whole lists pass.
        let writable: Vec<Mr> =
            mrs.entries.iter().flatten().filter(|m| m.access & access::LOCAL_WRITE != 0).copied().collect();
        if let Some(m) = writable.get(rng.below(writable.len().max(1) as u64) as usize) {
            qp.pdn = m.pdn;
        }
        let good: Vec<Mr> = writable.iter().filter(|m| m.pdn == qp.pdn).copied().collect();
        // A quarter of the WQEs name only memory they may write, so that long lists pass whole.
        let clean = !good.is_empty() && rng.chance(0.25);
        let ctrl = RecvCtrlRepr { wr_id: rng.next_u64(), num_sge: num };
        bytes[..RecvCtrlRepr::LEN].copy_from_slice(&ctrl.to_bytes());
        for i in 0..usize::from(num).min(max_sge) {
            let at = RECV_DATA + i * DATA_SEG_LEN;
            if at + DATA_SEG_LEN > stride {
                break;
            }
            if clean {
                let m = good[rng.below(good.len() as u64) as usize];
                let length = 1 + rng.below(m.length.min(5000)) as u32;
                let addr = m.iova + rng.below(m.length - u64::from(length) + 1);
                let d = DataSegRepr { addr, lkey: m.key, length };
                bytes[at..at + DATA_SEG_LEN].copy_from_slice(&d.to_bytes());
                continue;
            }
            let (lkey, mr) = match good.get(rng.below(good.len().max(1) as u64) as usize) {
                Some(m) if rng.chance(0.8) => (m.key, Some(*m)),
                _ => mrs.key(&mut rng),
            };
            let length = match rng.below(10) {
                0 => 0,
                1 => rng.next_u64() as u32,
                _ => 1 + rng.below(5000) as u32,
            };
            let addr = match (mr, rng.below(12)) {
                (Some(m), 0) => m.iova + m.length - rng.below(u64::from(length) + 1).min(m.length),
                (Some(m), 1) => m.iova.wrapping_sub(rng.below(64)),
                (Some(m), _) => m.iova + rng.below(m.length),
                (None, _) => rng.next_u64(),
            };
            let d = DataSegRepr { addr, lkey, length };
            bytes[at..at + DATA_SEG_LEN].copy_from_slice(&d.to_bytes());
        }
        let fail = rng.chance(0.05);
        let slot = Slot { addr: qp.rq.addr(index), bytes, fail, reads: RefCell::new(Vec::new()) };
        let want = recv_wqe(&mrs.table, p.max_sge, &qp, index, &slot);
        let read = slot.reads.borrow()[0];

        let attr = pack(&qp, &c, 0).expect("the QP packs").attr;
        rtl.set_bytes(p_attr, &bytes_of(&attr));
        rtl.set(p_index, u64::from(index));
        let host = Host { addr: slot.addr, bytes: &slot.bytes, fail };
        let (asked, waited) = fetch::run(&mut rtl, &f, &mut rng, (stall, bubble), &mrs, &p, &host, &ctx);
        assert_eq!(asked, read, "{}: the read asked for (address, length) is the model's", ctx());
        cycles += waited;
        let (got_ok, got_id) = (rtl.get(ok) == 1, rtl.get(wr_id));
        match want {
            Ok((id, sges)) => {
                assert!(got_ok, "{}: the model takes the WQE, the RTL does not", ctx());
                assert_eq!(got_id, id, "{}: wr_id", ctx());
                assert_eq!(rtl.get(count) as usize, sges.len(), "{}: SGEs kept", ctx());
                let bus = rtl.get_bytes(p_sges);
                for (i, s) in sges.iter().enumerate() {
                    let base = (i * SGE_BITS) as u32;
                    let got =
                        (bits(&bus, base + addr_f.0, addr_f.1) as u64, bits(&bus, base + len_f.0, len_f.1) as u32);
                    assert_eq!(got, (s.addr, s.length), "{}: SGE {i} (address, length)", ctx());
                }
                oks += 1;
                kept += sges.len();
                full += usize::from(sges.len() == max_sge);
            }
            Err(id) => {
                assert!(!got_ok, "{}: the model refuses the WQE (wr_id {id:#x}), the RTL takes it", ctx());
                assert_eq!(got_id, id, "{}: wr_id of a refused WQE", ctx());
                if id == 0 && fail {
                    failed += 1;
                } else {
                    bad_wqe += 1;
                }
            }
        }
        rtl.tick();
    }
    eprintln!(
        "recv_wqe ({}): {wqes} WQEs: {oks} taken ({kept} SGEs kept, {full} with all {max_sge}), {bad_wqe} refused, {failed} reads failed; {cycles} cycles",
        p.name
    );
    let w = wqes as u32;
    assert!(
        oks > w / 10 && bad_wqe > w / 10 && failed > w / 50 && full > 0,
        "seed {seed}: the generator reaches every outcome"
    );
}
