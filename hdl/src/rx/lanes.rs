//! Per-byte-lane blocks of the RX ingress, generated as Verilog (see `kit`): the header window capture and
//! the ICRC lane transform.
//!
//! The ICRC is checked on the fly without locating the trailer or realigning the frame. The CRC runs from a
//! zero register over the whole frame start, with bytes `0 .. eth_len - 4` zeroed (a zero register stays
//! zero over zero bytes) and `eth_len - 4 .. eth_len` set to ones (four ones bytes after a zero register are
//! the same as an all-ones initial register, so these two steps stand in for the 8-byte ones pseudo-LRH),
//! then the L3 bytes with `wire::icrc::variant_mask` applied, up to the IP end including the trailer. A
//! correct ICRC leaves `wire::icrc::RESIDUE`.

use super::decode::HDR_BYTES;
use crate::kit::*;
use wire::eth;
use wire::icrc::{variant_mask, IpVersion};

/// Writes each beat of a frame into its place in the 128-byte header window `hdr` (lanes past `keep` as
/// zeros); `last` marks a frame's last beat, so the next one is a frame's first. The place is a one-hot
/// register shifted at each write (no beat number compared), so `write` reaches the window's enables
/// through one gate. Bytes past a short frame's end are left from earlier frames: the decoder checks the
/// length before it looks at a byte (`sim/tests/rx_decode.rs` fills them with noise).
#[derive(Clone, Debug, LogicBlock)]
pub struct HeaderCapture<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub write: Signal<In, Bit>,
    pub last: Signal<In, Bit>,
    pub data: Signal<In, Bits<D>>,
    pub keep: Signal<In, Bits<K>>,
    pub hdr: Signal<Out, Bits<1024>>,
}

impl<const D: usize, const K: usize> Default for HeaderCapture<D, K> {
    fn default() -> Self {
        HeaderCapture {
            clock: Signal::default(),
            write: Signal::default(),
            last: Signal::default(),
            data: Signal::default(),
            keep: Signal::default(),
            hdr: Signal::default(),
        }
    }
}

/// `data` with the lanes `keep` does not cover zeroed.
fn kept_data(k: usize) -> String {
    let lanes: Vec<String> = (0..k).rev().map(|l| format!("{{8{{keep[{l}]}}}}")).collect();
    format!("(data & {{{}}})", lanes.join(", "))
}

impl<const D: usize, const K: usize> Logic for HeaderCapture<D, K> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.hdr.connect();
    }

    fn hdl(&self) -> Verilog {
        let beats = HDR_BYTES.div_ceil(K);
        // `place` has one bit per window beat; all clear past the window.
        let mut v = vec![
            format!("wire [{}:0] kd = {};", D - 1, kept_data(K)),
            format!("reg [{}:0] place = {beats}'d1;", beats - 1),
            format!(
                "always @(posedge clock) if (write) place <= last ? {beats}'d1 : {{place[{}:0], 1'b0}};",
                beats - 2
            ),
        ];
        for b in 0..beats {
            let lo = 8 * K * b;
            let hi = (lo + D).min(8 * HDR_BYTES) - 1;
            let width = hi - lo + 1;
            v.push(format!("always @(posedge clock) if (write && place[{b}]) hdr[{hi}:{lo}] <= kd[{}:0];", width - 1));
        }
        custom_module(v)
    }
}

/// The ICRC transform of a beat (see the module doc) in two registered steps, so no lane compare and byte
/// select share a clock: the first registers, per lane, what the beat's distances (`e`, `d`; see
/// `LaneDistances`) decide, with the beat; the second picks the bytes from those flags. One cycle after a
/// beat is given: `mdata` and `mkeep` for the CRC engine (lanes at or past the IP end dropped), `at_end`
/// when the IP packet ends within the beat, `merged`: the trailer bytes the beat holds, in place in the
/// received ICRC (little-endian, as on the wire), and the beat's `valid` and `last` as `q_valid`, `q_last`.
#[derive(Clone, Debug, LogicBlock)]
pub struct IcrcLanes<const D: usize, const K: usize> {
    pub clock: Signal<In, Clock>,
    pub data: Signal<In, Bits<D>>,
    pub keep: Signal<In, Bits<K>>,
    pub ipv6: Signal<In, Bit>,
    /// The beat's distances (`LaneDistances`), two's complement, saturated.
    pub e: Signal<In, Bits<8>>,
    pub d: Signal<In, Bits<8>>,
    pub valid: Signal<In, Bit>,
    pub last: Signal<In, Bit>,
    pub mdata: Signal<Out, Bits<D>>,
    pub mkeep: Signal<Out, Bits<K>>,
    pub at_end: Signal<Out, Bit>,
    pub merged: Signal<Out, Bits<32>>,
    pub q_valid: Signal<Out, Bit>,
    pub q_last: Signal<Out, Bit>,
}

impl<const D: usize, const K: usize> Default for IcrcLanes<D, K> {
    fn default() -> Self {
        IcrcLanes {
            clock: Signal::default(),
            data: Signal::default(),
            keep: Signal::default(),
            ipv6: Signal::default(),
            e: Signal::default(),
            d: Signal::default(),
            valid: Signal::default(),
            last: Signal::default(),
            mdata: Signal::default(),
            mkeep: Signal::default(),
            at_end: Signal::default(),
            merged: Signal::default(),
            q_valid: Signal::default(),
            q_last: Signal::default(),
        }
    }
}

/// A Verilog condition: the byte in lane `l` sits at one of `offs` from the IP header (`es` = L3 start minus
/// the beat's first frame offset).
fn any_of(offs: &[usize]) -> String {
    if offs.is_empty() {
        return "1'b0".into();
    }
    offs.iter().map(|o| format!("es == l - {o}")).collect::<Vec<_>>().join(" || ")
}

impl<const D: usize, const K: usize> Logic for IcrcLanes<D, K> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.mdata.connect();
        self.mkeep.connect();
        self.at_end.connect();
        self.merged.connect();
        self.q_valid.connect();
        self.q_last.connect();
    }

    fn hdl(&self) -> Verilog {
        let ff = |ip| variant_mask(ip).iter().filter(|m| m.1 == 0xFF).map(|m| m.0).collect::<Vec<_>>();
        let nib6: Vec<usize> = variant_mask(IpVersion::V6).iter().filter(|m| m.1 != 0xFF).map(|m| m.0).collect();
        // The distances are saturated to 8 bits (`LaneDistances`): every constant they meet must lie inside.
        let deepest = [IpVersion::V4, IpVersion::V6]
            .iter()
            .flat_map(|&ip| variant_mask(ip).iter().map(|m| m.0))
            .max()
            .unwrap_or(0);
        assert!(deepest < 127 && K + 4 < 127, "lane distances saturate at 8 bits");
        // Step one compares the beat's two distances with constants only (no adder per lane). Per lane `l`:
        // `zero` (before the ones that stand in for the LRH), `ones` (those ones, as many as the CRC register
        // is wide, or a field the variant mask covers), `nib` (an IPv6 field whose low nibble is masked), and
        // `sel[4 l + t]` (the lane holds ICRC byte `t`).
        let mut v = vec![
            // (one loop variable per always block, so each has a single driver)
            "integer l, n;".to_string(),
            "wire signed [7:0] es = e;".into(),
            "wire signed [7:0] ds = d;".into(),
            format!("reg [{}:0] r_data;", D - 1),
            format!("reg [{}:0] zero, ones, nib;", K - 1),
            format!("reg [{}:0] sel;", 4 * K - 1),
            "initial q_valid = 1'b0;".into(),
            "always @(posedge clock) begin".into(),
            "    r_data <= data;".into(),
            "    q_valid <= valid;".into(),
            "    q_last <= last;".into(),
            format!("    at_end <= ds <= {K};"),
            format!("    for (l = 0; l < {K}; l = l + 1) begin"),
            "        zero[l] <= es > l + 4;".into(),
            format!(
                "        ones[l] <= !(es > l + 4) && (es > l || (ipv6 ? ({}) : ({})));",
                any_of(&ff(IpVersion::V6)),
                any_of(&ff(IpVersion::V4))
            ),
            format!("        nib[l] <= ipv6 && ({});", any_of(&nib6)),
            "        mkeep[l] <= keep[l] && ds > l;".into(),
        ];
        for t in 0..4 {
            v.push(format!("        sel[4 * l + {t}] <= keep[l] && ds == l + {};", 4 - t));
        }
        v.extend([
            "    end".to_string(),
            "end".into(),
            // Step two: each byte from its lane's flags; each ICRC byte is in at most one lane.
            "reg [7:0] b;".into(),
            "always @(*) begin".into(),
            "    merged = 32'h0;".into(),
            format!("    for (n = 0; n < {K}; n = n + 1) begin"),
            "        b = r_data[8*n +: 8];".into(),
            "        if (zero[n]) b = 8'h00;".into(),
            "        else if (ones[n]) b = 8'hff;".into(),
            "        else if (nib[n]) b = b | 8'h0f;".into(),
            "        mdata[8*n +: 8] = b;".into(),
        ]);
        for t in 0..4 {
            v.push(format!(
                "        merged[{}:{}] = merged[{}:{}] | ({{8{{sel[4 * n + {t}]}}}} & r_data[8*n +: 8]);",
                8 * t + 7,
                8 * t,
                8 * t + 7,
                8 * t
            ));
        }
        v.extend(["    end".to_string(), "end".to_string()]);
        custom_module(v)
    }
}

/// The two distances the ICRC lanes compare against, for beat `beat`: to the L3 start (`e`, from `vlan` and
/// the beat's first frame offset) and to the IP end (`d`, from `rest`: the IP end minus that offset, 19-bit
/// two's complement, which the pipelines work out each their own way), as 8-bit two's complement saturated
/// at -128 and 127: the lanes compare them only with constants from minus the largest masked offset (52) to
/// K + 4 (asserted where the lanes are generated), so saturating changes no comparison and keeps each one
/// to a few gates. A block of its own so the pipelines can register them ahead of the lanes.
#[derive(Clone, Debug, LogicBlock)]
pub struct LaneDistances<const K: usize> {
    pub beat: Signal<In, Bits<16>>,
    pub vlan: Signal<In, Bit>,
    pub rest: Signal<In, Bits<19>>,
    pub e: Signal<Out, Bits<8>>,
    pub d: Signal<Out, Bits<8>>,
}

impl<const K: usize> Default for LaneDistances<K> {
    fn default() -> Self {
        LaneDistances {
            beat: Signal::default(),
            vlan: Signal::default(),
            rest: Signal::default(),
            e: Signal::default(),
            d: Signal::default(),
        }
    }
}

impl<const K: usize> Logic for LaneDistances<K> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate).
    }

    fn connect(&mut self) {
        self.e.connect();
        self.d.connect();
    }

    fn hdl(&self) -> Verilog {
        let shift = K.trailing_zeros();
        let (l3, l3_vlan) = (eth::HEADER_LEN, eth::HEADER_LEN + eth::VLAN_LEN);
        custom_module([
            format!("wire [7:0] base = beat[7:0] << {shift};"),
            // (only its low byte is kept, so only that is worked out)
            "wire [7:0] ef = (vlan ? 8'd".to_string() + &format!("{l3_vlan} : 8'd{l3}) - base;"),
            // `e` is at most the L3 start (< 128): it leaves the range only below, when the offset > L3 start
            // + 128, which the beat number tells beside the subtraction. `d` is in range when the bits above
            // the low seven are all copies of the sign (no comparator chain).
            format!("wire e_in = beat <= (vlan ? 16'd{} : 16'd{});", (l3_vlan + 128) >> shift, (l3 + 128) >> shift),
            "wire d_in = rest[18:7] == 12'h000 || rest[18:7] == 12'hfff;".to_string(),
            "always @(*) e = e_in ? ef : 8'h80;".to_string(),
            "always @(*) d = d_in ? rest[7:0] : rest[18] ? 8'h80 : 8'h7f;".to_string(),
        ])
    }
}
