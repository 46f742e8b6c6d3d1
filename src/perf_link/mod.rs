//! `ferrite perf <op> --link [--server | PEER]`: one ferrite NIC on a real link against perftest's tool at
//! the other end (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`, `ib_atomic_bw`, `ib_write_lat`,
//! `ib_read_lat`, `ib_send_lat`), RC, with perftest's options (`opts`). It takes the same steps of
//! perftest's exchange (`driver::oob::perftest`) in the same order as that tool does, runs the same loops
//! on its side (`bw`, `lat`), checks what it can of the data (`check`) and prints perftest's columns.
//!
//! An option ferrite cannot honour is refused before the exchange: the connection is opened and closed at
//! once, so the peer's tool exits as it does on its own errors. A peer that exits mid-run (its tool failed)
//! ends ferrite's run within a second, with what ferrite's responder had NAKed.

mod bw;
mod check;
mod lat;
pub mod opts;
mod report;
mod rig;

use crate::perf::{Op, PerfArgs};
use crate::Error;
use check::{CACHE_LINE, CYCLE_BUFFER};
use driver::netdev::Stack;
use driver::oob::perftest::{BwReport, Keys, Role, Session, KEY_MSG_LEN};
use driver::{access, ConnectOpts, Endpoint, QpCap};
use opts::{Plan, Refusal};
use report::{BwLine, Report, SizeResult};
use rig::{Failure, Rig};
use wire::contract::regs::Counter;

/// Memory kept for READs in flight: their landing slots are checked one by one.
const READ_SLOTS_BYTES: u64 = 16 << 20;
/// How long the NIC keeps running after the exchange closed, so the last ACKs leave.
const LINGER_NS: u64 = 200_000_000;

pub fn run(a: &PerfArgs) -> Result<bool, Error> {
    let peer = match (a.server, a.peer) {
        (true, None) => None,
        (false, Some(p)) => Some(p.octets()),
        _ => return Err("--link needs --server or the peer's address".into()),
    };
    let mtu = wire::contract::verbs::mtu_enum(a.pmtu).ok_or("--pmtu is one of 256, 512, 1024, 2048, 4096")?;
    let t = a.timeout * 1_000_000_000;
    let att = a.net.attach(&a.faults)?;
    let mut stack = att.stack()?;
    let ctx = &att.ctx;
    let dev = ctx.query_device();
    let plan = match Plan::new(a).and_then(|p| p.fits(&dev).map(|()| p)) {
        Ok(p) => p,
        Err(why) => return Err(refuse(&mut stack, peer, a.port, t, why)),
    };
    let rig = match resources(&plan, &att, t) {
        Ok(r) => r,
        Err(e) => return Err(refuse(&mut stack, peer, a.port, t, e.to_string())),
    };
    let mut rig = rig;
    rig.role = if peer.is_some() { Role::Client } else { Role::Server };
    let own_reads = match a.op {
        // -o 0, as perftest's, is the device's most.
        Op::Read | Op::ReadLat | Op::Atomic => {
            plan.outs.filter(|&o| o > 0).unwrap_or(dev.max_qp_rd_atom).min(dev.max_qp_rd_atom).min(255)
        }
        _ => 1,
    };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let me: Vec<Keys> = rig
        .qps
        .iter()
        .enumerate()
        .map(|(q, qp)| Keys {
            lid: 0,
            out_reads: own_reads as u16,
            qpn: qp.qpn,
            psn: (nanos ^ std::process::id() ^ (q as u32) << 20).wrapping_mul(2_654_435_761) >> 8,
            rkey: rig.mr.rkey,
            vaddr: rig.mr.addr + rig.target(q),
            gid: att.gid,
            srqn: 0,
        })
        .collect();

    // perftest's tools sleep a second after connecting; nothing here depends on it.
    let mut s = Session::open(&mut stack, peer, a.port, t)?;
    let mut out_reads = own_reads;
    let mut peer_version = 0.0;
    let outcome = (|| -> Result<Vec<SizeResult>, Failure> {
        peer_version = rig.step(&mut s, "the version exchange", |s| s.versions())?;
        let (cycle, _line) =
            rig.step(&mut s, "the system data", |s| s.sys_data(CYCLE_BUFFER as u32, CACHE_LINE as u32))?;
        if u64::from(cycle) > rig.buff {
            return Err(format!("the peer's page size ({cycle} B) is above ferrite's buffers ({} B)", rig.buff));
        }
        let mtu = rig.step(&mut s, "the MTU exchange", |s| s.mtu(mtu))?;
        out_reads = connect(&mut rig, &mut s, &me, mtu, own_reads)?;
        match a.op {
            Op::Write | Op::Read | Op::Atomic => bw_tool(&rig, &mut s, &me),
            Op::Send => send_bw(&rig, &mut s, &me),
            Op::WriteLat | Op::ReadLat | Op::SendLat => lat_tool(&rig, &mut s, &me),
        }
    })();
    let mut failure = outcome.as_ref().err().cloned();
    let results = outcome.unwrap_or_default();
    if failure.is_none() && a.op != Op::WriteLat {
        if let Err(e) = s.close(&me[0]) {
            failure = Some(format!("closing the exchange: {e}"));
        }
    } else {
        // write_lat ends without a closing handshake; a failed run ends the connection, releasing the peer.
        s.hang_up();
    }
    // Let the last ACKs leave before the NIC goes away.
    let linger = ctx.backend().now_ns() + LINGER_NS;
    while ctx.backend().now_ns() < linger {
        stack.poll();
    }
    let bad_icrc = ctx.counter(Counter::rx_drop_bad_icrc);
    if failure.is_none() && bad_icrc > 0 && plan.strict_icrc {
        failure = Some(format!("{bad_icrc} frames from the peer had a bad ICRC (--strict-icrc)"));
    }
    let lockstep = att.lockstep();
    if failure.is_none() {
        failure = lockstep.as_ref().and_then(sim::lockstep::Report::failure);
    }
    let rep = Report {
        op: a.op,
        role: if rig.role == Role::Client { "client" } else { "server" },
        pass: failure.is_none(),
        detail: failure.unwrap_or_default(),
        qps: plan.qps,
        iters: match plan.length {
            opts::Length::Iters(k) => Some(k),
            opts::Length::Duration { .. } => None,
        },
        duration_s: match plan.length {
            opts::Length::Duration { secs, .. } => Some(secs),
            opts::Length::Iters(_) => None,
        },
        mtu: 128u32 << mtu,
        peer_version,
        unit: if plan.gbits { "Gb/sec" } else { "MB/sec" },
        out_reads,
        bidirectional: plan.duplex,
        cq_events: rig.events.get(),
        results,
        retransmitted_packets: ctx.counter(Counter::retransmitted_packets),
        local_ack_timeouts: ctx.counter(Counter::local_ack_timeouts),
        rx_drop_bad_icrc: bad_icrc,
        rx_frames: ctx.counter(Counter::rx_frames),
        tx_frames: ctx.counter(Counter::tx_frames),
        lockstep,
    };
    if a.json {
        println!("{}", serde_json::to_string(&rep)?);
    } else {
        report::print_human(&rep, &me, &rig.rem);
    }
    Ok(rep.pass)
}

/// Opens the exchange only to close it, so the peer's tool sees its connection end and exits (as it does
/// on perftest's own errors); the error to report.
fn refuse(stack: &mut Stack, peer: Option<[u8; 4]>, port: u16, timeout_ns: u64, why: Refusal) -> Error {
    if let Ok(s) = Session::open(stack, peer, port, timeout_ns) {
        s.hang_up();
    }
    format!("{why} (refused before the exchange; the peer's connection was closed)").into()
}

/// The QPs, CQs and buffer, laid out as perftest lays out its own: every QP's own half, then every QP's
/// half for the peer, then landing slots for READs and atomics in flight.
fn resources<'a>(plan: &'a Plan, att: &'a crate::link::Attached, timeout_ns: u64) -> Result<Rig<'a>, Error> {
    let ctx = &att.ctx;
    let n = u64::from(plan.qps);
    let max = u64::from(plan.max_size);
    let buff = max.max(CYCLE_BUFFER);
    let slot_len = match plan.op {
        Op::Read => (READ_SLOTS_BYTES / n).max(max),
        Op::ReadLat => max,
        Op::Atomic => u64::from(plan.tx_depth) * 8,
        _ => 0,
    };
    let buf = ctx.alloc_buf((2 * n * buff + n * slot_len) as usize)?;
    let remote = match plan.op {
        Op::Write | Op::WriteLat => access::REMOTE_WRITE,
        Op::Read | Op::ReadLat => access::REMOTE_READ,
        Op::Atomic => access::REMOTE_ATOMIC,
        Op::Send | Op::SendLat => 0,
    };
    let mr = att.pd.reg_buf(&buf, access::LOCAL_WRITE | remote)?;
    // ferrite's own bytes: zeros for write-lat (as perftest's), a pattern elsewhere; the peer's half zeroed.
    let fill: Vec<u8> = (0..buff).map(|i| if plan.op == Op::WriteLat { 0 } else { (i * 7 + 1) as u8 }).collect();
    for q in 0..n {
        buf.write((q * buff) as usize, &fill)?;
    }
    buf.write((n * buff) as usize, &vec![0; (n * buff) as usize])?;
    let send_tool = matches!(plan.op, Op::Send | Op::SendLat);
    let rx_depth = if send_tool { plan.rx_depth } else { 1 };
    let scq = ctx.create_cq(plan.qps * plan.tx_depth)?;
    let rcq = ctx.create_cq(plan.qps * rx_depth)?;
    let cap = QpCap {
        max_send_wr: plan.tx_depth,
        max_recv_wr: rx_depth,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let qps = (0..n).map(|_| att.pd.create_qp(&scq, &rcq, cap, false)).collect::<Result<Vec<_>, _>>()?;
    Ok(Rig::new(plan, Role::Server, timeout_ns, ctx, qps, (scq, rcq), buf, mr, (buff, slot_len)))
}

/// The tools' steps up to the run: keys for every QP (after one more handshake for the WRITE and READ
/// latency tools), every QP connected, the keys again as the "remote" lines and the handshake after RTR.
/// Returns the READs and atomics the requester keeps outstanding.
fn connect(rig: &mut Rig, s: &mut Session, me: &[Keys], mtu: u8, own_reads: u32) -> Result<u32, Failure> {
    let op = rig.plan.op;
    if matches!(op, Op::WriteLat | Op::ReadLat) {
        rig.step(s, "the first handshake", |s| s.keys(&me[0]))?;
    }
    for k in me {
        let theirs = rig.step(s, "the keys", |s| s.keys(k))?;
        rig.rem.push(theirs);
    }
    let out_reads = u32::from(rig.rem[0].out_reads.max(1)).min(own_reads.max(1));
    for (q, qp) in rig.qps.iter().enumerate() {
        let rem = &rig.rem[q];
        let ip = wire::ipv6::gid_to_ipv4(&rem.gid)
            .ok_or("the peer's GID is not IPv4-mapped (give its tool -x with its RoCEv2 IPv4 GID's index)")?;
        let mac = s.stack.mac_of(ip).ok_or("the peer's MAC was never heard")?;
        let opts = ConnectOpts {
            path_mtu: mtu,
            max_rd_atomic: out_reads as u8,
            max_dest_rd_atomic: Some(own_reads.max(1) as u8),
            access: match op {
                Op::Write | Op::WriteLat => access::REMOTE_WRITE,
                Op::Read | Op::ReadLat => access::REMOTE_READ,
                Op::Atomic => access::REMOTE_ATOMIC,
                Op::Send | Op::SendLat => 0,
            },
            ..Default::default()
        };
        qp.connect(me[q].psn, &Endpoint { qpn: rem.qpn, psn: rem.psn, gid: rem.gid, mac }, &opts)
            .map_err(|e| format!("connecting QP {q}: {e}"))?;
    }
    if matches!(op, Op::Send | Op::SendLat) {
        rig.step(s, "the handshake after connecting", |s| s.keys(&me[0]))?;
    }
    for k in me {
        rig.step(s, "the remote keys", |s| s.keys(k))?; // the addresses printed as "remote"
    }
    if !matches!(op, Op::Send | Op::SendLat) {
        rig.step(s, "the handshake after RTR", |s| s.keys(&me[0]))?;
    }
    Ok(out_reads)
}

/// `write_bw.c`, `read_bw.c`, `atomic_bw.c`: the server waits while the client runs (both run with `-b`),
/// a handshake, the reports, each size in turn with `-a`.
fn bw_tool(rig: &Rig, s: &mut Session, me: &[Keys]) -> Result<Vec<SizeResult>, Failure> {
    let plan = rig.plan;
    if rig.role == Role::Server && !plan.duplex {
        // The client's run is as long as the client chooses: like perftest's server, wait for it while its
        // frames keep coming (a client that exits closes the connection, which ends the wait at once).
        rig.await_peer(s, KEY_MSG_LEN, "the client's end of the run")?;
        rig.step(s, "the client's end of the run", |s| s.keys(&me[0]))?;
        let theirs = rig.step(s, "the reports", |s| s.reports(&BwReport::default()))?;
        if theirs.size > 1 << 30 || !theirs.bw_avg.is_finite() {
            return Err("the client's report is not one: the two sides took different steps (give both the same -q, \
                        -a and -b)"
                .into());
        }
        let checked = match plan.op {
            Op::Atomic => check::atomic_server(rig, &theirs)?,
            _ => "nothing: perftest writes random bytes and reads what it cannot see".into(),
        };
        let size = u32::try_from(theirs.size).unwrap_or(u32::MAX);
        return Ok(vec![SizeResult { size, bw: Some(theirs.into()), checked, ..Default::default() }]);
    }
    let mut results = Vec::new();
    for &size in &plan.sizes {
        if plan.duplex {
            rig.step(s, "the handshake before the run", |s| s.keys(&me[0]))?;
        }
        let (mine, checked) = bw::run(rig, s, size, None)?;
        if plan.duplex && plan.sizes.len() > 1 {
            rig.step(s, "the handshake after the run", |s| s.keys(&me[0]))?;
        }
        let peer_bw = if plan.duplex { Some(rig.step(s, "the reports", |s| s.reports(&mine))?.into()) } else { None };
        results.push(SizeResult { size, bw: Some(mine.into()), peer_bw, checked, ..Default::default() });
    }
    if rig.role == Role::Client && !plan.duplex {
        rig.step(s, "the handshake after the run", |s| s.keys(&me[0]))?;
        let last = results.last().and_then(|r| r.bw).map(BwLine::to_report).unwrap_or_default();
        rig.step(s, "the reports", |s| s.reports(&last))?;
    }
    Ok(results)
}

/// `send_bw.c`: receives up on the server, a handshake, the run; each size in turn with `-a`, with a
/// handshake after each.
fn send_bw(rig: &Rig, s: &mut Session, me: &[Keys]) -> Result<Vec<SizeResult>, Failure> {
    let mut outstanding = vec![0u32; rig.qps.len()];
    let mut results = Vec::new();
    let plan = rig.plan;
    for &size in &plan.sizes {
        if rig.role == Role::Server || plan.duplex {
            bw::fill_recvs(rig, &mut outstanding)?;
        }
        rig.step(s, "the handshake before the run", |s| s.keys(&me[0]))?; // the receives are up
        let (r, checked) = match (rig.role, plan.duplex) {
            (_, true) => bw::run(rig, s, size, Some(&mut outstanding))?,
            (Role::Client, false) => bw::run(rig, s, size, None)?,
            (Role::Server, false) => bw::recv(rig, s, &mut outstanding)?,
        };
        // perftest trades the reports of a bidirectional run by count.
        let peer_bw = if plan.duplex && matches!(plan.length, opts::Length::Iters(_)) {
            Some(rig.step(s, "the reports", |s| s.reports(&r))?.into())
        } else {
            None
        };
        results.push(SizeResult { size: r.size as u32, bw: Some(r.into()), peer_bw, checked, ..Default::default() });
        if rig.plan.sizes.len() > 1 {
            rig.step(s, "the handshake after the run", |s| s.keys(&me[0]))?;
        }
    }
    Ok(results)
}

/// `write_lat.c`, `read_lat.c`, `send_lat.c`: each size in turn (the SEND tool posts its receives and
/// shakes hands before each).
fn lat_tool(rig: &Rig, s: &mut Session, me: &[Keys]) -> Result<Vec<SizeResult>, Failure> {
    let plan = rig.plan;
    let mut results = Vec::new();
    let mut outstanding = 0u32;
    for (i, &size) in plan.sizes.iter().enumerate() {
        let mut clock = lat::Clock::new(plan.length);
        let (posted_at, checked) = match (plan.op, rig.role) {
            (Op::WriteLat, _) => lat::write(rig, s, size, &mut clock, &plan.sizes[..=i])?,
            (Op::ReadLat, Role::Client) => lat::read(rig, s, size, &mut clock)?,
            (Op::ReadLat, Role::Server) => continue,
            _ => {
                while outstanding < clock.iters.min(plan.rx_depth) {
                    rig.post_recv(0, u64::from(outstanding))?;
                    outstanding += 1;
                }
                rig.step(s, "the handshake before the run", |s| s.keys(&me[0]))?; // the receives are up
                                                                                  // The clock starts once both sides are ready, as perftest's does after this handshake.
                clock = lat::Clock::new(plan.length);
                lat::send(rig, s, size, &mut clock, &mut outstanding)?
            }
        };
        let (lat, lat_duration) = match clock.report(plan.op) {
            Some(d) => (None, Some(d)),
            None => (Some(lat::stats(plan.op, &posted_at)), None),
        };
        results.push(SizeResult { size, lat, lat_duration, checked, ..Default::default() });
    }
    Ok(results)
}
