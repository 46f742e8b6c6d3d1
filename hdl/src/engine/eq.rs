//! The event queue: posting an EQE (`EqPost`, the model's `Nic::raise` with `Eq::push`) and writing it to
//! the ring in host memory (`EqeWrite`, the `eqe_wr` block).
//!
//! `EqPost` decides at once from the EQ's entry (`qpc::cq_entry`, the layout the command unit keeps it in,
//! with the consumer counter and arming its doorbells write) and the event: whether the ring has room
//! (else the event is lost), the producer counter after it, whether it raises the interrupt (the EQ was
//! armed, and the arming is spent), and the EQE as written (`wire::contract::eqe`, the owner bit for its
//! pass, `cqe::owner_for`) with its address, as generated Verilog. `EqeWrite` writes the 16 bytes of an EQE
//! the ring took (`host::entry::EntryWrite`), the owner byte last.

use crate::engine::cmd::exec::CQ_BITS;
use crate::host::entry::EntryWrite;
use crate::kit::*;
use crate::record::{be_put, slice};
use wire::contract::eqe::{EqeRepr, EQE_LEN};
use wire::contract::qpc::cq_entry;

/// Bits of an EQE on a byte bus (byte `i` at bits `8i+7:8i`).
pub const EQE_BITS: usize = 8 * EQE_LEN;

/// The model's `Nic::raise`: what posting an event of `kind` for object `obj` to the EQ `eq` does.
#[derive(LogicBlock, Default)]
pub struct EqPost {
    /// The EQ's entry, zero-extended.
    pub eq: Signal<In, Bits<CQ_BITS>>,
    /// `wire::contract::eqe::EventKind`, and the CQ or QP it names.
    pub kind: Signal<In, Bits<8>>,
    pub obj: Signal<In, Bits<32>>,
    /// The ring takes the EQE (the EQ exists and has room); else the event is lost.
    pub written: Signal<Out, Bit>,
    /// The EQ's producer counter after the post.
    pub pi_next: Signal<Out, Bits<32>>,
    /// The EQ was armed: the interrupt, and the arming is spent.
    pub fire: Signal<Out, Bit>,
    /// The EQE as written and where: slot `slot` (the producer counter) of the ring.
    pub data: Signal<Out, Bits<EQE_BITS>>,
    pub addr: Signal<Out, Bits<64>>,
    pub slot: Signal<Out, Bits<32>>,
}

impl Logic for EqPost {
    fn update(&mut self) {
        // Verified in Verilator against the model's `Eq::push` (sim/tests/eqe_write.rs) and with the core, in
        // lockstep with the model (driver/tests/rtl_responder.rs).
    }

    fn connect(&mut self) {
        self.written.connect();
        self.pi_next.connect();
        self.fire.connect();
        self.data.connect();
        self.addr.connect();
        self.slot.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(post_verilog())
    }
}

/// The Verilog body of `EqPost`.
pub fn post_verilog() -> Vec<String> {
    let l = cq_entry();
    assert!(l.width() as usize <= CQ_BITS, "the EQ entry is wider than its port");
    let s = |n: &str| slice(&l, "eq", n);
    const { assert!(EQE_LEN == 16, "an EQE's slot is its index times 16") };
    let mut v = vec![
        format!("wire e_valid = {};", s("valid")),
        format!("wire [31:0] e_pi = {};", s("pi")),
        format!("wire [3:0] e_log = {};", s("log_size")),
        "wire [32:0] size = 33'd1 << e_log;".into(),
        format!("wire [31:0] fill = e_pi - {};", s("ci")),
        "wire ok = e_valid && {1'b0, fill} < size;".into(),
        "wire [7:0] owner = {7'd0, ~e_pi[e_log]};".into(),
        "wire [31:0] slot_index = e_pi & (size[31:0] - 32'd1);".into(),
        format!("wire unused_eq = |{{eq[{}:{}], {}}};", CQ_BITS - 1, l.width(), s("overrun")),
        format!("reg [{}:0] eqe_c;", EQE_BITS - 1),
        "always @(*) begin".into(),
        format!("    eqe_c = {EQE_BITS}'d0;"),
    ];
    for (field, value) in [("kind", "kind"), ("obj", "obj"), ("owner", "owner")] {
        v.extend(be_put("eqe_c", EqeRepr::FIELDS, 0, field, value).into_iter().map(|l| format!("    {l}")));
    }
    v.extend([
        "end".to_string(),
        "always @(*) begin".into(),
        "    written = ok;".into(),
        "    pi_next = ok ? e_pi + 32'd1 : e_pi;".into(),
        format!("    fire = ok && {} != 2'd0;", s("armed")),
        "    data = eqe_c;".into(),
        format!("    addr = {} + {{28'd0, slot_index, 4'd0}};", s("iova")),
        "    slot = e_pi;".into(),
        "end".into(),
    ]);
    v
}

/// `eqe_wr`: posts an event (`EqPost`, settled from the inputs at once) and, when the caller takes the post
/// (`in_valid` while `in_ready`) and the ring took it, writes the EQE (`EntryWrite`). The next waits
/// (`in_ready` low) until this one's last beat has gone in.
#[derive(LogicBlock, Default)]
pub struct EqeWrite<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub eq: Signal<In, Bits<CQ_BITS>>,
    pub kind: Signal<In, Bits<8>>,
    pub obj: Signal<In, Bits<32>>,
    pub written: Signal<Out, Bit>,
    pub pi_next: Signal<Out, Bits<32>>,
    pub fire: Signal<Out, Bit>,
    pub slot: Signal<Out, Bits<32>>,
    /// The posted DMA write beats.
    pub wr_valid: Signal<Out, Bit>,
    pub wr_ready: Signal<In, Bit>,
    pub wr_addr: Signal<Out, Bits<64>>,
    pub wr_data: Signal<Out, Bits<D>>,
    pub wr_strb: Signal<Out, Bits<K>>,
    pub wr_last: Signal<Out, Bit>,
    post: EqPost,
    entry: EntryWrite<D, K, EQE_BITS>,
}

impl<const D: usize, const K: usize> Logic for EqeWrite<D, K> {
    #[hdl_gen]
    fn update(&mut self) {
        self.post.eq.next = self.eq.val();
        self.post.kind.next = self.kind.val();
        self.post.obj.next = self.obj.val();
        self.written.next = self.post.written.val();
        self.pi_next.next = self.post.pi_next.val();
        self.fire.next = self.post.fire.val();
        self.slot.next = self.post.slot.val();

        self.entry.clock.next = self.clock.val();
        self.entry.reset.next = self.reset.val();
        self.entry.start.next = self.in_valid.val() & self.post.written.val();
        self.entry.data.next = self.post.data.val();
        self.entry.addr.next = self.post.addr.val();
        self.in_ready.next = self.entry.idle.val();
        self.wr_valid.next = self.entry.wr_valid.val();
        self.entry.wr_ready.next = self.wr_ready.val();
        self.wr_addr.next = self.entry.wr_addr.val();
        self.wr_data.next = self.entry.wr_data.val();
        self.wr_strb.next = self.entry.wr_strb.val();
        self.wr_last.next = self.entry.wr_last.val();
    }
}
