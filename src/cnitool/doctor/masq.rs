//! `masq`: ipMasq masquerading (bridge, ptp) of attachments that are gone:
//! the reference's per-container `CNI-<hash>` chains in `nat` and their
//! POSTROUTING jumps, whose comment names network and container.

use super::Finding;
use super::node::Node;
use crate::netfilter::masq::{self, Plan, iptables};
use crate::netfilter::{Backend, Family};
use anyhow::Result;

pub const KIND: &str = "masq";
pub const ACTION: &str = "remove chain and its POSTROUTING jumps";
pub const BY_DEL: &str = "removed by the DEL of its dead attachment";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    if !iptables_usable() {
        return Ok(());
    }
    for (family, m) in iptables::read()? {
        if node.keeps(&m.network, &m.container_id, "") {
            continue;
        }
        let tool = match family {
            Family::V4 => "iptables",
            Family::V6 => "ip6tables",
        };
        let object = format!("{tool} nat {}", m.chain);
        let dead = node.dead_owner(&m.network, &m.container_id, "").is_some();
        if !dead
            && (!node.settled(&format!("{KIND} {object}"))
                || m.sources.iter().any(|ip| node.ip_in_use(*ip)))
        {
            continue;
        }
        let action = if dead { BY_DEL } else { ACTION };
        let (network, id, chain) = (m.network.clone(), m.container_id.clone(), m.chain.clone());
        out.push(
            Finding::new(KIND, &m.network, &m.container_id, "", &object, action).fix(move |node| {
                if !present(family, &chain)? {
                    return Ok(true);
                }
                // An ADD that finished meanwhile has a cache entry by now.
                if node.named_now(&network, &id, "")? {
                    return Ok(false);
                }
                masq::del(Backend::Iptables, &Plan::new(&network, &id, "", &[]))?;
                present(family, &chain).map(|p| !p)
            }),
        );
    }
    Ok(())
}

fn iptables_usable() -> bool {
    crate::netfilter::iptables::usable(Family::V4) || crate::netfilter::iptables::usable(Family::V6)
}

/// Whether the family's `nat` table still has the chain.
fn present(family: Family, chain: &str) -> Result<bool> {
    Ok(crate::netfilter::iptables::save_existing(family, "nat")?
        .is_some_and(|s| s.has_chain(chain)))
}
