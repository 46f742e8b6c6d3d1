//! The event queue: completion events and asynchronous errors as EQEs in a host ring, and the interrupt
//! line that an armed EQ raises on its next EQE.

use super::Nic;
use crate::hostmem::Dma;
use wire::contract::cqe::owner_for;
use wire::contract::eqe::{EqeRepr, EventKind, EQE_LEN};
use wire::contract::regs::Counter;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eq {
    pub iova: u64,
    pub log_size: u8,
    /// EQEs written (free-running).
    pub pi: u32,
    /// Consumer counter from the driver's doorbell.
    pub ci: u32,
    /// Raise the interrupt on the next EQE.
    pub armed: bool,
}

impl Eq {
    pub fn new(iova: u64, log_size: u8) -> Self {
        Eq { iova, log_size, pi: 0, ci: 0, armed: false }
    }

    /// Writes one EQE: one 16-byte DMA write, the owner byte its last byte. Its slot counter and owner bit;
    /// `None` when the ring is full.
    pub fn push(&mut self, kind: EventKind, obj: u32, mem: &mut dyn Dma) -> Option<(u32, u8)> {
        if self.pi.wrapping_sub(self.ci) >= 1 << self.log_size {
            return None;
        }
        let (n, slot) = (self.pi, u64::from(self.pi & ((1 << self.log_size) - 1)));
        let owner = owner_for(n, self.log_size);
        mem.dma_write(self.iova + slot * EQE_LEN as u64, &EqeRepr { kind: kind as u8, obj, owner }.to_bytes());
        self.pi = self.pi.wrapping_add(1);
        Some((n, owner))
    }
}

impl Nic {
    /// Reports an event: an EQE, and the interrupt if the EQ is armed. Without an EQ (or with a full one)
    /// the event is counted as lost.
    pub(crate) fn raise(&mut self, kind: EventKind, obj: u32, mem: &mut dyn Dma) {
        let Some(eq) = self.eq.as_mut() else {
            self.count(Counter::events_lost);
            return;
        };
        let Some((slot, owner)) = eq.push(kind, obj, mem) else {
            self.count(Counter::events_lost);
            return;
        };
        let fire = std::mem::take(&mut eq.armed);
        self.count(Counter::events);
        self.emit(|| super::Output::Eqe { slot, owner, kind, obj });
        if fire {
            self.irq = true;
            self.count(Counter::interrupts);
            self.emit(|| super::Output::Interrupt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hostmem::{DmaError, HostMemory};

    /// Host memory that keeps every write the NIC makes, and passes it on.
    struct Writes(Vec<(u64, usize)>, HostMemory);

    impl Dma for Writes {
        fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError> {
            self.1.dma_read(iova, buf)
        }
        fn dma_write(&mut self, iova: u64, data: &[u8]) {
            self.0.push((iova, data.len()));
            self.1.dma_write(iova, data);
        }
    }

    /// An EQE is one 16-byte write, the owner byte last; an armed EQ raises the interrupt once.
    #[test]
    fn an_eqe_is_one_write_with_the_owner_byte_last() {
        let mem = HostMemory::new();
        let ring = mem.alloc(4 * EQE_LEN);
        let mut nic = Nic::new(crate::nic::NicConfig::default());
        nic.eq = Some(Eq::new(ring, 2));
        nic.eq.as_mut().unwrap().armed = true;
        let mut w = Writes(Vec::new(), mem.clone());
        nic.raise(EventKind::CqError, 3, &mut w);
        nic.raise(EventKind::QpFatal, 4, &mut w);
        assert_eq!(w.0, [(ring, EQE_LEN), (ring + EQE_LEN as u64, EQE_LEN)]);
        let mut e = [0u8; EQE_LEN];
        mem.read(ring, &mut e).unwrap();
        assert_eq!(EqeRepr::from_bytes(&e).unwrap(), EqeRepr { kind: 1, obj: 3, owner: 1 });
        assert_eq!(e[EQE_LEN - 1], 1, "the owner byte is the last");
        assert!(nic.take_irq() && !nic.take_irq(), "one interrupt: the EQ disarms");
    }
}
