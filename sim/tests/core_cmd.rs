//! The command unit in RTL against the model, command by command: random command streams (valid and
//! spoilt, every opcode, every MODIFY_QP transition and attribute check) run on the Verilated core and on
//! the model, which follows the core's one decision here (a command completed). After each command the
//! mailbox's output, the STATUS register, the packed context of the QP it named (`qp_attr`, `qp_req`,
//! `qp_resp` against the model's `context::pack`) and the table entry it made must be identical; every 32
//! commands, every register of every block.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test core_cmd`.

use hdl::Width;
use model::nic::{context, Decision, Nic, NicConfig};
use model::rng::Rng;
use model::HostMemory;
use sim::core::CoreSim;
use sim::responder::bytes_of;
use wire::contract::cmd::*;
use wire::contract::qpc::{self, QpContext};
use wire::contract::regs::{self, block, counters, dcqcn, doorbell, id, Counter, Dcqcn};
use wire::contract::verbs::{attr, rc_transition, QpState, QpType};
use wire::layout::{Layout, Packer};

/// An address mapped on no side.
const UNMAPPED: u64 = 0x7F00_0000;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x00C0_4D00)
}

fn pack(l: &Layout, vals: &[(&str, u128)]) -> Vec<u8> {
    let mut p = Packer::new(l);
    for f in &l.fields {
        let v = vals.iter().find(|(n, _)| *n == f.name).map_or(0, |(_, v)| *v);
        p.put(f.name, v).expect("value fits");
    }
    bytes_of(&p.finish().expect("all fields"))
}

/// `got` (a port, zero-extended) holds exactly `want`.
fn same_record(got: &[u8], want: &[u8]) -> bool {
    got.len() >= want.len() && got[..want.len()] == *want && got[want.len()..].iter().all(|&b| b == 0)
}

struct Pair {
    rtl: CoreSim,
    nic: Nic,
    mem: HostMemory,
    /// The mailbox's IOVA on both hosts.
    mb: u64,
    ctx: QpContext,
    profile: wire::contract::profile::Profile,
    rng: Rng,
    seed: u64,
    n: usize,
    token: u8,
    pds: Vec<u32>,
    cqs: Vec<u32>,
    keys: Vec<u32>,
    qps: Vec<u32>,
    /// (opcode, status) pairs seen, and the QP states MODIFY_QP reached.
    seen: std::collections::BTreeSet<(u16, u8)>,
    states: std::collections::BTreeSet<u8>,
    /// Fewest and most cycles from the doorbell to the command's completion.
    span: (u64, u64),
    /// QP, CQ and EQ doorbells rung.
    doorbells: usize,
}

/// What one command was, for the report.
struct Issued {
    opcode: u16,
    input: Vec<u8>,
    mailbox: u64,
}

impl Pair {
    fn new(qps: u32, seed: u64) -> Pair {
        let info = hdl::core::info(qps, Width::W8);
        let cfg = NicConfig { profile: info.profile, port_mbps: info.port_mbps, build_id: info.build_id, checks: true };
        let rtl = CoreSim::new_lockstep(qps, Width::W8);
        let mem = HostMemory::new();
        // The mailbox: allocated on the core's host (journaled, so its follower has it too) and at the same
        // address for this test's own model.
        let mb = rtl.mem.alloc(MAILBOX_LEN);
        mem.alloc_at(mb, MAILBOX_LEN);
        Pair {
            rtl,
            nic: Nic::new(cfg),
            mem,
            mb,
            ctx: qpc::qp_context(&info.profile),
            profile: info.profile,
            rng: Rng::new(seed),
            seed,
            n: 0,
            token: 0,
            pds: Vec::new(),
            cqs: Vec::new(),
            keys: Vec::new(),
            qps: Vec::new(),
            seen: Default::default(),
            states: Default::default(),
            span: (u64::MAX, 0),
            doorbells: 0,
        }
    }

    fn fail(&self, what: &str, c: &Issued) -> ! {
        panic!(
            "seed {} (FERRITE_SEED={}), {}-QP core, command {} (opcode {:#x}, mailbox {:#x}): {what}\ninput: {}",
            self.seed,
            self.seed,
            self.profile.max_qp,
            self.n,
            c.opcode,
            c.mailbox,
            hex(&c.input)
        )
    }

    /// Runs one command on both sides and compares what it did.
    fn run(&mut self, opcode: u16, input: &[u8]) -> (Status, Vec<u8>) {
        self.n += 1;
        self.token = self.token.wrapping_add(1);
        let mailbox = if self.rng.chance(0.02) { UNMAPPED } else { self.mb };
        let c = Issued { opcode, input: input.to_vec(), mailbox };
        let mut mb = vec![0xA5u8; MAILBOX_LEN];
        mb[..OUT_HDR].fill(0);
        CmdHeaderRepr { opcode }.write_to(&mut mb).expect("header fits");
        mb[IN..IN + input.len()].copy_from_slice(input);
        for m in [&self.rtl.mem, &self.mem] {
            m.write(self.mb, &mb).expect("mailbox mapped");
        }
        let twice = self.rng.chance(0.1);
        let regs = [(regs::cmd::MAILBOX_LO, mailbox as u32), (regs::cmd::MAILBOX_HI, (mailbox >> 32) as u32)];
        for (off, v) in regs.into_iter().chain([(regs::cmd::DOORBELL, u32::from(self.token))]) {
            self.rtl.mmio_write(regs::cmd::BASE + off, v);
            self.nic.mmio_write(regs::cmd::BASE + off, v);
        }
        if twice {
            // Rung again while the first runs: ignored and counted on both sides.
            self.rtl.mmio_write(regs::cmd::BASE + regs::cmd::DOORBELL, 0xEE);
            self.nic.mmio_write(regs::cmd::BASE + regs::cmd::DOORBELL, 0xEE);
        }
        match self.rtl.run_commands(1, 10_000) {
            Ok(n) if mailbox != UNMAPPED => {
                self.span = (self.span.0.min(n), self.span.1.max(n));
            }
            Ok(_) => {}
            Err(e) => self.fail(&e, &c),
        }
        if let Err(e) = self.nic.apply(0, &Decision::Command, &mut self.mem) {
            self.fail(&format!("the model refused the core's command decision: {e}"), &c);
        }
        if let Some(f) = self.nic.check_failure() {
            self.fail(&format!("the model's checks: {f}"), &c);
        }
        let st = regs::cmd::BASE + regs::cmd::STATUS;
        let (a, b) = (self.rtl.mmio_read(st), self.nic.mmio_read(st));
        if a != b {
            self.fail(&format!("STATUS: core {a:#x}, model {b:#x}"), &c);
        }
        let status = Status::from_u8(b as u8);
        self.seen.insert((opcode, status as u8));
        if opcode == op::MODIFY_QP && status == Status::Ok {
            let qpn = QpAttrsRepr::from_bytes(input).map_or(0, |a| a.qpn);
            self.states.extend(self.nic.qp_state(qpn).map(|q| q.state as u8));
        }
        if mailbox == UNMAPPED {
            if status != Status::BadMailbox {
                self.fail("a mailbox at an unmapped address did not fail", &c);
            }
            return (status, Vec::new());
        }
        let mut ra = vec![0u8; MAILBOX_LEN];
        let mut rb = vec![0u8; MAILBOX_LEN];
        self.rtl.mem.read(self.mb, &mut ra).expect("mapped");
        self.mem.read(self.mb, &mut rb).expect("mapped");
        if ra != rb {
            let hdr = |m: &[u8]| CmdOutHeaderRepr::from_bytes(&m[OUT_HDR..]).expect("fits");
            self.fail(
                &format!(
                    "mailbox output differs:\ncore  {:?} {}\nmodel {:?} {}",
                    hdr(&ra),
                    hex(&ra[OUT..]),
                    hdr(&rb),
                    hex(&rb[OUT..])
                ),
                &c,
            );
        }
        self.check_tables(opcode, input, status, &rb[OUT..], &c);
        if self.n.is_multiple_of(32) {
            self.check_registers(&c);
        }
        (status, rb[OUT..].to_vec())
    }

    /// The entry a command made, and the packed context of the QP it named, read from the core's ports.
    fn check_tables(&mut self, opcode: u16, input: &[u8], status: Status, out: &[u8], c: &Issued) {
        let id_in = ObjInRepr::from_bytes(input).map_or(0, |o| o.id);
        let id_out = ObjOutRepr::from_bytes(out).map_or(0, |o| o.id);
        let ok = status == Status::Ok;
        match opcode {
            op::REG_MR if ok => {
                let r = RegMrRepr::from_bytes(input).expect("input");
                let want = pack(
                    &qpc::mr_entry(&self.profile),
                    &[
                        ("valid", 1),
                        ("variant", u128::from(id_out & 0xFF)),
                        ("pdn", r.pdn.into()),
                        ("access", r.access.into()),
                        ("iova", r.iova.into()),
                        ("length", r.length.into()),
                    ],
                );
                let got = self.port_read("mr_index", u64::from(id_out >> 8), "mr");
                if !same_record(&got, &want) {
                    self.fail(&format!("MR entry: core {}, expected {}", hex(&got), hex(&want)), c);
                }
            }
            op::CREATE_CQ | op::CREATE_EQ if ok => {
                let r = CreateCqRepr::from_bytes(input).expect("input");
                let want = pack(
                    &qpc::cq_entry(),
                    &[("valid", 1), ("iova", r.ring_iova.into()), ("log_size", r.log_size.into())],
                );
                let got = if opcode == op::CREATE_CQ {
                    self.port_read("cq_index", u64::from(id_out), "cq")
                } else {
                    self.rtl.peek_bytes("eq")
                };
                if !same_record(&got, &want) {
                    self.fail(&format!("CQ/EQ entry: core {}, expected {}", hex(&got), hex(&want)), c);
                }
            }
            op::SET_GID if ok => {
                let r = SetGidRepr::from_bytes(input).expect("input");
                let got = self.port_read("gid_index", u64::from(r.index), "gid");
                let valid = self.rtl.peek("gid_valid");
                let mut want = r.gid_lo.to_le_bytes().to_vec();
                want.extend_from_slice(&r.gid_hi.to_le_bytes());
                if valid != u64::from(r.valid != 0) || (r.valid != 0 && got != want) {
                    self.fail(&format!("GID entry {}: core {} valid {valid}", r.index, hex(&got)), c);
                }
            }
            op::SET_PORT if ok => {
                let r = SetPortRepr::from_bytes(input).expect("input");
                let mac = self.rtl.peek("mac");
                if mac != r.mac & 0xFFFF_FFFF_FFFF {
                    self.fail(&format!("MAC: core {mac:#x}"), c);
                }
            }
            _ => {}
        }
        let named = match opcode {
            op::CREATE_QP if ok => Some(id_out),
            op::MODIFY_QP | op::QUERY_QP | op::DESTROY_QP => Some(id_in),
            _ => None,
        };
        let other =
            if self.qps.is_empty() { None } else { Some(self.qps[self.rng.below(self.qps.len() as u64) as usize]) };
        for qpn in named.into_iter().chain(other) {
            self.check_qp(qpn, c);
        }
    }

    /// QP `qpn`'s valid bit and packed context: the core's ports against the model's state.
    fn check_qp(&mut self, qpn: u32, c: &Issued) {
        if qpn >= self.profile.max_qp {
            return;
        }
        let sim = self.rtl.sim();
        let port = sim.port("qp_index");
        sim.set(port, u64::from(qpn));
        self.rtl.step();
        let valid = self.rtl.peek("qp_valid") == 1;
        let got = [self.rtl.peek_bytes("qp_attr"), self.rtl.peek_bytes("qp_req"), self.rtl.peek_bytes("qp_resp")];
        let Some(q) = self.nic.qp_state(qpn) else {
            if valid {
                self.fail(&format!("QP {qpn:#x} is valid in the core, not in the model"), c);
            }
            return;
        };
        if !valid {
            self.fail(&format!("QP {qpn:#x} is valid in the model, not in the core"), c);
        }
        let packed = context::pack(q, &self.ctx, 0).unwrap_or_else(|e| self.fail(&format!("packing: {e}"), c));
        for (name, (got, want)) in
            ["qp_attr", "qp_req", "qp_resp"].iter().zip(got.iter().zip([&packed.attr, &packed.req, &packed.resp]))
        {
            let want = bytes_of(want);
            if !same_record(got, &want) {
                let l = match *name {
                    "qp_attr" => &self.ctx.attr,
                    "qp_req" => &self.ctx.req,
                    _ => &self.ctx.resp,
                };
                self.fail(&format!("QP {qpn:#x} {name}: {}", field_diff(l, got, &want)), c);
            }
        }
    }

    fn port_read(&mut self, index: &str, v: u64, out: &str) -> Vec<u8> {
        let sim = self.rtl.sim();
        let p = sim.port(index);
        sim.set(p, v);
        self.rtl.step();
        self.rtl.peek_bytes(out)
    }

    /// Every register of every block but the free-running time, both sides.
    fn check_registers(&mut self, c: &Issued) {
        let mut offs: Vec<u32> = Vec::new();
        for base in [id::BASE, regs::cmd::BASE, dcqcn::BASE, doorbell::BASE] {
            offs.extend((0..0x60).step_by(4).map(|o| base + o).filter(|&o| o != id::TIME_NS_LO && o != id::TIME_NS_HI));
        }
        offs.extend([counters::BASE + block::TYPE, counters::BASE + counters::COUNT]);
        for k in Counter::ALL {
            offs.extend([k.offset(), k.offset() + 4]);
        }
        for off in offs {
            let (a, b) = (self.rtl.mmio_read(off), self.nic.mmio_read(off));
            if a != b {
                self.fail(&format!("register {off:#x}: core {a:#x}, model {b:#x}"), c);
            }
        }
    }

    /// An id from `list` mostly, else a number near the table's size or any number.
    fn pick(&mut self, list: &[u32], max: u32) -> u32 {
        let r = self.rng.below(100);
        if r < 80 && !list.is_empty() {
            list[self.rng.below(list.len() as u64) as usize]
        } else if r < 95 {
            self.rng.below(u64::from(max) + 3) as u32
        } else {
            self.rng.next_u64() as u32
        }
    }

    fn small(&mut self, good: u64, bad: u64) -> u8 {
        if self.rng.chance(0.9) {
            self.rng.below(good + 1) as u8
        } else {
            self.rng.below(bad + 1) as u8
        }
    }

    /// One random command, and the bookkeeping of what it made or removed.
    fn random_command(&mut self) {
        let p = self.profile;
        let k = self.rng.below(100);
        let (opcode, input): (u16, Vec<u8>) = match k {
            0..=2 => (op::SET_PORT, SetPortRepr { mac: self.rng.next_u64() }.to_bytes().to_vec()),
            3..=5 => {
                let g = SetGidRepr {
                    index: if self.rng.chance(0.7) { self.rng.below(4) as u8 } else { 16 + self.rng.below(24) as u8 },
                    valid: self.small(1, 255),
                    gid_hi: self.rng.next_u64(),
                    gid_lo: self.rng.next_u64(),
                };
                (op::SET_GID, g.to_bytes().to_vec())
            }
            6..=11 => (op::ALLOC_PD, Vec::new()),
            12..=14 => {
                let id = self.pick(&self.pds.clone(), p.max_pd);
                (op::DEALLOC_PD, ObjInRepr { id }.to_bytes().to_vec())
            }
            15..=24 => {
                let pdn = self.pick(&self.pds.clone(), p.max_pd);
                let iova =
                    if self.rng.chance(0.05) { u64::MAX - self.rng.below(1 << 20) } else { self.rng.next_u64() >> 8 };
                let length = match self.rng.below(20) {
                    0 => 1 << 48,
                    1 => (1 << 48) + 1,
                    2 => self.rng.next_u64(),
                    _ => self.rng.below(1 << 32),
                };
                let access = if self.rng.chance(0.9) { self.rng.below(16) } else { self.rng.below(64) } as u32;
                (op::REG_MR, RegMrRepr { pdn, access, iova, length }.to_bytes().to_vec())
            }
            25..=29 => {
                let mut id = self.pick(&self.keys.clone(), p.max_mr << 8);
                if self.rng.chance(0.1) {
                    id ^= 1; // a stale or future variant
                }
                (op::DEREG_MR, ObjInRepr { id }.to_bytes().to_vec())
            }
            30..=36 => {
                let opcode = if k == 36 { op::CREATE_EQ } else { op::CREATE_CQ };
                let log_size = self.small(u64::from(p.max_log_ring), 20);
                let ring_iova = if self.rng.chance(0.05) { 0 } else { self.rng.next_u64() | 1 };
                (opcode, CreateCqRepr { log_size, ring_iova }.to_bytes().to_vec())
            }
            37..=40 => {
                let id = self.pick(&self.cqs.clone(), p.max_cq);
                (op::DESTROY_CQ, ObjInRepr { id }.to_bytes().to_vec())
            }
            41..=52 => (op::CREATE_QP, self.create_qp().to_vec()),
            53..=84 => (op::MODIFY_QP, self.modify_qp().to_vec()),
            85..=90 => {
                let id = self.pick(&self.qps.clone(), p.max_qp);
                (op::QUERY_QP, ObjInRepr { id }.to_bytes().to_vec())
            }
            91..=95 => {
                let id = self.pick(&self.qps.clone(), p.max_qp);
                (op::DESTROY_QP, ObjInRepr { id }.to_bytes().to_vec())
            }
            96..=97 => {
                // Doorbells between commands: no command of their own.
                for _ in 0..1 + self.rng.below(4) {
                    self.random_doorbell();
                }
                return;
            }
            _ => (0x60 + self.rng.below(0x100) as u16, Vec::new()),
        };
        let (status, out) = self.run(opcode, &input);
        self.note(opcode, &input, status, &out);
    }

    /// A QP, CQ or EQ doorbell (to objects that exist and ones that do not), on both sides; then the
    /// entry it names compared.
    fn random_doorbell(&mut self) {
        use wire::contract::regs::doorbell as db;
        let p = self.profile;
        let val = if self.rng.chance(0.8) { self.rng.below(1 << 16) as u32 } else { self.rng.next_u64() as u32 };
        let k = self.rng.below(10);
        let (off, what) = match k {
            0..=4 => {
                let qpn = self.pick(&self.qps.clone(), p.max_qp) % p.max_qp.max(1);
                let reg = if self.rng.chance(0.5) { db::QP_SQ_PI } else { db::QP_RQ_PI };
                (db::qp(qpn, reg), (Some(qpn), None))
            }
            5..=7 => {
                let cqn = self.pick(&self.cqs.clone(), p.max_cq) % p.max_cq;
                let reg = if self.rng.chance(0.5) { db::CQ_CI } else { db::CQ_ARM };
                let val = if reg == db::CQ_ARM { self.rng.below(4) as u32 } else { val };
                (db::cq(cqn, reg), (None, Some((cqn, val))))
            }
            _ => (db::EQ_DB + if self.rng.chance(0.5) { db::EQ_CI } else { db::EQ_ARM }, (None, None)),
        };
        let val = what.1.map_or(val, |(_, v)| v);
        self.rtl.mmio_write(off, val);
        self.nic.mmio_write(off, val);
        self.doorbells += 1;
        let c = Issued { opcode: 0, input: off.to_be_bytes().to_vec(), mailbox: 0 };
        match what {
            (Some(qpn), _) => self.check_qp(qpn, &c),
            (_, Some((cqn, _))) => {
                let got = self.port_read("cq_index", u64::from(cqn), "cq");
                let want = self.nic.cq_state(cqn).map_or_else(|| vec![0; got.len()], cq_record);
                if !same_record(&got, &want) {
                    self.fail(&format!("CQ {cqn} after a doorbell: core {}, model {}", hex(&got), hex(&want)), &c);
                }
            }
            _ => {
                let got = self.rtl.peek_bytes("eq");
                let want = self.nic.eq_state().map_or_else(
                    || vec![0; got.len()],
                    |e| {
                        pack(
                            &qpc::cq_entry(),
                            &[
                                ("valid", 1),
                                ("iova", e.iova.into()),
                                ("log_size", e.log_size.into()),
                                ("pi", e.pi.into()),
                                ("ci", e.ci.into()),
                                ("armed", u128::from(e.armed)),
                            ],
                        )
                    },
                );
                if !same_record(&got, &want) {
                    self.fail(&format!("the EQ after a doorbell: core {}, model {}", hex(&got), hex(&want)), &c);
                }
            }
        }
    }

    fn note(&mut self, opcode: u16, input: &[u8], status: Status, out: &[u8]) {
        if status != Status::Ok {
            return;
        }
        let id_in = ObjInRepr::from_bytes(input).map_or(0, |o| o.id);
        let id_out = ObjOutRepr::from_bytes(out).map_or(0, |o| o.id);
        let drop = |l: &mut Vec<u32>, id| l.retain(|&x| x != id);
        match opcode {
            op::ALLOC_PD => self.pds.push(id_out),
            op::DEALLOC_PD => drop(&mut self.pds, id_in),
            op::REG_MR => self.keys.push(id_out),
            op::DEREG_MR => drop(&mut self.keys, id_in),
            op::CREATE_CQ => self.cqs.push(id_out),
            op::DESTROY_CQ => drop(&mut self.cqs, id_in),
            op::CREATE_QP => self.qps.push(id_out),
            op::DESTROY_QP => drop(&mut self.qps, id_in),
            _ => {}
        }
    }

    fn create_qp(&mut self) -> [u8; CreateQpRepr::LEN] {
        let p = self.profile;
        let pdn = self.pick(&self.pds.clone(), p.max_pd);
        let send_cqn = self.pick(&self.cqs.clone(), p.max_cq);
        let recv_cqn = if self.rng.chance(0.5) { send_cqn } else { self.pick(&self.cqs.clone(), p.max_cq) };
        let qp_type = match self.rng.below(20) {
            0..=15 => QpType::Rc as u8,
            16..=18 => QpType::RawPacket as u8,
            _ => self.rng.below(256) as u8,
        };
        let iova = |r: &mut Rng| if r.chance(0.03) { 0 } else { (r.next_u64() >> 4) | 0x1000 };
        CreateQpRepr {
            pdn,
            send_cqn,
            recv_cqn,
            sq_log_size: self.small(u64::from(p.max_log_ring), 16),
            sq_log_stride: 6 + self.small(4, 6),
            rq_log_size: self.small(u64::from(p.max_log_ring), 16),
            rq_log_stride: 5 + self.small(5, 7),
            sq_iova: iova(&mut self.rng),
            rq_iova: iova(&mut self.rng),
            sq_sig_all: self.small(1, 9),
            qp_type,
        }
        .to_bytes()
    }

    /// A MODIFY_QP: mostly a transition the rules allow from the QP's state, with its required attributes
    /// and some optional ones; sometimes a bit too many or too few, a value out of range, a wrong state.
    fn modify_qp(&mut self) -> [u8; QpAttrsRepr::LEN] {
        let p = self.profile;
        let qpn = self.pick(&self.qps.clone(), p.max_qp);
        let cur = self.nic.qp_state(qpn).map_or(QpState::Reset, |q| q.state);
        let states =
            [QpState::Reset, QpState::Init, QpState::Rtr, QpState::Rts, QpState::Sqd, QpState::Sqe, QpState::Err];
        let legal: Vec<QpState> = states.iter().copied().filter(|&n| rc_transition(cur, n).is_some()).collect();
        let (next, mut mask) = if self.rng.chance(0.8) && !legal.is_empty() {
            // Forward moves more often than resets and errors, so QPs reach RTS and SQD.
            let fwd: Vec<QpState> =
                legal.iter().copied().filter(|&n| n != QpState::Reset && n != QpState::Err).collect();
            let n = if !fwd.is_empty() && self.rng.chance(0.85) {
                fwd[self.rng.below(fwd.len() as u64) as usize]
            } else {
                legal[self.rng.below(legal.len() as u64) as usize]
            };
            let t = rc_transition(cur, n).expect("legal");
            let opt = t.optional & self.rng.next_u64() as u32;
            (n as u8, t.required | opt | attr::STATE)
        } else {
            (self.rng.below(8) as u8, self.rng.next_u64() as u32 & 0x1F_FFFF)
        };
        if self.rng.chance(0.05) {
            mask ^= 1 << self.rng.below(21);
        }
        if self.rng.chance(0.05) {
            mask &= !attr::STATE;
        }
        let r = &mut self.rng;
        let v = |r: &mut Rng, good: u64, bad: u64| if r.chance(0.95) { r.below(good + 1) } else { r.below(bad + 1) };
        let a = QpAttrsRepr {
            qpn,
            attr_mask: mask,
            qp_state: next,
            cur_qp_state: if r.chance(0.9) { cur as u8 } else { r.below(8) as u8 },
            path_mtu: if r.chance(0.95) { 1 + r.below(5) as u8 } else { r.below(8) as u8 },
            timeout: v(r, 31, 40) as u8,
            retry_cnt: v(r, 7, 10) as u8,
            rnr_retry: v(r, 7, 10) as u8,
            min_rnr_timer: v(r, 31, 40) as u8,
            max_rd_atomic: v(r, u64::from(p.max_qp_init_rd_atom), 20) as u8,
            max_dest_rd_atomic: v(r, u64::from(p.max_qp_rd_atom), 20) as u8,
            sgid_index: v(r, 2, 20) as u8,
            hop_limit: r.next_u64() as u8,
            traffic_class: r.next_u64() as u8,
            qp_access_flags: v(r, 15, 63) as u32,
            dest_qp_num: if r.chance(0.95) { r.below(1 << 24) as u32 } else { r.next_u64() as u32 },
            rq_psn: r.next_u64() as u32,
            sq_psn: r.next_u64() as u32,
            flow_label: if r.chance(0.5) { 0 } else { r.next_u64() as u32 },
            dmac: r.next_u64() & 0xFFFF_FFFF_FFFF,
            vlan: r.next_u64() as u16,
            dgid_hi: r.next_u64(),
            dgid_lo: r.next_u64(),
            pkey_index: v(r, 0, 3) as u16,
            port_num: v(r, 1, 3).max(u64::from(r.chance(0.97))) as u8,
            sq_draining: r.next_u64() as u8,
            vlan_tagged: r.below(3) as u8,
        };
        a.to_bytes()
    }
}

/// A model CQ as the core's CQ table holds it.
fn cq_record(q: &model::nic::cq::Cq) -> Vec<u8> {
    bytes_of(&context::pack_cq(q).expect("the CQ packs"))
}

/// The fields of layout `l` that differ between two packed records.
fn field_diff(l: &Layout, got: &[u8], want: &[u8]) -> String {
    let bit = |b: &[u8], i: u32| b.get(i as usize / 8).is_some_and(|x| x >> (i % 8) & 1 == 1);
    let val = |b: &[u8], at: u32, w: u32| (0..w).fold(0u128, |v, i| v | u128::from(bit(b, at + i)) << i);
    let mut at = 0;
    let mut out = Vec::new();
    for f in &l.fields {
        let (g, w) = (val(got, at, f.width.min(128)), val(want, at, f.width.min(128)));
        if g != w {
            out.push(format!("{}: core {g:#x}, model {w:#x}", f.name));
        }
        at += f.width;
    }
    if out.is_empty() {
        "bits past the record differ".into()
    } else {
        out.join("; ")
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A few objects to start from, then random commands.
fn soak(qps: u32, commands: usize, bubbles: f64) {
    let seed = seed() ^ u64::from(qps);
    let mut t = Pair::new(qps, seed);
    if bubbles > 0.0 {
        t.rtl.set_bubbles(seed, bubbles);
    }
    for index in 0..2 {
        let g = SetGidRepr { index, valid: 1, gid_hi: 0, gid_lo: 0xFFFF_0A00_0001 + u64::from(index) };
        t.run(op::SET_GID, &g.to_bytes());
    }
    for (opcode, input) in [
        (op::ALLOC_PD, Vec::new()),
        (op::CREATE_CQ, CreateCqRepr { log_size: 4, ring_iova: 0x10_0000 }.to_bytes().to_vec()),
        (op::CREATE_CQ, CreateCqRepr { log_size: 6, ring_iova: 0x20_0000 }.to_bytes().to_vec()),
    ] {
        let (st, out) = t.run(opcode, &input);
        assert_eq!(st, Status::Ok, "seed {seed}: setting up");
        t.note(opcode, &input, st, &out);
    }
    for _ in 0..commands {
        t.random_command();
    }
    // A full PD table, then one more.
    loop {
        let (st, out) = t.run(op::ALLOC_PD, &[]);
        t.note(op::ALLOC_PD, &[], st, &out);
        if st == Status::NoResources {
            break;
        }
        assert!(t.pds.len() <= t.profile.max_pd as usize, "seed {seed}: more PDs than the table has");
    }
    let last = Issued { opcode: 0, input: Vec::new(), mailbox: t.mb };
    t.check_registers(&last);
    // The stream reached what it is meant to test: each command both done and refused, every refusal kind,
    // and QPs in every state but SQE.
    use Status::*;
    let want: &[(u16, &[Status])] = &[
        (op::SET_GID, &[Ok, BadParam]),
        (op::ALLOC_PD, &[Ok, NoResources]),
        (op::DEALLOC_PD, &[Ok, BadResource, Busy]),
        (op::REG_MR, &[Ok, BadResource, BadParam]),
        (op::DEREG_MR, &[Ok, BadResource]),
        (op::CREATE_CQ, &[Ok, BadParam]),
        (op::CREATE_EQ, &[Ok, BadParam, BadState]),
        (op::DESTROY_CQ, &[Ok, BadResource, Busy]),
        (op::CREATE_QP, &[Ok, BadParam, BadResource]),
        (op::MODIFY_QP, &[Ok, BadParam, BadState, BadResource]),
        (op::QUERY_QP, &[Ok, BadResource]),
        (op::DESTROY_QP, &[Ok, BadResource, BadState]),
    ];
    let missing: Vec<String> = want
        .iter()
        .flat_map(|(o, sts)| sts.iter().map(move |s| (*o, *s)))
        .filter(|(o, s)| !t.seen.contains(&(*o, *s as u8)))
        .map(|(o, s)| format!("{o:#x} {s:?}"))
        .collect();
    assert!(missing.is_empty(), "seed {seed}: no command ended so: {missing:?}");
    assert!(t.seen.iter().any(|&(_, s)| s == BadOp as u8) && t.seen.iter().any(|&(_, s)| s == BadMailbox as u8));
    assert_eq!(t.states.iter().copied().collect::<Vec<_>>(), [0, 1, 2, 3, 4, 6], "seed {seed}: states reached");
    // The lockstep follower (sim::lockstep) saw the same run as a trace, and agrees.
    let r = t.rtl.lockstep_report().expect("lockstep on");
    assert_eq!((r.mismatches, &r.first), (0, &None), "seed {seed}: lockstep");
    assert!(r.events > 4 * t.n, "seed {seed}: {} decisions followed for {} commands", r.events, t.n);
    assert!(t.doorbells > 20, "seed {seed}: {} doorbells", t.doorbells);
    let ignored = t.nic.counter(Counter::cmd_doorbells_ignored);
    assert!(ignored > 0, "seed {seed}: the stream rang no doorbell twice");
    eprintln!(
        "{qps}-QP core: {} commands, {} cycles ({}..{} a command from its doorbell, DMA latency {}), {ignored} \
         doorbells ignored, {} QP/CQ/EQ doorbells, {} decisions in lockstep (seed {seed})",
        t.n,
        t.rtl.cycles(),
        t.span.0,
        t.span.1,
        t.rtl.dma_latency,
        t.doorbells,
        r.events
    );
}

#[test]
fn commands_match_the_model_with_16_qps() {
    soak(16, 1500, 0.0);
}

/// With the host side stalling a quarter of the cycles (completions, read requests, write beats).
#[test]
fn commands_match_the_model_with_1024_qps() {
    soak(1024, 1000, 0.25);
}

/// The register file's fixed registers are the contract's (a check on the test's own sweep as much as the
/// core: the sweep covers every block header).
#[test]
fn block_headers_chain() {
    let mut c = CoreSim::new(16, Width::W8);
    let mut off = 0;
    let mut types = Vec::new();
    loop {
        types.push(c.mmio_read(off + block::TYPE));
        assert_eq!(c.mmio_read(off + block::VERSION), regs::VERSION);
        off = c.mmio_read(off + block::NEXT);
        if off == 0 {
            break;
        }
    }
    use regs::block_type::*;
    assert_eq!(types, [ID, CMD, COUNTERS, DCQCN, DOORBELL]);
    assert_eq!(c.mmio_read(Dcqcn::CNP_DSCP.offset()), Dcqcn::CNP_DSCP.param().default);
    assert_eq!(c.mmio_read(id::MAX_QP), 16);
}

/// A small RC QP of PD `pdn` on CQ 1.
fn small_qp(pdn: u32) -> CreateQpRepr {
    CreateQpRepr {
        pdn,
        send_cqn: 1,
        recv_cqn: 1,
        sq_log_size: 4,
        sq_log_stride: 6,
        rq_log_size: 4,
        rq_log_stride: 5,
        sq_iova: 0x20_0000,
        rq_iova: 0x30_0000,
        sq_sig_all: 0,
        qp_type: QpType::Rc as u8,
    }
}

/// Runs one command on the core alone; its status.
fn command_alone(c: &mut CoreSim, mb: u64, opcode: u16, input: &[u8]) -> u8 {
    let mut m = vec![0u8; MAILBOX_LEN];
    CmdHeaderRepr { opcode }.write_to(&mut m).expect("fits");
    m[IN..IN + input.len()].copy_from_slice(input);
    c.mem.write(mb, &m).expect("mapped");
    c.mmio_write(regs::cmd::BASE + regs::cmd::MAILBOX_LO, mb as u32);
    c.mmio_write(regs::cmd::BASE + regs::cmd::MAILBOX_HI, (mb >> 32) as u32);
    c.mmio_write(regs::cmd::BASE + regs::cmd::DOORBELL, 1);
    c.run_commands(1, 10_000).expect("completes");
    c.mmio_read(regs::cmd::BASE + regs::cmd::STATUS) as u8
}

/// A command's effect on the tables and its completion are one clock edge: the engines' read port shows a
/// new QP valid only from the cycle after the completion, never while the command is still busy.
#[test]
fn a_command_takes_effect_as_it_completes() {
    let mut c = CoreSim::new(16, Width::W8);
    let mb = c.mem.alloc(MAILBOX_LEN);
    assert_eq!(command_alone(&mut c, mb, op::ALLOC_PD, &[]), 0);
    let cq = CreateCqRepr { log_size: 4, ring_iova: 0x10_0000 }.to_bytes();
    assert_eq!(command_alone(&mut c, mb, op::CREATE_CQ, &cq), 0);
    let qp = small_qp(1);
    let mut m = vec![0u8; MAILBOX_LEN];
    CmdHeaderRepr { opcode: op::CREATE_QP }.write_to(&mut m).expect("fits");
    m[IN..IN + CreateQpRepr::LEN].copy_from_slice(&qp.to_bytes());
    c.mem.write(mb, &m).expect("mapped");
    let p = c.sim().port("qp_index");
    c.sim().set(p, 2);
    for (off, v) in
        [(regs::cmd::MAILBOX_LO, mb as u32), (regs::cmd::MAILBOX_HI, (mb >> 32) as u32), (regs::cmd::DOORBELL, 2)]
    {
        c.mmio_write(regs::cmd::BASE + off, v);
    }
    let before = c.commands;
    let mut busy_cycles = 0;
    while c.commands == before {
        assert_eq!(c.peek("qp_valid"), 0, "QP 2 valid while its CREATE_QP is still running");
        c.step();
        busy_cycles += 1;
        assert!(busy_cycles < 10_000, "CREATE_QP never completed");
    }
    assert_eq!(c.peek("qp_valid"), 0, "the read port registers: one cycle more");
    c.step();
    assert_eq!(c.peek("qp_valid"), 1, "QP 2 valid from the cycle after its completion");
    assert!(busy_cycles as u64 > c.dma_latency, "{busy_cycles} cycles: the mailbox round trip is in them");
}

/// "Still in use" looks at every entry, the last ones too: a PD named only by the MR in the table's last
/// slot, or by the QP in its last, is busy, and so is a CQ named only by that QP.
#[test]
fn the_last_entries_count_as_references() {
    let mut c = CoreSim::new(16, Width::W8);
    let p = hdl::core::info(16, Width::W8).profile;
    let mb = c.mem.alloc(MAILBOX_LEN);
    let ok = Status::Ok as u8;
    let id = |n: u32| ObjInRepr { id: n }.to_bytes();
    assert_eq!(command_alone(&mut c, mb, op::ALLOC_PD, &[]), ok);
    let mr = RegMrRepr { pdn: 1, access: 0, iova: 0x1000, length: 64 }.to_bytes();
    for _ in 1..p.max_mr {
        assert_eq!(command_alone(&mut c, mb, op::REG_MR, &mr), ok);
    }
    assert_eq!(command_alone(&mut c, mb, op::REG_MR, &mr), Status::NoResources as u8, "the MR table is full");
    // Keys are index << 8 | variant, each slot at its first variant.
    for i in 1..p.max_mr - 1 {
        assert_eq!(command_alone(&mut c, mb, op::DEREG_MR, &id((i << 8) | 1)), ok);
    }
    assert_eq!(command_alone(&mut c, mb, op::DEALLOC_PD, &id(1)), Status::Busy as u8, "the last MR names it");
    assert_eq!(command_alone(&mut c, mb, op::DEREG_MR, &id(((p.max_mr - 1) << 8) | 1)), ok);
    assert_eq!(command_alone(&mut c, mb, op::ALLOC_PD, &[]), ok);
    assert_eq!(
        command_alone(&mut c, mb, op::CREATE_CQ, &CreateCqRepr { log_size: 4, ring_iova: 0x10_0000 }.to_bytes()),
        ok
    );
    let qp = small_qp(2);
    for _ in 2..p.max_qp {
        assert_eq!(command_alone(&mut c, mb, op::CREATE_QP, &qp.to_bytes()), ok);
    }
    for q in 2..p.max_qp - 1 {
        assert_eq!(command_alone(&mut c, mb, op::DESTROY_QP, &id(q)), ok);
    }
    assert_eq!(command_alone(&mut c, mb, op::DEALLOC_PD, &id(2)), Status::Busy as u8, "the last QP names it");
    assert_eq!(command_alone(&mut c, mb, op::DESTROY_CQ, &id(1)), Status::Busy as u8, "the last QP's CQ");
    assert_eq!(command_alone(&mut c, mb, op::DESTROY_QP, &id(p.max_qp - 1)), ok);
    assert_eq!(command_alone(&mut c, mb, op::DEALLOC_PD, &id(2)), ok);
    assert_eq!(command_alone(&mut c, mb, op::DESTROY_CQ, &id(1)), ok);
    assert_eq!(command_alone(&mut c, mb, op::DEALLOC_PD, &id(1)), ok, "no MR names the first PD now");
}
