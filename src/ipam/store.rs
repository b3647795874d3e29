//! host-local's on-disk store, in the reference's exact format so a node can switch
//! plugins with live pods: `<dataDir>/<network>/<ip>` holding `<id>\r\n<ifname>`,
//! `last_reserved_ip.<set>` and a `lock` file held with flock for the whole operation.
//! Who holds what is looked up in our owner index (see index.rs), one entry per
//! attachment, instead of reading every file of the network on each call.

use super::index::{Held, Index, scan};
use fs_err::File;
use nix::fcntl::Flock;
use std::cell::RefCell;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

pub const DEFAULT_DATA_DIR: &str = "/var/lib/cni/networks";
const LAST_RESERVED: &str = "last_reserved_ip.";
const LINE_BREAK: &str = "\r\n";

/// One network's store, locked for as long as this value lives.
pub struct DiskStore {
    dir: PathBuf,
    /// Loaded before our first change of the directory, kept current by our
    /// changes, and written back when the store closes.
    index: RefCell<Index>,
    _lock: Flock<std::fs::File>,
}

impl Drop for DiskStore {
    /// Runs before the fields drop, so still under the lock. The index only
    /// saves work: a failure to write it costs the next call a rebuild.
    fn drop(&mut self) {
        let _ = self.index.get_mut().persist();
    }
}

/// A reservation file read back: the IP and the owner it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub ip: IpAddr,
    pub container_id: String,
    /// Empty for the legacy format that holds only the container ID.
    pub ifname: String,
}

fn owner(id: &str, ifname: &str) -> String {
    format!("{}{LINE_BREAK}{ifname}", id.trim())
}

impl DiskStore {
    /// Opens (creating) `<data_dir>/<network>` and takes its lock. Names must be
    /// validated by the caller: they become path components.
    pub fn open(data_dir: &Path, network: &str) -> io::Result<DiskStore> {
        let dir = data_dir.join(network);
        crate::files::create_dir_mode(&dir, 0o755)?;
        let lock = crate::lockfile::lock_private(&dir.join("lock"), crate::lockfile::DEADLINE)?;
        Ok(DiskStore {
            index: RefCell::new(Index::new(&dir)),
            dir,
            _lock: lock,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The index, loaded (so before our first change of the directory, which
    /// it must not mistake for another writer's).
    fn with_index<T>(&self, f: impl FnOnce(&mut Index) -> io::Result<T>) -> io::Result<T> {
        let mut index = self.index.borrow_mut();
        index.load()?;
        f(&mut index)
    }

    /// Creates the file for `ip` exclusively; false when someone holds it already.
    pub fn reserve(
        &self,
        id: &str,
        ifname: &str,
        ip: IpAddr,
        set_index: usize,
    ) -> io::Result<bool> {
        self.with_index(|_| Ok(()))?;
        let name = ip.to_string();
        let path = self.dir.join(&name);
        let mut file = match crate::files::open_state(&path, crate::files::StateOpen::CreateNew) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(e),
        };
        if let Err(e) = file.write_all(owner(id, ifname).as_bytes()) {
            let _ = fs_err::remove_file(&path);
            return Err(e);
        }
        let held = Held {
            ip,
            container_id: id.trim().to_string(),
            ifname: ifname.to_string(),
        };
        self.with_index(|i| i.added(&name, held.clone()))?;
        let last = self.dir.join(format!("{LAST_RESERVED}{set_index}"));
        if let Err(e) = write_private(&last, ip.to_string().as_bytes()) {
            // The reservation goes with the ADD that fails here.
            let _ = self.release_held(&name, &held);
            return Err(e);
        }
        Ok(true)
    }

    /// The last IP handed out for range set `set_index`, if recorded and readable.
    pub fn last_reserved_ip(&self, set_index: usize) -> Option<IpAddr> {
        let path = self.dir.join(format!("{LAST_RESERVED}{set_index}"));
        let text = crate::files::read_state_string_limited(&path, 64).ok()?;
        text.trim().parse().ok()
    }

    /// Every reservation file in the store (files named by an IP), each read
    /// from disk: GC releases on this answer, so it trusts no index.
    pub fn reservations(&self) -> io::Result<Vec<Reservation>> {
        let all = scan(&self.dir)?;
        // Read whole anyway: an index that needs rebuilding takes this read.
        self.index.borrow_mut().load_with(Some(&all))?;
        let mut out: Vec<Reservation> = all.values().map(Held::reservation).collect();
        out.sort_by_key(|r| super::ip_to_u128(r.ip));
        Ok(out)
    }

    /// IPs held by this attachment (or, legacy, by this container ID alone).
    pub fn get_by_id(&self, id: &str, ifname: &str) -> io::Result<Vec<IpAddr>> {
        let mut mine = self.confirmed(id, ifname)?;
        mine.extend(self.confirmed(id, "")?);
        Ok(mine.into_iter().map(|(_, h)| h.ip).collect())
    }

    /// Releases this attachment's IPs; falls back to legacy ID-only files when
    /// none matched, as the reference does. Returns how many were released.
    pub fn release_by_id(&self, id: &str, ifname: &str) -> io::Result<usize> {
        let mut mine = self.confirmed(id, ifname)?;
        if mine.is_empty() {
            mine = self.confirmed(id, "")?;
        }
        for (name, h) in &mine {
            self.release_held(name, h)?;
        }
        Ok(mine.len())
    }

    /// The reservations of (`id`, `ifname`) exactly, as (file name, owner).
    /// The files we act on are read to confirm the index (it cannot see a
    /// file rewritten in place); one that disagrees has the index rebuilt.
    fn confirmed(&self, id: &str, ifname: &str) -> io::Result<Vec<(String, Held)>> {
        let picked = self.with_index(|i| i.holding(id, ifname))?;
        if picked.iter().all(|(name, h)| self.still_owned(name, h)) {
            return Ok(picked);
        }
        self.with_index(|i| {
            i.rebuild(None)?;
            i.holding(id, ifname)
        })
    }

    /// Removes the reservation of `ip` only while its file, read again under
    /// the store's lock, still names this owner; a file gone meanwhile or
    /// taken by another owner is left as it is.
    pub fn release_if_owned(&self, ip: IpAddr, id: &str, ifname: &str) -> io::Result<()> {
        let name = ip.to_string();
        let h = Held {
            ip,
            container_id: id.trim().to_string(),
            ifname: ifname.to_string(),
        };
        if self.still_owned(&name, &h) {
            self.release_held(&name, &h)?;
        }
        Ok(())
    }

    fn still_owned(&self, name: &str, h: &Held) -> bool {
        self.owner_of(name).is_some_and(|o| o == *h)
    }

    /// The owner a reservation file names now (None: no such file).
    fn owner_of(&self, name: &str) -> Option<Held> {
        let dir = File::open(&self.dir).ok()?;
        let mut buf = vec![0u8; 256];
        let content = read_small(&dir, std::ffi::OsStr::new(name), &mut buf)?;
        let (container_id, ifname) = parse_owner(&content);
        Some(Held {
            ip: name.parse().ok()?,
            container_id,
            ifname,
        })
    }

    /// Releases `ip` whoever holds it (GC, a failed ADD's own reservation).
    pub fn release_ip(&self, ip: IpAddr) -> io::Result<()> {
        let name = ip.to_string();
        match self.owner_of(&name) {
            Some(h) => self.release_held(&name, &h),
            None => Ok(()),
        }
    }

    /// Removes the file `name`, held by `h`, and its index entry.
    fn release_held(&self, name: &str, h: &Held) -> io::Result<()> {
        self.with_index(|_| Ok(()))?;
        match fs_err::remove_file(self.dir.join(name)) {
            Ok(()) => self.with_index(|i| i.removed(name, h)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// A reservation file's owner: `<container ID>\r\n<ifname>`, or (legacy) the ID alone.
pub fn parse_owner(content: &str) -> (String, String) {
    let content = content.trim();
    match content.split_once(LINE_BREAK) {
        Some((id, ifname)) => (id.to_string(), ifname.to_string()),
        None => (content.to_string(), String::new()),
    }
}

/// At most this much of a reservation file is read: an owner is a container ID
/// and an ifname. A bigger file still reserves its IP, for no known owner.
const MAX_RESERVATION: usize = 64 << 10;

/// A small file under `dir` as text (open, read, close; no stat). Files that
/// vanish meanwhile (a concurrent DEL outside our lock) read as None.
pub(super) fn read_small(dir: &File, name: &std::ffi::OsStr, buf: &mut Vec<u8>) -> Option<String> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    let fd = openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW,
        Mode::empty(),
    )
    .ok()?;
    let mut len = 0;
    while len < MAX_RESERVATION {
        if len == buf.len() {
            buf.resize((buf.len() * 2).clamp(256, MAX_RESERVATION), 0);
        }
        match nix::unistd::read(&fd, &mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return None,
        }
    }
    Some(String::from_utf8_lossy(&buf[..len]).into_owned())
}

/// Overwrites in place, then trims: truncating to zero on open would make ext4
/// start writeback of the file when it is closed (auto_da_alloc), an I/O
/// submission on every ADD. Readers hold the store lock, as we do.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = crate::files::open_state(path, crate::files::StateOpen::ReadWrite)?;
    f.write_all(bytes)?;
    f.set_len(bytes.len() as u64)
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
