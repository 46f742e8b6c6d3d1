//! When the requester may start a WQE, seen on the wire: READs and atomics wait only for earlier READs and
//! atomics (up to max_rd_atomic), a fence waits for them all, SQD holds what has not started; and what the
//! send queue accepts: a full ring, inline data over several packets, a doorbell past the ring.

use driver::pair::{connect, open_host, send_wr, Host};
use driver::*;
use model::net::{LinkConfig, World};
use wire::contract::regs::doorbell;
use wire::opcode::OpKind;

const T: u64 = 10_000_000_000; // 10 s of device time

fn setup(o: &ConnectOpts, cap: QpCap) -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 3));
    let a = open_host(&w, 0, 1, 1 << 20, cap, false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 20, cap, false).unwrap();
    connect(&a, 0, 100, &b, 0, 200, o).unwrap();
    w.lock().unwrap().capture();
    (w, a, b)
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed)).collect()
}

/// The frames `node` sent, as (time, opcode kind, PSN).
fn sent(w: &World, node: usize) -> Vec<(u64, OpKind, u32)> {
    w.captured()
        .iter()
        .filter(|(_, n, _)| *n == node)
        .map(|(t, _, f)| {
            let p = wire::parse(f).expect("the model sends only valid frames");
            (*t, p.hdr.bth.opcode.info().unwrap().kind, p.hdr.bth.psn.value())
        })
        .collect()
}

/// When `node` first sent a frame with a PSN in `psns`.
fn first_at(frames: &[(u64, OpKind, u32)], psns: std::ops::Range<u32>) -> u64 {
    frames.iter().find(|f| psns.contains(&f.2)).map(|f| f.0).expect("never sent")
}

/// When `node` last sent a frame with a PSN in `psns`.
fn last_at(frames: &[(u64, OpKind, u32)], psns: std::ops::Range<u32>) -> u64 {
    frames.iter().rev().find(|f| psns.contains(&f.2)).map(|f| f.0).expect("never sent")
}

fn statuses(cq: &Cq, n: usize) -> Vec<(u64, WcStatus)> {
    let wcs = cq.wait(n, T).unwrap();
    assert_eq!(wcs.len(), n, "completions missing");
    wcs.iter().map(|w| (w.wr_id, w.status)).collect()
}

#[test]
fn reads_wait_for_earlier_reads_only_and_a_fence_waits_for_them() {
    // max_rd_atomic 1: at most one READ or atomic outstanding.
    let o = ConnectOpts { max_rd_atomic: 1, ..Default::default() };
    let (w, a, b) = setup(&o, QpCap::default());
    b.buf.write(0x10000, &pattern(8192, 1)).unwrap();
    // PSNs (PMTU 1024) from 100: WRITE 100..164, READ 164..168, READ 168..172, WRITE 172..176,
    // fenced WRITE 176..180.
    let mut fenced = send_wr(SendOp::RdmaWrite, &a, &b, 0x40000, 4096, 5);
    fenced.send_flags |= send_flags::FENCE;
    let wrs = [
        send_wr(SendOp::RdmaWrite, &a, &b, 0, 65536, 1),
        send_wr(SendOp::RdmaRead, &a, &b, 0x10000, 4096, 2),
        send_wr(SendOp::RdmaRead, &a, &b, 0x11000, 4096, 3),
        send_wr(SendOp::RdmaWrite, &a, &b, 0x30000, 4096, 4),
        fenced,
    ];
    a.qps[0].post_send_list(&wrs).unwrap();
    let want: Vec<_> = (1..=5).map(|i| (i, WcStatus::Success)).collect();
    assert_eq!(statuses(&a.cq, 5), want);
    assert_eq!(a.buf.read(0x10000, 8192).unwrap(), pattern(8192, 1));

    let w = w.lock().unwrap();
    let (req, resp) = (sent(&w, 0), sent(&w, 1));
    let first_ack = resp.iter().find(|f| f.1 == OpKind::Ack).map(|f| f.0).unwrap();
    assert!(first_at(&req, 164..165) < first_ack, "the first READ did not wait for the WRITE's ACK");
    assert!(first_at(&req, 168..169) > last_at(&resp, 164..168), "the second READ waited for the first");
    assert!(first_at(&req, 172..173) < last_at(&resp, 168..172), "an unfenced WRITE does not wait for READs");
    assert!(first_at(&req, 176..177) > last_at(&resp, 168..172), "the fenced WRITE waited for the READ");
    assert!(req.iter().all(|f| f.1 != OpKind::ReadRequest || f.2 == 164 || f.2 == 168), "no retransmission");
}

#[test]
fn sqd_holds_fetched_wqes_that_have_not_started() {
    let o = ConnectOpts { path_mtu: 1, ..Default::default() };
    let (w, a, b) = setup(&o, QpCap::default());
    a.buf.write(0, &pattern(65536, 2)).unwrap();
    // Both WQEs are fetched at the doorbell; the first takes 128 packets, the second has not started when
    // the QP goes to SQD.
    let wrs = [send_wr(SendOp::RdmaWrite, &a, &b, 0, 32768, 1), send_wr(SendOp::RdmaWrite, &a, &b, 32768, 32768, 2)];
    a.qps[0].post_send_list(&wrs).unwrap();
    let t = w.lock().unwrap().now;
    w.lock().unwrap().run_until(t + 200_000);
    a.qps[0].modify(&QpAttr { qp_state: Some(QpState::Sqd), ..Default::default() }, attr::STATE).unwrap();
    assert_eq!(statuses(&a.cq, 1), vec![(1, WcStatus::Success)], "the started WQE drains");
    assert!(a.cq.wait(1, 200_000_000).unwrap().is_empty(), "the fetched but unstarted WQE is held");
    assert_eq!(b.buf.read(32768, 32768).unwrap(), vec![0; 32768]);
    a.qps[0].modify(&QpAttr { qp_state: Some(QpState::Rts), ..Default::default() }, attr::STATE).unwrap();
    assert_eq!(statuses(&a.cq, 1), vec![(2, WcStatus::Success)]);
    assert_eq!(b.buf.read(0, 65536).unwrap(), pattern(65536, 2));
}

/// PMTU 256: 300 inline bytes are two packets, the second gathered from offset 256 of the WQE. A device
/// whose profile allows less inline data (the board's 64 bytes) refuses such a QP, and sends what it allows.
#[test]
fn inline_data_spans_packets() {
    let o = ConnectOpts { path_mtu: 1, ..Default::default() };
    let max = driver::pair::profile().max_inline as usize;
    if max < 300 {
        let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 3));
        let cap = QpCap { max_inline_data: 300, ..Default::default() };
        let err = open_host(&w, 0, 1, 1 << 20, cap, false).err().expect("300 inline bytes are refused");
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }
    let n = max.min(300);
    let cap = QpCap { max_inline_data: n as u32, ..Default::default() };
    let (_w, a, b) = setup(&o, cap);
    let data = pattern(n, 3);
    a.buf.write(0, &data).unwrap();
    b.qps[0].post_recv(&RecvWr { wr_id: 9, sg_list: vec![b.sge(0x1000, 512)] }).unwrap();
    let mut send = send_wr(SendOp::Send, &a, &b, 0, n as u32, 1);
    send.send_flags |= send_flags::INLINE;
    let mut write = send_wr(SendOp::RdmaWrite, &a, &b, 0, n as u32, 2);
    write.send_flags |= send_flags::INLINE;
    a.qps[0].post_send_list(&[send, write]).unwrap();
    // The device has its own copy: changing the buffer after posting changes nothing.
    a.buf.write(0, &vec![0xEE; n]).unwrap();
    assert_eq!(statuses(&a.cq, 2), vec![(1, WcStatus::Success), (2, WcStatus::Success)]);
    let r = b.cq.wait(1, T).unwrap();
    assert_eq!((r[0].wr_id, r[0].status, r[0].byte_len), (9, WcStatus::Success, n as u32));
    assert_eq!(b.buf.read(0x1000, n).unwrap(), data, "SEND");
    assert_eq!(b.buf.read(0, n).unwrap(), data, "WRITE");
}

#[test]
fn a_full_send_queue_is_fetched_whole_and_a_doorbell_past_it_is_ignored() {
    let cap = QpCap { max_send_wr: 8, ..Default::default() };
    let (w, a, b) = setup(&ConnectOpts::default(), cap);
    let wrs: Vec<_> = (0..8).map(|i| send_wr(SendOp::RdmaWrite, &a, &b, i * 64, 64, i)).collect();
    a.qps[0].post_send_list(&wrs).unwrap();
    assert_eq!(statuses(&a.cq, 8), (0..8).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>());

    // A producer index nine past the consumer's: more than the eight slots hold. Nothing is fetched.
    let before = sent(&w.lock().unwrap(), 0).len();
    w.lock().unwrap().mmio_write(0, doorbell::qp(a.qps[0].qpn, doorbell::QP_SQ_PI), 8 + 9);
    assert!(a.cq.wait(1, 100_000_000).unwrap().is_empty(), "no completion for slots never posted");
    assert_eq!(sent(&w.lock().unwrap(), 0).len(), before, "nothing sent");
    // The driver's next doorbell (producer index 9) is honoured.
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, 64, 20)).unwrap();
    assert_eq!(statuses(&a.cq, 1), vec![(20, WcStatus::Success)]);
}

/// The requester keeps at most 128 PSNs unacknowledged: over a 100 us link, a 512-packet WRITE sends 128
/// packets, then waits for the first ACK.
#[test]
fn at_most_128_psns_are_outstanding() {
    let link = LinkConfig { delay_ns: 100_000, ..Default::default() };
    let w = shared(World::pair(driver::pair::nic_config(), link, 3));
    let a = open_host(&w, 0, 1, 1 << 20, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 20, QpCap::default(), false).unwrap();
    connect(&a, 0, 100, &b, 0, 200, &ConnectOpts { path_mtu: 1, ..Default::default() }).unwrap();
    w.lock().unwrap().capture();
    a.qps[0].post_send(&send_wr(SendOp::RdmaWrite, &a, &b, 0, 512 * 256, 1)).unwrap();
    assert_eq!(statuses(&a.cq, 1), vec![(1, WcStatus::Success)]);
    let w = w.lock().unwrap();
    let first_ack = sent(&w, 1).iter().find(|f| f.1 == OpKind::Ack).map(|f| f.0).unwrap() + 100_000_000;
    let before: Vec<_> = sent(&w, 0).into_iter().filter(|f| f.0 < first_ack).collect();
    assert_eq!(before.len(), 128, "sent before the first ACK arrived");
    assert_eq!(before.last().map(|f| f.2), Some(100 + 127));
}
