//! Interop against Linux soft-RoCE: a QEMU guest (software emulation) running rdma_rxe with rdma-core's
//! and perftest's unmodified tools, on a `-netdev dgram` link to a ferrite NIC, inside a network namespace this harness
//! creates (every link is a UDP socket on the namespace's 127.0.0.1). One guest boot per role runs the cases
//! in order; ferrite's side of each case is the `ferrite` tool itself, run case by case. The guest first
//! pings ferrite's address, which the NIC answers itself. A guest whose transmit queue stops (`tx_stalls`)
//! is ended and a fresh one runs the rest, the case it stopped in again, at most `FRESH_GUESTS` times; the
//! case's detail says so.

pub mod guest;
pub mod vfio;

use serde::Serialize;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub type Error = Box<dyn std::error::Error>;

/// Runs `c` to completion: its standard output, or an error naming it with its standard error.
pub(crate) fn sh(c: &mut Command) -> Result<String, Error> {
    let out = c.output().map_err(|e| format!("{c:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{c:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim()).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What `ferrite interop rxe` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `ferrite` binary that plays ferrite's side.
    pub ferrite: PathBuf,
    /// Which NIC implementation ferrite runs: "model", or "rtl" or "rtl:64" (the Verilated core of 8- or
    /// 64-byte datapath in lockstep with the model, that `--device`: the cases without loss).
    pub backend: String,
    /// Loss on ferrite's side for the lossy half of the cases.
    pub loss: f64,
    /// Where the guest is built and kept between runs.
    pub cache: PathBuf,
    /// Where logs and pcaps of this run go.
    pub work: PathBuf,
    /// Only the cases whose names contain this, or one of several separated by commas.
    pub only: Option<String>,
    /// The hardware profile of ferrite's NIC (`board` or `large`).
    pub profile: String,
    /// The case in which each role's first guest stages a stopped transmit queue (`STAGED_STALL`).
    pub stage_stall: Option<String>,
    /// Once the run has taken this long, the cases left fail as not run.
    pub budget: Option<Duration>,
}

/// One case's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub name: String,
    pub backend: String,
    /// ferrite's role: "server" or "client".
    pub role: String,
    pub pass: bool,
    pub detail: String,
}

/// The tool pair a case runs: rdma-core's `ibv_rc_pingpong` against `ferrite pingpong`, or one of
/// perftest's tools against `ferrite perf <op> --link`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Pingpong,
    /// The guest's perftest binary and ferrite's op.
    Perftest(&'static str, &'static str),
}

/// One of perftest's tools, ferrite's op against it, and its (size, iterations) runs: a small message at
/// PMTU 1024 and a large one at 4096 (atomics are always 8 bytes).
struct PerftestTool {
    bin: &'static str,
    op: &'static str,
    runs: &'static [(u32, u32)],
}

const PERFTEST: [PerftestTool; 7] = [
    PerftestTool { bin: "ib_write_bw", op: "write", runs: &[(1, 200), (1 << 20, 8)] },
    PerftestTool { bin: "ib_read_bw", op: "read", runs: &[(1, 200), (1 << 20, 8)] },
    PerftestTool { bin: "ib_send_bw", op: "send", runs: &[(1, 200), (1 << 20, 8)] },
    PerftestTool { bin: "ib_atomic_bw", op: "atomic", runs: &[(8, 200), (8, 200)] },
    PerftestTool { bin: "ib_write_lat", op: "write-lat", runs: &[(2, 200), (65536, 20)] },
    PerftestTool { bin: "ib_read_lat", op: "read-lat", runs: &[(2, 200), (65536, 20)] },
    PerftestTool { bin: "ib_send_lat", op: "send-lat", runs: &[(2, 200), (65536, 20)] },
];

/// What a case must end in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Both sides succeed.
    Pass,
    /// ferrite refuses the options before the exchange, and the guest's tool exits with an error (it is
    /// not left waiting).
    Refused,
    /// The guest's tool fails mid-run, and ferrite's run ends soon after, saying one of these.
    PeerFails(&'static [&'static str]),
}

/// How long a case that must fail may take on ferrite's side: the peer's end is noticed within seconds.
const FAIL_WITHIN: Duration = Duration::from_secs(30);

/// One case: the tool, its options, and the loss on ferrite's side.
#[derive(Debug, Clone)]
struct Case {
    tool: Tool,
    name: String,
    mtu: u32,
    /// `-s` and `-n`, where the case gives them (`-a` runs every size, `-D` for a time).
    size: Option<u32>,
    iters: Option<u32>,
    loss: f64,
    tcp_port: u16,
    /// perftest's options for both sides (ferrite takes perftest's names), then for the server and the
    /// client alone.
    both: &'static str,
    server: &'static str,
    client: &'static str,
    expect: Expect,
}

/// A case of perftest's options, run without loss at PMTU 1024.
struct OptionCase {
    bin: &'static str,
    op: &'static str,
    name: &'static str,
    size: Option<u32>,
    iters: Option<u32>,
    both: &'static str,
    server: &'static str,
    client: &'static str,
    expect: Expect,
}

/// Each costs CI time: the guest's software emulation moves about 10 MB/s, so `-a` (up to 8 MiB) runs once
/// for a bandwidth tool and once for a latency tool.
/// An option case with the same options on both sides.
const fn same(
    bin: &'static str,
    op: &'static str,
    name: &'static str,
    size: Option<u32>,
    iters: Option<u32>,
    both: &'static str,
    expect: Expect,
) -> OptionCase {
    OptionCase { bin, op, name, size, iters, both, server: "", client: "", expect }
}

const OPTION_CASES: [OptionCase; 14] = [
    same("ib_write_bw", "write", "q4", Some(4096), Some(50), "-q 4", Expect::Pass),
    same("ib_write_bw", "write", "all", None, Some(5), "-a", Expect::Pass),
    same("ib_read_bw", "read", "o4-q2", Some(4096), Some(100), "-o 4 -q 2", Expect::Pass),
    same("ib_read_bw", "read", "events", Some(4096), Some(100), "-e", Expect::Pass),
    same("ib_atomic_bw", "atomic", "cas", None, Some(200), "-A CMP_AND_SWAP", Expect::Pass),
    same("ib_atomic_bw", "atomic", "cas-q2", None, Some(100), "-A CMP_AND_SWAP -q 2", Expect::Pass),
    same("ib_send_bw", "send", "q2-depths", Some(4096), Some(100), "-q 2 -t 32 -r 64", Expect::Pass),
    same("ib_write_bw", "write", "bidir", Some(65536), Some(100), "-b", Expect::Pass),
    same("ib_send_bw", "send", "bidir", Some(4096), Some(100), "-b", Expect::Pass),
    same("ib_write_bw", "write", "duration-gbits", Some(65536), None, "-D 2 --report_gbits", Expect::Pass),
    same("ib_write_lat", "write-lat", "duration", Some(64), None, "-D 2", Expect::Pass),
    same("ib_send_lat", "send-lat", "all", None, Some(5), "-a", Expect::Pass),
    same("ib_write_bw", "write", "run-infinitely", Some(65536), None, "--run_infinitely", Expect::Refused),
    // The server's buffer is smaller than the client's WRITEs: its responder NAKs them, the client fails.
    OptionCase {
        bin: "ib_write_bw",
        op: "write",
        name: "past-the-buffer",
        size: None,
        iters: Some(10),
        both: "",
        server: "-s 4096",
        client: "-s 1048576",
        expect: Expect::PeerFails(&["remote access error", "RemAccessErr"]),
    },
];

const FERRITE_IP: &str = "10.0.0.1";
/// The case in which the guest pings ferrite's address (answered by the NIC, no host involved).
const PING: &str = "ping-the-nic";
const GUEST_IP: &str = "10.0.0.2";
const FERRITE_PORT: u16 = 40001;
const GUEST_PORT: u16 = 40002;
/// The guest's link MTU: large enough for rxe to take a 4096-byte path MTU.
const GUEST_MTU: u32 = 4500;
/// How long the guest's tool may run (its `timeout`), and so the case.
const CASE_SECS: u64 = 300;
/// ferrite's `--timeout`: how long each step of its run may wait (a completion, a message of the exchange).
const STEP_SECS: u64 = 120;
/// How long the guest's tool may go on after ferrite's run ended before the guest counts as stuck.
const GUEST_GRACE_SECS: u64 = 60;
/// How long past `CASE_SECS` ferrite's process may go on before it is ended (its own timeouts did not end it).
const OVERRUN_SECS: u64 = 60;

fn cases(loss: f64) -> Vec<Case> {
    let mut v = Vec::new();
    for l in [0.0, loss] {
        let tag = if l > 0.0 { format!("-loss{l}") } else { String::new() };
        let mut add = |tool, name: &str, mtu, size, iters| {
            let tcp_port = 18515 + v.len() as u16;
            v.push(Case {
                tool,
                name: format!("{name}-mtu{mtu}-{size}B{tag}"),
                mtu,
                size: Some(size),
                iters: Some(iters),
                loss: l,
                tcp_port,
                both: "",
                server: "",
                client: "",
                expect: Expect::Pass,
            });
        };
        for mtu in [1024, 4096] {
            for (size, iters) in [(1, 50), (4096, 50), (1 << 20, 4)] {
                add(Tool::Pingpong, "pingpong", mtu, size, iters);
            }
        }
        for t in &PERFTEST {
            for (&(size, iters), mtu) in t.runs.iter().zip([1024, 4096]) {
                add(Tool::Perftest(t.bin, t.op), t.bin, mtu, size, iters);
            }
        }
    }
    for o in &OPTION_CASES {
        let tcp_port = 18515 + v.len() as u16;
        v.push(Case {
            tool: Tool::Perftest(o.bin, o.op),
            name: format!("{}-{}", o.bin, o.name),
            mtu: 1024,
            size: o.size,
            iters: o.iters,
            loss: 0.0,
            tcp_port,
            both: o.both,
            server: o.server,
            client: o.client,
            expect: o.expect,
        });
    }
    v
}

/// perftest's options of `c` for the side in `role` ("server" or "client").
fn options(c: &Case, role: &str) -> Vec<&'static str> {
    let alone = if role == "server" { c.server } else { c.client };
    [c.both, alone].into_iter().filter(|e| !e.is_empty()).collect()
}

/// The guest's half of a case, as a command line; the guest is the server when ferrite is the client.
fn guest_tool(c: &Case, role_ferrite: &str) -> String {
    match c.tool {
        Tool::Pingpong => format!(
            "ibv_rc_pingpong -d rxe0 -g $gidx -m {} -s {} -n {} -p {}",
            c.mtu,
            c.size.unwrap_or(0),
            c.iters.unwrap_or(0),
            c.tcp_port
        ),
        // -x: the IPv4 RoCEv2 GID (`gid_index_script`); -F: no failure over the guest's CPU frequency readings.
        Tool::Perftest(bin, op) => {
            let mut t = format!("{bin} -d rxe0 -x $gidx -F -m {}", c.mtu);
            if let Some(size) = c.size.filter(|_| op != "atomic") {
                t += &format!(" -s {size}");
            }
            if let Some(n) = c.iters {
                t += &format!(" -n {n}");
            }
            for extra in options(c, if role_ferrite == "client" { "server" } else { "client" }) {
                t += &format!(" {extra}");
            }
            t + &format!(" -p {}", c.tcp_port)
        }
    }
}

/// The line a guest staging a stopped transmit queue writes to its kernel log (at the kernel watchdog's
/// level, so the console shows it), three seconds into the case, before its tool starts.
const STAGED_STALL: &str = "<2>virtio_net virtio0 eth0: NETDEV WATCHDOG: transmit queue 0 timed out (staged)";

/// Shell that waits (up to 10 s) for rxe's GID table to hold the guest's address as a RoCEv2 GID and sets
/// `gidx` to its index. The index depends on the order the kernel's address events came in: the IPv6
/// link-local default GIDs may come first (indices 0 and 1) or after the IPv4 ones, most often when the host
/// is loaded.
fn gid_index_script() -> String {
    let ip: std::net::Ipv4Addr = GUEST_IP.parse().expect("GUEST_IP is an IPv4 address");
    let o = ip.octets();
    let mapped = format!("0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}", o[0], o[1], o[2], o[3]);
    let port = "/sys/class/infiniband/rxe0/ports/1";
    format!(
        "gidx=''; n=0\nwhile [ -z \"$gidx\" ] && [ $n -lt 100 ]; do\n\
         \x20   for i in 0 1 2 3 4 5 6 7; do\n\
         \x20       if [ \"$(cat {port}/gids/$i 2>/dev/null)\" = {mapped} ] && \
         [ \"$(cat {port}/gid_attrs/types/$i 2>/dev/null)\" = 'RoCE v2' ]; then gidx=$i; fi\n\
         \x20   done\n\
         \x20   [ -n \"$gidx\" ] || sleep 0.1; n=$((n + 1))\n\
         done\n\
         echo \"GUEST: RoCEv2 GID of {GUEST_IP} at index ${{gidx:-none}}\"\n"
    )
}

/// The guest's script for one role: set up rxe, then run each case's other half in order, printing
/// `CASE <name> rc=<code>` after each; in case `stall`, first the watchdog's line (`STAGED_STALL`).
fn guest_script(role_ferrite: &str, cases: &[Case], stall: Option<&str>) -> String {
    let mut s = format!(
        "ip link set eth0 mtu {GUEST_MTU} up\nip addr add {GUEST_IP}/24 dev eth0\n\
         rdma link add rxe0 type rxe netdev eth0\n"
    );
    s += &gid_index_script();
    // While ferrite's first case runs: the NIC itself answers ARP and ping.
    let _ =
        writeln!(s, "ping -c 3 -w 20 {FERRITE_IP} > /tmp/out 2>&1; rc=$?; cat /tmp/out; echo \"CASE {PING} rc=$rc\"");
    for c in cases {
        let tool = guest_tool(c, role_ferrite);
        if stall == Some(c.name.as_str()) {
            let _ = writeln!(s, "sleep 3; echo '{STAGED_STALL}' > /dev/kmsg");
        }
        if role_ferrite == "server" {
            // ferrite listens; connect until it does.
            let _ = writeln!(
                s,
                "rc=1; for t in $(seq 1 40); do timeout {CASE_SECS} {tool} {FERRITE_IP} > /tmp/out 2>&1; rc=$?; \
                 grep -q \"Couldn't connect\" /tmp/out || break; sleep 0.5; done; cat /tmp/out\n"
            );
        } else {
            let _ = writeln!(s, "timeout {CASE_SECS} {tool}; rc=$?");
        }
        let _ = writeln!(s, "echo \"CASE {} rc=$rc\"", c.name);
    }
    s += "for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/*; do echo \"RXE $(basename $f)=$(cat $f)\"; done\n";
    s
}

/// A network namespace of this run's own, deleted when dropped.
pub(crate) struct Netns(String);

impl Netns {
    fn new() -> Result<Self, Error> {
        let name = format!("ferrite-interop-{}", std::process::id());
        sh(Command::new("ip").args(["netns", "add", &name]))?;
        let ns = Netns(name);
        sh(Command::new("ip").args(["netns", "exec", &ns.0, "ip", "link", "set", "lo", "up"]))?;
        Ok(ns)
    }
    fn command(&self, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.0]).arg(program);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// How a guest is started: the kernel's extra arguments and QEMU's devices.
pub(crate) struct Machine<'a> {
    pub append: &'a str,
    pub qemu: Vec<String>,
}

/// The guest, started by `launch` (a plain `qemu-system-x86_64`, or one inside a namespace) with `script`
/// as its case list and `extra` (files to add under `/`, already in place in `dir/case-root`); its console
/// goes to `log`.
pub(crate) fn boot(
    mut launch: Command,
    g: &guest::Guest,
    m: &Machine,
    script: &str,
    dir: &Path,
    log: &Path,
) -> Result<Child, Error> {
    let case_root = dir.join("case-root");
    fs::create_dir_all(&case_root)?;
    fs::write(case_root.join("case.sh"), script)?;
    let case_cpio = dir.join("case.cpio.gz");
    guest::cpio(&case_root, &case_cpio)?;
    let initrd = dir.join("initrd.gz");
    let mut all = fs::read(&g.initramfs)?;
    all.extend(fs::read(&case_cpio)?);
    fs::write(&initrd, all)?;
    let child = launch
        .args(["-accel", "tcg", "-cpu", "max", "-smp", "1", "-m", "1024", "-nographic", "-no-reboot"])
        .arg("-kernel")
        .arg(&g.kernel)
        .arg("-initrd")
        .arg(&initrd)
        .args(["-append", &format!("console=ttyS0 quiet loglevel=3 panic=-1 {}", m.append)])
        .arg("-serial")
        .arg(format!("file:{}", log.display()))
        .args(["-monitor", "none"])
        .args(&m.qemu)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok(child)
}

/// Waits up to `secs` for the guest to power off, then ends it.
pub(crate) fn reap(vm: &mut Child, secs: u64) {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end && vm.try_wait().ok().flatten().is_none() {
        std::thread::sleep(Duration::from_millis(200));
    }
    if vm.try_wait().ok().flatten().is_none() {
        let _ = vm.kill();
        let _ = vm.wait();
    }
}

/// How many times a role's guest is started again after its network stopped.
const FRESH_GUESTS: usize = 3;

/// The lines in which the guest's kernel said its virtio-net transmit queue stopped (its TX watchdog, after
/// 5 s) during case `name`: after the `CASE` line of the case before it in this guest (`prev`; from the
/// console's start for the guest's first case) and before its own. Under software emulation on a loaded
/// machine the queue has stayed stopped for good, in the middle of an `-a` case's 4 MiB messages (seen in two
/// of eight local CI runs and in one CI run on 2026-12-05, the guest's kernel 6.1 with QEMU 7.2); nothing the
/// guest sends leaves it after that.
fn tx_stalls<'a>(console: &'a str, prev: Option<&str>, name: &str) -> Vec<&'a str> {
    let mut lines = console.lines();
    if let Some(prev) = prev {
        let tag = format!("CASE {prev} rc=");
        if !lines.by_ref().any(|l| l.trim().starts_with(&tag)) {
            return Vec::new();
        }
    }
    let own = format!("CASE {name} rc=");
    lines.take_while(|l| !l.trim().starts_with(&own)).filter(|l| l.contains("NETDEV WATCHDOG")).map(str::trim).collect()
}

/// How ferrite's half of a case ended.
struct Side {
    ok: bool,
    report: String,
    /// The guest's transmit queue stopped while it ran (ferrite's run was ended then).
    stalled: bool,
}

/// ferrite's half of `case`, as `role`: its JSON report's verdict. Ended early if the guest's console
/// (`log`) shows its transmit queue stopped in this case (`prev`: the case before it in this guest).
fn ferrite_side(o: &Options, ns: &Netns, role: &str, c: &Case, pcap: &Path, log: &Path, prev: Option<&str>) -> Side {
    let mut cmd = ns.command(&o.ferrite);
    match c.tool {
        Tool::Pingpong => cmd.arg("pingpong"),
        Tool::Perftest(_, op) => cmd.args(["perf", op, "--link"]),
    };
    match (role, c.tool) {
        ("client", _) => cmd.arg(GUEST_IP),
        ("server", Tool::Perftest(..)) => cmd.arg("--server"),
        _ => &mut cmd,
    };
    cmd.args(["--local", &format!("127.0.0.1:{FERRITE_PORT}"), "--remote", &format!("127.0.0.1:{GUEST_PORT}")])
        .args(["--ip", &format!("{FERRITE_IP}/24"), "-m", &c.mtu.to_string()])
        .args(["-p", &c.tcp_port.to_string(), "--timeout", &STEP_SECS.to_string(), "--json"])
        .args(["--loss", &c.loss.to_string(), "--seed", "1", "--profile", &o.profile, "--pcap"])
        .arg(pcap);
    if o.backend != "model" {
        cmd.args(["--device", &o.backend]);
    }
    if let Some(size) = c.size {
        cmd.args(["-s", &size.to_string()]);
    }
    if let Some(n) = c.iters {
        cmd.args(["-n", &n.to_string()]);
    }
    if let Tool::Perftest(..) = c.tool {
        // rxe never sends a bad ICRC: here one fails the case.
        cmd.arg("--strict-icrc").args(options(c, role).iter().flat_map(|o| o.split_whitespace()));
    }
    let (out, err) = (pcap.with_extension("out"), pcap.with_extension("err"));
    let files = fs::File::create(&out).and_then(|f| Ok((f, fs::File::create(&err)?)));
    let child = files.and_then(|(f, e)| cmd.stdout(f).stderr(e).spawn());
    let mut child = match child {
        Err(e) => return Side { ok: false, report: format!("could not run ferrite: {e}"), stalled: false },
        Ok(child) => child,
    };
    let mut stalled = false;
    let mut overran = false;
    let end = Instant::now() + Duration::from_secs(CASE_SECS + OVERRUN_SECS);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(_) => {
                let _ = child.kill();
                break child.wait().ok();
            }
        }
        stalled = !tx_stalls(&fs::read_to_string(log).unwrap_or_default(), prev, &c.name).is_empty();
        overran = Instant::now() >= end;
        if stalled || overran {
            let _ = child.kill();
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = fs::read_to_string(&out).unwrap_or_default().trim().to_string();
    let err_text = fs::read_to_string(&err).unwrap_or_default().trim().to_string();
    let _ = (fs::remove_file(&out), fs::remove_file(&err));
    let mut report = if text.is_empty() { err_text } else { text };
    if stalled {
        report = format!("ended: the guest's transmit queue stopped (NETDEV WATCHDOG); {report}");
    } else if overran {
        report = format!("ended: still running {} s after its start; {report}", CASE_SECS + OVERRUN_SECS);
    }
    Side { ok: status.is_some_and(|s| s.success()) && !stalled && !overran, report, stalled }
}

/// Whether a case ended as it must: ferrite's verdict and report, the guest's exit code, ferrite's time.
fn verdict(expect: Expect, ok: bool, report: &str, rc: Option<i32>, took: Duration) -> bool {
    let guest_failed = rc.is_some_and(|r| r != 0);
    match expect {
        Expect::Pass => ok && rc == Some(0),
        Expect::Refused => !ok && report.contains("refused before the exchange") && guest_failed && took < FAIL_WITHIN,
        Expect::PeerFails(says) => !ok && says.iter().any(|w| report.contains(w)) && guest_failed && took < FAIL_WITHIN,
    }
}

/// Whether ferrite's `pingpong` report (`report`, its JSON) ended in `ibv_rc_pingpong`'s closing race: the
/// tool has no closing handshake, and each side exits once its own last send and receive are done. Under
/// injected loss the ACK of ferrite's last SEND can be among the frames ferrite drops; the guest, which has
/// received that SEND, exits and destroys its QP, and ferrite's retransmissions go unanswered until its
/// retry count runs out. The report then shows every message of `iters` received intact, every send but the
/// last completed, and the last failed with RetryExcErr. (A real NIC running the tool meets the same race.)
fn closing_race(iters: Option<u32>, report: &str) -> bool {
    let Ok(r) = serde_json::from_str::<serde_json::Value>(report) else { return false };
    let n = |k: &str| r.get(k).and_then(serde_json::Value::as_u64);
    let iters = iters.map(u64::from);
    iters.is_some()
        && n("iters_received") == iters
        && n("iters_sent").map(|s| s + 1) == iters
        && n("bad_payloads") == Some(0)
        && r.get("detail").and_then(serde_json::Value::as_str).is_some_and(|d| d.contains("RetryExcErr"))
}

/// The `CASE <name> rc=<code>` line of `name` in the guest's console, if it is there yet.
pub(crate) fn guest_rc(log: &str, name: &str) -> Option<i32> {
    let tag = format!("CASE {name} rc=");
    log.lines().find_map(|l| l.trim().strip_prefix(&tag).and_then(|r| r.trim().parse().ok()))
}

pub(crate) fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs every case in both roles; one result per case and role, each also handed to `done` as it ends.
pub fn rxe(o: &Options, mut done: impl FnMut(&CaseResult)) -> Result<Vec<CaseResult>, Error> {
    let rtl = match o.backend.as_str() {
        "model" => false,
        "rtl" | "rtl:64" => true,
        b => return Err(format!("backend {b}: `model`, `rtl` or `rtl:64`").into()),
    };
    fs::create_dir_all(&o.work)?;
    let mut all = cases(o.loss);
    if rtl {
        // The core on a real link runs no seeded faults: the cases without loss, each tool at both MTUs.
        all.retain(|c| c.loss == 0.0 && c.both.is_empty() && c.server.is_empty() && c.client.is_empty());
    }
    all.retain(|c| o.only.as_ref().is_none_or(|s| s.split(',').any(|p| c.name.contains(p))));
    if let Some(name) = o.stage_stall.as_ref().filter(|n| !all.iter().any(|c| &c.name == *n)) {
        return Err(format!("--stage-stall {name}: no such case in this run").into());
    }
    let g = guest::build(&o.cache, &guest::RXE)?;
    let began = Instant::now();
    let mut results = Vec::new();
    for role in ["server", "client"] {
        let ns = Netns::new()?;
        let dir = o.work.join(role);
        fs::create_dir_all(&dir)?;
        let netdev = format!(
            "dgram,id=n0,local.type=inet,local.host=127.0.0.1,local.port={GUEST_PORT},\
             remote.type=inet,remote.host=127.0.0.1,remote.port={FERRITE_PORT}"
        );
        let m = Machine {
            append: "",
            qemu: ["-netdev", &netdev, "-device", "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:56"]
                .map(String::from)
                .to_vec(),
        };
        // The cases from `next` on run in one guest; if its transmit queue stops, it is ended and a fresh
        // guest runs the rest, the case it stopped in first.
        for f in fs::read_dir(&dir)?.flatten() {
            if f.file_name().to_string_lossy().starts_with("console") {
                let _ = fs::remove_file(f.path());
            }
        }
        let mut next = 0;
        let mut fresh = 0;
        let (mut ping, mut first_console) = (None, None);
        let mut again: Option<String> = None;
        loop {
            let log =
                dir.join(if fresh == 0 { "console.log".to_string() } else { format!("console-{}.log", fresh + 1) });
            let _ = fs::remove_file(&log);
            let _ = fs::remove_dir_all(dir.join("case-root"));
            let script = guest_script(role, &all[next..], o.stage_stall.as_deref().filter(|_| fresh == 0));
            let mut vm = boot(ns.command(Path::new("qemu-system-x86_64")), &g, &m, &script, &dir, &log)?;
            let mut stopped = false;
            let first = next;
            while next < all.len() {
                let c = &all[next];
                let prev = (next > first).then(|| all[next - 1].name.as_str());
                let pcap = dir.join(format!("{}.pcap", c.name));
                let started = Instant::now();
                let side = ferrite_side(o, &ns, role, c, &pcap, &log, prev);
                let took = started.elapsed();
                // The guest's half ends soon after ferrite's (or has already), unless its link stops.
                let deadline = Instant::now() + Duration::from_secs(if side.stalled { 0 } else { GUEST_GRACE_SECS });
                let mut stalled = side.stalled;
                let rc = loop {
                    let console = fs::read_to_string(&log).unwrap_or_default();
                    let rc = guest_rc(&console, &c.name);
                    stalled |= rc.is_none() && !tx_stalls(&console, prev, &c.name).is_empty();
                    if rc.is_some() || stalled || Instant::now() >= deadline {
                        break rc;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                };
                // The guest's tool still running long after ferrite's run ended: the guest is stuck in this
                // case (seen under emulation in `-a` runs at 8 MiB: rxe stopped sending mid-message, with no
                // watchdog line), and the cases after it would wait on it.
                let hung = rc.is_none() && !stalled;
                if (stalled || hung) && fresh < FRESH_GUESTS {
                    let console = fs::read_to_string(&log).unwrap_or_default();
                    let said = match tx_stalls(&console, prev, &c.name).first() {
                        Some(line) => format!("\"{line}\""),
                        None => format!("its tool still running {GUEST_GRACE_SECS} s after ferrite's run ended"),
                    };
                    again = Some(format!("{}: {said}; ferrite's run {}", log.display(), side.report));
                    stopped = true;
                    break;
                }
                let report = side.report;
                // The guest done (rc 0: it received every message) and ferrite's last SEND unacknowledged.
                let race = c.tool == Tool::Pingpong && c.loss > 0.0 && rc == Some(0) && closing_race(c.iters, &report);
                let pass = verdict(c.expect, side.ok || race, &report, rc, took);
                let mut detail = format!("ferrite ({:.1} s): {report}; guest rc: {rc:?}", took.as_secs_f64());
                if race {
                    detail += "; ibv_rc_pingpong's closing race: the ACK of ferrite's last SEND lost, the guest gone";
                }
                if let Some(first) = again.take() {
                    detail += &format!("; run again in a fresh guest, the last one stopped ({first})");
                }
                if !pass {
                    let console = fs::read_to_string(&log).unwrap_or_default();
                    detail +=
                        &format!("\nguest console (last lines):\n{}\npcap: {}", tail(&console, 30), pcap.display());
                } else {
                    let _ = fs::remove_file(&pcap);
                }
                let r = CaseResult {
                    name: c.name.clone(),
                    backend: o.backend.clone(),
                    role: role.to_string(),
                    pass,
                    detail,
                };
                done(&r);
                results.push(r);
                next += 1;
                // The last fresh guest's link stopped too, or the run's budget is spent: the cases left
                // are not run.
                let spent = o.budget.is_some_and(|b| began.elapsed() > b);
                if stalled || hung || (spent && next < all.len()) {
                    let why = if stalled || hung {
                        format!("the guest stopped in {} with {FRESH_GUESTS} fresh guests used", c.name)
                    } else {
                        format!("the run's budget of {} s is spent", o.budget.unwrap_or_default().as_secs())
                    };
                    for c in &all[next..] {
                        let detail = format!("not run: {why}");
                        let r = CaseResult {
                            name: c.name.clone(),
                            backend: o.backend.clone(),
                            role: role.to_string(),
                            pass: false,
                            detail,
                        };
                        done(&r);
                        results.push(r);
                    }
                    next = all.len();
                    stopped = true;
                }
            }
            // The ping of the first guest that got as far.
            let console = fs::read_to_string(&log).unwrap_or_default();
            if ping.is_none() && guest_rc(&console, PING).is_some() {
                ping = Some(console.clone());
            }
            first_console.get_or_insert(console);
            if !stopped {
                reap(&mut vm, 60);
                break;
            }
            let _ = vm.kill();
            let _ = vm.wait();
            if next == all.len() {
                break;
            }
            fresh += 1;
        }
        let console = ping.or(first_console).unwrap_or_default();
        let rc = guest_rc(&console, PING);
        let r = CaseResult {
            name: PING.to_string(),
            backend: o.backend.clone(),
            role: role.to_string(),
            pass: rc == Some(0),
            detail: format!("guest `ping -c 3` rc: {rc:?}\n{}", tail(&console, 8)),
        };
        done(&r);
        results.push(r);
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closing race is only the last SEND's ACK lost after every message came in intact.
    #[test]
    fn the_closing_race_is_the_last_send_alone() {
        let r = |sent: u32, received: u32, bad: u32, detail: &str| {
            format!(
                r#"{{"role":"server","pass":false,"detail":"{detail}","iters_sent":{sent},"iters_received":{received},"bad_payloads":{bad}}}"#
            )
        };
        let retry = "failed status RetryExcErr for wr_id 2";
        assert!(closing_race(Some(4), &r(3, 4, 0, retry)));
        assert!(!closing_race(Some(4), &r(2, 4, 0, retry)), "an earlier send unacknowledged");
        assert!(!closing_race(Some(4), &r(3, 3, 0, retry)), "a message not received");
        assert!(!closing_race(Some(4), &r(3, 4, 1, retry)), "a message corrupted");
        assert!(!closing_race(Some(4), &r(3, 4, 0, "timed out after 3 sends and 4 receives")), "another failure");
        assert!(!closing_race(None, &r(3, 4, 0, retry)), "no iteration count");
        assert!(!closing_race(Some(4), "not json"));
    }

    /// The guest's tools take the index of its IPv4 RoCEv2 GID found in rxe's table, never a fixed one: the
    /// table's order varies with the kernel's address events.
    #[test]
    fn the_guest_finds_its_gid_index_before_any_tool_runs() {
        let all = cases(0.0);
        for role in ["client", "server"] {
            let script = guest_script(role, &all, None);
            let found = script.find("gid_attrs/types/$i").expect("the GID index looked up");
            let first_tool = script.find(" -d rxe0 ").expect("a tool");
            assert!(found < first_tool, "{role}: looked up before the first tool");
            assert!(script.contains("= 0000:0000:0000:0000:0000:ffff:0a00:0002 ]"), "{role}: 10.0.0.2, IPv4-mapped");
            for c in &all {
                let tool = guest_tool(c, role);
                assert!(tool.contains(" -g $gidx ") || tool.contains(" -x $gidx "), "{}: {tool}", c.name);
            }
        }
    }

    #[test]
    fn the_matrix_covers_every_tool_at_both_mtus_with_and_without_loss() {
        let all = cases(0.01);
        assert_eq!(all.len(), 40 + OPTION_CASES.len());
        let mut names: Vec<&str> = all.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "names repeat");
        let mut ports: Vec<u16> = all.iter().map(|c| c.tcp_port).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), all.len(), "ports repeat");
        for t in &PERFTEST {
            for loss in [0.0, 0.01] {
                let plain = |c: &&Case| c.both.is_empty() && c.server.is_empty() && c.client.is_empty();
                let mine = all.iter().filter(|c| c.tool == Tool::Perftest(t.bin, t.op) && c.loss == loss).filter(plain);
                let mtus: Vec<u32> = mine.map(|c| c.mtu).collect();
                assert_eq!(mtus, [1024, 4096], "{} loss {loss}", t.bin);
            }
        }
        let ib = all.iter().find(|c| c.name == "ib_atomic_bw-mtu1024-8B-loss0.01").expect("atomic case");
        assert_eq!(
            guest_tool(ib, "server"),
            format!("ib_atomic_bw -d rxe0 -x $gidx -F -m 1024 -n 200 -p {}", ib.tcp_port)
        );
        let all_sizes = all.iter().find(|c| c.name == "ib_write_bw-all").expect("-a case");
        assert_eq!(
            guest_tool(all_sizes, "client"),
            format!("ib_write_bw -d rxe0 -x $gidx -F -m 1024 -n 5 -a -p {}", all_sizes.tcp_port)
        );
        let past = all.iter().find(|c| c.name == "ib_write_bw-past-the-buffer").expect("failing case");
        assert!(guest_tool(past, "server").contains(" -s 1048576"), "the guest as client writes past the buffer");
        assert!(guest_tool(past, "client").contains(" -s 4096"), "the guest as server has the small buffer");
        assert_eq!(options(past, "server"), ["-s 4096"]);
    }

    /// A watchdog line belongs to the case running when the kernel printed it: after the case before's
    /// `CASE` line, before its own.
    #[test]
    fn a_stopped_queue_is_the_case_it_stopped_in() {
        let w = "[ 9.1] virtio_net virtio0 eth0: NETDEV WATCHDOG: transmit queue 0 timed out";
        let console = format!("boot\nCASE a rc=0\n{w}\nCASE b rc=1\nCASE c rc=0\n{w}\n");
        assert_eq!(tx_stalls(&console, None, "a"), Vec::<&str>::new(), "before a's line: none");
        assert_eq!(tx_stalls(&console, Some("a"), "b"), [w.trim()]);
        assert!(tx_stalls(&console, Some("b"), "c").is_empty(), "b's line, then c's: none between");
        assert_eq!(tx_stalls(&console, Some("c"), "d"), [w.trim()], "d running, its line not yet there");
        assert!(tx_stalls(&console, Some("d"), "e").is_empty(), "d not yet done: e has not started");
        assert_eq!(tx_stalls(&format!("{w}\nCASE a rc=0"), None, "a").len(), 1, "a guest's first case");
    }

    #[test]
    fn verdicts_hold_each_case_to_what_it_must_end_in() {
        let quick = Duration::from_secs(2);
        assert!(verdict(Expect::Pass, true, "{}", Some(0), quick));
        assert!(!verdict(Expect::Pass, true, "{}", Some(1), quick));
        assert!(!verdict(Expect::Pass, false, "{}", Some(0), quick));
        assert!(!verdict(Expect::Pass, true, "{}", None, quick));
        let refused = "ferrite: -x (refused before the exchange; the peer's connection was closed)";
        assert!(verdict(Expect::Refused, false, refused, Some(1), quick));
        assert!(
            !verdict(Expect::Refused, false, refused, Some(0), quick),
            "the guest must have been released with an error"
        );
        assert!(!verdict(Expect::Refused, false, refused, None, quick), "the guest never ended");
        assert!(!verdict(Expect::Refused, false, "timed out", Some(1), quick));
        assert!(!verdict(Expect::Refused, false, refused, Some(1), FAIL_WITHIN * 2), "noticed too late");
        let fails = Expect::PeerFails(&["remote access error"]);
        assert!(verdict(fails, false, "... NAKed: 1 x remote access error ...", Some(1), quick));
        assert!(!verdict(fails, false, "TCP: timed out", Some(1), quick));
        assert!(!verdict(fails, true, "remote access error", Some(1), quick));
    }
}
