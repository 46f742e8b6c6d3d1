//! `Prefetch<N>`: two registers at the read side of a FIFO (a rust-hdl `SynchronousFIFO` or our `Queue`).
//! rust-hdl's FIFO turns `read` into the next read address and the RAM's next output within the cycle, so
//! a `read` computed from deep egress logic makes a long path; here the FIFO is read from registered state
//! only (fewer than two entries held), and the consumer sees `out_data`/`out_valid` from registers and may
//! `pop` every cycle.
//! An entry is `N` data bits and a flag bit (two FIFOs read together, as the frame store's data and
//! `last`; or a `Bit` FIFO). The two entries are a ring (write and read pointers), so a register only ever
//! loads the FIFO's output: no per-bit multiplexer but the one at the output. `HeadPrefetch` has the same
//! ports with the multiplexer moved to the input, for narrow entries read at the head of deep logic. Both
//! count their entries with `Occupancy`.

use crate::kit::*;

#[derive(Clone, Debug, LogicBlock)]
pub struct Prefetch<const N: usize> {
    pub clock: Signal<In, Clock>,
    /// The FIFO's side.
    pub in_data: Signal<In, Bits<N>>,
    pub in_flag: Signal<In, Bit>,
    pub in_empty: Signal<In, Bit>,
    pub in_read: Signal<Out, Bit>,
    /// The consumer's side: the head entry, valid while `out_valid`; `pop` takes it.
    pub out_data: Signal<Out, Bits<N>>,
    pub out_flag: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub pop: Signal<In, Bit>,
    /// `out_valid` as it will be next cycle (for a consumer that registers it).
    pub next_valid: Signal<Out, Bit>,
    r0: DFF<Bits<N>>,
    r1: DFF<Bits<N>>,
    f0: DFF<Bit>,
    f1: DFF<Bit>,
    wp: DFF<Bit>,
    rp: DFF<Bit>,
    occ: Occupancy,
}

impl<const N: usize> Default for Prefetch<N> {
    fn default() -> Self {
        Prefetch {
            clock: Signal::default(),
            in_data: Signal::default(),
            in_flag: Signal::default(),
            in_empty: Signal::default(),
            in_read: Signal::default(),
            out_data: Signal::default(),
            out_flag: Signal::default(),
            out_valid: Signal::default(),
            pop: Signal::default(),
            next_valid: Signal::default(),
            r0: DFF::default(),
            r1: DFF::default(),
            f0: DFF::default(),
            f1: DFF::default(),
            wp: DFF::default(),
            rp: DFF::default(),
            occ: Occupancy::default(),
        }
    }
}

impl<const N: usize> Logic for Prefetch<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, r0, r1, f0, f1, wp, rp);
        clock!(self, clock, occ);
        self.occ.in_empty.next = self.in_empty.val();
        self.occ.pop.next = self.pop.val();
        self.in_read.next = self.occ.take.val();
        self.out_valid.next = self.occ.valid.val();
        self.next_valid.next = self.occ.next_valid.val();
        self.out_data.next = self.r0.q.val();
        self.out_flag.next = self.f0.q.val();
        if self.rp.q.val() {
            self.out_data.next = self.r1.q.val();
            self.out_flag.next = self.f1.q.val();
        }
        if self.occ.take.val() {
            self.wp.d.next = !self.wp.q.val();
            if self.wp.q.val() {
                self.r1.d.next = self.in_data.val();
                self.f1.d.next = self.in_flag.val();
            } else {
                self.r0.d.next = self.in_data.val();
                self.f0.d.next = self.in_flag.val();
            }
        }
        if self.occ.give.val() {
            self.rp.d.next = !self.rp.q.val();
        }
    }
}

/// `HeadPrefetch<N>`: `Prefetch`'s ports, with the head entry always in one register (`h0`, the second in
/// `h1`), so `out_data`/`out_flag` are register outputs with no multiplexer: for the few bits the egress
/// decides by first. The cost moves to the load side (`h0` loads from the FIFO or `h1` as `pop` says), so
/// it suits narrow entries only.
#[derive(Clone, Debug, LogicBlock)]
pub struct HeadPrefetch<const N: usize> {
    pub clock: Signal<In, Clock>,
    pub in_data: Signal<In, Bits<N>>,
    pub in_flag: Signal<In, Bit>,
    pub in_empty: Signal<In, Bit>,
    pub in_read: Signal<Out, Bit>,
    pub out_data: Signal<Out, Bits<N>>,
    pub out_flag: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub pop: Signal<In, Bit>,
    pub next_valid: Signal<Out, Bit>,
    h0: DFF<Bits<N>>,
    h1: DFF<Bits<N>>,
    e0: DFF<Bit>,
    e1: DFF<Bit>,
    occ: Occupancy,
}

impl<const N: usize> Default for HeadPrefetch<N> {
    fn default() -> Self {
        HeadPrefetch {
            clock: Signal::default(),
            in_data: Signal::default(),
            in_flag: Signal::default(),
            in_empty: Signal::default(),
            in_read: Signal::default(),
            out_data: Signal::default(),
            out_flag: Signal::default(),
            out_valid: Signal::default(),
            pop: Signal::default(),
            next_valid: Signal::default(),
            h0: DFF::default(),
            h1: DFF::default(),
            e0: DFF::default(),
            e1: DFF::default(),
            occ: Occupancy::default(),
        }
    }
}

impl<const N: usize> Logic for HeadPrefetch<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, h0, h1, e0, e1);
        clock!(self, clock, occ);
        self.occ.in_empty.next = self.in_empty.val();
        self.occ.pop.next = self.pop.val();
        self.in_read.next = self.occ.take.val();
        self.out_valid.next = self.occ.valid.val();
        self.next_valid.next = self.occ.next_valid.val();
        self.out_data.next = self.h0.q.val();
        self.out_flag.next = self.e0.q.val();
        // The head moves up from `h1`, or is loaded from the FIFO when it is (or is about to be) empty.
        if self.occ.give.val() & self.occ.two.val() {
            self.h0.d.next = self.h1.q.val();
            self.e0.d.next = self.e1.q.val();
        }
        if self.occ.take.val() & (!self.occ.valid.val() | self.occ.give.val()) {
            self.h0.d.next = self.in_data.val();
            self.e0.d.next = self.in_flag.val();
        }
        if self.occ.take.val() & self.occ.valid.val() & !self.occ.give.val() {
            self.h1.d.next = self.in_data.val();
            self.e1.d.next = self.in_flag.val();
        }
    }
}

/// How many entries (0..=2) a prefetch form holds, and the moves that change it: `take` reads the FIFO while
/// it has an entry and there is room, `give` hands the head over on `pop`. `valid` (one or more), `two`
/// (full) and `next_valid` (`valid` as it will be next cycle, with `pop` in the last gate) come out.
#[derive(Clone, Debug, LogicBlock)]
pub struct Occupancy {
    pub clock: Signal<In, Clock>,
    pub in_empty: Signal<In, Bit>,
    pub pop: Signal<In, Bit>,
    pub take: Signal<Out, Bit>,
    pub give: Signal<Out, Bit>,
    pub valid: Signal<Out, Bit>,
    pub two: Signal<Out, Bit>,
    pub next_valid: Signal<Out, Bit>,
    cnt: DFF<Bits<2>>,
}

impl Default for Occupancy {
    fn default() -> Self {
        Occupancy {
            clock: Signal::default(),
            in_empty: Signal::default(),
            pop: Signal::default(),
            take: Signal::default(),
            give: Signal::default(),
            valid: Signal::default(),
            two: Signal::default(),
            next_valid: Signal::default(),
            cnt: DFF::default(),
        }
    }
}

impl Logic for Occupancy {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, cnt);
        self.valid.next = self.cnt.q.val() != 0;
        self.two.next = self.cnt.q.val() == 2;
        self.take.next = !self.in_empty.val() & !self.two.val();
        self.give.next = self.pop.val() & self.valid.val();
        if self.take.val() & !self.give.val() {
            self.cnt.d.next = self.cnt.q.val() + 1;
        }
        if !self.take.val() & self.give.val() {
            self.cnt.d.next = self.cnt.q.val() - 1;
        }
        // Held next cycle: one comes in, two are held, or one is held and stays.
        self.next_valid.next = self.take.val() | self.two.val() | ((self.cnt.q.val() == 1) & !self.pop.val());
    }
}
