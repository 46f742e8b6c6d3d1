//! Completion queues: posting a CQE (`CqPost`, the model's `Cq::post`, rxe's `rxe_cq_post`) and writing it
//! to its ring in host memory (`CqeWrite`, the `cqe_wr` block).
//!
//! `CqPost` decides at once from the CQ's table entry (`qpc::cq_entry`, with the consumer counter and the
//! arming the doorbells keep) and the CQE: whether the ring takes it, the entry after it (the producer
//! counter one on, or the CQ overrun; disarmed when the CQE fires it), the events it raises, and the CQE
//! as written (the owner bit for its pass, `cqe::owner_for`) with its address, as generated Verilog. `CqeWrite`
//! takes the CQE the ring took and writes its 64 bytes (`host::entry::EntryWrite`), the owner byte last.
//!
//! The CQE's fields are `wire::contract::cqe`'s: it comes in as its 64 bytes on a byte bus (byte `i` at bits
//! `8i+7:8i`), the owner byte's value ignored.

use crate::engine::cmd::exec::CQ_BITS;
use crate::host::entry::EntryWrite;
use crate::kit::*;
use crate::record::{build, field_range, slice};
use wire::contract::cqe::{CqeRepr, CQE_LEN, OWNER};
use wire::contract::qpc::cq_entry;
use wire::contract::verbs::WcStatus;

/// Bits of a CQE on a byte bus.
pub const CQE_BITS: usize = 8 * CQE_LEN;

/// Verilog declaring `{name}`, a CQE on a byte bus with the named fields (`wire::contract::cqe`'s) set to
/// the given Verilog values and every other byte zero.
pub fn cqe_image(name: &str, fields: &[(&str, &str)]) -> Vec<String> {
    let mut v = vec![format!("reg [{}:0] {name};", CQE_BITS - 1), "always @(*) begin".into()];
    v.push(format!("    {name} = {CQE_BITS}'d0;"));
    for (field, value) in fields {
        v.extend(crate::record::be_put(name, CqeRepr::FIELDS, 0, field, value).into_iter().map(|l| format!("    {l}")));
    }
    v.push("end".into());
    v
}

/// The model's `Cq::post`: what posting `cqe` to the CQ `cq` does, combinationally.
#[derive(LogicBlock, Default)]
pub struct CqPost {
    /// The CQ's table entry, zero-extended.
    pub cq: Signal<In, Bits<CQ_BITS>>,
    /// The CQE, its 64 bytes.
    pub cqe: Signal<In, Bits<CQE_BITS>>,
    /// The CQE's QP exists and is not in ERR.
    pub qp_live: Signal<In, Bit>,
    /// The ring takes the CQE (the CQ exists, is not overrun and has room).
    pub written: Signal<Out, Bit>,
    /// The CQ's entry after the post, zero-extended.
    pub cq_next: Signal<Out, Bits<CQ_BITS>>,
    /// The CQ was armed for this CQE: a completion event, and the arming is spent.
    pub fire: Signal<Out, Bit>,
    /// The ring overflowed just now: a CQ error event.
    pub cq_error: Signal<Out, Bit>,
    /// The ring refused a live QP's CQE: the QP goes to ERR with a fatal event.
    pub qp_fatal: Signal<Out, Bit>,
    /// The CQE is in error (its status not success: `error_cqes`).
    pub failed: Signal<Out, Bit>,
    /// The CQE as written, its owner bit set, and where: slot `slot` (the producer counter) of the ring.
    pub data: Signal<Out, Bits<CQE_BITS>>,
    pub addr: Signal<Out, Bits<64>>,
    pub slot: Signal<Out, Bits<32>>,
    /// The ring's size, log2 (for the trace: `slot` and this say which pass's owner bit it is).
    pub log_size: Signal<Out, Bits<4>>,
}

impl Logic for CqPost {
    fn update(&mut self) {
        // Verified in Verilator against the model's `Cq::post` (sim/tests/cqe_write.rs).
    }

    fn connect(&mut self) {
        self.written.connect();
        self.cq_next.connect();
        self.fire.connect();
        self.cq_error.connect();
        self.qp_fatal.connect();
        self.failed.connect();
        self.data.connect();
        self.addr.connect();
        self.slot.connect();
        self.log_size.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(post_verilog())
    }
}

/// The CQE's byte `name` (a one-byte field of `CqeRepr`) on the bus `bus`.
fn cqe_byte(bus: &str, name: &str) -> String {
    let r = field_range(CqeRepr::FIELDS, name);
    assert_eq!(r.len(), 1, "{name} is one byte");
    format!("{bus}[{}:{}]", 8 * r.start + 7, 8 * r.start)
}

/// The Verilog body of `CqPost`.
pub fn post_verilog() -> Vec<String> {
    let l = cq_entry();
    assert!(l.width() as usize <= CQ_BITS, "the CQ entry is wider than its port");
    let s = |n: &str| slice(&l, "cq", n);
    let mut v = vec![
        format!("wire c_valid = {};", s("valid")),
        format!("wire c_over = {};", s("overrun")),
        format!("wire [1:0] c_arm = {};", s("armed")),
        format!("wire [31:0] c_pi = {};", s("pi")),
        format!("wire [3:0] c_log = {};", s("log_size")),
        "wire [32:0] size = 33'd1 << c_log;".into(),
        format!("wire [31:0] fill = c_pi - {};", s("ci")),
        "wire ok = c_valid && !c_over && {1'b0, fill} < size;".into(),
        "wire refused = c_valid && !ok;".into(),
        // `Arm::fires`: any CQE, or (solicited only) one asking for an event or in error.
        format!(
            "wire fires = c_arm == 2'd1 || (c_arm == 2'd2 && ({} != 8'd0 || {} != 8'd{}));",
            cqe_byte("cqe", "se"),
            cqe_byte("cqe", "status"),
            WcStatus::Success as u8
        ),
        "wire owner = ~c_pi[c_log];".into(),
        "wire [31:0] slot_index = c_pi & (size[31:0] - 32'd1);".into(),
    ];
    let (decls, next) = build(&l, "cq", "nx", |name, _| {
        Some(match name {
            "pi" => "ok ? c_pi + 32'd1 : c_pi".to_string(),
            "overrun" => "c_over || refused".into(),
            "armed" => "ok && fires ? 2'd0 : c_arm".into(),
            _ => return None,
        })
    });
    v.extend(decls);
    let pad = CQ_BITS - l.width() as usize;
    let o = 8 * OWNER;
    // The port's padding and the owner byte's value in are not looked at (Verilator's `*unused*` names).
    v.push(format!(
        "wire unused_in = |{{{}, cqe[{}:{o}]}};",
        if pad == 0 { "1'b0".to_string() } else { format!("cq[{}:{}]", CQ_BITS - 1, l.width()) },
        CQE_BITS - 1
    ));
    assert_eq!(OWNER, CQE_LEN - 1, "the owner byte is the CQE's last");
    v.extend([
        "always @(*) begin".to_string(),
        "    written = ok;".into(),
        format!("    cq_next = {{{pad}'d0, {next}}};"),
        "    fire = ok && fires;".into(),
        "    cq_error = refused && !c_over;".into(),
        "    qp_fatal = refused && qp_live;".into(),
        format!("    failed = {} != 8'd{};", cqe_byte("cqe", "status"), WcStatus::Success as u8),
        format!("    data = {{7'd0, owner, cqe[{}:0]}};", o - 1),
        format!("    addr = {} + {{26'd0, slot_index, 6'd0}};", s("iova")),
        "    slot = c_pi;".into(),
        "    log_size = c_log;".into(),
        "end".into(),
    ]);
    v
}

/// `cqe_wr`: posts a CQE (`CqPost`'s outputs, which settle from the inputs at once) and, when the caller
/// takes the post (`in_valid` while `in_ready`) and the ring took the CQE, writes it (`EntryWrite`).
/// The next CQE waits (`in_ready` low) until this one's last beat has gone in.
#[derive(LogicBlock)]
pub struct CqeWrite<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub cq: Signal<In, Bits<CQ_BITS>>,
    pub cqe: Signal<In, Bits<CQE_BITS>>,
    pub qp_live: Signal<In, Bit>,
    pub written: Signal<Out, Bit>,
    pub cq_next: Signal<Out, Bits<CQ_BITS>>,
    pub fire: Signal<Out, Bit>,
    pub cq_error: Signal<Out, Bit>,
    pub qp_fatal: Signal<Out, Bit>,
    pub failed: Signal<Out, Bit>,
    pub slot: Signal<Out, Bits<32>>,
    pub log_size: Signal<Out, Bits<4>>,
    /// The posted DMA write beats.
    pub wr_valid: Signal<Out, Bit>,
    pub wr_ready: Signal<In, Bit>,
    pub wr_addr: Signal<Out, Bits<64>>,
    pub wr_data: Signal<Out, Bits<D>>,
    pub wr_strb: Signal<Out, Bits<K>>,
    pub wr_last: Signal<Out, Bit>,
    post: CqPost,
    entry: EntryWrite<D, K, CQE_BITS>,
}

impl<const D: usize, const K: usize> Default for CqeWrite<D, K> {
    fn default() -> Self {
        CqeWrite {
            clock: Signal::default(),
            reset: Signal::default(),
            in_valid: Signal::default(),
            in_ready: Signal::default(),
            cq: Signal::default(),
            cqe: Signal::default(),
            qp_live: Signal::default(),
            written: Signal::default(),
            cq_next: Signal::default(),
            fire: Signal::default(),
            cq_error: Signal::default(),
            qp_fatal: Signal::default(),
            failed: Signal::default(),
            slot: Signal::default(),
            log_size: Signal::default(),
            wr_valid: Signal::default(),
            wr_ready: Signal::default(),
            wr_addr: Signal::default(),
            wr_data: Signal::default(),
            wr_strb: Signal::default(),
            wr_last: Signal::default(),
            post: CqPost::default(),
            entry: EntryWrite::default(),
        }
    }
}

impl<const D: usize, const K: usize> Logic for CqeWrite<D, K> {
    #[hdl_gen]
    fn update(&mut self) {
        self.post.cq.next = self.cq.val();
        self.post.cqe.next = self.cqe.val();
        self.post.qp_live.next = self.qp_live.val();
        self.written.next = self.post.written.val();
        self.cq_next.next = self.post.cq_next.val();
        self.fire.next = self.post.fire.val();
        self.cq_error.next = self.post.cq_error.val();
        self.qp_fatal.next = self.post.qp_fatal.val();
        self.failed.next = self.post.failed.val();
        self.slot.next = self.post.slot.val();
        self.log_size.next = self.post.log_size.val();

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
