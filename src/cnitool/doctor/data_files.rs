//! What plugins keep in their `dataDir`s, of attachments that are dead or
//! that no cache entry names.
//!
//! `tuning`: tuning's backups (`<dataDir>/<containerID>_<ifname>.json`). Ours name their
//! network; the reference's name none, so any attachment of that container
//! and interface owns those. Only files that are tuning's own backups are
//! judged (a `dataDir` may hold anyone's files). A stale backup cannot be
//! restored (its link went with its namespace): it is only removed.
//!
//! `flannel`: flannel's saved delegate configs (`<dataDir>/<containerID>`,
//! naming their network), owned by any attachment of that container on that
//! network: a dead one's DEL removes it, one no cache entry names is removed
//! once old enough.
//!
//! `record`: what firewall, portmap and bandwidth record of each attachment
//! (`<containerID>@<ifname>[@<network hash>].json`). The record only
//! serves that attachment's DEL and GC: once its rules and links are gone it
//! is removed.
//!
//! A long container ID is its token in these names (`files::state_name`):
//! records and tuning's backups then hold the whole ID; flannel's configs
//! are matched by the token of each cached attachment's ID.

use super::Finding;
use super::engine::{self, Label, Named, Object, Owner};
use super::node::{Node, entries};
use crate::plugins::flannel::saved_network;
use crate::plugins::tuning::backup::{backup_container, backup_file, backup_network, is_backup};
use anyhow::{Context, Result};
use std::path::Path;

/// The kinds of finding here: what each `entry::Files` is judged as.
pub const TUNING: &str = "tuning";
pub const FLANNEL: &str = "flannel";
pub const RECORD: &str = "record";

pub fn find_tuning(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut objects = Vec::new();
    for dir in node.data_dirs(TUNING) {
        let files = crate::files::files_with(&dir, &["json"])
            .with_context(|| format!("failed to read {}", dir.display()))?;
        objects.extend(files.iter().filter_map(|path| tuning_backup(node, path)));
    }
    engine::findings(node, objects, out)
}

fn tuning_backup(node: &Node, path: &Path) -> Option<Object> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    if !is_backup(path) {
        return None;
    }
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    let (id, ifname) = stem.rsplit_once('_').unwrap_or((stem, ""));
    let id = backup_container(path).unwrap_or_else(|| node.container_of(id));
    let network = backup_network(path);
    // The attachments this file could belong to (a `_` in an ID can make two
    // names alike: any of them owns it).
    let candidates = (0..node.attachments.len())
        .filter(|&i| {
            let e = &node.attachments[i].entry;
            backup_file(&e.container_id, &e.ifname) == name
                && network.as_ref().is_none_or(|n| *n == e.network_name)
        })
        .collect();
    let named = Named::new(network.as_deref().unwrap_or_default(), &id, ifname);
    let owner = Owner { candidates, named };
    Some(Object::file(
        TUNING,
        path.to_path_buf(),
        owner,
        "remove backup",
    ))
}

pub fn find_flannel(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut objects = Vec::new();
    for dir in node.data_dirs(FLANNEL) {
        for entry in entries(&dir)? {
            let id = entry.file_name().to_string_lossy().into_owned();
            // Temporary files of a write in progress start with a dot.
            if id.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            let Some(network) = saved_network(&path) else {
                continue;
            };
            let owner = Owner::of(node, Named::new(&network, &node.container_of(&id), ""));
            objects.push(Object::file(
                FLANNEL,
                path,
                owner,
                "remove saved delegate config",
            ));
        }
    }
    engine::findings(node, objects, out)
}

pub fn find_records(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut objects = Vec::new();
    for dir in node.data_dirs(RECORD) {
        let files = crate::files::files_with(&dir, &["json"])
            .with_context(|| format!("failed to read {}", dir.display()))?;
        objects.extend(files.iter().filter_map(|path| record(node, path, out)));
    }
    engine::findings(node, objects, out)
}

fn record(node: &Node, path: &Path, found: &[Finding]) -> Option<Object> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let (id, ifname, net) = crate::attach::records::record_owner(&name)?;
    let recorded = read(path);
    // A long ID's token: the record holds the whole ID.
    let id =
        if crate::files::is_id_token(id) && crate::files::id_token(&recorded.container_id) == id {
            recorded.container_id.clone()
        } else {
            node.container_of(id)
        };
    let candidates: Vec<usize> = (0..node.attachments.len())
        .filter(|&i| {
            let e = &node.attachments[i].entry;
            e.container_id == id
                && e.ifname == ifname
                && net.is_none_or(|h| crate::attach::records::network_hash(&e.network_name) == h)
        })
        .collect();
    let network = match candidates.first() {
        Some(&i) => node.attachments[i].entry.network_name.clone(),
        None => recorded.network.clone(),
    };
    let named = Named::new(&network, &id, ifname);
    let owner = Owner { candidates, named };
    Some(Object {
        label_when_dead: Label::Object,
        addresses: recorded.addresses.iter().map(|a| a.addr()).collect(),
        // The host veth bandwidth shaped, while it lives.
        busy: host_veth_lives(&recorded, found),
        ..Object::file(RECORD, path.to_path_buf(), owner, "remove record")
    })
}

/// What the three plugins' records hold that says their attachment lives.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Recorded {
    network: String,
    #[serde(rename = "containerID")]
    container_id: String,
    addresses: Vec<ipnet::IpNet>,
    host_veth: String,
    host_index: u32,
}

/// The record's content; an unreadable one records nothing.
fn read(path: &Path) -> Recorded {
    crate::files::read_state_limited(path, 64 << 10)
        .ok()
        .and_then(|b| crate::cni::json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// A host veth that is a `veth` finding itself (listed before this kind)
/// goes with the fix, so it is no evidence.
fn host_veth_lives(r: &Recorded, found: &[Finding]) -> bool {
    let doomed = format!("link {}", r.host_veth);
    r.host_index != 0
        && !found
            .iter()
            .any(|f| f.kind == super::links::VETH && f.object == doomed)
        && crate::netlink::Socket::open()
            .and_then(|mut s| s.link_by_index(r.host_index))
            .is_ok_and(|l| l.name == r.host_veth)
}
