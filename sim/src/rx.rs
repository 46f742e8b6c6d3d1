//! Frames through the Verilated RX pipeline, for tools (the CLI's `pcap check --backend rtl`): no bubbles,
//! outputs always ready, one record per frame back.

use crate::stream::{Driver, Monitor, StreamPorts};
use crate::Sim;
use hdl::rx::meta::Meta;
use hdl::top::{max_frame, Top};
use hdl::Width;

/// What the RX pipeline made of one frame: its record, and its payload if it carries one
/// (`Meta::carries_payload`: an accepted frame's payload, or a frame that is not RoCEv2 whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub meta: Meta,
    pub payload: Option<Vec<u8>>,
}

/// Pushes `frames` (each at least one byte: a stream has no empty frames) through a fresh RX pipeline at
/// width `w`.
pub fn receive(w: Width, frames: &[&[u8]]) -> Result<Vec<Received>, String> {
    if frames.iter().any(|f| f.is_empty()) {
        return Err("an empty frame cannot go through the RX pipeline".into());
    }
    let mut sim = Sim::new(Top::Rx, w);
    let input = StreamPorts::find(&sim, "in_", true);
    let output = StreamPorts::find(&sim, "out_", true);
    let (meta_p, meta_v, meta_r) = (sim.port("meta"), sim.port("meta_valid"), sim.port("meta_ready"));
    let mut drv = Driver::new(input, w.bytes(), 0, 0.0);
    let mut mon = Monitor::new(output, 0, 0.0);
    for f in frames {
        drv.push_frame(f);
    }
    let mut metas = Vec::new();
    let limit = 10_000 + 2 * frames.iter().map(|f| f.len()).sum::<usize>() as u64;
    while metas.len() < frames.len() {
        if sim.cycles() > limit {
            return Err(format!("the RX pipeline stopped after {} of {} frames", metas.len(), frames.len()));
        }
        drv.drive(&mut sim);
        mon.drive(&mut sim);
        sim.set(meta_r, 1);
        sim.eval();
        if sim.get(meta_v) != 0 {
            metas.push(Meta(sim.get_bytes(meta_p)));
        }
        mon.sample(&sim);
        drv.accepted(&sim);
        sim.tick();
    }
    // Let the last payload out.
    for _ in 0..4 * max_frame(w) / w.bytes() {
        if mon.frames.len() >= metas.iter().filter(|m| m.carries_payload()).count() {
            break;
        }
        mon.drive(&mut sim);
        sim.eval();
        mon.sample(&sim);
        sim.tick();
    }
    let mut payloads = mon.frames.into_iter();
    Ok(metas
        .into_iter()
        .map(|meta| {
            let payload = meta.carries_payload().then(|| payloads.next().unwrap_or_default());
            Received { meta, payload }
        })
        .collect())
}
