//! Every system call of the VFIO backend, behind two traits: `Sys` (sysfs, device nodes, memory) and
//! `Device` (one opened vfio-pci function: config space, BAR0, IOMMU mappings, MSI through an eventfd).
//! `Linux` is the real thing, built on `pci-driver`'s VFIO backend and `memmap2`; `fake::FakeSys` is its
//! twin, so that the diagnosis and the backend run in tests without a device. The `unsafe` of the VFIO
//! backend is here and nowhere else.

use pci_driver::backends::vfio::VfioPciDevice;
use pci_driver::device::PciDevice;
use pci_driver::regions::{MappedOwningPciRegion, PciRegion, Permissions};
use std::fs::File;
use std::io::{self, Read};
use std::ops::Range;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Host memory the device may reach once it is mapped in the IOMMU.
pub enum Memory {
    Mapped(memmap2::MmapMut),
    /// The twin's memory.
    Heap(Vec<u8>),
    /// The application's own pages (`Pd::reg_user`), whole pages around its buffer.
    User(UserPages),
}

/// Pages of the application's memory, lent to the driver for as long as an MR borrows them.
pub struct UserPages {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: `UserPages` is a pointer and a length; the memory belongs to a buffer the application lent for
// the MR's lifetime (`UserMr<'a>` holds the `&'a mut [u8]`), and the driver's accesses to it are serialized
// by its mapping's lock in the DMA table.
unsafe impl Send for UserPages {}
// SAFETY: as for `Send`: shared access goes through its mapping's lock.
unsafe impl Sync for UserPages {}

impl UserPages {
    /// The pages that hold `[addr, addr + len)`.
    pub fn around(addr: *const u8, len: usize) -> (Self, usize) {
        const PAGE: usize = 4096;
        let start = addr as usize & !(PAGE - 1);
        let end = (addr as usize + len).div_ceil(PAGE) * PAGE;
        (UserPages { ptr: start as *mut u8, len: end - start }, addr as usize - start)
    }
}

impl Memory {
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Memory::Mapped(m) => m,
            Memory::Heap(v) => v,
            // SAFETY: the pages are live and unmoved while the MR that lent them exists (`UserPages`).
            Memory::User(u) => unsafe { std::slice::from_raw_parts(u.ptr, u.len) },
        }
    }
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            Memory::Mapped(m) => m,
            Memory::Heap(v) => v,
            // SAFETY: as in `as_slice`; the `&mut self` is the only access through the driver.
            Memory::User(u) => unsafe { std::slice::from_raw_parts_mut(u.ptr, u.len) },
        }
    }
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl AsMut<[u8]> for Memory {
    fn as_mut(&mut self) -> &mut [u8] {
        self.as_mut_slice()
    }
}

/// The host: sysfs, device nodes, memory.
pub trait Sys: Send + Sync {
    /// A sysfs attribute, trimmed.
    fn read_attr(&self, path: &Path) -> io::Result<String>;
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;
    /// The names in a directory.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>>;
    fn exists(&self, path: &Path) -> bool;
    /// Opens `path` for reading and writing and closes it again: may this user use it?
    fn try_open_rw(&self, path: &Path) -> io::Result<()>;
    /// Opens the vfio-pci function whose sysfs directory is `sysfs` in a container of its own.
    fn open_device(&self, sysfs: &Path) -> io::Result<Box<dyn Device>>;
    /// `len` bytes of zeroed memory, on 2 MiB pages when `huge` and the host has them to give.
    fn alloc(&self, len: usize, huge: bool) -> io::Result<Memory>;
}

/// One opened vfio-pci function.
pub trait Device: Send + Sync {
    /// Vendor and device ID from config space.
    fn ids(&self) -> io::Result<(u16, u16)>;
    /// Sets Memory Space Enable and Bus Master Enable in the command register.
    fn enable(&self) -> io::Result<()>;
    /// BAR0's length, if the function has a BAR0.
    fn bar0_len(&self) -> Option<u64>;
    /// Maps BAR0 into this process; `read32` and `write32` work once it is.
    fn map_bar0(&mut self) -> io::Result<()>;
    fn read32(&self, off: u64) -> io::Result<u32>;
    fn write32(&self, off: u64, val: u32) -> io::Result<()>;
    /// The IOVA ranges the IOMMU accepts.
    fn iova_ranges(&self) -> Vec<Range<u64>>;
    /// Maps `mem` at `iova` for the device to read and write. The caller keeps `mem` alive and in place
    /// until `unmap_dma` of the same range.
    fn map_dma(&self, iova: u64, mem: &Memory) -> io::Result<()>;
    fn unmap_dma(&self, iova: u64, len: usize) -> io::Result<()>;
    /// Routes interrupt vector 0 (MSI-X when the function has it, else MSI) to an eventfd
    /// (`VFIO_DEVICE_SET_IRQS`).
    fn enable_msi(&mut self) -> io::Result<()>;
    /// Interrupts since the last call (never blocks).
    fn take_irqs(&self) -> io::Result<u64>;
}

/// The real host.
pub struct Linux;

impl Sys for Linux {
    fn read_attr(&self, path: &Path) -> io::Result<String> {
        Ok(std::fs::read_to_string(path)?.trim().to_string())
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::read_link(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<String>> {
        let mut v: Vec<String> =
            std::fs::read_dir(path)?.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into())).collect();
        v.sort();
        Ok(v)
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn try_open_rw(&self, path: &Path) -> io::Result<()> {
        std::fs::OpenOptions::new().read(true).write(true).open(path).map(drop)
    }
    fn open_device(&self, sysfs: &Path) -> io::Result<Box<dyn Device>> {
        Ok(Box::new(LinuxDevice { dev: VfioPciDevice::open(sysfs)?, bar0: None, msi: None }))
    }
    fn alloc(&self, len: usize, huge: bool) -> io::Result<Memory> {
        // The IOMMU maps whole pages.
        const PAGE: usize = 4096;
        const HUGE: usize = 2 << 20;
        if huge && len >= HUGE {
            let rounded = len.div_ceil(HUGE) * HUGE;
            if let Ok(m) = memmap2::MmapOptions::new().len(rounded).huge(Some(21)).map_anon() {
                return Ok(Memory::Mapped(m));
            }
        }
        Ok(Memory::Mapped(memmap2::MmapOptions::new().len(len.max(1).div_ceil(PAGE) * PAGE).map_anon()?))
    }
}

struct LinuxDevice {
    dev: VfioPciDevice,
    bar0: Option<MappedOwningPciRegion>,
    msi: Option<File>,
}

fn no_bar0() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "BAR0 is not mapped")
}

impl Device for LinuxDevice {
    fn ids(&self) -> io::Result<(u16, u16)> {
        let c = self.dev.config();
        Ok((c.vendor_id().read()?, c.device_id().read()?))
    }
    fn enable(&self) -> io::Result<()> {
        let c = self.dev.config();
        c.command().memory_space_enable().write(true)?;
        c.command().bus_master_enable().write(true)
    }
    fn bar0_len(&self) -> Option<u64> {
        self.dev.bar(0).map(|b| b.len())
    }
    fn map_bar0(&mut self) -> io::Result<()> {
        let bar = self.dev.bar(0).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no BAR0"))?;
        let rw = Permissions::new(true, true).ok_or_else(|| io::Error::other("no read-write permission"))?;
        self.bar0 = Some(bar.map(.., rw)?);
        Ok(())
    }
    fn read32(&self, off: u64) -> io::Result<u32> {
        self.bar0.as_ref().ok_or_else(no_bar0)?.read_le_u32(off)
    }
    fn write32(&self, off: u64, val: u32) -> io::Result<()> {
        self.bar0.as_ref().ok_or_else(no_bar0)?.write_le_u32(off, val)
    }
    fn iova_ranges(&self) -> Vec<Range<u64>> {
        self.dev.iommu().valid_iova_ranges().to_vec()
    }
    fn map_dma(&self, iova: u64, mem: &Memory) -> io::Result<()> {
        let rw = Permissions::new(true, true).ok_or_else(|| io::Error::other("no read-write permission"))?;
        // SAFETY: `mem` is a live mapping of `mem.len()` bytes; the backend owns it and keeps it in place
        // until it has called `unmap_dma` for this IOVA range (`Function::dma_free` and `Drop`; an access
        // that began before holds it until then).
        unsafe { self.dev.iommu().map(iova, mem.len(), mem.as_slice().as_ptr(), rw) }
    }
    fn unmap_dma(&self, iova: u64, len: usize) -> io::Result<()> {
        self.dev.iommu().unmap(iova, len)
    }
    fn enable_msi(&mut self) -> io::Result<()> {
        // SAFETY: eventfd(2) takes no pointers; a negative return is an error, anything else a new fd
        // that nothing else owns.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by eventfd and is owned by nothing else.
        let file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
        // MSI-X when the function has it (a ferrite board), MSI otherwise (edu).
        let irqs = self.dev.interrupts();
        let kind = if irqs.msi_x().max() > 0 { irqs.msi_x() } else { irqs.msi() };
        kind.enable(&[file.as_raw_fd()])?;
        self.msi = Some(file);
        Ok(())
    }
    fn take_irqs(&self) -> io::Result<u64> {
        let Some(mut f) = self.msi.as_ref() else { return Ok(0) };
        let mut n = [0u8; 8];
        match f.read(&mut n) {
            Ok(8) => Ok(u64::from_ne_bytes(n)),
            Ok(_) => Ok(0),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e),
        }
    }
}

impl Drop for LinuxDevice {
    fn drop(&mut self) {
        if self.msi.is_some() {
            let irqs = self.dev.interrupts();
            let _ = if irqs.msi_x().max() > 0 { irqs.msi_x().disable() } else { irqs.msi().disable() };
        }
    }
}
