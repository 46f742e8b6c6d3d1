//! The RX pipeline: one stream of Ethernet frames in; one metadata record per frame (accepted or dropped,
//! with the cause) and, for accepted frames, the payload realigned to lane 0 out; drop counters by cause.
//!
//! Ingress: each beat goes into the frame store and the header window. A short queue (`dq`) holds the last
//! beats back from the ICRC lanes until the two beats after them are in the window (so VLAN, IP version and
//! IP end are known) or the frame has ended; the CRC engine runs on the transformed lanes (see `lanes`).
//! At each frame end the decoder's record goes into `vq`, the lane parameters into a register ring, and later the ICRC
//! result into `cq`.
//! Egress: with a record, its ICRC result and the frame's beats at hand, the record goes out on `meta`;
//! a dropped frame (or one without payload) is popped from the store and discarded, an accepted one has its
//! header beats skipped and its payload funnel-shifted to lane 0, the pad, ICRC and Ethernet padding dropped.
//!
//! Frames must fit the frame store (`2^A` beats); `in_ready` holds while it is full.

use super::decode::Decode;
use super::egress::{Funnel, LaneMask, RecordFields};
use super::lanes::{HeaderCapture, IcrcLanes};
use super::meta;
use crate::crc::{CrcEngine, KeepCount};
use crate::kit::*;

// At most 12 frames between their last beat in and their record out (the record queues hold 16).

#[derive(LogicBlock)]
pub struct Rx<const D: usize, const K: usize, const A: usize, const AP1: usize> {
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
    // Ingress.
    in_fire: Signal<Local, Bit>,
    bi: DFF<Bits<16>>,
    flen: DFF<Bits<16>>,
    nbytes: KeepCount<K>,
    cap: HeaderCapture<D, K>,
    dec: Decode,
    done: DFF<Bit>,
    inflight: DFF<Bits<8>>,
    // The queue in front of the ICRC lanes.
    dq_d: SynchronousFIFO<Bits<D>, 2, 3, 1>,
    dq_k: SynchronousFIFO<Bits<K>, 2, 3, 1>,
    dq_l: SynchronousFIFO<Bit, 2, 3, 1>,
    dq_b: SynchronousFIFO<Bits<16>, 2, 3, 1>,
    dcount: DFF<Bits<4>>,
    dlasts: DFF<Bits<4>>,
    crc_fire: Signal<Local, Bit>,
    // Lane parameters {vlan, ipv6, ip_end} of frames that ended but are still going through the lanes: a
    // four-entry ring in registers (the queue in front holds at most four beats, so at most four frames).
    // Not a rust-hdl FIFO: those show a write two cycles later, and a frame's last beat can reach the
    // lanes one cycle after its entry is written.
    pe0: DFF<Bits<19>>,
    pe1: DFF<Bits<19>>,
    pe2: DFF<Bits<19>>,
    pe3: DFF<Bits<19>>,
    pwp: DFF<Bits<2>>,
    prp: DFF<Bits<2>>,
    pn: DFF<Bits<3>>,
    phead: Signal<Local, Bits<19>>,
    ppush: Signal<Local, Bit>,
    ppop: Signal<Local, Bit>,
    last_out: Signal<Local, Bit>,
    lp_live: Signal<Local, Bits<19>>,
    lp: Signal<Local, Bits<19>>,
    lanes: IcrcLanes<D, K>,
    engine: CrcEngine<D, K>,
    crc_done: DFF<Bit>,
    icrc_q: DFF<Bits<32>>,
    icrc_now: Signal<Local, Bits<32>>,
    // Records, received ICRCs and ICRC results, one per frame, in order.
    vq: SynchronousFIFO<Bits<{ meta::BITS }>, 4, 5, 1>,
    iq: SynchronousFIFO<Bits<32>, 4, 5, 1>,
    cq: SynchronousFIFO<Bit, 4, 5, 1>,
    record: RecordFields<K>,
    // The frame store.
    sd: SynchronousFIFO<Bits<D>, A, AP1, 1>,
    sl: SynchronousFIFO<Bit, A, AP1, 1>,
    // Egress.
    have: Signal<Local, Bit>,
    go: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    retire: Signal<Local, Bit>,
    accept: Signal<Local, Bit>,
    ei: DFF<Bits<16>>,
    pv: DFF<Bits<D>>,
    pv_valid: DFF<Bit>,
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
}

impl<const D: usize, const K: usize, const A: usize, const AP1: usize> Default for Rx<D, K, A, AP1> {
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
            in_fire: Signal::default(),
            bi: DFF::default(),
            flen: DFF::default(),
            nbytes: KeepCount::default(),
            cap: HeaderCapture::default(),
            dec: Decode::default(),
            done: DFF::default(),
            inflight: DFF::default(),
            dq_d: Default::default(),
            dq_k: Default::default(),
            dq_l: Default::default(),
            dq_b: Default::default(),
            dcount: DFF::default(),
            dlasts: DFF::default(),
            crc_fire: Signal::default(),
            pe0: DFF::default(),
            pe1: DFF::default(),
            pe2: DFF::default(),
            pe3: DFF::default(),
            pwp: DFF::default(),
            prp: DFF::default(),
            pn: DFF::default(),
            phead: Signal::default(),
            ppush: Signal::default(),
            ppop: Signal::default(),
            last_out: Signal::default(),
            lp_live: Signal::default(),
            lp: Signal::default(),
            lanes: IcrcLanes::default(),
            engine: CrcEngine::default(),
            crc_done: DFF::default(),
            icrc_q: DFF::default(),
            icrc_now: Signal::default(),
            vq: Default::default(),
            iq: Default::default(),
            cq: Default::default(),
            record: RecordFields::default(),
            sd: Default::default(),
            sl: Default::default(),
            have: Signal::default(),
            go: Signal::default(),
            pop: Signal::default(),
            retire: Signal::default(),
            accept: Signal::default(),
            ei: DFF::default(),
            pv: DFF::default(),
            pv_valid: DFF::default(),
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
        }
    }
}

impl<const D: usize, const K: usize, const A: usize, const AP1: usize> Logic for Rx<D, K, A, AP1> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, bi, flen, done, inflight, dcount, dlasts, crc_done, icrc_q, ei, pv, pv_valid, pv_last, rem, pay_done, meta_sent);
        dff_setup!(self, clock, pe0, pe1, pe2, pe3, pwp, prp, pn);
        dff_setup!(self, clock, c_ok, c_not_roce, c_truncated, c_bad_ip, c_bad_udp_length, c_bad_tver, c_unknown_opcode, c_bad_length, c_bad_icrc);
        clock!(self, clock, dq_d, dq_k, dq_l, dq_b, engine, vq, iq, cq, sd, sl, cap);

        // ---- Ingress ----
        self.in_ready.next = !self.sd.full.val() & !self.dq_d.full.val() & (self.inflight.q.val() < 12);
        self.in_fire.next = self.in_valid.val() & self.in_ready.val();
        self.nbytes.keep.next = self.in_keep.val();
        self.sd.data_in.next = self.in_data.val();
        self.sl.data_in.next = self.in_last.val();
        self.sd.write.next = self.in_fire.val();
        self.sl.write.next = self.in_fire.val();
        self.cap.write.next = self.in_fire.val();
        self.cap.beat.next = self.bi.q.val();
        self.cap.data.next = self.in_data.val();
        self.cap.keep.next = self.in_keep.val();
        self.dq_d.data_in.next = self.in_data.val();
        self.dq_k.data_in.next = self.in_keep.val();
        self.dq_l.data_in.next = self.in_last.val();
        self.dq_b.data_in.next = self.bi.q.val();
        self.dq_d.write.next = self.in_fire.val();
        self.dq_k.write.next = self.in_fire.val();
        self.dq_l.write.next = self.in_fire.val();
        self.dq_b.write.next = self.in_fire.val();
        self.done.d.next = self.in_fire.val() & self.in_last.val();
        if self.in_fire.val() {
            if self.in_last.val() {
                self.bi.d.next = 0.into();
            } else {
                self.bi.d.next = self.bi.q.val() + 1;
            }
            if self.bi.q.val() == 0 {
                self.flen.d.next = bit_cast::<16, 8>(self.nbytes.n.val());
            } else {
                self.flen.d.next = self.flen.q.val() + bit_cast::<16, 8>(self.nbytes.n.val());
            }
        }
        self.dec.hdr.next = self.cap.hdr.val();
        self.dec.len.next = self.flen.q.val();

        // ---- ICRC lanes ----
        // A beat leaves the queue once two more are behind it (their bytes are in the header window), or
        // when its frame has ended.
        self.crc_fire.next = !self.dq_d.empty.val() & ((self.dcount.q.val() >= 3) | (self.dlasts.q.val() != 0));
        self.dq_d.read.next = self.crc_fire.val();
        self.dq_k.read.next = self.crc_fire.val();
        self.dq_l.read.next = self.crc_fire.val();
        self.dq_b.read.next = self.crc_fire.val();
        self.dcount.d.next = self.dcount.q.val();
        if self.in_fire.val() & !self.crc_fire.val() {
            self.dcount.d.next = self.dcount.q.val() + 1;
        }
        if !self.in_fire.val() & self.crc_fire.val() {
            self.dcount.d.next = self.dcount.q.val() - 1;
        }
        self.dlasts.d.next = self.dlasts.q.val();
        if (self.in_fire.val() & self.in_last.val()) & !(self.crc_fire.val() & self.dq_l.data_out.val()) {
            self.dlasts.d.next = self.dlasts.q.val() + 1;
        }
        if !(self.in_fire.val() & self.in_last.val()) & (self.crc_fire.val() & self.dq_l.data_out.val()) {
            self.dlasts.d.next = self.dlasts.q.val() - 1;
        }
        // Lane parameters: the ended frame's, else the live decode of the frame still arriving.
        self.lp_live.next = bit_cast::<19, 17>(self.dec.ip_end.val());
        self.lp_live.next = self.lp_live.val().replace_bit(17, self.dec.ipv6.val());
        self.lp_live.next = self.lp_live.val().replace_bit(18, self.dec.vlan.val());
        self.phead.next = self.pe0.q.val();
        if self.prp.q.val() == 1 {
            self.phead.next = self.pe1.q.val();
        }
        if self.prp.q.val() == 2 {
            self.phead.next = self.pe2.q.val();
        }
        if self.prp.q.val() == 3 {
            self.phead.next = self.pe3.q.val();
        }
        self.lp.next = self.lp_live.val();
        if self.pn.q.val() != 0 {
            self.lp.next = self.phead.val();
        }
        // Every frame gets an entry at `done`, dropped when its last beat passes the lanes: that is at least
        // a cycle later, since the queue in front shows a beat two cycles after it is written.
        self.last_out.next = self.crc_fire.val() & self.dq_l.data_out.val();
        self.ppush.next = self.done.q.val();
        self.ppop.next = self.last_out.val() & (self.pn.q.val() != 0);
        if self.ppush.val() {
            if self.pwp.q.val() == 0 {
                self.pe0.d.next = self.lp_live.val();
            }
            if self.pwp.q.val() == 1 {
                self.pe1.d.next = self.lp_live.val();
            }
            if self.pwp.q.val() == 2 {
                self.pe2.d.next = self.lp_live.val();
            }
            if self.pwp.q.val() == 3 {
                self.pe3.d.next = self.lp_live.val();
            }
            self.pwp.d.next = self.pwp.q.val() + 1;
        }
        if self.ppop.val() {
            self.prp.d.next = self.prp.q.val() + 1;
        }
        if self.ppush.val() & !self.ppop.val() {
            self.pn.d.next = self.pn.q.val() + 1;
        }
        if !self.ppush.val() & self.ppop.val() {
            self.pn.d.next = self.pn.q.val() - 1;
        }
        self.lanes.data.next = self.dq_d.data_out.val();
        self.lanes.keep.next = self.dq_k.data_out.val();
        self.lanes.beat.next = self.dq_b.data_out.val();
        self.lanes.vlan.next = self.lp.val().get_bit(18);
        self.lanes.ipv6.next = self.lp.val().get_bit(17);
        self.lanes.ip_end.next = self.lp.val().get_bits::<17>(0);
        self.engine.seed.next = 0.into();
        self.engine.reset.next = false;
        self.engine.data.next = self.lanes.mdata.val();
        self.engine.keep.next = self.lanes.mkeep.val();
        self.engine.last.next = self.dq_l.data_out.val() | self.lanes.at_end.val();
        self.engine.valid.next = self.crc_fire.val() & !self.crc_done.q.val();
        // The received ICRC: trailer bytes merged in as the lanes pass them.
        self.lanes.prev.next = self.icrc_q.q.val();
        self.icrc_now.next = self.icrc_q.q.val();
        if self.crc_fire.val() {
            self.icrc_now.next = self.lanes.merged.val();
            self.crc_done.d.next = !self.dq_l.data_out.val() & (self.crc_done.q.val() | self.lanes.at_end.val());
        }
        self.icrc_q.d.next = self.icrc_now.val();
        // Records: the decoder's at frame end (the window and length are this frame's for one cycle), the
        // received ICRC once the frame's last beat has passed the lanes, the ICRC check when the CRC is out.
        self.vq.data_in.next = self.dec.meta.val();
        self.vq.write.next = self.done.q.val();
        self.iq.data_in.next = self.icrc_now.val();
        self.iq.write.next = self.crc_fire.val() & self.dq_l.data_out.val();
        self.cq.data_in.next = self.engine.crc.val() == self.residue.val();
        self.cq.write.next = self.engine.crc_valid.val();

        // ---- Egress ----
        self.record.rec.next = self.vq.data_out.val();
        self.record.icrc_ok.next = self.cq.data_out.val();
        self.record.icrc.next = self.iq.data_out.val();
        self.meta.next = self.record.meta_out.val();
        self.have.next = !self.vq.empty.val() & !self.iq.empty.val() & !self.cq.empty.val();
        self.meta_valid.next = self.have.val() & !self.meta_sent.q.val();
        // The frame's beats move once its record is out (or going out now).
        self.go.next = self.have.val() & (self.meta_sent.q.val() | self.meta_ready.val());
        self.accept.next = (self.record.verdict.val() == 0) & (self.record.payload_len.val() != 0);
        self.pop.next = false;
        self.retire.next = false;
        self.out_valid.next = false;
        self.out_last.next = false;
        self.funnel.lo.next = self.pv.q.val();
        self.funnel.hi.next = self.sd.data_out.val();
        self.funnel.shift.next = self.record.shift.val();
        self.out_data.next = self.funnel.out.val();
        self.mask.n.next = self.rem.q.val();
        self.out_keep.next = self.mask.keep.val();
        if self.go.val() {
            if self.pay_done.q.val() | !self.accept.val() | (!self.pv_valid.q.val() & (self.ei.q.val() < self.record.first_beat.val())) {
                // Discard: a dropped frame, the header beats, or what follows the payload.
                if !self.sd.empty.val() {
                    self.pop.next = true;
                    self.retire.next = self.sl.data_out.val();
                }
            } else if !self.pv_valid.q.val() & (self.record.payload_len.val() <= self.lanes_k.val() - bit_cast::<16, 8>(self.record.shift.val())) {
                // The whole payload is in this stored beat: straight out.
                self.funnel.lo.next = self.sd.data_out.val();
                self.funnel.hi.next = 0.into();
                self.mask.n.next = self.record.payload_len.val();
                if !self.sd.empty.val() {
                    self.out_valid.next = true;
                    self.out_last.next = true;
                    if self.out_ready.val() {
                        self.pop.next = true;
                        self.pay_done.d.next = true;
                        self.retire.next = self.sl.data_out.val();
                    }
                }
            } else if !self.pv_valid.q.val() {
                // The beat holding the first payload byte.
                if !self.sd.empty.val() {
                    self.pop.next = true;
                    self.pv.d.next = self.sd.data_out.val();
                    self.pv_valid.d.next = true;
                    self.pv_last.d.next = self.sl.data_out.val();
                    self.rem.d.next = self.record.payload_len.val();
                }
            } else if (self.record.shift.val() != 0) & (self.rem.q.val() > self.lanes_k.val() - bit_cast::<16, 8>(self.record.shift.val())) {
                // This output beat takes bytes from the next stored beat too.
                if !self.sd.empty.val() {
                    self.out_valid.next = true;
                    self.out_last.next = self.rem.q.val() <= self.lanes_k.val();
                    if self.out_ready.val() {
                        self.pop.next = true;
                        self.pv.d.next = self.sd.data_out.val();
                        self.pv_last.d.next = self.sl.data_out.val();
                        self.rem.d.next = self.rem.q.val() - self.lanes_k.val();
                        if self.rem.q.val() <= self.lanes_k.val() {
                            self.pv_valid.d.next = false;
                            self.pay_done.d.next = true;
                            self.retire.next = self.sl.data_out.val();
                        }
                    }
                }
            } else if (self.record.shift.val() == 0) & (self.rem.q.val() > self.lanes_k.val()) {
                // Aligned, more to come: this beat out, the next one in.
                self.funnel.hi.next = 0.into();
                if !self.sd.empty.val() {
                    self.out_valid.next = true;
                    if self.out_ready.val() {
                        self.pop.next = true;
                        self.pv.d.next = self.sd.data_out.val();
                        self.pv_last.d.next = self.sl.data_out.val();
                        self.rem.d.next = self.rem.q.val() - self.lanes_k.val();
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
                    if !self.pv_last.q.val() & !self.sd.empty.val() {
                        self.pop.next = true;
                        self.retire.next = self.sl.data_out.val();
                    }
                }
            }
        }
        self.sd.read.next = self.pop.val();
        self.sl.read.next = self.pop.val();
        if self.pop.val() {
            self.ei.d.next = self.ei.q.val() + 1;
        }
        if self.meta_valid.val() & self.meta_ready.val() {
            self.meta_sent.d.next = true;
        }
        self.vq.read.next = self.retire.val();
        self.iq.read.next = self.retire.val();
        self.cq.read.next = self.retire.val();
        self.inflight.d.next = self.inflight.q.val();
        if self.done.q.val() & !self.retire.val() {
            self.inflight.d.next = self.inflight.q.val() + 1;
        }
        if !self.done.q.val() & self.retire.val() {
            self.inflight.d.next = self.inflight.q.val() - 1;
        }
        // Counters by `meta::Verdict` code (0 = accepted, 1 = not RoCE, ..., 8 = bad ICRC).
        if self.retire.val() {
            self.ei.d.next = 0.into();
            self.pv_valid.d.next = false;
            self.pay_done.d.next = false;
            self.meta_sent.d.next = false;
            if self.record.verdict.val() == 0 {
                self.c_ok.d.next = self.c_ok.q.val() + 1;
            }
            if self.record.verdict.val() == 1 {
                self.c_not_roce.d.next = self.c_not_roce.q.val() + 1;
            }
            if self.record.verdict.val() == 2 {
                self.c_truncated.d.next = self.c_truncated.q.val() + 1;
            }
            if self.record.verdict.val() == 3 {
                self.c_bad_ip.d.next = self.c_bad_ip.q.val() + 1;
            }
            if self.record.verdict.val() == 4 {
                self.c_bad_udp_length.d.next = self.c_bad_udp_length.q.val() + 1;
            }
            if self.record.verdict.val() == 5 {
                self.c_bad_tver.d.next = self.c_bad_tver.q.val() + 1;
            }
            if self.record.verdict.val() == 6 {
                self.c_unknown_opcode.d.next = self.c_unknown_opcode.q.val() + 1;
            }
            if self.record.verdict.val() == 7 {
                self.c_bad_length.d.next = self.c_bad_length.q.val() + 1;
            }
            if self.record.verdict.val() == 8 {
                self.c_bad_icrc.d.next = self.c_bad_icrc.q.val() + 1;
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
    }
}
