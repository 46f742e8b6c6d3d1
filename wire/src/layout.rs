//! Packed records: a layout is a list of named fields of stated widths, packed LSB first. One description
//! serves everything that needs the record's bits: the model packs its state into it (and proves the widths
//! are enough by unpacking the same state again), the RTL's context RAMs and the testbench take their field
//! slices from it, and the block RAM a table needs is computed from it.

/// One named field of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub width: u32,
}

/// A record: its fields in order, the first at bit 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub name: &'static str,
    pub fields: Vec<Field>,
}

impl Layout {
    /// A layout of `fields` (name, width), in order.
    pub fn new(name: &'static str, fields: &[(&'static str, u32)]) -> Layout {
        Layout { name, fields: fields.iter().map(|&(name, width)| Field { name, width }).collect() }
    }

    /// Bits of one record.
    pub fn width(&self) -> u32 {
        self.fields.iter().map(|f| f.width).sum()
    }

    /// The bit offset and width of field `name`.
    pub fn slice(&self, name: &str) -> Option<(u32, u32)> {
        let mut at = 0;
        for f in &self.fields {
            if f.name == name {
                return Some((at, f.width));
            }
            at += f.width;
        }
        None
    }
}

/// Why a value could not be packed or read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// The packer was given field `got` where the layout has `want` next (or nothing).
    #[error("{layout}: field {got} given where the layout has {}", want.unwrap_or("nothing"))]
    OutOfOrder { layout: &'static str, want: Option<&'static str>, got: String },
    /// The value does not fit the field's width.
    #[error("{layout}.{field}: value {value:#x} does not fit {width} bits")]
    TooWide { layout: &'static str, field: &'static str, width: u32, value: u128 },
    /// Fields of the layout were left unpacked.
    #[error("{layout}: fields from {next} on were not packed")]
    Unfinished { layout: &'static str, next: &'static str },
    /// The record is longer than `MAX_RECORD_BITS`.
    #[error("{layout}: longer than {MAX_RECORD_BITS} bits")]
    TooLong { layout: &'static str },
}

/// Most bits one record may have.
pub const MAX_RECORD_BITS: u32 = 1024;

/// A packed record's bits, LSB first (at most `MAX_RECORD_BITS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bits {
    words: [u64; (MAX_RECORD_BITS / 64) as usize],
    len: u32,
}

impl Default for Bits {
    fn default() -> Self {
        Bits { words: [0; (MAX_RECORD_BITS / 64) as usize], len: 0 }
    }
}

impl Bits {
    /// The record's width in bits.
    pub fn len(&self) -> u32 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn push(&mut self, value: u128, width: u32) {
        let mut done = 0;
        while done < width {
            let at = self.len + done;
            let (word, bit) = ((at / 64) as usize, at % 64);
            let n = (64 - bit).min(width - done);
            let chunk = ((value >> done) as u64) & mask(n);
            self.words[word] |= chunk << bit;
            done += n;
        }
        self.len += width;
    }

    /// `width` bits from bit `at`.
    pub fn get(&self, at: u32, width: u32) -> u128 {
        let mut v = 0u128;
        let mut done = 0;
        while done < width {
            let pos = at + done;
            let (word, bit) = ((pos / 64) as usize, pos % 64);
            let n = (64 - bit).min(width - done);
            let w = self.words.get(word).copied().unwrap_or(0);
            v |= u128::from((w >> bit) & mask(n)) << done;
            done += n;
        }
        v
    }
}

/// The low `n` bits set (n at most 64).
fn mask(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Packs one record field by field, in the layout's order; each field is named, so a packer that drifts from
/// the layout fails rather than shifting every later field.
pub struct Packer<'a> {
    layout: &'a Layout,
    next: usize,
    bits: Bits,
    names: bool,
}

impl<'a> Packer<'a> {
    pub fn new(layout: &'a Layout) -> Self {
        Packer { layout, next: 0, bits: Bits::default(), names: true }
    }

    /// A packer that takes the fields' order on trust, for code whose order a checked packer already
    /// proved (widths and count are still checked).
    pub fn trusting(layout: &'a Layout) -> Self {
        Packer { names: false, ..Packer::new(layout) }
    }

    /// Packs `value` into the next field, which must be `name`.
    pub fn put(&mut self, name: &str, value: impl Into<u128>) -> Result<(), LayoutError> {
        let value = value.into();
        let l = self.layout;
        let f = match l.fields.get(self.next) {
            Some(f) if !self.names || f.name == name => *f,
            other => {
                return Err(LayoutError::OutOfOrder { layout: l.name, want: other.map(|f| f.name), got: name.into() })
            }
        };
        if f.width < 128 && value >> f.width != 0 {
            return Err(LayoutError::TooWide { layout: l.name, field: f.name, width: f.width, value });
        }
        if self.bits.len + f.width > MAX_RECORD_BITS {
            return Err(LayoutError::TooLong { layout: l.name });
        }
        self.bits.push(value, f.width);
        self.next += 1;
        Ok(())
    }

    /// Packs a flag.
    pub fn flag(&mut self, name: &str, on: bool) -> Result<(), LayoutError> {
        self.put(name, u8::from(on))
    }

    /// The record, once every field is in.
    pub fn finish(self) -> Result<Bits, LayoutError> {
        match self.layout.fields.get(self.next) {
            Some(f) => Err(LayoutError::Unfinished { layout: self.layout.name, next: f.name }),
            None => Ok(self.bits),
        }
    }
}

/// Reads a record back field by field, in the layout's order.
pub struct Unpacker<'a> {
    layout: &'a Layout,
    bits: &'a Bits,
    next: usize,
    at: u32,
    names: bool,
}

impl<'a> Unpacker<'a> {
    pub fn new(layout: &'a Layout, bits: &'a Bits) -> Self {
        Unpacker { layout, bits, next: 0, at: 0, names: true }
    }

    /// An unpacker that takes the fields' order on trust (see `Packer::trusting`).
    pub fn trusting(layout: &'a Layout, bits: &'a Bits) -> Self {
        Unpacker { names: false, ..Unpacker::new(layout, bits) }
    }

    /// The next field, which must be `name`.
    pub fn get(&mut self, name: &str) -> Result<u128, LayoutError> {
        let l = self.layout;
        let f = match l.fields.get(self.next) {
            Some(f) if !self.names || f.name == name => *f,
            other => {
                return Err(LayoutError::OutOfOrder { layout: l.name, want: other.map(|f| f.name), got: name.into() })
            }
        };
        let v = self.bits.get(self.at, f.width);
        self.at += f.width;
        self.next += 1;
        Ok(v)
    }

    /// The next field as a `u64` (fields of this kind are at most 64 bits wide).
    pub fn u64(&mut self, name: &str) -> Result<u64, LayoutError> {
        Ok(self.get(name)? as u64)
    }

    /// The next field as a flag.
    pub fn flag(&mut self, name: &str) -> Result<bool, LayoutError> {
        Ok(self.get(name)? != 0)
    }
}

/// The block RAM primitives the tables are counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bram {
    /// Lattice ECP5 `DP16KD`: 18 Kbit, 16K x 1 up to 512 x 36.
    Dp16kd,
    /// AMD 7-series `RAMB36E1`: 36 Kbit, 32K x 1 up to 512 x 72.
    Ramb36,
    /// AMD UltraScale+ `URAM288`: 288 Kbit, 4K x 72 only.
    Uram288,
}

impl Bram {
    /// The (depth, width) shapes one primitive can take.
    pub fn shapes(self) -> &'static [(u64, u64)] {
        match self {
            Bram::Dp16kd => &[(16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36)],
            Bram::Ramb36 => &[(32768, 1), (16384, 2), (8192, 4), (4096, 9), (2048, 18), (1024, 36), (512, 72)],
            Bram::Uram288 => &[(4096, 72)],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Bram::Dp16kd => "DP16KD",
            Bram::Ramb36 => "RAMB36",
            Bram::Uram288 => "URAM288",
        }
    }

    /// Primitives for `depth` entries of `width` bits, each entry in `rows` consecutive rows of the RAM (read
    /// over `rows` cycles): the fewest over the primitive's shapes.
    pub fn blocks(self, depth: u64, width: u64, rows: u64) -> u64 {
        let (d, w) = (depth * rows, width.div_ceil(rows));
        self.shapes().iter().map(|&(sd, sw)| d.div_ceil(sd) * w.div_ceil(sw)).min().unwrap_or(0)
    }
}

/// A table of `depth` records of `layout`, each entry spread over `rows` rows of the RAM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub layout: Layout,
    pub depth: u64,
    pub rows: u64,
}

impl Table {
    /// Bits the table holds.
    pub fn bits(&self) -> u64 {
        self.depth * u64::from(self.layout.width())
    }

    /// Block RAM primitives of kind `b` the table takes.
    pub fn blocks(&self, b: Bram) -> u64 {
        b.blocks(self.depth, u64::from(self.layout.width()), self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l() -> Layout {
        Layout::new("t", &[("a", 3), ("b", 64), ("c", 1), ("d", 70)])
    }

    #[test]
    fn fields_pack_lsb_first_and_read_back() {
        let l = l();
        assert_eq!(l.width(), 138);
        assert_eq!(l.slice("c"), Some((67, 1)));
        assert_eq!(l.slice("x"), None);
        let mut p = Packer::new(&l);
        p.put("a", 5u8).unwrap();
        p.put("b", u64::MAX - 1).unwrap();
        p.flag("c", true).unwrap();
        p.put("d", (1u128 << 69) | 3).unwrap();
        let bits = p.finish().unwrap();
        assert_eq!(bits.len(), 138);
        assert_eq!(bits.get(0, 3), 5);
        assert_eq!(bits.get(3, 64), u128::from(u64::MAX - 1));
        let mut u = Unpacker::new(&l, &bits);
        assert_eq!(u.get("a").unwrap(), 5);
        assert_eq!(u.u64("b").unwrap(), u64::MAX - 1);
        assert!(u.flag("c").unwrap());
        assert_eq!(u.get("d").unwrap(), (1u128 << 69) | 3);
    }

    #[test]
    fn a_packer_refuses_what_the_layout_does_not_say() {
        let l = l();
        let mut p = Packer::new(&l);
        assert_eq!(p.put("a", 8u8), Err(LayoutError::TooWide { layout: "t", field: "a", width: 3, value: 8 }));
        p.put("a", 7u8).unwrap();
        assert!(matches!(p.put("c", 0u8), Err(LayoutError::OutOfOrder { want: Some("b"), .. })));
        p.put("b", 0u8).unwrap();
        let e = Packer::new(&l).finish().unwrap_err();
        assert_eq!(e.to_string(), "t: fields from a on were not packed");
        assert!(p.finish().is_err(), "c and d missing");
        let bits = Bits::default();
        assert!(matches!(Unpacker::new(&l, &bits).get("b"), Err(LayoutError::OutOfOrder { .. })));
        // Trusting the order, only the count and the widths are checked.
        let mut t = Packer::trusting(&l);
        t.put("x", 1u8).unwrap();
        assert!(t.put("y", 1u128 << 64).is_err(), "b is 64 bits wide");
        assert_eq!(Unpacker::trusting(&l, &bits).get("z"), Ok(0));
        let wide = Layout::new("w", &[("a", 1000), ("b", 100)]);
        let mut p = Packer::new(&wide);
        p.put("a", 0u8).unwrap();
        assert_eq!(p.put("b", 0u8), Err(LayoutError::TooLong { layout: "w" }));
    }

    #[test]
    fn block_ram_counts() {
        // 256 x 36: one DP16KD (512 x 36, half used); 256 x 37 takes two, or one over two rows.
        assert_eq!(Bram::Dp16kd.blocks(256, 36, 1), 1);
        assert_eq!(Bram::Dp16kd.blocks(256, 37, 1), 2);
        assert_eq!(Bram::Dp16kd.blocks(256, 72, 2), 1);
        // 2048 x 80: 9 of 2048 x 9; 16384 x 1: one; 16385 x 1: two.
        assert_eq!(Bram::Dp16kd.blocks(2048, 80, 1), 9);
        assert_eq!(Bram::Dp16kd.blocks(16384, 1, 1), 1);
        assert_eq!(Bram::Dp16kd.blocks(16385, 1, 1), 2);
        assert_eq!(Bram::Ramb36.blocks(512, 72, 1), 1);
        assert_eq!(Bram::Ramb36.blocks(1024, 72, 1), 2);
        let t = Table { layout: Layout::new("x", &[("v", 40)]), depth: 1024, rows: 1 };
        assert_eq!((t.bits(), t.blocks(Bram::Dp16kd), t.blocks(Bram::Ramb36)), (40960, 3, 2));
    }
}
