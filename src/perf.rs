//! `ferrite perf`: perftest-style bandwidth runs between two simulated NICs, or (`--link`) perftest's own
//! exchange and loops against its tools on the other end of a real link (`perf_link`).

use crate::link::{FaultArgs, LinkArgs};
use crate::{Backend, Error};
use clap::{Args, ValueEnum};
use driver::pair::{connect, open_host, Host};
use driver::*;
use model::net::{Impairments, LinkConfig, World};
use model::NicConfig;
use serde::Serialize;
use std::io::IsTerminal;
use std::net::Ipv4Addr;
use wire::contract::regs::Counter;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    Write,
    Read,
    Send,
    Atomic,
    /// `ib_write_lat`'s ping-pong of RDMA WRITEs (on a link only).
    WriteLat,
    /// `ib_read_lat`: one RDMA READ at a time (on a link only).
    ReadLat,
    /// `ib_send_lat`'s ping-pong of SENDs (on a link only).
    SendLat,
}

impl Op {
    pub fn is_latency(self) -> bool {
        matches!(self, Op::WriteLat | Op::ReadLat | Op::SendLat)
    }

    /// The verb each message is.
    pub fn opcode(self) -> SendOp {
        match self {
            Op::Write | Op::WriteLat => SendOp::RdmaWrite,
            Op::Read | Op::ReadLat => SendOp::RdmaRead,
            Op::Send | Op::SendLat => SendOp::Send,
            Op::Atomic => SendOp::AtomicFetchAdd,
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct PerfArgs {
    #[arg(value_enum)]
    pub op: Op,
    /// Run one NIC on a real link against perftest's tool at the other end (`ib_write_bw` for `write`,
    /// `ib_read_lat` for `read-lat`, ...), speaking its exchange: as server (`--server`) or client of PEER.
    #[arg(long)]
    pub link: bool,
    /// With `--link`: the IPv4 address of the perftest server to connect to.
    pub peer: Option<Ipv4Addr>,
    /// With `--link`: wait for perftest's client instead of connecting to a server.
    #[arg(long, conflicts_with = "peer")]
    pub server: bool,
    #[command(flatten)]
    pub net: LinkArgs,
    /// With `--link`: the TCP port of the exchange.
    #[arg(short = 'p', long, default_value_t = driver::oob::perftest::PERFTEST_PORT)]
    pub port: u16,
    /// With `--link`: seconds to wait for the peer, for each step of the exchange and for each completion.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    #[arg(long, value_enum, default_value = "model")]
    pub backend: Backend,
    /// Message size in bytes (atomics are always 8). Default: 65536, or 2 for the latency modes, as
    /// perftest's.
    #[arg(short = 's', long)]
    pub size: Option<u32>,
    /// Messages per QP. Default: 100 between simulated NICs; on a link perftest's, 5000 (bandwidth) or
    /// 1000 (latency).
    #[arg(short = 'n', long)]
    pub iters: Option<u32>,
    /// QPs (perftest's `-q`): between simulated NICs each runs `--iters` messages; on a link, each QP is one
    /// entry of perftest's exchange.
    #[arg(short = 'q', long, visible_alias = "qp", default_value_t = 1)]
    pub qps: u32,
    /// Application threads, each with a QP and a CQ of its own on each side, posting and polling at once
    /// (the verbs objects are shared across threads as libibverbs' are), the device on a thread of its own.
    /// Between simulated NICs only.
    #[arg(long)]
    pub threads: Option<u32>,
    /// Path MTU in bytes: 256, 512, 1024, 2048 or 4096.
    #[arg(short = 'm', long, default_value_t = 1024)]
    pub pmtu: u32,
    #[command(flatten)]
    pub faults: FaultArgs,
    /// Rate of the simulated links and ports (Gb/s, 0.001 to 1000).
    #[arg(long, default_value_t = 100.0)]
    pub link_gbps: f64,
    #[arg(long, default_value_t = 1000)]
    pub delay_ns: u64,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub perftest: crate::perf_link::opts::PerftestArgs,
    #[command(flatten)]
    pub rtl: RtlArgs,
}

/// The RTL backend's options.
#[derive(clap::Args, Debug, Clone)]
pub struct RtlArgs {
    /// With `--backend rtl`: the core's datapath in bytes, 8 (at 125 MHz) or 64 (at 250 MHz).
    #[arg(long, default_value_t = 8)]
    pub width: u32,
    /// With `--backend rtl`: the QPs the core is built with, 16 or 1024 (16384 in a build with
    /// `--features large-core`).
    #[arg(long, default_value_t = 16)]
    pub core_qps: u32,
    /// With `--backend rtl`: the core's MAC honours its pause (PFC), starting no frame while the MAC
    /// boundary could not take one of the longest length: no frame dropped for want of room.
    #[arg(long)]
    pub pfc: bool,
    /// With `--backend rtl`: the model follows the core and compares every output (`--lockstep false` to
    /// run the core alone).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub lockstep: bool,
    /// With `--backend rtl`: the core is the requester, a model NIC the responder (by default the core
    /// answers a model requester).
    #[arg(long)]
    pub rtl_requester: bool,
    /// With `--backend rtl`: a DMA read's round trip in nanoseconds (0: one cycle each, so the core's own
    /// cycles show). The model's timer tolerance holds for round trips up to about 1 us.
    #[arg(long, default_value_t = sim::core::DMA_LATENCY_NS)]
    pub dma_latency_ns: u64,
}

impl PerfArgs {
    /// The simulated NICs: the profile chosen, ports at `--link-gbps`, which must be a rate the links can run.
    pub fn nic(&self) -> Result<NicConfig, Error> {
        if !(0.001..=1000.0).contains(&self.link_gbps) {
            return Err("--link-gbps must be between 0.001 and 1000".into());
        }
        Ok(NicConfig { port_mbps: (self.link_gbps * 1000.0) as u32, ..NicConfig::new(self.net.profile.profile()) })
    }

    /// The message size: given, or perftest's default for the op.
    pub fn size(&self) -> u32 {
        match self.op {
            Op::Atomic => 8,
            o if o.is_latency() => self.size.unwrap_or(2),
            _ => self.size.unwrap_or(65536),
        }
    }
}

#[derive(Serialize, Debug)]
pub struct PerfReport {
    pub op: Op,
    pub backend: &'static str,
    pub size: u32,
    pub iters: u32,
    pub qps: u32,
    pub threads: u32,
    pub pmtu: u32,
    pub loss: f64,
    /// Bytes of the messages that completed with success, when the data checked out (0 otherwise).
    pub bytes: u64,
    pub sim_time_ns: u64,
    pub goodput_gbps: f64,
    pub msg_rate_mpps: f64,
    pub packets: u64,
    pub retransmitted_packets: u64,
    pub naks: u64,
    pub timeouts: u64,
    pub cnps: u64,
    pub data_ok: bool,
    pub completions_ok: bool,
    /// Work requests posted but never completed, per QP (`qp 0x..: wr 3..19`).
    pub missing: Vec<String>,
    pub errors: Vec<String>,
    pub wall_s: f64,
    /// With `--threads`: wall time inside the verbs calls (posts, and polls that took something) per
    /// completed work request, averaged over the threads.
    pub driver_ns_per_wr: Option<f64>,
    /// With `--backend rtl`: the core's cycles, efficiency and lockstep.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub rtl: Option<crate::perf_rtl::RtlFigures>,
}

/// Messages kept in flight per QP.
pub(crate) const DEPTH: u32 = 16;

pub(crate) fn pattern(n: usize, salt: u32) -> Vec<u8> {
    (0..n).map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(salt).to_be_bytes()[0]).collect()
}

pub(crate) fn wr_for(op: Op, a: &Host, b: &Host, q: u32, size: u32, id: u64) -> SendWr {
    let off = u64::from(q) * u64::from(size.max(8));
    let sge = Sge { addr: a.mr.addr + off, length: if op == Op::Atomic { 8 } else { size }, lkey: a.mr.lkey };
    SendWr {
        wr_id: id,
        opcode: Some(op.opcode()),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![sge],
        remote_addr: b.mr.addr + off,
        rkey: b.mr.rkey,
        compare_add: 1,
        ..Default::default()
    }
}

pub fn measure(args: &PerfArgs) -> Result<PerfReport, Error> {
    let mtu = wire::contract::verbs::mtu_enum(args.pmtu).ok_or("--pmtu must be 256, 512, 1024, 2048 or 4096")?;
    if args.op.is_latency() {
        return Err("the latency modes run against a peer on a real link: add --link".into());
    }
    if args.perftest.any() {
        return Err(
            "perftest's options (-a, -D, -o, -A, -b, -e, -t, -r, ...) are for a run against perftest: add --link"
                .into(),
        );
    }
    let iters = args.iters.unwrap_or(100);
    if args.qps == 0 || iters == 0 {
        return Err("--qps and --iters must be at least 1".into());
    }
    let faults = args.faults.check()?;
    let size = args.size();
    if size > 1 << 30 {
        return Err("--size above 1 GiB".into());
    }
    let link = LinkConfig { gbps: args.link_gbps, delay_ns: args.delay_ns, faults: Impairments::default() };
    let world = shared(World::pair(args.nic()?, link, args.faults.seed));
    if let Some(p) = &args.faults.pcap {
        driver::lock_world(&world).tap(p, &[0, 1])?;
    }
    let buf_len = (size.max(8) as usize) * args.qps as usize;
    let cap = QpCap { max_send_wr: DEPTH, max_recv_wr: DEPTH, ..Default::default() };
    let a = open_host(&world, 0, args.qps as usize, buf_len, cap, false)?;
    let b = open_host(&world, 1, args.qps as usize, buf_len, cap, false)?;
    let opts = ConnectOpts { path_mtu: mtu, timeout: 10, ..Default::default() };
    for q in 0..args.qps as usize {
        connect(&a, q, 100 + q as u32, &b, q, 200 + q as u32, &opts)?;
    }
    // Source data: the requester's buffer for WRITE/SEND, the responder's for READ.
    let src = if args.op == Op::Read { &b } else { &a };
    let expect = pattern(buf_len, args.faults.seed as u32);
    src.buf.write(0, &expect)?;
    if args.op == Op::Atomic {
        b.buf.write(0, &vec![0u8; buf_len])?;
    }
    driver::lock_world(&world).set_link_faults(faults);
    let t0 = driver::lock_world(&world).now;
    let bar = (!args.json && std::io::stderr().is_terminal())
        .then(|| indicatif::ProgressBar::new(u64::from(iters) * u64::from(args.qps)));
    let wall = std::time::Instant::now();
    let mut posted = vec![0u32; args.qps as usize];
    let mut done = vec![0u32; args.qps as usize];
    let mut errors = Vec::new();
    let mut in_order = true;
    let total = iters as usize * args.qps as usize;
    let mut completed = 0usize;
    let mut succeeded = 0u64;
    let qp_index = |qpn: u32, h: &Host| h.qps.iter().position(|q| q.qpn == qpn);
    let recv_sge =
        |q: u32| Sge { addr: b.mr.addr + u64::from(q) * u64::from(size.max(8)), length: size, lkey: b.mr.lkey };
    loop {
        for q in 0..args.qps {
            let qi = q as usize;
            while posted[qi] < iters && posted[qi] - done[qi] < DEPTH {
                if args.op == Op::Send {
                    b.qps[qi].post_recv(&RecvWr { wr_id: u64::from(posted[qi]), sg_list: vec![recv_sge(q)] })?;
                }
                a.qps[qi].post_send(&wr_for(args.op, &a, &b, q, size, u64::from(posted[qi])))?;
                posted[qi] += 1;
            }
        }
        if completed == total {
            break;
        }
        let wcs = a.cq.poll(64)?;
        if args.op == Op::Send {
            for wc in b.cq.poll(64)? {
                if wc.status != WcStatus::Success {
                    errors.push(format!("receive wr {} on qp {}: {:?}", wc.wr_id, wc.qp_num, wc.status));
                }
            }
        }
        if wcs.is_empty() && !driver::lock_world(&world).step() {
            errors.push(format!("stalled after {completed} of {total} completions"));
            break;
        }
        for wc in wcs {
            let Some(qi) = qp_index(wc.qp_num, &a) else { continue };
            if wc.wr_id != u64::from(done[qi]) {
                in_order = false;
            }
            if wc.status != WcStatus::Success {
                errors.push(format!("wr {} on qp {}: {:?}", wc.wr_id, wc.qp_num, wc.status));
            } else {
                succeeded += 1;
            }
            done[qi] += 1;
            completed += 1;
            if let Some(b) = &bar {
                b.inc(1);
            }
        }
        if !errors.is_empty() {
            break;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    // Let the receive completions of the last SENDs land.
    if args.op == Op::Send {
        let _ = b.cq.wait(0, 0);
    }
    let sim_ps = driver::lock_world(&world).now - t0;
    let data_ok = data_arrived(args.op, [&a, &b], args.qps, size, iters, &expect)? && errors.is_empty();
    // Goodput counts completed, checked bytes only.
    let bytes = if data_ok { u64::from(size) * succeeded } else { 0 };
    let missing: Vec<String> = (0..args.qps as usize)
        .filter(|&q| done[q] < iters)
        .map(|q| format!("qp {:#x}: wr {}..{}", a.qps[q].qpn, done[q], iters - 1))
        .collect();
    Ok(report(
        args,
        &[&a, &b],
        Outcome {
            size,
            iters,
            qps: args.qps,
            threads: 1,
            bytes,
            sim_ps,
            completed: completed as u64,
            data_ok,
            completions_ok: in_order && completed == total && errors.is_empty(),
            missing,
            errors,
            wall_s: wall.elapsed().as_secs_f64(),
            driver_ns_per_wr: None,
        },
    ))
}

/// Whether every QP's messages left what they should where they land: the bytes a WRITE, SEND or READ moves
/// (a 0-byte message moves none, which is nothing to check, not a mismatch), or the count of fetch-and-adds
/// of 1 at each QP's target.
pub(crate) fn data_arrived(
    op: Op,
    hosts: [&Host; 2],
    qps: u32,
    size: u32,
    iters: u32,
    expect: &[u8],
) -> Result<bool, Error> {
    let [a, b] = hosts;
    let (stride, len) = (size.max(8) as usize, size as usize);
    for q in 0..qps {
        let at = q as usize * stride;
        let ok = match op {
            Op::Atomic => b.buf.read(q as usize * 8, 8)? == u64::from(iters).to_le_bytes(),
            Op::Read | Op::ReadLat => a.buf.read(at, len)? == expect[at..at + len],
            _ => b.buf.read(at, len)? == expect[at..at + len],
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What one run of either loop measured.
pub(crate) struct Outcome {
    pub size: u32,
    pub iters: u32,
    pub qps: u32,
    pub threads: u32,
    /// Bytes of the messages that completed with success, when the data checked out.
    pub bytes: u64,
    pub sim_ps: u64,
    pub completed: u64,
    pub data_ok: bool,
    pub completions_ok: bool,
    pub missing: Vec<String>,
    pub errors: Vec<String>,
    pub wall_s: f64,
    pub driver_ns_per_wr: Option<f64>,
}

/// The report of a run between the NICs of `hosts`, with their counters summed.
pub(crate) fn report(args: &PerfArgs, hosts: &[&Host], o: Outcome) -> PerfReport {
    let c = |k| hosts.iter().map(|h| h.ctx.counter(k)).sum::<u64>();
    let sim_ns = (o.sim_ps / 1000).max(1);
    PerfReport {
        op: args.op,
        backend: "model",
        size: o.size,
        iters: o.iters,
        qps: o.qps,
        threads: o.threads,
        pmtu: args.pmtu,
        loss: args.faults.loss,
        bytes: o.bytes,
        sim_time_ns: sim_ns,
        goodput_gbps: o.bytes as f64 * 8.0 / sim_ns as f64,
        msg_rate_mpps: o.completed as f64 / sim_ns as f64 * 1000.0,
        packets: c(Counter::tx_frames),
        retransmitted_packets: c(Counter::retransmitted_packets),
        naks: c(Counter::rx_naks) + c(Counter::rx_rnr_naks),
        timeouts: c(Counter::local_ack_timeouts),
        cnps: c(Counter::cnps_sent),
        data_ok: o.data_ok,
        completions_ok: o.completions_ok,
        missing: o.missing,
        errors: o.errors,
        wall_s: o.wall_s,
        driver_ns_per_wr: o.driver_ns_per_wr,
        rtl: None,
    }
}

pub fn run(args: &PerfArgs) -> Result<bool, Error> {
    if args.link && args.threads.is_some() {
        return Err("--threads runs between simulated NICs, not on a --link".into());
    }
    if args.link {
        return crate::perf_link::run(args);
    }
    if args.server || args.peer.is_some() {
        return Err("a peer or --server needs --link".into());
    }
    let r = if args.backend == Backend::Rtl {
        crate::perf_rtl::measure(args)?
    } else if args.threads.is_some() {
        crate::perf_threads::measure(args)?
    } else {
        measure(args)?
    };
    if args.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        println!("---------------------------------------------------------------------------------------");
        println!(
            " RDMA {:?} bandwidth (ferrite {} backend)   QPs: {}   threads: {}   PMTU: {}   loss: {}",
            r.op, r.backend, r.qps, r.threads, r.pmtu, r.loss
        );
        println!("---------------------------------------------------------------------------------------");
        println!(
            " {:>10} {:>10} {:>14} {:>14} {:>12} {:>10}",
            "#bytes", "#iters", "BW [Gb/s]", "MsgRate [Mpps]", "sim time us", "retrans"
        );
        println!(
            " {:>10} {:>10} {:>14.3} {:>14.4} {:>12.1} {:>10}",
            r.size,
            r.iters,
            r.goodput_gbps,
            r.msg_rate_mpps,
            r.sim_time_ns as f64 / 1000.0,
            r.retransmitted_packets
        );
        println!(
            " data: {}   completions: {}",
            if r.data_ok { "ok" } else { "MISMATCH" },
            if r.completions_ok { "ok" } else { "FAILED" }
        );
        for e in &r.errors {
            println!(" error: {e}");
        }
        for m in &r.missing {
            println!(" not completed: {m}");
        }
        if let Some(x) = &r.rtl {
            println!(
                " core: {} cycles at {} MHz, {} B datapath, efficiency {:.3}, {} frames dropped at the MAC; {:.0} \
                 Kcycles/s ({:.3} s wall)",
                x.cycles,
                x.clock_mhz,
                x.datapath_bytes,
                x.efficiency,
                x.mac_drops,
                x.cycles_per_s / 1000.0,
                r.wall_s
            );
            if x.lockstep {
                println!(" lockstep: {} decisions followed, {} mismatches", x.lockstep_events, x.lockstep_mismatches);
            }
            if let Some(f) = &x.lockstep_first {
                println!(" first mismatch: {f}");
            }
        } else {
            let sim_gbps_per_cpu_s = r.bytes as f64 * 8.0 / 1e9 / r.wall_s.max(1e-9);
            println!(" model speed: {:.1} simulated Gb per CPU second ({:.3} s wall)", sim_gbps_per_cpu_s, r.wall_s);
        }
        if let Some(ns) = r.driver_ns_per_wr {
            println!(
                " driver: {ns:.0} ns of verbs calls per work request in each thread (the device on its own thread)"
            );
        }
    }
    Ok(r.data_ok && r.completions_ok)
}
