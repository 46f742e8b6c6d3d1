//! Proptest runners seeded from `FERRITE_SEED` (or a fixed default), so a failure names the seed that
//! replays it: `FERRITE_SEED=<seed> cargo test -p ferrite-sim --release --test <name>`.

use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// A runner for `cases` cases and the seed it was made from.
pub fn runner(cases: u32) -> (TestRunner, u64) {
    let seed: u64 = std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x00F0_EE17);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    (TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)), seed)
}
