//! `BramQueue<N, A, AP1, M>`: a FIFO of `2^A` entries of `N` data bits and a flag bit for block RAM (the
//! frame stores), read out through a ring the consumer pops. The RAM (`StoreRam`) shows an entry two
//! clocks after its read, from its output register (block RAM outputs without one are slow), which feeds
//! a four-entry ring.
//! Reads are issued only with room in the ring for them and the two in flight, so nothing on the way
//! waits: one entry a clock when the consumer pops every clock.
//!
//! `used` counts the entries in the RAM not yet read out; `almost_full` is `used >= 2^A - M`, for writers
//! that stop `M` entries short of full. The consumer sees `out_data`/`out_flag` while `out_valid`, from
//! the ring's registers; `pop` takes the entry. `out_valid` and `out_flag` are registers of their own (the
//! head entry's, worked out before the clock with `pop` in the last gate), since consumers decide their
//! pops from them.

use crate::kit::*;
use crate::store_ram::StoreRam;

#[derive(LogicBlock)]
pub struct BramQueue<const N: usize, const A: usize, const AP1: usize, const M: u32> {
    pub clock: Signal<In, Clock>,
    pub data_in: Signal<In, Bits<N>>,
    pub flag_in: Signal<In, Bit>,
    pub write: Signal<In, Bit>,
    pub almost_full: Signal<Out, Bit>,
    pub out_data: Signal<Out, Bits<N>>,
    pub out_flag: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub pop: Signal<In, Bit>,
    ram: StoreRam<N, A>,
    used: DFF<Bits<AP1>>,
    af_level: Constant<Bits<AP1>>,
    // The write pointer; the next entry to read; the RAM holds an entry not yet read (`used != 0`, kept as a
    // flag of its own so a read is decided in one gate).
    wp: DFF<Bits<A>>,
    np: DFF<Bits<A>>,
    has: DFF<Bit>,
    fetch: Signal<Local, Bit>,
    // An entry read at the last clock (in the RAM's read register), and one in its output register.
    f0: DFF<Bit>,
    f1: DFF<Bit>,
    // The ring: entries, their flags, write and read slots, entries in it, entries in it or in flight.
    r0: DFF<Bits<N>>,
    r1: DFF<Bits<N>>,
    r2: DFF<Bits<N>>,
    r3: DFF<Bits<N>>,
    g0: DFF<Bit>,
    g1: DFF<Bit>,
    g2: DFF<Bit>,
    g3: DFF<Bit>,
    rw: DFF<Bits<2>>,
    rr: DFF<Bits<2>>,
    cnt: DFF<Bits<3>>,
    held: DFF<Bits<3>>,
    give: Signal<Local, Bit>,
    // The ring is not empty, and the head entry's flag; the flags slots `rr` and `rr + 1` will hold after
    // this clock.
    hv: DFF<Bit>,
    hf: DFF<Bit>,
    rr1: Signal<Local, Bits<2>>,
    at0: Signal<Local, Bit>,
    at1: Signal<Local, Bit>,
}

impl<const N: usize, const A: usize, const AP1: usize, const M: u32> Default for BramQueue<N, A, AP1, M> {
    fn default() -> Self {
        assert_eq!(AP1, A + 1);
        assert!(M >= 1 && (M as u64) < 1u64 << A);
        BramQueue {
            clock: Signal::default(),
            data_in: Signal::default(),
            flag_in: Signal::default(),
            write: Signal::default(),
            almost_full: Signal::default(),
            out_data: Signal::default(),
            out_flag: Signal::default(),
            out_valid: Signal::default(),
            pop: Signal::default(),
            ram: StoreRam::default(),
            used: DFF::default(),
            af_level: Constant::new(((1u64 << A) - M as u64).into()),
            wp: DFF::default(),
            np: DFF::default(),
            has: DFF::default(),
            fetch: Signal::default(),
            f0: DFF::default(),
            f1: DFF::default(),
            r0: DFF::default(),
            r1: DFF::default(),
            r2: DFF::default(),
            r3: DFF::default(),
            g0: DFF::default(),
            g1: DFF::default(),
            g2: DFF::default(),
            g3: DFF::default(),
            rw: DFF::default(),
            rr: DFF::default(),
            cnt: DFF::default(),
            held: DFF::default(),
            give: Signal::default(),
            hv: DFF::default(),
            hf: DFF::default(),
            rr1: Signal::default(),
            at0: Signal::default(),
            at1: Signal::default(),
        }
    }
}

impl<const N: usize, const A: usize, const AP1: usize, const M: u32> Logic for BramQueue<N, A, AP1, M> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, used, wp, np, has, f0, f1, r0, r1, r2, r3, g0, g1, g2, g3, rw, rr, cnt, held, hv, hf);
        self.ram.clock.next = self.clock.val();
        self.ram.write_address.next = self.wp.q.val();
        self.ram.write_data.next = self.data_in.val();
        self.ram.write_enable.next = self.write.val();
        self.ram.write_flag.next = self.flag_in.val();
        if self.write.val() {
            self.wp.d.next = self.wp.q.val() + 1;
        }
        // Read entry `np` if written before this clock and the ring has room for it besides the two in
        // flight (all registers).
        self.fetch.next = self.has.q.val() & (self.held.q.val() < 4);
        self.has.d.next = self.write.val() | (self.used.q.val() > 1) | ((self.used.q.val() == 1) & !self.fetch.val());
        self.ram.read_address.next = self.np.q.val();
        self.ram.read_enable.next = self.fetch.val();
        if self.fetch.val() {
            self.np.d.next = self.np.q.val() + 1;
        }
        if self.write.val() & !self.fetch.val() {
            self.used.d.next = self.used.q.val() + 1;
        }
        if !self.write.val() & self.fetch.val() {
            self.used.d.next = self.used.q.val() - 1;
        }
        self.almost_full.next = self.used.q.val() >= self.af_level.val();
        self.f0.d.next = self.fetch.val();
        self.f1.d.next = self.f0.q.val();
        if self.f1.q.val() {
            self.rw.d.next = self.rw.q.val() + 1;
            if self.rw.q.val() == 0 {
                self.r0.d.next = self.ram.read_data.val();
                self.g0.d.next = self.ram.read_flag.val();
            }
            if self.rw.q.val() == 1 {
                self.r1.d.next = self.ram.read_data.val();
                self.g1.d.next = self.ram.read_flag.val();
            }
            if self.rw.q.val() == 2 {
                self.r2.d.next = self.ram.read_data.val();
                self.g2.d.next = self.ram.read_flag.val();
            }
            if self.rw.q.val() == 3 {
                self.r3.d.next = self.ram.read_data.val();
                self.g3.d.next = self.ram.read_flag.val();
            }
        }
        self.out_valid.next = self.hv.q.val();
        self.out_flag.next = self.hf.q.val();
        self.out_data.next = self.r0.q.val();
        if self.rr.q.val() == 1 {
            self.out_data.next = self.r1.q.val();
        }
        if self.rr.q.val() == 2 {
            self.out_data.next = self.r2.q.val();
        }
        if self.rr.q.val() == 3 {
            self.out_data.next = self.r3.q.val();
        }
        self.rr1.next = self.rr.q.val() + 1;
        self.at0.next = self.g0.q.val();
        if self.rr.q.val() == 1 {
            self.at0.next = self.g1.q.val();
        }
        if self.rr.q.val() == 2 {
            self.at0.next = self.g2.q.val();
        }
        if self.rr.q.val() == 3 {
            self.at0.next = self.g3.q.val();
        }
        if self.f1.q.val() & (self.rw.q.val() == self.rr.q.val()) {
            self.at0.next = self.ram.read_flag.val();
        }
        self.at1.next = self.g0.q.val();
        if self.rr1.val() == 1 {
            self.at1.next = self.g1.q.val();
        }
        if self.rr1.val() == 2 {
            self.at1.next = self.g2.q.val();
        }
        if self.rr1.val() == 3 {
            self.at1.next = self.g3.q.val();
        }
        if self.f1.q.val() & (self.rw.q.val() == self.rr1.val()) {
            self.at1.next = self.ram.read_flag.val();
        }
        // cnt + f1 - give != 0, and the flag of the slot `rr + give`.
        self.hv.d.next = self.f1.q.val() | (self.cnt.q.val() > 1) | ((self.cnt.q.val() == 1) & !self.pop.val());
        self.hf.d.next = self.at0.val();
        if self.pop.val() & self.hv.q.val() {
            self.hf.d.next = self.at1.val();
        }
        self.give.next = self.pop.val() & self.hv.q.val();
        if self.give.val() {
            self.rr.d.next = self.rr.q.val() + 1;
        }
        if self.f1.q.val() & !self.give.val() {
            self.cnt.d.next = self.cnt.q.val() + 1;
        }
        if !self.f1.q.val() & self.give.val() {
            self.cnt.d.next = self.cnt.q.val() - 1;
        }
        if self.fetch.val() & !self.give.val() {
            self.held.d.next = self.held.q.val() + 1;
        }
        if !self.fetch.val() & self.give.val() {
            self.held.d.next = self.held.q.val() - 1;
        }
    }
}
