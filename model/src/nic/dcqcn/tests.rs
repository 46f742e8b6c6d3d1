use super::*;

const LINE: u32 = rate_q8(100_000);

fn mbps(r: u32) -> f64 {
    f64::from(r) / 256.0
}

/// Fires the reaction point's due timers in deadline order (alpha before rate at the same tick) up to and
/// including tick `until`, as the NIC's scheduler would.
fn run_to(rp: &mut Rp, until: Tick, p: &Params) {
    loop {
        let a = rp.alpha_timer.filter(|&t| t <= until);
        let r = rp.rate_timer.filter(|&t| t <= until);
        match (a, r) {
            (Some(a), r) if r.is_none_or(|r| a <= r) => rp.on_alpha_timer(p),
            (_, Some(r)) => rp.on_rate_timer(r, LINE, p),
            _ => return,
        }
    }
}

#[test]
fn cut_then_recover_to_line_rate() {
    let p = Params::default();
    let mut rp = Rp::new(LINE, &p);
    assert!(rp.on_cnp(0, &p));
    assert_eq!(mbps(rp.rc), 50_000.0, "alpha starts at 1: the first cut halves");
    assert!(!rp.on_cnp(3, &p), "a second CNP within the reduce period (4 ticks) is ignored");
    assert!(rp.on_cnp(4, &p), "one exactly a reduce period later cuts");
    run_to(&mut rp, 200_000, &p);
    assert_eq!((rp.rc, rp.active), (LINE, false));
    assert_eq!((rp.rate_timer, rp.cut_at, rp.credit, rp.credited), (None, None, 0, 0), "nothing left of the limiter");
}

/// The rate timer drops the last cut's tick once the reduce period is over (the packed context keeps only
/// ticks near the present), and keeps it while a CNP could still be ignored for it.
#[test]
fn the_rate_timer_forgets_a_cut_after_the_reduce_period() {
    let p = Params::default();
    let mut rp = Rp::new(LINE, &p);
    assert!(rp.on_cnp(100, &p));
    run_to(&mut rp, 100 + p.rate_period(), &p);
    assert!(rp.active, "still limited");
    assert_eq!(rp.cut_at, None, "the reduce period (4 ticks) ended before the rate timer (54)");
    let mut long = Params::default();
    long.regs[Dcqcn::RATE_REDUCE_PERIOD_NS as usize] = 100_000;
    assert_eq!(long.reduce_period(), 98);
    let mut rp = Rp::new(LINE, &long);
    assert!(rp.on_cnp(100, &long));
    run_to(&mut rp, 100 + long.rate_period(), &long);
    assert_eq!(rp.cut_at, Some(100), "at tick 154 the reduce period runs to 198");
    assert!(!rp.on_cnp(197, &long), "a CNP within it is ignored");
    run_to(&mut rp, 100 + 2 * long.rate_period(), &long);
    assert_eq!(rp.cut_at, None, "at tick 208 it is over");
}

/// `send_tick` is the first tick the pacer lets a frame go: the tick asked about whenever it may send.
#[test]
fn send_tick_is_now_when_the_pacer_allows() {
    let p = Params::default();
    let mut rp = Rp::new(LINE, &p);
    assert_eq!(rp.send_tick(7), 7, "not limited");
    assert!(rp.on_cnp(0, &p));
    assert!(rp.may_send(5) && rp.credit_at(5) > 0);
    assert_eq!(rp.send_tick(5), 5, "limited, with credit");
    rp.on_sent(5, 8192, LINE, &p);
    assert!(!rp.may_send(5));
    let t = rp.send_tick(5);
    assert!(t > 5 && rp.may_send(t) && !rp.may_send(t - 1), "the first tick with credit: {t}");
}

/// The paper's equations by hand, with the default parameters (K = T = 55 us, 54 ticks; F = 5; R_AI =
/// 40 Mb/s; g = 1/256): a CNP at tick 0, one at tick 55, then none until tick 500.
#[test]
fn rate_and_alpha_follow_the_paper() {
    let p = Params::default();
    assert_eq!((p.alpha_period(), p.rate_period()), (54, 54));
    let mut rp = Rp::new(LINE, &p);
    assert!(rp.on_cnp(0, &p));
    assert_eq!((mbps(rp.rc), mbps(rp.rt)), (50_000.0, 100_000.0), "RC(1 - 1/2), RT = RC before");
    run_to(&mut rp, 54, &p);
    assert_eq!(mbps(rp.rc), 75_000.0, "fast recovery 1 at tick 54");
    assert_eq!(rp.alpha, ALPHA_ONE, "a CNP in the first period: (1-g) 1 + g = 1");
    assert!(rp.on_cnp(55, &p));
    assert_eq!((mbps(rp.rt), mbps(rp.rc)), (75_000.0, 37_500.0), "RT = RC, then the cut with alpha 1");
    // Rate timer from the cut: ticks 109 .. 325 are fast recovery toward 75 000.
    let mut rc = 37_500.0;
    for k in 1..=5 {
        run_to(&mut rp, 55 + 54 * k, &p);
        rc = (75_000.0 + rc) / 2.0;
        assert!((mbps(rp.rc) - rc).abs() < 0.01, "fast recovery step {k}: {} vs {rc}", mbps(rp.rc));
        assert_eq!(mbps(rp.rt), 75_000.0, "RT held during fast recovery");
    }
    // 379, 433, 487: additive increase (no bytes sent, so no hyper increase).
    let mut rt = 75_000.0;
    for k in 6..=8 {
        run_to(&mut rp, 55 + 54 * k, &p);
        rt += 40.0;
        rc = (rt + rc) / 2.0;
        assert_eq!(mbps(rp.rt), rt, "additive step {k}");
        assert!((mbps(rp.rc) - rc).abs() < 0.01, "additive step {k}");
    }
    // Alpha: tick 108 saw the CNP at 55 (stays 1); 162 .. 486 saw none: seven exact decays.
    run_to(&mut rp, 499, &p);
    let mut alpha = ALPHA_ONE;
    for _ in 0..7 {
        alpha -= alpha >> 8;
    }
    assert_eq!(rp.alpha, alpha);
    assert!((f64::from(alpha) / f64::from(ALPHA_ONE) - (1.0f64 - 1.0 / 256.0).powi(7)).abs() < 1e-5);
    let before = rp.rc;
    assert!(rp.on_cnp(500, &p));
    assert_eq!(rp.rc, before - ((u64::from(before) * u64::from(alpha)) >> 21) as u32, "the cut uses the decayed alpha");
}

/// Alpha keeps its timer at line rate, so a later cut is gentler; once its step is zero and no CNP comes,
/// the timer stops, and the next CNP starts it again.
#[test]
fn alpha_decays_at_line_rate_then_stops() {
    let p = Params::default();
    let mut rp = Rp::new(LINE, &p);
    assert!(rp.on_cnp(0, &p));
    run_to(&mut rp, 10_000, &p);
    assert!(!rp.active, "recovered within 10 ms");
    // Ticks 54 (the CNP's period: stays 1), then 108 .. 9990: 184 quiet periods.
    let mut alpha = ALPHA_ONE;
    for _ in 0..184 {
        alpha -= alpha >> 8;
    }
    assert_eq!(rp.alpha, alpha);
    assert!(rp.on_cnp(10_000, &p));
    assert_eq!(rp.rc, LINE - ((u64::from(LINE) * u64::from(alpha)) >> 21) as u32, "the cut uses the decayed alpha");
    let mut rp = Rp::new(LINE, &p);
    rp.on_cnp(0, &p);
    run_to(&mut rp, 5_000_000, &p);
    assert_eq!(rp.alpha_timer, None, "stopped");
    assert!(rp.alpha < 256 && rp.alpha >> 8 == 0, "at its floor: {}", rp.alpha);
    rp.on_cnp(5_000_000, &p);
    assert_eq!(rp.alpha_timer, Some(5_000_000 + 54), "a CNP starts it again");
}

/// Hyper increase: i = min(T, BC) - F, with F steps of fast recovery first.
#[test]
fn hyper_increase_steps() {
    let mut p = Params::default();
    p.regs[Dcqcn::BYTE_COUNTER as usize] = 1000;
    let mut rp = Rp::new(LINE, &p);
    assert!(rp.on_cnp(0, &p));
    assert!(rp.on_cnp(10, &p), "second cut, past the reduce period");
    assert_eq!((mbps(rp.rt), mbps(rp.rc)), (50_000.0, 25_000.0));
    let mut steps = vec![];
    for _ in 0..6 {
        let before = rp.rt;
        rp.on_sent(20, 1000, LINE, &p);
        steps.push(mbps(rp.rt - before));
    }
    for k in 1..=7 {
        let before = rp.rt;
        run_to(&mut rp, 10 + 54 * k, &p);
        steps.push(mbps(rp.rt - before));
    }
    let before = rp.rt;
    rp.on_sent(400, 1000, LINE, &p);
    steps.push(mbps(rp.rt - before));
    // BC 1..5 fast recovery, BC 6 additive; T 1..5 additive (BC > F), T 6 hyper i = 1, T 7 hyper
    // i = min(7, 6) - 5 = 1; then BC 7: i = min(7, 7) - 5 = 2.
    let want = [0.0, 0.0, 0.0, 0.0, 0.0, 40.0, 40.0, 40.0, 40.0, 40.0, 40.0, 200.0, 200.0, 400.0];
    assert_eq!(steps, want);
}

#[test]
fn byte_counter_events() {
    let mut p = Params::default();
    p.regs[Dcqcn::BYTE_COUNTER as usize] = 1000;
    let mut rp = Rp::new(LINE, &p);
    rp.on_sent(0, 5000, LINE, &p);
    assert_eq!(rp.bc_cnt, 0, "at line rate nothing is counted");
    assert!(rp.on_cnp(0, &p));
    rp.on_sent(1, 3500, LINE, &p);
    assert_eq!(rp.bc_cnt, 3, "3500 bytes are three events of 1000");
    rp.on_sent(1, 500, LINE, &p);
    assert_eq!(rp.bc_cnt, 4, "the 500 left over count toward the next");
}

/// The paper's reaction point in floating point, on the same ticks: the reference the integers are held to.
struct FloatRp {
    rc: f64,
    rt: f64,
    alpha: f64,
    t_cnt: u32,
    bc_cnt: u32,
    bytes: f64,
    alpha_timer: Option<Tick>,
    rate_timer: Option<Tick>,
    cut_at: Option<Tick>,
    cnp: bool,
    active: bool,
}

impl FloatRp {
    fn new() -> Self {
        let line = 100_000.0;
        FloatRp {
            rc: line,
            rt: line,
            alpha: 1.0,
            t_cnt: 0,
            bc_cnt: 0,
            bytes: 0.0,
            alpha_timer: None,
            rate_timer: None,
            cut_at: None,
            cnp: false,
            active: false,
        }
    }
    fn on_cnp(&mut self, now: Tick, p: &Params) {
        self.cnp = true;
        self.alpha_timer.get_or_insert(now + p.alpha_period());
        if self.cut_at.is_some_and(|c| now < c + 4) {
            return;
        }
        self.active = true;
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(10.0);
        (self.t_cnt, self.bc_cnt, self.bytes, self.cut_at) = (0, 0, 0.0, Some(now));
        self.rate_timer = Some(now + p.rate_period());
    }
    fn on_alpha(&mut self, p: &Params) {
        let g = 1.0 / 256.0;
        self.alpha = (1.0 - g) * self.alpha + if self.cnp { g } else { 0.0 };
        self.cnp = false;
        self.alpha_timer = self.alpha_timer.map(|t| t + p.alpha_period());
    }
    fn increase(&mut self) {
        let (lo, hi) = (self.t_cnt.min(self.bc_cnt), self.t_cnt.max(self.bc_cnt));
        if lo > 5 {
            self.rt += f64::from(lo - 5) * 200.0;
        } else if hi > 5 {
            self.rt += 40.0;
        }
        self.rt = self.rt.min(100_000.0);
        self.rc = ((self.rt + self.rc) / 2.0).min(100_000.0);
        if self.rc >= 100_000.0 - 0.5 {
            (self.rc, self.active, self.rate_timer, self.cut_at) = (100_000.0, false, None, None);
        }
    }
    fn on_rate(&mut self, now: Tick, p: &Params) {
        self.rate_timer = self.rate_timer.map(|t| t + p.rate_period());
        if self.cut_at.is_some_and(|c| now >= c + 4) {
            self.cut_at = None;
        }
        self.t_cnt += 1;
        self.increase();
    }
    fn on_sent(&mut self, bytes: f64, b: f64) {
        if !self.active {
            return;
        }
        self.bytes += bytes;
        while self.bytes >= b && self.active {
            self.bytes -= b;
            self.bc_cnt += 1;
            self.increase();
        }
    }
}

/// The integer reaction point against the paper's equations in floating point, tick by tick over 20 ms:
/// CNPs every 40 ticks for the first 3 ms (congestion), then none while the rate recovers, a full-size
/// frame every tick the rate is limited (so the byte counter runs too). Stated tolerance: the rate within
/// 0.001% of the float version's, alpha within 2^-12, at every tick (measured on 2026-12-02: 6e-7 and 8e-5).
#[test]
fn the_integer_trajectory_tracks_the_float_one() {
    let mut p = Params::default();
    p.regs[Dcqcn::BYTE_COUNTER as usize] = 300_000;
    let (mut fx, mut fl) = (Rp::new(LINE, &p), FloatRp::new());
    let frame = 4096 + 24;
    let mut worst = (0.0f64, 0.0f64);
    for tick in 0..20_000u64 {
        // Timers due this tick, alpha first (the NIC's order), on both.
        while let Some(t) = fx.alpha_timer.filter(|&t| t <= tick) {
            let _ = t;
            fx.on_alpha_timer(&p);
        }
        while fl.alpha_timer.is_some_and(|t| t <= tick) {
            fl.on_alpha(&p);
        }
        while let Some(t) = fx.rate_timer.filter(|&t| t <= tick) {
            fx.on_rate_timer(t, LINE, &p);
        }
        while let Some(t) = fl.rate_timer.filter(|&t| t <= tick) {
            fl.on_rate(t, &p);
        }
        if tick < 2930 && tick % 40 == 0 {
            fx.on_cnp(tick, &p);
            fl.on_cnp(tick, &p);
        }
        if fx.active {
            fx.on_sent(tick, frame, LINE, &p);
        }
        fl.on_sent(frame as f64, 300_000.0);
        assert_eq!(fx.active, fl.active, "tick {tick}: one is limited and the other not");
        let rate = (mbps(fx.rc) - fl.rc).abs() / fl.rc;
        let alpha = (f64::from(fx.alpha) / f64::from(ALPHA_ONE) - fl.alpha).abs();
        worst = (worst.0.max(rate), worst.1.max(alpha));
        assert!(rate < 1e-5, "tick {tick}: rate {} vs {} Mb/s", mbps(fx.rc), fl.rc);
        assert!(alpha < 1.0 / 4096.0, "tick {tick}: alpha {} vs {}", fx.alpha, fl.alpha);
    }
    assert!(!fx.active, "recovered by 20 ms");
    assert!(worst.0 > 0.0, "the two differ at all (the test compares something): {worst:?}");
    println!("worst relative rate error {:.1e}, worst alpha error {:.1e}", worst.0, worst.1);
}
