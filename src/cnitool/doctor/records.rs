//! `record`: what firewall, portmap and bandwidth record of each attachment
//! in their `dataDir` (`<containerID>@<ifname>[@<network hash>].json`), for
//! attachments that are dead or that no cache entry names. The record only
//! serves that attachment's DEL and GC: once its rules and links are gone it
//! is removed.

use super::Finding;
use super::engine::{self, Label, Named, Object, Owner};
use super::node::Node;
use anyhow::{Context, Result};
use std::path::Path;

pub const KIND: &str = "record";
pub const ACTION: &str = "remove record";

/// The plugins that keep such records, with their default `dataDir`.
const PLUGINS: &[(&str, &str)] = &[
    ("firewall", crate::plugins::firewall::DEFAULT_DATA_DIR),
    ("portmap", crate::plugins::portmap::DEFAULT_DATA_DIR),
    ("bandwidth", crate::plugins::bandwidth::DEFAULT_DATA_DIR),
];

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut objects = Vec::new();
    for (plugin, default) in PLUGINS {
        for dir in node.data_dirs(plugin, default) {
            let files = crate::files::files_with(&dir, &["json"])
                .with_context(|| format!("failed to read {}", dir.display()))?;
            objects.extend(files.iter().filter_map(|path| object(node, path, out)));
        }
    }
    engine::findings(node, objects, out)
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

fn object(node: &Node, path: &Path, found: &[Finding]) -> Option<Object> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let (id, ifname, net) = owner_of(&name)?;
    let candidates: Vec<usize> = (0..node.attachments.len())
        .filter(|&i| {
            let e = &node.attachments[i].entry;
            e.container_id == id
                && e.ifname == ifname
                && net
                    .is_none_or(|h| crate::plugins::attachments::network_hash(&e.network_name) == h)
        })
        .collect();
    let recorded = read(path);
    let network = match candidates.first() {
        Some(&i) => node.attachments[i].entry.network_name.clone(),
        None => recorded.network.clone(),
    };
    let named = Named::new(&network, id, ifname);
    let owner = Owner { candidates, named };
    Some(Object {
        label_when_dead: Label::Object,
        addresses: recorded.addresses.iter().map(|a| a.addr()).collect(),
        // The host veth bandwidth shaped, while it lives.
        busy: host_veth_lives(&recorded, found),
        ..Object::file(KIND, path.to_path_buf(), owner, ACTION)
    })
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
fn host_veth_lives(r: &Recorded, found: &[Finding]) -> bool {
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
