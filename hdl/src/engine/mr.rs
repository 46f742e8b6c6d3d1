//! `mr_check`: whether an MR table entry lets a key use a range, the model's `MrTable::check`, as generated
//! Verilog wires. The responder's check chain (a remote key) and its receive WQEs (each SGE's local key)
//! both use it.

use crate::record::slice;
use wire::contract::profile::Profile;
use wire::contract::qpc::mr_entry;

/// The operands of one check, each a Verilog expression: the key (32 bits), the PD of the QP that uses it,
/// the range's start (64 bits) and length (32 bits), and the access bits it needs (4 bits).
pub struct Use<'a> {
    pub key: &'a str,
    pub pdn: &'a str,
    pub va: &'a str,
    pub len: &'a str,
    pub need: &'a str,
}

/// Wires deciding whether MR entry `mr` (`qpc::mr_entry(p)`, read at index `key >> 8`) passes `u`; the
/// verdict is `{pre}_ok` (the other wires are `{pre}_*_ok`, `{pre}_end` and `{pre}_mr_end`). The key must name an entry inside the table (a RAM addressed by the index's low
/// bits returns another entry past it), valid, of the key's variant and the QP's PD, granting the access,
/// and the range must lie within the MR without wrapping.
pub fn check(p: &Profile, pre: &str, mr: &str, u: &Use) -> Vec<String> {
    let l = mr_entry(p);
    let r = |n: &str| slice(&l, mr, n);
    let len_bits = l.slice("length").expect("an MR has a length").1;
    vec![
        format!(
            "wire {pre}_key_ok = {k}[31:8] < 24'd{max} && {valid} && {variant} == {k}[7:0];",
            k = u.key,
            max = p.max_mr,
            valid = r("valid"),
            variant = r("variant")
        ),
        format!("wire {pre}_pd_ok = {} == {};", r("pdn"), u.pdn),
        format!("wire {pre}_access_ok = ({} & {need}) == {need};", r("access"), need = u.need),
        format!("wire [64:0] {pre}_end = {{1'b0, {}}} + {{33'd0, {}}};", u.va, u.len),
        format!("wire [65:0] {pre}_mr_end = {{2'd0, {}}} + {{{}'d0, {}}};", r("iova"), 66 - len_bits, r("length")),
        format!(
            "wire {pre}_bounds_ok = !{pre}_end[64] && {va} >= {iova} && {{1'b0, {pre}_end}} <= {pre}_mr_end;",
            va = u.va,
            iova = r("iova")
        ),
        format!("wire {pre}_ok = {pre}_key_ok && {pre}_pd_ok && {pre}_access_ok && {pre}_bounds_ok;"),
    ]
}
