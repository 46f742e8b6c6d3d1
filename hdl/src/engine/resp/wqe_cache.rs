//! `WqeCache`: the beats of the last receive WQE `RecvWqe` fetched, kept so that the next packets of the same
//! message (the same QP and RQ slot) replay them instead of reading host memory again. The model reads the
//! WQE for every packet of a SEND (`resp::execute`); the WQE is the device's while it is posted, so its
//! bytes cannot change in between, and the replay goes through `RecvWqe` again, so its scatter list is
//! checked against the MR table as it stands for every packet, as the model checks it. A command (which may
//! reset or destroy the QP, or change its RQ or an MR) clears the cache; so does a read that failed or
//! brought more beats than it holds.
//!
//! Filled from the completion beats of a fetch (`fill_start` with the QP and slot, then `fill_*`); `hit`
//! says whether a QP's slot is held; `play` replays the beats, one a cycle from the next.

use crate::kit::*;
use wire::contract::profile::Profile;
use wire::contract::qpc::bits_for;
use wire::contract::wqe::{DATA_SEG_LEN, RECV_DATA};

#[derive(LogicBlock, Default)]
pub struct WqeCache {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// Forget what is held.
    pub clear: Signal<In, Bit>,
    /// A fetch of QP `qpn`'s RQ slot `index` starts; its completion beats follow.
    pub fill_start: Signal<In, Bit>,
    pub qpn: Signal<In, Bits<24>>,
    pub index: Signal<In, Bits<16>>,
    pub fill_valid: Signal<In, Bit>,
    pub fill_data: Signal<In, Bits<64>>,
    pub fill_err: Signal<In, Bit>,
    pub fill_last: Signal<In, Bit>,
    /// QP `qpn`'s slot `index` is held.
    pub hit: Signal<Out, Bit>,
    /// Replay the beats held.
    pub play: Signal<In, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_data: Signal<Out, Bits<64>>,
    pub out_last: Signal<Out, Bit>,
    profile: Param<Profile>,
}

impl WqeCache {
    pub fn new(profile: Profile) -> Self {
        WqeCache { profile: Param(profile), ..Default::default() }
    }
}

impl Logic for WqeCache {
    fn update(&mut self) {
        // Verified in Verilator with the core, in lockstep with the model (driver/tests/rtl_responder.rs).
    }

    fn connect(&mut self) {
        self.hit.connect();
        self.out_valid.connect();
        self.out_data.connect();
        self.out_last.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module(verilog(&self.profile.0))
    }
}

/// The Verilog body of `WqeCache` for profile `p`: as many beats as `RecvWqe` reads at most.
pub fn verilog(p: &Profile) -> Vec<String> {
    let beats = (RECV_DATA + p.max_sge as usize * DATA_SEG_LEN).div_ceil(8) as u32;
    let b = bits_for(beats) as usize;
    vec![
        format!("reg [63:0] mem [0:{}];", beats - 1),
        format!("reg [{}:0] n, wi, ri;", b - 1),
        "reg held, filling, bad, playing;".into(),
        "reg [23:0] t_qpn;\nreg [15:0] t_index;".into(),
        "always @(posedge clock) begin".into(),
        "    if (fill_start) begin".into(),
        "        filling <= 1'b1; held <= 1'b0; bad <= 1'b0; t_qpn <= qpn; t_index <= index;".into(),
        format!("        wi <= {b}'d0;"),
        "    end else if (filling && fill_valid) begin".into(),
        format!("        if (wi < {b}'d{beats}) mem[wi] <= fill_data;"),
        format!("        wi <= wi < {b}'d{beats} ? wi + {b}'d1 : wi;"),
        format!("        if (fill_err || wi == {b}'d{beats}) bad <= 1'b1;"),
        "        if (fill_last) begin".into(),
        format!("            filling <= 1'b0; n <= wi + {b}'d1;"),
        format!("            held <= !bad && !fill_err && wi < {b}'d{beats};"),
        "        end".into(),
        "    end".into(),
        format!("    if (play) begin playing <= 1'b1; ri <= {b}'d0; end"),
        format!("    else if (playing) begin ri <= ri + {b}'d1; if (ri + {b}'d1 == n) playing <= 1'b0; end"),
        "    if (reset || clear) begin held <= 1'b0; filling <= 1'b0; playing <= 1'b0; end".into(),
        "end".into(),
        "always @(*) begin".into(),
        "    hit = held && t_qpn == qpn && t_index == index;".into(),
        "    out_valid = playing;".into(),
        format!("    out_data = mem[ri < {b}'d{beats} ? ri : {b}'d0];"),
        format!("    out_last = playing && ri + {b}'d1 == n;"),
        "end".into(),
    ]
}
