//! Registers at the read side of a FIFO (a rust-hdl `SynchronousFIFO` or our `Queue`), holding up to two
//! entries. rust-hdl's FIFO turns `read` into the next read address and the RAM's next output within the
//! cycle, so a `read` computed from deep egress logic makes a long path; here the FIFO is read from
//! registered state only (`take`), and the consumer sees its entry from registers and may `pop` every cycle.
//!
//! The pieces: `Occupancy` counts the entries held; `Ring` holds them as a ring (write and read slots), so a
//! register only ever loads the FIFO's output and the one multiplexer is at the output; `HeadPair` keeps the
//! head entry in one register, so the output is a register with no multiplexer and the cost moves to the
//! load side (for the few bits a consumer decides by first). Both load a free slot from the FIFO's output
//! whether or not it is read (an entry counts only once `take` has read it), so their load enables are
//! functions of the `Occupancy` flags and `pop`, never of the FIFO's state: with hundreds of bits behind
//! them, the enables are the long nets. `Prefetch<N>` is a ring; `SplitPrefetch<W, H>`
//! holds an entry as `W` ring bits and `H` head bits behind one `Occupancy`, for several FIFOs read together
//! and popped by one signal (one count to update, one `valid` to decide by).

use crate::kit::*;

/// `Occupancy`: how many entries (0..=2) are held, as two flags (`valid`: at least one; two, whose inverse is
/// `room`), and the moves that change it: `take` reads the FIFO while it has an entry and there is room,
/// `give` hands the head over on `pop`. Each flag's next value is one 4-input function of the flags, `in_empty` and `pop`,
/// so a late `pop` meets one gate here.
#[derive(Clone, Debug, Default, LogicBlock)]
pub struct Occupancy {
    pub clock: Signal<In, Clock>,
    pub in_empty: Signal<In, Bit>,
    pub pop: Signal<In, Bit>,
    pub take: Signal<Out, Bit>,
    pub give: Signal<Out, Bit>,
    pub valid: Signal<Out, Bit>,
    pub room: Signal<Out, Bit>,
    one: DFF<Bit>,
    full: DFF<Bit>,
}

impl Logic for Occupancy {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, one, full);
        self.valid.next = self.one.q.val();
        self.room.next = !self.full.q.val();
        self.take.next = !self.in_empty.val() & !self.full.q.val();
        self.give.next = self.pop.val() & self.one.q.val();
        // Held next clock: one comes in, two are held, or one is held and stays.
        self.one.d.next = !self.in_empty.val() | self.full.q.val() | (self.one.q.val() & !self.pop.val());
        // Two next clock: none leaves, and two are held or one is held and another comes in.
        self.full.d.next = !self.pop.val() & (self.full.q.val() | (self.one.q.val() & !self.in_empty.val()));
    }
}

/// `Ring<N>`: two entries in slots `r0`/`r1`; the write slot loads the FIFO's output while there is `room`
/// (it holds no entry then), `take` moves it on, `give` moves the read slot on; `out_data` is the entry at
/// the read slot.
#[derive(Clone, Debug, LogicBlock)]
pub struct Ring<const N: usize> {
    pub clock: Signal<In, Clock>,
    pub in_data: Signal<In, Bits<N>>,
    pub take: Signal<In, Bit>,
    pub give: Signal<In, Bit>,
    pub room: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<N>>,
    r0: DFF<Bits<N>>,
    r1: DFF<Bits<N>>,
    wp: DFF<Bit>,
    rp: DFF<Bit>,
}

impl<const N: usize> Default for Ring<N> {
    fn default() -> Self {
        Ring {
            clock: Signal::default(),
            in_data: Signal::default(),
            take: Signal::default(),
            give: Signal::default(),
            room: Signal::default(),
            out_data: Signal::default(),
            r0: DFF::default(),
            r1: DFF::default(),
            wp: DFF::default(),
            rp: DFF::default(),
        }
    }
}

impl<const N: usize> Logic for Ring<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, r0, r1, wp, rp);
        self.out_data.next = self.r0.q.val();
        if self.rp.q.val() {
            self.out_data.next = self.r1.q.val();
        }
        if self.room.val() {
            if self.wp.q.val() {
                self.r1.d.next = self.in_data.val();
            } else {
                self.r0.d.next = self.in_data.val();
            }
        }
        if self.take.val() {
            self.wp.d.next = !self.wp.q.val();
        }
        if self.give.val() {
            self.rp.d.next = !self.rp.q.val();
        }
    }
}

/// `HeadPair<N>`: the head entry always in `h0`, the second in `h1`. `h0` loads from the FIFO while it holds
/// no entry or hands its entry over, or from `h1` when that holds one; `h1` loads from the FIFO while there
/// is `room`.
#[derive(Clone, Debug, LogicBlock)]
pub struct HeadPair<const N: usize> {
    pub clock: Signal<In, Clock>,
    pub in_data: Signal<In, Bits<N>>,
    pub give: Signal<In, Bit>,
    pub valid: Signal<In, Bit>,
    pub room: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<N>>,
    h0: DFF<Bits<N>>,
    h1: DFF<Bits<N>>,
}

impl<const N: usize> Default for HeadPair<N> {
    fn default() -> Self {
        HeadPair {
            clock: Signal::default(),
            in_data: Signal::default(),
            give: Signal::default(),
            valid: Signal::default(),
            room: Signal::default(),
            out_data: Signal::default(),
            h0: DFF::default(),
            h1: DFF::default(),
        }
    }
}

impl<const N: usize> Logic for HeadPair<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, h0, h1);
        self.out_data.next = self.h0.q.val();
        if !self.valid.val() | self.give.val() {
            self.h0.d.next = self.in_data.val();
        }
        if self.give.val() & !self.room.val() {
            self.h0.d.next = self.h1.q.val();
        }
        if self.room.val() {
            self.h1.d.next = self.in_data.val();
        }
    }
}

/// `Prefetch<N>`: a FIFO read through a `Ring`. The consumer's side: `out_data`, valid while `out_valid`;
/// `pop` takes it.
#[derive(Clone, Debug, LogicBlock)]
pub struct Prefetch<const N: usize> {
    pub clock: Signal<In, Clock>,
    /// The FIFO's side.
    pub in_data: Signal<In, Bits<N>>,
    pub in_empty: Signal<In, Bit>,
    pub in_read: Signal<Out, Bit>,
    /// The consumer's side.
    pub out_data: Signal<Out, Bits<N>>,
    pub out_valid: Signal<Out, Bit>,
    pub pop: Signal<In, Bit>,
    occ: Occupancy,
    ring: Ring<N>,
}

impl<const N: usize> Default for Prefetch<N> {
    fn default() -> Self {
        Prefetch {
            clock: Signal::default(),
            in_data: Signal::default(),
            in_empty: Signal::default(),
            in_read: Signal::default(),
            out_data: Signal::default(),
            out_valid: Signal::default(),
            pop: Signal::default(),
            occ: Occupancy::default(),
            ring: Ring::default(),
        }
    }
}

impl<const N: usize> Logic for Prefetch<N> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, occ, ring);
        self.occ.in_empty.next = self.in_empty.val();
        self.occ.pop.next = self.pop.val();
        self.in_read.next = self.occ.take.val();
        self.out_valid.next = self.occ.valid.val();
        self.ring.in_data.next = self.in_data.val();
        self.ring.take.next = self.occ.take.val();
        self.ring.give.next = self.occ.give.val();
        self.ring.room.next = self.occ.room.val();
        self.out_data.next = self.ring.out_data.val();
    }
}

/// `SplitPrefetch<W, H>`: FIFOs read together (`in_read` reads them all, `in_empty` is any of them empty),
/// each entry held as `W` bits in a `Ring` and `H` bits in a `HeadPair`, popped together.
#[derive(Clone, Debug, LogicBlock)]
pub struct SplitPrefetch<const W: usize, const H: usize> {
    pub clock: Signal<In, Clock>,
    pub in_wide: Signal<In, Bits<W>>,
    pub in_head: Signal<In, Bits<H>>,
    pub in_empty: Signal<In, Bit>,
    pub in_read: Signal<Out, Bit>,
    pub out_wide: Signal<Out, Bits<W>>,
    pub out_head: Signal<Out, Bits<H>>,
    /// A register (`Occupancy`'s flag).
    pub out_valid: Signal<Out, Bit>,
    pub pop: Signal<In, Bit>,
    occ: Occupancy,
    ring: Ring<W>,
    head: HeadPair<H>,
}

impl<const W: usize, const H: usize> Default for SplitPrefetch<W, H> {
    fn default() -> Self {
        SplitPrefetch {
            clock: Signal::default(),
            in_wide: Signal::default(),
            in_head: Signal::default(),
            in_empty: Signal::default(),
            in_read: Signal::default(),
            out_wide: Signal::default(),
            out_head: Signal::default(),
            out_valid: Signal::default(),
            pop: Signal::default(),
            occ: Occupancy::default(),
            ring: Ring::default(),
            head: HeadPair::default(),
        }
    }
}

impl<const W: usize, const H: usize> Logic for SplitPrefetch<W, H> {
    #[hdl_gen]
    fn update(&mut self) {
        clock!(self, clock, occ, ring, head);
        self.occ.in_empty.next = self.in_empty.val();
        self.occ.pop.next = self.pop.val();
        self.in_read.next = self.occ.take.val();
        self.out_valid.next = self.occ.valid.val();
        self.ring.in_data.next = self.in_wide.val();
        self.ring.take.next = self.occ.take.val();
        self.ring.give.next = self.occ.give.val();
        self.ring.room.next = self.occ.room.val();
        self.out_wide.next = self.ring.out_data.val();
        self.head.in_data.next = self.in_head.val();
        self.head.give.next = self.occ.give.val();
        self.head.valid.next = self.occ.valid.val();
        self.head.room.next = self.occ.room.val();
        self.out_head.next = self.head.out_data.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::model::rng::Rng;
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    type Uut = SplitPrefetch<16, 4>;

    /// What the testbench saw: entries popped (wide, head) in order, and in the last phase the cycles with a
    /// pop asked for and the entries given.
    #[derive(Default)]
    struct Seen {
        popped: Vec<(u64, u64)>,
        pushed: Vec<(u64, u64)>,
        steady_cycles: u64,
        steady_gives: u64,
    }

    /// A FIFO model behind the FIFO side (entries arriving at random) and a consumer popping at random:
    /// every entry comes out once, in order, with its wide and head parts together; then, with the FIFO
    /// never empty and a pop every clock, one entry per clock.
    fn run(seed: u64) -> Seen {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let out = seen.clone();
        let mut uut = Uut::default();
        uut.connect_all();
        let mut sim = Simulation::new();
        sim.add_clock(5, |x: &mut Box<Uut>| x.clock.next = !x.clock.val());
        sim.add_testbench(move |mut sim: Sim<Uut>| {
            let mut rng = Rng::new(seed);
            let mut fifo: VecDeque<(u64, u64)> = VecDeque::new();
            let mut x = sim.init()?;
            x.in_empty.next = true;
            for cycle in 0..3000u64 {
                wait_clock_true!(sim, clock, x);
                let steady = cycle >= 2500;
                if (steady || rng.chance(0.4)) && fifo.len() < 8 {
                    let e = (rng.next_u64() & 0xffff, rng.next_u64() & 0xf);
                    fifo.push_back(e);
                    out.lock().unwrap().pushed.push(e);
                }
                let (w, h) = fifo.front().copied().unwrap_or((0, 0));
                x.in_empty.next = fifo.is_empty();
                x.in_wide.next = w.into();
                x.in_head.next = h.into();
                let pop = steady || rng.chance(0.5);
                x.pop.next = pop;
                wait_clock_false!(sim, clock, x);
                let mut s = out.lock().unwrap();
                if x.out_valid.val() && pop {
                    s.popped.push((x.out_wide.val().index() as u64, x.out_head.val().index() as u64));
                }
                if steady && cycle >= 2510 {
                    s.steady_cycles += 1;
                    s.steady_gives += u64::from(x.out_valid.val());
                }
                if x.in_read.val() {
                    fifo.pop_front();
                }
            }
            sim.done(x)
        });
        sim.run(Box::new(uut), 70_000).unwrap();
        Arc::try_unwrap(seen).ok().unwrap().into_inner().unwrap()
    }

    #[test]
    fn split_prefetch_passes_every_entry_in_order_at_one_per_clock() {
        for seed in [0x9f3e_0001u64, 0x9f3e_0002, 0x9f3e_0003] {
            let s = run(seed);
            assert!(s.popped.len() > 1000, "seed {seed:#x}: only {} entries popped", s.popped.len());
            let bad = s.popped.iter().zip(&s.pushed).position(|(a, b)| a != b);
            assert_eq!(bad, None, "seed {seed:#x}: entry out of order or torn at this index");
            assert!(s.pushed.len() - s.popped.len() <= 10, "seed {seed:#x}: entries lost");
            assert_eq!(s.steady_gives, s.steady_cycles, "seed {seed:#x}: not one entry per clock with a full FIFO");
        }
    }
}
