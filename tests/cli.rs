//! The CLI end to end: demo, perf JSON, incast fairness, pcap check on a real rxe capture.

use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// Held by each run of `ferrite interop rxe`: one soft-RoCE guest at a time, each under software
/// emulation, so that one run's guest and simulation do not starve the other's.
static RXE_GUEST: Mutex<()> = Mutex::new(());

/// `ferrite interop rxe` with `args`, one run at a time (`RXE_GUEST`), its JSON report as `ferrite_json`
/// gives it; each case's line goes straight to the test's stderr as the case ends, so a slow run shows
/// where it is.
fn interop_rxe(args: &[&str]) -> (bool, serde_json::Value, String) {
    let _one = RXE_GUEST.lock().unwrap_or_else(PoisonError::into_inner);
    let out = Command::new(env!("CARGO_BIN_EXE_ferrite"))
        .args(["interop", "rxe"])
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .expect("run ferrite");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}), exit {}:\n{stdout}", out.status));
    (out.status.success(), v, stdout)
}

fn ferrite(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ferrite")).args(args).output().expect("run ferrite");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs ferrite for a JSON report; when stdout holds none, the panic shows what ferrite said on stderr.
fn ferrite_json(args: &[&str]) -> (bool, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ferrite")).args(args).output().expect("run ferrite");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let v = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("no JSON report ({e}), exit {}:\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr))
    });
    (out.status.success(), v, stdout)
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("bad JSON ({e}): {s}"))
}

#[test]
fn demo_checks_every_byte() {
    let (ok, out) = ferrite(&["demo", "--backend", "model"]);
    assert!(ok, "{out}");
    assert!(out.contains("every byte matched"), "{out}");
    assert_eq!(out.matches(" ok ").count(), 5, "{out}");
}

/// `demo --backend rtl`: the Verilated core is the requester (SEND, WRITE, READ, both atomics) of a model
/// NIC, every byte checked, the model following the core with no mismatch.
#[test]
fn demo_on_the_rtl_core_checks_every_byte_in_lockstep() {
    let (ok, out) = ferrite(&["demo", "--backend", "rtl"]);
    assert!(ok, "{out}");
    assert!(out.contains("every byte matched"), "{out}");
    assert_eq!(out.matches(" ok ").count(), 5, "{out}");
    assert!(out.contains(", 0 mismatches"), "{out}");
    let (ok, out) = ferrite(&["demo", "--backend", "rtl", "--pcap", "/dev/null"]);
    assert!(!ok, "--pcap with the RTL demo is refused: {out}");
}

#[test]
fn perf_write_with_loss_reports_data_ok() {
    let (ok, out) = ferrite(&[
        "perf",
        "write",
        "--backend",
        "model",
        "--size",
        "1048576",
        "--iters",
        "20",
        "--loss",
        "0.01",
        "--json",
    ]);
    assert!(ok, "{out}");
    let v = json(&out);
    for k in [
        "op",
        "backend",
        "size",
        "iters",
        "qps",
        "pmtu",
        "loss",
        "bytes",
        "sim_time_ns",
        "goodput_gbps",
        "msg_rate_mpps",
        "packets",
        "retransmitted_packets",
        "naks",
        "timeouts",
        "cnps",
        "data_ok",
        "completions_ok",
        "missing",
        "errors",
    ] {
        assert!(v.get(k).is_some(), "missing key {k}");
    }
    assert_eq!(v["data_ok"], true);
    assert_eq!(v["completions_ok"], true);
    assert!(v["retransmitted_packets"].as_u64().unwrap() > 0, "1% loss must cause retransmissions");
}

#[test]
fn perf_every_op_and_pmtu() {
    for op in ["write", "read", "send", "atomic"] {
        for pmtu in ["256", "4096"] {
            let (ok, out) = ferrite(&[
                "perf", op, "--size", "10000", "--iters", "8", "--qps", "2", "--pmtu", pmtu, "--loss", "0.02", "--json",
            ]);
            assert!(ok, "{op} {pmtu}: {out}");
            let v = json(&out);
            assert_eq!(v["data_ok"], true, "{op} {pmtu}");
        }
    }
    let (ok, _) = ferrite(&["perf", "write", "--pmtu", "1000"]);
    assert!(!ok, "a bad PMTU is an error");
}

#[test]
fn perf_long_reads_under_loss_complete() {
    // One lost response of a READ longer than the 128-PSN window used to stall the QP for good.
    for (pmtu, loss) in [("1024", "0.001"), ("4096", "0.01")] {
        let args = ["perf", "read", "--size", "1048576", "--iters", "20", "--pmtu", pmtu, "--loss", loss, "--json"];
        let (ok, out) = ferrite(&args);
        assert!(ok, "{args:?}: {out}");
        let v = json(&out);
        assert_eq!(v["bytes"], 20 * 1048576, "{args:?}");
        assert!(v["retransmitted_packets"].as_u64().unwrap() > 0, "{args:?}: the loss was recovered from");
    }
}

#[test]
fn perf_goodput_counts_only_completed_bytes() {
    // At 90% loss the retries run out: the run fails, names the WRs that failed and reports no goodput.
    let (ok, out) = ferrite(&["perf", "write", "--size", "4096", "--iters", "4", "--loss", "0.9", "--json"]);
    assert!(!ok, "{out}");
    let v = json(&out);
    assert_eq!(v["completions_ok"], false);
    assert_eq!(v["goodput_gbps"], 0.0);
    assert_eq!(v["bytes"], 0);
    let errors = v["errors"].as_array().unwrap();
    assert!(errors[0].as_str().unwrap().contains("RetryExcErr"), "the first WR ran out of retries: {out}");
}

#[test]
fn incast_converges_to_a_fair_share_with_a_bounded_queue() {
    let (ok, out) = ferrite(&["incast", "--senders", "4", "--json"]);
    assert!(ok, "{out}");
    let v = json(&out);
    let jain = v["jain_index"].as_f64().unwrap();
    assert!(jain > 0.9, "Jain index {jain}");
    let total: f64 = v["steady_gbps"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).sum();
    assert!(total > 60.0 && total < 100.0, "bottleneck shared: {total} Gb/s");
    let peak = v["peak_queue_bytes"].as_u64().unwrap();
    assert!(peak < 1_000_000, "queue bounded well below the 4 MiB buffer: {peak}");
    assert!(v["cnps"].as_u64().unwrap() > 0, "DCQCN was exercised");
}

#[test]
fn pcap_check_decodes_the_rxe_capture() {
    let (ok, out) =
        ferrite(&["pcap", "check", concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/rxe_two_vm.pcap"), "--json"]);
    assert!(ok);
    let v = json(&out);
    let frames = v.as_array().unwrap();
    assert_eq!(frames.len(), 241);
    let roce: Vec<_> = frames.iter().filter(|f| f["kind"] == "roce").collect();
    assert_eq!(roce.len(), 95, "as the capture's notes say");
    assert!(roce.iter().all(|f| f["icrc_ok"] == true && f["error"].is_null()));
    assert!(roce.iter().any(|f| f["opcode"] == "RDMA_READ_RESPONSE_MIDDLE"));
}

#[test]
fn pcap_check_reports_damage_without_panicking() {
    let dir = std::env::temp_dir().join(format!("ferrite-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/rxe_two_vm.pcap")).unwrap();
    // Cut the file mid-record and flip a byte deep in the data: every frame still gets a verdict.
    let mut bad = src.clone();
    let n = bad.len();
    bad[n / 2] ^= 0xFF;
    bad.truncate(n - 10);
    let p = dir.join("bad.pcap");
    std::fs::write(&p, &bad).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ferrite"))
        .args(["pcap", "check", p.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(101), "no panic: {}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pcap_check_rtl_agrees_with_the_model_at_both_widths() {
    for file in ["testdata/rxe_two_vm.pcap", "testdata/roce_xpeer_badicrc.pcap"] {
        let path = format!("{}/{file}", env!("CARGO_MANIFEST_DIR"));
        let (ok, model) = ferrite(&["pcap", "check", &path, "--backend", "model", "--json"]);
        assert!(ok, "{model}");
        let model = json(&model);
        for width in ["8", "64"] {
            let (ok, rtl) = ferrite(&["pcap", "check", &path, "--backend", "rtl", "--width", width, "--json"]);
            assert!(ok, "{rtl}");
            assert_eq!(json(&rtl), model, "{file} at width {width}");
        }
        let frames = model.as_array().unwrap();
        assert!(frames.iter().any(|f| f["kind"] == "roce" && f["error"].is_null()), "{file}: accepted RoCE frames");
        if file.contains("badicrc") {
            assert!(frames.iter().any(|f| f["icrc_ok"] == false), "{file}: the bad ICRC is caught");
        }
    }
}

/// Runs `ferrite <server args>` and `ferrite <client args>` at once, as two NICs on a dgram link over
/// 127.0.0.1 (ports `base`, `base + 1`), the client with 2% loss on its side; both outputs, each checked to
/// have succeeded and parsed as JSON.
fn two_processes(base: u16, server: &[&str], client: &[&str]) -> [serde_json::Value; 2] {
    two_outputs(base, server, client).map(|(name, out)| {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{server:?} {name}: {text}{}", String::from_utf8_lossy(&out.stderr));
        json(&text)
    })
}

/// `two_processes` without the checks: each side's name and output.
fn two_outputs(base: u16, server: &[&str], client: &[&str]) -> [(&'static str, std::process::Output); 2] {
    let (a, b) = (format!("127.0.0.1:{base}"), format!("127.0.0.1:{}", base + 1));
    let bin = env!("CARGO_BIN_EXE_ferrite");
    let srv = Command::new(bin)
        .args(server)
        .args(["--local", &a, "--remote", &b, "--ip", "10.0.0.1/24", "--mac", "02:00:00:00:00:01"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let args: Vec<String> = client.iter().map(|s| s.to_string()).collect();
    let cli = std::thread::spawn(move || {
        Command::new(bin)
            .args(args)
            .args(["--local", &b, "--remote", &a, "--ip", "10.0.0.2/24", "--mac", "02:00:00:00:00:02"])
            .args(["--loss", "0.02", "--seed", "7"])
            .output()
            .expect("run ferrite")
    });
    let srv = srv.expect("run ferrite").wait_with_output().expect("run ferrite");
    let cli = cli.join().unwrap();
    [("server", srv), ("client", cli)]
}

/// Two `ferrite pingpong` processes, server and client, on a dgram link over 127.0.0.1 with 2% loss on the
/// client's side: the out-of-band exchange runs over TCP through the NICs, every message is checked, and
/// go-back-N recovers what the link drops.
#[test]
fn pingpong_between_two_processes_with_loss() {
    // Ports from this process's id, so parallel runs of the suite do not collide.
    let base = 42000 + (std::process::id() % 1000) as u16 * 2;
    let common = ["-n", "300", "-s", "3000", "--timeout", "60", "--json"];
    let server: Vec<&str> = ["pingpong"].into_iter().chain(common).collect();
    let client: Vec<&str> = ["pingpong", "10.0.0.1"].into_iter().chain(common).collect();
    let reports = two_processes(base, &server, &client);
    for (name, r) in ["server", "client"].into_iter().zip(&reports) {
        assert_eq!(
            (r["pass"].as_bool(), r["iters_sent"].as_u64(), r["iters_received"].as_u64()),
            (Some(true), Some(300), Some(300)),
            "{name}"
        );
        assert_eq!((r["bad_payloads"].as_u64(), r["rx_drop_bad_icrc"].as_u64()), (Some(0), Some(0)), "{name}");
    }
    assert!(reports[1]["retransmitted_packets"].as_u64() > Some(0));
}

/// `ferrite perf --threads`: threads posting and polling their own queues at once through shared contexts,
/// under loss; every completion in order and every byte checked.
#[test]
fn perf_threads_every_op_with_loss() {
    for op in ["write", "read", "send", "atomic"] {
        let args = ["perf", op, "--threads", "3", "--size", "3000", "--iters", "60", "--loss", "0.02", "--json"];
        let (ok, out) = ferrite(&args);
        let r = json(&out);
        assert!(ok, "{op}: {out}");
        assert_eq!((r["threads"].as_u64(), r["data_ok"].as_bool()), (Some(3), Some(true)), "{op}: {out}");
        assert_eq!(r["completions_ok"].as_bool(), Some(true), "{op}: {out}");
        assert!(r["retransmitted_packets"].as_u64() > Some(0), "{op}: the loss cost nothing: {out}");
        assert!(r["driver_ns_per_wr"].as_f64() > Some(0.0), "{op}: no driver time: {out}");
    }
    assert!(!ferrite(&["perf", "write", "--threads", "2", "--qps", "3"]).0);
    assert!(!ferrite(&["perf", "write", "--threads", "0"]).0);
    assert!(!ferrite(&["perf", "write", "--threads", "2", "--link", "--server"]).0);
}

/// `ferrite perf <op> --link`: every perftest tool's exchange and loop, ferrite on both ends of a real
/// link (two processes), with 2% loss on the client's side. Each side checks what it can of the data.
#[test]
fn perf_link_every_tool_between_two_processes_with_loss() {
    let base = 44000 + (std::process::id() % 1000) as u16 * 2;
    let mut retransmitted = 0;
    for (i, op) in ["write", "read", "send", "atomic", "write-lat", "read-lat", "send-lat"].into_iter().enumerate() {
        let port = (18600 + i).to_string();
        let common = ["perf", op, "--link", "-n", "60", "-s", "3000", "-p", &port, "--timeout", "60", "--json"];
        let server: Vec<&str> = common.into_iter().chain(["--server"]).collect();
        let client: Vec<&str> = common.into_iter().chain(["10.0.0.1"]).collect();
        let [s, c] = two_processes(base, &server, &client);
        for (name, r) in [("server", &s), ("client", &c)] {
            assert_eq!((r["pass"].as_bool(), r["rx_drop_bad_icrc"].as_u64()), (Some(true), Some(0)), "{op} {name}");
            retransmitted += r["retransmitted_packets"].as_u64().unwrap_or(0);
        }
        // The client always measures; what it checked is named.
        let line = &c["results"][0];
        assert!(line["bw"]["iters"].as_u64() == Some(60) || line["lat"]["t_avg"].as_f64() > Some(0.0), "{op}: {c}");
        assert!(!line["checked"].as_str().unwrap_or("").is_empty(), "{op}: {c}");
        if op == "atomic" {
            assert!(s["results"][0]["checked"].as_str().unwrap_or("").contains("60 fetch-and-adds"), "{s}");
        }
    }
    assert!(retransmitted > 0, "2% loss never cost a retransmission");
}

/// perftest's options on `--link`, ferrite on both ends (two processes, 2% loss on the client's side):
/// several QPs, every size, compare-and-swap, completion events with a READ depth, both directions at once,
/// a duration the server follows, and the two ways a run ends early: an option refused before the
/// exchange, and a peer that fails mid-run (its WRITEs past the server's buffer), both noticed at once.
#[test]
fn perf_link_perftest_options_between_two_processes() {
    let base = 46000 + (std::process::id() % 1000) as u16 * 2;
    let run = |i: u16, op: &str, server: &[&str], client: &[&str]| {
        let port = (18700 + i).to_string();
        let common = ["perf", op, "--link", "-p", &port, "--timeout", "60", "--json"];
        let srv: Vec<&str> = common.iter().copied().chain(["--server"]).chain(server.iter().copied()).collect();
        let cli: Vec<&str> = common.iter().copied().chain(["10.0.0.1"]).chain(client.iter().copied()).collect();
        two_processes(base, &srv, &cli)
    };
    let checked = |r: &serde_json::Value| r["results"][0]["checked"].as_str().unwrap_or("").to_string();

    let [s, c] = run(0, "write", &["-q", "3", "-a"], &["-q", "3", "-a", "-n", "3"]);
    let sizes: Vec<u64> = c["results"].as_array().unwrap().iter().filter_map(|r| r["size"].as_u64()).collect();
    assert_eq!(sizes, (1..24).map(|i| 1u64 << i).collect::<Vec<_>>(), "-a: 2 B to 8 MiB");
    assert_eq!(c["results"][22]["bw"]["iters"].as_u64(), Some(9), "3 per QP on 3 QPs: {c}");
    assert_eq!((s["results"][0]["size"].as_u64(), s["qps"].as_u64()), (Some(8 << 20), Some(3)), "{s}");

    let [s, c] = run(1, "atomic", &["-q", "2"], &["-q", "2", "-A", "CMP_AND_SWAP", "-n", "50"]);
    assert!(checked(&s).starts_with("100 compare-and-swaps executed"), "{s}");
    assert!(checked(&c).contains("each returned the previous swap's value"), "{c}");

    let [_, c] = run(2, "read", &[], &["-e", "-o", "2", "-n", "50", "-s", "3000"]);
    assert_eq!(c["out_reads"].as_u64(), Some(2), "{c}");
    assert!(c["cq_events"].as_u64() > Some(0), "-e took no completion event: {c}");

    let [s, c] = run(3, "write", &["-b", "-n", "40"], &["-b", "-n", "40", "--report_gbits"]);
    for r in [&s, &c] {
        assert_eq!(r["results"][0]["peer_bw"]["iters"].as_u64(), Some(40), "-b: both sides ran: {r}");
    }
    assert_eq!(c["unit"].as_str(), Some("Gb/sec"));

    let [s, c] =
        run(5, "send", &["-b", "-q", "2", "-n", "30", "-s", "3000"], &["-b", "-q", "2", "-n", "30", "-s", "3000"]);
    for r in [&s, &c] {
        assert_eq!(r["results"][0]["peer_bw"]["iters"].as_u64(), Some(60), "-b: both sides sent: {r}");
        assert!(checked(r).ends_with("; 60 receives of 3000 bytes"), "{r}");
    }

    let [s, c] = run(4, "send", &[], &["-D", "2", "-s", "3000"]);
    assert_eq!(c["duration_s"].as_u64(), Some(2));
    assert!(
        s["results"][0]["bw"]["iters"].as_u64() > Some(0) && checked(&s).ends_with("receives of 3000 bytes"),
        "{s}"
    );

    for r in run(7, "send-lat", &["-D", "2", "-s", "64"], &["-D", "2", "-s", "64"]) {
        let d = &r["results"][0]["lat_duration"];
        assert!(d["iters"].as_u64() > Some(10) && d["t_avg"].as_f64() > Some(0.0), "-D on a latency tool: {r}");
    }

    // Frames corrupted on their way to the server: dropped on their ICRC, counted, recovered; the run passes
    // unless the server was told to be strict.
    let [s, _] = run(6, "write", &["--corrupt", "0.02", "--seed", "3"], &["-n", "100", "-s", "8192"]);
    assert!(s["rx_drop_bad_icrc"].as_u64() > Some(0) && s["pass"] == true, "{s}");
    let common = ["perf", "write", "--link", "-p", "18712", "--timeout", "60", "--json", "-n", "100", "-s", "8192"];
    let srv: Vec<&str> = common.iter().copied().chain(["--server", "--corrupt", "0.02", "--strict-icrc"]).collect();
    let cli: Vec<&str> = common.iter().copied().chain(["10.0.0.1"]).collect();
    let [(_, s), _] = two_outputs(base, &srv, &cli);
    let v = json(&String::from_utf8_lossy(&s.stdout));
    assert!(!s.status.success() && v["detail"].as_str().unwrap_or("").contains("bad ICRC (--strict-icrc)"), "{v}");

    // Refused before the exchange: the peer sees its connection close and ends too.
    let t0 = std::time::Instant::now();
    let common = ["perf", "write", "--link", "-p", "18710", "--timeout", "60", "--json"];
    let srv: Vec<&str> = common.iter().copied().chain(["--server", "--run_infinitely"]).collect();
    let cli: Vec<&str> = common.iter().copied().chain(["10.0.0.1"]).collect();
    let [(_, s), (_, c)] = two_outputs(base, &srv, &cli);
    assert!(!s.status.success() && !c.status.success());
    assert!(String::from_utf8_lossy(&s.stderr).contains("refused before the exchange"), "{s:?}");
    assert!(String::from_utf8_lossy(&c.stdout).contains("the peer closed the exchange"), "{c:?}");
    // A WRITE past the server's buffer: NAKed, the client fails, and the server says so at once.
    let common = ["perf", "write", "--link", "-p", "18711", "--timeout", "60", "--json", "-n", "10"];
    let srv: Vec<&str> = common.iter().copied().chain(["--server", "-s", "4096"]).collect();
    let cli: Vec<&str> = common.iter().copied().chain(["10.0.0.1", "-s", "65536"]).collect();
    let [(_, s), (_, c)] = two_outputs(base, &srv, &cli);
    assert!(!s.status.success() && !c.status.success());
    assert!(json(&String::from_utf8_lossy(&s.stdout))["detail"]
        .as_str()
        .unwrap_or("")
        .contains("1 x remote access error"));
    assert!(json(&String::from_utf8_lossy(&c.stdout))["detail"].as_str().unwrap_or("").contains("RemAccessErr"));
    assert!(t0.elapsed() < std::time::Duration::from_secs(30), "the early ends waited for a timeout");
}

/// A `perf --link` server whose client vanishes mid-run (its process killed: no FIN, its NIC gone with it)
/// ends once nothing has arrived for its `--timeout`, saying so, rather than waiting for good.
#[test]
fn perf_link_server_ends_when_its_client_vanishes() {
    use std::time::{Duration, Instant};
    let base = 48000 + (std::process::id() % 1000) as u16 * 2;
    let (a, b) = (format!("127.0.0.1:{base}"), format!("127.0.0.1:{}", base + 1));
    let bin = env!("CARGO_BIN_EXE_ferrite");
    let common = ["perf", "write", "--link", "-p", "18720", "--timeout", "5", "--json"];
    let mut srv = Command::new(bin)
        .args(common)
        .args(["--server", "--local", &a, "--remote", &b, "--ip", "10.0.0.1/24", "--mac", "02:00:00:00:00:01"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ferrite");
    let mut cli = Command::new(bin)
        .args(common)
        .args(["10.0.0.1", "-D", "60", "--local", &b, "--remote", &a, "--ip", "10.0.0.2/24"])
        .args(["--mac", "02:00:00:00:00:02"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run ferrite");
    // The exchange done and the client's 60-second run under way, the client goes.
    std::thread::sleep(Duration::from_secs(8));
    let _ = cli.kill();
    let _ = cli.wait();
    let gone = Instant::now();
    while srv.try_wait().expect("the server's status").is_none() && gone.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = srv.kill();
    let out = srv.wait_with_output().expect("the server's output");
    let waited = gone.elapsed();
    let v = json(&String::from_utf8_lossy(&out.stdout));
    let detail = v["detail"].as_str().unwrap_or("");
    assert!(!out.status.success() && v["pass"] == false, "{v}");
    assert!(
        detail.contains("nothing arrived from the peer for 5 s while ferrite waited for the client's end of the run"),
        "{v}"
    );
    assert!(waited < Duration::from_secs(30), "the server ended {waited:?} after its client went");
}

/// perftest's options are for a run against perftest, and refused between simulated NICs.
#[test]
fn perftest_options_need_a_link() {
    let out = Command::new(env!("CARGO_BIN_EXE_ferrite")).args(["perf", "write", "-a"]).output().expect("run ferrite");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("add --link"), "{err}");
}

/// The latency modes need a peer; a peer needs `--link`.
/// A 0-byte WRITE that completed has nothing to check, which is not a mismatch; messages shorter than their
/// 8-byte slot are checked on the bytes they move.
#[test]
fn perf_checks_what_zero_and_short_messages_move() {
    let (ok, v, out) = ferrite_json(&["perf", "write", "--size", "0", "--iters", "1", "--json"]);
    assert!(ok, "{out}");
    assert_eq!(
        (v["data_ok"].as_bool(), v["completions_ok"].as_bool(), v["bytes"].as_u64()),
        (Some(true), Some(true), Some(0))
    );
    for op in ["write", "read", "send"] {
        let (ok, v, out) = ferrite_json(&["perf", op, "--size", "3", "--iters", "4", "--qps", "2", "--json"]);
        assert!(ok && v["data_ok"] == true, "{op}: {out}");
    }
}

/// A link rate the simulated links cannot run is refused before anything runs, with the option named.
#[test]
fn perf_refuses_a_link_rate_it_cannot_run() {
    for rate in ["0", "-1", "2000", "NaN"] {
        let out = Command::new(env!("CARGO_BIN_EXE_ferrite"))
            .args(["perf", "write", "--iters", "1", &format!("--link-gbps={rate}")])
            .output()
            .expect("run ferrite");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--link-gbps {rate}: {err}");
        assert!(err.contains("--link-gbps"), "--link-gbps {rate}: {err}");
    }
    let (ok, v, out) = ferrite_json(&["perf", "write", "--iters", "4", "--link-gbps", "0.5", "--json"]);
    assert!(ok && v["data_ok"] == true, "a slow link runs: {out}");
}

/// `ferrite profile`: each profile's limits, its QP context bits and the block RAM of its tables; the board
/// profile's within its budget (`BOARD_DP16KD_BUDGET`).
#[test]
fn profile_reports_limits_context_bits_and_block_ram() {
    let (ok, b, out) = ferrite_json(&["profile", "board", "--json"]);
    assert!(ok, "{out}");
    assert_eq!(
        (b["max_qp"].as_u64(), b["max_sge"].as_u64(), b["max_qp_rd_atom"].as_u64()),
        (Some(256), Some(4), Some(4))
    );
    let dp16kd = b["dp16kd"].as_u64().unwrap();
    assert!(dp16kd <= wire::contract::qpc::BOARD_DP16KD_BUDGET, "{dp16kd} DP16KD");
    let tables = b["tables"].as_array().unwrap();
    let sum: u64 = tables.iter().map(|t| t["dp16kd"].as_u64().unwrap()).sum();
    assert_eq!(sum, dp16kd, "the total is the tables'");
    assert!(tables.iter().any(|t| t["table"] == "qp_attr") && b["bits_per_qp"].as_u64().unwrap() > 1000);
    let (ok, l, _) = ferrite_json(&["profile", "large", "--json"]);
    assert!(ok && l["max_qp"] == 16384 && l["ramb36"].as_u64() > b["ramb36"].as_u64());
}

/// `ferrite soak --follow`: every NIC's decisions replayed into a fresh model, as recorded and perturbed.
#[test]
fn soak_follows_recorded_and_perturbed_decisions() {
    for mode in ["exact", "perturb"] {
        let (ok, v, out) = ferrite_json(&["soak", "--scenarios", "3", "--seed", "7", "--follow", mode, "--json"]);
        assert!(ok, "{mode}: {out}");
        assert!(v["follow_events"].as_u64().unwrap() > 1000, "{mode}: {out}");
        assert_eq!((v["follow_mismatches"].as_u64(), v["illegal_decisions"].as_u64()), (Some(0), Some(0)), "{mode}");
        assert_eq!(v["follow"], mode);
    }
    let (ok, v, _) = ferrite_json(&["soak", "--scenarios", "2", "--profile", "large", "--json"]);
    assert!(ok && v["profile"] == "large" && v["passed"] == 2);
}

/// `ferrite soak --backend rtl`: the soak generator's scenarios, lossless, on two RTL cores of each width,
/// each followed by its model: every work request completes, the data intact, 0 mismatches.
#[test]
fn soak_runs_on_two_rtl_cores_in_lockstep() {
    // Seeds 1, 6 and 7 at 8 bytes fire ACK timers while 4 KiB frames are placed and packets built: late by
    // more than the model allowed before the transmit sides yielded to an offered timer.
    for (width, scenarios, seed) in [("8", 7, "1"), ("64", 3, "2")] {
        let n = scenarios.to_string();
        let args = ["soak", "--backend", "rtl", "--width", width, "--scenarios", &n, "--seed", seed, "--json"];
        let (ok, v, out) = ferrite_json(&args);
        assert!(ok, "{width}: {out}");
        assert_eq!((v["backend"].as_str(), v["width"].as_u64()), (Some("rtl"), width.parse().ok()), "{out}");
        assert_eq!((v["passed"].as_u64(), v["lockstep_mismatches"].as_u64()), (Some(scenarios), Some(0)), "{out}");
        assert!(v["lockstep_events"].as_u64().unwrap() > 1000 && v["cycles"].as_u64().unwrap() > 0, "{out}");
    }
    let (ok, _) = ferrite(&["soak", "--backend", "rtl", "--follow", "exact"]);
    assert!(!ok, "--follow is the model's");
}

#[test]
fn perf_refuses_modes_without_their_link() {
    for args in [&["perf", "write-lat"][..], &["perf", "write", "--server"], &["perf", "send", "--link"]] {
        let (ok, _) = ferrite(args);
        assert!(!ok, "{args:?}");
    }
}

/// `ferrite interop rxe`: ferrite's model NIC against Linux soft-RoCE in a QEMU guest: rc_pingpong and
/// perftest's seven tools in both roles at path MTU 1024 and 4096, 1 B to 1 MiB, with and without 1% loss on
/// ferrite's side, and the guest's ping answered by the NIC. Each role's first guest stages a stopped
/// transmit queue in one case: a fresh guest runs it again and the rest. Needs root (it
/// makes its own network namespace) and what `scripts/setup.sh` installs.
#[test]
fn interop_with_linux_rxe() {
    let stall = "ib_read_bw-events";
    let (ok, cases, out) =
        interop_rxe(&["--json", "--work", "target/interop/ci", "--stage-stall", stall, "--budget", "1500"]);
    let cases = cases.as_array().expect("an array of cases");
    assert_eq!(cases.len(), 110, "{out}");
    for c in cases {
        let detail = c["detail"].as_str().unwrap_or("");
        assert_eq!(c["pass"].as_bool(), Some(true), "{detail}");
        assert_eq!(c["backend"].as_str(), Some("model"));
        if c["name"].as_str() == Some(stall) {
            assert!(detail.contains("run again in a fresh guest") && detail.contains("(staged)"), "{detail}");
        }
    }
    for role in ["server", "client"] {
        assert_eq!(cases.iter().filter(|c| c["role"].as_str() == Some(role)).count(), 55);
    }
    assert!(ok);
}

/// `ferrite interop rxe --backend rtl`: the Verilated 8-byte core, in lockstep with the model, against Linux
/// soft-RoCE in a QEMU guest: rc_pingpong (1 B and 4 KiB) and each of perftest's seven tools once at path MTU
/// 1024 with its smallest message, in both roles, and the guest's ping answered by the core. Each case's
/// report shows the model following the core's decisions with no mismatch. (The whole lossless matrix, 1 B
/// to 1 MiB at both MTUs, is in BENCHMARKS.md.)
#[test]
fn interop_of_the_rtl_core_with_linux_rxe() {
    let only = "pingpong-mtu1024-4096B,mtu1024-1B,mtu1024-2B,atomic_bw-mtu1024";
    let (ok, cases, out) = interop_rxe(&[
        "--backend",
        "rtl",
        "--json",
        "--work",
        "target/interop/ci-rtl",
        "--only",
        only,
        "--budget",
        "600",
    ]);
    let cases = cases.as_array().expect("an array of cases");
    for role in ["server", "client"] {
        let mut names: Vec<&str> =
            cases.iter().filter(|c| c["role"].as_str() == Some(role)).filter_map(|c| c["name"].as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "ib_atomic_bw-mtu1024-8B",
                "ib_read_bw-mtu1024-1B",
                "ib_read_lat-mtu1024-2B",
                "ib_send_bw-mtu1024-1B",
                "ib_send_lat-mtu1024-2B",
                "ib_write_bw-mtu1024-1B",
                "ib_write_lat-mtu1024-2B",
                "ping-the-nic",
                "pingpong-mtu1024-1B",
                "pingpong-mtu1024-4096B",
            ],
            "{out}"
        );
    }
    in_lockstep(cases, "rtl");
    assert!(ok);
}

/// The 64-byte core (`--width 64`, `--device rtl:64`) against rxe the same way: rc_pingpong and the three
/// bandwidth tools at 1 B, PMTU 1024, both roles, and the guest's ping.
#[test]
fn interop_of_the_64_byte_core_with_linux_rxe() {
    let args = ["--backend", "rtl", "--width", "64", "--json", "--work", "target/interop/ci-rtl64", "--only"];
    let (ok, cases, out) = interop_rxe(&[&args[..], &["mtu1024-1B", "--budget", "300"]].concat());
    let cases = cases.as_array().expect("an array of cases");
    assert_eq!(cases.len(), 10, "{out}");
    in_lockstep(cases, "rtl:64");
    assert!(ok);
}

/// Each case passed on `backend`, and each tool's report shows the model following the core (more than 100
/// decisions) with no mismatch.
fn in_lockstep(cases: &[serde_json::Value], backend: &str) {
    for c in cases {
        let detail = c["detail"].as_str().unwrap_or("");
        assert_eq!(c["pass"].as_bool(), Some(true), "{detail}");
        assert_eq!(c["backend"].as_str(), Some(backend));
        if c["name"].as_str() == Some("ping-the-nic") {
            continue;
        }
        // ferrite's own report, as the case's detail carries it: "ferrite (T s): {...}; guest rc: ...".
        let report = detail.split_once("): ").and_then(|(_, r)| r.split_once("; guest rc")).map(|(r, _)| json(r));
        let l = &report.unwrap_or_else(|| panic!("no report of ferrite's in {detail}"))["lockstep"];
        assert!(l["events"].as_u64().unwrap_or(0) > 100 && l["mismatches"].as_u64() == Some(0), "{detail}");
    }
}

/// `ferrite interop vfio`: the driver's VFIO layer on the real kernel, in a q35 guest with an emulated IOMMU
/// and QEMU's edu devices: open, config space, BAR0, a DMA round trip at the driver's IOVAs, MSI through the
/// eventfd, and every set-up error that can be staged (no permission, an unbound function, a non-viable
/// group, a function that is not a ferrite NIC, a machine without an IOMMU). Needs root and QEMU.
#[test]
fn interop_with_the_kernels_vfio() {
    let (ok, checks, out) = ferrite_json(&["interop", "vfio", "--json", "--work", "target/interop/ci-vfio"]);
    let checks = checks.as_array().expect("an array of checks");
    let mut names: Vec<&str> = checks.iter().filter_map(|c| c["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "bar0-registers",
            "cli-device-refuses-edu",
            "config-space",
            "devices-lists-vfio-functions",
            "dma-round-trip",
            "msi",
            "no-iommu",
            "no-permission",
            "non-viable-group",
            "open",
            "refuses-edu-as-a-nic",
            "unbound-function",
            "user-memory-dma"
        ],
        "{out}"
    );
    for c in checks {
        assert_eq!(c["pass"].as_bool(), Some(true), "{}: {}", c["name"], c["detail"]);
    }
    assert!(ok);
}

/// `perf --backend rtl`: the core answers WRITEs, SENDs and READs (two QPs, multi-packet messages) and
/// FETCH_ADDs with the data intact and lockstep clean, and its figures in the report; what it cannot run is
/// refused with a reason.
#[test]
fn perf_on_the_rtl_core_reports_cycles_efficiency_and_lockstep() {
    for op in ["write", "send", "read"] {
        let args = ["perf", op, "--backend", "rtl", "--size", "3000", "--iters", "6", "--qps", "2", "--json"];
        let (ok, v, out) = ferrite_json(&args);
        assert!(ok, "{out}");
        assert_eq!((v["backend"].as_str(), v["data_ok"].as_bool()), (Some("rtl"), Some(true)), "{out}");
        assert_eq!(v["bytes"], 3000 * 6 * 2, "{out}");
        assert_eq!(v["lockstep_mismatches"], 0, "{out}");
        assert!(v["lockstep_events"].as_u64().unwrap() > 24, "every packet a decision followed: {out}");
        let (cycles, eff) = (v["cycles"].as_u64().unwrap(), v["efficiency"].as_f64().unwrap());
        assert!(cycles > 36_000 / 8 && eff > 0.0 && eff < 1.0, "{out}");
        assert_eq!(v["datapath_bytes"], 8, "{out}");
        // Each SEND's receive CQE is timed from its last packet in; WRITEs have none.
        assert_eq!(v["rx_to_cqe_cycles_max"].as_u64().is_some_and(|c| c > 0), op == "send", "{out}");
        assert!(v["doorbell_to_tx_cycles_max"].is_null(), "the core rings no SQ doorbell as responder: {out}");
    }
    // The core as the requester: its packets counted by its own counter block (3 a WRITE or SEND of 3000
    // bytes at PMTU 1024, 1 a READ or FETCH_ADD).
    for (op, bytes, packets) in [("write", 36_000, 36), ("send", 36_000, 36), ("read", 36_000, 12), ("atomic", 96, 12)]
    {
        let args = ["perf", op, "--backend", "rtl", "--rtl-requester", "--size", "3000", "--iters", "6", "--qps", "2"];
        let (ok, v, out) = ferrite_json(&[&args[..], &["--json"]].concat());
        assert!(ok, "{out}");
        assert_eq!((v["requester"].as_bool(), v["data_ok"].as_bool()), (Some(true), Some(true)), "{out}");
        assert_eq!((v["bytes"].as_u64(), v["packets"].as_u64()), (Some(bytes), Some(packets)), "{out}");
        assert_eq!(v["lockstep_mismatches"], 0, "{out}");
        assert!(v["lockstep_events"].as_u64().unwrap() >= packets, "every packet a decision followed: {out}");
        assert!(v["doorbell_to_tx_cycles_max"].as_u64().is_some_and(|c| c > 0), "{out}");
    }
    // A doorbell to an idle core: its WQE fetch (whose read the requester takes as its descriptor read) and
    // its payload read are two DMA round trips, which `--dma-latency-ns` sets.
    let lat = |ns: &str| {
        let args = ["perf", "write", "--backend", "rtl", "--rtl-requester", "--size", "64", "--iters", "1"];
        let (ok, v, out) = ferrite_json(&[&args[..], &["--dma-latency-ns", ns, "--json"]].concat());
        assert!(ok && v["lockstep_mismatches"] == 0, "{out}");
        v["doorbell_to_tx_cycles_max"].as_u64().expect("a doorbell timed")
    };
    let rounds = lat("500") - lat("0");
    let trips = 2 * (500 / 8 - 1);
    assert!((trips - 8..=trips).contains(&rounds), "two round trips of 62 cycles: {rounds}");
    // Bursts of 16: a later burst's doorbell meets the ACKs of the one before coming in; between two of
    // them the WQE's fetch and the transmit side have the context port (the dispatch's turn), so its first
    // packet leaves within a few ACKs' time: 240 cycles at most, where the ACKs all went first before.
    let args = ["perf", "write", "--backend", "rtl", "--rtl-requester", "--size", "64", "--iters", "48"];
    let (ok, v, out) = ferrite_json(&[&args[..], &["--dma-latency-ns", "0", "--json"]].concat());
    assert!(ok && v["lockstep_mismatches"] == 0, "{out}");
    assert!(v["doorbell_to_tx_cycles_max"].as_u64().is_some_and(|c| c < 300), "a burst held off: {out}");
    // A SEND to an idle core: its receive WQE's read is the one round trip from its last beat in to its CQE,
    // and without it the CQE is issued within the 64 cycles (61: the CRC's tail cut to the 8-byte
    // bus's stages, the WQE decided once its one SGE is in).
    let cqe = |ns: &str| {
        let args = ["perf", "send", "--backend", "rtl", "--size", "64", "--iters", "1", "--dma-latency-ns", ns];
        let (ok, v, out) = ferrite_json(&[&args[..], &["--json"]].concat());
        assert!(ok && v["lockstep_mismatches"] == 0 && v["data_ok"] == true, "{out}");
        v["rx_to_cqe_cycles_max"].as_u64().expect("a CQE timed")
    };
    let own = cqe("0");
    assert!(own <= 64, "last beat in to CQE in {own} cycles");
    assert_eq!(cqe("500") - own, 500 / 8 - 1, "one round trip of 62 cycles, less the one left");
    // FETCH_ADDs: each QP's word counts them.
    let args = ["perf", "atomic", "--backend", "rtl", "--iters", "6", "--qps", "2", "--json"];
    let (ok, v, out) = ferrite_json(&args);
    assert!(ok, "{out}");
    assert_eq!((v["data_ok"].as_bool(), v["bytes"].as_u64()), (Some(true), Some(8 * 6 * 2)), "{out}");
    assert_eq!(v["lockstep_mismatches"], 0, "{out}");
    // The 64-byte core at 250 MHz.
    let args = ["perf", "write", "--backend", "rtl", "--width", "64", "--size", "3000", "--iters", "6", "--qps", "2"];
    let (ok, v, out) = ferrite_json(&[&args[..], &["--json"]].concat());
    assert!(ok, "{out}");
    assert_eq!((v["data_ok"].as_bool(), v["bytes"].as_u64()), (Some(true), Some(3000 * 6 * 2)), "{out}");
    assert_eq!((v["datapath_bytes"].as_u64(), v["clock_mhz"].as_f64()), (Some(64), Some(250.0)), "{out}");
    assert_eq!(v["lockstep_mismatches"], 0, "{out}");
    for (refused, why) in
        [(["--width", "16", "--core-qps", "16"], "--width"), (["--width", "64", "--core-qps", "1024"], "--core-qps")]
    {
        let out = Command::new(env!("CARGO_BIN_EXE_ferrite"))
            .args(["perf", "write", "--backend", "rtl"])
            .args(refused)
            .output()
            .expect("run ferrite");
        assert!(!out.status.success(), "{refused:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(why), "{refused:?}: a reason given");
    }
    if !sim::LARGE_CORE {
        let out = Command::new(env!("CARGO_BIN_EXE_ferrite"))
            .args(["perf", "write", "--backend", "rtl", "--core-qps", "16384"])
            .output()
            .expect("run ferrite");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("no such core; build with `--features large-core`"), "{err}");
    }
}
