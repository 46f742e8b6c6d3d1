//! Two model NICs, each in its own thread and its own `World`, joined by a real `-netdev dgram` link on
//! 127.0.0.1: RDMA in real time across sockets, with seeded loss on one side, and ARP and ping answered.

use driver::pair::{open_host_on, send_wr, Host};
use driver::realtime::DgramLink;
use driver::*;
use model::net::{Impairments, LinkConfig, World};
use std::net::UdpSocket;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Duration;

const T: u64 = 20_000_000_000; // 20 s of real time

fn sockets() -> (UdpSocket, UdpSocket) {
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    a.connect(b.local_addr().unwrap()).unwrap();
    b.connect(a.local_addr().unwrap()).unwrap();
    (a, b)
}

/// What each side tells the other out of band: its QP, and its buffer's address and R_Key.
type Hello = (Endpoint, u64, u32);

/// Host `i` attached to `sock`, with loss `loss` on its side; its QP is connected to the peer `rx` names,
/// whose buffer it returns.
fn host(i: usize, sock: UdpSocket, loss: f64, seed: u64, tx: Sender<Hello>, rx: Receiver<Hello>) -> (Host, (u64, u32)) {
    // A 1 Gb/s port and link: frames leave as a UDP path between two processes can carry them (at 100 Gb/s
    // a 1 MiB READ's responses would leave in one burst and overflow the peer's socket buffer).
    let faults = Impairments { loss, ..Default::default() };
    let link = LinkConfig { gbps: 1.0, faults, ..Default::default() };
    let nic = model::NicConfig { port_mbps: 1000, ..driver::pair::nic_config() };
    let w = shared(World::attached(nic, link, seed));
    let backend = ModelBackend::attached(w, DgramLink::from_socket(sock).unwrap());
    let h = open_host_on(Box::new(backend), i, 1, 1 << 22, QpCap::default(), false).unwrap();
    tx.send((h.endpoint(0, 100 + i as u32), h.mr.addr, h.mr.rkey)).unwrap();
    let (peer, addr, rkey) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    // The ACK timeout (67 ms) leaves room for a thread that is not scheduled for a while.
    let o = ConnectOpts { path_mtu: 3, timeout: 14, ..Default::default() };
    h.qps[0].connect(100 + i as u32, &peer, &o).unwrap();
    (h, (addr, rkey))
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// A WRITEs 1 MiB into B and READs it back into another buffer; B waits for a SEND that says A is done.
fn run(loss: f64) {
    let (sa, sb) = sockets();
    let (to_b, from_a) = std::sync::mpsc::channel();
    let (to_a, from_b) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let b = std::thread::spawn(move || {
        let (b, _) = host(1, sb, 0.0, 2, to_a, from_a);
        b.qps[0].post_recv(&RecvWr { wr_id: 7, sg_list: vec![b.sge(3 << 20, 64)] }).unwrap();
        let c = b.cq.wait(1, T).unwrap();
        assert_eq!((c.len(), c[0].wr_id, c[0].status), (1, 7, WcStatus::Success));
        assert_eq!(b.buf.read(0, 1 << 20).unwrap(), pattern(1 << 20));
        // Keep B's NIC running (its ACK for the SEND may not have left yet) until A is done.
        while done_rx.try_recv().is_err() {
            assert!(b.cq.wait(1, 10_000_000).unwrap().is_empty());
        }
    });
    let (a, (addr, rkey)) = host(0, sa, loss, 1, to_b, from_b);
    a.buf.write(0, &pattern(1 << 20)).unwrap();
    let mut write = send_wr(SendOp::RdmaWrite, &a, &a, 0, 1 << 20, 1);
    (write.remote_addr, write.rkey) = (addr, rkey);
    let mut read = send_wr(SendOp::RdmaRead, &a, &a, 1 << 20, 1 << 20, 2);
    (read.remote_addr, read.rkey) = (addr, rkey);
    let wrs = [write, read, send_wr(SendOp::Send, &a, &a, 0, 64, 3)];
    a.qps[0].post_send_list(&wrs).unwrap();
    let c = a.cq.wait(3, T).unwrap();
    let got: Vec<_> = c.iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(got, vec![(1, WcStatus::Success), (2, WcStatus::Success), (3, WcStatus::Success)]);
    assert_eq!(a.buf.read(1 << 20, 1 << 20).unwrap(), pattern(1 << 20), "read back");
    done_tx.send(()).unwrap();
    b.join().unwrap();
    if loss > 0.0 {
        assert!(a.ctx.counter(wire::contract::regs::Counter::retransmitted_packets) > 0, "loss was recovered");
    }
}

#[test]
fn rdma_across_a_real_link() {
    run(0.0);
}

#[test]
fn rdma_across_a_real_link_with_loss() {
    run(0.02);
}

/// A stall of the process (here A's thread asleep for a second, so its NIC does not run) is not a silent
/// peer. A WRITE posted just before the stall leaves before A's ACK timer can fire; a WRITE whose ACK came
/// in during the stall has it read before the timer fires. Neither is retried, let alone failed.
#[test]
fn a_stall_of_the_process_is_not_a_silent_peer() {
    let (sa, sb) = sockets();
    let (to_b, from_a) = std::sync::mpsc::channel();
    let (to_a, from_b) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let b = std::thread::spawn(move || {
        let (b, _) = host(1, sb, 0.0, 2, to_a, from_a);
        while done_rx.try_recv().is_err() {
            assert!(b.cq.wait(1, 10_000_000).unwrap().is_empty());
        }
    });
    let (a, (addr, rkey)) = host(0, sa, 0.0, 1, to_b, from_b);
    for (wr_id, sent_first) in [(1, false), (2, true)] {
        let mut w = send_wr(SendOp::RdmaWrite, &a, &a, 0, 4096, wr_id);
        (w.remote_addr, w.rkey) = (addr, rkey);
        a.qps[0].post_send(&w).unwrap();
        if sent_first {
            // Runs A's NIC for a moment: the WRITE leaves, and B's ACK comes in during the stall. Should this
            // thread lose the CPU for longer than the loopback's round trip within that moment, the ACK is
            // read at once instead: no stall falls between the WRITE and its ACK, and nothing is left to see.
            let early = a.cq.wait(1, 1_000).unwrap();
            if let [c] = early.as_slice() {
                assert_eq!((c.wr_id, c.status), (wr_id, WcStatus::Success), "the ACK read at once: {early:?}");
                continue;
            }
        }
        std::thread::sleep(Duration::from_secs(1));
        let c = a.cq.wait(1, T).unwrap();
        assert_eq!((c.len(), c[0].wr_id, c[0].status), (1, wr_id, WcStatus::Success));
    }
    done_tx.send(()).unwrap();
    b.join().unwrap();
    let counter = |c| a.ctx.counter(c);
    use wire::contract::regs::Counter;
    assert_eq!((counter(Counter::local_ack_timeouts), counter(Counter::retransmitted_packets)), (0, 0));
}

/// A peer outside the simulation (here a bare socket, as QEMU's dgram netdev is) resolves the NIC's MAC:
/// the ARP request goes in as one datagram and the NIC's reply comes back as one.
#[test]
fn arp_across_a_real_link() {
    let (sa, peer) = sockets();
    let w = shared(World::attached(driver::pair::nic_config(), LinkConfig::default(), 1));
    let a = open_host_on(
        Box::new(ModelBackend::attached(w, DgramLink::from_socket(sa).unwrap())),
        0,
        1,
        4096,
        QpCap::default(),
        false,
    )
    .unwrap();
    let me = [0x52, 0x54, 0, 0, 0, 9];
    let req = wire::arp::request_frame(me, [10, 0, 0, 9], [10, 0, 0, 1]);
    peer.send(&req).unwrap();
    assert!(a.cq.wait(1, 50_000_000).unwrap().is_empty()); // 50 ms of the NIC running in real time
    peer.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 2048];
    let n = peer.recv(&mut buf).unwrap();
    let (_, rep) = wire::arp::parse_frame(&buf[..n]).expect("an ARP frame");
    assert_eq!((rep.oper, rep.sha, rep.spa, rep.tha), (wire::arp::REPLY, a.mac, [10, 0, 0, 1], me));
}

/// Host `i` on `sock` with its own TCP stack at 10.0.0.(i + 1).
fn attach(i: usize, sock: UdpSocket) -> (Host, driver::netdev::Stack) {
    let w = shared(World::attached(driver::pair::nic_config(), LinkConfig::default(), i as u64));
    let backend = ModelBackend::attached(w, DgramLink::from_socket(sock).unwrap());
    let h = open_host_on(Box::new(backend), i, 1, 4096, QpCap::default(), false).unwrap();
    let stack = driver::netdev::Stack::new(&h.ctx, &h.pd, h.mac, [10, 0, 0, i as u8 + 1], 24).unwrap();
    (h, stack)
}

/// The hosts' own TCP through their NICs (smoltcp on the raw packet QP): B's stack resolves A's MAC (A's NIC
/// answers the ARP), connects, and the two exchange messages as rc_pingpong's out-of-band step does (its 52-byte "LID:QPN:PSN:GID" message).
#[test]
fn tcp_through_the_nics() {
    let (sa, sb) = sockets();
    let b = std::thread::spawn(move || {
        let (h, mut s) = attach(1, sb);
        let c = s.connect([10, 0, 0, 1], 18515, 5_000_000_000).unwrap();
        s.send(&c, b"0000:000102:000456:00000000000000000000ffff0a000002\0", 5_000_000_000).unwrap();
        let reply = s.recv(&c, 52, 5_000_000_000).unwrap();
        s.close(c, 1_000_000_000);
        (reply, h.ctx.counter(wire::contract::regs::Counter::raw_rx_frames))
    });
    let (h, mut s) = attach(0, sa);
    let c = s.accept(18515, 10_000_000_000).unwrap();
    let got = s.recv(&c, 52, 5_000_000_000).unwrap();
    assert_eq!(&got[..], b"0000:000102:000456:00000000000000000000ffff0a000002\0");
    s.send(&c, b"0000:000203:000789:00000000000000000000ffff0a000001\0", 5_000_000_000).unwrap();
    s.close(c, 5_000_000_000); // runs A's stack until both sides have closed
    let (reply, b_raw) = b.join().unwrap();
    assert_eq!(&reply[..], b"0000:000203:000789:00000000000000000000ffff0a000001\0");
    assert_eq!(h.ctx.counter(wire::contract::regs::Counter::arp_replies), 1, "A's NIC answered B's ARP");
    assert!(b_raw >= 2, "B's stack heard A through its raw packet QP");
    assert_eq!(s.errors(), 0);
}

/// `flush` holds a host until its peer has acknowledged everything sent: here the peer runs its NIC but
/// not its stack for 3 s after connecting (a host busy in its RDMA loop, longer than `close`'s wait), and
/// A's `flush` still returns only after the peer came back, with the message delivered.
#[test]
fn tcp_flush_returns_only_once_the_peer_has_everything() {
    let (sa, sb) = sockets();
    let (resumed_tx, resumed_rx) = std::sync::mpsc::channel();
    let b = std::thread::spawn(move || {
        let (h, mut s) = attach(1, sb);
        let c = s.connect([10, 0, 0, 1], 18516, 5_000_000_000).unwrap();
        // B's NIC runs (what B's stack posted leaves, what arrives lands), its stack does not.
        let busy = std::time::Instant::now();
        while busy.elapsed() < Duration::from_secs(3) {
            h.ctx.backend().progress();
        }
        resumed_tx.send(std::time::Instant::now()).unwrap();
        let got = s.recv(&c, 4, 5_000_000_000).unwrap();
        s.close(c, 1_000_000_000);
        got
    });
    let (_h, mut s) = attach(0, sa);
    let c = s.accept(18516, 10_000_000_000).unwrap();
    s.send(&c, b"keys", 5_000_000_000).unwrap();
    s.flush(&c, 10_000_000_000).expect("B acknowledged everything");
    let returned = std::time::Instant::now();
    s.close(c, 1_000_000_000);
    let resumed = resumed_rx.recv().unwrap();
    assert!(returned > resumed, "flush returned {:?} before B ran its stack again", resumed - returned);
    assert_eq!(&b.join().unwrap()[..], b"keys");
}
