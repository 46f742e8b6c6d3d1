//! CRC-32 (the ICRC's polynomial, reflected, raw register: no init or final XOR here) over a stream of `K`
//! bytes per beat.
//!
//! Body beats (all `K` lanes valid) update the register through one `K`-byte XOR matrix; that is the only
//! feedback path. The last beat of a frame, with 1..=K valid bytes, goes down a tail pipeline of stages (see
//! `TAIL`): each folds its bytes in when its bit of the count is set, then shifts them off; a bus of `K`
//! bytes has only the stages its counts can enable (`tail`). The 8 bytes of count bit 3 take two stages of
//! 4, so no tail stage is wider than the 4-byte one at the 8-byte width (one 8-byte fold was six LUT levels,
//! TX's worst path at one placement). One frame can end on every cycle; the result comes out `latency(K)`
//! cycles after the last beat (6 at 8 bytes, 9 at 64). The matrices are computed from
//! `wire::icrc::crc32_update`, so the RTL and the model share one definition of the CRC.

use crate::kit::*;
use wire::icrc::crc32_update;

/// The tail stages in order: (bytes folded, the bit of the last beat's byte count that enables the stage).
pub const TAIL: [(usize, usize); 8] = [(64, 6), (32, 5), (16, 4), (4, 3), (4, 3), (4, 2), (2, 1), (1, 0)];

/// For each of the 32 output bits of a `bytes`-byte update: the register bits and the data bits (bit `8 * i + j`
/// is bit `j` of byte `i`) whose XOR it is.
pub fn matrix(bytes: usize) -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut rows = vec![(Vec::new(), Vec::new()); 32];
    let zeros = vec![0u8; bytes];
    for i in 0..32 {
        let col = crc32_update(1 << i, &zeros);
        for (o, row) in rows.iter_mut().enumerate() {
            if col >> o & 1 != 0 {
                row.0.push(i);
            }
        }
    }
    let mut data = vec![0u8; bytes];
    for bit in 0..8 * bytes {
        data[bit / 8] = 1 << (bit % 8);
        let col = crc32_update(0, &data);
        data[bit / 8] = 0;
        for (o, row) in rows.iter_mut().enumerate() {
            if col >> o & 1 != 0 {
                row.1.push(bit);
            }
        }
    }
    rows
}

/// One `assign`-style line per output bit of `o` = `s` advanced over the low `bytes` bytes of `d` (one
/// reduction XOR each: a flat cell for synthesis, not a deep chain).
fn xor_lines(o: &str, s: &str, d: &str, bytes: usize) -> Vec<String> {
    matrix(bytes)
        .iter()
        .enumerate()
        .map(|(bit, (sb, db))| {
            let terms: Vec<String> =
                sb.iter().map(|i| format!("{s}[{i}]")).chain(db.iter().map(|i| format!("{d}[{i}]"))).collect();
            let rhs = if terms.is_empty() { "1'b0".to_string() } else { format!("^{{{}}}", terms.join(", ")) };
            format!("    {o}[{bit}] = {rhs};")
        })
        .collect()
}

/// `n` = the number of set bits of `keep` (the valid byte lanes of a beat).
#[derive(Clone, Debug, LogicBlock)]
pub struct KeepCount<const K: usize> {
    pub keep: Signal<In, Bits<K>>,
    pub n: Signal<Out, Bits<8>>,
}

impl<const K: usize> Default for KeepCount<K> {
    fn default() -> Self {
        KeepCount { keep: Signal::default(), n: Signal::default() }
    }
}

impl<const K: usize> Logic for KeepCount<K> {
    fn update(&mut self) {
        let n = (0..K).filter(|&i| self.keep.val().get_bit(i)).count();
        self.n.next = (n as u64).into();
    }

    fn connect(&mut self) {
        self.n.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module([
            "integer i;".to_string(),
            "always @(*) begin".into(),
            "    n = 8'd0;".into(),
            format!("    for (i = 0; i < {K}; i = i + 1) n = n + {{7'd0, keep[i]}};"),
            "end".into(),
        ])
    }
}

/// The tail stages a `K`-byte bus uses: a last beat holds at most `K` bytes, so no count bit above
/// `log2(K)` is ever set and the wider stages are left out.
pub fn tail(k: usize) -> Vec<(usize, usize)> {
    TAIL.iter().copied().filter(|&(_, bit)| 1 << bit <= k).collect()
}

/// Cycles from a frame's last beat to its CRC on `crc`/`crc_valid` at `K` bytes a beat.
pub fn latency(k: usize) -> usize {
    tail(k).len() + 1
}

/// The CRC engine. Inputs: `data`/`keep`/`last`/`valid` of a stream (keep contiguous from lane 0, all lanes
/// set except on a last beat) and a synchronous `reset`. Output: `crc` with a one-cycle `crc_valid` per
/// frame, in frame order, `latency(K)` cycles after its last beat. Every frame starts from a zero register
/// (both ICRC users start there, see `rx::lanes`): the register goes back to zero as a frame's last beat is
/// taken, so the feedback path is the register through the body matrix into itself, with nothing in front
/// of the matrix. Tail stage `i` holds `ts`/`td`/`tn`/`tv` `i` (register, data, count, valid).
#[derive(Clone, Debug, LogicBlock)]
pub struct CrcEngine<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub data: Signal<In, Bits<D>>,
    pub keep: Signal<In, Bits<K>>,
    pub last: Signal<In, Bit>,
    pub valid: Signal<In, Bit>,
    pub crc: Signal<Out, Bits<32>>,
    pub crc_valid: Signal<Out, Bit>,
}

impl<const D: usize, const K: usize> Default for CrcEngine<D, K> {
    fn default() -> Self {
        assert_eq!(D, 8 * K, "data bits must be 8 x byte lanes");
        assert!(K <= TAIL[0].0 && K.is_power_of_two(), "1..=64 lanes, a power of two");
        CrcEngine {
            clock: Signal::default(),
            reset: Signal::default(),
            data: Signal::default(),
            keep: Signal::default(),
            last: Signal::default(),
            valid: Signal::default(),
            crc: Signal::default(),
            crc_valid: Signal::default(),
        }
    }
}

impl<const D: usize, const K: usize> Logic for CrcEngine<D, K> {
    fn update(&mut self) {
        // Verified in Verilator against `wire::icrc::crc32_update` (sim/tests/crc.rs).
    }

    fn connect(&mut self) {
        self.crc.connect();
        self.crc_valid.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(engine_verilog(K))
    }
}

/// The Verilog body of `CrcEngine` at `k` bytes a beat.
fn engine_verilog(k: usize) -> Vec<String> {
    let stages = tail(k);
    let m = stages.len();
    // Stage `i` needs the count's bits up to its own and the bytes its stages and the later ones fold.
    let count_bits = |i: usize| stages[i].1 + 1;
    let data_bytes = |i: usize| stages[i..].iter().map(|s| s.0).sum::<usize>().min(k);
    let nb = count_bits(0);
    let mut v = vec![
        "reg [31:0] state;".to_string(),
        "reg [31:0] body;".into(),
        format!("reg [{}:0] n;", nb - 1),
        "integer i;".into(),
        "always @(*) begin".into(),
        format!("    n = {nb}'d0;"),
        format!("    for (i = 0; i < {k}; i = i + 1) n = n + {{{}'d0, keep[i]}};", nb - 1),
    ];
    v.extend(xor_lines("body", "state", "data", k));
    v.push("end".into());
    for i in 0..=m {
        v.push(format!("reg [31:0] ts{i};\nreg tv{i};"));
        if i < m {
            v.push(format!("reg [{}:0] td{i};\nreg [{}:0] tn{i};", 8 * data_bytes(i) - 1, count_bits(i) - 1));
        }
    }
    v.extend([
        "// Body beats feed back; the last beat enters the tail and clears the register for the next frame."
            .to_string(),
        "always @(posedge clock) begin".into(),
        "    if (valid) state <= last ? 32'd0 : body;".into(),
        "    if (reset) state <= 32'd0;".into(),
        format!("    ts0 <= state; td0 <= data[{}:0]; tn0 <= n; tv0 <= valid & last & !reset;", 8 * data_bytes(0) - 1),
        "end".into(),
    ]);
    for (i, &(bytes, bit)) in stages.iter().enumerate() {
        let j = i + 1;
        v.push(format!("// Tail stage {i}: {bytes} bytes when bit {bit} of the count is set, then shifted off."));
        v.push(format!("reg [31:0] x{i};"));
        v.push("always @(*) begin".into());
        v.extend(xor_lines(&format!("x{i}"), &format!("ts{i}"), &format!("td{i}"), bytes));
        v.push("end".into());
        v.extend([
            "always @(posedge clock) begin".to_string(),
            format!("    ts{j} <= tn{i}[{bit}] ? x{i} : ts{i};"),
            format!("    tv{j} <= tv{i} & !reset;"),
        ]);
        if j < m {
            // The bytes left after this stage's fold, zero-extended to the next stage's width.
            let (have, want) = (data_bytes(i), data_bytes(j));
            let left = have - bytes;
            let shifted = if left >= want {
                format!("td{i}[{}:{}]", 8 * (bytes + want) - 1, 8 * bytes)
            } else if left == 0 {
                format!("{}'d0", 8 * want)
            } else {
                format!("{{{}'d0, td{i}[{}:{}]}}", 8 * (want - left), 8 * (bytes + left) - 1, 8 * bytes)
            };
            v.push(format!("    td{j} <= tn{i}[{bit}] ? {shifted} : td{i}[{}:0];", 8 * want - 1));
            v.push(format!("    tn{j} <= tn{i}[{}:0];", count_bits(j) - 1));
        }
        v.push("end".into());
    }
    v.extend([
        "always @(*) begin".to_string(),
        format!("    crc = ts{m};"),
        format!("    crc_valid = tv{m};"),
        "end".into(),
    ]);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_reproduces_the_crc() {
        // Apply the matrix by hand to a random-ish register and 5 data bytes.
        let (s, data) = (0x1234_5678u32, [0x9Au8, 0xBC, 0xDE, 0xF0, 0x11]);
        let mut o = 0u32;
        for (bit, (sb, db)) in matrix(5).iter().enumerate() {
            let x = sb
                .iter()
                .map(|&i| s >> i & 1)
                .chain(db.iter().map(|&i| u32::from(data[i / 8] >> (i % 8) & 1)))
                .fold(0, |a, b| a ^ b);
            o |= x << bit;
        }
        assert_eq!(o, crc32_update(s, &data));
    }
}
