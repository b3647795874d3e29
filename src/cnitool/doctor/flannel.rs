//! `flannel`: flannel's saved delegate configs (`<dataDir>/<containerID>`,
//! naming their network), owned by any attachment of that container on that
//! network: a dead one's DEL removes it, one no cache entry names is removed
//! once old enough.

use super::Finding;
use super::engine::{self, Age, Label, Named, Object, Owner};
use super::node::{Node, remove_file};
use crate::plugins::flannel::{DEFAULT_DATA_DIR, saved_network};
use anyhow::{Context, Result};

pub const KIND: &str = "flannel";
pub const ACTION: &str = "remove saved delegate config";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut objects = Vec::new();
    for dir in node.data_dirs("flannel", DEFAULT_DATA_DIR) {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("failed to read {}", dir.display())),
        };
        for entry in entries {
            let entry = entry.with_context(|| format!("failed to read {}", dir.display()))?;
            let id = entry.file_name().to_string_lossy().into_owned();
            // Temporary files of a write in progress start with a dot.
            if id.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            let Some(network) = saved_network(&path) else {
                continue;
            };
            let named = Named::new(&network, &id, "");
            let (p1, p2) = (path.clone(), path.clone());
            objects.push(Object {
                kind: KIND,
                id: path.display().to_string(),
                label: path.display().to_string(),
                owner: Owner::of(node, named.clone()),
                names: named,
                label_when_dead: Label::Entry,
                age: Age::File(path),
                addresses: Vec::new(),
                busy: false,
                action: ACTION,
                dead_action: None,
                present: Box::new(move |_| Ok(std::fs::symlink_metadata(&p1).is_ok())),
                remove: Box::new(move |_| remove_file(&p2).map(drop)),
            });
        }
    }
    engine::findings(node, objects, out)
}
