//! The command unit (the model's `exec_command`): started by the command doorbell, it reads the mailbox
//! over DMA, has `CmdExec` check and apply the command, writes the output header and the output back over
//! DMA (posted), and reports the status. A mailbox the host cannot read completes with `BadMailbox` and
//! nothing written, as in the model.
//!
//! `CmdUnit` is the sequencing (a state machine in `#[hdl_gen]`); `exec::CmdExec` is the tables and the
//! checks, generated from `wire`.

pub mod exec;

use crate::kit::*;
use exec::{MB_BYTES, TAIL_BYTES};
use wire::contract::cmd::{Status, MAILBOX_LEN, OUT_HDR};

/// The DMA read tag of mailbox reads.
pub const MAILBOX_TAG: u64 = 0;

#[derive(Copy, Clone, PartialEq, Eq, Debug, LogicState)]
pub enum CmdState {
    Idle,
    /// Asking for the mailbox.
    Request,
    /// Taking the mailbox's beats in (the first `MB_BYTES`; the rest of the read is dropped).
    Fetch,
    /// The tables the command names are being read (once no clear is pending).
    Lookup,
    /// The tables are in: the QP's oldest window entry being read (QUERY_QP's `sq_draining`).
    Peek,
    /// Checks settled: status and output kept for the write-back.
    Latch,
    /// Writing the output header and output back.
    Write,
    /// The tables written (if the command passed) and the status to the register file, at one edge.
    Finish,
}

#[derive(LogicBlock)]
pub struct CmdUnit {
    pub clock: Signal<In, Clock>,
    pub reset: Signal<In, Bit>,
    /// From the register file: the doorbell, and the mailbox address.
    pub start: Signal<In, Bit>,
    pub mb_iova: Signal<In, Bits<64>>,
    /// One cycle when the command has completed, with its status.
    pub done: Signal<Out, Bit>,
    pub status: Signal<Out, Bits<8>>,
    /// DMA read requests (one outstanding), and their completions (8 bytes a beat, `cpl_last` on the
    /// request's last, `cpl_err` when the host could not read).
    pub rd_valid: Signal<Out, Bit>,
    pub rd_ready: Signal<In, Bit>,
    pub rd_addr: Signal<Out, Bits<64>>,
    pub rd_len: Signal<Out, Bits<16>>,
    pub rd_tag: Signal<Out, Bits<8>>,
    pub cpl_valid: Signal<In, Bit>,
    pub cpl_data: Signal<In, Bits<64>>,
    pub cpl_tag: Signal<In, Bits<8>>,
    pub cpl_err: Signal<In, Bit>,
    pub cpl_last: Signal<In, Bit>,
    /// Posted DMA writes, one 8-byte beat each with its address and byte strobes.
    pub wr_valid: Signal<Out, Bit>,
    pub wr_ready: Signal<In, Bit>,
    pub wr_addr: Signal<Out, Bits<64>>,
    pub wr_data: Signal<Out, Bits<64>>,
    pub wr_strb: Signal<Out, Bits<8>>,
    /// To and from `CmdExec`.
    pub beat_valid: Signal<Out, Bit>,
    pub beat_data: Signal<Out, Bits<64>>,
    pub scan_start: Signal<Out, Bit>,
    pub lookup: Signal<Out, Bit>,
    pub latch: Signal<Out, Bit>,
    pub commit: Signal<Out, Bit>,
    pub out_index: Signal<Out, Bits<4>>,
    pub out_beat: Signal<In, Bits<64>>,
    pub exec_status: Signal<In, Bits<8>>,
    /// The tables may be read (no clear pending, and no engine between its reads and its write-back).
    pub quiet: Signal<In, Bit>,
    /// Between the lookup and the commit: an engine must not read a context the command may write.
    pub holding: Signal<Out, Bit>,
    /// The cycle after the lookup: the command reads the requesters' windows (`CmdExec::win_slot`).
    pub peek: Signal<Out, Bit>,
    state: DFF<CmdState>,
    addr: DFF<Bits<64>>,
    beats: DFF<Bits<6>>,
    bad: DFF<Bit>,
    mb_beats: Constant<Bits<6>>,
    tail_last: Constant<Bits<4>>,
    mb_len: Constant<Bits<16>>,
    out_off: Constant<Bits<64>>,
    bad_mailbox: Constant<Bits<8>>,
    tag: Constant<Bits<8>>,
}

impl Default for CmdUnit {
    fn default() -> Self {
        CmdUnit {
            clock: Signal::default(),
            reset: Signal::default(),
            start: Signal::default(),
            mb_iova: Signal::default(),
            done: Signal::default(),
            status: Signal::default(),
            rd_valid: Signal::default(),
            rd_ready: Signal::default(),
            rd_addr: Signal::default(),
            rd_len: Signal::default(),
            rd_tag: Signal::default(),
            cpl_valid: Signal::default(),
            cpl_data: Signal::default(),
            cpl_tag: Signal::default(),
            cpl_err: Signal::default(),
            cpl_last: Signal::default(),
            wr_valid: Signal::default(),
            wr_ready: Signal::default(),
            wr_addr: Signal::default(),
            wr_data: Signal::default(),
            wr_strb: Signal::default(),
            beat_valid: Signal::default(),
            beat_data: Signal::default(),
            scan_start: Signal::default(),
            lookup: Signal::default(),
            latch: Signal::default(),
            commit: Signal::default(),
            out_index: Signal::default(),
            out_beat: Signal::default(),
            exec_status: Signal::default(),
            quiet: Signal::default(),
            holding: Signal::default(),
            peek: Signal::default(),
            state: DFF::default(),
            addr: DFF::default(),
            beats: DFF::default(),
            bad: DFF::default(),
            mb_beats: Constant::new(((MB_BYTES / 8) as u64).into()),
            tail_last: Constant::new(((TAIL_BYTES / 8 - 1) as u64).into()),
            mb_len: Constant::new((MAILBOX_LEN as u64).into()),
            out_off: Constant::new((OUT_HDR as u64).into()),
            bad_mailbox: Constant::new((Status::BadMailbox as u64).into()),
            tag: Constant::new(MAILBOX_TAG.into()),
        }
    }
}

impl Logic for CmdUnit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, state, addr, beats, bad);
        self.done.next = false;
        self.status.next = self.exec_status.val();
        if self.bad.q.val() {
            self.status.next = self.bad_mailbox.val();
        }
        self.rd_valid.next = false;
        self.rd_addr.next = self.addr.q.val();
        self.rd_len.next = self.mb_len.val();
        self.rd_tag.next = self.tag.val();
        self.wr_valid.next = false;
        self.wr_addr.next = self.addr.q.val() + self.out_off.val() + (bit_cast::<64, 6>(self.beats.q.val()) << 3);
        self.wr_data.next = self.out_beat.val();
        self.wr_strb.next = 0xFF.into();
        self.beat_valid.next = false;
        self.beat_data.next = self.cpl_data.val();
        self.scan_start.next = false;
        self.lookup.next = false;
        self.latch.next = false;
        self.commit.next = false;
        self.out_index.next = self.beats.q.val().get_bits::<4>(0);
        self.holding.next = false;
        self.peek.next = false;
        match self.state.q.val() {
            CmdState::Idle => {
                if self.start.val() {
                    self.addr.d.next = self.mb_iova.val();
                    self.state.d.next = CmdState::Request;
                }
            }
            CmdState::Request => {
                self.rd_valid.next = true;
                self.beats.d.next = 0.into();
                self.bad.d.next = false;
                if self.rd_ready.val() {
                    self.state.d.next = CmdState::Fetch;
                }
            }
            CmdState::Fetch => {
                if self.cpl_valid.val() & (self.cpl_tag.val() == self.tag.val()) {
                    self.beat_valid.next = self.beats.q.val() < self.mb_beats.val();
                    self.beats.d.next = self.beats.q.val() + 1;
                    if self.cpl_err.val() {
                        self.bad.d.next = true;
                    }
                    if self.cpl_last.val() {
                        if self.bad.q.val() | self.cpl_err.val() {
                            self.state.d.next = CmdState::Finish;
                        } else {
                            self.scan_start.next = true;
                            self.state.d.next = CmdState::Lookup;
                        }
                    }
                }
            }
            CmdState::Lookup => {
                if self.quiet.val() {
                    self.lookup.next = true;
                    self.state.d.next = CmdState::Peek;
                }
            }
            CmdState::Peek => {
                self.holding.next = true;
                self.peek.next = true;
                self.state.d.next = CmdState::Latch;
            }
            CmdState::Latch => {
                self.holding.next = true;
                self.latch.next = true;
                self.beats.d.next = 0.into();
                self.state.d.next = CmdState::Write;
            }
            CmdState::Write => {
                self.holding.next = true;
                self.wr_valid.next = true;
                if self.wr_ready.val() {
                    self.beats.d.next = self.beats.q.val() + 1;
                    if self.beats.q.val().get_bits::<4>(0) == self.tail_last.val() {
                        self.state.d.next = CmdState::Finish;
                    }
                }
            }
            CmdState::Finish => {
                self.holding.next = true;
                // A mailbox that could not be read changes nothing.
                self.commit.next = !self.bad.q.val();
                self.done.next = true;
                self.state.d.next = CmdState::Idle;
            }
            _ => {
                self.state.d.next = CmdState::Idle;
            }
        }
        if self.reset.val() {
            self.state.d.next = CmdState::Idle;
        }
    }
}
