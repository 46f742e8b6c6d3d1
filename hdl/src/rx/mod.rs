//! The receive datapath: header decode (checks and metadata), and the tops that wrap it.

pub mod decode;
pub mod egress;
pub mod lanes;
pub mod meta;
pub mod pipeline;

use crate::kit::*;
use decode::Decode;

/// The decoder with its outputs registered: one frame header per cycle, results one cycle later.
#[derive(Clone, Debug, Default, LogicBlock)]
pub struct DecodeTop {
    pub clock: Signal<In, Clock>,
    pub hdr: Signal<In, Bits<1024>>,
    pub len: Signal<In, Bits<16>>,
    pub meta: Signal<Out, Bits<{ meta::BITS }>>,
    pub ip_end: Signal<Out, Bits<17>>,
    pub vlan: Signal<Out, Bit>,
    pub ipv6: Signal<Out, Bit>,
    dec: Decode,
    meta_q: DFF<Bits<{ meta::BITS }>>,
    ip_end_q: DFF<Bits<17>>,
}

impl Logic for DecodeTop {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, meta_q, ip_end_q);
        self.dec.hdr.next = self.hdr.val();
        self.dec.len.next = self.len.val();
        self.meta_q.d.next = self.dec.meta.val();
        self.ip_end_q.d.next = self.dec.ip_end.val();
        self.meta.next = self.meta_q.q.val();
        self.ip_end.next = self.ip_end_q.q.val();
        // Combinational, for the ingress of the full RX top.
        self.vlan.next = self.dec.vlan.val();
        self.ipv6.next = self.dec.ipv6.val();
    }
}
