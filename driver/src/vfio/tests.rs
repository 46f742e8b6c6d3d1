use super::fake::{FakeFunction, FakeSys};
use super::*;
use crate::Context;

const NIC: &str = "0000:01:00.0";

fn nic(driver: Option<&str>) -> FakeFunction {
    FakeFunction {
        vendor: pci::VENDOR_ID,
        device: pci::DEVICE_ID,
        driver: driver.map(str::to_string),
        group: Some(7),
        bar0_len: u64::from(BAR0_LEN),
    }
}

fn message(r: Result<impl Sized, Error>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn pci_addresses_are_normalized_or_refused() {
    assert_eq!(normalize_bdf("01:00.0").unwrap(), NIC);
    assert_eq!(normalize_bdf("0000:AB:1f.7").unwrap(), "0000:ab:1f.7");
    for bad in ["", "1:0.0", "0000:01:00.8", "0000:01:00:0", "zz:00.0", "0000:01:00.0 "] {
        assert!(normalize_bdf(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn each_missing_piece_is_named() {
    let open = |s: FakeSys| message(Function::open_with(Arc::new(s), NIC));
    assert!(open(FakeSys::new()).contains("no PCI function 0000:01:00.0"));
    let mut no_iommu = nic(Some("vfio-pci"));
    no_iommu.group = None;
    assert!(open(FakeSys::new().with(NIC, no_iommu)).contains("intel_iommu=on"));
    let mut unloaded = FakeSys::new().with(NIC, nic(Some("vfio-pci")));
    unloaded.vfio_loaded = false;
    assert!(open(unloaded).contains("modules are not loaded"));
    let m = open(FakeSys::new().with(NIC, nic(None)));
    assert!(m.contains("bound to no driver") && m.contains("driver_override"), "{m}");
    let m = open(FakeSys::new().with(NIC, nic(Some("ferrite-kmod"))));
    assert!(m.contains("bound to ferrite-kmod, not vfio-pci"), "{m}");
    let mut denied = FakeSys::new().with(NIC, nic(Some("vfio-pci")));
    denied.deny = true;
    assert!(open(denied).contains("permission denied"));
}

#[test]
fn a_group_is_viable_only_when_no_host_driver_holds_a_member() {
    let peer = |driver: Option<&str>| FakeFunction { vendor: 0x8086, device: 0x10d3, bar0_len: 4096, ..nic(driver) };
    let m = message(Function::open_with(
        Arc::new(FakeSys::new().with(NIC, nic(Some("vfio-pci"))).with("0000:01:00.1", peer(Some("e1000e")))),
        NIC,
    ));
    assert!(m.contains("group 7 is not viable") && m.contains("0000:01:00.1 (bound to e1000e)"), "{m}");
    for ok in [None, Some("vfio-pci"), Some("pcieport"), Some("pci-stub")] {
        let s = FakeSys::new().with(NIC, nic(Some("vfio-pci"))).with("0000:00:01.0", peer(ok));
        assert!(Function::open_with(Arc::new(s), NIC).is_ok(), "{ok:?}");
    }
}

#[test]
fn dma_memory_is_mapped_at_separate_iovas_and_unmapped_on_free() {
    let s = FakeSys::new().with(NIC, nic(Some("vfio-pci")));
    let state = s.state.clone();
    let f = Function::open_with(Arc::new(s), "01:00.0").unwrap();
    {
        let st = state.lock().unwrap();
        assert!(st.enabled && st.msi_enabled && st.regs.contains_key(NIC));
    }
    let a = f.dma_alloc(100).unwrap();
    let b = f.dma_alloc(3 << 20).unwrap();
    let c = f.dma_alloc(1).unwrap();
    assert_eq!(a, IOVA_BASE);
    assert!(b.is_multiple_of(2 << 20) && b >= a + 2 * PAGE, "{b:#x}");
    assert!(c >= b + (3 << 20) + PAGE, "a guard page after each buffer: {c:#x}");
    f.dma_write(b + 10, b"ferrite").unwrap();
    let mut got = [0u8; 7];
    f.dma_read(b + 10, &mut got).unwrap();
    assert_eq!(&got, b"ferrite");
    assert_eq!(f.dma_read(a + 4090, &mut [0u8; 8]), Err(Error::Dma { iova: a + 4090, len: 8 }));
    assert!(f.dma_write(a - 1, &[1]).is_err(), "below the first buffer");
    assert_eq!(state.lock().unwrap().maps.len(), 3);
    f.dma_free(b).unwrap();
    assert!(f.dma_free(b).is_err(), "freed twice");
    assert!(f.dma_read(b, &mut [0u8; 1]).is_err(), "read after free");
    assert_eq!(state.lock().unwrap().maps.keys().copied().collect::<Vec<_>>(), [a, c]);
    drop(f);
    assert!(state.lock().unwrap().maps.is_empty(), "dropping the function unmaps what is left");
}

#[test]
fn iova_space_outside_the_iommu_ranges_is_refused() {
    let mut s = FakeSys::new().with(NIC, nic(Some("vfio-pci")));
    s.iova_ranges = std::iter::once(0..IOVA_BASE + 8192).collect();
    let f = Function::open_with(Arc::new(s), NIC).unwrap();
    f.dma_alloc(4096).unwrap();
    assert!(message(f.dma_alloc(4096)).contains("no IOVA space"));
}

#[test]
fn interrupts_are_counted_once() {
    let s = FakeSys::new().with(NIC, nic(Some("vfio-pci")));
    let state = s.state.clone();
    let b = VfioBackend::open_with(Arc::new(s), NIC).unwrap();
    assert!(!b.take_interrupt());
    state.lock().unwrap().pending_irqs = 2;
    assert!(b.take_interrupt());
    assert!(!b.take_interrupt());
}

#[test]
fn only_a_ferrite_nic_with_a_known_contract_is_taken() {
    // QEMU's edu device: a fine VFIO function, not a NIC.
    let edu = FakeFunction { vendor: 0x1234, device: 0x11e8, bar0_len: 1 << 20, ..nic(Some("vfio-pci")) };
    let m = message(VfioBackend::open_with(Arc::new(FakeSys::new().with(NIC, edu)), NIC));
    assert!(m.contains("1234:11e8, not a ferrite NIC (1234:fe11)"), "{m}");
    let small = FakeFunction { bar0_len: 1 << 20, ..nic(Some("vfio-pci")) };
    assert!(message(VfioBackend::open_with(Arc::new(FakeSys::new().with(NIC, small)), NIC)).contains("BAR0 is"));
    // The right IDs and BAR, but no register blocks (all zeros), then a contract of another major version.
    let s = FakeSys::new().with(NIC, nic(Some("vfio-pci")));
    let state = s.state.clone();
    let sys: Arc<dyn Sys> = Arc::new(s);
    let b = VfioBackend::open_with(sys.clone(), NIC).unwrap();
    assert!(matches!(Context::open(Box::new(b)), Err(Error::BadDevice(0))));
    let set = |off: u32, v: u32| state.lock().unwrap().regs.get_mut(NIC).unwrap()[off as usize / 4] = v;
    use wire::contract::regs::{block, block_type, id, VERSION};
    set(id::BASE + block::TYPE, block_type::ID);
    set(id::BASE + block::VERSION, VERSION + 0x1_0000);
    let b = VfioBackend::open_with(sys, NIC).unwrap();
    assert!(matches!(Context::open(Box::new(b)), Err(Error::BadDevice(v)) if v == VERSION + 0x1_0000));
}

/// A twin ferrite NIC whose BAR0 holds the contract's block list, changed by `edit` before `Context::open`
/// walks it.
fn open_with_blocks(edit: impl Fn(&mut Vec<u32>)) -> Result<Context, Error> {
    use wire::contract::regs::{block, block_type, cmd, counters, dcqcn, doorbell, id, VERSION};
    let s = FakeSys::new().with(NIC, nic(Some("vfio-pci")));
    let state = s.state.clone();
    let b = VfioBackend::open_with(Arc::new(s), NIC).unwrap();
    {
        let mut st = state.lock().unwrap();
        let regs = st.regs.get_mut(NIC).unwrap();
        let chain = [
            (id::BASE, block_type::ID, cmd::BASE),
            (cmd::BASE, block_type::CMD, counters::BASE),
            (counters::BASE, block_type::COUNTERS, dcqcn::BASE),
            (dcqcn::BASE, block_type::DCQCN, doorbell::BASE),
            (doorbell::BASE, block_type::DOORBELL, 0),
        ];
        for (at, ty, next) in chain {
            regs[(at + block::TYPE) as usize / 4] = ty;
            regs[(at + block::VERSION) as usize / 4] = VERSION;
            regs[(at + block::NEXT) as usize / 4] = next;
        }
        for (reg, v) in [
            (doorbell::QP_AREA, doorbell::QP_DB_BASE),
            (doorbell::CQ_AREA, doorbell::CQ_DB_BASE),
            (doorbell::STRIDE, doorbell::DB_STRIDE),
            (doorbell::EQ_AREA, doorbell::EQ_DB),
        ] {
            regs[(doorbell::BASE + reg) as usize / 4] = v;
        }
        edit(regs);
    }
    Context::open(Box::new(b))
}

#[test]
fn the_register_block_list_is_walked_and_checked() {
    use wire::contract::regs::{block, block_type, cmd, counters, dcqcn, doorbell, VERSION};
    let err = |edit: &dyn Fn(&mut Vec<u32>)| match open_with_blocks(edit) {
        Err(Error::Contract(m)) => m,
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("opened"),
    };
    let w = |off: u32| off as usize / 4;
    // A whole list passes the walk; the twin then never answers the first command.
    assert!(matches!(open_with_blocks(|_| {}), Err(Error::CommandTimeout(_))));
    assert!(err(&|r| r[w(dcqcn::BASE + block::NEXT)] = 0).contains("no doorbell block"));
    assert!(err(&|r| r[w(counters::BASE + block::VERSION)] = VERSION + 0x1_0000).contains("counters block"));
    assert!(err(&|r| r[w(cmd::BASE + block::NEXT)] = cmd::BASE).contains("points to 0x100"));
    assert!(err(&|r| r[w(counters::BASE + block::NEXT)] = 1 << 30).contains("points to"));
    assert!(err(&|r| r[w(doorbell::BASE + doorbell::STRIDE)] = 16).contains("computes with 0x8"));
    // The command block where the counters should be.
    assert!(err(&|r| r[w(counters::BASE + block::TYPE)] = block_type::CMD).contains("command block is at 0x200"));
    // A block of a type this driver does not know is skipped.
    let unknown = |r: &mut Vec<u32>| {
        r[w(dcqcn::BASE + block::NEXT)] = 0x0480;
        r[w(0x0480 + block::TYPE)] = 0x4645_00ff;
        r[w(0x0480 + block::NEXT)] = doorbell::BASE;
    };
    assert!(matches!(open_with_blocks(unknown), Err(Error::CommandTimeout(_))));
}

#[test]
fn the_applications_own_memory_is_mapped_by_whole_pages_and_unmapped() {
    let s = FakeSys::new().with(NIC, nic(Some("vfio-pci")));
    let state = s.state.clone();
    let f = Function::open_with(Arc::new(s), NIC).unwrap();
    let mut app = vec![0u8; 10_000];
    let inside = app[100..].as_ptr();
    let iova = f.map_user(inside, 5000).unwrap();
    assert_eq!(iova % PAGE, inside as u64 % PAGE, "the IOVA keeps the offset in the page");
    let pages = *state.lock().unwrap().maps.get(&(iova & !(PAGE - 1))).unwrap() as u64;
    assert!(pages.is_multiple_of(PAGE) && pages >= 5000 + iova % PAGE, "{pages}");
    f.dma_write(iova + 10, b"device wrote").unwrap();
    assert_eq!(&app[110..122], b"device wrote", "the device's write lands in the application's buffer");
    app[200] = 42;
    let mut one = [0u8; 1];
    f.dma_read(iova + 100, &mut one).unwrap();
    assert_eq!(one, [42]);
    let again = f.map_user(inside, 5000).unwrap();
    assert_ne!(again, iova, "a second mapping of the same pages gets its own IOVA");
    f.unmap_user(iova).unwrap();
    f.unmap_user(again).unwrap();
    assert!(state.lock().unwrap().maps.is_empty());
    assert!(f.dma_read(iova, &mut one).is_err(), "gone with the unmapping");
    assert!(f.map_user(inside, 0).is_err());
}
