//! `multus`: multus's per-pod files in each configured `cniDir`, its delegate
//! cache (`<cniDir>/<containerID>`) and the pod's network status
//! (`<containerID>.status`), of pods no attachment not known dead holds: a
//! dead one's DEL removes them, those no cache entry names are removed once
//! old enough. Its delegates' result cache (`<cniDir>/results`) is `cache`'s.
//! A long container ID is its token in these names (`files::state_name`):
//! the delegate cache then holds the whole ID, the status file is matched by
//! its token.

use super::Finding;
use super::engine::{self, Named, Object, Owner};
use super::node::{Node, State, entries, multus_cni_dirs};
use crate::cni::env::is_id_or_token;
use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub const KIND: &str = "multus";
pub const ACTION: &str = "remove delegate cache";
pub const STATUS_ACTION: &str = "remove network status";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for (dir, networks) in multus_cni_dirs(&node.lists) {
        let mut paths: Vec<_> = entries(&dir)?.iter().map(|e| e.path()).collect();
        paths.sort();
        let mut objects = Vec::new();
        for path in paths {
            objects.extend(object(node, &networks, path)?);
        }
        engine::findings(node, objects, out)?;
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
    is_id_or_token(id).then_some((id, action))
}

/// The container ID a per-pod file's name gives: a token stands for the ID
/// the delegate cache of that token holds, or a cached attachment's.
pub fn container_of(node: &Node, dir: &Path, id: &str) -> String {
    if !crate::files::is_id_token(id) {
        return id.to_string();
    }
    crate::plugins::multus::cached_container(&dir.join(id)).unwrap_or_else(|| node.container_of(id))
}

fn object(node: &Node, networks: &BTreeSet<String>, path: PathBuf) -> Result<Option<Object>> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Ok(None);
    };
    let Some((id, action)) = owner_of(name) else {
        return Ok(None);
    };
    let id = &container_of(node, path.parent().unwrap_or(Path::new("")), id);
    if !regular_file(&path)? {
        return Ok(None);
    }
    // Any attachment of the pod keeps its files; a dead one removes them
    // with its DEL only on a network this cniDir serves.
    let mut candidates = node.matching(&Named::new("", id, ""));
    candidates.retain(|&i| {
        let a = &node.attachments[i];
        a.state != State::Dead || networks.contains(&a.entry.network_name)
    });
    // A cniDir shared by several networks: the file does not say whose.
    let network = match networks.len() {
        1 => networks.first().map_or("", |n| n.as_str()),
        _ => "",
    };
    let p = path.clone();
    let owner = Owner {
        candidates,
        named: Named::new("", id, ""),
    };
    Ok(Some(Object {
        names: Named::new(network, id, ""),
        present: Box::new(move |_| regular_file(&p)),
        ..Object::file(KIND, path, owner, action)
    }))
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
#[path = "multus_tests.rs"]
mod tests;
