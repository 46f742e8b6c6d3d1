//! The options and set-up shared by the tools that put one ferrite NIC on a real Ethernet link (QEMU's
//! `-netdev dgram`: one frame per UDP datagram on 127.0.0.1): the attached NIC, its addresses, the
//! host's own TCP/IP through it, and the seeded faults on ferrite's side.

use crate::device::DeviceSpec;
use crate::profile::ProfileName;
use crate::Error;
use clap::Args;
use driver::netdev::Stack;
use driver::realtime::DgramLink;
use driver::rtl::{RtlBackend, RtlHandle};
use driver::{shared, Context, ModelBackend, Pd};
use model::net::{Impairments, LinkConfig, World};
use model::NicConfig;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct LinkArgs {
    /// The NIC: `model` (the golden model on the UDP link below), `rtl` or `rtl:64` (the Verilated core of
    /// 8- or 64-byte datapath on that link, in lockstep with the model; no seeded faults) or `vfio:BDF` (a
    /// ferrite NIC in a PCIe slot, on its own cable; the link options then do not apply).
    #[arg(long, default_value = "model")]
    pub device: DeviceSpec,
    /// The UDP address ferrite's end of the link binds (QEMU's `remote=`).
    #[arg(long, default_value = "127.0.0.1:40001")]
    pub local: SocketAddr,
    /// The UDP address of the peer's end (QEMU's `local=`).
    #[arg(long, default_value = "127.0.0.1:40002")]
    pub remote: SocketAddr,
    /// ferrite's IPv4 address on the link (its GID is the IPv4-mapped form), with the prefix length.
    #[arg(long, default_value = "10.0.0.1/24")]
    pub ip: String,
    /// ferrite's MAC address.
    #[arg(long, default_value = "02:00:00:00:00:01")]
    pub mac: String,
    /// Link and port rate in Mb/s: what the path to the peer carries without bursts it would drop.
    #[arg(long, default_value_t = 1000)]
    pub mbps: u32,
    /// The model NIC's hardware profile: its limits and queue sizes (`ferrite profile`).
    #[arg(long, value_enum, default_value = "board")]
    pub profile: ProfileName,
}

/// Seeded faults and the capture, shared by the tools on a real link and on simulated ones.
#[derive(Args, Debug, Clone)]
pub struct FaultArgs {
    /// Probability that a frame is lost: on ferrite's side of a real link (each way), or on every
    /// simulated link.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Probability that a frame is reordered, where `--loss` applies.
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Probability that a frame has one bit flipped, where `--loss` applies: the NIC drops a corrupted RoCE
    /// frame on its ICRC and counts it (`rx_drop_bad_icrc`).
    #[arg(long, default_value_t = 0.0)]
    pub corrupt: f64,
    /// Seed of the faults.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write every frame on the links, both ways, to this pcap file.
    #[arg(long)]
    pub pcap: Option<PathBuf>,
}

impl FaultArgs {
    pub fn check(&self) -> Result<Impairments, Error> {
        if [self.loss, self.reorder, self.corrupt].iter().any(|p| !(0.0..1.0).contains(p)) {
            return Err("--loss, --reorder and --corrupt are probabilities in [0, 1)".into());
        }
        Ok(Impairments { loss: self.loss, reorder: self.reorder, corrupt: self.corrupt, ..Default::default() })
    }
}

/// One NIC on the link with its driver context, PD and addresses.
pub struct Attached {
    pub ctx: Context,
    pub pd: Pd,
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    pub prefix: u8,
    pub gid: [u8; 16],
    /// The core behind an `rtl` device, for its lockstep report.
    pub rtl: Option<RtlHandle>,
}

/// QPs of the core behind an `rtl` device: one of the sizes the simulation builds.
const RTL_QPS: u32 = 16;

fn parse_mac(s: &str) -> Result<[u8; 6], Error> {
    let v: Vec<u8> = s.split(':').map(|x| u8::from_str_radix(x, 16)).collect::<Result<_, _>>()?;
    v.try_into().map_err(|_| "a MAC is six bytes, as 02:00:00:00:00:01".into())
}

fn parse_ip(s: &str) -> Result<([u8; 4], u8), Error> {
    let (ip, prefix) = s.split_once('/').unwrap_or((s, "24"));
    let ip: std::net::Ipv4Addr = ip.parse()?;
    let prefix: u8 = prefix.parse()?;
    if prefix > 32 {
        return Err("prefix length above 32".into());
    }
    Ok((ip.octets(), prefix))
}

impl LinkArgs {
    /// Opens the link and the NIC on it (GID index 0 is the IPv4-mapped address), with `f`'s faults on
    /// ferrite's side.
    pub fn attach(&self, f: &FaultArgs) -> Result<Attached, Error> {
        let mac = parse_mac(&self.mac)?;
        let (ip, prefix) = parse_ip(&self.ip)?;
        let faults = f.check()?;
        if let DeviceSpec::Vfio(bdf) = &self.device {
            if faults.any() || f.pcap.is_some() {
                return Err(
                    "--loss, --reorder, --corrupt and --pcap act on the model's link, not on a NIC in a slot".into()
                );
            }
            let ctx = Context::open(DeviceSpec::open_vfio(bdf)?)?;
            return Attached::on(ctx, mac, ip, prefix, None);
        }
        if let DeviceSpec::Rtl(w) = self.device {
            if faults.any() {
                return Err("--loss, --reorder and --corrupt act on the model's link, not on the RTL core's".into());
            }
            let mut b = RtlBackend::with_lockstep(RTL_QPS, w);
            b.attach(DgramLink::open(self.local, self.remote)?, f.pcap.as_deref())?;
            let rtl = Some(b.handle());
            return Attached::on(Context::open(Box::new(b))?, mac, ip, prefix, rtl);
        }
        let link = LinkConfig { gbps: f64::from(self.mbps) / 1000.0, faults, ..Default::default() };
        let nic = NicConfig { port_mbps: self.mbps, ..NicConfig::new(self.profile.profile()) };
        let world = shared(World::attached(nic, link, f.seed));
        if let Some(p) = &f.pcap {
            driver::lock_world(&world).tap_all(p)?;
        }
        let dgram = DgramLink::open(self.local, self.remote)?;
        let ctx = Context::open(Box::new(ModelBackend::attached(world, dgram)))?;
        Attached::on(ctx, mac, ip, prefix, None)
    }
}

impl Attached {
    /// Gives the NIC of `ctx` its MAC and GID (index 0, the IPv4-mapped address) and a PD.
    fn on(ctx: Context, mac: [u8; 6], ip: [u8; 4], prefix: u8, rtl: Option<RtlHandle>) -> Result<Self, Error> {
        let gid = wire::ipv6::gid_from_ipv4(ip);
        ctx.set_port_mac(mac)?;
        ctx.set_gid(0, gid)?;
        let pd = ctx.alloc_pd()?;
        Ok(Attached { ctx, pd, mac, ip, prefix, gid, rtl })
    }

    /// For an `rtl` device, the model's verdict on everything the core did so far: (decisions followed,
    /// mismatches, the first mismatch decoded).
    pub fn lockstep(&self) -> Option<sim::lockstep::Report> {
        self.rtl.as_ref()?.lockstep_report()
    }

    /// The host's TCP/IP through the NIC.
    pub fn stack(&self) -> Result<Stack, Error> {
        Ok(Stack::new(&self.ctx, &self.pd, self.mac, self.ip, self.prefix)?)
    }
}
