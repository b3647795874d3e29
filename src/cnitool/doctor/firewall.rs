//! `firewall`: the firewall plugin's state of attachments that are gone, in
//! each of its backends:
//! - iptables: accept rules in CNI-FORWARD for addresses no attachment holds.
//!   The rules name only the address: its owners are the attachments whose
//!   result holds it, and any namespace that holds it keeps them.
//! - nftables: a gone container's rules in `inet cni_firewall`, whose
//!   comment is only the container ID: any attachment of it owns them.
//! - firewalld: a zone source (a host prefix, as the plugin adds) no
//!   attachment holds, in the zones the configured firewall plugins use
//!   (while firewalld runs; its runtime sources go with it). Operators add
//!   sources too: an ownerless one is judged only inside a subnet the same
//!   network's IPAM allocates from.

use super::Finding;
use super::engine::{self, Label, Named, Object, Owner};
use super::node::Node;
use crate::netfilter::firewall::{
    self, IngressPolicy, Plan, Target, firewalld, iptables, nftables,
};
use crate::netfilter::iptables::Flavour;
use crate::netfilter::{Backend, Family};
use anyhow::Result;
use ipnet::IpNet;
use std::collections::BTreeMap;

pub const KIND: &str = "firewall";
pub const ACTION: &str = "remove the address's accept rules";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for flavour in crate::netfilter::iptables::flavours() {
        if super::chains::usable(flavour) {
            let objects = iptables::read(flavour)?
                .into_iter()
                .map(|net| object(node, flavour, net))
                .collect();
            engine::findings(node, objects, out)?;
        }
    }
    Ok(())
}

fn object(node: &Node, flavour: Flavour, net: IpNet) -> Object {
    let ip = net.addr();
    let family = if ip.is_ipv4() { Family::V4 } else { Family::V6 };
    let label = format!(
        "{} filter {} {net}",
        flavour.command(family),
        iptables::FORWARD_CHAIN
    );
    let present = Box::new(move |_: &Node| Ok(iptables::read(flavour)?.contains(&net)));
    let remove = Box::new(move |_: &Node| Ok(firewall::del_addresses(flavour, &[net])?));
    Object {
        addresses: vec![ip],
        // Its DEL runs the default tools only.
        dead_action: (flavour != Flavour::Default).then_some(ACTION),
        ..Object::kernel(
            KIND,
            label,
            Owner::holding(node, ip),
            ACTION,
            present,
            remove,
        )
    }
}

pub const ACTION_NFT: &str = "remove the container's rules";

pub fn find_nft(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let objects = nftables::read()?
        .into_iter()
        .map(|a| {
            let cid = a.container_id.clone();
            let label = format!("nft inet {} {cid}", nftables::TABLE);
            let named = Named::new("", &node.container_of(&cid), "");
            let (p, r) = (cid.clone(), cid);
            let present = Box::new(move |_: &Node| present_nft(&p));
            let remove = Box::new(move |_: &Node| {
                Ok(firewall::del(
                    Target::Rules(Backend::Nftables),
                    &plan(&r, Vec::new(), ""),
                )?)
            });
            let owner = Owner::of(node, named);
            Object {
                label_when_dead: Label::EntryNetwork,
                addresses: a.addresses,
                ..Object::kernel(KIND, label, owner, ACTION_NFT, present, remove)
            }
        })
        .collect();
    engine::findings(node, objects, out)
}

/// A DEL's plan: nftables' rules are found by the container ID alone,
/// firewalld's sources by zone and address.
fn plan(container_id: &str, addresses: Vec<IpNet>, zone: &str) -> Plan {
    Plan {
        container_id: container_id.to_string(),
        addresses,
        admin_chain: String::new(),
        policy: IngressPolicy::Open,
        bridge: String::new(),
        zone: zone.to_string(),
    }
}

fn present_nft(id: &str) -> Result<bool> {
    Ok(nftables::read()?.iter().any(|a| a.container_id == id))
}

pub const ACTION_SOURCE: &str = "remove the zone source";

pub fn find_firewalld(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let zones = zones(node);
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
            let present = Box::new(move |_: &Node| present_source(&z1, net));
            let remove = Box::new(move |_: &Node| remove(&z2, net));
            objects.push(Object {
                addresses: vec![ip],
                ..Object::kernel(KIND, label, owner, ACTION_SOURCE, present, remove)
            });
        }
    }
    engine::findings(node, objects, out)
}

/// Removes the source as the plugin's DEL does.
fn remove(zone: &str, net: IpNet) -> Result<()> {
    Ok(firewall::del(
        Target::Firewalld,
        &plan("", vec![net], zone),
    )?)
}

fn present_source(zone: &str, net: IpNet) -> Result<bool> {
    Ok(firewalld::sources(zone)?.is_some_and(|s| s.contains(&net)))
}

/// The zones of the configured firewall plugins that may use firewalld,
/// each with the subnets their networks' IPAM allocates from.
fn zones(node: &Node) -> BTreeMap<String, Vec<IpNet>> {
    let mut out: BTreeMap<String, Vec<IpNet>> = BTreeMap::new();
    let found = node.footprints(false);
    for (list, _, f) in &found {
        if let Some(zone) = &f.firewalld_zone {
            let same = found.iter().filter(|(l, _, _)| std::ptr::eq(*l, *list));
            let subnets = out.entry(zone.clone()).or_default();
            subnets.extend(same.flat_map(|(_, _, g)| g.subnets.iter().copied()));
        }
    }
    out
}
