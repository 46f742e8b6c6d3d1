//! `Mmio`: BAR0's register file, generated from `wire::contract::regs` (the model's `read_register` and
//! `mmio_write`). 32-bit accesses; a read's data comes one cycle later with `rvalid`. It holds the ID block
//! (the profile's limits), the command block (mailbox address, doorbell, status; the command unit does the
//! work), the counter block, the DCQCN parameters and the doorbell block's layout registers. Reading the low
//! word of a 64-bit value (a counter, the time) latches its high word for the next read of the high word.
//!
//! The counters are `host::counters`'s: a read of a counter's low word asks the bank for it (`cnt_index`)
//! and answers with its count (`cnt_value`) in the same cycle. Writes to the doorbell pages go on to the
//! tables that hold them, in the cycle they are taken (`db_*`).

use crate::host::counters::INDEX_BITS;
use crate::kit::*;
use wire::contract::profile::Profile;
use wire::contract::regs::{self, block_type, cmd, counters, dcqcn, doorbell, id, Counter, Dcqcn};

/// What the register file reports of the device besides its profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub profile: Profile,
    /// The port's line rate (`id::PORT_MBPS`).
    pub port_mbps: u32,
    /// Nanoseconds per clock cycle (the time register counts in them).
    pub ns_per_cycle: u32,
    pub build_id: u32,
}

/// BAR0 address bits.
pub const ADDR_BITS: usize = 22;
const _: () = assert!(regs::BAR0_LEN == 1 << ADDR_BITS);

#[derive(LogicBlock)]
pub struct Mmio {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub addr: Signal<In, Bits<ADDR_BITS>>,
    pub wdata: Signal<In, Bits<32>>,
    pub write: Signal<In, Bit>,
    pub read: Signal<In, Bit>,
    pub rdata: Signal<Out, Bits<32>>,
    pub rvalid: Signal<Out, Bit>,
    /// The command doorbell taken (not busy), with the mailbox address; the command's completion.
    pub cmd_start: Signal<Out, Bit>,
    pub cmd_mailbox: Signal<Out, Bits<64>>,
    pub cmd_done: Signal<In, Bit>,
    pub cmd_status: Signal<In, Bits<8>>,
    /// A write to the doorbell pages, in the cycle it is taken (the tables that hold them decode it).
    pub db_valid: Signal<Out, Bit>,
    pub db_addr: Signal<Out, Bits<ADDR_BITS>>,
    pub db_val: Signal<Out, Bits<32>>,
    /// The device's time (`TIME_NS`), in nanoseconds since reset: the timers' clock.
    pub now_ns: Signal<Out, Bits<64>>,
    /// The counter block: the counter a read names and its count; a command doorbell rung while a command
    /// runs (`cmd_doorbells_ignored`).
    pub cnt_index: Signal<Out, Bits<INDEX_BITS>>,
    pub cnt_value: Signal<In, Bits<64>>,
    pub cnt_ignored: Signal<Out, Bit>,
    info: Param<DeviceInfo>,
}

impl Mmio {
    pub fn new(info: DeviceInfo) -> Self {
        Mmio {
            clock: Signal::default(),
            reset: Signal::default(),
            addr: Signal::default(),
            wdata: Signal::default(),
            write: Signal::default(),
            read: Signal::default(),
            rdata: Signal::default(),
            rvalid: Signal::default(),
            cmd_start: Signal::default(),
            cmd_mailbox: Signal::default(),
            cmd_done: Signal::default(),
            cmd_status: Signal::default(),
            db_valid: Signal::default(),
            db_addr: Signal::default(),
            db_val: Signal::default(),
            now_ns: Signal::default(),
            cnt_index: Signal::default(),
            cnt_value: Signal::default(),
            cnt_ignored: Signal::default(),
            info: Param(info),
        }
    }
}

impl Logic for Mmio {
    fn update(&mut self) {
        // Verified in Verilator against the model (sim/tests/core_cmd.rs).
    }

    fn connect(&mut self) {
        self.rdata.connect();
        self.rvalid.connect();
        self.cmd_start.connect();
        self.cmd_mailbox.connect();
        self.db_valid.connect();
        self.db_addr.connect();
        self.db_val.connect();
        self.now_ns.connect();
        self.cnt_index.connect();
        self.cnt_ignored.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.info.0))
    }
}

/// The constant registers: (offset, value).
fn constants(d: &DeviceInfo) -> Vec<(u32, u32)> {
    let mut c = regs::id_registers(&d.profile, d.port_mbps, d.build_id).to_vec();
    c.extend([
        (cmd::BASE + regs::block::TYPE, block_type::CMD),
        (cmd::BASE + regs::block::VERSION, regs::VERSION),
        (cmd::BASE + regs::block::NEXT, counters::BASE),
        (counters::BASE + regs::block::TYPE, block_type::COUNTERS),
        (counters::BASE + regs::block::VERSION, regs::VERSION),
        (counters::BASE + regs::block::NEXT, dcqcn::BASE),
        (counters::BASE + counters::COUNT, Counter::ALL.len() as u32),
        (dcqcn::BASE + regs::block::TYPE, block_type::DCQCN),
        (dcqcn::BASE + regs::block::VERSION, regs::VERSION),
        (dcqcn::BASE + regs::block::NEXT, doorbell::BASE),
        (dcqcn::BASE + dcqcn::COUNT, Dcqcn::ALL.len() as u32),
        (doorbell::BASE + regs::block::TYPE, block_type::DOORBELL),
        (doorbell::BASE + regs::block::VERSION, regs::VERSION),
        (doorbell::BASE + regs::block::NEXT, 0),
        (doorbell::BASE + doorbell::QP_AREA, doorbell::QP_DB_BASE),
        (doorbell::BASE + doorbell::CQ_AREA, doorbell::CQ_DB_BASE),
        (doorbell::BASE + doorbell::STRIDE, doorbell::DB_STRIDE),
        (doorbell::BASE + doorbell::EQ_AREA, doorbell::EQ_DB),
    ]);
    c.retain(|&(_, v)| v != 0);
    c
}

/// The Verilog body of `Mmio`.
pub fn verilog(d: &DeviceInfo) -> Vec<String> {
    let mut v = Vec::new();
    let mut w = |l: String| v.push(l);
    let a = |off: u32| format!("22'h{off:x}");
    w("reg [63:0] mb_iova;\nreg busy;\nreg [7:0] token, status;\nreg [63:0] time_ns;\nreg [31:0] hi_latch;".into());
    w(format!("reg [31:0] dcqcn_regs [0:{}];", Dcqcn::ALL.len() - 1));
    w("always @(posedge clock) begin".into());
    w(format!("    time_ns <= time_ns + 64'd{};", d.ns_per_cycle));
    w("    cmd_start <= 1'b0;\n    cnt_ignored <= 1'b0;".into());
    w("    if (cmd_done) begin busy <= 1'b0; status <= cmd_status; end".into());
    w("    if (write) begin".into());
    w(format!("        if (addr == {}) mb_iova[31:0] <= wdata;", a(cmd::BASE + cmd::MAILBOX_LO)));
    w(format!("        if (addr == {}) mb_iova[63:32] <= wdata;", a(cmd::BASE + cmd::MAILBOX_HI)));
    w(format!("        if (addr == {}) begin", a(cmd::BASE + cmd::DOORBELL)));
    w("            if (busy) cnt_ignored <= 1'b1;".into());
    w("            else begin busy <= 1'b1; token <= wdata[7:0]; status <= 8'd0; cmd_start <= 1'b1; end".into());
    w("        end".into());
    let first = Dcqcn::ALL[0].offset();
    w(format!(
        "        if (addr >= {} && addr < {}) dcqcn_regs[(addr - {}) >> 2] <= wdata;",
        a(first),
        a(first + 4 * Dcqcn::ALL.len() as u32),
        a(first)
    ));
    w("    end".into());
    w("    rvalid <= read;".into());
    w("    if (read) begin".into());
    w("        rdata <= 32'd0;".into());
    w("        case (addr)".into());
    for (off, val) in constants(d) {
        w(format!("        {}: rdata <= 32'h{val:x};", a(off)));
    }
    w(format!("        {}: rdata <= mb_iova[31:0];", a(cmd::BASE + cmd::MAILBOX_LO)));
    w(format!("        {}: rdata <= mb_iova[63:32];", a(cmd::BASE + cmd::MAILBOX_HI)));
    w(format!("        {}: rdata <= {{busy, 15'd0, token, status}};", a(cmd::BASE + cmd::STATUS)));
    w(format!("        {}: begin rdata <= time_ns[31:0]; hi_latch <= time_ns[63:32]; end", a(id::TIME_NS_LO)));
    w(format!("        {}: rdata <= hi_latch;", a(id::TIME_NS_HI)));
    w("        default: ;\n        endcase".into());
    // The counter block past its header: a low word (8-aligned) reads its counter's low word and latches
    // the high word (past the last counter, 0); any other offset reads the latch.
    let (lo, hi) = (counters::BASE + counters::FIRST, dcqcn::BASE);
    let past = lo + 8 * Counter::ALL.len() as u32;
    w(format!("        if (addr >= {} && addr < {}) begin", a(lo), a(hi)));
    w("            if (addr[2:0] != 3'd0) rdata <= hi_latch;".into());
    w(format!(
        "            else if (addr < {}) begin rdata <= cnt_value[31:0]; hi_latch <= cnt_value[63:32]; end",
        a(past)
    ));
    w("            else hi_latch <= 32'd0;".into());
    w("        end".into());
    w(format!(
        "        if (addr >= {} && addr < {}) rdata <= dcqcn_regs[(addr - {}) >> 2];",
        a(first),
        a(first + 4 * Dcqcn::ALL.len() as u32),
        a(first)
    ));
    w("    end".into());
    w("    if (reset) begin".into());
    w("        mb_iova <= 64'd0; busy <= 1'b0; token <= 8'd0; status <= 8'd0; cmd_start <= 1'b0; cnt_ignored <= 1'b0;"
        .into());
    w("        time_ns <= 64'd0; hi_latch <= 32'd0; rvalid <= 1'b0;".into());
    for (i, p) in Dcqcn::ALL.iter().enumerate() {
        w(format!("        dcqcn_regs[{i}] <= 32'd{};", p.param().default));
    }
    w("    end".into());
    w("end".into());
    w("always @(*) cmd_mailbox = mb_iova;".into());
    w("always @(*) now_ns = time_ns;".into());
    w(format!("wire [{}:0] cnt_off = addr - {};", ADDR_BITS - 1, a(lo)));
    w(format!("always @(*) cnt_index = cnt_off[{}:3];", INDEX_BITS + 2));
    w(format!("wire unused_cnt_off = ^cnt_off[{}:{}] ^ ^cnt_off[2:0];", ADDR_BITS - 1, INDEX_BITS + 3));
    w(format!(
        "always @(*) begin db_valid = write && !reset && addr >= {}; db_addr = addr; db_val = wdata; end",
        a(doorbell::QP_DB_BASE)
    ));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every register the model's ID block answers with a constant is here, with the model's value.
    #[test]
    fn the_id_block_is_the_profile() {
        let d = DeviceInfo { profile: Profile::board(), port_mbps: 8000, ns_per_cycle: 8, build_id: 7 };
        let c = constants(&d);
        let get = |off| c.iter().find(|(o, _)| *o == off).map(|(_, v)| *v);
        assert_eq!(get(id::MAX_QP), Some(256));
        assert_eq!(get(id::BUILD_ID), Some(7));
        assert_eq!(get(id::PORT_MBPS), Some(8000));
        assert_eq!(get(doorbell::BASE + regs::block::NEXT), None, "zero registers are the default");
    }
}
