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
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::os::unix::fs::PermissionsExt;

    fn sample(cid: &str) -> (Attachment, Request, Lease) {
        (
            Attachment {
                container_id: cid.into(),
                network: "lan".into(),
                ifname: "eth0".into(),
            },
            Request {
                netns: "/run/netns/x".into(),
                ifname: "eth0".into(),
                client_id: crate::dhcp::options::client_id(cid, "lan", "eth0"),
                provide: vec![(12, b"h".to_vec())],
                request: vec![3, 1],
            },
            Lease {
                address: Ipv4Addr::new(10, 0, 0, 5),
                server: Ipv4Addr::new(10, 0, 0, 1),
                acquired: 100,
                lease_secs: 3600,
                renew_secs: 1800,
                rebind_secs: 3150,
                options: Default::default(),
            },
        )
    }

    #[test]
    fn leases_are_saved_privately_loaded_and_removed() {
        let dir = std::env::temp_dir().join(format!("cni-multi-dhcpstate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let state = StateDir::open(&dir).expect("open");
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let (a, r, l) = sample("c1");
        state.save(&a, &r, &l).expect("save");
        let (b, rb, lb) = sample("c2");
        state.save(&b, &rb, &lb).expect("save");
        assert_eq!(mode(&dir.join(state_file_name(&a))), 0o600);
        // Junk is reported, leftovers of a crash are removed.
        std::fs::write(dir.join("junk.json"), "{").expect("junk");
        std::fs::write(dir.join(".x.json.tmp42"), "").expect("tmp");
        let (saved, problems) = state.load().expect("load");
        assert_eq!(saved.len(), 2);
        assert_eq!((&saved[0].attachment, &saved[0].lease), (&a, &l));
        assert_eq!(saved[0].request, r);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("junk.json"), "{problems:?}");
        assert!(!dir.join(".x.json.tmp42").exists());
        // A reader beside the daemon sees the same leases, each with its file;
        // one under another attachment's name is left out as the daemon does.
        let copied = dir.join(format!("{}.json", "0".repeat(32)));
        std::fs::copy(dir.join(state_file_name(&a)), &copied).expect("copy");
        let read = read_leases(&dir).expect("read");
        assert_eq!(read.len(), 2);
        assert!(
            read.iter()
                .any(|(p, s)| p == &dir.join(state_file_name(&a)) && s == &saved[0])
        );
        std::fs::remove_file(&copied).expect("rm copy");
        // While the daemon holds the directory, the doctor removes nothing.
        assert!(!remove_unkept(&dir, &b).expect("locked"));
        assert!(dir.join(state_file_name(&b)).exists());
        // A second daemon on the same directory is refused.
        let e = StateDir::open(&dir).err().expect("locked");
        assert!(e.to_string().contains("another dhcp daemon"), "{e}");
        state.remove(&a).expect("remove");
        state.remove(&a).expect("remove again");
        let (saved, _) = state.load().expect("load");
        assert_eq!(saved.len(), 1);
        drop(state);
        assert!(remove_unkept(&dir, &b).expect("unlocked"));
        assert!(read_leases(&dir).expect("read").is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
