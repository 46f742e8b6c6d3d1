//! Host memory as the NIC sees it: an IOVA space with allocated regions. The NIC touches it only through
//! the `Dma` trait; a read or write outside every region is a DMA error, never a panic.

use crate::follow::{HostOp, TraceLog};
use arc_swap::ArcSwap;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// A DMA access outside mapped memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("DMA to unmapped IOVA {iova:#x} (+{len})")]
pub struct DmaError {
    pub iova: u64,
    pub len: usize,
}

/// What the NIC can do to host memory. A read can fail (a PCIe read completes with an error); a write
/// cannot report failure (PCIe writes are posted: one to an unmapped address is lost, and only the IOMMU
/// sees it), so nothing the NIC does may depend on how a write went.
pub trait Dma {
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError>;
    fn dma_write(&mut self, iova: u64, data: &[u8]);
}

/// Memory regions by base address, each behind a lock of its own; the table itself is read without a
/// shared lock (an access takes a snapshot of it; inserting or removing publishes a new one), so threads
/// working in different regions touch nothing in common. The model's host memory is one; the VFIO
/// backend's DMA mappings are another.
#[derive(Debug)]
pub struct Regions<M> {
    table: OwnLine<ArcSwap<BTreeMap<u64, Region<M>>>>,
    /// Serialises the read-modify-publish of `table`.
    publish: Mutex<()>,
}

/// A value on cache lines of its own, for state that one thread writes while others work beside it: two
/// small allocations side by side share a line, and every write by one thread then stalls the other (two
/// threads posting to their own rings ran at the speed of one). 128 bytes: a line and its prefetch pair.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct OwnLine<T>(pub T);

impl<T> std::ops::Deref for OwnLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// One region behind its lock, on lines of its own.
pub type Region<M> = Arc<OwnLine<Mutex<M>>>;

/// Locks that a panicking holder poisoned still guard plain bytes: take them as they are.
fn unpoison<G>(r: Result<G, std::sync::PoisonError<G>>) -> G {
    r.unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<M: AsMut<[u8]>> Regions<M> {
    pub fn new() -> Self {
        Regions { table: OwnLine(ArcSwap::from_pointee(BTreeMap::new())), publish: Mutex::new(()) }
    }

    /// Adds a region at `base`.
    pub fn insert(&self, base: u64, region: M) {
        let _one = unpoison(self.publish.lock());
        let mut table = BTreeMap::clone(&self.table.load());
        table.insert(base, Arc::new(OwnLine(Mutex::new(region))));
        self.table.store(Arc::new(table));
    }

    /// Takes the region at `base` out of the table. It lives on while an access that began before still
    /// holds it.
    pub fn remove(&self, base: u64) -> Option<Region<M>> {
        let _one = unpoison(self.publish.lock());
        let mut table = BTreeMap::clone(&self.table.load());
        let region = table.remove(&base)?;
        self.table.store(Arc::new(table));
        Some(region)
    }

    /// Runs `f` on the `len` bytes at `addr`, all inside one region, under that region's lock; `None`
    /// when no region holds them all.
    pub fn with<R>(&self, addr: u64, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> Option<R> {
        let table = self.table.load();
        let (&base, region) = table.range(..=addr).next_back()?;
        let mut region = unpoison(region.lock());
        let bytes = region.as_mut();
        let off = (addr - base) as usize;
        let end = off.checked_add(len).filter(|&e| e <= bytes.len())?;
        Some(f(&mut bytes[off..end]))
    }

    /// Calls `f` with each region and its base, in address order.
    pub fn for_each(&self, mut f: impl FnMut(u64, &mut M)) {
        for (&base, region) in self.table.load().iter() {
            f(base, &mut *unpoison(region.lock()));
        }
    }
}

impl<M: AsMut<[u8]>> Default for Regions<M> {
    fn default() -> Self {
        Regions::new()
    }
}

/// Sparse host memory: regions allocated at IOVAs by a bump allocator, page aligned. A clone is another
/// handle on the same memory, as the CPUs and the NIC see one RAM: the driver's threads write their rings
/// while the NIC runs, and threads on different queues never wait on each other or on the NIC's other
/// work (`Regions`).
#[derive(Debug, Clone)]
pub struct HostMemory {
    regions: Arc<Regions<Vec<u8>>>,
    /// The next free IOVA; held while a region is added.
    next: Arc<Mutex<u64>>,
    /// NIC writes that reached no region (what an IOMMU would report as faults).
    faults: Arc<std::sync::atomic::AtomicU64>,
    /// Where the host's own operations are journaled, while a trace is recorded (`World::trace`).
    journal: Arc<arc_swap::ArcSwapOption<Mutex<crate::follow::Trace>>>,
}

const PAGE: u64 = 4096;
const BASE: u64 = 0x1_0000_0000;

impl HostMemory {
    pub fn new() -> Self {
        HostMemory {
            regions: Arc::default(),
            next: Arc::new(Mutex::new(BASE)),
            faults: Arc::default(),
            journal: Arc::default(),
        }
    }

    /// Allocates `len` zeroed bytes and returns their IOVA (page aligned, with a guard page after).
    pub fn alloc(&self, len: usize) -> u64 {
        let mut next = unpoison(self.next.lock());
        let iova = *next;
        *next += ((len as u64).div_ceil(PAGE).max(1) + 1) * PAGE;
        self.regions.insert(iova, vec![0; len]);
        self.note(|| HostOp::Alloc { iova, len });
        iova
    }

    /// Allocates `len` zeroed bytes at `iova` (a follower's copy of memory another run allocated).
    pub fn alloc_at(&self, iova: u64, len: usize) {
        let mut next = unpoison(self.next.lock());
        *next = (*next).max(iova + ((len as u64).div_ceil(PAGE).max(1) + 1) * PAGE);
        self.regions.insert(iova, vec![0; len]);
    }

    /// Frees a region by its base IOVA; returns false if there is none.
    pub fn free(&self, iova: u64) -> bool {
        self.note(|| HostOp::Free { iova });
        self.regions.remove(iova).is_some()
    }

    /// Journals the host's operations on this memory (not the NIC's) into `log` from now on (`None`: stops).
    pub fn journal(&self, log: Option<TraceLog>) {
        self.journal.store(log);
    }

    fn note(&self, op: impl FnOnce() -> HostOp) {
        if let Some(log) = self.journal.load().as_ref() {
            crate::follow::lock(log).host(op());
        }
    }

    /// Copies `buf.len()` bytes from `iova`.
    pub fn read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.regions.with(iova, buf.len(), |b| buf.copy_from_slice(b)).ok_or(DmaError { iova, len: buf.len() })
    }

    /// Copies `data` to `iova`; the bytes land together (no reader sees half of them).
    pub fn write(&self, iova: u64, data: &[u8]) -> Result<(), DmaError> {
        self.note(|| HostOp::Write { iova, data: data.to_vec() });
        self.store(iova, data)
    }

    fn store(&self, iova: u64, data: &[u8]) -> Result<(), DmaError> {
        self.regions.with(iova, data.len(), |b| b.copy_from_slice(data)).ok_or(DmaError { iova, len: data.len() })
    }

    /// NIC writes that reached no region so far.
    pub fn faults(&self) -> u64 {
        self.faults.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Default for HostMemory {
    fn default() -> Self {
        HostMemory::new()
    }
}

impl Dma for HostMemory {
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.read(iova, buf)
    }

    fn dma_write(&mut self, iova: u64, data: &[u8]) {
        if self.store(iova, data).is_err() {
            self.faults.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_enforced() {
        let mut m = HostMemory::new();
        let a = m.alloc(100);
        let b = m.alloc(10);
        m.dma_write(a + 96, &[1, 2, 3, 4]);
        assert_eq!(m.faults(), 0);
        m.dma_write(a + 97, &[1, 2, 3, 4]);
        assert_eq!(m.faults(), 1, "a write past the region is lost, and counted");
        assert!(m.dma_read(b - 1, &mut [0; 1]).is_err());
        let mut buf = [0; 4];
        m.dma_read(a + 96, &mut buf).unwrap();
        assert_eq!(buf, [1, 2, 3, 4]);
        assert!(m.free(a));
        assert!(m.dma_read(a, &mut buf).is_err());
    }

    #[test]
    fn clones_share_one_memory_across_threads() {
        let m = HostMemory::new();
        let rings: Vec<u64> = (0..4).map(|_| m.alloc(64)).collect();
        std::thread::scope(|s| {
            for (i, &r) in rings.iter().enumerate() {
                let m = m.clone();
                s.spawn(move || {
                    for k in 0..1000u32 {
                        m.write(r, &[(i as u8) ^ (k as u8); 64]).unwrap();
                    }
                });
            }
        });
        for (i, &r) in rings.iter().enumerate() {
            let mut got = [0; 64];
            m.read(r, &mut got).unwrap();
            assert_eq!(got, [(i as u8) ^ (999u32 as u8); 64], "region {i}");
        }
    }
}
