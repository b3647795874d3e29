//! libcni, as Go's libcni runs networks: build each plugin's stdin, run the
//! list in order (DEL in reverse), chain results, keep libcni's result cache,
//! GC stale attachments, STATUS. `cnitool` is a thin front end over this, and
//! delegating plugins (multus) run their networks through it: it sits below
//! the plugins and is handed the plugin table, as the dispatcher is.

pub mod cache;
pub mod conf;

use crate::cni::Code;
use crate::cni::delegate::Delegate;
use crate::cni::env::{self, CmdArgs, Command};
use crate::cni::result::{Versioned, go_escape};
use crate::cni::{CniResult, Error, Lookup, version};
use crate::quote::quoted;
use cache::{Cache, Cached, Entry};
use conf::{NetworkList, PluginConf};
use serde_json::{Map, Value, json};
use std::path::PathBuf;

/// Where the runtime finds plugins and keeps its cache.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub cni_path: Vec<PathBuf>,
    pub cache: Cache,
    /// This binary's plugins: a plugin found on `cni_path` that is this binary
    /// runs in-process (`crate::cni::no_plugins`: always exec).
    pub plugins: Lookup,
}

/// One attachment's runtime parameters (libcni's RuntimeConf).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimeConf {
    pub container_id: String,
    pub netns: String,
    pub ifname: String,
    pub args: Vec<(String, String)>,
    pub capability_args: Map<String, Value>,
}

/// An attachment that GC must keep (the type plugins read it back into).
pub use crate::cni::config::Attachment;

impl RuntimeConf {
    /// The attachment a cache entry names, in `netns` (empty when it is gone):
    /// what a DEL of that entry is run with.
    pub fn of_cached(entry: &Entry, netns: &str) -> RuntimeConf {
        RuntimeConf {
            container_id: entry.container_id.clone(),
            netns: netns.to_string(),
            ifname: entry.ifname.clone(),
            args: entry
                .cni_args
                .iter()
                .map(|[k, v]| (k.clone(), v.clone()))
                .collect(),
            capability_args: entry.capability_args.clone(),
        }
    }

    fn cmd_args(&self, cni_path: &[PathBuf]) -> CmdArgs {
        CmdArgs {
            container_id: self.container_id.clone(),
            netns: self.netns.clone(),
            ifname: self.ifname.clone(),
            args: self
                .args
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(";"),
            path: cni_path.to_vec(),
            netns_override: false,
        }
    }

    /// libcni checks these before running anything.
    fn validate(&self, network: &str) -> CniResult<()> {
        env::validate_container_id(&self.container_id)?;
        env::validate_network_name(network)?;
        env::validate_ifname(&self.ifname)
    }
}

fn describe(plugin: &PluginConf, list: &NetworkList) -> String {
    format!(
        "type={} name={} ({})",
        quoted(&plugin.plugin_type),
        quoted(&list.name),
        list.source.display()
    )
}

/// A plugin's stdin: its own JSON with the list's name and version, then
/// prevResult, runtimeConfig (from capabilities) and any extra keys.
pub fn stdin_for(
    plugin: &PluginConf,
    list: &NetworkList,
    prev: Option<&Value>,
    capability_args: Option<&Map<String, Value>>,
    extra: &[(&str, Value)],
) -> Vec<u8> {
    let mut obj = plugin.raw.clone();
    obj.insert("name".into(), json!(list.name));
    obj.insert("cniVersion".into(), json!(list.cni_version));
    if let Some(prev) = prev {
        obj.insert("prevResult".into(), prev.clone());
    }
    if let Some(caps) = capability_args {
        inject_runtime_config(&mut obj, caps);
    }
    for (k, v) in extra {
        obj.insert((*k).to_string(), v.clone());
    }
    // libcni marshals a Go map: keys sorted, HTML characters escaped.
    go_escape(&Value::Object(obj).to_string()).into_bytes()
}

/// Capabilities the plugin enables and the runtime supplied go to
/// `runtimeConfig`, which is then replaced wholesale (libcni's rule).
fn inject_runtime_config(obj: &mut Map<String, Value>, caps: &Map<String, Value>) {
    let Some(Value::Object(enabled)) = crate::cni::json::map_field(obj, "capabilities") else {
        return;
    };
    let runtime_config: Map<String, Value> = enabled
        .iter()
        .filter(|(_, on)| on.as_bool() == Some(true))
        .filter_map(|(name, _)| caps.get(name).map(|v| (name.clone(), v.clone())))
        .collect();
    if !runtime_config.is_empty() {
        obj.insert("runtimeConfig".into(), Value::Object(runtime_config));
    }
}

/// A plugin's stdout as a result: JSON, `cniVersion` stamped when missing.
fn result_value(stdout: &str, config_version: &str, plugin: &str) -> CniResult<Option<Value>> {
    if stdout.trim().is_empty() {
        return Ok(None);
    }
    let mut value: Value = crate::cni::json::from_str(stdout).map_err(|e| {
        Error::caused_by(
            Code::Decode,
            format!(
                "plugin {plugin} printed a result that is not JSON",
                plugin = quoted(&plugin)
            ),
            e,
        )
    })?;
    if value.is_null() {
        return Ok(None);
    }
    let obj = value.as_object_mut().ok_or_else(|| {
        Error::decode(format!(
            "plugin {plugin} printed a non-object result",
            plugin = quoted(&plugin)
        ))
    })?;
    let stamped = obj
        .get("cniVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty());
    if !stamped {
        obj.insert("cniVersion".into(), json!(config_version));
    }
    Ok(Some(value))
}

/// A result converted to `to_version` (as libcni converts cached results).
pub fn convert_result(value: &Value, to_version: &str) -> CniResult<Value> {
    let parsed = Versioned::parse_own(value.clone(), to_version)
        .map_err(|e| Error::caused_by(Code::Decode, "failed to parse result", e))?;
    let converted = parsed.convert(to_version)?;
    crate::cni::json::from_str(&converted.to_json())
        .map_err(|e| Error::caused_by(Code::Internal, "failed to re-read converted result", e))
}

/// Wraps a plugin's error as libcni does, keeping its code.
fn wrap(e: Error, plugin: &PluginConf, list: &NetworkList, command: Command) -> Error {
    let verb = match command {
        Command::Add => "add",
        Command::Del => "delete",
        Command::Check => "check",
        Command::Gc => "gc",
        Command::Status => "status",
        Command::Version => "version",
    };
    e.context(format!("plugin {} failed ({verb})", describe(plugin, list)))
}

/// Which implementation of a plugin's type runs one verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    /// The one CNI_PATH finds, as for the whole list.
    OnCniPath,
    /// This binary's, whatever CNI_PATH holds (a CHECK that reads another
    /// implementation's rules as its own would).
    Ours,
}

impl Runtime {
    fn run(
        &self,
        plugin: &PluginConf,
        command: Command,
        rt: &RuntimeConf,
        stdin: &[u8],
    ) -> CniResult<Option<String>> {
        let args = rt.cmd_args(&self.cni_path);
        Delegate::new(&plugin.plugin_type, &args, stdin)?
            .in_process(self.plugins)
            .invoke(command)
    }

    /// ADD through the whole list; the final result (in the list's version) is
    /// cached and returned. Nothing is cached when a plugin fails.
    pub fn add(&self, list: &NetworkList, rt: &RuntimeConf) -> CniResult<Value> {
        rt.validate(&list.name)?;
        let mut prev: Option<Value> = None;
        for plugin in &list.plugins {
            let stdin = stdin_for(plugin, list, prev.as_ref(), Some(&rt.capability_args), &[]);
            let out = self
                .run(plugin, Command::Add, rt, &stdin)
                .map_err(|e| wrap(e, plugin, list, Command::Add))?;
            let value = result_value(
                &out.unwrap_or_default(),
                &list.cni_version,
                &plugin.plugin_type,
            )
            .map_err(|e| wrap(e, plugin, list, Command::Add))?;
            prev = value.or(prev);
        }
        let result = match &prev {
            Some(v) => Some(convert_result(v, &list.cni_version)?),
            None => None,
        };
        self.cache.write(&Entry {
            kind: cache::KIND.into(),
            container_id: rt.container_id.clone(),
            config: list.bytes.clone(),
            ifname: rt.ifname.clone(),
            network_name: list.name.clone(),
            netns: rt.netns.clone(),
            cni_args: rt
                .args
                .iter()
                .map(|(k, v)| [k.clone(), v.clone()])
                .collect(),
            capability_args: rt.capability_args.clone(),
            result: prev,
        })?;
        Ok(result.unwrap_or(Value::Null))
    }

    /// The cached result of an attachment in the list's version; None without a file.
    fn cached_result(&self, list: &NetworkList, rt: &RuntimeConf) -> CniResult<Option<Value>> {
        let raw = match self.cache.read(&list.name, &rt.container_id, &rt.ifname)? {
            None => return Ok(None),
            Some(Cached::Entry(e)) => e.result,
            Some(Cached::LegacyResult(v)) => Some(v),
        };
        raw.map(|v| convert_result(&v, &list.cni_version))
            .transpose()
    }

    /// CHECK in list order against the cached result.
    pub fn check(&self, list: &NetworkList, rt: &RuntimeConf) -> CniResult<()> {
        rt.validate(&list.name)?;
        if !version::at_least(version::effective(&list.cni_version), "0.4.0")? {
            return Err(Error::new(
                crate::cni::Code::IncompatibleVersion,
                format!(
                    "configuration version {} does not support the CHECK command",
                    quoted(&list.cni_version)
                ),
            ));
        }
        if list.disable_check {
            return Ok(());
        }
        let cached = self.cached_result(list, rt)?.ok_or_else(|| {
            Error::invalid_config(format!(
                "no cached result for network {}, container {}, interface {} in {}: \
                 was it added with this cache directory?",
                quoted(&list.name),
                quoted(&rt.container_id),
                quoted(&rt.ifname),
                self.cache.dir.display()
            ))
        })?;
        for plugin in &list.plugins {
            let stdin = stdin_for(plugin, list, Some(&cached), Some(&rt.capability_args), &[]);
            self.run(plugin, Command::Check, rt, &stdin)
                .map_err(|e| wrap(e, plugin, list, Command::Check))?;
        }
        Ok(())
    }

    /// One plugin of the list alone (CHECK, ADD to repair its state, DEL to
    /// undo that repair) with `prev` as prevResult, built as for the whole
    /// list, run by `implementation`; the cache is untouched.
    pub fn plugin_verb(
        &self,
        list: &NetworkList,
        plugin: &PluginConf,
        command: Command,
        rt: &RuntimeConf,
        prev: &Value,
        implementation: Implementation,
    ) -> CniResult<()> {
        rt.validate(&list.name)?;
        let prev = convert_result(prev, &list.cni_version)?;
        let stdin = stdin_for(plugin, list, Some(&prev), Some(&rt.capability_args), &[]);
        let ran = match implementation {
            Implementation::Ours => {
                let args = rt.cmd_args(&self.cni_path);
                Delegate::new(&plugin.plugin_type, &args, &stdin)?
                    .in_process(self.plugins)
                    .invoke_ours(command)
            }
            Implementation::OnCniPath => self.run(plugin, command, rt, &stdin),
        };
        ran.map_err(|e| wrap(e, plugin, list, command))?;
        Ok(())
    }

    /// DEL in reverse order; the cache entry goes once every plugin succeeded.
    pub fn del(&self, list: &NetworkList, rt: &RuntimeConf) -> CniResult<()> {
        rt.validate(&list.name)?;
        let prev = if version::at_least(version::effective(&list.cni_version), "0.4.0")? {
            match self.cached_result(list, rt) {
                Ok(v) => v,
                // An unreadable cache must not block DEL: drop it and go on.
                Err(_) => {
                    self.cache
                        .remove(&list.name, &rt.container_id, &rt.ifname)?;
                    None
                }
            }
        } else {
            None
        };
        for plugin in list.plugins.iter().rev() {
            let stdin = stdin_for(plugin, list, prev.as_ref(), Some(&rt.capability_args), &[]);
            self.run(plugin, Command::Del, rt, &stdin)
                .map_err(|e| wrap(e, plugin, list, Command::Del))?;
        }
        self.cache.remove(&list.name, &rt.container_id, &rt.ifname)
    }

    /// GC: DEL every cached attachment of the network that is not valid (all of
    /// them when `valid` is None, as libcni with no args), then GC each plugin
    /// (spec 1.1.0) with the valid list. Errors are collected.
    pub fn gc(&self, list: &NetworkList, valid: Option<&[Attachment]>) -> CniResult<()> {
        if list.disable_gc {
            return Ok(());
        }
        let mut errors = Vec::new();
        for entry in self.cache.entries_of(&list.name)? {
            let keep = valid.is_some_and(|v| {
                v.iter()
                    .any(|a| a.container_id == entry.container_id && a.ifname == entry.ifname)
            });
            if keep {
                continue;
            }
            let rt = RuntimeConf::of_cached(&entry, &entry.netns);
            if let Err(e) = self.del(list, &rt) {
                errors.push(e.msg);
            }
        }
        if version::at_least(version::effective(&list.cni_version), "1.1.0")? {
            let attachments: Option<Value> = valid.map(|v| {
                v.iter()
                    .map(|a| json!({"containerID": a.container_id, "ifname": a.ifname}))
                    .collect()
            });
            let extra: Vec<(&str, Value)> = match &attachments {
                Some(a) => vec![
                    ("cni.dev/valid-attachments", a.clone()),
                    ("cni.dev/attachments", a.clone()),
                ],
                None => Vec::new(),
            };
            for plugin in &list.plugins {
                let stdin = stdin_for(plugin, list, None, None, &extra);
                if let Err(e) = self.run(plugin, Command::Gc, &RuntimeConf::default(), &stdin) {
                    errors.push(wrap(e, plugin, list, Command::Gc).msg);
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::internal(errors.join("; ")))
        }
    }

    /// STATUS of each plugin in order (1.1.0 lists); the first error keeps the
    /// plugin's code (50, 51, …) and names the plugin.
    pub fn status(&self, list: &NetworkList) -> CniResult<()> {
        if !version::at_least(version::effective(&list.cni_version), "1.1.0")? {
            return Ok(());
        }
        for plugin in &list.plugins {
            let stdin = stdin_for(plugin, list, None, None, &[]);
            self.run(plugin, Command::Status, &RuntimeConf::default(), &stdin)
                .map_err(|e| wrap(e, plugin, list, Command::Status))?;
        }
        Ok(())
    }

    /// The versions a plugin says it supports (VERSION).
    pub fn plugin_versions(&self, plugin: &PluginConf) -> CniResult<Vec<String>> {
        let rt = RuntimeConf {
            container_id: "dummy".into(),
            netns: "dummy".into(),
            ifname: "dummy".into(),
            ..RuntimeConf::default()
        };
        let out = self
            .run(plugin, Command::Version, &rt, br#"{"cniVersion":"1.1.0"}"#)?
            .unwrap_or_default();
        let reply: Value = crate::cni::json::from_str(&out).map_err(|e| {
            Error::caused_by(
                Code::Decode,
                format!(
                    "plugin {} gave an unreadable VERSION reply",
                    quoted(&plugin.plugin_type)
                ),
                e,
            )
        })?;
        Ok(reply
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|v| {
                v.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default())
    }
}

/// cnitool's container ID: `cnitool-` + the first 20 hex digits of SHA-512 of the netns path.
pub fn cnitool_container_id(netns: &str) -> String {
    format!(
        "cnitool-{}",
        &crate::digest::sha512_hex(netns.as_bytes())[..20]
    )
}

#[cfg(test)]
mod tests;
