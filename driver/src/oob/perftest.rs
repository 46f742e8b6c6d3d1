//! perftest's exchange (linux-rdma/perftest, `src/perftest_communication.c`, as of perftest 6.06, the
//! version Debian's perftest 4.5-0.17 reports): fixed-size messages on one TCP connection. Every step is
//! symmetric: the client writes its half first and then reads the server's, the server reads and then
//! writes. Which steps a tool takes, and in what order, is the tool's business (`ferrite perf --link`).

use crate::netdev::{Stack, TcpConn};
use crate::Error;

/// The port perftest's tools listen on by default.
pub const PERFTEST_PORT: u16 = 18515;
/// The version ferrite's side announces: the exchange below is 6.06's.
pub const VERSION: &str = "6.06";
/// perftest refuses a peer older than this (`check_version_compatibility`).
pub const MIN_PEER_VERSION: f64 = 5.70;
/// `char version[MAX_VERSION]`, sent whole.
pub const VERSION_LEN: usize = 16;
/// `KEY_MSG_SIZE_GID`: the key message with a GID, what RoCE uses.
pub const KEY_MSG_LEN: usize = 108;
/// What each side writes after the closing handshake (`ctx_close_connection`).
pub const DONE: &[u8; 5] = b"done\0";

/// One QP's keys (`struct pingpong_dest` as `ethernet_write_keys` prints it with a GID):
/// `"%04x:%04x:%06x:%06x:%08x:%016llx:"`, the 16 GID bytes each as `"%02x:"`, then `"%08x:"` of the SRQ
/// number, and a NUL: 108 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Keys {
    pub lid: u16,
    /// The reads and atomics this side's responder takes at once; the peer's requester may issue that many.
    pub out_reads: u16,
    pub qpn: u32,
    pub psn: u32,
    pub rkey: u32,
    /// Where the peer's RDMA goes in this side's memory.
    pub vaddr: u64,
    pub gid: [u8; 16],
    pub srqn: u32,
}

impl Keys {
    pub fn to_msg(&self) -> [u8; KEY_MSG_LEN] {
        let mut text = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid,
            self.out_reads,
            self.qpn & 0xFF_FFFF,
            self.psn & 0xFF_FFFF,
            self.rkey,
            self.vaddr
        );
        for b in self.gid {
            text += &format!("{b:02x}:");
        }
        text += &format!("{:08x}:", self.srqn);
        let mut m = [0u8; KEY_MSG_LEN];
        m[..text.len()].copy_from_slice(text.as_bytes());
        m
    }

    /// Parses the peer's message: 23 hexadecimal fields, each followed by a colon.
    pub fn parse(msg: &[u8]) -> Result<Self, Error> {
        let bad = Error::Network("malformed perftest key message");
        let text = msg.split(|&b| b == 0).next().ok_or(bad.clone())?;
        let text = std::str::from_utf8(text).map_err(|_| bad.clone())?;
        let fields: Vec<&str> = text.split(':').collect();
        // 23 fields and the empty rest after the last colon.
        if fields.len() != 24 || !fields[23].is_empty() {
            return Err(bad);
        }
        let hex = |i: usize, max: u64| {
            u64::from_str_radix(fields[i], 16).ok().filter(|&v| v <= max && !fields[i].is_empty()).ok_or(bad.clone())
        };
        let mut gid = [0u8; 16];
        for (i, g) in gid.iter_mut().enumerate() {
            *g = hex(6 + i, 0xFF)? as u8;
        }
        Ok(Keys {
            lid: hex(0, 0xFFFF)? as u16,
            out_reads: hex(1, 0xFFFF)? as u16,
            qpn: hex(2, 0xFF_FFFF)? as u32,
            psn: hex(3, 0xFF_FFFF)? as u32,
            rkey: hex(4, 0xFFFF_FFFF)? as u32,
            vaddr: hex(5, u64::MAX)?,
            gid,
            srqn: hex(22, 0xFFFF_FFFF)? as u32,
        })
    }
}

/// A bandwidth report (`struct bw_report_data`'s exchanged fields), sent field by field in network order:
/// size and iterations as 64-bit integers, then peak bandwidth, average bandwidth and message rate as
/// doubles whose bytes are swapped the same way.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BwReport {
    pub size: u64,
    pub iters: u64,
    /// MB/s (2^20 bytes per second).
    pub bw_peak: f64,
    pub bw_avg: f64,
    /// Millions of messages per second.
    pub msg_rate: f64,
}

/// The version number at the front of a version message, as `atof` reads it.
pub fn parse_version(msg: &[u8]) -> Option<f64> {
    let text = msg.split(|&b| b == 0).next()?;
    let text = std::str::from_utf8(text).ok()?;
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    text[..end].parse().ok()
}

/// Which end of the TCP connection this side is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Server,
    Client,
}

/// One tool run's exchange on an established connection.
pub struct Session<'a> {
    pub stack: &'a mut Stack,
    conn: Option<TcpConn>,
    pub role: Role,
    /// Device time each step may take.
    pub timeout_ns: u64,
}

impl<'a> Session<'a> {
    /// Connects to the server at `ip:port` (retrying while it is not listening yet), or accepts the
    /// first client on `port`.
    pub fn open(stack: &'a mut Stack, peer: Option<[u8; 4]>, port: u16, timeout_ns: u64) -> Result<Self, Error> {
        let (conn, role) = match peer {
            Some(ip) => (stack.connect(ip, port, timeout_ns)?, Role::Client),
            None => (stack.accept(port, timeout_ns)?, Role::Server),
        };
        Ok(Session { stack, conn: Some(conn), role, timeout_ns })
    }

    /// One symmetric step: `mine` goes out, the peer's message of the same length comes back.
    pub fn xchg(&mut self, mine: &[u8]) -> Result<Vec<u8>, Error> {
        let t = self.timeout_ns;
        let c = self.conn.take().ok_or(Error::Network("perftest exchange already closed"))?;
        let r = match self.role {
            Role::Client => self.stack.send(&c, mine, t).and_then(|()| self.stack.recv(&c, mine.len(), t)),
            Role::Server => {
                let theirs = self.stack.recv(&c, mine.len(), t);
                theirs.and_then(|v| self.stack.send(&c, mine, t).map(|()| v))
            }
        };
        self.conn = Some(c);
        r
    }

    /// Whether the peer has closed the connection (its tool exited, as perftest's do on an error).
    pub fn peer_closed(&self) -> bool {
        self.conn.as_ref().is_none_or(|c| self.stack.peer_closed(c))
    }

    /// Whether the peer's next message of `len` bytes is all here: the peer has moved on to the next step.
    pub fn peer_waiting(&self, len: usize) -> bool {
        self.conn.as_ref().is_some_and(|c| self.stack.unread(c) >= len)
    }

    /// `exchange_versions` and `check_version_compatibility`: the peer's version number.
    pub fn versions(&mut self) -> Result<f64, Error> {
        let mut mine = [0u8; VERSION_LEN];
        mine[..VERSION.len()].copy_from_slice(VERSION.as_bytes());
        let theirs = parse_version(&self.xchg(&mine)?).ok_or(Error::Network("malformed perftest version"))?;
        if theirs < MIN_PEER_VERSION {
            return Err(Error::Network("the peer's perftest is older than 5.70, whose exchange differs"));
        }
        Ok(theirs)
    }

    /// `check_sys_data`: page size (the "cycle buffer") and cache line size, each side taking the larger.
    pub fn sys_data(&mut self, cycle_buffer: u32, cache_line: u32) -> Result<(u32, u32), Error> {
        let cycle = self.xchg(&cycle_buffer.to_be_bytes())?;
        let line = self.xchg(&cache_line.to_be_bytes())?;
        let be = |v: &[u8]| u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
        Ok((be(&cycle).max(cycle_buffer), be(&line).max(cache_line)))
    }

    /// `check_mtu`: each side's active MTU as `enum ibv_mtu` in decimal with its NUL (two bytes); both
    /// use the smaller.
    pub fn mtu(&mut self, mtu: u8) -> Result<u8, Error> {
        if !(1..=5).contains(&mtu) {
            return Err(Error::InvalidArgument("MTU enum out of 1..=5"));
        }
        let theirs = self.xchg(&[b'0' + mtu, 0])?;
        Ok(match theirs[0] {
            c @ b'1'..=b'5' if theirs[1] == 0 => mtu.min(c - b'0'),
            _ => mtu,
        })
    }

    /// `ctx_hand_shake`: keys both ways (also the tools' barrier between phases).
    pub fn keys(&mut self, mine: &Keys) -> Result<Keys, Error> {
        Keys::parse(&self.xchg(&mine.to_msg())?)
    }

    /// `xchg_bw_reports` with a peer of version 5.33 or later.
    pub fn reports(&mut self, mine: &BwReport) -> Result<BwReport, Error> {
        let mut field = |v: u64| -> Result<u64, Error> {
            let r = self.xchg(&v.to_be_bytes())?;
            Ok(u64::from_be_bytes(r.try_into().map_err(|_| Error::Network("short perftest report"))?))
        };
        Ok(BwReport {
            size: field(mine.size)?,
            iters: field(mine.iters)?,
            bw_peak: f64::from_bits(field(mine.bw_peak.to_bits())?),
            bw_avg: f64::from_bits(field(mine.bw_avg.to_bits())?),
            msg_rate: f64::from_bits(field(mine.msg_rate.to_bits())?),
        })
    }

    /// `ctx_close_connection`: a last handshake, then `"done"` and the close.
    pub fn close(mut self, mine: &Keys) -> Result<(), Error> {
        self.keys(mine)?;
        let t = self.timeout_ns;
        let c = self.conn.take().ok_or(Error::Network("perftest exchange already closed"))?;
        // The peer's tool must have these keys before this side goes; "done" is read by no tool.
        self.stack.flush(&c, t)?;
        self.stack.send(&c, DONE, t)?;
        self.stack.close(c, 1_000_000_000);
        Ok(())
    }

    /// Closes the connection without the closing handshake (the latency tools that end without one, and
    /// a run that failed).
    pub fn hang_up(self) {}
}

/// However a session ends, its connection is closed (FIN), so the peer's tool is never left waiting.
impl Drop for Session<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            self.stack.close(c, 1_000_000_000);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Keys {
        Keys {
            lid: 0,
            out_reads: 0x80,
            qpn: 0x11,
            psn: 0xabcdef,
            rkey: 0x1234,
            vaddr: 0x5555_6666_7000,
            gid: wire::ipv6::gid_from_ipv4([10, 0, 0, 2]),
            srqn: 0,
        }
    }

    #[test]
    fn key_message_as_perftest_prints_it() {
        let m = sample().to_msg();
        let text = "0000:0080:000011:abcdef:00001234:0000555566667000:\
                    00:00:00:00:00:00:00:00:00:00:ff:ff:0a:00:00:02:00000000:";
        assert_eq!(text.len(), KEY_MSG_LEN - 1);
        assert_eq!(&m[..KEY_MSG_LEN - 1], text.as_bytes());
        assert_eq!(m[KEY_MSG_LEN - 1], 0);
        assert_eq!(Keys::parse(&m).unwrap(), sample());
        let mut srq = sample();
        srq.srqn = 0xdead_beef;
        srq.rkey = 0xffff_ffff;
        srq.vaddr = u64::MAX;
        assert_eq!(Keys::parse(&srq.to_msg()).unwrap(), srq);
    }

    #[test]
    fn malformed_key_messages_are_refused() {
        let good = String::from_utf8(sample().to_msg()[..KEY_MSG_LEN - 1].to_vec()).unwrap();
        let cases = [
            good.replacen("000011", "1000000", 1), // QPN above 24 bits
            good.replacen(":0a:", ":100:", 1),     // a GID byte above 0xff
            good.replacen(":0a:", ":xy:", 1),
            good.replacen(":0a:", "::", 1),
            good.trim_end_matches(':').to_string(), // no closing colon
            good[..60].to_string(),
            String::new(),
        ];
        for c in cases {
            assert!(Keys::parse(c.as_bytes()).is_err(), "{c}");
        }
    }

    #[test]
    fn versions_are_read_as_atof_does() {
        assert_eq!(parse_version(b"6.06\0\0\0\0\0\0\0\0\0\0\0\0"), Some(6.06));
        assert_eq!(parse_version(b"5.70-rc\0"), Some(5.70));
        assert_eq!(parse_version(b"x\0"), None);
    }
}
