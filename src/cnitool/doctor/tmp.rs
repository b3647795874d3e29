//! `tmp`: the temporary files of state writes that never finished
//! (`.<name>.tmp<pid>` beside the file: a plugin or runtime killed between
//! writing and renaming), in the result caches and the plugins' `dataDir`s.
//! One is listed once it is --min-age old and its writer is gone; it names no
//! attachment (it never became state).

use super::Finding;
use super::engine::{self, Object, Owner};
use super::node::Node;
use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub const KIND: &str = "tmp";
pub const ACTION: &str = "remove unfinished write";

/// The plugins that write state files, with their default `dataDir`.
const PLUGINS: &[(&str, &str)] = &[
    ("firewall", crate::plugins::firewall::DEFAULT_DATA_DIR),
    ("portmap", crate::plugins::portmap::DEFAULT_DATA_DIR),
    ("bandwidth", crate::plugins::bandwidth::DEFAULT_DATA_DIR),
    ("tuning", crate::plugins::tuning::DEFAULT_DATA_DIR),
    ("flannel", crate::plugins::flannel::DEFAULT_DATA_DIR),
];

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    dirs.insert(node.runtime.cache.dir.join("results"));
    for a in &node.attachments {
        dirs.insert(a.cache.dir.join("results"));
        dirs.insert(a.cache.dir.clone());
    }
    for (plugin, default) in PLUGINS {
        dirs.extend(node.data_dirs(plugin, default));
    }
    let mut objects = Vec::new();
    for dir in dirs {
        let entries = match std::fs::read_dir(&dir) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("failed to read {}", dir.display())),
        };
        for e in entries {
            let e = e.with_context(|| format!("failed to read {}", dir.display()))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = writer(&name) else {
                continue;
            };
            let path = e.path();
            if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                continue;
            }
            objects.push(Object {
                // Its writer still runs: a write in progress.
                busy: Path::new(&format!("/proc/{pid}")).exists(),
                ..Object::file(KIND, path, Owner::default(), ACTION)
            });
        }
    }
    engine::findings(node, objects, out)
}

/// The pid of a temporary file's writer: `.<name>.tmp<pid>`.
fn writer(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (_, pid) = rest.rsplit_once(".tmp")?;
    pid.parse().ok().filter(|p| *p > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_file_names_its_writer() {
        assert_eq!(writer(".net-c1-eth0.tmp123"), Some(123));
        assert_eq!(writer(".c1@eth0.json.tmp9"), Some(9));
        assert_eq!(writer("net-c1-eth0"), None);
        assert_eq!(writer(".net.tmp"), None);
        assert_eq!(writer(".net.tmpx"), None);
        assert_eq!(writer(".x.tmp0"), None);
    }
}
