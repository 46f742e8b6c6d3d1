//! The driver's control path on the RTL core and on its model twin: the same verbs calls give the same
//! results, errors included (the device reports, PD, MRs, CQs, QPs connected through INIT, RTR and RTS, SQD
//! and back, refused transitions and values, destruction in use and after).

use driver::rtl::{model_twin, RtlBackend};
use driver::*;
use hdl::Width;
use model::net::{LinkConfig, World};
use wire::contract::regs::Counter;

#[macro_use]
mod widths;

/// The script, run on one device; what it saw, one line per step.
fn script(ctx: Context) -> Vec<String> {
    let mut t = Vec::new();
    let d = ctx.query_device();
    t.push(format!("device: {d:?}"));
    t.push(format!("mac: {:?}", ctx.set_port_mac([2, 0, 0, 0, 0, 9])));
    t.push(format!("gid 0: {:?}", ctx.set_gid(0, wire::ipv6::gid_from_ipv4([10, 0, 0, 9]))));
    t.push(format!("gid 16: {:?}", ctx.set_gid(16, [0; 16])));
    let pd = ctx.alloc_pd().expect("a PD");
    let buf = ctx.alloc_buf(1 << 16).expect("a buffer");
    let mr = pd.reg_buf(&buf, access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ).expect("an MR");
    t.push(format!("mr: {:#x} {:#x}", mr.lkey, mr.rkey));
    let (cq, cq2) = (ctx.create_cq(64).expect("a CQ"), ctx.create_cq(16).expect("a CQ"));
    let qps: Vec<Qp> = (0..3).map(|_| pd.create_qp(&cq, &cq2, QpCap::default(), false).expect("a QP")).collect();
    t.push(format!("qpns: {:?}", qps.iter().map(|q| q.qpn).collect::<Vec<_>>()));
    for (i, q) in qps.iter().enumerate() {
        let remote = Endpoint { qpn: 0x100 + i as u32, psn: 0x77 + i as u32, gid: [0xfd; 16], mac: [2, 0, 0, 0, 0, 8] };
        t.push(format!("connect {i}: {:?}", q.connect(0x1000 * i as u32, &remote, &ConnectOpts::default())));
        t.push(format!("query {i}: {:?}", q.query()));
    }
    let q = &qps[0];
    let to = |s| QpAttr { qp_state: Some(s), ..Default::default() };
    t.push(format!("RTS -> INIT: {:?}", q.modify(&to(QpState::Init), attr::STATE)));
    t.push(format!("RTS -> SQD: {:?}", q.modify(&to(QpState::Sqd), attr::STATE)));
    t.push(format!(
        "SQD timeout 9: {:?}",
        q.modify(&QpAttr { timeout: 9, ..to(QpState::Sqd) }, attr::STATE | attr::TIMEOUT)
    ));
    t.push(format!("SQD -> RTS: {:?}", q.modify(&to(QpState::Rts), attr::STATE)));
    t.push(format!("query: {:?}", q.query()));
    t.push(format!("ERR: {:?}", qps[1].modify(&to(QpState::Err), attr::STATE)));
    t.push(format!("query ERR: {:?}", qps[1].query()));
    t.push(format!("counter: {}", ctx.counter(Counter::cmd_doorbells_ignored)));
    for (i, q) in qps.into_iter().enumerate() {
        t.push(format!("destroy qp {i}: {:?}", q.destroy()));
    }
    t.push(format!("dereg: {:?}", pd.dereg_mr(mr)));
    t.push(format!("destroy cq: {:?}", cq.destroy()));
    t.push(format!("destroy cq2: {:?}", cq2.destroy()));
    t
}

fn the_control_path_on_the_rtl_is_the_models(width: Width) {
    let rtl = RtlBackend::with_lockstep(16, width);
    let core = rtl.handle();
    let on_rtl = script(Context::open(Box::new(rtl)).expect("the RTL core opens"));
    let r = core.lockstep_report().expect("lockstep is on");
    assert_eq!((r.mismatches, r.first), (0, None), "the model following the core's {} decisions", r.events);
    assert!(r.events > 50, "every register access and command is a decision: {}", r.events);
    eprintln!("RTL control path: {} decisions in lockstep, {} cycles", r.events, core.cycles());
    let world = shared(World::pair(model_twin(16, width), LinkConfig::default(), 1));
    let on_model = script(Context::open(Box::new(ModelBackend::new(world, 0))).expect("the model opens"));
    for (a, b) in on_rtl.iter().zip(&on_model) {
        assert_eq!(a, b, "RTL (left) and model (right) part here");
    }
    assert_eq!(on_rtl.len(), on_model.len());
    // What the script must have seen, so that agreeing on failures everywhere cannot pass.
    let has = |s: &str| on_rtl.iter().any(|l| l.contains(s));
    assert!(has("max_qp: 16"), "{on_rtl:#?}");
    assert!(has("connect 2: Ok(())") && has("qp_state: 3"), "three QPs reach RTS: {on_rtl:#?}");
    assert!(has("RTS -> INIT: Err") && has("RTS -> SQD: Ok") && has("timeout: 9"), "{on_rtl:#?}");
    assert!(has("gid 16: Err") && has("qp_state: 6"), "{on_rtl:#?}");
    assert!(has("destroy qp 2: Ok(())") && has("destroy cq2: Ok(())"), "{on_rtl:#?}");
}

at_both_widths!(the_control_path_on_the_rtl_is_the_models,);
