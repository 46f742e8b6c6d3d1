//! Where a received frame goes, in RTL (`hdl::engine::recv`) against the model's `recv::route`: random
//! stations (MAC, GID table), random QP tables (packed by the model's `context::pack`) and random frames
//! (every opcode, IPv4 and IPv6, for us or not, from the QP's peer or not, any P_Key and ECN, malformed and
//! not RoCE), the RTL given the same records (the frame's RX record, the QP its `qp_index` names, the GID
//! its `gid_index` names) and compared route for route.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test rx_route`.

use hdl::engine::recv::route as code;
use hdl::rx::meta::{self, Meta};
use hdl::top::Top;
use hdl::Width;
use model::nic::context::{pack, Packed};
use model::nic::dcqcn::Rp;
use model::nic::qp::Qp;
use model::nic::recv::{route, Route, Station};
use model::rng::Rng;
use sim::frames::{damage, Damage};
use sim::responder::{be, bytes_of};
use sim::Sim;
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::{QpState, QpType};
use wire::ipv4::Ipv4Repr;
use wire::ipv6::{gid_from_ipv4, gid_to_ipv4, Ipv6Repr};
use wire::IpRepr;

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0C4E_D15C)
}

/// The RTL's code for a model route, and its CE flag.
fn expect(r: Route) -> (u8, bool) {
    match r {
        Route::OtherMac => (code::OTHER_MAC, false),
        Route::Raw => (code::RAW, false),
        Route::Malformed(_) => (code::MALFORMED, false),
        Route::BadPkey => (code::BAD_PKEY, false),
        Route::NoQp => (code::NO_QP, false),
        Route::QpState => (code::QP_STATE, false),
        Route::OtherPeer => (code::OTHER_PEER, false),
        Route::Cnp => (code::CNP, false),
        Route::Request { ce } => (code::REQUEST, ce),
        Route::Response { ce } => (code::RESPONSE, ce),
        Route::ResponseQpState { ce } => (code::RESPONSE_QP_STATE, ce),
    }
}

/// A pool of GIDs, half IPv4-mapped, for stations, peers and frames to share so that they often agree.
fn gid_pool(rng: &mut Rng) -> Vec<[u8; 16]> {
    let mut pool: Vec<[u8; 16]> = (0..4).map(|_| gid_from_ipv4((rng.next_u64() as u32).to_be_bytes())).collect();
    for _ in 0..4 {
        let mut g = [0u8; 16];
        rng.fill(&mut g);
        g[0] = 0xFE;
        pool.push(g);
    }
    // GIDs that differ from another only in the subnet prefix, or in one bit anywhere.
    let mut twin = pool[4];
    twin[rng.below(8) as usize] ^= 1 << rng.below(8);
    pool.push(twin);
    let mut near = pool[rng.below(8) as usize];
    near[rng.below(16) as usize] ^= 1 << rng.below(8);
    pool.push(near);
    pool
}

fn pick<T: Copy>(rng: &mut Rng, v: &[T]) -> T {
    v[rng.below(v.len() as u64) as usize]
}

/// A NIC's side of the test: its MAC, GID table and QPs (with their packed `qp_attr`).
struct Port {
    mac: [u8; 6],
    gids: [Option<[u8; 16]>; 16],
    /// The GID RAM's contents, set or not.
    stale: [[u8; 16]; 16],
    qps: Vec<Option<Qp>>,
    attrs: Vec<Vec<u8>>,
}

impl Port {
    fn random(rng: &mut Rng, p: &Profile, pool: &[[u8; 16]]) -> Port {
        let mut mac = [0u8; 6];
        rng.fill(&mut mac);
        mac[0] &= 0xFE;
        let mut gids = [None; 16];
        for g in gids.iter_mut() {
            *g = rng.chance(0.7).then(|| pick(rng, pool));
        }
        // What the GID RAM holds where no GID is set: an earlier one, perhaps.
        let stale = std::array::from_fn(|i| gids[i].unwrap_or_else(|| pick(rng, pool)));
        let c = qp_context(p);
        let (mut qps, mut attrs) = (Vec::new(), Vec::new());
        for n in 0..p.max_qp {
            let q = rng.chance(0.8).then(|| {
                let mut q = Qp::new(n, rng.below(4) as u32, Rp::new(100_000, &Default::default()));
                if rng.chance(0.1) {
                    q.qp_type = QpType::RawPacket;
                }
                q.state = pick(
                    rng,
                    &[
                        QpState::Reset,
                        QpState::Init,
                        QpState::Rtr,
                        QpState::Rts,
                        QpState::Rts,
                        QpState::Sqd,
                        QpState::Sqe,
                        QpState::Err,
                    ],
                );
                q.flushing = rng.chance(0.1);
                q.attrs.dgid = pick(rng, pool);
                q.attrs.sgid_index = rng.below(16) as u8;
                q
            });
            let attr = q.as_ref().map_or(vec![0; c.attr.width().div_ceil(8) as usize], |q| {
                let Packed { attr, .. } = pack(q, &c, 0).expect("the QP packs");
                bytes_of(&attr)
            });
            qps.push(q);
            attrs.push(attr);
        }
        Port { mac, gids, stale, qps, attrs }
    }

    fn qp(&self, n: u32) -> Option<&Qp> {
        self.qps.get(n as usize).and_then(|q| q.as_ref())
    }
}

/// A frame for port `s`: any opcode, mostly to one of its QPs from that QP's peer, sometimes not;
/// some malformed, some not RoCE at all.
fn random_frame(rng: &mut Rng, s: &Port, p: &Profile, pool: &[[u8; 16]]) -> Vec<u8> {
    let dst = match rng.below(20) {
        0..=13 => s.mac,
        14 | 15 => [0xFF; 6],
        16 => [0x01, 0x00, 0x5E, 0, 0, rng.next_u64() as u8],
        _ => {
            let mut m = [0u8; 6];
            rng.fill(&mut m);
            m[0] &= 0xFE;
            m
        }
    };
    if rng.chance(0.05) {
        // ARP, or anything else that is not RoCE.
        let mut f = dst.to_vec();
        f.extend([0x02, 0, 0, 0, 0, 1, 0x08, 0x06]);
        f.extend(std::iter::repeat_n(0u8, 28 + rng.below(20) as usize));
        return f;
    }
    let op = pick(rng, &sim::frames::opcodes());
    let (vlan, len) = (rng.chance(0.2), rng.below(64) as usize);
    let f = sim::frames::frame(rng, op, false, vlan, len);
    let pkt = wire::parse(&f).expect("a well-formed frame");
    let (mut h, payload) = (pkt.hdr, pkt.payload.to_vec());
    // QP numbers of the table, and past it: any, the next ones, one high bit over a QP of the table.
    let qpn = match rng.below(12) {
        0 => rng.next_u64() as u32 & 0xFF_FFFF,
        1 => p.max_qp + rng.below(u64::from(p.max_qp)) as u32,
        2 => 1u32 << (4 + rng.below(20)) | rng.below(u64::from(p.max_qp)) as u32,
        3 if rng.chance(0.2) => 0xFF_FFFF,
        _ => rng.below(u64::from(p.max_qp)) as u32,
    };
    h.bth.dest_qp = qpn;
    // The port's key, a limited member of its partition, and keys one bit off, or no partition at all.
    h.bth.pkey = match rng.below(12) {
        0 => rng.next_u64() as u16,
        1 => 0x7FFF,
        2 => 0xFFFF ^ 1 << rng.below(16),
        3 => [0x0000, 0x8000][rng.below(2) as usize],
        _ => 0xFFFF,
    };
    // Mostly the QP's peer to the QP's own GID; otherwise any GIDs of the pool.
    let q = s.qp(qpn);
    let (src, dstg) = match q {
        Some(q) if rng.chance(0.8) => (q.attrs.dgid, s.stale[usize::from(q.attrs.sgid_index)]),
        _ => (pick(rng, pool), pick(rng, pool)),
    };
    let tclass = if rng.chance(0.3) { rng.next_u64() as u8 | 3 } else { rng.next_u64() as u8 };
    h.ip = match (gid_to_ipv4(&src), gid_to_ipv4(&dstg)) {
        (Some(a), Some(b)) if rng.chance(0.9) => {
            IpRepr::V4(Ipv4Repr { src: a, dst: b, tos: tclass, ttl: 64, ident: 0, payload_len: 0 })
        }
        _ => {
            IpRepr::V6(Ipv6Repr { src, dst: dstg, traffic_class: tclass, flow_label: 0, hop_limit: 64, payload_len: 0 })
        }
    };
    h.eth.dst = dst;
    let f = h.emit(&payload);
    match rng.below(10) {
        0 => damage(f, Damage::Truncate(rng.below(1000) as u16)),
        1 => damage(f, Damage::FlipHeader(rng.below(80) as u8, rng.below(8) as u8)),
        2 if rng.chance(0.2) => damage(f, Damage::Oversize(rng.below(16) as u8)),
        _ => f,
    }
}

/// The RX record of `frame`: `meta_of` for a packet, the parser's verdict and the destination MAC (as the
/// RX path records it) for a frame it drops.
fn record(frame: &[u8], parsed: &Result<wire::RocePacket<'_>, wire::DropReason>) -> Meta {
    match parsed {
        Ok(p) => sim::frames::meta_of(frame, p),
        Err(r) => {
            let mut m = Meta::default();
            let (v, layer, ip) = meta::codes(Some(r));
            m.set("verdict", v as u128);
            m.set("layer", layer.into());
            m.set("ip_reject", ip.into());
            let mut d = [0u8; 6];
            let n = frame.len().min(6);
            d[..n].copy_from_slice(&frame[..n]);
            m.set("eth_dst", be(&d));
            m
        }
    }
}

#[test]
fn the_route_matches_the_model() {
    let seed = seed();
    let p = Top::engine_profile();
    let mut rtl = Sim::new(Top::RxRoute, Width::W8);
    let port = |s: &Sim, n: &str| s.port(n);
    let (p_meta, p_mac, p_qp_index, p_qp_valid) =
        (port(&rtl, "meta"), port(&rtl, "mac"), port(&rtl, "qp_index"), port(&rtl, "qp_valid"));
    let (p_attr, p_gid_index, p_gid, p_gid_valid) =
        (port(&rtl, "attr"), port(&rtl, "gid_index"), port(&rtl, "gid"), port(&rtl, "gid_valid"));
    let (p_route, p_ce) = (port(&rtl, "route"), port(&rtl, "ce"));
    let mut rng = Rng::new(seed);
    let mut seen = std::collections::BTreeMap::<(u8, bool), u64>::new();
    const STATIONS: usize = 200;
    const FRAMES: usize = 500;
    for n in 0..STATIONS {
        let pool = gid_pool(&mut rng);
        let s = Port::random(&mut rng, &p, &pool);
        rtl.set(p_mac, be(&s.mac) as u64);
        let station = Station { mac: s.mac, gids: &s.gids };
        for k in 0..FRAMES {
            let frame = random_frame(&mut rng, &s, &p, &pool);
            let parsed = wire::parse(&frame);
            let want = route(&station, |q| s.qp(q), &frame, &parsed);
            rtl.set_bytes(p_meta, &record(&frame, &parsed).0);
            rtl.eval();
            // The QP RAM and the GID table, addressed by the low bits as RAMs are.
            let qi = rtl.get(p_qp_index) as usize % s.qps.len();
            rtl.set(p_qp_valid, u64::from(s.qps[qi].is_some()));
            rtl.set_bytes(p_attr, &s.attrs[qi]);
            rtl.eval();
            let gi = rtl.get(p_gid_index) as usize % s.gids.len();
            rtl.set_bytes(p_gid, &be(&s.stale[gi]).to_le_bytes());
            rtl.set(p_gid_valid, u64::from(s.gids[gi].is_some()));
            rtl.tick();
            let got = (rtl.get(p_route) as u8, rtl.get(p_ce) != 0);
            assert_eq!(
                got,
                expect(want),
                "seed {seed} (FERRITE_SEED={seed}), station {n}, frame {k}: the model says {want:?}; frame {:02x?}",
                &frame[..frame.len().min(96)]
            );
            *seen.entry(got).or_default() += 1;
        }
    }
    eprintln!("rx_route: {} frames, (route, ce) {seen:?}", STATIONS * FRAMES);
    for r in code::OTHER_MAC..=code::RESPONSE_QP_STATE {
        let n: u64 = seen.iter().filter(|((c, _), _)| *c == r).map(|(_, n)| n).sum();
        assert!(n >= 100, "route {r} reached {n} times");
    }
    for r in [code::REQUEST, code::RESPONSE, code::RESPONSE_QP_STATE] {
        assert!(seen.get(&(r, true)).is_some_and(|&n| n >= 20), "route {r} with CE: {:?}", seen.get(&(r, true)));
    }
}
