//! `StoreRam<N, A>`: the frame stores' block RAM, `2^A` entries of `N` data bits and a flag bit, one write
//! port, and a read port with two registers: the read register (loaded from the entry at `read_address` on
//! clocks with `read_enable`) and an output register (loaded from the read register every clock). So
//! `read_data`/`read_flag` show an entry two clocks after its read.
//!
//! Why the second register lives here: an ECP5 block RAM's outputs come 5.8 ns after the clock unless its
//! own output register is on (`REGMODE_B = "OUTREG"`), and yosys' ECP5 memory mapping never turns it on.
//! So for ECP5 synthesis (`read_verilog -DFERRITE_ECP5`, `scripts/synth.sh`) this block is written as
//! `DP16KD` instances, 1024 x 18 each, with the output register on; everywhere else (Verilator, the 64-byte
//! `synth_xilinx` run) it is generic Verilog with the same two registers. The instances come from `dp16kd`.

use crate::dp16kd::{self, Access, Port, TILE_BITS, TILE_LOG2};
use crate::kit::*;

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
    let write = Port {
        addr: "write_address",
        addr_bits: a,
        enable: "1'b1",
        access: Access::Write { write_enable: "write_enable", din: "wd" },
    };
    let read = Port { addr: "read_address", addr_bits: a, enable: "read_enable", access: Access::Read { dout: "rd" } };
    for t in 0..tiles {
        v += &dp16kd::instance(&format!("tile{t}"), t, &write, &read, None);
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
    use crate::dp16kd::model;
    use ::model::rng::Rng;
    use std::collections::HashMap;

    /// The DP16KD form, stepped pin by pin (`dp16kd::model`), against the generic form: random writes and
    /// reads, data and flag two clocks after each read.
    fn check(n: usize, a: usize) {
        let v = verilog(n, a);
        let mut tiles = model::parse(&v);
        assert_eq!(tiles.len(), (n + 1).div_ceil(TILE_BITS));
        assert!(v.contains(&format!("read_data = rd[{}:0]; read_flag = rd[{n}];", n - 1)));
        let pad = tiles.len() * TILE_BITS - n - 1;
        assert!(v.contains(&if pad > 0 {
            format!("{{{pad}'d0, write_flag, write_data}}")
        } else {
            "{write_flag, write_data}".into()
        }));
        let mut mem = vec![0u128; 1 << a];
        let mut rq = 0u128;
        let seed = 0x5eed_0000 + (n * 16 + a) as u64;
        let mut rng = Rng::new(seed);
        let mut rnd = move || rng.next_u64();
        let mask = (1u128 << (n + 1)) - 1;
        for step in 0..20_000 {
            let (wa, ra) = (u128::from(rnd()) % (1 << a), u128::from(rnd()) % (1 << a));
            let word = (u128::from(rnd()) << 64 | u128::from(rnd())) & mask;
            let re = u128::from(rnd() % 3 != 0);
            let we = if wa == ra { 0 } else { u128::from(rnd() % 2 == 0) };
            let env = HashMap::from([
                ("write_address", wa),
                ("read_address", ra),
                ("write_enable", we),
                ("read_enable", re),
                ("wd", word),
            ]);
            let buses = model::step(&mut tiles, &env);
            let out = rq;
            if re == 1 {
                rq = mem[ra as usize];
            }
            if we == 1 {
                mem[wa as usize] = word;
            }
            assert_eq!(buses["rd"] & mask, out, "n {n}, a {a}, seed {seed:#x}, step {step}");
        }
    }

    #[test]
    fn dp16kd_tiles_behave_like_the_generic_ram() {
        check(64, 10);
        check(17, 8);
        check(35, 4);
    }
}
