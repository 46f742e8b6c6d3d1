//! Holding two runs' outputs against each other: strict in order within a stream, loose across streams (the
//! interleave of QPs, and the slot a CQE takes in a CQ that several QPs share, are the implementation's
//! business). Data written to host memory is compared as byte extents, so an implementation may split or
//! merge its DMA writes.

use crate::nic::{Output, TxPick};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A stream of outputs compared in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StreamKey {
    Frames(TxPick),
    Data { qpn: u32 },
    Cqes { cqn: u32, qpn: u32, recv: bool },
    Events,
    Interrupts,
    Commands,
    Registers,
}

impl StreamKey {
    fn of(o: &Output) -> StreamKey {
        match o {
            Output::Frame { pick, .. } => StreamKey::Frames(*pick),
            Output::Data { qpn, .. } => StreamKey::Data { qpn: *qpn },
            Output::Cqe { cqn, cqe } => StreamKey::Cqes { cqn: *cqn, qpn: cqe.qp_num, recv: cqe.is_recv != 0 },
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

/// One stream's outputs, data writes merged into extents: (event, output).
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
        s.push((*e, o.clone()));
    }
    m
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
            out.push(Mismatch {
                stream: k,
                index: i,
                want_event: a.get(i).map(|x| x.0),
                got_event: b.get(i).map(|x| x.0),
                want: a.get(i).map_or("nothing".into(), |x| decode(&x.1)),
                got: b.get(i).map_or("nothing".into(), |x| decode(&x.1)),
            });
        }
    }
    out
}

/// An output, field by field.
pub fn decode(o: &Output) -> String {
    match o {
        Output::Frame { frame, .. } => match wire::parse(frame) {
            Ok(p) => {
                format!("{} bytes: {:?}, payload {} bytes {}", frame.len(), p.hdr, p.payload.len(), hex(p.payload))
            }
            Err(e) => format!("{} bytes, not RoCEv2 ({e:?}): {}", frame.len(), hex(frame)),
        },
        Output::Data { qpn, iova, bytes } => format!("QP {qpn:#x}: {} bytes at {iova:#x}: {}", bytes.len(), hex(bytes)),
        Output::Cqe { cqn, cqe } => format!("CQ {cqn}: {cqe:?}"),
        Output::Eqe { kind, obj } => format!("{kind:?} for {obj:#x}"),
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
