//! The addresses every network namespace on the node holds, but the doctor's
//! own: what processes and threads (/proc/<pid>/task/<tid>/ns/net) and bind mounts (/run/netns,
//! /var/run/netns) keep alive. Evidence that an address is in use, whoever
//! made the namespace and whether or not a cache entry names it.

use crate::netlink::Socket;
use crate::netlink::addr::Family;
use crate::netns::NetNs;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

/// Every address found, and whether every namespace could be read: one that
/// goes away meanwhile holds nothing, but one that cannot be entered (said on
/// stderr) may hold any address.
pub fn addresses() -> (BTreeSet<IpAddr>, bool) {
    let mut out = BTreeSet::new();
    let mut complete = true;
    let own = std::fs::metadata("/proc/thread-self/ns/net")
        .map(|m| (m.dev(), m.ino()))
        .ok();
    let mut seen = BTreeSet::new();
    for path in candidates() {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let id = (meta.dev(), meta.ino());
        if Some(id) == own || !seen.insert(id) {
            continue;
        }
        match addresses_in(&path) {
            Ok(ips) => out.extend(ips),
            // A task that ended meanwhile took its namespace reference with it.
            Err(_) if path.starts_with("/proc") && !path.exists() => {}
            Err(e) => {
                eprintln!(
                    "cnitool doctor: cannot read the addresses of {}, every address counts as \
                     in use: {e:#}",
                    path.display()
                );
                complete = false;
            }
        }
    }
    (out, complete)
}

/// Where the node's namespaces are: every task's and every bind mount's.
pub fn candidates() -> Vec<PathBuf> {
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

pub fn addresses_in(path: &std::path::Path) -> anyhow::Result<Vec<IpAddr>> {
    let ns = match NetNs::open(path) {
        Ok(ns) => ns,
        Err(crate::netns::Error::NotFound(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    // Only a namespace: a file of the bind-mount directory may be anything.
    if !super::node::netns_alive(path)? {
        return Ok(Vec::new());
    }
    let ips = ns.run(|| -> anyhow::Result<Vec<IpAddr>> {
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
    })??;
    Ok(ips)
}
