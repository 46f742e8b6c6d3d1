//! Completion queues: CQEs written into a host ring, each in one write with the owner byte last.

use crate::hostmem::Dma;
use wire::contract::cqe::{owner_for, CqeRepr, CQE_LEN};
use wire::contract::regs::doorbell;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cq {
    pub iova: u64,
    pub log_size: u8,
    /// CQEs written (free-running).
    pub pi: u32,
    /// Consumer counter from the driver's doorbell.
    pub ci: u32,
    pub overrun: bool,
    /// Event request from the CQ_ARM doorbell; one event disarms it.
    pub armed: Option<Arm>,
}

/// What an armed CQ reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    /// The next CQE.
    Any,
    /// The next CQE of a solicited message, or an error CQE.
    Solicited,
}

impl Arm {
    /// Decodes a CQ_ARM doorbell value (`doorbell::ARM_ANY`, `ARM_SOLICITED`; anything else disarms).
    pub fn from_doorbell(v: u32) -> Option<Arm> {
        match v {
            doorbell::ARM_ANY => Some(Arm::Any),
            doorbell::ARM_SOLICITED => Some(Arm::Solicited),
            _ => None,
        }
    }

    /// The doorbell value of an arming, as the CQ table keeps it (0 when disarmed).
    pub fn to_doorbell(a: Option<Arm>) -> u32 {
        match a {
            None => 0,
            Some(Arm::Any) => doorbell::ARM_ANY,
            Some(Arm::Solicited) => doorbell::ARM_SOLICITED,
        }
    }

    /// Whether `cqe` fires this arming.
    pub fn fires(self, cqe: &CqeRepr) -> bool {
        self == Arm::Any || cqe.se != 0 || cqe.status != wire::contract::verbs::WcStatus::Success as u8
    }
}

impl Cq {
    pub fn new(iova: u64, log_size: u8) -> Self {
        Cq { iova, log_size, pi: 0, ci: 0, overrun: false, armed: None }
    }

    /// Writes one CQE: one 64-byte DMA write, the owner byte its last byte. The CQE as written (its owner bit
    /// set) and its slot counter; `None` (and the CQ marked overrun) when the ring is full.
    pub fn push(&mut self, mut cqe: CqeRepr, mem: &mut dyn Dma) -> Option<(CqeRepr, u32)> {
        if self.overrun || self.pi.wrapping_sub(self.ci) >= 1 << self.log_size {
            self.overrun = true;
            return None;
        }
        let (n, slot) = (self.pi, u64::from(self.pi & ((1 << self.log_size) - 1)));
        cqe.owner = owner_for(n, self.log_size);
        mem.dma_write(self.iova + slot * CQE_LEN as u64, &cqe.to_bytes());
        self.pi = self.pi.wrapping_add(1);
        Some((cqe, n))
    }

    /// Posts one CQE of a QP that is live (exists, not in ERR) or not: the write (`push`), then what it
    /// raises. A CQE written fires an armed CQ it matches and disarms it; one the full ring refuses reports
    /// the CQ's error the first time only, and takes a live QP to ERR.
    pub fn post(&mut self, cqe: CqeRepr, qp_live: bool, mem: &mut dyn Dma) -> Posted {
        let was_overrun = self.overrun;
        match self.push(cqe, mem) {
            Some(written) => {
                let fire = self.armed.is_some_and(|a| a.fires(&cqe));
                if fire {
                    self.armed = None;
                }
                Posted { written: Some(written), fire, cq_error: false, qp_fatal: false }
            }
            None => Posted { written: None, fire: false, cq_error: !was_overrun, qp_fatal: qp_live },
        }
    }
}

/// What posting a CQE did (`Cq::post`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posted {
    /// The CQE as written (its owner bit set) and its slot counter; `None` when the ring refused it.
    pub written: Option<(CqeRepr, u32)>,
    /// A completion event for the CQ (it was armed for this CQE).
    pub fire: bool,
    /// A CQ error event (the ring overflowed just now).
    pub cq_error: bool,
    /// The CQE's QP goes to ERR with a fatal event (the ring refused a live QP's CQE).
    pub qp_fatal: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hostmem::DmaError;

    /// Host memory that keeps every write the NIC makes.
    #[derive(Default)]
    struct Writes(Vec<(u64, Vec<u8>)>);

    impl Dma for Writes {
        fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), DmaError> {
            Err(DmaError { iova, len: buf.len() })
        }
        fn dma_write(&mut self, iova: u64, data: &[u8]) {
            self.0.push((iova, data.to_vec()));
        }
    }

    /// A CQE is one 64-byte write at its slot, the owner byte its last byte; a full ring takes none.
    #[test]
    fn a_cqe_is_one_write_with_the_owner_byte_last() {
        let mut cq = Cq::new(0x1000, 1);
        let mut w = Writes::default();
        let cqe = CqeRepr { wr_id: 9, ..Default::default() };
        assert!(cq.push(cqe, &mut w).is_some() && cq.push(cqe, &mut w).map(|c| c.1) == Some(1));
        assert_eq!(w.0.len(), 2);
        assert_eq!((w.0[1].0, w.0[1].1.len()), (0x1000 + CQE_LEN as u64, CQE_LEN));
        assert_eq!(w.0[1].1[CQE_LEN - 1], 1, "the owner byte of the first pass, last");
        assert!(cq.push(cqe, &mut w).is_none(), "the ring is full until the driver consumes");
        assert!(cq.overrun && w.0.len() == 2);
    }
}
