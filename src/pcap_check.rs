//! `ferrite pcap check`: decode every frame of a capture with the receive path's parser.

use crate::{Backend, Error};
use pcap_file::pcap::PcapReader;
use serde::Serialize;
use std::fs::File;
use std::path::Path;

#[derive(Serialize, Debug, PartialEq)]
pub struct FrameReport {
    pub index: usize,
    pub kind: &'static str,
    pub opcode: Option<&'static str>,
    pub dest_qp: Option<u32>,
    pub psn: Option<u32>,
    pub icrc_ok: Option<bool>,
    pub error: Option<String>,
}

/// The verdict of the golden model's receive path on one frame.
pub fn check_frame(index: usize, frame: &[u8]) -> FrameReport {
    match wire::parse(frame) {
        Ok(p) => FrameReport {
            index,
            kind: "roce",
            opcode: Some(p.hdr.bth.opcode.name()),
            dest_qp: Some(p.hdr.bth.dest_qp),
            psn: Some(p.hdr.bth.psn.value()),
            icrc_ok: Some(true),
            error: None,
        },
        Err(e) => {
            // Report what the headers say even when a later check fails.
            let bth = if e.is_roce() { bth_of(frame) } else { None };
            FrameReport {
                index,
                kind: if e.is_roce() { "roce" } else { "other" },
                opcode: bth.map(|b| b.opcode().name()),
                dest_qp: bth.map(|b| b.dest_qp()),
                psn: bth.map(|b| b.psn().value()),
                icrc_ok: matches!(e, wire::DropReason::BadIcrc).then_some(false),
                error: (e != wire::DropReason::NotRoce).then(|| e.to_string()),
            }
        }
    }
}

/// The BTH of a frame that got as far as UDP 4791.
fn bth_of(frame: &[u8]) -> Option<wire::Bth<&[u8]>> {
    let eth = wire::eth::EthernetFrame::new_checked(frame).ok()?;
    let l3 = &frame[eth.header_len()..];
    let ip_len = match eth.ethertype() {
        wire::eth::ethertype::IPV4 => wire::ipv4::HEADER_LEN,
        _ => wire::ipv6::HEADER_LEN,
    };
    wire::Bth::new_checked(l3.get(ip_len + 8..)?).ok()
}

pub fn run(file: &Path, backend: Backend, json: bool) -> Result<bool, Error> {
    let Backend::Model = backend;
    let mut reader = PcapReader::new(File::open(file)?)?;
    let mut reports = Vec::new();
    while let Some(pkt) = reader.next_packet() {
        let pkt = pkt?;
        reports.push(check_frame(reports.len(), &pkt.data));
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        println!("{:>5}  {:<6} {:<32} {:>8} {:>8}  {}", "frame", "kind", "opcode", "dest_qp", "psn", "verdict");
        for r in &reports {
            println!(
                "{:>5}  {:<6} {:<32} {:>8} {:>8}  {}",
                r.index,
                r.kind,
                r.opcode.unwrap_or("-"),
                r.dest_qp.map_or("-".into(), |q| format!("{q:#x}")),
                r.psn.map_or("-".into(), |p| p.to_string()),
                r.error.as_deref().unwrap_or("ok")
            );
        }
        let roce = reports.iter().filter(|r| r.kind == "roce").count();
        let bad = reports.iter().filter(|r| r.kind == "roce" && r.error.is_some()).count();
        println!("{} frames, {} RoCE, {} RoCE frames with errors", reports.len(), roce, bad);
    }
    Ok(true)
}
