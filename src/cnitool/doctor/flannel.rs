//! `flannel`: flannel's saved delegate configs (`<dataDir>/<containerID>`,
//! naming their network), owned by any attachment of that container on that
//! network: a dead one's DEL removes it, one no cache entry names is removed
//! once old enough.

use super::Finding;
use super::engine::{self, Named, Object, Owner};
use super::node::Node;
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
            let owner = Owner::of(node, Named::new(&network, &id, ""));
            objects.push(Object::file(KIND, path, owner, ACTION));
        }
    }
    engine::findings(node, objects, out)
}
