//! `multus`: multus's per-pod files in each configured `cniDir`, its delegate
//! cache (`<cniDir>/<containerID>`) and the pod's network status
//! (`<containerID>.status`), of pods no attachment not known dead holds: a
//! dead one's DEL removes them, those no cache entry names are removed once
//! old enough. Its delegates' result cache (`<cniDir>/results`) is `cache`'s.

use super::Finding;
use super::node::{Node, multus_cni_dirs, remove_file};
use crate::cni::env::is_valid_name;
use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub const KIND: &str = "multus";
pub const ACTION: &str = "remove delegate cache";
pub const STATUS_ACTION: &str = "remove network status";
pub use super::BY_DEL;

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for (dir, networks) in multus_cni_dirs(&node.lists) {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("failed to read {}", dir.display())),
        };
        let mut paths = Vec::new();
        for entry in entries {
            paths.push(
                entry
                    .with_context(|| format!("failed to read {}", dir.display()))?
                    .path(),
            );
        }
        paths.sort();
        for path in paths {
            judge(node, &networks, path, out)?;
        }
    }
    Ok(())
}

/// The container a per-pod file belongs to and what removing it does, for
/// names multus gives its files (temporary files, `results` and others are
/// not).
fn owner_of(name: &str) -> Option<(&str, &'static str)> {
    let (id, action) = match name.strip_suffix(".status") {
        Some(id) => (id, STATUS_ACTION),
        None => (name, ACTION),
    };
    is_valid_name(id).then_some((id, action))
}

fn judge(
    node: &Node,
    networks: &BTreeSet<String>,
    path: PathBuf,
    out: &mut Vec<Finding>,
) -> Result<()> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Ok(());
    };
    let Some((id, action)) = owner_of(name) else {
        return Ok(());
    };
    if !regular_file(&path)? || node.keeps_container(id) || !node.old_file(&path)? {
        return Ok(());
    }
    let dead = networks.iter().find_map(|n| node.dead_owner(n, id, ""));
    let (network, ifname, action) = match dead {
        Some(a) => (
            a.entry.network_name.as_str(),
            a.entry.ifname.as_str(),
            BY_DEL,
        ),
        // A cniDir shared by several networks: the file does not say whose.
        None if networks.len() == 1 => (networks.first().map_or("", |n| n.as_str()), "", action),
        None => ("", "", action),
    };
    let object = path.display().to_string();
    let finding = Finding::new(KIND, network, id, ifname, &object, action);
    out.push(finding.fix(move |node| fix(node, &path)));
    Ok(())
}

/// Removes the file unless it is gone already or was written since (an ADD
/// of that container in flight).
fn fix(node: &Node, path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Ok(m) if !m.file_type().is_file() => return Ok(false),
        _ => {}
    }
    if !node.old_file(path)? {
        return Ok(false);
    }
    remove_file(path)
}

/// Whether the path is a regular file (a link is not followed; gone is not).
fn regular_file(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(m.file_type().is_file()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("failed to stat {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_pod_file_names() {
        assert_eq!(owner_of("abc123"), Some(("abc123", ACTION)));
        assert_eq!(owner_of("abc123.status"), Some(("abc123", STATUS_ACTION)));
        // The results directory is left out by its file type.
        assert_eq!(owner_of("results"), Some(("results", ACTION)));
        assert_eq!(owner_of(".abc123.tmp"), None);
        assert_eq!(owner_of(".status"), None);
    }
}
