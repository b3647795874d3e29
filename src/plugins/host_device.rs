//! host-device: moves an existing host device into the container as CNI_IFNAME,
//! remembering its name in the interface alias, and moves it back on DEL.

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

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Keys {
    device: String,
    hwaddr: String,
    kernelpath: String,
    #[serde(rename = "pciBusID")]
    pci_bus_id: String,
}

/// How the device is named in the config.
#[derive(Debug, PartialEq)]
enum Selector {
    Name(String),
    Mac([u8; 6]),
    /// A sysfs directory whose `net/` holds the device name.
    SysfsNet(PathBuf),
}

fn selector(inv: &Invocation) -> CniResult<Selector> {
    let k: Keys = inv.conf.plugin_keys()?;
    let device_id = inv
        .conf
        .runtime_config::<String>("deviceID")?
        .unwrap_or_default();
    if !k.device.is_empty() {
        crate::cni::config::link_name_key("device", &k.device)?;
        return Ok(Selector::Name(k.device));
    }
    if !k.hwaddr.is_empty() {
        return parse_mac(&k.hwaddr)
            .map(Selector::Mac)
            .ok_or_else(|| Error::invalid_config(format!("invalid hwaddr {:?}", k.hwaddr)));
    }
    if !k.kernelpath.is_empty() {
        let path = Path::new(&k.kernelpath);
        let climbs = path.components().any(|c| c == Component::ParentDir);
        if !k.kernelpath.starts_with("/sys/devices/") || climbs {
            return Err(Error::invalid_config(format!(
                "kernel device path {:?} must refer to /sys/devices",
                k.kernelpath
            )));
        }
        return Ok(Selector::SysfsNet(path.to_path_buf()));
    }
    if !k.pci_bus_id.is_empty() {
        return pci_dir(&k.pci_bus_id).map(Selector::SysfsNet);
    }
    if !device_id.is_empty() {
        let pci = pci_dir(&device_id)?;
        if pci.exists() {
            return Ok(Selector::SysfsNet(pci));
        }
        return Ok(Selector::SysfsNet(
            Path::new("/sys/bus/auxiliary/devices").join(checked_component(&device_id)?),
        ));
    }
    Err(Error::invalid_config(
        "specify either \"device\", \"hwaddr\", \"kernelpath\" or \"pciBusID\"",
    ))
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

fn pci_dir(id: &str) -> CniResult<PathBuf> {
    Ok(Path::new("/sys/bus/pci/devices").join(checked_component(id)?))
}

/// The device name under `<dir>/net`, or under `<dir>/virtio*/net` (virtio devices).
fn sysfs_net_name(dir: &Path) -> CniResult<String> {
    let first = |net: PathBuf| -> Option<String> {
        let mut names: Vec<String> = fs_err::read_dir(net)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        names.sort();
        names.into_iter().next()
    };
    if let Some(name) = first(dir.join("net")) {
        return Ok(name);
    }
    if let Ok(entries) = fs_err::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with("virtio")
                && let Some(name) = first(e.path().join("net"))
            {
                return Ok(name);
            }
        }
    }
    Err(Error::internal(format!(
        "failed to find a network device under {}",
        dir.display()
    )))
}

fn find_device(sock: &mut Socket, sel: &Selector) -> CniResult<Link> {
    const WHAT: &str = "failed to find host device";
    match sel {
        Selector::Name(name) => sock.link_by_name(name).context(WHAT),
        Selector::Mac(mac) => sock
            .links()?
            .into_iter()
            .find(|l| l.mac == mac.as_slice())
            .ok_or_else(|| {
                Error::internal("failed to find host device: no device with that hardware address")
            }),
        Selector::SysfsNet(dir) => {
            let name = sysfs_net_name(dir)?;
            sock.link_by_name(&name).context(WHAT)
        }
    }
}

impl Plugin for HostDevice {
    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let sel = selector(inv)?;
        let ns = iface::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.as_str();
        let mut host = Socket::open()?;
        let device = find_device(&mut host, &sel)?;
        let link = move_in(&mut host, &device, &ns, ifname)?;
        let mut result = NetResult::new();
        result.interfaces = vec![iface::result_interface(&link, Some(&inv.env.netns))];
        let configured = iface::configure_single(inv, &ns, ifname, result, false);
        let mut result = match configured {
            Ok(r) => r,
            Err(e) => {
                // Give the device back rather than strand it in the container.
                let _ = move_out(&ns, ifname);
                return Err(e);
            }
        };
        result.dns = inv.conf.common.dns.clone().unwrap_or_default();
        Ok(result)
    }

    /// The reference's DEL refuses only a config that names no device; how
    /// ADD finds it (and what ADD refuses there) does not matter to DEL.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        names_a_device(inv)?;
        if inv.conf.ipam_type().is_some() {
            crate::cni::delegate::Delegate::ipam(inv)?.del()?;
        }
        // No namespace: the kernel has already returned the device.
        match NetNs::open_for_del(&inv.env.netns)? {
            Some(ns) => move_out(&ns, &inv.env.ifname),
            None => Ok(()),
        }
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        selector(inv)?;
        iface::check_single(inv, None).map(drop)
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        iface::gc_ipam(inv)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        iface::status_ipam(inv)
    }
}

/// Host side: down, alias := name, temporary name, into the container; there:
/// CNI_IFNAME. Each step is undone if a later one fails.
fn move_in(host: &mut Socket, device: &Link, ns: &NetNs, ifname: &str) -> CniResult<Link> {
    let tmp = iface::random_name("dev")?;
    let index = device.index;
    host.set_link(index, Change::Up(false))?;
    host.set_link(index, Change::Alias(&device.name))?;
    let undo_host = |host: &mut Socket| {
        let _ = host.set_link(index, Change::Name(&device.name));
        let _ = host.set_link(index, Change::Alias(""));
    };
    if let Err(e) = host
        .set_link(index, Change::Name(&tmp))
        .and_then(|_| host.set_link(index, Change::Netns(ns.fd())))
    {
        undo_host(host);
        return Err(e)
            .with_context(|| format!("failed to move {:?} to the container", device.name));
    }
    let host_fd = NetNs::current()?;
    let moved = ns.run(|| -> CniResult<Link> {
        let mut sock = Socket::open()?;
        let link = sock.link_by_name(&tmp)?;
        if let Err(e) = sock.set_link(link.index, Change::Name(ifname)) {
            let _ = sock.set_link(link.index, Change::Netns(host_fd.fd()));
            return Err(e)
                .with_context(|| format!("failed to rename {:?} to {ifname:?}", device.name));
        }
        Ok(sock.link_by_index(link.index)?)
    })?;
    if moved.is_err()
        && let Ok(back) = host.link_by_name(&tmp)
    {
        let _ = host.set_link(back.index, Change::Name(&device.name));
        let _ = host.set_link(back.index, Change::Alias(""));
    }
    moved
}

/// Container side: down, temporary name, back to the host; there: the alias
/// becomes the name again and is cleared. A device already gone is success.
fn move_out(ns: &NetNs, ifname: &str) -> CniResult<()> {
    let host_ns = NetNs::current()?;
    let tmp = iface::random_name("dev")?;
    let moved = ns.run(|| -> CniResult<Option<String>> {
        let mut sock = Socket::open()?;
        let link = match sock.link_by_name(ifname) {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if link.alias.is_empty() {
            return Err(Error::internal(format!(
                "failed to find the host name of {ifname:?}: no alias"
            )));
        }
        sock.set_link(link.index, Change::Up(false))?;
        sock.set_link(link.index, Change::Name(&tmp))?;
        sock.set_link(link.index, Change::Netns(host_ns.fd()))?;
        Ok(Some(link.alias))
    })??;
    let Some(original) = moved else {
        return Ok(());
    };
    let mut host = Socket::open()?;
    let link = host.link_by_name(&tmp)?;
    host.set_link(link.index, Change::Name(&original))
        .with_context(|| format!("failed to restore name {original:?}"))?;
    host.set_link(link.index, Change::Alias(""))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_leave_sysfs() {
        assert!(checked_component("0000:00:1f.6").is_ok());
        for bad in ["", "..", "../../etc", "a/b", "a\0"] {
            assert!(checked_component(bad).is_err(), "{bad:?}");
        }
    }
}
