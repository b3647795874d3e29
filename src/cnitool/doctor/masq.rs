//! `masq`: ipMasq masquerading (bridge, ptp) of attachments that are gone:
//! the reference's per-container `CNI-<hash>` chains in `nat` and their
//! POSTROUTING jumps, whose comment names network and container.

use super::Finding;
use super::chains::{self, Owned};
use super::node::Node;
use crate::netfilter::Backend;
use crate::netfilter::masq::{self, Plan, iptables};
use anyhow::Result;

pub const KIND: &str = "masq";
pub const ACTION: &str = "remove chain and its POSTROUTING jumps";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    if !chains::usable() {
        return Ok(());
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
    chains::find(node, out, KIND, ACTION, owned, |network, id| {
        Ok(masq::del(
            Backend::Iptables,
            &Plan::new(network, id, "", &[]),
        )?)
    });
    Ok(())
}
