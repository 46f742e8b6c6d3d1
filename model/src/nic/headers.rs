//! The headers of a packet a QP sends to its peer, a pure function of the port's MAC, the QP's source GID
//! and its address vector: what the RTL's `TxHeaders` computes from a `qp_attr` record and a GID entry.
//! IPv4 when both GIDs are IPv4-mapped (DF, identification 0: RFC 6864, an atomic datagram's is never
//! used), IPv6 otherwise; a hop limit of 0 means `DEFAULT_HOP_LIMIT`.

use super::qp::Attrs;
use wire::contract::verbs::DEFAULT_HOP_LIMIT;
use wire::eth::EthernetRepr;
use wire::ipv4::Ipv4Repr;
use wire::ipv6::{gid_to_ipv4, Ipv6Repr};
use wire::{BthRepr, ExtHeaders, IpRepr, Opcode, Psn, RoceHeaders};

/// Headers for `opcode` at `psn` from a port with MAC `mac` whose GID at the QP's `sgid_index` is `sgid`;
/// `None` when that GID is not (or no longer) set.
pub fn headers(
    mac: [u8; 6],
    sgid: Option<[u8; 16]>,
    a: &Attrs,
    opcode: Opcode,
    psn: Psn,
    ack_req: bool,
) -> Option<RoceHeaders> {
    let sgid = sgid?;
    let ttl = if a.hop_limit == 0 { DEFAULT_HOP_LIMIT } else { a.hop_limit };
    let ip = match (gid_to_ipv4(&sgid), gid_to_ipv4(&a.dgid)) {
        (Some(src), Some(dst)) => {
            IpRepr::V4(Ipv4Repr { src, dst, tos: a.traffic_class, ttl, ident: 0, payload_len: 0 })
        }
        _ => IpRepr::V6(Ipv6Repr {
            src: sgid,
            dst: a.dgid,
            traffic_class: a.traffic_class,
            flow_label: a.flow_label,
            hop_limit: ttl,
            payload_len: 0,
        }),
    };
    Some(RoceHeaders {
        eth: EthernetRepr { dst: a.dmac, src: mac, vlan: a.vlan, ethertype: 0 },
        ip,
        udp_src_port: a.udp_sport,
        bth: BthRepr { opcode, dest_qp: a.dest_qpn, psn, ack_req, ..Default::default() },
        ext: ExtHeaders::default(),
    })
}
