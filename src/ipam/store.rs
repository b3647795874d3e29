//! host-local's on-disk store, in the reference's exact format so a node can switch
//! plugins with live pods: `<dataDir>/<network>/<ip>` holding `<id>\r\n<ifname>`,
//! `last_reserved_ip.<set>` and a `lock` file held with flock for the whole operation.

use fs_err::os::unix::fs::OpenOptionsExt;
use fs_err::{File, OpenOptions};
use nix::fcntl::Flock;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

pub const DEFAULT_DATA_DIR: &str = "/var/lib/cni/networks";
const LAST_RESERVED: &str = "last_reserved_ip.";
const LINE_BREAK: &str = "\r\n";

/// One network's store, locked for as long as this value lives.
pub struct DiskStore {
    dir: PathBuf,
    _lock: Flock<std::fs::File>,
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
        Ok(DiskStore { dir, _lock: lock })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the file for `ip` exclusively; false when someone holds it already.
    pub fn reserve(
        &self,
        id: &str,
        ifname: &str,
        ip: IpAddr,
        set_index: usize,
    ) -> io::Result<bool> {
        let path = self.dir.join(ip.to_string());
        let mut file = match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(e),
        };
        if let Err(e) = file.write_all(owner(id, ifname).as_bytes()) {
            let _ = fs_err::remove_file(&path);
            return Err(e);
        }
        let last = self.dir.join(format!("{LAST_RESERVED}{set_index}"));
        write_private(&last, ip.to_string().as_bytes())?;
        Ok(true)
    }

    /// The last IP handed out for range set `set_index`, if recorded and readable.
    pub fn last_reserved_ip(&self, set_index: usize) -> Option<IpAddr> {
        let path = self.dir.join(format!("{LAST_RESERVED}{set_index}"));
        let text = crate::files::read_string_limited(&path, 64).ok()?;
        text.trim().parse().ok()
    }

    /// Every reservation file in the store (files named by an IP).
    pub fn reservations(&self) -> io::Result<Vec<Reservation>> {
        let mut out = Vec::new();
        let entries = fs_err::read_dir(&self.dir)?;
        // openat on the directory and one read into a reused buffer: this scan runs
        // on every ADD (duplicate check), so it must stay cheap with many pods.
        let dir = File::open(&self.dir)?;
        let mut buf = vec![0u8; 4096];
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(ip) = name.to_str().and_then(|n| n.parse::<IpAddr>().ok()) else {
                continue;
            };
            let Some(content) = read_small(&dir, &name, &mut buf) else {
                continue;
            };
            let (container_id, ifname) = parse_owner(&content);
            out.push(Reservation {
                ip,
                container_id,
                ifname,
            });
        }
        out.sort_by_key(|r| super::ip_to_u128(r.ip));
        Ok(out)
    }

    /// IPs held by this attachment (or, legacy, by this container ID alone).
    pub fn get_by_id(&self, id: &str, ifname: &str) -> io::Result<Vec<IpAddr>> {
        Ok(self
            .reservations()?
            .into_iter()
            .filter(|r| r.owned_by(id, ifname, true))
            .map(|r| r.ip)
            .collect())
    }

    /// Releases this attachment's IPs; falls back to legacy ID-only files when
    /// none matched, as the reference does. Returns how many were released.
    pub fn release_by_id(&self, id: &str, ifname: &str) -> io::Result<usize> {
        let all = self.reservations()?;
        let mut mine: Vec<&Reservation> = all
            .iter()
            .filter(|r| r.owned_by(id, ifname, false))
            .collect();
        if mine.is_empty() {
            mine = all
                .iter()
                .filter(|r| r.ifname.is_empty() && r.container_id == id.trim())
                .collect();
        }
        for r in &mine {
            self.release_ip(r.ip)?;
        }
        Ok(mine.len())
    }

    pub fn release_ip(&self, ip: IpAddr) -> io::Result<()> {
        let path = self.dir.join(ip.to_string());
        match fs_err::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
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
fn read_small(dir: &File, name: &std::ffi::OsStr, buf: &mut Vec<u8>) -> Option<String> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::Mode;
    let fd = openat(dir, name, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty()).ok()?;
    let mut len = 0;
    while len < MAX_RESERVATION {
        if len == buf.len() {
            buf.resize((buf.len() * 2).min(MAX_RESERVATION), 0);
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

impl Reservation {
    fn owned_by(&self, id: &str, ifname: &str, or_legacy: bool) -> bool {
        self.container_id == id.trim()
            && (self.ifname == ifname || (or_legacy && self.ifname.is_empty()))
    }
}

/// Overwrites in place, then trims: truncating to zero on open would make ext4
/// start writeback of the file when it is closed (auto_da_alloc), an I/O
/// submission on every ADD. Readers hold the store lock, as we do.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.set_len(bytes.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrite_in_place_leaves_only_the_new_content() {
        let dir = std::env::temp_dir().join(format!("cni-store-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("last_reserved_ip.0");
        write_private(&path, b"2001:db8::ffff:ffff").expect("first write");
        write_private(&path, b"10.0.0.2").expect("shorter write");
        assert_eq!(std::fs::read(&path).expect("read"), b"10.0.0.2");
        write_private(&path, b"10.100.100.100").expect("longer write");
        assert_eq!(std::fs::read(&path).expect("read"), b"10.100.100.100");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
