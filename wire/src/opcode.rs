//! The opcode table: which headers each opcode carries and what role it plays. Every other part of ferrite
//! (model, RTL generator, tests) asks this table instead of keeping its own.

use core::fmt;

/// A BTH opcode.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Opcode(pub u8);

/// Transport class, BTH opcode bits 7:5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    Rc,
    Uc,
    Ud,
    /// RoCEv2 congestion notification (0x81).
    Cnp,
}

/// The operation an opcode belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpKind {
    Send,
    Write,
    ReadRequest,
    ReadResponse,
    Ack,
    AtomicAck,
    CompareSwap,
    FetchAdd,
    Cnp,
}

/// Where a packet sits in its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Position {
    First,
    Middle,
    Last,
    Only,
}

impl Position {
    /// The position of a packet that does or does not start and end its message.
    pub const fn of(starts: bool, ends: bool) -> Position {
        match (starts, ends) {
            (true, true) => Position::Only,
            (true, false) => Position::First,
            (false, true) => Position::Last,
            (false, false) => Position::Middle,
        }
    }
}

/// Header-presence bits, in wire order after the BTH.
pub mod hdr {
    pub const DETH: u16 = 1 << 0;
    pub const RETH: u16 = 1 << 1;
    pub const ATOMIC_ETH: u16 = 1 << 2;
    pub const AETH: u16 = 1 << 3;
    pub const ATOMIC_ACK_ETH: u16 = 1 << 4;
    pub const IMMDT: u16 = 1 << 5;
    pub const IETH: u16 = 1 << 6;
    pub const CNP_PAD: u16 = 1 << 7;
    /// Every header bit, in the order the headers follow the BTH, with its length.
    pub const ORDER: [(u16, usize); 8] = {
        use crate::ext::*;
        [
            (DETH, DethRepr::LEN),
            (RETH, RethRepr::LEN),
            (ATOMIC_ETH, AtomicEthRepr::LEN),
            (AETH, AethRepr::LEN),
            (ATOMIC_ACK_ETH, AtomicAckEthRepr::LEN),
            (IMMDT, ImmDtRepr::LEN),
            (IETH, IethRepr::LEN),
            (CNP_PAD, CNP_PAD_LEN),
        ]
    };
}

/// One row of the opcode table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpInfo {
    pub name: &'static str,
    pub transport: Transport,
    pub kind: OpKind,
    pub position: Position,
    /// `hdr::*` bits.
    pub headers: u16,
    /// Whether a payload may follow the headers.
    pub has_payload: bool,
}

impl OpInfo {
    /// Sent by a requester, handled by the remote responder.
    pub const fn is_request(&self) -> bool {
        matches!(self.kind, OpKind::Send | OpKind::Write | OpKind::ReadRequest | OpKind::CompareSwap | OpKind::FetchAdd)
    }
    /// Sent by a responder, handled by the remote completer.
    pub const fn is_response(&self) -> bool {
        matches!(self.kind, OpKind::ReadResponse | OpKind::Ack | OpKind::AtomicAck)
    }
    pub const fn is_atomic(&self) -> bool {
        matches!(self.kind, OpKind::CompareSwap | OpKind::FetchAdd)
    }
    pub const fn has(&self, h: u16) -> bool {
        self.headers & h != 0
    }
    /// Bytes of extended headers after the BTH.
    pub const fn ext_len(&self) -> usize {
        let mut n = 0;
        let mut i = 0;
        while i < hdr::ORDER.len() {
            if self.headers & hdr::ORDER[i].0 != 0 {
                n += hdr::ORDER[i].1;
            }
            i += 1;
        }
        n
    }
    /// First or only packet of a message.
    pub const fn starts_message(&self) -> bool {
        matches!(self.position, Position::First | Position::Only)
    }
    /// Last or only packet of a message.
    pub const fn ends_message(&self) -> bool {
        matches!(self.position, Position::Last | Position::Only)
    }
    /// Payload length must equal the PMTU (FIRST/MIDDLE of a multi-packet message).
    pub const fn payload_is_full_pmtu(&self) -> bool {
        self.has_payload && matches!(self.position, Position::First | Position::Middle)
    }
}

macro_rules! opcodes {
    ($( $konst:ident = $val:literal, $tr:ident, $kind:ident, $pos:ident, $payload:literal, [$($h:ident)*]; )*) => {
        impl Opcode {
            $( pub const $konst: Opcode = Opcode($val); )*
        }

        const fn lookup(op: u8) -> Option<OpInfo> {
            match op {
                $( $val => Some(OpInfo {
                    name: stringify!($konst),
                    transport: Transport::$tr,
                    kind: OpKind::$kind,
                    position: Position::$pos,
                    headers: 0 $( | hdr::$h )*,
                    has_payload: $payload,
                }), )*
                _ => None,
            }
        }
    };
}

opcodes! {
    SEND_FIRST = 0x00, Rc, Send, First, true, [];
    SEND_MIDDLE = 0x01, Rc, Send, Middle, true, [];
    SEND_LAST = 0x02, Rc, Send, Last, true, [];
    SEND_LAST_WITH_IMMEDIATE = 0x03, Rc, Send, Last, true, [IMMDT];
    SEND_ONLY = 0x04, Rc, Send, Only, true, [];
    SEND_ONLY_WITH_IMMEDIATE = 0x05, Rc, Send, Only, true, [IMMDT];
    RDMA_WRITE_FIRST = 0x06, Rc, Write, First, true, [RETH];
    RDMA_WRITE_MIDDLE = 0x07, Rc, Write, Middle, true, [];
    RDMA_WRITE_LAST = 0x08, Rc, Write, Last, true, [];
    RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09, Rc, Write, Last, true, [IMMDT];
    RDMA_WRITE_ONLY = 0x0A, Rc, Write, Only, true, [RETH];
    RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0B, Rc, Write, Only, true, [RETH IMMDT];
    RDMA_READ_REQUEST = 0x0C, Rc, ReadRequest, Only, false, [RETH];
    RDMA_READ_RESPONSE_FIRST = 0x0D, Rc, ReadResponse, First, true, [AETH];
    RDMA_READ_RESPONSE_MIDDLE = 0x0E, Rc, ReadResponse, Middle, true, [];
    RDMA_READ_RESPONSE_LAST = 0x0F, Rc, ReadResponse, Last, true, [AETH];
    RDMA_READ_RESPONSE_ONLY = 0x10, Rc, ReadResponse, Only, true, [AETH];
    ACKNOWLEDGE = 0x11, Rc, Ack, Only, false, [AETH];
    ATOMIC_ACKNOWLEDGE = 0x12, Rc, AtomicAck, Only, false, [AETH ATOMIC_ACK_ETH];
    COMPARE_SWAP = 0x13, Rc, CompareSwap, Only, false, [ATOMIC_ETH];
    FETCH_ADD = 0x14, Rc, FetchAdd, Only, false, [ATOMIC_ETH];
    SEND_LAST_WITH_INVALIDATE = 0x16, Rc, Send, Last, true, [IETH];
    SEND_ONLY_WITH_INVALIDATE = 0x17, Rc, Send, Only, true, [IETH];
    UC_SEND_FIRST = 0x20, Uc, Send, First, true, [];
    UC_SEND_MIDDLE = 0x21, Uc, Send, Middle, true, [];
    UC_SEND_LAST = 0x22, Uc, Send, Last, true, [];
    UC_SEND_LAST_WITH_IMMEDIATE = 0x23, Uc, Send, Last, true, [IMMDT];
    UC_SEND_ONLY = 0x24, Uc, Send, Only, true, [];
    UC_SEND_ONLY_WITH_IMMEDIATE = 0x25, Uc, Send, Only, true, [IMMDT];
    UC_RDMA_WRITE_FIRST = 0x26, Uc, Write, First, true, [RETH];
    UC_RDMA_WRITE_MIDDLE = 0x27, Uc, Write, Middle, true, [];
    UC_RDMA_WRITE_LAST = 0x28, Uc, Write, Last, true, [];
    UC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x29, Uc, Write, Last, true, [IMMDT];
    UC_RDMA_WRITE_ONLY = 0x2A, Uc, Write, Only, true, [RETH];
    UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2B, Uc, Write, Only, true, [RETH IMMDT];
    UD_SEND_ONLY = 0x64, Ud, Send, Only, true, [DETH];
    UD_SEND_ONLY_WITH_IMMEDIATE = 0x65, Ud, Send, Only, true, [DETH IMMDT];
    CNP = 0x81, Cnp, Cnp, Only, false, [CNP_PAD];
}

/// The whole table, indexed by opcode byte.
pub static TABLE: [Option<OpInfo>; 256] = {
    let mut t = [None; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = lookup(i as u8);
        i += 1;
    }
    t
};

impl Opcode {
    /// The table row, or `None` for an opcode ferrite does not know.
    #[inline]
    pub fn info(self) -> Option<&'static OpInfo> {
        TABLE[usize::from(self.0)].as_ref()
    }
    /// The spec name, or `"UNKNOWN"`.
    pub fn name(self) -> &'static str {
        self.info().map_or("UNKNOWN", |i| i.name)
    }
    /// Every opcode in the table.
    pub fn all() -> impl Iterator<Item = (Opcode, &'static OpInfo)> {
        TABLE.iter().enumerate().filter_map(|(i, r)| r.as_ref().map(|r| (Opcode(i as u8), r)))
    }
}

impl fmt::Debug for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(0x{:02x})", self.name(), self.0)
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The predicates the engine branches on, for one opcode of each kind and position.
    #[test]
    fn predicates() {
        let i = |o: Opcode| o.info().unwrap();
        let s = i(Opcode::SEND_MIDDLE);
        assert!(s.is_request() && !s.is_response() && !s.is_atomic());
        assert!(!s.starts_message() && !s.ends_message() && s.payload_is_full_pmtu());
        assert!(i(Opcode::SEND_FIRST).payload_is_full_pmtu() && !i(Opcode::SEND_LAST).payload_is_full_pmtu());
        assert!(!i(Opcode::SEND_ONLY).payload_is_full_pmtu());
        let f = i(Opcode::FETCH_ADD);
        assert!(f.is_request() && f.is_atomic() && f.starts_message() && f.ends_message());
        let a = i(Opcode::ACKNOWLEDGE);
        assert!(a.is_response() && !a.is_request() && !a.is_atomic());
        assert_eq!(Opcode::SEND_ONLY.name(), "SEND_ONLY");
        assert_eq!(format!("{}", Opcode::SEND_ONLY), "SEND_ONLY");
        assert!(format!("{:?}", Opcode::SEND_ONLY).contains("SEND_ONLY"));
    }

    #[test]
    fn table_rows_match_the_spec() {
        let w = Opcode::RDMA_WRITE_ONLY_WITH_IMMEDIATE.info().unwrap();
        assert_eq!(w.ext_len(), 20);
        assert!(w.is_request() && w.ends_message() && w.starts_message());
        let r = Opcode::RDMA_READ_RESPONSE_MIDDLE.info().unwrap();
        assert!(!r.has(hdr::AETH) && r.payload_is_full_pmtu() && r.is_response());
        assert_eq!(Opcode::ATOMIC_ACKNOWLEDGE.info().unwrap().ext_len(), 12);
        assert_eq!(Opcode::COMPARE_SWAP.info().unwrap().ext_len(), 28);
        assert_eq!(Opcode::CNP.info().unwrap().ext_len(), 16);
        assert_eq!(Opcode::UD_SEND_ONLY.info().unwrap().transport, Transport::Ud);
        assert!(Opcode(0x15).info().is_none());
        assert!(Opcode(0x80).info().is_none());
        assert_eq!(Opcode::all().filter(|(_, i)| i.transport == Transport::Rc).count(), 23);
    }

    #[test]
    fn transport_bits_agree_with_opcode_values() {
        for (op, info) in Opcode::all() {
            let expect = match op.0 >> 5 {
                0 => Transport::Rc,
                1 => Transport::Uc,
                3 => Transport::Ud,
                4 => Transport::Cnp,
                _ => panic!("{op:?} has an unexpected transport"),
            };
            assert_eq!(info.transport, expect, "{op:?}");
        }
    }
}
