//! ferrite `sim`: the hdl tops, Verilated and driven cycle by cycle from Rust.
//!
//! `Sim` owns one model: named ports, `tick` for one clock cycle, opt-in FST waves. Tracing is compiled in
//! only with the `waves` feature (`cargo test --features waves`, `cargo run --features waves`; the models
//! run faster without it); then `FERRITE_WAVES=1` writes the whole run to `target/waves/<top>_<n>.fst`, and
//! `FERRITE_WAVES=<from>:<to>` only cycles `from` to `to` (a lockstep mismatch names such a window).
//! `stream` has the stream driver and monitor with seeded bubbles.

mod ffi;
// The Verilator runtime the models link against (a dependency nothing in Rust names is not linked).
use sim_rt as _;
pub mod core;
pub mod fetch;
pub mod frames;
pub mod lockstep;
pub mod record;
pub mod responder;
pub mod rx;
pub mod stream;

use cxx::UniquePtr;
use hdl::top::{Dir, Port, Top};
use hdl::Width;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A Verilated top.
pub struct Sim {
    model: UniquePtr<ffi::bridge::Model>,
    ports: Vec<Port>,
    /// Whether the top has a clock (a combinational top is only `eval`ed).
    clocked: bool,
    /// Half clock periods since the start.
    time: u64,
    /// The cycles dumped to the FST file, when one is open.
    waves: Option<Range<u64>>,
    pub name: String,
}

// SAFETY: a Verilated model (built without --threads) keeps its state in its own objects and has no thread
// affinity, so it may move to another thread; `Sim` gives access only through `&mut self` or `&self` reads
// of ports, and the driver's RTL backend holds it behind a mutex, so no two threads use it at once.
unsafe impl Send for Sim {}

static WAVE_FILES: AtomicUsize = AtomicUsize::new(0);
static WAVES_WARNED: AtomicBool = AtomicBool::new(false);

/// The cycles `FERRITE_WAVES` asks to be dumped (`waves_window`); a value it does not take is reported once.
fn waves_asked() -> Option<Range<u64>> {
    let v = std::env::var("FERRITE_WAVES").ok()?;
    let window = waves_window(&v);
    if window.as_ref().is_err() && !WAVES_WARNED.swap(true, Ordering::Relaxed) {
        eprintln!("waves: FERRITE_WAVES={v} is neither 0, 1 nor <from>:<to> (cycles); no waves written");
    }
    window.ok().flatten()
}

/// The cycles a `FERRITE_WAVES` value names: `1` all of them, `<from>:<to>` cycles `from` to `to`, `0` or
/// nothing none; `Err` for anything else.
fn waves_window(v: &str) -> Result<Option<Range<u64>>, ()> {
    match v.split_once(':') {
        None if v == "1" => Ok(Some(0..u64::MAX)),
        None if v == "0" || v.is_empty() => Ok(None),
        None => Err(()),
        Some((a, b)) => match (a.parse::<u64>(), b.parse::<u64>()) {
            (Ok(a), Ok(b)) if a <= b => Ok(Some(a..b.saturating_add(1))),
            _ => Err(()),
        },
    }
}

/// Whether this build simulates the large profile's core too (`Top::LARGE_CORE`, `--features large-core`).
pub const LARGE_CORE: bool = cfg!(feature = "large-core");

/// The command that writes waves for cycles `from..=to` of a run (a mismatch's report names it).
pub fn waves_hint(from: u64, to: u64) -> String {
    format!("FERRITE_WAVES={from}:{to} with `--features waves` writes the waves around it")
}

impl Sim {
    /// Instantiates `top` at width `w`. Panics if this build has no such model (a build script bug).
    pub fn new(top: Top, w: Width) -> Sim {
        let name = top.name(w);
        let mut model = ffi::bridge::new_model(&name);
        assert!(!model.is_null(), "no Verilated model {name} in this build");
        let mut waves = waves_asked();
        if waves.is_some() {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/waves");
            let _ = std::fs::create_dir_all(&dir);
            let n = WAVE_FILES.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("{name}_{n}.fst"));
            if model.pin_mut().trace_open(&path.to_string_lossy()) {
                eprintln!("waves: {}", path.display());
            } else {
                waves = None;
                if !WAVES_WARNED.swap(true, Ordering::Relaxed) {
                    eprintln!("waves: this build has no tracing; build with `--features waves` for FERRITE_WAVES");
                }
            }
        }
        let ports = top.ports(w);
        let clocked = ports.iter().any(|p| p.name == "clock");
        let mut s = Sim { model, ports, clocked, time: 0, waves, name };
        s.model.pin_mut().eval();
        s
    }

    /// The index of port `name`. Panics on a name the top does not have (a testbench bug).
    pub fn port(&self, name: &str) -> usize {
        self.ports.iter().position(|p| p.name == name).unwrap_or_else(|| panic!("{} has no port {name}", self.name))
    }

    pub fn port_bits(&self, port: usize) -> usize {
        self.ports[port].bits
    }

    /// Drives an input port of up to 64 bits.
    pub fn set(&mut self, port: usize, v: u64) {
        debug_assert_eq!(self.ports[port].dir, Dir::In);
        let w = [v as u32, (v >> 32) as u32];
        let n = self.ports[port].bits.div_ceil(32).min(2);
        self.model.pin_mut().set_port(port as u32, &w[..n]);
    }

    /// Drives a wide input port from bytes, byte 0 in bits 7:0 (missing bytes are zero).
    pub fn set_bytes(&mut self, port: usize, bytes: &[u8]) {
        let nw = self.ports[port].bits.div_ceil(32);
        let mut w = vec![0u32; nw];
        for (i, &b) in bytes.iter().take(nw * 4).enumerate() {
            w[i / 4] |= u32::from(b) << (8 * (i % 4));
        }
        self.model.pin_mut().set_port(port as u32, &w);
    }

    /// Reads a port of up to 64 bits.
    pub fn get(&self, port: usize) -> u64 {
        let mut w = [0u32; 2];
        let n = self.ports[port].bits.div_ceil(32).min(2);
        self.model.get_port(port as u32, &mut w[..n]);
        u64::from(w[0]) | u64::from(w[1]) << 32
    }

    /// Reads a wide port as bytes, byte 0 from bits 7:0.
    pub fn get_bytes(&self, port: usize) -> Vec<u8> {
        let nw = self.ports[port].bits.div_ceil(32);
        let mut w = vec![0u32; nw];
        self.model.get_port(port as u32, &mut w);
        let mut out: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        out.truncate(self.ports[port].bits.div_ceil(8));
        out
    }

    /// Settles combinational logic after inputs changed (outputs that depend on inputs directly).
    pub fn eval(&mut self) {
        self.model.pin_mut().eval();
    }

    /// One clock cycle: inputs set before the call are sampled at the rising edge. Panics on a top with no
    /// clock (a testbench bug: a combinational top is `eval`ed).
    pub fn tick(&mut self) {
        assert!(self.clocked, "{} has no clock", self.name);
        let dump = self.waves.as_ref().is_some_and(|w| w.contains(&self.cycles()));
        self.model.pin_mut().tick(self.time, dump);
        self.time += 2;
    }

    /// Clock cycles run so far.
    pub fn cycles(&self) -> u64 {
        self.time / 2
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.model.pin_mut().trace_close();
    }
}

#[cfg(test)]
mod tests {
    use super::waves_window;

    #[test]
    fn waves_windows() {
        assert_eq!(waves_window("1"), Ok(Some(0..u64::MAX)));
        assert_eq!(waves_window("0"), Ok(None));
        assert_eq!(waves_window("120:300"), Ok(Some(120..301)));
        assert_eq!(waves_window("7:7"), Ok(Some(7..8)));
        for bad in ["yes", "2", "300:120", "a:5", "5:"] {
            assert_eq!(waves_window(bad), Err(()), "{bad}");
        }
    }
}
