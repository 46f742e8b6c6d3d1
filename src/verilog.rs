//! `ferrite verilog`: writes the Verilog of every top at the chosen widths, one file per top and width.

use hdl::top::Top;
use hdl::Width;
use std::path::Path;

pub fn run(out: &Path, width: Option<usize>) -> Result<bool, crate::Error> {
    let widths = match width {
        None => Width::ALL.to_vec(),
        Some(n) => vec![Width::from_bytes(n).ok_or("--width must be 8 or 64")?],
    };
    std::fs::create_dir_all(out)?;
    for w in widths {
        for top in Top::written().filter(|t| t.widths().contains(&w)) {
            let path = out.join(format!("{}.v", top.name(w)));
            std::fs::write(&path, top.verilog(w))?;
            println!("{}", path.display());
        }
    }
    Ok(true)
}
