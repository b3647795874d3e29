//! `tuning`: tuning's backups (`<dataDir>/<containerID>_<ifname>.json`) of
//! attachments that are dead or that no cache entry names. Ours name their
//! network; the reference's name none, so any attachment of that container
//! and interface owns those. A stale backup cannot be restored (its link went
//! with its namespace): it is only removed.

use super::Finding;
use super::node::{Cached, Node, State, remove_file};
use crate::plugins::tuning::{DEFAULT_DATA_DIR, backup_file, backup_network, is_backup};
use anyhow::{Context, Result};
use std::path::Path;

pub const KIND: &str = "tuning";
pub const ACTION: &str = "remove backup";
pub use super::BY_DEL;

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for dir in node.data_dirs("tuning", DEFAULT_DATA_DIR) {
        let files = crate::files::files_with(&dir, &["json"])
            .with_context(|| format!("failed to read {}", dir.display()))?;
        for path in files {
            judge(node, &path, out)?;
        }
    }
    Ok(())
}

fn judge(node: &Node, path: &Path, out: &mut Vec<Finding>) -> Result<()> {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Ok(());
    };
    // Only tuning's own backups are judged: a dataDir may hold anyone's files.
    if !is_backup(path) {
        return Ok(());
    }
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    let (id, ifname) = stem.rsplit_once('_').unwrap_or((stem, ""));
    if node.in_doubt(id) {
        return Ok(());
    }
    let network = backup_network(path);
    // The attachments this file could belong to (a `_` in an ID can make two
    // names alike: any of them keeps it).
    let owners: Vec<&Cached> = node
        .attachments
        .iter()
        .filter(|a| backup_file(&a.entry.container_id, &a.entry.ifname) == name)
        .filter(|a| network.as_ref().is_none_or(|n| *n == a.entry.network_name))
        .collect();
    if owners.iter().any(|a| a.state != State::Dead) || !node.old_file(path)? {
        return Ok(());
    }
    let (network, id, ifname, action) = match owners.first() {
        Some(a) => {
            let e = &a.entry;
            let (n, i, f) = (&e.network_name, &e.container_id, &e.ifname);
            (n.clone(), i.clone(), f.clone(), BY_DEL)
        }
        None => {
            let n = network.unwrap_or_default();
            (n, id.to_string(), ifname.to_string(), ACTION)
        }
    };
    let object = path.display().to_string();
    let file = path.to_path_buf();
    out.push(
        Finding::new(KIND, &network, &id, &ifname, &object, action)
            .fix(move |_| remove_file(&file)),
    );
    Ok(())
}
