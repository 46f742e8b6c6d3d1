//! `TxHeaders`: the headers of a packet a QP sends to its peer, the model's `headers::headers`, as generated
//! Verilog: the QP's `qp_attr` record, the GID table entry its `sgid_index` names, the port's MAC and the
//! packet's opcode, PSN and AckReq bit in; a TX record (`rx::meta`'s layout, the TX pipeline's input) with
//! the header fields set and the rest zero, and whether the source GID is set, out one cycle later.
//!
//! IPv4 when both GIDs are IPv4-mapped (`::ffff:a.b.c.d`), IPv6 otherwise; a hop limit of 0 means
//! `DEFAULT_HOP_LIMIT`. The engine that sends fills in the extended headers and the payload length.

use crate::engine::cmd::exec::ATTR_BITS;
use crate::kit::*;
use crate::record::slice;
use crate::rx::meta;
use wire::bth::DEFAULT_PKEY;
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::DEFAULT_HOP_LIMIT;

#[derive(LogicBlock, Default)]
pub struct TxHeaders {
    pub clock: Signal<In, Clock>,
    /// The QP's `qp_attr` record, zero-extended.
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    /// The GID table index the QP names, and that entry.
    pub gid_index: Signal<Out, Bits<4>>,
    pub gid: Signal<In, Bits<128>>,
    pub gid_valid: Signal<In, Bit>,
    /// The port's MAC, its first byte most significant.
    pub mac: Signal<In, Bits<48>>,
    pub opcode: Signal<In, Bits<8>>,
    pub psn: Signal<In, Bits<24>>,
    pub ack_req: Signal<In, Bit>,
    /// The TX record, and whether the QP's source GID is set (no packet goes out without one).
    pub meta: Signal<Out, Bits<{ meta::BITS }>>,
    pub ok: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl TxHeaders {
    pub fn new(profile: Profile) -> Self {
        TxHeaders { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for TxHeaders {
    fn update(&mut self) {
        // Verified in Verilator against the model's `headers::headers` (sim/tests/tx_headers.rs).
    }

    fn connect(&mut self) {
        self.gid_index.connect();
        self.meta.connect();
        self.ok.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `TxHeaders` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let al = &c.attr;
    assert!(al.width() as usize <= ATTR_BITS, "qp_attr ({} bits) is wider than its port", al.width());
    let a = |n: &str| slice(al, "attr", n);
    // An IPv4-mapped GID: 80 zero bits, 16 one bits, the address.
    let mapped = |g: &str| format!("({g}[127:48] == 80'd0 && {g}[47:32] == 16'hffff)");
    let mut v = vec![
        format!("always @(*) gid_index = {};", a("sgid_index")),
        format!("wire [127:0] dgid = {{{}, {}}};", a("dgid_hi"), a("dgid_lo")),
        format!("wire v4 = {} && {};", mapped("gid"), mapped("dgid")),
        format!("wire [7:0] hop = {} == 8'd0 ? 8'd{DEFAULT_HOP_LIMIT} : {};", a("hop_limit"), a("hop_limit")),
        "always @(posedge clock) begin".into(),
        format!("    meta <= {}'d0;", meta::BITS),
        "    ok <= gid_valid;".into(),
    ];
    let fields: [(&str, String); 15] = [
        ("eth_dst", a("dmac")),
        ("eth_src", "mac".into()),
        ("vlan", a("vlan_tagged")),
        ("vlan_tci", a("vlan_tci")),
        ("ipv6", "!v4".into()),
        ("src_gid", "gid".into()),
        ("dst_gid", "dgid".into()),
        ("tclass", a("traffic_class")),
        ("hop_limit", "hop".into()),
        ("flow_label", format!("v4 ? 20'd0 : {}", a("flow_label"))),
        ("udp_src_port", a("udp_sport")),
        ("opcode", "opcode".into()),
        ("pkey", format!("16'h{DEFAULT_PKEY:04x}")),
        ("dest_qp", a("dest_qpn")),
        ("psn", "psn".into()),
    ];
    for (name, val) in fields {
        let (lsb, bits) = meta::field(name);
        v.push(format!("    meta[{}:{lsb}] <= {val};", lsb + bits - 1));
    }
    let (lsb, _) = meta::field("ack_req");
    v.push(format!("    meta[{lsb}] <= ack_req;"));
    v.push("end".into());
    v
}
