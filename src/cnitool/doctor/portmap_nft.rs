//! `portmap` over nftables: the rules of a gone container in the
//! per-container chains of `ip[6] cni_hostport`, whose comment is only the
//! container ID (as the reference's): any live attachment of that container
//! keeps them.

use super::Finding;
use super::node::{Node, State};
use super::portmap::{ACTION_NFT, BY_DEL, KIND};
use crate::netfilter::portmap::{self, Plan, nftables};
use crate::netfilter::{Backend, Family};
use anyhow::Result;

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for (family, h) in nftables::read()? {
        let cid = h.container_id.as_str();
        if node.keeps_container(cid) {
            continue;
        }
        let table = match family {
            Family::V4 => "ip",
            Family::V6 => "ip6",
        };
        let object = format!("nft {table} {} {cid}", nftables::TABLE);
        let dead = node
            .attachments
            .iter()
            .find(|a| a.state == State::Dead && a.entry.container_id == cid);
        let (network, action) = match dead {
            Some(a) => (a.entry.network_name.as_str(), BY_DEL),
            None if node.settled(&format!("{KIND} {object}"))
                && !h.saddrs.iter().any(|ip| node.ip_in_use(*ip)) =>
            {
                ("", ACTION_NFT)
            }
            None => continue,
        };
        let id = h.container_id.clone();
        out.push(
            Finding::new(KIND, network, cid, "", &object, action).fix(move |_| {
                if !present(family, &id)? {
                    return Ok(true);
                }
                portmap::del(Backend::Nftables, &Plan::named("", &id))?;
                present(family, &id).map(|p| !p)
            }),
        );
    }
    Ok(())
}

fn present(family: Family, id: &str) -> Result<bool> {
    Ok(nftables::read()?
        .iter()
        .any(|(f, h)| *f == family && h.container_id == id))
}
