//! DCQCN: the notification point (CNP pacing) and the reaction point (per-QP rate), after Zhu et al.,
//! "Congestion Control for Large-Scale RDMA Deployments" (SIGCOMM 2015) and its authors' simulator:
//!
//! - a CNP cuts the rate, at most once per `RATE_REDUCE_PERIOD_NS`: RT <- RC, RC <- RC (1 - alpha/2);
//! - alpha has a timer of its own (period K), started by the first CNP and never stopped, at line rate too:
//!   alpha <- (1-g) alpha + g when a CNP arrived in the period, alpha <- (1-g) alpha when none did;
//! - the rate rises on timer expiries (period T) and byte-counter events (every B bytes) counted since the
//!   last cut: F steps of fast recovery (RC <- (RT + RC)/2) while both counts are at most F, then additive
//!   increase (RT += R_AI) while one of them is, then hyper increase (RT += i R_HAI, i = min(T, BC) - F).
//!
//! Rates are in Mb/s, times in picoseconds.

use crate::Time;
use wire::contract::regs::Dcqcn;

/// The parameter registers (small and `Copy`: taken by value where a QP is borrowed alongside).
#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub regs: [u32; Dcqcn::ALL.len()],
}

impl Default for Params {
    fn default() -> Self {
        let mut regs = [0; Dcqcn::ALL.len()];
        for (r, p) in regs.iter_mut().zip(Dcqcn::ALL) {
            *r = p.param().default;
        }
        Params { regs }
    }
}

impl Params {
    pub fn get(&self, p: Dcqcn) -> u32 {
        self.regs[p as usize]
    }
    fn ns(&self, p: Dcqcn) -> Time {
        Time::from(self.get(p)) * 1000
    }
    /// The alpha gain g.
    fn g(&self) -> f64 {
        1.0 / f64::from(1u32 << self.get(Dcqcn::G_SHIFT).min(20))
    }
}

/// Reaction-point state of one QP.
#[derive(Debug, Clone)]
pub struct Rp {
    /// Current rate (Mb/s).
    pub rc: f64,
    /// Target rate (Mb/s).
    pub rt: f64,
    pub alpha: f64,
    /// Rate-timer expiries since the last cut.
    pub t_cnt: u32,
    /// Byte-counter events since the last cut.
    pub bc_cnt: u32,
    /// Bytes sent toward the next byte-counter event.
    bytes: u64,
    /// Next alpha update; `None` until the first CNP.
    next_alpha: Option<Time>,
    /// Next rate-timer expiry (while `active`).
    next_rate: Time,
    last_cut: Option<Time>,
    /// A CNP arrived in the current alpha period.
    cnp_since_alpha: bool,
    line_mbps: f64,
    /// True while the rate is below line rate (limited); false before the first CNP and after recovery.
    pub active: bool,
}

impl Rp {
    pub fn new(line_mbps: u32, p: &Params) -> Self {
        let line = f64::from(line_mbps);
        Rp {
            rc: line,
            rt: line,
            alpha: f64::from(p.get(Dcqcn::ALPHA_INIT)) / 1024.0,
            t_cnt: 0,
            bc_cnt: 0,
            bytes: 0,
            next_alpha: None,
            next_rate: 0,
            last_cut: None,
            cnp_since_alpha: false,
            line_mbps: line,
            active: false,
        }
    }

    /// A CNP arrived for this QP. Returns true when the rate was cut.
    pub fn on_cnp(&mut self, now: Time, p: &Params) -> bool {
        self.catch_up(now, p);
        self.cnp_since_alpha = true;
        if self.next_alpha.is_none() {
            self.next_alpha = Some(now + p.ns(Dcqcn::ALPHA_TIMER_NS).max(1000));
        }
        if self.last_cut.is_some_and(|t| now < t + p.ns(Dcqcn::RATE_REDUCE_PERIOD_NS)) {
            return false;
        }
        self.active = true;
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(f64::from(p.get(Dcqcn::MIN_RATE_MBPS)));
        self.t_cnt = 0;
        self.bc_cnt = 0;
        self.bytes = 0;
        self.last_cut = Some(now);
        self.next_rate = now + p.ns(Dcqcn::RATE_TIMER_NS).max(1000);
        true
    }

    /// Counts bytes sent; every B bytes is an increase event.
    pub fn on_sent(&mut self, now: Time, bytes: usize, p: &Params) {
        if !self.active {
            return;
        }
        self.catch_up(now, p);
        self.bytes += bytes as u64;
        let b = u64::from(p.get(Dcqcn::BYTE_COUNTER).max(1));
        while self.bytes >= b && self.active {
            self.bytes -= b;
            self.bc_cnt += 1;
            self.increase(p);
        }
    }

    /// Applies every alpha update and rate-timer expiry due up to `now`.
    pub fn catch_up(&mut self, now: Time, p: &Params) {
        if let Some(mut t) = self.next_alpha.filter(|&t| t <= now) {
            let k = p.ns(Dcqcn::ALPHA_TIMER_NS).max(1000);
            let g = p.g();
            // The first period due may have seen a CNP; the rest saw none (a CNP catches up first).
            self.alpha = (1.0 - g) * self.alpha + if self.cnp_since_alpha { g } else { 0.0 };
            self.cnp_since_alpha = false;
            t += k;
            if t <= now {
                let quiet = (now - t) / k + 1;
                self.alpha *= (1.0 - g).powf(quiet as f64);
                t += quiet * k;
            }
            self.next_alpha = Some(t);
        }
        let kt = p.ns(Dcqcn::RATE_TIMER_NS).max(1000);
        while self.active && self.next_rate <= now {
            self.next_rate += kt;
            self.t_cnt += 1;
            self.increase(p);
        }
    }

    fn increase(&mut self, p: &Params) {
        let f = p.get(Dcqcn::F);
        let (lo, hi) = (self.t_cnt.min(self.bc_cnt), self.t_cnt.max(self.bc_cnt));
        if lo > f {
            self.rt += f64::from(lo - f) * f64::from(p.get(Dcqcn::RHAI_MBPS));
        } else if hi > f {
            self.rt += f64::from(p.get(Dcqcn::RAI_MBPS));
        }
        self.rt = self.rt.min(self.line_mbps);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line_mbps);
        if self.rc >= self.line_mbps - 0.5 {
            // Back at line rate: leave the limiter (alpha's timer keeps running).
            self.rc = self.line_mbps;
            self.active = false;
        }
    }

    /// Picoseconds one frame of `bytes` occupies at the current rate.
    pub fn gap(&self, bytes: usize) -> Time {
        ((bytes as f64 * 8.0 * 1.0e6) / self.rc.max(1.0)) as Time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Time = 1_000_000;
    const G: f64 = 1.0 / 256.0;

    fn close(a: f64, b: f64, what: &str) {
        assert!((a - b).abs() < 1e-6, "{what}: got {a}, expected {b}");
    }

    #[test]
    fn cut_then_recover_to_line_rate() {
        let p = Params::default();
        let mut rp = Rp::new(100_000, &p);
        assert!(rp.on_cnp(0, &p));
        close(rp.rc, 50_000.0, "alpha starts at 1: the first cut halves");
        assert!(!rp.on_cnp(US, &p), "a second CNP within the 4 us reduce period is ignored");
        rp.catch_up(200_000 * US, &p);
        assert_eq!(rp.rc, 100_000.0);
        assert!(!rp.active);
    }

    /// The paper's equations by hand, with the default parameters (K = T = 55 us, F = 5, R_AI = 40 Mb/s,
    /// g = 1/256): a CNP at 0, one at 56 us, then none until 500 us.
    #[test]
    fn rate_and_alpha_follow_the_paper() {
        let p = Params::default();
        let mut rp = Rp::new(100_000, &p);
        assert!(rp.on_cnp(0, &p));
        close(rp.rc, 50_000.0, "RC(1 - 1/2)");
        close(rp.rt, 100_000.0, "RT = RC before the cut");
        rp.catch_up(55 * US, &p);
        close(rp.rc, 75_000.0, "fast recovery 1 at 55 us");
        close(rp.alpha, 1.0, "a CNP in [0, 55): (1-g) 1 + g");
        assert!(rp.on_cnp(56 * US, &p));
        close(rp.rt, 75_000.0, "RT = RC");
        close(rp.rc, 37_500.0, "cut with alpha 1");
        // Rate timer from the cut: 111, 166, 221, 276, 331 us are fast recovery toward 75 000.
        let mut rc = 37_500.0;
        for k in 1..=5 {
            rp.catch_up((56 + 55 * k) * US, &p);
            rc = (75_000.0 + rc) / 2.0;
            close(rp.rc, rc, &format!("fast recovery step {k}"));
            close(rp.rt, 75_000.0, "RT held during fast recovery");
        }
        // 386, 441, 496 us: additive increase (no bytes sent, so no hyper increase).
        let mut rt = 75_000.0;
        for k in 6..=8 {
            rp.catch_up((56 + 55 * k) * US, &p);
            rt += 40.0;
            rc = (rt + rc) / 2.0;
            close(rp.rt, rt, &format!("additive step {k}"));
            close(rp.rc, rc, &format!("additive step {k}"));
        }
        // Alpha: 110 us saw the CNP at 56 (stays 1); 165 .. 495 us saw none: seven decays.
        rp.catch_up(499 * US, &p);
        let alpha = (1.0 - G).powi(7);
        close(rp.alpha, alpha, "alpha after seven quiet periods");
        assert!(rp.on_cnp(500 * US, &p));
        close(rp.rc, rc * (1.0 - alpha / 2.0), "the cut at 500 us uses the decayed alpha");
    }

    /// Alpha keeps its timer while the flow is back at line rate, so a later cut is gentler.
    #[test]
    fn alpha_decays_at_line_rate() {
        let p = Params::default();
        let mut rp = Rp::new(100_000, &p);
        assert!(rp.on_cnp(0, &p));
        // Time passes in small steps, as it does while the QP sends.
        for t in (0..=10_000).step_by(5) {
            rp.catch_up(t * US, &p);
        }
        assert!(!rp.active, "recovered within 10 ms");
        // Ticks at 55 us (the CNP's period: stays 1), then 110 .. 9955 us: 180 quiet periods.
        close(rp.alpha, (1.0 - G).powi(180), "alpha at 10 ms");
        assert!(rp.on_cnp(10_000 * US, &p));
        close(rp.rc, 100_000.0 * (1.0 - (1.0 - G).powi(180) / 2.0), "the cut uses the decayed alpha");
    }

    /// Hyper increase: i = min(T, BC) - F, with F steps of fast recovery first.
    #[test]
    fn hyper_increase_steps() {
        let mut p = Params::default();
        p.regs[Dcqcn::BYTE_COUNTER as usize] = 1000;
        let mut rp = Rp::new(100_000, &p);
        assert!(rp.on_cnp(0, &p));
        assert!(rp.on_cnp(10 * US, &p), "second cut, past the reduce period");
        close(rp.rt, 50_000.0, "RT");
        close(rp.rc, 25_000.0, "RC");
        let mut steps = vec![];
        let mut record = |rp: &Rp, before: f64| steps.push(rp.rt - before);
        for _ in 0..6 {
            let before = rp.rt;
            rp.on_sent(20 * US, 1000, &p);
            record(&rp, before);
        }
        for k in 1..=7 {
            let before = rp.rt;
            rp.catch_up((10 + 55 * k) * US, &p);
            record(&rp, before);
        }
        let before = rp.rt;
        rp.on_sent(400 * US, 1000, &p);
        record(&rp, before);
        // BC 1..5 fast recovery, BC 6 additive; T 1..5 additive (BC > F), T 6 hyper i = 1, T 7 hyper
        // i = min(7, 6) - 5 = 1; then BC 7: i = min(7, 7) - 5 = 2.
        let want = [0.0, 0.0, 0.0, 0.0, 0.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, 200.0, 200.0, 400.0];
        assert_eq!(steps, want);
    }

    /// A long quiet stretch applied in one call equals the same time in small steps (the closed form of the
    /// quiet periods), and a CNP exactly one reduce period after the last cut cuts again.
    #[test]
    fn catch_up_in_one_call_or_in_steps_agree() {
        let p = Params::default();
        let (mut one, mut steps) = (Rp::new(100_000, &p), Rp::new(100_000, &p));
        assert!(one.on_cnp(0, &p) && steps.on_cnp(0, &p));
        assert!(one.on_cnp(4 * US, &p), "at the end of the 4 us reduce period the next CNP cuts");
        assert!(steps.on_cnp(4 * US, &p));
        one.catch_up(3_000 * US, &p);
        for t in (5..=3_000).step_by(5) {
            steps.catch_up(t * US, &p);
        }
        close(one.alpha, steps.alpha, "alpha");
        close(one.alpha, (1.0 - G).powi(53), "alpha after 53 quiet periods (110 .. 2970 us)");
        close(one.rc, steps.rc, "rate");
        // The next alpha period is where it would have been: one more quiet tick by 3025 us, none before.
        for rp in [&mut one, &mut steps] {
            rp.catch_up(3_024 * US, &p);
            close(rp.alpha, (1.0 - G).powi(53), "no tick before 3025 us");
            rp.catch_up(3_025 * US, &p);
            close(rp.alpha, (1.0 - G).powi(54), "the tick at 3025 us");
        }
    }

    /// Several byte-counter events in one call, and the pacing gap of a frame at the current rate.
    #[test]
    fn byte_counter_events_and_the_pacing_gap() {
        let mut p = Params::default();
        p.regs[Dcqcn::BYTE_COUNTER as usize] = 1000;
        let mut rp = Rp::new(100_000, &p);
        assert!(rp.on_cnp(0, &p));
        rp.on_sent(US, 3500, &p);
        assert_eq!(rp.bc_cnt, 3, "3500 bytes are three events of 1000");
        rp.on_sent(US, 500, &p);
        assert_eq!(rp.bc_cnt, 4, "the 500 left over count toward the next");
        let mut at_10g = Rp::new(100_000, &p);
        at_10g.rc = 10_000.0;
        assert_eq!(at_10g.gap(1250), 1_000_000, "1250 bytes at 10 Gb/s take 1 us");
    }
}
