//! `Queue<N, A, AP1, M>`: a FIFO of `2^A` entries of `N` data bits and a flag bit whose RAM is read at a
//! registered address. rust-hdl's `SynchronousFIFO` works out the read address from `read` and its empty
//! flag within the cycle; for the 1,200-bit RX records that address fans out to hundreds of RAM cells
//! across the die, and for the frame stores it chains behind the egress logic: both were the RX
//! pipeline's longest paths. Here the address for the next clock is worked out a cycle ahead from the
//! consumer's `next_room`, so the RAM sees a register.
//!
//! The head entry is `data_out`/`flag_out`, valid while `valid` (the RAM's read register). The consumer
//! is a `Prefetch` ring: `read` is its `in_read` (take the head, only while valid) and `next_room` its
//! `next_room` (it will take a valid head next cycle). `used` counts the entries written and not yet
//! read (in the RAM, the head included); `almost_full` is `used >= 2^A - M`, for writers that stop `M`
//! entries short of full. The writer must not write while `used` is `2^A`.

use crate::kit::*;

#[derive(LogicBlock)]
pub struct Queue<const N: usize, const A: usize, const AP1: usize, const M: u32> {
    pub clock: Signal<In, Clock>,
    pub data_in: Signal<In, Bits<N>>,
    pub flag_in: Signal<In, Bit>,
    pub write: Signal<In, Bit>,
    pub almost_full: Signal<Out, Bit>,
    pub data_out: Signal<Out, Bits<N>>,
    pub flag_out: Signal<Out, Bit>,
    pub valid: Signal<Out, Bit>,
    pub read: Signal<In, Bit>,
    pub next_room: Signal<In, Bit>,
    ram: RAM<Bits<N>, A>,
    fram: RAM<Bit, A>,
    used: DFF<Bits<AP1>>,
    af_level: Constant<Bits<AP1>>,
    // The write pointer; the next entry to fetch; the address the RAM reads at the coming clock.
    wp: DFF<Bits<A>>,
    np: DFF<Bits<A>>,
    ra: DFF<Bits<A>>,
    // The RAM's read register holds entry `np - 1`, not yet read.
    hv: DFF<Bit>,
    fetch: Signal<Local, Bit>,
}

impl<const N: usize, const A: usize, const AP1: usize, const M: u32> Default for Queue<N, A, AP1, M> {
    fn default() -> Self {
        assert_eq!(AP1, A + 1);
        assert!(M >= 1 && (M as u64) < 1u64 << A);
        Queue {
            clock: Signal::default(),
            data_in: Signal::default(),
            flag_in: Signal::default(),
            write: Signal::default(),
            almost_full: Signal::default(),
            data_out: Signal::default(),
            flag_out: Signal::default(),
            valid: Signal::default(),
            read: Signal::default(),
            next_room: Signal::default(),
            ram: RAM::default(),
            fram: RAM::default(),
            used: DFF::default(),
            af_level: Constant::new(((1u64 << A) - M as u64).into()),
            wp: DFF::default(),
            np: DFF::default(),
            ra: DFF::default(),
            hv: DFF::default(),
            fetch: Signal::default(),
        }
    }
}

impl<const N: usize, const A: usize, const AP1: usize, const M: u32> Logic for Queue<N, A, AP1, M> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wp, np, ra, hv, used);
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.fram.read_clock.next = self.clock.val();
        self.fram.write_clock.next = self.clock.val();
        self.ram.write_address.next = self.wp.q.val();
        self.ram.write_data.next = self.data_in.val();
        self.ram.write_enable.next = self.write.val();
        self.fram.write_address.next = self.wp.q.val();
        self.fram.write_data.next = self.flag_in.val();
        self.fram.write_enable.next = self.write.val();
        if self.write.val() {
            self.wp.d.next = self.wp.q.val() + 1;
        }
        if self.write.val() & !self.read.val() {
            self.used.d.next = self.used.q.val() + 1;
        }
        if !self.write.val() & self.read.val() {
            self.used.d.next = self.used.q.val() - 1;
        }
        self.almost_full.next = self.used.q.val() >= self.af_level.val();
        self.ram.read_address.next = self.ra.q.val();
        self.fram.read_address.next = self.ra.q.val();
        self.data_out.next = self.ram.read_data.val();
        self.flag_out.next = self.fram.read_data.val();
        self.valid.next = self.hv.q.val();
        // The read register is free at this clock (`ra` is `np` then): it loads entry `np` if written.
        self.fetch.next = !self.hv.q.val() | self.read.val();
        if self.fetch.val() {
            self.hv.d.next = self.wp.q.val() != self.np.q.val();
            if self.wp.q.val() != self.np.q.val() {
                self.np.d.next = self.np.q.val() + 1;
            }
        }
        // Next cycle's head stays unless it is read then: read it again.
        self.ra.d.next = self.np.d.val();
        if self.hv.d.val() & !self.next_room.val() {
            self.ra.d.next = self.np.d.val() - 1;
        }
    }
}
