//! What `cni-multi install` keeps in a CNI bin directory, read without
//! changing anything: its state file and what each name is now. install
//! plans from it; the doctor reports from it (`survey`).

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

/// The binary's own name in the directory; every plugin name runs it.
pub use crate::cni::stub::BINARY;

/// Where install keeps its state file and backups inside the directory.
pub const STATE_DIR: &str = ".cni-multi";

/// Largest binary or backed-up plugin read whole.
pub const MAX_BINARY: u64 = 512 << 20;

/// What a name in the directory is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    Absent,
    /// A symbolic link and its target.
    Link(String),
    /// A plugin stub of cni-multi's and the binary it runs.
    Stub(String),
    /// A regular file and the SHA-512 (hex) of its bytes.
    File(String),
    /// A directory, device, socket or a link whose target is not UTF-8: never touched.
    Other,
}

impl Observed {
    /// A plugin name in one of cni-multi's forms (a stub, or a link to the binary).
    pub fn is_plugin_form(&self) -> bool {
        match self {
            Observed::Stub(_) => true,
            Observed::Link(t) => t == BINARY,
            _ => false,
        }
    }
}

/// What a name was before a change, kept in the state file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Was {
    Absent,
    /// A file now kept under this name in the backup directory.
    File(String),
    /// A symbolic link with this target.
    Link(String),
}

/// One name's entry in the journal of the last install that changed something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Undo {
    pub was: Was,
    /// Whether cni-multi held the name before that install (an upgrade).
    pub owned_before: bool,
}

/// The state file: names cni-multi holds with what each was before it first
/// took them, the journal of the last install that changed something, and the
/// digest of the binary it installed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    #[serde(default)]
    pub owned: BTreeMap<String, Was>,
    #[serde(default)]
    pub last: BTreeMap<String, Undo>,
    #[serde(default)]
    pub binary: String,
    /// Names left to other installers (`--leave`) at the last install.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub left: BTreeSet<String>,
}

/// Whether `name` may be a file name in the directory (also for names read
/// back from the state file).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && name.len() <= 255 && !name.contains(['/', '\0'])
}

/// What `name` in `dir` is now, without following it.
pub fn observe(dir: &Path, name: &str) -> io::Result<Observed> {
    let path = dir.join(name);
    let meta = match fs_err::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Observed::Absent),
        Err(e) => return Err(e),
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = fs_err::read_link(&path)?;
        return Ok(match target.to_str() {
            Some(t) => Observed::Link(t.to_string()),
            None => Observed::Other,
        });
    }
    if !kind.is_file() {
        return Ok(Observed::Other);
    }
    let bytes = crate::files::read_state_limited(&path, MAX_BINARY)?;
    if let Some(binary) = crate::cni::stub::parse(&bytes) {
        return Ok(Observed::Stub(binary.to_string()));
    }
    Ok(Observed::File(crate::digest::sha512_hex(&bytes)))
}

/// `dir`'s state directory, refused when it (or its backups) is anything
/// but a directory: never followed.
pub fn state_dir(dir: &Path) -> io::Result<PathBuf> {
    let state = dir.join(STATE_DIR);
    for d in [state.clone(), state.join("backup")] {
        if fs_err::symlink_metadata(&d).is_ok_and(|m| !m.is_dir()) {
            return Err(io::Error::other(format!(
                "refusing {}: not a directory (never followed)",
                d.display()
            )));
        }
    }
    Ok(state)
}

/// The state file of `dir`; None when install never wrote one there.
pub fn read_state(dir: &Path) -> io::Result<Option<State>> {
    let path = state_dir(dir)?.join("state.json");
    match crate::files::read_state_limited(&path, crate::files::MAX_FILE) {
        Ok(bytes) => crate::cni::json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| io::Error::other(format!("failed to decode {}: {e}", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// What is wrong with a name install holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// A plugin name now holds another installer's file.
    Clobbered,
    /// The binary's bytes are not the ones installed.
    Damaged,
}

/// The names install holds in `dir` that no longer are what it put there
/// (names left to other installers aside); None when install never ran there.
pub fn survey(dir: &Path) -> io::Result<Option<Vec<(String, Damage)>>> {
    let Some(state) = read_state(dir)? else {
        return Ok(None);
    };
    let mut out = Vec::new();
    for name in state.owned.keys() {
        if state.left.contains(name) || !valid_name(name) {
            continue;
        }
        let now = observe(dir, name)?;
        let damage = match &now {
            Observed::Absent | Observed::Other => None,
            Observed::File(d) if name == BINARY => (*d != state.binary).then_some(Damage::Damaged),
            _ if name == BINARY => Some(Damage::Damaged),
            other => (!other.is_plugin_form()).then_some(Damage::Clobbered),
        };
        out.extend(damage.map(|d| (name.clone(), d)));
    }
    Ok(Some(out))
}
