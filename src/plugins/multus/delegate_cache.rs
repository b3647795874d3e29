//! The delegate list cached at `<cniDir>/<containerID>` in Multus's layout,
//! written before any ADD, so DEL works after the annotations and NAD files
//! are gone, and either implementation can DEL what the other added.

use super::delegates::Delegate;
use crate::cni::result::go_escape;
use crate::cni::{CniResult, Code, Error};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `types.NetConf` as Go encodes it inside the cached list.
#[derive(Debug, Default, Serialize)]
struct CachedNetConf {
    #[serde(rename = "cniVersion", skip_serializing_if = "String::is_empty")]
    cni_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(rename = "type", skip_serializing_if = "String::is_empty")]
    plugin_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    capabilities: Option<BTreeMap<String, bool>>,
    ipam: CachedIpam,
    dns: crate::cni::result::Dns,
}

#[derive(Debug, Default, Serialize)]
struct CachedIpam {
    #[serde(rename = "type", skip_serializing_if = "String::is_empty")]
    ipam_type: String,
}

#[derive(Debug, Default, Serialize)]
struct CachedConfList {
    #[serde(rename = "cniVersion", skip_serializing_if = "String::is_empty")]
    cni_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(rename = "disableCheck", skip_serializing_if = "is_false")]
    disable_check: bool,
    #[serde(rename = "disableGC", skip_serializing_if = "is_false")]
    disable_gc: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    plugins: Vec<CachedNetConf>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One element of the cached list, in Multus's `DelegateNetConf` order.
#[derive(Debug, Serialize)]
struct CachedDelegate {
    #[serde(rename = "Conf")]
    conf: CachedNetConf,
    #[serde(rename = "ConfList")]
    conf_list: CachedConfList,
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "ifnameRequest", skip_serializing_if = "String::is_empty")]
    ifname_request: String,
    #[serde(rename = "macRequest", skip_serializing_if = "String::is_empty")]
    mac_request: String,
    #[serde(
        rename = "infinibandGUIDRequest",
        skip_serializing_if = "String::is_empty"
    )]
    infiniband_guid: String,
    #[serde(rename = "ipRequest", skip_serializing_if = "Option::is_none")]
    ip_request: Option<Vec<String>>,
    #[serde(rename = "default-route", skip_serializing_if = "Option::is_none")]
    gateway_request: Option<Vec<String>>,
    #[serde(rename = "IsFilterV4Gateway")]
    filter_v4: bool,
    #[serde(rename = "IsFilterV6Gateway")]
    filter_v6: bool,
    #[serde(rename = "deviceID", skip_serializing_if = "String::is_empty")]
    device_id: String,
    #[serde(rename = "resourceName", skip_serializing_if = "String::is_empty")]
    resource_name: String,
    /// Go encodes `[]byte` as base64.
    #[serde(rename = "Bytes")]
    bytes: String,
    /// The pod's container ID, when the file's name holds only its token.
    #[serde(rename = "containerID", skip_serializing_if = "String::is_empty")]
    container_id: String,
}

/// What DEL reads back (Multus's file or ours).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct CachedIn {
    name: String,
    ifname_request: String,
    mac_request: String,
    #[serde(rename = "infinibandGUIDRequest")]
    infiniband_guid: String,
    ip_request: Option<Vec<String>>,
    #[serde(rename = "default-route")]
    gateway_request: Option<Vec<String>>,
    #[serde(rename = "IsFilterV4Gateway")]
    filter_v4: bool,
    #[serde(rename = "IsFilterV6Gateway")]
    filter_v6: bool,
    device_id: String,
    resource_name: String,
    bytes: String,
    #[serde(rename = "containerID")]
    container_id: String,
}

fn cached_netconf(raw: &Map<String, Value>) -> CachedNetConf {
    let text = |k: &str| {
        raw.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    CachedNetConf {
        cni_version: text("cniVersion"),
        name: text("name"),
        plugin_type: text("type"),
        capabilities: raw.get("capabilities").and_then(|c| {
            c.as_object().map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_bool().map(|b| (k.clone(), b)))
                    .collect()
            })
        }),
        ipam: CachedIpam {
            ipam_type: raw
                .get("ipam")
                .and_then(|i| i.get("type"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        },
        dns: crate::cni::result::Dns::default(),
    }
}

/// The delegate list file of a container: `<cniDir>/<containerID>` (a long
/// ID as its token, `files::state_name`, the ID then inside).
pub fn cache_path(cni_dir: &Path, container_id: &str) -> PathBuf {
    cni_dir.join(crate::files::state_name("", container_id, ""))
}

/// The container of a delegate list whose name is a token: the ID its
/// entries hold, when that ID's list is this file.
pub fn cached_container(path: &Path) -> Option<String> {
    let bytes = crate::files::read_state_limited(path, crate::files::MAX_FILE).ok()?;
    let cached: Vec<CachedIn> = crate::cni::json::from_slice(&bytes).ok()?;
    let id = cached.into_iter().next()?.container_id;
    let dir = path.parent()?;
    (!id.is_empty() && cache_path(dir, &id) == path).then_some(id)
}

/// Writes the delegate list (0600, its directory 0700), before any ADD: a
/// runtime that DELs after a crash finds every delegate.
pub fn save(path: &Path, container_id: &str, delegates: &[Delegate]) -> CniResult<()> {
    let bounded = path.file_name().and_then(|n| n.to_str()) != Some(container_id);
    let cached: Vec<CachedDelegate> = delegates
        .iter()
        .map(|d| {
            let obj: Map<String, Value> =
                crate::cni::json::from_slice(&d.bytes).unwrap_or_default();
            let (conf, conf_list) = if d.is_list() {
                let plugins = d
                    .list
                    .plugins
                    .iter()
                    .map(|p| cached_netconf(&p.raw))
                    .collect();
                (
                    CachedNetConf::default(),
                    CachedConfList {
                        cni_version: d.list.cni_version.clone(),
                        name: d.list.name.clone(),
                        disable_check: d.list.disable_check,
                        disable_gc: d.list.disable_gc,
                        plugins,
                    },
                )
            } else {
                (cached_netconf(&obj), CachedConfList::default())
            };
            CachedDelegate {
                conf,
                conf_list,
                name: d.name.clone(),
                ifname_request: d.ifname_request.clone(),
                mac_request: d.mac_request.clone(),
                infiniband_guid: d.infiniband_guid.clone(),
                ip_request: d.ip_request.clone(),
                gateway_request: d
                    .gateway_request
                    .as_ref()
                    .map(|g| g.iter().map(ToString::to_string).collect()),
                filter_v4: d.filter_v4,
                filter_v6: d.filter_v6,
                device_id: d.device_id.clone(),
                resource_name: d.resource_name.clone(),
                bytes: crate::digest::base64_encode(&d.bytes),
                container_id: if bounded {
                    container_id.to_string()
                } else {
                    String::new()
                },
            }
        })
        .collect();
    let text = serde_json::to_string(&cached)
        .map_err(|e| Error::caused_by(Code::Internal, "error serializing delegate netconf", e))?;
    crate::files::write_private_atomic(path, go_escape(&text).as_bytes()).map_err(|e| {
        Error::caused_by(
            Code::Io,
            format!("error in saving the delegates to {}", path.display()),
            e,
        )
    })
}

/// Why a cached list could not be used.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be read (other than missing).
    Read(Error),
    /// The file is there but is not a delegate list.
    Parse(Error),
}

/// The cached delegate list; None when there is none. The first is the
/// default network.
pub fn load(path: &Path, cni_version: &str) -> Result<Option<Vec<Delegate>>, LoadError> {
    let bytes = match crate::files::read_state_limited(path, crate::files::MAX_FILE) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(LoadError::Read(Error::caused_by(
                Code::Io,
                format!("failed to read the cached delegates {}", path.display()),
                e,
            )));
        }
    };
    let parse_error = |what: String| LoadError::Parse(Error::decode(what));
    let cached: Vec<CachedIn> = crate::cni::json::from_slice(&bytes).map_err(|e| {
        LoadError::Parse(Error::caused_by(
            Code::Decode,
            format!("failed to parse the cached delegates {}", path.display()),
            e,
        ))
    })?;
    if cached.is_empty() {
        return Err(parse_error(format!(
            "{}: the cached delegate list is empty",
            path.display()
        )));
    }
    let mut out = Vec::new();
    for (i, c) in cached.into_iter().enumerate() {
        let source = format!("{} [{i}]", path.display());
        let bytes = crate::digest::base64_decode(&c.bytes)
            .ok_or_else(|| parse_error(format!("{source}: Bytes is not base64")))?;
        let mut d = Delegate::load(bytes, &source, cni_version).map_err(LoadError::Parse)?;
        if !c.ifname_request.is_empty() {
            crate::cni::env::validate_ifname(&c.ifname_request).map_err(LoadError::Parse)?;
        }
        d.name = c.name;
        d.master = i == 0;
        d.ifname_request = c.ifname_request;
        d.mac_request = c.mac_request;
        d.infiniband_guid = c.infiniband_guid;
        d.ip_request = c.ip_request;
        d.gateway_request = c
            .gateway_request
            .map(|g| g.iter().filter_map(|s| s.parse().ok()).collect());
        d.filter_v4 = c.filter_v4;
        d.filter_v6 = c.filter_v6;
        d.device_id = c.device_id;
        d.resource_name = c.resource_name;
        out.push(d);
    }
    Ok(Some(out))
}

#[cfg(test)]
#[path = "delegate_cache_tests.rs"]
mod tests;
