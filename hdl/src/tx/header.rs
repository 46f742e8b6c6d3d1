//! The TX header builder: from a metadata record (the RX layout, `rx::meta`) to the header bytes of the
//! frame, with every length derived (IP length, UDP length, PadCnt), the IPv4 checksum computed, the UDP
//! checksum 0 and DF set, as `wire`'s emit does. Generated as Verilog from `wire`'s layouts and opcode table.
//!
//! A pipeline of `STAGES` registers with valid bits that move together unless the sixth is full and both
//! banks of the last are taken: records go in on `in_valid`/`in_ready`; the last stage holds the header the
//! assembler is working on (`valid_next`, a cycle ahead) until `take`, and a second bank readies the next
//! header meanwhile. Stages:
//! 1. the record; 2. the opcode table, checksum pair sums; 3. header length, the rest of the frame's length,
//!    checksum partial sums; 4. frame length, checksum sum; 5. IP/UDP lengths, ICRC end, checksum folded;
//!    6. the header bytes (the checksum folded again on the way in); 7. the two banks.
//!
//! At most two carry chains in a row per stage.
//!
//! A record whose verdict is `NotRoce` is a raw frame (the raw packet QP's): its payload is the whole frame,
//! with no header image, padded with zeros to the Ethernet minimum and no ICRC (`raw`, held with the header,
//! tells the egress to write none).

use crate::kit::*;
use crate::rx::meta::{self, EXT};
use std::fmt::Write as _;
use wire::{bth, eth, ipv4, ipv6};

/// Pipeline registers from `meta` in to the header out.
pub const STAGES: usize = 7;

/// Each bank holds a header image: bytes 0..`hlen` (byte `i` in bits `8i+7:8i`, zeros after). `flen` is the
/// whole frame (headers, payload, pad and ICRC); `vlan`/`ipv6` select the layout. The assembler walks the
/// held image a beat (`D` bits) at a time: `step` (a beat taken, not the frame's last) shifts it down a beat
/// (zeros in at the top; a cycle later, from a register, and `next_beat` allows for a shift pending), and
/// `next_beat` is the beat after the one last stepped from (so no select by beat number).
/// `first_self`/`first_other` are the first `D` bits of the image in the bank held and in the other one as
/// they will be next cycle (the one being filled now included), for an assembler that registers its header
/// beat a cycle ahead;
/// `single_self`/`single_other` likewise whether that header's frame is one beat long, `pay0_self`/
/// `pay0_other` whether its first beat takes payload; `valid_next` whether a header is held next cycle (the
/// assembler registers it).
#[derive(Clone, Debug, Default, LogicBlock)]
pub struct TxHeader<const D: usize> {
    pub clock: Signal<In, Clock>,
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    /// The header held is done with: the next one moves in.
    pub take: Signal<In, Bit>,
    pub step: Signal<In, Bit>,
    pub next_beat: Signal<Out, Bits<D>>,
    pub hlen: Signal<Out, Bits<16>>,
    pub flen: Signal<Out, Bits<16>>,
    /// Where the ICRC trailer starts (the CRC covers everything before).
    pub crc_end: Signal<Out, Bits<17>>,
    /// `flen - 1`: the frame offset of the last byte.
    pub last_byte: Signal<Out, Bits<16>>,
    pub plen: Signal<Out, Bits<16>>,
    /// The frame is raw: no headers, no ICRC.
    pub raw: Signal<Out, Bit>,
    pub vlan: Signal<Out, Bit>,
    pub ipv6: Signal<Out, Bit>,
    /// The header ends within the frame's first beat (`hlen < K`); the payload is longer than a beat
    /// (`plen > K`); there is payload.
    pub hfit: Signal<Out, Bit>,
    pub plen_gt: Signal<Out, Bit>,
    pub plen_nz: Signal<Out, Bit>,
    pub valid_next: Signal<Out, Bit>,
    pub pay0_self: Signal<Out, Bit>,
    pub pay0_other: Signal<Out, Bit>,
    pub first_self: Signal<Out, Bits<D>>,
    pub first_other: Signal<Out, Bits<D>>,
    pub single_self: Signal<Out, Bit>,
    pub single_other: Signal<Out, Bit>,
}

impl<const D: usize> Logic for TxHeader<D> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.in_ready.connect();
        self.next_beat.connect();
        self.hlen.connect();
        self.flen.connect();
        self.crc_end.connect();
        self.last_byte.connect();
        self.plen.connect();
        self.raw.connect();
        self.vlan.connect();
        self.ipv6.connect();
        self.hfit.connect();
        self.plen_gt.connect();
        self.plen_nz.connect();
        self.valid_next.connect();
        self.pay0_self.connect();
        self.pay0_other.connect();
        self.first_self.connect();
        self.first_other.connect();
        self.single_self.connect();
        self.single_other.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(D).lines().map(str::to_string))
    }
}

/// Field `name` of the record held in register `r`.
fn f(r: &str, name: &str) -> String {
    let (lsb, bits) = meta::field(name);
    format!("{r}[{}:{}]", lsb + bits - 1, lsb)
}

/// The big-endian lvalue for bytes `[o, o + n)` of `img`.
fn at(o: usize, n: usize) -> String {
    let parts: Vec<String> = (o..o + n).map(|i| format!("img_n[{}:{}]", 8 * i + 7, 8 * i)).collect();
    format!("{{{}}}", parts.join(", "))
}

/// The four layouts: (VLAN, IPv6) and where L3 and UDP start.
fn variants() -> [(bool, bool, usize, usize); 4] {
    let l3 = |vlan: bool| eth::HEADER_LEN + if vlan { eth::VLAN_LEN } else { 0 };
    let l4 = |vlan: bool, v6: bool| l3(vlan) + if v6 { ipv6::HEADER_LEN } else { ipv4::HEADER_LEN };
    [
        (false, false, l3(false), l4(false, false)),
        (false, true, l3(false), l4(false, true)),
        (true, false, l3(true), l4(true, false)),
        (true, true, l3(true), l4(true, true)),
    ]
}

/// Declarations of the opcode table's outputs held in stage `p` (`""` for the table itself).
fn ext_regs(p: &str) -> String {
    EXT.iter()
        .map(|(name, _, _)| format!("reg {p}has_{name};\nreg [4:0] {p}off_{name};"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The opcode table's outputs moving from stage `from` to stage `to`.
fn ext_pass(to: &str, from: &str) -> String {
    EXT.iter()
        .map(|(name, _, _)| format!("    {to}has_{name} <= {from}has_{name};\n    {to}off_{name} <= {from}off_{name};"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The whole body of the builder module, for a `d`-bit assembler beat.
pub fn verilog(d: usize) -> String {
    assert!(2 * d <= 1024, "the image holds at least two beats");
    let mut v = String::new();
    let w = |v: &mut String, s: &str| writeln!(v, "{s}").unwrap();
    let udp_hdr = wire::udp::UdpRepr::LEN;
    let ext_off = udp_hdr + bth::HEADER_LEN;
    let icrc = wire::icrc::ICRC_LEN;
    let (e0, e1) = (eth::HEADER_LEN, eth::HEADER_LEN + eth::VLAN_LEN);
    let (h4, h6) = (ipv4::HEADER_LEN, ipv6::HEADER_LEN);
    let by_layout = |bits: usize, n: &dyn Fn(bool, bool) -> usize, r: &str| {
        format!(
            "({} ? ({} ? {bits}'d{} : {bits}'d{}) : ({} ? {bits}'d{} : {bits}'d{}))",
            f(r, "vlan"),
            f(r, "ipv6"),
            n(true, true),
            n(true, false),
            f(r, "ipv6"),
            n(false, true),
            n(false, false)
        )
    };
    let eth_len = |vl: bool, _: bool| if vl { e1 } else { e0 };
    let ip_end = |vl: bool, v6: bool| eth_len(vl, v6) + if v6 { h6 } else { h4 };
    // The pipeline's valid bits and load enables.
    let n = STAGES - 1;
    w(&mut v, &(1..=n).map(|i| format!("reg v{i} = 1'b0;")).collect::<Vec<_>>().join("\n"));
    w(
        &mut v,
        &format!("reg [{}:0] {};", meta::BITS - 1, (1..=n).map(|i| format!("m{i}")).collect::<Vec<_>>().join(", ")),
    );
    // The last stage is two banks used in turn (a two-entry queue): the assembler reads bank `sel`, the
    // pipeline fills bank `wp` when it is free. `take` only flips `sel` and clears a valid bit, so the
    // assembler's end-of-frame logic drives no wide load enable.
    w(&mut v, "reg sel = 1'b0, wp = 1'b0, va = 1'b0, vb = 1'b0, sa = 1'b0, sb = 1'b0;");
    // The stages move together (`en`) unless the last one is full and waits for a bank: a ready that
    // rippled back stage by stage (closing up bubbles) was the TX pipeline's longest path, into the
    // record's load enable. Bubbles stay where they are while the pipeline waits.
    w(&mut v, "wire en_out = !(wp ? vb : va);");
    w(&mut v, "wire en = en_out || !v6;");
    w(&mut v, "always @(*) in_ready = en;");
    w(&mut v, "always @(posedge clock) begin");
    w(&mut v, "    if (en) begin v1 <= in_valid; m1 <= meta; end");
    for i in 2..=n {
        w(&mut v, &format!("    if (en) begin v{i} <= v{}; m{i} <= m{}; end", i - 1, i - 1));
    }
    w(&mut v, "end");

    // ---- Stage 2: the opcode table; checksum pair sums ----
    // The IPv4 checksum covers {0x45, TOS}, total length, ident, {DF}, {TTL, UDP}, 0 and the addresses; the
    // total length is 44 + ext_len + payload + pad (IPv4 + UDP + BTH + ICRC + the rest), so the sum is
    // {TTL, TOS} + ident + the four address words + payload + (pad + a constant) + ext_len.
    let constant = (0x45 << 8) + 0x4000 + usize::from(ipv4::PROTO_UDP) + h4 + ext_off + icrc;
    let (gl, _) = meta::field("src_gid");
    let (dl, _) = meta::field("dst_gid");
    let word = |r: &str, at: usize| format!("{{1'b0, {r}[{}:{}]}}", at + 15, at);
    w(&mut v, "reg [7:0] opcode;\nreg [15:0] ext_len;");
    w(&mut v, &ext_regs(""));
    let raw = |r: &str| format!("({} == 4'd{})", f(r, "verdict"), crate::rx::meta::Verdict::NotRoce as u8);
    w(&mut v, "always @(*) begin");
    w(&mut v, &format!("    opcode = {};", f("m1", "opcode")));
    v.push_str(&meta::ext_table_verilog(16));
    w(&mut v, "end");
    // PadCnt: what makes the payload a multiple of four bytes.
    let (pl, _) = meta::field("payload_len");
    w(&mut v, &format!("wire [1:0] pad1 = 2'd0 - m1[{}:{pl}];", pl + 1));
    w(&mut v, "reg [15:0] s2_ext_len, s2_hl0, s2_plen;\nreg [1:0] s2_pad;\nreg [16:0] s2_ca, s2_cb, s2_cc, s2_cd;");
    w(&mut v, &ext_regs("s2_"));
    w(&mut v, "always @(posedge clock) if (en) begin");
    w(&mut v, &format!("    s2_ext_len <= {} ? 16'd0 : ext_len;", raw("m1")));
    w(&mut v, &ext_pass("s2_", ""));
    w(
        &mut v,
        &format!("    s2_hl0 <= {} ? 16'd0 : {};", raw("m1"), by_layout(16, &|vl, v6| ip_end(vl, v6) + ext_off, "m1")),
    );
    w(&mut v, &format!("    s2_plen <= {};\n    s2_pad <= pad1;", f("m1", "payload_len")));
    w(
        &mut v,
        &format!(
            "    s2_ca <= {{1'b0, {}, {}}} + {{1'b0, {}}};",
            f("m1", "hop_limit"),
            f("m1", "tclass"),
            f("m1", "ip_ident")
        ),
    );
    w(&mut v, &format!("    s2_cb <= {} + {};", word("m1", gl + 16), word("m1", gl)));
    w(&mut v, &format!("    s2_cc <= {} + {};", word("m1", dl + 16), word("m1", dl)));
    w(&mut v, &format!("    s2_cd <= {{1'b0, {}}} + (17'd{constant} + {{15'd0, pad1}});", f("m1", "payload_len")));
    w(&mut v, "end");

    // ---- Stage 3 ----
    w(&mut v, "reg [15:0] s3_ext_len, s3_hlen, s3_tail, s3_plen;\nreg [1:0] s3_pad;\nreg [17:0] s3_cab, s3_ccd;");
    w(&mut v, &ext_regs("s3_"));
    w(&mut v, "always @(posedge clock) if (en) begin");
    w(&mut v, "    s3_ext_len <= s2_ext_len;\n    s3_plen <= s2_plen;\n    s3_pad <= s2_pad;");
    w(&mut v, &ext_pass("s3_", "s2_"));
    w(&mut v, "    s3_cab <= {1'b0, s2_ca} + {1'b0, s2_cb};\n    s3_ccd <= {1'b0, s2_cc} + {1'b0, s2_cd};");
    w(&mut v, "    s3_hlen <= s2_hl0 + s2_ext_len;");
    // A raw frame's tail is its payload, padded to the Ethernet minimum.
    let min = eth::MIN_FRAME_LEN;
    w(
        &mut v,
        &format!(
            "    s3_tail <= {} ? (s2_plen < 16'd{min} ? 16'd{min} : s2_plen) : s2_plen + {{13'd0, {{1'b0, s2_pad}} + 3'd{icrc}}};",
            raw("m2")
        ),
    );
    w(&mut v, "end");

    // ---- Stage 4 ----
    w(&mut v, "reg [15:0] s4_hlen, s4_flen, s4_plen;\nreg [1:0] s4_pad;\nreg [19:0] s4_sum;");
    w(&mut v, &ext_regs("s4_"));
    w(&mut v, "always @(posedge clock) if (en) begin");
    w(&mut v, "    s4_hlen <= s3_hlen;\n    s4_plen <= s3_plen;\n    s4_pad <= s3_pad;");
    w(&mut v, &ext_pass("s4_", "s3_"));
    w(&mut v, "    s4_sum <= {2'd0, s3_cab} + {2'd0, s3_ccd} + {4'd0, s3_ext_len};");
    w(&mut v, "    s4_flen <= s3_hlen + s3_tail;");
    w(&mut v, "end");

    // ---- Stage 5 ----
    w(&mut v, "reg [15:0] s5_hlen, s5_flen, s5_plen, s5_l3len, s5_l4len, s5_last_byte;\nreg [1:0] s5_pad;\nreg [16:0] s5_f1, s5_crc_end;");
    // The image's selects as registers of their own: each extended header at each of its offsets, and the
    // layout (the image's bits are AND-OR-ed by them, hundreds of loads each).
    let ext_at: Vec<(&str, usize, usize)> =
        EXT.iter().flat_map(|&(name, bit, n)| meta::ext_offsets(bit).into_iter().map(move |o| (name, o, n))).collect();
    for (name, o, _) in &ext_at {
        w(&mut v, &format!("reg s5_at_{name}_{o};"));
    }
    w(&mut v, "reg s5_lay0, s5_lay1, s5_lay2, s5_lay3;");
    w(&mut v, "always @(posedge clock) if (en) begin");
    w(&mut v, "    s5_hlen <= s4_hlen;\n    s5_flen <= s4_flen;\n    s5_plen <= s4_plen;\n    s5_pad <= s4_pad;");
    for (name, o, _) in &ext_at {
        w(&mut v, &format!("    s5_at_{name}_{o} <= s4_has_{name} && s4_off_{name} == 5'd{o};"));
    }
    for (k, (vl, v6, _, _)) in variants().into_iter().enumerate() {
        w(
            &mut v,
            &format!(
                "    s5_lay{k} <= !{} && {} == 1'b{} && {} == 1'b{};",
                raw("m4"),
                f("m4", "vlan"),
                u8::from(vl),
                f("m4", "ipv6"),
                u8::from(v6)
            ),
        );
    }
    w(&mut v, "    s5_f1 <= {1'b0, s4_sum[15:0]} + {13'd0, s4_sum[19:16]};");
    w(&mut v, &format!("    s5_crc_end <= {{1'b0, s4_flen}} - 17'd{icrc};"));
    w(&mut v, "    s5_last_byte <= s4_flen - 16'd1;");
    w(&mut v, &format!("    s5_l3len <= s4_flen - {};", by_layout(16, &eth_len, "m4")));
    w(&mut v, &format!("    s5_l4len <= s4_flen - {};", by_layout(16, &ip_end, "m4")));
    w(&mut v, "end");

    // ---- Stage 6 ----
    w(
        &mut v,
        "reg [15:0] s6_hlen, s6_flen, s6_plen, s6_last_byte;\nreg [16:0] s6_crc_end;\nreg [1023:0] img_n, s6_img;",
    );
    w(&mut v, "reg s6_hfit, s6_pay0, s6_plen_gt, s6_plen_nz, s6_single;");
    w(&mut v, "always @(posedge clock) if (en) begin");
    for x in ["hlen", "flen", "plen", "last_byte", "crc_end"] {
        w(&mut v, &format!("    s6_{x} <= s5_{x};"));
    }
    // The assembler's flags, from stage 5 (so each bank flag is a register copied from a register): the
    // header fits the first beat, the first beat takes payload, payload past the first beat, any payload,
    // the frame is one beat.
    let k = d / 8;
    w(&mut v, &format!("    s6_hfit <= s5_hlen < 16'd{k};\n    s6_pay0 <= s5_hlen < 16'd{k} && s5_plen != 16'd0;"));
    w(&mut v, &format!("    s6_plen_gt <= s5_plen > 16'd{k};\n    s6_plen_nz <= s5_plen != 16'd0;\n    s6_single <= s5_last_byte < 16'd{k};"));
    w(&mut v, "end");
    // The header bytes (`img_n`, from stage 5 with the checksum folded again) into `s6_img`, at the end.
    w(&mut v, "wire [15:0] csum5 = ~(s5_f1[15:0] + {15'd0, s5_f1[16]});");

    // ---- Out: the banks ----
    let outs = [
        ("img", "s6_img", 1024),
        ("hlen", "s6_hlen", 16),
        ("flen", "s6_flen", 16),
        ("crc_end", "s6_crc_end", 17),
        ("plen", "s6_plen", 16),
        ("last_byte", "s6_last_byte", 16),
    ];
    let (vl, v6l) = (f("m6", "vlan"), f("m6", "ipv6"));
    let flags = ["hfit", "pay0", "plen_gt", "plen_nz", "single"].map(|x| (x, format!("s6_{x}"), 1));
    let bank_fields: Vec<(&str, String, usize)> = outs
        .iter()
        .map(|&(o, x, b)| (o, x.to_string(), b))
        .chain([("vlan", vl, 1), ("ipv6", v6l, 1), ("raw", raw("m6"), 1)])
        .chain(flags)
        .collect();
    for (o, _, b) in &bank_fields {
        w(&mut v, &format!("reg [{}:0] a_{o}, b_{o};", b - 1));
    }
    w(&mut v, "always @(posedge clock) begin");
    w(&mut v, "    sa <= step && !sel;\n    sb <= step && sel;");
    w(&mut v, &format!("    if (sa) a_img <= a_img >> {d};\n    if (sb) b_img <= b_img >> {d};"));
    w(&mut v, "    if (take) begin if (sel) vb <= 1'b0; else va <= 1'b0; sel <= !sel; end");
    w(&mut v, "    if (en_out && v6) begin");
    w(&mut v, "        wp <= !wp;");
    for bank in ["a", "b"] {
        let cond = if bank == "a" { "!wp" } else { "wp" };
        w(&mut v, &format!("        if ({cond}) begin"));
        w(&mut v, &format!("            v{bank} <= 1'b1;"));
        for (o, x, _) in &bank_fields {
            w(&mut v, &format!("            {bank}_{o} <= {x};"));
        }
        w(&mut v, "        end");
    }
    w(&mut v, "    end");
    w(&mut v, "end");
    // Whether a header is held next cycle, for the assembler to register.
    w(&mut v, "wire sel_n = take ? !sel : sel;");
    w(&mut v, "wire va_n = (en_out && v6 && !wp) ? 1'b1 : (take && !sel) ? 1'b0 : va;");
    w(&mut v, "wire vb_n = (en_out && v6 && wp) ? 1'b1 : (take && sel) ? 1'b0 : vb;");
    w(&mut v, "always @(*) begin");
    w(&mut v, "    valid_next = sel_n ? vb_n : va_n;");
    // (`pay0` and `single` are read only through their `_self`/`_other` forms, the image a beat at a time.)
    for (o, _, _) in bank_fields.iter().filter(|(o, _, _)| !["pay0", "single", "img"].contains(o)) {
        w(&mut v, &format!("    {o} = sel ? b_{o} : a_{o};"));
    }
    // With a step pending (`sa`/`sb`), the beat after next; past the image, zeros.
    let beat = |bank: &str, i: usize| {
        if (i + 1) * d <= 1024 {
            format!("{bank}_img[{}:{}]", (i + 1) * d - 1, i * d)
        } else {
            format!("{d}'d0")
        }
    };
    w(
        &mut v,
        &format!(
            "    next_beat = sel ? (sb ? {} : {}) : (sa ? {} : {});",
            beat("b", 2),
            beat("b", 1),
            beat("a", 2),
            beat("a", 1)
        ),
    );
    w(&mut v, "end");
    // Each bank's first beat, and whether its frame is one beat, as they will be next cycle.
    let filling = |bank: &str| format!("(en_out && v6 && {}wp)", if bank == "a" { "!" } else { "" });
    let first = |bank: &str| format!("{} ? s6_img[{hi}:0] : {bank}_img[{hi}:0]", filling(bank), hi = d - 1);
    let single = |bank: &str| format!("{} ? s6_single : {bank}_single", filling(bank));
    w(
        &mut v,
        &format!(
            "always @(*) begin\n    first_self = sel ? {} : {};\n    first_other = sel ? {} : {};",
            first("b"),
            first("a"),
            first("a"),
            first("b")
        ),
    );
    w(
        &mut v,
        &format!(
            "    single_self = sel ? {} : {};\n    single_other = sel ? {} : {};",
            single("b"),
            single("a"),
            single("a"),
            single("b")
        ),
    );
    let pay0_next = |bank: &str| format!("{} ? s6_pay0 : {bank}_pay0", filling(bank));
    w(
        &mut v,
        &format!(
            "    pay0_self = sel ? {} : {};\n    pay0_other = sel ? {} : {};\nend",
            pay0_next("b"),
            pay0_next("a"),
            pay0_next("a"),
            pay0_next("b")
        ),
    );
    let m = |name: &str| f("m5", name);
    let vlan = m("vlan");
    let ipv6 = m("ipv6");
    w(&mut v, "always @(*) begin");
    writeln!(v, "    img_n = 1024'd0;").unwrap();
    // Ethernet (none for a raw frame).
    writeln!(v, "    if (!{}) begin", raw("m5")).unwrap();
    writeln!(v, "    {} = {};\n    {} = {};", at(0, 6), m("eth_dst"), at(6, 6), m("eth_src")).unwrap();
    let etype = format!("({ipv6} ? 16'h{:04x} : 16'h{:04x})", eth::ethertype::IPV6, eth::ethertype::IPV4);
    writeln!(
        v,
        "    if ({vlan}) begin {} = 16'h{:04x}; {} = {}; {} = {etype}; end",
        at(12, 2),
        eth::ethertype::VLAN,
        at(14, 2),
        m("vlan_tci"),
        at(16, 2)
    )
    .unwrap();
    writeln!(v, "    else {} = {etype};", at(12, 2)).unwrap();
    writeln!(v, "    end\nend").unwrap();
    // From L3 on, each layout's image on its own, then the one that applies OR-ed in: an AND-OR per bit,
    // not a chain of multiplexers. Within a layout the extended headers are OR-ed in likewise: the headers
    // an opcode carries never overlap, so at most one writes each byte.
    let (gl, _) = meta::field("src_gid");
    let (dl, _) = meta::field("dst_gid");
    let mut lv = String::new();
    for (k, (_, v6, l3, l4)) in variants().into_iter().enumerate() {
        let mut block = String::new();
        let v = &mut block;
        if v6 {
            writeln!(v, "        {} = {{4'h6, {}, {}}};", at(l3, 4), m("tclass"), m("flow_label")).unwrap();
            writeln!(v, "        {} = s5_l4len;", at(l3 + ipv6::field::PAYLOAD_LEN.start, 2)).unwrap();
            writeln!(v, "        {} = 8'd{};", at(l3 + ipv6::field::NEXT_HEADER, 1), ipv4::PROTO_UDP).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv6::field::HOP_LIMIT, 1), m("hop_limit")).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv6::field::SRC.start, 16), m("src_gid")).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv6::field::DST.start, 16), m("dst_gid")).unwrap();
        } else {
            writeln!(v, "        {} = 8'h45;", at(l3 + ipv4::field::VER_IHL, 1)).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv4::field::TOS, 1), m("tclass")).unwrap();
            writeln!(v, "        {} = s5_l3len;", at(l3 + ipv4::field::TOTAL_LEN.start, 2)).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv4::field::IDENT.start, 2), m("ip_ident")).unwrap();
            writeln!(v, "        {} = 16'h4000;", at(l3 + ipv4::field::FLAGS_FRAG.start, 2)).unwrap();
            writeln!(v, "        {} = {};", at(l3 + ipv4::field::TTL, 1), m("hop_limit")).unwrap();
            writeln!(v, "        {} = 8'd{};", at(l3 + ipv4::field::PROTOCOL, 1), ipv4::PROTO_UDP).unwrap();
            writeln!(v, "        {} = csum5;", at(l3 + ipv4::field::CHECKSUM.start, 2)).unwrap();
            writeln!(v, "        {} = m5[{}:{}];", at(l3 + ipv4::field::SRC.start, 4), gl + 31, gl).unwrap();
            writeln!(v, "        {} = m5[{}:{}];", at(l3 + ipv4::field::DST.start, 4), dl + 31, dl).unwrap();
        }
        writeln!(v, "        {} = {};", at(l4, 2), m("udp_src_port")).unwrap();
        writeln!(v, "        {} = 16'd{};", at(l4 + 2, 2), wire::udp::ROCE_V2_PORT).unwrap();
        writeln!(v, "        {} = s5_l4len;", at(l4 + 4, 2)).unwrap();
        let b = l4 + udp_hdr;
        writeln!(v, "        {} = {};", at(b + bth::field::OPCODE, 1), m("opcode")).unwrap();
        writeln!(
            v,
            "        {} = {{{}, {}, s5_pad, 4'd0}};",
            at(b + bth::field::FLAGS, 1),
            m("solicited"),
            m("mig_req")
        )
        .unwrap();
        writeln!(v, "        {} = {};", at(b + bth::field::PKEY.start, 2), m("pkey")).unwrap();
        writeln!(v, "        {} = {{{}, {}, 6'd0}};", at(b + bth::field::CC, 1), m("fecn"), m("becn")).unwrap();
        writeln!(v, "        {} = {};", at(b + bth::field::DEST_QP.start, 3), m("dest_qp")).unwrap();
        writeln!(v, "        {} = {{{}, 7'd0}};", at(b + bth::field::ACK, 1), m("ack_req")).unwrap();
        writeln!(v, "        {} = {};", at(b + bth::field::PSN.start, 3), m("psn")).unwrap();
        for (name, bit, n) in EXT {
            for o in meta::ext_offsets(bit) {
                let place = at(l4 + ext_off + o, n);
                writeln!(v, "        {place} = {place} | ({{{}{{s5_at_{name}_{o}}}}} & {});", 8 * n, m(name)).unwrap();
            }
        }
        writeln!(v, "end").unwrap();
        writeln!(
            lv,
            "reg [1023:0] img_l{k};\nalways @(*) begin\n    img_l{k} = 1024'd0;\n{}",
            block.replace("img_n[", &format!("img_l{k}["))
        )
        .unwrap();
        writeln!(lv, "wire [1023:0] img_s{k} = {{1024{{s5_lay{k}}}}} & img_l{k};").unwrap();
    }
    v.push_str(&lv);
    w(&mut v, "wire [1023:0] img = img_n | img_s0 | img_s1 | img_s2 | img_s3;");
    w(&mut v, "always @(posedge clock) if (en) s6_img <= img;");
    v
}
