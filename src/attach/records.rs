//! What a chained netfilter plugin (firewall, portmap) records of each
//! attachment at ADD, so that GC, whose input names only (containerID,
//! ifname), can find that attachment's rules: one root-only file per
//! attachment in the plugin's `dataDir` (named by attachment and network), holding
//! the network (GC tells its own files apart by it) and the addresses the
//! rules name. DEL removes the file.

use crate::cni::config::Attachment;
use crate::cni::{CniResult, Error, Invocation};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Largest record read.
const MAX_RECORD: u64 = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub network: String,
    #[serde(rename = "containerID")]
    pub container_id: String,
    pub ifname: String,
    #[serde(default)]
    pub addresses: Vec<IpNet>,
    /// The handles of the attachment's rules where the plugin writes them
    /// over netlink and finds them by handle (firewall on iptables-nft):
    /// each address with its rules' handles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handles: Vec<(std::net::IpAddr, [u64; 2])>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Keys {
    data_dir: String,
}

/// The plugin's `dataDir` (`default` when unset).
pub fn data_dir(inv: &Invocation, default: &str) -> CniResult<PathBuf> {
    let k: Keys = inv.conf.plugin_keys()?;
    crate::cni::config::absolute_path(Some(&k.data_dir), default, "dataDir")
}

fn path(dir: &Path, inv: &Invocation) -> PathBuf {
    record_path(dir, inv.conf.name(), &inv.env.container_id, &inv.env.ifname)
}

/// `<containerID>@<ifname>@<network hash>.json` (a long ID as its token,
/// `files::state_name`): networks that share a `dataDir` never overwrite each
/// other's record of the same container and interface (the network name
/// itself is not checked to be a file name).
fn record_path(dir: &Path, network: &str, container_id: &str, ifname: &str) -> PathBuf {
    let net = network_hash(network);
    dir.join(crate::files::state_name(
        "",
        container_id,
        &format!("@{ifname}@{net}.json"),
    ))
}

/// (containerID or its token, ifname, network hash) of a record's file name
/// (older records have no network hash). The record itself names the whole ID.
pub fn record_owner(name: &str) -> Option<(&str, &str, Option<&str>)> {
    let mut parts = name.strip_suffix(".json")?.split('@');
    let (id, ifname, net) = (parts.next()?, parts.next()?, parts.next());
    let valid = crate::cni::env::is_id_or_token(id) && !ifname.is_empty();
    (valid && parts.next().is_none()).then_some((id, ifname, net))
}

/// The part of a record's file name that names its network.
pub fn network_hash(network: &str) -> String {
    crate::digest::sha512_hex(network.as_bytes())[..16].to_string()
}

/// Records this invocation's attachment with `addresses`.
pub fn write(dir: &Path, inv: &Invocation, addresses: &[IpNet]) -> CniResult<()> {
    write_handles(dir, inv, addresses, &[])
}

/// [`write`], with the handles of the attachment's rules.
pub fn write_handles(
    dir: &Path,
    inv: &Invocation,
    addresses: &[IpNet],
    handles: &[(std::net::IpAddr, [u64; 2])],
) -> CniResult<()> {
    let record = Record {
        network: inv.conf.name().to_string(),
        container_id: inv.env.container_id.clone(),
        ifname: inv.env.ifname.clone(),
        addresses: addresses.to_vec(),
        handles: handles.to_vec(),
    };
    let bytes = serde_json::to_vec(&record).map_err(|e| {
        Error::caused_by(crate::cni::Code::Internal, "failed to encode the record", e)
    })?;
    crate::files::write_private_atomic(&path(dir, inv), &bytes)
        .map_err(|e| Error::from(e).context("failed to record the attachment"))
}

/// Whether this invocation's attachment is recorded (one that cannot be
/// looked at counts as recorded).
pub fn exists(dir: &Path, inv: &Invocation) -> bool {
    !matches!(std::fs::symlink_metadata(path(dir, inv)), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// This invocation's record: Ok(None) when there is none; an error when it
/// cannot be read or decoded.
pub fn read(dir: &Path, inv: &Invocation) -> CniResult<Option<Record>> {
    let path = path(dir, inv);
    match crate::files::read_state_string_limited(&path, MAX_RECORD) {
        Ok(text) => crate::cni::json::from_str::<Record>(&text)
            .map(Some)
            .map_err(|e| Error::new(crate::cni::Code::Io, format!("cannot use the record: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::from(e).context("failed to read the attachment's record")),
    }
}

/// Removes this invocation's record; none is fine.
pub fn remove(dir: &Path, inv: &Invocation) -> CniResult<()> {
    Ok(crate::files::remove_state(&path(dir, inv))?)
}

/// Every record of `dir` with its path. One that cannot be read or decoded
/// fails the whole read: it may name a live attachment whose addresses GC
/// must keep, so GC removes nothing rather than guess.
fn all(dir: &Path, plugin: &str) -> CniResult<Vec<(PathBuf, Record)>> {
    let mut out = Vec::new();
    for path in crate::files::files_with(dir, &["json"])? {
        let unusable = |why: String| {
            Error::new(
                crate::cni::Code::Io,
                format!("{plugin}: cannot use the record {}: {why}", path.display()),
            )
        };
        let text = crate::files::read_state_string_limited(&path, MAX_RECORD)
            .map_err(|e| unusable(e.to_string()))?;
        let r = crate::cni::json::from_str::<Record>(&text).map_err(|e| unusable(e.to_string()))?;
        out.push((path, r));
    }
    Ok(out)
}

/// The records of a GC: `stale`, this network's attachments not in `valid`
/// (an entry without ifname keeps all of its container's), and `live`, every
/// other record (of any network).
pub struct Split {
    pub stale: Vec<(PathBuf, Record)>,
    pub live: Vec<Record>,
}

impl Split {
    pub fn read(dir: &Path, plugin: &str, network: &str, valid: &[Attachment]) -> CniResult<Split> {
        let mut split = Split {
            stale: Vec::new(),
            live: Vec::new(),
        };
        for (path, r) in all(dir, plugin)? {
            let kept = valid.iter().any(|a| {
                a.container_id == r.container_id && (a.ifname.is_empty() || a.ifname == r.ifname)
            });
            if r.network == network && !kept {
                split.stale.push((path, r));
            } else {
                split.live.push(r);
            }
        }
        Ok(split)
    }

    /// Whether a live record shares `container_id` (rules that name only the
    /// container could be that attachment's too).
    pub fn container_live(&self, container_id: &str) -> bool {
        self.live.iter().any(|r| r.container_id == container_id)
    }

    /// `addresses` without those a live record names (an address freed and
    /// given to another attachment has that attachment's rules now).
    pub fn not_live(&self, addresses: &[IpNet]) -> Vec<IpNet> {
        addresses
            .iter()
            .filter(|a| {
                !self
                    .live
                    .iter()
                    .any(|r| r.addresses.iter().any(|l| l.addr() == a.addr()))
            })
            .copied()
            .collect()
    }

    /// Removes the stale records (after their rules).
    pub fn remove_stale(&self) -> CniResult<()> {
        for (path, _) in &self.stale {
            crate::files::remove_state(path)?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
