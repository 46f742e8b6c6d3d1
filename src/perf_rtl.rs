//! `ferrite perf write|send|read --backend rtl`: the Verilated NIC core as the responder, a model NIC as the
//! requester. The model's frames go into the core's MAC, the core places them in its host memory (a SEND's
//! after fetching its receive WQE, then its CQE) or reads a READ's bytes from it, and answers, and its ACKs
//! and READ responses go back to the model, turn by turn, until every message completed. With
//! `--rtl-requester` the roles turn round: the core fetches the WQEs, gathers their payload and sends, the
//! model answers. Time is the core's: its clock cycles from each turn's first frame in (or doorbell) to its
//! last frame out (the model's turnaround is not counted), at the core's clock. As the requester of WRITEs
//! and SENDs the core runs on in stretches of at most `STRETCH_CYCLES` instead, the model's answers handed
//! over between them, so its pipeline keeps streaming as its ACKs come back (a turn that waits for the core
//! to settle would drain it each time the window of `MAX_UNACKED_PSNS` fills, which a link does not); a
//! stretch ends early once the core is quiet, as the rest of it would only wait for answers the model
//! already has (the last ACK's, say). With lockstep (the default) the model follows every decision of the
//! core and every output is compared.

use crate::perf::{pattern, report, wr_for, Outcome, PerfArgs, PerfReport, DEPTH};
use crate::Error;
use driver::pair::{connect, open_host, open_host_on, rtl_turn, run_external};
use driver::rtl::RtlBackend;
use driver::{shared, ConnectOpts, QpCap, RecvWr, Sge, WcStatus};
use model::net::{LinkConfig, World};
use serde::Serialize;

/// The core's datapath in bytes, and its clock.
/// The model's time each turn runs for (2 ms, far short of its ACK timeout), in picoseconds.
const TURN_PS: u64 = 2_000_000_000;
/// Cycles a turn may take before the run counts as stalled.
const TURN_CYCLES: u64 = 200_000_000;
/// The requester's ACK timeout (4.096 us x 2^12, about 17 ms): a packet the core's MAC boundary dropped at the
/// end of a burst is sent again after it. Turns without traffic before the run counts as stalled: past it.
const ACK_TIMEOUT: u8 = 12;
const IDLE_TURNS: u32 = 32;
/// The most cycles the core runs between hand-overs when it sends the payload (about 2 us at 125 MHz): the
/// ACKs' delay at most while it sends, far short of the 64 packets between AckReqs. A stretch in which it goes
/// quiet (nothing left to send until answers come) ends there, so its wait for the model's answers is not
/// counted.
const STRETCH_CYCLES: u64 = 256;

/// What the RTL core's run adds to the report.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct RtlFigures {
    /// The core's cycles, summed over the turns.
    pub cycles: u64,
    pub clock_mhz: f64,
    pub datapath_bytes: u32,
    /// Payload bytes / (cycles x datapath bytes).
    pub efficiency: f64,
    /// QPs the core was built with.
    pub core_qps: u32,
    /// Frames the core's MAC boundary dropped for want of room (a MAC cannot be told to wait; the requester
    /// sends them again after the core's sequence NAK); none with `pfc`, the MAC honouring the core's pause.
    pub mac_drops: u64,
    pub pfc: bool,
    /// The core was the requester (`--rtl-requester`), not the responder.
    pub requester: bool,
    /// Decisions the model followed, and outputs that differed (both 0 without lockstep).
    pub lockstep: bool,
    pub lockstep_events: u64,
    pub lockstep_mismatches: u64,
    /// The first difference, decoded.
    pub lockstep_first: Option<String>,
    /// Simulation speed, cycles per wall second.
    pub cycles_per_s: f64,
    /// From a message's last packet's last beat in to its receive CQE's first write beat (SENDs): mean and
    /// most, in cycles. The payload's writes come first, and a one-packet message's WQE fetch is in it.
    pub rx_to_cqe_cycles_mean: Option<f64>,
    pub rx_to_cqe_cycles_max: Option<u64>,
    /// From an SQ doorbell written to an idle core to its first packet's first beat out (`--rtl-requester`):
    /// mean and most, in cycles. The WQE's fetch, its slot's read and the payload's are in it.
    pub doorbell_to_tx_cycles_mean: Option<f64>,
    pub doorbell_to_tx_cycles_max: Option<u64>,
    /// The DMA round trip the run had (`--dma-latency-ns`).
    pub dma_latency_ns: u64,
}

/// The run: the arguments checked, the model host and the RTL host connected, the messages run.
pub fn measure(args: &PerfArgs) -> Result<PerfReport, Error> {
    use crate::perf::Op;
    if args.threads.is_some() {
        return Err("--threads is for the model backend".into());
    }
    let width = match (args.rtl.width, args.rtl.core_qps) {
        (8, 16 | 1024) => hdl::Width::W8,
        (8, q) if hdl::top::Top::Core(q) == hdl::top::Top::LARGE_CORE => {
            if !sim::LARGE_CORE {
                return Err("--core-qps 16384: this build has no such core; build with `--features large-core`".into());
            }
            hdl::Width::W8
        }
        (64, 16) => hdl::Width::W64,
        (8 | 64, _) => {
            return Err(
                "--core-qps must be 16, 1024 or 16384 at 8 bytes, 16 at 64 (the cores the simulation builds)".into()
            )
        }
        _ => return Err("--width must be 8 or 64".into()),
    };
    let info = hdl::core::info(args.rtl.core_qps, width);
    let clock_mhz = 1000.0 / f64::from(info.ns_per_cycle);
    let faults = args.faults.check()?;
    if faults != Default::default() || args.faults.pcap.is_some() {
        return Err("--loss, the other faults and --pcap are for the model backend".into());
    }
    let mtu = wire::contract::verbs::mtu_enum(args.pmtu).ok_or("--pmtu must be 256, 512, 1024, 2048 or 4096")?;
    let iters = args.iters.unwrap_or(100);
    // The core's first two QP numbers are reserved.
    if args.qps == 0 || args.qps > args.rtl.core_qps - 2 || iters == 0 {
        return Err(format!("--qps must be 1 to {} and --iters at least 1", args.rtl.core_qps - 2).into());
    }
    let size = args.size();
    if size > 1 << 24 {
        return Err("--size above 16 MiB on the RTL backend".into());
    }
    let link = LinkConfig { gbps: args.link_gbps, delay_ns: args.delay_ns, ..Default::default() };
    let nic = args.nic()?;
    let ring = nic.profile.max_log_ring.min(info.profile.max_log_ring);
    let world = shared(World::attached(nic, link, args.faults.seed));
    let buf_len = (size.max(8) as usize) * args.qps as usize;
    // Each host's one CQ takes both queues of every QP: with many QPs each gets fewer WRs in flight, so the
    // CQ stays within both devices' largest ring.
    let depth = DEPTH.min((1u32 << ring) / (2 * args.qps)).max(1);
    let cap = QpCap { max_send_wr: depth, max_recv_wr: depth, ..Default::default() };
    let model_host = open_host(&world, 0, args.qps as usize, buf_len, cap, false)?;
    let rtl = if args.rtl.lockstep {
        RtlBackend::with_lockstep(args.rtl.core_qps, width)
    } else {
        RtlBackend::new(args.rtl.core_qps, width)
    };
    let core = rtl.handle();
    core.set_lossless(args.rtl.pfc);
    core.set_dma_latency_ns(args.rtl.dma_latency_ns);
    let rtl_host = open_host_on(Box::new(rtl), 1, args.qps as usize, buf_len, cap, false)?;
    let opts = ConnectOpts { path_mtu: mtu, timeout: ACK_TIMEOUT, ..Default::default() };
    for q in 0..args.qps as usize {
        connect(&model_host, q, 100 + q as u32, &rtl_host, q, 200 + q as u32, &opts)?;
    }
    // `a` posts the work requests, `b` answers them.
    let (a, b) = if args.rtl.rtl_requester { (&rtl_host, &model_host) } else { (&model_host, &rtl_host) };
    let expect = pattern(buf_len, args.faults.seed as u32);
    let src = if args.op == Op::Read { b } else { a };
    src.buf.write(0, &expect)?;

    let wall = std::time::Instant::now();
    let (mut posted, mut done) = (vec![0u32; args.qps as usize], vec![0u32; args.qps as usize]);
    let (mut cycles, mut errors, mut in_order) = (0u64, Vec::new(), true);
    let total = iters as usize * args.qps as usize;
    let (mut completed, mut succeeded, mut idle) = (0usize, 0u64, 0u32);
    // The core sends the payload (a WRITE's or SEND's requester): it runs in stretches. Otherwise (the
    // payload comes into it) each turn's frames go in and it settles. Cycles it has run in stretches
    // without sending while it had something to do.
    let stretch = args.rtl.rtl_requester && args.op != Op::Read;
    let mut busy = 0u64;
    let recv_sge =
        |q: u32| Sge { addr: b.mr.addr + u64::from(q) * u64::from(size.max(8)), length: size, lkey: b.mr.lkey };
    while completed < total && errors.is_empty() {
        for q in 0..args.qps {
            let qi = q as usize;
            while posted[qi] < iters && posted[qi] - done[qi] < depth {
                if args.op == Op::Send {
                    b.qps[qi].post_recv(&RecvWr { wr_id: u64::from(posted[qi]), sg_list: vec![recv_sge(q)] })?;
                }
                a.qps[qi].post_send(&wr_for(args.op, a, b, q, size, u64::from(posted[qi])))?;
                posted[qi] += 1;
            }
        }
        // A turn: what the requester sends goes into the core, the core answers, the answers go back.
        let frames = run_external(&world, TURN_PS);
        let mut had_frames = !frames.is_empty();
        if stretch {
            // The core sends on while the model answers: its ACKs come back within a stretch, as over a link,
            // and the core's pipeline does not drain each time its window of unacknowledged PSNs fills.
            let (c, settled) = rtl_turn(&world, &core, frames, STRETCH_CYCLES, |_| had_frames = true);
            cycles += c;
            busy = if had_frames || settled { 0 } else { busy + c };
            if busy > TURN_CYCLES {
                errors.push(format!("the core sent nothing for {TURN_CYCLES} cycles"));
            }
        } else {
            let (c, settled) = rtl_turn(&world, &core, frames, TURN_CYCLES, |_| had_frames = true);
            if !settled {
                errors.push(format!("the core did not settle within {TURN_CYCLES} cycles"));
            }
            cycles += c;
        }
        {
            // The answers reach the requester; what it sends next waits for the next turn.
            let mut w = driver::lock_world(&world);
            let until = w.now + TURN_PS;
            w.run_until(until);
        }
        let wcs = a.cq.poll(64 * args.qps as usize)?;
        if args.rtl.rtl_requester && !had_frames && wcs.is_empty() && core.quiet() {
            // Nothing came in, went out or completed: the core's ACK timers run for the turn's time (its
            // cycles count). A completion the last stretch wrote is taken first, not a turn later.
            let wait = TURN_PS / 1000 / u64::from(info.ns_per_cycle);
            core.run(wait);
            cycles += wait;
        }
        idle = if had_frames || !wcs.is_empty() || busy != 0 { 0 } else { idle + 1 };
        if idle >= IDLE_TURNS {
            errors.push(format!("stalled after {completed} of {total} completions"));
        }
        for wc in wcs {
            let Some(qi) = a.qps.iter().position(|q| q.qpn == wc.qp_num) else { continue };
            in_order &= wc.wr_id == u64::from(done[qi]);
            if wc.status == WcStatus::Success {
                succeeded += 1;
            } else {
                errors.push(format!("wr {} on qp {:#x}: {:?}", wc.wr_id, wc.qp_num, wc.status));
            }
            done[qi] += 1;
            completed += 1;
        }
        if args.op == Op::Send {
            for wc in b.cq.poll(64 * args.qps as usize)? {
                if wc.status != WcStatus::Success || wc.byte_len != size {
                    errors.push(format!("receive wr {} on qp {:#x}: {:?}", wc.wr_id, wc.qp_num, wc.status));
                }
            }
        }
    }
    let wall_s = wall.elapsed().as_secs_f64();
    let data_ok = crate::perf::data_arrived(args.op, [a, b], args.qps, size, iters, &expect)? && errors.is_empty();
    let bytes = if data_ok { u64::from(size) * succeeded } else { 0 };
    let missing: Vec<String> = (0..args.qps as usize)
        .filter(|&q| done[q] < iters)
        .map(|q| format!("qp {:#x}: wr {}..{}", a.qps[q].qpn, done[q], iters - 1))
        .collect();
    let report_lockstep = core.lockstep_report();
    let lat = core.rx_to_cqe();
    let db = core.doorbell_to_tx();
    let outcome = Outcome {
        size,
        iters,
        qps: args.qps,
        threads: 1,
        bytes,
        sim_ps: (cycles as f64 * 1e6 / clock_mhz) as u64,
        completed: completed as u64,
        data_ok,
        completions_ok: in_order && completed == total && errors.is_empty(),
        missing,
        errors,
        wall_s,
        driver_ns_per_wr: None,
    };
    // The requester's counters (the core's read from its counter block), and the responses the core sent.
    let mut r = report(args, &[a], outcome);
    if !args.rtl.rtl_requester {
        r.packets += core.responses();
    }
    r.backend = "rtl";
    let (events, mismatches, first) =
        report_lockstep.map_or((0, 0, None), |l| (l.events as u64, l.mismatches as u64, l.first));
    r.rtl = Some(RtlFigures {
        cycles,
        clock_mhz,
        datapath_bytes: width.bytes() as u32,
        efficiency: bytes as f64 / (cycles.max(1) as f64 * width.bytes() as f64),
        core_qps: args.rtl.core_qps,
        mac_drops: core.peek("rx_drop_full"),
        pfc: args.rtl.pfc,
        requester: args.rtl.rtl_requester,
        lockstep: args.rtl.lockstep,
        lockstep_events: events,
        lockstep_mismatches: mismatches,
        lockstep_first: first,
        cycles_per_s: cycles as f64 / wall_s.max(1e-9),
        rx_to_cqe_cycles_mean: (!lat.is_empty()).then(|| lat.iter().sum::<u64>() as f64 / lat.len() as f64),
        rx_to_cqe_cycles_max: lat.iter().max().copied(),
        doorbell_to_tx_cycles_mean: (!db.is_empty()).then(|| db.iter().sum::<u64>() as f64 / db.len() as f64),
        doorbell_to_tx_cycles_max: db.iter().max().copied(),
        dma_latency_ns: args.rtl.dma_latency_ns,
    });
    if mismatches > 0 {
        r.completions_ok = false;
    }
    Ok(r)
}
