//! The node's network namespaces, read in one pass: every one a task (each
//! thread may have its own), a bind mount (/run/netns, /var/run/netns) or a
//! cache entry holds, but the doctor's own; with the ID this namespace gives
//! each and the addresses each holds. Evidence of life and of use, whoever
//! made the namespace and whether or not a cache entry names it.

use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netns::{NetNs, vantage};
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One namespace: where it was found, its ID here, its addresses.
pub struct Space {
    pub path: PathBuf,
    pub nsid: Option<i32>,
    pub ips: Vec<IpAddr>,
}

/// Every namespace read; incomplete when one could not be (said on stderr):
/// it may hold any address and any veth's peer.
pub struct Census {
    pub spaces: Vec<Space>,
    pub complete: bool,
}

impl Census {
    /// The namespaces of the node and those at `paths`; their addresses too
    /// when `addresses`. The ID of every veth peer's namespace is assigned
    /// first (a link dump does that), so a namespace read here that has no
    /// ID has no veth here.
    pub fn read(paths: impl IntoIterator<Item = PathBuf>, addresses: bool) -> Census {
        let mut census = Census {
            spaces: Vec::new(),
            complete: true,
        };
        let mut sock = match Socket::open().and_then(|mut s| s.links().map(|_| s)) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("cnitool doctor: cannot read the host's links: {e}");
                census.complete = false;
                return census;
            }
        };
        let own = std::fs::metadata("/proc/thread-self/ns/net")
            .map(|m| (m.dev(), m.ino()))
            .ok();
        let mut seen = BTreeSet::new();
        for path in paths.into_iter().chain(candidates()) {
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let id = (meta.dev(), meta.ino());
            if Some(id) == own || !seen.insert(id) {
                continue;
            }
            match read(&mut sock, &path, addresses) {
                Ok(Some(space)) => census.spaces.push(space),
                Ok(None) => {}
                // A task that ended meanwhile took its namespace reference with it.
                Err(_) if path.starts_with("/proc") && !path.exists() => {}
                Err(e) => {
                    eprintln!(
                        "cnitool doctor: cannot read the namespace {}, so every address counts \
                         as in use and no veth or entry without netns is judged: {e:#}",
                        path.display()
                    );
                    census.complete = false;
                }
            }
        }
        census
    }

    /// Every address the namespaces hold.
    pub fn ips(&self) -> BTreeSet<IpAddr> {
        self.spaces
            .iter()
            .flat_map(|s| s.ips.iter().copied())
            .collect()
    }
}

/// Where the node's namespaces are: every task's and every bind mount's.
fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(procs) = std::fs::read_dir("/proc") {
        for p in procs.flatten() {
            let name = p.file_name();
            if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            // A thread may be in a namespace of its own.
            match std::fs::read_dir(p.path().join("task")) {
                Ok(tasks) => out.extend(tasks.flatten().map(|t| t.path().join("ns/net"))),
                Err(_) => out.push(p.path().join("ns/net")),
            }
        }
    }
    for dir in ["/run/netns", "/var/run/netns"] {
        if let Ok(entries) = std::fs::read_dir(dir) {
            out.extend(entries.flatten().map(|e| e.path()));
        }
    }
    out
}

/// The namespace at `path`; None when it is gone or no namespace (a file of
/// a bind-mount directory may be anything).
fn read(sock: &mut Socket, path: &Path, addresses: bool) -> anyhow::Result<Option<Space>> {
    let ns = match NetNs::open(path) {
        Ok(ns) => ns,
        Err(crate::netns::Error::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if !vantage::is_namespace(path)? {
        return Ok(None);
    }
    let nsid = sock.netns_id(ns.fd())?;
    let ips = if addresses {
        ns.run(|| -> anyhow::Result<Vec<IpAddr>> {
            let mut sock = Socket::open()?;
            let mut ips = Vec::new();
            for family in [Family::V4, Family::V6] {
                ips.extend(
                    sock.all_addresses(family)?
                        .into_iter()
                        .map(|a| a.addr.addr()),
                );
            }
            Ok(ips)
        })??
    } else {
        Vec::new()
    };
    Ok(Some(Space {
        path: path.to_path_buf(),
        nsid,
        ips,
    }))
}
