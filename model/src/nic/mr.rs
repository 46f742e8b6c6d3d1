//! Protection domains and memory regions: keys, bounds and access flags.

use wire::contract::verbs::access;

/// A registered region, contiguous in IOVA space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mr {
    pub key: u32,
    pub pdn: u32,
    pub iova: u64,
    pub length: u64,
    pub access: u32,
}

/// Why a key check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyError {
    /// No such key (or a stale variant).
    BadKey,
    /// The MR belongs to another PD.
    WrongPd,
    /// The range is outside the MR.
    OutOfBounds,
    /// The MR does not grant the access.
    NoAccess,
}

/// The MR table: index = key >> 8, variant = key & 0xFF (bumped on each registration of a slot).
#[derive(Debug)]
pub struct MrTable {
    slots: Vec<Option<Mr>>,
    variant: Vec<u8>,
}

impl MrTable {
    pub fn new(max: usize) -> Self {
        MrTable { slots: vec![None; max], variant: vec![0; max] }
    }

    pub fn register(&mut self, pdn: u32, iova: u64, length: u64, access: u32) -> Option<u32> {
        // Slot 0 is never used, so key 0 is always invalid.
        let idx = (1..self.slots.len()).find(|&i| self.slots[i].is_none())?;
        self.variant[idx] = self.variant[idx].wrapping_add(1);
        let key = ((idx as u32) << 8) | u32::from(self.variant[idx]);
        self.slots[idx] = Some(Mr { key, pdn, iova, length, access });
        Some(key)
    }

    pub fn get(&self, key: u32) -> Option<&Mr> {
        self.slots.get((key >> 8) as usize)?.as_ref().filter(|m| m.key == key)
    }

    pub fn deregister(&mut self, key: u32) -> bool {
        match self.slots.get_mut((key >> 8) as usize) {
            Some(slot) if slot.is_some_and(|m| m.key == key) => {
                *slot = None;
                true
            }
            _ => false,
        }
    }

    pub fn in_use_by_pd(&self, pdn: u32) -> bool {
        self.slots.iter().flatten().any(|m| m.pdn == pdn)
    }

    /// Checks `[va, va+len)` against key, PD and access; `needed` is a set of `access` bits (0 = local read).
    pub fn check(&self, key: u32, pdn: u32, va: u64, len: u64, needed: u32) -> Result<&Mr, KeyError> {
        let mr = self.get(key).ok_or(KeyError::BadKey)?;
        if mr.pdn != pdn {
            return Err(KeyError::WrongPd);
        }
        if mr.access & needed != needed {
            return Err(KeyError::NoAccess);
        }
        let end = va.checked_add(len).ok_or(KeyError::OutOfBounds)?;
        if va < mr.iova || end > mr.iova + mr.length {
            return Err(KeyError::OutOfBounds);
        }
        Ok(mr)
    }
}

/// Access an MR must grant for a remote operation.
pub const REMOTE_WRITE: u32 = access::REMOTE_WRITE;
pub const REMOTE_READ: u32 = access::REMOTE_READ;
pub const REMOTE_ATOMIC: u32 = access::REMOTE_ATOMIC;
pub const LOCAL_WRITE: u32 = access::LOCAL_WRITE;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_bounds_access() {
        let mut t = MrTable::new(4);
        let k = t.register(1, 0x1000, 0x100, access::REMOTE_WRITE).unwrap();
        assert!(t.check(k, 1, 0x1000, 0x100, REMOTE_WRITE).is_ok());
        assert_eq!(t.check(k, 1, 0x1001, 0x100, REMOTE_WRITE), Err(KeyError::OutOfBounds));
        assert_eq!(t.check(k, 2, 0x1000, 1, REMOTE_WRITE), Err(KeyError::WrongPd));
        assert_eq!(t.check(k, 1, 0x1000, 1, REMOTE_READ), Err(KeyError::NoAccess));
        assert_eq!(t.check(k ^ 1, 1, 0x1000, 1, 0), Err(KeyError::BadKey));
        assert!(t.deregister(k));
        let k2 = t.register(1, 0x1000, 0x100, 0).unwrap();
        assert_ne!(k, k2, "a re-registered slot gets a new key");
        assert_eq!(t.check(k, 1, 0x1000, 1, 0), Err(KeyError::BadKey));
    }

    #[test]
    fn deregistration_needs_the_current_key_and_pds_know_their_mrs() {
        let mut t = MrTable::new(4);
        let k = t.register(1, 0x1000, 0x100, 0).unwrap();
        assert!(!t.deregister(k ^ 1), "a stale variant deregisters nothing");
        assert!(t.get(k).is_some());
        assert!(t.in_use_by_pd(1) && !t.in_use_by_pd(2));
        assert!(t.deregister(k));
        assert!(!t.in_use_by_pd(1));
    }
}
