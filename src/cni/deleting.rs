//! A mark that a DEL of an attachment has begun: libcni runs a list's DEL
//! plugin by plugin, last first, and removes the result cache entry only
//! after the first plugin's DEL; in between the attachment looks alive with
//! its state half gone. A root tool that repairs live attachments (the
//! doctor) must not re-add what such a DEL just removed, so every DEL of
//! ours touches `<DIR>/<hash of network, container, interface>` first; a
//! mark newer than the cache entry says a DEL is (or was) under way.
//! Root-only, in /run (gone at boot); the doctor removes old marks.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub const DIR: &str = "/run/cni-multi/deleting";

/// The mark's file: a hash, so its name stays within NAME_MAX whatever the input.
pub fn path(network: &str, container_id: &str, ifname: &str) -> PathBuf {
    let key = format!("{network}\0{container_id}\0{ifname}");
    let hex = crate::digest::sha512_hex(key.as_bytes());
    Path::new(DIR).join(&hex[..40])
}

/// Marks a DEL as begun (best effort: a DEL never fails for want of a mark).
pub fn mark(network: &str, container_id: &str, ifname: &str) {
    let path = path(network, container_id, ifname);
    let _ = crate::files::create_dir_mode(Path::new(DIR), 0o700);
    let _ = crate::files::remove_state(&path);
    let _ = crate::files::open_state(&path, crate::files::StateOpen::CreateNew);
}

/// When a DEL of the attachment was last begun, if one was.
pub fn marked(network: &str, container_id: &str, ifname: &str) -> Option<SystemTime> {
    std::fs::symlink_metadata(path(network, container_id, ifname))
        .and_then(|m| m.modified())
        .ok()
}

#[cfg(test)]
#[path = "deleting_tests.rs"]
mod tests;
