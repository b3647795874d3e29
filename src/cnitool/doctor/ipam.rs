//! `ipam`: host-local reservations (`<dataDir>/<network>/<ip>`) of every
//! configured host-local network, and of every other network's store in the
//! same dataDirs (a network no longer configured keeps its reservations),
//! that no live attachment holds. The owner is
//! gone when its cache entry is dead (that DEL releases it) or when no cache
//! entry names it at all and no namespace on the node holds the address.

use super::Finding;
use super::engine::{self, Label, Named, Object, Owner};
use super::node::{Node, entries};
use crate::ipam::store::DiskStore;
use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::path::PathBuf;

pub const KIND: &str = "ipam";
pub const ACTION: &str = "remove reservation";
pub const BY_DEL: &str = "released by the DEL of its dead attachment";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut objects = Vec::new();
    for (data_dir, network) in stores(node)? {
        let dir = data_dir.join(&network);
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let held = DiskStore::open(&data_dir, &network)
            .and_then(|s| s.reservations())
            .with_context(|| format!("failed to read host-local store {}", dir.display()))?;
        for r in held {
            let file = dir.join(r.ip.to_string());
            let named = Named::new(&network, &r.container_id, &r.ifname);
            let (data_dir2, network2, ip) = (data_dir.clone(), network.clone(), r.ip);
            let (id, ifname) = (r.container_id.clone(), r.ifname.clone());
            let owner = Owner::of(node, named);
            objects.push(Object {
                label_when_dead: Label::Object,
                addresses: vec![ip],
                dead_action: Some(BY_DEL),
                // Released only while this owner holds it, under the store's lock.
                remove: Box::new(move |_| {
                    DiskStore::open(&data_dir2, &network2)?.release_if_owned(ip, &id, &ifname)?;
                    Ok(())
                }),
                ..Object::file(KIND, file, owner, ACTION)
            });
        }
    }
    engine::findings(node, objects, out)
}

/// (dataDir, network) of every host-local plugin of the conf dir's networks
/// and of every cached config.
fn stores(node: &Node) -> Result<BTreeSet<(PathBuf, String)>> {
    let mut out = BTreeSet::new();
    for (list, _, f) in node.footprints(true) {
        if let Some(dir) = f
            .host_local
            .filter(|_| crate::cni::env::is_valid_name(&list.name))
        {
            out.insert((dir, list.name.clone()));
        }
    }
    let data_dirs: BTreeSet<PathBuf> = out.iter().map(|(d, _)| d.clone()).collect();
    for data_dir in data_dirs {
        unconfigured(&data_dir, &mut out)?;
    }
    Ok(out)
}

/// The stores of a dataDir whatever their network: real directories (a link
/// is not followed) with a network's name.
fn unconfigured(data_dir: &std::path::Path, out: &mut BTreeSet<(PathBuf, String)>) -> Result<()> {
    for entry in entries(data_dir)? {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir()) && crate::cni::env::is_valid_name(&name) {
            out.insert((data_dir.to_path_buf(), name));
        }
    }
    Ok(())
}
