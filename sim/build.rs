//! Generates the Verilog of every hdl top at both widths, lints it (`verilator --lint-only -Wall` with the
//! waivers in `hdl/verilator.vlt`; any other warning fails the build), Verilates it, writes the C++ glue
//! that puts each model behind `ferrite::Model`, and compiles it all with the cxx bridge. Each model is a
//! library of its own, built again only when its Verilog (or the waivers) changed; the Verilator runtime
//! comes prebuilt from `sim-rt`. So a change to one block rebuilds that block's models and the glue.

use hdl::top::{Dir, Port, Top};

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=RUSTC_WORKSPACE_WRAPPER");
    if clippy() {
        return;
    }
    // FST tracing only in a build that asks for it (`--features waves`): without it the models carry no
    // change tracking and the glue's trace calls do nothing.
    let waves = std::env::var_os("CARGO_FEATURE_WAVES").is_some();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let root = PathBuf::from(std::env::var("DEP_VERILATED_RT_ROOT").unwrap_or_else(|_| "/usr/share/verilator".into()));
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let vlt = manifest.join("../hdl/verilator.vlt");
    let vlt_text = std::fs::read_to_string(&vlt).unwrap();
    let inc = root.join("include");
    let mut glue = String::from("#include \"ferrite-sim/cpp/model.h\"\n#include \"verilated.h\"\n#include <string>\n");
    if waves {
        glue.push_str("#include \"verilated_fst_c.h\"\n");
    }
    let mut factory = String::new();
    let mut build = cxx_build::bridge("src/ffi.rs");
    let mut libs = Vec::new();
    let mut stale = Vec::new();
    let large = std::env::var_os("CARGO_FEATURE_LARGE_CORE").is_some();
    for top in Top::ALL.into_iter().chain(large.then_some(Top::LARGE_CORE)) {
        for &w in top.widths() {
            let name = top.name(w);
            let text = top.verilog(w);
            let mdir = out.join(format!("obj_{name}"));
            let lib = format!("ferrite_vm_{name}");
            // A model is built again only when its Verilog, the waivers or the runtime's configuration changed
            // since it was last built.
            let stamp = out.join(format!("{name}.built"));
            let key = format!(
                "{} waves={waves}\n{vlt_text}\n// ----\n{text}",
                std::env::var("DEP_VERILATED_RT_DEFINES").unwrap_or_default()
            );
            let fresh =
                std::fs::read_to_string(&stamp).is_ok_and(|k| k == key) && out.join(format!("lib{lib}.a")).exists();
            if !fresh {
                stale.push(Stale { name: name.clone(), text, key, stamp, mdir: mdir.clone(), lib: lib.clone(), waves });
            }
            libs.push(lib);
            build.include(&mdir);
            glue_for(&mut glue, &name, &top.ports(w), waves);
            writeln!(factory, "    if (n == \"{name}\") return std::make_unique<Model_{name}>();").unwrap();
        }
    }
    build_models(stale, &out, &vlt, &inc);
    write!(glue, "\nnamespace ferrite {{\nstd::unique_ptr<Model> new_model(rust::Str name) {{\n    std::string n(name);\n{factory}    return nullptr;\n}}\n}}\n").unwrap();
    let glue_path = out.join("models.cpp");
    std::fs::write(&glue_path, glue).unwrap();
    cxx(build, &inc).file(&glue_path).compile("ferrite_sim_models");
    for lib in libs {
        println!("cargo:rustc-link-lib=static={lib}");
    }
    println!("cargo:rerun-if-changed=src/ffi.rs");
    println!("cargo:rerun-if-changed=cpp/model.h");
    println!("cargo:rerun-if-changed={}", vlt.display());
    println!("cargo:rerun-if-changed=build.rs");
}

/// A model whose Verilog (or configuration) changed since it was built: its name, Verilog, stamp key and
/// file, Verilator's output folder and the library it becomes.
struct Stale {
    name: String,
    text: String,
    key: String,
    stamp: PathBuf,
    mdir: PathBuf,
    lib: String,
    /// Verilated with FST tracing.
    waves: bool,
}

/// Lints, Verilates and compiles the stale models, as many at once as cargo gives the build jobs (each
/// model's steps are single-threaded; the largest go first so the last to finish is a small one).
fn build_models(mut stale: Vec<Stale>, out: &std::path::Path, vlt: &std::path::Path, inc: &std::path::Path) {
    stale.sort_by_key(|m| std::cmp::Reverse(m.text.len()));
    let jobs = std::env::var("NUM_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(1usize).max(1);
    let queue = std::sync::Mutex::new(stale.into_iter());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let Some(m) = queue.lock().unwrap().next() else { break };
                build_model(&m, out, vlt, inc);
            });
        }
    });
}

fn build_model(m: &Stale, out: &std::path::Path, vlt: &std::path::Path, inc: &std::path::Path) {
    let _ = std::fs::remove_file(&m.stamp);
    let v = out.join(format!("{}.v", m.name));
    std::fs::write(&v, &m.text).unwrap();
    run(Command::new("verilator").args(["--lint-only", "-Wall", "--top-module", "top"]).arg(vlt).arg(&v));
    let _ = std::fs::remove_dir_all(&m.mdir);
    run(Command::new("verilator")
        .args(["--cc", "--top-module", "top", "--prefix", &format!("V{}", m.name)])
        .args(["-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal"])
        .args(m.waves.then_some("--trace-fst"))
        .arg("--Mdir")
        .arg(&m.mdir)
        .arg(vlt)
        .arg(&v));
    let mut model = cxx(cc::Build::new(), inc);
    for f in std::fs::read_dir(&m.mdir).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|e| e == "cpp") {
            model.file(p);
        }
    }
    // Linked after the glue that refers to it (below), so its link line is written by hand.
    model.include(&m.mdir).cargo_metadata(false).compile(&m.lib);
    std::fs::write(&m.stamp, &m.key).unwrap();
}

/// Under `cargo clippy` nothing is linked, so the models are not needed: Verilating and compiling them again
/// (clippy's build scripts do not share the test build's output) would double CI's longest step.
fn clippy() -> bool {
    std::env::var("RUSTC_WORKSPACE_WRAPPER").is_ok_and(|w| w.contains("clippy"))
}

/// The compiler settings every Verilated model and the glue are built with: the runtime's configuration, as
/// `sim-rt` hands it on.
fn cxx(mut b: cc::Build, inc: &std::path::Path) -> cc::Build {
    let defines = std::env::var("DEP_VERILATED_RT_DEFINES").expect("sim-rt hands on the runtime's defines");
    for d in defines.split_whitespace() {
        let (k, v) = d.split_once('=').expect("NAME=value");
        b.define(k, v);
    }
    b.std("c++17")
        .include(inc)
        .include(inc.join("vltstd"))
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-unused-variable")
        .flag_if_supported("-Wno-unused-but-set-variable")
        .opt_level(2);
    b
}

fn run(cmd: &mut Command) {
    let shown = format!("{cmd:?}");
    let o = cmd.output().unwrap_or_else(|e| panic!("cannot run {shown}: {e} (is Verilator installed? `make setup`)"));
    if !o.status.success() {
        panic!("{shown} failed:\n{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    }
}

/// The C++ class putting `V{name}` behind `ferrite::Model`; with `waves`, its FST trace too.
fn glue_for(s: &mut String, name: &str, ports: &[Port], waves: bool) {
    let cls = format!("V{name}");
    writeln!(s, "#include \"{cls}.h\"").unwrap();
    writeln!(s, "namespace ferrite {{\nclass Model_{name} : public Model {{").unwrap();
    writeln!(s, "    std::unique_ptr<VerilatedContext> ctx;\n    std::unique_ptr<{cls}> m;").unwrap();
    if waves {
        writeln!(s, "    std::unique_ptr<VerilatedFstC> tfp;").unwrap();
    }
    let ever_on = if waves { " ctx->traceEverOn(true); " } else { " " };
    writeln!(
        s,
        "public:\n    Model_{name}() : ctx(new VerilatedContext), m(new {cls}(ctx.get(), \"top\")) {{{ever_on}}}"
    )
    .unwrap();
    writeln!(s, "    ~Model_{name}() override {{ trace_close(); m->final(); }}").unwrap();
    writeln!(s, "    void eval() override {{ m->eval(); }}").unwrap();
    // One clock cycle in one call: the falling edge, then the rising one, each settled (and dumped).
    if ports.iter().any(|p| p.name == "clock") {
        writeln!(
            s,
            "    void tick(uint64_t t, bool dump) override {{ m->clock = 0; m->eval(); if (dump) trace_dump(t); m->clock = 1; m->eval(); if (dump) trace_dump(t + 1); }}"
        )
        .unwrap();
    } else {
        writeln!(s, "    void tick(uint64_t, bool) override {{ m->eval(); }}").unwrap();
    }
    writeln!(
        s,
        "    void set_port(uint32_t port, rust::Slice<const uint32_t> w) override {{\n        switch (port) {{"
    )
    .unwrap();
    for (i, p) in ports.iter().enumerate().filter(|(_, p)| p.dir == Dir::In) {
        writeln!(s, "        case {i}: {} break;", assign_in(p)).unwrap();
    }
    writeln!(s, "        default: break;\n        }}\n    }}").unwrap();
    writeln!(
        s,
        "    void get_port(uint32_t port, rust::Slice<uint32_t> w) const override {{\n        switch (port) {{"
    )
    .unwrap();
    for (i, p) in ports.iter().enumerate() {
        writeln!(s, "        case {i}: {} break;", read_out(p)).unwrap();
    }
    writeln!(s, "        default: break;\n        }}\n    }}").unwrap();
    if waves {
        writeln!(s, "    bool trace_open(rust::Str path) override {{ tfp.reset(new VerilatedFstC); m->trace(tfp.get(), 99); tfp->open(std::string(path).c_str()); return true; }}").unwrap();
        writeln!(s, "    void trace_dump(uint64_t t) {{ if (tfp) tfp->dump(t); }}").unwrap();
        writeln!(s, "    void trace_close() override {{ if (tfp) {{ tfp->close(); tfp.reset(); }} }}").unwrap();
    } else {
        writeln!(s, "    bool trace_open(rust::Str) override {{ return false; }}").unwrap();
        writeln!(s, "    void trace_dump(uint64_t) {{}}").unwrap();
        writeln!(s, "    void trace_close() override {{}}").unwrap();
    }
    writeln!(s, "}};\n}}").unwrap();
}

fn words(p: &Port) -> usize {
    p.bits.div_ceil(32)
}

fn assign_in(p: &Port) -> String {
    let n = p.name;
    match p.bits {
        0..=32 => format!("if (w.size() >= 1) m->{n} = w[0];"),
        33..=64 => format!("if (w.size() >= 2) m->{n} = (QData)w[0] | ((QData)w[1] << 32);"),
        _ => format!("for (size_t i = 0; i < {} && i < w.size(); ++i) m->{n}[i] = w[i];", words(p)),
    }
}

fn read_out(p: &Port) -> String {
    let n = p.name;
    match p.bits {
        0..=32 => format!("if (w.size() >= 1) w[0] = m->{n};"),
        33..=64 => format!("if (w.size() >= 2) {{ w[0] = (uint32_t)m->{n}; w[1] = (uint32_t)(m->{n} >> 32); }}"),
        _ => format!("for (size_t i = 0; i < {} && i < w.size(); ++i) w[i] = m->{n}[i];", words(p)),
    }
}
