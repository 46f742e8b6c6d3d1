//! The responder's response queue: the per-QP rings of `resp_item` records (`Rings::items`, the table) and
//! what queuing a response does to a QP (`RespQueue`, the model's `RespState::queue` as
//! `resp::queue_seq_nak`, `resp::queue_rnr_nak`, `resp::queue_fatal_nak` and `resp::queue_read` use it).
//!
//! QP `q`'s ring is rows `q * resp_queue ..` of the table; its oldest entry is in slot `item_head` (low
//! bits), and `items` entries follow it (`qpc::RING_HEAD_BITS`).

use crate::engine::cmd::exec::{ATTR_BITS, RESP_BITS};
use crate::kit::*;
use crate::record::{be_slice, build, slice, slice_low};
use crate::rx::meta;
use wire::contract::profile::Profile;
use wire::contract::qpc::{item, qp_context};
use wire::contract::verbs::MAX_MTU_ENUM;
use wire::ext::{syndrome, RethRepr};

/// Bits of a `resp_item` record on the ports (the widest profile's fit).
pub const ITEM_BITS: usize = 160;

/// Bits of a `resource` record on the ports (the widest profile's fit).
pub const RES_BITS: usize = 192;

/// Bits of a response ring's slot for profile `p` (the ring's depth is a power of two).
pub fn slot_bits(p: &Profile) -> usize {
    ring_bits(p.resp_queue)
}

/// Bits of a QP's index into the table for profile `p`.
fn qp_bits(p: &Profile) -> usize {
    (u64::from(p.max_qp).next_power_of_two().trailing_zeros() as usize).max(1)
}

/// Per-QP rings of records, `per_qp` (a power of two) to a QP, each `width` bits: QP `q`'s ring is rows
/// `q * per_qp ..` of the table, its slot the low bits of `*_slot`. One write port (QP, slot, record) and one
/// registered read port, records zero-extended to the ports' `B` bits. The response rings (`resp_item`,
/// `resp_queue` to a QP: `Rings::items`) and the responder's resources (`resource`, `max_qp_rd_atom`:
/// `Rings::resources`).
#[derive(LogicBlock, Default)]
pub struct Rings<const B: usize> {
    pub clock: Signal<In, Clock>,
    pub we: Signal<In, Bit>,
    pub w_qpn: Signal<In, Bits<24>>,
    pub w_slot: Signal<In, Bits<8>>,
    pub w_item: Signal<In, Bits<B>>,
    pub r_qpn: Signal<In, Bits<24>>,
    pub r_slot: Signal<In, Bits<8>>,
    pub r_item: Signal<Out, Bits<B>>,
    shape: Param<(Profile, u32, u32)>,
}

impl<const B: usize> Rings<B> {
    /// Rings of `per_qp` records of `width` bits to a QP of profile `p`.
    pub(crate) fn shaped(p: Profile, per_qp: u32, width: u32) -> Self {
        Rings { shape: Param((p, per_qp, width)), ..Default::default() }
    }
}

impl Rings<ITEM_BITS> {
    /// The response rings of profile `p`.
    pub fn items(p: Profile) -> Self {
        let w = qp_context(&p).resp_item.width();
        Rings { shape: Param((p, p.resp_queue, w)), ..Default::default() }
    }
}

impl Rings<RES_BITS> {
    /// The responder's resources of profile `p`.
    pub fn resources(p: Profile) -> Self {
        let w = qp_context(&p).resource.width();
        Rings { shape: Param((p, p.max_qp_rd_atom, w)), ..Default::default() }
    }
}

impl<const B: usize> Logic for Rings<B> {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_responder.rs).
    }

    fn connect(&mut self) {
        self.r_item.connect();
    }

    fn hdl(&self) -> Verilog {
        let (p, per_qp, width) = &self.shape.0;
        custom_module(rings_verilog(p, *per_qp, *width as usize, B))
    }
}

/// Bits of a slot in a ring of `per_qp` records.
fn ring_bits(per_qp: u32) -> usize {
    assert!(per_qp.is_power_of_two(), "a ring's depth is a power of two");
    per_qp.trailing_zeros().max(1) as usize
}

/// The Verilog body of `Rings` for profile `p`: `per_qp` records of `w` bits to a QP, ports of `b` bits.
pub fn rings_verilog(p: &Profile, per_qp: u32, w: usize, b: usize) -> Vec<String> {
    assert!(w <= b, "a record ({w} bits) is wider than its port ({b})");
    let (qa, sa) = (qp_bits(p), ring_bits(per_qp));
    let rows = 1u64 << (qa + sa);
    let mut v = vec![
        format!("reg [{}:0] tab [0:{}];", w - 1, rows - 1),
        format!("wire [{}:0] wa = {{w_qpn[{}:0], w_slot[{}:0]}};", qa + sa - 1, qa - 1, sa - 1),
        format!("wire [{}:0] ra = {{r_qpn[{}:0], r_slot[{}:0]}};", qa + sa - 1, qa - 1, sa - 1),
        "always @(posedge clock) begin".into(),
        format!("    if (we) tab[wa] <= w_item[{}:0];", w - 1),
    ];
    v.push(if w == b { "    r_item <= tab[ra];".into() } else { format!("    r_item <= {{{}'d0, tab[ra]}};", b - w) });
    v.push("end".into());
    v
}

/// A NAK for ePSN queued behind what the QP owes (the coalesced ACK moving into the ring first, if the
/// slot is full): the model's `queue_seq_nak`, or with `rnr` its `queue_rnr_nak` (the QP's minimum RNR
/// timer in the syndrome, no NAK marked outstanding), or with `fatal` a fatal NAK of syndrome `fatal_syn`
/// (`queue_fatal_nak`: the QP marked fatal, the coalesced ACK dropped, not moved; the check chain kept the
/// queue's last place for it). The QP's `qp_attr` and `qp_resp` records in; one
/// cycle later, the record after (the slot empty, one or two more items) and the items to write: `first`
/// into slot `first_slot`, and when the ACK moved, the NAK (`second`) into the slot after it.
///
/// With `read` it executes a READ request instead (`queue_read`): PSN `psn`, its RETH's `va`, `len` and
/// `rkey`; the READ's responses queued as one item where the NAK would go, the MSN one on, ePSN past the
/// READ's last response (its packet count from the QP's path MTU), and its `resource` record (`res`) to
/// write into the QP's resource ring at `res_slot`, the oldest dropped when `max_dest_rd_atomic` are kept.
/// With `dup` as well, it queues a duplicate READ's responses again (`resp::duplicate`): the item as given
/// (its first response the READ's when `dup_base`, the READ's MSN `dup_msn`), nothing else of the QP moved.
/// `fatal` wins over `read`: a duplicate READ whose key fails has the fatal NAK queued instead, for its PSN.
/// With `atomic` as well as `read`, the request is an atomic whose target held `orig` (`queue_atomic`): its
/// atomic ACK queued where the READ's item would go, its resource keeps `orig`, ePSN one past it; with `dup`
/// too, a duplicate atomic's ACK queued again (`resp::find_atomic`'s item: the MSN `dup_msn`, `orig`).
#[derive(LogicBlock, Default)]
pub struct RespQueue {
    pub clock: Signal<In, Clock>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub resp: Signal<In, Bits<RESP_BITS>>,
    pub rnr: Signal<In, Bit>,
    pub fatal: Signal<In, Bit>,
    pub fatal_syn: Signal<In, Bits<8>>,
    pub read: Signal<In, Bit>,
    pub psn: Signal<In, Bits<24>>,
    pub va: Signal<In, Bits<64>>,
    pub len: Signal<In, Bits<32>>,
    pub rkey: Signal<In, Bits<32>>,
    pub dup: Signal<In, Bit>,
    pub dup_base: Signal<In, Bit>,
    pub dup_msn: Signal<In, Bits<24>>,
    pub atomic: Signal<In, Bit>,
    pub orig: Signal<In, Bits<64>>,
    pub res: Signal<Out, Bits<RES_BITS>>,
    pub res_slot: Signal<Out, Bits<8>>,
    pub resp_next: Signal<Out, Bits<RESP_BITS>>,
    pub first: Signal<Out, Bits<ITEM_BITS>>,
    pub first_slot: Signal<Out, Bits<8>>,
    pub second_valid: Signal<Out, Bit>,
    pub second: Signal<Out, Bits<ITEM_BITS>>,
    profile: Param<Profile>,
}

impl RespQueue {
    pub fn new(profile: Profile) -> Self {
        RespQueue { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RespQueue {
    fn update(&mut self) {
        // Verified in Verilator on its own (sim/tests/resp_queue.rs) and in the core's lockstep.
    }

    fn connect(&mut self) {
        self.resp_next.connect();
        self.first.connect();
        self.first_slot.connect();
        self.second_valid.connect();
        self.second.connect();
        self.res.connect();
        self.res_slot.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(queue_verilog(&self.profile.0))
    }
}

/// A READ request's PSN and its RETH's fields, from its RX record (`RespQueue`'s READ mode takes them).
#[derive(LogicBlock, Default)]
pub struct ReadArgs {
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    pub psn: Signal<Out, Bits<24>>,
    pub va: Signal<Out, Bits<64>>,
    pub len: Signal<Out, Bits<32>>,
    pub rkey: Signal<Out, Bits<32>>,
}

impl Logic for ReadArgs {
    fn update(&mut self) {
        // Verified in Verilator on its own (sim/tests/read_args.rs) and in the core's lockstep.
    }

    fn connect(&mut self) {
        self.psn.connect();
        self.va.connect();
        self.len.connect();
        self.rkey.connect();
    }

    fn hdl(&self) -> Verilog {
        let reth = |n: &str| be_slice("meta", meta::field("reth").0, RethRepr::FIELDS, RethRepr::LEN, n);
        custom_module([
            // Of the whole record it reads the PSN and the RETH.
            "wire unused_meta = ^meta;".to_string(),
            "always @(*) begin".into(),
            format!("    psn = {};", meta::select("meta", "psn")),
            format!("    va = {};", reth("va")),
            format!("    len = {};", reth("dma_len")),
            format!("    rkey = {};", reth("rkey")),
            "end".into(),
        ])
    }
}

/// Verilog declaring `{name}` (`ITEM_BITS` wide): an ACK-kind `resp_item` (an ACK or a NAK; a fatal NAK
/// when `kind`, a Verilog expression, says so) with PSN `psn`, syndrome `syn` and MSN `msn`.
pub fn ack_item(p: &Profile, name: &str, kind: &str, psn: &str, syn: &str, msn: &str) -> Vec<String> {
    let il = qp_context(p).resp_item;
    // Every field is given, so the record `build` starts from is never read.
    let (mut v, rec) = build(&il, "unused", name, |field, _| {
        Some(match field {
            "kind" => kind.to_string(),
            "psn" => psn.to_string(),
            "msn" => msn.to_string(),
            "small" => format!("{{24'd0, {syn}}}"),
            _ => "0".to_string(),
        })
    });
    v.push(format!("wire [{}:0] {name} = {{{}'d0, {rec}}};", ITEM_BITS - 1, ITEM_BITS - il.width() as usize));
    v
}

/// Verilog declaring `mtu_shift` (6 bits): log2 of the path MTU in bytes from `pmtu`, a QP's `qp_attr.pmtu`
/// enum (256 bytes for one not set), as the model's `path_mtu` gives it.
pub fn mtu_shift(pmtu: &str) -> Vec<String> {
    vec![
        format!("wire [2:0] pmtu_e = {pmtu};"),
        format!(
            "wire [5:0] mtu_shift = (pmtu_e >= 3'd2 && pmtu_e <= 3'd{MAX_MTU_ENUM}) ? 6'd7 + {{3'd0, pmtu_e}} : 6'd8;"
        ),
    ]
}

/// Verilog declaring `{name}` (24 bits): the packets of a READ of `len` bytes (a 32-bit expression) at the
/// path MTU `mtu_shift` gives, one for an empty READ; the count wraps past 24 bits, as PSNs do.
pub fn packets(name: &str, len: &str) -> Vec<String> {
    vec![
        format!("wire [32:0] {name}_up = {{1'b0, {len}}} + ((33'd1 << mtu_shift) - 33'd1);"),
        format!("wire [32:0] {name}_all = {name}_up >> mtu_shift;"),
        format!("wire unused_{name} = ^{name}_all[32:24];"),
        format!("wire [23:0] {name} = {len} == 32'd0 ? 24'd1 : {name}_all[23:0];"),
    ]
}

/// The Verilog body of `RespQueue` for profile `p`.
pub fn queue_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let sl = &c.resp;
    let s = |n: &str| slice(sl, "resp", n);
    let iw = crate::record::width(sl, "items");
    assert!(iw < 8, "a ring slot count fits below the head's 8 bits");
    let mut v = vec![format!("wire moved = !fatal && {};", s("ack_valid"))];
    let kw = crate::record::width(&c.resp_item, "kind");
    let ack = format!("{kw}'d{}", item::ACK);
    v.extend(ack_item(p, "acked", &ack, &s("ack_psn"), &s("ack_syndrome"), &s("ack_msn")));
    let timer = slice(&c.attr, "attr", "min_rnr_timer");
    assert_eq!(crate::record::width(&c.attr, "min_rnr_timer"), 5, "the RNR timer code fills the syndrome's low bits");
    v.push(format!(
        "wire [7:0] syn = fatal ? fatal_syn : rnr ? {{3'd{}, {timer}}} : 8'h{:02x};",
        syndrome::RNR_NAK >> 5,
        syndrome::NAK_PSN_SEQ_ERR
    ));
    let nak_kind = format!("fatal ? {kw}'d{} : {ack}", item::FATAL_NAK);
    // A NAK names the request in error: ePSN's, or a duplicate READ's own PSN.
    v.push(format!("wire [23:0] nak_psn = dup ? psn : {};", s("epsn")));
    v.extend(ack_item(p, "nak", &nak_kind, "nak_psn", "syn", &s("msn")));
    // A READ: its packets at the path MTU (`qp_attr.pmtu`'s enum; 256 bytes for one not set), its item, its
    // resource and where the resource ring's head and count go.
    let pmtu = slice(&c.attr, "attr", "pmtu");
    let rw = crate::record::width(sl, "resources");
    v.extend(mtu_shift(&pmtu));
    v.extend(packets("npkts", "len"));
    v.extend([
        format!("wire [23:0] rd_msn = {} + 24'd1;", s("msn")),
        "wire [23:0] rd_epsn = psn + (atomic ? 24'd1 : npkts);".into(),
        format!(
            "wire [{0}:0] res_cap = {1} == 0 ? {rw}'d1 : {2};",
            rw - 1,
            slice(&c.attr, "attr", "max_dest_rd_atomic"),
            slice_low(&c.attr, "attr", "max_dest_rd_atomic", rw as usize)
        ),
        format!("wire res_full = {} >= res_cap;", s("resources")),
        format!("wire [{}:0] rd_resources = res_full ? res_cap : {} + {rw}'d1;", rw - 1, s("resources")),
        format!(
            "wire [7:0] rd_res_head = {} + (res_full ? {{{}'d0, {} - res_cap + {rw}'d1}} : 8'd0);",
            s("res_head"),
            8 - rw,
            s("resources")
        ),
    ]);
    // A READ queued (a new one executed, or a duplicate's responses again); a new one executed.
    v.push("wire rd = read && !fatal;".into());
    v.push("wire ex = rd && !dup;".into());
    let (mut rd, rd_rec) = build(&c.resp_item, "unused", "ri", |field, _| {
        Some(match field {
            "kind" => format!("atomic ? {kw}'d{} : {kw}'d{}", item::ATOMIC_ACK, item::READ),
            "psn" => "psn".into(),
            "msn" => "dup ? dup_msn : rd_msn".into(),
            "word" => "atomic ? orig : va".into(),
            // An atomic ACK keeps its syndrome where a READ keeps its bytes left.
            "small" => format!("atomic ? 32'h{:02x} : len", syndrome::ACK_UNLIMITED),
            "at_base" => "!atomic && (dup ? dup_base : 1'b1)".into(),
            _ => "0".into(),
        })
    });
    rd.push(format!(
        "wire [{}:0] rd_item = {{{}'d0, {rd_rec}}};",
        ITEM_BITS - 1,
        ITEM_BITS - c.resp_item.width() as usize
    ));
    v.extend(rd);
    let rl = &c.resource;
    assert!(rl.width() as usize <= RES_BITS, "resource ({} bits) is wider than its port", rl.width());
    let (res_decls, res_rec) = build(rl, "unused", "rs", |field, _| {
        Some(match field {
            "atomic" => "atomic".into(),
            "first_psn" => "psn".into(),
            "msn" => "rd_msn".into(),
            "word" => "atomic ? orig : va".into(),
            "len" => "atomic ? 32'd0 : len".into(),
            "rkey" => "atomic ? 32'd0 : rkey".into(),
            _ => "0".into(),
        })
    });
    v.extend(res_decls);
    v.push(format!("wire [{}:0] new_item = rd ? rd_item : nak;", ITEM_BITS - 1));
    let (decls, next) = build(sl, "resp", "nq", |name, _| {
        Some(match name {
            "nak_sent" => format!("ex ? 1'b0 : rd || rnr || fatal ? {0} : 1'b1", s("nak_sent")),
            "fatal" => format!("fatal || {}", s("fatal")),
            "items" => format!("{} + (moved ? {iw}'d2 : {iw}'d1)", s("items")),
            "ack_valid" | "ack_psn" | "ack_syndrome" | "ack_msn" => "0".into(),
            "msn" => format!("ex ? rd_msn : {}", s("msn")),
            "epsn" => format!("ex ? rd_epsn : {}", s("epsn")),
            "resources" => format!("ex ? rd_resources : {}", s("resources")),
            "res_head" => format!("ex ? rd_res_head : {}", s("res_head")),
            _ => return None,
        })
    });
    v.extend(decls);
    let pad = RESP_BITS - sl.width() as usize;
    let next = if pad == 0 { next } else { format!("{{{pad}'d0, {next}}}") };
    v.extend([
        "always @(posedge clock) begin".to_string(),
        format!("    resp_next <= {next};"),
        "    first <= moved ? acked : new_item;".into(),
        // The slot after the last entry: the head plus the count (both wrap with the ring).
        format!("    first_slot <= {} + {{{}'d0, {}}};", s("item_head"), 8 - iw, s("items")),
        "    second_valid <= moved;".into(),
        "    second <= new_item;".into(),
        format!("    res <= {{{}'d0, {res_rec}}};", RES_BITS - rl.width() as usize),
        format!("    res_slot <= rd_res_head + {{{}'d0, rd_resources}} - 8'd1;", 8 - rw),
        "end".into(),
    ]);
    v
}
