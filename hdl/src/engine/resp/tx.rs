//! `RespTx`: the responder's transmit side, the model's `resp::sendable` and `resp::next_frame`, as far as
//! the engines built so far go: the ACKs, NAKs, atomic ACKs (with the target's original value) and READ
//! responses of its response queue (`queue::Rings::items`, oldest first) and then the coalesced ACK
//! (`qp_resp`'s ACK slot). A fatal NAK empties the queue and the slot, and its QP enters ERR as it leaves
//! (`err`, the model's `enter_err`).
//!
//! Which QPs owe a response is learnt from the write-backs of `qp_resp` (`owed`, a queue holding each QP at
//! most once): the dispatch's, and its own when the QP still owes after the response it sent. A QP taken
//! from it has its `qp_attr` and `qp_resp` read through the responder's context port, then the oldest item
//! of its queue; if it may send (an RC QP, not flushing, its source GID set, an item or the ACK slot full)
//! an ACK or NAK is decided in one cycle (`decided`, the trace's `Tx` of its responder stream): the item is
//! taken off the ring or the slot emptied, the record written back, and the response's TX record goes to
//! the TX pipeline. A READ response (`ReadStep`) first has its payload read (`DmaStream`, once the
//! dispatch's write beats are out, so the read sees every WRITE decided before it) and is decided the cycle
//! after the read's first completion beat: the item moved on (written back in its slot) or popped with the READ's
//! last response, and the TX record, whose payload the stream gives the TX pipeline; a read that failed
//! sends nothing (`nil`) and queues the remote access NAK the model's `read_failed` queues. The port is held
//! from the read until the record is taken (the headers are read from it), so no frame or command sees the
//! QP in between. A QP that may not send is let go; it is queued again by the next write-back that leaves
//! it owing.

use super::queue::{slot_bits, ITEM_BITS};
use super::read::ReadStep;
use crate::bit_table::{self, Port};
use crate::engine::cmd::exec::{ATTR_BITS, RESP_BITS};
use crate::engine::headers::TxHeaders;
use crate::kit::*;
use crate::record::slice;
use crate::rx::meta;
use wire::contract::profile::Profile;
use wire::contract::qpc::{item, qp_context};
use wire::Opcode;

#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum RespTxState {
    Idle,
    /// A QP taken from the owed queue: its contexts being read.
    Look,
    /// The contexts are in: the oldest item being read.
    Ctx,
    /// The item is in: an ACK's decision, or a READ response's payload to fetch.
    Item,
    /// A READ response's payload being read: the decision at its first beat.
    Fetch,
    /// The response's headers being built.
    Hdr,
    /// Its record offered to the TX pipeline.
    Emit,
}

#[derive(LogicBlock)]
pub struct RespTx {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The dispatch's write-backs of `qp_resp`: which QPs may owe a response.
    pub wb_we: Signal<In, Bit>,
    pub wb_qpn: Signal<In, Bits<24>>,
    pub wb_resp: Signal<In, Bits<RESP_BITS>>,
    /// The context port is another's this cycle (a frame or a command claims it).
    pub hold: Signal<In, Bit>,
    /// Holding the context port.
    pub ctx_busy: Signal<Out, Bit>,
    /// No QP queued, none in hand.
    pub idle: Signal<Out, Bit>,
    /// It waits for the context port: a QP to visit, and nothing else in its way but the port's holder.
    pub want: Signal<Out, Bit>,
    /// The responder's context port (`CmdExec`'s `rs_*`), shared with the dispatch.
    pub qp_index: Signal<Out, Bits<24>>,
    pub qp_valid: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub resp: Signal<In, Bits<RESP_BITS>>,
    pub gid_index: Signal<Out, Bits<4>>,
    pub gid: Signal<In, Bits<128>>,
    pub gid_valid: Signal<In, Bit>,
    pub mac: Signal<In, Bits<48>>,
    pub resp_we: Signal<Out, Bit>,
    pub resp_qpn: Signal<Out, Bits<24>>,
    pub resp_next: Signal<Out, Bits<RESP_BITS>>,
    /// The response rings' read port (`Rings::items`).
    pub item_slot: Signal<Out, Bits<8>>,
    pub item: Signal<In, Bits<ITEM_BITS>>,
    /// Its write port while this block holds the context port (the QP is `resp_qpn`).
    pub item_we: Signal<Out, Bit>,
    pub item_w_slot: Signal<Out, Bits<8>>,
    pub item_w: Signal<Out, Bits<ITEM_BITS>>,
    /// A READ response's payload read (`DmaStream`): a QP is taken only when one can start (`rd_can`), and it
    /// starts once the dispatch has no write beat left (`wr_quiet`); its first completion beat and whether the
    /// read failed.
    pub rd_start: Signal<Out, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub rd_can: Signal<In, Bit>,
    pub wr_quiet: Signal<In, Bit>,
    pub rd_first: Signal<In, Bit>,
    pub rd_err: Signal<In, Bit>,
    /// The TX record of the response, for the TX pipeline (its payload comes from the `DmaStream`).
    pub meta: Signal<Out, Bits<{ meta::BITS }>>,
    pub meta_valid: Signal<Out, Bit>,
    pub meta_ready: Signal<In, Bit>,
    /// The decision trace: QP `tx_qpn`'s responder sent this cycle; with `nil`, nothing (a READ response
    /// whose payload could not be read).
    pub decided: Signal<Out, Bit>,
    pub nil: Signal<Out, Bit>,
    /// A response decided whose record the TX pipeline has not taken yet (its frame is not counted yet).
    pub rec_owed: Signal<Out, Bit>,
    /// With `decided`: the response is an ACK or a sequence or RNR NAK (`tx_acks`; not a fatal NAK).
    pub acked: Signal<Out, Bit>,
    pub tx_qpn: Signal<Out, Bits<24>>,
    /// The fatal NAK decided this cycle: QP `resp_qpn` enters ERR.
    pub err: Signal<Out, Bit>,
    state: DFF<RespTxState>,
    qpn: DFF<Bits<24>>,
    psn: DFF<Bits<24>>,
    opcode: DFF<Bits<8>>,
    aeth: DFF<Bits<32>>,
    has_aeth: DFF<Bit>,
    plen: DFF<Bits<16>>,
    /// An atomic ACK's AtomicAckETH (the target's original value; the TX pipeline emits it for its opcode).
    orig: DFF<Bits<64>>,
    /// The READ response's payload read is started.
    started: DFF<Bit>,
    owed: Owed,
    slot: AckSlot,
    read: ReadStep,
    headers: TxHeaders,
    ack: Constant<Bits<8>>,
    atomic_ack: Constant<Bits<8>>,
}

impl RespTx {
    pub fn new(profile: Profile) -> Self {
        RespTx {
            clock: Signal::default(),
            reset: Signal::default(),
            wb_we: Signal::default(),
            wb_qpn: Signal::default(),
            wb_resp: Signal::default(),
            hold: Signal::default(),
            ctx_busy: Signal::default(),
            idle: Signal::default(),
            want: Signal::default(),
            qp_index: Signal::default(),
            qp_valid: Signal::default(),
            attr: Signal::default(),
            resp: Signal::default(),
            gid_index: Signal::default(),
            gid: Signal::default(),
            gid_valid: Signal::default(),
            mac: Signal::default(),
            resp_we: Signal::default(),
            resp_qpn: Signal::default(),
            resp_next: Signal::default(),
            item_slot: Signal::default(),
            item: Signal::default(),
            item_we: Signal::default(),
            item_w_slot: Signal::default(),
            item_w: Signal::default(),
            rd_start: Signal::default(),
            rd_addr: Signal::default(),
            rd_len: Signal::default(),
            rd_can: Signal::default(),
            wr_quiet: Signal::default(),
            rd_first: Signal::default(),
            rd_err: Signal::default(),
            meta: Signal::default(),
            meta_valid: Signal::default(),
            meta_ready: Signal::default(),
            decided: Signal::default(),
            rec_owed: Signal::default(),
            acked: Signal::default(),
            nil: Signal::default(),
            tx_qpn: Signal::default(),
            err: Signal::default(),
            state: DFF::default(),
            qpn: DFF::default(),
            psn: DFF::default(),
            opcode: DFF::default(),
            aeth: DFF::default(),
            has_aeth: DFF::default(),
            plen: DFF::default(),
            started: DFF::default(),
            orig: DFF::default(),
            owed: Owed::new(profile),
            slot: AckSlot::new(profile),
            read: ReadStep::new(profile),
            headers: TxHeaders::new(profile),
            ack: Constant::new(u64::from(Opcode::ACKNOWLEDGE.0).into()),
            atomic_ack: Constant::new(u64::from(Opcode::ATOMIC_ACKNOWLEDGE.0).into()),
        }
    }
}

impl Logic for RespTx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, qpn, psn, opcode, aeth, has_aeth, orig, plen, started);
        // Which QPs owe: the dispatch's write-backs, or this block's own (the port is one holder's at a time).
        self.owed.clock.next = self.clock.val();
        self.owed.reset.next = self.reset.val();
        self.owed.wb_resp.next = self.wb_resp.val();
        self.owed.push.next = self.wb_we.val();
        self.owed.push_qpn.next = self.wb_qpn.val();
        self.owed.pop.next = false;
        self.slot.attr.next = self.attr.val();
        self.slot.resp.next = self.resp.val();
        self.slot.item.next = self.item.val();
        self.item_slot.next = self.slot.head.val();
        self.slot.qp_valid.next = self.qp_valid.val();
        self.slot.gid_valid.next = self.gid_valid.val();
        self.slot.hdr.next = self.headers.meta.val();
        self.slot.aeth_in.next = self.aeth.q.val();
        self.slot.has_aeth_in.next = self.has_aeth.q.val();
        self.slot.plen_in.next = self.plen.q.val();
        self.slot.orig_in.next = self.orig.q.val();
        self.read.clock.next = self.clock.val();
        self.read.attr.next = self.attr.val();
        self.read.resp.next = self.resp.val();
        self.read.item.next = self.item.val();
        self.headers.clock.next = self.clock.val();
        self.headers.attr.next = self.attr.val();
        self.gid_index.next = self.headers.gid_index.val();
        self.headers.gid.next = self.gid.val();
        self.headers.gid_valid.next = self.gid_valid.val();
        self.headers.mac.next = self.mac.val();
        self.headers.opcode.next = self.opcode.q.val();
        self.headers.psn.next = self.psn.q.val();
        self.headers.ack_req.next = false;
        self.qp_index.next = self.qpn.q.val();
        self.resp_qpn.next = self.qpn.q.val();
        self.resp_next.next = self.slot.resp_next.val();
        self.item_w_slot.next = self.read.slot.val();
        self.item_w.next = self.read.item_next.val();
        self.rd_addr.next = self.read.va.val();
        self.rd_len.next = self.read.len.val();
        self.tx_qpn.next = self.qpn.q.val();
        self.meta.next = self.slot.meta.val();

        self.resp_we.next = false;
        self.item_we.next = false;
        self.rd_start.next = false;
        self.decided.next = false;
        self.nil.next = false;
        self.acked.next = false;
        self.rec_owed.next = (self.state.q.val() == RespTxState::Hdr) | (self.state.q.val() == RespTxState::Emit);
        self.err.next = false;
        self.meta_valid.next = false;
        self.ctx_busy.next = true;
        self.idle.next = false;
        self.want.next = false;
        match self.state.q.val() {
            RespTxState::Idle => {
                self.ctx_busy.next = false;
                self.idle.next = !self.owed.valid.val();
                self.want.next = self.owed.valid.val() & self.rd_can.val();
                // A QP is taken only when a READ response's payload read could start: one waiting for room
                // in the stream would hold the context port until the TX pipeline drains it.
                if self.owed.valid.val() & !self.hold.val() & self.rd_can.val() {
                    self.owed.pop.next = true;
                    self.qpn.d.next = self.owed.head.val();
                    self.state.d.next = RespTxState::Look;
                }
            }
            RespTxState::Look => {
                self.state.d.next = RespTxState::Ctx;
            }
            RespTxState::Ctx => {
                self.state.d.next = RespTxState::Item;
            }
            RespTxState::Item => {
                self.state.d.next = RespTxState::Idle;
                if self.slot.go.val() {
                    self.resp_we.next = true;
                    self.decided.next = true;
                    self.err.next = self.slot.fatal.val();
                    self.acked.next = !self.slot.fatal.val() & !self.slot.atomic.val();
                    self.psn.d.next = self.slot.psn.val();
                    self.opcode.d.next = self.ack.val();
                    if self.slot.atomic.val() {
                        self.opcode.d.next = self.atomic_ack.val();
                    }
                    self.aeth.d.next = self.slot.aeth.val();
                    self.has_aeth.d.next = true;
                    self.orig.d.next = self.slot.orig.val();
                    self.plen.d.next = 0.into();
                    self.owed.push.next = true;
                    self.owed.push_qpn.next = self.qpn.q.val();
                    self.owed.wb_resp.next = self.slot.resp_next.val();
                    self.state.d.next = RespTxState::Hdr;
                } else if self.slot.read.val() {
                    // `ReadStep` shows the response from the next cycle.
                    self.started.d.next = false;
                    self.state.d.next = RespTxState::Fetch;
                }
            }
            RespTxState::Fetch => {
                self.psn.d.next = self.read.psn.val();
                self.opcode.d.next = self.read.opcode.val();
                self.aeth.d.next = self.read.aeth.val();
                self.has_aeth.d.next = self.read.has_aeth.val();
                self.plen.d.next = self.read.len.val();
                if !self.started.q.val() & (self.read.len.val() != 0) {
                    // The payload read (the stream could start it when the QP was taken, and nothing else
                    // starts one), once no write beat decided before it is left to go out.
                    self.rd_start.next = self.wr_quiet.val();
                    self.started.d.next = self.wr_quiet.val();
                } else if (self.read.len.val() == 0) | self.rd_first.val() {
                    // The decision: the READ response, or with a failed read nothing and the fatal NAK.
                    self.resp_we.next = true;
                    self.decided.next = true;
                    self.owed.push.next = true;
                    self.owed.push_qpn.next = self.qpn.q.val();
                    if (self.read.len.val() != 0) & self.rd_err.val() {
                        self.nil.next = true;
                        self.resp_next.next = self.read.resp_err.val();
                        self.owed.wb_resp.next = self.read.resp_err.val();
                        self.item_we.next = true;
                        self.item_w_slot.next = self.read.nak_slot.val();
                        self.item_w.next = self.read.nak.val();
                        self.state.d.next = RespTxState::Idle;
                    } else {
                        self.resp_next.next = self.read.resp_next.val();
                        self.owed.wb_resp.next = self.read.resp_next.val();
                        self.item_we.next = !self.read.last.val();
                        self.state.d.next = RespTxState::Hdr;
                    }
                }
            }
            RespTxState::Hdr => {
                self.state.d.next = RespTxState::Emit;
            }
            RespTxState::Emit => {
                self.meta_valid.next = true;
                if self.meta_ready.val() {
                    self.state.d.next = RespTxState::Idle;
                }
            }
            _ => {
                self.state.d.next = RespTxState::Idle;
            }
        }
        if self.reset.val() {
            self.state.d.next = RespTxState::Idle;
        }
    }
}

/// The QPs that may owe a response, each at most once, oldest first: a write-back (`push`) that leaves QP
/// `push_qpn` owing (`wb_resp`: the ACK slot full or response items queued) queues it unless it is queued;
/// `pop` takes the head. One entry per QP, so it never overflows.
#[derive(LogicBlock)]
pub struct Owed {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub push: Signal<In, Bit>,
    pub push_qpn: Signal<In, Bits<24>>,
    pub wb_resp: Signal<In, Bits<RESP_BITS>>,
    pub pop: Signal<In, Bit>,
    pub head: Signal<Out, Bits<24>>,
    pub valid: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl Owed {
    pub fn new(profile: Profile) -> Self {
        Owed {
            clock: Signal::default(),
            reset: Signal::default(),
            push: Signal::default(),
            push_qpn: Signal::default(),
            wb_resp: Signal::default(),
            pop: Signal::default(),
            head: Signal::default(),
            valid: Signal::default(),
            profile: Param(profile),
        }
    }
}

impl Logic for Owed {
    fn update(&mut self) {
        // Verified in Verilator on its own (sim/tests/resp_tx.rs, in `RespTx`) and in the core's lockstep.
    }

    fn connect(&mut self) {
        self.head.connect();
        self.valid.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(owed_verilog(&self.profile.0))
    }
}

/// The Verilog body of `Owed` for profile `p`.
pub fn owed_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let s = |n: &str| slice(&c.resp, "wb_resp", n);
    let n = u64::from(p.max_qp).next_power_of_two();
    let qa = n.trailing_zeros().max(1) as usize;
    let mut v = vec![
        format!("reg [{}:0] ring [0:{}];", qa - 1, n - 1),
        format!("reg [{}:0] queued;", n - 1),
        format!("reg [{qa}:0] wp, rp;"),
        format!("wire [{}:0] q = push_qpn[{}:0];", qa - 1, qa - 1),
        format!("wire owes = {} || {} != 0;", s("ack_valid"), s("items")),
        // A QP popped as it is pushed again is queued again.
        format!(
            "wire take = push && owes && push_qpn < 24'd{} && (!queued[q] || (pop && valid && head[{}:0] == q));",
            p.max_qp,
            qa - 1
        ),
        "always @(*) begin".into(),
        format!("    valid = wp != rp;\n    head = {{{}'d0, ring[rp[{}:0]]}};", 24 - qa, qa - 1),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    if (pop && valid) rp <= rp + 1'b1;".into(),
        format!("    if (take) begin ring[wp[{}:0]] <= q; wp <= wp + 1'b1; end", qa - 1),
        format!("    if (reset) begin wp <= {}'d0; rp <= {}'d0; end", qa + 1, qa + 1),
        "end".into(),
    ];
    let head_q = format!("head[{}:0]", qa - 1);
    v.extend(bit_table::write_ports(
        "queued",
        n as u32,
        qa as u32,
        &[Port { en: "pop && valid", at: &head_q, d: "1'b0" }, Port { en: "take", at: "q", d: "1'b1" }],
    ));
    v
}

/// The next response of the QP in hand: whether an ACK or NAK sends now (`go`: an RC QP, not flushing, its
/// source GID set, and an ACK or NAK first in its queue, or an empty queue and the ACK slot full), a READ
/// response (`read`: likewise, a READ first); whether what goes is an atomic ACK (`atomic`, with the original
/// value `orig`); the ACK's PSN and AETH, the `qp_resp` record after it (the item taken off the ring, or the
/// slot emptied), the ring slot of the oldest item (`head`), and the response's TX record (the headers with
/// the AETH, the AtomicAckETH and the payload length held in `has_aeth_in`, `aeth_in`, `orig_in` and
/// `plen_in`).
#[derive(LogicBlock)]
pub struct AckSlot {
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub resp: Signal<In, Bits<RESP_BITS>>,
    pub item: Signal<In, Bits<ITEM_BITS>>,
    pub qp_valid: Signal<In, Bit>,
    pub gid_valid: Signal<In, Bit>,
    pub hdr: Signal<In, Bits<{ meta::BITS }>>,
    pub aeth_in: Signal<In, Bits<32>>,
    pub has_aeth_in: Signal<In, Bit>,
    pub plen_in: Signal<In, Bits<16>>,
    pub orig_in: Signal<In, Bits<64>>,
    pub go: Signal<Out, Bit>,
    /// What goes is a fatal NAK.
    pub fatal: Signal<Out, Bit>,
    /// A READ response goes next (`ReadStep`).
    pub read: Signal<Out, Bit>,
    pub atomic: Signal<Out, Bit>,
    pub orig: Signal<Out, Bits<64>>,
    pub psn: Signal<Out, Bits<24>>,
    pub aeth: Signal<Out, Bits<32>>,
    pub resp_next: Signal<Out, Bits<RESP_BITS>>,
    pub head: Signal<Out, Bits<8>>,
    pub meta: Signal<Out, Bits<{ meta::BITS }>>,
    profile: Param<Profile>,
}

impl AckSlot {
    pub fn new(profile: Profile) -> Self {
        AckSlot {
            attr: Signal::default(),
            resp: Signal::default(),
            item: Signal::default(),
            qp_valid: Signal::default(),
            gid_valid: Signal::default(),
            hdr: Signal::default(),
            aeth_in: Signal::default(),
            has_aeth_in: Signal::default(),
            plen_in: Signal::default(),
            orig_in: Signal::default(),
            go: Signal::default(),
            fatal: Signal::default(),
            read: Signal::default(),
            atomic: Signal::default(),
            orig: Signal::default(),
            psn: Signal::default(),
            aeth: Signal::default(),
            resp_next: Signal::default(),
            head: Signal::default(),
            meta: Signal::default(),
            profile: Param(profile),
        }
    }
}

impl Logic for AckSlot {
    fn update(&mut self) {
        // Verified in Verilator on its own (sim/tests/resp_tx.rs, in `RespTx`) and in the core's lockstep.
    }

    fn connect(&mut self) {
        self.go.connect();
        self.fatal.connect();
        self.read.connect();
        self.atomic.connect();
        self.orig.connect();
        self.psn.connect();
        self.aeth.connect();
        self.resp_next.connect();
        self.head.connect();
        self.meta.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(slot_verilog(&self.profile.0))
    }
}

/// The Verilog body of `AckSlot` for profile `p`.
pub fn slot_verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, sl, il) = (&c.attr, &c.resp, &c.resp_item);
    let a = |n: &str| slice(al, "attr", n);
    let s = |n: &str| slice(sl, "resp", n);
    let i = |n: &str| slice(il, "item", n);
    let iw = crate::record::width(sl, "items");
    let (next_decls, next) = crate::record::build(sl, "resp", "nx", |name, _| {
        Some(match name {
            // A fatal NAK clears the queue without moving its head.
            "items" => format!("is_fatal ? {iw}'d0 : queued ? {} - {iw}'d1 : {}", s("items"), s("items")),
            "item_head" => format!("queued && !is_fatal ? {} + 8'd1 : {}", s("item_head"), s("item_head")),
            "ack_valid" | "ack_psn" | "ack_syndrome" | "ack_msn" => {
                format!("queued && !is_fatal ? {} : 0", s(name))
            }
            _ => return None,
        })
    });
    let pad = RESP_BITS - sl.width() as usize;
    let next = if pad == 0 { next } else { format!("{{{pad}'d0, {next}}}") };
    let (has, _) = meta::field("has_aeth");
    let (lsb, bits) = meta::field("aeth");
    let (plsb, pbits) = meta::field("payload_len");
    let (oalsb, oabits) = meta::field("atomic_ack_eth");
    let mut v = vec![
        format!("wire may = qp_valid && !{} && !{};", a("raw"), a("flushing")),
        format!("wire queued = {} != 0;", s("items")),
        format!("wire is_ack = {} == {}'d{};", i("kind"), crate::record::width(il, "kind"), item::ACK),
        format!(
            "wire is_fatal = queued && {} == {}'d{};",
            i("kind"),
            crate::record::width(il, "kind"),
            item::FATAL_NAK
        ),
        format!("wire is_read = queued && {} == {}'d{};", i("kind"), crate::record::width(il, "kind"), item::READ),
        format!(
            "wire is_atomic = queued && {} == {}'d{};",
            i("kind"),
            crate::record::width(il, "kind"),
            item::ATOMIC_ACK
        ),
    ];
    v.extend(next_decls);
    v.extend([
        "always @(*) begin".to_string(),
        format!("    go = may && gid_valid && (queued ? is_ack || is_fatal || is_atomic : {});", s("ack_valid")),
        "    fatal = is_fatal;".into(),
        "    read = may && gid_valid && is_read;".into(),
        "    atomic = is_atomic;".into(),
        format!("    orig = {};", i("word")),
        format!("    psn = queued ? {} : {};", i("psn"), s("ack_psn")),
        format!(
            "    aeth = queued ? {{{}, {}}} : {{{}, {}}};",
            slice_low8(il),
            i("msn"),
            s("ack_syndrome"),
            s("ack_msn")
        ),
        format!("    resp_next = {next};"),
        format!(
            "    head = {{{}'d0, {}}};",
            8 - slot_bits(p),
            crate::record::slice_low(sl, "resp", "item_head", slot_bits(p))
        ),
        "    meta = hdr;".into(),
        format!("    meta[{has}] = has_aeth_in;"),
        format!("    meta[{}:{lsb}] = aeth_in;", lsb + bits - 1),
        format!("    meta[{}:{plsb}] = plen_in;", plsb + pbits - 1),
        format!("    meta[{}:{oalsb}] = orig_in;", oalsb + oabits - 1),
        "end".into(),
    ]);
    v
}

/// The syndrome an ACK-kind item keeps in the low byte of `small`.
fn slice_low8(il: &wire::layout::Layout) -> String {
    let (lsb, _) = il.slice("small").expect("resp_item has `small`");
    format!("item[{}:{lsb}]", lsb + 7)
}
