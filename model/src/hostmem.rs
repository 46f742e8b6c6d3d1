//! Host memory as the NIC sees it: an IOVA space with allocated regions. The NIC touches it only through
//! the `Dma` trait; a read or write outside every region is a DMA error, never a panic.

use std::collections::BTreeMap;

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

/// Sparse host memory: regions allocated at IOVAs by a bump allocator, page aligned.
#[derive(Debug, Default)]
pub struct HostMemory {
    regions: BTreeMap<u64, Vec<u8>>,
    next: u64,
}

const PAGE: u64 = 4096;
const BASE: u64 = 0x1_0000_0000;

impl HostMemory {
    pub fn new() -> Self {
        HostMemory { regions: BTreeMap::new(), next: BASE }
    }

    /// Allocates `len` zeroed bytes and returns their IOVA (page aligned, with a guard page after).
    pub fn alloc(&mut self, len: usize) -> u64 {
        let iova = self.next;
        let pages = (len as u64).div_ceil(PAGE).max(1);
        self.next += (pages + 1) * PAGE;
        self.regions.insert(iova, vec![0; len]);
        iova
    }

    /// Frees a region by its base IOVA; returns false if there is none.
    pub fn free(&mut self, iova: u64) -> bool {
        self.regions.remove(&iova).is_some()
    }

    fn locate(&self, iova: u64, len: usize) -> Option<(u64, usize)> {
        let (&base, region) = self.regions.range(..=iova).next_back()?;
        let off = (iova - base) as usize;
        (off.checked_add(len)? <= region.len()).then_some((base, off))
    }
}

impl Dma for HostMemory {
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        let err = DmaError { iova, len: buf.len() };
        let (base, off) = self.locate(iova, buf.len()).ok_or(err)?;
        buf.copy_from_slice(&self.regions[&base][off..off + buf.len()]);
        Ok(())
    }

    fn dma_write(&mut self, iova: u64, data: &[u8]) -> Result<(), DmaError> {
        let err = DmaError { iova, len: data.len() };
        let (base, off) = self.locate(iova, data.len()).ok_or(err)?;
        let region = self.regions.get_mut(&base).ok_or(err)?;
        region[off..off + data.len()].copy_from_slice(data);
        Ok(())
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
}
