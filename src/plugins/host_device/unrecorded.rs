//! DEL of an attachment with no record: ADD by the reference or by an older
//! cni-multi. The container's link and its alias are all there is, so only a
//! link the container could not have made goes back.

use super::device::{Source, target};
use super::record::{self, Lower, Owner, View};
use super::{move_out, view_from};
use crate::cni::error::Context;
use crate::cni::{CniResult, Code, Error, Invocation};
use crate::netlink::Socket;
use crate::netlink::link::{Link, LinkKind};
use crate::netns::NetNs;
use crate::quote::quoted;
use std::os::fd::RawFd;

/// DEL of an attachment with no record: ADD by the reference or by an older
/// cni-multi (nodes switch binaries live, both ways). As the reference, the
/// link at CNI_IFNAME goes back, under its alias; but link and alias are the
/// container's to change, so:
/// - a config naming the device by name (trusted) gives the host name, and
///   the alias is not read;
/// - a link the container could have made never goes: unless it has a bus
///   device, a permanent MAC (no kind) or its peer or lower device in the
///   host (a veth's pair confirmed from the host side; not a macvlan in a
///   pod's own user namespace), it stays in the container, said on stderr,
///   and DEL succeeds (a virtual link ends with the namespace);
/// - the config's PCI, auxiliary or kernelpath device, or its hwaddr, must be
///   the link's where the kernel tells;
/// - an alias naming a link the host has is refused, before anything moves.
///
/// What stays open: a pod holding two host-made links (a bridge plugin's veth
/// and this device) can swap them; the host then gets that veth, whose other
/// end is the host's. A macvlan or ipvlan can be swapped for one the pod
/// builds on it (with CAP_NET_ADMIN over the host, for an ipvlan), which
/// only the index ADD records tells apart. The record ADD writes now closes
/// both.
pub(super) fn del_unrecorded(inv: &Invocation, ns: &NetNs, owner: Owner) -> CniResult<()> {
    let ifname = inv.env.ifname.as_str();
    let source = target(inv).ok().map(|t| t.source);
    let host_ns = NetNs::current()?;
    let mut host = Socket::open()?;
    let found = ns.run(|| -> CniResult<Option<(Link, View)>> {
        let mut sock = Socket::open()?;
        let link = match sock.link_by_name(ifname) {
            Ok(link) => link,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "failed to find {ifname} in containerNS",
                        ifname = quoted(&ifname)
                    )
                });
            }
        };
        Ok(Some((link, view_from(&mut sock, &host_ns)?)))
    })??;
    let Some((link, view)) = found else {
        return Ok(());
    };
    if let Some(why) = unrecorded_check(&link, view, owner, source.as_ref(), &mut host, ns.fd())? {
        eprintln!(
            "host-device: left {} in the container, not moved to the host: {why}",
            record::describe(&link, view)
        );
        return Ok(());
    }
    let host_name = match &source {
        Some(Source::Name(name)) => name.clone(),
        _ => alias_name(&link, &mut host)?,
    };
    move_out(ns, ifname, &host_name, &mut |sock, link, temp| {
        let view = view_from(sock, &host_ns)?;
        match unrecorded_check(link, view, owner, source.as_ref(), &mut host, temp.fd())? {
            None => Ok(()),
            Some(why) => Err(Error::new(
                Code::InvalidNetns,
                format!(
                    "{ifname} changed as it left the container: {why}",
                    ifname = quoted(&ifname)
                ),
            )),
        }
    })
}

/// The host name an unrecorded link's alias gives: never one the host has.
fn alias_name(link: &Link, host: &mut Socket) -> CniResult<String> {
    let (alias, ifname) = (link.alias.as_str(), link.name.as_str());
    if alias.is_empty() {
        return Err(Error::internal(format!(
            "failed to find original ifname for {ifname} (alias is not set)",
            ifname = quoted(&ifname)
        )));
    }
    if let Some(problem) = crate::cni::env::link_name_problem(alias) {
        return Err(Error::new(
            Code::InvalidNetns,
            format!(
                "alias {alias} of {ifname} {problem}",
                alias = quoted(&alias),
                ifname = quoted(&ifname)
            ),
        ));
    }
    match host.link_by_name(alias) {
        Ok(_) => Err(Error::new(
            Code::InvalidNetns,
            format!(
                "alias {alias} of {ifname} names a host link that is already there: {ifname} not moved back",
                alias = quoted(&alias),
                ifname = quoted(&ifname)
            ),
        )),
        Err(e) if e.is_not_found() => Ok(alias.to_string()),
        Err(e) => Err(e.into()),
    }
}

/// Whether an unrecorded link may go to the host (see `del_unrecorded`):
/// None if so, why not if nothing proves the container did not make it, an
/// error if it is provably not the config's device.
fn unrecorded_check(
    link: &Link,
    view: View,
    owner: Owner,
    source: Option<&Source>,
    host: &mut Socket,
    ns_fd: RawFd,
) -> CniResult<Option<String>> {
    if let Some(why) = record::unprovable(link, view, owner) {
        return Ok(Some(why));
    }
    if link.kind == LinkKind::Veth
        && let Lower::Host(peer) = record::lower(link, view)
        && !record::host_confirms_pair(host, peer, link, ns_fd)?
    {
        return Ok(Some(format!(
            "the host's link at index {peer} is not its peer"
        )));
    }
    let refuse = |why: String| {
        Err(Error::new(
            Code::InvalidNetns,
            format!(
                "refusing to move {} to the host: {why}",
                record::describe(link, view)
            ),
        ))
    };
    let device = match source {
        Some(Source::Pci(id)) => Some(("pci", id.as_str())),
        Some(Source::Aux(id)) => Some(("auxiliary", id.as_str())),
        Some(Source::KernelPath(path)) => path
            .file_name()
            .and_then(|n| n.to_str())
            .map(|n| (link.parent_bus.as_str(), n)),
        Some(Source::Mac(mac)) => {
            if link.mac != mac.as_slice() && link.perm_addr != mac.as_slice() {
                return refuse(format!(
                    "its MAC is not the config's hwaddr {}",
                    crate::netlink::link::format_mac(mac)
                ));
            }
            None
        }
        Some(Source::Name(_)) | None => None,
    };
    // A virtio-net function's netdev hangs off the virtio device, not the
    // PCI address: only a parent on the config's bus is compared.
    if let Some((bus, id)) = device
        && link.parent_bus == bus
        && link.parent_dev != id
    {
        return refuse(format!("it is not the config's {bus} device {id}"));
    }
    Ok(None)
}
