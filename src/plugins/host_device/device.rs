//! Which host device the config (and the runtime's `deviceID`) names: by
//! name, MAC, kernel path, PCI or auxiliary device, looked up in sysfs (a
//! parameter, so unit tests use a fake tree); whether a PCI device is bound
//! to a userspace (DPDK) driver.

use super::Keys;
use crate::cni::{CniResult, Error, Invocation};
use crate::netlink::Socket;
use crate::netlink::link::{Link, parse_mac};
use crate::quote::quoted;
use std::path::{Component, Path, PathBuf};

/// Drivers that hand a PCI device to userspace (DPDK): it has no netdev to move.
pub(super) const USERSPACE_DRIVERS: [&str; 3] = ["vfio-pci", "uio_pci_generic", "igb_uio"];

/// Where sysfs is mounted; unit tests point the same logic at a fake tree.
pub(super) const SYSFS: &str = "/sys";

/// How the device is found.
#[derive(Debug, PartialEq)]
pub(super) enum Source {
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
pub(super) struct Target {
    pub(super) source: Source,
    /// The PCI device is bound to a userspace driver.
    pub(super) dpdk: bool,
}

pub(super) fn target(inv: &Invocation) -> CniResult<Target> {
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
/// userspace driver, even when another key names the device; without one the
/// config's `DPDKMode` stands.
pub(super) fn resolve(k: Keys, device_id: &str, sys: &Path) -> CniResult<Target> {
    let mut pci = k.pci_bus_id.clone();
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
        k.dpdk_mode
    } else {
        checked_component(&pci)?;
        has_dpdk_driver(sys, &pci)?
    };
    let source = source(k, pci, aux)?;
    Ok(Target { source, dpdk })
}

/// The first of device, hwaddr, kernelpath, PCI and auxiliary device that is
/// set names the device: checked, with no lookup.
fn source(k: Keys, pci: String, aux: String) -> CniResult<Source> {
    Ok(if !k.device.is_empty() {
        crate::cni::config::link_name_key("device", &k.device)?;
        Source::Name(k.device)
    } else if !k.hwaddr.is_empty() {
        let mac = parse_mac(&k.hwaddr).ok_or_else(|| {
            Error::invalid_config(format!("invalid hwaddr {}", quoted(&k.hwaddr)))
        })?;
        Source::Mac(mac)
    } else if !k.kernelpath.is_empty() {
        let path = Path::new(&k.kernelpath);
        let climbs = path.components().any(|c| c == Component::ParentDir);
        if !k.kernelpath.starts_with("/sys/devices/") || climbs {
            return Err(Error::invalid_config(format!(
                "kernel device path {} must be absolute and begin with /sys/devices/",
                quoted(&k.kernelpath)
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
    })
}

/// What `target` checks of the config without looking in sysfs: a runtime's
/// `deviceID` stands for the device it names.
pub(super) fn validate(inv: &Invocation) -> CniResult<()> {
    names_a_device(inv)?;
    let k: Keys = inv.conf.plugin_keys()?;
    let device_id = inv
        .conf
        .runtime_config::<String>("deviceID")?
        .unwrap_or_default();
    for id in [&device_id, &k.pci_bus_id] {
        if !id.is_empty() {
            checked_component(id)?;
        }
    }
    let pci = k.pci_bus_id.clone();
    source(k, pci, device_id).map(drop)
}

pub(super) fn names_a_device(inv: &Invocation) -> CniResult<()> {
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
pub(super) fn checked_component(id: &str) -> CniResult<&str> {
    if id.is_empty() || id == "." || id == ".." || id.contains(['/', '\0']) {
        return Err(Error::invalid_config(format!(
            "invalid device id {id}",
            id = quoted(&id)
        )));
    }
    Ok(id)
}

pub(super) fn pci_dir(sys: &Path, id: &str) -> PathBuf {
    sys.join("bus/pci/devices").join(id)
}

pub(super) fn aux_dir(sys: &Path, id: &str) -> PathBuf {
    sys.join("bus/auxiliary/devices").join(id)
}

/// Whether the device's `driver` link resolves to a userspace driver. A
/// device without a driver is an error, as in the reference.
pub(super) fn has_dpdk_driver(sys: &Path, pci: &str) -> CniResult<bool> {
    let link = pci_dir(sys, pci).join("driver");
    let driver = fs_err::canonicalize(&link)
        .map_err(|e| Error::caused_by(crate::cni::Code::Internal, "error with host device", e))?;
    let name = driver.file_name().map(|n| n.to_string_lossy());
    Ok(name.is_some_and(|n| USERSPACE_DRIVERS.contains(&n.as_ref())))
}

/// The first (by name) device under `dir`.
pub(super) fn first_net_device(dir: &Path) -> CniResult<String> {
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
pub(super) fn sysfs_device_name(source: &Source, sys: &Path) -> CniResult<Option<String>> {
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
pub(super) fn virtio_net_dir(dir: &Path) -> Option<PathBuf> {
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

pub(super) fn find_device(sock: &mut Socket, source: &Source, sys: &Path) -> CniResult<Link> {
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
