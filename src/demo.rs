//! `ferrite demo`: two NICs, every operation through the verbs, every byte checked.

use crate::device::DeviceSpec;
use crate::{Backend, Error};
use driver::pair::{connect, open_host, open_host_on, Host};
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

/// Runs the demo on two simulated NICs, or on the two NICs `devices` names (two ferrite NICs in PCIe slots,
/// cabled to each other).
pub fn run(backend: Backend, pcap: Option<&Path>, devices: &[DeviceSpec]) -> Result<bool, Error> {
    if backend == Backend::Rtl {
        return Err(
            "the RTL core has no requester yet: `ferrite perf write --backend rtl` runs it as the responder".into()
        );
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
    connect(&a, 0, 0x1000, &b, 0, 0x2000, &ConnectOpts::default())?;
    let now = || a.ctx.backend().now_ns();
    let mut rows = Vec::new();

    // SEND 4000 B (four packets at PMTU 1024) into a posted receive.
    let data = pattern(4000, 1);
    a.buf.write(0, &data)?;
    b.qps[0].post_recv(&RecvWr { wr_id: 1, sg_list: vec![sge(&b, 0, 8192)] })?;
    let t = now();
    a.qps[0].post_send(&SendWr {
        wr_id: 1,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![sge(&a, 0, 4000)],
        ..Default::default()
    })?;
    let wc = complete(&a, 1)?[0];
    let rc = complete(&b, 1)?[0];
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
        sg_list: vec![sge(&a, 0x10000, 65536)],
        remote_addr: b.mr.addr + 0x20000,
        rkey: b.mr.rkey,
        ..Default::default()
    })?;
    let wc = complete(&a, 1)?[0];
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
        sg_list: vec![sge(&a, 0x40000, 65536)],
        remote_addr: b.mr.addr + 0x20000,
        rkey: b.mr.rkey,
        ..Default::default()
    })?;
    let wc = complete(&a, 1)?[0];
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
        sg_list: vec![sge(&a, 0x90000, 8)],
        remote_addr: b.mr.addr + 0x80000,
        rkey: b.mr.rkey,
        compare_add,
        swap,
        ..Default::default()
    };
    let t = now();
    a.qps[0].post_send(&atomic(4, SendOp::AtomicFetchAdd, 2, 0))?;
    let wc = complete(&a, 1)?[0];
    let ok = a.buf.read(0x90000, 8)? == 40u64.to_le_bytes() && b.buf.read(0x80000, 8)? == 42u64.to_le_bytes();
    rows.push(Row { op: "ATOMIC_FETCH_ADD", bytes: 8, status: wc.status, ok, latency_ns: now() - t });
    let t = now();
    a.qps[0].post_send(&atomic(5, SendOp::AtomicCmpSwp, 42, 7))?;
    let wc = complete(&a, 1)?[0];
    let ok = a.buf.read(0x90000, 8)? == 42u64.to_le_bytes() && b.buf.read(0x80000, 8)? == 7u64.to_le_bytes();
    rows.push(Row { op: "ATOMIC_CMP_AND_SWP", bytes: 8, status: wc.status, ok, latency_ns: now() - t });

    println!("ferrite demo: two golden-model NICs, 100 Gb/s link, 1 us delay, PMTU 1024");
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
