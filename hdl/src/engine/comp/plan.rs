//! `RespPlan`: what a response does after its walk (`AckWalk`), the cases of the model's `comp::on_ack`,
//! `comp::on_data` and `comp::retry_gap`, as generated Verilog
//! (combinational). In: the response's RX record (its opcode, PSN and AETH syndrome), the QP's `qp_attr`,
//! `qp_req` as the walk leaves it, whether the walk stopped at a READ or atomic the responder is past
//! (`gap`) or left the cursor behind `comp_psn` (`walk_rewind`), and `RespMatch`'s verdict on a READ
//! response or atomic ACK. Out, what `RespRun` then does:
//!
//! - `take`: the response's data is placed (a READ response in sequence, an atomic ACK).
//! - `fail` with `status` and `vendor`: the oldest unfinished WQE fails (`fail_oldest`): an RNR NAK with no
//!   retries left (RnrRetryExcErr), a sequence NAK or a gap with none left (RetryExcErr), a fatal NAK (its
//!   code's status), a reserved AETH or a malformed READ response (BadRespErr).
//! - `retry`: go-back-N from `comp_psn`, one retry counted (`dec_retry`): a sequence NAK, or a gap seen for
//!   the first time at this `comp_psn` (`gap_set` marks it, so the same gap is retried once).
//! - `rnr_set`: an RNR NAK's wait, one RNR retry counted (`dec_rnr`) unless they are infinite.
//! - `rewind`: the cursor goes back (a retry, or `comp_psn` moved past it: the model's `complete_to`).
//! - `run`: any of them (else the walk was all there was to do).

use crate::engine::cmd::exec::{ATTR_BITS, REQ_BITS};
use crate::kit::*;
use crate::record::slice;
use crate::rx::meta;
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::{WcStatus, RNR_RETRY_INFINITE};
use wire::Opcode;

#[derive(LogicBlock, Default)]
pub struct RespPlan {
    pub rec: Signal<In, Bits<{ meta::BITS }>>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub req: Signal<In, Bits<REQ_BITS>>,
    pub gap: Signal<In, Bit>,
    pub walk_rewind: Signal<In, Bit>,
    pub match_take: Signal<In, Bit>,
    pub match_bad: Signal<In, Bit>,
    pub match_ahead: Signal<In, Bit>,
    pub run: Signal<Out, Bit>,
    pub take: Signal<Out, Bit>,
    pub fail: Signal<Out, Bit>,
    pub status: Signal<Out, Bits<5>>,
    pub vendor: Signal<Out, Bits<8>>,
    pub retry: Signal<Out, Bit>,
    pub dec_retry: Signal<Out, Bit>,
    pub dec_rnr: Signal<Out, Bit>,
    pub rnr_set: Signal<Out, Bit>,
    pub gap_set: Signal<Out, Bit>,
    pub rewind: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl RespPlan {
    pub fn new(profile: Profile) -> Self {
        RespPlan { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RespPlan {
    fn update(&mut self) {
        // Verified in Verilator within `Completer` against the model's `comp::respond` (sim/tests/completer.rs).
    }

    fn connect(&mut self) {
        self.run.connect();
        self.take.connect();
        self.fail.connect();
        self.status.connect();
        self.vendor.connect();
        self.retry.connect();
        self.dec_retry.connect();
        self.dec_rnr.connect();
        self.rnr_set.connect();
        self.gap_set.connect();
        self.rewind.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `RespPlan` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let a = |n: &str| slice(&c.attr, "attr", n);
    let r = |n: &str| slice(&c.req, "req", n);
    let (aeth, _) = meta::field("aeth");
    let op = |o: Opcode| format!("8'h{:02x}", o.0);
    let st = |s: WcStatus| format!("5'd{}", s as u8);
    vec![
        format!("wire [7:0] opcode = {};", meta::select("rec", "opcode")),
        format!("wire [23:0] psn = {};", meta::select("rec", "psn")),
        format!("wire [7:0] syn = rec[{}:{}];", aeth + 31, aeth + 24),
        "wire unused_rec = ^rec;".into(),
        "wire unused_attr = ^attr;".into(),
        "wire unused_req = ^req;".into(),
        format!("wire is_ack = opcode == {};", op(Opcode::ACKNOWLEDGE)),
        format!(
            "wire data = (opcode >= {} && opcode <= {}) || opcode == {};",
            op(Opcode::RDMA_READ_RESPONSE_FIRST),
            op(Opcode::RDMA_READ_RESPONSE_ONLY),
            op(Opcode::ATOMIC_ACKNOWLEDGE)
        ),
        // The AETH's kind (the model's `AethKind`): bit 7 set, or kind 2, is reserved.
        "wire rsv = syn[7] || syn[6:5] == 2'd2;".into(),
        "wire k_ack = is_ack && !rsv && syn[6:5] == 2'd0;".into(),
        "wire k_rnr = is_ack && !rsv && syn[6:5] == 2'd1;".into(),
        "wire k_seq = is_ack && !rsv && syn[6:5] == 2'd3 && syn[4:0] == 5'd0;".into(),
        "wire k_fatal = is_ack && !rsv && syn[6:5] == 2'd3 && syn[4:0] != 5'd0;".into(),
        "wire k_rsv = is_ack && rsv;".into(),
        // A gap (a READ or atomic passed without its answer; a READ's responses lost), once per `comp_psn`.
        "wire gap_case = (gap && (k_ack || k_rnr || k_fatal || data)) || (data && !gap && match_ahead);".into(),
        format!("wire gap_seen = {} && {} == {};", r("gap_valid"), r("gap_psn"), r("comp_psn")),
        "wire gap_fresh = gap_case && !gap_seen;".into(),
        format!("wire retry_none = {} == 3'd0;", r("retry_left")),
        format!("wire rnr_inf = {} == 3'd{RNR_RETRY_INFINITE};", a("rnr_retry")),
        format!("wire rnr_none = {} == 3'd0;", r("rnr_left")),
        "wire g_fail = gap_fresh && retry_none;".into(),
        "wire rnr_fail = k_rnr && !gap && !rnr_inf && rnr_none;".into(),
        "wire seq_fail = k_seq && retry_none;".into(),
        "wire fatal_fail = k_fatal && !gap;".into(),
        "wire bad = data && !gap && match_bad;".into(),
        "wire took = data && !gap && match_take;".into(),
        "wire [23:0] next_psn = psn + 24'd1;".into(),
        format!("wire [23:0] cur_to_next = {} - next_psn;", r("cursor_psn")),
        "wire unused_cur_to_next = ^cur_to_next[22:0];".into(),
        "reg [4:0] nak_st;".into(),
        "always @(*) begin".into(),
        "    case (syn[4:0])".into(),
        format!("    5'd1: nak_st = {};", st(WcStatus::RemInvReqErr)),
        format!("    5'd2: nak_st = {};", st(WcStatus::RemAccessErr)),
        format!("    5'd4: nak_st = {};", st(WcStatus::RemInvRdReqErr)),
        format!("    default: nak_st = {};", st(WcStatus::RemOpErr)),
        "    endcase".into(),
        "    take = took;".into(),
        "    fail = g_fail || rnr_fail || seq_fail || fatal_fail || k_rsv || bad;".into(),
        format!(
            "    status = (g_fail || seq_fail) ? {} : rnr_fail ? {} : fatal_fail ? nak_st : {};",
            st(WcStatus::RetryExcErr),
            st(WcStatus::RnrRetryExcErr),
            st(WcStatus::BadRespErr)
        ),
        "    vendor = (g_fail || bad) ? 8'd0 : syn;".into(),
        "    retry = (gap_fresh && !retry_none) || (k_seq && !retry_none);".into(),
        "    dec_retry = retry;".into(),
        "    rnr_set = k_rnr && !gap && !rnr_fail;".into(),
        "    dec_rnr = rnr_set && !rnr_inf;".into(),
        "    gap_set = gap_fresh;".into(),
        "    rewind = retry || walk_rewind || (took && cur_to_next[23]);".into(),
        "    run = take || fail || rewind || rnr_set || gap_set;".into(),
        "end".into(),
    ]
}
