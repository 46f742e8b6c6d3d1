//! A host read streamed out as payload in RTL (`hdl::host::stream::DmaStream`), at both widths: reads of 1
//! byte to the longest (`M` beats) at any address, started whenever the block can start one; the host takes
//! each with random stalls and completes it after a random latency with gaps between beats, a few failing
//! (the error flag on every beat, as a failed completion carries it); the consumer takes beats with random
//! back-pressure, now and then none for a long stretch, so the queue fills and the block must stop taking
//! reads. Every read must reach the host as started; its first completion beat must be shown with its error
//! flag the cycle after it came; every good read's bytes must come out whole and in order (lane 0 first, `keep`
//! covering exactly the bytes, `last` on the final beat); a failed read must leave one beat, its last, with
//! no lanes kept.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test dma_stream`.

use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::Sim;
use std::collections::VecDeque;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x57AE_A4D5)
}

/// The host's byte at `addr`.
fn byte(addr: u64) -> u8 {
    (addr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// A read the host took: its address, length, beats sent, the cycle it may start, whether it fails.
struct Read {
    addr: u64,
    len: usize,
    sent: usize,
    due: u64,
    bad: bool,
}

fn check_width(w: Width, longest: usize) {
    let seed = seed() ^ w.bytes() as u64;
    let k = w.bytes();
    let mut sim = Sim::new(Top::DmaStream, w);
    let q = |s: &str| sim.port(s);
    let (reset, start, addr, len, can_start) = (q("reset"), q("start"), q("addr"), q("len"), q("can_start"));
    let (rd_valid, rd_ready, rd_addr, rd_len) = (q("rd_valid"), q("rd_ready"), q("rd_addr"), q("rd_len"));
    let (cpl_valid, cpl_data, cpl_err, cpl_last) = (q("cpl_valid"), q("cpl_data"), q("cpl_err"), q("cpl_last"));
    let (first, err) = (q("first"), q("err"));
    let (out_data, out_keep, out_last, out_valid, out_ready) =
        (q("out_data"), q("out_keep"), q("out_last"), q("out_valid"), q("out_ready"));
    let mut rng = Rng::new(seed);
    sim.set(reset, 1);
    sim.tick();
    sim.set(reset, 0);
    // Reads started and not yet offered to the host; the one the host has; the bytes owed out, by read.
    let mut offered: Option<(u64, usize)> = None;
    let mut host: Option<Read> = None;
    let mut owed: VecDeque<Vec<u8>> = VecDeque::new();
    let mut got: Vec<u8> = Vec::new();
    let (mut reads, mut failed, mut full_waits, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    let mut drought = 0u64;
    // The first beat of the last cycle (whether the read failed), shown this cycle.
    let mut shown: Option<bool> = None;
    for cycle in 0..300_000u64 {
        let ctx = |what: &str| format!("seed {seed} (FERRITE_SEED={seed}), width {k}, cycle {cycle}: {what}");
        // A new read when the block can take one.
        sim.eval();
        let can = sim.get(can_start) == 1;
        if offered.is_none() && host.is_none() {
            full_waits += u64::from(!can);
        } else {
            assert!(!can, "{}", ctx("can start while a read is under way"));
        }
        let go = can && rng.chance(0.3);
        if go {
            let n = match rng.below(4) {
                0 => 1 + rng.below(2 * k as u64) as usize,
                1 => longest,
                _ => 1 + rng.below(longest as u64) as usize,
            };
            let a = rng.next_u64() >> rng.below(40);
            sim.set(addr, a);
            sim.set(len, n as u64);
            offered = Some((a, n));
        }
        sim.set(start, u64::from(go));
        // The host: takes the offer with stalls, then the read's beats after its latency, with gaps.
        let ready = rng.chance(0.7);
        sim.set(rd_ready, u64::from(ready));
        let mut beat = None;
        if let Some(r) = host.as_mut().filter(|r| r.due <= cycle && !rng.chance(0.3)) {
            let i = r.sent;
            let data: Vec<u8> = (0..k)
                .map(|j| if i * k + j < r.len { byte(r.addr + (i * k + j) as u64) } else { rng.next_u64() as u8 })
                .collect();
            let last = (i + 1) * k >= r.len;
            sim.set_bytes(cpl_data, &data);
            sim.set(cpl_err, u64::from(r.bad));
            sim.set(cpl_last, u64::from(last));
            sim.set(cpl_valid, 1);
            r.sent += 1;
            beat = Some((i == 0, r.bad, last));
        } else {
            sim.set(cpl_valid, 0);
        }
        // The consumer, with a drought now and then.
        if drought == 0 && rng.chance(0.001) {
            drought = 2_000 + rng.below(4_000);
        }
        drought = drought.saturating_sub(1);
        sim.set(out_ready, u64::from(drought == 0 && !rng.chance(0.3)));
        sim.eval();

        if sim.get(rd_valid) == 1 {
            assert!(!go, "{}", ctx("a read offered as another starts"));
            let (a, n) = offered.unwrap_or_else(|| panic!("{}", ctx("a read offered that was not started")));
            assert_eq!((sim.get(rd_addr), sim.get(rd_len)), (a, n as u64), "{}", ctx("the read as started"));
            if ready {
                assert!(host.is_none(), "{}", ctx("a second read in flight"));
                let bad = rng.chance(0.05);
                host = Some(Read { addr: a, len: n, sent: 0, due: cycle + 2 + rng.below(40), bad });
                offered = None;
            }
        } else if !go {
            assert!(offered.is_none(), "{}", ctx("a started read not offered"));
        }
        assert_eq!(sim.get(first) == 1, shown.is_some(), "{}", ctx("the first beat shown the cycle after"));
        if let Some(bad) = shown.take() {
            assert_eq!(sim.get(err) == 1, bad, "{}", ctx("the read's error with its first beat"));
        }
        if let Some((is_first, bad, last)) = beat {
            if is_first {
                shown = Some(bad);
                let r = host.as_ref().expect("a read in flight");
                // A failed read owes one beat: its last, with no lanes kept.
                owed.push_back(if bad { Vec::new() } else { (0..r.len).map(|j| byte(r.addr + j as u64)).collect() });
            }
            if last {
                let r = host.take().expect("a read in flight");
                reads += 1;
                failed += u64::from(r.bad);
            }
        }
        if sim.get(out_valid) == 1 && sim.get(out_ready) == 1 {
            let want = owed.front().unwrap_or_else(|| panic!("{}", ctx("a beat out that no good read owes")));
            let keep = sim.get(out_keep);
            let data = sim.get_bytes(out_data);
            let left = want.len() - got.len();
            let expect_keep = if left >= k { u64::MAX >> (64 - k) } else { (1u64 << left) - 1 };
            assert_eq!(keep, expect_keep, "{}", ctx("keep covers the bytes left"));
            got.extend_from_slice(&data[..left.min(k)]);
            assert_eq!(sim.get(out_last) == 1, got.len() == want.len(), "{}", ctx("last on the final beat"));
            if got.len() == want.len() {
                assert_eq!(&got, want, "{}", ctx("the read's bytes"));
                bytes += got.len() as u64;
                got.clear();
                owed.pop_front();
            }
        }
        sim.tick();
    }
    eprintln!(
        "dma_stream w{k}: {reads} reads ({failed} failed), {bytes} bytes out, {full_waits} cycles the queue held a read back"
    );
    assert!(reads > 100 && failed > 3 && full_waits > 1000, "too little exercised");
}

#[test]
fn reads_stream_out_whole_at_8_bytes() {
    check_width(Width::W8, 4096);
}

#[test]
fn reads_stream_out_whole_at_64_bytes() {
    check_width(Width::W64, 4096);
}
