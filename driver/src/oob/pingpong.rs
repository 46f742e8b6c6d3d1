//! `ibv_rc_pingpong`'s exchange (rdma-core's libibverbs/examples/rc_pingpong.c).

use crate::Error;

/// `ibv_rc_pingpong`'s message: `"%04x:%06x:%06x:%s"` of LID, QPN, PSN and the GID as 32 hex digits, with
/// its terminating NUL: 52 bytes each way. The client then writes `"done"` with its NUL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingpongDest {
    pub lid: u16,
    pub qpn: u32,
    pub psn: u32,
    pub gid: [u8; 16],
}

/// Length of a `PingpongDest` message on the wire.
pub const PINGPONG_MSG_LEN: usize = 52;
/// What the client sends last.
pub const PINGPONG_DONE: &[u8; 5] = b"done\0";
/// The port `ibv_rc_pingpong` listens on by default.
pub const PINGPONG_PORT: u16 = 18515;

impl PingpongDest {
    /// The 52-byte message. The GID's 16 bytes are written in their wire order (what `gid_to_wire_gid`
    /// produces on a little-endian host).
    pub fn to_msg(&self) -> [u8; PINGPONG_MSG_LEN] {
        let gid: String = self.gid.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!("{:04x}:{:06x}:{:06x}:{gid}", self.lid, self.qpn & 0xFF_FFFF, self.psn & 0xFF_FFFF);
        let mut m = [0u8; PINGPONG_MSG_LEN];
        m[..text.len()].copy_from_slice(text.as_bytes());
        m
    }

    /// Parses the peer's message (as `sscanf("%x:%x:%x:%s")` would, the GID 32 hex digits).
    pub fn parse(msg: &[u8]) -> Result<Self, Error> {
        let bad = Error::Network("malformed pingpong message");
        let text = msg.split(|&b| b == 0).next().ok_or(bad.clone())?;
        let text = std::str::from_utf8(text).map_err(|_| bad.clone())?;
        let mut f = text.split(':');
        let mut num =
            |max: u32| f.next().and_then(|s| u32::from_str_radix(s, 16).ok()).filter(|&v| v <= max).ok_or(bad.clone());
        let (lid, qpn, psn) = (num(0xFFFF)? as u16, num(0xFF_FFFF)?, num(0xFF_FFFF)?);
        let hex = f.next().filter(|g| g.len() == 32).ok_or(bad.clone())?;
        let mut gid = [0u8; 16];
        for (i, b) in gid.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad.clone())?;
        }
        Ok(PingpongDest { lid, qpn, psn, gid })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pingpong_messages_both_ways() {
        // The server reply of the peer kit's rxe exchange: LID 0, QPN 0x100, PSN 0x456, GID ::ffff:10.0.0.1.
        let m = b"0000:000100:000456:00000000000000000000ffff0a000001\0";
        assert_eq!(m.len(), PINGPONG_MSG_LEN);
        let d = PingpongDest::parse(m).unwrap();
        let gid = wire::ipv6::gid_from_ipv4([10, 0, 0, 1]);
        assert_eq!(d, PingpongDest { lid: 0, qpn: 0x100, psn: 0x456, gid });
        assert_eq!(&d.to_msg(), m);
        for bad in [&b"0000:000100:000456:00ffff0a000001\0"[..], b"0000:1000000:000456:", b"x", b""] {
            assert!(PingpongDest::parse(bad).is_err(), "{bad:?}");
        }
    }
}
