//! `tuning`: tuning's backups (`<dataDir>/<containerID>_<ifname>.json`) of
//! attachments that are dead or that no cache entry names. Ours name their
//! network; the reference's name none, so any attachment of that container
//! and interface owns those. Only files that are tuning's own backups are
//! judged (a `dataDir` may hold anyone's files). A stale backup cannot be
//! restored (its link went with its namespace): it is only removed.

use super::Finding;
use super::engine::{self, Named, Object, Owner};
use super::node::Node;
use crate::plugins::tuning::{DEFAULT_DATA_DIR, backup_file, backup_network, is_backup};
use anyhow::{Context, Result};
use std::path::Path;

pub const KIND: &str = "tuning";
pub const ACTION: &str = "remove backup";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut objects = Vec::new();
    for dir in node.data_dirs("tuning", DEFAULT_DATA_DIR) {
        let files = crate::files::files_with(&dir, &["json"])
            .with_context(|| format!("failed to read {}", dir.display()))?;
        objects.extend(files.iter().filter_map(|path| object(node, path)));
    }
    engine::findings(node, objects, out)
}

fn object(node: &Node, path: &Path) -> Option<Object> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    if !is_backup(path) {
        return None;
    }
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    let (id, ifname) = stem.rsplit_once('_').unwrap_or((stem, ""));
    let network = backup_network(path);
    // The attachments this file could belong to (a `_` in an ID can make two
    // names alike: any of them owns it).
    let candidates = (0..node.attachments.len())
        .filter(|&i| {
            let e = &node.attachments[i].entry;
            backup_file(&e.container_id, &e.ifname) == name
                && network.as_ref().is_none_or(|n| *n == e.network_name)
        })
        .collect();
    let named = Named::new(network.as_deref().unwrap_or_default(), id, ifname);
    let owner = Owner { candidates, named };
    Some(Object::file(KIND, path.to_path_buf(), owner, ACTION))
}
