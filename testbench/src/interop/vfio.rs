//! Interop with the kernel's VFIO: a q35 guest with an emulated Intel IOMMU and QEMU's `edu` devices runs
//! the driver's VFIO layer (`ferrite vfio-check`, in the guest) against them: open, config space, BAR0, a
//! DMA round trip through the IOMMU at IOVAs the driver chose, MSI through the eventfd, and the set-up
//! errors a user meets (an unbound function, a non-viable group, a function that is not a ferrite NIC; and,
//! in a second boot of a machine without an IOMMU, no IOMMU group). `edu` is not an RNIC: this proves the VFIO
//! layer, the NIC logic is proven on the simulation backends.

use super::{boot, guest, reap, tail, Error, Machine};
use driver::vfio::{Function, Linux, Sys, VfioBackend, PCI_DEVICES};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

/// One check's outcome.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub pass: bool,
    pub detail: String,
}

/// The guest's functions: an edu bound to vfio-pci, an edu left unbound, and behind a PCI bridge (so in
/// one IOMMU group) an edu bound to vfio-pci beside a virtio-rng that virtio-pci holds.
pub const EDU: &str = "0000:00:04.0";
pub const EDU_UNBOUND: &str = "0000:00:05.0";
pub const EDU_BEHIND_BRIDGE: &str = "0000:01:01.0";
const QEMU_DEVICES: [&str; 12] = [
    "-device",
    "edu,addr=04.0",
    "-device",
    "edu,addr=05.0",
    "-device",
    "pci-bridge,id=br1,chassis_nr=1,addr=06.0",
    "-device",
    "edu,bus=br1,addr=01.0",
    "-device",
    "virtio-rng-pci,bus=br1,addr=02.0",
    "-nic",
    "none",
];

/// edu's registers (QEMU's docs/specs/edu.rst).
mod edu {
    pub const ID: u64 = 0x00;
    pub const ID_VALUE: u32 = 0x0100_00ed;
    pub const LIVENESS: u64 = 0x04;
    pub const FACTORIAL: u64 = 0x08;
    pub const STATUS: u64 = 0x20;
    pub const STATUS_COMPUTING: u32 = 1;
    pub const IRQ_RAISE: u64 = 0x60;
    pub const IRQ_ACK: u64 = 0x64;
    pub const DMA_SRC: u64 = 0x80;
    pub const DMA_DST: u64 = 0x88;
    pub const DMA_COUNT: u64 = 0x90;
    pub const DMA_CMD: u64 = 0x98;
    pub const DMA_RUN: u32 = 1;
    pub const DMA_TO_RAM: u32 = 2;
    pub const DMA_IRQ: u32 = 4;
    /// The device's own buffer, as a DMA address in its space.
    pub const BUFFER: u32 = 0x40000;
    /// QEMU 7.2's edu refuses a whole 4096-byte transfer (an off-by-one in its range check).
    pub const DMA_LEN: usize = 2048;
}

/// What the guest-side checks run against.
#[derive(Debug, Clone, Default)]
pub struct GuestArgs {
    pub edu: String,
    pub unbound: Option<String>,
    pub non_viable: Option<String>,
    /// This boot has no IOMMU: opening `edu` must say so.
    pub no_iommu: bool,
    /// Run as a user without access to the group's node: opening `edu` must say so.
    pub unprivileged: bool,
}

fn check(name: &str, r: Result<String, String>) -> Check {
    match r {
        Ok(detail) => Check { name: name.into(), pass: true, detail },
        Err(detail) => Check { name: name.into(), pass: false, detail },
    }
}

/// Opening must fail, with a message holding `want`.
fn refused(name: &str, r: Result<impl Sized, driver::Error>, want: &str) -> Check {
    check(
        name,
        match r {
            Ok(_) => Err("opened, but should have been refused".into()),
            Err(e) if e.to_string().contains(want) => Ok(e.to_string()),
            Err(e) => Err(format!("refused with {e:?}, which does not say {want:?}")),
        },
    )
}

fn until(what: &str, secs: u64, mut done: impl FnMut() -> Result<bool, driver::Error>) -> Result<(), String> {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if done().map_err(|e| e.to_string())? {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Err(format!("timed out waiting for {what}"))
}

/// One DMA of edu's (100 ms of its virtual timer), waited for.
fn edu_dma(f: &Function, src: u32, dst: u32, cmd: u32) -> Result<(), String> {
    let e = |e: driver::Error| e.to_string();
    f.write32(edu::DMA_SRC, src).map_err(e)?;
    f.write32(edu::DMA_DST, dst).map_err(e)?;
    f.write32(edu::DMA_COUNT, edu::DMA_LEN as u32).map_err(e)?;
    f.write32(edu::DMA_CMD, edu::DMA_RUN | cmd).map_err(e)?;
    until("the DMA", 10, || Ok(f.read32(edu::DMA_CMD)? & edu::DMA_RUN == 0))
}

fn registers(f: &Function) -> Result<String, String> {
    let e = |e: driver::Error| e.to_string();
    let id = f.read32(edu::ID).map_err(e)?;
    if id != edu::ID_VALUE {
        return Err(format!("ID register {id:#x}, not {:#x}", edu::ID_VALUE));
    }
    f.write32(edu::LIVENESS, 0x1234_5678).map_err(e)?;
    let live = f.read32(edu::LIVENESS).map_err(e)?;
    if live != !0x1234_5678 {
        return Err(format!("liveness read {live:#x}"));
    }
    f.write32(edu::FACTORIAL, 10).map_err(e)?;
    until("the factorial", 10, || Ok(f.read32(edu::STATUS)? & edu::STATUS_COMPUTING == 0))?;
    let fact = f.read32(edu::FACTORIAL).map_err(e)?;
    if fact != 3_628_800 {
        return Err(format!("10! read {fact}"));
    }
    Ok(format!("ID {id:#x}, liveness, 10! = {fact}"))
}

fn round_trip(f: &Function) -> Result<String, String> {
    let e = |e: driver::Error| e.to_string();
    let src = f.dma_alloc(edu::DMA_LEN).map_err(e)?;
    let dst = f.dma_alloc(edu::DMA_LEN).map_err(e)?;
    let pattern: Vec<u8> = (0..edu::DMA_LEN).map(|i| (i * 7 + 3) as u8).collect();
    f.dma_write(src, &pattern).map_err(e)?;
    edu_dma(f, src as u32, edu::BUFFER, 0)?;
    edu_dma(f, edu::BUFFER, dst as u32, edu::DMA_TO_RAM)?;
    let mut got = vec![0u8; edu::DMA_LEN];
    f.dma_read(dst, &mut got).map_err(e)?;
    f.dma_free(src).map_err(e)?;
    f.dma_free(dst).map_err(e)?;
    if got != pattern {
        return Err(format!(
            "{} of {} bytes differ",
            got.iter().zip(&pattern).filter(|(a, b)| a != b).count(),
            got.len()
        ));
    }
    Ok(format!("{} bytes from IOVA {src:#x} into edu and back to IOVA {dst:#x}; both unmapped", edu::DMA_LEN))
}

/// The same round trip between two buffers of the application's own (`Function::map_user`, what
/// `Pd::reg_user` stands on), mapped by whole pages at IOVAs the driver chose.
fn user_memory(f: &Function) -> Result<String, String> {
    let e = |e: driver::Error| e.to_string();
    let src: Vec<u8> = (0..edu::DMA_LEN).map(|i| (i * 13 + 5) as u8).collect();
    let mut dst = vec![0u8; edu::DMA_LEN];
    let si = f.map_user(src.as_ptr(), src.len()).map_err(e)?;
    let di = f.map_user(dst.as_mut_ptr(), dst.len()).map_err(e)?;
    edu_dma(f, si as u32, edu::BUFFER, 0)?;
    edu_dma(f, edu::BUFFER, di as u32, edu::DMA_TO_RAM)?;
    f.unmap_user(si).map_err(e)?;
    f.unmap_user(di).map_err(e)?;
    let got = std::hint::black_box(&dst);
    if *got != src {
        return Err(format!("{} of {} bytes differ", got.iter().zip(&src).filter(|(a, b)| a != b).count(), src.len()));
    }
    Ok(format!("{} bytes from the application's buffer at IOVA {si:#x} through edu into another at {di:#x}", src.len()))
}

fn msi(f: &Function) -> Result<String, String> {
    let e = |e: driver::Error| e.to_string();
    f.take_irqs().map_err(e)?;
    f.write32(edu::IRQ_RAISE, 1).map_err(e)?;
    let mut n = 0;
    until("the MSI", 5, || {
        n += f.take_irqs()?;
        Ok(n > 0)
    })?;
    f.write32(edu::IRQ_ACK, 1).map_err(e)?;
    // A DMA that raises its interrupt when done.
    let buf = f.dma_alloc(edu::DMA_LEN).map_err(e)?;
    edu_dma(f, buf as u32, edu::BUFFER, edu::DMA_IRQ)?;
    let mut m = 0;
    until("the DMA's MSI", 5, || {
        m += f.take_irqs()?;
        Ok(m > 0)
    })?;
    f.write32(edu::IRQ_ACK, 0x100).map_err(e)?;
    f.dma_free(buf).map_err(e)?;
    Ok(format!("{n} interrupt(s) on request, {m} at the end of a DMA, through the eventfd"))
}

/// The checks, run inside the guest.
pub fn guest_checks(a: &GuestArgs) -> Vec<Check> {
    if a.no_iommu {
        return vec![refused("no-iommu", Function::open(&a.edu), "no IOMMU group")];
    }
    if a.unprivileged {
        return vec![refused("no-permission", Function::open(&a.edu), "permission denied")];
    }
    let mut v = Vec::new();
    match Function::open(&a.edu) {
        Err(e) => v.push(check("open", Err(e.to_string()))),
        Ok(f) => {
            v.push(check("open", Ok(format!("IOMMU group {}, BAR0 {} bytes", f.group, f.bar0_len()))));
            v.push(check(
                "config-space",
                match f.config_ids() {
                    Ok((0x1234, 0x11e8)) => Ok("1234:11e8 read through VFIO's config region".into()),
                    Ok((v, d)) => Err(format!("{v:04x}:{d:04x}")),
                    Err(e) => Err(e.to_string()),
                },
            ));
            v.push(check("bar0-registers", registers(&f)));
            v.push(check("dma-round-trip", round_trip(&f)));
            v.push(check("user-memory-dma", user_memory(&f)));
            v.push(check("msi", msi(&f)));
        }
    }
    // The function is closed again: the backend may open its group.
    v.push(refused("refuses-edu-as-a-nic", VfioBackend::open(&a.edu), "not a ferrite NIC"));
    if let Some(b) = &a.unbound {
        v.push(refused("unbound-function", Function::open(b), "bound to no driver"));
    }
    if let Some(b) = &a.non_viable {
        let mut c = refused("non-viable-group", Function::open(b), "is not viable");
        // The kernel must agree: opening it without the diagnosis fails in VFIO itself.
        match Linux.open_device(&std::path::Path::new(PCI_DEVICES).join(b)) {
            Ok(_) => (c.pass, c.detail) = (false, "the kernel opened the function the diagnosis refused".into()),
            Err(e) => c.detail += &format!("; and VFIO itself refuses: {e}"),
        }
        v.push(c);
    }
    v
}

/// The line the guest prints its checks on.
pub const MARK: &str = "VFIO-CHECKS ";
const DEVICES_MARK: &str = "DEVICES ";
const CLI_MARK: &str = "CLI-DEVICE ";

/// What `ferrite interop vfio` needs.
#[derive(Debug, Clone)]
pub struct Options {
    pub ferrite: PathBuf,
    pub cache: PathBuf,
    pub work: PathBuf,
}

fn bind(bdf: &str) -> String {
    format!("echo vfio-pci > /sys/bus/pci/devices/{bdf}/driver_override; echo {bdf} > /sys/bus/pci/drivers_probe\n")
}

/// Boots the guest twice (with the IOMMU, then without) and gathers every check.
pub fn run(o: &Options) -> Result<Vec<Check>, Error> {
    fs::create_dir_all(&o.work)?;
    let g = guest::build(&o.cache, &guest::VFIO)?;
    let mut checks = Vec::new();
    for (boot_name, append) in [("iommu", "intel_iommu=on"), ("no-iommu", "intel_iommu=off")] {
        let dir = o.work.join(boot_name);
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir)?;
        guest::add_binary(&dir.join("case-root"), &o.ferrite)?;
        let mut script = String::new();
        // The second machine has no IOMMU at all, as a board in a host whose firmware has VT-d off.
        let mut qemu: Vec<String> = vec!["-machine".into(), "q35,kernel-irqchip=split".into()];
        if boot_name == "iommu" {
            qemu.extend(["-device", "intel-iommu,intremap=on"].map(String::from));
        }
        qemu.extend(QEMU_DEVICES.map(String::from));
        if boot_name == "iommu" {
            script += &bind(EDU);
            script += &bind(EDU_BEHIND_BRIDGE);
            // A user who is not root: /dev/vfio/N stays root's.
            script += "echo 'nobody:x:65534:65534:nobody:/:/bin/sh' >> /etc/passwd\n";
            script += &format!("su -s /bin/sh nobody -c 'ferrite vfio-check --edu {EDU} --unprivileged'\n");
            script += &format!("echo \"{DEVICES_MARK}$(ferrite devices --all --json)\"\n");
            script += &format!("echo \"{CLI_MARK}$(ferrite pingpong --device vfio:{EDU} -n 1 2>&1)\"\n");
            script +=
                &format!("ferrite vfio-check --edu {EDU} --unbound {EDU_UNBOUND} --non-viable {EDU_BEHIND_BRIDGE}\n");
        } else {
            script += &bind(EDU);
            script += &format!("ferrite vfio-check --edu {EDU} --no-iommu\n");
        }
        let log = dir.join("console.log");
        let mut vm = boot(Command::new("qemu-system-x86_64"), &g, &Machine { append, qemu }, &script, &dir, &log)?;
        reap(&mut vm, 180);
        let console = fs::read_to_string(&log).unwrap_or_default();
        let found: Vec<Check> = console
            .lines()
            .filter_map(|l| l.trim().strip_prefix(MARK))
            .filter_map(|j| serde_json::from_str::<Vec<Check>>(j).ok())
            .flatten()
            .collect();
        match found.is_empty() {
            false => checks.extend(found),
            true => checks.push(Check {
                name: format!("{boot_name}-boot"),
                pass: false,
                detail: format!("no checks in the guest's console; its last lines:\n{}", tail(&console, 30)),
            }),
        }
        if boot_name == "iommu" {
            let listed = console.lines().find_map(|l| l.trim().strip_prefix(DEVICES_MARK)).unwrap_or("").to_string();
            let rows: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap_or_default();
            let ok = rows.iter().any(|r| r["bdf"] == EDU && r["driver"] == "vfio-pci")
                && rows.iter().any(|r| r["bdf"] == EDU_BEHIND_BRIDGE)
                && !rows.iter().any(|r| r["bdf"] == EDU_UNBOUND);
            checks.push(Check { name: "devices-lists-vfio-functions".into(), pass: ok, detail: listed });
            let said = console.lines().find_map(|l| l.trim().strip_prefix(CLI_MARK)).unwrap_or("").to_string();
            let ok = said.contains("not a ferrite NIC");
            checks.push(Check { name: "cli-device-refuses-edu".into(), pass: ok, detail: said });
        }
    }
    Ok(checks)
}
