//! How a ferrite NIC shows itself on PCIe: the IDs in its config space. Vendor 0x1234 is the unassigned
//! number open hardware and QEMU's experimental devices use (Corundum's defaults too); a board build that
//! has IDs of its own changes them here and in its bitstream together.

pub const VENDOR_ID: u16 = 0x1234;
/// "fe" for ferrite, 0x11 for the first function layout.
pub const DEVICE_ID: u16 = 0xfe11;
