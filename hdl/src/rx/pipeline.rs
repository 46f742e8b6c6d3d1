//! The RX pipeline: one stream of Ethernet frames in; one metadata record per frame (accepted or dropped,
//! with the cause) and, for accepted frames, the payload realigned to lane 0 out (for a frame that is not
//! RoCEv2, the whole frame: the raw path's, `Meta::carries_payload`); drop counters by cause.
//!
//! Ingress: each beat goes into the frame store and the header window. The pipelined decoder (`decode`)
//! gives each frame's lane parameters (VLAN, IP version, IP end) once its first `PARAM_BYTES` bytes are in
//! the window, into `pq`; a short queue (`dq`) holds the beats back from the ICRC lanes until their frame's
//! parameters are there. The CRC engine runs on the transformed lanes (see `lanes`), registered. The
//! decoder's record goes into `vq` (with the egress's steering bits into `xq`) `decode::LATENCY` cycles
//! after each frame's end, and later the ICRC result into `cq`.
//! Egress: with a record, its ICRC result and the frame's beats at hand (all read through registers: the
//! record queues' `Prefetch` and `SplitPrefetch`, the frame store's `BramQueue` ring), the record goes out on `meta`;
//! a dropped frame (or one without payload) is popped from the store and discarded, an accepted one has
//! its header beats skipped and its payload funnel-shifted to lane 0, the pad, ICRC and Ethernet padding
//! dropped (a frame that is not RoCEv2 goes out whole, its ICRC result ignored). When a frame's last stored beat is taken with payload left in it, the frame retires at once
//! and that last output beat (the "tail") goes out while the next frame's first beat is taken: one beat
//! per cycle however the payload falls.
//!
//! Frames longer than `wire::MAX_FRAME_LEN` are cut there and dropped as `TooLong`; the frame store holds
//! at least one of that length (`top::max_frame`), and `in_ready` holds while it is full.

use super::decode::{self, Decode};
use super::egress::{Funnel, LaneMask, RecordFields};
use super::lanes::{HeaderCapture, IcrcLanes, LaneDistances};
use super::meta;
use crate::bram_queue::BramQueue;
use crate::crc::{CrcEngine, KeepCount};
use crate::delay::Delay;
use crate::kit::*;
use crate::prefetch::{Prefetch, SplitPrefetch};
use crate::queue::Queue;
use crate::top::STORE_MARGIN;

/// Bits of the steering word the egress decides by (`vx`, below), queued beside each record.
const STEER_BITS: usize = 22;
/// The steering word as the egress holds it (`head_in`), with the ICRC result in place of bit 21 (rust-hdl's
/// generator takes bit positions as literals only).
const HEAD_BITS: usize = STEER_BITS;

// The record queues hold `2^Q` frames; at most `2^Q - 4` are let in between their last beat in and their
// record out. A frame's ICRC result comes about 20 cycles after its end, so 1-beat frames at 64 bytes need
// `Q = 5` for one frame per cycle.

#[derive(LogicBlock)]
pub struct Rx<const D: usize, const K: usize, const A: usize, const AP1: usize, const Q: usize> {
    pub clock: Signal<In, Clock>,
    pub in_data: Signal<In, Bits<D>>,
    pub in_keep: Signal<In, Bits<K>>,
    pub in_last: Signal<In, Bit>,
    pub in_valid: Signal<In, Bit>,
    pub in_ready: Signal<Out, Bit>,
    pub meta: Signal<Out, Bits<{ meta::BITS }>>,
    pub meta_valid: Signal<Out, Bit>,
    pub meta_ready: Signal<In, Bit>,
    pub out_data: Signal<Out, Bits<D>>,
    pub out_keep: Signal<Out, Bits<K>>,
    pub out_last: Signal<Out, Bit>,
    pub out_valid: Signal<Out, Bit>,
    pub out_ready: Signal<In, Bit>,
    /// Frames retired, by verdict (`meta::Verdict` order).
    pub cnt_ok: Signal<Out, Bits<32>>,
    pub cnt_not_roce: Signal<Out, Bits<32>>,
    pub cnt_truncated: Signal<Out, Bits<32>>,
    pub cnt_bad_ip: Signal<Out, Bits<32>>,
    pub cnt_bad_udp_length: Signal<Out, Bits<32>>,
    pub cnt_bad_tver: Signal<Out, Bits<32>>,
    pub cnt_unknown_opcode: Signal<Out, Bits<32>>,
    pub cnt_bad_length: Signal<Out, Bits<32>>,
    pub cnt_bad_icrc: Signal<Out, Bits<32>>,
    pub cnt_too_long: Signal<Out, Bits<32>>,
    // Ingress.
    in_fire: Signal<Local, Bit>,
    ready: DFF<Bit>,
    // A frame longer than `wire::MAX_FRAME_LEN` ends, for the store, the lanes and the decoder, with its
    // beat MAX_FRAME_LEN / K - 1 (`at_cut`, registered as `bi` leaves `before_cut`), its length saturated
    // to 0xffff (the decoder's `TooLong`); its other beats are taken and dropped while `overlong`.
    before_cut: Constant<Bits<16>>,
    at_cut: DFF<Bit>,
    overlong: DFF<Bit>,
    take: Signal<Local, Bit>,
    stored_last: Signal<Local, Bit>,
    bi: DFF<Bits<16>>,
    flen: DFF<Bits<16>>,
    nbytes: KeepCount<K>,
    cap: HeaderCapture<D, K>,
    dec: Decode,
    done: DFF<Bit>,
    rec_delay: Delay<{ decode::LATENCY }>,
    inflight: DFF<Bits<8>>,
    // The queue in front of the ICRC lanes: data, keep and {last, beat number}, written and read together;
    // `dq_used` counts its entries (up to 2^4; the writers stop at `dq_full`, STORE_MARGIN short of that).
    dq_d: Queue<D, 4>,
    dq_k: Queue<K, 4>,
    dq_x: Queue<17, 4>,
    dq_used: DFF<Bits<5>>,
    dq_full: Constant<Bits<5>>,
    crc_fire: Signal<Local, Bit>,
    // Lane parameters {vlan, ipv6, ip_end}, one entry per frame, written once the decoder has seen the
    // frame's first `PARAM_BYTES` bytes (or its end): a frame's beats pass the lanes only with its entry.
    param_beat: Constant<Bits<16>>,
    param_seen: Signal<Local, Bit>,
    param_delay: Delay<{ decode::PARAM_LATENCY + 1 }>,
    pq: Queue<19, 4>,
    lp: Signal<Local, Bits<19>>,
    ldist: LaneDistances<K>,
    rest: Signal<Local, Bits<19>>,
    lane_shift: Constant<Bits<19>>,
    l_data: DFF<Bits<D>>,
    l_keep: DFF<Bits<K>>,
    l_last: DFF<Bit>,
    l_valid: DFF<Bit>,
    l_ipv6: DFF<Bit>,
    l_e: DFF<Bits<8>>,
    l_d: DFF<Bits<8>>,
    lanes: IcrcLanes<D, K>,
    // The lanes' output, registered in front of the CRC engine.
    e_data: DFF<Bits<D>>,
    e_keep: DFF<Bits<K>>,
    e_last: DFF<Bit>,
    e_valid: DFF<Bit>,
    engine: CrcEngine<D, K>,
    crc_done: DFF<Bit>,
    // The received ICRC: the trailer bytes each beat holds (registered), OR-ed up over the frame.
    m_bytes: DFF<Bits<32>>,
    m_valid: DFF<Bit>,
    m_last: DFF<Bit>,
    icrc_acc: DFF<Bits<32>>,
    icrc_now: Signal<Local, Bits<32>>,
    // Records, their steering bits (`vx`), received ICRCs and ICRC results, one per frame, in order.
    vq: Queue<{ meta::BITS }, Q>,
    xq: Queue<STEER_BITS, Q>,
    iq: Queue<32, Q>,
    cq: Queue<1, Q>,
    inflight_max: Constant<Bits<8>>,
    // What the egress steers by, worked out from each record as it goes into `vq`, stored beside it:
    // bit 21 not RoCEv2 (the whole frame is its payload, whatever its ICRC lanes made of it), 20 the payload
    // fits one beat (<= K), 19 aligned (shift 0), 18 it starts in beat 0, 17 it has payload to deliver (an
    // accepted frame's, or a frame that is not RoCEv2), 16 it fits the first payload beat (<= K - shift);
    // 15:0 2K - shift.
    pre: RecordFields<K>,
    vx: Signal<Local, Bits<STEER_BITS>>,
    lanes_2k: Constant<Bits<16>>,
    // Registered with `rem` (from the candidates for its next value): rem > K - shift, rem <= K.
    more: DFF<Bit>,
    fin: DFF<Bit>,
    more_sub: Signal<Local, Bit>,
    fin_sub: Signal<Local, Bit>,
    // Whether the frame has had a pop (`ei != 0`), and then whether its beat `ei` is past its header, worked
    // out at each pop (so `pop` is its clock enable; for ei = 0 the head's bit 18 stands in).
    eiz: DFF<Bit>,
    pastq: DFF<Bit>,
    kms: Signal<Local, Bits<16>>,
    // The queues read through registers, popped as the frame retires: the record (a ring); the received
    // ICRC (a ring) read with the steering bits and the ICRC result, joined at the head (`head_in`): what
    // the egress decides by is in one head register. Each count is a pair of flags next to the egress; the
    // record ring's loads depend on its own count only (read with the ICRC queues, the record queue's
    // 1,206-bit read register waited on them).
    rp: Prefetch<{ meta::BITS }>,
    cp: SplitPrefetch<32, HEAD_BITS>,
    head_in: Signal<Local, Bits<HEAD_BITS>>,
    // Head bit 18, a signal of its own: rust-hdl writes `replace_bit(i, !x)` as `(~x) << i` at the word's
    // width, which inverts the zero-extended bits above `x` too.
    first_disc: Signal<Local, Bit>,
    have: Signal<Local, Bit>,
    steer: Signal<Local, Bits<HEAD_BITS>>,
    icrc_ok: Signal<Local, Bit>,
    // Discard the stored beat at hand: the frame is dropped, or this is a header beat or past the payload.
    disc: Signal<Local, Bit>,
    record: RecordFields<K>,
    // The frame store.
    sd: BramQueue<D, A, AP1, STORE_MARGIN>,
    // Egress.
    go: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    retire: Signal<Local, Bit>,
    // The frames retired, counted a cycle later (by verdict, and out of `inflight`).
    ret_q: DFF<Bit>,
    ret_v: DFF<Bits<4>>,
    accept: Signal<Local, Bit>,
    ei: DFF<Bits<16>>,
    pv: DFF<Bits<D>>,
    pv_valid: DFF<Bit>,
    pv_shift: DFF<Bits<8>>,
    // The last output beat of a frame already retired (its last stored beat is in `pv`): it goes out while
    // the next frame starts.
    tail: DFF<Bit>,
    pv_last: DFF<Bit>,
    rem: DFF<Bits<16>>,
    pay_done: DFF<Bit>,
    meta_sent: DFF<Bit>,
    funnel: Funnel<D>,
    mask: LaneMask<K>,
    lanes_k: Constant<Bits<16>>,
    residue: Constant<Bits<32>>,
    c_ok: DFF<Bits<32>>,
    c_not_roce: DFF<Bits<32>>,
    c_truncated: DFF<Bits<32>>,
    c_bad_ip: DFF<Bits<32>>,
    c_bad_udp_length: DFF<Bits<32>>,
    c_bad_tver: DFF<Bits<32>>,
    c_unknown_opcode: DFF<Bits<32>>,
    c_bad_length: DFF<Bits<32>>,
    c_bad_icrc: DFF<Bits<32>>,
    c_too_long: DFF<Bits<32>>,
}

impl<const D: usize, const K: usize, const A: usize, const AP1: usize, const Q: usize> Default for Rx<D, K, A, AP1, Q> {
    fn default() -> Self {
        assert_eq!(D, 8 * K, "data bits must be 8 x byte lanes");
        assert_eq!(AP1, A + 1);
        Rx {
            clock: Signal::default(),
            in_data: Signal::default(),
            in_keep: Signal::default(),
            in_last: Signal::default(),
            in_valid: Signal::default(),
            in_ready: Signal::default(),
            meta: Signal::default(),
            meta_valid: Signal::default(),
            meta_ready: Signal::default(),
            out_data: Signal::default(),
            out_keep: Signal::default(),
            out_last: Signal::default(),
            out_valid: Signal::default(),
            out_ready: Signal::default(),
            cnt_ok: Signal::default(),
            cnt_not_roce: Signal::default(),
            cnt_truncated: Signal::default(),
            cnt_bad_ip: Signal::default(),
            cnt_bad_udp_length: Signal::default(),
            cnt_bad_tver: Signal::default(),
            cnt_unknown_opcode: Signal::default(),
            cnt_bad_length: Signal::default(),
            cnt_bad_icrc: Signal::default(),
            cnt_too_long: Signal::default(),
            in_fire: Signal::default(),
            ready: DFF::default(),
            before_cut: Constant::new(((wire::MAX_FRAME_LEN / K - 2) as u64).into()),
            at_cut: DFF::default(),
            overlong: DFF::default(),
            take: Signal::default(),
            stored_last: Signal::default(),
            bi: DFF::default(),
            flen: DFF::default(),
            nbytes: KeepCount::default(),
            cap: HeaderCapture::default(),
            dec: Decode::default(),
            done: DFF::default(),
            rec_delay: Delay::default(),
            inflight: DFF::default(),
            dq_d: Default::default(),
            dq_k: Default::default(),
            dq_x: Default::default(),
            dq_used: DFF::default(),
            dq_full: Constant::new((16 - STORE_MARGIN as u64).into()),
            crc_fire: Signal::default(),
            param_beat: Constant::new((((decode::PARAM_BYTES - 1) / K) as u64).into()),
            param_seen: Signal::default(),
            param_delay: Delay::default(),
            pq: Default::default(),
            lp: Signal::default(),
            ldist: LaneDistances::default(),
            rest: Signal::default(),
            lane_shift: Constant::new(u64::from(K.trailing_zeros()).into()),
            l_data: DFF::default(),
            l_keep: DFF::default(),
            l_last: DFF::default(),
            l_valid: DFF::default(),
            l_ipv6: DFF::default(),
            l_e: DFF::default(),
            l_d: DFF::default(),
            lanes: IcrcLanes::default(),
            e_data: DFF::default(),
            e_keep: DFF::default(),
            e_last: DFF::default(),
            e_valid: DFF::default(),
            engine: CrcEngine::default(),
            crc_done: DFF::default(),
            m_bytes: DFF::default(),
            m_valid: DFF::default(),
            m_last: DFF::default(),
            icrc_acc: DFF::default(),
            icrc_now: Signal::default(),
            vq: Default::default(),
            xq: Default::default(),
            iq: Default::default(),
            cq: Default::default(),
            inflight_max: Constant::new(((1u64 << Q) - 4).into()),
            pre: RecordFields::default(),
            vx: Signal::default(),
            lanes_2k: Constant::new((2 * K as u64).into()),
            more: DFF::default(),
            fin: DFF::default(),
            more_sub: Signal::default(),
            fin_sub: Signal::default(),
            eiz: DFF::default(),
            pastq: DFF::default(),
            kms: Signal::default(),
            rp: Prefetch::default(),
            cp: SplitPrefetch::default(),
            head_in: Signal::default(),
            first_disc: Signal::default(),
            have: Signal::default(),
            steer: Signal::default(),
            icrc_ok: Signal::default(),
            disc: Signal::default(),
            record: RecordFields::default(),
            sd: Default::default(),
            go: Signal::default(),
            pop: Signal::default(),
            retire: Signal::default(),
            ret_q: DFF::default(),
            ret_v: DFF::default(),
            accept: Signal::default(),
            ei: DFF::default(),
            pv: DFF::default(),
            pv_valid: DFF::default(),
            pv_shift: DFF::default(),
            tail: DFF::default(),
            pv_last: DFF::default(),
            rem: DFF::default(),
            pay_done: DFF::default(),
            meta_sent: DFF::default(),
            funnel: Funnel::default(),
            mask: LaneMask::default(),
            lanes_k: Constant::new((K as u64).into()),
            residue: Constant::new(u64::from(wire::icrc::RESIDUE).into()),
            c_ok: DFF::default(),
            c_not_roce: DFF::default(),
            c_truncated: DFF::default(),
            c_bad_ip: DFF::default(),
            c_bad_udp_length: DFF::default(),
            c_bad_tver: DFF::default(),
            c_unknown_opcode: DFF::default(),
            c_bad_length: DFF::default(),
            c_bad_icrc: DFF::default(),
            c_too_long: DFF::default(),
        }
    }
}

impl<const D: usize, const K: usize, const A: usize, const AP1: usize, const Q: usize> Logic for Rx<D, K, A, AP1, Q> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, ready, dq_used, at_cut, overlong, bi, flen, done, inflight, crc_done, m_bytes, m_valid,
            m_last, icrc_acc, ei, pv, pv_valid, pv_shift, tail, pv_last, rem, more, fin, pay_done, meta_sent
        );
        dff_setup!(self, clock, e_data, e_keep, e_last, e_valid, ret_q, ret_v, eiz, pastq);
        dff_setup!(self, clock, l_data, l_keep, l_last, l_valid, l_ipv6, l_e, l_d);
        dff_setup!(
            self,
            clock,
            c_ok,
            c_not_roce,
            c_truncated,
            c_bad_ip,
            c_bad_udp_length,
            c_bad_tver,
            c_unknown_opcode,
            c_bad_length,
            c_bad_icrc,
            c_too_long
        );
        clock!(
            self,
            clock,
            dq_d,
            dq_k,
            dq_x,
            pq,
            lanes,
            engine,
            vq,
            xq,
            iq,
            cq,
            sd,
            cap,
            dec,
            rec_delay,
            param_delay,
            rp,
            cp
        );

        // ---- Ingress ----
        // Registered: room in the store and the lane queue (their `almost_full` leaves STORE_MARGIN beats for
        // the lag) and in the record queues.
        self.ready.d.next = !self.sd.almost_full.val()
            & (self.dq_used.q.val() < self.dq_full.val())
            & (self.inflight.q.val() < self.inflight_max.val());
        self.in_ready.next = self.ready.q.val();
        self.in_fire.next = self.in_valid.val() & self.in_ready.val();
        self.take.next = self.in_fire.val() & !self.overlong.q.val();
        self.stored_last.next = self.in_last.val() | self.at_cut.q.val();
        if self.take.val() & self.at_cut.q.val() & !self.in_last.val() {
            self.overlong.d.next = true;
        }
        if self.in_fire.val() & self.in_last.val() {
            self.overlong.d.next = false;
        }
        self.nbytes.keep.next = self.in_keep.val();
        self.sd.data_in.next = self.in_data.val();
        self.sd.flag_in.next = self.stored_last.val();
        self.sd.write.next = self.take.val();
        self.cap.write.next = self.take.val();
        self.cap.last.next = self.stored_last.val();
        self.cap.data.next = self.in_data.val();
        self.cap.keep.next = self.in_keep.val();
        self.dq_d.data_in.next = self.in_data.val();
        self.dq_k.data_in.next = self.in_keep.val();
        self.dq_x.data_in.next = bit_cast::<17, 16>(self.bi.q.val());
        self.dq_x.data_in.next = self.dq_x.data_in.val().replace_bit(16, self.stored_last.val());
        self.dq_d.write.next = self.take.val();
        self.dq_k.write.next = self.take.val();
        self.dq_x.write.next = self.take.val();
        if self.take.val() & !self.crc_fire.val() {
            self.dq_used.d.next = self.dq_used.q.val() + 1;
        }
        if !self.take.val() & self.crc_fire.val() {
            self.dq_used.d.next = self.dq_used.q.val() - 1;
        }
        self.done.d.next = self.take.val() & self.stored_last.val();
        if self.take.val() {
            self.at_cut.d.next = !self.stored_last.val() & (self.bi.q.val() == self.before_cut.val());
            if self.stored_last.val() {
                self.bi.d.next = 0.into();
            } else {
                self.bi.d.next = self.bi.q.val() + 1;
            }
            if self.bi.q.val() == 0 {
                self.flen.d.next = bit_cast::<16, 8>(self.nbytes.n.val());
            } else {
                self.flen.d.next = self.flen.q.val() + bit_cast::<16, 8>(self.nbytes.n.val());
            }
            if self.at_cut.q.val() & !self.in_last.val() {
                self.flen.d.next = 0xffff.into();
            }
        }
        self.dec.hdr.next = self.cap.hdr.val();
        self.dec.len.next = self.flen.q.val();

        // ---- ICRC lanes ----
        // The lane parameters of a frame are known once its first PARAM_BYTES bytes are in the window.
        self.param_seen.next = self.take.val()
            & (self.bi.q.val() <= self.param_beat.val())
            & ((self.bi.q.val() == self.param_beat.val()) | self.stored_last.val());
        self.param_delay.d.next = self.param_seen.val();
        self.lp.next = bit_cast::<19, 17>(self.dec.ip_end.val());
        self.lp.next = self.lp.val().replace_bit(17, self.dec.ipv6.val());
        self.lp.next = self.lp.val().replace_bit(18, self.dec.vlan.val());
        self.pq.data_in.next = self.lp.val();
        self.pq.write.next = self.param_delay.q.val();
        // Both queues' heads are registers (`Queue`), so the beat leaving is known from registers only.
        self.crc_fire.next = self.dq_d.valid.val() & self.pq.valid.val();
        self.dq_d.read.next = self.crc_fire.val();
        self.dq_k.read.next = self.crc_fire.val();
        self.dq_x.read.next = self.crc_fire.val();
        self.pq.read.next = self.crc_fire.val() & self.dq_x.data_out.val().get_bit(16);
        // The beat leaving the queue, registered with its distances (`LaneDistances`), then through the lanes
        // (two registered steps).
        self.ldist.beat.next = self.dq_x.data_out.val().get_bits::<16>(0);
        self.ldist.vlan.next = self.pq.data_out.val().get_bit(18);
        self.rest.next = bit_cast::<19, 17>(self.pq.data_out.val().get_bits::<17>(0))
            - (bit_cast::<19, 16>(self.dq_x.data_out.val().get_bits::<16>(0)) << self.lane_shift.val());
        self.ldist.rest.next = self.rest.val();
        self.l_data.d.next = self.dq_d.data_out.val();
        self.l_keep.d.next = self.dq_k.data_out.val();
        self.l_last.d.next = self.dq_x.data_out.val().get_bit(16);
        self.l_valid.d.next = self.crc_fire.val();
        self.l_ipv6.d.next = self.pq.data_out.val().get_bit(17);
        self.l_e.d.next = self.ldist.e.val();
        self.l_d.d.next = self.ldist.d.val();
        self.lanes.data.next = self.l_data.q.val();
        self.lanes.keep.next = self.l_keep.q.val();
        self.lanes.ipv6.next = self.l_ipv6.q.val();
        self.lanes.e.next = self.l_e.q.val();
        self.lanes.d.next = self.l_d.q.val();
        self.lanes.valid.next = self.l_valid.q.val();
        self.lanes.last.next = self.l_last.q.val();
        self.e_data.d.next = self.lanes.mdata.val();
        self.e_keep.d.next = self.lanes.mkeep.val();
        self.e_last.d.next = self.lanes.q_last.val() | self.lanes.at_end.val();
        self.e_valid.d.next = self.lanes.q_valid.val() & !self.crc_done.q.val();
        self.engine.reset.next = false;
        self.engine.data.next = self.e_data.q.val();
        self.engine.keep.next = self.e_keep.q.val();
        self.engine.last.next = self.e_last.q.val();
        self.engine.valid.next = self.e_valid.q.val();
        if self.lanes.q_valid.val() {
            self.crc_done.d.next = !self.lanes.q_last.val() & (self.crc_done.q.val() | self.lanes.at_end.val());
        }
        // The received ICRC: each ICRC byte is in exactly one beat, so the beats' captures OR up, from zero
        // after each frame's last beat.
        self.m_bytes.d.next = self.lanes.merged.val();
        self.m_valid.d.next = self.lanes.q_valid.val();
        self.m_last.d.next = self.lanes.q_last.val();
        self.icrc_now.next = self.icrc_acc.q.val() | self.m_bytes.q.val();
        if self.m_valid.q.val() {
            self.icrc_acc.d.next = self.icrc_now.val();
            if self.m_last.q.val() {
                self.icrc_acc.d.next = 0.into();
            }
        }
        // Records: the decoder's, LATENCY cycles after the frame's end (the window and length are this frame's
        // for one cycle), the received ICRC once the frame's last beat has passed the lanes, the ICRC check
        // when the CRC is out.
        self.rec_delay.d.next = self.done.q.val();
        self.vq.write.next = self.rec_delay.q.val();
        self.xq.write.next = self.rec_delay.q.val();
        // The egress's steering bits, from the record going in (`vx`).
        self.pre.rec.next = self.dec.meta.val();
        self.pre.icrc_ok.next = true;
        self.pre.icrc.next = 0.into();
        self.kms.next = self.lanes_k.val() - bit_cast::<16, 8>(self.pre.shift.val());
        self.vx.next = bit_cast::<STEER_BITS, 16>(self.kms.val() + self.lanes_k.val());
        self.vx.next = self.vx.val().replace_bit(16, self.pre.payload_len.val() <= self.kms.val());
        self.vx.next = self.vx.val().replace_bit(
            17,
            ((self.pre.verdict.val() == 0) | (self.pre.verdict.val() == 1)) & (self.pre.payload_len.val() != 0),
        );
        self.vx.next = self.vx.val().replace_bit(18, self.pre.first_beat.val() == 0);
        self.vx.next = self.vx.val().replace_bit(19, self.pre.shift.val() == 0);
        self.vx.next = self.vx.val().replace_bit(20, self.pre.payload_len.val() <= self.lanes_k.val());
        self.vx.next = self.vx.val().replace_bit(21, self.pre.verdict.val() == 1);
        self.vq.data_in.next = self.dec.meta.val();
        self.xq.data_in.next = self.vx.val();
        self.iq.data_in.next = self.icrc_now.val();
        self.iq.write.next = self.m_valid.q.val() & self.m_last.q.val();
        self.cq.data_in.next = (self.engine.crc.val() == self.residue.val()).into();
        self.cq.write.next = self.engine.crc_valid.val();

        // ---- Egress ----
        // The record queues are read through registers (`Prefetch`, `SplitPrefetch`; the store has its own
        // ring). The steering word joins the ICRC result on its way into the head registers: bit 17 becomes
        // `accept` (payload to deliver, and the ICRC good unless the frame is not RoCEv2), bit 18 says the
        // frame's first stored beat is discarded (unless it is accepted with the payload starting there),
        // bit 21 (read for bit 17) becomes the ICRC result.
        self.rp.in_data.next = self.vq.data_out.val();
        self.rp.in_empty.next = !self.vq.valid.val();
        self.vq.read.next = self.rp.in_read.val();
        self.head_in.next = bit_cast::<HEAD_BITS, STEER_BITS>(self.xq.data_out.val());
        self.head_in.next = self.head_in.val().replace_bit(
            17,
            self.xq.data_out.val().get_bit(17) & (self.cq.data_out.val().any() | self.xq.data_out.val().get_bit(21)),
        );
        self.head_in.next = self.head_in.val().replace_bit(21, self.cq.data_out.val().any());
        self.first_disc.next = !(self.head_in.val().get_bit(17) & self.xq.data_out.val().get_bit(18));
        self.head_in.next = self.head_in.val().replace_bit(18, self.first_disc.val());
        self.cp.in_wide.next = self.iq.data_out.val();
        self.cp.in_head.next = self.head_in.val();
        self.cp.in_empty.next = !self.iq.valid.val() | !self.xq.valid.val() | !self.cq.valid.val();
        self.iq.read.next = self.cp.in_read.val();
        self.xq.read.next = self.cp.in_read.val();
        self.cq.read.next = self.cp.in_read.val();
        self.have.next = self.rp.out_valid.val() & self.cp.out_valid.val();
        self.steer.next = self.cp.out_head.val();
        self.icrc_ok.next = self.steer.val().get_bit(21);
        self.record.rec.next = self.rp.out_data.val();
        self.record.icrc_ok.next = self.icrc_ok.val();
        self.record.icrc.next = self.cp.out_wide.val();
        self.meta.next = self.record.meta_out.val();
        self.meta_valid.next = self.have.val() & !self.meta_sent.q.val();
        // The frame's beats move once its record is out (or going out now).
        self.go.next = self.have.val() & (self.meta_sent.q.val() | self.meta_ready.val());
        self.accept.next = self.steer.val().get_bit(17);
        self.disc.next = self.steer.val().get_bit(18);
        if self.eiz.q.val() {
            self.disc.next =
                self.pay_done.q.val() | !self.accept.val() | (!self.pv_valid.q.val() & !self.pastq.q.val());
        }
        self.pop.next = false;
        self.retire.next = false;
        self.out_valid.next = false;
        self.out_last.next = false;
        self.funnel.lo.next = self.pv.q.val();
        self.funnel.hi.next = self.sd.out_data.val();
        self.funnel.shift.next = self.record.shift.val();
        self.out_data.next = self.funnel.out.val();
        self.mask.n.next = self.rem.q.val();
        self.out_keep.next = self.mask.keep.val();
        // `more` and `fin` for rem - K, the next value of `rem` at a pop.
        self.more_sub.next = self.rem.q.val() > self.steer.val().get_bits::<16>(0);
        self.fin_sub.next = self.rem.q.val() <= self.lanes_2k.val();
        if self.go.val() {
            if self.disc.val() {
                // Discard: a dropped frame, the header beats, or what follows the payload.
                if self.sd.out_valid.val() {
                    self.pop.next = true;
                    self.retire.next = self.sd.out_flag.val();
                }
            } else if !self.pv_valid.q.val() & self.steer.val().get_bit(16) {
                // The whole payload is in this stored beat: straight out (after the previous frame's tail).
                self.funnel.lo.next = self.sd.out_data.val();
                self.funnel.hi.next = 0.into();
                self.mask.n.next = self.record.payload_len.val();
                if self.sd.out_valid.val() & !self.tail.q.val() {
                    self.out_valid.next = true;
                    self.out_last.next = true;
                    if self.out_ready.val() {
                        self.pop.next = true;
                        self.pay_done.d.next = true;
                        self.retire.next = self.sd.out_flag.val();
                    }
                }
            } else if !self.pv_valid.q.val() {
                // The beat holding the first payload byte (into `pv` as the previous frame's tail leaves it).
                if self.sd.out_valid.val() & (!self.tail.q.val() | self.out_ready.val()) {
                    self.pop.next = true;
                    self.pv.d.next = self.sd.out_data.val();
                    self.pv_valid.d.next = true;
                    self.pv_shift.d.next = self.record.shift.val();
                    self.pv_last.d.next = self.sd.out_flag.val();
                    self.rem.d.next = self.record.payload_len.val();
                    self.more.d.next = !self.steer.val().get_bit(16);
                    self.fin.d.next = self.steer.val().get_bit(20);
                }
            } else if !self.steer.val().get_bit(19) & self.more.q.val() {
                // This output beat takes bytes from the next stored beat too.
                if self.sd.out_valid.val() {
                    self.out_valid.next = true;
                    self.out_last.next = self.fin.q.val();
                    if self.out_ready.val() {
                        self.pop.next = true;
                        self.pv.d.next = self.sd.out_data.val();
                        self.pv_last.d.next = self.sd.out_flag.val();
                        self.rem.d.next = self.rem.q.val() - self.lanes_k.val();
                        self.more.d.next = self.more_sub.val();
                        self.fin.d.next = self.fin_sub.val();
                        if self.fin.q.val() {
                            self.pv_valid.d.next = false;
                            self.pay_done.d.next = true;
                            self.retire.next = self.sd.out_flag.val();
                        } else if self.sd.out_flag.val() {
                            // The frame's last stored beat: what is left goes out as the tail.
                            self.tail.d.next = true;
                            self.retire.next = true;
                        }
                    }
                }
            } else if self.steer.val().get_bit(19) & !self.fin.q.val() {
                // Aligned, more to come: this beat out, the next one in.
                self.funnel.hi.next = 0.into();
                if self.sd.out_valid.val() {
                    self.out_valid.next = true;
                    if self.out_ready.val() {
                        self.pop.next = true;
                        self.pv.d.next = self.sd.out_data.val();
                        self.pv_last.d.next = self.sd.out_flag.val();
                        self.rem.d.next = self.rem.q.val() - self.lanes_k.val();
                        self.more.d.next = self.more_sub.val();
                        self.fin.d.next = self.fin_sub.val();
                        if self.sd.out_flag.val() {
                            self.tail.d.next = true;
                            self.retire.next = true;
                        }
                    }
                }
            } else {
                // The final output beat comes from the held beat alone.
                self.funnel.hi.next = 0.into();
                self.out_valid.next = true;
                self.out_last.next = true;
                if self.out_ready.val() {
                    self.pv_valid.d.next = false;
                    self.pay_done.d.next = true;
                    self.retire.next = self.pv_last.q.val();
                    // Drain the frame's next stored beat in the same cycle.
                    if !self.pv_last.q.val() & self.sd.out_valid.val() {
                        self.pop.next = true;
                        self.retire.next = self.sd.out_flag.val();
                    }
                }
            }
        }
        if self.tail.q.val() {
            // The previous frame's last output beat, from the held beat alone.
            self.funnel.lo.next = self.pv.q.val();
            self.funnel.hi.next = 0.into();
            self.funnel.shift.next = self.pv_shift.q.val();
            self.mask.n.next = self.rem.q.val();
            self.out_valid.next = true;
            self.out_last.next = true;
            if self.out_ready.val() {
                self.tail.d.next = false;
            }
        }
        self.sd.pop.next = self.pop.val();
        if self.pop.val() {
            self.ei.d.next = self.ei.q.val() + 1;
            self.eiz.d.next = true;
            self.pastq.d.next = self.ei.q.val() + 1 >= self.record.first_beat.val();
        }
        if self.meta_valid.val() & self.meta_ready.val() {
            self.meta_sent.d.next = true;
        }
        self.rp.pop.next = self.retire.val();
        self.cp.pop.next = self.retire.val();
        self.inflight.d.next = self.inflight.q.val();
        // A frame leaves `inflight` a cycle after it retires (`retire` is late in the cycle and `inflight` is far).
        if self.done.q.val() & !self.ret_q.q.val() {
            self.inflight.d.next = self.inflight.q.val() + 1;
        }
        if !self.done.q.val() & self.ret_q.q.val() {
            self.inflight.d.next = self.inflight.q.val() - 1;
        }
        // Counters by `meta::Verdict` code (0 = accepted, 1 = not RoCE, ..., 8 = bad ICRC, 9 = too long), a cycle after retiring.
        self.ret_q.d.next = self.retire.val();
        self.ret_v.d.next = self.record.verdict.val();
        if self.retire.val() {
            self.ei.d.next = 0.into();
            self.eiz.d.next = false;
            self.pv_valid.d.next = false;
            self.pay_done.d.next = false;
            self.meta_sent.d.next = false;
        }
        if self.ret_q.q.val() {
            if self.ret_v.q.val() == 0 {
                self.c_ok.d.next = self.c_ok.q.val() + 1;
            }
            if self.ret_v.q.val() == 1 {
                self.c_not_roce.d.next = self.c_not_roce.q.val() + 1;
            }
            if self.ret_v.q.val() == 2 {
                self.c_truncated.d.next = self.c_truncated.q.val() + 1;
            }
            if self.ret_v.q.val() == 3 {
                self.c_bad_ip.d.next = self.c_bad_ip.q.val() + 1;
            }
            if self.ret_v.q.val() == 4 {
                self.c_bad_udp_length.d.next = self.c_bad_udp_length.q.val() + 1;
            }
            if self.ret_v.q.val() == 5 {
                self.c_bad_tver.d.next = self.c_bad_tver.q.val() + 1;
            }
            if self.ret_v.q.val() == 6 {
                self.c_unknown_opcode.d.next = self.c_unknown_opcode.q.val() + 1;
            }
            if self.ret_v.q.val() == 7 {
                self.c_bad_length.d.next = self.c_bad_length.q.val() + 1;
            }
            if self.ret_v.q.val() == 8 {
                self.c_bad_icrc.d.next = self.c_bad_icrc.q.val() + 1;
            }
            if self.ret_v.q.val() == 9 {
                self.c_too_long.d.next = self.c_too_long.q.val() + 1;
            }
        }
        self.cnt_ok.next = self.c_ok.q.val();
        self.cnt_not_roce.next = self.c_not_roce.q.val();
        self.cnt_truncated.next = self.c_truncated.q.val();
        self.cnt_bad_ip.next = self.c_bad_ip.q.val();
        self.cnt_bad_udp_length.next = self.c_bad_udp_length.q.val();
        self.cnt_bad_tver.next = self.c_bad_tver.q.val();
        self.cnt_unknown_opcode.next = self.c_unknown_opcode.q.val();
        self.cnt_bad_length.next = self.c_bad_length.q.val();
        self.cnt_bad_icrc.next = self.c_bad_icrc.q.val();
        self.cnt_too_long.next = self.c_too_long.q.val();
    }
}
