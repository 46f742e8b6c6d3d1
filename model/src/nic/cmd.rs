//! Command execution: read the mailbox, check, act, write status and output. A refused command changes
//! nothing. The command unit runs a command as a decision of its own after the doorbell started it (STATUS
//! busy meanwhile); what a command starts that takes long (a flush) goes on in the background.

use super::cq::Cq;
use super::dcqcn::Rp;
use super::qp::{ModifyError, Qp, Ring};
use super::{Nic, Output};
use crate::hostmem::Dma;
use wire::contract::cmd::*;
use wire::contract::verbs::{attr, QpState, QpType};
use wire::contract::wqe::{MAX_LOG_STRIDE, MIN_RQ_LOG_STRIDE, MIN_SQ_LOG_STRIDE};

type CmdResult = Result<Vec<u8>, (Status, u32)>;

impl Nic {
    /// Runs the command in the mailbox; its status goes to STATUS (busy cleared) and, with its output, to the
    /// mailbox. Only a mailbox that cannot be read fails as such: the NIC's writes cannot fail (PCIe writes
    /// are posted).
    pub(super) fn exec_command(&mut self, mem: &mut dyn Dma) {
        self.cmd.qpn = None;
        let mut mb = [0u8; MAILBOX_LEN];
        let (opcode, result) = if mem.dma_read(self.mailbox, &mut mb).is_err() {
            (0, Err((Status::BadMailbox, 0)))
        } else {
            let opcode = CmdHeader::new_unchecked(&mb[..]).opcode();
            let input = &mb[IN..OUT_HDR];
            let r = match opcode {
                op::SET_PORT => self.cmd_set_port(input),
                op::SET_GID => self.cmd_set_gid(input),
                op::ALLOC_PD => self.cmd_alloc_pd(),
                op::DEALLOC_PD => self.cmd_dealloc_pd(input),
                op::REG_MR => self.cmd_reg_mr(input),
                op::DEREG_MR => self.cmd_dereg_mr(input),
                op::CREATE_CQ => self.cmd_create_cq(input),
                op::DESTROY_CQ => self.cmd_destroy_cq(input),
                op::CREATE_QP => self.cmd_create_qp(input),
                op::MODIFY_QP => self.cmd_modify_qp(input),
                op::QUERY_QP => self.cmd_query_qp(input),
                op::DESTROY_QP => self.cmd_destroy_qp(input),
                op::CREATE_EQ => self.cmd_create_eq(input),
                _ => Err((Status::BadOp, u32::from(opcode))),
            };
            (opcode, r)
        };
        if result.is_ok() && matches!(opcode, op::CREATE_QP | op::MODIFY_QP) {
            // A QP's records written: the requester's kept descriptor may be stale.
            self.kept = None;
        }
        let (status, syndrome, out) = match result {
            Ok(out) => (Status::Ok, 0, out),
            Err((s, syn)) => (s, syn, Vec::new()),
        };
        if status != Status::BadMailbox {
            let hdr = CmdOutHeaderRepr { status: status as u8, syndrome };
            let mut tail = vec![0u8; MAILBOX_LEN - OUT_HDR];
            let _ = hdr.write_to(&mut tail);
            tail[OUT - OUT_HDR..OUT - OUT_HDR + out.len()].copy_from_slice(&out);
            mem.dma_write(self.mailbox + OUT_HDR as u64, &tail);
        }
        self.emit(|| Output::Command { opcode, status, syndrome, out });
        self.cmd.busy = false;
        self.cmd.status = status as u8;
    }

    fn cmd_set_port(&mut self, input: &[u8]) -> CmdResult {
        let r = SetPortRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?;
        wire::field::set_be(&mut self.mac, r.mac);
        Ok(Vec::new())
    }

    fn cmd_set_gid(&mut self, input: &[u8]) -> CmdResult {
        let r = SetGidRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?;
        let slot = self.gids.get_mut(usize::from(r.index)).ok_or((Status::BadParam, 1))?;
        *slot = (r.valid != 0).then(|| gid_join(r.gid_hi, r.gid_lo));
        Ok(Vec::new())
    }

    fn cmd_alloc_pd(&mut self) -> CmdResult {
        let i = (1..self.pds.len()).find(|&i| !self.pds[i]).ok_or((Status::NoResources, 0))?;
        self.pds[i] = true;
        Ok(ObjOutRepr { id: i as u32 }.to_bytes().to_vec())
    }

    fn pd_valid(&self, pdn: u32) -> bool {
        self.pds.get(pdn as usize).copied().unwrap_or(false)
    }

    fn cmd_dealloc_pd(&mut self, input: &[u8]) -> CmdResult {
        let pdn = ObjInRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?.id;
        if !self.pd_valid(pdn) {
            return Err((Status::BadResource, pdn));
        }
        if self.mrs.in_use_by_pd(pdn) || self.qps.iter().flatten().any(|q| q.pdn == pdn) {
            return Err((Status::Busy, pdn));
        }
        self.pds[pdn as usize] = false;
        Ok(Vec::new())
    }

    fn cmd_reg_mr(&mut self, input: &[u8]) -> CmdResult {
        let r = RegMrRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?;
        if !self.pd_valid(r.pdn) {
            return Err((Status::BadResource, r.pdn));
        }
        if r.access & !wire::contract::verbs::access::ALL != 0
            || r.iova.checked_add(r.length).is_none()
            || r.length > 1 << wire::contract::qpc::MR_LEN_BITS
        {
            return Err((Status::BadParam, 1));
        }
        let key = self.mrs.register(r.pdn, r.iova, r.length, r.access).ok_or((Status::NoResources, 0))?;
        Ok(RegMrOutRepr { lkey: key, rkey: key }.to_bytes().to_vec())
    }

    fn cmd_dereg_mr(&mut self, input: &[u8]) -> CmdResult {
        let key = ObjInRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?.id;
        if self.mrs.deregister(key) {
            Ok(Vec::new())
        } else {
            Err((Status::BadResource, key))
        }
    }

    fn cmd_create_cq(&mut self, input: &[u8]) -> CmdResult {
        let r = CreateCqRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?;
        if r.log_size > self.cfg.profile.max_log_ring || r.ring_iova == 0 {
            return Err((Status::BadParam, 1));
        }
        let i = (1..self.cqs.len()).find(|&i| self.cqs[i].is_none()).ok_or((Status::NoResources, 0))?;
        self.cqs[i] = Some(Cq::new(r.ring_iova, r.log_size));
        Ok(ObjOutRepr { id: i as u32 }.to_bytes().to_vec())
    }

    fn cmd_create_eq(&mut self, input: &[u8]) -> CmdResult {
        let r = CreateCqRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?;
        if r.log_size > self.cfg.profile.max_log_ring || r.ring_iova == 0 {
            return Err((Status::BadParam, 1));
        }
        if self.eq.is_some() {
            return Err((Status::BadState, 0));
        }
        self.eq = Some(super::eq::Eq::new(r.ring_iova, r.log_size));
        Ok(ObjOutRepr { id: 0 }.to_bytes().to_vec())
    }

    fn cmd_destroy_cq(&mut self, input: &[u8]) -> CmdResult {
        let cqn = ObjInRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?.id;
        if !matches!(self.cqs.get(cqn as usize), Some(Some(_))) {
            return Err((Status::BadResource, cqn));
        }
        if self.qps.iter().flatten().any(|q| q.send_cqn == cqn || q.recv_cqn == cqn) {
            return Err((Status::Busy, cqn));
        }
        self.cqs[cqn as usize] = None;
        Ok(Vec::new())
    }

    fn cq_valid(&self, cqn: u32) -> bool {
        matches!(self.cqs.get(cqn as usize), Some(Some(_)))
    }

    fn cmd_create_qp(&mut self, input: &[u8]) -> CmdResult {
        let r = CreateQpRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?;
        let qp_type = QpType::from_u8(r.qp_type).ok_or((Status::BadParam, 5))?;
        if !self.pd_valid(r.pdn) {
            return Err((Status::BadResource, r.pdn));
        }
        if !self.cq_valid(r.send_cqn) || !self.cq_valid(r.recv_cqn) {
            return Err((Status::BadResource, 1));
        }
        let stride_ok = |s: u8, min: u8| (min..=MAX_LOG_STRIDE).contains(&s);
        let max_log = self.cfg.profile.max_log_ring;
        if r.sq_log_size > max_log
            || r.rq_log_size > max_log
            || !stride_ok(r.sq_log_stride, MIN_SQ_LOG_STRIDE)
            || !stride_ok(r.rq_log_stride, MIN_RQ_LOG_STRIDE)
            || r.sq_iova == 0
            || r.rq_iova == 0
        {
            return Err((Status::BadParam, 2));
        }
        // QPN 0 and 1 are the special QPs of IB; never handed out.
        let i = (2..self.qps.len()).find(|&i| self.qps[i].is_none()).ok_or((Status::NoResources, 0))?;
        let rp = Rp::new(self.line, &self.dcqcn);
        let mut qp = Qp::new(i as u32, r.pdn, rp);
        qp.qp_type = qp_type;
        qp.send_cqn = r.send_cqn;
        qp.recv_cqn = r.recv_cqn;
        qp.sq = Ring { iova: r.sq_iova, log_size: r.sq_log_size, log_stride: r.sq_log_stride, pi: 0, ci: 0 };
        qp.rq = Ring { iova: r.rq_iova, log_size: r.rq_log_size, log_stride: r.rq_log_stride, pi: 0, ci: 0 };
        qp.sig_all = r.sq_sig_all != 0;
        self.qps[i] = Some(Box::new(qp));
        self.set_active(i as u32, true);
        self.cmd.qpn = Some(i as u32);
        Ok(ObjOutRepr { id: i as u32 }.to_bytes().to_vec())
    }

    fn cmd_modify_qp(&mut self, input: &[u8]) -> CmdResult {
        let a = QpAttrsRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?;
        let p = self.cfg.profile;
        let mask = a.attr_mask;
        let over = |set: u32, v: u8, max: u32| mask & set != 0 && u32::from(v) > max;
        if over(attr::MAX_QP_RD_ATOMIC, a.max_rd_atomic, p.max_qp_init_rd_atom)
            || over(attr::MAX_DEST_RD_ATOMIC, a.max_dest_rd_atomic, p.max_qp_rd_atom)
        {
            return Err((Status::BadParam, 3));
        }
        if mask & attr::AV != 0 && self.gid(a.sgid_index).is_none() {
            return Err((Status::BadParam, 4));
        }
        self.cmd.qpn = Some(a.qpn);
        let qp = self.qp_mut(a.qpn).ok_or((Status::BadResource, a.qpn))?;
        let was_err = qp.state == QpState::Err;
        qp.modify(&a).map_err(|e| match e {
            ModifyError::Rule(_) => (Status::BadState, mask),
            ModifyError::BadValue(_) => (Status::BadParam, mask),
        })?;
        if qp.state == QpState::Err && !was_err {
            self.enter_err(a.qpn);
        }
        Ok(Vec::new())
    }

    fn cmd_query_qp(&mut self, input: &[u8]) -> CmdResult {
        let qpn = ObjInRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?.id;
        let qp = self.qp(qpn).ok_or((Status::BadResource, qpn))?;
        Ok(qp.query().to_bytes().to_vec())
    }

    /// DESTROY_QP takes a QP in RESET, or one in ERR whose flush is over: nothing of it is left in the NIC,
    /// so its QPN is free the moment the command completes.
    fn cmd_destroy_qp(&mut self, input: &[u8]) -> CmdResult {
        let qpn = ObjInRepr::from_bytes(input).map_err(|_| (Status::BadParam, 0))?.id;
        let qp = self.qp(qpn).ok_or((Status::BadResource, qpn))?;
        let quiet = qp.state == QpState::Reset || (qp.state == QpState::Err && !self.flush_pending(qpn));
        if !quiet {
            return Err((Status::BadState, qpn));
        }
        self.qps[qpn as usize] = None;
        self.set_active(qpn, false);
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::bench::Bench;
    use crate::nic::Decision;
    use wire::contract::regs::{cmd, Counter};

    /// A command runs as a decision of its own: STATUS is busy from the doorbell until then, a second
    /// doorbell meanwhile is ignored and counted, and a command decision with none pending is refused.
    #[test]
    fn commands_run_in_the_background() {
        let mut b = Bench::new();
        b.ring(op::ALLOC_PD, &[]);
        let busy = b.nic.mmio_read(cmd::BASE + cmd::STATUS);
        assert_eq!((busy & cmd::STATUS_BUSY, (busy >> 8) & 0xFF), (cmd::STATUS_BUSY, 1));
        b.nic.mmio_write(cmd::BASE + cmd::DOORBELL, 9);
        assert_eq!(b.nic.counter(Counter::cmd_doorbells_ignored), 1);
        b.nic.apply(0, &Decision::Command, &mut b.mem).unwrap();
        let done = b.nic.mmio_read(cmd::BASE + cmd::STATUS);
        assert_eq!(done, 1 << 8, "not busy, token 1 (the ignored doorbell's 9 lost), status OK");
        let e = b.nic.apply(0, &Decision::Command, &mut b.mem).unwrap_err();
        assert!(e.reason.contains("no command is pending"), "{e}");
    }

    /// DESTROY_QP takes a QP in RESET, or in ERR once its flush is over; not one that is running.
    #[test]
    fn destroy_needs_a_quiet_qp() {
        let mut b = Bench::new();
        let qpn = b.qp();
        let input = ObjInRepr { id: qpn }.to_bytes();
        let init = QpAttrsRepr {
            qpn,
            attr_mask: attr::STATE | attr::PKEY_INDEX | attr::PORT | attr::ACCESS_FLAGS,
            qp_state: QpState::Init as u8,
            port_num: 1,
            ..Default::default()
        };
        assert_eq!(b.run(op::MODIFY_QP, &init.to_bytes()).0, Status::Ok);
        assert_eq!(b.run(op::DESTROY_QP, &input).0, Status::BadState, "INIT");
        // In ERR with a posted receive WQE: busy until the flush has completed it.
        b.nic.mmio_write(wire::contract::regs::doorbell::qp(qpn, wire::contract::regs::doorbell::QP_RQ_PI), 1);
        assert_eq!(b.modify(qpn, QpState::Err), Status::Ok);
        assert!(b.nic.flush_pending(qpn));
        assert_eq!(b.run(op::DESTROY_QP, &input).0, Status::BadState, "ERR, flushing");
        b.nic.apply(0, &Decision::Flush { qpn }, &mut b.mem).unwrap();
        assert!(!b.nic.flush_pending(qpn));
        assert_eq!(b.run(op::DESTROY_QP, &input).0, Status::Ok, "ERR, flushed");
        assert_eq!(b.run(op::DESTROY_QP, &input).0, Status::BadResource, "gone");
        let again = b.qp();
        assert_eq!(again, qpn, "its number is free at once");
        assert_eq!(b.run(op::DESTROY_QP, &ObjInRepr { id: again }.to_bytes()).0, Status::Ok, "RESET");
    }

    /// A 64-bit register's high word is the one latched by the read of its low word.
    #[test]
    fn reading_a_low_word_latches_the_high_word() {
        let mut b = Bench::new();
        let c = Counter::tx_bytes;
        b.nic.counters[c as usize] = 0x1_FFFF_FFFF;
        assert_eq!(b.nic.mmio_read(c.offset()), 0xFFFF_FFFF);
        b.nic.counters[c as usize] = 0x2_0000_0000;
        assert_eq!(b.nic.mmio_read(c.offset() + 4), 1, "the high word of the value the low word came from");
        assert_eq!(b.nic.mmio_read(c.offset()), 0);
        assert_eq!(b.nic.mmio_read(c.offset() + 4), 2);
        use wire::contract::regs::id;
        b.nic.now = (5u64 << 32) * crate::PS_PER_NS + 7_000;
        assert_eq!(b.nic.mmio_read(id::TIME_NS_LO), 7);
        b.nic.now += 1u64 << 45;
        assert_eq!(b.nic.mmio_read(id::TIME_NS_HI), 5, "latched at the low word's read");
    }

    fn st(b: &mut Bench, opcode: u16, input: &[u8]) -> Status {
        b.run(opcode, input).0
    }

    /// PDs and CQs: refused when unknown, busy while something uses them, free after.
    #[test]
    fn pds_and_cqs_are_released_only_when_unused() {
        let mut b = Bench::new();
        let pd = b.id(op::ALLOC_PD, &[]);
        assert_eq!(pd, 1, "PDN 0 is never handed out");
        let key = RegMrOutRepr::from_bytes(
            &b.run(op::REG_MR, &RegMrRepr { pdn: pd, access: 0, iova: 0x1000, length: 64 }.to_bytes()).1,
        )
        .unwrap()
        .lkey;
        let id = |n| ObjInRepr { id: n }.to_bytes();
        assert_eq!(st(&mut b, op::DEALLOC_PD, &id(pd)), Status::Busy, "an MR in it");
        assert_eq!(st(&mut b, op::DEREG_MR, &id(key)), Status::Ok);
        assert_eq!(st(&mut b, op::DEREG_MR, &id(key)), Status::BadResource, "deregistered already");
        assert_eq!(st(&mut b, op::DEALLOC_PD, &id(pd)), Status::Ok);
        assert_eq!(st(&mut b, op::DEALLOC_PD, &id(pd)), Status::BadResource, "freed already");
        assert_eq!(st(&mut b, op::DEALLOC_PD, &id(0)), Status::BadResource);
        let q = b.qp_with_rings();
        let (send, recv) = (b.nic.qp(q.qpn).unwrap().send_cqn, b.nic.qp(q.qpn).unwrap().recv_cqn);
        let pdn = b.nic.qp(q.qpn).unwrap().pdn;
        assert_eq!(st(&mut b, op::DEALLOC_PD, &id(pdn)), Status::Busy, "a QP in it");
        assert_eq!(st(&mut b, op::DESTROY_CQ, &id(send)), Status::Busy, "a QP's send CQ");
        // A second CQ as the QP's receive CQ only.
        let ring = b.mem.alloc(4096);
        let other = b.id(op::CREATE_CQ, &CreateCqRepr { log_size: 4, ring_iova: ring }.to_bytes());
        b.nic.qp_mut(q.qpn).unwrap().recv_cqn = other;
        assert_eq!(st(&mut b, op::DESTROY_CQ, &id(other)), Status::Busy, "a QP's receive CQ");
        b.nic.qp_mut(q.qpn).unwrap().recv_cqn = recv;
        assert_eq!(st(&mut b, op::DESTROY_CQ, &id(other)), Status::Ok);
        assert_eq!(st(&mut b, op::DESTROY_CQ, &id(other)), Status::BadResource, "gone");
        assert_eq!(st(&mut b, op::DESTROY_QP, &id(q.qpn)), Status::Ok);
        assert_eq!(st(&mut b, op::DESTROY_CQ, &id(send)), Status::Ok, "no QP left on it");
        assert_eq!(st(&mut b, op::DEALLOC_PD, &id(pdn)), Status::Ok);
        assert_eq!(st(&mut b, 0x7777, &[]), Status::BadOp);
    }

    /// REG_MR's checks: a PD that exists, known access bits, no wrap past 2^64, at most 2^48 bytes; full table.
    #[test]
    fn reg_mr_checks_its_input() {
        let mut b = Bench::new();
        let pdn = b.id(op::ALLOC_PD, &[]);
        let mr = |pdn, access, iova, length| RegMrRepr { pdn, access, iova, length }.to_bytes();
        let all = wire::contract::verbs::access::ALL;
        assert_eq!(st(&mut b, op::REG_MR, &mr(pdn + 1, 0, 0x1000, 64)), Status::BadResource);
        assert_eq!(st(&mut b, op::REG_MR, &mr(pdn, 1 << 4, 0x1000, 64)), Status::BadParam, "an unknown access bit");
        assert_eq!(st(&mut b, op::REG_MR, &mr(pdn, all, u64::MAX - 8, 64)), Status::BadParam, "wraps");
        assert_eq!(st(&mut b, op::REG_MR, &mr(pdn, all, 0, (1 << 48) + 1)), Status::BadParam, "past 2^48");
        assert_eq!(st(&mut b, op::REG_MR, &mr(pdn, all, 0, 1 << 48)), Status::Ok, "2^48 exactly");
        for _ in 2..b.nic.cfg.profile.max_mr {
            assert_eq!(st(&mut b, op::REG_MR, &mr(pdn, 0, 0x1000, 8)), Status::Ok);
        }
        assert_eq!(st(&mut b, op::REG_MR, &mr(pdn, 0, 0x1000, 8)), Status::NoResources, "the table is full");
    }

    /// CREATE_CQ and CREATE_EQ: a ring of at most the profile's largest size at a real address; one EQ.
    #[test]
    fn rings_of_cqs_and_the_eq_are_checked() {
        let mut b = Bench::new();
        let max = b.nic.cfg.profile.max_log_ring;
        let ring = b.mem.alloc(64);
        for opcode in [op::CREATE_CQ, op::CREATE_EQ] {
            let cq = |log_size, ring_iova| CreateCqRepr { log_size, ring_iova }.to_bytes();
            assert_eq!(st(&mut b, opcode, &cq(max + 1, ring)), Status::BadParam, "{opcode:#x} too large");
            assert_eq!(st(&mut b, opcode, &cq(1, 0)), Status::BadParam, "{opcode:#x} at IOVA 0");
            assert_eq!(st(&mut b, opcode, &cq(max, ring)), Status::Ok, "{opcode:#x} the largest");
        }
        assert_eq!(
            st(&mut b, op::CREATE_EQ, &CreateCqRepr { log_size: 1, ring_iova: ring }.to_bytes()),
            Status::BadState,
            "a second EQ"
        );
        for _ in 2..b.nic.cfg.profile.max_cq {
            assert_eq!(
                st(&mut b, op::CREATE_CQ, &CreateCqRepr { log_size: 1, ring_iova: ring }.to_bytes()),
                Status::Ok
            );
        }
        assert_eq!(
            st(&mut b, op::CREATE_CQ, &CreateCqRepr { log_size: 1, ring_iova: ring }.to_bytes()),
            Status::NoResources
        );
    }

    /// CREATE_QP's checks, each refused on its own: type, PD, CQs, ring sizes, strides and addresses.
    #[test]
    fn create_qp_checks_each_field() {
        let mut b = Bench::new();
        let good = {
            let q = b.qp_with_rings();
            let qp = b.nic.qp(q.qpn).unwrap();
            CreateQpRepr {
                pdn: qp.pdn,
                send_cqn: qp.send_cqn,
                recv_cqn: qp.recv_cqn,
                sq_log_size: 4,
                sq_log_stride: 7,
                rq_log_size: 4,
                rq_log_stride: 6,
                sq_iova: q.sq,
                rq_iova: q.sq,
                sq_sig_all: 1,
                qp_type: QpType::Rc as u8,
            }
        };
        let max = b.nic.cfg.profile.max_log_ring;
        type Spoil = (fn(&mut CreateQpRepr, u8), Status);
        let spoils: [Spoil; 12] = [
            (|c, _| c.qp_type = 3, Status::BadParam),
            (|c, _| c.pdn += 1, Status::BadResource),
            (|c, _| c.send_cqn += 1, Status::BadResource),
            (|c, _| c.recv_cqn += 1, Status::BadResource),
            (|c, m| c.sq_log_size = m + 1, Status::BadParam),
            (|c, m| c.rq_log_size = m + 1, Status::BadParam),
            (|c, _| c.sq_log_stride = MIN_SQ_LOG_STRIDE - 1, Status::BadParam),
            (|c, _| c.rq_log_stride = MIN_RQ_LOG_STRIDE - 1, Status::BadParam),
            (|c, _| c.sq_log_stride = MAX_LOG_STRIDE + 1, Status::BadParam),
            (|c, _| c.rq_log_stride = MAX_LOG_STRIDE + 1, Status::BadParam),
            (|c, _| c.sq_iova = 0, Status::BadParam),
            (|c, _| c.rq_iova = 0, Status::BadParam),
        ];
        for (i, (spoil, want)) in spoils.into_iter().enumerate() {
            let mut c = good;
            spoil(&mut c, max);
            assert_eq!(st(&mut b, op::CREATE_QP, &c.to_bytes()), want, "spoil {i}");
        }
        let mut at_limits = good;
        (at_limits.sq_log_size, at_limits.rq_log_size, at_limits.sq_log_stride) = (max, max, MAX_LOG_STRIDE);
        (at_limits.rq_log_stride, at_limits.qp_type) = (MIN_RQ_LOG_STRIDE, QpType::RawPacket as u8);
        let qpn = b.id(op::CREATE_QP, &at_limits.to_bytes());
        let q = b.nic.qp(qpn).unwrap();
        assert_eq!(
            (q.qp_type, q.sig_all, q.sq.log_size, q.rq.log_stride),
            (QpType::RawPacket, true, max, MIN_RQ_LOG_STRIDE)
        );
        for _ in 4..b.nic.cfg.profile.max_qp {
            assert_eq!(st(&mut b, op::CREATE_QP, &good.to_bytes()), Status::Ok);
        }
        assert_eq!(st(&mut b, op::CREATE_QP, &good.to_bytes()), Status::NoResources);
    }

    /// MODIFY_QP: READ/atomic depths past the profile's refused only when in the mask, an address vector's
    /// source GID must exist, an unknown QP, a transition's rule and a bad value each their own status;
    /// QUERY_QP of an unknown QP; a mailbox the NIC cannot read.
    #[test]
    fn modify_and_query_qp_statuses() {
        let mut b = Bench::new();
        let qpn = b.qp();
        let p = b.nic.cfg.profile;
        let m = |attr_mask, f: fn(&mut QpAttrsRepr)| {
            let mut a = QpAttrsRepr { qpn, attr_mask, ..Default::default() };
            f(&mut a);
            a.to_bytes()
        };
        assert_eq!((p.max_qp_init_rd_atom, p.max_qp_rd_atom), (4, 4), "the board profile's");
        assert_eq!(st(&mut b, op::MODIFY_QP, &m(attr::MAX_QP_RD_ATOMIC, |a| a.max_rd_atomic = 5)), Status::BadParam);
        assert_eq!(
            st(&mut b, op::MODIFY_QP, &m(attr::MAX_DEST_RD_ATOMIC, |a| a.max_dest_rd_atomic = 5)),
            Status::BadParam
        );
        assert_eq!(
            st(&mut b, op::MODIFY_QP, &m(0, |a| a.max_rd_atomic = 5)),
            Status::Ok,
            "not in the mask: not checked"
        );
        assert_eq!(st(&mut b, op::MODIFY_QP, &m(attr::AV, |a| a.sgid_index = 2)), Status::BadParam, "no GID 2");
        assert_eq!(st(&mut b, op::MODIFY_QP, &m(attr::STATE, |a| a.qp_state = QpState::Rts as u8)), Status::BadState);
        let init = attr::STATE | attr::PKEY_INDEX | attr::PORT | attr::ACCESS_FLAGS;
        assert_eq!(
            st(&mut b, op::MODIFY_QP, &m(init, |a| (a.qp_state, a.port_num) = (1, 2))),
            Status::BadParam,
            "port 2"
        );
        assert_eq!(st(&mut b, op::MODIFY_QP, &m(init, |a| (a.qp_state, a.port_num) = (1, 1))), Status::Ok);
        let mut unknown = QpAttrsRepr { qpn: qpn + 5, ..Default::default() };
        unknown.attr_mask = 0;
        assert_eq!(st(&mut b, op::MODIFY_QP, &unknown.to_bytes()), Status::BadResource);
        assert_eq!(st(&mut b, op::QUERY_QP, &ObjInRepr { id: qpn + 5 }.to_bytes()), Status::BadResource);
        let (s, out) = b.run(op::QUERY_QP, &ObjInRepr { id: qpn }.to_bytes());
        assert_eq!((s, QpAttrsRepr::from_bytes(&out).unwrap().qp_state), (Status::Ok, QpState::Init as u8));
        b.nic.mmio_write(cmd::BASE + cmd::MAILBOX_LO, 0x10);
        b.nic.mmio_write(cmd::BASE + cmd::MAILBOX_HI, 0);
        b.nic.mmio_write(cmd::BASE + cmd::DOORBELL, 1);
        b.nic.apply(0, &Decision::Command, &mut b.mem).unwrap();
        assert_eq!(b.nic.mmio_read(cmd::BASE + cmd::STATUS) & 0xFF, Status::BadMailbox as u32);
    }
}
