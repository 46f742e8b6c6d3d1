//! Big-endian field access and the `header!` macro that turns a fixed byte layout into a zero-copy view
//! plus a validated `Repr`. Every fixed-layout header and descriptor in this crate is declared through it,
//! so each offset is written exactly once.

/// Reads `bytes` (at most 8) as a big-endian unsigned integer.
#[inline]
pub fn get_be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

/// Writes the low `bytes.len()` bytes of `value` big-endian into `bytes`.
#[inline]
pub fn set_be(bytes: &mut [u8], value: u64) {
    let n = bytes.len();
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (value >> (8 * (n - 1 - i))) as u8;
    }
}

/// Declares a fixed-size header: `Name<T>` (zero-copy view with getters/setters) and `NameRepr` (owned fields).
///
/// Field syntax: `name: type [start..end]` with byte offsets; values are big-endian and `end - start`
/// may be narrower than the type (e.g. a 24-bit QPN in a `u32`). Values wider than the field are truncated
/// on emit, so `Repr`s carry already-validated values.
#[macro_export]
macro_rules! header {
    (
        $(#[$meta:meta])*
        $view:ident / $repr:ident, len = $len:expr;
        $( $(#[$fmeta:meta])* $field:ident / $setter:ident : $ty:ty [$start:literal .. $end:literal] ),* $(,)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $view<T: AsRef<[u8]>> {
            buffer: T,
        }

        // A field may be named `len` after the spec (UDP Length, a WQE's length): not a collection's length.
        #[allow(clippy::len_without_is_empty)]
        impl<T: AsRef<[u8]>> $view<T> {
            /// Length of this header in bytes.
            pub const LEN: usize = $len;

            /// Wraps a buffer without checking its length; accessors panic on a short buffer.
            pub const fn new_unchecked(buffer: T) -> Self {
                Self { buffer }
            }

            /// Wraps a buffer, failing if it is shorter than the header.
            pub fn new_checked(buffer: T) -> Result<Self, $crate::Error> {
                if buffer.as_ref().len() < Self::LEN {
                    Err($crate::Error::Truncated { layer: stringify!($view), need: Self::LEN, have: buffer.as_ref().len() })
                } else {
                    Ok(Self { buffer })
                }
            }

            /// Gives back the wrapped buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            $(
                $(#[$fmeta])*
                #[inline]
                pub fn $field(&self) -> $ty {
                    $crate::field::get_be(&self.buffer.as_ref()[$start..$end]) as $ty
                }
            )*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $view<T> {
            $(
                #[inline]
                #[allow(missing_docs)]
                pub fn $setter(&mut self, value: $ty) {
                    $crate::field::set_be(&mut self.buffer.as_mut()[$start..$end], value as u64)
                }
            )*
        }

        #[doc = concat!("Owned, validated contents of [`", stringify!($view), "`].")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
        pub struct $repr {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $repr {
            /// Length of the emitted header in bytes.
            pub const LEN: usize = $len;
            /// Each field's name and byte range (big-endian), for generators that need the layout itself.
            pub const FIELDS: &'static [(&'static str, core::ops::Range<usize>)] = &[ $( (stringify!($field), $start..$end), )* ];

            /// Reads every field out of a view.
            pub fn parse<T: AsRef<[u8]>>(view: &$view<T>) -> Self {
                Self { $( $field: view.$field(), )* }
            }

            /// Reads the header from the front of `bytes`.
            pub fn from_bytes(bytes: &[u8]) -> Result<Self, $crate::Error> {
                Ok(Self::parse(&$view::new_checked(bytes)?))
            }

            /// Writes every field into a view (reserved bytes are left as they are).
            pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut $view<T>) {
                $( view.$setter(self.$field); )*
            }

            /// Writes the header into the front of `bytes`, zeroing reserved bytes first.
            pub fn write_to(&self, bytes: &mut [u8]) -> Result<(), $crate::Error> {
                let have = bytes.len();
                let buf = bytes.get_mut(..$len).ok_or($crate::Error::Truncated { layer: stringify!($view), need: $len, have })?;
                buf.fill(0);
                self.emit(&mut $view::new_unchecked(buf));
                Ok(())
            }

            /// Emits into a fresh array.
            pub fn to_bytes(&self) -> [u8; $len] {
                let mut out = [0u8; $len];
                self.emit(&mut $view::new_unchecked(&mut out[..]));
                out
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn be_roundtrip_narrow_fields() {
        let mut b = [0u8; 3];
        set_be(&mut b, 0x12_3456);
        assert_eq!(b, [0x12, 0x34, 0x56]);
        assert_eq!(get_be(&b), 0x12_3456);
        set_be(&mut b, 0xAB12_3456); // truncates to the low 24 bits
        assert_eq!(get_be(&b), 0x12_3456);
    }
}
