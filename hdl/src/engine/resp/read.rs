//! `ReadStep`: one READ response of the READ item first in a QP's response queue, the model's
//! `resp::take_read` (and `resp::read_failed` for a response whose payload cannot be read), as generated
//! Verilog. The QP's `qp_attr` and `qp_resp` records and the item in; out, a cycle later: the response's
//! PSN, opcode (FIRST / MIDDLE / LAST / ONLY from the item's `at_base` and whether the bytes left fit one
//! path MTU), AETH (the READ's MSN, ACK with unlimited credit; none on a MIDDLE), the payload's VA and
//! length; the item moved past it (written back in place) and the `qp_resp` record after (the item popped
//! with the READ's last response); and for a failed read the record `read_failed` leaves (the queue
//! emptied, the coalesced ACK dropped, fatal) with the remote access NAK it queues and its ring slot.

use super::queue::{ack_item, mtu_shift, ITEM_BITS};
use crate::engine::cmd::exec::{ATTR_BITS, RESP_BITS};
use crate::kit::*;
use crate::record::{build, slice, width};
use wire::contract::profile::Profile;
use wire::contract::qpc::{item, qp_context};
use wire::ext::syndrome;
use wire::Opcode;

#[derive(LogicBlock, Default)]
pub struct ReadStep {
    pub clock: Signal<In, Clock>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub resp: Signal<In, Bits<RESP_BITS>>,
    pub item: Signal<In, Bits<ITEM_BITS>>,
    pub psn: Signal<Out, Bits<24>>,
    pub opcode: Signal<Out, Bits<8>>,
    pub has_aeth: Signal<Out, Bit>,
    pub aeth: Signal<Out, Bits<32>>,
    pub va: Signal<Out, Bits<64>>,
    pub len: Signal<Out, Bits<16>>,
    /// The READ's last response: the item leaves the queue.
    pub last: Signal<Out, Bit>,
    /// The item after this response, for its slot (`slot`, the ring's head) when it stays.
    pub item_next: Signal<Out, Bits<ITEM_BITS>>,
    pub slot: Signal<Out, Bits<8>>,
    pub resp_next: Signal<Out, Bits<RESP_BITS>>,
    /// A failed read: the record after, and the fatal NAK queued into slot `nak_slot`.
    pub resp_err: Signal<Out, Bits<RESP_BITS>>,
    pub nak: Signal<Out, Bits<ITEM_BITS>>,
    pub nak_slot: Signal<Out, Bits<8>>,
    profile: Param<Profile>,
}

impl ReadStep {
    pub fn new(profile: Profile) -> Self {
        ReadStep { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for ReadStep {
    fn update(&mut self) {
        // Verified in Verilator against the model's `take_read` and `read_failed` (sim/tests/read_step.rs).
    }

    fn connect(&mut self) {
        self.psn.connect();
        self.opcode.connect();
        self.has_aeth.connect();
        self.aeth.connect();
        self.va.connect();
        self.len.connect();
        self.last.connect();
        self.item_next.connect();
        self.slot.connect();
        self.resp_next.connect();
        self.resp_err.connect();
        self.nak.connect();
        self.nak_slot.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `ReadStep` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (sl, il) = (&c.resp, &c.resp_item);
    let s = |n: &str| slice(sl, "resp", n);
    let i = |n: &str| slice(il, "item", n);
    let mut v = mtu_shift(&slice(&c.attr, "attr", "pmtu"));
    v.extend([
        "wire [31:0] pmtu = 32'd1 << mtu_shift;".to_string(),
        format!("wire [31:0] resid = {};", i("small")),
        format!("wire first = {};", i("at_base")),
        "wire done = resid <= pmtu;".into(),
        // At most one path MTU (4096 bytes): 16 bits hold it.
        "wire [31:0] n = done ? resid : pmtu;".into(),
        "wire unused_n = ^n[31:16];".into(),
    ]);
    let (decls, next) = build(il, "item", "ni", |name, _| {
        Some(match name {
            "psn" => format!("{} + 24'd1", i("psn")),
            "word" => format!("{} + {{32'd0, n}}", i("word")),
            "small" => "resid - n".into(),
            "at_base" => "1'b0".into(),
            _ => return None,
        })
    });
    v.extend(decls);
    v.push(format!("wire [{}:0] stepped = {{{}'d0, {next}}};", ITEM_BITS - 1, ITEM_BITS - il.width() as usize));
    let iw = width(sl, "items");
    let (decls, popped) = build(sl, "resp", "np", |name, _| {
        Some(match name {
            "items" => format!("done ? {} - {iw}'d1 : {}", s("items"), s("items")),
            "item_head" => format!("{} + {{7'd0, done}}", s("item_head")),
            _ => return None,
        })
    });
    v.extend(decls);
    let (decls, failed) = build(sl, "resp", "ne", |name, _| {
        Some(match name {
            "items" => format!("{iw}'d1"),
            "item_head" => format!("{} + {{7'd0, done}}", s("item_head")),
            "fatal" => "1'b1".into(),
            "ack_valid" | "ack_psn" | "ack_syndrome" | "ack_msn" => "0".into(),
            _ => return None,
        })
    });
    v.extend(decls);
    let kw = width(il, "kind");
    let fatal = format!("{kw}'d{}", item::FATAL_NAK);
    let syn = format!("8'h{:02x}", syndrome::NAK_REMOTE_ACCESS);
    v.extend(ack_item(p, "nak_rec", &fatal, &i("psn"), &syn, &s("msn")));
    let pad = |r: String| {
        let w = sl.width() as usize;
        if w == RESP_BITS {
            r
        } else {
            format!("{{{}'d0, {r}}}", RESP_BITS - w)
        }
    };
    let op = |o: Opcode| format!("8'h{:02x}", o.0);
    v.extend([
        "always @(posedge clock) begin".to_string(),
        format!("    psn <= {};", i("psn")),
        format!(
            "    opcode <= first ? (done ? {} : {}) : (done ? {} : {});",
            op(Opcode::RDMA_READ_RESPONSE_ONLY),
            op(Opcode::RDMA_READ_RESPONSE_FIRST),
            op(Opcode::RDMA_READ_RESPONSE_LAST),
            op(Opcode::RDMA_READ_RESPONSE_MIDDLE)
        ),
        "    has_aeth <= first || done;".into(),
        format!("    aeth <= {{8'h{:02x}, {}}};", syndrome::ACK_UNLIMITED, i("msn")),
        format!("    va <= {};", i("word")),
        "    len <= n[15:0];".into(),
        "    last <= done;".into(),
        "    item_next <= stepped;".into(),
        format!("    slot <= {};", s("item_head")),
        format!("    resp_next <= {};", pad(popped)),
        format!("    resp_err <= {};", pad(failed)),
        "    nak <= nak_rec;".into(),
        format!("    nak_slot <= {} + {{7'd0, done}};", s("item_head")),
        "end".into(),
    ]);
    v
}
