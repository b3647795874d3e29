//! The owner index: files of our own in the store directory recording who
//! holds each reservation file, keyed by attachment, so that an ADD's
//! duplicate check and a DEL read and write only that attachment's entry: a
//! call's cost does not grow with the network's reservations.
//!
//! - `.cni-multi-owners.d/<hash of containerID and ifname>`: one file per
//!   attachment naming the reservation files it holds;
//! - `.cni-multi-owners`: the seal, a few fixed-size fields saying which
//!   directory state the entries describe, and how many reservations there are.
//!
//! The reservation files stay the truth, in the reference's format; the
//! entries are trusted only while the seal proves them current. After our last
//! change, under the store lock, the directory's mtime is set one second back
//! (to `T`) and `T` is recorded in the seal. Creating or removing any file in
//! the directory (the reference's plugin allocating or releasing during a live
//! switch, an admin) sets the mtime to the current time, which is never `T`,
//! even within the clock tick of our own change: then the entries are
//! rebuilt from every file, once. The seal is written before the mtime is set,
//! so a call that dies anywhere on the way leaves a directory the seal does not
//! match.
//!
//! A reservation file rewritten in place (same name, no directory change) is
//! the one change the seal cannot see; no plugin does that, and the store
//! reads the files it acts on before trusting the entries (see store.rs).
//!
//! The reference never mistakes the index for a reservation: its allocator
//! only opens files named by an IP, and its DEL and CHECK (which walk the
//! directory, subdirectories included) compare each file's whole content with
//! `<id>\r\n<ifname>` or `<id>`; every index file starts with a NUL byte, which
//! no container ID from the environment can hold.

use super::store::{parse_owner, read_small};
use fs_err::File;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Its name parses as no IP, so the reference's allocator never meets it.
pub const INDEX_FILE: &str = ".cni-multi-owners";
/// The directory of the attachments' entries.
pub const ENTRIES_DIR: &str = ".cni-multi-owners.d";
const SEAL_MAGIC: &str = "\0cni-multi host-local owner index 2\n";
const ENTRY_MAGIC: &str = "\0cni-multi host-local owners\n";
/// An entry names one attachment's few reservations; a bigger one is damaged.
const MAX_ENTRY: u64 = 1 << 20;

/// One reservation file and its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub ip: IpAddr,
    pub container_id: String,
    pub ifname: String,
}

impl Held {
    pub fn reservation(&self) -> super::store::Reservation {
        super::store::Reservation {
            ip: self.ip,
            container_id: self.container_id.clone(),
            ifname: self.ifname.clone(),
        }
    }
}

/// Every reservation file of `dir` (files named by an IP), each read.
pub fn scan(dir: &Path) -> io::Result<BTreeMap<String, Held>> {
    let handle = File::open(dir)?;
    let mut buf = vec![0u8; 4096];
    let mut out = BTreeMap::new();
    for entry in fs_err::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        let Some(text) = name.to_str() else { continue };
        let Ok(ip) = text.parse::<IpAddr>() else {
            continue;
        };
        // Gone meanwhile (a DEL outside our lock): not held.
        let Some(content) = read_small(&handle, &name, &mut buf) else {
            continue;
        };
        let (container_id, ifname) = parse_owner(&content);
        out.insert(
            text.to_string(),
            Held {
                ip,
                container_id,
                ifname,
            },
        );
    }
    Ok(out)
}

/// What the directory looked like when the entries were last made current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seal {
    dir_ino: u64,
    /// The mtime we set: `T`.
    mtime: (i64, i64),
    entries_ino: u64,
    count: u64,
}

impl Seal {
    /// Fixed-width fields, so the file is rewritten in place at one size.
    fn encode(&self) -> Vec<u8> {
        let body = format!(
            "{:020} {:020} {:010} {:020} {:020}",
            self.dir_ino, self.mtime.0, self.mtime.1, self.entries_ino, self.count
        );
        format!("{SEAL_MAGIC}{body} {:020}\n", checksum(body.as_bytes())).into_bytes()
    }

    fn decode(text: &str) -> Option<Seal> {
        let line = text.strip_prefix(SEAL_MAGIC)?.strip_suffix('\n')?;
        let (body, sum) = line.rsplit_once(' ')?;
        if sum.parse::<u64>().ok()? != checksum(body.as_bytes()) {
            return None;
        }
        let n: Vec<i64> = body
            .split(' ')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        let [dir_ino, s, ns, entries_ino, count] = n.as_slice() else {
            return None;
        };
        Some(Seal {
            dir_ino: u64::try_from(*dir_ino).ok()?,
            mtime: (*s, *ns),
            entries_ino: u64::try_from(*entries_ino).ok()?,
            count: u64::try_from(*count).ok()?,
        })
    }
}

/// Whether the entries could be used, for tests and measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The seal matched: entries trusted.
    Sealed,
    /// Rebuilt from every file (no seal, or one the directory does not match).
    Rebuilt,
}

/// One attachment's entry file: its lines, and whether they changed.
#[derive(Debug, Default)]
struct Entry {
    /// (reservation file name, owner); owners of other attachments may share
    /// a file only through a hash collision.
    held: Vec<(String, Held)>,
    dirty: bool,
}

/// The index of one store, used under its lock.
#[derive(Debug)]
pub struct Index {
    dir: PathBuf,
    /// None until first used; then the reservation count.
    count: Option<u64>,
    trust: Option<Trust>,
    entries: BTreeMap<String, Entry>,
    changed: bool,
}

impl Index {
    pub fn new(dir: &Path) -> Index {
        Index {
            dir: dir.to_path_buf(),
            count: None,
            trust: None,
            entries: BTreeMap::new(),
            changed: false,
        }
    }

    fn entries_dir(&self) -> PathBuf {
        self.dir.join(ENTRIES_DIR)
    }

    /// Loads the seal; a directory it does not describe has its entries
    /// rebuilt. Called before our first change of the directory.
    pub fn load(&mut self) -> io::Result<Trust> {
        self.load_with(None)
    }

    /// As [`Index::load`], rebuilding from `scanned` (every reservation file,
    /// just read) rather than reading them again.
    pub fn load_with(&mut self, scanned: Option<&BTreeMap<String, Held>>) -> io::Result<Trust> {
        if let Some(trust) = self.trust {
            return Ok(trust);
        }
        if let Some(seal) = self.current_seal() {
            self.count = Some(seal.count);
            self.trust = Some(Trust::Sealed);
            return Ok(Trust::Sealed);
        }
        self.rebuild(scanned)?;
        Ok(Trust::Rebuilt)
    }

    /// The seal on disk when the directory is still as it describes.
    fn current_seal(&self) -> Option<Seal> {
        let text = crate::files::read_state_string_limited(self.dir.join(INDEX_FILE), 4096).ok()?;
        let seal = Seal::decode(&text)?;
        let dir = fs_err::symlink_metadata(&self.dir).ok()?;
        let entries = fs_err::symlink_metadata(self.entries_dir()).ok()?;
        let now = (dir.ino(), (dir.mtime(), dir.mtime_nsec()), entries.ino());
        (entries.is_dir() && now == (seal.dir_ino, seal.mtime, seal.entries_ino)).then_some(seal)
    }

    /// Rebuilds every entry from the reservation files (`scanned`, or read
    /// now). The seal goes first: a call that dies halfway leaves none.
    pub fn rebuild(&mut self, scanned: Option<&BTreeMap<String, Held>>) -> io::Result<()> {
        crate::files::remove_state(&self.dir.join(INDEX_FILE))?;
        let read;
        let all = match scanned {
            Some(s) => s,
            None => {
                read = scan(&self.dir)?;
                &read
            }
        };
        let entries = self.entries_dir();
        // Whatever is there (a symlink too) goes; ours is made afresh.
        match std::fs::remove_dir_all(&entries) {
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                crate::files::remove_state(&entries)?
            }
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(crate::files::path_error(e, "remove", &entries));
            }
            _ => {}
        }
        self.entries.clear();
        for (name, h) in all {
            let entry = self
                .entries
                .entry(entry_name(&h.container_id, &h.ifname))
                .or_default();
            entry.held.push((name.clone(), h.clone()));
            entry.dirty = true;
        }
        self.count = Some(all.len() as u64);
        self.trust = Some(Trust::Rebuilt);
        self.changed = true;
        Ok(())
    }

    /// The reservations recorded for (`id`, `ifname`) exactly.
    pub fn holding(&mut self, id: &str, ifname: &str) -> io::Result<Vec<(String, Held)>> {
        let id = id.trim();
        let entry = self.entry(&entry_name(id, ifname))?;
        Ok(entry
            .held
            .iter()
            .filter(|(_, h)| h.container_id == id && h.ifname == ifname)
            .cloned()
            .collect())
    }

    /// The entry file `name`, read on first use (missing or damaged: empty).
    fn entry(&mut self, name: &str) -> io::Result<&mut Entry> {
        if !self.entries.contains_key(name) {
            let path = self.entries_dir().join(name);
            let held = match crate::files::read_state_string_limited(&path, MAX_ENTRY) {
                Ok(text) => decode_entry(&text).unwrap_or_default(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                Err(e) => return Err(e),
            };
            self.entries
                .insert(name.to_string(), Entry { held, dirty: false });
        }
        self.entries
            .get_mut(name)
            .ok_or_else(|| io::Error::other("owner index entry vanished"))
    }

    /// Records a reservation file we created.
    pub fn added(&mut self, name: &str, held: Held) -> io::Result<()> {
        let entry = self.entry(&entry_name(&held.container_id, &held.ifname))?;
        entry.held.retain(|(n, _)| n != name);
        entry.held.push((name.to_string(), held));
        entry.dirty = true;
        self.count = Some(self.count.unwrap_or(0) + 1);
        self.changed = true;
        Ok(())
    }

    /// Forgets a reservation file we removed, whose owner was `held`.
    pub fn removed(&mut self, name: &str, held: &Held) -> io::Result<()> {
        let entry = self.entry(&entry_name(&held.container_id, &held.ifname))?;
        let before = entry.held.len();
        entry.held.retain(|(n, _)| n != name);
        if entry.held.len() != before {
            entry.dirty = true;
        }
        self.count = Some(self.count.unwrap_or(1).saturating_sub(1));
        self.changed = true;
        Ok(())
    }

    /// Writes what changed, then the seal; with nothing held the index goes
    /// (an empty store looks as the reference leaves it). Runs under the
    /// store lock, after our last change of the reservation files. Any
    /// failure leaves no seal, so the next call rebuilds.
    pub fn persist(&mut self) -> io::Result<()> {
        if !self.changed {
            return Ok(());
        }
        self.changed = false;
        let written = self.write();
        if written.is_err() {
            let _ = crate::files::remove_state(&self.dir.join(INDEX_FILE));
        }
        written
    }

    fn write(&mut self) -> io::Result<()> {
        let seal_path = self.dir.join(INDEX_FILE);
        let entries = self.entries_dir();
        if self.count == Some(0) {
            crate::files::remove_state(&seal_path)?;
            return match std::fs::remove_dir_all(&entries) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    Err(crate::files::path_error(e, "remove", &entries))
                }
                _ => Ok(()),
            };
        }
        if !fs_err::symlink_metadata(&entries).is_ok_and(|m| m.is_dir()) {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&entries)
                .map_err(|e| crate::files::path_error(e, "create", &entries))?;
        }
        for (name, entry) in self.entries.iter_mut().filter(|(_, e)| e.dirty) {
            let path = entries.join(name);
            if entry.held.is_empty() {
                crate::files::remove_state(&path)?;
            } else {
                let bytes = encode_entry(&entry.held);
                let mut f = crate::files::open_state(&path, crate::files::StateOpen::ReadWrite)?;
                f.write_all(&bytes)?;
                f.set_len(bytes.len() as u64)?;
            }
            entry.dirty = false;
        }
        // Created before the stamp is taken (a directory change).
        let mut seal_file =
            crate::files::open_state(&seal_path, crate::files::StateOpen::ReadWrite)?;
        let dir = File::open(&self.dir)?;
        let now = dir.metadata()?;
        let seal = Seal {
            dir_ino: now.ino(),
            // Whole seconds: any filesystem's granularity stores it as given.
            mtime: (now.mtime() - 1, 0),
            entries_ino: fs_err::symlink_metadata(&entries)?.ino(),
            count: self.count.unwrap_or(0),
        };
        let bytes = seal.encode();
        seal_file.write_all(&bytes)?;
        seal_file.set_len(bytes.len() as u64)?;
        // The seal is on disk before the directory shows T: a call that dies
        // in between leaves an mtime the seal does not name.
        use nix::sys::time::TimeSpec;
        nix::sys::stat::futimens(
            &dir,
            &TimeSpec::UTIME_OMIT,
            &TimeSpec::new(seal.mtime.0, seal.mtime.1),
        )
        .map_err(|e| crate::files::path_error(e.into(), "set the mtime of", &self.dir))?;
        Ok(())
    }
}

/// The entry file of an attachment: 32 hex digits of SHA-512 of its owner.
fn entry_name(container_id: &str, ifname: &str) -> String {
    let key = format!("{container_id}\n{ifname}");
    let mut hex = crate::digest::sha512_hex(key.as_bytes());
    hex.truncate(32);
    hex
}

/// The magic line, then a line per reservation file:
/// `<file name>\t<container ID>\t<ifname>` (the owner's fields escaped).
fn encode_entry(held: &[(String, Held)]) -> Vec<u8> {
    let mut out = String::from(ENTRY_MAGIC);
    for (name, h) in held {
        out.push_str(name);
        out.push('\t');
        escape_into(&mut out, &h.container_id);
        out.push('\t');
        escape_into(&mut out, &h.ifname);
        out.push('\n');
    }
    out.into_bytes()
}

fn decode_entry(text: &str) -> Option<Vec<(String, Held)>> {
    let body = text.strip_prefix(ENTRY_MAGIC)?;
    let mut out = Vec::new();
    for line in body.lines() {
        let mut f = line.split('\t');
        let (name, id, ifname) = (f.next()?, f.next()?, f.next()?);
        if f.next().is_some() {
            return None;
        }
        let held = Held {
            ip: name.parse().ok()?,
            container_id: unescape(id)?,
            ifname: unescape(ifname)?,
        };
        out.push((name.to_string(), held));
    }
    Some(out)
}

/// Owners come from files anyone may have written: the separators are escaped.
fn escape_into(out: &mut String, s: &str) {
    // Container IDs and ifnames (the common case) have none: copied whole.
    if !s.contains(['\\', '\t', '\n', '\r', '\0']) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
}

fn unescape(s: &str) -> Option<String> {
    if !s.contains('\\') {
        return Some(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            '\\' => '\\',
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            '0' => '\0',
            _ => return None,
        });
    }
    Some(out)
}

/// FNV-1a with a shift to mix the high bits down: enough to tell a torn
/// write from the seal we wrote.
fn checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
        h ^= h >> 29;
    }
    h
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
