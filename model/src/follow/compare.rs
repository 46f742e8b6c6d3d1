//! Holding two runs' outputs against each other: strict in order within a stream, loose across streams (the
//! interleave of QPs, and the slot a CQE takes in a CQ that several QPs share, are the implementation's
//! business). Data written to host memory is compared as byte extents, so an implementation may split or
//! merge its DMA writes. Each side's CQ writes must also keep the ring's discipline on their own: consecutive
//! slots, each with the owner bit of its pass. The counters are compared at the end (a quiet point).

use crate::nic::{Output, Side, TxPick};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use wire::contract::cqe::owner_for;

/// A stream of outputs compared in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StreamKey {
    Frames(TxPick),
    Data {
        qpn: u32,
        side: Side,
    },
    Cqes {
        cqn: u32,
        qpn: u32,
        recv: bool,
    },
    /// CQ `cqn`'s ring discipline on one side (slots in order, owner bits right).
    Ring {
        cqn: u32,
    },
    Events,
    Interrupts,
    Commands,
    Registers,
    Counters,
}

impl StreamKey {
    fn of(o: &Output) -> StreamKey {
        match o {
            Output::Frame { pick, .. } => StreamKey::Frames(*pick),
            Output::Data { qpn, side, .. } => StreamKey::Data { qpn: *qpn, side: *side },
            Output::Cqe { cqn, cqe, .. } => StreamKey::Cqes { cqn: *cqn, qpn: cqe.qp_num, recv: cqe.is_recv != 0 },
            Output::Eqe { .. } => StreamKey::Events,
            Output::Interrupt => StreamKey::Interrupts,
            Output::Command { .. } => StreamKey::Commands,
            Output::Register { .. } => StreamKey::Registers,
        }
    }
}

/// The first difference in one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub stream: StreamKey,
    /// Position in the stream.
    pub index: usize,
    /// The trace event behind each side's output (`None`: that side has no output there).
    pub want_event: Option<usize>,
    pub got_event: Option<usize>,
    /// Both outputs, decoded.
    pub want: String,
    pub got: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ev = |e: Option<usize>| e.map_or("none".to_string(), |e| format!("event {e}"));
        writeln!(
            f,
            "{:?} #{}: recorded at {}, followed at {}",
            self.stream,
            self.index,
            ev(self.want_event),
            ev(self.got_event)
        )?;
        writeln!(f, "  recorded: {}", self.want)?;
        write!(f, "  followed: {}", self.got)
    }
}

/// An output as its stream compares it: a CQE without its slot and owner bit (where it landed in a shared
/// ring is the implementation's; `ring_faults` checks the ring).
fn comparable(o: &Output) -> Output {
    match o {
        Output::Cqe { cqn, cqe, .. } => {
            let mut c = *cqe;
            c.owner = 0;
            Output::Cqe { cqn: *cqn, slot: 0, log_size: 0, cqe: c }
        }
        o => o.clone(),
    }
}

/// The outputs by stream, data writes merged into extents: (event, output).
fn streams(outputs: &[(usize, Output)]) -> BTreeMap<StreamKey, Vec<(usize, Output)>> {
    let mut m: BTreeMap<StreamKey, Vec<(usize, Output)>> = BTreeMap::new();
    for (e, o) in outputs {
        let s = m.entry(StreamKey::of(o)).or_default();
        if let (Output::Data { iova, bytes, .. }, Some((_, Output::Data { iova: at, bytes: have, .. }))) =
            (o, s.last_mut())
        {
            if *at + have.len() as u64 == *iova {
                have.extend_from_slice(bytes);
                continue;
            }
        }
        s.push((*e, comparable(o)));
    }
    m
}

/// Where one side's CQ writes break the ring's discipline: a slot out of order, or an owner bit not its
/// pass's. The first fault per CQ.
fn ring_faults(outputs: &[(usize, Output)]) -> BTreeMap<u32, (usize, String)> {
    let mut next: BTreeMap<u32, u32> = BTreeMap::new();
    let mut faults = BTreeMap::new();
    for (e, o) in outputs {
        let Output::Cqe { cqn, slot, log_size, cqe } = o else { continue };
        let want = *next.entry(*cqn).or_insert(*slot);
        next.insert(*cqn, slot.wrapping_add(1));
        let fault = if *slot != want {
            Some(format!("CQE in slot {slot} where slot {want} was next"))
        } else if cqe.owner != owner_for(*slot, *log_size) {
            Some(format!(
                "CQE in slot {slot} with owner bit {} (its pass's is {})",
                cqe.owner,
                owner_for(*slot, *log_size)
            ))
        } else {
            None
        };
        if let Some(f) = fault {
            faults.entry(*cqn).or_insert((*e, f));
        }
    }
    faults
}

/// Every stream's first difference between `want` (the recorded run) and `got` (the follower's).
pub fn compare(want: &[(usize, Output)], got: &[(usize, Output)]) -> Vec<Mismatch> {
    let (w, g) = (streams(want), streams(got));
    let mut keys: Vec<StreamKey> = w.keys().chain(g.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    let none = Vec::new();
    let mut out = Vec::new();
    for k in keys {
        let (a, b) = (w.get(&k).unwrap_or(&none), g.get(&k).unwrap_or(&none));
        let n = a.len().max(b.len());
        if let Some(i) = (0..n).find(|&i| a.get(i).map(|x| &x.1) != b.get(i).map(|x| &x.1)) {
            let (x, y) = (a.get(i).map(|x| &x.1), b.get(i).map(|x| &x.1));
            let at = first_difference(x, y).map_or(String::new(), |n| format!(" (first difference at byte {n})"));
            out.push(Mismatch {
                stream: k,
                index: i,
                want_event: a.get(i).map(|x| x.0),
                got_event: b.get(i).map(|x| x.0),
                want: x.map_or("nothing".into(), |o| decode(o, first_difference(x, y)) + &at),
                got: y.map_or("nothing".into(), |o| decode(o, first_difference(x, y))),
            });
        }
    }
    let (rw, rg) = (ring_faults(want), ring_faults(got));
    let mut cqs: Vec<u32> = rw.keys().chain(rg.keys()).copied().collect();
    cqs.sort();
    cqs.dedup();
    for cqn in cqs {
        let (x, y) = (rw.get(&cqn), rg.get(&cqn));
        out.push(Mismatch {
            stream: StreamKey::Ring { cqn },
            index: 0,
            want_event: x.map(|f| f.0),
            got_event: y.map(|f| f.0),
            want: x.map_or("the ring kept".into(), |f| f.1.clone()),
            got: y.map_or("the ring kept".into(), |f| f.1.clone()),
        });
    }
    out
}

/// The counters of both runs at a quiet point: every one that differs (and a difference in how many there
/// are), named.
pub fn compare_counters(want: &[u64], got: &[u64]) -> Vec<Mismatch> {
    let name = |i: usize| wire::contract::regs::Counter::ALL.get(i).map_or("?", |c| c.name());
    let mut out: Vec<Mismatch> = (0..want.len().max(got.len()))
        .filter(|&i| want.get(i) != got.get(i))
        .map(|i| Mismatch {
            stream: StreamKey::Counters,
            index: i,
            want_event: None,
            got_event: None,
            want: want.get(i).map_or("none".into(), |v| format!("{} = {v}", name(i))),
            got: got.get(i).map_or("none".into(), |v| format!("{} = {v}", name(i))),
        })
        .collect();
    out.truncate(16);
    out
}

/// The bytes of a frame or a data extent.
fn bytes_of(o: &Output) -> Option<&[u8]> {
    match o {
        Output::Frame { frame, .. } => Some(frame),
        Output::Data { bytes, .. } => Some(bytes),
        _ => None,
    }
}

/// The first byte where two frames or two extents differ (their lengths' minimum when one is a prefix).
fn first_difference(a: Option<&Output>, b: Option<&Output>) -> Option<usize> {
    let (x, y) = (bytes_of(a?)?, bytes_of(b?)?);
    x.iter().zip(y).position(|(p, q)| p != q).or((x.len() != y.len()).then(|| x.len().min(y.len())))
}

/// An output, field by field; its bytes shown from `from` on when given (where the two sides part).
pub fn decode(o: &Output, from: Option<usize>) -> String {
    let show = |b: &[u8]| match from {
        Some(n) if n > 32 => format!("... bytes {n}..: {}", hex(&b[n.min(b.len())..])),
        _ => hex(b),
    };
    match o {
        Output::Frame { frame, .. } => match wire::parse(frame) {
            Ok(p) => format!("{} bytes: {:?}, payload {} bytes {}", frame.len(), p.hdr, p.payload.len(), show(frame)),
            Err(e) => format!("{} bytes, not RoCEv2 ({e:?}): {}", frame.len(), show(frame)),
        },
        Output::Data { qpn, side, iova, bytes } => {
            format!("QP {qpn:#x} {side:?}: {} bytes at {iova:#x}: {}", bytes.len(), show(bytes))
        }
        Output::Cqe { cqn, cqe, .. } => format!("CQ {cqn}: {cqe:?}"),
        Output::Eqe { slot, owner, kind, obj } => format!("EQE {slot} (owner {owner}): {kind:?} for {obj:#x}"),
        Output::Interrupt => "interrupt".into(),
        Output::Command { opcode, status, syndrome, out } => {
            format!("command {opcode:#x}: {status:?}, syndrome {syndrome:#x}, output {}", hex(out))
        }
        Output::Register { off, val } => format!("register {off:#x} read {val:#x}"),
    }
}

/// The first 64 bytes in hex, and how many more there are.
fn hex(b: &[u8]) -> String {
    let mut s = String::new();
    for x in b.iter().take(64) {
        let _ = write!(s, "{x:02x}");
    }
    if b.len() > 64 {
        let _ = write!(s, "... (+{})", b.len() - 64);
    }
    s
}
