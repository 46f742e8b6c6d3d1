//! `CtrlQueue`: the control queue, the model's `ctrl_queue` and its `Tx(Control)` decisions. Its frame store
//! has `SLOTS` slots of `SLOT_BYTES`: the queue's `ENTRIES` and the landing slot `RawRecv` writes every frame
//! into. At a held frame's decision (`at_held`, routed as not RoCEv2: `raw`) whose address the GID table holds
//! (`own`), the landing slot joins the queue with its reply's fields (the NIC's MAC put in for ARP), or, the
//! queue full, the reply is lost (`ctrl_drop_full`), as the model's `queue_control` has it; either way the
//! reply is counted (`arp_replies`, `icmp_echo_replies`); `inc` carries those counts. A frame routed as not
//! RoCEv2 and not answered is the raw packet QP's (the dispatch's `RAW_RECV`), or dropped and counted there.
//!
//! The oldest queued reply goes out between two of the TX pipeline's frames (never once the pipeline has
//! shown a frame's first beat to the MAC): its bytes are its slot's, with the reply's fields written over
//! the first `HEAD_BYTES` (all of them for ARP) and zeros from its `end` to the 60-byte minimum. Its last
//! beat taken is its decision (`sent`, with its length for `tx_bytes`); the slot and the entry are free
//! from then on, so a reply decided in the same cycle finds the room it leaves, as the model applies the
//! transmit decision before the frame's.

use super::{patch, ENTRIES, HEAD_BYTES, PATCH_BITS, SLOTS, SLOT_BYTES};
use crate::kit::*;
use crate::record::{build, slice};
use wire::arp::{ArpFields, HTYPE_ETHERNET, REPLY};
use wire::contract::regs::Counter;
use wire::eth::{self, ethertype};
use wire::icmp::{IcmpEchoRepr, ECHO_REPLY, REPLY_TTL};
use wire::ipv4;

#[derive(LogicBlock)]
pub struct CtrlQueue<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// `RawRecv`'s beats for the landing slot.
    pub wr_valid: Signal<In, Bit>,
    pub wr_beat: Signal<In, Bits<8>>,
    pub wr_data: Signal<In, Bits<D>>,
    /// The held frame is the next decided, and its reply; whether the GID table holds its address; whether a frame
    /// routed as not RoCEv2 (held or not) is decided this cycle; the NIC's MAC.
    pub at_held: Signal<In, Bit>,
    pub patch: Signal<In, Bits<PATCH_BITS>>,
    pub own: Signal<In, Bit>,
    pub raw: Signal<In, Bit>,
    pub mac: Signal<In, Bits<48>>,
    /// The TX pipeline's frames, and the MAC's port they share with the replies (`tx_ctrl`: the beat is a
    /// reply's).
    pub pipe_data: Signal<In, Bits<D>>,
    pub pipe_keep: Signal<In, Bits<K>>,
    pub pipe_last: Signal<In, Bit>,
    pub pipe_valid: Signal<In, Bit>,
    pub pipe_ready: Signal<Out, Bit>,
    pub tx_data: Signal<Out, Bits<D>>,
    pub tx_keep: Signal<Out, Bits<K>>,
    pub tx_last: Signal<Out, Bit>,
    pub tx_valid: Signal<Out, Bit>,
    pub tx_ready: Signal<In, Bit>,
    pub tx_ctrl: Signal<Out, Bit>,
    /// A reply's last beat taken (the `Tx(Control)` decision), and its length.
    pub sent: Signal<Out, Bit>,
    pub sent_len: Signal<Out, Bits<16>>,
    /// Nothing queued, nothing going out.
    pub idle: Signal<Out, Bit>,
    /// This cycle's counts (bit `Counter as usize`).
    pub inc: Signal<Out, Bits<64>>,
}

impl<const D: usize, const K: usize> Default for CtrlQueue<D, K> {
    fn default() -> Self {
        assert!(D == 8 * K && HEAD_BYTES.is_multiple_of(K), "beats of 8 or 64 bytes");
        CtrlQueue {
            clock: Signal::default(),
            reset: Signal::default(),
            wr_valid: Signal::default(),
            wr_beat: Signal::default(),
            wr_data: Signal::default(),
            at_held: Signal::default(),
            patch: Signal::default(),
            own: Signal::default(),
            raw: Signal::default(),
            mac: Signal::default(),
            pipe_data: Signal::default(),
            pipe_keep: Signal::default(),
            pipe_last: Signal::default(),
            pipe_valid: Signal::default(),
            pipe_ready: Signal::default(),
            tx_data: Signal::default(),
            tx_keep: Signal::default(),
            tx_last: Signal::default(),
            tx_valid: Signal::default(),
            tx_ready: Signal::default(),
            tx_ctrl: Signal::default(),
            sent: Signal::default(),
            sent_len: Signal::default(),
            idle: Signal::default(),
            inc: Signal::default(),
        }
    }
}

impl<const D: usize, const K: usize> Logic for CtrlQueue<D, K> {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_raw.rs).
    }

    fn connect(&mut self) {
        self.pipe_ready.connect();
        self.tx_data.connect();
        self.tx_keep.connect();
        self.tx_last.connect();
        self.tx_valid.connect();
        self.tx_ctrl.connect();
        self.sent.connect();
        self.sent_len.connect();
        self.idle.connect();
        self.inc.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(K))
    }
}

/// Byte `i` of big-endian field `name` of the reply in hand (`cur`).
fn cur_byte(name: &str, i: usize) -> String {
    let (lsb, w) = patch().slice(name).expect("a field of the patch");
    let hi = lsb as usize + w as usize - 8 * i - 1;
    format!("cur[{hi}:{}]", hi - 7)
}

/// Byte `i` of a 16-bit constant.
fn const16(v: u16, i: usize) -> String {
    format!("8'h{:02x}", v.to_be_bytes()[i])
}

/// Which byte of a field at bytes `r` of a header at `base` byte `n` of the frame is, if it is one.
fn in_field(n: usize, r: std::ops::Range<usize>, base: usize) -> Option<usize> {
    (base + r.start..base + r.end).contains(&n).then(|| n - base - r.start)
}

/// Byte `n` of an echo reply whose IPv4 header is at `o`: the reply's field over it, or `None` (the
/// request's byte).
fn echo_byte(n: usize, o: usize) -> Option<String> {
    let icmp = o + ipv4::HEADER_LEN;
    let icmp_field = |name: &str| IcmpEchoRepr::FIELDS.iter().find(|(f, _)| *f == name).map(|(_, r)| r.clone());
    let in_field = |r, base| in_field(n, r, base);
    if let Some(i) = in_field(eth::field::DST, 0) {
        return Some(cur_byte("mac_a", i));
    }
    if let Some(i) = in_field(eth::field::SRC, 0) {
        return Some(cur_byte("mac_b", i));
    }
    if n == o + ipv4::field::TTL {
        return Some(format!("8'd{REPLY_TTL}"));
    }
    if let Some(i) = in_field(ipv4::field::CHECKSUM, o) {
        return Some(cur_byte("csum_ip", i));
    }
    if let Some(i) = in_field(ipv4::field::SRC, o) {
        return Some(cur_byte("ip_b", i));
    }
    if let Some(i) = in_field(ipv4::field::DST, o) {
        return Some(cur_byte("ip_a", i));
    }
    if in_field(icmp_field("icmp_type")?, icmp).is_some() {
        return Some(format!("8'd{ECHO_REPLY}"));
    }
    in_field(icmp_field("checksum")?, icmp).map(|i| cur_byte("csum_icmp", i))
}

/// Byte `n` of an ARP reply (`wire::arp::reply_frame`), tagged or not.
fn arp_byte(n: usize, vlan: bool) -> String {
    let o = eth::HEADER_LEN + if vlan { eth::VLAN_LEN } else { 0 };
    let in_field = |r, base| in_field(n, r, base);
    if let Some(i) = in_field(eth::field::DST, 0) {
        return cur_byte("mac_a", i);
    }
    if let Some(i) = in_field(eth::field::SRC, 0) {
        return cur_byte("mac_b", i);
    }
    if vlan {
        if let Some(i) = in_field(eth::field::TYPE, 0) {
            return const16(ethertype::VLAN, i);
        }
        if let Some(i) = in_field(eth::field::VLAN_TCI, 0) {
            return cur_byte("tci", i);
        }
    }
    if let Some(i) = in_field(o - 2..o, 0) {
        return const16(ethertype::ARP, i);
    }
    for (name, r) in ArpFields::FIELDS {
        let Some(i) = in_field(r.clone(), o) else { continue };
        return match *name {
            "htype" => const16(HTYPE_ETHERNET, i),
            "ptype" => const16(ethertype::IPV4, i),
            "hlen" => "8'd6".into(),
            "plen" => "8'd4".into(),
            "oper" => const16(REPLY, i),
            "sha" => cur_byte("mac_b", i),
            "spa" => cur_byte("ip_b", i),
            "tha" => cur_byte("mac_a", i),
            "tpa" => cur_byte("ip_a", i),
            _ => unreachable!("an ARP field"),
        };
    }
    "8'd0".into()
}

/// The Verilog body of `CtrlQueue` for beats of `k` bytes.
pub fn verilog(k: usize) -> Vec<String> {
    let d = 8 * k;
    let nb = HEAD_BYTES / k;
    let sb = SLOT_BYTES / k;
    let lk = k.trailing_zeros();
    // Addresses as wide as the slot's beat index and a carry at least (the store's own may be narrower).
    let used = (SLOTS * sb).next_power_of_two().trailing_zeros() as usize;
    let aw = used.max(9);
    let l = patch();
    let f = |rec: &str, name: &str| slice(&l, rec, name);
    let (o0, o1) = (eth::HEADER_LEN, eth::HEADER_LEN + eth::VLAN_LEN);
    let mut v = vec![
        format!("reg [{}:0] mem [0:{}];", d - 1, SLOTS * sb - 1),
        format!("reg [{}:0] slots [0:{}];", PATCH_BITS - 1, SLOTS - 1),
        "reg [2:0] head, tail, count;".into(),
        "reg sending, pipe_mid, pipe_shown;".into(),
        "reg [7:0] idx;".into(),
        format!("reg [{}:0] cur;", PATCH_BITS - 1),
        format!("reg [{}:0] q;", d - 1),
        format!("function [2:0] nxt(input [2:0] s); nxt = s == 3'd{} ? 3'd0 : s + 3'd1; endfunction", SLOTS - 1),
        format!("wire [10:0] cend = {};", f("cur", "end")),
        format!("wire [10:0] rlen = cend < 11'd{m} ? 11'd{m} : cend;", m = eth::MIN_FRAME_LEN),
        format!("wire [19:0] pos = {{{}'d0, idx, {lk}'d0}};", 12 - lk),
        "wire taken = sending && tx_ready;".into(),
        format!("wire last_beat = pos + 20'd{k} >= {{9'd0, rlen}};"),
        "wire sent_w = taken && last_beat;".into(),
        "wire reply = at_held && raw && own;".into(),
        format!("wire full = count == 3'd{ENTRIES} && !sent_w;"),
        "wire commit = reply && !full;".into(),
        "wire go = !sending && count != 3'd0 && !pipe_mid && !pipe_shown;".into(),
        "wire grant = go || sending;".into(),
        format!("wire [{}:0] head_base = head * {aw}'d{sb};", aw - 1),
        format!(
            "wire [{}:0] rd_addr = sending ? head_base + {{{}'d0, idx}} + {{{}'d0, taken}} : head_base;",
            aw - 1,
            aw - 8,
            aw - 1
        ),
        format!("wire [{}:0] wr_addr = tail * {aw}'d{sb} + {{{}'d0, wr_beat}};", aw - 1, aw - 8),
    ];
    if aw > used {
        v.push(format!("wire unused_addr = ^{{rd_addr[{}:{used}], wr_addr[{}:{used}]}};", aw - 1, aw - 1));
    }
    // The queued reply: the NIC's MAC as an ARP reply's source.
    let (decls, rec) = build(&l, "patch", "pm", |name, _| {
        (name == "mac_b").then(|| format!("{} ? mac : {}", f("patch", "arp"), f("patch", "mac_b")))
    });
    v.extend(decls);
    v.push(format!("wire [{}:0] queued = {rec};", PATCH_BITS - 1));
    // The reply's own bytes over the first HEAD_BYTES of its slot.
    let (arp, vl) = (f("cur", "arp"), f("cur", "vlan"));
    for n in 0..HEAD_BYTES {
        let echo = |o| echo_byte(n, o);
        let (u0, u1) = (echo(o0).is_some(), echo(o1).is_some());
        let e0 = echo(o0).unwrap_or_else(|| "8'd0".into());
        let e1 = echo(o1).unwrap_or_else(|| "8'd0".into());
        v.push(format!("wire u{n} = {arp} || ({vl} ? 1'b{} : 1'b{});", u8::from(u1), u8::from(u0)));
        v.push(format!(
            "wire [7:0] r{n} = {arp} ? ({vl} ? {} : {}) : ({vl} ? {e1} : {e0});",
            arp_byte(n, true),
            arp_byte(n, false)
        ));
    }
    v.push(format!("reg [{}:0] ob;", d - 1));
    v.push(format!("reg [{}:0] okeep;", k - 1));
    v.push("always @(*) begin".into());
    v.push("    ob = q;".into());
    v.push("    case (idx)".into());
    for beat in 0..nb {
        v.push(format!("    8'd{beat}: begin"));
        for j in 0..k {
            let n = beat * k + j;
            v.push(format!("        if (u{n}) ob[{}:{}] = r{n};", 8 * j + 7, 8 * j));
        }
        v.push("    end".into());
    }
    v.push("    default: ;".into());
    v.push("    endcase".into());
    for j in 0..k {
        v.push(format!("    if (pos + 20'd{j} >= {{9'd0, cend}}) ob[{}:{}] = 8'd0;", 8 * j + 7, 8 * j));
        v.push(format!("    okeep[{j}] = pos + 20'd{j} < {{9'd0, rlen}};"));
    }
    v.push("end".into());
    v.extend([
        "always @(*) begin".to_string(),
        "    pipe_ready = tx_ready && !grant;".into(),
        "    tx_valid = sending || (pipe_valid && !grant);".into(),
        "    tx_data = sending ? ob : pipe_data;".into(),
        "    tx_keep = sending ? okeep : pipe_keep;".into(),
        "    tx_last = sending ? last_beat : pipe_last;".into(),
        "    tx_ctrl = sending;".into(),
        "    sent = sent_w;".into(),
        "    sent_len = {5'd0, rlen};".into(),
        "    idle = count == 3'd0 && !sending;".into(),
        "    inc = 64'd0;".into(),
        format!("    if (reply && {}) inc[{}] = 1'b1;", f("patch", "arp"), Counter::arp_replies as usize),
        format!("    if (reply && !{}) inc[{}] = 1'b1;", f("patch", "arp"), Counter::icmp_echo_replies as usize),
        format!("    if (reply && full) inc[{}] = 1'b1;", Counter::ctrl_drop_full as usize),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    if (wr_valid) mem[wr_addr] <= wr_data;".into(),
        "    q <= mem[rd_addr];".into(),
        "    if (commit) slots[tail] <= queued;".into(),
        "    if (go) cur <= slots[head];".into(),
        "    if (reset) begin".into(),
        "        head <= 3'd0; tail <= 3'd0; count <= 3'd0; sending <= 1'b0; pipe_mid <= 1'b0; pipe_shown <= 1'b0;"
            .into(),
        "        idx <= 8'd0;".into(),
        "    end else begin".into(),
        "        if (pipe_valid && pipe_ready) pipe_mid <= !pipe_last;".into(),
        "        pipe_shown <= tx_valid && !tx_ready && !sending;".into(),
        "        if (go) begin sending <= 1'b1; idx <= 8'd0; end".into(),
        "        else if (taken) begin if (last_beat) sending <= 1'b0; else idx <= idx + 8'd1; end".into(),
        "        if (sent_w) head <= nxt(head);".into(),
        "        if (commit) tail <= nxt(tail);".into(),
        "        count <= count + {2'd0, commit} - {2'd0, sent_w};".into(),
        "    end".into(),
        "end".into(),
    ]);
    v
}
