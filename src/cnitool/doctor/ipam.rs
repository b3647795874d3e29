//! `ipam`: host-local reservations (`<dataDir>/<network>/<ip>`) of every
//! configured host-local network, and of every other network's store in the
//! same dataDirs (a network no longer configured keeps its reservations),
//! that no live attachment holds. The owner is
//! gone when its cache entry is dead (that DEL releases it) or when no cache
//! entry names it at all and no namespace on the node holds the address.

use super::Finding;
use super::engine::{self, Age, Label, Named, Object, Owner};
use super::node::Node;
use crate::ipam::store::{DEFAULT_DATA_DIR, DiskStore};
use anyhow::{Context, Result};
use serde_json::Value;
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
            objects.push(Object {
                kind: KIND,
                id: file.display().to_string(),
                label: file.display().to_string(),
                owner: Owner::of(node, named.clone()),
                names: named,
                label_when_dead: Label::Object,
                age: Age::File(file.clone()),
                addresses: vec![ip],
                busy: false,
                action: ACTION,
                dead_action: Some(BY_DEL),
                present: Box::new(move |_| Ok(std::fs::symlink_metadata(&file).is_ok())),
                // Released only while this owner holds it, under the store's lock.
                remove: Box::new(move |_| {
                    DiskStore::open(&data_dir2, &network2)?.release_if_owned(ip, &id, &ifname)?;
                    Ok(())
                }),
            });
        }
    }
    engine::findings(node, objects, out)
}

/// (dataDir, network) of every host-local plugin of the conf dir's networks
/// and of every cached config (a delegate multus read from its own
/// directories or a NAD has a cache entry, not a file in the conf dir).
fn stores(node: &Node) -> Result<BTreeSet<(PathBuf, String)>> {
    let mut out = BTreeSet::new();
    for list in &node.lists {
        stores_of(list, &mut out);
    }
    for a in &node.attachments {
        if let Ok(list) = crate::runtime::conf::list_from_bytes(&a.entry.config, &a.path) {
            stores_of(&list, &mut out);
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
    let unreadable = || format!("failed to read {}", data_dir.display());
    let entries = match std::fs::read_dir(data_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(unreadable),
    };
    for entry in entries {
        let entry = entry.with_context(unreadable)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir()) && crate::cni::env::is_valid_name(&name) {
            out.insert((data_dir.to_path_buf(), name));
        }
    }
    Ok(())
}

fn stores_of(list: &crate::runtime::conf::NetworkList, out: &mut BTreeSet<(PathBuf, String)>) {
    let field = |m: &serde_json::Map<String, Value>, k: &str| -> Option<Value> {
        crate::cni::json::map_field(m, k).cloned()
    };
    if !crate::cni::env::is_valid_name(&list.name) {
        return;
    }
    for p in &list.plugins {
        let Some(Value::Object(ipam)) = field(&p.raw, "ipam") else {
            continue;
        };
        if field(&ipam, "type").as_ref().and_then(Value::as_str) != Some("host-local") {
            continue;
        }
        let data_dir = match field(&ipam, "dataDir") {
            Some(Value::String(d)) if d.starts_with('/') => d,
            _ => DEFAULT_DATA_DIR.to_string(),
        };
        out.insert((PathBuf::from(data_dir), list.name.clone()));
    }
}
