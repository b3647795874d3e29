//! The directory side of `cni-multi install`: what a name is, and the atomic
//! changes. An existing name is never opened for writing: new bytes go to a
//! temporary file that is renamed over it, so a runtime executing a plugin at
//! that moment runs the old file or the new one, never a partial one, and
//! never gets ETXTBSY.

use super::plan::{Observed, State};
use crate::files::{self, StateOpen};
use crate::quote::quoted;
use anyhow::{Context, Result, bail};
use fs_err::os::unix::fs::OpenOptionsExt;
use nix::fcntl::{Flock, FlockArg, OFlag};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::plugins::installed::{self, MAX_BINARY, STATE_DIR};

pub struct Dir {
    pub path: PathBuf,
}

impl Dir {
    pub fn name(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    fn state_dir(&self) -> PathBuf {
        self.path.join(STATE_DIR)
    }

    fn state_file(&self) -> PathBuf {
        self.state_dir().join("state.json")
    }

    pub fn backup(&self, file: &str) -> PathBuf {
        self.state_dir().join("backup").join(file)
    }

    /// Locks the directory itself (flock on its fd), so two installs do not
    /// interleave; no lock file is left behind.
    pub fn lock(&self) -> Result<Flock<File>> {
        let dir = File::open(&self.path)
            .with_context(|| format!("failed to open {}", self.path.display()))?;
        Flock::lock(dir, FlockArg::LockExclusive)
            .map_err(|(_, e)| e)
            .with_context(|| format!("failed to lock {}", self.path.display()))
    }

    /// What `name` is now, without following it.
    pub fn observe(&self, name: &str) -> Result<Observed> {
        Ok(installed::observe(&self.path, name)?)
    }

    /// The state file; none yet is an empty state. Never read through a symlink.
    pub fn read_state(&self) -> Result<State> {
        Ok(installed::read_state(&self.path)?.unwrap_or_default())
    }

    /// Writes the state file atomically; an empty state removes the state
    /// directory (backups included) so the directory is as before cni-multi.
    pub fn write_state(&self, state: &State) -> Result<()> {
        self.refuse_symlinked_state_dir()?;
        if state.owned.is_empty() && state.last.is_empty() {
            return match fs_err::remove_dir_all(self.state_dir()) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
                _ => Ok(()),
            };
        }
        let bytes = serde_json::to_vec_pretty(state)?;
        files::write_private_atomic(&self.state_file(), &bytes)?;
        // The rename, and the state directory's own entry, survive a crash.
        sync_dir(&self.state_dir())?;
        self.sync()
    }

    fn refuse_symlinked_state_dir(&self) -> Result<()> {
        installed::state_dir(&self.path)?;
        Ok(())
    }

    /// A free backup file name for `name`: `name`, else `name.1`, `name.2`, ...
    pub fn free_backup_name(&self, name: &str, taken: &[String]) -> String {
        let mut candidate = name.to_string();
        let mut n = 0;
        while taken.contains(&candidate)
            || fs_err::symlink_metadata(self.backup(&candidate)).is_ok()
        {
            n += 1;
            candidate = format!("{name}.{n}");
        }
        candidate
    }

    /// Removes backup files no entry of `state` names (kept from an install
    /// whose journal a later one replaced).
    pub fn prune_backups(&self, state: &State) -> Result<()> {
        let dir = self.state_dir().join("backup");
        let Ok(entries) = fs_err::read_dir(&dir) else {
            return Ok(());
        };
        let named = |f: &str| {
            let file = super::plan::Was::File(f.to_string());
            state.owned.values().any(|w| *w == file) || state.last.values().any(|u| u.was == file)
        };
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if !named(&file) {
                files::remove_state(&entry.path())?;
            }
        }
        Ok(())
    }

    /// Keeps the file at `name` as backup `file`: a hard link, or a copy
    /// where a link cannot be made.
    pub fn keep(&self, name: &str, file: &str) -> Result<()> {
        let backup = self.backup(file);
        files::create_dir_mode(backup.parent().unwrap_or(&self.path), 0o700)?;
        let from = self.name(name);
        if fs_err::hard_link(&from, &backup).is_err() {
            let bytes = files::read_state_limited(&from, MAX_BINARY)?;
            let mode = fs_err::symlink_metadata(&from)?.permissions().mode();
            let mut out = files::open_state(&backup, StateOpen::CreateNew)?;
            out.write_all(&bytes)?;
            out.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
            out.sync_all()?;
        }
        // Durable before the name it keeps is replaced.
        sync_dir(&self.state_dir().join("backup"))?;
        sync_dir(&self.state_dir())
    }

    /// Puts `bytes` at `name` as a 0755 file: temporary file (O_EXCL), write,
    /// fsync, rename over.
    pub fn put_file(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let tmp = self.temp(name)?;
        let written = (|| -> io::Result<()> {
            let mut out = fs_err::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o755)
                .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC).bits())
                .open(&tmp)?;
            out.set_permissions(std::fs::Permissions::from_mode(0o755))?;
            out.write_all(bytes)?;
            out.sync_all()?;
            drop(out);
            fs_err::rename(&tmp, self.name(name))
        })();
        if written.is_err() {
            let _ = fs_err::remove_file(&tmp);
        }
        Ok(written?)
    }

    /// Makes `name` a symbolic link to `target`: a temporary link renamed over.
    pub fn put_link(&self, name: &str, target: &str) -> Result<()> {
        let tmp = self.temp(name)?;
        let made = fs_err::os::unix::fs::symlink(target, &tmp)
            .and_then(|_| fs_err::rename(&tmp, self.name(name)));
        if made.is_err() {
            let _ = fs_err::remove_file(&tmp);
        }
        Ok(made?)
    }

    /// Renames backup `file` back over `name`.
    pub fn restore_file(&self, name: &str, file: &str) -> Result<()> {
        Ok(fs_err::rename(self.backup(file), self.name(name))?)
    }

    pub fn remove(&self, name: &str) -> Result<()> {
        Ok(files::remove_state(&self.name(name))?)
    }

    pub fn has_backup(&self, file: &str) -> bool {
        fs_err::symlink_metadata(self.backup(file)).is_ok_and(|m| m.is_file())
    }

    /// Makes the renames durable.
    pub fn sync(&self) -> Result<()> {
        sync_dir(&self.path)
    }

    /// A temporary name beside `name` (`.<name>.tmp<pid>`, as state writes
    /// name theirs); one a crash of ours left with this pid is removed first.
    fn temp(&self, name: &str) -> Result<PathBuf> {
        let tmp = self.path.join(format!(".{name}.tmp{}", std::process::id()));
        if fs_err::symlink_metadata(&tmp).is_ok_and(|m| !m.is_dir()) {
            fs_err::remove_file(&tmp)?;
        }
        Ok(tmp)
    }

    /// Removes what an install killed part way left: temporary files of the
    /// names it manages (and of its state file), and a state directory that
    /// never got its state file. Only under the lock, so no install that is
    /// running owns them; files install could not have written stay.
    pub fn clear_leftovers(&self, names: &[String]) -> Result<()> {
        let ours = |dir: &Path, managed: &dyn Fn(&str) -> bool| -> Result<()> {
            let Ok(entries) = fs_err::read_dir(dir) else {
                return Ok(());
            };
            for e in entries.flatten() {
                let file = e.file_name().to_string_lossy().into_owned();
                let Some(pid) = files::tmp_writer(&file) else {
                    continue;
                };
                let suffix = format!(".tmp{pid}");
                let of = file[1..].strip_suffix(&suffix).unwrap_or_default();
                if managed(of) && e.file_type().is_ok_and(|t| !t.is_dir()) {
                    fs_err::remove_file(e.path())?;
                }
            }
            Ok(())
        };
        ours(&self.path, &|n| names.iter().any(|m| m == n))?;
        let state = installed::state_dir(&self.path)?;
        ours(&state, &|n| n == "state.json")?;
        if fs_err::symlink_metadata(self.state_file()).is_err() {
            // Made, then killed before the journal: rmdir, which keeps
            // anything that is there.
            let _ = std::fs::remove_dir(state.join("backup"));
            let _ = std::fs::remove_dir(&state);
        }
        Ok(())
    }
}

/// This build's bytes, read from /proc/self/exe.
pub fn own_binary() -> Result<Vec<u8>> {
    Ok(files::read_limited("/proc/self/exe", MAX_BINARY)?)
}

/// Runs `path` as a plugin asked for VERSION; Err says how it failed.
pub fn answers_version(path: &Path, args: &[&std::ffi::OsStr]) -> Result<()> {
    use std::process::{Command, Stdio};
    let mut child = Command::new(path)
        .args(args)
        .env_clear()
        .env("CNI_COMMAND", "VERSION")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run it")?;
    if let Some(mut stdin) = child.stdin.take() {
        // A plugin that exits without reading is judged by its output below.
        let _ = stdin.write_all(br#"{"cniVersion":"1.1.0"}"#);
    }
    let out = child.wait_with_output().context("cannot wait for it")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !(out.status.success() && stdout.contains("supportedVersions")) {
        bail!("{}", version_failure(out.status, &out.stdout, &out.stderr));
    }
    Ok(())
}

/// What a name asked for VERSION did, against what a plugin does.
fn version_failure(status: std::process::ExitStatus, stdout: &[u8], stderr: &[u8]) -> String {
    use std::os::unix::process::ExitStatusExt;
    let exit = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => status.to_string(),
    };
    let shown = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim();
        match text.char_indices().nth(200) {
            _ if text.is_empty() => "nothing".to_string(),
            Some((cut, _)) => format!("{}...", quoted(&text[..cut])),
            None => format!("{text}", text = quoted(&text)),
        }
    };
    format!(
        "asked for VERSION (CNI_COMMAND=VERSION), it {exit} and printed {} on stdout, {} on \
         stderr; a CNI plugin exits 0 printing a JSON object with \"supportedVersions\"",
        shown(stdout),
        shown(stderr)
    )
}

/// fsyncs a directory: the entries made or renamed in it survive a crash.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("failed to sync {}", dir.display()))
}

#[cfg(test)]
#[path = "disk_tests.rs"]
mod tests;
