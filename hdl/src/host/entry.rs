//! `EntryWrite`: one ring entry (a CQE, an EQE) written to host memory through `DmaPlace`, its beats from
//! its low bytes up, so a ring at any address gets the fewest write beats and the entry's last byte (a
//! ring's owner byte) goes in the last of them. Started with the entry (`E` bits, a whole number of beats
//! on a byte bus, or less than one beat: byte `i` at bits `8i+7:8i`) and its address while `idle`. An entry
//! shorter than a beat (an EQE on the 64-byte datapath) is one beat whose `keep` is the entry's bytes.

use crate::host::place::DmaPlace;
use crate::kit::*;

#[derive(LogicBlock)]
pub struct EntryWrite<const D: usize, const K: usize, const E: usize> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    pub start: Signal<In, Bit>,
    pub data: Signal<In, Bits<E>>,
    pub addr: Signal<In, Bits<64>>,
    /// No entry in hand: the last one's beats have all gone to `DmaPlace` (its last write may still wait).
    pub idle: Signal<Out, Bit>,
    /// The posted DMA write beats.
    pub wr_valid: Signal<Out, Bit>,
    pub wr_ready: Signal<In, Bit>,
    pub wr_addr: Signal<Out, Bits<64>>,
    pub wr_data: Signal<Out, Bits<D>>,
    pub wr_strb: Signal<Out, Bits<K>>,
    pub wr_last: Signal<Out, Bit>,
    place: DmaPlace<D, K>,
    /// The entry being written, its next beat in the low bits; the beats left; its address.
    held: DFF<Bits<E>>,
    left: DFF<Bits<8>>,
    at: DFF<Bits<64>>,
    beat_bits: Constant<Bits<16>>,
    beats: Constant<Bits<8>>,
    all_keep: Constant<Bits<K>>,
}

impl<const D: usize, const K: usize, const E: usize> Default for EntryWrite<D, K, E> {
    fn default() -> Self {
        assert!(
            D == 8 * K && (E.is_multiple_of(D) || (E < D && E.is_multiple_of(8))),
            "a beat of {K} bytes is {D} bits and divides the entry's {E}, or holds it"
        );
        let keep = if E < D { (1u64 << (E / 8)) - 1 } else { u64::MAX >> (64 - K) };
        EntryWrite {
            clock: Signal::default(),
            reset: Signal::default(),
            start: Signal::default(),
            data: Signal::default(),
            addr: Signal::default(),
            idle: Signal::default(),
            wr_valid: Signal::default(),
            wr_ready: Signal::default(),
            wr_addr: Signal::default(),
            wr_data: Signal::default(),
            wr_strb: Signal::default(),
            wr_last: Signal::default(),
            place: DmaPlace::default(),
            held: Default::default(),
            left: Default::default(),
            at: Default::default(),
            beat_bits: Constant::new((D as u64).into()),
            beats: Constant::new(((E / D).max(1) as u64).into()),
            all_keep: Constant::new(keep.into()),
        }
    }
}

impl<const D: usize, const K: usize, const E: usize> Logic for EntryWrite<D, K, E> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, held, left, at);
        self.place.clock.next = self.clock.val();
        self.place.reset.next = self.reset.val();
        self.place.in_data.next = bit_cast::<D, E>(self.held.q.val());
        self.place.in_keep.next = self.all_keep.val();
        self.place.in_last.next = self.left.q.val() == 1;
        self.place.in_valid.next = self.left.q.val() != 0;
        self.place.va.next = self.at.q.val();
        self.place.lane.next = 0.into();
        self.wr_valid.next = self.place.wr_valid.val();
        self.place.wr_ready.next = self.wr_ready.val();
        self.wr_addr.next = self.place.wr_addr.val();
        self.wr_data.next = self.place.wr_data.val();
        self.wr_strb.next = self.place.wr_strb.val();
        self.wr_last.next = self.place.wr_last.val();

        self.idle.next = self.left.q.val() == 0;
        if (self.left.q.val() != 0) & self.place.in_ready.val() {
            self.held.d.next = self.held.q.val() >> self.beat_bits.val();
            self.left.d.next = self.left.q.val() - 1;
        }
        if (self.left.q.val() == 0) & self.start.val() {
            self.held.d.next = self.data.val();
            self.at.d.next = self.addr.val();
            self.left.d.next = self.beats.val();
        }
        if self.reset.val() {
            self.left.d.next = 0.into();
        }
    }
}
