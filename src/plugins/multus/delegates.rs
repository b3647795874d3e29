//! A delegate: one network of the pod (the default network, or one
//! selection) with what its selection asks for, and the CNI_ARGS and
//! capabilities Multus builds for it. (The list of a pod's delegates, cached
//! for DEL, is `delegate_cache.rs`.)

use super::annotations::Selection;
use super::config::{BandwidthEntry, K8sArgs, PortMapEntry, RuntimeConfig};
use crate::cni::result::go_escape;
use crate::cni::{CniResult, Code, Error, Invocation};
use crate::libcni::RuntimeConf;
use crate::libcni::conf::{self, NetworkList};
use crate::quote::quoted;
use serde_json::{Map, Value, json};
use std::net::IpAddr;
use std::path::PathBuf;

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

#[cfg(test)]
#[path = "delegates_tests.rs"]
mod tests;
