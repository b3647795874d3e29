//! `firewall` over nftables: a gone container's accept rules in
//! `inet cni_firewall`, whose comment is only the container ID: any live
//! attachment of that container keeps them.

use super::Finding;
use super::firewall::{BY_DEL, KIND};
use super::node::{Node, State};
use crate::netfilter::Backend;
use crate::netfilter::firewall::{self, IngressPolicy, Plan, Target, nftables};
use anyhow::Result;

pub const ACTION: &str = "remove the container's rules";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for a in nftables::read()? {
        let cid = a.container_id.as_str();
        if node.keeps_container(cid) || a.addresses.iter().any(|ip| node.ip_in_use(*ip)) {
            continue;
        }
        let object = format!("nft inet {} {cid}", nftables::TABLE);
        let dead = node
            .attachments
            .iter()
            .find(|a| a.state == State::Dead && a.entry.container_id == cid);
        let (network, action) = match dead {
            Some(a) => (a.entry.network_name.as_str(), BY_DEL),
            None if node.settled(&format!("{KIND} {object}")) => ("", ACTION),
            None => continue,
        };
        let id = a.container_id.clone();
        out.push(
            Finding::new(KIND, network, cid, "", &object, action).fix(move |node| {
                if !present(&id)? {
                    return Ok(true);
                }
                // An ADD that finished meanwhile has a cache entry by now.
                if node.named_now("", &id, "")? {
                    return Ok(false);
                }
                firewall::del(Target::Rules(Backend::Nftables), &plan(&id))?;
                present(&id).map(|p| !p)
            }),
        );
    }
    Ok(())
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
