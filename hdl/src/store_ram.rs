//! `StoreRam<N, A>`: the frame stores' block RAM, `2^A` entries of `N` data bits and a flag bit, one write
//! port, and a read port with two registers: the read register (loaded from the entry at `read_address` on
//! clocks with `read_enable`) and an output register (loaded from the read register every clock). So
//! `read_data`/`read_flag` show an entry two clocks after its read.
//!
//! Why the second register lives here: an ECP5 block RAM's outputs come 5.8 ns after the clock unless its
//! own output register is on (`REGMODE_B = "OUTREG"`), and yosys' ECP5 memory mapping never turns it on.
//! So for ECP5 synthesis (`read_verilog -DFERRITE_ECP5`, `scripts/synth.sh`) this block is written as
//! `DP16KD` instances, 1024 x 18 each, with the output register on; everywhere else (Verilator, the 64-byte
//! `synth_xilinx` run) it is generic Verilog with the same two registers. The DP16KD wiring follows
//! Lattice's ECP5 memory usage guide (TN1264) for the x18 mode: address bits 13..4 select the entry, bits
//! 1..0 are the write byte enables, `CE` enables the read, `OCE` the output register.

use crate::kit::*;

/// Entries of one DP16KD in its x18 mode, and the bits of each.
const TILE_LOG2: usize = 10;
const TILE_BITS: usize = 18;

#[derive(LogicBlock)]
pub struct StoreRam<const N: usize, const A: usize> {
    pub clock: Signal<In, Clock>,
    pub write_address: Signal<In, Bits<A>>,
    pub write_data: Signal<In, Bits<N>>,
    pub write_flag: Signal<In, Bit>,
    pub write_enable: Signal<In, Bit>,
    pub read_address: Signal<In, Bits<A>>,
    pub read_enable: Signal<In, Bit>,
    pub read_data: Signal<Out, Bits<N>>,
    pub read_flag: Signal<Out, Bit>,
}

impl<const N: usize, const A: usize> Default for StoreRam<N, A> {
    fn default() -> Self {
        assert!(A <= TILE_LOG2, "StoreRam: the DP16KD tiling is for up to 2^{TILE_LOG2} entries");
        StoreRam {
            clock: Signal::default(),
            write_address: Signal::default(),
            write_data: Signal::default(),
            write_flag: Signal::default(),
            write_enable: Signal::default(),
            read_address: Signal::default(),
            read_enable: Signal::default(),
            read_data: Signal::default(),
            read_flag: Signal::default(),
        }
    }
}

impl<const N: usize, const A: usize> Logic for StoreRam<N, A> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate), inside the pipelines that use it.
    }

    fn connect(&mut self) {
        self.read_data.connect();
        self.read_flag.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(N, A).lines().map(str::to_string))
    }
}

/// The block's Verilog: both forms, chosen by `FERRITE_ECP5`.
fn verilog(n: usize, a: usize) -> String {
    let tiles = (n + 1).div_ceil(TILE_BITS);
    let word = tiles * TILE_BITS;
    let mut v = String::new();
    v += "`ifdef FERRITE_ECP5\n";
    let pad = if word > n + 1 { format!("{}'d0, ", word - n - 1) } else { String::new() };
    v += &format!("wire [{}:0] wd = {{{pad}write_flag, write_data}};\n", word - 1);
    v += &format!("wire [{}:0] rd;\n", word - 1);
    v += &format!("always @(*) begin read_data = rd[{}:0]; read_flag = rd[{n}]; end\n", n - 1);
    // Entry address on bits 13..4, zero above `a`.
    let addr = |port: &str| {
        (0..14)
            .map(|b| {
                let s = match b {
                    0 | 1 if port == "write_address" => "1'b1".to_string(),
                    4.. if b - 4 < a => format!("{port}[{}]", b - 4),
                    _ => "1'b0".to_string(),
                };
                format!(".AD{}{b}({s})", if port == "write_address" { 'A' } else { 'B' })
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    for t in 0..tiles {
        let bits = |pin: &str, bus: &str| {
            (0..TILE_BITS).map(|i| format!(".{pin}{i}({bus}[{}])", t * TILE_BITS + i)).collect::<Vec<_>>().join(", ")
        };
        v += "DP16KD #(.DATA_WIDTH_A(18), .DATA_WIDTH_B(18), .REGMODE_A(\"NOREG\"), .REGMODE_B(\"OUTREG\"),\n";
        v += "    .RESETMODE(\"SYNC\"), .ASYNC_RESET_RELEASE(\"SYNC\"), .CSDECODE_A(\"0b000\"), .CSDECODE_B(\"0b000\"),\n";
        v += "    .WRITEMODE_A(\"NORMAL\"), .WRITEMODE_B(\"NORMAL\"), .GSR(\"DISABLED\"))\n";
        v += &format!("  tile{t} (\n");
        v += "    .CLKA(clock), .CEA(1'b1), .OCEA(1'b1), .WEA(write_enable), .RSTA(1'b0), .CSA0(1'b0), .CSA1(1'b0), .CSA2(1'b0),\n";
        v += &format!("    {},\n    {},\n", addr("write_address"), bits("DIA", "wd"));
        v += "    .CLKB(clock), .CEB(read_enable), .OCEB(1'b1), .WEB(1'b0), .RSTB(1'b0), .CSB0(1'b0), .CSB1(1'b0), .CSB2(1'b0),\n";
        v += &format!("    {},\n", addr("read_address"));
        v += &format!("    {},\n", (0..TILE_BITS).map(|i| format!(".DIB{i}(1'b0)")).collect::<Vec<_>>().join(", "));
        v += &format!("    {});\n", bits("DOB", "rd"));
    }
    v += "`else\n";
    // Users never read an entry in the clock it is written (a queue reads only entries written before), so
    // yosys need not add a bypass for read-during-write.
    v += &format!("(* no_rw_check *) reg [{n}:0] mem [0:{}];\n", (1usize << a) - 1);
    v += &format!("reg [{n}:0] rq;\n");
    v += "always @(posedge clock) begin\n";
    v += "    if (write_enable) mem[write_address] <= {write_flag, write_data};\n";
    v += "    if (read_enable) rq <= mem[read_address];\n";
    v += &format!("    read_data <= rq[{}:0];\n", n - 1);
    v += &format!("    read_flag <= rq[{n}];\n");
    v += "end\n";
    v += "`endif\n";
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The `.PIN(expr)` connections and parameters of each DP16KD instance in the ECP5 form.
    fn tiles(v: &str) -> Vec<HashMap<String, String>> {
        let ecp5 = &v[v.find("`ifdef FERRITE_ECP5").unwrap()..v.find("`else").unwrap()];
        ecp5.split("DP16KD #(")
            .skip(1)
            .map(|inst| {
                inst.split('.')
                    .skip(1)
                    .filter_map(|c| {
                        let (pin, rest) = c.split_once('(')?;
                        Some((pin.to_string(), rest[..rest.find(')')?].to_string()))
                    })
                    .collect()
            })
            .collect()
    }

    /// Drives the DP16KD pins as TN1264 describes the x18 mode (entry on address bits 13..4, byte enables on
    /// 1..0 for writes, `CE` the read, `OCE` the output register) and checks the generated wiring against the
    /// generic form: random writes and reads, data and flag two clocks after each read.
    fn check(n: usize, a: usize) {
        let v = verilog(n, a);
        let tiles = tiles(&v);
        assert_eq!(tiles.len(), (n + 1).div_ceil(TILE_BITS));
        assert!(v.contains(&format!("read_data = rd[{}:0]; read_flag = rd[{n}];", n - 1)));
        let pad = tiles.len() * TILE_BITS - n - 1;
        assert!(v.contains(&if pad > 0 { format!("{{{pad}'d0, write_flag, write_data}}") } else { "{write_flag, write_data}".into() }));
        for t in &tiles {
            for (p, want) in [("DATA_WIDTH_A", "18"), ("DATA_WIDTH_B", "18"), ("REGMODE_B", "\"OUTREG\""), ("CSDECODE_A", "\"0b000\""), ("CSDECODE_B", "\"0b000\"")] {
                assert_eq!(t[p], want, "{p}");
            }
        }
        // Signal values by name: `x[i]` is bit i of `x`.
        let pin = |env: &HashMap<&str, u128>, e: &str| -> u128 {
            match e {
                "1'b0" => 0,
                "1'b1" => 1,
                _ => match e.split_once('[') {
                    Some((name, i)) => env[name] >> i.trim_end_matches(']').parse::<u32>().unwrap() & 1,
                    None => env[e],
                },
            }
        };
        let field = |env: &HashMap<&str, u128>, t: &HashMap<String, String>, prefix: &str, bits: std::ops::Range<usize>| {
            bits.clone().map(|b| pin(env, &t[&format!("{prefix}{b}")]) << (b - bits.start)).sum::<u128>()
        };
        let mut mem = vec![vec![0u128; 1 << TILE_LOG2]; tiles.len()];
        let (mut rq, mut out) = (vec![0u128; tiles.len()], vec![0u128; tiles.len()]);
        let mut model = vec![0u128; 1 << a];
        let mut model_rq = 0u128;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mask = (1u128 << (n + 1)) - 1;
        for step in 0..20_000 {
            let (wa, ra) = (rnd() as u128 % (1 << a), rnd() as u128 % (1 << a));
            let word = (u128::from(rnd()) << 64 | u128::from(rnd())) & mask;
            let (we, re) = (u128::from(rnd() % 2 == 0), u128::from(rnd() % 3 != 0));
            let we = if wa == ra { 0 } else { we };
            let env: HashMap<&str, u128> = HashMap::from([
                ("clock", 0),
                ("write_address", wa),
                ("read_address", ra),
                ("write_enable", we),
                ("read_enable", re),
                ("wd", word),
            ]);
            for (i, t) in tiles.iter().enumerate() {
                let (ea, eb) = (field(&env, t, "ADA", 4..14) as usize, field(&env, t, "ADB", 4..14) as usize);
                let cs = field(&env, t, "CSA", 0..3) | field(&env, t, "CSB", 0..3);
                assert_eq!(cs, 0, "chip selects");
                if pin(&env, &t["OCEB"]) == 1 {
                    out[i] = rq[i];
                }
                if pin(&env, &t["CEB"]) == 1 {
                    rq[i] = mem[i][eb];
                }
                if pin(&env, &t["CEA"]) == 1 && pin(&env, &t["WEA"]) == 1 {
                    let be = field(&env, t, "ADA", 0..2);
                    let di = field(&env, t, "DIA", 0..TILE_BITS);
                    let keep = (if be & 1 != 0 { 0 } else { 0x1FF }) | (if be & 2 != 0 { 0 } else { 0x3FE00 });
                    mem[i][ea] = mem[i][ea] & keep | di & !keep;
                }
            }
            let model_out = model_rq;
            if re == 1 {
                model_rq = model[ra as usize];
            }
            if we == 1 {
                model[wa as usize] = word;
            }
            // `rd` as the tiles' DOB pins drive it.
            let mut rd = 0u128;
            for (i, t) in tiles.iter().enumerate() {
                for b in 0..TILE_BITS {
                    let (name, idx) = t[&format!("DOB{b}")].split_once('[').unwrap();
                    assert_eq!(name, "rd");
                    rd |= (out[i] >> b & 1) << idx.trim_end_matches(']').parse::<u32>().unwrap();
                }
            }
            assert_eq!(rd & mask, model_out, "n {n}, a {a}, step {step}");
        }
    }

    #[test]
    fn dp16kd_tiles_behave_like_the_generic_ram() {
        check(64, 10);
        check(17, 8);
        check(35, 4);
    }
}
