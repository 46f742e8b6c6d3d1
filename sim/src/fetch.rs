//! A WQE-fetching block (the responder's `RecvWqe`, the requester's `WqeFetch`) driven through one fetch:
//! started, its DMA read request taken with random back-pressure, the completion's 8-byte beats served from
//! host bytes with random bubbles (a failing read flags every beat, as `hdl::host::dma` says the host link
//! does), the MR table's read port answered a cycle after its index, until `done`; then the beats left (a
//! block may decide before its read's last beat) until it is no longer `busy`.

use crate::responder::Mrs;
use crate::Sim;
use model::rng::Rng;
use wire::contract::profile::Profile;

/// The ports such a block has (its `start`, `busy`, read request, completion, MR port and `done`).
pub struct FetchPorts {
    start: usize,
    busy: usize,
    rd: [usize; 4],
    cpl: [usize; 4],
    mr_index: usize,
    mr: usize,
    done: usize,
}

impl FetchPorts {
    pub fn of(rtl: &Sim) -> FetchPorts {
        let q = |n| rtl.port(n);
        FetchPorts {
            start: q("start"),
            busy: q("busy"),
            rd: [q("rd_valid"), q("rd_ready"), q("rd_addr"), q("rd_len")],
            cpl: [q("cpl_valid"), q("cpl_data"), q("cpl_err"), q("cpl_last")],
            mr_index: q("mr_index"),
            mr: q("mr"),
            done: q("done"),
        }
    }
}

/// Host memory as one fetch sees it: `bytes` at `addr`, and whether the read fails.
pub struct Host<'a> {
    pub addr: u64,
    pub bytes: &'a [u8],
    pub fail: bool,
}

/// Runs one fetch (the block's inputs other than `start` already set): the read request it made (address,
/// length) and the cycles it took to `done`. `stall` and `bubble` are the chances of a cycle without the request
/// taken and without a beat; `ctx` names the case in a failure.
#[allow(clippy::too_many_arguments)]
pub fn run(
    rtl: &mut Sim,
    f: &FetchPorts,
    rng: &mut Rng,
    (stall, bubble): (f64, f64),
    mrs: &Mrs,
    p: &Profile,
    host: &Host,
    ctx: &dyn Fn() -> String,
) -> ((u64, usize), u64) {
    let [rd_valid, rd_ready, rd_addr, rd_len] = f.rd;
    let [cpl_valid, cpl_data, cpl_err, cpl_last] = f.cpl;
    assert_eq!(rtl.get(f.busy), 0, "{}: busy before the start", ctx());
    rtl.set(f.start, 1);
    rtl.tick();
    rtl.set(f.start, 0);
    let mut asked = None;
    let mut beats: Vec<(u64, bool, bool)> = Vec::new();
    let mut mr_at: Option<u64> = None;
    let mut waited = 0u64;
    // Cycles to `done`, once seen; then the block drains what is left of its read.
    let mut decided: Option<u64> = None;
    loop {
        waited += 1;
        assert!(waited < 5_000, "{}: no end", ctx());
        if let Some(i) = mr_at.take() {
            rtl.set_bytes(f.mr, &mrs.entry(i, p));
        }
        let ready = asked.is_none() && !rng.chance(stall);
        rtl.set(rd_ready, u64::from(ready));
        let beat = asked.is_some() && !beats.is_empty() && !rng.chance(bubble);
        if beat {
            let (data, last, err) = beats.remove(0);
            rtl.set(cpl_data, data);
            rtl.set(cpl_last, u64::from(last));
            rtl.set(cpl_err, u64::from(err));
        } else {
            rtl.set(cpl_data, rng.next_u64());
            rtl.set(cpl_err, u64::from(rng.chance(0.5)));
            rtl.set(cpl_last, u64::from(rng.chance(0.5)));
        }
        rtl.set(cpl_valid, u64::from(beat));
        rtl.eval();
        if decided.is_some() {
            assert_eq!(rtl.get(f.done), 0, "{}: done twice for one start", ctx());
            if rtl.get(f.busy) == 0 {
                assert!(beats.is_empty() && !beat, "{}: not busy with beats of its read to come", ctx());
                break;
            }
        } else if rtl.get(f.done) == 1 {
            decided = Some(waited);
        }
        if rtl.get(rd_valid) == 1 && ready {
            let (a, l) = (rtl.get(rd_addr), rtl.get(rd_len) as usize);
            let off = a.wrapping_sub(host.addr) as usize;
            let bytes = host
                .bytes
                .get(off..off + l)
                .unwrap_or_else(|| panic!("{}: a read of {l} bytes at {a:#x} outside the WQE", ctx()));
            beats = bytes
                .chunks(8)
                .enumerate()
                .map(|(j, b)| {
                    let mut w = [0u8; 8];
                    w[..b.len()].copy_from_slice(b);
                    (u64::from_le_bytes(w), (j + 1) * 8 >= l, host.fail)
                })
                .collect();
            asked = Some((a, l));
        }
        mr_at = Some(rtl.get(f.mr_index));
        rtl.tick();
    }
    let waited = decided.expect("the loop ends only after done");
    (asked.unwrap_or_else(|| panic!("{}: done without a read", ctx())), waited)
}
