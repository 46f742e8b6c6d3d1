//! The responder's transmit side in RTL (`hdl::engine::resp::tx::RespTx`, with `Owed`, `AckSlot`, `ReadStep`
//! and `TxHeaders`) against the model's `resp::next_response`, cycle by cycle, over the 16 QPs of the
//! engine profile.
//!
//! The test plays the rest of the core. As the dispatch, it changes a QP's responder in the model (a
//! request acknowledged, a sequence or RNR NAK, a READ of any length, an atomic, a fatal NAK of any code, or
//! nothing) and writes the packed `qp_resp` back through the write-back port, in cycles the block does not
//! hold the context port. As the context RAMs, it answers the port a cycle after it is asked (`qp_attr`,
//! `qp_resp`, the QP's validity, the ring item of the slot asked for) and the GID table at once. As the
//! READ payload's stream, it starts reads and answers them after a random delay, some failing; as the TX
//! pipeline, it takes records with bubbles; the DMA may be busy and write beats still out, at random. QPs
//! may be raw packet QPs, flushing, without a source GID, or destroyed with responses owed.
//!
//! The model follows each decision (`decided`, QP `tx_qpn`): it must be legal (an RC QP that owes, not
//! flushing, its source GID set), and then `next_response` must do what the RTL did: the same `qp_resp`
//! and ring items after it, bit for bit; a READ response's payload read at the model's address and length;
//! `nil` exactly when the read failed, `err` for a fatal NAK, `acked` for an ACK or NAK the QP survives;
//! and the TX record the TX pipeline takes has the headers, AETH, AtomicAckETH and payload length of the
//! model's frame. At quiet points the block must go idle with no sendable QP owing anything.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test resp_tx`.

use hdl::engine::resp::queue::slot_bits;
use hdl::rx::meta::Meta;
use hdl::top::Top;
use hdl::Width;
use model::nic::context::pack;
use model::nic::headers::headers;
use model::nic::qp::Qp;
use model::nic::resp::{
    next_response, queue_atomic, queue_fatal_nak, queue_read, queue_rnr_nak, queue_seq_nak, reack, sendable, Next,
};
use model::rng::Rng;
use sim::frames::{meta_of, HEADER_FIELDS};
use sim::record::diff;
use sim::responder::{be, bytes_of, random_qp};
use sim::Sim;
use std::collections::HashMap;
use wire::contract::profile::Profile;
use wire::contract::qpc::{qp_context, QpContext};
use wire::contract::verbs::QpType;
use wire::ext::{AtomicAckEthRepr, RethRepr};
use wire::ipv6::gid_from_ipv4;
use wire::{Opcode, Position};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x4E5B_7E57)
}

/// The GID table's entries: three set (IPv4-mapped and not), one unset.
const GIDS: usize = 4;

/// A QP as the dispatch leaves it: random responder state (`random_qp`), a random address vector, mostly RC,
/// nothing owed yet.
fn fresh(rng: &mut Rng, p: &Profile, qpn: u32) -> Qp {
    let mut q = random_qp(rng, p);
    q.qpn = qpn;
    q.qp_type = if rng.chance(0.05) { QpType::RawPacket } else { QpType::Rc };
    q.resp.out.clear();
    q.resp.ack = None;
    q.resp.fatal = false;
    q.resp.item_head = rng.next_u64() as u8;
    let a = &mut q.attrs;
    a.sgid_index = rng.below(GIDS as u64) as u8;
    a.dgid = gid_from_ipv4((rng.next_u64() as u32).to_be_bytes());
    if rng.chance(0.3) {
        rng.fill(&mut a.dgid);
    }
    rng.fill(&mut a.dmac);
    a.dest_qpn = rng.next_u64() as u32 & 0xFF_FFFF;
    a.udp_sport = rng.next_u64() as u16;
    a.hop_limit = rng.next_u64() as u8;
    a.traffic_class = rng.next_u64() as u8;
    q
}

/// What the dispatch does to a QP's responder before it writes `qp_resp` back: requests acknowledged (ePSN
/// and the MSN moved on, the coalesced ACK for the last), a sequence or RNR NAK, a READ (any length, the
/// path MTU's multiples among them), an atomic, a fatal NAK, or nothing. A fatal NAK always fits; anything
/// else only with a place left for one. The name of what it did.
fn request(rng: &mut Rng, q: &mut Qp, depth: usize) -> &'static str {
    if q.resp.fatal {
        return "nothing new";
    }
    let room = q.resp.room(1, depth - 1);
    let epsn = q.resp.epsn;
    match rng.below(12) {
        0..=2 => {
            let n = 1 + rng.below(4) as u32;
            q.resp.epsn = epsn.add(n);
            q.resp.msn = (q.resp.msn + rng.below(u64::from(n) + 1) as u32) & 0xFF_FFFF;
            reack(q);
            "requests acknowledged"
        }
        3 if room => {
            queue_seq_nak(q);
            "sequence NAK queued"
        }
        4 if room => {
            queue_rnr_nak(q);
            "RNR NAK queued"
        }
        5..=7 if room => {
            let pmtu = q.attrs.path_mtu();
            let dma_len = match rng.below(5) {
                0 => 0,
                1 => pmtu * (1 + rng.below(3) as u32),
                _ => rng.below(4 * u64::from(pmtu)) as u32,
            };
            let reth = RethRepr { va: rng.next_u64(), rkey: rng.next_u64() as u32, dma_len };
            queue_read(q, epsn, reth, pmtu);
            "READ queued"
        }
        8 if room => {
            queue_atomic(q, epsn, rng.next_u64());
            "atomic queued"
        }
        9 if q.resp.room(1, depth) && rng.chance(0.4) => {
            let syndrome = [0x61, 0x62, 0x63][rng.below(3) as usize];
            queue_fatal_nak(q, syndrome, epsn);
            "fatal NAK queued"
        }
        _ => "nothing new",
    }
}

/// A READ response's payload read the block started: its address and length, whether it fails, and the
/// cycles left until its first completion beat.
struct Read {
    addr: u64,
    len: u64,
    fail: bool,
    wait: u32,
}

/// The block's surroundings: the RTL's view of the context and ring RAMs (what it wrote, what the test
/// wrote as the dispatch), the GID table and the port addresses asked for last cycle.
struct Rig {
    rtl: Sim,
    c: QpContext,
    slots: usize,
    valid: Vec<bool>,
    attr: Vec<Vec<u8>>,
    resp: Vec<Vec<u8>>,
    ring: Vec<Vec<Vec<u8>>>,
    gids: [Option<[u8; 16]>; GIDS],
    mac: [u8; 6],
    asked: (usize, usize),
}

impl Rig {
    fn set(&mut self, n: &str, v: u64) {
        let p = self.rtl.port(n);
        self.rtl.set(p, v);
    }

    fn set_bytes(&mut self, n: &str, v: &[u8]) {
        let p = self.rtl.port(n);
        self.rtl.set_bytes(p, v);
    }

    fn get(&self, n: &str) -> u64 {
        self.rtl.get(self.rtl.port(n))
    }

    fn get_bytes(&self, n: &str) -> Vec<u8> {
        self.rtl.get_bytes(self.rtl.port(n))
    }

    /// QP `q`'s records and ring items written into the RAMs, as the dispatch and the command unit hold them.
    fn write(&mut self, q: &Qp) {
        let packed = pack(q, &self.c, 0).expect("the QP packs");
        let n = q.qpn as usize;
        self.valid[n] = true;
        self.attr[n] = bytes_of(&packed.attr);
        self.resp[n] = bytes_of(&packed.resp);
        for (i, item) in packed.items.iter().enumerate() {
            let s = (usize::from(q.resp.item_head) + i) % self.slots;
            self.ring[n][s] = bytes_of(item);
        }
    }

    /// Whether the RAMs hold QP `q`'s `qp_resp` and ring items as the model packs them: the differences, named.
    fn agrees(&self, q: &Qp) -> Result<(), String> {
        let packed = pack(q, &self.c, 0).expect("the QP packs");
        let n = q.qpn as usize;
        let mut wrong = Vec::new();
        let d = diff(&self.c.resp, &self.resp[n], &bytes_of(&packed.resp));
        if !d.is_empty() {
            wrong.push(format!("qp_resp: {d}"));
        }
        for (i, item) in packed.items.iter().enumerate() {
            let s = (usize::from(q.resp.item_head) + i) % self.slots;
            let d = diff(&self.c.resp_item, &self.ring[n][s], &bytes_of(item));
            if !d.is_empty() {
                wrong.push(format!("item {i} (slot {s}): {d}"));
            }
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join("\n"))
        }
    }

    /// The registered reads of the context port and the ring answer the addresses asked for last cycle.
    fn answer(&mut self) {
        let (n, s) = self.asked;
        let in_range = n < self.valid.len();
        self.set("qp_valid", u64::from(in_range && self.valid[n]));
        let (attr, resp, item) = if in_range {
            (self.attr[n].clone(), self.resp[n].clone(), self.ring[n][s % self.slots].clone())
        } else {
            (vec![0xA5; 80], vec![0x5A; 48], vec![0x3C; 20])
        };
        self.set_bytes("attr", &attr);
        self.set_bytes("resp", &resp);
        self.set_bytes("item", &item);
    }
}

/// The TX record the model's frame implies for response `r` of QP `q`.
fn record(rig: &Rig, q: &Qp, r: &model::nic::resp::Response) -> Meta {
    let sgid = rig.gids[usize::from(q.attrs.sgid_index)];
    let mut h = headers(rig.mac, sgid, &q.attrs, r.opcode, r.psn, false).expect("a sendable QP has headers");
    h.ext.aeth = r.aeth;
    h.ext.atomic_ack_eth = r.orig.map(|orig| AtomicAckEthRepr { orig });
    let frame = h.emit(&r.payload);
    let pkt = wire::parse(&frame).expect("the model's response is a well-formed frame");
    meta_of(&frame, &pkt)
}

/// The fields of the TX record `got` that differ from the model's `want`: the headers and payload length,
/// the AETH where the opcode carries one, the AtomicAckETH of an atomic ACK.
fn record_diff(got: &Meta, want: &Meta) -> Vec<String> {
    let mut names: Vec<&str> = HEADER_FIELDS.to_vec();
    names.extend(["payload_len", "has_aeth"]);
    if want.get("has_aeth") == 1 {
        names.push("aeth");
    }
    if want.get("opcode") == u128::from(Opcode::ATOMIC_ACKNOWLEDGE.0) {
        names.push("atomic_ack_eth");
    }
    names
        .into_iter()
        .filter(|&f| got.get(f) != want.get(f))
        .map(|f| format!("{f}: RTL {:#x}, model {:#x}", got.get(f), want.get(f)))
        .collect()
}

/// What a response is, for the tally.
fn kind(next: &Next) -> &'static str {
    let r = match next {
        Next::ReadFailed => return "READ payload unreadable",
        Next::Fatal(_) => return "fatal NAK",
        Next::Send(r) => r,
    };
    match (r.opcode, r.aeth.map(|a| a.syndrome >> 5)) {
        (Opcode::ACKNOWLEDGE, Some(0)) => "ACK",
        (Opcode::ACKNOWLEDGE, Some(1)) => "RNR NAK",
        (Opcode::ACKNOWLEDGE, _) => "sequence NAK",
        (Opcode::ATOMIC_ACKNOWLEDGE, _) => "atomic ACK",
        (o, _) => match o.info().map(|i| i.position) {
            Some(Position::First) => "READ response first",
            Some(Position::Middle) => "READ response middle",
            Some(Position::Last) => "READ response last",
            _ => "READ response only",
        },
    }
}

#[test]
fn the_responder_sends_what_the_model_sends() {
    let seed = seed();
    let p = Top::engine_profile();
    let c = qp_context(&p);
    let qps = p.max_qp as usize;
    let depth = p.resp_queue as usize;
    let slots = 1usize << slot_bits(&p);
    let mut rng = Rng::new(seed);
    let mut gids = [None; GIDS];
    for (i, g) in gids.iter_mut().enumerate().take(GIDS - 1) {
        let mut gid = gid_from_ipv4((rng.next_u64() as u32).to_be_bytes());
        if i == 2 {
            rng.fill(&mut gid);
        }
        *g = Some(gid);
    }
    let mut mac = [0u8; 6];
    rng.fill(&mut mac);
    let mut rig = Rig {
        rtl: Sim::new(Top::RespTx, Width::W8),
        c: c.clone(),
        slots,
        valid: vec![false; qps],
        attr: vec![vec![0; 80]; qps],
        resp: vec![vec![0; 48]; qps],
        ring: vec![vec![vec![0; 20]; slots]; qps],
        gids,
        mac,
        asked: (0, 0),
    };
    let mut model: HashMap<u32, Qp> = HashMap::new();
    for n in 0..qps as u32 {
        let q = fresh(&mut rng, &p, n);
        rig.write(&q);
        model.insert(n, q);
    }
    rig.set("mac", be(&mac) as u64);
    rig.set("reset", 1);
    rig.rtl.tick();
    rig.set("reset", 0);
    // How busy the surroundings are this run.
    let (p_wb, p_bubble, p_quiet) = (0.05 + rng.below(30) as f64 / 100.0, rng.below(50) as f64 / 100.0, 0.3);
    let mut tally: HashMap<&str, u32> = HashMap::new();
    let mut read: Option<Read> = None;
    // The record decided and not yet taken by the TX pipeline, with the decision's context.
    let mut owed_record: Option<(Meta, String)> = None;
    let mut decisions = 0u32;
    // A QP whose fatal NAK went, to be created again.
    let mut ended: Option<u32> = None;
    let mut quiet_from: Option<u64> = None;
    for cycle in 0u64.. {
        let ctx = format!("seed {seed} (FERRITE_SEED={seed}), cycle {cycle}");
        assert!(cycle < 3_000_000, "fewer than 40,000 decisions in 3 M cycles: {ctx}");
        // Every 3,000 cycles, a quiet time: nothing new, until the block has sent what it can.
        let quiet = quiet_from.is_some();
        if !quiet && cycle % 3000 == 2999 {
            quiet_from = Some(cycle);
        }
        rig.answer();
        for n in ["wb_we", "hold", "rd_first", "rd_err"] {
            rig.set(n, 0);
        }
        rig.set("wr_quiet", u64::from(!rng.chance(p_quiet)));
        rig.set("rd_can", u64::from(read.is_none() && owed_record.is_none() && !rng.chance(0.1)));
        rig.set("meta_ready", u64::from(!rng.chance(p_bubble)));
        if let Some(r) = read.as_mut() {
            if r.wait == 0 {
                rig.set("rd_first", 1);
                rig.set("rd_err", u64::from(r.fail));
            }
            r.wait = r.wait.saturating_sub(1);
        }
        rig.rtl.eval();
        // The dispatch's write-back, or another holder of the port, while the block does not hold it.
        if rig.get("ctx_busy") == 0 && !quiet {
            if let Some(n) = ended.take() {
                let q = fresh(&mut rng, &p, n);
                rig.write(&q);
                model.insert(n, q);
            } else if rng.chance(p_wb) {
                let n = rng.below(qps as u64) as u32;
                let what = if rig.valid[n as usize] {
                    let q = model.get_mut(&n).expect("a valid QP is the model's");
                    request(&mut rng, q, depth)
                } else {
                    // A QP created again where one was destroyed.
                    model.insert(n, fresh(&mut rng, &p, n));
                    "created"
                };
                *tally.entry(what).or_default() += 1;
                let q = model[&n].clone();
                rig.write(&q);
                rig.set("hold", 1);
                rig.set("wb_we", 1);
                rig.set("wb_qpn", u64::from(n));
                let resp = rig.resp[n as usize].clone();
                rig.set_bytes("wb_resp", &resp);
            } else if rng.chance(0.002) {
                // A QP destroyed, whatever it owes.
                let n = rng.below(qps as u64) as u32;
                if model.remove(&n).is_some() {
                    rig.valid[n as usize] = false;
                    *tally.entry("destroyed").or_default() += 1;
                }
            } else if rng.chance(0.05) {
                rig.set("hold", 1);
            }
        }
        rig.rtl.eval();
        // The GID table answers at once.
        let gi = rig.get("gid_index") as usize;
        let gid = rig.gids.get(gi).copied().flatten();
        rig.set_bytes("gid", &gid.map_or(0, |g| be(&g)).to_le_bytes());
        rig.set("gid_valid", u64::from(gid.is_some()));
        rig.rtl.eval();
        let decided = rig.get("decided") == 1;
        if !decided {
            assert_eq!(rig.get("rec_owed") == 1, owed_record.is_some(), "a record decided and not taken: {ctx}");
        }
        assert!(rig.get("err") == 0 || decided, "ERR entered only with a decision: {ctx}");
        if rig.get("rd_start") == 1 {
            assert!(read.is_none(), "one payload read at a time: {ctx}");
            assert_eq!(rig.get("wr_quiet"), 1, "a payload read starts only when no write beat is left: {ctx}");
            let fail = rng.chance(0.05);
            read = Some(Read { addr: rig.get("rd_addr"), len: rig.get("rd_len"), fail, wait: rng.below(20) as u32 });
        }
        let qpn = rig.get("tx_qpn") as u32;
        if decided {
            decisions += 1;
            let q = model.get_mut(&qpn).unwrap_or_else(|| panic!("QP {qpn} decided, but it is not valid: {ctx}"));
            let gid_set = rig.gids[usize::from(q.attrs.sgid_index)].is_some();
            let legal = q.qp_type == QpType::Rc && sendable(q) && gid_set;
            assert!(
                legal,
                "QP {qpn} decided: RC {:?}, owes and not flushing {}, GID set {gid_set}: {ctx}",
                q.qp_type,
                sendable(q)
            );
            let before = format!("{:?}", q.resp);
            let mut asked = None;
            let next = next_response(q, |va, buf| {
                asked = Some((va, buf.len() as u64));
                !read.as_ref().is_some_and(|r| r.fail)
            })
            .unwrap_or_else(|| panic!("QP {qpn} owes a response: {ctx}"));
            let ctx = format!("{ctx}: QP {qpn}, {}, responder before {before}", kind(&next));
            assert_eq!(asked, read.as_ref().map(|r| (r.addr, r.len)), "the payload read (address, length): {ctx}");
            if asked.is_some() {
                read = None;
            }
            assert_eq!(rig.get("nil") == 1, next == Next::ReadFailed, "nothing sent: {ctx}");
            assert_eq!(rig.get("err") == 1, matches!(next, Next::Fatal(_)), "ERR entered: {ctx}");
            let acked = matches!(&next, Next::Send(r) if r.opcode == Opcode::ACKNOWLEDGE);
            assert_eq!(rig.get("acked") == 1, acked, "an ACK or NAK the QP survives: {ctx}");
            *tally.entry(kind(&next)).or_default() += 1;
            if let Next::Send(r) | Next::Fatal(r) = &next {
                owed_record = Some((record(&rig, q, r), ctx.clone()));
            }
        }
        // The writes land in the RAMs.
        if rig.get("resp_we") == 1 {
            assert!(decided, "qp_resp written only with a decision: {ctx}");
            let n = rig.get("resp_qpn") as usize;
            rig.resp[n] = rig.get_bytes("resp_next");
        }
        if rig.get("item_we") == 1 {
            assert!(decided, "an item written only with a decision: {ctx}");
            let (n, s) = (rig.get("resp_qpn") as usize, rig.get("item_w_slot") as usize % slots);
            rig.ring[n][s] = rig.get_bytes("item_w");
        }
        if decided {
            let q = &model[&qpn];
            rig.agrees(q).unwrap_or_else(|e| panic!("after the decision: {e}\n{ctx}\nmodel after: {:?}", q.resp));
            if q.resp.fatal && !q.resp.owes() {
                // The fatal NAK went: the QP enters ERR (the command unit's part); it is created again once
                // the block has let go of it.
                ended = Some(qpn);
            }
        }
        if rig.get("meta_valid") == 1 && rig.get("meta_ready") == 1 {
            let (want, why) = owed_record.take().unwrap_or_else(|| panic!("a record offered, none decided: {ctx}"));
            let wrong = record_diff(&Meta(rig.get_bytes("meta")), &want);
            assert!(wrong.is_empty(), "the TX record: {}\n{why}", wrong.join("; "));
        }
        rig.asked = (rig.get("qp_index") as usize, rig.get("item_slot") as usize);
        rig.rtl.tick();
        // A quiet time ends when the block is idle with nothing in flight: no QP that may send owes anything.
        if let Some(from) = quiet_from {
            let done = rig.get("idle") == 1 && read.is_none() && owed_record.is_none();
            assert!(cycle - from < 20_000, "the block goes idle in a quiet time: {ctx}");
            if done {
                for (n, q) in &model {
                    let may = q.qp_type == QpType::Rc && rig.gids[usize::from(q.attrs.sgid_index)].is_some();
                    assert!(!(may && sendable(q)), "QP {n} owes a response, the block is idle: {ctx}: {:?}", q.resp);
                }
                *tally.entry("quiet time").or_default() += 1;
                quiet_from = None;
                if decisions >= 40_000 {
                    break;
                }
            }
        }
    }
    let mut t: Vec<_> = tally.into_iter().collect();
    t.sort();
    eprintln!("resp_tx: {decisions} decisions: {t:?}");
    let seen: HashMap<&str, u32> = t.into_iter().collect();
    let at_least = [
        ("ACK", 3000),
        ("sequence NAK", 500),
        ("RNR NAK", 500),
        ("atomic ACK", 500),
        ("fatal NAK", 100),
        ("READ response first", 500),
        ("READ response middle", 500),
        ("READ response last", 500),
        ("READ response only", 500),
        ("READ payload unreadable", 100),
        ("destroyed", 50),
        ("created", 50),
        ("quiet time", 50),
    ];
    for (name, n) in at_least {
        assert!(seen.get(name).copied().unwrap_or(0) >= n, "seed {seed}: fewer than {n} of `{name}`: {seen:?}");
    }
}
