//! The raw Ethernet path: the NIC answers ARP and ICMP echo for its own addresses, steers every other frame
//! that is not RoCEv2 to the raw packet QP, and sends that QP's WQEs as whole frames; RoCE traffic beside it
//! is untouched.

use driver::pair::{connect, open_host, raw_frame, send_wr, Host};
use driver::*;
use model::net::{LinkConfig, World};
use wire::arp::{self, ArpRepr};
use wire::contract::regs::Counter;

const T: u64 = 10_000_000_000;

struct Side {
    host: Host,
    raw: Qp,
    cq: Cq,
    bufs: Buffer,
}

fn setup() -> (SharedWorld, Vec<Host>) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 5));
    let hosts: Vec<_> = (0..2).map(|i| open_host(&w, i, 1, 1 << 16, QpCap::default(), false).unwrap()).collect();
    connect(&hosts[0], 0, 1, &hosts[1], 0, 2, &ConnectOpts::default()).unwrap();
    w.lock().unwrap().capture();
    (w, hosts)
}

/// A raw packet QP on `host` with its own CQ and `n` receive buffers of 2 KiB posted.
fn raw_qp(host: Host, n: u64) -> Side {
    let cq = host.ctx.create_cq(64).unwrap();
    let raw = host.pd.create_raw_qp(&cq, &cq, QpCap::default()).unwrap();
    raw.activate_raw().unwrap();
    let bufs = host.ctx.alloc_buf(16 * 2048).unwrap();
    let mr = host.pd.reg_buf(&bufs, access::LOCAL_WRITE).unwrap();
    for i in 0..n {
        let sg = vec![Sge { addr: bufs.addr + 2048 * i, length: 2048, lkey: mr.lkey }];
        raw.post_recv(&RecvWr { wr_id: 1000 + i, sg_list: sg }).unwrap();
    }
    Side { host, raw, cq, bufs }
}

fn from_node(w: &World, n: usize) -> Vec<Vec<u8>> {
    w.captured().iter().filter(|(_, k, _)| *k == n).map(|(_, _, f)| f.clone()).collect()
}

fn run(w: &SharedWorld) {
    let t = w.lock().unwrap().now;
    w.lock().unwrap().run_until(t + 1_000_000_000);
}

#[test]
fn the_nic_answers_arp_for_its_own_address_only() {
    let (w, h) = setup();
    let peer = [0x52, 0x54, 0, 0, 0, 9];
    w.lock().unwrap().deliver(1, arp::request_frame(peer, [10, 0, 0, 9], [10, 0, 0, 2]));
    run(&w);
    let out = from_node(&w.lock().unwrap(), 1);
    assert_eq!(out.len(), 1);
    let (eth, rep) = arp::parse_frame(&out[0]).unwrap();
    assert_eq!((eth.dst, eth.src), (peer, h[1].mac));
    assert_eq!(rep, ArpRepr { oper: arp::REPLY, sha: h[1].mac, spa: [10, 0, 0, 2], tha: peer, tpa: [10, 0, 0, 9] });
    assert_eq!(h[1].ctx.counter(Counter::arp_replies), 1);

    // For another address, or a reply: not answered, and with no raw packet QP, dropped and counted.
    w.lock().unwrap().deliver(1, arp::request_frame(peer, [10, 0, 0, 9], [10, 0, 0, 3]));
    run(&w);
    assert_eq!(from_node(&w.lock().unwrap(), 1).len(), 1);
    assert_eq!(h[1].ctx.counter(Counter::arp_replies), 1);
    assert_eq!(h[1].ctx.counter(Counter::rx_drop_not_roce), 1);
}

/// `ping` of the NIC's address is answered by the NIC; one whose reply would not fit a control-queue slot
/// (1536 bytes) is not, and goes on like any other frame that is not RoCEv2.
#[test]
fn the_nic_answers_ping() {
    let (w, h) = setup();
    let peer = [0x52, 0x54, 0, 0, 0, 9];
    let data: Vec<u8> = (0..32).collect();
    let f = wire::icmp::echo_request((peer, [10, 0, 0, 9]), (h[1].mac, [10, 0, 0, 2]), 0x1234, 7, &data);
    w.lock().unwrap().deliver(1, f.clone());
    run(&w);
    let out = from_node(&w.lock().unwrap(), 1);
    assert_eq!(out.len(), 1);
    let r = &out[0];
    assert_eq!((&r[0..6], &r[6..12]), (&peer[..], &h[1].mac[..]));
    assert_eq!((&r[26..30], &r[30..34]), (&[10, 0, 0, 2][..], &[10, 0, 0, 9][..]));
    assert_eq!((r[34], &r[38..42], &r[42..74]), (0, &f[38..42], &f[42..74]), "type 0, same id, seq and data");
    assert_eq!(wire::ipv4::checksum(&r[34..74]), 0);
    assert_eq!(h[1].ctx.counter(Counter::icmp_echo_replies), 1);
    let long = wire::icmp::echo_request((peer, [10, 0, 0, 9]), (h[1].mac, [10, 0, 0, 2]), 0x1234, 8, &[7; 1600]);
    let before = h[1].ctx.counter(Counter::rx_drop_not_roce);
    w.lock().unwrap().deliver(1, long);
    run(&w);
    assert_eq!(from_node(&w.lock().unwrap(), 1).len(), 1, "no reply to the long one");
    assert_eq!(h[1].ctx.counter(Counter::icmp_echo_replies), 1);
    assert_eq!(h[1].ctx.counter(Counter::rx_drop_not_roce), before + 1, "no raw packet QP to take it");
}

#[test]
fn frames_that_are_not_roce_reach_the_raw_qp_and_roce_does_not() {
    let (w, mut h) = setup();
    let b = raw_qp(h.pop().unwrap(), 4);
    let a = raw_qp(h.pop().unwrap(), 4);
    // A sends one experimental frame of 100 bytes and one of 20 (padded to 60 on the wire).
    let sbuf = a.host.ctx.alloc_buf(4096).unwrap();
    let smr = a.host.pd.reg_buf(&sbuf, access::LOCAL_WRITE).unwrap();
    let big = raw_frame(b.host.mac, a.host.mac, 100, 0);
    let small = raw_frame(b.host.mac, a.host.mac, 20, 0);
    sbuf.write(0, &big).unwrap();
    sbuf.write(2048, &small).unwrap();
    for (i, (off, len)) in [(0u64, 100u32), (2048, 20)].into_iter().enumerate() {
        let wr = SendWr {
            wr_id: i as u64,
            opcode: Some(SendOp::Send),
            send_flags: send_flags::SIGNALED,
            sg_list: vec![Sge { addr: sbuf.addr + off, length: len, lkey: smr.lkey }],
            ..Default::default()
        };
        a.raw.post_send(&wr).unwrap();
    }
    let sent = a.cq.wait(2, T).unwrap();
    assert_eq!(
        sent.iter().map(|c| (c.wr_id, c.status, c.opcode)).collect::<Vec<_>>(),
        vec![(0, WcStatus::Success, WcOpcode::Send), (1, WcStatus::Success, WcOpcode::Send)]
    );
    let got = b.cq.wait(2, T).unwrap();
    assert_eq!(
        got.iter().map(|c| (c.wr_id, c.status, c.byte_len, c.qp_num)).collect::<Vec<_>>(),
        vec![(1000, WcStatus::Success, 100, b.raw.qpn), (1001, WcStatus::Success, 60, b.raw.qpn)]
    );
    assert_eq!(b.bufs.read(0, 100).unwrap(), big);
    let mut padded = small.clone();
    padded.resize(60, 0);
    assert_eq!(b.bufs.read(2048, 60).unwrap(), padded);
    assert_eq!((a.host.ctx.counter(Counter::raw_tx_frames), b.host.ctx.counter(Counter::raw_rx_frames)), (2, 2));

    // RoCE beside it: an RC WRITE completes and the raw QPs see nothing of it.
    a.host.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a.host, &b.host, 0, 3000, 9)).unwrap();
    let c = a.host.cq.wait(1, T).unwrap();
    assert_eq!((c[0].wr_id, c[0].status), (9, WcStatus::Success));
    assert!(b.cq.wait(1, 1_000_000).unwrap().is_empty());
    assert_eq!(b.host.ctx.counter(Counter::raw_rx_frames), 2);
    // ARP for its address is still the NIC's, not the raw QP's.
    w.lock().unwrap().deliver(1, arp::request_frame(a.host.mac, [10, 0, 0, 1], [10, 0, 0, 2]));
    run(&w);
    assert_eq!(b.host.ctx.counter(Counter::arp_replies), 1);
    assert!(b.cq.wait(1, 1_000_000).unwrap().is_empty());
}

#[test]
fn raw_receive_needs_a_wqe_that_holds_the_frame() {
    let (w, mut h) = setup();
    let b = raw_qp(h.pop().unwrap(), 0);
    let f = raw_frame(b.host.mac, [2, 0, 0, 0, 0, 9], 600, 0);
    w.lock().unwrap().deliver(1, f.clone());
    run(&w);
    assert_eq!(b.host.ctx.counter(Counter::raw_rx_drop_no_wqe), 1);
    // A 512-byte buffer for a 600-byte frame: a local length error, and the QP ends.
    let mr = b.host.pd.reg_buf(&b.bufs, access::LOCAL_WRITE).unwrap();
    b.raw
        .post_recv(&RecvWr { wr_id: 7, sg_list: vec![Sge { addr: b.bufs.addr, length: 512, lkey: mr.lkey }] })
        .unwrap();
    b.raw
        .post_recv(&RecvWr { wr_id: 8, sg_list: vec![Sge { addr: b.bufs.addr, length: 2048, lkey: mr.lkey }] })
        .unwrap();
    w.lock().unwrap().deliver(1, f);
    run(&w);
    let c = b.cq.wait(2, T).unwrap();
    assert_eq!(
        c.iter().map(|c| (c.wr_id, c.status)).collect::<Vec<_>>(),
        vec![(7, WcStatus::LocLenErr), (8, WcStatus::WrFlushErr)]
    );
    assert_eq!(b.raw.query().unwrap().qp_state, QpState::Err as u8);
}

#[test]
fn raw_send_takes_whole_frames_only() {
    let (_w, mut h) = setup();
    let _b = raw_qp(h.pop().unwrap(), 0);
    let a = raw_qp(h.pop().unwrap(), 0);
    let sbuf = a.host.ctx.alloc_buf(4096).unwrap();
    let smr = a.host.pd.reg_buf(&sbuf, access::LOCAL_WRITE).unwrap();
    // Inline: fine.
    let f = raw_frame(driver::pair::host_mac(1), a.host.mac, 40, 0);
    sbuf.write(0, &f).unwrap();
    let mut wr = SendWr {
        wr_id: 1,
        opcode: Some(SendOp::Send),
        send_flags: send_flags::SIGNALED | send_flags::INLINE,
        sg_list: vec![Sge { addr: sbuf.addr, length: 40, lkey: smr.lkey }],
        ..Default::default()
    };
    a.raw.post_send(&wr).unwrap();
    assert_eq!(a.cq.wait(1, T).unwrap()[0].status, WcStatus::Success);
    // Shorter than an Ethernet header: a local length error, and the QP ends.
    wr.wr_id = 2;
    wr.send_flags = send_flags::SIGNALED;
    wr.sg_list[0].length = 13;
    a.raw.post_send(&wr).unwrap();
    let c = a.cq.wait(1, T).unwrap();
    assert_eq!((c[0].wr_id, c[0].status), (2, WcStatus::LocLenErr));
    assert_eq!(a.raw.query().unwrap().qp_state, QpState::Err as u8);
    assert_eq!(a.host.ctx.counter(Counter::raw_tx_frames), 1);
}
