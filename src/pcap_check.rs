//! `ferrite pcap check`: decode every frame of a capture with the receive path's parser.

use crate::Error;
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

/// Opcode, destination QP and PSN as a receive path read them.
type BthFields = (wire::Opcode, u32, u32);

/// A report from a receive path's verdict; `bth` gives the BTH fields it read, asked only when the frame
/// physically holds a BTH (both backends report them on the same frames).
fn report(
    index: usize,
    frame: &[u8],
    verdict: Result<BthFields, wire::DropReason>,
    bth: impl Fn() -> BthFields,
) -> FrameReport {
    match verdict {
        Ok((op, qp, psn)) => FrameReport {
            index,
            kind: "roce",
            opcode: Some(op.name()),
            dest_qp: Some(qp),
            psn: Some(psn),
            icrc_ok: Some(true),
            error: None,
        },
        Err(e) => {
            // Report what the headers say even when a later check fails.
            let fields = (e.is_roce() && bth_of(frame).is_some()).then(&bth);
            FrameReport {
                index,
                kind: if e.is_roce() { "roce" } else { "other" },
                opcode: fields.map(|f| f.0.name()),
                dest_qp: fields.map(|f| f.1),
                psn: fields.map(|f| f.2),
                icrc_ok: matches!(e, wire::DropReason::BadIcrc).then_some(false),
                error: (e != wire::DropReason::NotRoce).then(|| e.to_string()),
            }
        }
    }
}

/// The verdict of the golden model's receive path on one frame.
pub fn check_frame(index: usize, frame: &[u8]) -> FrameReport {
    let verdict = wire::parse(frame).map(|p| (p.hdr.bth.opcode, p.hdr.bth.dest_qp, p.hdr.bth.psn.value()));
    report(index, frame, verdict, || {
        bth_of(frame).map_or((wire::Opcode(0), 0, 0), |b| (b.opcode(), b.dest_qp(), b.psn().value()))
    })
}

/// The verdicts of the Verilated RX pipeline on every frame (a zero-length frame cannot be sent on the
/// stream: it gets wire's verdict for it, a truncated Ethernet header).
fn check_rtl(frames: &[Vec<u8>], width: hdl::Width) -> Result<Vec<FrameReport>, Error> {
    let sendable: Vec<&[u8]> = frames.iter().filter(|f| !f.is_empty()).map(Vec::as_slice).collect();
    let mut got = sim::rx::receive(width, &sendable)?.into_iter();
    let mut out = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        if f.is_empty() {
            out.push(report(i, f, Err(wire::DropReason::Truncated(wire::roce::Layer::Ethernet)), || {
                (wire::Opcode(0), 0, 0)
            }));
            continue;
        }
        let m = got.next().ok_or("the RX pipeline returned fewer records than frames")?.meta;
        let fields = (wire::Opcode(m.get("opcode") as u8), m.get("dest_qp") as u32, m.get("psn") as u32);
        let verdict = match m.drop_reason() {
            None => Ok(fields),
            Some(e) => Err(e),
        };
        out.push(report(i, f, verdict, || fields));
    }
    Ok(out)
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

/// Which receive path decodes the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PcapBackend {
    /// The golden model's parser (`wire::parse`).
    Model,
    /// The RX pipeline RTL, Verilated.
    Rtl,
}

pub fn run(file: &Path, backend: PcapBackend, width: usize, json: bool) -> Result<bool, Error> {
    let width = hdl::Width::from_bytes(width).ok_or("--width must be 8 or 64")?;
    let mut reader = PcapReader::new(File::open(file)?)?;
    let mut frames = Vec::new();
    while let Some(pkt) = reader.next_packet() {
        frames.push(pkt?.data.into_owned());
    }
    let reports = match backend {
        PcapBackend::Model => frames.iter().enumerate().map(|(i, f)| check_frame(i, f)).collect(),
        PcapBackend::Rtl => check_rtl(&frames, width)?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        println!("{:>5}  {:<6} {:<32} {:>8} {:>8}  verdict", "frame", "kind", "opcode", "dest_qp", "psn");
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
