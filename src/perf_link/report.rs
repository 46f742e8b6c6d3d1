//! What a run reports: perftest's columns for people, and JSON for scripts.

use super::lat::{LatDuration, Latency};
use crate::perf::Op;
use driver::oob::perftest::{BwReport, Keys};
use serde::Serialize;

#[derive(Serialize, Debug, Clone, Copy)]
pub struct BwLine {
    pub bytes: u64,
    pub iters: u64,
    /// In `unit` (MB/s of 2^20 bytes, or Gb/s with `--report_gbits`).
    pub bw_peak: f64,
    pub bw_avg: f64,
    pub msg_rate_mpps: f64,
}

impl From<BwReport> for BwLine {
    fn from(r: BwReport) -> Self {
        BwLine { bytes: r.size, iters: r.iters, bw_peak: r.bw_peak, bw_avg: r.bw_avg, msg_rate_mpps: r.msg_rate }
    }
}

impl BwLine {
    pub fn to_report(self) -> BwReport {
        BwReport {
            size: self.bytes,
            iters: self.iters,
            bw_peak: self.bw_peak,
            bw_avg: self.bw_avg,
            msg_rate: self.msg_rate_mpps,
        }
    }
}

/// One size's result line.
#[derive(Serialize, Debug, Clone, Default)]
pub struct SizeResult {
    pub size: u32,
    /// The bandwidth line: ferrite's own, or the client's as the RDMA tools' server reports it.
    pub bw: Option<BwLine>,
    /// With `-b`: the peer's line, which perftest adds to its own.
    pub peer_bw: Option<BwLine>,
    pub lat: Option<Latency>,
    /// With `-D`, the latency tools' report: round trips in the window, their mean latency and rate.
    pub lat_duration: Option<LatDuration>,
    /// What ferrite checked of the data on its side.
    pub checked: String,
}

#[derive(Serialize, Debug)]
pub struct Report {
    pub op: Op,
    pub role: &'static str,
    pub pass: bool,
    pub detail: String,
    pub qps: u32,
    /// ferrite's own `-n` (none with `-D`). A server of the bandwidth tools follows the client's count: its
    /// result lines carry what the client reported or what arrived.
    pub iters: Option<u32>,
    pub duration_s: Option<u32>,
    pub mtu: u32,
    pub peer_version: f64,
    /// `MB/sec` or `Gb/sec`.
    pub unit: &'static str,
    /// Outstanding READs or atomics the requester used (`max_rd_atomic`).
    pub out_reads: u32,
    pub bidirectional: bool,
    /// Completion events taken (`-e`).
    pub cq_events: u64,
    pub results: Vec<SizeResult>,
    pub retransmitted_packets: u64,
    pub local_ack_timeouts: u64,
    pub rx_drop_bad_icrc: u64,
    pub rx_frames: u64,
    pub tx_frames: u64,
    /// With an `rtl` device: the model's verdict on the core.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lockstep: Option<sim::lockstep::Report>,
}

fn tool_name(op: Op) -> &'static str {
    match op {
        Op::Write => "RDMA_Write BW",
        Op::Read => "RDMA_Read BW",
        Op::Send => "Send BW",
        Op::Atomic => "Atomic BW",
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

pub fn print_human(r: &Report, me: &[Keys], rem: &[Keys]) {
    println!("{RESULT_LINE}");
    let dir = if r.bidirectional { "Bidirectional " } else { "" };
    println!("                    {dir}{} Test (ferrite, {})", tool_name(r.op), r.role);
    println!(" Number of qps   : {}\t\tTransport type : IB", r.qps);
    println!(" Connection type : RC\t\tUsing SRQ      : OFF");
    println!(" Mtu             : {}[B]", r.mtu);
    println!(" Link type       : Ethernet");
    if matches!(r.op, Op::Read | Op::ReadLat | Op::Atomic) {
        println!(" Outstand reads  : {}", r.out_reads);
    }
    println!("{RESULT_LINE}");
    for k in me {
        println!("{}", show_keys("local", k));
    }
    for k in rem {
        println!("{}", show_keys("remote", k));
    }
    println!("{RESULT_LINE}");
    let bw_head = || println!(" #bytes     #iterations    BW peak[{u}]    BW average[{u}]   MsgRate[Mpps]", u = r.unit);
    let mut headed = false;
    for line in &r.results {
        if let Some(b) = &line.bw {
            if !headed {
                bw_head();
                headed = true;
            }
            // With -b, perftest prints the sum of both directions.
            let p = line.peer_bw;
            let sum = |mine: f64, theirs: fn(&BwLine) -> f64| mine + p.as_ref().map_or(0.0, theirs);
            println!(
                " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t   {:<7.6}",
                b.bytes,
                b.iters,
                sum(b.bw_peak, |t| t.bw_peak),
                sum(b.bw_avg, |t| t.bw_avg),
                sum(b.msg_rate_mpps, |t| t.msg_rate_mpps)
            );
        }
        if let Some(l) = &line.lat {
            if !headed {
                println!(
                    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    \
                     t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
                );
                headed = true;
            }
            println!(
                " {:<7} {:<10}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}",
                line.size,
                r.iters.unwrap_or(0),
                l.t_min,
                l.t_max,
                l.t_typical,
                l.t_avg,
                l.t_stdev,
                l.p99,
                l.p99_9
            );
        }
        if let Some(d) = &line.lat_duration {
            if !headed {
                println!(" #bytes        #iterations       t_avg[usec]    tps average");
                headed = true;
            }
            println!(" {:<7}       {:<10}        {:<7.2}        {:<7.2}", line.size, d.iters, d.t_avg, d.tps);
        }
    }
    println!("{RESULT_LINE}");
    let checked: Vec<&str> = r.results.iter().map(|l| l.checked.as_str()).filter(|c| !c.is_empty()).collect();
    println!(
        " ferrite: checked {}; {} retransmitted, {} ACK timeouts, {} bad ICRCs of {} frames received",
        if checked.is_empty() { "nothing".to_string() } else { checked.join("; ") },
        r.retransmitted_packets,
        r.local_ack_timeouts,
        r.rx_drop_bad_icrc,
        r.rx_frames
    );
    if let Some(l) = &r.lockstep {
        println!(" lockstep: {l}");
    }
    if !r.pass {
        eprintln!("ferrite perf: {}", r.detail);
    }
}
