//! `portmap`: hostPort mappings (iptables) of attachments that are gone: the
//! reference's per-container `CNI-DN-<hash>` chains in `nat` and their jumps
//! from CNI-HOSTPORT-DNAT, whose comment names network and container.

use super::Finding;
use super::chains::{self, Owned};
use super::engine;
use super::node::Node;
use crate::netfilter::Backend;
use crate::netfilter::portmap::{self, Plan, iptables};
use anyhow::Result;

pub const KIND: &str = "portmap";
pub const ACTION: &str = "remove chain and its CNI-HOSTPORT-DNAT jumps";
pub const ACTION_NFT: &str = "remove the container's rules";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
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
                addresses: m.targets,
            })
            .collect();
        let objects = chains::objects(node, KIND, ACTION, (flavour, owned), |network, id| {
            Ok(portmap::del(Backend::Iptables, &Plan::named(network, id))?)
        });
        engine::findings(node, objects, out)?;
    }
    Ok(())
}
