//! The soak: `n` scenarios from consecutive seeds, each run and checked; a failure is shrunk and reported
//! with the seed that replays it (`ferrite soak --seed S --scenarios 1`).

mod follow;
mod run;
mod scenario;

pub use follow::{Follow, Followed};
pub use run::{record, run, Options, Stats};
pub use scenario::{Kind, Op, Scenario};
use serde::Serialize;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs shrinking may take per failure.
const SHRINK_BUDGET: usize = 300;

/// One failed scenario.
#[derive(Debug, Serialize)]
pub struct Failure {
    pub seed: u64,
    pub error: String,
    /// The smallest variant found that still fails, and its error.
    pub shrunk: Scenario,
    pub shrunk_error: String,
}

/// What a soak did.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub profile: &'static str,
    /// `model`, or `rtl` with the cores' width in bytes.
    pub backend: &'static str,
    pub width: Option<usize>,
    pub follow: Option<Follow>,
    pub checks: bool,
    pub first_seed: u64,
    pub scenarios: u64,
    pub passed: u64,
    /// The passing scenarios' figures, added up (`retries_exhausted`: QP pairs whose retries ran out under
    /// heavy loss, accepted and then checked for a clean flush).
    #[serde(flatten)]
    pub totals: Stats,
    pub failures: Vec<Failure>,
    pub wall_s: f64,
}

/// Runs a scenario, turning a panic anywhere below into an error.
pub fn check(sc: &Scenario, opts: &Options) -> Result<Stats, String> {
    match catch_unwind(AssertUnwindSafe(|| run(sc, opts))) {
        Ok(r) => r,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(format!("panic: {}", msg.unwrap_or_default()))
        }
    }
}

/// Soaks `n` scenarios from seed `first` on; `progress` is told after each.
pub fn soak(first: u64, n: u64, opts: &Options, mut progress: impl FnMut(u64, &Result<Stats, String>)) -> Report {
    let t0 = std::time::Instant::now();
    let mut rep = Report {
        profile: opts.profile.name,
        backend: if opts.rtl.is_some() { "rtl" } else { "model" },
        width: opts.rtl.map(|w| w.bytes()),
        follow: opts.follow,
        checks: opts.checks,
        first_seed: first,
        ..Default::default()
    };
    for seed in first..first.saturating_add(n) {
        let mut sc = Scenario::generate(seed);
        if opts.rtl.is_some() {
            sc.faults = Default::default();
        }
        let r = check(&sc, opts);
        progress(seed, &r);
        rep.scenarios += 1;
        match r {
            Ok(s) => {
                rep.passed += 1;
                rep.totals += s;
            }
            Err(error) => {
                let shrunk = sc.shrink(SHRINK_BUDGET, |s| check(s, opts).is_err());
                let shrunk_error = check(&shrunk, opts).err().unwrap_or_default();
                rep.failures.push(Failure { seed, error, shrunk, shrunk_error });
            }
        }
    }
    rep.wall_s = t0.elapsed().as_secs_f64();
    rep
}
