//! ECP5 block RAM (`DP16KD`) instances, written out by us where yosys' ECP5 memory mapping falls short: it
//! never turns on a port's output register (`REGMODE = "OUTREG"`), without which the RAM's outputs come
//! 5.8 ns after the clock. Users put these instances under `` `ifdef FERRITE_ECP5 `` (set by
//! `scripts/synth.sh` for ECP5 synthesis) beside generic Verilog with the same registers, which Verilator
//! and the other synthesis runs see.
//!
//! Only the x18 mode is used (1024 entries of 18 bits per instance), wired as Lattice's ECP5 memory usage
//! guide (TN1264) gives it: address bits 13..4 select the entry, bits 1..0 are the write byte enables, `CE`
//! enables the port's access, `OCE` its output register. Initial contents are laid out as yosys'
//! `brams_map_16kd.v` lays them out: `INITVAL_xx` holds entries `16 * xx ..`, 20 bits apart.

/// Entries of one DP16KD in the x18 mode, and the bits of each.
pub const TILE_LOG2: usize = 10;
pub const TILE_BITS: usize = 18;

/// One port's connections. `addr` is a Verilog bus of `addr_bits` bits (at most `TILE_LOG2`); a port
/// either writes `din` while `write_enable`, or reads into `dout` through its output register.
pub struct Port<'a> {
    pub addr: &'a str,
    pub addr_bits: usize,
    pub enable: &'a str,
    pub access: Access<'a>,
}

pub enum Access<'a> {
    Write { write_enable: &'a str, din: &'a str },
    Read { dout: &'a str },
}

/// Instance `name`, tile `tile` of its buses (bits `18 * tile ..` of every `din`/`dout`), with `init`
/// (1024 entries of 18 bits) if given.
pub fn instance(name: &str, tile: usize, a: &Port, b: &Port, init: Option<&[u32]>) -> String {
    assert!(a.addr_bits <= TILE_LOG2 && b.addr_bits <= TILE_LOG2);
    let mode = |p: &Port| if matches!(p.access, Access::Read { .. }) { "OUTREG" } else { "NOREG" };
    let mut v = format!(
        "DP16KD #(.DATA_WIDTH_A(18), .DATA_WIDTH_B(18), .REGMODE_A(\"{}\"), .REGMODE_B(\"{}\"),\n",
        mode(a),
        mode(b)
    );
    v += "    .RESETMODE(\"SYNC\"), .ASYNC_RESET_RELEASE(\"SYNC\"), .CSDECODE_A(\"0b000\"), .CSDECODE_B(\"0b000\"),\n";
    v += "    .WRITEMODE_A(\"NORMAL\"), .WRITEMODE_B(\"NORMAL\"), .GSR(\"DISABLED\")";
    if let Some(init) = init {
        assert_eq!(init.len(), 1 << TILE_LOG2);
        for (i, row) in init.chunks(16).enumerate() {
            let digits: String = row.iter().rev().map(|&e| format!("{:05x}", e & 0x3ffff)).collect();
            v += &format!(",\n    .INITVAL_{i:02X}(320'h{digits})");
        }
    }
    v += &format!(")\n  {name} (\n");
    for (x, p) in [('A', a), ('B', b)] {
        let (we, din, dout) = match p.access {
            Access::Write { write_enable, din } => (write_enable, Some(din), None),
            Access::Read { dout } => ("1'b0", None, Some(dout)),
        };
        v += &format!("    .CLK{x}(clock), .CE{x}({}), .OCE{x}(1'b1), .WE{x}({we}), .RST{x}(1'b0), .CS{x}0(1'b0), .CS{x}1(1'b0), .CS{x}2(1'b0),\n", p.enable);
        let ad: Vec<String> = (0..14)
            .map(|b| {
                let s = match b {
                    0 | 1 if din.is_some() => "1'b1".to_string(),
                    4.. if b - 4 < p.addr_bits => format!("{}[{}]", p.addr, b - 4),
                    _ => "1'b0".to_string(),
                };
                format!(".AD{x}{b}({s})")
            })
            .collect();
        v += &format!("    {},\n", ad.join(", "));
        let bus = |pin: &str, bus: Option<&str>, zero: &str| -> String {
            (0..TILE_BITS)
                .map(|i| match bus {
                    Some(bus) => format!(".{pin}{x}{i}({bus}[{}])", tile * TILE_BITS + i),
                    None => format!(".{pin}{x}{i}({zero})"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        v += &format!("    {},\n", bus("DI", din, "1'b0"));
        v += &format!("    {}{}\n", bus("DO", dout, ""), if x == 'A' { "," } else { ");" });
    }
    v
}

/// The 18-bit entries of tile `tile` of a table of `words` (each `bits` wide), padded to 1024 entries.
pub fn tile_init(words: &[u64], tile: usize) -> Vec<u32> {
    let mut init = vec![0u32; 1 << TILE_LOG2];
    for (e, w) in words.iter().enumerate() {
        init[e] = (w >> (tile * TILE_BITS)) as u32 & 0x3ffff;
    }
    init
}

/// A pin-level model of the instances above, for tests: it reads the Verilog text back and steps it by
/// the x18 rules in the module doc.
#[cfg(test)]
pub mod model {
    use super::*;
    use std::collections::HashMap;

    pub struct Dp16kd {
        pins: HashMap<String, String>,
        mem: Vec<u32>,
        rq: [u32; 2],
        out: [u32; 2],
    }

    /// Signal values by name (a bus is one number, bit `i` of `x` is `x[i]`).
    pub type Env<'a> = HashMap<&'a str, u128>;

    fn eval(env: &Env<'_>, e: &str) -> u128 {
        match e {
            "1'b0" => 0,
            "1'b1" => 1,
            "clock" => 0,
            _ => match e.split_once('[') {
                Some((name, i)) => env[name] >> i.trim_end_matches(']').parse::<u32>().unwrap() & 1,
                None => env[e],
            },
        }
    }

    /// The instances inside the `FERRITE_ECP5` branch of `verilog`.
    pub fn parse(verilog: &str) -> Vec<Dp16kd> {
        let ecp5 = &verilog[verilog.find("`ifdef FERRITE_ECP5").unwrap()..verilog.find("`else").unwrap()];
        ecp5.split("DP16KD #(")
            .skip(1)
            .map(|inst| {
                let pins: HashMap<String, String> = inst
                    .split('.')
                    .skip(1)
                    .filter_map(|c| {
                        let (pin, rest) = c.split_once('(')?;
                        Some((pin.to_string(), rest[..rest.find(')')?].to_string()))
                    })
                    .collect();
                for (p, want) in [
                    ("DATA_WIDTH_A", "18"),
                    ("DATA_WIDTH_B", "18"),
                    ("CSDECODE_A", "\"0b000\""),
                    ("CSDECODE_B", "\"0b000\""),
                ] {
                    assert_eq!(pins[p], want, "{p}");
                }
                let mut mem = vec![0u32; 1 << TILE_LOG2];
                for (row, chunk) in mem.chunks_mut(16).enumerate() {
                    if let Some(hex) = pins.get(&format!("INITVAL_{row:02X}")) {
                        let hex = hex.strip_prefix("320'h").unwrap();
                        assert_eq!(hex.len(), 80);
                        for (i, e) in chunk.iter_mut().enumerate() {
                            let at = 80 - 5 * (i + 1);
                            *e = u32::from_str_radix(&hex[at..at + 5], 16).unwrap() & 0x3ffff;
                        }
                    }
                }
                Dp16kd { pins, mem, rq: [0; 2], out: [0; 2] }
            })
            .collect()
    }

    impl Dp16kd {
        fn field(&self, env: &Env<'_>, prefix: &str, bits: std::ops::Range<usize>) -> usize {
            bits.clone().map(|b| (eval(env, &self.pins[&format!("{prefix}{b}")]) as usize) << (b - bits.start)).sum()
        }

        /// One rising clock with the inputs in `env`: both ports' output registers take their read
        /// registers, then reads, then writes (users never read an entry in the clock it is written).
        pub fn clock(&mut self, env: &Env<'_>) {
            for (i, x) in ["A", "B"].into_iter().enumerate() {
                assert_eq!(self.field(env, &format!("CS{x}"), 0..3), 0, "chip selects");
                assert_eq!(self.pins[&format!("RST{x}")], "1'b0");
                let on = |p: &str| eval(env, &self.pins[&format!("{p}{x}")]) == 1;
                if self.pins[&format!("REGMODE_{x}")] == "\"OUTREG\"" && on("OCE") {
                    self.out[i] = self.rq[i];
                }
                if on("CE") && !on("WE") {
                    self.rq[i] = self.mem[self.field(env, &format!("AD{x}"), 4..14)];
                }
            }
            for x in ["A", "B"] {
                let on = |p: &str| eval(env, &self.pins[&format!("{p}{x}")]) == 1;
                if on("CE") && on("WE") {
                    let e = self.field(env, &format!("AD{x}"), 4..14);
                    let be = self.field(env, &format!("AD{x}"), 0..2);
                    let di = self.field(env, &format!("DI{x}"), 0..TILE_BITS) as u32;
                    let keep = (if be & 1 != 0 { 0 } else { 0x1ff }) | (if be & 2 != 0 { 0 } else { 0x3fe00 });
                    self.mem[e] = self.mem[e] & keep | di & !keep;
                }
            }
        }

        /// Ors this instance's port outputs into `buses` at the bits their `DO` pins name.
        fn drive(&self, buses: &mut HashMap<String, u128>) {
            for (i, x) in ["A", "B"].into_iter().enumerate() {
                let reg = self.pins[&format!("REGMODE_{x}")] == "\"OUTREG\"";
                let q = if reg { self.out[i] } else { self.rq[i] };
                for b in 0..TILE_BITS {
                    let Some((bus, idx)) = self.pins[&format!("DO{x}{b}")].split_once('[') else { continue };
                    let idx: u32 = idx.trim_end_matches(']').parse().unwrap();
                    *buses.entry(bus.to_string()).or_default() |= u128::from(q >> b & 1) << idx;
                }
            }
        }
    }

    /// One clock of every instance, then the buses their outputs drive.
    pub fn step(brams: &mut [Dp16kd], env: &Env<'_>) -> HashMap<String, u128> {
        let mut buses = HashMap::new();
        for b in brams.iter_mut() {
            b.clock(env);
        }
        for b in brams.iter() {
            b.drive(&mut buses);
        }
        buses
    }
}
