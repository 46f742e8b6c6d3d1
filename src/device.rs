//! `--device`: which NIC a tool drives. `model` is the golden model (on a simulated or a real link);
//! `rtl` (or `rtl:8`, `rtl:64`) the Verilated core of that datapath width on a real link, in lockstep with
//! the model; `vfio:BDF` is a ferrite NIC in a PCIe slot, bound to vfio-pci (`ferrite devices` lists them).

use crate::Error;
use driver::vfio::VfioBackend;
use driver::Backend;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSpec {
    Model,
    Rtl(hdl::Width),
    Vfio(String),
}

impl FromStr for DeviceSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            _ if s == "model" => Ok(DeviceSpec::Model),
            _ if s == "rtl" => Ok(DeviceSpec::Rtl(hdl::Width::W8)),
            Some(("rtl", "8")) => Ok(DeviceSpec::Rtl(hdl::Width::W8)),
            Some(("rtl", "64")) => Ok(DeviceSpec::Rtl(hdl::Width::W64)),
            Some(("vfio", bdf)) => driver::vfio::normalize_bdf(bdf).map(DeviceSpec::Vfio).map_err(|e| e.to_string()),
            _ => Err(format!("{s:?}: a device is `model`, `rtl[:8|:64]` or `vfio:BDF` (e.g. vfio:0000:01:00.0)")),
        }
    }
}

impl DeviceSpec {
    /// The VFIO backend of a `vfio:` device.
    pub fn open_vfio(bdf: &str) -> Result<Box<dyn Backend>, Error> {
        Ok(Box::new(VfioBackend::open(bdf)?))
    }
}
