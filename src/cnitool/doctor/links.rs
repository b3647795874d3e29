//! Host links. `veth`: host ends of veths on a bridge a configured network names whose
//! other end is in no live namespace: not in the namespace of an attachment
//! not known dead, nor in any namespace a task or bind mount of the node
//! holds (a namespace kept only by a leaked descriptor or socket is no live
//! one). Everything judged comes from the host namespace's own dump: its
//! link names, masters and IFLA_LINK_NETNSID, and the IDs it gives the
//! namespaces; deleting the host end deletes its peer.
//!
//! `ifb`: bandwidth's IFBs (`bwp` + a hash of network and container ID) that
//! belong to no attachment not known dead. The owner is dead when a dead cache
//! entry's config chains bandwidth and its IFB name is this one (that DEL
//! removes it); an IFB no entry maps to is ownerless, and kept while a filter
//! on a host link other than a stale veth redirects packets to it.

use super::Finding;
use super::engine::{self, Named, Object, Owner};
use super::namespaces::Census;
use super::node::{Cached, Node, State, netns_paths};
use crate::netlink::Socket;
use crate::netlink::link::{Link, LinkKind};
use crate::plugins::bandwidth::{aliased_owner, ifb_name, is_ifb_name};
use anyhow::Result;
use std::collections::BTreeSet;

pub const VETH: &str = "veth";
const DELETE: &str = "delete link";

pub fn find_veths(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut sock = Socket::open()?;
    let objects = stale(node, &mut sock)?
        .into_iter()
        .map(|link| {
            let candidates = (0..node.attachments.len())
                .filter(|&i| names_host_link(&node.attachments[i], &link.name))
                .collect();
            let (name, index) = (link.name.clone(), link.index);
            // Still the link judged (an index is reused by a new link).
            let present = Box::new(move |_: &Node| link_is(index, |l| l.name == name));
            // Deleting the host end deletes its peer.
            let remove = Box::new(move |_: &Node| delete_link(index));
            let owner = Owner {
                candidates,
                named: Named::nobody(),
            };
            let label = format!("link {}", link.name);
            Object {
                // An index in the key: a new link of the same name starts over.
                id: format!("link {} {}", link.name, link.index),
                ..Object::kernel(VETH, label, owner, DELETE, present, remove)
            }
        })
        .collect();
    engine::findings(node, objects, out)
}

/// Whether the link at `index` is there and is what `is` says it must be.
pub fn link_is(index: u32, is: impl Fn(&Link) -> bool) -> Result<bool> {
    match Socket::open()?.link_by_index(index) {
        Ok(l) => Ok(is(&l)),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Deletes the link at `index` (gone already is fine).
pub fn delete_link(index: u32) -> Result<()> {
    match Socket::open()?.delete_link(index) {
        Err(e) if !e.is_not_found() => Err(e.into()),
        _ => Ok(()),
    }
}

/// The host veths on configured bridges whose peer is in no live namespace
/// (or gone). None is judged when a namespace could not be read: its veths
/// would look stale.
pub fn stale(node: &Node, sock: &mut Socket) -> Result<Vec<Link>> {
    // The dump gives every peer's namespace an ID, so those read after it are complete.
    let links = sock.links()?;
    let names: BTreeSet<String> = node
        .footprints(false)
        .into_iter()
        .filter_map(|(_, _, f)| f.bridge)
        .collect();
    let bridges: BTreeSet<u32> = links
        .iter()
        .filter(|l| l.kind == LinkKind::Bridge && names.contains(&l.name))
        .map(|l| l.index)
        .collect();
    let ports: Vec<&Link> = links
        .iter()
        .filter(|l| l.kind == LinkKind::Veth && l.master.is_some_and(|m| bridges.contains(&m)))
        .collect();
    if ports.is_empty() {
        return Ok(Vec::new());
    }
    // Read after the dump: every peer's namespace has an ID by now. One
    // namespace not read, or an unreadable cache entry, may own any of them.
    let census = Census::read(netns_paths(&node.attachments), false);
    if !census.complete || node.in_doubt("") {
        return Ok(Vec::new());
    }
    let live: BTreeSet<i32> = census.spaces.iter().filter_map(|s| s.nsid).collect();
    let kept = |l: &Link| {
        node.attachments
            .iter()
            .any(|a| a.state != State::Dead && names_host_link(a, &l.name))
    };
    Ok(ports
        .into_iter()
        .filter(|l| !kept(l) && !peer_alive(l, &links, &live))
        .cloned()
        .collect())
}

/// Whether the veth's other end is in a live namespace: one of `live`, or
/// this one (no IFLA_LINK_NETNSID) when the peer is listed here.
fn peer_alive(l: &Link, links: &[Link], live: &BTreeSet<i32>) -> bool {
    match l.link_netnsid {
        Some(id) => live.contains(&id),
        None => l
            .parent
            .is_some_and(|p| p != 0 && links.iter().any(|x| x.index == p)),
    }
}

/// Whether an attachment's cached result lists `name` as a host interface
/// (as bridge lists its host veth).
fn names_host_link(a: &Cached, name: &str) -> bool {
    a.entry.host_interfaces().iter().any(|(n, _)| n == name)
}

pub fn find_ifbs(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut sock = Socket::open()?;
    let ifbs: Vec<Link> = sock.links()?.into_iter().filter(is_bandwidths).collect();
    if ifbs.is_empty() {
        return Ok(());
    }
    // Read once: the fixes of stale veths (listed before) only take redirects away.
    let redirected = redirected(node, &mut sock)?;
    let mut objects = Vec::new();
    for ifb in ifbs {
        // A dead attachment owns it only when its config chains bandwidth.
        let candidates: Vec<usize> = (0..node.attachments.len())
            .filter(|&i| {
                let a = &node.attachments[i];
                ifb_name(&a.entry.network_name, &a.entry.container_id) == ifb.name
                    && (a.state != State::Dead
                        || a.list.as_ref().is_some_and(|l| {
                            l.plugins.iter().any(|p| p.plugin_type == "bandwidth")
                        }))
            })
            .collect();
        let (network, id) = aliased_owner(&ifb.name, &ifb.alias).unwrap_or_default();
        let id = node.container_of(&id);
        let (name, index) = (ifb.name.clone(), ifb.index);
        let present =
            Box::new(move |_: &Node| link_is(index, |l| l.name == name && is_bandwidths(l)));
        let remove = Box::new(move |_: &Node| delete_link(index));
        let owner = Owner {
            candidates,
            named: Named::new(&network, &id, ""),
        };
        let label = format!("link {}", ifb.name);
        objects.push(Object {
            // An index in the key: a new link of the same name starts over.
            id: format!("link {} {}", ifb.name, ifb.index),
            busy: redirected.contains(&ifb.index),
            ..Object::kernel("ifb", label, owner, DELETE, present, remove)
        });
    }
    engine::findings(node, objects, out)
}

/// The links that a filter on the ingress of a host link redirects to, but
/// for links that are themselves stale veths (their evidence dies with them).
fn redirected(node: &Node, sock: &mut Socket) -> Result<BTreeSet<u32>> {
    let stale: BTreeSet<u32> = stale(node, sock)?.iter().map(|l| l.index).collect();
    let mut out = BTreeSet::new();
    for link in sock.links()? {
        if stale.contains(&link.index) {
            continue;
        }
        match sock.ingress_mirred_targets(link.index) {
            Ok(targets) => out.extend(targets),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// An IFB of bandwidth's naming.
fn is_bandwidths(l: &Link) -> bool {
    l.kind == LinkKind::Ifb && is_ifb_name(&l.name)
}
