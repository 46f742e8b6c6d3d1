//! Property tests: emit-then-parse is the identity for every opcode, IP version, VLAN and payload length,
//! and parsing arbitrary or damaged bytes never panics. Seeds are printed by proptest on failure.

use proptest::prelude::*;
use wire::eth::{EthernetRepr, VlanTag};
use wire::ext::*;
use wire::ipv4::Ipv4Repr;
use wire::ipv6::Ipv6Repr;
use wire::opcode::hdr;
use wire::roce::MAX_PMTU;
use wire::{parse, BthRepr, DropReason, ExtHeaders, IpRepr, Opcode, Psn, RoceHeaders, MAX_FRAME_LEN};

fn arb_opcode() -> impl Strategy<Value = Opcode> {
    let ops: Vec<Opcode> = Opcode::all().map(|(o, _)| o).collect();
    proptest::sample::select(ops)
}

fn arb_ip() -> impl Strategy<Value = IpRepr> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<[u8; 4]>(), any::<u8>(), 1u8.., any::<u16>())
            .prop_map(|(src, dst, tos, ttl, ident)| IpRepr::V4(Ipv4Repr { src, dst, tos, ttl, ident, payload_len: 0 })),
        (any::<[u8; 16]>(), any::<[u8; 16]>(), any::<u8>(), 0u32..0x10_0000, any::<u8>()).prop_map(
            |(src, dst, traffic_class, flow_label, hop_limit)| IpRepr::V6(Ipv6Repr {
                src,
                dst,
                traffic_class,
                flow_label,
                hop_limit,
                payload_len: 0
            })
        ),
    ]
}

prop_compose! {
    fn arb_headers()(op in arb_opcode(), ip in arb_ip(), vlan in proptest::option::of((0u8..8, any::<bool>(), 0u16..4096)),
                     sport in 0xC000u16.., dst in any::<[u8; 6]>(), src in any::<[u8; 6]>(),
                     se in any::<bool>(), m in any::<bool>(), pkey in any::<u16>(), fecn in any::<bool>(), becn in any::<bool>(),
                     qp in 0u32..0x100_0000, ack in any::<bool>(), psn in 0u32..0x100_0000,
                     reth in any::<(u64, u32, u32)>(), aeth in any::<(u8, u32)>(), atomic in any::<(u64, u32, u64, u64)>(),
                     ack_orig in any::<u64>(), imm in any::<u32>(), ieth in any::<u32>(), deth in any::<(u32, u32)>())
                     -> RoceHeaders {
        let info = op.info().unwrap();
        let ext = ExtHeaders {
            deth: info.has(hdr::DETH).then_some(DethRepr { qkey: deth.0, src_qp: deth.1 & 0xFF_FFFF }),
            reth: info.has(hdr::RETH).then_some(RethRepr { va: reth.0, rkey: reth.1, dma_len: reth.2 }),
            atomic_eth: info.has(hdr::ATOMIC_ETH).then_some(AtomicEthRepr { va: atomic.0, rkey: atomic.1, swap_add: atomic.2, compare: atomic.3 }),
            aeth: info.has(hdr::AETH).then_some(AethRepr { syndrome: aeth.0, msn: aeth.1 & 0xFF_FFFF }),
            atomic_ack_eth: info.has(hdr::ATOMIC_ACK_ETH).then_some(AtomicAckEthRepr { orig: ack_orig }),
            immdt: info.has(hdr::IMMDT).then_some(imm),
            ieth: info.has(hdr::IETH).then_some(ieth),
        };
        RoceHeaders {
            eth: EthernetRepr { dst, src, vlan: vlan.map(|(pcp, dei, vid)| VlanTag { pcp, dei, vid }), ethertype: 0 },
            ip,
            udp_src_port: sport,
            bth: BthRepr { opcode: op, solicited: se, mig_req: m, pad_cnt: 0, pkey, fecn, becn, dest_qp: qp, ack_req: ack, psn: Psn::new(psn) },
            ext,
        }
    }
}

/// The headers as `parse` reports them: derived fields filled in.
fn normalised(h: &RoceHeaders, payload_len: usize) -> RoceHeaders {
    let mut h = *h;
    h.eth.ethertype = match h.ip {
        IpRepr::V4(_) => 0x0800,
        IpRepr::V6(_) => 0x86DD,
    };
    h.bth.pad_cnt = wire::roce::pad_for(payload_len) as u8;
    h
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn emit_then_parse_is_identity(h in arb_headers(), payload in proptest::collection::vec(any::<u8>(), 0..300)) {
        let payload = if h.bth.opcode.info().unwrap().has_payload { payload } else { Vec::new() };
        let frame = h.emit(&payload);
        prop_assert_eq!(frame.len(), h.frame_len(payload.len()));
        let p = parse(&frame).map_err(|e| TestCaseError::fail(format!("{e}")))?;
        let mut got = p.hdr;
        // IP payload length is derived on emit; compare everything else.
        let expect = normalised(&h, payload.len());
        match (&mut got.ip, &expect.ip) {
            (IpRepr::V4(g), IpRepr::V4(e)) => g.payload_len = e.payload_len,
            (IpRepr::V6(g), IpRepr::V6(e)) => g.payload_len = e.payload_len,
            _ => prop_assert!(false, "IP version changed"),
        }
        prop_assert_eq!(got, expect);
        prop_assert_eq!(p.payload, &payload[..]);
        // And parse-then-emit gives the same bytes back.
        prop_assert_eq!(p.hdr.emit(p.payload), frame);
    }

    #[test]
    fn headers_the_opcode_does_not_carry_give_no_frame(h in arb_headers(), which in 0usize..7) {
        let info = h.bth.opcode.info().unwrap();
        prop_assert_eq!(h.ext.present(), info.headers & !hdr::CNP_PAD);
        // Toggle one extended header: drop it if the opcode carries it, add it if not.
        let mut bad = h;
        let e = &mut bad.ext;
        match which {
            0 => e.deth = if e.deth.is_some() { None } else { Some(DethRepr::default()) },
            1 => e.reth = if e.reth.is_some() { None } else { Some(RethRepr::default()) },
            2 => e.atomic_eth = if e.atomic_eth.is_some() { None } else { Some(AtomicEthRepr::default()) },
            3 => e.aeth = if e.aeth.is_some() { None } else { Some(AethRepr::default()) },
            4 => e.atomic_ack_eth = if e.atomic_ack_eth.is_some() { None } else { Some(AtomicAckEthRepr::default()) },
            5 => e.immdt = if e.immdt.is_some() { None } else { Some(0) },
            _ => e.ieth = if e.ieth.is_some() { None } else { Some(0) },
        }
        prop_assert_ne!(bad.ext.present(), h.ext.present());
        prop_assert!(bad.emit(&[]).is_empty());
        prop_assert!(bad.emit_with(0, |_| true).is_none());
        prop_assert!(h.emit_with(0, |_| true).is_some());
    }

    #[test]
    fn full_pmtu_frames_fit_and_longer_frames_are_too_long(h in arb_headers()) {
        let payload = if h.bth.opcode.info().unwrap().has_payload { vec![0x5a; MAX_PMTU] } else { Vec::new() };
        let mut frame = h.emit(&payload);
        prop_assert!(frame.len() <= MAX_FRAME_LEN, "{} bytes", frame.len());
        // Ethernet padding up to the limit is still a packet; one byte more is too long.
        frame.resize(MAX_FRAME_LEN, 0);
        prop_assert!(parse(&frame).is_ok());
        frame.push(0);
        prop_assert_eq!(parse(&frame).err(), Some(DropReason::TooLong));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn damaged_frames_are_rejected_not_panicked(h in arb_headers(), payload in proptest::collection::vec(any::<u8>(), 0..64),
                                                cut in any::<proptest::sample::Index>(), flip in any::<proptest::sample::Index>(), bit in 0u8..8) {
        let payload = if h.bth.opcode.info().unwrap().has_payload { payload } else { Vec::new() };
        let frame = h.emit(&payload);
        // Any truncation that removes at least the ICRC is rejected.
        let n = cut.index(frame.len().saturating_sub(4));
        prop_assert!(parse(&frame[..n]).is_err());
        // A single flipped bit outside the ICRC-masked and Ethernet fields is caught.
        let mut bad = frame.clone();
        let i = flip.index(bad.len());
        bad[i] ^= 1 << bit;
        let masked = is_masked(&h, i, bit);
        if let Ok(p) = parse(&bad) {
            prop_assert!(masked || i < h.eth.header_len(), "flip at {} bit {} accepted: {:?}", i, bit, p.hdr.bth.opcode);
        }
    }
}

/// True when byte `i` bit `bit` of the frame is a field the ICRC masks (and no other check covers).
fn is_masked(h: &RoceHeaders, i: usize, bit: u8) -> bool {
    let l3 = h.eth.header_len();
    let Some(off) = i.checked_sub(l3) else { return false };
    let ip_len = h.ip.version().header_len();
    let udp_csum = ip_len + 6..ip_len + 8;
    let bth_cc = ip_len + 8 + 4;
    match h.ip {
        IpRepr::V4(_) => off == 1 || off == 8 || udp_csum.contains(&off) || off == bth_cc,
        IpRepr::V6(_) => {
            (off == 0 && bit < 4) || (1..4).contains(&off) || off == 7 || udp_csum.contains(&off) || off == bth_cc
        }
    }
}

#[test]
fn max_frame_len_is_the_longest_packet_rounded_up_to_64_bytes() {
    let ext = Opcode::all().filter(|(_, i)| i.has_payload).map(|(_, i)| i.ext_len()).max().unwrap();
    let longest = wire::eth::HEADER_LEN
        + wire::eth::VLAN_LEN
        + wire::ipv6::HEADER_LEN
        + wire::udp::UdpRepr::LEN
        + wire::bth::HEADER_LEN
        + ext
        + MAX_PMTU
        + wire::icrc::ICRC_LEN;
    assert_eq!(MAX_FRAME_LEN % 64, 0);
    assert!(longest <= MAX_FRAME_LEN && MAX_FRAME_LEN - 64 < longest, "longest packet {longest} bytes");
}

#[test]
fn mark_ce_sets_congestion_experienced_and_keeps_the_frame_valid() {
    for ip in [
        IpRepr::V4(Ipv4Repr { src: [10, 0, 0, 1], dst: [10, 0, 0, 2], tos: 0b10, ttl: 64, ident: 1, payload_len: 0 }),
        IpRepr::V6(Ipv6Repr {
            src: [1; 16],
            dst: [2; 16],
            traffic_class: 0b10,
            flow_label: 5,
            hop_limit: 64,
            payload_len: 0,
        }),
    ] {
        let mut h = RoceHeaders {
            eth: EthernetRepr { dst: [2, 0, 0, 0, 0, 2], src: [2, 0, 0, 0, 0, 1], vlan: None, ethertype: 0 },
            ip,
            udp_src_port: 0xC000,
            bth: BthRepr { opcode: Opcode::SEND_ONLY, dest_qp: 9, psn: Psn::new(1), ..Default::default() },
            ext: ExtHeaders::default(),
        };
        let mut f = h.emit(&[7; 40]);
        assert!(wire::roce::mark_ce(&mut f), "{ip:?}");
        let p = parse(&f).expect("still valid: the IPv4 checksum is rewritten and the ICRC masks ECN");
        assert_eq!(p.hdr.ip.ecn(), 3, "{ip:?}");
        h.ip.set_tclass(0); // not ECN-capable: left alone
        let mut g = h.emit(&[7; 40]);
        let before = g.clone();
        assert!(!wire::roce::mark_ce(&mut g));
        assert_eq!(g, before);
    }
    assert!(!wire::roce::mark_ce(&mut [0u8; 10]), "too short");
}

/// The UDP source port rxe derives from a QP pair (no flow label given), against the ports in a capture of two
/// rxe guests (`rxe_two_vm.pcap`: RC QP pairs 0x11..=0x14, each the same number on both sides).
#[test]
fn udp_source_ports_match_rxe() {
    use wire::roce::{flow_label_from_qpns, udp_sport_from_flow_label};
    for (qpn, sport) in [(0x11, 0xc121), (0x12, 0xc144), (0x13, 0xc169), (0x14, 0xc190)] {
        assert_eq!(udp_sport_from_flow_label(flow_label_from_qpns(qpn, qpn)), sport, "QP {qpn:#x}");
    }
    // Symmetric, and using every input bit: large QPNs give a label of their own.
    assert_eq!(flow_label_from_qpns(0x12_3456, 0x65_4321), flow_label_from_qpns(0x65_4321, 0x12_3456));
    assert_ne!(flow_label_from_qpns(0xFF_FFFF, 0xFF_FFFE), flow_label_from_qpns(0xFF_FFFF, 0xFF_FFFD));
    assert_eq!(udp_sport_from_flow_label(0x000F_C000) & 0xC000, 0xC000);
    assert_eq!(udp_sport_from_flow_label(0x0000_4001), 0xC000, "the label's top six bits fold onto its low ones");
}
