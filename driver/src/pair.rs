//! Two (or more) simulated NICs wired up and connected through the verbs: the fixture the CLI and the
//! scenario tests share. Each side gets a PD, one CQ, one RC QP per flow and a registered buffer.

use crate::{send_flags, Buffer, ConnectOpts, Context, Cq, Endpoint, Error, ModelBackend, Mr, Pd, Qp, QpCap};
use crate::{SendOp, SendWr, Sge, SharedWorld};
use model::NicConfig;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use wire::contract::profile::Profile;
use wire::contract::verbs::access;

/// The hardware profile the test suites run the model on: `FERRITE_PROFILE` (`board` or `large`), the board
/// profile when it is unset. The CI runs the driver's suites on both.
pub fn profile() -> Profile {
    match std::env::var("FERRITE_PROFILE") {
        Ok(name) => {
            Profile::named(&name).unwrap_or_else(|| panic!("FERRITE_PROFILE={name}: no such profile (board, large)"))
        }
        Err(_) => Profile::board(),
    }
}

/// A model NIC of `profile()`, checking its invariants and packed QP context after every decision.
pub fn nic_config() -> NicConfig {
    NicConfig { checks: true, ..NicConfig::new(profile()) }
}

/// One host: its context and verbs objects.
pub struct Host {
    pub ctx: Context,
    pub pd: Pd,
    pub cq: Cq,
    pub qps: Vec<Qp>,
    pub buf: Buffer,
    pub mr: Mr,
    pub mac: [u8; 6],
    pub gid: [u8; 16],
}

/// The MAC of host `i`.
pub fn host_mac(i: usize) -> [u8; 6] {
    [0x02, 0, 0, 0, 0, i as u8 + 1]
}

/// The GID of host `i`: IPv4-mapped 10.0.0.(i+1), or fd00::(i+1) for IPv6.
pub fn host_gid(i: usize, ipv6: bool) -> [u8; 16] {
    if ipv6 {
        let mut g = [0u8; 16];
        g[0] = 0xfd;
        g[15] = i as u8 + 1;
        g
    } else {
        wire::ipv6::gid_from_ipv4([10, 0, 0, i as u8 + 1])
    }
}

/// Opens node `i` of `world` and creates its objects.
pub fn open_host(
    world: &SharedWorld,
    i: usize,
    nqps: usize,
    buf_len: usize,
    cap: QpCap,
    ipv6: bool,
) -> Result<Host, Error> {
    open_host_on(Box::new(ModelBackend::new(world.clone(), i)), i, nqps, buf_len, cap, ipv6)
}

/// Like `open_host`, on any backend: host `i`'s MAC and GID, its PD, CQ, QPs and registered buffer.
pub fn open_host_on(
    backend: Box<dyn crate::Backend>,
    i: usize,
    nqps: usize,
    buf_len: usize,
    cap: QpCap,
    ipv6: bool,
) -> Result<Host, Error> {
    let ctx = Context::open(backend)?;
    let mac = host_mac(i);
    let gid = host_gid(i, ipv6);
    ctx.set_port_mac(mac)?;
    ctx.set_gid(0, gid)?;
    let pd = ctx.alloc_pd()?;
    let cq = ctx.create_cq((cap.max_send_wr + cap.max_recv_wr) * nqps as u32)?;
    let qps = (0..nqps).map(|_| pd.create_qp(&cq, &cq, cap, false)).collect::<Result<Vec<_>, _>>()?;
    let buf = ctx.alloc_buf(buf_len)?;
    let mr = pd.reg_buf(&buf, access::ALL)?;
    Ok(Host { ctx, pd, cq, qps, buf, mr, mac, gid })
}

impl Host {
    pub fn endpoint(&self, q: usize, psn: u32) -> Endpoint {
        Endpoint { qpn: self.qps[q].qpn, psn, gid: self.gid, mac: self.mac }
    }

    /// An SGE over `len` bytes at `off` in this host's registered buffer.
    pub fn sge(&self, off: u64, len: u32) -> Sge {
        Sge { addr: self.mr.addr + off, length: len, lkey: self.mr.lkey }
    }
}

/// A signaled `op` of `len` bytes at `off` in `from`'s buffer, aimed at the same offset in `to`'s.
pub fn send_wr(op: SendOp, from: &Host, to: &Host, off: u64, len: u32, wr_id: u64) -> SendWr {
    SendWr {
        wr_id,
        opcode: Some(op),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![from.sge(off, len)],
        remote_addr: to.mr.addr + off,
        rkey: to.mr.rkey,
        ..Default::default()
    }
}

/// Connects QP `qa` of `a` with QP `qb` of `b` (initial PSNs `pa`, `pb`), each side's requester depth
/// (`max_rd_atomic`) lowered to the other's responder resources, as a connection manager agrees them.
pub fn connect(a: &Host, qa: usize, pa: u32, b: &Host, qb: usize, pb: u32, o: &ConnectOpts) -> Result<(), Error> {
    // As a connection manager does: each side's READs and atomics outstanding as requester no more than
    // the other side takes as responder (its `max_qp_rd_atom`).
    let toward = |peer: &Host| {
        let most = peer.ctx.query_device().max_qp_rd_atom.min(255) as u8;
        ConnectOpts {
            max_rd_atomic: o.max_rd_atomic.min(most),
            max_dest_rd_atomic: Some(o.max_dest_rd_atomic.unwrap_or(o.max_rd_atomic)),
            ..*o
        }
    };
    a.qps[qa].connect(pa, &b.endpoint(qb, pb), &toward(b))?;
    b.qps[qb].connect(pb, &a.endpoint(qa, pa), &toward(a))
}
/// Runs `w` for `ps` picoseconds of its time and takes the frames its NICs sent to the outside (to a peer
/// the world does not hold, such as the RTL core).
pub fn run_external(w: &SharedWorld, ps: u64) -> Vec<Vec<u8>> {
    let mut w = crate::lock_world(w);
    let until = w.now + ps;
    w.run_until(until);
    w.take_external()
}

/// One turn between a world's model NICs and the RTL core beside it: `frames` (what the world sent out) go
/// into the core's MAC, the core runs until it has taken them all in and sent every answer it owes (at most
/// `limit` cycles), and its answers, each shown to `look` first, go into the world. The core's cycles for the
/// turn, and whether it settled within the limit.
pub fn rtl_turn(
    w: &SharedWorld,
    core: &crate::rtl::RtlHandle,
    frames: Vec<Vec<u8>>,
    limit: u64,
    look: impl FnMut(&[u8]),
) -> (u64, bool) {
    let start = core.cycles();
    for f in frames {
        core.receive(f);
    }
    let settled = core.settle(limit);
    let cycles = core.cycles() - start;
    hand_over(w, core, look);
    (cycles, settled)
}

/// The frames the core has sent, each shown to `look`, into the world.
fn hand_over(w: &SharedWorld, core: &crate::rtl::RtlHandle, mut look: impl FnMut(&[u8])) {
    let answers = core.take_sent();
    let mut w = crate::lock_world(w);
    for f in answers {
        look(&f);
        w.inject_external(f);
    }
}

/// Cycles two linked RTL cores run between hand-overs of the frames they sent: the link's delay, at most.
const LINK_CHUNK: u64 = 64;

/// Two RTL cores joined by a link, running side by side: every `LINK_CHUNK` cycles the frames each has sent
/// go to the other's MAC. It runs until both are quiet and nothing has been sent for `wait` cycles (an ACK
/// timeout and more: a lost last packet is sent again when its timer runs out); the cycles it ran, or an
/// error once `limit` cycles have gone by.
pub fn rtl_link(cores: [&crate::rtl::RtlHandle; 2], wait: u64, limit: u64) -> Result<u64, String> {
    let mut ran = 0;
    let mut idle = 0;
    while idle < wait {
        for c in cores {
            c.run(LINK_CHUNK);
        }
        ran += LINK_CHUNK;
        let sent = [cores[0].take_sent(), cores[1].take_sent()];
        let quiet = sent.iter().all(Vec::is_empty) && cores.iter().all(|c| c.quiet());
        for (i, frames) in sent.into_iter().enumerate() {
            for f in frames {
                cores[1 - i].receive(f);
            }
        }
        idle = if quiet { idle + LINK_CHUNK } else { 0 };
        if ran > limit {
            return Err(format!("the cores still run after {limit} cycles"));
        }
    }
    Ok(ran)
}

/// A frame of `len` bytes (at least an Ethernet header) from `src` to `dst` of an EtherType no one answers
/// (`wire::eth::ethertype::EXPERIMENTAL`), byte `i` of its payload `tag + i`: for tests of the raw path.
pub fn raw_frame(dst: [u8; 6], src: [u8; 6], len: usize, tag: u8) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len.max(wire::eth::HEADER_LEN)).map(|i| tag.wrapping_add(i as u8)).collect();
    let eth = wire::eth::EthernetRepr { dst, src, vlan: None, ethertype: wire::eth::ethertype::EXPERIMENTAL };
    eth.emit(&mut f);
    f
}

/// Headers of a frame from `from` to `to`'s first QP, as `from`'s NIC would address it (IPv4 GIDs), for tests
/// that forge frames the model would never send.
pub fn forged_headers(from: &Host, to: &Host, opcode: wire::Opcode, psn: u32) -> wire::RoceHeaders {
    use wire::ipv6::gid_to_ipv4;
    let ip = |h: &Host| gid_to_ipv4(&h.gid).unwrap_or_default();
    wire::RoceHeaders {
        eth: wire::eth::EthernetRepr { dst: to.mac, src: from.mac, vlan: None, ethertype: 0 },
        ip: wire::IpRepr::V4(wire::ipv4::Ipv4Repr {
            src: ip(from),
            dst: ip(to),
            tos: 0,
            ttl: 64,
            ident: 0,
            payload_len: 0,
        }),
        udp_src_port: 0xC000,
        bth: wire::BthRepr {
            opcode,
            dest_qp: to.qps[0].qpn,
            psn: wire::Psn::new(psn),
            ack_req: true,
            ..Default::default()
        },
        ext: wire::ExtHeaders::default(),
    }
}

/// The model backend with a switch, for overhead measurements: MMIO writes that reach the device are
/// counted, and while `mock` is on they are dropped uncounted (a BAR nobody is behind, and no counter
/// shared between the threads that post to it).
pub struct Switchable {
    inner: ModelBackend,
    mock: Arc<AtomicBool>,
    mmio_writes: Arc<AtomicU64>,
}

impl Switchable {
    /// `inner` behind the switch `mock`, counting MMIO writes into `mmio_writes`.
    pub fn new(inner: ModelBackend, mock: Arc<AtomicBool>, mmio_writes: Arc<AtomicU64>) -> Self {
        Switchable { inner, mock, mmio_writes }
    }
}

impl crate::Backend for Switchable {
    fn mmio_read(&self, off: u32) -> u32 {
        self.inner.mmio_read(off)
    }
    fn mmio_write(&self, off: u32, val: u32) {
        if !self.mock.load(Ordering::Relaxed) {
            self.mmio_writes.fetch_add(1, Ordering::Relaxed);
            self.inner.mmio_write(off, val)
        }
    }
    fn dma_alloc(&self, len: usize) -> Result<u64, Error> {
        self.inner.dma_alloc(len)
    }
    fn dma_free(&self, iova: u64) {
        self.inner.dma_free(iova)
    }
    fn dma_read(&self, iova: u64, buf: &mut [u8]) -> Result<(), Error> {
        self.inner.dma_read(iova, buf)
    }
    fn dma_write(&self, iova: u64, data: &[u8]) -> Result<(), Error> {
        self.inner.dma_write(iova, data)
    }
    fn progress(&self) -> bool {
        self.inner.progress()
    }
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn take_interrupt(&self) -> bool {
        self.inner.take_interrupt()
    }
}
