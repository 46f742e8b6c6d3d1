//! The NIC's own ARP and ICMP echo replies on the RTL core, in lockstep with the model: requests for either
//! of its two IPv4 addresses are answered as `wire::arp::reply_frame` and `wire::icmp::echo_reply` build
//! the reply (tagged or not, padded, odd lengths, the longest echo a control-queue slot holds, all-zero
//! checksums), everything else that is not RoCEv2 is dropped and counted (no raw QP takes it), and a flood of requests while the
//! MAC stalls fills the control queue: the replies it has no room for are counted as lost.
//!
//! And the raw packet QP's sends: each WQE goes out as one whole frame (from one SGE or several, or inline),
//! padded with zeros to 60 bytes, 14 to `wire::MAX_FRAME_LEN` bytes long; a WQE that is too short or too
//! long, not a SEND, or whose data cannot be read sends nothing, completes in error and takes its QP to ERR,
//! the WQEs behind it flushed. Each a legal raw `Tx` decision whose frame, CQE and counters are the model's.
//!
//! And its receive: every other frame that is not RoCEv2 lands whole in the lowest-numbered raw QP's next
//! receive WQE, or is dropped and counted; a WQE that cannot hold it or fails its checks ends the QP.

use driver::rtl::RtlBackend;
use driver::*;
use hdl::Width;
use wire::contract::regs::Counter;
use wire::{arp, icmp, ipv4};

#[macro_use]
mod widths;

const MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
const PEER: [u8; 6] = [0x52, 0x54, 0, 0, 0, 9];
const ME: [u8; 4] = [10, 0, 0, 2];
const ME2: [u8; 4] = [10, 0, 0, 3];
const OTHER: [u8; 4] = [10, 0, 0, 4];
/// The last four bytes of the NIC's GID that is not IPv4-mapped: not one of its addresses.
const NOT_V4: [u8; 4] = [10, 0, 0, 5];
const PEER_IP: [u8; 4] = [10, 0, 0, 9];
const LIMIT: u64 = 1_000_000;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED_0A70)
}

/// `f` with an 802.1Q tag `tci` after its MAC addresses.
fn tagged(f: &[u8], tci: u16) -> Vec<u8> {
    let mut t = f[..12].to_vec();
    t.extend(wire::eth::ethertype::VLAN.to_be_bytes());
    t.extend(tci.to_be_bytes());
    t.extend(&f[12..]);
    t
}

/// An echo request from the peer to `dst` with `data`.
fn ping(dst: [u8; 4], seq: u16, data: &[u8]) -> Vec<u8> {
    icmp::echo_request((PEER, PEER_IP), (MAC, dst), 0x1c2b, seq, data)
}

/// `f` (untagged) with its IPv4 header changed by `edit` and its checksum made good again.
fn ip_edited(mut f: Vec<u8>, edit: impl Fn(&mut [u8])) -> Vec<u8> {
    edit(&mut f[14..34]);
    f[24..26].fill(0);
    let c = ipv4::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

/// The reply the NIC owes `f`, as the wire crate builds it (checked against Linux's in its own tests).
fn reply_to(f: &[u8]) -> Vec<u8> {
    if let Some((eth, req)) = arp::parse_frame(f) {
        return arp::reply_frame(&eth, &req, MAC);
    }
    let req = icmp::parse_echo_request(f).expect("an echo request");
    icmp::echo_reply(f, &req)
}

/// Every request, and whether the NIC answers it.
fn requests() -> Vec<(&'static str, Vec<u8>, bool)> {
    let req = |tpa| arp::request_frame(PEER, PEER_IP, tpa);
    let mut arp_reply = req(ME);
    arp_reply[21] = arp::REPLY as u8;
    let mut htype = req(ME);
    htype[15] = 6;
    let mut unicast_other = req(ME);
    unicast_other[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0x77]);
    let mut padded = req(ME);
    padded.resize(100, 0xa5);
    let mut bad_icmp = ping(ME, 5, &[1, 2, 3]);
    bad_icmp[40] ^= 1;
    let mut bad_ip = ping(ME, 6, &[1, 2, 3]);
    bad_ip[24] ^= 1;
    let fragment = ip_edited(ping(ME, 7, &[9; 24]), |h| h[6] |= 0x20);
    let mut trailing = ping(ME, 8, &[]);
    trailing.resize(70, 0x5a);
    let mut to_all = ping(ME, 9, &[4; 10]);
    to_all[..6].fill(0xff);
    let long_data: Vec<u8> = (0..1494).map(|i| (i * 7) as u8).collect();
    vec![
        ("ARP for the first address", req(ME), true),
        ("ARP for the second address", req(ME2), true),
        ("ARP for another address", req(OTHER), false),
        ("ARP for the end of a GID that is not IPv4-mapped", req(NOT_V4), false),
        ("an ARP reply", arp_reply, false),
        ("ARP, tagged", tagged(&req(ME), 0xa064), true),
        ("ARP of another hardware type", htype, false),
        ("ARP to another MAC", unicast_other, false),
        ("ARP padded to 100 bytes", padded, true),
        ("ping, all zero (checksum 0xffff)", icmp::echo_request((PEER, PEER_IP), (MAC, ME), 0, 0, &[]), true),
        ("ping, one byte", ping(ME, 1, &[0xee]), true),
        ("ping, 32 bytes", ping(ME2, 2, &(0..32).collect::<Vec<u8>>()), true),
        ("ping, the longest a slot holds", ping(ME, 3, &long_data), true),
        ("ping, a byte too long", ping(ME, 4, &[3; 1495]), false),
        ("ping, tagged", tagged(&ping(ME, 10, &[6; 17]), 0x2005), true),
        ("ping, bad ICMP checksum", bad_icmp, false),
        ("ping, bad IP checksum", bad_ip, false),
        ("ping, a fragment", fragment, false),
        ("ping of another address", ping(OTHER, 11, &[1]), false),
        ("ping with bytes after its datagram", trailing, true),
        ("ping to the broadcast MAC", to_all, true),
        ("an experimental EtherType", experimental(0), false),
    ]
}

fn open(width: Width) -> (Context, driver::rtl::RtlHandle) {
    let rtl = RtlBackend::with_lockstep(16, width);
    let core = rtl.handle();
    let ctx = Context::open(Box::new(rtl)).expect("the RTL core opens");
    ctx.set_port_mac(MAC).expect("the MAC set");
    ctx.set_gid(0, wire::ipv6::gid_from_ipv4(ME)).expect("a GID");
    let mut link_local = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    link_local[12..].copy_from_slice(&NOT_V4);
    ctx.set_gid(1, link_local).expect("a GID that is not IPv4");
    ctx.set_gid(2, wire::ipv6::gid_from_ipv4(ME2)).expect("a GID");
    (ctx, core)
}

fn the_core_answers_arp_and_ping_for_its_addresses(width: Width) {
    let seed = seed();
    let (ctx, core) = open(width);
    core.set_bubbles(seed, 0.3);
    let before = |c| ctx.counter(c);
    let base: Vec<u64> = [Counter::rx_drop_not_roce, Counter::tx_frames, Counter::tx_bytes].map(before).to_vec();
    let (mut arps, mut echoes, mut bytes) = (0, 0, 0);
    for (what, f, answered) in requests() {
        core.receive(f.clone());
        assert!(core.settle(LIMIT), "seed {seed:#x}: {what}: the core settles");
        let sent = core.take_sent();
        if answered {
            let want = reply_to(&f);
            assert_eq!(sent, vec![want.clone()], "seed {seed:#x}: {what}: the reply");
            bytes += want.len() as u64;
            if arp::parse_frame(&f).is_some() {
                arps += 1;
            } else {
                echoes += 1;
                let r = &sent[0];
                let o = if r[12] == 0x81 { 18 } else { 14 };
                let len = usize::from(u16::from_be_bytes([r[o + 2], r[o + 3]]));
                assert_eq!((r[o + 20], ipv4::checksum(&r[o..o + 20])), (0, 0), "{what}: type 0, IP checksum good");
                assert_eq!(ipv4::checksum(&r[o + 20..o + len]), 0, "{what}: ICMP checksum good");
            }
        } else {
            assert!(sent.is_empty(), "seed {seed:#x}: {what}: no reply, {} sent", sent.len());
        }
    }
    assert_eq!(ctx.counter(Counter::arp_replies), arps);
    assert_eq!(ctx.counter(Counter::icmp_echo_replies), echoes);
    assert_eq!(ctx.counter(Counter::ctrl_drop_full), 0);
    assert_eq!(ctx.counter(Counter::tx_frames) - base[1], arps + echoes);
    assert_eq!(ctx.counter(Counter::tx_bytes) - base[2], bytes);
    // Not answered, routed as not RoCEv2: ARP for other addresses (two), a reply, another hardware type, the long
    // ping, a bad ICMP or IP checksum (the parser reads no further than the protocol of an IPv4 packet that
    // is not UDP), a fragment, another address's ping, the experimental frame.
    assert_eq!(ctx.counter(Counter::rx_drop_not_roce) - base[0], 10);
    let r = core.lockstep_report().expect("lockstep is on");
    assert_eq!((r.mismatches, r.first), (0, None), "seed {seed:#x}: the model following {} decisions", r.events);
    eprintln!("raw path: {arps} ARP and {echoes} echo replies, {} decisions in lockstep", r.events);
}

/// An 80-byte frame of an EtherType no one answers, `i` in its payload.
fn experimental(i: usize) -> Vec<u8> {
    let mut f = vec![i as u8; 80];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&PEER);
    f[12..14].copy_from_slice(&wire::eth::ethertype::EXPERIMENTAL.to_be_bytes());
    f
}

/// Requests back to back: first mixed with frames that are not held (decided ahead of a held request) and
/// requests for another address, the MAC taking every beat (a reply leaves within a few cycles of its
/// request's decision, never before it); then only requests for the NIC, the MAC taking a beat in twenty:
/// the queue fills, the replies it has no room for are lost and counted, the rest leave in order.
fn a_flood_of_requests_fills_the_control_queue(width: Width) {
    let seed = seed();
    let (ctx, core) = open(width);
    for (stall, mixed, n) in [(0.0, true, 16), (0.95, false, 16)] {
        core.set_bubbles(seed, stall);
        let frame = |i: usize| match (mixed, i % 4) {
            (false, _) | (true, 0) => ping(if i.is_multiple_of(2) { ME } else { ME2 }, i as u16, &[i as u8; 40]),
            (true, 1) => experimental(i),
            (true, 2) => ping(ME2, i as u16, &[i as u8; 40]),
            _ => ping(OTHER, i as u16, &[i as u8; 40]),
        };
        let frames: Vec<Vec<u8>> = (0..n).map(frame).collect();
        let owed: Vec<&Vec<u8>> =
            frames.iter().enumerate().filter(|(i, _)| !mixed || i.is_multiple_of(2)).map(|p| p.1).collect();
        let count = |c| ctx.counter(c);
        let before = [Counter::icmp_echo_replies, Counter::rx_drop_not_roce, Counter::ctrl_drop_full].map(count);
        for f in &frames {
            core.receive(f.clone());
        }
        assert!(core.settle(4 * LIMIT), "seed {seed:#x}: the core settles");
        let sent = core.take_sent();
        let lost = count(Counter::ctrl_drop_full) - before[2];
        let m = owed.len() as u64;
        assert_eq!(count(Counter::icmp_echo_replies) - before[0], m, "seed {seed:#x}: every request for us counted");
        assert_eq!(count(Counter::rx_drop_not_roce) - before[1], n as u64 - m, "seed {seed:#x}: the others");
        assert_eq!(sent.len() as u64 + lost, m, "seed {seed:#x}: each reply sent or lost");
        if stall > 0.0 {
            assert!(lost > 0, "seed {seed:#x}: a stalled MAC fills the queue of {}", hdl::engine::raw::ENTRIES);
        }
        // The replies sent are those of a subsequence of the requests for us, in order.
        let mut want = owed.iter().map(|f| reply_to(f));
        for s in &sent {
            assert!(want.any(|w| &w == s), "seed {seed:#x}: a reply out of order or not owed");
        }
        eprintln!("flood, MAC stalled {stall}: {} replies sent, {lost} lost", sent.len());
    }
    let r = core.lockstep_report().expect("lockstep is on");
    assert_eq!((r.mismatches, r.first), (0, None), "seed {seed:#x}: the model following {} decisions", r.events);
}

/// A frame of `len` bytes (at least the Ethernet header) from the NIC to the peer, `tag` in its payload.
fn raw_frame(len: usize, tag: u8) -> Vec<u8> {
    driver::pair::raw_frame(PEER, MAC, len, tag)
}

/// A raw packet QP in RTS on `ctx` with a CQ of its own.
fn raw_qp(ctx: &Context, pd: &Pd) -> (Qp, Cq) {
    let cq = ctx.create_cq(64).expect("a CQ");
    let qp = pd.create_raw_qp(&cq, &cq, QpCap { max_send_wr: 16, ..QpCap::default() }).expect("a raw QP");
    qp.activate_raw().expect("RTS");
    (qp, cq)
}

fn a_raw_packet_qp_sends_whole_frames(width: Width) {
    let seed = seed();
    let (ctx, core) = open(width);
    core.set_bubbles(seed, 0.3);
    let pd = ctx.alloc_pd().expect("a PD");
    let buf = ctx.alloc_buf(1 << 16).expect("a buffer");
    let mr = pd.reg_buf(&buf, access::LOCAL_WRITE).expect("an MR");
    let sge = |at: usize, length: u32| Sge { addr: buf.addr + at as u64, length, lkey: mr.lkey };
    let send = |wr_id: u64, sg_list: Vec<Sge>, flags: u8| SendWr {
        wr_id,
        opcode: Some(SendOp::Send),
        send_flags: flags,
        sg_list,
        ..Default::default()
    };
    let counters = || [Counter::raw_tx_frames, Counter::tx_frames, Counter::tx_bytes].map(|c| ctx.counter(c));
    let before = counters();

    // Whole frames: from one SGE (at the edges of the length rules and the 60-byte minimum), from three,
    // inline; one unsignaled (no CQE).
    let (qp, cq) = raw_qp(&ctx, &pd);
    let lens = [14, 59, 60, 61, 64, 1500, wire::MAX_FRAME_LEN];
    let mut want = Vec::new();
    let mut at = 0usize;
    let mut wrs = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        let f = raw_frame(len, i as u8);
        buf.write(at, &f).unwrap();
        wrs.push(send(i as u64, vec![sge(at, len as u32)], send_flags::SIGNALED));
        want.push(f);
        at += 8192;
    }
    let f = raw_frame(61, 7);
    buf.write(at, &f[..20]).unwrap();
    buf.write(at + 100, &f[20..21]).unwrap();
    buf.write(at + 200, &f[21..]).unwrap();
    wrs.push(send(7, vec![sge(at, 20), sge(at + 100, 1), sge(at + 200, 40)], 0));
    want.push(f);
    let f = raw_frame(40, 8);
    buf.write(at + 300, &f).unwrap();
    wrs.push(send(8, vec![sge(at + 300, 40)], send_flags::SIGNALED | send_flags::INLINE));
    want.push(f);
    qp.post_send_list(&wrs).expect("posted");
    assert!(core.settle(4 * LIMIT), "seed {seed:#x}: the core settles");
    let sent = core.take_sent();
    assert_eq!(sent.len(), want.len(), "seed {seed:#x}: a frame for each WQE");
    for (i, (got, f)) in sent.iter().zip(&want).enumerate() {
        let mut padded = f.clone();
        padded.resize(f.len().max(wire::eth::MIN_FRAME_LEN), 0);
        assert_eq!(got, &padded, "seed {seed:#x}: frame {i} ({} bytes)", f.len());
    }
    let c = cq.poll(16).expect("polled");
    let done: Vec<(u64, WcStatus)> = c.iter().map(|c| (c.wr_id, c.status)).collect();
    let signaled = (0..want.len() as u64).filter(|&i| i != 7);
    assert_eq!(done, signaled.map(|i| (i, WcStatus::Success)).collect::<Vec<_>>(), "seed {seed:#x}");
    core.context_agrees(qp.qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
    let bytes: u64 = want.iter().map(|f| f.len().max(wire::eth::MIN_FRAME_LEN) as u64).sum();
    let after = counters();
    assert_eq!(after[0] - before[0], want.len() as u64, "raw_tx_frames");
    assert_eq!(after[1] - before[1], want.len() as u64, "tx_frames");
    assert_eq!(after[2] - before[2], bytes, "tx_bytes");

    // WQEs that cannot go out, each on a QP of its own: it completes in error, the QP enters ERR and the
    // good WQE behind it is flushed; nothing is sent.
    buf.write(0, &raw_frame(4096, 9)).unwrap();
    let mut write = send(0, vec![sge(0, 64)], send_flags::SIGNALED);
    write.opcode = Some(SendOp::RdmaWrite);
    let failing = [
        ("13 bytes", send(0, vec![sge(0, 13)], send_flags::SIGNALED), WcStatus::LocLenErr),
        ("a byte too long", send(0, vec![sge(0, 4096), sge(0, 129)], send_flags::SIGNALED), WcStatus::LocLenErr),
        ("an RDMA WRITE", write, WcStatus::LocQpOpErr),
        (
            "an SGE no MR has",
            send(0, vec![Sge { addr: buf.addr, length: 64, lkey: 0xdead00 }], 0),
            WcStatus::LocProtErr,
        ),
        ("data not in host memory", send(0, vec![sge(1 << 40, 64)], 0), WcStatus::LocProtErr),
    ];
    for (what, wr, status) in failing {
        let (qp, cq) = raw_qp(&ctx, &pd);
        qp.post_send_list(&[wr, send(1, vec![sge(0, 64)], send_flags::SIGNALED)]).expect("posted");
        // The flush runs once the core is otherwise idle: wait for its CQE.
        let c = cq.wait(2, 100_000_000).expect("polled");
        assert!(core.settle(4 * LIMIT), "seed {seed:#x}: {what}: the core settles");
        assert!(core.take_sent().is_empty(), "seed {seed:#x}: {what}: nothing sent");
        let done: Vec<(u64, WcStatus)> = c.iter().map(|c| (c.wr_id, c.status)).collect();
        assert_eq!(done, vec![(0, status), (1, WcStatus::WrFlushErr)], "seed {seed:#x}: {what}");
        assert_eq!(qp.query().unwrap().qp_state, QpState::Err as u8, "{what}: the QP in ERR");
        core.context_agrees(qp.qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {what}: {e}"));
    }
    assert_eq!(ctx.counter(Counter::raw_tx_frames) - before[0], want.len() as u64);
    let r = core.lockstep_report().expect("lockstep is on");
    assert_eq!((r.mismatches, r.first), (0, None), "seed {seed:#x}: the model following {} decisions", r.events);
    eprintln!("raw sends: {} frames, {} decisions in lockstep", want.len(), r.events);
}

/// `raw_frame(len, tag)` sent the other way: from the peer to the NIC.
fn inbound(len: usize, tag: u8) -> Vec<u8> {
    driver::pair::raw_frame(MAC, PEER, len, tag)
}

/// Receive WQEs of `raw` for wr_ids `ids`, each one SGE of `len` bytes at `ids[i] * 8192` in `buf`.
fn post_recvs(raw: &Qp, buf: &Buffer, lkey: u32, ids: std::ops::Range<u64>, len: u32) {
    for id in ids {
        let sg = vec![Sge { addr: buf.addr + 8192 * id, length: len, lkey }];
        raw.post_recv(&RecvWr { wr_id: id, sg_list: sg }).expect("posted");
    }
}

/// The raw packet QP's receive, the model's `raw::receive`: every frame that is not RoCEv2 and not the
/// NIC's to answer goes whole to the lowest-numbered raw QP that can receive, one frame a receive WQE, its
/// CQE's byte count the frame's length; without a WQE it is dropped (`raw_rx_drop_no_wqe`), without such a
/// QP too (`rx_drop_not_roce`). A WQE whose list is too short (LocLenErr) or fails its checks (LocProtErr)
/// completes in error and ends the QP, the WQE behind it flushed; the next raw QP takes over.
fn a_raw_packet_qp_receives_frames(width: Width) {
    let seed = seed();
    let (ctx, core) = open(width);
    core.set_bubbles(seed, 0.3);
    let pd = ctx.alloc_pd().expect("a PD");
    let buf = ctx.alloc_buf(1 << 17).expect("a buffer");
    let mr = pd.reg_buf(&buf, access::LOCAL_WRITE).expect("an MR");
    let count = |c| ctx.counter(c);
    let deliver = |frames: &[Vec<u8>]| {
        for f in frames {
            core.receive(f.clone());
        }
        assert!(core.settle(4 * LIMIT), "seed {seed:#x}: the core settles");
    };
    let tracked = [
        Counter::raw_rx_frames,
        Counter::raw_rx_drop_no_wqe,
        Counter::rx_drop_not_roce,
        Counter::rq_wqes,
        Counter::arp_replies,
        Counter::rx_drop_not_for_us,
    ];
    let base = tracked.map(count);
    let moved = || -> Vec<u64> { tracked.iter().zip(base).map(|(&c, b)| count(c) - b).collect() };

    // No raw QP: dropped. A raw QP without a receive WQE: dropped, counted as such.
    deliver(&[inbound(80, 1)]);
    let (qp, cq) = raw_qp(&ctx, &pd);
    deliver(&[inbound(80, 2)]);
    assert_eq!(moved(), [0, 1, 1, 0, 0, 0], "seed {seed:#x}: the drops");

    // Whole frames into one SGE each (the shortest, either side of the Ethernet minimum, the longest), one
    // into three SGEs; tagged, broadcast, ARP and ICMP that are not for the NIC's addresses. An ARP request
    // for its address is answered instead, a frame for another MAC dropped: neither takes a WQE.
    let mut frames: Vec<Vec<u8>> = [14, 59, 60, 61, 64, 100, 1500, wire::MAX_FRAME_LEN]
        .iter()
        .enumerate()
        .map(|(i, &l)| inbound(l, i as u8))
        .collect();
    frames.push(inbound(333, 8));
    frames.push(tagged(&inbound(90, 9), 0x6123));
    let mut broadcast = inbound(70, 10);
    broadcast[..6].fill(0xff);
    frames.push(broadcast);
    frames.push(arp::request_frame(PEER, PEER_IP, OTHER));
    frames.push(ping(OTHER, 3, &[7; 21]));
    post_recvs(&qp, &buf, mr.lkey, 0..8, 8192);
    let three = vec![
        Sge { addr: buf.addr + 8192 * 8, length: 20, lkey: mr.lkey },
        Sge { addr: buf.addr + 8192 * 8 + 100, length: 1, lkey: mr.lkey },
        Sge { addr: buf.addr + 8192 * 8 + 200, length: 312, lkey: mr.lkey },
    ];
    qp.post_recv(&RecvWr { wr_id: 8, sg_list: three }).expect("posted");
    post_recvs(&qp, &buf, mr.lkey, 9..frames.len() as u64, 8192);
    let mut other_mac = inbound(64, 11);
    other_mac[5] ^= 0x40;
    let mut mixed = frames.clone();
    mixed.insert(3, arp::request_frame(PEER, PEER_IP, ME));
    mixed.insert(6, other_mac);
    deliver(&mixed);
    let sent = core.take_sent();
    assert_eq!(sent, vec![reply_to(&arp::request_frame(PEER, PEER_IP, ME))], "seed {seed:#x}: only the ARP reply");
    let c = cq.poll(32).expect("polled");
    let got: Vec<(u64, WcStatus, WcOpcode, u32, u32)> =
        c.iter().map(|c| (c.wr_id, c.status, c.opcode, c.byte_len, c.qp_num)).collect();
    let want: Vec<(u64, WcStatus, WcOpcode, u32, u32)> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| (i as u64, WcStatus::Success, WcOpcode::Recv, f.len() as u32, qp.qpn))
        .collect();
    assert_eq!(got, want, "seed {seed:#x}: a CQE a frame, in order");
    for (i, f) in frames.iter().enumerate() {
        let at = 8192 * i;
        let landed = if i == 8 {
            let mut l = buf.read(at, 20).unwrap();
            l.extend(buf.read(at + 100, 1).unwrap());
            l.extend(buf.read(at + 200, 312).unwrap());
            l
        } else {
            buf.read(at, f.len()).unwrap()
        };
        assert_eq!(&landed, f, "seed {seed:#x}: frame {i} ({} bytes) in host memory", f.len());
    }
    let n = frames.len() as u64;
    assert_eq!(moved(), [n, 1, 1, n, 1, 1], "seed {seed:#x}: the counters");
    core.context_agrees(qp.qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));

    // Two raw QPs: the lower-numbered takes the frame even without a WQE (dropped), until it leaves RTS.
    let (qp2, cq2) = raw_qp(&ctx, &pd);
    assert!(qp2.qpn > qp.qpn, "a new QP takes the next free number");
    post_recvs(&qp2, &buf, mr.lkey, 15..16, 8192);
    deliver(&[inbound(64, 12)]);
    assert_eq!(moved()[1], 2, "seed {seed:#x}: the lower QP's drop");
    assert!(cq2.poll(4).expect("polled").is_empty(), "seed {seed:#x}: the higher QP takes nothing");
    qp.modify(&QpAttr { qp_state: Some(QpState::Err), ..Default::default() }, attr::STATE).expect("to ERR");
    let f = inbound(64, 13);
    deliver(std::slice::from_ref(&f));
    let c = cq2.wait(1, 100_000_000).expect("polled");
    assert_eq!(
        c.iter().map(|c| (c.wr_id, c.status, c.byte_len, c.qp_num)).collect::<Vec<_>>(),
        vec![(15, WcStatus::Success, 64, qp2.qpn)],
        "seed {seed:#x}: the next raw QP takes over"
    );
    assert_eq!(buf.read(8192 * 15, 64).unwrap(), f);

    // Failures, each ending its QP (the WQE behind it flushed) and handing the frames to the next.
    let short = |at: u64, len: u32| vec![Sge { addr: buf.addr + 8192 * at, length: len, lkey: mr.lkey }];
    let three_short = vec![
        Sge { addr: buf.addr, length: 200, lkey: mr.lkey },
        Sge { addr: buf.addr + 1000, length: 200, lkey: mr.lkey },
        Sge { addr: buf.addr + 2000, length: 199, lkey: mr.lkey },
    ];
    let failing = [
        ("a 512-byte buffer for 600 bytes", short(0, 512), WcStatus::LocLenErr),
        ("three SGEs a byte short", three_short, WcStatus::LocLenErr),
        ("an SGE no MR has", vec![Sge { addr: buf.addr, length: 2048, lkey: 0xdead00 }], WcStatus::LocProtErr),
        (
            "an SGE past its MR",
            vec![Sge { addr: buf.addr + (1 << 17) - 100, length: 2048, lkey: mr.lkey }],
            WcStatus::LocProtErr,
        ),
    ];
    let mut receivers = vec![(qp2, cq2)];
    for (i, (what, sg_list, status)) in failing.into_iter().enumerate() {
        if i > 0 {
            receivers.push(raw_qp(&ctx, &pd));
        }
        let (q, c) = receivers.last().expect("a receiver");
        q.post_recv(&RecvWr { wr_id: 7, sg_list }).expect("posted");
        post_recvs(q, &buf, mr.lkey, 9..10, 8192);
        deliver(&[inbound(600, 14)]);
        let done = c.wait(2, 100_000_000).expect("polled");
        assert!(core.settle(4 * LIMIT), "seed {seed:#x}: {what}: the core settles");
        let done: Vec<(u64, WcStatus, u32)> = done.iter().map(|c| (c.wr_id, c.status, c.byte_len)).collect();
        assert_eq!(done, vec![(7, status, 0), (9, WcStatus::WrFlushErr, 0)], "seed {seed:#x}: {what}");
        assert_eq!(q.query().unwrap().qp_state, QpState::Err as u8, "{what}: the QP in ERR");
        core.context_agrees(q.qpn).unwrap_or_else(|e| panic!("seed {seed:#x}: {what}: {e}"));
    }
    // Every raw QP in ERR: dropped again.
    deliver(&[inbound(64, 15)]);
    assert_eq!(moved(), [n + 1, 2, 2, n + 5, 1, 1], "seed {seed:#x}: the counters at the end");
    let r = core.lockstep_report().expect("lockstep is on");
    assert_eq!((r.mismatches, r.first), (0, None), "seed {seed:#x}: the model following {} decisions", r.events);
    assert!(r.events > 100, "seed {seed:#x}: {} decisions followed", r.events);
    eprintln!("raw receive: {} frames, {} decisions in lockstep", n + 1, r.events);
}

at_both_widths!(
    the_core_answers_arp_and_ping_for_its_addresses,
    a_flood_of_requests_fills_the_control_queue,
    a_raw_packet_qp_sends_whole_frames,
    a_raw_packet_qp_receives_frames,
);
