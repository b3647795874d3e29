//! A delegate: one network of the pod (the default network, or one
//! selection) with what its selection asks for; the CNI_ARGS and capabilities
//! Multus builds for it; and the delegate list cached at
//! `<cniDir>/<containerID>` in Multus's layout, so DEL works after the
//! annotations and NAD files are gone, and either implementation can DEL what
//! the other added.

use super::annotations::Selection;
use super::config::{BandwidthEntry, K8sArgs, PortMapEntry, RuntimeConfig};
use crate::cni::result::go_escape;
use crate::cni::{CniResult, Code, Error, Invocation};
use crate::libcni::RuntimeConf;
use crate::libcni::conf::{self, NetworkList};
use crate::quote::quoted;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Delegate {
    /// The network as the runtime runs it.
    pub list: NetworkList,
    /// The config as loaded (with `cni-args` injected): Multus's `Bytes`.
    pub bytes: Vec<u8>,
    /// The network-status name: `namespace/nad` for a NAD, else the config's name.
    pub name: String,
    pub master: bool,
    pub ifname_request: String,
    pub mac_request: String,
    pub ip_request: Option<Vec<String>>,
    pub infiniband_guid: String,
    /// Multus does not cache these two: DEL runs without them, as Multus's.
    pub port_mappings: Option<Vec<PortMapEntry>>,
    pub bandwidth: Option<BandwidthEntry>,
    pub gateway_request: Option<Vec<IpAddr>>,
    pub filter_v4: bool,
    pub filter_v6: bool,
    pub device_id: String,
    /// The NAD's device-plugin pool: its device comes from the pool's
    /// allocation for the pod, never from the selection.
    pub resource_name: String,
}

impl Delegate {
    /// A config (single plugin, or a list) as a delegate (Multus's
    /// `LoadDelegateNetConf`). A list without `cniVersion` takes multus's own,
    /// for every verb (Multus does it on DEL only, so its DEL could run at
    /// another version than its ADD).
    pub fn load(bytes: Vec<u8>, source: &str, cni_version: &str) -> CniResult<Delegate> {
        let obj: Map<String, Value> = crate::cni::json::from_slice(&bytes).map_err(|e| {
            Error::caused_by(
                Code::Decode,
                format!("error unmarshalling delegate config ({source})"),
                e,
            )
        })?;
        let has_type = crate::cni::json::map_field(&obj, "type")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        let path = PathBuf::from(source);
        let mut list = if has_type {
            conf::conf_from_bytes(&bytes, &path)?
        } else {
            let list = conf::list_from_bytes(&bytes, &path)?;
            if list.plugins.is_empty() {
                return Err(Error::invalid_config(format!(
                    "{source}: delegate must have the 'type' or 'plugin' field"
                )));
            }
            list
        };
        if list.cni_version.is_empty() {
            list.cni_version = cni_version.to_string();
        }
        // The name names result cache files: checked before any path is made.
        let name = quoted(&list.name);
        crate::cni::env::validate_network_name(&list.name)
            .map_err(|e| e.context(format!("{source}: delegate network name {name}")))?;
        // In-process, a delegate that is multus again would recurse until the
        // stack ends.
        if list.plugins.iter().any(|p| p.plugin_type == "multus") {
            return Err(Error::invalid_config(format!(
                "{source}: a delegate of multus cannot be multus"
            )));
        }
        Ok(Delegate {
            name: list.name.clone(),
            list,
            bytes,
            master: false,
            ifname_request: String::new(),
            mac_request: String::new(),
            ip_request: None,
            infiniband_guid: String::new(),
            port_mappings: None,
            bandwidth: None,
            gateway_request: None,
            filter_v4: false,
            filter_v6: false,
            device_id: String::new(),
            resource_name: String::new(),
        })
    }

    /// A NAD's config with what the selection asks for: `cni-args` merged into
    /// `args.cni` of every plugin, the requests kept for the runtime conf.
    pub fn for_selection(
        bytes: Vec<u8>,
        sel: &Selection,
        source: &str,
        cni_version: &str,
    ) -> CniResult<Delegate> {
        let bytes = match &sel.cni_args {
            Some(args) => inject_cni_args(&bytes, args, source)?,
            None => bytes,
        };
        let mut d = Delegate::load(bytes, source, cni_version)?;
        d.name = sel.full_name();
        d.ifname_request = sel.interface.clone();
        d.mac_request = sel.mac.clone();
        d.ip_request = sel.ips.clone();
        d.infiniband_guid = sel.infiniband_guid.clone();
        d.port_mappings = sel.port_mappings.clone();
        d.bandwidth = sel.bandwidth;
        d.gateway_request = sel.default_route.clone();
        d.device_id = sel.device_id.clone();
        Ok(d)
    }

    /// The first plugin's type, as Multus names a single-plugin delegate.
    pub fn plugin_type(&self) -> &str {
        self.list
            .plugins
            .first()
            .map_or("", |p| p.plugin_type.as_str())
    }

    /// Whether the config is a list (Multus's `ConfListPlugin`).
    pub fn is_list(&self) -> bool {
        crate::cni::json::from_slice::<Map<String, Value>>(&self.bytes)
            .ok()
            .and_then(|o| crate::cni::json::map_field(&o, "type").cloned())
            .and_then(|t| t.as_str().map(str::is_empty))
            .unwrap_or(true)
    }

    /// `CNI_IFNAME` for this delegate (Multus's `getIfname`): the requested
    /// name, the runtime's for the default network, else `net<index>`.
    pub fn ifname(&self, runtime_ifname: &str, index: usize) -> String {
        if !self.ifname_request.is_empty() {
            self.ifname_request.clone()
        } else if self.master {
            runtime_ifname.to_string()
        } else {
            format!("net{index}")
        }
    }

    /// The device-info file of an attachment with a `deviceID`.
    pub fn device_info_file(
        &self,
        merged: &RuntimeConfig,
        container_id: &str,
        ifname: &str,
    ) -> String {
        if merged.device_id.is_empty() {
            return merged.device_info_file.clone();
        }
        self.device_info_path(container_id, ifname)
    }

    /// The spec's device-info file of this network for the pod's attachment
    /// (the NAD client's `GetCNIDeviceInfoPath`).
    pub fn device_info_path(&self, container_id: &str, ifname: &str) -> String {
        let network = format!("{}-", self.name.replace('/', "-"));
        let file = crate::files::state_name(&network, container_id, &format!("_{ifname}"));
        format!("{}/{file}", super::devinfo::DEVICE_INFO_DIR)
    }

    /// multus's runtimeConfig with this delegate's requests over it (Multus's
    /// `mergeCNIRuntimeConfig`: the default network gets only the runtime's).
    pub fn merged_runtime_config(&self, rc: &RuntimeConfig) -> RuntimeConfig {
        let mut m = rc.clone();
        m.pod_annotations = None;
        if !self.master {
            if self.port_mappings.is_some() {
                m.port_mappings = self.port_mappings.clone();
            }
            if self.bandwidth.is_some() {
                m.bandwidth = self.bandwidth;
            }
            if self.ip_request.is_some() {
                m.ips = self.ip_request.clone();
            }
            if !self.mac_request.is_empty() {
                m.mac = self.mac_request.clone();
            }
            if !self.infiniband_guid.is_empty() {
                m.infiniband_guid = self.infiniband_guid.clone();
            }
            if !self.device_id.is_empty() {
                m.device_id = self.device_id.clone();
            }
        }
        // A pool's device is the pod's allocation, for the default network too.
        if self.master && !self.resource_name.is_empty() && !self.device_id.is_empty() {
            m.device_id = self.device_id.clone();
        }
        m
    }

    /// The runtime conf of this delegate (Multus's `CreateCNIRuntimeConf`):
    /// CNI_ARGS `IgnoreUnknown` and the pod's four keys, then the runtime's
    /// CNI_ARGS (a key given empty is filled, an exact repeat dropped), then on
    /// ADD the selection's `MAC=` and `IP=` (Multus's "deprecated" path, which
    /// it still takes); the capabilities from the merged runtimeConfig.
    pub fn runtime_conf(
        &self,
        inv: &Invocation,
        k8s: &K8sArgs,
        rc: &RuntimeConfig,
        ifname: &str,
        for_add: bool,
    ) -> RuntimeConf {
        let mut args: Vec<(String, String)> = [
            ("IgnoreUnknown", "true"),
            ("K8S_POD_NAMESPACE", k8s.namespace.as_str()),
            ("K8S_POD_NAME", k8s.name.as_str()),
            (
                "K8S_POD_INFRA_CONTAINER_ID",
                k8s.infra_container_id.as_str(),
            ),
            ("K8S_POD_UID", k8s.uid.as_str()),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for pair in inv.env.args.split(';').filter(|p| !p.is_empty()) {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            if let Some(slot) = args
                .iter_mut()
                .find(|(k, v)| k == key && v.is_empty() && !value.is_empty())
            {
                slot.1 = value.to_string();
            } else if !args.iter().any(|(k, v)| k == key && v == value) {
                args.push((key.to_string(), value.to_string()));
            }
        }
        if for_add {
            if !self.mac_request.is_empty() {
                args.push(("MAC".into(), self.mac_request.clone()));
            }
            if let Some(ips) = self.ip_request.as_ref().filter(|i| !i.is_empty()) {
                args.push(("IP".into(), ips.join(",")));
            }
        }
        let merged = self.merged_runtime_config(rc);
        let mut caps = Map::new();
        if let Some(p) = merged.port_mappings.as_ref().filter(|p| !p.is_empty()) {
            caps.insert("portMappings".into(), json!(p));
        }
        if let Some(b) = merged.bandwidth {
            caps.insert("bandwidth".into(), json!(b));
        }
        if let Some(ips) = merged.ips.as_ref().filter(|i| !i.is_empty()) {
            caps.insert("ips".into(), json!(ips));
        }
        if !merged.mac.is_empty() {
            caps.insert("mac".into(), json!(merged.mac));
        }
        if !merged.infiniband_guid.is_empty() {
            caps.insert("infinibandGUID".into(), json!(merged.infiniband_guid));
        }
        if !merged.device_id.is_empty() {
            caps.insert("deviceID".into(), json!(merged.device_id));
        }
        let info_file = self.device_info_file(&merged, &inv.env.container_id, ifname);
        if !info_file.is_empty() {
            caps.insert("CNIDeviceInfoFile".into(), json!(info_file));
        }
        RuntimeConf {
            container_id: inv.env.container_id.clone(),
            netns: inv.env.netns.clone(),
            ifname: ifname.to_string(),
            args,
            capability_args: caps,
        }
    }
}

/// Merges `cni-args` into `args.cni` of the config, or of every plugin of a
/// list (Multus's `injectCNIArgs`); the result is re-encoded as Go encodes a
/// map (keys sorted).
fn inject_cni_args(
    bytes: &[u8],
    cni_args: &Map<String, Value>,
    source: &str,
) -> CniResult<Vec<u8>> {
    let bad = |what: &str| Error::invalid_config(format!("{source}: cannot add cni-args: {what}"));
    let mut obj: Map<String, Value> = crate::cni::json::from_slice(bytes)
        .map_err(|e| Error::caused_by(Code::Decode, format!("{source}: not a JSON object"), e))?;
    let inject = |plugin: &mut Map<String, Value>| -> CniResult<()> {
        let args = plugin
            .entry("args")
            .or_insert_with(|| Value::Object(Map::new()));
        let args = args
            .as_object_mut()
            .ok_or_else(|| bad("'args' is not an object"))?;
        let cni = args
            .entry("cni")
            .or_insert_with(|| Value::Object(Map::new()));
        let cni = cni
            .as_object_mut()
            .ok_or_else(|| bad("'args.cni' is not an object"))?;
        for (k, v) in cni_args {
            cni.insert(k.clone(), v.clone());
        }
        Ok(())
    };
    let has_type = obj
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    if has_type {
        inject(&mut obj)?;
    } else {
        let plugins = obj
            .get_mut("plugins")
            .and_then(Value::as_array_mut)
            .ok_or_else(|| bad("unable to get plugin list"))?;
        for p in plugins {
            inject(
                p.as_object_mut()
                    .ok_or_else(|| bad("a plugin is not an object"))?,
            )?;
        }
    }
    Ok(go_escape(&Value::Object(obj).to_string()).into_bytes())
}

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
mod tests {
    use super::*;

    const CONF: &[u8] = br#"{"cniVersion":"1.0.0","name":"mv","type":"macvlan","master":"eth0","ipam":{"type":"static"}}"#;
    const LIST: &[u8] =
        br#"{"name":"br","plugins":[{"type":"bridge","ipam":{"type":"host-local"}},{"type":"tuning"}]}"#;

    #[test]
    fn configs_become_delegates() {
        let d = Delegate::load(CONF.to_vec(), "conf", "0.4.0").expect("conf");
        assert!(!d.is_list());
        assert_eq!((d.name.as_str(), d.plugin_type()), ("mv", "macvlan"));
        assert_eq!(d.list.cni_version, "1.0.0");
        let d = Delegate::load(LIST.to_vec(), "list", "0.4.0").expect("list");
        assert!(d.is_list());
        // A list without a version takes multus's.
        assert_eq!(d.list.cni_version, "0.4.0");
        assert_eq!(d.list.plugins.len(), 2);
        for bad in [
            &br#"{"name":"x"}"#[..],
            b"[]",
            br#"{"name":"x","type":"multus"}"#,
        ] {
            assert!(Delegate::load(bad.to_vec(), "bad", "1.0.0").is_err());
        }
    }

    #[test]
    fn cni_args_go_into_every_plugin() {
        let mut args = Map::new();
        args.insert("foo".into(), json!("bar"));
        let out = inject_cni_args(LIST, &args, "t").expect("list");
        let v: Value = crate::cni::json::from_slice(&out).expect("json");
        assert_eq!(v["plugins"][0]["args"]["cni"]["foo"], "bar");
        assert_eq!(v["plugins"][1]["args"]["cni"]["foo"], "bar");
        let conf = br#"{"type":"bridge","args":{"cni":{"keep":1}}}"#;
        let v: Value =
            crate::cni::json::from_slice(&inject_cni_args(conf, &args, "t").expect("conf"))
                .expect("json");
        assert_eq!(v["args"]["cni"], json!({"keep": 1, "foo": "bar"}));
        assert!(inject_cni_args(br#"{"type":"b","args":1}"#, &args, "t").is_err());
    }

    #[test]
    fn the_cache_round_trips_in_multus_layout() {
        let dir = std::env::temp_dir().join(format!("cni-multi-dcache-{}", std::process::id()));
        let path = dir.join("ctr");
        let mut a = Delegate::load(LIST.to_vec(), "list", "1.0.0").expect("list");
        a.master = true;
        a.ifname_request = "eth0".into();
        let mut b = Delegate::load(CONF.to_vec(), "conf", "1.0.0").expect("conf");
        b.name = "default/mv".into();
        b.ip_request = Some(vec!["10.1.1.5/24".into()]);
        b.mac_request = "02:00:00:00:00:01".into();
        b.gateway_request = Some(vec!["10.1.1.1".parse().expect("ip")]);
        b.filter_v6 = true;
        // A long ID's list is named by its token and holds the ID.
        let long = "c".repeat(1000);
        let bounded = cache_path(&dir, &long);
        save(&bounded, &long, &[a.clone()]).expect("save");
        assert_eq!(cached_container(&bounded), Some(long));
        save(&path, "ctr", &[a, b]).expect("save");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(!text.contains("containerID"), "{text}");
        assert_eq!(cached_container(&path), None);
        assert!(text.starts_with(r#"[{"Conf":{"ipam":{},"dns":{}},"ConfList":{"cniVersion":"1.0.0","name":"br","plugins":[{"type":"bridge","ipam":{"type":"host-local"},"dns":{}}"#), "{text}");
        assert!(text.contains(r#""Name":"default/mv","macRequest":"02:00:00:00:00:01","ipRequest":["10.1.1.5/24"],"default-route":["10.1.1.1"],"IsFilterV4Gateway":false,"IsFilterV6Gateway":true,"Bytes":""#), "{text}");
        let back = load(&path, "1.0.0").expect("load").expect("there");
        assert!(back[0].master && !back[1].master);
        assert_eq!(back[0].ifname_request, "eth0");
        assert_eq!(back[1].bytes, CONF);
        assert_eq!(back[1].ip_request, Some(vec!["10.1.1.5/24".to_string()]));
        assert!(back[1].filter_v6);
        std::fs::write(&path, "{").expect("write");
        assert!(matches!(load(&path, "1.0.0"), Err(LoadError::Parse(_))));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(matches!(load(&path, "1.0.0"), Ok(None)));
    }
}
