//! Event queue entries: 16 bytes in one ring of 2^log_size entries per device. Completion events (an armed
//! CQ got a CQE) and asynchronous errors land here; an interrupt (MSI-X vector 0; a callback in simulation)
//! tells the driver to look when the EQ is armed. Ownership follows the CQE rule (`cqe::owner_for`).

/// EQE size in bytes.
pub const EQE_LEN: usize = 16;
/// Offset of the owner byte (bit 0).
pub const OWNER: usize = 15;

crate::header! {
    /// Event entry.
    Eqe / EqeRepr, len = 16;
    /// `EventKind`.
    kind / set_kind: u8 [0..1],
    /// The CQ number (completion, CQ error) or QP number (QP fatal, SQ drained).
    obj / set_obj: u32 [4..8],
    owner / set_owner: u8 [15..16],
}

/// What an EQE reports (the numbering of the matching `ibv_event_type`s is the driver's business).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum EventKind {
    /// An armed CQ received a CQE that satisfied its arming (any, or solicited / error only).
    Completion = 0,
    /// A CQ overran: a CQE was lost (`IBV_EVENT_CQ_ERR`).
    CqError = 1,
    /// A QP went to ERR on its own, e.g. its CQ overran (`IBV_EVENT_QP_FATAL`).
    QpFatal = 2,
}

impl EventKind {
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            0 => Some(EventKind::Completion),
            1 => Some(EventKind::CqError),
            2 => Some(EventKind::QpFatal),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_kinds_both_ways() {
        for v in 0..=2u8 {
            assert_eq!(EventKind::from_u8(v).map(|k| k as u8), Some(v));
        }
        assert_eq!(EventKind::from_u8(3), None);
    }

    #[test]
    fn layout() {
        let e = EqeRepr { kind: EventKind::QpFatal as u8, obj: 0x0102_0304, owner: 1 };
        let b = e.to_bytes();
        assert_eq!(b, [2, 0, 0, 0, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(EqeRepr::from_bytes(&b).unwrap(), e);
        assert_eq!(EventKind::from_u8(b[0]), Some(EventKind::QpFatal));
        assert_eq!(EventKind::from_u8(3), None);
    }
}
