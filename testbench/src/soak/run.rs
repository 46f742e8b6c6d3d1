//! Runs one scenario through the verbs on two model NICs, or on two RTL cores each in lockstep with its
//! model (`Options::rtl`), and checks what an application can see: every work request completes exactly
//! once, in order, with success; the data arrived intact; each atomic executed once; the run ends; and the
//! model's requester/completer invariants held after every event (on the RTL: every decision the core took
//! was legal and every output the model's, its QP contexts the model's at the end).

use super::follow::{follow, Follow};
use super::scenario::{Kind, Op, Scenario};
use driver::pair::{connect, open_host, open_host_on, rtl_link, Host};
use driver::rtl::{RtlBackend, RtlHandle};
use driver::*;
use hdl::Width;
use model::net::{LinkConfig, World};
use model::rng::Rng;
use model::sched::Policy;
use model::NicConfig;
use std::collections::VecDeque;
use wire::contract::profile::Profile;
use wire::contract::regs::Counter;

/// Simulated time a scenario may take before it counts as stalled.
const MAX_SIM_PS: u64 = 120 * 1_000_000_000_000;

/// How a scenario runs: the NICs' hardware profile, and whether (and how) their decisions are followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub profile: Profile,
    pub follow: Option<Follow>,
    /// Check each NIC's invariants and round-trip its packed QP contexts after every decision.
    pub checks: bool,
    /// Two RTL cores of this width (16 QPs, the board profile), each in lockstep with its model, instead
    /// of two model NICs; the scenario's link faults are left out and each core's MAC honours its pause
    /// (PFC): the cores' soak is lossless.
    pub rtl: Option<Width>,
}

impl Default for Options {
    fn default() -> Self {
        Options { profile: Profile::board(), follow: None, checks: true, rtl: None }
    }
}

/// The ACK timeout of the RTL soak's QPs: 4.096 us x 2^6, so a pass's wait does not spend the retries and a
/// lost last packet is waited out at a quiet point in a few thousand cycles.
const RTL_TIMEOUT: u8 = 6;
/// Cycles an RTL scenario may run.
const RTL_MAX_CYCLES: u64 = 200_000_000;

/// What a passing run did, for the summary (a soak adds them up).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Stats {
    pub ops: u64,
    pub bytes: u64,
    pub frames: u64,
    pub retransmitted: u64,
    pub timeouts: u64,
    /// QP pairs whose retries ran out (RETRY_EXC_ERR), counted only where frames could be dropped.
    pub retries_exhausted: u64,
    /// With `--follow`: decisions replayed into the followers, streams that differed, decisions refused.
    pub follow_events: u64,
    pub follow_mismatches: u64,
    pub illegal_decisions: u64,
    /// On the RTL: the cores' decisions their models followed, outputs that differed, and cycles run.
    pub lockstep_events: u64,
    pub lockstep_mismatches: u64,
    pub cycles: u64,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Stats) {
        self.ops += o.ops;
        self.bytes += o.bytes;
        self.frames += o.frames;
        self.retransmitted += o.retransmitted;
        self.timeouts += o.timeouts;
        self.retries_exhausted += o.retries_exhausted;
        self.follow_events += o.follow_events;
        self.follow_mismatches += o.follow_mismatches;
        self.illegal_decisions += o.illegal_decisions;
        self.lockstep_events += o.lockstep_events;
        self.lockstep_mismatches += o.lockstep_mismatches;
        self.cycles += o.cycles;
    }
}

/// Where one op's data lives: the requester's local region and the responder's remote one (byte offsets in
/// each host's buffer), and for atomics the operands and the expected values.
struct Placed {
    op: Op,
    local: u64,
    remote: u64,
    data: Vec<u8>,
    compare: u64,
    swap_add: u64,
    /// Atomics: the target's value before, and after the one execution.
    before: u64,
    after: u64,
}

fn opcode(k: Kind) -> SendOp {
    match k {
        Kind::Send => SendOp::Send,
        Kind::SendImm => SendOp::SendWithImm,
        Kind::Write => SendOp::RdmaWrite,
        Kind::WriteImm => SendOp::RdmaWriteWithImm,
        Kind::Read => SendOp::RdmaRead,
        Kind::CmpSwap => SendOp::AtomicCmpSwp,
        Kind::FetchAdd => SendOp::AtomicFetchAdd,
    }
}

fn imm(i: usize) -> u32 {
    0xA000_0000 | i as u32
}

/// Lays every op out in the two buffers (regions 64-byte aligned, never shared) and draws its data.
fn place(sc: &Scenario, rng: &mut Rng) -> (Vec<Placed>, [u64; 2]) {
    let mut next = [0u64; 2];
    let placed = sc
        .ops
        .iter()
        .map(|op| {
            let (req, resp) = if op.from_b { (1, 0) } else { (0, 1) };
            let span = u64::from(op.len).div_ceil(64).max(1) * 64;
            let (local, remote) = (next[req], next[resp]);
            next[req] += span;
            next[resp] += span;
            let mut data = vec![0u8; op.len as usize];
            rng.fill(&mut data);
            let before = rng.next_u64();
            let (compare, swap_add) = match op.kind {
                Kind::CmpSwap if rng.chance(0.5) => (before, rng.next_u64()),
                _ => (rng.next_u64(), rng.next_u64()),
            };
            let after = match op.kind {
                Kind::CmpSwap if compare == before => swap_add,
                Kind::CmpSwap => before,
                _ => before.wrapping_add(swap_add),
            };
            Placed { op: op.clone(), local, remote, data, compare, swap_add, before, after }
        })
        .collect();
    (placed, next)
}

/// Runs `sc`; an error says what went wrong first. Every NIC checks its invariants and its packed QP context
/// after every decision; with `opts.follow`, each NIC's decisions are then replayed into a fresh model.
pub fn run(sc: &Scenario, opts: &Options) -> Result<Stats, String> {
    let (mut stats, traces) = drive(sc, opts)?;
    let cfg = NicConfig::new(opts.profile);
    for (n, trace) in traces.iter().enumerate() {
        let (f, r) = follow(trace, &cfg, n);
        stats.follow_events += f.events;
        stats.follow_mismatches += f.mismatches;
        stats.illegal_decisions += f.illegal;
        r?;
    }
    Ok(stats)
}

/// Runs `sc` on `profile` with the model's own scheduler and gives back both NICs' traces.
pub fn record(sc: &Scenario, profile: Profile) -> Result<Vec<model::follow::Trace>, String> {
    drive(sc, &Options { profile, follow: Some(Follow::Exact), checks: true, rtl: None }).map(|(_, t)| t)
}

/// Runs `sc`: its stats, and each NIC's trace when `opts.follow` asks for them.
fn drive(sc: &Scenario, opts: &Options) -> Result<(Stats, Vec<model::follow::Trace>), String> {
    let mut rng = Rng::new(sc.seed ^ 0x5EED);
    let (placed, size) = place(sc, &mut rng);
    let cfg = NicConfig::new(opts.profile);
    let mut w = World::pair(cfg.clone(), LinkConfig::default(), sc.seed);
    w.set_checks(opts.checks);
    if let Some(f) = opts.follow {
        for n in 0..2 {
            w.trace(n);
            if f == Follow::Perturb {
                w.set_policy(n, Policy::Perturb(Rng::new(sc.seed.wrapping_mul(31) ^ n as u64)));
            }
        }
    }
    let world = shared(w);
    let cap = QpCap { max_send_wr: 32, max_recv_wr: 32, ..Default::default() };
    let err = |e: Error| format!("set-up: {e}");
    let size = size.map(|n| n.max(64) as usize);
    let (hosts, cores) = match opts.rtl {
        None => (
            [open_host(&world, 0, sc.qps, size[0], cap, false), open_host(&world, 1, sc.qps, size[1], cap, false)],
            None,
        ),
        Some(width) => {
            let [b0, b1] = [0, 1].map(|_| RtlBackend::with_lockstep(16, width));
            let cores = [b0.handle(), b1.handle()];
            for c in &cores {
                c.set_lossless(true);
            }
            let hosts = [
                open_host_on(Box::new(b0), 0, sc.qps, size[0], cap, false),
                open_host_on(Box::new(b1), 1, sc.qps, size[1], cap, false),
            ];
            (hosts, Some((cores, width)))
        }
    };
    let [h0, h1] = hosts;
    let hosts = [h0.map_err(err)?, h1.map_err(err)?];
    let mtu = wire::contract::verbs::mtu_enum(sc.pmtu).ok_or("bad PMTU")?;
    let timeout = if cores.is_some() { RTL_TIMEOUT } else { 12 };
    let conn = ConnectOpts { path_mtu: mtu, timeout, ..Default::default() };
    for q in 0..sc.qps {
        connect(&hosts[0], q, 0x100 * q as u32 + 1, &hosts[1], q, 0xFF_FF00 + q as u32, &conn).map_err(err)?;
    }
    // Sources and atomic targets, then receive WQEs, then the work requests, all in op order.
    for p in &placed {
        let (req, resp) = roles(&hosts, &p.op);
        match p.op.kind {
            Kind::Read => resp.buf.write(p.remote as usize, &p.data),
            k if k.is_atomic() => resp.buf.write(p.remote as usize, &p.before.to_le_bytes()),
            _ => req.buf.write(p.local as usize, &p.data),
        }
        .map_err(err)?;
    }
    for (i, p) in placed.iter().enumerate().filter(|(_, p)| p.op.kind.needs_recv()) {
        let (_, resp) = roles(&hosts, &p.op);
        let sge = Sge { addr: resp.mr.addr + p.remote, length: p.op.len, lkey: resp.mr.lkey };
        resp.qps[p.op.qp].post_recv(&RecvWr { wr_id: i as u64, sg_list: vec![sge] }).map_err(err)?;
    }
    for (i, p) in placed.iter().enumerate() {
        let (req, resp) = roles(&hosts, &p.op);
        let wr = SendWr {
            wr_id: i as u64,
            opcode: Some(opcode(p.op.kind)),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![Sge { addr: req.mr.addr + p.local, length: p.op.len, lkey: req.mr.lkey }],
            imm_data: imm(i),
            remote_addr: resp.mr.addr + p.remote,
            rkey: resp.mr.rkey,
            compare_add: if p.op.kind == Kind::CmpSwap { p.compare } else { p.swap_add },
            swap: p.swap_add,
        };
        req.qps[p.op.qp].post_send(&wr).map_err(err)?;
    }
    if let Some((cores, width)) = &cores {
        let mut stats = run_rtl(cores, *width, &hosts, &placed, sc.qps)?;
        stats.ops = placed.len() as u64;
        stats.bytes = placed.iter().map(|p| u64::from(p.op.len)).sum();
        return Ok((stats, Vec::new()));
    }
    let f = sc.faults;
    driver::lock_world(&world).set_link_faults(f);
    let mut expect = Expect::new(&placed, sc.qps, f.loss > 0.0 || f.corrupt > 0.0);
    loop {
        for (h, host) in hosts.iter().enumerate() {
            for wc in host.cq.poll(64).map_err(err)? {
                expect.completion(h, &wc)?;
            }
        }
        if expect.done() {
            break;
        }
        let mut w = driver::lock_world(&world);
        if !w.step() {
            if expect.settled() {
                break;
            }
            return Err(format!("stalled: the network went idle with {}", expect.missing()));
        }
        if w.now > MAX_SIM_PS {
            return Err(format!(
                "no end after {} s of simulated time: {}",
                MAX_SIM_PS / 1_000_000_000_000,
                expect.missing()
            ));
        }
        for (i, n) in w.nodes.iter().enumerate() {
            if let Some(e) = n.nic.check_failure() {
                return Err(format!("node {i}: {e}"));
            }
        }
    }
    // Nothing completes twice: let everything in flight settle, then nothing more may arrive.
    driver::lock_world(&world).run_until(u64::MAX / 2);
    for (h, host) in hosts.iter().enumerate() {
        if let Some(wc) = host.cq.poll(1).map_err(err)?.first() {
            return Err(format!("host {h}: an extra completion after all were in: {wc:?}"));
        }
    }
    check_memory(&hosts, &placed, &expect.status)?;
    let c = |k| hosts[0].ctx.counter(k) + hosts[1].ctx.counter(k);
    let stats = Stats {
        ops: placed.len() as u64,
        bytes: placed.iter().map(|p| u64::from(p.op.len)).sum(),
        frames: c(Counter::tx_frames),
        retransmitted: c(Counter::retransmitted_packets),
        timeouts: c(Counter::local_ack_timeouts),
        retries_exhausted: expect.broken.iter().filter(|&&b| b).count() as u64,
        ..Default::default()
    };
    let traces = (0..2).filter_map(|n| driver::lock_world(&world).take_trace(n)).collect();
    Ok((stats, traces))
}

/// The RTL half of `drive`: the work requests posted, the two cores linked until neither has more to send,
/// then every completion and the data checked as on the model, nothing completing twice, and each core's
/// lockstep clean with its QP contexts its model's.
fn run_rtl(
    cores: &[RtlHandle; 2],
    width: Width,
    hosts: &[Host; 2],
    placed: &[Placed],
    qps: usize,
) -> Result<Stats, String> {
    let err = |e: Error| format!("poll: {e}");
    // An ACK timeout and as much again, in cycles (1,024 ns a tick).
    let wait = 2 * (4 << RTL_TIMEOUT) * 1024 / u64::from(hdl::core::info(16, width).ns_per_cycle);
    let mut expect = Expect::new(placed, qps, false);
    rtl_link([&cores[0], &cores[1]], wait, RTL_MAX_CYCLES)?;
    for (h, host) in hosts.iter().enumerate() {
        loop {
            let got = host.cq.poll(64).map_err(err)?;
            for wc in &got {
                expect.completion(h, wc)?;
            }
            if got.is_empty() {
                break;
            }
        }
    }
    if !expect.done() {
        return Err(format!("stalled: the cores went quiet with {}", expect.missing()));
    }
    // Nothing completes twice: the cores run on, and nothing more completes.
    rtl_link([&cores[0], &cores[1]], wait, RTL_MAX_CYCLES)?;
    for (h, host) in hosts.iter().enumerate() {
        if let Some(wc) = host.cq.poll(1).map_err(err)?.first() {
            return Err(format!("host {h}: an extra completion after all were in: {wc:?}"));
        }
    }
    check_memory(hosts, placed, &expect.status)?;
    let mut stats = Stats::default();
    for (h, (core, host)) in cores.iter().zip(hosts).enumerate() {
        let l = core.lockstep_report().ok_or("lockstep is on")?;
        if l.mismatches != 0 {
            return Err(format!(
                "core {h}: {} lockstep mismatches, the first: {}",
                l.mismatches,
                l.first.unwrap_or_default()
            ));
        }
        for qp in &host.qps {
            core.context_agrees(qp.qpn).map_err(|e| format!("core {h}: {e}"))?;
        }
        stats.lockstep_events += l.events as u64;
        stats.cycles += core.cycles();
        stats.frames += host.ctx.counter(Counter::tx_frames);
        stats.retransmitted += host.ctx.counter(Counter::retransmitted_packets);
        stats.timeouts += host.ctx.counter(Counter::local_ack_timeouts);
    }
    Ok(stats)
}

/// (requester, responder) of an op.
fn roles<'a>(hosts: &'a [Host; 2], op: &Op) -> (&'a Host, &'a Host) {
    if op.from_b {
        (&hosts[1], &hosts[0])
    } else {
        (&hosts[0], &hosts[1])
    }
}

/// Checks the data of every op that completed with success, and that a failed atomic ran at most once.
fn check_memory(hosts: &[Host; 2], placed: &[Placed], status: &[Option<WcStatus>]) -> Result<(), String> {
    for (i, p) in placed.iter().enumerate() {
        let (req, resp) = roles(hosts, &p.op);
        let read = |h: &Host, off: u64, n: usize| h.buf.read(off as usize, n).map_err(|e| e.to_string());
        let what = format!("op {i} ({:?}, {} B)", p.op.kind, p.op.len);
        if status[i] != Some(WcStatus::Success) {
            let target = read(resp, p.remote, 8)?;
            if p.op.kind.is_atomic() && target != p.before.to_le_bytes() && target != p.after.to_le_bytes() {
                return Err(format!("{what}: failed, and its target {target:02x?} shows more than one execution"));
            }
            continue;
        }
        match p.op.kind {
            Kind::Read if read(req, p.local, p.data.len())? != p.data => return Err(format!("{what}: data differs")),
            Kind::Send | Kind::SendImm | Kind::Write | Kind::WriteImm
                if read(resp, p.remote, p.data.len())? != p.data =>
            {
                return Err(format!("{what}: data differs"))
            }
            k if k.is_atomic() => {
                let target = read(resp, p.remote, 8)?;
                let got = read(req, p.local, 8)?;
                if target != p.after.to_le_bytes() {
                    return Err(format!("{what}: target {target:02x?}, expected one execution"));
                }
                if got != p.before.to_le_bytes() {
                    return Err(format!("{what}: returned {got:02x?}, expected the original value"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// The completions each host must see, in order per QP and queue.
struct Expect {
    /// `queues[host][qp][recv as usize]`: op indices still to complete there, oldest first.
    queues: Vec<Vec<[VecDeque<usize>; 2]>>,
    /// Each op's verb, length and QP pair.
    ops: Vec<(Kind, u32, usize)>,
    /// Each op's status at its requester, once it completed.
    status: Vec<Option<WcStatus>>,
    /// Frames can be dropped (loss or corruption), so retries may run out.
    drops: bool,
    /// QP pairs whose retries ran out.
    broken: Vec<bool>,
}

impl Expect {
    fn new(placed: &[Placed], qps: usize, drops: bool) -> Expect {
        let mut queues: Vec<Vec<[VecDeque<usize>; 2]>> = vec![vec![Default::default(); qps]; 2];
        for (i, p) in placed.iter().enumerate() {
            let (req, resp) = if p.op.from_b { (1, 0) } else { (0, 1) };
            queues[req][p.op.qp][0].push_back(i);
            if p.op.kind.needs_recv() {
                queues[resp][p.op.qp][1].push_back(i);
            }
        }
        Expect {
            queues,
            ops: placed.iter().map(|p| (p.op.kind, p.op.len, p.op.qp)).collect(),
            status: vec![None; placed.len()],
            drops,
            broken: vec![false; qps],
        }
    }

    fn done(&self) -> bool {
        self.queues.iter().flatten().flatten().all(|q| q.is_empty())
    }

    /// Nothing is left but receive WQEs on broken QP pairs: their peer died, and a QP that sends nothing
    /// never notices (an application would tear it down).
    fn settled(&self) -> bool {
        self.queues
            .iter()
            .all(|qps| qps.iter().enumerate().all(|(q, [s, r])| s.is_empty() && (r.is_empty() || self.broken[q])))
    }

    fn missing(&self) -> String {
        let left: Vec<String> = self
            .queues
            .iter()
            .enumerate()
            .flat_map(|(h, qps)| {
                qps.iter().enumerate().flat_map(move |(q, [s, r])| {
                    let s = s.iter().map(move |i| format!("host {h} qp {q} send op {i}"));
                    let r = r.iter().map(move |i| format!("host {h} qp {q} recv op {i}"));
                    s.chain(r)
                })
            })
            .collect();
        format!("{} completions missing: {}", left.len(), left.join(", "))
    }

    fn completion(&mut self, host: usize, wc: &Wc) -> Result<(), String> {
        let recv = wc.opcode == WcOpcode::Recv || wc.opcode == WcOpcode::RecvRdmaWithImm;
        let i = wc.wr_id as usize;
        let Some(&(kind, len, qp)) = self.ops.get(i) else {
            return Err(format!("host {host}: completion of an unknown work request: {wc:?}"));
        };
        let queue = &mut self.queues[host][qp][usize::from(recv)];
        if queue.front() != Some(&i) {
            return Err(format!(
                "host {host}: op {i} completed out of order or twice (next due {:?}): {wc:?}",
                queue.front()
            ));
        }
        queue.pop_front();
        if !recv {
            self.status[i] = Some(wc.status);
        }
        match wc.status {
            WcStatus::Success => {}
            // Retries can run out where frames are dropped: eight retransmissions in a row lost. The QP pair is
            // then broken for good, and every later completion on it may fail or be flushed.
            WcStatus::RetryExcErr if self.drops && !recv => self.broken[qp] = true,
            WcStatus::RetryExcErr | WcStatus::WrFlushErr if self.broken[qp] => {}
            s => return Err(format!("host {host}: op {i} completed with {s:?}: {wc:?}")),
        }
        if wc.status != WcStatus::Success {
            return Ok(());
        }
        if recv {
            let want_op = if kind == Kind::WriteImm { WcOpcode::RecvRdmaWithImm } else { WcOpcode::Recv };
            let want_imm = if kind == Kind::Send { 0 } else { imm(i) };
            if wc.opcode != want_op || wc.byte_len != len || (kind != Kind::Send && wc.imm_data != want_imm) {
                return Err(format!("host {host}: receive of op {i} ({kind:?}, {len} B) reported {wc:?}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect(ops: &[(Kind, bool)], drops: bool) -> Expect {
        let sc = Scenario {
            seed: 0,
            qps: 1,
            pmtu: 1024,
            faults: Default::default(),
            ops: ops.iter().map(|&(kind, from_b)| Op { qp: 0, from_b, kind, len: 8 }).collect(),
        };
        Expect::new(&place(&sc, &mut Rng::new(0)).0, 1, drops)
    }

    fn wc(i: u64, opcode: WcOpcode, status: WcStatus) -> Wc {
        let imm_data = if opcode == WcOpcode::Recv { imm(i as usize) } else { 0 };
        Wc { wr_id: i, status, opcode, vendor_err: 0, byte_len: 8, imm_data, qp_num: 0, src_qp: 0, wc_flags: 0 }
    }

    #[test]
    fn completions_in_order_once() {
        let mut e = expect(&[(Kind::Write, false), (Kind::Write, false)], false);
        assert!(e.completion(0, &wc(1, WcOpcode::RdmaWrite, WcStatus::Success)).is_err(), "out of order");
        let mut e2 = expect(&[(Kind::Write, false)], false);
        assert!(e2.completion(0, &wc(0, WcOpcode::RdmaWrite, WcStatus::Success)).is_ok());
        assert!(e2.done());
        assert!(e2.completion(0, &wc(0, WcOpcode::RdmaWrite, WcStatus::Success)).is_err(), "twice");
        assert!(e.completion(1, &wc(0, WcOpcode::RdmaWrite, WcStatus::Success)).is_err(), "on the wrong host");
    }

    #[test]
    fn retry_exhaustion_only_where_frames_drop_then_flushes() {
        let ops = [(Kind::Write, false), (Kind::SendImm, false), (Kind::Write, true)];
        let mut e = expect(&ops, false);
        assert!(e.completion(0, &wc(0, WcOpcode::RdmaWrite, WcStatus::RetryExcErr)).is_err(), "no drops: a fault");
        let mut e = expect(&ops, true);
        assert!(e.completion(0, &wc(1, WcOpcode::Send, WcStatus::WrFlushErr)).is_err(), "out of order");
        assert!(e.completion(0, &wc(0, WcOpcode::RdmaWrite, WcStatus::RetryExcErr)).is_ok());
        assert!(e.completion(0, &wc(1, WcOpcode::Send, WcStatus::WrFlushErr)).is_ok());
        assert!(!e.done() && !e.settled(), "host B's WRITE is still due");
        assert!(e.completion(1, &wc(2, WcOpcode::RdmaWrite, WcStatus::RetryExcErr)).is_ok());
        assert!(e.settled(), "only B's receive WQE is left, on a broken pair");
        assert!(!e.done());
    }

    #[test]
    fn a_receive_must_report_what_was_sent() {
        let mut e = expect(&[(Kind::SendImm, false)], false);
        let mut w = wc(0, WcOpcode::Recv, WcStatus::Success);
        w.imm_data ^= 1;
        assert!(e.completion(1, &w).is_err(), "wrong immediate");
        let mut e = expect(&[(Kind::SendImm, false)], false);
        assert!(e.completion(1, &wc(0, WcOpcode::Recv, WcStatus::Success)).is_ok());
    }
}
