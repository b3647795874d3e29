//! The owner index: a cache file of our own in the store directory recording who
//! holds each reservation file, so that an ADD's duplicate check and a DEL need
//! not read every file of the network (which made each call O(pods)).
//!
//! The reservation files stay the truth, in the reference's format; the index is
//! trusted only as far as the directory proves it current:
//! - it records the directory's stamp (inode, mtime, ctime) taken after our last
//!   change, under the store lock. Any file created or removed since (the
//!   reference's plugin allocating or releasing during a live switch, an admin)
//!   changes the stamp, and then every file is read again;
//! - every load still lists the directory (names and inode numbers only, no file
//!   is opened): a name the index does not know, or whose inode differs, is read.
//!   This covers changes made within the same clock tick as our stamp, which
//!   coarse directory timestamps cannot show.
//!
//! A reservation file rewritten in place (same name and inode, no directory
//! change) is the one change the index cannot see; no plugin does that, and the
//! store double-checks the files it acts on (see store.rs).
//!
//! The reference never mistakes the index for a reservation: its allocator only
//! opens files named by an IP, and its DEL and CHECK compare each file's whole
//! content with `<id>\r\n<ifname>` or `<id>`; the index starts with a NUL byte,
//! which no container ID from the environment can hold.

use super::store::{Reservation, parse_owner, read_small};
use fs_err::File;
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::net::IpAddr;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::Path;

/// Its name parses as no IP, so the reference's allocator never meets it.
pub const INDEX_FILE: &str = ".cni-multi-owners";
const MAGIC: &str = "\0cni-multi host-local owner index 1\n";
/// Far above a /16's worth of entries; a bigger index is ignored (rebuilt).
const MAX_INDEX: u64 = 32 << 20;

/// What the directory looked like when the index was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirStamp {
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl DirStamp {
    pub fn of(dir: &Path) -> io::Result<DirStamp> {
        let m = fs_err::metadata(dir)?;
        Ok(DirStamp {
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }
}

/// One reservation file and its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub ip: IpAddr,
    /// The file's inode number: a file removed and created again under the same
    /// name usually gets another one.
    pub ino: u64,
    pub container_id: String,
    pub ifname: String,
}

impl Held {
    pub fn reservation(&self) -> Reservation {
        Reservation {
            ip: self.ip,
            container_id: self.container_id.clone(),
            ifname: self.ifname.clone(),
        }
    }
}

/// The store's reservations keyed by file name, and whether the index file on
/// disk differs from them (then it is written when the store closes).
#[derive(Debug, Default)]
pub struct Owners {
    pub held: BTreeMap<String, Held>,
    pub stale: bool,
}

/// How a load went, for tests and measurement: files read, entries trusted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LoadStats {
    pub read: usize,
    pub trusted: usize,
}

impl Owners {
    /// The reservations of `dir`, taken from the index where it is provably
    /// current and read from the files elsewhere. `full` reads every file.
    pub fn load(dir: &Path, full: bool) -> io::Result<(Owners, LoadStats)> {
        let stamp = DirStamp::of(dir)?;
        let cached = if full { None } else { read_index(dir) };
        // A stamp that differs trusts no entry, but the listing below decides.
        // The trusted entries become the result as they are: only what the
        // listing shows to be new or changed is read and put in (at 1,000
        // reservations, rebuilding the map cost more than the rest of a call).
        let trusted = cached.filter(|(s, _)| *s == stamp).map(|(_, e)| e);
        let mut owners = Owners {
            stale: trusted.is_none(),
            held: trusted.unwrap_or_default(),
        };
        let trusting = !owners.stale;
        let handle = File::open(dir)?;
        let mut buf = vec![0u8; 4096];
        let mut stats = LoadStats::default();
        for entry in fs_err::read_dir(dir)?.flatten() {
            let name = entry.file_name();
            let Some(text) = name.to_str() else { continue };
            let Ok(ip) = text.parse::<IpAddr>() else {
                continue;
            };
            let ino = entry.ino();
            if trusting && owners.held.get(text).is_some_and(|h| h.ino == ino) {
                stats.trusted += 1;
                continue;
            }
            // Gone meanwhile (a DEL outside our lock): not held.
            let Some(content) = read_small(&handle, &name, &mut buf) else {
                owners.held.remove(text);
                continue;
            };
            stats.read += 1;
            owners.stale = true;
            let (container_id, ifname) = parse_owner(&content);
            owners.held.insert(
                text.to_string(),
                Held {
                    ip,
                    ino,
                    container_id,
                    ifname,
                },
            );
        }
        // Entries of the index whose file is gone (removed within the tick of
        // the stamp): the directory is read whole instead.
        if trusting && owners.held.len() != stats.trusted + stats.read {
            return Owners::load(dir, true);
        }
        Ok((owners, stats))
    }

    /// Writes the index (or removes it when nothing is held: an empty store
    /// looks as the reference leaves it). Runs under the store lock, after our
    /// last change of the directory, so the stamp it records covers them all.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        let path = dir.join(INDEX_FILE);
        if self.held.is_empty() {
            return match fs_err::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            };
        }
        // Created (a directory change) before the stamp is taken; then written
        // in place, which changes the file but not the directory.
        let mut file = crate::files::open_state(&path, crate::files::StateOpen::ReadWrite)?;
        let stamp = DirStamp::of(dir)?;
        let bytes = encode(stamp, &self.held);
        let written = file
            .write_all(&bytes)
            .and_then(|()| file.set_len(bytes.len() as u64));
        if written.is_err() {
            // A half-written index fails its checksum anyway; an old one must
            // not outlive the change it misses.
            let _ = fs_err::remove_file(&path);
        }
        written
    }
}

/// The index file: the magic line, a header line
/// `<dir ino> <mtime s> <mtime ns> <ctime s> <ctime ns> <body length> <body checksum>`,
/// then the body, a line per file: `<name>\t<inode>\t<container ID>\t<ifname>`
/// (the owner's fields escaped). The length and checksum catch a torn write.
fn encode(stamp: DirStamp, held: &BTreeMap<String, Held>) -> Vec<u8> {
    let mut body = String::with_capacity(held.len() * 96);
    for (name, h) in held {
        body.push_str(name);
        body.push('\t');
        body.push_str(&h.ino.to_string());
        body.push('\t');
        escape_into(&mut body, &h.container_id);
        body.push('\t');
        escape_into(&mut body, &h.ifname);
        body.push('\n');
    }
    let header = format!(
        "{MAGIC}{} {} {} {} {} {} {}\n",
        stamp.ino,
        stamp.mtime.0,
        stamp.mtime.1,
        stamp.ctime.0,
        stamp.ctime.1,
        body.len(),
        checksum(body.as_bytes())
    );
    let mut out = header.into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// The index as written, or None when it is missing, foreign or damaged.
fn read_index(dir: &Path) -> Option<(DirStamp, BTreeMap<String, Held>)> {
    let text = crate::files::read_state_string_limited(dir.join(INDEX_FILE), MAX_INDEX).ok()?;
    decode(&text)
}

fn decode(text: &str) -> Option<(DirStamp, BTreeMap<String, Held>)> {
    let rest = text.strip_prefix(MAGIC)?;
    let (header, body) = rest.split_once('\n')?;
    let n: Vec<&str> = header.split(' ').collect();
    let [ino, ms, mns, cs, cns, len, sum] = n.as_slice() else {
        return None;
    };
    let stamp = DirStamp {
        ino: ino.parse().ok()?,
        mtime: (ms.parse().ok()?, mns.parse().ok()?),
        ctime: (cs.parse().ok()?, cns.parse().ok()?),
    };
    if body.len() != len.parse::<usize>().ok()?
        || checksum(body.as_bytes()) != sum.parse::<u64>().ok()?
    {
        return None;
    }
    // Written in name order: collected and built in bulk.
    let mut held = Vec::new();
    for line in body.lines() {
        let mut f = line.split('\t');
        let (name, ino, id, ifname) = (f.next()?, f.next()?, f.next()?, f.next()?);
        if f.next().is_some() {
            return None;
        }
        let entry = Held {
            ip: name.parse().ok()?,
            ino: ino.parse().ok()?,
            container_id: unescape(id)?,
            ifname: unescape(ifname)?,
        };
        held.push((name.to_string(), entry));
    }
    Some((stamp, held.into_iter().collect()))
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

/// FNV-1a over 8-byte words with a shift to mix the high bits down: cheap, and
/// enough to tell a torn or truncated write from the index we wrote.
fn checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(word)).wrapping_mul(PRIME);
        h ^= h >> 29;
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(PRIME);
    }
    h ^ bytes.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    struct Dir(PathBuf);
    impl Dir {
        fn new(tag: &str) -> Dir {
            let p = std::env::temp_dir().join(format!("cni-index-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).expect("temp dir");
            Dir(p)
        }
        fn put(&self, name: &str, content: &str) {
            std::fs::write(self.0.join(name), content).expect("write");
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn owner_of(o: &Owners, name: &str) -> Option<(String, String)> {
        o.held
            .get(name)
            .map(|h| (h.container_id.clone(), h.ifname.clone()))
    }

    fn pair(id: &str, ifname: &str) -> Option<(String, String)> {
        Some((id.to_string(), ifname.to_string()))
    }

    /// Coarse directory timestamps advance once per clock tick (at most 10 ms).
    fn next_tick() {
        std::thread::sleep(std::time::Duration::from_millis(25));
    }

    #[test]
    fn an_index_matching_the_directory_is_trusted_without_reading_the_files() {
        let d = Dir::new("trust");
        d.put("10.0.0.2", "a\r\neth0");
        d.put("10.0.0.3", "b");
        d.put("last_reserved_ip.0", "10.0.0.3");
        let (o, stats) = Owners::load(&d.0, false).expect("load");
        assert_eq!(
            stats,
            LoadStats {
                read: 2,
                trusted: 0
            }
        );
        assert!(o.stale, "no index yet");
        o.save(&d.0).expect("save");
        let (o, stats) = Owners::load(&d.0, false).expect("load");
        assert_eq!(
            stats,
            LoadStats {
                read: 0,
                trusted: 2
            }
        );
        assert!(!o.stale);
        assert_eq!(owner_of(&o, "10.0.0.2"), pair("a", "eth0"));
        assert_eq!(owner_of(&o, "10.0.0.3"), pair("b", ""));
        // Proof that the files were not read: an in-place rewrite (no directory
        // change, same inode) is not seen. `full` reads everything.
        std::fs::OpenOptions::new()
            .write(true)
            .open(d.0.join("10.0.0.2"))
            .and_then(|mut f| f.write_all(b"z"))
            .expect("rewrite in place");
        let (o, _) = Owners::load(&d.0, false).expect("load");
        assert_eq!(owner_of(&o, "10.0.0.2"), pair("a", "eth0"));
        let (o, stats) = Owners::load(&d.0, true).expect("full load");
        assert_eq!(stats.read, 2);
        assert_eq!(owner_of(&o, "10.0.0.2"), pair("z", "eth0"));
    }

    #[test]
    fn a_directory_changed_behind_the_index_is_read_again() {
        let d = Dir::new("stale");
        d.put("10.0.0.2", "a\r\neth0");
        d.put("10.0.0.3", "b\r\neth0");
        let (o, _) = Owners::load(&d.0, false).expect("load");
        o.save(&d.0).expect("save");
        next_tick();
        // Another plugin releases 10.0.0.2 and gives it to c: same name, and
        // quite possibly the same inode; only the directory's stamp tells.
        std::fs::remove_file(d.0.join("10.0.0.2")).expect("rm");
        d.put("10.0.0.2", "c\r\neth0");
        d.put("10.0.0.4", "d\r\neth1");
        std::fs::remove_file(d.0.join("10.0.0.3")).expect("rm");
        let (o, stats) = Owners::load(&d.0, false).expect("load");
        assert_eq!(
            stats,
            LoadStats {
                read: 2,
                trusted: 0
            }
        );
        assert!(o.stale);
        assert_eq!(owner_of(&o, "10.0.0.2"), pair("c", "eth0"));
        assert_eq!(owner_of(&o, "10.0.0.4"), pair("d", "eth1"));
        assert_eq!(o.held.len(), 2);
    }

    #[test]
    fn names_and_inodes_the_index_does_not_know_are_read_even_with_its_stamp() {
        let d = Dir::new("same-stamp");
        d.put("10.0.0.2", "a\r\neth0");
        d.put("10.0.0.3", "b\r\neth0");
        let (o, _) = Owners::load(&d.0, false).expect("load");
        // Created first: the stamp must be the directory's with the index in it.
        std::fs::write(d.0.join(INDEX_FILE), "").expect("index");
        // An index with the current stamp but an entry of another inode, one
        // for a file that is gone and none for 10.0.0.3: what a change within
        // the stamp's clock tick could leave.
        let stamp = DirStamp::of(&d.0).expect("stamp");
        let mut held = o.held.clone();
        held.remove("10.0.0.3");
        if let Some(h) = held.get_mut("10.0.0.2") {
            h.ino ^= 1;
            h.container_id = "liar".into();
        }
        held.insert(
            "10.0.0.9".into(),
            Held {
                ip: "10.0.0.9".parse().expect("ip"),
                ino: 1,
                container_id: "gone".into(),
                ifname: "eth0".into(),
            },
        );
        std::fs::write(d.0.join(INDEX_FILE), encode(stamp, &held)).expect("index");
        let (o, stats) = Owners::load(&d.0, false).expect("load");
        assert_eq!(
            stats,
            LoadStats {
                read: 2,
                trusted: 0
            }
        );
        assert!(o.stale);
        assert_eq!(owner_of(&o, "10.0.0.2"), pair("a", "eth0"));
        assert_eq!(owner_of(&o, "10.0.0.3"), pair("b", "eth0"));
        assert_eq!(owner_of(&o, "10.0.0.9"), None);
    }

    #[test]
    fn a_damaged_index_is_ignored() {
        let d = Dir::new("torn");
        d.put("10.0.0.2", "a\r\neth0");
        let (o, _) = Owners::load(&d.0, false).expect("load");
        o.save(&d.0).expect("save");
        let path = d.0.join(INDEX_FILE);
        let good = std::fs::read(&path).expect("index");
        // A torn write: the same length, one owner byte changed in place.
        let mut torn = good.clone();
        let at = torn.len() - 3;
        torn[at] ^= 0x20;
        std::fs::write(&path, &torn).expect("torn");
        let (_, stats) = Owners::load(&d.0, false).expect("load");
        assert_eq!(stats.read, 1, "checksum mismatch: files read");
        std::fs::write(&path, &good[..good.len() - 1]).expect("truncated");
        let (_, stats) = Owners::load(&d.0, false).expect("load");
        assert_eq!(stats.read, 1, "length mismatch: files read");
    }

    #[test]
    fn owners_with_separators_round_trip_and_the_index_never_reads_as_an_owner() {
        let d = Dir::new("escape");
        d.put("10.0.0.2", "we\tird\\id\0\r\neth\n0");
        d.put("fd00::2", "v6\r\neth0");
        let (o, _) = Owners::load(&d.0, false).expect("load");
        o.save(&d.0).expect("save");
        let (o2, stats) = Owners::load(&d.0, false).expect("load");
        assert_eq!(stats.trusted, 2);
        assert_eq!(o2.held, o.held);
        // The reference compares a file's trimmed content with `<id>\r\n<ifname>`
        // or `<id>`: an ID from the environment cannot hold the index's NUL.
        let text = std::fs::read_to_string(d.0.join(INDEX_FILE)).expect("index");
        assert!(text.trim().starts_with('\0'));
        assert!(INDEX_FILE.parse::<IpAddr>().is_err());
        // Nothing held: no index left behind.
        Owners::default().save(&d.0).expect("save empty");
        assert!(!d.0.join(INDEX_FILE).exists());
    }
}
