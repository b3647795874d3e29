//! `tmp`: the temporary files of state writes that never finished
//! (`.<name>.tmp<pid>` beside the file: a plugin or runtime killed between
//! writing and renaming), in the result caches and the plugins' `dataDir`s.
//! One is listed once it is --min-age old and its writer is gone; it names no
//! attachment (it never became state).

use super::Finding;
use super::engine::{self, Object, Owner};
use super::node::{Node, entries};
use anyhow::Result;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub const KIND: &str = "tmp";
pub const ACTION: &str = "remove unfinished write";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    dirs.insert(node.runtime.cache.dir.join("results"));
    for a in &node.attachments {
        dirs.insert(a.cache.dir.join("results"));
        dirs.insert(a.cache.dir.clone());
    }
    dirs.extend(node.data_dirs(KIND));
    let mut objects = Vec::new();
    for dir in dirs {
        for e in entries(&dir)? {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(pid) = crate::files::tmp_writer(&name) else {
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
