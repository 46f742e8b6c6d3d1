//! The RTL backend: the driver's `Backend` on the Verilated NIC core (`sim::core::CoreSim`). The core is so
//! far its register file and command unit, so what runs on it is the control path: opening the device, PDs,
//! MRs, CQs, QPs and every state change, with the model's statuses. Posting work waits for the engines.

use crate::{Backend, Error};
use sim::core::CoreSim;
use std::sync::{Mutex, MutexGuard};

/// Cycles a `progress` call runs.
const CYCLES_PER_PROGRESS: u32 = 32;

/// The Verilated core with `qps` QPs and its host memory.
pub struct RtlBackend {
    core: Mutex<CoreSim>,
    ns_per_cycle: u64,
}

impl RtlBackend {
    /// The core with `qps` QPs (one the sim crate builds: 16 or 1024).
    pub fn new(qps: u32) -> Self {
        RtlBackend { core: Mutex::new(CoreSim::new(qps)), ns_per_cycle: u64::from(hdl::core::info(qps).ns_per_cycle) }
    }

    fn core(&self) -> MutexGuard<'_, CoreSim> {
        crate::verbs::lock(&self.core)
    }

    /// Clock cycles the core has run.
    pub fn cycles(&self) -> u64 {
        self.core().cycles()
    }
}

/// The model NIC that is the RTL core's twin: the same profile, port and build.
pub fn model_twin(qps: u32) -> model::NicConfig {
    let i = hdl::core::info(qps);
    model::NicConfig { profile: i.profile, port_mbps: i.port_mbps, build_id: i.build_id, checks: true }
}

impl Backend for RtlBackend {
    fn mmio_read(&self, off: u32) -> u32 {
        self.core().mmio_read(off)
    }

    fn mmio_write(&self, off: u32, val: u32) {
        self.core().mmio_write(off, val)
    }

    fn dma_alloc(&self, len: usize) -> Result<u64, Error> {
        Ok(self.core().mem.alloc(len))
    }

    fn dma_free(&self, iova: u64) {
        self.core().mem.free(iova);
    }

    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), Error> {
        self.core().mem.read(iova, buf).map_err(|_| Error::Dma { iova, len: buf.len() })
    }

    fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), Error> {
        self.core().mem.write(iova, data).map_err(|_| Error::Dma { iova, len: data.len() })
    }

    fn progress(&self) -> bool {
        let mut c = self.core();
        for _ in 0..CYCLES_PER_PROGRESS {
            c.step();
        }
        true
    }

    fn now_ns(&self) -> u64 {
        self.core().cycles() * self.ns_per_cycle
    }

    fn take_interrupt(&self) -> bool {
        // The core raises no interrupts yet (no EQ writer).
        false
    }
}
