//! `macspoofchk`: bridge's MAC spoof check (nftables `bridge nat`) of
//! attachments that are gone: a `cni-br-iface-<containerID>-<ifname>` chain
//! pair and its PREROUTING jump. The chains name no network.

use super::Finding;
use super::node::{Node, State};
use crate::netfilter::macspoof;
use anyhow::Result;

pub const KIND: &str = "macspoofchk";
pub const ACTION: &str = "remove chains and their PREROUTING jump";
pub use super::BY_DEL;

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for c in macspoof::read()? {
        let owners: Vec<_> = node
            .attachments
            .iter()
            .filter(|a| format!("{}-{}", a.entry.container_id, a.entry.ifname) == c.id)
            .collect();
        if owners.iter().any(|a| a.state != State::Dead) {
            continue;
        }
        let object = format!("nft bridge nat {}", c.chain);
        let (network, cid, ifname, action) = match owners.first() {
            Some(a) => (
                a.entry.network_name.as_str(),
                a.entry.container_id.as_str(),
                a.entry.ifname.as_str(),
                BY_DEL,
            ),
            // The host veth lives as long as the container's end: kept while it is there.
            None if c.iifname.as_deref().map_or(Ok(false), host_link)? => continue,
            None if node.settled(&format!("{KIND} {object}")) => ("", "", "", ACTION),
            None => continue,
        };
        let (id, chain) = (c.id.clone(), c.chain.clone());
        out.push(
            Finding::new(KIND, network, cid, ifname, &object, action).fix(move |_| {
                if !present(&chain)? {
                    return Ok(true);
                }
                macspoof::teardown_id(&id)?;
                present(&chain).map(|p| !p)
            }),
        );
    }
    Ok(())
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
