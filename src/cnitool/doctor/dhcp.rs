//! `dhcp`: leases the dhcp daemon still keeps (its files in
//! `<socket>.leases/`, one per attachment) for attachments that are dead or
//! that no cache entry names. Released through the daemon, which forgets the
//! lease and sends DHCPRELEASE; with the daemon stopped the file alone is
//! removed (under the daemon's lock), since a daemon that starts takes up
//! every file it finds and keeps renewing it.

use super::Finding;
use super::node::Node;
use crate::cni::env::Command;
use crate::daemons::dhcp::state::{self, Saved};
use crate::dhcp::protocol::{DEFAULT_SOCKET, default_state_dir};
use anyhow::Result;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub const KIND: &str = "dhcp";
pub const ACTION: &str = "release the lease through the daemon";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for socket in sockets(node) {
        let dir = default_state_dir(&socket);
        for (path, saved) in state::read_leases(&dir)? {
            let a = &saved.attachment;
            if node.keeps(&a.network, &a.container_id, &a.ifname) {
                continue;
            }
            let dead = node
                .dead_owner(&a.network, &a.container_id, &a.ifname)
                .is_some();
            if !dead && (!node.old_file(&path)? || node.ip_in_use(saved.lease.address.into())) {
                continue;
            }
            let action = if dead { super::BY_DEL } else { ACTION };
            let object = format!("{} ({})", path.display(), saved.lease.address);
            let (socket, dir) = (socket.clone(), dir.clone());
            out.push(
                Finding::new(
                    KIND,
                    &a.network,
                    &a.container_id,
                    &a.ifname,
                    &object,
                    action,
                )
                .fix(move |node| release(node, &socket, &dir, &path, &saved, dead)),
            );
        }
    }
    Ok(())
}

/// Releases one lease; true when its file is gone afterwards.
fn release(
    node: &Node,
    socket: &Path,
    dir: &Path,
    path: &Path,
    saved: &Saved,
    dead: bool,
) -> Result<bool> {
    if gone(path) {
        return Ok(true);
    }
    let a = &saved.attachment;
    // An ADD that finished meanwhile has a cache entry by now.
    if !dead && node.named_now(&a.network, &a.container_id, &a.ifname)? {
        return Ok(false);
    }
    match crate::plugins::dhcp::release(socket, a.clone(), saved.request.clone()) {
        Ok(()) => {}
        Err(e) if e.not_running() => {
            if !state::remove_unkept(dir, a)? {
                return Ok(false);
            }
        }
        Err(e) => return Err(e.into_error(Command::Del, None).into()),
    }
    Ok(gone(path))
}

fn gone(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// The daemon socket of every dhcp network of the conf dir and of every
/// cached config (the default one where a network names none).
fn sockets(node: &Node) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for list in &node.lists {
        sockets_of(list, &mut out);
    }
    for a in &node.attachments {
        if let Ok(list) = crate::runtime::conf::list_from_bytes(&a.entry.config, &a.path) {
            sockets_of(&list, &mut out);
        }
    }
    out
}

fn sockets_of(list: &crate::runtime::conf::NetworkList, out: &mut BTreeSet<PathBuf>) {
    for p in &list.plugins {
        let Some(Value::Object(ipam)) = crate::cni::json::map_field(&p.raw, "ipam") else {
            continue;
        };
        let field = |k: &str| crate::cni::json::map_field(ipam, k).and_then(Value::as_str);
        if field("type") != Some("dhcp") {
            continue;
        }
        match field("daemonSocketPath") {
            Some(s) if s.starts_with('/') => out.insert(PathBuf::from(s)),
            _ => out.insert(PathBuf::from(DEFAULT_SOCKET)),
        };
    }
}
