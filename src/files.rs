//! Files the plugins keep and read. Reads of files whose size we do not control
//! (state, caches, configs, files named by a config) are bounded, so a huge file
//! is an error naming it instead of a plugin that reads a gigabyte into memory.
//! Private state is written atomically. Every error names its path (fs-err).
//!
//! State files and locks (host-local's store, result and delegate caches, the
//! dhcp daemon's leases, plugin backups) are opened only through
//! [`open_state`]: never through a symlink (`O_NOFOLLOW`), new files with
//! `O_EXCL`, all 0600. A symlink planted where state goes is an error naming
//! it, not a write to whatever it points at.

use fs_err::os::unix::fs::OpenOptionsExt;
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// An io::Error for `op` on `path` that names the path and keeps `e` as its
/// source, for the few operations fs-err does not wrap (a DirBuilder with a
/// mode, flock).
pub fn path_error(e: io::Error, op: &'static str, path: &Path) -> io::Error {
    io::Error::new(
        e.kind(),
        PathError {
            op,
            path: path.to_path_buf(),
            source: e,
        },
    )
}

#[derive(Debug)]
struct PathError {
    op: &'static str,
    path: PathBuf,
    source: io::Error,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "failed to {} {}: {}",
            self.op,
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Creates `dir` and its missing parents with `mode` (not the umask's).
pub fn create_dir_mode(dir: &Path, mode: u32) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(mode)
        .create(dir)
        .map_err(|e| path_error(e, "create", dir))
}

/// How [`open_state`] opens a state file. Every mode refuses a symlink as the
/// last component and creates files 0600.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateOpen {
    /// Read only; the file must exist.
    Read,
    /// Read and write, created when missing, never truncated (locks, files
    /// rewritten in place).
    ReadWrite,
    /// A new file: fails with AlreadyExists when anything, a symlink included,
    /// is at the path (`O_CREAT | O_EXCL`).
    CreateNew,
}

/// Opens a state file or lock the one way state is opened (see the module doc).
pub fn open_state(path: &Path, how: StateOpen) -> io::Result<fs_err::File> {
    let mut opts = fs_err::OpenOptions::new();
    opts.custom_flags(libc_flags::NOFOLLOW | libc_flags::CLOEXEC)
        .mode(0o600);
    match how {
        StateOpen::Read => opts.read(true),
        StateOpen::ReadWrite => opts.read(true).write(true).create(true).truncate(false),
        StateOpen::CreateNew => opts.read(true).write(true).create_new(true),
    };
    opts.open(path).map_err(|e| {
        if e.raw_os_error() == Some(nix::errno::Errno::ELOOP as i32) {
            io::Error::new(
                e.kind(),
                format!(
                    "refusing to open {}: it is a symbolic link (state files are never followed)",
                    path.display()
                ),
            )
        } else {
            e
        }
    })
}

/// The open(2) flags used here, from nix's (the libc crate is not a dependency).
mod libc_flags {
    use nix::fcntl::OFlag;
    pub const NOFOLLOW: i32 = OFlag::O_NOFOLLOW.bits();
    pub const CLOEXEC: i32 = OFlag::O_CLOEXEC.bits();
}

/// A whole state file, bounded as [`read_limited`], never through a symlink.
pub fn read_state_limited(path: impl AsRef<Path>, limit: u64) -> io::Result<Vec<u8>> {
    let path = path.as_ref();
    let file = open_state(path, StateOpen::Read)?;
    read_bounded(file, path, limit)
}

/// As [`read_state_limited`], as text.
pub fn read_state_string_limited(path: impl AsRef<Path>, limit: u64) -> io::Result<String> {
    utf8(read_state_limited(path, limit)?)
}

/// Where a plugin keeps its record of one attachment:
/// `<dir>/<containerID>@<ifname>.json` ([`state_name`]). A container ID holds
/// no `@` (the env layer allows `[A-Za-z0-9_.-]`), so no two attachments share
/// a file, and both parts were checked to be single path components.
pub fn attachment_record(dir: &Path, container_id: &str, ifname: &str) -> PathBuf {
    dir.join(state_name("", container_id, &format!("@{ifname}.json")))
}

/// The longest file name Linux filesystems take (NAME_MAX).
pub const NAME_MAX: usize = 255;

/// How much of a long container ID its token keeps readable.
const TOKEN_PREFIX: usize = 64;
/// Hex digits of SHA-512 in a token or a shortened name (128 bits).
const HASH_HEX: usize = 32;
/// Length of [`id_token`].
pub const TOKEN_LEN: usize = TOKEN_PREFIX + 1 + HASH_HEX;

/// The one way a state file is named from runtime input: `before`, the
/// container ID and `after` (each checked to be part of a single path
/// component), as the reference names it while that fits NAME_MAX, so mixed
/// nodes and switched binaries find each other's files. Past it the ID gives
/// way to its [`id_token`]; should the other parts alone be too long (a
/// network name near 255 bytes), the whole name is shortened the same way,
/// its extension kept. The spec sets no length on IDs (the env layer takes
/// 1024 bytes): a name over NAME_MAX could never be written or removed.
pub fn state_name(before: &str, container_id: &str, after: &str) -> String {
    let plain = format!("{before}{container_id}{after}");
    if plain.len() <= NAME_MAX {
        return plain;
    }
    if container_id.len() > TOKEN_LEN {
        let tokened = format!("{before}{}{after}", id_token(container_id));
        if tokened.len() <= NAME_MAX {
            return tokened;
        }
    }
    let ext = after
        .rfind('.')
        .map(|at| &after[at..])
        .filter(|e| e.len() <= 16)
        .unwrap_or_default();
    shortened(&plain, ext, NAME_MAX)
}

/// What stands for a long container ID in a state file's name: its first 64
/// bytes, `~` (which no container ID holds) and 32 hex digits of SHA-512 of
/// the whole ID. The file's content names the whole ID where its format has
/// room; otherwise whoever reads it matches the token against the IDs it
/// knows ([`id_token`] of each).
pub fn id_token(container_id: &str) -> String {
    format!(
        "{}~{}",
        prefix_of(container_id, TOKEN_PREFIX),
        hash_hex(container_id)
    )
}

/// Whether `s` has the shape of an [`id_token`].
pub fn is_id_token(s: &str) -> bool {
    let Some((prefix, hash)) = s.split_once('~') else {
        return false;
    };
    let id_chars = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    (1..=TOKEN_PREFIX).contains(&prefix.len())
        && prefix.starts_with(|c: char| c.is_ascii_alphanumeric())
        && prefix.chars().all(id_chars)
        && hash.len() == HASH_HEX
        && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Whether a state file name was bounded (holds a token or was shortened):
/// its owner is in its content or must be matched, not read off the name.
pub fn is_bounded_name(name: &str) -> bool {
    name.contains('~')
}

/// `name` within `max` bytes: itself when it fits, else its first bytes, `~`,
/// 32 hex digits of SHA-512 of all of it and `ext`.
fn shortened(name: &str, ext: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_string();
    }
    let keep = max.saturating_sub(1 + HASH_HEX + ext.len());
    format!("{}~{}{ext}", prefix_of(name, keep), hash_hex(name))
}

/// The first 32 hex digits of SHA-512 of `s`.
fn hash_hex(s: &str) -> String {
    let mut hex = crate::digest::sha512_hex(s.as_bytes());
    hex.truncate(HASH_HEX);
    hex
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn prefix_of(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Removes a state file; one already gone is fine.
pub fn remove_state(path: &Path) -> io::Result<()> {
    match fs_err::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Writes a private state file atomically: its directory created 0700 when
/// missing, the bytes written to a temporary file (0600) beside it, fsync'd, and
/// renamed over `path`. A crash leaves the old file or the new one, never a
/// truncated one; no other user can read it.
pub fn write_private_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir_mode(dir, 0o700)?;
    replace_with(path, bytes, 0o600)
}

/// [`write_private_atomic`] into an existing directory with this mode, the
/// rename made durable (the directory fsync'd).
pub fn write_file_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace_with(path, bytes, mode)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    fs_err::File::open(dir)?.sync_all()
}

/// A temporary file with `bytes`, fsync'd, renamed over `path`.
fn replace_with(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let pid = std::process::id().to_string();
    // `.<name>.tmp<pid>` must fit NAME_MAX too, whatever `name` is.
    let room = NAME_MAX - ".".len() - ".tmp".len() - pid.len();
    let tmp = dir.join(format!(".{}.tmp{pid}", shortened(&name, "", room)));
    let written = (|| {
        // A temporary file of ours that a crash left (same pid) goes; whatever
        // else is there makes CreateNew fail rather than be written through.
        // rename() then replaces `path` itself, even when it is a symlink.
        if fs_err::symlink_metadata(&tmp).is_ok_and(|m| m.is_file()) {
            let _ = fs_err::remove_file(&tmp);
        }
        let mut file = open_state(&tmp, StateOpen::CreateNew)?;
        if mode != 0o600 {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        fs_err::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs_err::remove_file(&tmp);
    }
    written
}

/// The pid of the writer of one of `write_private_atomic`'s temporary files
/// (`.<name>.tmp<pid>`); None for any other name.
pub fn tmp_writer(name: &str) -> Option<u32> {
    let (_, pid) = name.strip_prefix('.')?.rsplit_once(".tmp")?;
    pid.parse().ok().filter(|p| *p > 0)
}

/// Regular files of `dir` with one of `extensions`, sorted by name; a missing
/// directory has none (config and manifest directories are optional).
pub fn files_with(dir: &Path, extensions: &[&str]) -> io::Result<Vec<PathBuf>> {
    let entries = match fs_err::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| extensions.contains(&x))
                && p.is_file()
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Largest config, cache or state file read whole.
pub const MAX_FILE: u64 = 16 << 20;

/// The whole file, or an error (InvalidData) naming it when it is larger than `limit`.
pub fn read_limited(path: impl AsRef<Path>, limit: u64) -> io::Result<Vec<u8>> {
    let path = path.as_ref();
    let file = fs_err::File::open(path)?;
    read_bounded(file, path, limit)
}

fn read_bounded(file: fs_err::File, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    file.take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {limit} bytes", path.display()),
        ));
    }
    Ok(out)
}

/// As `read_limited`, as text (invalid UTF-8 is an error, as for `read_to_string`).
pub fn read_string_limited(path: impl AsRef<Path>, limit: u64) -> io::Result<String> {
    utf8(read_limited(path, limit)?)
}

fn utf8(bytes: Vec<u8>) -> io::Result<String> {
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

#[cfg(test)]
#[path = "files_tests.rs"]
mod tests;
