//! `devinfo`: multus's device-info files of attachments
//! (`<devinfo>/cni/<network>-<containerID>_<ifname>`, the NAD spec's names),
//! looked at where multus is configured. A name cannot be split into its
//! three parts (each may hold `-` or `_`), so its owner is whichever
//! container known on the node the name holds as `-<containerID>_`: kept
//! while any of its attachments is not dead, removed by a dead one's DEL (or
//! directly when that DEL did not, as a delegate without a device leaves it).
//! A file no known container names is removed once old enough: nothing but a
//! multus ADD writes there, and every multus ADD leaves a cache entry.
//! A long container ID is its token in the name (`files::state_name`): the
//! tokens of the known IDs are looked for too. A bounded name no known ID
//! matches (shortened whole: a network name left no room) cannot say whose
//! it is: kept.

use super::Finding;
use super::engine::{self, Label, Named, Object, Owner};
use super::node::{Node, entries, multus_cni_dirs};
use crate::cni::env::is_id_or_token;
use crate::plugins::multus::{DEVICE_INFO_DIR, device_info_owner};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};
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
    let names: BTreeSet<String> = known.keys().cloned().collect();
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
        let (id, ifname) = device_info_owner(name, &names).unwrap_or(("", ""));
        if id.is_empty() && crate::files::is_bounded_name(name) {
            continue;
        }
        let id = known.get(id).map_or(id, String::as_str);
        let owner = Owner::of(node, Named::new("", id, ""));
        objects.push(Object {
            names: Named::new("", id, ifname),
            label_when_dead: Label::EntryNetwork,
            ..Object::file(KIND, path, owner, ACTION)
        });
    }
    engine::findings(node, objects, out)
}

/// Each name a device-info file may hold for a container, and the ID it
/// stands for: the ID itself, or a long ID's token.
type Known = BTreeMap<String, String>;

/// Every container ID the node knows (its cached attachments' and the
/// delegate caches multus keeps per container in its cniDirs), with the
/// token of each long one.
fn known_containers<'a>(node: &Node, cni_dirs: impl Iterator<Item = &'a PathBuf>) -> Result<Known> {
    let mut ids = BTreeMap::new();
    let mut add = |id: String| {
        if id.len() > crate::files::TOKEN_LEN {
            ids.insert(crate::files::id_token(&id), id.clone());
        }
        ids.insert(id.clone(), id);
    };
    for a in &node.attachments {
        add(a.entry.container_id.clone());
    }
    for dir in cni_dirs {
        for entry in entries(dir)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".status").unwrap_or(&name);
            if is_id_or_token(id) && !id.starts_with('.') {
                add(super::multus::container_of(node, dir, id));
            }
        }
    }
    Ok(ids)
}
