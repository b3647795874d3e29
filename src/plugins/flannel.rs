//! flannel: turns flanneld's `subnet.env` into a delegate config (bridge +
//! host-local by default), saves it under `<dataDir>/<containerID>` and
//! delegates; DEL replays the saved config, so it works after subnet.env is gone.

use crate::cni::config::path_setting;
use crate::cni::delegate::Delegate;
use crate::cni::error::Context;
use crate::cni::json::map_field;
use crate::cni::result::{NetResult, go_escape};
use crate::cni::{CniResult, Code, Error, Invocation, Plugin};
use crate::quote::quoted;
use ipnet::IpNet;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

pub struct Flannel;

const DEFAULT_SUBNET_FILE: &str = "/run/flannel/subnet.env";
pub(crate) const DEFAULT_DATA_DIR: &str = "/var/lib/cni/flannel";

#[derive(Debug, Default, Deserialize)]
#[serde(rename = "NetConf", rename_all = "camelCase", default)]
pub(crate) struct Keys {
    subnet_file: String,
    data_dir: String,
    delegate: Option<Map<String, Value>>,
}

/// What flanneld wrote (the default: nothing, as validate builds the
/// delegate: the node's file is flanneld's, not the config's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubnetEnv {
    pub networks: Vec<IpNet>,
    pub subnet: Option<IpNet>,
    pub ipv6_networks: Vec<IpNet>,
    pub ipv6_subnet: Option<IpNet>,
    pub mtu: u32,
    pub ipmasq: bool,
}

fn parse_nets(value: &str, key: &str) -> CniResult<Vec<IpNet>> {
    let mut out: Vec<IpNet> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let net: IpNet = item.parse().map_err(|e| {
            Error::internal(format!("invalid {key} {item}", item = quoted(&item))).with_source(e)
        })?;
        let net = net.trunc();
        if !out.contains(&net) {
            out.push(net);
        }
    }
    Ok(out)
}

/// Parses subnet.env: `KEY=VALUE` lines split on the first `=`. A bad file is
/// a plain error (999), as the reference's.
pub fn parse_subnet_env(text: &str, source: &str) -> CniResult<SubnetEnv> {
    let mut env = SubnetEnv::default();
    let (mut have_mtu, mut have_masq) = (false, false);
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "FLANNEL_NETWORK" => env.networks = parse_nets(value, key)?,
            "FLANNEL_SUBNET" => env.subnet = parse_nets(value, key)?.into_iter().next(),
            "FLANNEL_IPV6_NETWORK" => env.ipv6_networks = parse_nets(value, key)?,
            "FLANNEL_IPV6_SUBNET" => env.ipv6_subnet = parse_nets(value, key)?.into_iter().next(),
            "FLANNEL_MTU" => {
                env.mtu = value.parse().map_err(|e| {
                    Error::internal(format!(
                        "invalid FLANNEL_MTU {value}",
                        value = quoted(&value)
                    ))
                    .with_source(e)
                })?;
                have_mtu = true;
            }
            "FLANNEL_IPMASQ" => {
                env.ipmasq = value == "true";
                have_masq = true;
            }
            _ => {}
        }
    }
    let mut missing = Vec::new();
    if env.networks.is_empty() && env.ipv6_networks.is_empty() {
        missing.push("FLANNEL_NETWORK or FLANNEL_IPV6_NETWORK");
    }
    if env.subnet.is_none() && env.ipv6_subnet.is_none() {
        missing.push("FLANNEL_SUBNET or FLANNEL_IPV6_SUBNET");
    }
    if !have_mtu {
        missing.push("FLANNEL_MTU");
    }
    if !have_masq {
        missing.push("FLANNEL_IPMASQ");
    }
    if !missing.is_empty() {
        return Err(Error::internal(format!(
            "{source} is missing {}",
            missing.join(", ")
        )));
    }
    Ok(env)
}

/// The delegate config, built exactly as the reference builds it.
pub fn delegate_config(
    conf: &Map<String, Value>,
    env: &SubnetEnv,
) -> CniResult<Map<String, Value>> {
    let mut d = match map_field(conf, "delegate") {
        None => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err(Error::invalid_config("'delegate' must be an object")),
    };
    if d.contains_key("name") {
        return Err(Error::invalid_config(
            "'delegate' dictionary should not have 'name' field, it'll get it from the main config",
        ));
    }
    if d.contains_key("ipam") {
        return Err(Error::invalid_config(
            "'delegate' dictionary should not have 'ipam' field, it'll get it from the main config",
        ));
    }
    let name = map_field(conf, "name").cloned().unwrap_or(json!(""));
    d.insert("name".into(), name);
    let delegate_type = match d.get("type") {
        None => {
            d.insert("type".into(), json!("bridge"));
            "bridge".to_string()
        }
        Some(Value::String(t)) => t.clone(),
        Some(_) => return Err(Error::invalid_config("'delegate' 'type' must be a string")),
    };
    d.entry("ipMasq").or_insert(json!(!env.ipmasq));
    d.entry("mtu").or_insert(json!(env.mtu));
    if delegate_type == "bridge" {
        d.entry("isGateway").or_insert(json!(true));
    }
    if let Some(v) =
        map_field(conf, "cniVersion").filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
    {
        d.insert("cniVersion".into(), v.clone());
    }
    let mut ipam = match map_field(conf, "ipam") {
        None => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err(Error::invalid_config("'ipam' must be an object")),
    };
    ipam.entry("type").or_insert(json!("host-local"));
    let ranges: Vec<Value> = [env.subnet, env.ipv6_subnet]
        .iter()
        .flatten()
        .map(|s| json!([{"subnet": s.to_string()}]))
        .collect();
    ipam.insert("ranges".into(), Value::Array(ranges));
    let mut routes: Vec<Value> = match ipam.get("routes") {
        Some(Value::Array(r)) => r.clone(),
        _ => Vec::new(),
    };
    for net in env.networks.iter().chain(&env.ipv6_networks) {
        routes.push(json!({"dst": net.to_string()}));
    }
    ipam.insert("routes".into(), Value::Array(routes));
    d.insert("ipam".into(), Value::Object(ipam));
    if let Some(Value::Object(rc)) = map_field(conf, "runtimeConfig")
        && !rc.is_empty()
    {
        d.insert("runtimeConfig".into(), Value::Object(rc.clone()));
    }
    Ok(d)
}

/// Where the delegate config of a container is saved: `<dataDir>/<containerID>`
/// (a long ID as its token, `files::state_name`).
pub(crate) fn saved_path(dir: &Path, container_id: &str) -> PathBuf {
    dir.join(crate::files::state_name("", container_id, ""))
}

/// Writes the delegate config (sorted keys) before delegating: DEL needs it.
fn save(dir: &Path, container_id: &str, bytes: &[u8]) -> CniResult<()> {
    crate::files::write_private_atomic(&saved_path(dir, container_id), bytes).map_err(Error::from)
}

/// Removes the saved delegate configs in `dir` of `network` (their `name`)
/// whose file is not one of `keep`; another network's, or what is not a
/// saved config of ours (unreadable, a symlink, a directory), stays.
fn remove_stale_saved(dir: &Path, network: &str, keep: &[String]) -> CniResult<()> {
    let entries = match fs_err::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Temporary files of a write in progress start with a dot.
        if name.starts_with('.')
            || keep.contains(&name)
            || !entry.file_type().is_ok_and(|t| t.is_file())
        {
            continue;
        }
        let path = entry.path();
        if saved_network(&path).as_deref() == Some(network) {
            crate::files::remove_state(&path)
                .with_context(|| format!("failed to remove {}", path.display()))?;
        }
    }
    Ok(())
}

/// The network (`name`) a saved delegate config names; None when it cannot
/// be read as one (a symlink is never followed).
pub(crate) fn saved_network(path: &Path) -> Option<String> {
    let saved = crate::files::read_state_limited(path, crate::files::MAX_FILE)
        .ok()
        .and_then(|b| crate::cni::json::from_slice::<Map<String, Value>>(&b).ok())?;
    map_field(&saved, "name")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// GC of the delegate config `delegate`, given the runtime's valid list.
fn gc_delegate(inv: &Invocation, mut delegate: Map<String, Value>) -> CniResult<()> {
    if let Some(valid) = map_field(&inv.conf.raw, "cni.dev/valid-attachments") {
        delegate.insert("cni.dev/valid-attachments".into(), valid.clone());
    }
    let (plugin_type, bytes) = delegate_bytes(delegate);
    Delegate::new(&plugin_type, &inv.env, &bytes)?
        .in_process(inv.plugins)
        .gc()
}

/// The delegate's plugin type (bridge unless it names one) and its config
/// as Go marshals it.
fn delegate_bytes(delegate: Map<String, Value>) -> (String, Vec<u8>) {
    let plugin_type = delegate
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("bridge")
        .to_string();
    let bytes = go_escape(&Value::Object(delegate).to_string()).into_bytes();
    (plugin_type, bytes)
}

impl Plugin for Flannel {
    /// The keys and the delegate's shape; subnet.env is the node's (flanneld
    /// writes it), so the delegate is built against an empty one.
    fn validate(&self, inv: &Invocation) -> CniResult<()> {
        let k: Keys = inv.conf.plugin_keys()?;
        path_setting(Some(&k.subnet_file), DEFAULT_SUBNET_FILE, "subnetFile")?;
        path_setting(Some(&k.data_dir), DEFAULT_DATA_DIR, "dataDir")?;
        delegate_config(&inv.conf.raw, &SubnetEnv::default()).map(drop)
    }

    /// The delegate, built against an empty subnet.env as `validate` builds it.
    fn handed_on(&self, inv: &Invocation) -> Vec<(&'static str, Map<String, Value>)> {
        delegate_config(&inv.conf.raw, &SubnetEnv::default())
            .map(|d| vec![("delegate", d)])
            .unwrap_or_default()
    }

    fn add(&self, inv: &Invocation) -> CniResult<NetResult> {
        let k: Keys = inv.conf.plugin_keys()?;
        let _ = k.delegate;
        let subnet_file = path_setting(Some(&k.subnet_file), DEFAULT_SUBNET_FILE, "subnetFile")?;
        let data_dir = path_setting(Some(&k.data_dir), DEFAULT_DATA_DIR, "dataDir")?;
        let text = crate::files::read_string_limited(&subnet_file, crate::files::MAX_FILE)
            .map_err(|e| {
                let mut err = Error::caused_by(
                    Code::Internal,
                    format_args!(
                        "failed to load flannel 'subnet.env' file {}",
                        subnet_file.display()
                    ),
                    e,
                );
                // The hint follows the cause, as in the reference.
                err.msg.push_str(". Check the flannel pod log for details");
                err
            })?;
        let env = parse_subnet_env(&text, &subnet_file.display().to_string())?;
        let (plugin_type, bytes) = delegate_bytes(delegate_config(&inv.conf.raw, &env)?);
        save(&data_dir, &inv.env.container_id, &bytes)?;
        Delegate::new(&plugin_type, &inv.env, &bytes)?
            .in_process(inv.plugins)
            .add()
    }

    /// Replays the saved delegate config; nothing saved (or unreadable) is success.
    /// A `dataDir` ADD refuses (`..`) holds nothing of ours: success, said on stderr.
    fn del(&self, inv: &Invocation) -> CniResult<()> {
        let k: Keys = inv.conf.plugin_keys()?;
        let data_dir = match path_setting(Some(&k.data_dir), DEFAULT_DATA_DIR, "dataDir") {
            Ok(dir) => dir,
            Err(e) => {
                eprintln!("flannel: nothing to delete: {e}");
                return Ok(());
            }
        };
        let path = saved_path(&data_dir, &inv.env.container_id);
        // Gone: nothing to delete. Unreadable: its delegate may still hold state.
        let bytes = match crate::files::read_state_limited(&path, crate::files::MAX_FILE) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e).with_context(|| format!("failed to read {}", path.display())),
        };
        let saved = crate::cni::json::from_slice::<Map<String, Value>>(&bytes).map_err(|e| {
            Error::caused_by(
                Code::Decode,
                format_args!("failed to parse netconf {}", path.display()),
                e,
            )
        })?;
        let plugin_type = map_field(&saved, "type")
            .and_then(Value::as_str)
            .unwrap_or("bridge")
            .to_string();
        Delegate::new(&plugin_type, &inv.env, &bytes)?
            .in_process(inv.plugins)
            .del()?;
        let _ = fs_err::remove_file(&path);
        Ok(())
    }

    /// (flannel-io's plugin has no GC.) Removes the saved delegate configs of
    /// this network's containers not in the valid list, then passes GC on to
    /// the delegate ADD would build, so its IPAM and ipMasq collect too.
    /// Without subnet.env that delegate cannot be built: the cleanup stands
    /// and the delegate's GC is skipped, said on stderr.
    fn gc(&self, inv: &Invocation) -> CniResult<()> {
        let Some(valid) = inv.conf.valid_attachments()? else {
            return Ok(());
        };
        let k: Keys = inv.conf.plugin_keys()?;
        let data_dir = path_setting(Some(&k.data_dir), DEFAULT_DATA_DIR, "dataDir")?;
        let keep: Vec<String> = valid
            .iter()
            .map(|a| crate::files::state_name("", &a.container_id, ""))
            .collect();
        remove_stale_saved(&data_dir, inv.conf.name(), &keep)?;
        let subnet_file = path_setting(Some(&k.subnet_file), DEFAULT_SUBNET_FILE, "subnetFile")?;
        let text = match crate::files::read_string_limited(&subnet_file, crate::files::MAX_FILE) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                eprintln!("flannel: GC of the delegate skipped: {e}");
                return Ok(());
            }
            Err(e) => return Err(e).context("failed to load flannel 'subnet.env' file"),
        };
        let env = parse_subnet_env(&text, &subnet_file.display().to_string())?;
        gc_delegate(inv, delegate_config(&inv.conf.raw, &env)?)
    }

    /// Does nothing and succeeds, as the reference's CHECK: it reads no
    /// subnet.env and does not call the delegate's CHECK.
    fn check(&self, _inv: &Invocation) -> CniResult<()> {
        Ok(())
    }
}

#[cfg(test)]
#[path = "flannel_tests.rs"]
mod tests;
