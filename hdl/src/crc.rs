//! CRC-32 (the ICRC's polynomial, reflected, raw register: no init or final XOR here) over a stream of `K`
//! bytes per beat.
//!
//! Body beats (all `K` lanes valid) update the register through one `K`-byte XOR matrix; that is the only
//! feedback path. The last beat of a frame, with 1..=K valid bytes, goes down a tail pipeline of stages (see
//! `TAIL`): each folds its bytes in when its bit of the count is set, then shifts them off. The 8 bytes of
//! count bit 3 take two stages of 4, so no tail stage is wider than the 4-byte one at the 8-byte width (one
//! 8-byte fold was six LUT levels, TX's worst path at one placement). One frame can end on every cycle; the
//! result comes out `LATENCY` cycles after the last beat. The matrices are computed from
//! `wire::icrc::crc32_update`, so the RTL and the model share one definition of the CRC.

use crate::kit::*;
use wire::icrc::crc32_update;

/// The tail stages in order: (bytes folded, the bit of the last beat's byte count that enables the stage).
pub const TAIL: [(usize, usize); 8] = [(64, 6), (32, 5), (16, 4), (4, 3), (4, 3), (4, 2), (2, 1), (1, 0)];
/// Cycles from a frame's last beat to its CRC on `crc`/`crc_valid`.
pub const LATENCY: usize = TAIL.len() + 1;

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

/// `o` = the register `s` advanced over the low `bytes` bytes of `d`. A stage wider than the bus is never
/// used and passes `s` through.
#[derive(Clone, Debug, LogicBlock)]
pub struct XorStage<const D: usize> {
    pub s: Signal<In, Bits<32>>,
    pub d: Signal<In, Bits<D>>,
    pub o: Signal<Out, Bits<32>>,
    bytes: Constant<Bits<8>>,
}

impl<const D: usize> XorStage<D> {
    pub fn new(bytes: usize) -> Self {
        XorStage {
            s: Signal::default(),
            d: Signal::default(),
            o: Signal::default(),
            bytes: Constant::new((bytes as u64).into()),
        }
    }

    fn width(&self) -> usize {
        let b = self.bytes.val().to_u64() as usize;
        if 8 * b > D {
            0
        } else {
            b
        }
    }
}

impl<const D: usize> Logic for XorStage<D> {
    fn update(&mut self) {
        let b = self.width();
        let data: Vec<u8> = (0..b).map(|i| bits_u64(self.d.val(), 8 * i, 8) as u8).collect();
        self.o.next = u64::from(crc32_update(self.s.val().to_u64() as u32, &data)).into();
    }

    fn connect(&mut self) {
        self.o.connect();
    }

    fn hdl(&self) -> Verilog {
        let b = self.width();
        let mut lines = vec!["always @(*) begin".to_string()];
        if b == 0 {
            lines.push("    o = s;".into());
        } else {
            for (o, (s, d)) in matrix(b).iter().enumerate() {
                let terms: Vec<String> =
                    s.iter().map(|i| format!("s[{i}]")).chain(d.iter().map(|i| format!("d[{i}]"))).collect();
                // One reduction XOR per output bit: a flat cell for synthesis, not a deep chain.
                let rhs = if terms.is_empty() { "1'b0".to_string() } else { format!("^{{{}}}", terms.join(", ")) };
                lines.push(format!("    o[{o}] = {rhs};"));
            }
        }
        lines.push("end".into());
        custom_module(lines)
    }
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

/// The CRC engine. Inputs: `data`/`keep`/`last`/`valid` of a stream (keep contiguous from lane 0, all lanes
/// set except on a last beat) and a synchronous `reset`. Output: `crc` with a one-cycle `crc_valid` per
/// frame, in frame order. Every frame starts from a zero register (both ICRC users start there, see
/// `rx::lanes`): the register goes back to zero as a frame's last beat is taken, so the feedback path is the
/// register through the body matrix into itself, with nothing in front of the matrix.
///
/// The tail registers are flat fields (`ts`/`td`/`tn`/`tv` = register, data, count, valid of stage `i`):
/// rust-hdl does not connect signals of a child's children, so a per-stage register block cannot be used.
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
    state: DFF<Bits<32>>,
    count: KeepCount<K>,
    body: XorStage<D>,
    ts0: DFF<Bits<32>>,
    td0: DFF<Bits<D>>,
    tn0: DFF<Bits<8>>,
    tv0: DFF<Bit>,
    x0: XorStage<D>,
    ts1: DFF<Bits<32>>,
    td1: DFF<Bits<D>>,
    tn1: DFF<Bits<8>>,
    tv1: DFF<Bit>,
    x1: XorStage<D>,
    ts2: DFF<Bits<32>>,
    td2: DFF<Bits<D>>,
    tn2: DFF<Bits<8>>,
    tv2: DFF<Bit>,
    x2: XorStage<D>,
    ts3: DFF<Bits<32>>,
    td3: DFF<Bits<D>>,
    tn3: DFF<Bits<8>>,
    tv3: DFF<Bit>,
    x3: XorStage<D>,
    ts4: DFF<Bits<32>>,
    td4: DFF<Bits<D>>,
    tn4: DFF<Bits<8>>,
    tv4: DFF<Bit>,
    x4: XorStage<D>,
    ts5: DFF<Bits<32>>,
    td5: DFF<Bits<D>>,
    tn5: DFF<Bits<8>>,
    tv5: DFF<Bit>,
    x5: XorStage<D>,
    ts6: DFF<Bits<32>>,
    td6: DFF<Bits<D>>,
    tn6: DFF<Bits<8>>,
    tv6: DFF<Bit>,
    x6: XorStage<D>,
    ts7: DFF<Bits<32>>,
    td7: DFF<Bits<D>>,
    tn7: DFF<Bits<8>>,
    tv7: DFF<Bit>,
    x7: XorStage<D>,
    ts8: DFF<Bits<32>>,
    td8: DFF<Bits<D>>,
    tn8: DFF<Bits<8>>,
    tv8: DFF<Bit>,
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
            state: DFF::default(),
            count: KeepCount::default(),
            body: XorStage::new(K),
            ts0: DFF::default(),
            td0: DFF::default(),
            tn0: DFF::default(),
            tv0: DFF::default(),
            x0: XorStage::new(TAIL[0].0),
            ts1: DFF::default(),
            td1: DFF::default(),
            tn1: DFF::default(),
            tv1: DFF::default(),
            x1: XorStage::new(TAIL[1].0),
            ts2: DFF::default(),
            td2: DFF::default(),
            tn2: DFF::default(),
            tv2: DFF::default(),
            x2: XorStage::new(TAIL[2].0),
            ts3: DFF::default(),
            td3: DFF::default(),
            tn3: DFF::default(),
            tv3: DFF::default(),
            x3: XorStage::new(TAIL[3].0),
            ts4: DFF::default(),
            td4: DFF::default(),
            tn4: DFF::default(),
            tv4: DFF::default(),
            x4: XorStage::new(TAIL[4].0),
            ts5: DFF::default(),
            td5: DFF::default(),
            tn5: DFF::default(),
            tv5: DFF::default(),
            x5: XorStage::new(TAIL[5].0),
            ts6: DFF::default(),
            td6: DFF::default(),
            tn6: DFF::default(),
            tv6: DFF::default(),
            x6: XorStage::new(TAIL[6].0),
            ts7: DFF::default(),
            td7: DFF::default(),
            tn7: DFF::default(),
            tv7: DFF::default(),
            x7: XorStage::new(TAIL[7].0),
            ts8: DFF::default(),
            td8: DFF::default(),
            tn8: DFF::default(),
            tv8: DFF::default(),
        }
    }
}

impl<const D: usize, const K: usize> Logic for CrcEngine<D, K> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, state, ts0, td0, tn0, tv0, ts1, td1, tn1, tv1, ts2, td2, tn2, tv2, ts3, td3, tn3, tv3, ts4,
            td4, tn4, tv4, ts5, td5, tn5, tv5, ts6, td6, tn6, tv6, ts7, td7, tn7, tv7, ts8, td8, tn8, tv8
        );
        self.count.keep.next = self.keep.val();
        self.body.s.next = self.state.q.val();
        self.body.d.next = self.data.val();
        // Body beats feed back; the last beat enters the tail and clears the register for the next frame.
        self.ts0.d.next = self.state.q.val();
        self.td0.d.next = self.data.val();
        self.tn0.d.next = self.count.n.val();
        self.tv0.d.next = self.valid.val() & self.last.val() & !self.reset.val();
        if self.valid.val() {
            self.state.d.next = self.body.o.val();
            if self.last.val() {
                self.state.d.next = 0.into();
            }
        }
        if self.reset.val() {
            self.state.d.next = 0.into();
        }
        // Tail stage 0: 64 bytes.
        self.x0.s.next = self.ts0.q.val();
        self.x0.d.next = self.td0.q.val();
        self.ts1.d.next = self.ts0.q.val();
        self.td1.d.next = self.td0.q.val();
        if self.tn0.q.val().get_bit(6) {
            self.ts1.d.next = self.x0.o.val();
            self.td1.d.next = self.td0.q.val() >> 512;
        }
        self.tn1.d.next = self.tn0.q.val();
        self.tv1.d.next = self.tv0.q.val() & !self.reset.val();
        // Tail stage 1: 32 bytes.
        self.x1.s.next = self.ts1.q.val();
        self.x1.d.next = self.td1.q.val();
        self.ts2.d.next = self.ts1.q.val();
        self.td2.d.next = self.td1.q.val();
        if self.tn1.q.val().get_bit(5) {
            self.ts2.d.next = self.x1.o.val();
            self.td2.d.next = self.td1.q.val() >> 256;
        }
        self.tn2.d.next = self.tn1.q.val();
        self.tv2.d.next = self.tv1.q.val() & !self.reset.val();
        // Tail stage 2: 16 bytes.
        self.x2.s.next = self.ts2.q.val();
        self.x2.d.next = self.td2.q.val();
        self.ts3.d.next = self.ts2.q.val();
        self.td3.d.next = self.td2.q.val();
        if self.tn2.q.val().get_bit(4) {
            self.ts3.d.next = self.x2.o.val();
            self.td3.d.next = self.td2.q.val() >> 128;
        }
        self.tn3.d.next = self.tn2.q.val();
        self.tv3.d.next = self.tv2.q.val() & !self.reset.val();
        // Tail stage 3: the first 4 of count bit 3's 8 bytes.
        self.x3.s.next = self.ts3.q.val();
        self.x3.d.next = self.td3.q.val();
        self.ts4.d.next = self.ts3.q.val();
        self.td4.d.next = self.td3.q.val();
        if self.tn3.q.val().get_bit(3) {
            self.ts4.d.next = self.x3.o.val();
            self.td4.d.next = self.td3.q.val() >> 32;
        }
        self.tn4.d.next = self.tn3.q.val();
        self.tv4.d.next = self.tv3.q.val() & !self.reset.val();
        // Tail stage 4: the other 4 of count bit 3's 8 bytes.
        self.x4.s.next = self.ts4.q.val();
        self.x4.d.next = self.td4.q.val();
        self.ts5.d.next = self.ts4.q.val();
        self.td5.d.next = self.td4.q.val();
        if self.tn4.q.val().get_bit(3) {
            self.ts5.d.next = self.x4.o.val();
            self.td5.d.next = self.td4.q.val() >> 32;
        }
        self.tn5.d.next = self.tn4.q.val();
        self.tv5.d.next = self.tv4.q.val() & !self.reset.val();
        // Tail stage 5: 4 bytes.
        self.x5.s.next = self.ts5.q.val();
        self.x5.d.next = self.td5.q.val();
        self.ts6.d.next = self.ts5.q.val();
        self.td6.d.next = self.td5.q.val();
        if self.tn5.q.val().get_bit(2) {
            self.ts6.d.next = self.x5.o.val();
            self.td6.d.next = self.td5.q.val() >> 32;
        }
        self.tn6.d.next = self.tn5.q.val();
        self.tv6.d.next = self.tv5.q.val() & !self.reset.val();
        // Tail stage 6: 2 bytes.
        self.x6.s.next = self.ts6.q.val();
        self.x6.d.next = self.td6.q.val();
        self.ts7.d.next = self.ts6.q.val();
        self.td7.d.next = self.td6.q.val();
        if self.tn6.q.val().get_bit(1) {
            self.ts7.d.next = self.x6.o.val();
            self.td7.d.next = self.td6.q.val() >> 16;
        }
        self.tn7.d.next = self.tn6.q.val();
        self.tv7.d.next = self.tv6.q.val() & !self.reset.val();
        // Tail stage 7: 1 byte.
        self.x7.s.next = self.ts7.q.val();
        self.x7.d.next = self.td7.q.val();
        self.ts8.d.next = self.ts7.q.val();
        self.td8.d.next = self.td7.q.val();
        if self.tn7.q.val().get_bit(0) {
            self.ts8.d.next = self.x7.o.val();
        }
        self.tn8.d.next = self.tn7.q.val();
        self.tv8.d.next = self.tv7.q.val() & !self.reset.val();
        self.crc.next = self.ts8.q.val();
        self.crc_valid.next = self.tv8.q.val();
    }
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
