//! `ferrite`: the command line. Thin: each subcommand calls into the crates.

mod demo;
mod device;
mod devices;
mod incast;
mod interop;
mod link;
mod pcap_check;
mod perf;
mod perf_link;
mod perf_rtl;
mod perf_threads;
mod pingpong;
mod profile;
mod soak;
mod verilog;

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "ferrite", version, about = "ferrite: an open RoCEv2 RDMA NIC")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// Which implementation of the NIC runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The golden model.
    Model,
    /// The Verilated RTL core (`perf write|send|read`: as the responder, a model NIC the requester).
    Rtl,
}

#[derive(Subcommand)]
enum Cmd {
    /// Two NICs on a simulated link do SEND, WRITE, READ and atomics through the verbs and check every byte
    /// (`--backend rtl`: the Verilated core as the requester, in lockstep with the model, and a model NIC).
    Demo {
        #[arg(long, value_enum, default_value = "model")]
        backend: Backend,
        /// Write the traffic of both NICs to this pcap file.
        #[arg(long)]
        pcap: Option<PathBuf>,
        /// The two NICs, when not the model's: `--device vfio:BDF` twice, for two boards cabled together.
        #[arg(long)]
        device: Vec<device::DeviceSpec>,
    },
    /// A perftest-style benchmark between two simulated NICs, or against perftest on a real link.
    Perf(perf::PerfArgs),
    /// PCI functions with ferrite's IDs, their drivers and IOMMU groups, and how to bind one to vfio-pci.
    Devices(devices::DevicesArgs),
    /// Seeded random scenarios over the golden model, every completion, byte and atomic checked.
    Soak(soak::SoakArgs),
    /// A hardware profile's limits, QP context bits and block RAM.
    Profile(profile::ProfileArgs),
    /// N senders into one receiver through the ECN-marking switch (DCQCN).
    Incast(incast::IncastArgs),
    /// ferrite against real peers in QEMU guests: Linux soft-RoCE (`rxe`), the kernel's VFIO (`vfio`).
    Interop(interop::InteropArgs),
    /// The VFIO checks inside the guest of `ferrite interop vfio`.
    #[command(hide = true)]
    VfioCheck(interop::VfioCheckArgs),
    /// `ibv_rc_pingpong` on a NIC attached to a real link (QEMU -netdev dgram); server without PEER.
    Pingpong(pingpong::PingpongArgs),
    /// Write the Verilog of every top (module `top` in each file) to DIR.
    Verilog {
        #[arg(long)]
        out: PathBuf,
        /// Bytes per beat: 8 or 64 (default: both).
        #[arg(long)]
        width: Option<usize>,
    },
    /// Pcap tools.
    Pcap {
        #[command(subcommand)]
        cmd: PcapCmd,
    },
}

#[derive(Subcommand)]
enum PcapCmd {
    /// Decode every frame and check its ICRC.
    Check {
        file: PathBuf,
        #[arg(long, value_enum, default_value = "model")]
        backend: pcap_check::PcapBackend,
        /// Datapath width of the RTL backend in bytes: 8 or 64.
        #[arg(long, default_value = "8")]
        width: usize,
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Demo { backend, pcap, device } => demo::run(backend, pcap.as_deref(), &device),
        Cmd::Perf(a) => perf::run(&a),
        Cmd::Devices(a) => devices::run(&a),
        Cmd::Soak(a) => soak::run(&a),
        Cmd::Profile(a) => profile::run(&a),
        Cmd::Incast(a) => incast::run(&a),
        Cmd::Pingpong(a) => pingpong::run(&a),
        Cmd::Interop(a) => interop::run(&a),
        Cmd::VfioCheck(a) => interop::vfio_check(&a),
        Cmd::Verilog { out, width } => verilog::run(&out, width),
        Cmd::Pcap { cmd: PcapCmd::Check { file, backend, width, json } } => {
            pcap_check::run(&file, backend, width, json)
        }
    };
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ferrite: {e}");
            ExitCode::from(2)
        }
    }
}

/// A boxed error for the CLI.
pub type Error = Box<dyn std::error::Error>;
