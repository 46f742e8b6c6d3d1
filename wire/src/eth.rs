//! Ethernet II with an optional 802.1Q tag.

use crate::Error;

/// A 48-bit MAC address.
pub type MacAddr = [u8; 6];

/// EtherType values the NIC knows.
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    pub const IPV6: u16 = 0x86DD;
    pub const VLAN: u16 = 0x8100;
    /// IEEE 802 local experimental EtherType 1: a frame no protocol claims (tests of the raw path use it).
    pub const EXPERIMENTAL: u16 = 0x88B5;
}

/// Byte offsets of the fields (the RTL generator reads them too).
pub mod field {
    use core::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const TYPE: Range<usize> = 12..14;
    pub const VLAN_TCI: Range<usize> = 14..16;
    pub const VLAN_TYPE: Range<usize> = 16..18;
}

/// Untagged header length.
pub const HEADER_LEN: usize = 14;
/// Length of an 802.1Q tag.
pub const VLAN_LEN: usize = 4;
/// The shortest Ethernet frame without its FCS: shorter ones are padded with zeros.
pub const MIN_FRAME_LEN: usize = 60;

/// Zero-copy view of an Ethernet frame (no FCS).
#[derive(Debug, Clone, Copy)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Checks that the whole header, including a VLAN tag if present, fits.
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let frame = Self { buffer };
        let have = frame.buffer.as_ref().len();
        if have < HEADER_LEN {
            return Err(Error::Truncated { layer: "Ethernet", need: HEADER_LEN, have });
        }
        if have < frame.header_len() {
            return Err(Error::Truncated { layer: "802.1Q", need: frame.header_len(), have });
        }
        Ok(frame)
    }

    pub fn dst(&self) -> MacAddr {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        m
    }
    pub fn src(&self) -> MacAddr {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        m
    }
    /// The outer EtherType (0x8100 when tagged).
    pub fn outer_ethertype(&self) -> u16 {
        crate::field::get_be(&self.buffer.as_ref()[field::TYPE]) as u16
    }
    pub fn has_vlan(&self) -> bool {
        self.outer_ethertype() == ethertype::VLAN
    }
    /// The 802.1Q tag control information, if tagged.
    pub fn vlan_tci(&self) -> Option<u16> {
        self.has_vlan().then(|| crate::field::get_be(&self.buffer.as_ref()[field::VLAN_TCI]) as u16)
    }
    /// The EtherType of the payload (after the tag, if any).
    pub fn ethertype(&self) -> u16 {
        if self.has_vlan() {
            crate::field::get_be(&self.buffer.as_ref()[field::VLAN_TYPE]) as u16
        } else {
            self.outer_ethertype()
        }
    }
    pub fn header_len(&self) -> usize {
        if self.has_vlan() {
            HEADER_LEN + VLAN_LEN
        } else {
            HEADER_LEN
        }
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

/// An 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct VlanTag {
    /// Priority code point (3 bits): the PFC priority.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id (12 bits).
    pub vid: u16,
}

impl VlanTag {
    pub fn from_tci(tci: u16) -> Self {
        Self { pcp: (tci >> 13) as u8, dei: tci & 0x1000 != 0, vid: tci & 0x0FFF }
    }
    pub fn tci(&self) -> u16 {
        (u16::from(self.pcp & 7) << 13) | (u16::from(self.dei) << 12) | (self.vid & 0x0FFF)
    }
}

/// Owned Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct EthernetRepr {
    pub dst: MacAddr,
    pub src: MacAddr,
    pub vlan: Option<VlanTag>,
    /// EtherType of the payload.
    pub ethertype: u16,
}

impl EthernetRepr {
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Self {
        Self {
            dst: frame.dst(),
            src: frame.src(),
            vlan: frame.vlan_tci().map(VlanTag::from_tci),
            ethertype: frame.ethertype(),
        }
    }

    pub fn header_len(&self) -> usize {
        if self.vlan.is_some() {
            HEADER_LEN + VLAN_LEN
        } else {
            HEADER_LEN
        }
    }

    /// Writes the header into the front of `buf`, which must hold `header_len()` bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[field::DST].copy_from_slice(&self.dst);
        buf[field::SRC].copy_from_slice(&self.src);
        match self.vlan {
            Some(tag) => {
                crate::field::set_be(&mut buf[field::TYPE], u64::from(ethertype::VLAN));
                crate::field::set_be(&mut buf[field::VLAN_TCI], u64::from(tag.tci()));
                crate::field::set_be(&mut buf[field::VLAN_TYPE], u64::from(self.ethertype));
            }
            None => crate::field::set_be(&mut buf[field::TYPE], u64::from(self.ethertype)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header and nothing else is a frame; a byte short of it, or of its VLAN tag, is not.
    #[test]
    fn header_lengths_at_their_limits() {
        let mut f = [0u8; HEADER_LEN + VLAN_LEN];
        assert!(EthernetFrame::new_checked(&f[..HEADER_LEN]).is_ok());
        assert!(EthernetFrame::new_checked(&f[..HEADER_LEN - 1]).is_err());
        f[field::TYPE].copy_from_slice(&ethertype::VLAN.to_be_bytes());
        assert!(EthernetFrame::new_checked(&f[..]).is_ok());
        assert!(EthernetFrame::new_checked(&f[..HEADER_LEN + VLAN_LEN - 1]).is_err());
    }

    const TAGGED: [u8; 20] = [0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x81, 0x00, 0xA0, 0x64, 0x08, 0x00, 0xAA, 0xBB];

    #[test]
    fn parse_tagged() {
        let f = EthernetFrame::new_checked(&TAGGED[..]).unwrap();
        let r = EthernetRepr::parse(&f);
        assert_eq!(r.dst, [2, 0, 0, 0, 0, 2]);
        assert_eq!(r.src, [2, 0, 0, 0, 0, 1]);
        assert_eq!(r.vlan, Some(VlanTag { pcp: 5, dei: false, vid: 100 }));
        assert_eq!(r.ethertype, ethertype::IPV4);
        assert_eq!(f.payload(), &[0xAA, 0xBB]);
    }

    #[test]
    fn emit_tagged() {
        let r = EthernetRepr {
            dst: [2, 0, 0, 0, 0, 2],
            src: [2, 0, 0, 0, 0, 1],
            vlan: Some(VlanTag { pcp: 5, dei: false, vid: 100 }),
            ethertype: ethertype::IPV4,
        };
        let mut buf = [0u8; 18];
        r.emit(&mut buf);
        assert_eq!(buf[..], TAGGED[..18]);
    }

    #[test]
    fn truncated_tag_is_an_error() {
        assert!(matches!(EthernetFrame::new_checked(&TAGGED[..16]), Err(Error::Truncated { .. })));
        assert!(EthernetFrame::new_checked(&TAGGED[..10]).is_err());
    }
}
