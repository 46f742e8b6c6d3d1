//! The RX header decoder: combinational logic over the first `HDR_BYTES` bytes of a frame and its length.
//! It reproduces `wire::parse`'s checks in wire's order (everything but the ICRC, which needs the whole
//! frame) and fills the metadata record. Also gives the ingress what it needs early: VLAN, IP version and
//! the frame offset where the IP packet ends.
//!
//! The Verilog is generated here from `wire`'s layouts and opcode table (see `kit`): the checks are a
//! priority chain and the field extraction a four-way mux (VLAN or not x IPv4 or IPv6) per field, which
//! `#[hdl_gen]` cannot express without locals or loops.

use super::meta::{self, Verdict, EXT, IP_REJECTS};
use crate::kit::*;
use std::fmt::Write as _;
use wire::roce::Layer;
use wire::{bth, eth, ipv4, ipv6};

/// Header bytes the decoder sees: enough for VLAN + IPv6 + UDP + BTH + the longest extended headers.
pub const HDR_BYTES: usize = 128;

/// The decoder block. `hdr` holds frame bytes 0..128 (byte `i` in bits `8i+7:8i`), `len` the frame length.
#[derive(Clone, Debug, Default, LogicBlock)]
pub struct Decode {
    pub hdr: Signal<In, Bits<1024>>,
    pub len: Signal<In, Bits<16>>,
    pub meta: Signal<Out, Bits<{ meta::BITS }>>,
    pub vlan: Signal<Out, Bit>,
    pub ipv6: Signal<Out, Bit>,
    pub ip_end: Signal<Out, Bits<17>>,
}

impl Logic for Decode {
    fn update(&mut self) {
        // Verified in Verilator only (the sim crate); rust-hdl's own simulator is not used for this block.
    }

    fn connect(&mut self) {
        self.meta.connect();
        self.vlan.connect();
        self.ipv6.connect();
        self.ip_end.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog().lines().map(str::to_string))
    }
}

/// Big-endian bytes `[o, o + n)` of `hdr` as a Verilog concatenation.
fn be(o: usize, n: usize) -> String {
    let parts: Vec<String> = (o..o + n).map(|i| format!("hdr[{}:{}]", 8 * i + 7, 8 * i)).collect();
    format!("{{{}}}", parts.join(", "))
}

/// `n` bytes at `r` past the start of L3 (two variants: with or without VLAN).
fn l3(r: usize, n: usize) -> String {
    format!("(vlan ? {} : {})", be(eth::HEADER_LEN + eth::VLAN_LEN + r, n), be(eth::HEADER_LEN + r, n))
}

/// `n` bytes at `r` past the start of UDP (four variants).
fn l4(r: usize, n: usize) -> String {
    let at = |e: usize, ip: usize| be(e + ip + r, n);
    let (e0, e1) = (eth::HEADER_LEN, eth::HEADER_LEN + eth::VLAN_LEN);
    let (v4, v6) = (ipv4::HEADER_LEN, ipv6::HEADER_LEN);
    format!("(vlan ? (ipv6 ? {} : {}) : (ipv6 ? {} : {}))", at(e1, v6), at(e1, v4), at(e0, v6), at(e0, v4))
}

/// Like `l4`, with the bytes `covered` marks false (reserved) as zeros.
fn l4_fields(r: usize, covered: &[bool]) -> String {
    let bytes: Vec<String> = covered.iter().enumerate().map(|(i, &c)| if c { l4(r + i, 1) } else { "8'd0".into() }).collect();
    format!("{{{}}}", bytes.join(", "))
}

fn layer_code(l: Layer) -> usize {
    meta::LAYERS.iter().position(|&x| x == l).expect("layer in LAYERS")
}

fn reject_code(why: &str) -> usize {
    IP_REJECTS.iter().position(|&x| x == why).expect("reason in IP_REJECTS")
}

/// The whole body of the decoder module.
pub fn verilog() -> String {
    let mut v = String::new();
    let udp_hdr = wire::udp::UdpRepr::LEN;
    let bth_off = udp_hdr; // BTH right after UDP
    let ext_off = udp_hdr + bth::HEADER_LEN;
    let icrc = wire::icrc::ICRC_LEN;
    let decls = [
        "reg [15:0] etype;",
        "reg is4, is6;",
        "reg [16:0] eth_len, ip_hl, l3len, iplen, l4len, l5len, ext_len, need, data_len;",
        "reg [3:0] ver;",
        "reg [19:0] csum;",
        "reg [16:0] csum1;",
        "reg [15:0] csum2;",
        "reg [15:0] dport, ulen;",
        "reg [7:0] opcode, flags, l3b0, l3b1, bth_cc, bth_ack;",
        "reg known;",
        "reg [3:0] verdict;",
        "reg [2:0] layer, ip_reject;",
    ];
    for d in decls {
        writeln!(v, "{d}").unwrap();
    }
    for (name, _, n) in EXT {
        writeln!(v, "reg has_{name};\nreg [4:0] off_{name};\nreg [{}:0] raw_{name};", 8 * n - 1).unwrap();
    }
    writeln!(v, "always @(*) begin").unwrap();
    // Ethernet and VLAN.
    writeln!(v, "    vlan = {} == 16'h{:04x};", be(12, 2), eth::ethertype::VLAN).unwrap();
    writeln!(v, "    etype = vlan ? {} : {};", be(16, 2), be(12, 2)).unwrap();
    writeln!(v, "    is4 = etype == 16'h{:04x};\n    is6 = etype == 16'h{:04x};", eth::ethertype::IPV4, eth::ethertype::IPV6).unwrap();
    writeln!(v, "    ipv6 = is6;").unwrap();
    writeln!(v, "    eth_len = vlan ? 17'd{} : 17'd{};", eth::HEADER_LEN + eth::VLAN_LEN, eth::HEADER_LEN).unwrap();
    writeln!(v, "    ip_hl = is6 ? 17'd{} : 17'd{};", ipv6::HEADER_LEN, ipv4::HEADER_LEN).unwrap();
    writeln!(v, "    l3len = {{1'b0, len}} - eth_len;").unwrap();
    writeln!(v, "    l3b0 = {};\n    l3b1 = {};\n    ver = l3b0[7:4];", l3(0, 1), l3(1, 1)).unwrap();
    // IP length: IPv4 total length, or IPv6 payload length + 40.
    writeln!(v, "    iplen = is6 ? {{1'b0, {}}} + 17'd{} : {{1'b0, {}}};", l3(ipv6::field::PAYLOAD_LEN.start, 2), ipv6::HEADER_LEN, l3(ipv4::field::TOTAL_LEN.start, 2)).unwrap();
    writeln!(v, "    ip_end = eth_len + iplen;").unwrap();
    // IPv4 header checksum: the ones' complement sum of the ten words must be 0xFFFF.
    let words: Vec<String> = (0..ipv4::HEADER_LEN / 2).map(|i| format!("{{4'd0, {}}}", l3(2 * i, 2))).collect();
    writeln!(v, "    csum = {};", words.join(" + ")).unwrap();
    writeln!(v, "    csum1 = {{1'b0, csum[15:0]}} + {{13'd0, csum[19:16]}};\n    csum2 = csum1[15:0] + {{15'd0, csum1[16]}};").unwrap();
    writeln!(v, "    l4len = iplen - ip_hl;\n    l5len = l4len - 17'd{udp_hdr};").unwrap();
    writeln!(v, "    dport = {};\n    ulen = {};", l4(2, 2), l4(4, 2)).unwrap();
    writeln!(v, "    opcode = {};\n    flags = {};", l4(bth_off + bth::field::OPCODE, 1), l4(bth_off + bth::field::FLAGS, 1)).unwrap();
    writeln!(v, "    bth_cc = {};\n    bth_ack = {};", l4(bth_off + bth::field::CC, 1), l4(bth_off + bth::field::ACK, 1)).unwrap();
    // The opcode table: known opcodes, their extended-header length and each header's offset.
    v.push_str(&meta::ext_table_verilog(17, true));
    // Each extended header: a mux over the offsets the table gives it.
    for (name, bit, n) in EXT {
        writeln!(v, "    raw_{name} = {}'d0;", 8 * n).unwrap();
        for o in meta::ext_offsets(bit) {
            writeln!(v, "    if (off_{name} == 5'd{o}) raw_{name} = {};", l4_fields(ext_off + o, &meta::ext_covered(name))).unwrap();
        }
    }
    writeln!(v, "    need = 17'd{} + ext_len;", bth::HEADER_LEN + icrc).unwrap();
    writeln!(v, "    data_len = l5len - need;").unwrap();
    // The checks, in wire::parse's order.
    let t = |l: Layer| format!("begin verdict = 4'd{}; layer = 3'd{}; end", Verdict::Truncated as u8, layer_code(l));
    let d = |x: Verdict| format!("verdict = 4'd{};", x as u8);
    let bad_ip = |why: &str| format!("begin verdict = 4'd{}; ip_reject = 3'd{}; end", Verdict::BadIpHeader as u8, reject_code(why));
    let pad = "{15'd0, flags[5:4]}";
    writeln!(v, "    verdict = 4'd0;\n    layer = 3'd0;\n    ip_reject = 3'd0;").unwrap();
    writeln!(v, "    if (len < 16'd{}) {}", eth::HEADER_LEN, t(Layer::Ethernet)).unwrap();
    writeln!(v, "    else if (vlan && len < 16'd{}) {}", eth::HEADER_LEN + eth::VLAN_LEN, t(Layer::Vlan)).unwrap();
    writeln!(v, "    else if (!is4 && !is6) {}", d(Verdict::NotRoce)).unwrap();
    writeln!(v, "    else if (is4 && l3len < 17'd{}) {}", ipv4::HEADER_LEN, t(Layer::Ipv4)).unwrap();
    writeln!(v, "    else if (is4 && {} != 8'd{} && ver == 4'd4) {}", l3(ipv4::field::PROTOCOL, 1), ipv4::PROTO_UDP, d(Verdict::NotRoce)).unwrap();
    writeln!(v, "    else if (is4 && ver != 4'd4) {}", bad_ip(ipv4::reject::VERSION)).unwrap();
    writeln!(v, "    else if (is4 && l3b0[3:0] != 4'd{}) {}", ipv4::HEADER_LEN / 4, bad_ip(ipv4::reject::IHL)).unwrap();
    writeln!(v, "    else if (is4 && (iplen < 17'd{} || iplen > l3len)) {}", ipv4::HEADER_LEN, bad_ip(ipv4::reject::TOTAL_LEN)).unwrap();
    writeln!(v, "    else if (is4 && ({} & 16'h3fff) != 16'd0) {}", l3(ipv4::field::FLAGS_FRAG.start, 2), bad_ip(ipv4::reject::FRAGMENT)).unwrap();
    writeln!(v, "    else if (is4 && csum2 != 16'hffff) {}", bad_ip(ipv4::reject::CHECKSUM)).unwrap();
    writeln!(v, "    else if (is6 && l3len < 17'd{}) {}", ipv6::HEADER_LEN, t(Layer::Ipv6)).unwrap();
    writeln!(v, "    else if (is6 && {} != 8'd{} && ver == 4'd6) {}", l3(ipv6::field::NEXT_HEADER, 1), ipv4::PROTO_UDP, d(Verdict::NotRoce)).unwrap();
    writeln!(v, "    else if (is6 && ver != 4'd6) {}", bad_ip(ipv6::reject::VERSION)).unwrap();
    writeln!(v, "    else if (is6 && {} != 8'd{}) {}", l3(ipv6::field::NEXT_HEADER, 1), ipv4::PROTO_UDP, bad_ip(ipv6::reject::NEXT_HEADER)).unwrap();
    writeln!(v, "    else if (is6 && iplen > l3len) {}", bad_ip(ipv6::reject::PAYLOAD_LEN)).unwrap();
    writeln!(v, "    else if (l4len < 17'd{udp_hdr}) {}", t(Layer::Udp)).unwrap();
    writeln!(v, "    else if (dport != 16'd{}) {}", wire::udp::ROCE_V2_PORT, d(Verdict::NotRoce)).unwrap();
    writeln!(v, "    else if ({{1'b0, ulen}} != l4len) {}", d(Verdict::BadUdpLength)).unwrap();
    writeln!(v, "    else if (l5len < 17'd{}) {}", bth::HEADER_LEN, t(Layer::Bth)).unwrap();
    writeln!(v, "    else if (flags[3:0] != 4'd0) {}", d(Verdict::BadTver)).unwrap();
    writeln!(v, "    else if (!known) {}", d(Verdict::UnknownOpcode)).unwrap();
    writeln!(v, "    else if (l5len < need) {}", d(Verdict::BadLength)).unwrap();
    writeln!(v, "    else if ({pad} > data_len) {}", d(Verdict::BadLength)).unwrap();
    // The record.
    let set = |v: &mut String, name: &str, expr: &str| {
        let (lsb, bits) = meta::field(name);
        writeln!(v, "    meta[{}:{}] = {expr};", lsb + bits - 1, lsb).unwrap();
    };
    writeln!(v, "    meta = {}'d0;", meta::BITS).unwrap();
    set(&mut v, "verdict", "verdict");
    set(&mut v, "layer", "layer");
    set(&mut v, "ip_reject", "ip_reject");
    set(&mut v, "eth_dst", &be(0, 6));
    set(&mut v, "eth_src", &be(6, 6));
    set(&mut v, "vlan", "vlan");
    set(&mut v, "vlan_tci", &format!("(vlan ? {} : 16'd0)", be(14, 2)));
    set(&mut v, "ethertype", "etype");
    set(&mut v, "ipv6", "is6");
    let mapped = |r: usize| format!("{{80'd0, 16'hffff, {}}}", l3(r, 4));
    set(&mut v, "src_gid", &format!("(is6 ? {} : {})", l3(ipv6::field::SRC.start, 16), mapped(ipv4::field::SRC.start)));
    set(&mut v, "dst_gid", &format!("(is6 ? {} : {})", l3(ipv6::field::DST.start, 16), mapped(ipv4::field::DST.start)));
    set(&mut v, "tclass", &format!("(is6 ? {{l3b0[3:0], l3b1[7:4]}} : {})", l3(ipv4::field::TOS, 1)));
    set(&mut v, "hop_limit", &format!("(is6 ? {} : {})", l3(ipv6::field::HOP_LIMIT, 1), l3(ipv4::field::TTL, 1)));
    set(&mut v, "ip_ident", &format!("(is6 ? 16'd0 : {})", l3(ipv4::field::IDENT.start, 2)));
    set(&mut v, "flow_label", &format!("(is6 ? {{l3b1[3:0], {}}} : 20'd0)", l3(2, 2)));
    set(&mut v, "ip_payload_len", "iplen[15:0] - ip_hl[15:0]");
    set(&mut v, "udp_src_port", &l4(0, 2));
    set(&mut v, "opcode", "opcode");
    set(&mut v, "solicited", "flags[7]");
    set(&mut v, "mig_req", "flags[6]");
    set(&mut v, "pad_cnt", "flags[5:4]");
    set(&mut v, "pkey", &l4(bth_off + bth::field::PKEY.start, 2));
    set(&mut v, "fecn", "bth_cc[7]");
    set(&mut v, "becn", "bth_cc[6]");
    set(&mut v, "dest_qp", &l4(bth_off + bth::field::DEST_QP.start, 3));
    set(&mut v, "ack_req", "bth_ack[7]");
    set(&mut v, "psn", &l4(bth_off + bth::field::PSN.start, 3));
    for (name, _, _) in EXT {
        set(&mut v, &format!("has_{name}"), &format!("has_{name}"));
        set(&mut v, name, &format!("(has_{name} ? raw_{name} : {}'d0)", meta::field(name).1));
    }
    set(&mut v, "payload_off", &format!("eth_len[15:0] + ip_hl[15:0] + 16'd{ext_off} + ext_len[15:0]"));
    set(&mut v, "payload_len", "data_len[15:0] - {14'd0, flags[5:4]}");
    writeln!(v, "end").unwrap();
    v
}
