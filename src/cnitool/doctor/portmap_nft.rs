//! `portmap` over nftables: the rules of a gone container in the
//! per-container chains of `ip[6] cni_hostport`, whose comment is only the
//! container ID (as the reference's): any attachment of that container owns
//! them.

use super::Finding;
use super::engine::{self, Label, Named, Object, Owner};
use super::node::Node;
use super::portmap::{ACTION_NFT, KIND};
use crate::netfilter::portmap::{self, Plan, nftables};
use crate::netfilter::{Backend, Family};
use anyhow::Result;

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let objects = nftables::read()?
        .into_iter()
        .map(|(family, h)| {
            let table = match family {
                Family::V4 => "ip",
                Family::V6 => "ip6",
            };
            let cid = h.container_id.clone();
            let label = format!("nft {table} {} {cid}", nftables::TABLE);
            let named = Named::new("", &cid, "");
            let (a, b) = (cid.clone(), cid);
            let present = Box::new(move |_: &Node| present(family, &a));
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

fn present(family: Family, id: &str) -> Result<bool> {
    Ok(nftables::read()?
        .iter()
        .any(|(f, h)| *f == family && h.container_id == id))
}
