//! The TX pipeline: a metadata record (the RX layout) and its payload stream (lane-0 aligned) in; the
//! frame `wire`'s emit makes out.
//!
//! Assembly: beat by beat, the header image (from the pipelined builder, `header`, which readies the next
//! frame's header while this one is assembled) with the payload funnel-shifted in behind it, pad and a
//! four-byte ICRC placeholder as zeros; each beat is registered, then goes into the frame store and through
//! the ICRC lanes (`rx::lanes`: two registered steps, covering up to the placeholder), registered again, into
//! the CRC engine. Egress: a stored frame goes out with the ICRC written over the placeholder: once its ICRC is
//! known, or, for a frame whose ICRC starts at least `EARLY_BEATS` beats in, as soon as it is stored whole (the
//! ICRC comes a fixed number of cycles after the frame's last beat is stored, fewer than those beats take to
//! go out, so no beat ever waits for it: the stream never pauses mid-frame).
//! A raw frame (a record with verdict `NotRoce`: the payload is the frame) goes the same way, with no header,
//! zeros to the Ethernet minimum and no ICRC written: its length queue entry says so (bit 16).

use super::header::TxHeader;
use super::lanes::{IcrcInsert, KeepData};
use crate::bram_queue::BramQueue;
use crate::crc::CrcEngine;
use crate::kit::*;
use crate::prefetch::Prefetch;
use crate::rx::egress::{Funnel, LaneMask};
use crate::rx::lanes::{IcrcLanes, LaneDistances};
use crate::rx::meta;
use crate::top::TX_STORE_MARGIN;

#[derive(LogicBlock)]
pub struct Tx<const D: usize, const K: usize, const A: usize, const AP1: usize, const Q: usize, const QP1: usize> {
    pub clock: Signal<In, Clock>,
    pub meta: Signal<In, Bits<{ meta::BITS }>>,
    pub meta_valid: Signal<In, Bit>,
    pub meta_ready: Signal<Out, Bit>,
    pub pay_data: Signal<In, Bits<D>>,
    pub pay_keep: Signal<In, Bits<K>>,
    pub pay_last: Signal<In, Bit>,
    pub pay_valid: Signal<In, Bit>,
    pub pay_ready: Signal<Out, Bit>,
    pub out_data: Signal<Out, Bits<D>>,
    pub out_keep: Signal<Out, Bits<K>>,
    pub out_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    // Assembly.
    j: DFF<Bits<16>>,
    // j + 1 (`j1`) kept beside j, so no compare waits on an adder; held with bit 0 inverted (`jp`), so its
    // power-on zero stands for 1.
    jp: DFF<Bits<16>>,
    j1: Signal<Local, Bits<16>>,
    one: Constant<Bits<16>>,
    // j != 0; and for j != 0 whether beat j is past the header (worked out the cycle before).
    jnz: DFF<Bit>,
    hp: DFF<Bit>,
    past: Signal<Local, Bit>,
    next_past: Signal<Local, Bit>,
    jlast: Signal<Local, Bits<16>>,
    left_after: Signal<Local, Bits<16>>,
    prev: DFF<Bits<D>>,
    left: DFF<Bits<16>>,
    // left > K and left != 0, registered with it; the same for the payload left now (`left_now`), and
    // whether any is left after this beat.
    left_gt: DFF<Bit>,
    left_nz: DFF<Bit>,
    gt_now: Signal<Local, Bit>,
    nz_now: Signal<Local, Bit>,
    more: Signal<Local, Bit>,
    frames: DFF<Bits<8>>,
    // Registered: room in the store for a beat, room in the length and ICRC queues for a frame; a header
    // held with those rooms (`gate`), and whether beat j takes payload (`need_pay`), from their next values.
    store_room: DFF<Bit>,
    frame_room: DFF<Bit>,
    gate: DFF<Bit>,
    need_pay: DFF<Bit>,
    hdr: TxHeader<D>,
    // The header image's beat `j`, registered: loaded a cycle ahead (beat j + 1, which the builder's held
    // bank gives as `next_beat` as it steps with each beat, or the first beat of the header held next).
    hb: DFF<Bits<D>>,
    // j is the frame's last beat (registered with j).
    jl: DFF<Bit>,
    kd: KeepData<D, K>,
    funnel: Funnel<D>,
    amask: LaneMask<K>,
    left_now: Signal<Local, Bits<16>>,
    base: Signal<Local, Bits<16>>,
    h: Signal<Local, Bits<16>>,
    kmh: Signal<Local, Bits<16>>,
    j0: Signal<Local, Bits<16>>,
    can: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    last: Signal<Local, Bit>,
    cur: Signal<Local, Bits<D>>,
    asm: Signal<Local, Bits<D>>,
    lanes_k: Constant<Bits<16>>,
    lanes_2k: Constant<Bits<16>>,
    lane_mask: Constant<Bits<16>>,
    lane_shift: Constant<Bits<16>>,
    // The assembled beat, registered.
    a_valid: DFF<Bit>,
    a_data: DFF<Bits<D>>,
    // The frame's bytes from this beat on (flen - j K); the beat's keep is worked out from it after the register.
    a_bytes: DFF<Bits<16>>,
    a_last: DFF<Bit>,
    a_flen: DFF<Bits<16>>,
    a_raw: DFF<Bit>,
    a_ipv6: DFF<Bit>,
    // The beat's ICRC lane distances (up to the placeholder).
    ldist: LaneDistances<K>,
    a_e: DFF<Bits<8>>,
    a_d: DFF<Bits<8>>,
    // The distance from this beat to the placeholder (`LaneDistances::rest`): the header's at a frame's first
    // beat, counted down by K a beat (`dnext`, for the beat after), so no subtraction from the beat offset.
    rest: Signal<Local, Bits<19>>,
    dnext: DFF<Bits<19>>,
    // ICRC: the lanes' output registered in front of the engine.
    lanes: IcrcLanes<D, K>,
    e_data: DFF<Bits<D>>,
    e_keep: DFF<Bits<K>>,
    e_last: DFF<Bit>,
    e_valid: DFF<Bit>,
    engine: CrcEngine<D, K>,
    crc_done: DFF<Bit>,
    // Store and egress.
    sd: BramQueue<D, A, AP1, TX_STORE_MARGIN>,
    // The frame's length, and whether it is raw (bit 16).
    lq: SynchronousFIFO<Bits<17>, Q, QP1, 1>,
    xq: SynchronousFIFO<Bits<32>, Q, QP1, 1>,
    frames_max: Constant<Bits<8>>,
    lq_p: Prefetch<17>,
    o_flen: Signal<Local, Bits<16>>,
    xq_p: Prefetch<32>,
    ob: DFF<Bits<16>>,
    ins: IcrcInsert<D, K>,
    omask: LaneMask<K>,
    // The beat needs the ICRC (its bytes reach past `flen - 4`; a frame's last beat pops it); the frame may
    // start before its ICRC is known.
    ob_end: Signal<Local, Bits<16>>,
    need_x: Signal<Local, Bit>,
    early: Signal<Local, Bit>,
    icrc_bytes: Constant<Bits<16>>,
    early_bytes: Constant<Bits<16>>,
    have: Signal<Local, Bit>,
    send: Signal<Local, Bit>,
}

/// A frame whose ICRC starts this many beats in (or later) goes out once stored whole, before its ICRC is
/// known. The ICRC reaches its queue's output a fixed number of cycles after the frame's last beat is
/// assembled (two lane steps, a register, the CRC engine: 6 cycles at 8 bytes, 9 at 64, the queue and its
/// prefetch), and the frame's first beat leaves 2 cycles after that beat at the earliest, so the beats before
/// the ICRC's cover the wait. `sim/tests/tx.rs` fails on any pause mid-frame: with 8 its 64-byte case does
/// (the 8-byte one passes); 16 covers both widths with a margin.
pub const EARLY_BEATS: u64 = 16;

impl<const D: usize, const K: usize, const A: usize, const AP1: usize, const Q: usize, const QP1: usize> Default
    for Tx<D, K, A, AP1, Q, QP1>
{
    fn default() -> Self {
        assert_eq!(D, 8 * K, "data bits must be 8 x byte lanes");
        assert_eq!(AP1, A + 1);
        assert_eq!(QP1, Q + 1);
        Tx {
            clock: Signal::default(),
            meta: Signal::default(),
            meta_valid: Signal::default(),
            meta_ready: Signal::default(),
            pay_data: Signal::default(),
            pay_keep: Signal::default(),
            pay_last: Signal::default(),
            pay_valid: Signal::default(),
            pay_ready: Signal::default(),
            out_data: Signal::default(),
            out_keep: Signal::default(),
            out_last: Signal::default(),
            out_valid: Signal::default(),
            out_ready: Signal::default(),
            j: DFF::default(),
            jp: DFF::default(),
            j1: Signal::default(),
            one: Constant::new(1u64.into()),
            jnz: DFF::default(),
            hp: DFF::default(),
            past: Signal::default(),
            next_past: Signal::default(),
            jlast: Signal::default(),
            left_after: Signal::default(),
            prev: DFF::default(),
            left: DFF::default(),
            left_gt: DFF::default(),
            left_nz: DFF::default(),
            gt_now: Signal::default(),
            nz_now: Signal::default(),
            more: Signal::default(),
            frames: DFF::default(),
            store_room: DFF::default(),
            frame_room: DFF::default(),
            gate: DFF::default(),
            need_pay: DFF::default(),
            hdr: TxHeader::default(),
            hb: DFF::default(),
            jl: DFF::default(),
            kd: KeepData::default(),
            funnel: Funnel::default(),
            amask: LaneMask::default(),
            left_now: Signal::default(),
            base: Signal::default(),
            h: Signal::default(),
            kmh: Signal::default(),
            j0: Signal::default(),
            can: Signal::default(),
            take: Signal::default(),
            last: Signal::default(),
            cur: Signal::default(),
            asm: Signal::default(),
            lanes_k: Constant::new((K as u64).into()),
            lanes_2k: Constant::new((2 * K as u64).into()),
            lane_mask: Constant::new((K as u64 - 1).into()),
            lane_shift: Constant::new(u64::from(K.trailing_zeros()).into()),
            a_valid: DFF::default(),
            a_data: DFF::default(),
            a_bytes: DFF::default(),
            a_last: DFF::default(),
            a_flen: DFF::default(),
            a_raw: DFF::default(),
            a_ipv6: DFF::default(),
            ldist: LaneDistances::default(),
            a_e: DFF::default(),
            a_d: DFF::default(),
            rest: Signal::default(),
            dnext: DFF::default(),
            lanes: IcrcLanes::default(),
            e_data: DFF::default(),
            e_keep: DFF::default(),
            e_last: DFF::default(),
            e_valid: DFF::default(),
            engine: CrcEngine::default(),
            crc_done: DFF::default(),
            sd: Default::default(),
            lq: Default::default(),
            xq: Default::default(),
            frames_max: Constant::new(((1u64 << Q) - 5).into()),
            lq_p: Prefetch::default(),
            o_flen: Signal::default(),
            xq_p: Prefetch::default(),
            ob: DFF::default(),
            ins: IcrcInsert::default(),
            omask: LaneMask::default(),
            ob_end: Signal::default(),
            need_x: Signal::default(),
            early: Signal::default(),
            icrc_bytes: Constant::new(4u64.into()),
            early_bytes: Constant::new((EARLY_BEATS * K as u64 + 4).into()),
            have: Signal::default(),
            send: Signal::default(),
        }
    }
}

impl<const D: usize, const K: usize, const A: usize, const AP1: usize, const Q: usize, const QP1: usize> Logic
    for Tx<D, K, A, AP1, Q, QP1>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, j, jp, jnz, hp, hb, jl, prev, left, left_gt, left_nz, frames, store_room, frame_room, gate,
            need_pay, crc_done, ob
        );
        dff_setup!(
            self, clock, a_valid, a_data, a_bytes, a_last, a_flen, a_raw, a_ipv6, a_e, a_d, dnext, e_data, e_keep,
            e_last, e_valid
        );
        clock!(self, clock, hdr, lanes, engine, sd, lq, xq, lq_p, xq_p);

        // ---- Assembly ----
        // The header pipeline takes records as they come and holds the one being assembled (`gate` registers
        // `hdr.valid_next`).
        self.hdr.meta.next = self.meta.val();
        self.hdr.in_valid.next = self.meta_valid.val();
        self.meta_ready.next = self.hdr.in_ready.val();
        self.left_now.next = self.left.q.val();
        self.gt_now.next = self.left_gt.q.val();
        self.nz_now.next = self.left_nz.q.val();
        if !self.jnz.q.val() {
            self.left_now.next = self.hdr.plen.val();
            self.gt_now.next = self.hdr.plen_gt.val();
            self.nz_now.next = self.hdr.plen_nz.val();
        }
        self.base.next = self.j.q.val() << self.lane_shift.val();
        self.h.next = self.hdr.hlen.val() & self.lane_mask.val();
        self.j0.next = self.hdr.hlen.val() >> self.lane_shift.val();
        self.past.next = self.hdr.hfit.val();
        if self.jnz.q.val() {
            self.past.next = self.hp.q.val();
        }
        self.j1.next = self.jp.q.val() ^ self.one.val();
        self.next_past.next = self.j1.val() >= self.j0.val();
        // A frame starts only with room in the length and ICRC queues (at most 2^Q - 4 frames between
        // assembly and egress; they hold 2^Q); a beat is assembled only with room for it in the store
        // besides the beats on their way in. Both flags are registered: `frames` moves by one a cycle, so
        // `frame_room` compares against one less. `gate` is the product with the header held, registered.
        self.store_room.d.next = !self.sd.almost_full.val();
        self.frame_room.d.next = self.frames.q.val() < self.frames_max.val();
        self.can.next = self.gate.q.val() & (!self.need_pay.q.val() | self.pay_valid.val());
        self.jlast.next = self.hdr.last_byte.val() >> self.lane_shift.val();
        self.last.next = self.jl.q.val();
        self.take.next = self.can.val() & self.last.val();
        self.hdr.take.next = self.take.val();
        self.hdr.step.next = self.can.val() & !self.last.val();
        self.pay_ready.next = self.can.val() & self.need_pay.q.val();
        // Payload bytes left after this beat, and whether the next beat takes payload.
        self.left_after.next = self.left_now.val();
        self.more.next = self.nz_now.val();
        if self.need_pay.q.val() {
            self.left_after.next = 0.into();
            if self.gt_now.val() {
                self.left_after.next = self.left_now.val() - self.lanes_k.val();
            }
            self.more.next = self.gt_now.val();
        }
        self.kd.data.next = self.pay_data.val();
        self.kd.keep.next = self.pay_keep.val();
        self.cur.next = 0.into();
        if self.need_pay.q.val() {
            self.cur.next = self.kd.out.val();
        }
        self.funnel.lo.next = self.prev.q.val();
        self.funnel.hi.next = self.cur.val();
        self.kmh.next = self.lanes_k.val() - self.h.val();
        self.funnel.shift.next = self.kmh.val().get_bits::<8>(0);
        self.asm.next = self.hb.q.val();
        if self.past.val() {
            self.asm.next = self.hb.q.val() | self.funnel.out.val();
        }
        self.a_valid.d.next = self.can.val();
        self.a_data.d.next = self.asm.val();
        self.a_bytes.d.next = self.hdr.flen.val() - self.base.val();
        self.a_last.d.next = self.last.val();
        self.a_flen.d.next = self.hdr.flen.val();
        self.a_raw.d.next = self.hdr.raw.val();
        self.a_ipv6.d.next = self.hdr.ipv6.val();
        self.ldist.beat.next = self.j.q.val();
        self.ldist.vlan.next = self.hdr.vlan.val();
        self.rest.next = self.dnext.q.val();
        if !self.jnz.q.val() {
            self.rest.next = bit_cast::<19, 17>(self.hdr.crc_end.val());
        }
        self.ldist.rest.next = self.rest.val();
        self.a_e.d.next = self.ldist.e.val();
        self.a_d.d.next = self.ldist.d.val();
        self.hp.d.next = self.past.val();
        if !self.jnz.q.val() {
            self.hb.d.next = self.hdr.first_self.val();
            self.jl.d.next = self.hdr.single_self.val();
            self.need_pay.d.next = self.hdr.pay0_self.val();
        }
        if self.can.val() {
            self.hb.d.next = self.hdr.next_beat.val();
            self.jl.d.next = self.j1.val() == self.jlast.val();
            if self.last.val() {
                self.hb.d.next = self.hdr.first_other.val();
                self.jl.d.next = self.hdr.single_other.val();
            }
            self.j.d.next = self.j1.val();
            self.jp.d.next = (self.j1.val() + 1) ^ self.one.val();
            self.jnz.d.next = true;
            self.dnext.d.next = self.rest.val() - bit_cast::<19, 16>(self.lanes_k.val());
            self.hp.d.next = self.next_past.val();
            self.need_pay.d.next = self.next_past.val() & self.more.val();
            if self.past.val() {
                self.prev.d.next = self.cur.val();
            }
            self.left.d.next = self.left_after.val();
            // left_after > K, from left_now (one compare, beside the subtraction).
            self.left_gt.d.next = self.left_now.val() > self.lanes_k.val();
            if self.need_pay.q.val() {
                self.left_gt.d.next = self.left_now.val() > self.lanes_2k.val();
            }
            self.left_nz.d.next = self.more.val();
            if self.last.val() {
                self.j.d.next = 0.into();
                self.jp.d.next = 0.into();
                self.jnz.d.next = false;
                self.prev.d.next = 0.into();
                self.need_pay.d.next = self.hdr.pay0_other.val();
            }
        }
        self.gate.d.next =
            self.hdr.valid_next.val() & self.store_room.d.val() & (self.jnz.d.val() | self.frame_room.d.val());
        self.sd.data_in.next = self.a_data.q.val();
        self.sd.flag_in.next = self.a_last.q.val();
        self.sd.write.next = self.a_valid.q.val();
        self.lq.data_in.next = bit_cast::<17, 16>(self.a_flen.q.val()).replace_bit(16, self.a_raw.q.val());
        self.lq.write.next = self.a_valid.q.val() & self.a_last.q.val();

        // ---- ICRC: over everything before the placeholder ----
        self.lanes.data.next = self.a_data.q.val();
        self.amask.n.next = self.a_bytes.q.val();
        self.lanes.keep.next = self.amask.keep.val();
        self.lanes.ipv6.next = self.a_ipv6.q.val();
        self.lanes.e.next = self.a_e.q.val();
        self.lanes.d.next = self.a_d.q.val();
        self.lanes.valid.next = self.a_valid.q.val();
        self.lanes.last.next = self.a_last.q.val();
        self.e_data.d.next = self.lanes.mdata.val();
        self.e_keep.d.next = self.lanes.mkeep.val();
        self.e_last.d.next = self.lanes.at_end.val();
        self.e_valid.d.next = self.lanes.q_valid.val() & !self.crc_done.q.val();
        if self.lanes.q_valid.val() {
            self.crc_done.d.next = !self.lanes.q_last.val() & (self.crc_done.q.val() | self.lanes.at_end.val());
        }
        self.engine.reset.next = false;
        self.engine.data.next = self.e_data.q.val();
        self.engine.keep.next = self.e_keep.q.val();
        self.engine.last.next = self.e_last.q.val();
        self.engine.valid.next = self.e_valid.q.val();
        self.xq.data_in.next = !self.engine.crc.val();
        self.xq.write.next = self.engine.crc_valid.val();

        // ---- Egress: the store (its `BramQueue` ring) and the length and ICRC queues (`Prefetch`) read through registers ----
        self.lq_p.in_data.next = self.lq.data_out.val();
        self.lq_p.in_empty.next = self.lq.empty.val();
        self.lq.read.next = self.lq_p.in_read.val();
        self.xq_p.in_data.next = self.xq.data_out.val();
        self.xq_p.in_empty.next = self.xq.empty.val();
        self.xq.read.next = self.xq_p.in_read.val();
        self.o_flen.next = self.lq_p.out_data.val().get_bits::<16>(0);
        self.ob_end.next = (self.ob.q.val() + 1) << self.lane_shift.val();
        self.need_x.next = (self.ob_end.val() + self.icrc_bytes.val()) > self.o_flen.val();
        self.early.next = (self.ob.q.val() != 0) | (self.o_flen.val() >= self.early_bytes.val());
        self.have.next = self.lq_p.out_valid.val()
            & self.sd.out_valid.val()
            & (self.xq_p.out_valid.val() | (!self.need_x.val() & self.early.val()));
        self.ins.data.next = self.sd.out_data.val();
        self.ins.beat.next = self.ob.q.val();
        // A raw frame has no ICRC: a length of 0 puts none of it in any beat.
        self.ins.flen.next = self.o_flen.val();
        if self.lq_p.out_data.val().get_bit(16) {
            self.ins.flen.next = 0.into();
        }
        self.ins.icrc.next = self.xq_p.out_data.val();
        self.omask.n.next = self.o_flen.val() - (self.ob.q.val() << self.lane_shift.val());
        self.out_data.next = self.ins.out.val();
        self.out_keep.next = self.omask.keep.val();
        self.out_last.next = self.sd.out_flag.val();
        self.out_valid.next = self.have.val();
        self.send.next = self.have.val() & self.out_ready.val();
        self.sd.pop.next = self.send.val();
        self.lq_p.pop.next = self.send.val() & self.sd.out_flag.val();
        self.xq_p.pop.next = self.send.val() & self.sd.out_flag.val();
        if self.send.val() {
            self.ob.d.next = self.ob.q.val() + 1;
            if self.sd.out_flag.val() {
                self.ob.d.next = 0.into();
            }
        }
        self.frames.d.next = self.frames.q.val();
        if self.take.val() & !(self.send.val() & self.sd.out_flag.val()) {
            self.frames.d.next = self.frames.q.val() + 1;
        }
        if !self.take.val() & (self.send.val() & self.sd.out_flag.val()) {
            self.frames.d.next = self.frames.q.val() - 1;
        }
    }
}
