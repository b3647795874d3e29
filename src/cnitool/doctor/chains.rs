//! What ipMasq's and portmap's iptables kinds share: a per-container chain in
//! `nat` whose rules' comment names network and container (the reference's
//! format), owned by that attachment (any interface), in use while a
//! namespace holds an address its rules name; removed by the plugin's own
//! DEL in the netfilter layer.

use super::engine::{Label, Named, Object, Owner};
use super::node::Node;
use crate::netfilter::Family;
use crate::netfilter::iptables::Flavour;
use anyhow::Result;
use std::net::IpAddr;

/// A per-container chain and what names its owner.
pub struct Owned {
    pub family: Family,
    pub network: String,
    pub container_id: String,
    pub chain: String,
    /// The addresses its rules name (evidence of use).
    pub addresses: Vec<IpAddr>,
}

/// The objects of `kind` for `chains`, read in `flavour`; `remove(flavour,
/// network, container)` is the plugin's DEL of that container's rules (run
/// in the same flavour).
pub fn objects(
    node: &Node,
    kind: &'static str,
    action: &'static str,
    (flavour, chains): (Flavour, Vec<Owned>),
    remove: fn(Flavour, &str, &str) -> Result<()>,
) -> Vec<Object> {
    chains
        .into_iter()
        .map(|m| {
            let label = format!("{} nat {}", flavour.command(m.family), m.chain);
            let named = Named::new(&m.network, &m.container_id, "");
            let (family, chain) = (m.family, m.chain.clone());
            let (network, id) = (m.network.clone(), m.container_id.clone());
            let present = Box::new(move |_: &Node| present(flavour, family, &chain));
            let remove = Box::new(move |_: &Node| remove(flavour, &network, &id));
            Object {
                label_when_dead: Label::Object,
                addresses: m.addresses,
                // Its DEL runs the default tools: another flavour's chain is ours to remove.
                dead_action: (flavour != Flavour::Default).then_some(action),
                ..Object::kernel(kind, label, Owner::of(node, named), action, present, remove)
            }
        })
        .collect()
}

/// Whether the flavour's iptables (either family) can be read here at all.
pub fn usable(flavour: Flavour) -> bool {
    flavour.usable(Family::V4) || flavour.usable(Family::V6)
}

/// Whether the family's `nat` table still has the chain: looked up by name
/// over netlink on the nf_tables flavour, else in the saved table.
fn present(flavour: Flavour, family: Family, chain: &str) -> Result<bool> {
    use crate::netfilter::xtnft;
    if xtnft::applies(flavour, family)
        && let Ok(found) =
            xtnft::open().and_then(|mut s| xtnft::exists(&mut s, family, "nat", chain))
    {
        return Ok(found);
    }
    Ok(flavour
        .save_existing(family, "nat")?
        .is_some_and(|s| s.has_chain(chain)))
}
