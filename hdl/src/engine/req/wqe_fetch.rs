//! `WqeFetch`: a send WQE brought from the SQ into the requester's window, the model's `req::decode_send_wqe`
//! (what `fetch_send_wqe` keeps), as generated Verilog. Started with a QP's `qp_attr` (its PD and SQ ring)
//! and an SQ counter, it asks for one DMA read of the whole slot, takes the completion's 8-byte beats as
//! they come, and checks each SGE with a length against the MR entry its local key names (`engine::mr::check`,
//! LOCAL_WRITE for a READ or an atomic, whose answer lands there; the entry is asked for on the beat that
//! brings the key and comes back the next cycle, when the SGE is checked). It ends with `done` for a cycle
//! and the window entry (`sq_wqe`): the operation (SEND for an unknown one), the flags the NIC acts on, the
//! message's length, and for a WQE that fails the status it completes with, in the model's order: the read
//! failed or the opcode is unknown (LocQpOpErr); inline data longer than the slot, than `max_inline`, or on
//! a READ or atomic, or more SGEs than the slot or `max_sge` holds (LocLenErr); an SGE its MR refuses
//! (LocProtErr); more than 2^31 bytes, or an atomic's data not 8 (LocLenErr); and the WQE's `wr_id` (0 when
//! the read failed), which its CQE carries. It stays until the next start.
//!
//! It decides once the WQE's own fields are in: its control segment and, unless its data is inline, its
//! SGEs (a WQE with one SGE in a 128-byte slot: 8 beats, not 16). The rest of the read is taken and dropped
//! while `busy` holds (`open`); a failed read is flagged from its first beat (`host::dma`).
//!
//! The WQE's fields come from `wire::contract::wqe` (`SendCtrlRepr`, `DataSegRepr`, big-endian in host
//! memory as on the wire, byte `i` of a beat at bits `8i+7:8i`).

use super::ready::WQE_BITS;
use crate::engine::cmd::exec::{ATTR_BITS, MR_BITS};
use crate::engine::mr;
use crate::engine::resp::recv_wqe::beat_field;
use crate::kit::*;
use crate::record::{build, slice};
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::contract::verbs::{access, WcStatus, MAX_MSG_LEN};
use wire::contract::wqe::{send_flags, DataSegRepr, SendCtrlRepr, SendOp, ATOMIC_LEN, DATA_SEG_LEN, SEND_DATA};

#[derive(LogicBlock, Default)]
pub struct WqeFetch {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Fetch the WQE at SQ counter `index` of the QP whose `qp_attr` is `attr` (taken while not `busy`).
    pub start: Signal<In, Bit>,
    pub attr: Signal<In, Bits<ATTR_BITS>>,
    pub index: Signal<In, Bits<16>>,
    pub busy: Signal<Out, Bit>,
    /// The DMA read request, held until taken.
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    /// Its completion's beats, in order; `cpl_err` on any beat fails the read.
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<64>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// The MR table's read port: the entry at `mr_index` comes back on `mr` the next cycle.
    pub mr_index: Signal<Out, Bits<24>>,
    pub mr: Signal<In, Bits<MR_BITS>>,
    pub done: Signal<Out, Bit>,
    /// The window entry (`qpc::sq_wqe`, zero-extended).
    pub entry: Signal<Out, Bits<WQE_BITS>>,
    profile: Param<Profile>,
}

impl WqeFetch {
    pub fn new(profile: Profile) -> Self {
        WqeFetch { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for WqeFetch {
    fn update(&mut self) {
        // Verified in Verilator against the model's `req::decode_send_wqe` (sim/tests/wqe_fetch.rs).
    }

    fn connect(&mut self) {
        self.busy.connect();
        self.rd_valid.connect();
        self.rd_addr.connect();
        self.rd_len.connect();
        self.mr_index.connect();
        self.done.connect();
        self.entry.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `WqeFetch` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, wl) = (&c.attr, &c.wqe);
    let a = |n: &str| slice(al, "attr", n);
    let pd_bits = al.slice("pdn").expect("a QP has a PD").1;
    let ctrl = |name: &str| beat_field(SendCtrlRepr::FIELDS, 0, name);
    let ((op_beat, op), (fl_beat, fl), (num_beat, num)) = (ctrl("opcode"), ctrl("flags"), ctrl("len"));
    let (id_beat, id) = ctrl("wr_id");
    assert!(id_beat >= 1, "the control segment's first beat registered before the WQE can be decided");
    assert!(op_beat == 0 && fl_beat == 0 && num_beat == 0, "the control segment's first beat holds them");
    const { assert!(SEND_DATA.is_multiple_of(8) && DATA_SEG_LEN == 16, "data segments are two whole beats") };
    let first_seg = SEND_DATA / 8;
    let seg = |name: &str| beat_field(DataSegRepr::FIELDS, 0, name);
    let ((addr_beat, addr), (key_beat, key), (len_beat, len)) = (seg("addr"), seg("lkey"), seg("length"));
    assert!(addr_beat == 0 && key_beat == 1 && len_beat == 1, "a segment's address, then its key and length");
    let acts = send_flags::FENCE | send_flags::SIGNALED | send_flags::SOLICITED | send_flags::INLINE;
    assert_eq!(acts, 0xF, "the flags the NIC acts on are the window entry's four bits");
    let known: Vec<String> =
        (0..=255u8).filter_map(SendOp::from_u8).map(|o| format!("opc == 8'd{}", o as u8)).collect();
    let code = |o: SendOp| format!("opc == 8'd{}", o as u8);
    let status = |s: WcStatus| format!("5'd{}", s as u8);
    let mut v = vec![
        "localparam IDLE = 3'd0, REQ = 3'd1, DATA = 3'd2, FIN = 3'd3, DONE = 3'd4;".to_string(),
        "reg [2:0] st;".into(),
        "reg [63:0] addr_r;".into(),
        "reg [15:0] len_r;".into(),
        format!("reg [{}:0] pdn_r;", pd_bits - 1),
        "reg [15:0] beat;".into(),
        "reg [7:0] opc, flg;".into(),
        "reg [15:0] num;".into(),
        "reg [63:0] id_r;".into(),
        "reg err, bad;".into(),
        "// The read asked for and its last beat not yet taken.".into(),
        "reg open;".into(),
        "reg [36:0] total;".into(),
        "reg [63:0] c_addr;".into(),
        "reg [31:0] c_len, c_key;".into(),
        "reg c_valid;".into(),
        "// The slot: the SQ counter's low bits, the ring's stride (the whole slot is read).".into(),
        format!("wire [3:0] log_size = {};", a("sq_log_size")),
        format!("wire [3:0] log_stride = {};", a("sq_log_stride")),
        "wire [15:0] slot = index & ((16'd1 << log_size) - 16'd1);".into(),
        format!("wire [63:0] wqe_addr = {} + ({{48'd0, slot}} << log_stride);", a("sq_iova")),
        "wire [15:0] stride = 16'd1 << log_stride;".into(),
        format!("wire [16:0] room = {{1'b0, len_r}} - 17'd{SEND_DATA};"),
        format!("wire [15:0] seg_beat = beat - 16'd{first_seg};"),
        format!("wire [31:0] in_key = {key};"),
        "// The key's variant is checked a cycle later, from the SGE's copy (Verilator's `*unused*` names).".into(),
        "wire unused_variant = ^in_key[7:0];".into(),
        format!("wire op_known = {};", known.join(" || ")),
        format!("wire is_atomic = {} || {};", code(SendOp::AtomicCmpSwp), code(SendOp::AtomicFetchAdd)),
        format!("wire rd_or_atomic = {} || is_atomic;", code(SendOp::RdmaRead)),
        format!("wire inline_data = (flg & 8'd{}) != 8'd0;", send_flags::INLINE),
        format!(
            "wire inline_bad = {{1'b0, num}} > room || num > 16'd{} || rd_or_atomic;",
            p.max_inline.min(u32::from(u16::MAX))
        ),
        format!("wire count_bad = {{1'b0, num, 4'd0}} > {{4'd0, room}} || num > 16'd{};", p.max_sge),
        format!(
            "wire len_bad = total > 37'd{MAX_MSG_LEN} || (is_atomic && total != 37'd{ATOMIC_LEN});"
        ),
        format!(
            "wire [4:0] fail = (err || !op_known) ? {qp_op} : inline_data ? (inline_bad ? {len} : 5'd0) : count_bad ? {len} : bad ? {prot} : len_bad ? {len} : 5'd0;",
            qp_op = status(WcStatus::LocQpOpErr),
            len = status(WcStatus::LocLenErr),
            prot = status(WcStatus::LocProtErr)
        ),
        "wire failed = fail != 5'd0;".into(),
        "wire unused_total = ^total[36:32];".into(),
        "// Whether this beat is the last the WQE needs: its SGEs' last key, or the control segment's last".into(),
        "// beat when its data is inline or it has no SGE.".into(),
        format!("wire [16:0] need = inline_data ? 17'd{} : 17'd{first_seg} + {{num, 1'b0}};", id_beat + 1),
        format!("wire enough = beat >= 16'd{id_beat} && {{1'b0, beat}} + 17'd1 >= need;"),
    ];
    assert_eq!(WcStatus::Success as u8, 0, "status 0 is success");
    let u = mr::Use {
        key: "c_key",
        pdn: "pdn_r",
        va: "c_addr",
        len: "c_len",
        need: &format!("(rd_or_atomic ? 4'd{} : 4'd0)", access::LOCAL_WRITE),
    };
    v.extend(mr::check(p, "sg", "mr", &u));
    let (d, e) = build(wl, "0", "en", |name, _| {
        Some(match name {
            "op" => "err ? 4'd0 : op_known ? opc[3:0] : 4'd".to_string() + &(SendOp::Send as u8).to_string(),
            "flags" => "err ? 4'd0 : flg[3:0]".into(),
            "len" => "failed ? 32'd0 : inline_data ? {16'd0, num} : total[31:0]".into(),
            "started" | "vendor_err" => "0".into(),
            "acked" | "error_valid" => "failed".into(),
            "status" => "fail".into(),
            "wr_id" => "err ? 64'd0 : id_r".into(),
            other => panic!("sq_wqe has no field {other} to fill"),
        })
    });
    v.extend(d);
    v.extend([
        "always @(*) begin".to_string(),
        "    busy = st != IDLE || open;".into(),
        "    rd_valid = st == REQ;".into(),
        "    rd_addr = addr_r;".into(),
        "    rd_len = len_r;".into(),
        "    mr_index = in_key[31:8];".into(),
        "    done = st == DONE;".into(),
        format!("    entry = {{{}'d0, {e}}};", WQE_BITS - wl.width() as usize),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    // An SGE whose key arrived last cycle meets its MR entry (one of no length is not checked).".into(),
        "    if (c_valid) begin".into(),
        "        c_valid <= 1'b0;".into(),
        "        total <= total + {5'd0, c_len};".into(),
        "        if (c_len != 32'd0 && !sg_ok) bad <= 1'b1;".into(),
        "    end".into(),
        "    if (cpl_valid && cpl_last) open <= 1'b0;".into(),
        "    case (st)".into(),
        "    IDLE: if (start) begin".into(),
        "        addr_r <= wqe_addr;".into(),
        "        len_r <= stride;".into(),
        format!("        pdn_r <= {};", a("pdn")),
        "        beat <= 16'd0; opc <= 8'd0; flg <= 8'd0; num <= 16'd0; err <= 1'b0; bad <= 1'b0;".into(),
        "        total <= 37'd0; c_valid <= 1'b0;".into(),
        "        st <= REQ;".into(),
        "    end".into(),
        "    REQ: if (rd_ready) begin st <= DATA; open <= 1'b1; end".into(),
        "    DATA: if (cpl_valid) begin".into(),
        "        err <= err | cpl_err;".into(),
        format!("        if (beat == 16'd0) begin opc <= {op}; flg <= {fl}; num <= {num}; end"),
        format!("        if (beat == 16'd{id_beat}) id_r <= {id};"),
        format!("        if (beat >= 16'd{first_seg} && !seg_beat[0]) c_addr <= {addr};"),
        format!("        if (beat >= 16'd{first_seg} && seg_beat[0]) begin"),
        format!("            c_key <= {key};"),
        format!("            c_len <= {len};"),
        "            c_valid <= !inline_data && {1'b0, seg_beat[15:1]} < num;".into(),
        "        end".into(),
        "        beat <= beat + 16'd1;".into(),
        "        if (cpl_last || enough) st <= FIN;".into(),
        "    end".into(),
        "    FIN: st <= DONE;".into(),
        "    default: st <= IDLE;".into(),
        "    endcase".into(),
        "    if (reset) begin st <= IDLE; c_valid <= 1'b0; open <= 1'b0; end".into(),
        "end".into(),
    ]);
    v
}
