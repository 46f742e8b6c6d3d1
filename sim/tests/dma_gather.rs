//! A packet's payload gathered from a scatter list in RTL (`hdl::host::gather::DmaGather`) against the
//! model's `qp::walk_sges` as its `req::gather` reads host memory: lists of up to 16 SGEs (some of no
//! length, at any address and length, some in memory that is not there), payloads of up to a path MTU at
//! any offset (some past the list's end). The block's two read ports (a tag each) may each have a read in
//! flight; the host answers each read after a random latency, its beats with random bubbles, the two tags'
//! beats interleaved at random (in order within a tag); the consumer takes the stream with random stalls, or
//! drops it (as the requester drops a failed one). Most gathers start as soon as the block takes one (`reading` low), while the last one's
//! bytes still stream; the rest once it is idle. Whether each gather fails, the reads it asks for (the
//! model's pieces) and the bytes it gives compared.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test dma_gather`.

use hdl::engine::resp::recv_wqe::{MAX_SGE, SGE_BITS};
use hdl::host::gather::max_read;
use hdl::top::Top;
use hdl::Width;
use model::hostmem::HostMemory;
use model::nic::qp::{walk_sges, Sge};
use model::rng::Rng;
use sim::Sim;
use std::collections::VecDeque;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x6A7_4E12)
}

/// The SGE list as the block takes it: `recv_sge` records (address, then length above it), 16 of them.
fn sges_bytes(sges: &[Sge]) -> Vec<u8> {
    let l = wire::contract::qpc::recv_sge();
    let (a, _) = l.slice("addr").expect("addr");
    let (n, _) = l.slice("length").expect("length");
    let mut bits = vec![0u8; MAX_SGE * SGE_BITS / 8];
    for (i, s) in sges.iter().enumerate() {
        for (lsb, v, w) in [(a, s.addr, 64), (n, u64::from(s.length), 32)] {
            for b in 0..w {
                if v >> b & 1 == 1 {
                    let at = i * SGE_BITS + lsb as usize + b;
                    bits[at / 8] |= 1 << (at % 8);
                }
            }
        }
    }
    bits
}

/// A completion beat: its bytes, whether the read failed, whether it is the read's last.
type Beat = (Vec<u8>, bool, bool);

#[test]
fn a_payload_is_gathered_as_the_model_reads_it() {
    gathered(Width::W8);
}

#[test]
fn a_payload_is_gathered_as_the_model_reads_it_64_bytes_a_beat() {
    gathered(Width::W64);
}

/// One gather: its list, offset and length; the model's verdict, bytes and reads; what the test does with it.
struct Case {
    sges: Vec<Sge>,
    off: u32,
    len: usize,
    good: bool,
    want: Vec<u8>,
    pieces: Vec<(u64, usize)>,
    /// Dropped at its `done` although it did not fail.
    drop: bool,
    /// Started as soon as the block takes a start, not once it is idle.
    overlap: bool,
    /// The host's read latency (cycles) and bubble rate, and the consumer's stall rate while it is read.
    host: (u64, f64, f64),
}

fn case(rng: &mut Rng, mem: &HostMemory, region: u64, max_read: u32) -> Case {
    let count = rng.below(MAX_SGE as u64 + 1) as usize;
    let sges: Vec<Sge> = (0..count)
        .map(|_| {
            let length = match rng.below(6) {
                0 => 0,
                1 => 1 + rng.below(8) as u32,
                2 => 1 + rng.below(100) as u32,
                _ => 1 + rng.below(3000) as u32,
            };
            let addr = if rng.chance(0.03) {
                0xDEAD_0000_0000 + rng.below(1 << 12)
            } else {
                region + rng.below((1 << 16) - u64::from(length))
            };
            Sge { addr, lkey: 0, length }
        })
        .collect();
    let total: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
    let off = match rng.below(4) {
        0 => 0,
        1 => rng.below(total + 1) as u32,
        _ => rng.below(total.max(1)) as u32,
    };
    let len = match rng.below(5) {
        0 => 0,
        1 => 1 + rng.below(4096) as usize,
        _ => (total.saturating_sub(u64::from(off)) as usize).min(1 + rng.below(4096) as usize),
    } + usize::from(rng.chance(0.05));
    // The model: the pieces and the bytes, or the gather's failure.
    let mut want = vec![0u8; len];
    let mut pieces = Vec::new();
    let good = walk_sges(&sges, off, len, |addr, a, b| {
        // A piece longer than a read is read in parts.
        for at in (a..b).step_by(max_read as usize) {
            pieces.push((addr + (at - a) as u64, (b - at).min(max_read as usize)));
        }
        mem.read(addr, &mut want[a..b]).is_ok()
    });
    let drop = good && rng.chance(0.1);
    let host = (1 + rng.below(40), [0.0, 0.3][rng.below(2) as usize], rng.below(3) as f64 * 0.3);
    Case { sges, off, len, good, want, pieces, drop, overlap: rng.chance(0.7), host }
}

fn gathered(w: Width) {
    let seed = seed();
    let k = w.bytes();
    let mut rtl = Sim::new(Top::DmaGather, w);
    let q = |n| rtl.port(n);
    let (reset, start, p_sges, p_count, p_off, p_len) =
        (q("reset"), q("start"), q("sges"), q("count"), q("off"), q("len"));
    let (p_busy, p_reading, p_done, p_err, p_drop) = (q("busy"), q("reading"), q("done"), q("err"), q("drop"));
    let ports = [
        (q("rd_valid"), q("rd_ready"), q("rd_addr"), q("rd_len"), q("cpl_valid")),
        (q("rd2_valid"), q("rd2_ready"), q("rd2_addr"), q("rd2_len"), q("cpl2_valid")),
    ];
    let (cpl_data, cpl_err, cpl_last) = (q("cpl_data"), q("cpl_err"), q("cpl_last"));
    let (o_data, o_keep, o_last, o_valid, o_ready) =
        (q("out_data"), q("out_keep"), q("out_last"), q("out_valid"), q("out_ready"));
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let mut rng = Rng::new(seed);
    let mem = HostMemory::new();
    let region = mem.alloc(1 << 16);
    let data: Vec<u8> = (0..1 << 16).map(|_| rng.below(256) as u8).collect();
    mem.write(region, &data).expect("the region written");
    let cases: Vec<Case> = (0..3000).map(|_| case(&mut rng, &mem, region, max_read(k))).collect();
    let ctx = |n: usize| {
        let c = &cases[n];
        format!("seed {seed} (FERRITE_SEED={seed}), width {k}, case {n}: {:x?} off {} len {}", c.sges, c.off, c.len)
    };
    let (mut ok, mut failed, mut dropped, mut overlapped, mut pieces_seen, mut bytes) = (0u32, 0u32, 0u32, 0u32, 0, 0);
    // The case being read (started, not done), the cases whose bytes are owed in order, the reads each asked.
    let (mut next, mut reading, mut owed) = (0usize, None::<usize>, VecDeque::<usize>::new());
    let mut reads: Vec<Vec<(u64, usize)>> = vec![Vec::new(); cases.len()];
    // Each tag's beats to come, in order, with the cycle each is due.
    let mut beats: [VecDeque<(u64, Beat)>; 2] = [VecDeque::new(), VecDeque::new()];
    let (mut in_flight, mut both) = ([0usize; 2], 0u64);
    let mut got = Vec::new();
    let (mut host, mut cycle) = (cases[0].host, 0u64);
    loop {
        cycle += 1;
        assert!(cycle < 20_000_000, "the gathers end: seed {seed} (FERRITE_SEED={seed}), width {k}, at case {next}");
        let (latency, bubble, stall) = host;
        // The host: reads answered after `latency` cycles, a beat a cycle but for the bubbles, from either tag
        // with beats due.
        for (t, &(valid, ready_p, addr, len, _)) in ports.iter().enumerate() {
            let ready = !rng.chance(stall / 2.0);
            rtl.set(ready_p, u64::from(ready));
            if ready && rtl.get(valid) == 1 {
                let (a, l) = (rtl.get(addr), rtl.get(len) as usize);
                let n = reading.expect("a read only for a started gather");
                assert_eq!(in_flight[t], 0, "one read in flight a tag: {}", ctx(n));
                reads[n].push((a, l));
                let mut buf = vec![0u8; l.div_ceil(k) * k];
                let bad = mem.read(a, &mut buf[..l]).is_err();
                let nb = l.div_ceil(k);
                for (i, b) in buf.chunks(k).enumerate() {
                    beats[t].push_back((cycle + latency + rng.below(8), (b.to_vec(), bad, i + 1 == nb)));
                }
                in_flight[t] = 1;
            }
        }
        both += u64::from(in_flight == [1, 1]);
        let due: Vec<usize> = (0..2).filter(|&t| beats[t].front().is_some_and(|&(d, _)| d <= cycle)).collect();
        for &(.., cpl_valid) in &ports {
            rtl.set(cpl_valid, 0);
        }
        if !due.is_empty() && !rng.chance(bubble) {
            let t = due[rng.below(due.len() as u64) as usize];
            let (_, (b, bad, last)) = beats[t].pop_front().expect("a beat");
            rtl.set(ports[t].4, 1);
            rtl.set_bytes(cpl_data, &b);
            rtl.set(cpl_err, u64::from(bad));
            rtl.set(cpl_last, u64::from(last));
            if last {
                in_flight[t] = 0;
            }
        }
        // The gather read: its verdict; its bytes owed unless it failed or is dropped (only in this cycle).
        rtl.set(p_drop, 0);
        if rtl.get(p_done) == 1 {
            let n = reading.take().unwrap_or_else(|| panic!("done once a gather: cycle {cycle}, after case {next}"));
            let (c, err) = (&cases[n], rtl.get(p_err) == 1);
            assert_eq!(err, !c.good, "whether the gather failed: {}", ctx(n));
            rtl.set(p_drop, u64::from(err || c.drop));
            if c.good {
                let mut asked = reads[n].clone();
                asked.sort_unstable();
                let mut pieces = c.pieces.clone();
                pieces.sort_unstable();
                assert_eq!(asked, pieces, "the reads asked for: {}", ctx(n));
                ok += 1;
                pieces_seen += c.pieces.len();
                if c.drop {
                    dropped += 1;
                } else if c.len > 0 {
                    owed.push_back(n);
                }
            } else {
                failed += 1;
            }
        }
        // The next gather: once the block takes a start, or once it is idle.
        rtl.set(start, 0);
        if next < cases.len() && reading.is_none() && rtl.get(p_reading) == 0 {
            let c = &cases[next];
            let busy = rtl.get(p_busy) == 1;
            if c.overlap || !busy {
                overlapped += u32::from(busy);
                rtl.set_bytes(p_sges, &sges_bytes(&c.sges));
                rtl.set(p_count, c.sges.len() as u64);
                rtl.set(p_off, u64::from(c.off));
                rtl.set(p_len, c.len as u64);
                rtl.set(start, 1);
                host = c.host;
                reading = Some(next);
                next += 1;
            }
        }
        // The consumer: the owed gathers' bytes in order, with stalls; nothing else may come out.
        let take = !owed.is_empty() && !rng.chance(stall);
        rtl.set(o_ready, u64::from(take));
        if rtl.get(o_valid) == 1 {
            let n = *owed.front().unwrap_or_else(|| panic!("bytes of a dropped or failed gather, after case {next}"));
            if take {
                let (d, keep) = (rtl.get_bytes(o_data), rtl.get_bytes(o_keep));
                let kept: Vec<bool> = (0..k).map(|i| keep[i / 8] >> (i % 8) & 1 == 1).collect();
                assert!(kept.iter().skip_while(|&&x| x).all(|&x| !x), "keep is a prefix: {}", ctx(n));
                got.extend((0..k).filter(|&i| kept[i]).map(|i| d[i]));
                if rtl.get(o_last) == 1 {
                    assert_eq!(got, cases[n].want, "the payload: {}", ctx(n));
                    bytes += got.len();
                    got.clear();
                    owed.pop_front();
                }
            }
        }
        rtl.tick();
        if next == cases.len() && reading.is_none() && owed.is_empty() && rtl.get(p_busy) == 0 {
            break;
        }
    }
    eprintln!(
        "dma_gather (width {k}): {ok} gathered ({pieces_seen} pieces, {bytes} bytes; {dropped} dropped), {failed} \
         failed; {overlapped} started while the last one streamed; {both} cycles with both tags' reads in \
         flight; {cycle} cycles"
    );
    assert!(ok > 2000 && failed > 100 && dropped > 100, "seed {seed}: every outcome met often");
    assert!(overlapped > 500, "seed {seed}: gathers overlap");
    assert!(both > 10_000, "seed {seed}: two reads in flight");
}
