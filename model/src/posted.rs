//! MMIO writes a CPU posted while the NIC was busy, as PCIe posts them: queued in order and applied
//! before the NIC's next step or register read. A clone is another handle on the same queue, so the
//! driver's threads ring doorbells without waiting for the thread that runs the simulation.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The queue of one NIC's posted register writes: (offset, value), oldest first.
#[derive(Debug, Clone, Default)]
pub struct PostedWrites {
    queue: Arc<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    writes: Mutex<Vec<(u32, u32)>>,
    /// Set while `writes` may hold something: the NIC looks before every step, mostly at nothing.
    pending: AtomicBool,
}

impl PostedWrites {
    /// Queues a 32-bit write to BAR0 offset `off`.
    pub fn post(&self, off: u32, val: u32) {
        let mut w = self.queue.writes.lock().unwrap_or_else(PoisonError::into_inner);
        w.push((off, val));
        self.queue.pending.store(true, Ordering::Release);
    }

    /// Takes every queued write, oldest first.
    pub fn take(&self) -> Vec<(u32, u32)> {
        if !self.queue.pending.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut w = self.queue.writes.lock().unwrap_or_else(PoisonError::into_inner);
        self.queue.pending.store(false, Ordering::Relaxed);
        std::mem::take(&mut *w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_come_out_once_in_the_order_posted() {
        let p = PostedWrites::default();
        let other = p.clone();
        p.post(0x1000, 1);
        other.post(0x1004, 2);
        p.post(0x1000, 3);
        assert_eq!(p.take(), [(0x1000, 1), (0x1004, 2), (0x1000, 3)]);
        assert!(other.take().is_empty());
    }
}
