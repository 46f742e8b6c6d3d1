//! DCQCN: the notification point (CNP pacing) and the reaction point (per-QP rate), after the authors'
//! simulator: rate cut RC <- RC(1 - alpha/2) on a CNP, alpha EWMA with gain g, then fast recovery, additive and
//! hyper increase driven by a timer and a byte counter. Rates are in Mb/s, times in picoseconds.

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
}

/// Reaction-point state of one QP.
#[derive(Debug, Clone)]
pub struct Rp {
    /// Current rate (Mb/s).
    pub rc: f64,
    /// Target rate (Mb/s).
    pub rt: f64,
    pub alpha: f64,
    pub t_cnt: u32,
    pub bc_cnt: u32,
    bytes: u64,
    next_alpha: Time,
    next_rate: Time,
    last_cut: Option<Time>,
    cnp_since_alpha: bool,
    line_mbps: f64,
    /// True once a CNP has arrived; before that the QP runs at line rate.
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
            next_alpha: 0,
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
        let g = 1.0 / f64::from(1u32 << p.get(Dcqcn::G_SHIFT).min(20));
        if self.active {
            if let Some(t) = self.last_cut {
                if now < t + p.ns(Dcqcn::RATE_REDUCE_PERIOD_NS) {
                    return false;
                }
            }
        }
        self.active = true;
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(f64::from(p.get(Dcqcn::MIN_RATE_MBPS)));
        self.alpha = (1.0 - g) * self.alpha + g;
        self.t_cnt = 0;
        self.bc_cnt = 0;
        self.bytes = 0;
        self.last_cut = Some(now);
        self.next_alpha = now + p.ns(Dcqcn::ALPHA_TIMER_NS);
        self.next_rate = now + p.ns(Dcqcn::RATE_TIMER_NS);
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
        while self.bytes >= b {
            self.bytes -= b;
            self.bc_cnt += 1;
            self.increase(p);
        }
    }

    /// Applies every alpha and rate timer that expired up to `now`.
    pub fn catch_up(&mut self, now: Time, p: &Params) {
        if !self.active {
            return;
        }
        let g = 1.0 / f64::from(1u32 << p.get(Dcqcn::G_SHIFT).min(20));
        let ka = p.ns(Dcqcn::ALPHA_TIMER_NS).max(1000);
        while self.next_alpha <= now {
            if !self.cnp_since_alpha {
                self.alpha *= 1.0 - g;
            }
            self.cnp_since_alpha = false;
            self.next_alpha += ka;
        }
        let kt = p.ns(Dcqcn::RATE_TIMER_NS).max(1000);
        while self.next_rate <= now && self.active {
            self.next_rate += kt;
            self.t_cnt += 1;
            self.increase(p);
        }
    }

    fn increase(&mut self, p: &Params) {
        let f = p.get(Dcqcn::F);
        if self.t_cnt >= f && self.bc_cnt >= f {
            let i = self.t_cnt.min(self.bc_cnt) - f + 1;
            self.rt += f64::from(i) * f64::from(p.get(Dcqcn::RHAI_MBPS));
        } else if self.t_cnt >= f || self.bc_cnt >= f {
            self.rt += f64::from(p.get(Dcqcn::RAI_MBPS));
        }
        self.rt = self.rt.min(self.line_mbps);
        self.rc = ((self.rt + self.rc) / 2.0).min(self.line_mbps);
        if self.rc >= self.line_mbps - 0.5 {
            // Back at line rate: leave the limiter.
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

    #[test]
    fn cut_then_recover_to_line_rate() {
        let p = Params::default();
        let mut rp = Rp::new(100_000, &p);
        assert!(rp.on_cnp(0, &p));
        assert!((rp.rc - 50_000.0).abs() < 1.0, "alpha starts at 1: first cut halves");
        assert!(!rp.on_cnp(1_000_000, &p), "a second CNP within the reduce period is ignored");
        let before = rp.rc;
        rp.catch_up(2_000_000_000, &p); // 2 ms later
        assert!(rp.rc > before);
        rp.catch_up(200_000_000_000, &p);
        assert_eq!(rp.rc, 100_000.0);
        assert!(!rp.active);
    }
}
