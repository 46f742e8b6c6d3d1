//! The DMA ports' width adapters at 64 bytes (`hdl::host::adapt`). `CplNarrow`: reads of 1 to 2,048 bytes,
//! back to back, their 64-byte completions after a random latency and with random bubbles, some failed;
//! the 8-byte beats out must be the read's bytes in order, as many as its length asks, `last` on the last,
//! `err` on every beat of a failed read, and no read let through while one is in the queue. `WriteWiden`:
//! an 8-byte beat at every 8-byte-aligned offset lands in the lanes its address names.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test cpl_narrow`.

use hdl::top::Top;
use hdl::Width;
use model::rng::Rng;
use sim::Sim;
use std::collections::VecDeque;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xC91_4A22)
}

#[test]
fn wide_completions_come_out_eight_bytes_a_beat() {
    let seed = seed();
    let k = Width::W64.bytes();
    let mut rtl = Sim::new(Top::CplNarrow, Width::W64);
    let q = |n| rtl.port(n);
    let (reset, rq_valid, rq_ready, rq_len, rd_valid, rd_ready) =
        (q("reset"), q("rq_valid"), q("rq_ready"), q("rq_len"), q("rd_valid"), q("rd_ready"));
    let (cp_valid, cp_data, cp_err, cp_last) = (q("cp_valid"), q("cp_data"), q("cp_err"), q("cp_last"));
    let (o_valid, o_data, o_err, o_last) = (q("cpl_valid"), q("cpl_data"), q("cpl_err"), q("cpl_last"));
    rtl.set(reset, 1);
    rtl.tick();
    rtl.set(reset, 0);
    let mut rng = Rng::new(seed);
    let ctx = |n: usize| format!("seed {seed} (FERRITE_SEED={seed}), read {n}");
    // Reads asked for and not yet let through; their beats due at the host; what each read must give.
    let mut asked: VecDeque<(usize, Vec<u8>, bool)> = VecDeque::new();
    let mut beats: VecDeque<(u64, Vec<u8>, bool, bool)> = VecDeque::new();
    let mut want: VecDeque<(Vec<u8>, bool)> = VecDeque::new();
    let (mut got, mut done, mut in_flight) = (Vec::new(), 0usize, 0usize);
    let reads = 400;
    let mut cycle = 0u64;
    while done < reads {
        cycle += 1;
        assert!(cycle < 2_000_000, "the reads end: {}", ctx(done));
        if asked.is_empty() && done + in_flight + asked.len() < reads {
            let len = match rng.below(4) {
                0 => 1 + rng.below(8) as usize,
                1 => 1 + rng.below(64) as usize,
                _ => 1 + rng.below(2048) as usize,
            };
            let data: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
            asked.push_back((len, data, rng.chance(0.1)));
        }
        let offered = asked.front().map(|a| a.0);
        rtl.set(rq_valid, u64::from(offered.is_some()));
        rtl.set(rq_len, offered.unwrap_or(0) as u64);
        let ready = !rng.chance(0.2);
        rtl.set(rd_ready, u64::from(ready));
        rtl.eval();
        assert_eq!(
            rtl.get(rd_valid),
            u64::from(offered.is_some() && in_flight == 0),
            "a read at a time: {}",
            ctx(done)
        );
        if ready && offered.is_some() && rtl.get(rq_ready) == 1 {
            let (len, data, bad) = asked.pop_front().expect("the read offered");
            let latency = 1 + rng.below(30);
            let nb = len.div_ceil(k);
            let mut padded = data.clone();
            padded.resize(nb * k, 0xEE);
            for (i, b) in padded.chunks(k).enumerate() {
                beats.push_back((cycle + latency, b.to_vec(), bad, i + 1 == nb));
            }
            want.push_back((data, bad));
            in_flight += 1;
        }
        match beats.front() {
            Some(&(due, ..)) if due <= cycle && !rng.chance(0.3) => {
                let (_, b, bad, last) = beats.pop_front().expect("a beat");
                rtl.set(cp_valid, 1);
                rtl.set_bytes(cp_data, &b);
                rtl.set(cp_err, u64::from(bad));
                rtl.set(cp_last, u64::from(last));
            }
            _ => rtl.set(cp_valid, 0),
        }
        rtl.eval();
        if rtl.get(o_valid) == 1 {
            let (data, bad) = want.front().expect("a beat out belongs to a read");
            assert_eq!(rtl.get(o_err) == 1, *bad, "the error flag: {}", ctx(done));
            got.extend(rtl.get(o_data).to_le_bytes());
            let last = rtl.get(o_last) == 1;
            assert_eq!(last, got.len() >= data.len(), "last on the read's last beat: {}", ctx(done));
            if last {
                assert_eq!(&got[..data.len()], &data[..], "the read's bytes: {}", ctx(done));
                got.clear();
                want.pop_front();
                done += 1;
                in_flight -= 1;
            }
        }
        rtl.tick();
    }
    assert!(beats.is_empty() && want.is_empty(), "nothing left over");
    eprintln!("cpl_narrow: {reads} reads in {cycle} cycles");
}

#[test]
fn an_eight_byte_write_lands_in_its_lanes() {
    let mut rtl = Sim::new(Top::WriteWiden, Width::W64);
    let q = |n| rtl.port(n);
    let (addr, data, strb, w_addr, w_data, w_strb) =
        (q("addr"), q("data"), q("strb"), q("wide_addr"), q("wide_data"), q("wide_strb"));
    let mut rng = Rng::new(seed());
    for n in 0..2000 {
        let a = rng.below(1 << 40) & !7;
        let d = rng.next_u64();
        let s = rng.below(256);
        rtl.set(addr, a);
        rtl.set(data, d);
        rtl.set(strb, s);
        rtl.eval();
        assert_eq!(rtl.get(w_addr), a & !63, "case {n}: the beat's address");
        let lane = (a % 64) as usize;
        let (wd, ws) = (rtl.get_bytes(w_data), rtl.get_bytes(w_strb));
        let mut want_d = vec![0u8; 64];
        want_d[lane..lane + 8].copy_from_slice(&d.to_le_bytes());
        let mut want_s = vec![0u8; 8];
        want_s[lane / 8] = s as u8;
        assert_eq!((wd, ws), (want_d, want_s), "case {n}: 8 bytes at {a:#x}");
    }
}
