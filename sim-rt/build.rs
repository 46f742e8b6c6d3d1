//! Compiles the Verilator runtime once, in its own crate, so that a change to the generated Verilog only
//! rebuilds the models (the runtime alone takes ~15 s on two cores). Tells dependants where Verilator's
//! headers are through `DEP_VERILATED_RT_ROOT`, and the configuration it is compiled with (which the models
//! must share) through `DEP_VERILATED_RT_DEFINES`.

use std::path::PathBuf;

/// The Verilator runtime's configuration (no coverage, no SystemC, FST tracing), which every model shares.
const DEFINES: [(&str, &str); 4] = [("VM_COVERAGE", "0"), ("VM_SC", "0"), ("VM_TRACE", "1"), ("VM_TRACE_FST", "1")];

fn main() {
    let root = PathBuf::from(std::env::var("VERILATOR_ROOT").unwrap_or_else(|_| "/usr/share/verilator".into()));
    let inc = root.join("include");
    if !inc.join("verilated.h").exists() {
        panic!(
            "Verilator headers not found under {} (install Verilator: `make setup`, or set VERILATOR_ROOT)",
            inc.display()
        );
    }
    let mut build = cc::Build::new();
    for (k, v) in DEFINES {
        build.define(k, v);
    }
    build
        .cpp(true)
        .std("c++17")
        .include(&inc)
        .include(inc.join("vltstd"))
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-deprecated-declarations")
        .file(inc.join("verilated.cpp"))
        // Needed even single-threaded: the runtime refers to VlThreadPool.
        .file(inc.join("verilated_threads.cpp"))
        .file(inc.join("verilated_fst_c.cpp"))
        .compile("verilated_rt");
    println!("cargo:rustc-link-lib=z");
    println!("cargo:rustc-link-lib=pthread");
    println!("cargo:root={}", root.display());
    // The models must be compiled with the runtime's configuration: `DEP_VERILATED_RT_DEFINES` hands it on.
    let defines: Vec<String> = DEFINES.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("cargo:defines={}", defines.join(" "));
    println!("cargo:rerun-if-env-changed=VERILATOR_ROOT");
    println!("cargo:rerun-if-changed=build.rs");
}
