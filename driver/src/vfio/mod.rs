//! The VFIO backend: a PCI function bound to vfio-pci, driven from user space through the kernel's VFIO
//! (`pci-driver`'s VFIO backend for the ioctls, `memmap2` for DMA memory).
//!
//! `Function` is the generic layer: it diagnoses the function's setup through sysfs before opening it (so
//! a missing IOMMU, an unbound device or a non-viable group get a message that says what to do), maps
//! BAR0, allocates DMA memory and maps it at IOVAs it chooses, and routes MSI vector 0 to an eventfd.
//! `VfioBackend` is a ferrite NIC on top of it: it refuses a function whose PCI IDs or BAR0 are not a
//! ferrite NIC's, and `Context::open` then checks the register blocks and the contract version.
//!
//! Every system call goes through `sys` (the real host, or its twin `fake` in tests).

pub mod fake;
mod sys;

pub use sys::{Device, Linux, Memory, Sys, UserPages};

use crate::{Backend, Error};
use model::Regions;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use wire::contract::pci;
use wire::contract::regs::BAR0_LEN;

/// Where sysfs lists PCI functions.
pub const PCI_DEVICES: &str = "/sys/bus/pci/devices";
/// VFIO's container node; it exists once the vfio modules are loaded.
pub const VFIO_CONTAINER: &str = "/dev/vfio/vfio";
/// The first IOVA handed out: low enough for devices with a narrow DMA mask, and never 0.
pub const IOVA_BASE: u64 = 0x10_0000;
const PAGE: u64 = 4096;

/// A PCI address in the long form sysfs uses (`0000:01:00.0`); the domain may be left out.
pub fn normalize_bdf(bdf: &str) -> Result<String, Error> {
    let long = if bdf.matches(':').count() == 1 { format!("0000:{bdf}") } else { bdf.to_string() };
    let ok = long.len() == 12
        && long.char_indices().all(|(i, c)| match i {
            4 | 7 => c == ':',
            10 => c == '.',
            11 => ('0'..='7').contains(&c),
            _ => c.is_ascii_hexdigit(),
        });
    if !ok {
        return Err(Error::Vfio(format!("{bdf:?} is not a PCI address such as 0000:01:00.0")));
    }
    Ok(long.to_ascii_lowercase())
}

/// How to hand a function to vfio-pci, for the messages.
pub fn bind_help(bdf: &str) -> String {
    format!(
        "bind it to vfio-pci (as root): modprobe vfio-pci; echo vfio-pci > {PCI_DEVICES}/{bdf}/driver_override; \
         echo {bdf} > {PCI_DEVICES}/{bdf}/driver/unbind (if bound); echo {bdf} > /sys/bus/pci/drivers_probe"
    )
}

/// One PCI function as sysfs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciFunction {
    pub bdf: String,
    pub vendor: u16,
    pub device: u16,
    /// The bound driver's name, if any.
    pub driver: Option<String>,
    /// The IOMMU group, if the IOMMU is on.
    pub group: Option<u32>,
}

impl PciFunction {
    pub fn is_ferrite(&self) -> bool {
        (self.vendor, self.device) == (pci::VENDOR_ID, pci::DEVICE_ID)
    }
}

fn hex_attr(sys: &dyn Sys, path: &Path) -> Option<u16> {
    let s = sys.read_attr(path).ok()?;
    u16::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

fn link_name(sys: &dyn Sys, path: &Path) -> Option<String> {
    sys.read_link(path).ok().and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
}

/// What sysfs says about `bdf` (normalized), if it exists.
pub fn function(sys: &dyn Sys, bdf: &str) -> Option<PciFunction> {
    let dir = Path::new(PCI_DEVICES).join(bdf);
    if !sys.exists(&dir) {
        return None;
    }
    Some(PciFunction {
        bdf: bdf.to_string(),
        vendor: hex_attr(sys, &dir.join("vendor"))?,
        device: hex_attr(sys, &dir.join("device"))?,
        driver: link_name(sys, &dir.join("driver")),
        group: link_name(sys, &dir.join("iommu_group")).and_then(|g| g.parse().ok()),
    })
}

/// Every PCI function, in address order.
pub fn functions(sys: &dyn Sys) -> Result<Vec<PciFunction>, Error> {
    let names = sys.list_dir(Path::new(PCI_DEVICES)).map_err(|e| Error::Vfio(format!("{PCI_DEVICES}: {e}")))?;
    Ok(names.iter().filter_map(|n| function(sys, n)).collect())
}

/// Drivers a function may have while another function of its group is used through VFIO.
fn harmless_driver(d: &str) -> bool {
    matches!(d, "vfio-pci" | "pci-stub" | "pcieport")
}

/// Checks, through sysfs and the device nodes, everything that must hold before `bdf` can be opened;
/// each failure says what is missing and what to do. Returns the function and its group.
pub fn diagnose(sys: &dyn Sys, bdf: &str) -> Result<(PciFunction, u32), Error> {
    let f = function(sys, bdf).ok_or_else(|| {
        Error::Vfio(format!("no PCI function {bdf} ({PCI_DEVICES}; `ferrite devices --all` lists them)"))
    })?;
    let group = f.group.ok_or_else(|| {
        Error::Vfio(format!(
            "{bdf} has no IOMMU group: the IOMMU is off. Enable VT-d / AMD-Vi in the firmware and boot with \
             intel_iommu=on (or amd_iommu=on)"
        ))
    })?;
    if !sys.exists(Path::new(VFIO_CONTAINER)) {
        return Err(Error::Vfio(format!("no {VFIO_CONTAINER}: the VFIO modules are not loaded ({})", bind_help(bdf))));
    }
    match f.driver.as_deref() {
        Some("vfio-pci") => {}
        Some(d) => return Err(Error::Vfio(format!("{bdf} is bound to {d}, not vfio-pci: {}", bind_help(bdf)))),
        None => return Err(Error::Vfio(format!("{bdf} is bound to no driver: {}", bind_help(bdf)))),
    }
    let members = Path::new("/sys/kernel/iommu_groups").join(group.to_string()).join("devices");
    let others: Vec<String> = sys
        .list_dir(&members)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| function(sys, &m))
        .filter_map(|m| match m.driver {
            Some(d) if !harmless_driver(&d) => Some(format!("{} (bound to {d})", m.bdf)),
            _ => None,
        })
        .collect();
    if !others.is_empty() {
        return Err(Error::Vfio(format!(
            "IOMMU group {group} is not viable: {} must be bound to vfio-pci too, or unbound, before {bdf} can \
             be used (the IOMMU cannot tell the group's functions apart)",
            others.join(", ")
        )));
    }
    let node = PathBuf::from(format!("/dev/vfio/{group}"));
    if let Err(e) = sys.try_open_rw(&node) {
        let why = match e.kind() {
            std::io::ErrorKind::PermissionDenied => {
                format!("permission denied: run as root, or give your user the node (chown $USER {})", node.display())
            }
            std::io::ErrorKind::NotFound => "it does not exist".to_string(),
            _ if e.raw_os_error() == Some(16) => "another process has the group open (EBUSY)".to_string(),
            _ => e.to_string(),
        };
        return Err(Error::Vfio(format!("cannot open {}: {why}", node.display())));
    }
    Ok((f, group))
}

/// The IOVA allocator: the next free IOVA and the ranges the IOMMU accepts.
struct IovaSpace {
    next: u64,
    ranges: Vec<std::ops::Range<u64>>,
}

/// A vfio-pci function opened for use: BAR0, DMA memory at IOVAs of our choosing, MSI vector 0.
pub struct Function {
    pub info: PciFunction,
    pub group: u32,
    sys: Arc<dyn Sys>,
    dev: Box<dyn Device>,
    /// Held while mapping or unmapping.
    iovas: Mutex<IovaSpace>,
    /// The DMA memory handed out, by IOVA; threads on different queues touch nothing in common in it.
    maps: Regions<Memory>,
    start: Instant,
    /// Use 2 MiB pages for allocations of that size or more, when the host has them.
    pub huge_pages: bool,
}

fn io(what: &str, bdf: &str, e: std::io::Error) -> Error {
    Error::Vfio(format!("{bdf}: {what}: {e}"))
}

impl Function {
    /// Opens `bdf` on the real host.
    pub fn open(bdf: &str) -> Result<Self, Error> {
        Self::open_with(Arc::new(Linux), bdf)
    }

    /// Opens `bdf` through `sys`: diagnosis, then the VFIO container, group and device; BAR0 mapped,
    /// memory decoding and bus mastering on, MSI vector 0 on an eventfd.
    pub fn open_with(sys: Arc<dyn Sys>, bdf: &str) -> Result<Self, Error> {
        let bdf = normalize_bdf(bdf)?;
        let (info, group) = diagnose(sys.as_ref(), &bdf)?;
        let dir = Path::new(PCI_DEVICES).join(&bdf);
        let mut dev = sys.open_device(&dir).map_err(|e| io("opening it through VFIO", &bdf, e))?;
        if dev.bar0_len().is_none() {
            return Err(Error::Vfio(format!("{bdf} has no BAR0")));
        }
        dev.map_bar0().map_err(|e| io("mapping BAR0", &bdf, e))?;
        dev.enable().map_err(|e| io("enabling memory and bus mastering", &bdf, e))?;
        dev.enable_msi().map_err(|e| io("routing MSI to an eventfd", &bdf, e))?;
        let ranges = dev.iova_ranges();
        Ok(Function {
            info,
            group,
            sys,
            dev,
            iovas: Mutex::new(IovaSpace { next: IOVA_BASE, ranges }),
            maps: Regions::new(),
            start: Instant::now(),
            huge_pages: true,
        })
    }

    pub fn bar0_len(&self) -> u64 {
        self.dev.bar0_len().unwrap_or(0)
    }

    /// Vendor and device ID as the function's config space holds them (through VFIO, not sysfs).
    pub fn config_ids(&self) -> Result<(u16, u16), Error> {
        self.dev.ids().map_err(|e| io("reading config space", &self.info.bdf, e))
    }

    pub fn read32(&self, off: u64) -> Result<u32, Error> {
        self.dev.read32(off).map_err(|e| io("BAR0 read", &self.info.bdf, e))
    }

    pub fn write32(&self, off: u64, val: u32) -> Result<(), Error> {
        self.dev.write32(off, val).map_err(|e| io("BAR0 write", &self.info.bdf, e))
    }

    /// Zeroed memory of `len` bytes mapped for the device at a fresh IOVA (page-aligned, with an unmapped
    /// page after it so an overrun faults in the IOMMU instead of reaching the next buffer).
    pub fn dma_alloc(&self, len: usize) -> Result<u64, Error> {
        if len == 0 {
            return Err(Error::InvalidArgument("zero-length DMA buffer"));
        }
        let mem = self.sys.alloc(len, self.huge_pages).map_err(|e| io("allocating DMA memory", &self.info.bdf, e))?;
        self.insert(mem)
    }

    /// Maps the pages around `[addr, addr + len)` of this process at a fresh IOVA; returns the IOVA of
    /// `addr`. The caller keeps that memory alive and in place until `unmap_user` (`Pd::reg_user`).
    pub fn map_user(&self, addr: *const u8, len: usize) -> Result<u64, Error> {
        if len == 0 {
            return Err(Error::InvalidArgument("zero-length user buffer"));
        }
        let (pages, offset) = UserPages::around(addr, len);
        Ok(self.insert(Memory::User(pages))? + offset as u64)
    }

    /// Undoes `map_user` for the IOVA it returned.
    pub fn unmap_user(&self, iova: u64) -> Result<(), Error> {
        self.dma_free(iova & !(PAGE - 1))
    }

    /// Maps `mem` at the next free IOVA (aligned to its size class, a guard page after it).
    fn insert(&self, mem: Memory) -> Result<u64, Error> {
        let size = mem.len() as u64;
        let mut d = self.iovas.lock().map_err(|_| Error::Vfio("DMA table poisoned".into()))?;
        let align = if size >= 2 << 20 { 2 << 20 } else { PAGE };
        let start = d.next.div_ceil(align) * align;
        let fits = |r: &std::ops::Range<u64>| r.start <= start && start.checked_add(size).is_some_and(|e| e <= r.end);
        if !d.ranges.is_empty() && !d.ranges.iter().any(fits) {
            return Err(Error::Vfio(format!("{}: no IOVA space left for {size} bytes at {start:#x}", self.info.bdf)));
        }
        self.dev.map_dma(start, &mem).map_err(|e| io("IOMMU map", &self.info.bdf, e))?;
        d.next = start + size.div_ceil(PAGE) * PAGE + PAGE;
        self.maps.insert(start, mem);
        Ok(start)
    }

    /// Unmaps and releases what `dma_alloc` returned at `iova`.
    pub fn dma_free(&self, iova: u64) -> Result<(), Error> {
        let _d = self.iovas.lock().map_err(|_| Error::Vfio("DMA table poisoned".into()))?;
        let mem = self.maps.remove(iova).ok_or(Error::Dma { iova, len: 0 })?;
        // The memory is dropped (with the last access that holds it) only after the device has lost
        // access to it.
        let len = mem.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len();
        self.dev.unmap_dma(iova, len).map_err(|e| io("IOMMU unmap", &self.info.bdf, e))
    }

    pub fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), Error> {
        self.maps.with(iova, buf.len(), |m| buf.copy_from_slice(m)).ok_or(Error::Dma { iova, len: buf.len() })
    }

    pub fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), Error> {
        self.maps.with(iova, data.len(), |m| m.copy_from_slice(data)).ok_or(Error::Dma { iova, len: data.len() })
    }

    /// Interrupts (MSI vector 0) since the last call.
    pub fn take_irqs(&self) -> Result<u64, Error> {
        self.dev.take_irqs().map_err(|e| io("reading the interrupt eventfd", &self.info.bdf, e))
    }

    pub fn elapsed_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        self.maps.for_each(|iova, mem| {
            let _ = self.dev.unmap_dma(iova, mem.len());
        });
    }
}

/// A ferrite NIC in a PCIe slot, through VFIO.
pub struct VfioBackend {
    f: Function,
}

impl VfioBackend {
    /// Opens the ferrite NIC at `bdf` on the real host.
    pub fn open(bdf: &str) -> Result<Self, Error> {
        Self::open_with(Arc::new(Linux), bdf)
    }

    /// Opens `bdf` through `sys`, refusing anything that is not a ferrite NIC by its PCI IDs and BAR0.
    pub fn open_with(sys: Arc<dyn Sys>, bdf: &str) -> Result<Self, Error> {
        let f = Function::open_with(sys, bdf)?;
        let i = &f.info;
        if !i.is_ferrite() {
            return Err(Error::Vfio(format!(
                "{} is {:04x}:{:04x}, not a ferrite NIC ({:04x}:{:04x})",
                i.bdf,
                i.vendor,
                i.device,
                pci::VENDOR_ID,
                pci::DEVICE_ID
            )));
        }
        if f.bar0_len() < u64::from(BAR0_LEN) {
            return Err(Error::Vfio(format!(
                "{}: BAR0 is {} bytes; a ferrite NIC's is {BAR0_LEN} (an older or partial bitstream?)",
                i.bdf,
                f.bar0_len()
            )));
        }
        Ok(VfioBackend { f })
    }

    pub fn function(&self) -> &Function {
        &self.f
    }
}

impl Backend for VfioBackend {
    fn mmio_read(&self, off: u32) -> u32 {
        // A read that fails reads as all ones, as a PCIe read of a device that is gone does.
        self.f.read32(u64::from(off)).unwrap_or(u32::MAX)
    }
    fn mmio_write(&self, off: u32, val: u32) {
        let _ = self.f.write32(u64::from(off), val);
    }
    fn dma_alloc(&self, len: usize) -> Result<u64, Error> {
        self.f.dma_alloc(len)
    }
    fn dma_free(&self, iova: u64) {
        let _ = self.f.dma_free(iova);
    }
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), Error> {
        self.f.dma_read(iova, buf)
    }
    fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), Error> {
        self.f.dma_write(iova, data)
    }
    fn progress(&self) -> bool {
        // Hardware works on its own; give it a moment.
        std::thread::yield_now();
        true
    }
    fn now_ns(&self) -> u64 {
        self.f.elapsed_ns()
    }
    fn take_interrupt(&self) -> bool {
        self.f.take_irqs().unwrap_or(0) > 0
    }
    fn map_user(&self, addr: *const u8, len: usize) -> Result<u64, Error> {
        self.f.map_user(addr, len)
    }
    fn unmap_user(&self, iova: u64) -> Result<(), Error> {
        self.f.unmap_user(iova)
    }
}

#[cfg(test)]
mod tests;
