//! 24-bit packet sequence numbers with wrap-aware comparison.

use core::cmp::Ordering;
use core::fmt;

/// A PSN: 24 bits, all arithmetic mod 2^24.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Psn(u32);

impl Psn {
    pub const MASK: u32 = 0xFF_FFFF;

    /// Keeps the low 24 bits of `v`.
    pub const fn new(v: u32) -> Self {
        Psn(v & Self::MASK)
    }
    pub const fn value(self) -> u32 {
        self.0
    }
    /// `self + n` mod 2^24.
    pub const fn add(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_add(n))
    }
    /// `self - n` mod 2^24.
    pub const fn sub(self, n: u32) -> Self {
        Psn::new(self.0.wrapping_sub(n))
    }
    /// Signed distance `self - other` in (-2^23, 2^23]: negative means `self` is before `other`.
    pub const fn diff(self, other: Psn) -> i32 {
        ((self.0.wrapping_sub(other.0)) << 8) as i32 >> 8
    }
    /// Wrap-aware ordering with a half-space of 2^23.
    pub fn cmp_wrapping(self, other: Psn) -> Ordering {
        self.diff(other).cmp(&0)
    }
    pub fn before(self, other: Psn) -> bool {
        self.diff(other) < 0
    }
    pub fn after(self, other: Psn) -> bool {
        self.diff(other) > 0
    }
}

impl fmt::Debug for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Psn({:#08x})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PSN is neither before nor after itself.
    #[test]
    fn order_is_strict() {
        let (a, b) = (Psn::new(5), Psn::new(6));
        assert!(a.before(b) && b.after(a));
        assert!(!a.before(a) && !a.after(a));
        assert!(!b.before(a) && !a.after(b));
        assert_eq!(format!("{a:?}"), format!("{:?}", Psn::new(5)));
        assert_ne!(format!("{a:?}"), format!("{b:?}"));
    }
    use proptest::prelude::*;

    #[test]
    fn wraps() {
        let top = Psn::new(0xFF_FFFF);
        assert_eq!(top.add(1), Psn::new(0));
        assert!(top.before(Psn::new(0)));
        assert!(Psn::new(3).after(top));
        assert_eq!(Psn::new(2).diff(top), 3);
        assert_eq!(Psn::new(0).sub(1), top);
        assert_eq!(Psn::new(0x1_000_005), Psn::new(5));
    }

    proptest! {
        #[test]
        fn diff_inverts_add(a in 0u32..0x100_0000, n in 0u32..0x80_0000) {
            let p = Psn::new(a);
            prop_assert_eq!(p.add(n).diff(p), n as i32);
            prop_assert_eq!(p.diff(p.add(n)), -(n as i32));
        }
    }
}
