//! `RespDuplicate`: the responder's answer to a SEND or WRITE packet it has executed before (a PSN behind
//! ePSN), the model's `resp::duplicate` for those kinds, as generated Verilog: the QP's `qp_resp` record in;
//! the record with the coalesced ACK slot re-acknowledging the last packet executed (ePSN - 1, the MSN) out,
//! one cycle later. Nothing is executed again. (A flushing QP's packets never reach here: the check chain
//! drops them for the QP's state.)

use crate::engine::cmd::exec::RESP_BITS;
use crate::kit::*;
use crate::record::{build, slice};
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::ext::syndrome;

#[derive(LogicBlock, Default)]
pub struct RespDuplicate {
    pub clock: Signal<In, Clock>,
    /// The QP's `qp_resp` record, zero-extended.
    pub resp: Signal<In, Bits<RESP_BITS>>,
    /// The record with the ACK slot set, zero-extended.
    pub resp_next: Signal<Out, Bits<RESP_BITS>>,
    profile: Param<Profile>,
}

impl RespDuplicate {
    pub fn new(profile: Profile) -> Self {
        RespDuplicate { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RespDuplicate {
    fn update(&mut self) {
        // Verified in Verilator against the model's `resp::reack` (sim/tests/resp_duplicate.rs).
    }

    fn connect(&mut self) {
        self.resp_next.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `RespDuplicate` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let sl = &c.resp;
    let s = |n: &str| slice(sl, "resp", n);
    let (mut v, next) = build(sl, "resp", "dup", |name, _| {
        Some(match name {
            "ack_valid" => "1'b1".to_string(),
            "ack_psn" => format!("{} - 24'd1", s("epsn")),
            "ack_syndrome" => format!("8'h{:02x}", syndrome::ACK_UNLIMITED),
            "ack_msn" => s("msn"),
            _ => return None,
        })
    });
    let pad = RESP_BITS - sl.width() as usize;
    let next = if pad == 0 { next } else { format!("{{{pad}'d0, {next}}}") };
    // The record's padding above this profile's width and the fields replaced are not read.
    v.push("wire unused_resp = ^resp;".into());
    v.extend(["always @(posedge clock) begin".to_string(), format!("    resp_next <= {next};"), "end".into()]);
    v
}
