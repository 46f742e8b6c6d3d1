//! `ReqSeg`: packet `psn` of a send WQE as the requester segments it, the model's `req::segment`, as
//! generated Verilog (combinational). In: the QP's `qp_attr` record (its path MTU), the WQE's window entry
//! fields (`op`, `flags`, `len`; the `sq_wqe` layout), its first PSN, the remote address and key from its
//! SQ slot, and the QP's packets since the last AckReq (`qp_req`'s `pkts_since_ackreq`). Out: the opcode,
//! the payload's offset in the message and its length, the RETH (whether there is one, its VA and DMA
//! length; the R_Key is the WQE's), the AckReq and solicited bits, where the cursor goes next, whether the
//! packet finishes the WQE, and the packets since the last AckReq after it.

use crate::engine::cmd::exec::ATTR_BITS;
use crate::engine::resp::queue::{mtu_shift, packets};
use crate::kit::*;
use crate::record::{slice, width};
use wire::contract::profile::Profile;
use wire::contract::qpc::{qp_context, MAX_PKTS_PER_ACK};
use wire::contract::wqe::{send_flags, SendOp};
use wire::Position;

#[derive(LogicBlock, Default)]
pub struct ReqSeg {
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub op: Signal<In, Bits<4>>,
    pub flags: Signal<In, Bits<4>>,
    pub len: Signal<In, Bits<32>>,
    pub first: Signal<In, Bits<24>>,
    pub psn: Signal<In, Bits<24>>,
    pub va: Signal<In, Bits<64>>,
    pub since: Signal<In, Bits<6>>,
    pub opcode: Signal<Out, Bits<8>>,
    pub off: Signal<Out, Bits<32>>,
    pub payload_len: Signal<Out, Bits<16>>,
    pub has_reth: Signal<Out, Bit>,
    pub reth_va: Signal<Out, Bits<64>>,
    pub reth_len: Signal<Out, Bits<32>>,
    pub ack_req: Signal<Out, Bit>,
    pub solicited: Signal<Out, Bit>,
    pub next_psn: Signal<Out, Bits<24>>,
    pub last: Signal<Out, Bit>,
    pub since_next: Signal<Out, Bits<6>>,
    profile: Param<Profile>,
}

impl ReqSeg {
    pub fn new(profile: Profile) -> Self {
        ReqSeg { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for ReqSeg {
    fn update(&mut self) {
        // Verified in Verilator against the model's `req::segment` (sim/tests/req_seg.rs).
    }

    fn connect(&mut self) {
        self.opcode.connect();
        self.off.connect();
        self.payload_len.connect();
        self.has_reth.connect();
        self.reth_va.connect();
        self.reth_len.connect();
        self.ack_req.connect();
        self.solicited.connect();
        self.next_psn.connect();
        self.last.connect();
        self.since_next.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `ReqSeg` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    assert_eq!(width(&c.wqe, "op"), 4, "the window's op field is the port's");
    assert_eq!(width(&c.wqe, "flags"), 4, "the window's flags field is the port's");
    assert_eq!(width(&c.req, "pkts_since_ackreq"), 6, "the AckReq count is the port's");
    assert_eq!(1 << 6, MAX_PKTS_PER_ACK, "the AckReq count wraps at MAX_PKTS_PER_ACK");
    let code = |op: SendOp| format!("4'd{}", op as u8);
    let mut v = mtu_shift(&slice(&c.attr, "attr", "pmtu"));
    v.extend(packets("msg_pkts", "len"));
    v.extend([
        format!("wire is_read = op == {};", code(SendOp::RdmaRead)),
        format!("wire is_atomic = op == {} || op == {};", code(SendOp::AtomicCmpSwp), code(SendOp::AtomicFetchAdd)),
        format!("wire is_write = op == {} || op == {};", code(SendOp::RdmaWrite), code(SendOp::RdmaWriteWithImm)),
        "wire [23:0] npkts = is_atomic ? 24'd1 : msg_pkts;".into(),
        // The packet's index in the message: the PSN's signed distance from the first, 0 if before it.
        "wire [23:0] k_signed = psn - first;".into(),
        "wire [23:0] k = k_signed[23] ? 24'd0 : k_signed;".into(),
        "wire [24:0] k_next = {1'b0, k} + 25'd1;".into(),
        "wire at_first = k == 24'd0;".into(),
        "wire at_last = k_next == {1'b0, npkts};".into(),
        "wire [55:0] off_full = {32'd0, k} << mtu_shift;".into(),
        "wire unused_off = ^off_full[55:32];".into(),
        "wire [31:0] off_w = off_full[31:0];".into(),
        "wire [31:0] left = len > off_w ? len - off_w : 32'd0;".into(),
        "wire [31:0] pmtu_b = 32'd1 << mtu_shift;".into(),
        "wire [31:0] chunk = pmtu_b < left ? pmtu_b : left;".into(),
        "wire unused_chunk = ^chunk[31:16];".into(),
        // Of the flags only SOLICITED matters here (FENCE is the scheduler's, SIGNALED the completer's).
        format!("localparam [3:0] SOLICITED = 4'd{};", send_flags::SOLICITED),
        "wire unused_flags = ^(flags & ~SOLICITED);".into(),
    ]);
    // The opcode of each operation at each position, and whether it ends the message, from `wire`.
    v.push("reg [7:0] opc;\nreg ends;".into());
    v.push("always @(*) begin".into());
    v.push("    opc = 8'd0; ends = 1'b0;".into());
    v.push("    case ({op, at_first, at_last})".into());
    for op in (0..16u8).filter_map(SendOp::from_u8) {
        for (f, l) in [(true, true), (true, false), (false, false), (false, true)] {
            let pos = if op.is_read_or_atomic() { Position::Only } else { Position::of(f, l) };
            let o = op.opcode(pos);
            let end = o.info().is_some_and(|i| i.ends_message());
            v.push(format!(
                "    {{4'd{}, 1'b{}, 1'b{}}}: begin opc = 8'h{:02x}; ends = 1'b{}; end",
                op as u8, f as u8, l as u8, o.0, end as u8
            ));
        }
    }
    v.push("    default: ;\n    endcase\nend".into());
    v.extend([
        format!("wire ack = ends || since == 6'd{};", MAX_PKTS_PER_ACK - 1),
        "always @(*) begin".into(),
        "    opcode = opc;".into(),
        "    off = off_w;".into(),
        "    payload_len = (is_read || is_atomic) ? 16'd0 : chunk[15:0];".into(),
        "    has_reth = is_read || (is_write && at_first);".into(),
        "    reth_va = is_read ? va + {32'd0, off_w} : va;".into(),
        "    reth_len = is_read ? len - (off_w < len ? off_w : len) : len;".into(),
        "    ack_req = ack;".into(),
        "    solicited = ends && (flags & SOLICITED) != 4'd0;".into(),
        "    next_psn = is_read ? first + npkts : psn + 24'd1;".into(),
        "    last = is_read || is_atomic || k_next >= {1'b0, npkts};".into(),
        "    since_next = ack ? 6'd0 : since + 6'd1;".into(),
        "end".into(),
    ]);
    v
}
