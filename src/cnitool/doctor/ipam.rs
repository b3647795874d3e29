//! `ipam`: host-local reservations (`<dataDir>/<network>/<ip>`) of every
//! configured host-local network, and of every other network's store in the
//! same dataDirs (a network no longer configured keeps its reservations),
//! that no live attachment holds. The owner is
//! gone when its cache entry is dead (that DEL releases it) or when no cache
//! entry names it at all and no namespace on the node holds the address.

use super::Finding;
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
            if node.keeps(&network, &r.container_id, &r.ifname) || !node.old_file(&file)? {
                continue;
            }
            let dead = node.dead_owner(&network, &r.container_id, &r.ifname);
            if dead.is_none() && node.ip_in_use(r.ip) {
                continue;
            }
            let action = if dead.is_some() { BY_DEL } else { ACTION };
            let object = file.display().to_string();
            let (data_dir, network2, ip) = (data_dir.clone(), network.clone(), r.ip);
            let (id, ifname) = (r.container_id.clone(), r.ifname.clone());
            out.push(
                Finding::new(KIND, &network, &r.container_id, &r.ifname, &object, action).fix(
                    move |node| {
                        let store = DiskStore::open(&data_dir, &network2)?;
                        // Judged again under the store's lock: an ADD that
                        // finished meanwhile has a cache entry by now.
                        if node.named_now(&network2, &id, &ifname)? {
                            return Ok(false);
                        }
                        store.release_if_owned(ip, &id, &ifname)?;
                        Ok(true)
                    },
                ),
            );
        }
    }
    Ok(())
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
