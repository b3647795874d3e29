//! host-device: moves an existing host device into the container as CNI_IFNAME,
//! remembering its name in the interface alias (for the reference's DEL) and,
//! with what the device is, in a root-owned state file; DEL moves back only
//! the recorded device, under its recorded name, and only a device a
//! container could not have made (tun, vxlan, … stay in its namespace, and so
//! does a macvlan in a pod's own user namespace).
//!
//! Renames happen inside a temporary namespace, never in the host or the
//! container: udev and NetworkManager react to a device appearing under a
//! passing name, and raced the reference's older temporary-name scheme.
//! A PCI device bound to a userspace (DPDK) driver has no netdev: nothing is
//! moved or configured, IPAM still runs.

mod device;
mod record;
mod unrecorded;

use crate::attach;
use crate::cni::error::Context;
use crate::cni::result::NetResult;
use crate::cni::{CniResult, Code, Error, Invocation, Plugin};
use crate::netlink::Socket;
use crate::netlink::link::{Change, Link, LinkKind};
use crate::netns::NetNs;
use crate::quote::quoted;
use device::*;
use record::{Identity, Lower, Owner, Record, View};
use serde::Deserialize;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use unrecorded::del_unrecorded;

pub struct HostDevice;

/// Where ADD records the devices it moved (`dataDir`).
const DEFAULT_DATA_DIR: &str = "/run/cni/host-device";

/// Largest state file read: a record is a few hundred bytes.
const MAX_STATE: u64 = 64 << 10;

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    device: String,
    hwaddr: String,
    kernelpath: String,
    pci_bus_id: String,
    /// The reference reads this untagged field from the config too; a PCI
    /// address's driver overrides it.
    dpdk_mode: bool,
    data_dir: String,
}

impl Plugin for HostDevice {
    fn delegates_ipam(&self) -> bool {
        true
    }

    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        validate(inv)?;
        data_dir(&inv.conf.plugin_keys()?).map(drop)
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let target = target(inv)?;
        let dir = data_dir(&inv.conf.plugin_keys()?)?;
        let ns = attach::open_netns(&inv.env.netns)?;
        let ifname = inv.env.ifname.as_str();
        if target.dpdk {
            return add_dpdk(inv);
        }
        let mut host = Socket::open()?;
        let device = find_device(&mut host, &target.source, Path::new(SYSFS))
            .context("failed to find host device")?;
        // Recorded before the move: no moment has the device in the
        // container without a record of it.
        let mut record = Record {
            container_id: inv.env.container_id.clone(),
            ifname: ifname.to_string(),
            host_name: device.name.clone(),
            identity: Identity::of(&device, sysfs_path(&device, Path::new(SYSFS))),
        };
        let path = crate::files::attachment_record(&dir, &record.container_id, ifname);
        crate::files::write_private_atomic(&path, &record::encode(&record))
            .map_err(|e| Error::from(e).context("failed to record the host device"))?;
        let link = match move_in(&mut host, &device, &ns, ifname) {
            Ok(link) => link,
            Err(e) => {
                let _ = remove_record(&path);
                return Err(e.context("failed to move link"));
            }
        };
        // The index it got there tells it from a link built on it.
        record.identity.pod_index = Some(link.index);
        if let Err(e) = crate::files::write_private_atomic(&path, &record::encode(&record)) {
            if move_back(&record, &ns, ifname).is_ok() {
                let _ = remove_record(&path);
            }
            return Err(Error::from(e).context("failed to record the host device"));
        }
        let mut result = NetResult::new();
        result.interfaces = vec![attach::result_interface(&link, Some(&inv.env.netns))];
        let has_ipam = inv.conf.ipam_type().is_some();
        let mut result = match attach::configure_single(inv, &ns, ifname, result, false) {
            Ok(r) => r,
            Err(e) => {
                // Give the device back rather than strand it in the container;
                // the record stays while it is there.
                if move_back(&record, &ns, ifname).is_ok() {
                    let _ = remove_record(&path);
                }
                return Err(e);
            }
        };
        // Without IPAM the reference prints the link alone, without DNS.
        if has_ipam {
            attach::config_dns_over(inv, &mut result);
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
        // ADD refuses a bad dataDir before it records anything: there is no
        // record under one.
        let path = inv
            .conf
            .plugin_keys::<Keys>()
            .and_then(|k| data_dir(&k))
            .ok()
            .map(|dir| {
                crate::files::attachment_record(&dir, &inv.env.container_id, &inv.env.ifname)
            });
        // No namespace: the kernel has already returned the device.
        let Some(ns) = NetNs::open_for_del(&inv.env.netns)? else {
            return path.as_deref().map_or(Ok(()), remove_record);
        };
        let record = match &path {
            Some(path) => read_record(path, inv)?,
            None => None,
        };
        let owner = owner_of(&ns);
        match (record, path) {
            (Some(record), Some(path)) => {
                del_recorded(&record, &ns, owner)?;
                remove_record(&path)
            }
            _ => del_unrecorded(inv, &ns, owner),
        }
    }

    fn check(&self, inv: &Invocation) -> CniResult<()> {
        if target(inv)?.dpdk {
            attach::open_netns(&inv.env.netns)?;
            if inv.conf.ipam_type().is_some() {
                crate::cni::delegate::Delegate::ipam(inv)?.check()?;
            }
            inv.conf
                .prev_result()?
                .ok_or_else(|| Error::invalid_config("Required prevResult missing"))?;
            return Ok(());
        }
        attach::check_single(inv, None).map(drop)
    }

    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        attach::gc_ipam(inv)
    }

    fn status(&self, inv: &Invocation) -> CniResult<()> {
        attach::status_ipam(inv)
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
    attach::adopt_ipam_result(&mut result, ipam_result, 0)?;
    attach::config_dns_over(inv, &mut result);
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
    host.set_link(device, Change::Netns(temp.fd()))
        .with_context(|| format!("failed to move {name} to tempNS", name = quoted(&name)))?;
    let host_ns = NetNs::current()?;
    temp.run(|| -> CniResult<Link> {
        let mut sock = Socket::open()?;
        let dev = sock
            .link_by_name(name)
            .with_context(|| format!("failed to find {name} in tempNS", name = quoted(&name)))?;
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
        .with_context(|| {
            format!(
                "failed to rename host device {name} to {ifname}",
                name = quoted(&name),
                ifname = quoted(&ifname)
            )
        })?;
    sock.set_link(index, Change::Alias(name))
        .with_context(|| format!("failed to set alias to {name}", name = quoted(&name)))?;
    sock.set_link(index, Change::Netns(container.fd()))
        .with_context(|| {
            format!(
                "failed to move {ifname} (host: {name}) to container NS",
                ifname = quoted(&ifname),
                name = quoted(&name)
            )
        })?;
    container.run(|| -> CniResult<Link> {
        let mut sock = Socket::open()?;
        let link = sock.link_by_name(ifname).with_context(|| {
            format!(
                "failed to find {ifname} in container NS",
                ifname = quoted(&ifname)
            )
        })?;
        if let Err(e) = sock.set_link(&link, Change::Up(true)) {
            let _ = sock.set_link(link.index, Change::Netns(temp.fd()));
            return Err(e)
                .with_context(|| format!("failed to set {ifname} up", ifname = quoted(&ifname)));
        }
        Ok(sock.link_by_index(link.index)?)
    })?
}

fn data_dir(k: &Keys) -> CniResult<PathBuf> {
    crate::cni::config::path_setting(Some(&k.data_dir), DEFAULT_DATA_DIR, "dataDir")
}

/// `/sys/devices/…` of a link's parent device, when it has one ("" otherwise).
fn sysfs_path(link: &Link, sys: &Path) -> String {
    let (bus, dev) = (link.parent_bus.as_str(), link.parent_dev.as_str());
    if checked_component(bus).is_err() || checked_component(dev).is_err() {
        return String::new();
    }
    let listed = sys.join("bus").join(bus).join("devices").join(dev);
    fs_err::canonicalize(listed)
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// This attachment's record; None when there is no file.
fn read_record(path: &Path, inv: &Invocation) -> CniResult<Option<Record>> {
    let bytes = match crate::files::read_state_limited(path, MAX_STATE) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::from(e).context("failed to read the host device record")),
    };
    record::decode(&bytes, &inv.env.container_id, &inv.env.ifname)
        .map(Some)
        .map_err(|e| e.context(format!("invalid host device record {}", path.display())))
}

fn remove_record(path: &Path) -> CniResult<()> {
    crate::files::remove_state(path)
        .map_err(|e| Error::from(e).context("failed to remove the host device record"))
}

/// Whose user namespace the container's namespace belongs to; one we cannot
/// tell counts as the pod's.
fn owner_of(ns: &NetNs) -> Owner {
    match ns.owner_is_ours() {
        Ok(true) => Owner::Host,
        _ => Owner::Pod,
    }
}

/// How the namespace `sock` is open in sees the host: the id it gives it.
fn view_from(sock: &mut Socket, host_ns: &NetNs) -> CniResult<View> {
    Ok(View::Away(sock.netns_id(host_ns.fd())?))
}

/// Why `link` (in the namespace of `ns_fd`, seen from `view`) is not the
/// recorded device; None when it is. A veth is confirmed from the host too.
fn recorded_mismatch(
    record: &Record,
    link: &Link,
    view: View,
    host: &mut Socket,
    ns_fd: RawFd,
) -> CniResult<Option<String>> {
    if let Some(why) = record.identity.mismatch(link, view) {
        return Ok(Some(why));
    }
    if record.identity.kind == LinkKind::Veth
        && let Some(peer) = record.identity.host_link
        && !record::host_confirms_pair(host, peer, link, ns_fd)?
    {
        return Ok(Some(format!(
            "the host's veth at index {peer} is not its peer"
        )));
    }
    Ok(None)
}

/// Moves the recorded device, under whatever name the container gave it,
/// back to the host under its recorded name: checked again in the temporary
/// namespace, where the container cannot swap it any more.
fn move_back(record: &Record, container: &NetNs, pod_name: &str) -> CniResult<()> {
    let host_ns = NetNs::current()?;
    let mut host = Socket::open()?;
    move_out(
        container,
        pod_name,
        &record.host_name,
        &mut |sock, link, temp| {
            let view = view_from(sock, &host_ns)?;
            match recorded_mismatch(record, link, view, &mut host, temp.fd())? {
                None => Ok(()),
                Some(why) => Err(Error::new(
                    Code::InvalidNetns,
                    format!(
                        "{pod_name} changed as it left the container: {why}",
                        pod_name = quoted(&pod_name)
                    ),
                )),
            }
        },
    )
}

/// DEL of a recorded attachment. The container's link at CNI_IFNAME goes
/// back only if it is the recorded device; the recorded device found under
/// another name goes back too. A link at CNI_IFNAME that is not the device is
/// an error naming both (after the device, if found, went home), and nothing
/// of it reaches the host. No device and nothing at CNI_IFNAME: gone, success.
/// A device nothing proves (`Identity::unprovable`) never goes back.
fn del_recorded(record: &Record, ns: &NetNs, owner: Owner) -> CniResult<()> {
    let ifname = record.ifname.as_str();
    let host_ns = NetNs::current()?;
    if let Some(why) = record.identity.unprovable(owner) {
        leave_unprovable(record, ns, &host_ns, &why);
        return Ok(());
    }
    let mut host = Socket::open()?;
    let (named, why_not, proven, view) = ns.run(|| -> CniResult<_> {
        let mut sock = Socket::open()?;
        let links = sock.links()?;
        // After the dump, which numbers the host if the links' peers are there.
        let view = view_from(&mut sock, &host_ns)?;
        let named = links.iter().find(|l| l.name == ifname).cloned();
        let (mut proven, mut why_not) = (None, String::new());
        for link in named
            .iter()
            .chain(links.iter().filter(|l| l.name != ifname))
        {
            match recorded_mismatch(record, link, view, &mut host, ns.fd())? {
                None => {
                    proven = Some(link.clone());
                    break;
                }
                Some(why) if link.name == ifname => why_not = why,
                Some(_) => {}
            }
        }
        Ok((named, why_not, proven, view))
    })??;
    if let Some(device) = &proven {
        move_back(record, ns, &device.name)?;
    }
    let impostor = named.filter(|n| proven.as_ref().is_none_or(|p| p.index != n.index));
    let Some(impostor) = impostor else {
        return Ok(());
    };
    if proven.is_none() && home_or_gone(record, &mut host)? {
        return Ok(());
    }
    let outcome = match &proven {
        Some(device) => format!(
            "the recorded device, found as {}, was moved back",
            quoted(&device.name)
        ),
        None => "the recorded device is not in the container; nothing was moved".to_string(),
    };
    Err(Error::new(
        Code::InvalidNetns,
        format!(
            "{ifname} in the container is not the device ADD moved there: recorded {record}; found {} ({why_not}); {outcome}",
            record::describe(&impostor, view),
            ifname = quoted(&ifname)
        ),
    ))
}

/// A recorded device without a bus device, permanent MAC or peer in the host
/// (a tun, a vxlan, a bond, …; a macvlan in a pod's own user namespace): a
/// container can copy it, so whatever it has at CNI_IFNAME stays there, said
/// on stderr (`why`). The device is virtual and ends with the namespace;
/// nothing failed, so DEL succeeds.
fn leave_unprovable(record: &Record, ns: &NetNs, host_ns: &NetNs, why: &str) {
    let ifname = record.ifname.as_str();
    let found = ns.run(|| -> CniResult<Option<String>> {
        let mut sock = Socket::open()?;
        match sock.link_by_name(ifname) {
            Ok(link) => Ok(Some(record::describe(
                &link,
                view_from(&mut sock, host_ns)?,
            ))),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    });
    let what = match found {
        Ok(Ok(Some(link))) => link,
        Ok(Ok(None)) => format!(
            "whatever is there (nothing at {ifname})",
            ifname = quoted(&ifname)
        ),
        Ok(Err(e)) => format!("{ifname} ({e})", ifname = quoted(&ifname)),
        Err(e) => format!("{ifname} ({e})", ifname = quoted(&ifname)),
    };
    eprintln!(
        "host-device: left {what} in the container, not moved to the host: the recorded {record} {why}, so nothing tells it from a link the container made"
    );
}

/// The recorded device is in the host under its name, or it is no more (a
/// veth pair ends together: no host end, no device).
fn home_or_gone(record: &Record, host: &mut Socket) -> CniResult<bool> {
    match host.link_by_name(&record.host_name) {
        Ok(link) if record.identity.mismatch(&link, View::Host).is_none() => return Ok(true),
        Err(e) if !e.is_not_found() => return Err(e.into()),
        _ => {}
    }
    let (true, Some(peer)) = (
        record.identity.kind == LinkKind::Veth,
        record.identity.host_link,
    ) else {
        return Ok(false);
    };
    match host.link_by_index(peer) {
        Ok(end) => Ok(end.kind != LinkKind::Veth
            || !matches!(record::lower(&end, View::Host), Lower::Other(..))),
        Err(e) if e.is_not_found() => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// `verify` looks at the device in the temporary namespace (its socket open
/// there) before it goes to the host.
type Verify<'a> = dyn FnMut(&mut Socket, &Link, &NetNs) -> CniResult<()> + 'a;

/// Container (`pod_name`) → temporary namespace (verified, renamed
/// `host_name`, alias cleared) → host, left down. A device already gone is
/// success; a failure leaves it in the container as it was.
fn move_out(
    container: &NetNs,
    pod_name: &str,
    host_name: &str,
    verify: &mut Verify,
) -> CniResult<()> {
    let temp = NetNs::temporary().context("failed to create tempNS")?;
    let host_ns = NetNs::current()?;
    let left = container.run(|| -> CniResult<Option<bool>> {
        let mut sock = Socket::open()?;
        let link = match sock.link_by_name(pod_name) {
            Ok(l) => l,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "failed to find {pod_name} in containerNS",
                        pod_name = quoted(&pod_name)
                    )
                });
            }
        };
        sock.set_link(&link, Change::Netns(temp.fd()))
            .with_context(|| {
                format!(
                    "failed to move {pod_name} to tempNS",
                    pod_name = quoted(&pod_name)
                )
            })?;
        Ok(Some(link.is_up()))
    })??;
    let Some(was_up) = left else {
        return Ok(());
    };
    let returned = temp.run(|| -> CniResult<()> {
        let mut sock = Socket::open()?;
        let dev = sock.link_by_name(pod_name).with_context(|| {
            format!(
                "failed to find {pod_name} in tempNS",
                pod_name = quoted(&pod_name)
            )
        })?;
        let steps = (|| -> CniResult<()> {
            verify(&mut sock, &dev, &temp)?;
            sock.set_link(dev.index, Change::Name(host_name))
                .with_context(|| {
                    format!(
                        "failed to rename device {pod_name} to {host_name}",
                        pod_name = quoted(&pod_name),
                        host_name = quoted(&host_name)
                    )
                })?;
            sock.set_link(dev.index, Change::Alias(""))
                .with_context(|| {
                    format!(
                        "failed to unset alias of {host_name}",
                        host_name = quoted(&host_name)
                    )
                })?;
            sock.set_link(dev.index, Change::Netns(host_ns.fd()))
                .with_context(|| {
                    format!(
                        "failed to move {host_name} to hostNS",
                        host_name = quoted(&host_name)
                    )
                })
        })();
        if steps.is_err() {
            let _ = sock.set_link(dev.index, Change::Alias(&dev.alias));
            let _ = sock.set_link(dev.index, Change::Name(pod_name));
            let _ = sock.set_link(dev.index, Change::Netns(container.fd()));
        }
        steps
    })?;
    if returned.is_err() && was_up {
        let _ = container.run(|| {
            if let Ok(mut sock) = Socket::open()
                && let Ok(link) = sock.link_by_name(pod_name)
            {
                let _ = sock.set_link(link.index, Change::Up(true));
            }
        });
    }
    returned
}

#[cfg(test)]
#[path = "host_device_tests.rs"]
mod tests;
