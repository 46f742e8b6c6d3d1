//! The receive datapath: the MAC boundary (`ingress`), header decode (checks and metadata), and the tops
//! that wrap it.

pub mod decode;
pub mod egress;
pub mod ingress;
pub mod lanes;
pub mod meta;
pub mod pipeline;

use crate::kit::*;
use decode::Decode;

/// The decoder on its own, for testing: one frame header per cycle, results `decode::LATENCY` cycles later.
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
}

impl Logic for DecodeTop {
    #[hdl_gen]
    fn update(&mut self) {
        self.dec.clock.next = self.clock.val();
        self.dec.hdr.next = self.hdr.val();
        self.dec.len.next = self.len.val();
        self.meta.next = self.dec.meta.val();
        self.ip_end.next = self.dec.ip_end.val();
        self.vlan.next = self.dec.vlan.val();
        self.ipv6.next = self.dec.ipv6.val();
    }
}
