//! `ifb`: bandwidth's IFBs (`bwp` + a hash of network and container ID) that
//! belong to no attachment not known dead. The owner is dead when a dead cache
//! entry's config chains bandwidth and its IFB name is this one (that DEL
//! removes it); an IFB no entry maps to is ownerless, and kept while a filter
//! on a host link other than a stale veth redirects packets to it.

use super::Finding;
use super::engine::{self, Named, Object, Owner};
use super::node::{Node, State};
use super::veth::{delete_link, link_is};
use crate::netlink::Socket;
use crate::netlink::link::Link;
use crate::plugins::bandwidth::{ALIAS_PREFIX, ifb_name};
use crate::runtime::conf;
use anyhow::Result;
use std::collections::BTreeSet;

pub const KIND: &str = "ifb";
pub const ACTION: &str = "delete link";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    let mut sock = Socket::open()?;
    let ifbs: Vec<Link> = sock.links()?.into_iter().filter(is_bandwidths).collect();
    if ifbs.is_empty() {
        return Ok(());
    }
    // Read once: the fixes of stale veths (listed before) only take redirects away.
    let redirected = redirected(node, &mut sock)?;
    let mut objects = Vec::new();
    for ifb in ifbs {
        // A dead attachment owns it only when its config chains bandwidth.
        let candidates: Vec<usize> = (0..node.attachments.len())
            .filter(|&i| {
                let a = &node.attachments[i];
                ifb_name(&a.entry.network_name, &a.entry.container_id) == ifb.name
                    && (a.state != State::Dead
                        || conf::list_from_bytes(&a.entry.config, &a.path)
                            .is_ok_and(|l| l.plugins.iter().any(|p| p.plugin_type == "bandwidth")))
            })
            .collect();
        let (network, id) = aliased_owner(&ifb).unwrap_or_default();
        let (name, index) = (ifb.name.clone(), ifb.index);
        let present =
            Box::new(move |_: &Node| link_is(index, |l| l.name == name && is_bandwidths(l)));
        let remove = Box::new(move |_: &Node| delete_link(index));
        let owner = Owner {
            candidates,
            named: Named::new(&network, &id, ""),
        };
        let label = format!("link {}", ifb.name);
        objects.push(Object {
            // An index in the key: a new link of the same name starts over.
            id: format!("link {} {}", ifb.name, ifb.index),
            busy: redirected.contains(&ifb.index),
            ..Object::kernel(KIND, label, owner, ACTION, present, remove)
        });
    }
    engine::findings(node, objects, out)
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
