//! The RTL tests' runs at both datapath widths.

/// Each test named here, at both widths: `w8::name` on the 8-byte core, `w64::name` on the 64-byte one.
macro_rules! at_both_widths {
    ($($name:ident),* $(,)?) => {
        mod w8 {
            $(#[test]
            fn $name() {
                super::$name(hdl::Width::W8)
            })*
        }
        mod w64 {
            $(#[test]
            fn $name() {
                super::$name(hdl::Width::W64)
            })*
        }
    };
}
