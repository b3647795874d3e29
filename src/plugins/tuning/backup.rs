//! The backup of a link's original attributes, in the reference's format
//! (`<dataDir>/<containerID>_<ifname>.json`): written at ADD before anything
//! changes, restored and removed at DEL, and found stale at GC and by the
//! doctor.

use super::Conf;
use crate::cni::config::Attachment;
use crate::cni::{CniResult, Code, Error, Invocation};
use crate::netlink::Socket;
use crate::netlink::link::{Change, Link, parse_mac};
use crate::quote::quoted;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The original attributes, in the reference's backup format, plus the
/// network's name (which the reference's decoder ignores): the file name holds
/// only the container ID and interface, and GC must tell its network's backups
/// from another network's sharing the directory. A backup whose name holds the
/// token of a long ID (`files::state_name`) also names its attachment.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Backup {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    mac: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    promisc: Option<bool>,
    #[serde(default, skip_serializing_if = "is_zero")]
    mtu: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allmulti: Option<bool>,
    #[serde(rename = "txQLen", default, skip_serializing_if = "Option::is_none")]
    tx_qlen: Option<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    network: String,
    #[serde(
        rename = "containerID",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    container_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    ifname: String,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

pub(super) fn backup_name(inv: &Invocation) -> String {
    backup_file(&inv.env.container_id, &inv.env.ifname)
}

/// `<containerID>_<ifname>.json`, the reference's name (`files::state_name`).
pub(crate) fn backup_file(container_id: &str, ifname: &str) -> String {
    crate::files::state_name("", container_id, &format!("_{ifname}.json"))
}

/// Whether `name` is a backup of `container_id` on some interface: named
/// `<containerID>_` or by the ID's token, or saying so inside (`backup`).
fn of_container(name: &str, backup: Option<&Backup>, container_id: &str) -> bool {
    name.starts_with(&format!("{container_id}_"))
        || name.starts_with(&format!("{}_", crate::files::id_token(container_id)))
        || backup.is_some_and(|b| b.container_id == container_id)
}

/// The backups in `dir` that GC removes: written for `network` (said in the
/// backup; one without a network, as the reference writes, is never taken)
/// and whose file name is no valid attachment's. An attachment without an
/// interface keeps every backup of its container. A `_` in an ID can make two
/// attachments' names alike: such a backup is kept, never wrongly taken.
/// Stale backups cannot be restored (their link went with its namespace).
pub(super) fn stale_backups(dir: &Path, network: &str, valid: &[Attachment]) -> Vec<PathBuf> {
    let names = crate::files::files_with(dir, &["json"]).unwrap_or_default();
    names
        .into_iter()
        .filter(|path| {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            let backup = read_backup(path);
            !valid.iter().any(|a| match a.ifname.as_str() {
                "" => of_container(&name, backup.as_ref(), &a.container_id),
                ifname => name == backup_file(&a.container_id, ifname),
            })
        })
        .filter(|path| backup_network(path).as_deref() == Some(network))
        .collect()
}

/// The network a backup names; None when it names none or cannot be read
/// (a symlink is never followed).
pub(crate) fn backup_network(path: &Path) -> Option<String> {
    let backup = read_backup(path)?;
    (!backup.network.is_empty()).then_some(backup.network)
}

/// The whole container ID a backup under a bounded name holds, when its name
/// is that ID's (the name alone gives only the token).
pub(crate) fn backup_container(path: &Path) -> Option<String> {
    let backup = read_backup(path)?;
    let name = path.file_name()?.to_str()?;
    let id = backup.container_id;
    (!id.is_empty() && name == backup_file(&id, &backup.ifname)).then_some(id)
}

/// A backup's content; None when it cannot be read or decoded.
fn read_backup(path: &Path) -> Option<Backup> {
    let bytes = match crate::files::read_state_limited(path, crate::files::MAX_FILE) {
        Ok(bytes) => bytes,
        Err(e) => {
            if e.kind() != std::io::ErrorKind::NotFound {
                eprintln!("tuning: GC leaves {}: {e}", path.display());
            }
            return None;
        }
    };
    crate::cni::json::from_slice::<Backup>(&bytes).ok()
}

/// Whether a file is a backup tuning (ours or the reference's) wrote: named
/// `<containerID>_<ifname>.json` and a JSON object of backup keys only. Any
/// other file in a `dataDir` (an admin's notes) is nobody's backup.
pub(crate) fn is_backup(path: &Path) -> bool {
    const KEYS: [&str; 8] = [
        "mac",
        "promisc",
        "mtu",
        "allmulti",
        "txQLen",
        "network",
        "containerID",
        "ifname",
    ];
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".json"))
        .and_then(|stem| stem.rsplit_once('_'))
        .is_some_and(|(id, ifname)| {
            crate::cni::env::is_id_or_token(id) && crate::cni::env::validate_ifname(ifname).is_ok()
        });
    let Ok(bytes) = crate::files::read_state_limited(path, 64 << 10) else {
        return false;
    };
    let own_keys = match crate::cni::json::from_slice::<serde_json::Value>(&bytes) {
        Ok(serde_json::Value::Object(m)) => m
            .keys()
            .all(|k| KEYS.iter().any(|known| known.eq_ignore_ascii_case(k))),
        _ => false,
    };
    named && own_keys && crate::cni::json::from_slice::<Backup>(&bytes).is_ok()
}

/// Saves the attributes about to change (`<dataDir>/<id>_<ifname>.json`, 1-space JSON).
pub(super) fn write_backup(conf: &Conf, inv: &Invocation, original: &Link) -> CniResult<()> {
    let mut backup = Backup {
        mac: if conf.mac.is_some() {
            original.mac_string()
        } else {
            String::new()
        },
        promisc: conf.promisc.then(|| original.is_promisc()),
        mtu: if conf.mtu.is_some() { original.mtu } else { 0 },
        allmulti: conf.allmulti.map(|_| original.is_allmulti()),
        tx_qlen: conf.tx_qlen.map(|_| original.txqlen),
        network: inv.conf.name().to_string(),
        ..Backup::default()
    };
    let name = backup_name(inv);
    if name != format!("{}_{}.json", inv.env.container_id, inv.env.ifname) {
        backup.container_id = inv.env.container_id.clone();
        backup.ifname = inv.env.ifname.clone();
    }
    let path = conf.data_dir.join(name);
    // An earlier ADD's backup holds the true originals: keep it.
    if path.exists() {
        return Ok(());
    }
    let mut text = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut text, formatter);
    backup
        .serialize(&mut ser)
        .map_err(|e| Error::caused_by(Code::Internal, "failed to encode backup", e))?;
    crate::files::write_private_atomic(&path, &text).map_err(Error::from)
}

/// Tries every backed-up attribute (in the reference's order); the error
/// names each one that failed.
pub(super) fn restore(ifname: &str, b: &Backup) -> CniResult<()> {
    let mut sock = Socket::open()?;
    let link = match sock.link_by_name(ifname) {
        Ok(link) => link,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut changes = Vec::new();
    if b.mtu > 0 {
        changes.push(("MTU", Change::Mtu(b.mtu)));
    }
    match parse_mac(&b.mac) {
        Some(mac) => changes.push(("MAC address", Change::Mac(mac))),
        None if !b.mac.is_empty() => eprintln!("tuning: backed-up MAC {} skipped", quoted(&b.mac)),
        None => {}
    }
    if let Some(p) = b.promisc {
        changes.push(("promiscuous mode", Change::Promisc(p)));
    }
    if let Some(a) = b.allmulti {
        changes.push(("all-multicast mode", Change::AllMulti(a)));
    }
    if let Some(q) = b.tx_qlen {
        changes.push(("transmit queue length", Change::TxQueueLen(q)));
    }
    let mut failed = Vec::new();
    let mut first = None;
    for (what, change) in changes {
        if let Err(e) = sock.set_link(&link, change) {
            failed.push(format!("failed to restore {what}: {e}"));
            first.get_or_insert(e);
        }
    }
    match first {
        None => Ok(()),
        Some(cause) => Err(Error::internal(failed.join("; ")).with_source(cause)),
    }
}

#[cfg(test)]
#[path = "backup_tests.rs"]
mod tests;
