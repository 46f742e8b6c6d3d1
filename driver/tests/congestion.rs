//! DCQCN on the wire between two NICs: the notification point answers CE-marked packets with at most one CNP
//! per QP per interval, and the reaction point cuts its rate on each CNP it heeds, only while enabled.

use driver::pair::{connect, open_host, Host};
use driver::*;
use model::net::{LinkConfig, World};
use wire::contract::regs::{Counter, Dcqcn};

/// Every packet A sends carries ECN CE (traffic class ECN bits 11), as if a switch had marked it.
fn setup() -> (SharedWorld, Host, Host) {
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 11));
    let a = open_host(&w, 0, 1, 1 << 21, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 21, QpCap::default(), false).unwrap();
    let o = ConnectOpts { traffic_class: (26 << 2) | 0b11, ..Default::default() };
    connect(&a, 0, 1, &b, 0, 2, &o).unwrap();
    w.lock().unwrap().capture();
    (w, a, b)
}

/// A 1 MiB WRITE from A to B, to completion.
fn write(a: &Host, b: &Host) {
    let wr = SendWr {
        wr_id: 1,
        opcode: Some(SendOp::RdmaWrite),
        send_flags: send_flags::SIGNALED,
        sg_list: vec![Sge { addr: a.mr.addr, length: 1 << 20, lkey: a.mr.lkey }],
        remote_addr: b.mr.addr,
        rkey: b.mr.rkey,
        ..Default::default()
    };
    a.qps[0].post_send(&wr).unwrap();
    let c = a.cq.wait(1, 10_000_000_000).unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, WcStatus::Success);
}

/// Times (ps) of the CNPs node `n` sent.
fn cnp_times(w: &World, n: usize) -> Vec<u64> {
    w.captured()
        .iter()
        .filter(|(_, node, f)| *node == n && wire::parse(f).is_ok_and(|p| p.hdr.bth.opcode == wire::Opcode::CNP))
        .map(|(t, _, _)| *t)
        .collect()
}

#[test]
fn notification_point_sends_one_cnp_per_interval_and_the_rate_is_cut_on_each() {
    let (w, a, b) = setup();
    write(&a, &b);
    let cnps = cnp_times(&w.lock().unwrap(), 1);
    // The interval is 49 ticks, counted from the tick of the CE mark that was answered; a CNP may leave up to
    // a frame's time later than it was made, so the ticks it leaves in may be one closer.
    let interval = model::nic::dcqcn::Params::default().cnp_interval();
    assert!(cnps.len() >= 2, "CE on every packet of a long WRITE: {cnps:?}");
    for pair in cnps.windows(2) {
        let ticks = model::nic::timer::tick_of(pair[1]) - model::nic::timer::tick_of(pair[0]);
        assert!(ticks + 1 >= interval, "CNPs {ticks} ticks apart, the interval is {interval}");
    }
    let n = cnps.len() as u64;
    assert_eq!(b.ctx.counter(Counter::cnps_sent), n);
    assert_eq!(b.ctx.counter(Counter::ecn_ce_received), 1024, "every data packet carried CE");
    assert_eq!(a.ctx.counter(Counter::cnps_received), n);
    assert_eq!(a.ctx.counter(Counter::rate_cuts), n, "50 us apart, past the 4 us reduce period: each CNP cuts");
}

#[test]
fn no_cnp_without_the_notification_point_and_no_cut_without_the_reaction_point() {
    let (w, a, b) = setup();
    b.ctx.set_dcqcn(Dcqcn::NP_ENABLE, 0);
    write(&a, &b);
    assert!(cnp_times(&w.lock().unwrap(), 1).is_empty());
    assert_eq!(b.ctx.counter(Counter::ecn_ce_received), 1024, "CE was seen, only not answered");

    let (_w, a, b) = setup();
    a.ctx.set_dcqcn(Dcqcn::ENABLE, 0);
    write(&a, &b);
    assert!(a.ctx.counter(Counter::cnps_received) >= 1);
    assert_eq!(a.ctx.counter(Counter::rate_cuts), 0);
}

/// The notification point's interval at its boundary, in timer ticks (50 us: 49 ticks): a CE-marked packet
/// in the last tick of the interval gets no CNP, one in the first tick after it does.
#[test]
fn one_cnp_per_interval_at_the_boundary() {
    use model::nic::timer::{tick_of, tick_start};
    let w = shared(World::pair(driver::pair::nic_config(), LinkConfig::default(), 11));
    let a = open_host(&w, 0, 1, 1 << 16, QpCap::default(), false).unwrap();
    let b = open_host(&w, 1, 1, 1 << 16, QpCap::default(), false).unwrap();
    connect(&a, 0, 1, &b, 0, 2, &ConnectOpts::default()).unwrap();
    let interval = model::nic::dcqcn::Params::default().cnp_interval();
    assert_eq!(interval, 49);
    let mut h = driver::pair::forged_headers(&a, &b, wire::Opcode::RDMA_WRITE_ONLY, 1);
    h.ext.reth = Some(wire::ext::RethRepr { va: b.mr.addr, rkey: b.mr.rkey, dma_len: 8 });
    h.ip.set_tclass(0b11); // ECN CE
    let frame = h.emit(&[1; 8]);
    // The same from tick k and, later, from tick 1000.
    let k = tick_of(w.lock().unwrap().now) + 1;
    for (round, k) in [k, 1000].into_iter().enumerate() {
        for at in [tick_start(k), tick_start(k + interval) - 1, tick_start(k + interval)] {
            w.lock().unwrap().run_until(at);
            w.lock().unwrap().deliver(1, frame.clone());
            w.lock().unwrap().run_until(at); // processed at `at`
        }
        let n = 2 * (round as u64 + 1);
        assert_eq!(b.ctx.counter(Counter::ecn_ce_received), 3 * (round as u64 + 1));
        assert_eq!(
            b.ctx.counter(Counter::cnps_sent),
            n,
            "CNPs in tick {k} and in tick {k} + 49, none in tick {k} + 48"
        );
    }
}
