//! `RespCheck`: the responder's check chain, the model's `resp::check` (rxe's CHK_PSN, CHK_OP_SEQ,
//! CHK_OP_VALID, CHK_RESOURCE, CHK_LENGTH and CHK_RKEY), as generated Verilog: a request's RX record, its
//! QP's `qp_attr` and `qp_resp` records and the MR entry its key names in; the verdict, whether the response
//! queue has room and whether the key check alone failed out, one cycle later.
//!
//! The key the chain checks (a WRITE's first RETH, a READ's RETH, an atomic's AtomicETH) is picked from the
//! record combinationally: `key_index` (key >> 8) addresses the MR table, whose entry comes back on `mr` in
//! the same cycle. An index past the table is a bad key, whatever `mr` holds (a RAM addressed by the low
//! bits returns another entry there).
//!
//! Everything comes from `wire`: the opcode properties from `wire::opcode::TABLE`, the record fields from
//! `rx::meta` and `wire::contract::qpc`, the extended headers' fields from their Reprs, the limits from the
//! profile.

use crate::engine::cmd::exec::{ATTR_BITS, MR_BITS, RESP_BITS};
use crate::kit::*;
use crate::record::{be_slice, slice};
use crate::rx::meta;
use wire::contract::profile::Profile;
use wire::contract::qpc::{in_msg, mr_entry, qp_context};
use wire::contract::verbs::{access, QpState, MAX_MSG_LEN, MAX_MTU_ENUM};
use wire::ext::{AtomicEthRepr, RethRepr};

/// The verdict codes on `verdict`: the model's `resp::Verdict`, one code per NAK kind.
pub mod verdict {
    pub const QP_STATE: u8 = 0;
    pub const SEQ_NAK: u8 = 1;
    pub const SEQ_DROP: u8 = 2;
    pub const DUPLICATE: u8 = 3;
    pub const NAK_INVALID_REQUEST: u8 = 4;
    pub const NAK_REMOTE_ACCESS: u8 = 5;
    pub const NAK_RNR: u8 = 6;
    pub const NO_ROOM: u8 = 7;
    pub const EXECUTE: u8 = 8;
}

#[derive(LogicBlock, Default)]
pub struct RespCheck {
    pub clock: Signal<In, Clock>,
    /// The request's RX record (`rx::meta`).
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    /// Its QP's `qp_attr` and `qp_resp` records, zero-extended.
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub resp: Signal<In, Bits<RESP_BITS>>,
    /// The MR table index of the key the chain checks, and that entry (`qpc::mr_entry`), zero-extended.
    pub key_index: Signal<Out, Bits<24>>,
    pub mr: Signal<In, Bits<MR_BITS>>,
    /// A `verdict` code, and whether one more response that is not a fatal NAK fits.
    pub verdict: Signal<Out, Bits<4>>,
    pub room: Signal<Out, Bit>,
    /// The key check alone failed (a key, range or access fault of a non-empty request): a duplicate READ
    /// regenerated from its resource is checked again by it.
    pub key_bad: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl RespCheck {
    pub fn new(profile: Profile) -> Self {
        RespCheck { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RespCheck {
    fn update(&mut self) {
        // Verified in Verilator against the model's `resp::check` (sim/tests/resp_check.rs).
    }

    fn connect(&mut self) {
        self.key_index.connect();
        self.verdict.connect();
        self.room.connect();
        self.key_bad.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// Field `name` of the RX record.
fn m(name: &str) -> String {
    meta::select("meta", name)
}

/// Field `name` of extended header `ext` (`len` bytes, field table `fields`) in the RX record.
fn ext(ext: &str, fields: crate::record::Fields, len: usize, name: &str) -> String {
    be_slice("meta", meta::field(ext).0, fields, len, name)
}

/// The Verilog body of `RespCheck` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, sl, ml) = (&c.attr, &c.resp, mr_entry(p));
    for (l, bits) in [(al, ATTR_BITS), (sl, RESP_BITS), (&ml, MR_BITS)] {
        assert!(l.width() as usize <= bits, "{} ({} bits) is wider than its port", l.name, l.width());
    }
    let a = |n: &str| slice(al, "attr", n);
    let s = |n: &str| slice(sl, "resp", n);
    let st = |q: QpState| format!("3'd{}", q as u8);
    let mut v = vec![
        "// The request.".to_string(),
        format!("wire [7:0] opcode = {};", m("opcode")),
        format!("wire [23:0] psn = {};", m("psn")),
        format!("wire [15:0] plen = {};", m("payload_len")),
        format!(
            "wire has_reth = {}; wire has_atomic_eth = {}; wire has_ieth = {};",
            m("has_reth"),
            m("has_atomic_eth"),
            m("has_ieth")
        ),
        format!("wire [63:0] reth_va = {};", ext("reth", RethRepr::FIELDS, RethRepr::LEN, "va")),
        format!("wire [31:0] reth_rkey = {};", ext("reth", RethRepr::FIELDS, RethRepr::LEN, "rkey")),
        format!("wire [31:0] reth_len = {};", ext("reth", RethRepr::FIELDS, RethRepr::LEN, "dma_len")),
        format!("wire [63:0] at_va = {};", ext("atomic_eth", AtomicEthRepr::FIELDS, AtomicEthRepr::LEN, "va")),
        format!("wire [31:0] at_rkey = {};", ext("atomic_eth", AtomicEthRepr::FIELDS, AtomicEthRepr::LEN, "rkey")),
    ];
    v.extend(super::opcode_flags(&[
        "op_req",
        "op_rc",
        "k_send",
        "k_write",
        "k_read",
        "k_cas",
        "k_fadd",
        "p_first",
        "p_middle",
        "p_last",
        "p_only",
        "op_payload",
        "op_immdt",
    ]));
    v.extend([
        "wire k_atomic = k_cas | k_fadd;".to_string(),
        "wire starts = p_first | p_only;".into(),
        "wire ends = p_last | p_only;".into(),
        "// The QP: state, attributes, the RQ's counters, the responder's context.".into(),
        format!("wire [2:0] state = {};", a("state")),
        format!(
            "wire can_receive = state == {} || state == {} || state == {};",
            st(QpState::Rtr),
            st(QpState::Rts),
            st(QpState::Sqd)
        ),
        format!("wire qp_bad = !can_receive || {} || {};", a("flushing"), s("fatal")),
        format!("wire [3:0] qp_access = {};", a("access")),
        format!("wire [2:0] pmtu_e = {};", a("pmtu")),
        format!("wire [15:0] rq_pending = {} - {};", a("rq_pi"), a("rq_ci")),
        format!("wire [1:0] in_msg = {};", s("in_msg")),
        format!("wire [31:0] write_resid = {};", s("write_resid")),
        // CHK_PSN: the PSN's distance from ePSN, as a signed 24-bit number.
        format!("wire [23:0] d = psn - {};", s("epsn")),
        "wire ahead = !d[23] && d != 24'd0;".into(),
        "wire behind = d[23];".into(),
        // CHK_OP_SEQ
        format!(
            "wire seq_ok = in_msg == 2'd{} ? starts : ((in_msg == 2'd{} && k_send || in_msg == 2'd{} && k_write) && (p_middle || p_last));",
            in_msg::NONE,
            in_msg::SEND,
            in_msg::WRITE
        ),
        // CHK_OP_VALID
        format!(
            "wire [3:0] need = k_write ? 4'd{} : k_read ? 4'd{} : k_atomic ? 4'd{} : 4'd0;",
            access::REMOTE_WRITE,
            access::REMOTE_READ,
            access::REMOTE_ATOMIC
        ),
        format!(
            "wire valid_ok = op_rc && op_req && (qp_access & need) == need && !((k_read || k_atomic) && {} == 0);",
            a("max_dest_rd_atomic")
        ),
        // CHK_RESOURCE
        format!("wire needs_wqe = (k_send && starts && !{}) || (k_write && ends && op_immdt);", s("recv_valid")),
        "wire rnr = needs_wqe && rq_pending == 16'd0;".into(),
        // CHK_LENGTH
        format!("wire [12:0] pmtu = (pmtu_e >= 3'd2 && pmtu_e <= 3'd{MAX_MTU_ENUM}) ? (13'd128 << pmtu_e) : 13'd256;"),
        "wire plen_ok = !op_payload ? plen == 16'd0 : (p_first || p_middle) ? plen == pmtu : p_last ? (plen != 16'd0 && plen <= pmtu) : plen <= pmtu;".into(),
        "wire write_fits = !k_write || (p_only ? has_reth && reth_len == plen : p_first ? has_reth && reth_len > plen : p_middle ? write_resid > plen : write_resid == plen);".into(),
        format!("wire len_ok = plen_ok && write_fits && !(has_reth && reth_len > 32'd{MAX_MSG_LEN});"),
        // CHK_RKEY: the key, range and access the request names.
        "wire use_reth = (k_write && starts) || k_read;".into(),
        "wire rk_invalid = (use_reth && !has_reth) || (k_atomic && (!has_atomic_eth || at_va[2:0] != 3'd0)) || (k_send && has_ieth);".into(),
        "wire [63:0] rk_va = use_reth ? reth_va : at_va;".into(),
        "wire [31:0] rk_key = use_reth ? reth_rkey : at_rkey;".into(),
        "wire [31:0] rk_len = use_reth ? reth_len : 32'd8;".into(),
        format!(
            "wire [3:0] rk_need = k_write ? 4'd{} : k_read ? 4'd{} : 4'd{};",
            access::REMOTE_WRITE,
            access::REMOTE_READ,
            access::REMOTE_ATOMIC
        ),
        "wire rk_used = (use_reth || k_atomic) && rk_len != 32'd0;".into(),
        "always @(*) key_index = rk_key[31:8];".into(),
    ]);
    let pdn = a("pdn");
    let u = crate::engine::mr::Use { key: "rk_key", pdn: &pdn, va: "rk_va", len: "rk_len", need: "rk_need" };
    v.extend(crate::engine::mr::check(p, "rk", "mr", &u));
    v.extend([
        "wire rk_access = rk_used && !rk_ok;".to_string(),
        "// Room for one more response that is not a fatal NAK (the queue's last place is kept for one).".into(),
        format!(
            "wire room_c = {{8'd0, {}}} + {{15'd0, {}}} + 16'd2 <= 16'd{};",
            s("items"),
            s("ack_valid"),
            p.resp_queue
        ),
        "always @(posedge clock) begin".into(),
        "    room <= room_c;".into(),
        "    key_bad <= rk_access;".into(),
    ]);
    use verdict::*;
    let code = |c: u8| format!("4'd{c}");
    let chain = [
        ("qp_bad", code(QP_STATE)),
        ("ahead", format!("{} ? {} : {}", s("nak_sent"), code(SEQ_DROP), code(SEQ_NAK))),
        ("behind", code(DUPLICATE)),
        ("!seq_ok || !valid_ok", code(NAK_INVALID_REQUEST)),
        ("rnr", code(NAK_RNR)),
        ("!len_ok || rk_invalid", code(NAK_INVALID_REQUEST)),
        ("rk_access", code(NAK_REMOTE_ACCESS)),
        ("(k_read || k_atomic) && !room_c", code(NO_ROOM)),
    ];
    for (i, (cond, val)) in chain.iter().enumerate() {
        let els = if i == 0 { "" } else { "else " };
        v.push(format!("    {els}if ({cond}) verdict <= {val};"));
    }
    v.push(format!("    else verdict <= 4'd{EXECUTE};"));
    v.push("end".into());
    v
}
