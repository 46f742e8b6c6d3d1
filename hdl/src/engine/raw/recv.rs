//! `RawRecv`: each frame as the RX pipeline takes it, read for the model's `raw::receive`: is it an ARP
//! request (`wire::arp::parse_frame`: Ethernet/IPv4, the usual lengths, `oper` a request) or an ICMP echo
//! request (`wire::icmp::parse_echo_request`: IPv4 without options or fragments, a good header checksum, a
//! total length inside the frame, type 8 code 0, a good ICMP checksum), and no longer than a control-queue
//! slot? Then the frame is held (`held`: the RX pipeline takes no further frame) until the dispatch decides
//! it (`at_held` says its decision is the next), and its reply's fields (`super::patch`) wait in `patch`, the address to own in `own_ip`.
//!
//! The frame's first `HEAD_BYTES` are kept in registers (`hw`: those registers with the beat at hand laid
//! over them), its length counted, and the ICMP checksum summed as the beats go by (the 16-bit words from
//! the ICMP header's end to the IPv4 total length's, the last byte of an odd length padded with zero), so
//! the verdict is in at the last beat. Every beat within a slot's length is written to the control queue's
//! landing slot (`wr_*`).
//!
//! The dispatch decides frames in the order they came in: `inflight` counts the frames started and not yet
//! decided, and while a frame is held none starts, so while `inflight` is 1 the next decision is the held
//! frame's.

use super::{patch, HEAD_BYTES, PATCH_BITS, SLOT_BYTES};
use crate::kit::*;
use crate::record::build;
use wire::arp::{ArpFields, HTYPE_ETHERNET, REQUEST};
use wire::eth::{self, ethertype};
use wire::icmp::{IcmpEchoRepr, ECHO_REQUEST, REPLY_TTL};
use wire::ipv4;

#[derive(LogicBlock)]
pub struct RawRecv<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The RX pipeline's input: the beat at hand, taken this cycle with `in_take`.
    pub in_data: Signal<In, Bits<D>>,
    pub in_keep: Signal<In, Bits<K>>,
    pub in_last: Signal<In, Bit>,
    pub in_take: Signal<In, Bit>,
    /// A frame that asks for a reply waits for its decision: the RX pipeline starts no frame.
    pub held: Signal<Out, Bit>,
    /// The dispatch decided a frame; the next frame it decides is the held one (`at_held`).
    pub decided: Signal<In, Bit>,
    pub at_held: Signal<Out, Bit>,
    /// The held frame's reply (`super::patch`), and the IPv4 address it is for.
    pub patch: Signal<Out, Bits<PATCH_BITS>>,
    pub own_ip: Signal<Out, Bits<32>>,
    /// A beat for the control queue's landing slot, the `wr_beat`-th of its frame.
    pub wr_valid: Signal<Out, Bit>,
    pub wr_beat: Signal<Out, Bits<8>>,
    pub wr_data: Signal<Out, Bits<D>>,
}

impl<const D: usize, const K: usize> Default for RawRecv<D, K> {
    fn default() -> Self {
        assert!(D == 8 * K && HEAD_BYTES.is_multiple_of(K), "beats of 8 or 64 bytes");
        RawRecv {
            clock: Signal::default(),
            reset: Signal::default(),
            in_data: Signal::default(),
            in_keep: Signal::default(),
            in_last: Signal::default(),
            in_take: Signal::default(),
            held: Signal::default(),
            decided: Signal::default(),
            at_held: Signal::default(),
            patch: Signal::default(),
            own_ip: Signal::default(),
            wr_valid: Signal::default(),
            wr_beat: Signal::default(),
            wr_data: Signal::default(),
        }
    }
}

impl<const D: usize, const K: usize> Logic for RawRecv<D, K> {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_raw.rs).
    }

    fn connect(&mut self) {
        self.held.connect();
        self.at_held.connect();
        self.patch.connect();
        self.own_ip.connect();
        self.wr_valid.connect();
        self.wr_beat.connect();
        self.wr_data.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(K))
    }
}

/// Byte `n` of the header window.
fn b(n: usize) -> String {
    format!("hw[{}:{}]", 8 * n + 7, 8 * n)
}

/// Bytes `at..at + n` of the window, the first most significant.
fn bytes(at: usize, n: usize) -> String {
    format!("{{{}}}", (at..at + n).map(b).collect::<Vec<_>>().join(", "))
}

/// Bytes `x..x + n` after the Ethernet header, tagged (`vl`) or not.
fn l3(x: usize, n: usize) -> String {
    let (o0, o1) = (eth::HEADER_LEN, eth::HEADER_LEN + eth::VLAN_LEN);
    format!("(vl ? {} : {})", bytes(o1 + x, n), bytes(o0 + x, n))
}

/// Field `name` of a header that starts `base` bytes after the Ethernet header.
fn field(fields: &[(&str, std::ops::Range<usize>)], base: usize, name: &str) -> String {
    let r = fields.iter().find(|(n, _)| *n == name).map(|(_, r)| r.clone()).expect("a field of the header");
    l3(base + r.start, r.len())
}

/// The Verilog body of `RawRecv` for beats of `k` bytes.
pub fn verilog(k: usize) -> Vec<String> {
    let d = 8 * k;
    let nb = HEAD_BYTES / k;
    let sb = SLOT_BYTES / k;
    let lk = k.trailing_zeros();
    let (o0, o1) = (eth::HEADER_LEN, eth::HEADER_LEN + eth::VLAN_LEN);
    let icmp_at = ipv4::HEADER_LEN;
    let arp = ArpFields::FIELDS;
    let icmp = IcmpEchoRepr::FIELDS;
    let ip16 = |r: std::ops::Range<usize>| l3(r.start, r.len());
    let mut v = vec![
        "function [15:0] fold(input [31:0] x);".to_string(),
        "    reg [16:0] f1;".into(),
        "    begin f1 = {1'b0, x[15:0]} + {1'b0, x[31:16]}; fold = f1[15:0] + {15'd0, f1[16]}; end".into(),
        "endfunction".into(),
        "reg mid;".into(),
        "reg [13:0] bi;".into(),
        format!("reg [{}:0] win;", 8 * HEAD_BYTES - 1),
        "reg [31:0] acc;".into(),
        "reg [7:0] inflight;".into(),
        // The window with the beat at hand laid over it.
        format!("reg [{}:0] hw;", 8 * HEAD_BYTES - 1),
        "always @(*) begin".into(),
        "    hw = win;".into(),
    ];
    if nb == 1 {
        v.push("    if (bi == 14'd0) hw = in_data;".into());
    } else {
        v.push(format!(
            "    if (bi < 14'd{nb}) hw[{{bi[{}:0], {}'d0}} +: {d}] = in_data;",
            nb.trailing_zeros() - 1,
            lk + 3
        ));
    }
    v.push("end".into());
    v.push(format!("wire vl = {} == 16'h{:04x};", bytes(eth::field::TYPE.start, 2), ethertype::VLAN));
    v.push(format!(
        "wire [15:0] etype = vl ? {} : {};",
        bytes(eth::field::VLAN_TYPE.start, 2),
        bytes(eth::field::TYPE.start, 2)
    ));
    // The frame's length at the last beat.
    v.push(format!("reg [{}:0] nk;", lk));
    v.push("integer i;".into());
    v.push(format!("always @(*) begin nk = 0; for (i = 0; i < {k}; i = i + 1) nk = nk + {{{lk}'d0, in_keep[i]}}; end"));
    let pad = if lk < 6 { format!("{}'d0, ", 6 - lk) } else { String::new() };
    v.push(format!("wire [19:0] base = {{{pad}bi, {lk}'d0}};"));
    v.push(format!("wire [19:0] flen = base + {{{}'d0, nk}};", 20 - lk - 1));
    // The IPv4 header's words; the total length; where the ICMP words summed start and end.
    v.push(format!("wire [15:0] ip_len = {};", ip16(ipv4::field::TOTAL_LEN)));
    v.push(format!("wire [19:0] e = {{4'd0, ip_len}} + (vl ? 20'd{o1} : 20'd{o0});"));
    let s0 = icmp_at + IcmpEchoRepr::LEN / 2;
    v.push(format!("wire [19:0] s0 = vl ? 20'd{} : 20'd{};", o1 + s0, o0 + s0));
    let words: Vec<String> = (0..ipv4::HEADER_LEN / 2).map(|i| format!("{{16'd0, {}}}", l3(2 * i, 2))).collect();
    v.push(format!("wire [31:0] ip_sum = {};", words.join(" + ")));
    let (ttl_word, csum_word) = (ipv4::field::TTL / 2, ipv4::field::CHECKSUM.start / 2);
    let kept: Vec<&String> =
        words.iter().enumerate().filter(|(i, _)| ![ttl_word, csum_word].contains(i)).map(|p| p.1).collect();
    v.push(format!(
        "wire [31:0] rep_sum = {} + 32'h{:04x};",
        kept.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" + "),
        u16::from(REPLY_TTL) << 8 | u16::from(ipv4::PROTO_ICMP)
    ));
    // This beat's ICMP words.
    for j in 0..k / 2 {
        let (hi, lo) =
            (format!("in_data[{}:{}]", 16 * j + 7, 16 * j), format!("in_data[{}:{}]", 16 * j + 15, 16 * j + 8));
        v.push(format!("wire [19:0] p{j} = base + 20'd{};", 2 * j));
        v.push(format!(
            "wire [15:0] w{j} = (p{j} >= s0 && p{j} < e) ? {{{hi}, (p{j} + 20'd1 < e) ? {lo} : 8'd0}} : 16'd0;"
        ));
    }
    let terms: Vec<String> = (0..k / 2).map(|j| format!("{{16'd0, w{j}}}")).collect();
    v.push(format!("wire [31:0] bsum = {};", terms.join(" + ")));
    v.push("wire [31:0] total = (mid ? acc : 32'd0) + bsum;".into());
    // The checks.
    let f_icmp = |n| field(icmp, icmp_at, n);
    v.push(format!(
        "wire is_arp = etype == 16'h{:04x} && flen >= (vl ? 20'd{} : 20'd{}) && {} == 16'd{HTYPE_ETHERNET} && {} == 16'h{:04x} && {} == 8'd6 && {} == 8'd4 && {} == 16'd{REQUEST};",
        ethertype::ARP,
        o1 + wire::arp::ArpRepr::LEN,
        o0 + wire::arp::ArpRepr::LEN,
        field(arp, 0, "htype"),
        field(arp, 0, "ptype"),
        ethertype::IPV4,
        field(arp, 0, "hlen"),
        field(arp, 0, "plen"),
        field(arp, 0, "oper"),
    ));
    v.push(format!(
        "wire icmp_ok = fold(total + {{16'd0, {}, {}}} + {{16'd0, {}}}) == 16'hffff;",
        f_icmp("icmp_type"),
        f_icmp("code"),
        f_icmp("checksum")
    ));
    v.push(format!(
        "wire is_echo = etype == 16'h{:04x} && flen <= 20'd{SLOT_BYTES} && {} == 8'h45 && {} == 8'd{} && ({} & 16'h3fff) == 16'd0 && fold(ip_sum) == 16'hffff && ip_len >= 16'd{} && e <= flen && {} == 8'd{ECHO_REQUEST} && {} == 8'd0 && icmp_ok;",
        ethertype::IPV4,
        l3(ipv4::field::VER_IHL, 1),
        l3(ipv4::field::PROTOCOL, 1),
        ipv4::PROTO_ICMP,
        ip16(ipv4::field::FLAGS_FRAG),
        icmp_at + IcmpEchoRepr::LEN,
        f_icmp("icmp_type"),
        f_icmp("code"),
    ));
    // The reply's fields.
    let arp_end = (o0 + wire::arp::ArpRepr::LEN, o1 + wire::arp::ArpRepr::LEN);
    let (decls, rec) = build(&patch(), "patch", "np", |name, _| {
        Some(match name {
            "arp" => "is_arp".to_string(),
            "vlan" => "vl".into(),
            "tci" => bytes(eth::field::VLAN_TCI.start, 2),
            "mac_a" => format!("is_arp ? {} : {}", field(arp, 0, "sha"), bytes(eth::field::SRC.start, 6)),
            "mac_b" => format!("is_arp ? 48'd0 : {}", bytes(eth::field::DST.start, 6)),
            "ip_a" => format!("is_arp ? {} : {}", field(arp, 0, "spa"), ip16(ipv4::field::SRC)),
            "ip_b" => format!("is_arp ? {} : {}", field(arp, 0, "tpa"), ip16(ipv4::field::DST)),
            "csum_ip" => "~fold(rep_sum)".into(),
            "csum_icmp" => "~fold(total)".into(),
            "end" => format!("is_arp ? (vl ? 11'd{} : 11'd{}) : e[10:0]", arp_end.1, arp_end.0),
            _ => unreachable!("a field of the patch"),
        })
    });
    v.extend(decls);
    v.push(format!("wire [{}:0] next_patch = {rec};", PATCH_BITS - 1));
    v.extend([
        "always @(*) begin".to_string(),
        "    at_held = held && inflight == 8'd1;".into(),
        format!("    own_ip = {};", crate::record::slice(&patch(), "patch", "ip_b")),
        format!("    wr_valid = in_take && bi < 14'd{sb};"),
        "    wr_beat = bi[7:0];".into(),
        "    wr_data = in_data;".into(),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    if (in_take) begin".into(),
        "        win <= hw;".into(),
        "        acc <= total;".into(),
        "        if (in_last) patch <= next_patch;".into(),
        "    end".into(),
        "    if (reset) begin".into(),
        "        mid <= 1'b0; bi <= 14'd0; held <= 1'b0; inflight <= 8'd0;".into(),
        "    end else begin".into(),
        "        if (in_take) begin".into(),
        "            mid <= !in_last;".into(),
        "            bi <= in_last ? 14'd0 : (bi == 14'h3fff ? bi : bi + 14'd1);".into(),
        "        end".into(),
        "        if (in_take && in_last) held <= is_arp || is_echo;".into(),
        "        else if (at_held && decided) held <= 1'b0;".into(),
        "        inflight <= inflight + {7'd0, in_take && !mid} - {7'd0, decided};".into(),
        "    end".into(),
        "end".into(),
        format!("wire unused_hw = ^hw[{}:{}];", 8 * HEAD_BYTES - 1, 8 * arp_end.1),
    ]);
    v
}
