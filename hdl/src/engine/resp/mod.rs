//! The responder, in blocks named after the model's `resp` functions: its check chain (`check`) and its
//! bookkeeping for a SEND or WRITE packet it executes (`advance`) or has executed before (`duplicate`), the
//! receive WQE a SEND or a WRITE with immediate lands in (`recv_wqe`; `wqe_cache` says when a message's later
//! packets may use what it fetched) and what executing it does (`send`),
//! its response queue (`queue`), and its transmit side (`tx`, with `read` for a READ's responses).

pub mod advance;
pub mod atomic;
pub mod check;
pub mod dup_read;
pub mod duplicate;
pub mod queue;
pub mod read;
pub mod recv_wqe;
pub mod send;
pub mod tx;
pub mod wqe_cache;

use wire::opcode::Transport;
use wire::{OpKind, Position};

/// A combinational table of the request opcodes' properties from `wire::opcode::TABLE`, setting the named
/// flags (each 0 for any other opcode): `op_req`, `op_rc` (RC transport), `k_send`, `k_write`, `k_read`,
/// `k_cas`, `k_fadd` (kind), `p_first`, `p_middle`, `p_last`, `p_only` (position), `op_payload`,
/// `op_immdt`. Reads `opcode`.
pub(crate) fn opcode_flags(flags: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = flags.iter().map(|f| format!("reg {f};")).collect();
    v.push("always @(*) begin".into());
    v.extend(flags.iter().map(|f| format!("    {f} = 1'b0;")));
    v.push("    case (opcode)".into());
    for (op, info) in wire::opcode::TABLE.iter().enumerate() {
        let Some(info) = info.filter(|i| i.is_request()) else { continue };
        let mut set = vec!["op_req"];
        if info.transport == Transport::Rc {
            set.push("op_rc");
        }
        set.push(match info.kind {
            OpKind::Send => "k_send",
            OpKind::Write => "k_write",
            OpKind::ReadRequest => "k_read",
            OpKind::CompareSwap => "k_cas",
            _ => "k_fadd",
        });
        set.push(match info.position {
            Position::First => "p_first",
            Position::Middle => "p_middle",
            Position::Last => "p_last",
            Position::Only => "p_only",
        });
        if info.has_payload {
            set.push("op_payload");
        }
        if info.has(wire::opcode::hdr::IMMDT) {
            set.push("op_immdt");
        }
        let body: Vec<String> = set.iter().filter(|f| flags.contains(f)).map(|f| format!("{f} = 1'b1;")).collect();
        if !body.is_empty() {
            v.push(format!("    8'h{op:02x}: begin {} end", body.join(" ")));
        }
    }
    v.push("    default: ;".into());
    v.push("    endcase".into());
    v.push("end".into());
    v
}
