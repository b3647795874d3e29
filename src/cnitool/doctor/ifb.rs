//! `ifb`: bandwidth's IFBs (`bwp` + a hash of network and container ID) that
//! belong to no attachment not known dead. The owner is dead when a dead cache
//! entry's config chains bandwidth and its IFB name is this one (that DEL
//! removes it); an IFB no entry maps to is ownerless, and kept while a filter
//! on a host link other than a stale veth redirects packets to it.

use super::Finding;
use super::node::{Node, State};
use crate::netlink::Socket;
use crate::netlink::link::Link;
use crate::plugins::bandwidth::{ALIAS_PREFIX, ifb_name};
use crate::runtime::conf;
use anyhow::Result;
use std::collections::BTreeSet;

pub const KIND: &str = "ifb";
pub const ACTION: &str = "delete link";
pub use super::BY_DEL;

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut sock = Socket::open()?;
    let ifbs: Vec<Link> = sock.links()?.into_iter().filter(is_bandwidths).collect();
    if ifbs.is_empty() {
        return Ok(());
    }
    let kept: BTreeSet<String> = node
        .attachments
        .iter()
        .filter(|a| a.state != State::Dead)
        .map(|a| ifb_name(&a.entry.network_name, &a.entry.container_id))
        .collect();
    let redirected = redirected(node, &mut sock)?;
    for ifb in ifbs {
        if kept.contains(&ifb.name) {
            continue;
        }
        let dead = node.attachments.iter().find(|a| {
            a.state == State::Dead
                && ifb_name(&a.entry.network_name, &a.entry.container_id) == ifb.name
                && conf::list_from_bytes(&a.entry.config, &a.path)
                    .is_ok_and(|l| l.plugins.iter().any(|p| p.plugin_type == "bandwidth"))
        });
        let key = format!("ifb link {} {}", ifb.name, ifb.index);
        if dead.is_none() && (redirected.contains(&ifb.index) || !node.settled(&key)) {
            continue;
        }
        let (network, id, ifname, action) = match dead {
            Some(a) => (
                a.entry.network_name.clone(),
                a.entry.container_id.clone(),
                a.entry.ifname.as_str(),
                BY_DEL,
            ),
            None => {
                let (n, c) = aliased_owner(&ifb).unwrap_or_default();
                (n, c, "", ACTION)
            }
        };
        let object = format!("link {}", ifb.name);
        out.push(
            Finding::new(KIND, &network, &id, ifname, &object, action)
                .fix(move |node| remove(node, &ifb.name)),
        );
    }
    Ok(())
}

/// Deletes the IFB of that name unless it is gone, or a filter redirects to
/// it now.
fn remove(node: &Node, name: &str) -> Result<bool> {
    let mut sock = Socket::open()?;
    let ifb = match sock.link_by_name(name) {
        Ok(l) if is_bandwidths(&l) => l,
        Ok(_) => return Ok(false),
        Err(e) if e.is_not_found() => return Ok(true),
        Err(e) => return Err(e.into()),
    };
    if redirected(node, &mut sock)?.contains(&ifb.index) {
        return Ok(false);
    }
    match sock.delete_link(ifb.index) {
        Err(e) if !e.is_not_found() => Err(e.into()),
        _ => Ok(true),
    }
}

/// An IFB of bandwidth's naming: `bwp` and 12 lowercase hex digits.
fn is_bandwidths(l: &Link) -> bool {
    l.kind == "ifb"
        && l.name.len() == 15
        && l.name.strip_prefix("bwp").is_some_and(|h| {
            h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// The network and container our bandwidth wrote in the IFB's alias, when
/// they give its name (a label to show, never to judge by).
fn aliased_owner(ifb: &Link) -> Option<(String, String)> {
    let rest = ifb.alias.strip_prefix(ALIAS_PREFIX)?.strip_prefix(' ')?;
    let (network, id) = rest.split_once(' ')?;
    (ifb_name(network, id) == ifb.name).then(|| (network.to_string(), id.to_string()))
}

/// The links that a filter on the ingress of a host link redirects to, but
/// for links that are themselves stale veths (their evidence dies with them).
fn redirected(node: &Node, sock: &mut Socket) -> Result<BTreeSet<u32>> {
    let stale: BTreeSet<u32> = super::veth::stale(node, sock)?
        .iter()
        .map(|l| l.index)
        .collect();
    let mut out = BTreeSet::new();
    for link in sock.links()? {
        if stale.contains(&link.index) {
            continue;
        }
        match sock.ingress_mirred_targets(link.index) {
            Ok(targets) => out.extend(targets),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidths_names_and_aliases() {
        let name = ifb_name("net", "ctr");
        let ifb = Link {
            name: name.clone(),
            kind: "ifb".into(),
            alias: format!("{ALIAS_PREFIX} net ctr"),
            ..Link::default()
        };
        assert!(is_bandwidths(&ifb));
        assert_eq!(
            aliased_owner(&ifb),
            Some(("net".to_string(), "ctr".to_string()))
        );
        let forged = Link {
            alias: format!("{ALIAS_PREFIX} net other"),
            ..ifb.clone()
        };
        assert_eq!(aliased_owner(&forged), None);
        for (name, kind) in [
            ("bwp12345", "ifb"),
            (name.as_str(), "dummy"),
            ("bwpXYZ456789012", "ifb"),
        ] {
            let l = Link {
                name: name.into(),
                kind: kind.into(),
                ..Link::default()
            };
            assert!(!is_bandwidths(&l), "{name} {kind}");
        }
    }
}
