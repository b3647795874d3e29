//! `devinfo`: multus's device-info files of attachments
//! (`<devinfo>/cni/<network>-<containerID>_<ifname>`, the NAD spec's names),
//! looked at where multus is configured. A name cannot be split into its
//! three parts (each may hold `-` or `_`), so its owner is whichever
//! container known on the node the name holds as `-<containerID>_`: kept
//! while any of its attachments is not dead, removed by a dead one's DEL (or
//! directly when that DEL did not, as a delegate without a device leaves it).
//! A file no known container names is removed once old enough: nothing but a
//! multus ADD writes there, and every multus ADD leaves a cache entry.

use super::Finding;
use super::engine::{self, Label, Named, Object, Owner};
use super::node::{Node, multus_cni_dirs};
use crate::cni::env::is_valid_name;
use crate::plugins::multus::DEVICE_INFO_DIR;
use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub const KIND: &str = "devinfo";
pub const ACTION: &str = "remove device-info file";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let dir = Path::new(DEVICE_INFO_DIR);
    let cni_dirs = multus_cni_dirs(&node.lists);
    if cni_dirs.is_empty() {
        return Ok(());
    }
    let known = known_containers(node, cni_dirs.keys())?;
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("failed to read {}", dir.display())),
    };
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("failed to read {}", dir.display()))?;
        // A link or directory is nobody's device-info file.
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            paths.push(entry.path());
        }
    }
    paths.sort();
    let mut objects = Vec::new();
    for path in paths {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let (id, ifname) = owner_of(name, &known).unwrap_or(("", ""));
        let owner = Owner::of(node, Named::new("", id, ""));
        objects.push(Object {
            names: Named::new("", id, ifname),
            label_when_dead: Label::EntryNetwork,
            ..Object::file(KIND, path, owner, ACTION)
        });
    }
    engine::findings(node, objects, out)
}

/// Every container ID the node knows: its cached attachments' and the
/// delegate caches multus keeps per container in its cniDirs.
fn known_containers<'a>(
    node: &Node,
    cni_dirs: impl Iterator<Item = &'a PathBuf>,
) -> Result<BTreeSet<String>> {
    let mut ids: BTreeSet<String> = node
        .attachments
        .iter()
        .map(|a| a.entry.container_id.clone())
        .collect();
    for dir in cni_dirs {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("failed to read {}", dir.display())),
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".status").unwrap_or(&name);
            if is_valid_name(id) && !id.starts_with('.') {
                ids.insert(id.to_string());
            }
        }
    }
    Ok(ids)
}

/// The container (and interface) a file name holds as `-<id>_<ifname>`:
/// the longest known ID that fits, else a 64-hex ID as runtimes make them.
fn owner_of<'a>(name: &'a str, known: &BTreeSet<String>) -> Option<(&'a str, &'a str)> {
    let fits = |id: &str| -> Option<(&'a str, &'a str)> {
        let at = name.find(&format!("-{id}_"))?;
        let start = at + 1;
        let ifname = &name[start + id.len() + 1..];
        Some((&name[start..start + id.len()], ifname))
    };
    let mut best: Option<(&'a str, &'a str)> = None;
    for id in known.iter().filter(|id| !id.is_empty()) {
        if let Some(found) = fits(id)
            && best.is_none_or(|(b, _)| b.len() < found.0.len())
        {
            best = Some(found);
        }
    }
    best.or_else(|| {
        name.match_indices('-').find_map(|(at, _)| {
            let rest = &name[at + 1..];
            let id = rest.get(..64)?;
            let hex = id.bytes().all(|b| b.is_ascii_hexdigit());
            (hex && rest[64..].starts_with('_')).then(|| (id, &rest[65..]))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_of_device_info_names() {
        let known: BTreeSet<String> = ["abc", "abc_d", "x-y"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(owner_of("ns-nad-abc_net1", &known), Some(("abc", "net1")));
        // The longest known ID wins where two fit.
        assert_eq!(
            owner_of("ns-nad-abc_d_net1", &known),
            Some(("abc_d", "net1"))
        );
        assert_eq!(owner_of("ns-nad-x-y_eth_1", &known), Some(("x-y", "eth_1")));
        let hex = "0123456789abcdef".repeat(4);
        let name = format!("ns-nad-{hex}_net2");
        assert_eq!(owner_of(&name, &known), Some((hex.as_str(), "net2")));
        assert_eq!(owner_of("ns-nad-other_net1", &known), None);
        assert_eq!(owner_of("abc_net1", &known), None);
    }
}
