//! `flannel`: flannel's saved delegate configs (`<dataDir>/<containerID>`,
//! naming their network) of containers that no attachment not known dead of
//! that network holds: a dead one's DEL removes it, one no cache entry names
//! is removed once old enough.

use super::Finding;
use super::node::{Node, remove_file};
use crate::plugins::flannel::{DEFAULT_DATA_DIR, saved_network};
use anyhow::{Context, Result};

pub const KIND: &str = "flannel";
pub const ACTION: &str = "remove saved delegate config";
pub use super::BY_DEL;

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
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
            if node.keeps(&network, &id, "") || !node.old_file(&path)? {
                continue;
            }
            let dead = node.dead_owner(&network, &id, "");
            let ifname = dead.map(|a| a.entry.ifname.clone()).unwrap_or_default();
            let action = if dead.is_some() { BY_DEL } else { ACTION };
            let object = path.display().to_string();
            out.push(
                Finding::new(KIND, &network, &id, &ifname, &object, action)
                    .fix(move |_| remove_file(&path)),
            );
        }
    }
    Ok(())
}
