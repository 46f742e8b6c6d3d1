//! The raw Ethernet path in the core: the model's `raw::receive` as far as the NIC answers by itself. An
//! ARP request or an ICMP echo request for one of the NIC's IPv4 addresses (those of its IPv4-mapped GIDs)
//! is answered from the control queue, the model's `ctrl_queue`; every other frame that is not RoCEv2 goes
//! to the raw packet QP (the dispatch's `RAW_RECV`: the RX pipeline hands it on whole, its receive WQE is
//! fetched and the frame scattered over it), or is dropped and counted when there is none or it has no WQE.
//! Its send is the requester's (`engine::req::tx`): each WQE a whole frame, the TX pipeline's raw record.
//!
//! `RawRecv` reads each frame as the RX pipeline takes it: its first 64 bytes, its length and the ICMP
//! checksum's running sum; it writes the frame into the control queue's landing slot. A frame that asks for
//! a reply (`recv`'s checks, those of `wire::arp::parse_frame` and `wire::icmp::parse_echo_request`) is held
//! there, and the RX pipeline takes no further frame, until the dispatch decides it: a frame routed as not
//! RoCEv2 to an address the GID table holds then enters the queue (`CtrlQueue`), or is counted as a full
//! queue's loss. So the queue's room is judged at the frame's decision, as the model judges it.
//!
//! `CtrlQueue` sends the queued replies, oldest first, each between two of the TX pipeline's frames; the
//! reply's bytes are the landing slot's with the reply's fields (`PATCH`) written over them, as
//! `wire::arp::reply_frame` and `wire::icmp::echo_reply` build them. Its decision (the trace's
//! `Tx(Control)`) is its last beat taken: the slot stays the frame's until then.

pub mod ctrl;
pub mod recv;

use wire::layout::Layout;

/// Slots of the control queue's frame store: the queue's entries (the board profile's `ctrl_queue`) and the
/// landing slot.
pub const SLOTS: usize = 5;
/// Entries of the control queue, as the board profile has them.
pub const ENTRIES: usize = SLOTS - 1;
/// Bytes of a slot: the longest frame the control queue holds.
pub const SLOT_BYTES: usize = wire::contract::qpc::CTRL_FRAME_LEN as usize;
/// The part of a frame `RawRecv` keeps in registers and `CtrlQueue` rebuilds: every field a reply changes
/// lies in it.
pub const HEAD_BYTES: usize = 64;

/// What a reply needs besides the received bytes, as `RawRecv` hands it over: an ARP reply (else an echo
/// reply), the request's VLAN tag, the reply's destination and source MAC (`mac_b` is the NIC's for ARP, put
/// in as the reply is queued), the request's sender (`ip_a`) and target (`ip_b`) IPv4 address, the reply's
/// IPv4 and ICMP checksums, and where the reply's own bytes end (`end`; zeros follow, to the Ethernet
/// minimum).
pub fn patch() -> Layout {
    Layout::new(
        "raw_patch",
        &[
            ("arp", 1),
            ("vlan", 1),
            ("tci", 16),
            ("mac_a", 48),
            ("mac_b", 48),
            ("ip_a", 32),
            ("ip_b", 32),
            ("csum_ip", 16),
            ("csum_icmp", 16),
            ("end", 11),
        ],
    )
}

/// Bits of `patch()`.
pub const PATCH_BITS: usize = 221;

#[cfg(test)]
mod tests {
    #[test]
    fn the_patch_is_as_wide_as_its_constant() {
        assert_eq!(super::patch().width() as usize, super::PATCH_BITS);
        assert_eq!(super::ENTRIES as u32, wire::contract::profile::Profile::board().ctrl_queue);
    }
}
