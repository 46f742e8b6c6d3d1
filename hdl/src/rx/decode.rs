//! The RX header decoder: pipelined logic over the first `HDR_BYTES` bytes of a frame and its length.
//! It reproduces `wire::parse`'s checks in wire's order (everything but the ICRC, which needs the whole
//! frame) and fills the metadata record `LATENCY` cycles after its inputs. It also gives the ingress, after
//! `PARAM_LATENCY` cycles, what the ICRC lanes need: VLAN, IP version and the frame offset where the IP
//! packet ends (these depend on the first `PARAM_BYTES` bytes only).
//!
//! Free-running: every stage registers every cycle, so a new header may enter each cycle. Stages:
//! 1. VLAN, EtherType, IP version, L3 length; the window realigned to L3 (two layouts); the opcode for
//!    each header layout (IPv4 or IPv6, VLAN or not) read from the opcode table, a ROM (on ECP5 block RAM,
//!    whose output register is stage 2's);
//! 2. IP length, IP field checks, checksum pair sums; the window realigned to UDP (IPv4 or IPv6);
//! 3. L4/L5 lengths, IP length checks, the opcode table's outputs for the layout, checksum partial
//!    sums, the IP end;
//! 4. UDP and BTH length checks, the extended headers, the record fields (the payload offset), the checksum
//!    folded once;
//! 5. checksum folded again, pad check, payload length, the frame length and IP version/IHL as flags;
//! 6. the checks in wire's order (the frame length first): verdict, layer, IP reason.
//!
//! At most two carry chains in a row per stage, for 125 MHz on an ECP5.
//!
//! The Verilog is generated here from `wire`'s layouts and opcode table (see `kit`).

use super::meta::{self, Verdict, EXT, IP_REJECTS};
use crate::kit::*;
use std::fmt::Write as _;
use wire::roce::Layer;
use wire::{bth, eth, ipv4, ipv6};

/// Header bytes the decoder sees: enough for VLAN + IPv6 + UDP + BTH + the longest extended headers.
pub const HDR_BYTES: usize = 128;
/// Cycles from `hdr`/`len` to `meta`.
pub const LATENCY: usize = 6;
/// Cycles from `hdr` to `vlan`/`ipv6`/`ip_end`.
pub const PARAM_LATENCY: usize = 3;
/// Leading frame bytes that determine `vlan`, `ipv6` and `ip_end` (up to the IPv6 payload length after a VLAN tag).
pub const PARAM_BYTES: usize = eth::HEADER_LEN + eth::VLAN_LEN + ipv6::field::PAYLOAD_LEN.end;

/// The decoder block. `hdr` holds frame bytes 0..128 (byte `i` in bits `8i+7:8i`), `len` the frame length.
#[derive(Clone, Debug, Default, LogicBlock)]
pub struct Decode {
    pub clock: Signal<In, Clock>,
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

/// Big-endian bytes `[o, o + n)` of the byte vector `v` as a Verilog concatenation.
fn be(v: &str, o: usize, n: usize) -> String {
    let parts: Vec<String> = (o..o + n).map(|i| format!("{v}[{}:{}]", 8 * i + 7, 8 * i)).collect();
    format!("{{{}}}", parts.join(", "))
}

/// Bytes `[o, o + n)` of `v` with the bytes `covered` marks false (reserved) as zeros.
fn be_fields(v: &str, o: usize, covered: &[bool]) -> String {
    let bytes: Vec<String> =
        covered.iter().enumerate().map(|(i, &c)| if c { be(v, o + i, 1) } else { "8'd0".into() }).collect();
    format!("{{{}}}", bytes.join(", "))
}

/// Bits `[8 * from, 8 * (from + n))` of `v`: `n` bytes from byte `from`, little-endian as stored.
fn window(v: &str, from: usize, n: usize) -> String {
    format!("{v}[{}:{}]", 8 * (from + n) - 1, 8 * from)
}

fn layer_code(l: Layer) -> usize {
    meta::LAYERS.iter().position(|&x| x == l).expect("layer in LAYERS")
}

fn reject_code(why: &str) -> usize {
    IP_REJECTS.iter().position(|&x| x == why).expect("reason in IP_REJECTS")
}

/// The opcode table as the decoder's ROM holds it: its fields (name, bits stored, bits declared), low bits
/// first, and the word for each opcode (0, so not `known`, for opcodes not in the table).
fn op_rom() -> (Vec<(String, usize, usize)>, Vec<u64>) {
    let ops = wire::opcode::TABLE.iter();
    let max_ext = ops.clone().flatten().map(|i| i.ext_len()).max().unwrap_or(0);
    let mut table = vec![
        ("known".to_string(), 1, 1),
        ("ext_len".to_string(), (usize::BITS - max_ext.leading_zeros()) as usize, 17),
    ];
    for (name, bit, _) in EXT {
        table.push((format!("has_{name}"), 1, 1));
        table.extend(ext_selects(bit).into_iter().map(|o| (format!("at_{name}_{o}"), 1, 1)));
    }
    let words = ops
        .map(|info| {
            let Some(info) = info else { return 0 };
            let mut vals = vec![1, info.ext_len()];
            for ((_, off), (_, bit, _)) in meta::ext_layout(info).zip(EXT) {
                vals.push(usize::from(off.is_some()));
                vals.extend(ext_selects(bit).into_iter().map(|o| usize::from(off == Some(o))));
            }
            let mut lsb = 0;
            vals.iter().zip(&table).fold(0u64, |word, (&val, (name, stored, _))| {
                assert!(val < 1 << stored, "{name} = {val} does not fit {stored} bits");
                lsb += stored;
                word | (val as u64) << (lsb - stored)
            })
        })
        .collect();
    (table, words)
}

/// The header layouts the opcode table is read for, each by a port of its own (IPv4 or IPv6, with a VLAN
/// tag or without), so the ROM's addresses come straight from the header window: `op{x}` in, `s2_rom{x}`
/// out two clocks later.
const OP_PORTS: [OpPort; 4] = [
    OpPort { name: "4", vlan: false, ipv6: false },
    OpPort { name: "6", vlan: false, ipv6: true },
    OpPort { name: "4v", vlan: true, ipv6: false },
    OpPort { name: "6v", vlan: true, ipv6: true },
];

/// A header layout the opcode table is read for, and the suffix of its port's signal names.
struct OpPort {
    name: &'static str,
    vlan: bool,
    ipv6: bool,
}

/// The opcode table ROM, `bits` wide, read at `OP_PORTS`. For ECP5, block RAM ports with their output
/// registers on (`dp16kd`), two layouts to a RAM; else a case table and two registers per port.
fn op_rom_verilog(words: &[u64], bits: usize) -> String {
    use crate::dp16kd::{self, Access, Port, TILE_BITS};
    let tiles = bits.div_ceil(TILE_BITS);
    let mut v = String::new();
    v += "`ifdef FERRITE_ECP5\n";
    let (addr, rom) = (OP_PORTS.map(|p| format!("op{}", p.name)), OP_PORTS.map(|p| format!("rom{}", p.name)));
    v += &format!("wire [{}:0] {};\n", tiles * TILE_BITS - 1, rom.join(", "));
    let port = |i: usize| Port { addr: &addr[i], addr_bits: 8, enable: "1'b1", access: Access::Read { dout: &rom[i] } };
    for pair in 0..OP_PORTS.len() / 2 {
        for t in 0..tiles {
            v += &dp16kd::instance(
                &format!("optab{pair}_{t}"),
                t,
                &port(2 * pair),
                &port(2 * pair + 1),
                Some(&dp16kd::tile_init(words, t)),
            );
        }
    }
    for OpPort { name: x, .. } in OP_PORTS {
        v += &format!("wire [{0}:0] s2_rom{x} = rom{x}[{0}:0];\n", bits - 1);
    }
    v += "`else\n";
    v += &format!("function [{}:0] optab(input [7:0] op);\n    case (op)\n", bits - 1);
    for (op, &word) in words.iter().enumerate().filter(|(_, &w)| w != 0) {
        v += &format!("    8'h{op:02x}: optab = {bits}'h{word:x};\n");
    }
    v += &format!("    default: optab = {bits}'h0;\n    endcase\nendfunction\n");
    for OpPort { name: x, .. } in OP_PORTS {
        v += &format!("reg [{0}:0] s1_rom{x}, s2_rom{x};\nalways @(posedge clock) begin\n    s1_rom{x} <= optab(op{x});\n    s2_rom{x} <= s1_rom{x};\nend\n", bits - 1);
    }
    v += "`endif\n";
    v
}

/// The offsets of extended header `bit` that stage 4 selects by a bit of their own: all but the last, its
/// multiplexer's default.
fn ext_selects(bit: u16) -> Vec<usize> {
    let mut offs = meta::ext_offsets(bit);
    offs.pop();
    offs
}

/// The whole body of the decoder module.
pub fn verilog() -> String {
    let mut v = String::new();
    let udp_hdr = wire::udp::UdpRepr::LEN;
    let ext_off = udp_hdr + bth::HEADER_LEN;
    let icrc = wire::icrc::ICRC_LEN;
    let (e0, e1) = (eth::HEADER_LEN, eth::HEADER_LEN + eth::VLAN_LEN);
    let (h4, h6) = (ipv4::HEADER_LEN, ipv6::HEADER_LEN);
    // The L3 window starts after the (longest) Ethernet header; the UDP window after the longest IP header.
    // Carried on: the MAC addresses and the VLAN TCI; the L3 window up to the end of the longest header
    // stack, and from the UDP header the source port and the BTH with the extended headers.
    let macs = eth::field::SRC.end;
    let eth_keep = macs + 2;
    let ext_end =
        EXT.iter().map(|&(_, bit, n)| meta::ext_offsets(bit).into_iter().max().map_or(0, |o| o + n)).max().unwrap_or(0);
    let l4_bytes = ext_off + ext_end;
    let l3_bytes = h6 + l4_bytes;
    let bth_bytes = l4_bytes - udp_hdr;
    let w = |v: &mut String, s: &str| writeln!(v, "{s}").unwrap();

    // ---- Stage 1: Ethernet ----
    w(&mut v, &format!("wire vlan0 = {} == 16'h{:04x};", be("hdr", 12, 2), eth::ethertype::VLAN));
    w(&mut v, &format!("reg s1_vlan, s1_is4, s1_is6;\nreg [15:0] s1_etype, s1_len;\nreg [16:0] s1_l3len;\nreg [{}:0] s1_eth;\nreg [{}:0] s1_l3;", 8 * eth_keep - 1, 8 * l3_bytes - 1));
    w(&mut v, "always @(posedge clock) begin");
    w(&mut v, "    s1_vlan <= vlan0;");
    w(&mut v, &format!("    s1_etype <= vlan0 ? {} : {};", be("hdr", 16, 2), be("hdr", 12, 2)));
    // The IP version, registered here: it selects hundreds of bits in stage 2.
    for (x, et) in [("is4", eth::ethertype::IPV4), ("is6", eth::ethertype::IPV6)] {
        w(
            &mut v,
            &format!(
                "    s1_{x} <= vlan0 ? {} == 16'h{et:04x} : {} == 16'h{et:04x};",
                be("hdr", 16, 2),
                be("hdr", 12, 2)
            ),
        );
    }
    w(&mut v, "    s1_len <= len;");
    w(&mut v, &format!("    s1_l3len <= vlan0 ? {{1'b0, len}} - 17'd{e1} : {{1'b0, len}} - 17'd{e0};"));
    w(
        &mut v,
        &format!("    s1_eth <= {{{}, {}}};", window("hdr", eth::field::VLAN_TCI.start, 2), window("hdr", 0, macs)),
    );
    w(&mut v, &format!("    s1_l3 <= vlan0 ? {} : {};", window("hdr", e1, l3_bytes), window("hdr", e0, l3_bytes)));
    w(&mut v, "end");
    // The opcode for each layout, looked up in the opcode table (registered twice: stages 1 and 2).
    for OpPort { name: x, vlan, ipv6 } in OP_PORTS {
        let eth = if vlan { e1 } else { e0 };
        let ip = if ipv6 { h6 } else { h4 };
        w(&mut v, &format!("wire [7:0] op{x} = {};", be("hdr", eth + ip + udp_hdr + bth::field::OPCODE, 1)));
    }
    let (table, words) = op_rom();
    v += &op_rom_verilog(&words, table.iter().map(|f| f.1).sum());

    // ---- Stage 2: IP ----
    let l3 = |r: usize, n: usize| be("s1_l3", r, n);
    w(&mut v, "wire is4 = s1_is4;\nwire is6 = s1_is6;");
    w(&mut v, &format!("reg s2_vlan, s2_is4, s2_is6, s2_l3short4, s2_l3short6, s2_proto_udp, s2_nh_udp, s2_frag;\nreg [15:0] s2_etype, s2_len, s2_ident;\nreg [16:0] s2_l3len, s2_iplen, s2_p0, s2_p1, s2_p2, s2_p3, s2_p4;\nreg [7:0] s2_l3b0, s2_tclass, s2_hop_limit;\nreg [19:0] s2_flow_label;\nreg [127:0] s2_src_gid, s2_dst_gid;\nreg [{}:0] s2_eth;\nreg [{}:0] s2_l4;", 8 * eth_keep - 1, 8 * l4_bytes - 1));
    let mapped = |r: usize| format!("{{80'd0, 16'hffff, {}}}", l3(r, 4));
    w(&mut v, "always @(posedge clock) begin");
    w(&mut v, "    s2_vlan <= s1_vlan;\n    s2_is4 <= is4;\n    s2_is6 <= is6;\n    s2_etype <= s1_etype;\n    s2_len <= s1_len;\n    s2_l3len <= s1_l3len;\n    s2_eth <= s1_eth;");
    w(&mut v, &format!("    s2_l3short4 <= s1_l3len < 17'd{h4};\n    s2_l3short6 <= s1_l3len < 17'd{h6};"));
    w(&mut v, &format!("    s2_l3b0 <= {};", l3(0, 1)));
    // IP length: IPv4 total length, or IPv6 payload length + 40.
    w(
        &mut v,
        &format!(
            "    s2_iplen <= is6 ? {{1'b0, {}}} + 17'd{h6} : {{1'b0, {}}};",
            l3(ipv6::field::PAYLOAD_LEN.start, 2),
            l3(ipv4::field::TOTAL_LEN.start, 2)
        ),
    );
    w(&mut v, &format!("    s2_proto_udp <= {} == 8'd{};", l3(ipv4::field::PROTOCOL, 1), ipv4::PROTO_UDP));
    w(&mut v, &format!("    s2_nh_udp <= {} == 8'd{};", l3(ipv6::field::NEXT_HEADER, 1), ipv4::PROTO_UDP));
    w(&mut v, &format!("    s2_frag <= ({} & 16'h3fff) != 16'd0;", l3(ipv4::field::FLAGS_FRAG.start, 2)));
    // IPv4 header checksum, first step: the ten words summed in pairs.
    for i in 0..h4 / 4 {
        w(&mut v, &format!("    s2_p{i} <= {{1'b0, {}}} + {{1'b0, {}}};", l3(4 * i, 2), l3(4 * i + 2, 2)));
    }
    w(
        &mut v,
        &format!("    s2_src_gid <= is6 ? {} : {};", l3(ipv6::field::SRC.start, 16), mapped(ipv4::field::SRC.start)),
    );
    w(
        &mut v,
        &format!("    s2_dst_gid <= is6 ? {} : {};", l3(ipv6::field::DST.start, 16), mapped(ipv4::field::DST.start)),
    );
    w(
        &mut v,
        &format!("    s2_tclass <= is6 ? {{{}, {}}} : {};", "s1_l3[3:0]", "s1_l3[15:12]", l3(ipv4::field::TOS, 1)),
    );
    w(&mut v, &format!("    s2_hop_limit <= is6 ? {} : {};", l3(ipv6::field::HOP_LIMIT, 1), l3(ipv4::field::TTL, 1)));
    w(&mut v, &format!("    s2_ident <= is6 ? 16'd0 : {};", l3(ipv4::field::IDENT.start, 2)));
    w(&mut v, &format!("    s2_flow_label <= is6 ? {{s1_l3[11:8], {}}} : 20'd0;", l3(2, 2)));
    w(&mut v, &format!("    s2_l4 <= is6 ? {} : {};", window("s1_l3", h6, l4_bytes), window("s1_l3", h4, l4_bytes)));
    w(&mut v, "end");
    // The opcode table's outputs for each layout (stage 3 picks one), from the table words.
    let mut lsb = 0;
    for (name, stored, bits) in &table {
        for OpPort { name: x, .. } in OP_PORTS {
            let pad = if bits > stored { format!("{}'d0, ", bits - stored) } else { String::new() };
            w(
                &mut v,
                &format!("wire [{}:0] s2_t{x}_{name} = {{{pad}s2_rom{x}[{}:{lsb}]}};", bits - 1, lsb + stored - 1),
            );
        }
        lsb += stored;
    }

    // ---- Stage 3: lengths, the opcode table's outputs for the IP version ----
    let l4 = |r: usize, n: usize| be("s2_l4", r, n);
    w(&mut v, "reg s3_vlan, s3_is4, s3_is6, s3_l3short4, s3_l3short6, s3_proto_udp, s3_nh_udp, s3_frag, s3_ipl_small, s3_ipl_big, s3_dport_ok, s3_known;");
    w(&mut v, "reg [15:0] s3_etype, s3_len, s3_ident, s3_ulen;\nreg [16:0] s3_ip_end, s3_l4len, s3_l5len, s3_l5m16, s3_ext_len;\nreg [15:0] s3_hdr_base;\nreg [18:0] s3_q0, s3_q1;");
    w(&mut v, &format!("reg [7:0] s3_l3b0, s3_tclass, s3_hop_limit;\nreg [19:0] s3_flow_label;\nreg [127:0] s3_src_gid, s3_dst_gid;\nreg [{}:0] s3_eth;\nreg [15:0] s3_sport;\nreg [{}:0] s3_bth;", 8 * eth_keep - 1, 8 * bth_bytes - 1));
    for (name, bit, _) in EXT {
        w(&mut v, &format!("reg s3_has_{name};"));
        for o in ext_selects(bit) {
            w(&mut v, &format!("reg s3_at_{name}_{o};"));
        }
    }
    w(&mut v, "always @(posedge clock) begin");
    for f in [
        "vlan",
        "is4",
        "is6",
        "l3short4",
        "l3short6",
        "proto_udp",
        "nh_udp",
        "frag",
        "etype",
        "len",
        "ident",
        "l3b0",
        "tclass",
        "hop_limit",
        "flow_label",
        "src_gid",
        "dst_gid",
        "eth",
    ] {
        w(&mut v, &format!("    s3_{f} <= s2_{f};"));
    }
    // L4 = IP length - IP header; L5 = L4 - UDP header; L5 - BTH - ICRC (the data length before the extended headers).
    let both = |ofs: usize| format!("s2_is6 ? s2_iplen - 17'd{} : s2_iplen - 17'd{}", h6 + ofs, h4 + ofs);
    w(&mut v, &format!("    s3_l4len <= {};", both(0)));
    w(&mut v, &format!("    s3_l5len <= {};", both(udp_hdr)));
    w(&mut v, &format!("    s3_l5m16 <= {};", both(udp_hdr + bth::HEADER_LEN + icrc)));
    w(&mut v, &format!("    s3_ipl_small <= s2_iplen < 17'd{h4};\n    s3_ipl_big <= s2_iplen > s2_l3len;"));
    w(&mut v, &format!("    s3_ip_end <= s2_vlan ? s2_iplen + 17'd{e1} : s2_iplen + 17'd{e0};"));
    w(
        &mut v,
        "    s3_q0 <= {2'd0, s2_p0} + {2'd0, s2_p1} + {2'd0, s2_p2};\n    s3_q1 <= {2'd0, s2_p3} + {2'd0, s2_p4};",
    );
    w(&mut v, &format!("    s3_sport <= {};\n    s3_bth <= {};", l4(0, 2), window("s2_l4", udp_hdr, bth_bytes)));
    w(
        &mut v,
        &format!("    s3_dport_ok <= {} == 16'd{};\n    s3_ulen <= {};", l4(2, 2), wire::udp::ROCE_V2_PORT, l4(4, 2)),
    );
    for (name, _, _) in &table {
        w(&mut v, &format!("    s3_{name} <= s2_is6 ? (s2_vlan ? s2_t6v_{name} : s2_t6_{name}) : (s2_vlan ? s2_t4v_{name} : s2_t4_{name});"));
    }
    let hdr_len = |vl: bool, v6: bool| (if vl { e1 } else { e0 }) + (if v6 { h6 } else { h4 }) + ext_off;
    // The headers up to the BTH's end; the extended headers (from the opcode table, registered here) are added in stage 4.
    w(
        &mut v,
        &format!(
            "    s3_hdr_base <= s2_vlan ? (s2_is6 ? 16'd{} : 16'd{}) : (s2_is6 ? 16'd{} : 16'd{});",
            hdr_len(true, true),
            hdr_len(true, false),
            hdr_len(false, true),
            hdr_len(false, false)
        ),
    );
    w(&mut v, "end");
    w(&mut v, "always @(*) begin\n    vlan = s3_vlan;\n    ipv6 = s3_is6;\n    ip_end = s3_ip_end;\nend");

    // ---- Stage 4: UDP/BTH checks, the record fields ----
    let bth_at = |r: usize, n: usize| be("s3_bth", r, n);
    w(&mut v, &format!("wire [19:0] csum = {{1'b0, s3_q0}} + {{1'b0, s3_q1}};\nreg [{}:0] rec;", meta::BITS - 1));
    let set = |v: &mut String, name: &str, expr: &str| {
        let (lsb, bits) = meta::field(name);
        writeln!(v, "    rec[{}:{}] = {expr};", lsb + bits - 1, lsb).unwrap();
    };
    w(&mut v, "always @(*) begin");
    w(&mut v, &format!("    rec = {}'d0;", meta::BITS));
    set(&mut v, "eth_dst", &be("s3_eth", 0, 6));
    set(&mut v, "eth_src", &be("s3_eth", 6, 6));
    set(&mut v, "vlan", "s3_vlan");
    set(&mut v, "vlan_tci", &format!("(s3_vlan ? {} : 16'd0)", be("s3_eth", macs, 2)));
    set(&mut v, "ethertype", "s3_etype");
    set(&mut v, "ipv6", "s3_is6");
    for f in ["src_gid", "dst_gid", "tclass", "hop_limit", "flow_label"] {
        set(&mut v, f, &format!("s3_{f}"));
    }
    set(&mut v, "ip_ident", "s3_ident");
    set(&mut v, "ip_payload_len", "s3_l4len[15:0]");
    set(&mut v, "udp_src_port", "s3_sport");
    set(&mut v, "opcode", &bth_at(bth::field::OPCODE, 1));
    // Bits `hi..=lo` of BTH byte `at` (yosys takes no part-select of a concatenation).
    let bits = |at: usize, hi: usize, lo: usize| format!("s3_bth[{}:{}]", 8 * at + hi, 8 * at + lo);
    let flags = |hi, lo| bits(bth::field::FLAGS, hi, lo);
    set(&mut v, "solicited", &flags(7, 7));
    set(&mut v, "mig_req", &flags(6, 6));
    set(&mut v, "pad_cnt", &flags(5, 4));
    set(&mut v, "pkey", &bth_at(bth::field::PKEY.start, 2));
    set(&mut v, "fecn", &bits(bth::field::CC, 7, 7));
    set(&mut v, "becn", &bits(bth::field::CC, 6, 6));
    set(&mut v, "dest_qp", &bth_at(bth::field::DEST_QP.start, 3));
    set(&mut v, "ack_req", &bits(bth::field::ACK, 7, 7));
    set(&mut v, "psn", &bth_at(bth::field::PSN.start, 3));
    // Each extended header: zero unless present (so `has` alone clears it: one register, not a compare, in
    // front of hundreds of flip-flops), else a mux over the offsets the table gives it, the last one the
    // default (the table gives a present header one of them).
    for (name, bit, _) in EXT {
        set(&mut v, &format!("has_{name}"), &format!("s3_has_{name}"));
        let (lsb, bits) = meta::field(name);
        let at = |o: usize| be_fields("s3_bth", bth::HEADER_LEN + o, &meta::ext_covered(name));
        let offs = meta::ext_offsets(bit);
        let (last, rest) = offs.split_last().expect("an extended header has an offset");
        let mux = rest.iter().rev().fold(at(*last), |els, o| format!("s3_at_{name}_{o} ? {} : {els}", at(*o)));
        writeln!(v, "    if (s3_has_{name}) rec[{}:{}] = {mux};", lsb + bits - 1, lsb).unwrap();
    }
    set(&mut v, "payload_off", "s3_hdr_base + s3_ext_len[15:0]");
    w(&mut v, "end");
    w(&mut v, "reg s4_vlan, s4_is4, s4_is6, s4_l3short4, s4_l3short6, s4_proto_udp, s4_nh_udp, s4_frag, s4_ipl_small, s4_ipl_big, s4_dport_ok, s4_known;");
    w(&mut v, "reg s4_l4short, s4_l5short, s4_ulen_bad, s4_tver_bad, s4_need_bad;\nreg [15:0] s4_len;\nreg [7:0] s4_l3b0;\nreg [16:0] s4_data_len, s4_f1;");
    w(&mut v, &format!("reg [{}:0] s4_rec;", meta::BITS - 1));
    w(&mut v, "always @(posedge clock) begin");
    for f in [
        "vlan",
        "is4",
        "is6",
        "l3short4",
        "l3short6",
        "proto_udp",
        "nh_udp",
        "frag",
        "ipl_small",
        "ipl_big",
        "dport_ok",
        "known",
        "len",
        "l3b0",
    ] {
        w(&mut v, &format!("    s4_{f} <= s3_{f};"));
    }
    w(
        &mut v,
        &format!("    s4_l4short <= s3_l4len < 17'd{udp_hdr};\n    s4_l5short <= s3_l5len < 17'd{};", bth::HEADER_LEN),
    );
    w(&mut v, "    s4_ulen_bad <= {1'b0, s3_ulen} != s3_l4len;");
    w(&mut v, &format!("    s4_tver_bad <= {} != 4'd0;", flags(3, 0)));
    w(&mut v, &format!("    s4_need_bad <= s3_l5len < 17'd{} + s3_ext_len;", bth::HEADER_LEN + icrc));
    w(&mut v, "    s4_data_len <= s3_l5m16 - s3_ext_len;");
    // The checksum folded once.
    w(&mut v, "    s4_f1 <= {1'b0, csum[15:0]} + {13'd0, csum[19:16]};");
    w(&mut v, "    s4_rec <= rec;");
    w(&mut v, "end");

    // ---- Stage 5: checksum, pad, payload length; the length and version flags ----
    let (pl, _) = meta::field("pad_cnt");
    let pad = format!("s4_rec[{}:{}]", pl + 1, pl);
    w(&mut v, "reg s5_vlan, s5_is4, s5_is6, s5_l3short4, s5_l3short6, s5_proto_udp, s5_nh_udp, s5_frag, s5_ipl_small, s5_ipl_big, s5_dport_ok, s5_known;");
    w(&mut v, "reg s5_l4short, s5_l5short, s5_ulen_bad, s5_tver_bad, s5_need_bad, s5_csum_ok, s5_pad_bad;\nreg [15:0] s5_payload_len;");
    w(&mut v, "reg s5_too_long, s5_eth_short, s5_vlan_short, s5_ver4, s5_ver6, s5_ihl_ok;\nreg [15:0] s5_len;");
    w(&mut v, &format!("reg [{}:0] s5_rec;", meta::BITS - 1));
    w(&mut v, "always @(posedge clock) begin");
    for f in [
        "vlan",
        "is4",
        "is6",
        "l3short4",
        "l3short6",
        "proto_udp",
        "nh_udp",
        "frag",
        "ipl_small",
        "ipl_big",
        "dport_ok",
        "known",
        "l4short",
        "l5short",
        "ulen_bad",
        "tver_bad",
        "need_bad",
        "rec",
    ] {
        w(&mut v, &format!("    s5_{f} <= s4_{f};"));
    }
    // The frame length and the IP header's first byte, told as flags here so stage 6 is all single bits.
    w(&mut v, &format!("    s5_too_long <= s4_len > 16'd{};\n    s5_len <= s4_len;", wire::MAX_FRAME_LEN));
    w(&mut v, &format!("    s5_eth_short <= s4_len < 16'd{e0};\n    s5_vlan_short <= s4_len < 16'd{e1};"));
    w(&mut v, "    s5_ver4 <= s4_l3b0[7:4] == 4'd4;\n    s5_ver6 <= s4_l3b0[7:4] == 4'd6;");
    w(&mut v, &format!("    s5_ihl_ok <= s4_l3b0[3:0] == 4'd{};", h4 / 4));
    // The ones' complement sum of the ten words must be 0xFFFF.
    w(&mut v, "    s5_csum_ok <= s4_f1[15:0] + {15'd0, s4_f1[16]} == 16'hffff;");
    w(&mut v, &format!("    s5_pad_bad <= {{15'd0, {pad}}} > s4_data_len;"));
    w(&mut v, &format!("    s5_payload_len <= s4_data_len[15:0] - {{14'd0, {pad}}};"));
    w(&mut v, "end");

    // ---- Stage 6: the checks, in wire::parse's order ----
    w(&mut v, "reg [3:0] verdict;\nreg [2:0] layer, ip_reject;");
    // Each check's outcome: (verdict, layer, IP reason) codes.
    let t = |l: Layer| (Verdict::Truncated as u8, layer_code(l), 0);
    let d = |x: Verdict| (x as u8, 0, 0);
    let bad_ip = |why: &str| (Verdict::BadIpHeader as u8, 0, reject_code(why));
    // The checks in two halves, each a priority chain of its own, the first half winning where one of its
    // conditions holds: two shallow chains side by side, not one deep one.
    let checks = [
        ("s5_too_long", d(Verdict::TooLong)),
        ("s5_eth_short", t(Layer::Ethernet)),
        ("s5_vlan && s5_vlan_short", t(Layer::Vlan)),
        ("!s5_is4 && !s5_is6", d(Verdict::NotRoce)),
        ("s5_is4 && s5_l3short4", t(Layer::Ipv4)),
        ("s5_is4 && !s5_proto_udp && s5_ver4", d(Verdict::NotRoce)),
        ("s5_is4 && !s5_ver4", bad_ip(ipv4::reject::VERSION)),
        ("s5_is4 && !s5_ihl_ok", bad_ip(ipv4::reject::IHL)),
        ("s5_is4 && (s5_ipl_small || s5_ipl_big)", bad_ip(ipv4::reject::TOTAL_LEN)),
        ("s5_is4 && s5_frag", bad_ip(ipv4::reject::FRAGMENT)),
        ("s5_is4 && !s5_csum_ok", bad_ip(ipv4::reject::CHECKSUM)),
        ("s5_is6 && s5_l3short6", t(Layer::Ipv6)),
        ("s5_is6 && !s5_nh_udp && s5_ver6", d(Verdict::NotRoce)),
        ("s5_is6 && !s5_ver6", bad_ip(ipv6::reject::VERSION)),
        ("s5_is6 && !s5_nh_udp", bad_ip(ipv6::reject::NEXT_HEADER)),
        ("s5_is6 && s5_ipl_big", bad_ip(ipv6::reject::PAYLOAD_LEN)),
        ("s5_l4short", t(Layer::Udp)),
        ("!s5_dport_ok", d(Verdict::NotRoce)),
        ("s5_ulen_bad", d(Verdict::BadUdpLength)),
        ("s5_l5short", t(Layer::Bth)),
        ("s5_tver_bad", d(Verdict::BadTver)),
        ("!s5_known", d(Verdict::UnknownOpcode)),
        ("s5_need_bad", d(Verdict::BadLength)),
        ("s5_pad_bad", d(Verdict::BadLength)),
    ];
    let (first, second) = checks.split_at(checks.len() / 2);
    for (x, half) in [("a", first), ("b", second)] {
        w(&mut v, &format!("reg [3:0] {x}_verdict;\nreg [2:0] {x}_layer, {x}_ip_reject;"));
        w(&mut v, "always @(*) begin");
        w(&mut v, &format!("    {x}_verdict = 4'd0;\n    {x}_layer = 3'd0;\n    {x}_ip_reject = 3'd0;"));
        for (i, (cond, (vd, ly, rj))) in half.iter().enumerate() {
            let els = if i == 0 { "" } else { "else " };
            w(&mut v, &format!("    {els}if ({cond}) begin {x}_verdict = 4'd{vd}; {x}_layer = 3'd{ly}; {x}_ip_reject = 3'd{rj}; end"));
        }
        w(&mut v, "end");
    }
    let a_hit: Vec<String> = first.iter().map(|(c, _)| format!("({c})")).collect();
    w(&mut v, &format!("wire a_hit = {};", a_hit.join(" || ")));
    w(&mut v, "always @(*) begin");
    w(&mut v, "    verdict = a_hit ? a_verdict : b_verdict;\n    layer = a_hit ? a_layer : b_layer;\n    ip_reject = a_hit ? a_ip_reject : b_ip_reject;");
    w(&mut v, "end");
    w(&mut v, "always @(posedge clock) begin");
    w(&mut v, "    meta <= s5_rec;");
    for (name, expr) in [
        ("verdict", "verdict"),
        ("layer", "layer"),
        ("ip_reject", "ip_reject"),
        ("payload_len", "s5_payload_len"),
        ("frame_len", "s5_len"),
    ] {
        let (lsb, bits) = meta::field(name);
        w(&mut v, &format!("    meta[{}:{}] <= {expr};", lsb + bits - 1, lsb));
    }
    w(&mut v, "end");
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp16kd::model;

    /// The ECP5 form of the opcode table, stepped pin by pin (`dp16kd::model`): every opcode on either port
    /// comes out two clocks later as the table's word, which carries `wire`'s extended headers.
    #[test]
    fn opcode_rom_block_ram_gives_the_table() {
        let (table, words) = op_rom();
        let bits = table.iter().map(|f| f.1).sum();
        let mut brams = model::parse(&op_rom_verilog(&words, bits));
        let mask = (1u128 << bits) - 1;
        // The addresses of the previous clock: their entries are in the output registers after this one.
        let mut prev = None;
        for op in 0..256 + 1 {
            // A different opcode on each port.
            let ops = OP_PORTS
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("op{}", p.name), (op as u128 * (2 * i as u128 + 1) + 11 * i as u128) % 256))
                .collect::<Vec<_>>();
            let buses = model::step(&mut brams, &ops.iter().map(|(n, a)| (n.as_str(), *a)).collect());
            if let Some(prev) = &prev {
                for (port, &p) in OP_PORTS.iter().zip(prev) {
                    let x = port.name;
                    assert_eq!(
                        buses[&*format!("rom{x}")] & mask,
                        u128::from(words[p as usize]),
                        "port {x}: opcode {p:#x}"
                    );
                }
            }
            prev = Some(ops.iter().map(|o| o.1).collect::<Vec<_>>());
        }
        // The words themselves: `known` and `ext_len` per opcode.
        for (op, info) in wire::opcode::TABLE.iter().enumerate() {
            assert_eq!(words[op] & 1, u64::from(info.is_some()));
            assert_eq!((words[op] >> 1) & ((1 << table[1].1) - 1), info.map_or(0, |i| i.ext_len()) as u64);
        }
    }
}
