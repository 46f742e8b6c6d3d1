//! Random responder contexts and the requests a requester would send them, for the tests of the responder's
//! blocks against the model: QP contexts as the model holds them (state, access, path MTU, the RQ's counters,
//! the responder's context and queue), MR tables with live, stale and unknown keys, and request frames near
//! the QP's ePSN, half of them what the requester would send next; and requesters' windows of send WQEs,
//! for the walks over them.

use model::nic::dcqcn::Rp;
use model::nic::mr::{Mr, MrTable};
use model::nic::qp::{Qp, RecvCtx, RespItem, RespState, SendWqe, Sge};
use model::rng::Rng;
use wire::contract::profile::Profile;
use wire::contract::qpc::mr_entry;
use wire::contract::verbs::{access, QpState};
use wire::contract::wqe::SendOp;
use wire::ext::{AethRepr, AtomicEthRepr, RethRepr};
use wire::layout::{Bits, Packer};
use wire::opcode::Transport;
use wire::{OpKind, Opcode, Position, Psn};

/// A packed record as bytes, least significant first (as `Sim::set_bytes` takes a port).
pub fn bytes_of(b: &Bits) -> Vec<u8> {
    (0..b.len().div_ceil(8)).map(|i| b.get(8 * i, 8.min(b.len() - 8 * i)) as u8).collect()
}

/// A scatter or gather list as the blocks' `sges` port carries it (`RecvWqe`'s output, the gather's and the
/// scatter's input): `qpc::recv_sge` records (address, then length above it), the first in the low bits, the
/// entries past the list zero.
pub fn sges_bytes(sges: &[Sge]) -> Vec<u8> {
    use hdl::engine::resp::recv_wqe::{MAX_SGE, SGE_BITS};
    let l = wire::contract::qpc::recv_sge();
    let (a, _) = l.slice("addr").expect("an SGE has an address");
    let (n, _) = l.slice("length").expect("an SGE has a length");
    let mut bits = vec![0u8; MAX_SGE * SGE_BITS / 8];
    for (i, s) in sges.iter().enumerate() {
        for (lsb, v, w) in [(a, s.addr, 64), (n, u64::from(s.length), 32)] {
            for b in (0..w).filter(|b| v >> b & 1 == 1) {
                let at = i * SGE_BITS + lsb as usize + b;
                bits[at / 8] |= 1 << (at % 8);
            }
        }
    }
    bits
}

/// Bytes as a big-endian number (a field as the wire carries it).
pub fn be(b: &[u8]) -> u128 {
    b.iter().fold(0u128, |a, &x| a << 8 | u128::from(x))
}

/// The MR table, as the model holds it and as the RTL's entries (by index).
pub struct Mrs {
    pub table: MrTable,
    pub entries: Vec<Option<Mr>>,
}

impl Mrs {
    pub fn random(rng: &mut Rng, p: &Profile) -> Mrs {
        let mut table = MrTable::new(p.max_mr as usize);
        let mut entries = vec![None; p.max_mr as usize];
        for _ in 0..1 + rng.below(12) {
            let pdn = rng.below(4) as u32;
            let iova = if rng.chance(0.1) { u64::MAX - rng.below(1 << 20) - (1 << 20) } else { rng.below(1 << 40) };
            let length = 1 + rng.below(1 << 20);
            let acc = rng.below(16) as u32;
            let key = table.register(pdn, iova, length, acc).expect("room in the MR table");
            let mr = *table.get(key).unwrap();
            // Some registrations are undone (the slot's next one gets a new variant).
            if rng.chance(0.3) {
                table.deregister(key);
                entries[(key >> 8) as usize] = None;
            } else {
                entries[(key >> 8) as usize] = Some(mr);
            }
        }
        Mrs { table, entries }
    }

    /// The RTL's entry at `index` (a RAM addressed by the index's low bits).
    pub fn entry(&self, index: u64, p: &Profile) -> Vec<u8> {
        let l = mr_entry(p);
        let mut k = Packer::new(&l);
        let e = self.entries[(index % self.entries.len() as u64) as usize];
        let vals: [(&str, u128); 6] = match e {
            None => [("valid", 0), ("variant", 0), ("pdn", 0), ("access", 0), ("iova", 0), ("length", 0)],
            Some(m) => [
                ("valid", 1),
                ("variant", u128::from(m.key & 0xFF)),
                ("pdn", m.pdn.into()),
                ("access", m.access.into()),
                ("iova", m.iova.into()),
                ("length", m.length.into()),
            ],
        };
        for (n, v) in vals {
            k.put(n, v).unwrap();
        }
        bytes_of(&k.finish().unwrap())
    }

    /// A key, and the MR whose range to aim at: mostly one registered (valid or not), sometimes a stale
    /// variant of one (aimed at its range, so that only the variant is wrong) or any value at all.
    pub fn key(&self, rng: &mut Rng) -> (u32, Option<Mr>) {
        let live: Vec<Mr> = self.entries.iter().flatten().copied().collect();
        match rng.below(10) {
            0 => (rng.next_u64() as u32, None),
            1 if !live.is_empty() => {
                let m = live[rng.below(live.len() as u64) as usize];
                (m.key ^ (1 + rng.below(255) as u32), Some(m))
            }
            _ if !live.is_empty() => {
                let m = live[rng.below(live.len() as u64) as usize];
                (m.key, Some(m))
            }
            _ => (rng.below(1 << 12) as u32, None),
        }
    }
}

/// A window of `count` random send WQEs in `q` ending at a random SQ consumer counter, with a random next
/// PSN: every send operation, lengths of none to 1 MiB, the first `started` of them started (their first
/// PSNs are derived from `qp_req.psn` when the context is unpacked, as the RTL derives them) and about a
/// third of those finished.
pub fn random_window(rng: &mut Rng, q: &mut Qp, count: usize, started: usize) {
    let ops: Vec<SendOp> = (0..16u8).filter_map(SendOp::from_u8).collect();
    q.sq.ci = rng.next_u64() as u16;
    q.req.psn = Psn::new(rng.next_u64() as u32);
    let ci = q.sq.ci;
    q.req.wqes = (0..count)
        .map(|i| {
            let op = ops[rng.below(ops.len() as u64) as usize];
            let len = match rng.below(4) {
                0 => 0,
                1 => 1 + rng.below(4096) as u32,
                _ => rng.below(1 << 20) as u32,
            };
            SendWqe {
                index: ci.wrapping_sub((count - i) as u16),
                op,
                flags: 0,
                len,
                first_psn: (i < started).then_some(Psn::new(0)),
                npkts: 0,
                acked: i < started && rng.chance(0.3),
                error: None,
                wr_id: rng.next_u64(),
            }
        })
        .collect();
}

/// The window RAM of one QP as `Rings::window` holds it: the packed entries (`packed.wqes`, entry 0 at SQ
/// counter `base`) in slots of the counter modulo `slots`, the rest zero.
pub fn window_ram(wqes: &[Bits], base: u16, slots: usize) -> Vec<Vec<u8>> {
    let mut ram = vec![vec![0u8; 8]; slots];
    for (i, w) in wqes.iter().enumerate() {
        ram[usize::from(base.wrapping_add(i as u16)) % slots] = bytes_of(w);
    }
    ram
}

/// A random QP, mostly able to receive, with a random responder context.
pub fn random_qp(rng: &mut Rng, p: &Profile) -> Qp {
    let mut q = Qp::new(1, rng.below(4) as u32, Rp::new(100_000, &Default::default()));
    q.state = match rng.below(10) {
        0 => [QpState::Reset, QpState::Init, QpState::Sqe, QpState::Err][rng.below(4) as usize],
        1 => QpState::Rtr,
        2 => QpState::Sqd,
        _ => QpState::Rts,
    };
    q.flushing = rng.chance(0.05);
    q.attrs.access = if rng.chance(0.7) { access::ALL } else { rng.below(16) as u32 };
    q.attrs.pmtu = [0, 256, 512, 1024, 2048, 4096][rng.below(6) as usize];
    q.attrs.max_dest_rd_atomic = if rng.chance(0.15) { 0 } else { 1 + rng.below(u64::from(p.max_qp_rd_atom)) as u8 };
    q.rq.log_size = 4;
    q.rq.ci = rng.next_u64() as u16;
    q.rq.pi = if rng.chance(0.3) { q.rq.ci } else { q.rq.ci.wrapping_add(1 + rng.below(16) as u16) };
    let pmtu = q.attrs.path_mtu();
    let r = &mut q.resp;
    r.epsn = Psn::new(rng.next_u64() as u32);
    r.msn = rng.below(1 << 24) as u32;
    r.nak_sent = rng.chance(0.2);
    r.in_msg = [None, None, Some(OpKind::Send), Some(OpKind::Write)][rng.below(4) as usize];
    // Sometimes a whole number of packets, so that a middle packet can meet the message's end.
    r.write_resid = match rng.below(5) {
        0 => rng.next_u64() as u32,
        1 => pmtu * (1 + rng.below(3) as u32),
        _ => rng.below(3 * 4096) as u32,
    };
    r.recv = rng.chance(0.4).then(|| RecvCtx { index: q.rq.ci.wrapping_sub(1), offset: rng.below(1 << 16) as u32 });
    r.fatal = rng.chance(0.05);
    let depth = p.resp_queue as usize;
    let aeth = AethRepr { syndrome: 0x1F, msn: 0 };
    let ack = rng.chance(0.3);
    let items = rng.below(depth as u64 + 1 - u64::from(ack)) as usize;
    for _ in 0..items {
        r.out.push_back(RespItem::Ack { psn: Psn::new(0), aeth });
    }
    r.ack = ack.then_some((Psn::new(0), aeth));
    q
}

/// A random response of any kind.
pub fn random_item(rng: &mut Rng) -> RespItem {
    let (psn, msn) = (Psn::new(rng.below(1 << 24) as u32), rng.below(1 << 24) as u32);
    let aeth = AethRepr { syndrome: rng.below(256) as u8, msn };
    match rng.below(4) {
        0 => RespItem::Ack { psn, aeth },
        1 => RespItem::AtomicAck { psn, aeth, orig: rng.next_u64() },
        2 => RespItem::Read {
            psn,
            va: rng.next_u64(),
            resid: rng.below(1 << 31) as u32,
            at_base: rng.below(2) == 1,
            msn,
        },
        _ => RespItem::FatalNak { psn, aeth },
    }
}

/// A random response ring for `r` (its head anywhere, the ACK slot full or empty, any items queued) with
/// room left for what a test queues: with the slot full, it and the new item both move in, and one place is
/// left for a fatal NAK. The number of items queued.
pub fn random_ring(rng: &mut Rng, r: &mut RespState, depth: usize) -> usize {
    r.item_head = rng.below(256) as u8;
    let full = rng.below(2) == 1;
    r.ack = full
        .then(|| (Psn::new(rng.below(1 << 24) as u32), AethRepr { syndrome: 0x1F, msn: rng.below(1 << 24) as u32 }));
    let queued = rng.below((depth - 2 - usize::from(full) + 1) as u64) as usize;
    r.out = (0..queued).map(|_| random_item(rng)).collect();
    assert!(r.room(1, depth - 1), "the generator leaves room");
    queued
}

/// The longest payload a request frame here carries (the longest frame the RX path takes, with the
/// longest header stack).
pub const MAX_PAYLOAD: usize = 4097;

/// A request packet for `q`: any request opcode (mostly RC), a PSN at or near ePSN, a payload length at
/// and around the path MTU, keys and ranges mostly from `mrs`.
pub fn random_request(rng: &mut Rng, q: &Qp, mrs: &Mrs) -> Vec<u8> {
    // Half the packets are what a requester would send next (an opcode that fits the message in progress,
    // a payload the position allows), so that every later check is reached; the rest are anything.
    let coherent = rng.chance(0.5);
    let fits = |i: &wire::OpInfo| match q.resp.in_msg {
        Some(k) => i.kind == k && matches!(i.position, Position::Middle | Position::Last),
        None => i.starts_message(),
    };
    let ops: Vec<Opcode> = crate::frames::opcodes()
        .into_iter()
        .filter(|o| o.info().is_some_and(|i| i.is_request() && (i.transport == Transport::Rc || rng.chance(0.1))))
        .filter(|o| !coherent || o.info().is_some_and(|i| i.transport == Transport::Rc && fits(i)))
        .collect();
    let op = ops[rng.below(ops.len() as u64) as usize];
    let info = op.info().unwrap();
    let pmtu = q.attrs.path_mtu() as usize;
    let plen = if coherent && info.has_payload {
        match info.position {
            Position::First | Position::Middle => pmtu,
            Position::Last if info.kind == OpKind::Write && rng.chance(0.8) => (q.resp.write_resid as usize).min(pmtu),
            Position::Last => 1 + rng.below(pmtu as u64) as usize,
            Position::Only => rng.below(pmtu as u64 + 1) as usize,
        }
    } else {
        match rng.below(6) {
            0 => 0,
            1 => pmtu,
            2 => pmtu - 1,
            3 => pmtu + 1,
            4 => q.resp.write_resid as usize,
            _ => rng.below(pmtu as u64 + 2) as usize,
        }
    }
    .min(MAX_PAYLOAD);
    let (ipv6, vlan) = (rng.chance(0.3), rng.chance(0.2));
    let f = crate::frames::frame(rng, op, ipv6, vlan, plen);
    let pkt = wire::parse(&f).expect("a well-formed frame");
    let mut h = pkt.hdr;
    let payload = pkt.payload.to_vec();
    let epsn = q.resp.epsn;
    h.bth.psn = match rng.below(10) {
        0 => epsn.add(1 + rng.below(3) as u32),
        1 => epsn.sub(1 + rng.below(3) as u32),
        2 => Psn::new(rng.next_u64() as u32),
        _ => epsn,
    };
    let (key, mr) = mrs.key(rng);
    let (base, span) = mr.map_or((rng.next_u64(), 1 << 20), |m| (m.iova, m.length));
    let va = match rng.below(6) {
        0 => rng.next_u64(),
        1 => base.wrapping_sub(1 + rng.below(8)),
        2 => base.wrapping_add(span).wrapping_sub(rng.below(16)),
        _ => base.wrapping_add(rng.below(span)),
    };
    if let Some(r) = h.ext.reth.as_mut() {
        let dma_len = match rng.below(6) {
            0 => 0,
            1 => payload.len() as u32 + 1 + rng.below(8192) as u32,
            2 => rng.next_u64() as u32,
            3 => (1u32 << 31) + rng.below(2) as u32,
            _ => payload.len() as u32,
        };
        *r = RethRepr { va, rkey: key, dma_len };
    }
    if let Some(a) = h.ext.atomic_eth.as_mut() {
        let va = if rng.chance(0.8) { va & !7 } else { va };
        *a = AtomicEthRepr { va, rkey: key, ..*a };
    }
    h.emit(&payload)
}
