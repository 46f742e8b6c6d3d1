//! Base Transport Header (12 bytes).

use crate::field::{get_be, set_be};
use crate::{Error, Opcode, Psn};

/// BTH length in bytes.
pub const HEADER_LEN: usize = 12;
/// Default partition key.
pub const DEFAULT_PKEY: u16 = 0xFFFF;

/// P_Key matching (IBTA 10.9.3): the low 15 bits (the partition) are equal and not zero, and at least one
/// of the two keys has the membership bit (bit 15) set, so two limited members cannot talk.
pub fn pkey_match(a: u16, b: u16) -> bool {
    let (pa, pb) = (a & 0x7FFF, b & 0x7FFF);
    pa != 0 && pa == pb && (a | b) & 0x8000 != 0
}

/// Byte offsets of the fields (the RTL generator reads them too).
pub mod field {
    use core::ops::Range;
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1; // SE(7) M(6) PadCnt(5:4) TVer(3:0)
    pub const PKEY: Range<usize> = 2..4;
    pub const CC: usize = 4; // FECN(7) BECN(6) Resv6(5:0)
    pub const DEST_QP: Range<usize> = 5..8;
    pub const ACK: usize = 8; // AckReq(7) Resv7(6:0)
    pub const PSN: Range<usize> = 9..12;
}
/// Byte offset of the FECN/BECN/Resv6 byte (masked to 1s in the ICRC).
pub const CC_BYTE: usize = field::CC;

/// Zero-copy BTH view.
#[derive(Debug, Clone, Copy)]
pub struct Bth<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Bth<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let have = buffer.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::Truncated { layer: "BTH", need: HEADER_LEN, have });
        }
        Ok(Self { buffer })
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn opcode(&self) -> Opcode {
        Opcode(self.b()[field::OPCODE])
    }
    pub fn solicited(&self) -> bool {
        self.b()[field::FLAGS] & 0x80 != 0
    }
    pub fn mig_req(&self) -> bool {
        self.b()[field::FLAGS] & 0x40 != 0
    }
    pub fn pad_cnt(&self) -> u8 {
        (self.b()[field::FLAGS] >> 4) & 3
    }
    pub fn tver(&self) -> u8 {
        self.b()[field::FLAGS] & 0xF
    }
    pub fn pkey(&self) -> u16 {
        get_be(&self.b()[field::PKEY]) as u16
    }
    pub fn fecn(&self) -> bool {
        self.b()[field::CC] & 0x80 != 0
    }
    pub fn becn(&self) -> bool {
        self.b()[field::CC] & 0x40 != 0
    }
    pub fn dest_qp(&self) -> u32 {
        get_be(&self.b()[field::DEST_QP]) as u32
    }
    pub fn ack_req(&self) -> bool {
        self.b()[field::ACK] & 0x80 != 0
    }
    pub fn psn(&self) -> Psn {
        Psn::new(get_be(&self.b()[field::PSN]) as u32)
    }
}

/// Owned BTH.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BthRepr {
    pub opcode: Opcode,
    pub solicited: bool,
    pub mig_req: bool,
    pub pad_cnt: u8,
    pub pkey: u16,
    pub fecn: bool,
    pub becn: bool,
    pub dest_qp: u32,
    pub ack_req: bool,
    pub psn: Psn,
}

impl Default for BthRepr {
    fn default() -> Self {
        Self {
            opcode: Opcode(0),
            solicited: false,
            mig_req: false,
            pad_cnt: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp: 0,
            ack_req: false,
            psn: Psn::new(0),
        }
    }
}

impl BthRepr {
    /// Reads a BTH; only TVer (must be 0) is validated here, opcodes are checked against the table by the caller.
    pub fn parse<T: AsRef<[u8]>>(b: &Bth<T>) -> Result<Self, Error> {
        if b.tver() != 0 {
            return Err(Error::malformed("BTH", "transport header version is not 0"));
        }
        Ok(Self {
            opcode: b.opcode(),
            solicited: b.solicited(),
            mig_req: b.mig_req(),
            pad_cnt: b.pad_cnt(),
            pkey: b.pkey(),
            fecn: b.fecn(),
            becn: b.becn(),
            dest_qp: b.dest_qp(),
            ack_req: b.ack_req(),
            psn: b.psn(),
        })
    }

    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b[field::OPCODE] = self.opcode.0;
        b[field::FLAGS] = (u8::from(self.solicited) << 7) | (u8::from(self.mig_req) << 6) | ((self.pad_cnt & 3) << 4);
        set_be(&mut b[field::PKEY], u64::from(self.pkey));
        b[field::CC] = (u8::from(self.fecn) << 7) | (u8::from(self.becn) << 6);
        set_be(&mut b[field::DEST_QP], u64::from(self.dest_qp & 0xFF_FFFF));
        b[field::ACK] = u8::from(self.ack_req) << 7;
        set_be(&mut b[field::PSN], u64::from(self.psn.value()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transport header version other than 0 is rejected.
    #[test]
    fn tver_must_be_zero() {
        let mut b = [0u8; HEADER_LEN];
        BthRepr { opcode: crate::Opcode::SEND_ONLY, ..Default::default() }.emit(&mut b);
        assert!(BthRepr::parse(&Bth::new_unchecked(&b[..])).is_ok());
        b[field::FLAGS] |= 1;
        assert_eq!(Bth::new_unchecked(&b[..]).tver(), 1);
        assert!(BthRepr::parse(&Bth::new_unchecked(&b[..])).is_err());
    }

    // BTH of ICRC vector V2: WRITE_ONLY, PadCnt 3, QP 0xabcd, AckReq, PSN 0x123456.
    const V2: [u8; 12] = [0x0a, 0x30, 0xff, 0xff, 0x00, 0x00, 0xab, 0xcd, 0x80, 0x12, 0x34, 0x56];

    #[test]
    fn both_ways() {
        let r = BthRepr::parse(&Bth::new_checked(&V2[..]).unwrap()).unwrap();
        assert_eq!(r.opcode, Opcode::RDMA_WRITE_ONLY);
        assert_eq!((r.pad_cnt, r.pkey, r.dest_qp, r.ack_req, r.psn.value()), (3, 0xFFFF, 0xabcd, true, 0x123456));
        assert!(!r.solicited && !r.fecn && !r.becn);
        let mut out = [0u8; 12];
        r.emit(&mut out);
        assert_eq!(out, V2);
        assert!(Bth::new_checked(&V2[..11]).is_err());
    }

    #[test]
    fn cnp_flags() {
        let r = BthRepr { opcode: Opcode::CNP, becn: true, dest_qp: 0x22, ..Default::default() };
        let mut out = [0u8; 12];
        r.emit(&mut out);
        assert_eq!(out, [0x81, 0, 0xff, 0xff, 0x40, 0, 0, 0x22, 0, 0, 0, 0]);
    }

    #[test]
    fn pkey_matching() {
        assert!(pkey_match(0xFFFF, DEFAULT_PKEY));
        assert!(pkey_match(0x7FFF, DEFAULT_PKEY), "a limited member talks to a full one");
        assert!(!pkey_match(0x7FFF, 0x7FFF), "two limited members do not");
        assert!(!pkey_match(0xFFFE, DEFAULT_PKEY), "another partition");
        assert!(!pkey_match(0x8000, 0x8000), "partition 0 is invalid");
    }
}
