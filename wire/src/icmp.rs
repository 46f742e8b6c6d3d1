//! ICMP echo over IPv4 (RFC 792): the NIC answers echo requests to its own addresses itself, so `ping`
//! reaches it; every other ICMP message goes to the host.

use crate::eth::{ethertype, EthernetFrame, EthernetRepr, MacAddr};
use crate::ipv4::{self, Ipv4Addr, Ipv4Packet, Ipv4Repr};

/// ICMP type of an echo reply.
pub const ECHO_REPLY: u8 = 0;
/// ICMP type of an echo request.
pub const ECHO_REQUEST: u8 = 8;
/// TTL of the replies the NIC sends.
pub const REPLY_TTL: u8 = 64;

crate::header! {
    /// The ICMP echo header; the data follow it.
    IcmpEcho / IcmpEchoRepr, len = 8;
    icmp_type / set_icmp_type: u8 [0..1],
    code / set_code: u8 [1..2],
    checksum / set_checksum: u16 [2..4],
    ident / set_ident: u16 [4..6],
    seq / set_seq: u16 [6..8],
}

/// An ICMP echo request in an Ethernet frame: where it is and whom it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoRequest {
    /// The destination IPv4 address.
    pub dst: Ipv4Addr,
    /// Offset of the IPv4 header in the frame.
    ip_off: usize,
    /// Length of the IPv4 datagram (from its total length; Ethernet padding excluded).
    ip_len: usize,
}

/// An ICMP echo request with a valid IPv4 header (no options, not a fragment) and a valid ICMP checksum;
/// `None` for anything else.
pub fn parse_echo_request(frame: &[u8]) -> Option<EchoRequest> {
    let f = EthernetFrame::new_checked(frame).ok()?;
    if f.ethertype() != ethertype::IPV4 {
        return None;
    }
    let ip_off = f.header_len();
    let ip = Ipv4Packet::new_checked(f.payload()).ok()?;
    let ip_len = usize::from(ip.total_len());
    let ok = ip.version() == 4
        && ip.header_len() == ipv4::HEADER_LEN
        && ip.protocol() == ipv4::PROTO_ICMP
        && !ip.is_fragment()
        && ip.verify_checksum()
        && (ipv4::HEADER_LEN + IcmpEcho::<&[u8]>::LEN..=f.payload().len()).contains(&ip_len);
    if !ok {
        return None;
    }
    let icmp = &f.payload()[ipv4::HEADER_LEN..ip_len];
    let e = IcmpEcho::new_unchecked(icmp);
    (e.icmp_type() == ECHO_REQUEST && e.code() == 0 && ipv4::checksum(icmp) == 0).then_some(EchoRequest {
        dst: ip.dst(),
        ip_off,
        ip_len,
    })
}

/// The echo request `ping` sends from `src` (its MAC and IPv4 address) to `dst`, with identifier `ident`,
/// sequence number `seq` and `data`, TTL 64, padded to the Ethernet minimum.
pub fn echo_request(src: (MacAddr, Ipv4Addr), dst: (MacAddr, Ipv4Addr), ident: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    let eth = EthernetRepr { dst: dst.0, src: src.0, vlan: None, ethertype: ethertype::IPV4 };
    let icmp_len = IcmpEcho::<&[u8]>::LEN + data.len();
    let ip = Ipv4Repr { src: src.1, dst: dst.1, tos: 0, ttl: 64, ident: seq, payload_len: icmp_len as u16 };
    let at = eth.header_len();
    let mut f = vec![0u8; (at + ipv4::HEADER_LEN + icmp_len).max(crate::eth::MIN_FRAME_LEN)];
    eth.emit(&mut f);
    ip.emit_protocol(&mut f[at..], ipv4::PROTO_ICMP);
    let icmp = &mut f[at + ipv4::HEADER_LEN..at + ipv4::HEADER_LEN + icmp_len];
    IcmpEchoRepr { icmp_type: ECHO_REQUEST, code: 0, checksum: 0, ident, seq }
        .emit(&mut IcmpEcho::new_unchecked(&mut *icmp));
    icmp[IcmpEcho::<&[u8]>::LEN..].copy_from_slice(data);
    let c = ipv4::checksum(icmp);
    IcmpEcho::new_unchecked(icmp).set_checksum(c);
    f
}

/// The echo reply to `req`, the request in `frame`: MAC and IP addresses swapped, TTL `REPLY_TTL`, the same
/// identifier, sequence number and data, both checksums recomputed, padded to the Ethernet minimum.
pub fn echo_reply(frame: &[u8], req: &EchoRequest) -> Vec<u8> {
    let mut f = frame[..req.ip_off + req.ip_len].to_vec();
    let (dst, src) = (f[0..6].to_vec(), f[6..12].to_vec());
    f[0..6].copy_from_slice(&src);
    f[6..12].copy_from_slice(&dst);
    let ip = &mut f[req.ip_off..];
    let (ip_src, ip_dst) = (ip[ipv4::field::SRC].to_vec(), ip[ipv4::field::DST].to_vec());
    ip[ipv4::field::SRC].copy_from_slice(&ip_dst);
    ip[ipv4::field::DST].copy_from_slice(&ip_src);
    ip[ipv4::field::TTL] = REPLY_TTL;
    ip[ipv4::field::CHECKSUM].fill(0);
    let c = ipv4::checksum(&ip[..ipv4::HEADER_LEN]);
    ip[ipv4::field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    let icmp = &mut ip[ipv4::HEADER_LEN..];
    let mut e = IcmpEcho::new_unchecked(&mut *icmp);
    e.set_icmp_type(ECHO_REPLY);
    e.set_checksum(0);
    let c = ipv4::checksum(icmp);
    IcmpEcho::new_unchecked(icmp).set_checksum(c);
    f.resize(f.len().max(crate::eth::MIN_FRAME_LEN), 0);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ping -c 1 -s 8 10.0.0.1` from 10.0.0.2 as Linux sends it (identifier 0x1c2b, sequence 1).
    fn request() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 0x52, 0x54, 0, 0x12, 0x34, 0x56, 0x08, 0x00];
        f.extend([0x45, 0, 0, 36, 0x5c, 0x11, 0x40, 0, 64, 1, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1]);
        f.extend([8, 0, 0, 0, 0x1c, 0x2b, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8]);
        let c = ipv4::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        let c = ipv4::checksum(&f[34..]);
        f[36..38].copy_from_slice(&c.to_be_bytes());
        f.resize(60, 0); // Ethernet padding: not part of the datagram
        f
    }

    /// The request built here is Linux's, byte for byte (but the IPv4 identification, ours the sequence number).
    #[test]
    fn a_request_as_ping_sends_it() {
        let mut want = request();
        let f = echo_request(
            ([0x52, 0x54, 0, 0x12, 0x34, 0x56], [10, 0, 0, 2]),
            ([2, 0, 0, 0, 0, 1], [10, 0, 0, 1]),
            0x1c2b,
            1,
            &[1, 2, 3, 4, 5, 6, 7, 8],
        );
        want[18..20].copy_from_slice(&[0, 1]);
        want[24..26].fill(0);
        let c = ipv4::checksum(&want[14..34]);
        want[24..26].copy_from_slice(&c.to_be_bytes());
        assert_eq!(f, want);
        assert!(parse_echo_request(&f).is_some());
    }

    #[test]
    fn a_request_and_its_reply() {
        let f = request();
        let req = parse_echo_request(&f).unwrap();
        assert_eq!(req.dst, [10, 0, 0, 1]);
        let r = echo_reply(&f, &req);
        assert_eq!(r.len(), 60);
        assert_eq!(&r[..12], &[0x52, 0x54, 0, 0x12, 0x34, 0x56, 2, 0, 0, 0, 0, 1]);
        let ip = Ipv4Packet::new_checked(&r[14..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!((ip.src(), ip.dst(), ip.ttl(), ip.total_len()), ([10, 0, 0, 1], [10, 0, 0, 2], 64, 36));
        let icmp = &r[34..50];
        assert_eq!(ipv4::checksum(icmp), 0, "ICMP checksum");
        let e = IcmpEchoRepr::from_bytes(icmp).unwrap();
        assert_eq!((e.icmp_type, e.code, e.ident, e.seq), (ECHO_REPLY, 0, 0x1c2b, 1));
        assert_eq!(&icmp[8..], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert!(parse_echo_request(&r).is_none(), "a reply is not a request");
    }

    #[test]
    fn damaged_or_other_messages_are_not_echo_requests() {
        let good = request();
        let cases: [(usize, u8, &str); 5] = [
            (23, 17, "UDP, not ICMP"),
            (34, 13, "timestamp request"),
            (40, 0xFF, "bad ICMP checksum"),
            (26, 11, "bad IPv4 checksum"),
            (20, 0x20, "a fragment"),
        ];
        for (at, v, what) in cases {
            let mut f = good.clone();
            f[at] = v;
            assert!(parse_echo_request(&f).is_none(), "{what}");
        }
        assert!(parse_echo_request(&good[..40]).is_none(), "truncated");
        // An IP length that leaves no room for the ICMP header (and its checksum fixed up).
        for ip_len in [20u16, 27] {
            let mut f = good.clone();
            f[16..18].copy_from_slice(&ip_len.to_be_bytes());
            f[24..26].fill(0);
            let c = ipv4::checksum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
            assert!(parse_echo_request(&f).is_none(), "IP length {ip_len}");
        }
    }
}
