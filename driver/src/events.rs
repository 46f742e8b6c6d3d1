//! Completion and asynchronous events (`ibv_req_notify_cq`, `ibv_get_cq_event`, `ibv_get_async_event`):
//! the device's one event queue, read when the interrupt fires, sorted into the two kinds.

use crate::verbs::lock;
use crate::verbs::{Context, Cq};
use crate::Error;
use std::collections::VecDeque;
use std::sync::Mutex;
use wire::contract::cmd::{op, CreateCqRepr};
use wire::contract::cqe::owner_for;
use wire::contract::eqe::{EqeRepr, EventKind, EQE_LEN};
use wire::contract::regs::doorbell;

/// An asynchronous event (`ibv_async_event`, the kinds this device reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncEvent {
    /// `IBV_EVENT_CQ_ERR`: the CQ overran and lost a completion.
    CqError { cqn: u32 },
    /// `IBV_EVENT_QP_FATAL`: the QP went to ERR on its own.
    QpFatal { qpn: u32 },
}

/// EQ ring entries (log2): room for every CQ's event many times over before the driver must look.
const EQ_LOG_SIZE: u8 = 10;

/// The driver's side of the event queue.
pub(crate) struct EventQueue {
    ring: u64,
    /// The consumer counter; held while the queue is read.
    ci: Mutex<u32>,
    completions: Mutex<VecDeque<u32>>,
    asynchronous: Mutex<VecDeque<AsyncEvent>>,
}

impl EventQueue {
    /// Allocates the ring, creates the EQ and arms its interrupt.
    pub(crate) fn create(ctx: &Context) -> Result<Self, Error> {
        let b = &ctx.dev.backend;
        let ring = b.dma_alloc(EQE_LEN << EQ_LOG_SIZE)?;
        ctx.command("CREATE_EQ", op::CREATE_EQ, &CreateCqRepr { log_size: EQ_LOG_SIZE, ring_iova: ring }.to_bytes())?;
        b.mmio_write(doorbell::EQ_DB + doorbell::EQ_ARM, 1);
        Ok(EventQueue { ring, ci: Mutex::new(0), completions: Mutex::default(), asynchronous: Mutex::default() })
    }
}

impl Context {
    fn eq(&self) -> &EventQueue {
        self.dev.events.get().expect("Context::open creates the event queue")
    }

    /// On an interrupt: reads every new EQE, returns the entries to the device and re-arms.
    fn service_interrupt(&self) -> Result<(), Error> {
        let b = &self.dev.backend;
        if !b.take_interrupt() {
            return Ok(());
        }
        let eq = self.eq();
        let mut ci_guard = lock(&eq.ci);
        loop {
            let ci = *ci_guard;
            let addr = eq.ring + u64::from(ci & ((1 << EQ_LOG_SIZE) - 1)) * EQE_LEN as u64;
            let mut raw = [0u8; EQE_LEN];
            b.dma_read(addr, &mut raw)?;
            let e = EqeRepr::from_bytes(&raw).map_err(|_| Error::Dma { iova: addr, len: EQE_LEN })?;
            if e.owner & 1 != owner_for(ci, EQ_LOG_SIZE) {
                break;
            }
            *ci_guard = ci.wrapping_add(1);
            match EventKind::from_u8(e.kind) {
                Some(EventKind::Completion) => lock(&eq.completions).push_back(e.obj),
                Some(EventKind::CqError) => lock(&eq.asynchronous).push_back(AsyncEvent::CqError { cqn: e.obj }),
                Some(EventKind::QpFatal) => lock(&eq.asynchronous).push_back(AsyncEvent::QpFatal { qpn: e.obj }),
                None => {} // A kind from a newer device: skipped.
            }
        }
        b.mmio_write(doorbell::EQ_DB + doorbell::EQ_CI, *ci_guard);
        b.mmio_write(doorbell::EQ_DB + doorbell::EQ_ARM, 1);
        Ok(())
    }

    /// Lets the device run until `take` finds something, `timeout_ns` of device time pass, or the device
    /// has nothing left to do.
    fn wait_event<T>(&self, timeout_ns: u64, take: impl Fn(&EventQueue) -> Option<T>) -> Result<Option<T>, Error> {
        let b = &self.dev.backend;
        let deadline = b.now_ns().saturating_add(timeout_ns);
        loop {
            self.service_interrupt()?;
            if let Some(x) = take(self.eq()) {
                return Ok(Some(x));
            }
            if b.now_ns() > deadline || !b.progress() {
                self.service_interrupt()?;
                return Ok(take(self.eq()));
            }
        }
    }

    /// `ibv_get_cq_event`: the number of the next CQ that raised a completion event, or `None` after
    /// `timeout_ns`. Each event answers one `Cq::req_notify`.
    pub fn get_cq_event(&self, timeout_ns: u64) -> Result<Option<u32>, Error> {
        self.wait_event(timeout_ns, |eq| lock(&eq.completions).pop_front())
    }

    /// `ibv_get_async_event`: the next asynchronous event, or `None` after `timeout_ns`.
    pub fn get_async_event(&self, timeout_ns: u64) -> Result<Option<AsyncEvent>, Error> {
        self.wait_event(timeout_ns, |eq| lock(&eq.asynchronous).pop_front())
    }
}

impl Cq {
    /// `ibv_req_notify_cq`: one completion event for the next CQE, or with `solicited_only` for the next
    /// CQE of a solicited message or in error.
    pub fn req_notify(&self, solicited_only: bool) {
        let val = if solicited_only { doorbell::ARM_SOLICITED } else { doorbell::ARM_ANY };
        self.ctx.dev.backend.mmio_write(doorbell::cq(self.cqn, doorbell::CQ_ARM), val);
    }
}
