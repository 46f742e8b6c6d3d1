//! ARP for IPv4 over Ethernet (RFC 826). The NIC answers requests for its own IPv4 addresses itself, so a
//! peer can reach it by IP with no host network stack involved; every other ARP frame goes to the host.

use crate::eth::{ethertype, EthernetFrame, EthernetRepr, MacAddr};
use crate::ipv4::Ipv4Addr;

/// `oper` of a request.
pub const REQUEST: u16 = 1;
/// `oper` of a reply.
pub const REPLY: u16 = 2;
/// Hardware type Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;

crate::header! {
    /// An ARP packet for IPv4 over Ethernet (hardware length 6, protocol length 4).
    ArpPacket / ArpFields, len = 28;
    htype / set_htype: u16 [0..2],
    ptype / set_ptype: u16 [2..4],
    hlen / set_hlen: u8 [4..5],
    plen / set_plen: u8 [5..6],
    oper / set_oper: u16 [6..8],
    sha / set_sha: u64 [8..14],
    spa / set_spa: u32 [14..18],
    tha / set_tha: u64 [18..24],
    tpa / set_tpa: u32 [24..28],
}

/// An IPv4-over-Ethernet ARP message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct ArpRepr {
    pub oper: u16,
    pub sha: MacAddr,
    pub spa: Ipv4Addr,
    pub tha: MacAddr,
    pub tpa: Ipv4Addr,
}

fn mac(v: u64) -> MacAddr {
    let b = v.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

fn mac_u64(m: &MacAddr) -> u64 {
    crate::field::get_be(m)
}

impl ArpRepr {
    pub const LEN: usize = ArpPacket::<&[u8]>::LEN;

    /// Parses an ARP message; `None` unless it is Ethernet/IPv4 with the usual lengths.
    pub fn parse(b: &[u8]) -> Option<Self> {
        let p = ArpPacket::new_checked(b).ok()?;
        let ipv4 = p.htype() == HTYPE_ETHERNET && p.ptype() == ethertype::IPV4 && p.hlen() == 6 && p.plen() == 4;
        ipv4.then(|| ArpRepr {
            oper: p.oper(),
            sha: mac(p.sha()),
            spa: p.spa().to_be_bytes(),
            tha: mac(p.tha()),
            tpa: p.tpa().to_be_bytes(),
        })
    }

    /// Writes the message into the front of `b` (at least `LEN` bytes).
    pub fn emit(&self, b: &mut [u8]) {
        let mut p = ArpPacket::new_unchecked(&mut b[..Self::LEN]);
        p.set_htype(HTYPE_ETHERNET);
        p.set_ptype(ethertype::IPV4);
        p.set_hlen(6);
        p.set_plen(4);
        p.set_oper(self.oper);
        p.set_sha(mac_u64(&self.sha));
        p.set_spa(u32::from_be_bytes(self.spa));
        p.set_tha(mac_u64(&self.tha));
        p.set_tpa(u32::from_be_bytes(self.tpa));
    }
}

/// The Ethernet header and ARP message of an ARP frame, or `None` for any other frame.
pub fn parse_frame(frame: &[u8]) -> Option<(EthernetRepr, ArpRepr)> {
    let f = EthernetFrame::new_checked(frame).ok()?;
    if f.ethertype() != ethertype::ARP {
        return None;
    }
    Some((EthernetRepr::parse(&f), ArpRepr::parse(f.payload())?))
}

/// A broadcast request from `sha` at `spa`: who has `tpa`? Padded to the 60-byte Ethernet minimum.
pub fn request_frame(sha: MacAddr, spa: Ipv4Addr, tpa: Ipv4Addr) -> Vec<u8> {
    let e = EthernetRepr { dst: [0xff; 6], src: sha, vlan: None, ethertype: ethertype::ARP };
    let req = ArpRepr { oper: REQUEST, sha, spa, tha: [0; 6], tpa };
    let mut f = vec![0u8; (e.header_len() + ArpRepr::LEN).max(crate::eth::MIN_FRAME_LEN)];
    e.emit(&mut f);
    req.emit(&mut f[e.header_len()..]);
    f
}

/// The reply the owner of `mac` sends to the request `req` (received with Ethernet header `eth`): addressed
/// to the requester, in the same VLAN, padded to the 60-byte Ethernet minimum.
pub fn reply_frame(eth: &EthernetRepr, req: &ArpRepr, mac: MacAddr) -> Vec<u8> {
    let e = EthernetRepr { dst: req.sha, src: mac, vlan: eth.vlan, ethertype: ethertype::ARP };
    let rep = ArpRepr { oper: REPLY, sha: mac, spa: req.tpa, tha: req.sha, tpa: req.spa };
    let mut f = vec![0u8; (e.header_len() + ArpRepr::LEN).max(crate::eth::MIN_FRAME_LEN)];
    e.emit(&mut f);
    rep.emit(&mut f[e.header_len()..]);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ARP request as Linux sends it (who-has 10.0.0.1 tell 10.0.0.2), byte for byte.
    const REQUEST_FRAME: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x08, 0x06, // Ethernet
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // htype, ptype, hlen, plen, oper
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 10, 0, 0, 2, // sender
        0, 0, 0, 0, 0, 0, 10, 0, 0, 1, // target
    ];

    #[test]
    fn a_request_is_what_linux_sends_padded() {
        let f = request_frame([0x52, 0x54, 0x00, 0x12, 0x34, 0x56], [10, 0, 0, 2], [10, 0, 0, 1]);
        assert_eq!(f.len(), 60);
        assert_eq!(&f[..42], &REQUEST_FRAME[..]);
        assert!(f[42..].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_request_and_its_reply() {
        let (eth, req) = parse_frame(&REQUEST_FRAME).unwrap();
        assert_eq!(
            req,
            ArpRepr {
                oper: REQUEST,
                sha: [0x52, 0x54, 0, 0x12, 0x34, 0x56],
                spa: [10, 0, 0, 2],
                tha: [0; 6],
                tpa: [10, 0, 0, 1]
            }
        );
        let me = [2, 0, 0, 0, 0, 1];
        let f = reply_frame(&eth, &req, me);
        assert_eq!(f.len(), 60);
        assert_eq!(&f[..14], &[0x52, 0x54, 0, 0x12, 0x34, 0x56, 2, 0, 0, 0, 0, 1, 0x08, 0x06]);
        let (_, rep) = parse_frame(&f).unwrap();
        assert_eq!(rep, ArpRepr { oper: REPLY, sha: me, spa: [10, 0, 0, 1], tha: req.sha, tpa: [10, 0, 0, 2] });
        assert!(f[42..].iter().all(|&b| b == 0), "zero padding");
    }

    #[test]
    fn other_frames_and_other_protocols_are_not_arp() {
        assert!(parse_frame(&REQUEST_FRAME[..41]).is_none(), "truncated");
        let mut f = REQUEST_FRAME;
        f[13] = 0x00;
        assert!(parse_frame(&f).is_none(), "IPv4 ethertype");
        let mut f = REQUEST_FRAME;
        f[17] = 0xDD; // ptype 0x08DD
        assert!(parse_frame(&f).is_none(), "not IPv4 over ARP");
        let mut f = REQUEST_FRAME;
        f[19] = 16;
        assert!(parse_frame(&f).is_none(), "protocol length 16");
    }
}
