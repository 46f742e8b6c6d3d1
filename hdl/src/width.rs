//! The two datapath widths we build and verify.

/// Bytes per beat of the stream bus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Width {
    /// 8 bytes: open FPGA boards, 10G class.
    W8,
    /// 64 bytes: 100G class.
    W64,
}

impl Width {
    pub const ALL: [Width; 2] = [Width::W8, Width::W64];

    pub const fn bytes(self) -> usize {
        match self {
            Width::W8 => 8,
            Width::W64 => 64,
        }
    }

    /// Parses a byte count given on the command line.
    pub fn from_bytes(n: usize) -> Option<Width> {
        Width::ALL.into_iter().find(|w| w.bytes() == n)
    }
}
