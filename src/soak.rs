//! `ferrite soak`: seeded random scenarios over the golden model, checked end to end (`testbench::soak`);
//! with `--backend rtl`, the lossless scenarios on two RTL cores, each in lockstep with its model.

use crate::profile::ProfileName;
use crate::Error;
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use testbench::soak::{Follow, Options};

/// How the soak follows each scenario's decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FollowArg {
    /// Record each NIC's own decisions and replay them into a fresh model: every output identical.
    Exact,
    /// Take the decisions at other legal times and orders, then replay those: invariants hold, none illegal.
    Perturb,
}

#[derive(Args, Debug, Clone)]
pub struct SoakArgs {
    /// How many scenarios (consecutive seeds).
    #[arg(long, default_value_t = 200)]
    pub scenarios: u64,
    /// The first scenario's seed; a failure names its own, which replays it with `--scenarios 1`.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The NICs' hardware profile.
    #[arg(long, value_enum, default_value = "board")]
    pub profile: ProfileName,
    /// The NICs: two golden models, or two Verilated cores (16 QPs, the board profile) each followed by
    /// its model, on a lossless link.
    #[arg(long, value_enum, default_value = "model")]
    pub backend: crate::Backend,
    /// With `--backend rtl`: the cores' datapath in bytes, 8 (at 125 MHz) or 64 (at 250 MHz).
    #[arg(long, default_value_t = 8)]
    pub width: u32,
    /// Replay every NIC's decisions into a fresh model (the follower) and compare what it produces.
    #[arg(long, value_enum)]
    pub follow: Option<FollowArg>,
    /// Skip the checks after every decision (each NIC's invariants, its QP contexts packed and unpacked):
    /// the model at its own speed, the scenarios' end-to-end checks still made.
    #[arg(long)]
    pub no_checks: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &SoakArgs) -> Result<bool, Error> {
    let follow = args.follow.map(|f| match f {
        FollowArg::Exact => Follow::Exact,
        FollowArg::Perturb => Follow::Perturb,
    });
    let rtl = match (args.backend, args.width) {
        (crate::Backend::Model, _) => None,
        (crate::Backend::Rtl, 8) => Some(hdl::Width::W8),
        (crate::Backend::Rtl, 64) => Some(hdl::Width::W64),
        (crate::Backend::Rtl, _) => return Err("--width must be 8 or 64".into()),
    };
    if rtl.is_some() && (follow.is_some() || args.no_checks || args.profile != ProfileName::Board) {
        return Err(
            "--backend rtl follows each core in lockstep on the board profile: no --follow, --no-checks or --profile"
                .into(),
        );
    }
    let opts = Options { profile: args.profile.profile(), follow, checks: !args.no_checks, rtl };
    let bar = (!args.json && std::io::stderr().is_terminal()).then(|| indicatif::ProgressBar::new(args.scenarios));
    let rep = testbench::soak::soak(args.seed, args.scenarios, &opts, |seed, r| {
        if let Some(b) = &bar {
            b.inc(1);
        }
        if let (Err(e), false) = (r, args.json) {
            eprintln!("seed {seed}: FAILED: {e}");
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if args.json {
        println!("{}", serde_json::to_string(&rep)?);
    } else {
        let on = rep.width.map_or(String::new(), |w| format!(", two {w}-byte RTL cores"));
        println!(
            "soak ({} profile{on}): {} of {} scenarios passed (seeds {}..={}), {} work requests, {:.1} MiB, {} frames, \
             {} retransmitted, {} ACK timeouts, {} QP pairs out of retries, {:.1} s",
            rep.profile,
            rep.passed,
            rep.scenarios,
            rep.first_seed,
            rep.first_seed + rep.scenarios.saturating_sub(1),
            rep.totals.ops,
            rep.totals.bytes as f64 / (1 << 20) as f64,
            rep.totals.frames,
            rep.totals.retransmitted,
            rep.totals.timeouts,
            rep.totals.retries_exhausted,
            rep.wall_s
        );
        if rep.width.is_some() {
            println!(
                "lockstep: {} decisions followed, {} mismatches, {} cycles",
                rep.totals.lockstep_events, rep.totals.lockstep_mismatches, rep.totals.cycles
            );
        }
        if let Some(f) = rep.follow {
            println!(
                "follow ({f:?}): {} decisions replayed, {} mismatches, {} illegal decisions",
                rep.totals.follow_events, rep.totals.follow_mismatches, rep.totals.illegal_decisions
            );
        }
        for f in &rep.failures {
            let follow =
                args.follow.map_or(String::new(), |f| format!(" --follow {}", format!("{f:?}").to_lowercase()));
            let checks = if args.no_checks { " --no-checks" } else { "" };
            let on = rep.width.map_or(String::new(), |w| format!(" --backend rtl --width {w}"));
            println!(
                "FAILED seed {} (replay: ferrite soak --seed {} --scenarios 1 --profile {}{follow}{checks}{on}): {}",
                f.seed, f.seed, rep.profile, f.error
            );
            println!("  shrunk to {:?}", f.shrunk);
            println!("  which fails with: {}", f.shrunk_error);
        }
    }
    Ok(rep.failures.is_empty())
}
