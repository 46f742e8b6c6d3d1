//! The metadata record the RX parser emits for every frame: one flat bit vector, fields packed from bit 0
//! in `FIELDS` order. Extended headers travel as their raw bytes (layout: `wire::ext`'s `FIELDS`), with a
//! presence bit each, in slots of one union (`ext_slot`) read and written by the header's name. `Meta`
//! packs and unpacks it by name, for the testbench and the CLI.

use wire::roce::Layer;

/// Why a frame was dropped (0 = accepted). Mirrors `wire::DropReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Verdict {
    Ok = 0,
    NotRoce = 1,
    Truncated = 2,
    BadIpHeader = 3,
    BadUdpLength = 4,
    BadTver = 5,
    UnknownOpcode = 6,
    BadLength = 7,
    BadIcrc = 8,
    TooLong = 9,
}

/// `Truncated` layers, in code order.
pub const LAYERS: [Layer; 6] = [Layer::Ethernet, Layer::Vlan, Layer::Ipv4, Layer::Ipv6, Layer::Udp, Layer::Bth];

/// `BadIpHeader` reasons, in code order: wire's own strings.
pub const IP_REJECTS: [&str; 8] = [
    wire::ipv4::reject::VERSION,
    wire::ipv4::reject::IHL,
    wire::ipv4::reject::TOTAL_LEN,
    wire::ipv4::reject::FRAGMENT,
    wire::ipv4::reject::CHECKSUM,
    wire::ipv6::reject::VERSION,
    wire::ipv6::reject::NEXT_HEADER,
    wire::ipv6::reject::PAYLOAD_LEN,
];

/// The extended headers carried raw: (meta name, presence bit in the opcode table, bytes).
pub const EXT: [(&str, u16, usize); 7] = [
    ("deth", wire::opcode::hdr::DETH, 8),
    ("reth", wire::opcode::hdr::RETH, 16),
    ("atomic_eth", wire::opcode::hdr::ATOMIC_ETH, 28),
    ("aeth", wire::opcode::hdr::AETH, 4),
    ("atomic_ack_eth", wire::opcode::hdr::ATOMIC_ACK_ETH, 8),
    ("immdt", wire::opcode::hdr::IMMDT, 4),
    ("ieth", wire::opcode::hdr::IETH, 4),
];

/// Verilog statements that set `ext_len` (`len_bits` wide), `has_<name>` and `off_<name>` (the header's
/// offset after the BTH) from `opcode` by `wire`'s opcode table.
pub fn ext_table_verilog(len_bits: usize) -> String {
    use std::fmt::Write as _;
    let mut v = format!("    ext_len = {len_bits}'d0;\n");
    for (name, _, _) in EXT {
        writeln!(v, "    has_{name} = 1'b0;\n    off_{name} = 5'd0;").unwrap();
    }
    writeln!(v, "    case (opcode)").unwrap();
    for (op, info) in wire::opcode::TABLE.iter().enumerate() {
        let Some(info) = info else { continue };
        write!(v, "    8'h{op:02x}: begin ext_len = {len_bits}'d{};", info.ext_len()).unwrap();
        for (name, off) in ext_layout(info) {
            if let Some(off) = off {
                write!(v, " has_{name} = 1'b1; off_{name} = 5'd{off};").unwrap();
            }
        }
        writeln!(v, " end").unwrap();
    }
    writeln!(v, "    default: ;\n    endcase").unwrap();
    v
}

/// Each `EXT` header's name and, if the opcode carries it, its offset after the BTH.
pub fn ext_layout(info: &wire::OpInfo) -> impl Iterator<Item = (&'static str, Option<usize>)> + '_ {
    EXT.iter().map(|&(name, bit, _)| (name, info.has(bit).then(|| ext_offset(info, bit))))
}

/// Where extended header `bit` starts after the BTH for an opcode that carries it.
fn ext_offset(info: &wire::OpInfo, bit: u16) -> usize {
    wire::opcode::hdr::ORDER.iter().take_while(|(b, _)| *b != bit).filter(|(b, _)| info.has(*b)).map(|(_, l)| l).sum()
}

/// The distinct offsets after the BTH at which extended header `bit` occurs, over the whole opcode table.
pub fn ext_offsets(bit: u16) -> Vec<usize> {
    let mut offs = Vec::new();
    for info in wire::opcode::TABLE.iter().flatten().filter(|i| i.has(bit)) {
        let o = ext_offset(info, bit);
        if !offs.contains(&o) {
            offs.push(o);
        }
    }
    offs
}

/// Which bytes of extended header `name` carry a field (`wire::ext`'s `FIELDS`); reserved bytes travel as
/// zeros, as `wire`'s Reprs keep them.
pub fn ext_covered(name: &str) -> Vec<bool> {
    use wire::ext::*;
    let (fields, len): (&[(&str, core::ops::Range<usize>)], usize) = match name {
        "deth" => (DethRepr::FIELDS, DethRepr::LEN),
        "reth" => (RethRepr::FIELDS, RethRepr::LEN),
        "atomic_eth" => (AtomicEthRepr::FIELDS, AtomicEthRepr::LEN),
        "aeth" => (AethRepr::FIELDS, AethRepr::LEN),
        "atomic_ack_eth" => (AtomicAckEthRepr::FIELDS, AtomicAckEthRepr::LEN),
        "immdt" => (ImmDtRepr::FIELDS, ImmDtRepr::LEN),
        "ieth" => (IethRepr::FIELDS, IethRepr::LEN),
        _ => panic!("no extended header {name}"),
    };
    (0..len).map(|i| fields.iter().any(|(_, r)| r.contains(&i))).collect()
}

/// (name, bits) in packing order.
pub const FIELDS: &[(&str, usize)] = &[
    ("verdict", 4),
    ("layer", 3),
    ("ip_reject", 3),
    ("eth_dst", 48),
    ("eth_src", 48),
    ("vlan", 1),
    ("vlan_tci", 16),
    ("ethertype", 16),
    ("ipv6", 1),
    // Source and destination as GIDs (IPv4-mapped for IPv4).
    ("src_gid", 128),
    ("dst_gid", 128),
    ("tclass", 8),
    ("hop_limit", 8),
    ("ip_ident", 16),
    ("flow_label", 20),
    ("ip_payload_len", 16),
    ("udp_src_port", 16),
    ("opcode", 8),
    ("solicited", 1),
    ("mig_req", 1),
    ("pad_cnt", 2),
    ("pkey", 16),
    ("fecn", 1),
    ("becn", 1),
    ("dest_qp", 24),
    ("ack_req", 1),
    ("psn", 24),
    ("has_deth", 1),
    ("has_reth", 1),
    ("has_atomic_eth", 1),
    ("has_aeth", 1),
    ("has_atomic_ack_eth", 1),
    ("has_immdt", 1),
    ("has_ieth", 1),
    // The extended headers a frame carries, each in its slot of this union (`ext_slot`; by name, as
    // fields of their own): zeros where none is.
    ("ext", EXT_BITS),
    // Frame offset of the first payload byte, and payload length without pad.
    ("payload_off", 16),
    ("payload_len", 16),
    ("icrc", 32),
    // The frame's length as the MAC gave it (`rx_bytes`; 0xffff for one cut short as too long); the TX
    // side leaves it 0.
    ("frame_len", 16),
];

/// The extended headers' union: as long as the longest one (the AtomicETH's 28 bytes). Headers one opcode
/// carries together have slots apart; the others share bits.
pub const EXT_BITS: usize = {
    let mut most = 0;
    let mut i = 0;
    while i < EXT.len() {
        if EXT[i].2 > most {
            most = EXT[i].2;
        }
        i += 1;
    }
    8 * most
};

/// Where extended header `name` sits in the union (bits from its low end): the lowest offset clear of the
/// headers placed before it (in `EXT` order) that some opcode carries with it. Panics on an unknown name
/// or a union too short (a `wire` table this record does not fit: a generator bug).
pub fn ext_slot(name: &str) -> usize {
    let bit_of = |n: &str| EXT.iter().find(|e| e.0 == n).map(|e| e.1);
    let bit = bit_of(name).unwrap_or_else(|| panic!("no extended header {name}"));
    let mut placed: Vec<(u16, usize, usize)> = Vec::new();
    for &(n, b, len) in &EXT {
        let with = |other: u16| wire::opcode::TABLE.iter().flatten().any(|i| i.has(b) && i.has(other));
        let clear = |at: usize| placed.iter().all(|&(o, lo, w)| !with(o) || at + 8 * len <= lo || lo + w <= at);
        let at = (0..=EXT_BITS - 8 * len).step_by(8).find(|&at| clear(at));
        let at = at.unwrap_or_else(|| panic!("extended header {n} finds no slot in {EXT_BITS} bits"));
        if b == bit {
            return at;
        }
        placed.push((b, at, 8 * len));
    }
    unreachable!("{name} is in EXT")
}

/// Total bits of the record.
pub const BITS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < FIELDS.len() {
        n += FIELDS[i].1;
        i += 1;
    }
    n
};

/// (lsb, bits) of field `name`. Panics on an unknown name (a generator or testbench bug).
pub fn field(name: &str) -> (usize, usize) {
    if let Some(&(_, _, len)) = EXT.iter().find(|e| e.0 == name) {
        return (field("ext").0 + ext_slot(name), 8 * len);
    }
    let mut lsb = 0;
    for &(n, bits) in FIELDS {
        if n == name {
            return (lsb, bits);
        }
        lsb += bits;
    }
    panic!("no metadata field {name}")
}

/// Field `name` of a record held in Verilog signal `rec`, as a part-select.
pub fn select(rec: &str, name: &str) -> String {
    let (lsb, bits) = field(name);
    format!("{rec}[{}:{lsb}]", lsb + bits - 1)
}

/// A metadata record as bytes (bit `i` = bit `i % 8` of byte `i / 8`).
#[derive(Clone, PartialEq, Eq)]
pub struct Meta(pub Vec<u8>);

impl Default for Meta {
    fn default() -> Self {
        Meta(vec![0; BITS.div_ceil(8)])
    }
}

impl Meta {
    fn bit(&self, i: usize) -> bool {
        self.0[i / 8] >> (i % 8) & 1 != 0
    }

    fn put(&mut self, i: usize, v: bool) {
        if v {
            self.0[i / 8] |= 1 << (i % 8);
        } else {
            self.0[i / 8] &= !(1 << (i % 8));
        }
    }

    /// A field of up to 128 bits.
    pub fn get(&self, name: &str) -> u128 {
        let (lsb, bits) = field(name);
        (0..bits.min(128)).fold(0, |acc, i| acc | u128::from(self.bit(lsb + i)) << i)
    }

    pub fn set(&mut self, name: &str, v: u128) {
        let (lsb, bits) = field(name);
        for i in 0..bits.min(128) {
            self.put(lsb + i, v >> i & 1 != 0);
        }
    }

    /// A raw-bytes field, first byte most significant.
    pub fn get_bytes(&self, name: &str) -> Vec<u8> {
        let (lsb, bits) = field(name);
        let n = bits / 8;
        (0..n).map(|k| (0..8).fold(0u8, |acc, j| acc | u8::from(self.bit(lsb + 8 * (n - 1 - k) + j)) << j)).collect()
    }

    pub fn set_bytes(&mut self, name: &str, bytes: &[u8]) {
        let (lsb, bits) = field(name);
        let n = bits / 8;
        for (k, b) in bytes.iter().take(n).enumerate() {
            for j in 0..8 {
                self.put(lsb + 8 * (n - 1 - k) + j, b >> j & 1 != 0);
            }
        }
    }
}

/// `wire`'s verdict as the record's codes: (verdict, layer code, IP reject code); `None` = accepted.
/// The inverse of `Meta::drop_reason`.
pub fn codes(r: Option<&wire::DropReason>) -> (Verdict, u8, u8) {
    use wire::DropReason as R;
    let layer = |l: &Layer| LAYERS.iter().position(|x| x == l).unwrap_or(0) as u8;
    let why = |s: &str| IP_REJECTS.iter().position(|&x| x == s).unwrap_or(0) as u8;
    match r {
        None => (Verdict::Ok, 0, 0),
        Some(R::NotRoce) => (Verdict::NotRoce, 0, 0),
        Some(R::Truncated(l)) => (Verdict::Truncated, layer(l), 0),
        Some(R::BadIpHeader(s)) => (Verdict::BadIpHeader, 0, why(s)),
        Some(R::BadUdpLength) => (Verdict::BadUdpLength, 0, 0),
        Some(R::BadTver) => (Verdict::BadTver, 0, 0),
        Some(R::UnknownOpcode(_)) => (Verdict::UnknownOpcode, 0, 0),
        Some(R::BadLength) => (Verdict::BadLength, 0, 0),
        Some(R::BadIcrc) => (Verdict::BadIcrc, 0, 0),
        Some(R::TooLong) => (Verdict::TooLong, 0, 0),
    }
}

impl Meta {
    /// Whether the RX pipeline hands its frame on as payload: an accepted RoCEv2 frame with payload (the
    /// payload alone), or a frame that is not RoCEv2 (the whole frame, for the raw path).
    pub fn carries_payload(&self) -> bool {
        match self.get("verdict") {
            v if v == Verdict::Ok as u128 => self.get("payload_len") != 0,
            v => v == Verdict::NotRoce as u128,
        }
    }

    /// The record's verdict as `wire`'s drop reason (`None` = accepted); `None` also for a code this
    /// build does not know, which the RTL never emits.
    pub fn drop_reason(&self) -> Option<wire::DropReason> {
        use wire::DropReason as R;
        let layer = LAYERS.get(self.get("layer") as usize).copied().unwrap_or(Layer::Ethernet);
        let why = IP_REJECTS.get(self.get("ip_reject") as usize).copied().unwrap_or(IP_REJECTS[0]);
        match self.get("verdict") {
            1 => Some(R::NotRoce),
            2 => Some(R::Truncated(layer)),
            3 => Some(R::BadIpHeader(why)),
            4 => Some(R::BadUdpLength),
            5 => Some(R::BadTver),
            6 => Some(R::UnknownOpcode(self.get("opcode") as u8)),
            7 => Some(R::BadLength),
            8 => Some(R::BadIcrc),
            9 => Some(R::TooLong),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Meta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Meta");
        for &(n, _) in FIELDS.iter().filter(|f| f.0 != "ext") {
            d.field(n, &format_args!("{:#x}", self.get(n)));
        }
        for (n, _, _) in EXT.iter().filter(|e| self.get(&format!("has_{}", e.0)) != 0) {
            d.field(n, &format_args!("{:02x?}", self.get_bytes(n)));
        }
        d.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_reasons_round_trip_through_the_codes() {
        use wire::DropReason as R;
        let mut all =
            vec![R::NotRoce, R::BadUdpLength, R::BadTver, R::UnknownOpcode(0x42), R::BadLength, R::BadIcrc, R::TooLong];
        all.extend(LAYERS.iter().map(|&l| R::Truncated(l)));
        all.extend(IP_REJECTS.iter().map(|&s| R::BadIpHeader(s)));
        for r in all {
            let (v, layer, why) = codes(Some(&r));
            let mut m = Meta::default();
            m.set("verdict", v as u128);
            m.set("layer", u128::from(layer));
            m.set("ip_reject", u128::from(why));
            m.set("opcode", 0x42);
            assert_eq!(m.drop_reason(), Some(r));
        }
        assert_eq!(codes(None).0, Verdict::Ok);
        assert_eq!(Meta::default().drop_reason(), None);
    }

    #[test]
    fn fields_round_trip_and_do_not_overlap() {
        let mut m = Meta::default();
        m.set("dest_qp", 0xABCDEF);
        m.set_bytes("reth", &(1..=16).collect::<Vec<u8>>());
        m.set("psn", 0x123456);
        assert_eq!(m.get("dest_qp"), 0xABCDEF);
        assert_eq!(m.get("psn"), 0x123456);
        assert_eq!(m.get_bytes("reth"), (1..=16).collect::<Vec<u8>>());
        assert_eq!(m.get("ack_req"), 0);
        assert_eq!(m.get("reth") >> 120, 1, "first byte most significant");
        for (name, _, len) in EXT {
            assert_eq!(field(name).1, 8 * len, "{name}");
        }
    }

    /// Every header in the union; those an opcode carries together in bits apart, so a record holds all of
    /// a frame's headers at once.
    #[test]
    fn the_extended_headers_share_a_union_apart_where_an_opcode_carries_two() {
        let (ext, bits) = field("ext");
        assert_eq!(bits, EXT_BITS);
        assert_eq!(BITS, 870, "the record: 576 bits of slots became a union of {EXT_BITS}");
        for info in wire::opcode::TABLE.iter().flatten() {
            let present: Vec<_> = EXT.iter().filter(|e| info.has(e.1)).map(|e| field(e.0)).collect();
            for (k, &(lo, n)) in present.iter().enumerate() {
                assert!(lo >= ext && lo + n <= ext + EXT_BITS, "{info:?}: inside the union");
                for &(lo2, n2) in &present[k + 1..] {
                    assert!(lo + n <= lo2 || lo2 + n2 <= lo, "{info:?}: two headers overlap");
                }
            }
        }
        let mut m = Meta::default();
        m.set_bytes("reth", &[0x11; 16]);
        m.set_bytes("immdt", &[0x22; 4]);
        assert_eq!(
            (m.get_bytes("reth"), m.get_bytes("immdt")),
            (vec![0x11; 16], vec![0x22; 4]),
            "WRITE with immediate"
        );
    }
}
