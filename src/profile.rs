//! `ferrite profile`: a hardware profile's limits, the bits of QP context it keeps, and the block RAM its
//! tables take (`wire::contract::qpc`).

use crate::Error;
use clap::{Args, ValueEnum};
use serde::Serialize;
use wire::contract::profile::Profile;
use wire::contract::qpc;
use wire::layout::Bram;

/// A hardware profile by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum ProfileName {
    /// 256 QPs, contexts in at most 72 DP16KD of the first target board (LFE5U-45F).
    #[default]
    Board,
    /// 16K QPs, a 100G-class part.
    Large,
}

impl ProfileName {
    pub fn profile(self) -> Profile {
        match self {
            ProfileName::Board => Profile::board(),
            ProfileName::Large => Profile::large(),
        }
    }
}

#[derive(Args, Debug, Clone)]
pub struct ProfileArgs {
    /// Which profile (default: both).
    #[arg(value_enum)]
    pub name: Option<ProfileName>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct TableReport {
    table: &'static str,
    depth: u64,
    width: u32,
    rows_per_entry: u64,
    bits: u64,
    dp16kd: u64,
    ramb36: u64,
    uram288: u64,
}

#[derive(Serialize)]
struct Report {
    profile: &'static str,
    max_qp: u32,
    max_cq: u32,
    max_mr: u32,
    max_pd: u32,
    max_sge: u32,
    max_inline: u32,
    max_qp_rd_atom: u32,
    max_qp_init_rd_atom: u32,
    wqe_window: u32,
    resp_queue: u32,
    ctrl_queue: u32,
    max_log_ring: u8,
    bits_per_qp: u64,
    tables: Vec<TableReport>,
    dp16kd: u64,
    ramb36: u64,
    uram288: u64,
}

fn report(p: &Profile) -> Report {
    let tables = qpc::tables(p)
        .into_iter()
        .map(|t| TableReport {
            table: t.layout.name,
            depth: t.depth,
            width: t.layout.width(),
            rows_per_entry: t.rows,
            bits: t.bits(),
            dp16kd: t.blocks(Bram::Dp16kd),
            ramb36: t.blocks(Bram::Ramb36),
            uram288: t.blocks(Bram::Uram288),
        })
        .collect();
    Report {
        profile: p.name,
        max_qp: p.max_qp,
        max_cq: p.max_cq,
        max_mr: p.max_mr,
        max_pd: p.max_pd,
        max_sge: p.max_sge,
        max_inline: p.max_inline,
        max_qp_rd_atom: p.max_qp_rd_atom,
        max_qp_init_rd_atom: p.max_qp_init_rd_atom,
        wqe_window: p.wqe_window,
        resp_queue: p.resp_queue,
        ctrl_queue: p.ctrl_queue,
        max_log_ring: p.max_log_ring,
        bits_per_qp: qpc::bits_per_qp(p),
        tables,
        dp16kd: qpc::blocks(p, Bram::Dp16kd),
        ramb36: qpc::blocks(p, Bram::Ramb36),
        uram288: qpc::blocks(p, Bram::Uram288),
    }
}

pub fn run(args: &ProfileArgs) -> Result<bool, Error> {
    let names = match args.name {
        Some(n) => vec![n],
        None => vec![ProfileName::Board, ProfileName::Large],
    };
    let reports: Vec<Report> = names.iter().map(|n| report(&n.profile())).collect();
    if args.json {
        match reports.as_slice() {
            [one] => println!("{}", serde_json::to_string(one)?),
            all => println!("{}", serde_json::to_string(all)?),
        }
        return Ok(true);
    }
    for r in &reports {
        println!("profile {}", r.profile);
        println!(
            "  QPs {}  CQs {}  MRs {}  PDs {}  SGEs {}  inline {} B  max_qp_rd_atom {}  max_qp_init_rd_atom {}",
            r.max_qp, r.max_cq, r.max_mr, r.max_pd, r.max_sge, r.max_inline, r.max_qp_rd_atom, r.max_qp_init_rd_atom
        );
        println!(
            "  WQE window {}  response queue {}  control queue {}  largest ring 2^{}",
            r.wqe_window, r.resp_queue, r.ctrl_queue, r.max_log_ring
        );
        println!("  QP context: {} bits per QP", r.bits_per_qp);
        println!(
            "  {:16} {:>8} {:>6} {:>5} {:>11} {:>7} {:>7} {:>8}",
            "table", "depth", "width", "rows", "bits", "DP16KD", "RAMB36", "URAM288"
        );
        for t in &r.tables {
            println!(
                "  {:16} {:>8} {:>6} {:>5} {:>11} {:>7} {:>7} {:>8}",
                t.table, t.depth, t.width, t.rows_per_entry, t.bits, t.dp16kd, t.ramb36, t.uram288
            );
        }
        println!(
            "  {:16} {:>8} {:>6} {:>5} {:>11} {:>7} {:>7} {:>8}",
            "total", "", "", "", "", r.dp16kd, r.ramb36, r.uram288
        );
    }
    Ok(true)
}
