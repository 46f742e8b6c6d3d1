//! The bandwidth tools' loops: perftest's `run_iter_bw` (the client, and both sides with `-b`) over every
//! QP at once, and `run_iter_bw_server` for SEND, with perftest's arithmetic.

use super::check::Checker;
use super::opts::Length;
use super::rig::{Failure, Rig};
use crate::perf::Op;
use driver::oob::perftest::{BwReport, Session, KEY_MSG_LEN};
use driver::{SendOp, SendWr, Sge, Wc, WcStatus};
use std::time::{Duration, Instant};
use wire::contract::wqe::send_flags;

/// Completions taken per poll.
const POLL_BATCH: usize = 64;

/// perftest's units: MB/s of 2^20 bytes, or with `--report_gbits` Gb/s of 10^9 bits.
pub fn unit(gbits: bool) -> f64 {
    if gbits {
        125_000_000.0
    } else {
        f64::from(1 << 20)
    }
}

/// The work request of QP `q`'s `k`-th message of `size`, landing (for READ and atomics) at `local`.
fn wr(rig: &Rig, checker: &Checker, q: usize, k: u32, size: u32, local: u64) -> SendWr {
    let opcode = match (rig.plan.op, checker) {
        (Op::Atomic, Checker::CmpSwaps(_)) => SendOp::AtomicCmpSwp,
        (op, _) => op.opcode(),
    };
    let (compare_add, swap) = checker.operands(q, k);
    SendWr {
        wr_id: (q as u64) << 32 | u64::from(k),
        opcode: Some(opcode),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![Sge { addr: rig.buf.addr + local, length: size, lkey: rig.mr.lkey }],
        remote_addr: rig.rem[q].vaddr,
        rkey: rig.rem[q].rkey,
        compare_add,
        swap,
        ..Default::default()
    }
}

/// `run_iter_bw`: every QP keeps up to the send depth in flight (READs and atomics as many as have a
/// landing slot), posted round robin; each completion is checked in order. By count, or with `-D` for the
/// time given, measured between its margins. With `recv` (SEND with `-b`, perftest's `run_iter_bi`), the
/// peer's SENDs are taken at once, every QP's receive queue kept full, until each QP has had its count.
/// Returns the report and what was checked.
pub fn run(rig: &Rig, s: &mut Session, size: u32, mut recv: Option<&mut [u32]>) -> Result<(BwReport, String), Failure> {
    let n = rig.qps.len();
    let reads_or_atomics = matches!(rig.plan.op, Op::Read | Op::Atomic);
    let depth = if reads_or_atomics {
        (rig.slot_len / u64::from(size.max(8))).clamp(1, u64::from(rig.plan.tx_depth)) as u32
    } else {
        rig.plan.tx_depth
    };
    let (target, timed) = match rig.plan.length {
        Length::Iters(k) => (k, None),
        Length::Duration { secs, margin } => (u32::MAX, Some((secs, margin))),
    };
    let slot =
        |q: usize, k: u32| rig.slots_off + q as u64 * rig.slot_len + u64::from(k % depth) * u64::from(size.max(8));
    let mut checker = Checker::new(rig.plan.op, rig.plan.atomic, n);
    let (mut posted, mut done) = (vec![0u32; n], vec![0u32; n]);
    let mut posted_at = Vec::new();
    let mut done_at = Vec::new();
    let mut in_window = 0u64;
    let mut got = vec![0u32; n];
    let mut end = rig.deadline();
    let start = Instant::now();
    let window = timed.map(|(secs, margin)| {
        (
            Duration::from_secs(margin.into()),
            Duration::from_secs(u64::from(secs - margin)),
            Duration::from_secs(secs.into()),
        )
    });
    loop {
        let now = start.elapsed();
        let posting = window.is_none_or(|(_, _, stop)| now < stop);
        let mut more = posting;
        while more {
            more = false;
            for q in 0..n {
                let k = posted[q];
                if k < target && k - done[q] < depth && checker.may_post(q, k) {
                    let local = if reads_or_atomics { slot(q, k) } else { rig.own(q) };
                    rig.qps[q]
                        .post_send(&wr(rig, &checker, q, k, size, local))
                        .map_err(|e| format!("post_send: {e}"))?;
                    if window.is_none() {
                        posted_at.push(start.elapsed());
                    }
                    posted[q] += 1;
                    more = true;
                }
            }
        }
        let sent = (0..n).all(|q| done[q] == posted[q] && (done[q] == target || !posting));
        let received = recv.is_none() || window.is_some() || got.iter().all(|&g| g >= target);
        if sent && received {
            break;
        }
        let wcs = match recv.as_deref_mut() {
            None => rig.wcs(s, &rig.scq, POLL_BATCH, "send completions")?,
            Some(outstanding) => {
                let r = rig.rcq.poll(POLL_BATCH).map_err(|e| e.to_string())?;
                for wc in &r {
                    received_one(rig, wc, size, &mut got, outstanding)?;
                }
                let w = rig.scq.poll(POLL_BATCH).map_err(|e| e.to_string())?;
                if w.is_empty() && r.is_empty() {
                    rig.tick(s, end, "completions both ways")?;
                } else {
                    end = rig.deadline();
                }
                w
            }
        };
        for wc in wcs {
            let (q, k) = ((wc.wr_id >> 32) as usize, wc.wr_id as u32);
            if q >= n || wc.status != WcStatus::Success || k != done[q] {
                let why = match wc.status {
                    WcStatus::RemAccessErr => ": the peer's responder refused it (a key, bound or access right)",
                    WcStatus::RemInvReqErr => ": the peer's responder found the request invalid",
                    WcStatus::RetryExcErr => ": the peer stopped answering",
                    _ => "",
                };
                return Err(format!(
                    "QP {q}'s wr {k} completed with {:?}{why} (wr {} was next){}",
                    wc.status,
                    done.get(q).copied().unwrap_or(0),
                    rig.naks_sent()
                ));
            }
            if reads_or_atomics {
                checker.check(q, k, &rig.read(slot(q, k), size.max(8) as usize)?)?;
            }
            done[q] += 1;
            let at = start.elapsed();
            match window {
                None => done_at.push(at),
                Some((from, to, _)) => in_window += u64::from(from <= at && at < to),
            }
        }
    }
    let total: u64 = done.iter().map(|&d| u64::from(d)).sum();
    let u = unit(rig.plan.gbits);
    let report = match window {
        None => report(size, depth, &posted_at, &done_at, u),
        Some((from, to, _)) => {
            let secs = (to - from).as_secs_f64().max(1e-9);
            BwReport {
                size: u64::from(size),
                iters: in_window,
                // perftest reports no peak in duration mode.
                bw_peak: 0.0,
                bw_avg: f64::from(size) * in_window as f64 / secs / u,
                msg_rate: in_window as f64 / secs / 1e6,
            }
        }
    };
    let mut said = checker.said(total, size);
    if recv.is_some() {
        let taken: u64 = got.iter().map(|&g| u64::from(g)).sum();
        said += &format!("; {taken} receives of {size} bytes");
    }
    Ok((report, said))
}

/// `run_iter_bw_server` for SEND: every QP's receive queue kept at the receive depth until the client has
/// moved on to its next step of the exchange, as the run's length (`-n`, `-D`) and size are the client's
/// to choose. Every message must be as long as the first.
pub fn recv(rig: &Rig, s: &mut Session, outstanding: &mut [u32]) -> Result<(BwReport, String), Failure> {
    let n = rig.qps.len();
    let mut got = vec![0u32; n];
    let mut size = None;
    let mut at = Vec::new();
    let start = Instant::now();
    let mut end = rig.deadline();
    loop {
        let wcs = rig.rcq.poll(POLL_BATCH).map_err(|e| e.to_string())?;
        if wcs.is_empty() {
            if s.peer_waiting(KEY_MSG_LEN) {
                break;
            }
            rig.tick(s, end, "receives")?;
            continue;
        }
        for wc in wcs {
            let want = *size.get_or_insert(wc.byte_len);
            received_one(rig, &wc, want, &mut got, outstanding)?;
            at.push(start.elapsed());
            end = rig.deadline();
        }
    }
    let total: u64 = got.iter().map(|&g| u64::from(g)).sum();
    let Some(size) = size else { return Err("the client moved on without sending".into()) };
    // The receiver's clock starts at its first message, as perftest's server does.
    let first = at.first().copied().unwrap_or_default();
    let mut r = report(size, rig.plan.tx_depth, &vec![first; at.len()], &at, unit(rig.plan.gbits));
    if let Length::Duration { .. } = rig.plan.length {
        // perftest reports no peak in duration mode.
        r.bw_peak = 0.0;
    }
    Ok((r, format!("{total} receives of {size} bytes")))
}

/// One receive completion, which must be a success of `size` bytes: counted on its QP, and a receive
/// posted in its place, so the queue stays at its depth.
fn received_one(rig: &Rig, wc: &Wc, size: u32, got: &mut [u32], outstanding: &[u32]) -> Result<(), Failure> {
    let q = rig.qps.iter().position(|qp| qp.qpn == wc.qp_num).ok_or("a receive on an unknown QP")?;
    if wc.status != WcStatus::Success || wc.byte_len != size {
        return Err(format!(
            "QP {q}: receive {} completed with {:?}, {} bytes (not {size}, the run's size){}",
            got[q],
            wc.status,
            wc.byte_len,
            rig.naks_sent()
        ));
    }
    got[q] += 1;
    rig.post_recv(q, u64::from(got[q] + outstanding[q]))
}

/// Tops every QP's receive queue up to the receive depth.
pub fn fill_recvs(rig: &Rig, outstanding: &mut [u32]) -> Result<(), Failure> {
    for (q, o) in outstanding.iter_mut().enumerate() {
        while *o < rig.plan.rx_depth {
            rig.post_recv(q, u64::from(*o))?;
            *o += 1;
        }
    }
    Ok(())
}

/// perftest's bandwidth arithmetic: average over the first post to the last completion; the peak over
/// the best `window` consecutive completions; in `unit` bytes per second.
pub fn report(size: u32, window: u32, posted_at: &[Duration], done_at: &[Duration], unit: f64) -> BwReport {
    let n = done_at.len();
    let rate = |bytes: f64, secs: f64| bytes / secs.max(1e-9) / unit;
    let total =
        done_at.last().copied().unwrap_or_default().saturating_sub(posted_at.first().copied().unwrap_or_default());
    let bytes = f64::from(size) * n as f64;
    let w = (window as usize).clamp(1, n.max(1));
    let peak = (w..n)
        .map(|i| rate(f64::from(size) * w as f64, (done_at[i] - done_at[i - w]).as_secs_f64()))
        .fold(rate(bytes, total.as_secs_f64()), f64::max);
    BwReport {
        size: u64::from(size),
        iters: n as u64,
        bw_peak: peak,
        bw_avg: rate(bytes, total.as_secs_f64()),
        msg_rate: n as f64 / total.as_secs_f64().max(1e-9) / 1e6,
    }
}
