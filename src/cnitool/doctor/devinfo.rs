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
use super::node::{Node, entries, multus_cni_dirs};
use crate::cni::env::is_valid_name;
use crate::plugins::multus::{DEVICE_INFO_DIR, device_info_owner};
use anyhow::Result;
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
    // A link or directory is nobody's device-info file.
    let files = entries(dir)?
        .into_iter()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()));
    let mut paths: Vec<_> = files.map(|e| e.path()).collect();
    paths.sort();
    let mut objects = Vec::new();
    for path in paths {
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let (id, ifname) = device_info_owner(name, &known).unwrap_or(("", ""));
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
        for entry in entries(dir)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".status").unwrap_or(&name);
            if is_valid_name(id) && !id.starts_with('.') {
                ids.insert(id.to_string());
            }
        }
    }
    Ok(ids)
}
