//! `SendDesc`: a send WQE's descriptor read from its SQ slot again for a packet, the model's `req::read_desc`,
//! as generated Verilog. Started with a QP's `qp_attr` (its SQ ring) and an SQ counter, it asks for one DMA
//! read of the whole slot and takes the completion's 8-byte beats as they come. It ends with `done` for a
//! cycle and, when the read succeeded and the slot parses (`ok`: a known opcode; inline data that fits the
//! slot and is not on a READ or atomic; data segments that fit the slot; no limit of the profile, which the
//! fetch checked), what the packet needs: the immediate, the remote address and key, the atomic operands,
//! whether the data is inline (`inline_data`: `num` bytes at `slot_addr + SEND_DATA`) and otherwise its SGEs of nonzero
//! length (`count` of them as `qpc::recv_sge` records, the first in the low bits).
//!
//! The list holds the profile's `max_sge` SGEs, as many as the fetch lets a WQE have: a slot rewritten after
//! its fetch with more keeps the first `max_sge`, where the model would gather from them all.
//!
//! It is done once the WQE's own segments are in: control, remote and atomic, and its SGEs unless its data
//! is inline (a WQE with one SGE in a 128-byte slot: 8 beats, not 16). The rest of the read is taken and
//! dropped while `busy` holds (`open`), so a start waits for `busy` to fall; a failed read is flagged from
//! its first beat (`host::dma`).
//!
//! With `snoop` at its start it asks for no read: the beats given are another's read of the same slot (the
//! dispatch's fetch of the WQE, the model's `Decision::FetchSq` with `primed`), taken as if its own. `cut`
//! ends whatever it is doing, its read's beats still to come included (they are no longer given to it); a
//! start in the same cycle is taken.

use crate::engine::cmd::exec::ATTR_BITS;
use crate::engine::resp::recv_wqe::{beat_field, SGES_BITS, SGE_BITS};
use crate::kit::*;
use crate::record::slice;
use wire::contract::profile::Profile;
use wire::contract::qpc::{bits_for, qp_context, recv_sge};
use wire::contract::wqe::{
    send_flags, AtomicSegRepr, DataSegRepr, RemoteSegRepr, SendCtrlRepr, SendOp, ATOMIC, DATA_SEG_LEN, REMOTE,
    SEND_DATA,
};

#[derive(LogicBlock, Default)]
pub struct SendDesc {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Read the WQE at SQ counter `index` of the QP whose `qp_attr` is `attr` (taken while not `busy`).
    pub start: Signal<In, Bit>,
    /// With `start`: the slot is read by another, whose beats are given as this block's (no read asked).
    pub snoop: Signal<In, Bit>,
    /// Ends what it does, a read's beats to come included (those are not given to it any more).
    pub cut: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub index: Signal<In, Bits<16>>,
    pub busy: Signal<Out, Bit>,
    /// The DMA read request, held until taken.
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    /// Its completion's beats, in order; a failed read flags them all (`host::dma`).
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<64>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    pub done: Signal<Out, Bit>,
    pub ok: Signal<Out, Bit>,
    pub imm: Signal<Out, Bits<32>>,
    pub va: Signal<Out, Bits<64>>,
    pub rkey: Signal<Out, Bits<32>>,
    pub swap_add: Signal<Out, Bits<64>>,
    pub compare: Signal<Out, Bits<64>>,
    pub inline_data: Signal<Out, Bit>,
    pub num: Signal<Out, Bits<16>>,
    pub slot_addr: Signal<Out, Bits<64>>,
    pub count: Signal<Out, Bits<8>>,
    pub sges: Signal<Out, Bits<SGES_BITS>>,
    profile: Param<Profile>,
}

impl SendDesc {
    pub fn new(profile: Profile) -> Self {
        SendDesc { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for SendDesc {
    fn update(&mut self) {
        // Verified in Verilator against the model's `req::read_desc` (sim/tests/send_desc.rs).
    }

    fn connect(&mut self) {
        self.rd_valid.connect();
        self.rd_addr.connect();
        self.rd_len.connect();
        self.busy.connect();
        self.done.connect();
        self.ok.connect();
        self.imm.connect();
        self.va.connect();
        self.rkey.connect();
        self.swap_add.connect();
        self.compare.connect();
        self.inline_data.connect();
        self.num.connect();
        self.slot_addr.connect();
        self.count.connect();
        self.sges.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `SendDesc` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let al = qp_context(p).attr;
    let a = |n: &str| slice(&al, "attr", n);
    let n = p.max_sge as usize;
    let ctrl = |name: &str| beat_field(SendCtrlRepr::FIELDS, 0, name);
    let ((op_beat, op), (fl_beat, fl), (num_beat, num)) = (ctrl("opcode"), ctrl("flags"), ctrl("len"));
    let (imm_beat, imm) = ctrl("imm");
    assert!(op_beat == 0 && fl_beat == 0 && num_beat == 0, "the control segment's first beat holds them");
    let ((va_beat, va), (rkey_beat, rkey)) =
        (beat_field(RemoteSegRepr::FIELDS, REMOTE, "va"), beat_field(RemoteSegRepr::FIELDS, REMOTE, "rkey"));
    let ((swap_beat, swap), (cmp_beat, cmp)) =
        (beat_field(AtomicSegRepr::FIELDS, ATOMIC, "swap_add"), beat_field(AtomicSegRepr::FIELDS, ATOMIC, "compare"));
    const { assert!(SEND_DATA.is_multiple_of(8) && DATA_SEG_LEN == 16, "data segments are two whole beats") };
    let first_seg = SEND_DATA / 8;
    let seg = |name: &str| beat_field(DataSegRepr::FIELDS, 0, name);
    let ((addr_beat, addr), (key_beat, _), (len_beat, len)) = (seg("addr"), seg("lkey"), seg("length"));
    assert!(addr_beat == 0 && key_beat == 1 && len_beat == 1, "a segment's address, then its key and length");
    let sl = recv_sge();
    assert_eq!(sl.width() as usize, SGE_BITS);
    let kept: Vec<String> = sl
        .fields
        .iter()
        .rev()
        .map(|f| match f.name {
            "addr" => "c_addr".to_string(),
            "length" => len.clone(),
            other => panic!("recv_sge has no field {other} to fill"),
        })
        .collect();
    let known: Vec<String> =
        (0..=255u8).filter_map(SendOp::from_u8).map(|o| format!("opc == 8'd{}", o as u8)).collect();
    let code = |o: SendOp| format!("opc == 8'd{}", o as u8);
    let sges: Vec<String> = (0..n).rev().map(|i| format!("sge[{i}]")).collect();
    let pad = SGES_BITS - n * SGE_BITS;
    let pad = if pad == 0 { String::new() } else { format!("{pad}'d0, ") };
    let kb = bits_for((n as u32 - 1).max(1));
    vec![
        "localparam IDLE = 2'd0, REQ = 2'd1, DATA = 2'd2, DONE = 2'd3;".to_string(),
        "reg [1:0] st;".into(),
        "reg [63:0] addr_r;".into(),
        "reg [15:0] len_r;".into(),
        "reg [15:0] beat, num_r;".into(),
        "reg [7:0] opc, flg;".into(),
        "reg [31:0] imm_r, rkey_r;".into(),
        "reg [63:0] va_r, swap_r, cmp_r, c_addr;".into(),
        "reg err;".into(),
        "// The read asked for and its last beat not yet taken.".into(),
        "reg open;".into(),
        "reg [7:0] kept;".into(),
        format!("reg [{}:0] sge [0:{}];", SGE_BITS - 1, n - 1),
        "// The slot: the SQ counter's low bits, the ring's stride (the whole slot is read).".into(),
        format!("wire [3:0] log_size = {};", a("sq_log_size")),
        format!("wire [3:0] log_stride = {};", a("sq_log_stride")),
        "wire [15:0] slot = index & ((16'd1 << log_size) - 16'd1);".into(),
        format!("wire [63:0] wqe_addr = {} + ({{48'd0, slot}} << log_stride);", a("sq_iova")),
        format!("wire [16:0] room = {{1'b0, len_r}} - 17'd{SEND_DATA};"),
        format!("wire [15:0] seg_beat = beat - 16'd{first_seg};"),
        format!("wire op_known = {};", known.join(" || ")),
        format!(
            "wire rd_or_atomic = {} || {} || {};",
            code(SendOp::RdmaRead),
            code(SendOp::AtomicCmpSwp),
            code(SendOp::AtomicFetchAdd)
        ),
        format!("wire is_inline = (flg & 8'd{}) != 8'd0;", send_flags::INLINE),
        "wire fits = is_inline ? {1'b0, num_r} <= room && !rd_or_atomic : {1'b0, num_r, 4'd0} <= {4'd0, room};"
            .into(),
        format!("wire [31:0] seg_len = {len};"),
        "wire unused_attr = ^attr;".into(),
        "// Whether this beat is the last the packet needs: the atomic segment's last, or its SGEs' last key.".into(),
        format!("wire [16:0] need = 17'd{first_seg} + (is_inline ? 17'd0 : {{num_r, 1'b0}});"),
        "wire enough = beat != 16'd0 && {1'b0, beat} + 17'd1 >= need;".into(),
        "always @(*) begin".into(),
        "    rd_valid = st == REQ;".into(),
        "    rd_addr = addr_r;".into(),
        "    rd_len = len_r;".into(),
        "    busy = st != IDLE || open;".into(),
        "    done = st == DONE;".into(),
        "    ok = !err && op_known && fits;".into(),
        "    imm = imm_r;\n    va = va_r;\n    rkey = rkey_r;\n    swap_add = swap_r;\n    compare = cmp_r;".into(),
        "    inline_data = is_inline;\n    num = num_r;\n    slot_addr = addr_r;".into(),
        "    count = kept;".into(),
        format!("    sges = {{{pad}{}}};", sges.join(", ")),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    if (cpl_valid && cpl_last) open <= 1'b0;".into(),
        "    if (cut) begin st <= IDLE; open <= 1'b0; end".into(),
        "    if (start && (st == IDLE || cut)) begin".into(),
        "        addr_r <= wqe_addr;".into(),
        "        len_r <= 16'd1 << log_stride;".into(),
        "        beat <= 16'd0; num_r <= 16'd0; opc <= 8'd0; flg <= 8'd0; err <= 1'b0;".into(),
        "        kept <= 8'd0;".into(),
        "        // Another's read: its beats are this block's from now (none has come yet).".into(),
        "        st <= snoop ? DATA : REQ;".into(),
        "        open <= snoop;".into(),
        "    end else if (!cut) case (st)".into(),
        "    IDLE: ;".into(),
        "    REQ: if (rd_ready) begin st <= DATA; open <= 1'b1; end".into(),
        "    DATA: if (cpl_valid) begin".into(),
        "        err <= err | cpl_err;".into(),
        format!("        if (beat == 16'd0) begin opc <= {op}; flg <= {fl}; num_r <= {num}; end"),
        format!("        if (beat == 16'd{imm_beat}) imm_r <= {imm};"),
        format!("        if (beat == 16'd{va_beat}) va_r <= {va};"),
        format!("        if (beat == 16'd{rkey_beat}) rkey_r <= {rkey};"),
        format!("        if (beat == 16'd{swap_beat}) swap_r <= {swap};"),
        format!("        if (beat == 16'd{cmp_beat}) cmp_r <= {cmp};"),
        format!("        if (beat >= 16'd{first_seg} && !seg_beat[0]) c_addr <= {addr};"),
        "        // A segment within the count, not inline, of nonzero length: kept while there is room.".into(),
        format!(
            "        if (beat >= 16'd{first_seg} && seg_beat[0] && !is_inline && {{1'b0, seg_beat[15:1]}} < num_r && seg_len != 32'd0) begin"
        ),
        format!(
            "            if (kept < 8'd{n}) begin sge[kept[{}:0]] <= {{{}}}; kept <= kept + 8'd1; end",
            kb - 1,
            kept.join(", ")
        ),
        "        end".into(),
        "        beat <= beat + 16'd1;".into(),
        "        if (cpl_last || enough) st <= DONE;".into(),
        "    end".into(),
        "    default: st <= IDLE;".into(),
        "    endcase".into(),
        "    if (reset) begin st <= IDLE; open <= 1'b0; end".into(),
        "end".into(),
    ]
}
