//! The counters a received frame and the later decisions count, in RTL (`hdl::engine::counts::RxCount`),
//! against the model's counting: `recv::receive` by route (and `recv::drop_counter` for a frame the parser
//! dropped), `raw::receive` for a frame that is not RoCEv2, `resp::on_request` and `nak_at` by the check
//! chain's verdict and the room in the response queue, `comp::on_response`'s unsent-PSN drop and
//! `comp::on_ack` by the AETH's class (`AethRepr::kind`); then the decisions taken later: a SEND's or WRITE
//! with immediate's receive WQE and its fatal NAKs (`resp::execute`), a duplicate READ's or atomic's NAK or
//! full queue (`resp::duplicate`), an atomic executed or NAKed, a raw frame received, a timer's end
//! (`comp::on_timeout`, `on_rnr_timer`). Every route and verdict with random flags, a CE-marked frame (not
//! built in RTL yet: only received), and every AETH syndrome; both increment vectors and the frame's length
//! compared.
//!
//! Replay a failure with `FERRITE_SEED=<seed> cargo test --release -p ferrite-sim --test rx_count`.

use hdl::engine::dispatch::action;
use hdl::engine::recv::route as code;
use hdl::engine::resp::check::verdict as vcode;
use hdl::rx::meta::{Meta, Verdict as Pv, IP_REJECTS, LAYERS};
use hdl::top::Top;
use hdl::Width;
use model::nic::recv::drop_counter;
use model::nic::resp::{Nak, Verdict};
use model::rng::Rng;
use sim::Sim;
use wire::contract::regs::Counter;
use wire::ext::{syndrome, AethKind, AethRepr};
use wire::{DropReason, Opcode};

fn seed() -> u64 {
    std::env::var("FERRITE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0C0_0A75)
}

/// The parser's drop reasons, one of each kind, with the RX record's verdict for it.
fn drops() -> Vec<(DropReason, Pv)> {
    vec![
        (DropReason::Truncated(LAYERS[4]), Pv::Truncated),
        (DropReason::BadIpHeader(IP_REJECTS[2]), Pv::BadIpHeader),
        (DropReason::BadUdpLength, Pv::BadUdpLength),
        (DropReason::BadTver, Pv::BadTver),
        (DropReason::UnknownOpcode(0x1F), Pv::UnknownOpcode),
        (DropReason::BadLength, Pv::BadLength),
        (DropReason::BadIcrc, Pv::BadIcrc),
        (DropReason::TooLong, Pv::TooLong),
    ]
}

/// The check chain's verdicts with their RTL codes.
const VERDICTS: [(Verdict, u8); 8] = [
    (Verdict::QpState, vcode::QP_STATE),
    (Verdict::SeqNak, vcode::SEQ_NAK),
    (Verdict::SeqDrop, vcode::SEQ_DROP),
    (Verdict::Duplicate, vcode::DUPLICATE),
    (Verdict::Nak(Nak::InvalidRequest), vcode::NAK_INVALID_REQUEST),
    (Verdict::Nak(Nak::RemoteAccess), vcode::NAK_REMOTE_ACCESS),
    (Verdict::Nak(Nak::Rnr), vcode::NAK_RNR),
    (Verdict::NoRoom, vcode::NO_ROOM),
];

/// The counter a NAK sent counts (the model's `nak_at`), by its syndrome.
fn nak_counter(syn: u8) -> Option<Counter> {
    match syn {
        syndrome::NAK_REMOTE_OP => Some(Counter::tx_naks_remote_op),
        syndrome::NAK_INVALID_REQUEST => Some(Counter::tx_naks_invalid_req),
        syndrome::NAK_REMOTE_ACCESS => Some(Counter::tx_naks_remote_access),
        _ => None,
    }
}

/// One case's inputs.
#[derive(Debug, Default)]
struct Case {
    route: u8,
    drop: Option<DropReason>,
    verdict: Option<Verdict>,
    ce: bool,
    room: bool,
    action: u8,
    sent: bool,
    aeth: u8,
    raw_ctrl: bool,
    raw_any: bool,
    raw_rx: bool,
    /// At most one later decision: 1 a SEND's, 2 a duplicate's, 3 an atomic's, 4 a timer's.
    at: u8,
    rq_moves: bool,
    fatal: bool,
    syn: u8,
    part: bool,
    key_bad: bool,
    word_err: bool,
    cas: bool,
    timer_rnr: bool,
    outstanding: bool,
}

/// What the model counts for the frame (`of_frame`) and for the later decision (`outcome`).
fn model_counts(c: &Case) -> (Vec<Counter>, Vec<Counter>) {
    use Counter as C;
    let mut f = vec![C::rx_frames];
    match c.route {
        code::OTHER_MAC | code::OTHER_PEER => f.push(C::rx_drop_not_for_us),
        code::MALFORMED => f.push(drop_counter(c.drop.expect("a drop reason"))),
        // Not for the control queue (ARP, ICMP echo), and no raw packet QP took it.
        code::RAW if !c.raw_ctrl && c.action == action::DROP => {
            f.push(if c.raw_any { C::raw_rx_drop_no_wqe } else { C::rx_drop_not_roce })
        }
        code::BAD_PKEY => f.push(C::rx_drop_bad_bth),
        code::NO_QP => f.push(C::rx_drop_no_qp),
        code::QP_STATE => f.push(C::rx_drop_qp_state),
        // A CE-marked frame past the QP lookup is not handled by the RTL yet: counted as received only.
        _ if c.ce => {}
        code::RESPONSE_QP_STATE => f.push(C::rx_drop_qp_state),
        code::RESPONSE if [action::ACK, action::READ_RESP, action::ATOMIC_ACK].contains(&c.action) => {
            if !c.sent {
                f.push(C::rx_drop_unsent_psn);
            } else if c.action == action::ACK {
                match (AethRepr { syndrome: c.aeth, msn: 0 }).kind() {
                    AethKind::Ack { .. } => f.push(C::rx_acks),
                    AethKind::RnrNak { .. } => f.push(C::rx_rnr_naks),
                    AethKind::Nak { .. } => f.push(C::rx_naks),
                    AethKind::Reserved => {}
                }
            }
        }
        code::REQUEST => match c.verdict.expect("a verdict") {
            Verdict::QpState => f.push(C::rx_drop_qp_state),
            Verdict::SeqNak => {
                f.push(if c.room { C::tx_naks_psn_seq } else { C::rx_drop_resp_queue_full });
                f.push(C::rx_drop_out_of_seq);
            }
            Verdict::SeqDrop => f.push(C::rx_drop_out_of_seq),
            Verdict::Duplicate => f.push(C::rx_drop_duplicate),
            Verdict::Nak(Nak::Rnr) => {
                f.push(C::rx_drop_no_rq_wqe);
                f.push(if c.room { C::tx_rnr_naks } else { C::rx_drop_resp_queue_full });
            }
            Verdict::Nak(Nak::InvalidRequest) => f.push(C::tx_naks_invalid_req),
            Verdict::Nak(Nak::RemoteAccess) => f.push(C::tx_naks_remote_access),
            Verdict::Nak(Nak::RemoteOp) => unreachable!("the check chain gives no remote operational error"),
            Verdict::NoRoom => f.push(C::rx_drop_resp_queue_full),
            Verdict::Execute => {}
        },
        _ => {}
    }
    let mut o = vec![];
    match c.at {
        // The receive WQE is taken (counted) unless it failed (Remote Operational Error); a fatal NAK counts
        // by its syndrome.
        1 => {
            if c.rq_moves && !(c.fatal && c.syn == syndrome::NAK_REMOTE_OP) {
                o.push(C::rq_wqes);
            }
            if c.fatal {
                o.extend(nak_counter(c.syn));
            }
        }
        2 if c.action == action::DUP_READ && c.part => {
            if c.key_bad {
                o.push(C::tx_naks_remote_access);
            } else if !c.room {
                o.push(C::rx_drop_resp_queue_full);
            }
        }
        2 if c.action == action::DUP_ATOMIC && !c.room => o.push(C::rx_drop_resp_queue_full),
        3 if c.word_err => o.push(C::tx_naks_remote_access),
        3 => o.push(if c.cas { C::rx_cmp_swaps } else { C::rx_fetch_adds }),
        4 if c.timer_rnr => o.push(C::rnr_timeouts),
        4 if c.outstanding => o.push(C::local_ack_timeouts),
        _ => {}
    }
    if c.raw_rx {
        o.push(C::raw_rx_frames);
    }
    (f, o)
}

fn vector(cs: &[Counter]) -> u64 {
    cs.iter().fold(0, |v, &c| v | 1 << c as usize)
}

fn names(v: u64) -> Vec<&'static str> {
    Counter::ALL.iter().filter(|&&c| v >> c as usize & 1 == 1).map(|c| c.name()).collect()
}

#[test]
fn the_counts_are_the_models() {
    let seed = seed();
    let mut rtl = Sim::new(Top::RxCount, Width::W8);
    let drops = drops();
    let mut rng = Rng::new(seed);
    let mut seen = vec![0u32; Counter::ALL.len()];
    let syns = [syndrome::NAK_REMOTE_OP, syndrome::NAK_INVALID_REQUEST, syndrome::NAK_REMOTE_ACCESS, 0x20];
    for n in 0..100_000 {
        let b = |rng: &mut Rng| rng.chance(0.5);
        let mut c = Case { route: rng.below(11) as u8, ce: rng.chance(0.1), ..Default::default() };
        let mut pv = Pv::Ok;
        if c.route == code::MALFORMED {
            let (r, v) = drops[rng.below(drops.len() as u64) as usize];
            c.drop = Some(r);
            pv = v;
        } else if c.route == code::RAW {
            pv = Pv::NotRoce;
        }
        let (v, vc) = if rng.chance(0.1) {
            (Verdict::Execute, vcode::EXECUTE)
        } else {
            VERDICTS[rng.below(VERDICTS.len() as u64) as usize]
        };
        c.verdict = Some(v);
        c.room = b(&mut rng);
        c.action = rng.below(16) as u8;
        if c.route == code::RESPONSE && rng.chance(0.6) {
            c.action = [action::ACK, action::READ_RESP, action::ATOMIC_ACK][rng.below(3) as usize];
        }
        c.sent = rng.chance(0.8);
        c.aeth = rng.next_u64() as u8;
        (c.raw_ctrl, c.raw_any, c.raw_rx) = (rng.chance(0.3), b(&mut rng), rng.chance(0.1));
        c.at = rng.below(6) as u8;
        (c.rq_moves, c.fatal) = (b(&mut rng), b(&mut rng));
        c.syn = if rng.chance(0.8) { syns[rng.below(4) as usize] } else { rng.next_u64() as u8 };
        (c.part, c.key_bad, c.word_err, c.cas) = (b(&mut rng), b(&mut rng), b(&mut rng), b(&mut rng));
        (c.timer_rnr, c.outstanding) = (b(&mut rng), b(&mut rng));
        if c.at == 2 && rng.chance(0.7) {
            c.action = if b(&mut rng) { action::DUP_READ } else { action::DUP_ATOMIC };
        }
        let opcode = if c.cas { Opcode::COMPARE_SWAP } else { Opcode::FETCH_ADD };
        let len = rng.below(1 << 16);
        let mut rec = Meta::default();
        rec.set("opcode", u128::from(opcode.0));
        rec.set("verdict", pv as u128);
        rec.set("frame_len", u128::from(len));
        let one = |x: bool| u64::from(x);
        let ins: [(&str, u64); 22] = [
            ("route", u64::from(c.route)),
            ("ce", one(c.ce)),
            ("verdict", u64::from(vc)),
            ("room", one(c.room)),
            ("action", u64::from(c.action)),
            ("sent", one(c.sent)),
            ("aeth", u64::from(c.aeth)),
            ("raw_ctrl", one(c.raw_ctrl)),
            ("raw_any", one(c.raw_any)),
            ("raw_rx", one(c.raw_rx)),
            ("at_exec", one(c.at == 1)),
            ("rq_moves", one(c.rq_moves)),
            ("fatal", one(c.fatal)),
            ("syn", u64::from(c.syn)),
            ("at_dup", one(c.at == 2)),
            ("part", one(c.part)),
            ("key_bad", one(c.key_bad)),
            ("at_atomic", one(c.at == 3)),
            ("word_err", one(c.word_err)),
            ("at_timer", one(c.at == 4)),
            ("timer_rnr", one(c.timer_rnr)),
            ("outstanding", one(c.outstanding)),
        ];
        let p_rec = rtl.port("rec");
        rtl.set_bytes(p_rec, &rec.0);
        for (name, v) in ins {
            let p = rtl.port(name);
            rtl.set(p, v);
        }
        rtl.eval();
        let (f, o) = model_counts(&c);
        let (want_f, want_o) = (vector(&f), vector(&o));
        let (got_f, got_o) = (rtl.get(rtl.port("of_frame")), rtl.get(rtl.port("outcome")));
        let ctx = format!("seed {seed} (FERRITE_SEED={seed}), case {n}: {c:?}");
        assert_eq!(names(got_f), names(want_f), "the frame's counters: {ctx}");
        assert_eq!(got_f, want_f, "the frame's counters, bit for bit: {ctx}");
        assert_eq!(names(got_o), names(want_o), "the later decision's counters: {ctx}");
        assert_eq!(got_o, want_o, "the later decision's counters, bit for bit: {ctx}");
        assert_eq!(rtl.get(rtl.port("rx_len")), len, "the frame's length: {ctx}");
        for c in f.iter().chain(&o) {
            seen[*c as usize] += 1;
        }
    }
    let never: Vec<&str> = Counter::ALL.iter().filter(|&&c| seen[c as usize] == 0).map(|c| c.name()).collect();
    eprintln!("rx_count: 100,000 cases; counters never counted: {never:?}");
    let counted = [
        Counter::rx_drop_not_for_us,
        Counter::rx_drop_bad_icrc,
        Counter::raw_rx_drop_no_wqe,
        Counter::rx_drop_not_roce,
        Counter::rx_drop_unsent_psn,
        Counter::rx_acks,
        Counter::rx_rnr_naks,
        Counter::rx_naks,
        Counter::tx_naks_psn_seq,
        Counter::tx_rnr_naks,
        Counter::rx_drop_no_rq_wqe,
        Counter::rq_wqes,
        Counter::tx_naks_remote_op,
        Counter::rx_cmp_swaps,
        Counter::rx_fetch_adds,
        Counter::rnr_timeouts,
        Counter::local_ack_timeouts,
        Counter::raw_rx_frames,
    ];
    for c in counted {
        assert!(seen[c as usize] > 100, "seed {seed}: {} counted {} times", c.name(), seen[c as usize]);
    }
}
