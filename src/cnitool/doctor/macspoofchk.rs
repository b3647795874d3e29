//! `macspoofchk`: bridge's MAC spoof check (nftables `bridge nat`) of
//! attachments that are gone: a `cni-br-iface-<containerID>-<ifname>` chain
//! pair and its PREROUTING jump. The chains name no network, and the
//! `-` between ID and interface cannot be told from one inside either: the
//! attachments whose `<containerID>-<ifname>` is the chain's own it.

use super::Finding;
use super::engine::{self, Named, Object, Owner};
use super::node::Node;
use crate::netfilter::macspoof;
use anyhow::Result;

pub const KIND: &str = "macspoofchk";
pub const ACTION: &str = "remove chains and their PREROUTING jump";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut objects = Vec::new();
    for c in macspoof::read()? {
        let candidates: Vec<usize> = (0..node.attachments.len())
            .filter(|&i| {
                let e = &node.attachments[i].entry;
                format!("{}-{}", e.container_id, e.ifname) == c.id
            })
            .collect();
        // The host veth lives as long as the container's end.
        let busy = c.iifname.as_deref().map_or(Ok(false), host_link)?;
        let label = format!("nft bridge nat {}", c.chain);
        let (id, chain) = (c.id.clone(), c.chain.clone());
        let present = Box::new(move |_: &Node| present(&chain));
        let remove = Box::new(move |_: &Node| Ok(macspoof::teardown_id(&id)?));
        let owner = Owner {
            candidates,
            named: Named::nobody(),
        };
        objects.push(Object {
            busy,
            ..Object::kernel(KIND, label, owner, ACTION, present, remove)
        });
    }
    engine::findings(node, objects, out)
}

/// Whether the host (this namespace) has a link of that name.
fn host_link(name: &str) -> Result<bool> {
    match crate::netlink::Socket::open()?.link_by_name(name) {
        Ok(_) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn present(chain: &str) -> Result<bool> {
    Ok(macspoof::read()?.iter().any(|c| c.chain == chain))
}
