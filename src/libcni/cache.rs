//! libcni's result cache: `<cacheDir>/results/<net>-<containerID>-<ifname>`,
//! one compact JSON object of kind `cniCacheV1`, so runtimes can CHECK and DEL
//! what the other one added.

use crate::cni::json;
use crate::cni::result::go_escape;
use crate::cni::{CniResult, Code, Error};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub const DEFAULT_CACHE_DIR: &str = "/var/lib/cni";
pub const KIND: &str = "cniCacheV1";

/// One cache entry, fields in libcni's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    #[serde(default)]
    pub kind: String,
    #[serde(rename = "containerId", default)]
    pub container_id: String,
    /// The network's config bytes (base64 on disk, as Go encodes `[]byte`).
    #[serde(with = "b64", default)]
    pub config: Vec<u8>,
    #[serde(rename = "ifName", default)]
    pub ifname: String,
    #[serde(rename = "networkName", default)]
    pub network_name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub netns: String,
    #[serde(rename = "cniArgs", default, skip_serializing_if = "Vec::is_empty")]
    pub cni_args: Vec<[String; 2]>,
    #[serde(
        rename = "capabilityArgs",
        default,
        skip_serializing_if = "Map::is_empty"
    )]
    pub capability_args: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

impl Entry {
    /// The cached result's addresses with their prefixes (`ips[].address`,
    /// or 0.2.0's `ip4.ip`/`ip6.ip`).
    pub fn nets(&self) -> Vec<ipnet::IpNet> {
        let Some(result) = &self.result else {
            return Vec::new();
        };
        let ips = result.get("ips").and_then(Value::as_array);
        let listed = ips.into_iter().flatten().map(|ip| ip.get("address"));
        let old = ["ip4", "ip6"].map(|k| result.get(k).and_then(|v| v.get("ip")));
        listed
            .chain(old)
            .filter_map(|v| v?.as_str()?.parse().ok())
            .collect()
    }

    /// The cached result's addresses.
    pub fn ips(&self) -> Vec<std::net::IpAddr> {
        self.nets().iter().map(ipnet::IpNet::addr).collect()
    }

    /// The cached result's interfaces outside any sandbox (a bridge, a host
    /// veth), with their MAC when it is given.
    pub fn host_interfaces(&self) -> Vec<(String, Option<[u8; 6]>)> {
        let ifaces = self.result.as_ref().and_then(|r| r.get("interfaces"));
        let ifaces = ifaces.and_then(Value::as_array).into_iter().flatten();
        ifaces
            .filter(|i| {
                i.get("sandbox")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            })
            .filter_map(|i| {
                let mac = i.get("mac").and_then(Value::as_str).and_then(parse_mac);
                Some((i.get("name")?.as_str()?.to_string(), mac))
            })
            .collect()
    }
}

fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let bytes: Option<Vec<u8>> = text
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).ok())
        .collect();
    bytes?.try_into().ok()
}

mod b64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&crate::digest::base64_encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        crate::digest::base64_decode(&text)
            .ok_or_else(|| serde::de::Error::custom("config is not base64"))
    }
}

/// What a read found.
#[derive(Debug, Clone, PartialEq)]
pub enum Cached {
    Entry(Box<Entry>),
    /// Pre-cniCacheV1 files hold a bare result.
    LegacyResult(Value),
}

/// The cache directory tree.
#[derive(Debug, Clone)]
pub struct Cache {
    pub dir: PathBuf,
}

impl Cache {
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// The file of one attachment: libcni's name while it fits NAME_MAX, a
    /// long ID as its token past it (`files::state_name`; the entry names the
    /// whole ID). The names were validated (no `/`, no `..`).
    pub fn path(&self, network: &str, container_id: &str, ifname: &str) -> PathBuf {
        self.dir.join("results").join(crate::files::state_name(
            &format!("{network}-"),
            container_id,
            &format!("-{ifname}"),
        ))
    }

    pub fn write(&self, entry: &Entry) -> CniResult<()> {
        let path = self.path(&entry.network_name, &entry.container_id, &entry.ifname);
        let json = serde_json::to_string(entry)
            .map_err(|e| Error::caused_by(Code::Internal, "failed to encode cache entry", e))?;
        crate::files::write_private_atomic(&path, go_escape(&json).as_bytes())
            .map_err(|e| Error::new(crate::cni::Code::Io, format!("failed to write cache: {e}")))
    }

    /// The entry of an attachment: None when there is no file.
    pub fn read(
        &self,
        network: &str,
        container_id: &str,
        ifname: &str,
    ) -> CniResult<Option<Cached>> {
        let path = self.path(network, container_id, ifname);
        let bytes = match crate::files::read_state_limited(&path, crate::files::MAX_FILE) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error("read", &path, e)),
        };
        parse(&bytes).map(Some).map_err(|e| {
            Error::caused_by(
                Code::Decode,
                format!("failed to parse cache file {}", path.display()),
                e,
            )
        })
    }

    pub fn remove(&self, network: &str, container_id: &str, ifname: &str) -> CniResult<()> {
        let path = self.path(network, container_id, ifname);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error("remove", &path, e)),
            _ => Ok(()),
        }
    }

    /// Every cniCacheV1 entry of `network`, sorted by file name.
    pub fn entries_of(&self, network: &str) -> CniResult<Vec<Entry>> {
        Ok(self
            .entries()?
            .into_iter()
            .filter(|e| e.network_name == network)
            .collect())
    }

    /// Every cniCacheV1 entry that names an interface, sorted by file name.
    pub fn entries(&self) -> CniResult<Vec<Entry>> {
        Ok(self.files()?.into_iter().map(|(_, e)| e).collect())
    }

    /// As `entries`, each with its file. Unreadable or foreign files are
    /// left out (`scan` lists them).
    pub fn files(&self) -> CniResult<Vec<(PathBuf, Entry)>> {
        Ok(self
            .scan()?
            .into_iter()
            .filter_map(|f| match f {
                Scanned::Entry(path, e) => Some((path, *e)),
                Scanned::Unreadable(..) => None,
            })
            .collect())
    }

    /// Every file of the results directory, sorted by name: the entries that
    /// name an interface, and those that cannot be read as one (cut short by
    /// a crash, another format) with why. A dot file is a write in progress
    /// (or one a crash cut short), not an entry.
    pub fn scan(&self) -> CniResult<Vec<Scanned>> {
        let results = self.dir.join("results");
        let dir = match std::fs::read_dir(&results) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("read", &results, e)),
        };
        let mut paths = Vec::new();
        for e in dir {
            let e = e.map_err(|e| io_error("read", &results, e))?;
            if !e.file_name().to_string_lossy().starts_with('.') {
                paths.push(e.path());
            }
        }
        paths.sort();
        let mut out = Vec::new();
        for path in paths {
            let bytes = match crate::files::read_state_limited(&path, crate::files::MAX_FILE) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    out.push(Scanned::Unreadable(path, e.to_string()));
                    continue;
                }
            };
            match parse(&bytes) {
                Ok(Cached::Entry(e)) if !e.ifname.is_empty() => {
                    out.push(Scanned::Entry(path, e));
                }
                Ok(Cached::Entry(_)) => {
                    out.push(Scanned::Unreadable(
                        path,
                        "the entry names no interface".into(),
                    ));
                }
                Ok(Cached::LegacyResult(_)) => out.push(Scanned::Unreadable(
                    path,
                    format!("not a {KIND} entry (an older or foreign format)"),
                )),
                Err(e) => out.push(Scanned::Unreadable(path, e.to_string())),
            }
        }
        Ok(out)
    }
}

/// One file of the results directory.
#[derive(Debug)]
pub enum Scanned {
    Entry(PathBuf, Box<Entry>),
    /// Not readable as an entry, and why.
    Unreadable(PathBuf, String),
}

fn parse(bytes: &[u8]) -> Result<Cached, json::Error> {
    let value: Value = json::from_slice(bytes)?;
    let kind = value.as_object().and_then(|o| json::map_field(o, "kind"));
    if kind.and_then(Value::as_str) == Some(KIND) {
        let entry: Entry = json::from_value(value)?;
        return Ok(Cached::Entry(Box::new(entry)));
    }
    Ok(Cached::LegacyResult(value))
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::caused_by(
        Code::Io,
        format!("failed to {what} cache {}", path.display()),
        e,
    )
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
