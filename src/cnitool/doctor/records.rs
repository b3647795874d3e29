//! `record`: what firewall, portmap and bandwidth record of each attachment
//! in their `dataDir` (`<containerID>@<ifname>[@<network hash>].json`), for
//! attachments that are dead or that no cache entry names. The record only
//! serves that attachment's DEL and GC: once its rules and links are gone it
//! is removed.

use super::Finding;
use super::node::{Cached, Node, State, remove_file};
use anyhow::{Context, Result};
use std::path::Path;

pub const KIND: &str = "record";
pub const ACTION: &str = "remove record";
pub use super::BY_DEL;

/// The plugins that keep such records, with their default `dataDir`.
const PLUGINS: &[(&str, &str)] = &[
    ("firewall", crate::plugins::firewall::DEFAULT_DATA_DIR),
    ("portmap", crate::plugins::portmap::DEFAULT_DATA_DIR),
    ("bandwidth", crate::plugins::bandwidth::DEFAULT_DATA_DIR),
];

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for (plugin, default) in PLUGINS {
        for dir in node.data_dirs(plugin, default) {
            let files = crate::files::files_with(&dir, &["json"])
                .with_context(|| format!("failed to read {}", dir.display()))?;
            for path in files {
                judge(node, &path, out)?;
            }
        }
    }
    Ok(())
}

/// (containerID, ifname, network hash) of a record's file name.
fn owner_of(name: &str) -> Option<(&str, &str, Option<&str>)> {
    let stem = name.strip_suffix(".json")?;
    let mut parts = stem.split('@');
    let (id, ifname, net) = (parts.next()?, parts.next()?, parts.next());
    if parts.next().is_some() || !crate::cni::env::is_valid_name(id) || ifname.is_empty() {
        return None;
    }
    Some((id, ifname, net))
}

fn judge(node: &Node, path: &Path, out: &mut Vec<Finding>) -> Result<()> {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Ok(());
    };
    let Some((id, ifname, net)) = owner_of(&name) else {
        return Ok(());
    };
    if node.in_doubt(id) {
        return Ok(());
    }
    let owners: Vec<&Cached> = node
        .attachments
        .iter()
        .filter(|a| a.entry.container_id == id && a.entry.ifname == ifname)
        .filter(|a| {
            net.is_none_or(|h| {
                crate::plugins::attachments::network_hash(&a.entry.network_name) == h
            })
        })
        .collect();
    if owners.iter().any(|a| a.state != State::Dead) || !node.old_file(path)? {
        return Ok(());
    }
    let recorded = read(path);
    let (network, action) = match owners.first() {
        Some(a) => (a.entry.network_name.clone(), BY_DEL),
        // Ownerless: kept while what it records is in use (an address a
        // namespace holds, the host veth bandwidth shaped).
        None if in_use(node, &recorded, out) => return Ok(()),
        None => (recorded.network.clone(), ACTION),
    };
    let object = path.display().to_string();
    let file = path.to_path_buf();
    let (cid, ifn) = (id.to_string(), ifname.to_string());
    out.push(
        Finding::new(KIND, &network, id, ifname, &object, action).fix(move |node| {
            if std::fs::symlink_metadata(&file).is_err() {
                return Ok(true);
            }
            // An ADD that finished meanwhile has a cache entry by now.
            if action == ACTION && node.named_now(&network, &cid, &ifn)? {
                return Ok(false);
            }
            remove_file(&file)
        }),
    );
    Ok(())
}

/// What the three plugins' records hold that says their attachment lives.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Recorded {
    network: String,
    addresses: Vec<ipnet::IpNet>,
    host_veth: String,
    host_index: u32,
}

/// The record's content; an unreadable one records nothing.
fn read(path: &Path) -> Recorded {
    crate::files::read_state_limited(path, 64 << 10)
        .ok()
        .and_then(|b| crate::cni::json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// A host veth that is a `veth` finding itself (listed before this kind)
/// goes with the fix, so it is no evidence.
fn in_use(node: &Node, r: &Recorded, found: &[Finding]) -> bool {
    if r.addresses.iter().any(|a| node.ip_in_use(a.addr())) {
        return true;
    }
    let doomed = format!("link {}", r.host_veth);
    r.host_index != 0
        && !found
            .iter()
            .any(|f| f.kind == super::veth::KIND && f.object == doomed)
        && crate::netlink::Socket::open()
            .and_then(|mut s| s.link_by_index(r.host_index))
            .is_ok_and(|l| l.name == r.host_veth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_its_attachment() {
        assert_eq!(owner_of("c1@eth0.json"), Some(("c1", "eth0", None)));
        assert_eq!(
            owner_of("c1@eth0@0123456789abcdef.json"),
            Some(("c1", "eth0", Some("0123456789abcdef")))
        );
        assert_eq!(owner_of("c1.json"), None);
        assert_eq!(owner_of("c1@eth0@x@y.json"), None);
        assert_eq!(owner_of("../x@eth0.json"), None);
        assert_eq!(owner_of("c1@.json"), None);
    }
}
