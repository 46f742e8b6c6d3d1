//! Host memory as the NIC sees it: an IOVA space with allocated regions. The NIC touches it only through
//! the `Dma` trait; a read or write outside every region is a DMA error, never a panic.

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

/// What the NIC can do to host memory.
pub trait Dma {
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError>;
    fn dma_write(&mut self, iova: u64, data: &[u8]) -> Result<(), DmaError>;
}

/// Sparse host memory: regions allocated at IOVAs by a bump allocator, page aligned. A clone is another
/// handle on the same memory, as the CPUs and the NIC see one RAM: the driver's threads write their rings
/// while the NIC runs, each region behind its own lock, so threads on different queues never wait on each
/// other or on the NIC's other work. The map of regions is read without a shared lock (an access takes
/// a snapshot of it; allocating or freeing publishes a new one), so threads do not contend on it either.
#[derive(Debug, Clone)]
pub struct HostMemory {
    space: Arc<ArcSwap<Space>>,
    /// Serialises the allocators' read-modify-publish of `space`.
    alloc: Arc<Mutex<()>>,
}

#[derive(Debug, Clone)]
struct Space {
    regions: BTreeMap<u64, Arc<Mutex<Vec<u8>>>>,
    next: u64,
}

const PAGE: u64 = 4096;
const BASE: u64 = 0x1_0000_0000;

/// Locks that a panicking holder poisoned still guard plain bytes: take them as they are.
fn unpoison<G>(r: Result<G, std::sync::PoisonError<G>>) -> G {
    r.unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl HostMemory {
    pub fn new() -> Self {
        let space = Space { regions: BTreeMap::new(), next: BASE };
        HostMemory { space: Arc::new(ArcSwap::from_pointee(space)), alloc: Arc::default() }
    }

    /// Allocates `len` zeroed bytes and returns their IOVA (page aligned, with a guard page after).
    pub fn alloc(&self, len: usize) -> u64 {
        let _one = unpoison(self.alloc.lock());
        let mut space = Space::clone(&self.space.load());
        let iova = space.next;
        let pages = (len as u64).div_ceil(PAGE).max(1);
        space.next += (pages + 1) * PAGE;
        space.regions.insert(iova, Arc::new(Mutex::new(vec![0; len])));
        self.space.store(Arc::new(space));
        iova
    }

    /// Frees a region by its base IOVA; returns false if there is none.
    pub fn free(&self, iova: u64) -> bool {
        let _one = unpoison(self.alloc.lock());
        let mut space = Space::clone(&self.space.load());
        let found = space.regions.remove(&iova).is_some();
        self.space.store(Arc::new(space));
        found
    }

    /// Runs `f` on the `len` bytes at `iova`, all inside one region, under that region's lock.
    fn with<R>(&self, iova: u64, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, DmaError> {
        let err = DmaError { iova, len };
        let space = self.space.load();
        let (&base, region) = space.regions.range(..=iova).next_back().ok_or(err)?;
        let mut bytes = unpoison(region.lock());
        let off = (iova - base) as usize;
        let end = off.checked_add(len).filter(|&e| e <= bytes.len()).ok_or(err)?;
        Ok(f(&mut bytes[off..end]))
    }

    /// Copies `buf.len()` bytes from `iova`.
    pub fn read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.with(iova, buf.len(), |b| buf.copy_from_slice(b))
    }

    /// Copies `data` to `iova`; the bytes land together (no reader sees half of them).
    pub fn write(&self, iova: u64, data: &[u8]) -> Result<(), DmaError> {
        self.with(iova, data.len(), |b| b.copy_from_slice(data))
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

    fn dma_write(&mut self, iova: u64, data: &[u8]) -> Result<(), DmaError> {
        self.write(iova, data)
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
        m.dma_write(a + 96, &[1, 2, 3, 4]).unwrap();
        assert!(m.dma_write(a + 97, &[1, 2, 3, 4]).is_err());
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
