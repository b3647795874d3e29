//! `veth`: host ends of veths on a bridge a configured network names whose
//! other end is in no live namespace: not in the namespace of an attachment
//! not known dead, nor in any namespace a task or bind mount of the node
//! holds (a namespace kept only by a leaked descriptor or socket is no live
//! one). Everything judged comes from the host namespace's own dump: its
//! link names, masters and IFLA_LINK_NETNSID, and the IDs it gives the
//! namespaces; deleting the host end deletes its peer.

use super::Finding;
use super::engine::{self, Named, Object, Owner};
use super::node::{Cached, Node, State, netns_alive};
use crate::netlink::Socket;
use crate::netlink::link::Link;
use crate::netns::NetNs;
use anyhow::Result;
use serde_json::Value;
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub const KIND: &str = "veth";
pub const ACTION: &str = "delete link";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
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
                ..Object::kernel(KIND, label, owner, ACTION, present, remove)
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
    let names = bridges(node);
    let bridges: BTreeSet<u32> = links
        .iter()
        .filter(|l| l.kind == "bridge" && names.contains(&l.name))
        .map(|l| l.index)
        .collect();
    let ports: Vec<&Link> = links
        .iter()
        .filter(|l| l.kind == "veth" && l.master.is_some_and(|m| bridges.contains(&m)))
        .collect();
    if ports.is_empty() {
        return Ok(Vec::new());
    }
    let Some(live) = live_nsids(node, sock)? else {
        return Ok(Vec::new());
    };
    // An unreadable cache entry may name any of them.
    if node.in_doubt("") {
        return Ok(Vec::new());
    }
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
    let Some(Value::Array(ifaces)) = a.entry.result.as_ref().and_then(|r| r.get("interfaces"))
    else {
        return false;
    };
    ifaces.iter().any(|i| {
        i.get("name").and_then(Value::as_str) == Some(name)
            && i.get("sandbox")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
    })
}

/// The bridges the configured networks' bridge plugins name.
fn bridges(node: &Node) -> BTreeSet<String> {
    node.lists
        .iter()
        .flat_map(|l| &l.plugins)
        .filter(|p| p.plugin_type == "bridge")
        .map(
            |p| match crate::cni::json::map_field(&p.raw, "bridge").and_then(Value::as_str) {
                Some(b) if !b.is_empty() => b.to_string(),
                _ => crate::plugins::bridge::DEFAULT_BRIDGE.to_string(),
            },
        )
        .collect()
}

/// The IDs this namespace gives every live namespace: those of attachments
/// not known dead and those every task and bind mount holds. None (said on
/// stderr) when one of them could not be read.
fn live_nsids(node: &Node, sock: &mut Socket) -> Result<Option<BTreeSet<i32>>> {
    let mut paths: Vec<PathBuf> = node
        .attachments
        .iter()
        .filter(|a| a.state != State::Dead && !a.netns.is_empty())
        .map(|a| PathBuf::from(&a.netns))
        .collect();
    paths.extend(super::namespaces::candidates());
    let mut seen = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for path in paths {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if !seen.insert((meta.dev(), meta.ino())) {
            continue;
        }
        match nsid_of(sock, &path) {
            Ok(id) => ids.extend(id),
            // A task that ended meanwhile took its namespace reference with it.
            Err(_) if path.starts_with("/proc") && !path.exists() => {}
            Err(e) => {
                eprintln!(
                    "cnitool doctor: cannot read the namespace {}, host veths not judged: {e:#}",
                    path.display()
                );
                return Ok(None);
            }
        }
    }
    Ok(Some(ids))
}

/// The ID this namespace gives the namespace at `path`; None when it is no
/// namespace, is gone, or has no ID here (then no link here names it).
fn nsid_of(sock: &mut Socket, path: &Path) -> Result<Option<i32>> {
    let ns = match NetNs::open(path) {
        Ok(ns) => ns,
        Err(crate::netns::Error::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if !netns_alive(path)? {
        return Ok(None);
    }
    Ok(sock.netns_id(ns.fd())?)
}
