//! `ferrite interop rxe`: ferrite against Linux soft-RoCE in a QEMU guest (`testbench::interop`).

use crate::Error;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct InteropArgs {
    /// The peer: `rxe` (Linux soft-RoCE).
    pub peer: String,
    #[arg(long, value_enum, default_value = "model")]
    pub backend: crate::Backend,
    /// Loss on ferrite's side in the lossy half of the cases.
    #[arg(long, default_value_t = 0.01)]
    pub loss: f64,
    /// Where the guest is built and kept between runs.
    #[arg(long, default_value = "target/interop/guest")]
    pub cache: PathBuf,
    /// Where logs and pcaps go.
    #[arg(long, default_value = "target/interop/run")]
    pub work: PathBuf,
    /// Run only the cases whose names contain this (the guest's ping runs in every boot).
    #[arg(long)]
    pub only: Option<String>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &InteropArgs) -> Result<bool, Error> {
    if a.peer != "rxe" {
        return Err(format!("unknown peer {}: the one peer is rxe", a.peer).into());
    }
    let o = testbench::interop::Options {
        ferrite: std::env::current_exe()?,
        backend: "model".into(),
        loss: a.loss,
        cache: std::path::absolute(&a.cache)?,
        work: std::path::absolute(&a.work)?,
        only: a.only.clone(),
    };
    let results = testbench::interop::rxe(&o)?;
    let pass = results.iter().all(|r| r.pass);
    if a.json {
        println!("{}", serde_json::to_string(&results)?);
    } else {
        println!("{:<40} {:<8} {:<6} result", "case", "backend", "ferrite");
        for r in &results {
            println!("{:<40} {:<8} {:<6} {}", r.name, r.backend, r.role, if r.pass { "pass" } else { "FAIL" });
            if !r.pass {
                println!("    {}", r.detail.replace('\n', "\n    "));
            }
        }
        let n = results.iter().filter(|r| r.pass).count();
        println!("{n} of {} cases passed", results.len());
    }
    Ok(pass)
}
