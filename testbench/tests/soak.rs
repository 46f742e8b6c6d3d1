//! The soak in CI: 200 seeded scenarios must all pass. A failure prints its seed and the shrunk scenario.

#[test]
fn two_hundred_random_scenarios_pass() {
    let rep = testbench::soak::soak(1, 200, |_, _| {});
    let failures: Vec<String> = rep
        .failures
        .iter()
        .map(|f| {
            format!(
                "seed {} (replay: ferrite soak --seed {} --scenarios 1): {}\n  shrunk: {:?}\n  fails with: {}",
                f.seed, f.seed, f.error, f.shrunk, f.shrunk_error
            )
        })
        .collect();
    assert!(failures.is_empty(), "{} of 200 failed:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(rep.passed, 200);
    assert!(rep.totals.retransmitted > 0, "the impairments were exercised");
}
