//! `ferrite demo`: two NICs, every operation through the verbs, every byte checked. With `--backend rtl` the
//! requester is the Verilated core, in lockstep with the model, and its peer a golden-model NIC.

use crate::device::DeviceSpec;
use crate::{Backend, Error};
use driver::pair::{connect, open_host, open_host_on, rtl_turn, run_external, Host};
use driver::rtl::{RtlBackend, RtlHandle};
use driver::*;
use model::net::{LinkConfig, World};
use model::NicConfig;
use std::path::Path;

const TIMEOUT_NS: u64 = 1_000_000_000;

fn sge(h: &Host, off: u64, len: u32) -> Sge {
    Sge { addr: h.mr.addr + off, length: len, lkey: h.mr.lkey }
}

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(13) ^ salt).collect()
}

struct Row {
    op: &'static str,
    bytes: usize,
    status: WcStatus,
    ok: bool,
    latency_ns: u64,
}

fn complete(h: &Host, n: usize) -> Result<Vec<Wc>, Error> {
    let w = h.cq.wait(n, TIMEOUT_NS)?;
    if w.len() < n {
        return Err(format!("only {} of {n} completions arrived", w.len()).into());
    }
    Ok(w)
}

/// Picoseconds of the model's world a turn of the RTL demo runs; the core's cycles a turn may take at most;
/// turns with nothing new before the demo gives up.
const TURN_PS: u64 = 20_000_000;
const TURN_CYCLES: u64 = 5_000_000;
const IDLE_TURNS: u32 = 64;

/// `n` completions of `h`, the RTL core and the model's world taking turns until they are in: the world's
/// frames go into the core, the core runs until it has answered, its frames go into the world, and time
/// passes in the world (and in the core, for its timers).
fn complete_rtl(world: &SharedWorld, core: &RtlHandle, h: &Host, n: usize) -> Result<Vec<Wc>, Error> {
    let (mut got, mut idle) = (Vec::new(), 0);
    while got.len() < n {
        let frames = run_external(world, TURN_PS);
        let busy = !frames.is_empty();
        let (_, settled) = rtl_turn(world, core, frames, TURN_CYCLES, |_| {});
        if !settled {
            return Err(format!("the core did not settle within {TURN_CYCLES} cycles").into());
        }
        let wcs = h.cq.poll(n - got.len())?;
        idle = if busy || !wcs.is_empty() { 0 } else { idle + 1 };
        if idle >= IDLE_TURNS {
            return Err(format!("only {} of {n} completions arrived", got.len()).into());
        }
        if !busy {
            core.run(1024);
        }
        got.extend(wcs);
    }
    Ok(got)
}
/// Runs the demo on two simulated NICs, or on the two NICs `devices` names (two ferrite NICs in PCIe slots,
/// cabled to each other).
pub fn run(backend: Backend, pcap: Option<&Path>, devices: &[DeviceSpec]) -> Result<bool, Error> {
    if backend == Backend::Rtl {
        if pcap.is_some() || !devices.is_empty() {
            return Err("--backend rtl runs the Verilated core beside a model NIC: no --pcap, no --device".into());
        }
        // Host A, the requester, is the core; host B a model NIC in a world with a port for it.
        let world = shared(World::attached(driver::pair::nic_config(), LinkConfig::default(), 1));
        let b = open_host(&world, 0, 1, 1 << 20, QpCap::default(), false)?;
        let rtl = RtlBackend::with_lockstep(16, hdl::Width::W8);
        let core = rtl.handle();
        let a = open_host_on(Box::new(rtl), 1, 1, 1 << 20, QpCap::default(), false)?;
        let wait = |h: &Host, n: usize| complete_rtl(&world, &core, h, n);
        let title = "the Verilated core (requester, the model following it) and a golden-model NIC, PMTU 1024 \
                     (latency in the core's cycles at 8 ns; the model's turns not counted)";
        let all = operations(&a, &b, &wait, title)?;
        let r = core.lockstep_report().ok_or("the core runs without its follower")?;
        println!("lockstep: {r}");
        if let Some(first) = &r.first {
            println!("first mismatch: {first}");
        }
        return Ok(all && r.mismatches == 0);
    }
    let world = shared(World::pair(NicConfig::default(), LinkConfig::default(), 1));
    let (a, b) = match devices {
        [] | [DeviceSpec::Model, DeviceSpec::Model] => {
            if let Some(p) = pcap {
                driver::lock_world(&world).tap(p, &[0, 1])?;
            }
            (
                open_host(&world, 0, 1, 1 << 20, QpCap::default(), false)?,
                open_host(&world, 1, 1, 1 << 20, QpCap::default(), false)?,
            )
        }
        [DeviceSpec::Vfio(x), DeviceSpec::Vfio(y)] if pcap.is_none() => (
            open_host_on(DeviceSpec::open_vfio(x)?, 0, 1, 1 << 20, QpCap::default(), false)?,
            open_host_on(DeviceSpec::open_vfio(y)?, 1, 1, 1 << 20, QpCap::default(), false)?,
        ),
        _ => return Err("--device twice, both vfio:BDF (two NICs cabled together), and no --pcap; or none".into()),
    };
    let wait = |h: &Host, n: usize| complete(h, n);
    operations(&a, &b, &wait, "two golden-model NICs, 100 Gb/s link, 1 us delay, PMTU 1024")
}

/// How the demo waits for `n` completions of a host.
type Wait<'a> = &'a dyn Fn(&Host, usize) -> Result<Vec<Wc>, Error>;

/// The demo's operations from `a` to `b`, each waited for with `wait`, and its table under `title`.
fn operations(a: &Host, b: &Host, wait: Wait<'_>, title: &str) -> Result<bool, Error> {
    let complete = wait;
    connect(a, 0, 0x1000, b, 0, 0x2000, &ConnectOpts::default())?;
    let now = || a.ctx.backend().now_ns();
    let mut rows = Vec::new();

    // SEND 4000 B (four packets at PMTU 1024) into a posted receive.
    let data = pattern(4000, 1);
    a.buf.write(0, &data)?;
    b.qps[0].post_recv(&RecvWr { wr_id: 1, sg_list: vec![sge(b, 0, 8192)] })?;
    let t = now();
    a.qps[0].post_send(&SendWr {
        wr_id: 1,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![sge(a, 0, 4000)],
        ..Default::default()
    })?;
    let wc = complete(a, 1)?[0];
    let rc = complete(b, 1)?[0];
    let ok = rc.byte_len == 4000 && b.buf.read(0, 4000)? == data;
    rows.push(Row { op: "SEND", bytes: 4000, status: wc.status, ok, latency_ns: now() - t });

    // WRITE 64 KiB.
    let data = pattern(65536, 2);
    a.buf.write(0x10000, &data)?;
    let t = now();
    a.qps[0].post_send(&SendWr {
        wr_id: 2,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![sge(a, 0x10000, 65536)],
        remote_addr: b.mr.addr + 0x20000,
        rkey: b.mr.rkey,
        ..Default::default()
    })?;
    let wc = complete(a, 1)?[0];
    rows.push(Row {
        op: "RDMA_WRITE",
        bytes: 65536,
        status: wc.status,
        ok: b.buf.read(0x20000, 65536)? == data,
        latency_ns: now() - t,
    });

    // READ 64 KiB back.
    let t = now();
    a.qps[0].post_send(&SendWr {
        wr_id: 3,
        opcode: Some(SendOp::RdmaRead),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![sge(a, 0x40000, 65536)],
        remote_addr: b.mr.addr + 0x20000,
        rkey: b.mr.rkey,
        ..Default::default()
    })?;
    let wc = complete(a, 1)?[0];
    rows.push(Row {
        op: "RDMA_READ",
        bytes: 65536,
        status: wc.status,
        ok: a.buf.read(0x40000, 65536)? == data,
        latency_ns: now() - t,
    });

    // Atomics on a remote counter.
    b.buf.write(0x80000, &40u64.to_le_bytes())?;
    let atomic = |id: u64, op: SendOp, compare_add: u64, swap: u64| SendWr {
        wr_id: id,
        opcode: Some(op),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![sge(a, 0x90000, 8)],
        remote_addr: b.mr.addr + 0x80000,
        rkey: b.mr.rkey,
        compare_add,
        swap,
        ..Default::default()
    };
    let t = now();
    a.qps[0].post_send(&atomic(4, SendOp::AtomicFetchAdd, 2, 0))?;
    let wc = complete(a, 1)?[0];
    let ok = a.buf.read(0x90000, 8)? == 40u64.to_le_bytes() && b.buf.read(0x80000, 8)? == 42u64.to_le_bytes();
    rows.push(Row { op: "ATOMIC_FETCH_ADD", bytes: 8, status: wc.status, ok, latency_ns: now() - t });
    let t = now();
    a.qps[0].post_send(&atomic(5, SendOp::AtomicCmpSwp, 42, 7))?;
    let wc = complete(a, 1)?[0];
    let ok = a.buf.read(0x90000, 8)? == 42u64.to_le_bytes() && b.buf.read(0x80000, 8)? == 7u64.to_le_bytes();
    rows.push(Row { op: "ATOMIC_CMP_AND_SWP", bytes: 8, status: wc.status, ok, latency_ns: now() - t });

    println!("ferrite demo: {title}");
    println!("{:<20} {:>8} {:>10} {:>9} {:>12}", "operation", "bytes", "status", "data", "latency_ns");
    for r in &rows {
        println!(
            "{:<20} {:>8} {:>10} {:>9} {:>12}",
            r.op,
            r.bytes,
            format!("{:?}", r.status),
            if r.ok { "ok" } else { "MISMATCH" },
            r.latency_ns
        );
    }
    let all = rows.iter().all(|r| r.ok && r.status == WcStatus::Success);
    println!("{}", if all { "all operations completed and every byte matched" } else { "FAILED" });
    Ok(all)
}
