//! cnitool on the attachments runtimes made, read from libcni's result cache
//! (`<cacheDir>/results/<net>-<containerID>-<ifname>`) that containerd,
//! CRI-O and Podman write: `ls` lists them, alive or not, and
//! `--container-id` runs CHECK or DEL of one with what the runtime cached
//! (config, CNI_ARGS, capability args, netns), as libcni's GC runs a DEL
//! from the cache. Alive or dead is the doctor's judgement.

use super::doctor::hostview;
use super::doctor::namespaces::Census;
use super::doctor::node::{self, Cached, State};
use super::{Options, Settings, Target};
use crate::libcni::cache::{Cache, DEFAULT_CACHE_DIR, Entry, Scanned};
use crate::libcni::conf::{self, NetworkList};
use crate::libcni::{Runtime, RuntimeConf};
use crate::netns::vantage::Mounts;
use crate::quote::quoted;
use anyhow::{Result, bail};
use clap::Args;
use serde_json::{Value, json};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Print {"attachments": [...]} instead of a table
    #[arg(long)]
    json: bool,
}

/// Where rootless Podman keeps libcni's cache, under each user's runtime
/// directory (its CNI plugins run with `<dir>/var/lib/cni` bound over
/// /var/lib/cni): Podman 4's rootless netns, then Podman 3's.
const ROOTLESS_PODMAN: [&str; 2] = ["rootless-netns/var/lib/cni", "rootless-cni/var/lib/cni"];

/// The cache directories to read: those given with --cache-dir (each must
/// exist), else every default that exists: libcni's /var/lib/cni (containerd,
/// CRI-O and Podman as root use it), multus's cniDir (the default and those
/// configured), rootless Podman's.
pub fn cache_dirs(opts: &Options, conf_dir: &Path) -> Result<Vec<PathBuf>> {
    if !opts.cache_dir.is_empty() {
        for dir in &opts.cache_dir {
            if !dir.is_dir() {
                bail!("cache directory {} does not exist", dir.display());
            }
        }
        return Ok(opts.cache_dir.clone());
    }
    let mut dirs = vec![
        PathBuf::from(DEFAULT_CACHE_DIR),
        PathBuf::from(crate::plugins::multus::DEFAULT_CNI_DIR),
    ];
    if let Ok(lists) = conf::load_all(conf_dir) {
        dirs.extend(node::multus_cni_dirs(&lists).into_keys());
    }
    if let Ok(users) = std::fs::read_dir("/run/user") {
        let mut users: Vec<PathBuf> = users.flatten().map(|u| u.path()).collect();
        users.sort();
        for user in users {
            dirs.extend(ROOTLESS_PODMAN.iter().map(|d| user.join(d)));
        }
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        if dir.is_dir() && !out.contains(&dir) {
            out.push(dir);
        }
    }
    Ok(out)
}

/// One cache entry judged: its attachment, and why it is unknown.
struct Judged {
    cached: Cached,
    why: Option<String>,
}

/// Every file of the caches' results directories: the entries judged as the
/// doctor judges them (at any age), and the files that are not entries, with
/// why (a results directory that cannot be read is one of those).
fn inspect(dirs: &[PathBuf]) -> (Vec<Judged>, Vec<(PathBuf, String)>) {
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    for dir in dirs {
        let cache = Cache::new(dir);
        match cache.scan() {
            Ok(files) => {
                for file in files {
                    match file {
                        Scanned::Entry(path, entry) => found.push((path, cache.clone(), *entry)),
                        Scanned::Unreadable(path, why) => unreadable.push((path, why)),
                    }
                }
            }
            Err(e) => unreadable.push((dir.join("results"), e.to_string())),
        }
    }
    (judge(found), unreadable)
}

/// The doctor's judgement of each entry; an entry without a netns (libcni
/// before 1.2) is judged from what the host shows, and given the namespace
/// found holding it.
fn judge(found: Vec<(PathBuf, Cache, Entry)>) -> Vec<Judged> {
    let mounts = Mounts::of_self();
    let now = SystemTime::now();
    let mut judged: Vec<Judged> = found
        .into_iter()
        .map(|(path, cache, entry)| {
            let (state, why) = match node::judge(&path, &entry, &mounts, Duration::ZERO, now) {
                Ok(State::Fresh) => (State::Unknown, Some("written just now".to_string())),
                Ok(State::Unknown) if entry.netns.starts_with("/proc") => (
                    State::Unknown,
                    Some(format!(
                        "{} names another process now, or none (the namespace may live on)",
                        entry.netns
                    )),
                ),
                Ok(state) => (state, None),
                Err(e) => (State::Unknown, Some(format!("{e:#}"))),
            };
            let cached = Cached {
                path,
                cache,
                list: None,
                state,
                netns: entry.netns.clone(),
                entry,
            };
            Judged { cached, why }
        })
        .collect();
    let pending = |j: &Judged| j.cached.state == State::Unknown && j.cached.entry.netns.is_empty();
    if judged.iter().any(pending) {
        let mut cached: Vec<Cached> = Vec::new();
        let mut whys = Vec::new();
        for j in judged.drain(..) {
            cached.push(j.cached);
            whys.push(j.why);
        }
        let census = Census::read(node::netns_paths(&cached), true);
        let failed = hostview::judge(&mut cached, &census).err();
        judged = cached
            .into_iter()
            .zip(whys)
            .map(|(cached, why)| {
                let why = match (&failed, cached.entry.netns.is_empty(), cached.state) {
                    (Some(e), true, State::Unknown) => {
                        Some(format!("no netns cached; the host's view failed: {e:#}"))
                    }
                    (None, true, State::Unknown) => Some(
                        "no netns cached (libcni before 1.2), and neither a veth nor an \
                         address of its result was found in a namespace"
                            .to_string(),
                    ),
                    _ => why,
                };
                Judged { cached, why }
            })
            .collect();
    }
    judged
}

fn state_name(state: State) -> &'static str {
    match state {
        State::Alive => "alive",
        State::Dead => "dead",
        State::Unknown | State::Fresh => "unknown",
    }
}

/// `cnitool ls`: one row per cached attachment, and one per file that is not
/// one (never left out).
pub fn ls(opts: &Options, conf_dir: &Path, args: &LsArgs) -> Result<String> {
    let dirs = cache_dirs(opts, conf_dir)?;
    let (judged, unreadable) = inspect(&dirs);
    let cache_of = |path: &Path| {
        let dir = path.parent().and_then(Path::parent).unwrap_or(path);
        dir.display().to_string()
    };
    let mut rows: Vec<Value> = judged
        .iter()
        .map(|j| {
            let (c, e) = (&j.cached, &j.cached.entry);
            let mut row = json!({
                "network": e.network_name,
                "containerId": e.container_id,
                "ifname": e.ifname,
                "netns": c.netns,
                "netnsCached": !e.netns.is_empty(),
                "addresses": e.nets().iter().map(ToString::to_string).collect::<Vec<_>>(),
                "state": state_name(c.state),
                "cacheDir": cache_of(&c.path),
                "file": c.path.display().to_string(),
            });
            if let Some(why) = &j.why {
                row["reason"] = json!(why);
            }
            row
        })
        .collect();
    rows.extend(unreadable.iter().map(|(path, why)| {
        json!({
            "state": "unreadable",
            "reason": why,
            "cacheDir": cache_of(path),
            "file": path.display().to_string(),
        })
    }));
    if args.json {
        let out = json!({ "cacheDirs": dirs, "attachments": rows });
        return Ok(serde_json::to_string_pretty(&out)?);
    }
    if rows.is_empty() {
        let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        return Ok(format!(
            "no cached attachments in {}",
            if names.is_empty() {
                "any cache directory (none exists)".to_string()
            } else {
                names.join(", ")
            }
        ));
    }
    Ok(table(&rows))
}

/// Columns padded to their widest cell; the state (with why) last.
fn table(rows: &[Value]) -> String {
    let head = [
        "NETWORK",
        "CONTAINER",
        "IFNAME",
        "NETNS",
        "ADDRESSES",
        "CACHE",
        "STATE",
    ];
    let text = |row: &Value, key: &str| match &row[key] {
        Value::Null => "-".to_string(),
        Value::String(s) if s.is_empty() => "-".to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "-".to_string(),
        Value::Array(items) => {
            let items: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            items.join(",")
        }
        _ => "?".to_string(),
    };
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            let mut state = text(r, "state");
            if r["state"] == "unreadable" {
                state = format!("{state}: {}: {}", text(r, "file"), text(r, "reason"));
            } else if r.get("reason").is_some() {
                state = format!("{state}: {}", text(r, "reason"));
            }
            let mut netns = text(r, "netns");
            if r["netnsCached"] == false && netns != "-" {
                netns = format!("{netns} (found)");
            }
            [
                text(r, "network"),
                text(r, "containerId"),
                text(r, "ifname"),
                netns,
                text(r, "addresses"),
                text(r, "cacheDir"),
                state,
            ]
        })
        .collect();
    let head = head.map(String::from);
    let all: Vec<[String; 7]> = std::iter::once(head).chain(cells).collect();
    super::doctor::columns(&all)
}

/// What CHECK or DEL of a cached attachment runs with.
struct Resolved {
    runtime: Runtime,
    list: NetworkList,
    rt: RuntimeConf,
}

/// The verb `--container-id` runs.
#[derive(Clone, Copy, PartialEq)]
enum Verb {
    Check,
    Del,
}

/// The cached attachment of container `id` on `net` (on `ifname`, or its
/// only interface there) in the cache directories: the cached config (the
/// config directory's when none is cached), CNI_ARGS and capability args,
/// and its netns: `netns` when given (it must be the one cached), else the
/// cached one (or, without one, the namespace the host shows holding it)
/// while it lives. A DEL of an attachment whose namespace is gone runs
/// without one, as the doctor's: a path may name another namespace by now.
fn resolve(
    s: &Settings,
    dirs: &[PathBuf],
    net: &str,
    id: &str,
    ifname: Option<&str>,
    netns: Option<String>,
    verb: Verb,
) -> Result<Resolved> {
    let mut found = Vec::new();
    let mut broken = Vec::new();
    for dir in dirs {
        let cache = Cache::new(dir);
        for file in cache.scan()? {
            match file {
                Scanned::Entry(path, e)
                    if e.network_name == net
                        && e.container_id == id
                        && ifname.is_none_or(|i| i == e.ifname) =>
                {
                    found.push((path, cache.clone(), *e));
                }
                Scanned::Unreadable(path, why)
                    if path.file_name().is_some_and(|n| {
                        n.to_string_lossy().starts_with(&format!("{net}-{id}-"))
                    }) =>
                {
                    broken.push(format!("{} ({why})", path.display()));
                }
                _ => {}
            }
        }
    }
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let ifname_text = ifname
        .map(|i| format!(", interface {i}", i = quoted(&i)))
        .unwrap_or_default();
    if found.is_empty() {
        if !broken.is_empty() {
            bail!(
                "the cache entry of container {id} on network {net} cannot be read: {}",
                broken.join(", "),
                id = quoted(&id),
                net = quoted(&net)
            );
        }
        bail!(
            "no cached attachment of container {id} on network {net}{ifname_text} in {} \
             (`cnitool ls` lists the cached attachments)",
            names.join(", "),
            id = quoted(&id),
            net = quoted(&net)
        );
    }
    if found.len() > 1 {
        let each: Vec<String> = found
            .iter()
            .map(|(p, _, e)| format!("{} ({})", e.ifname, p.display()))
            .collect();
        bail!(
            "container {id} has {} cached attachments on network {net}: {}; name one with \
             --ifname",
            found.len(),
            each.join(", "),
            id = quoted(&id),
            net = quoted(&net)
        );
    }
    let Some(judged) = judge(found).pop() else {
        bail!(
            "no cached attachment of container {id} on network {net}",
            id = quoted(&id),
            net = quoted(&net)
        );
    };
    let Judged { cached, why } = judged;
    let list = cached_list(s, &cached)?;
    let netns = match netns {
        Some(given) => {
            let given = super::netns_path(&given)?;
            let theirs = &cached.entry.netns;
            if !theirs.is_empty() && !same_netns(theirs, &given) {
                bail!(
                    "the attachment of container {id} on {net} is in netns {theirs}, not \
                     {given}",
                    id = quoted(&id),
                    net = quoted(&net)
                );
            }
            given
        }
        None => netns_of(&cached, why.as_deref(), verb)?,
    };
    let runtime = Runtime {
        cni_path: s.runtime.cni_path.clone(),
        cache: cached.cache.clone(),
        plugins: s.runtime.plugins,
    };
    Ok(Resolved {
        runtime,
        rt: RuntimeConf::of_cached(&cached.entry, &netns),
        list,
    })
}

/// `check`/`del --container-id`: CHECK (`check`) or DEL of the container's
/// cached attachment, with what its runtime cached.
pub fn by_container_id(
    s: &Settings,
    opts: &Options,
    t: &Target,
    check: bool,
    getenv: &dyn Fn(&str) -> Option<String>,
) -> Result<String> {
    if opts.args.is_some() || opts.cap_args.is_some() {
        bail!("--args and --cap-args do not go with --container-id: the cached ones are used");
    }
    let verb = if check { Verb::Check } else { Verb::Del };
    let ifname = opts.ifname.clone().or_else(|| getenv("CNI_IFNAME"));
    let dirs = cache_dirs(opts, &s.conf_dir)?;
    let r = resolve(
        s,
        &dirs,
        &t.net,
        t.container_id.as_deref().unwrap_or_default(),
        ifname.as_deref(),
        t.netns.clone().or_else(|| t.netns_flag.clone()),
        verb,
    )?;
    match verb {
        Verb::Check => r.runtime.check(&r.list, &r.rt)?,
        Verb::Del => r.runtime.del(&r.list, &r.rt)?,
    }
    Ok(String::new())
}

/// The netns to run with when none is given.
fn netns_of(cached: &Cached, why: Option<&str>, verb: Verb) -> Result<String> {
    let e = &cached.entry;
    let what = format!(
        "the attachment of container {} on {}",
        quoted(&e.container_id),
        quoted(&e.network_name)
    );
    match (cached.state, verb) {
        (State::Alive, _) => Ok(cached.netns.clone()),
        (State::Dead, Verb::Check) => bail!(
            "{what} is dead: its netns {} is gone, so there is nothing to check (`cnitool del \
             --container-id {} {}` releases what it holds)",
            e.netns,
            e.container_id,
            e.network_name
        ),
        (_, Verb::Check) => bail!(
            "{what}: cannot tell which namespace it is in ({}); give it with --netns",
            why.unwrap_or("unknown")
        ),
        (State::Dead, Verb::Del) => {
            eprintln!(
                "cnitool: {what}: its netns {} is gone; DEL runs without one",
                e.netns
            );
            Ok(String::new())
        }
        (_, Verb::Del) => {
            eprintln!(
                "cnitool: {what}: its netns is not known to be its own ({}); DEL runs without \
                 one (give it with --netns to clean inside it too)",
                why.unwrap_or("unknown")
            );
            Ok(String::new())
        }
    }
}

/// The cached config (a list, or a single plugin's config); the config
/// directory's network when none is cached or it does not parse.
fn cached_list(s: &Settings, cached: &Cached) -> Result<NetworkList> {
    let bytes = &cached.entry.config;
    let parsed = conf::list_from_bytes(bytes, &cached.path)
        .ok()
        .filter(|l| !l.plugins.is_empty())
        .or_else(|| conf::conf_from_bytes(bytes, &cached.path).ok());
    if let Some(list) = parsed {
        return Ok(list);
    }
    eprintln!(
        "cnitool: {} caches no readable config; using network {} of {}",
        cached.path.display(),
        quoted(&cached.entry.network_name),
        s.conf_dir.display()
    );
    Ok(conf::load(&s.conf_dir, &cached.entry.network_name)?)
}

/// Whether two netns paths are the same namespace (the same file, or the
/// same path when either cannot be read).
fn same_netns(a: &str, b: &str) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => (x.dev(), x.ino()) == (y.dev(), y.ino()),
        _ => a == b,
    }
}

/// The cached attachments whose netns is the namespace at `path` (by name,
/// or the same namespace under another path), as "net/container/ifname".
pub fn in_netns(dirs: &[PathBuf], path: &Path) -> Vec<(String, String)> {
    let target = path.to_string_lossy();
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(files) = Cache::new(dir).scan() else {
            continue;
        };
        for file in files {
            if let Scanned::Entry(file, e) = file
                && !e.netns.is_empty()
                && (e.netns == target || same_netns(&e.netns, &target))
            {
                out.push((
                    format!("{} {} {}", e.network_name, e.container_id, e.ifname),
                    file.display().to_string(),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "attachments_tests.rs"]
mod tests;
