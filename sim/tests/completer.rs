//! What a response or a timer's end does to its QP, in RTL (`hdl::engine::comp::completer::Completer`: the
//! walk `AckWalk`, `RespMatch`, `RespPlan`, and `RespRun` with `RespFin`, `SendDesc`, `OldestWalk` and
//! `RewindWalk`), against the model's `comp::respond`, `comp::ack_timer_end` and `comp::rnr_wait_end`.
//!
//! Each run is one QP's requester taken through reachable states by the model: WQEs of every send operation
//! and length fetched into the window and sent at a random path MTU, retry and RNR retry counts (infinite
//! RNR retries too) and ACK timeouts (none too); then, step by step, a response (ACKs through any PSN, RNR
//! NAKs of every timer code, sequence NAKs, fatal NAKs of every code, reserved AETHs, READ responses in and
//! out of sequence, of the right and wrong shape, atomic ACKs, answers to PSNs never sent), an ACK timer's or
//! RNR wait's end when due, or more WQEs sent. The RTL starts each step from the model's packed context
//! (`qp_req`, the window RAM answering a slot a cycle after it is asked for, the WQE slots in host memory
//! served with bubbles, the scatter's verdict from the model's `scatter_pieces`) and is driven as the
//! dispatch drives it (the walk's `qp_req` written back before the rest). After the step its `qp_req` and
//! every window entry must be the model's packed ones, bit for bit, and the data placed where the model
//! places it.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test completer`.

use hdl::top::Top;
use hdl::Width;
use model::nic::comp::{ack_timer_end, respond, rnr_wait_end};
use model::nic::context::{pack, unpack};
use model::nic::dcqcn::Rp;
use model::nic::qp::{scatter_pieces, Qp, SendWqe, WqeData};
use model::nic::req::{desc_of_slot, packets_for};
use model::nic::timer::{ack_timeout_ticks, due, Tick};
use model::rng::Rng;
use sim::frames::meta_of;
use sim::record::diff;
use sim::responder::{bytes_of, window_ram};
use sim::Sim;
use std::collections::HashMap;
use wire::contract::profile::Profile;
use wire::contract::qpc::{qp_context, QpContext, TICK_BITS};
use wire::contract::verbs::{QpState, RNR_RETRY_INFINITE};
use wire::contract::wqe::{send_flags, DataSegRepr, SendCtrlRepr, SendOp, DATA_SEG_LEN, SEND_DATA};
use wire::eth::EthernetRepr;
use wire::ext::{syndrome, AethRepr, AtomicAckEthRepr};
use wire::ipv4::Ipv4Repr;
use wire::{BthRepr, ExtHeaders, IpRepr, OpKind, Opcode, Psn, RoceHeaders};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xC0_3B1E7E)
}

/// The SQ's stride: a control segment and up to `max_sge` data segments.
const LOG_STRIDE: u8 = 7;

/// The WQE slots in host memory, by address.
type Mem = HashMap<u64, Vec<u8>>;

/// A send WQE's slot: its control segment and a scatter list of up to `max_sge` entries (sometimes inline
/// data, or a control segment that no longer parses: the slot rewritten since the fetch).
fn slot(rng: &mut Rng, op: SendOp, len: u32, max_sge: usize) -> Vec<u8> {
    let mut b = vec![0u8; 1 << LOG_STRIDE];
    let inline = rng.chance(0.03);
    let n = 1 + rng.below(max_sge as u64) as usize;
    let num = if inline { 8 } else { n as u16 };
    let opcode = if rng.chance(0.02) { 0xEE } else { op as u8 };
    let flags = if inline { send_flags::INLINE } else { 0 };
    let ctrl = SendCtrlRepr { opcode, flags, len: num, imm: 0, wr_id: rng.next_u64() };
    b[..SendCtrlRepr::LEN].copy_from_slice(&ctrl.to_bytes());
    if !inline {
        // Lengths that sum to the WQE's, or a little short of it (the data does not fit).
        let short = if rng.chance(0.15) { 1 + rng.below(16) as u32 } else { 0 };
        let mut left = len.saturating_sub(short);
        for i in 0..n {
            let l = if i + 1 == n { left } else { rng.below(u64::from(left) + 1) as u32 };
            left -= l;
            let d = DataSegRepr { addr: rng.next_u64() >> 8, lkey: rng.next_u64() as u32, length: l };
            let at = SEND_DATA + i * DATA_SEG_LEN;
            b[at..at + DATA_SEG_LEN].copy_from_slice(&d.to_bytes());
        }
    }
    b
}

/// Whether `len` bytes at offset `off` fit the scatter list of the WQE at SQ counter `index`, as the model
/// places a response's data; none when the slot is no longer a scatter list (nothing is scattered).
fn fits(mem: &Mem, q: &Qp, index: u16, off: u32, len: usize) -> Option<bool> {
    let bytes = mem.get(&q.sq.addr(index)).expect("the WQE's slot");
    match desc_of_slot(bytes).map(|d| d.data) {
        Some(WqeData::Sges(s)) => Some(scatter_pieces(&s, off, len).is_some()),
        _ => None,
    }
}

/// A fresh RTS QP with an empty window at random counters and PSN, and random requester attributes.
fn fresh(rng: &mut Rng, p: &Profile) -> Qp {
    let mut q = Qp::new(1, 0, Rp::new(100_000, &Default::default()));
    q.state = QpState::Rts;
    q.attrs.pmtu = [256, 512, 1024, 2048, 4096][rng.below(5) as usize];
    q.attrs.retry_cnt = rng.below(8) as u8;
    q.attrs.rnr_retry = if rng.chance(0.2) { RNR_RETRY_INFINITE } else { rng.below(7) as u8 };
    q.attrs.timeout = if rng.chance(0.1) { 0 } else { 1 + rng.below(5) as u8 };
    q.attrs.max_rd_atomic = 1 + rng.below(u64::from(p.max_qp_rd_atom)) as u8;
    q.sq.iova = (rng.next_u64() >> 20) << 12;
    q.sq.log_size = 8;
    q.sq.log_stride = LOG_STRIDE;
    q.sq.ci = rng.next_u64() as u16;
    q.sq.pi = q.sq.ci;
    let r = &mut q.req;
    r.psn = Psn::new(rng.next_u64() as u32);
    (r.cursor_psn, r.comp_psn, r.high_psn) = (r.psn, r.psn, r.psn);
    (r.retry_left, r.rnr_left) = (q.attrs.retry_cnt, q.attrs.rnr_retry);
    q
}

/// The requester's side of a step: WQEs fetched into the window (their slots written), and the ones not
/// started yet sent in order (not during an RNR wait, not past `max_rd_atomic`); the cursor at the end,
/// the ACK timer started when work is outstanding and it is not running.
fn send(rng: &mut Rng, q: &mut Qp, mem: &mut Mem, p: &Profile, tick: Tick) {
    let ops: Vec<SendOp> = (0..16u8).filter_map(SendOp::from_u8).collect();
    let room = p.wqe_window as usize - q.req.wqes.len();
    for _ in 0..rng.below(room as u64 + 1) {
        let op = if rng.chance(0.5) {
            [SendOp::RdmaRead, SendOp::AtomicCmpSwp, SendOp::AtomicFetchAdd][rng.below(3) as usize]
        } else {
            ops[rng.below(ops.len() as u64) as usize]
        };
        let len = match rng.below(5) {
            _ if op.is_atomic() => 8,
            0 => 0,
            1 => 1 + rng.below(300) as u32,
            2 => q.attrs.pmtu * (1 + rng.below(3) as u32),
            _ => rng.below(3 * 4096) as u32,
        };
        let index = q.sq.ci;
        mem.insert(q.sq.addr(index), slot(rng, op, len, p.max_sge as usize));
        q.req.push(SendWqe {
            index,
            op,
            flags: 0,
            len,
            first_psn: None,
            npkts: 0,
            acked: false,
            error: None,
            wr_id: rng.next_u64(),
        });
        q.sq.ci = q.sq.ci.wrapping_add(1);
        q.sq.pi = q.sq.ci;
    }
    if q.req.rnr_wait.is_some() {
        return;
    }
    let started = q.req.wqes.iter().take_while(|w| w.first_psn.is_some()).count();
    let mut i = started;
    let want = started + rng.below((q.req.wqes.len() - started) as u64 + 1) as usize;
    while i < want {
        let w = &q.req.wqes[i];
        if w.op.is_read_or_atomic() && q.req.rd_atomic >= q.attrs.max_rd_atomic {
            break;
        }
        let n = packets_for(w.op, w.len, q.attrs.path_mtu());
        q.req.start(i, n);
        i += 1;
    }
    let r = &mut q.req;
    r.cursor = i;
    r.cursor_psn = r.psn;
    r.high_psn = r.psn;
    r.pkts_since_ackreq = rng.below(4) as u32;
    if r.outstanding() && r.timer.is_none() {
        r.timer = ack_timeout_ticks(q.attrs.timeout).map(|t| tick + t);
    }
}

/// A response frame from the QP's peer.
fn frame(opcode: Opcode, psn: Psn, syn: u8, payload: &[u8], orig: u64) -> Vec<u8> {
    let info = opcode.info().expect("an opcode of the table");
    let mut ext = ExtHeaders::default();
    if info.has(wire::opcode::hdr::AETH) {
        ext.aeth = Some(AethRepr { syndrome: syn, msn: 0 });
    }
    if info.has(wire::opcode::hdr::ATOMIC_ACK_ETH) {
        ext.atomic_ack_eth = Some(AtomicAckEthRepr { orig });
    }
    let h = RoceHeaders {
        eth: EthernetRepr { dst: [2, 0, 0, 0, 0, 1], src: [2, 0, 0, 0, 0, 2], vlan: None, ethertype: 0 },
        ip: IpRepr::V4(Ipv4Repr { src: [10, 0, 0, 2], dst: [10, 0, 0, 1], tos: 0, ttl: 64, ident: 0, payload_len: 0 }),
        udp_src_port: 0xC000,
        bth: BthRepr { opcode, dest_qp: 1, psn, ..Default::default() },
        ext,
    };
    h.emit(payload)
}

/// A response to `q`'s requester: of every kind, mostly about its oldest unfinished WQE. A NAK names a PSN
/// from `comp_psn` on (a responder NAKs its expected PSN), and during an RNR wait nothing past the PSN the
/// wait resumes at is acknowledged (the responder is held there): the model, unlike rxe, does not yet
/// ignore an older NAK, which would leave its cursor behind `comp_psn` (a case for loss recovery).
fn random_response(rng: &mut Rng, q: &Qp) -> Vec<u8> {
    let r = &q.req;
    let top = r.rnr_wait.map_or(r.high_psn, |(_, p)| p.sub(1));
    let span = top.diff(r.comp_psn).max(0) as u32;
    // A PSN the requester sent (mostly), one before `comp_psn`, or one never sent.
    // During an RNR wait the responder answers nothing from the PSN it NAKed on.
    let held = |p: Psn| if r.rnr_wait.is_some() && p.after(top) { top } else { p };
    let near = |rng: &mut Rng| {
        held(match rng.below(10) {
            0 => r.comp_psn.sub(1 + rng.below(3) as u32),
            1 if r.rnr_wait.is_none() => r.high_psn.add(rng.below(2) as u32),
            2 => r.comp_psn,
            _ => r.comp_psn.add(rng.below(u64::from(span) + 1) as u32),
        })
    };
    let nak = |rng: &mut Rng| r.comp_psn.add(rng.below(u64::from(span) + 1) as u32);
    let w = r.wqes.get(r.oldest).filter(|w| w.first_psn.is_some());
    let pmtu = q.attrs.path_mtu();
    match rng.below(20) {
        0..=5 => frame(Opcode::ACKNOWLEDGE, near(rng), rng.below(32) as u8, &[], 0),
        6 | 7 => frame(Opcode::ACKNOWLEDGE, nak(rng), syndrome::RNR_NAK | rng.below(32) as u8, &[], 0),
        8 | 9 => frame(Opcode::ACKNOWLEDGE, nak(rng), syndrome::NAK_PSN_SEQ_ERR, &[], 0),
        10 => frame(Opcode::ACKNOWLEDGE, nak(rng), 0x60 | rng.below(32) as u8, &[], 0),
        11 => {
            let syn = if rng.chance(0.5) { 0x40 | rng.below(32) as u8 } else { 0x80 | rng.next_u64() as u8 };
            frame(Opcode::ACKNOWLEDGE, near(rng), syn, &[], 0)
        }
        12 | 13 => frame(
            Opcode::ATOMIC_ACKNOWLEDGE,
            held(w.and_then(|w| w.first_psn).unwrap_or_else(|| near(rng))),
            0,
            &[],
            rng.next_u64(),
        ),
        _ => {
            // A READ response: mostly the one the oldest READ waits for, of its shape.
            let psn = held(if rng.chance(0.7) { r.comp_psn } else { near(rng) });
            let (first, npkts, len) = w.map_or((psn, 1, pmtu), |w| (w.first_psn.unwrap_or(psn), w.npkts.max(1), w.len));
            let k = psn.diff(first).max(0) as u32;
            let (f, l) = (k == 0, k + 1 >= npkts);
            let opcode = if rng.chance(0.85) {
                match (f, l) {
                    (true, true) => Opcode::RDMA_READ_RESPONSE_ONLY,
                    (true, false) => Opcode::RDMA_READ_RESPONSE_FIRST,
                    (false, true) => Opcode::RDMA_READ_RESPONSE_LAST,
                    (false, false) => Opcode::RDMA_READ_RESPONSE_MIDDLE,
                }
            } else {
                Opcode(0x0D + rng.below(4) as u8)
            };
            let want = if l { len.saturating_sub(k.saturating_mul(pmtu)) } else { pmtu };
            let n = if rng.chance(0.9) { want } else { rng.below(u64::from(pmtu) + 1) as u32 };
            let mut payload = vec![0u8; n as usize];
            rng.fill(&mut payload);
            frame(opcode, psn, rng.below(32) as u8, &payload, 0)
        }
    }
}

/// The RTL and its ports.
struct Rig {
    rtl: Sim,
    c: QpContext,
    slots: usize,
    rng: Rng,
    /// Chance of a bubble in the slot read's completion.
    bubble: f64,
}

/// How a step starts: a response (its frame) or a timer's end (the RNR wait's, else the ACK timer's).
enum Start<'a> {
    Response(&'a [u8]),
    Timer { rnr: bool },
}

/// What the RTL left: `qp_req`, the window RAM, and the data's offset and length if it started a scatter.
struct Outcome {
    sent: bool,
    req: Vec<u8>,
    ram: Vec<Vec<u8>>,
    scatter: Option<(u32, u32)>,
    timed_out: bool,
}

impl Rig {
    fn port(&self, n: &str) -> usize {
        self.rtl.port(n)
    }

    fn set(&mut self, n: &str, v: u64) {
        let p = self.port(n);
        self.rtl.set(p, v);
    }

    fn get(&self, n: &str) -> u64 {
        self.rtl.get(self.port(n))
    }

    /// Runs one step on the RTL from QP `q` at tick `tick`.
    fn run(&mut self, q: &Qp, start: Start<'_>, tick: Tick, mem: &Mem, ctx: &str) -> Outcome {
        let packed = pack(q, &self.c, tick).expect("the QP packs");
        let base = q.sq.ci.wrapping_sub(q.req.wqes.len() as u16);
        let mut ram = window_ram(&packed.wqes, base, self.slots);
        for e in ram.iter_mut() {
            e.resize(16, 0);
        }
        let mut req = bytes_of(&packed.req);
        let (p_attr, p_req, p_rec, p_entry) =
            (self.port("attr"), self.port("req"), self.port("rec"), self.port("r_entry"));
        self.rtl.set_bytes(p_attr, &bytes_of(&packed.attr));
        self.rtl.set_bytes(p_req, &req);
        self.set("tick", tick & ((1 << TICK_BITS) - 1));
        for n in ["start", "run_start", "tmr_ack", "tmr_rnr", "cpl_valid", "cpl_err", "sc_fits"] {
            self.set(n, 0);
        }
        self.set("rd_ready", 1);
        let (mut walking, mut pulse) = (false, false);
        match start {
            Start::Response(f) => {
                let pkt = wire::parse(f).expect("a well-formed response");
                let rec = meta_of(f, &pkt);
                let with_data = pkt.hdr.bth.opcode != Opcode::ACKNOWLEDGE;
                let syn = (rec.get("aeth") >> 24) as u8;
                let psn = pkt.hdr.bth.psn;
                let through = if with_data || syn >> 5 & 3 != 0 { psn.sub(1) } else { psn };
                let noack = !with_data && (syn & 0x80 != 0 || syn >> 5 & 3 == 2);
                self.rtl.set_bytes(p_rec, &rec.0);
                self.set("psn", u64::from(psn.value()));
                self.set("through", u64::from(through.value()));
                self.set("noack", u64::from(noack));
                self.set("aeth", u64::from(syn));
                self.rtl.eval();
                if self.get("sent") == 0 {
                    return Outcome { sent: false, req, ram, scatter: None, timed_out: false };
                }
                self.set("start", 1);
                walking = true;
            }
            Start::Timer { rnr } => {
                self.set(if rnr { "tmr_rnr" } else { "tmr_ack" }, 1);
                self.set("run_start", 1);
                pulse = true;
            }
        }
        let (mut slot, mut beats, mut asked, mut scatter, mut fit) = (0usize, Vec::<u64>::new(), None, None, None);
        for cycle in 0.. {
            assert!(cycle < 2000, "the step ends: {ctx}");
            self.rtl.set_bytes(p_entry, &ram[slot % self.slots]);
            let beat = !beats.is_empty() && !self.rng.chance(self.bubble);
            if beat {
                let d = beats.remove(0);
                self.set("cpl_data", d);
                self.set("cpl_last", u64::from(beats.is_empty()));
            }
            self.set("cpl_valid", u64::from(beat));
            if let Some(f) = fit.take() {
                self.set("sc_fits", u64::from(f));
            }
            self.rtl.eval();
            let pre = if walking { "walk_" } else { "run_" };
            slot = self.get(&format!("{pre}r_slot")) as usize;
            if self.get(&format!("{pre}w_we")) == 1 {
                let s = self.get(&format!("{pre}w_slot")) as usize % self.slots;
                let p = self.port(&format!("{pre}w_entry"));
                ram[s] = self.rtl.get_bytes(p);
            }
            if !walking && self.get("rd_valid") == 1 {
                assert!(asked.is_none(), "one read of the slot: {ctx}");
                let (a, l) = (self.get("rd_addr"), self.get("rd_len") as usize);
                let bytes = mem.get(&a).unwrap_or_else(|| panic!("a read of {a:#x}, no WQE slot: {ctx}"));
                assert_eq!(l, bytes.len(), "the read is the whole slot: {ctx}");
                beats = bytes.chunks(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect();
                asked = Some(bytes.clone());
            }
            if !walking && self.get("sc_start") == 1 {
                let (off, len) = (self.get("sc_off") as u32, self.get("sc_len") as u32);
                let ok = match asked.as_deref().and_then(desc_of_slot).map(|d| d.data) {
                    Some(WqeData::Sges(s)) => scatter_pieces(&s, off, len as usize).is_some(),
                    _ => panic!("a scatter started over a slot that is not a list: {ctx}"),
                };
                scatter = Some((off, len));
                fit = Some(ok);
            }
            let mut end = false;
            if walking && self.get("walk_done") == 1 {
                let p = self.port("walk_req_next");
                req = self.rtl.get_bytes(p);
                walking = false;
                if self.get("run") == 1 {
                    self.set("run_start", 1);
                    pulse = true;
                } else {
                    end = true;
                }
            } else if !walking && self.get("run_done") == 1 {
                let p = self.port("run_req_next");
                req = self.rtl.get_bytes(p);
                end = true;
            }
            let timed_out = self.get("timed_out") == 1;
            self.rtl.tick();
            self.set("start", 0);
            if !walking {
                // The walk's `qp_req` written back and read again.
                self.rtl.set_bytes(p_req, &req);
            }
            if std::mem::take(&mut pulse) {
                self.set("run_start", 0);
            }
            if end {
                return Outcome { sent: true, req, ram, scatter, timed_out };
            }
        }
        unreachable!()
    }
}

#[test]
fn the_completer_does_what_the_model_does() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let mut rng = Rng::new(seed);
    let bubble = rng.below(50) as f64 / 100.0;
    let mut rig = Rig {
        rtl: Sim::new(Top::Completer, Width::W8),
        c,
        slots: p.wqe_window as usize,
        rng: Rng::new(seed ^ 1),
        bubble,
    };
    rig.set("reset", 1);
    rig.rtl.tick();
    rig.set("reset", 0);
    let c = qp_context(&p);
    let mut tally: HashMap<&str, u32> = HashMap::new();
    let mut tick: Tick = (1 << 20) + rng.below(1 << 20);
    let mut q = fresh(&mut rng, &p);
    let mut mem = Mem::new();
    for step in 0..60_000u32 {
        // The QP as its packed context holds it (the entries' first PSNs derived as the RTL derives them).
        let packed = pack(&q, &c, tick).expect("the QP packs");
        q = unpack(&packed, &c, q.qpn, tick).expect("the QP unpacks");
        let a = &q.attrs;
        let ctx = format!(
            "seed {seed} (FERRITE_SEED={seed}), step {step}, tick {tick}: {:?}, timeout {} retry {} rnr {} pmtu {}",
            q.req, a.timeout, a.retry_cnt, a.rnr_retry, a.pmtu
        );
        // The timers the RTL sees due are the model's.
        let ack_due = q.req.timer.is_some_and(|t| due(t, tick));
        let rnr_due = q.req.rnr_wait.is_some_and(|(t, _)| due(t, tick));
        let (pa, pr) = (rig.port("attr"), rig.port("req"));
        rig.rtl.set_bytes(pa, &bytes_of(&packed.attr));
        rig.rtl.set_bytes(pr, &bytes_of(&packed.req));
        rig.set("tick", tick & ((1 << TICK_BITS) - 1));
        rig.rtl.eval();
        assert_eq!(rig.get("ack_due") == 1, ack_due, "the ACK timer due: {ctx}");
        assert_eq!(rig.get("rnr_due") == 1, rnr_due, "the RNR wait due: {ctx}");
        let mut m = q.clone();
        let (got, what) = if rnr_due || (ack_due && rng.chance(0.7)) {
            let out = rig.run(&q, Start::Timer { rnr: rnr_due }, tick, &mem, &ctx);
            if rnr_due {
                rnr_wait_end(&mut m, tick);
                (out, "rnr wait end")
            } else {
                let outstanding = ack_timer_end(&mut m, tick);
                assert_eq!(out.timed_out, outstanding, "the ACK timer's end found work outstanding: {ctx}");
                (out, if outstanding { "ack timeout" } else { "ack timeout, nothing outstanding" })
            }
        } else if rng.chance(if q.req.outstanding() { 0.2 } else { 0.6 }) {
            send(&mut rng, &mut q, &mut mem, &p, tick);
            tick += rng.below(4);
            continue;
        } else {
            let f = random_response(&mut rng, &q);
            let pkt = wire::parse(&f).expect("a well-formed response");
            let kind = pkt.hdr.bth.opcode.info().expect("a response opcode").kind;
            let out = rig.run(&q, Start::Response(&f), tick, &mem, &ctx);
            let sent = pkt.hdr.bth.psn.before(q.req.high_psn);
            assert_eq!(out.sent, sent, "whether the PSN was sent: {ctx}");
            let (mut placed, mut fitted) = (None, None);
            if sent {
                respond(&mut m, kind, &pkt, tick, |q, index, off, data| {
                    let ok = fits(&mem, q, index, off, data.len());
                    placed = ok.map(|_| (off, data.len() as u32));
                    fitted = ok;
                    ok == Some(true)
                });
            }
            if let Some(fit) = fitted {
                *tally.entry(if fit { "data placed" } else { "data past its list" }).or_default() += 1;
            }
            assert_eq!(out.scatter, placed, "the data placed (offset, length): {ctx}\n{:?}", pkt.hdr);
            let what = match (sent, kind) {
                (false, _) => "never sent",
                (_, OpKind::Ack) => match pkt.hdr.ext.aeth.map(|a| a.syndrome >> 5) {
                    Some(0) => "ack",
                    Some(1) => "rnr nak",
                    Some(3) => "nak",
                    _ => "reserved aeth",
                },
                (_, OpKind::AtomicAck) => "atomic ack",
                _ => "read response",
            };
            (out, what)
        };
        *tally.entry(what).or_default() += 1;
        // What it did, beyond its kind.
        let (b, a) = (&q.req, &m.req);
        for (did, name) in [
            (a.gap_retry.is_some() && a.gap_retry != b.gap_retry, "gap retried"),
            (a.retry_left < b.retry_left, "retry counted"),
            (a.cursor_psn.before(b.cursor_psn), "cursor moved back"),
            (a.comp_psn != b.comp_psn, "comp_psn moved"),
            (a.wqes.iter().zip(&b.wqes).any(|(x, y)| x.error.is_some() && y.error.is_none()), "WQE failed"),
        ] {
            if did {
                *tally.entry(name).or_default() += 1;
            }
        }
        // The RTL's `qp_req` and window are the model's.
        let after = pack(&m, &c, tick).expect("the QP packs after the step");
        let want_req = bytes_of(&after.req);
        let mut wrong = Vec::new();
        if got.req[..want_req.len()] != want_req[..] {
            wrong.push(format!("qp_req: {}", diff(&c.req, &got.req, &want_req)));
        }
        let base = m.sq.ci.wrapping_sub(m.req.wqes.len() as u16);
        for (i, w) in after.wqes.iter().enumerate() {
            let want = bytes_of(w);
            let s = usize::from(base.wrapping_add(i as u16)) % rig.slots;
            if got.ram[s][..want.len()] != want[..] {
                wrong.push(format!("window entry {i}: {}", diff(&c.wqe, &got.ram[s], &want)));
            }
        }
        assert!(wrong.is_empty(), "after a {what}: {}\n{ctx}\nmodel after: {:?}", wrong.join("\n"), m.req);
        if m.req.wqes.iter().any(|w| w.error.is_some()) {
            *tally.entry("failed, a fresh QP").or_default() += 1;
            q = fresh(&mut rng, &p);
            mem.clear();
        } else {
            q = m;
            while q.req.wqes.front().is_some_and(|w| w.acked) {
                let w = q.req.pop().expect("a finished front");
                mem.remove(&q.sq.addr(w.index));
            }
        }
        if q.attrs.timeout != 0 {
            q.check_req_invariants()
                .unwrap_or_else(|e| panic!("the model's own invariants after a {what}: {e}: {ctx}"));
        }
        tick += rng.below(6);
        // Let a timer come due now and then.
        if rng.chance(0.05) {
            if let Some(t) = q.req.rnr_wait.map(|w| w.0).or(q.req.timer) {
                tick = tick.max(t);
            }
        }
    }
    let mut t: Vec<_> = tally.into_iter().collect();
    t.sort();
    eprintln!("completer: 60,000 steps: {t:?}");
    let at_least = [
        ("ack", 5000),
        ("nak", 2000),
        ("rnr nak", 1500),
        ("reserved aeth", 500),
        ("read response", 5000),
        ("atomic ack", 2000),
        ("ack timeout", 1000),
        ("rnr wait end", 150),
        ("data placed", 2000),
        ("data past its list", 100),
        ("gap retried", 300),
        ("retry counted", 1000),
        ("cursor moved back", 1000),
        ("WQE failed", 2000),
    ];
    let seen: HashMap<&str, u32> = t.into_iter().collect();
    for (name, n) in at_least {
        assert!(seen.get(name).copied().unwrap_or(0) >= n, "seed {seed}: fewer than {n} steps of `{name}`: {seen:?}");
    }
}
