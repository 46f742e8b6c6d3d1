//! The TX header builder: from a metadata record (the RX layout, `rx::meta`) to the header bytes of the
//! frame, with every length derived (IP length, UDP length, PadCnt), the IPv4 checksum computed, the UDP
//! checksum 0 and DF set, as `wire`'s emit does. Generated as Verilog from `wire`'s layouts and opcode table.

use crate::kit::*;
use crate::rx::meta::{self, EXT};
use std::fmt::Write as _;
use wire::{bth, eth, ipv4, ipv6};

/// `img` holds header bytes 0..`hlen` (byte `i` in bits `8i+7:8i`, zeros after); `flen` is the whole frame
/// (headers, payload, pad and ICRC); `vlan`/`ipv6` select the layout.
#[derive(Clone, Debug, Default, LogicBlock)]
pub struct TxHeader {
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    pub img: Signal<Out, Bits<1024>>,
    pub hlen: Signal<Out, Bits<16>>,
    pub flen: Signal<Out, Bits<16>>,
    /// Where the ICRC trailer starts (the CRC covers everything before).
    pub crc_end: Signal<Out, Bits<17>>,
    pub plen: Signal<Out, Bits<16>>,
    pub vlan: Signal<Out, Bit>,
    pub ipv6: Signal<Out, Bit>,
}

impl Logic for TxHeader {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.img.connect();
        self.hlen.connect();
        self.flen.connect();
        self.crc_end.connect();
        self.plen.connect();
        self.vlan.connect();
        self.ipv6.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog().lines().map(str::to_string))
    }
}

fn m(name: &str) -> String {
    let (lsb, bits) = meta::field(name);
    format!("meta[{}:{}]", lsb + bits - 1, lsb)
}

/// The big-endian lvalue for bytes `[o, o + n)` of `img`.
fn at(o: usize, n: usize) -> String {
    let parts: Vec<String> = (o..o + n).map(|i| format!("img[{}:{}]", 8 * i + 7, 8 * i)).collect();
    format!("{{{}}}", parts.join(", "))
}

/// The four layouts: (VLAN, IPv6) and where L3 and UDP start.
fn variants() -> [(bool, bool, usize, usize); 4] {
    let l3 = |vlan: bool| eth::HEADER_LEN + if vlan { eth::VLAN_LEN } else { 0 };
    let l4 = |vlan: bool, v6: bool| l3(vlan) + if v6 { ipv6::HEADER_LEN } else { ipv4::HEADER_LEN };
    [(false, false, l3(false), l4(false, false)), (false, true, l3(false), l4(false, true)), (true, false, l3(true), l4(true, false)), (true, true, l3(true), l4(true, true))]
}

/// The whole body of the builder module.
pub fn verilog() -> String {
    let mut v = String::new();
    let udp_hdr = wire::udp::UdpRepr::LEN;
    let ext_off = udp_hdr + bth::HEADER_LEN;
    for d in [
        "reg [7:0] opcode;",
        "reg [15:0] eth_len, ip_hl, ext_len, pad, l3len, l4len;",
        "reg [19:0] sum;",
        "reg [16:0] sum1;",
        "reg [15:0] sum2, csum;",
    ] {
        writeln!(v, "{d}").unwrap();
    }
    for (name, _, _) in EXT {
        writeln!(v, "reg has_{name};\nreg [4:0] off_{name};").unwrap();
    }
    writeln!(v, "always @(*) begin").unwrap();
    writeln!(v, "    vlan = {};\n    ipv6 = {};\n    opcode = {};", m("vlan"), m("ipv6"), m("opcode")).unwrap();
    v.push_str(&meta::ext_table_verilog(16, false));
    writeln!(v, "    eth_len = vlan ? 16'd{} : 16'd{};", eth::HEADER_LEN + eth::VLAN_LEN, eth::HEADER_LEN).unwrap();
    writeln!(v, "    ip_hl = ipv6 ? 16'd{} : 16'd{};", ipv6::HEADER_LEN, ipv4::HEADER_LEN).unwrap();
    writeln!(v, "    plen = {};\n    pad = (16'd4 - {{14'd0, plen[1:0]}}) & 16'd3;", m("payload_len")).unwrap();
    writeln!(v, "    hlen = eth_len + ip_hl + 16'd{ext_off} + ext_len;").unwrap();
    writeln!(v, "    flen = hlen + plen + pad + 16'd{};", wire::icrc::ICRC_LEN).unwrap();
    writeln!(v, "    crc_end = {{1'b0, flen}} - 17'd{};", wire::icrc::ICRC_LEN).unwrap();
    writeln!(v, "    l3len = flen - eth_len;\n    l4len = l3len - ip_hl;").unwrap();
    // IPv4 checksum over the header as emitted (checksum field 0).
    let words = [
        format!("{{8'h45, {}}}", m("tclass")),
        "l3len".into(),
        m("ip_ident"),
        "16'h4000".into(),
        format!("{{{}, 8'd{}}}", m("hop_limit"), ipv4::PROTO_UDP),
        "16'd0".into(),
    ];
    let (gl, _) = meta::field("src_gid");
    let (dl, _) = meta::field("dst_gid");
    let mut terms: Vec<String> = words.iter().map(|w| format!("{{4'd0, {w}}}")).collect();
    for base in [gl, dl] {
        terms.push(format!("{{4'd0, meta[{}:{}]}}", base + 31, base + 16));
        terms.push(format!("{{4'd0, meta[{}:{}]}}", base + 15, base));
    }
    writeln!(v, "    sum = {};", terms.join(" + ")).unwrap();
    writeln!(v, "    sum1 = {{1'b0, sum[15:0]}} + {{13'd0, sum[19:16]}};\n    sum2 = sum1[15:0] + {{15'd0, sum1[16]}};\n    csum = ~sum2;").unwrap();
    writeln!(v, "    img = 1024'd0;").unwrap();
    // Ethernet.
    writeln!(v, "    {} = {};\n    {} = {};", at(0, 6), m("eth_dst"), at(6, 6), m("eth_src")).unwrap();
    let etype = format!("(ipv6 ? 16'h{:04x} : 16'h{:04x})", eth::ethertype::IPV6, eth::ethertype::IPV4);
    writeln!(v, "    if (vlan) begin {} = 16'h{:04x}; {} = {}; {} = {etype}; end", at(12, 2), eth::ethertype::VLAN, at(14, 2), m("vlan_tci"), at(16, 2)).unwrap();
    writeln!(v, "    else {} = {etype};", at(12, 2)).unwrap();
    let (gl, _) = meta::field("src_gid");
    let (dl, _) = meta::field("dst_gid");
    for (vl, v6, l3, l4) in variants() {
        writeln!(v, "    if (vlan == 1'b{} && ipv6 == 1'b{}) begin", u8::from(vl), u8::from(v6)).unwrap();
        if v6 {
            writeln!(v, "        {} = {{4'h6, {}, {}}};", at(l3, 4), m("tclass"), m("flow_label")).unwrap();
            writeln!(v, "        {} = l4len;", at(l3 + ipv6::field::PAYLOAD_LEN.start, 2)).unwrap();
            writeln!(v, "        {} = 8'd{};", at(l3 + ipv6::field::NEXT_HEADER, 1), ipv4::PROTO_UDP).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv6::field::HOP_LIMIT, 1), m("hop_limit")).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv6::field::SRC.start, 16), m("src_gid")).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv6::field::DST.start, 16), m("dst_gid")).unwrap();
        } else {
            writeln!(v, "        {} = 8'h45;", at(l3 + ipv4::field::VER_IHL, 1)).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv4::field::TOS, 1), m("tclass")).unwrap();
            writeln!(v, "        {} = l3len;", at(l3 + ipv4::field::TOTAL_LEN.start, 2)).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv4::field::IDENT.start, 2), m("ip_ident")).unwrap();
            writeln!(v, "        {} = 16'h4000;", at(l3 + ipv4::field::FLAGS_FRAG.start, 2)).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv4::field::TTL, 1), m("hop_limit")).unwrap();
            writeln!(v, "        {} = 8'd{};", at(l3 + ipv4::field::PROTOCOL, 1), ipv4::PROTO_UDP).unwrap();
            writeln!(v, "        {} = csum;", at(l3 + ipv4::field::CHECKSUM.start, 2)).unwrap();
            writeln!(v, "        {} = meta[{}:{}];", at(l3 + ipv4::field::SRC.start, 4), gl + 31, gl).unwrap();
            writeln!(v, "        {} = meta[{}:{}];", at(l3 + ipv4::field::DST.start, 4), dl + 31, dl).unwrap();
        }
        writeln!(v, "        {} = {};", at(l4, 2), m("udp_src_port")).unwrap();
        writeln!(v, "        {} = 16'd{};", at(l4 + 2, 2), wire::udp::ROCE_V2_PORT).unwrap();
        writeln!(v, "        {} = l4len;", at(l4 + 4, 2)).unwrap();
        let b = l4 + udp_hdr;
        writeln!(v, "        {} = opcode;", at(b + bth::field::OPCODE, 1)).unwrap();
        writeln!(v, "        {} = {{{}, {}, pad[1:0], 4'd0}};", at(b + bth::field::FLAGS, 1), m("solicited"), m("mig_req")).unwrap();
        writeln!(v, "        {} = {};", at(b + bth::field::PKEY.start, 2), m("pkey")).unwrap();
        writeln!(v, "        {} = {{{}, {}, 6'd0}};", at(b + bth::field::CC, 1), m("fecn"), m("becn")).unwrap();
        writeln!(v, "        {} = {};", at(b + bth::field::DEST_QP.start, 3), m("dest_qp")).unwrap();
        writeln!(v, "        {} = {{{}, 7'd0}};", at(b + bth::field::ACK, 1), m("ack_req")).unwrap();
        writeln!(v, "        {} = {};", at(b + bth::field::PSN.start, 3), m("psn")).unwrap();
        for (name, bit, n) in EXT {
            for o in meta::ext_offsets(bit) {
                writeln!(v, "        if (has_{name} && off_{name} == 5'd{o}) {} = {};", at(l4 + ext_off + o, n), m(name)).unwrap();
            }
        }
        writeln!(v, "    end").unwrap();
    }
    writeln!(v, "end").unwrap();
    v
}
