//! `ferrite interop rxe`: ferrite against Linux soft-RoCE in a QEMU guest (`testbench::interop`).
//! `ferrite interop vfio`: the driver's VFIO layer against the kernel's VFIO in a QEMU guest with an
//! emulated IOMMU (`testbench::interop::vfio`); `ferrite vfio-check` is its half inside the guest.

use crate::Error;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct InteropArgs {
    /// The peer: `rxe` (Linux soft-RoCE) or `vfio` (the kernel's VFIO with an emulated IOMMU).
    pub peer: String,
    /// ferrite's NIC: the golden model, or the Verilated 8-byte core in lockstep with it (`rtl`: the cases
    /// without loss, each run failing on a lockstep mismatch).
    #[arg(long, value_enum, default_value = "model")]
    pub backend: crate::Backend,
    /// The RTL core's datapath width in bytes (with `--backend rtl`).
    #[arg(long, default_value_t = 8)]
    pub width: u32,
    /// Loss on ferrite's side in the lossy half of the cases.
    #[arg(long, default_value_t = 0.01)]
    pub loss: f64,
    /// Where the guest is built and kept between runs.
    #[arg(long, default_value = "target/interop/guest")]
    pub cache: PathBuf,
    /// Where logs and pcaps go (default: target/interop/run, or target/interop/vfio).
    #[arg(long)]
    pub work: Option<PathBuf>,
    /// Run only the cases whose names contain this, or one of several separated by commas (the guest's
    /// ping runs in every boot).
    #[arg(long)]
    pub only: Option<String>,
    /// The hardware profile of ferrite's NIC.
    #[arg(long, value_enum, default_value = "board")]
    pub profile: crate::profile::ProfileName,
    /// The first guest of each role says its transmit queue stopped in the case of this name (its kernel log
    /// gets the watchdog's line): checks that a fresh guest runs that case again and the rest.
    #[arg(long, value_name = "CASE")]
    pub stage_stall: Option<String>,
    /// Seconds the run may take: once they are spent, the cases left fail as not run.
    #[arg(long, value_name = "SECS")]
    pub budget: Option<u64>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &InteropArgs) -> Result<bool, Error> {
    match a.peer.as_str() {
        "rxe" => {}
        "vfio" if a.backend == crate::Backend::Rtl => {
            return Err("interop vfio checks the driver's VFIO layer: it has no backend to choose".into())
        }
        "vfio" => return vfio(a),
        p => return Err(format!("unknown peer {p}: rxe or vfio").into()),
    }
    let o = testbench::interop::Options {
        ferrite: std::env::current_exe()?,
        backend: match (a.backend, a.width) {
            (crate::Backend::Model, 8) => "model".into(),
            (crate::Backend::Rtl, 8) => "rtl".into(),
            (crate::Backend::Rtl, 64) => "rtl:64".into(),
            (_, w) => return Err(format!("--width {w}: 8 or 64, and 64 only with --backend rtl").into()),
        },
        loss: a.loss,
        cache: std::path::absolute(&a.cache)?,
        work: std::path::absolute(a.work.clone().unwrap_or_else(|| "target/interop/run".into()))?,
        only: a.only.clone(),
        profile: a.profile.profile().name.into(),
        stage_stall: a.stage_stall.clone(),
        budget: a.budget.map(std::time::Duration::from_secs),
    };
    // Each case as it ends, on stderr: a run takes minutes.
    let results = testbench::interop::rxe(&o, |r| {
        eprintln!("interop rxe: {} ({}, ferrite the {}): {}", r.name, r.backend, r.role, outcome(r))
    })?;
    let pass = results.iter().all(|r| r.pass);
    if a.json {
        println!("{}", serde_json::to_string(&results)?);
    } else {
        println!("{:<40} {:<8} {:<6} result", "case", "backend", "ferrite");
        for r in &results {
            println!("{:<40} {:<8} {:<6} {}", r.name, r.backend, r.role, outcome(r));
            if !r.pass {
                println!("    {}", r.detail.replace('\n', "\n    "));
            }
        }
        let n = results.iter().filter(|r| r.pass).count();
        println!("{n} of {} cases passed", results.len());
    }
    Ok(pass)
}

/// A case's outcome in a word: pass, FAIL, or not run (a stuck last guest or a spent budget).
fn outcome(r: &testbench::interop::CaseResult) -> &'static str {
    match (r.pass, r.detail.starts_with("not run")) {
        (true, _) => "pass",
        (false, true) => "not run",
        (false, false) => "FAIL",
    }
}

fn vfio(a: &InteropArgs) -> Result<bool, Error> {
    let o = testbench::interop::vfio::Options {
        ferrite: std::env::current_exe()?,
        cache: std::path::absolute(&a.cache)?,
        work: std::path::absolute(a.work.clone().unwrap_or_else(|| "target/interop/vfio".into()))?,
    };
    let checks = testbench::interop::vfio::run(&o)?;
    if a.json {
        println!("{}", serde_json::to_string(&checks)?);
    } else {
        for c in &checks {
            println!("{:<32} {}  {}", c.name, if c.pass { "pass" } else { "FAIL" }, c.detail.replace('\n', "\n    "));
        }
        let n = checks.iter().filter(|c| c.pass).count();
        println!("{n} of {} checks passed", checks.len());
    }
    Ok(checks.iter().all(|c| c.pass))
}

/// `ferrite vfio-check`: the VFIO checks, run inside the guest; prints them on one marked line.
#[derive(Args, Debug, Clone)]
pub struct VfioCheckArgs {
    /// The edu function bound to vfio-pci.
    #[arg(long)]
    pub edu: String,
    /// A function bound to no driver.
    #[arg(long)]
    pub unbound: Option<String>,
    /// A function bound to vfio-pci in a group that a host driver shares.
    #[arg(long)]
    pub non_viable: Option<String>,
    /// This boot has no IOMMU.
    #[arg(long)]
    pub no_iommu: bool,
    /// This run is by a user without access to the group's device node.
    #[arg(long)]
    pub unprivileged: bool,
}

pub fn vfio_check(a: &VfioCheckArgs) -> Result<bool, Error> {
    let checks = testbench::interop::vfio::guest_checks(&testbench::interop::vfio::GuestArgs {
        edu: a.edu.clone(),
        unbound: a.unbound.clone(),
        non_viable: a.non_viable.clone(),
        no_iommu: a.no_iommu,
        unprivileged: a.unprivileged,
    });
    println!("{}{}", testbench::interop::vfio::MARK, serde_json::to_string(&checks)?);
    Ok(checks.iter().all(|c| c.pass))
}
