//! `masq`: ipMasq masquerading (bridge, ptp) of attachments that are gone:
//! the reference's per-container `CNI-<hash>` chains in `nat` and their
//! POSTROUTING jumps, whose comment names network and container; and the
//! rules in nftables' `inet cni_plugins_masquerade`, whose comment names
//! network, interface and container.

use super::Finding;
use super::chains::{self, Owned};
use super::engine::{self, Label, Named, Object, Owner};
use super::node::Node;
use crate::netfilter::Backend;
use crate::netfilter::masq::{self, Plan, iptables, nftables};
use anyhow::Result;

pub const KIND: &str = "masq";
pub const ACTION: &str = "remove chain and its POSTROUTING jumps";
pub const ACTION_NFT: &str = "remove the attachment's rules";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    engine::findings(node, nft_objects(node)?, out)?;
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
                addresses: m.sources,
            })
            .collect();
        let objects = chains::objects(node, KIND, ACTION, (flavour, owned), |f, network, id| {
            let plan = Plan::new(network, id, "", &[]);
            Ok(masq::del(Backend::Iptables(f), &plan)?)
        });
        engine::findings(node, objects, out)?;
    }
    Ok(())
}

/// The nftables rules of each attachment.
fn nft_objects(node: &Node) -> Result<Vec<Object>> {
    Ok(nftables::read()?
        .into_iter()
        .map(|m| {
            let label = format!("nft inet {} {}", nftables::TABLE, m.instance);
            let named = Named::new(&m.network, &m.container_id, &m.ifname);
            let (a, b) = (named.clone(), named.clone());
            let present = Box::new(move |_: &Node| present_nft(&a));
            let remove = Box::new(move |_: &Node| {
                let plan = Plan::new(&b.network, &b.container_id, &b.ifname, &[]);
                Ok(masq::del(Backend::Nftables, &plan)?)
            });
            let owner = Owner::of(node, named);
            Object {
                label_when_dead: Label::Object,
                addresses: m.sources,
                ..Object::kernel(KIND, label, owner, ACTION_NFT, present, remove)
            }
        })
        .collect())
}

fn present_nft(n: &Named) -> Result<bool> {
    Ok(nftables::read()?.iter().any(|m| {
        m.network == n.network && m.container_id == n.container_id && m.ifname == n.ifname
    }))
}
