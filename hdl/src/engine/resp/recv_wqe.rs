//! `RecvWqe`: a receive WQE fetched from the RQ and its scatter list checked, the model's `resp::recv_wqe`,
//! as generated Verilog. Started with a QP's `qp_attr` (its PD and RQ ring) and an RQ counter, it asks for
//! one DMA read of the slot's first `RECV_DATA + max_sge * DATA_SEG_LEN` bytes (fewer when the slot is
//! smaller), takes the completion's 8-byte beats as they come, and checks each SGE against the MR entry its
//! local key names (`engine::mr::check` for LOCAL_WRITE; the entry is asked for on the beat that brings the
//! key and comes back the next cycle, when the SGE is checked). It ends with `done` for a cycle: `ok`, the
//! `wr_id` (0 when the read failed), and the SGEs kept (zero-length ones left out), `count` of them as
//! `qpc::recv_sge` records, the first in the low bits. They stay until the next start.
//!
//! It decides once the WQE's own SGEs are in: a WQE with one SGE of the four a slot is read for is done
//! after four beats, not ten. The rest of the read is taken and dropped while `busy` holds (`open`). A
//! failed read is flagged from its first beat (`host::dma`), so nothing after the decision can change it.
//!
//! The WQE's fields come from `wire::contract::wqe` (`RecvCtrlRepr`, `DataSegRepr`, big-endian in host
//! memory as on the wire, byte `i` of a beat at bits `8i+7:8i`).

use crate::engine::cmd::exec::{ATTR_BITS, MR_BITS};
use crate::engine::mr;
use crate::kit::*;
use crate::record::{field_range, slice, Fields};
use wire::contract::profile::Profile;
use wire::contract::qpc::{bits_for, qp_context, recv_sge};
use wire::contract::verbs::access;
use wire::contract::wqe::{DataSegRepr, RecvCtrlRepr, DATA_SEG_LEN, RECV_DATA};

/// The most SGEs the `sges` port carries (the large profile's `max_sge`).
pub const MAX_SGE: usize = 16;
/// Bits of one kept SGE (`qpc::recv_sge`).
pub const SGE_BITS: usize = 96;
/// Bits of the `sges` port.
pub const SGES_BITS: usize = MAX_SGE * SGE_BITS;

#[derive(LogicBlock, Default)]
pub struct RecvWqe {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Fetch the WQE at RQ counter `index` of the QP whose `qp_attr` is `attr` (taken while not `busy`).
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
    pub ok: Signal<Out, Bit>,
    pub wr_id: Signal<Out, Bits<64>>,
    pub count: Signal<Out, Bits<8>>,
    pub sges: Signal<Out, Bits<SGES_BITS>>,
    profile: Param<Profile>,
}

impl RecvWqe {
    pub fn new(profile: Profile) -> Self {
        assert!(profile.max_sge as usize <= MAX_SGE, "max_sge {} past the port's {MAX_SGE}", profile.max_sge);
        RecvWqe { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for RecvWqe {
    fn update(&mut self) {
        // Verified in Verilator against the model's `resp::recv_wqe` (sim/tests/recv_wqe.rs).
    }

    fn connect(&mut self) {
        self.busy.connect();
        self.rd_valid.connect();
        self.rd_addr.connect();
        self.rd_len.connect();
        self.mr_index.connect();
        self.done.connect();
        self.ok.connect();
        self.wr_id.connect();
        self.count.connect();
        self.sges.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// Field `name` of a big-endian header (`fields`) at byte `base` of the WQE, as (its beat, its value on
/// `cpl_data` then): it must lie within one 8-byte beat.
pub(crate) fn beat_field(fields: Fields, base: usize, name: &str) -> (usize, String) {
    let r = field_range(fields, name);
    let (first, last) = (base + r.start, base + r.end - 1);
    assert_eq!(first / 8, last / 8, "{name} lies within one beat");
    let lane = |j: usize| format!("cpl_data[{}:{}]", 8 * (j % 8) + 7, 8 * (j % 8));
    (first / 8, format!("{{{}}}", (first..=last).map(lane).collect::<Vec<_>>().join(", ")))
}

/// The Verilog body of `RecvWqe` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let al = qp_context(p).attr;
    let a = |n: &str| slice(&al, "attr", n);
    let n = p.max_sge as usize;
    let pd_bits = al.slice("pdn").expect("a QP has a PD").1;
    let (id_beat, id) = beat_field(RecvCtrlRepr::FIELDS, 0, "wr_id");
    let (num_beat, num) = beat_field(RecvCtrlRepr::FIELDS, 0, "num_sge");
    // The data segments: two beats each, from beat `RECV_DATA / 8`; a segment's fields by the beat within it.
    const { assert!(RECV_DATA.is_multiple_of(8) && DATA_SEG_LEN == 16, "data segments are two whole beats") };
    let first_seg = RECV_DATA / 8;
    let seg = |name: &str| beat_field(DataSegRepr::FIELDS, 0, name);
    let ((addr_beat, addr), (key_beat, key), (len_beat, len)) = (seg("addr"), seg("lkey"), seg("length"));
    assert!(addr_beat == 0 && key_beat == 1 && len_beat == 1, "a segment's address, then its key and length");
    let sl = recv_sge();
    assert_eq!(sl.width() as usize, SGE_BITS);
    let kept: Vec<String> = sl
        .fields
        .iter()
        .rev()
        .map(|f| match f.name {
            "addr" => "c_addr".to_string(),
            "length" => "c_len".into(),
            other => panic!("recv_sge has no field {other} to fill"),
        })
        .collect();
    let want = RECV_DATA + n * DATA_SEG_LEN;
    let mut v = vec![
        "localparam IDLE = 3'd0, REQ = 3'd1, DATA = 3'd2, FIN = 3'd3, DONE = 3'd4;".to_string(),
        "reg [2:0] st;".into(),
        "reg [63:0] addr_r;".into(),
        "reg [15:0] len_r;".into(),
        format!("reg [{}:0] pdn_r;", pd_bits - 1),
        "reg [16:0] slot_sges;".into(),
        "reg [15:0] beat;".into(),
        "reg [15:0] num;".into(),
        "reg err, bad;".into(),
        "// The read asked for and its last beat not yet taken.".into(),
        "reg open;".into(),
        "reg [63:0] id_r;".into(),
        "reg [63:0] c_addr;".into(),
        "reg [31:0] c_len, c_key;".into(),
        "reg c_valid;".into(),
        "reg [7:0] kept;".into(),
        format!("reg [{}:0] sge [0:{}];", SGE_BITS - 1, n - 1),
        "// The slot: the RQ counter's low bits, the ring's stride; how much of it is read, how many SGEs it holds."
            .into(),
        format!("wire [3:0] log_size = {};", a("rq_log_size")),
        format!("wire [3:0] log_stride = {};", a("rq_log_stride")),
        "wire [15:0] slot = index & ((16'd1 << log_size) - 16'd1);".into(),
        format!("wire [63:0] wqe_addr = {} + ({{48'd0, slot}} << log_stride);", a("rq_iova")),
        "wire [16:0] stride = 17'd1 << log_stride;".into(),
        format!("wire [15:0] rlen = stride < 17'd{want} ? stride[15:0] : 16'd{want};"),
        // A segment's place: the beat's count past the control segment, halved.
        format!("wire [15:0] seg_beat = beat - 16'd{first_seg};"),
        format!("wire [31:0] in_key = {key};"),
        "// The key's variant is checked a cycle later, from the SGE's copy (Verilator's `*unused*` names).".into(),
        "wire unused_variant = ^in_key[7:0];".into(),
        format!("wire too_many = num > 16'd{n} || {{1'b0, num}} > slot_sges;"),
        "// The WQE's SGE count as of this beat, and whether this beat is the last the WQE needs (its last".into(),
        "// SGE's key, or the control segment's end when it has none).".into(),
        format!("wire [15:0] num_now = beat == 16'd{num_beat} ? {num} : num;"),
        format!("wire [16:0] need = 17'd{first_seg} + {{num_now, 1'b0}};"),
        format!("wire enough = beat >= 16'd{num_beat} && {{1'b0, beat}} + 17'd1 >= need;"),
    ];
    let u = mr::Use {
        key: "c_key",
        pdn: "pdn_r",
        va: "c_addr",
        len: "c_len",
        need: &format!("4'd{}", access::LOCAL_WRITE),
    };
    v.extend(mr::check(p, "sg", "mr", &u));
    let sges: Vec<String> = (0..n).rev().map(|i| format!("sge[{i}]")).collect();
    let pad = SGES_BITS - n * SGE_BITS;
    let pad = if pad == 0 { String::new() } else { format!("{pad}'d0, ") };
    v.extend([
        "always @(*) begin".to_string(),
        "    busy = st != IDLE || open;".into(),
        "    rd_valid = st == REQ;".into(),
        "    rd_addr = addr_r;".into(),
        "    rd_len = len_r;".into(),
        "    mr_index = in_key[31:8];".into(),
        "    done = st == DONE;".into(),
        "    ok = !(err || bad || too_many);".into(),
        "    wr_id = err ? 64'd0 : id_r;".into(),
        "    count = kept;".into(),
        format!("    sges = {{{pad}{}}};", sges.join(", ")),
        "end".into(),
        "always @(posedge clock) begin".into(),
        "    // An SGE whose key arrived last cycle meets its MR entry: kept, or the WQE is bad.".into(),
        "    if (c_valid) begin".into(),
        "        c_valid <= 1'b0;".into(),
        "        if (c_len != 32'd0) begin".into(),
        format!(
            "            if (sg_ok) begin sge[kept[{}:0]] <= {{{}}}; kept <= kept + 8'd1; end",
            bits_for((n as u32 - 1).max(1)) - 1,
            kept.join(", ")
        ),
        "            else bad <= 1'b1;".into(),
        "        end".into(),
        "    end".into(),
        "    if (cpl_valid && cpl_last) open <= 1'b0;".into(),
        "    case (st)".into(),
        "    IDLE: if (start && !open) begin".into(),
        "        addr_r <= wqe_addr;".into(),
        "        len_r <= rlen;".into(),
        format!("        pdn_r <= {};", a("pdn")),
        "        slot_sges <= (stride >> 4) - 17'd1;".into(),
        "        beat <= 16'd0; num <= 16'd0; err <= 1'b0; bad <= 1'b0; kept <= 8'd0; c_valid <= 1'b0;".into(),
        "        st <= REQ;".into(),
        "    end".into(),
        "    REQ: if (rd_ready) begin st <= DATA; open <= 1'b1; end".into(),
        "    DATA: if (cpl_valid) begin".into(),
        "        err <= err | cpl_err;".into(),
        format!("        if (beat == 16'd{id_beat}) id_r <= {id};"),
        format!("        if (beat == 16'd{num_beat}) num <= {num};"),
        format!("        if (beat >= 16'd{first_seg} && !seg_beat[0]) c_addr <= {addr};"),
        format!("        if (beat >= 16'd{first_seg} && seg_beat[0]) begin"),
        format!("            c_key <= {key};"),
        format!("            c_len <= {len};"),
        "            c_valid <= {1'b0, seg_beat[15:1]} < num;".into(),
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
