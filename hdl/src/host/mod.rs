//! The host side of the NIC: BAR0's register file (`mmio`) and its counters (`counters`), the DMA read port's mux (`dma`), payload
//! placement in host memory (`place`), its scatter over a list of SGEs (`scatter`), ring entries'
//! writes (`entry`), contiguous reads streamed out as payload (`stream`), a payload gathered from a
//! list of SGEs (`gather`), and the width adapters of the 8-byte control readers and writers (`adapt`).
//! The DMA interfaces are the engines' ports, in the shape a PCIe or host-link bridge takes (tagged reads
//! with completions, posted writes with strobes).

pub mod adapt;
pub mod counters;
pub mod dma;
pub mod entry;
pub mod gather;
pub mod mmio;
pub mod place;
pub mod scatter;
pub mod stream;
