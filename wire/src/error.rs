//! The crate's one error type.

/// Why a buffer could not be parsed or emitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The buffer ends before the header does.
    #[error("{layer}: truncated, need {need} bytes, have {have}")]
    Truncated { layer: &'static str, need: usize, have: usize },
    /// A field holds a value the layout does not allow.
    #[error("{layer}: malformed: {what}")]
    Malformed { layer: &'static str, what: &'static str },
}

impl Error {
    pub(crate) const fn malformed(layer: &'static str, what: &'static str) -> Self {
        Error::Malformed { layer, what }
    }
}
