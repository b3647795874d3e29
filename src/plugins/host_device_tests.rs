use super::*;
use std::os::unix::fs::symlink;

#[test]
fn ids_cannot_leave_sysfs() {
    assert!(checked_component("0000:00:1f.6").is_ok());
    for bad in ["", "..", "../../etc", "a/b", "a\0"] {
        assert!(checked_component(bad).is_err(), "{bad:?}");
    }
}

/// A fake sysfs laid out as the kernel's: devices live under `devices/`,
/// `bus/<bus>/devices/<id>` links to them, and a bound PCI device's
/// `driver` links to `bus/pci/drivers/<name>`. Removed when dropped.
struct FakeSys(PathBuf);

impl FakeSys {
    fn new(tag: &str) -> FakeSys {
        let root =
            std::env::temp_dir().join(format!("cni-multi-sysfs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for driver in [
            "vfio-pci",
            "uio_pci_generic",
            "igb_uio",
            "ixgbe",
            "mlx5_core",
        ] {
            std::fs::create_dir_all(root.join("bus/pci/drivers").join(driver)).expect("dir");
        }
        for bus in ["pci", "auxiliary"] {
            std::fs::create_dir_all(root.join("bus").join(bus).join("devices")).expect("dir");
        }
        FakeSys(root)
    }

    /// The device's own directory, listed on `bus`.
    fn device(&self, bus: &str, id: &str) -> PathBuf {
        let dev = self.0.join("devices/pci0000:00").join(id);
        std::fs::create_dir_all(&dev).expect("device dir");
        let listed = self.0.join("bus").join(bus).join("devices").join(id);
        symlink(format!("../../../devices/pci0000:00/{id}"), listed).expect("bus link");
        dev
    }

    fn pci(&self, addr: &str, driver: Option<&str>, nets: &[&str]) -> &Self {
        let dev = self.device("pci", addr);
        if let Some(driver) = driver {
            symlink(
                format!("../../../bus/pci/drivers/{driver}"),
                dev.join("driver"),
            )
            .expect("driver link");
        }
        for net in nets {
            std::fs::create_dir_all(dev.join("net").join(net)).expect("net");
        }
        self
    }

    fn virtio(&self, addr: &str, net: &str) -> &Self {
        let dev = self.device("pci", addr);
        std::fs::create_dir_all(dev.join("virtio3/net").join(net)).expect("virtio");
        symlink("../../../bus/pci/drivers/ixgbe", dev.join("driver")).expect("driver link");
        self
    }

    fn aux(&self, id: &str, net: &str) -> &Self {
        let dev = self.device("auxiliary", id);
        std::fs::create_dir_all(dev.join("net").join(net)).expect("aux");
        self
    }
}

impl Drop for FakeSys {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn keys(pci: &str) -> Keys {
    Keys {
        pci_bus_id: pci.into(),
        ..Default::default()
    }
}

#[test]
fn userspace_drivers_mean_dpdk_mode() {
    let sys = FakeSys::new("dpdk");
    sys.pci("0000:01:00.0", Some("vfio-pci"), &[])
        .pci("0000:01:00.1", Some("uio_pci_generic"), &[])
        .pci("0000:01:00.2", Some("igb_uio"), &[])
        .pci("0000:02:00.0", Some("ixgbe"), &["ens1f0"])
        .pci("0000:03:00.0", None, &["ens2"]);
    for addr in ["0000:01:00.0", "0000:01:00.1", "0000:01:00.2"] {
        let t = resolve(keys(addr), "", &sys.0).expect(addr);
        assert!(t.dpdk, "{addr}");
        assert_eq!(t.source, Source::Pci(addr.into()));
    }
    let kernel = resolve(keys("0000:02:00.0"), "", &sys.0).expect("kernel driver");
    assert!(!kernel.dpdk);
    assert_eq!(
        sysfs_device_name(&kernel.source, &sys.0).expect("name"),
        Some("ens1f0".into())
    );
    // No driver at all (or no device): the reference's error, code 999.
    for addr in ["0000:03:00.0", "0000:09:00.0"] {
        let e = resolve(keys(addr), "", &sys.0).expect_err(addr);
        assert_eq!(e.code, 999, "{e:?}");
        assert!(e.msg.starts_with("error with host device: "), "{e:?}");
    }
    // A device name given too still goes by the PCI address's driver.
    let named = Keys {
        device: "eth9".into(),
        ..keys("0000:01:00.0")
    };
    let t = resolve(named, "", &sys.0).expect("named");
    assert!(t.dpdk);
    assert_eq!(t.source, Source::Name("eth9".into()));
    // The config's own flag counts only without a PCI address, as in the reference.
    let flagged = |keys: Keys| {
        let dpdk = Keys {
            dpdk_mode: true,
            ..keys
        };
        resolve(dpdk, "", &sys.0).expect("flagged").dpdk
    };
    let by_name = Keys {
        device: "eth9".into(),
        ..Default::default()
    };
    assert!(flagged(by_name));
    assert!(!flagged(keys("0000:02:00.0")), "a kernel driver wins");
}

#[test]
fn device_id_beats_pci_bus_id_and_falls_back_to_auxiliary() {
    let sys = FakeSys::new("devid");
    sys.pci("0000:02:00.0", Some("ixgbe"), &["ens1f0"])
        .pci("0000:01:00.0", Some("vfio-pci"), &[])
        .aux("mlx5_core.sf.4", "enp3s0f0s4");
    // The runtime's deviceID overrides the configured PCI address.
    let t = resolve(keys("0000:01:00.0"), "0000:02:00.0", &sys.0).expect("pci");
    assert_eq!(t.source, Source::Pci("0000:02:00.0".into()));
    assert!(!t.dpdk);
    // An auxiliary device clears the PCI address (and its DPDK check).
    let t = resolve(keys("0000:01:00.0"), "mlx5_core.sf.4", &sys.0).expect("aux");
    assert_eq!(t.source, Source::Aux("mlx5_core.sf.4".into()));
    assert!(!t.dpdk);
    assert_eq!(
        sysfs_device_name(&t.source, &sys.0).expect("aux name"),
        Some("enp3s0f0s4".into())
    );
    // Alone, without any config key.
    let t = resolve(Keys::default(), "mlx5_core.sf.4", &sys.0).expect("aux alone");
    assert_eq!(t.source, Source::Aux("mlx5_core.sf.4".into()));
    let e = resolve(Keys::default(), "0000:77:00.0", &sys.0).expect_err("unknown");
    assert_eq!(
        (e.code, e.msg.as_str()),
        (
            999,
            "runtime config DeviceID 0000:77:00.0 not found or unsupported"
        )
    );
    let e = resolve(Keys::default(), "../../etc", &sys.0).expect_err("escape");
    assert_eq!(e.code, 7);
}

#[test]
fn net_names_come_from_net_or_virtio_directories() {
    let sys = FakeSys::new("names");
    sys.pci("0000:04:00.0", Some("ixgbe"), &["ens5", "ens4"])
        .virtio("0000:05:00.0", "eth7")
        .pci("0000:06:00.0", Some("ixgbe"), &[]);
    let empty_net = sys.0.join("bus/pci/devices/0000:06:00.0/net");
    std::fs::create_dir(&empty_net).expect("empty net dir");
    let name = |pci: &str| sysfs_device_name(&Source::Pci(pci.into()), &sys.0);
    assert_eq!(name("0000:04:00.0").expect("net"), Some("ens4".into()));
    assert_eq!(name("0000:05:00.0").expect("virtio"), Some("eth7".into()));
    let e = name("0000:06:00.0").expect_err("empty net dir");
    assert!(
        e.msg.starts_with("failed to find network device in path"),
        "{e:?}"
    );
    std::fs::remove_dir(&empty_net).expect("rmdir");
    let e = name("0000:06:00.0").expect_err("no net dir");
    assert_eq!(e.msg, "no net directory under pci device 0000:06:00.0");
    assert_eq!(
        sysfs_device_name(&Source::Name("eth0".into()), &sys.0).expect("name"),
        None
    );
}

#[test]
fn config_keys_pick_the_device_in_the_reference_order() {
    let sys = FakeSys::new("order");
    let none = resolve(Keys::default(), "", &sys.0).expect_err("none");
    assert_eq!(none.code, 7);
    let mac = Keys {
        hwaddr: "0A:58:0A:16:00:02".into(),
        kernelpath: "/sys/devices/x".into(),
        ..Default::default()
    };
    assert_eq!(
        resolve(mac, "", &sys.0).expect("mac").source,
        Source::Mac([0x0a, 0x58, 0x0a, 0x16, 0, 2])
    );
    let escaping = Keys {
        kernelpath: "/sys/devices/../../etc".into(),
        ..Default::default()
    };
    assert_eq!(resolve(escaping, "", &sys.0).expect_err("kp").code, 7);
    assert_eq!(resolve(keys("../x"), "", &sys.0).expect_err("pci").code, 7);
}
