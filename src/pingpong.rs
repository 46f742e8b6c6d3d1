//! `ferrite pingpong [PEER]`: `ibv_rc_pingpong` on a ferrite NIC attached to a real link. It speaks that
//! tool's out-of-band exchange over the host's TCP through the NIC, so the other side can be rdma-core's own
//! `ibv_rc_pingpong`; server when no peer is given. Every message received is checked: the tool sends
//! buffers of 0x7b bytes, as rc_pingpong does.

use crate::link::{FaultArgs, LinkArgs};
use crate::Error;
use clap::Args;
use driver::oob::{PingpongDest, PINGPONG_DONE, PINGPONG_MSG_LEN, PINGPONG_PORT};
use driver::{access, attr, ConnectOpts, Endpoint, QpAttr, QpCap, QpState, RecvWr, SendOp, SendWr, Sge, WcStatus};
use std::net::Ipv4Addr;
use wire::contract::regs::Counter;

/// The byte rc_pingpong fills its buffer with.
const FILL: u8 = 0x7b;
const RECV_WRID: u64 = 1;
const SEND_WRID: u64 = 2;

#[derive(Args, Debug, Clone)]
pub struct PingpongArgs {
    /// The server's IPv4 address; without it, ferrite is the server.
    pub peer: Option<Ipv4Addr>,
    #[command(flatten)]
    pub link: LinkArgs,
    #[command(flatten)]
    pub faults: FaultArgs,
    /// TCP port of the exchange.
    #[arg(short = 'p', long, default_value_t = PINGPONG_PORT)]
    pub port: u16,
    /// Bytes per message.
    #[arg(short = 's', long, default_value_t = 4096)]
    pub size: u32,
    /// Path MTU in bytes.
    #[arg(short = 'm', long, default_value_t = 1024)]
    pub mtu: u32,
    /// Receives posted at a time.
    #[arg(short = 'r', long = "rx-depth", default_value_t = 500)]
    pub rx_depth: u32,
    /// Messages each way.
    #[arg(short = 'n', long, default_value_t = 1000)]
    pub iters: u32,
    /// Seconds to wait for the peer, and for the exchange to finish.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct Report {
    role: &'static str,
    pass: bool,
    detail: String,
    iters_sent: u32,
    iters_received: u32,
    bad_payloads: u32,
    seconds: f64,
    retransmitted_packets: u64,
    local_ack_timeouts: u64,
    rx_drop_bad_icrc: u64,
    rx_frames: u64,
    tx_frames: u64,
    /// With an `rtl` device: the model's verdict on the core.
    #[serde(skip_serializing_if = "Option::is_none")]
    lockstep: Option<sim::lockstep::Report>,
}

pub fn run(a: &PingpongArgs) -> Result<bool, Error> {
    let mtu = wire::contract::verbs::mtu_enum(a.mtu).ok_or("--mtu is one of 256, 512, 1024, 2048, 4096")?;
    if a.size == 0 || a.rx_depth < 2 || a.iters == 0 {
        return Err("--size, --iters must be positive and --rx-depth at least 2".into());
    }
    let t = a.timeout * 1_000_000_000;
    let att = a.link.attach(&a.faults)?;
    let mut stack = att.stack()?;
    let ctx = &att.ctx;
    let cq = ctx.create_cq(a.rx_depth + 2)?;
    let cap = QpCap { max_send_wr: 1, max_recv_wr: a.rx_depth, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let qp = att.pd.create_qp(&cq, &cq, cap, false)?;
    let sbuf = ctx.alloc_buf(a.size as usize)?;
    let rbuf = ctx.alloc_buf(a.size as usize)?;
    sbuf.write(0, &vec![FILL; a.size as usize])?;
    let smr = att.pd.reg_buf(&sbuf, access::LOCAL_WRITE)?;
    let rmr = att.pd.reg_buf(&rbuf, access::LOCAL_WRITE)?;
    // INIT first, as rc_pingpong does, so the receives can be posted before the exchange.
    let init = QpAttr { qp_state: Some(QpState::Init), port_num: 1, ..Default::default() };
    qp.modify(&init, attr::STATE | attr::PKEY_INDEX | attr::PORT | attr::ACCESS_FLAGS)?;
    let recv = RecvWr { wr_id: RECV_WRID, sg_list: vec![Sge { addr: rbuf.addr, length: a.size, lkey: rmr.lkey }] };
    for _ in 0..a.rx_depth {
        qp.post_recv(&recv)?;
    }
    // A random first PSN, as rc_pingpong draws one.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let psn = (nanos ^ std::process::id()).wrapping_mul(2_654_435_761) >> 8;
    let me = PingpongDest { lid: 0, qpn: qp.qpn, psn, gid: att.gid };
    let show = |d: &PingpongDest| {
        let g = std::net::Ipv6Addr::from(d.gid);
        format!("LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {g}", d.lid, d.qpn, d.psn)
    };
    if !a.json {
        println!("  local address:  {}", show(&me));
    }
    let opts = ConnectOpts { path_mtu: mtu, max_rd_atomic: 1, access: 0, ..Default::default() };
    let connect = |stack: &driver::netdev::Stack, rem: &PingpongDest| -> Result<(), Error> {
        let ip = wire::ipv6::gid_to_ipv4(&rem.gid).ok_or("the peer's GID is not IPv4-mapped")?;
        let mac = stack.mac_of(ip).ok_or("the peer's MAC was never heard")?;
        qp.connect(psn, &Endpoint { qpn: rem.qpn, psn: rem.psn, gid: rem.gid, mac }, &opts)?;
        Ok(())
    };
    let rem = match a.peer {
        Some(ip) => {
            let c = stack.connect(ip.octets(), a.port, t)?;
            stack.send(&c, &me.to_msg(), t)?;
            let rem = PingpongDest::parse(&stack.recv(&c, PINGPONG_MSG_LEN, t)?)?;
            stack.send(&c, PINGPONG_DONE, t)?;
            stack.close(c, 1_000_000_000);
            connect(&stack, &rem)?;
            rem
        }
        None => {
            let c = stack.accept(a.port, t)?;
            let rem = PingpongDest::parse(&stack.recv(&c, PINGPONG_MSG_LEN, t)?)?;
            connect(&stack, &rem)?;
            stack.send(&c, &me.to_msg(), t)?;
            let _ = stack.recv(&c, PINGPONG_DONE.len(), 5_000_000_000); // "done"; some versions close first
            stack.close(c, 1_000_000_000);
            rem
        }
    };
    if !a.json {
        println!("  remote address: {}", show(&rem));
    }
    // rc_pingpong's loop: the client sends first; each side sends again once its last send and a receive
    // have both completed.
    let send = SendWr {
        wr_id: SEND_WRID,
        opcode: Some(SendOp::Send),
        send_flags: wire::contract::wqe::send_flags::SIGNALED,
        sg_list: vec![Sge { addr: sbuf.addr, length: a.size, lkey: smr.lkey }],
        ..Default::default()
    };
    let start = std::time::Instant::now();
    let mut pending = RECV_WRID;
    if a.peer.is_some() {
        qp.post_send(&send)?;
        pending |= SEND_WRID;
    }
    let (mut scnt, mut rcnt, mut routs, mut bad) = (0u32, 0u32, a.rx_depth, 0u32);
    let end = ctx.backend().now_ns() + t;
    let mut failure = None;
    while (rcnt < a.iters || scnt < a.iters) && failure.is_none() {
        if ctx.backend().now_ns() > end {
            failure = Some(format!("timed out after {scnt} sends and {rcnt} receives"));
            break;
        }
        stack.poll(); // the device runs; TCP retransmissions or the peer's FIN are handled too
        for wc in cq.poll(2)? {
            if wc.status != WcStatus::Success {
                failure = Some(format!("failed status {:?} for wr_id {}", wc.status, wc.wr_id));
                break;
            }
            match wc.wr_id {
                SEND_WRID => scnt += 1,
                RECV_WRID => {
                    if rbuf.read(0, a.size as usize)?.iter().any(|&b| b != FILL) || wc.byte_len != a.size {
                        bad += 1;
                    }
                    rbuf.write(0, &vec![0; a.size as usize])?;
                    routs -= 1;
                    if routs <= 1 {
                        for _ in routs..a.rx_depth {
                            qp.post_recv(&recv)?;
                        }
                        routs = a.rx_depth;
                    }
                    rcnt += 1;
                }
                other => failure = Some(format!("completion for unknown wr_id {other}")),
            }
            pending &= !wc.wr_id;
            if scnt < a.iters && pending == 0 {
                qp.post_send(&send)?;
                pending = RECV_WRID | SEND_WRID;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    if bad > 0 && failure.is_none() {
        failure = Some(format!("{bad} messages did not hold the expected bytes"));
    }
    let bad_icrc = ctx.counter(Counter::rx_drop_bad_icrc);
    if bad_icrc > 0 && failure.is_none() {
        failure = Some(format!("{bad_icrc} frames from the peer had a bad ICRC"));
    }
    // Let the last ACKs leave before the NIC goes away.
    let linger = ctx.backend().now_ns() + 200_000_000;
    while ctx.backend().now_ns() < linger {
        stack.poll();
    }
    let lockstep = att.lockstep();
    if failure.is_none() {
        failure = lockstep.as_ref().and_then(sim::lockstep::Report::failure);
    }
    let rep = Report {
        role: if a.peer.is_some() { "client" } else { "server" },
        pass: failure.is_none(),
        detail: failure.clone().unwrap_or_default(),
        iters_sent: scnt,
        iters_received: rcnt,
        bad_payloads: bad,
        seconds: secs,
        retransmitted_packets: ctx.counter(Counter::retransmitted_packets),
        local_ack_timeouts: ctx.counter(Counter::local_ack_timeouts),
        rx_drop_bad_icrc: bad_icrc,
        rx_frames: ctx.counter(Counter::rx_frames),
        tx_frames: ctx.counter(Counter::tx_frames),
        lockstep,
    };
    if a.json {
        println!("{}", serde_json::to_string(&rep)?);
    } else {
        let bytes = u64::from(a.size) * u64::from(a.iters) * 2;
        println!("{bytes} bytes in {secs:.2} seconds = {:.2} Mbit/sec", bytes as f64 * 8.0 / secs / 1e6);
        println!("{} iters in {secs:.2} seconds = {:.2} usec/iter", a.iters, secs * 1e6 / f64::from(a.iters));
        if let Some(l) = &rep.lockstep {
            println!("lockstep: {l}");
        }
        if let Some(f) = &failure {
            eprintln!("ferrite pingpong: {f}");
        }
    }
    Ok(rep.pass)
}
