//! `ferrite soak`: seeded random scenarios over the golden model, checked end to end (`testbench::soak`).

use crate::Error;
use clap::Args;
use std::io::IsTerminal;

#[derive(Args, Debug, Clone)]
pub struct SoakArgs {
    /// How many scenarios (consecutive seeds).
    #[arg(long, default_value_t = 200)]
    pub scenarios: u64,
    /// The first scenario's seed; a failure names its own, which replays it with `--scenarios 1`.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &SoakArgs) -> Result<bool, Error> {
    let bar = (!args.json && std::io::stderr().is_terminal()).then(|| indicatif::ProgressBar::new(args.scenarios));
    let rep = testbench::soak::soak(args.seed, args.scenarios, |seed, r| {
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
        println!(
            "soak: {} of {} scenarios passed (seeds {}..={}), {} work requests, {:.1} MiB, {} frames, {} retransmitted, \
             {} ACK timeouts, {} QP pairs out of retries, {:.1} s",
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
        for f in &rep.failures {
            println!("FAILED seed {} (replay: ferrite soak --seed {} --scenarios 1): {}", f.seed, f.seed, f.error);
            println!("  shrunk to {:?}", f.shrunk);
            println!("  which fails with: {}", f.shrunk_error);
        }
    }
    Ok(rep.failures.is_empty())
}
