//! Hardware profiles: the device's limits, as the ID block reports them and `ibv_query_device` shows them.
//! Every table and queue of the NIC is sized from one of these, so a profile fixes the block RAM a build
//! needs (`qpc::tables`). `board` fits the first target board (Lattice LFE5U-45F); `large` is a 100G-class
//! part with room for 16K QPs.

/// A device's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub name: &'static str,
    /// QPs (QPN 0 and 1 are never handed out).
    pub max_qp: u32,
    /// CQs (CQN 0 is never handed out).
    pub max_cq: u32,
    /// MRs (key index 0 is never handed out).
    pub max_mr: u32,
    /// PDs (PDN 0 is never handed out).
    pub max_pd: u32,
    /// SGEs per send or receive WQE.
    pub max_sge: u32,
    /// Inline bytes per send WQE.
    pub max_inline: u32,
    /// READ and atomic requests a QP executes and keeps for duplicates, as responder
    /// (`max_qp_rd_atom`: bounds `max_dest_rd_atomic`).
    pub max_qp_rd_atom: u32,
    /// READ and atomic requests a QP keeps outstanding, as requester (`max_qp_init_rd_atom`: bounds
    /// `max_rd_atomic`).
    pub max_qp_init_rd_atom: u32,
    /// Send WQEs the requester holds per QP: fetched from the SQ and not yet completed. Their descriptors are
    /// read again from the SQ when a packet is (re)built, so only their transport state is on chip.
    pub wqe_window: u32,
    /// Responses (READ response streams, atomic ACKs, NAKs) a QP's responder queues, besides its one coalesced
    /// ACK. A request whose response does not fit is dropped unexecuted and counted.
    pub resp_queue: u32,
    /// Frames the NIC sends of its own (CNPs, ARP and ICMP echo replies) waiting for the port. Past it they
    /// are dropped and counted.
    pub ctrl_queue: u32,
    /// log2 of the largest SQ, RQ, CQ or EQ.
    pub max_log_ring: u8,
}

impl Profile {
    /// The first target board (Colorlight i9, LFE5U-45F): 256 QPs, contexts in at most 72 of its 108 DP16KD.
    pub const fn board() -> Profile {
        Profile {
            name: "board",
            max_qp: 256,
            max_cq: 256,
            max_mr: 256,
            max_pd: 64,
            max_sge: 4,
            max_inline: 64,
            max_qp_rd_atom: 4,
            max_qp_init_rd_atom: 4,
            wqe_window: 8,
            resp_queue: 8,
            ctrl_queue: 4,
            max_log_ring: 12,
        }
    }

    /// A 100G-class part: 16K QPs.
    pub const fn large() -> Profile {
        Profile {
            name: "large",
            max_qp: 16384,
            max_cq: 16384,
            max_mr: 65536,
            max_pd: 4096,
            max_sge: 16,
            max_inline: 512,
            max_qp_rd_atom: 16,
            max_qp_init_rd_atom: 16,
            wqe_window: 32,
            resp_queue: 32,
            ctrl_queue: 64,
            max_log_ring: 15,
        }
    }

    /// Every profile, by name.
    pub const ALL: [Profile; 2] = [Profile::board(), Profile::large()];

    /// The profile called `name`.
    pub fn named(name: &str) -> Option<Profile> {
        Profile::ALL.into_iter().find(|p| p.name == name)
    }
}

impl Default for Profile {
    fn default() -> Self {
        Profile::board()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_by_name() {
        assert_eq!(Profile::named("board"), Some(Profile::board()));
        assert_eq!(Profile::named("large").map(|p| p.max_qp), Some(16384));
        assert_eq!(Profile::named("huge"), None);
        for p in Profile::ALL {
            // The responder must be able to queue a response for every request it takes, plus a NAK.
            assert!(p.resp_queue > p.max_qp_rd_atom, "{}", p.name);
            assert!(p.max_qp_init_rd_atom <= p.wqe_window, "{}", p.name);
            assert!(p.max_qp_rd_atom <= 16 && p.max_qp_init_rd_atom <= 16, "{}: ibv_qp_attr limit", p.name);
        }
    }
}
