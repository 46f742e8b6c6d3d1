//! `ferrite perf <op> --link [--server | PEER]`: one ferrite NIC on a real link against perftest's tool at
//! the other end (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`, `ib_atomic_bw`, `ib_write_lat`,
//! `ib_read_lat`, `ib_send_lat`), RC over one QP. It takes the same steps of perftest's exchange
//! (`driver::oob::perftest`) in the same order as that tool does, runs the same loop on its side, and prints
//! perftest's columns.
//!
//! perftest fills its buffers with random bytes, so what ferrite can check is what stays fixed: every read
//! of the peer's (unchanging) buffer returns the same bytes; fetch-and-adds on one address return
//! consecutive values; the adds the peer's client made sum to its iteration count; `ib_write_lat`'s
//! zeroed buffer arrives zero but for its counter byte; every message has its length. And every frame
//! ferrite received passed `wire`'s parser with a good ICRC.

use crate::perf::{Op, PerfArgs};
use crate::Error;
use driver::oob::perftest::{BwReport, Keys, Role, Session};
use driver::{access, Buffer, ConnectOpts, Cq, Endpoint, Mr, Qp, QpCap, RecvWr, SendWr, Sge, WcStatus};
use serde::Serialize;
use std::time::Instant;
use wire::contract::regs::Counter;
use wire::contract::wqe::send_flags;

/// perftest's page-size "cycle buffer" and cache line on x86-64.
const CYCLE_BUFFER: u32 = 4096;
const CACHE_LINE: u32 = 64;
/// perftest's send queue depth for bandwidth (`DEF_TX_BW`) and its receive depth for SEND (`DEF_RX_SEND`).
const TX_DEPTH: u32 = 128;
const RX_DEPTH: u32 = 512;
/// Memory kept for reads in flight: their landing slots are checked one by one.
const READ_SLOTS_BYTES: u64 = 16 << 20;
/// What perftest leaves out of its latency statistics at the slow end (`LAT_MEASURE_TAIL`).
const LAT_MEASURE_TAIL: usize = 2;

#[derive(Serialize, Debug, Default)]
struct Latency {
    t_min: f64,
    t_max: f64,
    t_typical: f64,
    t_avg: f64,
    t_stdev: f64,
    p99: f64,
    p99_9: f64,
}

#[derive(Serialize, Debug)]
struct Report {
    op: Op,
    role: &'static str,
    pass: bool,
    detail: String,
    size: u32,
    iters: u32,
    mtu: u32,
    peer_version: f64,
    /// The bandwidth line: ferrite's own as client, or the client's as the RDMA tools' server reports it.
    bw: Option<BwLine>,
    lat: Option<Latency>,
    /// What ferrite checked of the data on its side.
    checked: String,
    retransmitted_packets: u64,
    local_ack_timeouts: u64,
    rx_drop_bad_icrc: u64,
    rx_frames: u64,
    tx_frames: u64,
}

#[derive(Serialize, Debug, Clone, Copy)]
struct BwLine {
    bytes: u64,
    iters: u64,
    bw_peak_mbs: f64,
    bw_avg_mbs: f64,
    msg_rate_mpps: f64,
}

impl From<BwReport> for BwLine {
    fn from(r: BwReport) -> Self {
        BwLine {
            bytes: r.size,
            iters: r.iters,
            bw_peak_mbs: r.bw_peak,
            bw_avg_mbs: r.bw_avg,
            msg_rate_mpps: r.msg_rate,
        }
    }
}

/// Everything one run holds on ferrite's side.
struct Rig<'a> {
    op: Op,
    size: u32,
    iters: u32,
    role: Role,
    timeout_ns: u64,
    ctx: &'a driver::Context,
    qp: Qp,
    scq: Cq,
    rcq: Cq,
    buf: Buffer,
    mr: Mr,
    /// perftest's `BUFF_SIZE`: where the peer's RDMA lands, from the buffer's start.
    remote_off: u64,
    /// Slots for reads and atomics in flight, after the two halves.
    slots_off: u64,
    rem: Keys,
}

/// Why a run failed: what ferrite saw, in words.
type Failure = String;

impl Rig<'_> {
    fn deadline(&self) -> u64 {
        self.ctx.backend().now_ns() + self.timeout_ns
    }

    /// Lets the device and the host stack run once; fails past `end`.
    fn tick(&self, s: &mut Session, end: u64, what: &str) -> Result<(), Failure> {
        s.stack.poll();
        if self.ctx.backend().now_ns() > end {
            return Err(format!("timed out waiting for {what}"));
        }
        Ok(())
    }

    fn wr(&self, id: u64, local: u64, len: u32) -> SendWr {
        SendWr {
            wr_id: id,
            opcode: Some(self.op.opcode()),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![Sge { addr: local, length: len, lkey: self.mr.lkey }],
            remote_addr: self.rem.vaddr,
            rkey: self.rem.rkey,
            compare_add: 1,
            ..Default::default()
        }
    }

    fn post_recv(&self, id: u64) -> Result<(), Failure> {
        let sge = Sge { addr: self.buf.addr + self.remote_off, length: self.size, lkey: self.mr.lkey };
        self.qp.post_recv(&RecvWr { wr_id: id, sg_list: vec![sge] }).map_err(|e| format!("post_recv: {e}"))
    }

    /// One completion from `cq`, which must be a success (of `byte_len` `len` for a receive).
    fn one(&self, s: &mut Session, cq: &Cq, what: &str) -> Result<driver::Wc, Failure> {
        let end = self.deadline();
        loop {
            if let Some(wc) = cq.poll(1).map_err(|e| e.to_string())?.pop() {
                if wc.status != WcStatus::Success {
                    return Err(format!("{what} wr {} completed with {:?}", wc.wr_id, wc.status));
                }
                return Ok(wc);
            }
            self.tick(s, end, what)?;
        }
    }

    fn read(&self, off: u64, len: usize) -> Result<Vec<u8>, Failure> {
        self.buf.read(off as usize, len).map_err(|e| e.to_string())
    }

    /// The bandwidth client's loop (`run_iter_bw`): up to the depth in flight, every one signalled.
    /// Returns the report and what was checked.
    fn bw_client(&self, s: &mut Session) -> Result<(BwReport, String), Failure> {
        let size = self.size;
        let depth = match self.op {
            Op::Read => (READ_SLOTS_BYTES / u64::from(size)).clamp(1, u64::from(TX_DEPTH)) as u32,
            _ => TX_DEPTH,
        }
        .min(self.iters);
        let slot = |i: u32| self.buf.addr + self.slots_off + u64::from(i % depth) * u64::from(size.max(8));
        let mut posted_at = Vec::with_capacity(self.iters as usize);
        let mut done_at = Vec::with_capacity(self.iters as usize);
        let (mut posted, mut done) = (0u32, 0u32);
        let mut first_read: Option<Vec<u8>> = None;
        let mut first_fetch: Option<u64> = None;
        let start = Instant::now();
        let mut end = self.deadline();
        while done < self.iters {
            while posted < self.iters && posted - done < depth {
                let local = if matches!(self.op, Op::Read | Op::Atomic) { slot(posted) } else { self.buf.addr };
                self.qp.post_send(&self.wr(u64::from(posted), local, size)).map_err(|e| format!("post_send: {e}"))?;
                posted_at.push(start.elapsed());
                posted += 1;
            }
            let wcs = self.scq.poll(depth as usize).map_err(|e| e.to_string())?;
            if wcs.is_empty() {
                self.tick(s, end, "send completions")?;
                continue;
            }
            end = self.deadline();
            for wc in wcs {
                if wc.status != WcStatus::Success || wc.wr_id != u64::from(done) {
                    return Err(format!("wr {} completed with {:?} (expected wr {done})", wc.wr_id, wc.status));
                }
                match self.op {
                    Op::Read => {
                        let got = self.read(slot(done) - self.buf.addr, size as usize)?;
                        match &first_read {
                            None => first_read = Some(got),
                            Some(f) if *f != got => return Err(format!("read {done} differs from read 0")),
                            Some(_) => {}
                        }
                    }
                    Op::Atomic => {
                        let v = u64::from_le_bytes(
                            self.read(slot(done) - self.buf.addr, 8)?.try_into().unwrap_or_default(),
                        );
                        let want = first_fetch.map(|f| f.wrapping_add(u64::from(done)));
                        if want.is_some_and(|w| w != v) {
                            return Err(format!("fetch-and-add {done} returned {v:#x}, not {:#x}", want.unwrap_or(0)));
                        }
                        first_fetch.get_or_insert(v);
                    }
                    _ => {}
                }
                done_at.push(start.elapsed());
                done += 1;
            }
        }
        let checked = match self.op {
            Op::Read => format!("{} reads of the peer's buffer returned the same {size} bytes", self.iters),
            Op::Atomic => format!("{} fetch-and-adds returned consecutive values", self.iters),
            _ => "completions in order".to_string(),
        };
        Ok((bw_report(size, depth, &posted_at, &done_at), checked))
    }

    /// `run_iter_bw_server` for SEND: receives reposted until `iters` have arrived, each `size` long.
    fn send_bw_server(&self, s: &mut Session, preposted: u32) -> Result<(BwReport, String), Failure> {
        let mut posted = preposted;
        let mut at = Vec::with_capacity(self.iters as usize);
        let start = Instant::now();
        for n in 0..self.iters {
            let wc = self.one(s, &self.rcq, "receive")?;
            if wc.byte_len != self.size {
                return Err(format!("receive {n} held {} bytes, not {}", wc.byte_len, self.size));
            }
            at.push(start.elapsed());
            if posted < self.iters {
                self.post_recv(u64::from(posted))?;
                posted += 1;
            }
        }
        // The receiver's clock starts at its first message, as perftest's server does.
        let first = at.first().copied().unwrap_or_default();
        let posted_at = vec![first; at.len()];
        Ok((bw_report(self.size, TX_DEPTH, &posted_at, &at), format!("{} receives of {} bytes", self.iters, self.size)))
    }

    /// `run_iter_lat_write`: each side writes its counter into the last byte of the other's buffer and
    /// waits for the other's; the server writes first.
    fn write_lat(&self, s: &mut Session) -> Result<(Vec<std::time::Duration>, String), Failure> {
        let size = self.size as u64;
        let poll_at = self.remote_off + size - 1;
        let (mut scnt, mut ccnt, mut rcnt) = (0u32, 0u32, 0u32);
        let mut posted_at = Vec::with_capacity(self.iters as usize);
        let start = Instant::now();
        while scnt < self.iters || ccnt < self.iters || rcnt < self.iters {
            if rcnt < self.iters && !(scnt < 1 && self.role == Role::Server) {
                rcnt += 1;
                let end = self.deadline();
                while self.read(poll_at, 1)?[0] != rcnt as u8 {
                    self.tick(s, end, "the peer's write")?;
                }
            }
            if scnt < self.iters {
                posted_at.push(start.elapsed());
                scnt += 1;
                self.buf.write(size as usize - 1, &[scnt as u8]).map_err(|e| e.to_string())?;
                self.qp.post_send(&self.wr(u64::from(scnt), self.buf.addr, self.size)).map_err(|e| e.to_string())?;
            }
            if ccnt < self.iters {
                self.one(s, &self.scq, "write")?;
                ccnt += 1;
            }
        }
        // perftest zeroes its buffer for this test: all but the counter byte arrive as zeros.
        let got = self.read(self.remote_off, self.size as usize)?;
        if got[..got.len() - 1].iter().any(|&b| b != 0) || got[got.len() - 1] != self.iters as u8 {
            return Err("the peer's last write did not leave zeros and the final counter".into());
        }
        Ok((posted_at, format!("{} counters in order; the final write zero but for its counter", self.iters)))
    }

    /// `run_iter_lat`: one READ at a time, each of the peer's unchanging buffer.
    fn read_lat(&self, s: &mut Session) -> Result<(Vec<std::time::Duration>, String), Failure> {
        let mut posted_at = Vec::with_capacity(self.iters as usize);
        let mut first: Option<Vec<u8>> = None;
        let start = Instant::now();
        for n in 0..self.iters {
            posted_at.push(start.elapsed());
            let local = self.buf.addr + self.slots_off;
            self.qp.post_send(&self.wr(u64::from(n), local, self.size)).map_err(|e| e.to_string())?;
            self.one(s, &self.scq, "read")?;
            let got = self.read(self.slots_off, self.size as usize)?;
            match &first {
                None => first = Some(got),
                Some(f) if *f != got => return Err(format!("read {n} differs from read 0")),
                Some(_) => {}
            }
        }
        Ok((posted_at, format!("{} reads of the peer's buffer returned the same bytes", self.iters)))
    }

    /// `run_iter_lat_send`: the client sends first; each side sends once it has received.
    fn send_lat(&self, s: &mut Session, preposted: u32) -> Result<(Vec<std::time::Duration>, String), Failure> {
        let (mut scnt, mut rcnt, mut rposted, mut unacked) = (0u32, 0u32, preposted, 0u32);
        let mut posted_at = Vec::with_capacity(self.iters as usize);
        let start = Instant::now();
        while scnt < self.iters || rcnt < self.iters {
            if rcnt < self.iters && !(scnt < 1 && self.role == Role::Client) {
                let wc = self.one(s, &self.rcq, "receive")?;
                if wc.byte_len != self.size {
                    return Err(format!("receive {rcnt} held {} bytes, not {}", wc.byte_len, self.size));
                }
                rcnt += 1;
                if rposted < self.iters {
                    self.post_recv(u64::from(rposted))?;
                    rposted += 1;
                }
            }
            if scnt < self.iters {
                while unacked >= TX_DEPTH / 2 {
                    self.one(s, &self.scq, "send")?;
                    unacked -= 1;
                }
                posted_at.push(start.elapsed());
                scnt += 1;
                self.qp.post_send(&self.wr(u64::from(scnt), self.buf.addr, self.size)).map_err(|e| e.to_string())?;
                unacked += 1;
            }
            while unacked > 0 {
                let Some(wc) = self.scq.poll(1).map_err(|e| e.to_string())?.pop() else { break };
                if wc.status != WcStatus::Success {
                    return Err(format!("send wr {} completed with {:?}", wc.wr_id, wc.status));
                }
                unacked -= 1;
            }
        }
        while unacked > 0 {
            self.one(s, &self.scq, "send")?;
            unacked -= 1;
        }
        Ok((posted_at, format!("{} receives of {} bytes", self.iters, self.size)))
    }
}

/// perftest's bandwidth arithmetic: MB/s of 2^20 bytes, average over the first post to the last
/// completion; the peak over the best `window` consecutive completions.
fn bw_report(size: u32, window: u32, posted_at: &[std::time::Duration], done_at: &[std::time::Duration]) -> BwReport {
    let n = done_at.len();
    let mb = |bytes: f64, secs: f64| bytes / secs.max(1e-9) / f64::from(1 << 20);
    let total =
        done_at.last().copied().unwrap_or_default().saturating_sub(posted_at.first().copied().unwrap_or_default());
    let bytes = f64::from(size) * n as f64;
    let w = (window as usize).clamp(1, n.max(1));
    let peak = (w..n)
        .map(|i| mb(f64::from(size) * w as f64, (done_at[i] - done_at[i - w]).as_secs_f64()))
        .fold(mb(bytes, total.as_secs_f64()), f64::max);
    BwReport {
        size: u64::from(size),
        iters: n as u64,
        bw_peak: peak,
        bw_avg: mb(bytes, total.as_secs_f64()),
        msg_rate: n as f64 / total.as_secs_f64().max(1e-9) / 1e6,
    }
}

/// `print_report_lat`: the gaps between consecutive posts, over two for the round-trip tools, sorted, the
/// slowest two left out; in microseconds.
fn latency(op: Op, posted_at: &[std::time::Duration]) -> Latency {
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

fn tool_name(op: Op) -> &'static str {
    match op {
        Op::Write => "RDMA_Write BW",
        Op::Read => "RDMA_Read BW",
        Op::Send => "Send BW",
        Op::Atomic => "Atomic FETCH_AND_ADD BW",
        Op::WriteLat => "RDMA_Write Latency",
        Op::ReadLat => "RDMA_Read Latency",
        Op::SendLat => "Send Latency",
    }
}

fn show_keys(side: &str, k: &Keys) -> String {
    let g: Vec<String> = k.gid.iter().map(|b| format!("{b:02}")).collect();
    format!(
        " {side} address: LID {:#06x} QPN {:#08x} PSN {:#08x} OUT {:#06x} RKey {:#010x} VAddr {:#018x}\n GID: {}",
        k.lid,
        k.qpn,
        k.psn,
        k.out_reads,
        k.rkey,
        k.vaddr,
        g.join(":")
    )
}

const RESULT_LINE: &str = "---------------------------------------------------------------------------------------";

pub fn run(a: &PerfArgs) -> Result<bool, Error> {
    let peer = match (a.server, a.peer) {
        (true, None) => None,
        (false, Some(p)) => Some(p.octets()),
        _ => return Err("--link needs --server or the peer's address".into()),
    };
    let mtu = wire::contract::verbs::mtu_enum(a.pmtu).ok_or("--pmtu is one of 256, 512, 1024, 2048, 4096")?;
    if a.qps != 1 {
        return Err("--link runs one QP, as perftest's tools do by default".into());
    }
    let size = a.size();
    let iters = a.iters.unwrap_or(if a.op.is_latency() { 1000 } else { 5000 });
    if size == 0 || iters < 2 || size > 1 << 30 {
        return Err("--size must be 1 B to 1 GiB and --iters at least 2".into());
    }
    let t = a.timeout * 1_000_000_000;
    let att = a.net.attach(&a.faults)?;
    let mut stack = att.stack()?;
    let ctx = &att.ctx;

    // perftest's tools sleep a second after connecting; nothing here depends on it.
    let mut s = Session::open(&mut stack, peer, a.port, t)?;
    let peer_version = s.versions()?;
    let (cycle, _line) = s.sys_data(CYCLE_BUFFER, CACHE_LINE)?;
    let mtu = s.mtu(mtu)?;

    let buff = u64::from(size).max(u64::from(cycle));
    let slots = match a.op {
        Op::Read => READ_SLOTS_BYTES.max(u64::from(size)),
        Op::ReadLat => u64::from(size),
        Op::Atomic => u64::from(TX_DEPTH) * 8,
        _ => 0,
    };
    let buf = ctx.alloc_buf((2 * buff + slots) as usize)?;
    let remote = match a.op {
        Op::Write | Op::WriteLat => access::REMOTE_WRITE,
        Op::Read | Op::ReadLat => access::REMOTE_READ,
        Op::Atomic => access::REMOTE_ATOMIC,
        Op::Send | Op::SendLat => 0,
    };
    let mr = att.pd.reg_buf(&buf, access::LOCAL_WRITE | remote)?;
    // ferrite's own bytes: zeros for write-lat (as perftest's), a pattern elsewhere; the peer's half zeroed.
    let fill: Vec<u8> = (0..buff).map(|i| if a.op == Op::WriteLat { 0 } else { (i * 7 + 1) as u8 }).collect();
    buf.write(0, &fill)?;
    buf.write(buff as usize, &vec![0; buff as usize])?;
    let scq = ctx.create_cq(2 * TX_DEPTH)?;
    let rcq = ctx.create_cq(RX_DEPTH + 2)?;
    let cap =
        QpCap { max_send_wr: TX_DEPTH, max_recv_wr: RX_DEPTH, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let qp = att.pd.create_qp(&scq, &rcq, cap, false)?;
    let out_reads = match a.op {
        Op::Read | Op::ReadLat | Op::Atomic => ctx.query_device().max_qp_rd_atom.min(255) as u16,
        _ => 1,
    };
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let me = Keys {
        lid: 0,
        out_reads,
        qpn: qp.qpn,
        psn: (nanos ^ std::process::id()).wrapping_mul(2_654_435_761) >> 8,
        rkey: mr.rkey,
        vaddr: mr.addr + buff,
        gid: att.gid,
        srqn: 0,
    };
    let role = s.role;
    let bw_tool = matches!(a.op, Op::Write | Op::Read | Op::Atomic);

    // The tools' steps before the run (write_bw.c, send_bw.c, write_lat.c, read_lat.c, send_lat.c).
    if matches!(a.op, Op::WriteLat | Op::ReadLat) {
        s.keys(&me)?;
    }
    let rem = s.keys(&me)?;
    let ip = wire::ipv6::gid_to_ipv4(&rem.gid)
        .ok_or("the peer's GID is not IPv4-mapped (give its tool -x with its RoCEv2 IPv4 GID's index)")?;
    let mac = s.stack.mac_of(ip).ok_or("the peer's MAC was never heard")?;
    let opts = ConnectOpts {
        path_mtu: mtu,
        max_rd_atomic: (rem.out_reads.max(1) as u8).min(out_reads.max(1) as u8),
        max_dest_rd_atomic: Some(out_reads.max(1) as u8),
        access: remote,
        ..Default::default()
    };
    qp.connect(me.psn, &Endpoint { qpn: rem.qpn, psn: rem.psn, gid: rem.gid, mac }, &opts)?;
    if matches!(a.op, Op::Send | Op::SendLat) {
        s.keys(&me)?;
    }
    s.keys(&me)?; // the addresses printed as "remote"
    if !matches!(a.op, Op::Send | Op::SendLat) {
        s.keys(&me)?; // "an additional handshake is required after moving qp to RTR"
    }
    let rig = Rig {
        op: a.op,
        size,
        iters,
        role,
        timeout_ns: t,
        ctx,
        qp,
        scq,
        rcq,
        buf,
        mr,
        remote_off: buff,
        slots_off: 2 * buff,
        rem,
    };
    let mut preposted = 0;
    if (a.op == Op::Send && role == Role::Server) || a.op == Op::SendLat {
        preposted = iters.min(RX_DEPTH);
        for i in 0..preposted {
            rig.post_recv(u64::from(i)).map_err(Error::from)?;
        }
    }
    if matches!(a.op, Op::Send | Op::SendLat) {
        s.keys(&me)?; // the receives are up
    }

    let mut bw: Option<BwLine> = None;
    let mut lat = None;
    let outcome: Result<String, Failure> = match (a.op, role) {
        (op, Role::Client) if bw_tool || op == Op::Send => rig.bw_client(&mut s).map(|(r, c)| {
            bw = Some(r.into());
            c
        }),
        (Op::Send, Role::Server) => rig.send_bw_server(&mut s, preposted).map(|(r, c)| {
            bw = Some(r.into());
            c
        }),
        (_, Role::Server) if bw_tool => Ok(String::new()),
        (Op::WriteLat, _) => rig.write_lat(&mut s).map(|(p, c)| {
            lat = Some(latency(a.op, &p));
            c
        }),
        (Op::ReadLat, Role::Client) => rig.read_lat(&mut s).map(|(p, c)| {
            lat = Some(latency(a.op, &p));
            c
        }),
        (Op::ReadLat, Role::Server) => Ok(String::new()),
        (Op::SendLat, _) => rig.send_lat(&mut s, preposted).map(|(p, c)| {
            lat = Some(latency(a.op, &p));
            c
        }),
        _ => Err("no loop for this op and role".into()),
    };

    // After the run: the bandwidth tools trade reports (the server prints the client's); then the close.
    let mut failure = outcome.as_ref().err().cloned();
    let mut checked = outcome.unwrap_or_default();
    if failure.is_none() {
        let after: Result<(), Error> = (|| {
            if bw_tool {
                s.keys(&me)?;
                let mine = bw.map(|b| BwReport {
                    size: b.bytes,
                    iters: b.iters,
                    bw_peak: b.bw_peak_mbs,
                    bw_avg: b.bw_avg_mbs,
                    msg_rate: b.msg_rate_mpps,
                });
                let theirs = s.reports(&mine.unwrap_or_default())?;
                if role == Role::Server {
                    bw = Some(theirs.into());
                    checked = server_check(&rig, &theirs)?;
                }
            }
            Ok(())
        })();
        failure = after.err().map(|e| e.to_string());
    }
    match (failure.is_none(), a.op) {
        (true, Op::WriteLat) => s.hang_up(),
        (true, _) => {
            if let Err(e) = s.close(&me) {
                failure = Some(format!("closing the exchange: {e}"));
            }
        }
        (false, _) => s.hang_up(),
    }
    // Let the last ACKs leave before the NIC goes away.
    let linger = ctx.backend().now_ns() + 200_000_000;
    while ctx.backend().now_ns() < linger {
        stack.poll();
    }
    let bad_icrc = ctx.counter(Counter::rx_drop_bad_icrc);
    if failure.is_none() && bad_icrc > 0 {
        failure = Some(format!("{bad_icrc} frames from the peer had a bad ICRC"));
    }
    let rep = Report {
        op: a.op,
        role: if role == Role::Client { "client" } else { "server" },
        pass: failure.is_none(),
        detail: failure.clone().unwrap_or_default(),
        size,
        iters,
        mtu: 128u32 << mtu,
        peer_version,
        bw,
        lat,
        checked,
        retransmitted_packets: ctx.counter(Counter::retransmitted_packets),
        local_ack_timeouts: ctx.counter(Counter::local_ack_timeouts),
        rx_drop_bad_icrc: bad_icrc,
        rx_frames: ctx.counter(Counter::rx_frames),
        tx_frames: ctx.counter(Counter::tx_frames),
    };
    if a.json {
        println!("{}", serde_json::to_string(&rep)?);
    } else {
        print_human(&rep, &me, &rig.rem);
    }
    Ok(rep.pass)
}

/// What the server of WRITE, READ and atomic bandwidth can check once the client has reported: for
/// atomics, that the adds in its buffer sum to the client's iterations (perftest's client cycles its
/// fetch-and-adds over the cache lines of one page).
fn server_check(rig: &Rig, theirs: &BwReport) -> Result<String, Error> {
    if rig.op != Op::Atomic {
        return Ok("nothing: perftest writes random bytes and reads what it cannot see".into());
    }
    let page = rig.read(rig.remote_off, CYCLE_BUFFER as usize).map_err(Error::from)?;
    let sum: u64 =
        page.chunks(CACHE_LINE as usize).map(|c| u64::from_le_bytes(c[..8].try_into().unwrap_or_default())).sum();
    if sum != theirs.iters {
        return Err(format!("the client reported {} fetch-and-adds but {sum} arrived", theirs.iters).into());
    }
    Ok(format!("the {sum} fetch-and-adds the client reported all arrived"))
}

fn print_human(r: &Report, me: &Keys, rem: &Keys) {
    println!("{RESULT_LINE}");
    println!("                    {} Test (ferrite, {})", tool_name(r.op), r.role);
    println!(" Number of qps   : 1\t\tTransport type : IB");
    println!(" Connection type : RC\t\tUsing SRQ      : OFF");
    println!(" Mtu             : {}[B]", r.mtu);
    println!(" Link type       : Ethernet");
    println!("{RESULT_LINE}");
    println!("{}", show_keys("local", me));
    println!("{}", show_keys("remote", rem));
    println!("{RESULT_LINE}");
    if let Some(b) = &r.bw {
        println!(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]");
        println!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t   {:<7.6}",
            b.bytes, b.iters, b.bw_peak_mbs, b.bw_avg_mbs, b.msg_rate_mpps
        );
    }
    if let Some(l) = &r.lat {
        println!(
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   \
             99% percentile[usec]   99.9% percentile[usec] "
        );
        println!(
            " {:<7} {:<10}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}",
            r.size, r.iters, l.t_min, l.t_max, l.t_typical, l.t_avg, l.t_stdev, l.p99, l.p99_9
        );
    }
    println!("{RESULT_LINE}");
    println!(
        " ferrite: checked {}; {} retransmitted, {} ACK timeouts, {} bad ICRCs of {} frames received",
        if r.checked.is_empty() { "nothing" } else { &r.checked },
        r.retransmitted_packets,
        r.local_ack_timeouts,
        r.rx_drop_bad_icrc,
        r.rx_frames
    );
    if !r.pass {
        eprintln!("ferrite perf: {}", r.detail);
    }
}
