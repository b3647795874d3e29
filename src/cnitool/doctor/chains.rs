//! What ipMasq's and portmap's iptables kinds share: a per-container chain in
//! `nat` whose rules' comment names network and container (the reference's
//! format), listed when its owner is dead or, ownerless, once settled and
//! while no namespace holds an address its rules name; removed by the
//! plugin's own DEL in the netfilter layer.

use super::Finding;
use super::node::Node;
use crate::netfilter::Family;
use crate::netfilter::iptables::{Flavour, other_flavour, use_flavour};
use anyhow::Result;
use std::net::IpAddr;

pub use super::BY_DEL;

/// A per-container chain and what names its owner.
pub struct Owned {
    pub family: Family,
    pub network: String,
    pub container_id: String,
    pub chain: String,
    /// The addresses its rules name (evidence of use).
    pub addresses: Vec<IpAddr>,
}

/// The iptables flavours to look at: the default tools', and the other
/// flavour's when a host has both (one it switched from may keep rules).
pub fn flavours() -> Vec<Flavour> {
    std::iter::once(Flavour::Default)
        .chain(other_flavour())
        .collect()
}

/// Findings of `kind` for `chains`, read in `flavour`; `remove(network,
/// container)` is the plugin's DEL of that container's rules (run in the
/// same flavour).
pub fn find(
    node: &Node,
    out: &mut Vec<Finding>,
    kind: &'static str,
    action: &'static str,
    (flavour, chains): (Flavour, Vec<Owned>),
    remove: fn(&str, &str) -> Result<()>,
) {
    for m in chains {
        if node.keeps(&m.network, &m.container_id, "") {
            continue;
        }
        let object = format!("{} nat {}", flavour.command(m.family), m.chain);
        let dead = node.dead_owner(&m.network, &m.container_id, "").is_some();
        if !dead
            && (!node.settled(&format!("{kind} {object}"))
                || m.addresses.iter().any(|ip| node.ip_in_use(*ip)))
        {
            continue;
        }
        // Its DEL runs the default tools: another flavour's chain is ours to remove.
        let action = if dead && flavour == Flavour::Default {
            BY_DEL
        } else {
            action
        };
        let Owned {
            family,
            network,
            container_id,
            chain,
            ..
        } = m;
        out.push(
            Finding::new(kind, &network, &container_id, "", &object, action).fix(move |node| {
                let _flavour = use_flavour(flavour);
                if !present(family, &chain)? {
                    return Ok(true);
                }
                // An ADD that finished meanwhile has a cache entry by now.
                if node.named_now(&network, &container_id, "")? {
                    return Ok(false);
                }
                remove(&network, &container_id)?;
                present(family, &chain).map(|p| !p)
            }),
        );
    }
}

/// Whether iptables (either family) can be read here at all.
pub fn usable() -> bool {
    crate::netfilter::iptables::usable(Family::V4) || crate::netfilter::iptables::usable(Family::V6)
}

/// Whether the family's `nat` table still has the chain.
fn present(family: Family, chain: &str) -> Result<bool> {
    Ok(crate::netfilter::iptables::save_existing(family, "nat")?
        .is_some_and(|s| s.has_chain(chain)))
}
