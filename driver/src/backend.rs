//! The one thing the verbs need from a device: MMIO, DMA memory and a way to let it make progress.
//! The golden model implements it here; the RTL simulation and VFIO hardware implement the same trait.

use crate::realtime::{DgramLink, RealTime};
use crate::Error;
use model::net::World;
use model::{HostMemory, PostedWrites};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// A device as the driver sees it.
pub trait Backend: Send + Sync {
    /// A 32-bit register read from BAR0.
    fn mmio_read(&self, off: u32) -> u32;
    /// A 32-bit register write to BAR0.
    fn mmio_write(&self, off: u32, val: u32);
    /// Allocates zeroed DMA-able memory; returns its IOVA.
    fn dma_alloc(&self, len: usize) -> Result<u64, Error>;
    fn dma_free(&self, iova: u64);
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), Error>;
    fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), Error>;
    /// Lets the device work for a while (a simulation runs its next events; hardware waits briefly).
    /// Returns false when the device has nothing left to do on its own.
    fn progress(&self) -> bool;
    /// The device's notion of time, in nanoseconds.
    fn now_ns(&self) -> u64;
    /// True once for each interrupt the device raised since the last call (MSI-X vector 0 on hardware).
    fn take_interrupt(&self) -> bool;
    /// Maps `len` bytes of this process's memory at `addr` for the device; returns their IOVA. The caller
    /// keeps the memory alive and in place until `unmap_user` (`Pd::reg_user` ties it to a borrow). A
    /// device that cannot reach the process's memory (the model, whose memory is its own) refuses.
    fn map_user(&self, _addr: *const u8, _len: usize) -> Result<u64, Error> {
        Err(Error::InvalidArgument("this backend's device cannot reach the process's memory: use alloc_buf"))
    }
    /// Undoes `map_user`.
    fn unmap_user(&self, iova: u64) -> Result<(), Error> {
        Err(Error::Dma { iova, len: 0 })
    }
}

/// A simulated `World` shared by its NICs' backends and the code that drives it, across threads.
pub type SharedWorld = Arc<Mutex<World>>;

/// Wraps `world` for sharing.
pub fn shared(world: World) -> SharedWorld {
    Arc::new(Mutex::new(world))
}

/// The world, whether or not a thread that held it panicked (the simulation never leaves it half-changed
/// on a panic of the caller's).
pub fn lock_world(world: &Mutex<World>) -> MutexGuard<'_, World> {
    crate::verbs::lock(world)
}

/// One NIC of a simulated `World`: stepped event by event, or, attached to a real link, in real time.
/// Host memory is reached through its own handle, outside the world's lock: the driver writes WQEs and
/// reads CQEs while another thread runs the device, as CPUs do while hardware works; a doorbell rung
/// while the world is busy is posted for its next step.
pub struct ModelBackend {
    world: SharedWorld,
    node: usize,
    mem: HostMemory,
    posted: PostedWrites,
    realtime: Option<RealTime>,
}

impl ModelBackend {
    pub fn new(world: SharedWorld, node: usize) -> Self {
        let (mem, posted) = {
            let w = lock_world(&world);
            (w.nodes[node].mem.clone(), w.nodes[node].posted.clone())
        };
        ModelBackend { world, node, mem, posted, realtime: None }
    }

    /// The NIC of an attached world (`World::attached`) on `link`, running in real time.
    pub fn attached(world: SharedWorld, link: DgramLink) -> Self {
        ModelBackend { realtime: Some(RealTime::new(link)), ..ModelBackend::new(world, 0) }
    }
}

impl ModelBackend {
    fn world(&self) -> MutexGuard<'_, World> {
        lock_world(&self.world)
    }
}

impl Backend for ModelBackend {
    fn mmio_read(&self, off: u32) -> u32 {
        self.world().mmio_read(self.node, off)
    }

    fn mmio_write(&self, off: u32, val: u32) {
        match self.world.try_lock() {
            Ok(mut w) => w.mmio_write(self.node, off, val),
            Err(TryLockError::Poisoned(p)) => p.into_inner().mmio_write(self.node, off, val),
            // The world is busy in another thread: post the write, as PCIe does, for its next step.
            Err(TryLockError::WouldBlock) => self.posted.post(off, val),
        }
    }

    fn dma_alloc(&self, len: usize) -> Result<u64, Error> {
        Ok(self.mem.alloc(len))
    }

    fn dma_free(&self, iova: u64) {
        self.mem.free(iova);
    }

    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), Error> {
        self.mem.read(iova, buf).map_err(|_| Error::Dma { iova, len: buf.len() })
    }

    fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), Error> {
        self.mem.write(iova, data).map_err(|_| Error::Dma { iova, len: data.len() })
    }

    fn progress(&self) -> bool {
        match &self.realtime {
            None => match self.world.try_lock() {
                Ok(mut w) => w.step(),
                Err(TryLockError::Poisoned(p)) => p.into_inner().step(),
                // Another thread is running the device (or ringing it): do not queue behind it.
                Err(TryLockError::WouldBlock) => {
                    std::thread::yield_now();
                    true
                }
            },
            Some(rt) => {
                // A real link can always bring something: never idle.
                rt.pump(&self.world, std::time::Duration::from_millis(1));
                true
            }
        }
    }

    fn now_ns(&self) -> u64 {
        self.world().now / model::PS_PER_NS
    }

    fn take_interrupt(&self) -> bool {
        self.world().nodes[self.node].nic.take_irq()
    }
}
