//! `ferrite incast`: N senders WRITE into one receiver through the ECN-marking switch; DCQCN shares the
//! bottleneck. Prints per-sender rates over time, Jain's fairness index and the peak queue.

use crate::Error;
use clap::Args;
use driver::pair::{connect, open_host, Host};
use driver::*;
use model::net::{EcnConfig, LinkConfig, World};
use model::NicConfig;
use serde::Serialize;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct IncastArgs {
    #[arg(long, default_value_t = 4)]
    pub senders: usize,
    /// Simulated duration in microseconds.
    #[arg(long, default_value_t = 20_000)]
    pub duration_us: u64,
    /// Sampling interval in microseconds.
    #[arg(long, default_value_t = 500)]
    pub sample_us: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

#[derive(Serialize, Debug)]
pub struct IncastReport {
    pub senders: usize,
    pub sample_us: u64,
    /// Per sample: time (us) and each sender's goodput (Gb/s) in that interval.
    pub samples: Vec<(f64, Vec<f64>)>,
    /// Goodput of each sender over the second half (Gb/s).
    pub steady_gbps: Vec<f64>,
    pub jain_index: f64,
    pub peak_queue_bytes: u64,
    pub cnps: u64,
    pub data_ok: bool,
}

const MSG: u32 = 65536;
const DEPTH: u32 = 8;

/// Jain's fairness index of `x`: 1 when all equal, 1/n when one takes everything.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let q: f64 = x.iter().map(|v| v * v).sum();
    if q == 0.0 {
        0.0
    } else {
        s * s / (x.len() as f64 * q)
    }
}

pub fn measure(args: &IncastArgs) -> Result<IncastReport, Error> {
    if args.senders == 0 || args.sample_us == 0 || args.duration_us < 2 * args.sample_us {
        return Err("need --senders >= 1 and --duration-us at least two samples".into());
    }
    let n = args.senders + 1;
    let world = shared(World::star(n, NicConfig::default(), LinkConfig::default(), EcnConfig::default(), args.seed));
    let cap = QpCap { max_send_wr: DEPTH, max_recv_wr: DEPTH, ..Default::default() };
    let rx = open_host(&world, 0, args.senders, MSG as usize * args.senders, cap, false)?;
    let tx: Vec<Host> = (1..n).map(|i| open_host(&world, i, 1, MSG as usize, cap, false)).collect::<Result<_, _>>()?;
    for (i, h) in tx.iter().enumerate() {
        connect(h, 0, 1, &rx, i, 2, &ConnectOpts::default())?;
        h.buf.write(0, &vec![i as u8 + 1; MSG as usize])?;
    }
    let wr = |h: &Host, i: usize, id: u64| SendWr {
        wr_id: id,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![Sge { addr: h.mr.addr, length: MSG, lkey: h.mr.lkey }],
        remote_addr: rx.mr.addr + (i as u64) * u64::from(MSG),
        rkey: rx.mr.rkey,
        ..Default::default()
    };
    let mut posted = vec![0u64; args.senders];
    let mut done = vec![0u64; args.senders];
    let mut last = vec![0u64; args.senders];
    let mut samples = Vec::new();
    let mut errors = 0;
    let t0 = driver::lock_world(&world).now;
    let step_ps = args.sample_us * 1_000_000;
    let end = t0 + args.duration_us * 1_000_000;
    let mut next_sample = t0 + step_ps;
    while driver::lock_world(&world).now < end {
        for (i, h) in tx.iter().enumerate() {
            while posted[i] - done[i] < u64::from(DEPTH) {
                h.qps[0].post_send(&wr(h, i, posted[i]))?;
                posted[i] += 1;
            }
            for wc in h.cq.poll(16)? {
                done[i] += 1;
                if wc.status != WcStatus::Success {
                    errors += 1;
                }
            }
        }
        let now = driver::lock_world(&world).now;
        if now >= next_sample {
            let rates: Vec<f64> = (0..args.senders)
                .map(|i| (done[i] - last[i]) as f64 * f64::from(MSG) * 8.0 / (args.sample_us as f64 * 1000.0))
                .collect();
            last.clone_from(&done);
            samples.push(((next_sample - t0) as f64 / 1e6, rates));
            next_sample += step_ps;
        }
        if !driver::lock_world(&world).step() {
            break;
        }
    }
    let half = samples.len() / 2;
    let steady: Vec<f64> = (0..args.senders)
        .map(|i| samples[half..].iter().map(|(_, r)| r[i]).sum::<f64>() / (samples.len() - half).max(1) as f64)
        .collect();
    let data_ok = errors == 0
        && tx.iter().enumerate().all(|(i, _)| {
            rx.buf.read(i * MSG as usize, MSG as usize).map(|v| v.iter().all(|&b| b == i as u8 + 1)).unwrap_or(false)
        });
    let w = driver::lock_world(&world);
    let cnps = (0..n).map(|i| w.nodes[i].nic.counter(wire::contract::regs::Counter::cnps_sent)).sum();
    Ok(IncastReport {
        senders: args.senders,
        sample_us: args.sample_us,
        jain_index: jain(&steady),
        steady_gbps: steady,
        samples,
        peak_queue_bytes: w.peak_queue_bytes(),
        cnps,
        data_ok,
    })
}

fn plot(path: &std::path::Path, r: &IncastReport) -> Result<(), Error> {
    use plotters::prelude::*;
    let root = SVGBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let tmax = r.samples.last().map_or(1.0, |s| s.0);
    let ymax = r.samples.iter().flat_map(|s| s.1.iter().copied()).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("incast: {} senders, DCQCN, Jain {:.3}", r.senders, r.jain_index), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..tmax, 0.0..ymax)?;
    chart.configure_mesh().x_desc("time (us)").y_desc("goodput (Gb/s)").draw()?;
    for i in 0..r.senders {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(r.samples.iter().map(|(t, v)| (*t, v[i])), color))?
            .label(format!("sender {}", i + 1))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart.configure_series_labels().border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

pub fn run(args: &IncastArgs) -> Result<bool, Error> {
    let r = measure(args)?;
    if let Some(p) = &args.plot {
        plot(p, &r)?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        print!("{:>10}", "time_us");
        for i in 0..r.senders {
            print!(" {:>9}", format!("s{}_gbps", i + 1));
        }
        println!();
        for (t, v) in &r.samples {
            print!("{t:>10.0}");
            for x in v {
                print!(" {x:>9.2}");
            }
            println!();
        }
        println!(
            "steady-state goodput (Gb/s): {:?}",
            r.steady_gbps.iter().map(|x| (x * 100.0).round() / 100.0).collect::<Vec<_>>()
        );
        println!("Jain's fairness index: {:.4}", r.jain_index);
        println!("peak switch queue: {} bytes", r.peak_queue_bytes);
        println!("CNPs sent: {}   data: {}", r.cnps, if r.data_ok { "ok" } else { "MISMATCH" });
    }
    Ok(r.data_ok)
}
