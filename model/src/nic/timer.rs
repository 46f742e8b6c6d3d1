//! The NIC's one clock for timers: a global tick of 1.024 us. Every timer (ACK timeout, RNR wait, DCQCN's
//! alpha and rate timers) and the pacer work in ticks, as hardware's would: a timer is armed at the tick of
//! its event with a deadline `tick + n` and fires at the first tick at or after that deadline. Tick `k` begins
//! at `k * TICK_PS`.
//!
//! Firing error: with `n` ticks asked for, a timer fires between `n - 1` and `n` ticks after its event (the
//! event may come late in its tick), so at most one tick (1.024 us) early against the exact delay; an
//! implementation may fire it later, by up to `TIMER_TOLERANCE` ticks, and the follower accepts that.
//! The ACK timeout 4.096 us x 2^t is exactly 4 x 2^t ticks; RNR delays and the DCQCN periods, given in
//! nanoseconds, are rounded up to whole ticks, and an RNR wait takes one tick more, so it is never shorter
//! than the delay the NAK asked for (IBTA's RNR timer is a minimum).

use crate::Time;

/// A tick count since time 0.
pub type Tick = u64;

/// Length of one tick in picoseconds (1.024 us).
pub const TICK_PS: Time = TICK_NS as Time * 1000;

pub use wire::contract::qpc::TICK_NS;

/// Ticks an implementation may fire a due timer late (the follower refuses later ones as missed).
///
/// Set from the hardware's worst case while the link takes frames: a due timer waits for the engines'
/// context port, which one holder has at a time and which no transmit side takes while a timer waits, so
/// for one turn at most. The longest turn is at 8 bytes a cycle and 128 cycles a tick: a frame of
/// `MAX_FRAME_LEN` (4,224 bytes) placed, 528 cycles, or a requester's 4 KiB packet built, its slot and two
/// payload reads after a DMA round trip each (500 ns) and 512 beats, about 720 cycles; with the scan's
/// round (64 cycles), 6.1 ticks, and the tick the dispatch sees, about 7. A timer fires at most 8 ticks
/// (8.2 us) late; against the shortest ACK timeout (8 ticks), it fires within twice its time, never early.
/// The margin, under a tick, holds for DMA round trips up to about 1 us and for commands, which hold the
/// port for a few cycles between their context reads and writes.
pub const TIMER_TOLERANCE: Tick = 8;

/// Bits a tick value takes in the packed QP context: deadlines are compared within 2^35 ticks (10 hours)
/// of now, which covers the longest ACK timeout (4 x 2^31 ticks).
pub const TICK_BITS: u32 = 36;

/// The tick containing time `t`.
pub const fn tick_of(t: Time) -> Tick {
    t / TICK_PS
}

/// When tick `k` begins.
pub const fn tick_start(k: Tick) -> Time {
    k * TICK_PS
}

/// `ns` nanoseconds as whole ticks, rounded up (at least one).
pub const fn ticks_for_ns(ns: u64) -> Tick {
    let t = ns.div_ceil(TICK_NS as u64);
    if t == 0 {
        1
    } else {
        t
    }
}

/// The local ACK timeout for the `timeout` attribute: 4 x 2^timeout ticks; none for 0 (IBTA: infinite).
pub const fn ack_timeout_ticks(timeout: u8) -> Option<Tick> {
    if timeout == 0 {
        None
    } else {
        Some(4 << (timeout & 31))
    }
}

/// Whether a timer with `deadline` is due at tick `now`.
pub const fn due(deadline: Tick, now: Tick) -> bool {
    deadline <= now
}

/// The per-QP timers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimerKind {
    /// The requester's local ACK timer.
    Ack,
    /// The end of an RNR wait.
    Rnr,
    /// DCQCN: alpha's update period K.
    Alpha,
    /// DCQCN: the rate-increase timer T.
    Rate,
}

impl TimerKind {
    pub const ALL: [TimerKind; 4] = [TimerKind::Ack, TimerKind::Rnr, TimerKind::Alpha, TimerKind::Rate];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_arithmetic() {
        assert_eq!(tick_of(0), 0);
        assert_eq!(tick_of(TICK_PS - 1), 0);
        assert_eq!(tick_of(TICK_PS), 1);
        assert_eq!(tick_start(3), 3 * TICK_PS);
        assert_eq!(ticks_for_ns(0), 1);
        assert_eq!(ticks_for_ns(1024), 1);
        assert_eq!(ticks_for_ns(1025), 2);
        assert_eq!(ticks_for_ns(55_000), 54, "K = 55 us is 54 ticks (55.296 us)");
        assert_eq!(ticks_for_ns(10_000), 10, "the shortest RNR delay, 10 us, is 10 ticks");
        assert_eq!(ack_timeout_ticks(0), None);
        assert_eq!(ack_timeout_ticks(1), Some(8), "8.192 us");
        assert_eq!(ack_timeout_ticks(14), Some(65_536), "67.1 ms");
        assert_eq!(ack_timeout_ticks(31), Some(1 << 33));
        assert!(ack_timeout_ticks(31).unwrap() < 1 << (TICK_BITS - 1), "the longest timeout fits the context");
        assert!(due(5, 5) && due(5, 6) && !due(6, 5));
    }
}
