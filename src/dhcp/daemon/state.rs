//! The daemon's lease files: one per attachment, `<statedir>/<digest>.json`,
//! written atomically 0600 in a 0700 directory, read back at start. The
//! directory is locked for the daemon's life, so two daemons never share one.

use crate::dhcp::client::Request;
use crate::dhcp::lease::Lease;
use crate::dhcp::protocol::{Attachment, STATE_LOCK, state_file_name};
use anyhow::{Context, Result, bail};
use nix::fcntl::Flock;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Format version of a lease file.
const FORMAT: u32 = 1;

/// What a lease file holds: everything a restarted daemon needs to keep the
/// lease (the request as the plugin sent it, without the host prefix).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub version: u32,
    pub attachment: Attachment,
    pub request: Request,
    pub lease: Lease,
}

/// The daemon's state directory, locked.
pub struct StateDir {
    dir: PathBuf,
    _lock: Flock<File>,
}

impl StateDir {
    /// Creates (0700) and locks `dir`; a directory another daemon holds is an error.
    pub fn open(dir: &Path) -> Result<StateDir> {
        crate::files::create_dir_mode(dir, 0o700)?;
        let lock_path = dir.join(STATE_LOCK);
        let lock = crate::lockfile::lock_private(&lock_path, Duration::ZERO).map_err(|e| {
            if e.kind() == std::io::ErrorKind::TimedOut {
                anyhow::anyhow!(
                    "another dhcp daemon keeps its leases in {} (its lock {} is held)",
                    dir.display(),
                    lock_path.display()
                )
            } else {
                anyhow::Error::new(e)
            }
        })?;
        Ok(StateDir {
            dir: dir.to_path_buf(),
            _lock: lock,
        })
    }

    fn file(&self, attachment: &Attachment) -> PathBuf {
        self.dir.join(state_file_name(attachment))
    }

    pub fn save(&self, attachment: &Attachment, request: &Request, lease: &Lease) -> Result<()> {
        let saved = Saved {
            version: FORMAT,
            attachment: attachment.clone(),
            request: request.clone(),
            lease: lease.clone(),
        };
        let mut text = serde_json::to_string(&saved).context("failed to encode a lease")?;
        text.push('\n');
        let path = self.file(attachment);
        crate::files::write_private_atomic(&path, text.as_bytes())
            .with_context(|| format!("failed to save the lease of {attachment}"))
    }

    /// Removes the attachment's file; an absent one is fine.
    pub fn remove(&self, attachment: &Attachment) -> Result<()> {
        match std::fs::remove_file(self.file(attachment)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(anyhow::Error::new(e).context(format!(
                "failed to remove the lease file of {attachment} in {}",
                self.dir.display()
            ))),
        }
    }

    /// Every lease file, read; files that cannot be read are reported in the
    /// second list (and left in place for a person to look at). Temporary files
    /// of an interrupted write are removed.
    pub fn load(&self) -> Result<(Vec<Saved>, Vec<String>)> {
        let mut saved = Vec::new();
        let mut problems = Vec::new();
        let entries = std::fs::read_dir(&self.dir)
            .with_context(|| format!("failed to list {}", self.dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("failed to list {}", self.dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with('.') && name.contains(".tmp") {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            if !name.ends_with(".json") {
                continue;
            }
            match read_saved(&path) {
                Ok(s) if state_file_name(&s.attachment) == name => saved.push(s),
                Ok(s) => problems.push(format!(
                    "{}: holds the lease of {}, which belongs in {}",
                    path.display(),
                    s.attachment,
                    state_file_name(&s.attachment)
                )),
                Err(e) => problems.push(format!("{e:#}")),
            }
        }
        saved.sort_by(|a, b| a.attachment.cmp(&b.attachment));
        Ok((saved, problems))
    }
}

/// The lease files of a state directory that the daemon would take up at its
/// start (named after their attachment, whose parts are valid), read without
/// its lock: for a reader beside the daemon (the doctor). Anything else is
/// left out, as the daemon leaves it.
pub fn read_leases(dir: &Path) -> Result<Vec<(PathBuf, Saved)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("failed to list {}", dir.display())),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("failed to list {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        let path = entry.path();
        if let Ok(s) = read_saved(&path)
            && state_file_name(&s.attachment) == name
            && super::checks::check_attachment(&s.attachment).is_ok()
        {
            out.push((path, s));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Removes an attachment's lease file while no daemon keeps the directory,
/// under the daemon's lock so one starting meanwhile does not take the lease
/// up; false (nothing removed) when a daemon holds the lock.
pub fn remove_unkept(dir: &Path, attachment: &Attachment) -> Result<bool> {
    let lock_path = dir.join(STATE_LOCK);
    let _lock = match crate::lockfile::lock_private(&lock_path, Duration::ZERO) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return Ok(false),
        Err(e) => {
            return Err(
                anyhow::Error::new(e).context(format!("failed to lock {}", lock_path.display()))
            );
        }
    };
    let path = dir.join(state_file_name(attachment));
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => {
            Err(anyhow::Error::new(e).context(format!("failed to remove {}", path.display())))
        }
    }
}

fn read_saved(path: &Path) -> Result<Saved> {
    let bytes = crate::files::read_state_limited(path, 1 << 20)?;
    let saved: Saved = crate::cni::json::from_slice(&bytes)
        .with_context(|| format!("{}: not a lease file", path.display()))?;
    if saved.version != FORMAT {
        bail!(
            "{}: lease file format {} (this daemon reads {FORMAT})",
            path.display(),
            saved.version
        );
    }
    Ok(saved)
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
