//! A packet's payload gathered from a scatter list in RTL (`hdl::host::gather::DmaGather`) against the
//! model's `qp::walk_sges` as its `req::gather` reads host memory: lists of up to 16 SGEs (some of no
//! length, at any address and length, some in memory that is not there), payloads of up to a path MTU at
//! any offset (some past the list's end). Some gathers are single packets; others are a message's packets
//! in turn (each as long as a path MTU, the last what is left, the message's length at times past the
//! list's end), which the block reads ahead and each next packet claims; the message is cut into by
//! another one's packet at times, taken up again, or a packet of it asked for twice, so what was read
//! ahead is dropped. The block's read ports (a tag a stream: 2 at 8 bytes, 4 at 64) may each have a read
//! in flight; the host answers each read after a random latency, its beats with random bubbles, the
//! tags' beats interleaved at random (in order within a tag); the consumer takes the stream with random stalls, or
//! drops it (as the requester drops a failed one). Most gathers start as soon as the block takes one
//! (`reading` low), while the last one's bytes still stream; the rest once it is idle. Whether each gather
//! fails and the bytes it gives are compared; each read asked for must be one of the model's pieces of a
//! packet of the message last started (of that packet alone for a single one).
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test dma_gather`.

use hdl::engine::resp::recv_wqe::MAX_SGE;
use hdl::host::gather::{max_read, streams};
use hdl::top::Top;
use hdl::Width;
use model::hostmem::HostMemory;
use model::nic::qp::{walk_sges, Sge};
use model::rng::Rng;
use sim::responder::sges_bytes;
use sim::Sim;
use std::collections::VecDeque;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x6A7_4E12)
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
    /// The message the packet is of, whether it claims what was read ahead, and how far to read ahead.
    tag: u32,
    claim: bool,
    end: u32,
}

/// The gather of the packet at `off` of `len` bytes of `sges`, of message `tag`: the model's verdict, bytes
/// and pieces (a piece longer than a read in parts); dropped (if good) and started early by the chances
/// given, the host's pace at random.
fn packet(
    rng: &mut Rng,
    mem: &HostMemory,
    sges: Vec<Sge>,
    (off, len): (u32, usize),
    max_read: u32,
    (tag, claim, end): (u32, bool, u32),
    (drop, overlap): (f64, f64),
) -> Case {
    let mut want = vec![0u8; len];
    let mut pieces = Vec::new();
    let good = walk_sges(&sges, off, len, |addr, a, b| {
        for at in (a..b).step_by(max_read as usize) {
            pieces.push((addr + (at - a) as u64, (b - at).min(max_read as usize)));
        }
        mem.read(addr, &mut want[a..b]).is_ok()
    });
    let drop = good && rng.chance(drop);
    let host = (1 + rng.below(40), [0.0, 0.3][rng.below(2) as usize], rng.below(3) as f64 * 0.3);
    Case { sges, off, len, good, want, pieces, drop, overlap: rng.chance(overlap), host, tag, claim, end }
}

/// The reads the block may ask for the packet at `off` of `len` bytes: every piece of its walk, those past
/// a read that fails too (the block learns of a failure only from the read's first beat).
fn walk_pieces(sges: &[Sge], off: u32, len: usize, max_read: u32) -> Vec<(u64, usize)> {
    let mut pieces = Vec::new();
    walk_sges(sges, off, len, |addr, a, b| {
        for at in (a..b).step_by(max_read as usize) {
            pieces.push((addr + (at - a) as u64, (b - at).min(max_read as usize)));
        }
        true
    });
    pieces
}

/// A random list of up to 16 SGEs in `region` (some of no length, a few not in memory).
fn sge_list(rng: &mut Rng, region: u64) -> Vec<Sge> {
    let count = rng.below(MAX_SGE as u64 + 1) as usize;
    (0..count)
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
        .collect()
}

/// The test's gathers, and for each message the reads that may be asked for while it is the last started:
/// the model's pieces of every packet of it.
fn cases(rng: &mut Rng, mem: &HostMemory, region: u64, max_read: u32, n: usize) -> (Vec<Case>, Vec<Vec<(u64, usize)>>) {
    let (mut out, mut allowed) = (Vec::new(), Vec::new());
    let single = |rng: &mut Rng, tag: u32, allowed: &mut Vec<Vec<(u64, usize)>>| {
        let c = case(rng, mem, region, max_read, tag);
        allowed.push(walk_pieces(&c.sges, c.off, c.len, max_read));
        c
    };
    while out.len() < n {
        let tag = allowed.len() as u32;
        if !rng.chance(0.4) {
            let c = single(rng, tag, &mut allowed);
            out.push(c);
            continue;
        }
        // A message's packets in turn.
        let sges = sge_list(rng, region);
        let total: u32 = sges.iter().map(|s| s.length).sum();
        let end = if rng.chance(0.1) { total + 1 + rng.below(100) as u32 } else { total };
        let plen = [256u32, 512, 1024, 2048, 4096][rng.below(5) as usize];
        let packets: Vec<(u32, usize)> =
            (0..end.div_ceil(plen)).map(|i| (i * plen, (end - i * plen).min(plen) as usize)).collect();
        let mut may = Vec::new();
        for &(off, len) in &packets {
            may.extend(walk_pieces(&sges, off, len, max_read));
        }
        allowed.push(may);
        let mut i = if rng.chance(0.2) { rng.below(packets.len().max(1) as u64) as usize } else { 0 };
        let mut first = true;
        while i < packets.len() && out.len() < n {
            let (off, len) = packets[i];
            let claim = !first || rng.chance(0.2);
            let end = if rng.chance(0.95) { end } else { 0 };
            out.push(packet(rng, mem, sges.clone(), (off, len), max_read, (tag, claim, end), (0.05, 0.8)));
            first = false;
            if rng.chance(0.05) {
                // Another message's packet cuts in; this one's next packet comes after it.
                let c = single(rng, allowed.len() as u32, &mut allowed);
                out.push(c);
            } else if rng.chance(0.03) {
                // The same packet asked for again.
                continue;
            }
            if rng.chance(0.03) {
                break;
            }
            i += 1;
        }
    }
    out.truncate(n);
    (out, allowed)
}

/// A single packet's gather: its list, offset and length, no read ahead.
fn case(rng: &mut Rng, mem: &HostMemory, region: u64, max_read: u32, tag: u32) -> Case {
    let sges = sge_list(rng, region);
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
    let claim = rng.chance(0.1);
    packet(rng, mem, sges, (off, len), max_read, (tag, claim, 0), (0.1, 0.7))
}

fn gathered(w: Width) {
    let seed = seed();
    let k = w.bytes();
    let mut rtl = Sim::new(Top::DmaGather, w);
    let q = |n| rtl.port(n);
    let (reset, start, p_sges, p_count, p_off, p_len) =
        (q("reset"), q("start"), q("sges"), q("count"), q("off"), q("len"));
    let (p_busy, p_reading, p_done, p_err, p_drop) = (q("busy"), q("reading"), q("done"), q("err"), q("drop"));
    let (p_claim, p_tag, p_end) = (q("claim"), q("tag"), q("msg_end"));
    let (rd_valid, rd_ready, rd_addr, rd_len, cpl_valid) =
        (q("rd_valid"), q("rd_ready"), q("rd_addr"), q("rd_len"), q("cpl_valid"));
    let n = streams(k);
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
    let (cases, allowed) = cases(&mut rng, &mem, region, max_read(k), 4000);
    let ctx = |n: usize| {
        let c = &cases[n];
        format!("seed {seed} (FERRITE_SEED={seed}), width {k}, case {n}: {:x?} off {} len {}", c.sges, c.off, c.len)
    };
    let (mut ok, mut failed, mut dropped, mut overlapped, mut pieces_seen, mut bytes) = (0u32, 0u32, 0u32, 0u32, 0, 0);
    // The case being read (started, not done), the cases whose bytes are owed in order, the reads each asked.
    let (mut next, mut reading, mut owed) = (0usize, None::<usize>, VecDeque::<usize>::new());
    // The cycle and message of each start; each port's read offered and not yet taken; reads asked for
    // while no gather was started (ahead).
    let mut starts: Vec<(u64, u32)> = Vec::new();
    let (mut offered, mut ahead) = (vec![false; n], 0u32);
    // Reads offered since the last start; packets of bytes whose every read was asked for before their start.
    let (mut since_start, mut claimed) = (0u32, 0u32);
    // Each tag's beats to come, in order, with the cycle each is due.
    let mut beats: Vec<VecDeque<(u64, Beat)>> = vec![VecDeque::new(); n];
    let (mut in_flight, mut all) = (vec![false; n], 0u64);
    let mut got = Vec::new();
    let (mut host, mut cycle) = (cases[0].host, 0u64);
    loop {
        cycle += 1;
        assert!(cycle < 20_000_000, "the gathers end: seed {seed} (FERRITE_SEED={seed}), width {k}, at case {next}");
        let (latency, bubble, stall) = host;
        // The host: reads answered after `latency` cycles, a beat a cycle but for the bubbles, from either tag
        // with beats due.
        let valid = rtl.get(rd_valid);
        assert_eq!(valid >> n, 0, "only the block's {n} streams read: seed {seed}, width {k}, cycle {cycle}");
        let (addrs, lens) = (rtl.get_bytes(rd_addr), rtl.get_bytes(rd_len));
        let mut ready_bits = 0;
        for t in 0..n {
            let ready = !rng.chance(stall / 2.0);
            ready_bits |= u64::from(ready) << t;
            let valid = valid >> t & 1 == 1;
            let a = u64::from_le_bytes(addrs[8 * t..8 * t + 8].try_into().expect("an address"));
            let l = usize::from(u16::from_le_bytes([lens[2 * t], lens[2 * t + 1]]));
            if valid && !offered[t] {
                // A read asked for the cycle before it is offered, of the message started last by then
                // (a start holds reads back in its cycle).
                offered[t] = true;
                let of = |c: u64| starts.iter().rev().find(|&&(at, _)| at <= c).map(|&(_, tag)| tag);
                let tags: Vec<u32> = (1..=3).filter_map(|back| of(cycle.saturating_sub(back))).collect();
                assert!(
                    tags.iter().any(|&tag| allowed[tag as usize].contains(&(a, l))),
                    "a read of {l} bytes at {a:#x} is a piece of a packet of message {tags:?}: seed {seed} \
                     (FERRITE_SEED={seed}), width {k}, cycle {cycle}, after case {next}"
                );
                ahead += u32::from(reading.is_none());
                since_start += u32::from(reading.is_some());
            }
            if ready && valid {
                offered[t] = false;
                assert!(!in_flight[t], "one read in flight a tag: seed {seed}, width {k}, cycle {cycle}");
                let mut buf = vec![0u8; l.div_ceil(k) * k];
                let bad = mem.read(a, &mut buf[..l]).is_err();
                let nb = l.div_ceil(k);
                for (i, b) in buf.chunks(k).enumerate() {
                    beats[t].push_back((cycle + latency + rng.below(8), (b.to_vec(), bad, i + 1 == nb)));
                }
                in_flight[t] = true;
            }
        }
        rtl.set(rd_ready, ready_bits);
        all += u64::from(in_flight.iter().all(|&f| f));
        let due: Vec<usize> = (0..n).filter(|&t| beats[t].front().is_some_and(|&(d, _)| d <= cycle)).collect();
        rtl.set(cpl_valid, 0);
        if !due.is_empty() && !rng.chance(bubble) {
            let t = due[rng.below(due.len() as u64) as usize];
            let (_, (b, bad, last)) = beats[t].pop_front().expect("a beat");
            rtl.set(cpl_valid, 1 << t);
            rtl.set_bytes(cpl_data, &b);
            rtl.set(cpl_err, u64::from(bad));
            rtl.set(cpl_last, u64::from(last));
            if last {
                in_flight[t] = false;
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
                ok += 1;
                claimed += u32::from(c.len > 0 && since_start == 0);
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
                rtl.set(p_claim, u64::from(c.claim));
                rtl.set(p_tag, u64::from(c.tag));
                rtl.set(p_end, u64::from(c.end));
                rtl.set(start, 1);
                starts.push((cycle, c.tag));
                since_start = 0;
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
         failed; {overlapped} started while the last one streamed; {all} cycles with all {n} tags' reads in \
         flight; {ahead} reads asked for ahead, {claimed} packets read wholly ahead; {cycle} cycles"
    );
    assert!(ahead > 500 && claimed > 200, "seed {seed}: packets read ahead and claimed");
    assert!(ok > 2500 && failed > 100 && dropped > 100, "seed {seed}: every outcome met often");
    assert!(overlapped > 500, "seed {seed}: gathers overlap");
    assert!(all > 10_000, "seed {seed}: a read in flight in every stream");
}
