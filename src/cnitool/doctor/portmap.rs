//! `portmap`: hostPort mappings of attachments that are gone: the
//! reference's per-container `CNI-DN-<hash>` chains in `nat` (iptables) and
//! their jumps from CNI-HOSTPORT-DNAT, whose comment names network and
//! container; the rules in the per-container chains of `ip[6] cni_hostport`
//! (nftables), whose comment is only the container ID (as the reference's):
//! any attachment of that container owns those.

use super::Finding;
use super::chains::{self, Owned};
use super::engine::{self, Label, Named, Object, Owner};
use super::node::Node;
use crate::netfilter::portmap::{self, Plan, iptables, nftables};
use crate::netfilter::{Backend, Family};
use anyhow::Result;

pub const KIND: &str = "portmap";
pub const ACTION: &str = "remove chain and its CNI-HOSTPORT-DNAT jumps";
pub const ACTION_NFT: &str = "remove the container's rules";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for flavour in crate::netfilter::iptables::flavours() {
        if !chains::usable(flavour) {
            continue;
        }
        let owned = iptables::read(flavour)?
            .into_iter()
            .map(|(family, m)| Owned {
                family,
                network: m.network,
                container_id: m.container_id,
                chain: m.chain,
                addresses: m.targets,
            })
            .collect();
        let objects = chains::objects(node, KIND, ACTION, (flavour, owned), |f, network, id| {
            Ok(portmap::del(
                Backend::Iptables(f),
                &Plan::named(network, id),
            )?)
        });
        engine::findings(node, objects, out)?;
    }
    Ok(())
}

pub fn find_nft(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let objects = nftables::read()?
        .into_iter()
        .map(|(family, h)| {
            let table = match family {
                Family::V4 => "ip",
                Family::V6 => "ip6",
            };
            let cid = h.container_id.clone();
            let label = format!("nft {table} {} {cid}", nftables::TABLE);
            let named = Named::new("", &node.container_of(&cid), "");
            let (a, b) = (cid.clone(), cid);
            let present = Box::new(move |_: &Node| present_nft(family, &a));
            let remove = Box::new(move |_: &Node| {
                Ok(portmap::del(Backend::Nftables, &Plan::named("", &b))?)
            });
            let owner = Owner::of(node, named);
            Object {
                label_when_dead: Label::EntryNetwork,
                addresses: h.saddrs,
                ..Object::kernel(KIND, label, owner, ACTION_NFT, present, remove)
            }
        })
        .collect();
    engine::findings(node, objects, out)
}

fn present_nft(family: Family, id: &str) -> Result<bool> {
    Ok(nftables::read()?
        .iter()
        .any(|(f, h)| *f == family && h.container_id == id))
}
