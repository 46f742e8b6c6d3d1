//! The host's own network stack through the NIC: the raw packet QP as a `smoltcp` device, and a small
//! blocking TCP client/server on it for the tools' out-of-band exchanges (`ibv_rc_pingpong`'s, perftest's).
//! The NIC answers ARP and ping for its address itself; what reaches this device is everything else that
//! is not RoCEv2: the peer's ARP replies, TCP.

use crate::{access, Buffer, Context, Cq, Error, Mr, Pd, Qp, QpCap, RecvWr, SendOp, SendWr, Sge, WcOpcode, WcStatus};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, IpEndpoint, Ipv4Address};
use std::collections::{HashMap, VecDeque};

/// Receive and send buffers, each a slot of `SLOT` bytes.
const SLOTS: usize = 64;
/// A slot holds the longest frame the NIC takes (its RoCE maximum; the IP MTU follows from it).
const SLOT: usize = wire::MAX_FRAME_LEN;

/// The raw packet QP, its CQ and its buffers, as a network device.
pub struct RawEth {
    ctx: Context,
    qp: Qp,
    cq: Cq,
    rx: Buffer,
    rx_mr: Mr,
    tx: Buffer,
    tx_mr: Mr,
    tx_free: Vec<u64>,
    received: VecDeque<Vec<u8>>,
    /// The MAC each IPv4 address was last heard from (a host's ARP cache, learned from what arrives).
    neighbors: HashMap<[u8; 4], [u8; 6]>,
    /// Frames smoltcp handed over that could not be posted, and receive completions in error.
    pub errors: u64,
}

impl RawEth {
    /// Creates the raw packet QP on `pd`, brings it to RTS and posts its receive buffers.
    pub fn open(ctx: &Context, pd: &Pd) -> Result<Self, Error> {
        let cq = ctx.create_cq(4 * SLOTS as u32)?;
        let cap = QpCap {
            max_send_wr: SLOTS as u32,
            max_recv_wr: SLOTS as u32,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let qp = pd.create_raw_qp(&cq, &cq, cap)?;
        qp.activate_raw()?;
        let rx = ctx.alloc_buf(SLOTS * SLOT)?;
        let tx = ctx.alloc_buf(SLOTS * SLOT)?;
        let rx_mr = pd.reg_buf(&rx, access::LOCAL_WRITE)?;
        let tx_mr = pd.reg_buf(&tx, 0)?;
        let dev = RawEth {
            ctx: ctx.clone(),
            qp,
            cq,
            rx,
            rx_mr,
            tx,
            tx_mr,
            tx_free: (0..SLOTS as u64).collect(),
            received: VecDeque::new(),
            neighbors: HashMap::new(),
            errors: 0,
        };
        for slot in 0..SLOTS as u64 {
            dev.post_rx(slot)?;
        }
        Ok(dev)
    }

    fn post_rx(&self, slot: u64) -> Result<(), Error> {
        let sg = Sge { addr: self.rx.addr + slot * SLOT as u64, length: SLOT as u32, lkey: self.rx_mr.lkey };
        self.qp.post_recv(&RecvWr { wr_id: slot, sg_list: vec![sg] })
    }

    /// Takes in what completed: received frames (their buffers posted again) and sent ones (slots freed).
    fn reap(&mut self) {
        let Ok(wcs) = self.cq.poll(4 * SLOTS) else { return };
        for wc in wcs {
            match (wc.opcode, wc.status) {
                (WcOpcode::Recv, WcStatus::Success) => {
                    let at = (wc.wr_id as usize) * SLOT;
                    if let Ok(f) = self.rx.read(at, wc.byte_len as usize) {
                        self.learn(&f);
                        self.received.push_back(f);
                    }
                    if self.post_rx(wc.wr_id).is_err() {
                        self.errors += 1;
                    }
                }
                (WcOpcode::Send, _) => {
                    self.tx_free.push(wc.wr_id);
                    if wc.status != WcStatus::Success {
                        self.errors += 1;
                    }
                }
                _ => self.errors += 1,
            }
        }
    }

    /// Notes the sender of an IPv4 or ARP frame.
    fn learn(&mut self, f: &[u8]) {
        let Ok(eth) = wire::eth::EthernetFrame::new_checked(f) else { return };
        let ip = match eth.ethertype() {
            wire::eth::ethertype::IPV4 => wire::ipv4::Ipv4Packet::new_checked(eth.payload()).ok().map(|p| p.src()),
            wire::eth::ethertype::ARP => wire::arp::ArpRepr::parse(eth.payload()).map(|a| a.spa),
            _ => None,
        };
        if let Some(ip) = ip {
            self.neighbors.insert(ip, eth.src());
        }
    }

    fn send_frame(&mut self, slot: u64, frame: &[u8]) {
        let at = slot as usize * SLOT;
        let wr = SendWr {
            wr_id: slot,
            opcode: Some(SendOp::Send),
            send_flags: wire::contract::wqe::send_flags::SIGNALED,
            sg_list: vec![Sge { addr: self.tx.addr + at as u64, length: frame.len() as u32, lkey: self.tx_mr.lkey }],
            ..Default::default()
        };
        if self.tx.write(at, frame).and_then(|()| self.qp.post_send(&wr)).is_err() {
            self.errors += 1;
            self.tx_free.push(slot);
        }
    }

    /// The device's clock, as smoltcp counts time.
    pub fn now(&self) -> Instant {
        Instant::from_micros((self.ctx.backend().now_ns() / 1000) as i64)
    }
}

/// A received frame.
pub struct RxToken(Vec<u8>);

impl smoltcp::phy::RxToken for RxToken {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

/// Room for one frame to send.
pub struct TxToken<'a>(&'a mut RawEth);

impl smoltcp::phy::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0u8; len];
        let r = f(&mut frame);
        match self.0.tx_free.pop() {
            Some(slot) if len <= SLOT => self.0.send_frame(slot, &frame),
            _ => self.0.errors += 1,
        }
        r
    }
}

impl Device for RawEth {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _: Instant) -> Option<(RxToken, TxToken<'_>)> {
        self.reap();
        let f = self.received.pop_front()?;
        Some((RxToken(f), TxToken(self)))
    }

    fn transmit(&mut self, _: Instant) -> Option<TxToken<'_>> {
        self.reap();
        (!self.tx_free.is_empty()).then_some(TxToken(self))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = SLOT - wire::eth::VLAN_LEN;
        c
    }
}

/// The host's IPv4 stack on the raw packet QP: one address, TCP sockets, driven by `poll`.
pub struct Stack {
    dev: RawEth,
    iface: Interface,
    sockets: SocketSet<'static>,
}

impl Stack {
    /// The stack with address `ip`/`prefix` and the NIC's MAC `mac`.
    pub fn new(ctx: &Context, pd: &Pd, mac: [u8; 6], ip: [u8; 4], prefix: u8) -> Result<Self, Error> {
        let mut dev = RawEth::open(ctx, pd)?;
        let cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        let now = dev.now();
        let mut iface = Interface::new(cfg, &mut dev, now);
        iface.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::new(IpAddress::Ipv4(Ipv4Address::from(ip)), prefix));
        });
        Ok(Stack { dev, iface, sockets: SocketSet::new(Vec::new()) })
    }

    /// Lets the device run once and the stack handle what came and what is due.
    pub fn poll(&mut self) {
        self.dev.ctx.backend().progress();
        let now = self.dev.now();
        self.iface.poll(now, &mut self.dev, &mut self.sockets);
    }

    fn new_socket(&mut self) -> SocketHandle {
        let rx = tcp::SocketBuffer::new(vec![0; 16384]);
        let tx = tcp::SocketBuffer::new(vec![0; 16384]);
        self.sockets.add(tcp::Socket::new(rx, tx))
    }

    /// Polls until `done` holds or `timeout_ns` of device time pass.
    fn until(&mut self, timeout_ns: u64, mut done: impl FnMut(&mut Self) -> bool) -> Result<(), Error> {
        let end = self.dev.ctx.backend().now_ns() + timeout_ns;
        loop {
            self.poll();
            if done(self) {
                return Ok(());
            }
            if self.dev.ctx.backend().now_ns() > end {
                return Err(Error::Timeout("TCP"));
            }
        }
    }

    /// A TCP connection to `ip:port`, established. A refused attempt (the server is not listening yet) is
    /// tried again `RETRY_NS` later, as perftest's clients do, until `timeout_ns` pass.
    pub fn connect(&mut self, ip: [u8; 4], port: u16, timeout_ns: u64) -> Result<TcpConn, Error> {
        const RETRY_NS: u64 = 200_000_000;
        let h = self.new_socket();
        let remote = IpEndpoint::new(IpAddress::Ipv4(Ipv4Address::from(ip)), port);
        let end = self.dev.ctx.backend().now_ns() + timeout_ns;
        let mut local = 49152 + (self.dev.ctx.backend().now_ns() % 8192) as u16;
        loop {
            local = local.wrapping_add(1).max(49152);
            let cx = self.iface.context();
            let sock = self.sockets.get_mut::<tcp::Socket>(h);
            sock.connect(cx, remote, local).map_err(|_| Error::Network("TCP connect refused by the stack"))?;
            let left = end.saturating_sub(self.dev.ctx.backend().now_ns());
            let mut closed_at = None;
            let r = self.until(left, |s| {
                let sock = s.sockets.get::<tcp::Socket>(h);
                if !sock.is_active() {
                    let now = s.dev.ctx.backend().now_ns();
                    return now >= *closed_at.get_or_insert(now) + RETRY_NS;
                }
                sock.may_send()
            });
            if r.is_err() {
                self.sockets.remove(h);
                return Err(Error::Timeout("TCP connect"));
            }
            if self.sockets.get::<tcp::Socket>(h).may_send() {
                return Ok(TcpConn(h));
            }
        }
    }

    /// The first TCP connection to arrive on `port`, established.
    pub fn accept(&mut self, port: u16, timeout_ns: u64) -> Result<TcpConn, Error> {
        let h = self.new_socket();
        self.sockets
            .get_mut::<tcp::Socket>(h)
            .listen(port)
            .map_err(|_| Error::Network("TCP listen refused by the stack"))?;
        self.until(timeout_ns, |s| s.sockets.get::<tcp::Socket>(h).may_send())?;
        Ok(TcpConn(h))
    }

    /// Sends all of `data` on `c`.
    pub fn send(&mut self, c: &TcpConn, mut data: &[u8], timeout_ns: u64) -> Result<(), Error> {
        self.until(timeout_ns, |s| {
            let sock = s.sockets.get_mut::<tcp::Socket>(c.0);
            if let Ok(n) = sock.send_slice(data) {
                data = &data[n..];
            }
            data.is_empty()
        })
    }

    /// Receives exactly `n` bytes on `c`.
    pub fn recv(&mut self, c: &TcpConn, n: usize, timeout_ns: u64) -> Result<Vec<u8>, Error> {
        let mut got = Vec::with_capacity(n);
        self.until(timeout_ns, |s| {
            let sock = s.sockets.get_mut::<tcp::Socket>(c.0);
            let mut buf = vec![0u8; n - got.len()];
            if let Ok(k) = sock.recv_slice(&mut buf) {
                got.extend_from_slice(&buf[..k]);
            }
            // Once the peer has closed its half (FIN or RST) and nothing is buffered, nothing more comes.
            got.len() == n || !sock.may_recv()
        })?;
        if got.len() < n {
            return Err(Error::Network("TCP: the peer closed before sending everything"));
        }
        Ok(got)
    }

    /// Whether the peer has closed its half of `c` (FIN or RST) with nothing left unread: it will send
    /// nothing more.
    pub fn peer_closed(&self, c: &TcpConn) -> bool {
        !self.sockets.get::<tcp::Socket>(c.0).may_recv()
    }

    /// Bytes the peer sent on `c` that have not been read yet.
    pub fn unread(&self, c: &TcpConn) -> usize {
        self.sockets.get::<tcp::Socket>(c.0).recv_queue()
    }

    /// Closes `c` (FIN), letting the stack run until the peer has it or `timeout_ns` pass.
    pub fn close(&mut self, c: TcpConn, timeout_ns: u64) {
        self.sockets.get_mut::<tcp::Socket>(c.0).close();
        let _ = self.until(timeout_ns, |s| !s.sockets.get::<tcp::Socket>(c.0).is_active());
        self.sockets.remove(c.0);
    }

    /// Runs the stack until the peer has acknowledged every byte sent on `c`, or `timeout_ns` pass (an
    /// error). Once this returns, what was sent no longer depends on this host staying up: `close` alone
    /// gives up after its own timeout, and a last segment that was lost, or that the peer was slow to
    /// acknowledge, is then never sent again.
    pub fn flush(&mut self, c: &TcpConn, timeout_ns: u64) -> Result<(), Error> {
        self.until(timeout_ns, |s| s.sockets.get::<tcp::Socket>(c.0).send_queue() == 0)
            .map_err(|_| Error::Timeout("TCP: the peer's acknowledgement of everything sent"))
    }

    /// The MAC `ip` was last heard from, if it was: after a TCP exchange with a peer, the peer's.
    pub fn mac_of(&self, ip: [u8; 4]) -> Option<[u8; 6]> {
        self.dev.neighbors.get(&ip).copied()
    }

    /// Frames the device could not post or received in error.
    pub fn errors(&self) -> u64 {
        self.dev.errors
    }
}

/// An established TCP connection of a `Stack`.
pub struct TcpConn(SocketHandle);
