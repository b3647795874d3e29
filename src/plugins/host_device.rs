//! host-device: moves an existing host device into the container as CNI_IFNAME,
//! remembering its name in the interface alias, and moves it back on DEL.
//!
//! Renames happen inside a temporary namespace, never in the host or the
//! container: udev and NetworkManager react to a device appearing under a
//! passing name, and raced the reference's older temporary-name scheme.
//! A PCI device bound to a userspace (DPDK) driver has no netdev: nothing is
//! moved or configured, IPAM still runs.

use crate::cni::error::Context;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Error, Invocation, Plugin};
use crate::iface;
use crate::netlink::Socket;
use crate::netlink::link::{Change, Link, parse_mac};
use crate::netns::NetNs;
use serde::Deserialize;
use std::path::{Component, Path, PathBuf};

pub struct HostDevice;

/// Where sysfs is mounted; unit tests point the same logic at a fake tree.
const SYSFS: &str = "/sys";

/// Drivers that hand a PCI device to userspace (DPDK): it has no netdev to move.
const USERSPACE_DRIVERS: [&str; 3] = ["vfio-pci", "uio_pci_generic", "igb_uio"];

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Keys {
    device: String,
    hwaddr: String,
    kernelpath: String,
    #[serde(rename = "pciBusID")]
    pci_bus_id: String,
}

/// How the device is found.
#[derive(Debug, PartialEq)]
enum Source {
    Name(String),
    Mac([u8; 6]),
    /// A `/sys/devices/...` directory whose `net/` holds the device name.
    KernelPath(PathBuf),
    /// A PCI address under `bus/pci/devices`.
    Pci(String),
    /// An auxiliary device under `bus/auxiliary/devices`.
    Aux(String),
}

#[derive(Debug, PartialEq)]
struct Target {
    source: Source,
    /// The PCI device is bound to a userspace driver.
    dpdk: bool,
}

fn target(inv: &Invocation) -> CniResult<Target> {
    let k: Keys = inv.conf.plugin_keys()?;
    let device_id = inv
        .conf
        .runtime_config::<String>("deviceID")?
        .unwrap_or_default();
    resolve(k, &device_id, Path::new(SYSFS))
}

/// The reference's loadConf: `runtimeConfig.deviceID` (PCI, else auxiliary)
/// overrides `pciBusID`; then the first of device, hwaddr, kernelpath, PCI,
/// auxiliary names the device. A PCI address is always checked for a
/// userspace driver, even when another key names the device.
fn resolve(k: Keys, device_id: &str, sys: &Path) -> CniResult<Target> {
    let mut pci = k.pci_bus_id;
    let mut aux = String::new();
    if !device_id.is_empty() {
        checked_component(device_id)?;
        if pci_dir(sys, device_id).exists() {
            pci = device_id.to_string();
        } else if aux_dir(sys, device_id).exists() {
            pci.clear();
            aux = device_id.to_string();
        } else {
            return Err(Error::internal(format!(
                "runtime config DeviceID {device_id} not found or unsupported"
            )));
        }
    }
    let dpdk = if pci.is_empty() {
        false
    } else {
        checked_component(&pci)?;
        has_dpdk_driver(sys, &pci)?
    };
    let source = if !k.device.is_empty() {
        crate::cni::config::link_name_key("device", &k.device)?;
        Source::Name(k.device)
    } else if !k.hwaddr.is_empty() {
        let mac = parse_mac(&k.hwaddr)
            .ok_or_else(|| Error::invalid_config(format!("invalid hwaddr {:?}", k.hwaddr)))?;
        Source::Mac(mac)
    } else if !k.kernelpath.is_empty() {
        let path = Path::new(&k.kernelpath);
        let climbs = path.components().any(|c| c == Component::ParentDir);
        if !k.kernelpath.starts_with("/sys/devices/") || climbs {
            return Err(Error::invalid_config(format!(
                "kernel device path {:?} must be absolute and begin with /sys/devices/",
                k.kernelpath
            )));
        }
        Source::KernelPath(path.to_path_buf())
    } else if !pci.is_empty() {
        Source::Pci(pci)
    } else if !aux.is_empty() {
        Source::Aux(aux)
    } else {
        return Err(Error::invalid_config(
            "specify either \"device\", \"hwaddr\", \"kernelpath\" or \"pciBusID\"",
        ));
    };
    Ok(Target { source, dpdk })
}

fn names_a_device(inv: &Invocation) -> CniResult<()> {
    let k: Keys = inv.conf.plugin_keys()?;
    let device_id = inv.conf.runtime_config::<String>("deviceID")?;
    let named = [&k.device, &k.hwaddr, &k.kernelpath, &k.pci_bus_id]
        .iter()
        .any(|v| !v.is_empty())
        || device_id.is_some_and(|d| !d.is_empty());
    if !named {
        return Err(Error::invalid_config(
            "specify either \"device\", \"hwaddr\", \"kernelpath\" or \"pciBusID\"",
        ));
    }
    Ok(())
}

/// A PCI address or device ID is one path component under a fixed sysfs directory.
fn checked_component(id: &str) -> CniResult<&str> {
    if id.is_empty() || id == "." || id == ".." || id.contains(['/', '\0']) {
        return Err(Error::invalid_config(format!("invalid device id {id:?}")));
    }
    Ok(id)
}

fn pci_dir(sys: &Path, id: &str) -> PathBuf {
    sys.join("bus/pci/devices").join(id)
}

fn aux_dir(sys: &Path, id: &str) -> PathBuf {
    sys.join("bus/auxiliary/devices").join(id)
}

/// Whether the device's `driver` link resolves to a userspace driver. A
/// device without a driver is an error, as in the reference.
fn has_dpdk_driver(sys: &Path, pci: &str) -> CniResult<bool> {
    let link = pci_dir(sys, pci).join("driver");
    let driver = fs_err::canonicalize(&link)
        .map_err(|e| Error::caused_by(crate::cni::Code::Internal, "error with host device", e))?;
    let name = driver.file_name().map(|n| n.to_string_lossy());
    Ok(name.is_some_and(|n| USERSPACE_DRIVERS.contains(&n.as_ref())))
}

/// The first (by name) device under `dir`.
fn first_net_device(dir: &Path) -> CniResult<String> {
    let entries = fs_err::read_dir(dir).map_err(|e| {
        Error::caused_by(
            crate::cni::Code::Internal,
            format!("failed to read directory {}", dir.display()),
            e,
        )
    })?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names.into_iter().next().ok_or_else(|| {
        Error::internal(format!(
            "failed to find network device in path {}",
            dir.display()
        ))
    })
}

/// The device name sysfs gives for a path-like source; None for name and MAC.
fn sysfs_device_name(source: &Source, sys: &Path) -> CniResult<Option<String>> {
    let dir = match source {
        Source::Name(_) | Source::Mac(_) => return Ok(None),
        Source::KernelPath(path) => path.join("net"),
        Source::Aux(id) => aux_dir(sys, id).join("net"),
        Source::Pci(id) => {
            let net = pci_dir(sys, id).join("net");
            if fs_err::symlink_metadata(&net).is_ok() {
                net
            } else {
                virtio_net_dir(&pci_dir(sys, id)).ok_or_else(|| {
                    Error::internal(format!("no net directory under pci device {id}"))
                })?
            }
        }
    };
    first_net_device(&dir).map(Some)
}

/// `<dir>/virtio*/net`, the first in name order (virtio-net PCI functions).
fn virtio_net_dir(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = fs_err::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("virtio"))
        .map(|e| e.path().join("net"))
        .filter(|net| net.exists())
        .collect();
    found.sort();
    found.into_iter().next()
}

fn find_device(sock: &mut Socket, source: &Source, sys: &Path) -> CniResult<Link> {
    let found = match (source, sysfs_device_name(source, sys)?) {
        (_, Some(name)) => sock.link_by_name(&name)?,
        (Source::Name(name), None) => sock.link_by_name(name)?,
        (Source::Mac(mac), None) => sock
            .links()?
            .into_iter()
            .find(|l| l.mac == mac.as_slice())
            .ok_or_else(|| Error::internal("failed to find physical interface"))?,
        (_, None) => return Err(Error::internal("failed to find physical interface")),
    };
    Ok(found)
}

impl Plugin for HostDevice {
    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let target = target(inv)?;
        let ns = iface::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.as_str();
        if target.dpdk {
            return add_dpdk(inv);
        }
        let mut host = Socket::open()?;
        let device = find_device(&mut host, &target.source, Path::new(SYSFS))
            .context("failed to find host device")?;
        let link = move_in(&mut host, &device, &ns, ifname).context("failed to move link")?;
        let mut result = NetResult::new();
        result.interfaces = vec![iface::result_interface(&link, Some(&inv.env.netns))];
        let has_ipam = inv.conf.ipam_type().is_some();
        let mut result = match iface::configure_single(inv, &ns, ifname, result, false) {
            Ok(r) => r,
            Err(e) => {
                // Give the device back rather than strand it in the container.
                let _ = move_out(&ns, ifname);
                return Err(e);
            }
        };
        // Without IPAM the reference prints the link alone, without DNS.
        if has_ipam {
            result.dns = inv.conf.common.dns.clone().unwrap_or_default();
        }
        Ok(result)
    }

    /// The reference's DEL refuses only a config that names no device; how
    /// ADD finds it (and what ADD refuses there) does not matter to DEL.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        names_a_device(inv)?;
        // A device that left sysfs (unplugged, unbound), or a config ADD
        // refuses, must not make DEL fail for good: without a driver to tell,
        // the container is looked at.
        let dpdk = target(inv).is_ok_and(|t| t.dpdk);
        if inv.conf.ipam_type().is_some() {
            crate::cni::delegate::Delegate::ipam(inv)?.del()?;
        }
        if dpdk {
            return Ok(());
        }
        // No namespace: the kernel has already returned the device.
        match NetNs::open_for_del(&inv.env.netns)? {
            Some(ns) => move_out(&ns, &inv.env.ifname),
            None => Ok(()),
        }
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        if target(inv)?.dpdk {
            iface::open_netns(&inv.env.netns)?;
            if inv.conf.ipam_type().is_some() {
                crate::cni::delegate::Delegate::ipam(inv)?.check()?;
            }
            inv.conf
                .prev_result()?
                .ok_or_else(|| Error::invalid_config("Required prevResult missing"))?;
            return Ok(());
        }
        iface::check_single(inv, None).map(drop)
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        iface::gc_ipam(inv)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        iface::status_ipam(inv)
    }
}

/// ADD for a device in userspace hands: the interface as named, no MAC;
/// IPAM's addresses reported for it but configured nowhere.
fn add_dpdk(inv: &Invocation) -> CniResult<NetResult> {
    let mut result = dpdk_result(inv);
    if inv.conf.ipam_type().is_none() {
        return Ok(result);
    }
    let ipam = crate::cni::delegate::Delegate::ipam(inv)?;
    let (ipam_result, rollback) = ipam.add_guarded()?;
    iface::adopt_ipam_result(&mut result, ipam_result, 0)?;
    result.dns = inv.conf.common.dns.clone().unwrap_or_default();
    rollback.keep();
    Ok(result)
}

fn dpdk_result(inv: &Invocation) -> NetResult {
    let mut result = NetResult::new();
    result.interfaces = vec![crate::cni::result::Interface {
        name: inv.env.ifname.clone(),
        sandbox: inv.env.netns.clone(),
        ..Default::default()
    }];
    result
}

/// Host → temporary namespace (renamed to `ifname`, alias := host name) →
/// container, set up there. A failure undoes each step done, and the device
/// is back in the host under its name, up again if it was.
fn move_in(host: &mut Socket, device: &Link, container: &NetNs, ifname: &str) -> CniResult<Link> {
    let temp = NetNs::temporary().context("failed to create tempNS")?;
    let moved = move_in_via(host, device, &temp, container, ifname);
    // Leaving a namespace set it down; only the host can set it up again.
    if moved.is_err()
        && device.is_up()
        && let Ok(back) = host.link_by_name(&device.name)
    {
        let _ = host.set_link(back.index, Change::Up(true));
    }
    moved
}

fn move_in_via(
    host: &mut Socket,
    device: &Link,
    temp: &NetNs,
    container: &NetNs,
    ifname: &str,
) -> CniResult<Link> {
    let name = device.name.as_str();
    host.set_link(device.index, Change::Netns(temp.fd()))
        .with_context(|| format!("failed to move {name:?} to tempNS"))?;
    let host_ns = NetNs::current()?;
    temp.run(|| -> CniResult<Link> {
        let mut sock = Socket::open()?;
        let dev = sock
            .link_by_name(name)
            .with_context(|| format!("failed to find {name:?} in tempNS"))?;
        let entered = rename_and_enter(&mut sock, dev.index, name, temp, container, ifname);
        if entered.is_err() {
            // The only device here, under either name (back from the
            // container under `ifname` if it got that far).
            let here = sock
                .link_by_name(ifname)
                .or_else(|_| sock.link_by_name(name));
            if let Ok(dev) = here {
                let _ = sock.set_link(dev.index, Change::Alias(""));
                let _ = sock.set_link(dev.index, Change::Name(name));
                let _ = sock.set_link(dev.index, Change::Netns(host_ns.fd()));
            }
        }
        entered
    })?
}

/// In the temporary namespace: rename, alias, into the container, up there
/// (sent back here if that fails).
fn rename_and_enter(
    sock: &mut Socket,
    index: u32,
    name: &str,
    temp: &NetNs,
    container: &NetNs,
    ifname: &str,
) -> CniResult<Link> {
    sock.set_link(index, Change::Name(ifname))
        .with_context(|| format!("failed to rename host device {name:?} to {ifname:?}"))?;
    sock.set_link(index, Change::Alias(name))
        .with_context(|| format!("failed to set alias to {name:?}"))?;
    sock.set_link(index, Change::Netns(container.fd()))
        .with_context(|| format!("failed to move {ifname:?} (host: {name:?}) to container NS"))?;
    container.run(|| -> CniResult<Link> {
        let mut sock = Socket::open()?;
        let link = sock
            .link_by_name(ifname)
            .with_context(|| format!("failed to find {ifname:?} in container NS"))?;
        if let Err(e) = sock.set_link(link.index, Change::Up(true)) {
            let _ = sock.set_link(link.index, Change::Netns(temp.fd()));
            return Err(e).with_context(|| format!("failed to set {ifname:?} up"));
        }
        Ok(sock.link_by_index(link.index)?)
    })?
}

/// Container → temporary namespace (renamed to its alias, alias cleared) →
/// host, left down. A device already gone is success; a failure leaves it in
/// the container as it was.
fn move_out(container: &NetNs, ifname: &str) -> CniResult<()> {
    let temp = NetNs::temporary().context("failed to create tempNS")?;
    let host_ns = NetNs::current()?;
    let left = container.run(|| -> CniResult<Option<bool>> {
        let mut sock = Socket::open()?;
        let link = match sock.link_by_name(ifname) {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| format!("failed to find {ifname:?} in containerNS"));
            }
        };
        if link.alias.is_empty() {
            return Err(Error::internal(format!(
                "failed to find original ifname for {ifname:?} (alias is not set)"
            )));
        }
        sock.set_link(link.index, Change::Netns(temp.fd()))
            .with_context(|| format!("failed to move {ifname:?} to tempNS"))?;
        Ok(Some(link.is_up()))
    })??;
    let Some(was_up) = left else {
        return Ok(());
    };
    let returned = temp.run(|| -> CniResult<()> {
        let mut sock = Socket::open()?;
        let dev = sock
            .link_by_name(ifname)
            .with_context(|| format!("failed to find {ifname:?} in tempNS"))?;
        let original = dev.alias.as_str();
        let steps = (|| -> CniResult<()> {
            sock.set_link(dev.index, Change::Name(original))
                .with_context(|| format!("failed to rename device {ifname:?} to {original:?}"))?;
            sock.set_link(dev.index, Change::Alias(""))
                .with_context(|| format!("failed to unset alias of {original:?}"))?;
            sock.set_link(dev.index, Change::Netns(host_ns.fd()))
                .with_context(|| format!("failed to move {original:?} to hostNS"))
        })();
        if steps.is_err() {
            let _ = sock.set_link(dev.index, Change::Alias(original));
            let _ = sock.set_link(dev.index, Change::Name(ifname));
            let _ = sock.set_link(dev.index, Change::Netns(container.fd()));
        }
        steps
    })?;
    if returned.is_err() && was_up {
        let _ = container.run(|| {
            if let Ok(mut sock) = Socket::open()
                && let Ok(link) = sock.link_by_name(ifname)
            {
                let _ = sock.set_link(link.index, Change::Up(true));
            }
        });
    }
    returned
}

#[cfg(test)]
mod tests {
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
}
