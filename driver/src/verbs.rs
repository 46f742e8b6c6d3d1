//! Verbs objects: device context, PD, MR, CQ, QP; post_send / post_recv / poll_cq.

use crate::events::EventQueue;
use crate::{Backend, Error};
use model::OwnLine;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock, Weak};
use wire::contract::cmd::{self, *};
use wire::contract::cqe::{CqeRepr, CQE_LEN, OWNER};
use wire::contract::regs::{self, block, block_type, doorbell, id, Counter};
use wire::contract::verbs::{attr, QpState, QpType, WcOpcode, WcStatus};
use wire::contract::wqe::*;

/// What the device reports about itself (`ibv_device_attr`, trimmed, and the hardware profile's queues).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceAttr {
    pub build_id: u32,
    pub features: u32,
    pub max_qp: u32,
    pub max_cq: u32,
    pub max_mr: u32,
    pub max_pd: u32,
    pub max_sge: u32,
    pub max_inline: u32,
    /// READ/atomic requests a QP executes as responder: the most `max_dest_rd_atomic` may be.
    pub max_qp_rd_atom: u32,
    /// READ/atomic requests a QP keeps outstanding as requester: the most `max_rd_atomic` may be.
    pub max_qp_init_rd_atom: u32,
    /// Send WQEs the device holds per QP between fetching and completing them.
    pub wqe_window: u32,
    /// Responses a QP's responder queues.
    pub resp_queue: u32,
    /// The device's timer tick (ns).
    pub tick_ns: u32,
    pub port_mbps: u32,
    pub max_log_ring: u32,
}

/// A QP's ring counters behind the per-QP lock, on lines of their own: the posting thread writes them at
/// every post, and the counters of the QP made next must not share its line.
type QpRings = OwnLine<Mutex<SqShared>>;

struct SqShared {
    pi: u16,
    /// Oldest WQE not yet known complete.
    ci: u16,
    rq_pi: u16,
    rq_ci: u16,
}

pub(crate) struct Device {
    pub(crate) backend: Box<dyn Backend>,
    attr: DeviceAttr,
    mailbox: u64,
    /// The last command token; held for the whole of a command, which owns the one mailbox meanwhile.
    token: Mutex<u8>,
    /// Held across the two reads of a 64-bit register (the low word latches the high one).
    latch: Mutex<()>,
    /// The QPs by number, for the completion path: read per CQE by every poller at once, written only when
    /// a QP is created or destroyed.
    qps: RwLock<HashMap<u32, Weak<QpRings>>>,
    pub(crate) events: OnceLock<EventQueue>,
}

/// An open device (`ibv_context`). It and every object made from it are `Send + Sync`, locked per
/// queue as mlx5's provider is: one thread may poll a CQ while others post to their QPs.
#[derive(Clone)]
pub struct Context {
    pub(crate) dev: Arc<Device>,
}

/// A lock, whether or not a thread that held it panicked: each holder leaves the state consistent at
/// every step that can panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Walks BAR0's list of register blocks: each block the driver uses must be where it expects it, of the
/// contract's major version, and the doorbell layout must be the one it computes with. Blocks of types it does
/// not know (a newer device's) are skipped; the walk stays inside BAR0 and ends.
fn probe_blocks(b: &dyn Backend) -> Result<(), Error> {
    let bad = |what: String| Err(Error::Contract(format!("BAR0 register blocks: {what}")));
    let known = [
        (block_type::ID, id::BASE, "ID"),
        (block_type::CMD, regs::cmd::BASE, "command"),
        (block_type::COUNTERS, regs::counters::BASE, "counters"),
        (block_type::DCQCN, regs::dcqcn::BASE, "DCQCN"),
        (block_type::DOORBELL, doorbell::BASE, "doorbell"),
    ];
    let mut seen = Vec::new();
    let mut at = id::BASE;
    for _ in 0..64 {
        let (ty, ver) = (b.mmio_read(at + block::TYPE), b.mmio_read(at + block::VERSION));
        if let Some(&(_, base, name)) = known.iter().find(|k| k.0 == ty) {
            if at != base {
                return bad(format!("the {name} block is at {at:#x}, not {base:#x}"));
            }
            if ver >> 16 != regs::VERSION >> 16 {
                return bad(format!(
                    "the {name} block is of contract version {ver:#x}, this driver's is {:#x}",
                    regs::VERSION
                ));
            }
            seen.push(ty);
        }
        let next = b.mmio_read(at + block::NEXT);
        if next == 0 {
            if let Some((_, _, name)) = known.iter().find(|k| !seen.contains(&k.0)) {
                return bad(format!("no {name} block"));
            }
            let layout = [
                (doorbell::QP_AREA, doorbell::QP_DB_BASE),
                (doorbell::CQ_AREA, doorbell::CQ_DB_BASE),
                (doorbell::STRIDE, doorbell::DB_STRIDE),
                (doorbell::EQ_AREA, doorbell::EQ_DB),
            ];
            for (reg, want) in layout {
                let got = b.mmio_read(doorbell::BASE + reg);
                if got != want {
                    return bad(format!(
                        "doorbell register {reg:#x} holds {got:#x}, the driver computes with {want:#x}"
                    ));
                }
            }
            return Ok(());
        }
        if next <= at || next >= regs::BAR0_LEN {
            return bad(format!("the block at {at:#x} points to {next:#x}"));
        }
        at = next;
    }
    bad("the list does not end".into())
}

/// How many progress steps a command may take before the driver gives up.
const CMD_POLL_LIMIT: u32 = 1_000_000;

impl Context {
    /// Opens the device behind `backend`: checks the ID block and the contract version.
    pub fn open(backend: Box<dyn Backend>) -> Result<Self, Error> {
        if backend.mmio_read(id::BASE + block::TYPE) != block_type::ID {
            return Err(Error::BadDevice(backend.mmio_read(id::BASE + block::TYPE)));
        }
        let ver = backend.mmio_read(id::BASE + block::VERSION);
        if ver >> 16 != regs::VERSION >> 16 {
            return Err(Error::BadDevice(ver));
        }
        probe_blocks(&*backend)?;
        let r = |o| backend.mmio_read(id::BASE + o);
        let attr = DeviceAttr {
            build_id: r(id::BUILD_ID),
            features: r(id::FEATURES),
            max_qp: r(id::MAX_QP),
            max_cq: r(id::MAX_CQ),
            max_mr: r(id::MAX_MR),
            max_pd: r(id::MAX_PD),
            max_sge: r(id::MAX_SGE),
            max_inline: r(id::MAX_INLINE),
            max_qp_rd_atom: r(id::MAX_QP_RD_ATOM),
            max_qp_init_rd_atom: r(id::MAX_QP_INIT_RD_ATOM),
            wqe_window: r(id::WQE_WINDOW),
            resp_queue: r(id::RESP_QUEUE),
            tick_ns: r(id::TICK_NS),
            port_mbps: r(id::PORT_MBPS),
            max_log_ring: r(id::MAX_LOG_RING),
        };
        let mailbox = backend.dma_alloc(MAILBOX_LEN)?;
        let dev = Device {
            backend,
            attr,
            mailbox,
            token: Mutex::new(0),
            latch: Mutex::new(()),
            qps: RwLock::new(HashMap::new()),
            events: OnceLock::new(),
        };
        let ctx = Context { dev: Arc::new(dev) };
        let eq = EventQueue::create(&ctx)?;
        let _ = ctx.dev.events.set(eq);
        Ok(ctx)
    }

    pub fn query_device(&self) -> DeviceAttr {
        self.dev.attr
    }

    /// Reads a device counter: its low word, which latches the high word, then the high word, under a lock
    /// so another thread's read cannot come between them.
    pub fn counter(&self, c: Counter) -> u64 {
        let _pair = lock(&self.dev.latch);
        let b = &self.dev.backend;
        let lo = b.mmio_read(c.offset());
        u64::from(lo) | (u64::from(b.mmio_read(c.offset() + 4)) << 32)
    }

    /// Writes a DCQCN parameter register.
    pub fn set_dcqcn(&self, p: regs::Dcqcn, value: u32) {
        self.dev.backend.mmio_write(p.offset(), value);
    }

    pub fn backend(&self) -> &dyn Backend {
        &*self.dev.backend
    }

    /// Runs one command; returns its output bytes.
    pub(crate) fn command(&self, name: &'static str, opcode: u16, input: &[u8]) -> Result<Vec<u8>, Error> {
        let d = &self.dev;
        let mut token = lock(&d.token);
        let mut mb = vec![0u8; MAILBOX_LEN];
        let _ = CmdHeaderRepr { opcode }.write_to(&mut mb);
        mb[cmd::IN..cmd::IN + input.len()].copy_from_slice(input);
        d.backend.dma_write(d.mailbox, &mb)?;
        *token = token.wrapping_add(1);
        let token = *token;
        let b = &d.backend;
        b.mmio_write(regs::cmd::BASE + regs::cmd::MAILBOX_LO, d.mailbox as u32);
        b.mmio_write(regs::cmd::BASE + regs::cmd::MAILBOX_HI, (d.mailbox >> 32) as u32);
        b.mmio_write(regs::cmd::BASE + regs::cmd::DOORBELL, u32::from(token));
        let mut polls = 0;
        loop {
            let s = b.mmio_read(regs::cmd::BASE + regs::cmd::STATUS);
            if s & regs::cmd::STATUS_BUSY == 0 && (s >> 8) as u8 == token {
                break;
            }
            polls += 1;
            if polls > CMD_POLL_LIMIT || !b.progress() {
                return Err(Error::CommandTimeout(name));
            }
        }
        b.dma_read(d.mailbox, &mut mb)?;
        let out = CmdOutHeaderRepr::from_bytes(&mb[OUT_HDR..]).map_err(|_| Error::CommandTimeout(name))?;
        let status = Status::from_u8(out.status);
        if status != Status::Ok {
            return Err(Error::Command { op: name, status, syndrome: out.syndrome });
        }
        Ok(mb[OUT..].to_vec())
    }

    /// Sets the port MAC address.
    pub fn set_port_mac(&self, mac: [u8; 6]) -> Result<(), Error> {
        self.command("SET_PORT", op::SET_PORT, &SetPortRepr { mac: wire::field::get_be(&mac) }.to_bytes()).map(|_| ())
    }

    /// Sets GID table entry `index` (an IPv4-mapped GID makes the QPs using it send IPv4).
    pub fn set_gid(&self, index: u8, gid: [u8; 16]) -> Result<(), Error> {
        let (gid_hi, gid_lo) = gid_split(&gid);
        self.command("SET_GID", op::SET_GID, &SetGidRepr { index, valid: 1, gid_hi, gid_lo }.to_bytes()).map(|_| ())
    }

    pub fn alloc_pd(&self) -> Result<Pd, Error> {
        let out = self.command("ALLOC_PD", op::ALLOC_PD, &[])?;
        let pdn = ObjOutRepr::from_bytes(&out).map_err(|_| Error::CommandTimeout("ALLOC_PD"))?.id;
        Ok(Pd { ctx: self.clone(), pdn })
    }

    /// Allocates DMA-able memory for buffers the NIC will access.
    pub fn alloc_buf(&self, len: usize) -> Result<Buffer, Error> {
        if len == 0 {
            return Err(Error::InvalidArgument("buffer length 0"));
        }
        Ok(Buffer { ctx: self.clone(), addr: self.dev.backend.dma_alloc(len)?, len })
    }

    /// Creates a CQ with at least `cqe` entries.
    pub fn create_cq(&self, cqe: u32) -> Result<Cq, Error> {
        if cqe == 0 {
            return Err(Error::InvalidArgument("cqe = 0"));
        }
        let log_size = cqe.next_power_of_two().trailing_zeros() as u8;
        if u32::from(log_size) > self.dev.attr.max_log_ring {
            return Err(Error::InvalidArgument("cqe above the device limit"));
        }
        let ring = self.dev.backend.dma_alloc(CQE_LEN << log_size)?;
        let out = self.command("CREATE_CQ", op::CREATE_CQ, &CreateCqRepr { log_size, ring_iova: ring }.to_bytes())?;
        let cqn = ObjOutRepr::from_bytes(&out).map_err(|_| Error::CommandTimeout("CREATE_CQ"))?.id;
        Ok(Cq { ctx: self.clone(), cqn, ring, log_size, ci: Mutex::new(0) })
    }
}

/// DMA-able memory.
pub struct Buffer {
    ctx: Context,
    pub addr: u64,
    pub len: usize,
}

impl Buffer {
    pub fn write(&self, off: usize, data: &[u8]) -> Result<(), Error> {
        if off.checked_add(data.len()).is_none_or(|e| e > self.len) {
            return Err(Error::InvalidArgument("write past the end of the buffer"));
        }
        self.ctx.dev.backend.dma_write(self.addr + off as u64, data)
    }
    pub fn read(&self, off: usize, len: usize) -> Result<Vec<u8>, Error> {
        if off.checked_add(len).is_none_or(|e| e > self.len) {
            return Err(Error::InvalidArgument("read past the end of the buffer"));
        }
        let mut v = vec![0u8; len];
        self.ctx.dev.backend.dma_read(self.addr + off as u64, &mut v)?;
        Ok(v)
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.ctx.dev.backend.dma_free(self.addr);
    }
}

/// A protection domain.
pub struct Pd {
    ctx: Context,
    pub pdn: u32,
}

/// An MR over the application's own memory (`Pd::reg_user`): deregistered and unmapped when dropped.
pub struct UserMr<'a> {
    ctx: Context,
    pub mr: Mr,
    _buf: &'a mut [u8],
}

impl Drop for UserMr<'_> {
    fn drop(&mut self) {
        let _ = self.ctx.command("DEREG_MR", op::DEREG_MR, &ObjInRepr { id: self.mr.lkey }.to_bytes());
        let _ = self.ctx.dev.backend.unmap_user(self.mr.addr);
    }
}

/// A registered memory region.
#[derive(Debug)]
pub struct Mr {
    pub addr: u64,
    pub len: u64,
    pub lkey: u32,
    pub rkey: u32,
}

/// Capacities asked for at QP creation (`ibv_qp_cap`).
#[derive(Debug, Clone, Copy)]
pub struct QpCap {
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    pub max_send_sge: u32,
    pub max_recv_sge: u32,
    pub max_inline_data: u32,
}

impl Default for QpCap {
    fn default() -> Self {
        QpCap { max_send_wr: 256, max_recv_wr: 256, max_send_sge: 4, max_recv_sge: 4, max_inline_data: 64 }
    }
}

impl Pd {
    /// Registers `[addr, addr+len)` (inside DMA memory) with `access` flags.
    pub fn reg_mr(&self, addr: u64, len: u64, access: u32) -> Result<Mr, Error> {
        if len == 0 {
            return Err(Error::InvalidArgument("MR length 0"));
        }
        if len > 1 << wire::contract::qpc::MR_LEN_BITS {
            return Err(Error::InvalidArgument("MR longer than the device's 2^48 bytes"));
        }
        if access & !wire::contract::verbs::access::ALL != 0 {
            return Err(Error::InvalidArgument("unknown access flags"));
        }
        let needs_local_write =
            wire::contract::verbs::access::REMOTE_WRITE | wire::contract::verbs::access::REMOTE_ATOMIC;
        if access & needs_local_write != 0 && access & wire::contract::verbs::access::LOCAL_WRITE == 0 {
            return Err(Error::InvalidArgument("remote write/atomic access needs LOCAL_WRITE"));
        }
        let out = self.ctx.command(
            "REG_MR",
            op::REG_MR,
            &RegMrRepr { pdn: self.pdn, access, iova: addr, length: len }.to_bytes(),
        )?;
        let r = RegMrOutRepr::from_bytes(&out).map_err(|_| Error::CommandTimeout("REG_MR"))?;
        Ok(Mr { addr, len, lkey: r.lkey, rkey: r.rkey })
    }

    /// Registers a whole buffer.
    pub fn reg_buf(&self, buf: &Buffer, access: u32) -> Result<Mr, Error> {
        self.reg_mr(buf.addr, buf.len as u64, access)
    }

    /// Registers the application's own `buf` (`ibv_reg_mr` on process memory): its pages are mapped for the
    /// device at a contiguous IOVA (the MR's address) and unmapped when the MR is dropped; the borrow keeps
    /// the buffer alive and in place meanwhile. Backends whose device cannot reach process memory refuse.
    pub fn reg_user<'a>(&self, buf: &'a mut [u8], access: u32) -> Result<UserMr<'a>, Error> {
        let b = &self.ctx.dev.backend;
        let iova = b.map_user(buf.as_ptr(), buf.len())?;
        match self.reg_mr(iova, buf.len() as u64, access) {
            Ok(mr) => Ok(UserMr { ctx: self.ctx.clone(), mr, _buf: buf }),
            Err(e) => {
                let _ = b.unmap_user(iova);
                Err(e)
            }
        }
    }

    pub fn dereg_mr(&self, mr: Mr) -> Result<(), Error> {
        self.ctx.command("DEREG_MR", op::DEREG_MR, &ObjInRepr { id: mr.lkey }.to_bytes()).map(|_| ())
    }

    /// Creates an RC QP in RESET.
    pub fn create_qp(&self, send_cq: &Cq, recv_cq: &Cq, cap: QpCap, sq_sig_all: bool) -> Result<Qp, Error> {
        self.create_qp_of(QpType::Rc, send_cq, recv_cq, cap, sq_sig_all)
    }

    /// Creates a raw packet QP in RESET (`IBV_QPT_RAW_PACKET`): each send WR's data is one whole Ethernet
    /// frame, each receive WR takes one; the NIC steers to it every frame that is not RoCEv2 and not an ARP
    /// or ICMP echo request the NIC answers itself. `Qp::activate_raw` brings it to RTS.
    pub fn create_raw_qp(&self, send_cq: &Cq, recv_cq: &Cq, cap: QpCap) -> Result<Qp, Error> {
        self.create_qp_of(QpType::RawPacket, send_cq, recv_cq, cap, false)
    }

    fn create_qp_of(
        &self,
        qp_type: QpType,
        send_cq: &Cq,
        recv_cq: &Cq,
        cap: QpCap,
        sq_sig_all: bool,
    ) -> Result<Qp, Error> {
        let a = self.ctx.dev.attr;
        if cap.max_send_wr == 0 || cap.max_recv_wr == 0 {
            return Err(Error::InvalidArgument("max_send_wr and max_recv_wr must be at least 1"));
        }
        if cap.max_send_sge > a.max_sge || cap.max_recv_sge > a.max_sge || cap.max_inline_data > a.max_inline {
            return Err(Error::InvalidArgument("QP capabilities above the device limits"));
        }
        let sq_log_size = cap.max_send_wr.next_power_of_two().trailing_zeros() as u8;
        let rq_log_size = cap.max_recv_wr.next_power_of_two().trailing_zeros() as u8;
        if u32::from(sq_log_size.max(rq_log_size)) > a.max_log_ring {
            return Err(Error::InvalidArgument("queue depth above the device limit"));
        }
        let sq_bytes = (SEND_DATA
            + (cap.max_send_sge.max(1) as usize * DATA_SEG_LEN).max(cap.max_inline_data as usize))
        .next_power_of_two();
        let sq_log_stride = (sq_bytes.trailing_zeros() as u8).max(MIN_SQ_LOG_STRIDE);
        let rq_bytes = (RECV_DATA + cap.max_recv_sge.max(1) as usize * DATA_SEG_LEN).next_power_of_two();
        let rq_log_stride = (rq_bytes.trailing_zeros() as u8).max(MIN_RQ_LOG_STRIDE);
        if sq_log_stride > MAX_LOG_STRIDE || rq_log_stride > MAX_LOG_STRIDE {
            return Err(Error::InvalidArgument("WQE too large"));
        }
        let b = &self.ctx.dev.backend;
        let sq = b.dma_alloc(1 << (sq_log_size + sq_log_stride))?;
        let rq = b.dma_alloc(1 << (rq_log_size + rq_log_stride))?;
        let req = CreateQpRepr {
            pdn: self.pdn,
            send_cqn: send_cq.cqn,
            recv_cqn: recv_cq.cqn,
            sq_log_size,
            sq_log_stride,
            rq_log_size,
            rq_log_stride,
            sq_iova: sq,
            rq_iova: rq,
            sq_sig_all: u8::from(sq_sig_all),
            qp_type: qp_type as u8,
        };
        let out = self.ctx.command("CREATE_QP", op::CREATE_QP, &req.to_bytes())?;
        let qpn = ObjOutRepr::from_bytes(&out).map_err(|_| Error::CommandTimeout("CREATE_QP"))?.id;
        let shared = Arc::new(OwnLine(Mutex::new(SqShared { pi: 0, ci: 0, rq_pi: 0, rq_ci: 0 })));
        self.ctx.dev.qps.write().unwrap_or_else(PoisonError::into_inner).insert(qpn, Arc::downgrade(&shared));
        Ok(Qp {
            ctx: self.ctx.clone(),
            qpn,
            cap,
            sq,
            rq,
            sq_log_size,
            sq_log_stride,
            rq_log_size,
            rq_log_stride,
            shared,
            state: AtomicU8::new(QpState::Reset as u8),
        })
    }
}

/// A completion queue.
pub struct Cq {
    pub(crate) ctx: Context,
    pub cqn: u32,
    ring: u64,
    log_size: u8,
    /// The consumer counter; held for a whole poll.
    ci: Mutex<u32>,
}

/// A work completion (`ibv_wc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wc {
    pub wr_id: u64,
    pub status: WcStatus,
    pub opcode: WcOpcode,
    pub vendor_err: u8,
    pub byte_len: u32,
    pub imm_data: u32,
    pub qp_num: u32,
    pub src_qp: u32,
    pub wc_flags: u8,
}

impl Cq {
    /// Takes up to `max` completions (`ibv_poll_cq`); never blocks.
    pub fn poll(&self, max: usize) -> Result<Vec<Wc>, Error> {
        let b = &self.ctx.dev.backend;
        let mut out = Vec::new();
        let mut ci_guard = lock(&self.ci);
        while out.len() < max {
            let ci = *ci_guard;
            let slot = u64::from(ci & ((1 << self.log_size) - 1));
            let addr = self.ring + slot * CQE_LEN as u64;
            let mut owner = [0u8; 1];
            b.dma_read(addr + OWNER as u64, &mut owner)?;
            let want = wire::contract::cqe::owner_for(ci, self.log_size);
            if owner[0] & 1 != want {
                break;
            }
            let mut raw = [0u8; CQE_LEN];
            b.dma_read(addr, &mut raw)?;
            let c = CqeRepr::from_bytes(&raw).map_err(|_| Error::Dma { iova: addr, len: CQE_LEN })?;
            *ci_guard = ci.wrapping_add(1);
            self.consumed(&c);
            out.push(Wc {
                wr_id: c.wr_id,
                status: WcStatus::from_u8(c.status),
                opcode: WcOpcode::from_u8(c.opcode).unwrap_or(WcOpcode::Send),
                vendor_err: c.vendor_err,
                byte_len: c.byte_len,
                imm_data: c.imm_data,
                qp_num: c.qp_num,
                src_qp: c.src_qp,
                wc_flags: c.wc_flags,
            });
        }
        if !out.is_empty() {
            b.mmio_write(doorbell::cq(self.cqn, doorbell::CQ_CI), *ci_guard);
        }
        Ok(out)
    }

    /// Frees the ring slots a CQE accounts for.
    fn consumed(&self, c: &CqeRepr) {
        let Some(s) =
            self.ctx.dev.qps.read().unwrap_or_else(PoisonError::into_inner).get(&c.qp_num).and_then(Weak::upgrade)
        else {
            return;
        };
        let mut s = lock(&s);
        // A CQE for WQE i means every WQE up to i is done: each queue completes in order.
        if c.is_recv != 0 {
            s.rq_ci = c.wqe_index.wrapping_add(1);
        } else {
            s.ci = c.wqe_index.wrapping_add(1);
        }
    }

    /// Polls until `n` completions arrived, the device went idle, or `timeout_ns` of device time passed.
    pub fn wait(&self, n: usize, timeout_ns: u64) -> Result<Vec<Wc>, Error> {
        let b = &self.ctx.dev.backend;
        let deadline = b.now_ns().saturating_add(timeout_ns);
        let mut got = Vec::new();
        loop {
            got.extend(self.poll(n - got.len())?);
            if got.len() >= n || b.now_ns() > deadline || !b.progress() {
                got.extend(self.poll(n - got.len())?);
                return Ok(got);
            }
        }
    }

    pub fn destroy(self) -> Result<(), Error> {
        self.ctx.command("DESTROY_CQ", op::DESTROY_CQ, &ObjInRepr { id: self.cqn }.to_bytes())?;
        self.ctx.dev.backend.dma_free(self.ring);
        Ok(())
    }
}

/// A scatter/gather element (`ibv_sge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sge {
    pub addr: u64,
    pub length: u32,
    pub lkey: u32,
}

/// A send work request (`ibv_send_wr`).
#[derive(Debug, Clone, Default)]
pub struct SendWr {
    pub wr_id: u64,
    pub opcode: Option<SendOp>,
    pub send_flags: u8,
    pub sg_list: Vec<Sge>,
    /// Immediate data (with-IMM) or the R_Key to invalidate (SEND_WITH_INV).
    pub imm_data: u32,
    pub remote_addr: u64,
    pub rkey: u32,
    pub compare_add: u64,
    pub swap: u64,
}

/// A receive work request.
#[derive(Debug, Clone, Default)]
pub struct RecvWr {
    pub wr_id: u64,
    pub sg_list: Vec<Sge>,
}

/// Modify-QP attributes (`ibv_qp_attr`, RC subset) with an address vector.
#[derive(Debug, Clone, Default)]
pub struct QpAttr {
    pub qp_state: Option<QpState>,
    pub cur_qp_state: Option<QpState>,
    pub qp_access_flags: u32,
    pub pkey_index: u16,
    pub port_num: u8,
    pub path_mtu: u8,
    pub dest_qp_num: u32,
    pub rq_psn: u32,
    pub sq_psn: u32,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub ah: AddressVector,
}

/// Where a QP's packets go (`ibv_ah_attr` with its GRH).
#[derive(Debug, Clone, Default)]
pub struct AddressVector {
    pub dgid: [u8; 16],
    pub sgid_index: u8,
    pub dmac: [u8; 6],
    pub hop_limit: u8,
    /// DSCP << 2 | ECN.
    pub traffic_class: u8,
    pub flow_label: u32,
    /// (PCP, VID) for an 802.1Q tag.
    pub vlan: Option<(u8, u16)>,
}

/// A queue pair.
pub struct Qp {
    ctx: Context,
    pub qpn: u32,
    pub cap: QpCap,
    sq: u64,
    rq: u64,
    sq_log_size: u8,
    sq_log_stride: u8,
    rq_log_size: u8,
    rq_log_stride: u8,
    /// Ring counters, shared with the CQs that retire this QP's WQEs; the per-QP lock.
    shared: Arc<QpRings>,
    /// The state as the last `modify` set it: read by every post without a lock (a store into a
    /// neighbouring QP's cache line would otherwise slow every thread posting beside it).
    state: AtomicU8,
}

impl Qp {
    /// `ibv_modify_qp`: the device checks the transition and attribute rules and is the authority.
    pub fn modify(&self, a: &QpAttr, mask: u32) -> Result<(), Error> {
        if mask & attr::STATE != 0 && a.qp_state.is_none() {
            return Err(Error::InvalidArgument("STATE in mask without qp_state"));
        }
        let dev = self.ctx.dev.attr;
        if mask & attr::MAX_QP_RD_ATOMIC != 0 && u32::from(a.max_rd_atomic) > dev.max_qp_init_rd_atom {
            return Err(Error::InvalidArgument("max_rd_atomic above the device's max_qp_init_rd_atom"));
        }
        if mask & attr::MAX_DEST_RD_ATOMIC != 0 && u32::from(a.max_dest_rd_atomic) > dev.max_qp_rd_atom {
            return Err(Error::InvalidArgument("max_dest_rd_atomic above the device's max_qp_rd_atom"));
        }
        let r = QpAttrsRepr {
            qpn: self.qpn,
            attr_mask: mask,
            qp_state: a.qp_state.map_or(0, |s| s as u8),
            cur_qp_state: a.cur_qp_state.map_or(0, |s| s as u8),
            path_mtu: a.path_mtu,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            min_rnr_timer: a.min_rnr_timer,
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            sgid_index: a.ah.sgid_index,
            hop_limit: a.ah.hop_limit,
            traffic_class: a.ah.traffic_class,
            qp_access_flags: a.qp_access_flags,
            dest_qp_num: a.dest_qp_num,
            rq_psn: a.rq_psn,
            sq_psn: a.sq_psn,
            flow_label: a.ah.flow_label,
            dmac: wire::field::get_be(&a.ah.dmac),
            vlan: a.ah.vlan.map_or(0, |(pcp, vid)| wire::eth::VlanTag { pcp, dei: false, vid }.tci()),
            vlan_tagged: u8::from(a.ah.vlan.is_some()),
            dgid_hi: gid_split(&a.ah.dgid).0,
            dgid_lo: gid_split(&a.ah.dgid).1,
            pkey_index: a.pkey_index,
            port_num: a.port_num,
            sq_draining: 0,
        };
        self.ctx.command("MODIFY_QP", op::MODIFY_QP, &r.to_bytes())?;
        if let Some(s) = a.qp_state.filter(|_| mask & attr::STATE != 0) {
            self.state.store(s as u8, Ordering::Release);
            if s == QpState::Reset {
                *lock(&self.shared) = SqShared { pi: 0, ci: 0, rq_pi: 0, rq_ci: 0 };
            }
        }
        Ok(())
    }

    /// `ibv_query_qp`.
    pub fn query(&self) -> Result<QpAttrsRepr, Error> {
        let out = self.ctx.command("QUERY_QP", op::QUERY_QP, &ObjInRepr { id: self.qpn }.to_bytes())?;
        QpAttrsRepr::from_bytes(&out).map_err(|_| Error::CommandTimeout("QUERY_QP"))
    }

    /// `ibv_post_send` for one work request.
    pub fn post_send(&self, wr: &SendWr) -> Result<(), Error> {
        self.post_send_list(std::slice::from_ref(wr))
    }

    /// `ibv_post_send` for a list: all WQEs are written, then one doorbell.
    pub fn post_send_list(&self, wrs: &[SendWr]) -> Result<(), Error> {
        let st = self.state();
        if matches!(st, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(Error::BadState("post_send needs RTS (or ERR, which flushes)"));
        }
        let b = &self.ctx.dev.backend;
        let stride = 1usize << self.sq_log_stride;
        let mut s = lock(&self.shared);
        let depth = 1u16 << self.sq_log_size;
        if usize::from(s.pi.wrapping_sub(s.ci)) + wrs.len() > usize::from(depth).min(self.cap.max_send_wr as usize) {
            return Err(Error::QueueFull("send"));
        }
        let mut bufs = Vec::with_capacity(wrs.len());
        for wr in wrs {
            bufs.push(self.encode_send(wr, stride)?);
        }
        for buf in bufs {
            b.dma_write(self.sq_slot(s.pi), &buf)?;
            s.pi = s.pi.wrapping_add(1);
        }
        b.mmio_write(doorbell::qp(self.qpn, doorbell::QP_SQ_PI), u32::from(s.pi));
        Ok(())
    }

    /// The IOVA of the SQ slot the WQE posted `index`-th (from 0, round the ring) is written to and read
    /// from by the device, as mlx5's direct verbs give a QP's send buffer: for tools and tests that look at
    /// posted WQEs.
    pub fn sq_slot(&self, index: u16) -> u64 {
        let slot = u64::from(index & ((1u16 << self.sq_log_size) - 1));
        self.sq + (slot << self.sq_log_stride)
    }

    fn encode_send(&self, wr: &SendWr, stride: usize) -> Result<Vec<u8>, Error> {
        let op = wr.opcode.ok_or(Error::InvalidArgument("send opcode missing"))?;
        let inline = wr.send_flags & send_flags::INLINE != 0;
        if wr.send_flags & !(send_flags::FENCE | send_flags::SIGNALED | send_flags::SOLICITED | send_flags::INLINE) != 0
        {
            return Err(Error::InvalidArgument("unknown send flags"));
        }
        if wr.sg_list.len() > self.cap.max_send_sge as usize {
            return Err(Error::InvalidArgument("more SGEs than max_send_sge"));
        }
        if op.is_atomic() {
            if wr.sg_list.len() != 1 || wr.sg_list[0].length != ATOMIC_LEN {
                return Err(Error::InvalidArgument("atomics take one 8-byte SGE"));
            }
            if !wr.remote_addr.is_multiple_of(8) {
                return Err(Error::InvalidArgument("atomic remote address must be 8-byte aligned"));
            }
        }
        let total: u64 = wr.sg_list.iter().map(|s| u64::from(s.length)).sum();
        if total > u64::from(wire::contract::verbs::MAX_MSG_LEN) {
            return Err(Error::InvalidArgument("message longer than 2^31 bytes"));
        }
        let mut buf = vec![0u8; stride];
        let len = if inline {
            if op.is_read_or_atomic() {
                return Err(Error::InvalidArgument("INLINE is for SEND and WRITE only"));
            }
            if total > u64::from(self.cap.max_inline_data) || SEND_DATA + total as usize > stride {
                return Err(Error::InvalidArgument("inline data above max_inline_data"));
            }
            let mut off = SEND_DATA;
            for s in &wr.sg_list {
                let mut tmp = vec![0u8; s.length as usize];
                self.ctx.dev.backend.dma_read(s.addr, &mut tmp)?;
                buf[off..off + tmp.len()].copy_from_slice(&tmp);
                off += tmp.len();
            }
            total as u16
        } else {
            for (i, s) in wr.sg_list.iter().enumerate() {
                let d = DataSegRepr { addr: s.addr, lkey: s.lkey, length: s.length };
                let _ = d.write_to(&mut buf[SEND_DATA + i * DATA_SEG_LEN..]);
            }
            wr.sg_list.len() as u16
        };
        let _ = SendCtrlRepr { opcode: op as u8, flags: wr.send_flags, len, imm: wr.imm_data, wr_id: wr.wr_id }
            .write_to(&mut buf[CTRL..]);
        let _ = RemoteSegRepr { va: wr.remote_addr, rkey: wr.rkey }.write_to(&mut buf[REMOTE..]);
        let _ = AtomicSegRepr {
            swap_add: if op == SendOp::AtomicCmpSwp { wr.swap } else { wr.compare_add },
            compare: wr.compare_add,
        }
        .write_to(&mut buf[ATOMIC..]);
        Ok(buf)
    }

    /// `ibv_post_recv`.
    pub fn post_recv(&self, wr: &RecvWr) -> Result<(), Error> {
        if self.state() == QpState::Reset {
            return Err(Error::BadState("post_recv on a RESET QP"));
        }
        if wr.sg_list.len() > self.cap.max_recv_sge as usize {
            return Err(Error::InvalidArgument("more SGEs than max_recv_sge"));
        }
        let b = &self.ctx.dev.backend;
        let mut s = lock(&self.shared);
        let depth = 1u16 << self.rq_log_size;
        if usize::from(s.rq_pi.wrapping_sub(s.rq_ci)) >= usize::from(depth).min(self.cap.max_recv_wr as usize) {
            return Err(Error::QueueFull("receive"));
        }
        let mut buf = vec![0u8; 1 << self.rq_log_stride];
        let _ = RecvCtrlRepr { wr_id: wr.wr_id, num_sge: wr.sg_list.len() as u16 }.write_to(&mut buf);
        for (i, g) in wr.sg_list.iter().enumerate() {
            let _ = DataSegRepr { addr: g.addr, lkey: g.lkey, length: g.length }
                .write_to(&mut buf[RECV_DATA + i * DATA_SEG_LEN..]);
        }
        let slot = u64::from(s.rq_pi & (depth - 1));
        b.dma_write(self.rq + (slot << self.rq_log_stride), &buf)?;
        s.rq_pi = s.rq_pi.wrapping_add(1);
        b.mmio_write(doorbell::qp(self.qpn, doorbell::QP_RQ_PI), u32::from(s.rq_pi));
        Ok(())
    }

    pub fn state(&self) -> QpState {
        QpState::from_u8(self.state.load(Ordering::Acquire)).unwrap_or(QpState::Err)
    }

    /// `ibv_destroy_qp`: the QP goes to RESET first (its posted WQEs are dropped without completions, as
    /// IBTA's RESET does), which the device needs before it destroys a QP.
    pub fn destroy(self) -> Result<(), Error> {
        if self.state() != QpState::Reset {
            self.modify(&QpAttr { qp_state: Some(QpState::Reset), ..Default::default() }, attr::STATE)?;
        }
        self.ctx.command("DESTROY_QP", op::DESTROY_QP, &ObjInRepr { id: self.qpn }.to_bytes())?;
        self.ctx.dev.qps.write().unwrap_or_else(PoisonError::into_inner).remove(&self.qpn);
        self.ctx.dev.backend.dma_free(self.sq);
        self.ctx.dev.backend.dma_free(self.rq);
        Ok(())
    }
}

/// What each side tells the other to connect an RC QP (perftest's exchange: QPN, PSN, GID, MAC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub qpn: u32,
    pub psn: u32,
    pub gid: [u8; 16],
    pub mac: [u8; 6],
}

/// Connection options for `Qp::connect`.
#[derive(Debug, Clone, Copy)]
pub struct ConnectOpts {
    pub path_mtu: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
    /// The responder's limit when it differs from the requester's (`None`: `max_rd_atomic` for both).
    pub max_dest_rd_atomic: Option<u8>,
    pub access: u32,
    pub traffic_class: u8,
    pub vlan: Option<(u8, u16)>,
    pub sgid_index: u8,
}

impl Default for ConnectOpts {
    fn default() -> Self {
        ConnectOpts {
            path_mtu: 3,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 12,
            max_rd_atomic: 16,
            max_dest_rd_atomic: None,
            access: wire::contract::verbs::access::ALL,
            // DSCP 26, ECT(0): ECN-capable so switches can mark instead of dropping.
            traffic_class: (26 << 2) | 0b10,
            vlan: None,
            sgid_index: 0,
        }
    }
}

impl Qp {
    /// RESET -> INIT -> RTR -> RTS for a raw packet QP: it needs only its port.
    pub fn activate_raw(&self) -> Result<(), Error> {
        let init = QpAttr { qp_state: Some(QpState::Init), port_num: 1, ..Default::default() };
        self.modify(&init, attr::STATE | attr::PORT)?;
        for state in [QpState::Rtr, QpState::Rts] {
            self.modify(&QpAttr { qp_state: Some(state), ..Default::default() }, attr::STATE)?;
        }
        Ok(())
    }

    /// RESET -> INIT -> RTR -> RTS toward `remote`, starting our send PSN at `local_psn`. `max_rd_atomic` and
    /// `max_dest_rd_atomic` above the device's limits are lowered to them, as perftest
    /// takes the device's when the user gives none.
    pub fn connect(&self, local_psn: u32, remote: &Endpoint, o: &ConnectOpts) -> Result<(), Error> {
        let dev = self.ctx.dev.attr;
        let cap = |v: u8, max: u32| v.min(max.min(255) as u8);
        let init =
            QpAttr { qp_state: Some(QpState::Init), qp_access_flags: o.access, port_num: 1, ..Default::default() };
        self.modify(&init, attr::STATE | attr::PKEY_INDEX | attr::PORT | attr::ACCESS_FLAGS)?;
        let rtr = QpAttr {
            qp_state: Some(QpState::Rtr),
            path_mtu: o.path_mtu,
            dest_qp_num: remote.qpn,
            rq_psn: remote.psn,
            max_dest_rd_atomic: cap(o.max_dest_rd_atomic.unwrap_or(o.max_rd_atomic), dev.max_qp_rd_atom),
            min_rnr_timer: o.min_rnr_timer,
            ah: AddressVector {
                dgid: remote.gid,
                sgid_index: o.sgid_index,
                dmac: remote.mac,
                hop_limit: 64,
                traffic_class: o.traffic_class,
                flow_label: 0,
                vlan: o.vlan,
            },
            ..Default::default()
        };
        self.modify(
            &rtr,
            attr::STATE
                | attr::AV
                | attr::PATH_MTU
                | attr::DEST_QPN
                | attr::RQ_PSN
                | attr::MAX_DEST_RD_ATOMIC
                | attr::MIN_RNR_TIMER,
        )?;
        let rts = QpAttr {
            qp_state: Some(QpState::Rts),
            timeout: o.timeout,
            retry_cnt: o.retry_cnt,
            rnr_retry: o.rnr_retry,
            sq_psn: local_psn,
            max_rd_atomic: cap(o.max_rd_atomic, dev.max_qp_init_rd_atom),
            ..Default::default()
        };
        self.modify(
            &rts,
            attr::STATE | attr::TIMEOUT | attr::RETRY_CNT | attr::RNR_RETRY | attr::SQ_PSN | attr::MAX_QP_RD_ATOMIC,
        )
    }
}
