//! `firewall`: the firewall plugin's accept rules (iptables) in CNI-FORWARD
//! for addresses no attachment holds. The rules name only the address: its
//! owners are the attachments whose result holds it, and any namespace that
//! holds it keeps them.

use super::Finding;
use super::engine::{self, Age, Label, Named, Object, Owner};
use super::node::Node;
use crate::netfilter::Family;
use crate::netfilter::firewall::{self, iptables};
use crate::netfilter::iptables::{Flavour, use_flavour};
use anyhow::Result;
use ipnet::IpNet;

pub const KIND: &str = "firewall";
pub const ACTION: &str = "remove the address's accept rules";

pub fn find(node: &Node, out: &mut Vec<Finding>) -> Result<()> {
    for flavour in super::chains::flavours() {
        let _flavour = use_flavour(flavour);
        if super::chains::usable() {
            let objects = iptables::read()?
                .into_iter()
                .map(|net| object(node, flavour, net))
                .collect();
            engine::findings(node, objects, out)?;
        }
    }
    Ok(())
}

fn object(node: &Node, flavour: Flavour, net: IpNet) -> Object {
    let ip = net.addr();
    let family = if ip.is_ipv4() { Family::V4 } else { Family::V6 };
    let label = format!(
        "{} filter {} {net}",
        flavour.command(family),
        iptables::FORWARD_CHAIN
    );
    Object {
        kind: KIND,
        id: label.clone(),
        label,
        owner: Owner {
            candidates: node.holding(ip),
            named: Named::nobody(),
        },
        names: Named::nobody(),
        label_when_dead: Label::Entry,
        age: Age::Sighted,
        addresses: vec![ip],
        busy: false,
        action: ACTION,
        // Its DEL runs the default tools only.
        dead_action: (flavour != Flavour::Default).then_some(ACTION),
        present: Box::new(move |_| {
            let _flavour = use_flavour(flavour);
            Ok(iptables::read()?.contains(&net))
        }),
        remove: Box::new(move |_| {
            let _flavour = use_flavour(flavour);
            Ok(firewall::del_addresses(&[net])?)
        }),
    }
}
