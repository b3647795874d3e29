//! The network configuration every plugin receives on stdin: the common keys,
//! typed, plus the raw object for each plugin's own keys.

use crate::cni::error::{CniResult, Code, Error};
use crate::cni::json::{self, Json, Recorder};
use crate::cni::result::{Dns, NetResult, Versioned};
use crate::quote::quoted;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The keys the spec defines for every plugin configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename = "NetConf")]
pub struct CommonKeys {
    #[serde(rename = "cniVersion", default)]
    pub cni_version: String,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "type", default)]
    pub plugin_type: String,
    #[serde(default)]
    pub capabilities: Option<BTreeMap<String, bool>>,
    #[serde(default)]
    pub ipam: Option<Map<String, Value>>,
    #[serde(default)]
    pub dns: Option<Dns>,
    #[serde(default)]
    pub args: Option<Map<String, Value>>,
    #[serde(rename = "runtimeConfig", default)]
    pub runtime_config: Option<Map<String, Value>>,
    #[serde(rename = "prevResult", default)]
    pub prev_result: Option<Value>,
}

/// An attachment as GC names it: `{containerID, ifname}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Attachment {
    #[serde(rename = "containerID")]
    pub container_id: String,
    #[serde(default)]
    pub ifname: String,
}

/// A parsed configuration: common keys plus the whole object.
#[derive(Debug, Clone)]
pub struct NetConf {
    pub common: CommonKeys,
    pub raw: Map<String, Value>,
    /// The object as Go's decoder sees it (key order and duplicates kept):
    /// every typed read of the config goes through it.
    pub doc: Json,
    /// The exact stdin bytes, which delegates receive unchanged.
    pub bytes: Vec<u8>,
    /// Set by `cnitool validate`: what the plugin's reads of the config find.
    recorder: Option<Arc<Recorder>>,
}

impl NetConf {
    /// Parses stdin: a JSON object with well-typed common keys.
    pub fn parse(bytes: &[u8]) -> CniResult<NetConf> {
        NetConf::from_document(parse_object(bytes)?, bytes)
    }

    /// Types the common keys of an object already parsed from `bytes`.
    pub fn from_document(doc: Json, bytes: &[u8]) -> CniResult<NetConf> {
        NetConf::recorded(doc, bytes, None)
    }

    /// As [`NetConf::from_document`], every typed read of the config (these
    /// common keys too) recorded into `recorder`: the keys no read knows.
    pub fn recorded(
        doc: Json,
        bytes: &[u8],
        recorder: Option<Arc<Recorder>>,
    ) -> CniResult<NetConf> {
        let common: CommonKeys = doc
            .decode_at(&[], recorder.as_deref())
            .map_err(|e| decode_error("failed to parse network config", e))?;
        let Value::Object(raw) = doc.to_value() else {
            return Err(Error::decode(
                "error unmarshall network config: not a JSON object",
            ));
        };
        Ok(NetConf {
            common,
            raw,
            doc,
            bytes: bytes.to_vec(),
            recorder,
        })
    }

    /// `key` of the object at `at` is read other than through a struct.
    fn know(&self, at: &str, key: &str) {
        if let Some(r) = &self.recorder {
            r.know(at, key);
        }
    }

    pub fn cni_version(&self) -> &str {
        &self.common.cni_version
    }

    pub fn name(&self) -> &str {
        &self.common.name
    }

    /// `ipam.type`, when the config has IPAM at all (an empty `ipam` means L2 only).
    pub fn ipam_type(&self) -> Option<&str> {
        self.know("ipam", "type");
        self.doc
            .field("ipam")
            .and_then(|i| i.field("type"))
            .and_then(Json::as_str)
            .filter(|t| !t.is_empty())
    }

    /// The plugin's own keys, decoded from the whole object. Type errors are decode
    /// failures (code 6), an address the type refuses is a config that cannot
    /// work (7); the key's path is the details. Value checks belong to the plugin.
    pub fn plugin_keys<T: DeserializeOwned>(&self) -> CniResult<T> {
        self.doc
            .decode_at(&[], self.recorder.as_deref())
            .map_err(|e| decode_error("failed to load netconf", e))
    }

    /// `prevResult` parsed with the config's version (as the reference does) and
    /// converted to the current layout.
    pub fn prev_result(&self) -> CniResult<Option<NetResult>> {
        Ok(self.prev_result_versioned()?.map(|(_, current)| current))
    }

    /// `prevResult` for a plugin that acts on the container it describes: every
    /// `ips[].interface` must name an entry of `interfaces` (a plugin that only
    /// passes prevResult through uses `prev_result`).
    pub fn container_prev_result(&self) -> CniResult<Option<NetResult>> {
        let prev = self.prev_result()?;
        for (i, ip) in prev.iter().flat_map(|p| p.ips.iter().enumerate()) {
            let count = prev.as_ref().map_or(0, |p| p.interfaces.len());
            if let Some(index) = ip.interface
                && index >= count
            {
                return Err(Error::invalid_config(format!(
                    "prevResult.ips[{i}].interface {index} is out of range ({count} interfaces)"
                )));
            }
        }
        Ok(prev)
    }

    /// `prevResult` in its own version's layout and in the current one.
    pub fn prev_result_versioned(&self) -> CniResult<Option<(Versioned, NetResult)>> {
        let Some(raw) = self.doc.field("prevResult") else {
            return Ok(None);
        };
        let raw = raw.to_value();
        check_prev_addresses(&raw)?;
        let parsed = Versioned::parse(raw, self.cni_version())
            .map_err(|e| Error::caused_by(Code::Decode, "could not parse prevResult", e))?;
        let current = parsed
            .clone()
            .into_current()
            .map_err(|e| e.context("failed to convert prevResult to current version"))?;
        check_prev_result(&current)?;
        Ok(Some((parsed, current)))
    }

    /// `cni.dev/valid-attachments` of a GC (1.1.0); None when the key is absent,
    /// which plugins read as "nothing is known to be stale".
    pub fn valid_attachments(&self) -> CniResult<Option<Vec<Attachment>>> {
        self.know("", "cni.dev/valid-attachments");
        self.entry(&["cni.dev/valid-attachments"])
    }

    /// A `runtimeConfig` entry, decoded.
    pub fn runtime_config<T: DeserializeOwned>(&self, key: &str) -> CniResult<Option<T>> {
        self.know("runtimeConfig", key);
        self.entry(&["runtimeConfig", key])
    }

    /// The whole `args.cni` object, decoded (absent: the default).
    pub fn args_cni_all<T: DeserializeOwned + Default>(&self) -> CniResult<T> {
        Ok(self.entry(&["args", "cni"])?.unwrap_or_default())
    }

    /// An `args.cni` entry, decoded.
    pub fn args_cni<T: DeserializeOwned>(&self, key: &str) -> CniResult<Option<T>> {
        self.know("args.cni", key);
        self.entry(&["args", "cni", key])
    }

    /// The value at `path` (struct fields from the root, matched as Go does),
    /// decoded; errors name it.
    fn entry<T: DeserializeOwned>(&self, path: &[&str]) -> CniResult<Option<T>> {
        let entry = path.iter().try_fold(&self.doc, |json, key| json.field(key));
        entry
            .map(|v| v.decode_at(path, self.recorder.as_deref()))
            .transpose()
            .map_err(|e| decode_error(&format!("failed to parse {}", path.join(".")), e))
    }
}

/// The key a config error is about: its details, as [`decode_error`] and
/// plugins naming a key write them (`key ipam.ranges[0][0].subnet`).
pub fn error_key(e: &Error) -> Option<&str> {
    e.details.strip_prefix("key ")
}

/// A decoding failure of the config as a CNI error: 6 for a type error or
/// broken JSON, 7 for a value its type refuses (an unparsable address); the
/// message is `what: <Go's text>`, the details name the key's path.
pub fn decode_error(what: &str, e: json::Error) -> Error {
    let code = if e.is_invalid_value() {
        Code::InvalidConfig
    } else {
        Code::Decode
    };
    let details = e.path().map(|p| format!("key {p}")).unwrap_or_default();
    Error::caused_by(code, what, e).with_details(details)
}

/// A link name taken from the config (`bridge`, `master`, `device`): by the
/// kernel's rules and without control characters, else code 7 naming the key.
/// Empty is left to the plugin (it means "the default").
pub fn link_name_key(key: &str, value: &str) -> CniResult<()> {
    match crate::cni::env::link_name_problem(value) {
        Some(problem) if !value.is_empty() => Err(Error::invalid_config(format!(
            "invalid {key} {value}: the name {problem}",
            value = quoted(&value)
        ))),
        _ => Ok(()),
    }
}

/// Every address in `ips[]` carries its prefix length: a bare address would be
/// read as a /32 or /128 the plugin that wrote it never meant.
fn check_prev_addresses(raw: &Value) -> CniResult<()> {
    let ips = raw
        .as_object()
        .and_then(|o| json::map_field(o, "ips"))
        .and_then(Value::as_array);
    for (i, ip) in ips.into_iter().flatten().enumerate() {
        let address = ip.as_object().and_then(|o| json::map_field(o, "address"));
        let Some(Value::String(a)) = address else {
            continue;
        };
        // Anything else malformed is the decoder's (code 6, as the reference).
        if a.parse::<ipnet::IpNet>().is_err() && a.parse::<std::net::IpAddr>().is_ok() {
            return Err(Error::invalid_config(format!(
                "prevResult.ips[{i}].address {a} is not an address with a prefix length",
                a = quoted(&a)
            )));
        }
    }
    Ok(())
}

/// Interface names in prevResult are refused where they enter, for every
/// plugin, by the kernel's rules: they reach rule text, aliases and file names.
fn check_prev_result(prev: &NetResult) -> CniResult<()> {
    for (i, itf) in prev.interfaces.iter().enumerate() {
        if let Some(problem) = crate::cni::env::link_name_problem(&itf.name) {
            return Err(Error::invalid_config(format!(
                "prevResult.interfaces[{i}].name {} {problem}",
                quoted(&itf.name)
            )));
        }
    }
    Ok(())
}

/// Parses stdin as a JSON object, keeping what Go's decoder would see.
pub fn parse_object(bytes: &[u8]) -> CniResult<Json> {
    match json::parse(bytes) {
        Ok(doc @ Json::Object(_)) => Ok(doc),
        Ok(_) => Err(Error::decode(
            "error unmarshall network config: not a JSON object",
        )),
        Err(e) => Err(Error::caused_by(
            Code::Decode,
            "error unmarshall network config",
            e,
        )),
    }
}

/// A path setting used as given on the host (multus's directories): `default`
/// when empty; it must be absolute, without `..` and NUL.
pub fn absolute_path(
    value: Option<&str>,
    default: &str,
    key: &str,
) -> CniResult<std::path::PathBuf> {
    match path_setting(value, default, key) {
        Ok(path) if path.is_absolute() => Ok(path),
        _ => Err(Error::invalid_config(format!(
            "invalid {key} {}: must be an absolute path without '..'",
            quoted(&value.filter(|v| !v.is_empty()).unwrap_or(default))
        ))),
    }
}

/// A path setting the reference hands to Go's os functions as it is
/// (host-local and tuning `dataDir`, flannel `subnetFile` and `dataDir`):
/// `default` when empty, and a relative path is relative to the plugin's
/// working directory, as there (the plugins never change directory). NUL and
/// `..` are refused: the path is joined with names and written to as root.
pub fn path_setting(
    value: Option<&str>,
    default: &str,
    key: &str,
) -> CniResult<std::path::PathBuf> {
    use std::path::{Component, Path};
    let v = value.filter(|v| !v.is_empty()).unwrap_or(default);
    let path = Path::new(v);
    let escapes = path.components().any(|c| c == Component::ParentDir);
    if v.contains('\0') || escapes {
        return Err(Error::invalid_config(format!(
            "invalid {key} {v}: must be a path without '..'",
            v = quoted(&v)
        )));
    }
    Ok(path.to_path_buf())
}

/// CNI_ARGS as the reference's `LoadArgs` reads it: `K=V;K=V`, keys matched
/// case-sensitively against what the plugin knows, unknown keys fatal unless
/// `IgnoreUnknown` is true.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniArgs {
    pairs: BTreeMap<String, String>,
}

impl CniArgs {
    pub fn parse(raw: &str, known: &[&str]) -> CniResult<CniArgs> {
        let mut pairs = BTreeMap::new();
        if raw.is_empty() {
            return Ok(CniArgs { pairs });
        }
        let mut unknown = Vec::new();
        let mut ignore_unknown = false;
        for pair in raw.split(';') {
            let kv: Vec<&str> = pair.split('=').collect();
            let [key, value] = kv[..] else {
                return Err(Error::invalid_env(format!(
                    "ARGS: invalid pair {pair}",
                    pair = quoted(&pair)
                )));
            };
            if key == "IgnoreUnknown" {
                ignore_unknown = parse_go_bool(value).ok_or_else(|| {
                    Error::invalid_env(format!(
                        "ARGS: error parsing value of pair {pair}: boolean unmarshal error: invalid input {}",
                        value.to_lowercase(), pair = quoted(&pair)
                    ))
                })?;
            } else if known.contains(&key) {
                pairs.insert(key.to_string(), value.to_string());
            } else {
                unknown.push(pair);
            }
        }
        if !unknown.is_empty() && !ignore_unknown {
            return Err(Error::invalid_env(format!(
                "ARGS: unknown args {}",
                crate::cni::version::go_quoted_list(&unknown)
            )));
        }
        Ok(CniArgs { pairs })
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.get(key).map(String::as_str)
    }
}

/// `UnmarshallableBool`: 1/true/0/false in any case.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s.to_lowercase().as_str() {
        "1" | "true" => Some(true),
        "0" | "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
