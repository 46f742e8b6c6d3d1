//! `CmdExec`: what the model's `exec_command` does once the mailbox is in, as generated Verilog. It holds
//! the tables the commands own (PDs, MRs, CQs, the EQ, the GID table, the port's MAC, the QPs' valid bits
//! and their `qp_attr`, `qp_req` and `qp_resp` context RAMs), runs each command's checks in the model's
//! order to the same status and syndrome, and applies a command that passed on `commit`.
//!
//! Everything comes from `wire`: the mailbox fields from the command Reprs' `FIELDS`, the records from
//! `wire::contract::qpc`, the modify-QP rules from `verbs::rc_transition` and `raw_packet_transition`, the
//! limits from the profile. Table logic of this kind (field lists, a 98-entry rule table, priority encoders
//! over the valid bits) is what `#[hdl_gen]` cannot write; the sequencing around it is `CmdUnit`'s.
//!
//! Doorbells write their fields straight into tables of their own (the QPs' SQ and RQ producer counters,
//! the CQs' consumer counters and arming; the EQ's in its register), in the cycle the register file takes
//! them, so a doorbell is never a read-modify-write and never waits: the records `qp_attr` and `cq` are read
//! back with those fields taken from there. The consumer counters the engines move (the RQ's by the
//! responder, the SQ's by the flush) have tables of their own too, read back the same way. A QP doorbell
//! counts when the QP exists and is not in RESET, a CQ's when the CQ exists. A command that frees those
//! fields (RESET, DESTROY) clears them in a later cycle free of doorbells and engine writes (none can reach
//! them meanwhile), and the next command's lookup waits for it; after a reset every entry is cleared once
//! before the first.
//!
//! Every table is shaped for block RAM: one write port (the commands' writes and the engines' never meet in
//! a cycle) and registered read ports. A fatal NAK's move to ERR, which used to write two fields of
//! `qp_attr` and five of `qp_req`, is a one-bit mark per QP read with the records and folded in by the QP's
//! next command; the CQs' arming, written by a doorbell and by the responder in one cycle, stays in
//! registers (two bits a CQ).
//!
//! Timing: `lookup` registers the table entries the command names (RAM reads), and the checks settle
//! combinationally on them; `latch` keeps the status and the output for the write-back; `commit`, in the
//! cycle the command completes, writes the tables if the status is OK. Nothing changes the tables in
//! between, and the command's effect and its completion are one clock edge: whatever reads the tables never
//! sees a command half done. DEALLOC_PD and DESTROY_CQ's "still in use" reads
//! every QP and MR entry through the lookup port before the lookup, as the model looks, rather than keeping
//! counts (their multiplexers were most of the unit's LUTs).

use crate::bit_table::{self, Port};
use crate::engine::comp::timer::{self, TIMER_LANES};
use crate::engine::flush::{ring_left, ERR_CLEARS_REQ, ERR_CLEARS_RESP};
use crate::engine::req::ready::WQE_BITS;
use crate::kit::*;
use crate::record::{be_get, be_put, build, slice, width, Fields};
use wire::contract::cmd::*;
use wire::contract::profile::Profile;
use wire::contract::qpc::{bits_for, cq_entry, mr_entry, qp_context, MR_LEN_BITS, NEAR_TICK_BITS, TICK_BITS};
use wire::contract::verbs::{
    access, attr, raw_packet_transition, rc_transition, QpState, QpType, MAX_MTU_ENUM, PKEY_TABLE_LEN,
};
use wire::contract::wqe::{MAX_LOG_STRIDE, MIN_RQ_LOG_STRIDE, MIN_SQ_LOG_STRIDE};

/// Port widths of the context read ports: each record zero-extended to these (checked when generated).
pub const ATTR_BITS: usize = 640;
pub const REQ_BITS: usize = 256;
pub const RESP_BITS: usize = 384;
pub const MR_BITS: usize = 192;
pub const CQ_BITS: usize = 160;

/// Valid bits the free-slot scan looks at per cycle.
const SCAN_WORD: u32 = 16;

/// Mailbox bytes the unit takes in: the header and the input (`cmd::OUT_HDR`).
pub const MB_BYTES: usize = OUT_HDR;
/// Bytes it writes back, from `OUT_HDR` to the end of the mailbox: the output header and the output.
pub const TAIL_BYTES: usize = MAILBOX_LEN - OUT_HDR;

#[derive(LogicBlock, Default)]
pub struct CmdExec {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// The mailbox, 8 bytes a beat in address order.
    pub beat_valid: Signal<In, Bit>,
    pub beat_data: Signal<In, Bits<64>>,
    /// The mailbox is in (its last beat that counts has arrived): the free-slot scan starts.
    pub scan_start: Signal<In, Bit>,
    pub lookup: Signal<In, Bit>,
    pub latch: Signal<In, Bit>,
    pub commit: Signal<In, Bit>,
    /// Beat `out_index` of what goes back to the mailbox at `OUT_HDR` (kept at `latch`).
    pub out_index: Signal<In, Bits<4>>,
    pub out_beat: Signal<Out, Bits<64>>,
    pub status: Signal<Out, Bits<8>>,
    /// A doorbell (a register write at or past `doorbell::QP_DB_BASE`), in the cycle the register file takes
    /// it: QP producer counters, CQ consumer counters and arming, the EQ's.
    pub db_valid: Signal<In, Bit>,
    pub db_addr: Signal<In, Bits<{ crate::host::mmio::ADDR_BITS }>>,
    pub db_val: Signal<In, Bits<32>>,
    /// No table clear is pending: a command may read the tables.
    pub quiet: Signal<Out, Bit>,
    /// The QP named in the mailbox has a started WQE outstanding (QUERY_QP's `sq_draining` in SQD): the
    /// requester's to say.
    pub win_qpn: Signal<Out, Bits<24>>,
    pub win_slot: Signal<Out, Bits<8>>,
    pub win_entry: Signal<In, Bits<WQE_BITS>>,
    /// The testbench's read port, one cycle: a QP's valid bit and context records, and below an MR entry. The
    /// records come through the command unit's lookup port, so between commands only (during one they
    /// hold what the command looked up).
    pub qp_index: Signal<In, Bits<16>>,
    pub qp_valid: Signal<Out, Bit>,
    pub qp_attr: Signal<Out, Bits<ATTR_BITS>>,
    pub qp_req: Signal<Out, Bits<REQ_BITS>>,
    pub qp_resp: Signal<Out, Bits<RESP_BITS>>,
    /// An MR table entry by index (key >> 8), a CQ table entry (a read port of its own), the EQ (`cq_entry`
    /// layouts).
    pub mr_index: Signal<In, Bits<24>>,
    pub mr: Signal<Out, Bits<MR_BITS>>,
    pub cq_index: Signal<In, Bits<16>>,
    pub cq: Signal<Out, Bits<CQ_BITS>>,
    pub eq: Signal<Out, Bits<CQ_BITS>>,
    /// A GID table entry and the port's MAC, for the TX header builder.
    pub gid_index: Signal<In, Bits<4>>,
    pub gid: Signal<Out, Bits<128>>,
    pub gid_valid: Signal<Out, Bit>,
    pub mac: Signal<Out, Bits<48>>,
    /// Whether a valid GID table entry is `own_ip` as an IPv4-mapped GID (`wire::ipv6::gid_to_ipv4`): the
    /// NIC's own IPv4 addresses, for ARP and ICMP echo (`engine::raw`).
    pub own_ip: Signal<In, Bits<32>>,
    pub own: Signal<Out, Bit>,
    /// The responder's ports (`engine::dispatch`): a QP's valid bit and its `qp_attr` and `qp_resp` records
    /// and an MR entry, one cycle after their index (an index past a table reads as no entry); a GID entry
    /// at once; and the write of a QP's next `qp_resp` record.
    pub rs_qp_index: Signal<In, Bits<24>>,
    pub rs_qp_valid: Signal<Out, Bit>,
    pub rs_attr: Signal<Out, Bits<ATTR_BITS>>,
    pub rs_resp: Signal<Out, Bits<RESP_BITS>>,
    pub rs_mr_index: Signal<In, Bits<24>>,
    pub rs_mr: Signal<Out, Bits<MR_BITS>>,
    pub rs_gid_index: Signal<In, Bits<4>>,
    pub rs_gid: Signal<Out, Bits<128>>,
    pub rs_gid_valid: Signal<Out, Bit>,
    pub rs_resp_we: Signal<In, Bit>,
    pub rs_resp_qpn: Signal<In, Bits<24>>,
    pub rs_resp_next: Signal<In, Bits<RESP_BITS>>,
    /// The responder's write of QP `rs_resp_qpn`'s RQ consumer counter (a table of its own, as the
    /// producer counters are the doorbells').
    pub rs_rq_ci_we: Signal<In, Bit>,
    pub rs_rq_ci: Signal<In, Bits<16>>,
    /// The same for its SQ consumer counter (the flush moves it).
    pub rs_sq_ci_we: Signal<In, Bit>,
    pub rs_sq_ci: Signal<In, Bits<16>>,
    /// The responder's CQ port: a CQ's entry (its consumer counter and arming from the doorbells' tables)
    /// one cycle after its index, and the write of its next entry after a post (`rs_cq_disarm`: the post
    /// spent the arming; a doorbell arming the CQ in the same cycle wins, as it came after).
    pub rs_cq_index: Signal<In, Bits<16>>,
    pub rs_cq: Signal<Out, Bits<CQ_BITS>>,
    pub rs_cq_we: Signal<In, Bit>,
    pub rs_cq_n: Signal<In, Bits<16>>,
    pub rs_cq_next: Signal<In, Bits<CQ_BITS>>,
    pub rs_cq_disarm: Signal<In, Bit>,
    /// The responder's EQ post: the EQ's producer counter after it, and whether it spent the arming (a
    /// doorbell in the same cycle wins, as it came after).
    pub ev_eq_we: Signal<In, Bit>,
    pub ev_eq_pi: Signal<In, Bits<32>>,
    pub ev_eq_disarm: Signal<In, Bit>,
    /// A fatal NAK left: QP `rs_resp_qpn` enters ERR (the model's `enter_err`: flushing, timers stopped).
    pub rs_err_we: Signal<In, Bit>,
    /// A MODIFY_QP moving a QP to ERR is applied this cycle (its flush starts).
    pub entered_err: Signal<Out, Bit>,
    /// The raw packet QP that takes received frames, the model's `raw_receiver`: the lowest-numbered raw
    /// QP able to receive (RTR, RTS or SQD, not flushing); `raw_any` says there is one.
    pub raw_any: Signal<Out, Bit>,
    pub raw_qpn: Signal<Out, Bits<24>>,
    /// The requester's side of the engines' port: QP `rs_qp_index`'s `qp_req` record (with `rs_attr`), and
    /// the write of QP `rs_resp_qpn`'s next one.
    pub rs_req: Signal<Out, Bits<REQ_BITS>>,
    pub rs_req_we: Signal<In, Bit>,
    pub rs_req_next: Signal<In, Bits<REQ_BITS>>,
    /// The timers' port (`TimerScan`): the ACK timers and RNR waits of row `tm_index`'s QPs (`qp_req`'s
    /// fields, kept in a table of their own, in `timer::lanes` banks, that every write of the record writes
    /// too), one cycle after the index, a lane a QP, and whether each QP has timers at all (it exists and is
    /// not in ERR, whose timers are stopped).
    pub tm_index: Signal<In, Bits<24>>,
    pub tm_live: Signal<Out, Bits<TIMER_LANES>>,
    pub tm_ack: Signal<Out, Bits<TIMER_LANES>>,
    pub tm_ack_at: Signal<Out, Bits<{ TIMER_LANES * TICK_BITS as usize }>>,
    pub tm_rnr: Signal<Out, Bits<TIMER_LANES>>,
    pub tm_rnr_at: Signal<Out, Bits<{ TIMER_LANES * NEAR_TICK_BITS as usize }>>,
    /// An SQ doorbell of QP `sq_rung_qpn` taken this cycle; a command writing QP `qp_cmd_qpn`'s records
    /// (CREATE_QP, MODIFY_QP) applied this cycle: what may give the fetch unit a WQE to fetch.
    pub sq_rung: Signal<Out, Bit>,
    pub sq_rung_qpn: Signal<Out, Bits<24>>,
    pub qp_cmd: Signal<Out, Bit>,
    pub qp_cmd_qpn: Signal<Out, Bits<24>>,
    /// A QP's SQ or RQ doorbell taken this cycle (a WQE posted to a QP in ERR is the flush's).
    pub wqe_posted: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl CmdExec {
    pub fn new(profile: Profile) -> Self {
        CmdExec { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for CmdExec {
    fn update(&mut self) {
        // Verified in Verilator against the model (sim/tests/core_cmd.rs).
    }

    fn connect(&mut self) {
        self.win_qpn.connect();
        self.win_slot.connect();
        self.out_beat.connect();
        self.status.connect();
        self.quiet.connect();
        self.entered_err.connect();
        self.raw_any.connect();
        self.raw_qpn.connect();
        self.rs_req.connect();
        self.tm_live.connect();
        self.tm_ack.connect();
        self.tm_ack_at.connect();
        self.tm_rnr.connect();
        self.tm_rnr_at.connect();
        self.sq_rung.connect();
        self.sq_rung_qpn.connect();
        self.qp_cmd.connect();
        self.qp_cmd_qpn.connect();
        self.wqe_posted.connect();
        self.qp_valid.connect();
        self.qp_attr.connect();
        self.qp_req.connect();
        self.qp_resp.connect();
        self.mr.connect();
        self.cq.connect();
        self.eq.connect();
        self.gid.connect();
        self.gid_valid.connect();
        self.mac.connect();
        self.own.connect();
        self.rs_qp_valid.connect();
        self.rs_attr.connect();
        self.rs_resp.connect();
        self.rs_mr.connect();
        self.rs_gid.connect();
        self.rs_gid_valid.connect();
        self.rs_cq.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The mailbox input headers, each with the prefix of its decoded wires (`i_<prefix>_<field>`).
const INPUTS: [(&str, Fields); 7] = [
    ("port", SetPortRepr::FIELDS),
    ("gid", SetGidRepr::FIELDS),
    ("obj", ObjInRepr::FIELDS),
    ("mr", RegMrRepr::FIELDS),
    ("cq", CreateCqRepr::FIELDS),
    ("cqp", CreateQpRepr::FIELDS),
    ("qpa", QpAttrsRepr::FIELDS),
];

/// The status codes as Verilog literals.
fn s(st: Status) -> String {
    format!("8'd{}", st as u8)
}

/// The bit of `attr` mask `bit` in the decoded MODIFY_QP mask.
fn m(bit: u32) -> String {
    format!("i_qpa_attr_mask[{}]", bit.trailing_zeros())
}

/// The `qp_attr` fields MODIFY_QP sets, each with the mask bit that sets it and its new value; a move to
/// RESET clears them all (the model's `Attrs::default()`).
fn modify_attrs() -> Vec<(&'static str, u32, &'static str)> {
    vec![
        ("access", attr::ACCESS_FLAGS, "i_qpa_qp_access_flags"),
        ("pmtu", attr::PATH_MTU, "i_qpa_path_mtu"),
        ("timeout", attr::TIMEOUT, "i_qpa_timeout"),
        ("retry_cnt", attr::RETRY_CNT, "i_qpa_retry_cnt"),
        ("rnr_retry", attr::RNR_RETRY, "i_qpa_rnr_retry"),
        ("min_rnr_timer", attr::MIN_RNR_TIMER, "i_qpa_min_rnr_timer"),
        ("max_rd_atomic", attr::MAX_QP_RD_ATOMIC, "i_qpa_max_rd_atomic"),
        ("max_dest_rd_atomic", attr::MAX_DEST_RD_ATOMIC, "i_qpa_max_dest_rd_atomic"),
        ("sgid_index", attr::AV, "i_qpa_sgid_index"),
        ("hop_limit", attr::AV, "i_qpa_hop_limit"),
        ("traffic_class", attr::AV, "i_qpa_traffic_class"),
        ("flow_label", attr::AV, "i_qpa_flow_label"),
        ("dmac", attr::AV, "i_qpa_dmac"),
        ("vlan_tagged", attr::AV, "av_tagged"),
        ("vlan_tci", attr::AV, "av_tci"),
        ("dgid_hi", attr::AV, "i_qpa_dgid_hi"),
        ("dgid_lo", attr::AV, "i_qpa_dgid_lo"),
        ("dest_qpn", attr::DEST_QPN, "i_qpa_dest_qp_num"),
        ("port_set", attr::PORT, "i_qpa_port_num"),
        ("udp_sport", attr::AV | attr::DEST_QPN, "new_sport"),
    ]
}

const STATES: [QpState; 7] =
    [QpState::Reset, QpState::Init, QpState::Rtr, QpState::Rts, QpState::Sqd, QpState::Sqe, QpState::Err];

/// The Verilog body of `CmdExec` for profile `p`.
pub fn verilog(p: &Profile) -> Vec<String> {
    let c = qp_context(p);
    let (al, rl, sl) = (&c.attr, &c.req, &c.resp);
    let (mrl, cql) = (mr_entry(p), cq_entry());
    for (l, bits) in [(al, ATTR_BITS), (rl, REQ_BITS), (sl, RESP_BITS), (&mrl, MR_BITS), (&cql, CQ_BITS)] {
        assert!(l.width() as usize <= bits, "{} ({} bits) is wider than its port", l.name, l.width());
    }
    assert!(p.max_qp.is_power_of_two() && p.max_qp <= 1 << 16, "QP tables are indexed by the low QPN bits");
    let (aw, rw, sw, mw, cw) = (al.width(), rl.width(), sl.width(), mrl.width(), cql.width());
    let qa = bits_for(p.max_qp - 1);
    let pda = bits_for(p.max_pd - 1);
    let mra = bits_for(p.max_mr - 1);
    let cqa = bits_for(p.max_cq - 1);
    let mut v: Vec<String> = Vec::new();
    let mut w = |l: String| v.push(l);

    w("// The mailbox: byte i at mb[8i+7:8i], a beat shifted in at the top.".into());
    w(format!("reg [{}:0] mb;", 8 * MB_BYTES - 1));
    w(format!("always @(posedge clock) if (beat_valid) mb <= {{beat_data, mb[{}:64]}};", 8 * MB_BYTES - 1));
    let (e, _) = be_get("mb", CmdHeaderRepr::FIELDS, 0, "opcode");
    w(format!("wire [15:0] opcode = {e};"));
    for (prefix, fields) in INPUTS {
        for (name, r) in fields.iter() {
            let (e, bits) = be_get("mb", fields, IN, name);
            debug_assert_eq!(bits, 8 * r.len());
            w(format!("wire [{}:0] i_{prefix}_{name} = {e};", bits - 1));
        }
    }

    w("// The tables.".into());
    w("reg [47:0] mac_r;\nreg [15:0] gid_valid_r, gid_v4;\nreg [127:0] gid_tab [0:15];".into());
    w(format!("reg [{}:0] pd_valid;\nreg [{}:0] cq_valid;", p.max_pd - 1, p.max_cq - 1));
    w(format!("reg [{}:0] cq_tab [0:{}];\nreg [{}:0] eq_ent;", cw - 1, p.max_cq - 1, cw - 1));
    w(format!("reg [{}:0] mr_valid;\nreg [{}:0] mr_tab [0:{}];", p.max_mr - 1, mw - 1, p.max_mr - 1));
    w(format!("reg [{}:0] qp_valid_r;", p.max_qp - 1));
    for (name, width) in [("attr", aw), ("req", rw), ("resp", sw)] {
        w(format!("reg [{}:0] {name}_tab [0:{}];", width - 1, p.max_qp - 1));
    }
    w("// The doorbells' tables, and the QPs that take doorbells (valid, not in RESET).".into());
    w(format!(
        "reg [15:0] sq_pi_tab [0:{0}];\nreg [15:0] rq_pi_tab [0:{0}];\nreg [15:0] sq_ci_tab [0:{0}];\nreg [15:0] rq_ci_tab [0:{0}];\nreg [{0}:0] qp_active;",
        p.max_qp - 1
    ));
    w(format!("reg [31:0] cq_ci_tab [0:{0}];\nreg [1:0] cq_arm_tab [0:{0}];", p.max_cq - 1));
    w("// Never-registered MR slots start at variant 0, as the model's do.".into());
    w(format!("integer k;\ninitial for (k = 0; k < {}; k = k + 1) mr_tab[k] = {mw}'d0;", p.max_mr));

    w("// Free slots: the lowest clear valid bit from the first number handed out, found by a scan of".into());
    w("// the command's table a 16-bit word per cycle once the mailbox is in (the lookup waits for it).".into());
    let tables = [
        ("pd", op::ALLOC_PD, p.max_pd, pda, 1u32, "pd_valid"),
        ("mr", op::REG_MR, p.max_mr, mra, 1, "mr_valid"),
        ("cq", op::CREATE_CQ, p.max_cq, cqa, 1, "cq_valid"),
        ("qp", op::CREATE_QP, p.max_qp, qa, 2, "qp_valid_r"),
    ];
    let most_words = tables.iter().map(|t| t.2.div_ceil(SCAN_WORD)).max().unwrap_or(1);
    let sw_bits = bits_for(most_words);
    for (name, _, n, _, lo, valid) in tables {
        let words = n.div_ceil(SCAN_WORD);
        assert!(n % SCAN_WORD == 0 || words == 1, "{name}: a table of whole words");
        w(format!("wire [{}:0] {name}_used = {valid} | {n}'d{};", n - 1, (1u64 << lo) - 1));
        let idx = if words == 1 { "0".to_string() } else { format!("scan_word[{}:0]", bits_for(words - 1) - 1) };
        w(format!("wire [15:0] {name}_word = {name}_used[{idx} * 16 +: 16];"));
    }
    let fb = tables.iter().map(|t| t.3).max().unwrap_or(1);
    w(format!(
        "reg scan_on, scan_found;\nreg [1:0] scan_tab;\nreg [{}:0] scan_word;\nreg [{}:0] scan_free;",
        sw_bits - 1,
        fb - 1
    ));
    let pick = |f: &dyn Fn(usize) -> String| {
        format!("scan_tab == 2'd0 ? {} : scan_tab == 2'd1 ? {} : scan_tab == 2'd2 ? {} : {}", f(0), f(1), f(2), f(3))
    };
    w(format!("wire [15:0] scan_w = {};", pick(&|i| format!("{}_word", tables[i].0))));
    w(format!(
        "wire [{}:0] scan_last = {};",
        sw_bits - 1,
        pick(&|i| format!("{sw_bits}'d{}", tables[i].2.div_ceil(SCAN_WORD) - 1))
    ));
    let (f, i) = first_clear(&mut w, "scan", "scan_w", 0, SCAN_WORD, 4);
    w(format!("wire scan_hit = {f};\nwire [3:0] scan_bit = {i};"));
    w("always @(posedge clock) begin".into());
    w("    if (reset) scan_on <= 1'b0;".into());
    w("    else if (scan_start) begin".into());
    w("        // The mailbox is in: its opcode says which table (or none) to scan.".into());
    let ops: Vec<String> = tables.iter().map(|t| format!("opcode == 16'h{:x}", t.1)).collect();
    w(format!("        scan_on <= {};", ops.join(" || ")));
    w(format!(
        "        scan_tab <= {};",
        tables
            .iter()
            .enumerate()
            .skip(1)
            .fold("2'd0".to_string(), |acc, (k, t)| format!("opcode == 16'h{:x} ? 2'd{k} : {acc}", t.1))
    ));
    w(format!("        scan_word <= {sw_bits}'d0; scan_found <= 1'b0;"));
    w("    end else if (scan_on) begin".into());
    w("        if (scan_hit) begin scan_found <= 1'b1; scan_free <= {scan_word, scan_bit}; scan_on <= 1'b0; end"
        .into());
    w("        else if (scan_word == scan_last) scan_on <= 1'b0;".into());
    w("        else scan_word <= scan_word + 1'b1;".into());
    w("    end".into());
    w("end".into());
    for (name, _, _, bits, _, _) in tables {
        w(format!("wire {name}_found = scan_found;\nwire [{}:0] {name}_free = scan_free[{}:0];", bits - 1, bits - 1));
    }

    w("// The entries the command names, read at `lookup`.".into());
    w(format!("wire [{}:0] qp_sel = i_obj_id[{}:0];", qa - 1, qa - 1));
    w("wire [23:0] key_idx = i_obj_id[31:8];".into());
    w(format!("wire [{}:0] mr_sel = (opcode == 16'h{:x}) ? mr_free : key_idx[{}:0];", mra - 1, op::REG_MR, mra - 1));
    w(format!(
        "reg [{}:0] attr_raw_q;\nreg [15:0] sq_pi_q, rq_pi_q, sq_ci_q, rq_ci_q;\nreg [{}:0] req_raw_q;\nreg [{}:0] resp_q;\nreg [{}:0] mr_q;\nreg err_q, mr_in_q, held;",
        aw - 1,
        rw - 1,
        sw - 1,
        mw - 1
    ));
    w("// The lookup port also serves the reference scan (below), which is over before the lookup, and between".into());
    w("// commands the testbench's reads (`qp_index`, `mr_index`): it holds what it read from the lookup to the commit.".into());
    let rn = p.max_qp.max(p.max_mr);
    let rbits = bits_for(rn);
    w(format!("reg ref_on, ref_seen, in_use;\nreg [{0}:0] ref_idx, ref_prev;", rbits - 1));
    w(format!("wire [{0}:0] lk_qp = ref_on ? ref_idx[{0}:0] : lookup ? qp_sel : qp_index[{0}:0];", qa - 1));
    w(format!("wire [{0}:0] lk_mr = ref_on ? ref_idx[{0}:0] : lookup ? mr_sel : mr_index[{0}:0];", mra - 1));
    w("always @(posedge clock) if (reset || commit) held <= 1'b0; else if (lookup) held <= 1'b1;".into());
    w("always @(posedge clock) if (lookup || ref_on || !held) begin".into());
    w("    attr_raw_q <= attr_tab[lk_qp];\n    sq_pi_q <= sq_pi_tab[lk_qp];\n    rq_pi_q <= rq_pi_tab[lk_qp];".into());
    w("    sq_ci_q <= sq_ci_tab[lk_qp];\n    rq_ci_q <= rq_ci_tab[lk_qp];\n    err_q <= err_mark[lk_qp];".into());
    w("    req_raw_q <= req_tab[lk_qp];\n    resp_q <= resp_tab[lk_qp];\n    mr_q <= mr_tab[lk_mr];".into());
    w(format!("    mr_in_q <= lookup || ref_on || mr_index < 24'd{};\nend", p.max_mr));
    w("// DEALLOC_PD and DESTROY_CQ: whether an MR or a QP still names the object, by reading every entry once".into());
    w("// the mailbox is in, as the model looks (one entry of each table a cycle; nothing to count).".into());
    w(format!("wire ref_pd = opcode == 16'h{:x};", op::DEALLOC_PD));
    w(format!(
        "wire ref_qp_hit = ref_prev < {nq} && qp_valid_r[ref_prev[{qb}:0]] && (ref_pd ? {pdn} == i_obj_id : ({scq} == i_obj_id || {rcq} == i_obj_id));",
        nq = p.max_qp,
        qb = qa - 1,
        pdn = slice(al, "attr_raw_q", "pdn"),
        scq = slice(al, "attr_raw_q", "send_cqn"),
        rcq = slice(al, "attr_raw_q", "recv_cqn")
    ));
    w(format!(
        "wire ref_mr_hit = ref_pd && ref_prev < {} && mr_valid[ref_prev[{}:0]] && {} == i_obj_id;",
        p.max_mr,
        mra - 1,
        slice(&mrl, "mr_q", "pdn")
    ));
    w("always @(posedge clock) begin".into());
    w("    if (reset) begin ref_on <= 1'b0; ref_seen <= 1'b0; end".into());
    w("    else if (scan_start) begin".into());
    w(format!(
        "        ref_on <= ref_pd || opcode == 16'h{:x}; ref_idx <= {rbits}'d0; ref_seen <= 1'b0; in_use <= 1'b0;",
        op::DESTROY_CQ
    ));
    w("    end else begin".into());
    w("        ref_seen <= ref_on; ref_prev <= ref_idx;".into());
    w(format!(
        "        if (ref_on) begin ref_idx <= ref_idx + 1'b1; if (ref_idx == {rbits}'d{}) ref_on <= 1'b0; end",
        rn - 1
    ));
    w("        if (ref_seen && (ref_qp_hit || ref_mr_hit)) in_use <= 1'b1;".into());
    w("    end".into());
    w("end".into());
    for l in with_counters(al, "attr_raw_q", "attr_q", "la", ["sq_pi_q", "rq_pi_q", "sq_ci_q", "rq_ci_q"], "err_q") {
        w(l);
    }
    for l in err_cleared(rl, "req_raw_q", "req_q", "err_q", "ec") {
        w(l);
    }

    w("// Object checks: in range and valid.".into());
    let ok = |name: &str, id: &str, max: u32, bits: u32, valid: &str| {
        format!("wire {name} = ({id} < {max}) && {valid}[{id}[{}:0]];", bits - 1)
    };
    w(ok("pd_ok_obj", "i_obj_id", p.max_pd, pda, "pd_valid"));
    w(ok("pd_ok_mr", "i_mr_pdn", p.max_pd, pda, "pd_valid"));
    w(ok("pd_ok_qp", "i_cqp_pdn", p.max_pd, pda, "pd_valid"));
    w(ok("cq_ok_obj", "i_obj_id", p.max_cq, cqa, "cq_valid"));
    w(ok("cq_ok_send", "i_cqp_send_cqn", p.max_cq, cqa, "cq_valid"));
    w(ok("cq_ok_recv", "i_cqp_recv_cqn", p.max_cq, cqa, "cq_valid"));
    w(ok("qp_ok", "i_obj_id", p.max_qp, qa, "qp_valid_r"));
    w(ok("gid_ok", "i_qpa_sgid_index", 16, 4, "gid_valid_r"));
    w(format!(
        "wire mr_key_ok = (key_idx < {}) && mr_valid[key_idx[{}:0]] && {} == i_obj_id[7:0];",
        p.max_mr,
        mra - 1,
        slice(&mrl, "mr_q", "variant")
    ));
    w(format!("wire [7:0] mr_variant = {} + 8'd1;", slice(&mrl, "mr_q", "variant")));
    w(format!("wire [31:0] mr_key = {{{}'d0, mr_free, mr_variant}};", 24 - mra));

    w("// REG_MR, CREATE_CQ / CREATE_EQ and CREATE_QP parameters.".into());
    w(format!(
        "wire mr_bad = (i_mr_access & ~32'd{}) != 0 || ({{1'b0, i_mr_iova}} + {{1'b0, i_mr_length}}) > 65'h{:x} || i_mr_length > 64'h{:x};",
        access::ALL,
        u64::MAX,
        1u64 << MR_LEN_BITS
    ));
    w(format!("wire ring_bad = i_cq_log_size > 8'd{} || i_cq_ring_iova == 64'd0;", p.max_log_ring));
    let stride_bad = |f: &str, min: u8| format!("({f} < 8'd{min} || {f} > 8'd{MAX_LOG_STRIDE})");
    w(format!(
        "wire qp_rings_bad = i_cqp_sq_log_size > 8'd{0} || i_cqp_rq_log_size > 8'd{0} || {1} || {2} || i_cqp_sq_iova == 64'd0 || i_cqp_rq_iova == 64'd0;",
        p.max_log_ring,
        stride_bad("i_cqp_sq_log_stride", MIN_SQ_LOG_STRIDE),
        stride_bad("i_cqp_rq_log_stride", MIN_RQ_LOG_STRIDE)
    ));
    w(format!(
        "wire qp_type_bad = i_cqp_qp_type != 8'd{} && i_cqp_qp_type != 8'd{};",
        QpType::Rc as u8,
        QpType::RawPacket as u8
    ));

    w("// MODIFY_QP: the model's `Qp::modify`, its checks in its order.".into());
    w(format!(
        "wire atomics_over = ({} && i_qpa_max_rd_atomic > 8'd{}) || ({} && i_qpa_max_dest_rd_atomic > 8'd{});",
        m(attr::MAX_QP_RD_ATOMIC),
        p.max_qp_init_rd_atom,
        m(attr::MAX_DEST_RD_ATOMIC),
        p.max_qp_rd_atom
    ));
    w(format!("wire [2:0] cur = {};", slice(al, "attr_q", "state")));
    w(format!("wire is_raw = {};", slice(al, "attr_q", "raw")));
    w(format!("wire cur_mismatch = {} && i_qpa_cur_qp_state != {{5'd0, cur}};", m(attr::CUR_STATE)));
    w(format!("wire next_bad = {} && i_qpa_qp_state > 8'd{};", m(attr::STATE), QpState::Err as u8));
    w(format!("wire [2:0] nxt = {} ? i_qpa_qp_state[2:0] : cur;", m(attr::STATE)));
    w("reg t_ok;\nreg [31:0] t_req, t_opt;".into());
    w("always @(*) begin\n    t_ok = 1'b0; t_req = 32'd0; t_opt = 32'd0;\n    case ({is_raw, cur, nxt})".into());
    for raw in [false, true] {
        for cur in STATES {
            for next in STATES {
                let t = if raw { raw_packet_transition(cur, next) } else { rc_transition(cur, next) };
                if let Some(t) = t {
                    w(format!(
                        "    7'b{}{:03b}{:03b}: begin t_ok = 1'b1; t_req = 32'h{:x}; t_opt = 32'h{:x}; end",
                        u8::from(raw),
                        cur as u8,
                        next as u8,
                        t.required,
                        t.optional
                    ));
                }
            }
        }
    }
    w("    default: ;\n    endcase\nend".into());
    w(format!("wire [31:0] given = i_qpa_attr_mask & ~32'd{};", attr::STATE));
    w("wire rule_bad = !t_ok || (t_req & ~given) != 32'd0 || (given & ~(t_req | t_opt)) != 32'd0;".into());
    let checks = [
        (attr::PATH_MTU, format!("(i_qpa_path_mtu < 8'd1 || i_qpa_path_mtu > 8'd{MAX_MTU_ENUM})")),
        (attr::TIMEOUT, "i_qpa_timeout > 8'd31".into()),
        (attr::RETRY_CNT, "i_qpa_retry_cnt > 8'd7".into()),
        (attr::RNR_RETRY, "i_qpa_rnr_retry > 8'd7".into()),
        (attr::MIN_RNR_TIMER, "i_qpa_min_rnr_timer > 8'd31".into()),
        (attr::DEST_QPN, "i_qpa_dest_qp_num > 32'hffffff".into()),
        (attr::ACCESS_FLAGS, format!("(i_qpa_qp_access_flags & ~32'd{}) != 32'd0", access::ALL)),
        (attr::MAX_QP_RD_ATOMIC, "i_qpa_max_rd_atomic > 8'd16".into()),
        (attr::MAX_DEST_RD_ATOMIC, "i_qpa_max_dest_rd_atomic > 8'd16".into()),
        (attr::PKEY_INDEX, format!("i_qpa_pkey_index >= 16'd{PKEY_TABLE_LEN}")),
        (attr::PORT, "i_qpa_port_num != 8'd1".into()),
    ];
    let vb: Vec<String> = checks.iter().map(|(bit, c)| format!("({} && {c})", m(*bit))).collect();
    w(format!("wire value_bad = {};", vb.join(" || ")));
    w(format!("wire to_reset = nxt == 3'd{};", QpState::Reset as u8));
    w(format!("wire to_err = nxt == 3'd{0} && cur != 3'd{0};", QpState::Err as u8));

    w("// The address vector and the UDP source port (wire::roce's flow label rules).".into());
    w("wire av_tagged = i_qpa_vlan_tagged != 8'd0;".into());
    w("wire [15:0] av_tci = av_tagged ? i_qpa_vlan : 16'd0;".into());
    let keep_or = |bit: u32, new: &str, field: &str| format!("{} ? {new} : {}", m(bit), slice(al, "attr_q", field));
    w(format!("wire [19:0] new_fl = {};", keep_or(attr::AV, "i_qpa_flow_label[19:0]", "flow_label")));
    w(format!("wire [23:0] new_dqpn = {};", keep_or(attr::DEST_QPN, "i_qpa_dest_qp_num[23:0]", "dest_qpn")));
    w("wire [47:0] qpn_prod = {24'd0, i_qpa_qpn[23:0]} * {24'd0, new_dqpn};".into());
    w("wire [47:0] qpn_mix1 = qpn_prod ^ (qpn_prod >> 20);".into());
    w("wire [47:0] qpn_mix2 = qpn_mix1 ^ (qpn_mix1 >> 40);".into());
    w("wire [19:0] sport_fl = new_fl != 20'd0 ? new_fl : qpn_mix2[19:0];".into());
    w("wire [15:0] new_sport = {2'b11, sport_fl[13:0] ^ {8'd0, sport_fl[19:14]}};".into());

    // The modified records.
    let attrs = modify_attrs();
    let (d, e) = build(al, "attr_q", "ma", |name, _| {
        if name == "state" {
            return Some("nxt".into());
        }
        if name == "flushing" {
            return Some(format!("to_reset ? 1'b0 : to_err ? 1'b1 : {}", slice(al, "attr_q", name)));
        }
        if let Some((_, bit, new)) = attrs.iter().find(|(n, _, _)| *n == name) {
            return Some(format!("to_reset ? 0 : {} ? {new} : {}", mask_any(*bit), slice(al, "attr_q", name)));
        }
        ["sq_pi", "sq_ci", "rq_pi", "rq_ci"]
            .contains(&name)
            .then(|| format!("to_reset ? 0 : {}", slice(al, "attr_q", name)))
    });
    v.extend(d);
    v.push(format!("wire [{}:0] mod_attr = {e};", aw - 1));
    let psn_set = |name: &str| ["psn", "cursor_psn", "comp_psn", "high_psn"].contains(&name);
    let (d, e) = build(rl, "req_q", "mq", |name, _| {
        let old = slice(rl, "req_q", name);
        match name {
            "retry_left" => Some(format!("{} ? i_qpa_retry_cnt : {old}", m(attr::RETRY_CNT))),
            "rnr_left" => Some(format!("{} ? i_qpa_rnr_retry : {old}", m(attr::RNR_RETRY))),
            n if psn_set(n) => Some(format!("{} ? i_qpa_sq_psn : {old}", m(attr::SQ_PSN))),
            // Entering ERR stops the ACK and RNR timers (the model's `enter_err`).
            n if ERR_CLEARS_REQ.contains(&n) => Some(format!("to_err ? 0 : {old}")),
            _ => None,
        }
    });
    v.extend(d);
    v.push(format!("wire [{}:0] mod_req = to_reset ? {rw}'d0 : {e};", rw - 1));
    let res_w = width(sl, "resources");
    v.push(format!(
        "wire [{0}:0] res_cap = i_qpa_max_dest_rd_atomic == 8'd0 ? {res_w}'d1 : i_qpa_max_dest_rd_atomic[{0}:0];",
        res_w - 1
    ));
    let (d, e) = build(sl, "resp_q", "ms", |name, _| {
        let old = slice(sl, "resp_q", name);
        match name {
            "epsn" => Some(format!("{} ? i_qpa_rq_psn : {old}", m(attr::RQ_PSN))),
            // A smaller max_dest_rd_atomic keeps the newest resources (the model drops the oldest).
            "resources" => Some(format!("{} && {old} > res_cap ? res_cap : {old}", m(attr::MAX_DEST_RD_ATOMIC))),
            // ... moving the ring's head past the oldest ones.
            "res_head" => Some(format!(
                "{} && {res} > res_cap ? {old} + ({res} - res_cap) : {old}",
                m(attr::MAX_DEST_RD_ATOMIC),
                res = slice(sl, "resp_q", "resources")
            )),
            // Entering ERR drops the queued responses and the coalesced ACK.
            n if ERR_CLEARS_RESP.contains(&n) => Some(format!("to_err ? 0 : {old}")),
            _ => None,
        }
    });
    v.extend(d);
    v.push(format!("wire [{}:0] mod_resp = to_reset ? {sw}'d0 : {e};", sw - 1));

    // A new QP's context: RESET, its PD, CQs and rings; everything else zero.
    v.push(format!("wire [{}:0] zero_attr = {aw}'d0;", aw - 1));
    let (d, e) = build(al, "zero_attr", "ca", |name, _| {
        Some(match name {
            "raw" => format!("i_cqp_qp_type == 8'd{}", QpType::RawPacket as u8),
            "pdn" => "i_cqp_pdn".into(),
            "send_cqn" => "i_cqp_send_cqn".into(),
            "recv_cqn" => "i_cqp_recv_cqn".into(),
            "sig_all" => "i_cqp_sq_sig_all != 8'd0".into(),
            "sq_iova" | "sq_log_size" | "sq_log_stride" | "rq_iova" | "rq_log_size" | "rq_log_stride" => {
                format!("i_cqp_{name}")
            }
            _ => return None,
        })
    });
    v.extend(d);
    v.push(format!("wire [{}:0] new_attr = {e};", aw - 1));
    // MR entries: a new one, and the one DEREG_MR leaves (its variant kept for the next registration).
    v.push(format!("wire [{}:0] zero_mr = {mw}'d0;", mw - 1));
    let (d, e) = build(&mrl, "zero_mr", "cm", |name, _| {
        Some(match name {
            "valid" => "1'b1".into(),
            "variant" => "mr_variant".into(),
            "pdn" | "access" | "iova" | "length" => format!("i_mr_{name}"),
            _ => return None,
        })
    });
    v.extend(d);
    v.push(format!("wire [{}:0] new_mr = {e};", mw - 1));
    let (d, e) = build(&mrl, "mr_q", "dm", |name, _| (name == "valid").then(|| "1'b0".into()));
    v.extend(d);
    v.push(format!("wire [{}:0] gone_mr = {e};", mw - 1));
    v.push(format!("wire [{}:0] zero_cq = {cw}'d0;", cw - 1));
    let (d, e) = build(&cql, "zero_cq", "cc", |name, _| {
        Some(match name {
            "valid" => "1'b1".into(),
            "iova" => "i_cq_ring_iova".into(),
            "log_size" => "i_cq_log_size".into(),
            _ => return None,
        })
    });
    v.extend(d);
    v.push(format!("wire [{}:0] new_cq = {e};", cw - 1));

    // QUERY_QP's `sq_draining`: the entry `oldest` names in the QP's window is started (the model's
    // `outstanding`), read through the window port the cycle after the lookup (`CmdUnit`'s `Peek`).
    let wl = &c.wqe;
    let wb = width(rl, "wqes");
    v.extend([
        format!("wire [{}:0] w_count = {};", wb - 1, slice(rl, "req_q", "wqes")),
        format!("wire [{}:0] w_oldest = {};", wb - 1, slice(rl, "req_q", "oldest")),
        format!("wire [15:0] w_base = {} - {{{}'d0, w_count}};", slice(al, "attr_q", "sq_ci"), 16 - wb),
        "always @(*) win_qpn = {8'd0, i_obj_id[23:0]};".into(),
        format!("always @(*) win_slot = w_base[7:0] + {{{}'d0, w_oldest}};", 8 - wb),
        format!("wire qp_started = w_oldest < w_count && {};", slice(wl, "win_entry", "started")),
        format!("wire unused_w_base = ^w_base[15:8] ^ ^win_entry[{}:{}];", WQE_BITS - 1, 0),
    ]);
    // QUERY_QP's output.
    let mut w = |l: String| v.push(l);
    for (name, r) in QpAttrsRepr::FIELDS.iter() {
        let e = match *name {
            "qpn" => "i_obj_id".to_string(),
            "attr_mask" | "pkey_index" => "0".into(),
            "qp_state" | "cur_qp_state" => "cur".into(),
            "path_mtu" => slice(al, "attr_q", "pmtu"),
            "qp_access_flags" => slice(al, "attr_q", "access"),
            "dest_qp_num" => slice(al, "attr_q", "dest_qpn"),
            "rq_psn" => slice(sl, "resp_q", "epsn"),
            "sq_psn" => slice(rl, "req_q", "psn"),
            "vlan" => slice(al, "attr_q", "vlan_tci"),
            "port_num" => slice(al, "attr_q", "port_set"),
            "sq_draining" => format!("cur == 3'd{} && qp_started", QpState::Sqd as u8),
            n => slice(al, "attr_q", n),
        };
        w(format!("wire [{}:0] q_{name} = {e};", 8 * r.len() - 1));
    }

    w("// Status and syndrome: each command's checks in the model's order.".into());
    w("reg [7:0] st;\nreg [31:0] syn;\nreg [31:0] o_id;".into());
    w("always @(*) begin\n    st = 8'd0; syn = 32'd0; o_id = 32'd0;\n    case (opcode)".into());
    let arm = |opcode: u16, body: &[(&str, Status, &str)], ok_id: Option<&str>| {
        let mut s_ = format!("    16'h{opcode:x}: begin\n        ");
        for (cond, st, syn) in body {
            s_ += &format!("if ({cond}) begin st = {}; syn = {syn}; end\n        else ", s(*st));
        }
        s_ += &match ok_id {
            Some(id) => format!("o_id = {id};\n    end"),
            None => ";\n    end".into(),
        };
        s_
    };
    use Status::{BadOp, BadParam, BadResource, BadState, Busy, NoResources};
    w(arm(op::SET_PORT, &[], None));
    w(arm(op::SET_GID, &[("i_gid_index >= 8'd16", BadParam, "32'd1")], None));
    w(arm(op::ALLOC_PD, &[("!pd_found", NoResources, "32'd0")], Some("pd_free")));
    w(arm(op::DEALLOC_PD, &[("!pd_ok_obj", BadResource, "i_obj_id"), ("in_use", Busy, "i_obj_id")], None));
    w(arm(
        op::REG_MR,
        &[("!pd_ok_mr", BadResource, "i_mr_pdn"), ("mr_bad", BadParam, "32'd1"), ("!mr_found", NoResources, "32'd0")],
        Some("mr_key"),
    ));
    w(arm(op::DEREG_MR, &[("!mr_key_ok", BadResource, "i_obj_id")], None));
    w(arm(op::CREATE_CQ, &[("ring_bad", BadParam, "32'd1"), ("!cq_found", NoResources, "32'd0")], Some("cq_free")));
    w(arm(op::CREATE_EQ, &[("ring_bad", BadParam, "32'd1"), ("eq_valid", BadState, "32'd0")], Some("32'd0")));
    w(arm(op::DESTROY_CQ, &[("!cq_ok_obj", BadResource, "i_obj_id"), ("in_use", Busy, "i_obj_id")], None));
    w(arm(
        op::CREATE_QP,
        &[
            ("qp_type_bad", BadParam, "32'd5"),
            ("!pd_ok_qp", BadResource, "i_cqp_pdn"),
            ("!cq_ok_send || !cq_ok_recv", BadResource, "32'd1"),
            ("qp_rings_bad", BadParam, "32'd2"),
            ("!qp_found", NoResources, "32'd0"),
        ],
        Some("qp_free"),
    ));
    w(arm(
        op::MODIFY_QP,
        &[
            ("atomics_over", BadParam, "32'd3"),
            (&format!("{} && !gid_ok", m(attr::AV)), BadParam, "32'd4"),
            ("!qp_ok", BadResource, "i_obj_id"),
            ("cur_mismatch", BadState, "i_qpa_attr_mask"),
            ("next_bad", BadParam, "i_qpa_attr_mask"),
            ("rule_bad", BadState, "i_qpa_attr_mask"),
            ("value_bad", BadParam, "i_qpa_attr_mask"),
        ],
        None,
    ));
    w(arm(op::QUERY_QP, &[("!qp_ok", BadResource, "i_obj_id")], None));
    w(arm(op::DESTROY_QP, &[("!qp_ok", BadResource, "i_obj_id"), ("!qp_quiet", BadState, "i_obj_id")], None));
    w(format!("    default: begin st = {}; syn = {{16'd0, opcode}}; end\n    endcase\nend", s(BadOp)));
    w(format!("wire eq_valid = {};", slice(&cql, "eq_ent", "valid")));

    // DESTROY_QP: RESET, or ERR with nothing left to flush (the model's `flush_pending`).
    w(ring_left(al, "attr_q", "sq"));
    w(ring_left(al, "attr_q", "rq"));
    w(format!(
        "wire flush_pending = {} && ({} != 0 || sq_left || {} || rq_left);",
        slice(al, "attr_q", "flushing"),
        slice(rl, "req_q", "wqes"),
        slice(sl, "resp_q", "recv_valid")
    ));
    w(format!(
        "wire qp_quiet = cur == 3'd{} || (cur == 3'd{} && !flush_pending);",
        QpState::Reset as u8,
        QpState::Err as u8
    ));

    w("// What goes back to the mailbox: the output header, then the command's output.".into());
    w(format!("reg [{}:0] tail_c;", 8 * TAIL_BYTES - 1));
    w("always @(*) begin".into());
    w(format!("    tail_c = {}'d0;", 8 * TAIL_BYTES));
    let out_base = OUT - OUT_HDR;
    for l in be_put("tail_c", CmdOutHeaderRepr::FIELDS, 0, "status", "st") {
        w(format!("    {l}"));
    }
    for l in be_put("tail_c", CmdOutHeaderRepr::FIELDS, 0, "syndrome", "syn") {
        w(format!("    {l}"));
    }
    w("    if (st == 8'd0) case (opcode)".into());
    let ids: Vec<String> =
        [op::ALLOC_PD, op::CREATE_CQ, op::CREATE_EQ, op::CREATE_QP].iter().map(|o| format!("16'h{o:x}")).collect();
    w(format!("    {}: begin", ids.join(", ")));
    for l in be_put("tail_c", ObjOutRepr::FIELDS, out_base, "id", "o_id") {
        w(format!("        {l}"));
    }
    w(format!("    end\n    16'h{:x}: begin", op::REG_MR));
    for f in ["lkey", "rkey"] {
        for l in be_put("tail_c", RegMrOutRepr::FIELDS, out_base, f, "o_id") {
            w(format!("        {l}"));
        }
    }
    w(format!("    end\n    16'h{:x}: begin", op::QUERY_QP));
    for (name, _) in QpAttrsRepr::FIELDS.iter() {
        for l in be_put("tail_c", QpAttrsRepr::FIELDS, out_base, name, &format!("q_{name}")) {
            w(format!("        {l}"));
        }
    }
    w("    end\n    default: ;\n    endcase\nend".into());
    w(format!("reg [{}:0] tail_q;\nreg [7:0] st_q;", 8 * TAIL_BYTES - 1));
    w("always @(posedge clock) if (latch) begin tail_q <= tail_c; st_q <= st; end".into());
    w("always @(*) begin out_beat = tail_q[out_index * 64 +: 64]; status = st_q; end".into());

    w("// Applying a command that passed: the valid bits and registers.".into());
    w("wire apply = commit && st_q == 8'd0;".into());
    w(format!("always @(*) entered_err = apply && opcode == 16'h{:x} && to_err;", op::MODIFY_QP));
    w("// Doorbells: which table, which entry, whether it counts (decoded from the register file's write).".into());
    let sh = wire::contract::regs::doorbell::DB_STRIDE.trailing_zeros();
    for (name, base, n, bits, ok) in [
        ("qp", wire::contract::regs::doorbell::QP_DB_BASE, p.max_qp, qa, "qp_active"),
        ("cq", wire::contract::regs::doorbell::CQ_DB_BASE, p.max_cq, cqa, "cq_valid"),
    ] {
        let end = base + n * wire::contract::regs::doorbell::DB_STRIDE;
        w(format!("wire [21:0] db_{name}_off = db_addr - 22'h{base:x};"));
        w(format!("wire [{}:0] db_{name}n = db_{name}_off[{}:{sh}];", bits - 1, bits + sh - 1));
        w(format!(
            "wire db_{name} = db_valid && db_addr >= 22'h{base:x} && db_addr < 22'h{end:x} && {ok}[db_{name}n];"
        ));
    }
    use wire::contract::regs::doorbell as db;
    w(format!("wire db_sq = db_qp && db_qp_off[{}:0] == {sh}'d{};", sh - 1, db::QP_SQ_PI));
    w(format!("wire db_rq = db_qp && db_qp_off[{}:0] == {sh}'d{};", sh - 1, db::QP_RQ_PI));
    w(format!("wire db_ci = db_cq && db_cq_off[{}:0] == {sh}'d{};", sh - 1, db::CQ_CI));
    w(format!("wire db_arm = db_cq && db_cq_off[{}:0] == {sh}'d{};", sh - 1, db::CQ_ARM));
    w("// CQ_ARM: 1 = the next CQE, 2 = the next solicited one, anything else disarms (the model's `Arm`).".into());
    w(format!(
        "wire [1:0] db_arm_val = (db_val == 32'd{any} || db_val == 32'd{sol}) ? db_val[1:0] : 2'd0;",
        any = db::ARM_ANY,
        sol = db::ARM_SOLICITED
    ));
    w(format!("wire db_eq_ci = db_valid && eq_valid && db_addr == 22'h{:x};", db::EQ_DB + db::EQ_CI));
    w(format!("wire db_eq_arm = db_valid && eq_valid && db_addr == 22'h{:x};", db::EQ_DB + db::EQ_ARM));
    let sweep_n = p.max_qp.max(p.max_cq);
    let sb = bits_for(sweep_n);
    w(format!(
        "reg sweep;\nreg [{}:0] sweep_idx;\nreg clr_qp, clr_cq;\nreg [{}:0] clr_qpn;\nreg [{}:0] clr_cqn;",
        sb - 1,
        qa - 1,
        cqa - 1
    ));
    w("wire qp_clear = sweep || clr_qp;\nwire cq_clear = sweep || clr_cq;".into());
    w("// A clear takes the doorbells' tables' write ports in a cycle no doorbell or engine write wants them.".into());
    w("wire qp_clear_go = qp_clear && !(db_sq || db_rq || rs_sq_ci_we || rs_rq_ci_we);".into());
    w("wire cq_clear_go = cq_clear && !(db_ci || db_arm);".into());
    w("always @(*) quiet = !sweep && !clr_qp && !clr_cq && !scan_on && !scan_start && !ref_on && !ref_seen;".into());
    w("always @(posedge clock) begin".into());
    w("    if (reset) begin".into());
    w(format!("        mac_r <= 48'd0; eq_ent <= {cw}'d0;"));
    w(format!("        sweep <= 1'b1; sweep_idx <= {sb}'d0; clr_qp <= 1'b0; clr_cq <= 1'b0;"));
    w("    end else begin".into());
    w(format!("        if (ev_eq_we) eq_ent[{}] <= ev_eq_pi;", range(&cql, "pi")));
    w(format!("        if (ev_eq_we && ev_eq_disarm) eq_ent[{}] <= 2'd0;", range(&cql, "armed")));
    w(format!("        if (db_eq_ci) eq_ent[{}] <= db_val;", range(&cql, "ci")));
    w(format!("        if (db_eq_arm) eq_ent[{}] <= {{1'b0, db_val[0]}};", range(&cql, "armed")));
    w(format!(
        "        if (sweep && qp_clear_go && cq_clear_go) begin sweep_idx <= sweep_idx + 1'b1; if (sweep_idx == {sb}'d{}) sweep <= 1'b0; end",
        sweep_n - 1
    ));
    w("        if (qp_clear_go) clr_qp <= 1'b0;\n        if (cq_clear_go) clr_cq <= 1'b0;".into());
    w("    end".into());
    w("    if (!reset && apply) case (opcode)".into());
    w(format!("    16'h{:x}: mac_r <= i_port_mac;", op::SET_PORT));
    w(format!("    16'h{:x}: gid_tab[i_gid_index[3:0]] <= {{i_gid_gid_hi, i_gid_gid_lo}};", op::SET_GID));
    w(format!("    16'h{:x}: eq_ent <= new_cq;", op::CREATE_EQ));
    w(format!("    16'h{:x}: begin clr_cq <= 1'b1; clr_cqn <= i_obj_id[{}:0]; end", op::DESTROY_CQ, cqa - 1));
    w(format!("    16'h{:x}: if (to_reset) begin clr_qp <= 1'b1; clr_qpn <= qp_sel; end", op::MODIFY_QP));
    w(format!("    16'h{:x}: begin clr_qp <= 1'b1; clr_qpn <= qp_sel; end", op::DESTROY_QP));
    w("    default: ;\n    endcase\nend".into());

    w("// The RAMs' write ports, one each (a block RAM's): the commands' writes and the engines' never fall in".into());
    w("// the same cycle (the core keeps the engines out of a command's lookup-to-commit window). No reset: a".into());
    w("// slot's valid bit says whether its entry means anything.".into());
    w(format!("wire qp_cmd_new = apply && opcode == 16'h{:x};", op::CREATE_QP));
    w(format!("wire qp_cmd_we = qp_cmd_new || (apply && opcode == 16'h{:x});", op::MODIFY_QP));
    w(format!("wire [{}:0] qp_cmd_at = qp_cmd_new ? qp_free : qp_sel;", qa - 1));
    w(format!("wire cq_cmd_new = apply && opcode == 16'h{:x};", op::CREATE_CQ));
    w(format!("wire cq_cmd_we = cq_cmd_new || (apply && opcode == 16'h{:x});", op::DESTROY_CQ));
    w(format!("wire [{0}:0] cq_cmd_at = cq_cmd_new ? cq_free : i_obj_id[{0}:0];", cqa - 1));
    w(format!("wire mr_cmd_we = apply && (opcode == 16'h{:x} || opcode == 16'h{:x});", op::REG_MR, op::DEREG_MR));
    w(format!("wire [{}:0] req_at = qp_cmd_we ? qp_cmd_at : rs_resp_qpn[{}:0];", qa - 1, qa - 1));
    w(format!("wire [{}:0] req_w = !qp_cmd_we ? rs_req_next[{}:0] : qp_cmd_new ? {rw}'d0 : mod_req;", rw - 1, rw - 1));
    let timers = ["timer_valid", "timer", "rnr_valid", "rnr_deadline"];
    let tw: u32 = timers.iter().map(|n| width(rl, n)).sum();
    let (tl, tlb) = (timer::lanes(p), bits_for(timer::lanes(p) - 1));
    let trows = p.max_qp / tl;
    w(format!("// The timers' fields of every `qp_req` written, for `TimerScan` ({tw} bits a QP), in {tl} banks of"));
    w(format!("// {trows} rows: QP q in bank q mod {tl}, row q / {tl}, so a row's QPs are read in one cycle."));
    let fields: Vec<String> = timers.iter().map(|n| slice(rl, "req_w", n)).collect();
    w(format!("wire [{}:0] tmr_w = {{{}}};", tw - 1, fields.join(", ")));
    let row_of = |q: &str| if tl == 1 { q.to_string() } else { format!("{q}[{}:{tlb}]", qa - 1) };
    for k in 0..tl {
        w(format!("reg [{}:0] tmr_bank{k} [0:{}];", tw - 1, trows - 1));
        let bank = if tl == 1 { String::new() } else { format!(" && req_at[{}:0] == {tlb}'d{k}", tlb - 1) };
        w(format!(
            "always @(posedge clock) if ((qp_cmd_we || rs_req_we){bank}) tmr_bank{k}[{}] <= tmr_w;",
            row_of("req_at")
        ));
    }
    w("always @(posedge clock) begin".into());
    w("    if (qp_cmd_we) attr_tab[qp_cmd_at] <= qp_cmd_new ? new_attr : mod_attr;".into());
    w("    if (qp_cmd_we || rs_req_we) req_tab[req_at] <= req_w;".into());
    w(format!(
        "    if (qp_cmd_we || rs_resp_we) resp_tab[qp_cmd_we ? qp_cmd_at : rs_resp_qpn[{}:0]] <= !qp_cmd_we ? rs_resp_next[{}:0] : qp_cmd_new ? {sw}'d0 : mod_resp;",
        qa - 1,
        sw - 1
    ));
    w(format!("    if (mr_cmd_we) mr_tab[mr_sel] <= opcode == 16'h{:x} ? new_mr : gone_mr;", op::REG_MR));
    w(format!(
        "    if (cq_cmd_we || rs_cq_we) cq_tab[cq_cmd_we ? cq_cmd_at : rs_cq_n[{}:0]] <= !cq_cmd_we ? rs_cq_next[{}:0] : cq_cmd_new ? new_cq : zero_cq;",
        cqa - 1,
        cw - 1
    ));
    w("end".into());
    w("// A fatal NAK's move to ERR (the model's `enter_err`: state ERR, flushing, the ACK and RNR timers".into());
    w("// stopped) is a mark of its own, read with the records, which the QP's next command write folds in.".into());
    w(format!("reg [{}:0] err_mark;", p.max_qp - 1));
    // The ERR marks; the objects' valid bits; the QPs that take doorbells (valid, not in RESET); the GIDs' valid
    // and IPv4-mapped bits. Each table is written by the commands that make, change or end its entries (or a
    // fatal NAK), one a cycle.
    let is = |o: u16| format!("opcode == 16'h{o:x}");
    let cmd = |ops: &[u16]| format!("apply && ({})", ops.iter().map(|&o| is(o)).collect::<Vec<_>>().join(" || "));
    // A GID's "IPv4-mapped" bit, kept with it, so the NIC's own address is found by 32-bit compares.
    let v4_prefix = u128::from_be_bytes(wire::ipv6::gid_from_ipv4([0; 4])) >> 32;
    let tables: [(&str, u32, u32, String, String, String); 8] = [
        ("gid_valid_r", 16, 4, cmd(&[op::SET_GID]), "i_gid_index[3:0]".into(), "i_gid_valid != 8'd0".into()),
        (
            "gid_v4",
            16,
            4,
            cmd(&[op::SET_GID]),
            "i_gid_index[3:0]".into(),
            format!("{{i_gid_gid_hi, i_gid_gid_lo[63:32]}} == 96'h{v4_prefix:024x}"),
        ),
        (
            "err_mark",
            p.max_qp,
            qa,
            "qp_cmd_we || rs_err_we".into(),
            format!("qp_cmd_we ? qp_cmd_at : rs_resp_qpn[{}:0]", qa - 1),
            "!qp_cmd_we".into(),
        ),
        (
            "pd_valid",
            p.max_pd,
            pda,
            cmd(&[op::ALLOC_PD, op::DEALLOC_PD]),
            format!("{} ? pd_free : i_obj_id[{}:0]", is(op::ALLOC_PD), pda - 1),
            is(op::ALLOC_PD),
        ),
        ("mr_valid", p.max_mr, mra, cmd(&[op::REG_MR, op::DEREG_MR]), "mr_sel".into(), is(op::REG_MR)),
        ("cq_valid", p.max_cq, cqa, cmd(&[op::CREATE_CQ, op::DESTROY_CQ]), "cq_cmd_at".into(), is(op::CREATE_CQ)),
        ("qp_valid_r", p.max_qp, qa, cmd(&[op::CREATE_QP, op::DESTROY_QP]), "qp_cmd_at".into(), is(op::CREATE_QP)),
        (
            "qp_active",
            p.max_qp,
            qa,
            cmd(&[op::CREATE_QP, op::MODIFY_QP, op::DESTROY_QP]),
            format!("{} ? qp_free : qp_sel", is(op::CREATE_QP)),
            format!("{} && !to_reset", is(op::MODIFY_QP)),
        ),
    ];
    for (name, entries, at_bits, en, at, d) in &tables {
        bit_table::write_ports(name, *entries, *at_bits, &[Port { en, at, d }]).into_iter().for_each(&mut w);
    }
    w("// The QPs a received frame that is not RoCEv2 may go to: a bit a QP, written with its `qp_attr` (a raw".into());
    w("// QP in RTR, RTS or SQD, not flushing), read with its valid bit and its ERR mark; the lowest one set.".into());
    let raw_rx = |rec: &str| {
        let can = |st: QpState| format!("{} == 3'd{}", slice(al, rec, "state"), st as u8);
        format!(
            "{} && ({} || {} || {}) && !{}",
            slice(al, rec, "raw"),
            can(QpState::Rtr),
            can(QpState::Rts),
            can(QpState::Sqd),
            slice(al, rec, "flushing")
        )
    };
    w(format!("wire raw_rx_w = qp_cmd_new ? ({}) : ({});", raw_rx("new_attr"), raw_rx("mod_attr")));
    w(format!("reg [{}:0] raw_rx;", p.max_qp - 1));
    bit_table::write_ports("raw_rx", p.max_qp, qa, &[Port { en: "qp_cmd_we", at: "qp_cmd_at", d: "raw_rx_w" }])
        .into_iter()
        .for_each(&mut w);
    w(format!("wire [{}:0] raw_can = raw_rx & qp_valid_r & ~err_mark;", p.max_qp - 1));
    w("always @(*) begin".into());
    w("    raw_any = |raw_can;".into());
    w("    raw_qpn = 24'd0;".into());
    for q in (0..p.max_qp).rev() {
        w(format!("    if (raw_can[{q}]) raw_qpn = 24'd{q};"));
    }
    w("end".into());

    w("// The doorbells' tables: a doorbell, else a pending clear (the sweep after a reset, or a freed entry),".into());
    w("// which also waits for a cycle free of the engines' consumer counter writes.".into());
    w(format!("wire qp_clr_we = qp_clear_go && (!sweep || sweep_idx < {sb}'d{});", p.max_qp));
    w(format!("wire [{0}:0] qp_clr_at = sweep ? sweep_idx[{0}:0] : clr_qpn;", qa - 1));
    w(format!("wire cq_clr_we = cq_clear_go && (!sweep || sweep_idx < {sb}'d{});", p.max_cq));
    w(format!("wire [{0}:0] cq_clr_at = sweep ? sweep_idx[{0}:0] : clr_cqn;", cqa - 1));
    w("always @(posedge clock) begin".into());
    w("    if (db_sq || qp_clr_we) sq_pi_tab[db_sq ? db_qpn : qp_clr_at] <= db_sq ? db_val[15:0] : 16'd0;".into());
    w("    if (db_rq || qp_clr_we) rq_pi_tab[db_rq ? db_qpn : qp_clr_at] <= db_rq ? db_val[15:0] : 16'd0;".into());
    w("    // The engines' consumer counters: never a QP whose entry is being cleared (a QP being reset or".into());
    w("    // destroyed executes nothing, and is not flushing).".into());
    w(format!("    if (rs_sq_ci_we || qp_clr_we) sq_ci_tab[rs_sq_ci_we ? rs_resp_qpn[{0}:0] : qp_clr_at] <= rs_sq_ci_we ? rs_sq_ci : 16'd0;", qa - 1));
    w(format!("    if (rs_rq_ci_we || qp_clr_we) rq_ci_tab[rs_rq_ci_we ? rs_resp_qpn[{0}:0] : qp_clr_at] <= rs_rq_ci_we ? rs_rq_ci : 16'd0;", qa - 1));
    w("    if (db_ci || cq_clr_we) cq_ci_tab[db_ci ? db_cqn : cq_clr_at] <= db_ci ? db_val : 32'd0;".into());
    w("end".into());
    w("// The CQs' arming has two writers in one cycle (a doorbell, the responder's post spending it), so it is"
        .into());
    w("// registers (two bits a CQ), not a RAM.".into());
    w("always @(posedge clock) begin".into());
    w(format!("    if (rs_cq_we && rs_cq_disarm) cq_arm_tab[rs_cq_n[{}:0]] <= 2'd0;", cqa - 1));
    w("    if (db_arm) cq_arm_tab[db_cqn] <= db_arm_val;".into());
    w("    if (cq_clr_we) cq_arm_tab[cq_clr_at] <= 2'd0;".into());
    w("end".into());

    w("// The testbench's read ports: the valid bit; the records and the MR entry through the lookup port.".into());
    w("always @(posedge clock) begin".into());
    w(format!("    qp_valid <= qp_index < 16'd{} && qp_valid_r[qp_index[{}:0]];", p.max_qp, qa - 1));
    w("end".into());
    w(format!(
        "always @(*) begin qp_attr = attr_q; qp_req = req_q; qp_resp = resp_q; mr = mr_in_q ? mr_q : {mw}'d0; end"
    ));
    w("// The timers' read port: a row, a lane a QP; the lanes past the banks zero.".into());
    let ra = bits_for(trows - 1);
    let lanes = TIMER_LANES as u32;
    w(format!("reg [{}:0] tm_live_r;", tl - 1));
    for k in 0..tl {
        w(format!("reg [{}:0] tm_raw{k};", tw - 1));
    }
    w("always @(posedge clock) begin".into());
    for k in 0..tl {
        let q =
            if tl == 1 { format!("tm_index[{}:0]", ra - 1) } else { format!("{{tm_index[{}:0], {tlb}'d{k}}}", ra - 1) };
        w(format!("    tm_live_r[{k}] <= tm_index < 24'd{trows} && qp_valid_r[{q}] && !err_mark[{q}];"));
        w(format!("    tm_raw{k} <= tmr_bank{k}[tm_index[{}:0]];", ra - 1));
    }
    w("end".into());
    let pad = |bits: u32| if tl < lanes { format!("{}'d0, ", (lanes - tl) * bits) } else { String::new() };
    let mut at = tw;
    let mut outs = vec![format!("tm_live = {{{}tm_live_r}};", pad(1))];
    for (n, port) in timers.iter().zip(["tm_ack", "tm_ack_at", "tm_rnr", "tm_rnr_at"]) {
        let fw = width(rl, n);
        let lane: Vec<String> = (0..tl).rev().map(|k| format!("tm_raw{k}[{}:{}]", at - 1, at - fw)).collect();
        outs.push(format!("{port} = {{{}{}}};", pad(fw), lane.join(", ")));
        at -= fw;
    }
    w(format!("always @(*) begin {} end", outs.join(" ")));
    w("// The responder's read ports.".into());
    w(format!(
        "reg [{}:0] rs_attr_raw;\nreg [{}:0] rs_req_raw;\nreg [15:0] rs_sq_pi, rs_rq_pi, rs_sq_ci_r, rs_rq_ci_r;\nreg rs_err;",
        aw - 1,
        rw - 1
    ));
    w("always @(posedge clock) begin".into());
    w(format!("    rs_qp_valid <= rs_qp_index < 24'd{} && qp_valid_r[rs_qp_index[{}:0]];", p.max_qp, qa - 1));
    w(format!("    rs_attr_raw <= attr_tab[rs_qp_index[{0}:0]]; rs_sq_pi <= sq_pi_tab[rs_qp_index[{0}:0]]; rs_rq_pi <= rq_pi_tab[rs_qp_index[{0}:0]];", qa - 1));
    w(format!("    rs_sq_ci_r <= sq_ci_tab[rs_qp_index[{0}:0]]; rs_rq_ci_r <= rq_ci_tab[rs_qp_index[{0}:0]]; rs_err <= err_mark[rs_qp_index[{0}:0]];", qa - 1));
    w(format!("    rs_resp <= resp_tab[rs_qp_index[{0}:0]]; rs_req_raw <= req_tab[rs_qp_index[{0}:0]];", qa - 1));
    w(format!("    rs_mr <= rs_mr_index < 24'd{} ? mr_tab[rs_mr_index[{}:0]] : {mw}'d0;", p.max_mr, mra - 1));
    w("end".into());
    for l in with_counters(
        al,
        "rs_attr_raw",
        "rs_attr_full",
        "ra",
        ["rs_sq_pi", "rs_rq_pi", "rs_sq_ci_r", "rs_rq_ci_r"],
        "rs_err",
    ) {
        w(l);
    }
    for l in err_cleared(rl, "rs_req_raw", "rs_req_full", "rs_err", "rec") {
        w(l);
    }
    w(format!("always @(*) rs_req = {{{}'d0, rs_req_full}};", REQ_BITS - rl.width() as usize));
    w(format!("wire unused_req_next = ^rs_req_next[{}:{rw}];", REQ_BITS - 1));
    w(format!(
        "always @(*) begin sq_rung = db_sq; sq_rung_qpn = {{{0}'d0, db_qpn}}; qp_cmd = qp_cmd_we; qp_cmd_qpn = {{{0}'d0, qp_cmd_at}}; wqe_posted = db_sq || db_rq; end",
        24 - qa
    ));
    w("always @(*) begin rs_attr = rs_attr_full; rs_gid = gid_tab[rs_gid_index]; rs_gid_valid = gid_valid_r[rs_gid_index]; end".into());
    w("// The CQ read ports (the testbench's, the responder's): the entry with its doorbells' fields.".into());
    for (port, index) in [("cq", "cq_index"), ("rs_cq", "rs_cq_index")] {
        w(format!("reg {port}_in;\nreg [{}:0] {port}_raw;\nreg [31:0] {port}_ci_r;\nreg [1:0] {port}_arm_r;", cw - 1));
        w("always @(posedge clock) begin".into());
        w(format!("    {port}_in <= {index} < 16'd{};", p.max_cq));
        w(format!("    {port}_raw <= cq_tab[{index}[{0}:0]]; {port}_ci_r <= cq_ci_tab[{index}[{0}:0]]; {port}_arm_r <= cq_arm_tab[{index}[{0}:0]];", cqa - 1));
        w("end".into());
        let (d, e) = build(&cql, &format!("{port}_raw"), &format!("{port}_f"), |name, _| match name {
            "ci" => Some(format!("{port}_ci_r")),
            "armed" => Some(format!("{port}_arm_r")),
            _ => None,
        });
        for l in d {
            w(l);
        }
        w(format!("always @(*) {port} = {port}_in ? {e} : {cw}'d0;"));
    }
    w("always @(*) begin eq = eq_ent; gid = gid_tab[gid_index]; gid_valid = gid_valid_r[gid_index]; mac = mac_r; end"
        .into());
    w("reg [15:0] own_hit;\ninteger gi;".into());
    w("always @(*) begin".into());
    w("    for (gi = 0; gi < 16; gi = gi + 1) own_hit[gi] = gid_valid_r[gi] && gid_v4[gi] && gid_tab[gi][31:0] == own_ip;".into());
    w("    own = |own_hit;\nend".into());
    v
}

/// `hi:lo` of field `name` of `l`.
fn range(l: &wire::layout::Layout, name: &str) -> String {
    let (lsb, w) = l.slice(name).unwrap_or_else(|| panic!("{} has no field {name}", l.name));
    format!("{}:{lsb}", lsb + w - 1)
}

/// `out`, the `qp_attr` record `raw` with its counters taken from their tables (the producer counters from
/// the doorbells', the consumer counters from the engines': `sq_pi`, `rq_pi`, `sq_ci`, `rq_ci`, in that
/// order) and, when the QP's ERR mark `err` is set, in ERR and flushing.
fn with_counters(
    al: &wire::layout::Layout,
    raw: &str,
    out: &str,
    prefix: &str,
    counters: [&str; 4],
    err: &str,
) -> Vec<String> {
    let (mut d, e) = build(al, raw, prefix, |name, _| match name {
        "state" => Some(format!("{err} ? 3'd{} : {}", QpState::Err as u8, slice(al, raw, name))),
        "flushing" => Some(format!("{err} | {}", slice(al, raw, name))),
        _ => ["sq_pi", "rq_pi", "sq_ci", "rq_ci"].iter().position(|n| *n == name).map(|i| counters[i].to_string()),
    });
    d.push(format!("wire [{}:0] {out} = {e};", al.width() - 1));
    d
}

/// `out`, the `qp_req` record `raw` with, when the QP's ERR mark `err` is set, its timers stopped
/// (`ERR_CLEARS_REQ`, as the model's `enter_err` leaves them).
fn err_cleared(rl: &wire::layout::Layout, raw: &str, out: &str, err: &str, prefix: &str) -> Vec<String> {
    let (mut d, e) = build(rl, raw, prefix, |name, _| {
        ERR_CLEARS_REQ.contains(&name).then(|| format!("{err} ? 0 : {}", slice(rl, raw, name)))
    });
    d.push(format!("wire [{}:0] {out} = {e};", rl.width() - 1));
    d
}

/// Wires saying whether `used[lo..hi)` has a clear bit and the lowest one's index (`bits` wide): halves
/// compared recursively, so the depth is log2 of the range.
pub(crate) fn first_clear(
    w: &mut impl FnMut(String),
    name: &str,
    used: &str,
    lo: u32,
    hi: u32,
    bits: u32,
) -> (String, String) {
    let (f, i) = (format!("{name}_f_{lo}_{hi}"), format!("{name}_i_{lo}_{hi}"));
    if hi - lo == 1 {
        w(format!("wire {f} = !{used}[{lo}];\nwire [{}:0] {i} = {bits}'d{lo};", bits - 1));
    } else {
        let mid = lo + (hi - lo) / 2;
        let (fl, il) = first_clear(w, name, used, lo, mid, bits);
        let (fh, ih) = first_clear(w, name, used, mid, hi, bits);
        w(format!("wire {f} = {fl} | {fh};\nwire [{}:0] {i} = {fl} ? {il} : {ih};", bits - 1));
    }
    (f, i)
}

/// `i_qpa_attr_mask & bits != 0`.
fn mask_any(bits: u32) -> String {
    format!("(i_qpa_attr_mask & 32'h{bits:x}) != 32'd0")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both profiles' records fit the ports (`verilog` asserts it), and every command has its arm in the
    /// status logic.
    #[test]
    fn every_profile_fits_the_ports_and_every_command_has_its_checks() {
        for p in Profile::ALL {
            let v = verilog(&Profile { max_qp: 16, ..p }).join("\n");
            let ops = [
                op::SET_PORT,
                op::SET_GID,
                op::ALLOC_PD,
                op::DEALLOC_PD,
                op::REG_MR,
                op::DEREG_MR,
                op::CREATE_CQ,
                op::DESTROY_CQ,
                op::CREATE_QP,
                op::MODIFY_QP,
                op::QUERY_QP,
                op::DESTROY_QP,
                op::CREATE_EQ,
            ];
            for o in ops {
                assert!(v.contains(&format!("    16'h{o:x}: begin\n")), "{}: no arm for {o:#x}", p.name);
            }
        }
    }

    /// The rule table has every transition the verbs rules allow, and only those: RC has 7 states to RESET and
    /// 7 to ERR plus 8 others; the raw packet QP 7 + 7 + 5.
    #[test]
    fn the_rule_table_is_the_verbs_rules() {
        let v = verilog(&Profile { max_qp: 16, ..Profile::board() }).join("\n");
        let rc = v.lines().filter(|l| l.contains("7'b0") && l.contains("t_ok = 1'b1")).count();
        let raw = v.lines().filter(|l| l.contains("7'b1") && l.contains("t_ok = 1'b1")).count();
        assert_eq!((rc, raw), (7 + 7 + 8, 7 + 7 + 5));
    }
}
