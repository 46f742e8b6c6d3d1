//! Verbs-level values the device and the driver share, numbered as libibverbs numbers them: QP states,
//! modify-QP attribute masks and the per-transition rules, access flags, path MTU, work-completion status and
//! opcodes, and the RNR / local ACK timer encodings.

/// QP transport types the device creates (`enum ibv_qp_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum QpType {
    /// Reliable connected RoCEv2.
    Rc = 2,
    /// Whole Ethernet frames: a send WQE's data is one frame, a receive WQE takes one. The NIC steers every
    /// frame that is neither RoCEv2 nor answered by the NIC itself (ARP and ICMP echo for its addresses) here.
    RawPacket = 8,
}

impl QpType {
    pub fn from_u8(v: u8) -> Option<Self> {
        match v {
            2 => Some(QpType::Rc),
            8 => Some(QpType::RawPacket),
            _ => None,
        }
    }
}

/// QP states (`enum ibv_qp_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum QpState {
    Reset = 0,
    Init = 1,
    Rtr = 2,
    Rts = 3,
    Sqd = 4,
    Sqe = 5,
    Err = 6,
}

impl QpState {
    pub fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => QpState::Reset,
            1 => QpState::Init,
            2 => QpState::Rtr,
            3 => QpState::Rts,
            4 => QpState::Sqd,
            5 => QpState::Sqe,
            6 => QpState::Err,
            _ => return None,
        })
    }
}

/// `enum ibv_qp_attr_mask` bits.
pub mod attr {
    pub const STATE: u32 = 1 << 0;
    pub const CUR_STATE: u32 = 1 << 1;
    pub const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
    pub const ACCESS_FLAGS: u32 = 1 << 3;
    pub const PKEY_INDEX: u32 = 1 << 4;
    pub const PORT: u32 = 1 << 5;
    pub const QKEY: u32 = 1 << 6;
    pub const AV: u32 = 1 << 7;
    pub const PATH_MTU: u32 = 1 << 8;
    pub const TIMEOUT: u32 = 1 << 9;
    pub const RETRY_CNT: u32 = 1 << 10;
    pub const RNR_RETRY: u32 = 1 << 11;
    pub const RQ_PSN: u32 = 1 << 12;
    pub const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    pub const ALT_PATH: u32 = 1 << 14;
    pub const MIN_RNR_TIMER: u32 = 1 << 15;
    pub const SQ_PSN: u32 = 1 << 16;
    pub const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    pub const PATH_MIG_STATE: u32 = 1 << 18;
    pub const CAP: u32 = 1 << 19;
    pub const DEST_QPN: u32 = 1 << 20;
}

/// Required and optional attribute masks of one RC transition (`ib_modify_qp_is_ok`'s table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub required: u32,
    pub optional: u32,
}

/// The RC rules for `cur -> next`, or `None` if the transition is not allowed. `STATE` is always required
/// and `CUR_STATE` is handled by the caller; neither appears here.
pub fn rc_transition(cur: QpState, next: QpState) -> Option<Transition> {
    use attr::*;
    use QpState::*;
    let rts_opt = CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER;
    let t = |required, optional| Some(Transition { required, optional });
    match (cur, next) {
        (_, Reset) | (_, Err) => t(0, 0),
        (Reset, Init) => t(PKEY_INDEX | PORT | ACCESS_FLAGS, 0),
        (Init, Init) => t(0, PKEY_INDEX | PORT | ACCESS_FLAGS),
        (Init, Rtr) => t(
            AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
            ALT_PATH | ACCESS_FLAGS | PKEY_INDEX,
        ),
        (Rtr, Rts) => t(TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC, rts_opt),
        (Rts, Rts) | (Sqd, Rts) => t(0, rts_opt),
        (Rts, Sqd) => t(0, EN_SQD_ASYNC_NOTIFY),
        (Sqd, Sqd) => t(
            0,
            PORT | AV
                | TIMEOUT
                | RETRY_CNT
                | RNR_RETRY
                | MAX_QP_RD_ATOMIC
                | MAX_DEST_RD_ATOMIC
                | ALT_PATH
                | ACCESS_FLAGS
                | PKEY_INDEX
                | MIN_RNR_TIMER
                | PATH_MIG_STATE,
        ),
        _ => None,
    }
}

/// Why a modify-QP request breaks the transition rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    #[error("transition {0:?} -> {1:?} is not allowed")]
    NotAllowed(QpState, QpState),
    #[error("missing required attributes {0:#x}")]
    MissingRequired(u32),
    #[error("attributes {0:#x} are not allowed in this transition")]
    NotOptional(u32),
    #[error("CUR_STATE does not match the QP's state")]
    CurStateMismatch,
}

/// The raw packet QP's rules: the port on the way to INIT, nothing else; no SQD.
pub fn raw_packet_transition(cur: QpState, next: QpState) -> Option<Transition> {
    use QpState::*;
    let t = |required, optional| Some(Transition { required, optional });
    match (cur, next) {
        (_, Reset) | (_, Err) => t(0, 0),
        (Reset, Init) => t(attr::PORT, 0),
        (Init, Init) => t(0, attr::PORT),
        (Init, Rtr) | (Rtr, Rts) | (Rts, Rts) => t(0, 0),
        _ => None,
    }
}

/// Checks a modify-QP request against the rules of the QP's type for `cur -> next` (`next == cur` when the
/// request names no new state); a `STATE` bit in `mask` is ignored.
pub fn check_modify(qp_type: QpType, cur: QpState, next: QpState, mask: u32) -> Result<(), TransitionError> {
    let rules = match qp_type {
        QpType::Rc => rc_transition(cur, next),
        QpType::RawPacket => raw_packet_transition(cur, next),
    };
    let t = rules.ok_or(TransitionError::NotAllowed(cur, next))?;
    let given = mask & !(attr::STATE);
    let missing = t.required & !given;
    if missing != 0 {
        return Err(TransitionError::MissingRequired(missing));
    }
    let extra = given & !(t.required | t.optional);
    if extra != 0 {
        return Err(TransitionError::NotOptional(extra));
    }
    Ok(())
}

/// `enum ibv_access_flags`.
pub mod access {
    pub const LOCAL_WRITE: u32 = 1 << 0;
    pub const REMOTE_WRITE: u32 = 1 << 1;
    pub const REMOTE_READ: u32 = 1 << 2;
    pub const REMOTE_ATOMIC: u32 = 1 << 3;
    pub const ALL: u32 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;
}

/// P_Key table entries of the port (one: the default P_Key); `pkey_index` must be below it.
pub const PKEY_TABLE_LEN: u16 = 1;

/// The hop limit (IPv4 TTL) the NIC sends with when a QP's address vector leaves it 0.
pub const DEFAULT_HOP_LIMIT: u8 = 64;

/// The largest path MTU enum (`IBV_MTU_4096`).
pub const MAX_MTU_ENUM: u8 = 5;

/// Longest message (IBTA 9.4.1: a DMA length is at most 2^31 bytes).
pub const MAX_MSG_LEN: u32 = 1 << 31;

/// Path MTU enum (`enum ibv_mtu`): 1 = 256 ... 5 = 4096 bytes of payload.
pub fn mtu_bytes(enum_val: u8) -> Option<u32> {
    (1..=MAX_MTU_ENUM).contains(&enum_val).then(|| 128u32 << enum_val)
}

/// The MTU enum for a byte count (256..4096, power of two).
pub fn mtu_enum(bytes: u32) -> Option<u8> {
    (1..=MAX_MTU_ENUM).find(|&e| 128u32 << e == bytes)
}

/// Work-completion status (`enum ibv_wc_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WcStatus {
    Success = 0,
    LocLenErr = 1,
    LocQpOpErr = 2,
    LocEecOpErr = 3,
    LocProtErr = 4,
    WrFlushErr = 5,
    MwBindErr = 6,
    BadRespErr = 7,
    LocAccessErr = 8,
    RemInvReqErr = 9,
    RemAccessErr = 10,
    RemOpErr = 11,
    RetryExcErr = 12,
    RnrRetryExcErr = 13,
    LocRddViolErr = 14,
    RemInvRdReqErr = 15,
    RemAbortErr = 16,
    InvEecnErr = 17,
    InvEecStateErr = 18,
    FatalErr = 19,
    RespTimeoutErr = 20,
    GeneralErr = 21,
}

impl WcStatus {
    pub fn from_u8(v: u8) -> Self {
        use WcStatus::*;
        const ALL: [WcStatus; 22] = [
            Success,
            LocLenErr,
            LocQpOpErr,
            LocEecOpErr,
            LocProtErr,
            WrFlushErr,
            MwBindErr,
            BadRespErr,
            LocAccessErr,
            RemInvReqErr,
            RemAccessErr,
            RemOpErr,
            RetryExcErr,
            RnrRetryExcErr,
            LocRddViolErr,
            RemInvRdReqErr,
            RemAbortErr,
            InvEecnErr,
            InvEecStateErr,
            FatalErr,
            RespTimeoutErr,
            GeneralErr,
        ];
        ALL.get(usize::from(v)).copied().unwrap_or(GeneralErr)
    }
}

/// Work-completion opcodes (`enum ibv_wc_opcode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum WcOpcode {
    Send = 0,
    RdmaWrite = 1,
    RdmaRead = 2,
    CompSwap = 3,
    FetchAdd = 4,
    Recv = 128,
    RecvRdmaWithImm = 129,
}

impl WcOpcode {
    pub fn from_u8(v: u8) -> Option<Self> {
        use WcOpcode::*;
        Some(match v {
            0 => Send,
            1 => RdmaWrite,
            2 => RdmaRead,
            3 => CompSwap,
            4 => FetchAdd,
            128 => Recv,
            129 => RecvRdmaWithImm,
            _ => return None,
        })
    }
}

/// `ibv_wc_flags` bits carried in a CQE.
pub mod wc_flags {
    pub const WITH_IMM: u8 = 1 << 1;
    pub const WITH_INV: u8 = 1 << 3;
}

/// min_rnr_timer codes (`enum ib_rnr_timeout`) in nanoseconds; code 0 is 655.36 ms.
pub const RNR_TIMER_NS: [u64; 32] = [
    655_360_000,
    10_000,
    20_000,
    30_000,
    40_000,
    60_000,
    80_000,
    120_000,
    160_000,
    240_000,
    320_000,
    480_000,
    640_000,
    960_000,
    1_280_000,
    1_920_000,
    2_560_000,
    3_840_000,
    5_120_000,
    7_680_000,
    10_240_000,
    15_360_000,
    20_480_000,
    30_720_000,
    40_960_000,
    61_440_000,
    81_920_000,
    122_880_000,
    163_840_000,
    245_760_000,
    327_680_000,
    491_520_000,
];

/// Local ACK timeout for the 5-bit `timeout` attribute: 4.096 us x 2^timeout; `None` = 0 = infinite.
pub fn local_ack_timeout_ns(timeout: u8) -> Option<u64> {
    (timeout != 0).then(|| 4096u64 << (timeout & 31))
}

/// rnr_retry = 7 means retry forever (retry_cnt = 7 is seven retries).
pub const RNR_RETRY_INFINITE: u8 = 7;

#[cfg(test)]
mod tests {
    use super::*;
    use attr::*;

    /// The attribute bits as `enum ibv_qp_attr_mask` numbers them.
    #[test]
    fn attr_bits_are_libibverbs_values() {
        let bits = [
            (STATE, 1),
            (CUR_STATE, 2),
            (EN_SQD_ASYNC_NOTIFY, 4),
            (ACCESS_FLAGS, 8),
            (PKEY_INDEX, 16),
            (PORT, 32),
            (QKEY, 64),
            (AV, 128),
            (PATH_MTU, 256),
            (TIMEOUT, 512),
            (RETRY_CNT, 1024),
            (RNR_RETRY, 2048),
            (RQ_PSN, 4096),
            (MAX_QP_RD_ATOMIC, 8192),
            (ALT_PATH, 16384),
            (MIN_RNR_TIMER, 32768),
            (SQ_PSN, 65536),
            (MAX_DEST_RD_ATOMIC, 131072),
            (PATH_MIG_STATE, 262144),
            (CAP, 524288),
            (DEST_QPN, 1048576),
        ];
        for (i, (bit, want)) in bits.into_iter().enumerate() {
            assert_eq!(bit, want, "bit {i}");
        }
    }

    /// The path MTU is set only on INIT -> RTR, before any WQE can start (a QP sends from RTS, and leaves
    /// RTS/SQD for INIT only through RESET, which empties its window): the requester and completer in RTL
    /// (`ReqSeg`, `AckStep`) and the packed context count a started WQE's packets from its length at the
    /// current path MTU, which is the count it started with only because of this rule.
    #[test]
    fn the_path_mtu_never_changes_under_a_started_message() {
        let states =
            [QpState::Reset, QpState::Init, QpState::Rtr, QpState::Rts, QpState::Sqd, QpState::Sqe, QpState::Err];
        for cur in states {
            for next in states {
                let Some(t) = rc_transition(cur, next) else { continue };
                let sets = (t.required | t.optional) & PATH_MTU != 0;
                assert_eq!(sets, (cur, next) == (QpState::Init, QpState::Rtr), "{cur:?} -> {next:?}");
                let back = matches!(cur, QpState::Rts | QpState::Sqd) && matches!(next, QpState::Init | QpState::Rtr);
                assert!(!back, "{cur:?} -> {next:?} keeps the window");
            }
        }
    }

    /// Every RC transition's required and optional attributes, as the kernel's `ib_modify_qp_is_ok` table
    /// has them for RC, and no other transition.
    #[test]
    fn rc_transition_table() {
        use QpState::*;
        let rts_opt = CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER;
        let sqd_sqd = PORT | AV | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | MAX_DEST_RD_ATOMIC | ALT_PATH;
        let table = [
            (Reset, Init, PKEY_INDEX | PORT | ACCESS_FLAGS, 0),
            (Init, Init, 0, PKEY_INDEX | PORT | ACCESS_FLAGS),
            (
                Init,
                Rtr,
                AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
                ALT_PATH | ACCESS_FLAGS | PKEY_INDEX,
            ),
            (Rtr, Rts, TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC, rts_opt),
            (Rts, Rts, 0, rts_opt),
            (Sqd, Rts, 0, rts_opt),
            (Rts, Sqd, 0, EN_SQD_ASYNC_NOTIFY),
            (Sqd, Sqd, 0, sqd_sqd | ACCESS_FLAGS | PKEY_INDEX | MIN_RNR_TIMER | PATH_MIG_STATE),
        ];
        let all = [Reset, Init, Rtr, Rts, Sqd, Sqe, Err];
        for cur in all {
            for next in all {
                let want = table
                    .iter()
                    .find(|t| (t.0, t.1) == (cur, next))
                    .map(|t| Transition { required: t.2, optional: t.3 })
                    .or((next == Reset || next == Err).then_some(Transition { required: 0, optional: 0 }));
                assert_eq!(rc_transition(cur, next), want, "{cur:?} -> {next:?}");
            }
        }
        for v in 0..=6 {
            assert_eq!(QpState::from_u8(v).map(|s| s as u8), Some(v));
        }
        assert_eq!(QpState::from_u8(7), None);
        assert_eq!(QpType::from_u8(2), Some(QpType::Rc));
    }

    /// The raw packet QP's rules: to RESET or ERR from anywhere, and the one path to RTS.
    #[test]
    fn raw_packet_transition_table() {
        use QpState::*;
        let none = Some(Transition { required: 0, optional: 0 });
        for cur in [Reset, Init, Rtr, Rts, Err] {
            assert_eq!(raw_packet_transition(cur, Reset), none, "{cur:?}");
            assert_eq!(raw_packet_transition(cur, Err), none, "{cur:?}");
        }
        assert_eq!(raw_packet_transition(Init, Init), Some(Transition { required: 0, optional: PORT }));
        assert_eq!(raw_packet_transition(Rts, Rts), none);
        assert_eq!(raw_packet_transition(Rtr, Init), None);
    }

    #[test]
    fn rc_rules() {
        let init_req = PKEY_INDEX | PORT | ACCESS_FLAGS;
        assert!(check_modify(QpType::Rc, QpState::Reset, QpState::Init, STATE | init_req).is_ok());
        assert_eq!(
            check_modify(QpType::Rc, QpState::Reset, QpState::Init, STATE | PKEY_INDEX | PORT),
            Err(TransitionError::MissingRequired(ACCESS_FLAGS))
        );
        assert_eq!(
            check_modify(QpType::Rc, QpState::Reset, QpState::Rts, STATE),
            Err(TransitionError::NotAllowed(QpState::Reset, QpState::Rts))
        );
        assert_eq!(
            check_modify(QpType::Rc, QpState::Rts, QpState::Rts, STATE | PATH_MTU),
            Err(TransitionError::NotOptional(PATH_MTU))
        );
        assert!(check_modify(QpType::Rc, QpState::Rts, QpState::Err, STATE).is_ok());
        assert!(check_modify(QpType::Rc, QpState::Err, QpState::Reset, STATE).is_ok());
        assert!(check_modify(QpType::Rc, QpState::Init, QpState::Rts, STATE).is_err());
    }

    #[test]
    fn raw_packet_rules() {
        let raw = |cur, next, mask| check_modify(QpType::RawPacket, cur, next, mask);
        assert!(raw(QpState::Reset, QpState::Init, STATE | PORT).is_ok());
        assert_eq!(raw(QpState::Reset, QpState::Init, STATE), Err(TransitionError::MissingRequired(PORT)));
        assert_eq!(raw(QpState::Init, QpState::Rtr, STATE | AV), Err(TransitionError::NotOptional(AV)));
        assert!(raw(QpState::Init, QpState::Rtr, STATE).is_ok());
        assert!(raw(QpState::Rtr, QpState::Rts, STATE).is_ok());
        assert_eq!(
            raw(QpState::Rts, QpState::Sqd, STATE),
            Err(TransitionError::NotAllowed(QpState::Rts, QpState::Sqd))
        );
        assert_eq!(QpType::from_u8(8), Some(QpType::RawPacket));
        assert_eq!(QpType::from_u8(0), None);
    }

    #[test]
    fn encodings() {
        assert_eq!(mtu_bytes(1), Some(256));
        assert_eq!(mtu_bytes(5), Some(4096));
        assert_eq!(mtu_bytes(6), None);
        assert_eq!(mtu_enum(1024), Some(3));
        assert_eq!(local_ack_timeout_ns(14), Some(67_108_864));
        assert_eq!(local_ack_timeout_ns(0), None);
        assert_eq!(RNR_TIMER_NS[25], 61_440_000);
        assert_eq!(WcStatus::from_u8(12), WcStatus::RetryExcErr);
    }
}
