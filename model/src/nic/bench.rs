//! A bare NIC with host memory and a command mailbox, for the unit tests that drive it command by command
//! and decision by decision.

use super::{Decision, Nic, NicConfig};
use crate::hostmem::HostMemory;
use wire::contract::cmd::*;
use wire::contract::regs::cmd;
use wire::contract::verbs::{attr, QpState, QpType};

/// A QP the bench made, and where its rings are.
pub struct BenchQp {
    pub qpn: u32,
    pub cq_ring: u64,
    pub sq: u64,
}

/// A bare NIC and its host memory, with a mailbox.
pub struct Bench {
    pub nic: Nic,
    pub mem: HostMemory,
    mailbox: u64,
    token: u8,
}

impl Bench {
    pub fn new() -> Self {
        let mem = HostMemory::new();
        let mailbox = mem.alloc(MAILBOX_LEN);
        let mut nic = Nic::new(NicConfig::default());
        nic.mmio_write(cmd::BASE + cmd::MAILBOX_LO, mailbox as u32);
        nic.mmio_write(cmd::BASE + cmd::MAILBOX_HI, (mailbox >> 32) as u32);
        Bench { nic, mem, mailbox, token: 0 }
    }

    /// Writes the command into the mailbox and rings the doorbell; the command is not run yet.
    pub fn ring(&mut self, opcode: u16, input: &[u8]) {
        let mut mb = vec![0u8; MAILBOX_LEN];
        let _ = CmdHeaderRepr { opcode }.write_to(&mut mb);
        mb[IN..IN + input.len()].copy_from_slice(input);
        self.mem.write(self.mailbox, &mb).unwrap();
        self.token = self.token.wrapping_add(1);
        self.nic.mmio_write(cmd::BASE + cmd::DOORBELL, u32::from(self.token));
    }

    /// Rings and runs a command: its status and output.
    pub fn run(&mut self, opcode: u16, input: &[u8]) -> (Status, Vec<u8>) {
        self.ring(opcode, input);
        self.nic.apply(0, &Decision::Command, &mut self.mem).unwrap();
        let mut mb = vec![0u8; MAILBOX_LEN];
        self.mem.read(self.mailbox, &mut mb).unwrap();
        let s = Status::from_u8(CmdOutHeaderRepr::from_bytes(&mb[OUT_HDR..]).unwrap().status);
        (s, mb[OUT..].to_vec())
    }

    pub fn id(&mut self, opcode: u16, input: &[u8]) -> u32 {
        let (s, out) = self.run(opcode, input);
        assert_eq!(s, Status::Ok, "command {opcode:#x}");
        ObjOutRepr::from_bytes(&out).unwrap().id
    }

    /// A PD, a CQ and an RC QP in RESET.
    pub fn qp(&mut self) -> u32 {
        self.qp_with_rings().qpn
    }

    /// A PD, a CQ of 16 CQEs and an RC QP in RESET with rings of 16 WQEs (send slots of 128 bytes), and where
    /// they are.
    pub fn qp_with_rings(&mut self) -> BenchQp {
        self.qp_of_type(QpType::Rc)
    }

    /// As `qp_with_rings`, of type `qp_type`.
    pub fn qp_of_type(&mut self, qp_type: QpType) -> BenchQp {
        let pdn = self.id(op::ALLOC_PD, &[]);
        let ring = self.mem.alloc(4096);
        let cqn = self.id(op::CREATE_CQ, &CreateCqRepr { log_size: 4, ring_iova: ring }.to_bytes());
        let (sq, rq) = (self.mem.alloc(4096), self.mem.alloc(4096));
        let c = CreateQpRepr {
            pdn,
            send_cqn: cqn,
            recv_cqn: cqn,
            sq_log_size: 4,
            sq_log_stride: 7,
            rq_log_size: 4,
            rq_log_stride: 6,
            sq_iova: sq,
            rq_iova: rq,
            sq_sig_all: 0,
            qp_type: qp_type as u8,
        };
        let qpn = self.id(op::CREATE_QP, &c.to_bytes());
        BenchQp { qpn, cq_ring: ring, sq }
    }

    /// A QP of `qp_with_rings` taken to RTS toward QP 0x11 at 10.0.0.2 (this port 10.0.0.1, GID index 0).
    pub fn rts_qp(&mut self) -> BenchQp {
        let gid = wire::ipv6::gid_from_ipv4([10, 0, 0, 1]);
        let (gid_hi, gid_lo) = gid_split(&gid);
        assert_eq!(self.run(op::SET_PORT, &SetPortRepr { mac: 0x0200_0000_0001 }.to_bytes()).0, Status::Ok);
        assert_eq!(self.run(op::SET_GID, &SetGidRepr { index: 0, valid: 1, gid_hi, gid_lo }.to_bytes()).0, Status::Ok);
        let q = self.qp_with_rings();
        let (dgid_hi, dgid_lo) = gid_split(&wire::ipv6::gid_from_ipv4([10, 0, 0, 2]));
        let steps = [
            (QpState::Init, attr::PKEY_INDEX | attr::PORT | attr::ACCESS_FLAGS),
            (
                QpState::Rtr,
                attr::AV
                    | attr::PATH_MTU
                    | attr::DEST_QPN
                    | attr::RQ_PSN
                    | attr::MAX_DEST_RD_ATOMIC
                    | attr::MIN_RNR_TIMER,
            ),
            (QpState::Rts, attr::TIMEOUT | attr::RETRY_CNT | attr::RNR_RETRY | attr::SQ_PSN | attr::MAX_QP_RD_ATOMIC),
        ];
        for (state, mask) in steps {
            let a = QpAttrsRepr {
                qpn: q.qpn,
                attr_mask: attr::STATE | mask,
                qp_state: state as u8,
                qp_access_flags: wire::contract::verbs::access::ALL,
                port_num: 1,
                path_mtu: 3,
                dest_qp_num: 0x11,
                max_dest_rd_atomic: 4,
                max_rd_atomic: 4,
                timeout: 14,
                retry_cnt: 7,
                rnr_retry: 7,
                dmac: 0x0200_0000_0002,
                dgid_hi,
                dgid_lo,
                ..Default::default()
            };
            assert_eq!(self.run(op::MODIFY_QP, &a.to_bytes()).0, Status::Ok, "to {state:?}");
        }
        q
    }

    /// CQE `n` of `q`'s CQ.
    pub fn cqe(&self, q: &BenchQp, n: u64) -> wire::contract::cqe::CqeRepr {
        let mut b = [0u8; wire::contract::cqe::CQE_LEN];
        self.mem.read(q.cq_ring + n * wire::contract::cqe::CQE_LEN as u64, &mut b).unwrap();
        wire::contract::cqe::CqeRepr::from_bytes(&b).unwrap()
    }

    pub fn modify(&mut self, qpn: u32, state: QpState) -> Status {
        let a = QpAttrsRepr { qpn, attr_mask: attr::STATE, qp_state: state as u8, ..Default::default() };
        self.run(op::MODIFY_QP, &a.to_bytes()).0
    }
}
