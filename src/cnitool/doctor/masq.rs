//! `masq`: ipMasq masquerading (bridge, ptp) of attachments that are gone:
//! the reference's per-container `CNI-<hash>` chains in `nat` and their
//! POSTROUTING jumps, whose comment names network and container; and the
//! rules in nftables' `inet cni_plugins_masquerade`, whose comment names
//! network, interface and container.

use super::Finding;
use super::chains::{self, Owned};
use super::node::Node;
use crate::netfilter::Backend;
use crate::netfilter::masq::{self, Plan, iptables, nftables};
use anyhow::Result;

pub const KIND: &str = "masq";
pub const ACTION: &str = "remove chain and its POSTROUTING jumps";
pub const ACTION_NFT: &str = "remove the attachment's rules";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    find_nft(node, out)?;
    for flavour in chains::flavours() {
        let _flavour = crate::netfilter::iptables::use_flavour(flavour);
        if !chains::usable() {
            continue;
        }
        let owned = iptables::read()?
            .into_iter()
            .map(|(family, m)| Owned {
                family,
                network: m.network,
                container_id: m.container_id,
                chain: m.chain,
                addresses: m.sources,
            })
            .collect();
        chains::find(node, out, KIND, ACTION, (flavour, owned), |network, id| {
            Ok(masq::del(
                Backend::Iptables,
                &Plan::new(network, id, "", &[]),
            )?)
        });
    }
    Ok(())
}

/// The nftables rules of attachments no live one owns.
fn find_nft(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for m in nftables::read()? {
        if node.keeps(&m.network, &m.container_id, &m.ifname) {
            continue;
        }
        let object = format!("nft inet {} {}", nftables::TABLE, m.instance);
        let dead = node
            .dead_owner(&m.network, &m.container_id, &m.ifname)
            .is_some();
        if !dead
            && (!node.settled(&format!("{KIND} {object}"))
                || m.sources.iter().any(|ip| node.ip_in_use(*ip)))
        {
            continue;
        }
        let action = if dead { chains::BY_DEL } else { ACTION_NFT };
        let (network, id, ifname) = (m.network, m.container_id, m.ifname);
        out.push(
            Finding::new(KIND, &network, &id, &ifname, &object, action).fix(move |node| {
                if !present_nft(&network, &id, &ifname)? {
                    return Ok(true);
                }
                // An ADD that finished meanwhile has a cache entry by now.
                if node.named_now(&network, &id, &ifname)? {
                    return Ok(false);
                }
                masq::del(Backend::Nftables, &Plan::new(&network, &id, &ifname, &[]))?;
                present_nft(&network, &id, &ifname).map(|p| !p)
            }),
        );
    }
    Ok(())
}

fn present_nft(network: &str, id: &str, ifname: &str) -> Result<bool> {
    Ok(nftables::read()?
        .iter()
        .any(|m| m.network == network && m.container_id == id && m.ifname == ifname))
}
