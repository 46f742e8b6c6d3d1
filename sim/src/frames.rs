//! Test frames and what `wire` says about them: random RoCEv2 frames for any opcode, IPv4 or IPv6, with or
//! without VLAN, any payload length (so every pad count), then optional damage; and the metadata record
//! `wire::parse` implies, packed in the RTL's layout.

use hdl::rx::meta::{self, Meta, Verdict};
use model::rng::Rng;
use wire::eth::{EthernetRepr, VlanTag};
use wire::ext::*;
use wire::ipv4::Ipv4Repr;
use wire::ipv6::Ipv6Repr;
use wire::{BthRepr, DropReason, ExtHeaders, IpRepr, Opcode, Psn, RoceHeaders};

/// Damage applied to a well-formed frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    None,
    /// Keep only this fraction (per mille) of the frame.
    Truncate(u16),
    /// Flip one bit, anywhere (per mille position, bit).
    Flip(u16, u8),
    /// Flip one bit in the first 80 bytes (the headers).
    FlipHeader(u8, u8),
    /// Append Ethernet padding bytes (the IP length stays authoritative).
    Pad(u8),
    /// Pad with zeros to within 8 bytes either side of `wire::MAX_FRAME_LEN` (+ `n % 16` - 8).
    Oversize(u8),
}

/// The fields of a TX record that make a packet's headers: every one the TX pipeline reads for them (what
/// `TxHeaders` sets; the extended headers and the payload aside).
pub const HEADER_FIELDS: [&str; 21] = [
    "eth_dst",
    "eth_src",
    "vlan",
    "vlan_tci",
    "ipv6",
    "src_gid",
    "dst_gid",
    "tclass",
    "hop_limit",
    "ip_ident",
    "flow_label",
    "udp_src_port",
    "opcode",
    "solicited",
    "mig_req",
    "pkey",
    "fecn",
    "becn",
    "dest_qp",
    "ack_req",
    "psn",
];

/// Every opcode in the table.
pub fn opcodes() -> Vec<Opcode> {
    (0..=255u8).map(Opcode).filter(|o| o.info().is_some()).collect()
}

/// A well-formed frame: headers from `rng`, `payload_len` random payload bytes.
pub fn frame(rng: &mut Rng, op: Opcode, ipv6: bool, vlan: bool, payload_len: usize) -> Vec<u8> {
    let info = op.info().expect("opcode from the table");
    let mut a = [0u8; 6];
    let mut b = [0u8; 6];
    rng.fill(&mut a);
    rng.fill(&mut b);
    let ip = if ipv6 {
        let (mut s, mut d) = ([0u8; 16], [0u8; 16]);
        rng.fill(&mut s);
        rng.fill(&mut d);
        IpRepr::V6(Ipv6Repr {
            src: s,
            dst: d,
            traffic_class: rng.next_u64() as u8,
            flow_label: rng.next_u64() as u32 & 0xF_FFFF,
            hop_limit: rng.next_u64() as u8,
            payload_len: 0,
        })
    } else {
        let r = rng.next_u64();
        IpRepr::V4(Ipv4Repr {
            src: (r as u32).to_be_bytes(),
            dst: ((r >> 32) as u32).to_be_bytes(),
            tos: rng.next_u64() as u8,
            ttl: rng.next_u64() as u8,
            ident: rng.next_u64() as u16,
            payload_len: 0,
        })
    };
    let r = rng.next_u64();
    let bth = BthRepr {
        opcode: op,
        solicited: r & 1 != 0,
        mig_req: r & 2 != 0,
        pad_cnt: 0,
        pkey: (r >> 8) as u16,
        fecn: r & 4 != 0,
        becn: r & 8 != 0,
        dest_qp: (r >> 24) as u32 & 0xFF_FFFF,
        ack_req: r & 16 != 0,
        psn: Psn::new((r >> 40) as u32),
    };
    let mut e = ExtHeaders::default();
    let mut n = || rng.next_u64();
    use wire::opcode::hdr;
    if info.has(hdr::DETH) {
        e.deth = Some(DethRepr { qkey: n() as u32, src_qp: n() as u32 & 0xFF_FFFF });
    }
    if info.has(hdr::RETH) {
        e.reth = Some(RethRepr { va: n(), rkey: n() as u32, dma_len: n() as u32 });
    }
    if info.has(hdr::ATOMIC_ETH) {
        e.atomic_eth = Some(AtomicEthRepr { va: n(), rkey: n() as u32, swap_add: n(), compare: n() });
    }
    if info.has(hdr::AETH) {
        e.aeth = Some(AethRepr { syndrome: n() as u8, msn: n() as u32 & 0xFF_FFFF });
    }
    if info.has(hdr::ATOMIC_ACK_ETH) {
        e.atomic_ack_eth = Some(AtomicAckEthRepr { orig: n() });
    }
    if info.has(hdr::IMMDT) {
        e.immdt = Some(n() as u32);
    }
    if info.has(hdr::IETH) {
        e.ieth = Some(n() as u32);
    }
    let vlan = vlan.then(|| VlanTag::from_tci(n() as u16));
    let hdrs = RoceHeaders {
        eth: EthernetRepr { dst: a, src: b, vlan, ethertype: 0 },
        ip,
        udp_src_port: n() as u16,
        bth,
        ext: e,
    };
    let mut payload = vec![0u8; if info.has_payload { payload_len } else { 0 }];
    rng.fill(&mut payload);
    hdrs.emit(&payload)
}

/// Applies `d` to `f`.
pub fn damage(mut f: Vec<u8>, d: Damage) -> Vec<u8> {
    match d {
        Damage::None => {}
        Damage::Truncate(pm) => f.truncate(f.len() * usize::from(pm) / 1000),
        Damage::Flip(pm, bit) => {
            let i = (f.len() * usize::from(pm) / 1000).min(f.len().saturating_sub(1));
            if let Some(x) = f.get_mut(i) {
                *x ^= 1 << (bit & 7);
            }
        }
        Damage::FlipHeader(i, bit) => {
            if let Some(x) = f.get_mut(usize::from(i) % 80) {
                *x ^= 1 << (bit & 7);
            }
        }
        Damage::Pad(n) => f.extend(std::iter::repeat_n(0u8, usize::from(n % 32))),
        Damage::Oversize(n) => f.resize(f.len().max(wire::MAX_FRAME_LEN + usize::from(n % 16) - 8), 0),
    }
    f
}

/// `wire::parse`'s verdict as (verdict, layer code, IP reject code).
pub fn verdict(r: &Result<wire::RocePacket<'_>, DropReason>) -> (Verdict, u8, u8) {
    meta::codes(r.as_ref().err())
}

/// The metadata record of a packet (`icrc` left 0: the decoder does not see the trailer).
pub fn meta_of(frame: &[u8], p: &wire::RocePacket<'_>) -> Meta {
    let mut m = Meta::default();
    let h = &p.hdr;
    let be = |b: &[u8]| b.iter().fold(0u128, |a, &x| a << 8 | u128::from(x));
    m.set("eth_dst", be(&h.eth.dst));
    m.set("eth_src", be(&h.eth.src));
    m.set("vlan", u128::from(h.eth.vlan.is_some()));
    m.set("vlan_tci", u128::from(h.eth.vlan.map_or(0, |t| t.tci())));
    m.set("ethertype", u128::from(h.eth.ethertype));
    m.set("ipv6", u128::from(matches!(h.ip, IpRepr::V6(_))));
    m.set("src_gid", be(&h.ip.src_gid()));
    m.set("dst_gid", be(&h.ip.dst_gid()));
    m.set("tclass", u128::from(h.ip.tclass()));
    let (hop, ident, flow, plen) = match h.ip {
        IpRepr::V4(r) => (r.ttl, r.ident, 0, r.payload_len),
        IpRepr::V6(r) => (r.hop_limit, 0, r.flow_label, r.payload_len),
    };
    m.set("hop_limit", u128::from(hop));
    m.set("ip_ident", u128::from(ident));
    m.set("flow_label", u128::from(flow));
    m.set("ip_payload_len", u128::from(plen));
    m.set("udp_src_port", u128::from(h.udp_src_port));
    let b = &h.bth;
    m.set("opcode", u128::from(b.opcode.0));
    m.set("solicited", u128::from(b.solicited));
    m.set("mig_req", u128::from(b.mig_req));
    m.set("pad_cnt", u128::from(b.pad_cnt));
    m.set("pkey", u128::from(b.pkey));
    m.set("fecn", u128::from(b.fecn));
    m.set("becn", u128::from(b.becn));
    m.set("dest_qp", u128::from(b.dest_qp));
    m.set("ack_req", u128::from(b.ack_req));
    m.set("psn", u128::from(b.psn.value()));
    let e = &h.ext;
    let raw: [(&str, Option<Vec<u8>>); 7] = [
        ("deth", e.deth.map(|x| x.to_bytes().to_vec())),
        ("reth", e.reth.map(|x| x.to_bytes().to_vec())),
        ("atomic_eth", e.atomic_eth.map(|x| x.to_bytes().to_vec())),
        ("aeth", e.aeth.map(|x| x.to_bytes().to_vec())),
        ("atomic_ack_eth", e.atomic_ack_eth.map(|x| x.to_bytes().to_vec())),
        ("immdt", e.immdt.map(|x| x.to_be_bytes().to_vec())),
        ("ieth", e.ieth.map(|x| x.to_be_bytes().to_vec())),
    ];
    for (name, bytes) in raw {
        if let Some(bytes) = bytes {
            m.set(&format!("has_{name}"), 1);
            m.set_bytes(name, &bytes);
        }
    }
    m.set("payload_off", (p.payload.as_ptr() as usize - frame.as_ptr() as usize) as u128);
    m.set("payload_len", p.payload.len() as u128);
    m
}
