//! The guests: a Debian kernel and a busybox initramfs holding the modules and tools of one `Spec` (the
//! rxe guest: rdma_rxe, rdma-core's and perftest's tools; the VFIO guest: vfio-pci), copied from the host's
//! packages with their libraries and built once into a cache directory. Each run adds its case script (and
//! any binaries of its own, `add_binary`) as a second initramfs: the kernel unpacks concatenated archives
//! in order.

use super::{sh, Error};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What one guest holds.
pub struct Spec {
    /// Names the initramfs in the cache.
    pub name: &'static str,
    /// Kernel modules the guest loads (with what they depend on, each after its dependencies).
    pub modules: &'static [&'static str],
    /// Userland the cases run.
    pub tools: &'static [&'static str],
    /// Whether the rdma-core rxe provider goes in.
    pub rxe_provider: bool,
}

/// The soft-RoCE guest.
pub const RXE: Spec = Spec {
    name: "rxe",
    modules: &["virtio_pci", "virtio_net", "crc32_generic", "rdma_rxe"],
    tools: &[
        "ibv_rc_pingpong",
        "ib_write_bw",
        "ib_read_bw",
        "ib_send_bw",
        "ib_atomic_bw",
        "ib_write_lat",
        "ib_read_lat",
        "ib_send_lat",
        "ibv_devinfo",
        "rdma",
        "ip",
    ],
    rxe_provider: true,
};

/// The VFIO guest: vfio-pci with the type-1 IOMMU driver, and virtio-pci for a device that makes a group
/// non-viable.
pub const VFIO: Spec = Spec {
    name: "vfio",
    modules: &["vfio_pci", "vfio_iommu_type1", "virtio_pci", "virtio_rng"],
    tools: &[],
    rxe_provider: false,
};

/// A built guest.
pub struct Guest {
    pub kernel: PathBuf,
    pub initramfs: PathBuf,
    pub dir: PathBuf,
}

/// The Debian kernel package `linux-image-amd64` points at, e.g. `linux-image-6.1.0-57-amd64`.
fn kernel_package() -> Result<String, Error> {
    let out = sh(Command::new("apt-cache").args(["depends", "linux-image-amd64"]))?;
    out.lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|p| p.starts_with("linux-image-"))
        .map(str::to_string)
        .ok_or_else(|| Error::from("apt-cache names no linux-image package for linux-image-amd64 (is this Debian?)"))
}

fn which(tool: &str) -> Result<PathBuf, Error> {
    let p = sh(Command::new("sh").args(["-c", &format!("command -v {tool}")]))?;
    Ok(PathBuf::from(p.trim()))
}

/// The shared libraries `bin` needs, by `ldd`, and the loader.
fn libraries(bin: &Path) -> Result<Vec<PathBuf>, Error> {
    let out = sh(Command::new("ldd").arg(bin))?;
    Ok(out
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = l.split("=> ").nth(1).map(|r| r.split(' ').next().unwrap_or("")).unwrap_or_else(|| {
                // The loader's own line: "/lib64/ld-linux-x86-64.so.2 (0x...)".
                l.split(' ').next().unwrap_or("")
            });
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect())
}

fn copy_into(root: &Path, file: &Path) -> Result<(), Error> {
    let to = root.join(file.strip_prefix("/").unwrap_or(file));
    fs::create_dir_all(to.parent().unwrap_or(root))?;
    fs::copy(fs::canonicalize(file)?, &to)?;
    Ok(())
}

/// The guest's /init: mount, load the modules, run /case.sh (the run's own archive), power off.
fn init_script(modules: &[String]) -> String {
    let mut s = String::from(
        "#!/bin/sh\nexport PATH=/bin:/sbin:/usr/bin:/usr/sbin\nmount -t proc proc /proc\nmount -t sysfs sys /sys\n\
         mount -t devtmpfs dev /dev\nmount -t tmpfs tmp /tmp\n",
    );
    for m in modules {
        s += &format!("insmod /modules/{m} || echo \"GUEST: insmod {m} failed\"\n");
    }
    s += "ip link set lo up\necho GUEST: ready\nsh /case.sh 2>&1\necho GUEST: end\nsync\npoweroff -f\n";
    s
}

/// Builds the guest of `spec` in `cache` unless it is there already.
pub fn build(cache: &Path, spec: &Spec) -> Result<Guest, Error> {
    let pkg = kernel_package()?;
    let version = pkg.trim_start_matches("linux-image-").to_string();
    let dir = cache.join(&version);
    let guest = Guest {
        kernel: dir.join("kroot/boot").join(format!("vmlinuz-{version}")),
        initramfs: dir.join(format!("initramfs-{}.gz", spec.name)),
        dir: dir.clone(),
    };
    // One build at a time per cache: two harnesses starting together (the rxe and VFIO runs of one test
    // binary) would otherwise unpack the same kernel into the same directory at once.
    fs::create_dir_all(&dir)?;
    let lock = fs::File::create(dir.join("build.lock"))?;
    lock.lock()?;
    // What the initramfs holds: a cached one with other contents is built again.
    let stamp = dir.join(format!("contents-{}", spec.name));
    let contents = format!("modules {:?}\ntools {:?}\nrxe {}\n", spec.modules, spec.tools, spec.rxe_provider);
    if guest.kernel.exists() && guest.initramfs.exists() && fs::read_to_string(&stamp).ok() == Some(contents.clone()) {
        return Ok(guest);
    }
    let kroot = dir.join("kroot");
    if !guest.kernel.exists() {
        sh(Command::new("apt-get").arg("download").arg(&pkg).current_dir(&dir))?;
        let deb = fs::read_dir(&dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "deb"))
            .ok_or("apt-get download left no .deb")?;
        sh(Command::new("dpkg").arg("-x").arg(&deb).arg(&kroot))?;
        fs::remove_file(deb)?;
        sh(Command::new("depmod").arg("-b").arg(&kroot).arg(&version))?;
    }
    let root = dir.join(format!("root-{}", spec.name));
    let _ = fs::remove_dir_all(&root);
    for d in ["bin", "sbin", "usr/bin", "usr/sbin", "proc", "sys", "dev", "tmp", "modules", "etc/libibverbs.d"] {
        fs::create_dir_all(root.join(d))?;
    }
    // Modules, in load order, each once.
    let mut modules: Vec<String> = Vec::new();
    for m in spec.modules {
        let deps = sh(Command::new("modprobe").arg("--show-depends").arg("-d").arg(&kroot).args(["-S", &version, m]))?;
        for ko in deps.lines().filter_map(|l| l.strip_prefix("insmod ")).map(|l| PathBuf::from(l.trim())) {
            let name = ko.file_name().map(|n| n.to_string_lossy().to_string()).ok_or("odd module path")?;
            if !modules.contains(&name) {
                fs::copy(&ko, root.join("modules").join(&name))?;
                modules.push(name);
            }
        }
    }
    // busybox and its applets.
    let busybox = which("busybox")?;
    let linked = Command::new("ldd").arg(&busybox).output()?;
    if !String::from_utf8_lossy(&linked.stdout).contains("not a dynamic")
        && !String::from_utf8_lossy(&linked.stderr).contains("not a dynamic")
    {
        return Err(format!("{} is dynamically linked: the guest needs busybox-static", busybox.display()).into());
    }
    fs::copy(&busybox, root.join("bin/busybox"))?;
    let applets = sh(Command::new(&busybox).arg("--list"))?;
    for a in applets.lines().map(str::trim).filter(|a| !a.is_empty() && *a != "busybox") {
        let _ = std::os::unix::fs::symlink("busybox", root.join("bin").join(a));
    }
    // The tools, the rxe provider, and every library they load.
    for t in spec.tools {
        add_binary(&root, &which(t)?)?;
    }
    if spec.tools.contains(&"ip") {
        let _ = fs::remove_file(root.join("bin/ip")); // the tools' `ip` (iproute2) rather than busybox's
    }
    if spec.rxe_provider {
        let provider_dir = Path::new("/usr/lib/x86_64-linux-gnu/libibverbs");
        let provider = fs::read_dir(provider_dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("librxe-")))
            .ok_or("no rxe provider (librxe-*.so): install ibverbs-providers")?;
        for lib in libraries(&provider)? {
            copy_into(&root, &lib)?;
        }
        copy_into(&root, &provider)?;
        copy_into(&root, Path::new("/etc/libibverbs.d/rxe.driver"))?;
    }
    fs::write(root.join("init"), init_script(&modules))?;
    sh(Command::new("chmod").arg("+x").arg(root.join("init")))?;
    cpio(&root, &guest.initramfs)?;
    fs::write(&stamp, contents)?;
    Ok(guest)
}

/// Puts the program `bin` into `root`'s /usr/bin with every library it loads.
pub fn add_binary(root: &Path, bin: &Path) -> Result<(), Error> {
    for lib in libraries(bin)? {
        copy_into(root, &lib)?;
    }
    let name = bin.file_name().ok_or("odd program path")?;
    fs::create_dir_all(root.join("usr/bin"))?;
    let _ = fs::remove_file(root.join("usr/bin").join(name)); // `ip` is a busybox applet too
    fs::copy(bin, root.join("usr/bin").join(name))?;
    Ok(())
}

/// Packs `root` into a gzipped newc archive at `out`.
pub fn cpio(root: &Path, out: &Path) -> Result<(), Error> {
    let cmd = format!("find . | cpio -o -H newc --quiet | gzip -1 > '{}'", out.display());
    sh(Command::new("sh").args(["-c", &cmd]).current_dir(root))?;
    Ok(())
}
