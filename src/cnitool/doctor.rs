//! `cnitool doctor`: CNI state on this node that belongs to no live attachment.
//! A live attachment is a result-cache entry whose netns still is a network
//! namespace. Found so far: cache entries of gone namespaces (`cache`) and
//! host-local reservations no cache entry names (`ipam`); `--fix` cleans them
//! up. State younger than `--min-age` is never judged: an ADD may be in flight.

use super::Settings;
use crate::ipam::store::{DEFAULT_DATA_DIR, DiskStore};
use crate::runtime::RuntimeConf;
use crate::runtime::cache::Entry;
use crate::runtime::conf;
use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Clean up what is found (DEL of dead attachments, stale reservations)
    #[arg(long)]
    fix: bool,
    /// Leave state younger than this alone (an ADD may be in flight)
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    min_age: u64,
    /// Print {"findings": [...]} instead of a table
    #[arg(long)]
    json: bool,
}

pub const CACHE_ACTION: &str = "DEL with the cached config";
pub const IPAM_ACTION: &str = "remove reservation";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Cache,
    Ipam,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Cache => "cache",
            Kind::Ipam => "ipam",
        }
    }
}

/// One piece of state that belongs to no live attachment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub network: String,
    #[serde(rename = "containerId")]
    pub container_id: String,
    pub ifname: String,
    /// The file that is the state (cache entry, reservation).
    pub object: String,
    /// What --fix does (or did).
    pub action: &'static str,
    pub fixed: bool,
    /// What DEL needs: the cache entry (cache findings only).
    #[serde(skip)]
    entry: Option<Box<Entry>>,
    /// The host-local data dir (ipam findings only).
    #[serde(skip)]
    data_dir: PathBuf,
}

/// Runs the doctor; the exit status: 0 nothing (left) to fix, 1 findings
/// remain, 2 the node could not be inspected.
pub(super) fn main(settings: Result<Settings>, args: &DoctorArgs) -> i32 {
    let inspected = settings.and_then(|s| {
        let min_age = Duration::from_secs(args.min_age);
        inspect(&s, min_age, SystemTime::now()).map(|f| (s, f))
    });
    let (s, mut findings) = match inspected {
        Ok(x) => x,
        Err(e) => {
            eprintln!(
                "cnitool doctor: cannot inspect the node: {}",
                super::report(&e)
            );
            return 2;
        }
    };
    if args.fix {
        for f in &mut findings {
            if let Err(e) = fix(&s, f) {
                eprintln!(
                    "cnitool doctor: failed to fix {} {}: {}",
                    f.kind.name(),
                    f.object,
                    super::report(&e)
                );
            }
        }
    }
    println!(
        "{}",
        if args.json {
            to_json(&findings)
        } else {
            table(&findings)
        }
    );
    i32::from(findings.iter().any(|f| !f.fixed))
}

pub fn to_json(findings: &[Finding]) -> String {
    let v = serde_json::json!({ "findings": findings });
    serde_json::to_string_pretty(&v).unwrap_or_else(|_| r#"{"findings": []}"#.into())
}

/// Columns padded to their widest cell.
pub fn table(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "no stale CNI state found".into();
    }
    let mut rows = vec![
        [
            "KIND",
            "NETWORK",
            "CONTAINER",
            "IFNAME",
            "OBJECT",
            "ACTION",
            "FIXED",
        ]
        .map(String::from),
    ];
    for f in findings {
        rows.push([
            f.kind.name().into(),
            f.network.clone(),
            f.container_id.clone(),
            f.ifname.clone(),
            f.object.clone(),
            f.action.into(),
            if f.fixed { "yes" } else { "no" }.into(),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(widths)
                .map(|(c, w)| format!("{c:w$}"))
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every finding of the node, cache entries first.
fn inspect(s: &Settings, min_age: Duration, now: SystemTime) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    let cache = &s.runtime.cache;
    for (path, entry) in cache.files()? {
        if entry.netns.is_empty() || !old_enough(&path, min_age, now)? {
            continue;
        }
        if netns_alive(Path::new(&entry.netns))? {
            continue;
        }
        out.push(Finding {
            kind: Kind::Cache,
            network: entry.network_name.clone(),
            container_id: entry.container_id.clone(),
            ifname: entry.ifname.clone(),
            object: path.display().to_string(),
            action: CACHE_ACTION,
            fixed: false,
            entry: Some(Box::new(entry)),
            data_dir: PathBuf::new(),
        });
    }
    let named = cache_names(&cache.dir.join("results"))?;
    for (data_dir, network) in host_local_stores(&s.conf_dir)? {
        let dir = data_dir.join(&network);
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let store = DiskStore::open(&data_dir, &network)
            .with_context(|| format!("failed to open host-local store {}", dir.display()))?;
        let held = store
            .reservations()
            .with_context(|| format!("failed to read host-local store {}", dir.display()))?;
        for r in held {
            let file = dir.join(r.ip.to_string());
            if names(&named, &network, &r.container_id, &r.ifname)
                || !old_enough(&file, min_age, now)?
            {
                continue;
            }
            out.push(Finding {
                kind: Kind::Ipam,
                network: network.clone(),
                container_id: r.container_id,
                ifname: r.ifname,
                object: file.display().to_string(),
                action: IPAM_ACTION,
                fixed: false,
                entry: None,
                data_dir: data_dir.clone(),
            });
        }
    }
    Ok(out)
}

/// Whether a file was last changed at least `min_age` ago (a link is not followed).
fn old_enough(path: &Path, min_age: Duration, now: SystemTime) -> Result<bool> {
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
fn netns_alive(path: &Path) -> Result<bool> {
    use nix::errno::Errno;
    use nix::sys::statfs::{NSFS_MAGIC, statfs};
    match statfs(path) {
        Ok(fs) => Ok(fs.filesystem_type() == NSFS_MAGIC),
        Err(Errno::ENOENT | Errno::ENOTDIR) => Ok(false),
        Err(e) => Err(e).with_context(|| format!("failed to statfs netns {}", path.display())),
    }
}

/// The file names in the cache's results directory.
fn cache_names(results: &Path) -> Result<BTreeSet<String>> {
    let dir = match std::fs::read_dir(results) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeSet::new()),
        Err(e) => return Err(e).with_context(|| format!("failed to read {}", results.display())),
    };
    let mut out = BTreeSet::new();
    for e in dir {
        let e = e.with_context(|| format!("failed to read {}", results.display()))?;
        out.insert(e.file_name().to_string_lossy().into_owned());
    }
    Ok(out)
}

/// Whether some cache entry (readable or not) names the attachment; a legacy
/// reservation without ifname is named by any entry of its container.
fn names(cache_files: &BTreeSet<String>, network: &str, id: &str, ifname: &str) -> bool {
    if ifname.is_empty() {
        let prefix = format!("{network}-{id}-");
        cache_files.iter().any(|f| f.starts_with(&prefix))
    } else {
        cache_files.contains(&format!("{network}-{id}-{ifname}"))
    }
}

/// (dataDir, network) of every plugin of the conf dir whose ipam is host-local.
fn host_local_stores(conf_dir: &Path) -> Result<BTreeSet<(PathBuf, String)>> {
    let field = |m: &serde_json::Map<String, Value>, k: &str| -> Option<Value> {
        crate::cni::json::map_field(m, k).cloned()
    };
    let mut out = BTreeSet::new();
    for list in conf::load_all(conf_dir)? {
        if !crate::cni::env::is_valid_name(&list.name) {
            continue;
        }
        for p in &list.plugins {
            let Some(Value::Object(ipam)) = field(&p.raw, "ipam") else {
                continue;
            };
            if field(&ipam, "type").as_ref().and_then(Value::as_str) != Some("host-local") {
                continue;
            }
            let data_dir = match field(&ipam, "dataDir") {
                Some(Value::String(d)) if !d.is_empty() => d,
                _ => DEFAULT_DATA_DIR.to_string(),
            };
            out.insert((PathBuf::from(data_dir), list.name.clone()));
        }
    }
    Ok(out)
}

fn fix(s: &Settings, f: &mut Finding) -> Result<()> {
    match f.kind {
        Kind::Cache => fix_cache(s, f),
        Kind::Ipam => fix_ipam(s, f),
    }
}

/// libcni's DEL from a cache entry, without the gone netns: plugins release
/// their state (IPs, masquerading, port mappings); the entry goes on success.
fn fix_cache(s: &Settings, f: &mut Finding) -> Result<()> {
    let Some(entry) = &f.entry else {
        return Ok(());
    };
    let list = conf::list_from_bytes(&entry.config, Path::new(&f.object))?;
    let rt = RuntimeConf::of_cached(entry, "");
    s.runtime.del(&list, &rt)?;
    f.fixed = true;
    Ok(())
}

/// Releases the reservation under the store's lock, unless a cache entry
/// names its owner by now (an ADD that finished meanwhile).
fn fix_ipam(s: &Settings, f: &mut Finding) -> Result<()> {
    let store = DiskStore::open(&f.data_dir, &f.network)?;
    let named = cache_names(&s.runtime.cache.dir.join("results"))?;
    if names(&named, &f.network, &f.container_id, &f.ifname) {
        return Ok(());
    }
    store.release_by_id(&f.container_id, &f.ifname)?;
    f.fixed = match std::fs::symlink_metadata(&f.object) {
        Ok(_) => false,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(e).with_context(|| format!("failed to stat {}", f.object)),
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(kind: Kind, fixed: bool) -> Finding {
        Finding {
            kind,
            network: "net".into(),
            container_id: "c1".into(),
            ifname: "eth0".into(),
            object: "/x/10.0.0.2".into(),
            action: IPAM_ACTION,
            fixed,
            entry: None,
            data_dir: PathBuf::from("/x"),
        }
    }

    #[test]
    fn findings_as_json() {
        assert_eq!(
            serde_json::from_str::<Value>(&to_json(&[])).expect("json"),
            serde_json::json!({"findings": []})
        );
        let v: Value = serde_json::from_str(&to_json(&[finding(Kind::Ipam, true)])).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"findings": [{
                "kind": "ipam", "network": "net", "containerId": "c1", "ifname": "eth0",
                "object": "/x/10.0.0.2", "action": "remove reservation", "fixed": true
            }]})
        );
    }

    #[test]
    fn the_table_aligns_columns() {
        assert_eq!(table(&[]), "no stale CNI state found");
        let mut long = finding(Kind::Cache, false);
        long.network = "a-longer-net".into();
        long.action = CACHE_ACTION;
        let t = table(&[finding(Kind::Ipam, true), long]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0].starts_with("KIND   NETWORK       CONTAINER"),
            "{t}"
        );
        assert!(lines[1].starts_with("ipam   net           c1"), "{t}");
        assert!(lines[1].ends_with("remove reservation          yes"), "{t}");
        assert!(lines[2].ends_with("DEL with the cached config  no"), "{t}");
    }

    #[test]
    fn a_cache_entry_names_its_reservation() {
        let files: BTreeSet<String> = ["n-c1-eth0".to_string()].into();
        assert!(names(&files, "n", "c1", "eth0"));
        assert!(!names(&files, "n", "c1", "eth1"));
        assert!(names(&files, "n", "c1", ""), "legacy: any ifname");
        assert!(!names(&files, "n", "c", ""));
    }

    #[test]
    fn liveness_is_nsfs() {
        assert!(netns_alive(Path::new("/proc/self/ns/net")).expect("statfs"));
        assert!(!netns_alive(Path::new("/proc/self/status")).expect("statfs"));
        assert!(!netns_alive(Path::new("/nonexistent/netns")).expect("statfs"));
    }
}
