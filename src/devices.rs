//! `ferrite devices`: the PCI functions with ferrite's IDs (and, with `--all`, every function bound to
//! vfio-pci), each with its driver, IOMMU group and whether it is ready for `--device vfio:BDF`.

use crate::Error;
use clap::Args;
use driver::vfio::{self, Linux, PciFunction};
use serde::Serialize;

#[derive(Args, Debug, Clone)]
pub struct DevicesArgs {
    /// Also list every function bound to vfio-pci, whatever it is.
    #[arg(long)]
    pub all: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Row {
    bdf: String,
    id: String,
    ferrite: bool,
    driver: Option<String>,
    iommu_group: Option<u32>,
    /// Empty when `--device vfio:BDF` can open it; otherwise what stands in the way and what to do.
    status: String,
}

fn row(f: &PciFunction) -> Row {
    let status = match vfio::diagnose(&Linux, &f.bdf) {
        Ok(_) if f.is_ferrite() => String::new(),
        Ok(_) => "not a ferrite NIC".to_string(),
        Err(e) => e.to_string(),
    };
    Row {
        bdf: f.bdf.clone(),
        id: format!("{:04x}:{:04x}", f.vendor, f.device),
        ferrite: f.is_ferrite(),
        driver: f.driver.clone(),
        iommu_group: f.group,
        status,
    }
}

pub fn run(a: &DevicesArgs) -> Result<bool, Error> {
    let all = vfio::functions(&Linux)?;
    let rows: Vec<Row> =
        all.iter().filter(|f| f.is_ferrite() || (a.all && f.driver.as_deref() == Some("vfio-pci"))).map(row).collect();
    if a.json {
        println!("{}", serde_json::to_string(&rows)?);
        return Ok(true);
    }
    if !rows.iter().any(|r| r.ferrite) {
        let id = format!("{:04x}:{:04x}", wire::contract::pci::VENDOR_ID, wire::contract::pci::DEVICE_ID);
        println!("no ferrite NIC (PCI ID {id}) among the {} PCI functions", all.len());
    }
    for r in &rows {
        let driver = r.driver.as_deref().unwrap_or("none");
        let group = r.iommu_group.map_or("none".to_string(), |g| g.to_string());
        println!(
            "{}  {}  driver {driver:<10} IOMMU group {group:<5} {}",
            r.bdf,
            r.id,
            if r.status.is_empty() { "ready: --device vfio:".to_string() + &r.bdf } else { r.status.clone() }
        );
    }
    Ok(true)
}
