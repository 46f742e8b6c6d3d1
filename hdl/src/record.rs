//! Verilog expressions for records described once in `wire`: the fields of a big-endian header (a command
//! mailbox's input and output, `wire::field::header!`'s `FIELDS`) on a byte bus, and the fields of a packed
//! record (`wire::layout::Layout`, LSB first). Generators name fields, never bit positions.
//!
//! A byte bus holds byte `i` at bits `8i+7:8i` (the order DMA delivers host memory in).

use std::ops::Range;
use wire::layout::Layout;

/// A header's field table, as `wire::field::header!` gives it (`FIELDS`).
pub type Fields = &'static [(&'static str, Range<usize>)];

/// The byte range of field `name`. Panics on a name the header does not have (a generator bug).
pub fn field_range(fields: Fields, name: &str) -> Range<usize> {
    fields.iter().find(|(n, _)| *n == name).map(|(_, r)| r.clone()).unwrap_or_else(|| panic!("no field {name}"))
}

/// The value of big-endian field `name` of a header at byte `base` of `bus`: a concatenation of its bytes,
/// most significant (the first) first. Its width is `8 * len` bits.
pub fn be_get(bus: &str, fields: Fields, base: usize, name: &str) -> (String, usize) {
    let r = field_range(fields, name);
    let bytes: Vec<String> = (r.clone()).map(|i| byte(bus, base + i)).collect();
    (format!("{{{}}}", bytes.join(", ")), 8 * r.len())
}

/// Statements writing `value` (a Verilog name, at least `8 * len` bits wide) into big-endian field `name`
/// of a header at byte `base` of `bus`.
pub fn be_put(bus: &str, fields: Fields, base: usize, name: &str, value: &str) -> Vec<String> {
    let r = field_range(fields, name);
    let n = r.len();
    r.enumerate()
        .map(|(j, i)| format!("{} = {value}[{}:{}];", byte(bus, base + i), 8 * (n - j) - 1, 8 * (n - 1 - j)))
        .collect()
}

/// `rec[hi:lo]`, field `name` of a header of `len` bytes that `rec` holds from bit `lsb` as one big-endian
/// integer (its first byte most significant, as the RX record carries the extended headers).
pub fn be_slice(rec: &str, lsb: usize, fields: Fields, len: usize, name: &str) -> String {
    let r = field_range(fields, name);
    format!("{rec}[{}:{}]", lsb + 8 * (len - r.start) - 1, lsb + 8 * (len - r.end))
}

fn byte(bus: &str, i: usize) -> String {
    format!("{bus}[{}:{}]", 8 * i + 7, 8 * i)
}

/// `rec[hi:lo]`, field `name` of packed record `rec` of layout `l`. Panics on a name the layout does not have.
pub fn slice(l: &Layout, rec: &str, name: &str) -> String {
    let (lsb, w) = l.slice(name).unwrap_or_else(|| panic!("{} has no field {name}", l.name));
    format!("{rec}[{}:{lsb}]", lsb + w - 1)
}

/// `rec[lsb + n - 1:lsb]`, the low `n` bits of field `name` of packed record `rec` (a select of a select,
/// `rec[hi:lo][n-1:0]`, is not Verilog, though some tools take it). Panics on a name the layout does not have
/// or a field narrower than `n`.
pub fn slice_low(l: &Layout, rec: &str, name: &str, n: usize) -> String {
    let (lsb, w) = l.slice(name).unwrap_or_else(|| panic!("{} has no field {name}", l.name));
    assert!(n >= 1 && n <= w as usize, "{}.{name} is {w} bits, not {n} or more", l.name);
    format!("{rec}[{}:{lsb}]", lsb as usize + n - 1)
}

/// The width of field `name` of `l`.
pub fn width(l: &Layout, name: &str) -> u32 {
    l.slice(name).unwrap_or_else(|| panic!("{} has no field {name}", l.name)).1
}

/// A record of layout `l` assembled from one expression per field: `value(name, width)` gives the field's
/// new value, or `None` to keep it as it is in `old`. Each new value gets a wire of its field's width,
/// `{prefix}_{name}` (so Verilog cuts or zero-extends it there); the result is those declarations and the
/// concatenation, most significant field first.
pub fn build(
    l: &Layout,
    old: &str,
    prefix: &str,
    mut value: impl FnMut(&str, u32) -> Option<String>,
) -> (Vec<String>, String) {
    let mut decls = Vec::new();
    let mut parts = Vec::new();
    for f in l.fields.iter().rev().filter(|f| f.width > 0) {
        match value(f.name, f.width) {
            Some(v) => {
                decls.push(format!("wire [{}:0] {prefix}_{} = {v};", f.width - 1, f.name));
                parts.push(format!("{prefix}_{}", f.name));
            }
            None => parts.push(slice(l, old, f.name)),
        }
    }
    (decls, format!("{{{}}}", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::contract::cmd::{CreateQpRepr, RegMrRepr};

    #[test]
    fn big_endian_fields_on_a_byte_bus() {
        // RegMr.pdn is bytes 0..4: at mailbox byte 16 its first (most significant) byte.
        let (e, w) = be_get("mb", RegMrRepr::FIELDS, 16, "pdn");
        assert_eq!((e.as_str(), w), ("{mb[135:128], mb[143:136], mb[151:144], mb[159:152]}", 32));
        let s = be_put("t", CreateQpRepr::FIELDS, 0, "sq_log_size", "v");
        assert_eq!(s, vec!["t[103:96] = v[7:0];"]);
        let r = wire::ext::RethRepr::FIELDS;
        assert_eq!(be_slice("m", 100, r, 16, "va"), "m[227:164]");
        assert_eq!(be_slice("m", 100, r, 16, "dma_len"), "m[131:100]");
        let s = be_put("t", RegMrRepr::FIELDS, 0, "pdn", "v");
        assert_eq!(s[0], "t[7:0] = v[31:24];");
        assert_eq!(s[3], "t[31:24] = v[7:0];");
    }

    #[test]
    fn packed_records_by_name() {
        let l = Layout::new("r", &[("a", 3), ("gone", 0), ("b", 5)]);
        assert_eq!(slice(&l, "x", "b"), "x[7:3]");
        assert_eq!(slice_low(&l, "x", "b", 2), "x[4:3]");
        let (d, r) = build(&l, "old", "n", |n, _| (n == "a").then(|| "y".to_string()));
        assert_eq!((d, r.as_str()), (vec!["wire [2:0] n_a = y;".to_string()], "{old[7:3], n_a}"));
    }
}
