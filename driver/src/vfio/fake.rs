//! The twin of `sys::Linux`: a sysfs, device nodes and vfio-pci functions held in memory, so that the
//! diagnosis and the VFIO backend can be tested without a device, and every error case staged.

use super::sys::{Device, Memory, Sys};
use super::PCI_DEVICES;
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// One PCI function of the twin.
#[derive(Debug, Clone)]
pub struct FakeFunction {
    pub vendor: u16,
    pub device: u16,
    pub driver: Option<String>,
    pub group: Option<u32>,
    pub bar0_len: u64,
}

/// What the twin's devices have seen, shared with the test.
#[derive(Debug, Default)]
pub struct FakeState {
    /// BAR0 of each opened function, as 32-bit registers.
    pub regs: BTreeMap<String, Vec<u32>>,
    /// IOMMU mappings: IOVA to length.
    pub maps: BTreeMap<u64, usize>,
    /// MSIs raised and not yet taken.
    pub pending_irqs: u64,
    pub msi_enabled: bool,
    pub enabled: bool,
}

/// The twin host.
#[derive(Debug, Clone, Default)]
pub struct FakeSys {
    pub functions: BTreeMap<String, FakeFunction>,
    /// `/dev/vfio/vfio` exists (the modules are loaded).
    pub vfio_loaded: bool,
    /// Opening `/dev/vfio/N` is refused for lack of permission.
    pub deny: bool,
    /// The IOVA ranges the IOMMU reports.
    pub iova_ranges: Vec<Range<u64>>,
    pub state: Arc<Mutex<FakeState>>,
}

impl FakeSys {
    /// A host with the IOMMU on, VFIO loaded and no functions yet.
    pub fn new() -> Self {
        FakeSys { vfio_loaded: true, iova_ranges: std::iter::once(0..1 << 39).collect(), ..Default::default() }
    }

    /// Adds a function; returns the twin for chaining.
    pub fn with(mut self, bdf: &str, f: FakeFunction) -> Self {
        self.functions.insert(bdf.to_string(), f);
        self
    }

    fn split(path: &Path) -> Option<(String, String)> {
        let rest = path.strip_prefix(PCI_DEVICES).ok()?;
        let mut parts = rest.iter().map(|p| p.to_string_lossy().into_owned());
        let bdf = parts.next()?;
        Some((bdf, parts.next().unwrap_or_default()))
    }

    fn group_has_vfio(&self, group: u32) -> bool {
        self.functions.values().any(|f| f.group == Some(group) && f.driver.as_deref() == Some("vfio-pci"))
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file", path.display()))
}

impl Sys for FakeSys {
    fn read_attr(&self, path: &Path) -> io::Result<String> {
        let (bdf, attr) = Self::split(path).ok_or_else(|| not_found(path))?;
        let f = self.functions.get(&bdf).ok_or_else(|| not_found(path))?;
        match attr.as_str() {
            "vendor" => Ok(format!("0x{:04x}", f.vendor)),
            "device" => Ok(format!("0x{:04x}", f.device)),
            _ => Err(not_found(path)),
        }
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let (bdf, attr) = Self::split(path).ok_or_else(|| not_found(path))?;
        let f = self.functions.get(&bdf).ok_or_else(|| not_found(path))?;
        match attr.as_str() {
            "driver" => f.driver.as_ref().map(|d| PathBuf::from(format!("../../../bus/pci/drivers/{d}"))),
            "iommu_group" => f.group.map(|g| PathBuf::from(format!("../../../kernel/iommu_groups/{g}"))),
            _ => None,
        }
        .ok_or_else(|| not_found(path))
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        if path == Path::new(PCI_DEVICES) {
            return Ok(self.functions.keys().cloned().collect());
        }
        let group = path
            .strip_prefix("/sys/kernel/iommu_groups")
            .ok()
            .and_then(|r| r.iter().next())
            .and_then(|g| g.to_string_lossy().parse::<u32>().ok())
            .ok_or_else(|| not_found(path))?;
        Ok(self.functions.iter().filter(|(_, f)| f.group == Some(group)).map(|(b, _)| b.clone()).collect())
    }
    fn exists(&self, path: &Path) -> bool {
        if path == Path::new(super::VFIO_CONTAINER) {
            return self.vfio_loaded;
        }
        Self::split(path).is_some_and(|(bdf, rest)| rest.is_empty() && self.functions.contains_key(&bdf))
    }
    fn try_open_rw(&self, path: &Path) -> io::Result<()> {
        let group = path
            .strip_prefix("/dev/vfio")
            .ok()
            .and_then(|g| g.to_str()?.parse::<u32>().ok())
            .ok_or_else(|| not_found(path))?;
        if !self.vfio_loaded || !self.group_has_vfio(group) {
            return Err(not_found(path));
        }
        if self.deny {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "permission denied"));
        }
        Ok(())
    }
    fn open_device(&self, sysfs: &Path) -> io::Result<Box<dyn Device>> {
        let (bdf, _) = Self::split(sysfs).ok_or_else(|| not_found(sysfs))?;
        let f = self.functions.get(&bdf).ok_or_else(|| not_found(sysfs))?;
        Ok(Box::new(FakeDevice {
            bdf,
            bar0_len: f.bar0_len,
            ids: (f.vendor, f.device),
            ranges: self.iova_ranges.clone(),
            state: self.state.clone(),
            mapped: false,
        }))
    }
    fn alloc(&self, len: usize, _huge: bool) -> io::Result<Memory> {
        Ok(Memory::Heap(vec![0; len.div_ceil(4096) * 4096]))
    }
}

/// An opened function of the twin.
struct FakeDevice {
    bdf: String,
    bar0_len: u64,
    ids: (u16, u16),
    ranges: Vec<Range<u64>>,
    state: Arc<Mutex<FakeState>>,
    mapped: bool,
}

impl FakeDevice {
    fn state(&self) -> io::Result<std::sync::MutexGuard<'_, FakeState>> {
        self.state.lock().map_err(|_| io::Error::other("twin state poisoned"))
    }
}

impl Device for FakeDevice {
    fn ids(&self) -> io::Result<(u16, u16)> {
        Ok(self.ids)
    }
    fn enable(&self) -> io::Result<()> {
        self.state()?.enabled = true;
        Ok(())
    }
    fn bar0_len(&self) -> Option<u64> {
        (self.bar0_len > 0).then_some(self.bar0_len)
    }
    fn map_bar0(&mut self) -> io::Result<()> {
        let words = (self.bar0_len / 4) as usize;
        self.state()?.regs.entry(self.bdf.clone()).or_insert_with(|| vec![0; words]);
        self.mapped = true;
        Ok(())
    }
    fn read32(&self, off: u64) -> io::Result<u32> {
        let s = self.state()?;
        let regs = s.regs.get(&self.bdf).filter(|_| self.mapped).ok_or_else(|| io::Error::other("BAR0 not mapped"))?;
        regs.get((off / 4) as usize).copied().ok_or_else(|| io::Error::other("read past BAR0"))
    }
    fn write32(&self, off: u64, val: u32) -> io::Result<()> {
        let mut s = self.state()?;
        let regs = s.regs.get_mut(&self.bdf).ok_or_else(|| io::Error::other("BAR0 not mapped"))?;
        *regs.get_mut((off / 4) as usize).ok_or_else(|| io::Error::other("write past BAR0"))? = val;
        Ok(())
    }
    fn iova_ranges(&self) -> Vec<Range<u64>> {
        self.ranges.clone()
    }
    fn map_dma(&self, iova: u64, mem: &Memory) -> io::Result<()> {
        let mut s = self.state()?;
        let end = iova + mem.len() as u64;
        if s.maps.iter().any(|(&a, &l)| a < end && iova < a + l as u64) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "IOVA range already mapped"));
        }
        s.maps.insert(iova, mem.len());
        Ok(())
    }
    fn unmap_dma(&self, iova: u64, len: usize) -> io::Result<()> {
        match self.state()?.maps.remove(&iova) {
            Some(l) if l == len => Ok(()),
            _ => Err(io::Error::new(io::ErrorKind::NotFound, "no such mapping")),
        }
    }
    fn enable_msi(&mut self) -> io::Result<()> {
        self.state()?.msi_enabled = true;
        Ok(())
    }
    fn take_irqs(&self) -> io::Result<u64> {
        Ok(std::mem::take(&mut self.state()?.pending_irqs))
    }
}
