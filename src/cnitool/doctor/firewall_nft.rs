//! `firewall` over nftables: a gone container's accept rules in
//! `inet cni_firewall`, whose comment is only the container ID: any
//! attachment of that container owns them.

use super::Finding;
use super::engine::{self, Label, Named, Object, Owner};
use super::firewall::KIND;
use super::node::Node;
use crate::netfilter::Backend;
use crate::netfilter::firewall::{self, IngressPolicy, Plan, Target, nftables};
use anyhow::Result;

pub const ACTION: &str = "remove the container's rules";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let objects = nftables::read()?
        .into_iter()
        .map(|a| {
            let cid = a.container_id.clone();
            let label = format!("nft inet {} {cid}", nftables::TABLE);
            let named = Named::new("", &cid, "");
            let (p, r) = (cid.clone(), cid);
            let present = Box::new(move |_: &Node| present(&p));
            let remove = Box::new(move |_: &Node| {
                Ok(firewall::del(Target::Rules(Backend::Nftables), &plan(&r))?)
            });
            let owner = Owner::of(node, named);
            Object {
                label_when_dead: Label::EntryNetwork,
                addresses: a.addresses,
                ..Object::kernel(KIND, label, owner, ACTION, present, remove)
            }
        })
        .collect();
    engine::findings(node, objects, out)
}

/// A DEL's plan: nftables' rules are found by the container ID alone.
fn plan(container_id: &str) -> Plan {
    Plan {
        container_id: container_id.to_string(),
        addresses: Vec::new(),
        admin_chain: String::new(),
        policy: IngressPolicy::Open,
        bridge: String::new(),
        zone: String::new(),
    }
}

fn present(id: &str) -> Result<bool> {
    Ok(nftables::read()?.iter().any(|a| a.container_id == id))
}
