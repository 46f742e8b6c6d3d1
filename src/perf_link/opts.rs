//! perftest's own options on `ferrite perf <op> --link`, with perftest's names and meanings, and the
//! checks that refuse what ferrite cannot honour before the exchange starts (`Plan::new`).

use crate::perf::{Op, PerfArgs};
use clap::{Args, ValueEnum};
use serde::Serialize;

/// perftest's largest `-a` size (`MAX_SIZE`): the sizes run are 2 B to 8 MiB, doubling.
pub const MAX_SIZE: u32 = 8 << 20;
/// perftest's send queue depth for bandwidth (`DEF_TX_BW`) and its receive depth for SEND (`DEF_RX_SEND`).
pub const DEF_TX_BW: u32 = 128;
pub const DEF_RX_SEND: u32 = 512;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
pub enum AtomicType {
    #[value(name = "FETCH_AND_ADD")]
    #[serde(rename = "FETCH_AND_ADD")]
    FetchAndAdd,
    #[value(name = "CMP_AND_SWAP")]
    #[serde(rename = "CMP_AND_SWAP")]
    CmpAndSwap,
}

/// The options of perftest's tools that `--link` takes (perftest's short and long names).
#[derive(Args, Debug, Clone, Default)]
pub struct PerftestArgs {
    /// With `--link`: every size from 2 B to 8 MiB, doubling (buffers sized for 8 MiB, as perftest's).
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// With `--link`: run for this many seconds instead of `-n` iterations (perftest's first and last quarter
    /// are a warm-up and a cool-down, left out of the figures).
    #[arg(short = 'D', long = "duration")]
    pub duration: Option<u32>,
    /// With `--link`: perftest's run until stopped; refused (the peer is released), as ferrite runs a test
    /// that ends: use `-D`.
    #[arg(long = "run_infinitely")]
    pub run_infinitely: bool,
    /// With `--link`: READs or atomics outstanding at once (`max_rd_atomic`), at most the device's and the
    /// peer's responder's (`max_dest_rd_atomic`); default the device's most.
    #[arg(short = 'o', long = "outs")]
    pub outs: Option<u32>,
    /// With `--link`, atomic only: the atomic verb.
    #[arg(short = 'A', long = "atomic_type", value_enum)]
    pub atomic_type: Option<AtomicType>,
    /// With `--link`: bidirectional, both sides run the test at once (bandwidth tools).
    #[arg(short = 'b', long = "bidirectional")]
    pub bidirectional: bool,
    /// With `--link`: sleep on completion events (`ibv_req_notify_cq`, `ibv_get_cq_event`) instead of
    /// polling.
    #[arg(short = 'e', long = "events")]
    pub events: bool,
    /// With `--link`: send queue depth (default 128 for bandwidth, 1 for latency, as perftest's).
    #[arg(short = 't', long = "tx-depth")]
    pub tx_depth: Option<u32>,
    /// With `--link`, SEND only: receive queue depth (default 512, as perftest's).
    #[arg(short = 'r', long = "rx-depth")]
    pub rx_depth: Option<u32>,
    /// With `--link`: bandwidth in Gb/s (10^9 bits) instead of MB/s (2^20 bytes).
    #[arg(long = "report_gbits")]
    pub report_gbits: bool,
    /// With `--link`: accepted as perftest's `-F` (do not fail on CPU frequency readings); ferrite's clock
    /// is the system's monotonic one, so there is nothing to check.
    #[arg(short = 'F', long = "CPU-freq")]
    pub cpu_freq: bool,
    /// With `--link`: fail the run if any frame from the peer had a bad ICRC (otherwise they are dropped,
    /// as the NIC drops them, and counted in the report).
    #[arg(long)]
    pub strict_icrc: bool,
}

impl PerftestArgs {
    /// Whether any option that means something only on a link was given.
    pub fn any(&self) -> bool {
        let PerftestArgs {
            all,
            duration,
            run_infinitely,
            outs,
            atomic_type,
            bidirectional,
            events,
            tx_depth,
            rx_depth,
            report_gbits,
            cpu_freq,
            strict_icrc,
        } = self;
        *all || duration.is_some()
            || *run_infinitely
            || outs.is_some()
            || atomic_type.is_some()
            || *bidirectional
            || *events
            || tx_depth.is_some()
            || rx_depth.is_some()
            || *report_gbits
            || *cpu_freq
            || *strict_icrc
    }
}

/// How the run goes: by count, or by time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Length {
    /// Messages per QP.
    Iters(u32),
    /// perftest's `-D`: seconds in all, and the warm-up and cool-down margin (a quarter of it).
    Duration { secs: u32, margin: u32 },
}

/// The run that was asked for, checked: what `run` follows.
#[derive(Debug, Clone)]
pub struct Plan {
    pub op: Op,
    pub qps: u32,
    /// The sizes run, in order (one, or `-a`'s 23).
    pub sizes: Vec<u32>,
    /// The largest of `sizes`: what the buffers are sized for.
    pub max_size: u32,
    pub length: Length,
    pub atomic: AtomicType,
    pub duplex: bool,
    pub events: bool,
    pub tx_depth: u32,
    pub rx_depth: u32,
    /// `-o`, if given.
    pub outs: Option<u32>,
    pub gbits: bool,
    pub strict_icrc: bool,
}

/// Why the run cannot go as asked: said before the exchange starts.
pub type Refusal = String;

impl Plan {
    pub fn new(a: &PerfArgs) -> Result<Plan, Refusal> {
        let p = &a.perftest;
        let op = a.op;
        let bw = !op.is_latency();
        if p.run_infinitely {
            return Err("--run_infinitely is not supported by ferrite, which runs tests that end: use -D SECS".into());
        }
        if a.qps == 0 {
            return Err("-q must be at least 1".into());
        }
        if a.qps > 1 && !bw {
            return Err(format!("-q {}: perftest's latency tools measure one QP", a.qps));
        }
        if p.atomic_type.is_some() && op != Op::Atomic {
            return Err("-A is for the atomic tool (ib_atomic_bw)".into());
        }
        if p.outs.is_some() && !matches!(op, Op::Read | Op::ReadLat | Op::Atomic) {
            return Err("-o is for the tools that READ or use atomics".into());
        }
        if p.bidirectional && !bw {
            return Err("-b is for the bandwidth tools".into());
        }
        if p.bidirectional && op == Op::Send && p.events {
            return Err("-b with SEND polls both queues: -e does not go with it here".into());
        }
        if p.rx_depth.is_some() && !matches!(op, Op::Send | Op::SendLat) {
            return Err("-r is the receive queue's depth: for the SEND tools".into());
        }
        if p.duration.is_some() && a.iters.is_some() {
            return Err("-D and -n both set the run's length: give one".into());
        }
        if p.duration.is_some() && p.all {
            return Err("duration mode does not run all sizes (-a), as perftest's".into());
        }
        if p.duration.is_some() && p.events {
            return Err("duration mode does not work with events (-e), as perftest's".into());
        }
        if p.all && a.size.is_some() {
            return Err("-a runs every size: -s does not go with it".into());
        }
        let length = match p.duration {
            Some(0) => return Err("-D must be at least 1 second".into()),
            Some(d) => Length::Duration { secs: d, margin: d / 4 },
            None => Length::Iters(a.iters.unwrap_or(if bw { 5000 } else { 1000 })),
        };
        if let Length::Iters(n) = length {
            if n < 2 {
                return Err("-n must be at least 2".into());
            }
        }
        let sizes: Vec<u32> =
            if p.all { (1..).map(|i| 1u32 << i).take_while(|&s| s <= MAX_SIZE).collect() } else { vec![a.size()] };
        let max_size = sizes.iter().copied().max().unwrap_or(0);
        if max_size == 0 || max_size > 1 << 30 {
            return Err("-s must be 1 B to 1 GiB".into());
        }
        if op == Op::Atomic && p.all {
            return Err("atomics are always 8 bytes: -a does not apply".into());
        }
        let tx_depth = p.tx_depth.unwrap_or(if bw { DEF_TX_BW } else { 1 });
        let rx_depth = p.rx_depth.unwrap_or(DEF_RX_SEND);
        if tx_depth == 0 || rx_depth == 0 {
            return Err("-t and -r must be at least 1".into());
        }
        Ok(Plan {
            op,
            qps: a.qps,
            sizes,
            max_size,
            length,
            atomic: p.atomic_type.unwrap_or(AtomicType::FetchAndAdd),
            duplex: p.bidirectional,
            events: p.events,
            tx_depth,
            rx_depth,
            outs: p.outs,
            gbits: p.report_gbits,
            strict_icrc: p.strict_icrc,
        })
    }

    /// What the device cannot take, found once it is open (still before the exchange).
    pub fn fits(&self, dev: &driver::DeviceAttr) -> Result<(), Refusal> {
        let max_wr = 1u32 << dev.max_log_ring.min(31);
        if self.tx_depth > max_wr || self.rx_depth > max_wr {
            return Err(format!("-t and -r are at most {max_wr} on this device"));
        }
        // One send CQ and one receive CQ hold every QP's queue; the host stack's raw QP is one more QP.
        if self.qps.saturating_mul(self.tx_depth) > max_wr || self.qps.saturating_mul(self.rx_depth) > max_wr {
            return Err(format!(
                "-q {} with -t {} / -r {}: one CQ holds at most {max_wr}",
                self.qps, self.tx_depth, self.rx_depth
            ));
        }
        if self.qps + 1 > dev.max_qp {
            return Err(format!("-q {}: this device has {} QPs, one of them the host stack's", self.qps, dev.max_qp));
        }
        if self.outs.is_some_and(|o| o > dev.max_qp_init_rd_atom) {
            return Err(format!("-o is at most {} on this device", dev.max_qp_init_rd_atom));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        perf: PerfArgs,
    }

    fn plan(args: &str) -> Result<Plan, Refusal> {
        let cli = Cli::try_parse_from(format!("perf {args} --link --server").split_whitespace()).expect("parses");
        Plan::new(&cli.perf)
    }

    #[test]
    fn perftest_options_mean_what_they_mean_in_perftest() {
        let p = plan("write -a -q 4 -t 64").unwrap();
        assert_eq!((p.sizes.len(), p.sizes[0], p.max_size, p.qps, p.tx_depth), (23, 2, MAX_SIZE, 4, 64));
        assert_eq!(plan("write").unwrap().length, Length::Iters(5000));
        assert_eq!(plan("read-lat").unwrap().length, Length::Iters(1000));
        assert_eq!(plan("read-lat").unwrap().tx_depth, 1);
        assert_eq!(plan("write -D 8").unwrap().length, Length::Duration { secs: 8, margin: 2 });
        assert_eq!(plan("send-lat -D 3").unwrap().length, Length::Duration { secs: 3, margin: 0 });
        let cas = plan("atomic --atomic_type CMP_AND_SWAP -o 2 -e -b --report_gbits -F").unwrap();
        assert_eq!(
            (cas.atomic, cas.outs, cas.events, cas.duplex, cas.gbits),
            (AtomicType::CmpAndSwap, Some(2), true, true, true)
        );
        assert_eq!(plan("send -r 64").unwrap().rx_depth, 64);
    }

    #[test]
    fn what_ferrite_cannot_honour_is_refused() {
        for args in [
            "write --run_infinitely",
            "write -D 2 -a",
            "write -D 2 -e",
            "write -D 2 -n 10",
            "write -D 0",
            "write -a -s 100",
            "write -A CMP_AND_SWAP",
            "write -o 4",
            "write-lat -q 2",
            "send-lat -b",
            "send -b -e",
            "write -r 8",
            "atomic -a",
            "write -q 0",
            "write -n 1",
            "write -t 0",
        ] {
            assert!(plan(args).is_err(), "{args}");
        }
    }
}
