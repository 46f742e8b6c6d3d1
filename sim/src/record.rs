//! Records compared field by field: the fields of a layout (`wire::layout::Layout`, the one description of
//! every packed context and record) in which two packed records differ, decoded, for a mismatch's message.

use wire::layout::Layout;

/// The fields of a record of layout `l` in which `got` (the RTL's) and `want` (the model's) differ, each as
/// `name: RTL value, model value`, joined by "; "; empty when they agree. Bytes past either record read as 0.
pub fn diff(l: &Layout, got: &[u8], want: &[u8]) -> String {
    let bit = |b: &[u8], i: u32| u128::from(b.get((i / 8) as usize).map_or(0, |x| x >> (i % 8) & 1));
    let field = |b: &[u8], at: u32, w: u32| (0..w).fold(0u128, |v, i| v | bit(b, at + i) << i);
    let mut at = 0;
    let mut out = Vec::new();
    for f in &l.fields {
        let (g, m) = (field(got, at, f.width), field(want, at, f.width));
        if g != m {
            out.push(format!("{}: RTL {g:#x}, model {m:#x}", f.name));
        }
        at += f.width;
    }
    out.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::contract::profile::Profile;
    use wire::contract::qpc::qp_context;

    #[test]
    fn names_each_field_that_differs_and_no_other() {
        let l = qp_context(&Profile::default()).resp;
        let want = vec![0u8; l.width().div_ceil(8) as usize];
        assert_eq!(diff(&l, &want, &want), "");
        // The first field's lowest bit and the last field's highest.
        let mut got = want.clone();
        got[0] ^= 1;
        let end = l.width() - 1;
        got[(end / 8) as usize] ^= 1 << (end % 8);
        let (first, last) = (&l.fields[0], &l.fields[l.fields.len() - 1]);
        let top = 1u128 << (last.width - 1);
        assert_eq!(
            diff(&l, &got, &want),
            format!("{}: RTL 0x1, model 0x0; {}: RTL {top:#x}, model 0x0", first.name, last.name)
        );
    }
}
