//! `firewall` over firewalld: a zone source (a host prefix, as the firewall
//! plugin adds) no attachment holds, in the zones the configured firewall
//! plugins use (when firewalld runs; its runtime sources go with it). A
//! source names only its address, and operators add sources too: an
//! ownerless one is judged only inside a subnet the same network's IPAM
//! allocates from.

use super::Finding;
use super::engine::{self, Object, Owner};
use super::firewall::KIND;
use super::node::Node;
use crate::cni::json::map_field;
use crate::netfilter::firewall::{self, IngressPolicy, Plan, Target, firewalld};
use crate::runtime::conf::NetworkList;
use anyhow::Result;
use ipnet::IpNet;
use serde_json::Value;
use std::collections::BTreeMap;

pub const ACTION: &str = "remove the zone source";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let zones = zones(&node.lists);
    if zones.is_empty() {
        return Ok(());
    }
    let mut objects = Vec::new();
    for (zone, subnets) in zones {
        let Some(sources) = firewalld::sources(&zone)? else {
            return Ok(());
        };
        for net in sources {
            let ip = net.addr();
            let owner = Owner::holding(node, ip);
            // Operators add sources too: an ownerless one is judged only
            // inside a subnet the network's IPAM allocates from.
            if owner.candidates.is_empty() && !subnets.iter().any(|s| s.contains(&ip)) {
                continue;
            }
            let label = format!("firewalld zone {zone} source {net}");
            let (z1, z2) = (zone.clone(), zone.clone());
            let present = Box::new(move |_: &Node| present(&z1, net));
            let remove = Box::new(move |_: &Node| remove(&z2, net));
            objects.push(Object {
                addresses: vec![ip],
                ..Object::kernel(KIND, label, owner, ACTION, present, remove)
            });
        }
    }
    engine::findings(node, objects, out)
}

/// Removes the source as the plugin's DEL does.
fn remove(zone: &str, net: IpNet) -> Result<()> {
    let plan = Plan {
        container_id: String::new(),
        addresses: vec![net],
        admin_chain: String::new(),
        policy: IngressPolicy::Open,
        bridge: String::new(),
        zone: zone.to_string(),
    };
    Ok(firewall::del(Target::Firewalld, &plan)?)
}

fn present(zone: &str, net: IpNet) -> Result<bool> {
    Ok(firewalld::sources(zone)?.is_some_and(|s| s.contains(&net)))
}

/// The zones of the configured firewall plugins that may use firewalld
/// (backend `firewalld`, or unset), each with the subnets their networks'
/// IPAM allocates from.
fn zones(lists: &[NetworkList]) -> BTreeMap<String, Vec<IpNet>> {
    let mut out: BTreeMap<String, Vec<IpNet>> = BTreeMap::new();
    for l in lists {
        for p in l.plugins.iter().filter(|p| p.plugin_type == "firewall") {
            let text = |k: &str| match map_field(&p.raw, k) {
                Some(Value::String(s)) => s.as_str(),
                _ => "",
            };
            if !matches!(text("backend"), "" | "firewalld") {
                continue;
            }
            let zone = match text("firewalldZone") {
                "" => firewalld::DEFAULT_ZONE,
                z => z,
            };
            let subnets = out.entry(zone.to_string()).or_default();
            for q in &l.plugins {
                subnets.extend(ipam_subnets(&q.raw));
            }
        }
    }
    out
}

/// `ipam.subnet` and every `ipam.ranges[][].subnet` of a plugin.
fn ipam_subnets(raw: &serde_json::Map<String, Value>) -> Vec<IpNet> {
    let Some(Value::Object(ipam)) = map_field(raw, "ipam") else {
        return Vec::new();
    };
    let mut texts: Vec<&Value> = map_field(ipam, "subnet").into_iter().collect();
    if let Some(Value::Array(sets)) = map_field(ipam, "ranges") {
        for set in sets.iter().filter_map(Value::as_array) {
            for r in set.iter().filter_map(Value::as_object) {
                texts.extend(map_field(r, "subnet"));
            }
        }
    }
    texts
        .into_iter()
        .filter_map(Value::as_str)
        .filter_map(|s| s.parse::<IpNet>().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_of_subnet_and_ranges() {
        let raw = serde_json::json!({"ipam": {"type": "host-local", "subnet": "10.1.0.0/24",
            "ranges": [[{"subnet": "10.2.0.0/24"}], [{"subnet": "fd00::/64"}, {"x": 1}]]}});
        let got = ipam_subnets(raw.as_object().expect("object"));
        let want: Vec<IpNet> = ["10.1.0.0/24", "10.2.0.0/24", "fd00::/64"]
            .iter()
            .map(|s| s.parse().expect("net"))
            .collect();
        assert_eq!(got, want);
    }
}
