//! `Queue<N, A>`: a FIFO of up to `2^A - 1` entries of `N` bits (its writer keeps count) whose RAM is
//! read at a registered address into a register with an enable: the RX records (1,206 bits, in
//! distributed RAM), their steering bits, received ICRCs and ICRC results, the ICRC lanes' beats and
//! lane parameters. rust-hdl's `SynchronousFIFO` works out the read address from `read` and its empty
//! flag within the cycle, and its `RAM` has no read enable; for the records that address fanned out to
//! hundreds of RAM cells across the die, the RX pipeline's longest path. Here the RAM reads at the fetch
//! pointer (a register) whenever its read register is free or being read.
//!
//! The head entry is `data_out`, valid while `valid` (the RAM's read register). `read` takes the head,
//! only while valid, and is a function of registers: a prefetch's `in_read` (`prefetch`), or (the lane queue)
//! the product of two queues' `valid`.
//! For block RAM, with its slow outputs, see `BramQueue`.

use crate::kit::*;

#[derive(LogicBlock)]
pub struct Queue<const N: usize, const A: usize> {
    pub clock: Signal<In, Clock>,
    pub data_in: Signal<In, Bits<N>>,
    pub write: Signal<In, Bit>,
    pub data_out: Signal<Out, Bits<N>>,
    pub valid: Signal<Out, Bit>,
    pub read: Signal<In, Bit>,
    ram: ReadEnableRam<Bits<N>, A>,
    // The write pointer; the next entry to fetch into the read register.
    wp: DFF<Bits<A>>,
    np: DFF<Bits<A>>,
    // The read register holds an entry not yet read.
    hv: DFF<Bit>,
    fetch: Signal<Local, Bit>,
}

impl<const N: usize, const A: usize> Default for Queue<N, A> {
    fn default() -> Self {
        Queue {
            clock: Signal::default(),
            data_in: Signal::default(),
            write: Signal::default(),
            data_out: Signal::default(),
            valid: Signal::default(),
            read: Signal::default(),
            ram: ReadEnableRam::default(),
            wp: DFF::default(),
            np: DFF::default(),
            hv: DFF::default(),
            fetch: Signal::default(),
        }
    }
}

impl<const N: usize, const A: usize> Logic for Queue<N, A> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wp, np, hv);
        self.ram.clock.next = self.clock.val();
        self.ram.write_address.next = self.wp.q.val();
        self.ram.write_data.next = self.data_in.val();
        self.ram.write_enable.next = self.write.val();
        if self.write.val() {
            self.wp.d.next = self.wp.q.val() + 1;
        }
        // The read register loads entry `np` (if written before this clock) when it is free or read now.
        self.fetch.next = !self.hv.q.val() | self.read.val();
        self.ram.read_address.next = self.np.q.val();
        self.ram.read_enable.next = self.fetch.val();
        if self.fetch.val() {
            self.hv.d.next = self.wp.q.val() != self.np.q.val();
            if self.wp.q.val() != self.np.q.val() {
                self.np.d.next = self.np.q.val() + 1;
            }
        }
        self.data_out.next = self.ram.read_data.val();
        self.valid.next = self.hv.q.val();
    }
}

/// A RAM of `2^A` entries with one write port and one registered read port with an enable (rust-hdl's
/// `RAM` reads every clock). Generated Verilog (see `kit`); yosys maps it to distributed or block RAM. What
/// a read of the entry being written in the same clock returns is undefined (`no_rw_check`): every user
/// reads only entries written before, or drops what it read.
#[derive(LogicBlock)]
pub struct ReadEnableRam<T: Synth, const A: usize> {
    pub clock: Signal<In, Clock>,
    pub write_address: Signal<In, Bits<A>>,
    pub write_data: Signal<In, T>,
    pub write_enable: Signal<In, Bit>,
    pub read_address: Signal<In, Bits<A>>,
    pub read_enable: Signal<In, Bit>,
    pub read_data: Signal<Out, T>,
}

impl<T: Synth, const A: usize> Default for ReadEnableRam<T, A> {
    fn default() -> Self {
        ReadEnableRam {
            clock: Signal::default(),
            write_address: Signal::default(),
            write_data: Signal::default(),
            write_enable: Signal::default(),
            read_address: Signal::default(),
            read_enable: Signal::default(),
            read_data: Signal::default(),
        }
    }
}

impl<T: Synth, const A: usize> Logic for ReadEnableRam<T, A> {
    fn update(&mut self) {
        // Verified in Verilator (the sim crate), inside the pipelines that use it.
    }

    fn connect(&mut self) {
        self.read_data.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module([
            // Users never read an entry in the clock it is written (a queue reads only entries written before,
            // or discards what it read), so yosys need not add a bypass for read-during-write.
            format!("(* no_rw_check *) reg [{}:0] mem [0:{}];", T::BITS - 1, (1usize << A) - 1),
            "always @(posedge clock) begin".to_string(),
            "    if (write_enable) mem[write_address] <= write_data;".to_string(),
            "    if (read_enable) read_data <= mem[read_address];".to_string(),
            "end".to_string(),
        ])
    }
}
