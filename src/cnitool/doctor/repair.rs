//! `repair`: a live attachment whose netfilter state is gone (a firewalld
//! reload, `iptables -t nat -F`, `nft flush ruleset`). portmap and firewall
//! are asked with their own CHECK (prevResult the cached result) and repaired
//! with their own ADD, which rewrites its chains; the masquerading of bridge
//! and ptp is checked and added as their ADD writes it. Plugins run through
//! the runtime, so another implementation's state is repaired by that one.

use super::Finding;
use super::node::{Cached, Node, State};
use crate::cni::env::Command;
use crate::netfilter::masq::{self, IpMasq};
use crate::runtime::RuntimeConf;
use crate::runtime::conf::{self, NetworkList, PluginConf};
use anyhow::{Context, Result};
use ipnet::IpNet;
use serde_json::Value;

pub const KIND: &str = "repair";
const READD: &str = "re-add with the plugin's ADD";
const MASQ: &str = "add the masquerading its ADD wrote";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let live = node.attachments.iter().enumerate();
    for (i, a) in live.filter(|(_, a)| a.state == State::Alive) {
        let (Ok(list), Some(result)) = (
            conf::list_from_bytes(&a.entry.config, &a.path),
            a.entry.result.as_ref(),
        ) else {
            continue;
        };
        for (j, plugin) in list.plugins.iter().enumerate() {
            let object = match plugin.plugin_type.as_str() {
                "portmap" | "firewall" if check(node, a, &list, plugin, result).is_err() => {
                    format!("{} rules", plugin.plugin_type)
                }
                "bridge" | "ptp" => match masq_plan(a, &list, plugin, result)? {
                    Some((backend, plan)) if masq::check(backend, &plan).is_err() => {
                        format!("{} masquerading", plugin.plugin_type)
                    }
                    _ => continue,
                },
                _ => continue,
            };
            let action = if object.ends_with("rules") {
                READD
            } else {
                MASQ
            };
            let e = &a.entry;
            out.push(
                Finding::new(
                    KIND,
                    &e.network_name,
                    &e.container_id,
                    &e.ifname,
                    &object,
                    action,
                )
                .fix(move |node| repair(node, i, j)),
            );
        }
    }
    Ok(())
}

/// Repairs plugin `j` of attachment `i`, unless the attachment was deleted
/// meanwhile; true when the state checks out afterwards.
fn repair(node: &Node, i: usize, j: usize) -> Result<bool> {
    let a = &node.attachments[i];
    let e = &a.entry;
    let still = a
        .cache
        .read(&e.network_name, &e.container_id, &e.ifname)
        .context("failed to re-read the cache entry")?
        .is_some();
    let list = conf::list_from_bytes(&e.config, &a.path)?;
    let (Some(result), Some(plugin)) = (e.result.as_ref(), list.plugins.get(j)) else {
        return Ok(false);
    };
    if !still {
        // Deleted meanwhile: nothing to repair, and nothing to re-add.
        return Ok(true);
    }
    if let Some((backend, plan)) = masq_plan(a, &list, plugin, result)? {
        if masq::check(backend, &plan).is_err() {
            masq::add(backend, &plan)?;
        }
        return Ok(masq::check(backend, &plan).is_ok());
    }
    if check(node, a, &list, plugin, result).is_ok() {
        return Ok(true);
    }
    let rt = RuntimeConf::of_cached(e, &e.netns);
    node.runtime
        .plugin_verb(&list, plugin, Command::Add, &rt, result, false)?;
    Ok(check(node, a, &list, plugin, result).is_ok())
}

fn check(
    node: &Node,
    a: &Cached,
    list: &NetworkList,
    plugin: &PluginConf,
    result: &Value,
) -> crate::cni::CniResult<()> {
    let rt = RuntimeConf::of_cached(&a.entry, &a.entry.netns);
    // Our CHECK reads the rules the reference writes as its own (and does not
    // share the reference portmap's CHECK failing every IPv4-only pod).
    node.runtime
        .plugin_verb(list, plugin, Command::Check, &rt, result, true)
}

/// The masquerading plan of a bridge or ptp plugin with ipMasq (None for any
/// other plugin, or when its ADD wrote none).
fn masq_plan(
    a: &Cached,
    list: &NetworkList,
    plugin: &PluginConf,
    result: &Value,
) -> Result<Option<(crate::netfilter::Backend, masq::Plan)>> {
    if !matches!(plugin.plugin_type.as_str(), "bridge" | "ptp") {
        return Ok(None);
    }
    let on = crate::cni::json::map_field(&plugin.raw, "ipMasq").and_then(Value::as_bool);
    let backend = crate::cni::json::map_field(&plugin.raw, "ipMasqBackend")
        .and_then(Value::as_str)
        .map(str::to_string);
    let Ok(m) = IpMasq::new(on == Some(true), backend) else {
        return Ok(None);
    };
    let e = &a.entry;
    Ok(m.plan(&list.name, &e.container_id, &e.ifname, &result_nets(result))?)
}

/// The addresses of a cached result with their prefixes.
fn result_nets(result: &Value) -> Vec<IpNet> {
    let Some(Value::Array(ips)) = result.get("ips") else {
        return Vec::new();
    };
    ips.iter()
        .filter_map(|ip| ip.get("address")?.as_str()?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_nets_keep_prefixes() {
        let v = serde_json::json!({"ips": [{"address": "10.1.0.5/24"}, {"address": "fd00::5/64"}, {"address": "bad"}]});
        let nets: Vec<String> = result_nets(&v).iter().map(ToString::to_string).collect();
        assert_eq!(nets, ["10.1.0.5/24", "fd00::5/64"]);
        assert!(result_nets(&serde_json::json!({"ip4": {"ip": "10.1.0.6/24"}})).is_empty());
    }
}
