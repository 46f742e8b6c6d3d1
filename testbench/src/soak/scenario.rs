//! A soak scenario: what to run (QPs, PMTU, link impairments, the work requests) as plain data, drawn from
//! a seed, and shrunk toward the smallest scenario that still fails.

use model::net::Impairments;
use model::rng::Rng;
use serde::Serialize;

/// The verb a work request uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Kind {
    Send,
    SendImm,
    Write,
    WriteImm,
    Read,
    CmpSwap,
    FetchAdd,
}

impl Kind {
    const ALL: [Kind; 7] =
        [Kind::Send, Kind::SendImm, Kind::Write, Kind::WriteImm, Kind::Read, Kind::CmpSwap, Kind::FetchAdd];

    pub fn is_atomic(self) -> bool {
        matches!(self, Kind::CmpSwap | Kind::FetchAdd)
    }
    /// Whether the responder consumes a receive WQE.
    pub fn needs_recv(self) -> bool {
        matches!(self, Kind::Send | Kind::SendImm | Kind::WriteImm)
    }
}

/// One work request: on QP pair `qp`, posted by host B when `from_b` (else host A).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Op {
    pub qp: usize,
    pub from_b: bool,
    pub kind: Kind,
    pub len: u32,
}

/// A whole scenario. The seed also drives the links' random faults and the data patterns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    pub seed: u64,
    pub qps: usize,
    pub pmtu: u32,
    /// Per-frame impairments of both links.
    pub faults: Impairments,
    pub ops: Vec<Op>,
}

/// Largest message a scenario uses.
pub const MAX_LEN: u32 = 4 << 20;
/// Most impairment of each kind.
pub const MAX_FAULT: f64 = 0.10;
/// Bytes a scenario moves at most (keeps 10,000 scenarios within a benchmark run).
const MAX_TOTAL: u64 = 8 << 20;
/// Packets one message takes at most: 4 MiB is reached at PMTU 4096, smaller PMTUs cap the size.
const MAX_PKTS: u32 = 1024;

impl Scenario {
    /// The scenario of `seed`: 1 to 4 QPs, a random PMTU, each impairment off or up to 10%, and 1 to 24 work
    /// requests of every verb with sizes from 0 B to 4 MiB (most of them small; at most 1024 packets each).
    pub fn generate(seed: u64) -> Scenario {
        let mut r = Rng::new(seed);
        let qps = 1 + r.below(4) as usize;
        let pmtu = 256 << r.below(5);
        let fault = |r: &mut Rng| if r.chance(0.5) { r.f64() * MAX_FAULT } else { 0.0 };
        let faults = Impairments {
            loss: fault(&mut r),
            reorder: fault(&mut r),
            duplicate: fault(&mut r),
            corrupt: fault(&mut r),
        };
        let mut total = 0u64;
        let ops = (0..1 + r.below(24))
            .map(|_| {
                let kind = Kind::ALL[r.below(Kind::ALL.len() as u64) as usize];
                let class = r.f64();
                let mut len = match class {
                    _ if kind.is_atomic() => 8,
                    c if c < 0.05 => 0,
                    c if c < 0.55 => r.below(4097) as u32,
                    c if c < 0.90 => r.below(256 << 10) as u32 + 1,
                    _ => r.below(u64::from(MAX_LEN)) as u32 + 1,
                }
                .min(MAX_PKTS * pmtu);
                if total + u64::from(len) > MAX_TOTAL {
                    len = r.below(4097) as u32;
                }
                total += u64::from(len);
                Op { qp: r.below(qps as u64) as usize, from_b: r.chance(0.3), kind, len }
            })
            .collect();
        Scenario { seed, qps, pmtu, faults, ops }
    }

    /// Smaller variants, simplest first: fewer ops, no impairment of one kind, fewer QPs, shorter messages.
    fn smaller(&self) -> Vec<Scenario> {
        let mut out = Vec::new();
        for i in 0..self.ops.len() {
            if self.ops.len() > 1 {
                let mut s = self.clone();
                s.ops.remove(i);
                out.push(s);
            }
        }
        for f in 0..4 {
            let mut s = self.clone();
            let x = [&mut s.faults.loss, &mut s.faults.reorder, &mut s.faults.duplicate, &mut s.faults.corrupt];
            if *x[f] > 0.0 {
                *x[f] = 0.0;
                out.push(s);
            }
        }
        if self.qps > 1 {
            let mut s = self.clone();
            s.qps -= 1;
            for o in &mut s.ops {
                o.qp %= s.qps;
            }
            out.push(s);
        }
        for i in 0..self.ops.len() {
            if !self.ops[i].kind.is_atomic() && self.ops[i].len > 0 {
                let mut s = self.clone();
                s.ops[i].len /= 2;
                out.push(s);
            }
        }
        out
    }

    /// The smallest variant for which `fails` still holds, found greedily within `budget` runs of `fails`.
    pub fn shrink(&self, budget: usize, mut fails: impl FnMut(&Scenario) -> bool) -> Scenario {
        let mut best = self.clone();
        let mut runs = 0;
        'outer: while runs < budget {
            for s in best.smaller() {
                runs += 1;
                if fails(&s) {
                    best = s;
                    continue 'outer;
                }
                if runs >= budget {
                    break;
                }
            }
            break;
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_seeded_and_bounded() {
        for seed in 0..500 {
            let s = Scenario::generate(seed);
            assert_eq!(s, Scenario::generate(seed), "seed {seed}");
            assert!((1..=4).contains(&s.qps) && (256..=4096).contains(&s.pmtu), "seed {seed}");
            assert!((1..=24).contains(&s.ops.len()), "seed {seed}");
            for o in &s.ops {
                assert!(o.qp < s.qps && o.len <= MAX_LEN, "seed {seed}");
                assert!(!o.kind.is_atomic() || o.len == 8, "seed {seed}");
            }
            let f = s.faults;
            assert!([f.loss, f.reorder, f.duplicate, f.corrupt].iter().all(|p| (0.0..=MAX_FAULT).contains(p)));
        }
        let kinds: std::collections::HashSet<_> =
            (0..50).flat_map(|s| Scenario::generate(s).ops).map(|o| o.kind).collect();
        assert_eq!(kinds.len(), Kind::ALL.len(), "every verb is drawn");
    }

    #[test]
    fn shrink_finds_the_one_op_that_matters() {
        // Fails when any READ of more than 1000 bytes is present.
        let fails = |s: &Scenario| s.ops.iter().any(|o| o.kind == Kind::Read && o.len > 1000);
        let seed = (0..).find(|&s| fails(&Scenario::generate(s)) && Scenario::generate(s).ops.len() > 5).unwrap();
        let small = Scenario::generate(seed).shrink(10_000, fails);
        assert_eq!(small.ops.len(), 1, "{small:?}");
        assert!(small.ops[0].len > 1000 && small.ops[0].len <= 2001, "{small:?}");
        assert_eq!((small.qps, small.faults), (1, Impairments::default()), "{small:?}");
    }
}
