//! What the doctor knows of the node: the configured networks, every cached
//! attachment and whether it is alive, the addresses live namespaces hold,
//! and since when an ownerless object has been seen (kernel objects carry no
//! age of their own).

use crate::runtime::cache::{Cache, Entry};
use crate::runtime::conf::{self, NetworkList};
use crate::runtime::{Runtime, RuntimeConf};
use anyhow::{Context, Result};
use serde_json::Value;
use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a cache entry says of its attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Its netns still is a network namespace.
    Alive,
    /// Its netns path is gone, or no longer a namespace.
    Dead,
    /// No netns recorded, or one under /proc whose process is gone (the
    /// namespace may live on): never judged.
    Unknown,
    /// Younger than --min-age: an ADD or DEL may be in flight.
    Fresh,
}

/// One result-cache entry and the cache it was read from.
pub struct Cached {
    pub path: PathBuf,
    pub cache: Cache,
    pub entry: Entry,
    pub state: State,
}

impl Cached {
    /// The runtime that runs this entry's DEL: the cached config, its own cache
    /// (multus keeps its delegates' entries apart), no netns.
    pub fn del(&self, main: &Runtime) -> Result<()> {
        let list = conf::list_from_bytes(&self.entry.config, &self.path)?;
        let runtime = Runtime {
            cni_path: main.cni_path.clone(),
            cache: self.cache.clone(),
            plugins: main.plugins,
        };
        runtime.del(&list, &RuntimeConf::of_cached(&self.entry, ""))?;
        Ok(())
    }
}

pub struct Node {
    /// cnitool's runtime: CNI_PATH and the main cache (`--cache-dir`).
    pub runtime: Runtime,
    /// The networks of the config directory.
    pub lists: Vec<NetworkList>,
    /// Every entry of the main cache and of each configured multus's cniDir.
    pub attachments: Vec<Cached>,
    pub min_age: Duration,
    pub now: SystemTime,
    sightings: RefCell<Sightings>,
    ips: OnceCell<BTreeSet<IpAddr>>,
}

impl Node {
    pub fn inspect(
        conf_dir: &Path,
        runtime: Runtime,
        min_age: Duration,
        now: SystemTime,
    ) -> Result<Node> {
        let lists = conf::load_all(conf_dir)?;
        let mut caches = vec![runtime.cache.clone()];
        for dir in multus_cni_dirs(&lists).into_keys() {
            if !caches.iter().any(|c| c.dir == dir) {
                caches.push(Cache::new(dir));
            }
        }
        let mut attachments = Vec::new();
        for cache in &caches {
            for (path, entry) in cache.files()? {
                let state = judge(&path, &entry, min_age, now)?;
                attachments.push(Cached {
                    path,
                    cache: cache.clone(),
                    entry,
                    state,
                });
            }
        }
        let sightings = Sightings::load(&runtime.cache.dir, min_age, now);
        Ok(Node {
            runtime,
            lists,
            attachments,
            min_age,
            now,
            sightings: RefCell::new(sightings),
            ips: OnceCell::new(),
        })
    }

    /// Whether a cached attachment that is not dead names this owner (an empty
    /// `ifname`: any interface of the container, as legacy state names none).
    pub fn keeps(&self, network: &str, container_id: &str, ifname: &str) -> bool {
        self.attachments.iter().any(|a| {
            a.state != State::Dead
                && a.entry.network_name == network
                && a.entry.container_id == container_id
                && (ifname.is_empty() || a.entry.ifname == ifname)
        })
    }

    /// Whether any attachment of the container, on any network, is not dead.
    pub fn keeps_container(&self, container_id: &str) -> bool {
        self.attachments
            .iter()
            .any(|a| a.state != State::Dead && a.entry.container_id == container_id)
    }

    /// The dead cached attachment that owns an object, if any: its DEL removes it.
    pub fn dead_owner(&self, network: &str, container_id: &str, ifname: &str) -> Option<&Cached> {
        self.attachments.iter().find(|a| {
            a.state == State::Dead
                && a.entry.network_name == network
                && a.entry.container_id == container_id
                && (ifname.is_empty() || a.entry.ifname == ifname)
        })
    }

    /// Whether some cache file, readable or not, names the owner now (read
    /// again from disk: an ADD may have finished since the node was read).
    pub fn named_now(&self, network: &str, container_id: &str, ifname: &str) -> Result<bool> {
        let mut dirs: BTreeSet<&Path> = BTreeSet::new();
        dirs.insert(&self.runtime.cache.dir);
        dirs.extend(self.attachments.iter().map(|a| a.cache.dir.as_path()));
        for dir in dirs {
            let results = dir.join("results");
            let entries = match std::fs::read_dir(&results) {
                Ok(d) => d,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("failed to read {}", results.display()));
                }
            };
            let exact = format!("{network}-{container_id}-{ifname}");
            let prefix = format!("{network}-{container_id}-");
            for e in entries {
                let e = e.with_context(|| format!("failed to read {}", results.display()))?;
                let name = e.file_name().to_string_lossy().into_owned();
                if name == exact || (ifname.is_empty() && name.starts_with(&prefix)) {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// The `dataDir` of every configured plugin of a type, and its default.
    pub fn data_dirs(&self, plugin_type: &str, default: &str) -> BTreeSet<PathBuf> {
        let mut dirs = BTreeSet::from([PathBuf::from(default)]);
        for p in self.lists.iter().flat_map(|l| &l.plugins) {
            if p.plugin_type != plugin_type {
                continue;
            }
            if let Some(Value::String(d)) = crate::cni::json::map_field(&p.raw, "dataDir")
                && !d.is_empty()
            {
                dirs.insert(PathBuf::from(d));
            }
        }
        dirs
    }

    /// Attachments whose namespace is alive (what repair looks at).
    #[allow(dead_code)] // for the kinds still to come
    pub fn live(&self) -> impl Iterator<Item = &Cached> {
        self.attachments.iter().filter(|a| a.state == State::Alive)
    }

    /// Whether a file was last changed at least --min-age ago (a link is not
    /// followed; a file gone meanwhile is not old).
    pub fn old_file(&self, path: &Path) -> Result<bool> {
        old_enough(path, self.min_age, self.now)
    }

    /// Whether an ownerless object (by a key naming it) has been seen by
    /// earlier runs for at least --min-age: kernel objects carry no time, so
    /// their age is counted from the first run that saw them without owner.
    pub fn settled(&self, key: &str) -> bool {
        self.sightings.borrow_mut().settled(key)
    }

    /// Keeps the sightings of this run for the next one.
    pub fn save_sightings(&self) -> Result<()> {
        self.sightings.borrow().save(&self.runtime.cache.dir)
    }

    /// Whether an address is held by an attachment not known dead (its cached
    /// result) or by any interface of any network namespace on the node but
    /// this one. Positive evidence of use, read only to keep things: a
    /// container that claims an address can keep it reserved, nothing more.
    pub fn ip_in_use(&self, ip: IpAddr) -> bool {
        self.ips.get_or_init(|| self.ips_in_use()).contains(&ip)
    }

    fn ips_in_use(&self) -> BTreeSet<IpAddr> {
        let mut ips = BTreeSet::new();
        for a in &self.attachments {
            if a.state != State::Dead
                && let Some(result) = &a.entry.result
            {
                ips.extend(result_ips(result));
            }
        }
        ips.extend(super::namespaces::addresses());
        ips
    }
}

/// The addresses of a cached result (`ips[].address`, or 0.2.0's `ip4`/`ip6`).
pub fn result_ips(result: &Value) -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut push = |v: Option<&Value>| {
        if let Some(ip) = v
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<ipnet::IpNet>().ok())
        {
            out.push(ip.addr());
        }
    };
    if let Some(Value::Array(ips)) = result.get("ips") {
        for ip in ips {
            push(ip.get("address"));
        }
    }
    for k in ["ip4", "ip6"] {
        push(result.get(k).and_then(|v| v.get("ip")));
    }
    out
}

fn judge(path: &Path, entry: &Entry, min_age: Duration, now: SystemTime) -> Result<State> {
    if !old_enough(path, min_age, now)? {
        return Ok(State::Fresh);
    }
    if entry.netns.is_empty() {
        return Ok(State::Unknown);
    }
    let netns = Path::new(&entry.netns);
    if netns_alive(netns)? {
        Ok(State::Alive)
    } else if netns.starts_with("/proc") {
        Ok(State::Unknown)
    } else {
        Ok(State::Dead)
    }
}

/// The cniDir of every multus plugin configured (where it caches its
/// delegates' results and keeps its per-pod files), with the names of the
/// networks whose multus uses it.
pub fn multus_cni_dirs(lists: &[NetworkList]) -> BTreeMap<PathBuf, BTreeSet<String>> {
    let mut out: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for l in lists {
        for p in l.plugins.iter().filter(|p| p.plugin_type == "multus") {
            let dir = match crate::cni::json::map_field(&p.raw, "cniDir") {
                Some(Value::String(d)) if d.starts_with('/') => d.clone(),
                _ => crate::plugins::multus::DEFAULT_CNI_DIR.to_string(),
            };
            out.entry(PathBuf::from(dir))
                .or_default()
                .insert(l.name.clone());
        }
    }
    out
}

/// Whether a file was last changed at least `min_age` ago (a link is not followed).
pub fn old_enough(path: &Path, min_age: Duration, now: SystemTime) -> Result<bool> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        // Gone meanwhile: nothing to judge.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("failed to stat {}", path.display())),
    };
    let mtime = meta
        .modified()
        .with_context(|| format!("no mtime for {}", path.display()))?;
    Ok(now.duration_since(mtime).unwrap_or_default() >= min_age)
}

/// Whether `path` still is a namespace; a missing path (or a plain file left
/// where a bind mount was) is not.
pub fn netns_alive(path: &Path) -> Result<bool> {
    use nix::errno::Errno;
    use nix::sys::statfs::{NSFS_MAGIC, statfs};
    match statfs(path) {
        Ok(fs) => Ok(fs.filesystem_type() == NSFS_MAGIC),
        Err(Errno::ENOENT | Errno::ENOTDIR) => Ok(false),
        Err(e) => Err(e).with_context(|| format!("failed to statfs netns {}", path.display())),
    }
}

/// When each ownerless object was first seen, kept between runs in
/// `<cache dir>/doctor/sightings.json` (root only). Only objects seen in this
/// run are written back, so one that got an owner or went starts over.
#[allow(dead_code)] // for the kinds still to come
struct Sightings {
    min_age: Duration,
    now: u64,
    before: BTreeMap<String, u64>,
    seen: BTreeMap<String, u64>,
}

const SIGHTINGS: &str = "doctor/sightings.json";

#[allow(dead_code)] // for the kinds still to come
impl Sightings {
    fn load(cache_dir: &Path, min_age: Duration, now: SystemTime) -> Sightings {
        let before = crate::files::read_state_limited(cache_dir.join(SIGHTINGS), 16 << 20)
            .ok()
            .and_then(|b| crate::cni::json::from_slice(&b).ok())
            .unwrap_or_default();
        Sightings {
            min_age,
            now: now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs(),
            before,
            seen: BTreeMap::new(),
        }
    }

    fn settled(&mut self, key: &str) -> bool {
        let first = self
            .before
            .get(key)
            .copied()
            .unwrap_or(self.now)
            .min(self.now);
        self.seen.insert(key.to_string(), first);
        self.now - first >= self.min_age.as_secs()
    }

    fn save(&self, cache_dir: &Path) -> Result<()> {
        if self.min_age.is_zero() && self.before.is_empty() {
            return Ok(());
        }
        let path = cache_dir.join(SIGHTINGS);
        let text = serde_json::to_vec(&self.seen).context("failed to encode sightings")?;
        crate::files::write_private_atomic(&path, &text)
            .with_context(|| format!("failed to write {}", path.display()))
    }
}

/// Removes a state file (a link itself, never its target); true when it is
/// gone afterwards, whoever removed it.
pub fn remove_file(path: &Path) -> Result<bool> {
    crate::files::remove_state(path)
        .with_context(|| format!("failed to remove {}", path.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn liveness_is_nsfs() {
        assert!(netns_alive(Path::new("/proc/self/ns/net")).expect("statfs"));
        assert!(!netns_alive(Path::new("/proc/self/status")).expect("statfs"));
        assert!(!netns_alive(Path::new("/nonexistent/netns")).expect("statfs"));
    }

    #[test]
    fn an_object_settles_after_min_age_of_sightings() {
        let mut s = Sightings {
            min_age: Duration::from_secs(300),
            now: 1000,
            before: [("old".to_string(), 600), ("young".to_string(), 900)].into(),
            seen: BTreeMap::new(),
        };
        assert!(s.settled("old"));
        assert!(!s.settled("young"));
        assert!(!s.settled("new"));
        assert_eq!(s.seen.get("new"), Some(&1000));
        assert_eq!(s.seen.get("old"), Some(&600));
        s.min_age = Duration::ZERO;
        assert!(s.settled("new"));
    }

    #[test]
    fn result_ips_of_both_versions() {
        let v = serde_json::json!({"ips": [{"address": "10.1.0.5/24"}, {"address": "fd00::5/64"}]});
        assert_eq!(
            result_ips(&v),
            vec![
                "10.1.0.5".parse::<IpAddr>().expect("ip"),
                "fd00::5".parse().expect("ip")
            ]
        );
        let old = serde_json::json!({"ip4": {"ip": "10.1.0.6/24"}});
        assert_eq!(
            result_ips(&old),
            vec!["10.1.0.6".parse::<IpAddr>().expect("ip")]
        );
    }
}
