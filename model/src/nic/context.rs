//! A QP's state packed into the context layout of `wire::contract::qpc` and unpacked again. The round trip
//! (`round_trip`) runs after every decision when the NIC's checks are on (the soak turns them on): the state
//! must come back the same, which proves every field is in the layout, wide enough, and that what the layout
//! leaves out (PSN ranges, packet counts, a READ's last PSN, ring indices) really follows from the rest.

use super::cq::{Arm, Cq};
use super::dcqcn::Rp;
use super::qp::{Attrs, Qp, RecvCtx, ReqState, Resource, ResourceKind, RespItem, RespState, Ring, SendWqe};
use super::timer::Tick;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use wire::contract::qpc::{cq_entry, in_msg, item, QpContext, NEAR_TICK_BITS, TICK_BITS};
use wire::contract::verbs::{mtu_bytes, mtu_enum, QpState, QpType, WcStatus};
use wire::contract::wqe::SendOp;
use wire::eth::VlanTag;
use wire::ext::AethRepr;
use wire::layout::{Bits, Packer, Unpacker};
use wire::{OpKind, Psn};

/// A QP's context as packed records: its QP-wide records and its entries of the per-QP tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    pub attr: Bits,
    pub req: Bits,
    pub wqes: Vec<Bits>,
    pub resp: Bits,
    pub resources: Vec<Bits>,
    pub items: Vec<Bits>,
    pub rp: Bits,
}

type R<T> = Result<T, String>;

/// Per layout (attr, req, wqe, resp, resource, resp_item, rp): whether a record of it has been packed and
/// unpacked with the field names checked against the layout. The code below always packs the same fields in
/// the same order, so once is proof enough; later round trips take the order on trust, for speed.
static NAMES_CHECKED: [AtomicBool; 7] = [const { AtomicBool::new(false) }; 7];

/// Per layout, in `NAMES_CHECKED`'s order: whether a round trip has checked its field names yet.
pub fn names_checked() -> [bool; 7] {
    std::array::from_fn(|k| NAMES_CHECKED[k].load(Ordering::Relaxed))
}

fn packer(l: &wire::layout::Layout, kind: usize) -> Packer<'_> {
    if NAMES_CHECKED[kind].load(Ordering::Relaxed) {
        Packer::trusting(l)
    } else {
        Packer::new(l)
    }
}

fn unpacker<'a>(l: &'a wire::layout::Layout, b: &'a Bits, kind: usize) -> Unpacker<'a> {
    if NAMES_CHECKED[kind].load(Ordering::Relaxed) {
        Unpacker::trusting(l, b)
    } else {
        Unpacker::new(l, b)
    }
}

fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

/// A tick value as its low `w` bits; it must lie within 2^(w-1) ticks of `now`.
fn put_tick(p: &mut Packer<'_>, name: &str, v: Tick, now: Tick, w: u32) -> R<()> {
    if v.abs_diff(now) >= 1 << (w - 1) {
        return Err(format!("{name}: tick {v} is too far from now ({now}) for {w} bits"));
    }
    p.put(name, v & ((1 << w) - 1)).map_err(e)
}

/// The tick within 2^(w-1) of `now` whose low `w` bits are `stored`.
fn tick_near(stored: u64, now: Tick, w: u32) -> R<Tick> {
    let half = 1u64 << (w - 1);
    let d = stored.wrapping_sub(now) & ((1 << w) - 1);
    if d < half {
        Ok(now + d)
    } else {
        now.checked_sub((1 << w) - d).ok_or_else(|| format!("tick {stored:#x} lies before time 0"))
    }
}

/// An optional tick: its valid flag, and its low `w` bits (0 when it is not set, as the RTL clears one).
fn put_opt_tick(p: &mut Packer<'_>, valid: &str, name: &str, v: Option<Tick>, now: Tick, w: u32) -> R<()> {
    p.flag(valid, v.is_some()).map_err(e)?;
    match v {
        Some(v) => put_tick(p, name, v, now, w),
        None => p.put(name, 0u64).map_err(e),
    }
}

fn get_opt_tick(u: &mut Unpacker<'_>, valid: &str, name: &str, now: Tick, w: u32) -> R<Option<Tick>> {
    let on = u.flag(valid).map_err(e)?;
    let v = u.u64(name).map_err(e)?;
    if on {
        tick_near(v, now, w).map(Some)
    } else {
        Ok(None)
    }
}

/// Packs QP `q` into the layouts `c`, at tick `now`.
pub fn pack(q: &Qp, c: &QpContext, now: Tick) -> R<Packed> {
    Ok(Packed {
        attr: pack_attr(q, c, now)?,
        req: pack_req(&q.req, c, now)?,
        wqes: q.req.wqes.iter().map(|w| pack_wqe(w, c)).collect::<R<_>>()?,
        resp: pack_resp(&q.resp, c)?,
        resources: q.resp.resources.iter().map(|r| pack_resource(r, c)).collect::<R<_>>()?,
        items: q.resp.out.iter().map(|i| pack_item(i, c)).collect::<R<_>>()?,
        rp: pack_rp(&q.rp, c, now)?,
    })
}

/// The QP `qpn` whose context `p` packs, at tick `now`.
pub fn unpack(p: &Packed, c: &QpContext, qpn: u32, now: Tick) -> R<Qp> {
    let mut q = unpack_attr(&p.attr, c, qpn, now)?;
    let pmtu = q.attrs.path_mtu();
    q.req = unpack_req(&p.req, &p.wqes, c, &q.sq, pmtu, now)?;
    q.resp = unpack_resp(&p.resp, &p.resources, &p.items, c, &q.rq, pmtu)?;
    q.rp = unpack_rp(&p.rp, c, now)?;
    Ok(q)
}

/// Packs `q` and unpacks it: an error unless the same state comes back.
pub fn round_trip(q: &Qp, c: &QpContext, now: Tick) -> R<()> {
    let p = pack(q, c, now).map_err(|x| format!("QP {:#x}: packing: {x}", q.qpn))?;
    let back = unpack(&p, c, q.qpn, now).map_err(|x| format!("QP {:#x}: unpacking: {x}", q.qpn))?;
    if &back != q {
        return Err(format!("QP {:#x}: the packed context unpacks to another state:\n{q:?}\n{back:?}", q.qpn));
    }
    let present = [true, true, !p.wqes.is_empty(), true, !p.resources.is_empty(), !p.items.is_empty(), true];
    for (checked, seen) in NAMES_CHECKED.iter().zip(present) {
        if seen {
            checked.store(true, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// The ring fields of `qp_attr`, in their order.
const SQ: [&str; 5] = ["sq_iova", "sq_log_size", "sq_log_stride", "sq_pi", "sq_ci"];
const RQ: [&str; 5] = ["rq_iova", "rq_log_size", "rq_log_stride", "rq_pi", "rq_ci"];

/// A CQ as the CQ table holds it (`qpc::cq_entry`), its arming as the doorbell's value (0 when disarmed).
pub fn pack_cq(q: &Cq) -> R<Bits> {
    let l = cq_entry();
    let mut p = Packer::new(&l);
    p.put("valid", 1u8).map_err(e)?;
    p.put("iova", q.iova).map_err(e)?;
    p.put("log_size", q.log_size).map_err(e)?;
    p.put("pi", q.pi).map_err(e)?;
    p.put("ci", q.ci).map_err(e)?;
    p.flag("overrun", q.overrun).map_err(e)?;
    p.put("armed", Arm::to_doorbell(q.armed)).map_err(e)?;
    p.finish().map_err(e)
}

fn pack_attr(q: &Qp, c: &QpContext, now: Tick) -> R<Bits> {
    let a = &q.attrs;
    let mut p = packer(&c.attr, 0);
    let mut put = |n: &str, v: u128| p.put(n, v).map_err(e);
    put("raw", u128::from(q.qp_type == QpType::RawPacket))?;
    put("state", q.state as u128)?;
    put("flushing", u128::from(q.flushing))?;
    put("pdn", q.pdn.into())?;
    put("send_cqn", q.send_cqn.into())?;
    put("recv_cqn", q.recv_cqn.into())?;
    put("sig_all", u128::from(q.sig_all))?;
    put("access", a.access.into())?;
    put("pmtu", mtu_enum(a.pmtu).unwrap_or(0).into())?;
    put("timeout", a.timeout.into())?;
    put("retry_cnt", a.retry_cnt.into())?;
    put("rnr_retry", a.rnr_retry.into())?;
    put("min_rnr_timer", a.min_rnr_timer.into())?;
    put("max_rd_atomic", a.max_rd_atomic.into())?;
    put("max_dest_rd_atomic", a.max_dest_rd_atomic.into())?;
    put("sgid_index", a.sgid_index.into())?;
    put("hop_limit", a.hop_limit.into())?;
    put("traffic_class", a.traffic_class.into())?;
    put("dest_qpn", a.dest_qpn.into())?;
    put("flow_label", a.flow_label.into())?;
    put("dmac", wire::field::get_be(&a.dmac).into())?;
    put("vlan_tagged", u128::from(a.vlan.is_some()))?;
    put("vlan_tci", a.vlan.map_or(0, |v| v.tci()).into())?;
    let (hi, lo) = wire::contract::cmd::gid_split(&a.dgid);
    put("dgid_hi", hi.into())?;
    put("dgid_lo", lo.into())?;
    put("port_set", a.port_num.into())?;
    put("udp_sport", a.udp_sport.into())?;
    for (n, r) in [(SQ, &q.sq), (RQ, &q.rq)] {
        put(n[0], r.iova.into())?;
        put(n[1], r.log_size.into())?;
        put(n[2], r.log_stride.into())?;
        put(n[3], r.pi.into())?;
        put(n[4], r.ci.into())?;
    }
    put_opt_tick(&mut p, "last_cnp_valid", "last_cnp", q.last_cnp, now, TICK_BITS)?;
    p.finish().map_err(e)
}

fn unpack_attr(b: &Bits, c: &QpContext, qpn: u32, now: Tick) -> R<Qp> {
    let mut u = unpacker(&c.attr, b, 0);
    let mut g = |n: &str| u.u64(n).map_err(e);
    let qp_type = if g("raw")? != 0 { QpType::RawPacket } else { QpType::Rc };
    let state = QpState::from_u8(g("state")? as u8).ok_or("bad QP state")?;
    let flushing = g("flushing")? != 0;
    let (pdn, send_cqn, recv_cqn) = (g("pdn")? as u32, g("send_cqn")? as u32, g("recv_cqn")? as u32);
    let sig_all = g("sig_all")? != 0;
    let access = g("access")? as u32;
    let pmtu = mtu_bytes(g("pmtu")? as u8).unwrap_or(0);
    let (timeout, retry_cnt, rnr_retry) = (g("timeout")? as u8, g("retry_cnt")? as u8, g("rnr_retry")? as u8);
    let min_rnr_timer = g("min_rnr_timer")? as u8;
    let (max_rd_atomic, max_dest_rd_atomic) = (g("max_rd_atomic")? as u8, g("max_dest_rd_atomic")? as u8);
    let (sgid_index, hop_limit, traffic_class) =
        (g("sgid_index")? as u8, g("hop_limit")? as u8, g("traffic_class")? as u8);
    let (dest_qpn, flow_label) = (g("dest_qpn")? as u32, g("flow_label")? as u32);
    let mut dmac = [0u8; 6];
    wire::field::set_be(&mut dmac, g("dmac")?);
    let tagged = g("vlan_tagged")? != 0;
    let tci = g("vlan_tci")? as u16;
    let dgid = wire::contract::cmd::gid_join(g("dgid_hi")?, g("dgid_lo")?);
    let port_num = g("port_set")? as u8;
    let udp_sport = g("udp_sport")? as u16;
    let mut ring = |n: [&str; 5]| -> R<Ring> {
        Ok(Ring {
            iova: g(n[0])?,
            log_size: g(n[1])? as u8,
            log_stride: g(n[2])? as u8,
            pi: g(n[3])? as u16,
            ci: g(n[4])? as u16,
        })
    };
    let (sq, rq) = (ring(SQ)?, ring(RQ)?);
    let last_cnp = get_opt_tick(&mut u, "last_cnp_valid", "last_cnp", now, TICK_BITS)?;
    let attrs = Attrs {
        access,
        pmtu,
        timeout,
        retry_cnt,
        rnr_retry,
        min_rnr_timer,
        max_rd_atomic,
        max_dest_rd_atomic,
        sgid_index,
        hop_limit,
        traffic_class,
        dest_qpn,
        flow_label,
        dmac,
        vlan: tagged.then(|| VlanTag::from_tci(tci)),
        dgid,
        port_num,
        udp_sport,
    };
    let mut q = Qp::new(qpn, pdn, Rp::new(0, &Default::default()));
    q.qp_type = qp_type;
    (q.send_cqn, q.recv_cqn, q.state, q.attrs, q.sq, q.rq, q.sig_all) =
        (send_cqn, recv_cqn, state, attrs, sq, rq, sig_all);
    (q.last_cnp, q.flushing) = (last_cnp, flushing);
    Ok(q)
}

fn pack_req(r: &ReqState, c: &QpContext, now: Tick) -> R<Bits> {
    let mut p = packer(&c.req, 1);
    let mut put = |n: &str, v: u128| p.put(n, v).map_err(e);
    put("wqes", r.wqes.len() as u128)?;
    put("cursor", r.cursor as u128)?;
    put("oldest", r.oldest as u128)?;
    put("rd_atomic", r.rd_atomic.into())?;
    put("psn", r.psn.value().into())?;
    put("cursor_psn", r.cursor_psn.value().into())?;
    put("comp_psn", r.comp_psn.value().into())?;
    put("high_psn", r.high_psn.value().into())?;
    put("retry_left", r.retry_left.into())?;
    put("rnr_left", r.rnr_left.into())?;
    put_opt_tick(&mut p, "timer_valid", "timer", r.timer, now, TICK_BITS)?;
    put_opt_tick(&mut p, "rnr_valid", "rnr_deadline", r.rnr_wait.map(|w| w.0), now, NEAR_TICK_BITS)?;
    let mut put = |n: &str, v: u128| p.put(n, v).map_err(e);
    put("rnr_psn", r.rnr_wait.map_or(0, |w| w.1.value()).into())?;
    put("pkts_since_ackreq", r.pkts_since_ackreq.into())?;
    put("gap_valid", u128::from(r.gap_retry.is_some()))?;
    put("gap_psn", r.gap_retry.map_or(0, |g| g.value()).into())?;
    p.finish().map_err(e)
}

fn unpack_req(b: &Bits, wqes: &[Bits], c: &QpContext, sq: &Ring, pmtu: u32, now: Tick) -> R<ReqState> {
    let mut u = unpacker(&c.req, b, 1);
    let mut g = |n: &str| u.u64(n).map_err(e);
    let n = g("wqes")? as usize;
    if n != wqes.len() {
        return Err(format!("the window holds {n} WQEs, {} entries given", wqes.len()));
    }
    let (cursor, oldest, rd_atomic) = (g("cursor")? as usize, g("oldest")? as usize, g("rd_atomic")? as u8);
    let psn = Psn::new(g("psn")? as u32);
    let (cursor_psn, comp_psn, high_psn) =
        (Psn::new(g("cursor_psn")? as u32), Psn::new(g("comp_psn")? as u32), Psn::new(g("high_psn")? as u32));
    let (retry_left, rnr_left) = (g("retry_left")? as u8, g("rnr_left")? as u8);
    let timer = get_opt_tick(&mut u, "timer_valid", "timer", now, TICK_BITS)?;
    let rnr = get_opt_tick(&mut u, "rnr_valid", "rnr_deadline", now, NEAR_TICK_BITS)?;
    let mut g = |n: &str| u.u64(n).map_err(e);
    let rnr_psn = Psn::new(g("rnr_psn")? as u32);
    let pkts_since_ackreq = g("pkts_since_ackreq")? as u32;
    let gap = g("gap_valid")? != 0;
    let gap_psn = Psn::new(g("gap_psn")? as u32);
    // The window's entries are the SQ slots before the fetch counter; the started ones, a prefix, have
    // contiguous PSN ranges ending at `psn`, each as long as its length cuts into at the path MTU.
    let head = sq.ci.wrapping_sub(n as u16);
    let entries: Vec<(SendWqe, bool)> =
        wqes.iter().enumerate().map(|(i, w)| unpack_wqe(w, c, head.wrapping_add(i as u16))).collect::<R<_>>()?;
    let mut window: VecDeque<SendWqe> = VecDeque::with_capacity(entries.len());
    let mut next = psn;
    for (mut w, started) in entries.into_iter().rev() {
        if started {
            w.npkts = super::req::packets_for(w.op, w.len, pmtu);
            next = next.sub(w.npkts);
            w.first_psn = Some(next);
        }
        window.push_front(w);
    }
    Ok(ReqState {
        wqes: window,
        psn,
        cursor,
        cursor_psn,
        comp_psn,
        retry_left,
        rnr_left,
        timer,
        rnr_wait: rnr.map(|t| (t, rnr_psn)),
        pkts_since_ackreq,
        gap_retry: gap.then_some(gap_psn),
        high_psn,
        rd_atomic,
        oldest,
    })
}

fn pack_wqe(w: &SendWqe, c: &QpContext) -> R<Bits> {
    let mut p = packer(&c.wqe, 2);
    let mut put = |n: &str, v: u128| p.put(n, v).map_err(e);
    put("op", (w.op as u8).into())?;
    put("flags", w.flags.into())?;
    put("len", w.len.into())?;
    put("started", u128::from(w.first_psn.is_some()))?;
    put("acked", u128::from(w.acked))?;
    put("error_valid", u128::from(w.error.is_some()))?;
    put("status", w.error.map_or(0, |x| x.0 as u8).into())?;
    put("vendor_err", w.error.map_or(0, |x| x.1).into())?;
    put("wr_id", w.wr_id.into())?;
    p.finish().map_err(e)
}

/// A window entry, and whether it was started (its PSNs are the caller's to fill in).
fn unpack_wqe(b: &Bits, c: &QpContext, index: u16) -> R<(SendWqe, bool)> {
    let mut u = unpacker(&c.wqe, b, 2);
    let mut g = |n: &str| u.u64(n).map_err(e);
    let op = SendOp::from_u8(g("op")? as u8).ok_or("bad send opcode")?;
    let (flags, len, started, acked) = (g("flags")? as u8, g("len")? as u32, g("started")? != 0, g("acked")? != 0);
    let (valid, status, vendor) = (g("error_valid")? != 0, g("status")? as u8, g("vendor_err")? as u8);
    let w = SendWqe {
        index,
        op,
        flags,
        len,
        first_psn: None,
        npkts: 0,
        acked,
        error: valid.then(|| (WcStatus::from_u8(status), vendor)),
        wr_id: g("wr_id")?,
    };
    Ok((w, started))
}

fn pack_resp(r: &RespState, c: &QpContext) -> R<Bits> {
    let mut p = packer(&c.resp, 3);
    let mut put = |n: &str, v: u128| p.put(n, v).map_err(e);
    put("epsn", r.epsn.value().into())?;
    put("msn", r.msn.into())?;
    put("nak_sent", u128::from(r.nak_sent))?;
    let in_msg = match r.in_msg {
        None => in_msg::NONE,
        Some(OpKind::Send) => in_msg::SEND,
        Some(OpKind::Write) => in_msg::WRITE,
        Some(k) => return Err(format!("a message of kind {k:?} in progress")),
    };
    put("in_msg", in_msg.into())?;
    put("write_va", r.write_va.into())?;
    put("write_resid", r.write_resid.into())?;
    put("write_len", r.write_len.into())?;
    put("recv_valid", u128::from(r.recv.is_some()))?;
    put("recv_offset", r.recv.map_or(0, |x| x.offset).into())?;
    put("fatal", u128::from(r.fatal))?;
    put("resources", r.resources.len() as u128)?;
    put("res_head", r.res_head.into())?;
    put("items", r.out.len() as u128)?;
    put("item_head", r.item_head.into())?;
    put("ack_valid", u128::from(r.ack.is_some()))?;
    let (psn, aeth) = r.ack.unwrap_or_default();
    put("ack_psn", psn.value().into())?;
    put("ack_syndrome", aeth.syndrome.into())?;
    put("ack_msn", aeth.msn.into())?;
    p.finish().map_err(e)
}

fn unpack_resp(b: &Bits, res: &[Bits], items: &[Bits], c: &QpContext, rq: &Ring, pmtu: u32) -> R<RespState> {
    let mut u = unpacker(&c.resp, b, 3);
    let mut g = |n: &str| u.u64(n).map_err(e);
    let (epsn, msn, nak_sent) = (Psn::new(g("epsn")? as u32), g("msn")? as u32, g("nak_sent")? != 0);
    let in_msg = match g("in_msg")? as u8 {
        in_msg::NONE => None,
        in_msg::SEND => Some(OpKind::Send),
        in_msg::WRITE => Some(OpKind::Write),
        k => return Err(format!("in_msg {k}")),
    };
    let (write_va, write_resid, write_len) = (g("write_va")?, g("write_resid")? as u32, g("write_len")? as u32);
    let (recv_valid, offset, fatal) = (g("recv_valid")? != 0, g("recv_offset")? as u32, g("fatal")? != 0);
    let (n_res, res_head) = (g("resources")? as usize, g("res_head")? as u8);
    let (n_items, item_head) = (g("items")? as usize, g("item_head")? as u8);
    if n_res != res.len() || n_items != items.len() {
        return Err("the responder's entry counts disagree with its entries".into());
    }
    let ack_valid = g("ack_valid")? != 0;
    let ack =
        (Psn::new(g("ack_psn")? as u32), AethRepr { syndrome: g("ack_syndrome")? as u8, msn: g("ack_msn")? as u32 });
    Ok(RespState {
        epsn,
        msn,
        nak_sent,
        in_msg,
        write_va,
        write_resid,
        write_len,
        recv: recv_valid.then(|| RecvCtx { index: rq.ci.wrapping_sub(1), offset }),
        resources: res.iter().map(|r| unpack_resource(r, c, pmtu)).collect::<R<_>>()?,
        res_head,
        out: items.iter().map(|i| unpack_item(i, c)).collect::<R<_>>()?,
        item_head,
        ack: ack_valid.then_some(ack),
        fatal,
    })
}

fn pack_resource(r: &Resource, c: &QpContext) -> R<Bits> {
    let mut p = packer(&c.resource, 4);
    let mut put = |n: &str, v: u128| p.put(n, v).map_err(e);
    let (atomic, word, len, rkey) = match r.kind {
        ResourceKind::Read { va, len, rkey, .. } => (false, va, len, rkey),
        ResourceKind::Atomic { orig } => (true, orig, 0, 0),
    };
    put("atomic", u128::from(atomic))?;
    put("first_psn", r.first_psn.value().into())?;
    put("msn", r.msn.into())?;
    put("word", word.into())?;
    put("len", len.into())?;
    put("rkey", rkey.into())?;
    p.finish().map_err(e)
}

fn unpack_resource(b: &Bits, c: &QpContext, pmtu: u32) -> R<Resource> {
    let mut u = unpacker(&c.resource, b, 4);
    let mut g = |n: &str| u.u64(n).map_err(e);
    let (atomic, first_psn, msn) = (g("atomic")? != 0, Psn::new(g("first_psn")? as u32), g("msn")? as u32);
    let (word, len, rkey) = (g("word")?, g("len")? as u32, g("rkey")? as u32);
    let kind = if atomic {
        ResourceKind::Atomic { orig: word }
    } else {
        ResourceKind::Read { last_psn: first_psn.add(len.div_ceil(pmtu).max(1) - 1), va: word, len, rkey }
    };
    Ok(Resource { first_psn, msn, kind })
}

fn pack_item(i: &RespItem, c: &QpContext) -> R<Bits> {
    let (kind, psn, msn, word, small, at_base) = match *i {
        RespItem::Ack { psn, aeth } => (item::ACK, psn, aeth.msn, 0, u32::from(aeth.syndrome), false),
        RespItem::AtomicAck { psn, aeth, orig } => {
            (item::ATOMIC_ACK, psn, aeth.msn, orig, u32::from(aeth.syndrome), false)
        }
        RespItem::Read { psn, va, resid, at_base, msn } => (item::READ, psn, msn, va, resid, at_base),
        RespItem::FatalNak { psn, aeth } => (item::FATAL_NAK, psn, aeth.msn, 0, u32::from(aeth.syndrome), false),
    };
    let mut p = packer(&c.resp_item, 5);
    let mut put = |n: &str, v: u128| p.put(n, v).map_err(e);
    put("kind", kind.into())?;
    put("psn", psn.value().into())?;
    put("msn", msn.into())?;
    put("word", word.into())?;
    put("small", small.into())?;
    put("at_base", u128::from(at_base))?;
    p.finish().map_err(e)
}

fn unpack_item(b: &Bits, c: &QpContext) -> R<RespItem> {
    let mut u = unpacker(&c.resp_item, b, 5);
    let mut g = |n: &str| u.u64(n).map_err(e);
    let (kind, psn, msn) = (g("kind")? as u8, Psn::new(g("psn")? as u32), g("msn")? as u32);
    let (word, small, at_base) = (g("word")?, g("small")? as u32, g("at_base")? != 0);
    let aeth = AethRepr { syndrome: small as u8, msn };
    Ok(match kind {
        item::ACK => RespItem::Ack { psn, aeth },
        item::ATOMIC_ACK => RespItem::AtomicAck { psn, aeth, orig: word },
        item::READ => RespItem::Read { psn, va: word, resid: small, at_base, msn },
        _ => RespItem::FatalNak { psn, aeth },
    })
}

fn pack_rp(r: &Rp, c: &QpContext, now: Tick) -> R<Bits> {
    let mut p = packer(&c.rp, 6);
    let mut put = |n: &str, v: u128| p.put(n, v).map_err(e);
    put("rc", r.rc.into())?;
    put("rt", r.rt.into())?;
    put("alpha", r.alpha.into())?;
    put("t_cnt", r.t_cnt.into())?;
    put("bc_cnt", r.bc_cnt.into())?;
    put("bytes", r.bytes.into())?;
    let near = NEAR_TICK_BITS;
    put_opt_tick(&mut p, "alpha_timer_valid", "alpha_timer", r.alpha_timer, now, near)?;
    put_opt_tick(&mut p, "rate_timer_valid", "rate_timer", r.rate_timer, now, near)?;
    put_opt_tick(&mut p, "cut_valid", "cut_at", r.cut_at, now, near)?;
    p.flag("cnp_since_alpha", r.cnp_since_alpha).map_err(e)?;
    p.flag("active", r.active).map_err(e)?;
    p.put("credit", r.credit as u32).map_err(e)?;
    // The pacer's tick matters only while the rate is limited; it is 0 otherwise.
    if !r.active && (r.credit, r.credited) != (0, 0) {
        return Err(format!("a pacer at line rate holds credit {} from tick {}", r.credit, r.credited));
    }
    let credited = if r.active { r.credited } else { now };
    put_tick(&mut p, "credited", credited, now, near)?;
    p.finish().map_err(e)
}

fn unpack_rp(b: &Bits, c: &QpContext, now: Tick) -> R<Rp> {
    let mut u = unpacker(&c.rp, b, 6);
    let mut g = |n: &str| u.u64(n).map_err(e);
    let (rc, rt, alpha) = (g("rc")? as u32, g("rt")? as u32, g("alpha")? as u32);
    let (t_cnt, bc_cnt, bytes) = (g("t_cnt")? as u16, g("bc_cnt")? as u16, g("bytes")? as u32);
    let near = NEAR_TICK_BITS;
    let alpha_timer = get_opt_tick(&mut u, "alpha_timer_valid", "alpha_timer", now, near)?;
    let rate_timer = get_opt_tick(&mut u, "rate_timer_valid", "rate_timer", now, near)?;
    let cut_at = get_opt_tick(&mut u, "cut_valid", "cut_at", now, near)?;
    let mut g = |n: &str| u.u64(n).map_err(e);
    let (cnp_since_alpha, active, credit) = (g("cnp_since_alpha")? != 0, g("active")? != 0, g("credit")? as u32 as i32);
    let credited = tick_near(g("credited")?, now, near)?;
    Ok(Rp {
        rc,
        rt,
        alpha,
        t_cnt,
        bc_cnt,
        bytes,
        alpha_timer,
        rate_timer,
        cut_at,
        cnp_since_alpha,
        active,
        credit,
        credited: if active { credited } else { 0 },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::dcqcn::Params;
    use wire::contract::profile::Profile;
    use wire::contract::qpc::qp_context;

    /// A QP with every part of its state away from its default: a window with started, unstarted and failed
    /// WQEs, timers, a receive in progress, resources of both kinds, responses of every kind, a limited rate.
    fn busy() -> Qp {
        let mut q = Qp::new(7, 3, Rp::new(crate::nic::dcqcn::rate_q8(100_000), &Params::default()));
        q.state = QpState::Rts;
        q.send_cqn = 5;
        q.recv_cqn = 6;
        q.sig_all = true;
        let a = &mut q.attrs;
        (a.access, a.pmtu, a.timeout, a.retry_cnt, a.rnr_retry, a.min_rnr_timer) = (15, 1024, 14, 7, 6, 12);
        (a.max_rd_atomic, a.max_dest_rd_atomic, a.sgid_index, a.hop_limit, a.traffic_class) = (4, 3, 2, 64, 0x6A);
        (a.dest_qpn, a.flow_label, a.dmac, a.port_num, a.udp_sport) =
            (0xAB_CDEF, 0x12345, [2, 0, 0, 0, 0, 9], 1, 0xC123);
        a.vlan = Some(VlanTag { pcp: 5, dei: false, vid: 100 });
        a.dgid = wire::ipv6::gid_from_ipv4([10, 0, 0, 2]);
        q.sq = Ring { iova: 0x1_0000_2000, log_size: 6, log_stride: 7, pi: 12, ci: 10 };
        q.rq = Ring { iova: 0x1_0000_8000, log_size: 5, log_stride: 6, pi: 4, ci: 2 };
        q.last_cnp = Some(99_000);
        let w = |index, op, len, first: Option<u32>, npkts, acked, error| SendWqe {
            index,
            op,
            flags: 2,
            len,
            first_psn: first.map(Psn::new),
            npkts,
            acked,
            error,
            wr_id: 0xFEDC_BA98_7654_3210 ^ u64::from(index),
        };
        let r = &mut q.req;
        r.wqes.extend([
            w(7, SendOp::RdmaWrite, 3000, Some(0xFF_FFFE), 3, true, None),
            w(8, SendOp::RdmaRead, 1024, Some(1), 1, false, None),
            w(9, SendOp::Send, 0, None, 0, true, Some((WcStatus::LocProtErr, 0x42))),
        ]);
        (r.psn, r.cursor, r.cursor_psn, r.comp_psn, r.high_psn) =
            (Psn::new(2), 2, Psn::new(2), Psn::new(1), Psn::new(2));
        (r.retry_left, r.rnr_left, r.pkts_since_ackreq, r.rd_atomic, r.oldest) = (5, 6, 17, 1, 1);
        r.timer = Some(100_000 + (1 << 20));
        r.rnr_wait = Some((100_500, Psn::new(1)));
        r.gap_retry = Some(Psn::new(1));
        let s = &mut q.resp;
        (s.epsn, s.msn, s.nak_sent, s.in_msg) = (Psn::new(0x77), 0x55, true, Some(OpKind::Send));
        (s.write_va, s.write_resid, s.write_len, s.fatal) = (0x1_0000_9000, 512, 4096, false);
        s.recv = Some(RecvCtx { index: 1, offset: 2048 });
        s.resources.push_back(Resource {
            first_psn: Psn::new(0x70),
            msn: 0x50,
            kind: ResourceKind::Read { last_psn: Psn::new(0x73), va: 0x1_0000_a000, len: 4000, rkey: 0x1234 },
        });
        s.resources.push_back(Resource {
            first_psn: Psn::new(0x74),
            msn: 0x51,
            kind: ResourceKind::Atomic { orig: 9 },
        });
        let aeth = |syndrome, msn| AethRepr { syndrome, msn };
        s.out.extend([
            RespItem::Read { psn: Psn::new(0x71), va: 0x1_0000_a400, resid: 2976, at_base: false, msn: 0x50 },
            RespItem::AtomicAck { psn: Psn::new(0x74), aeth: aeth(0x1F, 0x51), orig: 9 },
            RespItem::Ack { psn: Psn::new(0x75), aeth: aeth(0x60, 0x52) },
            RespItem::FatalNak { psn: Psn::new(0x76), aeth: aeth(0x61, 0x52) },
        ]);
        s.ack = Some((Psn::new(0x70), aeth(0x1F, 0x4F)));
        (s.res_head, s.item_head) = (0xFE, 0x83);
        let rp = &mut q.rp;
        assert!(rp.on_cnp(100_000, &Params::default()));
        rp.on_sent(100_001, 9000, crate::nic::dcqcn::rate_q8(100_000), &Params::default());
        q
    }

    #[test]
    fn a_busy_qp_packs_and_unpacks_to_itself() {
        for p in Profile::ALL {
            let c = qp_context(&p);
            let q = busy();
            assert_eq!(round_trip(&q, &c, 100_010), Ok(()), "{}", p.name);
            let packed = pack(&q, &c, 100_010).unwrap();
            assert_eq!(packed.attr.len(), c.attr.width());
            assert_eq!((packed.wqes.len(), packed.resources.len(), packed.items.len()), (3, 2, 4));
            // Far from now, the tick values still come back (within their windows).
            assert_eq!(round_trip(&q, &c, 100_010 + (1 << 23)), Ok(()), "{}", p.name);
        }
    }

    /// A tick's low bits read back as the tick within half their range of now; a value exactly half the range
    /// away reads as the earlier tick (`put_tick` never stores one), and one before time 0 is an error.
    #[test]
    fn a_stored_tick_reads_back_near_now() {
        let now = 1000;
        assert_eq!(tick_near((now + 127) & 255, now, 8), Ok(now + 127));
        assert_eq!(tick_near((now - 127) & 255, now, 8), Ok(now - 127));
        assert_eq!(tick_near((now + 128) & 255, now, 8), Ok(now - 128), "half away");
        assert_eq!(tick_near(now & 255, now, 8), Ok(now));
        assert!(tick_near(200, 10, 8).unwrap_err().contains("before time 0"));
    }

    /// What the layout cannot hold is refused, by field.
    #[test]
    fn what_does_not_fit_is_refused_by_name() {
        let c = qp_context(&Profile::board());
        let mut q = busy();
        q.attrs.dest_qpn = 1 << 24;
        let e = round_trip(&q, &c, 100_010).unwrap_err();
        assert!(e.contains("qp_attr.dest_qpn"), "{e}");
        let mut q = busy();
        q.rp.alpha_timer = Some(100_010 + (1 << 24));
        let e = round_trip(&q, &c, 100_010).unwrap_err();
        assert!(e.contains("alpha_timer") && e.contains("too far from now"), "{e}");
        let mut q = busy();
        let last = q.req.wqes[2].clone();
        while q.req.wqes.len() < 16 {
            q.req.wqes.push_back(last.clone());
        }
        let e = round_trip(&q, &c, 100_010).unwrap_err();
        assert!(e.contains("qp_req.wqes"), "16 WQEs do not fit the board's window of 8: {e}");
    }

    /// State the layout leaves out must follow from the rest: a WQE whose PSNs break the window's
    /// contiguity, or a READ resource whose last PSN is not its length's, comes back different.
    #[test]
    fn what_the_layout_leaves_out_must_follow_from_the_rest() {
        let c = qp_context(&Profile::board());
        let mut q = busy();
        q.req.wqes[1].first_psn = Some(Psn::new(5));
        assert!(round_trip(&q, &c, 100_010).unwrap_err().contains("unpacks to another state"));
        let mut q = busy();
        if let ResourceKind::Read { last_psn, .. } = &mut q.resp.resources[0].kind {
            *last_psn = Psn::new(0x79);
        }
        assert!(round_trip(&q, &c, 100_010).unwrap_err().contains("unpacks to another state"));
        let mut q = busy();
        q.rp.active = false;
        let e = round_trip(&q, &c, 100_010).unwrap_err();
        assert!(e.contains("at line rate holds credit"), "{e}");
    }
}
