//! The latency tools' loops (perftest's `run_iter_lat_write`, `run_iter_lat`, `run_iter_lat_send`) on QP
//! 0, and `print_report_lat`'s statistics.

use super::opts::Length;
use super::rig::{Failure, Rig};
use crate::perf::Op;
use driver::oob::perftest::{Role, Session};
use driver::{SendWr, Sge};
use serde::Serialize;
use std::time::{Duration, Instant};
use wire::contract::wqe::send_flags;

/// What perftest leaves out of its latency statistics at the slow end (`LAT_MEASURE_TAIL`).
const LAT_MEASURE_TAIL: usize = 2;

#[derive(Serialize, Debug, Default, Clone, Copy)]
pub struct Latency {
    pub t_min: f64,
    pub t_max: f64,
    pub t_typical: f64,
    pub t_avg: f64,
    pub t_stdev: f64,
    pub p99: f64,
    pub p99_9: f64,
}

fn wr(rig: &Rig, id: u64, local: u64, size: u32) -> SendWr {
    SendWr {
        wr_id: id,
        opcode: Some(rig.plan.op.opcode()),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![Sge { addr: rig.buf.addr + local, length: size, lkey: rig.mr.lkey }],
        remote_addr: rig.rem[0].vaddr,
        rkey: rig.rem[0].rkey,
        ..Default::default()
    }
}

/// How long a latency run goes: by count, or (`-D`) until its time is up, counting the round trips that
/// complete between its margins.
pub struct Clock {
    start: Instant,
    /// The measured window and the end, with `-D`.
    window: Option<(Duration, Duration, Duration)>,
    pub iters: u32,
    pub counted: u64,
}

impl Clock {
    pub fn new(length: Length) -> Self {
        let (iters, window) = match length {
            Length::Iters(k) => (k, None),
            Length::Duration { secs, margin } => {
                let s = |v: u32| Duration::from_secs(v.into());
                (u32::MAX, Some((s(margin), s(secs - margin), s(secs))))
            }
        };
        Clock { start: Instant::now(), window, iters, counted: 0 }
    }

    fn running(&self) -> bool {
        self.window.is_none_or(|(_, _, stop)| self.start.elapsed() < stop)
    }

    fn completed(&mut self) {
        if let Some((from, to, _)) = self.window {
            let at = self.start.elapsed();
            self.counted += u64::from(from <= at && at < to);
        }
    }

    /// `print_report_lat_duration`: the round trips in the window and the mean latency over it.
    pub fn report(&self, op: Op) -> Option<LatDuration> {
        let (from, to, _) = self.window?;
        let secs = (to - from).as_secs_f64().max(1e-9);
        let rtt = if op == Op::ReadLat { 1.0 } else { 2.0 };
        let n = self.counted.max(1) as f64;
        Some(LatDuration { iters: self.counted, t_avg: secs * 1e6 / rtt / n, tps: self.counted as f64 / secs })
    }
}

/// A latency run by time (`-D`), as perftest reports it.
#[derive(Serialize, Debug, Default, Clone, Copy)]
pub struct LatDuration {
    pub iters: u64,
    /// Microseconds.
    pub t_avg: f64,
    /// Round trips per second.
    pub tps: f64,
}

/// One completion from `cq`, which must be a success; none once a timed run is over.
fn take(rig: &Rig, s: &mut Session, cq: &driver::Cq, what: &str, clock: &Clock) -> Result<Option<driver::Wc>, Failure> {
    if clock.window.is_none() {
        return rig.one(s, cq, what).map(Some);
    }
    let end = rig.deadline();
    loop {
        if let Some(wc) = cq.poll(1).map_err(|e| e.to_string())?.pop() {
            if wc.status != driver::WcStatus::Success {
                return Err(format!("{what} wr {:#x} completed with {:?}{}", wc.wr_id, wc.status, rig.naks_sent()));
            }
            return Ok(Some(wc));
        }
        if !clock.running() {
            return Ok(None);
        }
        rig.tick(s, end, what)?;
    }
}

/// `run_iter_lat_write`: each side writes its counter into the last byte of the other's buffer and waits
/// for the other's; the server writes first. `counters` are the last-byte positions of every size run so
/// far (this one's last): by count, each ends up holding the final counter.
pub fn write(
    rig: &Rig,
    s: &mut Session,
    size: u32,
    clock: &mut Clock,
    counters: &[u32],
) -> Result<(Vec<Duration>, String), Failure> {
    let iters = clock.iters;
    let poll_at = rig.target(0) + u64::from(size) - 1;
    let (mut scnt, mut ccnt, mut rcnt) = (0u32, 0u32, 0u32);
    let mut posted_at = Vec::new();
    let start = Instant::now();
    'run: while (scnt < iters || ccnt < iters || rcnt < iters) && clock.running() {
        if rcnt < iters && !(scnt < 1 && rig.role == Role::Server) {
            rcnt += 1;
            let end = rig.deadline();
            while rig.read(poll_at, 1)?[0] != rcnt as u8 {
                if !clock.running() {
                    break 'run;
                }
                rig.tick(s, end, "the peer's write")?;
            }
        }
        if scnt < iters {
            posted_at.push(start.elapsed());
            scnt += 1;
            rig.buf.write(size as usize - 1, &[scnt as u8]).map_err(|e| e.to_string())?;
            rig.qps[0].post_send(&wr(rig, u64::from(scnt), rig.own(0), size)).map_err(|e| e.to_string())?;
        }
        if ccnt < iters {
            if take(rig, s, &rig.scq, "write", clock)?.is_none() {
                break;
            }
            ccnt += 1;
            clock.completed();
        }
    }
    if clock.window.is_some() {
        return Ok((posted_at, format!("{ccnt} counters in order")));
    }
    // perftest zeroes its buffer for this test: all but the counter bytes arrive as zeros.
    let got = rig.read(rig.target(0), size as usize)?;
    let bad = got.iter().enumerate().find(|&(i, &b)| {
        let counter = counters.contains(&(i as u32 + 1));
        b != if counter { iters as u8 } else { 0 }
    });
    if let Some((i, b)) = bad {
        return Err(format!(
            "the peer's last write of {size} bytes holds {b:#x} at byte {i}: not zeros and its counters"
        ));
    }
    Ok((posted_at, format!("{iters} counters in order; the final write zero but for its counter bytes")))
}

/// `run_iter_lat`: one READ at a time, each of the peer's unchanging buffer.
pub fn read(rig: &Rig, s: &mut Session, size: u32, clock: &mut Clock) -> Result<(Vec<Duration>, String), Failure> {
    let mut posted_at = Vec::new();
    let mut first: Option<Vec<u8>> = None;
    let start = Instant::now();
    let mut n = 0u32;
    while n < clock.iters && clock.running() {
        posted_at.push(start.elapsed());
        rig.qps[0].post_send(&wr(rig, u64::from(n), rig.slots_off, size)).map_err(|e| e.to_string())?;
        if take(rig, s, &rig.scq, "read", clock)?.is_none() {
            break;
        }
        clock.completed();
        let got = rig.read(rig.slots_off, size as usize)?;
        match &first {
            None => first = Some(got),
            Some(f) if *f != got => return Err(format!("read {n} differs from read 0")),
            Some(_) => {}
        }
        n += 1;
    }
    Ok((posted_at, format!("{n} reads of the peer's buffer returned the same {size} bytes")))
}

/// `run_iter_lat_send`: the client sends first; each side sends once it has received. `outstanding` is
/// the receives posted and not yet completed.
pub fn send(
    rig: &Rig,
    s: &mut Session,
    size: u32,
    clock: &mut Clock,
    outstanding: &mut u32,
) -> Result<(Vec<Duration>, String), Failure> {
    let iters = clock.iters;
    let (mut scnt, mut rcnt, mut unacked) = (0u32, 0u32, 0u32);
    let mut posted_at = Vec::new();
    let start = Instant::now();
    let half = (rig.plan.tx_depth / 2).max(1);
    'run: while (scnt < iters || rcnt < iters) && clock.running() {
        if rcnt < iters && !(scnt < 1 && rig.role == Role::Client) {
            let Some(wc) = take(rig, s, &rig.rcq, "receive", clock)? else { break };
            if wc.byte_len != size {
                return Err(format!("receive {rcnt} held {} bytes, not {size}", wc.byte_len));
            }
            rcnt += 1;
            clock.completed();
            *outstanding -= 1;
            if rcnt + *outstanding < iters {
                rig.post_recv(0, u64::from(rcnt + *outstanding))?;
                *outstanding += 1;
            }
        }
        if scnt < iters {
            while unacked >= half {
                if take(rig, s, &rig.scq, "send", clock)?.is_none() {
                    // A timed run is over while the send queue is full: nothing more is sent.
                    break 'run;
                }
                unacked -= 1;
            }
            posted_at.push(start.elapsed());
            scnt += 1;
            rig.qps[0].post_send(&wr(rig, u64::from(scnt), rig.own(0), size)).map_err(|e| e.to_string())?;
            unacked += 1;
        }
        // Send completions as they come, without waiting.
        while unacked > 0 {
            let Some(wc) = rig.scq.poll(1).map_err(|e| e.to_string())?.pop() else { break };
            if wc.status != driver::WcStatus::Success {
                return Err(format!("send wr {} completed with {:?}{}", wc.wr_id, wc.status, rig.naks_sent()));
            }
            unacked -= 1;
        }
    }
    while unacked > 0 && take(rig, s, &rig.scq, "send", clock)?.is_some() {
        unacked -= 1;
    }
    Ok((posted_at, format!("{rcnt} receives of {size} bytes")))
}

/// `print_report_lat`: the gaps between consecutive posts, over two for the round-trip tools, sorted, the
/// slowest two left out; in microseconds.
pub fn stats(op: Op, posted_at: &[Duration]) -> Latency {
    let rtt = if op == Op::ReadLat { 1.0 } else { 2.0 };
    let mut d: Vec<f64> = posted_at.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e6 / rtt).collect();
    d.sort_by(f64::total_cmp);
    d.truncate(d.len().saturating_sub(LAT_MEASURE_TAIL));
    if d.is_empty() {
        return Latency::default();
    }
    let n = d.len();
    let avg = d.iter().sum::<f64>() / n as f64;
    let var = d.iter().map(|x| (avg - x).powi(2)).sum::<f64>() / n as f64;
    let at = |q: f64| d[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
    Latency {
        t_min: d[0],
        t_max: d[n - 1],
        t_typical: d[n / 2],
        t_avg: avg,
        t_stdev: var.sqrt(),
        p99: at(0.99),
        p99_9: at(0.999),
    }
}
