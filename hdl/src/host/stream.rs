//! `DmaStream`: one contiguous host read at a time, streamed out as payload beats (lane 0 first, `keep` on
//! the last), for the TX pipeline: a READ response's payload now, a send WQE's gather later. A read is
//! taken (`start`, while `can_start`) only with room in its queue (`BramQueue`, `2^A` beats of `K` bytes,
//! from `M` up kept free: room for the longest read, `M` beats) for all of it, since completions cannot be
//! held back. Its first completion beat is shown the cycle after it came (`first`, with the read's error
//! flag, `err`; registered, so no path runs from the DMA port to the engine that decides on it); a failed
//! read leaves one beat in the queue, its last, with no lanes kept, so every read ends in a `last` beat
//! (what reads through several streams in turn need to stay in step).

use crate::bram_queue::BramQueue;
use crate::kit::*;
use crate::rx::egress::LaneMask;

#[derive(LogicBlock)]
pub struct DmaStream<const D: usize, const K: usize, const N: usize, const A: usize, const AP1: usize, const M: u32> {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// A read of `len` (1 to `M * K`) bytes at `addr`.
    pub start: Signal<In, Bit>,
    pub addr: Signal<In, Bits<64>>,
    pub len: Signal<In, Bits<16>>,
    /// No read in flight and room for the longest.
    pub can_start: Signal<Out, Bit>,
    /// The DMA read port (a requester of `DmaReadMux`) and its completions.
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<D>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// The read's first completion beat came in the last cycle, and whether the read failed.
    pub first: Signal<Out, Bit>,
    pub err: Signal<Out, Bit>,
    /// The payload beats.
    pub out_data: Signal<Out, Bits<D>>,
    pub out_keep: Signal<Out, Bits<K>>,
    pub out_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    queue: BramQueue<N, A, AP1, M>,
    pack: KeepPack<D, K, N>,
    mask: LaneMask<K>,
    /// The read offered and not yet taken; taken, with beats to come; its first beat seen; it failed; the
    /// bytes still to come.
    pending: DFF<Bit>,
    busy: DFF<Bit>,
    seen: DFF<Bit>,
    bad: DFF<Bit>,
    left: DFF<Bits<16>>,
    at: DFF<Bits<64>>,
    n: DFF<Bits<16>>,
    first_q: DFF<Bit>,
    err_q: DFF<Bit>,
    lanes: Constant<Bits<16>>,
    /// The beat in is kept.
    keep_beat: Signal<Local, Bit>,
}

impl<const D: usize, const K: usize, const N: usize, const A: usize, const AP1: usize, const M: u32> Default
    for DmaStream<D, K, N, A, AP1, M>
{
    fn default() -> Self {
        assert_eq!(N, D + K, "a queue entry holds a beat's data and keep");
        assert_eq!(D, 8 * K);
        assert!(M as usize * K <= 0xFFFF, "the longest read fits the length port");
        DmaStream {
            clock: Signal::default(),
            reset: Signal::default(),
            start: Signal::default(),
            addr: Signal::default(),
            len: Signal::default(),
            can_start: Signal::default(),
            rd_valid: Signal::default(),
            rd_ready: Signal::default(),
            rd_addr: Signal::default(),
            rd_len: Signal::default(),
            cpl_valid: Signal::default(),
            cpl_data: Signal::default(),
            cpl_err: Signal::default(),
            cpl_last: Signal::default(),
            first: Signal::default(),
            err: Signal::default(),
            out_data: Signal::default(),
            out_keep: Signal::default(),
            out_last: Signal::default(),
            out_valid: Signal::default(),
            out_ready: Signal::default(),
            queue: BramQueue::default(),
            pack: KeepPack::default(),
            mask: LaneMask::default(),
            pending: DFF::default(),
            busy: DFF::default(),
            seen: DFF::default(),
            bad: DFF::default(),
            left: DFF::default(),
            at: DFF::default(),
            n: DFF::default(),
            first_q: DFF::default(),
            err_q: DFF::default(),
            lanes: Constant::new((K as u64).into()),
            keep_beat: Signal::default(),
        }
    }
}

impl<const D: usize, const K: usize, const N: usize, const A: usize, const AP1: usize, const M: u32> Logic
    for DmaStream<D, K, N, A, AP1, M>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, pending, busy, seen, bad, left, at, n, first_q, err_q);
        self.can_start.next = !self.pending.q.val() & !self.busy.q.val() & !self.queue.almost_full.val();
        if self.start.val() {
            self.pending.d.next = true;
            self.at.d.next = self.addr.val();
            self.n.d.next = self.len.val();
            self.left.d.next = self.len.val();
        }
        self.rd_valid.next = self.pending.q.val();
        self.rd_addr.next = self.at.q.val();
        self.rd_len.next = self.n.q.val();
        if self.pending.q.val() & self.rd_ready.val() {
            self.pending.d.next = false;
            self.busy.d.next = true;
            self.seen.d.next = false;
        }
        // A completion beat: its lanes up to the bytes left, unless the read failed (its first beat says): then
        // only its last beat, with no lanes.
        self.first_q.d.next = self.cpl_valid.val() & !self.seen.q.val();
        self.err_q.d.next = self.cpl_err.val();
        self.first.next = self.first_q.q.val();
        self.err.next = self.err_q.q.val();
        self.mask.n.next = self.left.q.val();
        self.pack.data.next = self.cpl_data.val();
        self.pack.keep.next = self.mask.keep.val();
        self.keep_beat.next = self.cpl_valid.val();
        if (self.seen.q.val() & self.bad.q.val()) | (!self.seen.q.val() & self.cpl_err.val()) {
            self.pack.keep.next = 0.into();
            self.keep_beat.next = self.cpl_valid.val() & self.cpl_last.val();
        }
        self.queue.clock.next = self.clock.val();
        self.queue.data_in.next = self.pack.joined.val();
        self.queue.flag_in.next = self.cpl_last.val();
        self.queue.write.next = self.keep_beat.val();
        if self.cpl_valid.val() {
            self.seen.d.next = true;
            if !self.seen.q.val() {
                self.bad.d.next = self.cpl_err.val();
            }
            self.left.d.next = 0.into();
            if self.left.q.val() > self.lanes.val() {
                self.left.d.next = self.left.q.val() - self.lanes.val();
            }
            if self.cpl_last.val() {
                self.busy.d.next = false;
            }
        }
        self.pack.entry.next = self.queue.out_data.val();
        self.out_data.next = self.pack.data_out.val();
        self.out_keep.next = self.pack.keep_out.val();
        self.out_last.next = self.queue.out_flag.val();
        self.out_valid.next = self.queue.out_valid.val();
        self.queue.pop.next = self.queue.out_valid.val() & self.out_ready.val();
        if self.reset.val() {
            self.pending.d.next = false;
            self.busy.d.next = false;
            self.first_q.d.next = false;
        }
    }
}

/// A queue entry: a beat's data with its `keep` above it (`joined`), and an entry split again.
#[derive(LogicBlock)]
pub struct KeepPack<const D: usize, const K: usize, const N: usize> {
    pub data: Signal<In, Bits<D>>,
    pub keep: Signal<In, Bits<K>>,
    pub joined: Signal<Out, Bits<N>>,
    pub entry: Signal<In, Bits<N>>,
    pub data_out: Signal<Out, Bits<D>>,
    pub keep_out: Signal<Out, Bits<K>>,
}

impl<const D: usize, const K: usize, const N: usize> Default for KeepPack<D, K, N> {
    fn default() -> Self {
        KeepPack {
            data: Signal::default(),
            keep: Signal::default(),
            joined: Signal::default(),
            entry: Signal::default(),
            data_out: Signal::default(),
            keep_out: Signal::default(),
        }
    }
}

impl<const D: usize, const K: usize, const N: usize> Logic for KeepPack<D, K, N> {
    fn update(&mut self) {
        // Verified in Verilator (sim/tests/dma_stream.rs).
    }

    fn connect(&mut self) {
        self.joined.connect();
        self.data_out.connect();
        self.keep_out.connect();
    }

    fn hdl(&self) -> Verilog {
        custom_module([
            "always @(*) begin".to_string(),
            "    joined = {keep, data};".into(),
            format!("    data_out = entry[{}:0];", D - 1),
            format!("    keep_out = entry[{}:{D}];", N - 1),
            "end".into(),
        ])
    }
}
