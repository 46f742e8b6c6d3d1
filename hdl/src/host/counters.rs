//! `CounterBank`: the counter block's 64-bit counters (`wire::contract::regs::Counter`, the model's
//! `Nic::count`), as generated Verilog.
//!
//! The counts live in a small RAM, one 64-bit word per counter; each counter has a short pending count in
//! front of it that takes the cycle's increments (`inc` and `inc2`, a bit per counter each, and the byte
//! counts `rx_add` and `tx_add` for `rx_bytes` and `tx_bytes`). A sweep visits one counter a cycle and adds
//! its pending count into its word, so one adder serves them all. A read (`index`, from the register file)
//! sees the word plus the pending count, in the same cycle: always the whole count. After reset the first
//! sweep writes the words from zero (a RAM has no reset), and a read of a word not yet swept sees zero.
//!
//! Pending counts: an event counter gets at most two a cycle and is swept every `N` cycles, so 8 bits hold
//! it; the byte counters take up to 65,535 a cycle, and 24 bits hold what a sweep can gather (the line
//! rate sends far less).

use crate::engine::counts::INC_BITS;
use crate::kit::*;
use wire::contract::regs::Counter;

/// Bits of a counter index (`index`).
pub const INDEX_BITS: usize = 6;
const _: () = assert!(Counter::ALL.len() <= 1 << INDEX_BITS);

#[derive(LogicBlock, Default)]
pub struct CounterBank {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub inc: Signal<In, Bits<INC_BITS>>,
    pub inc2: Signal<In, Bits<INC_BITS>>,
    pub rx_add: Signal<In, Bits<16>>,
    pub tx_add: Signal<In, Bits<16>>,
    /// The counter to read (`Counter as usize`), and its count.
    pub index: Signal<In, Bits<INDEX_BITS>>,
    pub value: Signal<Out, Bits<64>>,
}

impl Logic for CounterBank {
    fn update(&mut self) {
        // Verified in Verilator on its own (sim/tests/counter_bank.rs) and with the core: every counter read
        // in lockstep with the model (driver/tests/rtl_requester.rs and the others that call `followed`).
    }

    fn connect(&mut self) {
        self.value.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog())
    }
}

/// The Verilog body of `CounterBank`.
pub fn verilog() -> Vec<String> {
    let n = Counter::ALL.len();
    let ib = INDEX_BITS;
    let (rx, tx) = (Counter::rx_bytes as usize, Counter::tx_bytes as usize);
    let pw = |i: usize| if i == rx || i == tx { 24 } else { 8 };
    let mut v = vec![format!("reg [63:0] words [0:{}];", n - 1), format!("reg [{}:0] k;", ib - 1), "reg sweep;".into()];
    for i in 0..n {
        v.push(format!("reg [{}:0] p{i};", pw(i) - 1));
        let add = if i == rx {
            "{8'd0, rx_add}".to_string()
        } else if i == tx {
            "{8'd0, tx_add}".to_string()
        } else {
            format!("{{7'd0, inc[{i}]}} + {{7'd0, inc2[{i}]}}")
        };
        v.push(format!("wire [{}:0] a{i} = {add};", pw(i) - 1));
    }
    let unused: Vec<String> = [rx, tx].iter().flat_map(|&i| [format!("inc[{i}]"), format!("inc2[{i}]")]).collect();
    v.push(format!(
        "wire unused_inc = {} ^ ^inc[{}:{n}] ^ ^inc2[{}:{n}];",
        unused.join(" ^ "),
        INC_BITS - 1,
        INC_BITS - 1
    ));
    // The pending count of counter `sel` (`k`, or `index`), widened.
    let pick = |sel: &str, out: &str| {
        let mut s = format!("reg [23:0] {out};\nalways @(*) begin\n    {out} = 24'd0;\n    case ({sel})\n");
        for i in 0..n {
            let p = if pw(i) == 24 { format!("p{i}") } else { format!("{{{}'d0, p{i}}}", 24 - pw(i)) };
            s.push_str(&format!("    {ib}'d{i}: {out} = {p};\n"));
        }
        s.push_str("    default: ;\n    endcase\nend");
        s
    };
    v.push(pick("k", "pk"));
    v.push(pick("index", "pi"));
    v.extend([
        "always @(posedge clock) begin".to_string(),
        "    words[k] <= (sweep ? 64'd0 : words[k]) + {40'd0, pk};".into(),
        format!("    k <= k == {ib}'d{} ? {ib}'d0 : k + {ib}'d1;", n - 1),
        format!("    if (k == {ib}'d{}) sweep <= 1'b0;", n - 1),
    ]);
    for i in 0..n {
        v.push(format!("    p{i} <= (k == {ib}'d{i} ? {}'d0 : p{i}) + a{i};", pw(i)));
    }
    v.push("    if (reset) begin".into());
    v.push(format!("        k <= {ib}'d0;\n        sweep <= 1'b1;"));
    for i in 0..n {
        v.push(format!("        p{i} <= {}'d0;", pw(i)));
    }
    v.push("    end".into());
    v.push("end".into());
    v.push(format!("wire known = index < {ib}'d{n} && !(sweep && index >= k);"));
    v.push(format!(
        "always @(*) value = (known ? words[index < {ib}'d{n} ? index : {ib}'d0] : 64'd0) + {{40'd0, pi}};"
    ));
    v
}
