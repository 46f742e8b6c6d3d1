//! A whole RoCEv2 frame: Ethernet [802.1Q] / IPv4 or IPv6 / UDP 4791 / BTH / extended headers / payload /
//! pad / ICRC. `parse` gives a verdict the NIC's receive path (model and RTL) must reproduce exactly:
//! either a packet or the one reason it is dropped.

use crate::eth::{ethertype, EthernetFrame, EthernetRepr};
use crate::ext::*;
use crate::icrc::{self, IpVersion, ICRC_LEN};
use crate::ipv4::{Ipv4Packet, Ipv4Repr};
use crate::ipv6::{Ipv6Addr, Ipv6Packet, Ipv6Repr};
use crate::opcode::{hdr, OpInfo};
use crate::udp::{UdpPacket, UdpRepr, ROCE_V2_PORT};
use crate::{bth, Bth, BthRepr};

/// IPv4 or IPv6 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpRepr {
    V4(Ipv4Repr),
    V6(Ipv6Repr),
}

impl IpRepr {
    pub fn version(&self) -> IpVersion {
        match self {
            IpRepr::V4(_) => IpVersion::V4,
            IpRepr::V6(_) => IpVersion::V6,
        }
    }
    /// DSCP and ECN byte (IPv4 TOS / IPv6 traffic class).
    pub fn tclass(&self) -> u8 {
        match self {
            IpRepr::V4(r) => r.tos,
            IpRepr::V6(r) => r.traffic_class,
        }
    }
    pub fn set_tclass(&mut self, t: u8) {
        match self {
            IpRepr::V4(r) => r.tos = t,
            IpRepr::V6(r) => r.traffic_class = t,
        }
    }
    pub fn ecn(&self) -> u8 {
        self.tclass() & 3
    }
    /// Source address as a GID (IPv4-mapped for IPv4).
    pub fn src_gid(&self) -> Ipv6Addr {
        match self {
            IpRepr::V4(r) => crate::ipv6::gid_from_ipv4(r.src),
            IpRepr::V6(r) => r.src,
        }
    }
    pub fn dst_gid(&self) -> Ipv6Addr {
        match self {
            IpRepr::V4(r) => crate::ipv6::gid_from_ipv4(r.dst),
            IpRepr::V6(r) => r.dst,
        }
    }
    fn payload_len(&self) -> u16 {
        match self {
            IpRepr::V4(r) => r.payload_len,
            IpRepr::V6(r) => r.payload_len,
        }
    }
    fn set_payload_len(&mut self, n: u16) {
        match self {
            IpRepr::V4(r) => r.payload_len = n,
            IpRepr::V6(r) => r.payload_len = n,
        }
    }
    fn emit(&self, buf: &mut [u8]) {
        match self {
            IpRepr::V4(r) => r.emit(buf),
            IpRepr::V6(r) => r.emit(buf),
        }
    }
}

/// The extended headers a packet carries; which ones are present follows from the opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct ExtHeaders {
    pub deth: Option<DethRepr>,
    pub reth: Option<RethRepr>,
    pub atomic_eth: Option<AtomicEthRepr>,
    pub aeth: Option<AethRepr>,
    pub atomic_ack_eth: Option<AtomicAckEthRepr>,
    pub immdt: Option<u32>,
    pub ieth: Option<u32>,
}

impl ExtHeaders {
    /// Parses the headers `info` says are present from the front of `b` (which must hold `info.ext_len()`).
    fn parse(info: &OpInfo, mut b: &[u8]) -> Self {
        let mut e = ExtHeaders::default();
        for (bit, len) in hdr::ORDER {
            if !info.has(bit) {
                continue;
            }
            let (h, rest) = b.split_at(len);
            match bit {
                hdr::DETH => e.deth = Some(DethRepr::parse(&Deth::new_unchecked(h))),
                hdr::RETH => e.reth = Some(RethRepr::parse(&Reth::new_unchecked(h))),
                hdr::ATOMIC_ETH => e.atomic_eth = Some(AtomicEthRepr::parse(&AtomicEth::new_unchecked(h))),
                hdr::AETH => e.aeth = Some(AethRepr::parse(&Aeth::new_unchecked(h))),
                hdr::ATOMIC_ACK_ETH => {
                    e.atomic_ack_eth = Some(AtomicAckEthRepr::parse(&AtomicAckEth::new_unchecked(h)))
                }
                hdr::IMMDT => e.immdt = Some(ImmDt::new_unchecked(h).imm()),
                hdr::IETH => e.ieth = Some(Ieth::new_unchecked(h).rkey()),
                _ => {} // CNP body: reserved bytes, nothing to keep.
            }
            b = rest;
        }
        e
    }

    /// The `hdr::*` bits of the headers that are present (`CNP_PAD` carries nothing and is never set).
    pub fn present(&self) -> u16 {
        let bits = [
            (hdr::DETH, self.deth.is_some()),
            (hdr::RETH, self.reth.is_some()),
            (hdr::ATOMIC_ETH, self.atomic_eth.is_some()),
            (hdr::AETH, self.aeth.is_some()),
            (hdr::ATOMIC_ACK_ETH, self.atomic_ack_eth.is_some()),
            (hdr::IMMDT, self.immdt.is_some()),
            (hdr::IETH, self.ieth.is_some()),
        ];
        bits.iter().filter(|(_, on)| *on).fold(0, |acc, (bit, _)| acc | bit)
    }

    /// Writes the headers `info` says are present; callers check `present()` against `info` first.
    fn emit(&self, info: &OpInfo, mut b: &mut [u8]) {
        for (bit, len) in hdr::ORDER {
            if !info.has(bit) {
                continue;
            }
            let (h, rest) = core::mem::take(&mut b).split_at_mut(len);
            h.fill(0);
            match bit {
                hdr::DETH => self.deth.unwrap_or_default().emit(&mut Deth::new_unchecked(h)),
                hdr::RETH => self.reth.unwrap_or_default().emit(&mut Reth::new_unchecked(h)),
                hdr::ATOMIC_ETH => self.atomic_eth.unwrap_or_default().emit(&mut AtomicEth::new_unchecked(h)),
                hdr::AETH => self.aeth.unwrap_or_default().emit(&mut Aeth::new_unchecked(h)),
                hdr::ATOMIC_ACK_ETH => {
                    self.atomic_ack_eth.unwrap_or_default().emit(&mut AtomicAckEth::new_unchecked(h))
                }
                hdr::IMMDT => ImmDt::new_unchecked(h).set_imm(self.immdt.unwrap_or(0)),
                hdr::IETH => Ieth::new_unchecked(h).set_rkey(self.ieth.unwrap_or(0)),
                _ => {}
            }
            b = rest;
        }
    }
}

/// Every header of a RoCEv2 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RoceHeaders {
    pub eth: EthernetRepr,
    pub ip: IpRepr,
    pub udp_src_port: u16,
    pub bth: BthRepr,
    pub ext: ExtHeaders,
}

/// A parsed RoCEv2 packet borrowing its payload from the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RocePacket<'a> {
    pub hdr: RoceHeaders,
    /// Payload without the pad.
    pub payload: &'a [u8],
    /// The received ICRC (trailer value); verified by `parse`, not by `parse_headers`.
    pub icrc: u32,
}

/// The most payload a RoCEv2 packet carries: the largest IB path MTU (4096 bytes).
pub const MAX_PMTU: usize = 128 << crate::contract::verbs::MAX_MTU_ENUM;

/// The longest frame (without FCS) a receive path takes: the longest RoCEv2 packet (`MAX_PMTU` bytes of
/// payload behind 802.1Q, IPv6, UDP, BTH and the longest extended headers, then the ICRC) rounded up to
/// 64 bytes. Longer frames are dropped before any header is looked at (`DropReason::TooLong`), as a MAC
/// drops oversize frames; the RTL's frame stores are sized to hold one.
pub const MAX_FRAME_LEN: usize = 4224;

/// Why a frame is not accepted as a RoCEv2 packet. The receive pipelines count drops by this cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum DropReason {
    /// Longer than `MAX_FRAME_LEN`: checked first.
    #[error("frame too long")]
    TooLong,
    /// Not IPv4/IPv6, not UDP, or not UDP port 4791: not for the RoCE engine.
    #[error("not RoCEv2")]
    NotRoce,
    /// The frame ends inside a header.
    #[error("truncated {0:?} header")]
    Truncated(Layer),
    /// A bad IP header: version, IHL, checksum, fragment or length.
    #[error("bad IP header: {0}")]
    BadIpHeader(&'static str),
    /// The UDP length disagrees with the IP length.
    #[error("bad UDP length")]
    BadUdpLength,
    /// BTH TVer is not 0.
    #[error("bad BTH transport version")]
    BadTver,
    /// The opcode is not in the table.
    #[error("unknown opcode 0x{0:02x}")]
    UnknownOpcode(u8),
    /// Too short for the opcode's headers and ICRC, or the pad exceeds the payload.
    #[error("bad packet length")]
    BadLength,
    /// The ICRC does not match.
    #[error("ICRC mismatch")]
    BadIcrc,
}

/// The header a truncated frame ends in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Ethernet,
    Vlan,
    Ipv4,
    Ipv6,
    Udp,
    Bth,
}

impl DropReason {
    /// Whether the frame got as far as UDP port 4791 (so it counts as a RoCE frame, even if malformed).
    pub fn is_roce(&self) -> bool {
        matches!(
            self,
            DropReason::Truncated(Layer::Bth)
                | DropReason::BadUdpLength
                | DropReason::BadTver
                | DropReason::UnknownOpcode(_)
                | DropReason::BadLength
                | DropReason::BadIcrc
        )
    }
}

/// Bytes of IP + UDP + BTH + ext headers + ICRC around a payload, for capacity planning.
pub fn overhead(ip: IpVersion, info: &OpInfo) -> usize {
    ip.header_len() + UdpRepr::LEN + bth::HEADER_LEN + info.ext_len() + ICRC_LEN
}

fn map_trunc(layer: Layer) -> impl Fn(crate::Error) -> DropReason {
    move |_| DropReason::Truncated(layer)
}

/// Sets ECN Congestion Experienced on the IP header of an Ethernet frame (IPv4 or IPv6, tagged or not), as an
/// ECN-marking switch does; the ICRC masks those bits. False when the frame is not IP or not ECN-capable.
pub fn mark_ce(frame: &mut [u8]) -> bool {
    let Ok(eth) = EthernetFrame::new_checked(&*frame) else { return false };
    let (l3, ethertype) = (eth.header_len(), eth.ethertype());
    match ethertype {
        ethertype::IPV4 => crate::ipv4::mark_ce(&mut frame[l3..]),
        ethertype::IPV6 => crate::ipv6::mark_ce(&mut frame[l3..]),
        _ => false,
    }
}

/// Parses and checks a frame (no FCS). Returns the packet or the reason it must be dropped.
pub fn parse(frame: &[u8]) -> Result<RocePacket<'_>, DropReason> {
    let p = parse_headers(frame)?;
    let l3 = p.hdr.eth.header_len();
    let end = l3 + p.hdr.ip.version().header_len() + usize::from(p.hdr.ip.payload_len());
    if icrc::compute(p.hdr.ip.version(), &frame[l3..end - ICRC_LEN]) != p.icrc {
        return Err(DropReason::BadIcrc);
    }
    Ok(p)
}

/// Every check of `parse` but the ICRC, in the same order: the packet with its trailer as received. (The
/// RTL checks the ICRC apart from its header decoder, which reproduces exactly this.)
pub fn parse_headers(frame: &[u8]) -> Result<RocePacket<'_>, DropReason> {
    if frame.len() > MAX_FRAME_LEN {
        return Err(DropReason::TooLong);
    }
    let eth_view = EthernetFrame::new_checked(frame).map_err(|e| match e {
        crate::Error::Truncated { layer: "802.1Q", .. } => DropReason::Truncated(Layer::Vlan),
        _ => DropReason::Truncated(Layer::Ethernet),
    })?;
    let eth = EthernetRepr::parse(&eth_view);
    let l3_all = &frame[eth_view.header_len()..];
    let (ip, ip_len) = match eth.ethertype {
        ethertype::IPV4 => {
            let v = Ipv4Packet::new_checked(l3_all).map_err(map_trunc(Layer::Ipv4))?;
            if v.protocol() != crate::ipv4::PROTO_UDP && v.version() == 4 {
                return Err(DropReason::NotRoce);
            }
            let r = Ipv4Repr::parse(&v).map_err(|e| match e {
                crate::Error::Malformed { what, .. } => DropReason::BadIpHeader(what),
                crate::Error::Truncated { .. } => DropReason::Truncated(Layer::Ipv4),
            })?;
            (IpRepr::V4(r), crate::ipv4::HEADER_LEN)
        }
        ethertype::IPV6 => {
            let v = Ipv6Packet::new_checked(l3_all).map_err(map_trunc(Layer::Ipv6))?;
            if v.next_header() != crate::ipv4::PROTO_UDP && v.version() == 6 {
                return Err(DropReason::NotRoce);
            }
            let r = Ipv6Repr::parse(&v).map_err(|e| match e {
                crate::Error::Malformed { what, .. } => DropReason::BadIpHeader(what),
                crate::Error::Truncated { .. } => DropReason::Truncated(Layer::Ipv6),
            })?;
            (IpRepr::V6(r), crate::ipv6::HEADER_LEN)
        }
        _ => return Err(DropReason::NotRoce),
    };
    // Trim Ethernet padding: the IP length is authoritative.
    let l3 = &l3_all[..ip_len + usize::from(ip.payload_len())];
    let l4 = &l3[ip_len..];
    let udp = UdpRepr::from_bytes(l4).map_err(map_trunc(Layer::Udp))?;
    if udp.dst_port != ROCE_V2_PORT {
        return Err(DropReason::NotRoce);
    }
    if usize::from(udp.len) != l4.len() {
        return Err(DropReason::BadUdpLength);
    }
    let l5 = &l4[UdpRepr::LEN..];
    let bth_view = Bth::new_checked(l5).map_err(map_trunc(Layer::Bth))?;
    let bth = BthRepr::parse(&bth_view).map_err(|_| DropReason::BadTver)?;
    let info = bth.opcode.info().ok_or(DropReason::UnknownOpcode(bth.opcode.0))?;
    let need = bth::HEADER_LEN + info.ext_len() + ICRC_LEN;
    if l5.len() < need {
        return Err(DropReason::BadLength);
    }
    let ext = ExtHeaders::parse(info, &l5[bth::HEADER_LEN..]);
    let data = &l5[bth::HEADER_LEN + info.ext_len()..l5.len() - ICRC_LEN];
    let pad = usize::from(bth.pad_cnt);
    if pad > data.len() {
        return Err(DropReason::BadLength);
    }
    let trailer = &l5[l5.len() - ICRC_LEN..];
    let got = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    Ok(RocePacket {
        hdr: RoceHeaders { eth, ip, udp_src_port: udp.src_port, bth, ext },
        payload: &data[..data.len() - pad],
        icrc: got,
    })
}

impl RoceHeaders {
    /// Length of the frame `emit` makes for a payload of `payload_len` bytes (no FCS).
    pub fn frame_len(&self, payload_len: usize) -> usize {
        let info_len = self.bth.opcode.info().map_or(0, |i| i.ext_len());
        self.eth.header_len()
            + self.ip.version().header_len()
            + UdpRepr::LEN
            + bth::HEADER_LEN
            + info_len
            + payload_len
            + pad_for(payload_len)
            + ICRC_LEN
    }

    /// Appends a complete frame to `out`: lengths, IPv4 checksum, UDP checksum 0, PadCnt, zero pad and ICRC
    /// are all derived here. The opcode must be in the table and `ext` must hold exactly the extended headers
    /// it carries; otherwise nothing is appended.
    pub fn emit_into(&self, payload: &[u8], out: &mut Vec<u8>) {
        self.emit_filled(payload.len(), out, |dst| {
            dst.copy_from_slice(payload);
            true
        });
    }

    /// A complete frame in a fresh buffer.
    pub fn emit(&self, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.frame_len(payload.len()));
        self.emit_into(payload, &mut v);
        v
    }

    /// Like `emit`, but `fill` writes the `payload_len` payload bytes in place (a DMA gather straight into
    /// the frame). When `fill` returns false, or the headers do not match the opcode, there is no frame.
    pub fn emit_with(&self, payload_len: usize, fill: impl FnOnce(&mut [u8]) -> bool) -> Option<Vec<u8>> {
        let mut v = Vec::with_capacity(self.frame_len(payload_len));
        self.emit_filled(payload_len, &mut v, fill).then_some(v)
    }

    fn emit_filled(&self, payload_len: usize, out: &mut Vec<u8>, fill: impl FnOnce(&mut [u8]) -> bool) -> bool {
        let Some(info) = self.bth.opcode.info() else { return false };
        if self.ext.present() != info.headers & !hdr::CNP_PAD {
            return false;
        }
        let start = out.len();
        let total = self.frame_len(payload_len);
        out.resize(start + total, 0);
        let f = &mut out[start..];
        let mut eth = self.eth;
        eth.ethertype = match self.ip {
            IpRepr::V4(_) => ethertype::IPV4,
            IpRepr::V6(_) => ethertype::IPV6,
        };
        eth.emit(f);
        let l3 = &mut f[eth.header_len()..];
        let ip_len = self.ip.version().header_len();
        let mut ip = self.ip;
        ip.set_payload_len((l3.len() - ip_len) as u16);
        ip.emit(l3);
        let udp = UdpRepr {
            src_port: self.udp_src_port,
            dst_port: ROCE_V2_PORT,
            len: (l3.len() - ip_len) as u16,
            checksum: 0,
        };
        udp.emit(&mut UdpPacket::new_unchecked(&mut l3[ip_len..]));
        let l5_off = ip_len + UdpRepr::LEN;
        let mut bth = self.bth;
        bth.pad_cnt = pad_for(payload_len) as u8;
        bth.emit(&mut l3[l5_off..]);
        let ext_off = l5_off + bth::HEADER_LEN;
        self.ext.emit(info, &mut l3[ext_off..ext_off + info.ext_len()]);
        let pay_off = ext_off + info.ext_len();
        if !fill(&mut l3[pay_off..pay_off + payload_len]) {
            out.truncate(start);
            return false;
        }
        let crc_off = l3.len() - ICRC_LEN;
        let crc = icrc::compute(ip.version(), &l3[..crc_off]);
        l3[crc_off..].copy_from_slice(&crc.to_le_bytes());
        true
    }
}

/// PadCnt for a payload length: pad to a multiple of 4.
pub const fn pad_for(payload_len: usize) -> usize {
    payload_len.wrapping_neg() & 3
}

/// The UDP source port for a flow label (kernel `rdma_flow_label_to_udp_sport`), in 0xC000..=0xFFFF.
pub const fn udp_sport_from_flow_label(fl: u32) -> u16 {
    let fl = fl & 0xF_FFFF;
    (((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000) as u16
}

/// The flow label derived from a QP pair when the address vector gives none (kernel `rdma_calc_flow_label`):
/// symmetric, so both ends pick the same entropy.
pub const fn flow_label_from_qpns(lqpn: u32, rqpn: u32) -> u32 {
    let mut v = (lqpn as u64) * (rqpn as u64);
    v ^= v >> 20;
    v ^= v >> 40;
    (v & 0xF_FFFF) as u32
}
