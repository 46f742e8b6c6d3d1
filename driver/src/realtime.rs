//! A simulated NIC on a real Ethernet link, in QEMU's `-netdev dgram` format: one Ethernet frame per UDP
//! datagram, no header, no FCS. While attached, simulated time follows the wall clock, so the NIC's timers
//! (ACK timeout, RNR wait, DCQCN) run in real time and a peer outside the process sees a real NIC.
//!
//! Two rules keep a stall of this process (not scheduled, or its machine paused) from looking like a silent
//! peer. Frames waiting on the link are taken in before the NIC's time moves on, so a response that arrived
//! before a timer was due is seen first. And the NIC's time moves at most `MAX_STEP` between two looks at the
//! link: over a longer stall its clock stops, as a paused machine's would, instead of firing a run of ACK
//! timeouts (and failing the QP) before it has sent a retry or read an answer.

use crate::backend::lock_world as lock;
use model::net::World;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest datagram taken from the link: more than any Ethernet frame the NIC accepts.
const MAX_DATAGRAM: usize = 16384;
/// The socket receive buffer asked for (the kernel caps it at `net.core.rmem_max`): frames that arrive
/// while this thread is not scheduled wait there instead of being dropped.
const RECV_BUFFER: usize = 4 << 20;
/// The longest sleep between two looks at the link.
const POLL: Duration = Duration::from_micros(100);
/// The furthest the NIC's time moves between two looks at the link: well under the shortest ACK timeout a
/// QP is given here (67 ms), so a stall costs at most one retry.
const MAX_STEP_PS: u64 = 10_000_000_000;

/// One end of a `-netdev dgram` link.
pub struct DgramLink {
    sock: UdpSocket,
}

impl DgramLink {
    /// Binds `local` and exchanges frames with `peer` only.
    pub fn open(local: SocketAddr, peer: SocketAddr) -> io::Result<Self> {
        let sock = UdpSocket::bind(local)?;
        sock.connect(peer)?;
        Self::from_socket(sock)
    }

    /// A socket already bound and connected to the peer.
    pub fn from_socket(sock: UdpSocket) -> io::Result<Self> {
        // Best effort: a smaller buffer only means more loss for go-back-N to recover.
        let _ = socket2::SockRef::from(&sock).set_recv_buffer_size(RECV_BUFFER);
        // Never blocks: `pump` sleeps between looks instead.
        sock.set_nonblocking(true)?;
        Ok(DgramLink { sock })
    }

    /// The next frame waiting on the link, if any (never blocks).
    pub fn recv_frame(&self) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        let n = self.sock.recv(&mut buf).ok()?;
        buf.truncate(n);
        Some(buf)
    }

    /// Sends `frame` to the peer. A frame the socket refuses (the peer's port is closed) is lost, as a
    /// cable would lose it.
    pub fn send_frame(&self, frame: &[u8]) {
        let _ = self.sock.send(frame);
    }
}

/// Moves frames between an attached `World` (`World::attached`) and its link, keeping simulated time at
/// the wall clock since `new`, less the stalls it skipped.
pub struct RealTime {
    link: DgramLink,
    start: Instant,
    /// Wall-clock time (ps) the NIC's clock did not follow: the parts of stalls beyond `MAX_STEP_PS`.
    skipped_ps: AtomicU64,
}

impl RealTime {
    pub fn new(link: DgramLink) -> Self {
        RealTime { link, start: Instant::now(), skipped_ps: AtomicU64::new(0) }
    }

    /// The time the NIC's clock should show: the wall clock since `new` less what was skipped, and at most
    /// `MAX_STEP_PS` past `now` (the rest is skipped from here on).
    fn target_ps(&self, now: u64) -> u64 {
        let wall = self.start.elapsed().as_nanos() as u64 * model::PS_PER_NS;
        let t = wall.saturating_sub(self.skipped_ps.load(Ordering::Relaxed));
        if t > now + MAX_STEP_PS {
            self.skipped_ps.fetch_add(t - now - MAX_STEP_PS, Ordering::Relaxed);
            now + MAX_STEP_PS
        } else {
            t
        }
    }

    /// Brings `world` to the wall clock's time and takes in every frame waiting on the link; then, when
    /// nothing is due sooner, sleeps up to `max_wait` (in steps of at most `POLL`: a socket timeout would round
    /// up to the kernel's tick, milliseconds) and does the same again.
    pub fn pump(&self, world: &Mutex<World>, max_wait: Duration) {
        self.exchange(world);
        let due_in = {
            let mut w = lock(world);
            let now = w.now;
            w.next_time().map(|t| t.saturating_sub(now) / model::PS_PER_NS)
        };
        let wait = due_in.map_or(max_wait, |ns| max_wait.min(Duration::from_nanos(ns))).min(POLL);
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        self.exchange(world);
    }

    /// Hands `world` every frame the link holds (at the time it has reached: they arrived since), then runs
    /// it to now, sending what left it.
    fn exchange(&self, world: &Mutex<World>) {
        while let Some(f) = self.link.recv_frame() {
            lock(world).inject_external(f);
        }
        self.run_to_now(world);
    }

    /// Runs `world` to the time its clock should show and sends the frames that left it.
    fn run_to_now(&self, world: &Mutex<World>) {
        let out = {
            let mut w = lock(world);
            let now = self.target_ps(w.now);
            w.run_until(now);
            w.take_external()
        };
        for f in out {
            self.link.send_frame(&f);
        }
    }
}
