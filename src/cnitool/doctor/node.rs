//! What the doctor knows of the node: the configured networks, every cached
//! attachment and whether it is alive, the addresses live namespaces hold,
//! and since when an ownerless object has been seen (kernel objects carry no
//! age of their own).

use super::engine::Named;
use super::namespaces::Census;
use crate::libcni::cache::{Cache, Entry, Scanned};
use crate::libcni::conf::{self, NetworkList, PluginConf};
use crate::libcni::{Runtime, RuntimeConf};
use crate::netns::vantage::{self, Mounts, Seen};
use crate::plugins::footprint::Footprint;
use anyhow::{Context, Result};
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What a cache entry says of its attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Its netns still is a network namespace.
    Alive,
    /// Its netns path is gone, or no longer a namespace.
    Dead,
    /// No netns recorded, or one under /proc whose process is gone or is
    /// another process now (the namespace may live on): never judged dead.
    Unknown,
    /// Younger than --min-age: an ADD or DEL may be in flight.
    Fresh,
}

/// One result-cache entry and the cache it was read from.
pub struct Cached {
    pub path: PathBuf,
    pub cache: Cache,
    pub entry: Entry,
    /// The cached config (None when it does not parse).
    pub list: Option<NetworkList>,
    pub state: State,
    /// Its namespace: the cached netns, or for an entry without one (libcni
    /// before 1.2) the namespace the host shows to be its pod's.
    pub netns: String,
}

impl Cached {
    /// The runtime that runs this entry's DEL: the cached config, its own cache
    /// (multus keeps its delegates' entries apart), no netns.
    pub fn del(&self, main: &Runtime) -> Result<()> {
        let list = match &self.list {
            Some(l) => l.clone(),
            None => conf::list_from_bytes(&self.entry.config, &self.path)?,
        };
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
    /// Cache files that could not be read as entries, and why: whatever may
    /// be theirs is kept.
    pub unreadable: Vec<(PathBuf, String)>,
    pub min_age: Duration,
    pub now: SystemTime,
    sightings: RefCell<Sightings>,
    census: OnceCell<Census>,
    ips: OnceCell<Addresses>,
    /// How long a live attachment's state must have been seen missing
    /// before it is repaired (--repair-after).
    pub repair_after: Duration,
    /// The longest a repair found still has to wait for its second look.
    repair_wait: Cell<Duration>,
    /// The attachments of each container ID (indices into `attachments`).
    by_container: BTreeMap<String, Vec<usize>>,
    /// The container ID each long ID's token stands for (a bounded state
    /// file name holds the token).
    tokens: BTreeMap<String, String>,
    /// The attachments whose cached result holds each address.
    by_ip: OnceCell<BTreeMap<IpAddr, Vec<usize>>>,
    /// What fixes re-read (cache file names, namespaces' addresses), at most
    /// once a second however many fixes run.
    now_names: RefCell<Option<(Instant, BTreeSet<String>)>>,
    now_ips: RefCell<Option<(Instant, Addresses)>>,
    /// Objects left alone for being younger than --min-age (while judging).
    young: Cell<usize>,
    judging: Cell<bool>,
}

/// The addresses in use on the node; incomplete when a namespace could not
/// be read (then every address counts as in use).
struct Addresses {
    ips: BTreeSet<IpAddr>,
    complete: bool,
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
        let mounts = Mounts::of_self();
        let mut attachments = Vec::new();
        let mut unreadable = Vec::new();
        for cache in &caches {
            for scanned in cache.scan()? {
                let (path, entry) = match scanned {
                    Scanned::Entry(path, entry) => (path, *entry),
                    Scanned::Unreadable(path, why) => {
                        unreadable.push((path, why));
                        continue;
                    }
                };
                let state = judge(&path, &entry, &mounts, min_age, now)?;
                attachments.push(Cached {
                    list: conf::list_from_bytes(&entry.config, &path).ok(),
                    path,
                    cache: cache.clone(),
                    netns: entry.netns.clone(),
                    entry,
                    state,
                });
            }
        }
        // Entries without a netns are judged from the node's namespaces.
        let census = OnceCell::new();
        if attachments
            .iter()
            .any(|a| a.state == State::Unknown && a.entry.netns.is_empty())
        {
            let read = census.get_or_init(|| Census::read(netns_paths(&attachments), true));
            super::hostview::judge(&mut attachments, read)?;
        }
        let young = attachments
            .iter()
            .filter(|a| a.state == State::Fresh)
            .count();
        let mut by_container: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut tokens = BTreeMap::new();
        for (i, a) in attachments.iter().enumerate() {
            let id = &a.entry.container_id;
            by_container.entry(id.clone()).or_default().push(i);
            if id.len() > crate::files::TOKEN_LEN {
                tokens.insert(crate::files::id_token(id), id.clone());
            }
        }
        let sightings = Sightings::load(&runtime.cache.dir, min_age, now);
        Ok(Node {
            runtime,
            lists,
            attachments,
            unreadable,
            min_age,
            now,
            sightings: RefCell::new(sightings),
            census,
            ips: OnceCell::new(),
            by_container,
            tokens,
            by_ip: OnceCell::new(),
            now_names: RefCell::new(None),
            now_ips: RefCell::new(None),
            repair_after: Duration::ZERO,
            repair_wait: Cell::new(Duration::ZERO),
            young: Cell::new(young),
            judging: Cell::new(true),
        })
    }

    /// Whether an unreadable cache entry may be the attachment of this
    /// container (its file name holds `-<id>-`, or is bounded and cannot say);
    /// with no container known, any unreadable entry may own the object.
    pub fn in_doubt(&self, container_id: &str) -> bool {
        self.unreadable.iter().any(|(path, _)| {
            let name = path.file_name().map(|n| n.to_string_lossy());
            container_id.is_empty()
                || name.is_some_and(|n| {
                    n.contains(&format!("-{container_id}-")) || crate::files::is_bounded_name(&n)
                })
        })
    }

    /// The container ID a state file's name gives: a long ID's token stands
    /// for the cached attachment's whole ID; an ID, or a token no cached
    /// attachment has, is itself.
    pub fn container_of(&self, id_or_token: &str) -> String {
        self.tokens
            .get(id_or_token)
            .cloned()
            .unwrap_or_else(|| id_or_token.to_string())
    }

    /// A live attachment's state seen missing (under a key that changes with
    /// its cache entry): how long until it may be repaired is noted.
    pub fn repair_seen(&self, key: &str) {
        let seen = self.sightings.borrow_mut().seen_for(key);
        let wait = self.repair_after.saturating_sub(seen);
        self.repair_wait.set(self.repair_wait.get().max(wait));
    }

    /// How long to wait before the second look at the repairs found.
    pub fn repair_wait(&self) -> Duration {
        self.repair_wait.get()
    }

    /// How many objects were left alone for being younger than --min-age.
    pub fn young(&self) -> usize {
        self.young.get()
    }

    /// Judging ends: checks made by fixes are not counted as young state.
    pub fn judged(&self) {
        self.judging.set(false);
    }

    fn count_young(&self, old: bool) -> bool {
        if !old && self.judging.get() {
            self.young.set(self.young.get() + 1);
        }
        old
    }

    /// The attachments whose cached result holds the address.
    pub fn holding(&self, ip: IpAddr) -> Vec<usize> {
        let by_ip = self.by_ip.get_or_init(|| {
            let mut map: BTreeMap<IpAddr, Vec<usize>> = BTreeMap::new();
            for (i, a) in self.attachments.iter().enumerate() {
                for ip in a.entry.ips() {
                    map.entry(ip).or_default().push(i);
                }
            }
            map
        });
        by_ip.get(&ip).cloned().unwrap_or_default()
    }

    /// The attachments of `named` (an empty network or interface: any;
    /// no container: none).
    pub fn matching(&self, named: &Named) -> Vec<usize> {
        let Some(all) = self.by_container.get(&named.container_id) else {
            return Vec::new();
        };
        all.iter()
            .copied()
            .filter(|&i| {
                let e = &self.attachments[i].entry;
                (named.network.is_empty() || e.network_name == named.network)
                    && (named.ifname.is_empty() || e.ifname == named.ifname)
            })
            .collect()
    }

    /// Whether some cache file, readable or not, names the owner now (read
    /// again from disk: an ADD may have finished since the node was read):
    /// the exact file when every part is named, else the names of every
    /// results directory, read at most once a second.
    pub fn named_now(&self, named: &Named) -> Result<bool> {
        let Named {
            network,
            container_id,
            ifname,
        } = named;
        let dirs = self.cache_dirs();
        if !network.is_empty() && !ifname.is_empty() {
            let exists = |d: &PathBuf| {
                std::fs::symlink_metadata(Cache::new(d).path(network, container_id, ifname))
            };
            return Ok(dirs.iter().any(|d| exists(d).is_ok()));
        }
        let mut cached = self.now_names.borrow_mut();
        if cached
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= Duration::from_secs(1))
        {
            let mut names = BTreeSet::new();
            for dir in &dirs {
                for e in entries(&dir.join("results"))? {
                    let name = e.file_name().to_string_lossy().into_owned();
                    // A bounded name: libcni's name of the entry it holds too.
                    if crate::files::is_bounded_name(&name) {
                        names.extend(entry_name(&e.path()));
                    }
                    names.insert(name);
                }
            }
            *cached = Some((Instant::now(), names));
        }
        let names = cached.as_ref().map(|(_, n)| n);
        let exact = format!("{network}-{container_id}-{ifname}");
        let prefix = format!("{network}-{container_id}-");
        let tail = format!("-{container_id}-{ifname}");
        let middle = format!("-{container_id}-");
        Ok(names.is_some_and(|names| {
            names.iter().any(|name| {
                let any_net = network.is_empty()
                    && (name.ends_with(&tail) || (ifname.is_empty() && name.contains(&middle)));
                any_net || *name == exact || (ifname.is_empty() && name.starts_with(&prefix))
            })
        }))
    }

    /// Whether a namespace holds one of the addresses now (read again at most
    /// once a second: an ADD may have taken one since the node was read).
    pub fn in_use_now(&self, ips: &[IpAddr]) -> bool {
        if ips.is_empty() {
            return false;
        }
        let mut cached = self.now_ips.borrow_mut();
        if cached
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= Duration::from_secs(1))
        {
            let census = Census::read(netns_paths(&self.attachments), true);
            let (ips, complete) = (census.ips(), census.complete);
            *cached = Some((Instant::now(), Addresses { ips, complete }));
        }
        cached
            .as_ref()
            .is_some_and(|(_, a)| !a.complete || ips.iter().any(|ip| a.ips.contains(ip)))
    }

    /// Every result cache read: the main one and each multus cniDir.
    fn cache_dirs(&self) -> BTreeSet<PathBuf> {
        let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
        dirs.insert(self.runtime.cache.dir.clone());
        dirs.extend(self.attachments.iter().map(|a| a.cache.dir.clone()));
        dirs.extend(
            self.unreadable
                .iter()
                .filter_map(|(p, _)| p.parent().and_then(Path::parent).map(Path::to_path_buf)),
        );
        dirs
    }

    /// Every configured plugin's footprint, with its network; with
    /// `cached`, every cached config's too (a delegate multus read from its
    /// own directories or a NAD has a cache entry, not a file here).
    pub fn footprints(&self, cached: bool) -> Vec<(&NetworkList, &PluginConf, Footprint)> {
        let more = self.attachments.iter().filter(|_| cached);
        let lists = self
            .lists
            .iter()
            .chain(more.filter_map(|a| a.list.as_ref()));
        let plugins = lists.flat_map(|l| l.plugins.iter().map(move |p| (l, p)));
        plugins.map(|(l, p)| (l, p, Footprint::of(p))).collect()
    }

    /// The `dataDir`s of the configured plugins whose files the finding
    /// `kind` judges (as their table entries say: `kinds::of`).
    pub fn data_dirs(&self, kind: &str) -> BTreeSet<PathBuf> {
        let footprints = self.footprints(false).into_iter();
        let picked = footprints.filter(|(_, _, f)| super::kinds::of(f).contains(&kind));
        picked.filter_map(|(_, _, f)| f.data_dir).collect()
    }

    /// Whether a file was last changed at least --min-age ago (a link is not
    /// followed; a file gone meanwhile is not old).
    pub fn old_file(&self, path: &Path) -> Result<bool> {
        Ok(self.count_young(old_enough(path, self.min_age, self.now)?))
    }

    /// Whether an ownerless object (by a key naming it) has been seen by
    /// earlier runs for at least --min-age: kernel objects carry no time, so
    /// their age is counted from the first run that saw them without owner.
    pub fn settled(&self, key: &str) -> bool {
        let settled = self.sightings.borrow_mut().settled(key);
        self.count_young(settled)
    }

    /// Keeps the sightings of this run for the next one.
    pub fn save_sightings(&self) -> Result<()> {
        self.sightings.borrow().save(&self.runtime.cache.dir)
    }

    /// Whether an address is held by an attachment not known dead (its cached
    /// result) or by any interface of any network namespace on the node but
    /// this one. Positive evidence of use, read only to keep things: a
    /// container that claims an address can keep it reserved, nothing more.
    /// A namespace that could not be read may hold any address: then every
    /// address counts as in use.
    pub fn ip_in_use(&self, ip: IpAddr) -> bool {
        let a = self.ips.get_or_init(|| self.ips_in_use());
        !a.complete || a.ips.contains(&ip)
    }

    fn ips_in_use(&self) -> Addresses {
        let live = self.attachments.iter().filter(|a| a.state != State::Dead);
        let mut ips: BTreeSet<IpAddr> = live.flat_map(|a| a.entry.ips()).collect();
        let census = self.census();
        ips.extend(census.ips());
        Addresses {
            ips,
            complete: census.complete,
        }
    }

    /// The node's namespaces with their addresses, read once a run.
    pub fn census(&self) -> &Census {
        self.census
            .get_or_init(|| Census::read(netns_paths(&self.attachments), true))
    }
}

/// The namespaces the cache entries name.
pub fn netns_paths(attachments: &[Cached]) -> Vec<PathBuf> {
    let named = attachments.iter().filter(|a| !a.netns.is_empty());
    named.map(|a| PathBuf::from(&a.netns)).collect()
}

/// Whether the attachment of a cache entry is alive (`cnitool ls` shows
/// the same judgement).
pub fn judge(
    path: &Path,
    entry: &Entry,
    mounts: &Mounts,
    min_age: Duration,
    now: SystemTime,
) -> Result<State> {
    if !old_enough(path, min_age, now)? {
        return Ok(State::Fresh);
    }
    if entry.netns.is_empty() {
        return Ok(State::Unknown);
    }
    let netns = Path::new(&entry.netns);
    let seen = vantage::seen(netns)
        .with_context(|| format!("failed to statfs netns {}", netns.display()))?;
    if netns.starts_with("/proc") {
        // A PID names whatever process has it now: alive only while it is
        // the task that was there when the attachment was cached.
        let cached = std::fs::symlink_metadata(path)
            .and_then(|m| m.modified())
            .with_context(|| format!("failed to stat {}", path.display()))?;
        let same_task = vantage::task_started_by(netns, cached) == Some(true);
        return Ok(if seen == Seen::Namespace && same_task {
            State::Alive
        } else {
            State::Unknown
        });
    }
    if seen == Seen::Namespace {
        return Ok(State::Alive);
    }
    let dir = netns.parent().unwrap_or(Path::new("/"));
    if !mounts.trusts(seen, dir) {
        let what = match seen {
            Seen::Missing => "is missing",
            _ => "is not a namespace",
        };
        anyhow::bail!(
            "{} (the netns of container {} on network {}) {what} from here, and this process \
             does not see the host's mounts (it runs in a mount namespace of its own), so no \
             pod can be judged; run the doctor in the host's mount namespace (e.g. `nsenter \
             -t 1 -m`), or mount the netns directory with HostToContainer propagation",
            netns.display(),
            entry.container_id,
            entry.network_name
        );
    }
    Ok(State::Dead)
}

/// The cniDir of every multus plugin configured (where it caches its
/// delegates' results and keeps its per-pod files), with the names of the
/// networks whose multus uses it.
pub fn multus_cni_dirs(lists: &[NetworkList]) -> BTreeMap<PathBuf, BTreeSet<String>> {
    let mut out: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    for l in lists {
        for dir in l.plugins.iter().filter_map(|p| Footprint::of(p).cni_dir) {
            out.entry(dir).or_default().insert(l.name.clone());
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

/// When each ownerless object was first seen, kept between runs in
/// `<cache dir>/doctor/sightings.json` (root only). Only objects seen in this
/// run are written back, so one that got an owner or went starts over.
struct Sightings {
    min_age: Duration,
    now: u64,
    before: BTreeMap<String, u64>,
    seen: BTreeMap<String, u64>,
}

const SIGHTINGS: &str = "doctor/sightings.json";

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
        self.seen_for(key) >= self.min_age
    }

    /// How long ago an earlier run first saw it (zero when none did).
    fn seen_for(&mut self, key: &str) -> Duration {
        let first = self
            .before
            .get(key)
            .copied()
            .unwrap_or(self.now)
            .min(self.now);
        self.seen.insert(key.to_string(), first);
        Duration::from_secs(self.now - first)
    }

    fn save(&self, cache_dir: &Path) -> Result<()> {
        if self.min_age.is_zero() && self.before.is_empty() && self.seen.is_empty() {
            return Ok(());
        }
        let path = cache_dir.join(SIGHTINGS);
        let text = serde_json::to_vec(&self.seen).context("failed to encode sightings")?;
        crate::files::write_private_atomic(&path, &text)
            .with_context(|| format!("failed to write {}", path.display()))
    }
}

/// The entries of a directory; a missing one has none.
pub fn entries(dir: &Path) -> Result<Vec<std::fs::DirEntry>> {
    let unreadable = || format!("failed to read {}", dir.display());
    match std::fs::read_dir(dir) {
        Ok(d) => d.map(|e| e.with_context(unreadable)).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(unreadable),
    }
}

/// libcni's name (`<net>-<id>-<ifname>`) of the cache entry a file holds;
/// None when it holds none.
fn entry_name(path: &Path) -> Option<String> {
    let bytes = crate::files::read_state_limited(path, crate::files::MAX_FILE).ok()?;
    let e: Entry = crate::cni::json::from_slice(&bytes).ok()?;
    Some(format!(
        "{}-{}-{}",
        e.network_name, e.container_id, e.ifname
    ))
}

/// Removes a state file (a link itself, never its target); true when it is
/// gone afterwards, whoever removed it.
pub fn remove_file(path: &Path) -> Result<bool> {
    crate::files::remove_state(path)
        .with_context(|| format!("failed to remove {}", path.display()))?;
    Ok(true)
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
