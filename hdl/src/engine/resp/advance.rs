//! `RespAdvance`: the responder's bookkeeping for a SEND or WRITE packet the check chain passed, the model's
//! `resp::write_cursor` and `resp::advance`, as generated Verilog: the packet's RX record and its QP's
//! `qp_resp` record in; the QP's next `qp_resp` record and where a WRITE's payload goes out, one cycle
//! later. (The model leaves out the ACK of a flushing QP; a flushing QP executes nothing, so that case is
//! the check chain's.)
//!
//! A WRITE's first or only packet starts the message's cursor at its RETH; every WRITE packet moves it past
//! its payload. Then ePSN moves past the packet, no sequence NAK is outstanding, the message in progress is
//! this one unless it ends (and the MSN counts it when it does), and a packet asking for an ACK leaves one
//! coalesced (ACK, this PSN, the MSN). The receive WQE a SEND lands in is another block's.

use crate::engine::cmd::exec::RESP_BITS;
use crate::kit::*;
use crate::record::{be_slice, build, slice};
use crate::rx::meta;
use wire::contract::profile::Profile;
use wire::contract::qpc::{in_msg, qp_context};
use wire::ext::{syndrome, RethRepr};

#[derive(LogicBlock, Default)]
pub struct RespAdvance {
    pub clock: Signal<In, Clock>,
    /// The packet's RX record (`rx::meta`).
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    /// Its QP's `qp_resp` record, zero-extended.
    pub resp: Signal<In, Bits<RESP_BITS>>,
    /// The QP's `qp_resp` record after the packet, zero-extended.
    pub resp_next: Signal<Out, Bits<RESP_BITS>>,
    /// Where a WRITE packet's payload goes.
    pub va: Signal<Out, Bits<64>>,
    profile: Param<Profile>,
}

impl RespAdvance {
    pub fn new(profile: Profile) -> Self {
        RespAdvance { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RespAdvance {
    fn update(&mut self) {
        // Verified in Verilator against the model's `resp::write_cursor` and `resp::advance`
        // (sim/tests/resp_advance.rs).
    }

    fn connect(&mut self) {
        self.resp_next.connect();
        self.va.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// Field `name` of the RX record.
fn m(name: &str) -> String {
    meta::select("meta", name)
}

/// The Verilog body of `RespAdvance` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let sl = &c.resp;
    assert!(sl.width() as usize <= RESP_BITS, "qp_resp ({} bits) is wider than its port", sl.width());
    let s = |n: &str| slice(sl, "resp", n);
    let reth = |n: &str| be_slice("meta", meta::field("reth").0, RethRepr::FIELDS, RethRepr::LEN, n);
    let mut v = vec![
        format!("wire [7:0] opcode = {};", m("opcode")),
        format!("wire [23:0] psn = {};", m("psn")),
        format!("wire [15:0] plen = {};", m("payload_len")),
        format!("wire ack_req = {};", m("ack_req")),
        format!("wire has_reth = {};", m("has_reth")),
        format!("wire [63:0] reth_va = {};", reth("va")),
        format!("wire [31:0] reth_len = {};", reth("dma_len")),
    ];
    v.extend(super::opcode_flags(&["k_send", "k_write", "p_first", "p_last", "p_only"]));
    v.extend([
        "wire starts = p_first | p_only;".to_string(),
        "wire ends = p_last | p_only;".into(),
        // `write_cursor`: a WRITE's first or only packet starts at its RETH.
        "wire at_reth = k_write && starts && has_reth;".into(),
        format!("wire [63:0] cur_va = at_reth ? reth_va : {};", s("write_va")),
        format!("wire [31:0] cur_resid = at_reth ? reth_len : {};", s("write_resid")),
        format!("wire [31:0] cur_len = at_reth ? reth_len : {};", s("write_len")),
        "wire [31:0] n = {16'd0, plen};".into(),
        // The chain has checked that the payload fits what is left of the message.
        "wire [31:0] resid_next = cur_resid - n;".into(),
        // `advance`
        format!("wire [23:0] msn_next = ends ? {} + 24'd1 : {};", s("msn"), s("msn")),
        "wire ack = ack_req;".into(),
    ]);
    let (decls, next) = build(sl, "resp", "nx", |name, _| {
        Some(match name {
            "write_va" => "k_write ? cur_va + {48'd0, plen} : resp_write_va".into(),
            "write_resid" => "k_write ? resid_next : resp_write_resid".into(),
            "write_len" => "k_write ? cur_len : resp_write_len".into(),
            "epsn" => "psn + 24'd1".into(),
            "nak_sent" => "1'b0".into(),
            "in_msg" => format!("ends ? 2'd{} : k_send ? 2'd{} : 2'd{}", in_msg::NONE, in_msg::SEND, in_msg::WRITE),
            "msn" => "msn_next".into(),
            "ack_valid" => format!("ack | {}", s("ack_valid")),
            "ack_psn" => format!("ack ? psn : {}", s("ack_psn")),
            "ack_syndrome" => format!("ack ? 8'h{:02x} : {}", syndrome::ACK_UNLIMITED, s("ack_syndrome")),
            "ack_msn" => format!("ack ? msn_next : {}", s("ack_msn")),
            _ => return None,
        })
    });
    for f in ["write_va", "write_resid", "write_len"] {
        v.push(format!("wire [{}:0] resp_{f} = {};", crate::record::width(sl, f) - 1, s(f)));
    }
    v.extend(decls);
    let pad = RESP_BITS - sl.width() as usize;
    let next = if pad == 0 { next } else { format!("{{{pad}'d0, {next}}}") };
    v.extend([
        "always @(posedge clock) begin".to_string(),
        format!("    resp_next <= {next};"),
        "    va <= cur_va;".into(),
        "end".into(),
    ]);
    v
}
