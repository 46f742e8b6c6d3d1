//! The packed-context round trip checks a layout's field names on the first record of it that it packs and
//! unpacks, and takes the order on trust after that: only a record actually packed counts. This is a test
//! binary of its own because the record is process-wide.

use model::nic::context::{names_checked, round_trip};
use model::nic::dcqcn::{rate_q8, Params, Rp};
use model::nic::qp::{Qp, Resource, ResourceKind, RespItem};
use wire::contract::profile::Profile;
use wire::contract::qpc::qp_context;
use wire::ext::AethRepr;
use wire::Psn;

#[test]
fn only_a_layout_with_a_record_packed_counts_as_checked() {
    assert_eq!(names_checked(), [false; 7], "nothing packed yet");
    let c = qp_context(&Profile::board());
    let mut q = Qp::new(2, 1, Rp::new(rate_q8(100_000), &Params::default()));
    assert_eq!(round_trip(&q, &c, 0), Ok(()));
    // attr, req, wqe, resp, resource, resp_item, rp: no WQE, resource or response in this QP.
    assert_eq!(names_checked(), [true, true, false, true, false, false, true]);
    q.resp.resources.push_back(Resource { first_psn: Psn::new(3), msn: 1, kind: ResourceKind::Atomic { orig: 7 } });
    q.resp.out.push_back(RespItem::Ack { psn: Psn::new(3), aeth: AethRepr { syndrome: 0x1F, msn: 1 } });
    assert_eq!(round_trip(&q, &c, 0), Ok(()));
    assert_eq!(names_checked(), [true, true, false, true, true, true, true]);
}
