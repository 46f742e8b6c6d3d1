//! `RxRoute`: where a received frame goes, the model's `recv::route`, as generated Verilog: a frame's RX
//! record, the port's MAC, the QP its BTH names (valid bit and `qp_attr` record) and the GID table entry
//! that QP's `sgid_index` names in; the route code and whether the frame is CE-marked out, one cycle later.
//!
//! The QP and GID are looked up combinationally from the block's own outputs: `qp_index` (the BTH's
//! destination QP) addresses the QP context, and `gid_index` (that QP's source GID index) the GID table.
//! A QP number past the table is no QP, whatever `qp_valid` says (a RAM addressed by the low bits answers
//! for another QP there).
//!
//! Everything comes from `wire`: the opcode kinds from `wire::opcode::TABLE`, the record fields from
//! `rx::meta` and `wire::contract::qpc`, the P_Key rule from `wire::bth`, the limits from the profile.

use crate::engine::cmd::exec::ATTR_BITS;
use crate::kit::*;
use crate::record::slice;
use crate::rx::meta::{self, Verdict, LAYERS};
use wire::bth::DEFAULT_PKEY;
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::QpState;
use wire::opcode::Transport;
use wire::roce::Layer;
use wire::OpKind;

/// The route codes on `route`: the model's `recv::Route`.
pub mod route {
    pub const OTHER_MAC: u8 = 0;
    pub const RAW: u8 = 1;
    pub const MALFORMED: u8 = 2;
    pub const BAD_PKEY: u8 = 3;
    pub const NO_QP: u8 = 4;
    pub const QP_STATE: u8 = 5;
    pub const OTHER_PEER: u8 = 6;
    pub const CNP: u8 = 7;
    pub const REQUEST: u8 = 8;
    pub const RESPONSE: u8 = 9;
    pub const RESPONSE_QP_STATE: u8 = 10;
}

#[derive(LogicBlock, Default)]
pub struct RxRoute {
    pub clock: Signal<In, Clock>,
    /// The frame's RX record (`rx::meta`).
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    /// The port's MAC, its first byte most significant (as the record's `eth_dst`).
    pub mac: Signal<In, Bits<48>>,
    /// The QP number the BTH names, that QP's valid bit and its `qp_attr` record, zero-extended.
    pub qp_index: Signal<Out, Bits<24>>,
    pub qp_valid: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    /// The GID table index that QP names, and that entry.
    pub gid_index: Signal<Out, Bits<4>>,
    pub gid: Signal<In, Bits<128>>,
    pub gid_valid: Signal<In, Bit>,
    /// A `route` code, and whether the IP header is CE-marked (only for the routes that take ECN).
    pub route: Signal<Out, Bits<4>>,
    pub ce: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl RxRoute {
    pub fn new(profile: Profile) -> Self {
        RxRoute { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RxRoute {
    fn update(&mut self) {
        // Verified in Verilator against the model's `recv::route` (sim/tests/rx_route.rs).
    }

    fn connect(&mut self) {
        self.qp_index.connect();
        self.gid_index.connect();
        self.route.connect();
        self.ce.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// Field `name` of the RX record.
fn m(name: &str) -> String {
    meta::select("meta", name)
}

/// `k_cnp`, `k_resp` (a response for the completer) and `k_rc` (an RC transport or a CNP: what an RC QP
/// takes) from `opcode`, by `wire`'s opcode table.
fn kind_table() -> Vec<String> {
    let mut v = vec![
        "reg k_cnp, k_resp, k_rc;".to_string(),
        "always @(*) begin".into(),
        "    k_cnp = 1'b0; k_resp = 1'b0; k_rc = 1'b0;".into(),
        "    case (opcode)".into(),
    ];
    for (op, info) in wire::opcode::TABLE.iter().enumerate() {
        let Some(info) = info else { continue };
        let mut set = Vec::new();
        if info.kind == OpKind::Cnp {
            set.push("k_cnp");
        } else if info.is_response() {
            set.push("k_resp");
        }
        if matches!(info.transport, Transport::Rc | Transport::Cnp) {
            set.push("k_rc");
        }
        if !set.is_empty() {
            let body: Vec<String> = set.iter().map(|f| format!("{f} = 1'b1;")).collect();
            v.push(format!("    8'h{op:02x}: begin {} end", body.join(" ")));
        }
    }
    v.extend(["    default: ;".into(), "    endcase".into(), "end".into()]);
    v
}

/// The Verilog body of `RxRoute` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let al = &c.attr;
    assert!(al.width() as usize <= ATTR_BITS, "qp_attr ({} bits) is wider than its port", al.width());
    let a = |n: &str| slice(al, "attr", n);
    let st = |q: QpState| format!("3'd{}", q as u8);
    let layer = |l: Layer| LAYERS.iter().position(|&x| x == l).expect("a layer code");
    let pkey_part = DEFAULT_PKEY & 0x7FFF;
    let pkey_full = DEFAULT_PKEY & 0x8000 != 0;
    let (pk, tc) = (meta::field("pkey").0, meta::field("tclass").0);
    let mut v = vec![
        "// The frame.".to_string(),
        format!("wire [3:0] verdict = {};", m("verdict")),
        format!("wire [2:0] layer = {};", m("layer")),
        format!("wire [47:0] eth_dst = {};", m("eth_dst")),
        format!("wire [7:0] opcode = {};", m("opcode")),
        format!("wire [23:0] dest_qp = {};", m("dest_qp")),
        // ECN, the traffic class's low two bits: 3 is CE.
        format!("wire ce_c = meta[{}:{tc}] == 2'd3;", tc + 1),
        format!("wire [127:0] src_gid = {};", m("src_gid")),
        format!("wire [127:0] dst_gid = {};", m("dst_gid")),
    ];
    v.extend(kind_table());
    v.extend([
        // A frame shorter than an Ethernet header has no MAC to look at.
        format!("wire short = verdict == 4'd{} && layer == 3'd{};", Verdict::Truncated as u8, layer(Layer::Ethernet)),
        "wire other_mac = !short && !eth_dst[40] && eth_dst != mac;".into(),
        // IBTA 10.9.3 against the port's one key: the partitions are equal and not zero, and one of the two
        // keys is a full member.
        match (pkey_part, pkey_full) {
            (0, _) => "wire pkey_ok = 1'b0;".into(),
            (part, true) => format!("wire pkey_ok = meta[{}:{pk}] == 15'd{part};", pk + 14),
            (part, false) => format!("wire pkey_ok = meta[{}:{pk}] == 15'd{part} && meta[{}];", pk + 14, pk + 15),
        },
        "always @(*) qp_index = dest_qp;".into(),
        "// The QP: an RC QP of this table (for an RC packet), its state, its peer and its own GID.".into(),
        format!("wire qp_ok = k_rc && dest_qp < 24'd{} && qp_valid && !{};", p.max_qp, a("raw")),
        format!("wire [2:0] state = {};", a("state")),
        format!("always @(*) gid_index = {};", a("sgid_index")),
        format!("wire connected = state != {} && state != {};", st(QpState::Reset), st(QpState::Init)),
        format!("wire peer_ok = {{{}, {}}} == src_gid && gid_valid && gid == dst_gid;", a("dgid_hi"), a("dgid_lo")),
        format!(
            "wire resp_ok = (state == {} || state == {}) && !{};",
            st(QpState::Rts),
            st(QpState::Sqd),
            a("flushing")
        ),
        "always @(posedge clock) begin".into(),
    ]);
    use route::*;
    let code = |c: u8| format!("4'd{c}");
    let chain: Vec<(String, String)> = vec![
        ("other_mac".into(), code(OTHER_MAC)),
        (format!("verdict == 4'd{}", Verdict::NotRoce as u8), code(RAW)),
        (format!("verdict != 4'd{}", Verdict::Ok as u8), code(MALFORMED)),
        ("!pkey_ok".into(), code(BAD_PKEY)),
        ("!qp_ok".into(), code(NO_QP)),
        ("!connected".into(), code(QP_STATE)),
        ("!peer_ok".into(), code(OTHER_PEER)),
        ("k_cnp".into(), code(CNP)),
        ("k_resp".into(), format!("resp_ok ? {} : {}", code(RESPONSE), code(RESPONSE_QP_STATE))),
    ];
    for (i, (cond, val)) in chain.iter().enumerate() {
        let els = if i == 0 { "" } else { "else " };
        v.push(format!("    {els}if ({cond}) route <= {val};"));
    }
    v.push(format!("    else route <= {};", code(REQUEST)));
    // CE counts for the routes that reach the responder or the completer: those past the CNP.
    let before: Vec<String> = chain[..8].iter().map(|(c, _)| format!("({c})")).collect();
    v.push(format!("    ce <= ce_c && !({});", before.join(" || ")));
    v.push("end".into());
    v
}
