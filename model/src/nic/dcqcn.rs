//! DCQCN: the notification point (CNP pacing) and the reaction point (per-QP rate and pacer), after Zhu et
//! al., "Congestion Control for Large-Scale RDMA Deployments" (SIGCOMM 2015) and its authors' simulator, in
//! the integers hardware uses:
//!
//! - rates RC and RT in Mb/s with 8 fractional bits; alpha in units of 2^-20 (`ALPHA_ONE` = 1.0);
//! - a CNP cuts the rate, at most once per reduce period while the rate is limited: RT <- RC,
//!   RC <- RC - (RC alpha) / 2 (one multiply);
//! - alpha has a timer of its own (period K), started by a CNP: alpha <- alpha - alpha >> G + (CNP in the
//!   period ? 2^20 >> G : 0), the exact update with g = 2^-G. The timer stops once a period passes without a
//!   CNP and alpha's decay step has reached zero (alpha < 2^G units, 0.024% for G = 8): nothing changes
//!   after that until the next CNP, which starts it again;
//! - the rate rises on rate-timer expiries (period T) and byte-counter events (every B bytes) counted since
//!   the last cut: fast recovery (RC <- (RT + RC) / 2) while both counts are at most F, additive increase
//!   (RT += R_AI) while one of them is, hyper increase (RT += i R_HAI, i = min(T, BC) - F) past both;
//! - the pacer is a credit in millibits: RC adds RC x 1.024 bits (RC x 4 in these units) each tick, up to one
//!   tick's worth; a frame may go when the credit is not negative and takes its wire bytes x 8000.
//!
//! Periods are whole ticks (`timer`); the timers are the QP's `Alpha` and `Rate` timers.

use super::timer::{ticks_for_ns, Tick};
use wire::contract::regs::Dcqcn;

/// alpha = 1.0.
pub const ALPHA_ONE: u32 = 1 << 20;
/// Fractional bits of a rate.
pub const RATE_FRAC: u32 = 8;
/// Millibits a frame byte costs the pacer.
const MILLIBITS_PER_BYTE: i64 = 8000;

/// A rate in Mb/s as the reaction point holds it.
pub const fn rate_q8(mbps: u32) -> u32 {
    mbps << RATE_FRAC
}

/// The parameter registers (small and `Copy`: taken by value where a QP is borrowed alongside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// G: alpha's gain is 2^-G (1 to 20).
    fn g(&self) -> u32 {
        self.get(Dcqcn::G_SHIFT).clamp(1, 20)
    }
    fn alpha_init(&self) -> u32 {
        self.get(Dcqcn::ALPHA_INIT).min(1024) << 10
    }
    /// K in ticks.
    pub fn alpha_period(&self) -> Tick {
        ticks_for_ns(u64::from(self.get(Dcqcn::ALPHA_TIMER_NS)))
    }
    /// T in ticks.
    pub fn rate_period(&self) -> Tick {
        ticks_for_ns(u64::from(self.get(Dcqcn::RATE_TIMER_NS)))
    }
    /// The reduce period in ticks (0: every CNP may cut).
    fn reduce_period(&self) -> Tick {
        u64::from(self.get(Dcqcn::RATE_REDUCE_PERIOD_NS)).div_ceil(1024)
    }
    /// The notification point's CNP interval per QP, in ticks (0: a CNP for every CE mark).
    pub fn cnp_interval(&self) -> Tick {
        u64::from(self.get(Dcqcn::CNP_INTERVAL_NS)).div_ceil(1024)
    }
}

/// Reaction-point state of one QP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rp {
    /// Current rate (Mb/s, 8 fractional bits).
    pub rc: u32,
    /// Target rate.
    pub rt: u32,
    /// alpha in 2^-20 units.
    pub alpha: u32,
    /// Rate-timer expiries since the last cut (saturating).
    pub t_cnt: u16,
    /// Byte-counter events since the last cut (saturating).
    pub bc_cnt: u16,
    /// Bytes sent toward the next byte-counter event.
    pub bytes: u32,
    /// Deadline of the alpha timer; `None` until a CNP starts it, and once it stopped.
    pub alpha_timer: Option<Tick>,
    /// Deadline of the rate timer, while the rate is limited.
    pub rate_timer: Option<Tick>,
    /// Tick of the last cut, while it can still hold back the next one (forgotten at the first rate-timer
    /// expiry a reduce period after it, and when the rate is back at line rate).
    pub cut_at: Option<Tick>,
    /// A CNP arrived in the current alpha period.
    pub cnp_since_alpha: bool,
    /// The rate is limited (below line rate): false before the first CNP and after recovery.
    pub active: bool,
    /// Pacer credit, millibits (0 at line rate).
    pub credit: i32,
    /// The tick `credit` was brought up to (0 at line rate).
    pub credited: Tick,
}

impl Rp {
    /// A reaction point at line rate `line` (Mb/s, 8 fractional bits).
    pub fn new(line: u32, p: &Params) -> Self {
        Rp {
            rc: line,
            rt: line,
            alpha: p.alpha_init(),
            t_cnt: 0,
            bc_cnt: 0,
            bytes: 0,
            alpha_timer: None,
            rate_timer: None,
            cut_at: None,
            cnp_since_alpha: false,
            active: false,
            credit: 0,
            credited: 0,
        }
    }

    /// The current rate in Mb/s.
    pub fn rate_mbps(&self) -> f64 {
        f64::from(self.rc) / f64::from(1u32 << RATE_FRAC)
    }

    /// Credit the pacer adds per tick at the current rate, which is also the most it holds.
    fn refill(&self) -> i64 {
        i64::from(self.rc) * 4
    }

    /// The pacer's credit at tick `now`.
    fn credit_at(&self, now: Tick) -> i64 {
        let gained = self.refill().saturating_mul(now.saturating_sub(self.credited).min(1 << 40) as i64);
        (i64::from(self.credit) + gained).min(self.refill())
    }

    /// Brings the credit up to `now` (before the rate changes or a frame is charged).
    fn settle(&mut self, now: Tick) {
        self.credit = self.credit_at(now).clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32;
        self.credited = now;
    }

    /// Whether the pacer lets a frame go at tick `now`.
    pub fn may_send(&self, now: Tick) -> bool {
        !self.active || self.credit_at(now) >= 0
    }

    /// The first tick at or after `now` at which `may_send` holds.
    pub fn send_tick(&self, now: Tick) -> Tick {
        let c = self.credit_at(now);
        if !self.active || c >= 0 {
            return now;
        }
        now + ((-c) as u64).div_ceil(self.refill().max(1) as u64)
    }

    /// A CNP arrived at tick `now`. Returns true when the rate was cut.
    pub fn on_cnp(&mut self, now: Tick, p: &Params) -> bool {
        self.cnp_since_alpha = true;
        if self.alpha_timer.is_none() {
            self.alpha_timer = Some(now + p.alpha_period());
        }
        if self.cut_at.is_some_and(|c| now < c + p.reduce_period()) {
            return false;
        }
        self.settle(now);
        if !self.active {
            self.active = true;
            self.credit = 0;
        }
        self.rt = self.rc;
        let cut = ((u64::from(self.rc) * u64::from(self.alpha)) >> 21) as u32;
        self.rc = (self.rc - cut).max(rate_q8(p.get(Dcqcn::MIN_RATE_MBPS)));
        self.t_cnt = 0;
        self.bc_cnt = 0;
        self.bytes = 0;
        self.cut_at = Some(now);
        self.rate_timer = Some(now + p.rate_period());
        true
    }

    /// The alpha timer fired: one update, then the next period (or a stop, when nothing can change).
    pub fn on_alpha_timer(&mut self, p: &Params) {
        let Some(deadline) = self.alpha_timer else { return };
        let g = p.g();
        let step = self.alpha >> g;
        let cnp = self.cnp_since_alpha;
        self.alpha = self.alpha - step + if cnp { ALPHA_ONE >> g } else { 0 };
        self.cnp_since_alpha = false;
        self.alpha_timer = (cnp || step != 0).then_some(deadline + p.alpha_period());
    }

    /// The rate timer fired: an increase event, and the next period while the rate is limited.
    pub fn on_rate_timer(&mut self, now: Tick, line: u32, p: &Params) {
        let Some(deadline) = self.rate_timer else { return };
        self.rate_timer = Some(deadline + p.rate_period());
        if self.cut_at.is_some_and(|c| now >= c + p.reduce_period()) {
            self.cut_at = None;
        }
        self.t_cnt = self.t_cnt.saturating_add(1);
        self.increase(now, line, p);
    }

    /// A frame of `wire_bytes` (overhead included) left at tick `now`: the pacer is charged, and every B
    /// bytes is an increase event.
    pub fn on_sent(&mut self, now: Tick, wire_bytes: usize, line: u32, p: &Params) {
        if !self.active {
            return;
        }
        self.settle(now);
        let cost = wire_bytes as i64 * MILLIBITS_PER_BYTE;
        self.credit = (i64::from(self.credit) - cost).max(i64::from(i32::MIN)) as i32;
        self.bytes = self.bytes.saturating_add(wire_bytes as u32);
        let b = p.get(Dcqcn::BYTE_COUNTER).max(1);
        while self.bytes >= b && self.active {
            self.bytes -= b;
            self.bc_cnt = self.bc_cnt.saturating_add(1);
            self.increase(now, line, p);
        }
    }

    fn increase(&mut self, now: Tick, line: u32, p: &Params) {
        self.settle(now);
        let f = p.get(Dcqcn::F);
        let (lo, hi) = (u32::from(self.t_cnt.min(self.bc_cnt)), u32::from(self.t_cnt.max(self.bc_cnt)));
        let rt = if lo > f {
            u64::from(self.rt) + u64::from(lo - f) * u64::from(rate_q8(p.get(Dcqcn::RHAI_MBPS)))
        } else if hi > f {
            u64::from(self.rt) + u64::from(rate_q8(p.get(Dcqcn::RAI_MBPS)))
        } else {
            u64::from(self.rt)
        };
        self.rt = rt.min(u64::from(line)) as u32;
        self.rc = ((self.rt + self.rc) >> 1).min(line);
        if self.rc + (1 << (RATE_FRAC - 1)) >= line {
            // Within half a Mb/s of line rate: leave the limiter (alpha's timer keeps running).
            self.rc = line;
            self.active = false;
            self.rate_timer = None;
            self.cut_at = None;
            self.credit = 0;
            self.credited = 0;
        }
    }
}

#[cfg(test)]
mod tests;
