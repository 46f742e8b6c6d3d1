//! What ferrite can check of the data, knowing perftest fills its buffers with random bytes: reads of the
//! peer's unchanging buffer return the same bytes; fetch-and-adds on one address return consecutive
//! values; compare-and-swaps chained on one address each return the previous swap's value; and as the
//! server of the atomic tool, the memory holds what the atomics the responder executed leave there.

use super::opts::AtomicType;
use super::rig::{Failure, Rig};
use crate::perf::Op;
use driver::oob::perftest::BwReport;
use wire::contract::regs::Counter;

/// perftest's cache line on x86-64 and page-size "cycle buffer": its atomic client cycles over the cache
/// lines of one page.
pub const CACHE_LINE: u64 = 64;
pub const CYCLE_BUFFER: u64 = 4096;
/// perftest's compare-and-swap swaps in this (`ATOMIC_SWAP_VALUE`), comparing with 0.
const PERFTEST_SWAP: u64 = 0;
/// The top of every value ferrite's compare-and-swap chain swaps in; the QP's index and the swap's
/// number below it.
const CHAIN_TAG: u64 = 0xFE77_0000_0000_0000;

/// The value ferrite's `k`-th compare-and-swap on QP `q` swaps in.
pub fn chain_swap(q: usize, k: u32) -> u64 {
    CHAIN_TAG | ((q as u64 & 0xFFFF) << 32) | u64::from(k.wrapping_add(1))
}

/// The client's check of each completed READ or atomic, QP by QP, in posting order.
pub enum Checker {
    Nothing,
    /// The first read's bytes.
    Reads(Vec<Option<Vec<u8>>>),
    /// The first fetch's value.
    FetchAdds(Vec<Option<u64>>),
    /// The memory after the first compare-and-swap, learnt from what it returned.
    CmpSwaps(Vec<Option<u64>>),
}

impl Checker {
    pub fn new(op: Op, atomic: AtomicType, qps: usize) -> Self {
        match (op, atomic) {
            (Op::Read, _) => Checker::Reads(vec![None; qps]),
            (Op::Atomic, AtomicType::FetchAndAdd) => Checker::FetchAdds(vec![None; qps]),
            (Op::Atomic, AtomicType::CmpAndSwap) => Checker::CmpSwaps(vec![None; qps]),
            _ => Checker::Nothing,
        }
    }

    /// Whether QP `q` may post its next: a compare-and-swap chain waits for its first swap's answer,
    /// which tells what the memory held.
    pub fn may_post(&self, q: usize, posted: u32) -> bool {
        match self {
            Checker::CmpSwaps(first) => posted == 0 || first[q].is_some(),
            _ => true,
        }
    }

    /// The compare and swap-or-add operands of QP `q`'s `k`-th atomic.
    pub fn operands(&self, q: usize, k: u32) -> (u64, u64) {
        match self {
            Checker::CmpSwaps(first) => {
                let compare = match k {
                    0 => 0,
                    1 => first[q].unwrap_or(0),
                    _ => chain_swap(q, k - 1),
                };
                (compare, chain_swap(q, k))
            }
            _ => (1, 0),
        }
    }

    /// Checks QP `q`'s `k`-th completion, whose result is in `got`.
    pub fn check(&mut self, q: usize, k: u32, got: &[u8]) -> Result<(), Failure> {
        let value = || u64::from_le_bytes(got[..8].try_into().unwrap_or_default());
        match self {
            Checker::Nothing => {}
            Checker::Reads(first) => match &first[q] {
                None => first[q] = Some(got.to_vec()),
                Some(f) if f.as_slice() != got => return Err(format!("QP {q}: read {k} differs from read 0")),
                Some(_) => {}
            },
            Checker::FetchAdds(first) => {
                let v = value();
                let f = *first[q].get_or_insert(v);
                if v != f.wrapping_add(u64::from(k)) {
                    return Err(format!("QP {q}: fetch-and-add {k} returned {v:#x}, not {:#x}", f + u64::from(k)));
                }
            }
            Checker::CmpSwaps(first) => {
                let v = value();
                if k == 0 {
                    // Swapped if the memory held the compare value (0), and left as it was otherwise.
                    first[q] = Some(if v == 0 { chain_swap(q, 0) } else { v });
                } else {
                    let want = if k == 1 { first[q].unwrap_or(0) } else { chain_swap(q, k - 1) };
                    if v != want {
                        return Err(format!(
                            "QP {q}: compare-and-swap {k} returned {v:#x}, not the previous swap's {want:#x}"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// What was checked, in words, over `n` completions.
    pub fn said(&self, n: u64, size: u32) -> String {
        match self {
            Checker::Nothing => "completions in order on every QP".into(),
            Checker::Reads(_) => format!("{n} reads returned the same {size} bytes of the peer's buffer, QP by QP"),
            Checker::FetchAdds(_) => format!("{n} fetch-and-adds returned consecutive values, QP by QP"),
            Checker::CmpSwaps(_) => format!(
                "{n} compare-and-swaps: each returned the previous swap's value (the first, what the memory held)"
            ),
        }
    }
}

/// What the server of the atomic tool checks once the client has reported: the atomics its responder
/// executed (counted by kind) are at least the client's report, and the memory holds what they leave:
/// for fetch-and-adds, the adds summed over every QP's page; for compare-and-swaps, each cache line
/// holding perftest's swap value (0) or the last of ferrite's chain. The kind is the one that arrived,
/// as it is the client's to choose.
pub fn atomic_server(rig: &Rig, theirs: &BwReport) -> Result<String, Failure> {
    let adds = rig.ctx.counter(Counter::rx_fetch_adds);
    let swaps = rig.ctx.counter(Counter::rx_cmp_swaps);
    let reported = theirs.iters;
    let mut lines = Vec::new();
    for q in 0..rig.qps.len() {
        let page = rig.read(rig.target(q), CYCLE_BUFFER as usize)?;
        lines.extend(
            page.chunks(CACHE_LINE as usize).map(|c| (q, u64::from_le_bytes(c[..8].try_into().unwrap_or_default()))),
        );
    }
    let kind = match (adds, swaps) {
        (0, 0) => return Err(format!("the client reported {reported} atomics but none arrived")),
        (_, 0) => "fetch-and-adds",
        (0, _) => "compare-and-swaps",
        _ => return Err(format!("both kinds arrived: {adds} fetch-and-adds and {swaps} compare-and-swaps")),
    };
    let executed = adds + swaps;
    if executed < reported {
        return Err(format!("the client reported {reported} {kind} but ferrite's responder executed {executed}"));
    }
    if adds > 0 {
        let sum: u64 = lines.iter().map(|&(_, v)| v).sum();
        if sum != adds {
            return Err(format!("{adds} fetch-and-adds of 1 executed, but the adds in memory sum to {sum}"));
        }
        return Ok(format!("{adds} fetch-and-adds executed, each one's add in memory; the client reported {reported}"));
    }
    let chain_of = |q: usize, v: u64| v & 0xFFFF_0000_0000_0000 == CHAIN_TAG && (v >> 32) & 0xFFFF == q as u64;
    if let Some(&(q, v)) = lines.iter().find(|&&(q, v)| v != PERFTEST_SWAP && !chain_of(q, v)) {
        return Err(format!("QP {q}'s memory holds {v:#x}: no compare-and-swap left that"));
    }
    Ok(format!(
        "{swaps} compare-and-swaps executed; the memory holds the last swap's value on every line; the client \
         reported {reported}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(v: u64) -> [u8; 8] {
        v.to_le_bytes()
    }

    #[test]
    fn a_compare_and_swap_chain_starts_from_what_the_memory_held() {
        let mut c = Checker::new(Op::Atomic, AtomicType::CmpAndSwap, 2);
        assert!(c.may_post(1, 0) && !c.may_post(1, 1), "the chain waits for its first answer");
        assert_eq!(c.operands(1, 0), (0, chain_swap(1, 0)));
        // Memory held 0: the first swap took, and the chain goes on from its value.
        c.check(1, 0, &le(0)).unwrap();
        assert!(c.may_post(1, 1));
        assert_eq!(c.operands(1, 1), (chain_swap(1, 0), chain_swap(1, 1)));
        c.check(1, 1, &le(chain_swap(1, 0))).unwrap();
        assert_eq!(c.operands(1, 2), (chain_swap(1, 1), chain_swap(1, 2)));
        c.check(1, 2, &le(chain_swap(1, 1))).unwrap();
        assert!(c.check(1, 3, &le(chain_swap(1, 1))).is_err(), "a swap that did not take");
        // Memory held something else: the first swap failed and left it; the chain compares with that.
        c.check(0, 0, &le(77)).unwrap();
        assert_eq!(c.operands(0, 1), (77, chain_swap(0, 1)));
        c.check(0, 1, &le(77)).unwrap();
        assert!(c.check(0, 2, &le(77)).is_err());
        assert_ne!(chain_swap(0, 1), chain_swap(1, 1), "each QP's chain is its own");
    }

    #[test]
    fn fetch_adds_and_reads_are_checked_qp_by_qp() {
        let mut f = Checker::new(Op::Atomic, AtomicType::FetchAndAdd, 2);
        assert_eq!(f.operands(0, 5), (1, 0));
        f.check(0, 0, &le(10)).unwrap();
        f.check(1, 0, &le(500)).unwrap();
        f.check(0, 1, &le(11)).unwrap();
        f.check(1, 1, &le(501)).unwrap();
        assert!(f.check(0, 2, &le(13)).is_err(), "an add lost");
        let mut r = Checker::new(Op::Read, AtomicType::FetchAndAdd, 2);
        r.check(0, 0, b"abc").unwrap();
        r.check(1, 0, b"xyz").unwrap();
        r.check(0, 1, b"abc").unwrap();
        assert!(r.check(1, 1, b"xyZ").is_err());
        let mut w = Checker::new(Op::Write, AtomicType::FetchAndAdd, 1);
        assert!(w.check(0, 0, b"anything").is_ok() && w.may_post(0, 9));
    }
}
