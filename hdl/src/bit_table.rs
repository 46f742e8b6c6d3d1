//! A table of one bit an entry (valid bits, marks, wake-up bits) in flip-flops, written one entry a cycle
//! per write port: the generated Verilog decodes each port's index into two one-hot halves, and an entry's
//! flip-flop is enabled by one bit of each. yosys builds each `table[index] <= d` as a shifter of the whole
//! table instead: a 256-entry table with two such writes took 1,480 LUT4 in `synth_ecp5`, the same with one
//! decoded port 409.

/// The index bits the low one-hot half decodes.
const LOW_BITS: u32 = 4;

/// One write port: when `en`, entry `at` is set to `d` (Verilog expressions, each read once).
pub struct Port<'a> {
    pub en: &'a str,
    pub at: &'a str,
    pub d: &'a str,
}

/// Verilog for table `name` (`entries` bits, declared by the caller and driven here alone): cleared on
/// `reset`, else written by `ports` (indices `at_bits` wide), a later port winning an entry two write.
pub fn write_ports(name: &str, entries: u32, at_bits: u32, ports: &[Port]) -> Vec<String> {
    assert!(entries <= 1 << at_bits, "{name}: {entries} entries need more than {at_bits} index bits");
    let lo_bits = at_bits.min(LOW_BITS);
    let hi_bits = at_bits - lo_bits;
    let (lo_n, hi_n) = (1u32 << lo_bits, 1u32 << hi_bits);
    let mut v =
        vec![format!("// `{name}`: its write ports' indices decoded (each a shifter of the whole table otherwise).")];
    v.push(format!("integer {name}_i, {name}_k;"));
    for (j, p) in ports.iter().enumerate() {
        let n = format!("{name}_{j}");
        v.extend([
            format!("wire {n}_we = {};", p.en),
            format!("wire [{}:0] {n}_at = {};", at_bits - 1, p.at),
            format!("wire {n}_d = {};", p.d),
            format!("reg [{}:0] {n}_lo;", lo_n - 1),
            format!("reg [{}:0] {n}_hi;", hi_n - 1),
            "always @(*) begin".into(),
            format!(
                "    for ({name}_i = 0; {name}_i < {lo_n}; {name}_i = {name}_i + 1) {n}_lo[{name}_i] = {n}_at[{}:0] == {name}_i[{}:0];",
                lo_bits - 1,
                lo_bits - 1
            ),
        ]);
        if hi_bits == 0 {
            v.push(format!("    {n}_hi = 1'b1;"));
        } else {
            v.push(format!(
                "    for ({name}_i = 0; {name}_i < {hi_n}; {name}_i = {name}_i + 1) {n}_hi[{name}_i] = {n}_at[{}:{lo_bits}] == {name}_i[{}:0];",
                at_bits - 1,
                hi_bits - 1
            ));
        }
        v.push("end".into());
    }
    let any: Vec<String> = (0..ports.len()).map(|j| format!("{name}_{j}_we")).collect();
    let any = any.join(" || ");
    v.extend([
        "always @(posedge clock)".to_string(),
        format!("    if (reset) {name} <= {entries}'d0;"),
        // The loop only in a cycle that writes (a simulator runs it entry by entry).
        format!("    else if ({any}) for ({name}_k = 0; {name}_k < {entries}; {name}_k = {name}_k + 1) begin"),
    ]);
    for j in 0..ports.len() {
        let n = format!("{name}_{j}");
        v.push(format!(
            "        if ({n}_we && {n}_hi[{name}_k / {lo_n}] && {n}_lo[{name}_k % {lo_n}]) {name}[{name}_k] <= {n}_d;"
        ));
    }
    v.push("    end".into());
    v
}
